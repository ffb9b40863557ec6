//! The reader: header, parallel parse of the entries, and assembly into CSR, COO or a dense
//! vector.
//!
//! # How it works
//!
//! The input is read in chunks of at most [`CHUNK`] bytes, cut after the last complete line;
//! the next chunk is read into a second buffer while one is parsed. Each chunk is split at line boundaries into pieces that rayon parses in parallel, each
//! into its own triplet arrays; the pieces are then appended in file order, so the first
//! bad line in file order is the one reported, with its exact line number. No line is
//! copied or allocated: numbers are parsed from the chunk's bytes in place.
//!
//! CSR is built by a counting sort over rows (skipped when the rows come sorted, as most
//! writers emit them), then a parallel sort within each row that is out of order, then a
//! pass that sums duplicates when there are any. The counting sort scatters column indices
//! and values in two passes, so the peak is the triplets plus the CSR arrays being filled:
//! 24 bytes per `f64` entry for a general matrix, twice the 12 bytes per entry of the CSR
//! it builds.

use std::io::Read;
use std::ops::Range;

use rayon::prelude::*;

use super::error::{escape, MatrixMarketError, MatrixMarketErrorKind as K, MAX_TOKEN};
use super::header::{
    is_blank_line, parse_banner, parse_size_line, MatrixMarketHeader, MmField, MmFormat, MmObject, MmSymmetry,
};
use super::memory;
use super::number::{parse_f32, parse_f64, parse_i64, parse_u64, NumError};
use crate::{CooMatrix, CsrMatrix, Error, Result, Scalar};

/// The largest chunk parsed at once (8 MiB; a second buffer of the same size is read while
/// it is parsed); also the longest line accepted.
pub(crate) const CHUNK: usize = 8 << 20;
/// The smallest read buffer.
const MIN_BUF: usize = 4 << 10;
/// The smallest piece a chunk is cut into for parallel parsing.
const MIN_PIECE: usize = 64 << 10;

/// A byte source read in chunks of whole lines.
pub(crate) struct Source<'r> {
    reader: Box<dyn Read + Send + 'r>,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// Whether the last fill filled the whole buffer (the input may be larger: grow).
    was_full: bool,
    /// 1-based number of the line that starts at `buf[start]`.
    line: usize,
    /// The second buffer, filled while the first is parsed.
    spare: Vec<u8>,
}

impl<'r> Source<'r> {
    /// A source over `reader`; `size_hint` (the input's length, when known) sizes the buffer.
    pub(crate) fn new(reader: Box<dyn Read + Send + 'r>, size_hint: Option<u64>) -> Self {
        let cap = size_hint.map_or(64 << 10, |h| usize::try_from(h).unwrap_or(CHUNK).saturating_add(1));
        Source {
            reader,
            buf: vec![0; cap.clamp(MIN_BUF, CHUNK)],
            start: 0,
            end: 0,
            eof: false,
            was_full: false,
            line: 1,
            spare: Vec::new(),
        }
    }

