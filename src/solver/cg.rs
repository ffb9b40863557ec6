//! Conjugate gradient, generic over the operator and the backend.

use super::backend::{Backend, Checkpoint, PrecondForm, Status};
use super::operator::LinearOperator;
use super::precond::{Identity, Jacobi, Preconditioner, PreconditionerKind};
use crate::{Error, Scalar};
use std::time::{Duration, Instant};

/// The most residual norms a report's history keeps (one per iteration, plus one per
/// start); later iterations are not recorded.
pub const HISTORY_LIMIT: usize = 1 << 20;

/// The bytes-moved floor of one CG iteration on an `nrows x nrows` matrix with `nnz` stored
/// entries, 32-bit indices and `value_bytes`-byte values (8 for f64), with or without the
/// Jacobi preconditioner: the model of `docs/cg.md`.
///
/// - SpMV `q = A p`, the minimal-bytes model of `anchors.md`: every value and column index
///   once, the row offsets once, `p` read once, `q` written once:
///   `nnz * (4 + v) + (nrows + 1) * 4 + 2 * nrows * v`.
/// - The vector passes, each fused as far as CG's two global reductions allow: the update
///   reads `x`, `p`, `r`, `q` and writes `x`, `r` (6 vectors); `p = z + beta p` reads `r`
///   and `p` and writes `p` (3). With Jacobi, both read the inverse diagonal (2 more).
///
/// The device backend moves exactly these bytes when the SpMV is fused with the `p'Ap`
/// reduction (CSR with the scalar kernel, or ELL without padding); otherwise the separate
/// reduction reads `p` and `q` once more.
///
/// ```
/// // The 4-million-row 2D Poisson problem in f64: about 608 MB per iteration.
/// let bytes = spgpu::solver::iteration_floor_bytes(4_000_000, 19_992_000, 8, false);
/// assert_eq!(bytes, 19_992_000 * 12 + 4_000_001 * 4 + 11 * 4_000_000 * 8);
/// ```
pub fn iteration_floor_bytes(nrows: usize, nnz: usize, value_bytes: usize, jacobi: bool) -> usize {
    let spmv = nnz * (4 + value_bytes) + (nrows + 1) * 4 + 2 * nrows * value_bytes;
    let vectors = if jacobi { 11 } else { 9 } * nrows * value_bytes;
    spmv + vectors
}

/// Parameters of a CG solve; [`CgParams::default`] gives sensible values.
///
/// The solve stops when the recurrence residual satisfies
/// `||r|| <= max(rtol * ||b||, atol)`; the true residual `b - A x` is then recomputed, and
/// the solve counts as converged only if it meets the same bound.
///
/// # Example
///
/// ```
/// use spgpu::solver::{CgParams, PreconditionerKind};
/// let params = CgParams { rtol: 1e-10, preconditioner: PreconditionerKind::Jacobi, ..CgParams::default() };
/// assert_eq!(params.atol, 0.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CgParams {
    /// Tolerance relative to `||b||` (default `1e-8`).
    pub rtol: f64,
    /// Absolute tolerance on `||b - A x||` (default 0).
    pub atol: f64,
    /// Most iterations, restarts included; `None` (the default) means `10 * n`, at least 100.
    pub max_iter: Option<usize>,
    /// The preconditioner [`cg`] builds (default none).
    pub preconditioner: PreconditionerKind,
    /// Iterations enqueued between two checkpoints, where the residual norm and status are
    /// copied to the host (default 16). The iteration count is exact whatever the interval:
    /// once converged, the steps enqueued after do nothing.
    pub check_interval: usize,
    /// Whether to return the residual norm of every iteration (kept where the solver
    /// computes, copied back once at the end; at most [`HISTORY_LIMIT`] entries).
    pub history: bool,
    /// How many times CG may restart from the true residual when the recurrence residual
    /// met the tolerance but `b - A x` does not (default 3).
    pub max_restarts: usize,
    /// Whether to record a batch of `check_interval` iterations once and replay it (as a
    /// CUDA graph on the device), which removes the host's per-launch cost (default true).
    /// Backends and operators that cannot record (the host; a CSR matrix that runs the
    /// vector kernel; a general preconditioner) launch step by step either way. The
    /// iterates are the same bit for bit.
    pub use_graphs: bool,
}

