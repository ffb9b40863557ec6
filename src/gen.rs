//! Seeded matrix generators for tests and benchmarks.
//!
//! Stencil matrices (Laplacians) are symmetric positive definite (Dirichlet boundary: the
//! diagonal equals the full stencil weight on every row, boundary rows included). Random
//! generators take a seed and give the same matrix for the same arguments on every machine
//! and any number of threads: each row draws from its own generator, seeded from the seed
//! and the row index.

use crate::format::check_index_limit;
use crate::{CsrMatrix, FormatError, Scalar};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// SplitMix64: a fast, well-mixed hash used to derive per-row seeds.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn row_rng(seed: u64, row: usize) -> StdRng {
    StdRng::seed_from_u64(splitmix(seed ^ splitmix(row as u64)))
}

/// Assembles CSR from per-row (sorted, unique) column lists and values.
///
/// # Errors
///
/// [`FormatError::TooLarge`] when the rows hold more entries than
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT) (checked before the arrays are allocated).
fn try_assemble<T: Scalar>(
    nrows: usize,
    ncols: usize,
    rows: Vec<(Vec<u32>, Vec<T>)>,
) -> Result<CsrMatrix<T>, FormatError> {
    check_index_limit("rows", nrows)?;
    check_index_limit("columns", ncols)?;
    let nnz: usize = rows.iter().map(|r| r.0.len()).sum();
    check_index_limit("stored entries", nnz)?;
    let mut offsets = Vec::with_capacity(nrows + 1);
    offsets.push(0u32);
    let mut cols = Vec::with_capacity(nnz);
    let mut vals = Vec::with_capacity(nnz);
    for (c, v) in rows {
        cols.extend_from_slice(&c);
        vals.extend_from_slice(&v);
        offsets.push(cols.len() as u32);
    }
    CsrMatrix::try_from_parts(nrows, ncols, offsets, cols, vals)
}

/// Unwraps a generator's result; the public generators document this panic.
#[track_caller]
fn or_panic<T>(r: Result<T, FormatError>) -> T {
    r.unwrap_or_else(|e| panic!("generated matrix: {e}"))
}

/// A stencil on a `nx x ny x nz` grid with the given offsets; the diagonal is the number of
/// off-diagonal stencil points, every neighbour inside the grid is -1.
fn stencil<T: Scalar>(nx: usize, ny: usize, nz: usize, offsets: &[(i64, i64, i64)]) -> CsrMatrix<T> {
    let n = nx.checked_mul(ny).and_then(|p| p.checked_mul(nz)).unwrap_or(usize::MAX);
    or_panic(check_index_limit("rows", n));
    let diag = T::from_f64((offsets.len() - 1) as f64);
    let rows: Vec<(Vec<u32>, Vec<T>)> = (0..n)
        .into_par_iter()
        .with_min_len(4096)
        .map(|row| {
            let (x, y, z) = ((row % nx) as i64, ((row / nx) % ny) as i64, (row / (nx * ny)) as i64);
            let mut cols = Vec::with_capacity(offsets.len());
            let mut vals = Vec::with_capacity(offsets.len());
            // offsets are sorted by linear index, so columns come out sorted
            for &(dx, dy, dz) in offsets {
                let (a, b, c) = (x + dx, y + dy, z + dz);
                if a < 0 || b < 0 || c < 0 || a >= nx as i64 || b >= ny as i64 || c >= nz as i64 {
                    continue;
                }
                cols.push((a as usize + nx * (b as usize + ny * c as usize)) as u32);
                vals.push(if (dx, dy, dz) == (0, 0, 0) { diag } else { -T::ONE });
            }
            (cols, vals)
        })
        .collect();
    or_panic(try_assemble(n, n, rows))
}

/// The number of stored entries of [`laplacian_2d`]`(n)`, [`laplacian_3d_7pt`]`(n)` or
/// [`laplacian_3d_27pt`]`(n)` (`points` = 5, 7 or 27), by formula, without building the
/// matrix: `5n^2 - 4n`, `7n^3 - 6n^2` and `(3n - 2)^3` (for `n >= 1`). `None` on overflow
/// or for another number of points.
///
/// # Example
///
/// ```
/// use spgpu::gen;
/// assert_eq!(gen::stencil_nnz(5, 2000), Some(19_992_000));
/// assert_eq!(gen::stencil_nnz(27, 100), Some(26_463_592));
/// assert_eq!(gen::stencil_nnz(7, 4), Some(gen::laplacian_3d_7pt::<f64>(4).nnz()));
/// ```
pub fn stencil_nnz(points: usize, n: usize) -> Option<usize> {
    if n == 0 {
        return if matches!(points, 5 | 7 | 27) { Some(0) } else { None };
    }
    let sq = n.checked_mul(n)?;
    match points {
        5 => sq.checked_mul(5)?.checked_sub(4 * n),
        7 => sq.checked_mul(n)?.checked_mul(7)?.checked_sub(sq.checked_mul(6)?),
        27 => {
            let side = n.checked_mul(3)? - 2;
            side.checked_mul(side)?.checked_mul(side)
        }
        _ => None,
    }
}

