//! Sliced ELLPACK with sorting windows (SELL-C-σ, Kreutzer et al. 2014) for matrices whose
//! rows differ in length, with long rows split into chunks: the storage of the `sell` kernel
//! (`spmv_sell_<scalar>` in `ptx/spmv.cu`), made once on the host when a matrix is uploaded.
//!
//! - Rows of at most [`LONG_ROW`] entries are **short**. Within each window of [`SIGMA`]
//!   consecutive rows, the short rows are sorted by length, longest first (ties keep their
//!   order), and cut into **slices** of [`SLICE`] rows (a warp). A slice stores `width` slots
//!   per row, its longest row's length, column-major: slot `k` of the slice's lane `l` is at
//!   `slice_ptr[s] + k * SLICE + l`, so a warp reads 32 consecutive slots per step, like ELL,
//!   without the padding ELL needs when rows differ. Padding slots hold column
//!   [`ELL_PADDING`] and value 0. `perm[p]` is the row at sorted position `p`.
//! - Rows longer than [`LONG_ROW`] are **long**: their entries are kept in CSR order in arrays
//!   of their own and split into chunks of [`CHUNK`] entries, one block of 256 threads each
//!   (launched before the slices' blocks, so that they run alongside them, not in the
//!   kernel's tail), whose sums go to a scratch array and are added per row, in chunk
//!   order, by the block of the row's last chunk (as in the balanced kernel,
//!   [`balance`](crate::gpu::storage::balance)).
//!
//! One thread sums one short row; one block sums one chunk; every sum has a fixed order, so
//! results repeat bit for bit.

use rayon::prelude::*;

use crate::{CsrMatrix, Scalar, ELL_PADDING};

/// Rows per slice: a warp.
pub const SLICE: usize = 32;
/// Rows per sorting window: rows are reordered only within a window, so the writes to `y`
/// stay within `SIGMA` consecutive rows.
pub const SIGMA: usize = 2048;
/// Rows longer than this are split into chunks instead of being stored in slices.
pub const LONG_ROW: usize = 512;
/// Entries per chunk of a long row (one block of 256 threads, 8 entries each).
pub const CHUNK: usize = 2048;

/// A matrix in SELL-C-σ form with its long rows apart (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct SellMatrix<T> {
    /// Rows of the matrix.
    pub nrows: usize,
    /// Short rows, in sorted order: `perm.len()`.
    pub nsorted: usize,
    /// Slot offset of each slice; `nslices + 1` entries.
    pub slice_ptr: Vec<u64>,
    /// The row at each sorted position.
    pub perm: Vec<u32>,
    /// Slot columns, [`ELL_PADDING`] in padding slots.
    pub cols: Vec<u32>,
    /// Slot values, 0 in padding slots.
    pub vals: Vec<T>,
    /// First entry of each chunk in `long_cols`/`long_vals`; `nchunks + 1` entries.
    pub chunk_entry: Vec<u64>,
    /// Columns of the long rows, in row order.
    pub long_cols: Vec<u32>,
    /// Values of the long rows, in row order.
    pub long_vals: Vec<T>,
    /// `[row, first chunk, chunk count]` of each long row.
    pub long_rows: Vec<[u32; 3]>,
}

/// Why a matrix cannot be stored as SELL within the limits the caller set.
#[derive(Debug, Clone, PartialEq)]
pub struct SellTooLarge {
    /// Slots the slices would need.
    pub slots: usize,
    /// The limit.
    pub limit: usize,
}

/// Everything of a [`SellMatrix`] but its two slot arrays and the long rows' entries: made
/// first, so that the slots can be filled (and uploaded) a range of slices at a time, and
/// the long rows' entries read straight from the CSR matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct SellLayout {
    /// As in [`SellMatrix`].
    pub nrows: usize,
    /// As in [`SellMatrix`].
    pub nsorted: usize,
    /// As in [`SellMatrix`].
    pub slice_ptr: Vec<u64>,
    /// As in [`SellMatrix`].
    pub perm: Vec<u32>,
    /// As in [`SellMatrix`].
    pub chunk_entry: Vec<u64>,
    /// As in [`SellMatrix`].
    pub long_rows: Vec<[u32; 3]>,
}

