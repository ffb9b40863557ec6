//! The SpMV heuristic: which kernel runs a matrix, decided once from its row statistics (and,
//! for short even rows, where its columns lie).

use std::fmt;
use std::str::FromStr;

use crate::{CsrMatrix, Error, Result, RowStats, Scalar};

pub(crate) mod balance;
pub(crate) mod hot;
pub(crate) mod narrow;
pub(crate) mod parts;
pub(crate) mod tuning;
pub(crate) mod upload;

pub use tuning::{Tuning, UploadOptions};

/// The thread counts per row that the vector CSR kernel is compiled for.
pub const VECTOR_THREADS_PER_ROW: [u32; 5] = [2, 4, 8, 16, 32];

/// Where a matrix's columns lie, as far as rule 4 of the automatic plan cares
/// ([`SpmvPlan::column_layout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnLayout {
    /// Every entry within 32767 of the diagonal: ELL and SELL store 16-bit offsets
    /// ([`crate::gpu::narrow`]).
    Narrow,
    /// Not narrow, but at least [`crate::gpu::balance::LOCAL_MIN_SHARE`] of the entries within
    /// [`crate::gpu::balance::NEAR_WINDOW`] of the diagonal (a 3D grid's far neighbours).
    Local,
    /// Neither: the columns are scattered (random graphs, random rows).
    Scattered,
}

/// An SpMV kernel, independent of the element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpmvKernel {
    /// CSR, one thread per row (`spmv_csr_scalar_<scalar>`).
    Scalar,
    /// CSR, `threads_per_row` threads per row reduced with warp shuffles
    /// (`spmv_csr_vector_tpr<N>_<scalar>`); one of [`VECTOR_THREADS_PER_ROW`]. When the
    /// launch has at most a GPU's worth of threads, a row of 32 entries per thread or more is
    /// read 4 entries per thread at a time (more loads in flight than its few warps would
    /// otherwise have).
    Vector {
        /// Threads that share a row: 2, 4, 8, 16 or 32.
        threads_per_row: u32,
    },
    /// ELLPACK, column-major, one thread per row (`spmv_ell_<scalar>`).
    Ell,
    /// Load-balanced CSR: row blocks of about equal entry counts made at upload, long rows
    /// split over several blocks (`spmv_csr_balanced_<scalar>`).
    Balanced,
    /// Sliced ELLPACK with rows sorted by length within windows (SELL-C-σ), long rows split
    /// into chunks (`spmv_sell_<scalar>`).
    Sell,
}

impl fmt::Display for SpmvKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpmvKernel::Scalar => write!(f, "csr scalar"),
            SpmvKernel::Vector { threads_per_row } => write!(f, "csr vector ({threads_per_row} threads per row)"),
            SpmvKernel::Ell => write!(f, "ell"),
            SpmvKernel::Balanced => write!(f, "csr balanced"),
            SpmvKernel::Sell => write!(f, "sell"),
        }
    }
}

/// What a user asks for: the heuristic, or a kernel forced by name.
///
/// Parses from `auto`, `scalar`, `vector` (threads per row by the heuristic's rule),
/// `vector:N` (N in 2, 4, 8, 16, 32), `balanced`, `balanced:N` (N threads per row block: 256
/// or 512), `sell` and `ell`.
///
/// ```
/// use spgpu::gpu::KernelChoice;
/// assert_eq!("vector:8".parse::<KernelChoice>()?, KernelChoice::VectorTpr(8));
/// assert_eq!("balanced:512".parse::<KernelChoice>()?, KernelChoice::BalancedThreads(512));
/// assert!("vector:3".parse::<KernelChoice>().is_err());
/// assert!("balanced:300".parse::<KernelChoice>().is_err());
/// # Ok::<(), spgpu::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KernelChoice {
    /// The heuristic of [`SpmvPlan`].
    #[default]
    Auto,
    /// The scalar CSR kernel.
    Scalar,
    /// The vector CSR kernel with the threads per row of the design rule (largest power of two
    /// not above the mean row length, clamped to 2..=warp size).
    Vector,
    /// The vector CSR kernel with this many threads per row.
    VectorTpr(u32),
    /// The ELLPACK kernel: a [`DeviceEll`](crate::gpu::storage::ell::DeviceEll), or a
    /// [`DeviceCsr`](crate::gpu::storage::csr::DeviceCsr) uploaded with this choice (stored as ELLPACK).
    Ell,
    /// The load-balanced CSR kernel.
    Balanced,
    /// The load-balanced CSR kernel with row blocks of this many threads (256 or 512:
    /// [`RowShape::ALL`](crate::gpu::balance::RowShape::ALL)) and no hot columns.
    BalancedThreads(u32),
    /// Sliced ELLPACK (SELL-C-σ) storage and kernel.
    Sell,
}

impl KernelChoice {
    /// The shape of row blocks the choice forces ([`KernelChoice::BalancedThreads`]).
    pub fn row_shape(self) -> Option<crate::gpu::plan::balance::RowShape> {
        match self {
            KernelChoice::BalancedThreads(n) => crate::gpu::plan::balance::RowShape::with_threads(n as usize),
            _ => None,
        }
    }

    /// Every kernel a user can force on a device of this warp size, in a fixed order:
    /// `scalar`, `vector:N` for each compiled N up to the warp size, `balanced`, `sell`, `ell`.
    /// (`balanced:N`, the balanced kernel with a forced row-block shape, is not listed: it
    /// runs the same kernel as `balanced` on other blocks.)
    pub fn forced(warp_size: u32) -> Vec<KernelChoice> {
        let mut v = vec![KernelChoice::Scalar];
        v.extend(VECTOR_THREADS_PER_ROW.iter().filter(|&&t| t <= warp_size).map(|&t| KernelChoice::VectorTpr(t)));
        v.push(KernelChoice::Balanced);
        v.push(KernelChoice::Sell);
        v.push(KernelChoice::Ell);
        v
    }
}

impl FromStr for KernelChoice {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidArgument(format!(
                "unknown kernel {s:?}: expected auto, scalar, vector, vector:N (N = 2, 4, 8, 16 or 32), balanced, \
                 balanced:N (N = 256 or 512), sell or ell"
            ))
        };
        match s {
            "auto" => Ok(KernelChoice::Auto),
            "scalar" => Ok(KernelChoice::Scalar),
            "vector" => Ok(KernelChoice::Vector),
            "ell" => Ok(KernelChoice::Ell),
            "balanced" => Ok(KernelChoice::Balanced),
            "sell" => Ok(KernelChoice::Sell),
            _ if s.starts_with("balanced:") => {
                let n = s["balanced:".len()..].parse::<usize>().map_err(|_| bad())?;
                let shape = crate::gpu::plan::balance::RowShape::with_threads(n).ok_or_else(bad)?;
                Ok(KernelChoice::BalancedThreads(shape.threads as u32))
            }
            _ => {
                let n = s.strip_prefix("vector:").ok_or_else(bad)?.parse::<u32>().map_err(|_| bad())?;
                if VECTOR_THREADS_PER_ROW.contains(&n) {
                    Ok(KernelChoice::VectorTpr(n))
                } else {
                    Err(bad())
                }
            }
        }
    }
}

impl fmt::Display for KernelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelChoice::Auto => write!(f, "auto"),
            KernelChoice::Scalar => write!(f, "scalar"),
            KernelChoice::Vector => write!(f, "vector"),
            KernelChoice::VectorTpr(n) => write!(f, "vector:{n}"),
            KernelChoice::Ell => write!(f, "ell"),
            KernelChoice::Balanced => write!(f, "balanced"),
            KernelChoice::BalancedThreads(n) => write!(f, "balanced:{n}"),
            KernelChoice::Sell => write!(f, "sell"),
        }
    }
}

