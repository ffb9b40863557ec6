//! Hot columns: the entries of `x` that many entries of the matrix read, kept in shared
//! memory by the balanced kernel.
//!
//! On matrices whose columns are read unevenly (R-MAT and other Kronecker graphs: at scale 21
//! the 8192 most-read of 2 million columns hold 40% of the entries), the balanced kernel is
//! bound by the L2: every entry gathers one 32-byte sector of `x` for 4 or 8 useful bytes
//! (on the H200, Nsight Compute shows the L2 at 86-88% of its throughput and the L1 hit rate
//! at 10%). The hot-column variant of the balanced kernel (`spmv_csr_hot_<T>` in
//! `ptx/spmv.cu`) copies the hot entries of `x` into each block's shared memory once per
//! call, so their gathers never reach the L2.
//!
//! At upload, each column's entries are counted on the device, and the most-read columns
//! that repay their copy are kept ([`HotColumns::from_counts`]); each of their entries is
//! then stored, on the device, as [`HOT_FLAG`]` | slot` instead of its column (columns are
//! below 2^31, so bit 31 is free), the slot being the column's place in
//! [`HotColumns::columns`]. Each call gathers the hot
//! entries of `x` into a contiguous array (`gather_<T>`), which every block copies with
//! coalesced reads. Downloads restore the columns; nothing else sees the flagged ones.

use std::sync::atomic::{AtomicU32, Ordering};

use cust::function::{BlockSize, FunctionAttribute};

use super::kernels::hot_kernel_name;
use super::memory::DeviceMemory;
use super::{Context, ModuleId, SpmvPlan};
use crate::error::DriverError;
use crate::{Error, Result, Scalar};

/// Bit 31 of a stored column index: the entry's column is hot, and the low 31 bits are its
/// slot ([`HotColumns::columns`]). `SPGPU_HOT_FLAG` in `ptx/spmv.cu`.
pub const HOT_FLAG: u32 = 0x8000_0000;

/// Marks a column that is not hot in [`HotColumns::slot_map`].
const COLD: u32 = u32::MAX;

/// The hot columns of a matrix: which columns, and how many of its entries they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotColumns {
    columns: Vec<u32>,
    entries: u64,
}

impl HotColumns {
    /// The hot columns of a matrix with these column indices: the columns holding more than
    /// `min_entries` entries, at most `capacity` of them, the most-read first (ties: the
    /// lower column), listed in increasing column order. Counts in parallel.
    ///
    /// A hot column costs each call one coalesced copy per resident block
    /// ([`min_entries_for`](HotColumns::min_entries_for) says how many sectors that is), and
    /// saves one gather per entry.
    ///
    /// ```
    /// use spgpu::gpu::hot::HotColumns;
    /// // column 7 is read 5 times, column 2 three times, the others once
    /// let cols = [7, 2, 7, 0, 7, 2, 7, 1, 2, 7, 3];
    /// let hot = HotColumns::select(&cols, 8, 10, 2);
    /// assert_eq!(hot.columns(), &[2, 7]);
    /// assert_eq!(hot.entries(), 8);
    /// // one slot: the most-read column
    /// assert_eq!(HotColumns::select(&cols, 8, 1, 2).columns(), &[7]);
    /// ```
    pub fn select(col_indices: &[u32], ncols: usize, capacity: usize, min_entries: u32) -> HotColumns {
        HotColumns::from_counts(&column_counts(col_indices, ncols), capacity, min_entries)
    }

    /// [`select`](HotColumns::select) from the entries of each column (`counts[c]` for
    /// column `c`), counted elsewhere (the upload counts on the device).
    ///
    /// ```
    /// use spgpu::gpu::hot::HotColumns;
    /// let hot = HotColumns::from_counts(&[1, 0, 3, 1, 0, 0, 0, 5], 10, 2);
    /// assert_eq!(hot.columns(), &[2, 7]);
    /// assert_eq!(hot.entries(), 8);
    /// ```
    pub fn from_counts(counts: &[u32], capacity: usize, min_entries: u32) -> HotColumns {
        let mut hot: Vec<(u32, u32)> =
            counts.iter().enumerate().filter(|&(_, &n)| n > min_entries).map(|(c, &n)| (n, c as u32)).collect();
        // most entries first, then the lower column
        let order = |a: &(u32, u32), b: &(u32, u32)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
        if hot.len() > capacity {
            if capacity > 0 {
                hot.select_nth_unstable_by(capacity - 1, order);
            }
            hot.truncate(capacity);
        }
        let entries = hot.iter().map(|&(n, _)| n as u64).sum();
        let mut columns: Vec<u32> = hot.into_iter().map(|(_, c)| c).collect();
        columns.sort_unstable();
        HotColumns { columns, entries }
    }

