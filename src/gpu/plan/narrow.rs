//! The rules of narrow columns: whether ELL and SELL slots, and the CSR columns of the
//! vector kernel, store each column as its 16-bit offset from the row. The codes themselves
//! (and the device arrays) are in [`storage::narrow`](crate::gpu::storage::narrow), whose
//! docs describe them.

use rayon::prelude::*;

pub use crate::gpu::plan::tuning::NARROW_COLUMNS_ENV;
use crate::gpu::plan::{ColumnLayout, SpmvKernel, Tuning};
use crate::{CsrMatrix, Scalar};

/// The largest `|column - row|` that a narrow slot stores.
pub const MAX_OFFSET: u32 = 32_767;

/// A row of at least this many entries per thread is read 4 entries per thread at a time
/// by the vector kernel (`SPGPU_VECTOR_BATCH_STEPS` in `ptx/spmv.cu`): always on 16-bit
/// columns, on 32-bit ones only when the launch has at most a GPU's worth of threads. The
/// upload stores 16-bit CSR columns only when the mean row reaches it
/// ([`csr_offsets_pay`]).
pub const VECTOR_BATCH_STEPS: usize = 32;

/// The most far columns a table of SELL slots holds ([`far_columns`]; `SPGPU_FAR_SLOTS` in
/// `ptx/common.cuh`).
pub const FAR_SLOTS: usize = 255;

/// Whether column `col` lies within [`MAX_OFFSET`] of row `row` (a narrow slot stores it).
pub(crate) fn near(col: u32, row: usize) -> bool {
    (i64::from(col) - row as i64).unsigned_abs() <= u64::from(MAX_OFFSET)
}

/// Whether column `col` of row `row` is stored as an offset where the slots have a table of
/// far columns: its offset lies in `-32512..=32767` (the codes of the table take the 255
/// offsets below).
pub(crate) fn near_with_table(col: u32, row: usize) -> bool {
    let d = i64::from(col) - row as i64;
    (-(i64::from(MAX_OFFSET) - FAR_SLOTS as i64)..=i64::from(MAX_OFFSET)).contains(&d)
}

/// The far columns of a matrix whose rows of at most `max_len` entries do not all lie
/// within [`MAX_OFFSET`] of the diagonal: the sorted columns of the entries of those rows
/// whose offset lies outside `-32512..=32767` ([`encode_far`](crate::gpu::storage::narrow::encode_far)), when there are at most
/// [`FAR_SLOTS`] of them; `None` when there are more (found in parallel over rows, stopping
/// early).
///
/// ```
/// use spgpu::gpu::narrow::far_columns;
/// // rows 0..3 of a 3 x 100000 matrix, each with its diagonal and column 99999
/// let off = [0u64, 2, 4, 6];
/// assert_eq!(far_columns(&off, &[0, 99_999, 1, 99_999, 2, 99_999], usize::MAX), Some(vec![99_999]));
/// ```
pub fn far_columns(row_offsets: &[u64], col_indices: &[u32], max_len: usize) -> Option<Vec<u32>> {
    let nrows = row_offsets.len().saturating_sub(1);
    // each part keeps its far columns sorted (at most FAR_SLOTS: a binary search per far entry)
    (0..nrows)
        .into_par_iter()
        .with_min_len(1 << 12)
        .try_fold(Vec::new, |mut set: Vec<u32>, r| {
            let (lo, hi) = (row_offsets[r] as usize, row_offsets[r + 1] as usize);
            if hi - lo <= max_len {
                for &c in &col_indices[lo..hi] {
                    if !near_with_table(c, r) {
                        if let Err(at) = set.binary_search(&c) {
                            if set.len() == FAR_SLOTS {
                                return None;
                            }
                            set.insert(at, c);
                        }
                    }
                }
            }
            Some(set)
        })
        .try_reduce(Vec::new, |mut a, b| {
            a.extend(b);
            a.sort_unstable();
            a.dedup();
            (a.len() <= FAR_SLOTS).then_some(a)
        })
}

/// Whether every entry of the rows of at most `max_len` entries lies within
/// [`MAX_OFFSET`] of the diagonal, for a CSR matrix's row offsets and columns (checked in
/// parallel over rows).
pub fn fits(row_offsets: &[u64], col_indices: &[u32], max_len: usize) -> bool {
    let nrows = row_offsets.len().saturating_sub(1);
    (0..nrows).into_par_iter().with_min_len(1 << 12).all(|r| {
        let (lo, hi) = (row_offsets[r] as usize, row_offsets[r + 1] as usize);
        hi - lo > max_len || col_indices[lo..hi].iter().all(|&c| near(c, r))
    })
}

