//! Column parts: a matrix whose `x` takes most of the L2 or more, cut into ranges of
//! columns, each run by the balanced kernel in turn.
//!
//! The balanced kernel gathers one entry of `x` per entry of the matrix. While `x` takes a
//! small part of the L2 those gathers are L2 hits; as it grows, on scattered columns, more
//! of them go to DRAM, which serves random sectors at half the L2's rate or less (on the
//! H200, 156 G random gathers per second from an `x` of up to 31 MiB, 78 G/s from 61 MiB:
//! `docs/gpu-notes.md`, session 19), while the streamed entries compete for the L2 too. Cut
//! into parts of at most [`PART_L2_SHARE`] of the L2 each, `x` is gathered one part after
//! the other: the first part computes `y = alpha*A_0*x + beta*y`, each next part adds
//! `alpha*A_k*x`. Every part keeps all the rows (empty where a row has no entry in its
//! columns), so each costs its row offsets and a read and write of `y` more than one pass:
//! the rule asks for rows of [`MIN_MEAN_ROW`] entries or more on average.
//!
//! Fitted on the H200 (2026-11-27, two rounds in one call, `SPGPU_COLUMN_PARTS` forcing 1,
//! 2 or 3 parts) on power-law graphs of 5 to 12 million rows (7 to 13 entries per row) in
//! f64 and f32, time against one pass by the share of the L2 that `x` takes:
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
//! [`super::hot`]). Held out: `powerlaw:7000000:9` f64 (`x` at 89%) took 0.654x the one
//! pass's time in two parts (1.54x cuSPARSE against 1.006x). With 2 entries per row the
//! rows' bytes outweigh the gathers: `rmat:24:2` f64 (16.8 million columns) took 454 µs in
//! one pass, 501 in two parts and 554 in three.
//!
//! Each row's sum is its parts' sums added in column order, a fixed order: repeated calls
//! give the same bits (not the bits of one pass, which adds the entries in another order).

use rayon::prelude::*;

use crate::{CsrMatrix, Scalar};

/// A part's `x` takes at most this share of the L2.
pub const PART_L2_SHARE: f64 = 0.5;

/// Parts begin where `x` takes more than this share of the L2: at 51% and 53% two parts
/// and one pass (with the L2 prefetch of [`super::balance::prefetch_x`]) were within 2% of
/// each other (0.978x; `powerlaw:4000000` f64 1.007x), at 64% two parts took 0.772x-0.794x
/// the time.
pub const MIN_X_L2_SHARE: f64 = 0.6;

/// The fewest entries per row, on average, for parts: below it the extra passes over the
/// rows (their offsets and `y`) cost more than the gathers save (`rmat:24:2`, 2 per row,
/// ran 1.10x-1.22x slower in two or three parts; power-law graphs of 7 to 13 per row gained
/// in the fit). Not fitted between 2 and 7.
pub const MIN_MEAN_ROW: f64 = 8.0;

/// The most parts.
pub const MAX_PARTS: usize = 16;

/// The most that the parts' extra row offsets may add to the CSR arrays' bytes (each part
/// beyond the first stores all the row offsets again), within the issue's 25% of extra
/// storage with room left for the row blocks.
pub const MAX_EXTRA_OFFSETS: f64 = 0.2;

/// Set to `0` to run one pass whatever the rule says, or to a number of parts to force it
/// (on matrices the balanced kernel runs without hot columns), to compare.
pub const COLUMN_PARTS_ENV: &str = "SPGPU_COLUMN_PARTS";

