//! Conjugate gradient, generic over the operator and the backend.

use super::amg::{Amg, AmgInfo, AmgParams, AutoChoice};
use super::backend::{Backend, Checkpoint, PrecondForm, ScaledNorm, Status};
use super::operator::LinearOperator;
use super::precond::{Identity, Jacobi, Preconditioner, PreconditionerKind};
use super::reorder::ReorderInfo;
use crate::reorder::Ordering;
use crate::{Error, Scalar};
use std::time::{Duration, Instant};

/// The most residual norms a report's history keeps (one per iteration, plus one per
/// start); later iterations are not recorded.
pub const HISTORY_LIMIT: usize = 1 << 20;

/// The bytes-moved floor of one CG iteration on an `nrows x nrows` matrix with `nnz` stored
/// entries, 32-bit indices and `value_bytes`-byte values (8 for f64), with or without the
/// Jacobi preconditioner: the model of `docs/cg.md`.
///
/// - SpMV `q = A p`, the minimal-bytes model of `anchors.md` (the one `spgpu bench` uses):
///   every value and column index once, the row offsets once, `p` read once, `q` written
///   once: `nnz * (4 + v) + (nrows + 1) * 4 + 2 * nrows * v`.
/// - The vector passes, [`cg_vector_bytes`].
///
/// The device backend moves exactly these bytes when the SpMV is fused with the `p'Ap`
/// reduction (CSR with the scalar kernel, or ELL without padding); with the plan's other
/// kernels (vector, balanced, SELL) the separate reduction reads `p` and `q` once more, and
/// the kernel's own storage differs from CSR's (SELL: padding and a row order, balanced: row
/// blocks).
///
/// ```
/// // The 4-million-row 2D Poisson problem in f64: about 608 MB per iteration.
/// let bytes = spgpu::solver::iteration_floor_bytes(4_000_000, 19_992_000, 8, false);
/// assert_eq!(bytes, 19_992_000 * 12 + 4_000_001 * 4 + 11 * 4_000_000 * 8);
/// ```
pub fn iteration_floor_bytes(nrows: usize, nnz: usize, value_bytes: usize, jacobi: bool) -> usize {
    // row offsets are 8 bytes past INDEX_LIMIT entries (64-bit offsets on the device)
    let offset = if crate::gpu::positions_need_64_bits(nnz) { 8 } else { 4 };
    let spmv = nnz * (4 + value_bytes) + (nrows + 1) * offset + 2 * nrows * value_bytes;
    spmv + cg_vector_bytes(nrows, value_bytes, jacobi)
}

/// The bytes of one CG iteration's vector passes on vectors of `nrows` elements of
/// `value_bytes` bytes, fused as far as CG's two global reductions allow: the update reads
/// `x`, `p`, `r`, `q` and writes `x`, `r` (6 vectors); `p = z + beta p` reads `r` and `p`
/// and writes `p` (3). With Jacobi, both read the inverse diagonal (2 more).
///
/// ```
/// assert_eq!(spgpu::solver::cg_vector_bytes(1000, 8, false), 9 * 1000 * 8);
/// assert_eq!(spgpu::solver::cg_vector_bytes(1000, 4, true), 11 * 1000 * 4);
/// ```
pub fn cg_vector_bytes(nrows: usize, value_bytes: usize, jacobi: bool) -> usize {
    (if jacobi { 11 } else { 9 }) * nrows * value_bytes
}

/// The unit roundoff of `T` (`f32::EPSILON` or `f64::EPSILON`).
fn epsilon<T: Scalar>() -> f64 {
    if T::BYTES == 4 {
        f64::from(f32::EPSILON)
    } else {
        f64::EPSILON
    }
}

/// The relative residual `||b - A x|| / ||b||` below which a solve in `T` on `n` unknowns
/// is not expected to get: `sqrt(n) * eps_T`.
///
/// Why: `x` is stored in `T`, so even the exact solution rounded to `T` leaves a residual
/// of about `eps_T * ||A|| * ||x||`, which is at least `eps_T * ||b||` (as `||b|| =
/// ||A x|| <= ||A|| ||x||`), and the rounding errors of the `n`-term sums that form the
/// residual add up to about `sqrt(n)` times one rounding (the probabilistic bound of
/// Higham, *Accuracy and Stability of Numerical Algorithms*). The bound ignores the
/// condition number, which is unknown before the solve: an ill-conditioned system can
/// stop well above it, but no system goes reliably below it.
///
/// spgpu uses it twice: [`CgParams::precision_warning`] flags a tolerance below it before
/// the solve, and the solver stops the recurrence there (with
/// [`StopReason::PrecisionLimit`] when the true residual is at this level but above the
/// tolerance), instead of iterating until `p'Ap` underflows.
///
/// ```
/// use spgpu::solver::precision_floor;
/// assert!((precision_floor::<f32>(10_000) - 100.0 * 1.1920929e-7).abs() < 1e-12);
/// assert!(precision_floor::<f64>(1_000_000) < 2.3e-13);
/// ```
pub fn precision_floor<T: Scalar>(n: usize) -> f64 {
    (n.max(1) as f64).sqrt() * epsilon::<T>()
}

