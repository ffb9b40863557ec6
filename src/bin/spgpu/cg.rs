//! `spgpu cg`: solve `A x = b` by conjugate gradient, on the GPU or the CPU.
//!
//! A is a Matrix Market file (symmetric storage is expanded on read) or a generated matrix
//! (`gen:lap2d:500`). Without `--rhs`, `b = A * 1`, so the solution is known and its error
//! is reported too. The summary gives the iterations, why the solve stopped, the true
//! relative residual `||b - A x|| / ||b||` (recomputed from `x`) and which tolerance it
//! met, the times for reading, uploading and solving, and the time per iteration against
//! the bytes-moved floor of an iteration (`docs/cg.md`): the SpMV's bytes by the byte model
//! of `spgpu bench` (`spgpu::bytes::csr_bytes`) plus the vector bytes of the fused CG
//! kernels (`spgpu::solver::cg_vector_bytes`), over the copy bandwidth (`--bandwidth-gbs`,
//! default on the GPU the H200's measured 4280 GB/s; on the CPU the floor is printed only
//! with `--bandwidth-gbs`). A tolerance below what the precision can reach is flagged
//! before the solve.
//!
//! The outputs (`-o`, `--history`) are checked before the matrix is read and written
//! atomically (`crate::files`), whether or not standard output is still open; with `-o -`
//! or `--history -` the report goes to standard error, with `--json` it is one JSON object.
//! Ctrl-C stops the solve at its next checkpoint: the report so far is printed, `-o` and
//! `--history` are written with what there is, marked as not converged, and the status is
//! 130.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use spgpu::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, KernelChoice, SpmvKernel, SpmvPlan};
use spgpu::reorder::{Locality, Ordering};
use spgpu::solver::{
    build_auto, cg_reordered, cg_vector_bytes, cg_with, Amg, AmgParams, Backend, CgError, CgParams, CgReport,
    CgWarning, Checkpoint, Device, FineTransfer, Host, Identity, Jacobi, LinearOperator, PreconditionerKind,
    Renumbered, SetupPlace, Smoother,
};
use spgpu::{reference, CsrMatrix, EllMatrix, Scalar};

use crate::{files, CliResult, UsageError};

mod report;
pub use report::is_stop;
use report::{interrupted, interruptible, json_report, shown, Progress, Say, Watch};

/// The device-to-device copy bandwidth measured on the H200 the crate is measured on, in
/// GB/s (bytes read plus bytes written): the default of `--bandwidth-gbs`.
const H200_COPY_GBS: f64 = 4280.0;

/// The known solution of `--solution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Solution {
    /// Every entry 1.
    Ones,
    /// Seeded uniform entries in [0.5, 1.5).
    Random(u64),
}

fn parse_solution(s: &str) -> Result<Solution, String> {
    match s {
        "ones" => Ok(Solution::Ones),
        "random" => Ok(Solution::Random(1)),
        _ => s
            .strip_prefix("random:")
            .and_then(|seed| seed.parse().ok())
            .map(Solution::Random)
            .ok_or_else(|| format!("expected ones, random or random:SEED, found {s:?}")),
    }
}

impl Solution {
    fn vector<T: Scalar>(self, n: usize) -> Vec<T> {
        use rand::{Rng, SeedableRng};
        match self {
            Solution::Ones => vec![T::ONE; n],
            Solution::Random(seed) => {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                (0..n).map(|_| T::from_f64(rng.random_range(0.5..1.5))).collect()
            }
        }
    }

    fn describe(self) -> String {
        match self {
            Solution::Ones => "x = 1".to_string(),
            Solution::Random(seed) => format!("x = random:{seed}"),
        }
    }
}

