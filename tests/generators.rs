//! Seeded generators: sizes by formula (the anchors' sizes without building them),
//! symmetry, diagonal dominance and positive definiteness of the SPD families, the
//! power-law statistics, determinism (equal seeds, any thread count) and `from_spec`.

use spgpu::gen::{self, from_spec, stencil_nnz};
use spgpu::{CsrMatrix, Error, FormatError, INDEX_LIMIT};

/// Whether a small symmetric matrix is positive definite: a dense Cholesky factorization
/// succeeds with positive pivots.
fn is_positive_definite(a: &CsrMatrix<f64>) -> bool {
    let n = a.nrows();
    let mut l = a.to_dense();
    for j in 0..n {
        let mut d = l[j * n + j];
        for k in 0..j {
            d -= l[j * n + k] * l[j * n + k];
        }
        if d <= 1e-12 {
            return false;
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = l[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = s / d;
        }
    }
    true
}

/// Symmetric, diagonally dominant with a positive diagonal, strictly so in at least one row
/// (with irreducibility, which the stencils have, this makes the matrix SPD).
fn check_dominant(a: &CsrMatrix<f64>) {
    assert!(a.is_symmetric());
    let mut strict = 0;
    for i in 0..a.nrows() {
        let (cols, vals) = a.row(i);
        let diag = a.get(i, i).expect("diagonal stored");
        let off: f64 = cols.iter().zip(vals).filter(|(&c, _)| c as usize != i).map(|(_, v)| v.abs()).sum();
        assert!(diag > 0.0 && diag >= off, "row {i}: diagonal {diag}, off-diagonal sum {off}");
        if diag > off {
            strict += 1;
        }
    }
    assert!(strict > 0 || a.nrows() == 0);
}

#[test]
fn stencil_sizes_match_their_formulas() {
    for n in 0..=7 {
        let a = gen::laplacian_2d::<f64>(n);
        assert_eq!((a.nrows(), a.nnz()), (n * n, 5 * n * n - 4 * n), "lap2d {n}");
        assert_eq!(stencil_nnz(5, n), Some(a.nnz()));
    }
    for n in 0..=5 {
        let a = gen::laplacian_3d_7pt::<f64>(n);
        assert_eq!((a.nrows(), a.nnz()), (n * n * n, 7 * n * n * n - 6 * n * n), "lap3d {n}");
        assert_eq!(stencil_nnz(7, n), Some(a.nnz()));
        let a = gen::laplacian_3d_27pt::<f64>(n);
        let side = (3 * n).saturating_sub(2);
        assert_eq!((a.nrows(), a.nnz()), (n * n * n, side * side * side), "stencil27 {n}");
        assert_eq!(stencil_nnz(27, n), Some(a.nnz()));
    }
    // The anchors' large matrices, by formula only.
    assert_eq!(stencil_nnz(5, 2000), Some(19_992_000));
    assert_eq!(stencil_nnz(27, 100), Some(26_463_592));
    assert_eq!(stencil_nnz(9, 10), None);
    assert_eq!(stencil_nnz(27, usize::MAX), None);
}

#[test]
fn laplacian_2d_is_the_5_point_stencil() {
    let n = 4;
    let a = gen::laplacian_2d::<f64>(n);
    for i in 0..n * n {
        for j in 0..n * n {
            let (xi, yi, xj, yj) = (i % n, i / n, j % n, j / n);
            let dist = xi.abs_diff(xj) + yi.abs_diff(yj);
            let expect = match dist {
                0 => Some(4.0),
                1 => Some(-1.0),
                _ => None,
            };
            assert_eq!(a.get(i, j), expect, "({i}, {j})");
        }
    }
    // An interior row sums to zero; a corner row keeps its full diagonal (Dirichlet).
    let sum = |i: usize| a.row(i).1.iter().sum::<f64>();
    assert_eq!(sum(5), 0.0);
    assert_eq!(sum(0), 2.0);
}

#[test]
fn stencil_27_neighbours() {
    let n = 3;
    let a = gen::laplacian_3d_27pt::<f64>(n);
    let centre = 13; // (1, 1, 1)
    assert_eq!(a.row_len(centre), 27);
    assert_eq!(a.get(centre, centre), Some(26.0));
    assert_eq!(a.row(centre).1.iter().sum::<f64>(), 0.0);
    assert_eq!(a.row_len(0), 8); // a corner: itself and 7 neighbours
    let b = gen::laplacian_3d_7pt::<f64>(n);
    assert_eq!((b.row_len(centre), b.get(centre, centre)), (7, Some(6.0)));
}

#[test]
fn spd_families_are_symmetric_dominant_and_positive_definite() {
    let cases: Vec<(&str, CsrMatrix<f64>)> = vec![
        ("lap2d 5", gen::laplacian_2d(5)),
        ("lap3d 3", gen::laplacian_3d_7pt(3)),
        ("stencil27 3", gen::laplacian_3d_27pt(3)),
        ("stencil27 4", gen::laplacian_3d_27pt(4)),
        ("banded 40 4", gen::banded(40, 4, 9)),
        ("banded 7 20", gen::banded(7, 20, 1)),
    ];
    for (name, a) in &cases {
        check_dominant(a);
        assert!(is_positive_definite(a), "{name} is not positive definite");
    }
    // The check itself can fail: a symmetric indefinite matrix.
    let mut bad = gen::laplacian_2d::<f64>(3);
    bad.values_mut().iter_mut().for_each(|v| *v = -*v);
    assert!(!is_positive_definite(&bad));
}

#[test]
fn banded_shape_and_values() {
    for (n, h) in [(10usize, 0usize), (10, 3), (5, 4), (5, 9), (0, 2), (1, 1)] {
        let a = gen::banded::<f64>(n, h, 3);
        let hh = h.min(n.saturating_sub(1));
        assert_eq!(a.nnz(), n * (2 * hh + 1) - hh * (hh + 1), "banded {n} {h}");
        for i in 0..n {
            let (cols, vals) = a.row(i);
            assert!(cols.iter().all(|&c| (c as usize).abs_diff(i) <= h));
            for (&c, &v) in cols.iter().zip(vals) {
                if c as usize != i {
                    assert!((-1.0..=-0.1).contains(&v), "off-diagonal {v}");
                }
            }
        }
        check_dominant(&a);
    }
    assert_eq!(gen::banded::<f64>(50, 3, 1), gen::banded::<f64>(50, 3, 1));
    assert_ne!(gen::banded::<f64>(50, 3, 1), gen::banded::<f64>(50, 3, 2));
}

#[test]
fn random_uniform_rows() {
    let a = gen::random_uniform::<f64>(500, 10_000, 8, 11);
    assert_eq!((a.nrows(), a.ncols()), (500, 10_000));
    let s = a.row_stats();
    assert!(s.max <= 8 && s.min >= 6, "{s}"); // duplicates merge, rarely at 8 of 10000
    assert!(s.mean > 7.9, "{s}");
    assert!(a.values().iter().all(|v| (-1.0..1.0).contains(v)));
    // Columns spread over the whole range.
    let max_col = a.col_indices().iter().copied().max().unwrap();
    assert!(max_col > 9_000);
    // Fewer columns than draws: every row is (nearly) full, never longer than ncols.
    let b = gen::random_uniform::<f32>(50, 4, 100, 1);
    assert_eq!(b.row_stats().max, 4);
    assert_eq!(gen::random_uniform::<f64>(3, 0, 0, 1).nnz(), 0);
}

#[test]
fn seeds_decide_the_matrix() {
    assert_eq!(gen::random_uniform::<f64>(300, 300, 5, 1), gen::random_uniform::<f64>(300, 300, 5, 1));
    assert_ne!(gen::random_uniform::<f64>(300, 300, 5, 1), gen::random_uniform::<f64>(300, 300, 5, 2));
    assert_eq!(gen::power_law::<f64>(300, 300, 1.2, 3.0, 100, 4), gen::power_law::<f64>(300, 300, 1.2, 3.0, 100, 4));
    assert_ne!(gen::power_law::<f64>(300, 300, 1.2, 3.0, 100, 4), gen::power_law::<f64>(300, 300, 1.2, 3.0, 100, 5));
    // f32 and f64 draw the same pattern, values rounded.
    let (a, b) = (gen::random_uniform::<f64>(100, 80, 4, 9), gen::random_uniform::<f32>(100, 80, 4, 9));
    assert_eq!(a.cast::<f32>(), b);
}

#[test]
fn generators_do_not_depend_on_the_thread_count() {
    let build = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            (
                gen::random_uniform::<f64>(5000, 3000, 6, 77),
                gen::power_law::<f64>(5000, 5000, 1.2, 3.0, 2000, 77),
                gen::banded::<f64>(3000, 2, 77),
                gen::laplacian_3d_27pt::<f64>(9),
            )
        })
    };
    let one = build(1);
    assert_eq!(one, build(4));
    assert_eq!(one, build(3));
}

