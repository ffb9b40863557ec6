//! New values on the same pattern: where each stored slot of a layout takes its value from.
//!
//! [`DeviceCsr::update_values`](crate::gpu::DeviceCsr::update_values) takes new values in
//! the CSR order of the uploaded matrix. CSR storage (with row blocks, hot columns or 16-bit
//! column offsets) keeps them in that order, so they are copied as they come. ELL, SELL and
//! column parts store them elsewhere: ELL column-major and padded, SELL by slices of sorted
//! rows with long rows apart, column parts one run of each row per part. For those, a
//! **gather map** per stored value array gives each slot the CSR position of its entry
//! ([`PADDING`] for a padding slot); an update copies the values to the device once and
//! `update_values_<T>` (`ptx/spmv.cu`) gathers them into every array: `dst[i] = src[map[i]]`,
//! 0 in padding slots, which is what an upload stores there. So the slots hold the bits a
//! fresh upload of the same matrix would store.
//!
//! The maps are made on the host from the matrix's pattern, read back from the device on
//! the first update (the layout's own arrays for SELL), then kept on the device: 4 bytes per
//! slot (8 past `u32::MAX` entries).
//!
//! ```
//! use spgpu::gpu::values::{ell_map, PADDING};
//! // rows of 2, 0 and 1 entries: ELL of width 2, slot k of row i at k * 3 + i
//! assert_eq!(ell_map(&[0, 2, 2, 3], 2), vec![0, PADDING, 2, 1, PADDING, PADDING]);
//! ```

use rayon::prelude::*;

pub(crate) use crate::gpu::kernels::arrays::ValueMap;
use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::gpu::runtime::positions::PIECE;
use crate::gpu::storage::sell::SLICE;
use crate::gpu::storage::split;
use crate::{CsrMatrix, Result, Scalar};

/// The map entry of a padding slot (stored as all ones of the map's type).
pub const PADDING: u64 = u64::MAX;

impl ValueMap {
    /// Uploads `map` (CSR positions, [`PADDING`] for padding slots) as `u32` when every
    /// position fits below `u32::MAX`, else as `u64`; `None` when it is empty.
    pub(crate) fn upload(ctx: &'static Context, map: &[u64], what: &str) -> Result<Option<ValueMap>> {
        if map.is_empty() {
            return Ok(None);
        }
        let narrow = map.par_iter().all(|&j| j == PADDING || j < u64::from(u32::MAX));
        Ok(Some(if narrow {
            ValueMap::Narrow(DeviceMemory::from_fn(ctx, map.len(), PIECE, what, |i| match map[i] {
                PADDING => u32::MAX,
                j => j as u32,
            })?)
        } else {
            ValueMap::Wide(DeviceMemory::from_slice(ctx, map, what)?)
        }))
    }

    /// Device bytes of the map.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            ValueMap::Narrow(m) => 4 * m.len(),
            ValueMap::Wide(m) => 8 * m.len(),
        }
    }
}

/// The gather map of ELL slots (`width * nrows`, column-major: slot `k` of row `i` at
/// `k * nrows + i`) of the CSR matrix with these row offsets: `row_offsets[i] + k` for the
/// `k`-th entry of row `i`, [`PADDING`] past the row's end. Every row must be at most
/// `width` long.
pub fn ell_map(row_offsets: &[u64], width: usize) -> Vec<u64> {
    let nrows = row_offsets.len().saturating_sub(1);
    (0..width * nrows)
        .into_par_iter()
        .with_min_len(1 << 12)
        .map(|t| {
            let (k, i) = ((t / nrows) as u64, t % nrows);
            let j = row_offsets[i] + k;
            if j < row_offsets[i + 1] {
                j
            } else {
                PADDING
            }
        })
        .collect()
}

/// The row offsets of the CSR matrix that ELL slot columns (`width * nrows`, column-major,
/// `padding` after each row's entries, as downloaded) hold.
pub(crate) fn ell_row_offsets<C: PartialEq + Copy + Sync>(
    cols: &[C],
    nrows: usize,
    width: usize,
    padding: C,
) -> Vec<u64> {
    let lengths: Vec<u64> = (0..nrows)
        .into_par_iter()
        .with_min_len(1 << 10)
        .map(|i| (0..width).take_while(|&k| cols[k * nrows + i] != padding).count() as u64)
        .collect();
    offsets_of(&lengths)
}

