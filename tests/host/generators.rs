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
    too_large("lap3d:1300", "rows");
    too_large("stencil27:99999999999", "rows");
    too_large("uniform:10:3000000000:1", "columns");
    too_large("longrows:300000000", "columns");
    too_large("banded:3000000000:1", "rows");
    // Entry counts past 2^31 are allowed (64-bit offsets): memory refuses these, here a
    // limit of 1 GiB, before anything is built.
    for spec in
        ["lap2d:30000", "stencil27:1000", "uniform:100000000:1000:100", "powerlaw:200000000", "banded:100000000:20"]
    {
        let r = gen::from_spec_with_limit::<f64>(spec, Some(1 << 30));
        assert!(matches!(r, Err(Error::InsufficientMemory { .. })), "{spec}: {r:?}");
    }
}

proptest::proptest! {
    /// Any spec, well formed or not, is a matrix or an error, never a panic; huge numbers are
    /// refused before anything is drawn.
    #[test]
    fn from_spec_never_panics(
        spec in "(gen:)?(graphlap:|transpose:)?(lap2d|lap3d|stencil27|uniform|powerlaw|longrows|banded|rmat|circuit|web|geo|elast|graphlap|bogus|)(:([0-9]|[0-9]{12,20}|x|-1|_|))?{0,5}"
    ) {
        // A fixed limit: the outcome does not depend on this machine's memory.
        match gen::from_spec_with_limit::<f32>(&spec, Some(1 << 30)) {
            Ok(a) => {
                // A valid matrix: rebuilding it through the checked constructor succeeds.
                let (r, c, o, ci, v) = a.clone().into_parts();
                proptest::prop_assert_eq!(CsrMatrix::try_from_parts(r, c, o, ci, v), Ok(a));
            }
            // entry counts past 2^31 are refused by the memory limit, not an index limit
            Err(Error::InvalidArgument(_))
            | Err(Error::Format(FormatError::TooLarge { .. }))
            | Err(Error::InsufficientMemory { .. })
            | Err(Error::DimensionMismatch { .. }) => {}
            Err(e) => proptest::prop_assert!(false, "{spec}: unexpected error {e}"),
        }
    }
}

/// The matrix rebuilt through the checked constructor: every CSR invariant holds.
fn assert_valid(a: &CsrMatrix<f64>) {
    let (r, c, o, ci, v) = a.clone().into_parts();
    assert_eq!(CsrMatrix::try_from_parts(r, c, o, ci, v).as_ref(), Ok(a));
}

/// Stored entries per column.
fn column_counts(a: &CsrMatrix<f64>) -> Vec<usize> {
    let mut counts = vec![0; a.ncols()];
    a.col_indices().iter().for_each(|&c| counts[c as usize] += 1);
    counts
}

#[test]
fn rmat_is_a_skewed_graph500_graph() {
    let (a, stats) = gen::rmat_with_stats::<f64>(12, 16, 7).unwrap();
    assert_valid(&a);
    assert_eq!((a.nrows(), a.ncols(), stats.vertices, stats.edges), (4096, 4096, 4096, 65_536));
    assert_eq!(a.nnz(), stats.nnz());
    // A self loop needs the same bit at all 12 levels: P = (a + d)^12 = 0.62^12 = 0.0033,
    // about 215 of the 65536 edges (sd 15).
    assert!((150..290).contains(&stats.self_loops), "{stats:?}");
    // Repeats are many on the hubs: several thousand at this scale.
    assert!((1000..15_000).contains(&stats.duplicates), "{stats:?}");
    assert!((0..4096).all(|i| a.get(i, i).is_none()), "self loops are dropped");
    let s = a.row_stats();
    assert!(s.max as f64 > 20.0 * s.mean, "out-degrees not skewed: {s}");
    assert!(s.empty_rows > 400, "{s}");
    let cols = column_counts(&a);
    assert!(*cols.iter().max().unwrap() as f64 > 20.0 * s.mean, "in-degrees not skewed");
    // The permutation scatters the hubs: without it the longest row would be row 0 (all
    // source bits 0 is the likeliest), and rows 0..64 would hold far more than 1/64 of it all.
    let head: usize = (0..64).map(|i| a.row_len(i)).sum();
    assert!(head < a.nnz() / 16, "the first 64 rows hold {head} of {} entries", a.nnz());
    assert!(a.values().iter().all(|v| (0.5..1.5).contains(v)));
    // Deterministic, seeded.
    assert_eq!(gen::rmat::<f64>(12, 16, 7).unwrap(), a);
    assert_ne!(gen::rmat::<f64>(12, 16, 8).unwrap(), a);
    assert_eq!(gen::rmat::<f32>(12, 16, 7).unwrap(), a.cast::<f32>());
}

