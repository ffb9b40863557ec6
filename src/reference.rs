//! The CPU reference SpMV: the oracle every GPU result is compared with.
//!
//! [`spmv_csr`] and [`spmv_ell`] compute `y = alpha*A*x + beta*y`, accumulating each row's
//! sum in `f64` whatever the element type, and rounding once when `y[i]` is stored;
//! [`spmv_transpose`] computes `y = alpha*A^T*x + beta*y` in the same way, each `y[j]` summed
//! over column `j` of `A` in increasing row order. When
//! `beta == 0`, `y` is never read (BLAS semantics): NaN or garbage in `y` does not spread.
//! Matrices with more than [`PARALLEL_THRESHOLD`] stored entries are processed in
//! parallel over rows (rayon); each row is still summed in order, so the result does not
//! depend on the number of threads.

use crate::{CsrMatrix, EllMatrix, Error, Result, Scalar};
use rayon::prelude::*;

/// Matrices with more stored entries than this are processed on all cores.
pub const PARALLEL_THRESHOLD: usize = 1 << 16;

fn check_dims(op_x: &'static str, op_y: &'static str, ncols: usize, nrows: usize, x: usize, y: usize) -> Result<()> {
    if x != ncols {
        return Err(Error::DimensionMismatch { op: op_x, expected: ncols, found: x });
    }
    if y != nrows {
        return Err(Error::DimensionMismatch { op: op_y, expected: nrows, found: y });
    }
    Ok(())
}

#[inline]
fn finish<T: Scalar>(alpha: f64, sum: f64, beta: f64, y: &mut T) {
    *y = if beta == 0.0 { T::from_f64(alpha * sum) } else { T::from_f64(alpha * sum + beta * y.to_f64()) };
}

/// `y = alpha*A*x + beta*y` for a CSR matrix, on the CPU.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] if `x.len() != a.ncols()` or `y.len() != a.nrows()`; `y`
/// is then left untouched.
///
/// # Example
///
/// ```
/// use spgpu::{reference, CsrMatrix};
/// let a = CsrMatrix::try_from_parts(2, 2, vec![0, 2, 3], vec![0, 1, 1], vec![2.0, 1.0, 3.0])?;
/// let mut y = vec![1.0, 1.0];
/// reference::spmv_csr(2.0, &a, &[1.0, 2.0], -1.0, &mut y)?;
/// assert_eq!(y, vec![2.0 * 4.0 - 1.0, 2.0 * 6.0 - 1.0]);
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn spmv_csr<T: Scalar>(alpha: T, a: &CsrMatrix<T>, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
    check_dims("reference spmv: length of x", "reference spmv: length of y", a.ncols(), a.nrows(), x.len(), y.len())?;
    let (alpha, beta) = (alpha.to_f64(), beta.to_f64());
    let row = |i: usize, yi: &mut T| {
        let (cols, vals) = a.row(i);
        let sum: f64 = cols.iter().zip(vals).map(|(&c, &v)| v.to_f64() * x[c as usize].to_f64()).sum();
        finish(alpha, sum, beta, yi);
    };
    if a.nnz() > PARALLEL_THRESHOLD {
        y.par_iter_mut().enumerate().with_min_len(256).for_each(|(i, yi)| row(i, yi));
    } else {
        y.iter_mut().enumerate().for_each(|(i, yi)| row(i, yi));
    }
    Ok(())
}

