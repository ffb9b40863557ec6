//! The balanced kernel's rules: the shape of its row blocks ([`choose_shape`]), whether the
//! chunks of few rows come in chunk-major order ([`chunk_major`]) and whether it gathers `x`
//! with the L2 prefetch hint ([`prefetch_x`]). The blocks themselves are cut by
//! [`RowBlocks`](crate::gpu::storage::balance::RowBlocks) in the storage layer.

use rayon::prelude::*;

pub use crate::gpu::plan::tuning::{BALANCED_THREADS_ENV, CHUNK_MAJOR_ENV, PREFETCH_X_ENV};
use crate::gpu::plan::{SpmvPlan, Tuning};

/// Threads per block of the balanced kernel (`SPGPU_BLOCK` in `ptx/common.cuh`).
pub const BLOCK_THREADS: usize = 256;

/// Entries per block (`SPGPU_BALANCED_ENTRIES` in `ptx/spmv.cu`): the products of a stream
/// block are kept in shared memory as `f64`, 8 KiB per block. 1024 beat 2048, 512 and 256 on
/// the H200 with 256 threads (graphs with random columns gather `x` through an L1 that shared
/// memory shares); [`RowShape::T512`] doubles threads and entries together.
pub const BLOCK_ENTRIES: usize = 1024;

/// Rows per stream block at most (`SPGPU_BALANCED_ROWS` in `ptx/spmv.cu`): two per thread of
/// [`BLOCK_THREADS`], so that the blocks of graphs of a few entries per row (and many empty
/// rows: 79% in `rmat:24:2`) fill up with entries. On the H200 (2026-11-26, the
/// plan's kernel against blocks of at most [`BLOCK_THREADS`] rows, two rounds each): `rmat:24:2`
/// 476.4 -> 458.4 µs (f64) and 412.8 -> 382.9 (f32), five R-MAT graphs of 2 to 4 entries per
/// row 0.95x-1.00x the time in f64 and 0.93x-0.99x in f32, the hot-column graphs
/// (`rmat:21:16`, `rmat:22:8:7`, `graphlap:rmat:20:16`) 0.98x-1.00x and `powerlaw:1000000`
/// within 0.5%. Four rows per thread gained less, eight lost up to 15% (f32).
pub const BLOCK_ROWS: usize = 2 * BLOCK_THREADS;

/// Entries per chunk of a row that no stream block holds (`SPGPU_BALANCED_CHUNK` in
/// `ptx/spmv.cu`; a chunk is summed in registers, 8 entries per thread). A row of at most
/// this many entries is one chunk, whose block writes `y` itself.
pub const CHUNK_ENTRIES: usize = 2048;

/// Matrices of fewer rows than this (2816: those a warp per row cannot fill the GPU with,
/// `SpmvPlan::FEW_ROWS_THREADS / 32`) whose rows need more than one chunk have their chunks
/// in chunk-major order ([`RowBlocks::sweep`](crate::gpu::balance::RowBlocks::sweep)). The blocks resident at one time then hold
/// the same stretch of many rows, whose sorted columns lie in one stretch of `x`, which the
/// L2 keeps; in row order they hold all the chunks of a few rows and gather from all of `x`
/// at once, from DRAM once `x` outgrows the L2. On an H100 (2026-11-26, forced balanced,
/// same build, `SPGPU_CHUNK_MAJOR=0` against the default, 20 few-row matrices of 150 to
/// 2700 rows over 1 to 24 million columns, both precisions): 0.36x-1.00x the row-order time,
/// 0.76x in geometric mean, never slower (`uniform:200:20000000:100000` f64 599.0 -> 216.1
/// µs and f32 456.9 -> 185.2, `uniform:1000:20000000:20000` 609.6 -> 223.0 and 477.2 ->
/// 194.4); over an `x` that fits the L2 the same (`uniform:300:1000000:10000` 31.8 -> 31.7).
pub const SWEEP_MAX_ROWS: usize = SpmvPlan::FEW_ROWS_THREADS / 32;

