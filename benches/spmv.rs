//! SpMV throughput per kernel, precision and matrix: `spmv/<kernel>/<scalar>/<matrix>`.
//!
//! The kernels are the plan (`auto`) and every kernel that can be forced
//! (`KernelChoice::forced`), except that the vector kernel runs once, with the threads per
//! row of the design rule (`vector`; `spgpu bench` times every `vector:N`). Each is uploaded
//! with `DeviceCsr::upload_with`; a kernel that fails at upload or at its first launch is
//! left out with a message, except `ell`, which falls back to a `DeviceEll` when
//! `upload_with` refuses it.
//!
//! Each sample times `iters` back-to-back `y = A x` launches on the context's stream with
//! CUDA events (`Context::time`), so criterion sees device time, not queueing time, and the
//! upload, the plan and the correctness check stay outside the timed part. Throughput is in
//! bytes by the minimal CSR model of `spgpu bench` (the same source file, `model.rs`), so
//! criterion's GB/s compare with `docs/performance.md`.
//!
//! Matrices: four generated ones bigger than the H200's 60 MB L2 (scaled down from the
//! anchors to keep the run short), plus `cage10`, `bcsstk16` and
//! `vsp_model1_crew1_cr42_south31` when `$SPGPU_MATRICES` (or `../shared/matrices`) has them.
//! Without a GPU the benchmark prints why and measures nothing (it fails instead when
//! `SPGPU_REQUIRE_GPU=1`).
//!
//! ```text
//! cargo bench --bench spmv                    # everything
//! cargo bench --bench spmv -- 'spmv/ell/f64'  # a filter
//! ```

use criterion::{Criterion, Throughput};
use spgpu::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, KernelChoice};
use spgpu::{gen, reference, CsrMatrix, Scalar};
use std::path::PathBuf;
use std::time::Duration;

/// Generated matrices: (criterion name, spec).
const GENERATED: [(&str, &str); 4] = [
    ("lap2d_1000", "lap2d:1000"),
    ("stencil27_60", "stencil27:60"),
    ("powerlaw_300k", "powerlaw:300000"),
    ("longrows_5000", "longrows:5000"),
];

/// Matrices read from the shared folder when present.
const FILES: [&str; 3] = ["cage10", "bcsstk16", "vsp_model1_crew1_cr42_south31"];

fn matrices() -> Vec<(String, CsrMatrix<f64>)> {
    let mut out: Vec<(String, CsrMatrix<f64>)> = GENERATED
        .iter()
        .map(|(name, spec)| {
            let a = gen::from_spec::<f64>(spec).unwrap_or_else(|e| panic!("generating {spec}: {e}"));
            (name.to_string(), a)
        })
        .collect();
    let dir = std::env::var_os("SPGPU_MATRICES").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into())).join("../shared/matrices")
    });
    for f in FILES {
        let p = dir.join(format!("{f}.mtx"));
        if p.is_file() {
            match spgpu::io::read_csr::<f64>(&p) {
                Ok(a) => out.push((f.to_string(), a)),
                Err(e) => eprintln!("spmv bench: {}: {e}; left out", p.display()),
            }
        }
    }
    out
}

/// Checks one kernel against the reference before it is timed: a benchmark of a wrong
/// kernel would be meaningless.
fn check<T: Scalar>(what: &str, a: &CsrMatrix<T>, x: &[T], y: &DeviceVector<T>) {
    let mut want = vec![T::ZERO; a.nrows()];
    reference::spmv_csr(T::ONE, a, x, T::ZERO, &mut want).expect("reference SpMV");
    let got = y.to_vec().unwrap_or_else(|e| panic!("{what}: {e}"));
    let err = reference::relative_error(&got, &want);
    let tol = if T::BYTES == 4 { 1e-4 } else { 1e-10 };
    assert!(err <= tol, "{what}: relative error {err:.2e} against the CPU reference");
}

/// The kernels timed (see the module docs).
fn choices(warp_size: u32) -> Vec<KernelChoice> {
    let mut out = vec![KernelChoice::Auto];
    for k in KernelChoice::forced(warp_size) {
        let k = if matches!(k, KernelChoice::VectorTpr(_)) { KernelChoice::Vector } else { k };
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// A matrix on the device, as `upload_with` made it or, for `ell` when it refuses, as a
/// `DeviceEll`.
enum Uploaded<T: Scalar> {
    Csr(DeviceCsr<T>),
    Ell(DeviceEll<T>),
}

impl<T: Scalar> Uploaded<T> {
    fn new(ctx: &'static Context, a: &CsrMatrix<T>, choice: KernelChoice) -> spgpu::Result<Self> {
        match DeviceCsr::upload_with(ctx, a, choice) {
            Ok(d) => Ok(Uploaded::Csr(d)),
            Err(_) if choice == KernelChoice::Ell => Ok(Uploaded::Ell(DeviceEll::from_csr(ctx, a)?)),
            Err(e) => Err(e),
        }
    }

    fn spmv(&self, x: &DeviceVector<T>, y: &mut DeviceVector<T>) -> spgpu::Result<()> {
        match self {
            Uploaded::Csr(d) => d.spmv(T::ONE, x, T::ZERO, y),
            Uploaded::Ell(d) => d.spmv(T::ONE, x, T::ZERO, y),
        }
    }
}

fn bench_precision<T: Scalar>(c: &mut Criterion, ctx: &'static Context, mats: &[(String, CsrMatrix<f64>)]) {
    let mut group = c.benchmark_group("spmv");
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for (name, a64) in mats {
        let a: CsrMatrix<T> = a64.cast();
        let bytes = spgpu::bytes::csr_bytes(a.nrows(), a.ncols(), a.nnz(), T::BYTES, false);
        group.throughput(Throughput::Bytes(bytes));
        let xh: Vec<T> = (0..a.ncols()).map(|i| T::from_f64(((i * 7919) % 2003) as f64 / 1001.0 - 1.0)).collect();
        let x = DeviceVector::from_slice(ctx, &xh).expect("uploading x");
        let mut y = DeviceVector::zeros(ctx, a.nrows()).expect("allocating y");
        for choice in choices(ctx.warp_size()) {
            let id = format!("{choice}/{}/{name}", T::NAME);
            let d = match Uploaded::new(ctx, &a, choice).and_then(|d| d.spmv(&x, &mut y).map(|()| d)) {
                Ok(d) => d,
                Err(e) => {
                    ctx.synchronize().unwrap_or_else(|dead| panic!("{id}: {e}; the device then failed: {dead}"));
                    eprintln!("spmv bench: {id} left out: {e}");
                    continue;
                }
            };
            check(&id, &a, &xh, &y);
            group.bench_function(id, |b| {
                b.iter_custom(|iters| ctx.time(|| (0..iters).try_for_each(|_| d.spmv(&x, &mut y))).expect("timed SpMV"))
            });
        }
    }
    group.finish();
}

fn main() {
    let ctx = match Context::global() {
        Ok(ctx) => ctx,
        Err(e) if std::env::var("SPGPU_REQUIRE_GPU").as_deref() == Ok("1") => {
            eprintln!("spmv bench: SPGPU_REQUIRE_GPU=1 but no GPU: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            println!("spmv bench: skipped, no GPU ({e})");
            return;
        }
    };
    let mats = matrices();
    let mut c = Criterion::default().configure_from_args();
    bench_precision::<f64>(&mut c, ctx, &mats);
    bench_precision::<f32>(&mut c, ctx, &mats);
    c.final_summary();
}