/// Row offsets from row lengths.
fn offsets_of(lengths: &[u64]) -> Vec<u64> {
    let mut off = Vec::with_capacity(lengths.len() + 1);
    off.push(0u64);
    let mut at = 0;
    for &l in lengths {
        at += l;
        off.push(at);
    }
    off
}

/// The gather map of SELL slots of the CSR matrix with these row offsets, laid out by
/// `slice_ptr` (slice `s` holds `SLICE` lanes of `(slice_ptr[s + 1] - slice_ptr[s]) / SLICE`
/// slots, slot `k` of lane `l` at `slice_ptr[s] + k * SLICE + l`) and `perm` (lane `l` of
/// slice `s` holds row `perm[s * SLICE + l]`; lanes past `perm` are padding), as
/// [`SellLayout`](crate::gpu::sell::SellLayout) makes them.
pub fn sell_map(row_offsets: &[u64], slice_ptr: &[u64], perm: &[u32]) -> Vec<u64> {
    let slots = slice_ptr.last().copied().unwrap_or(0) as usize;
    (0..slots)
        .into_par_iter()
        .with_min_len(1 << 12)
        .map(|t| {
            let s = slice_ptr.partition_point(|&p| p <= t as u64) - 1;
            let rel = t - slice_ptr[s] as usize;
            let (k, lane) = ((rel / SLICE) as u64, rel % SLICE);
            match perm.get(s * SLICE + lane) {
                Some(&r) => {
                    let j = row_offsets[r as usize] + k;
                    if j < row_offsets[r as usize + 1] {
                        j
                    } else {
                        PADDING
                    }
                }
                None => PADDING,
            }
        })
        .collect()
}

/// The gather map of SELL's long-row entries (`long_entries` of them): each listed row
/// `[row, first chunk, chunks]` holds its entries in order from `chunk_entry[first]`.
pub fn long_rows_map(
    row_offsets: &[u64],
    long_rows: &[[u32; 3]],
    chunk_entry: &[u64],
    long_entries: usize,
) -> Vec<u64> {
    let mut map = vec![PADDING; long_entries];
    for &[r, first, _] in long_rows {
        let lo = chunk_entry[first as usize] as usize;
        let (a, b) = (row_offsets[r as usize], row_offsets[r as usize + 1]);
        for (slot, j) in map[lo..lo + (b - a) as usize].iter_mut().zip(a..b) {
            *slot = j;
        }
    }
    map
}

/// The gather map of column part `k` of `parts` ([`split::column_range`] of the columns
/// from [`split::part_start`]): the CSR positions in `a` of the part's entries, in the
/// part's CSR order (each row's run of columns in the part's range).
pub fn part_map<T: Scalar>(a: &CsrMatrix<T>, parts: usize, k: usize) -> Vec<u64> {
    let (lo, hi) = (split::part_start(a.ncols(), parts, k), split::part_start(a.ncols(), parts, k + 1));
    let (off, cols) = (a.row_offsets(), a.col_indices());
    (0..a.nrows())
        .into_par_iter()
        .with_min_len(1 << 10)
        .flat_map_iter(|r| {
            let (s, e) = (off[r] as usize, off[r + 1] as usize);
            let first = s + cols[s..e].partition_point(|&j| (j as usize) < lo);
            let last = first + cols[first..e].partition_point(|&j| (j as usize) < hi);
            (first as u64)..(last as u64)
        })
        .collect()
}

/// What [`DeviceCsr::update_from`](crate::gpu::DeviceCsr::update_from) compares a new
/// matrix's pattern with: the row offsets of the uploaded matrix and a 64-bit hash of each
/// row's columns ([`row_hash`]), 16 bytes per row on the host.
pub(crate) struct PatternPrint {
    row_offsets: Vec<u64>,
    row_hashes: Vec<u64>,
}

