//! Matrix Market reader and writer: the catalogue of malformed files (kind and line of each
//! error), accepted files with their expected matrices, round trips, large inputs parsed in
//! parallel, and the external SuiteSparse matrices (`SPGPU_MATRICES`).

use crate::common;

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use spgpu::io::{self, MatrixMarketError, MatrixMarketErrorKind as K, MmField, MmFormat, MmObject, MmSymmetry};
use spgpu::{CsrMatrix, Error};

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel)
}

fn mm_error(r: spgpu::Result<impl std::fmt::Debug>) -> MatrixMarketError {
    match r {
        Err(Error::MatrixMarket(e)) => e,
        other => panic!("expected a Matrix Market error, got {other:?}"),
    }
}

/// Reads `bad/<file>` as f64 and f32 CSR (and COO) and checks the kind and line of the error,
/// and that it names the file.
fn check_bad(file: &str, kind: K, line: usize) {
    let path = data(&format!("bad/{file}"));
    let e = mm_error(io::read_csr::<f64>(&path));
    assert_eq!((e.kind, e.line), (kind, line), "{file}: {e}");
    assert_eq!(e.path.as_deref(), Some(path.as_path()));
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("{}:{line}: ", path.display())), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    let e32 = mm_error(io::read_csr::<f32>(&path));
    assert_eq!((e32.kind, e32.line), (kind, line), "{file} (f32): {e32}");
    let ecoo = mm_error(io::read_coo::<f64>(&path));
    assert_eq!((ecoo.kind, ecoo.line), (kind, line), "{file} (coo): {ecoo}");
}

macro_rules! bad_files {
    ($($name:ident: $kind:ident at $line:expr;)*) => {$(
        #[test]
        fn $name() {
            check_bad(concat!(stringify!($name), ".mtx"), K::$kind, $line);
        }
    )*};
}

mod bad {
    use super::*;
    bad_files! {
        empty: Banner at 1;
        no_banner: Banner at 1;
        banner_short: Banner at 1;
        banner_extra: Banner at 1;
        banner_misspelt: Banner at 1;
        unknown_object: UnknownObject at 1;
        unknown_format: UnknownFormat at 1;
        unknown_field: UnknownField at 1;
        unknown_symmetry: UnknownSymmetry at 1;
        complex: Complex at 1;
        complex_hermitian: Complex at 1;
        array_pattern: Unsupported at 1;
        skew_pattern: Unsupported at 1;
        symmetric_vector: Unsupported at 1;
        not_square_symmetric: NotSquare at 3;
        missing_size_line: SizeLine at 5;
        truncated_size_line: SizeLine at 2;
        size_line_extra: SizeLine at 2;
        size_line_not_number: SizeLine at 2;
        size_line_negative: SizeLine at 2;
        size_line_float: SizeLine at 2;
        rows_too_large: TooLarge at 2;
        rows_overflow_u64: TooLarge at 2;
        entries_too_large: TooLarge at 2;
        array_huge_too_few: TooFewEntries at 4;
        too_few_entries: TooFewEntries at 5;
        too_few_no_final_newline: TooFewEntries at 5;
        too_few_trailing_blank_lines: TooFewEntries at 7;
        no_entries_at_all: TooFewEntries at 3;
        too_many_entries: TooManyEntries at 5;
        too_many_then_garbage: TooManyEntries at 4;
        index_zero: IndexOutOfRange at 4;
        row_past_size: IndexOutOfRange at 4;
        col_past_size: IndexOutOfRange at 4;
        negative_index: IndexOutOfRange at 4;
        index_overflow: IndexOutOfRange at 3;
        index_not_number: BadNumber at 4;
        index_float: BadNumber at 3;
        value_not_number: BadNumber at 4;
        value_hex: BadNumber at 3;
        value_out_of_range: NumberOutOfRange at 4;
        integer_not_integer: BadNumber at 3;
        integer_overflow: NumberOutOfRange at 3;
        missing_value: BadEntry at 4;
        missing_column: BadEntry at 3;
        extra_field: BadEntry at 3;
        pattern_with_value: BadEntry at 3;
        skew_diagonal: SkewDiagonal at 4;
        array_too_few: TooFewEntries at 6;
        array_too_many: TooManyEntries at 7;
        array_two_per_line: BadEntry at 3;
        vector_index_past_size: IndexOutOfRange at 4;
        error_after_crlf_lines: BadNumber at 7;
        binary_banner: Banner at 1;
        binary_entry: BadEntry at 4;
        control_in_keyword: UnknownObject at 1;
        too_many_counted: TooManyEntries at 8;
        only_blank_lines: Banner at 4;
        comment_before_banner: Banner at 1;
        banner_three_percent: Banner at 1;
    }

