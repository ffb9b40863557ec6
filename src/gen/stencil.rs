//! Grid matrices: the Laplacian stencils and 3-DOF elasticity.

use super::assemble::{build_rows, hash3, unit};
use crate::format::{check_entry_limit, check_index_limit};
use crate::{CsrMatrix, FormatError, Scalar};

/// Unwraps a generator's result; the public generators document this panic.
#[track_caller]
pub(super) fn or_panic<T>(r: Result<T, FormatError>) -> T {
    r.unwrap_or_else(|e| panic!("generated matrix: {e}"))
}

/// The grid coordinates of point `p` of an `nx x ny x nz` grid numbered x fastest.
fn coords(p: usize, nx: usize, ny: usize) -> (i64, i64, i64) {
    ((p % nx) as i64, ((p / nx) % ny) as i64, (p / (nx * ny)) as i64)
}

/// The linear index of `(x, y, z)` when it lies inside the grid.
fn inside(x: i64, y: i64, z: i64, nx: usize, ny: usize, nz: usize) -> Option<usize> {
    let fits = |v: i64, n: usize| v >= 0 && (v as usize) < n;
    (fits(x, nx) && fits(y, ny) && fits(z, nz)).then(|| x as usize + nx * (y as usize + ny * z as usize))
}

/// The 27 offsets of a 3x3x3 neighbourhood, in increasing linear index (z slowest).
fn offsets_27() -> Vec<(i64, i64, i64)> {
    let mut offs = Vec::with_capacity(27);
    for dz in -1..=1 {
        for dy in -1..=1 {
            for dx in -1..=1 {
                offs.push((dx, dy, dz));
            }
        }
    }
    offs
}

/// A stencil on a `nx x ny x nz` grid with the given offsets; the diagonal is the number of
/// off-diagonal stencil points, every neighbour inside the grid is -1.
fn stencil<T: Scalar>(
    nx: usize,
    ny: usize,
    nz: usize,
    offsets: &[(i64, i64, i64)],
) -> Result<CsrMatrix<T>, FormatError> {
    let n = nx.checked_mul(ny).and_then(|p| p.checked_mul(nz)).unwrap_or(usize::MAX);
    check_index_limit("rows", n)?;
    let diag = T::from_f64((offsets.len() - 1) as f64);
    build_rows(n, n, |row, cols, mut vals| {
        let (x, y, z) = coords(row, nx, ny);
        // offsets are sorted by linear index, so columns come out sorted
        for &(dx, dy, dz) in offsets {
            if let Some(col) = inside(x + dx, y + dy, z + dz, nx, ny, nz) {
                cols.push(col as u32);
                if let Some(v) = vals.as_deref_mut() {
                    v.push(if (dx, dy, dz) == (0, 0, 0) { diag } else { -T::ONE });
                }
            }
        }
    })
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
    or_panic(stencil(n, n, 1, &[(0, -1, 0), (-1, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0)]))
}