#[test]
fn rmat_sizes_are_checked_first() {
    let too_large = |r: Result<CsrMatrix<f64>, FormatError>, what: &str, value: usize| match r {
        Err(FormatError::TooLarge { what: w, value: v, .. }) => assert_eq!((w, v), (what, value)),
        other => panic!("expected TooLarge {what}, got {other:?}"),
    };
    too_large(gen::rmat(31, 1, 0), "rows", 1 << 31);
    too_large(gen::rmat(64, 1, 0), "rows", usize::MAX);
    too_large(gen::rmat(20, usize::MAX, 0), "stored entries (expected)", usize::MAX);
    too_large(gen::rmat(30, 1 << 30, 0), "stored entries (expected)", 1 << 60);
    assert_eq!(gen::rmat::<f64>(0, 5, 1).unwrap().nnz(), 0); // one vertex: only self loops
}

#[test]
fn circuit_has_short_rows_and_dense_nets() {
    let n = 120_000;
    let a = gen::circuit::<f64>(n, 3).unwrap();
    assert_valid(&a);
    assert_eq!((a.nrows(), a.ncols()), (n, n));
    check_dominant(&a); // symmetric, diagonally dominant, positive diagonal
                        // Two nets (one per 50000 rows): two rows, and two columns, of 20000 to 80000 entries.
    let long: Vec<usize> = (0..n).filter(|&i| a.row_len(i) > 1000).collect();
    assert_eq!(long.len(), 2, "{:?}", long);
    for &i in &long {
        assert!((20_000..=80_020).contains(&a.row_len(i)), "row {i}: {}", a.row_len(i));
    }
    let cols = column_counts(&a);
    assert_eq!((0..n).filter(|&j| cols[j] >= 20_000).collect::<Vec<_>>(), long);
    // Everything else lies within 8 of the diagonal.
    for i in 0..n {
        let (c, _) = a.row(i);
        let far = c.iter().filter(|&&j| (j as usize).abs_diff(i) > 8 && !long.contains(&(j as usize)));
        assert!(long.contains(&i) || far.count() == 0, "row {i}");
    }
    // Short rows: the diagonal, Binomial(16, 1/4) links and a pin or two.
    let short = (0..n).filter(|&i| (3..=9).contains(&a.row_len(i))).count();
    assert!(short as f64 > 0.85 * n as f64, "{short} rows of 3 to 9 entries");
    let mean = a.nnz() as f64 / n as f64;
    assert!((5.0..8.0).contains(&mean), "{mean}");
    assert_eq!(gen::circuit::<f64>(n, 3).unwrap(), a);
    assert_ne!(gen::circuit::<f64>(n, 4).unwrap(), a);
    // Small sizes: the net covers every row; n = 1 is a 1 x 1 matrix.
    let small = gen::circuit::<f64>(500, 1).unwrap();
    check_dominant(&small);
    assert!(is_positive_definite(&small));
    assert_eq!(small.row_stats().max, 500);
    assert_eq!(gen::circuit::<f64>(1, 1).unwrap().to_dense(), vec![1.0]);
    assert_eq!(gen::circuit::<f64>(0, 1).unwrap().nrows(), 0);
}

#[test]
fn web_graph_is_power_law_and_local() {
    let n = 60_000;
    let a = gen::web_graph::<f64>(n, 5).unwrap();
    assert_valid(&a);
    let s = a.row_stats();
    assert_eq!((s.nrows, s.ncols), (n, n));
    assert!((10.0..14.0).contains(&s.mean), "{s}");
    assert!(s.max >= 1000 && s.max <= 5000, "{s}");
    // P(degree > 100) = P(12 L >= 100) = (1 + 100/12)^-2 = 0.0115: about 690 rows.
    let over_100 = (0..n).filter(|&i| a.row_len(i) > 100).count();
    assert!((500..900).contains(&over_100), "{over_100}");
    assert!((0..n).all(|i| a.get(i, i).is_none()), "no links to the page itself");
    let near = a.row_offsets().windows(2).enumerate().fold(0, |acc, (i, w)| {
        let row = &a.col_indices()[w[0] as usize..w[1] as usize];
        acc + row.iter().filter(|&&j| (j as usize).abs_diff(i) <= 16_384).count()
    });
    assert!(near as f64 > 0.7 * a.nnz() as f64, "{near} of {} links are local", a.nnz());
    // Global links favour low ids: page 0's in-degree is far above the mean.
    assert!(column_counts(&a)[0] as f64 > 20.0 * s.mean);
    assert!(a.values().iter().all(|v| (0.5..1.5).contains(v)));
    assert_eq!(gen::web_graph::<f64>(n, 5).unwrap(), a);
    assert_ne!(gen::web_graph::<f64>(n, 6).unwrap(), a);
    assert_eq!(gen::web_graph::<f64>(1, 5).unwrap().nnz(), 0);
}

