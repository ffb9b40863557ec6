//! Coordinate (triplet) storage, for assembly.

use super::{check_entry_limit, check_index_limit, CsrMatrix, FormatError};
use crate::Scalar;

/// A sparse matrix as a list of `(row, column, value)` triplets, for assembly.
///
/// Entries may come in any order and the same position may appear several times:
/// converting to CSR ([`CooMatrix::to_csr`]) sorts the columns of each row and sums
/// duplicates. Every index is checked against the dimensions when it is added.
///
/// # Invariants
///
/// - the three arrays have the same length;
/// - every row index is `< nrows`, every column index `< ncols`;
/// - `nrows` and `ncols` are at most [`INDEX_LIMIT`](super::INDEX_LIMIT); the number of
///   triplets is bounded by memory (and [`ENTRY_LIMIT`](super::ENTRY_LIMIT)).
///
/// # Example
///
/// ```
/// use spgpu::CooMatrix;
/// let mut coo = CooMatrix::<f64>::new(2, 2)?;
/// coo.push(1, 0, 2.0)?;
/// coo.push(0, 1, 1.0)?;
/// coo.push(1, 0, 0.5)?; // a duplicate: summed in CSR
/// let csr = coo.to_csr();
/// assert_eq!(csr.get(1, 0), Some(2.5));
/// assert_eq!(csr.nnz(), 2);
/// # Ok::<(), spgpu::FormatError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CooMatrix<T> {
    nrows: usize,
    ncols: usize,
    rows: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> CooMatrix<T> {
    /// An empty `nrows x ncols` matrix.
    ///
    /// # Errors
    ///
    /// [`FormatError::TooLarge`] if a dimension exceeds [`INDEX_LIMIT`](super::INDEX_LIMIT).
    pub fn new(nrows: usize, ncols: usize) -> Result<Self, FormatError> {
        Self::with_capacity(nrows, ncols, 0)
    }

    /// An empty matrix with room for `capacity` triplets.
    ///
    /// # Errors
    ///
    /// [`FormatError::TooLarge`] if a dimension exceeds [`INDEX_LIMIT`](super::INDEX_LIMIT).
    pub fn with_capacity(nrows: usize, ncols: usize, capacity: usize) -> Result<Self, FormatError> {
        check_index_limit("rows", nrows)?;
        check_index_limit("columns", ncols)?;
        Ok(CooMatrix {
            nrows,
            ncols,
            rows: Vec::with_capacity(capacity),
            cols: Vec::with_capacity(capacity),
            values: Vec::with_capacity(capacity),
        })
    }

    /// Builds a matrix from three parallel arrays, checking every index.
    ///
    /// # Errors
    ///
    /// The first broken invariant, checked in this order: `TooLarge` (a dimension past
    /// [`INDEX_LIMIT`](super::INDEX_LIMIT)), `LengthMismatch` (row
    /// indices, then column indices, against the values), then triplet by triplet
    /// `RowOutOfBounds` or `ColumnOutOfBounds`.
    pub fn try_from_triplets(
        nrows: usize,
        ncols: usize,
        rows: Vec<u32>,
        cols: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        super::validate_coo(nrows, ncols, &rows, &cols, values.len())?;
        Ok(CooMatrix { nrows, ncols, rows, cols, values })
    }

    /// Like [`try_from_triplets`](Self::try_from_triplets) for `usize` indices: validates
    /// them as they are, then narrows them to `u32` (a copy); the values move.
    #[cfg(any(feature = "sprs", feature = "nalgebra"))]
    pub(crate) fn try_from_usize_triplets(
        nrows: usize,
        ncols: usize,
        rows: &[usize],
        cols: &[usize],
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        super::validate_coo(nrows, ncols, rows, cols, values.len())?;
        Ok(CooMatrix { nrows, ncols, rows: super::narrow(rows), cols: super::narrow(cols), values })
    }

    /// Adds one triplet.
    ///
    /// # Errors
    ///
    /// `RowOutOfBounds` or `ColumnOutOfBounds` for an index past the dimensions (the matrix
    /// is unchanged), `TooLarge` when the count would exceed
    /// [`ENTRY_LIMIT`](super::ENTRY_LIMIT).
    pub fn push(&mut self, row: usize, col: usize, value: T) -> Result<(), FormatError> {
        if row >= self.nrows {
            return Err(FormatError::RowOutOfBounds { index: self.values.len(), row, nrows: self.nrows });
        }
        if col >= self.ncols {
            return Err(FormatError::ColumnOutOfBounds { row, col, ncols: self.ncols });
        }
        check_entry_limit("stored entries", self.values.len() + 1)?;
        self.rows.push(row as u32);
        self.cols.push(col as u32);
        self.values.push(value);
        Ok(())
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of triplets, duplicates included.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// Row indices of the triplets.
    pub fn row_indices(&self) -> &[u32] {
        &self.rows
    }
    /// Column indices of the triplets.
    pub fn col_indices(&self) -> &[u32] {
        &self.cols
    }
    /// Values of the triplets.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// Takes the matrix apart: `(nrows, ncols, rows, cols, values)`.
    pub fn into_parts(self) -> (usize, usize, Vec<u32>, Vec<u32>, Vec<T>) {
        (self.nrows, self.ncols, self.rows, self.cols, self.values)
    }

    /// Converts to CSR: columns sorted within each row, duplicates summed (a duplicate
    /// pair that sums to zero stays stored as an explicit zero).
    ///
    /// A counting sort over rows, then a sort within each row: O(nnz log(row length)).
    pub fn to_csr(&self) -> CsrMatrix<T> {
        let mut offsets = vec![0u64; self.nrows + 1];
        for &r in &self.rows {
            offsets[r as usize + 1] += 1;
        }
        for i in 0..self.nrows {
            offsets[i + 1] += offsets[i];
        }
        let mut next = offsets.clone();
        let mut entries: Vec<(u32, T)> = vec![(0, T::ZERO); self.nnz()];
        for ((&r, &c), &v) in self.rows.iter().zip(&self.cols).zip(&self.values) {
            let slot = &mut next[r as usize];
            entries[*slot as usize] = (c, v);
            *slot += 1;
        }
        let mut out_offsets = Vec::with_capacity(self.nrows + 1);
        out_offsets.push(0u64);
        let mut cols = Vec::with_capacity(self.nnz());
        let mut vals = Vec::with_capacity(self.nnz());
        for i in 0..self.nrows {
            let row = &mut entries[offsets[i] as usize..offsets[i + 1] as usize];
            // Stable, so duplicates are summed in input order (deterministic rounding).
            row.sort_by_key(|e| e.0);
            let mut k = 0;
            while k < row.len() {
                let (c, mut v) = row[k];
                k += 1;
                while k < row.len() && row[k].0 == c {
                    v += row[k].1;
                    k += 1;
                }
                cols.push(c);
                vals.push(v);
            }
            out_offsets.push(cols.len() as u64);
        }
        // SAFETY: rows were bucketed by a counting sort, columns sorted and deduplicated
        // within each row, and every index was checked on insertion.
        unsafe { CsrMatrix::from_parts_unchecked(self.nrows, self.ncols, out_offsets, cols, vals) }
    }
}

impl<T: Scalar> From<&CsrMatrix<T>> for CooMatrix<T> {
    fn from(a: &CsrMatrix<T>) -> Self {
        let mut rows = Vec::with_capacity(a.nnz());
        for i in 0..a.nrows() {
            rows.resize(rows.len() + a.row_len(i), i as u32);
        }
        CooMatrix {
            nrows: a.nrows(),
            ncols: a.ncols(),
            rows,
            cols: a.col_indices().to_vec(),
            values: a.values().to_vec(),
        }
    }
}

impl<T: Scalar> From<&CooMatrix<T>> for CsrMatrix<T> {
    /// The same as [`CooMatrix::to_csr`]: columns sorted, duplicates summed.
    fn from(a: &CooMatrix<T>) -> Self {
        a.to_csr()
    }
}

impl<T: Scalar> From<CooMatrix<T>> for CsrMatrix<T> {
    /// The same as [`CooMatrix::to_csr`]: columns sorted, duplicates summed.
    fn from(a: CooMatrix<T>) -> Self {
        a.to_csr()
    }
}

impl<T: Scalar> From<CsrMatrix<T>> for CooMatrix<T> {
    /// Expands the row offsets into one row index per entry; the column indices and the
    /// values move.
    fn from(a: CsrMatrix<T>) -> Self {
        let (nrows, ncols, offsets, cols, values) = a.into_parts();
        let mut rows = Vec::with_capacity(cols.len());
        for (i, w) in offsets.windows(2).enumerate() {
            rows.resize(rows.len() + (w[1] - w[0]) as usize, i as u32);
        }
        CooMatrix { nrows, ncols, rows, cols, values }
    }
}
