//! The device backend: CG on [`DeviceVector`]s, with the iteration's scalars in device
//! memory and the kernels of `ptx/cg.cu`.

use std::cell::Cell;
use std::marker::PhantomData;

use super::backend::{Backend, Checkpoint, PrecondForm, Status};
use super::operator::{DeviceMatrix, LinearOperator};
use crate::gpu::kernels::blas::{self, CgGraph, CgKernels, Workspace};
use crate::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, SpmvKernel};
use crate::{Error, Result, Scalar};
use cust::stream::{Stream, StreamFlags};

/// The GPU backend: vectors are [`DeviceVector`]s, scalars live in a [`DeviceState`] in
/// device memory, and every step is a kernel queued on the context's stream.
///
/// An iteration is four launches and no copy to the host: `q = A p` fused with the `p'Ap`
/// reduction (for a CSR matrix planned for the scalar kernel, and for ELL; other operators
/// run their own SpMV and a separate reduction), the fused update of `x`, `r` and the
/// norms, and `p = z + beta p`. Reductions are deterministic: a run repeats bit for bit.
///
/// It holds a small workspace for [`Backend::dot`], so it is not `Sync`.
///
/// **Known limitation: run GPU solves from one thread at a time.** On the H200, GPU solves
/// from several threads at once (each with its own `Device`) ended with
/// `CUDA_ERROR_UNKNOWN` in every thread in most runs, and once in a segmentation fault; the
/// same solves one at a time pass, also under compute-sanitizer. The cause is not found yet
/// (CUDA-graph capture on a per-`Device` stream is the main suspect). All of spgpu's work
/// shares one stream, so serializing solves costs no GPU throughput.
///
/// # Example
///
/// ```no_run
/// use spgpu::gpu::{Context, DeviceCsr, DeviceVector};
/// use spgpu::solver::{cg, CgParams, Device};
/// let ctx = Context::global()?;
/// let a = spgpu::gen::laplacian_2d::<f64>(500);
/// let d_a = DeviceCsr::upload(ctx, &a)?;
/// let b = DeviceVector::from_slice(ctx, &vec![1.0; a.nrows()])?;
/// let mut x = DeviceVector::zeros(ctx, a.nrows())?;
/// let report = cg(&Device::new(ctx)?, &d_a, &b, &mut x, &CgParams::default())?;
/// println!("{} iterations, {:?} each", report.iterations, report.time_per_iteration());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Device {
    ctx: &'static Context,
    scratch: std::cell::RefCell<Workspace>,
    /// A non-blocking stream on which batches of iterations are recorded as CUDA graphs.
    capture: Stream,
    _not_sync: PhantomData<Cell<()>>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("device", &self.ctx.info().name).finish()
    }
}

impl Device {
    /// A backend on `ctx`.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when the small workspace cannot be allocated.
    pub fn new(ctx: &'static Context) -> Result<Self> {
        ctx.make_current()?;
        let capture = Stream::new(StreamFlags::NON_BLOCKING, None)
            .map_err(|e| Error::cuda("creating the CG capture stream", e))?;
        Ok(Device { ctx, scratch: std::cell::RefCell::new(Workspace::new(ctx, 0)?), capture, _not_sync: PhantomData })
    }

    /// A backend on the process-wide context ([`Context::global`]).
    ///
    /// # Errors
    ///
    /// [`Error::NoDevice`] without a GPU, and the errors of [`Device::new`].
    pub fn global() -> Result<Self> {
        Self::new(Context::global()?)
    }

    /// The context the backend runs on.
    pub fn context(&self) -> &'static Context {
        self.ctx
    }

    /// Where the state's kernels go: the capture stream while recording, else the
    /// context's stream.
    fn stream<T: Scalar>(&self, s: &DeviceState<T>) -> &Stream {
        if s.recording {
            &self.capture
        } else {
            self.ctx.stream()
        }
    }
}

/// The iteration's scalars, reduction buffers and residual history in device memory, with
/// the kernels of the element type looked up once.
pub struct DeviceState<T: Scalar> {
    ctx: &'static Context,
    ws: Workspace,
    kernels: CgKernels<'static>,
    recording: bool,
    _t: PhantomData<T>,
}

impl<T: Scalar> std::fmt::Debug for DeviceState<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceState").field("scalar", &T::NAME).finish()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // The stream and the workspace are released through the driver, which needs the
        // context current on this thread; a failure cannot be reported here.
        let _ = self.ctx.make_current();
    }
}

impl<T: Scalar> Drop for DeviceState<T> {
    fn drop(&mut self) {
        // As for Device: the workspace's buffers are freed with the context current.
        let _ = self.ctx.make_current();
    }
}

/// A batch of CG iterations recorded as a CUDA graph ([`Backend::begin_recording`]).
pub struct DeviceRecording(CgGraph);

