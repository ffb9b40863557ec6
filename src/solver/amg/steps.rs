//! Where the setup's steps run: [`HostSteps`] (host_setup.rs, rayon) on host matrices, or
//! [`DeviceSteps`] (device_setup.rs, the GPU) on matrices that stay on the device. The
//! hierarchy's build walks the levels with one of them; both make the same aggregates and
//! prolongator patterns, and values equal up to the grouping of the power method's sums.

use super::device_setup::{self, DeviceCsrParts};
use super::host_setup::{self, Pattern};
use crate::gpu::kernels::amg::DeviceArray;
use crate::gpu::Context;
use crate::{CsrMatrix, Result};
use std::sync::Arc;

/// The sizes of a level's matrix, wherever it is stored.
pub(super) trait LevelMatrix {
    /// Rows.
    fn nrows(&self) -> usize;
    /// Stored entries.
    fn nnz(&self) -> usize;
}

impl LevelMatrix for CsrMatrix<f64> {
    fn nrows(&self) -> usize {
        CsrMatrix::nrows(self)
    }

    fn nnz(&self) -> usize {
        CsrMatrix::nnz(self)
    }
}

impl LevelMatrix for DeviceCsrParts {
    fn nrows(&self) -> usize {
        self.nrows
    }

    fn nnz(&self) -> usize {
        DeviceCsrParts::nnz(self)
    }
}

/// What coarsening one level gives: the strength graph and the MIS-2 states (on the host
/// only: the device setup keeps them on the device), the aggregate of every node and their
/// count. The device setup keeps the aggregates on the device (`device`, for a numeric
/// re-setup there) and leaves `aggregates` empty; [`Coarsening::to_host`] copies them.
#[derive(Debug, Clone)]
pub(super) struct Coarsening {
    pub(super) strength: Option<Pattern>,
    pub(super) states: Option<Vec<u8>>,
    pub(super) aggregates: Vec<u32>,
    pub(super) count: usize,
    pub(super) device: Option<Arc<DeviceArray<u32>>>,
}

impl PartialEq for Coarsening {
    /// Equal host parts, and the same device array (or none).
    fn eq(&self, other: &Self) -> bool {
        let same_device = match (&self.device, &other.device) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        self.strength == other.strength
            && self.states == other.states
            && self.aggregates == other.aggregates
            && self.count == other.count
            && same_device
    }
}

impl Coarsening {
    /// The aggregates on the host: a copy of the device's when the setup ran there.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Cuda`] when the copy fails.
    pub(super) fn to_host(&self) -> Result<Coarsening> {
        let mut c = self.clone();
        if let Some(d) = c.device.take() {
            c.aggregates = d.to_vec("the aggregates")?;
        }
        Ok(c)
    }
}

/// The operators from one level to the next: the tentative and smoothed prolongators, the
/// restriction, the coarse matrix and the coarse near-nullspace.
pub(super) struct Operators<M> {
    pub(super) p_tent: M,
    pub(super) bc: Vec<f64>,
    pub(super) p: M,
    pub(super) r: M,
    pub(super) ac: M,
}

