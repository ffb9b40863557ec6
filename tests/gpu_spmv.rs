//! GPU SpMV against the CPU reference: every kernel, both precisions, awkward shapes, every
//! (alpha, beta) in {0, 1, -2.5}^2, repeated calls, and the matrices of `SPGPU_MATRICES`.
//!
//! Each test skips with a line on stderr when there is no GPU, and fails instead when
//! `SPGPU_REQUIRE_GPU=1`; the `SPGPU_MATRICES` tests likewise without that folder, failing
//! instead when `SPGPU_REQUIRE_MATRICES=1`.

mod common;
use common::{check_spmv as check, external_matrices, gpu, spgpu_binary};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spgpu::gpu::balance::RowShape;
use spgpu::gpu::hot::{HotChoice, HotColumns};
use spgpu::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, KernelChoice, SpmvKernel, SpmvPlan};
use spgpu::{gen, reference, CsrMatrix, EllMatrix, Error, Scalar};

/// A random `nrows x ncols` CSR matrix: row lengths uniform in `0..=max_len` (capped at
/// `ncols`), about `empty_every`-th row forced empty, values in `[-1, 1)`.
fn random_csr(nrows: usize, ncols: usize, max_len: usize, empty_every: usize, seed: u64) -> CsrMatrix<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut offsets = vec![0u64];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for i in 0..nrows {
        let len = if empty_every > 0 && i % empty_every == 3 { 0 } else { rng.random_range(0..=max_len.min(ncols)) };
        let mut c = rand::seq::index::sample(&mut rng, ncols, len).into_vec();
        c.sort_unstable();
        for j in c {
            cols.push(j as u32);
            vals.push(rng.random_range(-1.0..1.0));
        }
        offsets.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(nrows, ncols, offsets, cols, vals).expect("a valid random matrix")
}

/// A matrix with one row of `long` entries (row `at`) among rows of 0..=4 entries.
fn one_long_row(nrows: usize, ncols: usize, at: usize, long: usize, seed: u64) -> CsrMatrix<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut offsets = vec![0u64];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for i in 0..nrows {
        let len = if i == at { long } else { rng.random_range(0..=4usize) };
        let mut c = rand::seq::index::sample(&mut rng, ncols, len).into_vec();
        c.sort_unstable();
        for j in c {
            cols.push(j as u32);
            vals.push(rng.random_range(0.5..1.5));
        }
        offsets.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(nrows, ncols, offsets, cols, vals).expect("a valid matrix")
}

/// The test matrices, by name.
fn matrices() -> Vec<(&'static str, CsrMatrix<f64>)> {
    vec![
        ("random 531x229 with empty rows", random_csr(531, 229, 9, 7, 1)),
        ("random 229x531 (wide), rows up to 70", random_csr(229, 531, 70, 11, 2)),
        ("random 1000x37 (tall)", random_csr(1000, 37, 37, 5, 3)),
        ("random 777x777, rows up to 200", random_csr(777, 777, 200, 13, 4)),
        ("0 x 0", CsrMatrix::zeros(0, 0).unwrap()),
        ("0 rows x 17", CsrMatrix::zeros(0, 17).unwrap()),
        ("13 x 0", CsrMatrix::zeros(13, 0).unwrap()),
        ("no entries 13 x 17", CsrMatrix::zeros(13, 17).unwrap()),
        ("one row of 100000", full_row(100_000, 5)),
        ("one long row among short ones", one_long_row(301, 100_003, 7, 100_000, 6)),
        ("lap2d 23", gen::laplacian_2d(23)),
        ("stencil27 7", gen::laplacian_3d_27pt(7)),
        ("one row holds 90% of the entries", lengths_csr(&ninety_percent_row(), 60_000, 9)),
        ("one column", random_csr(5000, 1, 1, 3, 10)),
        (
            "rows at the chunk boundaries",
            lengths_csr(&[2048, 2049, 0, 4096, 1, 4097, 6000, 2047, 1024, 1025, 1023], 8192, 11),
        ),
        ("many long rows among short ones", lengths_csr(&many_long_rows(), 10_000, 12)),
        ("sparse rows, up to two per thread", lengths_csr(&sparse_rows(), 6000, 14)),
        ("few sparse rows, chunk-major", lengths_csr(&few_sparse_rows(), 6000, 15)),
        (
            // the vector kernel reads a row of 32 * TPR entries or more 4 entries per lane at a
            // time: lengths around that threshold for every TPR, and remainders of 0 to 3
            "rows at the vector kernel's batch thresholds",
            lengths_csr(
                &[63, 64, 65, 67, 127, 128, 131, 255, 256, 258, 511, 512, 513, 1023, 1024, 1027, 0, 1, 3001],
                4096,
                13,
            ),
        ),
    ]
}

/// 3000 rows of 0..=4 entries, and row 1500 with 9 times all of them together.
fn ninety_percent_row() -> Vec<usize> {
    let mut l: Vec<usize> = (0..3000).map(|i| (i * 7) % 5).collect();
    l[1500] = 9 * l.iter().sum::<usize>();
    l
}

/// 4000 rows, three in four empty and the others of 1 or 2 entries (row blocks of the
/// default shape then hold more rows than threads: two per thread), with rows of 64 and 65
/// entries (a thread's two rows stay within `MAX_STEPS` with the first, not the second) and
/// rows of two and three chunks.
fn sparse_rows() -> Vec<usize> {
    let mut l: Vec<usize> = (0..4000).map(|i| if i % 4 == 0 { 1 + (i / 4) % 2 } else { 0 }).collect();
    l[1000] = 64;
    l[2000] = 65;
    l[2500] = 3000;
    l[3999] = 5000;
    l
}

#[test]
fn sparse_rows_fill_row_blocks_past_one_row_per_thread() {
    // not a GPU test: that the GPU tests on the sparse matrices run blocks of two rows per
    // thread, in row order and in chunk-major order
    use spgpu::gpu::balance::{RowBlocks, LONG_FLAG};
    let stream_rows = |b: &RowBlocks| -> Vec<usize> {
        b.block_row
            .windows(2)
            .filter(|w| w[0] & LONG_FLAG == 0)
            .map(|w| (w[1] & !LONG_FLAG) as usize - w[0] as usize)
            .collect()
    };
    let b = RowBlocks::new(lengths_csr(&sparse_rows(), 6000, 14).row_offsets());
    // 512 rows a block, cut before the row of 65 (two rows of a thread past MAX_STEPS), then
    // a block of one row per thread up to the first long row (a chunk block)
    assert_eq!(b.block_row[..7], [0, 512, 1024, 1536, 2000, 2256, 2500 | LONG_FLAG]);
    assert!(!b.sweep);
    let few = RowBlocks::new(lengths_csr(&few_sparse_rows(), 6000, 15).row_offsets());
    assert!(few.sweep, "fewer rows than SWEEP_MAX_ROWS with long rows: chunk-major order");
    for rows in [stream_rows(&b), stream_rows(&few)] {
        assert!(rows.iter().any(|&r| r > RowShape::DEFAULT.threads), "{rows:?}");
        assert!(rows.iter().all(|&r| r <= RowShape::DEFAULT.rows), "{rows:?}");
    }
}

/// The first 2000 rows of [`sparse_rows`] with rows of three chunks at 700 and 1500: few
/// enough rows for chunk-major order.
fn few_sparse_rows() -> Vec<usize> {
    let mut l = sparse_rows();
    l.truncate(2000);
    l[700] = 5000;
    l[1500] = 4500;
    l
}

/// 20000 rows of 0..=6 entries with every 997th row of 3000 to 9000.
fn many_long_rows() -> Vec<usize> {
    (0..20_000).map(|i| if i % 997 == 5 { 3000 + (i * 13) % 6000 } else { (i * 11) % 7 }).collect()
}

/// A matrix with the given row lengths, random distinct columns below `ncols` and values in
/// `[-1, 1)`.
fn lengths_csr(lengths: &[usize], ncols: usize, seed: u64) -> CsrMatrix<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut offsets = vec![0u64];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for &len in lengths {
        let mut c = rand::seq::index::sample(&mut rng, ncols, len.min(ncols)).into_vec();
        c.sort_unstable();
        for j in c {
            cols.push(j as u32);
            vals.push(rng.random_range(-1.0..1.0));
        }
        offsets.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(lengths.len(), ncols, offsets, cols, vals).expect("a valid matrix")
}

/// A 1 x n matrix whose single row holds all `n` columns.
fn full_row(n: usize, seed: u64) -> CsrMatrix<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let cols: Vec<u32> = (0..n as u32).collect();
    let vals: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    CsrMatrix::try_from_parts(1, n, vec![0, n as u64], cols, vals).unwrap()
}

/// A matrix uploaded for one kernel.
enum Uploaded<T: Scalar> {
    Csr(DeviceCsr<T>),
    Ell(DeviceEll<T>),
}

impl<T: Scalar> Uploaded<T> {
    fn spmv(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> spgpu::Result<()> {
        match self {
            Uploaded::Csr(m) => m.spmv(alpha, x, beta, y),
            Uploaded::Ell(m) => m.spmv(alpha, x, beta, y),
        }
    }
}

/// Every kernel choice (`auto` and each forced kernel), ELL when its padding stays within the
/// default limit, the balanced kernel with each other shape of row blocks, plus a
/// `DeviceEll` uploaded directly.
fn uploads<T: Scalar>(ctx: &'static Context, a: &CsrMatrix<T>) -> Vec<(String, Uploaded<T>)> {
    let mut out = Vec::new();
    let mut choices = vec![KernelChoice::Auto];
    choices.extend(KernelChoice::forced(ctx.warp_size()));
    for choice in choices {
        match DeviceCsr::upload_with(ctx, a, choice) {
            Ok(d) => out.push((format!("{choice} ({})", d.plan().kernel()), Uploaded::Csr(d))),
            Err(Error::Format(e)) if choice == KernelChoice::Ell => println!("  (ELL skipped: {e})"),
            Err(Error::InvalidArgument(e)) if choice == KernelChoice::Sell => println!("  (SELL skipped: {e})"),
            Err(e) => panic!("upload with {choice}: {e}"),
        }
    }
    for shape in RowShape::ALL.into_iter().filter(|&s| s != RowShape::DEFAULT) {
        let d = DeviceCsr::upload_with(ctx, a, KernelChoice::BalancedThreads(shape.threads as u32))
            .expect("upload balanced");
        out.push((format!("balanced, {} threads per block", shape.threads), Uploaded::Csr(d)));
    }
    for parts in [2, 3] {
        let d = DeviceCsr::upload_in_column_parts(ctx, a, parts).expect("upload in column parts");
        out.push((format!("balanced in {} column parts", d.plan().column_parts()), Uploaded::Csr(d)));
    }
    if let Ok(e) = EllMatrix::try_from_csr_with_limit(a, 4 << 20) {
        out.push(("DeviceEll".to_string(), Uploaded::Ell(DeviceEll::upload(ctx, &e).expect("upload ELL"))));
    }
    out
}

fn random_vec<T: Scalar>(rng: &mut StdRng, n: usize) -> Vec<T> {
    (0..n).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect()
}

/// The `y` a product starts from: NaN when `beta` is 0 (the kernels must not read it, and a
/// read would spread), else random.
fn start_y<T: Scalar>(rng: &mut StdRng, n: usize, beta: T) -> Vec<T> {
    if beta == T::ZERO {
        vec![T::from_f64(f64::NAN); n]
    } else {
        random_vec(rng, n)
    }
}

fn every_kernel_matches_the_reference<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    let mut rng = StdRng::seed_from_u64(2026);
    let scalars = [0.0, 1.0, -2.5];
    for (name, a64) in matrices() {
        let a: CsrMatrix<T> = a64.cast();
        println!("{test}: {name} ({} x {}, {} entries)", a.nrows(), a.ncols(), a.nnz());
        for (kernel, m) in uploads(ctx, &a) {
            for &alpha in &scalars {
                for &beta in &scalars {
                    let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
                    let x = random_vec::<T>(&mut rng, a.ncols());
                    // beta == 0 must not read y: poison it with NaN.
                    let y0 = start_y::<T>(&mut rng, a.nrows(), beta);
                    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
                    let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
                    m.spmv(alpha, &d_x, beta, &mut d_y).unwrap();
                    let got = d_y.to_vec().unwrap();
                    let what = format!("{name}, {kernel}, {}, alpha {alpha}, beta {beta}", T::NAME);
                    check(&what, &a, alpha, &x, beta, &y0, &got);
                }
            }
        }
    }
}

