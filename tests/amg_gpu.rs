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
