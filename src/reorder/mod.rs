//! Locality orderings: renumber the rows and columns of a square matrix so that the gathers
//! of `x` in `A x` fall on cache lines that neighbouring rows share.
//!
//! An SpMV reads `x` at the column of every entry. Numbered at random, a mesh or a graph
//! sends neighbouring rows to columns far apart, and each gather pulls a sector of `x` of
//! which it uses one value: the product then runs at a fraction of the bandwidth its bytes
//! would allow. A symmetric renumbering `B = P A P^T` keeps the system (the same
//! eigenvalues, the same CG iterations in exact arithmetic) and changes only which gathers
//! share a line.
//!
//! - [`Permutation`]: a validated bijection, applied to vectors and matrices, inverted and
//!   composed.
//! - [`rcm`]: reverse Cuthill-McKee, for meshes and banded systems.
//! - [`graph_order`]: for graphs with skewed degrees: the hubs first, by degree, then every
//!   other vertex in the order a breadth-first sweep from the hubs meets it, so that the
//!   neighbours of one vertex (its community) get neighbouring numbers.
//! - [`Locality`]: what a numbering makes of the gathers (bandwidth, profile, and the
//!   sectors of `x` a block of rows touches), the figure [`Ordering::Auto`] decides on.
//!
//! # Example
//!
//! ```
//! use spgpu::{gen, reorder::{self, Locality, Permutation}};
//! let a = gen::laplacian_2d::<f64>(30);
//! // a random numbering of the same grid, then RCM to undo it
//! let shuffle = Permutation::from_order((0..a.nrows()).map(|i| (i * 7919) % a.nrows()).collect())?;
//! let scattered = shuffle.permute_matrix(&a)?;
//! let p = reorder::rcm(&scattered);
//! let b = p.permute_matrix(&scattered)?;
//! assert!(Locality::of(&b).bandwidth <= 2 * 30);
//! assert!(Locality::of(&b).sectors_per_entry < Locality::of(&scattered).sectors_per_entry);
//! // a vector goes into the new numbering and back
//! let v: Vec<f64> = (0..a.nrows()).map(|i| i as f64).collect();
//! assert_eq!(p.unpermute_vector(&p.permute_vector(&v)?)?, v);
//! # Ok::<(), spgpu::Error>(())
//! ```

mod graph;
mod locality;
mod rcm;

pub use graph::graph_order;
pub use locality::{Locality, SECTOR_BYTES};
pub use rcm::rcm;

use crate::{CsrMatrix, Error, Result, Scalar};
use rayon::prelude::*;

/// A renumbering of `0..n`: row and column `order[k]` of the original matrix become row and
/// column `k` of the permuted one.
///
/// Two arrays are kept: `order` (new index to old) and its inverse `position` (old index to
/// new). Made only from a bijection: [`from_order`](Self::from_order) and
/// [`from_positions`](Self::from_positions) check it and name the first index at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permutation {
    order: Vec<u32>,
    position: Vec<u32>,
}

impl Permutation {
    /// The identity on `0..n`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `n` is past [`INDEX_LIMIT`](crate::INDEX_LIMIT).
    pub fn identity(n: usize) -> Result<Self> {
        check_len(n)?;
        let order: Vec<u32> = (0..n as u32).collect();
        Ok(Permutation { position: order.clone(), order })
    }

    /// The permutation whose new index `k` is the old index `order[k]`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] naming the first index past the length, or the first index
    /// that appears twice (with both places), when `order` is not a bijection of `0..n`.
    pub fn from_order(order: Vec<usize>) -> Result<Self> {
        let order = narrow("order", order)?;
        let position = invert("order", &order)?;
        Ok(Permutation { order, position })
    }

    /// The permutation that moves old index `i` to new index `positions[i]`.
    ///
    /// # Errors
    ///
    /// As [`from_order`](Self::from_order), naming `positions`.
    pub fn from_positions(positions: Vec<usize>) -> Result<Self> {
        let position = narrow("positions", positions)?;
        let order = invert("positions", &position)?;
        Ok(Permutation { order, position })
    }

