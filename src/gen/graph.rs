//! Graph-like matrices of the classes that real collections hold: R-MAT (Kronecker) graphs,
//! circuits, web graphs, random geometric graphs, and graph Laplacians.

use super::assemble::{build_pattern, fill_values, hash3, pattern_from_keys, sort_dedup, unit, Stream};
use crate::format::{check_entry_limit, check_index_limit};
use crate::{CsrMatrix, Error, FormatError, Scalar};
use rayon::prelude::*;

/// Salts that keep the random quantities of one seed independent of each other.
const SALT_VALUES: u64 = 0x7661_6C75_6573_0001;
const SALT_PERMUTATION: u64 = 0x7065_726D_7574_0002;
const SALT_EDGES: u64 = 0x6564_6765_7300_0003;
const SALT_ROWS: u64 = 0x726F_7773_0000_0004;
const SALT_POINTS: u64 = 0x706F_696E_7473_0005;
const SALT_BAND: u64 = 0x6261_6E64_0000_0006;
const SALT_NETS: u64 = 0x6E65_7473_0000_0007;

/// A positive weight in `[0.5, 1.5)` for entry `(i, j)` (not symmetric).
fn weight(seed: u64, i: usize, j: usize) -> f64 {
    0.5 + unit(hash3(seed ^ SALT_VALUES, i as u64, j as u64))
}

/// Values of a directed graph's adjacency matrix: [`weight`] of each entry.
pub(super) fn weights<T: Scalar>(seed: u64) -> impl Fn(usize, &[u32], &mut [T]) + Sync {
    move |i, cols, vals| {
        for (v, &c) in vals.iter_mut().zip(cols) {
            *v = T::from_f64(weight(seed, i, c as usize));
        }
    }
}

/// Values of a symmetric, strictly diagonally dominant matrix on a symmetric pattern that
/// stores every diagonal entry: off-diagonal `-w` with `w` uniform in `[0.1, 1)` from a hash
/// of the unordered pair, diagonal `1 + sum of the row's w`.
fn dominant_values<T: Scalar>(seed: u64) -> impl Fn(usize, &[u32], &mut [T]) + Sync {
    move |i, cols, vals| {
        let mut sum = 0.0;
        let mut diag = None;
        for (k, (v, &c)) in vals.iter_mut().zip(cols).enumerate() {
            let c = c as usize;
            if c == i {
                diag = Some(k);
            } else {
                let w = 0.1 + 0.9 * unit(hash3(seed ^ SALT_VALUES, i.min(c) as u64, i.max(c) as u64));
                *v = T::from_f64(-w);
                sum += w;
            }
        }
        let k = diag.expect("the pattern stores every diagonal entry");
        vals[k] = T::from_f64(1.0 + sum);
    }
}

/// `P(A)`, `P(A) + P(B)` and `P(A) + P(B) + P(C)` of Graph500's R-MAT quadrants (a = 0.57,
/// b = c = 0.19, d = 0.05), as 32-bit fractions: `round(p * 2^32)`.
const RMAT_THRESHOLDS: [u32; 3] = [2_448_131_359, 3_264_175_145, 4_080_218_931];

/// Vertices and drawn edges of an R-MAT graph: `2^scale` and `edge_factor * 2^scale`.
///
/// # Errors
///
/// [`FormatError::TooLarge`]: `"rows"` when `2^scale` exceeds
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT) (scale 31 and up), `"stored entries (expected)"`
/// when the drawn edges exceed [`ENTRY_LIMIT`](crate::format::ENTRY_LIMIT).
pub(super) fn rmat_size(scale: u32, edge_factor: usize) -> Result<(usize, usize), FormatError> {
    let vertices = 1usize.checked_shl(scale).filter(|_| scale < usize::BITS).unwrap_or(usize::MAX);
    check_index_limit("rows", vertices)?;
    let edges = edge_factor.saturating_mul(vertices);
    check_entry_limit("stored entries (expected)", edges)?;
    Ok((vertices, edges))
}

