//! Narrow columns: ELL and SELL slots, and the CSR columns of the vector kernel, that store
//! each column as its 16-bit offset from the row, for matrices whose entries all lie within
//! [`MAX_OFFSET`] of the diagonal.
//!
//! The ELL and SELL kernels stream every slot's column and value once per call, and on
//! matrices of uniform rows they run near the copy bandwidth: the bytes they move set their
//! time. A slot of a grid or mesh matrix (`lap2d`, `lap3d`, `stencil27`, elasticity, a
//! random geometric graph numbered along a space-filling order) has its column within a few
//! thousand of its row, so `column - row` fits 16 bits: each slot then moves 2 bytes fewer,
//! a sixth of an `f64` slot and a quarter of an `f32` one. The upload stores the offsets
//! when every entry fits (`spmv_ell16_<T>` and `spmv_sell16_<T>` in `ptx/spmv.cu` decode
//! them, and CG's fused `cg_spmv_ell16_alpha_<T>`); one entry farther away keeps the whole
//! matrix on 32-bit columns. Results are bit-identical either way: the same products are
//! added in the same order.
//!
//! The vector kernel streams each row's columns and values too, and wide bands (rows of
//! hundreds to thousands of entries around the diagonal) run it: an upload whose plan runs
//! the vector kernel stores the CSR columns as offsets the same way when every entry fits
//! (`spmv_csr16_vector_tpr<N>_<T>`; storage "CSR with 16-bit column offsets", which only the
//! vector kernel reads).
//!
//! The offset is stored as a 16-bit two's complement; [`NARROW_PADDING`] (-32768, which no
//! offset takes) marks a padding slot. Set [`NARROW_COLUMNS_ENV`] to `0` to keep 32-bit
//! columns (to compare).
//!
//! **Far columns.** A circuit matrix is a band plus a few power and ground nets: each net's
//! column holds an entry in tens of thousands of rows, far from most of them, so one such
//! entry in most rows would keep the whole matrix on 32-bit columns. SELL slots instead
//! store such entries as codes into a table of at most [`FAR_SLOTS`] far columns
//! ([`far_columns`], [`encode_far`], [`decode_far`]; `spmv_sell16f_<T>` decodes them): the
//! codes take the 255 offsets below -32512 ([`FAR_CODE`]), so with a table an entry is
//! near when its offset lies in `-32512..=32767`.
//!
//! ```
//! use spgpu::gpu::narrow::{decode, encode, fits, NARROW_PADDING};
//! assert_eq!(encode(7, 10), Some(0xfffd)); // column 7 of row 10: -3
//! assert_eq!(decode(0xfffd, 10), Some(7));
//! assert_eq!(decode(NARROW_PADDING, 10), None);
//! assert_eq!(encode(40_000, 0), None); // too far from the diagonal
//! // rows 0 and 1 of a 2 x 40000 matrix: columns 0, 32767 | 1, 32768
//! assert!(fits(&[0, 2, 4], &[0, 32_767, 1, 32_768], usize::MAX));
//! assert!(!fits(&[0, 2, 4], &[0, 32_768, 1, 32_768], usize::MAX));
//! // rows longer than 1 entry are left out of the check (SELL keeps long rows apart)
//! assert!(fits(&[0, 2, 3], &[0, 32_768, 1], 1));
//! ```

use rayon::prelude::*;

pub use crate::gpu::plan::narrow::{
    csr_offsets_pay, far_columns, fits, FAR_SLOTS, MAX_OFFSET, NARROW_COLUMNS_ENV, VECTOR_BATCH_STEPS,
};

pub(crate) use crate::gpu::kernels::arrays::SlotCols;
use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::Result;

/// The 16-bit value of a padding slot (`SPGPU_NARROW_PADDING` in `ptx/common.cuh`).
pub const NARROW_PADDING: u16 = 0x8000;

