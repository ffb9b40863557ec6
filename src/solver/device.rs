//! The device backend: CG on [`DeviceVector`]s, with the iteration's scalars in device
//! memory and the kernels of `ptx/cg.cu`.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use super::amg::{AmgDeviceMatrix, AmgDeviceVector};
use super::backend::{Backend, Checkpoint, PrecondForm, ScaledNorm, Status};
use super::operator::{DeviceMatrix, LinearOperator};
use crate::gpu::kernels::amg::{self as amg_kernels, DeviceArray};
use crate::gpu::kernels::blas::{self, CgKernels, Workspace};
use crate::gpu::memory;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::gpu::stream::{CaptureError, Graph, Stream};
use crate::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, SpmvKernel};
use crate::{CsrMatrix, Error, Result, Scalar};
use std::any::{Any, TypeId};

/// The GPU backend: vectors are [`DeviceVector`]s, scalars live in a [`DeviceState`] in
/// device memory, and every step is a kernel queued on the context's stream.
///
/// An iteration is four or five launches and no copy to the host: `q = A p` with the
/// matrix's own plan (its kernel and storage: [`SpmvPlan`](crate::gpu::SpmvPlan)), fused
/// with the `p'Ap` reduction for the scalar CSR kernel and for ELL, else followed by a
/// separate `p'q` reduction; the fused update of `x`, `r` and the norms; and `p = z + beta p`.
/// Every one of them runs on the backend's stream, so every plan is recorded as a CUDA graph.
/// Reductions are deterministic: a run repeats bit for bit.
///
/// It is `Send` and `Sync`: any number of threads may solve at once, with one `Device`
/// each or one shared by all (each solve has its own vectors and [`DeviceState`]). Batches
/// of iterations are recorded as CUDA graphs on a private non-blocking stream, one
/// recording at a time process-wide (see [the threading model](crate::gpu#threading-model)).
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
    /// The workspace of [`Backend::dot`] and [`Backend::norm`], one call at a time.
    scratch: Mutex<Workspace>,
    /// A non-blocking stream on which batches of iterations are recorded as CUDA graphs.
    capture: Stream,
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
    /// [`Error::Cuda`] when the small workspace or the capture stream cannot be made;
    /// [`Error::InvalidArgument`] when the driver does not make the capture stream
    /// non-blocking.
    pub fn new(ctx: &'static Context) -> Result<Self> {
        ctx.make_current()?;
        let capture = Stream::non_blocking("the CG capture stream")?;
        Ok(Device { ctx, scratch: Mutex::new(Workspace::new(ctx, 0)?), capture })
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
        if s.recorded.is_some() {
            &self.capture
        } else {
            self.ctx.stream()
        }
    }

    /// Runs `f` on the scratch workspace, then reads its slots.
    fn with_scratch<T: Scalar>(
        &self,
        f: impl FnOnce(&CgKernels<'_>, &mut Workspace) -> Result<()>,
    ) -> Result<[f64; blas::SLOTS]> {
        let k = CgKernels::load::<T>(self.ctx)?;
        let mut ws = self.scratch.lock().unwrap_or_else(PoisonError::into_inner);
        f(&k, &mut ws)?;
        ws.read_slots()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // The capture stream is destroyed with the context current on this thread (the
        // workspace frees itself); a failure cannot be reported here.
        let _ = self.ctx.make_current();
    }
}

static NEXT_STATE: AtomicU64 = AtomicU64::new(1);

/// The iteration's scalars, reduction buffers and residual history in device memory, with
/// the kernels of the element type looked up once.
pub struct DeviceState<T: Scalar> {
    ws: Workspace,
    kernels: CgKernels<'static>,
    /// While recording: the device addresses the recorded kernels use.
    recorded: Option<Vec<u64>>,
    /// Tells states apart, so a recording is replayed with its own state only.
    id: u64,
    _t: PhantomData<T>,
}

impl<T: Scalar> std::fmt::Debug for DeviceState<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceState").field("scalar", &T::NAME).finish()
    }
}

impl<T: Scalar> DeviceState<T> {
    /// While recording, notes the device addresses the kernel about to be recorded uses.
    fn uses(&mut self, addresses: &[u64]) {
        if let Some(v) = &mut self.recorded {
            v.extend(addresses.iter().copied().filter(|&a| a != 0));
        }
    }
}

/// A batch of CG iterations recorded as a CUDA graph ([`Backend::record`]), with the
/// allocations it uses and the state it was made with, so that
/// [`Backend::replay`] can refuse to run it over freed memory. `Send`, not `Sync`.
pub struct DeviceRecording {
    ctx: &'static Context,
    graph: Graph,
    state: u64,
    allocations: Vec<(u64, u64)>,
}

