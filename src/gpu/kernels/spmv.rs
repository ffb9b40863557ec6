//! Launchers of the kernels in `ptx/spmv.cu`.

use cust::launch;

use super::{blocks, index, kernel_name, GpuKernel, BLOCK};
use crate::gpu::csr::{Balanced, DeviceSell};
use crate::gpu::memory::DeviceMemory;
use crate::gpu::plan::VECTOR_THREADS_PER_ROW;
use crate::gpu::vector::{check_len, ptr_of};
use crate::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, ModuleId, SpmvKernel, Stream};
use crate::{Error, Result, Scalar};

/// Checks `x.len() == ncols` and `y.len() == nrows`.
fn check_dims<T: Scalar>(nrows: usize, ncols: usize, x: &DeviceVector<T>, y: &DeviceVector<T>) -> Result<()> {
    check_len("spmv: length of x", ncols, x.len())?;
    check_len("spmv: length of y", nrows, y.len())
}

/// `spmv_csr_scalar_<T>`: one thread per row, `BLOCK` rows per block.
pub(crate) fn csr_scalar<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    a: &DeviceCsr<T>,
    alpha: T,
    x: &DeviceVector<T>,
    beta: T,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    check_dims(a.nrows(), a.ncols(), x, y)?;
    if a.nrows() == 0 {
        return Ok(());
    }
    let nrows = index("rows", a.nrows())?;
    let grid = blocks(a.nrows(), BLOCK)?;
    let name = kernel_name(GpuKernel::Spmv(SpmvKernel::Scalar), T::NAME);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let (offsets, cols, vals) = (a.row_offsets_ptr(), a.col_indices_ptr(), a.values_ptr());
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    // SAFETY: spmv_csr_scalar_<T>(unsigned nrows, const unsigned* row_offsets,
    // const unsigned* col_indices, const T* values, const T* x, T alpha, T beta, T* y).
    // The arguments match it in order and type (u32, three device pointers of a validated
    // DeviceCsr<T>, x's pointer, T, T, y's pointer). x.len() == ncols and y.len() == nrows
    // were checked above; the CSR invariants bound every offset by nnz and every column by
    // ncols, and threads with row >= nrows return at once. y is borrowed mutably, so nothing
    // else writes it; x cannot alias it.
    unsafe { launch!(function<<<grid, BLOCK, 0, stream>>>(nrows, offsets, cols, vals, xp, alpha, beta, yp)) }
        .map_err(|e| Error::cuda(format!("launching {name}"), e))
}

/// `spmv_csr_vector_tpr<N>_<T>`: `threads_per_row` threads per row, `BLOCK / threads_per_row`
/// rows per block.
#[allow(clippy::too_many_arguments)]
pub(crate) fn csr_vector<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    threads_per_row: u32,
    a: &DeviceCsr<T>,
    alpha: T,
    x: &DeviceVector<T>,
    beta: T,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    check_dims(a.nrows(), a.ncols(), x, y)?;
    if !VECTOR_THREADS_PER_ROW.contains(&threads_per_row) || threads_per_row > ctx.warp_size() {
        return Err(Error::InvalidArgument(format!(
            "the vector kernel has no variant with {threads_per_row} threads per row on a warp of {}",
            ctx.warp_size()
        )));
    }
    if a.nrows() == 0 {
        return Ok(());
    }
    let nrows = index("rows", a.nrows())?;
    let grid = blocks(a.nrows(), BLOCK / threads_per_row)?;
    let name = kernel_name(GpuKernel::Spmv(SpmvKernel::Vector { threads_per_row }), T::NAME);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let (offsets, cols, vals) = (a.row_offsets_ptr(), a.col_indices_ptr(), a.values_ptr());
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    // SAFETY: spmv_csr_vector_tpr<N>_<T>(unsigned nrows, const unsigned* row_offsets,
    // const unsigned* col_indices, const T* values, const T* x, T alpha, T beta, T* y),
    // launched with BLOCK threads per block as the kernel assumes (SPGPU_BLOCK / N rows per
    // block). Arguments match in order and type; lengths were checked above (x: ncols,
    // y: nrows), N is one of the compiled variants and at most the warp size, the CSR
    // invariants bound every index, and lanes of rows >= nrows read nothing and write
    // nothing. y is borrowed mutably and cannot alias x.
    unsafe { launch!(function<<<grid, BLOCK, 0, stream>>>(nrows, offsets, cols, vals, xp, alpha, beta, yp)) }
        .map_err(|e| Error::cuda(format!("launching {name}"), e))
}