/// How far above [`precision_floor`] a true residual still counts as "at the rounding
/// level" ([`StopReason::PrecisionLimit`]): the floor is an estimate, and where the
/// recurrence stops against it the true residual lands within a small factor either side.
pub const PRECISION_LIMIT_FACTOR: f64 = 10.0;

/// `2^e` for `e` in `[-1022, 1023]`, exactly.
fn pow2(e: i32) -> f64 {
    let e = e.clamp(-1022, 1023);
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `|log2 ||b|||` beyond which the system is scaled for the solve: squares of norms near
/// `2^1000` or `2^-1000` would overflow or underflow the f64 sums of the iteration.
const EQUILIBRATE_LOG2: f64 = 500.0;

/// The exponent `e` such that the system scaled by `2^-e` has `||b||` near 1, when `||b||`
/// is outside `[2^-500, 2^500]`; 0 otherwise (and for `b = 0`).
fn equilibration_exponent(b: ScaledNorm) -> i32 {
    if b.max_abs == 0.0 {
        return 0;
    }
    let log2 = b.max_abs.log2() + 0.5 * b.ssq.log2();
    if log2.abs() <= EQUILIBRATE_LOG2 {
        0
    } else {
        log2.ceil().clamp(-1000.0, 1000.0) as i32
    }
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
    /// The AMG setup's parameters, for [`PreconditionerKind::Amg`] and
    /// [`PreconditionerKind::Auto`].
    pub amg: AmgParams,
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
    /// Backends and preconditioners that cannot record (the host; a general
    /// preconditioner other than AMG, see [`Preconditioner::recordable`]) launch step by
    /// step either way. The iterates are the same bit for bit.
    pub use_graphs: bool,
    /// The locality ordering the system is solved in (default [`Ordering::None`], the
    /// user's numbering): with another, CG solves `P A P^T (P x) = P b`, builds the
    /// preconditioner on `P A P^T`, and returns `x` in the user's numbering, with what the
    /// ordering did in [`CgReport::reorder`] and its time in the setup. [`Ordering::Auto`]
    /// keeps a numbering whose gathers of `x` already share cache sectors; else it runs a
    /// few iterations first and renumbers when the estimated saving over the rest of the
    /// solve repays the ordering's estimated cost twice over (see `docs/cg.md`).
    pub reorder: Ordering,
}

impl Default for CgParams {
    fn default() -> Self {
        CgParams {
            rtol: 1e-8,
            atol: 0.0,
            max_iter: None,
            preconditioner: PreconditionerKind::None,
            amg: AmgParams::default(),
            check_interval: 16,
            history: false,
            max_restarts: 3,
            use_graphs: true,
            reorder: Ordering::None,
        }
    }
}

impl CgParams {
    /// The warning [`cg_with`] puts in its report when the tolerance asked for is below
    /// what `T` can reach on `n` unknowns: when `max(rtol * ||b||, atol)` is below
    /// [`precision_floor`]`::<T>(n) * ||b||`. Call it before a solve to warn early (the
    /// command line does).
    ///
    /// ```
    /// use spgpu::solver::{CgParams, CgWarning};
    /// let params = CgParams::default(); // rtol 1e-8
    /// assert!(matches!(params.precision_warning::<f32>(900, 1.0), Some(CgWarning::ToleranceBelowPrecision { .. })));
    /// assert_eq!(params.precision_warning::<f64>(900, 1.0), None);
    /// let loose = CgParams { rtol: 1e-5, ..CgParams::default() };
    /// assert_eq!(loose.precision_warning::<f32>(900, 1.0), None);
    /// ```
    pub fn precision_warning<T: Scalar>(&self, n: usize, b_norm: f64) -> Option<CgWarning> {
        if n == 0 || !(b_norm > 0.0 && b_norm.is_finite()) {
            return None;
        }
        let requested = self.rtol.max(self.atol / b_norm);
        let floor = precision_floor::<T>(n);
        (requested < floor).then_some(CgWarning::ToleranceBelowPrecision { requested, floor, scalar: T::NAME })
    }
}

/// Something a solve noticed that the caller should know, though it is not an error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CgWarning {
    /// The tolerance, relative to `||b||`, is below what the element type can reach
    /// ([`precision_floor`]); the solve will likely end at [`StopReason::PrecisionLimit`].
    ToleranceBelowPrecision {
        /// `max(rtol, atol / ||b||)`.
        requested: f64,
        /// [`precision_floor`] for the element type and size.
        floor: f64,
        /// The element type, `"f32"` or `"f64"`.
        scalar: &'static str,
    },
    /// `||b||` was so large or small that the f64 sums of squares of the iteration would
    /// overflow or underflow, so the system was solved scaled by `2^-exponent` (exactly:
    /// a power of two) and the solution scaled back.
    Equilibrated {
        /// The power of two `b` and `x` were divided by.
        exponent: i32,
    },
    /// Recording a batch of iterations as a CUDA graph failed, so every kernel was
    /// launched from the host instead (same iterates, more host time per iteration).
    GraphRecordingFailed {
        /// The error.
        reason: String,
    },
}

