//! Launchers of the kernels in `ptx/spmv.cu`.

use cust::launch;

use super::arrays::{Balanced, CsrArrays, CsrOnDevice, DeviceHot, DeviceSell, EllArrays, SlotCols, ValueMap};
use super::{
    balanced_kernel_name, blocks, hot_kernel_name, index, kernel_name, slot_kernel_name, spmv_kernel_name, GpuKernel,
    BLOCK, HOT_THREADS,
};
use crate::gpu::plan::SpmvKernel;
use crate::gpu::plan::VECTOR_THREADS_PER_ROW;
use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::gpu::runtime::module::ModuleId;
use crate::gpu::runtime::positions::shifted;
use crate::gpu::runtime::stream::Stream;
use crate::gpu::runtime::vector::DeviceVector;
use crate::gpu::runtime::vector::{check_len, ptr_of};
use crate::{Error, Result, Scalar};

/// The CSR arrays a kernel is handed: `(64-bit offsets, offsets, columns, values)`.
fn csr_arrays(a: &impl CsrArrays) -> Result<(bool, u64, u64, u64)> {
    a.kernel_arrays().ok_or_else(|| Error::InvalidArgument("the matrix is not stored as CSR on the device".into()))
}

/// Checks `x.len() == ncols` and `y.len() == nrows`.
pub(crate) fn check_dims<T: Scalar>(
    nrows: usize,
    ncols: usize,
    x: &DeviceVector<T>,
    y: &DeviceVector<T>,
) -> Result<()> {
    check_len("spmv: length of x", ncols, x.len())?;
    check_len("spmv: length of y", nrows, y.len())
}

/// `spmv_csr_scalar_<T>`: one thread per row, `BLOCK` rows per block.
pub(crate) fn csr_scalar<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    a: &impl CsrArrays,
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
    let (wide, offsets, cols, vals) = csr_arrays(a)?;
    let name = spmv_kernel_name(SpmvKernel::Scalar, T::NAME, wide);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    // SAFETY: spmv_csr_scalar_<T>[_i64](unsigned nrows, const O* row_offsets,
    // const unsigned* col_indices, const T* values, const T* x, T alpha, T beta, T* y), O
    // 64-bit exactly when the name ends in _i64 (wide, as the offsets are). The arguments
    // match it in order and size (u32, three device addresses of a validated DeviceCsr<T>,
    // x's pointer, T, T, y's pointer). x.len() == ncols and y.len() == nrows were checked
    // above; the CSR invariants bound every offset by nnz and every column by ncols (with
    // the test-only entry base, offsets and entry addresses are shifted by the same count),
    // and threads with row >= nrows return at once. y is borrowed mutably, so nothing else
    // writes it; x cannot alias it.
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
    a: &impl CsrArrays,
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
    let (narrow, (wide, offsets, cols, vals)) = match a.narrow_kernel_arrays() {
        Some(arrays) => (true, arrays),
        None => (false, csr_arrays(a)?),
    };
    let name = slot_kernel_name(SpmvKernel::Vector { threads_per_row }, T::NAME, wide, narrow);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    // SAFETY: spmv_csr_vector_tpr<N>_<T>[_i64](unsigned nrows, const O* row_offsets (O as for
    // the scalar kernel), const unsigned* col_indices, const T* values, const T* x, T alpha,
    // T beta, T* y), or spmv_csr16_vector_tpr<N>_<T>[_i64] with const unsigned short*
    // col_offsets instead of col_indices (16-bit offsets from the row, each column within
    // [0, ncols) by the CSR invariants and narrow::encode),
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
    a: &impl EllArrays<T>,
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
    a: &impl EllArrays<T>,
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
    // The kernel walks slots up to width * nrows and one row stride past them: with 32-bit
    // slots all of it must fit 32 bits, else the 64-bit variant runs.
    let wide = a.is_wide();
    let grid = blocks(a.nrows(), BLOCK)?;
    let name = slot_kernel_name(SpmvKernel::Ell, T::NAME, wide, a.narrow_columns());
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let (cols, vals) = (a.cols_addr(), a.values_ptr());
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    // SAFETY: spmv_ell[16]_<T>[_i64](unsigned nrows, unsigned width, const unsigned*
    // col_indices or const unsigned short* col_offsets (16: the matrix stores narrow
    // columns), const T* values, const T* x, T alpha, T beta, T* y). Arguments match in
    // order and type; the arrays hold width * nrows slots (a validated EllMatrix; offsets
    // decode to its columns), every non-padding column is
    // below ncols == x.len(), y.len() == nrows was checked above, the slot arithmetic fits
    // the variant's slot type (64-bit when (width + 1) * nrows does not fit 32 bits), and
    // threads with row >= nrows return at once. y is borrowed mutably and cannot alias x.
    unsafe { launch!(function<<<grid, BLOCK, 0, stream>>>(nrows, width, cols, vals, xp, alpha, beta, yp)) }
        .map_err(|e| Error::cuda(format!("launching {name}"), e))
}