/// What the R-MAT generator drew and merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmatStats {
    /// Vertices: `2^scale`.
    pub vertices: usize,
    /// Edges drawn: `edge_factor * 2^scale`.
    pub edges: usize,
    /// Drawn edges from a vertex to itself, dropped.
    pub self_loops: usize,
    /// Drawn edges that repeat an edge already drawn (not counting self loops), merged.
    pub duplicates: usize,
}

impl RmatStats {
    /// The stored entries: `edges - self_loops - duplicates`.
    pub fn nnz(&self) -> usize {
        self.edges - self.self_loops - self.duplicates
    }
}

/// One R-MAT edge of unpermuted vertices: at each of `scale` levels, a 32-bit draw picks
/// the quadrant, setting one bit of the source and one of the target.
pub(super) fn rmat_edge(seed: u64, edge: u64, scale: u32) -> (u32, u32) {
    let mut s = Stream::new(seed ^ SALT_EDGES, edge);
    let (mut src, mut dst, mut bits) = (0u32, 0u32, 0u64);
    for level in 0..scale {
        if level % 2 == 0 {
            bits = s.next_u64();
        }
        let u = bits as u32;
        bits >>= 32;
        // the quadrant: (0, 0) below the first threshold, (0, 1) below the second, (1, 0)
        // below the third, else (1, 1); without branches
        let [t0, t1, t2] = RMAT_THRESHOLDS;
        let r = u32::from(u >= t1);
        let c = u32::from(u >= t0) & u32::from(u < t1) | u32::from(u >= t2);
        src = src << 1 | r;
        dst = dst << 1 | c;
    }
    (src, dst)
}

/// A seeded random permutation of `0..n` (Fisher-Yates).
pub(super) fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    let mut s = Stream::new(seed ^ SALT_PERMUTATION, 0);
    for i in (1..n).rev() {
        p.swap(i, s.below(i as u64 + 1) as usize);
    }
    p
}

/// A directed R-MAT (Kronecker) graph with Graph500's parameters, as its adjacency matrix,
/// with what was merged: see [`rmat`].
///
/// # Errors
///
/// As [`rmat`].
pub fn rmat_with_stats<T: Scalar>(
    scale: u32,
    edge_factor: usize,
    seed: u64,
) -> Result<(CsrMatrix<T>, RmatStats), FormatError> {
    let (offsets, cols, vals, stats) = super::kron::rmat_arrays(scale, edge_factor, seed)?;
    let n = offsets.len() - 1;
    Ok((CsrMatrix::try_from_parts(n, n, offsets, cols, vals)?, stats))
}

/// A directed R-MAT (Kronecker) graph with Graph500's parameters, as its `2^scale x 2^scale`
/// adjacency matrix: row `i` holds the edges out of vertex `i`.
///
/// `edge_factor * 2^scale` edges are drawn; each picks its source and target bit by bit,
/// from the top, choosing at each of the `scale` levels the quadrant (source bit, target
/// bit) = (0, 0), (0, 1), (1, 0), (1, 1) with probabilities a = 0.57, b = 0.19, c = 0.19,
/// d = 0.05 (rounded to multiples of 2^-32). Vertex labels are then permuted by a seeded
/// random permutation, as Graph500 does, so high degrees are not clustered at low indices.
/// Self loops are dropped and repeated edges merged ([`rmat_with_stats`] counts both).
/// Values are positive weights uniform in `[0.5, 1.5)`, from a hash of the position.
///
/// Out-degrees are heavily skewed: at scale 21 with edge factor 16, the mean is about 14
/// stored entries per row, many rows are empty, and the longest row holds tens of thousands.
///
/// Built in parallel straight into CSR (`src/gen/kron.rs`), for graphs of billions of
/// edges: the edges are drawn twice (each edge's draws are a function of its index), once
/// to count every row, once to write every target at its row's place (the counts serving as
/// cursors); each row is then sorted and merged in place, the rows moved together, and the
/// values allocated at the final count. The peak host memory is the final matrix, or, while
/// drawing, 12 bytes per vertex and 4 per drawn edge, plus about 1 MiB per thread: about
/// 1.0x the CSR arrays in f32. The result does not depend on the number of threads.
///
/// # Errors
///
/// [`FormatError::TooLarge`] when `2^scale` exceeds [`INDEX_LIMIT`](crate::INDEX_LIMIT)
/// (`"rows"`) or the drawn edges exceed [`ENTRY_LIMIT`](crate::ENTRY_LIMIT) (`"stored
/// entries (expected)"`), before anything is drawn.
///
/// # Example
///
/// ```
/// let a = spgpu::gen::rmat::<f64>(10, 16, 1)?;
/// let s = a.row_stats();
/// assert_eq!(a.nrows(), 1024);
/// assert!(a.nnz() <= 16 * 1024 && s.max > 10 * 16);
/// # Ok::<(), spgpu::FormatError>(())
/// ```
pub fn rmat<T: Scalar>(scale: u32, edge_factor: usize, seed: u64) -> Result<CsrMatrix<T>, FormatError> {
    rmat_with_stats(scale, edge_factor, seed).map(|(a, _)| a)
}