/// The shape of a matrix's row blocks: the threads of a block, the entries and rows of a
/// stream block, and the entries of a chunk. Only the shapes of [`RowShape::ALL`] have
/// kernels. [`RowShape::DEFAULT`] is the constants above; the
/// kernel of each shape is compiled apart (`spmv_csr_balanced<threads>_<scalar>` in
/// `ptx/spmv.cu` for the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RowShape {
    /// Threads per block (at most 32 per row; a multiple of 32).
    pub threads: usize,
    /// Entries per stream block: 4 per thread, their products in shared memory as `f64`.
    pub entries: usize,
    /// Rows per stream block at most: `threads`, or a multiple of it (the kernel of the
    /// shape sums `rows / threads` rows per thread in a block of more rows than threads).
    pub rows: usize,
    /// Entries per chunk of a row that no stream block holds (longer than `entries` less
    /// its first entry's distance from a multiple of [`QUAD`](crate::gpu::balance::QUAD)).
    pub chunk: usize,
}

impl RowShape {
    /// Blocks of [`BLOCK_THREADS`] threads, [`BLOCK_ENTRIES`] entries and [`BLOCK_ROWS`]
    /// rows, chunks of [`CHUNK_ENTRIES`].
    pub const DEFAULT: RowShape =
        RowShape { threads: BLOCK_THREADS, entries: BLOCK_ENTRIES, rows: BLOCK_ROWS, chunk: CHUNK_ENTRIES };
    /// Blocks of 512 threads, 2048 entries and 512 rows, chunks of 2048: for matrices whose
    /// columns lie near the diagonal ([`LOCAL_MIN_SHARE`]).
    pub const T512: RowShape = RowShape { threads: 512, entries: 2048, rows: 512, chunk: 2048 };
    /// Every shape the kernels are compiled for.
    pub const ALL: [RowShape; 2] = [RowShape::DEFAULT, RowShape::T512];

    /// The compiled shape with this many threads per block.
    pub fn with_threads(threads: usize) -> Option<RowShape> {
        RowShape::ALL.into_iter().find(|s| s.threads == threads)
    }

    /// The shape in words, for [`explain`](SpmvPlan::explain).
    ///
    /// ```
    /// use spgpu::gpu::balance::RowShape;
    /// assert_eq!(RowShape::DEFAULT.describe(), "256 threads, up to 1024 entries and 512 rows");
    /// ```
    pub fn describe(self) -> String {
        format!("{} threads, up to {} entries and {} rows", self.threads, self.entries, self.rows)
    }
}

/// Entries within this many columns of their row are **near the diagonal**
/// ([`near_diagonal_share`]).
pub const NEAR_WINDOW: u64 = 2048;

/// Rows sampled by [`near_diagonal_share`] (evenly spaced; every row of a smaller matrix).
pub const NEAR_SAMPLE_ROWS: usize = 1 << 16;

