//! The setup steps of smoothed-aggregation AMG on the device, step for step those of
//! [`host_setup`](super::host_setup): strength of connection, MIS-2 aggregation, the
//! tentative prolongator, prolongator smoothing and the Galerkin product, in `f64` with
//! 32-bit indices (kernels in `ptx/amg.cu`, launchers in `src/gpu/kernels/amg.rs`).
//!
//! Every integer result (the strength pattern, the MIS-2 states, the aggregates, the
//! patterns of `P`, `R` and `A_c`) equals the host's, and so does every value, bit for bit:
//! each value is computed by the same operations in the same order as on the host, and the
//! kernels use `__dmul_rn` / `__dadd_rn` / `__dsub_rn`, which the compiler never fuses into
//! a multiply-add. There are no floating-point atomics; the integer atomics (column counts
//! and the cursors of a transpose) only choose positions that are then sorted by a unique
//! key, so two runs are bit-identical.
//!
//! - Offsets come from an exclusive scan of per-row counts (a count pass, the scan, a fill
//!   pass); the scan's 64-bit total is read back and refused past
//!   [`INDEX_LIMIT`](crate::INDEX_LIMIT) before anything is sized from it.
//! - MIS-2 runs synchronous rounds of three kernels (two max propagations of the tuples
//!   `(state, h(i), i)`, then the update) and reads a device flag, "a node is still
//!   undecided", after every other round.
//! - The tentative prolongator for one near-nullspace vector (`k == 1`) sums each
//!   aggregate's squares in increasing DOF order: the DOFs are grouped by aggregate by a
//!   transpose (counting sort) whose rows are sorted. For `k > 1` the thin QR runs on the
//!   host ([`host_setup::tentative`](super::host_setup::tentative)) and its result is
//!   uploaded.
//! - `C = A B` is a count pass and a numeric pass, a group of threads per row of `C`, in
//!   hash tables in shared memory: the count inserts the row's columns with integer
//!   compare-and-swap and counts them; the numeric pass inserts them again and adds each
//!   row's products in the host's order (entries of `A`'s row in order, for each the
//!   entries of `B`'s row in order, the group synchronizing between two entries of `A`),
//!   then writes each column at its rank, sorted. A row whose columns do not fit in its
//!   group's share gets a hash table of its own in global memory (a power of two at least
//!   twice the most distinct columns it can have: its products, at most `B`'s columns)
//!   and three global passes: symbolic, sorted columns, numeric (a binary search of each
//!   product's column). Only those rows take global table space.
//! - The spectral radius for the smoothing weight is an argument: the caller estimates it
//!   (the host's [`spectral_radius`](super::host_setup::spectral_radius), or the same
//!   20-step power method with the device SpMV).
//!
//! Before each step allocates, its device memory is estimated and compared with
//! [`Context::available_memory`]; a step that would not fit is refused with
//! [`Error::InsufficientMemory`] and the estimate.

use super::host_setup;
#[cfg(test)]
use super::host_setup::Pattern;
use crate::gpu::kernels::amg::{self as kernels, CsrView, DeviceArray, MAX_BLOCK, NONE};
use crate::gpu::Context;
use crate::solver::CgError;
use crate::{CsrMatrix, Error, Result, INDEX_LIMIT};

/// A CSR matrix on the device in the setup's layout: `nrows + 1` 32-bit offsets, sorted
/// 32-bit columns, `f64` values.
pub(crate) struct DeviceCsrParts {
    /// Rows.
    pub(crate) nrows: usize,
    /// Columns.
    pub(crate) ncols: usize,
    /// `nrows + 1` offsets into `cols` and `vals`.
    pub(crate) offsets: DeviceArray<u32>,
    /// The columns of each row, sorted.
    pub(crate) cols: DeviceArray<u32>,
    /// The values.
    pub(crate) vals: DeviceArray<f64>,
}

/// A sparsity pattern on the device (the strength graph): `nrows + 1` offsets, sorted columns.
pub(crate) struct DevicePattern {
    /// Rows (nodes).
    pub(crate) nrows: usize,
    /// `nrows + 1` offsets into `cols`.
    pub(crate) offsets: DeviceArray<u32>,
    /// The columns of each row, sorted.
    pub(crate) cols: DeviceArray<u32>,
}

/// Bytes of `n` elements of `U`.
fn bytes<U>(n: usize) -> u64 {
    (n as u64).saturating_mul(std::mem::size_of::<U>() as u64)
}

/// Refuses a step whose device memory (`needed` bytes) exceeds what is free.
fn check_memory(ctx: &Context, what: impl FnOnce() -> String, needed: u64) -> Result<()> {
    let available = ctx.available_memory()?;
    if needed > available {
        return Err(Error::InsufficientMemory {
            what: what(),
            memory: "device",
            needed,
            available,
            hint: "run the AMG setup on the host, use a device with more memory, or free device memory first".into(),
        });
    }
    Ok(())
}

/// The words of the error a count past the device setup's 32-bit indices gets.
const PAST_INDEX_LIMIT: &str = "exceed the 32-bit index limit";

/// A count that a device array of 32-bit indices must hold.
fn check_index(what: &str, n: u64) -> Result<usize> {
    if n > INDEX_LIMIT as u64 {
        return Err(Error::InvalidArgument(format!(
            "the AMG setup on the device: {what} = {n} {PAST_INDEX_LIMIT} {INDEX_LIMIT}"
        )));
    }
    Ok(n as usize)
}

/// Whether `e` is a device setup's count past its 32-bit indices (a product's hash tables
/// on a matrix with many entries per row, such as 3-DOF elasticity), which the host setup,
/// with 64-bit counts, can still build.
pub(crate) fn past_index_limit(e: &CgError) -> bool {
    matches!(e, CgError::Backend(Error::InvalidArgument(m)) if m.contains(PAST_INDEX_LIMIT))
}

