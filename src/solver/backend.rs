//! The vector space CG iterates in: host `Vec<T>` or device vectors, with the iteration's
//! scalars kept where the vectors live.

use super::amg::{AmgDeviceMatrix, AmgDeviceVector};
use super::operator::{DeviceMatrix, LinearOperator};
use crate::{CsrMatrix, Result, Scalar};

/// What a CG iteration's state says about the solve, as a checkpoint reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Still iterating.
    Running,
    /// The recurrence residual met the tolerance.
    Converged,
    /// `p'Ap <= 0`: the operator (or the preconditioner) is not positive definite, or
    /// `p'Ap` underflowed or rounded below zero at machine precision (the solver tells the
    /// two apart by the true residual, see [`StopReason::PrecisionLimit`](super::StopReason::PrecisionLimit)).
    Breakdown,
    /// A NaN or an infinity appeared in `p'Ap`, `r'r` or `r'z`.
    NonFinite,
}

impl Status {
    /// The status code the device kernels write (`ptx/cg.cu`): 0 running, 1 converged, 2
    /// breakdown, 3 non-finite.
    pub fn from_code(code: u32) -> Status {
        match code {
            0 => Status::Running,
            1 => Status::Converged,
            2 => Status::Breakdown,
            _ => Status::NonFinite,
        }
    }
}

/// `||v||` as a scaled sum of squares, computed without overflow or underflow: `||v|| =
/// max_abs * sqrt(ssq)`, where `max_abs` is the largest `|v_i|` and `ssq` the sum of
/// `(v_i / max_abs)^2` (between 1 and `n` for a nonzero `v`; the LAPACK `dnrm2` recurrence).
///
/// # Example
///
/// ```
/// use spgpu::solver::{Backend, Host};
/// // Squaring 1e200 overflows f64; the scaled sum does not.
/// let n = Backend::<f64>::norm(&Host, &vec![1e200, 1e200])?;
/// assert_eq!(n.max_abs, 1e200);
/// assert!((n.value() / 1e200 - 2f64.sqrt()).abs() < 1e-15);
/// # Ok::<(), spgpu::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScaledNorm {
    /// `max |v_i|` (0 for a zero or empty vector; infinite when `v` has an infinity).
    pub max_abs: f64,
    /// `sum (v_i / max_abs)^2` (0 for a zero vector; NaN when `v` has a NaN).
    pub ssq: f64,
}

impl ScaledNorm {
    /// `||v||`; infinite only when `v` has an infinity or `||v||` exceeds `f64::MAX`, NaN
    /// when `v` has a NaN.
    pub fn value(&self) -> f64 {
        self.max_abs * self.ssq.sqrt()
    }

    /// Whether every entry of `v` is finite.
    pub fn entries_finite(&self) -> bool {
        self.max_abs.is_finite() && self.ssq.is_finite()
    }
}

/// A snapshot of the iteration's scalars, copied to the host at a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Checkpoint {
    /// Where the iteration stands.
    pub status: Status,
    /// Iterations completed so far.
    pub iterations: usize,
    /// `||r||^2` of the recurrence residual after the last completed iteration.
    pub rr: f64,
    /// The last `p'Ap` computed (useful in a breakdown message).
    pub pap: f64,
}

/// How the preconditioner enters the fused kernels.
#[derive(Debug)]
pub enum PrecondForm<'a, V> {
    /// No preconditioner: `z = r`.
    Identity,
    /// A diagonal preconditioner given by its inverse diagonal: `z = dinv .* r`, computed on
    /// the fly inside the fused update (`z` is never stored).
    Diagonal(&'a V),
    /// Any other preconditioner: `z = M^-1 r` is computed by the preconditioner into a
    /// vector of its own, and `rho = r'z` by a separate reduction.
    General,
}

impl<V> Clone for PrecondForm<'_, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for PrecondForm<'_, V> {}