#[test]
fn every_kernel_matches_the_reference_f64() {
    every_kernel_matches_the_reference::<f64>("every_kernel_matches_the_reference_f64");
}

#[test]
fn every_kernel_matches_the_reference_f32() {
    every_kernel_matches_the_reference::<f32>("every_kernel_matches_the_reference_f32");
}

/// `alpha == 0` only scales `y` (`DeviceCsr::spmv`): with every entry of `x` NaN, every
/// kernel (forced ones, both row-block shapes, hot columns, `DeviceEll`) must give
/// `y = beta * y` exactly, and zeros when `beta == 0` (NaN then in `y` too): a NaN from
/// `0 * x[c]` that reached `y` would fail it. (That no kernel reads the matrix or `x` then
/// is by the code, each skipping its loads when `alpha == 0`; a read that does not change `y`
/// cannot be seen here. The CPU reference forms the products, so the expected `y` is
/// written out here.)
fn alpha_zero_only_scales_y<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    let mut rng = StdRng::seed_from_u64(31);
    for (name, a64) in matrices() {
        let a: CsrMatrix<T> = a64.cast();
        let mut all = uploads(ctx, &a);
        if a.nnz() > 0 {
            let hot = DeviceCsr::upload_with_hot(ctx, &a, KernelChoice::Balanced, HotChoice::Force(64), 0).unwrap();
            all.push(("balanced, 64 hot columns".to_string(), Uploaded::Csr(hot)));
        }
        let d_x = DeviceVector::from_slice(ctx, &vec![T::from_f64(f64::NAN); a.ncols()]).unwrap();
        for (kernel, m) in all {
            for beta in [T::ZERO, T::from_f64(-2.5)] {
                let y0 = start_y::<T>(&mut rng, a.nrows(), beta);
                let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
                m.spmv(T::ZERO, &d_x, beta, &mut d_y).unwrap();
                for (i, (g, y)) in d_y.to_vec().unwrap().iter().zip(&y0).enumerate() {
                    let want = if beta == T::ZERO { 0.0 } else { T::from_f64(beta.to_f64() * y.to_f64()).to_f64() };
                    assert!(
                        g.to_f64() == want,
                        "{name}, {kernel}, {}, beta {beta}: y[{i}] = {g}, want {want}",
                        T::NAME
                    );
                }
            }
        }
    }
}

#[test]
fn alpha_zero_only_scales_y_f64() {
    alpha_zero_only_scales_y::<f64>("alpha_zero_only_scales_y_f64");
}

#[test]
fn alpha_zero_only_scales_y_f32() {
    alpha_zero_only_scales_y::<f32>("alpha_zero_only_scales_y_f32");
}

fn repeated_calls_give_the_same_result<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    let mut rng = StdRng::seed_from_u64(7);
    for (name, a) in [
        ("random 531x229", random_csr(531, 229, 40, 7, 11)),
        ("long row", one_long_row(300, 50_000, 5, 40_000, 12)),
        ("many long rows", lengths_csr(&many_long_rows(), 10_000, 13)),
    ] {
        let a: CsrMatrix<T> = a.cast();
        let x = random_vec::<T>(&mut rng, a.ncols());
        let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
        for (kernel, m) in uploads(ctx, &a) {
            let mut d_y = DeviceVector::from_slice(ctx, &vec![T::from_f64(f64::NAN); a.nrows()]).unwrap();
            m.spmv(T::ONE, &d_x, T::ZERO, &mut d_y).unwrap();
            let first = d_y.to_vec().unwrap();
            check(&format!("{name}, {kernel}, first call"), &a, T::ONE, &x, T::ZERO, &vec![T::ZERO; a.nrows()], &first);
            for k in 2..=10 {
                m.spmv(T::ONE, &d_x, T::ZERO, &mut d_y).unwrap();
                // a fresh output vector each other call, the same one otherwise
                let got = if k % 2 == 0 {
                    d_y.to_vec().unwrap()
                } else {
                    let mut fresh = DeviceVector::zeros(ctx, a.nrows()).unwrap();
                    m.spmv(T::ONE, &d_x, T::ZERO, &mut fresh).unwrap();
                    fresh.to_vec().unwrap()
                };
                let same = got.iter().zip(&first).all(|(g, f)| g.to_f64().to_bits() == f.to_f64().to_bits());
                assert!(same, "{name}, {kernel}: call {k} differs from the first");
            }
        }
    }
}

#[test]
fn repeated_calls_give_the_same_result_f64() {
    repeated_calls_give_the_same_result::<f64>("repeated_calls_give_the_same_result_f64");
}

#[test]
fn repeated_calls_give_the_same_result_f32() {
    repeated_calls_give_the_same_result::<f32>("repeated_calls_give_the_same_result_f32");
}

/// The context loads the `compute_80` PTX on GPUs of compute capability 8.0 and up, the
/// `compute_70` PTX on older ones and wherever `SPGPU_PORTABLE_PTX=1`.
#[test]
fn the_context_loads_the_ptx_for_its_gpu() {
    let Some(ctx) = gpu("the_context_loads_the_ptx_for_its_gpu") else { return };
    let portable = std::env::var(spgpu::gpu::PORTABLE_PTX_ENV).is_ok_and(|v| v.trim() == "1");
    let want = if ctx.info().compute_capability.0 >= 8 && !portable { "compute_80" } else { "compute_70" };
    assert_eq!(ctx.ptx_arch(), want, "{:?}", ctx.info());
}

#[test]
fn dimension_mismatch_launches_nothing() {
    let Some(ctx) = gpu("dimension_mismatch_launches_nothing") else { return };
    let a = random_csr(31, 17, 5, 0, 3);
    let csr = DeviceCsr::upload(ctx, &a).unwrap();
    let ell = DeviceEll::from_csr(ctx, &a).unwrap();
    let x_bad = DeviceVector::from_slice(ctx, &[1.0; 16]).unwrap();
    let x = DeviceVector::from_slice(ctx, &[1.0; 17]).unwrap();
    let mut y = DeviceVector::from_slice(ctx, &[7.0; 31]).unwrap();
    let mut y_bad = DeviceVector::from_slice(ctx, &[7.0; 32]).unwrap();
    for r in [csr.spmv(1.0, &x_bad, 0.0, &mut y), ell.spmv(1.0, &x_bad, 0.0, &mut y)] {
        assert!(matches!(r, Err(Error::DimensionMismatch { expected: 17, found: 16, .. })), "{r:?}");
    }
    for r in [csr.spmv(1.0, &x, 0.0, &mut y_bad), ell.spmv(1.0, &x, 0.0, &mut y_bad)] {
        assert!(matches!(r, Err(Error::DimensionMismatch { expected: 31, found: 32, .. })), "{r:?}");
    }
    assert_eq!(y.to_vec().unwrap(), vec![7.0; 31], "nothing was launched");
    assert_eq!(y_bad.to_vec().unwrap(), vec![7.0; 32], "nothing was launched");
}

#[test]
fn uploads_round_trip_and_kernels_can_be_forced() {
    let Some(ctx) = gpu("uploads_round_trip_and_kernels_can_be_forced") else { return };
    let a = random_csr(531, 229, 30, 7, 8);
    let mut csr = DeviceCsr::upload(ctx, &a).unwrap();
    assert_eq!((csr.nrows(), csr.ncols(), csr.nnz()), (531, 229, a.nnz()));
    assert_eq!(csr.download().unwrap(), a);
    assert!(matches!(csr.set_kernel(KernelChoice::Ell), Err(Error::InvalidArgument(_))));
    csr.set_kernel(KernelChoice::VectorTpr(8)).unwrap();
    assert_eq!(csr.plan().kernel(), SpmvKernel::Vector { threads_per_row: 8 });
    csr.set_kernel(KernelChoice::Balanced).unwrap();
    assert_eq!(csr.plan().kernel(), SpmvKernel::Balanced);
    assert!(csr.device_bytes() > csr.csr_bytes(), "the row blocks take device memory");
    assert_eq!(csr.download().unwrap(), a);
    // stored as ELL: the CSR arrays are gone, the ELL arrays hold the matrix
    let mut as_ell = DeviceCsr::upload_with(ctx, &a, KernelChoice::Ell).unwrap();
    assert_eq!(as_ell.plan().kernel(), SpmvKernel::Ell);
    assert!(as_ell.csr_ptrs().is_none() && as_ell.ell().is_some());
    assert_eq!(as_ell.download().unwrap(), a);
    assert!(matches!(as_ell.set_kernel(KernelChoice::Scalar), Err(Error::InvalidArgument(_))));
    // stored as SELL-C-sigma, long rows included
    let b = lengths_csr(&many_long_rows(), 10_000, 14);
    let mut as_sell = DeviceCsr::upload_with(ctx, &b, KernelChoice::Sell).unwrap();
    assert_eq!((as_sell.plan().kernel(), as_sell.storage_name()), (SpmvKernel::Sell, "SELL-C-sigma"));
    assert_eq!(as_sell.download().unwrap(), b);
    assert!(matches!(as_sell.set_kernel(KernelChoice::Balanced), Err(Error::InvalidArgument(_))));
    let e = EllMatrix::try_from_csr(&a).unwrap();
    let ell = DeviceEll::upload(ctx, &e).unwrap();
    assert_eq!((ell.nrows(), ell.ncols(), ell.nnz(), ell.width()), (531, 229, a.nnz(), e.width()));
    assert_eq!(ell.download().unwrap(), e);
    let empty = DeviceCsr::upload(ctx, &CsrMatrix::<f32>::zeros(0, 0).unwrap()).unwrap();
    assert_eq!(empty.download().unwrap(), CsrMatrix::zeros(0, 0).unwrap());

    let mut v = DeviceVector::<f64>::zeros(ctx, 1001).unwrap();
    assert_eq!(v.to_vec().unwrap(), vec![0.0; 1001]);
    v.fill(-2.5).unwrap();
    assert_eq!(v.to_vec().unwrap(), vec![-2.5; 1001]);
    let data: Vec<f64> = (0..1001).map(f64::from).collect();
    v.copy_from(&data).unwrap();
    assert_eq!(v.to_vec().unwrap(), data);
    assert!(matches!(v.copy_from(&data[1..]), Err(Error::DimensionMismatch { .. })));
    let mut e0 = DeviceVector::<f32>::zeros(ctx, 0).unwrap();
    e0.fill(1.0).unwrap();
    assert!(e0.is_empty() && e0.to_vec().unwrap().is_empty() && e0.device_addr() == 0);
}