/// The slot of far column `k` of the table is `FAR_CODE + k` (-32767 + k as an offset): with
/// a table, offsets run from `-(MAX_OFFSET - FAR_SLOTS)` = -32512 up.
pub const FAR_CODE: u16 = 0x8001;

/// The narrow slot of column `col` in row `row`, or `None` when `|col - row| > MAX_OFFSET`.
pub fn encode(col: u32, row: usize) -> Option<u16> {
    let d = i64::from(col) - row as i64;
    (d.unsigned_abs() <= u64::from(MAX_OFFSET)).then_some(d as i16 as u16)
}

/// The column of narrow slot `slot` in row `row`, or `None` for a padding slot.
pub fn decode(slot: u16, row: usize) -> Option<u32> {
    (slot != NARROW_PADDING).then(|| (row as i64 + i64::from(slot as i16)) as u32)
}

/// The narrow slot of column `col` in row `row` when the slots have the far-column table
/// `far` (sorted, at most [`FAR_SLOTS`], not empty): its offset when that lies in
/// `-32512..=32767`, else the code of its place in `far` ([`FAR_CODE`]); `None` when
/// neither.
///
/// ```
/// use spgpu::gpu::narrow::{decode_far, encode_far, FAR_CODE};
/// let far = [7u32, 900_000];
/// assert_eq!(encode_far(900_000, 5, &far), Some(FAR_CODE + 1));
/// assert_eq!(decode_far(FAR_CODE + 1, 5, &far), Some(900_000));
/// assert_eq!(encode_far(7, 32_520, &far), Some(FAR_CODE)); // offset -32513: far
/// assert_eq!(encode_far(8, 32_520, &far), Some((-32_512i16) as u16)); // near
/// assert_eq!(encode_far(9, 40_000, &far), None);
/// ```
pub fn encode_far(col: u32, row: usize, far: &[u32]) -> Option<u16> {
    let d = i64::from(col) - row as i64;
    if (-(i64::from(MAX_OFFSET) - FAR_SLOTS as i64)..=i64::from(MAX_OFFSET)).contains(&d) {
        return Some(d as i16 as u16);
    }
    far.binary_search(&col).ok().map(|k| FAR_CODE + k as u16)
}

/// The column of narrow slot `slot` in row `row` of slots with the far-column table `far`
/// ([`encode_far`]; an empty table: [`decode`]), or `None` for a padding slot.
pub fn decode_far(slot: u16, row: usize, far: &[u32]) -> Option<u32> {
    let code = usize::from(slot.wrapping_sub(FAR_CODE));
    if !far.is_empty() && code < FAR_SLOTS {
        return far.get(code).copied();
    }
    decode(slot, row)
}

impl SlotCols {
    /// Uninitialized room for `len > 0` slots.
    pub(crate) fn uninit(ctx: &'static Context, len: usize, narrow: bool, what: &str) -> Result<Self> {
        Ok(if narrow {
            SlotCols::Narrow(DeviceMemory::uninit(ctx, len, what)?)
        } else {
            SlotCols::Wide(DeviceMemory::uninit(ctx, len, what)?)
        })
    }

    /// Number of slots.
    pub(crate) fn len(&self) -> usize {
        match self {
            SlotCols::Wide(m) => m.len(),
            SlotCols::Narrow(m) => m.len(),
        }
    }

    /// Whether the slots hold offsets.
    pub(crate) fn is_narrow(&self) -> bool {
        matches!(self, SlotCols::Narrow(_))
    }

    /// The device address.
    pub(crate) fn addr(&self) -> u64 {
        match self {
            SlotCols::Wide(m) => m.as_device_ptr().as_raw(),
            SlotCols::Narrow(m) => m.as_device_ptr().as_raw(),
        }
    }

    /// Bytes per slot.
    pub(crate) fn slot_bytes(narrow: bool) -> usize {
        if narrow {
            2
        } else {
            4
        }
    }

