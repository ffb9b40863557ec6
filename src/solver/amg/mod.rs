//! Smoothed-aggregation algebraic multigrid (SA-AMG) as a CG preconditioner.
//!
//! The setup (on the host in `f64`, [`AmgHierarchy::build`]) makes a hierarchy of ever
//! smaller systems: strength of connection, aggregation by a distance-2 maximal
//! independent set (deterministic priorities, so every run and every backend makes the
//! same aggregates), a tentative prolongator from near-nullspace vectors (the constant
//! vector by default, rigid-body modes for elasticity: [`AmgParams::near_nullspace`]),
//! prolongator smoothing by one damped Jacobi step with a power-method estimate of
//! `rho(D^-1 A)`, Galerkin coarse operators `R A P` with `R = P^T`, and a dense inverse
//! of the coarsest system. [`Amg`] puts the hierarchy on a backend (each level's matrices
//! through the backend's own SpMV: on the device each gets its own
//! [`SpmvPlan`](crate::gpu::SpmvPlan)) and applies one symmetric V(1,1)-cycle per CG
//! iteration, with a Chebyshev (default, degree 2) or l1-Jacobi smoother. No step uses
//! floating-point atomics, so solves repeat bit for bit.
//!
//! # Example
//!
//! ```
//! use spgpu::{gen, solver::{cg, CgParams, Host, PreconditionerKind}};
//! let a = gen::laplacian_2d::<f64>(64);
//! let b = vec![1.0; a.nrows()];
//! let mut x = vec![0.0; a.nrows()];
//! let params = CgParams { preconditioner: PreconditionerKind::Amg, ..CgParams::default() };
//! let report = cg(&Host, &a, &b, &mut x, &params)?;
//! assert!(report.iterations <= 15);
//! let amg = report.amg.as_ref().unwrap();
//! assert!(amg.levels.len() >= 2 && amg.operator_complexity < 2.0);
//! # Ok::<(), spgpu::solver::CgError>(())
//! ```

mod cycle;
mod dense;
mod device_setup;
pub(crate) mod host_setup;
mod steps;

use super::backend::Backend;
use super::operator::LinearOperator;
use super::precond::{Preconditioner, PreconditionerKind};
use super::CgError;
use crate::{CsrMatrix, Result, Scalar};
use cycle::{
    chebyshev_coefficients, Cycle, LevelSpec, Steps, Transfer as CycleTransfer, CHEBYSHEV_LOWER, CHEBYSHEV_UPPER,
};
use device_setup::DeviceCsrParts;
use std::sync::Arc;
use std::time::{Duration, Instant};
use steps::{Coarsening, DeviceSteps, HostSteps, LevelMatrix, LevelSteps, PhaseTimes};

/// The smoother of every level of the cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Smoother {
    /// Chebyshev polynomial of `degree` steps on `D^-1 A`, over the interval
    /// `[lmax / 5, lmax]` with `lmax` the level's power-method estimate of `rho(D^-1 A)`
    /// (times 1.05).
    Chebyshev {
        /// Steps (SpMVs) per smoothing; at least 1 (default 2).
        degree: usize,
    },
    /// l1-Jacobi, `x += dl1^-1 (b - A x)` with `dl1_i = sum_j |a_ij|`, `sweeps` times.
    L1Jacobi {
        /// Sweeps per smoothing; at least 1.
        sweeps: usize,
    },
}

impl Default for Smoother {
    fn default() -> Self {
        Smoother::Chebyshev { degree: 2 }
    }
}

impl std::fmt::Display for Smoother {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Smoother::Chebyshev { degree } => write!(f, "Chebyshev of degree {degree}"),
            Smoother::L1Jacobi { sweeps } => write!(f, "l1-Jacobi, {sweeps} sweep(s)"),
        }
    }
}

/// How the cycle applies the smoothed prolongator `P = (I - omega D^-1 A) P_tent` and the
/// restriction `R = P^T` of level 0 (and, with [`FineTransfer::ImplicitAllLevels`], of
/// every level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FineTransfer {
    /// As that product, from the tentative prolongator `P_tent` (one entry per row and
    /// near-nullspace vector) and its transpose: `P` and `R`, the hierarchy's largest
    /// matrices after level 0's `A`, are not kept, for one more product by `A` each way per
    /// cycle. With the Chebyshev smoother only (it uses the smoother's `1 / a_ii`); the
    /// l1-Jacobi smoother stores them.
    #[default]
    Implicit,
    /// As [`FineTransfer::Implicit`] on every level, not only level 0: less memory again
    /// (on the H200, `lap3d:150`'s hierarchy 1.47x the matrix against 1.79x), for a V-cycle
    /// 7-10% longer.
    ImplicitAllLevels,
    /// `P` and `R` stored as matrices.
    Stored,
}

impl FineTransfer {
    /// Whether level `level`'s `P` and `R` are applied from `P_tent`.
    fn implicit_on(self, level: usize) -> bool {
        match self {
            FineTransfer::Implicit => level == 0,
            FineTransfer::ImplicitAllLevels => true,
            FineTransfer::Stored => false,
        }
    }
}

impl std::fmt::Display for FineTransfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FineTransfer::Implicit => "implicit",
            FineTransfer::ImplicitAllLevels => "implicit-all-levels",
            FineTransfer::Stored => "stored",
        })
    }
}

/// Parameters of the AMG setup; [`AmgParams::default`] suits Poisson-like problems.
#[derive(Debug, Clone, PartialEq)]
pub struct AmgParams {
    /// Strength threshold: `j` is a strong neighbour of `i` when `|a_ij| >= theta *
    /// sqrt(|a_ii a_jj|)` (default 0: every stored off-diagonal entry).
    pub theta: f64,
    /// The strength threshold of the coarse levels (level 1 and below; default
    /// [`COARSE_THETA`]). The Galerkin operators have weak couplings that a zero threshold
    /// counts as strong, which makes their aggregates large. A level on which the threshold
    /// leaves too few connections to coarsen is coarsened with a threshold of 0.
    pub coarse_theta: f64,
    /// Stop coarsening at this many rows or fewer (default 500); the coarsest system is
    /// solved by a dense inverse.
    pub max_coarse: usize,
    /// Most levels, the finest included (default 10).
    pub max_levels: usize,
    /// The smoother (default Chebyshev of degree 2).
    pub smoother: Smoother,
    /// Near-nullspace vectors (`n x k`, column-major: `k` columns of `n` rows, `n` the
    /// matrix's rows), which the coarse spaces reproduce exactly; `None` (the default) is the
    /// constant vector. For 3D elasticity the six rigid-body modes
    /// ([`gen::rigid_body_modes`](crate::gen::rigid_body_modes)) with `block_size` 3.
    pub near_nullspace: Option<Vec<f64>>,
    /// Unknowns per node (default 1): rows `bs*I .. bs*I + bs` are node `I`, aggregated
    /// together (3 for 3D elasticity).
    pub block_size: usize,
    /// Where the setup runs (default [`SetupPlace::Auto`]: on the GPU when the backend is
    /// the device).
    pub setup: SetupPlace,
    /// How the cycle applies level 0's `P` and `R` (default [`FineTransfer::Implicit`]).
    pub fine_transfer: FineTransfer,
}

impl AmgParams {
    /// How level 0's `P` and `R` are applied with these parameters: [`FineTransfer::Stored`]
    /// with the l1-Jacobi smoother, whatever `fine_transfer` asks.
    pub fn effective_fine_transfer(&self) -> FineTransfer {
        match self.smoother {
            Smoother::Chebyshev { .. } => self.fine_transfer,
            Smoother::L1Jacobi { .. } => FineTransfer::Stored,
        }
    }
}

/// Where [`Amg::build`] runs the setup. Both places make the same aggregates and
/// prolongator patterns; values agree up to the grouping of the power method's sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SetupPlace {
    /// On the backend's GPU when it has one ([`Backend::device_context`]), else on the host.
    #[default]
    Auto,
    /// On the host (rayon), whatever the backend.
    Host,
    /// On the GPU: the backend's, or the default device for a host backend.
    Device,
}

