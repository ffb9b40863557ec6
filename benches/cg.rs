//! Time per CG iteration on the GPU: `cg/<format>/<scalar>/<matrix>[/jacobi][/no_graphs]`.
//!
//! Each sample runs CG for a fixed number of iterations (`rtol = 0`, so it never stops
//! early) and counts the solver's own iteration time, which includes the checkpoints where
//! the residual norm comes back to the host (every 16 iterations by default): the time a
//! user waits, with the device synchronized before the clock is read. Batches of
//! iterations are replayed as CUDA graphs (the default); `/no_graphs` launches every
//! kernel from the host instead. Setup (upload, first
//! residual, workspace) and the final true-residual check stay outside. Throughput is the
//! bytes-moved floor of one iteration ([`spgpu::solver::iteration_floor_bytes`],
//! `docs/cg.md`), so criterion's GB/s compare with the H200's 4.28 TB/s copy bandwidth.
//!
//! Matrices: the anchors' 250000-row Poisson problem (the leading 250000 x 250000 block of
//! the 2000 x 2000 grid Laplacian, where CuPy takes 215 us per iteration), `lap2d:500`
//! (250000 rows too), and the 4-million-row `lap2d:2000`. Without a GPU the benchmark
//! prints why and measures nothing (it fails instead when `SPGPU_REQUIRE_GPU=1`).
//!
//! ```text
//! cargo bench --bench cg
//! cargo bench --bench cg -- 'cg/ell/f64/lap2d_2000'
//! ```

use criterion::{Criterion, Throughput};
use spgpu::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector};
use spgpu::solver::{cg, iteration_floor_bytes, CgError, CgParams, Device, LinearOperator, PreconditionerKind};
use spgpu::{gen, CsrMatrix, Scalar};
use std::time::Duration;

/// Iterations per timed solve.
const ITERATIONS: usize = 200;

/// The leading `n x n` block of `a`.
fn leading_block(a: &CsrMatrix<f64>, n: usize) -> CsrMatrix<f64> {
    let (mut offsets, mut cols, mut vals) = (vec![0u64], Vec::new(), Vec::new());
    for i in 0..n {
        let (c, v) = a.row(i);
        for (&c, &v) in c.iter().zip(v) {
            if (c as usize) < n {
                cols.push(c);
                vals.push(v);
            }
        }
        offsets.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(n, n, offsets, cols, vals).expect("a block of a valid matrix is valid")
}

/// The time per iteration of `ITERATIONS` CG iterations on `op`, from `x0 = 0`.
fn time_per_iteration<T: Scalar, A: LinearOperator<T, Vector = DeviceVector<T>>>(
    device: &Device,
    op: &A,
    b: &DeviceVector<T>,
    precond: PreconditionerKind,
    use_graphs: bool,
) -> Duration {
    let ctx = device.context();
    let mut x = DeviceVector::zeros(ctx, op.nrows()).expect("allocating x");
    let params =
        CgParams { rtol: 0.0, max_iter: Some(ITERATIONS), preconditioner: precond, use_graphs, ..CgParams::default() };
    let report = match cg(device, op, b, &mut x, &params) {
        Err(CgError::NoConvergence { report }) => *report,
        Ok(report) => report,
        Err(e) => panic!("CG failed: {e}"),
    };
    assert_eq!(report.iterations, ITERATIONS, "the benchmark needs every iteration to run");
    report.time_per_iteration()
}

fn bench_matrix(c: &mut Criterion, device: &Device, name: &str, a: &CsrMatrix<f64>) {
    let ctx = device.context();
    let mut b = vec![0.0; a.nrows()];
    spgpu::reference::spmv_csr(1.0, a, &vec![1.0; a.ncols()], 0.0, &mut b).expect("b = A 1");
    let d_b = DeviceVector::from_slice(ctx, &b).expect("uploading b");
    let d_csr = DeviceCsr::upload(ctx, a).expect("uploading CSR");
    let d_ell = DeviceEll::from_csr(ctx, a).expect("uploading ELL");
    let mut group = c.benchmark_group("cg");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for precond in [PreconditionerKind::None, PreconditionerKind::Jacobi] {
        let jacobi = precond == PreconditionerKind::Jacobi;
        let bytes = iteration_floor_bytes(a.nrows(), a.nnz(), f64::BYTES, jacobi);
        group.throughput(Throughput::Bytes(bytes as u64));
        let suffix = if jacobi { "/jacobi" } else { "" };
        for (format, graphs) in [("ell", true), ("csr", true), ("ell", false)] {
            let variant = if graphs { "" } else { "/no_graphs" };
            let id = format!("{format}/f64/{name}{suffix}{variant}");
            let run = || match format {
                "ell" => time_per_iteration(device, &d_ell, &d_b, precond, graphs),
                _ => time_per_iteration(device, &d_csr, &d_b, precond, graphs),
            };
            let once = run();
            let floor = bytes as f64 / 4.28e12;
            eprintln!(
                "cg/{id}: {:.2} us per iteration, {:.1} MB floor = {:.2} us at 4.28 TB/s, {:.2}x the floor",
                once.as_secs_f64() * 1e6,
                bytes as f64 / 1e6,
                floor * 1e6,
                once.as_secs_f64() / floor
            );
            group.bench_function(&id, |bencher| {
                bencher.iter_custom(|iters| (0..iters).map(|_| run()).sum());
            });
        }
    }
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let ctx = match Context::global() {
        Ok(ctx) => ctx,
        Err(e) if e.is_no_device() && std::env::var("SPGPU_REQUIRE_GPU").as_deref() != Ok("1") => {
            eprintln!("cg bench: no GPU ({e}); nothing measured");
            return;
        }
        Err(e) => panic!("cg bench: no usable GPU: {e}"),
    };
    let device = Device::new(ctx).expect("the CG workspace");
    let lap2000 = gen::laplacian_2d::<f64>(2000);
    let anchors = leading_block(&lap2000, 250_000);
    assert_eq!(anchors.nnz(), 1_245_750, "the anchors' matrix has 1245750 entries");
    bench_matrix(&mut c, &device, "lap2d_2000_first_250k", &anchors);
    bench_matrix(&mut c, &device, "lap2d_500", &gen::laplacian_2d::<f64>(500));
    bench_matrix(&mut c, &device, "lap2d_2000", &lap2000);
    c.final_summary();
}