#[test]
fn spmv_works_from_many_threads() {
    let Some(ctx) = gpu("spmv_works_from_many_threads") else { return };
    let a = gen::laplacian_2d::<f64>(40);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let a = &a;
            s.spawn(move || {
                let d = DeviceCsr::upload(ctx, a).unwrap();
                let mut rng = StdRng::seed_from_u64(t);
                let x = random_vec::<f64>(&mut rng, a.ncols());
                let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
                let mut d_y = DeviceVector::zeros(ctx, a.nrows()).unwrap();
                d.spmv(1.0, &d_x, 0.0, &mut d_y).unwrap();
                let got = d_y.to_vec().unwrap();
                check(&format!("thread {t}"), a, 1.0, &x, 0.0, &vec![0.0; a.nrows()], &got);
            });
        }
    });
}

fn suite_through_the_auto_plan<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    let Some(dir) = external_matrices() else { return };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().is_some_and(|s| s.ends_with(".mtx") || s.ends_with(".mtx.gz")))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{test}: no .mtx files in {}", dir.display());
    let mut rng = StdRng::seed_from_u64(31);
    for path in &files {
        let a = spgpu::io::read_csr::<T>(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut ms = vec![
            ("auto".to_string(), Uploaded::Csr(DeviceCsr::upload(ctx, &a).unwrap())),
            ("balanced".to_string(), Uploaded::Csr(DeviceCsr::upload_with(ctx, &a, KernelChoice::Balanced).unwrap())),
        ];
        if let Ok(d) = DeviceCsr::upload_with(ctx, &a, KernelChoice::Sell) {
            ms.push(("sell".to_string(), Uploaded::Csr(d)));
        }
        if let Ok(e) = EllMatrix::try_from_csr(&a) {
            ms.push(("ell".to_string(), Uploaded::Ell(DeviceEll::upload(ctx, &e).unwrap())));
        }
        for (kernel, m) in ms {
            for (alpha, beta) in [(1.0, 0.0), (-2.5, 1.0)] {
                let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
                let x = random_vec::<T>(&mut rng, a.ncols());
                let y0 = start_y::<T>(&mut rng, a.nrows(), beta);
                let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
                let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
                m.spmv(alpha, &d_x, beta, &mut d_y).unwrap();
                let what = format!("{}, {kernel}, {}, alpha {alpha}, beta {beta}", path.display(), T::NAME);
                check(&what, &a, alpha, &x, beta, &y0, &d_y.to_vec().unwrap());
            }
        }
    }
    println!("{test}: {} matrices checked", files.len());
}

#[test]
fn suite_matrices_through_the_auto_plan_f64() {
    suite_through_the_auto_plan::<f64>("suite_matrices_through_the_auto_plan_f64");
}

#[test]
fn suite_matrices_through_the_auto_plan_f32() {
    suite_through_the_auto_plan::<f32>("suite_matrices_through_the_auto_plan_f32");
}

/// Runs the `spgpu` binary with `args`; returns (success, stdout, stderr). Holds
/// [`LARGE_ALLOCATIONS`] meanwhile: the process's own CUDA context takes hundreds of MB of
/// the same device.
fn spgpu(bin: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let out = std::process::Command::new(bin).args(args).output().expect("spgpu runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn spmv_command_checks_and_times_or_falls_back_to_the_cpu() {
    let bin = spgpu_binary();
    let (ok, stdout, stderr) =
        spgpu(&bin, &["spmv", "gen:lap2d:30", "--kernel", "auto,vector:4,ell", "--repeats", "3", "--launches", "5"]);
    assert!(ok, "spgpu spmv failed: {stderr}");
    assert!(stdout.contains("matrix gen:lap2d:30: 900 x 900, 4380 entries, f64"), "{stdout}");
    match gpu("spmv_command_checks_and_times_or_falls_back_to_the_cpu") {
        Some(_) => {
            assert_eq!(stdout.matches("check: relative error").count(), 3, "{stdout}");
            assert!(stdout.contains("[auto] csr vector (8 threads per row):"), "{stdout}");
            assert!(stdout.contains("[vector:4] csr vector (4 threads per row):"), "{stdout}");
            assert!(stdout.contains("[ell] ell:"), "{stdout}");
            assert!(stdout.contains("% of 4.28 TB/s"), "{stdout}");
        }
        None => {
            assert!(stderr.contains("spgpu spmv: no GPU"), "{stderr}");
            assert!(stdout.contains("SpMV plan: csr vector (8 threads per row) [auto]"), "{stdout}");
            assert!(stdout.contains("SpMV plan: csr vector (4 threads per row) [vector:4]"), "{stdout}");
        }
    }
}

#[test]
fn spmv_command_refuses_bad_arguments() {
    let bin = spgpu_binary();
    let (ok, _, stderr) = spgpu(&bin, &["spmv", "gen:lap2d:5", "--kernel", "vector:3"]);
    assert!(!ok);
    assert!(stderr.contains("unknown kernel \"vector:3\""), "{stderr}");
    let (ok, _, stderr) = spgpu(&bin, &["spmv", "gen:nosuch:5"]);
    assert!(!ok);
    assert!(stderr.starts_with("spgpu: "), "{stderr}");
    let (ok, _, stderr) = spgpu(&bin, &["spmv", "/nonexistent/a.mtx"]);
    assert!(!ok);
    assert!(stderr.contains("/nonexistent/a.mtx"), "{stderr}");
}

/// The balanced and SELL kernels on small matrices with long rows (chunked), short rows and
/// empty rows, against the reference: small enough for compute-sanitizer's memcheck and
/// racecheck.
#[test]
fn balanced_and_sell_on_small_matrices() {
    let Some(ctx) = gpu("balanced_and_sell_on_small_matrices") else { return };
    let mut rng = StdRng::seed_from_u64(77);
    let mut lengths: Vec<usize> = (0..700).map(|i| (i * 5) % 9).collect();
    lengths[3] = 5000; // three chunks (balanced and SELL)
    lengths[400] = 2049; // two chunks
    lengths[401] = 700; // a row past SELL's LONG_ROW, within one balanced block
    lengths[402] = 1500; // one balanced chunk block that writes y itself
    lengths[403] = 4000; // two chunks
    let a = lengths_csr(&lengths, 6000, 15);
    let mut uploads: Vec<(String, DeviceCsr<f64>)> = [KernelChoice::Balanced, KernelChoice::Sell]
        .into_iter()
        .map(|c| (c.to_string(), DeviceCsr::upload_with(ctx, &a, c).unwrap()))
        .collect();
    for shape in RowShape::ALL.into_iter().filter(|&s| s != RowShape::DEFAULT) {
        let d = DeviceCsr::upload_with(ctx, &a, KernelChoice::BalancedThreads(shape.threads as u32)).unwrap();
        uploads.push((format!("balanced, {} threads per block", shape.threads), d));
    }
    for (choice, d) in &uploads {
        for (alpha, beta) in [(1.0, 0.0), (-2.5, 1.0), (0.0, 1.0)] {
            let x = random_vec::<f64>(&mut rng, a.ncols());
            let y0 = if beta == 0.0 { vec![f64::NAN; a.nrows()] } else { random_vec(&mut rng, a.nrows()) };
            let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
            let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
            d.spmv(alpha, &d_x, beta, &mut d_y).unwrap();
            check(&format!("{choice}, alpha {alpha}, beta {beta}"), &a, alpha, &x, beta, &y0, &d_y.to_vec().unwrap());
        }
    }
}

/// The 64-bit kernels (`_i64`), on small matrices whose positions are all moved past 2^32
/// (`DeviceCsr::upload_with_entry_base`): every CSR kernel, the balanced kernel's blocks and
/// chunks, SELL's slices and chunks, f32 and f64. Results must equal the 32-bit kernels' bit
/// for bit (same sums, same order) and the reference; the download gives the matrix back.
fn offsets_past_2_to_the_32<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    let mut rng = StdRng::seed_from_u64(64);
    let mut choices = KernelChoice::forced(ctx.warp_size());
    choices.retain(|&c| c != KernelChoice::Ell); // ELL has no positions
    choices.push(KernelChoice::Auto);
    let names = [
        "random 531x229 with empty rows",
        "one long row among short ones",
        "one row holds 90% of the entries",
        "sparse rows, up to two per thread",
    ];
    let mut cases: Vec<(&str, CsrMatrix<f64>)> = matrices().into_iter().filter(|(n, _)| names.contains(n)).collect();
    cases.push((
        "rows at chunk boundaries",
        lengths_csr(&[2048, 2049, 0, 4096, 1, 4097, 6000, 2047, 1024, 1025], 8192, 3),
    ));
    cases.push(("many long rows", lengths_csr(&many_long_rows(), 10_000, 4)));
    cases.push(("no entries", CsrMatrix::zeros(7, 5).unwrap()));
    for base in [(1u64 << 32) + 12_345, (5u64 << 32) - 3] {
        for (name, a) in &cases {
            let a: CsrMatrix<T> = a.cast();
            for &choice in &choices {
                let narrow = match DeviceCsr::upload_with(ctx, &a, choice) {
                    Ok(d) => d,
                    Err(Error::InvalidArgument(e)) if choice == KernelChoice::Sell => {
                        println!("  ({name}: SELL skipped: {e})");
                        continue;
                    }
                    Err(e) => panic!("{name}, {choice}: {e}"),
                };
                let wide = DeviceCsr::upload_with_entry_base(ctx, &a, choice, base).unwrap();
                let what = format!("{name}, {choice} ({}), base {base}", wide.plan().kernel());
                let mut pairs = vec![(what, narrow, wide)];
                if choice == KernelChoice::Balanced {
                    for shape in RowShape::ALL.into_iter().filter(|&s| s != RowShape::DEFAULT) {
                        let n = DeviceCsr::upload_with(ctx, &a, KernelChoice::BalancedThreads(shape.threads as u32))
                            .unwrap();
                        let w = DeviceCsr::upload_with_entry_base(
                            ctx,
                            &a,
                            KernelChoice::BalancedThreads(shape.threads as u32),
                            base,
                        )
                        .unwrap();
                        pairs.push((format!("{name}, balanced of {} threads, base {base}", shape.threads), n, w));
                    }
                }
                for (what, narrow, wide) in pairs {
                    assert!(!narrow.offsets_are_64_bit() && wide.offsets_are_64_bit(), "{what}");
                    assert_eq!(wide.plan().kernel(), narrow.plan().kernel(), "{what}");
                    assert_eq!(wide.download().unwrap(), a, "{what}: download");
                    for (alpha, beta) in [(T::ONE, T::ZERO), (T::from_f64(-2.5), T::ONE)] {
                        let x = random_vec::<T>(&mut rng, a.ncols());
                        let y0 = start_y::<T>(&mut rng, a.nrows(), beta);
                        let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
                        let mut y_narrow = DeviceVector::from_slice(ctx, &y0).unwrap();
                        let mut y_wide = DeviceVector::from_slice(ctx, &y0).unwrap();
                        narrow.spmv(alpha, &d_x, beta, &mut y_narrow).unwrap();
                        wide.spmv(alpha, &d_x, beta, &mut y_wide).unwrap();
                        let got = y_wide.to_vec().unwrap();
                        check(&what, &a, alpha, &x, beta, &y0, &got);
                        let same = got
                            .iter()
                            .zip(y_narrow.to_vec().unwrap())
                            .all(|(g, n)| g.to_f64().to_bits() == n.to_f64().to_bits());
                        assert!(same, "{what}: the 64-bit kernel differs from the 32-bit one");
                    }
                }
            }
        }
    }
}

