//! Row blocks of the load-balanced CSR kernel (`spmv_csr_balanced_<scalar>` in
//! `ptx/spmv.cu`), made once on the host when a matrix is uploaded.
//!
//! The rows are cut into consecutive **blocks**, each run by one CUDA block of
//! [`BLOCK_THREADS`] threads:
//!
//! - A **stream block** holds whole rows: at most [`BLOCK_ENTRIES`] entries, counted from
//!   its first entry rounded down to a multiple of [`QUAD`], and at most [`BLOCK_ROWS`] rows.
//!   Its threads first load all its entries with coalesced reads (each thread four
//!   consecutive entries, with one 16-byte load of columns and one or two of values),
//!   multiply them by `x` and keep the products in shared memory; then each row is summed
//!   there by a group of `threads_per_row(rows)` threads (the largest power of two with
//!   `rows * t <= BLOCK_THREADS`, at most 32; in a block of more rows than threads, one
//!   thread sums rows `t`, `t + BLOCK_THREADS`, ...) and written to `y`. A row joins the
//!   block only while no thread needs more than [`MAX_STEPS`] steps for its rows, so one
//!   long row cannot stall a block of short ones.
//! - A row that no stream block holds (longer than the block's entries, 1024 or 2048 (see
//!   below), less its first entry's distance from a multiple of [`QUAD`]) is split into
//!   chunks of [`CHUNK_ENTRIES`] entries,
//!   one block each (its row index carries [`LONG_FLAG`]), summed in registers. A row of one
//!   chunk is written to `y` by its block. A **long row** (more than one chunk) has each chunk
//!   block but the last write its sum to its own slot of a scratch array; the block of the
//!   row's last chunk waits for those slots (each holds a "no sum" bit pattern until its
//!   sum arrives), adds the chunk sums in chunk order, writes `y` and sets the slots back to
//!   "no sum". The other chunks are earlier blocks, which the GPU starts before it (blocks
//!   start in index order on NVIDIA GPUs, though CUDA does not promise it; see `chunk_done`
//!   in `ptx/spmv.cu`), so the wait ends.
//!
//! So the work per block is bounded by the entry count, whatever the row lengths, and every
//! sum is taken in a fixed order: results repeat bit for bit, with no floating-point
//! atomics and nothing kept from one call to the next.
//!
//! Blocks have one of two shapes ([`RowShape`]): 256 threads, 1024 entries and 512 rows per
//! stream block and chunks of 2048 ([`RowShape::DEFAULT`]), or 512 threads, 2048 entries and
//! 512 rows ([`RowShape::T512`]) for matrices whose columns lie near the diagonal
//! ([`choose_shape`]): a larger block's rows read more of the same entries of `x`, which the
//! L1 then serves. On the H200 (f32 / f64, `spgpu spmv`, 2026-11-26) the larger blocks took
//! `web:4000000` from 289.2 to 284.0 µs / 350.9 to 341.5, `web:3000000:11` 218.6 -> 214.2 /
//! 254.2 -> 248.6 and `web:2000000:5` 147.4 -> 144.1 / 170.5 -> 166.5 (42-43% of their entries
//! within 2048 columns of the diagonal), left `powerlaw:1000000` unchanged (101.6 / 108.8,
//! 0.1%), and lost on sparse R-MAT graphs (`rmat:22:8:7` without hot columns 252.4 -> 275.1 /
//! 286.3 -> 300.8), whose short rows of very different lengths make more warps wait for the
//! slowest. Blocks of 1024 threads and 4096 entries were slower on all of them (web 305.5 /
//! 354.7, `powerlaw:4000000` f32 401.3 -> 450.4).
//!
//! With fewer than [`SWEEP_MAX_ROWS`] rows, the chunks past each row's first come after the
//! other blocks in chunk-major order ([`RowBlocks::sweep`]): every long row's second chunk,
//! then every third, and so on, so that the blocks running at one time read the same
//! stretch of `x` (a large `x` then stays in the L2: up to 2.8x faster).
//!
//! Blocks are described by two arrays of `nblocks + 1` entries: `block_row[b]` (the first
//! row of block `b`, with [`LONG_FLAG`] set for a chunk block) and `block_entry[b]` (the first
//! entry of block `b`); block `b` covers entries `block_entry[b]..block_entry[b + 1]` and, for a
//! stream block, rows `block_row[b]..(block_row[b + 1] & !LONG_FLAG)` (in chunk-major order a
//! chunk block covers its chunk, to the row's end at most, whatever block follows). The last
//! element of each is `nrows` and `nnz`. Long rows are listed as `[row, first chunk block,
//! chunk count]` (in chunk-major order, the first chunk-sum slot instead of the block).

