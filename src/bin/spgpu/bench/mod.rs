//! `spgpu bench`: SpMV of every kernel against cuSPARSE, the CPU and the memory-bandwidth
//! limit, over a set of matrices, in one run.
//!
//! For each matrix and precision it prints the shape, the row statistics and the plan's
//! choice, then times every implementation that applies, checks each result against the
//! CPU reference ([`spgpu::reference`]), and reports GB/s by the byte model ([`model`]) and
//! the fraction of the device-to-device copy bandwidth measured at the start of the run:
//!
//! - `spgpu-auto` (the plan's kernel) and every kernel forced by name: `spgpu-scalar`,
//!   `spgpu-vector:N` for each compiled threads-per-row count, `spgpu-ell` (when ELLPACK
//!   pads within its default limit);
//! - cuSPARSE `cusparseSpMV` on the same device arrays: CSR ALG1, ALG2, and ALG1 after
//!   `cusparseSpMV_preprocess` ([`cusparse`], loaded at run time; skipped with a note when
//!   absent);
//! - `cpu-sprs` and `cpu-nalgebra` on all cores ([`cpu`]).
//!
//! GPU times are medians of CUDA-event timings of many back-to-back launches ([`timing`]);
//! matrices with fewer entries than `--graph-below` are also timed as CUDA-graph replays,
//! which removes the launch overhead that dominates there. Results go to an aligned table
//! on stdout and, on request, CSV, JSON, a Markdown summary and an SVG plot ([`report`],
//! [`plot`]).

mod cpu;
mod cusparse;
pub(crate) mod model;
mod plot;
mod report;
mod timing;

use crate::CliResult;
use cpu::{Baselines, CpuScalar};
use cusparse::{Algorithm, CuSparse};
use indicatif::{ProgressBar, ProgressStyle};
use rand::{Rng, SeedableRng};
use report::{MatrixInfo, Measurement, Report, RunInfo};
use spgpu::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, KernelChoice, VECTOR_THREADS_PER_ROW};
use spgpu::{gen, reference, CsrMatrix, Scalar};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use timing::{Method, Timing};

/// Errors inside the benchmark: any error, printed on one line.
pub type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Enqueues one SpMV `y = A x` on the stream (the matrix is captured by the closure).
type Launch<'a, T> = &'a dyn Fn(&DeviceVector<T>, &mut DeviceVector<T>) -> BenchResult<()>;

/// A CPU baseline: `y = A x` on the host.
type CpuSpmv<T> = fn(&Baselines<T>, &[T], &mut [T]);

/// The folder read when no path and no generated matrix is given and `SPGPU_MATRICES` is unset.
pub const DEFAULT_FOLDER: &str = "matrices/suitesparse";

/// Precisions to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Precision {
    /// Single precision.
    F32,
    /// Double precision.
    F64,
    /// Both, f64 first.
    Both,
}

/// Arguments of `spgpu bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Matrix Market files (.mtx, .mtx.gz) or folders of them. Without paths and without
    /// --gen: the folder $SPGPU_MATRICES, else matrices/suitesparse (see matrices/README.md).
    pub paths: Vec<PathBuf>,
    /// A generated matrix by name, for example lap2d:2000, stencil27:100, powerlaw:1000000,
    /// longrows:20000 (repeatable; see `spgpu gen`).
    #[arg(long = "gen", value_name = "NAME")]
    pub gens: Vec<String>,
    /// Element type(s) to benchmark.
    #[arg(long, value_enum, default_value = "f64")]
    pub precision: Precision,
    /// Write every measurement as CSV to this file.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the run, matrices and measurements as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw GB/s per matrix and implementation, with the copy bandwidth, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write the summary table (one row per matrix) as Markdown to this file.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Repetitions per timing; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub reps: u32,
    /// Also time CUDA-graph replays for matrices with fewer entries than this.
    #[arg(long, default_value_t = 1_000_000, value_name = "NNZ")]
    pub graph_below: usize,
    /// Size in MiB of each buffer of the copy-bandwidth measurement (two are allocated).
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub copy_mib: u64,
    /// Skip cuSPARSE.
    #[arg(long)]
    pub no_cusparse: bool,
    /// Skip the CPU baselines.
    #[arg(long)]
    pub no_cpu: bool,
    /// Run nothing: rebuild the summary, Markdown, JSON and plot from the CSV of an earlier
    /// run (no GPU needed).
    #[arg(long, value_name = "FILE.csv", conflicts_with_all = ["paths", "gens"])]
    pub from_csv: Option<PathBuf>,
}