    /// Made from an order known to be a bijection (the orderings here); checked in debug
    /// builds.
    pub(crate) fn from_order_u32(order: Vec<u32>) -> Self {
        let position = invert("order", &order).expect("an ordering is a bijection");
        Permutation { order, position }
    }

    /// The length `n`.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether `n` is 0.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// `order[k]`: the old index that becomes index `k`.
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    /// `position[i]`: the new index of old index `i`.
    pub fn positions(&self) -> &[u32] {
        &self.position
    }

    /// Whether every index stays where it is.
    pub fn is_identity(&self) -> bool {
        self.order.par_iter().enumerate().all(|(k, &o)| k == o as usize)
    }

    /// The inverse: the permutation that undoes this one.
    pub fn inverse(&self) -> Self {
        Permutation { order: self.position.clone(), position: self.order.clone() }
    }

    /// This permutation, then `next`: old index `i` goes to `next`'s position of this
    /// one's position of `i`.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the lengths differ.
    pub fn then(&self, next: &Permutation) -> Result<Self> {
        check_same("Permutation::then: length of the second permutation", self.len(), next.len())?;
        let position: Vec<u32> = self.position.par_iter().map(|&p| next.position[p as usize]).collect();
        let order: Vec<u32> = next.order.par_iter().map(|&o| self.order[o as usize]).collect();
        Ok(Permutation { order, position })
    }

    /// `v` in the new numbering: `out[k] = v[order[k]]`.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `v.len()` is not the length.
    pub fn permute_vector<T: Copy + Send + Sync>(&self, v: &[T]) -> Result<Vec<T>> {
        check_same("Permutation::permute_vector: length of the vector", self.len(), v.len())?;
        Ok(gather(&self.order, v))
    }

    /// `v` back in the original numbering: `out[i] = v[position[i]]`.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `v.len()` is not the length.
    pub fn unpermute_vector<T: Copy + Send + Sync>(&self, v: &[T]) -> Result<Vec<T>> {
        check_same("Permutation::unpermute_vector: length of the vector", self.len(), v.len())?;
        Ok(gather(&self.position, v))
    }

    /// `P A P^T`: entry `(i, j)` of `a` becomes entry `(position[i], position[j])`, each row's
    /// columns sorted. `O(nnz log d)` for rows of `d` entries, rows in parallel.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `a` is not square of the permutation's length.
    pub fn permute_matrix<T: Scalar>(&self, a: &CsrMatrix<T>) -> Result<CsrMatrix<T>> {
        check_same("Permutation::permute_matrix: rows of the matrix", self.len(), a.nrows())?;
        check_same("Permutation::permute_matrix: columns of the matrix", self.len(), a.ncols())?;
        let n = self.len();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u64);
        let mut total = 0u64;
        for &old in &self.order {
            total += a.row_len(old as usize) as u64;
            offsets.push(total);
        }
        let nnz = a.nnz();
        let mut cols = vec![0u32; nnz];
        let mut vals = vec![T::ZERO; nnz];
        // Split the output arrays into blocks of rows (a few slices, not two a row); each
        // row sorts its own part of its block.
        const BLOCK: usize = 1 << 10;
        let mut blocks: Vec<(usize, &mut [u32], &mut [T])> = Vec::with_capacity(n.div_ceil(BLOCK));
        let (mut c_rest, mut v_rest) = (cols.as_mut_slice(), vals.as_mut_slice());
        for first in (0..n).step_by(BLOCK) {
            let last = (first + BLOCK).min(n);
            let len = (offsets[last] - offsets[first]) as usize;
            let (c, cr) = std::mem::take(&mut c_rest).split_at_mut(len);
            let (v, vr) = std::mem::take(&mut v_rest).split_at_mut(len);
            blocks.push((first, c, v));
            (c_rest, v_rest) = (cr, vr);
        }
        blocks.into_par_iter().for_each(|(first, c, v)| {
            let base = offsets[first];
            let mut pairs: Vec<(u32, T)> = Vec::new();
            let last = (first + BLOCK).min(n);
            for (&old, &start) in self.order[first..last].iter().zip(&offsets[first..last]) {
                let (rc, rv) = a.row(old as usize);
                pairs.clear();
                pairs.extend(rc.iter().map(|&j| self.position[j as usize]).zip(rv.iter().copied()));
                pairs.sort_unstable_by_key(|&(j, _)| j);
                let at = (start - base) as usize;
                for (slot, (j, x)) in pairs.drain(..).enumerate() {
                    c[at + slot] = j;
                    v[at + slot] = x;
                }
            }
        });
        // SAFETY (of the invariants): the offsets are the row lengths of `a` in the new order,
        // every column is a position (below n), and a row's columns are the images of `a`'s
        // unique columns under a bijection, sorted: unique and ascending.
        Ok(unsafe { CsrMatrix::from_parts_unchecked(n, n, offsets, cols, vals) })
    }
}

