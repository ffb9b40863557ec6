//! Random matrices: uniform rows, power-law rows, and banded SPD matrices.

use super::assemble::{build_rows, row_rng, sort_dedup, splitmix};
use super::stencil::or_panic;
use crate::format::{check_entry_limit, check_index_limit};
use crate::{CsrMatrix, FormatError, Scalar};
use rand::rngs::StdRng;
use rand::Rng;

/// Sorts and deduplicates one row's sampled columns and, in the writing pass, draws their
/// values uniform in `[-1, 1)` from the row's generator.
fn finish_row<T: Scalar>(rng: &mut StdRng, cols: &mut Vec<u32>, vals: Option<&mut Vec<T>>) {
    sort_dedup(cols);
    if let Some(vals) = vals {
        vals.extend(cols.iter().map(|_| T::from_f64(rng.random_range(-1.0..1.0))));
    }
}

/// A random matrix whose rows each draw `per_row` columns uniformly with replacement
/// (duplicates merged, so a row may hold slightly fewer), values uniform in `[-1, 1)`.
/// Time is proportional to `nrows * per_row`, the number of draws.
///
/// # Panics
///
/// If `ncols == 0` while `per_row > 0`, or the matrix exceeds
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT).
pub fn random_uniform<T: Scalar>(nrows: usize, ncols: usize, per_row: usize, seed: u64) -> CsrMatrix<T> {
    assert!(ncols > 0 || per_row == 0, "random_uniform: no columns to draw from");
    or_panic(try_random_uniform(nrows, ncols, per_row, seed))
}

/// [`random_uniform`], with a matrix past the index limit as an error; `ncols > 0` or
/// `per_row == 0` is the caller's to check.
pub(super) fn try_random_uniform<T: Scalar>(
    nrows: usize,
    ncols: usize,
    per_row: usize,
    seed: u64,
) -> Result<CsrMatrix<T>, FormatError> {
    check_index_limit("rows", nrows)?;
    check_index_limit("columns", ncols)?;
    // Duplicates merge, so this bounds the entry count from above; checking it first keeps
    // an impossible request from allocating before it fails.
    check_entry_limit("stored entries", nrows.saturating_mul(per_row.min(ncols)))?;
    build_rows(nrows, ncols, |i, cols, vals| {
        let mut rng = row_rng(seed, i);
        cols.extend((0..per_row).map(|_| rng.random_range(0..ncols as u32)));
        finish_row(&mut rng, cols, vals);
    })
}

/// A random matrix with power-law row lengths: row length `floor(scale * L) + 1`, capped at
/// `max(max_len, 1)` (and at `ncols`), where `L` follows a Lomax (Pareto II) law of shape `shape`
/// (`P(L > t) = (1 + t)^-shape`), as NumPy's `random.pareto` draws. Columns uniform with
/// duplicates merged, values uniform in `[-1, 1)`.
///
/// `power_law(1_000_000, 1_000_000, 1.2, 3.0, 20_000, seed)` is the `powerlaw_1M` matrix of
/// the benchmark anchors (mean row length about 12.8, longest about 20000).
///
/// # Panics
///
/// If `shape <= 0`, `ncols == 0` with `nrows > 0`, or the matrix exceeds
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT).
pub fn power_law<T: Scalar>(
    nrows: usize,
    ncols: usize,
    shape: f64,
    scale: f64,
    max_len: usize,
    seed: u64,
) -> CsrMatrix<T> {
    assert!(shape > 0.0, "power_law: shape must be positive");
    assert!(ncols > 0 || nrows == 0, "power_law: no columns to draw from");
    or_panic(try_power_law(nrows, ncols, shape, scale, max_len, seed))
}

/// [`power_law`], with a matrix past the index limit as an error; the argument checks are
/// the caller's.
pub(super) fn try_power_law<T: Scalar>(
    nrows: usize,
    ncols: usize,
    shape: f64,
    scale: f64,
    max_len: usize,
    seed: u64,
) -> Result<CsrMatrix<T>, FormatError> {
    check_index_limit("rows", nrows)?;
    check_index_limit("columns", ncols)?;
    let cap = max_len.min(ncols).max(1);
    build_rows(nrows, ncols, |i, cols, vals| {
        let mut rng = row_rng(seed, i);
        let u: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
        let lomax = u.powf(-1.0 / shape) - 1.0;
        let len = ((scale * lomax).floor() as usize).saturating_add(1).min(cap);
        cols.extend((0..len).map(|_| rng.random_range(0..ncols as u32)));
        finish_row(&mut rng, cols, vals);
    })
}

/// Mean and variance of `min(floor(scale * L) + 1, cap)` for a Lomax `L` of the given shape
/// (`P(L > t) = (1 + t)^-shape`), summed exactly over the `cap` possible lengths:
/// `E[X] = sum P(X >= k)`, `E[X^2] = sum (2k - 1) P(X >= k)`, `k = 1..=cap`.
pub(super) fn capped_lomax_moments(shape: f64, scale: f64, cap: usize) -> (f64, f64) {
    let (mut mean, mut square) = (0.0, 0.0);
    for k in 1..=cap {
        let tail = if k == 1 { 1.0 } else { (1.0 + (k - 1) as f64 / scale).powf(-shape) };
        mean += tail;
        square += (2 * k - 1) as f64 * tail;
    }
    (mean, (square - mean * mean).max(0.0))
}

