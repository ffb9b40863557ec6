//! `spgpu bench`: SpMV of every kernel against cuSPARSE, the CPU and the memory-bandwidth
//! limit, over a set of matrices, in one run.
//!
//! The matrices are files, folders of them, generated ones (`--gen`) and named suites of
//! generated ones (`--suite large`, `--suite validate`: `suite`); each is read or generated
//! once, on the host (the time is reported), and cast to f32 for the f32 run. For each
//! matrix and precision it prints the shape, the row statistics and the plan's choice, then
//! times every implementation that applies, checks each result against the CPU reference
//! ([`crate::reference`]), and reports GB/s by the byte model ([`crate::bytes`]) and the fraction
//! of the device-to-device copy bandwidth measured at the start of the run:
//!
//! - `spgpu-auto` (the plan's kernel) and every kernel forced by name
//!   ([`KernelChoice::forced`]: `spgpu-scalar`, `spgpu-vector:N`, `spgpu-balanced`,
//!   `spgpu-ell`), or those of `--kernels`; each is uploaded with
//!   [`DeviceCsr::upload_with`], whose time, preprocessing and device memory are recorded.
//!   A kernel that fails at upload or launch is skipped with a note; for `ell`, a
//!   [`DeviceEll`] is measured instead when `upload_with` refuses it;
//! - cuSPARSE `cusparseSpMV` on a plain CSR upload: CSR ALG1, ALG2, and ALG1 after
//!   `cusparseSpMV_preprocess` (`cusparse`, loaded at run time; skipped with a note when
//!   absent);
//! - `cpu-sprs` and `cpu-nalgebra` on all cores (`cpu`).
//!
//! With `--transpose` every implementation computes `y = A^T x` instead, checked against
//! [`reference::spmv_transpose`]: `spgpu-auto` is [`DeviceCsr::spmv_transpose`] (A uploaded
//! with its plan, the transpose built and kept by [`DeviceCsr::prepare_transpose`]; the cost
//! counts both uploads and the build), a forced kernel runs on the explicit transpose
//! (transposed on the host, whose time counts as its preprocessing), cuSPARSE runs both
//! `CUSPARSE_OPERATION_TRANSPOSE` on A (`cusparse-<alg>-transpose`) and its non-transposed
//! product on the explicit transpose (`cusparse-<alg>-explicit`), and the CPU baselines
//! multiply the explicit transpose. The summary compares the plan with the fastest of all
//! cuSPARSE variants; a note per matrix and precision compares it with each kind apart.
//!
//! GPU times are medians of CUDA-event timings of back-to-back launches (`timing`);
//! matrices with fewer entries than `--graph-below` are also timed as CUDA-graph replays,
//! which removes the launch overhead that dominates there. Results go to an aligned table
//! on stdout and, on request, CSV, JSON, Markdown and an SVG plot (`report`, `plot`);
//! all of them lead with the `summary`: the plan against the fastest cuSPARSE variant,
//! memory-bound and latency-bound matrices apart.

mod cpu;
mod cusparse;

mod plot;
mod report;
mod suite;
mod summary;
mod timing;

use crate::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, KernelChoice};
use crate::{gen, reference, CsrMatrix, EllMatrix, Scalar};
use cpu::{Baselines, CpuScalar};
use cusparse::{Algorithm, CuSparse};
use indicatif::{ProgressBar, ProgressStyle};
use rand::{Rng, SeedableRng};
use report::{MatrixInfo, Measurement, Report, RunInfo};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;
pub use suite::Suite;
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