impl std::fmt::Display for SetupPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SetupPlace::Auto => "auto",
            SetupPlace::Host => "host",
            SetupPlace::Device => "device",
        })
    }
}

impl Default for AmgParams {
    fn default() -> Self {
        AmgParams {
            theta: 0.0,
            coarse_theta: COARSE_THETA,
            max_coarse: 500,
            max_levels: 10,
            smoother: Smoother::default(),
            near_nullspace: None,
            block_size: 1,
            setup: SetupPlace::Auto,
            fine_transfer: FineTransfer::Implicit,
        }
    }
}

/// The default strength threshold of the coarse levels ([`AmgParams::coarse_theta`]).
pub const COARSE_THETA: f64 = 0.05;

/// Coarsening stops when a level would keep more than `1 / COARSEN_FACTOR` of its rows.
const COARSEN_FACTOR: f64 = 1.2;

/// The coarsest level is inverted densely up to this many rows; past it (coarsening stopped
/// by `max_levels` or by a slow rate) it is smoothed instead.
pub const DENSE_LIMIT: usize = 2000;

/// The part of a level that leads to the next, coarser one, its matrices stored as `M`.
#[derive(Debug, Clone, PartialEq)]
struct Transfer<M> {
    /// How the level coarsened: the aggregates (and, from the host setup, the strength graph
    /// and MIS-2 states), kept for a numeric re-setup.
    coarsening: Coarsening,
    p_tent: M,
    p: M,
    r: M,
}

/// One level of a hierarchy, its matrices stored as `M`: `CsrMatrix<f64>` on the host,
/// `DeviceCsrParts` for a hierarchy that stays on the GPU.
#[derive(Debug, Clone, PartialEq)]
struct Level<M> {
    a: M,
    block_size: usize,
    rho: f64,
    transfer: Option<Transfer<M>>,
}

/// One level of an [`AmgHierarchy`], on the host in `f64`.
#[derive(Debug, Clone, PartialEq)]
pub struct AmgLevel(Level<CsrMatrix<f64>>);

impl AmgLevel {
    /// The level's matrix (`A` itself on level 0, `R A P` of the level above otherwise).
    pub fn matrix(&self) -> &CsrMatrix<f64> {
        &self.0.a
    }

    /// Unknowns per node on this level (the near-nullspace's column count below level 0).
    pub fn block_size(&self) -> usize {
        self.0.block_size
    }

    /// The power-method estimate of `rho(D^-1 A)` (times the safety factor 1.05).
    pub fn spectral_radius(&self) -> f64 {
        self.0.rho
    }

    /// The strength graph on the nodes, as CSR offsets and sorted columns (diagonal left
    /// out); `None` on the coarsest level, and on every level of a hierarchy built on the
    /// device (which does not copy it to the host).
    pub fn strength(&self) -> Option<(&[u64], &[u32])> {
        self.0.transfer.as_ref()?.coarsening.strength.as_ref().map(|s| (&s.offsets[..], &s.cols[..]))
    }

    /// The aggregate of every node, and the number of aggregates; `None` on the coarsest
    /// level.
    pub fn aggregates(&self) -> Option<(&[u32], usize)> {
        self.0.transfer.as_ref().map(|t| (&t.coarsening.aggregates[..], t.coarsening.count))
    }

    /// The roots of the aggregates (the distance-2 independent set), in increasing order
    /// (root `k` is the root of aggregate `k`); `None` on the coarsest level, and on every
    /// level of a hierarchy built on the device.
    pub fn roots(&self) -> Option<Vec<usize>> {
        let states = self.0.transfer.as_ref()?.coarsening.states.as_ref()?;
        Some((0..states.len()).filter(|&i| states[i] == host_setup::ROOT).collect())
    }

    /// The tentative prolongator (orthonormal columns per aggregate); `None` on the
    /// coarsest level.
    pub fn tentative_prolongator(&self) -> Option<&CsrMatrix<f64>> {
        self.0.transfer.as_ref().map(|t| &t.p_tent)
    }

    /// The smoothed prolongator `P` to the next level; `None` on the coarsest.
    pub fn prolongator(&self) -> Option<&CsrMatrix<f64>> {
        self.0.transfer.as_ref().map(|t| &t.p)
    }

    /// The restriction `R = P^T`; `None` on the coarsest.
    pub fn restriction(&self) -> Option<&CsrMatrix<f64>> {
        self.0.transfer.as_ref().map(|t| &t.r)
    }
}

/// What a build made, its level matrices stored as `M` (on the host for an
/// [`AmgHierarchy`], on the device for a hierarchy that [`Amg`] keeps there).
struct Built<M> {
    levels: Vec<Level<M>>,
    coarse_inverse: Option<CsrMatrix<f64>>,
    params: AmgParams,
    setup_time: Duration,
    /// Where the steps ran, and the time of each kind of step.
    setup_place: &'static str,
    setup_phases: Vec<(&'static str, Duration)>,
    /// The row statistics of level 0, from the host matrix (the device setup's, so that
    /// the cycle's level 0 need not read its offsets back).
    level0_stats: Option<crate::format::RowStats>,
}

impl<M: LevelMatrix> Built<M> {
    /// What the hierarchy is, for reports.
    fn info(&self) -> AmgInfo {
        info_of(
            self.levels.iter(),
            self.coarse_inverse.as_ref().map_or(0, CsrMatrix::nnz),
            &self.params,
            self.setup_time,
            self.setup_place,
            &self.setup_phases,
        )
    }