    /// No raw control character (nor any other non-printable one) in a message.
    fn assert_printable(msg: &str) {
        assert!(!msg.chars().any(|c| c.is_control() || ('\u{200b}'..='\u{206f}').contains(&c)), "{msg:?}");
    }

    #[test]
    fn binary_bytes_are_shown_escaped() {
        let e = mm_error(io::read_csr::<f64>(data("bad/binary_banner.mtx")));
        assert_eq!(e.text, "\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x03...");
        assert_printable(&e.to_string());
        let e = mm_error(io::read_csr::<f64>(data("bad/binary_entry.mtx")));
        assert_eq!(e.text, "2 2 2.0\\x1b[31m\\x00\\x07\\xff\\xfe");
        assert_printable(&e.to_string());
        let e = mm_error(io::read_csr::<f64>(data("bad/control_in_keyword.mtx")));
        assert_eq!(e.detail, "'\\x1b]0;pwned\\x07matrix'");
        assert_printable(&e.to_string());
        // Tokens quoted in details are escaped and shortened too.
        let text = "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 \u{202e}1.0\u{7f}\n";
        let e = mm_error(io::read_csr_from_str::<f64>(text));
        assert_eq!((e.kind, e.detail.as_str()), (K::BadNumber, "value '\\u{202e}1.0\\x7f'"));
        let long = format!("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 {}\n", "9x".repeat(5000));
        let e = mm_error(io::read_csr_from_str::<f64>(&long));
        assert!(e.detail.len() < 60 && e.detail.ends_with("...'"), "{}", e.detail);
    }

    #[test]
    fn entry_counts_are_stated_exactly() {
        let e = mm_error(io::read_csr::<f64>(data("bad/too_many_counted.mtx")));
        assert_eq!(e.detail, "the size line announces 3 entries, the file holds 5");
        assert_eq!(e.text, "1 2 4");
        let e = mm_error(io::read_csr::<f64>(data("bad/too_many_then_garbage.mtx")));
        assert_eq!(e.detail, "the size line announces 1 entry, the file holds 3");
        let e = mm_error(io::read_csr::<f64>(data("bad/array_too_many.mtx")));
        assert!(e.detail.starts_with("the size line announces 4 entries, the file holds 5"), "{}", e.detail);
        let e = mm_error(io::read_csr::<f64>(data("bad/too_few_entries.mtx")));
        assert_eq!(e.detail, "the size line announces 3 entries, the file holds 2");
    }

    #[test]
    fn error_text_is_the_offending_line() {
        let e = mm_error(io::read_csr::<f64>(data("bad/value_not_number.mtx")));
        assert_eq!(e.text, "2 2 1.0x");
        assert!(e.detail.contains("1.0x"), "{}", e.detail);
        let e = mm_error(io::read_csr::<f64>(data("bad/error_after_crlf_lines.mtx")));
        assert_eq!(e.text, "3 3 nan0");
        let e = mm_error(io::read_csr::<f64>(data("bad/complex.mtx")));
        assert!(e.to_string().contains("complex matrices are not supported"), "{e}");
    }

    #[test]
    fn f32_overflow_is_an_error_only_for_f32() {
        let path = data("bad/f32_overflow.mtx");
        let a = io::read_csr::<f64>(&path).unwrap();
        assert_eq!(a.get(1, 1), Some(1e39));
        let e = mm_error(io::read_csr::<f32>(&path));
        assert_eq!((e.kind, e.line), (K::NumberOutOfRange, 4));
    }

    #[test]
    fn not_a_vector() {
        let e = mm_error(io::read_vector::<f64>(data("bad/not_a_vector.mtx")));
        assert_eq!((e.kind, e.line), (K::NotAVector, 2));
        assert_eq!(e.text, "3 2 1");
    }

    #[test]
    fn line_too_long() {
        let mut text = b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 ".to_vec();
        text.resize(text.len() + (17 << 20), b'1');
        text.push(b'\n');
        let e = mm_error(io::read_csr_from_reader::<f64>(&text[..]));
        assert_eq!((e.kind, e.line), (K::LineTooLong, 3));
        assert!(e.text.len() < 100);
    }

