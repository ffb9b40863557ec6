//! The SpMV heuristic: which kernel runs a matrix, decided once from its row statistics.

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result, RowStats};

/// The thread counts per row that the vector CSR kernel is compiled for.
pub const VECTOR_THREADS_PER_ROW: [u32; 5] = [2, 4, 8, 16, 32];

/// An SpMV kernel, independent of the element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpmvKernel {
    /// CSR, one thread per row (`spmv_csr_scalar_<scalar>`).
    Scalar,
    /// CSR, `threads_per_row` threads per row reduced with warp shuffles
    /// (`spmv_csr_vector_tpr<N>_<scalar>`); one of [`VECTOR_THREADS_PER_ROW`].
    Vector {
        /// Threads that share a row: 2, 4, 8, 16 or 32.
        threads_per_row: u32,
    },
    /// ELLPACK, column-major, one thread per row (`spmv_ell_<scalar>`).
    Ell,
    /// Load-balanced CSR: row blocks of about equal entry counts made at upload, long rows
    /// split over several blocks (`spmv_csr_balanced_<scalar>`).
    Balanced,
    /// Sliced ELLPACK with rows sorted by length within windows (SELL-C-σ), long rows split
    /// into chunks (`spmv_sell_<scalar>`).
    Sell,
}

impl fmt::Display for SpmvKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpmvKernel::Scalar => write!(f, "csr scalar"),
            SpmvKernel::Vector { threads_per_row } => write!(f, "csr vector ({threads_per_row} threads per row)"),
            SpmvKernel::Ell => write!(f, "ell"),
            SpmvKernel::Balanced => write!(f, "csr balanced"),
            SpmvKernel::Sell => write!(f, "sell"),
        }
    }
}

/// What a user asks for: the heuristic, or a kernel forced by name.
///
/// Parses from `auto`, `scalar`, `vector` (threads per row by the heuristic's rule),
/// `vector:N` (N in 2, 4, 8, 16, 32) and `ell`.
///
/// ```
/// use spgpu::gpu::KernelChoice;
/// assert_eq!("vector:8".parse::<KernelChoice>()?, KernelChoice::VectorTpr(8));
/// assert!("vector:3".parse::<KernelChoice>().is_err());
/// # Ok::<(), spgpu::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KernelChoice {
    /// The heuristic of [`SpmvPlan`].
    #[default]
    Auto,
    /// The scalar CSR kernel.
    Scalar,
    /// The vector CSR kernel with the threads per row of the design rule (largest power of two
    /// not above the mean row length, clamped to 2..=warp size).
    Vector,
    /// The vector CSR kernel with this many threads per row.
    VectorTpr(u32),
    /// The ELLPACK kernel: applies to a [`DeviceEll`](super::DeviceEll) only.
    Ell,
    /// The load-balanced CSR kernel.
    Balanced,
    /// Sliced ELLPACK (SELL-C-σ) storage and kernel.
    Sell,
}

impl KernelChoice {
    /// Every kernel a user can force on a device of this warp size, in a fixed order:
    /// `scalar`, `vector:N` for each compiled N up to the warp size, `balanced`, `sell`, `ell`.
    pub fn forced(warp_size: u32) -> Vec<KernelChoice> {
        let mut v = vec![KernelChoice::Scalar];
        v.extend(VECTOR_THREADS_PER_ROW.iter().filter(|&&t| t <= warp_size).map(|&t| KernelChoice::VectorTpr(t)));
        v.push(KernelChoice::Balanced);
        v.push(KernelChoice::Sell);
        v.push(KernelChoice::Ell);
        v
    }
}

impl FromStr for KernelChoice {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidArgument(format!(
                "unknown kernel {s:?}: expected auto, scalar, vector, vector:N (N = 2, 4, 8, 16 or 32), balanced, sell or ell"
            ))
        };
        match s {
            "auto" => Ok(KernelChoice::Auto),
            "scalar" => Ok(KernelChoice::Scalar),
            "vector" => Ok(KernelChoice::Vector),
            "ell" => Ok(KernelChoice::Ell),
            "balanced" => Ok(KernelChoice::Balanced),
            "sell" => Ok(KernelChoice::Sell),
            _ => {
                let n = s.strip_prefix("vector:").ok_or_else(bad)?.parse::<u32>().map_err(|_| bad())?;
                if VECTOR_THREADS_PER_ROW.contains(&n) {
                    Ok(KernelChoice::VectorTpr(n))
                } else {
                    Err(bad())
                }
            }
        }
    }
}