/// One matrix to run: where it comes from.
#[derive(Debug, Clone, PartialEq)]
enum Input {
    File(PathBuf),
    Generated(String),
}

impl Input {
    fn name(&self) -> String {
        match self {
            Input::File(p) => {
                let f = p.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
                f.strip_suffix(".gz").unwrap_or(&f).strip_suffix(".mtx").map(str::to_string).unwrap_or(f)
            }
            Input::Generated(s) => s.strip_prefix("gen:").unwrap_or(s).to_string(),
        }
    }

    fn source(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Generated(s) => format!("gen:{}", s.strip_prefix("gen:").unwrap_or(s)),
        }
    }

    fn load(&self) -> BenchResult<CsrMatrix<f64>> {
        Ok(match self {
            Input::File(p) => spgpu::io::read_csr::<f64>(p)?,
            Input::Generated(s) => gen::from_spec::<f64>(s)?,
        })
    }
}

fn is_matrix_file(p: &Path) -> bool {
    let n = p.file_name().map(|f| f.to_string_lossy().to_lowercase()).unwrap_or_default();
    n.ends_with(".mtx") || n.ends_with(".mtx.gz")
}

/// The matrices of a folder: its `.mtx`/`.mtx.gz` files and those one level down, sorted.
fn folder_files(dir: &Path) -> BenchResult<Vec<PathBuf>> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let p = e?.path();
        if p.is_dir() {
            for sub in std::fs::read_dir(&p)?.flatten() {
                if is_matrix_file(&sub.path()) {
                    out.push(sub.path());
                }
            }
        } else if is_matrix_file(&p) {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// The matrices named by the arguments, in order: paths (folders expanded), then generated.
fn inputs(paths: &[PathBuf], gens: &[String], default_folder: Option<PathBuf>) -> BenchResult<Vec<Input>> {
    let mut out = Vec::new();
    let from_default = paths.is_empty() && gens.is_empty();
    let paths: Vec<PathBuf> = if from_default {
        vec![default_folder.unwrap_or_else(|| PathBuf::from(DEFAULT_FOLDER))]
    } else {
        paths.to_vec()
    };
    for p in &paths {
        if p.is_dir() {
            let files = folder_files(p)?;
            if files.is_empty() {
                return Err(format!("{}: no .mtx or .mtx.gz files", p.display()).into());
            }
            out.extend(files.into_iter().map(Input::File));
        } else if p.is_file() {
            out.push(Input::File(p.clone()));
        } else if from_default {
            return Err(format!(
                "{}: no such folder; run matrices/fetch, set SPGPU_MATRICES, or name matrices and --gen",
                p.display()
            )
            .into());
        } else {
            return Err(format!("{}: no such file or folder", p.display()).into());
        }
    }
    for g in gens {
        out.push(Input::Generated(g.clone()));
    }
    Ok(out)
}

/// What every matrix of a run shares.
struct Env {
    ctx: &'static Context,
    cusparse: Option<CuSparse>,
    copy_gbps: f64,
    reps: usize,
    graph_below: usize,
    cpu: bool,
    threads: usize,
}

/// Relative 2-norm error allowed against the reference: f32 sums of long rows in cuSPARSE
/// and on the CPU round at every step.
fn tolerance<T: Scalar>() -> f64 {
    if T::BYTES == 4 {
        1e-4
    } else {
        1e-10
    }
}

/// A random vector in [-1, 1), never all zeros.
fn random_vector<T: Scalar>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect()
}

/// Where the measurements and notes of one matrix go.
struct Sink<'n> {
    out: Vec<Measurement>,
    notes: &'n mut Vec<String>,
}