    #[test]
    fn missing_file_names_the_file() {
        let path = data("bad/does_not_exist.mtx");
        match io::read_csr::<f64>(&path) {
            Err(Error::Io { path: Some(p), .. }) => assert_eq!(p, path),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn corrupt_gzip_is_an_io_error() {
        let mut bytes = std::fs::read(data("good/symmetric.mtx.gz")).unwrap();
        let n = bytes.len();
        bytes.truncate(n / 2);
        assert!(matches!(io::read_csr_from_reader::<f64>(&bytes[..]), Err(Error::Io { .. })));
        let garbage = [0x1f, 0x8b, 1, 2, 3, 4, 5, 6, 7, 8];
        assert!(matches!(io::read_csr_from_reader::<f64>(&garbage[..]), Err(Error::Io { .. })));
    }
}

/// A dense row-major view of a CSR matrix.
fn dense<T: spgpu::Scalar>(a: &CsrMatrix<T>) -> Vec<Vec<f64>> {
    let mut d = vec![vec![0.0; a.ncols()]; a.nrows()];
    for (i, row) in d.iter_mut().enumerate() {
        let (cols, vals) = a.row(i);
        for (&c, &v) in cols.iter().zip(vals) {
            row[c as usize] = v.to_f64();
        }
    }
    d
}

fn read_good(file: &str) -> CsrMatrix<f64> {
    io::read_csr::<f64>(data(&format!("good/{file}"))).unwrap_or_else(|e| panic!("{file}: {e}"))
}

mod good {
    use super::*;

    #[test]
    fn permissive_layout() {
        let a = read_good("permissive.mtx");
        assert_eq!((a.nrows(), a.ncols(), a.nnz()), (3, 4, 5));
        assert_eq!(dense(&a), vec![vec![1.5, 0.0, 0.0, 100.0], vec![0.0, 0.0, -2.0, 0.0], vec![-0.0, 0.0, 0.0, 0.25]]);
        // The explicit -0 is stored, with its sign.
        assert!(a.get(2, 0).unwrap().is_sign_negative());
        let h = io::read_header(data("good/permissive.mtx")).unwrap();
        assert_eq!(
            (h.object, h.format, h.field, h.symmetry),
            (MmObject::Matrix, MmFormat::Coordinate, MmField::Real, MmSymmetry::General)
        );
        assert_eq!((h.nrows, h.ncols, h.entries, h.size_line), (3, 4, 5, 5));
    }

    /// The permissive forms of fast_matrix_market's `tests/matrices/permissive/` and the
    /// NIST free-format example, one file each.
    #[test]
    fn permissive_forms() {
        let eye3 = vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]];
        assert_eq!(dense(&read_good("permissive_banner_one_percent.mtx")), eye3);
        assert_eq!(dense(&read_good("permissive_banner_leading_spaces.mtx")), eye3);
        let h = io::read_header(data("good/permissive_banner_one_percent.mtx")).unwrap();
        assert_eq!(
            (h.object, h.format, h.nrows, h.entries, h.size_line),
            (MmObject::Matrix, MmFormat::Coordinate, 3, 3, 3)
        );
        // Every line indented, comment included; no final line end.
        assert_eq!(dense(&read_good("permissive_lines_indented.mtx")), vec![vec![1.0]]);
        // Blank lines anywhere, keywords in any case, runs of spaces, `12.`; and the same
        // with CRLF line ends, comments and a run of 19 blank lines.
        let nist = vec![
            vec![1.0, 0.0, 0.0, 6.0, 0.0],
            vec![0.0, 10.5, 0.0, 0.0, 0.0],
            vec![0.0, 0.0, 1.5e-2, 0.0, 0.0],
            vec![0.0, 250.5, 0.0, -2.8e2, 33.32],
            vec![0.0, 0.0, 0.0, 0.0, 12.0],
        ];
        assert_eq!(dense(&read_good("permissive_blank_lines.mtx")), nist);
        assert_eq!(dense(&read_good("permissive_crlf.mtx")), nist);
        let h = io::read_header(data("good/permissive_crlf.mtx")).unwrap();
        assert_eq!((h.entries, h.size_line), (8, 8));
        // All at once: blank lines before the banner, a lower-case single-% banner with
        // tabs, mixed line ends, blank lines of blanks, trailing blanks, no final line end.
        let m = read_good("permissive_mixed.mtx");
        assert_eq!(dense(&m), vec![vec![1.5, -2.0, 0.0], vec![-2.0, 4.0, 0.5], vec![0.0, 0.5, 6.0]]);
        let h = io::read_header(data("good/permissive_mixed.mtx")).unwrap();
        assert_eq!((h.format, h.symmetry, h.entries, h.size_line), (MmFormat::Array, MmSymmetry::Symmetric, 6, 8));
        // COO and vectors go through the same reader.
        assert_eq!(io::read_coo::<f64>(data("good/permissive_lines_indented.mtx")).unwrap().nnz(), 1);
        assert_eq!(io::read_vector::<f32>(data("good/permissive_lines_indented.mtx")).unwrap(), vec![1.0f32]);
    }