    /// The fewest entries that repay a hot column: its copy costs each of `resident_blocks`
    /// blocks `bytes / 32` sectors (coalesced) per call, where each of its entries would
    /// gather one sector; twice that, so the saving is at least half the gathers.
    ///
    /// ```
    /// use spgpu::gpu::hot::HotColumns;
    /// assert_eq!(HotColumns::min_entries_for(132, 8), 66); // H200, f64
    /// assert_eq!(HotColumns::min_entries_for(132, 4), 33);
    /// ```
    pub fn min_entries_for(resident_blocks: u32, bytes: usize) -> u32 {
        (resident_blocks as usize * bytes * 2).div_ceil(32).min(u32::MAX as usize) as u32
    }

    /// The hot columns, increasing; slot `s` of the shared-memory copy holds `x[columns[s]]`.
    pub fn columns(&self) -> &[u32] {
        &self.columns
    }

    /// Number of hot columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// Whether no column is hot.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Entries of the matrix in hot columns.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// For each of `ncols` columns, its slot, or `u32::MAX` when it is not hot.
    pub(crate) fn slot_map(&self, ncols: usize) -> Vec<u32> {
        let mut map = vec![COLD; ncols];
        for (s, &c) in self.columns.iter().enumerate() {
            map[c as usize] = s as u32;
        }
        map
    }

    /// `out[i]`: `cols[i]`, or [`HOT_FLAG`]` | slot` when it is hot (`map` from
    /// [`slot_map`](HotColumns::slot_map)): what `flag_hot_columns` does on the device, for
    /// the tests.
    #[cfg(test)]
    pub(crate) fn flag(map: &[u32], cols: &[u32], out: &mut Vec<u32>) {
        out.clear();
        out.extend(cols.iter().map(|&c| match map[c as usize] {
            COLD => c,
            s => HOT_FLAG | s,
        }));
    }

    /// Restores flagged columns in place: `cols[i] = columns[slot]` where `cols[i]` is
    /// [`HOT_FLAG`]` | slot`.
    pub(crate) fn unflag(columns: &[u32], cols: &mut [u32]) {
        for c in cols.iter_mut().filter(|c| **c & HOT_FLAG != 0) {
            *c = columns[(*c & !HOT_FLAG) as usize];
        }
    }
}

/// What the hot-column kernel needs on the device, beside the balanced kernel's row blocks.
pub(crate) struct DeviceHot<T: Scalar> {
    /// The hot columns ([`HotColumns::columns`]).
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

impl<T: Scalar> DeviceHot<T> {
    /// Bytes of device memory: the columns, the gathered `x` and the counter.
    pub(crate) fn bytes(len: usize) -> usize {
        len * (4 + T::BYTES) + 4
    }
}

/// Whether an upload gives the balanced kernel hot columns.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HotChoice {
    /// By the rule of [`plan_hot`]: matrices of more than [`SpmvPlan::SMALL_NNZ`] entries
    /// and at least [`MIN_ENTRIES_PER_COLUMN`] entries per column whose hot columns hold at
    /// least [`MIN_SHARE_SCATTERED`] of the entries ([`MIN_SHARE`] where the columns lie near
    /// the diagonal) and [`MIN_SKEW`] times their share of the columns
    /// (unless
    /// [`HOT_COLUMNS_ENV`] is `0`).
    #[default]
    Auto,
    /// Never.
    Off,
    /// Always (tests): at most this many hot columns (fewer when shared memory holds fewer),
    /// every column with an entry qualifying, whatever the matrix's size.
    Force(usize),
}