/// The end of `spgpu bench --help`: the suites (from `suite`, the one list) and what the
/// run prints.
pub fn help_suffix() -> String {
    let mut s = String::from("Suites (--suite, repeatable; generated on the host, once per run, then cast to f32):\n");
    for suite in suite::ALL {
        let (name, what, specs) = (suite.name(), suite.what(), suite.specs());
        s += &format!("  {name:<10} {what}:\n");
        let mut line = String::from("             ");
        for spec in specs {
            if line.len() + spec.len() > 90 {
                s += line.trim_end();
                s.push('\n');
                line = String::from("             ");
            }
            line += spec;
            line.push(' ');
        }
        s += line.trim_end();
        s.push('\n');
    }
    s + "
Output: a block per matrix and precision (every implementation, fastest first), then the
summary: per matrix and precision the plan (spgpu-auto) against the fastest cuSPARSE variant
(speedup = t_cusparse / t_auto), the fraction of the copy bandwidth each reaches, the
plan's preprocessing and upload time in SpMVs and its device memory over the CSR arrays';
memory-bound matrices (working set by the byte model > the device's L2) apart from
latency-bound ones, with the geometric mean and minimum of the speedups and the count below
1.0x per group and precision. The same goes to --markdown and --json; --csv has every
measurement and rebuilds it all with --from-csv; --plot draws the speedups.

Examples:
  spgpu bench --suite large --precision both --no-cpu --csv large.csv --plot large.svg
  spgpu bench --suite large --kernels auto,balanced,ell,vector:8
  spgpu bench --from-csv large.csv --markdown large.md --plot large.svg"
}

/// What `spgpu bench` runs: the command line's arguments (`spgpu bench --help`).
#[derive(Debug, Clone)]
pub struct Options {
    /// Matrix Market files (.mtx, .mtx.gz) or folders of them. Without paths, --gen and
    /// --suite: the folder $SPGPU_MATRICES, else matrices/suitesparse (see matrices/README.md).
    pub paths: Vec<PathBuf>,
    /// A generated matrix by name, for example lap2d:2000, stencil27:100, powerlaw:1000000,
    /// longrows:20000 (repeatable; see `spgpu gen`).
    pub gens: Vec<String>,
    /// A named set of generated matrices: large (the fit set), validate, check, shapes or stress
    /// (repeatable; combines with paths and --gen; listed below).
    pub suites: Vec<Suite>,
    /// The spgpu kernels to run, comma-separated, for example auto,balanced,ell,vector:8
    /// [default: auto and every forced kernel: scalar, vector:2 .. vector:32, balanced,
    /// ell]. auto always runs: the summary compares it with cuSPARSE.
    pub kernels: Vec<KernelChoice>,
    /// Element type(s) to benchmark.
    pub precision: Precision,
    /// Write every measurement as CSV to this file.
    pub csv: Option<PathBuf>,
    /// Write the run, matrices, measurements and summary as JSON to this file.
    pub json: Option<PathBuf>,
    /// Draw the plan's speedup over the fastest cuSPARSE variant per matrix (log axis, one
    /// panel per group, f64 and f32 as two series) as SVG.
    pub plot: Option<PathBuf>,
    /// Write the summary and the table of every implementation as Markdown to this file.
    pub markdown: Option<PathBuf>,
    /// Repetitions per timing (each about 2 ms of back-to-back launches, or one launch of a
    /// slower kernel); the median is reported.
    pub reps: u32,
    /// Also time CUDA-graph replays for matrices with fewer entries than this.
    pub graph_below: usize,
    /// Size in MiB of each buffer of the copy-bandwidth measurement (two are allocated).
    pub copy_mib: u64,
    /// Skip cuSPARSE.
    pub no_cusparse: bool,
    /// Skip the CPU baselines.
    pub no_cpu: bool,
    /// The L2 size in MiB that separates memory-bound from latency-bound matrices, instead
    /// of the device's (or, with --from-csv, the CSV's; needed for a CSV without l2_bytes).
    pub l2_mib: Option<u64>,
    /// Run nothing: rebuild the summary, Markdown, JSON and plot from the CSV of an earlier
    /// run (no GPU needed).
    pub from_csv: Option<PathBuf>,
    /// Benchmark the transpose product `y = A^T x` (module docs) instead of `y = A x`.
    pub transpose: bool,
}

/// The kernels to force besides `auto`, in order and without repeats: those named, or every
/// forced kernel of the device ([`KernelChoice::forced`]) when none is.
pub fn forced_kernels(named: &[KernelChoice], warp_size: u32) -> Vec<KernelChoice> {
    let wanted = if named.is_empty() { KernelChoice::forced(warp_size) } else { named.to_vec() };
    let mut out: Vec<KernelChoice> = Vec::new();
    for k in wanted {
        if k != KernelChoice::Auto && !out.contains(&k) {
            out.push(k);
        }
    }
    out
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

    fn load<T: Scalar>(&self) -> BenchResult<CsrMatrix<T>> {
        Ok(match self {
            Input::File(p) => crate::io::read_csr::<T>(p)?,
            Input::Generated(s) => gen::from_spec::<T>(s)?,
        })
    }
}

/// A matrix as loaded: in f32 when only f32 is benchmarked (no f64 copy is ever made, so a
/// matrix of billions of entries costs its f32 CSR arrays on the host), else in f64.
enum Loaded {
    F64(CsrMatrix<f64>),
    F32(CsrMatrix<f32>),
}

impl Loaded {
    fn stats(&self) -> (usize, usize, usize, crate::RowStats) {
        match self {
            Loaded::F64(a) => (a.nrows(), a.ncols(), a.nnz(), a.row_stats()),
            Loaded::F32(a) => (a.nrows(), a.ncols(), a.nnz(), a.row_stats()),
        }
    }

    /// Bytes of the host CSR arrays.
    fn csr_bytes(&self) -> usize {
        match self {
            Loaded::F64(a) => (a.nrows() + 1) * 8 + a.nnz() * 12,
            Loaded::F32(a) => (a.nrows() + 1) * 8 + a.nnz() * 8,
        }
    }
}

/// The peak resident memory of this process so far (`VmHWM` of `/proc/self/status`), in
/// bytes; `None` where that file does not exist.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
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

/// The matrices named by the arguments, in order: paths (folders expanded), the suites'
/// matrices, then `--gen`; a matrix named twice runs once.
fn inputs(
    paths: &[PathBuf],
    gens: &[String],
    suites: &[Suite],
    default_folder: Option<PathBuf>,
) -> BenchResult<Vec<Input>> {
    let mut out: Vec<Input> = Vec::new();
    let from_default = paths.is_empty() && gens.is_empty() && suites.is_empty();
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
    let generated = suites.iter().flat_map(|s| s.specs().iter().map(|g| g.to_string())).chain(gens.iter().cloned());
    for g in generated {
        let input = Input::Generated(g);
        if !out.iter().any(|i| i.name() == input.name()) {
            out.push(input);
        }
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
    /// The kernels forced besides `auto`.
    kernels: Vec<KernelChoice>,
    /// Whether every product is `A^T x` (`--transpose`).
    transpose: bool,
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

/// The reference product `A x`, or `A^T x` with `--transpose`.
fn reference_product<T: Scalar>(env: &Env, a: &CsrMatrix<T>, x: &[T]) -> BenchResult<Vec<T>> {
    let mut want = vec![T::ZERO; if env.transpose { a.ncols() } else { a.nrows() }];
    if env.transpose {
        reference::spmv_transpose(T::ONE, a, x, T::ZERO, &mut want)?;
    } else {
        reference::spmv_csr(T::ONE, a, x, T::ZERO, &mut want)?;
    }
    Ok(want)
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

/// What it cost to get an implementation's matrix onto the device.
#[derive(Debug, Clone, Copy)]
struct Cost {
    /// Wall seconds of the upload, copies and preprocessing included (NaN: not measured).
    upload: f64,
    /// Of which preprocessing for the kernel (NaN: not measured).
    preprocessing: f64,
    /// Device bytes of the matrix for this implementation (0: not measured).
    device_bytes: u64,
}

impl Cost {
    /// The cost of a [`DeviceCsr`] uploaded in `upload` seconds.
    fn of<T: Scalar>(d: &DeviceCsr<T>, upload: f64) -> Cost {
        Cost { upload, preprocessing: d.preprocessing().as_secs_f64(), device_bytes: d.device_bytes() as u64 }
    }

    /// This cost with `seconds` more of preprocessing on the host before the upload (the
    /// explicit transpose of `--transpose`).
    fn after_host(self, seconds: f64) -> Cost {
        Cost { upload: self.upload + seconds, preprocessing: self.preprocessing + seconds, ..self }
    }
}

/// One implementation to check and time on the GPU.
struct Case<'a> {
    /// Its name in reports: `spgpu-<kernel>`, `cusparse-<alg>`.
    implementation: &'a str,
    /// Bytes its format holds and reads (see [`Measurement::format_bytes`]).
    format_bytes: u64,
    cost: Cost,
}

/// Checks and times one implementation on the GPU; pushes one measurement per timing method.
/// A graph capture that the implementation does not support is a note, not an error.
#[allow(clippy::too_many_arguments)]
fn gpu_case<T: Scalar>(
    env: &Env,
    a: &CsrMatrix<T>,
    name: &str,
    case: &Case<'_>,
    x: &mut DeviceVector<T>,
    y: &mut DeviceVector<T>,
    seed: u64,
    launch: Launch<'_, T>,
    sink: &mut Sink<'_>,
) -> BenchResult<()> {
    // correct first: fresh x, poisoned y, compare with the reference in f64
    let xh = random_vector::<T>(if env.transpose { a.nrows() } else { a.ncols() }, seed);
    x.copy_from(&xh)?;
    let want = reference_product(env, a, &xh)?;
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
                sink.notes.push(format!("{name} ({}): {}: no graph timing: {e}", T::NAME, case.implementation));
            }
        }
    }
    let bytes = crate::bytes::csr_bytes(want.len(), xh.len(), a.nnz(), T::BYTES, false);
    for t in timings {
        let mut m = measurement::<T>(name, case.implementation, t, bytes, case.format_bytes, env.copy_gbps);
        (m.rel_error, m.correct) = (rel_error, correct);
        (m.upload_seconds, m.preprocessing_seconds, m.device_bytes) =
            (case.cost.upload, case.cost.preprocessing, case.cost.device_bytes);
        sink.out.push(m);
    }
    Ok(())
}