/// Arguments of `spgpu cg`.
#[derive(clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    /// The matrix A: a Matrix Market file, `-` for standard input, or a generated matrix
    /// `gen:NAME` (lap2d:N, lap3d:N, stencil27:N, banded:N:H, ...).
    pub matrix: String,
    /// The right-hand side b (Matrix Market array or coordinate vector); default `A * s` for
    /// the known solution `s` of --solution.
    #[arg(long)]
    pub rhs: Option<PathBuf>,
    /// The known solution s when no --rhs is given (b = A * s, and the error against s is
    /// reported): `ones`, or `random[:SEED]` (entries uniform in [0.5, 1.5), seeded; default
    /// seed 1). A random s makes CG iterate on matrices whose rows sum to the same value,
    /// such as shifted graph Laplacians, for which `ones` is solved in one step.
    #[arg(long, default_value = "ones", conflicts_with = "rhs", value_parser = parse_solution)]
    pub solution: Solution,
    /// Initial guess x0 (Matrix Market vector); default zeros.
    #[arg(long)]
    pub x0: Option<PathBuf>,
    /// Relative tolerance: stop when ||b - A x|| <= max(rtol * ||b||, atol).
    #[arg(long, default_value_t = 1e-8, allow_hyphen_values = true)]
    pub rtol: f64,
    /// Absolute tolerance on ||b - A x||.
    #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
    pub atol: f64,
    /// Most iterations (default 10 * rows, at least 100).
    #[arg(long, value_parser = crate::whole::<usize>)]
    pub max_iter: Option<usize>,
    /// Preconditioner: none, jacobi, amg (smoothed-aggregation algebraic multigrid, one
    /// V-cycle per iteration) or auto (AMG, Jacobi or none, chosen from the matrix; the
    /// choice and its reason are printed).
    #[arg(long, default_value = "none", value_parser = ["none", "jacobi", "amg", "auto"])]
    pub precond: String,
    /// Locality ordering: none (the matrix's own numbering), rcm (reverse Cuthill-McKee:
    /// meshes, banded systems), graph (hubs first, then their communities: skewed graphs)
    /// or auto (kept when the gathers of x already share cache sectors; else a probe of a
    /// few iterations decides whether an ordering repays its cost). The system is solved
    /// renumbered; x is reported and written in the matrix's numbering.
    #[arg(long, default_value = "none", value_parser = ["none", "auto", "rcm", "graph"])]
    pub reorder: String,
    /// AMG near-nullspace vectors: a dense Matrix Market array, n x k (n the rows of A).
    /// Default: the constant vector; on `gen:elast:N`, its six rigid-body modes.
    #[arg(long)]
    pub near_nullspace: Option<PathBuf>,
    /// AMG unknowns per node (default 1; 3 on `gen:elast:N`).
    #[arg(long, value_parser = crate::at_least_one::<usize>)]
    pub block_size: Option<usize>,
    /// AMG smoother: chebyshev[:DEGREE] (default degree 2) or l1-jacobi[:SWEEPS].
    #[arg(long, default_value = "chebyshev:2", value_parser = parse_smoother)]
    pub smoother: Smoother,
    /// AMG strength threshold theta of level 0.
    #[arg(long, default_value_t = 0.0)]
    pub theta: f64,
    /// AMG strength threshold of the coarse levels (level 1 and below).
    #[arg(long, default_value_t = spgpu::solver::COARSE_THETA)]
    pub coarse_theta: f64,
    /// AMG: how the cycle applies level 0's prolongator and restriction: implicit (from the
    /// tentative prolongator, not stored; with the Chebyshev smoother), implicit-all-levels
    /// (so on every level: less memory, a longer cycle) or stored.
    #[arg(long, default_value = "implicit", value_parser = ["implicit", "implicit-all-levels", "stored"])]
    pub fine_transfer: String,
    /// AMG: stop coarsening at this many rows.
    #[arg(long, default_value_t = 500, value_parser = crate::whole::<usize>)]
    pub max_coarse: usize,
    /// Where the AMG setup runs: auto (on the GPU when solving there), host or device.
    #[arg(long, default_value = "auto", value_parser = ["auto", "host", "device"])]
    pub amg_setup: String,
    /// Device storage: auto (the SpMV plan's kernel and storage: ELL, SELL-C-sigma or CSR),
    /// csr (the plan, kept on CSR storage: the balanced kernel where the plan would store
    /// ELL or SELL) or ell (a DeviceEll).
    #[arg(long, default_value = "auto", value_parser = ["auto", "csr", "ell"])]
    pub format: String,
    /// Element type: f64 or f32.
    #[arg(long, default_value = "f64", value_parser = ["f64", "f32"])]
    pub precision: String,
    /// Where to solve: auto (the GPU, or the CPU with a notice when there is none), gpu or cpu.
    #[arg(long, default_value = "auto", value_parser = ["auto", "gpu", "cpu"])]
    pub device: String,
    /// Write the solution x to this Matrix Market file (`-`: standard output).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Write the residual norm of every iteration to this CSV file (`-`: standard output).
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Print the report as one JSON object on standard output (`docs/cli.md`).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub gpu: crate::GpuArg,
    /// Refuse a matrix that is not symmetric (default: warn and solve anyway).
    #[arg(long)]
    pub check_symmetric: bool,
    /// Iterations between two checks of the residual on the host.
    #[arg(long, default_value_t = 16, value_parser = crate::at_least_one::<u64>)]
    pub check_interval: u64,
    /// Launch every kernel from the host instead of replaying batches of iterations as CUDA
    /// graphs (for comparison; the iterates are the same).
    #[arg(long)]
    pub no_graphs: bool,
    /// Solve with the leading N x N block of A only (the anchors' CG case is
    /// `gen:lap2d:2000 --leading 250000`).
    #[arg(long, value_parser = crate::whole::<usize>)]
    pub leading: Option<usize>,
    /// The copy bandwidth, in GB/s, that the bytes-moved floor of an iteration is divided
    /// by (default on the GPU: 4280, measured on the H200; on the CPU no floor is printed
    /// without it).
    #[arg(long, allow_hyphen_values = true)]
    pub bandwidth_gbs: Option<f64>,
}

fn parse_smoother(s: &str) -> Result<Smoother, String> {
    let (name, count) = s.split_once(':').map_or((s, None), |(n, c)| (n, Some(c)));
    let count = match count {
        None => None,
        Some(c) => Some(
            c.parse::<usize>()
                .ok()
                .filter(|&c| c >= 1)
                .ok_or_else(|| format!("the smoother's degree or sweeps must be a whole number >= 1, found {c:?}"))?,
        ),
    };
    match name {
        "chebyshev" => Ok(Smoother::Chebyshev { degree: count.unwrap_or(2) }),
        "l1-jacobi" | "l1jacobi" => Ok(Smoother::L1Jacobi { sweeps: count.unwrap_or(1) }),
        _ => Err(format!("expected chebyshev[:DEGREE] or l1-jacobi[:SWEEPS], found {s:?}")),
    }
}

