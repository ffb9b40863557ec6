//! `spgpu spmv`: one SpMV on the GPU, checked against the CPU reference, and timed.
//!
//! The matrix is uploaded, its plan printed, `y = alpha*A*x + beta*y` computed once and
//! compared with [`spgpu::reference::spmv_csr`] (relative 2-norm error at most 1e-12 in f64,
//! 1e-5 in f32), then timed with CUDA events: after a warm-up, `repeats` repetitions of
//! `launches` back-to-back launches; the median time per launch is reported with the
//! bandwidth of the minimal-bytes model (`docs/gpu-notes.md`):
//! `nnz*(4 + val) + (rows + 1)*4 + cols*val + rows*val` bytes, plus `rows*val` more when
//! `beta != 0`, and its fraction of the H200's measured copy bandwidth (4.28 TB/s). Without
//! a GPU it says so on one line (on standard error) and runs the CPU reference only.
//! `--json` prints one JSON object instead of the text; `--gpu N` picks the GPU.
//!
//! `--transpose` computes `y = alpha*A^T*x + beta*y` instead (x of the matrix's rows, y of
//! its columns), checked against [`spgpu::reference::spmv_transpose`]: `auto` runs
//! [`DeviceCsr::spmv_transpose`] after [`DeviceCsr::prepare_transpose`] (whose time is
//! reported), a forced kernel runs on the explicit transpose uploaded with it; the byte
//! model is that of the transpose.

use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spgpu::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, KernelChoice, SpmvPlan};
use spgpu::{reference, CsrMatrix, Scalar};

use crate::CliResult;

/// Writes a line of the text report, unless the report is JSON.
macro_rules! text {
    ($json:expr, $($arg:tt)*) => {
        if !$json {
            outln!($($arg)*)?;
        }
    };
}

/// The copy bandwidth of the H200 the crate is measured on, in bytes per second (device to
/// device, bytes read plus bytes written): the ceiling the GB/s figure is compared with.
const COPY_BANDWIDTH: f64 = 4.28e12;

/// Arguments of `spgpu spmv`.
#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// A Matrix Market file (plain or gzip-compressed), `-` for standard input, or a
    /// generated matrix `gen:NAME` (any name of `spgpu gen --help`: lap2d:N, uniform:R:C:K,
    /// powerlaw:R, rmat:S:E, web:N, circuit:N, geo:N, elast:N, communities:N:SIZE, graphlap:NAME,
    /// transpose:NAME, permute:NAME,
    /// ...).
    pub matrix: String,
    /// The kernel: auto (the plan's heuristic), scalar, vector, vector:N (N = 2, 4, 8, 16,
    /// 32), balanced, balanced:N (N = 256 or 512 threads per row block), sell, ell; or a
    /// comma-separated list of them, each checked and timed in turn on the same matrix and x.
    #[arg(long, default_value = "auto", value_delimiter = ',')]
    pub kernel: Vec<String>,
    /// Element type: f64 or f32.
    #[arg(long, default_value = "f64", value_parser = ["f64", "f32"])]
    pub precision: String,
    /// Timed repetitions; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = crate::at_least_one::<u32>)]
    pub repeats: u32,
    /// Back-to-back launches per repetition.
    #[arg(long, default_value_t = 20, value_parser = crate::at_least_one::<u32>)]
    pub launches: u32,
    /// alpha in y = alpha*A*x + beta*y.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    pub alpha: f64,
    /// beta in y = alpha*A*x + beta*y (0: y is not read).
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub beta: f64,
    /// Seed of the random x (and y when beta != 0).
    #[arg(long, default_value_t = 42, value_parser = crate::whole::<u64>)]
    pub seed: u64,
    /// Print one JSON object on standard output instead of the text (`docs/cli.md`).
    #[arg(long)]
    pub json: bool,
    /// Multiply by the transpose: y = alpha*A^T*x + beta*y (x has the matrix's rows, y its
    /// columns). auto builds and keeps the explicit transpose with its own plan
    /// (DeviceCsr::spmv_transpose); a forced kernel runs on the explicit transpose.
    #[arg(long)]
    pub transpose: bool,
    #[command(flatten)]
    pub gpu: crate::GpuArg,
}

