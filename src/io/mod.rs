//! Reading and writing matrices and vectors in the Matrix Market exchange format.
//!
//! # Reading
//!
//! [`read_csr`] reads any real Matrix Market matrix into a [`CsrMatrix`]: `coordinate` or
//! `array`, field `real`/`double`, `integer` or `pattern` (values 1), symmetry `general`,
//! `symmetric`, `skew-symmetric` or `hermitian` (real, so the same as symmetric).
//! Symmetric matrices are expanded (off-diagonal entries mirrored, the diagonal never
//! doubled; skew-symmetric mirrors are negated), duplicates are summed, gzip input is
//! decompressed transparently (detected by its magic bytes, not its name). [`read_coo`]
//! keeps duplicates; [`read_vector`] reads right-hand sides (`vector` objects and
//! one-column matrices); [`read_header`] reads only the header.
//!
//! The reader is permissive about layout (keywords in any case, a banner with one `%` or
//! two, blank lines anywhere, comment lines anywhere after the banner, CRLF line ends, tabs,
//! indentation) and strict about content: anything else is a [`MatrixMarketError`] that
//! names the file, the line, the [kind](MatrixMarketErrorKind) of fault and the offending
//! text (control bytes escaped), never a panic. Large
//! files are parsed on all cores (see the notes in `docs/matrix-market.md`).
//!
//! Values are parsed exactly as `str::parse` parses them for the element type (correctly
//! rounded, directly to `f32` for `f32`: no double rounding). The literals `inf`, `-inf`
//! and `nan` are accepted, as the writer emits them; a finite literal that overflows the
//! element type is an error. `integer` values are converted with one rounding to nearest,
//! so exactly wherever the element type can represent them.
//!
//! Memory proportional to the announced entry count is never reserved beyond what the
//! input can hold. The dimensions cannot be bounded so: a file that announces 2^31 - 1 rows
//! needs 8 GiB for its CSR row offsets, as the matrix it describes does. Every array whose
//! size the input dictates is checked against the allowance ([`set_memory_limit`],
//! [`available_host_memory`]) and allocated fallibly: what does not fit is an
//! [`Error::InsufficientMemory`] naming the array and its size, never an abort.
//!
//! # Writing
//!
//! [`write_csr`] writes `coordinate real general` (or the lower triangle as `symmetric`),
//! [`write_vector`] a dense `array`; values are printed in their shortest round-trip form,
//! so reading a written matrix gives it back exactly. A path ending in `.gz` is written
//! gzip-compressed.
//!
//! # Example
//!
//! ```
//! use spgpu::io::{read_csr_from_str, write_csr_to_writer, MmSymmetry};
//! let text = "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 4.0\n2 1 -1.5\n3 3 2\n";
//! let a = read_csr_from_str::<f64>(text)?;
//! assert_eq!(a.nnz(), 4); // (2,1) mirrored to (1,2)
//! assert_eq!(a.get(0, 1), Some(-1.5));
//! let mut out = Vec::new();
//! write_csr_to_writer(&mut out, &a, MmSymmetry::General)?;
//! let b = read_csr_from_str::<f64>(std::str::from_utf8(&out).unwrap())?;
//! assert_eq!(a, b);
//! # Ok::<(), spgpu::Error>(())
//! ```

mod error;
mod header;
mod memory;
mod number;
mod read;
mod write;

use std::fs::File;
use std::io::{BufWriter, Read};
use std::path::Path;

pub use error::{MatrixMarketError, MatrixMarketErrorKind};
pub use header::{MatrixMarketHeader, MmField, MmFormat, MmObject, MmSymmetry};
pub use memory::{available_host_memory, check_memory, memory_limit, set_memory_limit};
pub use write::{write_csr_to_writer, write_vector_to_writer};

use crate::{CooMatrix, CsrMatrix, Error, Result, Scalar};
use read::{decompressing, read_header_from, read_parsed, Parsed, Source};

/// Names `path` in an error: the file of a Matrix Market error, the file of an I/O error,
/// the file whose matrix would not fit in memory.
fn at_path(path: &Path) -> impl Fn(Error) -> Error + '_ {
    move |e| match e {
        Error::MatrixMarket(m) => Error::MatrixMarket(m.with_path(path)),
        Error::Io { path: None, source } => Error::Io { path: Some(path.to_path_buf()), source },
        Error::InsufficientMemory { what, memory, needed, available, hint } => {
            Error::InsufficientMemory { what: format!("{}: {what}", path.display()), memory, needed, available, hint }
        }
        e => e,
    }
}