/// Set to `0` to turn hot columns off (the balanced kernel then reads all of `x` from device
/// memory), to compare.
pub const HOT_COLUMNS_ENV: &str = "SPGPU_HOT_COLUMNS";

/// The share of the entries that hot columns must hold for the hot-column kernel to run, on
/// matrices whose columns lie near the diagonal (the plan cuts their rows into blocks of
/// [`RowShape::T512`](super::balance::RowShape::T512)); the others need
/// [`MIN_SHARE_SCATTERED`]. There the hot-column kernel gives up the larger blocks (and, not
/// measured apart, the L1 likely serves many of those gathers anyway): `graphlap:web:2000000`
/// f32, whose 12288 hot columns hold 6.8% of the entries, ran 1.14x the time with them
/// (H100, 2026-11-27); no such matrix with a larger share was measured.
///
/// First fitted on R-MAT graphs, measured on the H200 (`spgpu spmv`, hot against not,
/// 48 KiB per block, with the row sums of 2026-11-24): every R-MAT graph ran faster with
/// hot columns, by 4-20% with 23-53% of the entries in them, whatever its entries per
/// column (6 to 16): `rmat:23:8:11` f64
/// (23%) 686.6 -> 654.3 us, `rmat:22:8` f64 (29%) 294.7 -> 276.1 us and f32 (38%)
/// 265.3 -> 230.0 us, `rmat:22:6:5` f32 198.0 -> 180.6 us, `rmat:21:10:4` f32 (45%)
/// 158.7 -> 127.2 us, `rmat:20:8:3` f64 (44%) 69.5 -> 64.8 us. 20% stays below the least
/// share measured. Held out of that fit, `validate`'s `rmat:22:8:7`: f64 (29%)
/// 295.6 -> 275.9 us, f32 (38%) 262.6 -> 229.7 us. (With the row sums before, hot columns
/// lost 3-7% on R-MAT graphs of fewer than 9 entries per column, and the rule excluded them.)
pub const MIN_SHARE: f64 = 0.2;

/// The share of the entries that hot columns must hold for the hot-column kernel to run, on
/// matrices whose columns are scattered (blocks of the default shape).
///
/// Measured on the H100 (2026-11-27, `spgpu bench --kernels auto`, two rounds per call,
/// `perf/2026-11-27-s30-h100-hot-*`), hot columns against none:
///
/// - fit: on 19 matrix-precision pairs of R-MAT graphs and Laplacians of power-law and R-MAT
///   graphs with 13.3% to 38.3% of their entries in hot columns, every pair gained:
///   0.812x-0.978x in f32, 0.934x-0.998x in f64; the 9 pairs under the 20% of [`MIN_SHARE`]
///   (7 power-law Laplacians, `rmat:24:6` and `graphlap:rmat:23:3:7` in f64) 0.911x-0.998x.
///   A first bound of 12.5%.
/// - validation (other sizes and seeds, 14 pairs, the 12.5% rule against none): the 10 pairs
///   it gave hot columns (13.2% to 40.0%) gained 0.812x-0.980x; the two power-law Laplacians
///   of f64 under it (10.7%, 11.7%, `x` past the L2) and a web-like Laplacian (columns near
///   the diagonal) kept their kernel.
/// - those two and two more power-law Laplacians of f64 with 10.1% to 12.1%, forced: 0.984x
///   to 0.995x. The bound moved to 10%, below the least share measured.
pub const MIN_SHARE_SCATTERED: f64 = 0.1;

/// Set to a share from 0 to 1 to replace [`MIN_SHARE`] and [`MIN_SHARE_SCATTERED`], to
/// compare.
pub const HOT_MIN_SHARE_ENV: &str = "SPGPU_HOT_MIN_SHARE";

/// The share of the entries that hot columns must hold: the one [`HOT_MIN_SHARE_ENV`] names,
/// else [`MIN_SHARE`] where the columns lie near the diagonal (`local`), else
/// [`MIN_SHARE_SCATTERED`].
pub fn min_share(local: bool) -> f64 {
    std::env::var(HOT_MIN_SHARE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| (0.0..=1.0).contains(s))
        .unwrap_or(if local { MIN_SHARE } else { MIN_SHARE_SCATTERED })
}

