//! CSR matrices in device memory.

use cust::memory::DevicePointer;

use super::memory::DeviceMemory;
use super::vector::{download, ptr_of, upload};
use super::{kernels, Context, DeviceVector, KernelChoice, SpmvKernel, SpmvPlan};
use crate::{CsrMatrix, Error, Result, RowStats, Scalar};

/// A CSR matrix in device memory, with the [`SpmvPlan`] that runs it.
///
/// It can only be made by uploading a validated [`CsrMatrix`], so its invariants (offsets
/// monotonic from 0 to `nnz`, columns in range, counts within the 32-bit index limit) hold
/// on the device and the kernels need no bounds checks. The three arrays have the layout of
/// the host matrix: `row_offsets` (`nrows + 1` `u32`), `col_indices` (`nnz` `u32`) and
/// `values` (`nnz` `T`).
///
/// # Example
///
/// ```no_run
/// use spgpu::gpu::{Context, DeviceCsr, DeviceVector, KernelChoice};
/// let ctx = Context::global()?;
/// let a = spgpu::gen::laplacian_3d_27pt::<f32>(20);
/// let mut d_a = DeviceCsr::upload(ctx, &a)?;
/// println!("{}", d_a.plan().explain());
/// d_a.set_kernel(KernelChoice::Scalar)?; // force a kernel
/// let x = DeviceVector::from_slice(ctx, &vec![1.0; a.ncols()])?;
/// let mut y = DeviceVector::from_slice(ctx, &vec![1.0; a.nrows()])?;
/// d_a.spmv(2.0, &x, -1.0, &mut y)?; // y = 2 A x - y
/// # Ok::<(), spgpu::Error>(())
/// ```
pub struct DeviceCsr<T: Scalar> {
    ctx: &'static Context,
    nrows: usize,
    ncols: usize,
    nnz: usize,
    row_offsets: Option<DeviceMemory<u32>>,
    col_indices: Option<DeviceMemory<u32>>,
    values: Option<DeviceMemory<T>>,
    stats: RowStats,
    plan: SpmvPlan,
    preprocessing: std::time::Duration,
}

impl<T: Scalar> DeviceCsr<T> {
    /// Uploads a host matrix and plans its SpMV with the heuristic ([`SpmvPlan::from_stats`]).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when allocation or a copy fails.
    pub fn upload(ctx: &'static Context, a: &CsrMatrix<T>) -> Result<Self> {
        Self::upload_with(ctx, a, KernelChoice::Auto)
    }

    /// Uploads a host matrix with a kernel chosen by `choice`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the choice does not apply to CSR (see
    /// [`SpmvPlan::with_choice`]), checked before anything is uploaded; [`Error::Cuda`] when
    /// allocation or a copy fails.
    pub fn upload_with(ctx: &'static Context, a: &CsrMatrix<T>, choice: KernelChoice) -> Result<Self> {
        let started = std::time::Instant::now();
        let stats = a.row_stats();
        let plan = SpmvPlan::with_choice(&stats, ctx.warp_size(), choice)?;
        let preprocessing = started.elapsed();
        let row_offsets = upload(a.row_offsets(), &format!("{} CSR row offsets", a.nrows() + 1))?;
        let col_indices = upload(a.col_indices(), "CSR column indices")?;
        let values = upload(a.values(), "CSR values")?;
        Ok(DeviceCsr {
            ctx,
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            row_offsets,
            col_indices,
            values,
            stats,
            plan,
            preprocessing,
        })
    }

    /// `y = alpha*A*x + beta*y`, queued on the context's stream with the plan's kernel; does
    /// not wait for the GPU. `beta == 0` never reads `y` (NaN in `y` does not spread);
    /// `alpha == 0` never reads `A` or `x` and only scales `y`. Sums are accumulated in `f64`
    /// for both element types.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `x.len() != ncols` or `y.len() != nrows`; nothing is
    /// launched then. [`Error::Cuda`] when the launch fails.
    pub fn spmv(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> Result<()> {
        match self.plan.kernel() {
            SpmvKernel::Scalar => kernels::spmv::csr_scalar(self.ctx, self, alpha, x, beta, y),
            SpmvKernel::Vector { threads_per_row } => {
                kernels::spmv::csr_vector(self.ctx, threads_per_row, self, alpha, x, beta, y)
            }
            // SpmvPlan::with_choice refuses Ell for CSR, so this arm only guards the invariant.
            SpmvKernel::Ell => Err(Error::InvalidArgument("a CSR matrix cannot run the ELL kernel".to_string())),
            SpmvKernel::Balanced => {
                Err(Error::InvalidArgument("the balanced kernel is not available in this build".to_string()))
            }
        }
    }

    /// Replaces the plan's kernel.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the choice does not apply to CSR; the plan is then
    /// unchanged.
    pub fn set_kernel(&mut self, choice: KernelChoice) -> Result<()> {
        self.plan = SpmvPlan::with_choice(&self.stats, self.ctx.warp_size(), choice)?;
        Ok(())
    }

    /// The plan that [`spmv`](DeviceCsr::spmv) follows.
    pub fn plan(&self) -> &SpmvPlan {
        &self.plan
    }

    /// Time spent at upload on preprocessing for the plan (row statistics, row blocks,
    /// storage conversion), on the host; the copies to the device are not included.
    pub fn preprocessing(&self) -> std::time::Duration {
        self.preprocessing
    }

    /// Device memory the matrix holds, in bytes: the CSR arrays and whatever extra storage
    /// the plan chose.
    pub fn device_bytes(&self) -> usize {
        (self.nrows + 1) * 4 + self.nnz * (4 + std::mem::size_of::<T>())
    }

    /// The row statistics the plan was made from.
    pub fn row_stats(&self) -> &RowStats {
        &self.stats
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// The context the matrix lives in.
    pub fn context(&self) -> &'static Context {
        self.ctx
    }

    /// Copies the matrix back to the host (after queued work is done).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when a copy fails or earlier asynchronous work failed.
    pub fn download(&self) -> Result<CsrMatrix<T>> {
        let offsets = download(self.row_offsets.as_ref(), self.nrows + 1, "CSR row offsets")?;
        let cols = download(self.col_indices.as_ref(), self.nnz, "CSR column indices")?;
        let vals = download(self.values.as_ref(), self.nnz, "CSR values")?;
        Ok(CsrMatrix::try_from_parts(self.nrows, self.ncols, offsets, cols, vals)?)
    }

    /// Device address of the row offsets (`nrows + 1` `u32`), for other CUDA code (cuSPARSE
    /// with 32-bit indices, through FFI); valid while `self` lives.
    pub fn row_offsets_ptr(&self) -> DevicePointer<u32> {
        ptr_of(self.row_offsets.as_ref())
    }

    /// Device address of the column indices (`nnz` `u32`); null when `nnz == 0`.
    pub fn col_indices_ptr(&self) -> DevicePointer<u32> {
        ptr_of(self.col_indices.as_ref())
    }

    /// Device address of the values (`nnz` `T`); null when `nnz == 0`.
    pub fn values_ptr(&self) -> DevicePointer<T> {
        ptr_of(self.values.as_ref())
    }
}

impl<T: Scalar> std::fmt::Debug for DeviceCsr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceCsr")
            .field("scalar", &T::NAME)
            .field("nrows", &self.nrows)
            .field("ncols", &self.ncols)
            .field("nnz", &self.nnz)
            .field("kernel", &self.plan.kernel())
            .finish()
    }
}