#[test]
fn offsets_past_2_to_the_32_f64() {
    offsets_past_2_to_the_32::<f64>("offsets_past_2_to_the_32_f64");
}

#[test]
fn offsets_past_2_to_the_32_f32() {
    offsets_past_2_to_the_32::<f32>("offsets_past_2_to_the_32_f32");
}

/// Held by the tests that allocate hundreds of MB and while an `spgpu` process runs, so that
/// the memory test sees only its own allocations (free memory is counted device-wide: on
/// the H200 a `spgpu spmv` that exited between its two readings made an upload of 556 MB
/// look like 41 MB).
static LARGE_ALLOCATIONS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Device memory is planned: what is available is known before an upload (free memory plus
/// what spgpu's pool holds unused), and freeing a matrix gives its bytes back to it.
#[test]
fn device_memory_is_planned_before_upload() {
    let Some(ctx) = gpu("device_memory_is_planned_before_upload") else { return };
    let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let before = ctx.available_memory().unwrap();
    assert!(before > 0 && before <= ctx.info().total_memory as u64, "{before}");
    // 45M entries: 556 MB as CSR, well above what the other tests of this file, running
    // alongside, allocate and free meanwhile (the slack)
    let a = gen::laplacian_2d::<f64>(3000);
    let slack = 256u64 << 20;
    let d = DeviceCsr::upload_with(ctx, &a, KernelChoice::Scalar).unwrap();
    let during = ctx.available_memory().unwrap();
    assert!(during + d.csr_bytes() as u64 <= before + slack, "{before} -> {during}");
    drop(d);
    ctx.synchronize().unwrap();
    let after = ctx.available_memory().unwrap();
    assert!(after + slack >= before, "{before} -> {after}");
}

/// The hot-column kernel (`spgpu::gpu::hot`), forced on small matrices with 1, 64 and every
/// column hot, with 32-bit and 64-bit positions: results bit-identical to the balanced
/// kernel's (same sums in the same order) and within the reference's bound, repeated calls
/// bit-identical, `beta = 0` never reading `y` (NaN there), `alpha = 0` only scaling `y`.
/// The columns counted on the device are those the host counts. The download gives the
/// matrix back; switching to another kernel restores the columns on the device.
fn hot_columns<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    let mut rng = StdRng::seed_from_u64(4242);
    let mut cases: Vec<(String, CsrMatrix<T>)> =
        matrices().into_iter().map(|(n, a)| (n.to_string(), a.cast())).collect();
    cases.push(("rmat 2^12, 16 per row".to_string(), gen::rmat::<T>(12, 16, 5).unwrap()));
    cases.push(("graphlap rmat 2^11".to_string(), gen::from_spec::<T>("graphlap:rmat:11:8").unwrap()));
    let bits = |v: &[T]| v.iter().map(|g| g.to_f64().to_bits()).collect::<Vec<u64>>();
    for (name, a) in &cases {
        let plain = DeviceCsr::upload_with_hot(ctx, a, KernelChoice::Balanced, HotChoice::Off, 0).unwrap();
        assert!(!plain.plan().hot_columns(), "{name}");
        for (slots, base) in [(1, 0), (64, 0), (usize::MAX, 0), (64, (1u64 << 32) + 12_345)] {
            let hot =
                DeviceCsr::upload_with_hot(ctx, a, KernelChoice::Balanced, HotChoice::Force(slots), base).unwrap();
            let what = format!("{name}, {} hot slots at most, base {base}", slots.min(a.ncols()));
            assert_eq!(hot.plan().hot_columns(), a.nnz() > 0, "{what}");
            if a.nnz() > 0 {
                assert!(hot.plan().explain().contains("hot columns hold"), "{what}: {}", hot.plan().explain());
                if slots <= 64 {
                    // counted on the device, chosen as the host would
                    let host = HotColumns::select(a.col_indices(), a.ncols(), slots, 0);
                    let share = 100.0 * host.entries() as f64 / a.nnz() as f64;
                    let says = format!("{} hot columns hold {share:.1}% of the entries", host.len());
                    assert!(hot.plan().explain().contains(&says), "{what}: {says}? {}", hot.plan().explain());
                }
                assert!(hot.csr_ptrs().is_none(), "{what}: flagged columns must not be handed out");
            }
            assert_eq!(hot.download().unwrap(), *a, "{what}: download");
            for (alpha, beta) in [(1.0, 0.0), (-2.5, 1.0), (0.0, -2.5)] {
                let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
                let x = random_vec::<T>(&mut rng, a.ncols());
                let y0 = start_y::<T>(&mut rng, a.nrows(), beta);
                let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
                let mut y_plain = DeviceVector::from_slice(ctx, &y0).unwrap();
                plain.spmv(alpha, &d_x, beta, &mut y_plain).unwrap();
                let want = bits(&y_plain.to_vec().unwrap());
                for call in 0..3 {
                    let mut y_hot = DeviceVector::from_slice(ctx, &y0).unwrap();
                    hot.spmv(alpha, &d_x, beta, &mut y_hot).unwrap();
                    let got = y_hot.to_vec().unwrap();
                    let what = format!("{what}, alpha {alpha}, beta {beta}, call {call}");
                    check(&what, a, alpha, &x, beta, &y0, &got);
                    assert_eq!(bits(&got), want, "{what}: differs from the balanced kernel");
                }
            }
            // another kernel reads plain columns again
            let mut hot = hot;
            hot.set_kernel(KernelChoice::Scalar).unwrap();
            assert!(!hot.plan().hot_columns() && (a.nnz() == 0 || hot.csr_ptrs().is_some()), "{what}");
            let x = random_vec::<T>(&mut rng, a.ncols());
            let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
            let mut d_y = DeviceVector::from_slice(ctx, &vec![T::ZERO; a.nrows()]).unwrap();
            hot.spmv(T::ONE, &d_x, T::ZERO, &mut d_y).unwrap();
            check(
                &format!("{what}, scalar after hot"),
                a,
                T::ONE,
                &x,
                T::ZERO,
                &vec![T::ZERO; a.nrows()],
                &d_y.to_vec().unwrap(),
            );
            assert_eq!(hot.download().unwrap(), *a, "{what}: download after switching");
        }
    }
}

#[test]
fn hot_columns_f64() {
    hot_columns::<f64>("hot_columns_f64");
}

#[test]
fn hot_columns_f32() {
    hot_columns::<f32>("hot_columns_f32");
}

/// Column parts (`spgpu::gpu::split`): the automatic rule cuts an `x` past the L2 on
/// scattered, spread columns of rows of 1.9 or more, in place of the balanced kernel or
/// SELL, into parts of at most half the L2; the parts give
/// the reference's products, the same bits on every call, the matrix back on download, and
/// keep their storage through `set_kernel(Auto)`; other kernels need a new upload.
#[test]
fn column_parts_for_an_x_past_the_l2() {
    let Some(ctx) = gpu("column_parts_for_an_x_past_the_l2") else { return };
    let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // 1.5 million power-law rows (mean 13) over 12 million columns, 1.6 entries per column:
    // an x of 96 MB in f64, 48 MB in f32
    let a = gen::power_law::<f64>(1_500_000, 12_000_000, 1.2, 3.0, 20_000, 5);
    let l2 = ctx.info().l2_cache_bytes;
    let want = spgpu::gpu::split::column_parts(a.nrows(), a.ncols(), a.nnz(), 8, l2, SpmvKernel::Balanced);
    let mut d = DeviceCsr::upload(ctx, &a).unwrap();
    assert_eq!(d.plan().kernel(), SpmvKernel::Balanced, "{}", d.plan().explain());
    assert_eq!(d.plan().column_parts(), want, "{}", d.plan().explain());
    if l2 < 96_000_000 {
        assert!(want >= 2, "an x of 96 MB past an L2 of {l2} bytes");
        assert!(d.plan().explain().contains("column parts"), "{}", d.plan().explain());
        assert_eq!(d.storage_name(), "CSR in column parts, each with row blocks");
        assert!(d.csr_ptrs().is_none());
    }
    assert_eq!(d.download().unwrap(), a);
    let mut rng = StdRng::seed_from_u64(11);
    let x = random_vec::<f64>(&mut rng, a.ncols());
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    for (alpha, beta) in [(1.0, 0.0), (-2.0, 0.5), (0.0, 3.0)] {
        let y0 = start_y::<f64>(&mut rng, a.nrows(), beta);
        let mut first = None;
        for call in 0..3 {
            let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
            d.spmv(alpha, &d_x, beta, &mut d_y).unwrap();
            let got = d_y.to_vec().unwrap();
            let what = format!("power law over 12M columns, alpha {alpha}, beta {beta}, call {call}");
            match &first {
                None => {
                    check(&what, &a, alpha, &x, beta, &y0, &got);
                    first = Some(got.iter().map(|v| v.to_bits()).collect::<Vec<u64>>());
                }
                Some(bits) => assert!(got.iter().map(|v| v.to_bits()).eq(bits.iter().copied()), "{what}: other bits"),
            }
        }
    }
    // a short x is refused before anything runs
    let short = DeviceVector::from_slice(ctx, &vec![0.0; a.ncols() - 1]).unwrap();
    let mut d_y = DeviceVector::from_slice(ctx, &vec![0.0; a.nrows()]).unwrap();
    assert!(matches!(d.spmv(1.0, &short, 0.0, &mut d_y), Err(Error::DimensionMismatch { .. })));
    d.set_kernel(KernelChoice::Auto).unwrap();
    assert_eq!(d.plan().column_parts(), want);
    d.set_kernel(KernelChoice::Balanced).unwrap();
    assert_eq!(d.plan().column_parts(), want);
    if want > 1 {
        assert!(matches!(d.set_kernel(KernelChoice::Scalar), Err(Error::InvalidArgument(_))));
        assert_eq!(d.plan().column_parts(), want, "a refused set_kernel leaves the plan");
    }
    drop((d, d_x));
    // in f32 the same x takes 48 MB (80% of the H200's L2: two parts)
    let d = DeviceCsr::upload(ctx, &a.cast::<f32>()).unwrap();
    let want = spgpu::gpu::split::column_parts(a.nrows(), a.ncols(), a.nnz(), 4, l2, SpmvKernel::Balanced);
    assert_eq!(d.plan().column_parts(), want, "{}", d.plan().explain());
    drop(d);
    // 0.3 entries per column: x is read about once per entry, parts or not
    // (split::spread): one pass
    let few = gen::power_law::<f64>(300_000, 12_000_000, 1.2, 3.0, 20_000, 5);
    let d = DeviceCsr::upload(ctx, &few).unwrap();
    assert_eq!(d.plan().column_parts(), 1, "{}", d.plan().explain());
    drop((d, few));
    // an R-MAT graph's x of 134 MB, but most entries in few columns (split::spread): one
    // pass
    let rmat = gen::from_spec::<f64>("rmat:24:2").unwrap();
    let counts = spgpu::gpu::hot::column_counts(rmat.col_indices(), rmat.ncols());
    assert!(spgpu::gpu::split::spread(&counts) < spgpu::gpu::split::MIN_SPREAD);
    let d = DeviceCsr::upload(ctx, &rmat).unwrap();
    assert_eq!(d.plan().column_parts(), 1, "{}", d.plan().explain());
    drop((d, rmat));
    // even rows of 16 over 12 million columns (1.6 entries per column), which rule 5 gives
    // SELL: column parts instead, past the L2
    let even = gen::random_uniform::<f64>(1_200_000, 12_000_000, 16, 2);
    let want = spgpu::gpu::split::column_parts(even.nrows(), even.ncols(), even.nnz(), 8, l2, SpmvKernel::Sell);
    let mut d = DeviceCsr::upload(ctx, &even).unwrap();
    assert_eq!(d.plan().column_parts(), want, "{}", d.plan().explain());
    if want > 1 {
        assert_eq!(d.plan().kernel(), SpmvKernel::Balanced, "{}", d.plan().explain());
        assert!(d.plan().explain().contains("which SELL would gather in one pass"), "{}", d.plan().explain());
        // set_kernel(Auto) keeps the parts, not SELL, which is not stored
        d.set_kernel(KernelChoice::Auto).unwrap();
        assert_eq!(d.plan().column_parts(), want, "{}", d.plan().explain());
    }
    let x = random_vec::<f64>(&mut rng, even.ncols());
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let y0 = start_y::<f64>(&mut rng, even.nrows(), 0.5);
    let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
    d.spmv(1.5, &d_x, 0.5, &mut d_y).unwrap();
    check("even rows over 12M columns", &even, 1.5, &x, 0.5, &y0, &d_y.to_vec().unwrap());
    // a forced kernel is never cut into parts
    drop(d);
    let one = DeviceCsr::upload_with(ctx, &even, KernelChoice::Sell).unwrap();
    assert_eq!(one.plan().kernel(), SpmvKernel::Sell);
    assert_eq!(one.plan().column_parts(), 1);
    let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
    one.spmv(1.5, &d_x, 0.5, &mut d_y).unwrap();
    check("even rows over 12M columns, SELL", &even, 1.5, &x, 0.5, &y0, &d_y.to_vec().unwrap());
}

