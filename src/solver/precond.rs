//! Preconditioners: none ([`Identity`]), diagonal ([`Jacobi`]) and algebraic multigrid
//! ([`Amg`](super::Amg)), behind the [`Preconditioner`] trait.

use super::backend::{Backend, PrecondForm};
use super::CgError;
use crate::{Result, Scalar};

/// A preconditioner `M`, approximating `A`, applied as `z = M^-1 r`.
///
/// CG needs `M` symmetric positive definite. A preconditioner that is diagonal says so
/// through [`Preconditioner::form`], and the backend then fuses `z = M^-1 r` into the
/// vector updates instead of calling [`Preconditioner::apply`].
pub trait Preconditioner<T: Scalar, B: Backend<T>> {
    /// A short name for reports: `"none"`, `"jacobi"`.
    fn name(&self) -> &'static str;

    /// `z = M^-1 r`.
    ///
    /// # Errors
    ///
    /// Dimension mismatches and backend failures.
    fn apply(&self, backend: &B, r: &B::Vector, z: &mut B::Vector) -> Result<()>;

    /// `z = M^-1 r` inside a CG iteration, with the iteration's state, so that the work can
    /// be enqueued (and recorded) with the iteration's own steps. The default calls
    /// [`Preconditioner::apply`].
    ///
    /// # Errors
    ///
    /// As [`Preconditioner::apply`].
    fn apply_in(&self, backend: &B, state: &mut B::State, r: &B::Vector, z: &mut B::Vector) -> Result<()> {
        let _ = state;
        self.apply(backend, r, z)
    }

    /// Whether [`Preconditioner::apply_in`] enqueues only through the backend's steps that
    /// take the state ([`Backend::spmv`], [`Backend::axpby`], [`Backend::chebyshev_step`],
    /// [`Backend::jacobi_step`]), allocates nothing and never synchronizes: then a
    /// [`PrecondForm::General`] preconditioner is recorded into the iteration's CUDA graph.
    /// The default is `false` (it is then applied step by step, outside any recording).
    fn recordable(&self) -> bool {
        false
    }

    /// How the backend's fused kernels can apply this preconditioner; the default,
    /// [`PrecondForm::General`], calls [`Preconditioner::apply`] once per iteration.
    fn form(&self) -> PrecondForm<'_, B::Vector> {
        PrecondForm::General
    }
}

/// No preconditioning: `M = I`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Identity;

impl<T: Scalar, B: Backend<T>> Preconditioner<T, B> for Identity {
    fn name(&self) -> &'static str {
        "none"
    }

    fn apply(&self, backend: &B, r: &B::Vector, z: &mut B::Vector) -> Result<()> {
        backend.copy(r, z)
    }

    fn form(&self) -> PrecondForm<'_, B::Vector> {
        PrecondForm::Identity
    }
}

/// Jacobi (diagonal) preconditioning: `M = diag(A)`, stored as its inverse where the
/// backend computes.
///
/// # Example
///
/// ```
/// use spgpu::solver::{Host, Jacobi, CgError};
/// let j = Jacobi::<Vec<f64>>::from_diagonal(&Host, &[2.0, 4.0])?;
/// assert_eq!(j.inverse_diagonal(), &vec![0.5, 0.25]);
/// // A zero diagonal entry is refused, naming the row.
/// let err = Jacobi::<Vec<f64>>::from_diagonal(&Host, &[2.0, 0.0]).unwrap_err();
/// assert!(matches!(err, CgError::InvalidDiagonal { row: 1, .. }));
/// # Ok::<(), CgError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Jacobi<V> {
    inv_diag: V,
}

impl<V> Jacobi<V> {
    /// Builds the preconditioner from the diagonal of `A`, on the host, and uploads its
    /// inverse with `backend`.
    ///
    /// # Errors
    ///
    /// [`CgError::InvalidDiagonal`] for the first entry that is zero, negative or not finite
    /// (then `A` is not symmetric positive definite, or a diagonal entry is not stored), and
    /// [`CgError::Backend`] when the upload fails.
    pub fn from_diagonal<T: Scalar, B: Backend<T, Vector = V>>(backend: &B, diagonal: &[T]) -> Result<Self, CgError> {
        let mut inv = Vec::with_capacity(diagonal.len());
        for (row, &d) in diagonal.iter().enumerate() {
            let v = d.to_f64();
            if !(v.is_finite() && v > 0.0) {
                return Err(CgError::InvalidDiagonal { row, value: v });
            }
            inv.push(T::from_f64(1.0 / v));
        }
        Ok(Jacobi { inv_diag: backend.upload(&inv)? })
    }

    /// The stored inverse diagonal `1 / a_ii`.
    pub fn inverse_diagonal(&self) -> &V {
        &self.inv_diag
    }
}

impl<T: Scalar, B: Backend<T>> Preconditioner<T, B> for Jacobi<B::Vector> {
    fn name(&self) -> &'static str {
        "jacobi"
    }

    /// `z = r / diag(A)`. CG does not call this: the division is fused into its updates.
    fn apply(&self, backend: &B, r: &B::Vector, z: &mut B::Vector) -> Result<()> {
        backend.hadamard(&self.inv_diag, r, z)
    }

    fn form(&self) -> PrecondForm<'_, B::Vector> {
        PrecondForm::Diagonal(&self.inv_diag)
    }
}

/// Which preconditioner [`CgParams`](super::CgParams) asks [`cg`](super::cg) to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PreconditionerKind {
    /// No preconditioner.
    #[default]
    None,
    /// Jacobi: `M = diag(A)`, from [`LinearOperator::diagonal`](super::LinearOperator::diagonal).
    Jacobi,
    /// Smoothed-aggregation algebraic multigrid ([`Amg`](super::Amg)), built with
    /// [`CgParams::amg`](super::CgParams::amg) from the host matrix
    /// ([`LinearOperator::host_matrix`](super::LinearOperator::host_matrix)).
    Amg,
    /// AMG, Jacobi or none, chosen from the matrix (see [`AutoChoice`](super::AutoChoice)):
    /// Jacobi on skewed degree distributions and strongly diagonally dominant matrices, or
    /// where the AMG hierarchy coarsens too slowly or costs too much; none on a diagonal
    /// that is not positive.
    Auto,
}

impl PreconditionerKind {
    /// The name `FromStr` reads: `"none"`, `"jacobi"`, `"amg"`, `"auto"`.
    pub fn name(self) -> &'static str {
        match self {
            PreconditionerKind::None => "none",
            PreconditionerKind::Jacobi => "jacobi",
            PreconditionerKind::Amg => "amg",
            PreconditionerKind::Auto => "auto",
        }
    }
}

impl std::str::FromStr for PreconditionerKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "none" => Ok(PreconditionerKind::None),
            "jacobi" => Ok(PreconditionerKind::Jacobi),
            "amg" => Ok(PreconditionerKind::Amg),
            "auto" => Ok(PreconditionerKind::Auto),
            _ => Err(format!("unknown preconditioner '{s}': expected none, jacobi, amg or auto")),
        }
    }
}