impl fmt::Display for KernelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelChoice::Auto => write!(f, "auto"),
            KernelChoice::Scalar => write!(f, "scalar"),
            KernelChoice::Vector => write!(f, "vector"),
            KernelChoice::VectorTpr(n) => write!(f, "vector:{n}"),
            KernelChoice::Ell => write!(f, "ell"),
            KernelChoice::Balanced => write!(f, "balanced"),
            KernelChoice::Sell => write!(f, "sell"),
        }
    }
}

/// Which SpMV kernel runs a matrix, and why: the one place where spgpu chooses a kernel.
///
/// A plan is made from the matrix's [`RowStats`] and the device's warp size when the matrix
/// is uploaded, and can be made without a GPU (`spgpu info` prints it).
///
/// # The rule (CSR, [`KernelChoice::Auto`])
///
/// Measured on the H200 (f64, `docs/gpu-notes.md` and `docs/performance.md`); first match
/// wins:
///
/// 1. **Short, even rows: scalar.** Mean row length below [`SpmvPlan::SCALAR_MAX_MEAN`] (8)
///    and no row longer than [`SpmvPlan::SCALAR_MAX_ROW`] (64): one thread per row. On the
///    2D Laplacian (5 per row) it takes 84.7 µs against 101 µs with 2 and 127.5 µs with 4
///    threads per row. The row bound keeps one long row from stalling a warp.
/// 2. **Skewed rows: a full warp per row.** Longest row at least [`SpmvPlan::SKEW_MIN_ROW`]
///    (256) and at least [`SpmvPlan::SKEW_RATIO`] (32) times the mean: the longest rows set
///    the time, so they get the most threads (warp size, at most 32). On `powerlaw_1M`
///    (mean 12.8, max 19825) 32 threads per row take 565 µs against 1312 µs with 8.
/// 3. **Otherwise: the design rule, capped at [`SpmvPlan::VECTOR_MAX_THREADS`] (8).** The
///    largest power of two not above the mean row length, clamped to 2..=8
///    ([`SpmvPlan::design_threads_per_row`] gives the uncapped design value). Eight threads
///    per row were the fastest (or within 2%) at every mean length from 8 to 1000: 108.9 µs
///    on `stencil27_100^3` (16 threads: 133.3 µs, 32: 199.3 µs) and 123.2 µs on
///    `longrows_20k` (32 threads: 133.5 µs), because more, shorter sub-warps keep more
///    independent loads in flight and reduce with fewer shuffles.
/// 4. **Few rows: fill the GPU.** When `rows x threads per row` stays within
///    [`SpmvPlan::FILL_THREADS`] (262144, the H200's resident threads: 132 multiprocessors x
///    2048), rule 3 raises the threads per row to the largest power of two that keeps
///    it there, at most the warp size and at most the longest row rounded up to a power of
///    two ([`SpmvPlan::fill_threads_per_row`]). A small matrix is latency-bound: more
///    threads per row shorten each row's serial loop. In the `spgpu bench` run over the 43
///    SuiteSparse matrices (graph replay, f64) this lowered, for example, `mbeacxc` (496 rows
///    of 100) from 17.7 µs to 6.1 µs, `banded:2000:1999` (dense2) from 126 to 33 µs and
///    `bcsstk16` (4884 rows of 59) from 4.2 to 2.4 µs, made no matrix more than 5% slower,
///    and took the plan from 35 to 41 of 48 cases faster than the fastest cuSPARSE variant.
///    It leaves large matrices (`lap2d_2000^2`, `stencil27_100^3`, `longrows_20k`) alone.
///    Rule 1 keeps the scalar kernel even for few short rows: there the gain is under 2 µs,
///    and the scalar kernel is the one conjugate gradient fuses with its reduction and
///    replays as a CUDA graph.
///
/// A [`DeviceEll`](super::DeviceEll) always runs the ELL kernel; [`SpmvPlan::explain`]
/// says when ELL would pad little and is worth uploading instead (it reaches the memory
/// limit on uniform rows).
///
/// # Example
///
/// ```
/// use spgpu::gpu::{SpmvKernel, SpmvPlan};
/// use spgpu::RowStats;
/// // a million rows of 5: scalar
/// let big = RowStats::from_lengths(std::iter::repeat(5).take(1_000_000), 1_000_000);
/// assert_eq!(SpmvPlan::from_stats(&big, 32).kernel(), SpmvKernel::Scalar);
/// // a million rows of 27: eight threads per row
/// let wide = RowStats::from_lengths(std::iter::repeat(27).take(1_000_000), 1_000_000);
/// assert_eq!(SpmvPlan::from_stats(&wide, 32).kernel(), SpmvKernel::Vector { threads_per_row: 8 });
/// // 2000 rows of 27 cannot fill the GPU with eight threads per row: 32
/// let small = RowStats::from_lengths(std::iter::repeat(27).take(2000), 2000);
/// assert_eq!(SpmvPlan::from_stats(&small, 32).kernel(), SpmvKernel::Vector { threads_per_row: 32 });
/// println!("{}", SpmvPlan::from_stats(&small, 32).explain());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SpmvPlan {
    kernel: SpmvKernel,
    choice: KernelChoice,
    warp_size: u32,
    nrows: usize,
    nnz: usize,
    mean: f64,
    max: usize,
    reason: String,
}