    /// Moves unread bytes to the front, grows the buffer when the input outgrew it, and
    /// reads until the buffer is full or the input ends.
    fn fill(&mut self) -> std::io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if (self.was_full || self.end == self.buf.len()) && self.buf.len() < CHUNK {
            let len = (self.buf.len() * 2).min(CHUNK);
            self.buf.resize(len, 0);
        }
        if !self.eof {
            let (n, eof) = read_full(&mut *self.reader, &mut self.buf[self.end..])?;
            self.end += n;
            self.eof = eof;
        }
        self.was_full = self.end == self.buf.len();
        Ok(())
    }

    /// The next line (with its `\n`, if any) and its number, or `None` at the end.
    fn next_line(&mut self) -> Result<Option<(usize, &[u8])>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let s = self.start;
                self.start += i + 1;
                self.line += 1;
                return Ok(Some((self.line - 1, &self.buf[s..s + i + 1])));
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let s = self.start;
                self.start = self.end;
                self.line += 1;
                return Ok(Some((self.line - 1, &self.buf[s..self.end])));
            }
            if self.start == 0 && self.end == self.buf.len() && self.buf.len() >= CHUNK {
                return Err(line_too_long(self.line, &self.buf[..self.end]));
            }
            self.fill()?;
        }
    }

    /// Hands the next run of complete lines (the last line of the input may lack its `\n`)
    /// and the number of its first line to `parse`, while the bytes after it are read into
    /// a second buffer; `None` at the end. The caller reports how many lines the run held
    /// with [`Source::advance_lines`].
    fn with_next_chunk<R: Send>(&mut self, parse: impl FnOnce(usize, &[u8]) -> R + Send) -> Result<Option<R>> {
        let cut = loop {
            if !self.eof {
                self.fill()?;
            }
            let data = &self.buf[self.start..self.end];
            if self.eof {
                if data.is_empty() {
                    return Ok(None);
                }
                break self.end;
            }
            match memchr::memrchr(b'\n', data) {
                Some(i) => break self.start + i + 1,
                None if self.buf.len() >= CHUNK && self.start == 0 && self.end == self.buf.len() => {
                    return Err(line_too_long(self.line, data));
                }
                None => {}
            }
        };
        let first_line = self.line;
        if self.eof {
            let out = parse(first_line, &self.buf[self.start..cut]);
            self.start = cut;
            return Ok(Some(out));
        }
        // The partial last line starts the second buffer; the read fills the rest of it
        // while `parse` runs on the first.
        let tail = self.end - cut;
        self.spare.resize(self.buf.len(), 0);
        self.spare[..tail].copy_from_slice(&self.buf[cut..self.end]);
        let Source { reader, buf, spare, start, .. } = self;
        let chunk = &buf[*start..cut];
        let (out, read) = rayon::join(|| parse(first_line, chunk), || read_full(reader, &mut spare[tail..]));
        let (n, eof) = read?;
        std::mem::swap(&mut self.buf, &mut self.spare);
        self.start = 0;
        self.end = tail + n;
        self.eof = eof;
        self.was_full = self.end == self.buf.len();
        Ok(Some(out))
    }

    fn advance_lines(&mut self, n: usize) {
        self.line += n;
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read and whether the
/// input ended.
fn read_full(reader: &mut (dyn Read + Send + '_), buf: &mut [u8]) -> std::io::Result<(usize, bool)> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => return Ok((n, true)),
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((n, false))
}

fn line_too_long(line: usize, text: &[u8]) -> Error {
    MatrixMarketError::new(K::LineTooLong, line, format!("no line end within {} MiB", CHUNK >> 20), text).into()
}

/// Wraps `reader` so that gzip input (detected by its magic bytes) is decompressed.
pub(crate) fn decompressing<'r>(mut reader: impl Read + Send + 'r) -> Result<(Box<dyn Read + Send + 'r>, bool)> {
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < 2 {
        match reader.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let chained = std::io::Cursor::new(magic).take(got as u64).chain(reader);
    if got == 2 && magic == [0x1f, 0x8b] {
        Ok((Box::new(flate2::read::MultiGzDecoder::new(chained)), true))
    } else {
        Ok((Box::new(chained), false))
    }
}

/// Reads the banner, comments and size line. Returns the header and the size line's text.
pub(crate) fn read_header_from(src: &mut Source<'_>) -> Result<(MatrixMarketHeader, Vec<u8>)> {
    // The banner: the first line that is not blank (a UTF-8 byte order mark may open the
    // file).
    let banner = loop {
        let Some((no, line)) = src.next_line()? else {
            let detail = if src.line == 1 { "the file is empty" } else { "the file holds only blank lines" };
            return Err(MatrixMarketError::new(K::Banner, src.line, detail, b"").into());
        };
        let line = if no == 1 { line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line) } else { line };
        if !is_blank_line(line) {
            break parse_banner(line, no)?;
        }
    };
    loop {
        match src.next_line()? {
            None => {
                return Err(
                    MatrixMarketError::new(K::SizeLine, src.line, "the file ends before the size line", b"").into()
                )
            }
            Some((no, line)) => {
                if is_blank_line(line) || line.trim_ascii_start().first() == Some(&b'%') {
                    continue;
                }
                let header = parse_size_line(banner, line, no)?;
                return Ok((header, line.to_vec()));
            }
        }
    }
}

/// What an entry line holds.
#[derive(Clone, Copy)]
struct Layout {
    /// Indices per line: 2 (matrix coordinate), 1 (vector coordinate) or 0 (array).
    indices: usize,
    field: MmField,
    nrows: u64,
    ncols: u64,
    skew: bool,
    single: bool,
}

/// The entries of one piece, and the first error in it.
struct Piece<T> {
    rows: Vec<u32>,
    cols: Vec<u32>,
    vals: Vec<T>,
    /// Line ends (`\n`) consumed.
    lines: usize,
    /// The first error, its line number relative to the piece (0 = its first line).
    error: Option<MatrixMarketError>,
}

#[inline]
fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'\r'
}

/// Whether `c` ends a token: a space, a tab, a line end, or any other ASCII control
/// character (which then fails as unexpected text).
#[inline]
fn is_delim(c: u8) -> bool {
    c <= b' '
}