/// Which locality ordering a solve or a product uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ordering {
    /// Chosen from the matrix by [`choose`]: an ordering when the gathers of `x` are
    /// scattered and the ordering brings them together, else none; the reason is reported.
    Auto,
    /// The user's numbering.
    #[default]
    None,
    /// Reverse Cuthill-McKee ([`rcm`]).
    Rcm,
    /// Hubs first, then a breadth-first sweep ([`graph_order`]).
    Graph,
}

impl Ordering {
    /// The name used on the command line (`auto`, `none`, `rcm`, `graph`).
    pub fn name(self) -> &'static str {
        match self {
            Ordering::Auto => "auto",
            Ordering::None => "none",
            Ordering::Rcm => "rcm",
            Ordering::Graph => "graph",
        }
    }
}

impl std::fmt::Display for Ordering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Ordering {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Ordering::Auto),
            "none" => Ok(Ordering::None),
            "rcm" => Ok(Ordering::Rcm),
            "graph" => Ok(Ordering::Graph),
            _ => Err(Error::InvalidArgument(format!("unknown ordering '{s}': expected auto, none, rcm or graph"))),
        }
    }
}

/// The permutation of `ordering` for the square matrix `a` (`None` for [`Ordering::None`]
/// and for [`Ordering::Auto`] when [`choose`] keeps the numbering).
pub fn permutation_for<T: Scalar>(a: &CsrMatrix<T>, ordering: Ordering) -> Option<Permutation> {
    match ordering {
        Ordering::None => None,
        Ordering::Rcm => Some(rcm(a)),
        Ordering::Graph => Some(graph_order(a)),
        Ordering::Auto => choose(a).permutation,
    }
}

/// Rows past which [`choose`] measures the locality on a sample of row blocks, not on every
/// row.
pub(crate) const SAMPLE_ABOVE_ROWS: usize = 1 << 20;

/// Sectors of `x` per stored entry (with [`SECTOR_BYTES`]-byte sectors of `f64` and blocks of
/// [`locality::BLOCK_ROWS`] rows) below which [`choose`] keeps the numbering: the gathers
/// already share sectors well enough. A 5-point Laplacian numbered by rows touches about
/// 0.17; numbered at random, close to 1.
pub(crate) const AUTO_SCATTERED: f64 = 0.6;

/// The fraction of the sectors per entry an ordering must save for [`choose`] to take it.
pub(crate) const AUTO_MIN_GAIN: f64 = 0.25;

/// Longest row over mean row length from which [`choose`] tries [`graph_order`] before
/// [`rcm`] (skewed degrees: hubs).
pub(crate) const AUTO_SKEW: f64 = 8.0;

/// What [`choose`] decided, and why.
#[derive(Debug, Clone)]
pub struct Choice {
    /// The ordering taken ([`Ordering::None`] to keep the numbering).
    pub ordering: Ordering,
    /// Its permutation, when one is taken.
    pub permutation: Option<Permutation>,
    /// The locality of the user's numbering.
    pub before: Locality,
    /// The locality with the permutation, when one is taken.
    pub after: Option<Locality>,
    /// Why, in a sentence.
    pub reason: String,
}