/// The vector operations of one CG iteration, each fused as far as the algorithm allows,
/// with the scalars (`rho`, `p'Ap`, `alpha`, `beta`, `||r||^2`, a status word and the
/// iteration count) kept in [`Backend::State`] where the vectors live.
///
/// On the device the step functions only enqueue kernels: no step copies anything to the
/// host, so a whole iteration makes no round trip. Only [`Backend::checkpoint`],
/// [`Backend::dot`] and [`Backend::download`] synchronize. Once the status is no longer
/// [`Status::Running`], every step returns without changing anything (the device kernels
/// check the status word first), so the solver may enqueue several iterations between two
/// checkpoints and still stop at the exact iteration where the tolerance was met.
///
/// Reductions are deterministic: a run repeats bit for bit on the same backend.
///
/// The device backend's types are `Send` and `Sync` (see
/// [the threading model](crate::gpu#threading-model)); each solve uses its own state and
/// vectors.
///
/// The iteration, with `z = M^-1 r`:
///
/// ```text
/// start:      p = z, rho = r'z, rr = r'r; converged if rr <= tol2
/// alpha_step: pAp = p'q (q = A p); alpha = rho / pAp; breakdown if pAp <= 0
/// update:     x += alpha p; r -= alpha q; rr = r'r; rho' = r'z; beta = rho'/rho; rho = rho'
/// direction:  p = z + beta p
/// ```
pub trait Backend<T: Scalar> {
    /// A vector of `T` where this backend computes.
    type Vector;
    /// The iteration's scalars, status word, reduction buffers and residual history.
    type State;
    /// A recorded batch of iterations that can be replayed (a CUDA graph on the device;
    /// `()` on the host, which does not record).
    type Recording;
    /// A matrix where this backend computes ([`Backend::matrix`]): `CsrMatrix<T>` on the
    /// host, `DeviceCsr<T>` on the device.
    type Matrix: LinearOperator<T, Vector = Self::Vector>;

    /// Length of a vector.
    fn len(&self, v: &Self::Vector) -> usize;

    /// A vector of `n` zeros.
    ///
    /// # Errors
    ///
    /// Allocation failures (CUDA errors on the device).
    fn zeros(&self, n: usize) -> Result<Self::Vector>;

    /// A vector holding a copy of `data`.
    ///
    /// # Errors
    ///
    /// Allocation or copy failures.
    fn upload(&self, data: &[T]) -> Result<Self::Vector>;

    /// Copies a vector to the host (synchronizes).
    ///
    /// # Errors
    ///
    /// Copy failures.
    fn download(&self, v: &Self::Vector) -> Result<Vec<T>>;

    /// `dst = src`.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) when lengths differ.
    fn copy(&self, src: &Self::Vector, dst: &mut Self::Vector) -> Result<()>;

    /// `out = a .* b`, element by element.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) when lengths differ.
    fn hadamard(&self, a: &Self::Vector, b: &Self::Vector, out: &mut Self::Vector) -> Result<()>;

    /// `a'b`, accumulated in `f64` in a fixed order, returned to the host (synchronizes).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) when lengths differ.
    fn dot(&self, a: &Self::Vector, b: &Self::Vector) -> Result<f64>;

    /// `||v||` as a [`ScaledNorm`], which never overflows for finite `v`, in a fixed order,
    /// returned to the host (synchronizes).
    ///
    /// # Errors
    ///
    /// Backend failures.
    fn norm(&self, v: &Self::Vector) -> Result<ScaledNorm>;

    /// `v *= alpha` (`alpha` rounded to `T`; the solver passes exact powers of two).
    ///
    /// # Errors
    ///
    /// Backend failures.
    fn scale(&self, alpha: f64, v: &mut Self::Vector) -> Result<()>;

    /// Fresh state for vectors of length `n`, keeping up to `history` residual norms.
    ///
    /// # Errors
    ///
    /// Allocation failures.
    fn new_state(&self, n: usize, history: usize) -> Result<Self::State>;

    /// Starts an iteration from the residual `r = b - A x0`: `p = z`, `rho = r'z`,
    /// `rr = r'r`, status converged if `rr <= tol2`, iteration count 0. With
    /// [`PrecondForm::General`], `z` holds `M^-1 r`; otherwise it is not read.
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    fn start(
        &self,
        state: &mut Self::State,
        tol2: f64,
        r: &Self::Vector,
        z: &Self::Vector,
        precond: PrecondForm<'_, Self::Vector>,
        p: &mut Self::Vector,
    ) -> Result<()>;