impl std::fmt::Display for CgWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CgWarning::ToleranceBelowPrecision { requested, floor, scalar } => write!(
                f,
                "the tolerance asked for (relative {requested:.1e}) is below what {scalar} can reach on this \
                 system (about sqrt(n) * eps = {floor:.1e}), so the solve will likely stop at the precision \
                 limit; use an rtol of at least {floor:.1e}{}",
                if *scalar == "f32" { ", or f64" } else { "" }
            ),
            CgWarning::Equilibrated { exponent } => write!(
                f,
                "||b|| is outside [2^-500, 2^500], where the sums of squares of CG overflow or underflow f64; \
                 the system was solved scaled by 2^{} (exactly) and the solution scaled back",
                -exponent
            ),
            CgWarning::GraphRecordingFailed { reason } => {
                write!(f, "recording CG iterations as a CUDA graph failed ({reason}); launched step by step instead")
            }
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
    /// every allowed restart (often an ill-conditioned system for the precision).
    Stagnated,
    /// The true residual reached the rounding level of the element type (within
    /// [`PRECISION_LIMIT_FACTOR`] times the [`precision_floor`]) without meeting a
    /// tolerance below the floor: the solve cannot get closer in this precision. Also what
    /// a `p'Ap` that underflows to zero (or rounds below it) at such a residual means: not
    /// a breakdown.
    PrecisionLimit,
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
            StopReason::PrecisionLimit => "precision limit reached (true residual at the rounding level)",
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
    /// `||b - A x|| / ||b||` (0 when `b == 0`).
    pub relative_residual: f64,
    /// Whether the true residual met the relative tolerance: `||b - A x|| <= rtol * ||b||`.
    pub rtol_met: bool,
    /// Whether the true residual met the absolute tolerance: `||b - A x|| <= atol`.
    pub atol_met: bool,
    /// The relative residual the element type can be expected to reach on this system,
    /// [`precision_floor`].
    pub precision_floor: f64,
    /// What the solve noticed on the way (a tolerance below the precision, an
    /// equilibrated system, a CUDA graph that could not be recorded).
    pub warnings: Vec<CgWarning>,
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
    /// The AMG hierarchy, when [`cg`] built one ([`PreconditionerKind::Amg`], or
    /// [`PreconditionerKind::Auto`] choosing AMG).
    pub amg: Option<AmgInfo>,
    /// What [`PreconditionerKind::Auto`] chose and why.
    pub auto: Option<AutoChoice>,
    /// What the locality ordering did, when [`CgParams::reorder`] is not
    /// [`Ordering::None`].
    pub reorder: Option<ReorderInfo>,
}

