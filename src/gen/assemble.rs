//! What every generator shares: the seeded hashes and random streams, and the parallel
//! assembly of CSR arrays with peak memory near the final matrix's size.
//!
//! The two-pass builders ([`build_rows`], [`build_pattern`]) call a row function once to
//! count each row's entries and once more to write them into arrays allocated at their
//! final size, so no per-row vectors are kept: the peak is the final matrix plus one
//! scratch row per thread. Rows are split into tasks by count and by entries, and every
//! row depends only on its index, so the result does not depend on the thread count.

use crate::format::check_index_limit;
use crate::{CsrMatrix, FormatError, Scalar};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rayon::prelude::*;

/// The SplitMix64 increment (the golden ratio in 64-bit fixed point).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output function: a bijective, well-mixed hash of one word.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// SplitMix64 of one word: a fast, well-mixed hash used to derive seeds.
pub(super) fn splitmix(z: u64) -> u64 {
    mix(z.wrapping_add(GOLDEN))
}

/// A hash of a seed and two words (ordered: `hash3(s, a, b) != hash3(s, b, a)` in general).
pub(super) fn hash3(seed: u64, a: u64, b: u64) -> u64 {
    splitmix(seed ^ splitmix(a ^ splitmix(b)))
}

/// The top 53 bits of a hash as a float uniform in `[0, 1)` (exact, no rounding).
pub(super) fn unit(h: u64) -> f64 {
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The per-row ChaCha generator of the original random generators (`uniform`, `powerlaw`,
/// `longrows`): kept so that their matrices stay the same bit for bit.
pub(super) fn row_rng(seed: u64, row: usize) -> StdRng {
    StdRng::seed_from_u64(splitmix(seed ^ splitmix(row as u64)))
}

/// A SplitMix64 stream: the generator of the newer generators, fully specified here (unlike
/// `rand`'s generators, whose algorithms may change between versions), so a matrix stays the
/// same across versions of the dependencies too.
pub(super) struct Stream(u64);

impl Stream {
    /// The stream number `index` of a seed (one per row, per edge, ...).
    pub(super) fn new(seed: u64, index: u64) -> Self {
        Stream(hash3(seed, index, 0x5EED))
    }
    /// The next 64 random bits.
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix(self.0)
    }
    /// A float uniform in `[0, 1)`.
    pub(super) fn unit(&mut self) -> f64 {
        unit(self.next_u64())
    }
    /// An integer in `0..n` (multiply-shift: the bias is below `n / 2^64`).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Rows per parallel task, at most.
const ROWS_PER_TASK: usize = 1024;
/// Entries per parallel task, about (a longer row is a task of its own).
const ENTRIES_PER_TASK: usize = 1 << 15;

/// Splits `0..nrows` into tasks of at most [`ROWS_PER_TASK`] rows and about
/// [`ENTRIES_PER_TASK`] entries: `(first row, end row)` pairs.
fn row_tasks(offsets: &[u64]) -> Vec<(usize, usize)> {
    let nrows = offsets.len() - 1;
    let mut tasks = Vec::with_capacity(nrows / ROWS_PER_TASK + 1);
    let mut start = 0;
    for r in 1..=nrows {
        if r == nrows || r - start >= ROWS_PER_TASK || (offsets[r] - offsets[start]) as usize >= ENTRIES_PER_TASK {
            tasks.push((start, r));
            start = r;
        }
    }
    tasks
}

/// Cuts an array of `offsets[nrows]` entries into the disjoint pieces of the tasks.
fn split_by_tasks<'a, X>(mut rest: &'a mut [X], offsets: &[u64], tasks: &[(usize, usize)]) -> Vec<&'a mut [X]> {
    tasks
        .iter()
        .map(|&(r0, r1)| {
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut((offsets[r1] - offsets[r0]) as usize);
            rest = tail;
            piece
        })
        .collect()
}

/// Row offsets from the row lengths a counting function gives, in parallel.
///
/// # Errors
///
/// [`FormatError::TooLarge`] when there are more than [`INDEX_LIMIT`](crate::INDEX_LIMIT)
/// rows, before anything of that size is allocated.
fn count_rows<F>(nrows: usize, count: F) -> Result<Vec<u64>, FormatError>
where
    F: Fn(usize, &mut Vec<u32>) + Sync,
{
    check_index_limit("rows", nrows)?;
    let mut offsets = vec![0u64; nrows + 1];
    offsets[1..].par_chunks_mut(ROWS_PER_TASK).enumerate().for_each_init(Vec::new, |cols, (task, lens)| {
        for (k, len) in lens.iter_mut().enumerate() {
            cols.clear();
            count(task * ROWS_PER_TASK + k, cols);
            *len = cols.len() as u64;
        }
    });
    prefix_sum(&mut offsets[1..]);
    Ok(offsets)
}