/// `ell_from_csr_<T>` (`ell16_from_csr_<T>` into narrow slots): the `width * nrows` ELL slots
/// of a validated CSR matrix whose arrays are on the device (`row_offsets` as `u64`), one
/// thread per row. Every row must hold at most `width` entries, and, for narrow slots, every
/// column must lie within 32767 of its row ([`fits`](crate::gpu::storage::narrow::fits)).
#[allow(clippy::too_many_arguments)]
pub(crate) fn ell_from_csr<T: Scalar>(
    ctx: &Context,
    nrows: usize,
    width: usize,
    row_offsets: &DeviceMemory<u64>,
    cols: &DeviceMemory<u32>,
    vals: &DeviceMemory<T>,
    out_cols: &mut SlotCols,
    out_vals: &mut DeviceMemory<T>,
) -> Result<()> {
    check_len("ELL conversion: row offsets", nrows + 1, row_offsets.len())?;
    check_len("ELL conversion: values", cols.len(), vals.len())?;
    let slots = width.checked_mul(nrows).ok_or_else(|| Error::InvalidArgument("ELL slots overflow".into()))?;
    check_len("ELL conversion: slot columns", slots, out_cols.len())?;
    check_len("ELL conversion: slot values", slots, out_vals.len())?;
    if slots == 0 {
        return Ok(());
    }
    let (n, w) = (index("rows", nrows)?, index("ELL width", width)?);
    let narrow = out_cols.is_narrow();
    let name = kernel_name(GpuKernel::EllFromCsr { narrow }, T::NAME);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let grid = blocks(nrows, BLOCK)?;
    let stream = ctx.stream();
    let (op, cp, vp) = (row_offsets.as_device_ptr(), cols.as_device_ptr(), vals.as_device_ptr());
    let (oc, ov) = (out_cols.addr(), out_vals.as_device_ptr());
    // SAFETY: ell[16]_from_csr_<T>(unsigned nrows, unsigned width, const u64* row_offsets,
    // const unsigned* cols, const T* vals, unsigned* or unsigned short* out_cols (16: narrow
    // slots), T* out_vals). Arguments match in order and type (out_cols' element type follows
    // the kernel chosen by `narrow`); row_offsets holds nrows + 1 offsets of a validated CSR
    // matrix (non-decreasing, the last the entry count, at most cols.len() == vals.len()), each
    // row at most `width` long (the caller's contract), so every read lies within cols and
    // vals; the outputs hold width * nrows slots (checked), written at k * nrows + row in
    // 64-bit arithmetic; threads with row >= nrows return at once. The inputs are only read,
    // the outputs are other allocations.
    unsafe { launch!(function<<<grid, BLOCK, 0, stream>>>(n, w, op, cp, vp, oc, ov)) }
        .map_err(|e| Error::cuda(format!("launching {name}"), e))
}

