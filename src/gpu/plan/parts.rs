//! The rule of column parts: a matrix whose `x` takes most of the L2 or more is cut into
//! ranges of columns, each run by the balanced kernel in turn. The parts are cut by
//! [`storage::split`](crate::gpu::storage::split).
//!
//! The balanced kernel gathers one entry of `x` per entry of the matrix. While `x` takes a
//! small part of the L2 those gathers are L2 hits; as it grows, on scattered columns, more
//! of them go to DRAM, which serves random sectors at half the L2's rate or less (on the
//! H200, 156 G random gathers per second from an `x` of up to 31 MiB, 78 G/s from 61 MiB:
//! `docs/gpu-notes.md`, 2026-11-26), while the streamed entries compete for the L2 too. Cut
//! into parts of at most [`PART_L2_SHARE`] of the L2 each, `x` is gathered one part after
//! the other: the first part computes `y = alpha*A_0*x + beta*y`, each next part adds
//! `alpha*A_k*x`. Every part keeps all the rows (empty where a row has no entry in its
//! columns), so each costs its row offsets and a read and write of `y` more than one pass:
//! the rule asks for rows of [`MIN_MEAN_ROW`] entries or more on average.
//!
//! Fitted on the H200 (2026-11-27, two rounds in one call, `SPGPU_COLUMN_PARTS` forcing 1,
//! 2 or 3 parts) on power-law graphs of 5 to 12 million rows (7 to 13 entries per row) in
//! f64 and f32, which the balanced kernel runs in one pass, time against one pass by the
//! share of the L2 that `x` takes:
//!
//! | `x` / L2 | 2 parts | 3 parts |
//! |---|---|---|
//! | 32%, 38% | 1.078x-1.080x | 1.157x-1.166x |
//! | 51% | 0.978x | 1.047x |
//! | 64% (two matrices) | 0.772x-0.794x | 0.833x-0.848x |
//! | 76% (two matrices) | 0.687x | 0.730x-0.732x |
//! | 102% | 0.611x | 0.569x |
//! | 127% | 0.632x | 0.519x |
//! | 153% | 0.681x | 0.527x |
//!
//! The rule (one pass up to [`MIN_X_L2_SHARE`], 60%; above it parts of at most half the L2:
//! two up to 100%, three up to 150%) takes the fastest of those measured on every row up to
//! 127% (at 51% one pass and two parts are within 2%); at 153% it gives four parts, not
//! measured. Not where the one pass keeps hot columns (R-MAT graphs lost 7-9% in parts:
//! [`crate::gpu::hot`]). Held out: `powerlaw:7000000:9` f64 (`x` at 89%) took 0.654x the one
//! pass's time in two parts (1.54x cuSPARSE against 1.006x).
//!
//! **In place of SELL** (H200, 2026-11-27, the same method): rows of uniformly random columns,
//! which rule 5 gives SELL, gain more and sooner, since SELL gathers `x` without the L2
//! prefetch hint that the balanced kernel's one pass uses from 40% of the L2
//! ([`crate::gpu::storage::balance::PREFETCH_X_L2_SHARE`]). Time in parts (the rule's count, or the
//! fastest of 2 and 3 where the rule then gave one pass) against SELL in one pass:
//!
//! | matrix | `x` / L2 (f64, f32) | f64 | f32 |
//! |---|---|---|---|
//! | `uniform:3000000:3000000:16` | 38% | 1.089x (2 parts) | |
//! | `uniform:3500000:3500000:16` | 45% | 1.034x (2 parts) | |
//! | `uniform:4000000:4000000:12` | 51% | 0.948x-0.954x | |
//! | `uniform:4400000:4400000:12` | 56% | 0.878x | |
//! | `uniform:5000000:5000000:16` | 64%, 32% | 0.792x | 1.072x (2 parts) |
//! | `uniform:8000000:8000000:12` | 102%, 51% | 0.549x | 0.931x |
//! | `uniform:9000000:9000000:6` | 115%, 57% | 0.657x | 0.905x |
//! | `uniform:2000000:10000000:24` | 127%, 64% | 0.510x | 0.802x |
//! | `uniform:12000000:12000000:8` | 153%, 76% | 0.547x | 0.696x |
//! | `uniform:12000000:12000000:4` | 153%, 76% | 0.756x | 0.761x |
//! | `uniform:12000000:12000000:3` | 153%, 76% | 0.660x | 0.724x |
//! | `uniform:16000000:16000000:2` | 204%, 102% | 0.838x-0.882x | 0.687x |
//! | `transpose:uniform:16000000:8000000:3` | 204%, 102% | 0.615x | 0.566x |
//!
//! So in place of SELL parts begin at [`MIN_X_L2_SHARE_SELL`], 50%, for rows of
//! [`SELL_EARLY_MEAN_ROW`] (8) or more on average, at 60% for shorter rows. The last matrix ran
//! 0.96x / 0.98x cuSPARSE in one pass, 1.56x / 1.73x in parts.
//!
//! **Skewed columns stay in one pass.** R-MAT graphs whose columns are too unevenly read for
//! parts but not enough for hot columns lost in parts: `rmat:24:2` f64 took 454 µs in one
//! pass, 501 in two parts and 554 in three (H200, 2026-11-27); held out later that day,
//! `rmat:24:3`, `rmat:24:4` and `rmat:23:3` f64 took 1.13x-1.29x the one pass's time, and
//! `rmat:24:4` f32 1.08x. Their popular columns stay in the L2 in one pass. So the rule asks
//! that the entries spread over the columns ([`spread`], [`MIN_SPREAD`]).
//!
//! Each row's sum is its parts' sums added in column order, a fixed order: repeated calls
//! give the same bits (not the bits of one pass, which adds the entries in another order).