/// Reads near-nullspace vectors: a Matrix Market array (or coordinate) matrix of `n` rows,
/// returned column-major.
fn read_near_nullspace(path: &Path, n: usize) -> Result<Vec<f64>, String> {
    let m = spgpu::io::read_coo::<f64>(path).map_err(|e| format!("--near-nullspace {}: {e}", path.display()))?;
    if m.nrows() != n {
        return Err(format!(
            "--near-nullspace {}: it has {} rows, but A has {n} rows (one row per unknown expected)",
            path.display(),
            m.nrows()
        ));
    }
    let k = m.ncols();
    if k == 0 {
        return Err(format!("--near-nullspace {}: it has no columns", path.display()));
    }
    let mut b = vec![0.0; n * k];
    for ((&r, &c), &v) in m.row_indices().iter().zip(m.col_indices()).zip(m.values()) {
        b[c as usize * n + r as usize] += v;
    }
    if let Some(i) = b.iter().position(|v| !v.is_finite()) {
        return Err(format!(
            "--near-nullspace {}: non-finite value at row {}, column {}",
            path.display(),
            i % n + 1,
            i / n + 1
        ));
    }
    Ok(b)
}

/// The AMG parameters from the command line; on `gen:elast:N` (or `gen:permute:elast:N`)
/// without `--near-nullspace`, its rigid-body modes (in the permuted numbering) with block
/// size 3.
fn amg_params(args: &Args, n: usize) -> Result<AmgParams, Box<dyn std::error::Error>> {
    let mut p = AmgParams {
        theta: args.theta,
        coarse_theta: args.coarse_theta,
        fine_transfer: match args.fine_transfer.as_str() {
            "stored" => FineTransfer::Stored,
            "implicit-all-levels" => FineTransfer::ImplicitAllLevels,
            _ => FineTransfer::Implicit,
        },
        max_coarse: args.max_coarse,
        smoother: args.smoother,
        block_size: args.block_size.unwrap_or(1),
        setup: match args.amg_setup.as_str() {
            "host" => SetupPlace::Host,
            "device" => SetupPlace::Device,
            _ => SetupPlace::Auto,
        },
        ..AmgParams::default()
    };
    let spec = args.matrix.strip_prefix("gen:");
    let permuted = spec.and_then(|s| s.strip_prefix("permute:")).map(|s| s.strip_prefix("gen:").unwrap_or(s));
    let elast = permuted
        .or(spec)
        .and_then(|s| s.strip_prefix("elast:"))
        .and_then(|s| s.replace('_', "").parse::<usize>().ok())
        .filter(|_| args.leading.is_none());
    match (&args.near_nullspace, elast) {
        (Some(path), _) => p.near_nullspace = Some(read_near_nullspace(path, n)?),
        (None, Some(grid)) => {
            let mut modes = spgpu::gen::rigid_body_modes(grid);
            if let Some(perm) = spgpu::gen::numbering(&args.matrix)? {
                modes = modes
                    .chunks(perm.len())
                    .map(|mode| perm.permute_vector(mode))
                    .collect::<Result<Vec<_>, _>>()?
                    .concat();
            }
            p.near_nullspace = Some(modes);
            p.block_size = args.block_size.unwrap_or(3);
        }
        (None, None) => {}
    }
    Ok(p)
}

/// Runs `spgpu cg`.
pub fn run(args: Args) -> CliResult {
    args.gpu.apply()?;
    for (name, v) in
        [("--rtol", args.rtol), ("--atol", args.atol), ("--theta", args.theta), ("--coarse-theta", args.coarse_theta)]
    {
        if !(v.is_finite() && v >= 0.0) {
            return Err(UsageError(format!("{name} must be a finite number >= 0, got {v}")).into());
        }
    }
    if let Some(bw) = args.bandwidth_gbs.filter(|bw| !(bw.is_finite() && *bw > 0.0)) {
        return Err(UsageError(format!("--bandwidth-gbs must be a finite number > 0, got {bw}")).into());
    }
    if args.leading == Some(0) {
        return Err(UsageError("--leading must be at least 1".into()).into());
    }
    // Every output checked before anything is read; none may be an input.
    let inputs: Vec<&Path> = [Some(Path::new(&args.matrix)), args.rhs.as_deref(), args.x0.as_deref()]
        .into_iter()
        .chain([args.near_nullspace.as_deref()])
        .flatten()
        .collect();
    let outputs: Vec<(&str, &Path)> = [("-o", args.output.as_deref()), ("--history", args.history.as_deref())]
        .into_iter()
        .filter_map(|(o, p)| p.map(|p| (o, p)))
        .collect();
    if args.json {
        if let Some((option, path)) = outputs.iter().find(|(_, p)| files::is_stdout(p)) {
            return Err(
                UsageError(format!("--json and {option} {} both write to standard output", path.display())).into()
            );
        }
    }
    files::check_outputs(&inputs, &outputs)?;
    let stdins = inputs.iter().filter(|p| files::is_stdio(p)).count();
    if stdins > 1 {
        return Err(UsageError(format!("{stdins} inputs read standard input (-); at most one can")).into());
    }
    match args.precision.as_str() {
        "f32" => run_typed::<f32>(&args),
        _ => run_typed::<f64>(&args),
    }
}

