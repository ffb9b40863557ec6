//! CSR matrices in device memory.

use std::time::{Duration, Instant};

use cust::memory::DevicePointer;

use crate::format::DEFAULT_MAX_ELL_PADDING_RATIO;
use crate::gpu::kernels;
use crate::gpu::kernels::arrays::CsrArrays;
pub(crate) use crate::gpu::kernels::arrays::{Balanced, DeviceSell};
use crate::gpu::plan::balance::{chunk_major, prefetch_x, RowShape};
use crate::gpu::plan::hot::HotLimits;
use crate::gpu::plan::upload as upload_rule;
use crate::gpu::plan::ColumnLayout;
use crate::gpu::plan::KernelChoice;
use crate::gpu::plan::SpmvKernel;
use crate::gpu::plan::SpmvPlan;
use crate::gpu::plan::{narrow as narrow_rule, Tuning, UploadOptions};
use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::gpu::runtime::positions::PIECE;
use crate::gpu::runtime::positions::{positions_need_64_bits, shifted, Positions};
use crate::gpu::runtime::stream::Stream;
use crate::gpu::runtime::vector::DeviceVector;
use crate::gpu::runtime::vector::{download, ptr_of, upload};
use crate::gpu::storage::balance::RowBlocks;
use crate::gpu::storage::ell::CsrOnDevice;
use crate::gpu::storage::ell::DeviceEll;
use crate::gpu::storage::hot::{counts_for, plan_hot, DeviceHot, HotChoice, HotColumns};
use crate::gpu::storage::narrow::{self, SlotCols};
use crate::gpu::storage::sell::{decode_narrow, SellLayout, SellMatrix};
use crate::gpu::storage::split;
use crate::gpu::storage::values::{self, PatternPrint, ValueMap};
use crate::{CsrMatrix, Error, Result, RowStats, Scalar, ELL_PADDING};

/// A CSR matrix in device memory, with the [`SpmvPlan`] that runs it.
///
/// It can only be made by uploading a validated [`CsrMatrix`], so its invariants (offsets
/// monotonic from 0 to `nnz`, columns in range, dimensions within the 32-bit index limit)
/// hold on the device and the kernels need no bounds checks. The three arrays have the
/// layout of the host matrix: `row_offsets` (`nrows + 1`), `col_indices` (`nnz` `u32`) and
/// `values` (`nnz` `T`). The offsets are `u32` when `nnz` is at most
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT) and `u64` past it
/// ([`offsets_are_64_bit`](DeviceCsr::offsets_are_64_bit)), chosen at upload; every kernel
/// has a variant for each.
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
    storage: Storage<T>,
    stats: RowStats,
    plan: SpmvPlan,
    preprocessing: Duration,
    /// Held while the launches of one product are queued: a product with hot columns is two
    /// kernels sharing the matrix's copy of the hot entries of `x`, which another thread's
    /// product must not come between on the stream (the chunk-sum slots of
    /// the balanced and SELL kernels are shared by products in the same way).
    launches: std::sync::Mutex<()>,
    /// 0, except for matrices uploaded by tests with shifted positions
    /// ([`upload_with_entry_base`](DeviceCsr::upload_with_entry_base)).
    entry_base: u64,
    /// Where the columns lie, when the upload looked (even rows short enough for rule 4,
    /// [`SpmvPlan::column_layout`]); kept so that `set_kernel(Auto)` plans as the upload's
    /// `Auto` would.
    columns: Option<ColumnLayout>,
    /// Why the upload's `Auto` plan ran balanced where its rule said SELL (hot columns, or
    /// SELL's padding), so that `set_kernel(Auto)` keeps the same kernel.
    instead_of_sell: Option<String>,
    /// The overrides the upload planned with, which `set_kernel` plans with too.
    tuning: Tuning,
    /// `A^T`, uploaded with a plan of its own the first time a transpose product needs it
    /// ([`prepare_transpose`](DeviceCsr::prepare_transpose)), then kept. A method that
    /// changes `A`'s values or pattern must drop it (`self.transposed.take()`).
    transposed: std::sync::OnceLock<Box<DeviceCsr<T>>>,
    /// Held while `transposed` is built, so that threads asking for it at once build it once.
    transposing: std::sync::Mutex<()>,
    /// For SELL and column parts, the gather map of each value array (SELL: the slots, then
    /// the long rows' entries; parts: each part's values), made by the first
    /// [`update_values`](DeviceCsr::update_values) ([`crate::gpu::storage::values`]); `None`
    /// for an empty array.
    value_maps: Option<Vec<Option<ValueMap>>>,
    /// The uploaded pattern as [`update_from`](DeviceCsr::update_from) compares it, made
    /// by its first call.
    pattern: Option<Box<PatternPrint>>,
}

/// What a [`DeviceCsr`] keeps on the device: the CSR arrays (with the row blocks of the
/// balanced kernel when its plan runs it, or with 16-bit columns for the vector kernel), or,
/// when the plan chose ELLPACK or SELL, their arrays instead of the CSR ones.
enum Storage<T: Scalar> {
    Csr {
        row_offsets: Positions,
        /// With hot columns, the columns of their entries are flagged slots ([`crate::gpu::storage::hot`]).
        col_indices: Option<DeviceMemory<u32>>,
        values: Option<DeviceMemory<T>>,
        balanced: Option<Box<Balanced>>,
        hot: Option<Box<DeviceHot<T>>>,
    },
    /// The CSR arrays with each column stored as its 16-bit offset from the row
    /// ([`crate::gpu::storage::narrow`]), 2 bytes fewer per entry: made for the vector kernel when every
    /// entry lies within [`narrow::MAX_OFFSET`] of the diagonal (never for a matrix without
    /// entries).
    Csr16 {
        row_offsets: Positions,
        col_offsets: DeviceMemory<u16>,
        values: Option<DeviceMemory<T>>,
    },
    Ell(Box<DeviceEll<T>>),
    Sell(Box<DeviceSell<T>>),
    /// Column parts ([`crate::gpu::storage::split`]), each a matrix of its own on the balanced kernel, run
    /// in order.
    Parts(Vec<DeviceCsr<T>>),
}

impl<T: Scalar> DeviceSell<T> {
    /// Uploads the SELL form of `a` with layout `s`: the slots are made on the device from
    /// `a`'s uploaded arrays when they fit beside the slots ([`CsrOnDevice`]), else made and
    /// uploaded a range of slices (about [`PIECE`] slots) at a time; the long rows' entries
    /// are copied from `a`'s arrays in batches. The host never holds a second copy of the
    /// matrix.
    ///
    /// The slots store 16-bit column offsets as the plan's
    /// [`sell_columns`](crate::gpu::narrow::sell_columns) says (with a table of far
    /// columns where it gives one); the conversion runs on the device where `tuning` allows.
    fn upload(ctx: &'static Context, a: &CsrMatrix<T>, s: &SellLayout, base: u64, tuning: &Tuning) -> Result<Self> {
        let (narrow, far) = narrow_rule::sell_columns(a, crate::gpu::storage::sell::LONG_ROW, tuning);
        let flat: Vec<u32> = s.long_rows.iter().flatten().copied().collect();
        let wide = s.wide() || base != 0;
        let nchunks = s.chunk_entry.len() - 1;
        // as for the balanced kernel's chunk sums (Balanced::upload)
        let partials = match nchunks {
            0 => None,
            n => Some(DeviceMemory::filled(ctx, n, 0xff, "the SELL kernel's chunk sums")?),
        };
        let (slots, nlong_entries) = (s.slots(), s.long_entries());
        let far_table = match &far {
            Some(f) => upload(f, "SELL far columns")?,
            None => None,
        };
        let (mut cols, mut vals) = (None, None);
        // the row order on the device, when the conversion there uploaded it
        let mut perm_on_device = None;
        if slots > 0 {
            let mut c = SlotCols::uninit(ctx, slots, narrow, "SELL columns")?;
            let mut v = DeviceMemory::<T>::uninit(ctx, slots, "SELL values")?;
            // on the device when the CSR arrays fit beside the slots (as for ELL)
            let layout_bytes = (s.slice_ptr.len() * 8 + s.perm.len() * 4) as u64;
            let on_device = match CsrOnDevice::upload(ctx, a, layout_bytes, "SELL", tuning)? {
                Some(csr) => {
                    let sp = DeviceMemory::from_slice(ctx, &s.slice_ptr, "SELL slice offsets (for the conversion)");
                    match (sp, DeviceMemory::from_slice(ctx, &s.perm, "SELL row order")) {
                        (Ok(sp), Ok(perm)) => {
                            kernels::spmv::sell_from_csr(ctx, &sp, &perm, &csr, &mut c, &mut v, far_table.as_ref())?;
                            drop((sp, csr)); // freed in stream order, after the conversion
                            ctx.synchronize()?;
                            perm_on_device = Some(perm);
                            true
                        }
                        // memory taken by another thread since the check: the host fills
                        _ => false,
                    }
                }
                None => false,
            };
            let (mut bc, mut bc16, mut bv) = (Vec::new(), Vec::new(), Vec::new());
            let mut s0 = if on_device { s.nslices() } else { 0 };
            while s0 < s.nslices() {
                let goal = s.slice_ptr[s0] + PIECE as u64;
                let s1 = s.slice_ptr.partition_point(|&p| p <= goal).saturating_sub(1).clamp(s0 + 1, s.nslices());
                let (lo, hi) = (s.slice_ptr[s0] as usize, s.slice_ptr[s1] as usize);
                bv.resize(hi - lo, T::ZERO);
                match &mut c {
                    SlotCols::Wide(c) => {
                        bc.resize(hi - lo, ELL_PADDING);
                        s.fill(a, s0, s1, &mut bc, &mut bv);
                        c.copy_from_host_at(lo, &bc, "SELL columns")?;
                    }
                    SlotCols::Narrow(c) => {
                        bc16.resize(hi - lo, narrow::NARROW_PADDING);
                        let table = far.as_deref().unwrap_or_default();
                        let encode = |col, row: u32| {
                            let slot = if table.is_empty() {
                                narrow::encode(col, row as usize)
                            } else {
                                narrow::encode_far(col, row as usize, table)
                            };
                            slot.expect("narrow slots are made only when every column fits")
                        };
                        s.fill_with(a, s0, s1, &mut bc16, &mut bv, narrow::NARROW_PADDING, encode);
                        c.copy_from_host_at(lo, &bc16, "SELL column offsets")?;
                    }
                }
                v.copy_from_host_at(lo, &bv, "SELL values")?;
                s0 = s1;
            }
            (cols, vals) = (Some(c), Some(v));
        }
        let (mut long_cols, mut long_vals) = (None, None);
        if nlong_entries > 0 {
            let mut c = DeviceMemory::<u32>::uninit(ctx, nlong_entries, "SELL long-row columns")?;
            let mut v = DeviceMemory::<T>::uninit(ctx, nlong_entries, "SELL long-row values")?;
            let (mut bc, mut bv, mut at) = (Vec::new(), Vec::new(), 0usize);
            for (k, &[r, _, _]) in s.long_rows.iter().enumerate() {
                let (rc, rv) = a.row(r as usize);
                bc.extend_from_slice(rc);
                bv.extend_from_slice(rv);
                if bc.len() >= PIECE || k + 1 == s.long_rows.len() {
                    c.copy_from_host_at(at, &bc, "SELL long-row columns")?;
                    v.copy_from_host_at(at, &bv, "SELL long-row values")?;
                    at += bc.len();
                    bc.clear();
                    bv.clear();
                }
            }
            (long_cols, long_vals) = (Some(c), Some(v));
        }
        Ok(DeviceSell {
            nsorted: s.nsorted,
            nslices: s.nslices(),
            nchunks,
            nlong: s.long_rows.len(),
            slice_ptr: Positions::upload(ctx, &s.slice_ptr, wide, base, "SELL slice offsets")?,
            perm: match perm_on_device {
                Some(p) => Some(p),
                None => upload(&s.perm, "SELL row order")?,
            },
            cols,
            vals,
            chunk_entry: Positions::upload(ctx, &s.chunk_entry, wide, base, "SELL chunk offsets")?,
            long_cols,
            long_vals,
            long_rows: upload(&flat, "SELL long rows")?,
            partials,
            nfar: far.as_ref().map_or(0, Vec::len),
            far: far_table,
            // narrow slots take 2 bytes each instead of 4, the far columns 4 each; 64-bit
            // positions forced by a test base take 4 bytes more each
            bytes: s.device_bytes(T::BYTES) - (if narrow { 2 * slots } else { 0 })
                + 4 * far.as_ref().map_or(0, Vec::len)
                + (if wide && !s.wide() { 4 * (s.slice_ptr.len() + s.chunk_entry.len()) } else { 0 }),
            nrows: s.nrows,
            ncols: a.ncols(),
            slots,
            nlong_entries,
        })
    }