/// `sell_from_csr_<T>` (`sell16_from_csr_<T>` into narrow slots): the slots of SELL-C-σ
/// slices `0..nslices` (offsets `slice_ptr`, `nslices + 1` of them as `u64`; rows `perm` in
/// sorted order, `nsorted` of them) of a validated CSR matrix whose arrays are on the device,
/// one thread per slot lane. Every sorted row must fit its slice's width (as
/// [`SellLayout`](crate::gpu::storage::sell::SellLayout) makes them), and, for narrow slots, every
/// column of a sorted row must lie within 32767 of its row.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sell_from_csr<T: Scalar>(
    ctx: &Context,
    slice_ptr: &DeviceMemory<u64>,
    perm: &DeviceMemory<u32>,
    csr: &CsrOnDevice<T>,
    out_cols: &mut SlotCols,
    out_vals: &mut DeviceMemory<T>,
    far: Option<&DeviceMemory<u32>>,
) -> Result<()> {
    let nslices = slice_ptr.len().saturating_sub(1);
    let nsorted = perm.len();
    if nslices == 0 || nsorted.div_ceil(32) != nslices {
        return Err(Error::InvalidArgument(format!("SELL conversion: {nsorted} sorted rows in {nslices} slices")));
    }
    check_len("SELL conversion: values", out_cols.len(), out_vals.len())?;
    let (ns, nsl) = (index("sorted rows", nsorted)?, index("slices", nslices)?);
    let narrow = out_cols.is_narrow();
    if far.is_some() && !narrow {
        return Err(Error::InvalidArgument("SELL conversion: far columns need narrow slots".into()));
    }
    let name = match far {
        Some(_) => kernel_name(GpuKernel::SellFarFromCsr, T::NAME),
        None => kernel_name(GpuKernel::SellFromCsr { narrow }, T::NAME),
    };
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let grid = blocks(nslices * 32, BLOCK)?;
    let stream = ctx.stream();
    let (sp, pp) = (slice_ptr.as_device_ptr(), perm.as_device_ptr());
    let (op, cp, vp) = (csr.row_offsets.as_device_ptr(), csr.cols.as_device_ptr(), csr.vals.as_device_ptr());
    let (oc, ov) = (out_cols.addr(), out_vals.as_device_ptr());
    // SAFETY: sell[16]_from_csr_<T>(unsigned nsorted, unsigned nslices, const u64* slice_ptr,
    // const unsigned* perm, const u64* row_offsets, const unsigned* cols, const T* vals,
    // unsigned* or unsigned short* out_cols (16: narrow slots), T* out_vals). Arguments match
    // in order and type; slice_ptr and perm are a SellLayout's of this matrix (the caller's
    // contract): slice s holds 32 * width_s slots from slice_ptr[s], the last offset being the
    // slot count == out_cols.len() == out_vals.len(), perm lists nsorted rows of the matrix,
    // each no longer than its slice's width, so every write lies within the outputs and
    // every read within the CSR arrays (row offsets of a validated matrix); threads past
    // nslices * 32 return at once. The inputs are only read, the outputs are other
    // allocations. sell16f_from_csr_<T> takes two more, const unsigned* far and unsigned
    // nfar: the sorted far columns (narrow::far_columns of this matrix), which hold every
    // column of a short row whose offset does not fit, so each search ends within the table.
    unsafe {
        match far {
            Some(f) => {
                let nfar = index("far columns", f.len())?;
                launch!(function<<<grid, BLOCK, 0, stream>>>(ns, nsl, sp, pp, op, cp, vp, oc, ov, f.as_device_ptr(), nfar))
            }
            None => launch!(function<<<grid, BLOCK, 0, stream>>>(ns, nsl, sp, pp, op, cp, vp, oc, ov)),
        }
    }
    .map_err(|e| Error::cuda(format!("launching {name}"), e))
}

