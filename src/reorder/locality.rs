//! What a numbering makes of the gathers of `x`.

use crate::{CsrMatrix, Scalar};
use rayon::prelude::*;

/// The bytes of one sector, the unit in which the GPU's caches move data (an L1 or L2 line
/// is four of them): a gather of one `f64` of `x` reads a whole sector.
pub const SECTOR_BYTES: usize = 32;

/// Rows in one block of [`Locality::sectors_per_entry`]: a warp's rows in the one-thread-
/// per-row kernels (ELL, SELL, scalar CSR), whose gathers of one step coalesce into shared
/// sectors.
pub(crate) const BLOCK_ROWS: usize = 32;

/// Row blocks [`Locality::sampled`] measures, spread evenly over the rows.
pub(crate) const SAMPLE_BLOCKS: usize = 1 << 15;

/// How a numbering places the entries of a square matrix, for the gathers of `x`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Locality {
    /// `max |i - j|` over the stored entries.
    pub bandwidth: usize,
    /// The envelope: the sum over rows `i` of `i - min(i, first column of row i)`.
    pub profile: u64,
    /// The mean of `|i - j|` over the stored entries.
    pub mean_distance: f64,
    /// The distinct [`SECTOR_BYTES`]-byte sectors of an `f64` `x` that each block of 32
    /// consecutive rows reads, summed over the blocks, per stored entry: about 1 when every
    /// gather reads a sector of its own (a random numbering), as low as 1/4 when the entries
    /// of a block read consecutive values. With `f32` values, sectors hold twice as many.
    pub sectors_per_entry: f64,
    /// Whether these figures come from a sample of row blocks ([`Locality::sampled`]), not
    /// from every row: the bandwidth and the profile are then those of the sample.
    pub sampled: bool,
}

impl Locality {
    /// The locality of every row of `a`.
    pub fn of<T: Scalar>(a: &CsrMatrix<T>) -> Self {
        let blocks = a.nrows().div_ceil(BLOCK_ROWS);
        Self::over(a, blocks, |b| b, false)
    }

    /// The locality of 32768 blocks of 32 rows spread evenly over `a` (every
    /// block when there are fewer): what [`choose`](super::choose) measures on large
    /// matrices, in a fraction of the time.
    pub fn sampled<T: Scalar>(a: &CsrMatrix<T>) -> Self {
        let blocks = a.nrows().div_ceil(BLOCK_ROWS);
        if blocks <= SAMPLE_BLOCKS {
            return Self::of(a);
        }
        Self::over(a, SAMPLE_BLOCKS, |k| (k as u128 * blocks as u128 / SAMPLE_BLOCKS as u128) as usize, true)
    }

    fn over<T: Scalar>(a: &CsrMatrix<T>, count: usize, block: impl Fn(usize) -> usize + Sync, sampled: bool) -> Self {
        const PER_SECTOR: u32 = (SECTOR_BYTES / 8) as u32;
        let n = a.nrows();
        let (bandwidth, profile, distance, sectors, entries) = (0..count)
            .into_par_iter()
            .with_min_len(64)
            .map_init(Vec::new, |scratch: &mut Vec<u32>, k| {
                let b = block(k);
                let rows = b * BLOCK_ROWS..((b + 1) * BLOCK_ROWS).min(n);
                let (mut band, mut prof, mut dist) = (0usize, 0u64, 0u64);
                scratch.clear();
                for i in rows {
                    let cols = a.row(i).0;
                    if let Some(&first) = cols.first() {
                        prof += i.saturating_sub(first as usize) as u64;
                    }
                    for &j in cols {
                        let d = (j as usize).abs_diff(i);
                        band = band.max(d);
                        dist += d as u64;
                        scratch.push(j / PER_SECTOR);
                    }
                }
                let entries = scratch.len() as u64;
                scratch.sort_unstable();
                scratch.dedup();
                (band, prof, dist, scratch.len() as u64, entries)
            })
            .reduce(|| (0, 0, 0, 0, 0), |x, y| (x.0.max(y.0), x.1 + y.1, x.2 + y.2, x.3 + y.3, x.4 + y.4));
        Locality {
            bandwidth,
            profile,
            mean_distance: if entries == 0 { 0.0 } else { distance as f64 / entries as f64 },
            sectors_per_entry: if entries == 0 { 0.0 } else { sectors as f64 / entries as f64 },
            sampled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen;

    #[test]
    fn locality_of_a_tridiagonal_matrix_and_a_grid() {
        // tridiagonal, 64 rows: bandwidth 1; each block of 32 rows reads columns b*32-1 ..=
        // b*32+32, 34 values: 10 sectors of 4 in the first block (0..=32), 10 in the second
        // (31..=63)
        let t = gen::laplacian_2d::<f64>(1);
        assert_eq!(Locality::of(&t).bandwidth, 0);
        let mut coo = crate::CooMatrix::<f64>::new(64, 64).unwrap();
        for i in 0..64usize {
            for j in i.saturating_sub(1)..=(i + 1).min(63) {
                coo.push(i, j, 1.0).unwrap();
            }
        }
        let l = Locality::of(&coo.to_csr());
        assert_eq!(l.bandwidth, 1);
        assert_eq!(l.profile, 63);
        assert_eq!(l.sectors_per_entry, 18.0 / 190.0);
        assert!(!l.sampled);
        // the 5-point grid numbered by rows: three runs of about 32 values per block
        let g = Locality::of(&gen::laplacian_2d::<f64>(256));
        assert_eq!(g.bandwidth, 256);
        assert!(g.sectors_per_entry > 0.1 && g.sectors_per_entry < 0.2, "{g:?}");
    }

    #[test]
    fn a_sample_agrees_with_the_whole() {
        let a = gen::laplacian_2d::<f64>(1500);
        let (all, some) = (Locality::of(&a), Locality::sampled(&a));
        assert!(some.sampled && (all.sectors_per_entry - some.sectors_per_entry).abs() < 0.01, "{all:?} {some:?}");
        assert_eq!(all.bandwidth, some.bandwidth);
    }
}