/// Builds a matrix row by row in two passes: `row(i, cols, None)` pushes row `i`'s sorted,
/// distinct columns (the counting pass); `row(i, cols, Some(vals))` pushes the same columns
/// and their values (the writing pass). Peak memory: the final matrix plus one row per
/// thread.
///
/// # Errors
///
/// [`FormatError::TooLarge`] past [`INDEX_LIMIT`](crate::INDEX_LIMIT) rows or columns,
/// before the entry arrays are allocated; an invariant the row function broke (a bug) as its `FormatError`.
///
/// # Panics
///
/// If the row function gives a row a different length in the two passes (a bug).
pub(super) fn build_rows<T: Scalar, F>(nrows: usize, ncols: usize, row: F) -> Result<CsrMatrix<T>, FormatError>
where
    F: Fn(usize, &mut Vec<u32>, Option<&mut Vec<T>>) + Sync,
{
    check_index_limit("columns", ncols)?;
    let offsets = count_rows(nrows, |i, cols| row(i, cols, None))?;
    let nnz = offsets[nrows] as usize;
    let (mut cols, mut vals) = (vec![0u32; nnz], vec![T::ZERO; nnz]);
    let tasks = row_tasks(&offsets);
    let (col_pieces, val_pieces) =
        (split_by_tasks(&mut cols, &offsets, &tasks), split_by_tasks(&mut vals, &offsets, &tasks));
    tasks.par_iter().zip(col_pieces).zip(val_pieces).for_each_init(
        || (Vec::new(), Vec::new()),
        |(c, v), ((&(r0, r1), cols), vals)| {
            for i in r0..r1 {
                c.clear();
                v.clear();
                row(i, c, Some(v));
                let at = (offsets[i] - offsets[r0]) as usize..(offsets[i + 1] - offsets[r0]) as usize;
                assert!(c.len() == at.len() && v.len() == at.len(), "generated row {i} changed length between passes");
                cols[at.clone()].copy_from_slice(c);
                vals[at].copy_from_slice(v);
            }
        },
    );
    CsrMatrix::try_from_parts(nrows, ncols, offsets, cols, vals)
}

/// The pattern of a matrix in two passes: `row(i, cols)` pushes row `i`'s sorted, distinct
/// columns. Returns the row offsets and the column indices.
///
/// # Errors
///
/// [`FormatError::TooLarge`] past [`INDEX_LIMIT`](crate::INDEX_LIMIT) rows, before the
/// column array is allocated.
///
/// # Panics
///
/// If the row function gives a row a different length in the two passes (a bug).
pub(super) fn build_pattern<F>(nrows: usize, row: F) -> Result<(Vec<u64>, Vec<u32>), FormatError>
where
    F: Fn(usize, &mut Vec<u32>) + Sync,
{
    let offsets = count_rows(nrows, &row)?;
    let mut cols = vec![0u32; offsets[nrows] as usize];
    let tasks = row_tasks(&offsets);
    tasks.par_iter().zip(split_by_tasks(&mut cols, &offsets, &tasks)).for_each_init(
        Vec::new,
        |c, (&(r0, r1), cols)| {
            for i in r0..r1 {
                c.clear();
                row(i, c);
                let at = (offsets[i] - offsets[r0]) as usize..(offsets[i + 1] - offsets[r0]) as usize;
                assert!(c.len() == at.len(), "generated row {i} changed length between passes");
                cols[at].copy_from_slice(c);
            }
        },
    );
    Ok((offsets, cols))
}

/// The values of a pattern, row by row in parallel: `value(i, cols, vals)` fills row `i`'s
/// values given its columns.
pub(super) fn fill_values<T: Scalar, F>(offsets: &[u64], cols: &[u32], value: F) -> Vec<T>
where
    F: Fn(usize, &[u32], &mut [T]) + Sync,
{
    let mut vals = vec![T::ZERO; cols.len()];
    let tasks = row_tasks(offsets);
    tasks.par_iter().zip(split_by_tasks(&mut vals, offsets, &tasks)).for_each(|(&(r0, r1), vals)| {
        for i in r0..r1 {
            let (lo, hi) = (offsets[i] as usize, offsets[i + 1] as usize);
            let base = offsets[r0] as usize;
            value(i, &cols[lo..hi], &mut vals[lo - base..hi - base]);
        }
    });
    vals
}

/// The CSR pattern of sorted, distinct keys `row << 32 | col`: row offsets (a binary search
/// per row) and column indices, in parallel.
pub(super) fn pattern_from_keys(nrows: usize, keys: &[u64]) -> (Vec<u64>, Vec<u32>) {
    let offsets = (0..=nrows).into_par_iter().map(|i| keys.partition_point(|&k| k >> 32 < i as u64) as u64).collect();
    let cols = keys.par_iter().map(|&k| k as u32).collect();
    (offsets, cols)
}

/// Sorts columns pushed in any order and removes repeats.
pub(super) fn sort_dedup(cols: &mut Vec<u32>) {
    cols.sort_unstable();
    cols.dedup();
}

/// Bytes of a CSR matrix: `8 (nrows + 1)` of offsets and `4 + value_bytes` per entry
/// (saturating).
pub(super) fn csr_bytes(nrows: u64, nnz: u64, value_bytes: u64) -> u64 {
    nrows.saturating_add(1).saturating_mul(8).saturating_add(nnz.saturating_mul(4 + value_bytes))
}

/// In-place inclusive prefix sum, in parallel for long arrays (two passes over blocks).
pub(crate) fn prefix_sum(v: &mut [u64]) {
    const BLOCK: usize = 1 << 16;
    if v.len() <= BLOCK {
        let mut sum = 0u64;
        for o in v {
            sum += *o;
            *o = sum;
        }
        return;
    }
    let totals: Vec<u64> = v
        .par_chunks_mut(BLOCK)
        .map(|c| {
            let mut sum = 0u64;
            for o in c {
                sum += *o;
                *o = sum;
            }
            sum
        })
        .collect();
    let mut carry = Vec::with_capacity(totals.len());
    let mut sum = 0u64;
    for t in totals {
        carry.push(sum);
        sum += t;
    }
    v.par_chunks_mut(BLOCK).zip(carry).for_each(|(c, add)| c.iter_mut().for_each(|o| *o += add));
}