/// Parameters of [`web_graph`].
pub(super) mod web {
    /// Scale of the Lomax law of out-degrees (shape 2): mean degree about 12.5.
    pub const SCALE: f64 = 12.0;
    /// Lomax shape of the out-degrees: `P(L > t) = (1 + t)^-2`.
    pub const SHAPE: f64 = 2.0;
    /// The longest out-degree drawn.
    pub const MAX_DEGREE: usize = 5000;
    /// Fraction of links to nearby pages.
    pub const LOCAL: f64 = 0.75;
    /// The farthest a local link reaches.
    pub const WINDOW: f64 = 16384.0;
}

/// The out-degree drawn for one page of [`web_graph`] (before duplicates merge).
fn web_degree(s: &mut Stream, n: usize) -> usize {
    let u = 1.0 - s.unit(); // (0, 1]
                            // Lomax of shape 2 by inversion: u^(-1/2) - 1, with sqrt (exact in IEEE arithmetic)
                            // rather than powf, so the degrees are the same on every platform.
    let lomax = 1.0 / u.sqrt() - 1.0;
    ((web::SCALE * lomax) as usize).saturating_add(1).min(web::MAX_DEGREE).min(n - 1)
}

/// A directed web-like graph on `n` pages, as its adjacency matrix: power-law out-degrees
/// and links mostly to pages with nearby ids, as in a crawl ordered by URL.
///
/// Page `i` draws its out-degree `min(floor(12 L) + 1, 5000, n - 1)` with `L` a Lomax
/// (Pareto II) variable of shape 2 (`P(L > t) = (1 + t)^-2`: mean degree about 12.5, about
/// one page in 10,000 past 1,000 links). Each link is local with probability 0.75: to page
/// `i ± d` (sign even odds, wrapping around), `d = 1 + floor(16384 u^4)` with `u` uniform
/// (half the local links within 1024 pages, a sixth within 16); otherwise global: to page
/// `floor(n u^2)`, so low ids are hubs (in-degree of page 0 about `3 sqrt(n)`). Links to
/// itself are dropped, repeats merged. Values are positive weights uniform in
/// `[0.5, 1.5)`, from a hash of the position.
///
/// # Errors
///
/// [`FormatError::TooLarge`] when `n` or the expected entries (12.5 per row) exceed
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT), before anything is drawn.
///
/// # Example
///
/// ```
/// let a = spgpu::gen::web_graph::<f64>(100_000, 1)?;
/// let s = a.row_stats();
/// assert!((10.0..14.0).contains(&s.mean) && s.max > 1000);
/// # Ok::<(), spgpu::FormatError>(())
/// ```
pub fn web_graph<T: Scalar>(n: usize, seed: u64) -> Result<CsrMatrix<T>, FormatError> {
    check_index_limit("rows", n)?;
    check_entry_limit("stored entries (expected)", (n as f64 * 12.5) as usize)?;
    let (offsets, cols) = build_pattern(n, |i, out| {
        let mut s = Stream::new(seed ^ SALT_ROWS, i as u64);
        for _ in 0..web_degree(&mut s, n) {
            let j = if s.unit() < web::LOCAL {
                let u = s.unit();
                let d = (1 + (web::WINDOW * (u * u) * (u * u)) as usize) % n;
                if s.next_u64() & 1 == 0 {
                    (i + d) % n
                } else {
                    (i + n - d) % n
                }
            } else {
                let u = s.unit();
                ((n as f64 * u * u) as usize).min(n - 1)
            };
            if j != i {
                out.push(j as u32);
            }
        }
        sort_dedup(out);
    })?;
    let vals = fill_values(&offsets, &cols, weights(seed));
    CsrMatrix::try_from_parts(n, n, offsets, cols, vals)
}