/// `counts` (`n + 1` elements, the first `n` counts) scanned in place into offsets; returns
/// their total, refused past the index limit.
fn scan(ctx: &'static Context, counts: &mut DeviceArray<u32>, what: &str) -> Result<usize> {
    let mut total = DeviceArray::<u64>::zeroed(ctx, 1, "the AMG scan total")?;
    kernels::scan_in_place(ctx, counts, &mut total)?;
    let t = total.to_vec("the AMG scan total")?[0];
    check_index(what, t)
}

/// `Err(DimensionMismatch)` unless `found == expected`.
fn check_len(op: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::DimensionMismatch { op, expected, found })
    }
}

/// Reads a one-element flag.
fn read_flag(flag: &DeviceArray<u32>, what: &str) -> Result<bool> {
    Ok(flag.to_vec(what)?[0] != 0)
}

impl DeviceCsrParts {
    /// Uploads a host matrix.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] past the 32-bit index; [`Error::InsufficientMemory`] when
    /// it does not fit; [`Error::Cuda`].
    pub(crate) fn upload(ctx: &'static Context, a: &CsrMatrix<f64>) -> Result<Self> {
        check_index("the stored entries", a.nnz() as u64)?;
        check_memory(
            ctx,
            || format!("the AMG setup's copy of a {} x {} matrix of {} entries", a.nrows(), a.ncols(), a.nnz()),
            bytes::<u32>(a.nrows() + 1) + bytes::<u32>(a.nnz()) + bytes::<f64>(a.nnz()),
        )?;
        // every offset is at most nnz, checked above to fit 32 bits; narrowed in parallel
        // pieces on the way (a serial copy took 8.7 ms of 4M rows on the H200 host)
        let offsets = a.row_offsets();
        Ok(DeviceCsrParts {
            nrows: a.nrows(),
            ncols: a.ncols(),
            offsets: DeviceArray::from_fn(ctx, offsets.len(), "the AMG matrix offsets", |i| offsets[i] as u32)?,
            cols: DeviceArray::from_slice(ctx, a.col_indices(), "the AMG matrix columns")?,
            vals: DeviceArray::from_slice(ctx, a.values(), "the AMG matrix values")?,
        })
    }

    /// Stored entries.
    pub(crate) fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// The arrays as the launchers take them.
    pub(crate) fn view(&self) -> CsrView<'_> {
        CsrView {
            nrows: self.nrows,
            ncols: self.ncols,
            offsets: &self.offsets,
            cols: &self.cols,
            vals: Some(&self.vals),
        }
    }

    /// A copy on the host, validated.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when a copy fails; [`Error::Format`] if the device arrays broke a CSR
    /// invariant (a bug).
    pub(crate) fn download(&self) -> Result<CsrMatrix<f64>> {
        let offsets: Vec<u64> = self.offsets.to_vec("the AMG matrix offsets")?.into_iter().map(u64::from).collect();
        let cols = self.cols.to_vec("the AMG matrix columns")?;
        let vals = self.vals.to_vec("the AMG matrix values")?;
        Ok(CsrMatrix::try_from_parts(self.nrows, self.ncols, offsets, cols, vals)?)
    }
}

impl DevicePattern {
    /// The arrays as the launchers take them (a square pattern without values).
    pub(crate) fn view(&self) -> CsrView<'_> {
        CsrView { nrows: self.nrows, ncols: self.nrows, offsets: &self.offsets, cols: &self.cols, vals: None }
    }

    /// A copy on the host.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when a copy fails.
    #[cfg(test)]
    pub(crate) fn download(&self) -> Result<Pattern> {
        let offsets = self.offsets.to_vec("the strength offsets")?.into_iter().map(u64::from).collect();
        Ok(Pattern { offsets, cols: self.cols.to_vec("the strength columns")? })
    }
}

/// Step 1, strength of connection, as [`host_setup::strength`]: with `block_size == 1` on
/// the rows, with `block_size > 1` (at most 8 on the device) on the node graph.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for a block size above 8 or not dividing the rows, or
/// counts past the index limit; [`Error::InsufficientMemory`]; [`Error::Cuda`].
pub(crate) fn strength(
    ctx: &'static Context,
    a: &DeviceCsrParts,
    theta: f64,
    block_size: usize,
) -> Result<DevicePattern> {
    let bs = block_size.max(1);
    check_len("amg strength: columns of the (square) matrix", a.nrows, a.ncols)?;
    if bs > MAX_BLOCK || a.nrows % bs != 0 {
        return Err(Error::InvalidArgument(format!(
            "the AMG setup on the device takes blocks of at most {MAX_BLOCK} rows that divide the {} rows \
             (block size {bs})",
            a.nrows
        )));
    }
    let nodes = a.nrows / bs;
    // diagonal (and its inverse for bs == 1), counts, offsets; the columns at most nnz
    check_memory(
        ctx,
        || format!("the strength graph of a {} x {} matrix of {} entries", a.nrows, a.ncols, a.nnz()),
        2 * bytes::<f64>(nodes) + bytes::<u32>(nodes + 1) + bytes::<u32>(a.nnz()),
    )?;
    let mut diag = DeviceArray::<f64>::zeroed(ctx, nodes, "the AMG diagonal")?;
    if bs == 1 {
        let mut dinv = DeviceArray::<f64>::zeroed(ctx, nodes, "the AMG inverse diagonal")?;
        kernels::diagonal(ctx, &a.view(), &mut diag, &mut dinv)?;
    } else {
        kernels::node_diagonal(ctx, &a.view(), bs, &mut diag)?;
    }
    let mut offsets = DeviceArray::<u32>::zeroed(ctx, nodes + 1, "the strength offsets")?;
    kernels::strength_pass(ctx, &a.view(), bs, &diag, theta, Some(&mut offsets), None)?;
    let nnz = scan(ctx, &mut offsets, "strong connections")?;
    let mut cols = DeviceArray::<u32>::zeroed(ctx, nnz, "the strength columns")?;
    kernels::strength_pass(ctx, &a.view(), bs, &diag, theta, None, Some((&offsets, &mut cols)))?;
    Ok(DevicePattern { nrows: nodes, offsets, cols })
}

