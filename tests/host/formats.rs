//! Host formats: COO -> CSR -> ELL -> CSR round trips, accessors and row statistics, over
//! random small matrices (0 to 8 rows and columns, empty rows, duplicate triplets) and a
//! few hand-written edge cases.

use proptest::prelude::*;
use spgpu::format::DEFAULT_MAX_ELL_PADDING_RATIO;
use spgpu::{CooMatrix, CsrMatrix, EllMatrix, FormatError, RowStats, ELL_PADDING};

/// A random small COO matrix as `(nrows, ncols, triplets)` (empty rows, duplicates, now and
/// then one full row); values are small integers so that sums of duplicates are exact.
fn triplets() -> impl Strategy<Value = (usize, usize, Vec<(u32, u32, i8)>)> {
    (0usize..=8, 0usize..=8).prop_flat_map(|(r, c)| {
        let t = if r == 0 || c == 0 {
            Just(Vec::new()).boxed()
        } else {
            (prop::collection::vec((0..r as u32, 0..c as u32, -4i8..=4), 0..=24), prop::option::of(0..r as u32))
                .prop_map(move |(mut t, long)| {
                    // Sometimes one long row: every column of row `long` stored.
                    if let Some(i) = long {
                        t.extend((0..c as u32).map(|j| (i, j, 1)));
                    }
                    t
                })
                .boxed()
        };
        (Just(r), Just(c), t)
    })
}

fn coo_of(r: usize, c: usize, t: &[(u32, u32, i8)]) -> CooMatrix<f64> {
    let mut coo = CooMatrix::new(r, c).unwrap();
    for &(i, j, v) in t {
        coo.push(i as usize, j as usize, f64::from(v)).unwrap();
    }
    coo
}

/// The dense matrix the triplets describe (duplicates summed), row-major, and which
/// positions are stored at all.
fn dense_of(r: usize, c: usize, t: &[(u32, u32, i8)]) -> (Vec<f64>, Vec<bool>) {
    let mut d = vec![0.0; r * c];
    let mut stored = vec![false; r * c];
    for &(i, j, v) in t {
        d[i as usize * c + j as usize] += f64::from(v);
        stored[i as usize * c + j as usize] = true;
    }
    (d, stored)
}

