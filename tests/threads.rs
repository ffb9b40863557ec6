//! spgpu from many threads at once: CG solves (CSR and ELL, with and without CUDA graphs,
//! f32 and f64) racing with uploads, downloads, SpMV and drops on other threads, and the
//! guarantees that make that safe (non-blocking streams, recordings that refuse freed
//! memory).
//!
//! The stress test's size comes from the environment, so that it also runs under
//! compute-sanitizer in reasonable time:
//!
//! - `SPGPU_STRESS_THREADS`: solver threads (default 16);
//! - `SPGPU_STRESS_SOLVES`: solves per thread (default 25).
//!
//! ```text
//! SPGPU_STRESS_THREADS=4 SPGPU_STRESS_SOLVES=2 compute-sanitizer --tool memcheck \
//!     .gpu/tests/threads-* many_threads_solve_while_others_upload_download_and_multiply
//! ```
//!
//! Each test skips with a printed line when there is no GPU, and fails instead when
//! `SPGPU_REQUIRE_GPU=1`.

mod common;
use common::{gpu, rhs_of_ones, true_relative_residual};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use spgpu::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector};
use spgpu::solver::{cg, Backend, CgParams, Device, PrecondForm, PreconditionerKind, StopReason};
use spgpu::{gen, reference, Error, Scalar};

/// A positive count from the environment, or `default`.
fn env_count(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v.trim().parse().ok().filter(|&n| n > 0).unwrap_or_else(|| panic!("{name}={v:?} is not a count")),
        Err(_) => default,
    }
}

#[derive(Clone, Copy, Debug)]
enum Format {
    Csr,
    Ell,
}

/// One CG solve of the `m x m` grid Laplacian with `b = A 1`, checked on the host in f64.
fn solve_one<T: Scalar>(
    ctx: &'static Context,
    device: &Device,
    m: usize,
    format: Format,
    use_graphs: bool,
    preconditioner: PreconditionerKind,
) -> Result<usize, String> {
    let a = gen::laplacian_2d::<T>(m);
    let b = rhs_of_ones(&a);
    let rtol = if T::BYTES == 4 { 1e-5 } else { 1e-8 };
    let params = CgParams { rtol, use_graphs, preconditioner, ..CgParams::default() };
    let d_b = DeviceVector::from_slice(ctx, &b).map_err(|e| format!("uploading b: {e}"))?;
    let mut d_x = DeviceVector::zeros(ctx, a.nrows()).map_err(|e| format!("allocating x: {e}"))?;
    let res = match format {
        Format::Csr => {
            let d_a = DeviceCsr::upload(ctx, &a).map_err(|e| format!("uploading A: {e}"))?;
            cg(device, &d_a, &d_b, &mut d_x, &params)
        }
        Format::Ell => {
            let d_a = DeviceEll::from_csr(ctx, &a).map_err(|e| format!("uploading A: {e}"))?;
            cg(device, &d_a, &d_b, &mut d_x, &params)
        }
    };
    let report = res.map_err(|e| format!("solving: {e}"))?;
    if report.stop_reason != StopReason::Converged || !report.warnings.is_empty() {
        return Err(format!("stopped with {:?}, warnings {:?}", report.stop_reason, report.warnings));
    }
    let x = d_x.to_vec().map_err(|e| format!("downloading x: {e}"))?;
    let rel = true_relative_residual(&a, &x, &b);
    if rel > rtol * (1.0 + 1e-3) {
        return Err(format!("true relative residual {rel:e} > {rtol:e}"));
    }
    Ok(report.iterations)
}

/// Runs `round` until `done`, recording its failures under `label`; returns the rounds run.
fn until_done(
    label: &str,
    done: &AtomicBool,
    failures: &Mutex<Vec<String>>,
    mut round: impl FnMut(usize) -> spgpu::Result<()>,
) -> usize {
    let mut rounds = 0;
    while !done.load(Ordering::Acquire) {
        if let Err(e) = round(rounds) {
            failures.lock().unwrap().push(format!("{label}, round {rounds}: {e}"));
        }
        rounds += 1;
    }
    rounds
}

