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
    let mut m = a.to_dense(); // row-major n x n
    let inert: Vec<bool> = (0..n).map(|i| a.row(i).1.iter().all(|&v| v == 0.0)).collect();
    for i in 0..n {
        if inert[i] {
            m[i * n + i] = 1.0;
        }
    }
    // In place, row by row: the lower triangle becomes L (A = L L'), each entry's sum over
    // two contiguous row prefixes.
    for j in 0..n {
        let (done, rest) = m.split_at_mut(j * n);
        let row_j = &mut rest[..n];
        for k in 0..j {
            let row_k = &done[k * n..k * n + k + 1];
            let s = dot(&row_j[..k], &row_k[..k]);
            row_j[k] = (row_j[k] - s) / row_k[k];
        }
        let d = row_j[j] - dot(&row_j[..j], &row_j[..j]);
        if !(d > 0.0 && d.is_finite()) {
            return Err(NotPositiveDefinite { row: j, pivot: d });
        }
        row_j[j] = d.sqrt();
    }
    // L' row-major (so the back substitution reads rows too).
    let mut lt = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..=i {
            lt[k * n + i] = m[i * n + k];
        }
    }
    // Column c of A^-1: L y = e_c (y_i = 0 for i < c), then L' x = y; columns in parallel.
    let columns: Vec<Vec<f64>> = (0..n)
        .into_par_iter()
        .map(|c| {
            let mut y = vec![0.0; n];
            for i in c..n {
                let row = &m[i * n..i * n + i];
                let s = dot(&row[c..], &y[c..i]);
                y[i] = (if i == c { 1.0 } else { 0.0 } - s) / m[i * n + i];
            }
            for i in (0..n).rev() {
                let row = &lt[i * n + i + 1..i * n + n];
                let s = dot(row, &y[i + 1..]);
                y[i] = (y[i] - s) / lt[i * n + i];
            }
            y
        })
        .collect();
    // Symmetric by construction: (x_ij + x_ji) / 2.
    let mut inv = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            inv[i * n + j] = 0.5 * (columns[j][i] + columns[i][j]);
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

/// `x . y` (equal lengths) in four interleaved partial sums, added in a fixed order: the
/// compiler vectorizes it, and the result repeats bit for bit.
fn dot(x: &[f64], y: &[f64]) -> f64 {
    debug_assert_eq!(x.len(), y.len());
    let (xc, yc) = (x.chunks_exact(4), y.chunks_exact(4));
    let tail: f64 = xc.remainder().iter().zip(yc.remainder()).map(|(a, b)| a * b).sum();
    let mut acc = [0.0f64; 4];
    for (a, b) in xc.zip(yc) {
        for ((s, &p), &q) in acc.iter_mut().zip(a).zip(b) {
            *s += p * q;
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
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
    fn an_indefinite_matrix_names_its_pivot() {
        let a = CsrMatrix::try_from_parts(2, 2, vec![0, 2, 4], vec![0, 1, 0, 1], vec![1.0, 2.0, 2.0, 1.0]).unwrap();
        let e = cholesky_inverse(&a).unwrap_err();
        assert_eq!(e.row, 1);
        assert!(e.pivot < 0.0);
    }
}