/// The 3D 7-point Laplacian on an `n x n x n` grid: diagonal 6, neighbours -1. SPD.
///
/// # Panics
///
/// If the matrix exceeds [`INDEX_LIMIT`](crate::INDEX_LIMIT).
pub fn laplacian_3d_7pt<T: Scalar>(n: usize) -> CsrMatrix<T> {
    or_panic(stencil(n, n, n, &[(0, 0, -1), (0, -1, 0), (-1, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]))
}

/// The 3D 27-point stencil on an `n x n x n` grid: diagonal 26, every neighbour (faces,
/// edges, corners) -1. SPD. For `n = 100`: 1,000,000 rows, 26,463,592 entries.
///
/// # Panics
///
/// If the matrix exceeds [`INDEX_LIMIT`](crate::INDEX_LIMIT).
pub fn laplacian_3d_27pt<T: Scalar>(n: usize) -> CsrMatrix<T> {
    or_panic(stencil(n, n, n, &offsets_27()))
}

/// The 3x3 coupling of the unknowns of two grid points in [`elasticity_3d`] (symmetric,
/// positive definite: strictly diagonally dominant).
pub const ELASTICITY_COUPLING: [[f64; 3]; 3] = [[1.0, 0.25, 0.125], [0.25, 1.0, 0.25], [0.125, 0.25, 1.0]];

/// The seed of [`elasticity_3d`]'s coefficients (the matrix takes no seed).
const ELASTICITY_SEED: u64 = 0xE1A5_7C17_9000_0003;

/// The number of stored entries of [`elasticity_3d`]`(n)`: `9 (3n - 2)^3` (nine per entry of
/// the 27-point stencil); `None` on overflow.
///
/// # Example
///
/// ```
/// assert_eq!(spgpu::gen::elasticity_nnz(64), Some(61_731_000));
/// ```
pub fn elasticity_nnz(n: usize) -> Option<usize> {
    stencil_nnz(27, n)?.checked_mul(9)
}

/// 3-DOF elasticity on an `n x n x n` grid with 27-point coupling: `3 n^3` rows, three
/// unknowns per grid point numbered together (row `3 p + a` is unknown `a` of point `p`,
/// points numbered x fastest), each coupled to the three unknowns of each of its 27
/// neighbours (itself included): 81 entries in an interior row, `9 (3n - 2)^3` in all.
///
/// The matrix is `K ⊗ M`, with `M` = [`ELASTICITY_COUPLING`] and `K` a weighted 27-point
/// Laplacian with a Dirichlet boundary: between neighbouring points `p != q`,
/// `K[p][q] = -w(p, q)` with `w` uniform in `[0.5, 1.5)` from a hash of the pair (the same
/// both ways), and `K[p][p]` is the sum of `w(p, q)` over the 26 neighbour positions, a
/// position outside the grid counting 1. `K` is symmetric positive definite (a weighted
/// Laplacian plus a nonzero nonnegative diagonal, on a connected grid), so is `K ⊗ M`: the
/// 3x3 diagonal block of a row's point dominates the sum of its off-diagonal blocks.
///
/// `n = 64`: 786,432 rows, 61,731,000 entries (741 MB in f64).
///
/// # Errors
///
/// [`FormatError::TooLarge`] when the rows or entries exceed
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT) (checked by formula before anything is allocated).
///
/// # Example
///
/// ```
/// let a = spgpu::gen::elasticity_3d::<f64>(4)?;
/// assert_eq!((a.nrows(), a.nnz()), (192, 9 * 10 * 10 * 10));
/// let centre = 3 * (1 + 4 * (1 + 4 * 1)); // unknown 0 of point (1, 1, 1)
/// assert_eq!(a.row_len(centre), 81);
/// assert!(a.is_symmetric());
/// # Ok::<(), spgpu::FormatError>(())
/// ```
pub fn elasticity_3d<T: Scalar>(n: usize) -> Result<CsrMatrix<T>, FormatError> {
    let points = n.checked_mul(n).and_then(|sq| sq.checked_mul(n)).unwrap_or(usize::MAX);
    check_index_limit("rows", points.saturating_mul(3))?;
    check_entry_limit("stored entries", elasticity_nnz(n).unwrap_or(usize::MAX))?;
    let offs = offsets_27();
    let weight = |p: usize, q: usize| 0.5 + unit(hash3(ELASTICITY_SEED, p.min(q) as u64, p.max(q) as u64));
    build_rows(3 * points, 3 * points, |row, cols, vals| {
        let (p, a) = (row / 3, row % 3);
        let (x, y, z) = coords(p, n, n);
        let neighbours = offs.iter().map(|&(dx, dy, dz)| inside(x + dx, y + dy, z + dz, n, n, n));
        let Some(vals) = vals else {
            for q in neighbours.flatten() {
                cols.extend((0..3).map(|b| (3 * q + b) as u32));
            }
            return;
        };
        let diag: f64 = offs
            .iter()
            .filter(|&&o| o != (0, 0, 0))
            .map(|&(dx, dy, dz)| inside(x + dx, y + dy, z + dz, n, n, n).map_or(1.0, |q| weight(p, q)))
            .sum();
        for q in neighbours.flatten() {
            let k = if q == p { diag } else { -weight(p, q) };
            for (b, m) in ELASTICITY_COUPLING[a].iter().enumerate() {
                cols.push((3 * q + b) as u32);
                vals.push(T::from_f64(k * m));
            }
        }
    })
}

/// The six rigid-body modes of [`elasticity_3d`]`(n)`, the near-nullspace for AMG
/// ([`AmgParams::near_nullspace`](crate::solver::AmgParams::near_nullspace), with
/// `block_size` 3): `3 n^3 x 6`, column-major. Columns 0-2 are the translations along x, y
/// and z; columns 3-5 the rotations about the x, y and z axes through the grid's centre,
/// from each point's coordinates `(x, y, z)` (grid units, centred): about x `(0, -z, y)`,
/// about y `(z, 0, -x)`, about z `(-y, x, 0)`.
///
/// # Example
///
/// ```
/// let b = spgpu::gen::rigid_body_modes(2);
/// assert_eq!(b.len(), 3 * 8 * 6);
/// // translation along y: unknown 1 of every point
/// assert_eq!(&b[24..30], &[0.0, 1.0, 0.0, 0.0, 1.0, 0.0]);
/// ```
pub fn rigid_body_modes(n: usize) -> Vec<f64> {
    let points = n * n * n;
    let rows = 3 * points;
    let mut b = vec![0.0; rows * 6];
    let centre = (n as f64 - 1.0) / 2.0;
    for p in 0..points {
        let (x, y, z) = coords(p, n, n);
        let (x, y, z) = (x as f64 - centre, y as f64 - centre, z as f64 - centre);
        for a in 0..3 {
            b[a * rows + 3 * p + a] = 1.0;
        }
        let rotations = [[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]];
        for (r, mode) in rotations.iter().enumerate() {
            for a in 0..3 {
                b[(3 + r) * rows + 3 * p + a] = mode[a];
            }
        }
    }
    b
}