/// Uploads, downloads and drops vectors of varying lengths, checking every round trip.
fn upload_download_round(ctx: &'static Context, round: usize) -> spgpu::Result<()> {
    let len = (round * 7919 + 13) % 200_000 + 1;
    let data: Vec<f64> = (0..len).map(|i| (i % 1000) as f64 - 500.0).collect();
    let mut v = DeviceVector::from_slice(ctx, &data)?;
    if v.to_vec()? != data {
        return Err(Error::InvalidArgument(format!("round trip of {len} values differs")));
    }
    let twice: Vec<f64> = data.iter().map(|x| 2.0 * x).collect();
    v.copy_from(&twice)?;
    let mut out = vec![0.0; len];
    v.copy_to(&mut out)?;
    if out != twice {
        return Err(Error::InvalidArgument(format!("copy_from/copy_to of {len} values differs")));
    }
    let small = DeviceVector::<f32>::zeros(ctx, len % 5000 + 1)?;
    if small.to_vec()?.iter().any(|&v| v != 0.0) {
        return Err(Error::InvalidArgument("zeros are not zero".into()));
    }
    Ok(())
}

/// One SpMV with a shared matrix, checked exactly (integer data).
fn spmv_round(d_a: &DeviceCsr<f64>, x: &DeviceVector<f64>, want: &[f64]) -> spgpu::Result<()> {
    let mut y = DeviceVector::zeros(d_a.context(), d_a.nrows())?;
    d_a.spmv(1.0, x, 0.0, &mut y)?;
    if y.to_vec()? != want {
        return Err(Error::InvalidArgument("SpMV result differs from the reference".into()));
    }
    Ok(())
}