/// How many column parts the rule gives a matrix of `nrows` rows, `ncols` columns and `nnz`
/// entries with values of `value_bytes` bytes, on a device with an L2 of `l2_bytes`: 1 (one
/// pass) unless `x` takes more than [`MIN_X_L2_SHARE`] of the L2 and the rows hold at least
/// [`MIN_MEAN_ROW`] entries on average; then enough parts that each part's `x` takes at most
/// [`PART_L2_SHARE`] of the L2, at most [`MAX_PARTS`], and no more than keep the extra row offsets within
/// [`MAX_EXTRA_OFFSETS`] of the CSR arrays' bytes. The caller checks the rest of the
/// rule (the balanced kernel, scattered columns, not few rows, no hot
/// columns: `DeviceCsr::upload`).
///
/// ```
/// use spgpu::gpu::split::column_parts;
/// let l2 = 60 << 20;
/// // 8 million columns of f64 (64 MB) and 13 entries per row: three parts of 21 MB
/// assert_eq!(column_parts(8_000_000, 8_000_000, 104_000_000, 8, l2), 3);
/// // in f32 (32 MB, 51% of the L2): one pass
/// assert_eq!(column_parts(8_000_000, 8_000_000, 104_000_000, 4, l2), 1);
/// // an x of 24 MB, 40% of the L2: one pass
/// assert_eq!(column_parts(3_000_000, 3_000_000, 39_000_000, 8, l2), 1);
/// // two entries per row: one pass
/// assert_eq!(column_parts(16_777_216, 16_777_216, 33_000_000, 8, l2), 1);
/// ```
pub fn column_parts(nrows: usize, ncols: usize, nnz: usize, value_bytes: usize, l2_bytes: usize) -> usize {
    let x_bytes = ncols as f64 * value_bytes as f64;
    if l2_bytes == 0 || x_bytes <= MIN_X_L2_SHARE * l2_bytes as f64 || (nnz as f64) < MIN_MEAN_ROW * nrows as f64 {
        return 1;
    }
    let offset = if super::positions::positions_need_64_bits(nnz) { 8.0 } else { 4.0 };
    let csr = offset * (nrows as f64 + 1.0) + (4 + value_bytes) as f64 * nnz as f64;
    let by_memory = 1 + (MAX_EXTRA_OFFSETS * csr / (offset * (nrows as f64 + 1.0))) as usize;
    ((x_bytes / (PART_L2_SHARE * l2_bytes as f64)).ceil() as usize).clamp(1, MAX_PARTS.min(by_memory))
}

/// [`column_parts`], or what [`COLUMN_PARTS_ENV`] forces.
pub(crate) fn parts_for(nrows: usize, ncols: usize, nnz: usize, value_bytes: usize, l2_bytes: usize) -> usize {
    match std::env::var(COLUMN_PARTS_ENV).ok().and_then(|v| v.trim().parse::<usize>().ok()) {
        Some(0) => 1,
        Some(k) => k.clamp(1, MAX_PARTS).min(ncols.max(1)),
        None => column_parts(nrows, ncols, nnz, value_bytes, l2_bytes),
    }
}

/// The first column of part `k` of `parts` over `ncols` columns (`k == parts`: `ncols`).
pub fn part_start(ncols: usize, parts: usize, k: usize) -> usize {
    (ncols as u128 * k as u128 / parts.max(1) as u128) as usize
}

/// The entries of `a` in columns `lo..hi`, as a matrix of the same shape. In parallel over
/// rows.
pub fn column_range<T: Scalar>(a: &CsrMatrix<T>, lo: usize, hi: usize) -> CsrMatrix<T> {
    let off = a.row_offsets();
    let (cols, vals) = (a.col_indices(), a.values());
    // columns are sorted within a row: the range is one run of it
    let run = |r: usize| {
        let (s, e) = (off[r] as usize, off[r + 1] as usize);
        let first = s + cols[s..e].partition_point(|&j| (j as usize) < lo);
        (first, first + cols[first..e].partition_point(|&j| (j as usize) < hi))
    };
    let nrows = a.nrows();
    let mut offsets: Vec<u64> = Vec::with_capacity(nrows + 1);
    offsets.push(0);
    offsets.par_extend((0..nrows).into_par_iter().map(|r| {
        let (first, last) = run(r);
        (last - first) as u64
    }));
    for r in 0..nrows {
        offsets[r + 1] += offsets[r];
    }
    let nnz = offsets[nrows] as usize;
    let (mut c, mut v) = (vec![0u32; nnz], vec![T::ZERO; nnz]);
    // rows in pieces, each filling its own stretch of the new arrays
    let mut pieces = Vec::new();
    let (mut c_rest, mut v_rest) = (c.as_mut_slice(), v.as_mut_slice());
    for r0 in (0..nrows).step_by(PIECE_ROWS) {
        let r1 = (r0 + PIECE_ROWS).min(nrows);
        let len = (offsets[r1] - offsets[r0]) as usize;
        let (cp, cr) = std::mem::take(&mut c_rest).split_at_mut(len);
        let (vp, vr) = std::mem::take(&mut v_rest).split_at_mut(len);
        (c_rest, v_rest) = (cr, vr);
        pieces.push((r0, r1, cp, vp));
    }
    pieces.into_par_iter().for_each(|(r0, r1, cp, vp)| {
        let mut at = 0;
        for r in r0..r1 {
            let (first, last) = run(r);
            cp[at..at + last - first].copy_from_slice(&cols[first..last]);
            vp[at..at + last - first].copy_from_slice(&vals[first..last]);
            at += last - first;
        }
    });
    CsrMatrix::try_from_parts(nrows, a.ncols(), offsets, c, v).expect("a column range of a valid matrix is valid")
}

