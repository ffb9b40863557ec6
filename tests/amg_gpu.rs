//! The AMG setup on the GPU against the host's: the same levels, aggregates and operator
//! patterns, values equal to rounding, CG iterations within one, and bit-identical
//! device solves on repeat. Skipped without a GPU unless `SPGPU_REQUIRE_GPU=1`.

mod common;

use common::{gpu, rhs_of_ones};
use spgpu::gpu::{DeviceCsr, DeviceVector};
use spgpu::solver::{
    cg, cg_with, Amg, AmgHierarchy, AmgParams, CgParams, Device, Host, PreconditionerKind, SetupPlace, StopReason,
};
use spgpu::{gen, CsrMatrix};

/// The test systems with their AMG parameters: 2-D and 3-D Poisson, an unstructured
/// (random geometric) matrix, and elasticity with its six rigid-body modes (block size 3,
/// whose tentative prolongator is a QR on the host).
fn systems() -> Vec<(&'static str, CsrMatrix<f64>, AmgParams)> {
    let base = AmgParams { max_coarse: 50, ..AmgParams::default() };
    let elast = AmgParams { near_nullspace: Some(gen::rigid_body_modes(8)), block_size: 3, ..base.clone() };
    vec![
        ("lap2d:150", gen::laplacian_2d(150), base.clone()),
        ("lap3d:24", gen::laplacian_3d_7pt(24), base.clone()),
        ("geo:20000", gen::from_spec("geo:20000").unwrap(), AmgParams { theta: 0.08, ..base.clone() }),
        ("elast:8", gen::elasticity_3d(8).unwrap(), elast),
    ]
}

fn close(what: &str, got: &CsrMatrix<f64>, want: &CsrMatrix<f64>) {
    assert_eq!(got.row_offsets(), want.row_offsets(), "{what}: offsets");
    assert_eq!(got.col_indices(), want.col_indices(), "{what}: columns");
    let scale = want.values().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (k, (g, w)) in got.values().iter().zip(want.values()).enumerate() {
        assert!((g - w).abs() <= 1e-10 * scale, "{what}: entry {k}: {g} against {w}");
    }
}

#[test]
fn the_device_setup_builds_the_hosts_hierarchy() {
    let Some(ctx) = gpu("the_device_setup_builds_the_hosts_hierarchy") else { return };
    for (name, a, params) in systems() {
        let host = AmgHierarchy::build(&a, &params).unwrap();
        let dev = AmgHierarchy::build_on_device(ctx, &a, &params).unwrap();
        assert_eq!(host.levels().len(), dev.levels().len(), "{name}: levels");
        assert!(host.levels().len() >= 2, "{name}: levels");
        for (l, (h, d)) in host.levels().iter().zip(dev.levels()).enumerate() {
            let what = |s: &str| format!("{name} level {l}: {s}");
            close(&what("matrix"), d.matrix(), h.matrix());
            let rel = (d.spectral_radius() - h.spectral_radius()).abs() / h.spectral_radius();
            assert!(rel <= 1e-9, "{}: {} against {}", what("rho"), d.spectral_radius(), h.spectral_radius());
            assert_eq!(d.aggregates(), h.aggregates(), "{}", what("aggregates"));
            if let (Some(dp), Some(hp)) = (d.prolongator(), h.prolongator()) {
                close(
                    &what("tentative prolongator"),
                    d.tentative_prolongator().unwrap(),
                    h.tentative_prolongator().unwrap(),
                );
                close(&what("prolongator"), dp, hp);
                close(&what("restriction"), d.restriction().unwrap(), h.restriction().unwrap());
                // the device setup keeps the strength graph and the MIS-2 states on the device
                assert!(d.strength().is_none() && d.roots().is_none() && h.strength().is_some());
            }
        }
        // CG iterations within one of each other on the host backend
        let b = rhs_of_ones(&a);
        let cg_params = CgParams { rtol: 1e-8, ..CgParams::default() };
        let iters = |h: AmgHierarchy| {
            let amg = Amg::<f64, Host>::from_hierarchy(&Host, h).unwrap();
            let mut x = vec![0.0; a.nrows()];
            let r = cg_with(&Host, &a, &amg, &b, &mut x, &cg_params, &mut |_| {}).unwrap();
            assert_eq!(r.stop_reason, StopReason::Converged, "{name}");
            r.iterations
        };
        let (ih, id) = (iters(host), iters(dev));
        eprintln!("{name}: host setup {ih} iterations, device setup {id}");
        assert!(ih.abs_diff(id) <= 1, "{name}: host setup {ih} iterations, device setup {id}");
    }
}

