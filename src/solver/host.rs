//! The host backend: CG on `Vec<T>` with the CPU, mirroring the device kernels' arithmetic.

use super::backend::{Backend, Checkpoint, PrecondForm, ScaledNorm, Status};
use crate::{CsrMatrix, Error, Result, Scalar};
use rayon::prelude::*;

/// Elements per chunk of the host reductions. Each chunk is summed in order and the chunk
/// sums are added in order, so a result never depends on the number of threads.
const CHUNK: usize = 8192;

/// The CPU backend: vectors are `Vec<T>`, scalars live in a [`HostState`].
///
/// Its arithmetic mirrors the device kernels (products and sums in `f64`, updates rounded
/// to `T`), so GPU and CPU runs agree to rounding, not bit for bit (the summation order
/// differs); two host runs agree bit for bit.
#[derive(Debug, Clone, Copy, Default)]
pub struct Host;

/// The iteration's scalars on the host; see [`Backend`].
#[derive(Debug, Clone)]
pub struct HostState {
    rho: f64,
    pap: f64,
    alpha: f64,
    beta: f64,
    rr: f64,
    tol2: f64,
    status: Status,
    iterations: usize,
    history: Vec<f64>,
    history_cap: usize,
}

fn check_len(op: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::DimensionMismatch { op, expected, found })
    }
}

/// Sums `f(i)` over `0..n` in `f64`, chunk by chunk, in a fixed order.
fn fixed_sum(n: usize, f: impl Fn(usize) -> f64 + Sync) -> f64 {
    let chunk_sum = |c: usize| (c * CHUNK..((c + 1) * CHUNK).min(n)).map(&f).sum::<f64>();
    let chunks = n.div_ceil(CHUNK);
    if n > 4 * CHUNK {
        let sums: Vec<f64> = (0..chunks).into_par_iter().map(chunk_sum).collect();
        sums.into_iter().sum()
    } else {
        (0..chunks).map(chunk_sum).sum()
    }
}

/// Adds `|v|` into the scaled sum `(scale, ssq)` (the recurrence of `cg_norm` in
/// `ptx/cg.cu`).
fn nrm_add(acc: (f64, f64), v: f64) -> (f64, f64) {
    let (scale, ssq) = acc;
    let a = v.abs();
    if a == 0.0 {
        acc
    } else if scale < a {
        let r = scale / a;
        (a, 1.0 + ssq * r * r)
    } else {
        let r = a / scale;
        (scale, ssq + r * r)
    }
}

/// Merges two scaled sums (as `nrm_merge` in `ptx/cg.cu`).
fn nrm_merge(acc: (f64, f64), other: (f64, f64)) -> (f64, f64) {
    let ((scale, ssq), (s2, q2)) = (acc, other);
    if scale < s2 {
        let r = scale / s2;
        (s2, q2 + ssq * r * r)
    } else {
        let r = if scale > 0.0 { s2 / scale } else { 0.0 };
        (scale, ssq + q2 * r * r)
    }
}

impl HostState {
    fn record(&mut self) {
        if self.iterations < self.history_cap {
            self.history.push(self.rr);
        }
    }
}

impl<T: Scalar> Backend<T> for Host {
    type Vector = Vec<T>;
    type State = HostState;
    type Recording = ();
    type Matrix = CsrMatrix<T>;

    fn len(&self, v: &Vec<T>) -> usize {
        v.len()
    }

    fn zeros(&self, n: usize) -> Result<Vec<T>> {
        Ok(vec![T::ZERO; n])
    }

    fn upload(&self, data: &[T]) -> Result<Vec<T>> {
        Ok(data.to_vec())
    }

    fn download(&self, v: &Vec<T>) -> Result<Vec<T>> {
        Ok(v.clone())
    }

    fn copy(&self, src: &Vec<T>, dst: &mut Vec<T>) -> Result<()> {
        check_len("copy: length of destination", src.len(), dst.len())?;
        dst.copy_from_slice(src);
        Ok(())
    }