impl SpmvPlan {
    /// The scalar kernel runs only when the mean row length is below this.
    pub const SCALAR_MAX_MEAN: f64 = 8.0;
    /// The scalar kernel runs only when no row is longer than this.
    pub const SCALAR_MAX_ROW: usize = 64;
    /// The auto plan's vector kernel uses at most this many threads per row, except for
    /// skewed rows.
    pub const VECTOR_MAX_THREADS: u32 = 8;
    /// Rows are skewed when the longest is at least this many times the mean...
    pub const SKEW_RATIO: f64 = 32.0;
    /// ...and has at least this many entries.
    pub const SKEW_MIN_ROW: usize = 256;
    /// Rows times threads per row that fill the GPU: the H200's resident threads (132
    /// multiprocessors x 2048). Below it, the auto plan gives the vector kernel more threads
    /// per row (rule 4).
    pub const FILL_THREADS: usize = 132 * 2048;
    /// ELL is recommended when it stores at most this many slots per stored entry.
    pub const ELL_MAX_PADDING: f64 = 1.25;
    /// SELL is refused when its slices would store more than this many slots per entry.
    pub const SELL_MAX_PADDING: f64 = 1.25;

    /// The automatic plan for a CSR matrix with these statistics on a device of this warp
    /// size (32 on NVIDIA GPUs).
    pub fn from_stats(stats: &RowStats, warp_size: u32) -> SpmvPlan {
        Self::with_choice(stats, warp_size, KernelChoice::Auto).expect("the automatic plan always applies to CSR")
    }