/// The acceptance test of issue 10: many threads solving (CSR and ELL, graphs on and off,
/// f32 and f64, a third with Jacobi), half of them sharing one `Device`, while one thread uploads and downloads
/// in a loop and two more multiply with a shared matrix. Zero failures expected.
#[test]
fn many_threads_solve_while_others_upload_download_and_multiply() {
    let Some(ctx) = gpu("many_threads_solve_while_others_upload_download_and_multiply") else { return };
    let threads = env_count("SPGPU_STRESS_THREADS", 16);
    let solves = env_count("SPGPU_STRESS_SOLVES", 25);
    let shared_device = Device::new(ctx).unwrap();
    let a = gen::laplacian_2d::<f64>(60);
    let xh: Vec<f64> = (0..a.ncols()).map(|i| (i % 7) as f64 - 3.0).collect();
    let mut want = vec![0.0; a.nrows()];
    reference::spmv_csr(1.0, &a, &xh, 0.0, &mut want).unwrap();
    let d_a = DeviceCsr::upload(ctx, &a).unwrap();
    let d_x = DeviceVector::from_slice(ctx, &xh).unwrap();

    let done = AtomicBool::new(false);
    let failures = Mutex::new(Vec::new());
    let solved = AtomicUsize::new(0);
    let started = std::time::Instant::now();
    let (trips, products) = std::thread::scope(|s| {
        let uploader = s.spawn(|| until_done("uploader", &done, &failures, |k| upload_download_round(ctx, k)));
        let multipliers: Vec<_> = (0..2)
            .map(|_| s.spawn(|| until_done("spmv", &done, &failures, |_| spmv_round(&d_a, &d_x, &want))))
            .collect();
        let solvers: Vec<_> = (0..threads)
            .map(|t| {
                let (shared_device, failures, solved) = (&shared_device, &failures, &solved);
                s.spawn(move || {
                    for k in 0..solves {
                        let own;
                        let device = if t % 2 == 0 {
                            shared_device
                        } else {
                            own = Device::new(ctx);
                            match &own {
                                Ok(d) => d,
                                Err(e) => {
                                    failures.lock().unwrap().push(format!("thread {t}, solve {k}: Device::new: {e}"));
                                    continue;
                                }
                            }
                        };
                        let format = if (t + k) % 2 == 0 { Format::Csr } else { Format::Ell };
                        let graphs = (t / 2 + k) % 2 == 0;
                        let m = 20 + (t * 7 + k * 3) % 17;
                        // Jacobi (read back from the device matrix) on every third solve.
                        let pc = if (t + k) % 3 == 0 { PreconditionerKind::Jacobi } else { PreconditionerKind::None };
                        let result = if (t + k / 2) % 2 == 0 {
                            solve_one::<f64>(ctx, device, m, format, graphs, pc)
                        } else {
                            solve_one::<f32>(ctx, device, m, format, graphs, pc)
                        };
                        match result {
                            Ok(_) => {
                                solved.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => failures.lock().unwrap().push(format!(
                                "thread {t}, solve {k} (lap2d:{m}, {format:?}, graphs {graphs}, {pc:?}): {e}"
                            )),
                        }
                    }
                })
            })
            .collect();
        for h in solvers {
            h.join().expect("a solver thread panicked");
        }
        done.store(true, Ordering::Release);
        let products: usize = multipliers.into_iter().map(|h| h.join().expect("an SpMV thread panicked")).sum();
        (uploader.join().expect("the uploader panicked"), products)
    });
    let failures = failures.into_inner().unwrap();
    println!(
        "{threads} threads x {solves} solves: {} solved in {:.2} s, with {trips} upload/download round trips and \
         {products} SpMVs on other threads; {} failures",
        solved.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(failures.is_empty(), "{} failures, the first: {:#?}", failures.len(), &failures[..failures.len().min(10)]);
    assert_eq!(solved.load(Ordering::Relaxed), threads * solves);
    assert!(trips > 0 && products > 0, "the other threads ran ({trips} round trips, {products} products)");
}

#[test]
fn gpu_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Context>();
    send_sync::<spgpu::gpu::Stream>();
    send_sync::<spgpu::gpu::Event>();
    send_sync::<DeviceVector<f32>>();
    send_sync::<DeviceCsr<f64>>();
    send_sync::<DeviceEll<f32>>();
    send_sync::<Device>();
    send_sync::<spgpu::solver::DeviceState<f64>>();
    send::<spgpu::solver::DeviceRecording>();
}

#[test]
fn the_context_stream_is_non_blocking() {
    let Some(ctx) = gpu("the_context_stream_is_non_blocking") else { return };
    assert_eq!(ctx.stream().is_non_blocking(), Ok(true));
}

/// Records one batch of iterations with the backend directly, then checks what `replay`
/// accepts: its own state with everything alive; not another state; not after a vector or
/// the matrix was dropped (safe code cannot run a graph over freed memory).
#[test]
fn replay_refuses_a_recording_whose_memory_was_freed() {
    let Some(ctx) = gpu("replay_refuses_a_recording_whose_memory_was_freed") else { return };
    let device = Device::new(ctx).unwrap();
    let a = gen::laplacian_2d::<f64>(12);
    let n = a.nrows();
    let d_a = DeviceEll::from_csr(ctx, &a).unwrap();
    let b = DeviceVector::from_slice(ctx, &rhs_of_ones(&a)).unwrap();
    let mut x = DeviceVector::zeros(ctx, n).unwrap();
    let zeros = |len| DeviceVector::<f64>::zeros(ctx, len).unwrap();
    let (mut r, mut p, mut q, z) = (zeros(n), zeros(n), zeros(n), zeros(0));
    let mut state = Backend::<f64>::new_state(&device, n, 0).unwrap();
    device.copy(&b, &mut r).unwrap();
    device.start(&mut state, 0.0, &r, &z, PrecondForm::Identity, &mut p).unwrap();
    let recording = device
        .record(&mut state, Some(spgpu::solver::DeviceMatrix::Ell(&d_a)), PrecondForm::Identity, &mut |s| {
            assert!(device.fused_spmv_alpha(s, Some(spgpu::solver::DeviceMatrix::Ell(&d_a)), &p, &mut q)?);
            device.update(s, &mut x, &mut r, &p, &q, PrecondForm::Identity)?;
            device.direction(s, &mut p, &r, &z, PrecondForm::Identity)
        })
        .unwrap()
        .expect("ELL with no preconditioner is recorded");
    // Nothing ran while recording.
    assert_eq!(device.checkpoint(&state).unwrap().iterations, 0);
    device.replay(&mut state, &recording).unwrap();
    device.replay(&mut state, &recording).unwrap();
    assert_eq!(device.checkpoint(&state).unwrap().iterations, 2);
    // Another state: refused.
    let mut other = Backend::<f64>::new_state(&device, n, 0).unwrap();
    let err = device.replay(&mut other, &recording).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("another DeviceState")), "{err}");
    // A vector it uses is dropped: refused, and nothing runs.
    drop(q);
    let err = device.replay(&mut state, &recording).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("freed")), "{err}");
    assert_eq!(device.checkpoint(&state).unwrap().iterations, 2);
    // Same for the matrix, from another thread.
    std::thread::spawn(move || drop(d_a)).join().unwrap();
    let err = device.replay(&mut state, &recording).unwrap_err();
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("freed")), "{err}");
}