/// Runs [`gpu_case`]; when it fails, notes that the implementation was skipped and goes on,
/// unless the device itself has failed (then the error ends the run: nothing after it could
/// be trusted).
#[allow(clippy::too_many_arguments)]
fn gpu_case_or_skip<T: Scalar>(
    env: &Env,
    a: &CsrMatrix<T>,
    name: &str,
    case: &Case<'_>,
    x: &mut DeviceVector<T>,
    y: &mut DeviceVector<T>,
    seed: u64,
    launch: Launch<'_, T>,
    sink: &mut Sink<'_>,
) -> BenchResult<()> {
    if let Err(e) = gpu_case(env, a, name, case, x, y, seed, launch, sink) {
        if let Err(dead) = env.ctx.synchronize() {
            return Err(
                format!("{name} ({}): {}: {e}; the device then failed: {dead}", T::NAME, case.implementation).into()
            );
        }
        sink.notes.push(format!("{name} ({}): {} skipped: {e}", T::NAME, case.implementation));
    }
    Ok(())
}

/// A measurement of `implementation` from a timing; its check and costs are left for the
/// caller to fill in (here: not checked, nothing measured).
fn measurement<T: Scalar>(
    matrix: &str,
    implementation: &str,
    t: Timing,
    bytes: u64,
    format_bytes: u64,
    copy_gbps: f64,
) -> Measurement {
    let gbps = crate::bytes::gbps(bytes, t.median);
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
        rel_error: f64::NAN,
        correct: false,
        upload_seconds: f64::NAN,
        preprocessing_seconds: f64::NAN,
        device_bytes: 0,
    }
}