/// The result of [`mis2`].
pub(crate) struct Mis2 {
    /// The final state of every node: `OUT` 0 or `ROOT` 2 (as in [`host_setup`]).
    pub(crate) state: DeviceArray<u32>,
    /// `n + 1` elements: 1 for each root, then a 0 (ready to be scanned into root numbers).
    pub(crate) roots: DeviceArray<u32>,
    /// The rounds run.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) rounds: usize,
}

/// Step 2a, the MIS-2 states, as [`host_setup::mis2`].
///
/// # Errors
///
/// [`Error::InsufficientMemory`]; [`Error::Cuda`].
pub(crate) fn mis2(ctx: &'static Context, s: &DevicePattern) -> Result<Mis2> {
    let n = s.nrows;
    check_memory(
        ctx,
        || format!("the MIS-2 rounds on {n} nodes"),
        bytes::<u32>(n) + 2 * bytes::<u64>(n) + bytes::<u32>(n + 1),
    )?;
    let mut state = DeviceArray::<u32>::zeroed(ctx, n, "the MIS-2 states")?;
    let mut m1 = DeviceArray::<u64>::zeroed(ctx, n, "the MIS-2 maxima")?;
    let mut m2 = DeviceArray::<u64>::zeroed(ctx, n, "the MIS-2 maxima")?;
    let mut roots = DeviceArray::<u32>::zeroed(ctx, n + 1, "the MIS-2 root flags")?;
    kernels::mis2_init(ctx, &mut state)?;
    let mut rounds = 0;
    // Each round makes the largest undecided tuple a root, so n rounds always suffice.
    // The flag is read (a synchronization) every other round: a round after the last one
    // changes nothing. Each round's flag is a new zeroed array, queued without a wait.
    while rounds < n {
        let mut flag = DeviceArray::<u32>::zeroed(ctx, 1, "the MIS-2 flag")?;
        kernels::mis2_round(ctx, &s.view(), &mut state, &mut m1, &mut m2, &mut flag, &mut roots)?;
        rounds += 1;
        if (rounds % 2 == 0 || rounds == n) && !read_flag(&flag, "the MIS-2 flag")? {
            return Ok(Mis2 { state, roots, rounds });
        }
    }
    if n > 0 {
        return Err(Error::InvalidArgument(format!("MIS-2 on {n} nodes did not finish in {rounds} rounds (a bug)")));
    }
    Ok(Mis2 { state, roots, rounds })
}

/// Step 2, aggregation, as [`host_setup::aggregate`]: the aggregate of every node and the
/// number of aggregates.
///
/// # Errors
///
/// [`Error::InsufficientMemory`]; [`Error::Cuda`].
#[cfg(test)]
pub(crate) fn aggregate(ctx: &'static Context, s: &DevicePattern) -> Result<(DeviceArray<u32>, usize)> {
    aggregate_from(ctx, s, mis2(ctx, s)?)
}

/// [`aggregate`] from the states that [`mis2`] returned, as
/// [`host_setup::aggregate_from`] (it takes them, and scans their root flags in place).
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the states are not the pattern's;
/// [`Error::InsufficientMemory`]; [`Error::Cuda`].
pub(crate) fn aggregate_from(
    ctx: &'static Context,
    s: &DevicePattern,
    states: Mis2,
) -> Result<(DeviceArray<u32>, usize)> {
    let n = s.nrows;
    let Mis2 { state, roots: mut root_id, .. } = states;
    check_len("amg aggregation: states of the pattern's nodes", n, state.len())?;
    check_memory(ctx, || format!("the aggregation of {n} nodes"), 3 * bytes::<u32>(n + 1))?;
    let roots = scan(ctx, &mut root_id, "aggregates")?;
    let mut agg1 = DeviceArray::<u32>::filled(ctx, n, 0xff, "the aggregates of pass 1")?;
    let mut agg = DeviceArray::<u32>::filled(ctx, n, 0xff, "the aggregates")?;
    let mut left = DeviceArray::<u32>::zeroed(ctx, n + 1, "the unassigned nodes")?;
    kernels::aggregate_passes(ctx, &s.view(), &state, &root_id, &mut agg1, &mut agg, &mut left)?;
    let leftover = scan(ctx, &mut left, "unassigned nodes")?;
    let roots32 = u32::try_from(roots).expect("below the index limit");
    if leftover > 0 {
        kernels::aggregate_leftover(ctx, roots32, &left, &mut agg)?;
    }
    let count = check_index("aggregates", (roots + leftover) as u64)?;
    debug_assert!(count < NONE as usize);
    Ok((agg, count))
}