    fn download(&self, base: u64) -> Result<CsrMatrix<T>> {
        let slots = self.slots;
        let nlong_entries = self.nlong_entries;
        let flat = download(self.long_rows.as_ref(), 3 * self.nlong, "SELL long rows")?;
        let slice_ptr = self.slice_ptr.download(self.nslices + 1, base, "SELL slice offsets")?;
        let perm = download(self.perm.as_ref(), self.nsorted, "SELL row order")?;
        let cols = match &self.cols {
            None => Vec::new(),
            Some(SlotCols::Wide(c)) => download(Some(c), slots, "SELL columns")?,
            Some(SlotCols::Narrow(c)) => {
                let offsets = download(Some(c), slots, "SELL column offsets")?;
                let far = download(self.far.as_ref(), self.nfar, "SELL far columns")?;
                decode_narrow(&slice_ptr, &perm, &offsets, &far)
            }
        };
        let s = SellMatrix {
            nrows: self.nrows,
            nsorted: self.nsorted,
            slice_ptr,
            perm,
            cols,
            vals: download(self.vals.as_ref(), slots, "SELL values")?,
            chunk_entry: self.chunk_entry.download(self.nchunks + 1, base, "SELL chunk offsets")?,
            long_cols: download(self.long_cols.as_ref(), nlong_entries, "SELL long-row columns")?,
            long_vals: download(self.long_vals.as_ref(), nlong_entries, "SELL long-row values")?,
            long_rows: flat.chunks(3).map(|c| [c[0], c[1], c[2]]).collect(),
        };
        Ok(s.to_csr(self.ncols))
    }
}

/// What [`SpmvPlan::explain`] says of row blocks in chunk-major order ([`RowBlocks::sweep`]).
const CHUNK_MAJOR_NOTE: &str = "few rows: chunks past the first in chunk-major order, so that the blocks running at \
                                once read one stretch of x";

/// Refuses an upload that needs more device memory than is free, before anything is
/// allocated: `InsufficientMemory` naming the matrix, its storage (`how`) and both figures.
fn check_device_memory<T: Scalar>(ctx: &Context, a: &CsrMatrix<T>, how: &str, needed: u64) -> Result<()> {
    let available = ctx.available_memory()?;
    if needed > available {
        return Err(Error::InsufficientMemory {
            what: format!("a {} x {} matrix of {} entries ({how}, {})", a.nrows(), a.ncols(), a.nnz(), T::NAME),
            memory: "device",
            needed,
            available,
            hint: "use a device with more memory, f32 values, or free other device memory first".into(),
        });
    }
    Ok(())
}

/// The upload's answers to the plan's questions ([`upload_rule::Probe`]): the hot-column
/// kernel's limits on this device, the columns' counts (on the device, or on the host where
/// device memory is short: [`counts_for`]) and SELL's layout, each found at most once.
struct UploadProbe<'a, T: Scalar> {
    ctx: &'static Context,
    a: &'a CsrMatrix<T>,
    wide: bool,
    tuning: &'a Tuning,
    counts: Option<Vec<u32>>,
    sell: Option<SellLayout>,
}

impl<T: Scalar> upload_rule::Probe for UploadProbe<'_, T> {
    fn hot_limits(&mut self) -> Result<Option<HotLimits>> {
        let (a, t) = (self.a, self.tuning);
        Ok(plan_hot::<T>(self.ctx, a.nnz(), a.ncols(), self.wide, HotChoice::Auto, t)?.ok().map(|h| h.limits()))
    }

    fn column_counts(&mut self) -> Result<&[u32]> {
        if self.counts.is_none() {
            self.counts = Some(counts_for(self.ctx, self.a)?);
        }
        Ok(self.counts.as_deref().unwrap_or_default())
    }

    fn sell_layout(&mut self, max_slots: usize) -> Result<std::result::Result<(), usize>> {
        // the counts are no longer needed (SELL's layout is the plan's last question)
        self.counts = None;
        Ok(match SellLayout::new(self.a, max_slots) {
            Ok(s) => {
                self.sell = Some(s);
                Ok(())
            }
            Err(e) => Err(e.slots),
        })
    }
}

/// The plan's note on row blocks cut for the reason `why`, in chunk-major order when `sweep`.
fn blocks_note(sweep: bool, why: String) -> String {
    if sweep {
        format!("{why}; {CHUNK_MAJOR_NOTE}")
    } else {
        why
    }
}

impl Balanced {
    /// Uploads the blocks; their entry positions are 64-bit when `wide` (as the matrix's row
    /// offsets), shifted by `base` (tests only). `x_bytes`, the size of `x`, decides whether
    /// the kernel gathers it with the L2 prefetch hint ([`crate::gpu::storage::balance::prefetch_x`]).
    fn upload(
        ctx: &'static Context,
        blocks: &RowBlocks,
        wide: bool,
        base: u64,
        x_bytes: usize,
        tuning: &Tuning,
    ) -> Result<Balanced> {
        let block_row = upload(&blocks.block_row, "balanced row blocks")?.expect("nblocks + 1 >= 1 entries");
        let block_entry = Positions::upload(ctx, &blocks.block_entry, wide, base, "balanced row blocks")?;
        // each chunk block b but a row's last writes partials[b]; the last one waits for
        // exactly its row's slots, which hold "no sum" (0xff bytes) until then
        let partials = match blocks.scratch_len() {
            0 => None,
            n => Some(DeviceMemory::filled(ctx, n, 0xff, "the balanced kernel's chunk sums")?),
        };
        Ok(Balanced {
            nblocks: blocks.nblocks(),
            block_row,
            block_entry,
            partials,
            shape: blocks.shape,
            sweep: blocks.sweep,
            prefetch_x: if blocks.sweep {
                None
            } else {
                prefetch_x(x_bytes, ctx.info().l2_cache_bytes, blocks.shape, ctx.l2_prefetch(), tuning)
            },
            bytes: blocks.device_bytes(wide),
        })
    }
}

impl<T: Scalar> DeviceCsr<T> {
    /// Uploads a host matrix and plans its SpMV with the heuristic ([`SpmvPlan::with_columns`]
    /// with the matrix's [`SpmvPlan::column_layout`]):
    /// the plan picks the kernel and the storage (CSR, CSR with row blocks for the balanced
    /// kernel, or ELLPACK).
    ///
    /// # Errors
    ///
    /// [`Error::InsufficientMemory`] when the storage the plan chose needs more device
    /// memory than is available ([`Context::available_memory`]), checked before anything is
    /// allocated; [`Error::Cuda`] when allocation or a copy fails.
    pub fn upload(ctx: &'static Context, a: &CsrMatrix<T>) -> Result<Self> {
        Self::upload_with(ctx, a, UploadOptions::default())
    }