/// Which SpMV kernel and which device storage run a matrix, and why: the one place where
/// spgpu chooses.
///
/// A plan is made from the matrix's [`RowStats`] and the device's warp size when the matrix
/// is uploaded, and can be made without a GPU (`spgpu info` prints it).
///
/// # The rule (CSR, [`KernelChoice::Auto`])
///
/// Fitted on the H200 with `spgpu bench --suite large` and the 43 SuiteSparse matrices of
/// `../shared/matrices` (f64 and f32, 2026-11-23), then checked on `--suite validate` (other
/// sizes and seeds). That check found two misfits, which the rule now handles (rules 3 and 4:
/// `elast` went to the vector kernel, `longrows:50000` to four threads per row); the
/// corrected rule was run on a third set, which showed that rule 5's first criterion (rows
/// of 64 to 511 entries) also sent `elast` (81 per row) to balanced: rule 5 now counts only
/// rows longer than 4 times the mean. `docs/performance.md` has the runs and says which
/// rule each figure comes from. First match wins (on a small matrix rule 2's skew test
/// comes before rule 1's few rows; both give balanced):
///
/// 1. **No entries: scalar** (it only scales `y`). **Few, long rows: balanced**: when even a
///    warp per row keeps fewer than [`SpmvPlan::FEW_ROWS_THREADS`] threads busy (2816 rows)
///    and a warp would walk more than [`SpmvPlan::FEW_ROWS_STEPS`] (32) steps of the longest
///    row, a warp per row runs at the speed of one warp's loads, while row blocks split the
///    rows over the whole GPU. Found on 2026-11-26 on shapes no rule had seen (H200):
///    `uniform:200:20000000:100000` (200 rows of 100000) took 2298 µs with 32 threads per row
///    against 453 balanced and 431 for cuSPARSE; on a sweep of 12 (100 to 16000 rows of 1000
///    to 40000 entries) balanced won by 1.2-26x up to 2000 rows, and 32 threads per row won
///    from 3000 (`uniform:3000:8000000:3000` f64 87.0 against 147.7 µs). **Unless `x` is
///    large: a warp per row** when there are at least [`SpmvPlan::FEW_ROWS_SWEEP_ROWS`]
///    (1500) rows and `x` takes at least [`SpmvPlan::FEW_ROWS_SWEEP_X_BYTES`] (40 MiB, most
///    of the L2). The warps, one per row, start together and walk their rows' sorted columns
///    at about the same pace, so at any time they read one stretch of `x`, which the L2
///    keeps; row blocks read all of `x` at once, and past the L2 each gather goes to DRAM.
///    Fitted on 2026-11-26 on an H100 (the vector kernel with its loads in flight, session
///    21, which the sweep above predates) on 48 matrices (1000 to 2800 rows of 2000 to 8000
///    entries over 2 to 16 million columns, both precisions): with `x` of 64 MB or more a
///    warp per row took 0.37x-0.96x balanced's time from 1500 rows on
///    (`uniform:2000:8000000:4000` f64 89.5 against 183.6 µs, cuSPARSE 185.3); with 1000
///    rows, or a smaller `x`, it lost up to 1.44x in places. Checked on 16 held-out matrices
///    (other row counts, lengths, widths and seeds, same card): the rule gave a warp per row
///    to 14 of the 32 matrix-precision pairs, each within 1.008x of the faster of the two
///    kernels and 1.43x-2.48x cuSPARSE (balanced: 0.97x-1.09x); the pairs it leaves balanced
///    include some where a warp per row was faster still (up to 2.1x with 1000 rows over
///    160 MB), so the rule is on the safe side. H200 runs are in `docs/gpu-notes.md`. (With
///    fewer than 2816 rows the balanced kernel runs its chunks in chunk-major order,
///    [`RowBlocks::sweep`](crate::gpu::storage::balance::RowBlocks::sweep), which takes most of a large
///    `x`'s cost off it too: against that kernel a warp per row still won above the rule's
///    bounds, 0.99x-1.7x.)
/// 2. **A small matrix** (at most [`SpmvPlan::SMALL_ROWS`] rows, half the resident threads of
///    the GPU, and [`SpmvPlan::SMALL_NNZ`] entries): latency-bound.
///    - **Skewed: balanced.** The longest row exceeds both [`SpmvPlan::SKEW_FACTOR`] (4) times
///      the mean and [`SpmvPlan::SKEW_STEPS`] (8) steps of the fill rule's threads: a vector
///      kernel's warp would walk it alone. In the fit run (f64, graph replay) balanced took
///      3.6 µs against 15 µs with 32 threads per row on `hangGlider_2` (max 1463, mean 9),
///      and 6.4 against 171 µs on `vsp_model1_crew1_cr42_south31` (max 17663).
///    - **Otherwise: vector, filling the GPU** ([`SpmvPlan::fill_threads_per_row`]): the
///      largest power of two `t <= 32` with `rows x t <= FILL_THREADS`, at most the longest
///      row; one thread per row (scalar) when that is 1. In the final run it beat the fastest
///      cuSPARSE variant by 1.28x to 3.73x on the 35 SuiteSparse matrices it was chosen for
///      (f64 and f32). But when that gives fewer than [`SpmvPlan::SMALL_MIN_FILL`] (4)
///      threads per row (more than 67584 rows) and the rows hold at least
///      [`SpmvPlan::SMALL_STORAGE_MIN_MEAN`] (4) entries on average, the matrix follows rules
///      3 to 6 instead: on 2026-11-26 (H200) such matrices of 1 to 4 million entries ran 2
///      threads per row 1.1x to 2.7x slower than ELL or SELL (`uniform:130000:2000000:30`
///      65.4 µs against SELL 33.9, 0.60x cuSPARSE; `lap2d:360` 3.5 against ELL 2.7), while on
///      fewer rows, or rows of 2 (`luxembourg_osm`, 2.4 µs against SELL 3.0), the vector
///      kernel held its own. With 4 threads per row (33793 to 67584 rows) the same holds for
///      rows of at least [`SpmvPlan::SMALL_LONG_MEAN`] (48) entries on average: on the H200,
///      rows of 60 on 35000 to 65000 rows ran ELL or SELL 1.02x to 1.41x faster than 4
///      threads per row; checked only on an H100 so far, on 5 other matrices of 30 to 100 per
///      row (1.04x to 1.44x faster there; `elast:25`, 73 per row, 0.96x). And from
///      [`SpmvPlan::SMALL_MID_MIN_ROWS`] (45000) rows, for rows of
///      [`SpmvPlan::SMALL_MID_MEAN`] (20) to 47 entries whose columns are not narrow
///      ([`SpmvPlan::small_mid_rows`]; the upload looks at the columns): on an H100
///      (2026-11-26, the H200 gave none), random rows of 20 to 44 on 50000 to 66000 rows ran
///      SELL in 0.61x to 0.87x the vector kernel's time, and 14 held-out pairs (rows of 22 to 46
///      on 46000 to 67000 rows) 0.65x to 0.91x; on the H200 (2026-11-26) rows of 27 on 50000
///      rows 0.94x / 0.82x, on 40000 rows a tie. Stencils of 27 per row (narrow
///      columns) ran SELL up to 1.21x slower in `f32` on both cards, so they keep it.
/// 3. **Long, even rows** (mean at least [`SpmvPlan::LONG_MEAN`] = 256, longest at most twice
///    the mean): ELL from [`SpmvPlan::ell_long_min_rows`] rows on (36000 for rows of up to
///    1500 entries in `f64` or 400 in `f32`, more for longer rows: ELL's thread per row
///    takes as long as the longest row, while the vector kernel streams long rows better
///    the longer they are), else the vector kernel with the fill rule's threads per row,
///    16 where that gives fewer than 8, doubled while a thread would walk more than
///    [`SpmvPlan::LONG_ROW_STEPS`] (128) entries ([`SpmvPlan::long_row_threads`]).
///    `longrows:50000`: ELL, 286 µs against 376 for cuSPARSE; `longrows:20000`: 8 threads,
///    123 µs against 155. Refitted on 2026-11-26 on
///    60 matrices of 24000 to 56000 rows of 256 to 2500 entries (f64 and f32, every vector
///    width and ELL), after rows of 2500 on 40000 rows had run ELL 1.7x slower than 32
///    threads per row; on 48 others (28000 to 52000 rows of 320 to 3200) the rule's kernel
///    took 1.012x the fastest one's time in geometric mean, worst 1.115x (the rule before:
///    1.101x, worst 1.648x; `docs/gpu-notes.md`, 2026-11-26). That fit had random columns;
///    where every entry lies within 32767 of the diagonal (wide bands, and rows over fewer
///    than 32768 columns: the upload looks at the columns of long, even rows) the vector
///    kernel runs them, never ELL (`x` comes from the caches; ELL was 2-9x slower on bands),
///    with the most threads per row that leave a row of the mean at least 32 entries per
///    thread ([`SpmvPlan::batched_threads_per_row`]: 8 for rows of 256 to 511, 16 up to
///    1023, then 32), whatever the fill rule gives. The upload then stores the columns as
///    16-bit offsets ([`crate::gpu::narrow`]) and the kernel reads each row 4 entries per thread
///    at a time. On an H100 (2026-11-26; the H200 gave none), fitted on 19 matrices (14
///    bands of 257 to 6001 entries on 4000 to 150000 rows, 5 random rows of 300 to 2000
///    over as many columns) against every width of 4 to 32: 1.022x the fastest width's time
///    in geometric mean (worst 1.43x, `banded:6000:400` f32, 13 µs); on 16 held-out
///    matrices the plan took 0.67x to 0.99x the previous plan's time (0.778x in geometric
///    mean, 32 pairs; with a build whose 16-bit kernels compiled slightly differently), and
///    with the final build the rule's width was the fastest within 1.005x (worst 1.09x,
///    `banded:40000:250` f64) and took 1.21x (`f64`) and 1.20x (`f32`) cuSPARSE's time,
///    worst 0.95x (`banded:40000:250` f64; before: `f32` 0.87x in geometric mean).
/// 4. **Rows of at most 8 entries padding ELL by at most 2%: ELL**
///    ([`SpmvPlan::ELL_AUTO_PADDING`]). `lap2d:2000`: 73.3 µs (102% of copy bandwidth), against
///    81 with SELL and 130 with cuSPARSE. With wider rows SELL's contiguous slices win. Where
///    the upload has looked at the columns ([`SpmvPlan::column_layout`]): even rows of up to
///    [`SpmvPlan::ELL_NARROW_MAX_ROW`] (24) entries all within 32767 of the diagonal run ELL
///    too (16-bit offsets; banded matrices of 9 to 21 entries per row ran ELL 2.5-10% faster
///    than SELL), and even rows of at most 8 entries with scattered columns (random rows) run
///    SELL when `x` takes more than [`SpmvPlan::SCATTERED_MIN_X_BYTES`] (16 MiB): there its
///    slices outran ELL by 6-11% in `f64` and 1-5% in `f32`, while over a smaller `x` ELL won
///    by up to 6% (rows of 8 over 1000 to 200000 columns) or tied (2 to 4 million columns in
///    `f32`, 2 million in `f64`); rows of one entry run ELL (2-3% faster than SELL over 20
///    million columns). Until 2026-11-26 the rule was `f64` only, whatever `x`.
///    Fitted on 2026-11-26 on 11 matrices (random rows of 3 to 12, bands of 3 to 21 per row);
///    on 10 others (random rows of 2 to 7, bands of 11 to 23, `lap3d:190`, `lap2d:2500`) the
///    rule's kernel took 1.009x the faster of ELL and SELL in geometric mean (before:
///    1.030x).
/// 5. **Few entries in tail rows: SELL-C-σ.** When rows longer than 4 times the mean of the
///    rows below 512 entries ([`SpmvPlan::slice_mean`]), but below 512 entries, hold at most
///    [`SpmvPlan::SELL_MAX_TAIL`] (0.5%) of the entries ([`SpmvPlan::tail_fraction`], estimated
///    from the histogram),
///    sliced ELL with rows sorted within windows streams the short rows like ELL without its
///    padding, and splits rows past 512 entries into chunks: `stencil27:100` 80 µs (99%),
///    `elast:65` 188 µs (99%), `geo:4000000` 184 µs (90%), `circuit:3000000` 103 µs. The
///    upload falls back to rule 6 when the slices would store more than
///    [`SpmvPlan::SELL_MAX_PADDING`] slots per entry. The mean leaves out the rows SELL
///    chunks since 2026-11-26: R-MAT graphs of 64 to 256 entries per row, two thirds of their
///    entries in rows past 512, went to SELL and ran 1.4-1.9x slower than balanced. And
///    when those rows hold more than [`SpmvPlan::SELL_MAX_CHUNKED`] (half) of the entries
///    ([`SpmvPlan::chunked_fraction`]), balanced runs them better than SELL's chunks:
///    `rmat:16:1000` (88% of its entries in them) ran SELL 1.53x (f64) and 1.15x (f32)
///    slower than balanced; the circuit-like matrices (14%) keep SELL. Where the balanced
///    kernel would keep hot columns (SELL keeps none), the upload counts the columns and
///    runs it instead: the transposes of power-law graphs ran SELL 1.14x-1.26x slower
///    (H200, 2026-11-27; `crate::gpu::storage::hot::hot_columns_for`). And where `x` takes more than half
///    the L2 (rows of 8 or more; 60% for shorter rows) on scattered, spread columns without
///    hot columns, the balanced kernel runs in column parts instead (rule 6).
/// 6. **Otherwise: balanced**, whose time follows the entry count whatever the row lengths
///    (power-law, R-MAT and web-like graphs: `powerlaw:1000000` 113 µs against 553 with a
///    warp per row; cuSPARSE takes 109 there: on random columns both are bound by the
///    gathers of `x`). When a few columns are read by many rows, the upload also gives it
///    **hot columns** (their `x` in shared memory; the rule is in [`crate::gpu::hot`]):
///    `rmat:21:16` 264.8 -> 229.5 µs (f64), 1.08x cuSPARSE in the bench run. Otherwise,
///    on a matrix of more than [`SpmvPlan::SMALL_NNZ`] entries with at least a quarter of
///    them within 2048 columns of the diagonal, its row blocks are twice as large
///    ([`crate::gpu::balance::choose_shape`]): web-like graphs 2-3% faster (`web:4000000` f64
///    350.9 -> 341.5 µs). Fitted on `web:4000000` (43% near the diagonal) and the power-law
///    matrices of `large` (0.1%), checked on `web:3000000:11` (`validate`) and
///    `web:2000000:5` (`check`), 2026-11-26.
///    Whatever the shape of the blocks (in row order, with or without hot columns; blocks in
///    chunk-major order have no such variant), when `x` takes 40% to 65% of the device's L2
///    (to 85% in blocks of 512 threads, whose columns lie near each other) the kernel
///    gathers it with a 128-byte L2 prefetch ([`crate::gpu::balance::prefetch_x`], where the rule was
///    fitted on the H100 and checked on the H200): `powerlaw:4000000` f64 488.4 -> 468.3 µs
///    and `web:4000000` f64 338.7 -> 334.3 on the H200, 8 held-out pairs there 0.955x-0.993x
///    (11 pairs of the fit sets' matrices 0.945x-0.987x), and no change outside the window. No
///    extra memory. Where `x` takes more than 60% of the L2, the columns are scattered and
///    spread (most entries not in a few columns), the rows hold 1.9 entries or more on
///    average and no hot columns are kept, the upload cuts the matrix into **column parts**
///    of at most half the L2 each, run one after the other ([`crate::gpu::split`]): power-law
///    graphs of 6 to 12 million rows in `f64` took 0.49x-0.71x the one-pass time on the
///    H200 (2026-11-27). So do the matrices rule 5 gives SELL (uniformly random rows), from
///    50% of the L2 where their rows hold 8 or more: 0.51x-1.01x SELL's time on 20 held-out
///    pairs, 1.06x-1.87x cuSPARSE (H200, 2026-11-27).
///
/// ELL and SELL store each column as its 16-bit offset from the row when every entry lies
/// within 32767 of the diagonal ([`crate::gpu::narrow`]): 2 bytes less per slot, 8-16% faster on
/// the grids and meshes of rules 4 and 5, whose times above are with 32-bit columns
/// (`stencil27:100` 81.2 -> 69.4 µs, `lap2d:2000` 73.4 -> 67.6 µs, f64). SELL does so also
/// when the other entries of its short rows lie in at most 255 far columns, reached through
/// a table (circuit-like matrices: 14-20% fewer bytes, up to 4% faster on an H100).
///
/// The plan's storage costs device memory beyond the CSR arrays only for SELL (its padding,
/// at most [`SpmvPlan::SELL_MAX_PADDING`] - 1 of the entries' bytes) and balanced (its row
/// blocks: 8 bytes per 2048 entries; hot columns: 12 bytes per hot column); [`DeviceCsr::device_bytes`](crate::gpu::storage::csr::DeviceCsr::device_bytes)
/// gives the total and [`SpmvPlan::explain`] says it once the matrix is uploaded.
///
/// # Example
///
/// ```
/// use spgpu::gpu::{SpmvKernel, SpmvPlan};
/// use spgpu::RowStats;
/// // a million rows of 5: ELL
/// let big = RowStats::from_lengths(std::iter::repeat(5).take(1_000_000), 1_000_000);
/// assert_eq!(SpmvPlan::from_stats::<f64>(&big, 32).kernel(), SpmvKernel::Ell);
/// // a million rows of 27 to 30: SELL
/// let wide = RowStats::from_lengths((0..1_000_000).map(|i| 27 + i % 4), 1_000_000);
/// assert_eq!(SpmvPlan::from_stats::<f64>(&wide, 32).kernel(), SpmvKernel::Sell);
/// // 2000 rows of 27 cannot fill the GPU with eight threads per row: 32
/// let small = RowStats::from_lengths(std::iter::repeat(27).take(2000), 2000);
/// assert_eq!(SpmvPlan::from_stats::<f64>(&small, 32).kernel(), SpmvKernel::Vector { threads_per_row: 32 });
/// println!("{}", SpmvPlan::from_stats::<f64>(&small, 32).explain());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SpmvPlan {
    kernel: SpmvKernel,
    choice: KernelChoice,
    warp_size: u32,
    /// The element type the plan was made for (`"f32"` or `"f64"`).
    values: &'static str,
    nrows: usize,
    nnz: usize,
    mean: f64,
    max: usize,
    reason: String,
    memory: Option<(usize, usize)>,
    /// What the upload found about hot columns ([`crate::gpu::hot`]), when it uses them.
    hot: Option<String>,
    /// Why the upload counted the columns and kept none hot, when it did.
    no_hot: Option<String>,
    /// Why the balanced kernel gathers `x` with the L2 prefetch hint, when it does
    /// ([`crate::gpu::balance::prefetch_x`]).
    prefetch_x: Option<String>,
    /// Whether the ELL or SELL slots, or the vector kernel's CSR columns, store 16-bit column
    /// offsets ([`crate::gpu::narrow`]).
    narrow: bool,
    /// How many far columns the narrow SELL slots reach through a table
    /// ([`crate::gpu::narrow::far_columns`]).
    far: usize,
    /// The shape of the balanced kernel's row blocks and why ([`crate::gpu::balance::choose_shape`]),
    /// when it runs without hot columns.
    blocks: Option<(crate::gpu::plan::balance::RowShape, String)>,
    /// How many column parts the balanced kernel runs in and why ([`crate::gpu::split`]), when
    /// more than one.
    parts: Option<(usize, String)>,
    /// The overrides the upload planned with ([`Tuning`]; none for a plan made from
    /// statistics alone).
    tuning: Tuning,
}