/// SELL keeps no hot columns: even rows whose columns are read unevenly (the transpose of a
/// power-law graph), which rule 5 sends to SELL, run balanced with hot columns, before and
/// after `set_kernel(Auto)`; even rows over evenly read columns keep SELL.
#[test]
fn hot_columns_take_even_rows_from_sell() {
    let Some(ctx) = gpu("hot_columns_take_even_rows_from_sell") else { return };
    let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let a = gen::from_spec::<f64>("transpose:powerlaw:400000:3").unwrap();
    assert!(a.nnz() > SpmvPlan::SMALL_NNZ && a.row_stats().max < 64, "{}", a.row_stats());
    // the rule from the row lengths alone says SELL
    assert_eq!(SpmvPlan::from_stats::<f64>(&a.row_stats(), 32).kernel(), SpmvKernel::Sell);
    let mut d = DeviceCsr::upload(ctx, &a).unwrap();
    assert_eq!(d.plan().kernel(), SpmvKernel::Balanced, "{}", d.plan().explain());
    assert!(d.plan().hot_columns(), "{}", d.plan().explain());
    assert!(d.plan().explain().contains("SELL gathers from the L2: balanced instead"), "{}", d.plan().explain());
    let x: Vec<f64> = (0..a.ncols()).map(|i| ((i * 7919) % 1000) as f64 / 500.0 - 1.0).collect();
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    for round in ["upload", "set_kernel(auto)"] {
        let mut d_y = DeviceVector::from_slice(ctx, &vec![f64::NAN; a.nrows()]).unwrap();
        d.spmv(1.0, &d_x, 0.0, &mut d_y).unwrap();
        check(&format!("transpose:powerlaw, {round}"), &a, 1.0, &x, 0.0, &vec![0.0; a.nrows()], &d_y.to_vec().unwrap());
        d.set_kernel(KernelChoice::Auto).unwrap();
        assert_eq!(d.plan().kernel(), SpmvKernel::Balanced, "{round}: {}", d.plan().explain());
        assert!(d.plan().hot_columns(), "{round}: {}", d.plan().explain());
    }
    // forced, SELL still runs it
    assert_eq!(DeviceCsr::upload_with(ctx, &a, KernelChoice::Sell).unwrap().plan().kernel(), SpmvKernel::Sell);
    drop((d, a));
    // random rows of 16: no column read more than its share, SELL
    let even = gen::random_uniform::<f64>(400_000, 400_000, 16, 3);
    let d = DeviceCsr::upload(ctx, &even).unwrap();
    assert_eq!(d.plan().kernel(), SpmvKernel::Sell, "{}", d.plan().explain());
}

/// The automatic rule: an R-MAT graph of 2^20 rows gets hot columns (more than 4M entries,
/// a third of them in hot columns), and so does the Laplacian of a power-law graph (scattered
/// columns, 19% of the entries in the 6144 hot columns of f64: below `MIN_SHARE`, above
/// `MIN_SHARE_SCATTERED`); a power-law matrix with uniform columns does not.
#[test]
fn hot_columns_are_chosen_for_skewed_columns_only() {
    let Some(ctx) = gpu("hot_columns_are_chosen_for_skewed_columns_only") else { return };
    let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let rmat = gen::rmat::<f32>(20, 16, 1).unwrap();
    let d = DeviceCsr::upload(ctx, &rmat).unwrap();
    assert_eq!(d.plan().kernel(), SpmvKernel::Balanced);
    assert!(d.plan().hot_columns(), "{}", d.plan().explain());
    assert_eq!(d.storage_name(), "CSR with row blocks and hot columns");
    let x: Vec<f32> = (0..rmat.ncols()).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let mut d_y = DeviceVector::from_slice(ctx, &vec![f32::NAN; rmat.nrows()]).unwrap();
    d.spmv(1.0, &d_x, 0.0, &mut d_y).unwrap();
    check("rmat:20:16, auto", &rmat, 1.0, &x, 0.0, &vec![f32::NAN; rmat.nrows()], &d_y.to_vec().unwrap());
    let power = gen::from_spec::<f32>("powerlaw:1000000").unwrap();
    let d = DeviceCsr::upload(ctx, &power).unwrap();
    assert_eq!(d.plan().kernel(), SpmvKernel::Balanced);
    assert!(!d.plan().hot_columns(), "{}", d.plan().explain());
    // about 13 entries per column: none repays its copy, and the plan says so
    assert!(d.plan().explain().contains("x: no hot columns: no column holds more than"), "{}", d.plan().explain());
    drop((d, power));
    let lap = gen::from_spec::<f64>("graphlap:powerlaw:1000000").unwrap();
    let d = DeviceCsr::upload(ctx, &lap).unwrap();
    assert_eq!(d.plan().kernel(), SpmvKernel::Balanced);
    assert!(d.plan().hot_columns(), "{}", d.plan().explain());
    let x: Vec<f64> = (0..lap.ncols()).map(|i| ((i * 7919) % 1000) as f64 / 500.0 - 1.0).collect();
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let mut d_y = DeviceVector::from_slice(ctx, &vec![f64::NAN; lap.nrows()]).unwrap();
    d.spmv(1.0, &d_x, 0.0, &mut d_y).unwrap();
    check("graphlap:powerlaw:1000000, auto", &lap, 1.0, &x, 0.0, &vec![f64::NAN; lap.nrows()], &d_y.to_vec().unwrap());
    drop((d, lap, d_x, d_y));
    // a sparse R-MAT graph (about 3 entries per column, fewer than MIN_ENTRIES_PER_COLUMN):
    // skewed columns, but no hot columns
    let sparse = gen::rmat::<f32>(21, 3, 1).unwrap();
    assert!(sparse.nnz() > 1 << 22 && sparse.nnz() < spgpu::gpu::hot::MIN_ENTRIES_PER_COLUMN * sparse.ncols());
    let d = DeviceCsr::upload(ctx, &sparse).unwrap();
    assert_eq!(d.plan().kernel(), SpmvKernel::Balanced);
    assert!(!d.plan().hot_columns(), "{}", d.plan().explain());
    assert!(d.plan().explain().contains("entries per column (< 5)"), "{}", d.plan().explain());
    // few columns read evenly (about 87 entries each): the most-read hold a quarter of the entries,
    // but no more than their share of the columns (MIN_SKEW), so no hot columns
    let even = gen::random_uniform::<f32>(1500, 50_000, 3000, 2);
    assert!(even.nnz() > 1 << 22);
    let d = DeviceCsr::upload(ctx, &even).unwrap();
    assert_eq!(d.plan().kernel(), SpmvKernel::Balanced, "{}", d.plan().explain());
    assert!(!d.plan().hot_columns(), "{}", d.plan().explain());
    assert!(d.plan().explain().contains("times their share of the columns (< 4)"), "{}", d.plan().explain());
}

/// Uploads `a` in f64 and in f32, checks that each plan runs the kernel given for its
/// precision and says `why`, and checks `y = 1.5 A x + beta y` against the reference with
/// `beta` 0 (NaN in `y`) and 0.5.
fn plan_and_product_both_precisions(
    ctx: &'static Context,
    a: &CsrMatrix<f64>,
    seed: u64,
    want: [SpmvKernel; 2],
    why: &str,
    what: &str,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let a32 = a.cast::<f32>();
    for beta in [0.0, 0.5] {
        let x = random_vec::<f64>(&mut rng, a.ncols());
        let y0 = start_y(&mut rng, a.nrows(), beta);
        let d = DeviceCsr::upload(ctx, a).unwrap();
        assert_eq!(d.plan().kernel(), want[0], "{}", d.plan().explain());
        assert!(d.plan().explain().contains(why), "{}", d.plan().explain());
        let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
        let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
        d.spmv(1.5, &d_x, beta, &mut d_y).unwrap();
        check(&format!("{what}, f64"), a, 1.5, &x, beta, &y0, &d_y.to_vec().unwrap());
        let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let y32: Vec<f32> = y0.iter().map(|&v| v as f32).collect();
        let d = DeviceCsr::upload(ctx, &a32).unwrap();
        assert_eq!(d.plan().kernel(), want[1], "{}", d.plan().explain());
        let d_x = DeviceVector::from_slice(ctx, &x32).unwrap();
        let mut d_y = DeviceVector::from_slice(ctx, &y32).unwrap();
        d.spmv(1.5, &d_x, beta as f32, &mut d_y).unwrap();
        check(&format!("{what}, f32"), &a32, 1.5, &x32, beta as f32, &y32, &d_y.to_vec().unwrap());
    }
}

/// Rule 1's few, long rows (a warp per row would leave most of the GPU idle): the upload
/// plans the balanced kernel, whose chunks split the rows, and the product matches the
/// reference in both precisions.
#[test]
fn few_long_rows_run_balanced() {
    let Some(ctx) = gpu("few_long_rows_run_balanced") else { return };
    let a = lengths_csr(&[6000; 300], 200_000, 31);
    let b = SpmvKernel::Balanced;
    plan_and_product_both_precisions(ctx, &a, 32, [b, b], "few, long rows", "300 rows of 6000");
}