/// The 2D 5-point Laplacian on an `n x n` grid: `n^2` rows, diagonal 4, neighbours -1.
/// Symmetric positive definite.
///
/// # Panics
///
/// If `n^2` rows exceed [`INDEX_LIMIT`](crate::INDEX_LIMIT).
pub fn laplacian_2d<T: Scalar>(n: usize) -> CsrMatrix<T> {
    stencil(n, n, 1, &[(0, -1, 0), (-1, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0)])
}

/// The 3D 7-point Laplacian on an `n x n x n` grid: diagonal 6, neighbours -1. SPD.
///
/// # Panics
///
/// If the matrix exceeds [`INDEX_LIMIT`](crate::INDEX_LIMIT).
pub fn laplacian_3d_7pt<T: Scalar>(n: usize) -> CsrMatrix<T> {
    stencil(n, n, n, &[(0, 0, -1), (0, -1, 0), (-1, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)])
}

/// The 3D 27-point stencil on an `n x n x n` grid: diagonal 26, every neighbour (faces,
/// edges, corners) -1. SPD. For `n = 100`: 1,000,000 rows, 26,463,592 entries.
///
/// # Panics
///
/// If the matrix exceeds [`INDEX_LIMIT`](crate::INDEX_LIMIT).
pub fn laplacian_3d_27pt<T: Scalar>(n: usize) -> CsrMatrix<T> {
    let mut offs = Vec::with_capacity(27);
    for dz in -1..=1 {
        for dy in -1..=1 {
            for dx in -1..=1 {
                offs.push((dx, dy, dz));
            }
        }
    }
    stencil(n, n, n, &offs)
}