/// Decides whether to renumber `a`, from what its numbering makes of the gathers of `x`:
/// none when the sectors of `x` per entry are below 0.6; else the ordering
/// for its shape ([`graph_order`] for skewed degrees, [`rcm`] otherwise; the other one too
/// when the first saves little), taken when it saves at least a quarter of the
/// sectors. Large matrices are measured on a sample of row blocks.
///
/// The decision looks at the matrix only; whether the saving repays the ordering's cost
/// depends on how many products follow, which the caller knows (a CG solve reports the
/// ordering's time in its setup).
pub fn choose<T: Scalar>(a: &CsrMatrix<T>) -> Choice {
    let before = if a.nrows() > SAMPLE_ABOVE_ROWS { Locality::sampled(a) } else { Locality::of(a) };
    choose_from(a, before)
}

/// [`choose`] with the locality of `a`'s numbering already measured.
pub(crate) fn choose_from<T: Scalar>(a: &CsrMatrix<T>, before: Locality) -> Choice {
    decide(a, before, false).0
}

/// One ordering of `a` as [`survey`] measured it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// [`Ordering::Rcm`] or [`Ordering::Graph`].
    pub ordering: Ordering,
    /// The locality of `a` in that ordering.
    pub after: Locality,
    /// The time to compute the ordering and renumber `a` (on the host).
    pub time: std::time::Duration,
}

/// What [`survey`] found.
#[derive(Debug, Clone)]
pub struct Survey {
    /// What [`choose`] decides (the same decision).
    pub choice: Choice,
    /// Every ordering tried, including those [`choose`] would not have needed; none when
    /// the matrix is not square with at least two rows.
    pub candidates: Vec<Candidate>,
}

/// What every ordering makes of `a` (for `spgpu info`): each candidate's locality and cost,
/// and what [`choose`] decides.
pub fn survey<T: Scalar>(a: &CsrMatrix<T>) -> Survey {
    let before = if a.nrows() > SAMPLE_ABOVE_ROWS { Locality::sampled(a) } else { Locality::of(a) };
    let (choice, candidates) = decide(a, before, true);
    Survey { choice, candidates }
}

/// [`choose_from`], and with `all` the candidates it did not need measured too.
fn decide<T: Scalar>(a: &CsrMatrix<T>, before: Locality, all: bool) -> (Choice, Vec<Candidate>) {
    let sample = a.nrows() > SAMPLE_ABOVE_ROWS;
    let measure = |m: &CsrMatrix<T>| if sample { Locality::sampled(m) } else { Locality::of(m) };
    let keep = |reason: String, before: Locality| Choice {
        ordering: Ordering::None,
        permutation: None,
        before,
        after: None,
        reason,
    };
    if a.nrows() != a.ncols() || a.nrows() < 2 {
        let reason = "the matrix is not square with at least two rows: nothing to renumber".into();
        return (keep(reason, before), Vec::new());
    }
    let scattered = before.sectors_per_entry >= AUTO_SCATTERED;
    let stats = a.row_stats();
    let skewed = stats.max as f64 > AUTO_SKEW * stats.mean.max(1.0);
    let order = if skewed { [Ordering::Graph, Ordering::Rcm] } else { [Ordering::Rcm, Ordering::Graph] };
    let mut tried: Vec<Candidate> = Vec::new();
    let mut best: Option<(Ordering, Permutation, Locality)> = None;
    let enough = |b: &Option<(Ordering, Permutation, Locality)>| {
        b.as_ref().is_some_and(|(_, _, l)| l.sectors_per_entry <= (1.0 - AUTO_MIN_GAIN) * before.sectors_per_entry)
    };
    for ordering in order {
        if !all && (!scattered || enough(&best)) {
            break;
        }
        let started = std::time::Instant::now();
        let p = match ordering {
            Ordering::Rcm => rcm(a),
            _ => graph_order(a),
        };
        let after = measure(&p.permute_matrix(a).expect("square, of the permutation's length"));
        tried.push(Candidate { ordering, after, time: started.elapsed() });
        // as choose would: the first candidate that saves enough, else the better one
        if !enough(&best) && best.as_ref().map_or(true, |(_, _, b)| after.sectors_per_entry < b.sectors_per_entry) {
            best = Some((ordering, p, after));
        }
    }
    if !scattered {
        let reason = format!(
            "the numbering already shares the gathers of x: {:.2} sectors per entry (below {AUTO_SCATTERED})",
            before.sectors_per_entry
        );
        return (keep(reason, before), tried);
    }
    let (ordering, p, after) = best.expect("two candidates tried");
    let gain = 1.0 - after.sectors_per_entry / before.sectors_per_entry;
    if gain < AUTO_MIN_GAIN {
        let reason = format!(
            "the gathers of x are scattered ({:.2} sectors per entry), but the best ordering ({}) leaves {:.2}: \
             less than {:.0}% saved",
            before.sectors_per_entry,
            ordering,
            after.sectors_per_entry,
            AUTO_MIN_GAIN * 100.0
        );
        return (keep(reason, before), tried);
    }
    let choice = Choice {
        ordering,
        reason: format!(
            "{ordering}: the gathers of x go from {:.2} to {:.2} sectors per entry ({:.0}% fewer{}), bandwidth {} -> {}",
            before.sectors_per_entry,
            after.sectors_per_entry,
            gain * 100.0,
            if skewed { "; skewed degrees: hubs first" } else { "" },
            before.bandwidth,
            after.bandwidth
        ),
        permutation: Some(p),
        before,
        after: Some(after),
    };
    (choice, tried)
}