    /// Uploads a host matrix with options ([`UploadOptions`]): a kernel chosen by the
    /// options' `kernel`, and the overrides of the plan's rules in their `tuning`. A
    /// [`KernelChoice`] converts into the options that force it with the environment's
    /// tuning. [`KernelChoice::Ell`] stores the matrix as ELLPACK on the device (the CSR
    /// arrays are then not kept); [`KernelChoice::Balanced`] adds the row blocks of the
    /// balanced kernel.
    ///
    /// ```no_run
    /// use spgpu::gpu::{Context, DeviceCsr, KernelChoice, Tuning, UploadOptions};
    /// let ctx = Context::global()?;
    /// let a = spgpu::gen::laplacian_2d::<f64>(100);
    /// let forced = DeviceCsr::upload_with(ctx, &a, KernelChoice::Sell)?;
    /// // no column parts, whatever SPGPU_COLUMN_PARTS says
    /// let tuning = Tuning { column_parts: Some(0), ..Tuning::from_env() };
    /// let opts = UploadOptions { tuning, ..UploadOptions::default() };
    /// let one_pass = DeviceCsr::upload_with(ctx, &a, &opts)?;
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the choice does not apply (see
    /// [`SpmvPlan::with_choice`]) and [`Error::Format`] when ELLPACK would pad more than its
    /// limit ([`EllMatrix::try_from_csr`](crate::EllMatrix::try_from_csr)), both checked before anything is uploaded;
    /// [`Error::InsufficientMemory`] as for [`upload`](DeviceCsr::upload); [`Error::Cuda`]
    /// when allocation or a copy fails.
    pub fn upload_with(ctx: &'static Context, a: &CsrMatrix<T>, opts: impl Into<UploadOptions>) -> Result<Self> {
        let opts = opts.into();
        Self::upload_shifted(ctx, a, opts.kernel, 0, HotChoice::Auto, &opts.tuning)
    }

    /// For tests of the 64-bit kernels on small matrices: uploads with 64-bit positions
    /// (CSR row offsets, the balanced kernel's block starts, SELL's slice and chunk starts),
    /// each increased by `base`, and hands the kernels the entry arrays' addresses moved back
    /// by `base` elements, so that every entry is reached through a position past `base`
    /// (above 2^32 when `base` is). Results, [`download`](DeviceCsr::download) included, are
    /// those of an ordinary upload. ELLPACK storage has no positions: `base` does not apply
    /// to it. Not for other use: [`csr_ptrs`](DeviceCsr::csr_ptrs) gives the real arrays, but
    /// their offsets are shifted.
    ///
    /// # Errors
    ///
    /// As [`upload_with`](DeviceCsr::upload_with).
    #[doc(hidden)]
    pub fn upload_with_entry_base(
        ctx: &'static Context,
        a: &CsrMatrix<T>,
        choice: KernelChoice,
        base: u64,
    ) -> Result<Self> {
        Self::upload_shifted(ctx, a, choice, base.max(1), HotChoice::Auto, &Tuning::from_env())
    }

    /// Whether the matrix holds 64-bit positions: `nnz` past the index limit, or shifted
    /// positions (tests).
    fn wide_upload(nnz: usize, base: u64) -> bool {
        positions_need_64_bits(nnz) || base != 0
    }

    /// For tests of the hot-column kernel ([`crate::gpu::storage::hot`]): [`upload_with_entry_base`]
    /// (`base` 0: an ordinary upload), with hot columns as `hot` says; they apply only when
    /// the plan runs the balanced kernel.
    ///
    /// [`upload_with_entry_base`]: DeviceCsr::upload_with_entry_base
    ///
    /// # Errors
    ///
    /// As [`upload_with`](DeviceCsr::upload_with).
    #[doc(hidden)]
    pub fn upload_with_hot(
        ctx: &'static Context,
        a: &CsrMatrix<T>,
        choice: KernelChoice,
        hot: HotChoice,
        base: u64,
    ) -> Result<Self> {
        Self::upload_shifted(ctx, a, choice, base, hot, &Tuning::from_env())
    }

    /// For tests: uploads `a` in `parts` column parts ([`crate::gpu::storage::split`]) whatever the rule
    /// says (at most one part per column).
    ///
    /// # Errors
    ///
    /// As [`upload`](DeviceCsr::upload).
    #[doc(hidden)]
    pub fn upload_in_column_parts(ctx: &'static Context, a: &CsrMatrix<T>, parts: usize) -> Result<Self> {
        let started = Instant::now();
        let tuning = Tuning::from_env();
        let stats = a.row_stats();
        let columns = SpmvPlan::column_layout(a, &stats, KernelChoice::Auto, &tuning);
        let mut plan = SpmvPlan::with_columns::<T>(&stats, ctx.warp_size(), KernelChoice::Balanced, columns)?;
        plan.set_tuning(tuning);
        let parts = parts.clamp(1, split::MAX_PARTS).min(a.ncols().max(1));
        Self::upload_parts(ctx, a, plan, columns, parts, started, "asked for (upload_in_column_parts)")
    }

    fn upload_shifted(
        ctx: &'static Context,
        a: &CsrMatrix<T>,
        choice: KernelChoice,
        base: u64,
        hot_choice: HotChoice,
        tuning: &Tuning,
    ) -> Result<Self> {
        // a forced shape of row blocks runs the balanced kernel without hot columns
        let forced_shape = choice.row_shape();
        let hot_choice = if forced_shape.is_some() { HotChoice::Off } else { hot_choice };
        let started = Instant::now();
        let wide = Self::wide_upload(a.nnz(), base);
        let stats = a.row_stats();
        // looked at whatever the choice, so that `set_kernel(Auto)` later plans as `Auto` would
        let columns = SpmvPlan::column_layout(a, &stats, KernelChoice::Auto, tuning);
        let mut plan = SpmvPlan::with_columns::<T>(&stats, ctx.warp_size(), choice, columns)?;
        plan.set_tuning(*tuning);
        // the fallbacks and the row-block shape, in the plan's order (plan::upload), with
        // what the device and the layouts tell on demand
        let mut probe = UploadProbe { ctx, a, wide, tuning, counts: None, sell: None };
        let l2 = ctx.info().l2_cache_bytes;
        let decision = upload_rule::decide(a, plan, choice, hot_choice, base != 0, l2, tuning, &mut probe)?;
        let upload_rule::Decision { mut plan, instead_of_sell, parts, mut shape } = decision;
        if let Some((k, rule)) = parts {
            drop(probe);
            let mut d = Self::upload_parts(ctx, a, plan, columns, k, started, &rule)?;
            d.instead_of_sell = instead_of_sell;
            return Ok(d);
        }
        let sell = if plan.kernel() == SpmvKernel::Sell { probe.sell.take() } else { None };
        drop(probe);
        let mut blocks = shape
            .as_ref()
            .map(|(s, _)| RowBlocks::cut(a.row_offsets(), *s, chunk_major(stats.nrows, stats.max, *s, tuning)));
        // the vector kernel reads 16-bit columns when every entry lies near the diagonal and
        // its rows are long enough to be read a few entries per thread at a time
        let narrow_csr = narrow_rule::csr_columns(plan.kernel(), a, stats.mean, columns, tuning);
        let hot = match &blocks {
            Some(_) => match plan_hot::<T>(ctx, a.nnz(), a.ncols(), wide, hot_choice, tuning)? {
                Ok(h) => Some(h),
                Err(note) => {
                    if let Some(why) = note {
                        plan.set_no_hot(why);
                    }
                    None
                }
            },
            None => None,
        };
        let mut preprocessing = started.elapsed();
        // Planned, not discovered: the device bytes of the chosen storage against what the
        // device has free, before anything is allocated.
        let needed = match (&sell, &blocks) {
            _ if plan.kernel() == SpmvKernel::Ell => stats.max.saturating_mul(a.nrows()).saturating_mul(4 + T::BYTES),
            (Some(s), _) => s.device_bytes(T::BYTES),
            (None, b) => {
                let offset = if wide { 8 } else { 4 };
                (a.nrows() + 1) * offset
                    + a.nnz() * (if narrow_csr { 2 } else { 4 } + T::BYTES)
                    // with hot columns the blocks become default ones, counted as twice the
                    // larger blocks' bytes: an estimate, not a bound (a block takes 8 to 16
                    // bytes for hundreds of entries, so a miss is a few bytes per thousand)
                    + b.as_ref().map_or(0, |b| {
                        b.device_bytes(wide) * if hot.is_some() && b.shape != RowShape::DEFAULT { 2 } else { 1 }
                    })
                    + hot.as_ref().map_or(0, |h| h.device_bytes::<T>(a.ncols()))
            }
        } as u64;
        check_device_memory(ctx, a, &plan.kernel().to_string(), needed)?;
        ctx.make_current()?;
        let storage = if plan.kernel() == SpmvKernel::Ell {
            // converted on the device from the uploaded CSR arrays, or on the host a piece at a
            // time while uploading: the conversion counts as preprocessing, the copies in it
            // too
            let converting = Instant::now();
            let limit = DEFAULT_MAX_ELL_PADDING_RATIO.saturating_mul(a.nnz().max(a.nrows()));
            let narrow = narrow_rule::ell_columns(a, columns, tuning);
            let ell = DeviceEll::from_csr_with(ctx, a, &stats, limit, narrow, tuning)?;
            preprocessing += converting.elapsed();
            plan.set_narrow(ell.narrow_columns());
            Storage::Ell(Box::new(ell))
        } else if let Some(sell) = sell {
            // the slots are made on the device, or on the host a piece at a time while
            // uploading: preprocessing, as for ELL
            let converting = Instant::now();
            let d = DeviceSell::upload(ctx, a, &sell, base, tuning)?;
            preprocessing += converting.elapsed();
            // from what was stored: no slots (every row long) means no narrow columns
            plan.set_narrow(d.cols.as_ref().is_some_and(SlotCols::is_narrow));
            plan.set_far_columns(d.nfar);
            Storage::Sell(Box::new(d))
        } else if narrow_csr {
            // encoded on the host a piece at a time while uploading: preprocessing, as for ELL
            let converting = Instant::now();
            let col_offsets =
                narrow::upload_csr_offsets(ctx, a.row_offsets(), a.col_indices(), PIECE, "CSR column offsets")?;
            preprocessing += converting.elapsed();
            plan.set_narrow(true);
            Storage::Csr16 {
                row_offsets: Positions::upload(ctx, a.row_offsets(), wide, base, "CSR row offsets")?,
                col_offsets,
                values: upload(a.values(), "CSR values")?,
            }
        } else {
            let mut col_indices = upload(a.col_indices(), "CSR column indices")?;
            let chosen = match (hot, col_indices.as_mut()) {
                (Some(h), Some(cols)) => {
                    // counted, chosen and flagged on the device: preprocessing
                    let choosing = Instant::now();
                    // columns near the diagonal: the blocks of the shape for them
                    let local = shape.as_ref().is_some_and(|(s, _)| *s != RowShape::DEFAULT);
                    let chosen = h.choose::<T>(ctx, cols, a.nnz(), a.ncols(), local)?;
                    preprocessing += choosing.elapsed();
                    match chosen {
                        Ok(chosen) => Some(chosen),
                        Err(why) => {
                            plan.set_no_hot(why);
                            None
                        }
                    }
                }
                _ => None,
            };
            let hot = match chosen {
                Some((h, grid, shared_bytes)) => {
                    let d = DeviceHot {
                        columns: DeviceMemory::from_slice(ctx, h.columns(), "hot columns")?,
                        x: DeviceMemory::uninit(ctx, h.len(), "hot entries of x")?,
                        counter: DeviceMemory::zeroed(ctx, 1, "the hot-column kernel's row-block counter")?,
                        len: h.len(),
                        entries: h.entries(),
                        grid,
                        shared_bytes,
                    };
                    Some(Box::new(d))
                }
                None => None,
            };
            if let Some(b) = blocks.as_mut() {
                match (&hot, shape.take()) {
                    (None, Some((s, why))) => plan.set_blocks(s, blocks_note(b.sweep, why)),
                    // the hot-column kernel runs the default shape in row order
                    (Some(_), _) if b.shape != RowShape::DEFAULT || b.sweep => {
                        let cutting = Instant::now();
                        *b = RowBlocks::in_row_order(a.row_offsets());
                        preprocessing += cutting.elapsed();
                    }
                    _ => {}
                }
            }
            Storage::Csr {
                row_offsets: Positions::upload(ctx, a.row_offsets(), wide, base, "CSR row offsets")?,
                col_indices,
                values: upload(a.values(), "CSR values")?,
                balanced: blocks
                    .as_ref()
                    .map(|b| Balanced::upload(ctx, b, wide, base, a.ncols() * T::BYTES, tuning).map(Box::new))
                    .transpose()?,
                hot,
            }
        };
        let mut d = DeviceCsr {
            ctx,
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            storage,
            stats,
            plan,
            preprocessing,
            launches: std::sync::Mutex::new(()),
            entry_base: base,
            columns,
            instead_of_sell,
            tuning: *tuning,
            transposed: std::sync::OnceLock::new(),
            transposing: std::sync::Mutex::new(()),
            value_maps: None,
            pattern: None,
        };
        d.plan.set_memory(d.device_bytes(), d.csr_bytes());
        d.note_x();
        Ok(d)
    }

    /// A matrix made on the device in its CSR arrays (32-bit offsets and sorted columns),
    /// without a copy through the host: the levels of an AMG hierarchy built on the GPU.
    /// `stats` are the statistics of its rows, for the plan ([`SpmvPlan::for_csr_arrays`]).
    /// When the plan's automatic rule picks ELL and the slots fit in the free device memory,
    /// they are made on the device from the arrays (16-bit column offsets when `narrow`: the
    /// caller found every entry within 32767 of its row), which are then freed; otherwise the arrays are kept for a CSR kernel. `made` says what
    /// the matrix is, for the plan's reason. Empty arrays (no entries) are `None`.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the offsets do not have `nrows + 1` elements, or
    /// `stats` count other rows or entries than the arrays hold; [`Error::Cuda`] when the
    /// conversion fails.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_csr_arrays(
        ctx: &'static Context,
        nrows: usize,
        ncols: usize,
        stats: RowStats,
        offsets: DeviceMemory<u32>,
        cols: Option<DeviceMemory<u32>>,
        values: Option<DeviceMemory<T>>,
        narrow: bool,
        made: &str,
    ) -> Result<Self> {
        let started = Instant::now();
        let nnz = cols.as_ref().map_or(0, DeviceMemory::len);
        let mismatch = |expected, found| Error::DimensionMismatch { op: "DeviceCsr::from_csr_arrays", expected, found };
        if stats.nrows != nrows || offsets.len() != nrows + 1 {
            return Err(mismatch(nrows + 1, (stats.nrows + 1).min(offsets.len())));
        }
        if stats.nnz != nnz || values.as_ref().map_or(0, DeviceMemory::len) != nnz {
            return Err(mismatch(nnz, stats.nnz));
        }
        let tuning = Tuning::from_env();
        let narrow = narrow && tuning.narrow_allowed();
        // the ELL slots beside the CSR arrays and their 64-bit offsets, with the margin the
        // uploads' conversions keep
        let slot_bytes = if narrow { 2 } else { 4 } + T::BYTES as u64;
        let ell_bytes = (stats.max as u64).saturating_mul(nrows as u64).saturating_mul(slot_bytes)
            + (nrows as u64 + 1) * 8
            + crate::gpu::storage::ell::CONVERSION_MARGIN;
        let ell = tuning.device_conversion_allowed() && nnz > 0 && ell_bytes <= ctx.available_memory()?;
        let mut plan = SpmvPlan::for_csr_arrays::<T>(&stats, ctx.warp_size(), made, ell);
        plan.set_tuning(tuning);
        let storage = match (cols, values) {
            (Some(cols), Some(vals)) if plan.kernel() == SpmvKernel::Ell => {
                let wide = crate::gpu::kernels::amg::widen_offsets(
                    ctx,
                    &offsets,
                    &format!("{made}: 64-bit row offsets for ELL"),
                )?;
                let e = DeviceEll::from_device_csr(ctx, nrows, ncols, &stats, narrow, &wide, &cols, &vals)?;
                // the CSR arrays are freed in stream order, after the conversion
                drop((wide, offsets, cols, vals));
                plan.set_narrow(e.narrow_columns());
                Storage::Ell(Box::new(e))
            }
            (cols, values) => Storage::Csr {
                row_offsets: Positions::Narrow(offsets),
                col_indices: cols,
                values,
                balanced: None,
                hot: None,
            },
        };
        let mut d = DeviceCsr {
            ctx,
            nrows,
            ncols,
            nnz,
            storage,
            stats,
            plan,
            preprocessing: started.elapsed(),
            launches: std::sync::Mutex::new(()),
            entry_base: 0,
            columns: None,
            instead_of_sell: None,
            tuning,
            transposed: std::sync::OnceLock::new(),
            transposing: std::sync::Mutex::new(()),
            value_maps: None,
            pattern: None,
        };
        d.plan.set_memory(d.device_bytes(), d.csr_bytes());
        Ok(d)
    }

