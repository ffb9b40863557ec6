//! The CPU reference SpMV: CSR equals ELL equals a dense computation, for several alpha and
//! beta (beta = 0 with NaN in `y` included), in f64 and f32, serial and parallel.

use proptest::prelude::*;
use spgpu::reference::{self, PARALLEL_THRESHOLD};
use spgpu::{CooMatrix, CsrMatrix, EllMatrix, Error};

/// A random small matrix (0 to 8 rows and columns, duplicates summed, empty rows) with
/// vectors `x` and `y` to match; all values are small integers, so results are exact.
fn problem() -> impl Strategy<Value = (CsrMatrix<f64>, Vec<f64>, Vec<f64>)> {
    (0usize..=8, 0usize..=8)
        .prop_flat_map(|(r, c)| {
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
            (Just(r), Just(c), t, prop::collection::vec(-3i8..=3, c), prop::collection::vec(-3i8..=3, r))
        })
        .prop_map(|(r, c, t, x, y)| {
            let mut coo = CooMatrix::new(r, c).unwrap();
            for (i, j, v) in t {
                coo.push(i as usize, j as usize, f64::from(v)).unwrap();
            }
            (coo.to_csr(), x.into_iter().map(f64::from).collect(), y.into_iter().map(f64::from).collect())
        })
}

fn dense_spmv(alpha: f64, a: &CsrMatrix<f64>, x: &[f64], beta: f64, y: &[f64]) -> Vec<f64> {
    let d = a.to_dense();
    (0..a.nrows())
        .map(|i| {
            let ax: f64 = (0..a.ncols()).map(|j| d[i * a.ncols() + j] * x[j]).sum();
            if beta == 0.0 {
                alpha * ax
            } else {
                alpha * ax + beta * y[i]
            }
        })
        .collect()
}

const ALPHAS: [f64; 5] = [1.0, -1.0, 0.5, 2.5, 0.0];
const BETAS: [f64; 4] = [0.0, 1.0, -2.0, 0.5];

proptest! {
    #[test]
    fn csr_equals_ell_equals_dense((a, x, y0) in problem(), ai in 0usize..5, bi in 0usize..4) {
        let (alpha, beta) = (ALPHAS[ai], BETAS[bi]);
        let e = EllMatrix::try_from_csr_with_limit(&a, usize::MAX).unwrap();
        // With beta = 0, y must not be read: start from NaN.
        let start: Vec<f64> = if beta == 0.0 { vec![f64::NAN; a.nrows()] } else { y0.clone() };
        let expect = dense_spmv(alpha, &a, &x, beta, &y0);
        let mut y_csr = start.clone();
        reference::spmv_csr(alpha, &a, &x, beta, &mut y_csr).unwrap();
        let mut y_ell = start.clone();
        reference::spmv_ell(alpha, &e, &x, beta, &mut y_ell).unwrap();
        prop_assert_eq!(&y_csr, &expect);
        prop_assert_eq!(&y_ell, &expect);
        prop_assert!(y_csr.iter().all(|v| !v.is_nan()));

        // The same in f32: exact here, since every value is a small integer or half.
        let a32 = a.cast::<f32>();
        let e32 = EllMatrix::try_from_csr_with_limit(&a32, usize::MAX).unwrap();
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let start32: Vec<f32> = start.iter().map(|&v| v as f32).collect();
        let expect32: Vec<f32> = expect.iter().map(|&v| v as f32).collect();
        let mut y = start32.clone();
        reference::spmv_csr(alpha as f32, &a32, &x32, beta as f32, &mut y).unwrap();
        prop_assert_eq!(&y, &expect32);
        let mut y = start32;
        reference::spmv_ell(alpha as f32, &e32, &x32, beta as f32, &mut y).unwrap();
        prop_assert_eq!(&y, &expect32);
    }
}

#[test]
fn f32_accumulates_in_f64() {
    // In f32, 1e8 + 1 rounds back to 1e8 and the row would sum to 0; in f64 it sums to 1.
    let a = CsrMatrix::try_from_parts(1, 3, vec![0, 3], vec![0, 1, 2], vec![1e8f32, 1.0, -1e8]).unwrap();
    let mut y = [f32::NAN];
    reference::spmv_csr(1.0, &a, &[1.0; 3], 0.0, &mut y).unwrap();
    assert_eq!(y, [1.0]);
    let e = EllMatrix::try_from_csr(&a).unwrap();
    let mut y = [f32::NAN];
    reference::spmv_ell(1.0, &e, &[1.0; 3], 0.0, &mut y).unwrap();
    assert_eq!(y, [1.0]);
}

