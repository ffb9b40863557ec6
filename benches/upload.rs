//! Host-to-device upload: `upload/<what>/<scalar>/<matrix>`, and new values on the same
//! pattern: `update/<kernel>/<scalar>/<matrix>` against `update/copy/<scalar>/<matrix>`.
//!
//! Times `DeviceCsr::upload_with` (allocation, the copies from pageable host memory, the
//! row statistics the plan needs and the kernel's preprocessing) for the plan (`auto`) and
//! for the kernels that preprocess at upload (`balanced`, `ell`), and
//! `DeviceVector::from_slice` of a vector as long as the matrix has rows (`vector`), on the
//! host clock after the context's stream is synchronized. A kernel whose upload fails is left
//! out with a message; each upload's preprocessing time and device memory are printed once.
//! Throughput is the bytes of the CSR arrays, `nnz * (4 + s) + (nrows + 1) * 4`, for every
//! matrix upload (so the figures compare), `nrows * s` for the vector.
//!
//! `update/<kernel>` times `DeviceCsr::update_values` on a matrix uploaded for that kernel
//! (its maps made before, outside the timing), `update/copy` `DeviceVector::from_slice` of
//! the same `nnz` values: the plain copy the update is measured against (the goal is at most
//! 1.5 times its time). Throughput is `nnz * s` for both. Without a GPU the
//! benchmark prints why and measures nothing (it fails instead when `SPGPU_REQUIRE_GPU=1`).

use criterion::{Criterion, Throughput};
use spgpu::gpu::{Context, DeviceCsr, DeviceVector, KernelChoice};
use spgpu::{gen, CsrMatrix, Scalar};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn bench_precision<T: Scalar>(c: &mut Criterion, ctx: &'static Context, name: &str, a64: &CsrMatrix<f64>) {
    let a: CsrMatrix<T> = a64.cast();
    let mut group = c.benchmark_group("upload");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    let matrix_bytes = (a.nnz() * (4 + T::BYTES) + (a.nrows() + 1) * 4) as u64;
    group.throughput(Throughput::Bytes(matrix_bytes));
    for choice in [KernelChoice::Auto, KernelChoice::Balanced, KernelChoice::Ell] {
        let id = format!("{choice}/{}/{name}", T::NAME);
        match DeviceCsr::upload_with(ctx, &a, choice) {
            Ok(d) => println!(
                "upload bench: {id}: preprocessing {:.2} ms, device memory {:.2}x the CSR arrays",
                d.preprocessing().as_secs_f64() * 1e3,
                d.device_bytes() as f64 / matrix_bytes as f64
            ),
            Err(e) => {
                eprintln!("upload bench: {id} left out: {e}");
                continue;
            }
        }
        group.bench_function(id, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    let d = DeviceCsr::upload_with(ctx, &a, choice).expect("uploading the matrix");
                    ctx.synchronize().expect("synchronizing");
                    total += t.elapsed();
                    drop(black_box(d));
                }
                total
            })
        });
    }
    let v: Vec<T> = (0..a.nrows()).map(|i| T::from_f64(i as f64)).collect();
    group.throughput(Throughput::Bytes((v.len() * T::BYTES) as u64));
    group.bench_function(format!("vector/{}/{name}", T::NAME), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let d = DeviceVector::from_slice(ctx, &v).expect("uploading the vector");
                ctx.synchronize().expect("synchronizing");
                total += t.elapsed();
                drop(black_box(d));
            }
            total
        })
    });
    group.finish();
    bench_updates(c, ctx, name, &a);
}

/// `iters` calls of `f`, timed to the end of the work they queue.
fn timed(ctx: &Context, b: &mut criterion::Bencher<'_>, f: &mut dyn FnMut()) {
    b.iter_custom(|iters| {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        ctx.synchronize().expect("synchronizing");
        t.elapsed()
    })
}

/// `update/<kernel>/<scalar>/<matrix>` and `update/copy/<scalar>/<matrix>` (module docs).
fn bench_updates<T: Scalar>(c: &mut Criterion, ctx: &'static Context, name: &str, a: &CsrMatrix<T>) {
    let values: Vec<T> = a.values().iter().map(|&v| v + v).collect();
    let mut group = c.benchmark_group("update");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Bytes((a.nnz() * T::BYTES) as u64));
    for choice in [KernelChoice::Auto, KernelChoice::Balanced, KernelChoice::Ell, KernelChoice::Sell] {
        let id = format!("{choice}/{}/{name}", T::NAME);
        let mut d = match DeviceCsr::upload_with(ctx, a, choice).and_then(|mut d| {
            d.prepare_value_updates()?;
            Ok(d)
        }) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("upload bench: update/{id} left out: {e}");
                continue;
            }
        };
        println!("upload bench: update/{id}: {}", d.storage_name());
        group.bench_function(id, |b| timed(ctx, b, &mut || d.update_values(&values).expect("updating the values")));
    }
    let id = format!("copy/{}/{name}", T::NAME);
    group.bench_function(id, |b| {
        timed(ctx, b, &mut || drop(black_box(DeviceVector::from_slice(ctx, &values).expect("copying"))))
    });
    group.finish();
}

fn main() {
    let ctx = match Context::global() {
        Ok(ctx) => ctx,
        Err(e) if std::env::var("SPGPU_REQUIRE_GPU").as_deref() == Ok("1") => {
            eprintln!("upload bench: SPGPU_REQUIRE_GPU=1 but no GPU: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            println!("upload bench: skipped, no GPU ({e})");
            return;
        }
    };
    // 4M rows, 20M entries: 240 MB of f64 CSR, the anchors' lap2d_2000^2
    let a = gen::from_spec::<f64>("lap2d:2000").expect("generating lap2d:2000");
    let mut c = Criterion::default().configure_from_args();
    bench_precision::<f64>(&mut c, ctx, "lap2d_2000", &a);
    bench_precision::<f32>(&mut c, ctx, "lap2d_2000", &a);
    c.final_summary();
}