    #[test]
    fn double_field() {
        let a = read_good("double_field.mtx");
        assert_eq!(a.values(), &[0.1, 1e-300]);
    }

    #[test]
    fn symmetric_expands_without_doubling_the_diagonal() {
        let expected = vec![vec![4.0, -1.0, 0.0], vec![-1.0, 0.0, -2.0], vec![0.0, -2.0, 5.0]];
        for file in ["symmetric.mtx", "hermitian_real.mtx", "symmetric.mtx.gz", "gzip_without_suffix.mtx"] {
            let a = read_good(file);
            assert_eq!(a.nnz(), 6, "{file}");
            assert_eq!(dense(&a), expected, "{file}");
        }
        let coo = io::read_coo::<f64>(data("good/symmetric.mtx")).unwrap();
        assert_eq!(coo.nnz(), 6);
        assert_eq!(coo.to_csr(), read_good("symmetric.mtx"));
    }

    #[test]
    fn skew_symmetric_mirrors_negated() {
        let a = read_good("skew.mtx");
        assert_eq!(dense(&a), vec![vec![0.0, -1.5, 2.0], vec![1.5, 0.0, 0.0], vec![-2.0, 0.0, 0.0]]);
        assert_eq!(a.nnz(), 4);
    }

    #[test]
    fn pattern_gives_ones() {
        let a = read_good("pattern.mtx");
        assert_eq!(dense(&a), vec![vec![1.0, 0.0, 1.0], vec![0.0, 1.0, 0.0]]);
        let s = read_good("pattern_symmetric.mtx");
        assert_eq!(dense(&s), vec![vec![1.0, 0.0, 1.0], vec![0.0, 0.0, 1.0], vec![1.0, 1.0, 0.0]]);
    }

    #[test]
    fn integers_convert_exactly_where_representable() {
        let a = read_good("integer.mtx");
        assert_eq!(a.values(), &[-7.0, 16777217.0, 9007199254740992.0]);
        let b = io::read_csr::<f32>(data("good/integer.mtx")).unwrap();
        assert_eq!(b.values(), &[-7.0f32, 16777216.0, 9007199254740992.0]);
    }

    #[test]
    fn arrays_become_sparse() {
        let a = read_good("array_general.mtx");
        assert_eq!(dense(&a), vec![vec![1.0, 0.0, -3.0], vec![0.0, 2.5, 0.0]]);
        assert_eq!(a.nnz(), 3);
        let s = read_good("array_symmetric.mtx");
        assert_eq!(dense(&s), vec![vec![1.0, 2.0, 0.0], vec![2.0, 4.0, 5.0], vec![0.0, 5.0, 6.0]]);
        assert_eq!(s.nnz(), 7);
        let k = read_good("array_skew.mtx");
        assert_eq!(dense(&k), vec![vec![0.0, -1.0, -2.0], vec![1.0, 0.0, -3.0], vec![2.0, 3.0, 0.0]]);
    }