/// `spmv_csr_balanced_<T>` over the row blocks (or, with hot columns, `gather_<T>` of the hot
/// entries of x then `spmv_csr_hot_<T>`); the block of a long row's last chunk writes it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn csr_balanced<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    a: &impl CsrArrays,
    blocks: &Balanced,
    hot: Option<&DeviceHot<T>>,
    alpha: T,
    x: &DeviceVector<T>,
    beta: T,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    check_dims(a.nrows(), a.ncols(), x, y)?;
    if blocks.nblocks == 0 {
        return Ok(());
    }
    let nblocks = index("balanced row blocks", blocks.nblocks)?;
    // The kernel flags long rows in bit 31 of a row index.
    index("rows", a.nrows().saturating_mul(2))?;
    let (wide, offsets, cols, vals) = csr_arrays(a)?;
    if blocks.block_entry.is_wide() != wide {
        return Err(Error::InvalidArgument("balanced row blocks and row offsets differ in width".into()));
    }
    ctx.make_current()?;
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    let (brow, bentry) = (blocks.block_row.as_device_ptr(), blocks.block_entry.addr());
    let partials = ptr_of(blocks.partials.as_ref());
    match hot {
        None => {
            let name = balanced_kernel_name(blocks.shape, blocks.sweep, blocks.prefetch_x.is_some(), T::NAME, wide);
            let function = ctx.function(ModuleId::Spmv, &name)?;
            let threads = blocks.shape.threads as u32;
            // SAFETY: spmv_csr_balanced[N][_px | _sweep]_<T>[_i64](const O* row_offsets, const unsigned*
            // col_indices, const T* values, const T* x, T alpha, T beta, T* y, const unsigned*
            // block_row, const O* block_entry, double* partials), O 64-bit exactly for _i64
            // (wide: the offsets and block starts, checked to agree above), launched with one
            // block of blocks.shape.threads threads per row block, as the kernel of that shape
            // assumes. The arrays are those of a
            // validated DeviceCsr<T> stored as CSR (the plan runs this kernel only then) and
            // its RowBlocks, made from the same row offsets (shifted by the same test-only base
            // as the entry addresses): every block's entries lie in 0..nnz and its rows in
            // 0..nrows (a stream block also reads the up to 3 entries before its first, from a
            // multiple of 4, which RowBlocks counted towards its entries: col_indices and values
            // start 16-byte aligned, as every driver allocation is, so that the kernel's count
            // of them, taken from the address, is RowBlocks' and its vector loads are aligned),
            // every column is below ncols == x.len(), y.len() == nrows (checked
            // above). partials has one slot per block whenever a chunk block exists (the only
            // blocks that write it), each holding "no sum" (0xff bytes) before the launch (so
            // filled, and set back by the block of each row's last chunk, which waits for the
            // others: earlier blocks, dispatched before it; a chunk block finds its row's first
            // chunk and chunk count from the row offsets, as RowBlocks cut them). In chunk-major
            // order (blocks.sweep, the sweep kernel) the slots are RowBlocks::scratch_len, a
            // row's starting at (row_offsets[row] - row_offsets[0]) / chunk + row, apart from
            // every other row's, a chunk's entries end at its chunk's end (within its row), and
            // a row's chunks still come in increasing block order. y is borrowed mutably and
            // cannot alias x.
            unsafe {
                launch!(function<<<nblocks, threads, 0, stream>>>(
                    offsets, cols, vals, xp, alpha, beta, yp, brow, bentry, partials
                ))
            }
            .map_err(|e| Error::cuda(format!("launching {name}"), e))?;
        }
        Some(h) => {
            // the hot-column kernel runs row blocks of the default shape, in row order, only
            if blocks.sweep {
                return Err(Error::InvalidArgument(
                    "hot columns with chunks in chunk-major order: the hot-column kernel takes row order".into(),
                ));
            }
            if blocks.shape != crate::gpu::plan::balance::RowShape::DEFAULT {
                return Err(Error::InvalidArgument(format!(
                    "hot columns with row blocks of {} threads: the hot-column kernel takes {}",
                    blocks.shape.threads,
                    crate::gpu::plan::balance::RowShape::DEFAULT.threads
                )));
            }
            let nhot = index("hot columns", h.len)?;
            let gather = kernel_name(GpuKernel::Gather, T::NAME);
            let function = ctx.function(ModuleId::Spmv, &gather)?;
            let (hcols, hx, counter) = (h.columns.as_device_ptr(), h.x.as_device_ptr(), h.counter.as_device_ptr());
            // SAFETY: gather_<T>(unsigned n, const unsigned* idx, const T* x, T* out, unsigned*
            // counter), one thread per element (thread 0 zeroes *counter): columns and x of h
            // hold nhot elements, every column is below ncols == x.len(); h.x and h.counter
            // are written only here and by the kernel queued next on the same stream (calls on
            // one matrix are queued under its lock).
            unsafe { launch!(function<<<blocks_for(h.len)?, BLOCK, 0, stream>>>(nhot, hcols, xp, hx, counter)) }
                .map_err(|e| Error::cuda(format!("launching {gather}"), e))?;
            let name = hot_kernel_name(blocks.prefetch_x.is_some(), T::NAME, wide);
            let function = ctx.function(ModuleId::Spmv, &name)?;
            // SAFETY: spmv_csr_hot[_px]_<T>[_i64](the balanced kernel's arguments, unsigned nblocks,
            // const T* hot_x, unsigned nhot, unsigned* counter), with HOT_THREADS threads per block and
            // h.shared_bytes == nhot * size_of::<T>() bytes of dynamic shared memory (allowed to
            // the function when the hot columns were planned). As for the balanced kernel above,
            // and: every column flagged HOT_FLAG at upload holds a slot below nhot, the others a
            // column below ncols; each block runs row blocks below nblocks only, drawn from the
            // counter the gather zeroed.
            unsafe {
                launch!(function<<<h.grid, HOT_THREADS, h.shared_bytes, stream>>>(
                    offsets, cols, vals, xp, alpha, beta, yp, brow, bentry, partials, nblocks, hx, nhot, counter
                ))
            }
            .map_err(|e| Error::cuda(format!("launching {name}"), e))?;
        }
    }
    Ok(())
}

