//! Column parts: the ranges of columns that the plan's rule of column parts
//! ([`plan::parts`](crate::gpu::split)) cuts a matrix into, each run by the balanced
//! kernel in turn.
//!
//! Each row's sum is its parts' sums added in column order, a fixed order: repeated calls
//! give the same bits (not the bits of one pass, which adds the entries in another order).

use rayon::prelude::*;

pub use crate::gpu::plan::parts::{
    column_parts, spread, COLUMN_PARTS_ENV, MAX_EXTRA_OFFSETS, MAX_PARTS, MIN_MEAN_ROW, MIN_SPREAD, MIN_X_L2_SHARE,
    MIN_X_L2_SHARE_SELL, PART_L2_SHARE, SELL_EARLY_MEAN_ROW, SPREAD_SHARE,
};
use crate::{CsrMatrix, Scalar};

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
        assert_eq!(part_start(10, 3, 0), 0);
        assert_eq!(part_start(10, 3, 3), 10);
    }
}
