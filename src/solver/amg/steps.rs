//! Where the setup's steps run: [`HostSteps`] (host_setup.rs, rayon) or [`DeviceSteps`]
//! (device_setup.rs, the GPU). [`AmgHierarchy::build`](super::AmgHierarchy::build) walks
//! the levels with one of them; both make the same aggregates and prolongator patterns,
//! and values equal up to the grouping of the power method's sums.

use super::device_setup::{self, DeviceCsrParts};
use super::host_setup::{self, Pattern};
use crate::gpu::kernels::amg::DeviceArray;
use crate::gpu::Context;
use crate::{CsrMatrix, Result};

/// What coarsening one level gives: the strength graph and the MIS-2 states (on the host
/// only: the device setup keeps them on the device), the aggregate of every node and their
/// count.
pub(super) struct Coarsening {
    pub(super) strength: Option<Pattern>,
    pub(super) states: Option<Vec<u8>>,
    pub(super) aggregates: Vec<u32>,
    pub(super) count: usize,
}

/// The operators from one level to the next: the tentative and smoothed prolongators, the
/// restriction, the coarse matrix and the coarse near-nullspace.
pub(super) struct Operators {
    pub(super) p_tent: CsrMatrix<f64>,
    pub(super) bc: Vec<f64>,
    pub(super) p: CsrMatrix<f64>,
    pub(super) r: CsrMatrix<f64>,
    pub(super) ac: CsrMatrix<f64>,
}

/// The setup steps of one level, called in this order for each level: [`Self::rho`], then
/// (on all but the coarsest) [`Self::coarsen`] and [`Self::operators`], whose coarse
/// matrix is the next level's `a`.
pub(super) trait LevelSteps {
    /// `rho(D^-1 A)` (the power-method estimate) of the level's matrix `a`.
    fn rho(&mut self, a: &CsrMatrix<f64>) -> Result<f64>;
    /// Strength, MIS-2 and aggregates of the level's matrix.
    fn coarsen(&mut self, a: &CsrMatrix<f64>, theta: f64, bs: usize) -> Result<Coarsening>;
    /// The transfer operators and the coarse matrix from the aggregates of [`Self::coarsen`].
    fn operators(
        &mut self,
        a: &CsrMatrix<f64>,
        c: &Coarsening,
        bs: usize,
        b: &[f64],
        k: usize,
        rho: f64,
    ) -> Result<Operators>;
    /// Time spent copying results to the host (none on the host).
    fn download_time(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

/// The steps on the host (host_setup.rs), with the current level's inverse diagonal.
#[derive(Default)]
pub(super) struct HostSteps {
    dinv: Vec<f64>,
}

impl LevelSteps for HostSteps {
    fn rho(&mut self, a: &CsrMatrix<f64>) -> Result<f64> {
        self.dinv = host_setup::inverse_diagonal(a);
        Ok(host_setup::spectral_radius(a, &self.dinv))
    }

    fn coarsen(&mut self, a: &CsrMatrix<f64>, theta: f64, bs: usize) -> Result<Coarsening> {
        let strength = host_setup::strength(a, theta, bs);
        let states = host_setup::mis2(&strength);
        let (aggregates, count) = host_setup::aggregate_from(&strength, &states);
        Ok(Coarsening { strength: Some(strength), states: Some(states), aggregates, count })
    }

    fn operators(
        &mut self,
        a: &CsrMatrix<f64>,
        c: &Coarsening,
        bs: usize,
        b: &[f64],
        k: usize,
        rho: f64,
    ) -> Result<Operators> {
        let (p_tent, bc) = host_setup::tentative(&c.aggregates, c.count, bs, b, k);
        let p = host_setup::smooth_prolongator(a, &self.dinv, rho, &p_tent)?;
        let (r, ac) = host_setup::galerkin(a, &p)?;
        Ok(Operators { p_tent, bc, p, r, ac })
    }
}

/// The steps on the device (device_setup.rs): the level's matrix stays on the device from
/// one step to the next (level 0 is uploaded once; each coarse matrix is made there), and
/// the results are downloaded for the host hierarchy.
pub(super) struct DeviceSteps {
    ctx: &'static Context,
    /// The current level's matrix on the device, and its inverse diagonal.
    level: Option<(DeviceCsrParts, DeviceArray<f64>)>,
    /// The aggregates of the current level, from [`LevelSteps::coarsen`].
    aggregates: Option<DeviceArray<u32>>,
    /// Time spent in downloads.
    downloads: std::time::Duration,
}

impl DeviceSteps {
    pub(super) fn new(ctx: &'static Context) -> Self {
        DeviceSteps { ctx, level: None, aggregates: None, downloads: std::time::Duration::ZERO }
    }

    /// The current level on the device, uploading `a` when there is none yet.
    fn level(&mut self, a: &CsrMatrix<f64>) -> Result<&(DeviceCsrParts, DeviceArray<f64>)> {
        if self.level.is_none() {
            let da = DeviceCsrParts::upload(self.ctx, a)?;
            let dinv = device_setup::inverse_diagonal(self.ctx, &da)?;
            self.level = Some((da, dinv));
        }
        Ok(self.level.as_ref().expect("set above"))
    }
}

impl LevelSteps for DeviceSteps {
    fn rho(&mut self, a: &CsrMatrix<f64>) -> Result<f64> {
        let ctx = self.ctx;
        let (da, dinv) = self.level(a)?;
        device_setup::spectral_radius(ctx, da, dinv)
    }

    fn download_time(&self) -> std::time::Duration {
        self.downloads
    }

    fn coarsen(&mut self, a: &CsrMatrix<f64>, theta: f64, bs: usize) -> Result<Coarsening> {
        let ctx = self.ctx;
        let (da, _) = self.level(a)?;
        let ds = device_setup::strength(ctx, da, theta, bs)?;
        let m = device_setup::mis2(ctx, &ds)?;
        let (dagg, count) = device_setup::aggregate_from(ctx, &ds, m)?;
        ctx.synchronize()?;
        let t = std::time::Instant::now();
        let aggregates = dagg.to_vec("the aggregates")?;
        self.downloads += t.elapsed();
        self.aggregates = Some(dagg);
        Ok(Coarsening { strength: None, states: None, aggregates, count })
    }

    fn operators(
        &mut self,
        a: &CsrMatrix<f64>,
        c: &Coarsening,
        bs: usize,
        b: &[f64],
        k: usize,
        rho: f64,
    ) -> Result<Operators> {
        let ctx = self.ctx;
        let dagg = match self.aggregates.take() {
            Some(d) => d,
            None => DeviceArray::from_slice(ctx, &c.aggregates, "the aggregates")?,
        };
        let (da, dinv) = self.level(a)?;
        let (dpt, bc) = device_setup::tentative(ctx, &dagg, c.count, bs, b, k)?;
        let dp = device_setup::smooth_prolongator(ctx, da, dinv, rho, &dpt)?;
        let (dr, dac) = device_setup::galerkin(ctx, da, &dp)?;
        ctx.synchronize()?;
        let t = std::time::Instant::now();
        let ops = Operators { p_tent: dpt.download()?, bc, p: dp.download()?, r: dr.download()?, ac: dac.download()? };
        self.downloads += t.elapsed();
        let dinv_c = device_setup::inverse_diagonal(ctx, &dac)?;
        self.level = Some((dac, dinv_c));
        Ok(ops)
    }
}