impl std::fmt::Debug for DeviceRecording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceRecording")
    }
}

fn mode<V>(form: PrecondForm<'_, V>) -> i32 {
    match form {
        PrecondForm::Identity => blas::MODE_IDENTITY,
        PrecondForm::Diagonal(_) => blas::MODE_DIAGONAL,
        PrecondForm::General => blas::MODE_GENERAL,
    }
}

fn dinv_of<'a, T: Scalar>(form: PrecondForm<'a, DeviceVector<T>>) -> Option<&'a DeviceVector<T>> {
    match form {
        PrecondForm::Diagonal(d) => Some(d),
        _ => None,
    }
}

impl<T: Scalar> Backend<T> for Device {
    type Vector = DeviceVector<T>;
    type State = DeviceState<T>;
    type Recording = DeviceRecording;

    fn len(&self, v: &DeviceVector<T>) -> usize {
        v.len()
    }

    fn zeros(&self, n: usize) -> Result<DeviceVector<T>> {
        DeviceVector::zeros(self.ctx, n)
    }

    fn upload(&self, data: &[T]) -> Result<DeviceVector<T>> {
        DeviceVector::from_slice(self.ctx, data)
    }

    fn download(&self, v: &DeviceVector<T>) -> Result<Vec<T>> {
        v.to_vec()
    }