impl SpmvPlan {
    /// Rule 2 applies to matrices of at most this many rows (half of [`Self::FILL_THREADS`])...
    pub const SMALL_ROWS: usize = Self::FILL_THREADS / 2;
    /// ...and at most this many entries (their working set fits the L2: latency-bound).
    pub const SMALL_NNZ: usize = 1 << 22;
    /// Rule 2 runs the fill rule's vector kernel while it gives at least this many threads
    /// per row (at most 67584 rows)...
    pub const SMALL_MIN_FILL: u32 = 4;
    /// ...or the rows are shorter than this on average; otherwise a small matrix follows the
    /// storage rules of larger ones (3 to 6).
    pub const SMALL_STORAGE_MIN_MEAN: f64 = 4.0;
    /// With exactly [`Self::SMALL_MIN_FILL`] threads per row (33793 to 67584 rows), a small
    /// matrix follows the storage rules when its rows hold at least this many entries on
    /// average.
    pub const SMALL_LONG_MEAN: f64 = 48.0;
    /// With exactly [`Self::SMALL_MIN_FILL`] threads per row, a small matrix of at least
    /// [`Self::SMALL_MID_MIN_ROWS`] rows also follows the storage rules when its rows hold at
    /// least this many entries on average and its columns are not narrow (all within 32767
    /// of the diagonal, [`ColumnLayout::Narrow`]: stencils and bands, where the vector kernel
    /// held its own)...
    pub const SMALL_MID_MEAN: f64 = 20.0;
    /// ...from this many rows on.
    pub const SMALL_MID_MIN_ROWS: usize = 45_000;
    /// Rule 3: ELL runs long, even rows from this many rows on (one thread per row: its time
    /// follows the longest row, the vector kernel's the entry count), when the mean row is
    /// at most the knee ([`Self::ELL_LONG_KNEE_F64`], [`Self::ELL_LONG_KNEE_F32`]); longer
    /// rows need more ([`Self::ell_long_min_rows`]).
    pub const ELL_LONG_MIN_ROWS: usize = 36_000;
    /// Rule 3: the mean row length past which the vector kernel needs more `f64` rows to
    /// lose to ELL: [`Self::ELL_LONG_SLOPE_F64`] more rows per doubling of the mean.
    pub const ELL_LONG_KNEE_F64: f64 = 1500.0;
    /// Rule 3: as [`Self::ELL_LONG_KNEE_F64`], for `f32` values.
    pub const ELL_LONG_KNEE_F32: f64 = 400.0;
    /// Rule 3: rows added to [`Self::ELL_LONG_MIN_ROWS`] per doubling of the mean past the
    /// knee, `f64` values.
    pub const ELL_LONG_SLOPE_F64: f64 = 10_000.0;
    /// Rule 3: rows added to [`Self::ELL_LONG_MIN_ROWS`] per doubling of the mean past the
    /// knee, `f32` values.
    pub const ELL_LONG_SLOPE_F32: f64 = 8_000.0;
    /// Rule 3: on long, even rows the vector kernel gets enough threads per row that none
    /// walks more than this many entries of its row (at least the fill rule's count)...
    pub const LONG_ROW_STEPS: f64 = 128.0;
    /// ...and at least this many where the fill rule gives fewer than 8 (about 34000 rows or
    /// more).
    pub const LONG_ROW_THREADS: u32 = 16;
    /// Rule 2: rows are skewed when the longest exceeds this many times the mean...
    pub const SKEW_FACTOR: f64 = 4.0;
    /// ...and this many steps of the fill rule's threads per row.
    pub const SKEW_STEPS: usize = 8;
    /// Rules 3 and 4: the most ELL may pad (slots per entry) for the auto plan to choose it.
    pub const ELL_AUTO_PADDING: f64 = 1.02;
    /// Rule 4: the longest row of short rows ELL is chosen for...
    pub const ELL_AUTO_MAX_ROW: usize = 8;
    /// ...and of even rows whose every entry lies within 32767 of the diagonal (ELL stores
    /// them as 16-bit offsets, [`crate::gpu::narrow`]), when the upload has checked that.
    pub const ELL_NARROW_MAX_ROW: usize = 24;
    /// Rule 3: the mean row length from which even rows are long.
    pub const LONG_MEAN: f64 = 256.0;
    /// Rule 1: rows are few when even 32 threads per row (a warp) would keep fewer threads
    /// busy than this, a third of [`Self::FILL_THREADS`] (2816 rows)...
    pub const FEW_ROWS_THREADS: usize = Self::FILL_THREADS / 3;
    /// ...and they are long when a warp would walk more than this many steps of the longest
    /// (more than 1024 entries at 32 threads per row).
    pub const FEW_ROWS_STEPS: usize = 32;
    /// Rule 1: few, long rows run a warp per row instead of balanced when there are at least
    /// this many rows and `x` takes at least [`Self::FEW_ROWS_SWEEP_X_BYTES`]...
    pub const FEW_ROWS_SWEEP_ROWS: usize = 1500;
    /// ...40 MiB, most of an H100's or H200's L2 (see [`Self::FEW_ROWS_SWEEP_ROWS`]).
    pub const FEW_ROWS_SWEEP_X_BYTES: usize = 40 << 20;
    /// Rule 4: scattered rows run SELL only when `x` takes more than this many bytes
    /// (16 MiB); with a smaller `x` ELL was as fast or faster.
    pub const SCATTERED_MIN_X_BYTES: usize = 16 << 20;
    /// Rule 5: the largest fraction of entries in tail rows ([`Self::tail_fraction`]) for SELL.
    ///
    /// A tail row sits in its window's first slice, whose warp walks it one slot after the
    /// other (a column load, then its gather) while the other warps stream: a few hundred
    /// slots set the kernel's time. Every matrix SELL won on in the fit sets had no tail
    /// (0.0%); web-like in-link matrices (`transpose:web`, 1.8% of their entries in rows of
    /// 48 to 511 among rows of 12) ran SELL 1.18x-1.55x slower than balanced and 0.67x-0.87x
    /// cuSPARSE on the H200 (2026-11-27), Nsight Compute showing SELL's warps waiting
    /// on their loads (153 cycles per instruction issued against 43, the L2 at 69% of its
    /// throughput against 93%). The bound was 2% until then, with no matrix measured
    /// between 0% and 35%; 0.5% sends that class to balanced and no matrix of the bench sets
    /// changes kernel. Fitted on one class (other sizes and seeds of it checked).
    pub const SELL_MAX_TAIL: f64 = 0.005;
    /// Rule 5: rows of this many entries or more are SELL's chunked rows
    /// ([`Self::chunked_fraction`], [`Self::slice_mean`]; SELL chunks rows past 512).
    pub const CHUNKED_ROW: usize = 512;
    /// Rule 5: SELL only when the rows it splits into chunks (512 entries or more) hold at
    /// most this fraction of the entries ([`Self::chunked_fraction`]).
    pub const SELL_MAX_CHUNKED: f64 = 0.5;
    /// Rule 5: tail rows are longer than this many times the mean of the rows SELL keeps in
    /// slices ([`Self::slice_mean`]).
    pub const TAIL_FACTOR: f64 = 4.0;
    /// Rows times threads per row that fill the GPU: the H200's resident threads (132
    /// multiprocessors x 2048). Below it, the auto plan gives the vector kernel more threads
    /// per row (rule 2).
    pub const FILL_THREADS: usize = 132 * 2048;
    /// ELL is recommended when it stores at most this many slots per stored entry.
    pub const ELL_MAX_PADDING: f64 = 1.25;
    /// SELL is refused when its slices would store more than this many slots per entry.
    pub const SELL_MAX_PADDING: f64 = 1.2;

    /// The automatic plan for a CSR matrix of `T` values with these statistics on a device of
    /// this warp size (32 on NVIDIA GPUs).
    pub fn from_stats<T: Scalar>(stats: &RowStats, warp_size: u32) -> SpmvPlan {
        Self::with_choice::<T>(stats, warp_size, KernelChoice::Auto).expect("the automatic plan always applies to CSR")
    }

    /// The plan for a CSR matrix with a kernel chosen by the user, or by the heuristic for
    /// [`KernelChoice::Auto`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a threads-per-row count that is not one of
    /// [`VECTOR_THREADS_PER_ROW`] or exceeds the warp size.
    pub fn with_choice<T: Scalar>(stats: &RowStats, warp_size: u32, choice: KernelChoice) -> Result<SpmvPlan> {
        Self::with_columns::<T>(stats, warp_size, choice, None)
    }

    /// The plan of a matrix kept in the arrays it was made in on the device (the levels of
    /// an AMG hierarchy built on the GPU, `made` saying which): the automatic rule's kernel
    /// when it is a CSR kernel (scalar or vector), or ELL when `ell` says its slots can be
    /// made on the device; otherwise the vector kernel with the design rule's threads per
    /// row, since SELL and the balanced kernel's row blocks are made from a host copy of the
    /// matrix, which such a matrix never has.
    pub(crate) fn for_csr_arrays<T: Scalar>(stats: &RowStats, warp_size: u32, made: &str, ell: bool) -> SpmvPlan {
        let (kernel, reason) = Self::auto(stats, warp_size, T::BYTES, None);
        let mut plan = Self::with_columns::<T>(stats, warp_size, KernelChoice::Scalar, None)
            .expect("the scalar kernel always applies");
        match kernel {
            SpmvKernel::Scalar | SpmvKernel::Vector { .. } => {
                plan.kernel = kernel;
                plan.reason = format!("{made}: {reason}");
            }
            SpmvKernel::Ell if ell => {
                plan.kernel = kernel;
                plan.reason = format!("{made}: {reason}; the slots made on the device from its CSR arrays");
            }
            other => {
                let design = Self::design_threads_per_row(stats.mean, warp_size);
                plan.kernel = SpmvKernel::Vector { threads_per_row: design };
                plan.reason = format!(
                    "{made}, kept in the CSR arrays the device made: the vector kernel with {design} threads per row \
                     by the design rule (mean {:.2}); the automatic rule would run {other} ({reason}), whose storage \
                     is made from a host copy{}",
                    stats.mean,
                    if other == SpmvKernel::Ell { " or, with memory to spare, on the device" } else { "" }
                );
            }
        }
        plan.choice = KernelChoice::Auto;
        plan
    }

    /// What rules 2 to 4 of the automatic plan need to know about `a`'s columns
    /// ([`ColumnLayout`]), found (a parallel pass over the columns, which stops at the first
    /// entry farther than 32767 from the diagonal, and a sample of rows) only for
    /// [`KernelChoice::Auto`] and the matrices those rules look at: even rows short enough
    /// for rule 4 (at most [`Self::ELL_NARROW_MAX_ROW`] entries, ELL padding at most
    /// [`Self::ELL_AUTO_PADDING`]), rule 2's mid-length rows ([`Self::small_mid_rows`]) and
    /// rule 3's long, even rows ([`Self::long_even_rows`]); `None` otherwise. Never
    /// [`ColumnLayout::Narrow`] with narrow columns turned off ([`Tuning::narrow_columns`]).
    /// `stats` are `a`'s.
    /// [`DeviceCsr::upload`](crate::gpu::storage::csr::DeviceCsr::upload) plans with it.
    pub fn column_layout<T: Scalar>(
        a: &CsrMatrix<T>,
        stats: &RowStats,
        choice: KernelChoice,
        tuning: &Tuning,
    ) -> Option<ColumnLayout> {
        let even = stats.nnz > 0
            && stats.max <= Self::ELL_NARROW_MAX_ROW
            && stats.max as f64 * stats.nrows as f64 <= Self::ELL_AUTO_PADDING * stats.nnz as f64;
        if choice != KernelChoice::Auto || !(even || Self::small_mid_rows(stats, 32) || Self::long_even_rows(stats)) {
            return None;
        }
        // with narrow columns turned off (`SPGPU_NARROW_COLUMNS=0`) no matrix is narrow, but
        // scattered ones are still told from local ones
        Some(if tuning.narrow_allowed() && narrow::fits(a.row_offsets(), a.col_indices(), usize::MAX) {
            ColumnLayout::Narrow
        } else if balance::near_diagonal_share(a.row_offsets(), a.col_indices()) >= balance::LOCAL_MIN_SHARE {
            ColumnLayout::Local
        } else {
            ColumnLayout::Scattered
        })
    }

