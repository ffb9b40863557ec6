//! Host sparse formats: [`CooMatrix`] for assembly, [`CsrMatrix`] for computation and
//! upload, [`EllMatrix`] for uniform rows, and the row statistics ([`RowStats`]) the kernel
//! heuristic reads.
//!
//! Every format is validated when it is built: a value of one of these types always
//! satisfies the invariants its documentation lists, so the GPU kernels that read it need
//! no bounds checks. A violated invariant is a [`FormatError`] that names it, with the row
//! or index at fault.

mod coo;
mod csr;
mod ell;
mod stats;

pub use coo::CooMatrix;
pub use csr::CsrMatrix;
pub use ell::{EllMatrix, DEFAULT_MAX_ELL_PADDING_RATIO, ELL_PADDING};
pub use stats::RowStats;

/// The largest dimension, and the largest number of stored entries, that a matrix may have.
///
/// The GPU kernels index with 32-bit signed integers (as cuSPARSE's `CUSPARSE_INDEX_32I`
/// does), so row counts, column counts and entry counts must not exceed `i32::MAX`.
/// Building a larger matrix is a [`FormatError::TooLarge`], never a silent truncation.
pub const INDEX_LIMIT: usize = i32::MAX as usize;

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
    /// A dimension or count exceeds what the 32-bit GPU index type can hold
    /// ([`INDEX_LIMIT`]).
    #[error("{what} is {value}, more than the limit of {limit} imposed by 32-bit GPU indices")]
    TooLarge {
        /// Which quantity: "rows", "columns" or "stored entries".
        what: &'static str,
        /// Its value.
        value: usize,
        /// The limit ([`INDEX_LIMIT`]).
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

/// Checks that a count fits the GPU index type.
pub(crate) fn check_index_limit(what: &'static str, value: usize) -> Result<(), FormatError> {
    if value > INDEX_LIMIT {
        Err(FormatError::TooLarge { what, value, limit: INDEX_LIMIT })
    } else {
        Ok(())
    }
}