use rayon::prelude::*;

pub use crate::gpu::plan::balance::{
    choose_shape, chunk_major, near_diagonal_share, prefetch_x, RowShape, BALANCED_THREADS_ENV, BLOCK_ENTRIES,
    BLOCK_ROWS, BLOCK_THREADS, CHUNK_ENTRIES, CHUNK_MAJOR_ENV, LOCAL_MIN_SHARE, NEAR_SAMPLE_ROWS, NEAR_WINDOW,
    PREFETCH_X_ENV, PREFETCH_X_L2_SHARE, PREFETCH_X_LOCAL_MAX_SHARE, SWEEP_MAX_ROWS,
};
use crate::gpu::plan::Tuning;

/// A row joins a stream block only while each thread needs at most this many steps to sum its
/// rows (`ceil(longest / threads_per_row)`, times the rows per thread in a block of more rows
/// than threads). With one row per thread or group, each thread keeps 4 partial sums, so 128
/// steps are 32 dependent shared-memory reads; a thread summing two rows keeps one sum per row,
/// so up to 128 dependent reads (rows of at most 64 entries). On the H200, 128 beat 64 by 0-2%
/// on R-MAT and web-like graphs, and 32 lost up to 14% (`rmat:22:8:7` f32): fuller blocks
/// matter more than a long row's wait.
pub const MAX_STEPS: usize = 128;

/// Entries per vector load of a stream block (`load_quad` in `ptx/spmv.cu`): a stream
/// block's entries are read from its first entry rounded down to a multiple of `QUAD`, and
/// those up to `QUAD - 1` entries before it count towards its [`RowShape::entries`] (a row
/// that would not fit so is cut into chunks). A block of more rows than threads counts its
/// entries from the same place but loads them strided, one per thread at a time
/// (`load_strided`: faster there on the H200, `docs/gpu-notes.md`, 2026-11-27).
pub const QUAD: u64 = 4;

impl RowShape {
    /// Threads that sum one row in a stream block of `rows` rows: the largest power of two
    /// `t` with `rows * t <= threads`, at most 32 (a warp: the group reduces with shuffles),
    /// as the kernel computes it from the row count; 1 when `rows > threads`, where the kernel
    /// takes a path of its own in which each thread sums its rows alone.
    pub fn threads_per_row(self, rows: usize) -> usize {
        let t = self.threads / rows.max(1);
        if t == 0 {
            1
        } else {
            (1usize << (usize::BITS - 1 - t.leading_zeros())).min(32)
        }
    }

    /// Steps of the thread with the most work in a stream block of `rows` rows whose longest
    /// holds `longest` entries: `ceil(longest / threads_per_row(rows))` per row, times the
    /// rows a thread sums (more than one when `rows > threads`).
    pub fn steps(self, rows: usize, longest: usize) -> usize {
        longest.div_ceil(self.threads_per_row(rows)) * rows.div_ceil(self.threads)
    }
}

/// Marks the row of a chunk block (a piece of a long row) in `block_row`.
pub const LONG_FLAG: u32 = 1 << 31;

/// Rows per piece when the partition is computed in parallel; a block never spans two
/// pieces.
const PIECE_ROWS: usize = 1 << 16;