pub use crate::gpu::plan::tuning::COLUMN_PARTS_ENV;
use crate::gpu::plan::{SpmvKernel, Tuning};

/// A part's `x` takes at most this share of the L2.
pub const PART_L2_SHARE: f64 = 0.5;

/// Parts begin where `x` takes more than this share of the L2, for a matrix that the
/// balanced kernel would run in one pass: at 51% and 53% two parts and one pass (with the
/// L2 prefetch of [`crate::gpu::balance::prefetch_x`]) were within 2% of each other (0.978x;
/// `powerlaw:4000000` f64 1.007x), at 64% two parts took 0.772x-0.794x the time.
pub const MIN_X_L2_SHARE: f64 = 0.6;

/// Parts begin where `x` takes more than this share of the L2, for a matrix that SELL would
/// run in one pass with rows of [`SELL_EARLY_MEAN_ROW`] entries or more on average:
/// uniformly random rows took 1.034x the time of SELL in two parts at 45%, 0.931x-0.954x at
/// 51% and 0.878x-0.884x at 56-57% (rows of 9 to 12; the module's table).
pub const MIN_X_L2_SHARE_SELL: f64 = 0.5;

/// Rows this long on average, in place of SELL, take parts from [`MIN_X_L2_SHARE_SELL`];
/// shorter rows from [`MIN_X_L2_SHARE`], since each part costs the same per row while the
/// gathers it saves are fewer: `uniform:4000000:4000000:4:3` f64 (`x` at 51%, 4 per row)
/// took 1.10x the time of SELL in two parts (held out, H200, 2026-11-27), where rows of 9, 10, 12
/// and 20 gained or broke even at 51% to 57%. Rows of 6 gained too at 57% (f32, 0.905x),
/// which this bound gives up.
pub const SELL_EARLY_MEAN_ROW: f64 = 8.0;

/// The fewest entries per row, on average, for parts: each part reads all the row offsets
/// and `y` again. Rows of 2 uniformly random columns still gained (`uniform:16000000:16000000:2`
/// 0.838x-0.894x in f64, 0.685x-0.714x in f32; rows of 3 to 16 gained more), as did
/// power-law graphs of 7 to 13 per row. A generator that drops repeated columns leaves a
/// mean a hair under 2, hence 1.9. Fewer than 2 per row was not measured.
pub const MIN_MEAN_ROW: f64 = 1.9;

