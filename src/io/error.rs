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

/// Longest excerpt of a token (a keyword, a number) quoted in an error's detail, in
/// characters.
pub(crate) const MAX_TOKEN: usize = 40;

/// The offending text as a person reads it: line end and surrounding blanks removed,
/// non-printable bytes escaped ([`escape`]), at most [`MAX_TEXT`] characters.
fn shorten(text: &[u8]) -> String {
    escape(text.trim_ascii(), MAX_TEXT)
}

/// `bytes` as text that is safe to print on a terminal, at most `max` characters of it
/// (then `...`): printable ASCII and printable UTF-8 as they are; tab, CR, LF and backslash
/// as `\t`, `\r`, `\n`, `\\`; other control bytes and invalid UTF-8 as `\xNN`; invisible or
/// direction-changing Unicode characters as `\u{NNNN}`. A binary file shows as escapes, never
/// as raw control characters.
///
/// Only a bounded prefix is looked at: lines and tokens can be megabytes long.
pub(crate) fn escape(bytes: &[u8], max: usize) -> String {
    use std::fmt::Write;
    let head = &bytes[..bytes.len().min(4 * max)];
    let mut out = String::new();
    let mut piece = String::new();
    let mut shown = 0; // characters in `out`
    let mut complete = head.len() == bytes.len();
    'chunks: for chunk in head.utf8_chunks() {
        let valid = chunk.valid().chars().map(Ok);
        let invalid = chunk.invalid().iter().map(|&b| Err(b));
        for c in valid.chain(invalid) {
            piece.clear();
            // Writing to a String cannot fail.
            let _ = match c {
                Ok('\\') => write!(piece, "\\\\"),
                Ok('\t') => write!(piece, "\\t"),
                Ok('\r') => write!(piece, "\\r"),
                Ok('\n') => write!(piece, "\\n"),
                Ok(c) if c.is_ascii_control() => write!(piece, "\\x{:02x}", c as u32),
                Ok(c) if is_invisible(c) => write!(piece, "\\u{{{:04x}}}", c as u32),
                Ok(c) => write!(piece, "{c}"),
                Err(b) => write!(piece, "\\x{b:02x}"),
            };
            let len = piece.chars().count();
            if shown + len > max {
                complete = false;
                break 'chunks;
            }
            out.push_str(&piece);
            shown += len;
        }
    }
    if !complete {
        out.push_str("...");
    }
    out
}

/// Characters that print nothing or change how the rest of a line displays: C1 controls,
/// format characters (soft hyphen, zero-width characters, direction marks, embeddings,
/// overrides and isolates, the byte order mark), line and paragraph separators.
fn is_invisible(c: char) -> bool {
    matches!(
        c as u32,
        0x80..=0x9f
            | 0xad
            | 0x061c
            | 0x180e
            | 0x200b..=0x200f
            | 0x2028..=0x202e
            | 0x2060..=0x206f
            | 0xfeff
            | 0xfff9..=0xfffb
    )
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
    fn non_printable_bytes_are_escaped() {
        assert_eq!(shorten(b"1 1 \x00\x01\x1b[31m\x7f\n"), "1 1 \\x00\\x01\\x1b[31m\\x7f");
        // Invalid UTF-8 byte by byte; valid, printable UTF-8 kept; invisible characters
        // and tabs escaped; a backslash doubled so that escapes are unambiguous.
        assert_eq!(shorten(b"\xff\xfe \xc3\xa9 \xe2\x80\xae\tx\\y"), "\\xff\\xfe \u{e9} \\u{202e}\\tx\\\\y");
        // A long binary line: at most MAX_TEXT characters, never a partial escape.
        let s = shorten(&[0u8; 500]);
        assert_eq!(s, format!("{}...", "\\x00".repeat(MAX_TEXT / 4)));
        assert!(escape(b"abc", 2).ends_with("ab..."));
        assert!(!shorten(&(0u8..=255).collect::<Vec<_>>()).chars().any(char::is_control));
    }

    #[test]
    fn display_names_file_and_line() {
        let e = MatrixMarketError::new(MatrixMarketErrorKind::BadNumber, 7, "value 'x'", b"1 1 x\n")
            .with_path(Path::new("a.mtx"));
        assert_eq!(e.to_string(), "a.mtx:7: not a number: value 'x' (at '1 1 x')");
    }
}