    /// [`with_choice`](SpmvPlan::with_choice), knowing where the columns lie (`columns`,
    /// [`SpmvPlan::column_layout`]; `None`: not looked at). Rule 4 uses it: ELL for even rows
    /// of up to [`Self::ELL_NARROW_MAX_ROW`] entries when they are narrow, SELL for even rows
    /// of 2 to [`Self::ELL_AUTO_MAX_ROW`] entries when they are scattered over an `x` of more
    /// than [`Self::SCATTERED_MIN_X_BYTES`].
    ///
    /// # Errors
    ///
    /// As [`with_choice`](SpmvPlan::with_choice).
    ///
    /// ```
    /// use spgpu::gpu::{ColumnLayout, KernelChoice, SpmvKernel, SpmvPlan};
    /// use spgpu::RowStats;
    /// let auto = KernelChoice::Auto;
    /// // four million rows of 17 (a band): SELL from the statistics alone, ELL when narrow
    /// let band = RowStats::from_lengths(std::iter::repeat(17).take(4_000_000), 4_000_000);
    /// assert_eq!(SpmvPlan::from_stats::<f64>(&band, 32).kernel(), SpmvKernel::Sell);
    /// let narrow = SpmvPlan::with_columns::<f64>(&band, 32, auto, Some(ColumnLayout::Narrow))?;
    /// assert_eq!(narrow.kernel(), SpmvKernel::Ell);
    /// // four million rows of 4 random columns: ELL, but SELL when known scattered over an x
    /// // past 16 MiB (32 MB in f64; the 16 MB of f32 are not past it)
    /// let short = RowStats::from_lengths(std::iter::repeat(4).take(4_000_000), 4_000_000);
    /// assert_eq!(SpmvPlan::from_stats::<f64>(&short, 32).kernel(), SpmvKernel::Ell);
    /// let scattered = Some(ColumnLayout::Scattered);
    /// assert_eq!(SpmvPlan::with_columns::<f64>(&short, 32, auto, scattered)?.kernel(), SpmvKernel::Sell);
    /// assert_eq!(SpmvPlan::with_columns::<f32>(&short, 32, auto, scattered)?.kernel(), SpmvKernel::Ell);
    /// // near the diagonal but not narrow (a large 3D grid): ELL
    /// let local = Some(ColumnLayout::Local);
    /// assert_eq!(SpmvPlan::with_columns::<f64>(&short, 32, auto, local)?.kernel(), SpmvKernel::Ell);
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn with_columns<T: Scalar>(
        stats: &RowStats,
        warp_size: u32,
        choice: KernelChoice,
        columns: Option<ColumnLayout>,
    ) -> Result<SpmvPlan> {
        let design = Self::design_threads_per_row(stats.mean, warp_size);
        let (kernel, reason) = match choice {
            KernelChoice::Auto => Self::auto(stats, warp_size, T::BYTES, columns),
            KernelChoice::Scalar => (SpmvKernel::Scalar, "forced by the user".to_string()),
            KernelChoice::Vector => (
                SpmvKernel::Vector { threads_per_row: design },
                format!("forced by the user; {design} threads per row by the design rule (mean {:.2})", stats.mean),
            ),
            KernelChoice::VectorTpr(n) => {
                if !VECTOR_THREADS_PER_ROW.contains(&n) || n > warp_size {
                    return Err(Error::InvalidArgument(format!(
                        "{n} threads per row: the vector kernel takes 2, 4, 8, 16 or 32, at most the warp size \
                         ({warp_size})"
                    )));
                }
                (SpmvKernel::Vector { threads_per_row: n }, "forced by the user".to_string())
            }
            KernelChoice::Balanced => (SpmvKernel::Balanced, "forced by the user".to_string()),
            KernelChoice::BalancedThreads(n) => {
                if crate::gpu::plan::balance::RowShape::with_threads(n as usize).is_none() {
                    return Err(Error::InvalidArgument(format!(
                        "row blocks of {n} threads: the balanced kernel takes 256 or 512"
                    )));
                }
                (SpmvKernel::Balanced, format!("forced by the user, row blocks of {n} threads"))
            }
            KernelChoice::Sell => (SpmvKernel::Sell, "forced by the user: stored as SELL-C-sigma".to_string()),
            KernelChoice::Ell => (SpmvKernel::Ell, "forced by the user: stored as ELLPACK".to_string()),
        };
        Ok(SpmvPlan {
            kernel,
            choice,
            warp_size,
            values: T::NAME,
            nrows: stats.nrows,
            nnz: stats.nnz,
            mean: stats.mean,
            max: stats.max,
            reason,
            memory: None,
            hot: None,
            no_hot: None,
            prefetch_x: None,
            narrow: false,
            far: 0,
            blocks: None,
            parts: None,
            tuning: Tuning::default(),
        })
    }

    /// The automatic choice and its reason (the rule in the type docs).
    fn auto(
        stats: &RowStats,
        warp_size: u32,
        value_bytes: usize,
        columns: Option<ColumnLayout>,
    ) -> (SpmvKernel, String) {
        let fill = Self::fill_threads_per_row(stats, warp_size);
        if stats.nnz == 0 {
            return (SpmvKernel::Scalar, "no entries: y is only scaled".to_string());
        }
        let few_long = Self::few_long_rows(stats, warp_size, value_bytes);
        if stats.nrows <= Self::SMALL_ROWS && stats.nnz <= Self::SMALL_NNZ {
            let steps = stats.max.div_ceil(fill as usize);
            if stats.max as f64 > Self::SKEW_FACTOR * stats.mean && steps > Self::SKEW_STEPS {
                return (
                    SpmvKernel::Balanced,
                    format!(
                        "a small matrix ({} rows, {} entries) with skewed rows: the longest ({}) exceeds {} x the \
                         mean ({:.2}) and {} steps of {fill} threads, so row blocks of equal entry counts balance \
                         the work",
                        stats.nrows,
                        stats.nnz,
                        stats.max,
                        Self::SKEW_FACTOR,
                        stats.mean,
                        Self::SKEW_STEPS
                    ),
                );
            }
            if let Some(few) = few_long {
                return few;
            }
            let storage = stats.mean >= Self::SMALL_STORAGE_MIN_MEAN
                && (fill < Self::SMALL_MIN_FILL
                    || (fill == Self::SMALL_MIN_FILL && stats.mean >= Self::SMALL_LONG_MEAN)
                    || (Self::small_mid_rows(stats, warp_size)
                        && matches!(columns, Some(ColumnLayout::Local | ColumnLayout::Scattered))));
            if !storage {
                return Self::fill_rule(stats, fill, "a small matrix, latency-bound");
            }
            // many rows of 4 or more entries: the storage rules of larger matrices below
        }
        if let Some(few) = few_long {
            return few;
        }
        let pad = stats.max as f64 * stats.nrows as f64 / stats.nnz as f64;
        if Self::long_even_rows(stats) {
            if columns == Some(ColumnLayout::Narrow) {
                let t = Self::batched_threads_per_row(stats.mean, warp_size);
                return (
                    SpmvKernel::Vector { threads_per_row: t },
                    format!(
                        "long, even rows (mean {:.2} >= {}) on {} rows, every entry within 32767 of the diagonal: \
                         {t} threads per row, the most that still read a row of the mean 4 entries per thread at a \
                         time, from 16-bit column offsets (x comes from the caches; the fill rule gives {fill})",
                        stats.mean,
                        Self::LONG_MEAN,
                        stats.nrows,
                    ),
                );
            }
            let min_rows = Self::ell_long_min_rows(stats.mean, value_bytes);
            if stats.nrows >= min_rows && pad <= Self::ELL_AUTO_PADDING {
                return (
                    SpmvKernel::Ell,
                    format!(
                        "long, even rows (mean {:.2} >= {}, longest {} <= 2 x mean) and {} rows (>= {min_rows} \
                         for this mean and {value_bytes}-byte values): ELL, padding {pad:.3} slots per entry",
                        stats.mean,
                        Self::LONG_MEAN,
                        stats.max,
                        stats.nrows,
                    ),
                );
            }
            let t = Self::long_row_threads(stats.mean, fill, warp_size);
            if t > fill {
                return (
                    SpmvKernel::Vector { threads_per_row: t },
                    format!(
                        "long, even rows (mean {:.2} >= {}) on {} rows, ELL padding {pad:.3} (ELL takes at least \
                         {min_rows} rows for this mean and {value_bytes}-byte values, and padding <= {}): {t} threads \
                         per row (the fill rule gives {fill}; at least {} where it gives fewer than 8, and none \
                         walks more than {} entries of its row, within the warp)",
                        stats.mean,
                        Self::LONG_MEAN,
                        stats.nrows,
                        Self::ELL_AUTO_PADDING,
                        Self::LONG_ROW_THREADS,
                        Self::LONG_ROW_STEPS
                    ),
                );
            }
            return Self::fill_rule(stats, fill, "long, even rows on few rows");
        }
        if pad <= Self::ELL_AUTO_PADDING
            && stats.max <= Self::ELL_AUTO_MAX_ROW
            && columns == Some(ColumnLayout::Scattered)
            && stats.max > 1
            && stats.ncols.saturating_mul(value_bytes) > Self::SCATTERED_MIN_X_BYTES
        {
            return (
                SpmvKernel::Sell,
                format!(
                    "{} rows of at most {} entries with scattered columns (fewer than {:.0}% within {} of the \
                     diagonal) over an x of {:.1} MiB (more than {} MiB): SELL-C-sigma (its slices outran ELL \
                     by 1-11% there)",
                    stats.nrows,
                    stats.max,
                    100.0 * crate::gpu::plan::balance::LOCAL_MIN_SHARE,
                    crate::gpu::plan::balance::NEAR_WINDOW,
                    stats.ncols.saturating_mul(value_bytes) as f64 / (1u64 << 20) as f64,
                    Self::SCATTERED_MIN_X_BYTES >> 20
                ),
            );
        }
        if pad <= Self::ELL_AUTO_PADDING
            && stats.max <= Self::ELL_NARROW_MAX_ROW
            && columns == Some(ColumnLayout::Narrow)
        {
            return (
                SpmvKernel::Ell,
                format!(
                    "{} rows of at most {} entries, every one within {} of the diagonal, ELL pads {pad:.3} slots per \
                     entry (<= {}): ELL streams 16-bit column offsets and values with no row offsets",
                    stats.nrows,
                    stats.max,
                    crate::gpu::plan::narrow::MAX_OFFSET,
                    Self::ELL_AUTO_PADDING
                ),
            );
        }
        if pad <= Self::ELL_AUTO_PADDING && stats.max <= Self::ELL_AUTO_MAX_ROW {
            return (
                SpmvKernel::Ell,
                format!(
                    "{} rows of at most {} entries, ELL pads {pad:.3} slots per entry (<= {}): ELL streams \
                     columns and values with no row offsets",
                    stats.nrows,
                    stats.max,
                    Self::ELL_AUTO_PADDING
                ),
            );
        }
        let tail = Self::tail_fraction(stats);
        let chunked = Self::chunked_fraction(stats);
        if chunked > Self::SELL_MAX_CHUNKED {
            return (
                SpmvKernel::Balanced,
                format!(
                    "rows of 512 entries or more hold {:.1}% of the entries (more than {:.0}%): row blocks of \
                     equal entry counts (long rows split over several blocks) run them faster than SELL's chunks",
                    100.0 * chunked,
                    100.0 * Self::SELL_MAX_CHUNKED
                ),
            );
        }
        let bound = Self::TAIL_FACTOR * Self::slice_mean(stats);
        let tail_rows = if bound >= (Self::CHUNKED_ROW - 1) as f64 {
            format!("no row up to 511 entries is longer than 4 x their mean ({bound:.0}), so none")
        } else {
            format!("rows of {bound:.0} (4 x the mean of the rows up to 511 entries) to 511 entries")
        };
        if tail <= Self::SELL_MAX_TAIL {
            return (
                SpmvKernel::Sell,
                format!(
                    "{tail_rows} hold about {:.1}% of the entries (<= {}%): SELL-C-sigma streams the rows like \
                     ELL without its padding, rows past 512 entries go in chunks",
                    100.0 * tail,
                    100.0 * Self::SELL_MAX_TAIL
                ),
            );
        }
        (
            SpmvKernel::Balanced,
            format!(
                "{tail_rows} hold about {:.1}% of the entries (> {}%): row blocks of equal entry counts (long rows \
                 split over several blocks) balance the work",
                100.0 * tail,
                100.0 * Self::SELL_MAX_TAIL
            ),
        )
    }

