//! Generated matrices by name (`gen:lap2d:100`): parsing, the size and memory estimate made
//! before anything is built, and the host memory limit.

use super::assemble::csr_bytes;
use super::graph::{self, circuit_entries, geo_grid, permutation, rmat_size, web, GEO_DEGREE};
use super::random::{banded_nnz, capped_lomax_moments, try_banded, try_power_law, try_random_uniform};
use super::stencil::{elasticity_nnz, stencil_nnz};
use crate::format::{check_entry_limit, check_index_limit};
use crate::reorder::Permutation;
use crate::{CsrMatrix, Error, Scalar};

/// The seed when a spec gives none.
const DEFAULT_SEED: u64 = 42;

/// The links per vertex of `communities:N:SIZE` when the name gives none.
const COMMUNITY_DEGREE: usize = 16;

/// The seed of `permute:`'s random numbering.
const PERMUTE_SEED: u64 = 7;

/// A parsed `gen:` name.
pub(super) enum Spec {
    Stencil { points: usize, n: usize },
    Uniform { rows: usize, cols: usize, per_row: usize, seed: u64 },
    PowerLaw { rows: usize, seed: u64 },
    Banded { n: usize, half: usize, seed: u64 },
    Rmat { scale: u32, edge_factor: usize, seed: u64 },
    Circuit { n: usize, seed: u64 },
    Web { n: usize, seed: u64 },
    Geo { n: usize, seed: u64 },
    Elast { n: usize },
    Communities { n: usize, size: usize, degree: usize, seed: u64 },
    GraphLap(Box<Spec>),
    Transpose(Box<Spec>),
    Permute(Box<Spec>),
}

/// What [`Spec::estimate`] finds: dimensions, a bound on the stored entries and the peak
/// host bytes of building the matrix.
#[derive(Debug, Clone, Copy)]
pub(super) struct Estimate {
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: u64,
    pub peak: u64,
}

/// An upper bound, with overwhelming probability, on a sum of many independent random
/// counts of the given mean and variance: the mean plus 8 standard deviations, plus 64.
fn likely_bound(mean: f64, variance: f64) -> u64 {
    (mean + 8.0 * variance.sqrt() + 64.0).ceil() as u64
}

/// The renumbering of an outermost `permute:` in `spec` (see [`numbering`](super::numbering)).
pub(super) fn numbering_of(spec: &str) -> crate::Result<Option<Permutation>> {
    match Spec::parse(spec)? {
        Spec::Permute(inner) => {
            let e = inner.estimate(8)?;
            inner.numbering(e.nrows).map(Some)
        }
        _ => Ok(None),
    }
}