#[test]
fn geometric_graph_is_a_spatially_ordered_spd_mesh() {
    let n = 20_000;
    let a = gen::random_geometric::<f64>(n, 9).unwrap();
    assert_valid(&a);
    check_dominant(&a);
    let s = a.row_stats();
    // 12 neighbours on average away from the boundary, plus the diagonal.
    assert!((12.0..13.5).contains(&s.mean), "{s}");
    assert!(s.max < 40, "{s}");
    // Spatial numbering: a neighbour lies within the 3 x 3 cells around a point.
    // Cells are numbered row by row, g = 72 a side, so a neighbour's cell is at most g + 1
    // cells away in that order: the ids lie within the points of g + 2 cells, 3.86 points
    // each on average, about 286; twice that for the fluctuations.
    let g = 72.0;
    let reach = 2.0 * (g + 2.0) * n as f64 / (g * g);
    let band = (0..n).map(|i| a.row(i).0.iter().map(|&j| (j as usize).abs_diff(i)).max().unwrap()).max().unwrap();
    assert!((band as f64) < reach, "bandwidth {band}, expected below {reach}");
    assert_eq!(gen::random_geometric::<f64>(n, 9).unwrap(), a);
    assert_ne!(gen::random_geometric::<f64>(n, 10).unwrap(), a);
    let small = gen::random_geometric::<f64>(300, 2).unwrap();
    assert!(is_positive_definite(&small));
    assert_eq!(gen::random_geometric::<f64>(1, 2).unwrap().to_dense(), vec![1.0]);
}

#[test]
fn elasticity_rows_couple_three_unknowns_of_27_neighbours() {
    let n = 5;
    let a = gen::elasticity_3d::<f64>(n).unwrap();
    assert_valid(&a);
    assert_eq!((a.nrows(), a.nnz()), (3 * n * n * n, 9 * 13 * 13 * 13));
    assert_eq!(gen::elasticity_nnz(n), Some(a.nnz()));
    assert!(a.is_symmetric());
    for p in 0..n * n * n {
        let (x, y, z) = (p % n, (p / n) % n, p / (n * n));
        let interior = [x, y, z].iter().all(|&c| c > 0 && c < n - 1);
        let reach = |c: usize| 1 + usize::from(c > 0) + usize::from(c < n - 1);
        for u in 0..3 {
            let i = 3 * p + u;
            assert_eq!(a.row_len(i), 3 * reach(x) * reach(y) * reach(z), "row {i}");
            assert!(!interior || a.row_len(i) == 81);
            assert!(a.get(i, i).unwrap() > 0.0);
            // An interior row of K sums to 0, so does an interior row of K ⊗ M.
            if interior {
                assert!(a.row(i).1.iter().sum::<f64>().abs() < 1e-12, "row {i}");
            }
        }
    }
    assert!(is_positive_definite(&gen::elasticity_3d::<f64>(4).unwrap()));
    assert_eq!(gen::elasticity_3d::<f64>(0).unwrap().nrows(), 0);
    assert_eq!(gen::elasticity_nnz(64), Some(61_731_000));
}