    /// Rule 1's second part: balanced when the rows are few and long, unless `x` is large
    /// enough for a warp per row (see the type docs).
    fn few_long_rows(stats: &RowStats, warp_size: u32, value_bytes: usize) -> Option<(SpmvKernel, String)> {
        // the vector kernel's widest group: a warp (at most 32 threads, a power of two)
        let warp = 1usize << warp_size.clamp(2, 32).ilog2();
        if stats.nrows.saturating_mul(warp) >= Self::FEW_ROWS_THREADS || stats.max <= Self::FEW_ROWS_STEPS * warp {
            return None;
        }
        let x_bytes = stats.ncols.saturating_mul(value_bytes);
        let mib = |b: usize| b as f64 / (1u64 << 20) as f64;
        let few = format!(
            "few, long rows: {} rows x {warp} threads keep fewer than {} threads busy, and a warp would walk {} \
             steps (more than {}) of the longest row ({} entries)",
            stats.nrows,
            Self::FEW_ROWS_THREADS,
            stats.max.div_ceil(warp),
            Self::FEW_ROWS_STEPS,
            stats.max
        );
        if stats.nrows >= Self::FEW_ROWS_SWEEP_ROWS && x_bytes >= Self::FEW_ROWS_SWEEP_X_BYTES {
            return Some((
                SpmvKernel::Vector { threads_per_row: warp as u32 },
                format!(
                    "{few}, but {} rows or more over an x of {:.1} MiB (at least {:.0} MiB): a warp per row, whose \
                     warps walk their rows' columns in step and so read each part of x from DRAM about once, where \
                     row blocks read all of x at once and miss the L2",
                    Self::FEW_ROWS_SWEEP_ROWS,
                    mib(x_bytes),
                    mib(Self::FEW_ROWS_SWEEP_X_BYTES),
                ),
            ));
        }
        Some((
            SpmvKernel::Balanced,
            format!("{few}: row blocks of equal entry counts split the long rows over many blocks"),
        ))
    }

    /// The vector kernel with the threads per row that fill the GPU (scalar for one).
    fn fill_rule(stats: &RowStats, fill: u32, what: &str) -> (SpmvKernel, String) {
        let why = format!(
            "{what} ({} rows, {} entries): {fill} thread(s) per row fill the GPU (rows x threads within {}, at \
             most the longest row {})",
            stats.nrows,
            stats.nnz,
            Self::FILL_THREADS,
            stats.max
        );
        if fill == 1 {
            (SpmvKernel::Scalar, why)
        } else {
            (SpmvKernel::Vector { threads_per_row: fill }, why)
        }
    }

    /// The fraction of the entries in the **tail** rows: rows longer than
    /// [`Self::TAIL_FACTOR`] times the mean of the rows SELL keeps in slices
    /// ([`Self::slice_mean`]) but short enough for the slices (below 512 entries), from the
    /// power-of-two histogram: the entries of the classes past the bound (exact), and of a
    /// class that straddles it the part above (estimated, as if its rows were spread evenly
    /// over its lengths). Such rows make a slice's threads walk rows of very different
    /// lengths. The mean leaves out the rows SELL splits into chunks: on R-MAT graphs of 64
    /// to 256 entries per row those hold two thirds of the entries, and with the mean of all
    /// rows (57 to 181) the bound (228 to 724) counted few or none of the rows of 128 to 511
    /// entries, which held half of the slices' entries; SELL ran 1.4-1.9x slower than
    /// balanced there (H200, 2026-11-26: `rmat:18:128` f64 210.2 against 137.3 µs).
    ///
    /// ```
    /// use spgpu::{gpu::SpmvPlan, RowStats};
    /// // 9000 rows of 4, 1000 of 200, 100 of 5000 (736000 entries, mean 72.9)
    /// let lengths = (0..10_100).map(|r| if r < 9000 { 4 } else if r < 10_000 { 200 } else { 5000 });
    /// let s = RowStats::from_lengths(lengths, 100_000);
    /// // the slices' rows: (9000 x 4 + 1000 x 200) / 10000
    /// assert!((SpmvPlan::slice_mean(&s) - 23.6).abs() < 1e-9);
    /// // the rows of 200 (class 128 to 255) are past 4 x 23.6: 200000 of the 736000 entries
    /// assert!((SpmvPlan::tail_fraction(&s) - 200_000.0 / 736_000.0).abs() < 1e-9);
    /// // rows of 20 among rows of 4: the bound (4 x 4.48 = 17) falls inside the class of
    /// // 16 to 31, whose rows count from 18 on: 14 of its 16 lengths, at 24.5 entries each
    /// let s = RowStats::from_lengths((0..10_000).map(|r| if r % 100 < 3 { 20 } else { 4 }), 1);
    /// let want = 300.0 * 14.0 / 16.0 * 24.5 / 44_800.0;
    /// assert!((SpmvPlan::tail_fraction(&s) - want).abs() < 1e-9);
    /// ```
    pub fn tail_fraction(stats: &RowStats) -> f64 {
        if stats.nnz == 0 {
            return 0.0;
        }
        // rows longer than `bound` entries count: the classes above it with their exact
        // entries, a class that straddles it with its part above, as if its rows were
        // spread evenly over its lengths
        let bound = (Self::TAIL_FACTOR * Self::slice_mean(stats)).floor() as usize;
        let entries: f64 = (1..stats.histogram.len())
            .map(|k| (k, RowStats::class_range(k), stats.histogram[k]))
            .filter(|&(_, (_, hi), _)| hi > bound && hi < Self::CHUNKED_ROW)
            .map(|(k, (lo, hi), n)| {
                if lo > bound {
                    Self::class_entries(stats, k) as f64
                } else {
                    let rows = n as f64 * (hi - bound) as f64 / (hi + 1 - lo) as f64;
                    rows * (bound + 1 + hi) as f64 / 2.0
                }
            })
            .sum::<f64>()
            + 0.0; // no class: +0, not the -0 of an empty sum
        (entries / stats.nnz as f64).min(1.0)
    }

    /// The entries of histogram class `k` (0 past the end of `histogram_entries`).
    fn class_entries(stats: &RowStats, k: usize) -> usize {
        stats.histogram_entries.get(k).copied().unwrap_or(0)
    }

    /// The mean length of the rows SELL keeps in slices, those of fewer than
    /// [`Self::CHUNKED_ROW`] (512) entries, empty rows included (exact, from the histogram's
    /// entries per class); 0 when every row is longer.
    ///
    /// ```
    /// use spgpu::{gpu::SpmvPlan, RowStats};
    /// // 9000 rows of 4, 1000 of 200, 100 of 5000
    /// let s = RowStats::from_lengths((0..10_100).map(|r| if r < 9000 { 4 } else if r < 10_000 { 200 } else { 5000 }), 1);
    /// assert!((SpmvPlan::slice_mean(&s) - 23.6).abs() < 1e-9); // (36000 + 200000) / 10000
    /// ```
    pub fn slice_mean(stats: &RowStats) -> f64 {
        let (rows, entries) = (0..stats.histogram.len())
            .filter(|&k| RowStats::class_range(k).1 < Self::CHUNKED_ROW)
            .fold((0usize, 0usize), |(r, e), k| (r + stats.histogram[k], e + Self::class_entries(stats, k)));
        if rows == 0 {
            0.0
        } else {
            entries as f64 / rows as f64
        }
    }

    /// The fraction of the entries in rows of [`Self::CHUNKED_ROW`] (512) entries or more,
    /// those SELL splits into chunks (it chunks rows past 512; a slice row of 512 would walk
    /// as long): exact, from the histogram's entries per class.
    ///
    /// ```
    /// use spgpu::{gpu::SpmvPlan, RowStats};
    /// // 9000 rows of 4 and 100 of 5000
    /// let s = RowStats::from_lengths((0..9100).map(|r| if r < 9000 { 4 } else { 5000 }), 1);
    /// assert!((SpmvPlan::chunked_fraction(&s) - 500_000.0 / 536_000.0).abs() < 1e-12);
    /// ```
    pub fn chunked_fraction(stats: &RowStats) -> f64 {
        if stats.nnz == 0 {
            return 0.0;
        }
        let chunked: usize = (0..stats.histogram.len())
            .filter(|&k| RowStats::class_range(k).0 >= Self::CHUNKED_ROW)
            .map(|k| Self::class_entries(stats, k))
            .sum();
        chunked as f64 / stats.nnz as f64
    }

    /// The plan after its storage could not be built (SELL padding past its limit): the
    /// balanced kernel, with the reason appended.
    pub(crate) fn fall_back_to_balanced(&mut self, why: &str) {
        self.kernel = SpmvKernel::Balanced;
        self.reason = format!("{}; but {why}: balanced instead", self.reason);
    }

    /// Records the device memory of the uploaded storage against the plain CSR arrays, for
    /// [`explain`](SpmvPlan::explain).
    pub(crate) fn set_memory(&mut self, device_bytes: usize, csr_bytes: usize) {
        self.memory = Some((device_bytes, csr_bytes));
    }

    /// Records that the balanced kernel reads the hot columns' `x` from shared memory, for
    /// [`explain`](SpmvPlan::explain).
    pub(crate) fn set_hot(&mut self, note: String) {
        self.hot = Some(note);
    }

    /// Records why the upload counted the columns and kept none hot, for
    /// [`explain`](SpmvPlan::explain).
    pub(crate) fn set_no_hot(&mut self, why: String) {
        self.no_hot = Some(why);
    }

    /// Records the shape of the balanced kernel's row blocks and why, for
    /// [`explain`](SpmvPlan::explain).
    pub(crate) fn set_blocks(&mut self, shape: crate::gpu::plan::balance::RowShape, why: String) {
        self.blocks = Some((shape, why));
    }

    /// The shape of the balanced kernel's row blocks, when the uploaded matrix runs it
    /// without hot columns ([`crate::gpu::balance::choose_shape`]).
    pub fn row_shape(&self) -> Option<crate::gpu::plan::balance::RowShape> {
        self.blocks.as_ref().map(|b| b.0)
    }

    /// Records whether the ELL or SELL slots (or the vector kernel's CSR columns) store 16-bit
    /// column offsets, for
    /// [`explain`](SpmvPlan::explain).
    pub(crate) fn set_narrow(&mut self, narrow: bool) {
        self.narrow = narrow;
    }

    /// Records how many far columns the narrow SELL slots reach through a table, for
    /// [`explain`](SpmvPlan::explain).
    pub(crate) fn set_far_columns(&mut self, far: usize) {
        self.far = far;
    }

    /// How many far columns the uploaded matrix's narrow SELL slots reach through a table
    /// ([`crate::gpu::narrow::far_columns`]): 0 unless [`narrow_columns`](SpmvPlan::narrow_columns)
    /// and some entries of its short rows lie farther than 32767 from the diagonal.
    pub fn far_columns(&self) -> usize {
        self.far
    }

    /// Whether the uploaded matrix's ELL or SELL slots, or its CSR columns for the vector
    /// kernel, store each column as its 16-bit offset from the row ([`crate::gpu::narrow`]).
    pub fn narrow_columns(&self) -> bool {
        self.narrow
    }

    /// Records that the balanced kernel gathers `x` with the L2 prefetch hint, and why, for
    /// [`explain`](SpmvPlan::explain).
    pub(crate) fn set_prefetch_x(&mut self, why: String) {
        self.prefetch_x = Some(why);
    }

    /// Forgets [`set_prefetch_x`](SpmvPlan::set_prefetch_x).
    pub(crate) fn clear_prefetch_x(&mut self) {
        self.prefetch_x = None;
    }

    /// Whether the uploaded matrix's balanced kernel gathers `x` with a 128-byte L2 prefetch
    /// hint ([`balance::prefetch_x`](crate::gpu::balance::prefetch_x)).
    pub fn prefetch_x(&self) -> bool {
        self.prefetch_x.is_some()
    }

    /// Whether the uploaded matrix runs the balanced kernel with hot columns
    /// ([`crate::gpu::hot`]).
    pub fn hot_columns(&self) -> bool {
        self.hot.is_some()
    }

    /// How many column parts the balanced kernel runs the matrix in ([`crate::gpu::split`]): 1
    /// unless `x` takes more than 60% of the L2 ([`crate::gpu::split::MIN_X_L2_SHARE`]) and the
    /// upload cut the columns.
    pub fn column_parts(&self) -> usize {
        self.parts.as_ref().map_or(1, |(k, _)| *k)
    }

    /// Records the overrides the upload planned with, which [`explain`](SpmvPlan::explain)
    /// names.
    pub(crate) fn set_tuning(&mut self, tuning: Tuning) {
        self.tuning = tuning;
    }

    /// The overrides the plan was made with ([`set_tuning`](SpmvPlan::set_tuning)).
    pub(crate) fn tuning(&self) -> Tuning {
        self.tuning
    }

    /// Records that the upload cut the matrix into `parts` column parts, and why, for
    /// [`explain`](SpmvPlan::explain).
    pub(crate) fn set_column_parts(&mut self, parts: usize, why: String) {
        self.parts = Some((parts, why));
    }

    /// The plan of an ELLPACK matrix of `T` values (always the ELL kernel); `stats` are its
    /// rows' statistics.
    pub fn for_ell<T: Scalar>(stats: &RowStats, warp_size: u32) -> SpmvPlan {
        SpmvPlan {
            kernel: SpmvKernel::Ell,
            choice: KernelChoice::Ell,
            warp_size,
            values: T::NAME,
            nrows: stats.nrows,
            nnz: stats.nnz,
            mean: stats.mean,
            max: stats.max,
            reason: "the matrix is stored as ELLPACK".to_string(),
            memory: None,
            hot: None,
            no_hot: None,
            prefetch_x: None,
            narrow: false,
            far: 0,
            blocks: None,
            parts: None,
            tuning: Tuning::default(),
        }
    }

