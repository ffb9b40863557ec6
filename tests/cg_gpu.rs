//! Conjugate gradient on the GPU: convergence on SuiteSparse SPD matrices and on generated
//! Poisson problems (CSR fused, ELL fused, CSR vector unfused), with the residual checked
//! independently on the host in f64; Jacobi on bcsstk13; breakdown on an indefinite matrix;
//! bit-identical repeated runs; agreement with the CPU backend; errors; the precision limit,
//! tolerances below the precision, and right-hand sides whose squares overflow. The tests
//! run with the harness's default threads (GPU solves from several threads at once;
//! `tests/threads.rs` stresses that).
//!
//! Each test skips with a line on stderr when there is no GPU, and fails instead when
//! `SPGPU_REQUIRE_GPU=1`; those on SuiteSparse matrices likewise without `SPGPU_MATRICES`
//! (a folder of them), failing instead when `SPGPU_REQUIRE_MATRICES=1`.

mod common;
use common::{external_matrix, gpu, rhs_of_ones, true_relative_residual, GeneralJacobi};

use spgpu::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector};
use spgpu::solver::{
    cg, cg_with, Backend, CgError, CgParams, CgReport, CgWarning, Device, Host, Jacobi, PreconditionerKind, StopReason,
    PRECISION_LIMIT_FACTOR,
};
use spgpu::{gen, reference, CsrMatrix, Scalar};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    Csr,
    Ell,
}

/// Solves on the GPU from x0 = 0; returns the result and the downloaded solution.
fn gpu_solve<T: Scalar>(
    ctx: &'static Context,
    a: &CsrMatrix<T>,
    b: &[T],
    params: &CgParams,
    format: Format,
) -> (Result<CgReport, CgError>, Vec<T>) {
    let device = Device::new(ctx).unwrap();
    let d_b = DeviceVector::from_slice(ctx, b).unwrap();
    let mut d_x = DeviceVector::zeros(ctx, a.nrows()).unwrap();
    let res = match format {
        Format::Csr => cg(&device, &DeviceCsr::upload(ctx, a).unwrap(), &d_b, &mut d_x, params),
        Format::Ell => cg(&device, &DeviceEll::from_csr(ctx, a).unwrap(), &d_b, &mut d_x, params),
    };
    (res, d_x.to_vec().unwrap())
}

fn check_converges(
    ctx: &'static Context,
    name: &str,
    a: &CsrMatrix<f64>,
    precond: PreconditionerKind,
    rtol: f64,
    format: Format,
) -> usize {
    let b = rhs_of_ones(a);
    let params = CgParams { rtol, preconditioner: precond, ..CgParams::default() };
    let (res, x) = gpu_solve(ctx, a, &b, &params, format);
    let report = res.unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(report.stop_reason, StopReason::Converged, "{name}");
    let rel = true_relative_residual(a, &x, &b);
    assert!(rel <= rtol, "{name}: true relative residual {rel:e} > {rtol:e}");
    assert!(
        (report.relative_residual - rel).abs() <= 1e-3 * rtol + 1e-14,
        "{name}: report {} vs {rel}",
        report.relative_residual
    );
    println!(
        "{name} ({precond:?}, {format:?}): {} iterations, relative residual {rel:.3e}, {:.1} us per iteration",
        report.iterations,
        report.time_per_iteration().as_secs_f64() * 1e6
    );
    report.iterations
}

#[test]
fn converges_on_shared_spd_matrices() {
    let Some(ctx) = gpu("converges_on_shared_spd_matrices") else { return };
    for (name, precond) in [
        ("494_bus", PreconditionerKind::None),
        ("1138_bus", PreconditionerKind::None),
        ("bcsstk08", PreconditionerKind::Jacobi),
        ("bcsstk09", PreconditionerKind::None),
        ("bcsstk10", PreconditionerKind::Jacobi),
        ("bcsstk16", PreconditionerKind::None),
        ("bcsstm25", PreconditionerKind::None),
        ("LFAT5", PreconditionerKind::Jacobi),
    ] {
        let Some(a) = external_matrix::<f64>(name) else { return };
        let gpu_iters = check_converges(ctx, name, &a, precond, 1e-8, Format::Csr);
        // The CPU backend solves the same problem in about as many iterations.
        let b = rhs_of_ones(&a);
        let mut x = vec![0.0; a.nrows()];
        let params = CgParams { preconditioner: precond, ..CgParams::default() };
        let cpu_iters = cg(&Host, &a, &b, &mut x, &params).unwrap().iterations;
        // Rounding differs (another summation order), and on ill-conditioned matrices the
        // count moves with it: within a quarter.
        let slack = cpu_iters / 4 + 10;
        assert!(gpu_iters.abs_diff(cpu_iters) <= slack, "{name}: GPU {gpu_iters} vs CPU {cpu_iters} iterations");
    }
}

