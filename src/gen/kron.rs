//! R-MAT (Kronecker) graphs assembled in place: the edges are drawn twice (once to count each
//! row, once to write it) straight into the CSR arrays, so no edge list is ever held and
//! nothing is sorted but each row on its own.
//!
//! Every edge is drawn from its own stream ([`rmat_edge`]) and every row is sorted before its
//! repeats merge, so the arrays do not depend on the thread count or on the order in which
//! the threads' writes land.

// Until graph.rs builds its matrix from `rmat_arrays` and spec.rs estimates with
// `rmat_peak_bytes`, only the tests call them.

use super::graph::{permutation, rmat_edge, rmat_size, weights, RmatStats};
use crate::{FormatError, Scalar};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Edges a drawing task draws (the last one fewer), then groups by [`BLOCKS`] blocks of rows.
const EDGES_PER_TASK: usize = 1 << 16;
/// Blocks of rows by which a drawing task groups its edges before it visits them, at most.
const BLOCKS: usize = 1024;
/// Edges a drawing task visits together (see [`touch`]).
const BATCH: usize = 64;
/// Offsets per parallel task of the prefix sum.
const SCAN_CHUNK: usize = 1 << 16;
/// Entries per merging task, about (a task holds at least one row, however long).
const ENTRIES_PER_TASK: u64 = 1 << 16;
/// Rows per merging task, at most.
const ROWS_PER_TASK: usize = 1 << 12;
/// Host bytes one merging task holds at most: its bounds, its start, its count and the
/// pieces of the arrays it is handed.
const TASK_BYTES: u64 = 64;

/// Row offsets, column indices and values of an R-MAT graph's CSR arrays, and its
/// statistics.
pub(super) type RmatArrays<T> = (Vec<u64>, Vec<u32>, Vec<T>, RmatStats);

/// The raw CSR arrays of [`rmat`](super::rmat)`(scale, edge_factor, seed)`: row offsets
/// (`2^scale + 1`, from 0 to the entry count), each row's sorted, distinct columns, their
/// values, and what was drawn and merged. The same arrays and statistics as
/// [`rmat_with_stats`](super::rmat_with_stats)'s sort of all edge keys, bit for bit.
///
/// The edges are drawn twice, in parallel ([`draw_edges`]): the first pass counts each row's
/// edges (self loops dropped) into the offsets with atomic additions, a prefix sum turns the
/// counts into row starts, and the second pass writes each edge's permuted target at its
/// row's cursor, the row's offset slot itself (atomically advanced from the row's start to
/// its end, which is the next row's start: no cursor array). Then each row is sorted, its
/// repeats are dropped and the rows slide left over the gaps (in parallel within balanced
/// tasks of rows, then task by task in order: [`merge_rows`]); the columns shrink to the
/// entries kept and the values are allocated and filled row by row.
///
/// Peak host memory: `8 (n + 1)` bytes of offsets beside `4 n` of the permutation, `4 m` of
/// raw columns and 1 MiB per thread of drawn edges while drawing (`n = 2^scale` rows,
/// `m = edge_factor * n` edges drawn), then the final arrays: at most
/// `8 (n + 1) + max(4 n + 4 m, (4 + size_of::<T>()) nnz)` plus the buffers and the merging
/// tasks' bookkeeping ([`rmat_peak_bytes`] bounds it with `nnz = m`). With
/// `edge_factor >= 1` and 4-byte or larger values that is the final CSR arrays, even if the
/// allocator copies the columns when they shrink (`4 m + 4 nnz <= 8 m`).
///
/// # Errors
///
/// [`FormatError::TooLarge`] as [`rmat_size`], before anything is allocated.
pub(super) fn rmat_arrays<T: Scalar>(scale: u32, edge_factor: usize, seed: u64) -> Result<RmatArrays<T>, FormatError> {
    let (n, m) = rmat_size(scale, edge_factor)?;
    let perm = permutation(n, seed);
    // Pass 1: row i's edge count in offsets[i + 1].
    let mut offsets = written_zeros(n + 1);
    let counts = atomic_u64(&mut offsets);
    let self_loops = draw_edges(seed, scale, m, &perm, |edges| {
        touch(edges.iter().map(|&(r, _)| &counts[r as usize + 1]));
        for &(r, _) in edges {
            counts[r as usize + 1].fetch_add(1, Relaxed);
        }
    });
    let raw = exclusive_scan(&mut offsets[1..]) as usize;
    debug_assert_eq!(raw, m - self_loops);
    // Pass 2: offsets[i + 1] advances from row i's start to its end, row i + 1's start.
    let mut cols = written_zeros(raw);
    {
        let (cursors, slots) = (atomic_u64(&mut offsets), atomic_u32(&mut cols));
        draw_edges(seed, scale, m, &perm, |edges| {
            touch(edges.iter().map(|&(r, _)| &cursors[r as usize + 1]));
            let mut at = [0u64; BATCH];
            for (a, &(r, _)) in at.iter_mut().zip(edges) {
                *a = cursors[r as usize + 1].fetch_add(1, Relaxed);
            }
            let at = &at[..edges.len()];
            touch_u32(at.iter().map(|&a| &slots[a as usize]));
            for (&a, &(_, c)) in at.iter().zip(edges) {
                slots[a as usize].store(c, Relaxed);
            }
        });
    }
    drop(perm);
    debug_assert_eq!(offsets[n], raw as u64);
    let tasks = merge_rows(&mut offsets, &mut cols);
    let nnz = offsets[n] as usize;
    cols.truncate(nnz);
    cols.shrink_to_fit();
    let mut vals = vec![T::ZERO; nnz];
    let value = weights::<T>(seed);
    split_lengths(&mut vals, task_entries(&offsets, &tasks)).into_par_iter().zip(&tasks).for_each(
        |(vals, &(r0, r1))| {
            let base = offsets[r0] as usize;
            for i in r0..r1 {
                let (lo, hi) = (offsets[i] as usize, offsets[i + 1] as usize);
                value(i, &cols[lo..hi], &mut vals[lo - base..hi - base]);
            }
        },
    );
    let stats = RmatStats { vertices: n, edges: m, self_loops, duplicates: raw - nnz };
    Ok((offsets, cols, vals, stats))
}

