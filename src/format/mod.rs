//! Host sparse formats: [`CooMatrix`] for assembly, [`CsrMatrix`] for computation and
//! upload, [`EllMatrix`] for uniform rows, and the row statistics ([`RowStats`]) the kernel
//! heuristic reads.
//!
//! Every format is validated when it is built: a value of one of these types always
//! satisfies the invariants its documentation lists, so the GPU kernels that read it need
//! no bounds checks. A violated invariant is a [`FormatError`] that names it, with the row
//! or index at fault.
//!
//! Ways in and between the formats:
//!
//! | from | to | how | can fail |
//! |---|---|---|---|
//! | arrays | [`CsrMatrix`] | [`CsrMatrix::try_from_parts`] (checked), `from_parts_unchecked` (`unsafe`) | yes |
//! | triplets | [`CooMatrix`] | [`CooMatrix::try_from_triplets`], [`CooMatrix::push`] | yes |
//! | [`CooMatrix`] | [`CsrMatrix`] | [`CooMatrix::to_csr`], `From` (sorts, sums duplicates) | no |
//! | [`CsrMatrix`] | [`CooMatrix`] | `From` | no |
//! | [`CsrMatrix`] | [`EllMatrix`] | [`EllMatrix::try_from_csr`], `_with_limit`, `TryFrom` (padding limit) | yes |
//! | [`EllMatrix`] | [`CsrMatrix`] | [`EllMatrix::to_csr`], `From` | no |
//!
//! Conversions to and from sprs and nalgebra-sparse are in [`interop`](crate::interop).

mod coo;
mod csr;
mod ell;
mod stats;

pub use coo::CooMatrix;
pub use csr::CsrMatrix;
pub use ell::{EllMatrix, DEFAULT_MAX_ELL_PADDING_RATIO, ELL_PADDING};
pub use stats::RowStats;

/// The largest number of rows or columns that a matrix may have.
///
/// Row and column indices are 32-bit on the host and on the GPU (as cuSPARSE's
/// `CUSPARSE_INDEX_32I`), so dimensions must not exceed `i32::MAX`. Building a larger matrix
/// is a [`FormatError::TooLarge`], never a silent truncation.
///
/// The number of stored entries has no such limit: host row offsets are 64-bit. On the GPU,
/// a matrix of at most `INDEX_LIMIT` entries keeps 32-bit offsets (4 bytes per row, the
/// fastest layout), and a larger one gets 64-bit offsets, chosen at upload; column indices
/// stay 32-bit either way, so an entry costs the same bytes at any size.
pub const INDEX_LIMIT: usize = i32::MAX as usize;

/// The most stored entries a matrix may have: `isize::MAX / 16`, about 5.8e17, more than any
/// memory holds (an entry takes at least 8 bytes). Only a count past it, which no allocation
/// could hold, is refused as [`FormatError::TooLarge`] before anything is allocated; below
/// it, memory is the limit (the generators and the reader check it first).
pub const ENTRY_LIMIT: usize = isize::MAX as usize / 16;