/// Threads that sum one row in a stream block of `rows` rows: the largest power of two `t`
/// with `rows * t <= BLOCK_THREADS`, at most 32 (a warp: the group reduces with shuffles),
/// as the kernel computes it from the row count; 1 past [`BLOCK_THREADS`] rows, where the
/// kernel takes a path of its own in which each thread sums two rows.
///
/// ```
/// use spgpu::gpu::balance::threads_per_row;
/// assert_eq!(threads_per_row(1), 32);
/// assert_eq!(threads_per_row(9), 16);
/// assert_eq!(threads_per_row(100), 2);
/// assert_eq!(threads_per_row(256), 1);
/// assert_eq!(threads_per_row(512), 1);
/// ```
pub fn threads_per_row(rows: usize) -> usize {
    RowShape::DEFAULT.threads_per_row(rows)
}

/// The row blocks of a matrix (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowBlocks {
    /// First row of each block, [`LONG_FLAG`] set on chunk blocks; `nblocks + 1` entries, the
    /// last `nrows`.
    pub block_row: Vec<u32>,
    /// First entry of each block; `nblocks + 1` entries, the last `nnz`.
    pub block_entry: Vec<u64>,
    /// `[row, first chunk block, chunk count]` of each row of more than one chunk, in row
    /// order.
    pub long_rows: Vec<[u32; 3]>,
    /// The shape the blocks were cut to.
    pub shape: RowShape,
    /// Whether the chunks come in chunk-major order: the stream blocks and every row's first
    /// chunk in row order, then every long row's second chunk, then every third, ..., as
    /// [`RowBlocks::with_shape`] lays out the blocks of fewer than [`SWEEP_MAX_ROWS`] rows
    /// (see there). A chunk block's entries then run from its start to the end of its chunk
    /// (at most `chunk` entries, not up to the next block's start), and `long_rows` lists
    /// each row's first chunk-sum slot, `(row_offsets[row] - row_offsets[0]) / chunk + row`,
    /// instead of its first chunk block.
    pub sweep: bool,
}

impl RowBlocks {
    /// Partitions the rows of a CSR matrix given by its row offsets (`nrows + 1`
    /// non-decreasing entries starting at 0, as a validated [`CsrMatrix`](crate::CsrMatrix)
    /// holds). Runs in parallel over pieces of 65536 rows.
    ///
    /// ```
    /// use spgpu::gpu::balance::{RowBlocks, CHUNK_ENTRIES, LONG_FLAG};
    /// // rows of 3, 0, 5000 and 2 entries
    /// let b = RowBlocks::new(&[0, 3, 3, 5003, 5005]);
    /// // rows 0-1 in one block, row 2 in three chunks, row 3 alone
    /// assert_eq!(b.block_row, vec![0, 2 | LONG_FLAG, 2 | LONG_FLAG, 2 | LONG_FLAG, 3, 4]);
    /// assert_eq!(b.block_entry, vec![0, 3, 3 + CHUNK_ENTRIES as u64, 3 + 2 * CHUNK_ENTRIES as u64, 5003, 5005]);
    /// // few rows: chunk-major order (the same here: one long row), whose chunk sums start
    /// // at slot 3 / CHUNK_ENTRIES + 2
    /// assert!(b.sweep);
    /// assert_eq!(b.long_rows, vec![[2, 2, 3]]);
    /// ```
    pub fn new(row_offsets: &[u64]) -> RowBlocks {
        Self::with_shape(row_offsets, RowShape::DEFAULT)
    }