/// Checks and times one implementation on the GPU; pushes one measurement per timing method.
/// A graph capture that the implementation does not support is a note, not an error.
#[allow(clippy::too_many_arguments)]
fn gpu_case<T: Scalar>(
    env: &Env,
    a: &CsrMatrix<T>,
    name: &str,
    implementation: &str,
    format_bytes: u64,
    x: &mut DeviceVector<T>,
    y: &mut DeviceVector<T>,
    seed: u64,
    launch: Launch<'_, T>,
    sink: &mut Sink<'_>,
) -> BenchResult<()> {
    // correct first: fresh x, poisoned y, compare with the reference in f64
    let xh = random_vector::<T>(a.ncols(), seed);
    x.copy_from(&xh)?;
    let mut want = vec![T::ZERO; a.nrows()];
    reference::spmv_csr(T::ONE, a, &xh, T::ZERO, &mut want)?;
    y.fill(T::from_f64(f64::NAN))?;
    launch(x, y)?;
    let got = y.to_vec()?;
    let rel_error = reference::relative_error(&got, &want);
    let correct = rel_error <= tolerance::<T>();
    let stream = env.ctx.stream();
    let mut timings = vec![timing::time_events(stream, env.reps, || launch(x, y))?];
    if a.nnz() < env.graph_below {
        match timing::time_graph(stream, env.reps, || launch(x, y)) {
            Ok(t) => timings.push(t),
            Err(e) => {
                stream.synchronize()?;
                sink.notes.push(format!("{name} ({}): {implementation}: no graph timing: {e}", T::NAME));
            }
        }
    }
    let bytes = model::csr_bytes(a.nrows(), a.ncols(), a.nnz(), T::BYTES, false);
    for t in timings {
        sink.out.push(measurement::<T>(
            name,
            implementation,
            t,
            bytes,
            format_bytes,
            env.copy_gbps,
            rel_error,
            correct,
        ));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn measurement<T: Scalar>(
    matrix: &str,
    implementation: &str,
    t: Timing,
    bytes: u64,
    format_bytes: u64,
    copy_gbps: f64,
    rel_error: f64,
    correct: bool,
) -> Measurement {
    let gbps = model::gbps(bytes, t.median);
    Measurement {
        matrix: matrix.to_string(),
        scalar: T::NAME,
        implementation: implementation.to_string(),
        method: t.method,
        seconds: t.median,
        min_seconds: t.min,
        max_seconds: t.max,
        per_rep: t.per_rep,
        reps: t.reps,
        bytes,
        format_bytes,
        gbps,
        fraction: if t.method == Method::Wall { f64::NAN } else { gbps / copy_gbps },
        rel_error,
        correct,
    }
}

/// Every implementation on one matrix in precision `T`.
fn bench_matrix<T: CpuScalar>(
    env: &Env,
    name: &str,
    a: &CsrMatrix<T>,
    info: &mut MatrixInfo,
    notes: &mut Vec<String>,
) -> BenchResult<Vec<Measurement>> {
    let ctx = env.ctx;
    let mut sink = Sink { out: Vec::new(), notes };
    let csr_bytes = model::csr_bytes(a.nrows(), a.ncols(), a.nnz(), T::BYTES, false);
    let mut d_a = DeviceCsr::upload(ctx, a)?;
    info.plan = d_a.plan().kernel().to_string();
    info.plan_explain = d_a.plan().explain();
    let mut x = DeviceVector::<T>::zeros(ctx, a.ncols())?;
    let mut y = DeviceVector::<T>::zeros(ctx, a.nrows())?;
    let mut choices = vec![KernelChoice::Auto, KernelChoice::Scalar];
    choices
        .extend(VECTOR_THREADS_PER_ROW.iter().filter(|&&t| t <= ctx.warp_size()).map(|&t| KernelChoice::VectorTpr(t)));
    choices.push(KernelChoice::Balanced);
    let mut seed = 1;
    for choice in choices {
        d_a.set_kernel(choice)?;
        let d = &d_a;
        let imp = format!("spgpu-{choice}");
        gpu_case(
            env,
            a,
            name,
            &imp,
            csr_bytes,
            &mut x,
            &mut y,
            seed,
            &|x, y| Ok(d.spmv(T::ONE, x, T::ZERO, y)?),
            &mut sink,
        )?;
        seed += 1;
    }
    d_a.set_kernel(KernelChoice::Auto)?;
    match DeviceEll::from_csr(ctx, a) {
        Ok(ell) => {
            let fb = model::ell_bytes(a.nrows(), a.ncols(), ell.width(), T::BYTES, false);
            let e = &ell;
            gpu_case(
                env,
                a,
                name,
                "spgpu-ell",
                fb,
                &mut x,
                &mut y,
                seed,
                &|x, y| Ok(e.spmv(T::ONE, x, T::ZERO, y)?),
                &mut sink,
            )?;
        }
        Err(e) => sink.notes.push(format!("{name} ({}): spgpu-ell skipped: {e}", T::NAME)),
    }
    seed += 1;
    if let Some(cs) = &env.cusparse {
        for alg in Algorithm::ALL {
            let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
            match cs.plan(&d_a, xp, yp, alg) {
                Ok(plan) => {
                    let p = &plan;
                    let launch: Launch<'_, T> = &|_, _| p.launch();
                    if let Err(e) =
                        gpu_case(env, a, name, alg.name(), csr_bytes, &mut x, &mut y, seed, launch, &mut sink)
                    {
                        // a cuSPARSE failure (not spgpu's) is reported and the run goes on
                        ctx.synchronize()?;
                        sink.notes.push(format!("{name} ({}): {} failed: {e}", T::NAME, alg.name()));
                    }
                }
                Err(e) => sink.notes.push(format!("{name} ({}): {} skipped: {e}", T::NAME, alg.name())),
            }
            seed += 1;
        }
    }
    drop(d_a);
    if env.cpu && a.nnz() > 0 {
        let b = Baselines::new(a, env.threads)?;
        let runs: [(&str, CpuSpmv<T>); 2] =
            [("cpu-sprs", Baselines::spmv_sprs), ("cpu-nalgebra", Baselines::spmv_nalgebra)];
        for (imp, f) in runs {
            let xh = random_vector::<T>(a.ncols(), seed);
            seed += 1;
            let mut want = vec![T::ZERO; a.nrows()];
            reference::spmv_csr(T::ONE, a, &xh, T::ZERO, &mut want)?;
            let mut yh = vec![T::from_f64(f64::NAN); a.nrows()];
            f(&b, &xh, &mut yh);
            let rel = reference::relative_error(&yh, &want);
            let t = cpu::time_wall(env.reps, || f(&b, &xh, &mut yh));
            sink.out.push(measurement::<T>(
                name,
                imp,
                t,
                csr_bytes,
                csr_bytes,
                env.copy_gbps,
                rel,
                rel <= tolerance::<T>(),
            ));
        }
    }
    Ok(sink.out)
}

/// Today's date and time in UTC, RFC 3339, from the system clock.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // civil-from-days (H. Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The commit: `$SPGPU_COMMIT`, else `git describe --always --dirty`, else "unknown".
fn commit() -> String {
    if let Ok(c) = std::env::var("SPGPU_COMMIT") {
        return c;
    }
    std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// The driver: its version from `/proc/driver/nvidia/version` when readable, and the CUDA
/// version it supports (`cuDriverGetVersion`).
fn driver_version() -> String {
    let mut v = 0;
    // SAFETY: a valid out-pointer; the driver is initialized by `Context::global`.
    let ok = unsafe { cust::sys::cuDriverGetVersion(&mut v) } == cust::sys::cudaError_enum::CUDA_SUCCESS;
    let cuda = if ok { format!("CUDA {}.{}", v / 1000, (v % 1000) / 10) } else { "CUDA unknown".into() };
    let kernel = std::fs::read_to_string("/proc/driver/nvidia/version").ok().and_then(|t| nvrm_version(&t));
    match kernel {
        Some(k) => format!("{k} ({cuda})"),
        None => cuda,
    }
}

/// The driver version in the text of `/proc/driver/nvidia/version`: the first word after
/// "Kernel Module" that starts with a digit and holds a dot (`... Kernel Module  535.104.05`,
/// `... Open Kernel Module for x86_64  580.159.04`).
fn nvrm_version(text: &str) -> Option<String> {
    let after = text.lines().next()?.split("Kernel Module").nth(1)?;
    after
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

/// Writes `text` to `path`, naming the file in the error.
fn write_file(path: &Path, text: &str) -> BenchResult<()> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// Runs `spgpu bench`.
pub fn run(args: Args) -> CliResult {
    if let Some(p) = &args.from_csv {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let report = report::from_csv(&text).map_err(|e| format!("{}: {e}", p.display()))?;
        println!(
            "spgpu bench: {} measurements of {} matrices from {}",
            report.measurements.len(),
            report.matrices.len(),
            p.display()
        );
        return emit(&report, &args);
    }
    let default_folder = std::env::var_os("SPGPU_MATRICES").map(PathBuf::from);
    let inputs = inputs(&args.paths, &args.gens, default_folder)?;
    let ctx = Context::global()?;
    let stream = ctx.stream();
    let mut report = Report {
        run: RunInfo {
            date: utc_now(),
            commit: commit(),
            gpu: ctx.info().name.clone(),
            driver: driver_version(),
            cpu_threads: rayon::current_num_threads(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            ..Default::default()
        },
        ..Default::default()
    };
    let (bw, _) = timing::copy_bandwidth(stream, (args.copy_mib as usize) << 20, args.reps as usize)?;
    report.run.copy_gbps = bw / 1e9;
    let cusparse = if args.no_cusparse {
        report.run.cusparse = "not run (--no-cusparse)".into();
        None
    } else {
        match CuSparse::load(stream) {
            Ok(cs) => {
                report.run.cusparse = format!("{} ({})", cs.version_string(), cs.path.display());
                if !cs.has_preprocess() {
                    report.notes.push("cuSPARSE has no cusparseSpMV_preprocess: alg1+pre not run".into());
                }
                Some(cs)
            }
            Err(e) => {
                report.run.cusparse = format!("absent: {e}");
                report.notes.push(format!("cuSPARSE skipped: {e}"));
                None
            }
        }
    };
    println!(
        "spgpu bench: {} on {} ({}), copy bandwidth {:.0} GB/s, cuSPARSE {}, {} CPU threads, {} matrices",
        report.run.commit,
        report.run.gpu,
        report.run.driver,
        report.run.copy_gbps,
        report.run.cusparse,
        report.run.cpu_threads,
        inputs.len()
    );
    let env = Env {
        ctx,
        cusparse,
        copy_gbps: report.run.copy_gbps,
        reps: args.reps as usize,
        graph_below: args.graph_below,
        cpu: !args.no_cpu,
        threads: rayon::current_num_threads(),
    };
    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::new(inputs.len() as u64);
        b.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}")?);
        b
    } else {
        ProgressBar::hidden()
    };
    let precisions: &[&str] = match args.precision {
        Precision::F32 => &["f32"],
        Precision::F64 => &["f64"],
        Precision::Both => &["f64", "f32"],
    };
    for input in &inputs {
        let name = input.name();
        bar.set_message(name.clone());
        let mut info = MatrixInfo { name: name.clone(), source: input.source(), ..Default::default() };
        let a = match input.load() {
            Ok(a) => a,
            Err(e) => {
                let why = format!("not read: {e}");
                bar.suspend(|| println!("\n{name}: skipped, {why}"));
                report.notes.push(format!("{name}: skipped, {why}"));
                info.skipped = Some(why);
                report.matrices.push(info);
                bar.inc(1);
                continue;
            }
        };
        let s = a.row_stats();
        (info.rows, info.cols, info.nnz) = (a.nrows(), a.ncols(), a.nnz());
        (info.mean_row, info.max_row, info.std_row, info.empty_rows) = (s.mean, s.max, s.std_dev, s.empty_rows);
        for &p in precisions {
            let ms = if p == "f64" {
                bench_matrix::<f64>(&env, &name, &a, &mut info, &mut report.notes)?
            } else {
                bench_matrix::<f32>(&env, &name, &a.cast::<f32>(), &mut info, &mut report.notes)?
            };
            let refs: Vec<&Measurement> = ms.iter().collect();
            let block = report::matrix_block(&info, p, &refs);
            bar.suspend(|| println!("\n{block}"));
            report.measurements.extend(ms);
        }
        report.matrices.push(info);
        bar.inc(1);
    }
    bar.finish_and_clear();
    drop(env);
    emit(&report, &args)
}

/// Prints the summary and notes and writes the files the arguments ask for.
///
/// # Errors
///
/// A file that cannot be written, or any result that differs from the CPU reference.
fn emit(report: &Report, args: &Args) -> CliResult {
    println!("\nSummary: best time in us (fraction of the copy bandwidth); * = CUDA-graph replay\n");
    print!("{}", report::summary_compact(report, false));
    println!("\nEvery spgpu kernel:\n");
    print!("{}", report::summary(report, false));
    for n in &report.notes {
        println!("note: {n}");
    }
    if let Some(p) = &args.csv {
        write_file(p, &report::to_csv(report))?;
    }
    if let Some(p) = &args.json {
        write_file(p, &report::to_json(report))?;
    }
    if let Some(p) = &args.markdown {
        let md = format!(
            "{}\n\nEvery spgpu kernel:\n\n{}",
            report::summary_compact(report, true),
            report::summary(report, true)
        );
        write_file(p, &md)?;
    }
    if let Some(p) = &args.plot {
        plot::plot_svg(report, p)?;
    }
    let wrong = report.measurements.iter().filter(|m| !m.correct).count();
    if wrong > 0 {
        return Err(
            format!("{wrong} result(s) differ from the CPU reference beyond the tolerance (see WRONG above)").into()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_expand_folders_and_name_matrices() {
        let dir = std::env::temp_dir().join(format!("spgpu-bench-inputs-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        for f in ["b.mtx", "a.mtx.gz", "notes.txt", "sub/c.mtx"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let got = inputs(std::slice::from_ref(&dir), &["gen:lap2d:10".into(), "powerlaw:1000".into()], None).unwrap();
        let names: Vec<String> = got.iter().map(Input::name).collect();
        assert_eq!(names, ["a", "b", "c", "lap2d:10", "powerlaw:1000"]);
        assert_eq!(got[3].source(), "gen:lap2d:10");
        assert_eq!(got[4].source(), "gen:powerlaw:1000");
        // the default folder is used only when nothing is named
        let d = inputs(&[], &[], Some(dir.clone())).unwrap();
        assert_eq!(d.len(), 3);
        let only_gen = inputs(&[], &["lap2d:3".into()], Some(dir.clone())).unwrap();
        assert_eq!(only_gen, vec![Input::Generated("lap2d:3".into())]);
        std::fs::remove_dir_all(&dir).ok();
        let missing = inputs(&[], &[], Some(dir.join("nope"))).unwrap_err().to_string();
        assert!(missing.contains("run matrices/fetch"), "{missing}");
        assert!(inputs(&[dir.join("nope.mtx")], &[], None).is_err());
    }

    #[test]
    fn driver_versions_are_found_in_both_module_flavours() {
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16)  Thu\nGCC version: gcc 12";
        assert_eq!(nvrm_version(open).as_deref(), Some("580.159.04"));
        let closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023";
        assert_eq!(nvrm_version(closed).as_deref(), Some("535.104.05"));
        assert_eq!(nvrm_version("something else"), None);
    }

    #[test]
    fn utc_dates_are_well_formed() {
        let d = utc_now();
        assert_eq!(d.len(), 20, "{d}");
        assert!(d.starts_with("20") && d.ends_with('Z') && &d[10..11] == "T", "{d}");
    }

    #[test]
    fn random_vectors_are_seeded_and_not_zero() {
        let a = random_vector::<f64>(100, 3);
        assert_eq!(a, random_vector::<f64>(100, 3));
        assert_ne!(a, random_vector::<f64>(100, 4));
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)) && a.iter().any(|v| *v != 0.0));
    }

    #[test]
    fn bench_without_a_gpu_fails_cleanly() {
        if Context::global().is_ok() {
            return; // a GPU is present: nothing to check here
        }
        let args = Args {
            paths: vec![],
            gens: vec!["lap2d:10".into()],
            precision: Precision::F64,
            csv: None,
            json: None,
            plot: None,
            markdown: None,
            reps: 1,
            graph_below: 10,
            copy_mib: 1,
            no_cusparse: true,
            no_cpu: true,
            from_csv: None,
        };
        let e = run(args).unwrap_err().to_string();
        assert!(e.contains("no CUDA device"), "{e}");
    }
}