/// The peak host bytes of [`rmat_arrays`] with values of `value_bytes` bytes, from the sizes
/// alone (nothing drawn): `8 (n + 1) + max(4 n + 4 m, (4 + value_bytes) m)` plus
/// the drawing tasks' buffers ([`draw_buffer_bytes`]) and [`TASK_BYTES`] per merging task
/// there can be, `n = 2^scale` rows, `m = edge_factor * n` edges drawn, every
/// drawn edge counted as stored (the merged repeats and dropped self loops are not known
/// before drawing). Saturating; a size [`rmat_size`] refuses gives `u64::MAX`.
pub(super) fn rmat_peak_bytes(scale: u32, edge_factor: usize, value_bytes: u64) -> u64 {
    let Ok((n, m)) = rmat_size(scale, edge_factor) else {
        return u64::MAX;
    };
    let (n, m) = (n as u64, m as u64);
    let drawing = 4 * n + 4 * m;
    let final_entries = m.saturating_mul(4 + value_bytes);
    let tasks = m / ENTRIES_PER_TASK + n / ROWS_PER_TASK as u64 + 2;
    let buffers = draw_buffer_bytes(m);
    (8 * (n + 1)).saturating_add(drawing.max(final_entries)).saturating_add(buffers + TASK_BYTES * tasks)
}

/// The most bytes the drawing tasks' buffers hold at once, `m` edges drawn: 16 bytes an edge
/// of a task, for as many tasks as the current rayon pool has threads (or tasks).
fn draw_buffer_bytes(m: u64) -> u64 {
    let tasks = m.div_ceil(EDGES_PER_TASK as u64).min(rayon::current_num_threads() as u64);
    tasks * 16 * m.min(EDGES_PER_TASK as u64)
}

/// A drawing task's edges that are not self loops, as drawn (`(source, target)`, then
/// permuted) and as grouped by block of rows.
struct DrawBuffers {
    drawn: Vec<(u32, u32)>,
    grouped: Vec<(u32, u32)>,
}

