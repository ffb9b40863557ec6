//! The Matrix Market header: banner keywords and size line.

use std::fmt;

use super::error::{escape, MatrixMarketError, MatrixMarketErrorKind as K, MAX_TOKEN};
use super::number::{parse_u64, NumError};
use crate::INDEX_LIMIT;

/// The object a Matrix Market file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmObject {
    /// `matrix`.
    Matrix,
    /// `vector`: a column vector (size line `n` for array, `n nnz` for coordinate).
    Vector,
}

/// How the entries are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmFormat {
    /// `coordinate`: one line per stored entry, `row col [value]`, 1-based.
    Coordinate,
    /// `array`: every value, one per line, column by column (dense).
    Array,
}

/// The type of the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmField {
    /// `real` (or its synonym `double`): decimal floating point.
    Real,
    /// `integer`: whole numbers, converted to the element type (exactly where
    /// representable, else rounded to nearest).
    Integer,
    /// `pattern`: no values; every stored entry is 1.
    Pattern,
}

/// Which part of the matrix is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmSymmetry {
    /// Every entry is stored.
    General,
    /// `a(i,j) = a(j,i)`: the lower triangle (diagonal included) is stored.
    Symmetric,
    /// `a(i,j) = -a(j,i)`, zero diagonal: the strictly lower triangle is stored.
    SkewSymmetric,
    /// `a(i,j) = conj(a(j,i))`: with a real field, the same as [`MmSymmetry::Symmetric`].
    Hermitian,
}

impl MmObject {
    /// The header keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            MmObject::Matrix => "matrix",
            MmObject::Vector => "vector",
        }
    }
}

impl MmFormat {
    /// The header keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            MmFormat::Coordinate => "coordinate",
            MmFormat::Array => "array",
        }
    }
}

impl MmField {
    /// The header keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            MmField::Real => "real",
            MmField::Integer => "integer",
            MmField::Pattern => "pattern",
        }
    }
}

impl MmSymmetry {
    /// The header keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            MmSymmetry::General => "general",
            MmSymmetry::Symmetric => "symmetric",
            MmSymmetry::SkewSymmetric => "skew-symmetric",
            MmSymmetry::Hermitian => "hermitian",
        }
    }

    /// Whether entries off the diagonal stand for two entries (symmetric, skew-symmetric,
    /// hermitian).
    pub fn is_mirrored(self) -> bool {
        self != MmSymmetry::General
    }
}

/// What the header of a Matrix Market file says: banner keywords and sizes.
///
/// # Example
///
/// ```
/// use spgpu::io::{read_header_from_reader, MmFormat, MmSymmetry};
/// let text = "%%MatrixMarket matrix coordinate real symmetric\n% a comment\n3 3 4\n";
/// let h = read_header_from_reader(text.as_bytes())?;
/// assert_eq!((h.format, h.symmetry), (MmFormat::Coordinate, MmSymmetry::Symmetric));
/// assert_eq!((h.nrows, h.ncols, h.entries), (3, 3, 4));
/// # Ok::<(), spgpu::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MatrixMarketHeader {
    /// `matrix` or `vector`.
    pub object: MmObject,
    /// `coordinate` or `array`.
    pub format: MmFormat,
    /// `real`, `integer` or `pattern`.
    pub field: MmField,
    /// `general`, `symmetric`, `skew-symmetric` or `hermitian`.
    pub symmetry: MmSymmetry,
    /// Number of rows (the length, for a vector).
    pub nrows: usize,
    /// Number of columns (1 for a vector).
    pub ncols: usize,
    /// Entries stored in the file: the count on the size line for `coordinate`; for
    /// `array`, the number of values (the stored triangle of a symmetric matrix).
    pub entries: usize,
    /// 1-based line number of the size line (the data start on the line after it).
    pub size_line: usize,
}

impl fmt::Display for MatrixMarketHeader {
    /// `%%MatrixMarket matrix coordinate real general, 3 x 3, 4 stored entries`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "%%MatrixMarket {} {} {} {}, {} x {}, {} stored entries",
            self.object.keyword(),
            self.format.keyword(),
            self.field.keyword(),
            self.symmetry.keyword(),
            self.nrows,
            self.ncols,
            self.entries
        )
    }
}

/// Splits a line into whitespace-separated fields.
pub(crate) fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|c| c.is_ascii_whitespace()).filter(|f| !f.is_empty())
}

/// The banner keywords, parsed from the first line.
pub(crate) struct Banner {
    pub object: MmObject,
    pub format: MmFormat,
    pub field: MmField,
    pub symmetry: MmSymmetry,
}

