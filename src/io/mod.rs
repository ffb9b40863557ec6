//! Reading and writing matrices and vectors (Matrix Market).

/// A Matrix Market file that could not be read: where, and what was wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct MatrixMarketError {
    /// 1-based line number of the fault.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}