    #[test]
    fn vectors() {
        assert_eq!(io::read_vector::<f64>(data("good/vector_array.mtx")).unwrap(), vec![1.5, 0.0, -2.0, 1e-3]);
        assert_eq!(io::read_vector::<f64>(data("good/vector_coordinate.mtx")).unwrap(), vec![0.0, 2.0, 0.0, 0.0, -1.0]);
        assert_eq!(io::read_vector::<f32>(data("good/rhs_n_by_1.mtx")).unwrap(), vec![1.0f32, 2.0, 3.0]);
        // A 1 x 1 skew-symmetric array stores no value: the vector is [0].
        assert_eq!(io::read_vector::<f64>(data("good/array_skew_1x1.mtx")).unwrap(), vec![0.0]);
        // A vector object read as a matrix is one column.
        let v = read_good("vector_coordinate.mtx");
        assert_eq!((v.nrows(), v.ncols(), v.nnz()), (5, 1, 2));
        let h = io::read_header(data("good/vector_coordinate.mtx")).unwrap();
        assert_eq!((h.object, h.nrows, h.ncols, h.entries), (MmObject::Vector, 5, 1, 3));
    }

    #[test]
    fn duplicates_are_summed_in_csr_and_kept_in_coo() {
        let a = read_good("duplicates.mtx");
        assert_eq!(dense(&a), vec![vec![3.0, 1.0], vec![0.0, 7.0]]);
        assert_eq!(a.nnz(), 3);
        assert_eq!(io::read_coo::<f64>(data("good/duplicates.mtx")).unwrap().nnz(), 5);
    }

    #[test]
    fn unsorted_entries() {
        let a = read_good("unsorted.mtx");
        assert_eq!(dense(&a), vec![vec![11.0, 0.0, 13.0], vec![0.0, 22.0, 0.0], vec![31.0, 0.0, 33.0]]);
    }

    #[test]
    fn empty_matrices() {
        let a = read_good("empty_matrix.mtx");
        assert_eq!((a.nrows(), a.ncols(), a.nnz()), (0, 0, 0));
        let b = read_good("no_entries.mtx");
        assert_eq!((b.nrows(), b.ncols(), b.nnz(), b.row_offsets()), (3, 2, 0, &[0u64, 0, 0, 0][..]));
    }

    #[test]
    fn special_values() {
        let a = read_good("special_values.mtx");
        let v = a.values();
        assert_eq!((v[0], v[1]), (f64::INFINITY, f64::NEG_INFINITY));
        assert!(v[2].is_nan());
    }

    #[test]
    fn load_matrix_reads_files_and_generators() {
        let a = io::load_matrix::<f64>(data("good/symmetric.mtx").to_str().unwrap()).unwrap();
        assert_eq!(a.nnz(), 6);
        let g = io::load_matrix::<f32>("gen:lap2d:7").unwrap();
        assert_eq!(g, spgpu::gen::laplacian_2d::<f32>(7));
    }
}

/// A large general file: `n` rows, `per_row` entries each at scattered columns, values with
/// 17 significant digits; optionally shuffled. Returns the text and the expected matrix.
fn big_text(n: usize, per_row: usize, shuffle: bool) -> (String, CsrMatrix<f64>) {
    let a = spgpu::gen::random_uniform::<f64>(n, n, per_row, 7);
    let mut lines: Vec<String> = Vec::with_capacity(a.nnz());
    for i in 0..n {
        let (cols, vals) = a.row(i);
        for (&c, &v) in cols.iter().zip(vals) {
            lines.push(format!("{} {} {:.16e}", i + 1, c + 1, v));
        }
    }
    if shuffle {
        // A fixed permutation (multiplicative hash order).
        let len = lines.len();
        let mut idx: Vec<usize> = (0..len).collect();
        idx.sort_by_key(|&k| (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7);
        lines = idx.into_iter().map(|k| std::mem::take(&mut lines[k])).collect();
    }
    let mut text = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} {}\n", a.nnz());
    for l in &lines {
        text.push_str(l);
        text.push('\n');
    }
    // The written values are exact (17 digits), so the expected matrix is `a` itself.
    (text, a)
}

mod large {
    use super::*;

    #[test]
    fn parallel_parse_matches_in_order_and_shuffled() {
        for shuffle in [false, true] {
            let (text, a) = big_text(30_000, 9, shuffle);
            assert!(text.len() > 4 << 20);
            let b = io::read_csr_from_str::<f64>(&text).unwrap();
            assert_eq!(a, b, "shuffle {shuffle}");
            // Through a reader: growing buffer, many chunks.
            let c = io::read_csr_from_reader::<f64>(text.as_bytes()).unwrap();
            assert_eq!(a, c, "shuffle {shuffle}");
        }
    }