impl std::fmt::Debug for DeviceRecording {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceRecording").field("allocations", &self.allocations.len()).finish()
    }
}

impl Drop for DeviceRecording {
    fn drop(&mut self) {
        // The graph is destroyed with the context current on this thread.
        let _ = self.ctx.make_current();
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

fn addr<T: Scalar>(v: &DeviceVector<T>) -> u64 {
    v.as_device_ptr().as_raw()
}

fn addr_opt<T: Scalar>(v: Option<&DeviceVector<T>>) -> u64 {
    v.map_or(0, addr)
}

/// Whether the device backend runs (and can record) the SpMV of this matrix itself: every
/// device matrix, with its plan's kernel.
fn fused<T: Scalar>(matrix: &Option<DeviceMatrix<'_, T>>) -> bool {
    matches!(matrix, Some(DeviceMatrix::Csr(_)) | Some(DeviceMatrix::Ell(_)))
}

/// `f64` values made on the device, as device memory of `T`: moved for `f64`, rounded to
/// `f32` on the device (then freed) for `f32`. `None` when empty.
fn values_in<T: Scalar>(ctx: &'static Context, vals: DeviceArray<f64>) -> Result<Option<DeviceMemory<T>>> {
    if TypeId::of::<T>() == TypeId::of::<f64>() {
        let moved: Box<dyn Any> = Box::new(vals.into_memory());
        return Ok(*moved.downcast::<Option<DeviceMemory<T>>>().expect("T is f64"));
    }
    let mut rounded = DeviceArray::<f32>::zeroed(ctx, vals.len(), "the AMG f32 values")?;
    amg_kernels::to_f32(ctx, &vals, &mut rounded)?;
    drop(vals);
    let rounded: Box<dyn Any> = Box::new(rounded.into_memory());
    Ok(*rounded.downcast::<Option<DeviceMemory<T>>>().expect("T is f32 or f64"))
}

impl<T: Scalar> Backend<T> for Device {
    type Vector = DeviceVector<T>;
    type State = DeviceState<T>;
    type Recording = DeviceRecording;
    type Matrix = DeviceCsr<T>;

    fn device_context(&self) -> Option<&'static Context> {
        Some(self.ctx)
    }

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
        dst.copy_from_device(src)
    }

    fn hadamard(&self, a: &DeviceVector<T>, b: &DeviceVector<T>, out: &mut DeviceVector<T>) -> Result<()> {
        let k = CgKernels::load::<T>(self.ctx)?;
        blas::hadamard(self.ctx, self.ctx.stream(), &k, a, b, out)
    }

    fn dot(&self, a: &DeviceVector<T>, b: &DeviceVector<T>) -> Result<f64> {
        let slots = self.with_scratch::<T>(|k, ws| blas::dot(self.ctx, self.ctx.stream(), k, ws, a, b))?;
        Ok(slots[blas::SLOT_DOT])
    }

    fn norm(&self, v: &DeviceVector<T>) -> Result<ScaledNorm> {
        let slots = self.with_scratch::<T>(|k, ws| blas::norm(self.ctx, self.ctx.stream(), k, ws, v))?;
        Ok(ScaledNorm { max_abs: slots[blas::SLOT_NORM_SCALE], ssq: slots[blas::SLOT_NORM_SSQ] })
    }

    fn scale(&self, alpha: f64, v: &mut DeviceVector<T>) -> Result<()> {
        let k = CgKernels::load::<T>(self.ctx)?;
        blas::scale(self.ctx, self.ctx.stream(), &k, alpha, v)
    }