    fn hadamard(&self, a: &Vec<T>, b: &Vec<T>, out: &mut Vec<T>) -> Result<()> {
        check_len("hadamard: length of second vector", a.len(), b.len())?;
        check_len("hadamard: length of output", a.len(), out.len())?;
        out.par_iter_mut().zip(a.par_iter().zip(b.par_iter())).for_each(|(o, (&a, &b))| *o = a * b);
        Ok(())
    }

    fn dot(&self, a: &Vec<T>, b: &Vec<T>) -> Result<f64> {
        check_len("dot: length of second vector", a.len(), b.len())?;
        Ok(fixed_sum(a.len(), |i| a[i].to_f64() * b[i].to_f64()))
    }

    fn norm(&self, v: &Vec<T>) -> Result<ScaledNorm> {
        let chunk = |c: &[T]| c.iter().fold((0.0, 0.0), |acc, x| nrm_add(acc, x.to_f64()));
        let parts: Vec<(f64, f64)> = if v.len() > 4 * CHUNK {
            v.par_chunks(CHUNK).map(chunk).collect()
        } else {
            v.chunks(CHUNK).map(chunk).collect()
        };
        let (max_abs, ssq) = parts.into_iter().fold((0.0, 0.0), nrm_merge);
        Ok(ScaledNorm { max_abs, ssq })
    }

    fn scale(&self, alpha: f64, v: &mut Vec<T>) -> Result<()> {
        v.par_iter_mut().with_min_len(CHUNK).for_each(|x| *x = T::from_f64(x.to_f64() * alpha));
        Ok(())
    }

    fn new_state(&self, _n: usize, history: usize) -> Result<HostState> {
        Ok(HostState {
            rho: 0.0,
            pap: 0.0,
            alpha: 0.0,
            beta: 0.0,
            rr: 0.0,
            tol2: 0.0,
            status: Status::Running,
            iterations: 0,
            history: Vec::with_capacity(history.min(1 << 20)),
            history_cap: history,
        })
    }

    fn start(
        &self,
        s: &mut HostState,
        tol2: f64,
        r: &Vec<T>,
        z: &Vec<T>,
        precond: PrecondForm<'_, Vec<T>>,
        p: &mut Vec<T>,
    ) -> Result<()> {
        let n = r.len();
        check_len("cg start: length of p", n, p.len())?;
        match precond {
            PrecondForm::Identity => p.copy_from_slice(r),
            PrecondForm::Diagonal(d) => {
                check_len("cg start: length of the inverse diagonal", n, d.len())?;
                p.par_iter_mut().zip(r.par_iter().zip(d.par_iter())).for_each(|(p, (&r, &d))| *p = d * r);
            }
            PrecondForm::General => {
                check_len("cg start: length of z", n, z.len())?;
                p.copy_from_slice(z);
            }
        }
        s.tol2 = tol2;
        s.rho = fixed_sum(n, |i| r[i].to_f64() * p[i].to_f64());
        s.rr = fixed_sum(n, |i| r[i].to_f64() * r[i].to_f64());
        s.iterations = 0;
        s.history.clear();
        s.status = if !s.rr.is_finite() || !s.rho.is_finite() {
            Status::NonFinite
        } else if s.rr <= s.tol2 {
            Status::Converged
        } else {
            Status::Running
        };
        s.record();
        Ok(())
    }

    fn alpha_step(&self, s: &mut HostState, p: &Vec<T>, q: &Vec<T>) -> Result<()> {
        check_len("cg alpha: length of q", p.len(), q.len())?;
        if s.status != Status::Running {
            return Ok(());
        }
        s.pap = fixed_sum(p.len(), |i| p[i].to_f64() * q[i].to_f64());
        if !s.pap.is_finite() {
            s.status = Status::NonFinite;
        } else if s.pap <= 0.0 {
            s.status = Status::Breakdown;
        } else {
            s.alpha = s.rho / s.pap;
        }
        Ok(())
    }