    /// Uploads `a` in `parts` column parts ([`crate::gpu::storage::split`]), each with the balanced kernel
    /// and its own row blocks and hot columns; `plan` is the balanced plan of the whole.
    /// The parts are cut on the host one at a time, each freed once uploaded.
    fn upload_parts(
        ctx: &'static Context,
        a: &CsrMatrix<T>,
        mut plan: SpmvPlan,
        columns: Option<ColumnLayout>,
        parts: usize,
        started: Instant,
        rule: &str,
    ) -> Result<Self> {
        // the parts plan with the whole's overrides
        let tuning = &plan.tuning();
        let stats = a.row_stats();
        let offset = if positions_need_64_bits(a.nnz()) { 8 } else { 4 };
        let needed = (parts * (a.nrows() + 1) * offset + a.nnz() * (4 + T::BYTES)) as u64;
        check_device_memory(ctx, a, &format!("balanced, {parts} column parts"), needed)?;
        let mut preprocessing = started.elapsed();
        let mut uploaded = Vec::with_capacity(parts);
        for k in 0..parts {
            let cutting = Instant::now();
            let (lo, hi) = (split::part_start(a.ncols(), parts, k), split::part_start(a.ncols(), parts, k + 1));
            let part = split::column_range(a, lo, hi);
            preprocessing += cutting.elapsed();
            let d = Self::upload_shifted(ctx, &part, KernelChoice::Balanced, 0, HotChoice::Auto, tuning)?;
            preprocessing += d.preprocessing;
            uploaded.push(d);
        }
        let part_bytes = a.ncols().div_ceil(parts) * T::BYTES;
        let hot = uploaded.iter().filter(|d| d.plan.hot_columns()).count();
        plan.set_column_parts(
            parts,
            format!(
                "gathered in {parts} column parts of at most {} each (x of {}, an L2 of {}; {rule}): the balanced \
                 kernel runs part after part, the first with beta, the others adding into y{}",
                crate::error::human_bytes(part_bytes as u64),
                crate::error::human_bytes((a.ncols() * T::BYTES) as u64),
                crate::error::human_bytes(ctx.info().l2_cache_bytes as u64),
                if hot > 0 { format!("; {hot} of the parts keep hot columns") } else { String::new() }
            ),
        );
        let mut d = DeviceCsr {
            ctx,
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            storage: Storage::Parts(uploaded),
            stats,
            plan,
            preprocessing,
            launches: std::sync::Mutex::new(()),
            entry_base: 0,
            columns,
            instead_of_sell: None,
            tuning: *tuning,
            transposed: std::sync::OnceLock::new(),
            transposing: std::sync::Mutex::new(()),
            value_maps: None,
            pattern: None,
        };
        d.plan.set_memory(d.device_bytes(), d.csr_bytes());
        Ok(d)
    }

    /// Tells the plan about the hot columns, if the matrix has them, and about the gathers of
    /// `x` with the L2 prefetch hint, if the plan runs the balanced kernel and it makes them
    /// (the row blocks stay when another CSR kernel is set).
    fn note_x(&mut self) {
        if let (Storage::Csr { balanced: Some(b), .. }, SpmvKernel::Balanced) = (&self.storage, self.plan.kernel()) {
            if let Some(why) = &b.prefetch_x {
                self.plan.set_prefetch_x(why.clone());
            }
        }
        if let Storage::Csr { hot: Some(h), .. } = &self.storage {
            let share = h.entries as f64 / self.nnz.max(1) as f64;
            self.plan.set_hot(format!(
                "{} hot columns hold {:.1}% of the entries: their x is read from shared memory ({} per block)",
                h.len,
                100.0 * share,
                crate::error::human_bytes(h.shared_bytes as u64)
            ));
        }
    }