/// A violated invariant of a host sparse format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The row offsets array must have `nrows + 1` entries.
    #[error("row offsets have length {found}, expected nrows + 1 = {expected}")]
    OffsetsLength {
        /// `nrows + 1`.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// The first row offset must be 0.
    #[error("the first row offset is {found}, expected 0")]
    OffsetsStart {
        /// The first offset given.
        found: usize,
    },
    /// Row offsets must not decrease.
    #[error("row offsets decrease at row {row}: offset {start} is followed by {end}")]
    NonMonotonicOffsets {
        /// The row whose end offset is smaller than its start offset.
        row: usize,
        /// `row_offsets[row]`.
        start: usize,
        /// `row_offsets[row + 1]`.
        end: usize,
    },
    /// The last row offset must equal the number of stored entries.
    #[error("the last row offset is {found}, but there are {expected} stored entries")]
    OffsetsEnd {
        /// The number of column indices (and values).
        expected: usize,
        /// `row_offsets[nrows]`.
        found: usize,
    },
    /// Index and value arrays must have the same length.
    #[error("{indices} indices but {values} values")]
    LengthMismatch {
        /// Length of the index array(s).
        indices: usize,
        /// Length of the value array.
        values: usize,
    },
    /// A row index is not below the number of rows.
    #[error("entry {index}: row {row} is out of bounds for {nrows} rows")]
    RowOutOfBounds {
        /// Position of the entry in the input arrays.
        index: usize,
        /// The row given.
        row: usize,
        /// The number of rows.
        nrows: usize,
    },
    /// A column index is not below the number of columns.
    #[error("row {row}: column {col} is out of bounds for {ncols} columns")]
    ColumnOutOfBounds {
        /// The row holding the entry.
        row: usize,
        /// The column given.
        col: usize,
        /// The number of columns.
        ncols: usize,
    },
    /// Column indices within a row must be strictly increasing.
    #[error("row {row}: column indices are not sorted ({prev} is followed by {col})")]
    UnsortedColumns {
        /// The row at fault.
        row: usize,
        /// The earlier column index.
        prev: usize,
        /// The column index that follows it.
        col: usize,
    },
    /// A (row, column) position is stored twice in a format that forbids duplicates.
    #[error("row {row}: column {col} is stored more than once")]
    DuplicateEntry {
        /// The row at fault.
        row: usize,
        /// The repeated column.
        col: usize,
    },
    /// A dimension exceeds what the 32-bit row and column indices can hold
    /// ([`INDEX_LIMIT`]).
    #[error("{what} is {value}, more than the limit of {limit} imposed by 32-bit GPU indices")]
    TooLarge {
        /// Which quantity: `"rows"`, `"columns"`, or, for an entry count past
        /// [`ENTRY_LIMIT`] (with that limit), `"stored entries"` or, for a generated matrix
        /// refused before it is drawn, `"stored entries (expected)"`.
        what: &'static str,
        /// Its value.
        value: usize,
        /// The limit ([`INDEX_LIMIT`]).
        limit: usize,
    },
    /// The matrix has more stored entries than the offsets of another crate's matrix type
    /// can count (sprs' `CsMatI<T, u32>` has 32-bit offsets).
    #[error("{nnz} stored entries do not fit the 32-bit offsets of {target} (at most {limit}); use a type with usize offsets")]
    OffsetsOverflow {
        /// The target type.
        target: &'static str,
        /// The stored entries.
        nnz: usize,
        /// The largest entry count the target can hold.
        limit: usize,
    },
    /// Converting to ELLPACK would store too much padding (see
    /// [`EllMatrix::try_from_csr_with_limit`]).
    #[error(
        "ELLPACK would store {padded} slots ({width} per row x {nrows} rows) for {nnz} entries, \
         more than the limit of {limit} slots; use CSR for this matrix or raise the limit"
    )]
    EllPaddingLimit {
        /// The longest row, which sets the ELL width.
        width: usize,
        /// The number of rows.
        nrows: usize,
        /// The stored entries.
        nnz: usize,
        /// `width * nrows`, the slots ELL would store.
        padded: usize,
        /// The limit in slots.
        limit: usize,
    },
}

/// An integer type that host index arrays may use on the way in: `u32` (spgpu's own) or
/// `usize` (sprs' `CsMat`, nalgebra-sparse). Validation runs on the caller's type, so an
/// index past the 32-bit range is reported with its true value before anything is narrowed.
pub(crate) trait IndexValue: Copy {
    fn index(self) -> usize;
}

impl IndexValue for u32 {
    #[inline]
    fn index(self) -> usize {
        self as usize
    }
}

impl IndexValue for u64 {
    #[inline]
    fn index(self) -> usize {
        self as usize
    }
}

impl IndexValue for usize {
    #[inline]
    fn index(self) -> usize {
        self
    }
}