/// Runs `spgpu spmv`.
pub fn run(args: Args) -> CliResult {
    args.gpu.apply()?;
    // An unknown kernel name is a usage error (status 2).
    let choices = args
        .kernel
        .iter()
        .map(|k| k.parse::<KernelChoice>().map_err(|e| crate::UsageError(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    match args.precision.as_str() {
        "f32" => run_typed::<f32>(&args, &choices),
        _ => run_typed::<f64>(&args, &choices),
    }
}

/// The uploaded matrix: CSR, or ELL when that kernel was asked for, or a CSR matrix whose
/// transpose product is run.
enum DeviceMatrix<T: Scalar> {
    Csr(DeviceCsr<T>),
    Ell(DeviceEll<T>),
    /// `A`, with its transpose built ([`DeviceCsr::prepare_transpose`]): runs `A^T x`.
    Transposed(DeviceCsr<T>),
}

impl<T: Scalar> DeviceMatrix<T> {
    fn plan(&self) -> &SpmvPlan {
        match self {
            DeviceMatrix::Csr(m) => m.plan(),
            DeviceMatrix::Ell(m) => m.plan(),
            DeviceMatrix::Transposed(m) => m.cached_transpose().map_or(m.plan(), DeviceCsr::plan),
        }
    }

    fn spmv(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> spgpu::Result<()> {
        match self {
            DeviceMatrix::Csr(m) => m.spmv(alpha, x, beta, y),
            DeviceMatrix::Ell(m) => m.spmv(alpha, x, beta, y),
            DeviceMatrix::Transposed(m) => m.spmv_transpose(alpha, x, beta, y),
        }
    }
}

fn random_vector<T: Scalar>(rng: &mut StdRng, n: usize) -> Vec<T> {
    (0..n).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect()
}

fn run_typed<T: Scalar>(args: &Args, choices: &[KernelChoice]) -> CliResult {
    let t0 = Instant::now();
    let a = crate::load_matrix::<T>(&args.matrix)?;
    let load_s = t0.elapsed().as_secs_f64();
    let json = args.json;
    let stats = a.row_stats();
    text!(
        json,
        "matrix {}: {} x {}, {} entries, {} ({load_s:.2} s to load){}",
        args.matrix,
        a.nrows(),
        a.ncols(),
        a.nnz(),
        T::NAME,
        if args.transpose { "; y = alpha*A^T*x + beta*y" } else { "" },
    );
    if !json {
        out!("{stats}")?;
    }
    let mut report = serde_json::json!({
        "spgpu_json": crate::info::JSON_VERSION,
        "command": "spmv",
        "matrix": args.matrix,
        "precision": T::NAME,
        "rows": a.nrows(),
        "cols": a.ncols(),
        "nnz": a.nnz(),
        "load_s": load_s,
        "alpha": args.alpha,
        "beta": args.beta,
        "transpose": args.transpose,
    });
    let (alpha, beta) = (T::from_f64(args.alpha), T::from_f64(args.beta));
    // the lengths of x and y: those of A^T's product with --transpose
    let (nx, ny) = if args.transpose { (a.nrows(), a.ncols()) } else { (a.ncols(), a.nrows()) };
    // x, y, the reference y and the GPU's y: sized by the dimensions alone (a matrix with
    // few entries can have 2^31 - 1 columns).
    let vectors = (nx as u64 + 3 * ny as u64) * T::BYTES as u64;
    spgpu::io::check_memory(&format!("the vectors of a {} x {} SpMV", ny, nx), vectors)?;
    let mut rng = StdRng::seed_from_u64(args.seed);
    let x = random_vector::<T>(&mut rng, nx);
    // beta == 0: y must not be read, so it starts as NaN, which would spread if it were.
    let y0 = if args.beta == 0.0 { vec![T::from_f64(f64::NAN); ny] } else { random_vector(&mut rng, ny) };
    let mut y_ref = y0.clone();
    let t_cpu = Instant::now();
    if args.transpose {
        reference::spmv_transpose(alpha, &a, &x, beta, &mut y_ref)?;
    } else {
        reference::spmv_csr(alpha, &a, &x, beta, &mut y_ref)?;
    }
    let cpu_s = t_cpu.elapsed().as_secs_f64();
    text!(json, "CPU reference: {:.1} us", cpu_s * 1e6);
    report["cpu_reference_us"] = serde_json::json!(cpu_s * 1e6);

    let ctx = match Context::global() {
        Ok(ctx) => ctx,
        Err(e) if e.is_no_device() => {
            eprintln!("spgpu spmv: no GPU ({e}); ran the CPU reference only ({:.1} us)", cpu_s * 1e6);
            let mut plans = Vec::new();
            // with --transpose, the plans of the explicit transpose the product runs
            let at = args.transpose.then(|| a.transpose());
            let (m, stats) = match &at {
                Some(t) => (t, t.row_stats()),
                None => (&a, stats),
            };
            for &choice in choices.iter().filter(|&&c| c != KernelChoice::Ell) {
                let hint = SpmvPlan::column_layout(m, &stats, choice, &spgpu::gpu::Tuning::from_env());
                let plan = SpmvPlan::with_columns::<T>(&stats, 32, choice, hint)?;
                text!(json, "{}", plan.explain());
                plans.push(serde_json::json!({
                    "kernel": choice.to_string(),
                    "plan": plan.kernel().to_string(),
                    "reason": plan.reason(),
                }));
            }
            if json {
                report["device"] = serde_json::Value::Null;
                report["plans"] = plans.into();
                report["results"] = serde_json::json!([]);
                outln!("{report}")?;
            }
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    report["device"] = serde_json::json!({
        "name": ctx.info().name,
        "ordinal": ctx.info().ordinal,
        "sm_count": ctx.info().sm_count,
        "warp_size": ctx.warp_size(),
        "ptx": ctx.ptx_arch().to_string(),
    });
    text!(
        json,
        "device: {} ({} SMs, warp {}; kernels from the {} PTX)",
        ctx.info().name,
        ctx.info().sm_count,
        ctx.warp_size(),
        ctx.ptx_arch()
    );

    let d_x = DeviceVector::from_slice(ctx, &x)?;
    let mut failures = Vec::new();
    let mut results = Vec::new();
    // the explicit transpose on the host, for kernels forced on it
    let at = (args.transpose && choices.iter().any(|&c| c != KernelChoice::Auto)).then(|| a.transpose());
    for &choice in choices {
        match run_kernel(args, ctx, &a, at.as_ref(), choice, alpha, beta, &d_x, &y0, &y_ref) {
            Ok(r) => results.push(r),
            Err(e) => {
                text!(json, "{choice}: failed: {e}");
                results.push(serde_json::json!({ "kernel": choice.to_string(), "error": e.to_string() }));
                failures.push(format!("{choice}: {e}"));
            }
        }
    }
    if json {
        report["results"] = results.into();
        outln!("{report}")?;
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; ").into())
    }
}

/// Uploads `a` for one kernel choice, checks one product against `y_ref`, and times it.
/// With `--transpose`, `auto` runs `a`'s transpose product and a forced kernel runs on `at`,
/// the explicit transpose.
#[allow(clippy::too_many_arguments)]
fn run_kernel<T: Scalar>(
    args: &Args,
    ctx: &'static Context,
    a: &CsrMatrix<T>,
    at: Option<&CsrMatrix<T>>,
    choice: KernelChoice,
    alpha: T,
    beta: T,
    d_x: &DeviceVector<T>,
    y0: &[T],
    y_ref: &[T],
) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    let json = args.json;
    let mut transpose_ms = None;
    let d_a = match (args.transpose, choice, at) {
        (true, KernelChoice::Auto, _) => {
            let d = DeviceCsr::upload(ctx, a)?;
            let t = Instant::now();
            d.prepare_transpose()?;
            ctx.synchronize()?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            text!(json, "transpose: built and uploaded in {ms:.1} ms (kept for every product)");
            transpose_ms = Some(ms);
            DeviceMatrix::Transposed(d)
        }
        (true, _, Some(at)) => {
            text!(json, "{choice}: on the explicit transpose ({} x {})", at.nrows(), at.ncols());
            upload_for(ctx, at, choice)?
        }
        _ => upload_for(ctx, a, choice)?,
    };
    let plan = d_a.plan().clone();
    text!(json, "{}", plan.explain());
    let mut d_y = DeviceVector::from_slice(ctx, y0)?;
    let launch = |y: &mut DeviceVector<T>| d_a.spmv(alpha, d_x, beta, y);

    // Correctness first, on a fresh y.
    launch(&mut d_y)?;
    let y_gpu = d_y.to_vec()?;
    let err = reference::relative_error(&y_gpu, y_ref);
    let tol = if T::BYTES == 4 { 1e-5 } else { 1e-12 };
    if err.is_nan() || err > tol {
        return Err(format!("the GPU result differs from the CPU reference: relative error {err:.3e} > {tol:e}").into());
    }
    text!(json, "check: relative error {err:.3e} against the CPU reference (tolerance {tol:e})");

    // Timing: warm-up, then repeats x launches between CUDA events.
    for _ in 0..args.launches {
        launch(&mut d_y)?;
    }
    ctx.synchronize()?;
    let mut per_launch: Vec<f64> = Vec::with_capacity(args.repeats as usize);
    for _ in 0..args.repeats {
        let t = ctx.time(|| (0..args.launches).try_for_each(|_| launch(&mut d_y)))?;
        per_launch.push(t.as_secs_f64() / f64::from(args.launches));
    }
    per_launch.sort_by(f64::total_cmp);
    let median = per_launch[per_launch.len() / 2];
    // the product's rows and columns: A^T's with --transpose
    let (rows, cols) = if args.transpose { (a.ncols(), a.nrows()) } else { (a.nrows(), a.ncols()) };
    let bytes = spgpu::bytes::csr_bytes(rows, cols, a.nnz(), T::BYTES, args.beta != 0.0);
    let gbs = bytes as f64 / median / 1e9;
    let fraction = 100.0 * gbs * 1e9 / COPY_BANDWIDTH;
    text!(
        json,
        "time: {:.1} us per launch (median of {} x {} launches; min {:.1}, max {:.1})",
        median * 1e6,
        args.repeats,
        args.launches,
        per_launch[0] * 1e6,
        per_launch[per_launch.len() - 1] * 1e6,
    );
    text!(
        json,
        "bandwidth: {gbs:.0} GB/s ({bytes} bytes by the minimal-bytes model), {fraction:.0}% of {:.2} TB/s",
        COPY_BANDWIDTH / 1e12
    );
    text!(
        json,
        "result: {} {} [{choice}{}] {}: {:.1} us, {gbs:.0} GB/s, {fraction:.0}%",
        args.matrix,
        T::NAME,
        if args.transpose { ", transpose" } else { "" },
        plan.kernel(),
        median * 1e6
    );
    Ok(serde_json::json!({
        "kernel": choice.to_string(),
        "plan": plan.kernel().to_string(),
        "reason": plan.reason(),
        "relative_error": err,
        "tolerance": tol,
        "median_us": median * 1e6,
        "min_us": per_launch[0] * 1e6,
        "max_us": per_launch[per_launch.len() - 1] * 1e6,
        "repeats": args.repeats,
        "launches": args.launches,
        "bytes": bytes,
        "gbps": gbs,
        "fraction_of_copy": fraction / 100.0,
        "transpose_build_ms": transpose_ms,
    }))
}

/// Uploads `a` for one kernel choice: a [`DeviceEll`] for `ell`, else a [`DeviceCsr`].
fn upload_for<T: Scalar>(
    ctx: &'static Context,
    a: &CsrMatrix<T>,
    choice: KernelChoice,
) -> Result<DeviceMatrix<T>, Box<dyn std::error::Error>> {
    Ok(if choice == KernelChoice::Ell {
        DeviceMatrix::Ell(DeviceEll::from_csr(ctx, a)?)
    } else {
        DeviceMatrix::Csr(DeviceCsr::upload_with(ctx, a, choice)?)
    })
}
