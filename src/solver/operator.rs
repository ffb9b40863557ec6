//! The linear-operator abstraction CG is written against.

use crate::gpu::{DeviceCsr, DeviceEll};
use crate::{CsrMatrix, Error, Result, Scalar};

/// A device matrix that the device backend can fuse into CG's `q = A p, p'Ap` step
/// (see [`LinearOperator::device_matrix`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum DeviceMatrix<'a, T: Scalar> {
    /// A CSR matrix (fused when its plan runs the scalar kernel).
    Csr(&'a DeviceCsr<T>),
    /// An ELLPACK matrix.
    Ell(&'a DeviceEll<T>),
}

/// A linear map `A`, applied as `y = alpha*A*x + beta*y`.
///
/// The conjugate-gradient solver takes an operator, never a storage format, so the same
/// algorithm runs on the host ([`CsrMatrix`], with `Vector = Vec<T>`) and on the device
/// (`DeviceCsr` and `DeviceEll`, with `Vector = DeviceVector<T>`).
///
/// `beta == 0` means `y` is never read (BLAS semantics): NaN or garbage in `y` does not
/// spread.
///
/// # Example
///
/// ```
/// use spgpu::{gen, solver::LinearOperator, CsrMatrix};
/// let a: CsrMatrix<f64> = gen::laplacian_2d(3);
/// let x = vec![1.0; 9];
/// let mut y = vec![f64::NAN; 9];
/// a.apply(2.0, &x, 0.0, &mut y)?;
/// assert_eq!(y[4], 0.0); // the centre row of the Laplacian sums to zero
/// assert_eq!(y[0], 4.0); // a corner row: 2 * (4 - 1 - 1)
/// # Ok::<(), spgpu::Error>(())
/// ```
pub trait LinearOperator<T: Scalar> {
    /// The vector type `apply` reads and writes: `Vec<T>` on the host, a device vector on
    /// the GPU.
    type Vector;

    /// Number of rows (the length of `y`).
    fn nrows(&self) -> usize;

    /// Number of columns (the length of `x`).
    fn ncols(&self) -> usize;

    /// `y = alpha*A*x + beta*y`; with `beta == 0`, `y` is not read.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `x` or `y` has the wrong length, and whatever the
    /// backend reports (a CUDA error on the device).
    fn apply(&self, alpha: T, x: &Self::Vector, beta: T, y: &mut Self::Vector) -> Result<()>;

    /// The device matrix behind the operator, when there is one: the device backend then
    /// fuses `q = A p` with the `p'Ap` reduction of CG. The default is `None`.
    fn device_matrix(&self) -> Option<DeviceMatrix<'_, T>> {
        None
    }

    /// The matrix as a host [`CsrMatrix`], for preconditioners built from its entries
    /// (AMG): a copy on the host, a download on the device.
    ///
    /// # Errors
    ///
    /// The default returns [`Error::InvalidArgument`].
    fn host_matrix(&self) -> Result<CsrMatrix<T>> {
        Err(Error::InvalidArgument(
            "this operator has no stored matrix to build AMG from; build the preconditioner with Amg::build \
             from a CsrMatrix"
                .into(),
        ))
    }

    /// The main diagonal, on the host, for diagonal (Jacobi) preconditioning.
    ///
    /// # Errors
    ///
    /// The default returns [`Error::InvalidArgument`]: an operator that cannot expose its
    /// diagonal needs an explicitly built preconditioner
    /// ([`Jacobi::from_diagonal`](super::Jacobi::from_diagonal)).
    fn diagonal(&self) -> Result<Vec<T>> {
        Err(Error::InvalidArgument(
            "this operator does not expose its diagonal; build the Jacobi preconditioner with \
             Jacobi::from_diagonal"
                .into(),
        ))
    }
}

impl<T: Scalar> LinearOperator<T> for CsrMatrix<T> {
    type Vector = Vec<T>;

    fn nrows(&self) -> usize {
        CsrMatrix::nrows(self)
    }

    fn ncols(&self) -> usize {
        CsrMatrix::ncols(self)
    }

    /// The CPU reference SpMV ([`crate::reference::spmv_csr`]): row sums in `f64`.
    fn apply(&self, alpha: T, x: &Vec<T>, beta: T, y: &mut Vec<T>) -> Result<()> {
        crate::reference::spmv_csr(alpha, self, x, beta, y)
    }

    fn diagonal(&self) -> Result<Vec<T>> {
        Ok(CsrMatrix::diagonal(self))
    }

    fn host_matrix(&self) -> Result<CsrMatrix<T>> {
        Ok(self.clone())
    }
}