impl Default for CgParams {
    fn default() -> Self {
        CgParams {
            rtol: 1e-8,
            atol: 0.0,
            max_iter: None,
            preconditioner: PreconditionerKind::None,
            check_interval: 16,
            history: false,
            max_restarts: 3,
            use_graphs: true,
        }
    }
}

/// Why a CG solve stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// `||b - A x|| <= max(rtol * ||b||, atol)`, checked on the true residual.
    Converged,
    /// The iteration limit was reached first.
    MaxIterations,
    /// The recurrence residual met the tolerance but the true residual did not, even after
    /// every allowed restart (the precision's limit was reached).
    Stagnated,
    /// `p'Ap <= 0`: the operator or the preconditioner is not positive definite.
    Breakdown,
    /// A NaN or an infinity appeared in the iteration.
    NonFinite,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::Converged => "converged",
            StopReason::MaxIterations => "iteration limit reached",
            StopReason::Stagnated => "stagnated (true residual above tolerance)",
            StopReason::Breakdown => "breakdown (p'Ap <= 0)",
            StopReason::NonFinite => "non-finite value",
        })
    }
}

/// What a CG solve did.
#[derive(Debug, Clone, PartialEq)]
pub struct CgReport {
    /// Iterations performed, restarts included.
    pub iterations: usize,
    /// Why the solve stopped.
    pub stop_reason: StopReason,
    /// `||b||`.
    pub b_norm: f64,
    /// The bound the residual norm had to meet: `max(rtol * ||b||, atol)`.
    pub tolerance: f64,
    /// The recurrence residual norm `||r||` at the end.
    pub residual_norm: f64,
    /// The true residual norm `||b - A x||`, recomputed at the end.
    pub true_residual_norm: f64,
    /// `||b - A x|| / ||b||` (the absolute norm when `b == 0`).
    pub relative_residual: f64,
    /// Restarts from the true residual.
    pub restarts: usize,
    /// The preconditioner's name.
    pub preconditioner: &'static str,
    /// Time to set up: `||b||`, the first residual, the preconditioner and work vectors.
    pub setup_time: Duration,
    /// Time spent iterating (device synchronized).
    pub solve_time: Duration,
    /// Time to recompute the true residual at the end.
    pub check_time: Duration,
    /// `||r||` of the recurrence at every iteration (and at every start), when asked for.
    pub history: Option<Vec<f64>>,
}

impl CgReport {
    /// `solve_time / iterations` (zero without iterations).
    pub fn time_per_iteration(&self) -> Duration {
        match u32::try_from(self.iterations) {
            Ok(0) | Err(_) => Duration::ZERO,
            Ok(k) => self.solve_time / k,
        }
    }
}