    /// [`new`](RowBlocks::new) with blocks of another shape.
    ///
    /// ```
    /// use spgpu::gpu::balance::{RowBlocks, RowShape};
    /// // 600 rows of 5 entries: blocks of 204 rows (1020 entries), or of 409 (2045)
    /// let off: Vec<u64> = (0..=600).map(|r| 5 * r).collect();
    /// assert_eq!(RowBlocks::new(&off).nblocks(), 3);
    /// assert_eq!(RowBlocks::with_shape(&off, RowShape::T512).nblocks(), 2);
    /// ```
    pub fn with_shape(row_offsets: &[u64], shape: RowShape) -> RowBlocks {
        let longest = row_offsets.windows(2).map(|w| (w[1] - w[0]) as usize).max().unwrap_or(0);
        let sweep = chunk_major(row_offsets.len().saturating_sub(1), longest, shape, &Tuning::from_env());
        Self::cut(row_offsets, shape, sweep)
    }

    /// [`new`](RowBlocks::new) with the chunks in row order whatever the row count (for the
    /// hot-column kernel, which runs no other order).
    pub fn in_row_order(row_offsets: &[u64]) -> RowBlocks {
        Self::cut(row_offsets, RowShape::DEFAULT, false)
    }

    /// The blocks of `shape`, in chunk-major order when `sweep` (the plan's
    /// [`chunk_major`]).
    pub(crate) fn cut(row_offsets: &[u64], shape: RowShape, sweep: bool) -> RowBlocks {
        let nrows = row_offsets.len().saturating_sub(1);
        let pieces: Vec<RowBlocks> = (0..nrows.div_ceil(PIECE_ROWS))
            .into_par_iter()
            .map(|p| Self::piece(row_offsets, p * PIECE_ROWS, ((p + 1) * PIECE_ROWS).min(nrows), shape))
            .collect();
        let nblocks: usize = pieces.iter().map(|p| p.block_row.len()).sum();
        let mut out = RowBlocks {
            block_row: Vec::with_capacity(nblocks + 1),
            block_entry: Vec::with_capacity(nblocks + 1),
            long_rows: Vec::new(),
            shape,
            sweep: false,
        };
        for p in pieces {
            let base = out.block_row.len() as u32;
            out.long_rows.extend(p.long_rows.iter().map(|&[r, first, n]| [r, first + base, n]));
            out.block_row.extend(p.block_row);
            out.block_entry.extend(p.block_entry);
        }
        out.block_row.push(nrows as u32);
        out.block_entry.push(row_offsets.last().copied().unwrap_or(0));
        // the plan decides (chunk_major); rows of one chunk have no chunks to reorder
        if sweep && !out.long_rows.is_empty() {
            out.chunk_major(row_offsets);
        }
        out
    }

