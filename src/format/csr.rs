//! Compressed sparse row storage.

use super::{check_index_limit, FormatError, RowStats};
use crate::Scalar;

/// A sparse matrix in compressed sparse row (CSR) form, validated on construction.
///
/// # Format
///
/// For an `nrows x ncols` matrix with `nnz` stored entries:
/// - `row_offsets` has `nrows + 1` entries (`u64`, so the entry count has no 32-bit limit);
///   row `i` occupies positions
///   `row_offsets[i]..row_offsets[i + 1]` of the two arrays below;
/// - `col_indices[k]` is the column of entry `k`, `values[k]` its value.
///
/// # Invariants
///
/// - `row_offsets.len() == nrows + 1`, `row_offsets[0] == 0`, offsets never decrease and
///   `row_offsets[nrows] == nnz`;
/// - `col_indices.len() == values.len() == nnz`;
/// - every column index is `< ncols`, and within a row columns strictly increase (sorted, no
///   duplicates);
/// - `nrows` and `ncols` are at most [`INDEX_LIMIT`](super::INDEX_LIMIT), so every row and
///   column index fits the 32-bit GPU index type. The entry count is not limited: on the
///   GPU, the offsets stay 32-bit up to `INDEX_LIMIT` entries and become 64-bit past it.
///
/// Empty rows, a matrix with no entries and a 0 x 0 matrix are all valid. Explicitly stored
/// zeros are kept.
///
/// # Example
///
/// ```
/// use spgpu::CsrMatrix;
/// // [1 0 2]
/// // [0 0 0]
/// // [0 3 0]
/// let a = CsrMatrix::try_from_parts(3, 3, vec![0, 2, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0])?;
/// assert_eq!(a.nnz(), 3);
/// assert_eq!(a.row(0), (&[0u32, 2][..], &[1.0, 2.0][..]));
/// assert!(a.row(1).0.is_empty());
/// # Ok::<(), spgpu::FormatError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CsrMatrix<T> {
    nrows: usize,
    ncols: usize,
    row_offsets: Vec<u64>,
    col_indices: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> CsrMatrix<T> {
    /// Builds a matrix from its three arrays, checking every invariant.
    ///
    /// # Errors
    ///
    /// A [`FormatError`] naming the first invariant found broken, checked in this order:
    /// `TooLarge` (a dimension past [`INDEX_LIMIT`](super::INDEX_LIMIT)), `OffsetsLength`, `OffsetsStart`,
    /// `LengthMismatch` (indices and values), `NonMonotonicOffsets`, `OffsetsEnd`, then
    /// row by row `ColumnOutOfBounds`, `DuplicateEntry` or `UnsortedColumns`.
    pub fn try_from_parts(
        nrows: usize,
        ncols: usize,
        row_offsets: Vec<u64>,
        col_indices: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        super::validate_csr(nrows, ncols, &row_offsets, &col_indices, values.len())?;
        Ok(CsrMatrix { nrows, ncols, row_offsets, col_indices, values })
    }

    /// Like [`try_from_parts`](Self::try_from_parts) for borrowed offsets and indices of
    /// another type (`usize`, as sprs' `CsMat` and nalgebra-sparse store them, or `u32`):
    /// validates them as they are, then converts them to `u64` offsets and `u32` columns
    /// (copies); the values move.
    #[cfg(any(feature = "sprs", feature = "nalgebra"))]
    pub(crate) fn try_from_index_parts<O: super::IndexValue, I: super::IndexValue>(
        nrows: usize,
        ncols: usize,
        row_offsets: &[O],
        col_indices: &[I],
        values: Vec<T>,
    ) -> Result<Self, FormatError> {
        super::validate_csr(nrows, ncols, row_offsets, col_indices, values.len())?;
        let (row_offsets, col_indices) = (super::widen(row_offsets), super::narrow(col_indices));
        Ok(CsrMatrix { nrows, ncols, row_offsets, col_indices, values })
    }

    /// Builds a matrix from its arrays without the O(nnz) checks.
    ///
    /// The O(1) conditions (array lengths, first and last offset, size limits) are still
    /// asserted.
    ///
    /// # Safety
    ///
    /// The caller guarantees every invariant listed on [`CsrMatrix`]: non-decreasing
    /// offsets, column indices below `ncols`, sorted and unique within each row. GPU kernels
    /// index `x` with the column indices without bounds checks, so a violation is undefined
    /// behaviour on the device.
    ///
    /// # Panics
    ///
    /// If an O(1) condition fails.
    #[track_caller]
    pub unsafe fn from_parts_unchecked(
        nrows: usize,
        ncols: usize,
        row_offsets: Vec<u64>,
        col_indices: Vec<u32>,
        values: Vec<T>,
    ) -> Self {
        assert!(nrows <= super::INDEX_LIMIT && ncols <= super::INDEX_LIMIT, "dimensions exceed INDEX_LIMIT");
        assert_eq!(row_offsets.len(), nrows + 1, "row offsets must have nrows + 1 entries");
        assert_eq!(col_indices.len(), values.len(), "indices and values must have the same length");
        assert_eq!(row_offsets[0], 0, "the first row offset must be 0");
        assert_eq!(row_offsets[nrows] as usize, col_indices.len(), "the last row offset must equal nnz");
        CsrMatrix { nrows, ncols, row_offsets, col_indices, values }
    }

    /// An `nrows x ncols` matrix with no stored entries.
    ///
    /// # Errors
    ///
    /// [`FormatError::TooLarge`] if a dimension exceeds [`INDEX_LIMIT`](super::INDEX_LIMIT).
    pub fn zeros(nrows: usize, ncols: usize) -> Result<Self, FormatError> {
        // Check before allocating the offsets: a huge `nrows` is an error, not an abort.
        check_index_limit("rows", nrows)?;
        check_index_limit("columns", ncols)?;
        Self::try_from_parts(nrows, ncols, vec![0; nrows + 1], Vec::new(), Vec::new())
    }

    /// The `n x n` identity matrix.
    ///
    /// # Errors
    ///
    /// [`FormatError::TooLarge`] if `n` exceeds [`INDEX_LIMIT`](super::INDEX_LIMIT).
    pub fn identity(n: usize) -> Result<Self, FormatError> {
        check_index_limit("rows", n)?;
        let offsets = (0..=n as u64).collect();
        let cols = (0..n as u32).collect();
        Self::try_from_parts(n, n, offsets, cols, vec![T::ONE; n])
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of stored entries (explicit zeros included).
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// The `nrows + 1` row offsets.
    pub fn row_offsets(&self) -> &[u64] {
        &self.row_offsets
    }
    /// The column index of every stored entry, row by row.
    pub fn col_indices(&self) -> &[u32] {
        &self.col_indices
    }
    /// The value of every stored entry, row by row.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// The values, mutable; the sparsity pattern cannot change.
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
    /// Column indices and values of row `i`.
    ///
    /// # Panics
    ///
    /// If `i >= nrows`.
    pub fn row(&self, i: usize) -> (&[u32], &[T]) {
        let r = self.row_offsets[i] as usize..self.row_offsets[i + 1] as usize;
        (&self.col_indices[r.clone()], &self.values[r])
    }
    /// Number of stored entries of row `i`.
    ///
    /// # Panics
    ///
    /// If `i >= nrows`.
    pub fn row_len(&self, i: usize) -> usize {
        (self.row_offsets[i + 1] - self.row_offsets[i]) as usize
    }
    /// The stored value at `(i, j)`, or `None` when that position is not stored (or out of
    /// range). Binary search within the row.
    pub fn get(&self, i: usize, j: usize) -> Option<T> {
        if i >= self.nrows {
            return None;
        }
        let (cols, vals) = self.row(i);
        let j = u32::try_from(j).ok()?;
        cols.binary_search(&j).ok().map(|k| vals[k])
    }
    /// Row length statistics (min, mean, max, empty rows, histogram).
    pub fn row_stats(&self) -> RowStats {
        RowStats::from_row_offsets(&self.row_offsets, self.ncols)
    }
    /// Takes the matrix apart: `(nrows, ncols, row_offsets, col_indices, values)`.
    pub fn into_parts(self) -> (usize, usize, Vec<u64>, Vec<u32>, Vec<T>) {
        (self.nrows, self.ncols, self.row_offsets, self.col_indices, self.values)
    }
    /// The main diagonal as a dense vector of length `min(nrows, ncols)`; positions not
    /// stored read as zero. The rows are searched in parallel.
    pub fn diagonal(&self) -> Vec<T> {
        use rayon::prelude::*;
        (0..self.nrows.min(self.ncols))
            .into_par_iter()
            .with_min_len(1 << 14)
            .map(|i| self.get(i, i).unwrap_or(T::ZERO))
            .collect()
    }
    /// The transpose, in CSR form: a counting sort over columns, O(nnz + ncols), on all
    /// cores for matrices of more than 65 536 entries.
    ///
    /// Each row of the transpose lists its entries in increasing row order of `self`, so its
    /// columns come out sorted, and the result is the same whatever the number of threads.
    /// The parallel sort cuts the rows into tasks of about equal entries, counts each task's
    /// entries per column, and gives each task its own run of every column, into which it
    /// writes its entries in row order; the counts take 8 bytes per column and task, at most
    /// 4 bytes per entry.
    ///
    /// ```
    /// use spgpu::CsrMatrix;
    /// // [1 0 2]      [1 0]
    /// // [0 3 0]  ->  [0 3]
    /// //              [2 0]
    /// let a = CsrMatrix::try_from_parts(2, 3, vec![0, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0])?;
    /// let t = a.transpose();
    /// assert_eq!((t.nrows(), t.ncols()), (3, 2));
    /// assert_eq!(t.to_dense(), vec![1.0, 0.0, 0.0, 3.0, 2.0, 0.0]);
    /// # Ok::<(), spgpu::FormatError>(())
    /// ```
    pub fn transpose(&self) -> Self {
        self.transpose_in(transpose_tasks(self.nnz(), self.ncols, rayon::current_num_threads()))
    }

    /// [`transpose`](Self::transpose) with the rows cut into `tasks` tasks (1: serial).
    fn transpose_in(&self, tasks: usize) -> Self {
        use rayon::prelude::*;
        let (nrows, ncols, nnz) = (self.nrows, self.ncols, self.nnz());
        let tasks = tasks.max(1);
        // task k transposes rows bounds[k]..bounds[k + 1], about nnz / tasks entries
        let mut bounds: Vec<usize> = (0..=tasks)
            .map(|k| {
                let goal = (nnz as u128 * k as u128 / tasks as u128) as u64;
                self.row_offsets.partition_point(|&o| o < goal).min(nrows)
            })
            .collect();
        bounds[tasks] = nrows;
        let entries = |k: usize| self.row_offsets[bounds[k]] as usize..self.row_offsets[bounds[k + 1]] as usize;
        // each task's count of entries per column
        let mut cursors: Vec<Vec<u64>> = (0..tasks)
            .into_par_iter()
            .map(|k| {
                let mut c = vec![0u64; ncols];
                for &j in &self.col_indices[entries(k)] {
                    c[j as usize] += 1;
                }
                c
            })
            .collect();
        // the transpose's row offsets: the columns' totals, scanned
        let mut offsets = vec![0u64; ncols + 1];
        offsets[1..].par_iter_mut().enumerate().with_min_len(1 << 12).for_each(|(j, o)| {
            *o = cursors.iter().map(|c| c[j]).sum();
        });
        for j in 0..ncols {
            offsets[j + 1] += offsets[j];
        }
        // task k's run of column j starts after the column's start and the earlier tasks' entries
        let mut next = offsets[..ncols].to_vec();
        for c in &mut cursors {
            c.par_iter_mut().zip(next.par_iter_mut()).with_min_len(1 << 12).for_each(|(c, n)| {
                let count = *c;
                *c = *n;
                *n += count;
            });
        }
        let mut cols = vec![0u32; nnz];
        let mut vals = vec![T::ZERO; nnz];
        let out = Scatter { cols: cols.as_mut_ptr(), vals: vals.as_mut_ptr() };
        let out = &out;
        cursors.into_par_iter().enumerate().for_each(|(k, mut next)| {
            for i in bounds[k]..bounds[k + 1] {
                let (rc, rv) = self.row(i);
                for (&c, &v) in rc.iter().zip(rv) {
                    let slot = next[c as usize] as usize;
                    next[c as usize] += 1;
                    // SAFETY: `slot` lies in task k's run of column c, which holds exactly
                    // the task's entries of that column (counted above), below
                    // offsets[c + 1] <= nnz, the length of both arrays; the runs of all
                    // tasks and columns are disjoint, so every slot is written once, by one
                    // thread, and the arrays are not read until every task is done.
                    unsafe {
                        out.cols.add(slot).write(i as u32);
                        out.vals.add(slot).write(v);
                    }
                }
            }
        });
        // Rows are visited in increasing order within each task, and the tasks' runs follow
        // one another in row order, so each transposed row comes out sorted.
        CsrMatrix { nrows: ncols, ncols: nrows, row_offsets: offsets, col_indices: cols, values: vals }
    }
    /// Whether the sparsity pattern is symmetric (square, and `(j, i)` is stored whenever
    /// `(i, j)` is).
    pub fn is_structurally_symmetric(&self) -> bool {
        self.nrows == self.ncols && {
            let t = self.transpose();
            t.row_offsets == self.row_offsets && t.col_indices == self.col_indices
        }
    }
    /// Whether the matrix equals its transpose, values included (exact comparison).
    pub fn is_symmetric(&self) -> bool {
        self.nrows == self.ncols && self.transpose() == *self
    }
    /// The matrix as a dense row-major array (`nrows * ncols` entries). Meant for tests and
    /// small matrices.
    pub fn to_dense(&self) -> Vec<T> {
        let mut d = vec![T::ZERO; self.nrows * self.ncols];
        for i in 0..self.nrows {
            let (cols, vals) = self.row(i);
            for (&c, &v) in cols.iter().zip(vals) {
                d[i * self.ncols + c as usize] = v;
            }
        }
        d
    }
    /// Converts every value to another element type (rounding to nearest for f64 -> f32).
    pub fn cast<U: Scalar>(&self) -> CsrMatrix<U> {
        CsrMatrix {
            nrows: self.nrows,
            ncols: self.ncols,
            row_offsets: self.row_offsets.clone(),
            col_indices: self.col_indices.clone(),
            values: self.values.iter().map(|v| U::from_f64(v.to_f64())).collect(),
        }
    }
}

/// Matrices with more stored entries than this are transposed on all cores (as the reference
/// SpMV's `PARALLEL_THRESHOLD`: below it, the tasks' setup costs more than they save).
const PARALLEL_TRANSPOSE: usize = 1 << 16;

/// How many tasks [`CsrMatrix::transpose`] cuts a matrix of `nnz` entries and `ncols`
/// columns into on `threads` threads: one below [`PARALLEL_TRANSPOSE`] entries; else one per
/// thread, but no more than keeps the per-task column counts (8 bytes per column and task)
/// within 4 bytes per entry.
fn transpose_tasks(nnz: usize, ncols: usize, threads: usize) -> usize {
    if nnz <= PARALLEL_TRANSPOSE {
        1
    } else {
        threads.min(nnz / (2 * ncols.max(1))).max(1)
    }
}

/// Where the tasks of [`CsrMatrix::transpose`] write the transpose's columns and values.
struct Scatter<T> {
    cols: *mut u32,
    vals: *mut T,
}

// SAFETY: the pointers are written through by the transpose's tasks only, each slot by one
// task (see the SAFETY comment there); the values are `Send` (`Scalar`).
unsafe impl<T: Send> Sync for Scatter<T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A random matrix with empty rows and empty columns (every third column is never drawn).
    fn random(nrows: usize, ncols: usize, max_len: usize, seed: u64) -> CsrMatrix<f64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let drawn: Vec<usize> = (0..ncols).filter(|j| j % 3 != 1).collect();
        let mut offsets = vec![0u64];
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        for i in 0..nrows {
            let len = if i % 5 == 2 { 0 } else { rng.random_range(0..=max_len.min(drawn.len())) };
            let mut c: Vec<u32> =
                rand::seq::index::sample(&mut rng, drawn.len(), len).into_iter().map(|k| drawn[k] as u32).collect();
            c.sort_unstable();
            for j in c {
                cols.push(j);
                vals.push(rng.random_range(-1.0..1.0));
            }
            offsets.push(cols.len() as u64);
        }
        CsrMatrix::try_from_parts(nrows, ncols, offsets, cols, vals).unwrap()
    }

    #[test]
    fn every_task_count_gives_the_same_transpose() {
        for (nrows, ncols, len, seed) in [(0, 0, 0, 1), (0, 7, 0, 2), (9, 0, 0, 3), (57, 31, 9, 4), (31, 203, 40, 5)] {
            let a = random(nrows, ncols, len, seed);
            let want = a.transpose_in(1);
            // validated: offsets, sorted columns, bounds
            let (r, c, o, ci, v) = want.clone().into_parts();
            let checked = CsrMatrix::try_from_parts(r, c, o, ci, v).expect("the transpose is valid CSR");
            assert_eq!((checked.nrows(), checked.ncols()), (ncols, nrows));
            for i in 0..nrows {
                for j in 0..ncols {
                    assert_eq!(a.get(i, j), want.get(j, i), "({i}, {j}) of a {nrows} x {ncols} matrix");
                }
            }
            for tasks in [2, 3, 7, 64] {
                assert_eq!(a.transpose_in(tasks), want, "{tasks} tasks, {nrows} x {ncols}");
            }
            assert_eq!(want.transpose_in(5), a);
        }
    }

    #[test]
    fn tasks_keep_their_counts_within_four_bytes_per_entry() {
        assert_eq!(transpose_tasks(1000, 10, 16), 1);
        assert_eq!(transpose_tasks(PARALLEL_TRANSPOSE + 1, 0, 16), 16);
        assert_eq!(transpose_tasks(1 << 20, 1 << 20, 16), 1);
        assert_eq!(transpose_tasks(1 << 20, 1 << 16, 16), 8);
        assert_eq!(transpose_tasks(1 << 24, 1 << 16, 16), 16);
    }
}