/// A 64-bit hash of a row's columns (FxHash's mixing step over each column, seeded with
/// the row's length).
pub(crate) fn row_hash(cols: &[u32]) -> u64 {
    cols.iter().fold(cols.len() as u64, |h, &c| (h.rotate_left(5) ^ u64::from(c)).wrapping_mul(0x517c_c1b7_2722_0a95))
}

impl PatternPrint {
    /// The print of `a`'s pattern.
    pub(crate) fn of<T: Scalar>(a: &CsrMatrix<T>) -> PatternPrint {
        PatternPrint { row_offsets: a.row_offsets().to_vec(), row_hashes: Self::hashes(a) }
    }

    fn hashes<T: Scalar>(a: &CsrMatrix<T>) -> Vec<u64> {
        let (off, cols) = (a.row_offsets(), a.col_indices());
        (0..a.nrows())
            .into_par_iter()
            .with_min_len(1 << 10)
            .map(|r| row_hash(&cols[off[r] as usize..off[r + 1] as usize]))
            .collect()
    }

    /// The first row of `b` (of the same shape) whose length or columns differ from the
    /// printed pattern's, or `None` when every row matches (columns compared by hash).
    pub(crate) fn first_difference<T: Scalar>(&self, b: &CsrMatrix<T>) -> Option<usize> {
        let off = b.row_offsets();
        let nrows = self.row_offsets.len().saturating_sub(1);
        if b.nrows() != nrows {
            return Some(nrows.min(b.nrows()));
        }
        let cols = b.col_indices();
        (0..nrows).into_par_iter().with_min_len(1 << 10).position_first(|r| {
            off[r + 1] - off[r] != self.row_offsets[r + 1] - self.row_offsets[r]
                || row_hash(&cols[off[r] as usize..off[r + 1] as usize]) != self.row_hashes[r]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A matrix of rows of the given lengths (columns spread), and its ELL slot columns.
    fn csr(lengths: &[usize], ncols: usize) -> CsrMatrix<f64> {
        let mut off = vec![0u64];
        let mut cols = Vec::new();
        for (i, &l) in lengths.iter().enumerate() {
            let mut row: Vec<u32> = (0..l.min(ncols)).map(|k| ((i * 7 + k * 13) % ncols) as u32).collect();
            row.sort_unstable();
            row.dedup();
            cols.extend(row);
            off.push(cols.len() as u64);
        }
        let vals = vec![1.0; cols.len()];
        CsrMatrix::try_from_parts(lengths.len(), ncols, off, cols, vals).unwrap()
    }

    #[test]
    fn ell_row_offsets_come_back_from_the_slot_columns() {
        for l in [vec![], vec![0, 0, 0], vec![3], vec![1, 5, 0, 2, 7], (0..300).map(|i| i % 9).collect()] {
            let a = csr(&l, 500);
            let e = crate::EllMatrix::try_from_csr_with_limit(&a, usize::MAX).unwrap();
            assert_eq!(ell_row_offsets(e.col_indices(), a.nrows(), e.width(), crate::ELL_PADDING), a.row_offsets());
        }
    }

    #[test]
    fn pattern_prints_find_the_first_row_that_differs() {
        let a = csr(&(0..300).map(|i| i % 9).collect::<Vec<_>>(), 500);
        let print = PatternPrint::of(&a);
        assert_eq!(print.first_difference(&a), None);
        // row 40's last column moved by one (within the row's order: columns step by 13)
        let (r, c, off, mut cols, vals) = a.clone().into_parts();
        cols[off[41] as usize - 1] += 1;
        let b = CsrMatrix::try_from_parts(r, c, off.clone(), cols, vals.clone()).unwrap();
        assert_eq!(print.first_difference(&b), Some(40));
        // rows 7 and 8 of other lengths: row 7 is the first to differ
        let mut lengths: Vec<usize> = (0..300).map(|i| i % 9).collect();
        (lengths[7], lengths[8]) = (lengths[7] - 1, lengths[8] + 1);
        assert_eq!(print.first_difference(&csr(&lengths, 500)), Some(7));
        assert_eq!(print.first_difference(&csr(&[1; 299], 500)), Some(299));
    }
}