    /// Rule 2's threads per row (the fill rule) for a matrix with these statistics: the largest power of two
    /// `t <= min(warp_size, 32)` with `nrows * t <= FILL_THREADS`, at most the longest row
    /// rounded up to a power of two; 1 when the rows alone fill the GPU (or the matrix has no
    /// entries).
    ///
    /// ```
    /// use spgpu::{gpu::SpmvPlan, RowStats};
    /// let s = |n: usize, len: usize| RowStats::from_lengths(std::iter::repeat(len).take(n), n);
    /// assert_eq!(SpmvPlan::fill_threads_per_row(&s(1000, 100), 32), 32);
    /// assert_eq!(SpmvPlan::fill_threads_per_row(&s(1000, 3), 32), 4); // rows of 3: 4 threads
    /// assert_eq!(SpmvPlan::fill_threads_per_row(&s(20_000, 1000), 32), 8);
    /// assert_eq!(SpmvPlan::fill_threads_per_row(&s(1_000_000, 27), 32), 1);
    /// ```
    pub fn fill_threads_per_row(stats: &RowStats, warp_size: u32) -> u32 {
        let cap = warp_size.clamp(2, 32);
        let longest = u32::try_from(stats.max.max(1)).unwrap_or(u32::MAX).checked_next_power_of_two().unwrap_or(cap);
        let mut t = 1u32;
        while t * 2 <= cap && t < longest && stats.nrows.saturating_mul(t as usize * 2) <= Self::FILL_THREADS {
            t *= 2;
        }
        t
    }

    /// Rule 3: long, even rows: a mean of at least [`Self::LONG_MEAN`] entries and no row longer
    /// than twice the mean.
    pub fn long_even_rows(stats: &RowStats) -> bool {
        stats.nnz > 0 && stats.mean >= Self::LONG_MEAN && stats.max as f64 <= 2.0 * stats.mean
    }

    /// Rule 2: whether a small matrix is one of many mid-length rows, which follows the
    /// storage rules unless its columns are narrow: at most [`Self::SMALL_NNZ`] entries,
    /// exactly [`Self::SMALL_MIN_FILL`] threads per row by the fill rule, at least
    /// [`Self::SMALL_MID_MIN_ROWS`] rows and a mean row of [`Self::SMALL_MID_MEAN`] entries or
    /// more but under [`Self::SMALL_LONG_MEAN`].
    pub fn small_mid_rows(stats: &RowStats, warp_size: u32) -> bool {
        stats.nrows <= Self::SMALL_ROWS
            && stats.nnz <= Self::SMALL_NNZ
            && stats.nrows >= Self::SMALL_MID_MIN_ROWS
            && stats.mean >= Self::SMALL_MID_MEAN
            && stats.mean < Self::SMALL_LONG_MEAN
            && Self::fill_threads_per_row(stats, warp_size) == Self::SMALL_MIN_FILL
    }

    /// Rule 3: the fewest rows from which ELL runs long, even rows of this mean length and
    /// element size: [`Self::ELL_LONG_MIN_ROWS`], plus the slope per doubling of the mean
    /// past the knee (`f64`: 10000 rows past 1500 entries; 4-byte values: 8000 past 400).
    /// ELL's time follows the longest row (a thread per row), the vector kernel's the
    /// entries, and the vector kernel streams rows better the longer they are, `f32` rows
    /// sooner than `f64` ones.
    ///
    /// ```
    /// use spgpu::gpu::SpmvPlan;
    /// assert_eq!(SpmvPlan::ell_long_min_rows(1000.0, 8), 36_000);
    /// assert_eq!(SpmvPlan::ell_long_min_rows(3000.0, 8), 46_000);
    /// assert_eq!(SpmvPlan::ell_long_min_rows(300.0, 4), 36_000);
    /// assert_eq!(SpmvPlan::ell_long_min_rows(1600.0, 4), 52_000);
    /// ```
    pub fn ell_long_min_rows(mean: f64, value_bytes: usize) -> usize {
        let (knee, slope) = if value_bytes <= 4 {
            (Self::ELL_LONG_KNEE_F32, Self::ELL_LONG_SLOPE_F32)
        } else {
            (Self::ELL_LONG_KNEE_F64, Self::ELL_LONG_SLOPE_F64)
        };
        let doublings = if mean > knee { (mean / knee).log2() } else { 0.0 };
        Self::ELL_LONG_MIN_ROWS + (slope * doublings).round() as usize
    }

    /// Rule 3: threads per row of the vector kernel on long, even rows. When the rows are
    /// so many that the fill rule gives fewer than 8, [`Self::LONG_ROW_THREADS`] (16);
    /// otherwise the fill rule's `fill`, doubled while a thread would walk more than
    /// [`Self::LONG_ROW_STEPS`] entries of a row of `mean` entries. At most the warp and 32.
    ///
    /// ```
    /// use spgpu::gpu::SpmvPlan;
    /// assert_eq!(SpmvPlan::long_row_threads(1000.0, 4, 32), 16);
    /// assert_eq!(SpmvPlan::long_row_threads(1000.0, 8, 32), 8);
    /// assert_eq!(SpmvPlan::long_row_threads(2500.0, 8, 32), 32);
    /// assert_eq!(SpmvPlan::long_row_threads(2500.0, 8, 16), 16);
    /// ```
    pub fn long_row_threads(mean: f64, fill: u32, warp_size: u32) -> u32 {
        // a power of two: the vector kernel's thread counts
        let cap = 1u32 << warp_size.clamp(2, 32).ilog2();
        let mut t = if fill < 8 { Self::LONG_ROW_THREADS } else { fill };
        while t < cap && mean / f64::from(t) > Self::LONG_ROW_STEPS {
            t *= 2;
        }
        t.min(cap).max(fill)
    }

    /// Rule 3 for long, even rows whose every entry lies within 32767 of the diagonal: the
    /// most threads per row (a power of two, at most the warp and 32) for which a row of
    /// `mean` entries has at least [`VECTOR_BATCH_STEPS`](crate::gpu::narrow::VECTOR_BATCH_STEPS)
    /// entries per thread, so that the vector kernel reads it 4 entries per thread at a time
    /// from 16-bit column offsets; at least 2.
    ///
    /// ```
    /// use spgpu::gpu::SpmvPlan;
    /// assert_eq!(SpmvPlan::batched_threads_per_row(300.0, 32), 8);
    /// assert_eq!(SpmvPlan::batched_threads_per_row(800.0, 32), 16);
    /// assert_eq!(SpmvPlan::batched_threads_per_row(1024.0, 32), 32);
    /// assert_eq!(SpmvPlan::batched_threads_per_row(5000.0, 16), 16);
    /// assert_eq!(SpmvPlan::batched_threads_per_row(10.0, 32), 2);
    /// ```
    pub fn batched_threads_per_row(mean: f64, warp_size: u32) -> u32 {
        let cap = warp_size.clamp(2, 32);
        let steps = crate::gpu::plan::narrow::VECTOR_BATCH_STEPS as f64;
        VECTOR_THREADS_PER_ROW.iter().copied().filter(|&t| t <= cap && steps * f64::from(t) <= mean).max().unwrap_or(2)
    }

    /// The design rule's threads per row: the largest power of two not above `mean`,
    /// clamped to `2..=min(warp_size, 32)`.
    ///
    /// ```
    /// use spgpu::gpu::SpmvPlan;
    /// assert_eq!(SpmvPlan::design_threads_per_row(26.5, 32), 16);
    /// assert_eq!(SpmvPlan::design_threads_per_row(1000.0, 32), 32);
    /// assert_eq!(SpmvPlan::design_threads_per_row(0.0, 32), 2);
    /// ```
    pub fn design_threads_per_row(mean: f64, warp_size: u32) -> u32 {
        let cap = warp_size.clamp(2, 32);
        let mut tpr = 2;
        while tpr * 2 <= cap && f64::from(tpr * 2) <= mean {
            tpr *= 2;
        }
        tpr
    }

    /// The chosen kernel.
    pub fn kernel(&self) -> SpmvKernel {
        self.kernel
    }

    /// What the user asked for.
    pub fn choice(&self) -> KernelChoice {
        self.choice
    }

    /// The warp size the plan was made for.
    pub fn warp_size(&self) -> u32 {
        self.warp_size
    }

    /// The element type the plan was made for: `"f32"` or `"f64"`.
    pub fn values(&self) -> &'static str {
        self.values
    }

    /// Why the plan chose its kernel (the `why:` line of [`explain`](SpmvPlan::explain)).
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// ELL slots per stored entry if the matrix were stored as ELLPACK (`max * nrows / nnz`;
    /// 1 for an empty matrix).
    pub fn ell_padding(&self) -> f64 {
        if self.nnz == 0 {
            1.0
        } else {
            self.max as f64 * self.nrows as f64 / self.nnz as f64
        }
    }

    /// A few lines saying which kernel runs and why, and whether ELLPACK would suit the
    /// matrix better.
    pub fn explain(&self) -> String {
        let mut s = format!(
            "SpMV plan: {} [{}]\n  {} rows, {} entries, mean row {:.2}, max row {}, {} values\n  why: {}",
            self.kernel, self.choice, self.nrows, self.nnz, self.mean, self.max, self.values, self.reason
        );
        if let Some((device, csr)) = self.memory {
            let extra = device as f64 / csr.max(1) as f64 - 1.0;
            s += &format!(
                "\n  device memory: {} ({:+.1}% against the CSR arrays, {})",
                crate::error::human_bytes(device as u64),
                100.0 * extra,
                crate::error::human_bytes(csr as u64)
            );
        }
        if let Some(hot) = self.hot.as_ref().or(self.no_hot.as_ref()) {
            s += &format!("\n  x: {hot}");
        }
        if let Some(why) = &self.prefetch_x {
            s += &format!("\n  x: {why}");
        }
        if let Some((_, why)) = &self.parts {
            s += &format!("\n  x: {why}");
        }
        if let Some((_, blocks)) = &self.blocks {
            s += &format!("\n  row blocks: {blocks}");
        }
        if self.narrow && self.far > 0 {
            s += &format!(
                "\n  columns: 16-bit offsets from the row, 2 bytes per stored column instead of 4; the entries of \
                 short rows whose offsets do not fit lie in {} far column(s), which a table holds",
                self.far
            );
        } else if self.narrow {
            s += &format!(
                "\n  columns: 16-bit offsets from the row (every entry within {} of the diagonal), 2 bytes per stored \
                 column instead of 4",
                crate::gpu::plan::narrow::MAX_OFFSET
            );
        }
        for o in self.tuning.overrides() {
            s += &format!("\n  override: {o}");
        }
        s
    }
}