    /// `pAp = p'q`, `alpha = rho / pAp`; sets the status to breakdown when `pAp <= 0` and to
    /// non-finite when `pAp` is NaN or infinite.
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    fn alpha_step(&self, state: &mut Self::State, p: &Self::Vector, q: &Self::Vector) -> Result<()>;

    /// `q = A p` and [`Backend::alpha_step`] in one pass, when the backend has a fused
    /// kernel for `matrix`; returns `false` (having done nothing) otherwise, and the solver
    /// then applies the operator and calls `alpha_step`. The default returns `false`.
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    fn fused_spmv_alpha(
        &self,
        state: &mut Self::State,
        matrix: Option<DeviceMatrix<'_, T>>,
        p: &Self::Vector,
        q: &mut Self::Vector,
    ) -> Result<bool> {
        let _ = (state, matrix, p, q);
        Ok(false)
    }

    /// `x += alpha p`, `r -= alpha q`, `rr = r'r` and, unless the preconditioner is
    /// [`PrecondForm::General`], `rho' = r'z`, `beta = rho'/rho`, `rho = rho'`; counts the
    /// iteration, records `rr` in the history, and sets the status to converged when
    /// `rr <= tol2`.
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    #[allow(clippy::too_many_arguments)]
    fn update(
        &self,
        state: &mut Self::State,
        x: &mut Self::Vector,
        r: &mut Self::Vector,
        p: &Self::Vector,
        q: &Self::Vector,
        precond: PrecondForm<'_, Self::Vector>,
    ) -> Result<()>;

    /// For [`PrecondForm::General`] only, after `z = M^-1 r`: `rho' = r'z`,
    /// `beta = rho'/rho`, `rho = rho'`.
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    fn rho_step(&self, state: &mut Self::State, r: &Self::Vector, z: &Self::Vector) -> Result<()>;

    /// `p = z + beta p`, where `z` is `dinv .* r` ([`PrecondForm::Diagonal`]), `r`
    /// ([`PrecondForm::Identity`]) or the vector `z` ([`PrecondForm::General`]).
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    fn direction(
        &self,
        state: &mut Self::State,
        p: &mut Self::Vector,
        r: &Self::Vector,
        z: &Self::Vector,
        precond: PrecondForm<'_, Self::Vector>,
    ) -> Result<()>;

    /// Records the steps that `steps` enqueues (called once, with the state) instead of
    /// running them, when the backend can record every step of an iteration with this
    /// matrix and preconditioner (as a CUDA graph on the device); returns `Ok(None)`
    /// without calling `steps` otherwise. The default returns `Ok(None)`. Nothing that was
    /// recorded has run when this returns; [`Backend::replay`] runs it.
    ///
    /// # Errors
    ///
    /// The error of `steps`, as it returned it; or a backend failure of the recording
    /// itself (for example a CUDA stream-capture error, which
    /// [`Error::is_capture_invalidated`](crate::Error::is_capture_invalidated) tells
    /// apart). Either way nothing ran, and the state is as before.
    fn record(
        &self,
        state: &mut Self::State,
        matrix: Option<DeviceMatrix<'_, T>>,
        precond: PrecondForm<'_, Self::Vector>,
        steps: &mut dyn FnMut(&mut Self::State) -> Result<()>,
    ) -> Result<Option<Self::Recording>> {
        let _ = (state, matrix, precond, steps);
        Ok(None)
    }

    /// Enqueues a recording made by [`Backend::record`] with this state.
    ///
    /// It is safe whatever happened since: the device backend refuses (nothing is queued)
    /// when the recording was made with another state, or when any vector, matrix or state
    /// it uses has been dropped since it was made; otherwise the graph is queued before any
    /// later free of that memory.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) in the cases above, and
    /// backend failures; the default always fails.
    fn replay(&self, state: &mut Self::State, recording: &Self::Recording) -> Result<()> {
        let _ = (state, recording);
        Err(crate::Error::InvalidArgument("this backend does not record iterations".into()))
    }

    /// Copies the status, iteration count and scalars to the host (synchronizes).
    ///
    /// # Errors
    ///
    /// Backend failures.
    fn checkpoint(&self, state: &Self::State) -> Result<Checkpoint>;

    /// The recorded `||r||^2` values, iteration 0 first (synchronizes).
    ///
    /// # Errors
    ///
    /// Backend failures.
    fn history(&self, state: &Self::State, count: usize) -> Result<Vec<f64>>;

