//! Seeded matrix generators for tests and benchmarks.
//!
//! - Grids: the Laplacian stencils ([`laplacian_2d`], [`laplacian_3d_7pt`],
//!   [`laplacian_3d_27pt`]) and 3-DOF elasticity ([`elasticity_3d`]).
//! - Random rows: [`random_uniform`], [`power_law`], [`banded`].
//! - Graphs of the classes real collections hold: R-MAT/Kronecker ([`rmat`]), circuits
//!   ([`circuit`]), web crawls ([`web_graph`]), meshes ([`random_geometric`]), networks
//!   with communities ([`communities`]), and the
//!   shifted Laplacian of any of them ([`graph_laplacian`]).
//! - By name, as the command line and the benchmarks write them: [`from_spec`], with the
//!   size and host memory checked before anything is built ([`estimate_host_bytes`]).
//!
//! Stencil matrices (Laplacians) are symmetric positive definite (Dirichlet boundary: the
//! diagonal equals the full stencil weight on every row, boundary rows included). Random
//! generators take a seed and give the same matrix for the same arguments on every machine
//! and any number of threads: each row (or edge, or point) draws from its own generator,
//! seeded from the seed and its index.
//!
//! Generation is parallel (rayon) and its peak memory stays near the final matrix's size:
//! rows are counted in a first pass and written in a second into arrays allocated once at
//! their final size.

mod assemble;
mod graph;
mod kron;
mod random;
mod spec;
mod stencil;

pub use graph::{circuit, graph_laplacian, random_geometric, rmat, rmat_with_stats, web_graph, RmatStats, GEO_DEGREE};
pub use random::{banded, communities, power_law, random_uniform, COMMUNITY_INSIDE};
pub use spec::{available_host_memory, host_memory_limit, MEM_LIMIT_VAR};
pub use stencil::{
    elasticity_3d, elasticity_nnz, laplacian_2d, laplacian_3d_27pt, laplacian_3d_7pt, rigid_body_modes, stencil_nnz,
    ELASTICITY_COUPLING,
};

use crate::{CsrMatrix, Scalar};

/// Builds a generated matrix from its name, as the command line and the benchmark suite
/// write it (the `gen:` prefix is optional), after checking its size against
/// [`INDEX_LIMIT`](crate::INDEX_LIMIT) and its estimated peak host memory
/// ([`estimate_host_bytes`]) against [`host_memory_limit`]: the environment variable
/// `SPGPU_MEM_LIMIT` when set (bytes, optional `K`/`M`/`G`/`T` suffix: `SPGPU_MEM_LIMIT=64G`
/// raises or lowers the limit), else the memory available (Linux: `MemAvailable` of
/// `/proc/meminfo`, or the cgroup's limit if lower; elsewhere no check).
///
/// | name | matrix |
/// |---|---|
/// | `lap2d:N` | [`laplacian_2d`]`(N)`: `N^2` rows |
/// | `lap3d:N` | [`laplacian_3d_7pt`]`(N)`: `N^3` rows |
/// | `stencil27:N` | [`laplacian_3d_27pt`]`(N)`: `N^3` rows |
/// | `uniform:ROWS:COLS:PER_ROW[:SEED]` | [`random_uniform`], `PER_ROW <= COLS` |
/// | `powerlaw:ROWS[:SEED]` | [`power_law`]`(ROWS, ROWS, 1.2, 3.0, 20000, SEED)`, the anchors' `powerlaw_1M` at 1000000 |
/// | `longrows:ROWS[:SEED]` | [`random_uniform`]`(ROWS, 10 * ROWS, 1000, SEED)`, the anchors' `longrows_20k_x1000` at 20000 |
/// | `banded:N:HALF[:SEED]` | [`banded`]`(N, HALF, SEED)` |
/// | `rmat:SCALE:EDGEFACTOR[:SEED]` | [`rmat`]: Graph500 R-MAT graph, `2^SCALE` rows, `EDGEFACTOR * 2^SCALE` edges drawn (typical: `rmat:21:16`, `rmat:22:16`) |
/// | `circuit:N[:SEED]` | [`circuit`]: short rows near the diagonal and `N / 50000` nets of 20000-80000 entries (typical: `circuit:3000000`) |
/// | `web:N[:SEED]` | [`web_graph`]: power-law out-degrees, mostly local links (typical: `web:4000000`) |
/// | `geo:N[:SEED]` | [`random_geometric`]: random geometric graph in the unit square, 12 neighbours on average, SPD (typical: `geo:4000000`) |
/// | `elast:N` | [`elasticity_3d`]: 3-DOF elasticity on an `N^3` grid, `3 N^3` rows, 81 entries per interior row, SPD (typical: `elast:64`) |
/// | `communities:N:SIZE[:DEGREE[:SEED]]` | [`communities`]: `N` vertices in communities of `SIZE`, `DEGREE` (default 16) links each, 90% inside (typical: `permute:communities:4000000:2000`) |
/// | `graphlap:SPEC` | [`graph_laplacian`] of the matrix `SPEC` (built with f32 values): `L + I`, SPD (`graphlap:rmat:20:16`) |
/// | `permute:SPEC` | `P A P^T` for the square matrix `SPEC` and a seeded random renumbering `P` ([`numbering`]): the same system numbered at random, as a mesh or graph from a file often is (`permute:lap3d:150`) |
/// | `transpose:SPEC` | the transpose of the matrix `SPEC`: `transpose:powerlaw:4000000` has even rows and a few columns of up to 20000 entries, the in-links of a graph |
///
/// The seed defaults to 42.
///
/// # Errors
///
/// - [`Error::InvalidArgument`](crate::Error::InvalidArgument) for an unknown kind, a wrong
///   number of parameters, a parameter that is not a number, or an unreadable
///   `SPGPU_MEM_LIMIT`;
/// - [`FormatError::TooLarge`](crate::FormatError::TooLarge) for a matrix past the index
///   limit (sizes are computed without overflow: `lap2d:4294967296` is refused, not
///   wrapped);
/// - [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) for `graphlap` of a
///   matrix that is not square;
/// - [`Error::InsufficientMemory`](crate::Error::InsufficientMemory) when the estimate
///   exceeds the limit, with both figures.
///
/// All of them before anything is allocated.
///
/// # Example
///
/// ```
/// let a = spgpu::gen::from_spec::<f64>("gen:lap2d:10")?;
/// assert_eq!((a.nrows(), a.nnz()), (100, 460));
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn from_spec<T: Scalar>(spec: &str) -> crate::Result<CsrMatrix<T>> {
    spec::build_checked(spec, host_memory_limit, "set SPGPU_MEM_LIMIT to raise the limit")
}