/// The mean number of neighbours a point of [`random_geometric`] has (away from the
/// boundary).
pub const GEO_DEGREE: f64 = 12.0;

/// A random geometric graph on `n` points uniform in the unit square, as a symmetric
/// positive definite matrix numbered in spatial order, like a 2D mesh.
///
/// Points `(x, y)` come from a hash of the seed and the point's draw number; two points are
/// neighbours when their distance is at most `r = sqrt(12 / (π n))`, so a point has 12
/// neighbours on average (fewer near the boundary: the mean row holds about 12.9 entries at
/// `n = 4,000,000`). Points are numbered cell by cell of a grid of `g x g` cells of side
/// `1/g >= r` (row-major; within a cell, in draw order), so a point's neighbours lie in
/// the 3 x 3 cells around it, generation is O(n), and a row's columns sit within about
/// `2 g * 12 / π` of the diagonal.
///
/// Values: neighbours `-w` with `w` uniform in `[0.1, 1)` from a hash of the pair, and the
/// diagonal `1 + sum of the row's w`: symmetric and strictly diagonally dominant, hence SPD.
///
/// # Errors
///
/// [`FormatError::TooLarge`] when `n` or the expected entries (13 per row) exceed
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT), before anything is drawn.
///
/// # Example
///
/// ```
/// let a = spgpu::gen::random_geometric::<f64>(20_000, 1)?;
/// assert!(a.is_symmetric());
/// assert!((11.0..13.5).contains(&a.row_stats().mean));
/// # Ok::<(), spgpu::FormatError>(())
/// ```
pub fn random_geometric<T: Scalar>(n: usize, seed: u64) -> Result<CsrMatrix<T>, FormatError> {
    check_index_limit("rows", n)?;
    check_entry_limit("stored entries (expected)", (n as f64 * (GEO_DEGREE + 1.0)) as usize)?;
    if n == 0 {
        return CsrMatrix::zeros(0, 0);
    }
    let (g, r2) = geo_grid(n);
    let point = |p: u64| (unit(hash3(seed ^ SALT_POINTS, p, 0)), unit(hash3(seed ^ SALT_POINTS, p, 1)));
    let cell = |(x, y): (f64, f64)| (((x * g as f64) as usize).min(g - 1), ((y * g as f64) as usize).min(g - 1));
    let mut keys: Vec<u64> = (0..n)
        .into_par_iter()
        .with_min_len(1 << 12)
        .map(|p| {
            let (cx, cy) = cell(point(p as u64));
            ((cy * g + cx) as u64) << 32 | p as u64
        })
        .collect();
    keys.par_sort_unstable();
    let cell_start: Vec<u32> =
        (0..=g * g).into_par_iter().map(|c| keys.partition_point(|&k| k >> 32 < c as u64) as u32).collect();
    let points: Vec<(f64, f64)> = keys.par_iter().map(|&k| point(k & 0xFFFF_FFFF)).collect();
    drop(keys);
    let (offsets, cols) = build_pattern(n, |i, out| {
        let (x, y) = points[i];
        let (cx, cy) = cell(points[i]);
        // Cells in row-major order and points in id order within a cell: columns sorted.
        for ny in cy.saturating_sub(1)..=(cy + 1).min(g - 1) {
            let c = ny * g;
            let (lo, hi) = (cell_start[c + cx.saturating_sub(1)], cell_start[c + (cx + 1).min(g - 1) + 1]);
            for j in lo..hi {
                let (dx, dy) = (points[j as usize].0 - x, points[j as usize].1 - y);
                if dx * dx + dy * dy <= r2 {
                    out.push(j);
                }
            }
        }
    })?;
    drop((points, cell_start));
    let vals = fill_values(&offsets, &cols, dominant_values(seed));
    CsrMatrix::try_from_parts(n, n, offsets, cols, vals)
}

