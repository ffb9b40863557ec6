//! The coarsest level's direct solve: a dense Cholesky factorisation in `f64` and the
//! explicit inverse, stored as a dense CSR matrix so the cycle applies it by SpMV (kernels
//! only, so it records into the CUDA graph).

use crate::CsrMatrix;
use rayon::prelude::*;

/// Why a dense Cholesky factorisation failed: the pivot of `row` was `pivot <= 0` (or not
/// finite), so the matrix is not positive definite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NotPositiveDefinite {
    /// The row whose pivot failed.
    pub(crate) row: usize,
    /// Its value.
    pub(crate) pivot: f64,
}

/// The inverse of the symmetric positive definite `a` (`n x n`), as a dense CSR matrix with
/// every entry stored.
///
/// A row whose entries are all zero (a coarse DOF whose tentative column was zeroed) is
/// inert: it is left out of the factorisation and its row and column of the inverse are
/// zero (stored).
///
/// # Errors
///
/// [`NotPositiveDefinite`] naming the first failing pivot.
pub(crate) fn cholesky_inverse(a: &CsrMatrix<f64>) -> Result<CsrMatrix<f64>, NotPositiveDefinite> {
    let n = a.nrows();
    let mut m = a.to_dense(); // row-major n x n; its lower triangle becomes L
    let inert: Vec<bool> = (0..n).map(|i| a.row(i).1.iter().all(|&v| v == 0.0)).collect();
    for i in 0..n {
        if inert[i] {
            m[i * n + i] = 1.0;
        }
    }
    // Right-looking Cholesky, column by column, every inner loop an axpy over contiguous
    // memory (which vectorizes, where a dot product's sum in order does not): column k of
    // L is kept a second time, contiguous, in `lt` (row k of L^T).
    let mut lt = vec![0.0; n * n];
    for k in 0..n {
        let d = m[k * n + k];
        if !(d > 0.0 && d.is_finite()) {
            return Err(NotPositiveDefinite { row: k, pivot: d });
        }
        let lkk = d.sqrt();
        m[k * n + k] = lkk;
        lt[k * n + k] = lkk;
        for i in k + 1..n {
            let l = m[i * n + k] / lkk;
            m[i * n + k] = l;
            lt[k * n + i] = l;
        }
        // the trailing update of the lower triangle: row i, columns k+1..=i
        let col = &lt[k * n..k * n + n];
        for i in k + 1..n {
            let f = col[i];
            if f != 0.0 {
                axpy(-f, &col[k + 1..=i], &mut m[i * n + k + 1..=i * n + i]);
            }
        }
    }
    // Column c of the inverse from row c down (the rest is its mirror): L y = e_c forward
    // (by columns of L, in `lt`), then L^T z = y backward (by rows of L) down to row c,
    // which needs only y[c..]; the columns in parallel, each in a fixed order.
    let columns: Vec<Vec<f64>> = (0..n)
        .into_par_iter()
        .map(|c| {
            let mut y = vec![0.0; n - c]; // y[i - c]
            y[0] = 1.0;
            for j in c..n {
                let yj = y[j - c] / lt[j * n + j];
                y[j - c] = yj;
                if yj != 0.0 {
                    axpy(-yj, &lt[j * n + j + 1..j * n + n], &mut y[j + 1 - c..]);
                }
            }
            for i in (c..n).rev() {
                let zi = y[i - c] / m[i * n + i];
                y[i - c] = zi;
                if zi != 0.0 {
                    axpy(-zi, &m[i * n + c..i * n + i], &mut y[..i - c]);
                }
            }
            y
        })
        .collect();
    let mut inv = vec![0.0; n * n];
    for (c, col) in columns.iter().enumerate() {
        for (k, &v) in col.iter().enumerate() {
            inv[(c + k) * n + c] = v;
            inv[c * n + c + k] = v;
        }
    }
    for i in (0..n).filter(|&i| inert[i]) {
        for j in 0..n {
            inv[i * n + j] = 0.0;
            inv[j * n + i] = 0.0;
        }
    }
    let offsets: Vec<u64> = (0..=n).map(|i| (i * n) as u64).collect();
    let cols: Vec<u32> = (0..n * n).map(|p| (p % n) as u32).collect();
    Ok(CsrMatrix::try_from_parts(n, n, offsets, cols, inv).expect("a dense square matrix"))
}

/// `y += a x` (equal lengths).
fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    debug_assert_eq!(x.len(), y.len());
    for (v, &u) in y.iter_mut().zip(x) {
        *v += a * u;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_times_matrix_is_the_identity() {
        let a = crate::gen::laplacian_2d::<f64>(5);
        let inv = cholesky_inverse(&a).unwrap().to_dense();
        let d = a.to_dense();
        let n = 25;
        for i in 0..n {
            for j in 0..n {
                let v: f64 = (0..n).map(|k| inv[i * n + k] * d[k * n + j]).sum();
                assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12, "{i} {j} {v}");
            }
        }
    }

    #[test]
    fn an_inert_row_gets_a_zero_row_and_column_and_the_rest_is_inverted() {
        // lap2d:8 (64 rows) with row and column 10 emptied, then stored as explicit zeros
        let a = crate::gen::laplacian_2d::<f64>(8);
        let n = 64;
        let mut d = a.to_dense();
        for j in 0..n {
            d[10 * n + j] = 0.0;
            d[j * n + 10] = 0.0;
        }
        let offsets: Vec<u64> = (0..=n).map(|i| (i * n) as u64).collect();
        let cols: Vec<u32> = (0..n * n).map(|p| (p % n) as u32).collect();
        let a = CsrMatrix::try_from_parts(n, n, offsets, cols, d.clone()).unwrap();
        let inv = cholesky_inverse(&a).unwrap().to_dense();
        for i in 0..n {
            for j in 0..n {
                let v: f64 = (0..n).map(|k| inv[i * n + k] * d[k * n + j]).sum();
                let want = if i == j && i != 10 { 1.0 } else { 0.0 };
                assert!((v - want).abs() < 1e-12, "{i} {j} {v}");
                assert_eq!(inv[i * n + j], inv[j * n + i], "symmetric");
            }
        }
        assert!((0..n).all(|j| inv[10 * n + j] == 0.0));
    }

    #[test]
    fn an_indefinite_matrix_names_its_pivot() {
        let a = CsrMatrix::try_from_parts(2, 2, vec![0, 2, 4], vec![0, 1, 0, 1], vec![1.0, 2.0, 2.0, 1.0]).unwrap();
        let e = cholesky_inverse(&a).unwrap_err();
        assert_eq!(e.row, 1);
        assert!(e.pivot < 0.0);
    }
}