/// Sorts, deduplicates and draws values for one row's sampled columns.
fn finish_row<T: Scalar>(rng: &mut StdRng, mut cols: Vec<u32>) -> (Vec<u32>, Vec<T>) {
    cols.sort_unstable();
    cols.dedup();
    let vals = cols.iter().map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    (cols, vals)
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
fn try_random_uniform<T: Scalar>(
    nrows: usize,
    ncols: usize,
    per_row: usize,
    seed: u64,
) -> Result<CsrMatrix<T>, FormatError> {
    check_index_limit("rows", nrows)?;
    check_index_limit("columns", ncols)?;
    // Duplicates merge, so this bounds the entry count from above; checking it first keeps
    // an impossible request from allocating before it fails.
    check_index_limit("stored entries", nrows.saturating_mul(per_row.min(ncols)))?;
    let rows = (0..nrows)
        .into_par_iter()
        .with_min_len(1024)
        .map(|i| {
            let mut rng = row_rng(seed, i);
            let cols = (0..per_row).map(|_| rng.random_range(0..ncols as u32)).collect();
            finish_row(&mut rng, cols)
        })
        .collect();
    try_assemble(nrows, ncols, rows)
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
fn try_power_law<T: Scalar>(
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
    let rows = (0..nrows)
        .into_par_iter()
        .with_min_len(1024)
        .map(|i| {
            let mut rng = row_rng(seed, i);
            let u: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
            let lomax = u.powf(-1.0 / shape) - 1.0;
            let len = ((scale * lomax).floor() as usize).saturating_add(1).min(cap);
            let cols = (0..len).map(|_| rng.random_range(0..ncols as u32)).collect();
            finish_row(&mut rng, cols)
        })
        .collect();
    try_assemble(nrows, ncols, rows)
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

/// [`banded`], with a matrix past the index limit as an error.
fn try_banded<T: Scalar>(n: usize, half_bandwidth: usize, seed: u64) -> Result<CsrMatrix<T>, FormatError> {
    check_index_limit("rows", n)?;
    let h = half_bandwidth.min(n.saturating_sub(1));
    // Exactly n * (2h + 1) - h * (h + 1) entries: the band, less the two corner triangles.
    let nnz = n.saturating_mul(2 * h + 1).saturating_sub(h * (h + 1));
    check_index_limit("stored entries", nnz)?;
    let off = |i: usize, j: usize| -> f64 {
        let (a, b) = (i.min(j) as u64, i.max(j) as u64);
        let h = splitmix(seed ^ splitmix(a.wrapping_mul(0x1_0000_0001) ^ splitmix(b)));
        -(0.1 + 0.9 * (h >> 11) as f64 / (1u64 << 53) as f64)
    };
    let rows = (0..n)
        .into_par_iter()
        .with_min_len(1024)
        .map(|i| {
            let (lo, hi) = (i.saturating_sub(h), (i + h).min(n - 1));
            let cols: Vec<u32> = (lo..=hi).map(|j| j as u32).collect();
            let sum: f64 = (lo..=hi).filter(|&j| j != i).map(|j| off(i, j).abs()).sum();
            let vals = (lo..=hi).map(|j| T::from_f64(if j == i { sum + 1.0 } else { off(i, j) })).collect();
            (cols, vals)
        })
        .collect();
    try_assemble(n, n, rows)
}

/// Builds a generated matrix from its name, as the command line and the benchmark suite
/// write it (the `gen:` prefix is optional):
///
/// | name | matrix |
/// |---|---|
/// | `lap2d:N` | [`laplacian_2d`]`(N)`: `N^2` rows |
/// | `lap3d:N` | [`laplacian_3d_7pt`]`(N)`: `N^3` rows |
/// | `stencil27:N` | [`laplacian_3d_27pt`]`(N)`: `N^3` rows |
/// | `uniform:ROWS:COLS:PER_ROW[:SEED]` | [`random_uniform`], `PER_ROW <= COLS` |
/// | `powerlaw:ROWS[:SEED]` | [`power_law`]`(ROWS, ROWS, 1.2, 3.0, 20000, SEED)`, the anchors' `powerlaw_1M` at 1000000 |
/// | `longrows:ROWS[:SEED]` | [`random_uniform`]`(ROWS, 10 * ROWS, 1000, SEED)`, the anchors' `longrows_20k_x1000` at 20000 |
/// | `banded:N:HALF[:SEED]` | [`banded`]`(N, HALF, SEED)` |
///
/// The seed defaults to 42.
///
/// # Errors
///
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an unknown kind, a wrong
/// number of parameters or a parameter that is not a number, and
/// [`FormatError::TooLarge`] for a matrix past the index limit.
///
/// # Example
///
/// ```
/// let a = spgpu::gen::from_spec::<f64>("gen:lap2d:10")?;
/// assert_eq!((a.nrows(), a.nnz()), (100, 460));
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn from_spec<T: Scalar>(spec: &str) -> crate::Result<CsrMatrix<T>> {
    use crate::Error;
    let body = spec.strip_prefix("gen:").unwrap_or(spec);
    let mut parts = body.split(':');
    let kind = parts.next().unwrap_or("");
    let nums: Vec<usize> = parts
        .map(|p| {
            p.replace('_', "")
                .parse::<usize>()
                .map_err(|_| Error::InvalidArgument(format!("generated matrix '{spec}': '{p}' is not a whole number")))
        })
        .collect::<crate::Result<_>>()?;
    let arity = |min: usize, max: usize| -> crate::Result<()> {
        if nums.len() < min || nums.len() > max {
            Err(Error::InvalidArgument(format!(
                "generated matrix '{spec}': {kind} takes {} parameter(s), got {}",
                if min == max { min.to_string() } else { format!("{min} to {max}") },
                nums.len()
            )))
        } else {
            Ok(())
        }
    };
    let seed = |i: usize| nums.get(i).map_or(42, |&s| s as u64);
    // Stencils: check the exact size by formula before building anything.
    let stencil_size = |points: usize| -> crate::Result<()> {
        let n = nums[0];
        let rows = n.checked_mul(n).and_then(|sq| if points == 5 { Some(sq) } else { sq.checked_mul(n) });
        check_index_limit("rows", rows.unwrap_or(usize::MAX))?;
        check_index_limit("stored entries", stencil_nnz(points, n).unwrap_or(usize::MAX))?;
        Ok(())
    };
    match kind {
        "lap2d" => {
            arity(1, 1)?;
            stencil_size(5)?;
            Ok(laplacian_2d(nums[0]))
        }
        "lap3d" => {
            arity(1, 1)?;
            stencil_size(7)?;
            Ok(laplacian_3d_7pt(nums[0]))
        }
        "stencil27" => {
            arity(1, 1)?;
            stencil_size(27)?;
            Ok(laplacian_3d_27pt(nums[0]))
        }
        "uniform" => {
            arity(3, 4)?;
            if nums[1] == 0 && nums[2] > 0 {
                return Err(Error::InvalidArgument(format!("generated matrix '{spec}': no columns to draw from")));
            }
            // Draws cost time whether or not they repeat a column: keep them bounded by the
            // matrix size.
            if nums[2] > nums[1] {
                return Err(Error::InvalidArgument(format!(
                    "generated matrix '{spec}': {} entries per row, but only {} columns",
                    nums[2], nums[1]
                )));
            }
            Ok(try_random_uniform(nums[0], nums[1], nums[2], seed(3))?)
        }
        "powerlaw" => {
            arity(1, 2)?;
            // The entry count is only known once the rows are drawn (try_assemble checks it);
            // refuse at once a row count whose expected count (12.8 per row) is past the limit.
            check_index_limit("stored entries (expected)", nums[0].saturating_mul(12))?;
            Ok(try_power_law(nums[0], nums[0], 1.2, 3.0, 20_000, seed(1))?)
        }
        "longrows" => {
            arity(1, 2)?;
            let cols = nums[0].saturating_mul(10);
            Ok(try_random_uniform(nums[0], cols, 1000.min(cols), seed(1))?)
        }
        "banded" => {
            arity(2, 3)?;
            Ok(try_banded(nums[0], nums[1], seed(2))?)
        }
        _ => Err(Error::InvalidArgument(format!(
            "unknown generated matrix '{spec}': expected lap2d:N, lap3d:N, stencil27:N, uniform:ROWS:COLS:PER_ROW, \
             powerlaw:ROWS, longrows:ROWS or banded:N:HALF"
        ))),
    }
}
