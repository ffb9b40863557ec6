//! Compressed sparse row storage.

use super::{check_index_limit, FormatError, RowStats};
use crate::Scalar;

/// A sparse matrix in compressed sparse row (CSR) form, validated on construction.
///
/// # Format
///
/// For an `nrows x ncols` matrix with `nnz` stored entries:
/// - `row_offsets` has `nrows + 1` entries (`u64`, so the entry count has no 32-bit limit);
///   row `i` occupies positions
///   `row_offsets[i]..row_offsets[i + 1]` of the two arrays below;
/// - `col_indices[k]` is the column of entry `k`, `values[k]` its value.
///
/// # Invariants
///
/// - `row_offsets.len() == nrows + 1`, `row_offsets[0] == 0`, offsets never decrease and
///   `row_offsets[nrows] == nnz`;
/// - `col_indices.len() == values.len() == nnz`;
/// - every column index is `< ncols`, and within a row columns strictly increase (sorted, no
///   duplicates);
/// - `nrows` and `ncols` are at most [`INDEX_LIMIT`](super::INDEX_LIMIT), so every row and
///   column index fits the 32-bit GPU index type. The entry count is not limited: on the
///   GPU, the offsets stay 32-bit up to `INDEX_LIMIT` entries and become 64-bit past it.
///
/// Empty rows, a matrix with no entries and a 0 x 0 matrix are all valid. Explicitly stored
/// zeros are kept.
///
/// # Example
///
/// ```
/// use spgpu::CsrMatrix;
/// // [1 0 2]
/// // [0 0 0]
/// // [0 3 0]
/// let a = CsrMatrix::try_from_parts(3, 3, vec![0, 2, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0])?;
/// assert_eq!(a.nnz(), 3);
/// assert_eq!(a.row(0), (&[0u32, 2][..], &[1.0, 2.0][..]));
/// assert!(a.row(1).0.is_empty());
/// # Ok::<(), spgpu::FormatError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CsrMatrix<T> {
    nrows: usize,
    ncols: usize,
    row_offsets: Vec<u64>,
    col_indices: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> CsrMatrix<T> {
    /// Builds a matrix from its three arrays, checking every invariant.
    ///
    /// # Errors
    ///
    /// A [`FormatError`] naming the first invariant found broken, checked in this order:
    /// `TooLarge` (a dimension past [`INDEX_LIMIT`](super::INDEX_LIMIT)), `OffsetsLength`, `OffsetsStart`,
    /// `LengthMismatch` (indices and values), `NonMonotonicOffsets`, `OffsetsEnd`, then
    /// row by row `ColumnOutOfBounds`, `DuplicateEntry` or `UnsortedColumns`.
    pub fn try_from_parts(
        nrows: usize,
        ncols: usize,
        row_offsets: Vec<u64>,
        col_indices: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        super::validate_csr(nrows, ncols, &row_offsets, &col_indices, values.len())?;
        Ok(CsrMatrix { nrows, ncols, row_offsets, col_indices, values })
    }

    /// Like [`try_from_parts`](Self::try_from_parts) for borrowed offsets and indices of
    /// another type (`usize`, as sprs' `CsMat` and nalgebra-sparse store them, or `u32`):
    /// validates them as they are, then converts them to `u64` offsets and `u32` columns
    /// (copies); the values move.
    #[cfg(any(feature = "sprs", feature = "nalgebra"))]
    pub(crate) fn try_from_index_parts<O: super::IndexValue, I: super::IndexValue>(
        nrows: usize,
        ncols: usize,
        row_offsets: &[O],
        col_indices: &[I],
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        super::validate_csr(nrows, ncols, row_offsets, col_indices, values.len())?;
        let (row_offsets, col_indices) = (super::widen(row_offsets), super::narrow(col_indices));
        Ok(CsrMatrix { nrows, ncols, row_offsets, col_indices, values })
    }

    /// Builds a matrix from its arrays without the O(nnz) checks.
    ///
    /// The O(1) conditions (array lengths, first and last offset, size limits) are still
    /// asserted.
    ///
    /// # Safety
    ///
    /// The caller guarantees every invariant listed on [`CsrMatrix`]: non-decreasing
    /// offsets, column indices below `ncols`, sorted and unique within each row. GPU kernels
    /// index `x` with the column indices without bounds checks, so a violation is undefined
    /// behaviour on the device.
    ///
    /// # Panics
    ///
    /// If an O(1) condition fails.
    #[track_caller]
    pub unsafe fn from_parts_unchecked(
        nrows: usize,
        ncols: usize,
        row_offsets: Vec<u64>,
        col_indices: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        assert!(nrows <= super::INDEX_LIMIT && ncols <= super::INDEX_LIMIT, "dimensions exceed INDEX_LIMIT");
        assert_eq!(row_offsets.len(), nrows + 1, "row offsets must have nrows + 1 entries");
        assert_eq!(col_indices.len(), values.len(), "indices and values must have the same length");
        assert_eq!(row_offsets[0], 0, "the first row offset must be 0");
        assert_eq!(row_offsets[nrows] as usize, col_indices.len(), "the last row offset must equal nnz");
        CsrMatrix { nrows, ncols, row_offsets, col_indices, values }
    }

    /// An `nrows x ncols` matrix with no stored entries.
    ///
    /// # Errors
    ///
    /// [`FormatError::TooLarge`] if a dimension exceeds [`INDEX_LIMIT`](super::INDEX_LIMIT).
    pub fn zeros(nrows: usize, ncols: usize) -> Result<Self, FormatError> {
        // Check before allocating the offsets: a huge `nrows` is an error, not an abort.
        check_index_limit("rows", nrows)?;
        check_index_limit("columns", ncols)?;
        Self::try_from_parts(nrows, ncols, vec![0; nrows + 1], Vec::new(), Vec::new())
    }

    /// The `n x n` identity matrix.
    ///
    /// # Errors
    ///
    /// [`FormatError::TooLarge`] if `n` exceeds [`INDEX_LIMIT`](super::INDEX_LIMIT).
    pub fn identity(n: usize) -> Result<Self, FormatError> {
        check_index_limit("rows", n)?;
        let offsets = (0..=n as u64).collect();
        let cols = (0..n as u32).collect();
        Self::try_from_parts(n, n, offsets, cols, vec![T::ONE; n])
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of stored entries (explicit zeros included).
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// The `nrows + 1` row offsets.
    pub fn row_offsets(&self) -> &[u64] {
        &self.row_offsets
    }
    /// The column index of every stored entry, row by row.
    pub fn col_indices(&self) -> &[u32] {
        &self.col_indices
    }
    /// The value of every stored entry, row by row.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// The values, mutable; the sparsity pattern cannot change.
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
    /// Column indices and values of row `i`.
    ///
    /// # Panics
    ///
    /// If `i >= nrows`.
    pub fn row(&self, i: usize) -> (&[u32], &[T]) {
        let r = self.row_offsets[i] as usize..self.row_offsets[i + 1] as usize;
        (&self.col_indices[r.clone()], &self.values[r])
    }
    /// Number of stored entries of row `i`.
    ///
    /// # Panics
    ///
    /// If `i >= nrows`.
    pub fn row_len(&self, i: usize) -> usize {
        (self.row_offsets[i + 1] - self.row_offsets[i]) as usize
    }
    /// The stored value at `(i, j)`, or `None` when that position is not stored (or out of
    /// range). Binary search within the row.
    pub fn get(&self, i: usize, j: usize) -> Option<T> {
        if i >= self.nrows {
            return None;
        }
        let (cols, vals) = self.row(i);
        let j = u32::try_from(j).ok()?;
        cols.binary_search(&j).ok().map(|k| vals[k])
    }
    /// Row length statistics (min, mean, max, empty rows, histogram).
    pub fn row_stats(&self) -> RowStats {
        RowStats::from_row_offsets(&self.row_offsets, self.ncols)
    }
    /// Takes the matrix apart: `(nrows, ncols, row_offsets, col_indices, values)`.
    pub fn into_parts(self) -> (usize, usize, Vec<u64>, Vec<u32>, Vec<T>) {
        (self.nrows, self.ncols, self.row_offsets, self.col_indices, self.values)
    }
    /// The main diagonal as a dense vector of length `min(nrows, ncols)`; positions not
    /// stored read as zero. The rows are searched in parallel.
    pub fn diagonal(&self) -> Vec<T> {
        use rayon::prelude::*;
        (0..self.nrows.min(self.ncols))
            .into_par_iter()
            .with_min_len(1 << 14)
            .map(|i| self.get(i, i).unwrap_or(T::ZERO))
            .collect()
    }
    /// The transpose, in CSR form (a counting sort over columns; O(nnz + ncols)).
    pub fn transpose(&self) -> Self {
        let mut counts = vec![0u64; self.ncols + 1];
        for &c in &self.col_indices {
            counts[c as usize + 1] += 1;
        }
        for i in 0..self.ncols {
            counts[i + 1] += counts[i];
        }
        let offsets = counts.clone();
        let mut next = counts;
        let mut cols = vec![0u32; self.nnz()];
        let mut vals = vec![T::ZERO; self.nnz()];
        for i in 0..self.nrows {
            let (rc, rv) = self.row(i);
            for (&c, &v) in rc.iter().zip(rv) {
                let slot = next[c as usize] as usize;
                cols[slot] = i as u32;
                vals[slot] = v;
                next[c as usize] += 1;
            }
        }
        // Rows are visited in increasing order, so each transposed row comes out sorted.
        CsrMatrix { nrows: self.ncols, ncols: self.nrows, row_offsets: offsets, col_indices: cols, values: vals }
    }
    /// Whether the sparsity pattern is symmetric (square, and `(j, i)` is stored whenever
    /// `(i, j)` is).
    pub fn is_structurally_symmetric(&self) -> bool {
        self.nrows == self.ncols && {
            let t = self.transpose();
            t.row_offsets == self.row_offsets && t.col_indices == self.col_indices
        }
    }
    /// Whether the matrix equals its transpose, values included (exact comparison).
    pub fn is_symmetric(&self) -> bool {
        self.nrows == self.ncols && self.transpose() == *self
    }
    /// The matrix as a dense row-major array (`nrows * ncols` entries). Meant for tests and
    /// small matrices.
    pub fn to_dense(&self) -> Vec<T> {
        let mut d = vec![T::ZERO; self.nrows * self.ncols];
        for i in 0..self.nrows {
            let (cols, vals) = self.row(i);
            for (&c, &v) in cols.iter().zip(vals) {
                d[i * self.ncols + c as usize] = v;
            }
        }
        d
    }
    /// Converts every value to another element type (rounding to nearest for f64 -> f32).
    pub fn cast<U: Scalar>(&self) -> CsrMatrix<U> {
        CsrMatrix {
            nrows: self.nrows,
            ncols: self.ncols,
            row_offsets: self.row_offsets.clone(),
            col_indices: self.col_indices.clone(),
            values: self.values.iter().map(|v| U::from_f64(v.to_f64())).collect(),
        }
    }
}