/// Few rows with rows of several chunks run the balanced kernel with the chunks past each
/// row's first in chunk-major order, short rows among and after the long ones (stream blocks
/// whose successors change with the order), a long row of one chunk, empty rows: products
/// against the reference in both precisions, with `beta` 0 (NaN in `y`) and not, and
/// repeated calls give the same bits.
#[test]
fn few_rows_run_their_chunks_in_chunk_major_order() {
    let Some(ctx) = gpu("few_rows_run_their_chunks_in_chunk_major_order") else { return };
    let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut lengths = Vec::new();
    for i in 0..60 {
        lengths.extend_from_slice(&[3, 5000 + i, 0, 2, 9000 - i, 1500, 7]);
    }
    lengths.extend_from_slice(&[4; 300]);
    let a = lengths_csr(&lengths, 3_000_000, 35);
    let b = SpmvKernel::Balanced;
    // SPGPU_CHUNK_MAJOR=0 keeps row order (the products are the same)
    let on = std::env::var(spgpu::gpu::balance::CHUNK_MAJOR_ENV).map_or(true, |v| v != "0");
    let why = if on { "chunk-major order" } else { "balanced" };
    plan_and_product_both_precisions(ctx, &a, 36, [b, b], why, "few rows of several chunks");
    let d = DeviceCsr::upload(ctx, &a).unwrap();
    let mut rng = StdRng::seed_from_u64(37);
    let x = random_vec::<f64>(&mut rng, a.ncols());
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let mut d_y = DeviceVector::<f64>::zeros(ctx, a.nrows()).unwrap();
    d.spmv(1.0, &d_x, 0.0, &mut d_y).unwrap();
    let first = d_y.to_vec().unwrap();
    for _ in 0..5 {
        d.spmv(1.0, &d_x, 0.0, &mut d_y).unwrap();
        let again = d_y.to_vec().unwrap();
        assert!(first.iter().zip(&again).all(|(p, q)| p.to_bits() == q.to_bits()), "repeated calls differ");
    }
}

/// The bits of `y = 1.5 A x + 0.5 y` in both precisions, as hexadecimal lines (f64 then f32,
/// each value widened to f64, which keeps its bits apart), for 280 rows over 2 million
/// columns: rows of 5000-5039 and 8961-9000 entries (several chunks), of 2048 and 2049 (one
/// chunk, two), of 1500, 3 and none, after checking that each precision runs balanced, in
/// chunk-major order unless `SPGPU_CHUNK_MAJOR=0`.
fn few_rows_bits(ctx: &'static Context) -> Vec<String> {
    let mut lengths = Vec::new();
    for i in 0..40 {
        lengths.extend_from_slice(&[3, 5000 + i, 0, 9000 - i, 1500, 2048, 2049]);
    }
    let a = lengths_csr(&lengths, 2_000_000, 38);
    let mut rng = StdRng::seed_from_u64(39);
    let x = random_vec::<f64>(&mut rng, a.ncols());
    let y0 = start_y(&mut rng, a.nrows(), 0.5);
    let mut lines = balanced_bits::<f64>(ctx, &a, &x, &y0);
    lines.extend(balanced_bits::<f32>(ctx, &a, &x, &y0));
    lines
}

/// [`few_rows_bits`] in one precision: the product, checked against the reference, as the
/// hexadecimal bits of each value widened to f64.
fn balanced_bits<T: Scalar>(ctx: &'static Context, a: &CsrMatrix<f64>, x: &[f64], y0: &[f64]) -> Vec<String> {
    let chunk_major = std::env::var(spgpu::gpu::balance::CHUNK_MAJOR_ENV).map_or(true, |v| v != "0");
    let (a, x, y0) = (a.cast::<T>(), to_scalar::<T>(x), to_scalar::<T>(y0));
    let (alpha, beta) = (T::from_f64(1.5), T::from_f64(0.5));
    let d = DeviceCsr::upload(ctx, &a).unwrap();
    let plan = d.plan();
    assert_eq!(plan.kernel(), SpmvKernel::Balanced, "{}", plan.explain());
    assert_eq!(plan.explain().contains("chunk-major"), chunk_major, "{}", plan.explain());
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
    d.spmv(alpha, &d_x, beta, &mut d_y).unwrap();
    let y = d_y.to_vec().unwrap();
    check(&format!("few rows for the bits, {}", T::NAME), &a, alpha, &x, beta, &y0, &y);
    y.iter().map(|v| format!("{:016x}", v.to_f64().to_bits())).collect()
}

/// `v` in the scalar type `T`.
fn to_scalar<T: Scalar>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&e| T::from_f64(e)).collect()
}

/// Chunk-major order sums every chunk over the same entries and adds a row's chunks in the
/// same order as row order, so the two give the same bits. The order is chosen at upload
/// from [`CHUNK_MAJOR_ENV`](spgpu::gpu::balance::CHUNK_MAJOR_ENV), which one test of a
/// parallel harness cannot change for itself alone: this test runs itself again in a child
/// process with the other order (`SPGPU_CHUNK_MAJOR=0`, or unset when this process has it),
/// which writes its bits to a file (the path in `SPGPU_BITS_FILE`), and compares them with
/// its own.
#[test]
fn chunk_major_and_row_order_give_the_same_bits() {
    const NAME: &str = "chunk_major_and_row_order_give_the_same_bits";
    let Some(ctx) = gpu(NAME) else { return };
    let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let env = spgpu::gpu::balance::CHUNK_MAJOR_ENV;
    if let Ok(path) = std::env::var("SPGPU_BITS_FILE") {
        // the child: write the bits and stop
        std::fs::write(&path, few_rows_bits(ctx).join("\n")).unwrap();
        return;
    }
    let mine = few_rows_bits(ctx);
    let path = std::env::temp_dir().join(format!("spgpu-bits-{}.txt", std::process::id()));
    let mut child = std::process::Command::new(std::env::current_exe().unwrap());
    // SPGPU_REQUIRE_GPU: a child without a GPU fails instead of skipping
    child.args(["--exact", NAME, "--test-threads=1"]).env("SPGPU_BITS_FILE", &path).env("SPGPU_REQUIRE_GPU", "1");
    let parent_chunk_major = std::env::var(env).map_or(true, |v| v != "0");
    if parent_chunk_major {
        child.env(env, "0");
    } else {
        child.env_remove(env);
    }
    let out = child.output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.contains("1 passed"), "the child did not run the test:\n{said}");
    let theirs = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("the child wrote no bits ({e}):\n{said}"));
    std::fs::remove_file(&path).unwrap();
    let theirs: Vec<&str> = theirs.lines().collect();
    assert_eq!(theirs.len(), mine.len(), "the child wrote {} values, not {}", theirs.len(), mine.len());
    let differ = mine.iter().zip(&theirs).filter(|(p, q)| p != q).count();
    assert_eq!(differ, 0, "{differ} of {} values differ between the two orders", mine.len());
}

/// Rule 1's exception: few, long rows over an `x` of 40 MiB or more run a warp per row (its
/// warps sweep the columns in step), in f64; the same rows in f32 (half the bytes of `x`)
/// stay balanced. Both match the reference.
#[test]
fn few_long_rows_over_a_large_x_run_a_warp_per_row() {
    let Some(ctx) = gpu("few_long_rows_over_a_large_x_run_a_warp_per_row") else { return };
    let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let a = lengths_csr(&[1100; 1500], 5_300_000, 33);
    let want = [SpmvKernel::Vector { threads_per_row: 32 }, SpmvKernel::Balanced];
    plan_and_product_both_precisions(ctx, &a, 34, want, "a warp per row", "1500 rows of 1100 over 5.3M columns");
}

/// Long, even rows within 32767 of the diagonal (a band of 601 on 20000 rows: the fill rule
/// gives 8 threads per row) run 16 threads per row, reading each row 4 entries per thread
/// at a time from 16-bit columns, checked against the reference in both precisions;
/// 20000 x 16 threads are more than one H100's or H200's worth (the 32-bit simple loop
/// would run).
#[test]
fn long_narrow_rows_run_batched() {
    let Some(ctx) = gpu("long_narrow_rows_run_batched") else { return };
    let a = gen::banded::<f64>(20_000, 300, 41);
    // with narrow columns turned off the band's columns are only "local": rule 3's own count
    let narrow_on = std::env::var("SPGPU_NARROW_COLUMNS").map_or(true, |v| v.trim() != "0");
    let want = SpmvKernel::Vector { threads_per_row: if narrow_on { 16 } else { 8 } };
    planned_products_match::<f64>(ctx, &a, want, narrow_on, "a band of 601 on 20000 rows, f64");
    planned_products_match::<f32>(ctx, &a.cast::<f32>(), want, narrow_on, "a band of 601 on 20000 rows, f32");
}

/// The vector kernel on CSR columns stored as 16-bit offsets: bands within 32767 of the
/// diagonal (40000 rows of 301, more than a GPU's worth of threads at 8 per row; 3000 rows
/// of 1201, fewer) with 4, 8 and 32 threads per row, f64 and f32; the upload stores offsets
/// only where the mean row has 32 entries per thread (not for rows of 301 at 32). Each
/// product is checked against the reference and, where the 32-bit columns' launch batches
/// its rows too, must equal bit for bit the same kernel's on 32-bit columns (after
/// `set_kernel` to the scalar kernel widened the columns) and the same storage behind 64-bit
/// positions; the download gives the matrix back each way, and the offsets take 2 bytes per
/// entry fewer than the CSR arrays.
fn vector_kernel_on_16_bit_columns<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    let narrow_on = std::env::var("SPGPU_NARROW_COLUMNS").map_or(true, |v| v.trim() != "0");
    let mut rng = StdRng::seed_from_u64(16);
    for (name, a) in [
        ("band of 301 on 40000 rows", gen::banded::<f64>(40_000, 150, 5)),
        ("band of 1201 on 3000 rows", gen::banded::<f64>(3_000, 600, 6)),
    ] {
        let a: CsrMatrix<T> = a.cast();
        for tpr in [4, 8, 32] {
            let what = format!("{name}, {tpr} threads per row, {}", T::NAME);
            let mut d = DeviceCsr::upload_with(ctx, &a, KernelChoice::VectorTpr(tpr)).unwrap();
            let narrow = narrow_on && spgpu::gpu::narrow::csr_offsets_pay(a.row_stats().mean, tpr);
            assert_eq!(narrow, narrow_on && (tpr < 32 || a.nrows() == 3000), "{what}: the case meant");
            let storage = if narrow { "CSR with 16-bit column offsets" } else { "CSR" };
            assert_eq!((d.storage_name(), d.plan().narrow_columns()), (storage, narrow), "{what}");
            if narrow {
                assert_eq!(d.device_bytes() + 2 * a.nnz(), d.csr_bytes(), "{what}: device bytes");
                assert!(d.csr_ptrs().is_none(), "{what}: no 32-bit columns to hand out");
            }
            assert_eq!(d.download().unwrap(), a, "{what}: download");
            let x = random_vec::<T>(&mut rng, a.ncols());
            let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
            // the same storage behind 64-bit positions (a test-only base past 2^32): the same bits
            let shifted =
                DeviceCsr::upload_with_entry_base(ctx, &a, KernelChoice::VectorTpr(tpr), (1u64 << 32) + 5).unwrap();
            assert_eq!(shifted.storage_name(), storage, "{what}: 64-bit positions");
            assert_eq!(shifted.download().unwrap(), a, "{what}: download, 64-bit positions");
            let mut y_shifted = DeviceVector::from_slice(ctx, &vec![T::from_f64(f64::NAN); a.nrows()]).unwrap();
            shifted.spmv(T::from_f64(-2.5), &d_x, T::ZERO, &mut y_shifted).unwrap();
            let mut products = Vec::new();
            for step in ["as uploaded", "widened"] {
                if step == "widened" {
                    d.set_kernel(KernelChoice::Scalar).unwrap();
                    assert_eq!((d.storage_name(), d.plan().narrow_columns()), ("CSR", false), "{what}: scalar");
                    assert!(d.csr_ptrs().is_some(), "{what}: 32-bit columns after widening");
                    assert_eq!(d.download().unwrap(), a, "{what}: download after widening");
                    d.set_kernel(KernelChoice::VectorTpr(tpr)).unwrap();
                    assert_eq!(d.storage_name(), "CSR", "{what}: the vector kernel keeps the 32-bit columns");
                }
                let mut d_y = DeviceVector::from_slice(ctx, &vec![T::from_f64(f64::NAN); a.nrows()]).unwrap();
                d.spmv(T::from_f64(-2.5), &d_x, T::ZERO, &mut d_y).unwrap();
                let got = d_y.to_vec().unwrap();
                check(&format!("{what}, {step}"), &a, T::from_f64(-2.5), &x, T::ZERO, &vec![T::ZERO; a.nrows()], &got);
                products.push(got);
            }
            // the same loop, so the same bits, when 32-bit columns batch too: at most a GPU's
            // worth of threads (2048 per SM); 16-bit columns always batch
            let same_shifted = y_shifted
                .to_vec()
                .unwrap()
                .iter()
                .zip(&products[0])
                .all(|(s, n)| s.to_f64().to_bits() == n.to_f64().to_bits());
            assert!(same_shifted, "{what}: 64-bit positions give different bits");
            let same = products[0].iter().zip(&products[1]).all(|(n, w)| n.to_f64().to_bits() == w.to_f64().to_bits());
            let threads = a.nrows().div_ceil(256 / tpr as usize) * 256;
            if threads <= ctx.info().sm_count as usize * 2048 {
                assert!(same, "{what}: 16-bit and 32-bit columns give different bits");
            }
        }
    }
}

