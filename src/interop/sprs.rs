//! Conversions to and from [`sprs`](::sprs): `CsMatI<T, u32>` (entries moved, offsets converted), `CsMat<T>`,
//! borrowed matrices and views of both (copied), `TriMatI<T, u32>` and `TriMat<T>`.

use crate::format::IndexValue;
use crate::{CooMatrix, CsrMatrix, FormatError, Scalar};
use ::sprs::{CompressedStorage, CsMat, CsMatI, CsMatView, CsMatViewI, TriMat, TriMatI};

/// sprs allows an owned matrix whose `indptr` does not start at 0 (its entries then start at
/// `indptr[0]`); spgpu's offsets always do. Rebases such offsets in place. Offsets below the
/// first one (a malformed matrix) are left alone, for validation to report.
fn rebase<O: Copy + Ord + std::ops::SubAssign>(offsets: &mut [O]) {
    if let Some(&first) = offsets.first() {
        if offsets.iter().all(|&o| o >= first) {
            for o in offsets.iter_mut() {
                *o -= first;
            }
        }
    }
}

/// The CSR arrays of a compressed sprs matrix and its shape: for CSC storage, the arrays are
/// those of the transpose, and the shape is swapped accordingly.
fn csr_shape(storage: CompressedStorage, rows: usize, cols: usize) -> (usize, usize) {
    match storage {
        CompressedStorage::CSR => (rows, cols),
        CompressedStorage::CSC => (cols, rows),
    }
}

impl<T: Scalar> TryFrom<CsMatI<T, u32>> for CsrMatrix<T> {
    type Error = FormatError;

    /// Takes an sprs matrix with `u32` indices and offsets. CSR storage moves its three
    /// arrays into the result without copying them; CSC storage is read as the CSR form of
    /// the transpose and transposed (a new matrix); an error then names positions in the
    /// transpose (its row `j` is column `j`), but a dimension past the limit is named as
    /// the matrix's own. Every invariant is checked.
    ///
    /// # Errors
    ///
    /// The [`FormatError`] of the first broken invariant (see
    /// [`CsrMatrix::try_from_parts`]), for example `TooLarge` for dimensions past
    /// [`INDEX_LIMIT`](crate::INDEX_LIMIT) or `UnsortedColumns` for a matrix built with
    /// sprs' unchecked constructor.
    fn try_from(m: CsMatI<T, u32>) -> Result<Self, FormatError> {
        let storage = m.storage();
        let (nrows, ncols) = csr_shape(storage, m.rows(), m.cols());
        let (mut offsets, indices, values) = m.into_raw_storage();
        rebase(&mut offsets);
        let offsets = offsets.into_iter().map(u64::from).collect();
        let a = CsrMatrix::try_from_parts(nrows, ncols, offsets, indices, values).map_err(|e| {
            if storage == CompressedStorage::CSC {
                super::csc_error(e)
            } else {
                e
            }
        })?;
        Ok(match storage {
            CompressedStorage::CSR => a,
            CompressedStorage::CSC => a.transpose(),
        })
    }
}

impl<T: Scalar> TryFrom<CsMat<T>> for CsrMatrix<T> {
    type Error = FormatError;

    /// Takes an sprs matrix with `usize` indices: the offsets and indices are validated as
    /// they are, then narrowed to `u32` (a copy); the values move. CSC storage is transposed
    /// as for [`CsMatI<T, u32>`].
    ///
    /// # Errors
    ///
    /// The [`FormatError`] of the first broken invariant; an index too large for 32 bits is
    /// reported with its true value (`TooLarge`, `ColumnOutOfBounds`, ...).
    fn try_from(m: CsMat<T>) -> Result<Self, FormatError> {
        let storage = m.storage();
        let (nrows, ncols) = csr_shape(storage, m.rows(), m.cols());
        let (mut offsets, indices, values) = m.into_raw_storage();
        rebase(&mut offsets);
        let a = CsrMatrix::try_from_index_parts(nrows, ncols, &offsets, &indices, values).map_err(|e| {
            if storage == CompressedStorage::CSC {
                super::csc_error(e)
            } else {
                e
            }
        })?;
        Ok(match storage {
            CompressedStorage::CSR => a,
            CompressedStorage::CSC => a.transpose(),
        })
    }
}