/// Step 3, the tentative prolongator, as [`host_setup::tentative`]: `P_tent` and the coarse
/// near-nullspace (`count * k x k`, column-major). `b` is the near-nullspace, `n x k`
/// column-major, `n = agg.len() * block_size`, or empty for the constant vector (`k == 1`),
/// which is then made on the device. With `k == 1` it is built on the device;
/// with `k > 1` the QR runs on the host and the result is uploaded.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when `b` is not `n x k`; [`Error::InsufficientMemory`];
/// [`Error::Cuda`].
pub(crate) fn tentative(
    ctx: &'static Context,
    agg: &DeviceArray<u32>,
    count: usize,
    block_size: usize,
    b: &[f64],
    k: usize,
) -> Result<(DeviceCsrParts, Vec<f64>)> {
    let bs = block_size.max(1);
    let n = agg.len() * bs;
    // empty: the constant vector (k = 1), made here
    if !b.is_empty() || k != 1 {
        check_len("amg tentative: entries of the near-nullspace", n * k, b.len())?;
    }
    if k != 1 {
        let agg_host = agg.to_vec("the aggregates")?;
        let (p, bc) = host_setup::tentative(&agg_host, count, bs, b, k);
        return Ok((DeviceCsrParts::upload(ctx, &p)?, bc));
    }
    check_index("DOFs", n as u64)?;
    check_memory(
        ctx,
        || format!("the tentative prolongator of {n} DOFs in {count} aggregates"),
        2 * (bytes::<u32>(n + 1) + bytes::<u32>(n) + bytes::<f64>(n))
            + 2 * bytes::<u32>(count + 1)
            + bytes::<f64>(count),
    )?;
    let bd = if b.is_empty() {
        DeviceArray::<f64>::from_fn(ctx, n, "the near-nullspace (ones)", |_| 1.0)?
    } else {
        DeviceArray::<f64>::from_slice(ctx, b, "the near-nullspace")?
    };
    let mut offsets = DeviceArray::<u32>::zeroed(ctx, n + 1, "the tentative offsets")?;
    kernels::iota(ctx, &mut offsets)?;
    let mut cols = DeviceArray::<u32>::zeroed(ctx, n, "the tentative columns")?;
    let mut vals = DeviceArray::<f64>::zeroed(ctx, n, "the tentative values")?;
    kernels::tentative_pattern(ctx, bs, agg, &bd, &mut cols, &mut vals)?;
    let grouped = {
        let pattern = DeviceCsrParts { nrows: n, ncols: count, offsets, cols, vals };
        let t = transpose(ctx, &pattern)?;
        (pattern, t)
    };
    let (mut p, t) = grouped;
    let mut norms = DeviceArray::<f64>::zeroed(ctx, count, "the aggregate norms")?;
    kernels::tentative_values(ctx, &t.view(), &mut norms, &p.cols, &mut p.vals)?;
    let bc = norms.to_vec("the coarse near-nullspace")?;
    Ok((p, bc))
}

/// `1 / a_ii` for every row (0 where `a_ii == 0`), as [`host_setup::inverse_diagonal`].
///
/// # Errors
///
/// [`Error::Cuda`].
pub(crate) fn inverse_diagonal(ctx: &'static Context, a: &DeviceCsrParts) -> Result<DeviceArray<f64>> {
    let mut diag = DeviceArray::<f64>::zeroed(ctx, a.nrows, "the AMG diagonal")?;
    let mut dinv = DeviceArray::<f64>::zeroed(ctx, a.nrows, "the AMG inverse diagonal")?;
    kernels::diagonal(ctx, &a.view(), &mut diag, &mut dinv)?;
    Ok(dinv)
}

/// `1 / sum_j |a_ij|` of every row (0 for a row without nonzeros), as
/// [`host_setup::inverse_l1_diagonal`].
///
/// # Errors
///
/// [`Error::Cuda`].
pub(crate) fn inverse_l1_diagonal(ctx: &'static Context, a: &DeviceCsrParts) -> Result<DeviceArray<f64>> {
    let mut dinv = DeviceArray::<f64>::zeroed(ctx, a.nrows, "the AMG inverse l1 diagonal")?;
    kernels::l1_diagonal(ctx, &a.view(), &mut dinv)?;
    Ok(dinv)
}

/// `A^T` with sorted columns (a counting sort of the entries by column, then each row
/// sorted by its unique columns), as `CsrMatrix::transpose`.
///
/// # Errors
///
/// [`Error::InsufficientMemory`]; [`Error::Cuda`].
pub(crate) fn transpose(ctx: &'static Context, a: &DeviceCsrParts) -> Result<DeviceCsrParts> {
    let nnz = a.nnz();
    check_memory(
        ctx,
        || format!("the transpose of a {} x {} matrix of {nnz} entries", a.nrows, a.ncols),
        2 * bytes::<u32>(a.ncols + 1) + bytes::<u32>(nnz) + bytes::<f64>(nnz),
    )?;
    let mut offsets = DeviceArray::<u32>::zeroed(ctx, a.ncols + 1, "the transpose's offsets")?;
    kernels::count_columns(ctx, &a.view(), &mut offsets)?;
    let total = scan(ctx, &mut offsets, "entries of the transpose")?;
    debug_assert_eq!(total, nnz);
    let mut cursor = DeviceArray::<u32>::zeroed(ctx, a.ncols + 1, "the transpose's cursors")?;
    let mut cols = DeviceArray::<u32>::zeroed(ctx, nnz, "the transpose's columns")?;
    let mut vals = DeviceArray::<f64>::zeroed(ctx, nnz, "the transpose's values")?;
    kernels::transpose_fill(ctx, &a.view(), &offsets, &mut cursor, &mut cols, &mut vals)?;
    Ok(DeviceCsrParts { nrows: a.ncols, ncols: a.nrows, offsets, cols, vals })
}