/// Parts only for matrices whose reads of `x` spread over the columns: the most-read
/// columns that hold [`SPREAD_SHARE`] of the entries must number at least this share of
/// `SPREAD_SHARE` of the columns ([`spread`]). Uniformly random columns give 0.81-1.00
/// (power-law graphs 0.93, uniform rows of 3 to 16 0.81-0.94, their transposes 1.00), R-MAT
/// graphs 0.08-0.10: there the one pass finds the popular columns in the L2, and parts
/// lost (held out on the H200, 2026-11-27, the rule without this test: `rmat:24:3`,
/// `rmat:24:4`, `rmat:23:3` f64 and `rmat:24:4` f32 took 1.08x-1.29x the time of one pass;
/// and a first run that day: `rmat:24:2`, 1.10x-1.22x). With the test, R-MAT graphs of 2 to 5 per row
/// and 8 to 33 million columns stayed in one pass (held out: `rmat:23:5:2`, `rmat:25:2`,
/// `transpose:rmat:24:3`).
///
/// Uniformly random columns spread less where the matrix has few entries per column
/// (Poisson: 0.71 at 1.6 per column, 0.59 at 1, 0.5 near 0.75): below about 0.75 per column
/// the gate keeps one pass, where `x` is read about once per entry, parts or not. Not
/// measured: the fewest per column measured in parts was 1.6 (`uniform:1000000:10000000:16`
/// in the first measurement (H200, 2026-11-27), each column range run as a matrix of its own: 0.66x
/// the time of one pass).
pub const MIN_SPREAD: f64 = 0.5;

/// The share of the entries that [`spread`] asks the fewest columns to hold.
pub const SPREAD_SHARE: f64 = 0.9;

/// How evenly the entries spread over the columns: the fewest columns that hold
/// [`SPREAD_SHARE`] of the entries (the most-read first), over `SPREAD_SHARE` of all the
/// columns. `counts` holds the entries of each column; the last column taken counts for
/// the part of it needed. 1 when every column holds as many; near 0 when a few columns
/// hold most entries; 0 for no entries.
///
/// ```
/// use spgpu::gpu::split::spread;
/// assert_eq!(spread(&[3, 3, 3, 3, 3, 3, 3, 3, 3, 3]), 1.0);
/// // one column of ten holds 91 of the 100 entries: 90/91 of it holds 90%
/// assert!((spread(&[91, 1, 1, 1, 1, 1, 1, 1, 1, 1]) - 90.0 / 91.0 / 9.0).abs() < 1e-12);
/// ```
pub fn spread(counts: &[u32]) -> f64 {
    let nnz: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    if nnz == 0 {
        return 0.0;
    }
    // the columns by their count, most-read first, without sorting them all: a histogram
    // of the counts up to SPREAD_HISTOGRAM, the few larger counts sorted
    let mut columns_with = vec![0u64; SPREAD_HISTOGRAM + 1];
    let mut large: Vec<u32> = Vec::new();
    for &c in counts {
        match columns_with.get_mut(c as usize) {
            Some(n) => *n += 1,
            None => large.push(c),
        }
    }
    large.sort_unstable_by(|a, b| b.cmp(a));
    let runs = large.iter().map(|&c| (c as usize, 1u64));
    let runs = runs.chain((1..=SPREAD_HISTOGRAM).rev().map(|c| (c, columns_with[c])));
    let want = SPREAD_SHARE * nnz as f64;
    let (mut held, mut columns) = (0.0, 0.0);
    for (c, n) in runs {
        let (c, n) = (c as f64, n as f64);
        if held + n * c >= want {
            columns += (want - held) / c;
            break;
        }
        held += n * c;
        columns += n;
    }
    columns / (SPREAD_SHARE * counts.len() as f64)
}