/// The renumbering `P` of a `permute:SPEC` name, outermost: `from_spec("permute:SPEC")` is
/// `P A P^T` for `A = from_spec("SPEC")`, and a vector that goes with `A` (a right-hand side,
/// a known solution, rigid-body modes) goes with the permuted matrix as
/// [`Permutation::permute_vector`](crate::reorder::Permutation::permute_vector) of it.
/// `None` for a name that is not `permute:`. The numbering is seeded (the same on every
/// machine) and keeps the rows of a node together: the 3 displacements of an `elast` grid
/// point stay consecutive, so a block size of 3 still holds.
///
/// # Errors
///
/// As [`estimate_host_bytes`] for an invalid name.
///
/// # Example
///
/// ```
/// use spgpu::gen;
/// let a = gen::from_spec::<f64>("lap2d:20")?;
/// let pa = gen::from_spec::<f64>("permute:lap2d:20")?;
/// let p = gen::numbering("permute:lap2d:20")?.expect("a permute: name");
/// assert_eq!(p.permute_matrix(&a)?.values(), pa.values());
/// assert!(gen::numbering("lap2d:20")?.is_none());
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn numbering(spec: &str) -> crate::Result<Option<crate::reorder::Permutation>> {
    spec::numbering_of(spec)
}

/// [`from_spec`] with the caller's host memory limit in bytes instead of
/// [`host_memory_limit`]'s; `None` builds without a memory check (the index limit is still
/// checked).
///
/// # Errors
///
/// As [`from_spec`]; `SPGPU_MEM_LIMIT` is not read.
///
/// # Example
///
/// ```
/// use spgpu::{gen, Error};
/// // lap2d:1000 has 1,000,000 rows and 4,996,000 entries: about 61 MiB in f64.
/// match gen::from_spec_with_limit::<f64>("lap2d:1000", Some(16 << 20)) {
///     Err(Error::InsufficientMemory { needed, available, .. }) => {
///         assert_eq!((needed, available), (8 * 1_000_001 + 12 * 4_996_000, 16 << 20))
///     }
///     other => panic!("expected InsufficientMemory, got {other:?}"),
/// }
/// assert_eq!(gen::from_spec_with_limit::<f64>("lap2d:10", Some(16 << 20))?.nrows(), 100);
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn from_spec_with_limit<T: Scalar>(spec: &str, limit: Option<u64>) -> crate::Result<CsrMatrix<T>> {
    spec::build_checked(spec, || Ok(limit), "raise the memory limit")
}

/// The peak host bytes of building `spec` with [`from_spec`] and values of type `T`,
/// derived from the spec's parameters without building anything (microseconds).
///
/// The peak is the final CSR arrays (`8 (nrows + 1)` bytes of offsets and
/// `4 + size_of::<T>()` per entry) plus what a generator holds beside them (R-MAT's
/// permutation and row cursors, 12 bytes per row, while it draws; a geometric graph's points; a graph
/// Laplacian's input pattern and its transpose). The entry count is exact where a formula
/// gives it (stencils, `banded`, `elast`), bounded by the draws (`uniform`, `longrows`,
/// `rmat`), and for the random counts of `powerlaw`, `web`, `geo` and `circuit` the
/// expected count plus 8 standard deviations, exceeded with negligible probability;
/// `graphlap` assumes its inner matrix's pattern doubles when symmetrized (its most) unless
/// the inner kind is symmetric with its diagonal.
///
/// # Errors
///
/// As [`from_spec`], less `InsufficientMemory`: an invalid name, or dimensions past the
/// index limit.
///
/// # Example
///
/// ```
/// use spgpu::gen;
/// // 400M rows and 2G entries: 27.2 GB, refused up front on a smaller machine.
/// assert_eq!(gen::estimate_host_bytes::<f64>("lap2d:20000")?, 8 * 400_000_001 + 12 * 1_999_920_000);
/// assert_eq!(gen::estimate_host_bytes::<f32>("lap2d:10")?, 8 * 101 + 8 * 460);
/// # Ok::<(), spgpu::Error>(())
/// ```
pub fn estimate_host_bytes<T: Scalar>(spec: &str) -> crate::Result<u64> {
    Ok(spec::Spec::parse(spec)?.estimate(T::BYTES as u64)?.peak)
}