/// Why a CG solve failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CgError {
    /// `p'Ap <= 0`: the matrix (or the preconditioner) is not symmetric positive definite.
    #[error(
        "CG broke down at iteration {iteration}: p'Ap = {pap:e} <= 0, so the matrix (or the \
         preconditioner) is not symmetric positive definite; CG cannot solve this system"
    )]
    Breakdown {
        /// The iteration at which `p'Ap <= 0` was found.
        iteration: usize,
        /// The value of `p'Ap`.
        pap: f64,
        /// The solve up to that point.
        report: Box<CgReport>,
    },
    /// A NaN or an infinity appeared.
    #[error(
        "CG produced a NaN or an infinity at iteration {iteration}; check A, b and x0 for \
         non-finite entries, or whether the values overflow the precision"
    )]
    NonFinite {
        /// The iteration at which it appeared (0: in the initial residual).
        iteration: usize,
        /// The solve up to that point.
        report: Box<CgReport>,
    },
    /// The tolerance was not met.
    #[error(
        "CG did not converge: {} after {} iterations, relative residual {:.3e} (tolerance {:.3e}); \
         raise the iteration limit, loosen rtol, or try a preconditioner",
        report.stop_reason, report.iterations, report.relative_residual, report.tolerance / report.b_norm.max(f64::MIN_POSITIVE)
    )]
    NoConvergence {
        /// The solve, with the best iterate's residuals.
        report: Box<CgReport>,
    },
    /// CG needs a square operator.
    #[error("CG needs a square matrix, got {nrows} x {ncols}")]
    NotSquare {
        /// Rows of the operator.
        nrows: usize,
        /// Columns of the operator.
        ncols: usize,
    },
    /// `b` or `x0` does not have one entry per row.
    #[error("dimension mismatch: {what} has {found} entries, the matrix has {expected} rows")]
    DimensionMismatch {
        /// `"b"` or `"x0"`.
        what: &'static str,
        /// The number of rows.
        expected: usize,
        /// The vector's length.
        found: usize,
    },
    /// A right-hand side with NaN or infinite entries.
    #[error("the right-hand side b has NaN or infinite entries")]
    NonFiniteInput,
    /// The Jacobi preconditioner found a diagonal entry that is zero, negative or not finite.
    #[error(
        "Jacobi preconditioner: diagonal entry at row {row} is {value}; Jacobi needs a positive \
         diagonal (a symmetric positive definite matrix has one); use --precond none or check the matrix"
    )]
    InvalidDiagonal {
        /// The row (0-based).
        row: usize,
        /// The diagonal entry.
        value: f64,
    },
    /// A parameter outside its range.
    #[error("invalid CG parameter: {0}")]
    InvalidParams(String),
    /// The backend failed (a CUDA error, an allocation, ...).
    #[error(transparent)]
    Backend(#[from] Error),
}

impl CgError {
    /// The report of a solve that ran but failed (breakdown, non-finite, no convergence).
    pub fn report(&self) -> Option<&CgReport> {
        match self {
            CgError::Breakdown { report, .. }
            | CgError::NonFinite { report, .. }
            | CgError::NoConvergence { report } => Some(report),
            _ => None,
        }
    }
}

/// Solves `A x = b` by conjugate gradient, with the preconditioner named in `params`.
///
/// `x` holds the initial guess `x0` on entry (zeros for a cold start) and the solution on
/// return. Works on any backend: `Host` with a [`CsrMatrix`](crate::CsrMatrix), or the
/// device with a device matrix and vectors.
///
/// # Errors
///
/// See [`CgError`]: a breakdown when `p'Ap <= 0` (A not positive definite), non-finite
/// values, no convergence within `max_iter` (with the report), a non-square `A`, vectors of
/// the wrong length, a Jacobi preconditioner on a non-positive diagonal, backend failures.
///
/// # Example
///
/// ```
/// use spgpu::{gen, reference, solver::{cg, CgParams, Host}};
/// let a = gen::laplacian_2d::<f64>(20); // 400 x 400, SPD
/// let b = vec![1.0; 400];
/// let mut x = vec![0.0; 400];
/// let report = cg(&Host, &a, &b, &mut x, &CgParams::default())?;
/// assert!(report.relative_residual <= 1e-8);
/// // The residual, checked independently.
/// let mut r = b.clone();
/// reference::spmv_csr(-1.0, &a, &x, 1.0, &mut r)?;
/// assert!(reference::relative_error(&r, &vec![0.0; 400]) <= 1e-8 * 20.0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn cg<T, B, A>(
    backend: &B,
    op: &A,
    b: &B::Vector,
    x: &mut B::Vector,
    params: &CgParams,
) -> Result<CgReport, CgError>
where
    T: Scalar,
    B: Backend<T>,
    A: LinearOperator<T, Vector = B::Vector>,
{
    match params.preconditioner {
        PreconditionerKind::None => cg_with(backend, op, &Identity, b, x, params, &mut |_| {}),
        PreconditionerKind::Jacobi => {
            if op.nrows() != op.ncols() {
                return Err(CgError::NotSquare { nrows: op.nrows(), ncols: op.ncols() });
            }
            let jacobi = Jacobi::from_diagonal(backend, &op.diagonal()?)?;
            cg_with(backend, op, &jacobi, b, x, params, &mut |_| {})
        }
    }
}