/// Uploads `a` for `choice` and waits for the copies; returns the matrix and the wall
/// seconds it took.
fn upload_timed<T: Scalar>(
    ctx: &'static Context,
    a: &CsrMatrix<T>,
    choice: KernelChoice,
) -> BenchResult<(DeviceCsr<T>, f64)> {
    let t = Instant::now();
    let d = DeviceCsr::upload_with(ctx, a, choice)?;
    ctx.synchronize()?;
    Ok((d, t.elapsed().as_secs_f64()))
}

/// The fallback for `spgpu-ell` when [`DeviceCsr::upload_with`] refuses ELL: converts to
/// [`EllMatrix`] on the host (the preprocessing) and uploads a [`DeviceEll`].
fn upload_ell<T: Scalar>(ctx: &'static Context, a: &CsrMatrix<T>) -> BenchResult<(DeviceEll<T>, Cost)> {
    let t = Instant::now();
    let host = EllMatrix::try_from_csr(a)?;
    let preprocessing = t.elapsed().as_secs_f64();
    let d = DeviceEll::upload(ctx, &host)?;
    ctx.synchronize()?;
    let device_bytes = (d.width() * d.nrows() * (4 + T::BYTES)) as u64;
    Ok((d, Cost { upload: t.elapsed().as_secs_f64(), preprocessing, device_bytes }))
}

/// `y = A x` with the plan of `d`.
fn spmv<T: Scalar>(d: &DeviceCsr<T>) -> impl Fn(&DeviceVector<T>, &mut DeviceVector<T>) -> BenchResult<()> + '_ {
    move |x, y| Ok(d.spmv(T::ONE, x, T::ZERO, y)?)
}

/// The plan's kernel and what it adds (hot columns, row blocks, prefetch, column parts), for
/// the matrix table.
fn plan_label(plan: &crate::gpu::SpmvPlan) -> String {
    let mut label = plan.kernel().to_string();
    if plan.hot_columns() {
        label += " + hot columns";
    }
    if let Some(shape) = plan.row_shape().filter(|&s| s != crate::gpu::balance::RowShape::DEFAULT) {
        label += &format!(" + {}-thread blocks", shape.threads);
    }
    if plan.prefetch_x() {
        label += " + x prefetch";
    }
    if plan.column_parts() > 1 {
        label += &format!(" in {} column parts", plan.column_parts());
    }
    label
}

/// One cuSPARSE product to time: of the device matrix `d` (whose host row offsets are
/// `offsets`) with `alg`, in row blocks of at most `INDEX_LIMIT` entries when `blocks`, with
/// `CUSPARSE_OPERATION_TRANSPOSE` when `transpose`.
struct CusparseVariant<'a, T: Scalar> {
    d: &'a DeviceCsr<T>,
    offsets: &'a [u64],
    alg: Algorithm,
    blocks: bool,
    transpose: bool,
}

