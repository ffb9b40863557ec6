//! Locality reordering inside a CG solve ([`CgParams::reorder`]): the system is renumbered
//! `P A P^T (P x) = P b`, solved in the new numbering, and `x` comes back in the user's.

use super::backend::Backend;
use super::cg::{cg, CgError, CgParams, CgReport, StopReason};
use super::operator::LinearOperator;
use super::precond::PreconditionerKind;
use crate::reorder::{self, Locality, Ordering, Permutation, AUTO_SCATTERED};
use crate::{CsrMatrix, Scalar};
use std::time::{Duration, Instant};

/// What the locality ordering of a solve did ([`CgReport::reorder`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ReorderInfo {
    /// The ordering asked for ([`CgParams::reorder`]).
    pub requested: Ordering,
    /// The ordering the solve ran in ([`Ordering::None`]: the user's numbering).
    pub ordering: Ordering,
    /// Why, in a sentence.
    pub reason: String,
    /// The locality of the user's numbering.
    pub before: Locality,
    /// The locality of the numbering solved in, when renumbered.
    pub after: Option<Locality>,
    /// Time spent on the ordering: deciding, the permutation, the renumbered matrix and
    /// vectors, and the solution brought back. Part of [`CgReport::setup_time`].
    pub time: Duration,
    /// Iterations [`Ordering::Auto`] ran in the user's numbering, to measure the solve
    /// before deciding; the solve goes on from their iterate (a restart, in the new
    /// numbering when it renumbers). Part of [`CgReport::iterations`], and of its history.
    pub probe_iterations: usize,
}

/// Iterations [`Ordering::Auto`] runs in the user's numbering when the gathers of `x` are
/// scattered: they measure the time of an iteration and the rate at which the residual
/// falls. The solve goes on from their iterate, but restarts CG: on `permute:lap3d:40` (CPU)
/// the restart cost 22 iterations more than one solve without a probe (123 against 101).
const PROBE_ITERATIONS: usize = 32;

/// Sectors of `x` per entry that [`Ordering::Auto`] expects of an ordering before it has
/// computed one: meshes and banded systems renumbered by RCM measure 0.15 to 0.3.
const EXPECTED_AFTER: f64 = 0.25;

/// The host's time per stored entry to compute an ordering and renumber the matrix and
/// vectors: the estimate of the cost [`Ordering::Auto`] weighs before paying it. Measured
/// on 3D Laplacians numbered at random (216k and 1M rows, two cores): RCM 24-55 ns per
/// entry (a sequential sweep), the renumbered matrix 21-36 ns (parallel); rounded up, as
/// an estimate too high only keeps the user's numbering.
const ORDER_NS_PER_ENTRY: f64 = 80.0;

/// Bytes per second of a copy between the host and the device (pinned staging, measured
/// on the H200's host): a device matrix is downloaded, renumbered and uploaded again.
const TRANSFER_BYTES_PER_S: f64 = 22e9;

/// How many times the estimated cost of the ordering [`Ordering::Auto`] wants back in
/// iteration time saved over the rest of the solve before it renumbers.
const PAYBACK: f64 = 2.0;

/// What the `solve` callback of [`cg_reordered`] returns: a solve, and what renumbering
/// the system cost.
#[derive(Debug)]
pub struct Renumbered {
    /// The solve.
    pub result: Result<CgReport, CgError>,
    /// The locality of the renumbered matrix (`None` in the user's numbering).
    pub after: Option<Locality>,
    /// Time spent outside the solve: the renumbered matrix and vectors, the solution
    /// brought back (zero in the user's numbering).
    pub time: Duration,
}

/// [`cg`] for `params.reorder` other than [`Ordering::None`].
pub(super) fn reordered<T, B, A>(
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
    if op.nrows() != op.ncols() {
        return Err(CgError::NotSquare { nrows: op.nrows(), ncols: op.ncols() });
    }
    let a = op.host_matrix()?;
    cg_reordered(&a, params, backend.device_context().is_some(), &mut |p, params| match p {
        None => Ok(Renumbered { result: cg(backend, op, b, x, params), after: None, time: Duration::ZERO }),
        Some(p) => renumbered(backend, &a, p, b, x, params),
    })
}

/// The solve [`cg_reordered`] calls: in the user's numbering (`None`) or in the ordering
/// given, with the parameters given.
pub type SolveIn<'a> = dyn FnMut(Option<&Permutation>, &CgParams) -> Result<Renumbered, CgError> + 'a;