/// Drops of vectors race with solves that use graphs: every solve still converges.
#[test]
fn drops_on_other_threads_do_not_disturb_recordings() {
    let Some(ctx) = gpu("drops_on_other_threads_do_not_disturb_recordings") else { return };
    let rounds = env_count("SPGPU_STRESS_SOLVES", 25).min(10);
    let (tx, rx) = std::sync::mpsc::channel::<DeviceVector<f64>>();
    std::thread::scope(|s| {
        let dropper = s.spawn(move || rx.into_iter().map(drop).count());
        for k in 0..rounds {
            for _ in 0..20 {
                tx.send(DeviceVector::zeros(ctx, 1000 + k).unwrap()).unwrap();
            }
            let device = Device::new(ctx).unwrap();
            let iterations = solve_one::<f64>(ctx, &device, 25, Format::Ell, true, PreconditionerKind::None).unwrap();
            assert!(iterations > 16, "at least one batch was replayed");
        }
        drop(tx);
        assert_eq!(dropper.join().unwrap(), rounds * 20);
    });
}

/// Threads multiplying one matrix whose long rows are summed in chunks (balanced and SELL:
/// a chunk kernel writes the matrix's scratch, a fix-up kernel reads it): each thread with
/// its own `x`, every result exact (integer data). The two launches of a product must not
/// interleave with another thread's on the stream.
#[test]
fn threads_sharing_a_matrix_with_chunked_long_rows_get_their_own_products() {
    let Some(ctx) = gpu("threads_sharing_a_matrix_with_chunked_long_rows_get_their_own_products") else { return };
    // rows of 1..4 entries, and every 500th row of 6000 (three chunks)
    let n = 20_000;
    let mut coo = spgpu::CooMatrix::<f64>::new(n, n).unwrap();
    for i in 0..n {
        let len = if i % 500 == 7 { 6000 } else { 1 + i % 4 };
        for k in 0..len {
            coo.push(i, (i * 31 + k * 7) % n, ((i + k) % 5) as f64 - 2.0).unwrap();
        }
    }
    let a = coo.to_csr();
    let threads = env_count("SPGPU_STRESS_THREADS", 8);
    // balanced, balanced with hot columns (each product gathers its x into the matrix's
    // scratch first), and SELL
    use spgpu::gpu::{hot::HotChoice, KernelChoice};
    for (choice, hot) in [
        (KernelChoice::Balanced, HotChoice::Off),
        (KernelChoice::Balanced, HotChoice::Force(256)),
        (KernelChoice::Sell, HotChoice::Off),
    ] {
        let d_a = DeviceCsr::upload_with_hot(ctx, &a, choice, hot, 0).unwrap();
        assert_eq!(d_a.plan().hot_columns(), hot != HotChoice::Off);
        let choice = format!("{choice}{}", if d_a.plan().hot_columns() { " with hot columns" } else { "" });
        let failures = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for t in 0..threads {
                let (a, d_a, failures) = (&a, &d_a, &failures);
                scope.spawn(move || {
                    let x: Vec<f64> = (0..n).map(|j| ((j * (t + 3)) % 7) as f64 - 3.0).collect();
                    let mut want = vec![0.0; n];
                    reference::spmv_csr(1.0, a, &x, 0.0, &mut want).unwrap();
                    let d_x = DeviceVector::from_slice(d_a.context(), &x).unwrap();
                    for _ in 0..40 {
                        if spmv_round(d_a, &d_x, &want).is_err() {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(failures.load(Ordering::Relaxed), 0, "{choice}: products of other threads leaked in");
    }
}

/// Uploads from rayon tasks, many at once: large arrays go through the context's pinned
/// staging buffers, which one upload holds while rayon copies into them in parallel; the
/// others, including a task this thread's rayon pool may run inside that copy, find them
/// taken and upload from their own memory. Every matrix must arrive whole, with no upload
/// waiting on another.
#[test]
fn uploads_from_rayon_tasks_share_the_staging_buffers() {
    use rayon::prelude::*;
    let Some(ctx) = gpu("uploads_from_rayon_tasks_share_the_staging_buffers") else { return };
    // 16 matrices of about 1.2M entries (over 1 MiB of columns and of values each)
    let mats: Vec<spgpu::CsrMatrix<f64>> =
        (0..16).map(|k| gen::from_spec(&format!("lap2d:{}", 480 + k)).unwrap()).collect();
    let downloaded: Vec<bool> = mats
        .par_iter()
        .map(|a| {
            let d = DeviceCsr::upload(ctx, a).unwrap();
            let v = DeviceVector::from_slice(ctx, a.values()).unwrap();
            d.download().unwrap() == *a && v.to_vec().unwrap() == a.values()
        })
        .collect();
    assert!(downloaded.iter().all(|&ok| ok), "{downloaded:?}");
}
