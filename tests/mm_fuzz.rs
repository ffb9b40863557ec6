//! The Matrix Market reader on mutated files: valid files of every header kind, changed by
//! random byte edits, inserted tokens (huge and negative numbers, NaN, keywords, NUL, tabs),
//! deleted, repeated and truncated lines, and gzip streams with flipped or missing bytes.
//! Every read must return, never panic. An error names the line at fault (a line of the input,
//! or one past its end), and a file that reads returns a valid matrix that writes and reads
//! back to the same matrix.
//!
//! The mutated files include the seed corpus of the `cargo fuzz` target (`fuzz/seeds`,
//! `docs/matrix-market.md`), which does the same at much greater length but does not run in
//! `cargo test`.
//!
//! The sizes a mutated size line announces can be huge (a vector of 2^31 entries is a valid
//! file). This binary caps the reader's memory at 8 MiB with `spgpu::io::set_memory_limit`
//! (global to the process, hence a file of its own), as the fuzz target does, so that such
//! files fail fast with [`Error::InsufficientMemory`] instead of allocating gigabytes.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spgpu::io::{self, MmSymmetry};
use spgpu::{CsrMatrix, Error};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Valid files: every object, format, field and symmetry the reader accepts, and a complex
/// one that it refuses.
const SEEDS: &[&str] = &[
    "%%MatrixMarket matrix coordinate real general\n% comment\n3 4 5\n1 1 1.5\n2 3 -2e3\n3 4 7\n1 4 0.25\n3 1 1\n",
    "%%MatrixMarket matrix coordinate real symmetric\n4 4 5\n1 1 4\n2 1 -1\n3 2 -1\n4 3 -1\n4 4 2\n",
    "%%MatrixMarket matrix coordinate pattern general\n3 3 4\n1 2\n2 3\n3 1\n1 1\n",
    "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 5\n3 2 -7\n",
    "%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n6\n",
    "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
    "%%MatrixMarket vector coordinate real general\n5 2\n1 3.5\n4 -1\n",
    "%%MatrixMarket vector array real general\n3\n1\n2\n3\n",
    "%%MatrixMarket matrix coordinate complex hermitian\n2 2 2\n1 1 1 0\n2 1 1 2\n",
];

/// Tokens inserted into the files: numbers at and past every integer limit, non-numbers,
/// header keywords, whitespace and bytes a line should not hold.
const TOKENS: &[&str] = &[
    "0",
    "-1",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551616",
    "99999999999999999999999",
    "1000000000",
    "nan",
    "inf",
    "-inf",
    "1e400",
    "1e-400",
    "1.5.5",
    "0x10",
    "--1",
    "1e",
    ".",
    "+",
    " ",
    "\t",
    "\n",
    "\r\n",
    "%",
    "%%MatrixMarket",
    "matrix",
    "vector",
    "coordinate",
    "array",
    "real",
    "integer",
    "pattern",
    "complex",
    "general",
    "symmetric",
    "skew-symmetric",
    "hermitian",
    "\u{0}",
    "é",
];

/// The file's lines, as split for line edits.
fn lines(b: &[u8]) -> Vec<Vec<u8>> {
    b.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect()
}

/// `s` with one to five random edits.
fn mutate(r: &mut StdRng, s: &[u8]) -> Vec<u8> {
    let mut b = s.to_vec();
    for _ in 0..r.random_range(1..6) {
        let pos = r.random_range(0..=b.len());
        match r.random_range(0..8) {
            0 if pos < b.len() => b[pos] = r.random(),
            1 if pos < b.len() => b[pos] = b" \t\r\n%0123456789-+.eE"[r.random_range(0..20)],
            2 => {
                let t = TOKENS[r.random_range(0..TOKENS.len())];
                b.splice(pos..pos, t.bytes());
            }
            3 => {
                let end = (pos + r.random_range(1..8)).min(b.len());
                b.drain(pos..end);
            }
            4 => b.truncate(pos),
            5 | 6 => {
                let mut l = lines(&b);
                let k = r.random_range(0..l.len());
                if r.random() {
                    let copy = l[k].clone();
                    l.insert(k, copy);
                } else {
                    l.remove(k);
                }
                b = l.join(&b'\n');
            }
            _ => {
                // a whole number token replaced by a token
                let starts: Vec<usize> =
                    (0..b.len()).filter(|&i| b[i].is_ascii_digit() && (i == 0 || !b[i - 1].is_ascii_digit())).collect();
                if !starts.is_empty() {
                    let i = starts[r.random_range(0..starts.len())];
                    let j = (i..b.len()).find(|&j| !b[j].is_ascii_digit()).unwrap_or(b.len());
                    let t = TOKENS[r.random_range(0..TOKENS.len())];
                    b.splice(i..j, t.bytes());
                }
            }
        }
    }
    b
}