#[test]
fn graph_laplacian_symmetrizes_and_shifts() {
    let a = gen::rmat::<f64>(9, 8, 3).unwrap();
    let l: CsrMatrix<f64> = gen::graph_laplacian(a.clone()).unwrap();
    assert_valid(&l);
    assert!(l.is_symmetric());
    let n = a.nrows();
    let mut edges = std::collections::BTreeSet::new();
    for i in 0..n {
        for &j in a.row(i).0 {
            if j as usize != i {
                edges.insert((i, j as usize));
                edges.insert((j as usize, i));
            }
        }
    }
    assert_eq!(l.nnz(), edges.len() + n);
    for i in 0..n {
        let (cols, vals) = l.row(i);
        assert_eq!(vals.iter().sum::<f64>(), 1.0, "row {i}");
        assert_eq!(l.get(i, i), Some(cols.len() as f64));
        for (&j, &v) in cols.iter().zip(vals) {
            assert!(j as usize == i || (v == -1.0 && edges.contains(&(i, j as usize))));
        }
    }
    // Skewed rows survive: R-MAT's hubs.
    let s = l.row_stats();
    assert!(s.max as f64 > 10.0 * s.mean, "{s}");
    assert!(is_positive_definite(&gen::graph_laplacian(gen::rmat::<f64>(7, 4, 1).unwrap()).unwrap()));
    // By name, any inner matrix (built with f32 values: the pattern is the same).
    let by_name = from_spec::<f64>("graphlap:powerlaw:3000:2").unwrap();
    assert_eq!(by_name, gen::graph_laplacian(gen::power_law::<f64>(3000, 3000, 1.2, 3.0, 20_000, 2)).unwrap());
    assert_eq!(
        from_spec::<f32>("gen:graphlap:gen:lap2d:4").unwrap(),
        gen::graph_laplacian(gen::laplacian_2d::<f32>(4)).unwrap()
    );
    match gen::graph_laplacian::<f64, f64>(gen::random_uniform(3, 4, 2, 1)) {
        Err(Error::DimensionMismatch { expected: 3, found: 4, .. }) => {}
        other => panic!("expected DimensionMismatch, got {other:?}"),
    }
}

#[test]
fn transpose_turns_skewed_rows_into_skewed_columns() {
    let a = gen::power_law::<f64>(3000, 3000, 1.2, 3.0, 20_000, 2);
    let t = from_spec::<f64>("transpose:powerlaw:3000:2").unwrap();
    assert_eq!(t, a.transpose());
    let mut per_column = vec![0usize; a.ncols()];
    a.col_indices().iter().for_each(|&j| per_column[j as usize] += 1);
    assert_eq!((t.nnz(), t.row_stats().max), (a.nnz(), *per_column.iter().max().unwrap()));
    // The long rows became long columns: the transpose's rows are far more even.
    assert!(a.row_stats().max > 20 * t.row_stats().max, "{} / {}", a.row_stats(), t.row_stats());
    // Rectangular: ROWS x COLS becomes COLS x ROWS, and the entries move across.
    let u = from_spec::<f32>("gen:transpose:gen:uniform:30:50:4:1").unwrap();
    assert_eq!((u.nrows(), u.ncols()), (50, 30));
    let src = gen::random_uniform::<f32>(30, 50, 4, 1);
    for i in 0..30 {
        for (&j, &v) in src.row(i).0.iter().zip(src.row(i).1) {
            assert_eq!(u.get(j as usize, i), Some(v), "({i}, {j})");
        }
    }
    // Symmetrizing forgets the transpose.
    assert_eq!(
        from_spec::<f64>("graphlap:transpose:rmat:9:4").unwrap(),
        from_spec::<f64>("graphlap:rmat:9:4").unwrap()
    );
    // Estimates: the dimensions swap, the entries stay.
    let (e, f) = (
        gen::estimate_host_bytes::<f64>("uniform:1000:4000:8").unwrap(),
        gen::estimate_host_bytes::<f64>("transpose:uniform:1000:4000:8").unwrap(),
    );
    assert!(f > e, "{f} <= {e}");
}

#[test]
fn new_generators_do_not_depend_on_the_thread_count() {
    let build = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            ["rmat:11:8:5", "circuit:60000:5", "web:20000:5", "geo:20000:5", "elast:6", "graphlap:rmat:10:8"]
                .map(|s| from_spec::<f64>(s).unwrap())
        })
    };
    let one = build(1);
    assert_eq!(one, build(4));
    assert_eq!(one, build(3));
}