    fn copy(&self, src: &DeviceVector<T>, dst: &mut DeviceVector<T>) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::DimensionMismatch {
                op: "copy: length of destination",
                expected: src.len(),
                found: dst.len(),
            });
        }
        if src.is_empty() {
            return Ok(());
        }
        self.ctx.make_current()?;
        use cust::memory::{AsyncCopyDestination, DeviceSlice};
        // SAFETY: both pointers are live allocations of src.len() elements (non-empty, equal
        // lengths checked above) owned by src and dst, which outlive the slices; dst is
        // borrowed mutably, so the ranges do not overlap. The copy is queued on the context's
        // stream, ordered with the kernels before and after it, and both vectors stay alive
        // until the stream is synchronized (a vector's drop frees memory only after
        // cuMemFree, which waits for the device).
        unsafe {
            let from = DeviceSlice::from_raw_parts(src.as_device_ptr(), src.len());
            let mut to = DeviceSlice::from_raw_parts_mut(dst.as_device_ptr(), dst.len());
            to.async_copy_from(&from, self.ctx.stream())
        }
        .map_err(|e| Error::cuda("copying a device vector", e))
    }

    fn hadamard(&self, a: &DeviceVector<T>, b: &DeviceVector<T>, out: &mut DeviceVector<T>) -> Result<()> {
        let k = CgKernels::load::<T>(self.ctx)?;
        blas::hadamard(self.ctx, self.ctx.stream(), &k, a, b, out)
    }

    fn dot(&self, a: &DeviceVector<T>, b: &DeviceVector<T>) -> Result<f64> {
        let k = CgKernels::load::<T>(self.ctx)?;
        let mut ws = self.scratch.borrow_mut();
        blas::dot(self.ctx, self.ctx.stream(), &k, &mut ws, a, b)?;
        Ok(ws.read_slots(self.ctx)?[blas::SLOT_DOT])
    }

    fn new_state(&self, _n: usize, history: usize) -> Result<DeviceState<T>> {
        Ok(DeviceState {
            ctx: self.ctx,
            ws: Workspace::new(self.ctx, history)?,
            kernels: CgKernels::load::<T>(self.ctx)?,
            recording: false,
            _t: PhantomData,
        })
    }

    fn start(
        &self,
        s: &mut DeviceState<T>,
        tol2: f64,
        r: &DeviceVector<T>,
        z: &DeviceVector<T>,
        precond: PrecondForm<'_, DeviceVector<T>>,
        p: &mut DeviceVector<T>,
    ) -> Result<()> {
        let z = matches!(precond, PrecondForm::General).then_some(z);
        blas::start(self.ctx, self.stream(s), &s.kernels, &mut s.ws, tol2, r, z, dinv_of(precond), mode(precond), p)
    }

    fn alpha_step(&self, s: &mut DeviceState<T>, p: &DeviceVector<T>, q: &DeviceVector<T>) -> Result<()> {
        blas::alpha(self.ctx, self.stream(s), &s.kernels, &mut s.ws, p, q)
    }

    fn fused_spmv_alpha(
        &self,
        s: &mut DeviceState<T>,
        matrix: Option<DeviceMatrix<'_, T>>,
        p: &DeviceVector<T>,
        q: &mut DeviceVector<T>,
    ) -> Result<bool> {
        match matrix {
            Some(DeviceMatrix::Csr(a)) if a.plan().kernel() == SpmvKernel::Scalar => {
                blas::spmv_csr_alpha(self.ctx, self.stream(s), &s.kernels, &mut s.ws, a, p, q)?;
                Ok(true)
            }
            Some(DeviceMatrix::Ell(a)) => {
                blas::spmv_ell_alpha(self.ctx, self.stream(s), &s.kernels, &mut s.ws, a, p, q)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn update(
        &self,
        s: &mut DeviceState<T>,
        x: &mut DeviceVector<T>,
        r: &mut DeviceVector<T>,
        p: &DeviceVector<T>,
        q: &DeviceVector<T>,
        precond: PrecondForm<'_, DeviceVector<T>>,
    ) -> Result<()> {
        blas::update(self.ctx, self.stream(s), &s.kernels, &mut s.ws, x, r, p, q, dinv_of(precond), mode(precond))
    }

    fn rho_step(&self, s: &mut DeviceState<T>, r: &DeviceVector<T>, z: &DeviceVector<T>) -> Result<()> {
        blas::rho(self.ctx, self.stream(s), &s.kernels, &mut s.ws, r, z)
    }

    fn direction(
        &self,
        s: &mut DeviceState<T>,
        p: &mut DeviceVector<T>,
        r: &DeviceVector<T>,
        z: &DeviceVector<T>,
        precond: PrecondForm<'_, DeviceVector<T>>,
    ) -> Result<()> {
        let z = matches!(precond, PrecondForm::General).then_some(z);
        blas::direction(self.ctx, self.stream(s), &s.kernels, &s.ws, p, r, z, dinv_of(precond), mode(precond))
    }

    /// Records when the SpMV is fused (CSR with the scalar kernel, or ELL) and the
    /// preconditioner is none or diagonal: then every step is a kernel of `ptx/cg.cu`.
    fn begin_recording(
        &self,
        s: &mut DeviceState<T>,
        matrix: Option<DeviceMatrix<'_, T>>,
        precond: PrecondForm<'_, DeviceVector<T>>,
    ) -> Result<bool> {
        let fused = match matrix {
            Some(DeviceMatrix::Csr(a)) => a.plan().kernel() == SpmvKernel::Scalar,
            Some(DeviceMatrix::Ell(_)) => true,
            _ => false,
        };
        if !fused || matches!(precond, PrecondForm::General) || s.recording {
            return Ok(false);
        }
        CgGraph::begin(self.ctx, &self.capture)?;
        s.recording = true;
        Ok(true)
    }

    fn end_recording(&self, s: &mut DeviceState<T>) -> Result<DeviceRecording> {
        s.recording = false;
        CgGraph::end(self.ctx, &self.capture).map(DeviceRecording)
    }

    fn replay(&self, _s: &mut DeviceState<T>, rec: &DeviceRecording) -> Result<()> {
        rec.0.launch(self.ctx, self.ctx.stream())
    }

    fn checkpoint(&self, s: &DeviceState<T>) -> Result<Checkpoint> {
        let v = s.ws.read_slots(self.ctx)?;
        Ok(Checkpoint {
            status: Status::from_code(v[blas::SLOT_STATUS] as u32),
            iterations: v[blas::SLOT_ITER] as usize,
            rr: v[blas::SLOT_RR],
            pap: v[blas::SLOT_PAP],
        })
    }

    fn history(&self, s: &DeviceState<T>, count: usize) -> Result<Vec<f64>> {
        s.ws.read_history(self.ctx, count)
    }

    fn synchronize(&self) -> Result<()> {
        self.ctx.synchronize()
    }
}

impl<T: Scalar> LinearOperator<T> for DeviceCsr<T> {
    type Vector = DeviceVector<T>;

    fn nrows(&self) -> usize {
        DeviceCsr::nrows(self)
    }

    fn ncols(&self) -> usize {
        DeviceCsr::ncols(self)
    }

    fn apply(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> Result<()> {
        self.spmv(alpha, x, beta, y)
    }

    /// Downloads the matrix once to read its diagonal.
    fn diagonal(&self) -> Result<Vec<T>> {
        Ok(self.download()?.diagonal())
    }

    fn device_matrix(&self) -> Option<DeviceMatrix<'_, T>> {
        Some(DeviceMatrix::Csr(self))
    }
}

impl<T: Scalar> LinearOperator<T> for DeviceEll<T> {
    type Vector = DeviceVector<T>;

    fn nrows(&self) -> usize {
        DeviceEll::nrows(self)
    }

    fn ncols(&self) -> usize {
        DeviceEll::ncols(self)
    }

    fn apply(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> Result<()> {
        self.spmv(alpha, x, beta, y)
    }

    /// Downloads the matrix once to read its diagonal.
    fn diagonal(&self) -> Result<Vec<T>> {
        Ok(self.download()?.to_csr().diagonal())
    }

    fn device_matrix(&self) -> Option<DeviceMatrix<'_, T>> {
        Some(DeviceMatrix::Ell(self))
    }
}
