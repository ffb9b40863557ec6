//! The transpose product `y = alpha*A^T*x + beta*y`: the host transpose
//! ([`CsrMatrix::transpose`]), the CPU reference ([`reference::spmv_transpose`]), the GPU's
//! [`DeviceCsr::spmv_transpose`] with its cached explicit transpose, and `spgpu spmv
//! --transpose`.
//!
//! The host tests run everywhere. The GPU tests skip with a line on stderr when there is no
//! GPU, and fail instead when `SPGPU_REQUIRE_GPU=1`.

mod common;
use common::{check_spmv, gpu, spgpu_binary};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spgpu::gpu::{DeviceCsr, DeviceVector, KernelChoice};
use spgpu::{gen, reference, CooMatrix, CsrMatrix, Error, Scalar};

/// A random `nrows x ncols` matrix: row lengths uniform in `0..=max_len`, every seventh row
/// empty, and no entry in the columns `j % 5 == 2` (empty columns, empty rows of `A^T`);
/// values in `[-1, 1)`.
fn random_csr<T: Scalar>(nrows: usize, ncols: usize, max_len: usize, seed: u64) -> CsrMatrix<T> {
    let mut rng = StdRng::seed_from_u64(seed);
    let drawn: Vec<u32> = (0..ncols as u32).filter(|j| j % 5 != 2).collect();
    let mut offsets = vec![0u64];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for i in 0..nrows {
        let len = if i % 7 == 3 { 0 } else { rng.random_range(0..=max_len.min(drawn.len())) };
        let mut c: Vec<u32> = rand::seq::index::sample(&mut rng, drawn.len(), len).iter().map(|k| drawn[k]).collect();
        c.sort_unstable();
        for j in c {
            cols.push(j);
            vals.push(T::from_f64(rng.random_range(-1.0..1.0)));
        }
        offsets.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(nrows, ncols, offsets, cols, vals).expect("a valid random matrix")
}

/// The transpose by another road: triplets with rows and columns swapped, through COO.
fn transpose_through_coo<T: Scalar>(a: &CsrMatrix<T>) -> CsrMatrix<T> {
    let mut t = CooMatrix::with_capacity(a.ncols(), a.nrows(), a.nnz()).expect("within the index limit");
    for i in 0..a.nrows() {
        let (cols, vals) = a.row(i);
        for (&c, &v) in cols.iter().zip(vals) {
            t.push(c as usize, i, v).expect("in range");
        }
    }
    t.to_csr()
}

/// Shapes that matter: rectangular both ways, empty rows and columns, no entries, no rows,
/// no columns, 0 x 0, one column, one row.
fn shapes<T: Scalar>() -> Vec<(&'static str, CsrMatrix<T>)> {
    vec![
        ("random 531 x 229", random_csr(531, 229, 9, 1)),
        ("random 229 x 531, rows up to 70", random_csr(229, 531, 70, 2)),
        ("random 1000 x 37", random_csr(1000, 37, 30, 3)),
        ("random 1 x 4000", random_csr(1, 4000, 3000, 4)),
        ("random 4000 x 1", random_csr(4000, 1, 1, 5)),
        ("0 x 0", CsrMatrix::zeros(0, 0).unwrap()),
        ("0 x 17", CsrMatrix::zeros(0, 17).unwrap()),
        ("13 x 0", CsrMatrix::zeros(13, 0).unwrap()),
        ("13 x 17, no entries", CsrMatrix::zeros(13, 17).unwrap()),
        ("lap2d 9", gen::laplacian_2d(9)),
    ]
}

/// Two tests, `$f64` and `$f32`, running `$body::<f64>` and `$body::<f32>` with the test's
/// name.
macro_rules! in_both_precisions {
    ($f64:ident, $f32:ident, $body:ident) => {
        #[test]
        fn $f64() {
            $body::<f64>(stringify!($f64));
        }

        #[test]
        fn $f32() {
            $body::<f32>(stringify!($f32));
        }
    };
}

fn transposes_are_exact<T: Scalar>(_test: &str) {
    for (what, a) in shapes::<T>() {
        let t = a.transpose();
        assert_eq!((t.nrows(), t.ncols(), t.nnz()), (a.ncols(), a.nrows(), a.nnz()), "{what}");
        // every invariant, checked again
        let (r, c, o, ci, v) = t.clone().into_parts();
        CsrMatrix::try_from_parts(r, c, o, ci, v).unwrap_or_else(|e| panic!("{what}: the transpose is invalid: {e}"));
        assert_eq!(t, transpose_through_coo(&a), "{what}");
        for i in 0..a.nrows() {
            for j in 0..a.ncols() {
                assert_eq!(t.get(j, i), a.get(i, j), "{what}: ({i}, {j})");
            }
        }
        assert_eq!(t.transpose(), a, "{what}: transposed twice");
    }
}

in_both_precisions!(transposes_are_exact_f64, transposes_are_exact_f32, transposes_are_exact);

#[test]
fn the_parallel_transpose_is_the_same_on_any_number_of_threads() {
    // past the parallel threshold (65 536 entries), with enough entries per column for
    // several tasks; rectangular, with empty rows and columns
    let a = random_csr::<f64>(20_011, 3_001, 16, 7);
    assert!(a.nnz() > 100_000, "{} entries", a.nnz());
    let want = transpose_through_coo(&a);
    for threads in [1, 2, 3, 8] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        assert!(pool.install(|| a.transpose()) == want, "{threads} threads");
    }
    let wide = random_csr::<f32>(3_001, 20_011, 60, 8);
    assert!(wide.transpose() == transpose_through_coo(&wide));
}