impl CgReport {
    /// Which tolerance the true residual met: `"rtol and atol"`, `"rtol"`, `"atol"` or
    /// `"neither"`.
    pub fn tolerance_met(&self) -> &'static str {
        match (self.rtol_met, self.atol_met) {
            (true, true) => "rtol and atol",
            (true, false) => "rtol",
            (false, true) => "atol",
            (false, false) => "neither",
        }
    }

    /// What to do about a solve that stopped for `stop_reason`.
    fn advice(&self) -> String {
        match self.stop_reason {
            StopReason::PrecisionLimit => format!(
                "the true residual is at the rounding level of the element type (relative floor about {:.1e}), \
                 so a smaller tolerance cannot be met: loosen rtol or atol, or solve in f64",
                self.precision_floor
            ),
            StopReason::Stagnated => "the recurrence met the tolerance but the true residual did not, even after \
                 restarts (an ill-conditioned system for this precision): loosen rtol, solve in f64, or try a \
                 preconditioner"
                .to_string(),
            _ => "raise the iteration limit, loosen rtol, or try a preconditioner".to_string(),
        }
    }

    /// Rescales the norms of a solve made on the system scaled by `2^-e`.
    fn unscale(&mut self, e: i32, b_norm: f64, tolerance: f64) {
        let up = |v: f64| v * pow2(e);
        self.b_norm = b_norm;
        self.tolerance = tolerance;
        self.residual_norm = up(self.residual_norm);
        self.true_residual_norm = up(self.true_residual_norm);
        if let Some(h) = &mut self.history {
            h.iter_mut().for_each(|v| *v = up(*v));
        }
    }

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
        "CG did not converge: {} after {} iterations, relative residual {:.3e} (tolerance {:.3e}); {}",
        report.stop_reason, report.iterations, report.relative_residual,
        report.tolerance / report.b_norm.max(f64::MIN_POSITIVE), report.advice()
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
    /// A right-hand side with NaN or infinite entries (a finite `b` never gives this: its
    /// norm is computed without overflow).
    #[error("the right-hand side b has NaN or infinite entries")]
    NonFiniteInput,
    /// The Jacobi or AMG preconditioner found a diagonal entry that is zero, negative or not
    /// finite.
    #[error(
        "preconditioner: diagonal entry at row {row} is {value}; Jacobi and AMG need a positive \
         diagonal (a symmetric positive definite matrix has one); use --precond none or check the matrix"
    )]
    InvalidDiagonal {
        /// The row (0-based).
        row: usize,
        /// The diagonal entry.
        value: f64,
    },
    /// AMG near-nullspace vectors whose length is not a whole number of columns of the
    /// matrix's rows.
    #[error(
        "the AMG near-nullspace has {found} entries, which is not k columns of {rows} rows (the matrix's rows); \
         give n x k values, column-major"
    )]
    NearNullspace {
        /// The matrix's rows.
        rows: usize,
        /// The near-nullspace's length.
        found: usize,
    },
    /// The AMG hierarchy's coarsest system is not positive definite (so neither is the
    /// matrix, or it is not symmetric).
    #[error(
        "AMG: the coarsest system (level {level}) is not positive definite (Cholesky pivot {pivot:e} at its row \
         {row}), so the matrix is not symmetric positive definite; CG cannot solve this system"
    )]
    CoarseNotPositiveDefinite {
        /// The level (0 the finest).
        level: usize,
        /// The row of the coarsest matrix whose pivot failed.
        row: usize,
        /// The pivot.
        pivot: f64,
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

    /// The report, mutably (to add what was done before the solve, such as a
    /// preconditioner's setup).
    pub fn report_mut(&mut self) -> Option<&mut CgReport> {
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
    if params.preconditioner != PreconditionerKind::None && op.nrows() != op.ncols() {
        return Err(CgError::NotSquare { nrows: op.nrows(), ncols: op.ncols() });
    }
    if params.reorder != Ordering::None {
        return super::reorder::reordered(backend, op, b, x, params);
    }
    match params.preconditioner {
        PreconditionerKind::Jacobi => {
            let jacobi = Jacobi::from_diagonal(backend, &op.diagonal()?)?;
            cg_with(backend, op, &jacobi, b, x, params, &mut |_| {})
        }
        PreconditionerKind::Amg => {
            let started = Instant::now();
            let amg = Amg::build(backend, &op.host_matrix()?, &params.amg)?;
            let setup = started.elapsed();
            let result = cg_with(backend, op, &amg, b, x, params, &mut |_| {});
            annotate(result, setup, Some(amg.info().clone()), None)
        }
        PreconditionerKind::Auto if op.device_matrix().is_some() => {
            // A device matrix: decide from its diagonal alone (what Jacobi reads anyway), so
            // the choice costs no more than Jacobi's setup; see `auto_for_device`.
            let started = Instant::now();
            let diagonal = op.diagonal()?;
            let choice = super::amg::auto_for_device(&diagonal);
            let setup = started.elapsed();
            let result = if choice.chosen == PreconditionerKind::Jacobi {
                let jacobi = Jacobi::from_diagonal(backend, &diagonal)?;
                cg_with(backend, op, &jacobi, b, x, params, &mut |_| {})
            } else {
                cg_with(backend, op, &Identity, b, x, params, &mut |_| {})
            };
            annotate(result, setup, None, Some(choice))
        }
        PreconditionerKind::Auto => {
            let started = Instant::now();
            let a = op.host_matrix()?;
            let (amg, choice) = super::amg::build_auto(backend, &a, &params.amg)?;
            match (amg, choice.chosen) {
                (Some(amg), _) => {
                    let setup = started.elapsed();
                    let result = cg_with(backend, op, &amg, b, x, params, &mut |_| {});
                    annotate(result, setup, Some(amg.info().clone()), Some(choice))
                }
                (None, PreconditionerKind::Jacobi) => {
                    let jacobi = Jacobi::from_diagonal(backend, &a.diagonal())?;
                    let setup = started.elapsed();
                    annotate(cg_with(backend, op, &jacobi, b, x, params, &mut |_| {}), setup, None, Some(choice))
                }
                (None, _) => {
                    let setup = started.elapsed();
                    annotate(cg_with(backend, op, &Identity, b, x, params, &mut |_| {}), setup, None, Some(choice))
                }
            }
        }
        _ => cg_with(backend, op, &Identity, b, x, params, &mut |_| {}),
    }
}

/// Adds the preconditioner's setup (time, AMG hierarchy, Auto choice) to a solve's report,
/// whether it converged or not.
fn annotate(
    mut result: Result<CgReport, CgError>,
    setup: Duration,
    amg: Option<AmgInfo>,
    auto: Option<AutoChoice>,
) -> Result<CgReport, CgError> {
    let report = match &mut result {
        Ok(report) => Some(report),
        Err(e) => e.report_mut(),
    };
    if let Some(report) = report {
        report.setup_time += setup;
        report.amg = amg;
        report.auto = auto;
    }
    result
}

/// [`cg`] with an explicit preconditioner (`params.preconditioner` is ignored) and a
/// monitor called at every checkpoint, every `params.check_interval` iterations (for a
/// progress display).
///
/// # Stopping
///
/// The recurrence stops at `max(tolerance, floor)`, where `tolerance = max(rtol * ||b||,
/// atol)` and `floor = `[`precision_floor`]` * ||b||`; the true residual `||b - A x||`
/// then decides, with `limit = `[`PRECISION_LIMIT_FACTOR`]` * floor`:
///
/// - at or below the tolerance: [`StopReason::Converged`] (also when the iteration limit
///   or a `p'Ap <= 0` came at the same time);
/// - `p'Ap <= 0` (underflowed or rounded) with the true residual at or below the limit:
///   [`StopReason::PrecisionLimit`], never a breakdown (that is what reaching machine
///   precision looks like); above it, [`StopReason::Breakdown`];
/// - the recurrence stopped at the floor (a tolerance below it) with the true residual at
///   or below the limit: [`StopReason::PrecisionLimit`];
/// - otherwise, after the recurrence converged, a restart from the true residual (at most
///   `params.max_restarts`), then [`StopReason::Stagnated`];
///   [`StopReason::MaxIterations`], [`StopReason::NonFinite`].
///
/// Norms are scaled sums ([`Backend::norm`]), so a finite `b` is never taken for a
/// non-finite one; a `||b||` outside `[2^-500, 2^500]` is solved on the system scaled by
/// a power of two ([`CgWarning::Equilibrated`]).
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
    let b_scaled = backend.norm(b)?;
    if !b_scaled.entries_finite() {
        return Err(CgError::NonFiniteInput);
    }
    let mut warnings: Vec<CgWarning> = params.precision_warning::<T>(n, b_scaled.value()).into_iter().collect();
    let e = equilibration_exponent(b_scaled);
    if e == 0 {
        let b_norm = b_scaled.value();
        return solve(backend, op, precond, b, x, params, monitor, (b_norm, params.atol), t_setup, warnings);
    }

    // Solve A (x / 2^e) = b / 2^e: exact scalings by a power of two.
    warnings.push(CgWarning::Equilibrated { exponent: e });
    let down = pow2(-e);
    let mut bs = backend.zeros(n)?;
    backend.copy(b, &mut bs)?;
    backend.scale(down, &mut bs)?;
    backend.scale(down, x)?;
    let inner = ScaledNorm { max_abs: b_scaled.max_abs * down, ssq: b_scaled.ssq }.value();
    let mut scaled_monitor = |ck: &Checkpoint| monitor(&Checkpoint { rr: ck.rr * pow2(e) * pow2(e), ..*ck });
    let mut result = solve(
        backend,
        op,
        precond,
        &bs,
        x,
        params,
        &mut scaled_monitor,
        (inner, params.atol * down),
        t_setup,
        warnings,
    );
    backend.scale(pow2(e), x)?;
    let b_norm = b_scaled.value();
    let tolerance = (params.rtol * b_norm).max(params.atol);
    match &mut result {
        Ok(report) => report.unscale(e, b_norm, tolerance),
        Err(err) => {
            if let CgError::Breakdown { pap, .. } = err {
                *pap *= pow2(e) * pow2(e);
            }
            if let Some(report) = err.report_mut() {
                report.unscale(e, b_norm, tolerance);
            }
        }
    }
    result
}