/// Checks every CSR invariant (see [`CsrMatrix`]) of the given arrays, in the order
/// [`CsrMatrix::try_from_parts`] documents, and returns the first one broken.
pub(crate) fn validate_csr<O: IndexValue, I: IndexValue>(
    nrows: usize,
    ncols: usize,
    row_offsets: &[O],
    col_indices: &[I],
    nvalues: usize,
) -> Result<(), FormatError> {
    check_index_limit("rows", nrows)?;
    check_index_limit("columns", ncols)?;
    if row_offsets.len() != nrows + 1 {
        return Err(FormatError::OffsetsLength { expected: nrows + 1, found: row_offsets.len() });
    }
    let first = row_offsets[0].index();
    if first != 0 {
        return Err(FormatError::OffsetsStart { found: first });
    }
    if col_indices.len() != nvalues {
        return Err(FormatError::LengthMismatch { indices: col_indices.len(), values: nvalues });
    }
    for (row, w) in row_offsets.windows(2).enumerate() {
        let (start, end) = (w[0].index(), w[1].index());
        if end < start {
            return Err(FormatError::NonMonotonicOffsets { row, start, end });
        }
    }
    let last = row_offsets[nrows].index();
    if last != col_indices.len() {
        return Err(FormatError::OffsetsEnd { expected: col_indices.len(), found: last });
    }
    // Offsets are now known to be non-decreasing from 0 to nnz, so every slice below is in
    // range.
    for row in 0..nrows {
        let cols = &col_indices[row_offsets[row].index()..row_offsets[row + 1].index()];
        let mut prev: Option<usize> = None;
        for &c in cols {
            let col = c.index();
            if col >= ncols {
                return Err(FormatError::ColumnOutOfBounds { row, col, ncols });
            }
            if let Some(prev) = prev {
                if col == prev {
                    return Err(FormatError::DuplicateEntry { row, col });
                }
                if col < prev {
                    return Err(FormatError::UnsortedColumns { row, prev, col });
                }
            }
            prev = Some(col);
        }
    }
    Ok(())
}

/// Checks the COO invariants (see [`CooMatrix`]) of three parallel arrays.
pub(crate) fn validate_coo<I: IndexValue>(
    nrows: usize,
    ncols: usize,
    rows: &[I],
    cols: &[I],
    nvalues: usize,
) -> Result<(), FormatError> {
    check_index_limit("rows", nrows)?;
    check_index_limit("columns", ncols)?;
    if rows.len() != nvalues {
        return Err(FormatError::LengthMismatch { indices: rows.len(), values: nvalues });
    }
    if cols.len() != nvalues {
        return Err(FormatError::LengthMismatch { indices: cols.len(), values: nvalues });
    }
    for (index, (&r, &c)) in rows.iter().zip(cols).enumerate() {
        let (row, col) = (r.index(), c.index());
        if row >= nrows {
            return Err(FormatError::RowOutOfBounds { index, row, nrows });
        }
        if col >= ncols {
            return Err(FormatError::ColumnOutOfBounds { row, col, ncols });
        }
    }
    Ok(())
}

/// Narrows (or copies) row or column indices already checked against [`INDEX_LIMIT`] to the
/// 32-bit type.
#[cfg(any(feature = "sprs", feature = "nalgebra"))]
pub(crate) fn narrow<I: IndexValue>(v: &[I]) -> Vec<u32> {
    debug_assert!(v.iter().all(|&i| i.index() <= INDEX_LIMIT));
    v.iter().map(|&i| i.index() as u32).collect()
}

/// Row offsets of another type (`usize`, `u32`), already validated, as the host's `u64`.
#[cfg(any(feature = "sprs", feature = "nalgebra"))]
pub(crate) fn widen<O: IndexValue>(v: &[O]) -> Vec<u64> {
    v.iter().map(|&i| i.index() as u64).collect()
}

/// Checks that an entry count is below [`ENTRY_LIMIT`].
pub(crate) fn check_entry_limit(what: &'static str, value: usize) -> Result<(), FormatError> {
    if value > ENTRY_LIMIT {
        Err(FormatError::TooLarge { what, value, limit: ENTRY_LIMIT })
    } else {
        Ok(())
    }
}

/// Checks that a dimension fits the 32-bit index type.
pub(crate) fn check_index_limit(what: &'static str, value: usize) -> Result<(), FormatError> {
    if value > INDEX_LIMIT {
        Err(FormatError::TooLarge { what, value, limit: INDEX_LIMIT })
    } else {
        Ok(())
    }
}