/// The time of each kind of setup step, in the order first seen, summed over the levels.
#[derive(Debug, Default, Clone)]
pub(super) struct PhaseTimes(pub(super) Vec<(&'static str, std::time::Duration)>);

impl PhaseTimes {
    /// Adds `d` to the phase `what`.
    pub(super) fn add(&mut self, what: &'static str, d: std::time::Duration) {
        match self.0.iter_mut().find(|(w, _)| *w == what) {
            Some((_, t)) => *t += d,
            None => self.0.push((what, d)),
        }
    }
}

/// The setup steps of one level, called in this order for each level: [`Self::rho`], then
/// (on all but the coarsest) [`Self::coarsen`] (unless the aggregates are given: a numeric
/// re-setup) and [`Self::operators`], whose coarse matrix is the next level's `a`.
pub(super) trait LevelSteps {
    /// Where the level matrices are.
    type Matrix: LevelMatrix;
    /// `rho(D^-1 A)` (the power-method estimate) of the level's matrix `a`.
    fn rho(&mut self, a: &Self::Matrix) -> Result<f64>;
    /// Strength, MIS-2 and aggregates of the level's matrix.
    fn coarsen(&mut self, a: &Self::Matrix, theta: f64, bs: usize) -> Result<Coarsening>;
    /// The transfer operators and the coarse matrix from the aggregates of `c`, with the
    /// near-nullspace `b` (`k` columns; empty for the constant vector, which is then made
    /// where the steps run, never as a host array of the finest level's length).
    #[allow(clippy::too_many_arguments)]
    fn operators(
        &mut self,
        a: &Self::Matrix,
        c: &Coarsening,
        bs: usize,
        b: &[f64],
        k: usize,
        rho: f64,
    ) -> Result<Operators<Self::Matrix>>;
    /// The coarsest level's matrix on the host (for its dense inverse).
    fn to_host(&mut self, a: &Self::Matrix) -> Result<CsrMatrix<f64>>;
    /// The time of each kind of step so far (on the device, each timed to the end of the
    /// GPU work it queued).
    fn phases(&self) -> &PhaseTimes;
}

/// Runs `f` as phase `what` of `times`, the time taken to the end of `f` and, with `ctx`,
/// of the GPU work it queued.
fn timed<R>(
    times: &mut PhaseTimes,
    ctx: Option<&Context>,
    what: &'static str,
    f: impl FnOnce() -> Result<R>,
) -> Result<R> {
    let t = std::time::Instant::now();
    let r = f()?;
    if let Some(ctx) = ctx {
        ctx.synchronize()?;
    }
    times.add(what, t.elapsed());
    Ok(r)
}

/// The steps on the host (host_setup.rs), with the current level's inverse diagonal.
#[derive(Default)]
pub(super) struct HostSteps {
    dinv: Vec<f64>,
    times: PhaseTimes,
}

impl LevelSteps for HostSteps {
    type Matrix = CsrMatrix<f64>;

    fn rho(&mut self, a: &CsrMatrix<f64>) -> Result<f64> {
        self.dinv = host_setup::inverse_diagonal(a);
        let dinv = &self.dinv;
        timed(&mut self.times, None, SPECTRAL_RADII, || Ok(host_setup::spectral_radius(a, dinv)))
    }

    fn coarsen(&mut self, a: &CsrMatrix<f64>, theta: f64, bs: usize) -> Result<Coarsening> {
        let times = &mut self.times;
        let strength = timed(times, None, STRENGTH, || Ok(host_setup::strength(a, theta, bs)))?;
        let (states, (aggregates, count)) = timed(times, None, AGGREGATION, || {
            let states = host_setup::mis2(&strength);
            let aggregates = host_setup::aggregate_from(&strength, &states);
            Ok((states, aggregates))
        })?;
        Ok(Coarsening { strength: Some(strength), states: Some(states), aggregates, count, device: None })
    }

    fn operators(
        &mut self,
        a: &CsrMatrix<f64>,
        c: &Coarsening,
        bs: usize,
        b: &[f64],
        k: usize,
        rho: f64,
    ) -> Result<Operators<CsrMatrix<f64>>> {
        let times = &mut self.times;
        let (p_tent, bc) = timed(times, None, TENTATIVE, || {
            let ones;
            let b = if b.is_empty() {
                ones = vec![1.0; c.aggregates.len() * bs.max(1)];
                &ones[..]
            } else {
                b
            };
            Ok(host_setup::tentative(&c.aggregates, c.count, bs, b, k))
        })?;
        let p = timed(times, None, SMOOTHING, || Ok(host_setup::smooth_prolongator(a, &self.dinv, rho, &p_tent)?))?;
        let (r, ac) = timed(times, None, GALERKIN, || Ok(host_setup::galerkin(a, &p)?))?;
        Ok(Operators { p_tent, bc, p, r, ac })
    }

    fn to_host(&mut self, a: &CsrMatrix<f64>) -> Result<CsrMatrix<f64>> {
        Ok(a.clone())
    }

    fn phases(&self) -> &PhaseTimes {
        &self.times
    }
}

/// The names of the setup's phases.
const SPECTRAL_RADII: &str = "spectral radii";
const STRENGTH: &str = "strength of connection";
const AGGREGATION: &str = "aggregation (MIS-2)";
const TENTATIVE: &str = "tentative prolongators";
const SMOOTHING: &str = "prolongator smoothing (A P_tent)";
const GALERKIN: &str = "Galerkin products (P^T, A P, R (A P))";
const TRANSPOSE: &str = "restrictions R = P^T";
const PRODUCT_AP: &str = "products A P";
const PRODUCT_RAP: &str = "products R (A P)";
const DOWNLOADS: &str = "downloads within the steps";

/// The steps on the device (device_setup.rs): each level's matrix is made there (level 0 is
/// uploaded once by the caller) and stays there, and so do the aggregates (for a numeric
/// re-setup); only the coarsest matrix (for its dense inverse) is copied to the host.
pub(super) struct DeviceSteps {
    ctx: &'static Context,
    /// The current level's inverse diagonal, from [`LevelSteps::rho`].
    dinv: Option<DeviceArray<f64>>,
    times: PhaseTimes,
}

impl DeviceSteps {
    pub(super) fn new(ctx: &'static Context) -> Self {
        DeviceSteps { ctx, dinv: None, times: PhaseTimes::default() }
    }

    /// The inverse diagonal of `a`, made by [`LevelSteps::rho`] or now.
    fn dinv(&mut self, a: &DeviceCsrParts) -> Result<&DeviceArray<f64>> {
        if !matches!(&self.dinv, Some(d) if d.len() == a.nrows) {
            self.dinv = Some(device_setup::inverse_diagonal(self.ctx, a)?);
        }
        Ok(self.dinv.as_ref().expect("set above"))
    }

    /// Runs `f`, counting its time as downloads (after the queued work is done).
    fn download<R>(&mut self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        self.ctx.synchronize()?;
        timed(&mut self.times, None, DOWNLOADS, f)
    }
}

impl LevelSteps for DeviceSteps {
    type Matrix = DeviceCsrParts;

    fn rho(&mut self, a: &DeviceCsrParts) -> Result<f64> {
        self.dinv = None;
        let ctx = self.ctx;
        let t = std::time::Instant::now();
        let dinv = self.dinv(a)?;
        let rho = device_setup::spectral_radius(ctx, a, dinv)?;
        ctx.synchronize()?;
        self.times.add(SPECTRAL_RADII, t.elapsed());
        Ok(rho)
    }

    fn phases(&self) -> &PhaseTimes {
        &self.times
    }

    fn coarsen(&mut self, a: &DeviceCsrParts, theta: f64, bs: usize) -> Result<Coarsening> {
        let ctx = self.ctx;
        let times = &mut self.times;
        let ds = timed(times, Some(ctx), STRENGTH, || device_setup::strength(ctx, a, theta, bs))?;
        let (dagg, count) = timed(times, Some(ctx), AGGREGATION, || {
            let m = device_setup::mis2(ctx, &ds)?;
            device_setup::aggregate_from(ctx, &ds, m)
        })?;
        Ok(Coarsening { strength: None, states: None, aggregates: Vec::new(), count, device: Some(Arc::new(dagg)) })
    }

    fn operators(
        &mut self,
        a: &DeviceCsrParts,
        c: &Coarsening,
        bs: usize,
        b: &[f64],
        k: usize,
        rho: f64,
    ) -> Result<Operators<DeviceCsrParts>> {
        let ctx = self.ctx;
        let uploaded;
        let dagg = match &c.device {
            Some(d) => &**d,
            None => {
                uploaded = DeviceArray::from_slice(ctx, &c.aggregates, "the aggregates")?;
                &uploaded
            }
        };
        let (p_tent, bc) =
            timed(&mut self.times, Some(ctx), TENTATIVE, || device_setup::tentative(ctx, dagg, c.count, bs, b, k))?;
        self.dinv(a)?;
        let (dinv, times) = (self.dinv.as_ref().expect("made above"), &mut self.times);
        let p = timed(times, Some(ctx), SMOOTHING, || device_setup::smooth_prolongator(ctx, a, dinv, rho, &p_tent))?;
        let r = timed(times, Some(ctx), TRANSPOSE, || device_setup::transpose(ctx, &p))?;
        let ap = timed(times, Some(ctx), PRODUCT_AP, || device_setup::spgemm(ctx, a, &p))?;
        let ac = timed(times, Some(ctx), PRODUCT_RAP, || device_setup::spgemm(ctx, &r, &ap))?;
        drop(ap);
        self.dinv = None;
        Ok(Operators { p_tent, bc, p, r, ac })
    }

    fn to_host(&mut self, a: &DeviceCsrParts) -> Result<CsrMatrix<f64>> {
        self.download(|| a.download())
    }
}