proptest! {
    #[test]
    fn coo_to_csr_sums_duplicates_and_sorts((r, c, t) in triplets()) {
        let coo = coo_of(r, c, &t);
        prop_assert_eq!(coo.nnz(), t.len());
        let a = coo.to_csr();
        let (dense, stored) = dense_of(r, c, &t);
        prop_assert_eq!((a.nrows(), a.ncols()), (r, c));
        prop_assert_eq!(a.to_dense(), dense.clone());
        prop_assert_eq!(a.nnz(), stored.iter().filter(|&&s| s).count());
        // The result satisfies every invariant: rebuilding it through the checked
        // constructor succeeds and gives the same matrix.
        let (nr, nc, o, ci, v) = a.clone().into_parts();
        let rebuilt = CsrMatrix::try_from_parts(nr, nc, o, ci, v);
        prop_assert_eq!(rebuilt, Ok(a.clone()));
        // The same through try_from_triplets and the From conversions.
        let rows: Vec<u32> = t.iter().map(|e| e.0).collect();
        let cols: Vec<u32> = t.iter().map(|e| e.1).collect();
        let vals: Vec<f64> = t.iter().map(|e| f64::from(e.2)).collect();
        let coo2 = CooMatrix::try_from_triplets(r, c, rows, cols, vals).unwrap();
        prop_assert_eq!(&coo2, &coo);
        prop_assert_eq!(&CsrMatrix::from(&coo2), &a);
        prop_assert_eq!(&CsrMatrix::from(coo2), &a);
        // Accessors agree with the dense matrix.
        for i in 0..r {
            let (cols, vals) = a.row(i);
            prop_assert_eq!(cols.len(), a.row_len(i));
            prop_assert!(cols.windows(2).all(|w| w[0] < w[1]));
            for (&j, &v) in cols.iter().zip(vals) {
                prop_assert_eq!(v, dense[i * c + j as usize]);
            }
            for j in 0..c {
                let expect = if stored[i * c + j] { Some(dense[i * c + j]) } else { None };
                prop_assert_eq!(a.get(i, j), expect);
            }
        }
        prop_assert_eq!(a.get(r, 0), None);
        prop_assert_eq!(a.get(0, c), None);
        let diag: Vec<f64> = (0..r.min(c)).map(|i| dense[i * c + i]).collect();
        prop_assert_eq!(a.diagonal(), diag);
    }

    #[test]
    fn coo_csr_ell_csr_round_trip((r, c, t) in triplets()) {
        let a = coo_of(r, c, &t).to_csr();
        let e = EllMatrix::try_from_csr_with_limit(&a, usize::MAX).unwrap();
        let width = (0..r).map(|i| a.row_len(i)).max().unwrap_or(0);
        prop_assert_eq!(e.width(), width);
        prop_assert_eq!((e.nrows(), e.ncols(), e.nnz()), (r, c, a.nnz()));
        prop_assert_eq!(e.col_indices().len(), width * r);
        prop_assert_eq!(e.values().len(), width * r);
        // Column-major layout: slot k of row i at k * nrows + i; padding after the entries.
        for i in 0..r {
            let (cols, vals) = a.row(i);
            for k in 0..width {
                let (col, val) = (e.col_indices()[k * r + i], e.values()[k * r + i]);
                if k < cols.len() {
                    prop_assert_eq!((col, val), (cols[k], vals[k]));
                } else {
                    prop_assert_eq!((col, val), (ELL_PADDING, 0.0));
                }
            }
            let row: Vec<(u32, f64)> = e.row(i).collect();
            let expect: Vec<(u32, f64)> = cols.iter().copied().zip(vals.iter().copied()).collect();
            prop_assert_eq!(row, expect);
        }
        prop_assert_eq!(&e.to_csr(), &a);
        prop_assert_eq!(&CsrMatrix::from(&e), &a);
        // The default limit: ratio times max(nnz, nrows) slots.
        let limit = DEFAULT_MAX_ELL_PADDING_RATIO * a.nnz().max(r);
        match EllMatrix::try_from_csr(&a) {
            Ok(d) => {
                prop_assert!(width * r <= limit);
                prop_assert_eq!(d, e);
            }
            Err(err) => {
                prop_assert!(width * r > limit);
                prop_assert_eq!(
                    err,
                    FormatError::EllPaddingLimit { width, nrows: r, nnz: a.nnz(), padded: width * r, limit }
                );
            }
        }
    }

    #[test]
    fn csr_coo_csr_and_transpose((r, c, t) in triplets()) {
        let a = coo_of(r, c, &t).to_csr();
        let coo = CooMatrix::from(&a);
        prop_assert_eq!(coo.nnz(), a.nnz());
        prop_assert_eq!(&coo.to_csr(), &a);
        prop_assert_eq!(&CooMatrix::from(a.clone()), &coo);
        let at = a.transpose();
        prop_assert_eq!((at.nrows(), at.ncols(), at.nnz()), (c, r, a.nnz()));
        let d = a.to_dense();
        let dt = at.to_dense();
        for i in 0..r {
            for j in 0..c {
                prop_assert_eq!(d[i * c + j], dt[j * r + i]);
                prop_assert_eq!(a.get(i, j), at.get(j, i));
            }
        }
        prop_assert_eq!(&at.transpose(), &a);
        // A + A^T (square part) is symmetric; its pattern is too.
        if r == c {
            let s = {
                let mut m = CooMatrix::from(&a);
                let tc = CooMatrix::from(&at);
                for k in 0..tc.nnz() {
                    m.push(tc.row_indices()[k] as usize, tc.col_indices()[k] as usize, tc.values()[k]).unwrap();
                }
                m.to_csr()
            };
            prop_assert!(s.is_symmetric());
            prop_assert!(s.is_structurally_symmetric());
            prop_assert_eq!(a.is_symmetric(), a == at);
        } else {
            prop_assert!(!a.is_symmetric());
            prop_assert!(!a.is_structurally_symmetric());
        }
        // Casting small integers to f32 and back is exact.
        prop_assert_eq!(&a.cast::<f32>().cast::<f64>(), &a);
    }

    #[test]
    fn row_stats_match_the_rows((r, c, t) in triplets()) {
        let a = coo_of(r, c, &t).to_csr();
        let s = a.row_stats();
        let lens: Vec<usize> = (0..r).map(|i| a.row_len(i)).collect();
        prop_assert_eq!((s.nrows, s.ncols, s.nnz), (r, c, a.nnz()));
        prop_assert_eq!(s.min, lens.iter().copied().min().unwrap_or(0));
        prop_assert_eq!(s.max, lens.iter().copied().max().unwrap_or(0));
        prop_assert_eq!(s.empty_rows, lens.iter().filter(|&&l| l == 0).count());
        let mean = if r == 0 { 0.0 } else { a.nnz() as f64 / r as f64 };
        prop_assert!((s.mean - mean).abs() < 1e-12);
        let var = if r == 0 { 0.0 } else { lens.iter().map(|&l| (l as f64 - mean).powi(2)).sum::<f64>() / r as f64 };
        prop_assert!((s.std_dev - var.sqrt()).abs() < 1e-9);
        prop_assert_eq!(s.histogram.iter().sum::<usize>(), r);
        for (k, &count) in s.histogram.iter().enumerate() {
            let (lo, hi) = RowStats::class_range(k);
            prop_assert_eq!(count, lens.iter().filter(|&&l| l >= lo && l <= hi).count());
        }
        if let Some(&last) = s.histogram.last() {
            prop_assert!(last > 0, "no trailing empty classes");
        }
        prop_assert_eq!(&RowStats::from_lengths(lens, c), &s);
    }
}

