//! CPU baselines: `sprs` and `nalgebra-sparse` SpMV on all cores.
//!
//! Neither library runs SpMV on more than one core (sprs's `multi_thread` feature covers
//! sparse-sparse products only; nalgebra-sparse is serial). To compare with a GPU fairly the
//! benchmark runs each library's own serial SpMV on row blocks in parallel with rayon: the
//! rows are cut into `4 * threads` blocks of about equal stored entries, and each block is
//! one call of `sprs::prod::mul_acc_mat_vec_csr` (on a row slice of the matrix, 32-bit
//! indices) or of `nalgebra_sparse::ops::serial::spmm_csr_dense` (on a block matrix built
//! once, before timing; nalgebra-sparse stores `usize` indices). Both accumulate into `y`,
//! so each block zeroes its part of `y` first, inside the timed region.

use super::timing::{Method, Timing};
use super::BenchResult;
use crate::{CsrMatrix, Scalar};
use nalgebra_sparse::na::{ClosedAddAssign, ClosedMulAssign, DMatrixView, DMatrixViewMut};
use nalgebra_sparse::ops::{serial::spmm_csr_dense, Op};
use rayon::prelude::*;
use sprs::CsMatI;
use std::ops::Range;
use std::time::Instant;

/// Wall time a CPU repetition aims at, in seconds.
const CPU_TARGET_SECONDS: f64 = 20e-3;

/// The element types both libraries can multiply.
pub trait CpuScalar:
    Scalar
    + nalgebra_sparse::na::Scalar
    + ClosedAddAssign
    + ClosedMulAssign
    + num_traits::Zero
    + num_traits::One
    + sprs::MulAcc
{
}
impl CpuScalar for f32 {}
impl CpuScalar for f64 {}

/// Cuts rows `0..nrows` into at most `parts` contiguous ranges of about equal stored entries.
pub fn row_blocks(row_offsets: &[u64], parts: usize) -> Vec<Range<usize>> {
    let nrows = row_offsets.len().saturating_sub(1);
    if nrows == 0 {
        return Vec::new();
    }
    let nnz = row_offsets[nrows];
    let parts = parts.clamp(1, nrows);
    let mut out = Vec::with_capacity(parts);
    let mut start = 0usize;
    for p in 1..=parts {
        let end = if p == parts {
            nrows
        } else {
            // first row whose offset reaches p/parts of the entries, at least one row further
            let goal = (u128::from(nnz) * p as u128 / parts as u128) as u64;
            row_offsets.partition_point(|&o| o < goal).clamp(start + 1, nrows)
        };
        if end > start {
            out.push(start..end);
            start = end;
        }
    }
    out
}

/// Splits `y` into the disjoint pieces of `blocks` (which tile `0..y.len()` in order).
fn split_rows<'a, T>(mut y: &'a mut [T], blocks: &[Range<usize>]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(blocks.len());
    for r in blocks {
        let (head, tail) = std::mem::take(&mut y).split_at_mut(r.len());
        out.push(head);
        y = tail;
    }
    out
}

/// Both baselines for one matrix, prepared outside the timed region.
pub struct Baselines<T: CpuScalar> {
    blocks: Vec<Range<usize>>,
    sprs: CsMatI<T, u32, usize>,
    nalgebra: Vec<nalgebra_sparse::CsrMatrix<T>>,
    ncols: usize,
}

impl<T: CpuScalar> Baselines<T> {
    /// Converts `a` for both libraries and cuts it into row blocks for `threads` threads.
    ///
    /// # Errors
    ///
    /// When a library rejects the matrix (it cannot: `a` is a validated CSR matrix; the
    /// error is passed on rather than unwrapped).
    pub fn new(a: &CsrMatrix<T>, threads: usize) -> BenchResult<Self> {
        let blocks = row_blocks(a.row_offsets(), 4 * threads.max(1));
        let sprs = CsMatI::try_new(
            (a.nrows(), a.ncols()),
            a.row_offsets().iter().map(|&o| o as usize).collect(),
            a.col_indices().to_vec(),
            a.values().to_vec(),
        )
        .map_err(|(_, _, _, e)| format!("sprs rejected the matrix: {e}"))?;
        let offs = a.row_offsets();
        let nalgebra = blocks
            .iter()
            .map(|r| {
                let (lo, hi) = (offs[r.start] as usize, offs[r.end] as usize);
                nalgebra_sparse::CsrMatrix::try_from_csr_data(
                    r.len(),
                    a.ncols(),
                    offs[r.start..=r.end].iter().map(|&o| o as usize - lo).collect(),
                    a.col_indices()[lo..hi].iter().map(|&c| c as usize).collect(),
                    a.values()[lo..hi].to_vec(),
                )
                .map_err(|e| format!("nalgebra-sparse rejected the matrix: {e}").into())
            })
            .collect::<BenchResult<Vec<_>>>()?;
        Ok(Baselines { blocks, sprs, nalgebra, ncols: a.ncols() })
    }