    /// The aggregates of every level but the coarsest, for a numeric re-setup.
    fn coarsenings(&self) -> Vec<Coarsening> {
        self.levels.iter().filter_map(|l| l.transfer.as_ref().map(|t| t.coarsening.clone())).collect()
    }
}

/// The report of a hierarchy of `levels`, whose coarsest inverse stores `coarse_entries`.
fn info_of<'a, M: LevelMatrix + 'a>(
    levels: impl Iterator<Item = &'a Level<M>> + Clone,
    coarse_entries: usize,
    params: &AmgParams,
    setup_time: Duration,
    setup_place: &'static str,
    setup_phases: &[(&'static str, Duration)],
) -> AmgInfo {
    let first = levels.clone().next().expect("a hierarchy has a level");
    let rows0 = first.a.nrows().max(1) as f64;
    let nnz0 = first.a.nnz().max(1) as f64;
    let infos: Vec<AmgLevelInfo> = levels
        .clone()
        .map(|l| {
            let bounds = match params.smoother {
                Smoother::Chebyshev { .. } => Some((l.rho * CHEBYSHEV_LOWER, l.rho * CHEBYSHEV_UPPER)),
                Smoother::L1Jacobi { .. } => None,
            };
            AmgLevelInfo { rows: l.a.nrows(), entries: l.a.nnz(), block_size: l.block_size, rho: l.rho, bounds }
        })
        .collect();
    let transfer_entries: usize = levels.filter_map(|l| l.transfer.as_ref()).map(|t| t.p.nnz() + t.r.nnz()).sum();
    AmgInfo {
        operator_complexity: infos.iter().map(|l| l.entries as f64).sum::<f64>() / nnz0,
        grid_complexity: infos.iter().map(|l| l.rows as f64).sum::<f64>() / rows0,
        hierarchy_entries: infos.iter().map(|l| l.entries).sum::<usize>() + transfer_entries + coarse_entries,
        levels: infos,
        setup_time,
        setup_place,
        setup_phases: setup_phases.to_vec(),
        smoother: params.smoother,
        coarse_solve: if coarse_entries > 0 { "dense inverse" } else { "smoother" },
        fine_transfer: params.effective_fine_transfer(),
        auto_reason: None,
        memory: None,
    }
}

/// A smoothed-aggregation hierarchy on the host, in `f64`: the levels that [`Amg`] puts on a
/// backend.
#[derive(Debug, Clone, PartialEq)]
pub struct AmgHierarchy {
    levels: Vec<AmgLevel>,
    coarse_inverse: Option<CsrMatrix<f64>>,
    params: AmgParams,
    setup_time: Duration,
    /// Where the steps ran, and the time of each kind of step.
    setup_place: &'static str,
    setup_phases: Vec<(&'static str, Duration)>,
}

impl From<Built<CsrMatrix<f64>>> for AmgHierarchy {
    fn from(b: Built<CsrMatrix<f64>>) -> Self {
        AmgHierarchy {
            levels: b.levels.into_iter().map(AmgLevel).collect(),
            coarse_inverse: b.coarse_inverse,
            params: b.params,
            setup_time: b.setup_time,
            setup_place: b.setup_place,
            setup_phases: b.setup_phases,
        }
    }
}

/// Why the Auto choice gave AMG up while building it.
struct Abandoned(String);

/// A build's result: the hierarchy, or why the Auto choice gave it up.
type Outcome<M> = std::result::Result<std::result::Result<Built<M>, Abandoned>, CgError>;

/// Limits under which [`PreconditionerKind::Auto`] keeps AMG.
pub const AUTO_MIN_COARSENING: f64 = 2.0;
/// The largest operator complexity [`PreconditionerKind::Auto`] keeps AMG with.
pub const AUTO_MAX_OPERATOR_COMPLEXITY: f64 = 2.5;
/// Longest row over mean row length past which [`PreconditionerKind::Auto`] takes Jacobi
/// without building AMG (power-law, R-MAT and web-like graphs: aggregates around hubs make
/// coarse operators dense, while Jacobi-CG converges there in a few dozen iterations).
pub const AUTO_SKEW_LIMIT: f64 = 8.0;
/// `min_i a_ii / sum_{j != i} |a_ij|` from which [`PreconditionerKind::Auto`] takes Jacobi
/// without building AMG: then `cond(D^-1 A) <= 5` and Jacobi-CG needs only a handful of
/// iterations, fewer than AMG's setup costs.
pub const AUTO_DOMINANCE_LIMIT: f64 = 1.5;

/// The first row of the square `a` whose diagonal entry is not finite and positive (0 when
/// absent), and that entry: rows in parallel pieces, each row's diagonal found by a short
/// linear scan (a binary search in long rows).
fn first_bad_diagonal(a: &CsrMatrix<f64>) -> Option<(usize, f64)> {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 14;
    let (offsets, cols, vals) = (a.row_offsets(), a.col_indices(), a.values());
    let diagonal = |i: usize| -> f64 {
        let (lo, hi) = (offsets[i] as usize, offsets[i + 1] as usize);
        let row = &cols[lo..hi];
        let at = if row.len() <= 16 {
            row.iter().position(|&c| c as usize == i)
        } else {
            row.binary_search(&(i as u32)).ok()
        };
        at.map_or(0.0, |k| vals[lo + k])
    };
    let n = a.nrows();
    (0..n.div_ceil(PIECE)).into_par_iter().find_map_first(|p| {
        (p * PIECE..((p + 1) * PIECE).min(n)).map(|i| (i, diagonal(i))).find(|&(_, d)| !(d.is_finite() && d > 0.0))
    })
}

/// Checks `a` and `params` for a build; returns the number of near-nullspace vectors.
fn validate(a: &CsrMatrix<f64>, params: &AmgParams) -> std::result::Result<usize, CgError> {
    let n = a.nrows();
    if a.ncols() != n {
        return Err(CgError::NotSquare { nrows: n, ncols: a.ncols() });
    }
    // in parallel and without a copy of the diagonal: the first bad row, as a serial scan
    if let Some((row, value)) = first_bad_diagonal(a) {
        return Err(CgError::InvalidDiagonal { row, value });
    }
    let bs = params.block_size;
    if bs == 0 || n % bs != 0 {
        return Err(CgError::InvalidParams(format!(
            "AMG block_size {bs} does not divide the {n} rows of the matrix into nodes"
        )));
    }
    if !(params.theta.is_finite() && params.theta >= 0.0) {
        return Err(CgError::InvalidParams(format!("AMG theta must be finite and >= 0, got {}", params.theta)));
    }
    if !(params.coarse_theta.is_finite() && params.coarse_theta >= 0.0) {
        return Err(CgError::InvalidParams(format!(
            "AMG coarse_theta must be finite and >= 0, got {}",
            params.coarse_theta
        )));
    }
    if params.max_levels == 0 {
        return Err(CgError::InvalidParams("AMG max_levels must be at least 1".into()));
    }
    match params.smoother {
        Smoother::Chebyshev { degree: 0 } => {
            return Err(CgError::InvalidParams("the Chebyshev smoother's degree must be at least 1".into()))
        }
        Smoother::L1Jacobi { sweeps: 0 } => {
            return Err(CgError::InvalidParams("the l1-Jacobi smoother needs at least 1 sweep".into()))
        }
        _ => {}
    }
    let k = match &params.near_nullspace {
        None => 1,
        Some(b) => {
            if n == 0 || b.is_empty() || b.len() % n != 0 {
                return Err(CgError::NearNullspace { rows: n, found: b.len() });
            }
            if b.iter().any(|v| !v.is_finite()) {
                return Err(CgError::InvalidParams("the AMG near-nullspace has non-finite entries".into()));
            }
            b.len() / n
        }
    };
    Ok(k)
}

/// Builds the levels from `a` (level 0, already where `steps` computes) with `steps`:
/// `fixed` gives the aggregates of every level (a numeric re-setup: no coarsening, the same
/// number of levels), `auto` gives AMG up as [`build_auto`] says. `host_a` is level 0 on
/// the host, already checked by [`validate`], which found `k` near-nullspace vectors;
/// `started` is when the setup began, `before` the phases timed before the steps.
#[allow(clippy::too_many_arguments)]
fn build_levels<S: LevelSteps>(
    steps: &mut S,
    host_a: &CsrMatrix<f64>,
    a: S::Matrix,
    k: usize,
    params: &AmgParams,
    auto: bool,
    fixed: Option<Vec<Coarsening>>,
    started: Instant,
    before: Vec<(&'static str, Duration)>,
    setup_place: &'static str,
) -> Outcome<S::Matrix> {
    let nnz0 = host_a.nnz().max(1) as f64;
    // empty: the constant vector, which the steps make where they run
    let mut b = params.near_nullspace.clone().unwrap_or_default();
    let mut bs = params.block_size;
    let mut a = a;
    let mut levels: Vec<Level<S::Matrix>> = Vec::new();
    let mut entries = host_a.nnz() as f64;
    let mut fixed = fixed.map(Vec::into_iter);
    loop {
        let n = a.nrows();
        let rho = steps.rho(&a)?;
        let given = fixed.as_mut().map(|f| f.next());
        let last = match &given {
            Some(g) => g.is_none(),
            None => n <= params.max_coarse || levels.len() + 1 >= params.max_levels,
        };
        let transfer = if last {
            None
        } else {
            let c = match given.flatten() {
                Some(c) => c,
                None => {
                    let theta = if levels.is_empty() { params.theta } else { params.coarse_theta };
                    let c = steps.coarsen(&a, theta, bs)?;
                    if theta > 0.0 && (c.count == 0 || (c.count * k) as f64 * COARSEN_FACTOR > n as f64) {
                        // dropping the weak connections left too few to coarsen: all of them count
                        steps.coarsen(&a, 0.0, bs)?
                    } else {
                        c
                    }
                }
            };
            let nc = c.count * k;
            if auto && levels.is_empty() && nc as f64 * AUTO_MIN_COARSENING > n as f64 {
                return Ok(Err(Abandoned(format!(
                    "AMG's first level coarsens {n} rows to {nc} ({:.2}x, below {AUTO_MIN_COARSENING}x)",
                    n as f64 / nc.max(1) as f64
                ))));
            }
            if fixed.is_none() && (nc == 0 || nc as f64 * COARSEN_FACTOR > n as f64) {
                None
            } else {
                let ops = steps.operators(&a, &c, bs, &b, k, rho)?;
                entries += ops.ac.nnz() as f64;
                if auto && entries / nnz0 > AUTO_MAX_OPERATOR_COMPLEXITY {
                    return Ok(Err(Abandoned(format!(
                        "AMG's operator complexity passes {AUTO_MAX_OPERATOR_COMPLEXITY} at level {} ({:.2})",
                        levels.len() + 1,
                        entries / nnz0
                    ))));
                }
                b = ops.bc;
                Some((Transfer { coarsening: c, p_tent: ops.p_tent, p: ops.p, r: ops.r }, ops.ac))
            }
        };
        match transfer {
            Some((t, ac)) => {
                levels.push(Level { a, block_size: bs, rho, transfer: Some(t) });
                a = ac;
                bs = k;
            }
            None => {
                levels.push(Level { a, block_size: bs, rho, transfer: None });
                break;
            }
        }
    }
    let t = Instant::now();
    let last = levels.len() - 1;
    let coarse_inverse = if levels[last].a.nrows() > DENSE_LIMIT {
        None
    } else {
        let coarsest = steps.to_host(&levels[last].a)?;
        Some(coarse_inverse(&coarsest, last)?)
    };
    let mut setup_phases = before;
    setup_phases.extend(steps.phases().0.iter().copied());
    setup_phases.push(("coarsest inverse", t.elapsed()));
    Ok(Ok(Built {
        levels,
        coarse_inverse,
        params: params.clone(),
        setup_time: started.elapsed(),
        setup_place,
        setup_phases,
        level0_stats: None,
    }))
}

/// `a` in `f64`, the setup's precision: itself when it is, else a rounded copy.
fn in_f64<T: Scalar>(a: &CsrMatrix<T>) -> std::borrow::Cow<'_, CsrMatrix<f64>> {
    match (a as &dyn std::any::Any).downcast_ref::<CsrMatrix<f64>>() {
        Some(a) => std::borrow::Cow::Borrowed(a),
        None => std::borrow::Cow::Owned(a.cast::<f64>()),
    }
}

/// Builds on the host.
fn build_on_host(
    a: &CsrMatrix<f64>,
    params: &AmgParams,
    auto: bool,
    fixed: Option<Vec<Coarsening>>,
) -> Outcome<CsrMatrix<f64>> {
    let started = Instant::now();
    let k = validate(a, params)?;
    let checks = vec![(CHECKS, started.elapsed())];
    build_levels(&mut HostSteps::default(), a, a.clone(), k, params, auto, fixed, started, checks, "host")
}

/// The phase of [`validate`].
const CHECKS: &str = "checks of the matrix";

/// Builds on the GPU of `ctx`; the levels stay there.
fn build_resident(
    ctx: &'static crate::gpu::Context,
    a: &CsrMatrix<f64>,
    params: &AmgParams,
    auto: bool,
    fixed: Option<Vec<Coarsening>>,
) -> Outcome<DeviceCsrParts> {
    let started = Instant::now();
    // the checks before the upload, which would refuse a bad matrix less clearly
    let k = validate(a, params)?;
    let checked = started.elapsed();
    let t = Instant::now();
    let da = DeviceCsrParts::upload(ctx, a).map_err(CgError::from)?;
    ctx.synchronize().map_err(CgError::from)?;
    let before = vec![(CHECKS, checked), ("upload of level 0", t.elapsed())];
    let outcome = build_levels(&mut DeviceSteps::new(ctx), a, da, k, params, auto, fixed, started, before, "device");
    outcome.map(|o| o.map(|built| Built { level0_stats: Some(a.row_stats()), ..built }))
}

/// The result of a build that cannot be abandoned.
fn kept<M>(outcome: Outcome<M>) -> std::result::Result<Built<M>, CgError> {
    match outcome? {
        Ok(b) => Ok(b),
        Err(Abandoned(_)) => unreachable!("only the Auto choice abandons"),
    }
}

impl AmgHierarchy {
    /// Builds the hierarchy of `a` (square, symmetric, positive diagonal) with `params`, on
    /// the host whatever `params.setup` says ([`Amg::build`] follows it;
    /// [`AmgHierarchy::build_on_device`] runs on a GPU).
    ///
    /// # Errors
    ///
    /// [`CgError::NotSquare`]; [`CgError::InvalidDiagonal`] for the first diagonal entry
    /// that is zero, negative or not finite; [`CgError::NearNullspace`] for near-nullspace
    /// vectors of the wrong length; [`CgError::InvalidParams`] for a block size that does
    /// not divide the rows, a non-finite or negative `theta`, zero `max_levels`, degree or
    /// sweeps; [`CgError::CoarseNotPositiveDefinite`] when the coarsest system is not
    /// positive definite (then neither is `a`); [`CgError::Backend`] when a product
    /// exceeds the index limits.
    pub fn build(a: &CsrMatrix<f64>, params: &AmgParams) -> std::result::Result<Self, CgError> {
        Ok(kept(build_on_host(a, params, false, None))?.into())
    }

    /// Builds the hierarchy as [`AmgHierarchy::build`] with the setup's steps on the GPU
    /// of `ctx` (strength, aggregation, prolongators and the Galerkin products in the
    /// device's own kernels, deterministic), then copies every level to the host. ([`Amg`]
    /// with a device backend keeps the levels on the GPU instead.)
    ///
    /// # Errors
    ///
    /// Those of [`AmgHierarchy::build`]; [`CgError::Backend`] with
    /// [`Error::InsufficientMemory`](crate::Error::InsufficientMemory) (and the estimate)
    /// when a step would not fit in the device's free memory, checked before it allocates.
    pub fn build_on_device(
        ctx: &'static crate::gpu::Context,
        a: &CsrMatrix<f64>,
        params: &AmgParams,
    ) -> std::result::Result<Self, CgError> {
        let built = kept(build_resident(ctx, a, params, false, None))?;
        let t = Instant::now();
        let download = |m: &DeviceCsrParts| m.download().map_err(CgError::from);
        let mut levels = Vec::with_capacity(built.levels.len());
        for l in &built.levels {
            let transfer = match &l.transfer {
                Some(t) => Some(Transfer {
                    coarsening: t.coarsening.to_host().map_err(CgError::from)?,
                    p_tent: download(&t.p_tent)?,
                    p: download(&t.p)?,
                    r: download(&t.r)?,
                }),
                None => None,
            };
            levels.push(Level { a: download(&l.a)?, block_size: l.block_size, rho: l.rho, transfer });
        }
        let mut phases = built.setup_phases;
        phases.push(("downloads of the levels", t.elapsed()));
        Ok(Built {
            levels,
            coarse_inverse: built.coarse_inverse,
            params: built.params,
            setup_time: built.setup_time + t.elapsed(),
            setup_place: built.setup_place,
            setup_phases: phases,
            level0_stats: None,
        }
        .into())
    }

    /// Redoes the numeric part for new values of `A` on the same pattern: the same
    /// aggregates and tentative prolongators, new `rho`, `P`, `R = P^T`, coarse matrices and
    /// coarsest inverse (on the host).
    ///
    /// # Errors
    ///
    /// [`CgError::InvalidParams`] when `a` does not have the pattern the hierarchy was built
    /// on; [`CgError::InvalidDiagonal`] and [`CgError::CoarseNotPositiveDefinite`] as
    /// [`AmgHierarchy::build`].
    pub fn update_values(&mut self, a: &CsrMatrix<f64>) -> std::result::Result<(), CgError> {
        let started = Instant::now();
        check_pattern(self.levels[0].matrix(), a)?;
        let fixed = self.levels.iter().filter_map(|l| l.0.transfer.as_ref().map(|t| t.coarsening.clone())).collect();
        let mut fresh: AmgHierarchy = kept(build_on_host(a, &self.params, false, Some(fixed)))?.into();
        fresh.setup_time = started.elapsed();
        fresh.setup_phases = vec![("numeric re-setup", fresh.setup_time)];
        *self = fresh;
        Ok(())
    }

    /// The levels, finest first.
    pub fn levels(&self) -> &[AmgLevel] {
        &self.levels
    }

    /// The dense inverse of the coarsest matrix (every entry stored), or `None` when the
    /// coarsest level has more than [`DENSE_LIMIT`] rows and is smoothed instead.
    pub fn coarse_inverse(&self) -> Option<&CsrMatrix<f64>> {
        self.coarse_inverse.as_ref()
    }

    /// The parameters it was built with.
    pub fn params(&self) -> &AmgParams {
        &self.params
    }

    /// What the hierarchy is, for reports.
    pub fn info(&self) -> AmgInfo {
        info_of(
            self.levels.iter().map(|l| &l.0),
            self.coarse_inverse.as_ref().map_or(0, CsrMatrix::nnz),
            &self.params,
            self.setup_time,
            self.setup_place,
            &self.setup_phases,
        )
    }
}

/// `Err(InvalidParams)` unless `new` has the pattern of `old` (a numeric re-setup's input).
fn check_pattern<T: Scalar, U: Scalar>(old: &CsrMatrix<T>, new: &CsrMatrix<U>) -> std::result::Result<(), CgError> {
    if new.nrows() != old.nrows()
        || new.ncols() != old.ncols()
        || new.row_offsets() != old.row_offsets()
        || new.col_indices() != old.col_indices()
    {
        return Err(CgError::InvalidParams(
            "AMG update_values: the new matrix does not have the pattern the hierarchy was built on; build a new \
             preconditioner"
                .into(),
        ));
    }
    Ok(())
}

/// The dense inverse of the coarsest level `a` (level `level`).
fn coarse_inverse(a: &CsrMatrix<f64>, level: usize) -> std::result::Result<CsrMatrix<f64>, CgError> {
    dense::cholesky_inverse(a).map_err(|e| CgError::CoarseNotPositiveDefinite { level, row: e.row, pivot: e.pivot })
}

/// One level in an [`AmgInfo`].
#[derive(Debug, Clone, PartialEq)]
pub struct AmgLevelInfo {
    /// Rows.
    pub rows: usize,
    /// Stored entries of the level's matrix.
    pub entries: usize,
    /// Unknowns per node.
    pub block_size: usize,
    /// The estimate of `rho(D^-1 A)`.
    pub rho: f64,
    /// The Chebyshev smoother's eigenvalue interval on this level (`None` for l1-Jacobi).
    pub bounds: Option<(f64, f64)>,
}

/// What an AMG hierarchy is: levels, complexities, setup time, smoother.
#[derive(Debug, Clone, PartialEq)]
pub struct AmgInfo {
    /// The levels, finest first.
    pub levels: Vec<AmgLevelInfo>,
    /// `sum nnz(A_l) / nnz(A_0)`.
    pub operator_complexity: f64,
    /// `sum rows(A_l) / rows(A_0)`.
    pub grid_complexity: f64,
    /// Stored entries of every matrix of the hierarchy: the levels' `A`, `P` and `R`, and
    /// the coarsest inverse.
    pub hierarchy_entries: usize,
    /// Time to build the hierarchy and put it on the backend.
    pub setup_time: Duration,
    /// Where the hierarchy's steps ran: `"host"` or `"device"`.
    pub setup_place: &'static str,
    /// The setup time by phase (the hierarchy's steps, the coarsest inverse, the upload of
    /// the levels to the backend).
    pub setup_phases: Vec<(&'static str, Duration)>,
    /// The smoother.
    pub smoother: Smoother,
    /// How the coarsest level is solved: `"dense inverse"` or `"smoother"`.
    pub coarse_solve: &'static str,
    /// How the cycle applies level 0's `P` and `R`.
    pub fine_transfer: FineTransfer,
    /// Why [`PreconditionerKind::Auto`] chose AMG, when it did.
    pub auto_reason: Option<String>,
    /// The bytes the hierarchy holds on its backend, against the finest matrix's; `None`
    /// where the backend does not count them ([`Backend::matrix_bytes`]).
    pub memory: Option<AmgMemory>,
}

/// The memory of an AMG hierarchy on its backend, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AmgMemory {
    /// The finest level's matrix, in the storage its SpMV plan chose.
    pub matrix: u64,
    /// Everything else the preconditioner holds: the coarser levels' matrices, `P` and
    /// `R`, the inverse diagonals, the coarsest inverse and the cycle's work vectors.
    pub hierarchy: u64,
}

impl AmgMemory {
    /// `hierarchy / matrix`: the device memory the preconditioner adds, as a multiple of
    /// the matrix's own.
    pub fn ratio(&self) -> f64 {
        self.hierarchy as f64 / self.matrix.max(1) as f64
    }
}

impl AmgInfo {
    /// The levels as a table, one line each, then the complexities.
    pub fn table(&self) -> String {
        let mut out = String::from("level        rows       entries  per row  rho(D^-1 A)\n");
        for (l, info) in self.levels.iter().enumerate() {
            out += &format!(
                "{l:>5} {:>11} {:>13} {:>8.1} {:>12.4}\n",
                info.rows,
                info.entries,
                info.entries as f64 / info.rows.max(1) as f64,
                info.rho
            );
        }
        out += &format!(
            "operator complexity {:.3}, grid complexity {:.3}; smoother {}; coarsest level: {}",
            self.operator_complexity, self.grid_complexity, self.smoother, self.coarse_solve
        );
        if self.levels.len() > 1 {
            out += match self.fine_transfer {
                FineTransfer::Implicit => "; level 0's P and R applied from P_tent (not stored)",
                FineTransfer::ImplicitAllLevels => "; every level's P and R applied from P_tent (not stored)",
                FineTransfer::Stored => "; level 0's P and R stored",
            };
        }
        if let Some(m) = self.memory {
            out += &format!(
                "\nmemory: the hierarchy {:.1} MB = {:.2}x the matrix's {:.1} MB",
                m.hierarchy as f64 / 1e6,
                m.ratio(),
                m.matrix as f64 / 1e6
            );
        }
        out
    }
}

/// What [`PreconditionerKind::Auto`] chose, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoChoice {
    /// [`PreconditionerKind::Amg`], [`PreconditionerKind::Jacobi`] or
    /// [`PreconditionerKind::None`].
    pub chosen: PreconditionerKind,
    /// Why, in a sentence.
    pub reason: String,
}

/// The choice of [`PreconditionerKind::Auto`] that row statistics alone can make, before
/// any AMG setup: `None` on a diagonal entry that is not positive; Jacobi when the longest
/// row is more than [`AUTO_SKEW_LIMIT`] times the mean or every row is diagonally
/// dominant by [`AUTO_DOMINANCE_LIMIT`]. `None` (the `Option`) means: build AMG and see.
pub fn auto_precheck<T: Scalar>(a: &CsrMatrix<T>) -> Option<AutoChoice> {
    let n = a.nrows();
    let mut dominance = f64::INFINITY;
    for i in 0..n {
        let (cols, vals) = a.row(i);
        let (mut diag, mut off) = (0.0f64, 0.0f64);
        for (&c, &v) in cols.iter().zip(vals) {
            if c as usize == i {
                diag = v.to_f64();
            } else {
                off += v.to_f64().abs();
            }
        }
        if !(diag.is_finite() && diag > 0.0) {
            return Some(AutoChoice {
                chosen: PreconditionerKind::None,
                reason: format!(
                    "diagonal entry at row {i} is {diag}: neither Jacobi nor AMG applies without a positive diagonal"
                ),
            });
        }
        dominance = dominance.min(if off > 0.0 { diag / off } else { f64::INFINITY });
    }
    let stats = a.row_stats();
    let skew = stats.max as f64 / stats.mean.max(f64::MIN_POSITIVE);
    if skew > AUTO_SKEW_LIMIT {
        return Some(AutoChoice {
            chosen: PreconditionerKind::Jacobi,
            reason: format!(
                "skewed degrees: the longest row has {} entries, {skew:.1}x the mean of {:.1} (above \
                 {AUTO_SKEW_LIMIT}x): aggregates around hubs make AMG's coarse levels dense, and Jacobi-CG converges \
                 quickly on such graphs",
                stats.max, stats.mean
            ),
        });
    }
    if dominance >= AUTO_DOMINANCE_LIMIT {
        return Some(AutoChoice {
            chosen: PreconditionerKind::Jacobi,
            reason: format!(
                "every row is diagonally dominant by {dominance:.2}x (at least {AUTO_DOMINANCE_LIMIT}x): \
                 cond(D^-1 A) is small and Jacobi-CG needs fewer iterations than AMG's setup costs"
            ),
        });
    }
    None
}

/// The choice of [`PreconditionerKind::Auto`] for a matrix on the device, from its diagonal
/// alone: none when a diagonal entry is not positive (neither Jacobi nor AMG applies), else
/// Jacobi. AMG's setup runs on the GPU and its levels stay there, but on the H200 (commit
/// a337ee0, rtol 1e-8, 2026-12-04) its time to solution was 156 ms on `lap3d:150` and 226 ms
/// on `elast:40`, against 55 ms and 7.6 ms for the whole Jacobi-CG solve (on `lap2d:2000`
/// 106 ms against 556 ms): picking it without knowing how many iterations Jacobi-CG needs
/// would break the promise of never being more than 5% slower than Jacobi, so Auto does
/// not. `--precond amg` still builds it.
pub fn auto_for_device<T: Scalar>(diagonal: &[T]) -> AutoChoice {
    if let Some((row, d)) = diagonal.iter().map(|d| d.to_f64()).enumerate().find(|&(_, d)| !(d.is_finite() && d > 0.0))
    {
        return AutoChoice {
            chosen: PreconditionerKind::None,
            reason: format!(
                "diagonal entry at row {row} is {d}: neither Jacobi nor AMG applies without a positive diagonal"
            ),
        };
    }
    AutoChoice {
        chosen: PreconditionerKind::Jacobi,
        reason: "Jacobi: AMG's setup on the GPU can cost more than a whole Jacobi-CG solve (on the H200: \
                 0.14 s against 0.055 s on lap3d:150)"
            .to_string(),
    }
}

/// AMG as a [`Preconditioner`]: a hierarchy on a backend, one V(1,1)-cycle per
/// application. With a device backend the setup runs on its GPU by default
/// ([`SetupPlace::Auto`]) and the levels stay there: each level's matrices become the
/// backend's matrices without a copy through the host. Build it once and solve many
/// right-hand sides with [`cg_with`](super::cg_with); [`Amg::update_values`] redoes the
/// numeric setup for new values on the same pattern.
///
/// # Example
///
/// ```
/// use spgpu::{gen, solver::{cg_with, Amg, AmgParams, CgParams, Host}};
/// let a = gen::laplacian_2d::<f64>(48);
/// let amg = Amg::build(&Host, &a, &AmgParams::default())?;
/// for k in 1..=3 {
///     let b = vec![k as f64; a.nrows()];
///     let mut x = vec![0.0; a.nrows()];
///     let report = cg_with(&Host, &a, &amg, &b, &mut x, &CgParams::default(), &mut |_| {})?;
///     assert!(report.iterations <= 15);
/// }
/// # Ok::<(), spgpu::solver::CgError>(())
/// ```
pub struct Amg<T: Scalar, B: Backend<T>> {
    /// The host hierarchy, when the setup ran on the host.
    hierarchy: Option<AmgHierarchy>,
    /// When the setup ran on a GPU: that GPU and the aggregates of every level, for a
    /// numeric re-setup there.
    resident: Option<(&'static crate::gpu::Context, Vec<Coarsening>)>,
    params: AmgParams,
    cycle: Cycle<T, B>,
    info: AmgInfo,
}

impl<T: Scalar, B: Backend<T>> std::fmt::Debug for Amg<T, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Amg").field("info", &self.info).finish()
    }
}

/// A matrix of an AMG hierarchy built on a GPU ([`SetupPlace::Device`]): its CSR arrays in
/// `f64` on that GPU, which [`Backend::amg_matrix`] turns into the backend's matrix. Only the
/// setup makes one.
pub struct AmgDeviceMatrix {
    pub(crate) parts: DeviceCsrParts,
    /// What the matrix is ("level 1 A", "level 0 P", ...), for its SpMV plan's reason.
    pub(crate) what: String,
    /// The statistics of its rows when the setup knows them (level 0's, from the host
    /// matrix; the tentative prolongator's, one length), so that the backend need not read
    /// the offsets back.
    pub(crate) stats: Option<crate::format::RowStats>,
    /// Whether some entry lies more than 32767 columns from its row, when the setup knows
    /// (the tentative prolongator: columns are aggregates).
    pub(crate) far_columns: Option<bool>,
}

impl AmgDeviceMatrix {
    /// `parts`, named `what`, with nothing known of its rows.
    fn new(parts: DeviceCsrParts, what: String) -> Self {
        AmgDeviceMatrix { parts, what, stats: None, far_columns: None }
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.parts.nrows
    }

    /// Columns.
    pub fn ncols(&self) -> usize {
        self.parts.ncols
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.parts.nnz()
    }

    /// What the matrix is in its hierarchy (`"AMG level 1 A"`, `"AMG level 0 P"`, ...).
    pub fn what(&self) -> &str {
        &self.what
    }

    /// A copy on the host, rounded to `T`.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`](crate::Error::Cuda) when a copy fails.
    pub fn download<T: Scalar>(&self) -> Result<CsrMatrix<T>> {
        Ok(self.parts.download()?.cast::<T>())
    }
}

/// A vector of an AMG hierarchy built on a GPU (a level's inverse diagonal), in `f64` on that
/// GPU, which [`Backend::amg_vector`] turns into the backend's vector. Only the setup makes
/// one.
pub struct AmgDeviceVector(pub(crate) crate::gpu::kernels::amg::DeviceArray<f64>);

impl AmgDeviceVector {
    /// Length.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A copy on the host, rounded to `T`.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`](crate::Error::Cuda) when the copy fails.
    pub fn download<T: Scalar>(&self) -> Result<Vec<T>> {
        Ok(self.0.to_vec("an AMG vector")?.into_iter().map(T::from_f64).collect())
    }
}

impl<T: Scalar, B: Backend<T>> Amg<T, B> {
    /// Builds the hierarchy of `a` where `params.setup` says ([`SetupPlace`]: by default on
    /// the backend's GPU, whose levels then stay there, else on the host in `f64`) and puts
    /// it on `backend`, in `T`.
    ///
    /// # Errors
    ///
    /// Those of [`AmgHierarchy::build`] and [`AmgHierarchy::build_on_device`], and
    /// [`CgError::Backend`] when an upload fails.
    pub fn build(backend: &B, a: &CsrMatrix<T>, params: &AmgParams) -> std::result::Result<Self, CgError> {
        let a = in_f64(a);
        match setup_context(backend, params)? {
            Some(ctx) => match build_resident(ctx, &a, params, false, None) {
                // `Auto` falls back to the host when a count passes the device's 32-bit indices
                Err(e) if params.setup == SetupPlace::Auto && device_setup::past_index_limit(&e) => {
                    let mut amg = Self::on_backend(backend, kept(build_on_host(&a, params, false, None))?.into())?;
                    amg.info.setup_place = HOST_AFTER_DEVICE;
                    Ok(amg)
                }
                built => Self::on_backend_resident(backend, ctx, kept(built)?),
            },
            None => Self::on_backend(backend, kept(build_on_host(&a, params, false, None))?.into()),
        }
    }

    /// Puts a hierarchy built on the host on `backend`.
    ///
    /// # Errors
    ///
    /// [`CgError::Backend`] when an upload fails.
    pub fn from_hierarchy(backend: &B, hierarchy: AmgHierarchy) -> std::result::Result<Self, CgError> {
        Self::on_backend(backend, hierarchy)
    }

    /// Uploads; the setup time reported is the hierarchy's plus the upload's.
    fn on_backend(backend: &B, hierarchy: AmgHierarchy) -> std::result::Result<Self, CgError> {
        let started = Instant::now();
        let cycle = make_cycle(backend, &hierarchy)?;
        let mut info = hierarchy.info();
        info.setup_time = hierarchy.setup_time + started.elapsed();
        info.setup_phases.push(("upload of the levels", started.elapsed()));
        info.memory = memory_of(&cycle, backend);
        let params = hierarchy.params.clone();
        Ok(Amg { hierarchy: Some(hierarchy), resident: None, params, cycle, info })
    }

    /// Makes the cycle from a hierarchy built on the GPU of `ctx`, its matrices moved into
    /// the backend's.
    fn on_backend_resident(
        backend: &B,
        ctx: &'static crate::gpu::Context,
        built: Built<DeviceCsrParts>,
    ) -> std::result::Result<Self, CgError> {
        let started = Instant::now();
        let mut info = built.info();
        let coarsenings = built.coarsenings();
        let params = built.params.clone();
        let setup_time = built.setup_time;
        let (cycle, phases) = make_resident_cycle(backend, ctx, built)?;
        info.setup_time = setup_time + started.elapsed();
        info.setup_phases.extend(phases.0);
        info.memory = memory_of(&cycle, backend);
        Ok(Amg { hierarchy: None, resident: Some((ctx, coarsenings)), params, cycle, info })
    }

    /// Redoes the numeric setup for `a`, which must have the pattern the preconditioner was
    /// built on ([`AmgHierarchy::update_values`]: the same aggregates, new values on every
    /// level), where the setup first ran, and puts the new levels on the backend.
    ///
    /// # Errors
    ///
    /// Those of [`AmgHierarchy::update_values`]; [`CgError::Backend`] when an upload fails.
    pub fn update_values(&mut self, backend: &B, a: &CsrMatrix<T>) -> std::result::Result<(), CgError> {
        let started = Instant::now();
        let reason = self.info.auto_reason.take();
        match (&mut self.hierarchy, &self.resident) {
            (Some(h), _) => {
                h.update_values(&in_f64(a))?;
                self.cycle = make_cycle(backend, h)?;
                self.info = h.info();
            }
            (None, Some((ctx, coarsenings))) => {
                let old = self.cycle.fine_matrix().host_matrix().map_err(CgError::from)?;
                check_pattern(&old, a)?;
                drop(old);
                let (ctx, fixed) = (*ctx, coarsenings.clone());
                let built = kept(build_resident(ctx, &in_f64(a), &self.params, false, Some(fixed)))?;
                self.info = built.info();
                self.cycle = make_resident_cycle(backend, ctx, built)?.0;
            }
            (None, None) => unreachable!("an Amg has a host hierarchy or a device one"),
        }
        self.info.setup_time = started.elapsed();
        self.info.setup_phases = vec![("numeric re-setup", self.info.setup_time)];
        self.info.auto_reason = reason;
        self.info.memory = memory_of(&self.cycle, backend);
        Ok(())
    }

    /// The finest level's matrix on the backend (`A` in `T`), the one the cycle multiplies
    /// by. CG can multiply by it too, instead of a second copy of `A` on the backend: with a
    /// device backend and the setup on the GPU, it is made from the setup's own upload of `A`.
    ///
    /// # Example
    ///
    /// ```
    /// use spgpu::{gen, solver::{cg_with, Amg, AmgParams, CgParams, Host}};
    /// let a = gen::laplacian_2d::<f64>(32);
    /// let amg = Amg::build(&Host, &a, &AmgParams::default())?;
    /// let b = vec![1.0; a.nrows()];
    /// let mut x = vec![0.0; a.nrows()];
    /// let report = cg_with(&Host, amg.operator(), &amg, &b, &mut x, &CgParams::default(), &mut |_| {})?;
    /// assert!(report.iterations <= 15 && report.relative_residual <= 1e-8);
    /// # Ok::<(), spgpu::solver::CgError>(())
    /// ```
    pub fn operator(&self) -> &B::Matrix {
        self.cycle.fine_matrix()
    }

    /// The host hierarchy, when the setup ran on the host (`None` when it ran on a GPU,
    /// whose levels stay there: [`AmgHierarchy::build_on_device`] makes a host copy).
    pub fn hierarchy(&self) -> Option<&AmgHierarchy> {
        self.hierarchy.as_ref()
    }

    /// Levels, complexities, setup time and smoother, for reports.
    pub fn info(&self) -> &AmgInfo {
        &self.info
    }

    pub(crate) fn set_auto_reason(&mut self, reason: String) {
        self.info.auto_reason = Some(reason);
    }
}

/// [`AmgInfo::setup_place`] of a hierarchy that [`SetupPlace::Auto`] built on the host
/// because a count of the device setup passed its 32-bit indices.
const HOST_AFTER_DEVICE: &str = "host (a count of the device setup passed its 32-bit indices)";

/// The GPU where the setup of `params` runs for `backend` ([`SetupPlace`]), `None` for the
/// host.
fn setup_context<T: Scalar, B: Backend<T>>(
    backend: &B,
    params: &AmgParams,
) -> Result<Option<&'static crate::gpu::Context>> {
    Ok(match params.setup {
        SetupPlace::Host => None,
        SetupPlace::Auto => backend.device_context(),
        SetupPlace::Device => match backend.device_context() {
            Some(ctx) => Some(ctx),
            None => Some(crate::gpu::Context::global()?),
        },
    })
}

/// The smoother's steps of a level whose `rho(D^-1 A)` estimate is `rho`.
fn smoother_steps(smoother: Smoother, rho: f64) -> Steps {
    match smoother {
        Smoother::Chebyshev { degree } => {
            Steps::Chebyshev(chebyshev_coefficients(rho * CHEBYSHEV_LOWER, rho * CHEBYSHEV_UPPER, degree))
        }
        Smoother::L1Jacobi { sweeps } => Steps::L1Jacobi(sweeps),
    }
}

/// Builds the cycle of the host hierarchy `h` on `backend`.
fn make_cycle<T: Scalar, B: Backend<T>>(backend: &B, h: &AmgHierarchy) -> Result<Cycle<T, B>> {
    let cast = |v: Vec<f64>| -> Vec<T> { v.into_iter().map(T::from_f64).collect() };
    let mut specs = Vec::with_capacity(h.levels.len());
    let transfer_kind = h.params.effective_fine_transfer();
    for (index, l) in h.levels.iter().map(|l| &l.0).enumerate() {
        let implicit = transfer_kind.implicit_on(index);
        let dinv = match h.params.smoother {
            Smoother::Chebyshev { .. } => host_setup::inverse_diagonal(&l.a),
            Smoother::L1Jacobi { .. } => host_setup::inverse_l1_diagonal(&l.a),
        };
        let transfer = match &l.transfer {
            Some(t) if implicit => Some(CycleTransfer::Smoothed {
                p_tent: backend.matrix(&t.p_tent.cast::<T>())?,
                r_tent: backend.matrix(&t.p_tent.transpose().cast::<T>())?,
                omega: host_setup::smoothing_weight(l.rho),
            }),
            Some(t) => Some(CycleTransfer::Stored {
                p: backend.matrix(&t.p.cast::<T>())?,
                r: backend.matrix(&t.r.cast::<T>())?,
            }),
            None => None,
        };
        specs.push(LevelSpec {
            a: Arc::new(backend.matrix(&l.a.cast::<T>())?),
            dinv: backend.upload(&cast(dinv))?,
            steps: smoother_steps(h.params.smoother, l.rho),
            transfer,
        });
    }
    let inverse = h.coarse_inverse.as_ref().map(|c| backend.matrix(&c.cast::<T>())).transpose()?;
    Cycle::new(backend, specs, inverse)
}

/// What `cycle` holds on `backend`.
fn memory_of<T: Scalar, B: Backend<T>>(cycle: &Cycle<T, B>, backend: &B) -> Option<AmgMemory> {
    cycle.bytes(backend).map(|(matrix, hierarchy)| AmgMemory { matrix, hierarchy })
}

/// Builds the cycle of a hierarchy made on the GPU of `ctx`, moving its matrices into the
/// backend's ([`Backend::amg_matrix`]; on the device no copy goes through the host).
fn make_resident_cycle<T: Scalar, B: Backend<T>>(
    backend: &B,
    ctx: &'static crate::gpu::Context,
    built: Built<DeviceCsrParts>,
) -> Result<(Cycle<T, B>, PhaseTimes)> {
    let smoother = built.params.smoother;
    let transfer_kind = built.params.effective_fine_transfer();
    let mut level0_stats = built.level0_stats;
    let mut times = PhaseTimes::default();
    let mut timed = |what: &'static str, t: Instant| -> Result<()> {
        ctx.synchronize()?;
        times.add(what, t.elapsed());
        Ok(())
    };
    let mut specs = Vec::with_capacity(built.levels.len());
    for (l, level) in built.levels.into_iter().enumerate() {
        let t = Instant::now();
        let dinv = match smoother {
            Smoother::Chebyshev { .. } => device_setup::inverse_diagonal(ctx, &level.a)?,
            Smoother::L1Jacobi { .. } => device_setup::inverse_l1_diagonal(ctx, &level.a)?,
        };
        let dinv = backend.amg_vector(AmgDeviceVector(dinv))?;
        timed("the cycle's inverse diagonals", t)?;
        let t = Instant::now();
        let (transfer, what) = match level.transfer {
            Some(t) if transfer_kind.implicit_on(l) => {
                drop((t.p, t.r));
                let rt = device_setup::transpose(ctx, &t.p_tent)?;
                let what = |m: &str| format!("AMG level {l} {m}");
                // every row of P_tent holds one entry per near-nullspace vector
                let (rows, cols) = (t.p_tent.nrows, t.p_tent.ncols);
                let k = t.p_tent.nnz() / rows.max(1);
                debug_assert_eq!(t.p_tent.nnz(), k * rows);
                let stats = Some(crate::format::RowStats::uniform(rows, cols, k));
                let far_columns = Some(true);
                let p_tent = backend.amg_matrix(AmgDeviceMatrix {
                    parts: t.p_tent,
                    what: what("P_tent"),
                    stats,
                    far_columns,
                })?;
                let r_tent = backend.amg_matrix(AmgDeviceMatrix::new(rt, what("P_tent^T")))?;
                let omega = host_setup::smoothing_weight(level.rho);
                (Some(CycleTransfer::Smoothed { p_tent, r_tent, omega }), "P_tent and its transpose made the cycle's")
            }
            Some(t) => {
                drop(t.p_tent);
                let p = backend.amg_matrix(AmgDeviceMatrix::new(t.p, format!("AMG level {l} P")))?;
                let r = backend.amg_matrix(AmgDeviceMatrix::new(t.r, format!("AMG level {l} R")))?;
                (Some(CycleTransfer::Stored { p, r }), "P and R made the cycle's")
            }
            None => (None, "P and R made the cycle's"),
        };
        timed(what, t)?;
        let t = Instant::now();
        let a = AmgDeviceMatrix {
            stats: if l == 0 { level0_stats.take() } else { None },
            ..AmgDeviceMatrix::new(level.a, format!("AMG level {l} A"))
        };
        let a = backend.amg_matrix(a)?;
        timed(if l == 0 { "level 0's A made the cycle's" } else { "coarse A made the cycle's" }, t)?;
        specs.push(LevelSpec { a: Arc::new(a), dinv, steps: smoother_steps(smoother, level.rho), transfer });
    }
    let t = Instant::now();
    let inverse = built.coarse_inverse.as_ref().map(|c| backend.matrix(&c.cast::<T>())).transpose()?;
    let cycle = Cycle::new(backend, specs, inverse)?;
    timed("the coarsest inverse and the cycle's work vectors", t)?;
    Ok((cycle, times))
}