#[test]
fn the_reference_transpose_product_has_the_values_of_the_definition() {
    // A = [1 0 2]      A^T x for x = (1, 10):  [1*1 + 0*10 ]   [ 1]
    //     [0 3 4]                              [0*1 + 3*10 ] = [30]
    //                                          [2*1 + 4*10 ]   [42]
    let a = CsrMatrix::try_from_parts(2, 3, vec![0, 2, 4], vec![0, 2, 1, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    let x = [1.0, 10.0];
    let mut y = vec![f64::NAN; 3];
    // beta == 0: y is not read, NaN does not spread
    reference::spmv_transpose(1.0, &a, &x, 0.0, &mut y).unwrap();
    assert_eq!(y, [1.0, 30.0, 42.0]);
    let mut y = vec![1.0, 2.0, 3.0];
    reference::spmv_transpose(2.0, &a, &x, -1.0, &mut y).unwrap();
    assert_eq!(y, [2.0 - 1.0, 60.0 - 2.0, 84.0 - 3.0]);
    // alpha == 0 only scales y
    let mut y = vec![1.0, 2.0, 3.0];
    reference::spmv_transpose(0.0, &a, &x, 3.0, &mut y).unwrap();
    assert_eq!(y, [3.0, 6.0, 9.0]);
    // f32, with an empty column (column 1 of a 2 x 3 matrix whose middle column is empty)
    let b = CsrMatrix::<f32>::try_from_parts(2, 3, vec![0, 1, 3], vec![2, 0, 2], vec![0.5, -1.0, 0.25]).unwrap();
    let mut y = vec![7.0f32; 3];
    reference::spmv_transpose(1.0, &b, &[2.0, 4.0], 1.0, &mut y).unwrap();
    assert_eq!(y, [7.0 - 4.0, 7.0, 7.0 + 1.0 + 1.0]);
    // the 0 x 0 matrix
    reference::spmv_transpose(1.0, &CsrMatrix::<f64>::zeros(0, 0).unwrap(), &[], 0.0, &mut []).unwrap();
    // no rows: A^T x is 0 (beta y)
    let mut y = vec![5.0; 4];
    reference::spmv_transpose(1.0, &CsrMatrix::<f64>::zeros(0, 4).unwrap(), &[], 0.5, &mut y).unwrap();
    assert_eq!(y, [2.5; 4]);
}

/// The reference transpose product against the reference product of the explicit transpose:
/// both sum each `y[j]` in `f64` in increasing row order of `A`, so they agree exactly.
fn the_reference_is_the_product_of_the_explicit_transpose<T: Scalar>(_test: &str) {
    let mut list = shapes::<T>();
    // past the reference's parallel threshold
    list.push(("random 9001 x 2003, parallel", random_csr(9001, 2003, 40, 9)));
    for (what, a) in list {
        let t = a.transpose();
        let mut rng = StdRng::seed_from_u64(11);
        let x: Vec<T> = (0..a.nrows()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
        let y0: Vec<T> = (0..a.ncols()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
        for (alpha, beta) in [(1.0, 0.0), (-2.5, 0.0), (1.0, 1.0), (0.0, -2.5), (-2.5, 1.0), (0.0, 0.0)] {
            let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
            let mut got = y0.clone();
            reference::spmv_transpose(alpha, &a, &x, beta, &mut got).unwrap();
            let mut want = y0.clone();
            reference::spmv_csr(alpha, &t, &x, beta, &mut want).unwrap();
            assert!(got == want, "{what}, alpha {alpha}, beta {beta}");
            check_spmv(what, &t, alpha, &x, beta, &y0, &got);
        }
    }
}

in_both_precisions!(
    the_reference_is_the_product_of_the_explicit_transpose_f64,
    the_reference_is_the_product_of_the_explicit_transpose_f32,
    the_reference_is_the_product_of_the_explicit_transpose
);

#[test]
fn the_reference_refuses_vectors_of_the_wrong_length() {
    let a = random_csr::<f64>(30, 20, 5, 12);
    let mut y = vec![1.0; 20];
    // x must have the rows' length, y the columns'
    match reference::spmv_transpose(1.0, &a, &[0.0; 20], 0.0, &mut y) {
        Err(Error::DimensionMismatch { op, expected: 30, found: 20 }) => assert!(op.contains("length of x"), "{op}"),
        other => panic!("expected a mismatch of x, got {other:?}"),
    }
    match reference::spmv_transpose(1.0, &a, &[0.0; 30], 0.0, &mut vec![1.0; 30]) {
        Err(Error::DimensionMismatch { op, expected: 20, found: 30 }) => assert!(op.contains("length of y"), "{op}"),
        other => panic!("expected a mismatch of y, got {other:?}"),
    }
    assert_eq!(y, [1.0; 20], "y is untouched");
}

/// A random vector of `n` values in `[-1, 1)`.
fn random_vector<T: Scalar>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect()
}

/// Matrices for the GPU tests: the shapes above and matrices whose transposes take other
/// plans (long rows of `A^T` from a power-law matrix's popular columns, and a plain stencil).
fn gpu_matrices<T: Scalar>() -> Vec<(&'static str, CsrMatrix<T>)> {
    let mut list = shapes::<T>();
    list.push(("powerlaw 20000", gen::from_spec::<T>("powerlaw:20000").unwrap()));
    list.push(("stencil27 12", gen::laplacian_3d_27pt(12)));
    list.push(("uniform 30000 x 700 (long rows of A^T)", gen::from_spec::<T>("uniform:30000:700:12").unwrap()));
    list
}

fn gpu_matches_the_reference<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    for (what, a) in gpu_matrices::<T>() {
        let t = a.transpose();
        let d = DeviceCsr::upload(ctx, &a).unwrap();
        let x = random_vector::<T>(a.nrows(), 21);
        let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
        for (alpha, beta) in [(1.0, 0.0), (-2.5, 0.0), (1.0, 1.0), (0.0, -2.5), (-2.5, 1.0), (0.0, 0.0)] {
            let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
            // beta == 0: y starts as NaN, which must not spread
            let y0 =
                if beta == T::ZERO { vec![T::from_f64(f64::NAN); a.ncols()] } else { random_vector(a.ncols(), 22) };
            let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
            d.spmv_transpose(alpha, &d_x, beta, &mut d_y).unwrap();
            let got = d_y.to_vec().unwrap();
            let what = format!("{what} ({}), alpha {alpha}, beta {beta}", T::NAME);
            check_spmv(&what, &t, alpha, &x, beta, &y0, &got);
            let mut want = y0.clone();
            reference::spmv_transpose(alpha, &a, &x, beta, &mut want).unwrap();
            let err = reference::relative_error(&got, &want);
            assert!(err <= common::spmv_tolerance::<T>() || want.iter().all(|w| *w == T::ZERO), "{what}: {err:e}");
        }
    }
}

in_both_precisions!(
    gpu_transpose_products_match_the_reference_f64,
    gpu_transpose_products_match_the_reference_f32,
    gpu_matches_the_reference
);

/// Every product of `d`'s transpose with `x` (alpha 1.5, beta -1 on `y0`), as bits.
fn product_bits<T: Scalar>(d: &DeviceCsr<T>, x: &DeviceVector<T>, y0: &[T]) -> Vec<u64> {
    let mut y = DeviceVector::from_slice(d.context(), y0).unwrap();
    d.spmv_transpose(T::from_f64(1.5), x, T::from_f64(-1.0), &mut y).unwrap();
    y.to_vec().unwrap().iter().map(|v| v.to_f64().to_bits()).collect()
}

fn gpu_repeats_are_bit_identical_and_reuse_the_transpose<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    for spec in ["powerlaw:30000", "uniform:40000:900:16", "stencil27:14", "circuit:60000"] {
        let a = gen::from_spec::<T>(spec).unwrap();
        let (x, y0) = (random_vector::<T>(a.nrows(), 31), random_vector::<T>(a.ncols(), 32));
        let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
        let d = DeviceCsr::upload(ctx, &a).unwrap();
        assert!(d.cached_transpose().is_none(), "{spec}: nothing is built at upload");
        let first = product_bits(&d, &d_x, &y0);
        let built: *const DeviceCsr<T> = d.cached_transpose().expect("built by the first product");
        for k in 0..5 {
            assert!(product_bits(&d, &d_x, &y0) == first, "{spec} ({}): product {k} differs", T::NAME);
        }
        // the same matrix every time: built once, kept
        assert!(std::ptr::eq(built, d.cached_transpose().unwrap()), "{spec}: the transpose was rebuilt");
        assert!(std::ptr::eq(built, d.prepare_transpose().unwrap()), "{spec}: prepare_transpose rebuilt it");
        let t = d.cached_transpose().unwrap();
        assert_eq!((t.nrows(), t.ncols(), t.nnz()), (a.ncols(), a.nrows(), a.nnz()));
        assert_eq!(t.download().unwrap(), a.transpose(), "{spec}: the cached transpose");
        // built at upload from the host matrix: the same plan, the same bits
        let eager = DeviceCsr::upload_with_transpose(ctx, &a, KernelChoice::Auto).unwrap();
        let e = eager.cached_transpose().expect("built at upload");
        assert_eq!(e.plan().kernel(), t.plan().kernel(), "{spec}");
        assert!(product_bits(&eager, &d_x, &y0) == first, "{spec}: the eager transpose gives other bits");
        let mut want = y0.clone();
        reference::spmv_transpose(T::from_f64(1.5), &a, &x, T::from_f64(-1.0), &mut want).unwrap();
        let got: Vec<T> = first.iter().map(|&b| T::from_f64(f64::from_bits(b))).collect();
        check_spmv(spec, &a.transpose(), T::from_f64(1.5), &x, T::from_f64(-1.0), &y0, &got);
    }
}

in_both_precisions!(
    gpu_repeats_are_bit_identical_and_reuse_the_transpose_f64,
    gpu_repeats_are_bit_identical_and_reuse_the_transpose_f32,
    gpu_repeats_are_bit_identical_and_reuse_the_transpose
);

#[test]
fn gpu_threads_racing_to_the_first_product_build_one_transpose() {
    let Some(ctx) = gpu("gpu_threads_racing_to_the_first_product_build_one_transpose") else { return };
    let a = gen::from_spec::<f64>("powerlaw:40000").unwrap();
    let (x, y0) = (random_vector::<f64>(a.nrows(), 41), random_vector::<f64>(a.ncols(), 42));
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let d = DeviceCsr::upload(ctx, &a).unwrap();
    let results: Vec<(Vec<u64>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                s.spawn(|| {
                    let bits = product_bits(&d, &d_x, &y0);
                    (bits, d.cached_transpose().unwrap() as *const DeviceCsr<f64> as usize)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (bits, at) in &results {
        assert!(*bits == results[0].0, "threads got different products");
        assert_eq!(*at, results[0].1, "threads saw different transposes");
    }
}

#[test]
fn gpu_a_forced_kernel_on_a_leaves_the_transpose_to_its_plan() {
    let Some(ctx) = gpu("gpu_a_forced_kernel_on_a_leaves_the_transpose_to_its_plan") else { return };
    let a = random_csr::<f64>(3001, 1203, 30, 51);
    let x = random_vector::<f64>(a.nrows(), 52);
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let auto = DeviceCsr::upload(ctx, &a).unwrap();
    for choice in [KernelChoice::Scalar, KernelChoice::VectorTpr(4), KernelChoice::Balanced, KernelChoice::Ell] {
        let d = match DeviceCsr::upload_with(ctx, &a, choice) {
            Ok(d) => d,
            // a kernel the plan refuses for this matrix on this device has nothing to test
            Err(e @ (Error::InvalidArgument(_) | Error::Format(_))) => {
                eprintln!("{choice}: not uploaded: {e}");
                continue;
            }
            Err(e) => panic!("{choice}: {e}"),
        };
        let mut y = DeviceVector::<f64>::zeros(ctx, a.ncols()).unwrap();
        d.spmv_transpose(1.0, &d_x, 0.0, &mut y).unwrap();
        let got = y.to_vec().unwrap();
        check_spmv(&format!("{choice}"), &a.transpose(), 1.0, &x, 0.0, &vec![0.0; a.ncols()], &got);
        assert_eq!(
            d.cached_transpose().unwrap().plan().kernel(),
            auto.prepare_transpose().unwrap().plan().kernel(),
            "{choice}: the transpose runs its own plan"
        );
    }
}

#[test]
fn gpu_transpose_gives_an_owned_matrix_and_keeps_nothing() {
    let Some(ctx) = gpu("gpu_transpose_gives_an_owned_matrix_and_keeps_nothing") else { return };
    for (what, a) in shapes::<f32>() {
        let d = DeviceCsr::upload(ctx, &a).unwrap();
        let t = d.transpose().unwrap();
        assert_eq!((t.nrows(), t.ncols(), t.nnz()), (a.ncols(), a.nrows(), a.nnz()), "{what}");
        assert_eq!(t.download().unwrap(), a.transpose(), "{what}");
        assert!(d.cached_transpose().is_none(), "{what}: transpose() keeps nothing");
        // the owned transpose multiplies as A^T
        let x = random_vector::<f32>(a.nrows(), 61);
        let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
        let mut y = DeviceVector::<f32>::zeros(ctx, a.ncols()).unwrap();
        t.spmv(1.0, &d_x, 0.0, &mut y).unwrap();
        check_spmv(what, &a.transpose(), 1.0, &x, 0.0, &vec![0.0; a.ncols()], &y.to_vec().unwrap());
        // and transposed again, it is A
        assert_eq!(t.transpose().unwrap().download().unwrap(), a, "{what}");
    }
}

#[test]
fn gpu_wrong_lengths_are_refused_before_anything_is_built() {
    let Some(ctx) = gpu("gpu_wrong_lengths_are_refused_before_anything_is_built") else { return };
    let a = random_csr::<f64>(40, 25, 6, 71);
    let d = DeviceCsr::upload(ctx, &a).unwrap();
    let x_cols = DeviceVector::<f64>::zeros(ctx, 25).unwrap();
    let x_rows = DeviceVector::<f64>::zeros(ctx, 40).unwrap();
    let mut y_rows = DeviceVector::<f64>::zeros(ctx, 40).unwrap();
    let mut y_cols = DeviceVector::<f64>::zeros(ctx, 25).unwrap();
    // the lengths of A x are those of A^T x swapped: both wrong here
    match d.spmv_transpose(1.0, &x_cols, 0.0, &mut y_cols) {
        Err(Error::DimensionMismatch { op, expected: 40, found: 25 }) => assert!(op.contains("length of x"), "{op}"),
        other => panic!("expected a mismatch of x, got {other:?}"),
    }
    match d.spmv_transpose(1.0, &x_rows, 0.0, &mut y_rows) {
        Err(Error::DimensionMismatch { op, expected: 25, found: 40 }) => assert!(op.contains("length of y"), "{op}"),
        other => panic!("expected a mismatch of y, got {other:?}"),
    }
    assert!(d.cached_transpose().is_none(), "a refused product builds nothing");
    d.spmv_transpose(1.0, &x_rows, 0.0, &mut y_cols).unwrap();
    assert!(d.cached_transpose().is_some());
}

/// Runs the `spgpu` binary; returns (success, stdout, stderr).
fn spgpu(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(spgpu_binary()).args(args).output().expect("spgpu runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn spmv_transpose_on_the_command_line() {
    for precision in ["f64", "f32"] {
        let args = [
            "spmv",
            "gen:uniform:3000:700:9",
            "--transpose",
            "--kernel",
            "auto,scalar,ell",
            "--beta",
            "-0.5",
            "--repeats",
            "2",
            "--launches",
            "3",
            "--json",
            "--precision",
            precision,
        ];
        let (ok, stdout, stderr) = spgpu(&args);
        assert!(ok, "spgpu spmv --transpose failed: {stderr}");
        let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON object");
        assert_eq!(report["transpose"], true);
        assert_eq!((report["rows"].as_u64(), report["cols"].as_u64()), (Some(3000), Some(700)));
        match gpu("spmv_transpose_on_the_command_line") {
            Some(_) => {
                let results = report["results"].as_array().expect("results");
                assert_eq!(results.len(), 3, "{stdout}");
                for r in results {
                    assert!(r.get("error").is_none(), "{r}");
                    let err = r["relative_error"].as_f64().unwrap();
                    assert!(err <= r["tolerance"].as_f64().unwrap(), "{r}");
                }
                assert!(results[0]["transpose_build_ms"].as_f64().is_some(), "auto builds the transpose");
                assert!(results[1]["transpose_build_ms"].is_null(), "a forced kernel runs the explicit transpose");
            }
            None => {
                // the CPU reference only, and the plans of the explicit transpose (700 rows)
                assert!(stderr.contains("ran the CPU reference only"), "{stderr}");
                assert_eq!(report["results"], serde_json::json!([]));
                assert_eq!(report["plans"].as_array().map(Vec::len), Some(2), "{stdout}");
            }
        }
    }
    // the text report says which product it is
    let (ok, stdout, stderr) = spgpu(&["spmv", "gen:lap2d:20", "--transpose", "--repeats", "1", "--launches", "1"]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("400 x 400, 1920 entries, f64 ") && stdout.contains("y = alpha*A^T*x + beta*y"),
        "{stdout}"
    );
}