/// The locality ordering of a CG solve of `A x = b` ([`CgParams::reorder`]), for callers
/// that store and solve the system themselves (the command line, with its own progress
/// display): decides the ordering of `a` and calls `solve`, once or twice, with
/// [`Ordering::None`] in the parameters it passes.
///
/// `solve(None, params)` solves in the user's numbering from the current `x`;
/// `solve(Some(p), params)` solves `P A P^T (P x) = P b` from `P x` and leaves the solution
/// in the user's numbering. [`Ordering::Auto`] may call the first with a limit of a few
/// iterations (a probe), then either: both go on from the probe's iterate. The report
/// returned has [`CgReport::reorder`] set, the probe's iterations counted, and the
/// ordering's time in the setup. `on_device` says whether renumbering means copying the
/// matrix to and from a device (in [`Ordering::Auto`]'s estimate of its cost).
///
/// # Errors
///
/// A non-square `a`, and whatever `solve` returns.
pub fn cg_reordered<T: Scalar>(
    a: &CsrMatrix<T>,
    params: &CgParams,
    on_device: bool,
    solve: &mut SolveIn<'_>,
) -> Result<CgReport, CgError> {
    if a.nrows() != a.ncols() {
        return Err(CgError::NotSquare { nrows: a.nrows(), ncols: a.ncols() });
    }
    let started = Instant::now();
    let inner = CgParams { reorder: Ordering::None, ..params.clone() };
    let before = measure(a);
    let info = |ordering, reason: String, after, time, probe_iterations| ReorderInfo {
        requested: params.reorder,
        ordering,
        reason,
        before,
        after,
        time,
        probe_iterations,
    };
    let explicit = match params.reorder {
        Ordering::Rcm => Some(reorder::rcm(a)),
        Ordering::Graph => Some(reorder::graph_order(a)),
        _ => None,
    };
    let plain = |solve: &mut SolveIn<'_>, params: &CgParams| solve(None, params).map(|r| r.result);
    if let Some(p) = explicit {
        let ordered = started.elapsed();
        let r = solve(Some(&p), &inner)?;
        let reason = format!("{} asked for", params.reorder);
        return with_reorder(r.result, info(params.reorder, reason, r.after, ordered + r.time, 0), None);
    }
    // Auto: keep a numbering whose gathers already share sectors, at the cost of one
    // pass over the entries (a sample of them on large matrices).
    if before.sectors_per_entry < AUTO_SCATTERED || a.nrows() < 2 {
        let reason = format!(
            "kept: the numbering already shares the gathers of x ({:.2} sectors per entry, below {AUTO_SCATTERED})",
            before.sectors_per_entry
        );
        let decided = started.elapsed();
        return with_reorder(plain(solve, &inner)?, info(Ordering::None, reason, None, decided, 0), None);
    }
    if !matches!(params.preconditioner, PreconditionerKind::None | PreconditionerKind::Jacobi) {
        // A probe would build the multigrid hierarchy twice; a multigrid solve takes tens
        // of iterations, too few to repay an ordering computed on the host.
        let reason = format!(
            "kept: the gathers of x are scattered ({:.2} sectors per entry), but a {} solve takes too few \
             iterations to repay an ordering",
            before.sectors_per_entry,
            params.preconditioner.name()
        );
        let decided = started.elapsed();
        return with_reorder(plain(solve, &inner)?, info(Ordering::None, reason, None, decided, 0), None);
    }
    // The probe: a few iterations in the user's numbering.
    let max_iter = params.max_iter.unwrap_or_else(|| a.nrows().saturating_mul(10).max(100));
    let probe_params = CgParams { max_iter: Some(PROBE_ITERATIONS.min(max_iter)), history: true, ..inner.clone() };
    let decided = started.elapsed();
    let probe = match plain(solve, &probe_params)? {
        Err(CgError::NoConvergence { report })
            if report.stop_reason == StopReason::MaxIterations && report.iterations < max_iter =>
        {
            *report
        }
        other => {
            let reason = "kept: the solve ended within the probe's iterations".to_string();
            let other = other.map(|mut r| {
                r.history = r.history.filter(|_| params.history);
                r
            });
            return with_reorder(other, info(Ordering::None, reason, None, decided, 0), None);
        }
    };
    let started = Instant::now();
    let estimate = Estimate::of::<T>(a, &probe, before.sectors_per_entry, max_iter, on_device);
    let rest = CgParams { max_iter: Some(max_iter - probe.iterations), ..inner.clone() };
    let probed = probe.iterations;
    let probe = Some(probe);
    let keep = |reason: String, solve: &mut SolveIn<'_>| {
        let decided = decided + started.elapsed();
        with_reorder(plain(solve, &rest)?, info(Ordering::None, reason, None, decided, probed), probe.clone())
    };
    if estimate.saving < PAYBACK * estimate.cost {
        return keep(format!("kept: {}", estimate.describe()), solve);
    }
    let choice = reorder::choose_from(a, before);
    let Some(p) = choice.permutation else {
        return keep(format!("kept: {}; {}", estimate.describe(), choice.reason), solve);
    };
    let ordered = decided + started.elapsed();
    let r = solve(Some(&p), &rest)?;
    let reason = format!("{}; {}", choice.reason, estimate.describe());
    with_reorder(r.result, info(choice.ordering, reason, r.after, ordered + r.time, probed), probe)
}

/// The locality [`reorder::choose`] measures: of every row, or of a sample on large matrices.
fn measure<T: Scalar>(a: &CsrMatrix<T>) -> Locality {
    if a.nrows() > reorder::SAMPLE_ABOVE_ROWS {
        Locality::sampled(a)
    } else {
        Locality::of(a)
    }
}