    /// Whether the state's status is still [`Status::Running`], when the backend can tell
    /// without synchronizing (the host); `None` otherwise (the device). The solver skips a
    /// general preconditioner's work once it knows the solve has stopped.
    fn is_running(&self, state: &Self::State) -> Option<bool> {
        let _ = state;
        None
    }

    /// A matrix stored where this backend computes, for the operators of a preconditioner's
    /// hierarchy: the host keeps a copy of `a`; the device uploads it with its own SpMV plan
    /// ([`DeviceCsr::upload`](crate::gpu::DeviceCsr::upload)).
    ///
    /// # Errors
    ///
    /// Allocation and upload failures.
    fn matrix(&self, a: &CsrMatrix<T>) -> Result<Self::Matrix>;

    /// The bytes `m` holds where this backend computes, for memory reports (AMG's
    /// [`AmgMemory`](super::amg::AmgMemory)); `None`, the default, where the backend does not
    /// count them.
    fn matrix_bytes(&self, m: &Self::Matrix) -> Option<u64> {
        let _ = m;
        None
    }

    /// The backend's matrix for a matrix of an AMG hierarchy built on a GPU. The default
    /// copies it to the host ([`AmgDeviceMatrix::download`]) and calls [`Backend::matrix`];
    /// the device backend keeps its arrays where they are, with a CSR kernel's plan
    /// ([`DeviceCsr`](crate::gpu::DeviceCsr)).
    ///
    /// # Errors
    ///
    /// Allocation and copy failures.
    fn amg_matrix(&self, m: AmgDeviceMatrix) -> Result<Self::Matrix> {
        self.matrix(&m.download::<T>()?)
    }

    /// The backend's vector for a vector of an AMG hierarchy built on a GPU. The default
    /// copies it through the host ([`AmgDeviceVector::download`]); the device backend keeps
    /// it where it is.
    ///
    /// # Errors
    ///
    /// Allocation and copy failures.
    fn amg_vector(&self, v: AmgDeviceVector) -> Result<Self::Vector> {
        self.upload(&v.download::<T>()?)
    }

    /// `y = alpha*A*x + beta*y` for a matrix made by [`Backend::matrix`], enqueued with the
    /// iteration's state (so that it is recorded with the iteration on the device); with
    /// `beta == 0`, `y` is not read. `alpha` and `beta` are rounded to `T`.
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    fn spmv(
        &self,
        state: &mut Self::State,
        a: &Self::Matrix,
        alpha: f64,
        x: &Self::Vector,
        beta: f64,
        y: &mut Self::Vector,
    ) -> Result<()>;

    /// `y = a*x + b*y`, computed in `f64` and rounded to `T`; with `b == 0`, `y` is not read.
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    fn axpby(&self, state: &mut Self::State, a: f64, x: &Self::Vector, b: f64, y: &mut Self::Vector) -> Result<()>;

    /// One step of a Chebyshev smoother: `d = c1 * dinv .* r + c2 * d` (with `c2 == 0`, `d`
    /// is not read), rounded to `T`, then `x += d`.
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    #[allow(clippy::too_many_arguments)]
    fn chebyshev_step(
        &self,
        state: &mut Self::State,
        c1: f64,
        c2: f64,
        dinv: &Self::Vector,
        r: &Self::Vector,
        d: &mut Self::Vector,
        x: &mut Self::Vector,
    ) -> Result<()>;

    /// One Jacobi step: `x += w * dinv .* r` (l1-Jacobi when `dinv` holds the inverse l1
    /// row norms).
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    fn jacobi_step(
        &self,
        state: &mut Self::State,
        w: f64,
        dinv: &Self::Vector,
        r: &Self::Vector,
        x: &mut Self::Vector,
    ) -> Result<()>;

    /// Waits until all enqueued work is done (a no-op on the host).
    ///
    /// # Errors
    ///
    /// Backend failures.
    fn synchronize(&self) -> Result<()>;

    /// The GPU this backend computes on, where setups that have a device path (the AMG
    /// hierarchy) run by default; `None` (the default) on the host.
    fn device_context(&self) -> Option<&'static crate::gpu::Context> {
        None
    }
}