#[test]
fn empty_shapes_are_valid() {
    for (r, c) in [(0, 0), (0, 5), (5, 0), (3, 4)] {
        let a = CsrMatrix::<f64>::zeros(r, c).unwrap();
        assert_eq!((a.nrows(), a.ncols(), a.nnz()), (r, c, 0));
        assert_eq!(a.row_offsets(), vec![0; r + 1].as_slice());
        assert_eq!(CsrMatrix::try_from_parts(r, c, vec![0; r + 1], vec![], vec![]), Ok(a.clone()));
        let e = EllMatrix::try_from_csr(&a).unwrap();
        assert_eq!((e.width(), e.col_indices().len()), (0, 0));
        assert_eq!(e.to_csr(), a);
        assert_eq!(CooMatrix::from(&a).to_csr(), a);
        let s = a.row_stats();
        assert_eq!((s.min, s.max, s.empty_rows, s.mean), (0, 0, r, 0.0));
        assert_eq!(s.histogram, if r == 0 { vec![] } else { vec![r] });
        assert_eq!(a.transpose(), CsrMatrix::zeros(c, r).unwrap());
    }
}

#[test]
fn identity_and_explicit_zeros() {
    let i3 = CsrMatrix::<f32>::identity(3).unwrap();
    assert_eq!(i3.to_dense(), vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    assert!(i3.is_symmetric());
    assert_eq!(CsrMatrix::<f64>::identity(0).unwrap().nnz(), 0);
    // A duplicate pair summing to zero stays stored as an explicit zero.
    let mut coo = CooMatrix::<f64>::new(2, 2).unwrap();
    coo.push(1, 1, 2.5).unwrap();
    coo.push(1, 1, -2.5).unwrap();
    let a = coo.to_csr();
    assert_eq!((a.nnz(), a.get(1, 1)), (1, Some(0.0)));
}

#[test]
fn duplicates_sum_in_input_order() {
    // 1e16 + 1 + 1 in f64 rounds differently by order; summing in input order is
    // deterministic: ((1e16 + 1) + 1) = 1e16 (each +1 is lost), while 1 + 1 + 1e16 = 1e16 + 2.
    let mut coo = CooMatrix::<f64>::new(1, 1).unwrap();
    for v in [1e16, 1.0, 1.0] {
        coo.push(0, 0, v).unwrap();
    }
    assert_eq!(coo.to_csr().get(0, 0), Some(1e16));
    let mut coo = CooMatrix::<f64>::new(1, 1).unwrap();
    for v in [1.0, 1.0, 1e16] {
        coo.push(0, 0, v).unwrap();
    }
    assert_eq!(coo.to_csr().get(0, 0), Some(1e16 + 2.0));
}

#[test]
fn values_mut_keeps_the_pattern() {
    let mut a = spgpu::gen::laplacian_2d::<f64>(3);
    let pattern = (a.row_offsets().to_vec(), a.col_indices().to_vec());
    a.values_mut().iter_mut().for_each(|v| *v *= 2.0);
    assert_eq!(a.get(4, 4), Some(8.0));
    assert_eq!((a.row_offsets().to_vec(), a.col_indices().to_vec()), pattern);
}

#[test]
fn one_long_row_in_ell() {
    // A 6 x 6 matrix whose row 2 holds 5 entries and other rows one each: width 5, 30 slots
    // for 10 entries, exactly the default limit (3 x 10).
    let mut coo = CooMatrix::<f64>::new(6, 6).unwrap();
    for j in 0..5 {
        coo.push(2, j, j as f64 + 1.0).unwrap();
    }
    for i in [0, 1, 3, 4, 5] {
        coo.push(i, i, 10.0).unwrap();
    }
    let a = coo.to_csr();
    let e = EllMatrix::try_from_csr(&a).unwrap();
    assert_eq!(e.width(), 5);
    assert_eq!(e.col_indices().iter().filter(|&&c| c == ELL_PADDING).count(), 30 - 10);
    assert_eq!(e.to_csr(), a);
}

#[test]
fn row_stats_histogram_classes() {
    assert_eq!(
        (RowStats::class_of(0), RowStats::class_of(1), RowStats::class_of(2), RowStats::class_of(3)),
        (0, 1, 2, 2)
    );
    assert_eq!((RowStats::class_of(4), RowStats::class_of(7), RowStats::class_of(8)), (3, 3, 4));
    assert_eq!(RowStats::class_of(usize::MAX), 64);
    assert_eq!(RowStats::class_range(0), (0, 0));
    assert_eq!(RowStats::class_range(1), (1, 1));
    assert_eq!(RowStats::class_range(4), (8, 15));
    assert_eq!(RowStats::class_range(64), (1 << 63, usize::MAX));
    for len in [1usize, 5, 1000, 1 << 40] {
        let (lo, hi) = RowStats::class_range(RowStats::class_of(len));
        assert!(lo <= len && len <= hi);
    }
    let s = RowStats::from_lengths([0, 1, 2, 3, 4, 20000], 7);
    assert_eq!(s.histogram, vec![1, 1, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    assert_eq!((s.min, s.max, s.nnz, s.empty_rows), (0, 20000, 20010, 1));
    let text = s.to_string();
    assert!(text.starts_with("row lengths: min 0, mean 3335.00, max 20000"), "{text}");
    assert!(text.contains("16384-32767 |"), "{text}");
    assert!(!text.contains("32-63"), "empty classes are not printed: {text}");
}

#[test]
fn unchecked_constructor_still_asserts_the_cheap_conditions() {
    /// `(nrows, row_offsets, col_indices, values)` of a 4-column matrix.
    type Parts = (usize, Vec<u64>, Vec<u32>, Vec<f64>);
    let cases: Vec<Parts> = vec![
        (2, vec![0, 1], vec![0], vec![1.0]),               // offsets too short
        (1, vec![1, 1], vec![0], vec![1.0]),               // first offset not 0
        (1, vec![0, 2], vec![0], vec![1.0]),               // last offset not nnz
        (1, vec![0, 1], vec![0], vec![1.0, 2.0]),          // lengths differ
        (spgpu::INDEX_LIMIT + 1, vec![0], vec![], vec![]), // too many rows
    ];
    for (nrows, offsets, cols, vals) in cases {
        let r = std::panic::catch_unwind(|| {
            // SAFETY: every case breaks an O(1) condition, which the constructor asserts
            // before it builds anything.
            unsafe { CsrMatrix::from_parts_unchecked(nrows, 4, offsets, cols, vals) }
        });
        assert!(r.is_err(), "nrows {nrows}: expected a panic");
    }
    // SAFETY: a valid 1 x 4 matrix with one entry.
    let ok = unsafe { CsrMatrix::from_parts_unchecked(1, 4, vec![0, 1], vec![3], vec![2.0]) };
    assert_eq!(ok.get(0, 3), Some(2.0));
}

#[test]
fn row_stats_std_dev_has_no_cancellation() {
    // Mean 1e9, standard deviation exactly 1: in f64, sum_sq / n - mean^2 loses it all.
    let s = RowStats::from_lengths([1_000_000_001usize, 999_999_999].repeat(1000), 5);
    assert_eq!(s.mean, 1e9);
    assert_eq!(s.std_dev, 1.0);
    let s = RowStats::from_lengths([3usize, 3, 3], 5);
    assert_eq!(s.std_dev, 0.0);
}