impl fmt::Display for SpmvPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(lengths: &[usize]) -> RowStats {
        RowStats::from_lengths(lengths.iter().copied(), 100)
    }

    /// Enough rows that rule 2 (few rows) does not apply.
    const MANY: usize = SpmvPlan::SMALL_ROWS + 1;

    #[test]
    fn many_short_even_rows_are_ell() {
        let p = SpmvPlan::from_stats::<f64>(&stats(&[5; MANY]), 32);
        assert_eq!(p.kernel(), SpmvKernel::Ell);
        assert!(p.explain().contains("ELL pads 1.000"), "{}", p.explain());
        // a few shorter rows (a grid's boundary) keep ELL while the padding stays within 2%
        let mut l = vec![5; MANY];
        l[..MANY / 100].fill(4);
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&l), 32).kernel(), SpmvKernel::Ell);
        // rows past 32 entries are not ELL's
        assert_ne!(SpmvPlan::from_stats::<f64>(&stats(&[40; MANY]), 32).kernel(), SpmvKernel::Ell);
    }

    #[test]
    fn uneven_short_rows_are_sell_and_tails_balanced() {
        // 3 to 30 entries: SELL
        let l: Vec<usize> = (0..MANY).map(|i| 3 + i % 28).collect();
        let p = SpmvPlan::from_stats::<f64>(&stats(&l), 32);
        assert_eq!(p.kernel(), SpmvKernel::Sell, "{}", p.explain());
        // a few very long rows (circuit-like) do not stop SELL: they go in chunks
        let mut l = l.clone();
        l[10] = 60_000;
        l[20] = 30_000;
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&l), 32).kernel(), SpmvKernel::Sell);
        // rows of 300 among rows of 4 (a tail) holding more than 0.5% of the entries: balanced
        let mut l = vec![4; MANY];
        for r in (0..MANY).step_by(50) {
            l[r] = 300;
        }
        let p = SpmvPlan::from_stats::<f64>(&stats(&l), 32);
        assert!(SpmvPlan::tail_fraction(&stats(&l)) > SpmvPlan::SELL_MAX_TAIL);
        assert_eq!(p.kernel(), SpmvKernel::Balanced, "{}", p.explain());
        assert!(p.explain().contains("row blocks"), "{}", p.explain());
        // an in-link matrix's shape: rows of 8 to 16, and one row in 2000 of 64 to 500 (about
        // 1.1% of the entries): balanced; without those rows, SELL
        let mut l: Vec<usize> = (0..MANY).map(|r| 8 + r % 9).collect();
        for r in (0..MANY).step_by(2000) {
            l[r] = 64 + (r / 2000 * 37) % 437;
        }
        let st = stats(&l);
        assert!((0.005..0.02).contains(&SpmvPlan::tail_fraction(&st)), "{}", SpmvPlan::tail_fraction(&st));
        assert_eq!(SpmvPlan::from_stats::<f64>(&st, 32).kernel(), SpmvKernel::Balanced);
        let l: Vec<usize> = l.iter().map(|&n| n.min(16)).collect();
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&l), 32).kernel(), SpmvKernel::Sell);
    }

    #[test]
    fn elasticity_rows_are_sell() {
        // 81 per interior row, fewer on the boundary: no tail, SELL
        let l: Vec<usize> = (0..MANY).map(|i| if i % 10 == 0 { 54 } else { 81 }).collect();
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&l), 32).kernel(), SpmvKernel::Sell);
    }

    #[test]
    fn long_even_rows_get_a_sub_warp() {
        // on many rows, ELL (one thread per row) streams them best
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&[1000; 50_000]), 32).kernel(), SpmvKernel::Ell);
        // 20000 rows of 1000 (longrows) are few rows: 8 threads fill the GPU
        assert_eq!(
            SpmvPlan::from_stats::<f64>(&stats(&[1000; 20_000]), 32).kernel(),
            SpmvKernel::Vector { threads_per_row: 8 }
        );
    }

    #[test]
    fn long_even_rows_depend_on_the_element_type_and_length() {
        let rows = |n: usize, len: usize| stats(&vec![len; n]);
        // 45000 rows of 1000: ELL for f64 (from 36000 rows), the vector kernel for f32 (from
        // 46575: 8000 more rows per doubling of the mean past 400)
        assert_eq!(SpmvPlan::ell_long_min_rows(1000.0, 4), 46_575);
        assert_eq!(SpmvPlan::from_stats::<f64>(&rows(45_000, 1000), 32).kernel(), SpmvKernel::Ell);
        let single = SpmvPlan::from_stats::<f32>(&rows(45_000, 1000), 32);
        assert_eq!(single.kernel(), SpmvKernel::Vector { threads_per_row: 16 });
        assert_eq!(single.values(), "f32");
        assert!(single.explain().contains("f32 values"), "{}", single.explain());
        assert!(single.reason().contains("at least 46575 rows for this mean"), "{}", single.reason());
        assert!(single.reason().contains("the fill rule gives 4"), "{}", single.reason());
        // the thresholds, exactly
        assert_eq!(SpmvPlan::from_stats::<f32>(&rows(46_575, 1000), 32).kernel(), SpmvKernel::Ell);
        assert_ne!(SpmvPlan::from_stats::<f64>(&rows(35_999, 1000), 32).kernel(), SpmvKernel::Ell);
        assert_eq!(SpmvPlan::from_stats::<f64>(&rows(36_000, 1000), 32).kernel(), SpmvKernel::Ell);
        // rows of 2500 on 40000 rows: f64 needs 43370 rows for ELL; 32 threads walk 79 each
        assert_eq!(SpmvPlan::ell_long_min_rows(2500.0, 8), 43_370);
        assert_eq!(
            SpmvPlan::from_stats::<f64>(&rows(40_000, 2500), 32).kernel(),
            SpmvKernel::Vector { threads_per_row: 32 }
        );
        // rows of 300: the fill rule already gives enough threads below 36000 rows
        assert_eq!(
            SpmvPlan::from_stats::<f32>(&rows(30_000, 300), 32).kernel(),
            SpmvKernel::Vector { threads_per_row: 8 }
        );
        assert_eq!(SpmvPlan::from_stats::<f32>(&rows(36_000, 300), 32).kernel(), SpmvKernel::Ell);
        // a warp of 8 lanes caps the threads
        assert_eq!(SpmvPlan::long_row_threads(2500.0, 4, 8), 8);
        // a warp that is not a power of two caps at the power of two below it
        assert_eq!(SpmvPlan::long_row_threads(2500.0, 8, 24), 16);
        assert_eq!(
            SpmvPlan::from_stats::<f32>(&rows(40_000, 1000), 8).kernel(),
            SpmvKernel::Vector { threads_per_row: 8 }
        );
    }

    #[test]
    fn column_layouts_of_small_matrices() {
        // rows of 2: r and r + d (r - d past the end), on 100000 rows and columns
        let n = 100_000usize;
        let shifted = |d: usize| {
            let cols: Vec<u32> = (0..n)
                .flat_map(|r| {
                    let other = if r + d < n { r + d } else { r - d };
                    [r.min(other) as u32, r.max(other) as u32]
                })
                .collect();
            let offsets: Vec<u64> = (0..=n as u64).map(|r| 2 * r).collect();
            CsrMatrix::try_from_parts(n, n, offsets, cols, vec![1.0f64; 2 * n]).unwrap()
        };
        let layout =
            |a: &CsrMatrix<f64>, choice| SpmvPlan::column_layout(a, &a.row_stats(), choice, &Tuning::from_env());
        let auto = KernelChoice::Auto;
        // SPGPU_NARROW_COLUMNS=0 in the environment turns narrow columns off: then local
        let near = if Tuning::from_env().narrow_allowed() { ColumnLayout::Narrow } else { ColumnLayout::Local };
        assert_eq!(layout(&shifted(1), auto), Some(near));
        // half the entries on the diagonal, the other half 40000 away: near, not narrow
        assert_eq!(layout(&shifted(40_000), auto), Some(ColumnLayout::Local));
        assert_eq!(layout(&shifted(1), KernelChoice::Ell), None, "only the automatic plan looks");
        // scattered: every row's two columns far apart and far from the diagonal
        let n2 = 100_000usize;
        let cols: Vec<u32> =
            (0..n2).flat_map(|r| [((r * 7919 + 50_000) % n2) as u32, ((r * 104_729 + 25_000) % n2) as u32]).collect();
        let mut sorted_rows = Vec::new();
        for r in 0..n2 {
            let mut pair = [cols[2 * r], cols[2 * r + 1]];
            pair.sort_unstable();
            sorted_rows.push(pair);
        }
        let flat: Vec<u32> =
            sorted_rows.iter().flat_map(|p| if p[0] == p[1] { vec![p[0]] } else { p.to_vec() }).collect();
        let mut offsets = vec![0u64];
        for p in &sorted_rows {
            offsets.push(offsets.last().unwrap() + if p[0] == p[1] { 1 } else { 2 });
        }
        let values = vec![1.0f64; flat.len()];
        let random = CsrMatrix::try_from_parts(n2, n2, offsets, flat, values).unwrap();
        assert_eq!(layout(&random, auto), Some(ColumnLayout::Scattered));
        // rows too long for rule 4: not looked at
        let long = CsrMatrix::<f64>::try_from_parts(1, 30, vec![0, 30], (0..30).collect(), vec![1.0; 30]).unwrap();
        assert_eq!(layout(&long, auto), None);
        // but 50000 rows of 30 (rule 2's mid-length rows): looked at; a band is narrow, and
        // columns r * 997 + 40000 k apart scattered
        let (rows, len) = (50_000usize, 30usize);
        let mid = |col: &dyn Fn(usize, usize) -> usize| {
            let mut cols = Vec::with_capacity(rows * len);
            for r in 0..rows {
                let mut c: Vec<u32> = (0..len).map(|k| col(r, k) as u32).collect();
                c.sort_unstable();
                c.dedup();
                cols.extend(c);
            }
            let offsets: Vec<u64> = (0..=rows as u64).map(|r| r * len as u64).collect();
            let n = cols.len();
            CsrMatrix::try_from_parts(rows, 2_000_000, offsets, cols, vec![1.0f64; n]).unwrap()
        };
        let band = mid(&|r, k| r + k);
        assert!(SpmvPlan::small_mid_rows(&band.row_stats(), 32));
        assert_eq!(layout(&band, auto), Some(near));
        let spread = mid(&|r, k| (r * 997 + 40_000 * k) % 2_000_000);
        assert_eq!(layout(&spread, auto), Some(ColumnLayout::Scattered));
    }

    #[test]
    fn short_even_rows_follow_their_columns() {
        let auto = KernelChoice::Auto;
        // a million rows over 4 million columns (x of 32 MB in f64, 16 MB in f32)
        let plan = |len: usize, layout, f32: bool| {
            let st = RowStats::from_lengths(std::iter::repeat(len).take(1_000_000), 4_000_000);
            if f32 {
                SpmvPlan::with_columns::<f32>(&st, 32, auto, layout).unwrap()
            } else {
                SpmvPlan::with_columns::<f64>(&st, 32, auto, layout).unwrap()
            }
        };
        // rows of 4: ELL, except scattered columns over an x past 16 MiB (32 MB in f64; in f32
        // 16 MB, not past it)
        for layout in [None, Some(ColumnLayout::Narrow), Some(ColumnLayout::Local)] {
            assert_eq!(plan(4, layout, false).kernel(), SpmvKernel::Ell, "{layout:?}");
        }
        assert_eq!(plan(4, Some(ColumnLayout::Scattered), false).kernel(), SpmvKernel::Sell);
        assert_eq!(plan(4, Some(ColumnLayout::Scattered), true).kernel(), SpmvKernel::Ell);
        assert!(plan(4, Some(ColumnLayout::Scattered), false).reason().contains("scattered columns"));
        // over an x of 16 MiB or less, ELL; past it, SELL in f32 too
        for ncols in [1000, 2_000_000] {
            let st = RowStats::from_lengths(std::iter::repeat(8).take(1_000_000), ncols);
            let p = SpmvPlan::with_columns::<f64>(&st, 32, auto, Some(ColumnLayout::Scattered)).unwrap();
            assert_eq!(p.kernel(), SpmvKernel::Ell, "{ncols} columns: {}", p.explain());
        }
        // the edge: an x of exactly 16 MiB is not past it
        for (ncols, want) in [(2_097_152, SpmvKernel::Ell), (2_097_153, SpmvKernel::Sell)] {
            let st = RowStats::from_lengths(std::iter::repeat(8).take(1_000_000), ncols);
            let p = SpmvPlan::with_columns::<f64>(&st, 32, auto, Some(ColumnLayout::Scattered)).unwrap();
            assert_eq!(p.kernel(), want, "{ncols} columns: {}", p.explain());
        }
        // rows of one entry: ELL over any x
        let st = RowStats::from_lengths(std::iter::repeat(1).take(20_000_000), 20_000_000);
        let p = SpmvPlan::with_columns::<f64>(&st, 32, auto, Some(ColumnLayout::Scattered)).unwrap();
        assert_eq!(p.kernel(), SpmvKernel::Ell, "{}", p.explain());
        let st = RowStats::from_lengths(std::iter::repeat(8).take(1_000_000), 6_000_000);
        let p = SpmvPlan::with_columns::<f32>(&st, 32, auto, Some(ColumnLayout::Scattered)).unwrap();
        assert_eq!(p.kernel(), SpmvKernel::Sell, "{}", p.explain());
        assert!(p.explain().contains("x of 22.9 MiB"), "{}", p.explain());
        // rows of 17 to 24: ELL only when narrow; 25: SELL whatever the columns
        for len in [17, SpmvPlan::ELL_NARROW_MAX_ROW] {
            assert_eq!(plan(len, Some(ColumnLayout::Narrow), false).kernel(), SpmvKernel::Ell);
            assert_eq!(plan(len, Some(ColumnLayout::Narrow), true).kernel(), SpmvKernel::Ell);
            assert_eq!(plan(len, Some(ColumnLayout::Local), false).kernel(), SpmvKernel::Sell);
            assert_eq!(plan(len, None, false).kernel(), SpmvKernel::Sell);
        }
        assert_eq!(plan(25, Some(ColumnLayout::Narrow), false).kernel(), SpmvKernel::Sell);
        // uneven rows (ELL would pad 4%): the layout does not matter
        let mut lengths = vec![16; 1_000_000];
        lengths[0] = 24;
        lengths.iter_mut().skip(1).step_by(20).for_each(|l| *l = 15);
        let uneven = stats(&lengths);
        let p = SpmvPlan::with_columns::<f64>(&uneven, 32, auto, Some(ColumnLayout::Narrow)).unwrap();
        assert_ne!(p.kernel(), SpmvKernel::Ell, "{}", p.explain());
    }

    #[test]
    fn few_rows_fill_the_gpu_unless_skewed() {
        // 4000 rows of 1000: 32 threads per row
        let p = SpmvPlan::from_stats::<f64>(&stats(&[1000; 4000]), 32);
        assert_eq!(p.kernel(), SpmvKernel::Vector { threads_per_row: 32 });
        assert!(p.explain().contains("(4000 rows, 4000000 entries)"), "{}", p.explain());
        // the longest row bounds the threads: rows of at most 12 get 16
        assert_eq!(SpmvPlan::fill_threads_per_row(&stats(&[12; 500]), 32), 16);
        // one thread per row when the rows alone fill the GPU
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&[1; 100_000]), 32).kernel(), SpmvKernel::Scalar);
        // hangGlider_2-like: one row of 1463 among rows of 9: balanced
        let mut l = vec![9; 1647];
        l[100] = 1463;
        let p = SpmvPlan::from_stats::<f64>(&stats(&l), 32);
        assert_eq!(p.kernel(), SpmvKernel::Balanced);
        assert!(p.explain().contains("skewed"), "{}", p.explain());
        // a long row that a warp covers in a few steps keeps the vector kernel
        let mut l = vec![9; 1647];
        l[100] = 150;
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&l), 32).kernel(), SpmvKernel::Vector { threads_per_row: 32 });
        // the warp size still caps the threads
        assert_eq!(
            SpmvPlan::from_stats::<f64>(&stats(&[100; 100]), 16).kernel(),
            SpmvKernel::Vector { threads_per_row: 16 }
        );
    }

    #[test]
    fn small_matrices_of_many_rows_follow_the_storage_rules() {
        // more than 67584 rows (the fill rule gives 2 threads) of 4 or more entries: ELL for
        // even rows of 7, SELL for even rows of 27, as on larger matrices
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&[7; 100_000]), 32).kernel(), SpmvKernel::Ell);
        let p = SpmvPlan::from_stats::<f32>(&stats(&[27; 100_000]), 32);
        assert_eq!(p.kernel(), SpmvKernel::Sell, "{}", p.explain());
        // rows of 2 (a road network), or fewer rows: the fill rule's vector kernel
        let l: Vec<usize> = (0..100_000).map(|i| 1 + i % 3).collect();
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&l), 32).kernel(), SpmvKernel::Vector { threads_per_row: 2 });
        assert_eq!(
            SpmvPlan::from_stats::<f64>(&stats(&[27; 60_000]), 32).kernel(),
            SpmvKernel::Vector { threads_per_row: 4 }
        );
        // 4 threads per row and rows of 48 or more: the storage rules (SELL for rows of 50)
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&[50; 40_000]), 32).kernel(), SpmvKernel::Sell);
        assert_eq!(
            SpmvPlan::from_stats::<f64>(&stats(&[47; 40_000]), 32).kernel(),
            SpmvKernel::Vector { threads_per_row: 4 }
        );
        // 45000 to 67584 rows of 20 to 47 entries: the storage rules when the columns are
        // known not to be narrow (a stencil's or a band's keep the vector kernel)
        let auto = KernelChoice::Auto;
        let with = |l: &[usize], c| SpmvPlan::with_columns::<f64>(&stats(l), 32, auto, c).unwrap().kernel();
        let v4 = SpmvKernel::Vector { threads_per_row: 4 };
        for c in [Some(ColumnLayout::Scattered), Some(ColumnLayout::Local)] {
            assert_eq!(with(&[30; 50_000], c), SpmvKernel::Sell);
            assert_eq!(with(&[20; 45_000], c), SpmvKernel::Sell);
            assert_eq!(with(&[30; 44_999], c), v4, "too few rows");
            assert_eq!(with(&[19; 50_000], c), v4, "too short");
        }
        assert_eq!(with(&[30; 50_000], Some(ColumnLayout::Narrow)), v4);
        assert_eq!(with(&[30; 50_000], None), v4, "columns not looked at");
        // 8 threads per row: the vector kernel whatever the rows
        assert_eq!(
            SpmvPlan::from_stats::<f64>(&stats(&[100; 30_000]), 32).kernel(),
            SpmvKernel::Vector { threads_per_row: 8 }
        );
    }

    #[test]
    fn long_narrow_rows_run_batched() {
        // long, even rows within 32767 of the diagonal (a wide band), few rows or many: the
        // most threads per row that leave 32 entries per thread, never ELL
        let auto = KernelChoice::Auto;
        let with =
            |rows: usize, len: usize, c| SpmvPlan::with_columns::<f32>(&stats(&vec![len; rows]), 32, auto, c).unwrap();
        for (rows, len, t) in
            [(20_000, 601, 16), (60_000, 601, 16), (150_000, 261, 8), (4000, 3001, 32), (16_000, 401, 8)]
        {
            let p = with(rows, len, Some(ColumnLayout::Narrow));
            assert_eq!(p.kernel(), SpmvKernel::Vector { threads_per_row: t }, "{rows} x {len}: {}", p.explain());
            assert!(p.explain().contains("within 32767 of the diagonal"), "{}", p.explain());
        }
        // scattered or unknown columns keep rule 3 (ELL from about 41000 rows of 601 in f32,
        // else the vector kernel's own count)
        assert_eq!(with(48_000, 601, Some(ColumnLayout::Scattered)).kernel(), SpmvKernel::Ell);
        assert_eq!(with(48_000, 601, None).kernel(), SpmvKernel::Ell);
        assert_eq!(
            with(20_000, 601, Some(ColumnLayout::Scattered)).kernel(),
            SpmvKernel::Vector { threads_per_row: 8 }
        );
        // the upload looks at the columns of long, even rows
        let band = crate::gen::banded::<f64>(2000, 150, 1);
        assert!(
            SpmvPlan::column_layout(&band, &band.row_stats(), auto, &Tuning::default()).is_some(),
            "rows of 301 are looked at"
        );
    }

    #[test]
    fn few_long_rows_are_balanced() {
        // fewer than 2816 rows (a warp each keeps under a third of the GPU busy), longest past
        // 32 steps of a warp, over a small x: balanced, small or large, f64 or f32
        for (rows, len) in [(200, 100_000), (2000, 2000), (2815, 1025), (100, 40_000)] {
            let st = stats(&vec![len; rows]);
            for p in [SpmvPlan::from_stats::<f64>(&st, 32), SpmvPlan::from_stats::<f32>(&st, 32)] {
                assert_eq!(p.kernel(), SpmvKernel::Balanced, "{rows} rows of {len}: {}", p.explain());
                assert!(p.explain().contains("few, long rows"), "{}", p.explain());
            }
        }
        // rows short enough for a warp's 32 steps, or enough of them: a warp per row
        for (rows, len) in [(2000, 1024), (2816, 3000), (6000, 6000)] {
            let p = SpmvPlan::from_stats::<f64>(&stats(&vec![len; rows]), 32);
            assert_eq!(p.kernel(), SpmvKernel::Vector { threads_per_row: 32 }, "{rows} rows of {len}");
        }
        // 1500 rows or more over an x of 40 MiB or more: a warp per row; fewer rows, or a
        // smaller x, keep balanced
        let over = |rows: usize, len: usize, ncols: usize| RowStats::from_lengths(vec![len; rows], ncols);
        let warp = SpmvKernel::Vector { threads_per_row: 32 };
        let p = SpmvPlan::from_stats::<f64>(&over(1500, 4000, 5_242_880), 32);
        assert_eq!(p.kernel(), warp, "{}", p.explain());
        assert!(p.explain().contains("few, long rows") && p.explain().contains("40.0 MiB"), "{}", p.explain());
        assert_eq!(SpmvPlan::from_stats::<f32>(&over(2815, 1025, 10_485_760), 32).kernel(), warp);
        for (rows, ncols) in [(1499, 16_000_000), (1500, 5_242_879)] {
            assert_eq!(SpmvPlan::from_stats::<f64>(&over(rows, 4000, ncols), 32).kernel(), SpmvKernel::Balanced);
        }
        // the same x in f32 is half as large
        assert_eq!(SpmvPlan::from_stats::<f32>(&over(1500, 4000, 5_242_880), 32).kernel(), SpmvKernel::Balanced);
        // one long row among few short ones: balanced, as skewed rows (rule 2)
        let mut l = vec![9; 1000];
        l[0] = 50_000;
        let p = SpmvPlan::from_stats::<f64>(&stats(&l), 32);
        assert_eq!(p.kernel(), SpmvKernel::Balanced);
        assert!(p.explain().contains("skewed"), "{}", p.explain());
    }

    #[test]
    fn long_rows_leave_out_of_the_slices_mean() {
        // R-MAT-like: rows of 16 (most), 200 (the short rows' tail) and 5000 (chunked, 28% of
        // the entries). With the mean of all rows (about 35) the bound, 140, fell inside the
        // class of the rows of 200 (128 to 255), which the whole-class count of before left
        // out; the slices' mean (about 25) puts it below: balanced
        let mut l = vec![16; MANY];
        for r in (0..MANY).step_by(20) {
            l[r] = 200;
        }
        for r in (5..MANY).step_by(500) {
            l[r] = 5000;
        }
        let st = stats(&l);
        assert!(st.mean > 34.0 && SpmvPlan::slice_mean(&st) < 26.0, "{}", SpmvPlan::slice_mean(&st));
        assert!(SpmvPlan::chunked_fraction(&st) < SpmvPlan::SELL_MAX_CHUNKED);
        assert!(SpmvPlan::tail_fraction(&st) > SpmvPlan::SELL_MAX_TAIL);
        assert_eq!(SpmvPlan::from_stats::<f64>(&st, 32).kernel(), SpmvKernel::Balanced);
        // without the rows of 200, SELL (the rows of 5000 go in chunks)
        let l: Vec<usize> = l.iter().map(|&n| if n == 200 { 16 } else { n }).collect();
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&l), 32).kernel(), SpmvKernel::Sell);
        // unless the chunked rows hold more than half of the entries: rows of 20000 instead
        let l: Vec<usize> = l.iter().map(|&n| if n == 5000 { 20_000 } else { n }).collect();
        let st = stats(&l);
        assert!(SpmvPlan::chunked_fraction(&st) > SpmvPlan::SELL_MAX_CHUNKED);
        let p = SpmvPlan::from_stats::<f64>(&st, 32);
        assert_eq!(p.kernel(), SpmvKernel::Balanced, "{}", p.explain());
        assert!(p.explain().contains("rows of 512 entries or more hold"), "{}", p.explain());
    }

    #[test]
    fn empty_matrices_have_a_plan() {
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&[]), 32).kernel(), SpmvKernel::Scalar);
        assert_eq!(SpmvPlan::from_stats::<f64>(&stats(&[0; 9]), 32).kernel(), SpmvKernel::Scalar);
    }

    #[test]
    fn forced_kernels_are_checked() {
        let s = stats(&[5; 10]);
        assert_eq!(
            SpmvPlan::with_choice::<f64>(&s, 32, KernelChoice::VectorTpr(32)).unwrap().kernel(),
            SpmvKernel::Vector { threads_per_row: 32 }
        );
        assert!(matches!(
            SpmvPlan::with_choice::<f64>(&s, 16, KernelChoice::VectorTpr(32)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            SpmvPlan::with_choice::<f64>(&s, 32, KernelChoice::VectorTpr(6)),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(SpmvPlan::with_choice::<f64>(&s, 32, KernelChoice::Ell).unwrap().kernel(), SpmvKernel::Ell);
        assert_eq!(
            SpmvPlan::with_choice::<f64>(&s, 32, KernelChoice::Balanced).unwrap().kernel(),
            SpmvKernel::Balanced
        );
        assert_eq!(
            SpmvPlan::with_choice::<f64>(&s, 32, KernelChoice::Vector).unwrap().kernel(),
            SpmvKernel::Vector { threads_per_row: 4 }
        );
    }

    #[test]
    fn a_programmatic_override_changes_the_decision_and_explain_names_it() {
        // a band of rows of 17 (every entry within 32767 of the diagonal): ELL from its
        // narrow columns; with narrow columns turned off in the tuning, the columns are only
        // near the diagonal, and the rows go to SELL
        let band = crate::gen::banded::<f64>(200_000, 8, 1);
        let stats = band.row_stats();
        let auto = KernelChoice::Auto;
        let plan_with = |tuning: Tuning| {
            let columns = SpmvPlan::column_layout(&band, &stats, auto, &tuning);
            let mut p = SpmvPlan::with_columns::<f64>(&stats, 32, auto, columns).unwrap();
            p.set_tuning(tuning);
            p
        };
        let rule = plan_with(Tuning::default());
        assert_eq!(rule.kernel(), SpmvKernel::Ell, "{}", rule.explain());
        assert!(!rule.explain().contains("override"), "{}", rule.explain());
        let off = Tuning { narrow_columns: Some(false), ..Tuning::default() };
        let p = plan_with(off);
        assert_eq!(p.kernel(), SpmvKernel::Sell, "{}", p.explain());
        assert!(p.explain().contains("override: SPGPU_NARROW_COLUMNS=0"), "{}", p.explain());
        assert_eq!(p.overrides(), vec!["SPGPU_NARROW_COLUMNS=0".to_string()]);
        // the same matrix, device and tuning: the same plan
        assert_eq!(plan_with(off), p);
        let parts = Tuning { column_parts: Some(2), ..Tuning::default() };
        assert!(plan_with(parts).explain().contains("override: SPGPU_COLUMN_PARTS=2"));
    }

    #[test]
    fn choices_parse_and_print() {
        for s in ["auto", "scalar", "vector", "vector:2", "vector:32", "ell", "balanced", "sell"] {
            assert_eq!(s.parse::<KernelChoice>().unwrap().to_string(), s);
        }
        for s in ["", "vector:", "vector:1", "vector:64", "csr", "Vector"] {
            assert!(matches!(s.parse::<KernelChoice>(), Err(Error::InvalidArgument(_))), "{s}");
        }
    }
}