/// How many times their share of the columns the hot columns' share of the entries must be
/// (the hot columns read that many times as often as the mean column). A matrix of few
/// columns read evenly passes [`MIN_SHARE`] with columns no hotter than the others (12288 of
/// 50000 columns holding a quarter of the entries), and its `x` stays in the L1 and L2
/// anyway: there the hot-column kernel lost 25-60% (H200, 2026-11-26, against
/// `SPGPU_HOT_COLUMNS=0` in one call: `uniform:1200:50000:4000` f32 30.4 against 18.9 µs,
/// `uniform:2500:30000:3000:3` f64 48.7 against 38.4 and f32 41.4 against 25.5). On R-MAT
/// graphs the hot columns' share is tens to hundreds of times their share of the columns.
pub const MIN_SKEW: f64 = 4.0;

/// The fewest entries per column (the matrix's, `nnz / ncols`) for the hot-column kernel to
/// run. On sparser R-MAT graphs it lost even with more than [`MIN_SHARE`] of the entries in
/// hot columns (H200, 2026-11-26, hot against `SPGPU_HOT_COLUMNS=0` in one call):
/// `rmat:24:2` (2.0 per column) f32 462.7 against 414.5 us, `rmat:23:3:5` (2.9) f64 308.1
/// against 278.8 and f32 262.0 against 231.5, `rmat:22:4:2` (3.96) f64 163.6 against 154.1
/// and f32 142.6 against 136.3; the graphs it was fitted on, which gained 4-20%, have 6 to
/// 16.
pub const MIN_ENTRIES_PER_COLUMN: usize = 5;

/// Shared memory per block for the hot entries of `x`: 48 KiB. Larger copies leave too
/// little L1 (it shares the SM's 256 KiB with shared memory), which the other gathers and
/// the streamed entries use: on the H200, 80 KiB per block took `rmat:21:16` f64 from 229.5
/// to 286.1 us, 24 KiB to 242.6 us.
pub const HOT_BYTES_PER_BLOCK: usize = 48 << 10;

/// Blocks of the hot-column kernel per SM (`SPGPU_HOT_BLOCKS_PER_SM`): 64 warps.
const HOT_BLOCKS_PER_SM: usize = 2;

/// Threads per block of the hot-column kernel (`SPGPU_HOT_GROUPS * SPGPU_BLOCK`).
pub(crate) const HOT_THREADS: u32 = 4 * super::kernels::BLOCK;

/// How an upload chooses hot columns for the hot-column kernel on this context
/// ([`plan_hot`]), before anything is on the device: how many fit a block's shared memory,
/// and how many entries a column needs.
pub(crate) struct HotPlan {
    /// The kernel (`spmv_csr_hot_<T>`, or its 64-bit variant).
    name: String,
    /// Hot columns at most: [`HOT_BYTES_PER_BLOCK`] or what shared memory holds, fewer when
    /// forced.
    capacity: usize,
    /// A hot column has more entries than this ([`HotColumns::min_entries_for`], 0 when
    /// forced).
    min_entries: u32,
    /// Whether the rules of [`min_share`] and [`MIN_SKEW`] apply ([`HotChoice::Auto`]).
    auto: bool,
}