    /// `y = alpha*A*x + beta*y`, queued on the context's stream with the plan's kernel; does
    /// not wait for the GPU. `beta == 0` never reads `y` (NaN in `y` does not spread);
    /// `alpha == 0` never reads `A` or `x` and only scales `y`. Sums are accumulated in `f64`
    /// for both element types, in an order fixed by the matrix, so repeated calls give
    /// bit-identical results.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `x.len() != ncols` or `y.len() != nrows`; nothing is
    /// launched then. [`Error::Cuda`] when the launch fails.
    pub fn spmv(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> Result<()> {
        self.spmv_on(self.ctx.stream(), alpha, x, beta, y)
    }

    /// [`spmv`](DeviceCsr::spmv) on another stream of the context (CG records its iterations
    /// on a capture stream).
    pub(crate) fn spmv_on(
        &self,
        stream: &Stream,
        alpha: T,
        x: &DeviceVector<T>,
        beta: T,
        y: &mut DeviceVector<T>,
    ) -> Result<()> {
        let _queued = self.launches.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match (&self.storage, self.plan.kernel()) {
            (Storage::Ell(e), _) => kernels::spmv::ell_on(self.ctx, stream, e.as_ref(), alpha, x, beta, y),
            (Storage::Sell(sl), _) => kernels::spmv::sell(self.ctx, stream, self, sl, alpha, x, beta, y),
            (Storage::Parts(parts), _) => {
                // checked before anything is launched, as the kernels do
                kernels::spmv::check_dims(self.nrows, self.ncols, x, y)?;
                for (k, part) in parts.iter().enumerate() {
                    // alpha == 0 only scales y: the first part does it
                    if k > 0 && alpha == T::ZERO {
                        break;
                    }
                    part.spmv_on(stream, alpha, x, if k == 0 { beta } else { T::ONE }, y)?;
                }
                Ok(())
            }
            (Storage::Csr { .. }, SpmvKernel::Scalar) => {
                kernels::spmv::csr_scalar(self.ctx, stream, self, alpha, x, beta, y)
            }
            (Storage::Csr { .. } | Storage::Csr16 { .. }, SpmvKernel::Vector { threads_per_row }) => {
                kernels::spmv::csr_vector(self.ctx, stream, threads_per_row, self, alpha, x, beta, y)
            }
            (Storage::Csr { balanced: Some(b), hot, .. }, SpmvKernel::Balanced) => {
                kernels::spmv::csr_balanced(self.ctx, stream, self, b, hot.as_deref(), alpha, x, beta, y)
            }
            // set_kernel and upload_with keep storage and kernel together, so these arms only
            // guard the invariant.
            (Storage::Csr { .. } | Storage::Csr16 { .. }, k) => {
                Err(Error::InvalidArgument(format!("the {k} kernel needs storage this matrix was not uploaded with")))
            }
        }
    }

    /// `y = alpha*A^T*x + beta*y`: `x` has [`nrows`](DeviceCsr::nrows) entries and `y` has
    /// [`ncols`](DeviceCsr::ncols). Queued on the context's stream; does not wait for the
    /// GPU once the transpose is on the device.
    ///
    /// The product runs as an ordinary [`spmv`](DeviceCsr::spmv) of the explicit transpose
    /// `A^T`, which is built the first time it is needed ([`prepare_transpose`]) and kept
    /// with the matrix: it costs a download of `A`, a parallel counting sort on the host
    /// ([`CsrMatrix::transpose`]) and an upload with a plan of its own, made by the same
    /// rules and overrides as `A`'s (the kernel is the plan's choice for `A^T`, not a
    /// kernel forced on `A`). No floating-point atomics are used: each `y[j]` is summed in
    /// `f64` in an order fixed by the matrix, so repeated calls give bit-identical results.
    /// `beta == 0` never reads `y`; `alpha == 0` only scales `y`. [`upload_with_transpose`]
    /// builds the transpose at upload, from the host matrix.
    ///
    /// [`prepare_transpose`]: DeviceCsr::prepare_transpose
    /// [`upload_with_transpose`]: DeviceCsr::upload_with_transpose
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `x.len() != nrows` or `y.len() != ncols`, before
    /// anything is built or launched; the errors of [`prepare_transpose`] when the transpose
    /// is built here; [`Error::Cuda`] when the launch fails.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use spgpu::gpu::{Context, DeviceCsr, DeviceVector};
    /// use spgpu::CsrMatrix;
    /// let ctx = Context::global()?;
    /// // a 2 x 3 matrix: A^T is 3 x 2
    /// let a = CsrMatrix::try_from_parts(2, 3, vec![0, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0])?;
    /// let d_a = DeviceCsr::upload(ctx, &a)?;
    /// let x = DeviceVector::from_slice(ctx, &[1.0, 10.0])?;
    /// let mut y = DeviceVector::from_slice(ctx, &[0.0; 3])?;
    /// d_a.spmv_transpose(1.0, &x, 0.0, &mut y)?; // builds and keeps A^T on first use
    /// assert_eq!(y.to_vec()?, vec![1.0, 30.0, 2.0]);
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn spmv_transpose(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> Result<()> {
        if x.len() != self.nrows {
            return Err(Error::DimensionMismatch {
                op: "spmv_transpose: length of x (the rows of A)",
                expected: self.nrows,
                found: x.len(),
            });
        }
        if y.len() != self.ncols {
            return Err(Error::DimensionMismatch {
                op: "spmv_transpose: length of y (the columns of A)",
                expected: self.ncols,
                found: y.len(),
            });
        }
        self.prepare_transpose()?.spmv(alpha, x, beta, y)
    }

    /// Builds the explicit transpose that [`spmv_transpose`](DeviceCsr::spmv_transpose)
    /// runs, if it is not built yet, and returns it; later calls return the same matrix.
    /// Threads that ask at once wait for one build. Call it before timing the transpose
    /// product, or ahead of the first product, to keep the build off the critical path.
    ///
    /// The build downloads `A` (host memory for one copy of it and one of its transpose),
    /// transposes it on the host in parallel ([`CsrMatrix::transpose`]) and uploads the
    /// result with the plan of [`upload_with`](DeviceCsr::upload_with)'s `Auto` and `A`'s
    /// overrides; its [`preprocessing`](DeviceCsr::preprocessing) includes the download and
    /// the host transpose. Its device memory is its own
    /// ([`device_bytes`](DeviceCsr::device_bytes) of the returned matrix), beside `A`'s.
    ///
    /// # Errors
    ///
    /// [`Error::InsufficientMemory`] when the transpose does not fit in the free device
    /// memory; [`Error::Cuda`] when the download, an allocation or a copy fails. Nothing is
    /// kept then, and a later call tries again.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use spgpu::gpu::{Context, DeviceCsr};
    /// let ctx = Context::global()?;
    /// let a = spgpu::gen::from_spec::<f64>("uniform:3000:1000:8")?;
    /// let d_a = DeviceCsr::upload(ctx, &a)?;
    /// let t = d_a.prepare_transpose()?;
    /// assert_eq!((t.nrows(), t.ncols()), (1000, 3000));
    /// println!("A^T: {}", t.plan().explain());
    /// assert!(std::ptr::eq(t, d_a.prepare_transpose()?)); // built once
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn prepare_transpose(&self) -> Result<&DeviceCsr<T>> {
        if let Some(t) = self.transposed.get() {
            return Ok(t);
        }
        let _building = self.transposing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // another thread may have built it while this one waited
        if let Some(t) = self.transposed.get() {
            return Ok(t);
        }
        let t = self.transpose()?;
        Ok(self.transposed.get_or_init(|| Box::new(t)))
    }

    /// The explicit transpose, if [`prepare_transpose`](DeviceCsr::prepare_transpose) (or a
    /// transpose product, or [`upload_with_transpose`](DeviceCsr::upload_with_transpose))
    /// has built it; `None` otherwise. Builds nothing.
    pub fn cached_transpose(&self) -> Option<&DeviceCsr<T>> {
        self.transposed.get().map(|t| &**t)
    }

    /// A new device matrix holding `A^T`, with a plan of its own, owned by the caller (the
    /// transpose kept for [`spmv_transpose`](DeviceCsr::spmv_transpose) is neither used nor
    /// made). Built as [`prepare_transpose`](DeviceCsr::prepare_transpose) builds it.
    ///
    /// # Errors
    ///
    /// As [`prepare_transpose`](DeviceCsr::prepare_transpose).
    ///
    /// # Example
    ///
    /// ```no_run
    /// use spgpu::gpu::{Context, DeviceCsr};
    /// let ctx = Context::global()?;
    /// let a = spgpu::gen::from_spec::<f32>("uniform:500:200:5")?;
    /// let t = DeviceCsr::upload(ctx, &a)?.transpose()?;
    /// assert_eq!(t.download()?, a.transpose());
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn transpose(&self) -> Result<DeviceCsr<T>> {
        let started = Instant::now();
        let a = self.download()?;
        self.upload_transpose_of(&a, started)
    }

    /// Uploads `a` as [`upload_with`](DeviceCsr::upload_with) does, and its transpose with
    /// it (transposed on the host, from `a`, without a download), kept for
    /// [`spmv_transpose`](DeviceCsr::spmv_transpose): for a matrix that will multiply both
    /// ways, with the cost of both uploads paid here. The options' kernel applies to `A`;
    /// `A^T` gets the plan's `Auto` choice with the same overrides.
    ///
    /// # Errors
    ///
    /// As [`upload_with`](DeviceCsr::upload_with), for either matrix.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use spgpu::gpu::{Context, DeviceCsr, DeviceVector, KernelChoice};
    /// let ctx = Context::global()?;
    /// let a = spgpu::gen::from_spec::<f64>("uniform:4000:1500:10")?;
    /// let d_a = DeviceCsr::upload_with_transpose(ctx, &a, KernelChoice::Auto)?;
    /// assert!(d_a.cached_transpose().is_some());
    /// let r = DeviceVector::from_slice(ctx, &vec![1.0; a.nrows()])?;
    /// let mut g = DeviceVector::zeros(ctx, a.ncols())?;
    /// d_a.spmv_transpose(1.0, &r, 0.0, &mut g)?; // g = A^T r, no build on the way
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn upload_with_transpose(
        ctx: &'static Context,
        a: &CsrMatrix<T>,
        opts: impl Into<UploadOptions>,
    ) -> Result<Self> {
        let d = Self::upload_with(ctx, a, opts)?;
        let t = d.upload_transpose_of(a, Instant::now())?;
        d.transposed.get_or_init(|| Box::new(t));
        Ok(d)
    }

    /// Transposes `a` (the host copy of this matrix) and uploads the result with the plan's
    /// `Auto` and this matrix's overrides; the time since `started` (a download, and the
    /// transpose) counts as the new matrix's preprocessing.
    fn upload_transpose_of(&self, a: &CsrMatrix<T>, started: Instant) -> Result<Self> {
        let at = a.transpose();
        let before = started.elapsed();
        let mut t = Self::upload_shifted(self.ctx, &at, KernelChoice::Auto, 0, HotChoice::Auto, &self.tuning)?;
        t.preprocessing += before;
        Ok(t)
    }

    /// Replaces the values of `A` with `values`, given in the CSR order of the matrix that
    /// was uploaded (row by row, each row's entries by column, as
    /// [`CsrMatrix::values`] holds them), and keeps everything else: the plan, the storage,
    /// every index array, row blocks and hot columns. Products then give the bits they
    /// would give after a fresh upload of the same matrix with these values under the same
    /// plan. Non-finite values are stored as they are, as an upload stores them. For a
    /// matrix whose values change while its pattern stays (Newton steps, time stepping).
    ///
    /// CSR storage (with or without row blocks, hot columns or 16-bit column offsets) keeps
    /// the values in CSR order: they are copied over the old ones. ELL, SELL and column
    /// parts store them elsewhere: the values are copied to the device once and moved into
    /// their slots there by a gather (`update_values_<T>`), through a map of each slot's
    /// CSR position that the first call makes
    /// ([`prepare_value_updates`](DeviceCsr::prepare_value_updates)) and keeps on the device
    /// (4 bytes per slot, counted in [`device_bytes`](DeviceCsr::device_bytes)).
    ///
    /// The transpose kept for [`spmv_transpose`](DeviceCsr::spmv_transpose) is dropped (the
    /// next transpose product builds it again from the new values). The copy is complete
    /// when this returns, so `values` may be reused at once; the gather is queued on the
    /// context's stream before any later product.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `values.len() != nnz`, before anything is copied
    /// or dropped; [`Error::Cuda`] when a copy or the launch fails (the values are then
    /// partly replaced: update again, or upload again).
    ///
    /// # Example
    ///
    /// ```no_run
    /// use spgpu::gpu::{Context, DeviceCsr, DeviceVector};
    /// let ctx = Context::global()?;
    /// let a = spgpu::gen::laplacian_2d::<f64>(200);
    /// let mut d_a = DeviceCsr::upload(ctx, &a)?;
    /// let x = DeviceVector::from_slice(ctx, &vec![1.0; a.ncols()])?;
    /// let mut y = DeviceVector::zeros(ctx, a.nrows())?;
    /// for step in 1..=3 {
    ///     // the same pattern, new values: no new plan, no new layout
    ///     let values: Vec<f64> = a.values().iter().map(|v| v * step as f64).collect();
    ///     d_a.update_values(&values)?;
    ///     d_a.spmv(1.0, &x, 0.0, &mut y)?;
    /// }
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn update_values(&mut self, values: &[T]) -> Result<()> {
        if values.len() != self.nnz {
            return Err(Error::DimensionMismatch {
                op: "DeviceCsr::update_values: length of values (the entries of A)",
                expected: self.nnz,
                found: values.len(),
            });
        }
        // A^T holds the old values
        self.transposed.take();
        if self.nnz == 0 {
            return Ok(());
        }
        self.ctx.make_current()?;
        match &mut self.storage {
            Storage::Csr { values: Some(v), .. } | Storage::Csr16 { values: Some(v), .. } => {
                v.copy_from_host(values, "new CSR values")
            }
            Storage::Ell(e) => e.update_values(values),
            _ => {
                self.prepare_value_updates()?;
                let src = DeviceMemory::from_slice(self.ctx, values, "new values (CSR order)")?;
                self.gather_values(&src)
            }
        }
    }

    /// [`update_values`](DeviceCsr::update_values) with the values of `a`, after checking
    /// that `a` has the pattern of the uploaded matrix: the same shape and entry count, and
    /// in every row the same columns.
    ///
    /// The first call reads the matrix back from the device (as
    /// [`download`](DeviceCsr::download) does) and keeps its row offsets and a 64-bit hash
    /// of each row's columns on the host (16 bytes per row); each call then compares `a`'s
    /// rows with them in parallel, on the host. A change of columns within a row goes
    /// unnoticed only where the two hashes collide (about one chance in 2^64 per row that
    /// differs). [`update_values`](DeviceCsr::update_values) checks nothing but the length.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `a`'s rows, columns or entries differ in number;
    /// [`Error::InvalidArgument`] naming the first row whose entries differ. Nothing is
    /// copied or dropped then. [`Error::Cuda`] as for `update_values`, or when the first
    /// call's download fails.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use spgpu::gpu::{Context, DeviceCsr};
    /// let ctx = Context::global()?;
    /// let a = spgpu::gen::from_spec::<f64>("uniform:3000:3000:9")?;
    /// let mut d_a = DeviceCsr::upload(ctx, &a)?;
    /// let b = spgpu::gen::from_spec::<f64>("uniform:3000:3000:9:7")?; // another pattern
    /// assert!(d_a.update_from(&b).is_err());
    /// d_a.update_from(&a)?; // the same pattern
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn update_from(&mut self, a: &CsrMatrix<T>) -> Result<()> {
        for (op, expected, found) in [
            ("DeviceCsr::update_from: rows of the new matrix", self.nrows, a.nrows()),
            ("DeviceCsr::update_from: columns of the new matrix", self.ncols, a.ncols()),
            ("DeviceCsr::update_from: entries of the new matrix", self.nnz, a.nnz()),
        ] {
            if expected != found {
                return Err(Error::DimensionMismatch { op, expected, found });
            }
        }
        if self.pattern.is_none() {
            self.pattern = Some(Box::new(PatternPrint::of(&self.download()?)));
        }
        if let Some(row) = self.pattern.as_ref().and_then(|p| p.first_difference(a)) {
            let (lo, hi) = (a.row_offsets()[row], a.row_offsets()[row + 1]);
            return Err(Error::InvalidArgument(format!(
                "update_from: row {row} of the new matrix ({} entries) has other columns than the uploaded one; \
                 values can be replaced only on the same pattern: upload the new matrix instead",
                hi - lo
            )));
        }
        self.update_values(a.values())
    }

    /// Makes the maps that [`update_values`](DeviceCsr::update_values) gathers through (ELL,
    /// SELL and column parts; nothing for CSR storage), if they are not made yet: the
    /// pattern is read back from the device (for SELL, its layout too), the maps are made
    /// on the host and uploaded, about the cost of one download and one upload of the
    /// matrix. The first update makes them otherwise: call this before timing updates.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when a copy fails.
    pub fn prepare_value_updates(&mut self) -> Result<()> {
        if self.value_maps.is_some() || self.nnz == 0 {
            return Ok(());
        }
        let maps = match &mut self.storage {
            Storage::Csr { .. } | Storage::Csr16 { .. } => return Ok(()),
            Storage::Ell(e) => return e.prepare_value_updates(),
            Storage::Sell(sl) => {
                let sl = &**sl;
                self.ctx.synchronize()?;
                let base = self.entry_base;
                let off = sl.download(base)?.row_offsets().to_vec();
                let slice_ptr = sl.slice_ptr.download(sl.nslices + 1, base, "SELL slice offsets")?;
                let perm = download(sl.perm.as_ref(), sl.nsorted, "SELL row order")?;
                let chunk_entry = sl.chunk_entry.download(sl.nchunks + 1, base, "SELL chunk offsets")?;
                let flat = download(sl.long_rows.as_ref(), 3 * sl.nlong, "SELL long rows")?;
                let long_rows: Vec<[u32; 3]> = flat.chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
                let short = values::sell_map(&off, &slice_ptr, &perm);
                let long = values::long_rows_map(&off, &long_rows, &chunk_entry, sl.nlong_entries);
                vec![
                    ValueMap::upload(self.ctx, &short, "SELL value map")?,
                    ValueMap::upload(self.ctx, &long, "SELL long-row value map")?,
                ]
            }
            Storage::Parts(parts) => {
                let n = parts.len();
                let a = self.download()?;
                (0..n)
                    .map(|k| ValueMap::upload(self.ctx, &values::part_map(&a, n, k), "column part value map"))
                    .collect::<Result<Vec<_>>>()?
            }
        };
        self.value_maps = Some(maps);
        Ok(())
    }

    /// Gathers the values in CSR order in `src` (`nnz` of them) into SELL's or the column
    /// parts' value arrays through the maps
    /// ([`prepare_value_updates`](DeviceCsr::prepare_value_updates) made them).
    fn gather_values(&mut self, src: &DeviceMemory<T>) -> Result<()> {
        crate::gpu::runtime::vector::check_len("update_values: values", self.nnz, src.len())?;
        let maps = self.value_maps.as_deref().unwrap_or_default();
        let targets: Vec<Option<&mut DeviceMemory<T>>> = match &mut self.storage {
            Storage::Sell(sl) => vec![sl.vals.as_mut(), sl.long_vals.as_mut()],
            Storage::Parts(parts) => parts
                .iter_mut()
                .map(|p| {
                    let stored = p.storage_name();
                    match &mut p.storage {
                        Storage::Csr { values, .. } => Ok(values.as_mut()),
                        _ => Err(Error::InvalidArgument(format!(
                            "update_values: a column part is stored as {stored}, not CSR"
                        ))),
                    }
                })
                .collect::<Result<_>>()?,
            _ => Vec::new(),
        };
        if targets.len() != maps.len() {
            return Err(Error::InvalidArgument("update_values: the value maps do not match the storage".into()));
        }
        for (map, dst) in maps.iter().zip(targets) {
            if let (Some(map), Some(dst)) = (map, dst) {
                // SAFETY: each map gives each element of its array the CSR position of its
                // entry in this matrix, below nnz == src.len() (checked), or all ones for a
                // padding slot.
                unsafe { kernels::spmv::update_values(self.ctx, map, src, dst)? };
            }
        }
        Ok(())
    }

    /// Replaces the plan's kernel. Switching among the CSR kernels (scalar, vector, balanced)
    /// keeps the uploaded arrays (the balanced kernel's row blocks are made from the row
    /// offsets, read back from the device; columns the vector kernel stored as 16-bit
    /// offsets are read back, decoded and stored as 32-bit columns for the scalar and
    /// balanced kernels); switching to or from ELLPACK or SELL needs a new upload
    /// ([`upload_with`](DeviceCsr::upload_with)). `balanced` keeps the row blocks and hot
    /// columns the matrix has, or cuts blocks of the default shape; `balanced:N` cuts blocks
    /// of that shape and drops hot columns.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the choice does not apply or needs other storage; the
    /// plan is then unchanged. [`Error::Cuda`] when reading the offsets or uploading the row
    /// blocks fails.
    pub fn set_kernel(&mut self, choice: KernelChoice) -> Result<()> {
        let mut plan = SpmvPlan::with_columns::<T>(&self.stats, self.ctx.warp_size(), choice, self.columns)?;
        plan.set_tuning(self.tuning);
        if let (Some(why), SpmvKernel::Sell, KernelChoice::Auto) = (&self.instead_of_sell, plan.kernel(), choice) {
            plan.fall_back_to_balanced(why);
        }
        // the scalar and balanced kernels read 32-bit columns
        let widened = matches!(self.storage, Storage::Csr16 { .. })
            && matches!(plan.kernel(), SpmvKernel::Scalar | SpmvKernel::Balanced);
        if widened {
            self.widen_columns()?;
            // stored with 32-bit columns from here on, whatever happens below
            self.plan.set_narrow(false);
        }
        let stored = self.storage_name();
        match (&mut self.storage, plan.kernel()) {
            // the parts run the balanced kernel with the blocks and hot columns they have:
            // the plan stays
            (Storage::Parts(_), SpmvKernel::Balanced) if choice.row_shape().is_none() => return Ok(()),
            (Storage::Parts(_), k) => {
                return Err(Error::InvalidArgument(format!(
                    "this matrix is stored as {stored} on the device: upload it again with DeviceCsr::upload_with \
                     to run the {k} kernel"
                )))
            }
            (Storage::Ell(_), SpmvKernel::Ell)
            | (Storage::Sell(_), SpmvKernel::Sell)
            | (Storage::Csr16 { .. }, SpmvKernel::Vector { .. }) => {}
            (Storage::Ell(_) | Storage::Sell(_) | Storage::Csr16 { .. }, k)
            | (Storage::Csr { .. }, k @ (SpmvKernel::Ell | SpmvKernel::Sell)) => {
                return Err(Error::InvalidArgument(format!(
                    "this matrix is stored as {stored} on the device: upload it again with DeviceCsr::upload_with \
                     to run the {k} kernel"
                )))
            }
            (Storage::Csr { row_offsets, col_indices, balanced, hot, .. }, SpmvKernel::Balanced) => {
                let forced = choice.row_shape();
                let stale = match (balanced.as_deref(), forced) {
                    (None, _) => true,
                    (Some(b), Some(s)) => b.shape != s,
                    (Some(_), None) => false,
                };
                // the new blocks first, so that a failure leaves the matrix as it was
                let fresh = if stale {
                    self.ctx.synchronize()?;
                    let base = self.entry_base;
                    let offsets = row_offsets.download(self.nrows + 1, base, "CSR row offsets")?;
                    let shape = forced.unwrap_or(RowShape::DEFAULT);
                    let sweep = chunk_major(self.stats.nrows, self.stats.max, shape, &self.tuning);
                    let blocks = RowBlocks::cut(&offsets, shape, sweep);
                    Some(Box::new(Balanced::upload(
                        self.ctx,
                        &blocks,
                        row_offsets.is_wide(),
                        base,
                        self.ncols * T::BYTES,
                        &self.tuning,
                    )?))
                } else {
                    None
                };
                if forced.is_some() {
                    // a forced shape runs without hot columns
                    Self::unflag(self.ctx, col_indices, hot, self.nnz)?;
                }
                if fresh.is_some() {
                    *balanced = fresh;
                }
            }
            (Storage::Csr { col_indices, hot, .. }, _) => {
                // the other CSR kernels read plain columns
                Self::unflag(self.ctx, col_indices, hot, self.nnz)?;
            }
        }
        // the storage is unchanged, and with it whether its slots hold 16-bit columns, unless
        // its 16-bit CSR columns were widened
        let (narrow, far) = (self.plan.narrow_columns() && !widened, self.plan.far_columns());
        self.plan = plan;
        self.plan.set_narrow(narrow);
        self.plan.set_far_columns(far);
        if let (Storage::Csr { balanced: Some(b), hot: None, .. }, SpmvKernel::Balanced) =
            (&self.storage, self.plan.kernel())
        {
            let how = if choice.row_shape().is_some() { "forced" } else { "the blocks the matrix had, or the default" };
            let why = format!("{} ({how})", b.shape.describe());
            self.plan.set_blocks(b.shape, blocks_note(b.sweep, why));
        }
        self.plan.set_memory(self.device_bytes(), self.csr_bytes());
        self.note_x();
        Ok(())
    }

    /// For tests of the prefetching gathers ([`crate::gpu::storage::balance::prefetch_x`]): makes the
    /// balanced kernel gather `x` with the L2 prefetch hint (`on`) or without, whatever the
    /// rule chose. (On a GPU whose PTX has no hint the prefetching kernels run plain loads.)
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the matrix does not run the balanced kernel in row
    /// order (its chunk-major blocks have no prefetching variant).
    #[doc(hidden)]
    pub fn set_prefetch_x(&mut self, on: bool) -> Result<()> {
        match (&mut self.storage, self.plan.kernel()) {
            (Storage::Csr { balanced: Some(b), .. }, SpmvKernel::Balanced) if !b.sweep => {
                b.prefetch_x = on.then(|| "gathered with a 128-byte L2 prefetch (set_prefetch_x)".to_string());
                self.plan.clear_prefetch_x();
                self.note_x();
                Ok(())
            }
            _ => Err(Error::InvalidArgument(
                "set_prefetch_x: the matrix does not run the balanced kernel with row blocks in row order".into(),
            )),
        }
    }

    /// Replaces CSR storage with 16-bit column offsets by plain CSR (the columns decoded on
    /// the host, then uploaded); the new columns are uploaded before the offsets are freed,
    /// so a failure leaves the matrix as it was. Nothing to do for other storage.
    fn widen_columns(&mut self) -> Result<()> {
        let Storage::Csr16 { row_offsets, col_offsets, values } = &mut self.storage else { return Ok(()) };
        self.ctx.synchronize()?;
        let offsets = row_offsets.download(self.nrows + 1, self.entry_base, "CSR row offsets")?;
        let cols = narrow::download_csr_offsets(col_offsets, &offsets, "CSR column offsets")?;
        let col_indices = upload(&cols, "CSR column indices")?;
        // the offsets again (a few bytes per row), so that the values move over unchanged
        let row_offsets =
            Positions::upload(self.ctx, &offsets, row_offsets.is_wide(), self.entry_base, "CSR row offsets")?;
        let values = values.take();
        self.storage = Storage::Csr { row_offsets, col_indices, values, balanced: None, hot: None };
        Ok(())
    }

    /// Turns hot-column storage back into plain columns and drops the hot columns, if any.
    fn unflag(
        ctx: &Context,
        col_indices: &Option<DeviceMemory<u32>>,
        hot: &mut Option<Box<DeviceHot<T>>>,
        nnz: usize,
    ) -> Result<()> {
        if let Some(h) = hot.take() {
            // SAFETY: the column array holds nnz flagged columns (nnz > 0: a matrix with hot
            // columns has entries), each flagged slot below h.len; the stream orders the
            // kernel before every later use of the columns.
            unsafe {
                kernels::spmv::unflag_hot(
                    ctx,
                    ptr_of(col_indices.as_ref()).as_raw(),
                    h.columns.as_device_ptr().as_raw(),
                    nnz,
                )?
            };
            ctx.synchronize()?;
        }
        Ok(())
    }

    /// The plan that [`spmv`](DeviceCsr::spmv) follows.
    pub fn plan(&self) -> &SpmvPlan {
        &self.plan
    }

    /// Time spent at upload on preprocessing for the plan (row statistics, row blocks,
    /// storage conversion), on the host; the copies to the device are not included.
    pub fn preprocessing(&self) -> Duration {
        self.preprocessing
    }

    /// Device memory the matrix holds, in bytes: the CSR arrays (or, when the plan chose
    /// ELLPACK, the ELL arrays instead) and the balanced kernel's row blocks when it has them,
    /// and after a first [`update_values`](DeviceCsr::update_values) of ELL, SELL or column
    /// parts, the maps it gathers through.
    pub fn device_bytes(&self) -> usize {
        let maps = self.value_maps.iter().flatten().flatten().map(ValueMap::bytes).sum::<usize>();
        maps + match &self.storage {
            Storage::Ell(e) => {
                e.width() * e.nrows() * (SlotCols::slot_bytes(e.narrow_columns()) + T::BYTES) + e.value_map_bytes()
            }
            Storage::Sell(sl) => sl.bytes,
            Storage::Csr16 { row_offsets, .. } => {
                (self.nrows + 1) * if row_offsets.is_wide() { 8 } else { 4 } + self.nnz * (2 + T::BYTES)
            }
            Storage::Csr { balanced, hot, .. } => {
                self.csr_bytes()
                    + balanced.as_ref().map_or(0, |b| b.bytes)
                    + hot.as_ref().map_or(0, |h| DeviceHot::<T>::bytes(h.len))
            }
            Storage::Parts(parts) => parts.iter().map(DeviceCsr::device_bytes).sum(),
        }
    }

    /// Bytes of the plain CSR arrays of this matrix (offsets of 4 bytes, or 8 past
    /// [`INDEX_LIMIT`](crate::INDEX_LIMIT) entries; columns; values): what
    /// [`device_bytes`](DeviceCsr::device_bytes) is compared with.
    pub fn csr_bytes(&self) -> usize {
        let offset = if positions_need_64_bits(self.nnz) { 8 } else { 4 };
        (self.nrows + 1) * offset + self.nnz * (4 + T::BYTES)
    }

    /// Whether the device row offsets (and the balanced kernel's block starts) are 64-bit:
    /// `nnz` is past [`INDEX_LIMIT`](crate::INDEX_LIMIT). The kernels then run their 64-bit
    /// variants; column indices stay 32-bit.
    pub fn offsets_are_64_bit(&self) -> bool {
        match &self.storage {
            Storage::Csr { row_offsets, .. } | Storage::Csr16 { row_offsets, .. } => row_offsets.is_wide(),
            Storage::Sell(sl) => sl.slice_ptr.is_wide(),
            Storage::Ell(e) => e.is_wide(),
            Storage::Parts(parts) => parts.iter().any(DeviceCsr::offsets_are_64_bit),
        }
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
        match &self.storage {
            Storage::Ell(e) => Ok(e.download()?.to_csr()),
            Storage::Sell(sl) => {
                self.ctx.synchronize()?;
                sl.download(self.entry_base)
            }
            Storage::Csr { row_offsets, col_indices, values, hot, .. } => {
                self.ctx.synchronize()?;
                let offsets = row_offsets.download(self.nrows + 1, self.entry_base, "CSR row offsets")?;
                let mut cols = download(col_indices.as_ref(), self.nnz, "CSR column indices")?;
                if let Some(h) = hot {
                    let columns = download(Some(&h.columns), h.len, "hot columns")?;
                    HotColumns::unflag(&columns, &mut cols);
                }
                let vals = download(values.as_ref(), self.nnz, "CSR values")?;
                Ok(CsrMatrix::try_from_parts(self.nrows, self.ncols, offsets, cols, vals)?)
            }
            Storage::Csr16 { row_offsets, col_offsets, values } => {
                self.ctx.synchronize()?;
                let offsets = row_offsets.download(self.nrows + 1, self.entry_base, "CSR row offsets")?;
                let cols = narrow::download_csr_offsets(col_offsets, &offsets, "CSR column offsets")?;
                let vals = download(values.as_ref(), self.nnz, "CSR values")?;
                Ok(CsrMatrix::try_from_parts(self.nrows, self.ncols, offsets, cols, vals)?)
            }
            Storage::Parts(parts) => {
                let parts = parts.iter().map(DeviceCsr::download).collect::<Result<Vec<_>>>()?;
                Ok(split::join(&parts))
            }
        }
    }

    /// The ELLPACK matrix the plan stored instead of CSR, if it did.
    pub fn ell(&self) -> Option<&DeviceEll<T>> {
        match &self.storage {
            Storage::Ell(e) => Some(e),
            _ => None,
        }
    }

    /// The device address of every allocation the plan's kernel reads or writes (a CG
    /// recording checks that they are still live before each replay).
    pub(crate) fn device_addresses(&self) -> Vec<u64> {
        fn a<U: cust::memory::DeviceCopy>(m: Option<&DeviceMemory<U>>) -> u64 {
            ptr_of(m).as_raw()
        }
        let mut v = match &self.storage {
            Storage::Csr { row_offsets, col_indices, values, balanced, hot } => {
                let mut v = vec![row_offsets.addr(), a(col_indices.as_ref()), a(values.as_ref())];
                if let Some(h) = hot {
                    v.extend([a(Some(&h.columns)), a(Some(&h.x)), a(Some(&h.counter))]);
                }
                if let Some(b) = balanced {
                    v.extend([a(Some(&b.block_row)), b.block_entry.addr(), a(b.partials.as_ref())]);
                }
                v
            }
            Storage::Csr16 { row_offsets, col_offsets, values } => {
                vec![row_offsets.addr(), a(Some(col_offsets)), a(values.as_ref())]
            }
            Storage::Ell(e) => vec![e.cols_addr(), e.values_ptr().as_raw()],
            Storage::Sell(sl) => vec![
                sl.slice_ptr.addr(),
                a(sl.perm.as_ref()),
                sl.cols.as_ref().map_or(0, SlotCols::addr),
                a(sl.vals.as_ref()),
                sl.chunk_entry.addr(),
                a(sl.long_cols.as_ref()),
                a(sl.long_vals.as_ref()),
                a(sl.long_rows.as_ref()),
                a(sl.partials.as_ref()),
                a(sl.far.as_ref()),
            ],
            Storage::Parts(parts) => parts.iter().flat_map(DeviceCsr::device_addresses).collect(),
        };
        v.retain(|&p| p != 0);
        v
    }

    /// How the matrix is stored on the device: "CSR", "CSR with row blocks" (and hot
    /// columns), "CSR with 16-bit column offsets", "ELLPACK", "SELL-C-sigma" or "CSR in
    /// column parts, each with row blocks" ([`crate::gpu::storage::split`]).
    pub fn storage_name(&self) -> &'static str {
        match &self.storage {
            Storage::Csr { balanced: None, .. } => "CSR",
            Storage::Csr { balanced: Some(_), hot: None, .. } => "CSR with row blocks",
            Storage::Csr { balanced: Some(_), hot: Some(_), .. } => "CSR with row blocks and hot columns",
            Storage::Csr16 { .. } => "CSR with 16-bit column offsets",
            Storage::Ell(_) => "ELLPACK",
            Storage::Sell(_) => "SELL-C-sigma",
            Storage::Parts(_) => "CSR in column parts, each with row blocks",
        }
    }

    /// The device CSR arrays for other CUDA code (cuSPARSE, through FFI), valid while `self`
    /// lives. `None` when the plan stored the matrix as ELLPACK or SELL
    /// ([`ell`](DeviceCsr::ell)), as CSR with hot columns (whose column array holds
    /// flagged slots, [`hot`](crate::gpu::storage::hot)), or as CSR with 16-bit column offsets (the vector
    /// kernel's storage for entries near the diagonal, [`narrow`](crate::gpu::storage::narrow)); upload
    /// with the scalar kernel ([`upload_with`](DeviceCsr::upload_with)), or switch a CSR
    /// upload to it ([`set_kernel`](DeviceCsr::set_kernel)), to get them.
    pub fn csr_ptrs(&self) -> Option<CsrPtrs<T>> {
        match &self.storage {
            Storage::Csr { hot: Some(_), .. } => None,
            _ => self.stored_csr_ptrs(),
        }
    }

    /// The device CSR arrays as stored (flagged columns when the matrix has hot columns).
    fn stored_csr_ptrs(&self) -> Option<CsrPtrs<T>> {
        match &self.storage {
            Storage::Csr { row_offsets, col_indices, values, .. } => Some(CsrPtrs {
                row_offsets: row_offsets.addr(),
                offsets_64_bit: row_offsets.is_wide(),
                col_indices: ptr_of(col_indices.as_ref()),
                values: ptr_of(values.as_ref()),
            }),
            _ => None,
        }
    }

    /// What the CSR kernels are handed: `(64-bit, row offsets, columns, values)` addresses,
    /// the entry arrays moved back by the test-only entry base. `None` unless stored as CSR.
    pub(crate) fn kernel_arrays(&self) -> Option<(bool, u64, u64, u64)> {
        let p = self.stored_csr_ptrs()?;
        let base = self.entry_base;
        Some((
            p.offsets_64_bit,
            p.row_offsets,
            shifted::<u32>(p.col_indices.as_raw(), base),
            shifted::<T>(p.values.as_raw(), base),
        ))
    }

    /// What the vector kernel's narrow variant is handed: `(64-bit, row offsets, column
    /// offsets, values)` addresses, the entry arrays moved back by the test-only entry base.
    /// `None` unless stored as CSR with 16-bit column offsets.
    pub(crate) fn narrow_kernel_arrays(&self) -> Option<(bool, u64, u64, u64)> {
        match &self.storage {
            Storage::Csr16 { row_offsets, col_offsets, values } => Some((
                row_offsets.is_wide(),
                row_offsets.addr(),
                shifted::<u16>(col_offsets.as_device_ptr().as_raw(), self.entry_base),
                shifted::<T>(ptr_of(values.as_ref()).as_raw(), self.entry_base),
            )),
            _ => None,
        }
    }

    /// The column indices widened to `u64`, in new device memory (made on the device): for
    /// libraries that take 64-bit offsets only with 64-bit column indices. `None` when the
    /// matrix is not stored as CSR or has no entries.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when the allocation or the kernel fails.
    pub fn col_indices_64(&self) -> Result<Option<DeviceIndices64>> {
        let Some(p) = self.csr_ptrs().filter(|_| self.nnz > 0) else { return Ok(None) };
        let mem = DeviceMemory::<u64>::uninit(self.ctx, self.nnz, "64-bit column indices")?;
        // SAFETY: the column array holds nnz u32 (nnz > 0), `mem` nnz u64 just allocated and
        // owned here; both are ordered on the context's stream, which is synchronized before
        // `mem` is handed out.
        unsafe { kernels::spmv::widen(self.ctx, p.col_indices.as_raw(), mem.as_device_ptr().as_raw(), self.nnz)? };
        self.ctx.synchronize()?;
        Ok(Some(DeviceIndices64 { mem, len: self.nnz }))
    }
}

impl<T: Scalar> CsrArrays for DeviceCsr<T> {
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.ncols
    }
    fn kernel_arrays(&self) -> Option<(bool, u64, u64, u64)> {
        DeviceCsr::kernel_arrays(self)
    }
    fn narrow_kernel_arrays(&self) -> Option<(bool, u64, u64, u64)> {
        DeviceCsr::narrow_kernel_arrays(self)
    }
    fn entry_base(&self) -> u64 {
        self.entry_base
    }
    fn plain_csr(&self) -> Option<(bool, u64, u64, u64)> {
        self.csr_ptrs().map(|p| (p.offsets_64_bit, p.row_offsets, p.col_indices.as_raw(), p.values.as_raw()))
    }
}