/// The share of a CSR matrix's entries whose column lies within [`NEAR_WINDOW`] of their row,
/// estimated from [`NEAR_SAMPLE_ROWS`] evenly spaced rows (exact for smaller matrices); 0
/// without entries.
///
/// ```
/// use spgpu::gpu::balance::near_diagonal_share;
/// // row 0: columns 1 and 5000; row 1: column 0
/// assert_eq!(near_diagonal_share(&[0, 2, 3], &[1, 5000, 0]), 2.0 / 3.0);
/// ```
pub fn near_diagonal_share(row_offsets: &[u64], col_indices: &[u32]) -> f64 {
    let nrows = row_offsets.len().saturating_sub(1);
    let step = nrows.div_ceil(NEAR_SAMPLE_ROWS).max(1);
    // in parallel over the sampled rows: a few long rows can hold tens of millions of entries
    let (near, all) = (0..nrows.div_ceil(step))
        .into_par_iter()
        .with_min_len(64)
        .map(|i| {
            let r = i * step;
            let cols = &col_indices[row_offsets[r] as usize..row_offsets[r + 1] as usize];
            let near = cols.iter().filter(|&&c| (c as u64).abs_diff(r as u64) <= NEAR_WINDOW).count() as u64;
            (near, cols.len() as u64)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    if all == 0 {
        0.0
    } else {
        near as f64 / all as f64
    }
}

/// The auto plan cuts a matrix of more than [`SpmvPlan::SMALL_NNZ`](SpmvPlan::SMALL_NNZ)
/// entries into blocks of [`RowShape::T512`] when at least this share of its entries is near
/// the diagonal ([`near_diagonal_share`]), and into [`RowShape::DEFAULT`] blocks otherwise.
pub const LOCAL_MIN_SHARE: f64 = 0.25;

/// The shape of the row blocks of a matrix that runs the balanced kernel without hot
/// columns, and why (for [`SpmvPlan::explain`](SpmvPlan::explain)): `forced` if
/// given, else the one [`Tuning::balanced_threads`] names ([`BALANCED_THREADS_ENV`]), else the rule of [`LOCAL_MIN_SHARE`].
pub fn choose_shape(
    row_offsets: &[u64],
    col_indices: &[u32],
    forced: Option<RowShape>,
    tuning: &Tuning,
) -> (RowShape, String) {
    if let Some(s) = forced {
        return (s, format!("{} (forced)", s.describe()));
    }
    if let Some(s) = tuning.balanced_threads.and_then(RowShape::with_threads) {
        return (s, format!("{} ({BALANCED_THREADS_ENV})", s.describe()));
    }
    let nnz = col_indices.len();
    if nnz <= SpmvPlan::SMALL_NNZ {
        return (RowShape::DEFAULT, format!("{} (a small matrix)", RowShape::DEFAULT.describe()));
    }
    let share = near_diagonal_share(row_offsets, col_indices);
    let (shape, cmp) = if share >= LOCAL_MIN_SHARE { (RowShape::T512, ">=") } else { (RowShape::DEFAULT, "<") };
    let why = format!(
        "{}: {:.1}% of the entries within {NEAR_WINDOW} columns of the diagonal ({cmp} {:.0}%)",
        shape.describe(),
        100.0 * share,
        100.0 * LOCAL_MIN_SHARE
    );
    (shape, why)
}

/// The shares of the L2 cache between which `x` makes the auto plan run the balanced kernels'
/// variants that gather `x` with a 128-byte L2 prefetch hint ([`prefetch_x`]).
///
/// Between them the matrix streams evict part of `x` between its reads, and a miss that fills
/// the whole 128-byte line brings back neighbours that later gathers read; below, `x` stays in
/// the L2 and the hint changes nothing; above, too little of `x` stays for the neighbours to be
/// read before they are evicted, and the extra DRAM traffic costs. Measured on the H100
/// (2026-11-26, `spgpu bench --kernels auto`, time with the hint on every balanced kernel over
/// time without; power-law, web-like, R-MAT and uniform matrices, f64 and f32):
///
/// - first set (24 pairs, `x` at 15% to 256% of the L2): 0.946x-0.997x from 46% to 64%,
///   0.993x-1.003x below 40%, 0.998x-1.25x from 92% up. First bounds: 40% and 80%.
/// - second set (other sizes and seeds, 24 pairs): 0.952x-0.994x from 42% to 64%, but at
///   76% the power-law matrices lost (1.035x f64, 1.063x f32) while the web-like one gained
///   (0.981x). Upper bound moved to 70%.
/// - third set (18 pairs, the rule in the crate against [`PREFETCH_X_ENV`]` = 0`):
///   0.980x-0.996x from 41% to 64%, but at 67% the power-law matrices lost again (1.010x f64,
///   1.015x f32; the web-like one gained, 0.982x). Upper bound moved to 65%, where the
///   power-law matrices (uniformly random columns) cross over; matrices whose columns lie
///   near each other (web-like) would gain past it, which the rule gives up.
/// - checked on the H200 (L2 60 MiB), a held-out set of 16 pairs: the 8 the rule picked
///   0.955x-0.993x, the others 0.993x-1.007x (the same kernels: noise).
///
/// Row blocks of 512 threads, which the plan cuts when a quarter of the entries lie near the
/// diagonal ([`choose_shape`]), take the upper bound [`PREFETCH_X_LOCAL_MAX_SHARE`] instead.
pub const PREFETCH_X_L2_SHARE: (f64, f64) = (0.4, 0.65);

/// The upper bound of [`PREFETCH_X_L2_SHARE`] for row blocks of [`RowShape::T512`], whose
/// matrices' columns lie near each other (web-like graphs): the neighbours a 128-byte fill
/// brings back are read sooner, so the hint pays further. In sets 2 and 3 (H100) the web-like
/// matrices gained at 76% and 84% (0.981x, 0.984x) where the power-law ones lost, were even
/// at 92% (0.998x) and lost past the L2 (1.041x at 107%); held out (H100, 2026-11-26, the
/// hint forced on against off, two runs each, `docs/gpu-notes.md`),
/// 8 pairs from 69% to 89% (5 web-like graphs and a web-like Laplacian in f64, 2 web-like
/// graphs in f32) gained 0.977x-0.991x.
pub const PREFETCH_X_LOCAL_MAX_SHARE: f64 = 0.85;

/// Whether the balanced kernel (blocks in row order, with or without hot columns) gathers
/// `x` with the 128-byte L2 prefetch hint: `Some(why)` when it does, for
/// [`SpmvPlan::explain`](SpmvPlan::explain). `x_bytes` is the size of `x`, `l2_bytes`
/// the device's L2 (0 when unknown: no prefetch), `shape` the shape of the row blocks, and
/// `hint_in_ptx` whether the loaded PTX can express the hint (compute_80 and up; the
/// compute_70 PTX has no such load). The rule is [`PREFETCH_X_L2_SHARE`] (with
/// [`PREFETCH_X_LOCAL_MAX_SHARE`] for blocks of [`RowShape::T512`]), overridden by
/// [`Tuning::prefetch_x`] ([`PREFETCH_X_ENV`]).
///
/// ```
/// use spgpu::gpu::balance::{prefetch_x, RowShape};
/// use spgpu::gpu::Tuning;
/// let (l2, t) = (50 << 20, Tuning::default());
/// // a power-law graph of 4 million vertices: f64 x takes 61% of a 50 MiB L2, f32 x 31%
/// assert!(prefetch_x(4_000_000 * 8, l2, RowShape::DEFAULT, true, &t).is_some());
/// assert!(prefetch_x(4_000_000 * 4, l2, RowShape::DEFAULT, true, &t).is_none());
/// assert!(prefetch_x(4_000_000 * 8, l2, RowShape::DEFAULT, false, &t).is_none());
/// // 5 million vertices (76%): only where the columns lie near each other
/// assert!(prefetch_x(5_000_000 * 8, l2, RowShape::DEFAULT, true, &t).is_none());
/// assert!(prefetch_x(5_000_000 * 8, l2, RowShape::T512, true, &t).is_some());
/// ```
pub fn prefetch_x(
    x_bytes: usize,
    l2_bytes: usize,
    shape: RowShape,
    hint_in_ptx: bool,
    tuning: &Tuning,
) -> Option<String> {
    if !hint_in_ptx || l2_bytes == 0 {
        return None;
    }
    let share = x_bytes as f64 / l2_bytes as f64;
    let what = format!(
        "gathered with a 128-byte L2 prefetch: x takes {:.0}% of the {} L2",
        100.0 * share,
        crate::error::human_bytes(l2_bytes as u64)
    );
    match tuning.prefetch_x {
        Some(false) => None,
        Some(true) => Some(format!("{what} ({PREFETCH_X_ENV}=1)")),
        None => {
            let (lo, mut hi) = PREFETCH_X_L2_SHARE;
            let mut blocks = "";
            if shape == RowShape::T512 {
                hi = PREFETCH_X_LOCAL_MAX_SHARE;
                blocks = " for blocks of 512 threads";
            }
            (lo..=hi)
                .contains(&share)
                .then(|| format!("{what} (the rule{blocks}: {:.0}% to {:.0}%)", 100.0 * lo, 100.0 * hi))
        }
    }
}

/// Whether the row blocks of a matrix of `nrows` rows whose longest row holds `longest`
/// entries, cut to `shape`, put the chunks past each row's first in chunk-major order
/// ([`RowBlocks::sweep`](crate::gpu::storage::balance::RowBlocks::sweep)): blocks of the
/// default shape, fewer than [`SWEEP_MAX_ROWS`] rows, some row of more than one chunk, unless
/// [`Tuning::chunk_major`] is off ([`CHUNK_MAJOR_ENV`]).
///
/// ```
/// use spgpu::gpu::balance::{chunk_major, RowShape};
/// use spgpu::gpu::Tuning;
/// let t = Tuning::default();
/// assert!(chunk_major(100, 5000, RowShape::DEFAULT, &t));
/// assert!(!chunk_major(100, 2048, RowShape::DEFAULT, &t)); // one chunk: no order to change
/// assert!(!chunk_major(100, 5000, RowShape::T512, &t));
/// assert!(!chunk_major(100, 5000, RowShape::DEFAULT, &Tuning { chunk_major: Some(false), ..t }));
/// ```
pub fn chunk_major(nrows: usize, longest: usize, shape: RowShape, tuning: &Tuning) -> bool {
    tuning.chunk_major_allowed() && shape == RowShape::DEFAULT && nrows < SWEEP_MAX_ROWS && longest > shape.chunk
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn larger_blocks_for_columns_near_the_diagonal_of_large_matrices() {
        // 900,000 rows of 5 entries (4.5M, past SMALL_NNZ): near the diagonal, or far from it
        let t = Tuning::default();
        let nrows = 900_000usize;
        let off: Vec<u64> = (0..=nrows as u64).map(|r| 5 * r).collect();
        let near: Vec<u32> = (0..nrows).flat_map(|r| (0..5).map(move |k| (r + k * 400) as u32)).collect();
        let far: Vec<u32> =
            (0..nrows).flat_map(|r| (0..5).map(move |k| ((r * 7919 + k * 100_003) % nrows) as u32)).collect();
        assert_eq!(near_diagonal_share(&off, &near), 1.0);
        assert!(near_diagonal_share(&off, &far) < 0.01);
        let (shape, why) = choose_shape(&off, &near, None, &t);
        assert_eq!(shape, RowShape::T512, "{why}");
        assert!(why.contains("100.0% of the entries within 2048 columns"), "{why}");
        assert_eq!(choose_shape(&off, &far, None, &t).0, RowShape::DEFAULT);
        // a forced shape wins; a small matrix keeps the default
        assert_eq!(choose_shape(&off, &far, Some(RowShape::T512), &t).0, RowShape::T512);
        let small = &off[..1001];
        assert_eq!(choose_shape(small, &near[..5000], None, &t).0, RowShape::DEFAULT);
        // the tuning's shape wins over the rule, a forced one over the tuning
        let t256 = Tuning { balanced_threads: Some(256), ..t };
        let (shape, why) = choose_shape(&off, &near, None, &t256);
        assert_eq!(shape, RowShape::DEFAULT);
        assert!(why.contains(BALANCED_THREADS_ENV), "{why}");
        assert_eq!(choose_shape(&off, &near, Some(RowShape::T512), &t256).0, RowShape::T512);
    }

    #[test]
    fn prefetch_follows_the_tuning() {
        let l2 = 50 << 20;
        let on = Tuning { prefetch_x: Some(true), ..Tuning::default() };
        let off = Tuning { prefetch_x: Some(false), ..Tuning::default() };
        assert!(prefetch_x(1000, l2, RowShape::DEFAULT, true, &on).unwrap().contains("SPGPU_PREFETCH_X=1"));
        assert!(prefetch_x(1000, l2, RowShape::DEFAULT, false, &on).is_none(), "no hint in the PTX");
        assert!(prefetch_x(4_000_000 * 8, l2, RowShape::DEFAULT, true, &off).is_none());
    }
}