#[test]
fn power_law_statistics_match_the_anchor_distribution() {
    // The anchors' powerlaw_1M (shape 1.2, scale 3, cap 20000) has mean row length 12.8 at
    // 1M rows; at 120k rows (and 120k columns) the mean stays near it, within a loose band
    // (the tail is heavy: seeds give 12.3 to 13.4). Also a regression test: this row count
    // once failed `from_spec` with a spurious TooLarge.
    let a = from_spec::<f64>("powerlaw:120000").unwrap();
    let s = a.row_stats();
    assert_eq!((s.nrows, s.ncols, s.min, s.empty_rows), (120_000, 120_000, 1, 0));
    assert!((11.5..14.5).contains(&s.mean), "{s}");
    assert!(s.max > 10_000 && s.max <= 20_000, "{s}");
    // P(length 1) = P(3L < 1) = 1 - (4/3)^-1.2 = 0.2917 for a Lomax L of shape 1.2.
    let ones = s.histogram[1] as f64 / s.nrows as f64;
    assert!((0.28..0.30).contains(&ones), "fraction of rows of length 1: {ones}");
    // P(length >= 2^10) = P(3L >= 1023) = (1 + 341)^-1.2 = 0.00091: about 110 rows.
    let long: usize = s.histogram.iter().skip(11).sum();
    assert!((60..180).contains(&long), "rows of 1024 or more: {long}");
}

