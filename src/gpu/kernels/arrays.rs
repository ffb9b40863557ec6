//! What the launchers read of a matrix on the device: the traits its storage implements
//! ([`CsrArrays`], [`EllArrays`]) and the device arrays of the row blocks, SELL, hot columns,
//! ELL and SELL slots and the CSR arrays of a conversion. The storage layer makes and owns
//! them; the launchers only read their addresses and counts.

use cust::memory::DevicePointer;

use crate::gpu::plan::balance::RowShape;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::gpu::runtime::positions::Positions;
use crate::Scalar;

/// A CSR matrix on the device as the CSR kernels read it ([`DeviceCsr`](crate::gpu::DeviceCsr)).
pub(crate) trait CsrArrays {
    /// Number of rows.
    fn nrows(&self) -> usize;
    /// Number of columns.
    fn ncols(&self) -> usize;
    /// `(64-bit, row offsets, columns, values)` addresses, the entry arrays moved back by
    /// the test-only entry base; `None` unless stored as CSR.
    fn kernel_arrays(&self) -> Option<(bool, u64, u64, u64)>;
    /// As [`kernel_arrays`](CsrArrays::kernel_arrays), with 16-bit column offsets; `None`
    /// unless stored so.
    fn narrow_kernel_arrays(&self) -> Option<(bool, u64, u64, u64)>;
    /// The test-only entry base (0 for every ordinary upload).
    fn entry_base(&self) -> u64;
    /// `(64-bit, row offsets, columns, values)` of plain CSR arrays as stored (no entry base,
    /// no hot-column flags); `None` otherwise.
    fn plain_csr(&self) -> Option<(bool, u64, u64, u64)>;
}

/// An ELLPACK matrix on the device as the ELL kernels read it ([`DeviceEll`](crate::gpu::DeviceEll)).
pub(crate) trait EllArrays<T: Scalar> {
    /// Number of rows.
    fn nrows(&self) -> usize;
    /// Number of columns.
    fn ncols(&self) -> usize;
    /// Slots per row.
    fn width(&self) -> usize;
    /// Whether the slot arithmetic needs 64 bits.
    fn is_wide(&self) -> bool;
    /// Whether the slots hold 16-bit column offsets.
    fn narrow_columns(&self) -> bool;
    /// The address of the slots' columns (or offsets); 0 without slots.
    fn cols_addr(&self) -> u64;
    /// The slots' values.
    fn values_ptr(&self) -> DevicePointer<T>;
}

/// The columns of ELL or SELL slots on the device: 32-bit columns or 16-bit offsets.
pub(crate) enum SlotCols {
    /// Columns, [`ELL_PADDING`](crate::ELL_PADDING) in padding slots.
    Wide(DeviceMemory<u32>),
    /// Offsets from the row ([`encode`](crate::gpu::narrow::encode)), [`NARROW_PADDING`](crate::gpu::narrow::NARROW_PADDING) in padding slots.
    Narrow(DeviceMemory<u16>),
}

/// A CSR matrix's arrays on the device for a conversion there (row offsets as `u64`), freed
/// (in stream order) when dropped.
pub(crate) struct CsrOnDevice<T: Scalar> {
    pub(crate) row_offsets: DeviceMemory<u64>,
    pub(crate) cols: DeviceMemory<u32>,
    pub(crate) vals: DeviceMemory<T>,
}

/// What the hot-column kernel needs on the device, beside the balanced kernel's row blocks.
pub(crate) struct DeviceHot<T: Scalar> {
    /// The hot columns ([`HotColumns::columns`](crate::gpu::hot::HotColumns::columns)).
    pub(crate) columns: DeviceMemory<u32>,
    /// The hot entries of `x` of the current call (`gather_<T>` writes them, the kernel reads
    /// them; calls on one matrix are queued under its lock).
    pub(crate) x: DeviceMemory<T>,
    /// The kernel's row-block counter (`gather_<T>` zeroes it each call).
    pub(crate) counter: DeviceMemory<u32>,
    pub(crate) len: usize,
    /// Entries in hot columns.
    pub(crate) entries: u64,
    /// Blocks of the kernel: as many as are resident at once.
    pub(crate) grid: u32,
    /// Dynamic shared memory per block: the hot entries of `x`.
    pub(crate) shared_bytes: u32,
}

/// A [`SellMatrix`](crate::gpu::storage::sell::SellMatrix) on the device.
pub(crate) struct DeviceSell<T: Scalar> {
    pub(crate) nsorted: usize,
    pub(crate) nslices: usize,
    pub(crate) nchunks: usize,
    pub(crate) nlong: usize,
    pub(crate) slice_ptr: Positions,
    pub(crate) perm: Option<DeviceMemory<u32>>,
    /// The slots' columns, or their offsets from the row ([`crate::gpu::narrow`]).
    pub(crate) cols: Option<SlotCols>,
    pub(crate) vals: Option<DeviceMemory<T>>,
    pub(crate) chunk_entry: Positions,
    pub(crate) long_cols: Option<DeviceMemory<u32>>,
    pub(crate) long_vals: Option<DeviceMemory<T>>,
    pub(crate) long_rows: Option<DeviceMemory<u32>>,
    /// One `f64` per chunk: the chunk sums of one call (see [`Balanced::partials`]).
    pub(crate) partials: Option<DeviceMemory<f64>>,
    /// The table of far columns of narrow slots ([`far_columns`](crate::gpu::narrow::far_columns)), when they have one.
    pub(crate) far: Option<DeviceMemory<u32>>,
    pub(crate) nfar: usize,
    pub(crate) bytes: usize,
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) slots: usize,
    pub(crate) nlong_entries: usize,
}

/// The row blocks of the balanced kernel on the device ([`RowBlocks`](crate::gpu::balance::RowBlocks)).
pub(crate) struct Balanced {
    /// Blocks of the main kernel.
    pub(crate) nblocks: usize,
    pub(crate) block_row: DeviceMemory<u32>,
    pub(crate) block_entry: Positions,
    /// [`RowBlocks::scratch_len`](crate::gpu::balance::RowBlocks::scratch_len) `f64` slots when there are long rows (one per block, or in
    /// chunk-major order a range per long row): the chunk sums of one call, written by the
    /// chunk blocks and read by the block of their row's last chunk, which sets them back to
    /// "no sum" (0xff bytes) for the next call.
    pub(crate) partials: Option<DeviceMemory<f64>>,
    /// The shape the rows were cut to (which kernel runs them).
    pub(crate) shape: RowShape,
    /// Whether the chunks come in chunk-major order ([`RowBlocks::sweep`](crate::gpu::balance::RowBlocks::sweep)).
    pub(crate) sweep: bool,
    /// Why the kernel gathers `x` with the L2 prefetch hint, when it does
    /// ([`crate::gpu::balance::prefetch_x`]; blocks in row order only).
    pub(crate) prefetch_x: Option<String>,
    pub(crate) bytes: usize,
}

/// Where each slot of a value array takes its value from: the CSR position of the entry it
/// holds, all ones for a padding slot (made by [`crate::gpu::storage::values`]). `u32` while
/// every position fits below `u32::MAX`, `u64` past it.
pub(crate) enum ValueMap {
    Narrow(DeviceMemory<u32>),
    Wide(DeviceMemory<u64>),
}