/// How hot columns would be chosen for a matrix of `nnz` entries and `ncols` columns, or
/// `None` when they are not considered ([`HotChoice::Auto`]): the matrix has at most
/// [`SpmvPlan::SMALL_NNZ`] entries (latency-bound: the extra gather launch and each block's
/// copy would show), fewer than [`MIN_ENTRIES_PER_COLUMN`] entries per column, or
/// [`HOT_COLUMNS_ENV`] is `0`. Allows the kernel the shared memory of its hot entries.
/// [`HotPlan::choose`] then counts the columns on the device. Tells `plan` when the
/// matrix is too sparse for hot columns (for [`explain`](SpmvPlan::explain)).
pub(crate) fn plan_hot<T: Scalar>(
    ctx: &Context,
    plan: &mut SpmvPlan,
    nnz: usize,
    ncols: usize,
    wide: bool,
    choice: HotChoice,
) -> Result<Option<HotPlan>> {
    let auto = choice == HotChoice::Auto;
    let off = std::env::var(HOT_COLUMNS_ENV).is_ok_and(|v| v.trim() == "0");
    let sparse = nnz < ncols.saturating_mul(MIN_ENTRIES_PER_COLUMN);
    if choice == HotChoice::Off || (auto && (off || nnz <= SpmvPlan::SMALL_NNZ || sparse)) || nnz == 0 {
        if auto && !off && nnz > SpmvPlan::SMALL_NNZ && sparse {
            plan.set_no_hot(format!(
                "no hot columns: {:.1} entries per column (< {MIN_ENTRIES_PER_COLUMN})",
                nnz as f64 / ncols.max(1) as f64
            ));
        }
        return Ok(None);
    }
    let name = hot_kernel_name(false, T::NAME, wide);
    ctx.make_current()?;
    let function = ctx.function(ModuleId::Spmv, &name)?;
    let fixed = function
        .get_attribute(FunctionAttribute::SharedMemorySizeBytes)
        .map_err(|e| Error::cuda(format!("reading the shared memory of {name}"), e))?
        .max(0) as usize;
    // HOT_BLOCKS_PER_SM blocks on each SM, each with its copy (and the driver's 1 KiB)
    let info = ctx.info();
    let per_block = (info.shared_memory_per_multiprocessor as usize / HOT_BLOCKS_PER_SM)
        .saturating_sub(fixed + 1024)
        .min((info.shared_memory_per_block_optin as usize).saturating_sub(fixed))
        .min(HOT_BYTES_PER_BLOCK);
    let capacity = match choice {
        HotChoice::Force(n) => n.min(per_block / T::BYTES),
        _ => per_block / T::BYTES,
    };
    if capacity == 0 {
        return Ok(None);
    }
    // the kernel and its variant with prefetching gathers (the same shared memory), either
    // of which the upload may run
    for variant in [name.clone(), hot_kernel_name(true, T::NAME, wide)] {
        let function = ctx.function(ModuleId::Spmv, &variant)?;
        // SAFETY: cuFuncSetAttribute(CUfunction, attribute, int) on a function of a loaded
        // module: allows launches with up to `per_block` bytes of dynamic shared memory.
        let rc = unsafe {
            cust::sys::cuFuncSetAttribute(
                function.to_raw(),
                cust::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                per_block as i32,
            )
        };
        DriverError::check(rc)
            .map_err(|e| Error::cuda(format!("allowing {per_block} bytes of shared memory to {variant}"), e))?;
    }
    let mut plan = HotPlan { name, capacity, min_entries: 0, auto };
    if auto {
        plan.min_entries = HotColumns::min_entries_for(plan.resident(ctx, per_block)?, T::BYTES);
    }
    Ok(Some(plan))
}