/// The position of the first byte at or after `pos` that ends a token ([`is_delim`]), or
/// `buf.len()`; eight bytes at a time.
#[inline]
fn token_end(buf: &[u8], mut pos: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while pos + 8 <= buf.len() {
        let w = u64::from_le_bytes(buf[pos..pos + 8].try_into().expect("8 bytes"));
        // High bit of each byte below 0x21 (exact for the lowest such byte; bytes with the
        // high bit set never match).
        let m = w.wrapping_sub(ONES * 0x21) & !w & HIGH;
        if m != 0 {
            return pos + (m.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    while pos < buf.len() && !is_delim(buf[pos]) {
        pos += 1;
    }
    pos
}

/// Parses the entry lines of `buf` (whole lines), stopping at the first error or before
/// entry number `limit + 1` (a [`K::TooManyEntries`] error).
fn parse_piece<T: Scalar>(buf: &[u8], lay: &Layout, limit: usize, p: &mut Piece<T>) {
    p.rows.clear();
    p.cols.clear();
    p.vals.clear();
    p.lines = 0;
    p.error = None;
    let n = buf.len();
    let mut pos = 0;
    let mut line = 0usize;
    // Start of the line being parsed (declared before the macros so that they can see it).
    let mut line_start;
    // Ends the piece with an error on the current line.
    macro_rules! fail {
        ($kind:expr, $($detail:tt)*) => {{
            let end = memchr::memchr(b'\n', &buf[line_start..]).map_or(n, |i| line_start + i);
            p.error = Some(MatrixMarketError::new($kind, line, format!($($detail)*), &buf[line_start..end]));
            break;
        }};
    }
    // The next whitespace-delimited token of the line, or `fail!` naming what is missing.
    macro_rules! token {
        ($what:expr) => {{
            while pos < n && is_blank(buf[pos]) {
                pos += 1;
            }
            let s = pos;
            pos = token_end(buf, pos);
            if s == pos {
                fail!(K::BadEntry, "missing {}", $what);
            }
            &buf[s..pos]
        }};
    }
    // A row or column index, digits accumulated as they are scanned; anything unusual (no
    // digits, more than 19, a sign or a letter) takes the slow path that classifies it.
    macro_rules! index {
        ($dim:expr, $what:expr) => {{
            while pos < n && is_blank(buf[pos]) {
                pos += 1;
            }
            let s = pos;
            let mut v: u64 = 0;
            while pos < n {
                let d = buf[pos].wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                v = v.wrapping_mul(10).wrapping_add(d as u64);
                pos += 1;
            }
            let v = if pos == s || pos - s > 19 || (pos < n && !is_delim(buf[pos])) {
                while pos < n && !is_delim(buf[pos]) {
                    pos += 1;
                }
                let tok = &buf[s..pos];
                match parse_u64(tok) {
                    _ if tok.is_empty() => fail!(K::BadEntry, "missing {} index", $what),
                    Ok(v) => v,
                    Err(NumError::Range) => {
                        fail!(K::IndexOutOfRange, "{} index {} is outside 1..={}", $what, escape(tok, MAX_TOKEN), $dim)
                    }
                    Err(NumError::Syntax)
                        if tok.len() > 1 && tok[0] == b'-' && tok[1..].iter().all(u8::is_ascii_digit) =>
                    {
                        fail!(K::IndexOutOfRange, "{} index {} is negative", $what, escape(tok, MAX_TOKEN))
                    }
                    Err(NumError::Syntax) => {
                        fail!(K::BadNumber, "{} index '{}' is not a whole number", $what, escape(tok, MAX_TOKEN))
                    }
                }
            } else {
                v
            };
            if v == 0 || v > $dim {
                fail!(K::IndexOutOfRange, "{} index {} is outside 1..={}", $what, v, $dim);
            }
            (v - 1) as u32
        }};
    }
    while pos < n {
        line_start = pos;
        // Indentation; a line of blanks (spaces, tabs, CRs) is skipped.
        while pos < n && is_blank(buf[pos]) {
            pos += 1;
        }
        if pos == n {
            break;
        }
        match buf[pos] {
            b'\n' => {
                pos += 1;
                line += 1;
                continue;
            }
            b'%' => {
                match memchr::memchr(b'\n', &buf[pos..]) {
                    Some(i) => {
                        pos += i + 1;
                        line += 1;
                    }
                    None => pos = n,
                }
                continue;
            }
            _ => {}
        }
        if p.vals.len() == limit {
            // The caller states the counts in the detail.
            fail!(K::TooManyEntries, "one entry past the count on the size line");
        }
        let mut r = 0u32;
        let mut c = 0u32;
        if lay.indices >= 1 {
            r = index!(lay.nrows, "row");
        }
        if lay.indices == 2 {
            c = index!(lay.ncols, "column");
        }
        let v = match lay.field {
            MmField::Pattern => T::ONE,
            MmField::Real => {
                let tok = token!("value");
                let parsed = if lay.single { parse_f32(tok).map(|x| x as f64) } else { parse_f64(tok) };
                match parsed {
                    Ok(x) => T::from_f64(x),
                    Err(NumError::Syntax) => fail!(K::BadNumber, "value '{}'", escape(tok, MAX_TOKEN)),
                    Err(NumError::Range) => {
                        fail!(K::NumberOutOfRange, "value {} overflows {}", escape(tok, MAX_TOKEN), T::NAME)
                    }
                }
            }
            MmField::Integer => {
                let tok = token!("value");
                match parse_i64(tok) {
                    // One rounding, to the element type (exact where representable).
                    Ok(x) => T::from_f64(if lay.single { x as f32 as f64 } else { x as f64 }),
                    Err(NumError::Syntax) => fail!(K::BadNumber, "integer value '{}'", escape(tok, MAX_TOKEN)),
                    Err(NumError::Range) => {
                        fail!(K::NumberOutOfRange, "integer value {} overflows i64", escape(tok, MAX_TOKEN))
                    }
                }
            }
        };
        while pos < n && is_blank(buf[pos]) {
            pos += 1;
        }
        if pos < n && buf[pos] != b'\n' {
            fail!(
                K::BadEntry,
                "unexpected text after the entry (expected {} field(s))",
                lay.indices + usize::from(lay.field != MmField::Pattern)
            );
        }
        if lay.skew && lay.indices == 2 && r == c {
            fail!(K::SkewDiagonal, "entry ({}, {}) is on the diagonal", r as u64 + 1, c as u64 + 1);
        }
        if lay.indices >= 1 {
            p.rows.push(r);
        }
        if lay.indices == 2 {
            p.cols.push(c);
        }
        p.vals.push(v);
        if pos < n {
            pos += 1;
            line += 1;
        }
    }
    p.lines = line;
}

impl<T> Piece<T> {
    fn new() -> Self {
        Piece { rows: Vec::new(), cols: Vec::new(), vals: Vec::new(), lines: 0, error: None }
    }
}

/// Appends the pieces' triplets to the file's, in order, copying the pieces in parallel.
fn append_pieces<T: Scalar>(
    pieces: &[Piece<T>],
    rows: &mut Vec<u32>,
    cols: &mut Vec<u32>,
    vals: &mut Vec<T>,
) -> Result<()> {
    append_parallel(pieces, rows, "row indices", |p| &p.rows)?;
    append_parallel(pieces, cols, "column indices", |p| &p.cols)?;
    append_parallel(pieces, vals, "values", |p| &p.vals)
}

/// Appends `part(piece)` for every piece to `out` (the `what` of the entries read so far),
/// each piece copied by its own task.
fn append_parallel<P: Sync, E: Copy + Send + Sync>(
    pieces: &[P],
    out: &mut Vec<E>,
    what: &str,
    part: impl Fn(&P) -> &Vec<E> + Sync,
) -> Result<()> {
    let total: usize = pieces.iter().map(|p| part(p).len()).sum();
    if total == 0 {
        return Ok(());
    }
    let len = out.len() + total;
    memory::reserve(out, total, || format!("the {what} of the first {len} entries"))?;
    let old = out.len();
    let mut slots = Vec::with_capacity(pieces.len());
    let mut rest = &mut out.spare_capacity_mut()[..total];
    for p in pieces {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(part(p).len());
        slots.push((p, head));
        rest = tail;
    }
    slots.into_par_iter().for_each(|(p, slot)| {
        for (d, &v) in slot.iter_mut().zip(part(p)) {
            d.write(v);
        }
    });
    // SAFETY: the `total` slots after the old length were each written above (the pieces'
    // lengths sum to `total`, and every slot was paired with one element of its piece).
    unsafe { out.set_len(old + total) };
    Ok(())
}

/// Cuts `chunk` (whole lines) into pieces for parallel parsing.
fn pieces(chunk: &[u8]) -> Vec<Range<usize>> {
    let target = (chunk.len() / (rayon::current_num_threads() * 4)).max(MIN_PIECE);
    let mut out = Vec::new();
    let mut start = 0;
    while start < chunk.len() {
        let mut end = (start + target).min(chunk.len());
        if end < chunk.len() {
            end = memchr::memchr(b'\n', &chunk[end..]).map_or(chunk.len(), |i| end + i + 1);
        }
        out.push(start..end);
        start = end;
    }
    out
}

/// The entries of a file as read, before symmetry is expanded.
pub(crate) struct Parsed<T> {
    pub header: MatrixMarketHeader,
    pub size_text: Vec<u8>,
    /// 0-based row indices (empty for `array`).
    rows: Vec<u32>,
    /// 0-based column indices (empty for `array` and `vector coordinate`).
    cols: Vec<u32>,
    /// Values in file order.
    vals: Vec<T>,
}

/// What the parse of one chunk found.
enum Step {
    /// All its entries were taken; it held this many lines.
    Lines(usize),
    /// An entry past the count on the size line (the error, at that entry's line), and the
    /// entries of the file up to the end of this chunk, counted as non-blank, non-comment
    /// lines from that entry's piece on.
    TooMany(MatrixMarketError, usize),
}

/// `n` entries, in words.
fn entries(n: usize) -> String {
    if n == 1 {
        "1 entry".to_string()
    } else {
        format!("{n} entries")
    }
}

/// The entry lines in `buf` (whole lines): those that are neither blank nor a comment.
fn count_entry_lines(buf: &[u8]) -> usize {
    buf.split(|&c| c == b'\n').filter(|l| l.iter().find(|&&c| !is_blank(c)).is_some_and(|&c| c != b'%')).count()
}

/// Reads a whole file: header and entries.
pub(crate) fn read_parsed<T: Scalar>(src: &mut Source<'_>, size_hint: Option<u64>) -> Result<Parsed<T>> {
    let (header, size_text) = read_header_from(src)?;
    let lay = Layout {
        indices: match (header.format, header.object) {
            (MmFormat::Array, _) => 0,
            (MmFormat::Coordinate, MmObject::Vector) => 1,
            (MmFormat::Coordinate, MmObject::Matrix) => 2,
        },
        field: header.field,
        nrows: header.nrows as u64,
        ncols: header.ncols as u64,
        skew: header.symmetry == MmSymmetry::SkewSymmetric,
        single: T::BYTES == 4,
    };
    let expected = header.entries;
    // Never trust the size line for memory: reserve no more than the input can hold
    // (a shortest entry line is 2 bytes for array, 4 for pattern, 6 otherwise).
    let min_line = match (lay.indices, lay.field) {
        (0, _) => 2,
        (_, MmField::Pattern) => 4,
        _ => 6,
    };
    let cap = expected.min(size_hint.map_or(1 << 16, |h| usize::try_from(h / min_line).unwrap_or(usize::MAX)));
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    let what = |part: &'static str| move || format!("the {part} of {cap} entries");
    memory::reserve_exact(&mut rows, if lay.indices >= 1 { cap } else { 0 }, what("row indices"))?;
    memory::reserve_exact(&mut cols, if lay.indices == 2 { cap } else { 0 }, what("column indices"))?;
    memory::reserve_exact(&mut vals, cap, what("values"))?;
    let mut ends_with_newline = true;
    // Piece buffers, reused from chunk to chunk (no fresh memory to fault in each time).
    let mut pool: Vec<Piece<T>> = Vec::new();
    let too_many = loop {
        let step = src.with_next_chunk(|first_line, chunk| -> Result<Step> {
            ends_with_newline = chunk.last() == Some(&b'\n');
            let ranges = pieces(chunk);
            while pool.len() < ranges.len() {
                pool.push(Piece::new());
            }
            let used = &mut pool[..ranges.len()];
            if ranges.len() == 1 {
                parse_piece(chunk, &lay, usize::MAX, &mut used[0]);
            } else {
                used.par_iter_mut().zip(&ranges).for_each(|(p, r)| parse_piece(&chunk[r.clone()], &lay, usize::MAX, p));
            }
            // In file order: the first error, or the first entry past the count.
            let mut line = first_line;
            let mut count = vals.len();
            let mut take = 0;
            for (range, piece) in ranges.iter().zip(used.iter()) {
                let remaining = expected - count;
                if piece.vals.len() > remaining {
                    // Parse again, stopping at the first entry past the count.
                    let mut again = Piece::new();
                    parse_piece::<T>(&chunk[range.clone()], &lay, remaining, &mut again);
                    let mut e = again.error.expect("a piece with more entries than the limit stops with an error");
                    e.line += line;
                    if e.kind != K::TooManyEntries {
                        return Err(e.into());
                    }
                    // The entries before this piece, and the entry lines from its start on.
                    let held = count + count_entry_lines(&chunk[range.start..]);
                    return Ok(Step::TooMany(e, held));
                }
                if let Some(e) = &piece.error {
                    let mut e = e.clone();
                    e.line += line;
                    return Err(e.into());
                }
                count += piece.vals.len();
                line += piece.lines;
                take += 1;
            }
            append_pieces(&used[..take], &mut rows, &mut cols, &mut vals)?;
            Ok(Step::Lines(line - first_line))
        })?;
        match step.transpose()? {
            None => break None,
            Some(Step::Lines(lines)) => src.advance_lines(lines),
            Some(Step::TooMany(e, held)) => break Some((e, held)),
        }
    };
    if let Some((mut e, mut held)) = too_many {
        // Count the entry lines in the rest of the input, to say how many the file holds.
        let mut complete = true;
        loop {
            match src.with_next_chunk(|_, chunk| count_entry_lines(chunk)) {
                Ok(Some(n)) => held += n,
                Ok(None) => break,
                Err(_) => {
                    complete = false;
                    break;
                }
            }
        }
        let at_least = if complete { "" } else { "at least " };
        e.detail = format!("the size line announces {}, the file holds {at_least}{held}", entries(expected));
        return Err(e.into());
    }
    if vals.len() < expected {
        let eof_line = if ends_with_newline { src.line } else { src.line + 1 };
        return Err(MatrixMarketError::new(
            K::TooFewEntries,
            eof_line,
            format!("the size line announces {}, the file holds {}", entries(expected), vals.len()),
            b"",
        )
        .into());
    }
    Ok(Parsed { header, size_text, rows, cols, vals })
}

impl<T: Scalar> Parsed<T> {
    /// An error about the whole matrix, reported at the size line.
    fn size_error(&self, kind: K, detail: String) -> Error {
        MatrixMarketError::new(kind, self.header.size_line, detail, &self.size_text).into()
    }

    /// The stored entries as coordinate triplets (`rows`, `cols`, `vals`): array values
    /// placed by position (zeros dropped), vector indices in column 0. Symmetry not expanded.
    fn into_triplets(self) -> Result<Parsed<T>> {
        let Parsed { header, size_text, mut rows, mut cols, mut vals } = self;
        match (header.format, header.object) {
            (MmFormat::Coordinate, MmObject::Matrix) => {}
            (MmFormat::Coordinate, MmObject::Vector) => {
                // SAFETY: all-zero bytes are the u32 0.
                cols =
                    unsafe { memory::zeroed(rows.len(), || format!("the column indices of {}", entries(rows.len()))) }?;
            }
            (MmFormat::Array, _) => {
                let nonzeros = vals.iter().filter(|&&v| v != T::ZERO).count();
                let what = |part: &'static str| move || format!("the {part} of {nonzeros} nonzero values");
                memory::reserve_exact(&mut rows, nonzeros, what("row indices"))?;
                memory::reserve_exact(&mut cols, nonzeros, what("column indices"))?;
                // Column-major: column j holds rows j.. (symmetric), j+1.. (skew) or 0.. .
                let first_row = |j: usize| match header.symmetry {
                    MmSymmetry::General => 0,
                    MmSymmetry::Symmetric | MmSymmetry::Hermitian => j,
                    MmSymmetry::SkewSymmetric => j + 1,
                };
                let mut k = 0;
                let mut kept = 0;
                for j in 0..header.ncols {
                    if k == vals.len() {
                        break; // no more values (a matrix of no rows has up to 2^31 - 1 columns)
                    }
                    for i in first_row(j)..header.nrows {
                        let v = vals[k];
                        k += 1;
                        if v != T::ZERO {
                            vals[kept] = v;
                            kept += 1;
                            rows.push(i as u32);
                            cols.push(j as u32);
                        }
                    }
                }
                vals.truncate(kept);
                vals.shrink_to_fit();
            }
        }
        Ok(Parsed { header, size_text, rows, cols, vals })
    }

    /// Assembles CSR: symmetry expanded, columns sorted, duplicates summed.
    pub(crate) fn into_csr(self) -> Result<CsrMatrix<T>> {
        let nrows = self.header.nrows;
        let symmetry = self.header.symmetry;
        let size_line = self.header.size_line;
        let Parsed { header, rows, cols, vals, .. } = self.into_triplets()?;
        let mirrored = symmetry.is_mirrored();
        let total =
            if mirrored { vals.len() + rows.iter().zip(&cols).filter(|(r, c)| r != c).count() } else { vals.len() };
        // The offsets are as many as the rows on the size line, whatever the entries: check
        // that they fit before allocating.
        let shape = format!("a {nrows} x {} matrix (size line {size_line})", header.ncols);
        // SAFETY (all four `zeroed` calls): all-zero bytes are the u32 and u64 0, and the f32 or
        // f64 +0.0 (`Scalar` is sealed: it is implemented for f32 and f64 only).
        let mut offsets: Vec<u64> = unsafe { memory::zeroed(nrows + 1, || format!("the row offsets of {shape}")) }?;
        let (cols, vals) = if !mirrored && rows.par_windows(2).all(|w| w[0] <= w[1]) {
            // Rows already in order (as most writers emit them): the triplets are CSR, and
            // `offsets[i]` is the number of entries in rows before `i`. With no entries the
            // zeroed offsets are already right: leave their pages untouched (a header can
            // announce 2^31 - 1 empty rows).
            if !rows.is_empty() {
                let block = nrows / (4 * rayon::current_num_threads()) + 1;
                offsets.par_chunks_mut(block).enumerate().for_each(|(b, out)| {
                    let first = b * block;
                    let mut k = rows.partition_point(|&r| (r as usize) < first);
                    for (i, o) in out.iter_mut().enumerate() {
                        while k < rows.len() && (rows[k] as usize) < first + i {
                            k += 1;
                        }
                        *o = k as u64;
                    }
                });
            }
            drop(rows);
            (cols, vals)
        } else {
            for (&r, &c) in rows.iter().zip(&cols) {
                offsets[r as usize + 1] += 1;
                if mirrored && r != c {
                    offsets[c as usize + 1] += 1;
                }
            }
            prefix_sum(&mut offsets);
            let mut next: Vec<u64> = unsafe { memory::zeroed(nrows, || format!("the row cursors of {shape}")) }?;
            next.copy_from_slice(&offsets[..nrows]);
            let what = |part: &'static str| move || format!("the {part} of {}", entries(total));
            let mut new_cols: Vec<u32> = unsafe { memory::zeroed(total, what("column indices")) }?;
            for (&r, &c) in rows.iter().zip(&cols) {
                new_cols[next[r as usize] as usize] = c;
                next[r as usize] += 1;
                if mirrored && r != c {
                    new_cols[next[c as usize] as usize] = r;
                    next[c as usize] += 1;
                }
            }
            let cols = if mirrored {
                cols
            } else {
                drop(cols);
                Vec::new()
            };
            next.copy_from_slice(&offsets[..nrows]);
            let mut new_vals: Vec<T> = unsafe { memory::zeroed(total, what("values")) }?;
            let skew = symmetry == MmSymmetry::SkewSymmetric;
            for (k, (&r, &v)) in rows.iter().zip(&vals).enumerate() {
                new_vals[next[r as usize] as usize] = v;
                next[r as usize] += 1;
                if mirrored {
                    let c = cols[k];
                    if r != c {
                        new_vals[next[c as usize] as usize] = if skew { -v } else { v };
                        next[c as usize] += 1;
                    }
                }
            }
            (new_cols, new_vals)
        };
        let (cols, vals) = finish_rows(&mut offsets, cols, vals);
        debug_assert!(
            CsrMatrix::try_from_parts(nrows, header.ncols, offsets.clone(), cols.clone(), vals.clone()).is_ok(),
            "the reader built an invalid CSR matrix"
        );
        // SAFETY: `offsets` come from a counting sort of row indices checked against `nrows`
        // and is non-decreasing; every column index was checked against `ncols` when parsed;
        // `finish_rows` sorted the columns of every row and summed duplicates; the dimensions
        // are within INDEX_LIMIT (checked on the size line).
        Ok(unsafe { CsrMatrix::from_parts_unchecked(nrows, header.ncols, offsets, cols, vals) })
    }

    /// Assembles COO: symmetry expanded, duplicates kept, entries in file order (mirrors
    /// after all stored entries).
    pub(crate) fn into_coo(self) -> Result<CooMatrix<T>> {
        let Parsed { header, mut rows, mut cols, mut vals, .. } = self.into_triplets()?;
        if header.symmetry.is_mirrored() {
            let n = vals.len();
            let extra = (0..n).filter(|&k| rows[k] != cols[k]).count();
            let what = |part: &'static str| move || format!("the {part} of {} mirrored", entries(extra));
            memory::reserve_exact(&mut rows, extra, what("row indices"))?;
            memory::reserve_exact(&mut cols, extra, what("column indices"))?;
            memory::reserve_exact(&mut vals, extra, what("values"))?;
            let skew = header.symmetry == MmSymmetry::SkewSymmetric;
            for k in 0..n {
                if rows[k] != cols[k] {
                    rows.push(cols[k]);
                    cols.push(rows[k]);
                    vals.push(if skew { -vals[k] } else { vals[k] });
                }
            }
        }
        Ok(CooMatrix::try_from_triplets(header.nrows, header.ncols, rows, cols, vals)?)
    }

    /// A dense vector: `vector` objects and one-column matrices (duplicates summed).
    pub(crate) fn into_vector(self) -> Result<Vec<T>> {
        if self.header.ncols != 1 {
            let (r, c) = (self.header.nrows, self.header.ncols);
            return Err(self.size_error(K::NotAVector, format!("a {r} x {c} matrix has more than one column")));
        }
        if self.header.format == MmFormat::Array && self.header.symmetry == MmSymmetry::General {
            // Every value is stored: keep explicit zeros, no positions to compute.
            return Ok(self.vals);
        }
        // Coordinate entries, or a 1 x 1 symmetric array (whose one column is at most its
        // diagonal).
        let Parsed { header, rows, vals, .. } = self.into_triplets()?;
        let n = header.nrows;
        // SAFETY: all-zero bytes are the f32 or f64 +0.0 (`Scalar` is sealed: f32 and f64).
        let mut out: Vec<T> =
            unsafe { memory::zeroed(n, || format!("a vector of length {n} (size line {})", header.size_line)) }?;
        for (&r, &v) in rows.iter().zip(&vals) {
            out[r as usize] += v;
        }
        Ok(out)
    }
}

fn prefix_sum(offsets: &mut [u64]) {
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
}

/// Sorts the columns within every row (stable: duplicates stay in file order) and sums
/// duplicates, rewriting `offsets`. Rows are sorted in parallel.
fn finish_rows<T: Scalar>(offsets: &mut [u64], mut cols: Vec<u32>, mut vals: Vec<T>) -> (Vec<u32>, Vec<T>) {
    let nrows = offsets.len() - 1;
    let nnz = cols.len();
    if nnz == 0 {
        return (cols, vals); // nothing to sort, however many rows
    }
    // Blocks of rows with about equal entries, one slice of `cols`/`vals` each.
    let nblocks = (rayon::current_num_threads() * 8).min(nrows.max(1)).min(nnz / 4096 + 1);
    let mut blocks = Vec::with_capacity(nblocks);
    {
        let (mut rest_c, mut rest_v) = (&mut cols[..], &mut vals[..]);
        let mut row = 0;
        for b in 1..=nblocks {
            let end_row = if b == nblocks {
                nrows
            } else {
                let target = (nnz as u128 * b as u128 / nblocks as u128) as u64;
                offsets.partition_point(|&o| o < target).clamp(row, nrows)
            };
            let len = (offsets[end_row] - offsets[row]) as usize;
            let (c, rc) = std::mem::take(&mut rest_c).split_at_mut(len);
            let (v, rv) = std::mem::take(&mut rest_v).split_at_mut(len);
            rest_c = rc;
            rest_v = rv;
            blocks.push((&offsets[row..=end_row], c, v));
            row = end_row;
        }
    }
    let duplicates = blocks.into_par_iter().map(|(offs, c, v)| sort_block(offs, c, v)).reduce(|| false, |a, b| a || b);
    if !duplicates {
        return (cols, vals);
    }
    let mut w = 0usize;
    let mut start = 0usize;
    for i in 0..nrows {
        let end = offsets[i + 1] as usize;
        let mut k = start;
        while k < end {
            let c = cols[k];
            let mut v = vals[k];
            k += 1;
            while k < end && cols[k] == c {
                v += vals[k];
                k += 1;
            }
            cols[w] = c;
            vals[w] = v;
            w += 1;
        }
        offsets[i + 1] = w as u64;
        start = end;
    }
    cols.truncate(w);
    vals.truncate(w);
    cols.shrink_to_fit();
    vals.shrink_to_fit();
    (cols, vals)
}

/// Sorts the rows of one block; returns whether any row holds a duplicate column.
fn sort_block<T: Scalar>(offs: &[u64], cols: &mut [u32], vals: &mut [T]) -> bool {
    let base = offs[0];
    let mut scratch: Vec<(u32, T)> = Vec::new();
    let mut duplicates = false;
    for w in offs.windows(2) {
        let (a, b) = ((w[0] - base) as usize, (w[1] - base) as usize);
        let rc = &mut cols[a..b];
        let rv = &mut vals[a..b];
        if rc.windows(2).all(|p| p[0] < p[1]) {
            continue;
        }
        scratch.clear();
        scratch.extend(rc.iter().copied().zip(rv.iter().copied()));
        scratch.sort_by_key(|e| e.0);
        for (k, &(c, v)) in scratch.iter().enumerate() {
            rc[k] = c;
            rv[k] = v;
        }
        duplicates |= rc.windows(2).any(|p| p[0] == p[1]);
    }
    duplicates
}