/// The pattern of `a + a^T` without the diagonal, as sorted neighbour lists: the graph the
/// orderings sweep.
pub(crate) struct Adjacency {
    offsets: Vec<usize>,
    neighbours: Vec<u32>,
}

impl Adjacency {
    fn neighbours(&self, v: usize) -> &[u32] {
        &self.neighbours[self.offsets[v]..self.offsets[v + 1]]
    }

    fn degree(&self, v: usize) -> usize {
        self.offsets[v + 1] - self.offsets[v]
    }
}

/// The adjacency of the square matrix `a`: its own rows when its pattern is symmetric, else
/// each row merged with the same row of the transposed pattern.
fn adjacency<T: Scalar>(a: &CsrMatrix<T>) -> Adjacency {
    let n = a.nrows();
    let t = pattern_transpose(a);
    let t = if t.0 == a.row_offsets() && t.1 == a.col_indices() { None } else { Some(t) };
    let row = |i: usize| a.row(i).0;
    let other =
        |i: usize| -> &[u32] { t.as_ref().map_or(&[], |(off, cols)| &cols[off[i] as usize..off[i + 1] as usize]) };
    // Visits the merged, de-duplicated row `i` without its diagonal.
    let merged = |i: usize, f: &mut dyn FnMut(u32)| {
        let (x, y) = (row(i), other(i));
        let (mut p, mut q) = (0, 0);
        while p < x.len() || q < y.len() {
            let c = match (x.get(p), y.get(q)) {
                (Some(&u), Some(&w)) if u == w => {
                    p += 1;
                    q += 1;
                    u
                }
                (Some(&u), Some(&w)) if u < w => {
                    p += 1;
                    u
                }
                (Some(&u), None) => {
                    p += 1;
                    u
                }
                (_, Some(&w)) => {
                    q += 1;
                    w
                }
                (None, None) => unreachable!(),
            };
            if c as usize != i {
                f(c);
            }
        }
    };
    let lengths: Vec<usize> = (0..n)
        .into_par_iter()
        .with_min_len(1 << 12)
        .map(|i| {
            let mut len = 0;
            merged(i, &mut |_| len += 1);
            len
        })
        .collect();
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0);
    let mut total = 0;
    for len in lengths {
        total += len;
        offsets.push(total);
    }
    let mut neighbours = vec![0u32; total];
    let mut rows: Vec<&mut [u32]> = Vec::with_capacity(n);
    let mut rest = neighbours.as_mut_slice();
    for i in 0..n {
        let (r, tail) = std::mem::take(&mut rest).split_at_mut(offsets[i + 1] - offsets[i]);
        rows.push(r);
        rest = tail;
    }
    rows.into_par_iter().enumerate().with_min_len(1 << 12).for_each(|(i, r)| {
        let mut k = 0;
        merged(i, &mut |c| {
            r[k] = c;
            k += 1;
        });
    });
    Adjacency { offsets, neighbours }
}