/// Opens `path` for reading, decompressing gzip; returns the source and its size when
/// known (plain files).
fn open(path: &Path) -> Result<(Box<dyn Read + Send>, Option<u64>)> {
    let file = File::open(path).map_err(|source| Error::Io { path: Some(path.to_path_buf()), source })?;
    let len = file.metadata().ok().map(|m| m.len());
    let (reader, gz) = decompressing(file)?;
    Ok((reader, if gz { None } else { len }))
}

fn parse_path<T: Scalar>(path: &Path) -> Result<Parsed<T>> {
    let (reader, hint) = open(path)?;
    let mut src = Source::new(reader, hint);
    read_parsed(&mut src, hint)
}

fn parse_reader<'r, T: Scalar>(reader: impl Read + Send + 'r, hint: Option<u64>) -> Result<Parsed<T>> {
    let (reader, gz) = decompressing(reader)?;
    let hint = if gz { None } else { hint };
    let mut src = Source::new(reader, hint);
    read_parsed(&mut src, hint)
}

/// Reads a Matrix Market file into CSR: symmetry expanded, columns sorted, duplicates
/// summed; gzip-compressed files are read transparently.
///
/// # Errors
///
/// [`Error::Io`] naming the file when it cannot be opened or read (or is corrupt gzip);
/// [`Error::MatrixMarket`] naming the file, line and kind of fault for malformed content.
///
/// # Example
///
/// ```no_run
/// let a = spgpu::io::read_csr::<f64>("matrices/bcsstk16.mtx")?;
/// println!("{} x {}, {} entries", a.nrows(), a.ncols(), a.nnz());
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn read_csr<T: Scalar>(path: impl AsRef<Path>) -> Result<CsrMatrix<T>> {
    let path = path.as_ref();
    parse_path::<T>(path).and_then(Parsed::into_csr).map_err(at_path(path))
}

/// Reads a Matrix Market file into CSR, with its header (as [`read_csr`]).
///
/// # Errors
///
/// As [`read_csr`].
pub fn read_csr_with_header<T: Scalar>(path: impl AsRef<Path>) -> Result<(MatrixMarketHeader, CsrMatrix<T>)> {
    let path = path.as_ref();
    parse_path::<T>(path)
        .and_then(|p| {
            let h = p.header.clone();
            Ok((h, p.into_csr()?))
        })
        .map_err(at_path(path))
}

/// Reads Matrix Market text from any reader into CSR (as [`read_csr`]; gzip detected).
///
/// # Errors
///
/// As [`read_csr`], without a file name.
pub fn read_csr_from_reader<T: Scalar>(reader: impl Read + Send) -> Result<CsrMatrix<T>> {
    parse_reader::<T>(reader, None)?.into_csr()
}

/// Reads Matrix Market text held in a string into CSR (as [`read_csr`]).
///
/// # Errors
///
/// As [`read_csr`], without a file name.
pub fn read_csr_from_str<T: Scalar>(text: &str) -> Result<CsrMatrix<T>> {
    parse_reader::<T>(text.as_bytes(), Some(text.len() as u64))?.into_csr()
}

/// Reads a Matrix Market file into COO: symmetry expanded (mirrored entries after the
/// stored ones), duplicates kept, array files without their zeros.
///
/// # Errors
///
/// As [`read_csr`].
pub fn read_coo<T: Scalar>(path: impl AsRef<Path>) -> Result<CooMatrix<T>> {
    let path = path.as_ref();
    parse_path::<T>(path).and_then(Parsed::into_coo).map_err(at_path(path))
}

/// Reads Matrix Market text from any reader into COO (as [`read_coo`]).
///
/// # Errors
///
/// As [`read_csr`], without a file name.
pub fn read_coo_from_reader<T: Scalar>(reader: impl Read + Send) -> Result<CooMatrix<T>> {
    parse_reader::<T>(reader, None)?.into_coo()
}

/// Reads a dense vector (a right-hand side): a `vector` object (`array` or `coordinate`,
/// missing entries zero, duplicates summed) or a matrix with one column.
///
/// # Errors
///
/// As [`read_csr`]; a [`MatrixMarketErrorKind::NotAVector`] error for a matrix with more
/// than one column.
///
/// # Example
///
/// ```
/// let text = "%%MatrixMarket matrix array real general\n3 1\n1.5\n0\n-2\n";
/// let b = spgpu::io::read_vector_from_reader::<f64>(text.as_bytes())?;
/// assert_eq!(b, vec![1.5, 0.0, -2.0]);
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn read_vector<T: Scalar>(path: impl AsRef<Path>) -> Result<Vec<T>> {
    let path = path.as_ref();
    parse_path::<T>(path).and_then(Parsed::into_vector).map_err(at_path(path))
}