    /// The plan for a CSR matrix with a kernel chosen by the user, or by the heuristic for
    /// [`KernelChoice::Auto`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for [`KernelChoice::Ell`] (it needs a
    /// [`DeviceEll`](super::DeviceEll)) and for a threads-per-row count that is not one of
    /// [`VECTOR_THREADS_PER_ROW`] or exceeds the warp size.
    pub fn with_choice(stats: &RowStats, warp_size: u32, choice: KernelChoice) -> Result<SpmvPlan> {
        let design = Self::design_threads_per_row(stats.mean, warp_size);
        let (kernel, reason) = match choice {
            KernelChoice::Auto => {
                let cap = warp_size.clamp(2, 32);
                let fill = Self::fill_threads_per_row(stats, warp_size);
                let few_rows = format!(
                    "only {} rows: {fill} threads per row keep rows x threads within the {} threads that fill \
                     the GPU (at most the longest row, rounded up to a power of two)",
                    stats.nrows,
                    Self::FILL_THREADS
                );
                if stats.mean < Self::SCALAR_MAX_MEAN && stats.max <= Self::SCALAR_MAX_ROW {
                    (
                        SpmvKernel::Scalar,
                        format!(
                            "rows are short and even (mean {:.2} < {}, max {} <= {}): one thread per row",
                            stats.mean,
                            Self::SCALAR_MAX_MEAN,
                            stats.max,
                            Self::SCALAR_MAX_ROW
                        ),
                    )
                } else if stats.max >= Self::SKEW_MIN_ROW && stats.max as f64 >= Self::SKEW_RATIO * stats.mean.max(1.0)
                {
                    (
                        SpmvKernel::Vector { threads_per_row: cap },
                        format!(
                            "rows are skewed (max {} >= {} x mean {:.2}): the longest rows set the time, so {cap} \
                             threads (a warp) per row",
                            stats.max,
                            Self::SKEW_RATIO,
                            stats.mean
                        ),
                    )
                } else if fill > design.min(Self::VECTOR_MAX_THREADS).min(cap) {
                    (SpmvKernel::Vector { threads_per_row: fill }, few_rows)
                } else {
                    let tpr = design.min(Self::VECTOR_MAX_THREADS).min(cap);
                    let why = if stats.mean < Self::SCALAR_MAX_MEAN {
                        format!(
                            "rows are short on average (mean {:.2}) but the longest has {} entries (> {}), which \
                             would stall a warp of the scalar kernel",
                            stats.mean,
                            stats.max,
                            Self::SCALAR_MAX_ROW
                        )
                    } else {
                        format!("mean row length {:.2} >= {}", stats.mean, Self::SCALAR_MAX_MEAN)
                    };
                    (
                        SpmvKernel::Vector { threads_per_row: tpr },
                        format!(
                            "{why}: {tpr} threads per row (largest power of two <= the mean, clamped to 2..={}, \
                             measured fastest on the H200)",
                            Self::VECTOR_MAX_THREADS.min(cap)
                        ),
                    )
                }
            }
            KernelChoice::Scalar => (SpmvKernel::Scalar, "forced by the user".to_string()),
            KernelChoice::Vector => (
                SpmvKernel::Vector { threads_per_row: design },
                format!("forced by the user; {design} threads per row by the design rule (mean {:.2})", stats.mean),
            ),
            KernelChoice::VectorTpr(n) => {
                if !VECTOR_THREADS_PER_ROW.contains(&n) || n > warp_size {
                    return Err(Error::InvalidArgument(format!(
                        "{n} threads per row: the vector kernel takes 2, 4, 8, 16 or 32, at most the warp size \
                         ({warp_size})"
                    )));
                }
                (SpmvKernel::Vector { threads_per_row: n }, "forced by the user".to_string())
            }
            KernelChoice::Balanced => (SpmvKernel::Balanced, "forced by the user".to_string()),
            KernelChoice::Sell => (SpmvKernel::Sell, "forced by the user: stored as SELL-C-sigma".to_string()),
            KernelChoice::Ell => (SpmvKernel::Ell, "forced by the user: stored as ELLPACK".to_string()),
        };
        Ok(SpmvPlan {
            kernel,
            choice,
            warp_size,
            nrows: stats.nrows,
            nnz: stats.nnz,
            mean: stats.mean,
            max: stats.max,
            reason,
        })
    }

    /// The plan of an ELLPACK matrix (always the ELL kernel); `stats` are its rows'
    /// statistics.
    pub fn for_ell(stats: &RowStats, warp_size: u32) -> SpmvPlan {
        SpmvPlan {
            kernel: SpmvKernel::Ell,
            choice: KernelChoice::Ell,
            warp_size,
            nrows: stats.nrows,
            nnz: stats.nnz,
            mean: stats.mean,
            max: stats.max,
            reason: "the matrix is stored as ELLPACK".to_string(),
        }
    }

    /// Rule 4's threads per row for a matrix with these statistics: the largest power of two
    /// `t <= min(warp_size, 32)` with `nrows * t <= FILL_THREADS`, at most the longest row
    /// rounded up to a power of two; 1 when the rows alone fill the GPU (or the matrix has no
    /// entries).
    ///
    /// ```
    /// use spgpu::{gpu::SpmvPlan, RowStats};
    /// let s = |n: usize, len: usize| RowStats::from_lengths(std::iter::repeat(len).take(n), n);
    /// assert_eq!(SpmvPlan::fill_threads_per_row(&s(1000, 100), 32), 32);
    /// assert_eq!(SpmvPlan::fill_threads_per_row(&s(1000, 3), 32), 4); // rows of 3: 4 threads
    /// assert_eq!(SpmvPlan::fill_threads_per_row(&s(20_000, 1000), 32), 8);
    /// assert_eq!(SpmvPlan::fill_threads_per_row(&s(1_000_000, 27), 32), 1);
    /// ```
    pub fn fill_threads_per_row(stats: &RowStats, warp_size: u32) -> u32 {
        let cap = warp_size.clamp(2, 32);
        let longest = u32::try_from(stats.max.max(1)).unwrap_or(u32::MAX).checked_next_power_of_two().unwrap_or(cap);
        let mut t = 1u32;
        while t * 2 <= cap && t < longest && stats.nrows.saturating_mul(t as usize * 2) <= Self::FILL_THREADS {
            t *= 2;
        }
        t
    }