/// Fails unless `e` is an error a bad file may give: a Matrix Market error naming a line of
/// the file or the one past its end, the memory cap, or (for gzip input) a corrupt stream.
fn check_error(e: &Error, input: &[u8]) {
    let nlines = lines(input).len();
    match e {
        Error::MatrixMarket(m) => {
            assert!(m.line >= 1 && m.line <= nlines + 1, "line {} of {nlines}: {e} for {:?}", m.line, show(input));
            assert!(e.to_string().contains(&m.line.to_string()), "the message names no line: {e}");
        }
        Error::InsufficientMemory { .. } => {}
        // a damaged gzip stream is an I/O error of the decompressor
        Error::Io { .. } if input.starts_with(&[0x1f, 0x8b]) => {}
        other => panic!("unexpected error {other:?} for {:?}", show(input)),
    }
}

/// Whether `a` and `b` hold the same entries, a NaN the same as any NaN (the files may hold
/// `nan`, which the reader accepts).
fn same(a: &CsrMatrix<f64>, b: &CsrMatrix<f64>) -> bool {
    (a.nrows(), a.ncols(), a.row_offsets(), a.col_indices()) == (b.nrows(), b.ncols(), b.row_offsets(), b.col_indices())
        && a.values().iter().zip(b.values()).all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Reads `b` every way the reader offers and writes back what reads; whether it read. Panics
/// (failing the test) with the input on a panic inside the reader, an error that names no
/// line, or a matrix that does not read back the same.
fn read_every_way(b: &[u8]) -> bool {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let csr = io::read_csr_from_reader::<f64>(b);
        if let Err(e) = &csr {
            check_error(e, b);
        }
        if let Err(e) = io::read_coo_from_reader::<f32>(b) {
            check_error(&e, b);
        }
        let _ = io::read_vector_from_reader::<f64>(b);
        let _ = io::read_header_from_reader(b);
        if let Ok(text) = std::str::from_utf8(b) {
            let from_str = io::read_csr_from_str::<f64>(text);
            assert_eq!(from_str.is_ok(), csr.is_ok(), "read_csr_from_str and read_csr_from_reader disagree");
        }
        csr.ok()
    }));
    let Ok(csr) = result else { panic!("the reader panicked on {:?}", show(b)) };
    let Some(a) = csr else { return false };
    // what reads writes and reads back to the same matrix
    let mut out = Vec::new();
    io::write_csr_to_writer(&mut out, &a, MmSymmetry::General).unwrap();
    let back = io::read_csr_from_reader::<f64>(&out[..]).unwrap();
    assert!(same(&back, &a), "round trip of {:?}: {a:?} read back as {back:?}", show(b));
    true
}

#[test]
fn mutated_files_give_a_matrix_or_an_error_naming_the_line() {
    io::set_memory_limit(Some(8 << 20));
    let mut r = StdRng::seed_from_u64(0x5eed_f022);
    let (mut read, mut refused) = (0usize, 0usize);
    for seed in SEEDS {
        for _ in 0..1000 {
            if read_every_way(&mutate(&mut r, seed.as_bytes())) {
                read += 1;
            } else {
                refused += 1;
            }
        }
    }
    // The fuzz target's seed corpus (fuzz/seeds: permissive forms, huge headers, binary
    // files, a regression), each mutated too.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let mut corpus: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    corpus.sort();
    assert!(corpus.len() >= 40, "{} files in {}", corpus.len(), dir.display());
    for path in corpus {
        let seed = std::fs::read(&path).unwrap();
        read_every_way(&seed);
        for _ in 0..100 {
            read_every_way(&mutate(&mut r, &seed));
        }
    }
    // The mutations must reach both outcomes, or the test checks too little.
    assert!(read >= 100 && refused >= 5000, "{read} read, {refused} refused");
}

#[test]
fn damaged_gzip_streams_give_an_error_not_a_panic() {
    io::set_memory_limit(Some(8 << 20));
    let mut r = StdRng::seed_from_u64(0x9a1b);
    for seed in SEEDS {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(seed.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        // intact, the stream reads as the plain file does
        let plain = io::read_csr_from_reader::<f64>(seed.as_bytes()).ok();
        assert_eq!(io::read_csr_from_reader::<f64>(&gz[..]).ok(), plain);
        for _ in 0..200 {
            let mut b = gz.clone();
            if r.random() {
                let i = r.random_range(0..b.len());
                b[i] ^= 1 << r.random_range(0..8);
            } else {
                b.truncate(r.random_range(0..b.len()));
            }
            let result = catch_unwind(AssertUnwindSafe(|| {
                let _ = io::read_csr_from_reader::<f64>(&b[..]);
                let _ = io::read_vector_from_reader::<f64>(&b[..]);
                let _ = io::read_header_from_reader(&b[..]);
            }));
            assert!(result.is_ok(), "the reader panicked on a damaged gzip stream {b:?}");
        }
    }
}