/// Whether a line holds nothing but blanks (spaces, tabs, a CR) and its line end.
pub(crate) fn is_blank_line(line: &[u8]) -> bool {
    line.iter().all(|&c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
}

/// Whether `word` opens a banner: `%%MatrixMarket`, or `%MatrixMarket` as some writers emit
/// it, in any case.
fn is_banner_word(word: &[u8]) -> bool {
    let rest = word.strip_prefix(b"%%").or_else(|| word.strip_prefix(b"%"));
    rest.is_some_and(|r| r.eq_ignore_ascii_case(b"MatrixMarket"))
}

/// Parses the banner line (`line_no`: its 1-based number; lines before it are blank).
pub(crate) fn parse_banner(line: &[u8], line_no: usize) -> Result<Banner, MatrixMarketError> {
    let err = |kind, detail: String| MatrixMarketError::new(kind, line_no, detail, line);
    let f: Vec<&[u8]> = fields(line).take(6).collect();
    if !f.first().is_some_and(|b| is_banner_word(b)) {
        return Err(err(K::Banner, "the first line that is not blank must be a %%MatrixMarket banner".into()));
    }
    if f.len() < 5 {
        return Err(err(K::Banner, "expected '%%MatrixMarket object format field symmetry'".into()));
    }
    if f.len() > 5 {
        return Err(err(K::Banner, "unexpected text after the symmetry keyword".into()));
    }
    // Keywords match in any case; an unknown one is quoted as written.
    let word = |b: &[u8]| String::from_utf8_lossy(b).to_ascii_lowercase();
    let quoted = |i: usize| format!("'{}'", escape(f[i], MAX_TOKEN));
    let object = match word(f[1]).as_str() {
        "matrix" => MmObject::Matrix,
        "vector" => MmObject::Vector,
        _ => return Err(err(K::UnknownObject, quoted(1))),
    };
    let format = match word(f[2]).as_str() {
        "coordinate" => MmFormat::Coordinate,
        "array" => MmFormat::Array,
        _ => return Err(err(K::UnknownFormat, quoted(2))),
    };
    let field = match word(f[3]).as_str() {
        "real" | "double" => MmField::Real,
        "integer" => MmField::Integer,
        "pattern" => MmField::Pattern,
        "complex" => {
            return Err(err(K::Complex, "convert the file to real or read it with a complex-capable tool".into()))
        }
        _ => return Err(err(K::UnknownField, quoted(3))),
    };
    let symmetry = match word(f[4]).as_str() {
        "general" => MmSymmetry::General,
        "symmetric" => MmSymmetry::Symmetric,
        "skew-symmetric" => MmSymmetry::SkewSymmetric,
        "hermitian" => MmSymmetry::Hermitian,
        _ => return Err(err(K::UnknownSymmetry, quoted(4))),
    };
    if format == MmFormat::Array && field == MmField::Pattern {
        return Err(err(K::Unsupported, "an array file cannot have a pattern field".into()));
    }
    if symmetry == MmSymmetry::SkewSymmetric && field == MmField::Pattern {
        return Err(err(K::Unsupported, "a pattern matrix cannot be skew-symmetric".into()));
    }
    if object == MmObject::Vector && symmetry != MmSymmetry::General {
        return Err(err(K::Unsupported, "a vector must be general".into()));
    }
    Ok(Banner { object, format, field, symmetry })
}

/// Parses the size line (`line` is its 1-based number) into a header.
pub(crate) fn parse_size_line(b: Banner, line: &[u8], line_no: usize) -> Result<MatrixMarketHeader, MatrixMarketError> {
    let err = |kind, detail: String| MatrixMarketError::new(kind, line_no, detail, line);
    let wanted: &[&str] = match (b.object, b.format) {
        (MmObject::Matrix, MmFormat::Coordinate) => &["rows", "columns", "entries"],
        (MmObject::Matrix, MmFormat::Array) => &["rows", "columns"],
        (MmObject::Vector, MmFormat::Coordinate) => &["length", "entries"],
        (MmObject::Vector, MmFormat::Array) => &["length"],
    };
    let mut values = [0usize; 3];
    let mut count = 0;
    for f in fields(line) {
        if count == wanted.len() {
            return Err(err(K::SizeLine, format!("expected only {} on the size line", wanted.join(", "))));
        }
        let v = match parse_u64(f) {
            Ok(v) => v,
            Err(NumError::Range) => {
                return Err(err(K::TooLarge, format!("{} {} overflows", wanted[count], escape(f, MAX_TOKEN))))
            }
            Err(NumError::Syntax) => {
                return Err(err(
                    K::SizeLine,
                    format!("{} '{}' is not a whole number", wanted[count], escape(f, MAX_TOKEN)),
                ))
            }
        };
        // Dimensions index with 32 bits; the entry count is bounded by memory only (checked
        // when the arrays are allocated).
        if wanted[count] != "entries" && v > INDEX_LIMIT as u64 {
            return Err(err(K::TooLarge, format!("{} {v} exceeds the limit {INDEX_LIMIT}", wanted[count])));
        }
        let v = usize::try_from(v).map_err(|_| err(K::TooLarge, format!("{} {v} overflows", wanted[count])))?;
        values[count] = v;
        count += 1;
    }
    if count < wanted.len() {
        return Err(err(K::SizeLine, format!("expected {}, found {count} number(s)", wanted.join(", "))));
    }
    let (nrows, ncols, declared) = match (b.object, b.format) {
        (MmObject::Matrix, MmFormat::Coordinate) => (values[0], values[1], Some(values[2])),
        (MmObject::Matrix, MmFormat::Array) => (values[0], values[1], None),
        (MmObject::Vector, MmFormat::Coordinate) => (values[0], 1, Some(values[1])),
        (MmObject::Vector, MmFormat::Array) => (values[0], 1, None),
    };
    if b.symmetry.is_mirrored() && nrows != ncols {
        return Err(err(K::NotSquare, format!("{} matrix of {nrows} x {ncols}", b.symmetry.keyword())));
    }
    // Most entries a matrix of this shape can store (as u128: no overflow).
    let n = nrows as u128;
    let cells = match b.symmetry {
        MmSymmetry::General => n * ncols as u128,
        MmSymmetry::Symmetric | MmSymmetry::Hermitian => n * (n + 1) / 2,
        MmSymmetry::SkewSymmetric => n * n.saturating_sub(1) / 2,
    };
    // A coordinate file may repeat a position (duplicates are summed), so its count is not
    // bounded by `cells`; the count itself is bounded by memory.
    let entries = match declared {
        Some(e) => e,
        None => usize::try_from(cells).map_err(|_| err(K::TooLarge, format!("{nrows} x {ncols} values overflow")))?,
    };
    Ok(MatrixMarketHeader {
        object: b.object,
        format: b.format,
        field: b.field,
        symmetry: b.symmetry,
        nrows,
        ncols,
        entries,
        size_line: line_no,
    })
}