    /// Uploads the slots `start..start + cols.len()` given as columns
    /// ([`ELL_PADDING`](crate::ELL_PADDING) for padding), the row of `cols[i]` being
    /// `row_of(i)`; narrow slots are encoded into `buf` first. Every column must fit
    /// ([`fits`]) when the slots are narrow.
    pub(crate) fn copy_from_host_at(
        &mut self,
        start: usize,
        cols: &[u32],
        row_of: impl Fn(usize) -> usize + Sync,
        buf: &mut Vec<u16>,
        what: &str,
    ) -> Result<()> {
        match self {
            SlotCols::Wide(m) => m.copy_from_host_at(start, cols, what),
            SlotCols::Narrow(m) => {
                buf.clear();
                cols.par_iter()
                    .enumerate()
                    .with_min_len(1 << 12)
                    .map(|(i, &c)| {
                        if c == crate::ELL_PADDING {
                            NARROW_PADDING
                        } else {
                            encode(c, row_of(i)).expect("narrow slots are made only when every column fits")
                        }
                    })
                    .collect_into_vec(buf);
                m.copy_from_host_at(start, buf, what)
            }
        }
    }

    /// The `len` slots as columns ([`ELL_PADDING`](crate::ELL_PADDING) for padding), the
    /// row of slot `i` being `row_of(i)`, after the work queued before on the context's
    /// stream.
    pub(crate) fn download(&self, len: usize, row_of: impl Fn(usize) -> usize + Sync, what: &str) -> Result<Vec<u32>> {
        Ok(match self {
            SlotCols::Wide(m) => {
                let mut out = vec![0u32; len];
                m.copy_to_host(&mut out, what)?;
                out
            }
            SlotCols::Narrow(m) => {
                let mut raw = vec![0u16; len];
                m.copy_to_host(&mut raw, what)?;
                raw.par_iter()
                    .enumerate()
                    .with_min_len(1 << 12)
                    .map(|(i, &d)| decode(d, row_of(i)).unwrap_or(crate::ELL_PADDING))
                    .collect()
            }
        })
    }
}

/// The columns of a CSR matrix as 16-bit offsets from their rows ([`encode`]), in new
/// device memory: for the vector kernel's narrow variant. `col_indices` must not be empty
/// and every entry must fit ([`fits`]). Encoded and uploaded rows of about `piece` entries
/// at a time, so the host never holds the offsets of the whole matrix.
pub(crate) fn upload_csr_offsets(
    ctx: &'static Context,
    row_offsets: &[u64],
    col_indices: &[u32],
    piece: usize,
    what: &str,
) -> Result<DeviceMemory<u16>> {
    let mut out = DeviceMemory::uninit(ctx, col_indices.len(), what)?;
    let nrows = row_offsets.len() - 1;
    let mut r0 = 0;
    while r0 < nrows {
        let lo = row_offsets[r0];
        // the rows that start within `piece` entries of this one (at least one)
        let r1 = (row_offsets.partition_point(|&o| o <= lo + piece as u64) - 1).clamp(r0 + 1, nrows);
        let buf = map_rows(row_offsets, col_indices, r0..r1, |c, r| {
            encode(c, r).expect("narrow offsets only when every column fits")
        });
        out.copy_from_host_at(lo as usize, &buf, what)?;
        r0 = r1;
    }
    Ok(out)
}

/// The columns of a CSR matrix stored as offsets ([`upload_csr_offsets`]), read back and
/// decoded (after the work queued before on the context's stream).
pub(crate) fn download_csr_offsets(offsets: &DeviceMemory<u16>, row_offsets: &[u64], what: &str) -> Result<Vec<u32>> {
    let mut raw = vec![0u16; offsets.len()];
    offsets.copy_to_host(&mut raw, what)?;
    let nrows = row_offsets.len().saturating_sub(1);
    Ok(map_rows(row_offsets, &raw, 0..nrows, |d, r| decode(d, r).expect("CSR offsets have no padding")))
}

