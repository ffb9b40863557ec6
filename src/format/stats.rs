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
/// assert_eq!(s.histogram_entries, vec![0, 1, 3]); // their entries
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
    /// Stored entries by length class: `histogram_entries[k]` sums the lengths of the rows
    /// that `histogram[k]` counts (exact, where the class's rows alone give only a range).
    pub histogram_entries: Vec<usize>,
}

/// Running integer tallies of row lengths, mergeable in any grouping with the same result:
/// exact integer sums, so the variance has no cancellation error (lengths and counts are at
/// most 2^31 in a valid matrix; u128 holds n * sum of squares up to 2^124).
#[derive(Debug, Clone)]
struct Tally {
    nrows: usize,
    nnz: usize,
    min: usize,
    max: usize,
    empty: usize,
    sum: u128,
    sum_sq: u128,
    histogram: Vec<usize>,
    histogram_entries: Vec<usize>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            nrows: 0,
            nnz: 0,
            min: usize::MAX,
            max: 0,
            empty: 0,
            sum: 0,
            sum_sq: 0,
            histogram: Vec::new(),
            histogram_entries: Vec::new(),
        }
    }
}

impl Tally {
    fn add(&mut self, len: usize) {
        self.nrows += 1;
        self.nnz = self.nnz.saturating_add(len);
        self.min = self.min.min(len);
        self.max = self.max.max(len);
        self.sum += len as u128;
        self.sum_sq = self.sum_sq.saturating_add((len as u128) * (len as u128));
        if len == 0 {
            self.empty += 1;
        }
        let class = RowStats::class_of(len);
        if self.histogram.len() <= class {
            self.histogram.resize(class + 1, 0);
            self.histogram_entries.resize(class + 1, 0);
        }
        self.histogram[class] += 1;
        self.histogram_entries[class] = self.histogram_entries[class].saturating_add(len);
    }

    /// The tally of at most 2^16 lengths in a tight loop: fixed-size histograms and
    /// wrapping sums, exact while every length is below 2^40 (a piece with a longer one,
    /// impossible in a valid matrix, is tallied again through [`Tally::add`]). Equal to
    /// adding the lengths one by one.
    fn of_piece(lengths: impl Iterator<Item = usize> + Clone) -> Tally {
        const CLASSES: usize = usize::BITS as usize + 1;
        let all = lengths.clone();
        let (mut nrows, mut nnz, mut min, mut max, mut empty) = (0usize, 0usize, usize::MAX, 0usize, 0usize);
        let mut sum_sq: u128 = 0;
        let mut histogram = [0usize; CLASSES];
        let mut entries = [0usize; CLASSES];
        for len in lengths {
            nrows += 1;
            nnz = nnz.wrapping_add(len);
            min = min.min(len);
            max = max.max(len);
            sum_sq = sum_sq.wrapping_add((len as u128) * (len as u128));
            empty += usize::from(len == 0);
            let class = RowStats::class_of(len);
            histogram[class] += 1;
            entries[class] = entries[class].wrapping_add(len);
        }
        if max >= 1 << 40 {
            let mut t = Tally::default();
            all.for_each(|len| t.add(len));
            return t;
        }
        // the histograms reach the class of the longest row, as `add` grows them
        let classes = if nrows == 0 { 0 } else { RowStats::class_of(max) + 1 };
        Tally {
            nrows,
            nnz,
            min,
            max,
            empty,
            sum: nnz as u128,
            sum_sq,
            histogram: histogram[..classes].to_vec(),
            histogram_entries: entries[..classes].to_vec(),
        }
    }

    fn merge(mut self, other: Tally) -> Tally {
        self.nrows += other.nrows;
        self.nnz = self.nnz.saturating_add(other.nnz);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.empty += other.empty;
        self.sum += other.sum;
        self.sum_sq = self.sum_sq.saturating_add(other.sum_sq);
        if self.histogram.len() < other.histogram.len() {
            self.histogram.resize(other.histogram.len(), 0);
            self.histogram_entries.resize(other.histogram.len(), 0);
        }
        for (h, o) in self.histogram.iter_mut().zip(&other.histogram) {
            *h += o;
        }
        for (h, o) in self.histogram_entries.iter_mut().zip(&other.histogram_entries) {
            *h = h.saturating_add(*o);
        }
        self
    }

    fn finish(self, ncols: usize) -> RowStats {
        let nrows = self.nrows;
        let mean = if nrows == 0 { 0.0 } else { self.nnz as f64 / nrows as f64 };
        // var = (n * sum_sq - sum^2) / n^2, the numerator computed exactly.
        let n = nrows as u128;
        let var = if nrows == 0 {
            0.0
        } else {
            n.saturating_mul(self.sum_sq).saturating_sub(self.sum.saturating_mul(self.sum)) as f64
                / (nrows as f64 * nrows as f64)
        };
        RowStats {
            nrows,
            ncols,
            nnz: self.nnz,
            min: if nrows == 0 { 0 } else { self.min },
            max: self.max,
            mean,
            std_dev: var.sqrt(),
            empty_rows: self.empty,
            histogram: self.histogram,
            histogram_entries: self.histogram_entries,
        }
    }
}