    /// The design rule's threads per row: the largest power of two not above `mean`,
    /// clamped to `2..=min(warp_size, 32)`.
    ///
    /// ```
    /// use spgpu::gpu::SpmvPlan;
    /// assert_eq!(SpmvPlan::design_threads_per_row(26.5, 32), 16);
    /// assert_eq!(SpmvPlan::design_threads_per_row(1000.0, 32), 32);
    /// assert_eq!(SpmvPlan::design_threads_per_row(0.0, 32), 2);
    /// ```
    pub fn design_threads_per_row(mean: f64, warp_size: u32) -> u32 {
        let cap = warp_size.clamp(2, 32);
        let mut tpr = 2;
        while tpr * 2 <= cap && f64::from(tpr * 2) <= mean {
            tpr *= 2;
        }
        tpr
    }

    /// The chosen kernel.
    pub fn kernel(&self) -> SpmvKernel {
        self.kernel
    }

    /// What the user asked for.
    pub fn choice(&self) -> KernelChoice {
        self.choice
    }

    /// The warp size the plan was made for.
    pub fn warp_size(&self) -> u32 {
        self.warp_size
    }

    /// ELL slots per stored entry if the matrix were stored as ELLPACK (`max * nrows / nnz`;
    /// 1 for an empty matrix).
    pub fn ell_padding(&self) -> f64 {
        if self.nnz == 0 {
            1.0
        } else {
            self.max as f64 * self.nrows as f64 / self.nnz as f64
        }
    }

    /// A few lines saying which kernel runs and why, and whether ELLPACK would suit the
    /// matrix better.
    pub fn explain(&self) -> String {
        let mut s = format!(
            "SpMV plan: {} [{}]\n  {} rows, {} entries, mean row {:.2}, max row {}\n  why: {}",
            self.kernel, self.choice, self.nrows, self.nnz, self.mean, self.max, self.reason
        );
        if self.kernel != SpmvKernel::Ell && self.nrows > 0 {
            let pad = self.ell_padding();
            if pad <= Self::ELL_MAX_PADDING {
                s += &format!(
                    "\n  ELL would store {pad:.2} slots per entry: uploading as DeviceEll (spmv --kernel ell) is \
                     likely faster"
                );
            } else {
                s += &format!(
                    "\n  ELL would store {pad:.2} slots per entry (> {}): CSR is the better format",
                    Self::ELL_MAX_PADDING
                );
            }
        }
        s
    }
}

