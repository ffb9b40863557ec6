//! The V(1,1)-cycle, over any [`Backend`]: each level's `A`, `P`, `R` and the coarsest
//! level's inverse are matrices of that backend (on the device each has its own SpMV plan),
//! and every step is a backend step that takes the CG iteration's state, so on the device
//! the whole cycle is recorded into the iteration's CUDA graph. The work vectors are
//! allocated once, when the cycle is made: `apply` allocates nothing and never
//! synchronizes.

use super::super::backend::Backend;
use crate::{Result, Scalar};
use std::sync::{Arc, Mutex, PoisonError};

/// The lower end of the Chebyshev interval, as a fraction of `lmax` (the power-method
/// estimate of `rho(D^-1 A)`, already 1.05 times its Rayleigh quotient). The smoother only
/// needs to damp the upper part of the spectrum, which the coarse level cannot represent;
/// measured on the host at rtol 1e-8 with degree 2 (the AMG-SPEC interval
/// `[lmax / 30, 1.1 lmax]` in brackets): lap2d:128 11 iterations (15), lap3d:24 9 (14),
/// elast:12 with its rigid-body modes 8 (14).
pub(crate) const CHEBYSHEV_LOWER: f64 = 0.2;
/// The upper end of the Chebyshev interval, as a multiple of `lmax`.
pub(crate) const CHEBYSHEV_UPPER: f64 = 1.0;

/// How one level smooths: its steps' coefficients, fixed at setup.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Steps {
    /// Chebyshev on `D^-1 A`: one `(c1, c2)` per step of
    /// [`Backend::chebyshev_step`] (`c2 = 0` for the first), with `dinv = 1 / a_ii`.
    Chebyshev(Vec<(f64, f64)>),
    /// l1-Jacobi, this many sweeps, with `dinv = 1 / sum_j |a_ij|`.
    L1Jacobi(usize),
}

/// The coefficients of the Chebyshev iteration of `degree` steps on the interval
/// `[lower, upper]` (Saad, *Iterative Methods for Sparse Linear Systems*, Algorithm 12.1):
/// with `theta = (upper + lower) / 2`, `delta = (upper - lower) / 2`, `sigma = theta /
/// delta`, `rho_0 = 1 / sigma`: step 0 is `d = (1/theta) D^-1 r`, step `k` is
/// `d = (2 rho_k / delta) D^-1 r + rho_k rho_{k-1} d` with `rho_k = 1 / (2 sigma -
/// rho_{k-1})`; each step then adds `d` to `x`.
pub(crate) fn chebyshev_coefficients(lower: f64, upper: f64, degree: usize) -> Vec<(f64, f64)> {
    let theta = 0.5 * (upper + lower);
    let delta = 0.5 * (upper - lower);
    let sigma = theta / delta;
    let mut rho = 1.0 / sigma;
    let mut out = vec![(1.0 / theta, 0.0)];
    for _ in 1..degree.max(1) {
        let next = 1.0 / (2.0 * sigma - rho);
        out.push((2.0 * next / delta, next * rho));
        rho = next;
    }
    out
}

/// How a level passes residuals to the next level and corrections back.
pub(crate) enum Transfer<M> {
    /// The smoothed prolongator `P` and the restriction `R = P^T`, stored.
    Stored { p: M, r: M },
    /// `P = (I - omega D^-1 A) P_tent` applied as that product, from the tentative
    /// prolongator and its transpose (with the level's `A` and `dinv = 1 / a_ii`, the
    /// Chebyshev smoother's): `P x_c = t - omega D^-1 A t` with `t = P_tent x_c`, and
    /// `R r = P_tent^T (r - omega A D^-1 r)`. `P_tent` has one entry per row and near-nullspace
    /// vector, so this holds a fraction of `P` and `R`, for one more product by `A` each way.
    Smoothed { p_tent: M, r_tent: M, omega: f64 },
}

/// One level of the cycle above the coarsest.
struct Level<T: Scalar, B: Backend<T>> {
    a: Arc<B::Matrix>,
    dinv: B::Vector,
    steps: Steps,
    transfer: Transfer<B::Matrix>,
}