impl SellLayout {
    /// The layout of a CSR matrix (see [`SellMatrix::from_csr`]).
    ///
    /// # Errors
    ///
    /// [`SellTooLarge`] when the slots exceed `max_slots`.
    pub fn new<T: Scalar>(a: &CsrMatrix<T>, max_slots: usize) -> Result<SellLayout, SellTooLarge> {
        let off = a.row_offsets();
        let nrows = a.nrows();
        let len = |r: usize| (off[r + 1] - off[r]) as usize;
        // sorted positions, window by window
        let perm: Vec<u32> = (0..nrows.div_ceil(SIGMA))
            .into_par_iter()
            .flat_map_iter(|w| {
                let mut rows: Vec<u32> = (w * SIGMA..((w + 1) * SIGMA).min(nrows))
                    .filter(|&r| len(r) <= LONG_ROW)
                    .map(|r| r as u32)
                    .collect();
                rows.sort_by_key(|&r| std::cmp::Reverse(len(r as usize)));
                rows
            })
            .collect();
        let nsorted = perm.len();
        let nslices = nsorted.div_ceil(SLICE);
        let mut slice_ptr = Vec::with_capacity(nslices + 1);
        slice_ptr.push(0u64);
        let mut slots = 0usize;
        for s in 0..nslices {
            let width =
                perm[s * SLICE..((s + 1) * SLICE).min(nsorted)].iter().map(|&r| len(r as usize)).max().unwrap_or(0);
            slots += width * SLICE;
            if slots > max_slots {
                return Err(SellTooLarge { slots, limit: max_slots });
            }
            slice_ptr.push(slots as u64);
        }
        // long rows, in row order, chunked
        let (mut chunk_entry, mut long_rows, mut entries) = (Vec::new(), Vec::new(), 0usize);
        for r in (0..nrows).filter(|&r| len(r) > LONG_ROW) {
            let first = chunk_entry.len() as u32;
            let chunks = len(r).div_ceil(CHUNK);
            for k in 0..chunks {
                chunk_entry.push((entries + k * CHUNK) as u64);
            }
            long_rows.push([r as u32, first, chunks as u32]);
            entries += len(r);
        }
        chunk_entry.push(entries as u64);
        Ok(SellLayout { nrows, nsorted, slice_ptr, perm, chunk_entry, long_rows })
    }

    /// Number of slices.
    pub fn nslices(&self) -> usize {
        self.slice_ptr.len() - 1
    }

    /// Slots of all slices.
    pub fn slots(&self) -> usize {
        *self.slice_ptr.last().expect("nslices + 1 offsets") as usize
    }

    /// Entries of the long rows.
    pub fn long_entries(&self) -> usize {
        *self.chunk_entry.last().expect("nchunks + 1 offsets") as usize
    }

    /// Fills the slots of slices `s0..s1` of `a` (this layout's matrix) into `cols` and
    /// `vals`, which hold exactly those slots (`slice_ptr[s1] - slice_ptr[s0]`), in parallel
    /// over slices.
    ///
    /// # Panics
    ///
    /// If the buffers do not hold exactly those slots.
    pub fn fill<T: Scalar>(&self, a: &CsrMatrix<T>, s0: usize, s1: usize, cols: &mut [u32], vals: &mut [T]) {
        self.fill_with(a, s0, s1, cols, vals, ELL_PADDING, |c, _| c);
    }

