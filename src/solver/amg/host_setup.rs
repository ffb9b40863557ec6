//! The setup steps of smoothed-aggregation AMG on the host (rayon), in `f64`: strength of
//! connection, MIS-2 aggregation, the tentative prolongator, prolongator smoothing and the
//! Galerkin product (see `AMG-SPEC` in the module docs of [`super`]).
//!
//! Each step is a function with host CSR matrices or patterns in and out, so the device
//! path (`device_setup.rs`) mirrors it step by step and its results are compared with these
//! in the device tests. Every step is deterministic: integer structure never depends on the
//! number of threads, and each output row is accumulated in one fixed order (the order of
//! the entries of the left factor's row, then of the right factor's rows).

use crate::{CsrMatrix, FormatError};
use rayon::prelude::*;

/// Rows per rayon task in the row-parallel steps.
const ROWS_PER_TASK: usize = 512;

/// A sparsity pattern in CSR form (sorted columns, no values): the strength graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pattern {
    /// `nrows + 1` offsets into `cols`.
    pub(crate) offsets: Vec<u64>,
    /// The columns of each row, sorted.
    pub(crate) cols: Vec<u32>,
}

impl Pattern {
    /// Number of rows.
    pub(crate) fn nrows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The columns of row `i`.
    pub(crate) fn row(&self, i: usize) -> &[u32] {
        &self.cols[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// The priority hash of node `i` in the aggregation: `splitmix32(i ^ 0x9E3779B9)`.
pub(crate) fn node_hash(i: u32) -> u32 {
    let mut x = i ^ 0x9E37_79B9;
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// Builds a CSR matrix from per-row results computed in parallel (rows in order).
fn assemble<T: crate::Scalar>(nrows: usize, ncols: usize, rows: Vec<(Vec<u32>, Vec<T>)>) -> CsrMatrix<T> {
    let mut offsets = Vec::with_capacity(nrows + 1);
    offsets.push(0u64);
    let nnz: usize = rows.iter().map(|(c, _)| c.len()).sum();
    let mut cols = Vec::with_capacity(nnz);
    let mut vals = Vec::with_capacity(nnz);
    for (c, v) in rows {
        cols.extend_from_slice(&c);
        vals.extend_from_slice(&v);
        offsets.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(nrows, ncols, offsets, cols, vals).expect("the AMG setup builds valid CSR")
}

/// Maps `f` over the rows `0..n` in parallel chunks, keeping the row order.
fn par_rows<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    (0..n).into_par_iter().with_min_len(ROWS_PER_TASK).map(f).collect()
}

/// Step 1, strength of connection (symmetric). With `block_size == 1`: `j != i` is a strong
/// neighbour of `i` iff `a_ij != 0` and `|a_ij| >= theta * sqrt(|a_ii a_jj|)`. With
/// `block_size = bs > 1`, on the node graph (node `I` = rows `I*bs .. I*bs+bs`): `J != I` is
/// strong iff the Frobenius norm of block `(I, J)` is non-zero and at least
/// `theta * sqrt(||A_II|| ||A_JJ||)`. Columns sorted, diagonal excluded.
///
/// `a.nrows()` must be a multiple of `block_size` (checked by the caller).
pub(crate) fn strength(a: &CsrMatrix<f64>, theta: f64, block_size: usize) -> Pattern {
    let bs = block_size.max(1);
    let nodes = a.nrows() / bs;
    let rows: Vec<Vec<u32>> = if bs == 1 {
        let diag = a.diagonal();
        par_rows(nodes, |i| {
            let (cols, vals) = a.row(i);
            cols.iter()
                .zip(vals)
                .filter(|&(&j, &v)| {
                    let j = j as usize;
                    j != i && v != 0.0 && v.abs() >= theta * (diag[i] * diag[j]).abs().sqrt()
                })
                .map(|(&j, _)| j)
                .collect()
        })
    } else {
        // Squared Frobenius norms of the blocks of each node row, in one fixed order.
        let blocks: Vec<Vec<(u32, f64)>> = par_rows(nodes, |node| {
            let mut out: Vec<(u32, f64)> = Vec::new();
            for row in node * bs..node * bs + bs {
                let (cols, vals) = a.row(row);
                for (&c, &v) in cols.iter().zip(vals) {
                    out.push((c / bs as u32, v * v));
                }
            }
            // a stable sort keeps each block's terms in row order, so the sums are fixed
            out.sort_by_key(|&(j, _)| j);
            let mut merged: Vec<(u32, f64)> = Vec::new();
            for (j, s) in out {
                match merged.last_mut() {
                    Some((lj, ls)) if *lj == j => *ls += s,
                    _ => merged.push((j, s)),
                }
            }
            merged.into_iter().map(|(j, s)| (j, s.sqrt())).collect()
        });
        let diag: Vec<f64> = blocks
            .iter()
            .enumerate()
            .map(|(i, b)| b.iter().find(|&&(j, _)| j as usize == i).map_or(0.0, |&(_, n)| n))
            .collect();
        par_rows(nodes, |i| {
            blocks[i]
                .iter()
                .filter(|&&(j, norm)| {
                    let j = j as usize;
                    j != i && norm != 0.0 && norm >= theta * (diag[i] * diag[j]).sqrt()
                })
                .map(|&(j, _)| j)
                .collect()
        })
    };
    let mut offsets = Vec::with_capacity(nodes + 1);
    offsets.push(0u64);
    let mut cols = Vec::new();
    for r in rows {
        cols.extend_from_slice(&r);
        offsets.push(cols.len() as u64);
    }
    Pattern { offsets, cols }
}

/// The node states of the MIS-2 rounds.
pub(crate) const OUT: u8 = 0;
/// Not decided yet.
pub(crate) const UNDECIDED: u8 = 1;
/// A root of an aggregate.
pub(crate) const ROOT: u8 = 2;

/// Step 2a, the distance-2 maximal independent set: the final state of every node (`ROOT`
/// or `OUT`), by synchronous rounds over the tuples `(state, h(i), i)` (an `OUT` node's
/// tuple is the lowest, `(0, 0, 0)`).
pub(crate) fn mis2(s: &Pattern) -> Vec<u8> {
    let n = s.nrows();
    let mut state = vec![UNDECIDED; n];
    let hash: Vec<u32> = par_rows(n, |i| node_hash(i as u32));
    let tuple = |st: u8, i: usize| -> (u8, u32, u32) {
        if st == OUT {
            (0, 0, 0)
        } else {
            (st, hash[i], i as u32)
        }
    };
    while state.contains(&UNDECIDED) {
        let t: Vec<(u8, u32, u32)> = par_rows(n, |i| tuple(state[i], i));
        let m1: Vec<(u8, u32, u32)> = par_rows(n, |i| s.row(i).iter().fold(t[i], |m, &j| m.max(t[j as usize])));
        let m2: Vec<(u8, u32, u32)> = par_rows(n, |i| s.row(i).iter().fold(m1[i], |m, &j| m.max(m1[j as usize])));
        state.par_iter_mut().enumerate().with_min_len(ROWS_PER_TASK).for_each(|(i, st)| {
            if *st == UNDECIDED {
                if m2[i] == tuple(UNDECIDED, i) {
                    *st = ROOT;
                } else if m2[i].0 == ROOT {
                    *st = OUT;
                }
            }
        });
    }
    state
}

/// Step 2, aggregation: the aggregate of every node and the number of aggregates. Roots of
/// [`mis2`] are numbered in increasing node order; pass 1 puts each node next to a root
/// into the adjacent root's aggregate of largest key `(h, i)`; pass 2 puts each node still
/// unassigned into the aggregate of its neighbour of largest key among those assigned in
/// pass 1 or roots; a node still unassigned becomes an aggregate of its own, numbered after
/// all others in increasing node order.
#[cfg_attr(not(test), allow(dead_code))] // the build calls mis2 and aggregate_from; the device tests call this
pub(crate) fn aggregate(s: &Pattern) -> (Vec<u32>, usize) {
    aggregate_from(s, &mis2(s))
}

/// [`aggregate`] from the states that [`mis2`] returned.
pub(crate) fn aggregate_from(s: &Pattern, state: &[u8]) -> (Vec<u32>, usize) {
    let n = s.nrows();
    const NONE: u32 = u32::MAX;
    let key = |j: u32| (node_hash(j), j);
    let mut agg = vec![NONE; n];
    let mut count = 0u32;
    for i in 0..n {
        if state[i] == ROOT {
            agg[i] = count;
            count += 1;
        }
    }
    let best = |i: usize, ok: &dyn Fn(u32) -> bool, from: &[u32]| -> u32 {
        s.row(i).iter().copied().filter(|&j| ok(j)).max_by_key(|&j| key(j)).map_or(NONE, |j| from[j as usize])
    };
    let pass1: Vec<u32> =
        par_rows(n, |i| if agg[i] != NONE { agg[i] } else { best(i, &|j| state[j as usize] == ROOT, &agg) });
    let pass2: Vec<u32> =
        par_rows(n, |i| if pass1[i] != NONE { pass1[i] } else { best(i, &|j| pass1[j as usize] != NONE, &pass1) });
    let mut agg = pass2;
    for a in agg.iter_mut() {
        if *a == NONE {
            *a = count;
            count += 1;
        }
    }
    (agg, count as usize)
}

/// Step 3, the tentative prolongator: for each aggregate, the thin QR (modified
/// Gram-Schmidt, column order) of the rows of the near-nullspace `b` (`n x k`, column-major)
/// at its DOFs (in increasing order); `Q` goes into `P_tent` (rows those DOFs, columns
/// `agg*k .. agg*k+k`) and `R` into the coarse near-nullspace (`count*k x k`,
/// column-major). DOF `d` belongs to aggregate `agg[d / block_size]`. A column whose norm
/// after orthogonalisation is below `1e-12` times its norm before (or zero) is zeroed, its
/// entries kept as explicit zeros, and its `R` diagonal is 0.
pub(crate) fn tentative(
    agg: &[u32],
    count: usize,
    block_size: usize,
    b: &[f64],
    k: usize,
) -> (CsrMatrix<f64>, Vec<f64>) {
    let bs = block_size.max(1);
    let n = agg.len() * bs;
    debug_assert_eq!(b.len(), n * k);
    // DOFs of each aggregate, in increasing order (counting sort).
    let mut starts = vec![0usize; count + 1];
    for &a in agg {
        starts[a as usize + 1] += bs;
    }
    for c in 0..count {
        starts[c + 1] += starts[c];
    }
    let mut next = starts.clone();
    let mut dofs = vec![0usize; n];
    for d in 0..n {
        let a = agg[d / bs] as usize;
        dofs[next[a]] = d;
        next[a] += 1;
    }
    // Q values per DOF (k each) and R per aggregate (k x k, column-major).
    let blocks: Vec<(Vec<f64>, Vec<f64>)> = (0..count)
        .into_par_iter()
        .with_min_len(64)
        .map(|c| {
            let rows = &dofs[starts[c]..starts[c + 1]];
            let m = rows.len();
            let mut q = vec![0.0; m * k]; // column-major m x k
            let mut r = vec![0.0; k * k];
            for col in 0..k {
                let mut v: Vec<f64> = rows.iter().map(|&d| b[col * n + d]).collect();
                let before = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                for p in 0..col {
                    let qp = &q[p * m..(p + 1) * m];
                    let dot: f64 = qp.iter().zip(&v).map(|(a, b)| a * b).sum();
                    r[col * k + p] = dot;
                    v.iter_mut().zip(qp).for_each(|(x, &y)| *x -= dot * y);
                }
                let after = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                if after > 0.0 && after >= 1e-12 * before {
                    r[col * k + col] = after;
                    q[col * m..(col + 1) * m].iter_mut().zip(&v).for_each(|(o, x)| *o = x / after);
                }
            }
            (q, r)
        })
        .collect();
    // Position of each DOF within its aggregate.
    let mut pos = vec![0usize; n];
    for c in 0..count {
        for (p, &d) in dofs[starts[c]..starts[c + 1]].iter().enumerate() {
            pos[d] = p;
        }
    }
    let mut offsets = Vec::with_capacity(n + 1);
    let mut cols = Vec::with_capacity(n * k);
    let mut vals = Vec::with_capacity(n * k);
    offsets.push(0u64);
    for d in 0..n {
        let a = agg[d / bs] as usize;
        let m = starts[a + 1] - starts[a];
        for col in 0..k {
            cols.push((a * k + col) as u32);
            vals.push(blocks[a].0[col * m + pos[d]]);
        }
        offsets.push(cols.len() as u64);
    }
    let p = CsrMatrix::try_from_parts(n, count * k, offsets, cols, vals).expect("valid tentative prolongator");
    let nc = count * k;
    let mut bc = vec![0.0; nc * k];
    for (c, (_, r)) in blocks.iter().enumerate() {
        for col in 0..k {
            for row in 0..k {
                bc[col * nc + c * k + row] = r[col * k + row];
            }
        }
    }
    (p, bc)
}

/// `1 / a_ii` for every row (the caller checked that the diagonal is positive, or zero for
/// an inert coarse row, which gets 0).
pub(crate) fn inverse_diagonal(a: &CsrMatrix<f64>) -> Vec<f64> {
    a.diagonal().into_iter().map(|d| if d != 0.0 { 1.0 / d } else { 0.0 }).collect()
}

/// `1 / sum_j |a_ij|` for every row, diagonal included (the l1-Jacobi smoother); 0 for an
/// all-zero row.
pub(crate) fn inverse_l1_diagonal(a: &CsrMatrix<f64>) -> Vec<f64> {
    par_rows(a.nrows(), |i| {
        let s: f64 = a.row(i).1.iter().map(|v| v.abs()).sum();
        if s != 0.0 {
            1.0 / s
        } else {
            0.0
        }
    })
}

/// Steps of the power method in [`spectral_radius`].
pub(crate) const POWER_STEPS: usize = 20;

/// Safety factor on the power method's last Rayleigh quotient.
pub(crate) const RHO_FACTOR: f64 = 1.05;

/// The spectral radius of `D^-1 A` estimated by [`POWER_STEPS`] steps of the power method
/// from `v_i = 1 + h(i) / 2^32`: each step normalises `v` (2-norm), computes `w = A v` and
/// the Rayleigh quotient `v'w / v'Dv` (that of `D^-1 A` in the `D` inner product, never
/// above the true radius), then `v = D^-1 w`. The result is the last quotient times
/// [`RHO_FACTOR`]. `dinv` is `1 / a_ii` (0 for inert rows).
pub(crate) fn spectral_radius(a: &CsrMatrix<f64>, dinv: &[f64]) -> f64 {
    let n = a.nrows();
    if n == 0 {
        return 1.0;
    }
    let mut v: Vec<f64> = (0..n).map(|i| 1.0 + f64::from(node_hash(i as u32)) / 4_294_967_296.0).collect();
    let mut w = vec![0.0; n];
    let mut rq = 0.0;
    for _ in 0..POWER_STEPS {
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            break;
        }
        v.iter_mut().for_each(|x| *x /= norm);
        crate::reference::spmv_csr(1.0, a, &v, 0.0, &mut w).expect("square matrix");
        let vw: f64 = v.iter().zip(&w).map(|(a, b)| a * b).sum();
        let vdv: f64 = v.iter().zip(dinv).map(|(a, &d)| if d != 0.0 { a * a / d } else { 0.0 }).sum();
        if vdv > 0.0 {
            rq = vw / vdv;
        }
        v.iter_mut().zip(&w).zip(dinv).for_each(|((x, &wi), &d)| *x = d * wi);
    }
    if rq > 0.0 && rq.is_finite() {
        rq * RHO_FACTOR
    } else {
        1.0
    }
}

/// The sparse product `A B`, row by row: row `i` accumulates, for each entry `a_ij` of row
/// `i` in order, the entries `a_ij b_jc` of row `j` of `B` in order, into a dense
/// accumulator; the columns are then sorted. The structure is the symbolic product
/// (explicit zeros that the values give are kept).
///
/// # Errors
///
/// [`FormatError`] when the product's dimensions or entry count exceed the index limits.
pub(crate) fn spgemm(a: &CsrMatrix<f64>, b: &CsrMatrix<f64>) -> Result<CsrMatrix<f64>, FormatError> {
    assert_eq!(a.ncols(), b.nrows(), "spgemm: inner dimensions");
    let ncols = b.ncols();
    let rows: Vec<(Vec<u32>, Vec<f64>)> = (0..a.nrows())
        .into_par_iter()
        .with_min_len(ROWS_PER_TASK)
        .map_init(
            || (vec![u32::MAX; ncols], Vec::<f64>::new()),
            |(slot, acc), i| {
                let (ac, av) = a.row(i);
                let mut cols: Vec<u32> = Vec::new();
                acc.clear();
                for (&j, &aij) in ac.iter().zip(av) {
                    let (bc, bv) = b.row(j as usize);
                    for (&c, &bjc) in bc.iter().zip(bv) {
                        let s = &mut slot[c as usize];
                        if *s == u32::MAX {
                            *s = cols.len() as u32;
                            cols.push(c);
                            acc.push(aij * bjc);
                        } else {
                            acc[*s as usize] += aij * bjc;
                        }
                    }
                }
                let mut order: Vec<u32> = (0..cols.len() as u32).collect();
                order.sort_unstable_by_key(|&p| cols[p as usize]);
                let vals: Vec<f64> = order.iter().map(|&p| acc[p as usize]).collect();
                for &c in &cols {
                    slot[c as usize] = u32::MAX;
                }
                cols.sort_unstable();
                (cols, vals)
            },
        )
        .collect();
    let nnz: usize = rows.iter().map(|(c, _)| c.len()).sum();
    crate::format::check_entry_limit("stored entries of an AMG product", nnz)?;
    Ok(assemble(a.nrows(), ncols, rows))
}

/// The weight `omega = (4/3) / rho` of prolongator smoothing, `rho` the estimate of
/// `rho(D^-1 A)`.
pub(crate) fn smoothing_weight(rho: f64) -> f64 {
    (4.0 / 3.0) / rho
}

/// Step 4, prolongator smoothing: `P = P_tent - omega D^-1 (A P_tent)` with
/// `omega = (4/3) / rho`. The structure is that of `A P_tent` (which holds `P_tent`'s, as
/// every diagonal entry of `A` is stored); entry `(i, c)` is `pt_ic - (omega * dinv_i) *
/// ap_ic`.
///
/// # Errors
///
/// As [`spgemm`].
pub(crate) fn smooth_prolongator(
    a: &CsrMatrix<f64>,
    dinv: &[f64],
    rho: f64,
    p_tent: &CsrMatrix<f64>,
) -> Result<CsrMatrix<f64>, FormatError> {
    let omega = smoothing_weight(rho);
    let ap = spgemm(a, p_tent)?;
    let vals: Vec<f64> = (0..p_tent.nrows())
        .into_par_iter()
        .with_min_len(ROWS_PER_TASK)
        .flat_map_iter(|i| {
            let s = omega * dinv[i];
            let (tc, tv) = p_tent.row(i);
            let (cols, apv) = ap.row(i);
            let mut t = 0;
            cols.iter()
                .zip(apv)
                .map(|(&c, &v)| {
                    let pt = if t < tc.len() && tc[t] == c {
                        t += 1;
                        tv[t - 1]
                    } else {
                        0.0
                    };
                    pt - s * v
                })
                .collect::<Vec<f64>>()
        })
        .collect();
    let (nrows, ncols, offsets, cols, _) = ap.into_parts();
    Ok(CsrMatrix::try_from_parts(nrows, ncols, offsets, cols, vals).expect("the structure of A P_tent"))
}

/// Step 5, the Galerkin product `R A P` with `R = P^T` (explicit transpose, columns
/// sorted): returns `(R, A_c)`, `A_c = R (A P)`.
///
/// # Errors
///
/// As [`spgemm`].
pub(crate) fn galerkin(
    a: &CsrMatrix<f64>,
    p: &CsrMatrix<f64>,
) -> Result<(CsrMatrix<f64>, CsrMatrix<f64>), FormatError> {
    let r = p.transpose();
    let ap = spgemm(a, p)?;
    let ac = spgemm(&r, &ap)?;
    Ok((r, ac))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(n: usize) -> Pattern {
        // 0 - 1 - 2 - ... - (n-1)
        let mut offsets = vec![0u64];
        let mut cols = Vec::new();
        for i in 0..n {
            if i > 0 {
                cols.push(i as u32 - 1);
            }
            if i + 1 < n {
                cols.push(i as u32 + 1);
            }
            offsets.push(cols.len() as u64);
        }
        Pattern { offsets, cols }
    }

    #[test]
    fn the_hash_is_splitmix32() {
        // splitmix32 of 0x9E3779B9 ^ 0, computed by hand from the recurrence
        let mut x: u32 = 0x9E37_79B9;
        x ^= x >> 16;
        x = x.wrapping_mul(0x7feb_352d);
        x ^= x >> 15;
        x = x.wrapping_mul(0x846c_a68b);
        x ^= x >> 16;
        assert_eq!(node_hash(0), x);
        assert_ne!(node_hash(1), node_hash(2));
    }

    #[test]
    fn mis2_on_a_path_keeps_roots_three_apart_and_covers_every_node() {
        let s = path(50);
        let state = mis2(&s);
        let roots: Vec<usize> = (0..50).filter(|&i| state[i] == ROOT).collect();
        assert!(roots.windows(2).all(|w| w[1] - w[0] >= 3), "{roots:?}");
        // maximal: every node within distance 2 of a root
        assert!((0..50).all(|i| roots.iter().any(|&r| r.abs_diff(i) <= 2)));
        let (agg, count) = aggregate(&s);
        assert_eq!(count, roots.len());
        for (a, &r) in roots.iter().enumerate() {
            assert_eq!(agg[r], a as u32);
        }
        // every aggregate is a contiguous run of the path containing its root
        for i in 0..50 {
            let r = roots[agg[i] as usize];
            assert!(r.abs_diff(i) <= 2);
            let (lo, hi) = (r.min(i), r.max(i));
            assert!((lo..=hi).all(|j| agg[j] == agg[i]));
        }
    }

    #[test]
    fn isolated_nodes_are_roots() {
        let s = Pattern { offsets: vec![0, 0, 0, 0], cols: vec![] };
        assert_eq!(mis2(&s), vec![ROOT; 3]);
        assert_eq!(aggregate(&s), (vec![0, 1, 2], 3));
    }

    #[test]
    fn qr_of_two_columns_is_orthonormal_and_reproduces_b() {
        // one aggregate of 4 DOFs, B = [1 0; 1 1; 1 2; 1 3]
        let b = vec![1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 2.0, 3.0];
        let (p, bc) = tentative(&[0, 0, 0, 0], 1, 1, &b, 2);
        let q = p.to_dense(); // 4 x 2 row-major
        let dot = |a: usize, c: usize| (0..4).map(|i| q[i * 2 + a] * q[i * 2 + c]).sum::<f64>();
        assert!((dot(0, 0) - 1.0).abs() < 1e-14 && (dot(1, 1) - 1.0).abs() < 1e-14 && dot(0, 1).abs() < 1e-14);
        // Q R = B
        for i in 0..4 {
            for c in 0..2 {
                let v: f64 = (0..2).map(|j| q[i * 2 + j] * bc[c * 2 + j]).sum();
                assert!((v - b[c * 4 + i]).abs() < 1e-13);
            }
        }
        // a dependent column is zeroed
        let b = vec![1.0, 1.0, 2.0, 2.0];
        let (p, bc) = tentative(&[0, 0], 1, 1, &b, 2);
        assert_eq!(p.values()[1], 0.0);
        assert_eq!(bc[3], 0.0);
    }

    #[test]
    fn spgemm_matches_dense() {
        let a = crate::gen::laplacian_2d::<f64>(4);
        let c = spgemm(&a, &a).unwrap();
        let (d, n) = (a.to_dense(), 16);
        let cd = c.to_dense();
        for i in 0..n {
            for j in 0..n {
                let v: f64 = (0..n).map(|k| d[i * n + k] * d[k * n + j]).sum();
                assert_eq!(cd[i * n + j], v);
            }
        }
    }
}