/// The coarsest level: a dense inverse applied by SpMV, or (when it is too large to invert)
/// smoothing alone.
enum Coarse<T: Scalar, B: Backend<T>> {
    /// The inverse, and the level's matrix (kept for [`Cycle::fine_matrix`]).
    Direct(B::Matrix, Arc<B::Matrix>),
    Smooth {
        a: Arc<B::Matrix>,
        dinv: B::Vector,
        steps: Steps,
    },
}

/// The work vectors of one level: right-hand side `b`, iterate `x`, residual `r`, and the
/// Chebyshev direction `d` (level 0 takes `b` and `x` from the caller, so its own are empty).
struct Work<V> {
    b: V,
    x: V,
    r: V,
    d: V,
}

/// What one level of the cycle is built from: its matrices and inverse diagonal already on
/// the backend (uploaded from the host hierarchy, or made on the GPU by the device setup).
/// `a` is shared: level 0's can be the operator CG multiplies by.
pub(crate) struct LevelSpec<M, V> {
    pub(crate) a: Arc<M>,
    pub(crate) dinv: V,
    pub(crate) steps: Steps,
    /// To the next level and back; `None` on the coarsest. [`Transfer::Smoothed`] needs the
    /// Chebyshev smoother (its `dinv` is `1 / a_ii`).
    pub(crate) transfer: Option<Transfer<M>>,
}

/// The V-cycle on a backend.
pub(crate) struct Cycle<T: Scalar, B: Backend<T>> {
    levels: Vec<Level<T, B>>,
    coarse: Coarse<T, B>,
    work: Mutex<Vec<Work<B::Vector>>>,
}

impl<T: Scalar, B: Backend<T>> Cycle<T, B> {
    /// The cycle of `specs` (fine to coarse), with its work vectors; `coarse_inverse` is the
    /// coarsest level's dense inverse, or `None` to smooth it instead.
    pub(crate) fn new(
        backend: &B,
        specs: Vec<LevelSpec<B::Matrix, B::Vector>>,
        coarse_inverse: Option<B::Matrix>,
    ) -> Result<Self> {
        let mut levels = Vec::new();
        let mut work = Vec::new();
        let mut coarse = None;
        let count = specs.len();
        let mut coarse_inverse = coarse_inverse;
        for (l, spec) in specs.into_iter().enumerate() {
            let n = backend.len(&spec.dinv);
            let outer = if l == 0 { 0 } else { n };
            let chebyshev = matches!(spec.steps, Steps::Chebyshev(_));
            let last = l + 1 == count;
            let smoothing = !last || coarse_inverse.is_none();
            work.push(Work {
                b: backend.zeros(outer)?,
                x: backend.zeros(outer)?,
                r: backend.zeros(if smoothing { n } else { 0 })?,
                d: backend.zeros(if smoothing && chebyshev { n } else { 0 })?,
            });
            let LevelSpec { a, dinv, steps, transfer } = spec;
            if matches!(transfer, Some(Transfer::Smoothed { .. })) && !chebyshev {
                return Err(crate::Error::InvalidArgument(
                    "AMG: a level's prolongator is applied from P_tent only with the Chebyshev smoother".into(),
                ));
            }
            match transfer {
                Some(transfer) if !last => levels.push(Level { a, dinv, steps, transfer }),
                _ => {
                    coarse = Some(match coarse_inverse.take() {
                        Some(inv) => Coarse::Direct(inv, a),
                        None => Coarse::Smooth { a, dinv, steps },
                    });
                }
            }
        }
        let coarse = coarse.expect("a hierarchy has a coarsest level");
        Ok(Cycle { levels, coarse, work: Mutex::new(work) })
    }

    /// The finest level's matrix.
    pub(crate) fn fine_matrix(&self) -> &B::Matrix {
        match (self.levels.first(), &self.coarse) {
            (Some(l), _) => &l.a,
            (None, Coarse::Direct(_, a) | Coarse::Smooth { a, .. }) => a,
        }
    }