/// Counts up to this go to [`spread`]'s histogram; the larger ones (at most `nnz / 65536`
/// columns) are sorted.
const SPREAD_HISTOGRAM: usize = 1 << 16;

/// The most parts.
pub const MAX_PARTS: usize = 16;

/// The most that the parts' extra row offsets may add to the CSR arrays' bytes (each part
/// beyond the first stores all the row offsets again), within the issue's 25% of extra
/// storage with room left for the row blocks.
pub const MAX_EXTRA_OFFSETS: f64 = 0.2;

/// How many column parts the rule gives a matrix of `nrows` rows, `ncols` columns and `nnz`
/// entries with values of `value_bytes` bytes, on a device with an L2 of `l2_bytes`, in
/// place of `one_pass` (the kernel the plan gives it, SELL or balanced): 1 (one pass)
/// unless `x` takes more than [`MIN_X_L2_SHARE`] of the L2 ([`MIN_X_L2_SHARE_SELL`] in
/// place of SELL with rows of [`SELL_EARLY_MEAN_ROW`] or more) and the rows hold at least
/// [`MIN_MEAN_ROW`] entries on average; then enough parts that each part's `x` takes at
/// most [`PART_L2_SHARE`] of the L2, at most [`MAX_PARTS`], and no more than keep the extra
/// row offsets within [`MAX_EXTRA_OFFSETS`] of the CSR arrays' bytes. The caller checks the
/// rest of the rule (scattered and spread columns, not few rows, no hot columns:
/// `DeviceCsr::upload`).
///
/// ```
/// use spgpu::gpu::split::column_parts;
/// use spgpu::gpu::SpmvKernel::{Balanced, Sell};
/// let l2 = 60 << 20;
/// // 8 million columns of f64 (64 MB) and 13 entries per row: three parts of 21 MB
/// assert_eq!(column_parts(8_000_000, 8_000_000, 104_000_000, 8, l2, Balanced), 3);
/// // in f32 (32 MB, 51% of the L2): one pass after the balanced kernel, two after SELL
/// assert_eq!(column_parts(8_000_000, 8_000_000, 104_000_000, 4, l2, Balanced), 1);
/// assert_eq!(column_parts(8_000_000, 8_000_000, 104_000_000, 4, l2, Sell), 2);
/// // an x of 24 MB, 40% of the L2: one pass
/// assert_eq!(column_parts(3_000_000, 3_000_000, 39_000_000, 8, l2, Sell), 1);
/// // 1.5 entries per row: one pass
/// assert_eq!(column_parts(16_777_216, 16_777_216, 25_000_000, 8, l2, Balanced), 1);
/// ```
pub fn column_parts(
    nrows: usize,
    ncols: usize,
    nnz: usize,
    value_bytes: usize,
    l2_bytes: usize,
    one_pass: SpmvKernel,
) -> usize {
    let x_bytes = ncols as f64 * value_bytes as f64;
    if l2_bytes == 0
        || x_bytes <= min_x_l2_share(nrows, nnz, one_pass) * l2_bytes as f64
        || (nnz as f64) < MIN_MEAN_ROW * nrows as f64
    {
        return 1;
    }
    let offset = if nnz > crate::INDEX_LIMIT { 8.0 } else { 4.0 };
    let csr = offset * (nrows as f64 + 1.0) + (4 + value_bytes) as f64 * nnz as f64;
    let by_memory = 1 + (MAX_EXTRA_OFFSETS * csr / (offset * (nrows as f64 + 1.0))) as usize;
    ((x_bytes / (PART_L2_SHARE * l2_bytes as f64)).ceil() as usize).clamp(1, MAX_PARTS.min(by_memory))
}