/// Cells per side `g` and squared radius `r^2 = 12 / (π n)` of [`random_geometric`]`(n)`,
/// `n >= 1`: `g = floor(1 / (1.0001 r))`, at least 1 (the margin keeps a cell at least `r`
/// wide despite rounding).
pub(super) fn geo_grid(n: usize) -> (usize, f64) {
    let r2 = GEO_DEGREE / (std::f64::consts::PI * n as f64);
    let g = ((1.0 / (1.0001 * r2.sqrt())).floor() as usize).max(1);
    (g, r2)
}

/// Parameters of [`circuit`].
pub(super) mod circuit_params {
    /// The farthest a short link reaches.
    pub const BAND: usize = 8;
    /// A pair within the band is linked when its hash is below this: probability 1/4.
    pub const LINK: u64 = 1 << 62;
    /// One net per this many rows (at least one).
    pub const ROWS_PER_NET: usize = 50_000;
    /// The fewest pins of a net.
    pub const MIN_PINS: usize = 20_000;
    /// The most pins of a net.
    pub const MAX_PINS: usize = 80_000;
}

/// One power or ground net of [`circuit`]: the row `vertex` connected to `size` other rows,
/// `(mul t + add) mod (n - 1)` for `t` in `0..size`, skipping `vertex` (distinct, since
/// `mul` is coprime with `n - 1`).
pub(super) struct Net {
    vertex: usize,
    pub(super) size: usize,
    mul: u64,
    add: u64,
    rows: u64,
}