#[test]
fn from_spec_names() {
    let a = from_spec::<f64>("gen:lap2d:10").unwrap();
    assert_eq!(a, gen::laplacian_2d(10));
    assert_eq!(from_spec::<f64>("lap3d:3").unwrap(), gen::laplacian_3d_7pt(3));
    assert_eq!(from_spec::<f32>("stencil27:3").unwrap(), gen::laplacian_3d_27pt(3));
    assert_eq!(from_spec::<f64>("uniform:20:30:4").unwrap(), gen::random_uniform(20, 30, 4, 42));
    assert_eq!(from_spec::<f64>("uniform:20:30:4:5").unwrap(), gen::random_uniform(20, 30, 4, 5));
    assert_eq!(from_spec::<f64>("powerlaw:1_000:3").unwrap(), gen::power_law(1000, 1000, 1.2, 3.0, 20_000, 3));
    assert_eq!(from_spec::<f64>("longrows:20").unwrap(), gen::random_uniform(20, 200, 200, 42));
    assert_eq!(from_spec::<f64>("banded:30:2:8").unwrap(), gen::banded(30, 2, 8));
    assert_eq!(from_spec::<f64>("lap2d:0").unwrap().nrows(), 0);
}

#[test]
fn from_spec_errors() {
    let invalid = |spec: &str, needle: &str| match from_spec::<f64>(spec) {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(needle), "{spec}: {msg}"),
        other => panic!("{spec}: expected InvalidArgument, got {other:?}"),
    };
    invalid("gen:nope:3", "unknown generated matrix");
    invalid("", "unknown generated matrix");
    invalid("lap2d", "takes 1 parameter(s), got 0");
    invalid("lap2d:3:4", "takes 1 parameter(s), got 2");
    invalid("uniform:3:4", "takes 3 to 4 parameter(s), got 2");
    invalid("lap2d:x", "'x' is not a whole number");
    invalid("lap2d:-3", "'-3' is not a whole number");
    invalid("uniform:10:0:3", "no columns to draw from");
    invalid("uniform:3:5:18446744073709551615", "entries per row, but only 5 columns");
    let too_large = |spec: &str, what: &str| match from_spec::<f64>(spec) {
        Err(Error::Format(FormatError::TooLarge { what: w, limit, .. })) => {
            assert_eq!((w, limit), (what, INDEX_LIMIT), "{spec}")
        }
        other => panic!("{spec}: expected TooLarge, got {other:?}"),
    };
    // All refused before anything is built.
    too_large("lap2d:50000", "rows");
    too_large("lap2d:30000", "stored entries"); // 9e8 rows, 4.5e9 entries
    too_large("lap3d:1300", "rows");
    too_large("stencil27:1000", "stored entries");
    too_large("stencil27:99999999999", "rows");
    too_large("uniform:100000000:1000:100", "stored entries");
    too_large("uniform:10:3000000000:1", "columns");
    too_large("powerlaw:200000000", "stored entries (expected)");
    too_large("longrows:300000000", "columns");
    too_large("banded:3000000000:1", "rows");
    too_large("banded:100000000:20", "stored entries");
}

proptest::proptest! {
    /// Any spec, well formed or not, is a matrix or an error, never a panic; huge numbers are
    /// refused before anything is drawn.
    #[test]
    fn from_spec_never_panics(
        spec in "(gen:)?(lap2d|lap3d|stencil27|uniform|powerlaw|longrows|banded|bogus|)(:([0-9]|[0-9]{12,20}|x|-1|_|))?{0,5}"
    ) {
        match from_spec::<f32>(&spec) {
            Ok(a) => {
                // A valid matrix: rebuilding it through the checked constructor succeeds.
                let (r, c, o, ci, v) = a.clone().into_parts();
                proptest::prop_assert_eq!(CsrMatrix::try_from_parts(r, c, o, ci, v), Ok(a));
            }
            Err(Error::InvalidArgument(_)) | Err(Error::Format(FormatError::TooLarge { .. })) => {}
            Err(e) => proptest::prop_assert!(false, "{spec}: unexpected error {e}"),
        }
    }
}