/// Solves the system renumbered by `p` and brings `x` back.
fn renumbered<T, B>(
    backend: &B,
    a: &CsrMatrix<T>,
    p: &Permutation,
    b: &B::Vector,
    x: &mut B::Vector,
    params: &CgParams,
) -> Result<Renumbered, CgError>
where
    T: Scalar,
    B: Backend<T>,
{
    let started = Instant::now();
    let pa = p.permute_matrix(a)?;
    let after = measure(&pa);
    let m = backend.matrix(&pa)?;
    drop(pa);
    let pb = backend.upload(&p.permute_vector(&backend.download(b)?)?)?;
    let mut px = backend.upload(&p.permute_vector(&backend.download(x)?)?)?;
    let mut time = started.elapsed();
    let result = cg(backend, &m, &pb, &mut px, params);
    let back = Instant::now();
    let solution = backend.upload(&p.unpermute_vector(&backend.download(&px)?)?)?;
    backend.copy(&solution, x)?;
    time += back.elapsed();
    Ok(Renumbered { result, after: Some(after), time })
}

/// Puts `info` in a solve's report (its time in the setup), after the iterations of the
/// probe when there was one.
fn with_reorder(
    mut result: Result<CgReport, CgError>,
    info: ReorderInfo,
    probe: Option<CgReport>,
) -> Result<CgReport, CgError> {
    let report = match &mut result {
        Ok(report) => Some(report),
        Err(e) => e.report_mut(),
    };
    if let Some(report) = report {
        report.setup_time += info.time;
        if let Some(probe) = probe {
            report.iterations += probe.iterations;
            report.restarts += probe.restarts;
            report.setup_time += probe.setup_time;
            report.solve_time += probe.solve_time + probe.check_time;
            for w in probe.warnings {
                if !report.warnings.contains(&w) {
                    report.warnings.push(w);
                }
            }
            if let (Some(h), Some(first)) = (&mut report.history, probe.history) {
                // the probe's norms, then the rest's from its own start
                let mut all = first;
                all.extend_from_slice(h);
                *h = all;
            }
        }
        report.reorder = Some(info);
    }
    result
}

/// What [`Ordering::Auto`] expects of an ordering over the rest of a solve, from its probe.
struct Estimate {
    /// Iterations left, from the rate at which the probe's residual fell.
    iterations: usize,
    /// Seconds of an iteration in the probe.
    per_iteration: f64,
    /// The fraction of an iteration's bytes the ordering would save.
    fraction: f64,
    /// Seconds saved over the rest of the solve.
    saving: f64,
    /// Seconds the ordering would cost.
    cost: f64,
}

impl Estimate {
    fn of<T: Scalar>(a: &CsrMatrix<T>, probe: &CgReport, sectors: f64, max_iter: usize, device: bool) -> Self {
        let history = probe.history.as_deref().unwrap_or(&[]);
        let (first, last) = (history.first().copied().unwrap_or(probe.b_norm), probe.residual_norm);
        let k = probe.iterations.max(1) as f64;
        let rate = (last / first.max(f64::MIN_POSITIVE)).powf(1.0 / k);
        let left = max_iter.saturating_sub(probe.iterations);
        let iterations = if rate > 0.0 && rate < 1.0 && last > probe.tolerance {
            ((probe.tolerance / last).ln() / rate.ln()).ceil().min(left as f64) as usize
        } else {
            left
        };
        // An iteration's bytes with the gathers of x at `sectors` per entry, against the
        // floor's one read of x (docs/cg.md's model), then with an ordering's.
        let (n, nnz) = (a.nrows() as f64, a.nnz() as f64);
        let jacobi = probe.preconditioner == "jacobi";
        let floor = super::cg::iteration_floor_bytes(a.nrows(), a.nnz(), T::BYTES, jacobi) as f64;
        let sector = reorder::SECTOR_BYTES as f64;
        let gathers = |s: f64| (s * nnz * sector).max(n * T::BYTES as f64);
        let base = floor - n * T::BYTES as f64;
        let fraction = ((gathers(sectors) - gathers(EXPECTED_AFTER)) / (base + gathers(sectors))).max(0.0);
        let per_iteration = probe.time_per_iteration().as_secs_f64();
        let saving = iterations as f64 * per_iteration * fraction;
        let bytes = (a.nnz() * (4 + T::BYTES) + (a.nrows() + 1) * 4) as f64;
        let transfer = if device { 2.0 * bytes / TRANSFER_BYTES_PER_S } else { 0.0 };
        let cost = nnz * ORDER_NS_PER_ENTRY * 1e-9 + transfer;
        Estimate { iterations, per_iteration, fraction, saving, cost }
    }

    fn describe(&self) -> String {
        format!(
            "about {} iterations left at {:.3} ms, an ordering would save about {:.0}% of each ({:.1} ms in all) \
             against about {:.1} ms to compute it",
            self.iterations,
            self.per_iteration * 1e3,
            self.fraction * 100.0,
            self.saving * 1e3,
            self.cost * 1e3
        )
    }
}