/// Whether the balanced kernel's rule ([`plan_hot`], [`HotPlan::choose`]) would keep hot
/// columns for `a`, and what they hold: `Some(why)` when it would, `None` when it would
/// keep none. The row-block shape the upload would cut
/// ([`choose_shape`](super::balance::choose_shape), whose blocks of 512 threads mean
/// columns near the diagonal) sets the share they need: `shape` holds it once looked at,
/// and is filled when this looks first. `counts` holds the entries of each column once
/// counted ([`counts_for`]: on the device, from a copy of the column indices made for the
/// count and freed after it, or on the host where device memory is short), and is filled
/// when this counts first; the column parts'
/// [`spread`](super::split::spread) reads the same counts. The upload asks before two
/// choices (`plan`: the automatic plan so far):
///
/// - **SELL**, which gathers every entry of `x` from the L2: where hot columns would be
///   kept, balanced runs instead. On the H200 (2026-11-27), on matrices of even rows whose
///   columns are read unevenly (the transpose of a power-law graph: even rows of 13, the
///   most-read 6144 columns holding 27% of the entries), SELL ran 1.16x-1.24x the time of
///   balanced with hot columns, and about as fast as balanced without them. The matrices
///   that keep SELL (circuits, meshes, geometric graphs, random rows) have no hot columns
///   by the same rule.
/// - **Column parts** ([`super::split`]): a matrix that keeps hot columns runs in one pass.
///   On the H200 (2026-11-27) R-MAT graphs with hot columns ran 1.066x (f64) and 1.093x
///   (f32) the one-pass time in parts (`rmat:23:16`), and gained at 16.8 million columns
///   (`rmat:24:16`, 0.879x / 0.965x).
pub(crate) fn hot_columns_for<T: Scalar>(
    ctx: &'static Context,
    plan: &SpmvPlan,
    a: &crate::CsrMatrix<T>,
    wide: bool,
    shape: &mut Option<(super::balance::RowShape, String)>,
    counts: &mut Option<Vec<u32>>,
) -> Result<Option<String>> {
    let mut scratch = plan.clone();
    let Some(hot) = plan_hot::<T>(ctx, &mut scratch, a.nnz(), a.ncols(), wide, HotChoice::Auto)? else {
        return Ok(None);
    };
    let (s, _) = shape.get_or_insert_with(|| super::balance::choose_shape(a.row_offsets(), a.col_indices(), None));
    let local = *s != super::balance::RowShape::DEFAULT;
    if counts.is_none() {
        *counts = Some(counts_for(ctx, a)?);
    }
    let counts = counts.as_deref().unwrap_or_default();
    Ok(hot.decide(counts, a.nnz(), a.ncols(), local).ok().map(|h| {
        format!(
            "its {} most-read columns hold {:.1}% of the entries, which the balanced kernel keeps in shared \
             memory and SELL gathers from the L2",
            h.len(),
            100.0 * h.entries() as f64 / a.nnz().max(1) as f64
        )
    }))
}

impl HotPlan {
    /// Device bytes that choosing and keeping hot columns take at most at once, beside the
    /// CSR arrays: the column counts, then the slot map (4 bytes per column each, the first
    /// freed before the second is made, the second before the hot-column arrays are), or the
    /// hot-column arrays of the most columns allowed.
    pub(crate) fn device_bytes<T: Scalar>(&self, ncols: usize) -> usize {
        (ncols * 4).max(DeviceHot::<T>::bytes(self.capacity))
    }

    /// Blocks of the kernel resident at once with `bytes` of hot entries per block.
    fn resident(&self, ctx: &Context, bytes: usize) -> Result<u32> {
        let function = ctx.function(ModuleId::Spmv, &self.name)?;
        let per_sm = function
            .max_active_blocks_per_multiprocessor(BlockSize::x(HOT_THREADS), bytes)
            .map_err(|e| Error::cuda(format!("reading the occupancy of {}", self.name), e))?;
        Ok(per_sm.max(1) * ctx.info().sm_count)
    }

    /// Chooses the hot columns of the matrix of `ncols` columns whose `n` column indices are
    /// uploaded in `cols`, and flags their entries there: counts every column's entries on
    /// the device
    /// (`count_columns`, one read of the columns), keeps the most-read columns that repay
    /// their copy ([`HotColumns::from_counts`], on the host), and, when they hold at least
    /// [`min_share`]`(local)` of the entries (`local`: the matrix's columns lie near the
    /// diagonal) and [`MIN_SKEW`] times their share of the columns (or are forced), rewrites
    /// their entries in place as [`HOT_FLAG`]` | slot` (`flag_hot_columns`). Returns the
    /// columns with the kernel's grid (the resident blocks) and its shared memory per block,
    /// or, with `cols` untouched, why no column qualifies (for
    /// [`explain`](super::SpmvPlan::explain)). Waits for the device.
    ///
    /// On the H200 the whole preprocessing of `rmat:21:16` (row statistics, row blocks and
    /// this) took 29.7 ms (f64) this way, against 251 ms when the host counted the columns
    /// (16 threads on atomic counters that the most-read columns contend for) and flagged
    /// them.
    pub(crate) fn choose<T: Scalar>(
        &self,
        ctx: &'static Context,
        cols: &mut DeviceMemory<u32>,
        n: usize,
        ncols: usize,
        local: bool,
    ) -> Result<std::result::Result<(HotColumns, u32, u32), String>> {
        let counts = count_on_device(ctx, cols, n, ncols)?;
        let hot = match self.decide(&counts, n, ncols, local) {
            Ok(hot) => hot,
            Err(why) => return Ok(Err(why)),
        };
        let slots = DeviceMemory::from_slice(ctx, &hot.slot_map(ncols), "hot column slots")?;
        // SAFETY: `cols` holds the n column indices of a validated matrix of ncols columns,
        // each below ncols == slots.len(); `cols` is borrowed mutably, and the
        // synchronization below completes the kernel before it is used.
        unsafe {
            super::kernels::spmv::flag_hot(ctx, cols.as_device_ptr().as_raw(), slots.as_device_ptr().as_raw(), n)?
        };
        ctx.synchronize()?;
        let bytes = hot.len() * T::BYTES;
        Ok(Ok((hot, self.resident(ctx, bytes)?, bytes as u32)))
    }