    /// `y = A x` with sprs, row blocks in parallel.
    pub fn spmv_sprs(&self, x: &[T], y: &mut [T]) {
        split_rows(y, &self.blocks).into_par_iter().zip(self.blocks.par_iter()).for_each(|(yb, r)| {
            yb.fill(T::ZERO);
            sprs::prod::mul_acc_mat_vec_csr(self.sprs.slice_outer(r.clone()), x, yb);
        });
    }

    /// `y = A x` with nalgebra-sparse, row blocks in parallel.
    pub fn spmv_nalgebra(&self, x: &[T], y: &mut [T]) {
        let xv = DMatrixView::from_slice(x, self.ncols, 1);
        split_rows(y, &self.blocks).into_par_iter().zip(self.nalgebra.par_iter()).for_each(|(yb, blk)| {
            yb.fill(T::ZERO);
            let n = yb.len();
            spmm_csr_dense(T::ZERO, DMatrixViewMut::from_slice(yb, n, 1), T::ONE, Op::NoOp(blk), Op::NoOp(xv));
        });
    }
}

/// Times `f` on the host clock: one warm-up call, a calibration call, then `reps`
/// repetitions of enough calls to last about 20 ms; seconds per call.
pub fn time_wall(reps: usize, mut f: impl FnMut()) -> Timing {
    f();
    let t = Instant::now();
    f();
    let once = t.elapsed().as_secs_f64();
    let n = if once > 0.0 { ((CPU_TARGET_SECONDS / once).ceil() as usize).clamp(1, 10_000) } else { 10_000 };
    let samples = (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_secs_f64() / n as f64
        })
        .collect();
    Timing::from_samples(samples, n, Method::Wall)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{gen, reference};

    #[test]
    fn row_blocks_tile_the_rows_with_balanced_entries() {
        let a: CsrMatrix<f64> = gen::power_law(2000, 2000, 1.2, 3.0, 500, 7);
        let b = row_blocks(a.row_offsets(), 16);
        assert!(!b.is_empty() && b.len() <= 16);
        assert_eq!(b[0].start, 0);
        assert_eq!(b.last().map(|r| r.end), Some(2000));
        assert!(b.windows(2).all(|w| w[0].end == w[1].start && !w[0].is_empty()));
        assert!(row_blocks(&[0], 4).is_empty());
        assert_eq!(row_blocks(&[0, 5, 5], 8), vec![0..1, 1..2]);
    }

    fn check<T: CpuScalar>(a: &CsrMatrix<T>, tol: f64) {
        let x: Vec<T> = (0..a.ncols()).map(|i| T::from_f64(((i * 7919) % 101) as f64 / 50.0 - 1.0)).collect();
        let mut want = vec![T::ZERO; a.nrows()];
        reference::spmv_csr(T::ONE, a, &x, T::ZERO, &mut want).unwrap();
        let b = Baselines::new(a, 3).unwrap();
        for f in [Baselines::spmv_sprs, Baselines::spmv_nalgebra] {
            let mut y = vec![T::from_f64(f64::NAN); a.nrows()];
            f(&b, &x, &mut y);
            let e = reference::relative_error(&y, &want);
            assert!(e < tol, "relative error {e}");
        }
    }

    #[test]
    fn both_baselines_match_the_reference() {
        check::<f64>(&gen::from_spec("lap2d:37").unwrap(), 1e-14);
        check::<f64>(&gen::power_law(3001, 2500, 1.2, 3.0, 800, 3), 1e-13);
        check::<f32>(&gen::random_uniform(517, 300, 9, 5), 1e-5);
        // one row, empty rows, rectangular
        let a =
            CsrMatrix::try_from_parts(4, 3, vec![0, 0, 3, 3, 4], vec![0, 1, 2, 1], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        check::<f64>(&a, 1e-15);
    }

    #[test]
    fn wall_timing_reports_per_call_seconds() {
        let t = time_wall(3, || std::thread::sleep(std::time::Duration::from_millis(2)));
        assert_eq!(t.reps, 3);
        assert!(t.median >= 2e-3 && t.median < 50e-3, "{}", t.median);
        assert_eq!(t.method, Method::Wall);
    }
}