/// Copies a borrowed sprs matrix (or a view, whose offsets may start past 0): the offsets
/// are rebased, everything is validated, CSC storage is transposed.
fn from_view<T: Scalar, I: IndexValue + ::sprs::SpIndex + std::ops::SubAssign>(
    m: CsMatViewI<'_, T, I>,
) -> Result<CsrMatrix<T>, FormatError> {
    let storage = m.storage();
    let (nrows, ncols) = csr_shape(storage, m.rows(), m.cols());
    let indptr = m.indptr();
    let mut offsets = indptr.raw_storage().to_vec();
    rebase(&mut offsets);
    let a = CsrMatrix::try_from_index_parts(nrows, ncols, &offsets, m.indices(), m.data().to_vec()).map_err(|e| {
        if storage == CompressedStorage::CSC {
            super::csc_error(e)
        } else {
            e
        }
    })?;
    Ok(match storage {
        CompressedStorage::CSR => a,
        CompressedStorage::CSC => a.transpose(),
    })
}

impl<T: Scalar> TryFrom<CsMatViewI<'_, T, u32>> for CsrMatrix<T> {
    type Error = FormatError;

    /// Copies an sprs view with `u32` indices (for example rows `i..i + k` taken with
    /// `slice_outer`); CSC storage is transposed. Every invariant is checked.
    ///
    /// # Errors
    ///
    /// The [`FormatError`] of the first broken invariant (see [`CsrMatrix::try_from_parts`]).
    fn try_from(m: CsMatViewI<'_, T, u32>) -> Result<Self, FormatError> {
        from_view(m)
    }
}

impl<T: Scalar> TryFrom<&CsMatI<T, u32>> for CsrMatrix<T> {
    type Error = FormatError;

    /// Copies a borrowed sprs matrix with `u32` indices (to move instead, convert the matrix
    /// itself).
    ///
    /// # Errors
    ///
    /// The [`FormatError`] of the first broken invariant (see [`CsrMatrix::try_from_parts`]).
    fn try_from(m: &CsMatI<T, u32>) -> Result<Self, FormatError> {
        from_view(m.view())
    }
}

impl<T: Scalar> TryFrom<CsMatView<'_, T>> for CsrMatrix<T> {
    type Error = FormatError;

    /// Copies an sprs view with `usize` indices, narrowing them to `u32`; CSC storage is
    /// transposed. Every invariant is checked.
    ///
    /// # Errors
    ///
    /// The [`FormatError`] of the first broken invariant (see [`CsrMatrix::try_from_parts`]).
    fn try_from(m: CsMatView<'_, T>) -> Result<Self, FormatError> {
        from_view(m)
    }
}

impl<T: Scalar> TryFrom<&CsMat<T>> for CsrMatrix<T> {
    type Error = FormatError;

    /// Copies a borrowed sprs matrix with `usize` indices, narrowing them to `u32`.
    ///
    /// # Errors
    ///
    /// The [`FormatError`] of the first broken invariant (see [`CsrMatrix::try_from_parts`]).
    fn try_from(m: &CsMat<T>) -> Result<Self, FormatError> {
        from_view(m.view())
    }
}

impl<T: Scalar> TryFrom<CsrMatrix<T>> for CsMatI<T, u32> {
    type Error = FormatError;

    /// Moves the column indices and values into an sprs CSR matrix with `u32` indices and
    /// offsets; the offsets are narrowed (a copy of `nrows + 1` integers); nothing is
    /// re-checked.
    ///
    /// # Errors
    ///
    /// [`FormatError::OffsetsOverflow`] when the matrix has more than `u32::MAX` stored
    /// entries (use `CsMat<T>`, whose offsets are `usize`).
    fn try_from(a: CsrMatrix<T>) -> Result<Self, FormatError> {
        let limit = u32::MAX as usize;
        if a.nnz() > limit {
            return Err(FormatError::OffsetsOverflow { target: "sprs::CsMatI<T, u32>", nnz: a.nnz(), limit });
        }
        let (nrows, ncols, offsets, indices, values) = a.into_parts();
        let offsets = offsets.into_iter().map(|o| o as u32).collect();
        // SAFETY: sprs' structure checks (indptr of length nrows + 1, non-decreasing, ending
        // at nnz; indices strictly increasing within each row and below ncols; dimensions
        // representable in the index types) are all invariants of a CsrMatrix, whose
        // dimensions are at most i32::MAX, and nnz <= u32::MAX was checked above.
        Ok(unsafe { CsMatI::new_unchecked(CompressedStorage::CSR, (nrows, ncols), offsets, indices, values) })
    }
}