    /// [`fill`](SellLayout::fill) with each column stored as `encode(column, row)` and
    /// `padding` in padding slots: with [`narrow::encode`](crate::gpu::storage::narrow::encode), the
    /// 16-bit offsets of narrow slots (every column must then fit).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fill_with<T: Scalar, C: Copy + Send + Sync>(
        &self,
        a: &CsrMatrix<T>,
        s0: usize,
        s1: usize,
        cols: &mut [C],
        vals: &mut [T],
        padding: C,
        encode: impl Fn(u32, u32) -> C + Sync,
    ) {
        let base = self.slice_ptr[s0];
        let n = (self.slice_ptr[s1] - base) as usize;
        assert!(cols.len() == n && vals.len() == n, "the buffers hold slices {s0}..{s1}");
        let (off, acols, avals) = (a.row_offsets(), a.col_indices(), a.values());
        // split the slot arrays at slice boundaries, then fill slices in parallel
        let mut parts = Vec::with_capacity(s1 - s0);
        let (mut rest_c, mut rest_v) = (cols, vals);
        for s in s0..s1 {
            let w = (self.slice_ptr[s + 1] - self.slice_ptr[s]) as usize;
            let (c, rc) = std::mem::take(&mut rest_c).split_at_mut(w);
            let (v, rv) = std::mem::take(&mut rest_v).split_at_mut(w);
            parts.push((s, c, v));
            (rest_c, rest_v) = (rc, rv);
        }
        parts.into_par_iter().for_each(|(s, c, v)| {
            c.fill(padding);
            v.fill(T::ZERO);
            for (lane, &r) in self.perm[s * SLICE..((s + 1) * SLICE).min(self.nsorted)].iter().enumerate() {
                let (lo, hi) = (off[r as usize] as usize, off[r as usize + 1] as usize);
                for (k, j) in (lo..hi).enumerate() {
                    c[k * SLICE + lane] = encode(acols[j], r);
                    v[k * SLICE + lane] = avals[j];
                }
            }
        });
    }

    /// Whether the positions need 64 bits on the device (see [`SellMatrix::wide`]).
    pub fn wide(&self) -> bool {
        self.slots().max(self.long_entries()) > crate::INDEX_LIMIT
    }

    /// Device bytes of every array (see [`SellMatrix::device_bytes`]), for values of
    /// `value_bytes` bytes.
    pub fn device_bytes(&self, value_bytes: usize) -> usize {
        let position = if self.wide() { 8 } else { 4 };
        let nchunks = self.chunk_entry.len() - 1;
        self.slice_ptr.len() * position
            + self.perm.len() * 4
            + self.slots() * (4 + value_bytes)
            + self.chunk_entry.len() * position
            + self.long_entries() * (4 + value_bytes)
            + self.long_rows.len() * 12
            + nchunks * 8
    }
}

/// The columns of slots stored as narrow offsets ([`narrow`](crate::gpu::storage::narrow)), decoded with
/// the row of each slot (lane `l` of slice `s` belongs to row `perm[s * SLICE + l]`) and the
/// table of far columns (empty when the slots have none, [`decode_far`](crate::gpu::storage::narrow::decode_far));
/// [`ELL_PADDING`] for padding slots.
pub(crate) fn decode_narrow(slice_ptr: &[u64], perm: &[u32], offsets: &[u16], far: &[u32]) -> Vec<u32> {
    let mut cols = vec![ELL_PADDING; offsets.len()];
    let mut parts = Vec::with_capacity(slice_ptr.len().saturating_sub(1));
    let mut rest = cols.as_mut_slice();
    for s in 0..slice_ptr.len().saturating_sub(1) {
        let (part, r) = std::mem::take(&mut rest).split_at_mut((slice_ptr[s + 1] - slice_ptr[s]) as usize);
        parts.push((s, part));
        rest = r;
    }
    parts.into_par_iter().for_each(|(s, part)| {
        let first = slice_ptr[s] as usize;
        for (i, c) in part.iter_mut().enumerate() {
            // lanes past the last sorted row hold padding only
            if let Some(&row) = perm.get(s * SLICE + i % SLICE) {
                if let Some(col) = crate::gpu::storage::narrow::decode_far(offsets[first + i], row as usize, far) {
                    *c = col;
                }
            }
        }
    });
    cols
}

/// Slots SELL would store for rows of these lengths (padding included, long rows excluded),
/// computed without building anything: what the plan compares with the entry count.
pub fn slots_for(row_offsets: &[u64]) -> usize {
    let nrows = row_offsets.len().saturating_sub(1);
    (0..nrows.div_ceil(SIGMA))
        .into_par_iter()
        .map(|w| {
            let mut lens = short_lengths(row_offsets, w * SIGMA, ((w + 1) * SIGMA).min(nrows));
            lens.sort_unstable_by(|a, b| b.cmp(a));
            lens.chunks(SLICE).map(|c| c[0] * SLICE).sum::<usize>()
        })
        .sum()
}

/// Lengths of the short rows of `lo..hi`.
fn short_lengths(off: &[u64], lo: usize, hi: usize) -> Vec<usize> {
    (lo..hi).map(|r| (off[r + 1] - off[r]) as usize).filter(|&l| l <= LONG_ROW).collect()
}