impl Net {
    fn pins(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.size as u64).map(move |t| {
            let r = ((self.mul * t + self.add) % self.rows) as usize;
            (r + usize::from(r >= self.vertex)) as u32
        })
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The nets of [`circuit`]`(n, seed)`: `max(1, n / 50000)` of them when `n >= 2`, net `g`
/// on a random row of the `g`-th of as many equal blocks, with a number of pins uniform in
/// `20000..=80000`, at most `n - 1`.
pub(super) fn circuit_nets(n: usize, seed: u64) -> Vec<Net> {
    use circuit_params::*;
    if n < 2 {
        return Vec::new();
    }
    let count = (n / ROWS_PER_NET).max(1);
    let block = n / count;
    let rows = (n - 1) as u64;
    (0..count)
        .map(|g| {
            let mut s = Stream::new(seed ^ SALT_NETS, g as u64);
            let vertex = g * block + s.below(block as u64) as usize;
            let size = (MIN_PINS + s.below((MAX_PINS - MIN_PINS + 1) as u64) as usize).min(n - 1);
            let mut mul = 1 + s.below(rows.max(2) - 1);
            while gcd(mul, rows) != 1 {
                mul += 1; // ends at rows - 1 at the latest, coprime with rows
            }
            Net { vertex, size, mul, add: s.below(rows), rows }
        })
        .collect()
}

/// The expected stored entries of [`circuit`]`(n, seed)` and their variance: the diagonal,
/// `Binomial(16, 1/4)` short links per row (fewer near the ends) and each net's pins twice
/// (its row and its column).
/// Also returns the nets' pins in all.
pub(super) fn circuit_entries(n: usize, seed: u64) -> (f64, f64, usize) {
    let pins: usize = circuit_nets(n, seed).iter().map(|net| net.size).sum();
    let draws = 2.0 * circuit_params::BAND as f64 * n as f64;
    (n as f64 + draws / 4.0 + 2.0 * pins as f64, draws * 3.0 / 16.0, pins)
}

/// A circuit-like `n x n` matrix: short rows near the diagonal, plus a few power and
/// ground nets that each fill one long row and one long column.
///
/// Each row `i` stores its diagonal and a link to each `j` with `0 < |i - j| <= 8` with
/// probability 1/4 (a hash of the pair decides, the same both ways): 5 entries per row on
/// average, mostly 2 to 8. On top, `max(1, n / 50000)` nets: net `g` sits on a random row
/// `v` of the `g`-th block of `n / count` rows and connects it to `s` other rows, `s`
/// uniform in `20000..=80000` (at most `n - 1`), spread over the whole matrix (an
/// arithmetic progression modulo `n - 1` with a random step coprime with it): row `v` and
/// column `v` each gain those `s` entries. The pattern is symmetric.
///
/// Values: off-diagonal `-w` with `w` uniform in `[0.1, 1)` from a hash of the pair, the
/// diagonal `1 + sum of the row's w`: symmetric and strictly diagonally dominant, hence SPD.
///
/// At `n = 3,000,000`: 60 nets, about 21 million entries.
///
/// # Errors
///
/// [`FormatError::TooLarge`] when `n` or the expected entries exceed
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT), before anything is drawn.
///
/// # Example
///
/// ```
/// let a = spgpu::gen::circuit::<f64>(100_000, 1)?;
/// let s = a.row_stats();
/// assert!(s.max >= 20_000 && s.mean < 8.0);
/// assert!(a.is_symmetric());
/// # Ok::<(), spgpu::FormatError>(())
/// ```
pub fn circuit<T: Scalar>(n: usize, seed: u64) -> Result<CsrMatrix<T>, FormatError> {
    use circuit_params::{BAND, LINK};
    check_index_limit("rows", n)?;
    check_entry_limit("stored entries (expected)", circuit_entries(n, seed).0 as usize)?;
    let nets = circuit_nets(n, seed);
    let pins: Vec<Vec<u32>> = nets
        .par_iter()
        .map(|net| {
            let mut p: Vec<u32> = net.pins().collect();
            p.sort_unstable();
            p
        })
        .collect();
    // For every row, the nets it is a pin of: a CSR of keys `row << 32 | net`.
    let mut keys: Vec<u64> = Vec::with_capacity(pins.iter().map(Vec::len).sum());
    for (g, p) in pins.iter().enumerate() {
        keys.extend(p.iter().map(|&r| u64::from(r) << 32 | g as u64));
    }
    keys.par_sort_unstable();
    let (net_offsets, net_ids) = pattern_from_keys(n, &keys);
    drop(keys);
    let block = n / nets.len().max(1);
    let net_at = |i: usize| nets.get(i / block).filter(|net| net.vertex == i).map(|_| i / block);
    let linked = |lo: usize, d: usize| hash3(seed ^ SALT_BAND, lo as u64, d as u64) < LINK;
    let (offsets, cols) = build_pattern(n, |i, out| {
        out.extend((i.saturating_sub(BAND)..i).filter(|&j| linked(j, i - j)).map(|j| j as u32));
        out.push(i as u32);
        out.extend((i + 1..=(i + BAND).min(n - 1)).filter(|&j| linked(i, j - i)).map(|j| j as u32));
        let of = &net_ids[net_offsets[i] as usize..net_offsets[i + 1] as usize];
        out.extend(of.iter().map(|&g| nets[g as usize].vertex as u32));
        if let Some(g) = net_at(i) {
            out.extend_from_slice(&pins[g]);
        }
        sort_dedup(out);
    })?;
    drop((pins, net_offsets, net_ids));
    let vals = fill_values(&offsets, &cols, dominant_values(seed));
    CsrMatrix::try_from_parts(n, n, offsets, cols, vals)
}

