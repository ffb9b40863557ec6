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

use cust::function::{BlockSize, FunctionAttribute};

use crate::error::DriverError;
pub(crate) use crate::gpu::kernels::arrays::DeviceHot;
use crate::gpu::kernels::{hot_kernel_name, HOT_THREADS};
use crate::gpu::plan::hot::{self as rule, HotLimits};
pub use crate::gpu::plan::hot::{
    column_counts, min_share, HotChoice, HotColumns, HOT_BYTES_PER_BLOCK, HOT_COLUMNS_ENV, HOT_MIN_SHARE_ENV,
    MIN_ENTRIES_PER_COLUMN, MIN_SHARE, MIN_SHARE_SCATTERED, MIN_SKEW,
};
use crate::gpu::plan::Tuning;
use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::gpu::runtime::module::ModuleId;
use crate::{Error, Result, Scalar};

/// Bit 31 of a stored column index: the entry's column is hot, and the low 31 bits are its
/// slot ([`HotColumns::columns`]). `SPGPU_HOT_FLAG` in `ptx/spmv.cu`.
pub const HOT_FLAG: u32 = 0x8000_0000;

/// Marks a column that is not hot in [`HotColumns::slot_map`].
const COLD: u32 = u32::MAX;

impl HotColumns {
    /// For each of `ncols` columns, its slot, or `u32::MAX` when it is not hot.
    pub(crate) fn slot_map(&self, ncols: usize) -> Vec<u32> {
        let mut map = vec![COLD; ncols];
        for (s, &c) in self.columns().iter().enumerate() {
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

impl<T: Scalar> DeviceHot<T> {
    /// Bytes of device memory: the columns, the gathered `x` and the counter.
    pub(crate) fn bytes(len: usize) -> usize {
        len * (4 + T::BYTES) + 4
    }
}

/// Blocks of the hot-column kernel per SM (`SPGPU_HOT_BLOCKS_PER_SM`): 64 warps.
const HOT_BLOCKS_PER_SM: usize = 2;

/// How an upload chooses hot columns for the hot-column kernel on this context
/// ([`plan_hot`]), before anything is on the device: how many fit a block's shared memory,
/// and how many entries a column needs.
pub(crate) struct HotPlan {
    /// The kernel (`spmv_csr_hot_<T>`, or its 64-bit variant).
    name: String,
    /// What the device allows ([`HotLimits`]).
    limits: HotLimits,
    /// The tuning the decision follows.
    tuning: Tuning,
}

/// How hot columns would be chosen for a matrix of `nnz` entries and `ncols` columns, or
/// `Err` when the plan's rule does not consider them ([`rule::considered`], with its note
/// for [`explain`](crate::gpu::SpmvPlan::explain) when the matrix is too sparse) or no column fits the
/// shared memory. Allows the kernel the shared memory of its hot entries and reads its
/// occupancy: the device's [`HotLimits`]. [`HotPlan::choose`] then counts the columns on
/// the device.
pub(crate) fn plan_hot<T: Scalar>(
    ctx: &Context,
    nnz: usize,
    ncols: usize,
    wide: bool,
    choice: HotChoice,
    tuning: &Tuning,
) -> Result<std::result::Result<HotPlan, Option<String>>> {
    let auto = choice == HotChoice::Auto;
    if let Err(note) = rule::considered(nnz, ncols, choice, tuning) {
        return Ok(Err(note));
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
    let capacity = rule::capacity(per_block, T::BYTES, choice);
    if capacity == 0 {
        return Ok(Err(None));
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
    let mut plan = HotPlan { name, limits: HotLimits { capacity, min_entries: 0, auto }, tuning: *tuning };
    if auto {
        plan.limits.min_entries = HotColumns::min_entries_for(plan.resident(ctx, per_block)?, T::BYTES);
    }
    Ok(Ok(plan))
}

impl HotPlan {
    /// What the device allows ([`HotLimits`]).
    pub(crate) fn limits(&self) -> HotLimits {
        self.limits
    }

    /// Device bytes that choosing and keeping hot columns take at most at once, beside the
    /// CSR arrays: the column counts, then the slot map (4 bytes per column each, the first
    /// freed before the second is made, the second before the hot-column arrays are), or the
    /// hot-column arrays of the most columns allowed.
    pub(crate) fn device_bytes<T: Scalar>(&self, ncols: usize) -> usize {
        (ncols * 4).max(DeviceHot::<T>::bytes(self.limits.capacity))
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
    /// [`explain`](crate::gpu::plan::SpmvPlan::explain)). Waits for the device.
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
            crate::gpu::kernels::spmv::flag_hot(ctx, cols.as_device_ptr().as_raw(), slots.as_device_ptr().as_raw(), n)?
        };
        ctx.synchronize()?;
        let bytes = hot.len() * T::BYTES;
        Ok(Ok((hot, self.resident(ctx, bytes)?, bytes as u32)))
    }

    /// The hot columns that `counts` (the entries of each of the `ncols` columns, `n` in
    /// all) give, or why none qualify: the plan's rule ([`rule::decide`]) within this
    /// device's limits.
    fn decide(&self, counts: &[u32], n: usize, ncols: usize, local: bool) -> std::result::Result<HotColumns, String> {
        rule::decide(counts, n, ncols, local, &self.limits, &self.tuning)
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
        crate::gpu::kernels::spmv::count_columns(
            ctx,
            cols.as_device_ptr().as_raw(),
            d_counts.as_device_ptr().as_raw(),
            n,
        )?
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