impl RowStats {
    /// Computes the statistics from CSR row offsets (`u32` or `u64`; `nrows + 1`
    /// non-decreasing entries, as
    /// a validated [`CsrMatrix`](crate::CsrMatrix) holds; a decreasing pair counts as an
    /// empty row). An empty slice means a matrix with no rows. Runs in parallel over pieces
    /// of rows; the result is that of [`from_lengths`](RowStats::from_lengths) exactly (the
    /// sums are integers).
    pub fn from_row_offsets<O: Copy + Into<u64> + Sync>(row_offsets: &[O], ncols: usize) -> Self {
        use rayon::prelude::*;
        const PIECE: usize = 1 << 16;
        let nrows = row_offsets.len().saturating_sub(1);
        (0..nrows.div_ceil(PIECE))
            .into_par_iter()
            .map(|p| {
                let piece = &row_offsets[p * PIECE..((p + 1) * PIECE).min(nrows) + 1];
                Tally::of_piece(piece.windows(2).map(|w| w[1].into().saturating_sub(w[0].into()) as usize))
            })
            .reduce(Tally::default, Tally::merge)
            .finish(ncols)
    }

    /// The statistics of `nrows` rows of `len` entries each, without looking at them.
    pub(crate) fn uniform(nrows: usize, ncols: usize, len: usize) -> Self {
        let classes = if nrows == 0 { 0 } else { RowStats::class_of(len) + 1 };
        let mut histogram = vec![0; classes];
        let mut histogram_entries = vec![0; classes];
        if let (Some(h), Some(e)) = (histogram.last_mut(), histogram_entries.last_mut()) {
            *h = nrows;
            *e = nrows.saturating_mul(len);
        }
        RowStats {
            nrows,
            ncols,
            nnz: nrows.saturating_mul(len),
            min: if nrows == 0 { 0 } else { len },
            max: if nrows == 0 { 0 } else { len },
            mean: if nrows == 0 { 0.0 } else { len as f64 },
            std_dev: 0.0,
            empty_rows: if len == 0 { nrows } else { 0 },
            histogram,
            histogram_entries,
        }
    }

    /// Computes the statistics from an iterator over row lengths.
    pub fn from_lengths(lengths: impl IntoIterator<Item = usize>, ncols: usize) -> Self {
        let mut t = Tally::default();
        for len in lengths {
            t.add(len);
        }
        t.finish(ncols)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_offsets_in_parallel_give_the_serial_statistics() {
        // 300,000 rows (pieces of 65536 in parallel): lengths 0..40 with a few long rows
        let lengths: Vec<usize> =
            (0..300_000usize).map(|i| if i % 99_991 == 7 { 50_000 + i } else { (i * 7919) % 41 }).collect();
        let mut off = vec![0u64];
        for &l in &lengths {
            off.push(off.last().unwrap() + l as u64);
        }
        let parallel = RowStats::from_row_offsets(&off, 123);
        let serial = RowStats::from_lengths(lengths.iter().copied(), 123);
        assert_eq!(parallel, serial);
        // the same from 32-bit offsets (the device's AMG levels)
        let narrow: Vec<u32> = off.iter().map(|&o| u32::try_from(o).unwrap()).collect();
        assert_eq!(RowStats::from_row_offsets(&narrow, 123), serial);
        assert_eq!(parallel.nnz, lengths.iter().sum::<usize>());
        assert_eq!(parallel.histogram.iter().sum::<usize>(), 300_000);
        assert_eq!(parallel.histogram_entries.iter().sum::<usize>(), parallel.nnz);
        // class 6 (lengths 32-63): the rows of 32 to 40 entries
        assert_eq!(parallel.histogram_entries[6], lengths.iter().filter(|&&l| (32..64).contains(&l)).sum::<usize>());
        assert_eq!((parallel.min, parallel.empty_rows), (0, lengths.iter().filter(|&&l| l == 0).count()));
        // no rows
        assert_eq!(RowStats::from_row_offsets(&[0u64; 0], 5), RowStats::from_lengths([], 5));
        assert_eq!(RowStats::from_row_offsets(&[0u64], 5).nrows, 0);
        // a length past the fast loop's bound (offsets need not come from a valid matrix)
        let huge = [0u64, 3, 3 + (1 << 41), (1 << 41) + 10];
        assert_eq!(RowStats::from_row_offsets(&huge, 5), RowStats::from_lengths([3, 1 << 41, 7], 5));
    }

    #[test]
    fn uniform_rows_give_the_statistics_of_their_lengths() {
        for (n, len) in [(0, 3), (5, 0), (7, 1), (1000, 6), (3, 64)] {
            assert_eq!(RowStats::uniform(n, 11, len), RowStats::from_lengths(vec![len; n], 11), "{n} x {len}");
        }
    }
}