    fn update(
        &self,
        s: &mut HostState,
        x: &mut Vec<T>,
        r: &mut Vec<T>,
        p: &Vec<T>,
        q: &Vec<T>,
        precond: PrecondForm<'_, Vec<T>>,
    ) -> Result<()> {
        let n = x.len();
        check_len("cg update: length of r", n, r.len())?;
        check_len("cg update: length of p", n, p.len())?;
        check_len("cg update: length of q", n, q.len())?;
        if let PrecondForm::Diagonal(d) = precond {
            check_len("cg update: length of the inverse diagonal", n, d.len())?;
        }
        if s.status != Status::Running {
            return Ok(());
        }
        let alpha = T::from_f64(s.alpha);
        let sums: Vec<(f64, f64)> = x
            .par_chunks_mut(CHUNK)
            .zip(r.par_chunks_mut(CHUNK))
            .enumerate()
            .map(|(c, (xc, rc))| {
                let base = c * CHUNK;
                let (mut rr, mut rz) = (0.0f64, 0.0f64);
                for k in 0..xc.len() {
                    let i = base + k;
                    xc[k] += alpha * p[i];
                    let ri = rc[k] - alpha * q[i];
                    rc[k] = ri;
                    rr += ri.to_f64() * ri.to_f64();
                    rz += match precond {
                        PrecondForm::Identity => ri.to_f64() * ri.to_f64(),
                        PrecondForm::Diagonal(d) => ri.to_f64() * (d[i] * ri).to_f64(),
                        PrecondForm::General => 0.0,
                    };
                }
                (rr, rz)
            })
            .collect();
        let (rr, rho_new) = sums.iter().fold((0.0, 0.0), |(a, b), &(c, d)| (a + c, b + d));
        s.rr = rr;
        s.iterations += 1;
        s.record();
        if !rr.is_finite() {
            s.status = Status::NonFinite;
            return Ok(());
        }
        if !matches!(precond, PrecondForm::General) {
            if !rho_new.is_finite() {
                s.status = Status::NonFinite;
                return Ok(());
            }
            s.beta = rho_new / s.rho;
            s.rho = rho_new;
        }
        if rr <= s.tol2 {
            s.status = Status::Converged;
        }
        Ok(())
    }

    fn rho_step(&self, s: &mut HostState, r: &Vec<T>, z: &Vec<T>) -> Result<()> {
        check_len("cg rho: length of z", r.len(), z.len())?;
        if s.status != Status::Running {
            return Ok(());
        }
        let rho_new = fixed_sum(r.len(), |i| r[i].to_f64() * z[i].to_f64());
        if !rho_new.is_finite() {
            s.status = Status::NonFinite;
        } else {
            s.beta = rho_new / s.rho;
            s.rho = rho_new;
        }
        Ok(())
    }

    fn direction(
        &self,
        s: &mut HostState,
        p: &mut Vec<T>,
        r: &Vec<T>,
        z: &Vec<T>,
        precond: PrecondForm<'_, Vec<T>>,
    ) -> Result<()> {
        let n = p.len();
        check_len("cg direction: length of r", n, r.len())?;
        match precond {
            PrecondForm::Diagonal(d) => check_len("cg direction: length of the inverse diagonal", n, d.len())?,
            PrecondForm::General => check_len("cg direction: length of z", n, z.len())?,
            PrecondForm::Identity => {}
        }
        if s.status != Status::Running {
            return Ok(());
        }
        let beta = T::from_f64(s.beta);
        p.par_iter_mut().enumerate().with_min_len(CHUNK).for_each(|(i, pi)| {
            let zi = match precond {
                PrecondForm::Identity => r[i],
                PrecondForm::Diagonal(d) => d[i] * r[i],
                PrecondForm::General => z[i],
            };
            *pi = zi + beta * *pi;
        });
        Ok(())
    }

    fn checkpoint(&self, s: &HostState) -> Result<Checkpoint> {
        Ok(Checkpoint { status: s.status, iterations: s.iterations, rr: s.rr, pap: s.pap })
    }

    fn history(&self, s: &HostState, count: usize) -> Result<Vec<f64>> {
        Ok(s.history.iter().copied().take(count).collect())
    }

    fn is_running(&self, s: &HostState) -> Option<bool> {
        Some(s.status == Status::Running)
    }

    fn matrix(&self, a: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        Ok(a.clone())
    }

    /// 64-bit row offsets, 32-bit columns and the values.
    fn matrix_bytes(&self, m: &CsrMatrix<T>) -> Option<u64> {
        Some(((m.nrows() + 1) * 8 + m.nnz() * (4 + T::BYTES)) as u64)
    }