/// `f(entry, row)` for every entry of rows `rows` of a CSR matrix whose entries (or their
/// columns) are `entries`, in order, computed in parallel by rows.
fn map_rows<S: Copy + Sync, D: Send>(
    row_offsets: &[u64],
    entries: &[S],
    rows: std::ops::Range<usize>,
    f: impl Fn(S, usize) -> D + Sync,
) -> Vec<D> {
    let f = &f;
    rows.into_par_iter()
        .with_min_len(1 << 10)
        .flat_map_iter(|r| {
            let (a, b) = (row_offsets[r] as usize, row_offsets[r + 1] as usize);
            entries[a..b].iter().map(move |&e| f(e, r))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_round_trip_at_the_limits() {
        for (col, row) in [
            (0u32, 0usize),
            (32_767, 0),
            (0, 32_767),
            (100_005, 100_000),
            (99_000, 100_000),
            (u32::MAX - 1, u32::MAX as usize - 32_768),
        ] {
            let d = encode(col, row).unwrap_or_else(|| panic!("({col}, {row}) fits"));
            assert_ne!(d, NARROW_PADDING);
            assert_eq!(decode(d, row), Some(col), "({col}, {row})");
        }
        assert_eq!(encode(32_768, 0), None);
        assert_eq!(encode(0, 32_768), None);
        assert_eq!(encode(0, 32_767), Some(0x8001));
    }

    #[test]
    fn far_columns_go_through_the_table() {
        // a tridiagonal matrix of 100000 rows with every 10th row also in columns 99999 and
        // 50000 (far from most rows): two far columns; the codes decode back
        let n = 100_000usize;
        let mut off = vec![0u64];
        let mut cols = Vec::new();
        for r in 0..n {
            let mut row: Vec<u32> = (r.saturating_sub(1)..(r + 2).min(n)).map(|c| c as u32).collect();
            if r % 10 == 0 {
                row.extend([50_000, 99_999]);
            }
            row.sort_unstable();
            row.dedup();
            cols.extend(row);
            off.push(cols.len() as u64);
        }
        assert!(!fits(&off, &cols, usize::MAX));
        let far = far_columns(&off, &cols, usize::MAX).expect("two far columns");
        assert_eq!(far, vec![50_000, 99_999]);
        for r in 0..n {
            for &c in &cols[off[r] as usize..off[r + 1] as usize] {
                let slot = encode_far(c, r, &far).unwrap_or_else(|| panic!("row {r}, column {c}"));
                assert_ne!(slot, NARROW_PADDING);
                assert_eq!(decode_far(slot, r, &far), Some(c), "row {r}");
            }
        }
        assert_eq!(decode_far(NARROW_PADDING, 7, &far), None);
        // the table's codes are plain offsets without a table
        assert_eq!(decode_far(FAR_CODE, 40_000, &[]), Some(40_000 - 32_767));
        // 256 far columns do not fit a table; rows past max_len are not looked at
        let wide: Vec<u32> = (0..256).map(|k| 40_000 + k).collect();
        assert_eq!(far_columns(&[0, 256], &wide, usize::MAX), None);
        assert_eq!(far_columns(&[0, 255], &wide[..255], usize::MAX).map(|f| f.len()), Some(255));
        assert_eq!(far_columns(&[0, 256], &wide, 255), Some(vec![]));
    }

    #[test]
    fn one_far_entry_rules_the_matrix_out() {
        // a tridiagonal matrix of 100000 rows fits; one entry 40000 away does not
        let n = 100_000usize;
        let mut off = vec![0u64];
        let mut cols = Vec::new();
        for r in 0..n {
            cols.extend((r.saturating_sub(1)..(r + 2).min(n)).map(|c| c as u32));
            off.push(cols.len() as u64);
        }
        assert!(fits(&off, &cols, usize::MAX));
        let last = cols.len() - 1;
        cols[last] = (n - 40_001) as u32; // row n - 1, column n - 40001
        assert!(!fits(&off, &cols, usize::MAX));
        assert!(fits(&off, &cols, 1)); // the last row (2 entries) is not checked
        assert!(fits(&[0], &[], usize::MAX));
    }
}