/// `spmv_sell_<T>` over the slices and the chunks of long rows (the block of a long row's
/// last chunk writes it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn sell<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    a: &impl CsrArrays,
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
    let wide = s.slice_ptr.is_wide();
    let narrow = s.cols.as_ref().is_some_and(SlotCols::is_narrow);
    let name = match &s.far {
        Some(_) => kernel_name(GpuKernel::SellFar, T::NAME) + if wide { "_i64" } else { "" },
        None => slot_kernel_name(SpmvKernel::Sell, T::NAME, wide, narrow),
    };
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let base = a.entry_base();
    let a32 = |m: Option<&DeviceMemory<u32>>| shifted::<u32>(ptr_of(m).as_raw(), base);
    let at = |m: Option<&DeviceMemory<T>>| shifted::<T>(ptr_of(m).as_raw(), base);
    let cols = match &s.cols {
        None => 0,
        Some(c @ SlotCols::Wide(_)) => shifted::<u32>(c.addr(), base),
        Some(c @ SlotCols::Narrow(_)) => shifted::<u16>(c.addr(), base),
    };
    let (sp, perm, vals) = (s.slice_ptr.addr(), ptr_of(s.perm.as_ref()), at(s.vals.as_ref()));
    let (ce, lc, lv) = (s.chunk_entry.addr(), a32(s.long_cols.as_ref()), at(s.long_vals.as_ref()));
    let partials = ptr_of(s.partials.as_ref());
    let nlong = index("SELL long rows", s.nlong)?;
    let long_rows = ptr_of(s.long_rows.as_ref());
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    // SAFETY: spmv_sell[16]_<T>[_i64](unsigned nsorted, unsigned nslice_blocks, const O*
    // slice_ptr, const unsigned* perm, const unsigned* cols or const unsigned short*
    // col_offsets (16: the slots store narrow columns, which decode to the matrix's), const
    // T* vals, const T* x, T alpha, T beta, T* y, const O* chunk_entry, const unsigned*
    // long_cols, const T* long_vals, double* partials, unsigned nlong, const unsigned*
    // long_rows), O 64-bit exactly for _i64 (both position arrays are uploaded in the
    // same width), BLOCK threads per block; the slot arrays' addresses are moved back by the
    // test-only base by which the positions were raised. The arrays are a SellMatrix built from a
    // validated CsrMatrix of this shape: slice_ptr has nslices + 1 entries bounding the slot
    // arrays, perm holds nsorted distinct rows below nrows == y.len(), every non-padding
    // column is below ncols == x.len(), chunk_entry has nchunks + 1 entries bounding the
    // long-row arrays, partials has nchunks slots holding "no sum" before the launch (as for
    // the balanced kernel above), long_rows lists the nlong long rows as [row, first chunk,
    // chunks] in increasing order. Threads
    // of sorted positions >= nsorted return at once; the first grid - nslice_blocks blocks
    // are chunks (grid = chunks + slice blocks). y is borrowed mutably and cannot alias x.
    // spmv_sell16f_<T>[_i64] takes one more argument, const unsigned* far: the table of the
    // far columns (narrow slots only), every code below its length (narrow::encode_far).
    unsafe {
        match &s.far {
            Some(far) => launch!(function<<<grid, BLOCK, 0, stream>>>(
                nsorted, nslice_blocks, sp, perm, cols, vals, xp, alpha, beta, yp, ce, lc, lv, partials, nlong,
                long_rows, far.as_device_ptr()
            )),
            None => launch!(function<<<grid, BLOCK, 0, stream>>>(
                nsorted, nslice_blocks, sp, perm, cols, vals, xp, alpha, beta, yp, ce, lc, lv, partials, nlong,
                long_rows
            )),
        }
    }
    .map_err(|e| Error::cuda(format!("launching {name}"), e))
}