/// The leading `n x n` block of `a`.
fn leading_block<T: Scalar>(a: &CsrMatrix<T>, n: usize) -> Result<CsrMatrix<T>, String> {
    if n > a.nrows() || n > a.ncols() {
        return Err(format!(
            "--leading {n}: the matrix is only {} x {}; N must be at most its rows and columns",
            a.nrows(),
            a.ncols()
        ));
    }
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
    CsrMatrix::try_from_parts(n, n, offsets, cols, vals).map_err(|e| e.to_string())
}

/// The first stored entry (in row order) whose mirror differs beyond rounding, as
/// `(row, col, a_ij, a_ji)` (`a_ji` is 0 when the mirror is not stored; a mirror stored
/// without its entry is found from its own row). Rows are checked in parallel with a binary
/// search for each mirror: no transpose is made, so a matrix of billions of entries costs no
/// second copy.
fn asymmetry<T: Scalar>(a: &CsrMatrix<T>) -> Option<(usize, usize, f64, f64)> {
    use rayon::prelude::*;
    let tol = if T::BYTES == 4 { 1e-5 } else { 1e-10 };
    (0..a.nrows()).into_par_iter().find_map_first(|i| {
        let (cols, vals) = a.row(i);
        cols.iter().zip(vals).find_map(|(&c, &v)| {
            let (x, y) = (v.to_f64(), a.get(c as usize, i).map_or(0.0, |w| w.to_f64()));
            ((x - y).abs() > tol * x.abs().max(y.abs())).then_some((i, c as usize, x, y))
        })
    })
}

/// Checks that a vector has `n` finite entries.
fn check_vector<T: Scalar>(what: &str, v: &[T], n: usize) -> Result<(), String> {
    if v.len() != n {
        return Err(format!("{what} has {} entries, but A has {n} rows", v.len()));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite_value()) {
        return Err(format!("{what} has a non-finite value ({}) at entry {}", v[i], i + 1));
    }
    Ok(())
}