/// The sparse product `A B`, as [`host_setup::spgemm`]: the structure is the symbolic
/// product, the columns sorted, each value summed in the host's order.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when `A`'s columns are not `B`'s rows;
/// [`Error::InvalidArgument`] when a row has more than 2^30 products or the product's
/// entries (or its scratch tables) pass the index limit; [`Error::InsufficientMemory`];
/// [`Error::Cuda`].
pub(crate) fn spgemm(ctx: &'static Context, a: &DeviceCsrParts, b: &DeviceCsrParts) -> Result<DeviceCsrParts> {
    check_len("amg spgemm: rows of B", a.ncols, b.nrows)?;
    let m = a.nrows;
    check_memory(ctx, || format!("the row counts of a product of {m} rows"), 2 * bytes::<u32>(m + 1))?;
    let mut need = DeviceArray::<u32>::zeroed(ctx, m + 1, "the product's table offsets")?;
    let mut offsets = DeviceArray::<u32>::zeroed(ctx, m + 1, "the product's offsets")?;
    let mut too_many = DeviceArray::<u32>::zeroed(ctx, 1, "the product's flag")?;
    let group = kernels::spgemm_group(b.nrows, b.nnz());
    // shared tables: at least 4 threads a row, so that a group's share holds 64 slots
    let shared_group = group.max(4);
    kernels::spgemm_count_shared(ctx, &a.view(), &b.view(), shared_group, &mut offsets, &mut need, &mut too_many)?;
    if read_flag(&too_many, "the product's flag")? {
        return Err(Error::InvalidArgument(
            "the AMG setup on the device: a row of a product has more than 2^30 products".into(),
        ));
    }
    // the global tables, of the rows the shared tables did not fit only
    let slots = scan(ctx, &mut need, "hash slots of a product")?;
    let table = if slots > 0 {
        check_memory(ctx, || format!("the hash tables of a product of {m} rows ({slots} slots)"), bytes::<u32>(slots))?;
        let mut table = DeviceArray::<u32>::filled(ctx, slots, 0xff, "the product's hash tables")?;
        kernels::spgemm_symbolic(ctx, &a.view(), &b.view(), group, &need, &mut table, &mut offsets)?;
        Some(table)
    } else {
        None
    };
    let nnz = scan(ctx, &mut offsets, "entries of a product")?;
    check_memory(
        ctx,
        || format!("a product of {m} x {} with {nnz} entries", b.ncols),
        bytes::<u32>(nnz) + bytes::<f64>(nnz),
    )?;
    let mut cols = DeviceArray::<u32>::zeroed(ctx, nnz, "the product's columns")?;
    let mut vals = DeviceArray::<f64>::zeroed(ctx, nnz, "the product's values")?;
    if let Some(table) = &table {
        kernels::spgemm_numeric(ctx, &a.view(), &b.view(), group, &need, table, &offsets, &mut cols, &mut vals)?;
    }
    kernels::spgemm_numeric_shared(ctx, &a.view(), &b.view(), shared_group, &need, &offsets, &mut cols, &mut vals)?;
    Ok(DeviceCsrParts { nrows: m, ncols: b.ncols, offsets, cols, vals })
}

/// Step 4, prolongator smoothing, as [`host_setup::smooth_prolongator`]: `P = P_tent -
/// omega D^-1 (A P_tent)` with `omega = (4/3) / rho` on the structure of `A P_tent`.
///
/// # Errors
///
/// As [`spgemm`].
pub(crate) fn smooth_prolongator(
    ctx: &'static Context,
    a: &DeviceCsrParts,
    dinv: &DeviceArray<f64>,
    rho: f64,
    p_tent: &DeviceCsrParts,
) -> Result<DeviceCsrParts> {
    let omega = host_setup::smoothing_weight(rho);
    let ap = spgemm(ctx, a, p_tent)?;
    check_memory(ctx, || format!("the smoothed prolongator of {} entries", ap.nnz()), bytes::<f64>(ap.nnz()))?;
    let mut vals = DeviceArray::<f64>::zeroed(ctx, ap.nnz(), "the prolongator's values")?;
    kernels::smooth_values(ctx, omega, dinv, &p_tent.view(), &ap.view(), &mut vals)?;
    Ok(DeviceCsrParts { nrows: ap.nrows, ncols: ap.ncols, offsets: ap.offsets, cols: ap.cols, vals })
}

/// The power method reads its sums back (and normalizes its vector) every this many steps:
/// between two reads the vector grows by at most `rho(D^-1 A)` a step, and each read is a
/// synchronization of the device.
const POWER_READ_EVERY: usize = 5;

/// The spectral radius estimate of `D^-1 A` for the smoothing weight, as
/// [`host_setup::spectral_radius`]: the same start vector and [`host_setup::POWER_STEPS`]
/// steps of the power method with the Rayleigh quotient `v.Av / v.Dv`, times
/// [`host_setup::RHO_FACTOR`] (1 when the quotient is not positive). Each step is one
/// kernel (the product, the next vector and per-block sums in a fixed order); every
/// [`POWER_READ_EVERY`] steps the blocks' sums are read back and added in block order on
/// the host, and the vector normalized: the estimate repeats bit for bit (it may differ
/// from the host's in the last bits: the sums are grouped differently, and the vector is
/// normalized less often).
///
/// # Errors
///
/// [`Error::InsufficientMemory`]; [`Error::Cuda`].
pub(crate) fn spectral_radius(ctx: &'static Context, a: &DeviceCsrParts, dinv: &DeviceArray<f64>) -> Result<f64> {
    let n = a.nrows;
    if n == 0 {
        return Ok(1.0);
    }
    let group = kernels::power_group(n, a.nnz());
    let blocks = kernels::power_grid(n, group);
    check_memory(ctx, || format!("the power method on {n} rows"), 2 * bytes::<f64>(n) + bytes::<f64>(3 * blocks))?;
    let mut v = DeviceArray::<f64>::zeroed(ctx, n, "the power method's vector")?;
    let mut w = DeviceArray::<f64>::zeroed(ctx, n, "the power method's next vector")?;
    let mut partials = DeviceArray::<f64>::zeroed(ctx, 3 * blocks, "the power method's sums")?;
    kernels::power_init(ctx, &mut v)?;
    // the start vector's entries lie in [1, 2): 1/sqrt(n) keeps every sum finite
    let mut s = 1.0 / (n as f64).sqrt();
    let mut rq = 0.0;
    for step in 1..=host_setup::POWER_STEPS {
        kernels::power_step(ctx, &a.view(), dinv, group, s, &v, &mut w, &mut partials)?;
        std::mem::swap(&mut v, &mut w);
        if step % POWER_READ_EVERY != 0 && step != host_setup::POWER_STEPS {
            // the step is linear in s: the vector is normalized at the next read
            s = 1.0;
            continue;
        }
        let sums = partials.to_vec("the power method's sums")?;
        let (mut vw, mut vdv, mut nn) = (0.0, 0.0, 0.0);
        for b in sums.chunks_exact(3) {
            vw += b[0];
            vdv += b[1];
            nn += b[2];
        }
        if vdv > 0.0 {
            rq = vw / vdv;
        }
        let norm = nn.sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            break;
        }
        s = 1.0 / norm;
    }
    Ok(if rq > 0.0 && rq.is_finite() { rq * host_setup::RHO_FACTOR } else { 1.0 })
}