/// The transpose of a square pattern (a counting sort; rows come out sorted).
fn transpose_pattern(n: usize, offsets: &[u64], cols: &[u32]) -> (Vec<u64>, Vec<u32>) {
    let mut t_offsets = vec![0u64; n + 1];
    for &c in cols {
        t_offsets[c as usize + 1] += 1;
    }
    for c in 0..n {
        t_offsets[c + 1] += t_offsets[c];
    }
    // Scatter with t_offsets[c] as row c's cursor, then shift the ends back into starts.
    let mut t_cols = vec![0u32; cols.len()];
    for i in 0..n {
        for &c in &cols[offsets[i] as usize..offsets[i + 1] as usize] {
            t_cols[t_offsets[c as usize] as usize] = i as u32;
            t_offsets[c as usize] += 1;
        }
    }
    t_offsets.copy_within(0..n, 1);
    t_offsets[0] = 0;
    (t_offsets, t_cols)
}

/// The shifted graph Laplacian `L + I` of the undirected graph whose edges are the
/// off-diagonal pattern of `a`: the pattern is symmetrized (`(i, j)` is an edge when `a`
/// stores `(i, j)` or `(j, i)`, `i != j`), values of `a` and its diagonal are ignored, and
/// the result stores `-1` for each edge and `degree + 1` on the diagonal. Every row sums to
/// exactly 1; the matrix is symmetric and strictly diagonally dominant, hence positive
/// definite, with the row-length skew of `a` (made symmetric): CG on skewed rows.
///
/// Takes `a` by value so its values are freed first; peak memory is about the pattern of
/// `a` twice plus the result.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when `a` is not square; [`FormatError::TooLarge`] when the
/// symmetrized pattern exceeds [`INDEX_LIMIT`](crate::INDEX_LIMIT).
///
/// # Example
///
/// ```
/// use spgpu::{gen, CsrMatrix};
/// // The path 0 -> 1 -> 2, stored one way only.
/// let a = CsrMatrix::try_from_parts(3, 3, vec![0, 1, 2, 2], vec![1, 2], vec![5.0, 7.0])?;
/// let l: CsrMatrix<f64> = gen::graph_laplacian(a)?;
/// assert_eq!(l.to_dense(), [2.0, -1.0, 0.0, -1.0, 3.0, -1.0, 0.0, -1.0, 2.0]);
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn graph_laplacian<T: Scalar, U: Scalar>(a: CsrMatrix<U>) -> crate::Result<CsrMatrix<T>> {
    if a.nrows() != a.ncols() {
        return Err(Error::DimensionMismatch {
            op: "graph_laplacian: columns (the matrix must be square)",
            expected: a.nrows(),
            found: a.ncols(),
        });
    }
    let (n, _, offsets, cols, vals) = a.into_parts();
    drop(vals);
    let (t_offsets, t_cols) = transpose_pattern(n, &offsets, &cols);
    let (offsets, cols) = {
        let (offsets, cols, t_offsets, t_cols) = (offsets, cols, t_offsets, t_cols);
        build_pattern(n, |i, out| {
            out.push(i as u32);
            out.extend_from_slice(&cols[offsets[i] as usize..offsets[i + 1] as usize]);
            out.extend_from_slice(&t_cols[t_offsets[i] as usize..t_offsets[i + 1] as usize]);
            sort_dedup(out);
        })?
        // the input pattern and its transpose are freed here, before the values
    };
    let vals = fill_values(&offsets, &cols, |i, cols, vals: &mut [T]| {
        let diag = T::from_f64(cols.len() as f64); // degree + 1
        for (v, &c) in vals.iter_mut().zip(cols) {
            *v = if c as usize == i { diag } else { -T::ONE };
        }
    });
    Ok(CsrMatrix::try_from_parts(n, n, offsets, cols, vals)?)
}