impl<T: Scalar> From<CsrMatrix<T>> for CsMat<T> {
    /// Builds an sprs CSR matrix with `usize` indices: the offsets and indices are widened
    /// (a copy), the values move.
    fn from(a: CsrMatrix<T>) -> Self {
        let (nrows, ncols, offsets, indices, values) = a.into_parts();
        let offsets = offsets.into_iter().map(|o| o as usize).collect();
        let indices = indices.into_iter().map(|i| i as usize).collect();
        // SAFETY: as for `CsMatI<T, u32>` above; widening to usize keeps every value (and
        // usize is 64-bit on every platform spgpu builds for).
        unsafe { CsMat::new_unchecked(CompressedStorage::CSR, (nrows, ncols), offsets, indices, values) }
    }
}

impl<T: Scalar> TryFrom<&TriMatI<T, u32>> for CooMatrix<T> {
    type Error = FormatError;

    /// Copies the triplets (a `TriMat` cannot be taken apart); duplicates are kept.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    fn try_from(m: &TriMatI<T, u32>) -> Result<Self, FormatError> {
        CooMatrix::try_from_triplets(
            m.rows(),
            m.cols(),
            m.row_inds().to_vec(),
            m.col_inds().to_vec(),
            m.data().to_vec(),
        )
    }
}

impl<T: Scalar> TryFrom<TriMatI<T, u32>> for CooMatrix<T> {
    type Error = FormatError;

    /// As for `&TriMatI<T, u32>`: the triplets are copied.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    fn try_from(m: TriMatI<T, u32>) -> Result<Self, FormatError> {
        CooMatrix::try_from(&m)
    }
}

impl<T: Scalar> TryFrom<&TriMat<T>> for CooMatrix<T> {
    type Error = FormatError;

    /// Copies the triplets, narrowing the `usize` indices to `u32`; duplicates are kept.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    fn try_from(m: &TriMat<T>) -> Result<Self, FormatError> {
        CooMatrix::try_from_usize_triplets(m.rows(), m.cols(), m.row_inds(), m.col_inds(), m.data().to_vec())
    }
}

impl<T: Scalar> TryFrom<TriMat<T>> for CooMatrix<T> {
    type Error = FormatError;

    /// As for `&TriMat<T>`: the triplets are copied.
    ///
    /// # Errors
    ///
    /// `TooLarge` for dimensions past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    fn try_from(m: TriMat<T>) -> Result<Self, FormatError> {
        CooMatrix::try_from(&m)
    }
}

impl<T: Scalar> From<CooMatrix<T>> for TriMatI<T, u32> {
    /// Moves the three triplet arrays into an sprs `TriMatI` (duplicates kept).
    fn from(a: CooMatrix<T>) -> Self {
        let (nrows, ncols, rows, cols, values) = a.into_parts();
        // Cannot panic: a CooMatrix holds equal-length arrays with every index in bounds,
        // which is all that `from_triplets` asserts.
        TriMatI::from_triplets((nrows, ncols), rows, cols, values)
    }
}

impl<T: Scalar> From<CooMatrix<T>> for TriMat<T> {
    /// Builds an sprs `TriMat` with `usize` indices: the indices are widened (a copy), the
    /// values move (duplicates kept).
    fn from(a: CooMatrix<T>) -> Self {
        let (nrows, ncols, rows, cols, values) = a.into_parts();
        let widen = |v: Vec<u32>| v.into_iter().map(|i| i as usize).collect::<Vec<usize>>();
        // Cannot panic: see the `TriMatI<T, u32>` conversion above.
        TriMat::from_triplets((nrows, ncols), widen(rows), widen(cols), values)
    }
}