#[test]
fn a_device_solve_with_the_device_setup_converges_and_repeats_bit_for_bit() {
    let Some(ctx) = gpu("a_device_solve_with_the_device_setup_converges_and_repeats_bit_for_bit") else { return };
    let device = Device::new(ctx).unwrap();
    let (name, a, amg) = systems().remove(0);
    let b = rhs_of_ones(&a);
    let params = CgParams { rtol: 1e-8, preconditioner: PreconditionerKind::Amg, amg, ..CgParams::default() };
    assert_eq!(params.amg.setup, SetupPlace::Auto);
    let op = DeviceCsr::upload(ctx, &a).unwrap();
    let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut d_x = DeviceVector::zeros(ctx, a.nrows()).unwrap();
        let report = cg(&device, &op, &d_b, &mut d_x, &params).unwrap();
        assert_eq!(report.stop_reason, StopReason::Converged, "{name}");
        let info = report.amg.as_ref().expect("an AMG report");
        assert_eq!(info.setup_place, "device", "{name}");
        assert!(report.iterations <= 20, "{name}: {} iterations", report.iterations);
        runs.push(d_x.to_vec().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    }
    assert!(runs[0] == runs[1], "{name}: two solves differ");
}

/// Iterations of a device CG solve of `a x = A*1` with `amg`, and the solution's bits.
fn device_solve<T: spgpu::Scalar>(
    ctx: &'static spgpu::gpu::Context,
    a: &CsrMatrix<T>,
    amg: &Amg<T, Device>,
) -> (usize, Vec<u64>) {
    let device = Device::new(ctx).unwrap();
    let b = rhs_of_ones(a);
    let op = DeviceCsr::upload(ctx, a).unwrap();
    let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
    let mut d_x = DeviceVector::zeros(ctx, a.nrows()).unwrap();
    let tol = if T::BYTES == 4 { 1e-5 } else { 1e-8 };
    let params = CgParams { rtol: tol, ..CgParams::default() };
    let r = cg_with(&device, &op, amg, &d_b, &mut d_x, &params, &mut |_| {}).unwrap();
    assert_eq!(r.stop_reason, StopReason::Converged);
    (r.iterations, d_x.to_vec().unwrap().iter().map(|v| v.to_f64().to_bits()).collect())
}

#[test]
fn the_hierarchy_kept_on_the_device_solves_as_the_uploaded_host_one() {
    let Some(ctx) = gpu("the_hierarchy_kept_on_the_device_solves_as_the_uploaded_host_one") else { return };
    let device = Device::new(ctx).unwrap();
    for (name, a, params) in systems() {
        let resident = Amg::build(&device, &a, &params).unwrap();
        assert!(resident.hierarchy().is_none(), "{name}: the levels stay on the device");
        assert_eq!(resident.info().setup_place, "device");
        let host = Amg::build(&device, &a, &AmgParams { setup: SetupPlace::Host, ..params.clone() }).unwrap();
        assert!(host.hierarchy().is_some());
        let sizes = |amg: &Amg<f64, Device>| -> Vec<(usize, usize)> {
            amg.info().levels.iter().map(|l| (l.rows, l.entries)).collect()
        };
        assert_eq!(sizes(&resident), sizes(&host), "{name}: level sizes");
        let (ir, xr) = device_solve(ctx, &a, &resident);
        let (ih, _) = device_solve(ctx, &a, &host);
        eprintln!("{name}: levels on the device {ir} iterations, uploaded host hierarchy {ih}");
        assert!(ir.abs_diff(ih) <= 1, "{name}: {ir} against {ih}");
        assert_eq!(device_solve(ctx, &a, &resident).1, xr, "{name}: a second solve differs");
    }
}