    /// The hot columns that `counts` (the entries of each of the `ncols` columns, `n` in
    /// all) give, or why none qualify: the most-read columns that repay their copy
    /// ([`HotColumns::from_counts`]), if they hold at least [`min_share`]`(local)` of the
    /// entries and [`MIN_SKEW`] times their share of the columns (or are forced).
    fn decide(&self, counts: &[u32], n: usize, ncols: usize, local: bool) -> std::result::Result<HotColumns, String> {
        let hot = HotColumns::from_counts(counts, self.capacity, self.min_entries);
        // the hot columns' share of the entries, and how many times their share of the columns
        let share = hot.entries() as f64 / n.max(1) as f64;
        let skew = share * ncols as f64 / hot.len().max(1) as f64;
        let least = min_share(local);
        if hot.is_empty() {
            return Err(format!(
                "no hot columns: no column holds more than {} entries (what copying it to every block costs)",
                self.min_entries
            ));
        }
        if self.auto && (share < least || skew < MIN_SKEW) {
            let most = format!("the {} most-read columns hold {:.1}% of the entries", hot.len(), 100.0 * share);
            return Err(if share < least {
                let columns = if local { "columns near the diagonal" } else { "scattered columns" };
                format!("no hot columns: {most} (< {:.0}% for {columns})", 100.0 * least)
            } else {
                format!("no hot columns: {most}, only {skew:.1} times their share of the columns (< {MIN_SKEW})")
            });
        }
        Ok(hot)
    }
}

/// Entries per column of the matrix of `ncols` columns whose `n` column indices are
/// uploaded in `cols`, counted on the device (`count_columns`, one read of the columns).
/// Waits for the device.
fn count_on_device(ctx: &'static Context, cols: &DeviceMemory<u32>, n: usize, ncols: usize) -> Result<Vec<u32>> {
    let mut counts = vec![0u32; ncols];
    let d_counts = DeviceMemory::<u32>::zeroed(ctx, ncols, "column counts")?;
    // SAFETY: `cols` holds the n column indices of a validated matrix of ncols columns, each
    // below ncols == d_counts.len(); the download below waits for the kernel.
    unsafe {
        super::kernels::spmv::count_columns(ctx, cols.as_device_ptr().as_raw(), d_counts.as_device_ptr().as_raw(), n)?
    };
    d_counts.copy_to_host(&mut counts, "column counts")?;
    Ok(counts)
}

/// Entries per column of `a`: counted on the device from a temporary copy of its column
/// indices, or on the host ([`column_counts`]) when the device has less than twice that
/// copy free. The host's count is slower where many rows read a few columns, whose
/// counters its threads contend for.
pub(crate) fn counts_for<T: Scalar>(ctx: &'static Context, a: &crate::CsrMatrix<T>) -> Result<Vec<u32>> {
    let bytes = 4 * (a.nnz() as u64 + a.ncols() as u64);
    if bytes > ctx.available_memory()? / 2 {
        return Ok(column_counts(a.col_indices(), a.ncols()));
    }
    let cols = DeviceMemory::from_slice(ctx, a.col_indices(), "column indices (counted)")?;
    count_on_device(ctx, &cols, a.nnz(), a.ncols())
}