impl<T: Scalar> SellMatrix<T> {
    /// Converts a CSR matrix, refusing when the slices would hold more than `max_slots` slots.
    ///
    /// # Errors
    ///
    /// [`SellTooLarge`] when the slots exceed `max_slots` (or the 32-bit index).
    ///
    /// ```
    /// use spgpu::gpu::sell::{SellMatrix, SLICE};
    /// use spgpu::CsrMatrix;
    /// // rows of 1, 3 and 2 entries: one slice of width 3, rows sorted longest first
    /// let a = CsrMatrix::try_from_parts(3, 4, vec![0, 1, 4, 6], vec![0, 0, 2, 3, 1, 2], vec![1.0f64; 6])?;
    /// let s = SellMatrix::from_csr(&a, usize::MAX).unwrap();
    /// assert_eq!(s.perm, vec![1, 2, 0]);
    /// assert_eq!(s.slice_ptr, vec![0, 3 * SLICE as u64]);
    /// assert_eq!(&s.cols[..3], &[0, 1, 0]); // first slot of rows 1, 2, 0
    /// # Ok::<(), spgpu::FormatError>(())
    /// ```
    pub fn from_csr(a: &CsrMatrix<T>, max_slots: usize) -> Result<SellMatrix<T>, SellTooLarge> {
        let layout = SellLayout::new(a, max_slots)?;
        let (mut cols, mut vals) = (vec![ELL_PADDING; layout.slots()], vec![T::ZERO; layout.slots()]);
        layout.fill(a, 0, layout.nslices(), &mut cols, &mut vals);
        let mut long_cols = Vec::with_capacity(layout.long_entries());
        let mut long_vals = Vec::with_capacity(layout.long_entries());
        for &[r, _, _] in &layout.long_rows {
            let (c, v) = a.row(r as usize);
            long_cols.extend_from_slice(c);
            long_vals.extend_from_slice(v);
        }
        let SellLayout { nrows, nsorted, slice_ptr, perm, chunk_entry, long_rows } = layout;
        Ok(SellMatrix { nrows, nsorted, slice_ptr, perm, cols, vals, chunk_entry, long_cols, long_vals, long_rows })
    }

    /// Number of slices.
    pub fn nslices(&self) -> usize {
        self.slice_ptr.len() - 1
    }

    /// Number of chunks of long rows.
    pub fn nchunks(&self) -> usize {
        self.chunk_entry.len() - 1
    }

    /// Whether the slot positions (`slice_ptr`, `chunk_entry`) need 64 bits on the device:
    /// when either slot array holds more than [`INDEX_LIMIT`](crate::INDEX_LIMIT) slots.
    pub fn wide(&self) -> bool {
        self.cols.len().max(self.long_cols.len()) > crate::INDEX_LIMIT
    }

    /// Device bytes of every array, the chunk-sum scratch included.
    pub fn device_bytes(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let position = if self.wide() { 8 } else { 4 };
        self.slice_ptr.len() * position
            + self.perm.len() * 4
            + self.cols.len() * (4 + t)
            + self.chunk_entry.len() * position
            + self.long_cols.len() * (4 + t)
            + self.long_rows.len() * 12
            + self.nchunks() * 8
    }

