//! The error of the Matrix Market reader: where (file, line), what kind, and the text at fault.

use std::fmt;
use std::path::{Path, PathBuf};

/// What was wrong with a Matrix Market file (see [`MatrixMarketError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MatrixMarketErrorKind {
    /// The first line is not a `%%MatrixMarket object format field symmetry` banner.
    Banner,
    /// The object is neither `matrix` nor `vector`.
    UnknownObject,
    /// The format is neither `coordinate` nor `array`.
    UnknownFormat,
    /// The field is not `real`, `double`, `integer`, `pattern` or `complex`.
    UnknownField,
    /// The symmetry is not `general`, `symmetric`, `skew-symmetric` or `hermitian`.
    UnknownSymmetry,
    /// A `complex` field: spgpu computes with real numbers only.
    Complex,
    /// Keywords that are valid alone but not together (for example `array pattern`, a
    /// `skew-symmetric pattern` matrix or a symmetric `vector`).
    Unsupported,
    /// A symmetric, skew-symmetric or hermitian matrix that is not square.
    NotSquare,
    /// The size line is missing, truncated, has extra fields or a field that is not a whole
    /// number.
    SizeLine,
    /// A dimension or a count that does not fit the 32-bit index type
    /// ([`INDEX_LIMIT`](crate::INDEX_LIMIT)).
    TooLarge,
    /// The file ends before all the entries the size line announces.
    TooFewEntries,
    /// An entry past the number the size line announces.
    TooManyEntries,
    /// An entry line with too few or too many fields.
    BadEntry,
    /// A row or column index that is 0, negative or past the dimension.
    IndexOutOfRange,
    /// A value or index that is not a number.
    BadNumber,
    /// A number too large for its type (a value that overflows to infinity, an integer past
    /// `i64`).
    NumberOutOfRange,
    /// A diagonal entry in a skew-symmetric matrix (its diagonal is zero by definition).
    SkewDiagonal,
    /// [`read_vector`](super::read_vector) on a matrix with more than one column.
    NotAVector,
    /// A line longer than the reader's chunk (8 MiB): no valid line is that long.
    LineTooLong,
}

impl MatrixMarketErrorKind {
    /// A short description of the kind, as it starts the error message.
    pub fn describe(self) -> &'static str {
        use MatrixMarketErrorKind as K;
        match self {
            K::Banner => "bad or missing %%MatrixMarket banner",
            K::UnknownObject => "unknown object (expected matrix or vector)",
            K::UnknownFormat => "unknown format (expected coordinate or array)",
            K::UnknownField => "unknown field (expected real, double, integer or pattern)",
            K::UnknownSymmetry => "unknown symmetry (expected general, symmetric, skew-symmetric or hermitian)",
            K::Complex => "complex matrices are not supported",
            K::Unsupported => "unsupported combination of header keywords",
            K::NotSquare => "a symmetric matrix must be square",
            K::SizeLine => "bad size line",
            K::TooLarge => "too large for 32-bit indices",
            K::TooFewEntries => "too few entries",
            K::TooManyEntries => "too many entries",
            K::BadEntry => "bad entry line",
            K::IndexOutOfRange => "index out of range",
            K::BadNumber => "not a number",
            K::NumberOutOfRange => "number out of range",
            K::SkewDiagonal => "diagonal entry in a skew-symmetric matrix",
            K::NotAVector => "not a vector",
            K::LineTooLong => "line too long",
        }
    }
}

impl fmt::Display for MatrixMarketErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// A Matrix Market file that could not be read: which file, which line, what kind of fault,
/// and the text at fault.
///
/// Displays as one line, `FILE:LINE: KIND: DETAIL (at 'TEXT')`, for example
/// `m.mtx:7: index out of range: row index 9 is past the 5 rows (at '9 1 2.5')`.
///
/// # Example
///
/// ```
/// use spgpu::io::{read_csr_from_str, MatrixMarketErrorKind};
/// let text = "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n";
/// match read_csr_from_str::<f64>(text) {
///     Err(spgpu::Error::MatrixMarket(e)) => {
///         assert_eq!((e.kind, e.line), (MatrixMarketErrorKind::IndexOutOfRange, 3));
///         assert_eq!(e.text, "3 1 1.0");
///     }
///     other => panic!("expected an error, got {other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MatrixMarketError {
    /// The file, when the matrix was read from one.
    pub path: Option<PathBuf>,
    /// 1-based number of the line at fault (for a file that ends too early: one past its
    /// last line).
    pub line: usize,
    /// What kind of fault.
    pub kind: MatrixMarketErrorKind,
    /// What exactly was wrong, for a person to read.
    pub detail: String,
    /// The offending line, shortened to at most 60 characters (empty at the end of the
    /// file).
    pub text: String,
}

/// Longest excerpt of an offending line kept in an error, in characters.
const MAX_TEXT: usize = 60;

impl MatrixMarketError {
    /// An error at `line` with the offending line's bytes (shortened here).
    pub(crate) fn new(kind: MatrixMarketErrorKind, line: usize, detail: impl Into<String>, text: &[u8]) -> Self {
        MatrixMarketError { path: None, line, kind, detail: detail.into(), text: shorten(text) }
    }

    /// The same error, naming `path`.
    pub(crate) fn with_path(mut self, path: &Path) -> Self {
        self.path = Some(path.to_path_buf());
        self
    }
}

/// The offending text as a person reads it: trailing line end removed, at most
/// [`MAX_TEXT`] characters, invalid UTF-8 replaced.
fn shorten(text: &[u8]) -> String {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    // Never decode more than a bounded prefix: lines can be megabytes long.
    let head = &text[..text.len().min(4 * MAX_TEXT)];
    let s = String::from_utf8_lossy(head);
    let s = s.trim();
    let mut out: String = s.chars().take(MAX_TEXT).collect();
    if s.chars().count() > MAX_TEXT || head.len() < text.len() {
        out.push_str("...");
    }
    out
}

impl fmt::Display for MatrixMarketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(p) => write!(f, "{}:{}: ", p.display(), self.line)?,
            None => write!(f, "line {}: ", self.line)?,
        }
        write!(f, "{}", self.kind)?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        if !self.text.is_empty() {
            write!(f, " (at '{}')", self.text)?;
        }
        Ok(())
    }
}

impl std::error::Error for MatrixMarketError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_shortened_and_trimmed() {
        assert_eq!(shorten(b"  1 2 3\r\n"), "1 2 3");
        let long = vec![b'x'; 500];
        let s = shorten(&long);
        assert_eq!(s.chars().count(), MAX_TEXT + 3);
        assert!(s.ends_with("..."));
    }

    #[test]
    fn display_names_file_and_line() {
        let e = MatrixMarketError::new(MatrixMarketErrorKind::BadNumber, 7, "value 'x'", b"1 1 x\n")
            .with_path(Path::new("a.mtx"));
        assert_eq!(e.to_string(), "a.mtx:7: not a number: value 'x' (at '1 1 x')");
    }
}
