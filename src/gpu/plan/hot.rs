//! The hot-column rule: whether the balanced kernel keeps the most-read entries of `x` in
//! shared memory, and which. The storage layer ([`storage::hot`](crate::gpu::storage::hot))
//! finds the device's limits ([`HotLimits`]) and counts the columns on the device; the
//! decision is made here from those counts.

use std::sync::atomic::{AtomicU32, Ordering};

pub use crate::gpu::plan::tuning::{HOT_COLUMNS_ENV, HOT_MIN_SHARE_ENV};
use crate::gpu::plan::{SpmvPlan, Tuning};

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
}

/// Whether an upload gives the balanced kernel hot columns.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HotChoice {
    /// By the rule of [`considered`] and [`decide`]: matrices of more than [`SpmvPlan::SMALL_NNZ`] entries
    /// and at least [`MIN_ENTRIES_PER_COLUMN`] entries per column whose hot columns hold at
    /// least [`MIN_SHARE_SCATTERED`] of the entries ([`MIN_SHARE`] where the columns lie near
    /// the diagonal) and [`MIN_SKEW`] times their share of the columns
    /// (unless
    /// [`Tuning::hot_columns`] is off, [`HOT_COLUMNS_ENV`]).
    #[default]
    Auto,
    /// Never.
    Off,
    /// Always (tests): at most this many hot columns (fewer when shared memory holds fewer),
    /// every column with an entry qualifying, whatever the matrix's size.
    Force(usize),
}

/// The share of the entries that hot columns must hold for the hot-column kernel to run, on
/// matrices whose columns lie near the diagonal (the plan cuts their rows into blocks of
/// [`RowShape::T512`](crate::gpu::balance::RowShape::T512)); the others need
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
/// `docs/gpu-notes.md`), hot columns against none:
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

/// The share of the entries that hot columns must hold: the one [`Tuning::hot_min_share`]
/// names ([`HOT_MIN_SHARE_ENV`]), else [`MIN_SHARE`] where the columns lie near the diagonal
/// (`local`), else [`MIN_SHARE_SCATTERED`].
pub fn min_share(local: bool, tuning: &Tuning) -> f64 {
    tuning.hot_min_share.unwrap_or(if local { MIN_SHARE } else { MIN_SHARE_SCATTERED })
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

/// What the device allows the hot columns of one matrix ([`storage::hot`](crate::gpu::storage::hot)
/// reads it from the kernel's shared memory and occupancy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HotLimits {
    /// Hot columns at most: [`HOT_BYTES_PER_BLOCK`] or what shared memory holds, fewer when
    /// forced ([`capacity`]).
    pub(crate) capacity: usize,
    /// A hot column has more entries than this ([`HotColumns::min_entries_for`], 0 when
    /// forced).
    pub(crate) min_entries: u32,
    /// Whether the rules of [`min_share`] and [`MIN_SKEW`] apply ([`HotChoice::Auto`]).
    pub(crate) auto: bool,
}

/// Whether hot columns are considered for a matrix of `nnz` entries and `ncols` columns:
/// `Ok(())` when they are, else `Err` with the note for [`explain`](SpmvPlan::explain)
/// (`Some` only where the matrix is too sparse). Not considered: [`HotChoice::Off`], no
/// entries, and for [`HotChoice::Auto`] at most [`SpmvPlan::SMALL_NNZ`] entries
/// (latency-bound: the extra gather launch and each block's copy would show), fewer than
/// [`MIN_ENTRIES_PER_COLUMN`] entries per column, or [`Tuning::hot_columns`] off.
pub(crate) fn considered(
    nnz: usize,
    ncols: usize,
    choice: HotChoice,
    tuning: &Tuning,
) -> std::result::Result<(), Option<String>> {
    let auto = choice == HotChoice::Auto;
    let off = !tuning.hot_allowed();
    let sparse = nnz < ncols.saturating_mul(MIN_ENTRIES_PER_COLUMN);
    if choice == HotChoice::Off || (auto && (off || nnz <= SpmvPlan::SMALL_NNZ || sparse)) || nnz == 0 {
        if auto && !off && nnz > SpmvPlan::SMALL_NNZ && sparse {
            return Err(Some(format!(
                "no hot columns: {:.1} entries per column (< {MIN_ENTRIES_PER_COLUMN})",
                nnz as f64 / ncols.max(1) as f64
            )));
        }
        return Err(None);
    }
    Ok(())
}