    #[test]
    fn first_bad_line_in_file_order_is_reported() {
        let (text, _) = big_text(30_000, 9, true);
        let clean: Vec<&str> = text.lines().collect();
        let mut lines = clean.clone();
        // Two faults far apart: the earlier one must win, whatever piece finishes first.
        lines[150_000] = "1 1 bogus";
        lines[20_000] = "5 0 1.0";
        let bad = lines.join("\n");
        for r in [io::read_csr_from_str::<f64>(&bad), io::read_csr_from_reader::<f64>(bad.as_bytes())] {
            let e = mm_error(r);
            assert_eq!((e.kind, e.line, e.text.as_str()), (K::IndexOutOfRange, 20_001, "5 0 1.0"));
        }
        // Too many entries: a copy of the last line appended; reported at that line.
        let extra = format!("{text}{}\n", clean[clean.len() - 1]);
        let e = mm_error(io::read_csr_from_str::<f64>(&extra));
        assert_eq!((e.kind, e.line), (K::TooManyEntries, clean.len() + 1));
        // Too few: the last line dropped (and no final line end).
        let fewer = clean[..clean.len() - 1].join("\n");
        let e = mm_error(io::read_csr_from_reader::<f64>(fewer.as_bytes()));
        assert_eq!((e.kind, e.line), (K::TooFewEntries, clean.len()));
    }

    #[test]
    fn too_many_entries_counted_across_pieces_and_chunks() {
        let (text, _) = big_text(30_000, 9, true);
        let lines: Vec<&str> = text.lines().collect();
        let held = lines.len() - 2;
        // Announce 100_000 fewer entries than the file holds: the first extra entry is far
        // into the file (past the first piece, and past the first chunk of a reader).
        let announced = held - 100_000;
        let size = lines[1].rsplit_once(' ').unwrap().0;
        let body = format!("{}\n{size} {announced}\n{}\n", lines[0], lines[2..].join("\n"));
        for r in [io::read_csr_from_str::<f64>(&body), io::read_csr_from_reader::<f64>(body.as_bytes())] {
            let e = mm_error(r);
            assert_eq!((e.kind, e.line), (K::TooManyEntries, 2 + announced + 1));
            assert_eq!(e.detail, format!("the size line announces {announced} entries, the file holds {held}"));
            assert_eq!(e.text, lines[2 + announced]);
        }
    }

    #[test]
    fn gzip_of_a_large_file() {
        use std::io::Write;
        let (text, a) = big_text(20_000, 5, false);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(text.as_bytes()).unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(io::read_csr_from_reader::<f64>(&gz[..]).unwrap(), a);
    }
}