/// Blocks of `BLOCK` threads for `threads` threads.
fn blocks_for(threads: usize) -> Result<u32> {
    blocks(threads, BLOCK)
}

// The fill is a method of the runtime's vector, defined here, where its kernel is launched
// (the runtime layer launches nothing).
impl<T: Scalar> DeviceVector<T> {
    /// Sets every element to `value`, with a kernel on the context's stream (no wait).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when the launch fails; [`Error::InvalidArgument`] when the vector is
    /// longer than the kernels' 32-bit index allows.
    pub fn fill(&mut self, value: T) -> Result<()> {
        fill(self.context(), self, value)
    }
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

/// `unflag_hot_columns`: `cols[i] = columns[cols[i] & !HOT_FLAG]` for flagged entries, in
/// place, on the context's stream.
///
/// # Safety
///
/// `cols` is a live device array of `n` column indices whose flagged entries hold slots
/// within the live array `columns`, and nothing else uses `cols` until the stream has run
/// the kernel.
pub(crate) unsafe fn unflag_hot(ctx: &Context, cols: u64, columns: u64, n: usize) -> Result<()> {
    // SAFETY: unflag_hot_columns(unsigned long long n, unsigned* cols, const unsigned*
    // hot_cols); the caller guarantees the arrays.
    unsafe { grid_stride(ctx, GpuKernel::UnflagHot, n, cols, columns) }
}

/// `count_columns`: `counts[cols[i]] += 1` for `i < n`, on the context's stream.
///
/// # Safety
///
/// `cols` is a live device array of `n` column indices, each below the length of the live
/// array `counts`, and nothing else uses `counts` until the stream has run the kernel.
pub(crate) unsafe fn count_columns(ctx: &Context, cols: u64, counts: u64, n: usize) -> Result<()> {
    // SAFETY: count_columns(unsigned long long n, const unsigned* cols, unsigned* counts);
    // the caller guarantees the arrays.
    unsafe { grid_stride(ctx, GpuKernel::CountColumns, n, cols, counts) }
}

/// `flag_hot_columns`: `cols[i] = HOT_FLAG | slots[cols[i]]` where that slot is not
/// `u32::MAX`, in place, on the context's stream.
///
/// # Safety
///
/// `cols` is a live device array of `n` column indices, each below the length of the live
/// array `slots`, and nothing else uses `cols` until the stream has run the kernel.
pub(crate) unsafe fn flag_hot(ctx: &Context, cols: u64, slots: u64, n: usize) -> Result<()> {
    // SAFETY: flag_hot_columns(unsigned long long n, unsigned* cols, const unsigned* slots);
    // the caller guarantees the arrays.
    unsafe { grid_stride(ctx, GpuKernel::FlagHot, n, cols, slots) }
}

/// `widen_u32_u64`: `dst[i] = src[i]` for `i < n`, `u32` to `u64`, on the context's stream.
///
/// # Safety
///
/// `src` and `dst` are live device allocations of at least `n` `u32` and `n` `u64`, and
/// nothing else writes `dst` until the stream has run the kernel.
pub(crate) unsafe fn widen(ctx: &Context, src: u64, dst: u64, n: usize) -> Result<()> {
    // SAFETY: widen_u32_u64(unsigned long long n, const unsigned* in, unsigned long long*
    // out); the caller guarantees both arrays hold n elements.
    unsafe { grid_stride(ctx, GpuKernel::WidenIndices, n, src, dst) }
}

/// `update_values_<T>` (`_i64` for a 64-bit map): `dst[i] = src[map[i]]` for every slot `i`
/// of `dst`, 0 where `map[i]` is all ones, on the context's stream.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `map` and `dst` differ in length; [`Error::Cuda`] when the
/// launch fails.
///
/// # Safety
///
/// Every entry of `map` that is not all ones is below `src.len()`.
pub(crate) unsafe fn update_values<T: Scalar>(
    ctx: &Context,
    map: &ValueMap,
    src: &DeviceMemory<T>,
    dst: &mut DeviceMemory<T>,
) -> Result<()> {
    let (n, mp, wide) = match map {
        ValueMap::Narrow(m) => (m.len(), m.as_device_ptr().as_raw(), false),
        ValueMap::Wide(m) => (m.len(), m.as_device_ptr().as_raw(), true),
    };
    check_len("update_values: slots", n, dst.len())?;
    let name = kernel_name(GpuKernel::UpdateValues, T::NAME) + if wide { "_i64" } else { "" };
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let grid = blocks(n, BLOCK).unwrap_or(u32::MAX).min(65_535);
    let stream = ctx.stream();
    let (sp, dp, n) = (src.as_device_ptr(), dst.as_device_ptr(), n as u64);
    // SAFETY: update_values_<T>[_i64](unsigned long long n, const unsigned* or const u64*
    // map, const T* src, T* dst), grid-stride over 0..n: map and dst hold n elements
    // (checked), each map entry is all ones or below src.len() (the caller's contract);
    // src is only read, dst is another allocation, borrowed mutably.
    unsafe { launch!(function<<<grid, BLOCK, 0, stream>>>(n, mp, sp, dp)) }
        .map_err(|e| Error::cuda(format!("launching {name}"), e))
}

/// Launches a grid-stride kernel that has one name for both element types and takes
/// `(unsigned long long n, a, b)` with two device addresses, on the context's stream (at
/// most 65535 blocks); nothing when `n == 0`.
///
/// # Safety
///
/// `a` and `b` are what the kernel expects for `n` elements (its loop touches exactly
/// `0..n`), live until the stream has run it.
unsafe fn grid_stride(ctx: &Context, kernel: GpuKernel, n: usize, a: u64, b: u64) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let grid = blocks(n, BLOCK).unwrap_or(u32::MAX).min(65_535);
    let name = kernel_name(kernel, "");
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let stream = ctx.stream();
    let n = n as u64;
    // SAFETY: the caller guarantees that a and b match the kernel and its n elements.
    unsafe { launch!(function<<<grid, BLOCK, 0, stream>>>(n, a, b)) }
        .map_err(|e| Error::cuda(format!("launching {name}"), e))
}