/// Entries per column of a matrix of `ncols` columns with these column indices (each below
/// `ncols`), counted by all threads at once.
///
/// ```
/// assert_eq!(spgpu::gpu::hot::column_counts(&[0, 2, 2, 1, 2], 4), vec![1, 1, 3, 0]);
/// ```
pub fn column_counts(col_indices: &[u32], ncols: usize) -> Vec<u32> {
    let counts: Vec<AtomicU32> = (0..ncols).map(|_| AtomicU32::new(0)).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let piece = col_indices.len().div_ceil(threads).max(1 << 16);
    std::thread::scope(|s| {
        for part in col_indices.chunks(piece) {
            let counts = &counts;
            s.spawn(move || {
                for &c in part {
                    counts[c as usize].fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    counts.into_iter().map(AtomicU32::into_inner).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scattered_columns_need_a_smaller_share_than_columns_near_the_diagonal() {
        const { assert!(MIN_SHARE_SCATTERED < MIN_SHARE) };
        if std::env::var(HOT_MIN_SHARE_ENV).is_err() {
            assert_eq!(min_share(true), MIN_SHARE);
            assert_eq!(min_share(false), MIN_SHARE_SCATTERED);
        }
    }

    #[test]
    fn the_most_read_columns_are_chosen_and_listed_in_order() {
        // column c is read c times, c = 0..100, in a shuffled order
        let mut cols: Vec<u32> = (0..100u32).flat_map(|c| std::iter::repeat_n(c, c as usize)).collect();
        let n = cols.len();
        for i in 0..n {
            cols.swap(i, (i * 7919 + 13) % n);
        }
        let hot = HotColumns::select(&cols, 100, 10, 50);
        assert_eq!(hot.columns(), &(90..100).collect::<Vec<u32>>()[..]);
        assert_eq!(hot.entries(), (90..100).sum::<u64>());
        // fewer qualify than the capacity: those above the threshold only
        let few = HotColumns::select(&cols, 100, 1000, 95);
        assert_eq!(few.columns(), &[96, 97, 98, 99]);
        assert!(HotColumns::select(&cols, 100, 0, 0).is_empty());
        assert!(HotColumns::select(&[], 0, 10, 0).is_empty());
    }

    #[test]
    fn ties_keep_the_lower_column() {
        let cols = [5, 3, 5, 3, 9, 9, 1];
        let hot = HotColumns::select(&cols, 10, 2, 1);
        assert_eq!(hot.columns(), &[3, 5]);
        assert_eq!(hot.entries(), 4);
    }

    #[test]
    fn flagging_then_unflagging_gives_the_columns_back() {
        let cols: Vec<u32> = (0..5000u32).map(|i| (i * i + 3 * i) % 257).collect();
        let hot = HotColumns::select(&cols, 257, 40, 0);
        assert_eq!(hot.len(), 40);
        let map = hot.slot_map(257);
        let mut flagged = Vec::new();
        HotColumns::flag(&map, &cols, &mut flagged);
        let hot_entries = flagged.iter().filter(|&&c| c & HOT_FLAG != 0).count() as u64;
        assert_eq!(hot_entries, hot.entries());
        for (&f, &c) in flagged.iter().zip(&cols) {
            if f & HOT_FLAG != 0 {
                assert_eq!(hot.columns()[(f & !HOT_FLAG) as usize], c);
            } else {
                assert_eq!(f, c);
            }
        }
        HotColumns::unflag(hot.columns(), &mut flagged);
        assert_eq!(flagged, cols);
    }

    #[test]
    fn counts_are_exact_across_threads() {
        let cols: Vec<u32> = (0..1_000_003u32).map(|i| i % 7 + (i % 3) * 10).collect();
        let counts = column_counts(&cols, 40);
        assert_eq!(counts.iter().map(|&c| c as usize).sum::<usize>(), cols.len());
        let mut expect = [0u32; 40];
        for &c in &cols {
            expect[c as usize] += 1;
        }
        assert_eq!(counts, expect);
    }
}