mod round_trip {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// `text` rewritten with random liberties of layout, as real files take them: blank
    /// lines (of spaces, tabs, CRs) anywhere, before the banner too; a single-`%` banner;
    /// keywords in any case; indentation, runs of spaces and tabs between fields, trailing
    /// blanks; LF or CRLF line by line; indented comment lines after the banner; a UTF-8 byte
    /// order mark; no final line end.
    fn permissive_layout(text: &str, seed: u64) -> String {
        let mut rng = StdRng::seed_from_u64(seed);
        let blanks = |rng: &mut StdRng, min: usize| -> String {
            (0..rng.random_range(min..min + 3)).map(|_| [" ", "\t", " "][rng.random_range(0..3)]).collect()
        };
        let mut out = String::new();
        if rng.random_bool(0.2) {
            out.push('\u{feff}');
        } else {
            for _ in 0..rng.random_range(0..3) {
                let (b, end) = (blanks(&mut rng, 0), ["\n", "\r\n"][rng.random_range(0..2)]);
                out.push_str(&format!("{b}{end}"));
            }
        }
        for (k, line) in text.lines().enumerate() {
            let fields: Vec<String> = if k == 0 {
                let mut f: Vec<String> = line
                    .split(' ')
                    .map(|w| w.chars().map(|c| if rng.random_bool(0.5) { c.to_ascii_uppercase() } else { c }).collect())
                    .collect();
                if rng.random_bool(0.5) {
                    f[0] = f[0][1..].to_string();
                }
                f
            } else {
                line.split(' ').map(str::to_string).collect()
            };
            let indent = if k == 0 && out.starts_with('\u{feff}') { String::new() } else { blanks(&mut rng, 0) };
            out.push_str(&indent);
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(&blanks(&mut rng, 1));
                }
                out.push_str(f);
            }
            out.push_str(&blanks(&mut rng, 0));
            out.push_str(["\n", "\r\n"][rng.random_range(0..2)]);
            // Blank and comment lines after the banner.
            while rng.random_bool(0.3) {
                let b = blanks(&mut rng, 0);
                if rng.random_bool(0.5) {
                    out.push_str(&format!("{b}% note{b}\n"));
                } else {
                    out.push_str(&format!("{b}\r\n"));
                }
            }
        }
        if rng.random_bool(0.3) {
            while out.ends_with(['\n', '\r']) {
                out.pop();
            }
        }
        out
    }

    fn csr_strategy() -> impl Strategy<Value = CsrMatrix<f64>> {
        (0usize..12, 0usize..12).prop_flat_map(|(r, c)| {
            let entries = if r == 0 || c == 0 { 0..1 } else { 0..(r * c + 1) };
            proptest::collection::vec((0..r.max(1), 0..c.max(1), any::<f64>()), entries).prop_map(move |t| {
                let mut coo = spgpu::CooMatrix::new(r, c).unwrap();
                for (i, j, v) in t {
                    if i < r && j < c && v.is_finite() {
                        coo.push(i, j, v).unwrap();
                    }
                }
                coo.to_csr()
            })
        })
    }

    proptest! {
        #[test]
        fn write_then_read_is_identity(a in csr_strategy()) {
            let mut out = Vec::new();
            io::write_csr_to_writer(&mut out, &a, MmSymmetry::General).unwrap();
            let b = io::read_csr_from_reader::<f64>(&out[..]).unwrap();
            prop_assert_eq!(&a, &b);
            // f32: the f32 values written shortest read back exactly.
            let a32 = CsrMatrix::try_from_parts(
                a.nrows(), a.ncols(), a.row_offsets().to_vec(), a.col_indices().to_vec(),
                a.values().iter().map(|&v| v as f32).collect(),
            ).unwrap();
            let mut out32 = Vec::new();
            io::write_csr_to_writer(&mut out32, &a32, MmSymmetry::General).unwrap();
            prop_assert_eq!(a32, io::read_csr_from_reader::<f32>(&out32[..]).unwrap());
        }

        #[test]
        fn symmetric_write_then_read_is_identity(a in csr_strategy()) {
            // A + A^T is symmetric.
            let n = a.nrows().min(a.ncols());
            let mut coo = spgpu::CooMatrix::new(n, n).unwrap();
            for i in 0..n {
                let (cols, vals) = a.row(i);
                for (&j, &v) in cols.iter().zip(vals) {
                    if (j as usize) < n {
                        coo.push(i, j as usize, v).unwrap();
                        if j as usize != i { coo.push(j as usize, i, v).unwrap(); }
                    }
                }
            }
            let s = coo.to_csr();
            let mut out = Vec::new();
            io::write_csr_to_writer(&mut out, &s, MmSymmetry::Symmetric).unwrap();
            let text = String::from_utf8(out).unwrap();
            prop_assert!(text.starts_with("%%MatrixMarket matrix coordinate real symmetric\n"));
            prop_assert_eq!(&s, &io::read_csr_from_str::<f64>(&text).unwrap());
        }

        /// The class of permissive layouts: any mix of them reads as the plain file does.
        #[test]
        fn permissive_layouts_read_as_the_plain_file(a in csr_strategy(), symmetric in any::<bool>(), seed in any::<u64>()) {
            let (a, symmetry) = if symmetric && a.nrows() == a.ncols() {
                // A + A^T, written as its lower triangle.
                let mut coo = spgpu::CooMatrix::new(a.nrows(), a.ncols()).unwrap();
                for i in 0..a.nrows() {
                    let (cols, vals) = a.row(i);
                    for (&j, &v) in cols.iter().zip(vals) {
                        coo.push(i, j as usize, v).unwrap();
                        coo.push(j as usize, i, v).unwrap();
                    }
                }
                (coo.to_csr(), MmSymmetry::Symmetric)
            } else {
                (a, MmSymmetry::General)
            };
            let mut out = Vec::new();
            io::write_csr_to_writer(&mut out, &a, symmetry).unwrap();
            let plain = String::from_utf8(out).unwrap();
            let messy = permissive_layout(&plain, seed);
            let b = io::read_csr_from_str::<f64>(&messy);
            prop_assert!(b.is_ok(), "{:?}\n{messy:?}", b);
            prop_assert_eq!(&a, &b.unwrap());
            prop_assert_eq!(&a, &io::read_csr_from_reader::<f64>(messy.as_bytes()).unwrap());
        }

        #[test]
        fn vectors_round_trip(v in proptest::collection::vec(any::<f64>().prop_filter("finite", |x| x.is_finite()), 0..40)) {
            let mut out = Vec::new();
            io::write_vector_to_writer(&mut out, &v).unwrap();
            prop_assert_eq!(&v, &io::read_vector_from_reader::<f64>(&out[..]).unwrap());
        }
    }

    #[test]
    fn files_and_gzip_round_trip() {
        let dir = std::env::temp_dir().join(format!("spgpu-mm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = spgpu::gen::laplacian_2d::<f64>(9);
        for name in ["a.mtx", "a.mtx.gz"] {
            for sym in [MmSymmetry::General, MmSymmetry::Symmetric] {
                let p = dir.join(name);
                io::write_csr(&p, &a, sym).unwrap();
                assert_eq!(io::read_csr::<f64>(&p).unwrap(), a, "{name} {sym:?}");
                assert_eq!(io::read_header(&p).unwrap().symmetry, sym);
            }
        }
        let v = vec![1.0, -0.5, 1e-300, 0.0];
        io::write_vector(dir.join("v.mtx"), &v).unwrap();
        assert_eq!(io::read_vector::<f64>(dir.join("v.mtx")).unwrap(), v);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn writing_a_nonsymmetric_matrix_as_symmetric_is_refused() {
        let a = CsrMatrix::try_from_parts(2, 2, vec![0, 1, 2], vec![1, 0], vec![1.0, 2.0]).unwrap();
        let r = io::write_csr_to_writer(Vec::new(), &a, MmSymmetry::Symmetric);
        assert!(matches!(r, Err(Error::InvalidArgument(ref m)) if m.contains("(1, 2)")), "{r:?}");
        let rect = CsrMatrix::<f64>::zeros(2, 3).unwrap();
        assert!(matches!(
            io::write_csr_to_writer(Vec::new(), &rect, MmSymmetry::Symmetric),
            Err(Error::InvalidArgument(_))
        ));
        // Skew-symmetric is checked too, and round-trips.
        let k = CsrMatrix::try_from_parts(2, 2, vec![0, 1, 2], vec![1, 0], vec![-3.0, 3.0]).unwrap();
        let mut out = Vec::new();
        io::write_csr_to_writer(&mut out, &k, MmSymmetry::SkewSymmetric).unwrap();
        assert_eq!(io::read_csr_from_reader::<f64>(&out[..]).unwrap(), k);
        assert!(io::write_csr_to_writer(Vec::new(), &a, MmSymmetry::SkewSymmetric).is_err());
    }
}

/// The external SuiteSparse matrices (`SPGPU_MATRICES`): every file listed in the folder's
/// `SOURCES.md` reads with the dimensions and expanded nnz of its row there.
#[test]
fn shared_matrices_match_sources() {
    let Some(sources_md) = common::external_file(&["SOURCES.md"]) else { return };
    let dir = sources_md.parent().unwrap();
    let sources = std::fs::read_to_string(&sources_md).unwrap_or_else(|e| panic!("{}: {e}", sources_md.display()));
    let mut checked = 0;
    for line in sources.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | file | name | id | rows | cols | nnz (header) | nnz (full) | ...
        if cells.len() < 8 || !cells[1].ends_with(".mtx") {
            continue;
        }
        let (file, rows, cols, full) = (cells[1], cells[4], cells[5], cells[7]);
        let (Ok(rows), Ok(cols), Ok(full)) = (rows.parse::<usize>(), cols.parse::<usize>(), full.parse::<usize>())
        else {
            panic!("SOURCES.md row for {file} has unparsable numbers: {line}");
        };
        let path = dir.join(file);
        let a = io::read_csr::<f64>(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((a.nrows(), a.ncols(), a.nnz()), (rows, cols, full), "{file}");
        let h = io::read_header(&path).unwrap();
        assert_eq!(h.entries, cells[6].parse::<usize>().unwrap(), "{file}: header nnz");
        let a32 = io::read_csr::<f32>(&path).unwrap();
        assert_eq!(a32.col_indices(), a.col_indices(), "{file} (f32)");
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} matrices listed in SOURCES.md");
    println!("checked {checked} shared matrices");
}
