//! Row-length statistics, read by the kernel heuristic and `spgpu info`.

use std::fmt;

/// Statistics of the row lengths (stored entries per row) of a sparse matrix.
///
/// `histogram[0]` counts empty rows; `histogram[k]` for `k >= 1` counts rows whose length
/// lies in `[2^(k-1), 2^k)`: 1, 2-3, 4-7, 8-15, ...
///
/// # Example
///
/// ```
/// use spgpu::CsrMatrix;
/// let a = CsrMatrix::try_from_parts(3, 4, vec![0, 0, 1, 4], vec![2, 0, 1, 3], vec![1.0; 4])?;
/// let s = a.row_stats();
/// assert_eq!((s.min, s.max, s.empty_rows), (0, 3, 1));
/// assert!((s.mean - 4.0 / 3.0).abs() < 1e-12);
/// assert_eq!(s.histogram, vec![1, 1, 1]); // one empty, one of length 1, one of 2-3
/// # Ok::<(), spgpu::FormatError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RowStats {
    /// Number of rows.
    pub nrows: usize,
    /// Number of columns.
    pub ncols: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Shortest row (0 for a matrix with no rows).
    pub min: usize,
    /// Longest row (0 for a matrix with no rows).
    pub max: usize,
    /// Mean row length, `nnz / nrows` (0 for a matrix with no rows).
    pub mean: f64,
    /// Standard deviation of the row lengths.
    pub std_dev: f64,
    /// Rows with no entries.
    pub empty_rows: usize,
    /// Row counts by length class, powers of two (see the type docs).
    pub histogram: Vec<usize>,
}

impl RowStats {
    /// Computes the statistics from CSR row offsets (`nrows + 1` non-decreasing entries, as
    /// a validated [`CsrMatrix`](crate::CsrMatrix) holds; a decreasing pair counts as an
    /// empty row). An empty slice means a matrix with no rows.
    pub fn from_row_offsets(row_offsets: &[u64], ncols: usize) -> Self {
        Self::from_lengths(row_offsets.windows(2).map(|w| w[1].saturating_sub(w[0]) as usize), ncols)
    }

    /// Computes the statistics from an iterator over row lengths.
    pub fn from_lengths(lengths: impl IntoIterator<Item = usize>, ncols: usize) -> Self {
        let (mut nrows, mut nnz, mut min, mut max, mut empty) = (0usize, 0usize, usize::MAX, 0usize, 0usize);
        // Exact integer sums, so the variance has no cancellation error (lengths and counts
        // are at most 2^31 in a valid matrix; u128 holds n * sum of squares up to 2^124).
        let (mut sum, mut sum_sq) = (0u128, 0u128);
        let mut histogram = Vec::new();
        for len in lengths {
            nrows += 1;
            nnz = nnz.saturating_add(len);
            min = min.min(len);
            max = max.max(len);
            sum += len as u128;
            sum_sq = sum_sq.saturating_add((len as u128) * (len as u128));
            if len == 0 {
                empty += 1;
            }
            let class = Self::class_of(len);
            if histogram.len() <= class {
                histogram.resize(class + 1, 0);
            }
            histogram[class] += 1;
        }
        let mean = if nrows == 0 { 0.0 } else { nnz as f64 / nrows as f64 };
        // var = (n * sum_sq - sum^2) / n^2, the numerator computed exactly.
        let n = nrows as u128;
        let var = if nrows == 0 {
            0.0
        } else {
            n.saturating_mul(sum_sq).saturating_sub(sum.saturating_mul(sum)) as f64 / (nrows as f64 * nrows as f64)
        };
        RowStats {
            nrows,
            ncols,
            nnz,
            min: if nrows == 0 { 0 } else { min },
            max,
            mean,
            std_dev: var.sqrt(),
            empty_rows: empty,
            histogram,
        }
    }

    /// The histogram class of a row length: 0 for empty, else `floor(log2(len)) + 1`.
    pub fn class_of(len: usize) -> usize {
        if len == 0 {
            0
        } else {
            (usize::BITS - len.leading_zeros()) as usize
        }
    }

    /// The inclusive range of row lengths of histogram class `k`.
    ///
    /// Classes past the last one a `usize` length can fall in (`k > usize::BITS`) return the
    /// range of that last class.
    pub fn class_range(k: usize) -> (usize, usize) {
        let bits = usize::BITS as usize;
        match k {
            0 => (0, 0),
            k if k >= bits => (1 << (bits - 1), usize::MAX),
            k => (1 << (k - 1), (1 << k) - 1),
        }
    }
}

impl fmt::Display for RowStats {
    /// Prints a summary line and one histogram line per non-empty class.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "row lengths: min {}, mean {:.2}, max {}, std dev {:.2}; empty rows {}",
            self.min, self.mean, self.max, self.std_dev, self.empty_rows
        )?;
        let widest = self.histogram.iter().copied().max().unwrap_or(0).max(1);
        for (k, &count) in self.histogram.iter().enumerate() {
            if count == 0 {
                continue;
            }
            let (lo, hi) = Self::class_range(k);
            let label = if lo == hi { format!("{lo}") } else { format!("{lo}-{hi}") };
            let bar = "#".repeat((count * 40).div_ceil(widest));
            writeln!(f, "  {label:>13} | {count:>10} {bar}")?;
        }
        Ok(())
    }
}