/// Step 5, the Galerkin product, as [`host_setup::galerkin`]: `(R, A_c)` with `R = P^T`
/// and `A_c = R (A P)`.
///
/// # Errors
///
/// As [`spgemm`].
#[cfg(test)]
pub(crate) fn galerkin(
    ctx: &'static Context,
    a: &DeviceCsrParts,
    p: &DeviceCsrParts,
) -> Result<(DeviceCsrParts, DeviceCsrParts)> {
    let r = transpose(ctx, p)?;
    let ap = spgemm(ctx, a, p)?;
    let ac = spgemm(ctx, &r, &ap)?;
    Ok((r, ac))
}

/// Each device step against the host step it mirrors, on the GPU (skipped without one,
/// unless `SPGPU_REQUIRE_GPU=1`): integers exactly, values within `1e-12` of the largest
/// entry (they are in fact bit-identical), and two device runs bit-identical.
#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(test: &str) -> Option<&'static Context> {
        match Context::global() {
            Ok(ctx) => Some(ctx),
            Err(e) if e.is_no_device() && std::env::var("SPGPU_REQUIRE_GPU").as_deref() != Ok("1") => {
                eprintln!("{test}: skipped, no GPU ({e})");
                None
            }
            Err(e) => panic!("{test}: no usable GPU ({e}); SPGPU_REQUIRE_GPU=1 requires one"),
        }
    }

    /// The test matrices: a 2-D and a 3-D Laplacian, an unstructured (random geometric)
    /// matrix, graph Laplacians of a random geometric graph and of an R-MAT graph (hubs:
    /// long rows and long columns), and 3-DOF elasticity for block size 3.
    fn matrices() -> Vec<(&'static str, CsrMatrix<f64>, usize)> {
        let gen = |s: &str| crate::gen::from_spec::<f64>(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        vec![
            ("lap2d:37", gen("lap2d:37"), 1),
            ("lap3d:11", gen("lap3d:11"), 1),
            ("geo:3001", gen("geo:3001"), 1),
            ("graphlap:geo:2003", gen("graphlap:geo:2003"), 1),
            ("graphlap:rmat:11:8", gen("graphlap:rmat:11:8"), 1),
            ("elast:5", gen("elast:5"), 3),
        ]
    }

    /// Integers exactly, values within 1e-12 of the largest entry.
    fn assert_same(what: &str, got: &CsrMatrix<f64>, want: &CsrMatrix<f64>) {
        assert_eq!((got.nrows(), got.ncols()), (want.nrows(), want.ncols()), "{what}: dimensions");
        assert_eq!(got.row_offsets(), want.row_offsets(), "{what}: offsets");
        assert_eq!(got.col_indices(), want.col_indices(), "{what}: columns");
        let scale = want.values().iter().fold(0.0f64, |m, v| m.max(v.abs())).max(f64::MIN_POSITIVE);
        for (k, (g, w)) in got.values().iter().zip(want.values()).enumerate() {
            assert!((g - w).abs() <= 1e-12 * scale, "{what}: entry {k}: {g} against {w}");
        }
    }

    fn bits(a: &CsrMatrix<f64>) -> (Vec<u64>, Vec<u32>, Vec<u64>) {
        (a.row_offsets().to_vec(), a.col_indices().to_vec(), a.values().iter().map(|v| v.to_bits()).collect())
    }

    /// Everything one device setup level gives, on the host.
    #[derive(PartialEq)]
    struct Level {
        strength: Pattern,
        state: Vec<u32>,
        agg: Vec<u32>,
        count: usize,
        p_tent: (Vec<u64>, Vec<u32>, Vec<u64>),
        bc: Vec<u64>,
        p: (Vec<u64>, Vec<u32>, Vec<u64>),
        r: (Vec<u64>, Vec<u32>, Vec<u64>),
        ac: (Vec<u64>, Vec<u32>, Vec<u64>),
    }

    /// One level on the device, compared step by step with the host.
    fn level(ctx: &'static Context, name: &str, a: &CsrMatrix<f64>, theta: f64, bs: usize) -> Level {
        let what = |step: &str| format!("{name} theta {theta}: {step}");
        let da = DeviceCsrParts::upload(ctx, a).unwrap();
        assert_same(&what("upload"), &da.download().unwrap(), a);

        let s_host = host_setup::strength(a, theta, bs);
        let ds = strength(ctx, &da, theta, bs).unwrap();
        let s_dev = ds.download().unwrap();
        assert_eq!(s_dev, s_host, "{}", what("strength"));

        let state_host: Vec<u32> = host_setup::mis2(&s_host).into_iter().map(u32::from).collect();
        let m = mis2(ctx, &ds).unwrap();
        let state = m.state.to_vec("states").unwrap();
        assert_eq!(state, state_host, "{}", what("MIS-2 states"));
        assert!(m.rounds >= 1 || a.nrows() == 0);

        let (agg_host, count_host) = host_setup::aggregate(&s_host);
        let (dagg, count) = aggregate(ctx, &ds).unwrap();
        let agg = dagg.to_vec("aggregates").unwrap();
        assert_eq!((&agg, count), (&agg_host, count_host), "{}", what("aggregates"));

        let b = vec![1.0; a.nrows()];
        let (pt_host, bc_host) = host_setup::tentative(&agg_host, count_host, bs, &b, 1);
        let (dpt, bc) = tentative(ctx, &dagg, count, bs, &b, 1).unwrap();
        let pt = dpt.download().unwrap();
        assert_same(&what("tentative prolongator"), &pt, &pt_host);
        for (g, w) in bc.iter().zip(&bc_host) {
            assert!((g - w).abs() <= 1e-12 * w.abs(), "{}: {g} against {w}", what("coarse near-nullspace"));
        }

        let dinv_host = host_setup::inverse_diagonal(a);
        let ddinv = inverse_diagonal(ctx, &da).unwrap();
        assert_eq!(ddinv.to_vec("dinv").unwrap(), dinv_host, "{}", what("inverse diagonal"));
        let rho = host_setup::spectral_radius(a, &dinv_host);

        let p_host = host_setup::smooth_prolongator(a, &dinv_host, rho, &pt_host).unwrap();
        let dp = smooth_prolongator(ctx, &da, &ddinv, rho, &dpt).unwrap();
        let p = dp.download().unwrap();
        assert_same(&what("smoothed prolongator"), &p, &p_host);

        let (r_host, ac_host) = host_setup::galerkin(a, &p_host).unwrap();
        let (dr, dac) = galerkin(ctx, &da, &dp).unwrap();
        let (r, ac) = (dr.download().unwrap(), dac.download().unwrap());
        assert_same(&what("restriction"), &r, &r_host);
        assert_same(&what("coarse matrix"), &ac, &ac_host);

        Level {
            strength: s_dev,
            state,
            agg,
            count,
            p_tent: bits(&pt),
            bc: bc.iter().map(|v| v.to_bits()).collect(),
            p: bits(&p),
            r: bits(&r),
            ac: bits(&ac),
        }
    }

    #[test]
    fn every_device_step_equals_the_host_step_and_repeats_bit_for_bit() {
        let matrices = matrices(); // the specs parse with or without a GPU
        let Some(ctx) = gpu("every_device_step_equals_the_host_step_and_repeats_bit_for_bit") else { return };
        for (name, a, bs) in matrices {
            for theta in [0.0, 0.08, 0.25] {
                let first = level(ctx, name, &a, theta, bs);
                let second = level(ctx, name, &a, theta, bs);
                assert!(first == second, "{name} theta {theta}: two device runs differ");
                // the second level too, from the coarse matrix (block size 1 there)
                if bs == 1 && first.count > 1 {
                    let (rows, cols, vals) = (first.ac.0.clone(), first.ac.1.clone(), first.ac.2.clone());
                    let ac = CsrMatrix::try_from_parts(
                        first.count,
                        first.count,
                        rows,
                        cols,
                        vals.into_iter().map(f64::from_bits).collect(),
                    )
                    .unwrap();
                    level(ctx, &format!("{name} level 2"), &ac, theta, 1);
                }
            }
        }
    }

    #[test]
    fn spgemm_and_transpose_equal_the_host_on_rectangular_and_empty_operands() {
        let Some(ctx) = gpu("spgemm_and_transpose_equal_the_host_on_rectangular_and_empty_operands") else { return };
        let a = crate::gen::from_spec::<f64>("uniform:300:200:7").unwrap();
        let b = crate::gen::from_spec::<f64>("uniform:200:151:5").unwrap();
        let (da, db) = (DeviceCsrParts::upload(ctx, &a).unwrap(), DeviceCsrParts::upload(ctx, &b).unwrap());
        assert_same("A B", &spgemm(ctx, &da, &db).unwrap().download().unwrap(), &host_setup::spgemm(&a, &b).unwrap());
        assert_same("A^T", &transpose(ctx, &da).unwrap().download().unwrap(), &a.transpose());
        // a long row and a long column (one row of every column, one column of every row)
        let n = 5000;
        let mut offsets = vec![0u64, n as u64];
        offsets.extend((1..n as u64).map(|i| n as u64 + i));
        let mut cols: Vec<u32> = (0..n as u32).collect();
        cols.extend(std::iter::repeat(0).take(n - 1));
        let mut vals: Vec<f64> = (0..n).map(|j| 1.0 + j as f64).collect();
        vals.extend((1..n).map(|i| 2.0 - i as f64 / n as f64));
        let l = CsrMatrix::try_from_parts(n, n, offsets, cols, vals).unwrap();
        let dl = DeviceCsrParts::upload(ctx, &l).unwrap();
        assert_same("L L", &spgemm(ctx, &dl, &dl).unwrap().download().unwrap(), &host_setup::spgemm(&l, &l).unwrap());
        assert_same("L^T", &transpose(ctx, &dl).unwrap().download().unwrap(), &l.transpose());
        // empty rows and an empty matrix
        let z = CsrMatrix::<f64>::zeros(4, 3).unwrap();
        let dz = DeviceCsrParts::upload(ctx, &z).unwrap();
        assert_same("Z^T", &transpose(ctx, &dz).unwrap().download().unwrap(), &z.transpose());
        let zz = CsrMatrix::<f64>::zeros(3, 5).unwrap();
        let dzz = DeviceCsrParts::upload(ctx, &zz).unwrap();
        assert_same("Z Z", &spgemm(ctx, &dz, &dzz).unwrap().download().unwrap(), &host_setup::spgemm(&z, &zz).unwrap());
        let e = CsrMatrix::<f64>::zeros(0, 0).unwrap();
        let de = DeviceCsrParts::upload(ctx, &e).unwrap();
        let s = strength(ctx, &de, 0.0, 1).unwrap();
        assert_eq!(s.download().unwrap(), host_setup::strength(&e, 0.0, 1));
        assert_eq!(aggregate(ctx, &s).unwrap().1, 0);
        // a dimension mismatch is an error, not a launch
        assert!(matches!(spgemm(ctx, &da, &da), Err(Error::DimensionMismatch { .. })));
    }

    #[test]
    fn a_count_past_the_index_limit_is_told_from_other_errors() {
        // host-only: the error of check_index is the one the Auto setup falls back on
        let e = check_index("hash slots of a product", INDEX_LIMIT as u64 + 1).unwrap_err();
        assert!(e.to_string().contains("hash slots of a product = 2147483648"), "{e}");
        assert!(past_index_limit(&CgError::Backend(e)));
        assert_eq!(check_index("rows", INDEX_LIMIT as u64).unwrap(), INDEX_LIMIT);
        let other = Error::InvalidArgument("a row of a product has more than 2^30 products".into());
        assert!(!past_index_limit(&CgError::Backend(other)));
        assert!(!past_index_limit(&CgError::InvalidParams("exceed the 32-bit index limit".into())));
    }

    #[test]
    fn the_scan_is_exclusive_and_totals_past_one_tile() {
        let Some(ctx) = gpu("the_scan_is_exclusive_and_totals_past_one_tile") else { return };
        for n in [0usize, 1, 255, 2048, 2049, 100_003] {
            let counts: Vec<u32> = (0..n as u32).map(|i| i % 7).chain([0]).collect();
            let mut d = DeviceArray::from_slice(ctx, &counts, "counts").unwrap();
            let total = scan(ctx, &mut d, "test counts").unwrap();
            let got = d.to_vec("offsets").unwrap();
            let mut run = 0u32;
            for i in 0..n {
                assert_eq!(got[i], run, "n {n}, element {i}");
                run += counts[i];
            }
            assert_eq!((got[n], total), (run, run as usize), "n {n}");
        }
    }

    #[test]
    fn isolated_nodes_and_bad_block_sizes() {
        let Some(ctx) = gpu("isolated_nodes_and_bad_block_sizes") else { return };
        // a diagonal matrix: every node isolated, every node a root
        let d = CsrMatrix::<f64>::identity(9).unwrap();
        let dd = DeviceCsrParts::upload(ctx, &d).unwrap();
        let s = strength(ctx, &dd, 0.0, 1).unwrap();
        let (agg, count) = aggregate(ctx, &s).unwrap();
        assert_eq!((agg.to_vec("agg").unwrap(), count), host_setup::aggregate(&s.download().unwrap()));
        assert_eq!(count, 9);
        assert!(matches!(strength(ctx, &dd, 0.0, 2), Err(Error::InvalidArgument(_))));
        assert!(matches!(strength(ctx, &dd, 0.0, 9), Err(Error::InvalidArgument(_))));
    }

    use std::fmt::Write as _;

    // ---- the host's results for the CPU emulation of the kernels ----

    // ---- the host's results for the CPU emulation of the kernels ----

    fn arr_u(out: &mut String, name: &str, v: impl IntoIterator<Item = u64>) {
        let v: Vec<u64> = v.into_iter().collect();
        write!(out, "{name} {}", v.len()).unwrap();
        for x in v {
            write!(out, " {x}").unwrap();
        }
        out.push('\n');
    }
    fn arr_f(out: &mut String, name: &str, v: &[f64]) {
        write!(out, "{name} {}", v.len()).unwrap();
        for x in v {
            write!(out, " {:016x}", x.to_bits()).unwrap();
        }
        out.push('\n');
    }
    fn csr(out: &mut String, name: &str, a: &CsrMatrix<f64>) {
        arr_u(out, &format!("{name}.dims"), [a.nrows() as u64, a.ncols() as u64]);
        arr_u(out, &format!("{name}.off"), a.row_offsets().iter().copied());
        arr_u(out, &format!("{name}.cols"), a.col_indices().iter().map(|&c| c as u64));
        arr_f(out, &format!("{name}.vals"), a.values());
    }

    /// The host's results for `tests/amg_emulation/run.sh` (into `$AMG_DUMP`), which runs the
    /// setup kernels on the CPU and compares them with these.
    #[test]
    #[ignore = "run by tests/amg_emulation/run.sh"]
    fn dump_host_results() {
        let dir = std::env::var("AMG_DUMP").expect("AMG_DUMP names the folder");
        std::fs::create_dir_all(&dir).unwrap();
        for (name, spec, bs) in [
            ("lap2d", "lap2d:37", 1),
            ("lap3d", "lap3d:11", 1),
            ("geo", "geo:3001", 1),
            ("glgeo", "graphlap:geo:2003", 1),
            ("glrmat", "graphlap:rmat:11:8", 1),
            ("elast", "elast:5", 3),
        ] {
            let a = crate::gen::from_spec::<f64>(spec).unwrap();
            for (ti, theta) in [0.0, 0.08, 0.25].into_iter().enumerate() {
                let mut inp = String::new();
                let mut out = String::new();
                let dinv = host_setup::inverse_diagonal(&a);
                let rho = host_setup::spectral_radius(&a, &dinv);
                arr_u(&mut inp, "bs", [bs as u64]);
                arr_f(&mut inp, "theta", &[theta]);
                arr_f(&mut inp, "rho", &[rho]);
                csr(&mut inp, "A", &a);
                let s = host_setup::strength(&a, theta, bs);
                arr_u(&mut out, "S.off", s.offsets.iter().copied());
                arr_u(&mut out, "S.cols", s.cols.iter().map(|&c| c as u64));
                arr_u(&mut out, "state", host_setup::mis2(&s).into_iter().map(u64::from));
                let (agg, count) = host_setup::aggregate(&s);
                arr_u(&mut out, "agg", agg.iter().map(|&c| c as u64));
                arr_u(&mut out, "count", [count as u64]);
                let b = vec![1.0; a.nrows()];
                let (pt, bc) = host_setup::tentative(&agg, count, bs, &b, 1);
                csr(&mut out, "Pt", &pt);
                arr_f(&mut out, "bc", &bc);
                arr_f(&mut out, "dinv", &dinv);
                let p = host_setup::smooth_prolongator(&a, &dinv, rho, &pt).unwrap();
                csr(&mut out, "P", &p);
                let (r, ac) = host_setup::galerkin(&a, &p).unwrap();
                csr(&mut out, "R", &r);
                csr(&mut out, "Ac", &ac);
                std::fs::write(format!("{dir}/{name}-{ti}.in"), inp).unwrap();
                std::fs::write(format!("{dir}/{name}-{ti}.host"), out).unwrap();
            }
        }
    }
}