/// The share of the L2 past which `x` makes [`column_parts`] cut a matrix of `nrows` rows
/// and `nnz` entries that `one_pass` would run: [`MIN_X_L2_SHARE_SELL`] in place of SELL
/// with rows of [`SELL_EARLY_MEAN_ROW`] or more on average, else [`MIN_X_L2_SHARE`].
pub(crate) fn min_x_l2_share(nrows: usize, nnz: usize, one_pass: SpmvKernel) -> f64 {
    if one_pass == SpmvKernel::Sell && nnz as f64 >= SELL_EARLY_MEAN_ROW * nrows as f64 {
        MIN_X_L2_SHARE_SELL
    } else {
        MIN_X_L2_SHARE
    }
}

/// Why a matrix of `nrows` rows and `nnz` entries whose columns [`spread`] as `spread` is
/// cut in place of `one_pass`, for the plan's explanation: the count [`Tuning::column_parts`]
/// forces ([`COLUMN_PARTS_ENV`]), or the rule's terms.
pub(crate) fn rule_note(nrows: usize, nnz: usize, one_pass: SpmvKernel, spread: f64, tuning: &Tuning) -> String {
    if let Some(k) = tuning.column_parts {
        return format!("{COLUMN_PARTS_ENV}={k}");
    }
    format!(
        "the rule: x past {:.0}% of the L2 in place of {}, scattered columns, {:.1} >= {MIN_MEAN_ROW} entries \
         per row, the entries spread over the columns ({spread:.2} >= {MIN_SPREAD}: split::spread), parts of at \
         most {:.0}% of the L2",
        100.0 * min_x_l2_share(nrows, nnz, one_pass),
        if one_pass == SpmvKernel::Sell { "SELL" } else { "one balanced pass" },
        nnz as f64 / nrows.max(1) as f64,
        100.0 * PART_L2_SHARE
    )
}