    fn spmv(
        &self,
        _s: &mut HostState,
        a: &CsrMatrix<T>,
        alpha: f64,
        x: &Vec<T>,
        beta: f64,
        y: &mut Vec<T>,
    ) -> Result<()> {
        crate::reference::spmv_csr(T::from_f64(alpha), a, x, T::from_f64(beta), y)
    }

    // The three AMG steps below round as the kernels of `ptx/amg.cu` do.
    fn axpby(&self, _s: &mut HostState, a: f64, x: &Vec<T>, b: f64, y: &mut Vec<T>) -> Result<()> {
        check_len("amg axpby: length of x", y.len(), x.len())?;
        if b == 0.0 {
            y.par_iter_mut().zip(x.par_iter()).with_min_len(CHUNK).for_each(|(y, x)| *y = T::from_f64(a * x.to_f64()));
        } else {
            y.par_iter_mut()
                .zip(x.par_iter())
                .with_min_len(CHUNK)
                .for_each(|(y, x)| *y = T::from_f64(a * x.to_f64() + b * y.to_f64()));
        }
        Ok(())
    }

    fn chebyshev_step(
        &self,
        _s: &mut HostState,
        c1: f64,
        c2: f64,
        dinv: &Vec<T>,
        r: &Vec<T>,
        d: &mut Vec<T>,
        x: &mut Vec<T>,
    ) -> Result<()> {
        let n = x.len();
        check_len("amg chebyshev: length of the inverse diagonal", n, dinv.len())?;
        check_len("amg chebyshev: length of r", n, r.len())?;
        check_len("amg chebyshev: length of d", n, d.len())?;
        x.par_iter_mut().zip(d.par_iter_mut()).enumerate().with_min_len(CHUNK).for_each(|(i, (x, d))| {
            let z = c1 * dinv[i].to_f64() * r[i].to_f64();
            let di = T::from_f64(if c2 == 0.0 { z } else { z + c2 * d.to_f64() });
            *d = di;
            *x = T::from_f64(x.to_f64() + di.to_f64());
        });
        Ok(())
    }

    fn jacobi_step(&self, _s: &mut HostState, w: f64, dinv: &Vec<T>, r: &Vec<T>, x: &mut Vec<T>) -> Result<()> {
        let n = x.len();
        check_len("amg jacobi: length of the inverse diagonal", n, dinv.len())?;
        check_len("amg jacobi: length of r", n, r.len())?;
        x.par_iter_mut().enumerate().with_min_len(CHUNK).for_each(|(i, x)| {
            *x = T::from_f64(x.to_f64() + w * dinv[i].to_f64() * r[i].to_f64());
        });
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_norms_neither_overflow_nor_underflow() {
        let norm = |v: Vec<f64>| Backend::<f64>::norm(&Host, &v).unwrap();
        // 1e200^2 overflows f64, 1e-200^2 underflows it.
        for big in [1e200, 1e-200, 1.0] {
            let v: Vec<f64> = (0..100_000).map(|i| if i % 2 == 0 { big } else { -big }).collect();
            let n = norm(v);
            assert_eq!(n.max_abs, big);
            let rel = (n.value() / (big * 100_000f64.sqrt()) - 1.0).abs();
            assert!(rel < 1e-12, "{big}: {}", n.value());
        }
        assert_eq!(norm(vec![0.0; 5]), ScaledNorm { max_abs: 0.0, ssq: 0.0 });
        assert_eq!(norm(Vec::new()).value(), 0.0);
        assert_eq!(norm(vec![3.0, -4.0]).value(), 5.0);
        assert!(!norm(vec![1.0, f64::NAN, 2.0]).entries_finite());
        assert!(!norm(vec![1.0, f64::INFINITY]).entries_finite());
        assert!(norm(vec![1.0, f64::NAN]).value().is_nan());
        // Finite entries whose norm exceeds f64::MAX: the entries are finite, the value is not.
        let n = norm(vec![f64::MAX, f64::MAX]);
        assert!(n.entries_finite() && n.value().is_infinite());
    }
}
