//! An ordering for graphs with skewed degrees: hubs first, then a breadth-first sweep.

use super::{adjacency, Permutation};
use crate::{CsrMatrix, Scalar};

/// Degree over the mean degree from which [`graph_order`] counts a vertex as a hub.
pub(crate) const HUB_DEGREE: f64 = 4.0;

/// Hubs first, then a breadth-first sweep, on the pattern of `a + a^T` (the diagonal
/// ignored):
///
/// 1. the hubs (degree above 4 times the mean) take the first numbers, by
///    decreasing degree (ties by index): the values of `x` that most rows read share a few
///    cache lines, and stay in the caches;
/// 2. a breadth-first sweep from the hubs, in their order, numbers every other vertex when
///    it first meets it, the neighbours of a vertex in their stored order: the members of a
///    community, met from the same vertices, get neighbouring numbers;
/// 3. what the sweep cannot reach (other components) is swept from its lowest index.
///
/// This is degree-based hub grouping followed by an order of first appearance, two of the
/// cheap orderings whose gains on power-law graphs are published (hub sorting; BOBA orders
/// by first appearance). Deterministic, `O(nnz)` after the degrees, on one thread. A
/// matrix that is not square gets the identity.
pub fn graph_order<T: Scalar>(a: &CsrMatrix<T>) -> Permutation {
    let n = a.nrows();
    if n != a.ncols() {
        return Permutation::identity(n).expect("within the index limit");
    }
    let adj = adjacency(a);
    let mean = if n == 0 { 0.0 } else { adj.neighbours.len() as f64 / n as f64 };
    let mut hubs: Vec<u32> = (0..n as u32).filter(|&v| adj.degree(v as usize) as f64 > HUB_DEGREE * mean).collect();
    hubs.sort_unstable_by_key(|&v| (std::cmp::Reverse(adj.degree(v as usize)), v));
    let mut numbered = vec![false; n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    for &h in &hubs {
        numbered[h as usize] = true;
        order.push(h);
    }
    let mut head = 0;
    let mut next_seed = 0;
    loop {
        while head < order.len() {
            let v = order[head] as usize;
            head += 1;
            for &w in adj.neighbours(v) {
                if !numbered[w as usize] {
                    numbered[w as usize] = true;
                    order.push(w);
                }
            }
        }
        while next_seed < n && numbered[next_seed] {
            next_seed += 1;
        }
        if next_seed == n {
            break;
        }
        numbered[next_seed] = true;
        order.push(next_seed as u32);
    }
    Permutation::from_order_u32(order)
}

#[cfg(test)]
mod tests {
    use super::super::{Locality, Permutation};
    use super::*;
    use crate::gen;

    #[test]
    fn hubs_come_first_by_degree_and_every_vertex_gets_a_place() {
        // a star of 50 leaves around vertex 17, beside a path 60 - 61 - ... - 99
        let mut coo = crate::CooMatrix::<f64>::new(100, 100).unwrap();
        for i in 0..100 {
            coo.push(i, i, 1.0).unwrap();
        }
        for leaf in (0..51).filter(|&l| l != 17) {
            coo.push(17, leaf, 1.0).unwrap();
            coo.push(leaf, 17, 1.0).unwrap();
        }
        for i in 60..99 {
            coo.push(i, i + 1, 1.0).unwrap();
            coo.push(i + 1, i, 1.0).unwrap();
        }
        let a = coo.to_csr();
        let p = graph_order(&a);
        assert_eq!(p.order()[0], 17);
        assert_eq!(p.len(), 100);
        // the star's leaves follow it, in their order; then the lone vertices and the path
        assert_eq!(&p.order()[1..4], &[0, 1, 2]);
        let b = p.permute_matrix(&a).unwrap();
        assert_eq!(b.nnz(), a.nnz());
        assert_eq!(p, graph_order(&a));
    }

    #[test]
    fn graph_order_brings_the_gathers_of_a_shuffled_graph_together() {
        let a = gen::graph_laplacian::<f64, f64>(gen::rmat(14, 8, 3).unwrap()).unwrap();
        let before = Locality::of(&a);
        let b = graph_order(&a).permute_matrix(&a).unwrap();
        let after = Locality::of(&b);
        assert!(after.sectors_per_entry < 0.9 * before.sectors_per_entry, "{before:?} -> {after:?}");
        let _ = Permutation::identity(0).unwrap();
    }
}