/// The first batch of iterations of a solve whose batches are sized from the convergence
/// rate (a general preconditioner on the device, see [`adaptive_batch`]).
const FIRST_ADAPTIVE_BATCH: usize = 4;

/// The iterations to enqueue before the next checkpoint when each costs a preconditioner
/// cycle even past convergence: the iterations that `||r||^2` needs to get from `rr` to
/// `tol2` at the rate seen over the last `steps` iterations (from `rr_before`), rounded
/// up, between 1 and `cap`; `cap` when no rate can be seen (no progress, no steps).
fn adaptive_batch(rr_before: f64, rr: f64, steps: usize, tol2: f64, cap: usize) -> usize {
    let cap = cap.max(1);
    if steps == 0 || !(rr > 0.0 && rr_before > 0.0 && rr.is_finite() && rr_before.is_finite() && tol2 > 0.0) {
        return cap;
    }
    let rate = (rr / rr_before).ln() / steps as f64; // log of ||r||^2's factor per iteration
    if rate >= 0.0 {
        return cap;
    }
    let need = (tol2 / rr).ln() / rate;
    if need.is_finite() {
        (need.ceil().max(1.0) as usize).min(cap)
    } else {
        cap
    }
}

/// What the solver does once the true residual of a start's last iterate is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Stop(StopReason),
    Restart,
}