/// Hot columns at most, with `per_block` bytes of shared memory per block for values of
/// `value_bytes` bytes: as many as fit, at most the forced count.
pub(crate) fn capacity(per_block: usize, value_bytes: usize, choice: HotChoice) -> usize {
    match choice {
        HotChoice::Force(n) => n.min(per_block / value_bytes),
        _ => per_block / value_bytes,
    }
}

/// The hot columns that `counts` (the entries of each of the `ncols` columns, `n` in all)
/// give within `limits`, or why none qualify: the most-read columns that repay their copy
/// ([`HotColumns::from_counts`]), if they hold at least [`min_share`]`(local)` of the
/// entries (`local`: the matrix's columns lie near the diagonal) and [`MIN_SKEW`] times
/// their share of the columns (or are forced).
pub(crate) fn decide(
    counts: &[u32],
    n: usize,
    ncols: usize,
    local: bool,
    limits: &HotLimits,
    tuning: &Tuning,
) -> std::result::Result<HotColumns, String> {
    let hot = HotColumns::from_counts(counts, limits.capacity, limits.min_entries);
    // the hot columns' share of the entries, and how many times their share of the columns
    let share = hot.entries() as f64 / n.max(1) as f64;
    let skew = share * ncols as f64 / hot.len().max(1) as f64;
    let least = min_share(local, tuning);
    if hot.is_empty() {
        return Err(format!(
            "no hot columns: no column holds more than {} entries (what copying it to every block costs)",
            limits.min_entries
        ));
    }
    if limits.auto && (share < least || skew < MIN_SKEW) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scattered_columns_need_a_smaller_share_than_columns_near_the_diagonal() {
        const { assert!(MIN_SHARE_SCATTERED < MIN_SHARE) };
        let t = Tuning::default();
        assert_eq!(min_share(true, &t), MIN_SHARE);
        assert_eq!(min_share(false, &t), MIN_SHARE_SCATTERED);
        let t = Tuning { hot_min_share: Some(0.5), ..t };
        assert_eq!((min_share(true, &t), min_share(false, &t)), (0.5, 0.5));
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

    #[test]
    fn the_gate_and_the_decision() {
        let t = Tuning::default();
        let big = SpmvPlan::SMALL_NNZ + 1;
        assert_eq!(considered(big, big / 10, HotChoice::Auto, &t), Ok(()));
        assert_eq!(considered(SpmvPlan::SMALL_NNZ, 10, HotChoice::Auto, &t), Err(None), "small");
        assert!(matches!(considered(big, big, HotChoice::Auto, &t), Err(Some(w)) if w.contains("entries per column")));
        let off = Tuning { hot_columns: Some(false), ..t };
        assert_eq!(considered(big, big / 10, HotChoice::Auto, &off), Err(None));
        assert_eq!(considered(10, 10, HotChoice::Force(4), &off), Ok(()), "forced whatever the tuning");
        assert_eq!(considered(0, 10, HotChoice::Force(4), &t), Err(None));
        assert_eq!(capacity(48 << 10, 8, HotChoice::Auto), 6144);
        assert_eq!(capacity(48 << 10, 8, HotChoice::Force(64)), 64);
        // 1000 entries in column 0 of 1000 columns, 1000 spread over the others
        let mut counts = vec![1u32; 1000];
        counts[0] = 1000;
        let limits = HotLimits { capacity: 16, min_entries: 10, auto: true };
        let hot = decide(&counts, 1999, 1000, false, &limits, &t).unwrap();
        assert_eq!(hot.columns(), &[0]);
        let strict = Tuning { hot_min_share: Some(0.9), ..t };
        assert!(decide(&counts, 1999, 1000, false, &limits, &strict).unwrap_err().contains("< 90%"));
    }
}
