//! Reverse Cuthill-McKee.

use super::{adjacency, Permutation};
use crate::{CsrMatrix, Scalar};

/// Breadth-first sweeps [`rcm`] makes at most per component to find a start vertex of
/// large eccentricity (George and Liu's pseudo-peripheral vertex).
const PERIPHERAL_SWEEPS: usize = 5;

/// Reverse Cuthill-McKee on the pattern of `a + a^T` (the diagonal ignored): per connected
/// component, a breadth-first sweep from a pseudo-peripheral vertex that appends each
/// vertex's unnumbered neighbours by increasing degree (ties by index), the whole order then
/// reversed. The bandwidth of the result is at most about twice the width of the widest
/// level of the sweep; on a grid numbered at random it restores a band of about the grid's
/// side. Deterministic; `O(nnz log d)` for rows of `d` entries, on one thread.
///
/// A matrix that is not square gets the identity (there is no symmetric renumbering).
pub fn rcm<T: Scalar>(a: &CsrMatrix<T>) -> Permutation {
    let n = a.nrows();
    if n != a.ncols() {
        return Permutation::identity(n).expect("within the index limit");
    }
    let adj = adjacency(a);
    let degree = |v: u32| adj.degree(v as usize);
    let mut order: Vec<u32> = Vec::with_capacity(n);
    // stamp[v]: the sweep that last reached v (0: none); numbered[v]: v has its place.
    let mut stamp = vec![0u32; n];
    let mut numbered = vec![false; n];
    let mut sweep = 0u32;
    let mut queue: Vec<u32> = Vec::new();
    let mut scratch: Vec<u32> = Vec::new();
    // The components in order of their lowest unnumbered index; each starts from its vertex
    // of least degree, moved to a pseudo-peripheral one.
    for seed in 0..n {
        if numbered[seed] {
            continue;
        }
        // George and Liu: move the start to the vertex of least degree in the last level of
        // its sweep while that lengthens the sweep.
        let mut start = seed as u32;
        sweep += 1;
        let (mut levels, last) = levels_from(&adj, start, sweep, &mut stamp, &mut queue);
        let mut candidate = least_degree(last, &degree);
        for _ in 1..PERIPHERAL_SWEEPS {
            if candidate == start {
                break;
            }
            sweep += 1;
            let (more, last) = levels_from(&adj, candidate, sweep, &mut stamp, &mut queue);
            if more <= levels {
                break;
            }
            (start, levels) = (candidate, more);
            candidate = least_degree(last, &degree);
        }
        // Cuthill-McKee from `start`.
        let first = order.len();
        order.push(start);
        numbered[start as usize] = true;
        let mut head = first;
        while head < order.len() {
            let v = order[head];
            head += 1;
            scratch.clear();
            scratch.extend(adj.neighbours(v as usize).iter().copied().filter(|&w| !numbered[w as usize]));
            scratch.sort_unstable_by_key(|&w| (degree(w), w));
            for &w in &scratch {
                numbered[w as usize] = true;
                order.push(w);
            }
        }
    }
    order.reverse();
    Permutation::from_order_u32(order)
}

/// The vertex of least degree in `level` (ties: the lowest index).
fn least_degree(level: &[u32], degree: &impl Fn(u32) -> usize) -> u32 {
    *level.iter().min_by_key(|&&v| (degree(v), v)).expect("a level has a vertex")
}

/// A breadth-first sweep from `start` over its component, marking with `sweep`: the number
/// of levels and the vertices of the last level.
fn levels_from<'q>(
    adj: &super::Adjacency,
    start: u32,
    sweep: u32,
    stamp: &mut [u32],
    queue: &'q mut Vec<u32>,
) -> (usize, &'q [u32]) {
    queue.clear();
    queue.push(start);
    stamp[start as usize] = sweep;
    let (mut level_start, mut levels) = (0usize, 0usize);
    loop {
        let level_end = queue.len();
        levels += 1;
        for k in level_start..level_end {
            let v = queue[k];
            for &w in adj.neighbours(v as usize) {
                if stamp[w as usize] != sweep {
                    stamp[w as usize] = sweep;
                    queue.push(w);
                }
            }
        }
        if queue.len() == level_end {
            return (levels, &queue[level_start..level_end]);
        }
        level_start = level_end;
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Locality, Permutation};
    use super::*;
    use crate::gen;

    fn shuffled<T: Scalar>(a: &CsrMatrix<T>, seed: u64) -> CsrMatrix<T> {
        use rand::{seq::SliceRandom, SeedableRng};
        let mut order: Vec<usize> = (0..a.nrows()).collect();
        order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
        Permutation::from_order(order).unwrap().permute_matrix(a).unwrap()
    }

    #[test]
    fn rcm_restores_a_band_on_grids_numbered_at_random() {
        for (a, side) in [(gen::laplacian_2d::<f64>(40), 40), (gen::laplacian_3d_7pt::<f64>(12), 144)] {
            let s = shuffled(&a, 1);
            assert!(Locality::of(&s).bandwidth > 10 * side);
            let b = rcm(&s).permute_matrix(&s).unwrap();
            let l = Locality::of(&b);
            // a sweep's level of a square grid from a corner holds at most `side` vertices
            // (3D: a diagonal plane, about 1.5 side^2 / ... ); the band is within twice it
            assert!(l.bandwidth <= 2 * side + 2, "bandwidth {} for side {side}", l.bandwidth);
            assert!(l.sectors_per_entry < Locality::of(&s).sectors_per_entry / 2.0);
        }
    }

    #[test]
    fn rcm_is_deterministic_covers_every_component_and_handles_edge_cases() {
        // two grids side by side (a block diagonal matrix) and isolated vertices
        let g = gen::laplacian_2d::<f64>(6);
        let mut coo = crate::CooMatrix::<f64>::new(80, 80).unwrap();
        for i in 0..36 {
            let (c, v) = g.row(i);
            for (&j, &x) in c.iter().zip(v) {
                coo.push(i, j as usize, x).unwrap();
                coo.push(i + 40, j as usize + 40, x).unwrap();
            }
        }
        let a = shuffled(&coo.to_csr(), 5);
        let p = rcm(&a);
        assert_eq!(p, rcm(&a));
        let b = p.permute_matrix(&a).unwrap();
        assert_eq!(b.nnz(), a.nnz());
        assert!(Locality::of(&b).bandwidth <= 13);
        assert!(rcm(&CsrMatrix::<f64>::zeros(0, 0).unwrap()).is_empty());
        assert!(rcm(&CsrMatrix::<f64>::identity(5).unwrap()).len() == 5);
        assert!(rcm(&CsrMatrix::<f64>::zeros(3, 4).unwrap()).is_identity());
    }

    #[test]
    fn an_unsymmetric_pattern_is_ordered_by_a_plus_a_transposed() {
        // a path 0 - 1 - ... - 9 stored only above the diagonal, numbered at random
        let mut coo = crate::CooMatrix::<f64>::new(10, 10).unwrap();
        for i in 0..10 {
            coo.push(i, i, 2.0).unwrap();
            if i + 1 < 10 {
                coo.push(i, i + 1, -1.0).unwrap();
            }
        }
        let a = shuffled(&coo.to_csr(), 2);
        let b = rcm(&a).permute_matrix(&a).unwrap();
        assert_eq!(Locality::of(&b).bandwidth, 1);
    }
}