/// Rows per piece of [`column_range`]'s parallel copy.
const PIECE_ROWS: usize = 1 << 15;

/// The parts' matrices put back together: each row's entries, part after part.
pub fn join<T: Scalar>(parts: &[CsrMatrix<T>]) -> CsrMatrix<T> {
    let (nrows, ncols) = (parts[0].nrows(), parts[0].ncols());
    let nnz = parts.iter().map(CsrMatrix::nnz).sum();
    let mut offsets = Vec::with_capacity(nrows + 1);
    offsets.push(0u64);
    let (mut c, mut v) = (Vec::with_capacity(nnz), Vec::with_capacity(nnz));
    for r in 0..nrows {
        for p in parts {
            let (pc, pv) = p.row(r);
            c.extend_from_slice(pc);
            v.extend_from_slice(pv);
        }
        offsets.push(c.len() as u64);
    }
    CsrMatrix::try_from_parts(nrows, ncols, offsets, c, v).expect("parts of a valid matrix join into one")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_columns_and_join_back() {
        // more rows than a piece of the parallel copy, some empty
        let a = crate::gen::power_law::<f64>(3 * PIECE_ROWS + 17, 1000, 1.2, 3.0, 900, 3);
        for parts in [1, 2, 3, 7] {
            let pieces: Vec<CsrMatrix<f64>> = (0..parts)
                .map(|k| column_range(&a, part_start(1000, parts, k), part_start(1000, parts, k + 1)))
                .collect();
            assert_eq!(pieces.iter().map(CsrMatrix::nnz).sum::<usize>(), a.nnz());
            for (k, p) in pieces.iter().enumerate() {
                let (lo, hi) = (part_start(1000, parts, k), part_start(1000, parts, k + 1));
                assert!(p.col_indices().iter().all(|&j| (lo..hi).contains(&(j as usize))), "part {k} of {parts}");
            }
            assert_eq!(join(&pieces), a, "{parts} parts");
        }
    }

    #[test]
    fn the_rule() {
        let l2 = 60 << 20;
        // an x of 64 MB, 13 per row: parts of at most 30 MiB, three
        assert_eq!(column_parts(8_000_000, 8_000_000, 104_000_000, 8, l2), 3);
        assert_eq!(column_parts(8_000_000, 8_000_000, 63_000_000, 8, l2), 1); // under 8 per row
        assert_eq!(column_parts(8_000_000, 7_000_000, 104_000_000, 8, l2), 2); // 56 MB
        assert_eq!(column_parts(8_000_000, 4_700_000, 104_000_000, 8, l2), 1); // 37.6 MB, 59.8%
        assert_eq!(column_parts(8_000_000, 4_800_000, 104_000_000, 8, l2), 2); // 38.4 MB, 61%
        assert_eq!(column_parts(1_000_000, 2_000_000_000, 104_000_000, 8, l2), MAX_PARTS);
        assert_eq!(column_parts(10, 10, 100, 8, 0), 1);
        // rows of 8 over 100 million f32 columns: 13 parts by the L2, but the extra offsets
        // (4 bytes a row per part) stay within 20% of 68 bytes a row: 1 + 3 = 4 parts
        assert_eq!(column_parts(10_000_000, 100_000_000, 80_000_000, 4, l2), 4);
        assert_eq!(part_start(10, 3, 0), 0);
        assert_eq!(part_start(10, 3, 3), 10);
    }
}