impl Spec {
    /// Parses a name as [`from_spec`](super::from_spec) documents it.
    pub(super) fn parse(spec: &str) -> crate::Result<Spec> {
        let body = spec.strip_prefix("gen:").unwrap_or(spec);
        if let Some(inner) = body.strip_prefix("graphlap:") {
            return Ok(Spec::GraphLap(Box::new(Spec::parse(inner)?)));
        }
        if let Some(inner) = body.strip_prefix("transpose:") {
            return Ok(Spec::Transpose(Box::new(Spec::parse(inner)?)));
        }
        if let Some(inner) = body.strip_prefix("permute:") {
            return Ok(Spec::Permute(Box::new(Spec::parse(inner)?)));
        }
        let mut parts = body.split(':');
        let kind = parts.next().unwrap_or("");
        let nums: Vec<usize> = parts
            .map(|p| {
                p.replace('_', "").parse::<usize>().map_err(|_| {
                    Error::InvalidArgument(format!("generated matrix '{spec}': '{p}' is not a whole number"))
                })
            })
            .collect::<crate::Result<_>>()?;
        let arity = |min: usize, max: usize| -> crate::Result<()> {
            if nums.len() < min || nums.len() > max {
                Err(Error::InvalidArgument(format!(
                    "generated matrix '{spec}': {kind} takes {} parameter(s), got {}",
                    if min == max { min.to_string() } else { format!("{min} to {max}") },
                    nums.len()
                )))
            } else {
                Ok(())
            }
        };
        let seed = |i: usize| nums.get(i).map_or(DEFAULT_SEED, |&s| s as u64);
        Ok(match kind {
            "lap2d" | "lap3d" | "stencil27" => {
                arity(1, 1)?;
                let points = match kind {
                    "lap2d" => 5,
                    "lap3d" => 7,
                    _ => 27,
                };
                Spec::Stencil { points, n: nums[0] }
            }
            "uniform" => {
                arity(3, 4)?;
                if nums[1] == 0 && nums[2] > 0 {
                    return Err(Error::InvalidArgument(format!("generated matrix '{spec}': no columns to draw from")));
                }
                // Draws cost time whether or not they repeat a column: keep them bounded by
                // the matrix size.
                if nums[2] > nums[1] {
                    return Err(Error::InvalidArgument(format!(
                        "generated matrix '{spec}': {} entries per row, but only {} columns",
                        nums[2], nums[1]
                    )));
                }
                Spec::Uniform { rows: nums[0], cols: nums[1], per_row: nums[2], seed: seed(3) }
            }
            "powerlaw" => {
                arity(1, 2)?;
                Spec::PowerLaw { rows: nums[0], seed: seed(1) }
            }
            "longrows" => {
                arity(1, 2)?;
                let cols = nums[0].saturating_mul(10);
                Spec::Uniform { rows: nums[0], cols, per_row: 1000.min(cols), seed: seed(1) }
            }
            "banded" => {
                arity(2, 3)?;
                Spec::Banded { n: nums[0], half: nums[1], seed: seed(2) }
            }
            "rmat" => {
                arity(2, 3)?;
                // A scale past 64 is as impossible as 64: rmat_size refuses both.
                Spec::Rmat { scale: nums[0].min(64) as u32, edge_factor: nums[1], seed: seed(2) }
            }
            "circuit" | "web" | "geo" => {
                arity(1, 2)?;
                let (n, seed) = (nums[0], seed(1));
                match kind {
                    "circuit" => Spec::Circuit { n, seed },
                    "web" => Spec::Web { n, seed },
                    _ => Spec::Geo { n, seed },
                }
            }
            "communities" => {
                arity(2, 4)?;
                if nums[0] > 0 && nums[1] == 0 {
                    return Err(Error::InvalidArgument(format!(
                        "generated matrix '{spec}': communities of 0 vertices"
                    )));
                }
                let degree = nums.get(2).copied().unwrap_or(COMMUNITY_DEGREE);
                Spec::Communities { n: nums[0], size: nums[1], degree, seed: seed(3) }
            }
            "elast" => {
                arity(1, 1)?;
                Spec::Elast { n: nums[0] }
            }
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "unknown generated matrix '{spec}': expected lap2d:N, lap3d:N, stencil27:N, \
                     uniform:ROWS:COLS:PER_ROW, powerlaw:ROWS, longrows:ROWS, banded:N:HALF, rmat:SCALE:EDGEFACTOR, \
                     circuit:N, web:N, geo:N, elast:N, communities:N:SIZE, graphlap:SPEC, transpose:SPEC or permute:SPEC"
                )))
            }
        })
    }

    /// Checks the sizes against [`INDEX_LIMIT`](crate::INDEX_LIMIT) and estimates the peak
    /// host bytes of building the matrix with values of `value_bytes` bytes, without
    /// building anything.
    ///
    /// Exact where the entry count has a formula (stencils, `banded`, `elast`) or is fixed
    /// by the draws (`uniform`, `longrows`: the draws bound it; `rmat`: the drawn edges do).
    /// Where the count is random (`powerlaw`, `web`, `geo`, `circuit`), the bound is the
    /// expected count plus 8 standard deviations: exceeded with negligible probability.
    /// `graphlap` takes the inner pattern as it is when it is symmetric with its diagonal,
    /// else twice its size plus the diagonal, its most.
    pub(super) fn estimate(&self, value_bytes: u64) -> crate::Result<Estimate> {
        let square = |n: usize, nnz: u64, extra: u64| Estimate {
            nrows: n,
            ncols: n,
            nnz,
            peak: csr_bytes(n as u64, nnz, value_bytes).saturating_add(extra),
        };
        Ok(match *self {
            Spec::Stencil { points, n } => {
                let side = n.checked_mul(n);
                let rows = if points == 5 { side } else { side.and_then(|sq| sq.checked_mul(n)) };
                let rows = rows.unwrap_or(usize::MAX);
                check_index_limit("rows", rows)?;
                let nnz = stencil_nnz(points, n).unwrap_or(usize::MAX);
                check_entry_limit("stored entries", nnz)?;
                square(rows, nnz as u64, 0)
            }
            Spec::Communities { n, degree, .. } => {
                check_index_limit("rows", n)?;
                let nnz = n.saturating_mul(degree.min(n));
                check_entry_limit("stored entries", nnz)?;
                square(n, nnz as u64, 0)
            }
            Spec::Uniform { rows, cols, per_row, .. } => {
                check_index_limit("rows", rows)?;
                check_index_limit("columns", cols)?;
                let nnz = rows.saturating_mul(per_row.min(cols));
                check_entry_limit("stored entries", nnz)?;
                Estimate {
                    nrows: rows,
                    ncols: cols,
                    nnz: nnz as u64,
                    peak: csr_bytes(rows as u64, nnz as u64, value_bytes),
                }
            }
            Spec::PowerLaw { rows, .. } => {
                check_index_limit("rows", rows)?;
                // The entry count is only known once the rows are drawn; refuse at once a row
                // count whose expected count (12.8 per row) is past the limit.
                check_entry_limit("stored entries (expected)", rows.saturating_mul(12))?;
                let cap = 20_000.min(rows).max(1);
                let (mean, var) = capped_lomax_moments(1.2, 3.0, cap);
                let nnz = likely_bound(rows as f64 * mean, rows as f64 * var).min(rows as u64 * cap as u64);
                square(rows, nnz, 0)
            }
            Spec::Banded { n, half, .. } => {
                check_index_limit("rows", n)?;
                let nnz = banded_nnz(n, half);
                check_entry_limit("stored entries", nnz)?;
                square(n, nnz as u64, 0)
            }
            Spec::Rmat { scale, edge_factor, .. } => {
                let (n, m) = rmat_size(scale, edge_factor)?;
                // the final matrix (bounded with every drawn edge kept), or the permutation
                // and the columns of every drawn edge while drawing, plus the threads' buffers
                let e = square(n, m as u64, 0);
                Estimate { peak: e.peak.max(super::kron::rmat_peak_bytes(scale, edge_factor, value_bytes)), ..e }
            }
            Spec::Circuit { n, seed } => {
                check_index_limit("rows", n)?;
                let (mean, var, pins) = circuit_entries(n, seed);
                check_entry_limit("stored entries (expected)", mean as usize)?;
                let e = square(n, likely_bound(mean, var), 0);
                // Indexing the nets: their pins, the sort keys (8 bytes a pin) and the index
                // (rows and pins); then the pins and the index beside the pattern.
                let (n, pins) = (n as u64 + 1, pins as u64);
                let indexing = 16 * pins + 4 * n;
                let pattern = 8 * pins + 4 * n + 4 * n + 4 * e.nnz;
                Estimate { peak: e.peak.max(indexing).max(pattern), ..e }
            }
            Spec::Web { n, .. } => {
                check_index_limit("rows", n)?;
                check_entry_limit("stored entries (expected)", (n as f64 * 12.5) as usize)?;
                let (mean, var) = match n {
                    0 | 1 => (0.0, 0.0),
                    _ => capped_lomax_moments(web::SHAPE, web::SCALE, web::MAX_DEGREE.min(n - 1)),
                };
                square(n, likely_bound(n as f64 * mean, n as f64 * var), 0)
            }
            Spec::Geo { n, .. } => {
                check_index_limit("rows", n)?;
                let per_row = GEO_DEGREE + 1.0;
                check_entry_limit("stored entries (expected)", (n as f64 * per_row) as usize)?;
                // Neighbour counts are not independent: a generous variance, 4 per^2 per row.
                let nnz = likely_bound(n as f64 * per_row, 4.0 * n as f64 * per_row * per_row);
                let cells = if n == 0 { 0 } else { geo_grid(n).0 as u64 };
                let e = square(n, nnz.min(n as u64 * n as u64), 0);
                // The points (16 bytes each) and the cell starts, beside the sort keys (8
                // bytes a point), then beside the pattern.
                let n = n as u64;
                let side = 16 * n + 4 * (cells * cells + 1);
                let pattern = 8 * (n + 1) + 4 * e.nnz;
                Estimate { peak: e.peak.max(side + 8 * n).max(side + pattern), ..e }
            }
            Spec::Elast { n } => {
                let rows = n.checked_mul(n).and_then(|sq| sq.checked_mul(n)).and_then(|c| c.checked_mul(3));
                check_index_limit("rows", rows.unwrap_or(usize::MAX))?;
                let nnz = elasticity_nnz(n).unwrap_or(usize::MAX);
                check_entry_limit("stored entries", nnz)?;
                square(rows.unwrap_or(0), nnz as u64, 0)
            }
            Spec::GraphLap(ref inner) => {
                // The inner matrix is built with f32 values, freed at once.
                let i = inner.estimate(4)?;
                if i.nrows != i.ncols {
                    return Err(Error::DimensionMismatch {
                        op: "graphlap: columns of the inner matrix (it must be square)",
                        expected: i.nrows,
                        found: i.ncols,
                    });
                }
                let n = i.nrows as u64;
                let nnz = if inner.symmetric_with_diagonal() {
                    i.nnz
                } else {
                    i.nnz.saturating_mul(2).saturating_add(n).min(n.saturating_mul(n))
                };
                let pattern = 8 * (n + 1) + 4 * i.nnz; // of the inner matrix, and of its transpose
                let merging = (2 * pattern).saturating_add(8 * (n + 1) + 4 * nnz);
                let e = square(i.nrows, nnz, 0);
                Estimate { peak: e.peak.max(i.peak).max(merging), ..e }
            }
            Spec::Transpose(ref inner) => {
                let i = inner.estimate(value_bytes)?;
                // the inner matrix and its transpose side by side, plus the counting sort's
                // offsets and cursors (8 bytes a column each) and its tasks' counts (8 bytes a
                // column a task, the tasks at most one per 2 entries a column: at most 4 bytes
                // an entry, one task's worth when serial)
                let cols = i.ncols as u64;
                let counts = (8 * cols).max(4 * i.nnz);
                let both = csr_bytes(i.nrows as u64, i.nnz, value_bytes)
                    .saturating_add(csr_bytes(cols, i.nnz, value_bytes))
                    .saturating_add(16 * cols + 8)
                    .saturating_add(counts);
                Estimate { nrows: i.ncols, ncols: i.nrows, nnz: i.nnz, peak: i.peak.max(both) }
            }
            Spec::Permute(ref inner) => {
                let i = inner.estimate(value_bytes)?;
                if i.nrows != i.ncols {
                    return Err(Error::DimensionMismatch {
                        op: "permute: columns of the inner matrix (it must be square)",
                        expected: i.nrows,
                        found: i.ncols,
                    });
                }
                // the inner matrix and its renumbered copy side by side, plus the
                // permutation both ways (8 bytes a row)
                let csr = csr_bytes(i.nrows as u64, i.nnz, value_bytes);
                let both = csr.saturating_mul(2).saturating_add(8 * i.nrows as u64);
                Estimate { peak: i.peak.max(both), ..i }
            }
        })
    }

    /// The rows of one node, which a `permute:` renumbering keeps together and in order:
    /// 3 for `elast` (the displacements of a grid point), else 1.
    fn block(&self) -> usize {
        match self {
            Spec::Elast { .. } => 3,
            Spec::Permute(inner) => inner.block(),
            _ => 1,
        }
    }

    /// The renumbering `permute:` applies to a matrix of `n` rows: nodes of
    /// [`block`](Self::block) rows in a seeded random order.
    fn numbering(&self, n: usize) -> crate::Result<Permutation> {
        let block = if n % self.block() == 0 { self.block() } else { 1 };
        let nodes = permutation(n / block, PERMUTE_SEED);
        let order = nodes.iter().flat_map(|&node| (0..block).map(move |d| node as usize * block + d)).collect();
        Permutation::from_order(order)
    }

    /// Whether the pattern is symmetric with every diagonal entry stored (so `graphlap`
    /// keeps it as it is).
    fn symmetric_with_diagonal(&self) -> bool {
        matches!(
            self,
            Spec::Stencil { .. }
                | Spec::Banded { .. }
                | Spec::Circuit { .. }
                | Spec::Geo { .. }
                | Spec::Elast { .. }
                | Spec::GraphLap(_)
        ) || matches!(self, Spec::Transpose(inner) | Spec::Permute(inner) if inner.symmetric_with_diagonal())
    }

    /// Builds the matrix; [`estimate`](Self::estimate) has checked the sizes.
    pub(super) fn build<T: Scalar>(&self) -> crate::Result<CsrMatrix<T>> {
        Ok(match *self {
            Spec::Stencil { points: 5, n } => super::laplacian_2d(n),
            Spec::Stencil { points: 7, n } => super::laplacian_3d_7pt(n),
            Spec::Stencil { n, .. } => super::laplacian_3d_27pt(n),
            Spec::Uniform { rows, cols, per_row, seed } => try_random_uniform(rows, cols, per_row, seed)?,
            Spec::PowerLaw { rows, seed } => try_power_law(rows, rows, 1.2, 3.0, 20_000, seed)?,
            Spec::Banded { n, half, seed } => try_banded(n, half, seed)?,
            Spec::Rmat { scale, edge_factor, seed } => graph::rmat(scale, edge_factor, seed)?,
            Spec::Circuit { n, seed } => graph::circuit(n, seed)?,
            Spec::Web { n, seed } => graph::web_graph(n, seed)?,
            Spec::Geo { n, seed } => graph::random_geometric(n, seed)?,
            Spec::Elast { n } => super::elasticity_3d(n)?,
            Spec::Communities { n, size, degree, seed } => super::communities(n, size, degree, seed)?,
            Spec::GraphLap(ref inner) => graph::graph_laplacian(inner.build::<f32>()?)?,
            Spec::Transpose(ref inner) => inner.build::<T>()?.transpose(),
            Spec::Permute(ref inner) => {
                let a = inner.build::<T>()?;
                inner.numbering(a.nrows())?.permute_matrix(&a)?
            }
        })
    }
}