/// [`column_parts`] for a matrix of `nrows` rows, `ncols` columns and `nnz` entries of
/// `value_bytes` bytes on a device with an L2 of `l2_bytes`, or what [`Tuning::column_parts`]
/// forces (0: one pass; at most [`MAX_PARTS`] and one part per column).
pub(crate) fn parts_for(
    nrows: usize,
    ncols: usize,
    nnz: usize,
    value_bytes: usize,
    l2_bytes: usize,
    one_pass: SpmvKernel,
    tuning: &Tuning,
) -> usize {
    match tuning.column_parts {
        Some(0) => 1,
        Some(k) => k.clamp(1, MAX_PARTS).min(ncols.max(1)),
        None => column_parts(nrows, ncols, nnz, value_bytes, l2_bytes, one_pass),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        use SpmvKernel::{Balanced, Sell};
        let l2 = 60 << 20;
        let parts = |nrows, ncols, nnz, bytes, one_pass| column_parts(nrows, ncols, nnz, bytes, l2, one_pass);
        // an x of 64 MB, 13 per row: parts of at most 30 MiB, three
        assert_eq!(parts(8_000_000, 8_000_000, 104_000_000, 8, Balanced), 3);
        assert_eq!(parts(8_000_000, 8_000_000, 104_000_000, 8, Sell), 3);
        // 1.8 and 1.9 per row
        assert_eq!(parts(8_000_000, 8_000_000, 14_400_000, 8, Sell), 1);
        assert_eq!(parts(8_000_000, 8_000_000, 15_200_000, 8, Sell), 2);
        assert_eq!(parts(8_000_000, 7_000_000, 104_000_000, 8, Balanced), 2); // 56 MB
        assert_eq!(parts(8_000_000, 4_700_000, 104_000_000, 8, Balanced), 1); // 37.6 MB, 59.8%
        assert_eq!(parts(8_000_000, 4_800_000, 104_000_000, 8, Balanced), 2); // 38.4 MB, 61%
        assert_eq!(parts(8_000_000, 3_900_000, 104_000_000, 8, Sell), 1); // 31.2 MB, 49.6%
        assert_eq!(parts(8_000_000, 4_000_000, 104_000_000, 8, Sell), 2); // 32 MB, 50.9%

        // rows of 4 in place of SELL: from 60%
        assert_eq!(parts(4_000_000, 4_000_000, 16_000_000, 8, Sell), 1); // 50.9%
        assert_eq!(parts(4_000_000, 4_800_000, 16_000_000, 8, Sell), 2); // 61%
        assert_eq!(parts(1_000_000, 2_000_000_000, 104_000_000, 8, Balanced), MAX_PARTS);
        assert_eq!(column_parts(10, 10, 100, 8, 0, Sell), 1);
        // rows of 8 over 100 million f32 columns: 13 parts by the L2, but the extra offsets
        // (4 bytes a row per part) stay within 20% of 68 bytes a row: 1 + 3 = 4 parts
        assert_eq!(parts(10_000_000, 100_000_000, 80_000_000, 4, Balanced), 4);
        // the spread of the columns
        assert_eq!(spread(&[]), 0.0);
        assert_eq!(spread(&[0, 0]), 0.0);
        assert_eq!(spread(&[5; 100]), 1.0);
        // 90 of 100 entries in 10 columns of 1000
        let mut counts = vec![0u32; 1000];
        counts[..10].fill(9);
        counts[10..20].fill(1);
        assert!((spread(&counts) - 10.0 / 900.0).abs() < 1e-12);
        // equal columns: 1, not more
        assert!((spread(&[4; 7]) - 1.0).abs() < 1e-12);
        // counts past the histogram: one column of 200000 entries and 20000 of 1
        let mut counts = vec![1u32; 20_001];
        counts[0] = 200_000;
        let want = (0.9 * 220_000.0 / 200_000.0) / (0.9 * 20_001.0);
        assert!((spread(&counts) - want).abs() < 1e-12, "{}", spread(&counts));
        // more than 90% in large counts, sorted
        let mut counts = vec![0u32; 100];
        counts[3] = 100_000;
        counts[7] = 300_000;
        counts[9] = 1;
        let want = (1.0 + (0.9 * 400_001.0 - 300_000.0) / 100_000.0) / 90.0;
        assert!((spread(&counts) - want).abs() < 1e-12, "{}", spread(&counts));
        let uniform = crate::gen::random_uniform::<f32>(20_000, 50_000, 16, 1);
        let got = spread(&crate::gpu::plan::hot::column_counts(uniform.col_indices(), uniform.ncols()));
        assert!((0.85..=1.0).contains(&got), "uniform columns: {got}");
        let rmat = crate::gen::from_spec::<f32>("rmat:16:3").unwrap();
        let got = spread(&crate::gpu::plan::hot::column_counts(rmat.col_indices(), rmat.ncols()));
        assert!(got < 0.2, "R-MAT: {got}");
        // rows of 3 (f64: 36 bytes of entries and 4 of offsets a row): a third part's
        // offsets would take just over 20%
        assert_eq!(parts(12_000_000, 12_000_000, 36_000_000, 8, Sell), 2);
    }

    #[test]
    fn the_tuning_forces_a_count() {
        let l2 = 60 << 20;
        let t = |k| Tuning { column_parts: Some(k), ..Tuning::default() };
        let (n, nnz) = (8_000_000, 104_000_000);
        assert_eq!(parts_for(n, n, nnz, 8, l2, SpmvKernel::Balanced, &Tuning::default()), 3);
        assert_eq!(parts_for(n, n, nnz, 8, l2, SpmvKernel::Balanced, &t(0)), 1);
        assert_eq!(parts_for(n, n, nnz, 8, l2, SpmvKernel::Balanced, &t(2)), 2);
        assert_eq!(parts_for(n, n, nnz, 8, l2, SpmvKernel::Balanced, &t(99)), MAX_PARTS);
        assert_eq!(parts_for(10, 3, 30, 8, l2, SpmvKernel::Balanced, &t(5)), 3, "one part per column at most");
        assert_eq!(rule_note(n, nnz, SpmvKernel::Sell, 0.9, &t(2)), "SPGPU_COLUMN_PARTS=2");
        assert!(rule_note(n, nnz, SpmvKernel::Sell, 0.9, &Tuning::default()).starts_with("the rule: x past 50%"));
    }
}