/// Where and how the system is solved.
enum Target {
    Cpu,
    Gpu(&'static Context),
}

/// Reads a vector option's file (`-`: standard input).
fn read_vector_arg<T: Scalar>(path: &Path) -> Result<Vec<T>, spgpu::Error> {
    if files::is_stdio(path) {
        spgpu::io::read_vector_from_reader::<T>(std::io::stdin())
            .map_err(|e| files::named(e, Path::new(files::STDIN_NAME)))
    } else {
        spgpu::io::read_vector::<T>(path)
    }
}

/// Host vectors of `n` entries that a solve holds at its peak: the known solution, b, x0
/// (the iterate on the CPU), the CPU backend's r, p, q and z, the downloaded or checked
/// solution and the residual of the final check.
const HOST_VECTORS: u64 = 9;

fn run_typed<T: Scalar>(args: &Args) -> CliResult {
    let t_read = Instant::now();
    let mut a = crate::load_matrix::<T>(&args.matrix)?;
    if let Some(n) = args.leading {
        a = leading_block(&a, n).map_err(UsageError)?;
    }
    let (n, nnz) = (a.nrows(), a.nnz());
    // The vectors are sized by the rows alone (a file can announce 300 million rows and no
    // entries): checked before any is allocated.
    spgpu::io::check_memory(
        &format!("the vectors of CG on {n} rows ({HOST_VECTORS} x {n} {})", T::NAME),
        HOST_VECTORS.saturating_mul(n as u64).saturating_mul(T::BYTES as u64),
    )?;
    if a.nrows() != a.ncols() {
        return Err(format!("CG needs a square matrix; {} is {} x {}", args.matrix, a.nrows(), a.ncols()).into());
    }
    if let Some(bs) = args.block_size.filter(|&bs| n % bs != 0) {
        return Err(UsageError(format!(
            "--block-size {bs} does not divide the {n} rows of {} into nodes of {bs} unknowns",
            args.matrix
        ))
        .into());
    }
    if let Some(k) = a.values().iter().position(|v| !v.is_finite_value()) {
        let row = a.row_offsets().partition_point(|&o| o as usize <= k) - 1;
        let col = a.col_indices()[k] as usize;
        return Err(
            format!("A has a non-finite value ({}) at row {}, column {}", a.values()[k], row + 1, col + 1).into()
        );
    }
    if let Some((i, j, x, y)) = asymmetry(&a) {
        let msg = format!(
            "A is not symmetric: A({}, {}) = {x:e} but A({}, {}) = {y:e}; CG needs a symmetric positive definite \
             matrix",
            i + 1,
            j + 1,
            j + 1,
            i + 1
        );
        if args.check_symmetric {
            return Err(msg.into());
        }
        eprintln!("spgpu cg: warning: {msg}; solving anyway");
    }
    let (b, known_solution) = match &args.rhs {
        Some(path) => (read_vector_arg::<T>(path)?, None),
        None => {
            let s = args.solution.vector::<T>(n);
            let mut b = vec![T::ZERO; n];
            reference::spmv_csr(T::ONE, &a, &s, T::ZERO, &mut b)?;
            (b, Some(s))
        }
    };
    check_vector("b", &b, n)?;
    let x0 = match &args.x0 {
        Some(path) => {
            let x0 = read_vector_arg::<T>(path)?;
            check_vector("x0", &x0, n)?;
            x0
        }
        None => vec![T::ZERO; n],
    };
    let read_time = t_read.elapsed();

    let target = match args.device.as_str() {
        "cpu" => Target::Cpu,
        "gpu" => Target::Gpu(Context::global()?),
        _ => match Context::global() {
            Ok(ctx) => Target::Gpu(ctx),
            Err(e) if e.is_no_device() => {
                eprintln!("spgpu cg: no GPU ({e}); solving on the CPU");
                Target::Cpu
            }
            Err(e) => return Err(e.into()),
        },
    };
    let precond: PreconditionerKind = args.precond.parse()?;
    // Jacobi and AMG need a positive diagonal: the first entry that is not, named in the
    // matrix's own 1-based numbering (the solver's error counts from 0, and after --reorder
    // in the renumbered system)
    if matches!(precond, PreconditionerKind::Jacobi | PreconditionerKind::Amg) {
        if let Some((i, d)) = a.diagonal().iter().enumerate().find(|(_, d)| d.to_f64().is_nan() || d.to_f64() <= 0.0) {
            return Err(format!(
                "--precond {}: A's diagonal entry at row {} is {d}; Jacobi and AMG need a positive diagonal (a \
                 symmetric positive definite matrix has one); use --precond none or check the matrix",
                args.precond,
                i + 1
            )
            .into());
        }
    }
    let amg = if matches!(precond, PreconditionerKind::Amg | PreconditionerKind::Auto) {
        amg_params(args, n)?
    } else {
        AmgParams::default()
    };
    let params = CgParams {
        amg,
        rtol: args.rtol,
        atol: args.atol,
        max_iter: args.max_iter,
        preconditioner: precond,
        check_interval: usize::try_from(args.check_interval).unwrap_or(usize::MAX),
        history: args.history.is_some(),
        use_graphs: !args.no_graphs,
        reorder: args.reorder.parse()?,
        ..CgParams::default()
    };
    // From here the first Ctrl-C stops the solve at its next checkpoint (Watch).
    crate::signal::defer(true);
    let say = Say::for_args(args);
    say.line(&format!("matrix: {}: {n} x {n}, {nnz} entries, {}", args.matrix, T::NAME))?;
    let b_norm = Backend::<T>::norm(&Host, &b)?.value();
    if let Some(w) = params.precision_warning::<T>(n, b_norm) {
        eprintln!("spgpu cg: warning: {w}");
    }
    let watch = Watch { quiet: args.json, ..Watch::default() };

    let solved = if params.reorder == Ordering::None {
        solve_on(&target, &a, &b, x0, &params, b_norm, &watch, args)?
    } else {
        reordered(&target, &a, &b, x0, &params, b_norm, &watch, args)?
    };
    let Solved { result, x, upload_time, where_ } = solved;
    crate::signal::defer(false);
    let Some(result) = result else {
        return interrupted(args, &say, &a, &b, &x, &watch, known_solution.as_deref(), &where_);
    };

    let report = match &result {
        Ok(r) => Some(r),
        Err(e) => e.report(),
    };
    let floor = match (args.bandwidth_gbs, &target) {
        (Some(bw), _) => Some((bw, "from --bandwidth-gbs")),
        (None, Target::Gpu(_)) => Some((
            H200_COPY_GBS,
            "the H200's measured copy bandwidth, the default; set --bandwidth-gbs for another device",
        )),
        (None, Target::Cpu) => None,
    };
    if let Some(r) = report {
        let text = summary(args, r, &a, &x, known_solution.as_deref(), read_time, upload_time, &where_, floor);
        say.line(text.trim_end())?;
    }
    if let Some(path) = &args.output {
        files::write(path, |w| spgpu::io::write_vector_to_writer(w, &x))?;
        eprintln!("solution written to {}", shown(path));
    }
    if let Some(r) = report {
        if let (Some(path), Some(h)) = (&args.history, &r.history) {
            let rows: Vec<(usize, f64)> = h.iter().copied().enumerate().collect();
            write_history(path, &rows, r.b_norm)?;
        }
        if args.json {
            let json =
                json_report::<T>(args, r, &a, &x, known_solution.as_deref(), read_time, upload_time, &where_, floor);
            outln!("{json}")?;
        }
    }
    result.map(|_| ()).map_err(|e| e.into())
}

/// What [`solve_on`] did: the solve (`None` after Ctrl-C), the solution in the numbering of
/// the matrix it was given, the upload time, and where it ran.
struct Solved<T> {
    result: Option<Result<CgReport, CgError>>,
    x: Vec<T>,
    upload_time: Duration,
    where_: String,
}

/// Solves `a x = b` from `x0` on `target`, with the storage `args` names.
#[allow(clippy::too_many_arguments)]
fn solve_on<T: Scalar>(
    target: &Target,
    a: &CsrMatrix<T>,
    b: &[T],
    x0: Vec<T>,
    params: &CgParams,
    b_norm: f64,
    watch: &Watch,
    args: &Args,
) -> Result<Solved<T>, Box<dyn std::error::Error>> {
    let (result, x, upload_time, where_) = match target {
        Target::Cpu => {
            let mut x = x0;
            // AMG: CG multiplies by the hierarchy's level 0, not by a second copy of A
            let op = (params.preconditioner != PreconditionerKind::Amg).then_some(a);
            let res = interruptible(|| solve(&Host, op, b, &mut x, params, a, b_norm, watch))?;
            (res, x, Duration::ZERO, "CPU".to_string())
        }
        Target::Gpu(ctx) => {
            let use_ell = args.format == "ell";
            let t_up = Instant::now();
            let device = Device::new(ctx)?;
            let mut d_x = DeviceVector::from_slice(ctx, &x0)?;
            let (res, format) = if use_ell {
                let ell = EllMatrix::try_from_csr(a)?;
                let width = ell.width();
                let d_a = DeviceEll::upload(ctx, &ell)?;
                ctx.synchronize()?;
                let up = t_up.elapsed();
                (
                    interruptible(|| solve(&device, Some(&d_a), b, &mut d_x, params, a, b_norm, watch))
                        .map(|r| (r, up)),
                    format!("ELL (width {width})"),
                )
            } else if args.format == "auto" && params.preconditioner == PreconditionerKind::Amg {
                // AMG's setup uploads A once, and its finest level is the matrix CG multiplies
                // by: no second copy (the upload is timed in the setup)
                let none: Option<&DeviceCsr<T>> = None;
                let res = interruptible(|| solve(&device, none, b, &mut d_x, params, a, b_norm, watch));
                (res.map(|r| (r, Duration::ZERO)), "AMG level 0 from the setup's upload".to_string())
            } else {
                // auto: the plan's kernel and storage; csr: the plan, kept on CSR storage
                let mut choice = KernelChoice::Auto;
                if args.format == "csr" {
                    let stats = a.row_stats();
                    let columns =
                        SpmvPlan::column_layout(a, &stats, KernelChoice::Auto, &spgpu::gpu::Tuning::from_env());
                    let plan = SpmvPlan::with_columns::<T>(&stats, ctx.warp_size(), KernelChoice::Auto, columns)?;
                    if matches!(plan.kernel(), SpmvKernel::Ell | SpmvKernel::Sell) {
                        choice = KernelChoice::Balanced;
                    }
                }
                let d_a = DeviceCsr::upload_with(ctx, a, choice)?;
                ctx.synchronize()?;
                let up = t_up.elapsed();
                let what = format!("{}, {}", d_a.storage_name(), d_a.plan().kernel());
                let res = interruptible(|| solve(&device, Some(&d_a), b, &mut d_x, params, a, b_norm, watch));
                (res.map(|r| (r, up)), what)
            };
            let (res, up) = res?;
            (res, d_x.to_vec()?, up, format!("{} ({format})", ctx.info().name))
        }
    };
    Ok(Solved { result, x, upload_time, where_ })
}

/// [`solve_on`] in the locality ordering `params.reorder` ([`cg_reordered`]): the system
/// renumbered on the host before it is uploaded, the solution brought back to `a`'s
/// numbering (after Ctrl-C too).
#[allow(clippy::too_many_arguments)]
fn reordered<T: Scalar>(
    target: &Target,
    a: &CsrMatrix<T>,
    b: &[T],
    x0: Vec<T>,
    params: &CgParams,
    b_norm: f64,
    watch: &Watch,
    args: &Args,
) -> Result<Solved<T>, Box<dyn std::error::Error>> {
    // the renumbered copy of A lives beside A
    let bytes = a.nnz() as u64 * (4 + T::BYTES as u64) + (a.nrows() as u64 + 1) * 8 + 3 * a.nrows() as u64 * 8;
    spgpu::io::check_memory(&format!("the renumbered copy of {} ({} entries)", args.matrix, a.nnz()), bytes)?;
    let mut x = x0;
    let (mut upload_time, mut where_, mut stopped) = (Duration::ZERO, String::new(), false);
    let mut failure: Option<Box<dyn std::error::Error>> = None;
    let on_device = matches!(target, Target::Gpu(_));
    let result = cg_reordered(a, params, on_device, &mut |p, params| {
        let started = Instant::now();
        let renumbered = match p {
            None => None,
            Some(p) => Some((p.permute_matrix(a)?, p.permute_vector(b)?, p.permute_vector(&x)?)),
        };
        let after = renumbered.as_ref().map(|(pa, _, _)| Locality::sampled(pa));
        let prepared = started.elapsed();
        let solved = match &renumbered {
            None => solve_on(target, a, b, std::mem::take(&mut x), params, b_norm, watch, args),
            Some((pa, pb, px)) => solve_on(target, pa, pb, px.clone(), params, b_norm, watch, args),
        };
        drop(renumbered);
        let back = Instant::now();
        let solved = match solved {
            Ok(solved) => solved,
            Err(e) => {
                failure = Some(e);
                return Err(CgError::InvalidParams("the solve failed".into()));
            }
        };
        x = match p {
            None => solved.x,
            Some(p) => p.unpermute_vector(&solved.x)?,
        };
        upload_time += solved.upload_time;
        where_ = solved.where_;
        let time = prepared + back.elapsed();
        match solved.result {
            Some(result) => Ok(Renumbered { result, after, time }),
            None => {
                stopped = true;
                Err(CgError::InvalidParams("interrupted".into()))
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let result = (!stopped).then_some(result);
    Ok(Solved { result, x, upload_time, where_ })
}

/// Solves with the preconditioner `params` names, with a progress bar on a terminal; the
/// monitor records each checkpoint in `watch` and, after Ctrl-C, unwinds with [`Stop`].
/// Without `op` (AMG only) CG multiplies by the AMG's finest level ([`Amg::operator`]).
#[allow(clippy::too_many_arguments)]
fn solve<T, B, A>(
    backend: &B,
    op: Option<&A>,
    b: &[T],
    x: &mut B::Vector,
    params: &CgParams,
    host: &CsrMatrix<T>,
    b_norm: f64,
    watch: &Watch,
) -> Result<Result<CgReport, CgError>, Box<dyn std::error::Error>>
where
    T: Scalar,
    B: Backend<T>,
    A: LinearOperator<T, Vector = B::Vector>,
{
    let d_b = backend.upload(b)?;
    let Some(op) = op else {
        // CG on the AMG's own level 0
        let mut progress =
            Progress::new(params, b_norm.max(f64::MIN_POSITIVE), max_iterations(params, host), watch.quiet);
        let result = match Amg::build(backend, host, &params.amg) {
            Ok(amg) => {
                let mut monitor = |ck: &Checkpoint| watch.checkpoint(ck, &mut progress);
                let result = cg_with(backend, amg.operator(), &amg, &d_b, x, params, &mut monitor);
                with_setup(result, &amg)
            }
            Err(e) => Err(e),
        };
        progress.bar.finish_and_clear();
        return Ok(result);
    };
    let b_norm = b_norm.max(f64::MIN_POSITIVE);
    let mut progress = Progress::new(params, b_norm, max_iterations(params, host), watch.quiet);
    let mut monitor = |ck: &Checkpoint| watch.checkpoint(ck, &mut progress);
    // The host diagonal, read once: Jacobi is built from it, and Auto on the device decides from it.
    let diagonal = if matches!(params.preconditioner, PreconditionerKind::Jacobi | PreconditionerKind::Auto) {
        host.diagonal()
    } else {
        Vec::new()
    };
    let jacobi =
        |monitor: &mut dyn FnMut(&Checkpoint), x: &mut B::Vector| match Jacobi::from_diagonal(backend, &diagonal) {
            Ok(j) => cg_with(backend, op, &j, &d_b, x, params, monitor),
            Err(e) => Err(e),
        };
    let with_amg = |amg: &Amg<T, B>, monitor: &mut dyn FnMut(&Checkpoint), x: &mut B::Vector| {
        with_setup(cg_with(backend, op, amg, &d_b, x, params, monitor), amg)
    };
    let result = match params.preconditioner {
        PreconditionerKind::Jacobi => jacobi(&mut monitor, x),
        PreconditionerKind::Amg => match Amg::build(backend, host, &params.amg) {
            Ok(amg) => with_amg(&amg, &mut monitor, x),
            Err(e) => Err(e),
        },
        PreconditionerKind::Auto => {
            let started = Instant::now();
            // On the device, Auto reads the diagonal alone (spgpu::solver::auto_for_device).
            let auto = if op.device_matrix().is_some() {
                // Jacobi checks the diagonal as it is built; a bad one is decided below.
                Ok((None, spgpu::solver::auto_for_device(&diagonal[..0])))
            } else {
                build_auto(backend, host, &params.amg)
            };
            match auto {
                Ok((amg, mut choice)) => {
                    let decided = started.elapsed();
                    let mut result = match (&amg, choice.chosen) {
                        (Some(amg), _) => with_amg(amg, &mut monitor, x),
                        (None, PreconditionerKind::Jacobi) => match jacobi(&mut monitor, x) {
                            // a diagonal entry that is not positive: neither Jacobi nor AMG applies
                            Err(CgError::InvalidDiagonal { .. }) if op.device_matrix().is_some() => {
                                choice = spgpu::solver::auto_for_device(&diagonal);
                                cg_with(backend, op, &Identity, &d_b, x, params, &mut monitor)
                            }
                            other => other,
                        },
                        (None, _) => cg_with(backend, op, &Identity, &d_b, x, params, &mut monitor),
                    };
                    let report = match &mut result {
                        Ok(r) => Some(r),
                        Err(e) => e.report_mut(),
                    };
                    if let Some(r) = report {
                        if amg.is_none() {
                            r.setup_time += decided;
                        }
                        r.auto = Some(choice);
                    }
                    result
                }
                Err(e) => Err(e),
            }
        }
        _ => cg_with(backend, op, &Identity, &d_b, x, params, &mut monitor),
    };
    progress.bar.finish_and_clear();
    Ok(result)
}

/// The iteration limit of a solve of `host` (for the progress bar).
fn max_iterations<T: Scalar>(params: &CgParams, host: &CsrMatrix<T>) -> usize {
    params.max_iter.unwrap_or_else(|| host.nrows().saturating_mul(10).max(100))
}

/// A solve's result with the AMG setup's time and hierarchy in its report.
fn with_setup<T: Scalar, B: Backend<T>>(
    mut result: Result<CgReport, CgError>,
    amg: &Amg<T, B>,
) -> Result<CgReport, CgError> {
    let report = match &mut result {
        Ok(r) => Some(r),
        Err(e) => e.report_mut(),
    };
    if let Some(r) = report {
        r.setup_time += amg.info().setup_time;
        r.amg = Some(amg.info().clone());
    }
    result
}

/// The text report of a solve (the warnings go to standard error).
#[allow(clippy::too_many_arguments)]
fn summary<T: Scalar>(
    args: &Args,
    r: &CgReport,
    a: &CsrMatrix<T>,
    x: &[T],
    known_solution: Option<&[T]>,
    read_time: Duration,
    upload_time: Duration,
    where_: &str,
    floor: Option<(f64, &str)>,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    // Writing to a String cannot fail.
    macro_rules! println {
        ($($arg:tt)*) => {
            let _ = writeln!(out, $($arg)*);
        };
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("device: {where_}; preconditioner: {}", r.preconditioner);
    println!("stop: {} after {} iterations ({} restarts)", r.stop_reason, r.iterations, r.restarts);
    println!(
        "true relative residual ||b - A x|| / ||b|| = {:.3e} (rtol {:e}, atol {}; met: {}; recurrence {:.3e})",
        r.relative_residual,
        args.rtol,
        if args.atol == 0.0 { "0".to_string() } else { format!("{:e}", args.atol) },
        r.tolerance_met(),
        r.residual_norm / r.b_norm.max(f64::MIN_POSITIVE)
    );
    // The tolerance warning was printed before the solve.
    for w in r.warnings.iter().filter(|w| !matches!(w, CgWarning::ToleranceBelowPrecision { .. })) {
        eprintln!("spgpu cg: warning: {w}");
    }
    if let Some(s) = known_solution {
        println!(
            "error against the known solution {}: ||x - s|| / ||s|| = {:.3e}",
            args.solution.describe(),
            reference::relative_error(x, s)
        );
    }
    println!(
        "times: read {:.1} ms, upload {:.1} ms, setup {:.2} ms, solve {:.2} ms, check {:.2} ms",
        ms(read_time),
        ms(upload_time),
        ms(r.setup_time),
        ms(r.solve_time),
        ms(r.check_time)
    );
    if let Some(choice) = &r.auto {
        println!("auto: {} ({})", choice.chosen.name(), choice.reason);
    }
    if let Some(o) = &r.reorder {
        let after = o.after.map_or(String::new(), |l| {
            format!(
                "; bandwidth {} -> {}, {:.2} -> {:.2} sectors of x per entry",
                o.before.bandwidth, l.bandwidth, o.before.sectors_per_entry, l.sectors_per_entry
            )
        });
        let probe = if o.probe_iterations > 0 {
            format!(", after a probe of {} iterations", o.probe_iterations)
        } else {
            String::new()
        };
        println!("reorder {}: {} in {:.2} ms{probe} ({}){after}", o.requested, o.ordering, ms(o.time), o.reason);
    }
    if let Some(amg) = &r.amg {
        let phases: Vec<String> = amg.setup_phases.iter().map(|(what, t)| format!("{what} {:.2} ms", ms(*t))).collect();
        println!(
            "AMG hierarchy (setup {:.2} ms on the {}: {}):\n{}",
            ms(amg.setup_time),
            amg.setup_place,
            phases.join(", "),
            amg.table()
        );
    }
    println!("time to solution (setup + solve): {:.2} ms", ms(r.setup_time + r.solve_time));
    if r.iterations > 0 && r.amg.is_none() {
        println!("{}", per_iteration_line::<T>(a, r, floor));
    } else if r.iterations > 0 {
        println!("per iteration (one V-cycle each): {:.2} us", r.time_per_iteration().as_secs_f64() * 1e6);
    }
    out
}

/// The time per iteration against the bytes-moved floor of an iteration: the SpMV's bytes
/// by the byte model of `spgpu bench` plus the vector bytes of the fused CG kernels, over
/// the bandwidth `floor` gives in GB/s (and where it comes from); the time alone without it.
fn per_iteration_line<T: Scalar>(a: &CsrMatrix<T>, r: &CgReport, floor: Option<(f64, &str)>) -> String {
    let secs = r.time_per_iteration().as_secs_f64();
    let Some((bandwidth_gbs, source)) = floor else {
        return format!(
            "per iteration: {:.2} us (no bytes-moved floor on the CPU: --bandwidth-gbs gives the host's bandwidth)",
            secs * 1e6
        );
    };
    let (spmv, vectors, bytes) = floor_bytes(a, r);
    let floor = bytes as f64 / (bandwidth_gbs * 1e9);
    format!(
        "per iteration: {:.2} us; bytes-moved floor {:.2} us = {:.1} MB (SpMV {:.1} MB by the bench byte model + \
         CG vectors {:.1} MB) / {bandwidth_gbs} GB/s ({source}); {:.2}x the floor, {:.1} GB/s effective",
        secs * 1e6,
        floor * 1e6,
        bytes as f64 / 1e6,
        spmv as f64 / 1e6,
        vectors as f64 / 1e6,
        secs / floor,
        spgpu::bytes::gbps(bytes, secs)
    )
}

/// The bytes an iteration moves at least: the SpMV's, the CG vectors', and their sum.
fn floor_bytes<T: Scalar>(a: &CsrMatrix<T>, r: &CgReport) -> (u64, u64, u64) {
    let n = a.nrows();
    let spmv = spgpu::bytes::csr_bytes(n, n, a.nnz(), T::BYTES, false);
    let vectors = cg_vector_bytes(n, T::BYTES, r.preconditioner == "jacobi") as u64;
    (spmv, vectors, spmv + vectors)
}

/// Writes `iteration,residual_norm,relative_residual` lines, one per `(iteration, norm)`.
fn write_history(path: &Path, history: &[(usize, f64)], b_norm: f64) -> CliResult {
    files::write(path, |w| {
        writeln!(w, "iteration,residual_norm,relative_residual")?;
        for &(k, h) in history {
            writeln!(w, "{k},{h:e},{:e}", h / b_norm.max(f64::MIN_POSITIVE))?;
        }
        Ok(())
    })?;
    eprintln!("residual history written to {}", shown(path));
    Ok(())
}