/// The transposed pattern of `a` (offsets and sorted columns), by a counting sort.
fn pattern_transpose<T: Scalar>(a: &CsrMatrix<T>) -> (Vec<u64>, Vec<u32>) {
    let mut offsets = vec![0u64; a.ncols() + 1];
    for &c in a.col_indices() {
        offsets[c as usize + 1] += 1;
    }
    for i in 0..a.ncols() {
        offsets[i + 1] += offsets[i];
    }
    let mut next = offsets.clone();
    let mut cols = vec![0u32; a.nnz()];
    for i in 0..a.nrows() {
        for &c in a.row(i).0 {
            cols[next[c as usize] as usize] = i as u32;
            next[c as usize] += 1;
        }
    }
    (offsets, cols)
}

fn check_len(n: usize) -> Result<()> {
    if n > crate::INDEX_LIMIT {
        return Err(Error::InvalidArgument(format!(
            "permutation of length {n}: past the index limit {}",
            crate::INDEX_LIMIT
        )));
    }
    Ok(())
}

fn check_same(op: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected != found {
        return Err(Error::DimensionMismatch { op, expected, found });
    }
    Ok(())
}

/// `v` as `u32`, each below its length (else an error naming the first at fault).
fn narrow(what: &str, v: Vec<usize>) -> Result<Vec<u32>> {
    let n = v.len();
    check_len(n)?;
    if let Some((k, &i)) = v.iter().enumerate().find(|&(_, &i)| i >= n) {
        return Err(Error::InvalidArgument(format!(
            "permutation: {what}[{k}] is {i}, past the length {n} (a permutation of 0..{n} holds each of 0..{} once)",
            n.saturating_sub(1)
        )));
    }
    Ok(v.into_iter().map(|i| i as u32).collect())
}

/// The inverse of `map` (every entry below its length): an error naming the first index that
/// appears twice, with both places.
fn invert(what: &str, map: &[u32]) -> Result<Vec<u32>> {
    const UNSET: u32 = u32::MAX;
    let mut inv = vec![UNSET; map.len()];
    for (k, &i) in map.iter().enumerate() {
        let first = inv[i as usize];
        if first != UNSET {
            let mut seen = vec![false; map.len()];
            map.iter().for_each(|&j| seen[j as usize] = true);
            let missing = seen.iter().position(|&s| !s).unwrap_or(0);
            return Err(Error::InvalidArgument(format!(
                "permutation: {i} appears twice in {what}, at {first} and {k}, and {missing} not at all: not a \
                 bijection"
            )));
        }
        inv[i as usize] = k as u32;
    }
    Ok(inv)
}