impl fmt::Display for SpmvPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(lengths: &[usize]) -> RowStats {
        RowStats::from_lengths(lengths.iter().copied(), 100)
    }

    /// Enough rows that rule 4 (fill the GPU) does not apply at 2 threads per row.
    const MANY: usize = SpmvPlan::FILL_THREADS / 2 + 1;

    #[test]
    fn short_even_rows_are_scalar() {
        assert_eq!(SpmvPlan::from_stats(&stats(&[5; MANY]), 32).kernel(), SpmvKernel::Scalar);
    }

    #[test]
    fn one_long_row_keeps_the_vector_kernel() {
        let mut l = vec![3; MANY];
        l[7] = 150;
        let p = SpmvPlan::from_stats(&stats(&l), 32);
        assert_eq!(p.kernel(), SpmvKernel::Vector { threads_per_row: 2 });
        assert!(p.explain().contains("longest"), "{}", p.explain());
    }

    #[test]
    fn skewed_rows_get_a_warp() {
        let mut l = vec![3; 1000];
        l[7] = 1500;
        let p = SpmvPlan::from_stats(&stats(&l), 32);
        assert_eq!(p.kernel(), SpmvKernel::Vector { threads_per_row: 32 });
        assert!(p.explain().contains("skewed"), "{}", p.explain());
        // long but uniform rows are not skewed
        assert_eq!(SpmvPlan::from_stats(&stats(&[1000; MANY]), 32).kernel(), SpmvKernel::Vector { threads_per_row: 8 });
    }

    #[test]
    fn vector_threads_follow_the_mean_up_to_eight() {
        assert_eq!(SpmvPlan::from_stats(&stats(&[27; MANY]), 32).kernel(), SpmvKernel::Vector { threads_per_row: 8 });
        assert_eq!(SpmvPlan::from_stats(&stats(&[8; MANY]), 32).kernel(), SpmvKernel::Vector { threads_per_row: 8 });
        assert_eq!(SpmvPlan::from_stats(&stats(&[1000; 10]), 4).kernel(), SpmvKernel::Vector { threads_per_row: 4 });
        let mut l = vec![5; MANY];
        l[0] = 100; // max > 64: not scalar, not skewed
        assert_eq!(SpmvPlan::from_stats(&stats(&l), 32).kernel(), SpmvKernel::Vector { threads_per_row: 4 });
    }

    #[test]
    fn few_rows_get_more_threads() {
        // dense2-like: 2000 rows of 2000; 32 threads per row measured 3.8x faster than 8
        let p = SpmvPlan::from_stats(&stats(&[2000; 2000]), 32);
        assert_eq!(p.kernel(), SpmvKernel::Vector { threads_per_row: 32 });
        assert!(p.explain().contains("only 2000 rows"), "{}", p.explain());
        // short even rows stay scalar however few (rule 1)
        assert_eq!(SpmvPlan::from_stats(&stats(&[4; 1138]), 32).kernel(), SpmvKernel::Scalar);
        // the longest row bounds it: rows of at most 12 get 16 threads
        let mut l = vec![9; 5000];
        l[0] = 70; // max > 64: not scalar
        assert_eq!(SpmvPlan::fill_threads_per_row(&stats(&l), 32), 32);
        assert_eq!(SpmvPlan::fill_threads_per_row(&stats(&[12; 500]), 32), 16);
        // 20000 rows of 1000 (longrows): 8 threads already fill the GPU
        assert_eq!(
            SpmvPlan::from_stats(&stats(&[1000; 20_000]), 32).kernel(),
            SpmvKernel::Vector { threads_per_row: 8 }
        );
        // the warp size still caps it
        assert_eq!(SpmvPlan::from_stats(&stats(&[100; 100]), 16).kernel(), SpmvKernel::Vector { threads_per_row: 16 });
    }

    #[test]
    fn empty_matrices_have_a_plan() {
        assert_eq!(SpmvPlan::from_stats(&stats(&[]), 32).kernel(), SpmvKernel::Scalar);
        assert_eq!(SpmvPlan::from_stats(&stats(&[0; 9]), 32).kernel(), SpmvKernel::Scalar);
    }

    #[test]
    fn forced_kernels_are_checked() {
        let s = stats(&[5; 10]);
        assert_eq!(
            SpmvPlan::with_choice(&s, 32, KernelChoice::VectorTpr(32)).unwrap().kernel(),
            SpmvKernel::Vector { threads_per_row: 32 }
        );
        assert!(matches!(SpmvPlan::with_choice(&s, 16, KernelChoice::VectorTpr(32)), Err(Error::InvalidArgument(_))));
        assert!(matches!(SpmvPlan::with_choice(&s, 32, KernelChoice::VectorTpr(6)), Err(Error::InvalidArgument(_))));
        assert_eq!(SpmvPlan::with_choice(&s, 32, KernelChoice::Ell).unwrap().kernel(), SpmvKernel::Ell);
        assert_eq!(SpmvPlan::with_choice(&s, 32, KernelChoice::Balanced).unwrap().kernel(), SpmvKernel::Balanced);
        assert_eq!(
            SpmvPlan::with_choice(&s, 32, KernelChoice::Vector).unwrap().kernel(),
            SpmvKernel::Vector { threads_per_row: 4 }
        );
    }

    #[test]
    fn choices_parse_and_print() {
        for s in ["auto", "scalar", "vector", "vector:2", "vector:32", "ell", "balanced", "sell"] {
            assert_eq!(s.parse::<KernelChoice>().unwrap().to_string(), s);
        }
        for s in ["", "vector:", "vector:1", "vector:64", "csr", "Vector"] {
            assert!(matches!(s.parse::<KernelChoice>(), Err(Error::InvalidArgument(_))), "{s}");
        }
    }
}