/// `y = alpha*A^T*x + beta*y` for a CSR matrix, on the CPU, without forming `A^T`: `x` has
/// `a.nrows()` entries and `y` has `a.ncols()`.
///
/// Each `y[j]` is the sum over column `j` of `A`, accumulated in `f64` in increasing row
/// order (the order of row `j` of [`CsrMatrix::transpose`]), then rounded once. Matrices
/// with more than [`PARALLEL_THRESHOLD`] entries are processed in parallel over ranges of
/// `y`, each reading every row's entries in its range (a binary search per row); the result
/// does not depend on the number of threads. `beta == 0` never reads `y`.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] if `x.len() != a.nrows()` or `y.len() != a.ncols()`; `y`
/// is then left untouched.
///
/// # Example
///
/// ```
/// use spgpu::{reference, CsrMatrix};
/// // A = [2 1]    A^T x = [2*1 + 0*2]
/// //     [0 3]            [1*1 + 3*2]
/// let a = CsrMatrix::try_from_parts(2, 2, vec![0, 2, 3], vec![0, 1, 1], vec![2.0, 1.0, 3.0])?;
/// let mut y = vec![1.0, 1.0];
/// reference::spmv_transpose(2.0, &a, &[1.0, 2.0], -1.0, &mut y)?;
/// assert_eq!(y, vec![2.0 * 2.0 - 1.0, 2.0 * 7.0 - 1.0]);
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn spmv_transpose<T: Scalar>(alpha: T, a: &CsrMatrix<T>, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
    check_dims(
        "reference spmv_transpose: length of x",
        "reference spmv_transpose: length of y",
        a.nrows(),
        a.ncols(),
        x.len(),
        y.len(),
    )?;
    let (alpha, beta) = (alpha.to_f64(), beta.to_f64());
    // the sums of columns lo..lo + y.len(), into y
    let columns = |lo: usize, y: &mut [T]| {
        let hi = (lo + y.len()) as u32;
        let mut sums = vec![0.0f64; y.len()];
        for (i, xi) in x.iter().enumerate() {
            let (cols, vals) = a.row(i);
            let first = if lo == 0 { 0 } else { cols.partition_point(|&c| (c as usize) < lo) };
            for (&c, &v) in cols[first..].iter().zip(&vals[first..]).take_while(|(&c, _)| c < hi) {
                sums[c as usize - lo] += v.to_f64() * xi.to_f64();
            }
        }
        for (s, yj) in sums.into_iter().zip(y) {
            finish(alpha, s, beta, yj);
        }
    };
    if a.nnz() > PARALLEL_THRESHOLD {
        let range = a.ncols().div_ceil(4 * rayon::current_num_threads()).max(256);
        y.par_chunks_mut(range).enumerate().for_each(|(k, y)| columns(k * range, y));
    } else {
        columns(0, y);
    }
    Ok(())
}

/// `y = alpha*A*x + beta*y` for an ELLPACK matrix, on the CPU. Padding slots are skipped.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] if `x.len() != a.ncols()` or `y.len() != a.nrows()`.
pub fn spmv_ell<T: Scalar>(alpha: T, a: &EllMatrix<T>, x: &[T], beta: T, y: &mut [T]) -> Result<()> {
    check_dims("reference spmv: length of x", "reference spmv: length of y", a.ncols(), a.nrows(), x.len(), y.len())?;
    let (alpha, beta) = (alpha.to_f64(), beta.to_f64());
    let row = |i: usize, yi: &mut T| {
        let sum: f64 = a.row(i).map(|(c, v)| v.to_f64() * x[c as usize].to_f64()).sum();
        finish(alpha, sum, beta, yi);
    };
    if a.nnz() > PARALLEL_THRESHOLD {
        y.par_iter_mut().enumerate().with_min_len(256).for_each(|(i, yi)| row(i, yi));
    } else {
        y.iter_mut().enumerate().for_each(|(i, yi)| row(i, yi));
    }
    Ok(())
}

/// The relative error `||a - b|| / ||b||` in the 2-norm, computed in `f64`; `b` is the
/// reference. Returns the absolute error `||a - b||` when `||b|| == 0`, and infinity when
/// the lengths differ or any element of `a` is NaN.
pub fn relative_error<T: Scalar>(a: &[T], b: &[T]) -> f64 {
    if a.len() != b.len() || a.iter().any(|v| v.to_f64().is_nan()) {
        return f64::INFINITY;
    }
    let diff: f64 = a.iter().zip(b).map(|(x, y)| (x.to_f64() - y.to_f64()).powi(2)).sum::<f64>().sqrt();
    let norm: f64 = b.iter().map(|y| y.to_f64().powi(2)).sum::<f64>().sqrt();
    if norm == 0.0 {
        diff
    } else {
        diff / norm
    }
}