/// Draws edges `0..m` in parallel, [`EDGES_PER_TASK`] consecutive edges a task, and calls
/// `visit` with the `(row, column)` of those that are not self loops (permuted source and
/// target), at most [`BATCH`] at a time; returns the number of self loops.
///
/// A task draws all its edges, then looks up their permuted vertices (apart from the draws,
/// so that the lookups' cache misses overlap), then groups them by block of rows
/// (`2^scale / BLOCKS` rows a block), so that the offsets and entries visited one after the
/// other lie near each other in memory (fewer page walks).
fn draw_edges<F>(seed: u64, scale: u32, m: usize, perm: &[u32], visit: F) -> usize
where
    F: Fn(&[(u32, u32)]) + Sync,
{
    let shift = scale.saturating_sub(BLOCKS.ilog2());
    (0..m.div_ceil(EDGES_PER_TASK))
        .into_par_iter()
        .map_init(
            || {
                let len = EDGES_PER_TASK.min(m);
                DrawBuffers { drawn: Vec::with_capacity(len), grouped: vec![(0, 0); len] }
            },
            |buf, task| {
                let edges = task * EDGES_PER_TASK..(task * EDGES_PER_TASK + EDGES_PER_TASK).min(m);
                let mut starts = [0usize; BLOCKS + 1];
                buf.drawn.clear();
                for e in edges.clone() {
                    let (src, dst) = rmat_edge(seed, e as u64, scale);
                    // perm[src] == perm[dst] exactly when src == dst
                    if src != dst {
                        buf.drawn.push((src, dst));
                    }
                }
                for (src, dst) in &mut buf.drawn {
                    (*src, *dst) = (perm[*src as usize], perm[*dst as usize]);
                    starts[(*src >> shift) as usize + 1] += 1;
                }
                for b in 1..=BLOCKS {
                    starts[b] += starts[b - 1];
                }
                for &(row, target) in &buf.drawn {
                    let at = &mut starts[(row >> shift) as usize];
                    buf.grouped[*at] = (row, target);
                    *at += 1;
                }
                buf.grouped[..buf.drawn.len()].chunks(BATCH).for_each(&visit);
                edges.len() - buf.drawn.len()
            },
        )
        .sum()
}

/// Loads each of the integers, so that their cache misses overlap before the atomic
/// operations on them: an atomic addition (a locked instruction on x86) lets no later memory
/// access start before it completes, so a run of them that miss the cache would wait for
/// memory one at a time.
fn touch<'a>(cells: impl Iterator<Item = &'a AtomicU64>) {
    std::hint::black_box(cells.fold(0, |acc, c| acc ^ c.load(Relaxed)));
}

/// [`touch`] for `u32`.
fn touch_u32<'a>(cells: impl Iterator<Item = &'a AtomicU32>) {
    std::hint::black_box(cells.fold(0, |acc, c| acc ^ c.load(Relaxed)));
}

/// `len` zeros written in parallel: unlike `vec![0; len]`'s untouched zero pages, whose first
/// read maps the shared zero page and whose first write after it must replace that page and
/// flush every thread's TLB, these pages are the process's own before the scattered accesses
/// start.
fn written_zeros<X: Copy + Default + Send + Sync>(len: usize) -> Vec<X> {
    let mut v = Vec::with_capacity(len);
    v.par_extend((0..len).into_par_iter().map(|_| X::default()));
    v
}

/// An atomic view of integers, for the passes where threads add to and write at indices
/// they do not own.
fn atomic_u64(v: &mut [u64]) -> &[AtomicU64] {
    // A large allocation is 8-aligned on every platform we know; `u64` may be only 4-aligned
    // on some 32-bit ones, so check rather than assume.
    assert_eq!(v.as_ptr().align_offset(std::mem::align_of::<AtomicU64>()), 0, "offsets are not 8-aligned");
    // SAFETY: `AtomicU64` has the size and bit validity of `u64` and the pointer is aligned
    // for it (just checked); the exclusive borrow of `v` outlives the view, so nothing reads
    // or writes the integers other than through it.
    unsafe { &*(v as *mut [u64] as *const [AtomicU64]) }
}

/// [`atomic_u64`] for `u32`.
fn atomic_u32(v: &mut [u32]) -> &[AtomicU32] {
    assert_eq!(v.as_ptr().align_offset(std::mem::align_of::<AtomicU32>()), 0, "columns are not 4-aligned");
    // SAFETY: as in `atomic_u64`: same size and bit validity, alignment checked, and the
    // exclusive borrow outlives the view.
    unsafe { &*(v as *mut [u32] as *const [AtomicU32]) }
}