fn gather<T: Copy + Send + Sync>(index: &[u32], v: &[T]) -> Vec<T> {
    index.par_iter().with_min_len(1 << 14).map(|&i| v[i as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen;

    #[test]
    fn the_thresholds_are_those_the_docs_name() {
        // graph_order, Locality::sampled and choose give these figures in words
        assert_eq!(graph::HUB_DEGREE, 4.0);
        assert_eq!(locality::SAMPLE_BLOCKS, 32768);
        assert_eq!((AUTO_SCATTERED, AUTO_MIN_GAIN), (0.6, 0.25));
    }

    fn shuffled(n: usize, seed: u64) -> Permutation {
        use rand::{seq::SliceRandom, SeedableRng};
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
        Permutation::from_order(order).unwrap()
    }

    #[test]
    fn bad_permutations_are_refused_naming_the_index() {
        let e = Permutation::from_order(vec![0, 2, 2]).unwrap_err().to_string();
        assert!(e.contains("2 appears twice in order, at 1 and 2, and 1 not at all"), "{e}");
        let e = Permutation::from_positions(vec![0, 3, 1]).unwrap_err().to_string();
        assert!(e.contains("positions[1] is 3, past the length 3"), "{e}");
        let p = Permutation::identity(3).unwrap();
        let e = p.permute_vector(&[1.0, 2.0]).unwrap_err().to_string();
        assert!(e.contains("expected 3, found 2"), "{e}");
        let e = p.permute_matrix(&gen::laplacian_2d::<f64>(2)).unwrap_err().to_string();
        assert!(e.contains("expected 3, found 4"), "{e}");
        assert!(p.then(&Permutation::identity(4).unwrap()).is_err());
        assert!(Permutation::from_order(vec![]).unwrap().is_empty());
    }

    #[test]
    fn apply_invert_and_compose() {
        let p = Permutation::from_order(vec![2, 0, 1]).unwrap();
        assert_eq!(p.positions(), &[1, 2, 0]);
        assert_eq!(p.permute_vector(&['a', 'b', 'c']).unwrap(), vec!['c', 'a', 'b']);
        assert_eq!(p.unpermute_vector(&['c', 'a', 'b']).unwrap(), vec!['a', 'b', 'c']);
        assert!(p.then(&p.inverse()).unwrap().is_identity());
        assert!(!p.is_identity());
        let q = Permutation::from_order(vec![1, 2, 0]).unwrap();
        let v = [10, 20, 30];
        let pq = p.then(&q).unwrap();
        assert_eq!(pq.permute_vector(&v).unwrap(), q.permute_vector(&p.permute_vector(&v).unwrap()).unwrap());
        assert_eq!(Permutation::from_positions(p.positions().iter().map(|&i| i as usize).collect()).unwrap(), p);
    }

    #[test]
    fn the_permuted_matrix_is_p_a_p_transposed() {
        let a = gen::laplacian_2d::<f64>(7);
        let p = shuffled(a.nrows(), 3);
        let b = p.permute_matrix(&a).unwrap();
        // re-validated: every invariant of CSR holds
        let b = CsrMatrix::try_from_parts(
            b.nrows(),
            b.ncols(),
            b.row_offsets().to_vec(),
            b.col_indices().to_vec(),
            b.values().to_vec(),
        )
        .unwrap();
        for i in 0..a.nrows() {
            let (cols, vals) = a.row(i);
            for (&j, &v) in cols.iter().zip(vals) {
                assert_eq!(b.get(p.positions()[i] as usize, p.positions()[j as usize] as usize), Some(v));
            }
        }
        assert_eq!(b.nnz(), a.nnz());
        // B (P x) = P (A x)
        let x: Vec<f64> = (0..a.nrows()).map(|i| (i as f64).sin()).collect();
        let (mut ax, mut bpx) = (vec![0.0; a.nrows()], vec![0.0; a.nrows()]);
        crate::reference::spmv_csr(1.0, &a, &x, 0.0, &mut ax).unwrap();
        crate::reference::spmv_csr(1.0, &b, &p.permute_vector(&x).unwrap(), 0.0, &mut bpx).unwrap();
        // the sums run in another order, so equal to rounding
        for (u, v) in bpx.iter().zip(p.permute_vector(&ax).unwrap()) {
            assert!((u - v).abs() <= 1e-14 * v.abs().max(1.0), "{u} against {v}");
        }
        assert_eq!(p.inverse().permute_matrix(&b).unwrap(), a);
    }

    #[test]
    fn auto_keeps_a_good_numbering_and_undoes_a_random_one() {
        let a = gen::laplacian_3d_7pt::<f64>(20);
        let keep = choose(&a);
        assert_eq!(keep.ordering, Ordering::None, "{}", keep.reason);
        assert!(keep.reason.contains("already shares"), "{}", keep.reason);
        let scattered = shuffled(a.nrows(), 9).permute_matrix(&a).unwrap();
        let c = choose(&scattered);
        assert_eq!(c.ordering, Ordering::Rcm, "{}", c.reason);
        let after = c.after.unwrap();
        assert!(after.sectors_per_entry < 0.6 * c.before.sectors_per_entry, "{}", c.reason);
        assert!(c.reason.starts_with("rcm: the gathers of x go from"), "{}", c.reason);
        assert_eq!(permutation_for(&scattered, Ordering::None), None);
        assert_eq!("graph".parse::<Ordering>().unwrap(), Ordering::Graph);
        assert!("rmc".parse::<Ordering>().unwrap_err().to_string().contains("expected auto, none, rcm or graph"));
    }
}