/// `spmv_ell_<T>` on the context's stream.
pub(crate) fn ell<T: Scalar>(
    ctx: &Context,
    a: &DeviceEll<T>,
    alpha: T,
    x: &DeviceVector<T>,
    beta: T,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    ell_on(ctx, ctx.stream(), a, alpha, x, beta, y)
}

/// `spmv_ell_<T>`: one thread per row, `BLOCK` rows per block.
pub(crate) fn ell_on<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    a: &DeviceEll<T>,
    alpha: T,
    x: &DeviceVector<T>,
    beta: T,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    check_dims(a.nrows(), a.ncols(), x, y)?;
    if a.nrows() == 0 {
        return Ok(());
    }
    let nrows = index("rows", a.nrows())?;
    let width = index("ELL width", a.width())?;
    // The kernel walks slots up to width * nrows and one row stride past them: all of it
    // must fit 32 bits (EllMatrix guarantees width * nrows <= i32::MAX).
    index("ELL slots", (a.width() + 1).saturating_mul(a.nrows()))?;
    let grid = blocks(a.nrows(), BLOCK)?;
    let name = kernel_name(GpuKernel::Spmv(SpmvKernel::Ell), T::NAME);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let (cols, vals) = (a.col_indices_ptr(), a.values_ptr());
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    // SAFETY: spmv_ell_<T>(unsigned nrows, unsigned width, const unsigned* col_indices,
    // const T* values, const T* x, T alpha, T beta, T* y). Arguments match in order and type;
    // the arrays hold width * nrows slots (a validated EllMatrix), every non-padding column is
    // below ncols == x.len(), y.len() == nrows was checked above, the slot arithmetic fits
    // 32 bits (checked above), and threads with row >= nrows return at once. y is borrowed
    // mutably and cannot alias x.
    unsafe { launch!(function<<<grid, BLOCK, 0, stream>>>(nrows, width, cols, vals, xp, alpha, beta, yp)) }
        .map_err(|e| Error::cuda(format!("launching {name}"), e))
}

/// `spmv_csr_balanced_<T>` over the row blocks, then, when there are long rows,
/// `spmv_csr_balanced_fixup_<T>` (one warp per long row) on the same stream.
#[allow(clippy::too_many_arguments)]
pub(crate) fn csr_balanced<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    a: &DeviceCsr<T>,
    blocks: &Balanced,
    alpha: T,
    x: &DeviceVector<T>,
    beta: T,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    check_dims(a.nrows(), a.ncols(), x, y)?;
    if blocks.nblocks == 0 {
        return Ok(());
    }
    let grid = index("balanced row blocks", blocks.nblocks)?;
    // The kernel flags long rows in bit 31 of a row index and sums entries in 32 bits.
    index("rows", a.nrows().saturating_mul(2))?;
    index("entries", a.nnz())?;
    let name = kernel_name(GpuKernel::Spmv(SpmvKernel::Balanced), T::NAME);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let (offsets, cols, vals) = (a.row_offsets_ptr(), a.col_indices_ptr(), a.values_ptr());
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    let (brow, bentry) = (blocks.block_row.as_device_ptr(), blocks.block_entry.as_device_ptr());
    let partials = ptr_of(blocks.partials.as_ref());
    // SAFETY: spmv_csr_balanced_<T>(const unsigned* row_offsets, const unsigned* col_indices,
    // const T* values, const T* x, T alpha, T beta, T* y, const unsigned* block_row,
    // const unsigned* block_entry, double* partials), launched with one block of BLOCK threads
    // per row block as it assumes. The arrays are those of a validated DeviceCsr<T> stored as
    // CSR (the plan runs this kernel only then) and its RowBlocks, made from the same row
    // offsets: every block's entries lie in 0..nnz and its rows in 0..nrows, every column is
    // below ncols == x.len(), y.len() == nrows (checked above). partials has one slot per
    // block whenever a chunk block exists (the only blocks that write it). y is borrowed
    // mutably and cannot alias x.
    unsafe {
        launch!(function<<<grid, BLOCK, 0, stream>>>(offsets, cols, vals, xp, alpha, beta, yp, brow, bentry, partials))
    }
    .map_err(|e| Error::cuda(format!("launching {name}"), e))?;
    fixup(ctx, stream, blocks.nlong, blocks.long_rows.as_ref(), partials, alpha, beta, y)
}