#[test]
fn vector_kernel_on_16_bit_columns_f64() {
    vector_kernel_on_16_bit_columns::<f64>("vector_kernel_on_16_bit_columns_f64");
}

#[test]
fn vector_kernel_on_16_bit_columns_f32() {
    vector_kernel_on_16_bit_columns::<f32>("vector_kernel_on_16_bit_columns_f32");
}

/// Long rows split into several chunks (balanced kernel, hot-column kernel, SELL) with NaN
/// and infinities in `x`. The block of a long row's last chunk waits until the other chunks'
/// slots no longer hold the "no sum" NaN pattern, so no stored sum may look like it: a NaN
/// read from `x` (here with every payload bit set, the pattern itself) must come out as a
/// NaN in `y` without a hang, twice in a row (the slots are reset between calls).
fn long_rows_with_nan_and_infinities<T: Scalar>(test: &str, nan: T) {
    let Some(ctx) = gpu(test) else { return };
    let (nrows, ncols) = (40usize, 50_000usize);
    // (row, first column, entries): a NaN (column 100), +inf (7000), finite, and +inf with
    // -inf (30000, 30001); the other rows are short and read finite entries only
    let long = [(3usize, 0usize, 9000usize), (20, 7000, 5000), (30, 20_000, 5000), (31, 30_000, 5000)];
    let (mut offsets, mut cols, mut vals) = (vec![0u64], Vec::new(), Vec::new());
    for i in 0..nrows {
        let (first, len) = long.iter().find(|l| l.0 == i).map_or((40_000 + 10 * i, 4), |l| (l.1, l.2));
        cols.extend((first..first + len).map(|c| c as u32));
        vals.extend((0..len).map(|k| T::from_f64(if k % 2 == 0 { 1.0 } else { -0.5 })));
        offsets.push(cols.len() as u64);
    }
    let a = CsrMatrix::try_from_parts(nrows, ncols, offsets, cols, vals).unwrap();
    let mut x = vec![T::from_f64(0.25); ncols];
    x[100] = nan;
    x[7000] = T::from_f64(f64::INFINITY);
    x[30_000] = T::from_f64(f64::INFINITY);
    x[30_001] = T::from_f64(f64::INFINITY); // its value is -0.5: -inf
    let mut want = vec![T::ZERO; nrows];
    reference::spmv_csr(T::ONE, &a, &x, T::ZERO, &mut want).unwrap();
    assert!(want[3].to_f64().is_nan() && want[20].to_f64() == f64::INFINITY && want[31].to_f64().is_nan());
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    for (choice, hot) in [
        (KernelChoice::Balanced, HotChoice::Off),
        (KernelChoice::Balanced, HotChoice::Force(64)),
        (KernelChoice::Sell, HotChoice::Off),
    ] {
        let mut uploads =
            vec![(format!("{choice} ({hot:?})"), DeviceCsr::upload_with_hot(ctx, &a, choice, hot, 0).unwrap())];
        if choice == KernelChoice::Balanced && hot == HotChoice::Off {
            for shape in RowShape::ALL.into_iter().filter(|&s| s != RowShape::DEFAULT) {
                let d = DeviceCsr::upload_with(ctx, &a, KernelChoice::BalancedThreads(shape.threads as u32)).unwrap();
                uploads.push((format!("balanced of {} threads", shape.threads), d));
            }
        }
        for (what, d) in &uploads {
            for call in 0..2 {
                let mut d_y = DeviceVector::from_slice(ctx, &vec![T::from_f64(f64::NAN); nrows]).unwrap();
                d.spmv(T::ONE, &d_x, T::ZERO, &mut d_y).unwrap();
                let got = d_y.to_vec().unwrap();
                for i in 0..nrows {
                    let (g, w) = (got[i].to_f64(), want[i].to_f64());
                    let same = if w.is_finite() {
                        (g - w).abs() <= 1e-5 * w.abs().max(1.0)
                    } else {
                        g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
                    };
                    assert!(same, "{what}, {}, call {call}: y[{i}] = {g}, reference {w}", T::NAME);
                }
            }
        }
    }
}

#[test]
fn long_rows_with_nan_and_infinities_f64() {
    long_rows_with_nan_and_infinities::<f64>("long_rows_with_nan_and_infinities_f64", f64::from_bits(u64::MAX));
}

#[test]
fn long_rows_with_nan_and_infinities_f32() {
    long_rows_with_nan_and_infinities::<f32>("long_rows_with_nan_and_infinities_f32", f32::from_bits(u32::MAX));
}

/// `set_kernel` between row-block shapes on a matrix uploaded with hot columns: a forced
/// shape drops the hot columns (the hot-column kernel runs default blocks only) and cuts
/// blocks of that shape; plain `balanced` then keeps them; every product matches the
/// reference, and the plan says which blocks run.
#[test]
fn set_kernel_switches_row_block_shapes() {
    let Some(ctx) = gpu("set_kernel_switches_row_block_shapes") else { return };
    let mut lengths: Vec<usize> = (0..3000).map(|i| (i * 13) % 20).collect();
    lengths[100] = 5000; // a long row: chunks in both shapes
    let a = lengths_csr(&lengths, 4000, 21);
    let mut d = DeviceCsr::upload_with_hot(ctx, &a, KernelChoice::Balanced, HotChoice::Force(256), 0).unwrap();
    assert!(d.plan().hot_columns());
    let mut rng = StdRng::seed_from_u64(22);
    let x = random_vec::<f64>(&mut rng, a.ncols());
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let product = |d: &DeviceCsr<f64>, what: &str| {
        let mut d_y = DeviceVector::from_slice(ctx, &vec![f64::NAN; a.nrows()]).unwrap();
        d.spmv(1.0, &d_x, 0.0, &mut d_y).unwrap();
        check(what, &a, 1.0, &x, 0.0, &vec![0.0; a.nrows()], &d_y.to_vec().unwrap());
    };
    product(&d, "hot columns");
    for (choice, threads) in [
        (KernelChoice::BalancedThreads(512), 512),
        (KernelChoice::Balanced, 512),
        (KernelChoice::BalancedThreads(256), 256),
        (KernelChoice::VectorTpr(4), 0),
        (KernelChoice::BalancedThreads(512), 512),
    ] {
        d.set_kernel(choice).unwrap();
        let what = format!("set_kernel({choice})");
        assert!(!d.plan().hot_columns(), "{what}: {}", d.plan().explain());
        match threads {
            0 => assert_eq!(d.plan().row_shape(), None, "{what}"),
            t => assert_eq!(d.plan().row_shape().map(|s| s.threads), Some(t), "{what}: {}", d.plan().explain()),
        }
        product(&d, &what);
    }
    assert_eq!(d.download().unwrap(), a);
}

/// SELL slots of a circuit-like matrix (a band plus 4 power and ground nets, whose columns
/// lie far from most of the rows holding them): 16-bit offsets with a table of the 4 far
/// columns (32-bit columns with `SPGPU_NARROW_COLUMNS=0`). Products against the reference
/// (NaN in `y` for `beta` 0), a repeated call and the 64-bit positions' kernel give the same
/// bits, and the download gives the matrix back.
fn sell_with_far_columns<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    let narrow_on = std::env::var("SPGPU_NARROW_COLUMNS").map_or(true, |v| v.trim() != "0");
    let a: CsrMatrix<T> = gen::circuit::<f64>(200_000, 3).unwrap().cast();
    let d = DeviceCsr::upload_with(ctx, &a, KernelChoice::Sell).unwrap();
    let what = format!("circuit of 200000 rows, SELL, {}", T::NAME);
    assert_eq!(d.plan().kernel(), SpmvKernel::Sell, "{what}");
    let far = if narrow_on { 4 } else { 0 };
    assert_eq!((d.plan().narrow_columns(), d.plan().far_columns()), (narrow_on, far), "{}", d.plan().explain());
    if narrow_on {
        assert!(d.plan().explain().contains("4 far column(s)"), "{}", d.plan().explain());
    }
    assert_eq!(d.download().unwrap(), a, "{what}: download");
    let shifted = DeviceCsr::upload_with_entry_base(ctx, &a, KernelChoice::Sell, (1u64 << 32) + 77).unwrap();
    assert_eq!(shifted.plan().far_columns(), far, "{what}: 64-bit positions");
    let mut rng = StdRng::seed_from_u64(33);
    for (alpha, beta) in [(T::ONE, T::ZERO), (T::from_f64(-2.5), T::ONE)] {
        let x = random_vec::<T>(&mut rng, a.ncols());
        let y0 = start_y::<T>(&mut rng, a.nrows(), beta);
        let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
        let mut outs = Vec::new();
        for m in [&d, &d, &shifted] {
            let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
            m.spmv(alpha, &d_x, beta, &mut d_y).unwrap();
            outs.push(d_y.to_vec().unwrap());
        }
        check(&format!("{what}, alpha {alpha}, beta {beta}"), &a, alpha, &x, beta, &y0, &outs[0]);
        for (k, o) in outs.iter().enumerate().skip(1) {
            let same = o.iter().zip(&outs[0]).all(|(g, f)| g.to_f64().to_bits() == f.to_f64().to_bits());
            assert!(same, "{what}: product {k} (a repeated call, then 64-bit positions) differs from the first");
        }
    }
}

#[test]
fn sell_with_far_columns_f64() {
    sell_with_far_columns::<f64>("sell_with_far_columns_f64");
}

#[test]
fn sell_with_far_columns_f32() {
    sell_with_far_columns::<f32>("sell_with_far_columns_f32");
}