/// Builds what [`PreconditionerKind::Auto`] chooses for `a`: the AMG preconditioner when it
/// is kept (`Some`), with the choice and its reason. First [`auto_precheck`] (row statistics
/// only); then AMG is built (where `params.setup` says, as [`Amg::build`]) and given up for
/// Jacobi when its first level coarsens by less than [`AUTO_MIN_COARSENING`] or its operator
/// complexity passes [`AUTO_MAX_OPERATOR_COMPLEXITY`] (the setup stops as soon as either is
/// seen), or when its coarsest system is not positive definite.
///
/// # Errors
///
/// Those of [`Amg::build`] other than a coarsest system that is not positive definite.
pub fn build_auto<T: Scalar, B: Backend<T>>(
    backend: &B,
    a: &CsrMatrix<T>,
    params: &AmgParams,
) -> std::result::Result<(Option<Amg<T, B>>, AutoChoice), CgError> {
    if let Some(choice) = auto_precheck(a) {
        return Ok((None, choice));
    }
    let jacobi = |reason: String| AutoChoice { chosen: PreconditionerKind::Jacobi, reason };
    let a = in_f64(a);
    let ctx = setup_context(backend, params)?;
    // a coarsest system that is not positive definite: CG would break down with AMG
    let not_pd = |level: usize| {
        jacobi(format!("AMG's coarsest system (level {level}) is not positive definite: Jacobi instead"))
    };
    let mut amg = match ctx {
        Some(ctx) => match build_resident(ctx, &a, params, true, None) {
            Ok(Ok(b)) => Amg::on_backend_resident(backend, ctx, b)?,
            Ok(Err(Abandoned(reason))) => return Ok((None, jacobi(format!("{reason}: Jacobi instead")))),
            Err(CgError::CoarseNotPositiveDefinite { level, .. }) => return Ok((None, not_pd(level))),
            Err(e) if params.setup == SetupPlace::Auto && device_setup::past_index_limit(&e) => {
                return Ok((None, jacobi(format!("{e}: Jacobi instead"))));
            }
            Err(e) => return Err(e),
        },
        None => match build_on_host(&a, params, true, None) {
            Ok(Ok(b)) => Amg::on_backend(backend, b.into())?,
            Ok(Err(Abandoned(reason))) => return Ok((None, jacobi(format!("{reason}: Jacobi instead")))),
            Err(CgError::CoarseNotPositiveDefinite { level, .. }) => return Ok((None, not_pd(level))),
            Err(e) => return Err(e),
        },
    };
    let info = amg.info();
    let reason = format!(
        "AMG: {} levels, coarsening {:.1}x at the first, operator complexity {:.2} (at most \
         {AUTO_MAX_OPERATOR_COMPLEXITY})",
        info.levels.len(),
        info.levels[0].rows as f64 / info.levels.get(1).map_or(1, |l| l.rows.max(1)) as f64,
        info.operator_complexity
    );
    amg.set_auto_reason(reason.clone());
    Ok((Some(amg), AutoChoice { chosen: PreconditionerKind::Amg, reason }))
}

impl<T: Scalar, B: Backend<T>> Preconditioner<T, B> for Amg<T, B> {
    fn name(&self) -> &'static str {
        "amg"
    }

    /// One V-cycle outside a CG iteration (a fresh state of the backend's, so it
    /// allocates that state).
    fn apply(&self, backend: &B, r: &B::Vector, z: &mut B::Vector) -> Result<()> {
        let mut state = backend.new_state(backend.len(r), 0)?;
        self.cycle.apply(backend, &mut state, r, z)
    }

    fn apply_in(&self, backend: &B, state: &mut B::State, r: &B::Vector, z: &mut B::Vector) -> Result<()> {
        self.cycle.apply(backend, state, r, z)
    }

    fn recordable(&self) -> bool {
        true
    }
}