/// The stopping rule of [`cg_with`] (see its docs): the checkpoint's status, the true
/// residual norm, the tolerance, the precision floor (absolute), and whether a restart is
/// still allowed.
fn decide(status: Status, true_norm: f64, tolerance: f64, floor: f64, can_restart: bool) -> Next {
    if status == Status::NonFinite || !true_norm.is_finite() {
        return Next::Stop(StopReason::NonFinite);
    }
    let at_limit = true_norm <= PRECISION_LIMIT_FACTOR * floor;
    match status {
        _ if true_norm <= tolerance => Next::Stop(StopReason::Converged),
        Status::Breakdown if at_limit => Next::Stop(StopReason::PrecisionLimit),
        Status::Converged if tolerance < floor && at_limit => Next::Stop(StopReason::PrecisionLimit),
        Status::Breakdown => Next::Stop(StopReason::Breakdown),
        Status::Converged if can_restart => Next::Restart,
        Status::Converged => Next::Stop(StopReason::Stagnated),
        Status::Running | Status::NonFinite => Next::Stop(StopReason::MaxIterations),
    }
}

/// [`cg_with`] after validation, on a system whose `||b||` is `b_norm` and whose absolute
/// tolerance is `atol` (both in the units of the possibly scaled system).
#[allow(clippy::too_many_arguments)]
fn solve<T, B, A, P>(
    backend: &B,
    op: &A,
    precond: &P,
    b: &B::Vector,
    x: &mut B::Vector,
    params: &CgParams,
    monitor: &mut dyn FnMut(&Checkpoint),
    (b_norm, atol): (f64, f64),
    t_setup: Instant,
    warnings: Vec<CgWarning>,
) -> Result<CgReport, CgError>
where
    T: Scalar,
    B: Backend<T>,
    A: LinearOperator<T, Vector = B::Vector>,
    P: Preconditioner<T, B> + ?Sized,
{
    let n = op.nrows();
    let max_iter = params.max_iter.unwrap_or_else(|| n.saturating_mul(10).max(100));
    let tolerance = (params.rtol * b_norm).max(atol);
    let floor_rel = precision_floor::<T>(n);
    let floor = floor_rel * b_norm;
    // The recurrence goes no further than the precision can follow (see precision_floor).
    let tol_recurrence = tolerance.max(floor);
    let tol2 = tol_recurrence * tol_recurrence;
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
        rtol_met: false,
        atol_met: false,
        precision_floor: floor_rel,
        warnings,
        restarts: 0,
        preconditioner: precond.name(),
        setup_time: Duration::ZERO,
        solve_time: Duration::ZERO,
        check_time: Duration::ZERO,
        history: None,
        amg: None,
        auto: None,
        reorder: None,
    };

    if b_norm == 0.0 {
        // b = 0: the solution is x = 0, whatever x0 (and a relative tolerance means nothing).
        backend.copy(b, x)?;
        report.stop_reason = StopReason::Converged;
        report.residual_norm = 0.0;
        report.true_residual_norm = 0.0;
        report.relative_residual = 0.0;
        report.rtol_met = true;
        report.atol_met = true;
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
    // A general preconditioner on a backend that cannot tell, without a round trip, that the
    // solve has stopped (the device) runs its whole cycle in every enqueued iteration, even
    // past convergence: there the batches are sized from the convergence rate seen so far
    // (adaptive_batch), and one iteration is recorded and replayed batch-many times.
    let adaptive = general && backend.is_running(&state).is_none();
    let mut next_batch = if adaptive { FIRST_ADAPTIVE_BATCH.min(params.check_interval) } else { params.check_interval };
    loop {
        // (Re)start from the true residual r = b - A x.
        let t_start = Instant::now();
        backend.copy(b, &mut r)?;
        op.apply(-T::ONE, x, T::ONE, &mut r)?;
        if general {
            precond.apply_in(backend, &mut state, &r, &mut z)?;
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
        let (mut rr_seen, mut iterations_seen) = (ck.rr, ck.iterations);
        while ck.status == Status::Running && done + ck.iterations < max_iter {
            let k = next_batch.min(max_iter - done - ck.iterations);
            // iterations in one recording: the batch, or one when adaptive
            let per_recording = if adaptive { 1 } else { params.check_interval };
            let mut step = |state: &mut B::State, x: &mut B::Vector| -> crate::Result<()> {
                if !backend.fused_spmv_alpha(state, op.device_matrix(), &p, &mut q)? {
                    op.apply(T::ONE, &p, T::ZERO, &mut q)?;
                    backend.alpha_step(state, &p, &q)?;
                }
                backend.update(state, x, &mut r, &p, &q, form)?;
                if general {
                    // the host knows when the solve has stopped: no cycle after that
                    if backend.is_running(state) != Some(false) {
                        precond.apply_in(backend, state, &r, &mut z)?;
                    }
                    backend.rho_step(state, &r, &z)?;
                }
                backend.direction(state, &mut p, &r, &z, form)
            };
            // a general preconditioner is recorded only when it enqueues through the state
            let batch = params.use_graphs
                && (!general || precond.recordable())
                && if adaptive { k >= 1 } else { k == params.check_interval && k > 1 };
            if batch && recording.is_none() && !recording_failed {
                let mut steps_failed = false;
                let recorded = backend.record(&mut state, op.device_matrix(), form, &mut |state| {
                    let result = (0..per_recording).try_for_each(|_| step(state, x));
                    steps_failed = result.is_err();
                    result
                });
                match recorded {
                    Ok(Some(rec)) => recording = Some(rec),
                    Ok(None) => recording_failed = true,
                    // A step refused its operands: that is the caller's error.
                    Err(e) if steps_failed && !e.is_capture_invalidated() => return Err(e.into()),
                    // The recording broke (a stream-capture error, for example another
                    // thread synchronized the whole device meanwhile; nothing ran): go on
                    // step by step, and say so.
                    Err(e) => {
                        recording_failed = true;
                        report.warnings.push(CgWarning::GraphRecordingFailed { reason: e.to_string() });
                    }
                }
            }
            match &recording {
                Some(rec) if batch => (0..k / per_recording).try_for_each(|_| backend.replay(&mut state, rec))?,
                _ => (0..k).try_for_each(|_| step(&mut state, x))?,
            }
            ck = backend.checkpoint(&state)?;
            monitor(&Checkpoint { iterations: done + ck.iterations, ..ck });
            if adaptive {
                let steps = ck.iterations.saturating_sub(iterations_seen);
                next_batch = adaptive_batch(rr_seen, ck.rr, steps, tol2, params.check_interval);
                (rr_seen, iterations_seen) = (ck.rr, ck.iterations);
            }
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
        let true_norm = backend.norm(&r)?.value();
        report.check_time += t_check.elapsed();
        report.true_residual_norm = true_norm;
        report.relative_residual = true_norm / b_norm;
        report.rtol_met = true_norm <= params.rtol * b_norm;
        report.atol_met = true_norm <= atol;
        let can_restart = report.restarts < params.max_restarts && done < max_iter;
        match decide(ck.status, true_norm, tolerance, floor, can_restart) {
            Next::Restart => report.restarts += 1,
            Next::Stop(reason) => {
                report.stop_reason = reason;
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
        StopReason::MaxIterations | StopReason::Stagnated | StopReason::PrecisionLimit => {
            Err(CgError::NoConvergence { report })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_true_residual_is_never_a_breakdown() {
        let (tol, floor) = (0.0, 1e-14);
        // p'Ap underflowed (or rounded to <= 0) once the residual reached the precision.
        assert_eq!(decide(Status::Breakdown, 1e-15, tol, floor, true), Next::Stop(StopReason::PrecisionLimit));
        assert_eq!(decide(Status::Breakdown, 9e-14, tol, floor, true), Next::Stop(StopReason::PrecisionLimit));
        // ... and met the tolerance: converged.
        assert_eq!(decide(Status::Breakdown, 1e-9, 1e-8, floor, true), Next::Stop(StopReason::Converged));
        // A breakdown far from the solution is one.
        assert_eq!(decide(Status::Breakdown, 0.5, 1e-8, floor, true), Next::Stop(StopReason::Breakdown));
    }

    #[test]
    fn the_stopping_rule() {
        let floor = 1e-12;
        assert_eq!(decide(Status::Converged, 1e-9, 1e-8, floor, true), Next::Stop(StopReason::Converged));
        assert_eq!(decide(Status::Converged, 1e-7, 1e-8, floor, true), Next::Restart);
        assert_eq!(decide(Status::Converged, 1e-7, 1e-8, floor, false), Next::Stop(StopReason::Stagnated));
        // A tolerance below the floor: the rounding level (within the factor) is the end.
        assert_eq!(decide(Status::Converged, 1e-13, 0.0, floor, true), Next::Stop(StopReason::PrecisionLimit));
        assert_eq!(decide(Status::Converged, 5e-12, 0.0, floor, true), Next::Stop(StopReason::PrecisionLimit));
        assert_eq!(decide(Status::Converged, 5e-11, 0.0, floor, true), Next::Restart);
        // A tolerance above the floor that the true residual missed: restart first.
        assert_eq!(decide(Status::Converged, 5e-12, 2e-12, floor, true), Next::Restart);
        assert_eq!(decide(Status::Running, 1e-7, 1e-8, floor, true), Next::Stop(StopReason::MaxIterations));
        assert_eq!(decide(Status::Running, 1e-9, 1e-8, floor, true), Next::Stop(StopReason::Converged));
        assert_eq!(decide(Status::NonFinite, 1e-9, 1e-8, floor, true), Next::Stop(StopReason::NonFinite));
        assert_eq!(decide(Status::Converged, f64::NAN, 1e-8, floor, true), Next::Stop(StopReason::NonFinite));
    }

    #[test]
    fn adaptive_batches_aim_at_the_tolerance() {
        // 1e-2 per iteration in ||r||^2: from 1e-4 to 1e-16 takes 6 more
        assert_eq!(adaptive_batch(1.0, 1e-4, 2, 1e-16, 16), 6);
        assert_eq!(adaptive_batch(1.0, 1e-4, 2, 1e-100, 16), 16); // capped
        assert_eq!(adaptive_batch(1.0, 1e-4, 2, 1e-5, 16), 1); // almost there: at least one
        assert_eq!(adaptive_batch(1.0, 2.0, 2, 1e-16, 16), 16); // no progress: the cap
        assert_eq!(adaptive_batch(1.0, 1e-4, 0, 1e-16, 16), 16);
        assert_eq!(adaptive_batch(f64::NAN, 1e-4, 2, 1e-16, 16), 16);
    }

    #[test]
    fn equilibration_only_for_extreme_norms() {
        let of = |v: f64| ScaledNorm { max_abs: v, ssq: 1.0 };
        assert_eq!(equilibration_exponent(of(1.0)), 0);
        assert_eq!(equilibration_exponent(of(1e150)), 0); // 2^498
        assert_eq!(equilibration_exponent(of(0.0)), 0);
        let e = equilibration_exponent(of(1e160));
        assert_eq!(e, 532); // 1e160 = 2^531.5...
        assert!((1e160 * pow2(-e) - 0.5).abs() < 0.5);
        let e = equilibration_exponent(of(1e-200));
        assert!((1e-200 * pow2(-e)) > 0.5 && (1e-200 * pow2(-e)) <= 1.0, "{e}");
        // ||b|| above f64::MAX with finite entries: still a usable exponent.
        let huge = ScaledNorm { max_abs: f64::MAX, ssq: 4.0 };
        assert_eq!(equilibration_exponent(huge), 1000);
        assert_eq!(pow2(3), 8.0);
        assert_eq!(pow2(-1022), f64::MIN_POSITIVE);
    }
}