/// Replaces each count with the sum of the counts before it, in parallel; returns the total.
fn exclusive_scan(v: &mut [u64]) -> u64 {
    let sums: Vec<u64> = v.par_chunks(SCAN_CHUNK).map(|c| c.iter().sum()).collect();
    let mut starts = Vec::with_capacity(sums.len());
    let mut total = 0u64;
    for s in sums {
        starts.push(total);
        total += s;
    }
    v.par_chunks_mut(SCAN_CHUNK).zip(starts).for_each(|(c, mut run)| {
        for x in c {
            let count = *x;
            *x = run;
            run += count;
        }
    });
    total
}

/// Splits `0..nrows` into tasks of at most [`ROWS_PER_TASK`] rows and about
/// [`ENTRIES_PER_TASK`] entries: `(first row, end row)` pairs, in order. A binary search
/// per cut, so the split costs little next to the rows.
fn row_tasks(offsets: &[u64]) -> Vec<(usize, usize)> {
    let nrows = offsets.len() - 1;
    let by_entries = (1..=offsets[nrows] / ENTRIES_PER_TASK)
        .map(|k| offsets.partition_point(|&o| o < k * ENTRIES_PER_TASK).min(nrows));
    let mut cuts: Vec<usize> = (0..nrows).step_by(ROWS_PER_TASK).chain(by_entries).chain([nrows]).collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Cuts `rest` into consecutive pieces of the given lengths (their sum at most its length).
fn split_lengths<X>(mut rest: &mut [X], lengths: impl IntoIterator<Item = usize>) -> Vec<&mut [X]> {
    lengths
        .into_iter()
        .map(|len| {
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(len);
            rest = tail;
            piece
        })
        .collect()
}

/// The entries of each task's rows, `offsets` those of the rows.
fn task_entries<'a>(offsets: &'a [u64], tasks: &'a [(usize, usize)]) -> impl Iterator<Item = usize> + 'a {
    tasks.iter().map(|&(r0, r1)| (offsets[r1] - offsets[r0]) as usize)
}

/// Sorts every row's columns, drops repeats and closes the gaps they leave, updating the
/// offsets; returns the tasks it used (rows in order). The rows of each task are merged and
/// packed to the task's start in parallel; then the tasks' entries slide left, one task after
/// the other (a task's destination starts no later than its source, and after every earlier
/// task's entries, so moving in order never overwrites entries not yet moved).
fn merge_rows(offsets: &mut [u64], cols: &mut [u32]) -> Vec<(usize, usize)> {
    let tasks = row_tasks(offsets);
    let starts: Vec<u64> = tasks.iter().map(|&(r0, _)| offsets[r0]).collect();
    let kept: Vec<u64> = {
        let pieces = split_lengths(cols, task_entries(offsets, &tasks));
        let ends = split_lengths(&mut offsets[1..], tasks.iter().map(|&(r0, r1)| r1 - r0));
        ends.into_par_iter()
            .zip(pieces)
            .zip(&starts)
            .map(|((ends, cols), &start)| merge_task(start, ends, cols))
            .collect()
    };
    let mut to = 0u64;
    for (t, (&start, &count)) in tasks.iter().zip(starts.iter().zip(&kept)) {
        cols.copy_within(start as usize..(start + count) as usize, to as usize);
        for end in &mut offsets[t.0 + 1..=t.1] {
            *end -= start - to;
        }
        to += count;
    }
    tasks
}

/// Merges one task's rows, `cols` holding them from entry `start` on and `ends` their end
/// offsets: each row sorted, repeats dropped, rows packed to the front of `cols`, `ends`
/// rewritten as `start` plus the packed ends. Returns the entries kept.
fn merge_task(start: u64, ends: &mut [u64], cols: &mut [u32]) -> u64 {
    let (mut lo, mut kept) = (0, 0);
    for end in ends {
        let hi = (*end - start) as usize;
        cols[lo..hi].sort_unstable();
        let first = kept;
        // kept <= i: each column moves left or stays, after it was read.
        for i in lo..hi {
            let c = cols[i];
            if kept == first || cols[kept - 1] != c {
                cols[kept] = c;
                kept += 1;
            }
        }
        lo = hi;
        *end = start + kept as u64;
    }
    kept as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CsrMatrix;

    /// The graph by the obvious method, as the generator did before: every edge drawn into a
    /// key `row << 32 | col`, keys sorted, loops dropped, repeats merged, values per row.
    fn sorted_reference<T: Scalar>(scale: u32, edge_factor: usize, seed: u64) -> (CsrMatrix<T>, RmatStats) {
        let (n, m) = rmat_size(scale, edge_factor).unwrap();
        let perm = permutation(n, seed);
        let mut keys: Vec<u64> = (0..m as u64)
            .map(|e| {
                let (s, d) = rmat_edge(seed, e, scale);
                u64::from(perm[s as usize]) << 32 | u64::from(perm[d as usize])
            })
            .collect();
        keys.sort_unstable();
        let self_loops = keys.iter().filter(|&&k| k >> 32 == k & 0xFFFF_FFFF).count();
        keys.retain(|&k| k >> 32 != k & 0xFFFF_FFFF);
        let before = keys.len();
        keys.dedup();
        let duplicates = before - keys.len();
        let mut offsets = vec![0u64; n + 1];
        for &k in &keys {
            offsets[(k >> 32) as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let cols: Vec<u32> = keys.iter().map(|&k| k as u32).collect();
        let mut vals = vec![T::ZERO; cols.len()];
        let w = weights::<T>(seed);
        for i in 0..n {
            let (lo, hi) = (offsets[i] as usize, offsets[i + 1] as usize);
            w(i, &cols[lo..hi], &mut vals[lo..hi]);
        }
        let a = CsrMatrix::try_from_parts(n, n, offsets, cols, vals).unwrap();
        (a, RmatStats { vertices: n, edges: m, self_loops, duplicates })
    }

    /// Asserts that [`rmat_arrays`] equals [`sorted_reference`] bit for bit.
    fn assert_same<T: Scalar>(scale: u32, edge_factor: usize, seed: u64) {
        let (offsets, cols, vals, stats) = rmat_arrays::<T>(scale, edge_factor, seed).unwrap();
        let (a, expected) = sorted_reference::<T>(scale, edge_factor, seed);
        let case = format!("scale {scale}, edge factor {edge_factor}, seed {seed}, {}", T::NAME);
        assert_eq!(stats, expected, "{case}");
        assert_eq!(stats.nnz(), cols.len(), "{case}");
        assert_eq!(offsets.len(), (1 << scale) + 1, "{case}");
        assert_eq!(offsets, a.row_offsets(), "{case}");
        assert_eq!(cols, a.col_indices(), "{case}");
        // Bit for bit (widening to f64 is exact).
        let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<u64>>();
        assert_eq!(bits(&vals), bits(a.values()), "{case}");
    }

    /// The arrays equal the sort-based generator's, bit for bit, with the same statistics:
    /// small scales (rows in one block of the drawing tasks' grouping or many), several
    /// drawing tasks, no edges, both scalars.
    #[test]
    fn matches_the_sorting_generator() {
        for scale in 0..=12 {
            for edge_factor in [0, 1, 4, 16] {
                for seed in [1, 2, 7] {
                    assert_same::<f32>(scale, edge_factor, seed);
                }
            }
        }
        assert_same::<f64>(10, 8, 3);
        assert_same::<f32>(14, 16, 5); // 4 drawing tasks
    }

    /// The offsets start at 0, never decrease and end at the entry count; each row's
    /// columns are increasing and in range; something was merged at this size.
    #[test]
    fn arrays_are_valid_csr() {
        let (offsets, cols, vals, stats) = rmat_arrays::<f64>(14, 16, 5).unwrap();
        assert_eq!((offsets.len(), offsets[0], offsets[1 << 14]), ((1 << 14) + 1, 0, cols.len() as u64));
        assert_eq!(vals.len(), cols.len());
        assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
        for i in 0..1 << 14 {
            let row = &cols[offsets[i] as usize..offsets[i + 1] as usize];
            assert!(row.windows(2).all(|w| w[0] < w[1]), "row {i}: {row:?}");
            assert!(row.iter().all(|&c| c < 1 << 14 && c as usize != i), "row {i}: {row:?}");
        }
        assert!(vals.iter().all(|&v| (0.5..1.5).contains(&v)));
        assert_eq!(stats.edges, 16 << 14);
        assert!(stats.self_loops > 0 && stats.duplicates > 0, "{stats:?}");
        assert_eq!(stats.nnz(), cols.len());
    }

    /// One thread or three: the same arrays (the draws and the per-row sort make the
    /// scatter's order irrelevant).
    #[test]
    fn independent_of_thread_count() {
        let build = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| rmat_arrays::<f32>(13, 16, 9).unwrap())
        };
        let (one, three) = (build(1), build(3));
        assert_eq!((&one.0, &one.1, one.3), (&three.0, &three.1, three.3));
        assert!(one.2.iter().map(|v| v.to_bits()).eq(three.2.iter().map(|v| v.to_bits())));
    }

    /// Several merging tasks, rows longer than a task, and the slide of tasks over gaps.
    #[test]
    fn merges_across_tasks() {
        // Rows: 0 holds [5, 3, 5] (one repeat), 1 is empty, 2 holds 3 * ENTRIES_PER_TASK
        // copies of 1 and 2, 3 holds [9, 9]; rows past 3 are empty.
        let long = 3 * ENTRIES_PER_TASK as usize;
        let mut cols = vec![5, 3, 5];
        cols.extend((0..long).map(|k| 1 + (k % 2) as u32));
        cols.extend([9, 9]);
        let nrows = 3 * ROWS_PER_TASK;
        let mut offsets = vec![0, 3, 3, 3 + long as u64];
        offsets.resize(nrows + 1, cols.len() as u64);
        let tasks = merge_rows(&mut offsets, &mut cols);
        assert!(tasks.len() >= 4, "{tasks:?}");
        assert_eq!(&offsets[..5], [0, 2, 2, 4, 5]);
        assert!(offsets[5..].iter().all(|&o| o == 5));
        assert_eq!(&cols[..5], [3, 5, 1, 2, 9]);
    }

    #[test]
    fn task_split() {
        // 10 rows, 0 entries: one task of all rows.
        assert_eq!(row_tasks(&[0; 11]), [(0, 10)]);
        let e = ENTRIES_PER_TASK;
        // A row of 2.5 tasks' entries between two short rows.
        assert_eq!(row_tasks(&[0, 1, 1 + 5 * e / 2, 2 + 5 * e / 2]), [(0, 2), (2, 3)]);
        assert_eq!(row_tasks(&vec![0; ROWS_PER_TASK + 2]), [(0, ROWS_PER_TASK), (ROWS_PER_TASK, ROWS_PER_TASK + 1)]);
    }

    #[test]
    fn scan() {
        let mut v: Vec<u64> = (0..3 * SCAN_CHUNK as u64 + 5).collect();
        let total = exclusive_scan(&mut v);
        let n = v.len() as u64;
        assert_eq!(total, n * (n - 1) / 2);
        assert!(v.iter().enumerate().all(|(i, &s)| s == (i as u64) * (i as u64).saturating_sub(1) / 2));
    }

    #[test]
    fn peak_bytes_formula() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        pool.install(|| {
            // rmat:10:16 in f32: 1024 rows, 16384 edges: the final arrays, one task's
            // buffers (16 bytes an edge) and 2 merging tasks.
            assert_eq!(rmat_peak_bytes(10, 16, 4), 8 * 1025 + 8 * 16384 + 16 * 16384 + 64 * 2);
            assert_eq!(rmat_peak_bytes(10, 16, 8), 8 * 1025 + 12 * 16384 + 16 * 16384 + 64 * 2);
            // rmat:24:64 in f32: 2^24 rows, 2^30 edges: 4 threads' buffers of 2^16 edges,
            // 2^14 + 2^12 + 2 merging tasks; about 8.73 GB.
            let (n, m) = (1u64 << 24, 1u64 << 30);
            let expected = 8 * (n + 1) + 8 * m + 4 * 16 * 65536 + 64 * (16384 + 4096 + 2);
            assert_eq!((rmat_peak_bytes(24, 64, 4), expected), (expected, 8_729_657_480));
            // No edges: the permutation beside the offsets while drawing.
            assert_eq!(rmat_peak_bytes(10, 0, 4), 8 * 1025 + 4 * 1024 + 64 * 2);
            // Refused sizes.
            assert_eq!(rmat_peak_bytes(40, 16, 4), u64::MAX);
        });
    }
}