#[test]
fn converges_on_poisson_problems() {
    let Some(ctx) = gpu("converges_on_poisson_problems") else { return };
    let lap = gen::laplacian_2d::<f64>(40);
    let csr = check_converges(ctx, "lap2d:40", &lap, PreconditionerKind::None, 1e-10, Format::Csr);
    let ell = check_converges(ctx, "lap2d:40", &lap, PreconditionerKind::None, 1e-10, Format::Ell);
    assert!(csr.abs_diff(85) <= 2 && ell.abs_diff(85) <= 2, "CPU: 85 iterations; GPU CSR {csr}, ELL {ell}");
    check_converges(ctx, "lap3d:12", &gen::laplacian_3d_7pt(12), PreconditionerKind::Jacobi, 1e-10, Format::Ell);
    // 27 per row: the vector CSR kernel, not fused with the reduction.
    check_converges(ctx, "stencil27:10", &gen::laplacian_3d_27pt(10), PreconditionerKind::Jacobi, 1e-10, Format::Csr);
    // A grid that is not a multiple of the block size, many blocks per reduction.
    check_converges(ctx, "lap2d:517", &gen::laplacian_2d(517), PreconditionerKind::Jacobi, 1e-8, Format::Csr);
}

#[test]
fn single_precision_converges_to_a_single_precision_tolerance() {
    let Some(ctx) = gpu("single_precision") else { return };
    let a = gen::laplacian_2d::<f32>(30);
    let b = rhs_of_ones(&a);
    for format in [Format::Csr, Format::Ell] {
        let params = CgParams { rtol: 1e-5, ..CgParams::default() };
        let (res, x) = gpu_solve(ctx, &a, &b, &params, format);
        res.unwrap();
        assert!(true_relative_residual(&a, &x, &b) <= 1e-5, "{format:?}");
    }
}

/// bcsstk13 needs Jacobi: the counts are those of the CPU backend (1360 and 63218), within
/// the ranges `tests/cg.rs` asserts.
#[test]
fn jacobi_brings_bcsstk13_to_1e_8() {
    let Some(ctx) = gpu("jacobi_brings_bcsstk13_to_1e_8") else { return };
    let Some(a) = external_matrix::<f64>("bcsstk13") else { return };
    let with = check_converges(ctx, "bcsstk13", &a, PreconditionerKind::Jacobi, 1e-8, Format::Csr);
    let b = rhs_of_ones(&a);
    let params = CgParams { max_iter: Some(200_000), check_interval: 64, ..CgParams::default() };
    let (res, x) = gpu_solve(ctx, &a, &b, &params, Format::Csr);
    let without = res.unwrap_or_else(|e| panic!("bcsstk13 without a preconditioner: {e}")).iterations;
    assert!(true_relative_residual(&a, &x, &b) <= 1e-8);
    println!("bcsstk13 on the GPU: {with} iterations with Jacobi, {without} without");
    assert!((1300..=1420).contains(&with), "with Jacobi: {with}");
    assert!((50_000..=80_000).contains(&without), "without: {without}");
}

#[test]
fn indefinite_hang_glider_never_reports_converged() {
    let Some(ctx) = gpu("indefinite_hang_glider") else { return };
    let Some(a) = external_matrix::<f64>("hangGlider_2") else { return };
    let b = rhs_of_ones(&a);
    for precond in [PreconditionerKind::None, PreconditionerKind::Jacobi] {
        let params = CgParams { preconditioner: precond, ..CgParams::default() };
        match gpu_solve(ctx, &a, &b, &params, Format::Csr).0 {
            Err(CgError::Breakdown { pap, .. }) => assert!(pap <= 0.0),
            Err(CgError::NoConvergence { report }) => assert_ne!(report.stop_reason, StopReason::Converged),
            Err(CgError::InvalidDiagonal { .. }) if precond == PreconditionerKind::Jacobi => {}
            other => panic!("hangGlider_2 ({precond:?}): expected a breakdown or no convergence, got {other:?}"),
        }
    }
}