#[test]
fn from_spec_names_of_the_new_generators() {
    assert_eq!(from_spec::<f64>("rmat:8:4").unwrap(), gen::rmat(8, 4, 42).unwrap());
    assert_eq!(from_spec::<f64>("rmat:8:4:3").unwrap(), gen::rmat(8, 4, 3).unwrap());
    assert_eq!(from_spec::<f32>("circuit:1000:3").unwrap(), gen::circuit(1000, 3).unwrap());
    assert_eq!(from_spec::<f64>("web:1000").unwrap(), gen::web_graph(1000, 42).unwrap());
    assert_eq!(from_spec::<f64>("geo:1_000:7").unwrap(), gen::random_geometric(1000, 7).unwrap());
    assert_eq!(from_spec::<f64>("elast:3").unwrap(), gen::elasticity_3d(3).unwrap());
    let invalid = |spec: &str, needle: &str| match from_spec::<f64>(spec) {
        Err(Error::InvalidArgument(msg)) => assert!(msg.contains(needle), "{spec}: {msg}"),
        other => panic!("{spec}: expected InvalidArgument, got {other:?}"),
    };
    invalid("rmat:10", "rmat takes 2 to 3 parameter(s), got 1");
    invalid("elast:3:4", "elast takes 1 parameter(s), got 2");
    invalid("circuit", "circuit takes 1 to 2 parameter(s), got 0");
    invalid("geo:1:2:3", "geo takes 1 to 2 parameter(s), got 3");
    invalid("graphlap:", "unknown generated matrix");
    invalid("graphlap:web:x", "'x' is not a whole number");
    invalid("transpose:", "unknown generated matrix");
    invalid("transpose:rmat:10", "rmat takes 2 to 3 parameter(s), got 1");
    let too_large = |spec: &str, what: &str, value: usize| match from_spec::<f64>(spec) {
        Err(Error::Format(FormatError::TooLarge { what: w, value: v, .. })) => {
            assert_eq!((w, v), (what, value), "{spec}")
        }
        other => panic!("{spec}: expected TooLarge, got {other:?}"),
    };
    // Sizes overflow to "too large", never wrap: 2^32 squared is 2^64.
    too_large("lap2d:4294967296", "rows", usize::MAX);
    too_large("lap3d:2642246", "rows", usize::MAX); // 2642246^3 > 2^64
    too_large("rmat:31:1", "rows", 1 << 31);
    too_large("rmat:99999999999999:16", "rows", usize::MAX);
    too_large("elast:1000", "rows", 3_000_000_000);
    too_large("elast:99999999999", "rows", usize::MAX);
    too_large("circuit:3000000000", "rows", 3_000_000_000);
    // Past 2^31 entries, memory is the limit (1 GiB here).
    for spec in ["rmat:27:16", "elast:600", "web:200000000", "geo:200000000"] {
        let r = gen::from_spec_with_limit::<f64>(spec, Some(1 << 30));
        assert!(matches!(r, Err(Error::InsufficientMemory { .. })), "{spec}: {r:?}");
    }
    too_large("graphlap:lap2d:50000", "rows", 2_500_000_000);
    match from_spec::<f64>("graphlap:uniform:10:20:3") {
        Err(Error::DimensionMismatch { expected: 10, found: 20, .. }) => {}
        other => panic!("expected DimensionMismatch, got {other:?}"),
    }
}

#[test]
fn from_spec_refuses_what_does_not_fit_the_memory_limit() {
    // 8 (rows + 1) + 12 nnz for f64, 8 (rows + 1) + 8 nnz for f32.
    let lap = 8 * 1_000_001 + 12 * 4_996_000u64;
    assert_eq!(gen::estimate_host_bytes::<f64>("lap2d:1000").unwrap(), lap);
    assert_eq!(gen::estimate_host_bytes::<f32>("gen:lap2d:1000").unwrap(), lap - 4 * 4_996_000);
    match gen::from_spec_with_limit::<f64>("gen:lap2d:1000", Some(lap - 1)) {
        Err(Error::InsufficientMemory { what, memory, needed, available, hint }) => {
            assert_eq!((what.as_str(), memory, needed, available), ("gen:lap2d:1000 (f64 CSR)", "host", lap, lap - 1));
            assert_eq!(hint, "raise the memory limit");
        }
        other => panic!("expected InsufficientMemory, got {other:?}"),
    }
    // R-MAT: the final CSR arrays bounded with every drawn edge kept (8 (rows + 1) + 8 per edge
    // in f32), plus about 1 MiB of drawing buffers per thread of the machine.
    let csr = 8 * ((1u64 << 20) + 1) + 8 * (16u64 << 20);
    let threads = rayon::current_num_threads() as u64;
    match gen::from_spec_with_limit::<f32>("rmat:20:16", Some(100 << 20)) {
        Err(e @ Error::InsufficientMemory { needed, available, .. }) => {
            assert!(needed >= csr && needed <= csr + (2 << 20) * threads, "{needed} against {csr}");
            assert_eq!(available, 100 << 20);
            let message = e.to_string();
            assert!(
                message.starts_with("not enough host memory for gen:rmat:20:16 (f32 CSR): needs about 13"),
                "{message}"
            );
        }
        other => panic!("expected InsufficientMemory, got {other:?}"),
    }
    assert_eq!(gen::from_spec_with_limit::<f64>("lap2d:1000", Some(lap)).unwrap().nnz(), 4_996_000);
    assert_eq!(gen::from_spec_with_limit::<f64>("lap2d:300", None).unwrap().nrows(), 90_000);
    // The index limit comes first, whatever the memory limit.
    assert!(matches!(
        gen::from_spec_with_limit::<f64>("lap2d:50000", Some(0)),
        Err(Error::Format(FormatError::TooLarge { what: "rows", .. }))
    ));
    // lap2d:20000 (400M rows, 2.0G entries) needs 27.2 GB: refused at once below that.
    let big = gen::estimate_host_bytes::<f64>("lap2d:20000").unwrap();
    assert_eq!(big, 8 * 400_000_001 + 12 * 1_999_920_000);
    assert!(matches!(
        gen::from_spec_with_limit::<f64>("lap2d:20000", Some(23 << 30)),
        Err(Error::InsufficientMemory { needed, .. }) if needed == big
    ));
    // graphlap counts its inner matrix.
    let inner = gen::estimate_host_bytes::<f32>("rmat:16:16").unwrap();
    assert!(gen::estimate_host_bytes::<f64>("graphlap:rmat:16:16").unwrap() >= inner);
}