    /// The bytes the cycle holds on its backend: level 0's `A`, and everything else (the
    /// other levels' matrices, `P` and `R`, the inverse diagonals, the coarsest inverse and
    /// the work vectors); `None` when the backend does not count its matrices' bytes.
    pub(crate) fn bytes(&self, backend: &B) -> Option<(u64, u64)> {
        let vector = |v: &B::Vector| (backend.len(v) * T::BYTES) as u64;
        let mut levels = Vec::with_capacity(self.levels.len() + 1);
        let mut rest = 0;
        for l in &self.levels {
            levels.push(backend.matrix_bytes(&l.a)?);
            rest += match &l.transfer {
                Transfer::Stored { p, r } => backend.matrix_bytes(p)? + backend.matrix_bytes(r)?,
                Transfer::Smoothed { p_tent, r_tent, .. } => {
                    backend.matrix_bytes(p_tent)? + backend.matrix_bytes(r_tent)?
                }
            };
            rest += vector(&l.dinv);
        }
        match &self.coarse {
            Coarse::Direct(inverse, a) => {
                levels.push(backend.matrix_bytes(a)?);
                rest += backend.matrix_bytes(inverse)?;
            }
            Coarse::Smooth { a, dinv, .. } => {
                levels.push(backend.matrix_bytes(a)?);
                rest += vector(dinv);
            }
        }
        let work = self.work.lock().unwrap_or_else(PoisonError::into_inner);
        rest += work.iter().map(|w| vector(&w.b) + vector(&w.x) + vector(&w.r) + vector(&w.d)).sum::<u64>();
        Some((levels[0], rest + levels[1..].iter().sum::<u64>()))
    }

    /// `z = M^-1 r`: one V(1,1)-cycle from `x = 0`.
    pub(crate) fn apply(&self, backend: &B, s: &mut B::State, rin: &B::Vector, z: &mut B::Vector) -> Result<()> {
        let mut work = self.work.lock().unwrap_or_else(PoisonError::into_inner);
        let nl = self.levels.len();
        if nl == 0 {
            let w = &mut work[0];
            return self.solve_coarse(backend, s, rin, z, &mut w.r, &mut w.d);
        }
        for l in 0..nl {
            let level = &self.levels[l];
            let (head, tail) = work.split_at_mut(l + 1);
            let Work { b, x, r, d } = &mut head[l];
            let (b, x): (&B::Vector, &mut B::Vector) = if l == 0 { (rin, &mut *z) } else { (&*b, x) };
            smooth(backend, s, &level.a, &level.dinv, &level.steps, b, x, r, d, true)?;
            residual(backend, s, &level.a, b, x, r)?;
            match &level.transfer {
                Transfer::Stored { r: restriction, .. } => backend.spmv(s, restriction, 1.0, r, 0.0, &mut tail[0].b)?,
                Transfer::Smoothed { r_tent, omega, .. } => {
                    // R r = P_tent^T (r - omega A D^-1 r), with d (free between the smoothings)
                    backend.axpby(s, 0.0, r, 0.0, d)?;
                    backend.jacobi_step(s, 1.0, &level.dinv, r, d)?;
                    backend.spmv(s, &level.a, -omega, d, 1.0, r)?;
                    backend.spmv(s, r_tent, 1.0, r, 0.0, &mut tail[0].b)?;
                }
            }
        }
        {
            let Work { b, x, r, d } = &mut work[nl];
            self.solve_coarse(backend, s, b, x, r, d)?;
        }
        for l in (0..nl).rev() {
            let level = &self.levels[l];
            let (head, tail) = work.split_at_mut(l + 1);
            let Work { b, x, r, d } = &mut head[l];
            let (b, x): (&B::Vector, &mut B::Vector) = if l == 0 { (rin, &mut *z) } else { (&*b, x) };
            match &level.transfer {
                Transfer::Stored { p, .. } => backend.spmv(s, p, 1.0, &tail[0].x, 1.0, x)?,
                Transfer::Smoothed { p_tent, omega, .. } => {
                    // x += t - omega D^-1 A t with t = P_tent x_c (in d; r is free until the
                    // smoothing's first residual)
                    backend.spmv(s, p_tent, 1.0, &tail[0].x, 0.0, d)?;
                    backend.axpby(s, 1.0, d, 1.0, x)?;
                    backend.spmv(s, &level.a, 1.0, d, 0.0, r)?;
                    backend.jacobi_step(s, -omega, &level.dinv, r, x)?;
                }
            }
            smooth(backend, s, &level.a, &level.dinv, &level.steps, b, x, r, d, false)?;
        }
        Ok(())
    }