/// Whether the vector kernel with `threads_per_row` threads per row should read 16-bit
/// column offsets of a matrix whose mean row is `mean` (when they fit): only when the mean
/// row is batched ([`VECTOR_BATCH_STEPS`] entries per thread or more). The simple loop,
/// which reads one entry per thread at a time, ran 1.15x-1.26x slower in `f32` on 16-bit
/// columns than on 32-bit ones on bands of 501 to 801 entries per row (H100, 2026-11-26),
/// while the batched loop ran 0.55x-0.78x the 32-bit simple loop's time.
///
/// ```
/// use spgpu::gpu::narrow::csr_offsets_pay;
/// assert!(csr_offsets_pay(1201.0, 32) && csr_offsets_pay(801.0, 16));
/// assert!(!csr_offsets_pay(801.0, 32) && !csr_offsets_pay(27.0, 4));
/// ```
pub fn csr_offsets_pay(mean: f64, threads_per_row: u32) -> bool {
    mean >= (VECTOR_BATCH_STEPS * threads_per_row as usize) as f64
}

/// Whether an ELLPACK upload stores 16-bit column offsets: narrow columns allowed
/// ([`Tuning::narrow_columns`]) and every entry within [`MAX_OFFSET`] of the diagonal, as
/// `columns` says when the plan looked ([`ColumnLayout::Narrow`]), else checked here
/// ([`fits`]).
pub(crate) fn ell_columns<T: Scalar>(a: &CsrMatrix<T>, columns: Option<ColumnLayout>, tuning: &Tuning) -> bool {
    tuning.narrow_allowed()
        && columns
            .map(|c| c == ColumnLayout::Narrow)
            .unwrap_or_else(|| fits(a.row_offsets(), a.col_indices(), usize::MAX))
}

/// Whether the slots of a host ELLPACK matrix are stored as 16-bit column offsets: narrow
/// columns allowed ([`Tuning::narrow_columns`]) and every stored column within
/// [`MAX_OFFSET`] of its row.
pub(crate) fn ell_slots<T: Scalar>(a: &crate::EllMatrix<T>, tuning: &Tuning) -> bool {
    let nrows = a.nrows();
    tuning.narrow_allowed()
        && a.col_indices().par_iter().enumerate().all(|(s, &c)| c == crate::ELL_PADDING || near(c, s % nrows))
}

/// Whether SELL slots store 16-bit column offsets, and the table of far columns they reach
/// when some entries of the short rows (at most `long_row` entries) lie farther
/// ([`far_columns`]): narrow columns allowed ([`Tuning::narrow_columns`]) and every short
/// row's entries within [`MAX_OFFSET`] of the diagonal ([`fits`]), or all but those in at
/// most [`FAR_SLOTS`] far columns.
pub(crate) fn sell_columns<T: Scalar>(a: &CsrMatrix<T>, long_row: usize, tuning: &Tuning) -> (bool, Option<Vec<u32>>) {
    let (offsets, cols) = (a.row_offsets(), a.col_indices());
    if !tuning.narrow_allowed() {
        (false, None)
    } else if fits(offsets, cols, long_row) {
        (true, None)
    } else {
        match far_columns(offsets, cols, long_row) {
            Some(far) => (true, Some(far)),
            None => (false, None),
        }
    }
}

/// Whether the vector kernel's CSR columns are stored as 16-bit offsets: the plan runs the
/// vector kernel on rows long enough to be read a few entries per thread at a time
/// ([`csr_offsets_pay`]), the matrix has entries, narrow columns are allowed
/// ([`Tuning::narrow_columns`]) and every entry lies within [`MAX_OFFSET`] of the diagonal
/// (as `columns` says when the plan looked, else checked here).
pub(crate) fn csr_columns<T: Scalar>(
    kernel: SpmvKernel,
    a: &CsrMatrix<T>,
    mean: f64,
    columns: Option<ColumnLayout>,
    tuning: &Tuning,
) -> bool {
    matches!(kernel, SpmvKernel::Vector { threads_per_row } if csr_offsets_pay(mean, threads_per_row))
        && a.nnz() > 0
        && tuning.narrow_allowed()
        && columns.map_or_else(|| fits(a.row_offsets(), a.col_indices(), usize::MAX), |c| c == ColumnLayout::Narrow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_and_far() {
        assert!(near(32_767, 0) && !near(32_768, 0) && near(0, 32_767));
        assert!(near_with_table(0, 32_512) && !near_with_table(0, 32_513));
        assert!(fits(&[0, 2, 4], &[0, 32_767, 1, 32_768], usize::MAX));
        let band = crate::gen::banded::<f64>(100, 3, 1);
        let t = Tuning::default();
        let off = Tuning { narrow_columns: Some(false), ..t };
        assert!(ell_columns(&band, None, &t) && !ell_columns(&band, None, &off));
        assert!(!ell_columns(&band, Some(ColumnLayout::Local), &t), "what the plan found counts");
        assert_eq!(sell_columns(&band, 512, &t), (true, None));
        assert_eq!(sell_columns(&band, 512, &off), (false, None));
        let v = SpmvKernel::Vector { threads_per_row: 2 };
        assert!(!csr_columns(v, &band, 7.0, None, &t), "rows too short to pay");
        assert!(csr_columns(v, &band, 64.0, None, &t) && !csr_columns(v, &band, 64.0, None, &off));
    }
}