/// Reads a dense vector from any reader (as [`read_vector`]).
///
/// # Errors
///
/// As [`read_vector`], without a file name.
pub fn read_vector_from_reader<T: Scalar>(reader: impl Read + Send) -> Result<Vec<T>> {
    parse_reader::<T>(reader, None)?.into_vector()
}

/// Reads only the header of a Matrix Market file: banner keywords, dimensions, stored
/// entry count. The entries are not read.
///
/// # Errors
///
/// As [`read_csr`], for faults in the banner or size line.
pub fn read_header(path: impl AsRef<Path>) -> Result<MatrixMarketHeader> {
    let path = path.as_ref();
    open(path)
        .and_then(|(reader, _)| read_header_from(&mut Source::new(reader, Some(1 << 16))).map(|(h, _)| h))
        .map_err(at_path(path))
}

/// Reads only the header from any reader (as [`read_header`]).
///
/// # Errors
///
/// As [`read_header`], without a file name.
pub fn read_header_from_reader(reader: impl Read + Send) -> Result<MatrixMarketHeader> {
    let (reader, _) = decompressing(reader)?;
    read_header_from(&mut Source::new(reader, Some(1 << 16))).map(|(h, _)| h)
}

/// A file being written: plain, or gzip-compressed.
enum Output {
    Plain(BufWriter<File>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
}

impl std::io::Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Output::Plain(w) => w.write(buf),
            Output::Gzip(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Output::Plain(w) => w.flush(),
            Output::Gzip(w) => w.flush(),
        }
    }
}

/// Creates `path` for writing, gzip-compressed when its name ends in `.gz`.
fn create(path: &Path) -> Result<Output> {
    let file = File::create(path).map_err(|source| Error::Io { path: Some(path.to_path_buf()), source })?;
    let file = BufWriter::with_capacity(1 << 20, file);
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz")) {
        Ok(Output::Gzip(flate2::write::GzEncoder::new(file, flate2::Compression::default())))
    } else {
        Ok(Output::Plain(file))
    }
}

/// Completes the file: the gzip trailer, then the buffered bytes, with their errors.
fn finish(w: Output) -> Result<()> {
    use std::io::Write;
    let mut file = match w {
        Output::Plain(f) => f,
        Output::Gzip(g) => g.finish()?,
    };
    file.flush()?;
    Ok(())
}

/// Writes `a` to the file `path` (see [`write_csr_to_writer`]); gzip-compressed when the
/// name ends in `.gz`.
///
/// # Errors
///
/// As [`write_csr_to_writer`]; I/O errors name the file.
///
/// # Example
///
/// ```no_run
/// use spgpu::io::{write_csr, MmSymmetry};
/// let a = spgpu::gen::laplacian_2d::<f64>(100);
/// write_csr("lap2d_100.mtx", &a, MmSymmetry::Symmetric)?; // lower triangle only
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn write_csr<T: Scalar>(path: impl AsRef<Path>, a: &CsrMatrix<T>, symmetry: MmSymmetry) -> Result<()> {
    let path = path.as_ref();
    create(path)
        .and_then(|mut w| {
            write_csr_to_writer(&mut w, a, symmetry)?;
            finish(w)
        })
        .map_err(at_path(path))
}

/// Writes `v` to the file `path` as a dense `array` (see [`write_vector_to_writer`]).
///
/// # Errors
///
/// I/O errors, naming the file.
pub fn write_vector<T: Scalar>(path: impl AsRef<Path>, v: &[T]) -> Result<()> {
    let path = path.as_ref();
    create(path)
        .and_then(|mut w| {
            write_vector_to_writer(&mut w, v)?;
            finish(w)
        })
        .map_err(at_path(path))
}

/// Loads a matrix by name: `gen:...` builds a generated one ([`crate::gen::from_spec`]),
/// anything else is a Matrix Market file path ([`read_csr`]).
///
/// # Errors
///
/// As [`crate::gen::from_spec`] or [`read_csr`].
///
/// # Example
///
/// ```
/// let a = spgpu::io::load_matrix::<f64>("gen:lap2d:10")?;
/// assert_eq!(a.nrows(), 100);
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn load_matrix<T: Scalar>(spec: &str) -> Result<CsrMatrix<T>> {
    if spec.starts_with("gen:") {
        crate::gen::from_spec(spec)
    } else {
        read_csr(spec)
    }
}