/// Every implementation on one matrix in precision `T`: of `y = A x`, or of `y = A^T x`
/// with `--transpose` (module docs).
fn bench_matrix<T: CpuScalar>(
    env: &Env,
    name: &str,
    a: &CsrMatrix<T>,
    info: &mut MatrixInfo,
    notes: &mut Vec<String>,
) -> BenchResult<Vec<Measurement>> {
    let ctx = env.ctx;
    let mut sink = Sink { out: Vec::new(), notes };
    // `m` is the matrix the forced kernels, cuSPARSE's plain product and the CPU multiply:
    // `a`, or with --transpose its explicit transpose, made on the host in `host_transpose` s
    let explicit = env.transpose.then(|| {
        let t = Instant::now();
        let at = a.transpose();
        (at, t.elapsed().as_secs_f64())
    });
    let (m, host_transpose) = explicit.as_ref().map_or((a, 0.0), |(at, s)| (at, *s));
    let max_row = explicit.as_ref().map_or(info.max_row, |(at, _)| at.row_stats().max);
    let csr_bytes = crate::bytes::csr_bytes(m.nrows(), m.ncols(), m.nnz(), T::BYTES, false);
    let ell_bytes = crate::bytes::ell_bytes(m.nrows(), m.ncols(), max_row, T::BYTES, false);
    let mut x = DeviceVector::<T>::zeros(ctx, m.ncols())?;
    let mut y = DeviceVector::<T>::zeros(ctx, m.nrows())?;
    // the plan: its upload must work (the summary is about it); with --transpose, with the
    // transpose that spmv_transpose builds and keeps, whose plan is the one that runs
    let (auto, upload) = upload_timed(ctx, a, KernelChoice::Auto)?;
    let (plan, cost) = if env.transpose {
        let t = Instant::now();
        let at = auto.prepare_transpose()?;
        ctx.synchronize()?;
        let preprocessing = auto.preprocessing() + at.preprocessing();
        let cost = Cost {
            upload: upload + t.elapsed().as_secs_f64(),
            preprocessing: preprocessing.as_secs_f64(),
            device_bytes: (auto.device_bytes() + at.device_bytes()) as u64,
        };
        (at.plan(), cost)
    } else {
        (auto.plan(), Cost::of(&auto, upload))
    };
    let label = if env.transpose { format!("A^T: {}", plan_label(plan)) } else { plan_label(plan) };
    info.set_plan(T::NAME, label, plan.explain());
    let fb = if plan.kernel() == crate::gpu::SpmvKernel::Ell { ell_bytes } else { csr_bytes };
    let case = Case { implementation: "spgpu-auto", format_bytes: fb, cost };
    {
        let product = spmv(&auto);
        let transposed = |x: &DeviceVector<T>, y: &mut DeviceVector<T>| -> BenchResult<()> {
            Ok(auto.spmv_transpose(T::ONE, x, T::ZERO, y)?)
        };
        let launch: Launch<'_, T> = if env.transpose { &transposed } else { &product };
        gpu_case(env, a, name, &case, &mut x, &mut y, 1, launch, &mut sink)?;
    }
    drop(auto);
    let mut seed = 1;
    // a plain CSR upload for cuSPARSE: the scalar kernel's, when it runs
    let mut plain: Option<DeviceCsr<T>> = None;
    for &choice in &env.kernels {
        seed += 1;
        let imp = format!("spgpu-{choice}");
        let fb = if choice == KernelChoice::Ell { ell_bytes } else { csr_bytes };
        match upload_timed(ctx, m, choice) {
            Ok((d, upload)) => {
                let cost = Cost::of(&d, upload).after_host(host_transpose);
                let case = Case { implementation: &imp, format_bytes: fb, cost };
                gpu_case_or_skip(env, a, name, &case, &mut x, &mut y, seed, &spmv(&d), &mut sink)?;
                if choice == KernelChoice::Scalar {
                    plain = Some(d);
                }
            }
            Err(e) if choice == KernelChoice::Ell => match upload_ell(ctx, m) {
                Ok((d, cost)) => {
                    let cost = cost.after_host(host_transpose);
                    sink.notes.push(format!(
                        "{name} ({}): spgpu-ell: DeviceCsr::upload_with(ell) failed ({e}); measured a DeviceEll instead",
                        T::NAME
                    ));
                    let case = Case { implementation: &imp, format_bytes: fb, cost };
                    let launch = |x: &DeviceVector<T>, y: &mut DeviceVector<T>| -> BenchResult<()> {
                        Ok(d.spmv(T::ONE, x, T::ZERO, y)?)
                    };
                    gpu_case_or_skip(env, a, name, &case, &mut x, &mut y, seed, &launch, &mut sink)?;
                }
                Err(e2) => sink.notes.push(format!(
                    "{name} ({}): spgpu-ell skipped: DeviceCsr::upload_with(ell): {e}; DeviceEll: {e2}",
                    T::NAME
                )),
            },
            Err(e) => sink.notes.push(format!("{name} ({}): {imp} skipped: {e}", T::NAME)),
        }
    }
    if let Some(cs) = &env.cusparse {
        let plain = match plain {
            Some(d) => d,
            None => upload_timed(ctx, m, KernelChoice::Scalar)?.0,
        };
        // with --transpose, A itself too, for cuSPARSE's transpose operation
        let plain_a = if env.transpose { Some(upload_timed(ctx, a, KernelChoice::Scalar)?.0) } else { None };
        let variant = |d, offsets, alg, blocks, transpose| CusparseVariant { d, offsets, alg, blocks, transpose };
        let mut variants: Vec<CusparseVariant<'_, T>> =
            Algorithm::ALL.iter().map(|&alg| variant(&plain, m.row_offsets(), alg, false, false)).collect();
        // Past INDEX_LIMIT entries: cuSPARSE with 64-bit indices (CUSPARSE_INDEX_64I), and,
        // since cuSPARSE 12.6 fails on such matrices (status 7, internal error), also as a
        // cuSPARSE user must run them: row blocks of at most INDEX_LIMIT entries, 32I.
        if plain.offsets_are_64_bit() {
            variants.extend(Algorithm::ALL.iter().map(|&alg| variant(&plain, m.row_offsets(), alg, true, false)));
        }
        if let Some(pa) = &plain_a {
            variants.extend(Algorithm::ALL.iter().map(|&alg| variant(pa, a.row_offsets(), alg, false, true)));
        }
        for CusparseVariant { d, offsets: host_offsets, alg, blocks, transpose: op_transpose } in variants {
            seed += 1;
            let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
            let kind = match (env.transpose, op_transpose) {
                (false, _) => "",
                (true, false) => "-explicit",
                (true, true) => "-transpose",
            };
            let imp = format!("{}{kind}{}", alg.name(), if blocks { "-rowblocks" } else { "" });
            let t = Instant::now();
            let plan = if blocks {
                cs.plan_row_blocks(d, host_offsets, xp, yp, alg)
            } else {
                cs.plan(d, xp, yp, alg, op_transpose)
            };
            match plan.and_then(|p| ctx.synchronize().map(|()| p).map_err(Into::into)) {
                Ok(plan) => {
                    let setup = t.elapsed().as_secs_f64();
                    if plan.index_types() != "32I" {
                        sink.notes.push(format!(
                            "{name} ({}): {imp} ran with {} ({} cusparseSpMV calls; {} entries need 64-bit offsets)",
                            T::NAME,
                            plan.index_types(),
                            plan.parts(),
                            a.nnz()
                        ));
                    }
                    // the explicit transpose was made on the host first
                    let host = if env.transpose && !op_transpose { host_transpose } else { 0.0 };
                    let device_bytes = d.csr_bytes() as u64 + plan.buffer_bytes();
                    let cost = Cost { upload: f64::NAN, preprocessing: setup + host, device_bytes };
                    let case = Case { implementation: &imp, format_bytes: csr_bytes, cost };
                    let p = &plan;
                    // a cuSPARSE failure (not spgpu's) is reported and the run goes on
                    gpu_case_or_skip(env, a, name, &case, &mut x, &mut y, seed, &|_, _| p.launch(), &mut sink)?;
                }
                Err(e) => sink.notes.push(format!("{name} ({}): {imp} skipped: {e}", T::NAME)),
            }
        }
    }
    if env.cpu && a.nnz() > 0 {
        let b = Baselines::new(m, env.threads)?;
        let runs: [(&str, CpuSpmv<T>); 2] =
            [("cpu-sprs", Baselines::spmv_sprs), ("cpu-nalgebra", Baselines::spmv_nalgebra)];
        for (imp, f) in runs {
            seed += 1;
            let xh = random_vector::<T>(m.ncols(), seed);
            let want = reference_product(env, a, &xh)?;
            let mut yh = vec![T::from_f64(f64::NAN); m.nrows()];
            f(&b, &xh, &mut yh);
            let rel = reference::relative_error(&yh, &want);
            let t = cpu::time_wall(env.reps, || f(&b, &xh, &mut yh));
            let mut m = measurement::<T>(name, imp, t, csr_bytes, csr_bytes, env.copy_gbps);
            (m.rel_error, m.correct) = (rel, rel <= tolerance::<T>());
            sink.out.push(m);
        }
    }
    if env.transpose {
        let note = transpose_note(name, T::NAME, &sink.out);
        sink.notes.push(note);
    }
    Ok(sink.out)
}