/// Parses a byte count: a number (decimals allowed) with an optional unit `K`, `M`, `G` or
/// `T` (powers of 1024; `KB`, `KiB` and lower case also read), or `B`.
pub(super) fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = (s[..split].trim(), s[split..].trim().to_ascii_lowercase());
    let num: f64 = num.parse().ok()?;
    let unit = unit.strip_suffix("ib").or_else(|| unit.strip_suffix('b')).unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    let bytes = num * (1u64 << shift) as f64;
    (num.is_finite() && bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// The host memory available to this process, in bytes: `MemAvailable` of `/proc/meminfo`,
/// lowered to what the cgroup (v2) memory limit leaves (`memory.max - memory.current`)
/// where one is set. `None` where neither can be read (not Linux).
pub fn available_host_memory() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let meminfo = read("/proc/meminfo").and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    });
    let number = |path: &str| read(path).and_then(|t| t.trim().parse::<u64>().ok());
    let cgroup = number("/sys/fs/cgroup/memory.max")
        .map(|max| max.saturating_sub(number("/sys/fs/cgroup/memory.current").unwrap_or(0)));
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The environment variable that sets the host memory limit of [`from_spec`](super::from_spec).
pub const MEM_LIMIT_VAR: &str = "SPGPU_MEM_LIMIT";