/// Uploads `a` with the automatic plan, asserts its kernel (`want`) and 16-bit column flag
/// (`narrow`), checks a product against the reference (NaN in `y`, `beta` 0), and the same
/// after `set_kernel(Auto)`, which must keep both.
fn planned_products_match<T: Scalar>(
    ctx: &'static Context,
    a: &CsrMatrix<T>,
    want: SpmvKernel,
    narrow: bool,
    what: &str,
) {
    let mut d = DeviceCsr::upload(ctx, a).unwrap();
    assert_eq!(d.plan().kernel(), want, "{what}: {}", d.plan().explain());
    assert_eq!(d.plan().narrow_columns(), narrow, "{what}: {}", d.plan().explain());
    let mut rng = StdRng::seed_from_u64(7);
    let x = random_vec::<T>(&mut rng, a.ncols());
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    for round in ["upload", "set_kernel(auto)"] {
        let mut d_y = DeviceVector::from_slice(ctx, &vec![T::from_f64(f64::NAN); a.nrows()]).unwrap();
        d.spmv(T::ONE, &d_x, T::ZERO, &mut d_y).unwrap();
        check(&format!("{what}, {round}"), a, T::ONE, &x, T::ZERO, &vec![T::ZERO; a.nrows()], &d_y.to_vec().unwrap());
        d.set_kernel(KernelChoice::Auto).unwrap();
        assert_eq!(d.plan().kernel(), want, "{what}: set_kernel(auto): {}", d.plan().explain());
        assert_eq!(d.plan().narrow_columns(), narrow, "{what}: set_kernel(auto) keeps the 16-bit flag");
    }
}

/// Rule 4 with the columns looked at (`SpmvPlan::column_layout`): a band of 17 entries per
/// row runs ELL with 16-bit columns, random rows of 4 over 3 million columns run SELL in f64
/// and ELL in f32; 50000 random rows of 30 (rule 2's mid-length rows) run SELL and a band of
/// 31 on 50000 rows 4 threads per row; `set_kernel(Auto)` keeps each on its storage; every
/// product against the reference.
#[test]
fn short_even_rows_follow_their_columns() {
    let Some(ctx) = gpu("short_even_rows_follow_their_columns") else { return };
    let narrow_on = std::env::var("SPGPU_NARROW_COLUMNS").map_or(true, |v| v.trim() != "0");
    let band = gen::banded::<f64>(200_000, 8, 3);
    let random = gen::random_uniform::<f64>(200_000, 3_000_000, 4, 5); // x of 24 MB in f64
    let band_kernel = if narrow_on { SpmvKernel::Ell } else { SpmvKernel::Sell };
    planned_products_match::<f64>(ctx, &band, band_kernel, narrow_on, "band of 17, f64");
    planned_products_match::<f32>(ctx, &band.cast::<f32>(), band_kernel, narrow_on, "band of 17, f32");
    planned_products_match::<f64>(ctx, &random, SpmvKernel::Sell, false, "random rows of 4, f64");
    planned_products_match::<f32>(ctx, &random.cast::<f32>(), SpmvKernel::Ell, false, "random rows of 4, f32");
    // a small matrix of 50000 rows of about 30 (4 threads per row by the fill rule): SELL
    // for random columns, the vector kernel for a band (narrow columns)
    let mid_random = gen::random_uniform::<f64>(50_000, 200_000, 30, 7);
    planned_products_match::<f64>(ctx, &mid_random, SpmvKernel::Sell, false, "50000 random rows of 30, f64");
    planned_products_match::<f32>(
        ctx,
        &mid_random.cast::<f32>(),
        SpmvKernel::Sell,
        false,
        "50000 random rows of 30, f32",
    );
    let mid_band = gen::banded::<f64>(50_000, 15, 8);
    let (mid_band_kernel, what) = if narrow_on {
        (SpmvKernel::Vector { threads_per_row: 4 }, "a band of 31 on 50000 rows (narrow)")
    } else {
        (SpmvKernel::Sell, "a band of 31 on 50000 rows (narrow columns off: local)")
    };
    planned_products_match::<f64>(ctx, &mid_band, mid_band_kernel, false, what);
}

/// The balanced kernels' variants that gather `x` with the L2 prefetch hint
/// ([`prefetch_x`](spgpu::gpu::balance::prefetch_x)), switched on and off with
/// `set_prefetch_x` on one upload: the hint changes where the L2 fills lines from, not the
/// sums, so both give the same bits, for blocks of 256 and 512 threads, the hot-column
/// kernel and 64-bit positions; within the reference's bound, `beta = 0` with NaN in `y`.
/// Blocks in chunk-major order (few rows) have no such variant: the switch is refused.
fn prefetching_gathers<T: Scalar>(test: &str) {
    let Some(ctx) = gpu(test) else { return };
    let mut rng = StdRng::seed_from_u64(7_070);
    let mut cases: Vec<(String, CsrMatrix<T>)> =
        matrices().into_iter().map(|(n, a)| (n.to_string(), a.cast())).collect();
    cases.push(("rmat 2^12, 16 per row".to_string(), gen::rmat::<T>(12, 16, 5).unwrap()));
    let bits = |v: &[T]| v.iter().map(|g| g.to_f64().to_bits()).collect::<Vec<u64>>();
    let mut compared = 0;
    for (name, a) in &cases {
        for (how, choice, hot, base) in [
            ("blocks of 256", KernelChoice::Balanced, HotChoice::Off, 0),
            ("blocks of 512", KernelChoice::BalancedThreads(512), HotChoice::Off, 0),
            ("hot columns", KernelChoice::Balanced, HotChoice::Force(64), 0),
            ("64-bit positions", KernelChoice::Balanced, HotChoice::Off, (1u64 << 32) + 77),
        ] {
            let what = format!("{name}, {how}");
            let mut d = DeviceCsr::upload_with_hot(ctx, a, choice, hot, base).unwrap();
            if name.starts_with("rmat") && hot != HotChoice::Off {
                // the prefetching hot-column kernel runs
                assert!(d.plan().hot_columns(), "{what}: {}", d.plan().explain());
            }
            if d.plan().explain().contains("chunk-major") {
                assert!(d.set_prefetch_x(true).is_err(), "{what}: chunk-major blocks have no prefetching variant");
                continue;
            }
            for (alpha, beta) in [(1.0, 0.0), (-2.5, 1.0)] {
                let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
                let x = random_vec::<T>(&mut rng, a.ncols());
                let y0 = start_y::<T>(&mut rng, a.nrows(), beta);
                let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
                let mut got = Vec::new();
                for on in [false, true] {
                    d.set_prefetch_x(on).unwrap();
                    assert_eq!(d.plan().prefetch_x(), on, "{what}");
                    assert_eq!(d.plan().explain().contains("128-byte L2 prefetch"), on, "{}", d.plan().explain());
                    let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
                    d.spmv(alpha, &d_x, beta, &mut d_y).unwrap();
                    let y = d_y.to_vec().unwrap();
                    check(&format!("{what}, prefetch {on}, alpha {alpha}, beta {beta}"), a, alpha, &x, beta, &y0, &y);
                    got.push(bits(&y));
                }
                assert_eq!(got[0], got[1], "{what}, alpha {alpha}, beta {beta}: the prefetching kernel differs");
                compared += 1;
            }
        }
    }
    // the R-MAT graph and the larger matrices run in row order in every form
    assert!(compared >= 8, "only {compared} comparisons ran");
}

#[test]
fn prefetching_gathers_give_the_same_bits_f64() {
    prefetching_gathers::<f64>("prefetching_gathers_give_the_same_bits_f64");
}

#[test]
fn prefetching_gathers_give_the_same_bits_f32() {
    prefetching_gathers::<f32>("prefetching_gathers_give_the_same_bits_f32");
}

/// The upload's rule for the prefetching gathers: skewed rows over as many columns as make
/// an f64 `x` take 45% of the device's L2 run the prefetching variant (the share lies in
/// `PREFETCH_X_L2_SHARE`, and under the half of the L2 where column parts would begin),
/// and the f32 `x` of the same matrix, at 22.5%, does not, on GPUs
/// whose PTX has the hint (compute capability 8.0 and up); the plan says so, and both
/// products match the reference. Set to the scalar kernel, the matrix keeps its row blocks
/// but the plan no longer claims the prefetch; set back to balanced, it does again.
#[test]
fn prefetching_gathers_follow_the_share_of_the_l2() {
    let Some(ctx) = gpu("prefetching_gathers_follow_the_share_of_the_l2") else { return };
    let _alone = LARGE_ALLOCATIONS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let l2 = ctx.info().l2_cache_bytes;
    assert!(l2 >= 1 << 20, "an L2 of {l2} bytes");
    let ncols = (0.45 * l2 as f64 / 8.0) as usize;
    // 20000 rows: 3 entries, and every 50th row 2000 (skewed: the balanced kernel)
    let lengths: Vec<usize> = (0..20_000).map(|r| if r % 50 == 0 { 2000 } else { 3 }).collect();
    let a = lengths_csr(&lengths, ncols, 41);
    let env = std::env::var(spgpu::gpu::balance::PREFETCH_X_ENV);
    let forced = matches!(env.as_deref().map(str::trim), Ok("0" | "1"));
    let mut rng = StdRng::seed_from_u64(42);
    for (scalar, share) in [("f64", 0.45), ("f32", 0.225)] {
        let x = random_vec::<f64>(&mut rng, a.ncols());
        let y0 = start_y(&mut rng, a.nrows(), 0.0);
        let plans = if scalar == "f64" {
            upload_and_check::<f64>(ctx, &a, &x, &y0)
        } else {
            upload_and_check::<f32>(ctx, &a, &x, &y0)
        };
        let [plan, scalar_plan, balanced_again] = &plans;
        assert_eq!(plan.kernel(), SpmvKernel::Balanced, "{}", plan.explain());
        // another CSR kernel keeps the row blocks but gathers plainly, and says so
        assert!(!scalar_plan.prefetch_x(), "{scalar}, set to scalar: {}", scalar_plan.explain());
        assert!(!scalar_plan.explain().contains("prefetch"), "{}", scalar_plan.explain());
        assert_eq!(balanced_again.prefetch_x(), plan.prefetch_x(), "{}", balanced_again.explain());
        if !forced {
            let want = ctx.l2_prefetch() && share == 0.45;
            assert_eq!(plan.prefetch_x(), want, "{scalar}, x at {share} of the L2: {}", plan.explain());
            let says = format!("x takes {:.0}% of the", 100.0 * share);
            assert_eq!(plan.explain().contains(&says), want, "{scalar}: {says}? {}", plan.explain());
        }
    }
}

/// Uploads `a` in the scalar type `T` with the auto plan, checks `y = A x` (NaN in `y0`, beta
/// 0) against the reference, then sets the scalar kernel and the balanced one again: the
/// three plans.
fn upload_and_check<T: Scalar>(ctx: &'static Context, a: &CsrMatrix<f64>, x: &[f64], y0: &[f64]) -> [SpmvPlan; 3] {
    let (a, x, y0) = (a.cast::<T>(), to_scalar::<T>(x), to_scalar::<T>(y0));
    let mut d = DeviceCsr::upload(ctx, &a).unwrap();
    let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
    d.spmv(T::ONE, &DeviceVector::from_slice(ctx, &x).unwrap(), T::ZERO, &mut d_y).unwrap();
    check(&format!("skewed rows, {}", T::NAME), &a, T::ONE, &x, T::ZERO, &y0, &d_y.to_vec().unwrap());
    let auto = d.plan().clone();
    d.set_kernel(KernelChoice::Scalar).unwrap();
    let scalar = d.plan().clone();
    d.set_kernel(KernelChoice::Balanced).unwrap();
    [auto, scalar, d.plan().clone()]
}