/// 64-bit column indices of a [`DeviceCsr`] in device memory
/// ([`DeviceCsr::col_indices_64`]), freed on drop.
pub struct DeviceIndices64 {
    mem: DeviceMemory<u64>,
    len: usize,
}

impl DeviceIndices64 {
    /// The device address of the `len` indices.
    pub fn addr(&self) -> u64 {
        self.mem.as_device_ptr().as_raw()
    }
    /// Number of indices.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are none (never: a matrix without entries has no such array).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for DeviceIndices64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceIndices64").field("len", &self.len).finish()
    }
}

/// The device CSR arrays of a [`DeviceCsr`] ([`DeviceCsr::csr_ptrs`]), as raw device
/// addresses for other CUDA code.
#[derive(Debug, Clone, Copy)]
pub struct CsrPtrs<T: Scalar> {
    pub(crate) row_offsets: u64,
    pub(crate) offsets_64_bit: bool,
    pub(crate) col_indices: DevicePointer<u32>,
    pub(crate) values: DevicePointer<T>,
}

impl<T: Scalar> CsrPtrs<T> {
    /// Address of the `nrows + 1` row offsets: `u32`, or `u64` when
    /// [`offsets_64_bit`](CsrPtrs::offsets_64_bit).
    pub fn row_offsets(&self) -> u64 {
        self.row_offsets
    }
    /// Whether the offsets are 64-bit (`nnz` past [`INDEX_LIMIT`](crate::INDEX_LIMIT)).
    pub fn offsets_64_bit(&self) -> bool {
        self.offsets_64_bit
    }
    /// Address of the `nnz` `u32` column indices (0 when `nnz == 0`).
    pub fn col_indices(&self) -> u64 {
        self.col_indices.as_raw()
    }
    /// Address of the `nnz` `T` values (0 when `nnz == 0`).
    pub fn values(&self) -> u64 {
        self.values.as_raw()
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