/// The note of `--transpose` on one matrix and precision: the plan's transpose product
/// against the fastest correct cuSPARSE transpose operation on A and the fastest correct
/// cuSPARSE product on the explicit transpose, each with `t_cusparse / t_auto`.
fn transpose_note(name: &str, scalar: &str, ms: &[Measurement]) -> String {
    let fastest = |f: &dyn Fn(&str) -> bool| {
        ms.iter().filter(|m| m.correct && f(&m.implementation)).min_by(|p, q| p.seconds.total_cmp(&q.seconds))
    };
    let auto = fastest(&|i| i == "spgpu-auto");
    let against = |kind: &str| match (auto, fastest(&|i| i.starts_with("cusparse") && i.contains(kind))) {
        (Some(a), Some(c)) => {
            format!("{} {:.1} us, {:.2}x", c.implementation, c.seconds * 1e6, c.seconds / a.seconds)
        }
        (_, None) => "not measured".to_string(),
        (None, Some(c)) => format!("{} {:.1} us", c.implementation, c.seconds * 1e6),
    };
    let auto = auto.map_or_else(|| "not measured".to_string(), |a| format!("{:.1} us", a.seconds * 1e6));
    format!(
        "{name} ({scalar}): A^T x: spgpu-auto {auto}; against cuSPARSE's transpose operation on A: {}; against \
         cuSPARSE on the explicit transpose: {}",
        against("-transpose"),
        against("-explicit")
    )
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
pub fn run(args: &Options) -> BenchResult<()> {
    if let Some(p) = &args.from_csv {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let mut report = report::from_csv(&text).map_err(|e| format!("{}: {e}", p.display()))?;
        if let Some(mib) = args.l2_mib {
            report.run.l2_bytes = mib << 20;
        } else if report.run.l2_bytes == 0 {
            return Err(format!(
                "{}: no l2_bytes column (a CSV of an older run): pass --l2-mib with the L2 size of the GPU that ran it",
                p.display()
            )
            .into());
        }
        println!(
            "spgpu bench: {} measurements of {} matrices from {}",
            report.measurements.len(),
            report.matrices.len(),
            p.display()
        );
        return emit(&report, args);
    }
    let started = Instant::now();
    let default_folder = std::env::var_os("SPGPU_MATRICES").map(PathBuf::from);
    let inputs = inputs(&args.paths, &args.gens, &args.suites, default_folder)?;
    let ctx = Context::global()?;
    let stream = ctx.stream();
    let l2 = match args.l2_mib {
        Some(mib) => mib << 20,
        None => ctx.info().l2_cache_bytes as u64,
    };
    let mut report = Report {
        run: RunInfo {
            date: utc_now(),
            commit: commit(),
            gpu: ctx.info().name.clone(),
            driver: driver_version(),
            cpu_threads: rayon::current_num_threads(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            l2_bytes: l2,
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
    let kernels = forced_kernels(&args.kernels, ctx.warp_size());
    let names: Vec<String> = kernels.iter().map(ToString::to_string).collect();
    report.notes.push(format!("spgpu's kernels from the {} PTX", ctx.ptx_arch()));
    println!(
        "spgpu bench: {} on {} ({}; {} PTX), L2 {:.1} MiB, copy bandwidth {:.0} GB/s, cuSPARSE {}, {} CPU threads, \
         {} matrices; kernels: auto {}",
        report.run.commit,
        report.run.gpu,
        report.run.driver,
        ctx.ptx_arch(),
        l2 as f64 / f64::from(1u32 << 20),
        report.run.copy_gbps,
        report.run.cusparse,
        report.run.cpu_threads,
        inputs.len(),
        names.join(" ")
    );
    let env = Env {
        ctx,
        cusparse,
        copy_gbps: report.run.copy_gbps,
        reps: args.reps as usize,
        graph_below: args.graph_below,
        cpu: !args.no_cpu,
        threads: rayon::current_num_threads(),
        kernels,
        transpose: args.transpose,
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
        let loading = Instant::now();
        let loaded =
            if precisions == ["f32"] { input.load::<f32>().map(Loaded::F32) } else { input.load().map(Loaded::F64) };
        info.load_seconds = loading.elapsed().as_secs_f64();
        let a = match loaded {
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
        let (rows, cols, nnz, s) = a.stats();
        (info.rows, info.cols, info.nnz) = (rows, cols, nnz);
        (info.mean_row, info.max_row, info.std_row, info.empty_rows) = (s.mean, s.max, s.std_dev, s.empty_rows);
        for &p in precisions {
            let ms = match (&a, p) {
                (Loaded::F64(a), "f64") => bench_matrix::<f64>(&env, &name, a, &mut info, &mut report.notes)?,
                (Loaded::F64(a), _) => {
                    bench_matrix::<f32>(&env, &name, &a.cast::<f32>(), &mut info, &mut report.notes)?
                }
                (Loaded::F32(a), _) => bench_matrix::<f32>(&env, &name, a, &mut info, &mut report.notes)?,
            };
            let refs: Vec<&Measurement> = ms.iter().collect();
            let block = report::matrix_block(&info, p, &refs);
            bar.suspend(|| println!("\n{block}"));
            report.measurements.extend(ms);
        }
        if let Some(peak) = peak_rss() {
            let gib = |b: f64| b / f64::from(1u32 << 30);
            let csr = a.csr_bytes() as f64;
            report.notes.push(format!(
                "{name}: peak host memory so far {:.2} GiB (VmHWM), {:.2}x its host CSR arrays ({:.2} GiB)",
                gib(peak as f64),
                peak as f64 / csr,
                gib(csr)
            ));
        }
        report.matrices.push(info);
        bar.inc(1);
    }
    bar.finish_and_clear();
    drop(env);
    report.run.wall_seconds = started.elapsed().as_secs_f64();
    let loading: f64 = report.matrices.iter().map(|m| m.load_seconds).filter(|s| s.is_finite()).sum();
    println!(
        "\nspgpu bench: {:.1} s in all, of which {loading:.1} s generating and reading matrices on the host",
        report.run.wall_seconds
    );
    emit(&report, args)
}

/// Prints the summary and notes and writes the files the arguments ask for.
///
/// # Errors
///
/// A file that cannot be written, or any result that differs from the CPU reference.
fn emit(report: &Report, args: &Options) -> BenchResult<()> {
    println!("\nSummary: the plan (spgpu auto) against the fastest cuSPARSE variant\n");
    print!("{}", summary::summary(report, false));
    println!("Every implementation: best time in us (fraction of the copy bandwidth); * = CUDA-graph replay\n");
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
            "{}\nEvery implementation: best time in us (fraction of the copy bandwidth); * = CUDA-graph replay\n\n{}",
            summary::summary(report, true),
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
        let got =
            inputs(std::slice::from_ref(&dir), &["gen:lap2d:10".into(), "powerlaw:1000".into()], &[], None).unwrap();
        let names: Vec<String> = got.iter().map(Input::name).collect();
        assert_eq!(names, ["a", "b", "c", "lap2d:10", "powerlaw:1000"]);
        assert_eq!(got[3].source(), "gen:lap2d:10");
        assert_eq!(got[4].source(), "gen:powerlaw:1000");
        // the default folder is used only when nothing is named
        let d = inputs(&[], &[], &[], Some(dir.clone())).unwrap();
        assert_eq!(d.len(), 3);
        let only_gen = inputs(&[], &["lap2d:3".into()], &[], Some(dir.clone())).unwrap();
        assert_eq!(only_gen, vec![Input::Generated("lap2d:3".into())]);
        // a suite alone replaces the default folder; a --gen already in it runs once
        let large =
            inputs(&[], &["gen:lap3d:150".into(), "lap2d:7".into()], &[Suite::Large], Some(dir.clone())).unwrap();
        let names: Vec<String> = large.iter().map(Input::name).collect();
        assert_eq!(names.len(), suite::LARGE.len() + 1);
        assert_eq!(names[..suite::LARGE.len()], suite::LARGE.map(String::from));
        assert_eq!(names.last().map(String::as_str), Some("lap2d:7"));
        // suites combine with paths and with each other
        let both = inputs(std::slice::from_ref(&dir), &[], &[Suite::Large, Suite::Validate], None).unwrap();
        assert_eq!(both.len(), 3 + suite::LARGE.len() + suite::VALIDATE.len());
        assert_eq!(both[3], Input::Generated("lap2d:2000".into()));
        std::fs::remove_dir_all(&dir).ok();
        let missing = inputs(&[], &[], &[], Some(dir.join("nope"))).unwrap_err().to_string();
        assert!(missing.contains("run matrices/fetch"), "{missing}");
        let e = inputs(&[dir.join("nope.mtx")], &[], &[], None).unwrap_err().to_string();
        assert!(e.contains("nope.mtx: no such file or folder"), "{e}");
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
    fn the_transpose_note_compares_the_plan_with_each_kind_of_cusparse() {
        use summary::tests::meas;
        let mut wrong = meas("m", "f64", "cusparse-alg1-transpose", 1.0, 1000);
        wrong.correct = false;
        let ms = [
            meas("m", "f64", "spgpu-auto", 10.0, 1000),
            meas("m", "f64", "cusparse-alg1-transpose", 30.0, 1000),
            meas("m", "f64", "cusparse-alg2-transpose", 25.0, 1000),
            wrong,
            meas("m", "f64", "cusparse-alg1-explicit", 12.0, 1000),
        ];
        let n = transpose_note("m", "f64", &ms);
        assert_eq!(
            n,
            "m (f64): A^T x: spgpu-auto 10.0 us; against cuSPARSE's transpose operation on A: \
             cusparse-alg2-transpose 25.0 us, 2.50x; against cuSPARSE on the explicit transpose: cusparse-alg1-explicit \
             12.0 us, 1.20x"
        );
        let n = transpose_note("m", "f64", &ms[..1]);
        assert!(
            n.ends_with("operation on A: not measured; against cuSPARSE on the explicit transpose: not measured"),
            "{n}"
        );
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
        let args = Options {
            paths: vec![],
            gens: vec!["lap2d:10".into()],
            suites: vec![],
            kernels: vec![],
            l2_mib: None,
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
            transpose: false,
        };
        let e = run(&args).unwrap_err().to_string();
        assert!(e.contains("no CUDA device"), "{e}");
    }
}