    fn new_state(&self, _n: usize, history: usize) -> Result<DeviceState<T>> {
        Ok(DeviceState {
            ws: Workspace::new(self.ctx, history)?,
            kernels: CgKernels::load::<T>(self.ctx)?,
            recorded: None,
            id: NEXT_STATE.fetch_add(1, Ordering::Relaxed),
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
        let dinv = dinv_of(precond);
        s.uses(&[addr(r), addr_opt(z), addr_opt(dinv), addr(p)]);
        blas::start(self.ctx, self.stream(s), &s.kernels, &mut s.ws, tol2, r, z, dinv, mode(precond), p)
    }

    fn alpha_step(&self, s: &mut DeviceState<T>, p: &DeviceVector<T>, q: &DeviceVector<T>) -> Result<()> {
        s.uses(&[addr(p), addr(q)]);
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
            // the fused kernels have 32-bit offsets and slots; 64-bit matrices take the
            // plan's kernel and the separate reduction below
            Some(DeviceMatrix::Csr(a)) if a.plan().kernel() == SpmvKernel::Scalar && !a.offsets_are_64_bit() => {
                let m = a.csr_ptrs().expect("the scalar kernel runs on CSR storage");
                s.uses(&[m.row_offsets, m.col_indices.as_raw(), m.values.as_raw(), addr(p), addr(q)]);
                blas::spmv_csr_alpha(self.ctx, self.stream(s), &s.kernels, &mut s.ws, a, p, q)?;
                Ok(true)
            }
            Some(DeviceMatrix::Ell(a)) => {
                s.uses(&[a.cols_addr(), a.values_ptr().as_raw(), addr(p), addr(q)]);
                if a.is_wide() {
                    crate::gpu::kernels::spmv::ell_on(self.ctx, self.stream(s), a, T::ONE, p, T::ZERO, q)?;
                    blas::alpha(self.ctx, self.stream(s), &s.kernels, &mut s.ws, p, q)?;
                } else {
                    blas::spmv_ell_alpha(self.ctx, self.stream(s), &s.kernels, &mut s.ws, a, p, q)?;
                }
                Ok(true)
            }
            Some(DeviceMatrix::Csr(a)) => {
                // the plan's kernel (ELL, SELL, balanced, vector) on the backend's stream, then
                // the p'q reduction: recordable like the fused kernels
                if let Some(e) = a.ell() {
                    return self.fused_spmv_alpha(s, Some(DeviceMatrix::Ell(e)), p, q);
                }
                if s.recorded.is_some() {
                    // only a recording needs the matrix's allocations (not every iteration)
                    s.uses(&a.device_addresses());
                }
                s.uses(&[addr(p), addr(q)]);
                a.spmv_on(self.stream(s), T::ONE, p, T::ZERO, q)?;
                blas::alpha(self.ctx, self.stream(s), &s.kernels, &mut s.ws, p, q)?;
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
        let dinv = dinv_of(precond);
        s.uses(&[addr(x), addr(r), addr(p), addr(q), addr_opt(dinv)]);
        blas::update(self.ctx, self.stream(s), &s.kernels, &mut s.ws, x, r, p, q, dinv, mode(precond))
    }

    fn rho_step(&self, s: &mut DeviceState<T>, r: &DeviceVector<T>, z: &DeviceVector<T>) -> Result<()> {
        s.uses(&[addr(r), addr(z)]);
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
        let dinv = dinv_of(precond);
        s.uses(&[addr(p), addr(r), addr_opt(z), addr_opt(dinv)]);
        blas::direction(self.ctx, self.stream(s), &s.kernels, &s.ws, p, r, z, dinv, mode(precond))
    }

    /// Records when the operator is a device matrix (any plan: its SpMV kernel and the
    /// kernels of `ptx/cg.cu` all go to the capture stream), whatever the preconditioner's
    /// form: the solver records a general preconditioner only when it says that it enqueues
    /// through the state's own steps ([`Preconditioner::recordable`](super::Preconditioner::recordable),
    /// as AMG does), so that its kernels go to the capture stream too. The recording keeps the ids of every allocation its
    /// kernels use (vectors, matrix arrays, the state's workspace); memory that spgpu did
    /// not allocate cannot be checked, and is refused.
    fn record(
        &self,
        s: &mut DeviceState<T>,
        matrix: Option<DeviceMatrix<'_, T>>,
        precond: PrecondForm<'_, DeviceVector<T>>,
        steps: &mut dyn FnMut(&mut DeviceState<T>) -> Result<()>,
    ) -> Result<Option<DeviceRecording>> {
        let _ = precond;
        if !fused(&matrix) || s.recorded.is_some() {
            return Ok(None);
        }
        s.recorded = Some(s.ws.addresses());
        let captured = self.capture.capture(self.ctx, || steps(&mut *s));
        let mut used = s.recorded.take().unwrap_or_default();
        let graph = match captured {
            Ok(graph) => graph,
            Err(CaptureError::Recording(e) | CaptureError::Driver(e)) => return Err(e),
        };
        used.sort_unstable();
        used.dedup();
        let allocations = memory::allocation_ids(&used).map_err(|ptr| {
            Error::InvalidArgument(format!(
                "cannot record CG iterations: the device memory at {ptr:#x} was not allocated by spgpu, so a \
                 replay could not check that it is still live"
            ))
        })?;
        Ok(Some(DeviceRecording { ctx: self.ctx, graph, state: s.id, allocations }))
    }

    fn replay(&self, s: &mut DeviceState<T>, rec: &DeviceRecording) -> Result<()> {
        if rec.state != s.id {
            return Err(Error::InvalidArgument(
                "replaying a CG recording: it was recorded with another DeviceState".into(),
            ));
        }
        self.ctx.make_current()?;
        memory::with_live(&rec.allocations, "replaying a CG recording", || {
            // SAFETY: every allocation the graph's kernels use is live (checked just now,
            // with the registry locked, so no free is queued until the graph is); a later
            // free is queued on the same stream, after the graph. The kernels' own
            // contracts were checked by the launchers when they were recorded (lengths,
            // modes), and nothing about those allocations can change their lengths.
            unsafe { rec.graph.launch(self.ctx.stream()) }
        })
    }

    fn checkpoint(&self, s: &DeviceState<T>) -> Result<Checkpoint> {
        let v = s.ws.read_slots()?;
        Ok(Checkpoint {
            status: Status::from_code(v[blas::SLOT_STATUS] as u32),
            iterations: v[blas::SLOT_ITER] as usize,
            rr: v[blas::SLOT_RR],
            pap: v[blas::SLOT_PAP],
        })
    }

    fn history(&self, s: &DeviceState<T>, count: usize) -> Result<Vec<f64>> {
        s.ws.read_history(count)
    }

    fn matrix(&self, a: &CsrMatrix<T>) -> Result<DeviceCsr<T>> {
        DeviceCsr::upload(self.ctx, a)
    }

    /// [`DeviceCsr::device_bytes`].
    fn matrix_bytes(&self, m: &DeviceCsr<T>) -> Option<u64> {
        Some(m.device_bytes() as u64)
    }

    /// Keeps the setup's arrays where they are: the values move when `T` is `f64` and are
    /// rounded on the device for `f32`; only the offsets are read back, for the plan's row
    /// statistics, unless the setup knows them ([`AmgDeviceMatrix`]). Where the plan picks
    /// ELL, the slots are made on the device from them.
    fn amg_matrix(&self, m: AmgDeviceMatrix) -> Result<DeviceCsr<T>> {
        let AmgDeviceMatrix { parts, what, stats, far_columns } = m;
        let stats = match stats {
            Some(s) => s,
            None => {
                crate::format::RowStats::from_row_offsets(&parts.offsets.to_vec("the AMG matrix offsets")?, parts.ncols)
            }
        };
        let narrow = !match far_columns {
            Some(far) => far,
            None => amg_kernels::has_far_columns(self.ctx, &parts.view())?,
        };
        let values = values_in::<T>(self.ctx, parts.vals)?;
        let offsets = parts.offsets.into_memory().expect("CSR offsets have nrows + 1 >= 1 elements");
        DeviceCsr::from_csr_arrays(
            self.ctx,
            parts.nrows,
            parts.ncols,
            stats,
            offsets,
            parts.cols.into_memory(),
            values,
            narrow,
            &what,
        )
    }

    fn amg_vector(&self, v: AmgDeviceVector) -> Result<DeviceVector<T>> {
        let len = v.0.len();
        Ok(DeviceVector::from_memory(self.ctx, values_in::<T>(self.ctx, v.0)?, len))
    }

    fn spmv(
        &self,
        s: &mut DeviceState<T>,
        a: &DeviceCsr<T>,
        alpha: f64,
        x: &DeviceVector<T>,
        beta: f64,
        y: &mut DeviceVector<T>,
    ) -> Result<()> {
        if s.recorded.is_some() {
            s.uses(&a.device_addresses());
        }
        s.uses(&[addr(x), addr(y)]);
        a.spmv_on(self.stream(s), T::from_f64(alpha), x, T::from_f64(beta), y)
    }

    fn axpby(
        &self,
        s: &mut DeviceState<T>,
        a: f64,
        x: &DeviceVector<T>,
        b: f64,
        y: &mut DeviceVector<T>,
    ) -> Result<()> {
        s.uses(&[addr(x), addr(y)]);
        amg_kernels::axpby(self.ctx, self.stream(s), a, x, b, y)
    }

    fn chebyshev_step(
        &self,
        s: &mut DeviceState<T>,
        c1: f64,
        c2: f64,
        dinv: &DeviceVector<T>,
        r: &DeviceVector<T>,
        d: &mut DeviceVector<T>,
        x: &mut DeviceVector<T>,
    ) -> Result<()> {
        s.uses(&[addr(dinv), addr(r), addr(d), addr(x)]);
        amg_kernels::cheb(self.ctx, self.stream(s), c1, c2, dinv, r, d, x)
    }

    fn jacobi_step(
        &self,
        s: &mut DeviceState<T>,
        w: f64,
        dinv: &DeviceVector<T>,
        r: &DeviceVector<T>,
        x: &mut DeviceVector<T>,
    ) -> Result<()> {
        s.uses(&[addr(dinv), addr(r), addr(x)]);
        amg_kernels::jacobi(self.ctx, self.stream(s), w, dinv, r, x)
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

    fn host_matrix(&self) -> Result<CsrMatrix<T>> {
        self.download()
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

    fn host_matrix(&self) -> Result<CsrMatrix<T>> {
        Ok(self.download()?.to_csr())
    }

    fn device_matrix(&self) -> Option<DeviceMatrix<'_, T>> {
        Some(DeviceMatrix::Ell(self))
    }
}