    fn solve_coarse(
        &self,
        backend: &B,
        s: &mut B::State,
        b: &B::Vector,
        x: &mut B::Vector,
        r: &mut B::Vector,
        d: &mut B::Vector,
    ) -> Result<()> {
        match &self.coarse {
            Coarse::Direct(inv, _) => backend.spmv(s, inv, 1.0, b, 0.0, x),
            Coarse::Smooth { a, dinv, steps } => {
                smooth(backend, s, a, dinv, steps, b, x, r, d, true)?;
                smooth(backend, s, a, dinv, steps, b, x, r, d, false)
            }
        }
    }
}

/// `r = b - A x`.
fn residual<T: Scalar, B: Backend<T>>(
    backend: &B,
    s: &mut B::State,
    a: &B::Matrix,
    b: &B::Vector,
    x: &B::Vector,
    r: &mut B::Vector,
) -> Result<()> {
    backend.axpby(s, 1.0, b, 0.0, r)?;
    backend.spmv(s, a, -1.0, x, 1.0, r)
}

/// The smoother's steps on `A x = b`; with `from_zero`, `x` starts at 0 (its content is not
/// read) and the first residual is `b` itself.
#[allow(clippy::too_many_arguments)]
fn smooth<T: Scalar, B: Backend<T>>(
    backend: &B,
    s: &mut B::State,
    a: &B::Matrix,
    dinv: &B::Vector,
    steps: &Steps,
    b: &B::Vector,
    x: &mut B::Vector,
    r: &mut B::Vector,
    d: &mut B::Vector,
    from_zero: bool,
) -> Result<()> {
    let count = match steps {
        Steps::Chebyshev(c) => c.len(),
        Steps::L1Jacobi(sweeps) => (*sweeps).max(1),
    };
    for k in 0..count {
        let first = from_zero && k == 0;
        if first {
            backend.axpby(s, 0.0, b, 0.0, x)?; // x = 0
        } else {
            residual(backend, s, a, b, x, r)?;
        }
        let rk: &B::Vector = if first { b } else { r };
        match steps {
            Steps::Chebyshev(c) => backend.chebyshev_step(s, c[k].0, c[k].1, dinv, rk, d, x)?,
            Steps::L1Jacobi(_) => backend.jacobi_step(s, 1.0, dinv, rk, x)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chebyshev_of_degree_one_is_damped_jacobi() {
        let c = chebyshev_coefficients(1.0, 3.0, 1);
        assert_eq!(c, vec![(0.5, 0.0)]);
        let c = chebyshev_coefficients(0.1, 2.0, 3);
        assert_eq!(c.len(), 3);
        assert!(c.iter().skip(1).all(|&(c1, c2)| c1 > 0.0 && c2 > 0.0));
    }

    #[test]
    fn the_chebyshev_polynomial_is_small_on_its_interval() {
        // error propagation e' = (1 - lambda p(lambda)) e on a scalar problem with
        // eigenvalue lambda: below 1 in size on [lower, upper]
        let (lo, hi) = (0.1, 2.0);
        let c = chebyshev_coefficients(lo, hi, 3);
        for step in 0..=40 {
            let lambda = lo + (hi - lo) * f64::from(step) / 40.0;
            // solve lambda x = 1 from x = 0
            let (mut x, mut d) = (0.0, 0.0);
            for (k, &(c1, c2)) in c.iter().enumerate() {
                let r = 1.0 - lambda * x;
                d = c1 * r + if k == 0 { 0.0 } else { c2 * d };
                x += d;
            }
            let e = (1.0 - lambda * x).abs();
            assert!(e < 0.49, "lambda {lambda}: {e}");
        }
    }
}