/// `spmv_sell_<T>` over the slices and the chunks of long rows, then, when there are long rows,
/// `spmv_csr_balanced_fixup_<T>` on the same stream.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sell<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    a: &DeviceCsr<T>,
    s: &DeviceSell<T>,
    alpha: T,
    x: &DeviceVector<T>,
    beta: T,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    check_dims(a.nrows(), a.ncols(), x, y)?;
    let slice_blocks = s.nsorted.div_ceil(BLOCK as usize);
    if slice_blocks + s.nchunks == 0 {
        return Ok(());
    }
    let grid = index("SELL blocks", slice_blocks + s.nchunks)?;
    let nsorted = index("SELL rows", s.nsorted)?;
    let nslice_blocks = index("SELL slice blocks", slice_blocks)?;
    let name = kernel_name(GpuKernel::Spmv(SpmvKernel::Sell), T::NAME);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let (sp, perm, cols, vals) =
        (s.slice_ptr.as_device_ptr(), ptr_of(s.perm.as_ref()), ptr_of(s.cols.as_ref()), ptr_of(s.vals.as_ref()));
    let (ce, lc, lv) = (s.chunk_entry.as_device_ptr(), ptr_of(s.long_cols.as_ref()), ptr_of(s.long_vals.as_ref()));
    let partials = ptr_of(s.partials.as_ref());
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    // SAFETY: spmv_sell_<T>(unsigned nsorted, unsigned nslice_blocks, const unsigned* slice_ptr,
    // const unsigned* perm, const unsigned* cols, const T* vals, const T* x, T alpha, T beta,
    // T* y, const unsigned* chunk_entry, const unsigned* long_cols, const T* long_vals,
    // double* partials), BLOCK threads per block. The arrays are a SellMatrix built from a
    // validated CsrMatrix of this shape: slice_ptr has nslices + 1 entries bounding the slot
    // arrays, perm holds nsorted distinct rows below nrows == y.len(), every non-padding
    // column is below ncols == x.len(), chunk_entry has nchunks + 1 entries bounding the
    // long-row arrays, and partials has nchunks slots. Threads of sorted positions >= nsorted
    // return at once; blocks >= nslice_blocks are chunks (grid = slice blocks + chunks). y is
    // borrowed mutably and cannot alias x.
    unsafe {
        launch!(function<<<grid, BLOCK, 0, stream>>>(
            nsorted, nslice_blocks, sp, perm, cols, vals, xp, alpha, beta, yp, ce, lc, lv, partials
        ))
    }
    .map_err(|e| Error::cuda(format!("launching {name}"), e))?;
    fixup(ctx, stream, s.nlong, s.long_rows.as_ref(), partials, alpha, beta, y)
}

/// `spmv_csr_balanced_fixup_<T>`: one warp per long row adds the row's chunk sums in order and
/// writes `y`; nothing when there are no long rows.
#[allow(clippy::too_many_arguments)]
fn fixup<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    nlong: usize,
    long_rows: Option<&DeviceMemory<u32>>,
    partials: cust::memory::DevicePointer<f64>,
    alpha: T,
    beta: T,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    if nlong == 0 {
        return Ok(());
    }
    let n = index("long rows", nlong)?;
    let grid = blocks_for(nlong * 32)?;
    let name = kernel_name(GpuKernel::BalancedFixup, T::NAME);
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let long_rows = ptr_of(long_rows);
    let yp = y.as_device_ptr();
    // SAFETY: spmv_csr_balanced_fixup_<T>(unsigned nlong, const unsigned* long_rows,
    // const double* partials, T alpha, T beta, T* y), one warp per long row (BLOCK is a
    // multiple of 32). long_rows holds 3 * nlong entries, each naming a row below
    // y.len() and chunk slots within partials; the kernel queued before on the same stream
    // wrote those slots. y is borrowed mutably.
    unsafe { launch!(function<<<grid, BLOCK, 0, stream>>>(n, long_rows, partials, alpha, beta, yp)) }
        .map_err(|e| Error::cuda(format!("launching {name}"), e))
}

/// Blocks of `BLOCK` threads for `threads` threads.
fn blocks_for(threads: usize) -> Result<u32> {
    blocks(threads, BLOCK)
}

/// `fill_vector_<T>`: `y[i] = value`, one thread per element.
pub(crate) fn fill<T: Scalar>(ctx: &Context, y: &mut DeviceVector<T>, value: T) -> Result<()> {
    if y.is_empty() {
        return Ok(());
    }
    let n = index("vector length", y.len())?;
    let grid = blocks(y.len(), BLOCK)?;
    let name = kernel_name(GpuKernel::FillVector, T::NAME);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let stream = ctx.stream();
    let yp = y.as_device_ptr();
    // SAFETY: fill_vector_<T>(unsigned n, T value, T* y); n == y.len() (non-zero, so the
    // pointer is a live allocation of n elements), threads with i >= n do nothing, and y is
    // borrowed mutably.
    unsafe { launch!(function<<<grid, BLOCK, 0, stream>>>(n, value, yp)) }
        .map_err(|e| Error::cuda(format!("launching {name}"), e))
}