#[test]
fn beta_nonzero_reads_y_and_nan_in_y_spreads() {
    let a = CsrMatrix::<f64>::identity(2).unwrap();
    let mut y = [f64::NAN, 1.0];
    reference::spmv_csr(1.0, &a, &[1.0, 1.0], 1.0, &mut y).unwrap();
    assert!(y[0].is_nan());
    assert_eq!(y[1], 2.0);
}

#[test]
fn dimension_mismatch_is_an_error_and_leaves_y_alone() {
    let a = spgpu::gen::laplacian_2d::<f64>(2); // 4 x 4
    let e = EllMatrix::try_from_csr(&a).unwrap();
    let mut y = vec![7.0; 4];
    let err = reference::spmv_csr(1.0, &a, &[1.0; 3], 0.0, &mut y).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { expected: 4, found: 3, .. }), "{err}");
    let err = reference::spmv_ell(1.0, &e, &[1.0; 5], 0.0, &mut y).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { expected: 4, found: 5, .. }), "{err}");
    assert_eq!(y, vec![7.0; 4]);
    let mut short = vec![0.0; 2];
    let err = reference::spmv_csr(1.0, &a, &[1.0; 4], 0.0, &mut short).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { expected: 4, found: 2, .. }), "{err}");
    let err = reference::spmv_ell(1.0, &e, &[1.0; 4], 0.0, &mut short).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { expected: 4, found: 2, .. }), "{err}");
    assert!(err.to_string().contains("length of y"), "{err}");
}

#[test]
fn parallel_path_matches_a_serial_sum_on_any_thread_count() {
    // Above the threshold, rows run in parallel; each row still sums in order.
    let a = spgpu::gen::random_uniform::<f64>(3000, 2500, 40, 7);
    assert!(a.nnz() > PARALLEL_THRESHOLD);
    let x: Vec<f64> = (0..a.ncols()).map(|j| ((j * 37) % 101) as f64 / 7.0 - 5.0).collect();
    let y0: Vec<f64> = (0..a.nrows()).map(|i| (i % 13) as f64 - 6.0).collect();
    let serial: Vec<f64> = (0..a.nrows())
        .map(|i| {
            let (cols, vals) = a.row(i);
            let sum: f64 = cols.iter().zip(vals).map(|(&c, &v)| v * x[c as usize]).sum();
            1.5 * sum - 0.5 * y0[i]
        })
        .collect();
    let run = |threads: usize, beta: f64, start: Vec<f64>| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut y = start;
            reference::spmv_csr(1.5, &a, &x, beta, &mut y).unwrap();
            y
        })
    };
    let one = run(1, -0.5, y0.clone());
    assert_eq!(one, serial);
    assert_eq!(run(4, -0.5, y0.clone()), serial);
    // beta = 0 on the parallel path: NaN in y does not spread.
    let y = run(3, 0.0, vec![f64::NAN; a.nrows()]);
    assert!(y.iter().all(|v| v.is_finite()));
    let e = EllMatrix::try_from_csr(&a).unwrap();
    let mut ye = y0.clone();
    reference::spmv_ell(1.5, &e, &x, -0.5, &mut ye).unwrap();
    assert_eq!(ye, serial);
}

#[test]
fn relative_error_cases() {
    assert_eq!(reference::relative_error(&[1.0f64, 2.0], &[1.0, 2.0]), 0.0);
    assert!((reference::relative_error(&[3.0f64, 4.0], &[0.0, 5.0]) - (10.0f64).sqrt() / 5.0).abs() < 1e-15);
    // Against a zero reference: the absolute error.
    assert_eq!(reference::relative_error(&[3.0f32, 4.0], &[0.0, 0.0]), 5.0);
    assert_eq!(reference::relative_error(&[1.0f64], &[1.0, 2.0]), f64::INFINITY);
    assert_eq!(reference::relative_error(&[f64::NAN, 1.0], &[1.0, 1.0]), f64::INFINITY);
    assert_eq!(reference::relative_error::<f64>(&[], &[]), 0.0);
}