#[test]
fn two_runs_are_bit_identical_and_match_the_cpu() {
    let Some(ctx) = gpu("two_runs_are_bit_identical") else { return };
    let a = gen::laplacian_2d::<f64>(300);
    let b: Vec<f64> = (0..a.nrows()).map(|i| ((i * 7919) % 101) as f64 - 50.0).collect();
    let params = CgParams { max_iter: Some(60), rtol: 0.0, history: true, ..CgParams::default() };
    for format in [Format::Csr, Format::Ell] {
        let (r1, x1) = gpu_solve(ctx, &a, &b, &params, format);
        let (r2, x2) = gpu_solve(ctx, &a, &b, &params, format);
        let (r1, r2) = (r1.unwrap_err(), r2.unwrap_err());
        let h1 = r1.report().unwrap().history.clone().unwrap();
        let h2 = r2.report().unwrap().history.clone().unwrap();
        assert_eq!(h1.len(), 61);
        assert!(x1.iter().zip(&x2).all(|(a, b)| a.to_bits() == b.to_bits()), "{format:?}: iterates differ");
        assert!(h1.iter().zip(&h2).all(|(a, b)| a.to_bits() == b.to_bits()), "{format:?}: histories differ");
        // Same algorithm on the CPU: the same iterates to rounding.
        let mut xc = vec![0.0; a.nrows()];
        let rc = cg(&Host, &a, &b, &mut xc, &params).unwrap_err();
        let hc = rc.report().unwrap().history.clone().unwrap();
        let err = reference::relative_error(&x1, &xc);
        assert!(err <= 1e-9, "{format:?}: GPU and CPU iterates differ by {err:e}");
        for (k, (g, c)) in h1.iter().zip(&hc).enumerate() {
            assert!((g - c).abs() <= 1e-8 * c.abs(), "{format:?}: residual {k}: GPU {g} vs CPU {c}");
        }
    }
}

/// A batch replayed as a CUDA graph runs the same kernels in the same order as step-by-step
/// launches: the same iterates, bit for bit, and the same count.
#[test]
fn graph_replay_gives_the_same_iterates_as_direct_launches() {
    let Some(ctx) = gpu("graph_replay") else { return };
    let a = gen::laplacian_2d::<f64>(123);
    let b = rhs_of_ones(&a);
    for format in [Format::Csr, Format::Ell] {
        for precond in [PreconditionerKind::None, PreconditionerKind::Jacobi] {
            let run = |use_graphs: bool| {
                let params = CgParams { use_graphs, preconditioner: precond, history: true, ..CgParams::default() };
                let (res, x) = gpu_solve(ctx, &a, &b, &params, format);
                (res.unwrap(), x)
            };
            let (rg, xg) = run(true);
            let (rd, xd) = run(false);
            assert_eq!(rg.iterations, rd.iterations, "{format:?} {precond:?}");
            assert!(rg.iterations > 32, "several batches were replayed");
            assert!(bits_equal(&xg, &xd), "{format:?} {precond:?}: iterates differ");
            assert_eq!(rg.history, rd.history, "{format:?} {precond:?}");
            assert!(true_relative_residual(&a, &xg, &b) <= 1e-8);
        }
    }
}