/// [`cg`] with an explicit preconditioner (`params.preconditioner` is ignored) and a
/// monitor called at every checkpoint, every `params.check_interval` iterations (for a
/// progress display).
///
/// # Errors
///
/// As [`cg`].
pub fn cg_with<T, B, A, P>(
    backend: &B,
    op: &A,
    precond: &P,
    b: &B::Vector,
    x: &mut B::Vector,
    params: &CgParams,
    monitor: &mut dyn FnMut(&Checkpoint),
) -> Result<CgReport, CgError>
where
    T: Scalar,
    B: Backend<T>,
    A: LinearOperator<T, Vector = B::Vector>,
    P: Preconditioner<T, B> + ?Sized,
{
    let t_setup = Instant::now();
    for (name, v) in [("rtol", params.rtol), ("atol", params.atol)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(CgError::InvalidParams(format!("{name} must be finite and >= 0, got {v}")));
        }
    }
    if params.check_interval == 0 {
        return Err(CgError::InvalidParams("check_interval must be at least 1".into()));
    }
    let n = op.nrows();
    if op.ncols() != n {
        return Err(CgError::NotSquare { nrows: n, ncols: op.ncols() });
    }
    for (what, len) in [("b", backend.len(b)), ("x0", backend.len(x))] {
        if len != n {
            return Err(CgError::DimensionMismatch { what, expected: n, found: len });
        }
    }
    let max_iter = params.max_iter.unwrap_or_else(|| n.saturating_mul(10).max(100));
    let b_norm2 = backend.dot(b, b)?;
    if !b_norm2.is_finite() {
        return Err(CgError::NonFiniteInput);
    }
    let b_norm = b_norm2.sqrt();
    let tolerance = (params.rtol * b_norm).max(params.atol);
    let tol2 = tolerance * tolerance;
    let form = precond.form();
    let general = matches!(form, PrecondForm::General);

    let mut r = backend.zeros(n)?;
    let mut p = backend.zeros(n)?;
    let mut q = backend.zeros(n)?;
    let mut z = backend.zeros(if general { n } else { 0 })?;
    let history_cap =
        if params.history { max_iter.saturating_add(1 + params.max_restarts).min(HISTORY_LIMIT) } else { 0 };
    let mut state = backend.new_state(n, history_cap)?;
    let mut history: Vec<f64> = Vec::new();

    let mut report = CgReport {
        iterations: 0,
        stop_reason: StopReason::MaxIterations,
        b_norm,
        tolerance,
        residual_norm: f64::NAN,
        true_residual_norm: f64::NAN,
        relative_residual: f64::NAN,
        restarts: 0,
        preconditioner: precond.name(),
        setup_time: Duration::ZERO,
        solve_time: Duration::ZERO,
        check_time: Duration::ZERO,
        history: None,
    };

    if b_norm == 0.0 {
        // b = 0: the solution is x = 0, whatever x0 (and a relative tolerance means nothing).
        backend.copy(b, x)?;
        report.stop_reason = StopReason::Converged;
        report.residual_norm = 0.0;
        report.true_residual_norm = 0.0;
        report.relative_residual = 0.0;
        report.setup_time = t_setup.elapsed();
        if params.history {
            report.history = Some(vec![0.0]);
        }
        return Ok(report);
    }

    let mut done = 0usize; // iterations of earlier starts
    let mut first = true;
    let mut last;
    // A batch of check_interval iterations recorded once and replayed (CUDA graph).
    let mut recording: Option<B::Recording> = None;
    let mut recording_failed = false;
    loop {
        // (Re)start from the true residual r = b - A x.
        let t_start = Instant::now();
        backend.copy(b, &mut r)?;
        op.apply(-T::ONE, x, T::ONE, &mut r)?;
        if general {
            precond.apply(backend, &r, &mut z)?;
        }
        backend.start(&mut state, tol2, &r, &z, form, &mut p)?;
        let mut ck = backend.checkpoint(&state)?;
        if first {
            report.setup_time = t_setup.elapsed();
            first = false;
        } else {
            report.solve_time += t_start.elapsed();
        }
        let t_solve = Instant::now();
        monitor(&Checkpoint { iterations: done + ck.iterations, ..ck });
        while ck.status == Status::Running && done + ck.iterations < max_iter {
            let k = params.check_interval.min(max_iter - done - ck.iterations);
            let mut step = |state: &mut B::State, x: &mut B::Vector| -> Result<(), CgError> {
                if !backend.fused_spmv_alpha(state, op.device_matrix(), &p, &mut q)? {
                    op.apply(T::ONE, &p, T::ZERO, &mut q)?;
                    backend.alpha_step(state, &p, &q)?;
                }
                backend.update(state, x, &mut r, &p, &q, form)?;
                if general {
                    precond.apply(backend, &r, &mut z)?;
                    backend.rho_step(state, &r, &z)?;
                }
                backend.direction(state, &mut p, &r, &z, form)?;
                Ok(())
            };
            let batch = params.use_graphs && k == params.check_interval && k > 1;
            if batch && recording.is_none() && !recording_failed {
                if backend.begin_recording(&mut state, op.device_matrix(), form)? {
                    let recorded = (0..k).try_for_each(|_| step(&mut state, x));
                    match (recorded, backend.end_recording(&mut state)) {
                        (Ok(()), Ok(rec)) => recording = Some(rec),
                        (Err(e), _) => return Err(e),
                        // The recording broke (nothing ran): go on step by step.
                        (Ok(()), Err(_)) => recording_failed = true,
                    }
                } else {
                    recording_failed = true;
                }
            }
            match &recording {
                Some(rec) if batch => backend.replay(&mut state, rec)?,
                _ => (0..k).try_for_each(|_| step(&mut state, x))?,
            }
            ck = backend.checkpoint(&state)?;
            monitor(&Checkpoint { iterations: done + ck.iterations, ..ck });
        }
        report.solve_time += t_solve.elapsed();
        if params.history {
            let room = history_cap.saturating_sub(history.len());
            history.extend(backend.history(&state, (ck.iterations + 1).min(room))?.into_iter().map(f64::sqrt));
        }
        done += ck.iterations;
        last = ck;

        // The true residual decides.
        let t_check = Instant::now();
        backend.copy(b, &mut r)?;
        op.apply(-T::ONE, x, T::ONE, &mut r)?;
        let true_norm = backend.dot(&r, &r)?.sqrt();
        report.check_time += t_check.elapsed();
        report.true_residual_norm = true_norm;
        report.relative_residual = if b_norm > 0.0 { true_norm / b_norm } else { true_norm };
        match ck.status {
            Status::Converged if true_norm <= tolerance => {
                report.stop_reason = StopReason::Converged;
                break;
            }
            Status::Converged if report.restarts < params.max_restarts && done < max_iter => {
                report.restarts += 1;
            }
            Status::Converged => {
                report.stop_reason = StopReason::Stagnated;
                break;
            }
            Status::Running => {
                report.stop_reason = StopReason::MaxIterations;
                break;
            }
            Status::Breakdown => {
                report.stop_reason = StopReason::Breakdown;
                break;
            }
            Status::NonFinite => {
                report.stop_reason = StopReason::NonFinite;
                break;
            }
        }
    }
    report.iterations = done;
    report.residual_norm = last.rr.sqrt();
    if params.history {
        report.history = Some(history);
    }
    let report = Box::new(report);
    match report.stop_reason {
        StopReason::Converged => Ok(*report),
        StopReason::Breakdown => Err(CgError::Breakdown { iteration: done, pap: last.pap, report }),
        StopReason::NonFinite => Err(CgError::NonFinite { iteration: done, report }),
        StopReason::MaxIterations | StopReason::Stagnated => Err(CgError::NoConvergence { report }),
    }
}