    /// The matrix back in CSR form (for downloads and checks).
    pub fn to_csr(&self, ncols: usize) -> CsrMatrix<T> {
        let mut rows: Vec<(Vec<u32>, Vec<T>)> = vec![(Vec::new(), Vec::new()); self.nrows];
        for (p, &r) in self.perm.iter().enumerate() {
            let (s, lane) = (p / SLICE, p % SLICE);
            let base = self.slice_ptr[s] as usize;
            let width = (self.slice_ptr[s + 1] as usize - base) / SLICE;
            for k in 0..width {
                let slot = base + k * SLICE + lane;
                if self.cols[slot] == ELL_PADDING {
                    break;
                }
                rows[r as usize].0.push(self.cols[slot]);
                rows[r as usize].1.push(self.vals[slot]);
            }
        }
        for &[r, first, count] in &self.long_rows {
            let lo = self.chunk_entry[first as usize] as usize;
            let hi = self.chunk_entry[(first + count) as usize] as usize;
            rows[r as usize] = (self.long_cols[lo..hi].to_vec(), self.long_vals[lo..hi].to_vec());
        }
        let mut offsets = Vec::with_capacity(self.nrows + 1);
        offsets.push(0u64);
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        for (c, v) in rows {
            cols.extend(c);
            vals.extend(v);
            offsets.push(cols.len() as u64);
        }
        CsrMatrix::try_from_parts(self.nrows, ncols, offsets, cols, vals).expect("SELL holds a valid CSR matrix")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn csr(lengths: &[usize], ncols: usize) -> CsrMatrix<f64> {
        let mut off = vec![0u64];
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        for (i, &l) in lengths.iter().enumerate() {
            for k in 0..l.min(ncols) {
                cols.push(((i * 7 + k * 13) % ncols) as u32);
                vals.push((i * 31 + k) as f64 + 0.5);
            }
            let row = off.len() - 1;
            let lo = off[row] as usize;
            let (c, v) = (&mut cols[lo..], &mut vals[lo..]);
            let mut pairs: Vec<(u32, f64)> = c.iter().copied().zip(v.iter().copied()).collect();
            pairs.sort_by_key(|p| p.0);
            pairs.dedup_by_key(|p| p.0);
            cols.truncate(lo);
            vals.truncate(lo);
            cols.extend(pairs.iter().map(|p| p.0));
            vals.extend(pairs.iter().map(|p| p.1));
            off.push(cols.len() as u64);
        }
        CsrMatrix::try_from_parts(lengths.len(), ncols, off, cols, vals).unwrap()
    }

    fn round_trip(lengths: &[usize]) -> SellMatrix<f64> {
        let a = csr(lengths, 5000);
        let s = SellMatrix::from_csr(&a, usize::MAX).unwrap();
        assert_eq!(s.to_csr(5000), a);
        assert_eq!(s.cols.len(), slots_for(a.row_offsets()));
        assert_eq!(s.nsorted + s.long_rows.len(), a.nrows());
        // rows only move within their window
        for (p, &r) in s.perm.iter().enumerate() {
            let _ = p;
            assert!(a.row_len(r as usize) <= LONG_ROW);
        }
        for &[r, first, count] in &s.long_rows {
            assert_eq!(count as usize, a.row_len(r as usize).div_ceil(CHUNK));
            for k in first..first + count {
                let n = s.chunk_entry[k as usize + 1] - s.chunk_entry[k as usize];
                assert!(n > 0 && n as usize <= CHUNK);
            }
        }
        s
    }

    #[test]
    fn slices_filled_a_range_at_a_time_equal_the_whole() {
        let mut lengths: Vec<usize> = (0..5000).map(|i| (i * 7) % 13).collect();
        lengths[10] = 3000; // a long row, kept apart
        let a = csr(&lengths, 5000);
        let whole = SellMatrix::from_csr(&a, usize::MAX).unwrap();
        let layout = SellLayout::new(&a, usize::MAX).unwrap();
        assert_eq!((layout.slots(), layout.long_entries()), (whole.cols.len(), whole.long_cols.len()));
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        let cuts = [0, 1, 17, 60, layout.nslices()];
        for w in cuts.windows(2) {
            let n = (layout.slice_ptr[w[1]] - layout.slice_ptr[w[0]]) as usize;
            let (mut c, mut v) = (vec![7u32; n], vec![-1.0; n]); // stale contents are overwritten
            layout.fill(&a, w[0], w[1], &mut c, &mut v);
            cols.extend(c);
            vals.extend(v);
        }
        assert_eq!((cols, vals), (whole.cols, whole.vals));
    }

    #[test]
    fn small_cases() {
        let s = round_trip(&[]);
        assert_eq!((s.nslices(), s.nchunks()), (0, 0));
        round_trip(&[0, 0, 0]);
        let s = round_trip(&[3, 600, 1, 0, 5000, 2]);
        assert_eq!(s.long_rows, vec![[1, 0, 1], [4, 1, 3]]);
        assert_eq!(s.nsorted, 4);
    }

    #[test]
    fn sorting_stays_within_windows_and_cuts_padding() {
        let lengths: Vec<usize> = (0..3 * SIGMA + 5).map(|i| (i * 37) % 40).collect();
        let s = round_trip(&lengths);
        for (p, &r) in s.perm.iter().enumerate() {
            assert_eq!(p / SIGMA, r as usize / SIGMA, "row {r} left its window");
        }
        let nnz: usize = lengths.iter().sum();
        assert!((s.cols.len() as f64) < 1.1 * nnz as f64, "{} slots for {nnz} entries", s.cols.len());
    }

    #[test]
    fn the_slot_limit_is_enforced() {
        let a = csr(&[10; 100], 100);
        let e = SellMatrix::from_csr(&a, 500).unwrap_err();
        assert!(e.slots > 500 && e.limit == 500);
    }

    proptest! {
        #[test]
        fn any_lengths_round_trip(lengths in prop::collection::vec(
            prop_oneof![8 => 0usize..20, 1 => 0usize..3000], 0..300)) {
            round_trip(&lengths);
        }
    }
}