fn bits_equal(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[test]
fn iteration_count_does_not_depend_on_the_check_interval() {
    let Some(ctx) = gpu("check_interval") else { return };
    let a = gen::laplacian_2d::<f64>(30);
    let b = rhs_of_ones(&a);
    let counts: Vec<usize> = [1, 7, 16, 1000]
        .iter()
        .map(|&k| {
            let params = CgParams { check_interval: k, history: true, ..CgParams::default() };
            let report = gpu_solve(ctx, &a, &b, &params, Format::Csr).0.unwrap();
            assert_eq!(report.history.as_ref().unwrap().len(), report.iterations + 1);
            report.iterations
        })
        .collect();
    assert!(counts.iter().all(|&c| c == counts[0]), "{counts:?}");
}

#[test]
fn warm_start_from_the_solution_takes_no_iteration() {
    let Some(ctx) = gpu("warm_start") else { return };
    let a = gen::laplacian_2d::<f64>(10);
    let b = rhs_of_ones(&a);
    let device = Device::new(ctx).unwrap();
    let d_a = DeviceCsr::upload(ctx, &a).unwrap();
    let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
    let mut d_x = DeviceVector::from_slice(ctx, &vec![1.0; a.nrows()]).unwrap();
    let report = cg(&device, &d_a, &d_b, &mut d_x, &CgParams::default()).unwrap();
    assert_eq!(report.iterations, 0);
    assert!(d_x.to_vec().unwrap().iter().all(|&v| v == 1.0));
}

#[test]
fn general_preconditioner_path_matches_the_fused_one() {
    let Some(ctx) = gpu("general_preconditioner") else { return };
    let a = gen::laplacian_3d_27pt::<f64>(8);
    let b = rhs_of_ones(&a);
    let params = CgParams { preconditioner: PreconditionerKind::Jacobi, ..CgParams::default() };
    let fused = gpu_solve(ctx, &a, &b, &params, Format::Csr).0.unwrap();
    let device = Device::new(ctx).unwrap();
    let g = GeneralJacobi(Jacobi::from_diagonal(&device, &a.diagonal()).unwrap());
    let d_a = DeviceCsr::upload(ctx, &a).unwrap();
    let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
    let mut d_x = DeviceVector::zeros(ctx, a.nrows()).unwrap();
    let general = cg_with(&device, &d_a, &g, &d_b, &mut d_x, &CgParams::default(), &mut |_| {}).unwrap();
    assert!(general.iterations.abs_diff(fused.iterations) <= 1, "{} vs {}", general.iterations, fused.iterations);
    assert!(true_relative_residual(&a, &d_x.to_vec().unwrap(), &b) <= 1e-8);
}

#[test]
fn errors_on_the_gpu() {
    let Some(ctx) = gpu("errors_on_the_gpu") else { return };
    // Negative definite: p'Ap < 0 at the first iteration.
    let mut neg = gen::laplacian_2d::<f64>(4);
    neg.values_mut().iter_mut().for_each(|v| *v = -*v);
    match gpu_solve(ctx, &neg, &[1.0; 16], &CgParams::default(), Format::Csr).0 {
        Err(CgError::Breakdown { iteration: 0, pap, .. }) => assert!(pap < 0.0),
        other => panic!("expected a breakdown, got {other:?}"),
    }
    // NaN in the matrix.
    let mut nan = gen::laplacian_2d::<f64>(3);
    nan.values_mut()[7] = f64::NAN;
    let err = gpu_solve(ctx, &nan, &[1.0; 9], &CgParams::default(), Format::Ell).0.unwrap_err();
    assert!(matches!(err, CgError::NonFinite { .. }), "{err:?}");
    // NaN in b.
    let lap = gen::laplacian_2d::<f64>(3);
    let mut b = vec![1.0; 9];
    b[0] = f64::NAN;
    let err = gpu_solve(ctx, &lap, &b, &CgParams::default(), Format::Csr).0.unwrap_err();
    assert!(matches!(err, CgError::NonFiniteInput), "{err:?}");
    // Iteration limit.
    let big = gen::laplacian_2d::<f64>(30);
    let err =
        gpu_solve(ctx, &big, &rhs_of_ones(&big), &CgParams { max_iter: Some(5), ..CgParams::default() }, Format::Csr)
            .0
            .unwrap_err();
    match err {
        CgError::NoConvergence { report } => assert_eq!(report.iterations, 5),
        other => panic!("expected no convergence, got {other:?}"),
    }
    // Jacobi on a zero diagonal (read back from the device matrix).
    let mut zero = gen::laplacian_2d::<f64>(3);
    let k = zero.row_offsets()[5] as usize + zero.row(5).0.iter().position(|&c| c == 5).unwrap();
    zero.values_mut()[k] = 0.0;
    let params = CgParams { preconditioner: PreconditionerKind::Jacobi, ..CgParams::default() };
    let err = gpu_solve(ctx, &zero, &[1.0; 9], &params, Format::Csr).0.unwrap_err();
    assert!(matches!(err, CgError::InvalidDiagonal { row: 5, .. }), "{err:?}");
    // Wrong length of b.
    let device = Device::new(ctx).unwrap();
    let d_a = DeviceCsr::upload(ctx, &lap).unwrap();
    let d_b = DeviceVector::from_slice(ctx, &[1.0; 8]).unwrap();
    let mut d_x = DeviceVector::zeros(ctx, 9).unwrap();
    let err = cg(&device, &d_a, &d_b, &mut d_x, &CgParams::default()).unwrap_err();
    assert!(matches!(err, CgError::DimensionMismatch { what: "b", expected: 9, found: 8 }), "{err:?}");
    // An empty system is solved at once.
    let empty = CsrMatrix::<f64>::zeros(0, 0).unwrap();
    let report = gpu_solve(ctx, &empty, &[], &CgParams::default(), Format::Csr).0.unwrap();
    assert_eq!(report.iterations, 0);
}

/// `spgpu cg gen:lap2d:50 --rtol 0` used to run 6783 iterations until p'Ap underflowed and
/// then call the (SPD) matrix "not symmetric positive definite". Now the recurrence stops at
/// the precision floor: the precision limit, early, on both formats and with graphs.
#[test]
fn rtol_zero_stops_at_the_precision_limit_not_a_breakdown() {
    let Some(ctx) = gpu("rtol_zero_stops_at_the_precision_limit") else { return };
    let a = gen::laplacian_2d::<f64>(50);
    let b = rhs_of_ones(&a);
    for format in [Format::Csr, Format::Ell] {
        let params = CgParams { rtol: 0.0, ..CgParams::default() };
        let (res, x) = gpu_solve(ctx, &a, &b, &params, format);
        let report = match res {
            Err(CgError::NoConvergence { report }) => report,
            other => panic!("{format:?}: expected the precision limit, got {other:?}"),
        };
        assert_eq!(report.stop_reason, StopReason::PrecisionLimit, "{format:?}");
        assert!(report.iterations < 1000, "{format:?}: {} iterations", report.iterations);
        assert!(matches!(report.warnings[0], CgWarning::ToleranceBelowPrecision { .. }), "{:?}", report.warnings);
        let rel = true_relative_residual(&a, &x, &b);
        let limit = PRECISION_LIMIT_FACTOR * report.precision_floor;
        assert!(rel <= limit, "{format:?}: {rel:e} above the precision limit {limit:e}");
    }
}

/// f32 with the default rtol 1e-8: warned before the solve, and stopped at the precision of
/// f32, not reported as a breakdown.
#[test]
fn single_precision_below_its_precision_is_flagged() {
    let Some(ctx) = gpu("single_precision_below_its_precision_is_flagged") else { return };
    let a = gen::laplacian_2d::<f32>(30);
    let b = rhs_of_ones(&a);
    let (res, _) = gpu_solve(ctx, &a, &b, &CgParams::default(), Format::Ell);
    let report = match res {
        Err(CgError::NoConvergence { report }) => report,
        other => panic!("expected no convergence at the precision of f32, got {other:?}"),
    };
    assert!(matches!(report.stop_reason, StopReason::PrecisionLimit | StopReason::Stagnated), "{report:?}");
    match &report.warnings[0] {
        CgWarning::ToleranceBelowPrecision { requested, floor, scalar } => {
            assert_eq!((*requested, *scalar), (1e-8, "f32"));
            assert!((*floor - 30.0 * f64::from(f32::EPSILON)).abs() < 1e-12);
        }
        other => panic!("{other:?}"),
    }
    assert!(report.relative_residual < 1e-4);
}

/// A finite b whose squares overflow f64 (entries near 1e154 and above) is solved, not
/// refused as non-finite; so is a tiny one whose squares underflow.
#[test]
fn huge_and_tiny_right_hand_sides_are_solved() {
    let Some(ctx) = gpu("huge_and_tiny_right_hand_sides_are_solved") else { return };
    let a = gen::laplacian_2d::<f64>(20);
    for scale in [1e160, 1e-170] {
        let b: Vec<f64> = rhs_of_ones(&a).iter().map(|v| v * scale).collect();
        for format in [Format::Csr, Format::Ell] {
            let (res, x) = gpu_solve(ctx, &a, &b, &CgParams::default(), format);
            let report = res.unwrap_or_else(|e| panic!("{scale:e} {format:?}: {e}"));
            assert!(matches!(report.warnings[..], [CgWarning::Equilibrated { .. }]), "{:?}", report.warnings);
            assert!(report.b_norm.is_finite() && report.b_norm > 0.0);
            assert!(report.relative_residual <= 1e-8, "{}", report.relative_residual);
            let err = x.iter().map(|v| (v / scale - 1.0).abs()).fold(0.0, f64::max);
            assert!(err < 1e-4, "{scale:e} {format:?}: x differs from {scale:e} * 1 by {err:e} (relative)");
        }
        // The device norm agrees with the host one.
        let device = Device::new(ctx).unwrap();
        let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
        let (gpu_norm, host_norm) = (device.norm(&d_b).unwrap(), Host.norm(&b).unwrap());
        assert!((gpu_norm.value() / host_norm.value() - 1.0).abs() < 1e-14, "{gpu_norm:?} vs {host_norm:?}");
        assert_eq!(gpu_norm.max_abs, host_norm.max_abs);
    }
}

/// The report says which tolerance the true residual met.
#[test]
fn the_report_says_whether_rtol_or_atol_was_met() {
    let Some(ctx) = gpu("the_report_says_whether_rtol_or_atol_was_met") else { return };
    let a = gen::laplacian_2d::<f64>(20);
    let b = rhs_of_ones(&a);
    let params = CgParams { rtol: 1e-12, atol: 1e-3, ..CgParams::default() };
    let report = gpu_solve(ctx, &a, &b, &params, Format::Csr).0.unwrap();
    assert!(report.atol_met && !report.rtol_met, "{report:?}");
    assert_eq!(report.tolerance_met(), "atol");
    let report = gpu_solve(ctx, &a, &b, &CgParams::default(), Format::Csr).0.unwrap();
    assert_eq!((report.rtol_met, report.atol_met), (true, false));
}

/// A length near the 32-bit limit: the grid-stride loops of `ptx/cg.cu` must not wrap
/// (with a 32-bit index, lengths above 2^32 - 2^18 looped forever). Needs 3 x 16 GiB of
/// device memory, so it is ignored by default:
/// `cargo test --test cg_gpu -- --ignored lengths_near_the_32_bit_limit`.
#[test]
#[ignore = "needs 48 GiB of device memory"]
fn lengths_near_the_32_bit_limit_terminate() {
    let Some(ctx) = gpu("lengths_near_the_32_bit_limit_terminate") else { return };
    let n = u32::MAX as usize;
    let device = Device::new(ctx).unwrap();
    let mut a = DeviceVector::<f32>::zeros(ctx, n).unwrap();
    a.fill(1.0).unwrap();
    let mut b = DeviceVector::<f32>::zeros(ctx, n).unwrap();
    device.copy(&a, &mut b).unwrap();
    // Exact in f64: a sum of 2^32 - 1 ones.
    assert_eq!(device.dot(&a, &b).unwrap(), n as f64);
    device.scale(2.0, &mut b).unwrap();
    assert_eq!(device.norm(&b).unwrap().max_abs, 2.0);
    // One more than the limit is refused before anything is launched.
    let c = DeviceVector::<f32>::zeros(ctx, n + 1).unwrap();
    let err = device.dot(&c, &c).unwrap_err();
    assert!(matches!(&err, spgpu::Error::InvalidArgument(m) if m.contains("32-bit")), "{err}");
}

/// CG on a shifted R-MAT graph Laplacian through the balanced kernel with hot columns (each
/// SpMV gathers the hot entries of p first, inside the recorded iteration): converges to
/// the tolerance in the same number of iterations as without them (the products are
/// bit-identical).
#[test]
fn cg_with_hot_columns_matches_the_balanced_kernel() {
    use spgpu::gpu::{hot::HotChoice, KernelChoice};
    let Some(ctx) = gpu("cg_with_hot_columns") else { return };
    let a = gen::from_spec::<f64>("graphlap:rmat:12:8").unwrap();
    let b = rhs_of_ones(&a);
    let device = Device::new(ctx).unwrap();
    let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
    let mut reports = Vec::new();
    for hot in [HotChoice::Off, HotChoice::Force(512)] {
        let d_a = DeviceCsr::upload_with_hot(ctx, &a, KernelChoice::Balanced, hot, 0).unwrap();
        assert_eq!(d_a.plan().hot_columns(), hot != HotChoice::Off);
        let mut d_x = DeviceVector::zeros(ctx, a.nrows()).unwrap();
        let params = CgParams { rtol: 1e-10, ..CgParams::default() };
        let report = cg(&device, &d_a, &d_b, &mut d_x, &params).unwrap();
        assert_eq!(report.stop_reason, StopReason::Converged, "{hot:?}");
        let x = d_x.to_vec().unwrap();
        assert!(true_relative_residual(&a, &x, &b) <= 1e-10, "{hot:?}");
        reports.push((report.iterations, x));
    }
    assert_eq!(reports[0].0, reports[1].0, "iterations without and with hot columns");
    assert_eq!(reports[0].1, reports[1].1, "solutions without and with hot columns");
}

/// CG through the balanced kernel in column parts (`spgpu::gpu::split`, each SpMV a launch
/// per part inside the recorded iteration) converges to the tolerance, as in one pass: the
/// row sums are added part after part, so the iterates may differ in the last bits.
#[test]
fn cg_in_column_parts_converges() {
    use spgpu::gpu::KernelChoice;
    let Some(ctx) = gpu("cg_in_column_parts_converges") else { return };
    let a = gen::from_spec::<f64>("graphlap:rmat:12:8").unwrap();
    let b = rhs_of_ones(&a);
    let device = Device::new(ctx).unwrap();
    let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
    let mut iterations = Vec::new();
    for parts in [1, 3] {
        let d_a = if parts == 1 {
            DeviceCsr::upload_with(ctx, &a, KernelChoice::Balanced).unwrap()
        } else {
            DeviceCsr::upload_in_column_parts(ctx, &a, parts).unwrap()
        };
        assert_eq!(d_a.plan().column_parts(), parts);
        let mut d_x = DeviceVector::zeros(ctx, a.nrows()).unwrap();
        let params = CgParams { rtol: 1e-10, ..CgParams::default() };
        let report = cg(&device, &d_a, &d_b, &mut d_x, &params).unwrap();
        assert_eq!(report.stop_reason, StopReason::Converged, "{parts} parts");
        assert!(true_relative_residual(&a, &d_x.to_vec().unwrap(), &b) <= 1e-10, "{parts} parts");
        iterations.push(report.iterations);
    }
    assert!(iterations[0].abs_diff(iterations[1]) <= 2, "iterations in one pass and in parts: {iterations:?}");
}

/// CG through the balanced kernel with row blocks of 512 threads (the shape the plan gives
/// matrices whose columns lie near the diagonal) converges as with the default blocks: the
/// row sums are grouped differently, so the iterates may differ in the last bits, not more.
#[test]
fn cg_with_larger_row_blocks_converges() {
    use spgpu::gpu::KernelChoice;
    let Some(ctx) = gpu("cg_with_larger_row_blocks_converges") else { return };
    let a = gen::from_spec::<f64>("graphlap:web:20000").unwrap();
    let b = rhs_of_ones(&a);
    let device = Device::new(ctx).unwrap();
    let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
    let mut iterations = Vec::new();
    for choice in [KernelChoice::BalancedThreads(256), KernelChoice::BalancedThreads(512)] {
        let d_a = DeviceCsr::upload_with(ctx, &a, choice).unwrap();
        assert!(d_a.plan().explain().contains(&format!("{} threads", choice.row_shape().unwrap().threads)));
        let mut d_x = DeviceVector::zeros(ctx, a.nrows()).unwrap();
        let params = CgParams { rtol: 1e-10, ..CgParams::default() };
        let report = cg(&device, &d_a, &d_b, &mut d_x, &params).unwrap();
        assert_eq!(report.stop_reason, StopReason::Converged, "{choice}");
        let x = d_x.to_vec().unwrap();
        assert!(true_relative_residual(&a, &x, &b) <= 1e-10, "{choice}");
        iterations.push(report.iterations);
    }
    assert!(iterations[0].abs_diff(iterations[1]) <= 2, "iterations {iterations:?}");
}