/// FNV-1a over the dimensions, offsets, columns and value bits: a fingerprint of the matrix.
fn fingerprint<T: spgpu::Scalar>(a: &CsrMatrix<T>) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    let mut eat = |x: u64| h = (h ^ x).wrapping_mul(0x0100_0000_01B3);
    eat(a.nrows() as u64);
    eat(a.ncols() as u64);
    a.row_offsets().iter().for_each(|&o| eat(o));
    a.col_indices().iter().for_each(|&c| eat(c.into()));
    a.values().iter().for_each(|v| eat(v.to_f64().to_bits()));
    h
}

#[test]
fn generated_matrices_are_the_same_bit_for_bit() {
    // (spec, f64 fingerprint, f32 fingerprint). The first nine were taken from the generators
    // as they were before the two-pass rewrite (commit a9e239a): existing names still give
    // the same matrices. The others pin the newer generators: a change to any of them is a
    // change to the benchmark inputs, and must be deliberate.
    let pinned = [
        ("lap2d:37", 0x146a_d47e_0748_8fb0, 0x146a_d47e_0748_8fb0),
        ("lap3d:9", 0xbd81_fbab_f1fc_6a44, 0xbd81_fbab_f1fc_6a44),
        ("stencil27:7", 0x2888_b2c8_3177_5946, 0x2888_b2c8_3177_5946),
        ("uniform:500:300:7:3", 0xee86_b82a_ca20_0efb, 0xe7bc_e429_1b16_7543),
        ("powerlaw:3000:5", 0x466a_2d66_b2a1_4c6b, 0x50f7_b294_36dd_fb53),
        ("longrows:50:2", 0x03c5_29f6_cfa1_ee5a, 0x0e3f_0e84_9c0a_65e6),
        ("banded:200:3:4", 0x9afe_b8f7_58b1_c77e, 0x2934_d507_70b8_2a2b),
        ("lap2d:0", 0xd94d_1218_6c0f_2fb7, 0xd94d_1218_6c0f_2fb7),
        ("uniform:3:0:0", 0xb47b_612d_178f_3776, 0xb47b_612d_178f_3776),
        ("rmat:10:8", 0xc51f_391b_dc4d_0340, 0xa0df_2eef_3786_984f),
        ("circuit:2000", 0xd599_f95a_695d_c809, 0xc3af_db24_28d5_eb37),
        ("web:5000", 0xe7c1_8239_da3d_149e, 0x68b2_c25e_be58_9bc8),
        ("geo:5000", 0xe03c_eb1e_af06_6af8, 0xa8c9_ca89_dd14_29c1),
        ("elast:4", 0x573e_3c6f_3848_0634, 0x2cb6_333f_4328_086f),
        ("graphlap:rmat:9:8", 0x56e6_9a14_b4e0_f78f, 0x56e6_9a14_b4e0_f78f),
    ];
    for (spec, f64_print, f32_print) in pinned {
        assert_eq!(fingerprint(&from_spec::<f64>(spec).unwrap()), f64_print, "{spec} (f64)");
        assert_eq!(fingerprint(&from_spec::<f32>(spec).unwrap()), f32_print, "{spec} (f32)");
    }
}