/// The host memory limit [`from_spec`](super::from_spec) enforces: `SPGPU_MEM_LIMIT` when
/// set (bytes, with an optional `K`, `M`, `G` or `T` suffix, powers of 1024: `64G`; it may
/// be above or below what is available), else [`available_host_memory`], else none.
///
/// # Errors
///
/// [`Error::InvalidArgument`] when `SPGPU_MEM_LIMIT` is set but is not a byte count.
pub fn host_memory_limit() -> crate::Result<Option<u64>> {
    match std::env::var(MEM_LIMIT_VAR) {
        Ok(s) if !s.trim().is_empty() => parse_bytes(&s).map(Some).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{MEM_LIMIT_VAR}='{s}': expected a number of bytes with an optional K, M, G or T suffix, such as 64G"
            ))
        }),
        Err(std::env::VarError::NotUnicode(s)) => {
            Err(Error::InvalidArgument(format!("{MEM_LIMIT_VAR}={s:?} is not a number of bytes")))
        }
        _ => Ok(available_host_memory()),
    }
}

/// Parses, checks the sizes, compares the estimate with `limit` and builds.
pub(super) fn build_checked<T: Scalar>(
    spec: &str,
    limit: impl FnOnce() -> crate::Result<Option<u64>>,
    hint: &str,
) -> crate::Result<CsrMatrix<T>> {
    let parsed = Spec::parse(spec)?;
    let estimate = parsed.estimate(T::BYTES as u64)?;
    if let Some(available) = limit()? {
        if estimate.peak > available {
            let body = spec.strip_prefix("gen:").unwrap_or(spec);
            return Err(Error::InsufficientMemory {
                what: format!("gen:{body} ({} CSR)", T::NAME),
                memory: "host",
                needed: estimate.peak,
                available,
                hint: hint.to_string(),
            });
        }
    }
    parsed.build()
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("123"), Some(123));
        assert_eq!(parse_bytes(" 64G "), Some(64 << 30));
        assert_eq!(parse_bytes("64g"), Some(64 << 30));
        assert_eq!(parse_bytes("64GiB"), Some(64 << 30));
        assert_eq!(parse_bytes("64 GB"), Some(64 << 30));
        assert_eq!(parse_bytes("1.5K"), Some(1536));
        assert_eq!(parse_bytes("512M"), Some(512 << 20));
        assert_eq!(parse_bytes("2T"), Some(2 << 40));
        assert_eq!(parse_bytes("7B"), Some(7));
        for bad in ["", "G", "12X", "-5", "1e3", "99999999999T", "1.2.3M", "inf"] {
            assert_eq!(parse_bytes(bad), None, "{bad}");
        }
    }
}