/// A symmetric, strictly diagonally dominant (hence SPD) banded `n x n` matrix: every
/// `(i, j)` with `|i - j| <= half_bandwidth` is stored, off-diagonal values in
/// `(-1, -0.1]` drawn from a hash of `(min(i, j), max(i, j), seed)`, and the diagonal is one
/// more than the sum of the row's off-diagonal magnitudes.
///
/// # Panics
///
/// If the matrix exceeds [`INDEX_LIMIT`](crate::INDEX_LIMIT).
pub fn banded<T: Scalar>(n: usize, half_bandwidth: usize, seed: u64) -> CsrMatrix<T> {
    or_panic(try_banded(n, half_bandwidth, seed))
}

/// The number of stored entries of [`banded`]`(n, half_bandwidth, _)`:
/// `n (2h + 1) - h (h + 1)` with `h = min(half_bandwidth, n - 1)` (saturating).
pub(super) fn banded_nnz(n: usize, half_bandwidth: usize) -> usize {
    let h = half_bandwidth.min(n.saturating_sub(1));
    // The band, less the two corner triangles.
    n.saturating_mul(2 * h + 1).saturating_sub(h * (h + 1))
}

/// [`banded`], with a matrix past the index limit as an error.
pub(super) fn try_banded<T: Scalar>(n: usize, half_bandwidth: usize, seed: u64) -> Result<CsrMatrix<T>, FormatError> {
    check_index_limit("rows", n)?;
    check_entry_limit("stored entries", banded_nnz(n, half_bandwidth))?;
    let h = half_bandwidth.min(n.saturating_sub(1));
    let off = |i: usize, j: usize| -> f64 {
        let (a, b) = (i.min(j) as u64, i.max(j) as u64);
        let h = splitmix(seed ^ splitmix(a.wrapping_mul(0x1_0000_0001) ^ splitmix(b)));
        -(0.1 + 0.9 * (h >> 11) as f64 / (1u64 << 53) as f64)
    };
    build_rows(n, n, |i, cols, vals| {
        let (lo, hi) = (i.saturating_sub(h), (i + h).min(n - 1));
        cols.extend((lo..=hi).map(|j| j as u32));
        if let Some(vals) = vals {
            let sum: f64 = (lo..=hi).filter(|&j| j != i).map(|j| off(i, j).abs()).sum();
            vals.extend((lo..=hi).map(|j| T::from_f64(if j == i { sum + 1.0 } else { off(i, j) })));
        }
    })
}

/// The share of a [`communities`] vertex's links that stay inside its community.
pub const COMMUNITY_INSIDE: f64 = 0.9;

/// A graph with communities, as social and collaboration networks show: `n` vertices in
/// consecutive communities of `size` (the last one shorter), each vertex drawing `degree`
/// links, a share [`COMMUNITY_INSIDE`] of them uniform in its own community and the rest
/// uniform over the whole graph (duplicates merged), values uniform in `[-1, 1)`. Numbered
/// community by community, its gathers of `x` stay within a community's span; numbered at
/// random (`permute:communities:...`), only an ordering that finds the communities brings
/// them back. `graphlap:communities:...` is its SPD graph Laplacian.
///
/// # Errors
///
/// [`FormatError::TooLarge`] past the index limit; a `size` of 0 is taken as 1.
///
/// # Example
///
/// ```
/// let a = spgpu::gen::communities::<f64>(10_000, 500, 16, 42)?;
/// assert_eq!(a.nrows(), 10_000);
/// // most links stay inside the 500-vertex block of their row
/// let inside = (0..a.nrows()).map(|i| a.row(i).0.iter().filter(|&&j| j as usize / 500 == i / 500).count()).sum::<usize>();
/// assert!(inside as f64 > 0.85 * a.nnz() as f64);
/// # Ok::<(), spgpu::FormatError>(())
/// ```
pub fn communities<T: Scalar>(n: usize, size: usize, degree: usize, seed: u64) -> Result<CsrMatrix<T>, FormatError> {
    check_index_limit("rows", n)?;
    check_entry_limit("stored entries", n.saturating_mul(degree.min(n)))?;
    let size = size.max(1);
    build_rows(n, n, |i, cols, vals| {
        let mut rng = row_rng(seed, i);
        let start = i / size * size;
        let len = size.min(n - start) as u32;
        cols.extend((0..degree).map(|_| {
            if rng.random_bool(COMMUNITY_INSIDE) {
                start as u32 + rng.random_range(0..len)
            } else {
                rng.random_range(0..n as u32)
            }
        }));
        finish_row(&mut rng, cols, vals);
    })
}
