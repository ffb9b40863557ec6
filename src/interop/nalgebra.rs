//! Conversions to and from [`nalgebra_sparse`](::nalgebra_sparse): `CsrMatrix<T>`,
//! `CscMatrix<T>` (into spgpu) and `CooMatrix<T>`. nalgebra-sparse stores `usize` offsets
//! and indices, so they are converted (a copy); the values move.

use crate::{CooMatrix, CsrMatrix, FormatError, Scalar};
use ::nalgebra_sparse as na;

fn widen<I: Into<u64>>(v: Vec<I>) -> Vec<usize> {
    v.into_iter().map(|i| i.into() as usize).collect()
}

impl<T: Scalar> TryFrom<na::CsrMatrix<T>> for CsrMatrix<T> {
    type Error = FormatError;

    /// Copies the offsets and column indices into `u32` arrays, moves the values.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT);
    /// nalgebra-sparse guarantees the other invariants, and they are checked all the same.
    fn try_from(m: na::CsrMatrix<T>) -> Result<Self, FormatError> {
        let (nrows, ncols) = (m.nrows(), m.ncols());
        let (offsets, indices, values) = m.disassemble();
        CsrMatrix::try_from_index_parts(nrows, ncols, &offsets, &indices, values)
    }
}

impl<T: Scalar> TryFrom<&na::CsrMatrix<T>> for CsrMatrix<T> {
    type Error = FormatError;

    /// As for an owned `nalgebra_sparse::CsrMatrix`, but the values are copied too.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    fn try_from(m: &na::CsrMatrix<T>) -> Result<Self, FormatError> {
        let (offsets, indices, values) = m.csr_data();
        CsrMatrix::try_from_index_parts(m.nrows(), m.ncols(), offsets, indices, values.to_vec())
    }
}

impl<T: Scalar> TryFrom<na::CscMatrix<T>> for CsrMatrix<T> {
    type Error = FormatError;

    /// Reads the CSC arrays as the CSR form of the transpose (copying the indices into
    /// `u32`, moving the values) and transposes it: the result is a new matrix. A dimension
    /// past the limit is named as the matrix's own.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    fn try_from(m: na::CscMatrix<T>) -> Result<Self, FormatError> {
        let (nrows, ncols) = (m.nrows(), m.ncols());
        let (offsets, indices, values) = m.disassemble();
        let t = CsrMatrix::try_from_index_parts(ncols, nrows, &offsets, &indices, values).map_err(super::csc_error)?;
        Ok(t.transpose())
    }
}

impl<T: Scalar> TryFrom<&na::CscMatrix<T>> for CsrMatrix<T> {
    type Error = FormatError;

    /// As for an owned `nalgebra_sparse::CscMatrix`, but the values are copied too.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    fn try_from(m: &na::CscMatrix<T>) -> Result<Self, FormatError> {
        let (offsets, indices, values) = m.csc_data();
        let t = CsrMatrix::try_from_index_parts(m.ncols(), m.nrows(), offsets, indices, values.to_vec())
            .map_err(super::csc_error)?;
        Ok(t.transpose())
    }
}

impl<T: Scalar> From<CsrMatrix<T>> for na::CsrMatrix<T> {
    /// Widens the offsets and column indices to `usize` (a copy), moves the values.
    fn from(a: CsrMatrix<T>) -> Self {
        let (nrows, ncols, offsets, indices, values) = a.into_parts();
        // SAFETY: nalgebra-sparse's pattern invariants (offsets of length nrows + 1 from 0 to
        // nnz, non-decreasing; indices strictly increasing within each row and below ncols)
        // are invariants of every CsrMatrix, and widening to usize keeps every value.
        let pattern = unsafe {
            na::pattern::SparsityPattern::from_offset_and_indices_unchecked(
                nrows,
                ncols,
                widen(offsets),
                widen(indices),
            )
        };
        match na::CsrMatrix::try_from_pattern_and_values(pattern, values) {
            Ok(m) => m,
            // The only check left is that there is one value per index, which CsrMatrix
            // guarantees.
            Err(e) => unreachable!("a valid spgpu CSR matrix was refused by nalgebra-sparse: {e}"),
        }
    }
}

impl<T: Scalar> TryFrom<na::CooMatrix<T>> for CooMatrix<T> {
    type Error = FormatError;

    /// Copies the row and column indices into `u32` arrays, moves the values; duplicates
    /// are kept.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    fn try_from(m: na::CooMatrix<T>) -> Result<Self, FormatError> {
        let (nrows, ncols) = (m.nrows(), m.ncols());
        let (rows, cols, values) = m.disassemble();
        CooMatrix::try_from_usize_triplets(nrows, ncols, &rows, &cols, values)
    }
}

impl<T: Scalar> TryFrom<&na::CooMatrix<T>> for CooMatrix<T> {
    type Error = FormatError;

    /// As for an owned `nalgebra_sparse::CooMatrix`, but the values are copied too.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    fn try_from(m: &na::CooMatrix<T>) -> Result<Self, FormatError> {
        CooMatrix::try_from_usize_triplets(m.nrows(), m.ncols(), m.row_indices(), m.col_indices(), m.values().to_vec())
    }
}

impl<T: Scalar> From<CooMatrix<T>> for na::CooMatrix<T> {
    /// Widens the row and column indices to `usize` (a copy), moves the values; duplicates
    /// are kept.
    fn from(a: CooMatrix<T>) -> Self {
        let (nrows, ncols, rows, cols, values) = a.into_parts();
        match na::CooMatrix::try_from_triplets(nrows, ncols, widen(rows), widen(cols), values) {
            Ok(m) => m,
            // Equal lengths and in-bounds indices are invariants of every CooMatrix.
            Err(e) => unreachable!("a valid spgpu COO matrix was refused by nalgebra-sparse: {e}"),
        }
    }
}