#[test]
fn the_hierarchy_kept_on_the_device_runs_in_f32_with_l1_jacobi_and_updates_its_values() {
    let Some(ctx) = gpu("the_hierarchy_kept_on_the_device_runs_in_f32_with_l1_jacobi_and_updates_its_values") else {
        return;
    };
    let device = Device::new(ctx).unwrap();
    let (name, a, params) = systems().remove(1);
    // f32: the f64 setup's values rounded on the device
    let a32 = a.cast::<f32>();
    let amg32 = Amg::<f32, Device>::build(&device, &a32, &params).unwrap();
    let host32 =
        Amg::<f32, Device>::build(&device, &a32, &AmgParams { setup: SetupPlace::Host, ..params.clone() }).unwrap();
    let (i32d, _) = device_solve(ctx, &a32, &amg32);
    let (i32h, _) = device_solve(ctx, &a32, &host32);
    assert!(i32d.abs_diff(i32h) <= 1, "{name} f32: {i32d} against {i32h}");
    // l1-Jacobi: its inverse l1 diagonal made on the device
    let l1 = AmgParams { smoother: spgpu::solver::Smoother::L1Jacobi { sweeps: 2 }, ..params.clone() };
    let (il, _) = device_solve(ctx, &a, &Amg::build(&device, &a, &l1).unwrap());
    let (ilh, _) =
        device_solve(ctx, &a, &Amg::build(&device, &a, &AmgParams { setup: SetupPlace::Host, ..l1 }).unwrap());
    assert!(il.abs_diff(ilh) <= 1, "{name} l1-Jacobi: {il} against {ilh}");
    // a numeric re-setup on the device: the same as a fresh build on the new values' aggregates
    let mut amg = Amg::build(&device, &a, &params).unwrap();
    let mut a2 = a.clone();
    for v in a2.values_mut() {
        *v *= 3.0;
    }
    amg.update_values(&device, &a2).unwrap();
    let (iu, _) = device_solve(ctx, &a2, &amg);
    let (ifresh, _) = device_solve(ctx, &a2, &Amg::build(&device, &a2, &params).unwrap());
    assert_eq!(iu, ifresh, "{name}: update_values against a fresh build (scaling keeps the aggregates)");
    let other = gen::laplacian_2d::<f64>(40);
    assert!(amg.update_values(&device, &other).is_err(), "{name}: another pattern is refused");
}

/// CG multiplying by the hierarchy's own level 0 ([`Amg::operator`], made from the setup's
/// upload of `A`) converges as CG on a second upload of `A` (within one iteration: the two
/// matrices may run different kernels) to the known solution.
#[test]
fn cg_on_the_hierarchys_level_0_solves_as_on_a_second_upload() {
    let Some(ctx) = gpu("cg_on_the_hierarchys_level_0_solves_as_on_a_second_upload") else { return };
    let device = Device::new(ctx).unwrap();
    for (name, a, params) in systems() {
        let amg = Amg::build(&device, &a, &params).unwrap();
        let op = amg.operator();
        assert_eq!((op.nrows(), op.ncols(), op.nnz()), (a.nrows(), a.ncols(), a.nnz()), "{name}: level 0 is A");
        let b = rhs_of_ones(&a);
        let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
        let params = CgParams { rtol: 1e-8, ..CgParams::default() };
        let mut x_own = DeviceVector::zeros(ctx, a.nrows()).unwrap();
        let own = cg_with(&device, op, &amg, &d_b, &mut x_own, &params, &mut |_| {}).unwrap();
        let (separate, _) = device_solve(ctx, &a, &amg);
        assert_eq!(own.stop_reason, StopReason::Converged, "{name}");
        assert!(own.iterations.abs_diff(separate) <= 1, "{name}: {} against {separate}", own.iterations);
        let x = x_own.to_vec().unwrap();
        let err = x.iter().map(|v| (v - 1.0).abs()).fold(0.0, f64::max);
        assert!(err < 1e-4, "{name}: max |x - 1| = {err}");
    }
}

/// Every level's `P` and `R` applied from `P_tent` ([`FineTransfer::ImplicitAllLevels`]) on
/// the device: the same iterations as level 0's alone (within one), less memory.
#[test]
fn the_implicit_transfer_on_every_level_solves_as_on_level_0_in_less_memory() {
    use spgpu::solver::FineTransfer;
    let Some(ctx) = gpu("the_implicit_transfer_on_every_level_solves_as_on_level_0_in_less_memory") else { return };
    let device = Device::new(ctx).unwrap();
    for (name, a, params) in systems() {
        let level0 = Amg::build(&device, &a, &params).unwrap();
        let every =
            Amg::build(&device, &a, &AmgParams { fine_transfer: FineTransfer::ImplicitAllLevels, ..params }).unwrap();
        assert_eq!(every.info().fine_transfer, FineTransfer::ImplicitAllLevels);
        let (i0, _) = device_solve(ctx, &a, &level0);
        let (ia, _) = device_solve(ctx, &a, &every);
        assert!(i0.abs_diff(ia) <= 1, "{name}: level 0 {i0}, every level {ia}");
        let bytes = |amg: &Amg<f64, Device>| amg.info().memory.expect("device bytes").hierarchy;
        if level0.info().levels.len() > 2 {
            assert!(bytes(&every) < bytes(&level0), "{name}: {} against {}", bytes(&every), bytes(&level0));
        }
    }
}