    /// Puts the chunks past each row's first after the other blocks in chunk-major order (by
    /// chunk index, then row), and lists each long row's first chunk-sum slot
    /// ([`RowBlocks::sweep`]).
    fn chunk_major(&mut self, off: &[u64]) {
        let n = self.nblocks();
        let chunk = self.shape.chunk as u64;
        // stream blocks and first chunks keep their order (a stream block's rows end where
        // the next block's begin), the other chunks follow by chunk index, then row, and the
        // stream blocks after the last chunk come last (before the closing sentinel)
        let last_chunk = (0..n).rev().find(|&b| self.block_row[b] & LONG_FLAG != 0).unwrap_or(0);
        let key = |b: usize| {
            let tag = self.block_row[b];
            if tag & LONG_FLAG == 0 {
                return (if b > last_chunk { u64::MAX } else { 0 }, b as u64);
            }
            match (self.block_entry[b] - off[(tag & !LONG_FLAG) as usize]) / chunk {
                0 => (0, b as u64),
                k => (k, (tag & !LONG_FLAG) as u64),
            }
        };
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&b| key(b));
        let mut block_row: Vec<u32> = order.iter().map(|&b| self.block_row[b]).collect();
        let mut block_entry: Vec<u64> = order.iter().map(|&b| self.block_entry[b]).collect();
        block_row.push(self.block_row[n]);
        block_entry.push(self.block_entry[n]);
        self.block_row = block_row;
        self.block_entry = block_entry;
        for l in &mut self.long_rows {
            let r = l[0] as usize;
            l[1] = ((off[r] - off[0]) / chunk) as u32 + l[0];
        }
        self.sweep = true;
    }

    /// The blocks of rows `lo..hi`, without the closing sentinel.
    fn piece(off: &[u64], lo: usize, hi: usize, shape: RowShape) -> RowBlocks {
        let mut b =
            RowBlocks { block_row: Vec::new(), block_entry: Vec::new(), long_rows: Vec::new(), shape, sweep: false };
        let len = |r: usize| (off[r + 1] - off[r]) as usize;
        let lead = |r: usize| (off[r] % QUAD) as usize;
        let mut r = lo;
        while r < hi {
            if len(r) + lead(r) > shape.entries {
                let chunks = len(r).div_ceil(shape.chunk);
                if chunks > 1 {
                    b.long_rows.push([r as u32, b.block_row.len() as u32, chunks as u32]);
                }
                for k in 0..chunks {
                    b.block_row.push(r as u32 | LONG_FLAG);
                    b.block_entry.push(off[r] + (k * shape.chunk) as u64);
                }
                r += 1;
                continue;
            }
            let start = r;
            // the block's window starts at its first entry rounded down to a quad
            let (mut entries, mut longest) = (lead(start), 0usize);
            while r < hi {
                let l = len(r);
                if l + lead(r) > shape.entries {
                    break;
                }
                let rows = r - start + 1;
                let m = longest.max(l);
                if r > start && (entries + l > shape.entries || rows > shape.rows || shape.steps(rows, m) > MAX_STEPS) {
                    break;
                }
                entries += l;
                longest = m;
                r += 1;
            }
            b.block_row.push(start as u32);
            b.block_entry.push(off[start]);
        }
        b
    }

    /// Number of blocks (the grid of the main kernel).
    pub fn nblocks(&self) -> usize {
        self.block_row.len().saturating_sub(1)
    }

    /// Device bytes of the block description (`block_entry` with 8-byte entries when `wide`,
    /// as the offsets) and the chunk-sum scratch. (The long-row list stays on the host: a
    /// chunk block finds its row's first chunk from the row offsets.)
    pub fn device_bytes(&self, wide: bool) -> usize {
        let entry = if wide { 8 } else { 4 };
        self.block_row.len() * 4 + self.block_entry.len() * entry + self.scratch_len() * 8
    }

    /// Slots of the chunk-sum scratch (`f64`): one per block when there are long rows (chunk
    /// blocks write the slot of their own index), else none.
    pub fn scratch_len(&self) -> usize {
        if self.long_rows.is_empty() {
            0
        } else if self.sweep {
            self.long_rows.iter().map(|&[_, first, count]| (first + count) as usize).max().unwrap_or(0)
        } else {
            self.nblocks()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn offsets(lengths: &[usize]) -> Vec<u64> {
        let mut o = vec![0u64];
        for &l in lengths {
            o.push(o.last().unwrap() + l as u64);
        }
        o
    }

    /// Checks every invariant the kernel relies on, for every shape; returns the default
    /// shape's blocks.
    fn check(lengths: &[usize]) -> RowBlocks {
        for shape in RowShape::ALL {
            check_shape(lengths, shape);
        }
        check_shape(lengths, RowShape::DEFAULT)
    }

    fn check_shape(lengths: &[usize], shape: RowShape) -> RowBlocks {
        let off = offsets(lengths);
        let b = RowBlocks::with_shape(&off, shape);
        assert_eq!(b.shape, shape);
        let n = b.nblocks();
        assert_eq!(b.block_row.len(), n + 1);
        assert_eq!(b.block_entry.len(), n + 1);
        assert_eq!(b.block_row[n], lengths.len() as u32);
        assert_eq!(b.block_entry[n], *off.last().unwrap());
        let multi_chunk = lengths.iter().any(|&l| l > shape.chunk);
        assert_eq!(
            b.sweep,
            shape == RowShape::DEFAULT && lengths.len() < SWEEP_MAX_ROWS && multi_chunk,
            "chunk-major order for few rows with rows of several chunks"
        );
        let mut covered = vec![0usize; lengths.len()];
        let mut long_seen = Vec::new();
        let mut next_chunk = vec![0usize; lengths.len()];
        for k in 0..n {
            let e0 = b.block_entry[k] as usize;
            if b.block_row[k] & LONG_FLAG != 0 {
                let r = (b.block_row[k] & !LONG_FLAG) as usize;
                let (rs, re) = (off[r] as usize, off[r + 1] as usize);
                // in chunk-major order a chunk runs to its end, whatever block follows
                let e1 = if b.sweep { (e0 + shape.chunk).min(re) } else { b.block_entry[k + 1] as usize };
                assert!(lengths[r] + rs % QUAD as usize > shape.entries && e1 - e0 <= shape.chunk);
                assert!(e0 >= rs && e1 <= re && e1 > e0);
                assert_eq!(e0 - rs, next_chunk[r] * shape.chunk, "block {k}: row {r}'s chunks in order");
                next_chunk[r] += 1;
                if e0 == rs {
                    long_seen.push(r);
                }
                covered[r] += e1 - e0;
            } else {
                let e1 = b.block_entry[k + 1] as usize;
                let r0 = b.block_row[k] as usize;
                let r1 = (b.block_row[k + 1] & !LONG_FLAG) as usize;
                assert!(r1 > r0 && r1 - r0 <= shape.rows, "block {k}: rows {r0}..{r1}");
                assert!(e0 % QUAD as usize + e1 - e0 <= shape.entries, "stream block {k}: entries {e0}..{e1}");
                assert_eq!((e0, e1), (off[r0] as usize, off[r1] as usize));
                for r in r0..r1 {
                    assert!(lengths[r] <= shape.entries);
                    assert!(r1 - r0 == 1 || shape.steps(r1 - r0, lengths[r]) <= MAX_STEPS);
                    covered[r] += lengths[r].max(1);
                }
            }
        }
        for (r, &l) in lengths.iter().enumerate() {
            assert_eq!(covered[r], l.max(1), "row {r} of {l} entries covered once");
        }
        assert!(long_seen.windows(2).all(|w| w[0] < w[1]), "first chunks in row order");
        let listed: Vec<usize> = b.long_rows.iter().map(|l| l[0] as usize).collect();
        let multi: Vec<usize> = long_seen.into_iter().filter(|&r| lengths[r] > shape.chunk).collect();
        assert_eq!(listed, multi, "rows of more than one chunk are listed, to be completed in order");
        let mut slots = vec![false; b.scratch_len()];
        for &[r, first, count] in &b.long_rows {
            assert_eq!(count as usize, lengths[r as usize].div_ceil(shape.chunk));
            if b.sweep {
                // the kernel's slots: apart from every other row's, within the scratch
                assert_eq!(first as u64, (off[r as usize] - off[0]) / shape.chunk as u64 + u64::from(r));
                for k in first..first + count {
                    assert!(!std::mem::replace(&mut slots[k as usize], true), "slot {k} taken twice");
                }
            } else {
                for k in first..first + count {
                    assert_eq!(b.block_row[k as usize], r | LONG_FLAG);
                }
            }
        }
        b
    }

    #[test]
    fn empty_and_tiny_matrices() {
        let b = check(&[]);
        assert_eq!((b.nblocks(), b.scratch_len()), (0, 0));
        assert_eq!(check(&[0]).nblocks(), 1);
        assert_eq!(check(&[0; 1000]).block_row, vec![0, 512, 1000]); // 512 rows per block
        assert_eq!(check(&[7]).block_row, vec![0, 1]);
    }

    #[test]
    fn blocks_fill_up_to_the_entry_budget() {
        // rows of 4: 256 rows (1024 entries) per block
        let b = check(&[4; 1024]);
        assert_eq!(b.block_row, vec![0, 256, 512, 768, 1024]);
        // rows of 8: 128 rows per block
        assert_eq!(check(&[8; 512]).block_row, vec![0, 128, 256, 384, 512]);
        // rows of 100: 10 rows per block (1000 entries), 16 threads per row, 7 steps
        assert_eq!(check(&[100; 100]).block_row[..3], [0, 10, 20]);
        // rows of 1 or 2: 512 rows per block, two per thread
        assert_eq!(check(&[2; 1024]).block_row, vec![0, 512, 1024]);
        assert_eq!(check(&[1; 1100]).block_row, vec![0, 512, 1024, 1100]);
    }

    #[test]
    fn two_rows_per_thread_only_while_a_thread_sums_at_most_max_steps() {
        // past 256 rows a thread sums two rows alone: a row of 64 (2 * 64 = 128 steps) may
        // join, a row of 65 (130) may not
        let mut l = vec![1; 300];
        l.push(MAX_STEPS / 2);
        l.extend([1; 100]);
        assert_eq!(check(&l).block_row, vec![0, 401]);
        let mut l = vec![1; 300];
        l.push(MAX_STEPS / 2 + 1);
        l.extend([1; 100]);
        assert_eq!(check(&l).block_row, vec![0, 300, 401]);
        assert_eq!(RowShape::DEFAULT.steps(300, 65), 130);
        assert_eq!(RowShape::DEFAULT.steps(256, 65), 65);
        assert_eq!(RowShape::T512.steps(512, 65), 65);
    }

    #[test]
    fn a_long_row_among_short_ones_does_not_stall_a_block() {
        // 200 rows of 2, then one of 1000: with 201 rows a group is one thread, 1000 steps
        let mut l = vec![2; 200];
        l.push(1000);
        l.extend([2; 50]);
        let b = check(&l);
        assert!(b.block_row.contains(&200), "{:?}", b.block_row);
        assert_eq!(b.scratch_len(), 0);
    }

    #[test]
    fn stream_blocks_count_entries_from_a_multiple_of_quad() {
        let e = BLOCK_ENTRIES;
        // a row of e entries fits only where it starts at a multiple of QUAD
        let b = check(&[e, e]);
        assert_eq!(b.block_row, vec![0, 1, 2]);
        let b = check(&[1, e, e - 1]);
        assert_eq!(b.block_row, vec![0, 1 | LONG_FLAG, 2, 3], "row 1 starts 1 past a multiple of QUAD");
        // rows of 4 after one of 2: the second block starts 2 past a multiple of QUAD, so
        // it holds one row of 4 fewer than it would from a multiple
        let mut l = vec![2];
        l.extend(std::iter::repeat_n(4, 2 * e));
        let b = check(&l);
        let k = (e - 2) / 4;
        assert_eq!(b.block_entry[1], 2 + 4 * k as u64);
        assert_eq!(b.block_row[..3], [0, 1 + k, 1 + 2 * k].map(|r| r as u32));
    }

    #[test]
    fn long_rows_are_chunked() {
        // many rows: chunks in row order, a chunk-sum slot per block
        let mut l = vec![1; SWEEP_MAX_ROWS];
        l.extend([3, 0, 2 * CHUNK_ENTRIES + 1, 0, 5 * CHUNK_ENTRIES, 1]);
        let b = check(&l);
        assert!(!b.sweep);
        let first = b.block_row.iter().position(|&r| r & LONG_FLAG != 0).unwrap() as u32;
        let (r2, r4) = (SWEEP_MAX_ROWS as u32 + 2, SWEEP_MAX_ROWS as u32 + 4);
        assert_eq!(b.long_rows, vec![[r2, first, 3], [r4, first + 4, 5]]);
        assert_eq!(b.scratch_len(), b.nblocks());
        // few rows: the first chunks in row order, then every second chunk, every third, ...
        // (chunk-major), the stream blocks after the last first chunk at the end; each long
        // row's chunk-sum slots start at its first entry / CHUNK_ENTRIES + its index
        let c = CHUNK_ENTRIES as u64;
        let l = [3, 0, 2 * CHUNK_ENTRIES + 1, 0, 5 * CHUNK_ENTRIES, 1];
        let b = check(&l);
        assert!(b.sweep);
        let f = LONG_FLAG;
        assert_eq!(b.block_row, vec![0, 2 | f, 3, 4 | f, 2 | f, 4 | f, 2 | f, 4 | f, 4 | f, 4 | f, 5, 6]);
        let (s2, s4) = (3, 3 + 2 * c + 1);
        let e = |s: u64, k: u64| s + k * c;
        assert_eq!(
            b.block_entry,
            vec![0, 3, s4, s4, e(s2, 1), e(s4, 1), e(s2, 2), e(s4, 2), e(s4, 3), e(s4, 4), s4 + 5 * c, s4 + 5 * c + 1]
        );
        assert_eq!(b.long_rows, vec![[2, 2, 3], [4, 2 + 4, 5]]);
        assert_eq!(b.scratch_len(), 11);
        // a row between a stream block and a chunk is one block, which writes y itself
        let b = check(&[3, BLOCK_ENTRIES + 1, CHUNK_ENTRIES, 2]);
        assert_eq!(b.block_row, vec![0, 1 | LONG_FLAG, 2 | LONG_FLAG, 3, 4]);
        assert!(b.long_rows.is_empty() && b.scratch_len() == 0);
    }

    #[test]
    fn pieces_join_with_consistent_indices() {
        // long rows in several pieces: their first-block indices must be global
        let mut l = vec![1usize; 3 * PIECE_ROWS + 17];
        l[5] = 3 * CHUNK_ENTRIES;
        l[PIECE_ROWS + 9] = CHUNK_ENTRIES + 1;
        l[3 * PIECE_ROWS + 3] = 10 * CHUNK_ENTRIES;
        let b = check(&l);
        assert_eq!(b.long_rows.len(), 3);
    }

    #[test]
    fn offsets_past_2_to_the_32_give_the_same_blocks_shifted() {
        // The partition only looks at differences of offsets, in 64 bits, and at their
        // residues modulo QUAD: offsets that start past 2^32 (as in a matrix of billions of
        // entries) give the same blocks, with every entry position shifted by the same amount.
        let mut l = vec![3usize; 5000];
        l[17] = 5 * CHUNK_ENTRIES + 3;
        l[2000] = BLOCK_ENTRIES + 1;
        let off = offsets(&l);
        let base = (3u64 << 32) + 8;
        let shifted: Vec<u64> = off.iter().map(|&o| o + base).collect();
        let (b, s) = (RowBlocks::new(&off), RowBlocks::new(&shifted));
        assert_eq!(s.block_row, b.block_row);
        assert_eq!(s.long_rows, b.long_rows);
        assert!(s.block_entry.iter().zip(&b.block_entry).all(|(&x, &y)| x == y + base));
        assert!(s.block_entry.iter().all(|&e| e > u32::MAX as u64));
    }

    proptest! {
        #[test]
        fn any_row_lengths_give_a_valid_partition(
            lengths in prop::collection::vec(
                prop_oneof![8 => 0usize..12, 2 => 0usize..300, 1 => 0usize..3 * CHUNK_ENTRIES], 0..600)
        ) {
            check(&lengths);
        }

        #[test]
        fn sparse_rows_give_a_valid_partition(
            // mostly empty or short rows (blocks of more rows than threads), now and then a
            // row near the two-rows step bound or a long one
            lengths in prop::collection::vec(
                prop_oneof![30 => 0usize..2, 6 => 0usize..4, 1 => 60usize..70, 1 => 0usize..3 * CHUNK_ENTRIES],
                0..3000)
        ) {
            check(&lengths);
        }
    }
}
