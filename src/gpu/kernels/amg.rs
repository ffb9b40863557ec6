//! Launchers of the algebraic-multigrid kernels in `ptx/amg.cu`: the V-cycle's vector
//! updates (`axpby`, the fused Chebyshev step, the Jacobi step).
//!
//! Every launcher checks the operands' lengths, converts the length with `u32::try_from`
//! ([`index`]), and launches on the stream it is given (the context's, or a solver's
//! capture stream while a cycle is recorded as a CUDA graph), without synchronizing. An
//! empty operand launches nothing. The kernels walk their length with a 64-bit grid-stride
//! index and write each output element from one thread, so no accepted length wraps and
//! the results repeat bit for bit.
// The launchers are called by `solver::amg` (branch `amg`, which the lead merges with this
// one); until then only the tests here use them.
#![allow(dead_code)]

use cust::launch;
use cust::memory::{DeviceCopy, DevicePointer};

use super::{index, BLOCK};
use crate::error::DriverError;
use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::gpu::runtime::module::ModuleId;
use crate::gpu::runtime::stream::Stream;
use crate::gpu::runtime::vector::DeviceVector;
use crate::gpu::runtime::vector::{check_len, download, ptr_of};
use crate::{Error, Result, Scalar};

/// Most blocks of a grid-stride vector kernel of `ptx/amg.cu`: enough to fill an H200
/// (132 SMs of 8 resident 256-thread blocks) several times over; longer vectors loop.
pub(crate) const AMG_MAX_BLOCKS: u32 = 8192;

/// The kernels of `ptx/amg.cu`, independent of the element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AmgKernel {
    /// `amg_axpby_<T>`: `y = a*x + b*y`.
    Axpby,
    /// `amg_cheb_<T>`: `d = c1 * dinv .* r + c2 * d; x += d`.
    Cheb,
    /// `amg_jacobi_<T>`: `x += w * dinv .* r`.
    Jacobi,
}

impl AmgKernel {
    /// Every kernel of the module that has an f32 and an f64 variant.
    pub(crate) const TYPED: [AmgKernel; 3] = [AmgKernel::Axpby, AmgKernel::Cheb, AmgKernel::Jacobi];
}

/// The `extern "C"` name of an AMG kernel for an element type (`"f32"`, `"f64"`):
/// `amg_<op>_<scalar>`. The only place where AMG kernel names are built.
pub(crate) fn amg_kernel_name(kernel: AmgKernel, scalar: &str) -> String {
    let op = match kernel {
        AmgKernel::Axpby => "axpby",
        AmgKernel::Cheb => "cheb",
        AmgKernel::Jacobi => "jacobi",
    };
    format!("amg_{op}_{scalar}")
}

/// Every AMG kernel name (the vector kernels in both element types, then the setup
/// kernels), with its module, for `tests/ptx.rs`.
pub(crate) fn all_kernel_names() -> Vec<(ModuleId, String)> {
    let typed = AmgKernel::TYPED.iter().flat_map(|&k| ["f32", "f64"].map(|s| (ModuleId::Amg, amg_kernel_name(k, s))));
    typed.chain(SetupKernel::ALL.iter().map(|&k| (ModuleId::Amg, setup_kernel_name(k).to_string()))).collect()
}

/// The grid of a grid-stride vector kernel on `n` elements: one block per `BLOCK`
/// elements, at least one, at most [`AMG_MAX_BLOCKS`].
pub(crate) fn amg_grid(n: usize) -> u32 {
    u32::try_from(n.div_ceil(BLOCK as usize)).unwrap_or(u32::MAX).clamp(1, AMG_MAX_BLOCKS)
}

fn launch_error(name: &str) -> impl FnOnce(DriverError) -> Error + '_ {
    move |e| Error::cuda(format!("launching {name}"), e)
}

/// `amg_axpby_<T>`: `y = a*x + b*y`. With `b == 0`, `y` is never read (BLAS semantics: NaN
/// or garbage in `y` does not spread).
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when `x` and `y` differ in length;
/// [`Error::InvalidArgument`] past the 32-bit index; [`Error::Cuda`] when the launch fails.
pub(crate) fn axpby<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    a: f64,
    x: &DeviceVector<T>,
    b: f64,
    y: &mut DeviceVector<T>,
) -> Result<()> {
    check_len("amg axpby: length of x", y.len(), x.len())?;
    if y.is_empty() {
        return Ok(());
    }
    let n = index("AMG vector length", y.len())?;
    let grid = amg_grid(y.len());
    let name = amg_kernel_name(AmgKernel::Axpby, T::NAME);
    ctx.make_current()?;
    let f = ctx.function(ModuleId::Amg, &name)?;
    let (xp, yp) = (x.as_device_ptr(), y.as_device_ptr());
    // SAFETY: amg_axpby_<T>(unsigned n, double a, const T* x, double b, T* y); the arguments
    // match in order and size (u32, f64, device pointer, f64, device pointer). x and y both
    // have n > 0 elements (checked), so both pointers are live allocations of n elements; the
    // grid-stride loop stays below n. y is borrowed mutably, so it aliases no x and no other
    // writer.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, a, xp, b, yp)) }.map_err(launch_error(&name))
}

/// `amg_cheb_<T>`: one Chebyshev step, `d = c1 * dinv .* r + c2 * d` (with `c2 == 0`, `d`
/// is never read), then `x += d`.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the four vectors differ in length;
/// [`Error::InvalidArgument`] past the 32-bit index; [`Error::Cuda`] when the launch fails.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cheb<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    c1: f64,
    c2: f64,
    dinv: &DeviceVector<T>,
    r: &DeviceVector<T>,
    d: &mut DeviceVector<T>,
    x: &mut DeviceVector<T>,
) -> Result<()> {
    let len = x.len();
    check_len("amg chebyshev: length of the inverse diagonal", len, dinv.len())?;
    check_len("amg chebyshev: length of r", len, r.len())?;
    check_len("amg chebyshev: length of d", len, d.len())?;
    if len == 0 {
        return Ok(());
    }
    let n = index("AMG vector length", len)?;
    let grid = amg_grid(len);
    let name = amg_kernel_name(AmgKernel::Cheb, T::NAME);
    ctx.make_current()?;
    let f = ctx.function(ModuleId::Amg, &name)?;
    let (dp, rp, sp, xp) = (dinv.as_device_ptr(), r.as_device_ptr(), d.as_device_ptr(), x.as_device_ptr());
    // SAFETY: amg_cheb_<T>(unsigned n, double c1, double c2, const T* dinv, const T* r, T* d,
    // T* x); the arguments match in order and size. All four vectors have n > 0 elements
    // (checked), so every pointer is a live allocation of n elements and the grid-stride loop
    // stays below n. d and x are borrowed mutably: they alias each other and the inputs
    // nowhere, as the kernel's __restrict__ assumes.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, c1, c2, dp, rp, sp, xp)) }.map_err(launch_error(&name))
}

/// `amg_jacobi_<T>`: one Jacobi step, `x += w * dinv .* r` (l1-Jacobi when `dinv` holds
/// the inverse l1 row norms).
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the three vectors differ in length;
/// [`Error::InvalidArgument`] past the 32-bit index; [`Error::Cuda`] when the launch fails.
pub(crate) fn jacobi<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    w: f64,
    dinv: &DeviceVector<T>,
    r: &DeviceVector<T>,
    x: &mut DeviceVector<T>,
) -> Result<()> {
    let len = x.len();
    check_len("amg jacobi: length of the inverse diagonal", len, dinv.len())?;
    check_len("amg jacobi: length of r", len, r.len())?;
    if len == 0 {
        return Ok(());
    }
    let n = index("AMG vector length", len)?;
    let grid = amg_grid(len);
    let name = amg_kernel_name(AmgKernel::Jacobi, T::NAME);
    ctx.make_current()?;
    let f = ctx.function(ModuleId::Amg, &name)?;
    let (dp, rp, xp) = (dinv.as_device_ptr(), r.as_device_ptr(), x.as_device_ptr());
    // SAFETY: amg_jacobi_<T>(unsigned n, double w, const T* dinv, const T* r, T* x); the
    // arguments match in order and size. The three vectors have n > 0 elements (checked), so
    // every pointer is a live allocation of n elements and the grid-stride loop stays below
    // n. x is borrowed mutably and aliases neither input.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, w, dp, rp, xp)) }.map_err(launch_error(&name))
}

// ---------------------------------------------------------------------------------------
// The setup kernels (f64 values, 32-bit indices), launched by src/solver/amg/device_setup.rs
// on the context's stream.

/// Elements per block of the scan kernels (`AMG_SCAN_TILE` in `ptx/amg.cu`).
pub(crate) const SCAN_TILE: usize = 2048;

/// Most DOFs per node of the device strength step (`AMG_MAX_BLOCK` in `ptx/amg.cu`).
pub(crate) const MAX_BLOCK: usize = 8;

/// "No aggregate yet" and an empty hash slot (`AMG_NONE` in `ptx/amg.cu`).
pub(crate) const NONE: u32 = u32::MAX;

/// The setup kernels of `ptx/amg.cu`, each with one fixed element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetupKernel {
    ScanTiles,
    ScanPartials,
    ScanApply,
    Iota,
    Diagonal,
    StrengthCount,
    StrengthFill,
    NodeDiagonal,
    NodeStrengthCount,
    NodeStrengthFill,
    Mis2Init,
    Mis2Max1,
    Mis2Max2,
    Mis2Update,
    AggPass1,
    AggPass2,
    AggLeftover,
    TentPattern,
    TentNorms,
    TentValues,
    CountColumns,
    TransposeFill,
    SortRows,
    SpgemmCountShared,
    SpgemmSymbolic,
    SpgemmColumns,
    SpgemmNumeric,
    SmoothValues,
    PowerInit,
    PowerStep,
    L1Diagonal,
    ToF32,
    FarColumns,
    SpgemmSymbolicGroup,
    SpgemmNumericGroup,
    PowerStepGroup,
    Widen,
    SpgemmNumericShared,
    SortLongRows,
}

impl SetupKernel {
    pub(crate) const ALL: [SetupKernel; 39] = [
        SetupKernel::ScanTiles,
        SetupKernel::ScanPartials,
        SetupKernel::ScanApply,
        SetupKernel::Iota,
        SetupKernel::Diagonal,
        SetupKernel::StrengthCount,
        SetupKernel::StrengthFill,
        SetupKernel::NodeDiagonal,
        SetupKernel::NodeStrengthCount,
        SetupKernel::NodeStrengthFill,
        SetupKernel::Mis2Init,
        SetupKernel::Mis2Max1,
        SetupKernel::Mis2Max2,
        SetupKernel::Mis2Update,
        SetupKernel::AggPass1,
        SetupKernel::AggPass2,
        SetupKernel::AggLeftover,
        SetupKernel::TentPattern,
        SetupKernel::TentNorms,
        SetupKernel::TentValues,
        SetupKernel::CountColumns,
        SetupKernel::TransposeFill,
        SetupKernel::SortRows,
        SetupKernel::SpgemmCountShared,
        SetupKernel::SpgemmSymbolic,
        SetupKernel::SpgemmColumns,
        SetupKernel::SpgemmNumeric,
        SetupKernel::SmoothValues,
        SetupKernel::PowerInit,
        SetupKernel::PowerStep,
        SetupKernel::L1Diagonal,
        SetupKernel::ToF32,
        SetupKernel::FarColumns,
        SetupKernel::SpgemmSymbolicGroup,
        SetupKernel::SpgemmNumericGroup,
        SetupKernel::PowerStepGroup,
        SetupKernel::Widen,
        SetupKernel::SpgemmNumericShared,
        SetupKernel::SortLongRows,
    ];
}

/// The `extern "C"` name of a setup kernel: `amg_<op>_<type>`, the type being `u32` for the
/// kernels that move indices only and `f64` for those that read or write values. The only
/// place where setup kernel names are built.
pub(crate) fn setup_kernel_name(kernel: SetupKernel) -> &'static str {
    match kernel {
        SetupKernel::ScanTiles => "amg_scan_tiles_u32",
        SetupKernel::ScanPartials => "amg_scan_partials_u32",
        SetupKernel::ScanApply => "amg_scan_apply_u32",
        SetupKernel::Iota => "amg_iota_u32",
        SetupKernel::Diagonal => "amg_diagonal_f64",
        SetupKernel::StrengthCount => "amg_strength_count_f64",
        SetupKernel::StrengthFill => "amg_strength_fill_f64",
        SetupKernel::NodeDiagonal => "amg_node_diagonal_f64",
        SetupKernel::NodeStrengthCount => "amg_node_strength_count_f64",
        SetupKernel::NodeStrengthFill => "amg_node_strength_fill_f64",
        SetupKernel::Mis2Init => "amg_mis2_init_u32",
        SetupKernel::Mis2Max1 => "amg_mis2_max1_u32",
        SetupKernel::Mis2Max2 => "amg_mis2_max2_u32",
        SetupKernel::Mis2Update => "amg_mis2_update_u32",
        SetupKernel::AggPass1 => "amg_agg_pass1_u32",
        SetupKernel::AggPass2 => "amg_agg_pass2_u32",
        SetupKernel::AggLeftover => "amg_agg_leftover_u32",
        SetupKernel::TentPattern => "amg_tent_pattern_f64",
        SetupKernel::TentNorms => "amg_tent_norms_f64",
        SetupKernel::TentValues => "amg_tent_values_f64",
        SetupKernel::CountColumns => "amg_count_columns_u32",
        SetupKernel::TransposeFill => "amg_transpose_fill_f64",
        SetupKernel::SortRows => "amg_sort_rows_f64",
        SetupKernel::SpgemmCountShared => "amg_spgemm_count_shared_u32",
        SetupKernel::SpgemmSymbolic => "amg_spgemm_symbolic_u32",
        SetupKernel::SpgemmColumns => "amg_spgemm_columns_u32",
        SetupKernel::SpgemmNumeric => "amg_spgemm_numeric_f64",
        SetupKernel::SmoothValues => "amg_smooth_values_f64",
        SetupKernel::PowerInit => "amg_power_init_f64",
        SetupKernel::PowerStep => "amg_power_step_f64",
        SetupKernel::L1Diagonal => "amg_l1_diagonal_f64",
        SetupKernel::ToF32 => "amg_to_f32_f64",
        SetupKernel::FarColumns => "amg_far_columns_u32",
        SetupKernel::SpgemmSymbolicGroup => "amg_spgemm_symbolic_group_u32",
        SetupKernel::SpgemmNumericGroup => "amg_spgemm_numeric_group_f64",
        SetupKernel::PowerStepGroup => "amg_power_step_group_f64",
        SetupKernel::Widen => "amg_widen_u32",
        SetupKernel::SpgemmNumericShared => "amg_spgemm_numeric_shared_f64",
        SetupKernel::SortLongRows => "amg_sort_long_rows_f64",
    }
}

/// An array of plain values in device memory with its length (none allocated when empty,
/// whose pointer is then null: CUDA cannot allocate zero bytes).
pub(crate) struct DeviceArray<U: DeviceCopy> {
    buf: Option<DeviceMemory<U>>,
    len: usize,
}

impl<U: DeviceCopy> std::fmt::Debug for DeviceArray<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceArray<{}>({} elements)", std::any::type_name::<U>(), self.len)
    }
}

impl<U: DeviceCopy + Default + Clone> DeviceArray<U> {
    /// `len` elements of zero bytes (a memset queued on the context's stream).
    pub(crate) fn zeroed(ctx: &'static Context, len: usize, what: &str) -> Result<Self> {
        Self::filled(ctx, len, 0, what)
    }

    /// `len` elements whose bytes all equal `byte` (a memset queued on the context's stream).
    pub(crate) fn filled(ctx: &'static Context, len: usize, byte: u8, what: &str) -> Result<Self> {
        let buf = if len == 0 { None } else { Some(DeviceMemory::filled(ctx, len, byte, what)?) };
        Ok(DeviceArray { buf, len })
    }

    /// A copy of `data`, complete when this returns.
    pub(crate) fn from_slice(ctx: &'static Context, data: &[U], what: &str) -> Result<Self> {
        let buf = if data.is_empty() { None } else { Some(DeviceMemory::from_slice(ctx, data, what)?) };
        Ok(DeviceArray { buf, len: data.len() })
    }

    /// `len` elements `f(0), f(1), ...`, made on the host in parallel a piece at a time and
    /// uploaded piece by piece ([`DeviceMemory::from_fn`]).
    pub(crate) fn from_fn(ctx: &'static Context, len: usize, what: &str, f: impl Fn(usize) -> U + Sync) -> Result<Self>
    where
        U: Send,
    {
        let buf = if len == 0 { None } else { Some(DeviceMemory::from_fn(ctx, len, 1 << 20, what, f)?) };
        Ok(DeviceArray { buf, len })
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the array is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device memory (`None` when empty).
    pub(crate) fn into_memory(self) -> Option<DeviceMemory<U>> {
        self.buf
    }

    /// The device address (null when empty).
    pub(crate) fn ptr(&self) -> DevicePointer<U> {
        ptr_of(self.buf.as_ref())
    }

    /// A copy on the host, after the work queued before on the context's stream.
    pub(crate) fn to_vec(&self, what: &str) -> Result<Vec<U>> {
        download(self.buf.as_ref(), self.len, what)
    }

    /// Overwrites the array with `src` (same length, checked), after the work queued before.
    pub(crate) fn copy_from(&mut self, src: &[U], what: &str) -> Result<()> {
        check_len("DeviceArray::copy_from: length of the source", self.len, src.len())?;
        match &mut self.buf {
            Some(b) => b.copy_from_host(src, what),
            None => Ok(()),
        }
    }
}

/// The rows (or elements) `n` of a setup kernel as its `unsigned` argument, and its grid.
fn rows_and_grid(what: &str, n: usize) -> Result<(u32, u32)> {
    Ok((index(what, n)?, amg_grid(n)))
}

fn setup_function<'a>(ctx: &'a Context, kernel: SetupKernel) -> Result<cust::function::Function<'a>> {
    ctx.make_current()?;
    ctx.function(ModuleId::Amg, setup_kernel_name(kernel))
}

fn setup_error(kernel: SetupKernel) -> impl FnOnce(DriverError) -> Error {
    move |e| Error::cuda(format!("launching {}", setup_kernel_name(kernel)), e)
}

/// The CSR arrays of a setup kernel's matrix operand: `nrows + 1` offsets whose last is
/// `cols.len()`, checked here against the arrays' lengths (the entries themselves were
/// validated where the matrix was made).
pub(crate) struct CsrView<'a> {
    pub(crate) nrows: usize,
    pub(crate) ncols: usize,
    pub(crate) offsets: &'a DeviceArray<u32>,
    pub(crate) cols: &'a DeviceArray<u32>,
    /// The values (`cols.len()` of them), or none for a pattern.
    pub(crate) vals: Option<&'a DeviceArray<f64>>,
}

impl CsrView<'_> {
    fn check(&self, what: &'static str) -> Result<()> {
        check_len(what, self.nrows + 1, self.offsets.len())?;
        if let Some(v) = self.vals {
            check_len(what, self.cols.len(), v.len())?;
        }
        Ok(())
    }

    fn vals_ptr(&self) -> DevicePointer<f64> {
        self.vals.map_or_else(DevicePointer::null, DeviceArray::ptr)
    }
}

/// `counts` (`n + 1` elements, the first `n` counts) scanned in place: `counts[i]` becomes
/// the sum of the counts before `i`, `counts[n]` their total (its low 32 bits), and
/// `total[0]` the total in 64 bits (read it to check it against the index limit before
/// the offsets are used). Three kernels: per-tile sums, their scan in one block, the tiles'
/// scans; all integer, so the result does not depend on the launch shape.
pub(crate) fn scan_in_place(
    ctx: &'static Context,
    counts: &mut DeviceArray<u32>,
    total: &mut DeviceArray<u64>,
) -> Result<()> {
    if counts.is_empty() {
        return Err(Error::InvalidArgument("amg scan: the counts need room for the total".into()));
    }
    check_len("amg scan: length of the total", 1, total.len())?;
    let len = counts.len() - 1;
    let n = index("AMG scan length", len)?;
    let tiles = index("AMG scan tiles", len.div_ceil(SCAN_TILE).max(1))?;
    let partials = DeviceArray::<u64>::zeroed(ctx, tiles as usize, "the AMG scan partials")?;
    let stream = ctx.stream();
    let (c, p, t) = (counts.ptr(), partials.ptr(), total.ptr());
    let f = setup_function(ctx, SetupKernel::ScanTiles)?;
    // SAFETY: amg_scan_tiles_u32(unsigned n, const unsigned* in, unsigned long long* partials);
    // block b reads in[b*TILE .. min(n, (b+1)*TILE)) (bounds-checked against n) and writes
    // partials[b]; the grid has `tiles` blocks of BLOCK threads and partials has `tiles`
    // elements; counts has n + 1 > 0 elements (non-null).
    unsafe { launch!(f<<<tiles, BLOCK, 0, stream>>>(n, c, p)) }.map_err(setup_error(SetupKernel::ScanTiles))?;
    let f = setup_function(ctx, SetupKernel::ScanPartials)?;
    // SAFETY: amg_scan_partials_u32(unsigned tiles, unsigned long long* partials, unsigned
    // long long* total); one block walks partials[0..tiles) (tiles elements) and writes
    // total[0] (1 element, checked).
    unsafe { launch!(f<<<1, BLOCK, 0, stream>>>(tiles, p, t)) }.map_err(setup_error(SetupKernel::ScanPartials))?;
    let f = setup_function(ctx, SetupKernel::ScanApply)?;
    // SAFETY: amg_scan_apply_u32(unsigned n, const unsigned* in, const unsigned long long*
    // partials, const unsigned long long* total, unsigned* out) with in == out == counts
    // (n + 1 elements): block b reads then writes its own tile below n (every thread reads
    // its inputs before the block's scan synchronizes, and writes only after it), block 0
    // writes out[n]; partials has `tiles` elements, one per block.
    unsafe { launch!(f<<<tiles, BLOCK, 0, stream>>>(n, c, p, t, c)) }.map_err(setup_error(SetupKernel::ScanApply))
}

/// `out[i] = i` for `i < out.len()` (the offsets of a matrix with one entry per row).
pub(crate) fn iota(ctx: &Context, out: &mut DeviceArray<u32>) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG iota length", out.len() - 1)?;
    let f = setup_function(ctx, SetupKernel::Iota)?;
    let (stream, o) = (ctx.stream(), out.ptr());
    // SAFETY: amg_iota_u32(unsigned n, unsigned* out) writes out[0..=n]; out has n + 1
    // elements and is borrowed mutably.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o)) }.map_err(setup_error(SetupKernel::Iota))
}

/// `diag[i] = a_ii` (0 when not stored) and `dinv[i] = 1 / a_ii` (0 when `a_ii == 0`).
pub(crate) fn diagonal(
    ctx: &Context,
    a: &CsrView<'_>,
    diag: &mut DeviceArray<f64>,
    dinv: &mut DeviceArray<f64>,
) -> Result<()> {
    a.check("amg diagonal: the matrix arrays")?;
    check_len("amg diagonal: length of diag", a.nrows, diag.len())?;
    check_len("amg diagonal: length of dinv", a.nrows, dinv.len())?;
    if a.vals.is_none() {
        return Err(Error::InvalidArgument("amg diagonal: the matrix has no values".into()));
    }
    if a.nrows == 0 {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG rows", a.nrows)?;
    let f = setup_function(ctx, SetupKernel::Diagonal)?;
    let (stream, o, c, v, d, di) = (ctx.stream(), a.offsets.ptr(), a.cols.ptr(), a.vals_ptr(), diag.ptr(), dinv.ptr());
    // SAFETY: amg_diagonal_f64(unsigned n, const unsigned* off, const unsigned* cols, const
    // double* vals, double* diag, double* dinv); off has n + 1 elements (checked), every
    // offset is within cols and vals (validated CSR, same lengths checked); diag and dinv have
    // n elements, borrowed mutably; thread i writes element i only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, c, v, d, di)) }.map_err(setup_error(SetupKernel::Diagonal))
}

/// The strength count (`s_cols == None`: `counts[i]` = strong neighbours of row or node `i`)
/// or fill pass (`s_cols` at the offsets `s_off`) of step 1; `bs == 1` on the rows,
/// `bs > 1` (at most [`MAX_BLOCK`]) on the node graph with `diag` the node diagonal block
/// norms.
#[allow(clippy::too_many_arguments)]
pub(crate) fn strength_pass(
    ctx: &Context,
    a: &CsrView<'_>,
    bs: usize,
    diag: &DeviceArray<f64>,
    theta: f64,
    counts: Option<&mut DeviceArray<u32>>,
    fill: Option<(&DeviceArray<u32>, &mut DeviceArray<u32>)>,
) -> Result<()> {
    a.check("amg strength: the matrix arrays")?;
    if a.vals.is_none() || bs == 0 || bs > MAX_BLOCK || a.nrows % bs != 0 {
        return Err(Error::InvalidArgument(format!(
            "amg strength: block size {bs} (at most {MAX_BLOCK}, dividing the {} rows) and values required",
            a.nrows
        )));
    }
    let nodes = a.nrows / bs;
    check_len("amg strength: length of the diagonal", nodes, diag.len())?;
    if nodes == 0 {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG nodes", nodes)?;
    let bs32 = index("AMG block size", bs)?;
    let stream = ctx.stream();
    let (o, c, v, d) = (a.offsets.ptr(), a.cols.ptr(), a.vals_ptr(), diag.ptr());
    match (counts, fill) {
        (Some(counts), None) => {
            check_len("amg strength: length of the counts", nodes + 1, counts.len())?;
            let k = if bs == 1 { SetupKernel::StrengthCount } else { SetupKernel::NodeStrengthCount };
            let f = setup_function(ctx, k)?;
            let out = counts.ptr();
            if bs == 1 {
                // SAFETY: amg_strength_count_f64(unsigned n, const unsigned* off, const unsigned*
                // cols, const double* vals, const double* diag, double theta, unsigned* counts);
                // off has n + 1 elements, cols and vals cover every offset (validated CSR), every
                // column indexes diag (n elements: square matrix); counts has n + 1 elements,
                // thread i writes counts[i] only.
                unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, c, v, d, theta, out)) }.map_err(setup_error(k))
            } else {
                // SAFETY: amg_node_strength_count_f64(unsigned nodes, unsigned bs, const unsigned*
                // off, const unsigned* cols, const double* vals, const double* diag, double theta,
                // unsigned* counts); off has nodes * bs + 1 elements, bs <= AMG_MAX_BLOCK
                // (checked), every column / bs indexes diag (nodes elements); thread I writes
                // counts[I] only.
                unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, bs32, o, c, v, d, theta, out)) }
                    .map_err(setup_error(k))
            }
        }
        (None, Some((s_off, s_cols))) => {
            check_len("amg strength: length of the offsets", nodes + 1, s_off.len())?;
            let k = if bs == 1 { SetupKernel::StrengthFill } else { SetupKernel::NodeStrengthFill };
            let f = setup_function(ctx, k)?;
            let (so, sc) = (s_off.ptr(), s_cols.ptr());
            if bs == 1 {
                // SAFETY: amg_strength_fill_f64(unsigned n, const unsigned* off, const unsigned*
                // cols, const double* vals, const double* diag, double theta, const unsigned*
                // s_off, unsigned* s_cols); as the count pass, and s_off is the scan of its counts
                // (n + 1 elements, the caller sized s_cols to s_off[n]), so thread i writes
                // s_cols[s_off[i] .. s_off[i + 1]) only.
                unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, c, v, d, theta, so, sc)) }.map_err(setup_error(k))
            } else {
                // SAFETY: amg_node_strength_fill_f64(unsigned nodes, unsigned bs, const unsigned*
                // off, const unsigned* cols, const double* vals, const double* diag, double theta,
                // const unsigned* s_off, unsigned* s_cols); as the node count pass and the fill
                // pass above.
                unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, bs32, o, c, v, d, theta, so, sc)) }
                    .map_err(setup_error(k))
            }
        }
        _ => Err(Error::InvalidArgument("amg strength: one of counts and fill".into())),
    }
}

/// `diag[I] = ||block(I, I)||_F` for nodes of `bs` (at most [`MAX_BLOCK`]) rows.
pub(crate) fn node_diagonal(ctx: &Context, a: &CsrView<'_>, bs: usize, diag: &mut DeviceArray<f64>) -> Result<()> {
    a.check("amg node diagonal: the matrix arrays")?;
    if a.vals.is_none() || bs == 0 || bs > MAX_BLOCK || a.nrows % bs != 0 {
        return Err(Error::InvalidArgument(format!("amg node diagonal: block size {bs}")));
    }
    let nodes = a.nrows / bs;
    check_len("amg node diagonal: length of diag", nodes, diag.len())?;
    if nodes == 0 {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG nodes", nodes)?;
    let bs32 = index("AMG block size", bs)?;
    let f = setup_function(ctx, SetupKernel::NodeDiagonal)?;
    let (stream, o, c, v, d) = (ctx.stream(), a.offsets.ptr(), a.cols.ptr(), a.vals_ptr(), diag.ptr());
    // SAFETY: amg_node_diagonal_f64(unsigned nodes, unsigned bs, const unsigned* off, const
    // unsigned* cols, const double* vals, double* diag); off has nodes * bs + 1 elements
    // (checked), bs <= AMG_MAX_BLOCK (the kernel's local arrays), diag has nodes elements and
    // thread I writes diag[I] only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, bs32, o, c, v, d)) }
        .map_err(setup_error(SetupKernel::NodeDiagonal))
}

/// The four kernels of one MIS-2 round, or the start (`state = UNDECIDED`).
pub(crate) fn mis2_init(ctx: &Context, state: &mut DeviceArray<u32>) -> Result<()> {
    if state.is_empty() {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG nodes", state.len())?;
    let f = setup_function(ctx, SetupKernel::Mis2Init)?;
    let (stream, s) = (ctx.stream(), state.ptr());
    // SAFETY: amg_mis2_init_u32(unsigned n, unsigned* state); state has n elements, borrowed
    // mutably, thread i writes state[i].
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, s)) }.map_err(setup_error(SetupKernel::Mis2Init))
}

/// One synchronous MIS-2 round on the pattern `s`: `m1`, `m2` (scratch, `n` each), then the
/// update of `state`; `undecided[0]` is set to 1 when a node stays undecided (the caller
/// zeroes it first), and `roots[i]` (`n + 1` elements) to 1 for each root.
pub(crate) fn mis2_round(
    ctx: &Context,
    s: &CsrView<'_>,
    state: &mut DeviceArray<u32>,
    m1: &mut DeviceArray<u64>,
    m2: &mut DeviceArray<u64>,
    undecided: &mut DeviceArray<u32>,
    roots: &mut DeviceArray<u32>,
) -> Result<()> {
    s.check("amg mis2: the pattern arrays")?;
    let len = s.nrows;
    check_len("amg mis2: length of the states", len, state.len())?;
    check_len("amg mis2: length of m1", len, m1.len())?;
    check_len("amg mis2: length of m2", len, m2.len())?;
    check_len("amg mis2: length of the flag", 1, undecided.len())?;
    check_len("amg mis2: length of the root flags", len + 1, roots.len())?;
    if len == 0 {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG nodes", len)?;
    let stream = ctx.stream();
    let (o, c, st, a, b, u, r) =
        (s.offsets.ptr(), s.cols.ptr(), state.ptr(), m1.ptr(), m2.ptr(), undecided.ptr(), roots.ptr());
    let f = setup_function(ctx, SetupKernel::Mis2Max1)?;
    // SAFETY: amg_mis2_max1_u32(unsigned n, const unsigned* off, const unsigned* cols, const
    // unsigned* state, unsigned long long* m1); off has n + 1 elements, every column of the
    // validated pattern is below n (square), state and m1 have n elements; thread i writes
    // m1[i] only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, c, st, a)) }.map_err(setup_error(SetupKernel::Mis2Max1))?;
    let f = setup_function(ctx, SetupKernel::Mis2Max2)?;
    // SAFETY: amg_mis2_max2_u32(unsigned n, const unsigned* off, const unsigned* cols, const
    // unsigned long long* m1, unsigned long long* m2); as above, thread i writes m2[i] only
    // (m1 and m2 are distinct arrays).
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, c, a, b)) }.map_err(setup_error(SetupKernel::Mis2Max2))?;
    let f = setup_function(ctx, SetupKernel::Mis2Update)?;
    // SAFETY: amg_mis2_update_u32(unsigned n, const unsigned long long* m2, unsigned* state,
    // unsigned* undecided, unsigned* roots); m2 and state have n elements, roots n + 1, the
    // flag 1 (an integer atomic exchange of the same value 1 by any writer); thread i writes
    // state[i] and roots[i] only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, b, st, u, r)) }.map_err(setup_error(SetupKernel::Mis2Update))
}

/// Pass 1 (`agg1` from the states and the root numbers) and pass 2 (`agg2`, and `left[i] =
/// 1` where still unassigned) of the aggregation.
pub(crate) fn aggregate_passes(
    ctx: &Context,
    s: &CsrView<'_>,
    state: &DeviceArray<u32>,
    root_id: &DeviceArray<u32>,
    agg1: &mut DeviceArray<u32>,
    agg2: &mut DeviceArray<u32>,
    left: &mut DeviceArray<u32>,
) -> Result<()> {
    s.check("amg aggregation: the pattern arrays")?;
    let len = s.nrows;
    check_len("amg aggregation: length of the states", len, state.len())?;
    check_len("amg aggregation: length of the root numbers", len + 1, root_id.len())?;
    check_len("amg aggregation: length of pass 1", len, agg1.len())?;
    check_len("amg aggregation: length of pass 2", len, agg2.len())?;
    check_len("amg aggregation: length of the left flags", len + 1, left.len())?;
    if len == 0 {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG nodes", len)?;
    let stream = ctx.stream();
    let (o, c, st, id, a1, a2, l) =
        (s.offsets.ptr(), s.cols.ptr(), state.ptr(), root_id.ptr(), agg1.ptr(), agg2.ptr(), left.ptr());
    let f = setup_function(ctx, SetupKernel::AggPass1)?;
    // SAFETY: amg_agg_pass1_u32(unsigned n, const unsigned* off, const unsigned* cols, const
    // unsigned* state, const unsigned* root_id, unsigned* agg); off has n + 1 elements, the
    // pattern's columns are below n, state, root_id and agg have at least n; thread i writes
    // agg[i] only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, c, st, id, a1)) }
        .map_err(setup_error(SetupKernel::AggPass1))?;
    let f = setup_function(ctx, SetupKernel::AggPass2)?;
    // SAFETY: amg_agg_pass2_u32(unsigned n, const unsigned* off, const unsigned* cols, const
    // unsigned* agg1, unsigned* agg2, unsigned* left); as above, agg1 and agg2 distinct, thread
    // i writes agg2[i] and left[i] only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, c, a1, a2, l)) }.map_err(setup_error(SetupKernel::AggPass2))
}

/// `agg[i] = roots + left_id[i]` where `agg[i]` is still [`NONE`].
pub(crate) fn aggregate_leftover(
    ctx: &Context,
    roots: u32,
    left_id: &DeviceArray<u32>,
    agg: &mut DeviceArray<u32>,
) -> Result<()> {
    check_len("amg aggregation: length of the left numbers", agg.len() + 1, left_id.len())?;
    if agg.is_empty() {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG nodes", agg.len())?;
    let f = setup_function(ctx, SetupKernel::AggLeftover)?;
    let (stream, l, a) = (ctx.stream(), left_id.ptr(), agg.ptr());
    // SAFETY: amg_agg_leftover_u32(unsigned n, unsigned roots, const unsigned* left_id,
    // unsigned* agg); left_id has n + 1 elements, agg n, borrowed mutably; thread i writes
    // agg[i] only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, roots, l, a)) }.map_err(setup_error(SetupKernel::AggLeftover))
}

/// `cols[d] = agg[d / bs]`, `vals[d] = b[d]`: the tentative prolongator's pattern with `b`
/// as values (`n = b.len()` DOFs).
pub(crate) fn tentative_pattern(
    ctx: &Context,
    bs: usize,
    agg: &DeviceArray<u32>,
    b: &DeviceArray<f64>,
    cols: &mut DeviceArray<u32>,
    vals: &mut DeviceArray<f64>,
) -> Result<()> {
    let len = b.len();
    check_len("amg tentative: DOFs of the aggregates", len, agg.len() * bs.max(1))?;
    check_len("amg tentative: length of the columns", len, cols.len())?;
    check_len("amg tentative: length of the values", len, vals.len())?;
    if len == 0 {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG DOFs", len)?;
    let bs32 = index("AMG block size", bs.max(1))?;
    let f = setup_function(ctx, SetupKernel::TentPattern)?;
    let (stream, a, bp, c, v) = (ctx.stream(), agg.ptr(), b.ptr(), cols.ptr(), vals.ptr());
    // SAFETY: amg_tent_pattern_f64(unsigned n, unsigned bs, const unsigned* agg, const double*
    // b, unsigned* cols, double* vals); b, cols and vals have n elements, agg n / bs (checked:
    // d / bs < agg.len() for d < n); thread d writes cols[d] and vals[d] only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, bs32, a, bp, c, v)) }
        .map_err(setup_error(SetupKernel::TentPattern))
}

/// `norms[c]` = the 2-norm of the values of row `c` of `t` (the transposed tentative
/// pattern: each aggregate's entries of `b` in increasing DOF order), then the tentative
/// values `vals[d] = vals[d] / norms[cols[d]]` (0 where the norm is 0).
pub(crate) fn tentative_values(
    ctx: &Context,
    t: &CsrView<'_>,
    norms: &mut DeviceArray<f64>,
    cols: &DeviceArray<u32>,
    vals: &mut DeviceArray<f64>,
) -> Result<()> {
    t.check("amg tentative: the transposed arrays")?;
    check_len("amg tentative: length of the norms", t.nrows, norms.len())?;
    check_len("amg tentative: length of the values", cols.len(), vals.len())?;
    check_len("amg tentative: entries of the transpose", cols.len(), t.cols.len())?;
    let stream = ctx.stream();
    if t.nrows > 0 {
        let (count, grid) = rows_and_grid("AMG aggregates", t.nrows)?;
        let f = setup_function(ctx, SetupKernel::TentNorms)?;
        let (o, v, nr) = (t.offsets.ptr(), t.vals_ptr(), norms.ptr());
        // SAFETY: amg_tent_norms_f64(unsigned count, const unsigned* t_off, const double*
        // t_vals, double* norms); t_off has count + 1 elements bounding t_vals (same length as
        // its columns, checked), norms has count; thread c writes norms[c] only.
        unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(count, o, v, nr)) }
            .map_err(setup_error(SetupKernel::TentNorms))?;
    }
    if cols.is_empty() {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG DOFs", cols.len())?;
    let f = setup_function(ctx, SetupKernel::TentValues)?;
    let (c, nr, v) = (cols.ptr(), norms.ptr(), vals.ptr());
    // SAFETY: amg_tent_values_f64(unsigned n, const unsigned* cols, const double* norms,
    // double* vals); cols and vals have n elements, every column is an aggregate below
    // norms.len() (the columns of the transposed pattern's rows); thread d writes vals[d].
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, c, nr, v)) }.map_err(setup_error(SetupKernel::TentValues))
}

/// `counts[c] += 1` for every entry of column `c` (`counts`: `ncols + 1` zeros).
pub(crate) fn count_columns(ctx: &Context, a: &CsrView<'_>, counts: &mut DeviceArray<u32>) -> Result<()> {
    a.check("amg transpose: the matrix arrays")?;
    check_len("amg transpose: length of the counts", a.ncols + 1, counts.len())?;
    if a.cols.is_empty() {
        return Ok(());
    }
    let (nnz, grid) = rows_and_grid("AMG entries", a.cols.len())?;
    let f = setup_function(ctx, SetupKernel::CountColumns)?;
    let (stream, c, out) = (ctx.stream(), a.cols.ptr(), counts.ptr());
    // SAFETY: amg_count_columns_u32(unsigned nnz, const unsigned* cols, unsigned* counts);
    // cols has nnz elements, each below ncols (validated CSR), counts has ncols + 1 (integer
    // atomics: the counts do not depend on their order).
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(nnz, c, out)) }.map_err(setup_error(SetupKernel::CountColumns))
}

/// The transpose's entries placed at `t_off` (the scan of [`count_columns`]) with the
/// cursors `cursor` (`ncols + 1` zeros), then each row sorted by column.
pub(crate) fn transpose_fill(
    ctx: &Context,
    a: &CsrView<'_>,
    t_off: &DeviceArray<u32>,
    cursor: &mut DeviceArray<u32>,
    t_cols: &mut DeviceArray<u32>,
    t_vals: &mut DeviceArray<f64>,
) -> Result<()> {
    a.check("amg transpose: the matrix arrays")?;
    if a.vals.is_none() {
        return Err(Error::InvalidArgument("amg transpose: the matrix has no values".into()));
    }
    check_len("amg transpose: length of the offsets", a.ncols + 1, t_off.len())?;
    check_len("amg transpose: length of the cursors", a.ncols + 1, cursor.len())?;
    check_len("amg transpose: entries", a.cols.len(), t_cols.len())?;
    check_len("amg transpose: values", a.cols.len(), t_vals.len())?;
    let stream = ctx.stream();
    if a.nrows > 0 && !a.cols.is_empty() {
        let (m, grid) = rows_and_grid("AMG rows", a.nrows)?;
        let f = setup_function(ctx, SetupKernel::TransposeFill)?;
        let (o, c, v, to, cu, tc, tv) =
            (a.offsets.ptr(), a.cols.ptr(), a.vals_ptr(), t_off.ptr(), cursor.ptr(), t_cols.ptr(), t_vals.ptr());
        // SAFETY: amg_transpose_fill_f64(unsigned nrows, const unsigned* off, const unsigned*
        // cols, const double* vals, const unsigned* t_off, unsigned* cursor, unsigned* t_cols,
        // double* t_vals); t_off is the scan of the column counts of these very entries, so
        // t_off[c] + (the atomic cursor of c) < t_off[c + 1] <= nnz = t_cols.len() (checked):
        // every slot is written once, by the thread whose atomic returned it.
        unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(m, o, c, v, to, cu, tc, tv)) }
            .map_err(setup_error(SetupKernel::TransposeFill))?;
    }
    if a.ncols == 0 {
        return Ok(());
    }
    let (nt, grid) = rows_and_grid("AMG columns", a.ncols)?;
    let f = setup_function(ctx, SetupKernel::SortRows)?;
    let (to, tc, tv) = (t_off.ptr(), t_cols.ptr(), t_vals.ptr());
    // SAFETY: amg_sort_rows_f64(unsigned nrows, const unsigned* off, unsigned* cols, double*
    // vals); off (ncols + 1 elements) bounds cols and vals (nnz each); thread c sorts its own
    // row's range only (null arrays are never touched when nnz is 0: every range is empty).
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(nt, to, tc, tv)) }.map_err(setup_error(SetupKernel::SortRows))?;
    // the rows of 33 to 2048 entries, a block each
    let f = setup_function(ctx, SetupKernel::SortLongRows)?;
    let blocks = u32::try_from(a.ncols).unwrap_or(u32::MAX).clamp(1, AMG_MAX_BLOCKS);
    // SAFETY: amg_sort_long_rows_f64(unsigned nrows, const unsigned* off, unsigned* cols,
    // double* vals), the same arrays; block r sorts the rows r, r + grid, ... of 33 to 2048
    // entries, each in its own static shared arrays of 2048 elements, and writes that row's
    // range only; the rows it takes are the ones amg_sort_rows_f64 skipped.
    unsafe { launch!(f<<<blocks, BLOCK, 0, stream>>>(nt, to, tc, tv)) }.map_err(setup_error(SetupKernel::SortLongRows))
}

/// The count pass of `A B` in shared memory, `group` threads per row: `counts[i]` = the
/// distinct columns of row `i` and `need[i]` = 0 where they fit in the group's share of the
/// block's table (`AMG_SHARED_SLOTS` = 4096 in `ptx/amg.cu`, so `16 * group` slots for a
/// block of 256, at most half of them used);
/// else `counts[i]` = 0 and `need[i]` = the size of the row's global hash table (a power of
/// two at least twice the most distinct columns the row can have: its products, at most
/// `B`'s columns), for [`spgemm_symbolic`]. `too_many[0]` set to 1 where a row has more than
/// 2^30 products.
pub(crate) fn spgemm_count_shared(
    ctx: &Context,
    a: &CsrView<'_>,
    b: &CsrView<'_>,
    group: u32,
    counts: &mut DeviceArray<u32>,
    need: &mut DeviceArray<u32>,
    too_many: &mut DeviceArray<u32>,
) -> Result<()> {
    check_group(group)?;
    a.check("amg spgemm: the arrays of A")?;
    b.check("amg spgemm: the arrays of B")?;
    check_len("amg spgemm: inner dimension", a.ncols, b.nrows)?;
    check_len("amg spgemm: length of the counts", a.nrows + 1, counts.len())?;
    check_len("amg spgemm: length of the table sizes", a.nrows + 1, need.len())?;
    check_len("amg spgemm: length of the flag", 1, too_many.len())?;
    if a.nrows == 0 {
        return Ok(());
    }
    let (m, grid) = group_grid(a.nrows, group)?;
    let bn = index("AMG columns of B", b.ncols)?;
    let f = setup_function(ctx, SetupKernel::SpgemmCountShared)?;
    let (stream, ao, ac, bo, bc, c, nd, t) = (
        ctx.stream(),
        a.offsets.ptr(),
        a.cols.ptr(),
        b.offsets.ptr(),
        b.cols.ptr(),
        counts.ptr(),
        need.ptr(),
        too_many.ptr(),
    );
    // SAFETY: amg_spgemm_count_shared_u32(unsigned m, unsigned g, unsigned b_ncols, const
    // unsigned* a_off, const unsigned* a_cols, const unsigned* b_off, const unsigned* b_cols,
    // unsigned* counts, unsigned* need, unsigned* too_many); a_off has m + 1 elements, every
    // column of A is below b.nrows (inner dimension checked) so b_off[j + 1] exists; the
    // group of row i (a power of two dividing the block, checked) writes counts[i] and
    // need[i] only (both m + 1 long) and its own share of the block's static shared table;
    // the flag by an integer atomic.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(m, group, bn, ao, ac, bo, bc, c, nd, t)) }
        .map_err(setup_error(SetupKernel::SpgemmCountShared))
}

/// The numeric pass of `A B` in shared memory for the rows [`spgemm_count_shared`] fitted
/// there (`t_off[i + 1] == t_off[i]`): their sorted columns and values into `c_cols` and
/// `c_vals` at `c_off`, each value the sum of its products in the host's order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn spgemm_numeric_shared(
    ctx: &Context,
    a: &CsrView<'_>,
    b: &CsrView<'_>,
    group: u32,
    t_off: &DeviceArray<u32>,
    c_off: &DeviceArray<u32>,
    c_cols: &mut DeviceArray<u32>,
    c_vals: &mut DeviceArray<f64>,
) -> Result<()> {
    check_group(group)?;
    a.check("amg spgemm: the arrays of A")?;
    b.check("amg spgemm: the arrays of B")?;
    if a.vals.is_none() || b.vals.is_none() {
        return Err(Error::InvalidArgument("amg spgemm: both factors need values".into()));
    }
    check_len("amg spgemm: inner dimension", a.ncols, b.nrows)?;
    check_len("amg spgemm: length of the table offsets", a.nrows + 1, t_off.len())?;
    check_len("amg spgemm: length of the offsets of C", a.nrows + 1, c_off.len())?;
    check_len("amg spgemm: values of C", c_cols.len(), c_vals.len())?;
    if a.nrows == 0 || c_cols.is_empty() {
        return Ok(());
    }
    let (m, grid) = group_grid(a.nrows, group)?;
    let f = setup_function(ctx, SetupKernel::SpgemmNumericShared)?;
    let (stream, to, ao, ac, av, bo, bc, bv, co, cc, cv) = (
        ctx.stream(),
        t_off.ptr(),
        a.offsets.ptr(),
        a.cols.ptr(),
        a.vals_ptr(),
        b.offsets.ptr(),
        b.cols.ptr(),
        b.vals_ptr(),
        c_off.ptr(),
        c_cols.ptr(),
        c_vals.ptr(),
    );
    // SAFETY: amg_spgemm_numeric_shared_f64(unsigned m, unsigned g, const unsigned* t_off,
    // const unsigned* a_off, const unsigned* a_cols, const double* a_vals, const unsigned*
    // b_off, const unsigned* b_cols, const double* b_vals, const unsigned* c_off, unsigned*
    // c_cols, double* c_vals); c_off is the scan of the count passes (c_cols and c_vals have
    // c_off[m] elements, checked equal); a row it takes was fitted by spgemm_count_shared
    // with the same group, so its table (twice its count, a power of two) fits the group's
    // share of the block's static shared memory; the group writes its own row's range of
    // c_cols and c_vals only, one slot at its column's unique rank.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(m, group, to, ao, ac, av, bo, bc, bv, co, cc, cv)) }
        .map_err(setup_error(SetupKernel::SpgemmNumericShared))
}

/// The symbolic pass of `A B`: every row's columns into its table (`table`: `t_off[m]`
/// slots filled with [`NONE`] bytes, `t_off` the scan of [`spgemm_count_shared`]'s table
/// sizes), the distinct count of row `i` into `counts[i]`, for the rows with a table only.
pub(crate) fn spgemm_symbolic(
    ctx: &Context,
    a: &CsrView<'_>,
    b: &CsrView<'_>,
    group: u32,
    t_off: &DeviceArray<u32>,
    table: &mut DeviceArray<u32>,
    counts: &mut DeviceArray<u32>,
) -> Result<()> {
    check_group(group)?;
    a.check("amg spgemm: the arrays of A")?;
    b.check("amg spgemm: the arrays of B")?;
    check_len("amg spgemm: inner dimension", a.ncols, b.nrows)?;
    check_len("amg spgemm: length of the table offsets", a.nrows + 1, t_off.len())?;
    check_len("amg spgemm: length of the counts", a.nrows + 1, counts.len())?;
    if a.nrows == 0 {
        return Ok(());
    }
    let (m, grid) = group_grid(a.nrows, group)?;
    let kernel = if group == 1 { SetupKernel::SpgemmSymbolic } else { SetupKernel::SpgemmSymbolicGroup };
    let f = setup_function(ctx, kernel)?;
    let (stream, ao, ac, bo, bc, to, t, c) = (
        ctx.stream(),
        a.offsets.ptr(),
        a.cols.ptr(),
        b.offsets.ptr(),
        b.cols.ptr(),
        t_off.ptr(),
        table.ptr(),
        counts.ptr(),
    );
    // SAFETY: amg_spgemm_symbolic_u32(unsigned m, const unsigned* a_off, const unsigned* a_cols,
    // const unsigned* b_off, const unsigned* b_cols, const unsigned* t_off, unsigned* table,
    // unsigned* counts); t_off is the scan of the table sizes (each a power of two at least
    // twice the row's distinct columns, so a probe always finds an empty slot or the
    // column), table has t_off[m] slots (the caller sized it from the scan's total); thread
    // i touches its own table range and counts[i] only. The group kernel
    // (amg_spgemm_symbolic_group_u32, the same arguments after `unsigned g`) runs `group`
    // threads per row, a power of two dividing the block (checked), which insert into the
    // row's table with integer compare-and-swap only.
    let launched = if group == 1 {
        // SAFETY: as above.
        unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(m, ao, ac, bo, bc, to, t, c)) }
    } else {
        // SAFETY: as above.
        unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(m, group, ao, ac, bo, bc, to, t, c)) }
    };
    launched.map_err(setup_error(kernel))
}

/// Checks a group size of the SpGEMM passes: a power of two from 1 to 32.
fn check_group(group: u32) -> Result<()> {
    if group.is_power_of_two() && group <= 32 {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!("amg spgemm: {group} threads per row is not a power of two up to 32")))
    }
}

/// The rows (as `u32`) and the grid of a pass with `group` threads per row.
fn group_grid(rows: usize, group: u32) -> Result<(u32, u32)> {
    let m = index("AMG rows", rows)?;
    Ok((m, amg_grid(rows.saturating_mul(group as usize))))
}

/// The threads per row of C for the passes of `A B`: the power of two at least the mean
/// length of B's rows (the runs the lanes share), 1 to 32.
pub(crate) fn spgemm_group(b_rows: usize, b_entries: usize) -> u32 {
    let mean = b_entries.div_ceil(b_rows.max(1));
    (mean.max(1).next_power_of_two()).min(32) as u32
}

/// The columns of `C = A B` (`c_off` the scan of [`spgemm_symbolic`]'s counts), sorted in
/// each row, then the values, each a sum in the host's order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn spgemm_numeric(
    ctx: &Context,
    a: &CsrView<'_>,
    b: &CsrView<'_>,
    group: u32,
    t_off: &DeviceArray<u32>,
    table: &DeviceArray<u32>,
    c_off: &DeviceArray<u32>,
    c_cols: &mut DeviceArray<u32>,
    c_vals: &mut DeviceArray<f64>,
) -> Result<()> {
    check_group(group)?;
    a.check("amg spgemm: the arrays of A")?;
    b.check("amg spgemm: the arrays of B")?;
    if a.vals.is_none() || b.vals.is_none() {
        return Err(Error::InvalidArgument("amg spgemm: both factors need values".into()));
    }
    check_len("amg spgemm: inner dimension", a.ncols, b.nrows)?;
    check_len("amg spgemm: length of the table offsets", a.nrows + 1, t_off.len())?;
    check_len("amg spgemm: length of the offsets of C", a.nrows + 1, c_off.len())?;
    check_len("amg spgemm: values of C", c_cols.len(), c_vals.len())?;
    if a.nrows == 0 {
        return Ok(());
    }
    let (m, grid) = rows_and_grid("AMG rows", a.nrows)?;
    let stream = ctx.stream();
    let f = setup_function(ctx, SetupKernel::SpgemmColumns)?;
    let (to, t, co, cc, cv) = (t_off.ptr(), table.ptr(), c_off.ptr(), c_cols.ptr(), c_vals.ptr());
    // SAFETY: amg_spgemm_columns_u32(unsigned m, const unsigned* t_off, const unsigned* table,
    // const unsigned* c_off, unsigned* c_cols); row i's table range holds exactly
    // c_off[i + 1] - c_off[i] distinct columns (c_off is the scan of those counts, c_cols has
    // c_off[m] elements: sized by the caller from the scan's total), so thread i writes its
    // own range of c_cols only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(m, to, t, co, cc)) }
        .map_err(setup_error(SetupKernel::SpgemmColumns))?;
    let kernel = if group == 1 { SetupKernel::SpgemmNumeric } else { SetupKernel::SpgemmNumericGroup };
    let f = setup_function(ctx, kernel)?;
    let (ao, ac, av, bo, bc, bv) =
        (a.offsets.ptr(), a.cols.ptr(), a.vals_ptr(), b.offsets.ptr(), b.cols.ptr(), b.vals_ptr());
    // SAFETY: amg_spgemm_numeric_f64(unsigned m, const unsigned* t_off, const unsigned* a_off,
    // const unsigned* a_cols, const double* a_vals, const unsigned* b_off, const unsigned* b_cols, const double*
    // b_vals, const unsigned* c_off, const unsigned* c_cols, double* c_vals); every product's
    // column is in row i of C (the symbolic pass inserted it), so the binary search lands in
    // the row's range; thread i writes c_vals of its own range only. The group kernel
    // (amg_spgemm_numeric_group_f64, the same arguments after `unsigned g`) runs `group`
    // threads per row (a power of two dividing the block, checked), which write c_vals of
    // their row's range only, never one value from two lanes between two of the group's
    // barriers (the columns of a row of B are distinct).
    let (_, grid) = group_grid(a.nrows, group)?;
    let launched = if group == 1 {
        // SAFETY: as above.
        unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(m, to, ao, ac, av, bo, bc, bv, co, cc, cv)) }
    } else {
        // SAFETY: as above.
        unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(m, group, to, ao, ac, av, bo, bc, bv, co, cc, cv)) }
    };
    launched.map_err(setup_error(kernel))
}

/// The values of the smoothed prolongator on the structure of `A P_tent`: entry `(i, c)` is
/// `pt_ic - (omega * dinv_i) * ap_ic`.
pub(crate) fn smooth_values(
    ctx: &Context,
    omega: f64,
    dinv: &DeviceArray<f64>,
    pt: &CsrView<'_>,
    ap: &CsrView<'_>,
    p_vals: &mut DeviceArray<f64>,
) -> Result<()> {
    pt.check("amg smoothing: the arrays of P_tent")?;
    ap.check("amg smoothing: the arrays of A P_tent")?;
    if pt.vals.is_none() || ap.vals.is_none() {
        return Err(Error::InvalidArgument("amg smoothing: both matrices need values".into()));
    }
    check_len("amg smoothing: rows", pt.nrows, ap.nrows)?;
    check_len("amg smoothing: length of the inverse diagonal", pt.nrows, dinv.len())?;
    check_len("amg smoothing: values of P", ap.cols.len(), p_vals.len())?;
    if pt.nrows == 0 {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG rows", pt.nrows)?;
    let f = setup_function(ctx, SetupKernel::SmoothValues)?;
    let (stream, d, po, pc, pv, ao, ac, av, out) = (
        ctx.stream(),
        dinv.ptr(),
        pt.offsets.ptr(),
        pt.cols.ptr(),
        pt.vals_ptr(),
        ap.offsets.ptr(),
        ap.cols.ptr(),
        ap.vals_ptr(),
        p_vals.ptr(),
    );
    // SAFETY: amg_smooth_values_f64(unsigned n, double omega, const double* dinv, const
    // unsigned* pt_off, const unsigned* pt_cols, const double* pt_vals, const unsigned* ap_off,
    // const unsigned* ap_cols, const double* ap_vals, double* p_vals); both offsets have n + 1
    // elements bounding their arrays, dinv n, p_vals the entries of A P_tent (checked); thread
    // i writes p_vals in row i's range only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, omega, d, po, pc, pv, ao, ac, av, out)) }
        .map_err(setup_error(SetupKernel::SmoothValues))
}

/// `v[i] = 1 + h(i) / 2^32`, the power method's start vector (as the host's).
pub(crate) fn power_init(ctx: &Context, v: &mut DeviceArray<f64>) -> Result<()> {
    if v.is_empty() {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG rows", v.len())?;
    let f = setup_function(ctx, SetupKernel::PowerInit)?;
    let (stream, p) = (ctx.stream(), v.ptr());
    // SAFETY: amg_power_init_f64(unsigned n, double* v) writes v[0..n); v has n elements and
    // is borrowed mutably.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, p)) }.map_err(setup_error(SetupKernel::PowerInit))
}

/// The blocks of [`power_step`]'s grid for `n` rows (its `partials` hold 3 per block).
pub(crate) fn power_grid(n: usize, group: u32) -> usize {
    amg_grid(n.saturating_mul(group as usize)) as usize
}

/// The threads per row of [`power_step`] for a matrix of `rows` and `entries`: one for rows
/// of fewer than 8 entries on average, else the power of two at least the mean, up to 32.
pub(crate) fn power_group(rows: usize, entries: usize) -> u32 {
    let mean = entries.div_ceil(rows.max(1));
    if mean < 8 {
        1
    } else {
        mean.next_power_of_two().min(32) as u32
    }
}

/// One power-method step: `out = D^-1 A (s v)`, and per block of [`power_grid`] the sums
/// `(s v) . A (s v)`, `(s v) . D (s v)` and `out . out` into `partials` (3 per block).
#[allow(clippy::too_many_arguments)]
pub(crate) fn power_step(
    ctx: &Context,
    a: &CsrView<'_>,
    dinv: &DeviceArray<f64>,
    group: u32,
    s: f64,
    v: &DeviceArray<f64>,
    out: &mut DeviceArray<f64>,
    partials: &mut DeviceArray<f64>,
) -> Result<()> {
    a.check("amg power method: the matrix arrays")?;
    check_len("amg power method: columns", a.nrows, a.ncols)?;
    check_len("amg power method: length of dinv", a.nrows, dinv.len())?;
    check_len("amg power method: length of v", a.nrows, v.len())?;
    check_len("amg power method: length of out", a.nrows, out.len())?;
    check_group(group)?;
    check_len("amg power method: partial sums", 3 * power_grid(a.nrows, group), partials.len())?;
    if a.vals.is_none() {
        return Err(Error::InvalidArgument("amg power method: the matrix has no values".into()));
    }
    if a.nrows == 0 {
        return Ok(());
    }
    let (n, grid) = group_grid(a.nrows, group)?;
    let kernel = if group == 1 { SetupKernel::PowerStep } else { SetupKernel::PowerStepGroup };
    let f = setup_function(ctx, kernel)?;
    let (stream, o, c, vals, d, x, y, p) =
        (ctx.stream(), a.offsets.ptr(), a.cols.ptr(), a.vals_ptr(), dinv.ptr(), v.ptr(), out.ptr(), partials.ptr());
    // SAFETY: amg_power_step_f64(unsigned n, const unsigned* off, const unsigned* cols, const
    // double* vals, const double* dinv, double s, const double* v, double* out, double*
    // partials); off has n + 1 elements bounding cols and vals (checked), every column is
    // below n (square, validated CSR) so v[cols[k]] is in bounds; dinv, v and out have n
    // elements (out borrowed mutably, so distinct from v); block b writes partials[3b..3b+3)
    // with `grid` blocks and 3 * grid partials (checked). The group kernel
    // (amg_power_step_group_f64, the same arguments after `unsigned g`) runs `group` threads
    // per row (a power of two dividing the block, checked) on the same grid of blocks.
    let launched = if group == 1 {
        // SAFETY: as above.
        unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, c, vals, d, s, x, y, p)) }
    } else {
        // SAFETY: as above.
        unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, group, o, c, vals, d, s, x, y, p)) }
    };
    launched.map_err(setup_error(kernel))
}

/// `dinv[i] = 1 / sum_j |a_ij|` (0 for a row without nonzeros): the l1-Jacobi smoother's
/// inverse diagonal, as `host_setup::inverse_l1_diagonal`.
pub(crate) fn l1_diagonal(ctx: &Context, a: &CsrView<'_>, dinv: &mut DeviceArray<f64>) -> Result<()> {
    a.check("amg l1 diagonal: the matrix arrays")?;
    check_len("amg l1 diagonal: length of dinv", a.nrows, dinv.len())?;
    if a.vals.is_none() {
        return Err(Error::InvalidArgument("amg l1 diagonal: the matrix has no values".into()));
    }
    if a.nrows == 0 {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG rows", a.nrows)?;
    let f = setup_function(ctx, SetupKernel::L1Diagonal)?;
    let (stream, o, v, d) = (ctx.stream(), a.offsets.ptr(), a.vals_ptr(), dinv.ptr());
    // SAFETY: amg_l1_diagonal_f64(unsigned n, const unsigned* off, const double* vals, double*
    // dinv); off has n + 1 elements bounding vals (checked: validated CSR); dinv has n
    // elements, borrowed mutably; thread i writes element i only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, v, d)) }.map_err(setup_error(SetupKernel::L1Diagonal))
}

/// Whether some entry of `a` lies farther than 32767 from its row (then an ELL form cannot
/// store its columns as 16-bit offsets). Waits for the GPU.
pub(crate) fn has_far_columns(ctx: &'static Context, a: &CsrView<'_>) -> Result<bool> {
    a.check("amg far columns: the matrix arrays")?;
    if a.nrows == 0 || a.cols.is_empty() {
        return Ok(false);
    }
    let far = DeviceArray::<u32>::zeroed(ctx, 1, "the far-column flag")?;
    let (n, grid) = rows_and_grid("AMG rows", a.nrows)?;
    let f = setup_function(ctx, SetupKernel::FarColumns)?;
    let (stream, o, c, p) = (ctx.stream(), a.offsets.ptr(), a.cols.ptr(), far.ptr());
    // SAFETY: amg_far_columns_u32(unsigned n, const unsigned* off, const unsigned* cols,
    // unsigned* far); off has n + 1 elements bounding cols (checked: validated CSR); far has
    // one element, written by an integer atomic only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, o, c, p)) }.map_err(setup_error(SetupKernel::FarColumns))?;
    Ok(far.to_vec("the far-column flag")?[0] != 0)
}

/// `offsets` widened to 64 bits on the device (queued on the context's stream), for the ELL
/// conversion of a level's arrays.
pub(crate) fn widen_offsets(
    ctx: &'static Context,
    offsets: &DeviceMemory<u32>,
    what: &str,
) -> Result<DeviceMemory<u64>> {
    let out = DeviceMemory::<u64>::uninit(ctx, offsets.len(), what)?;
    let (n, grid) = rows_and_grid("AMG offsets", offsets.len())?;
    let f = setup_function(ctx, SetupKernel::Widen)?;
    let (stream, i, o) = (ctx.stream(), offsets.as_device_ptr(), out.as_device_ptr());
    // SAFETY: amg_widen_u32(unsigned n, const unsigned* in, unsigned long long* out); both
    // have n elements (out allocated just now with offsets' length); thread i writes out[i].
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, i, o)) }.map_err(setup_error(SetupKernel::Widen))?;
    Ok(out)
}

/// `out[i] = input[i]` rounded to the nearest `f32`.
pub(crate) fn to_f32(ctx: &Context, input: &DeviceArray<f64>, out: &mut DeviceArray<f32>) -> Result<()> {
    check_len("amg to f32: length of out", input.len(), out.len())?;
    if input.is_empty() {
        return Ok(());
    }
    let (n, grid) = rows_and_grid("AMG f32 copy length", input.len())?;
    let f = setup_function(ctx, SetupKernel::ToF32)?;
    let (stream, i, o) = (ctx.stream(), input.ptr(), out.ptr());
    // SAFETY: amg_to_f32_f64(unsigned n, const double* in, float* out); both have n elements
    // (checked), out borrowed mutably; thread i writes element i only.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, i, o)) }.map_err(setup_error(SetupKernel::ToF32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_scheme_and_are_unique() {
        let names = all_kernel_names();
        assert_eq!(names.len(), 2 * AmgKernel::TYPED.len() + SetupKernel::ALL.len());
        let unique: std::collections::HashSet<_> = names.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(unique.len(), names.len());
        for n in [
            "amg_scan_tiles_u32",
            "amg_spgemm_numeric_f64",
            "amg_axpby_f32",
            "amg_axpby_f64",
            "amg_cheb_f32",
            "amg_cheb_f64",
            "amg_jacobi_f32",
            "amg_jacobi_f64",
        ] {
            assert!(unique.contains(n), "{n}");
        }
        assert!(names.iter().all(|(m, _)| *m == ModuleId::Amg));
    }

    #[test]
    fn the_grid_is_bounded() {
        assert_eq!(amg_grid(0), 1);
        assert_eq!(amg_grid(256), 1);
        assert_eq!(amg_grid(257), 2);
        assert_eq!(amg_grid(usize::MAX), AMG_MAX_BLOCKS);
    }

    /// The context, or `None` (with a printed reason) without a GPU, unless
    /// `SPGPU_REQUIRE_GPU=1`.
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

    /// Odd-sized inputs with a fixed pattern.
    fn data(n: usize, seed: u32) -> Vec<f64> {
        (0..n)
            .map(|i| f64::from((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) / 250.0 - 2.0)
            .collect()
    }

    fn close<T: Scalar>(got: &[T], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let g = g.to_f64();
            assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: {g} against {w}");
        }
    }

    fn vector_kernels_match_the_host<T: Scalar>(tol: f64) {
        let Some(ctx) = gpu("vector_kernels_match_the_host") else { return };
        let stream = ctx.stream();
        for n in [0usize, 1, 255, 257, 70_001] {
            let (x, y0, dinv) = (data(n, 1), data(n, 2), data(n, 3));
            let up = |v: &[f64]| DeviceVector::from_slice(ctx, &v.iter().map(|&e| T::from_f64(e)).collect::<Vec<T>>());
            // axpby, and b == 0 never reading y (NaN there)
            let (dx, mut dy) = (up(&x).unwrap(), up(&y0).unwrap());
            axpby(ctx, stream, 1.5, &dx, -0.25, &mut dy).unwrap();
            let want: Vec<f64> = x.iter().zip(&y0).map(|(a, b)| 1.5 * a - 0.25 * b).collect();
            close(&dy.to_vec().unwrap(), &want, tol);
            let mut nan = up(&vec![f64::NAN; n]).unwrap();
            axpby(ctx, stream, 2.0, &dx, 0.0, &mut nan).unwrap();
            close(&nan.to_vec().unwrap(), &x.iter().map(|a| 2.0 * a).collect::<Vec<_>>(), tol);
            // chebyshev: c2 == 0 never reads d
            let (dd, dr) = (up(&dinv).unwrap(), up(&y0).unwrap());
            let mut d = up(&vec![f64::NAN; n]).unwrap();
            let mut xx = up(&x).unwrap();
            cheb(ctx, stream, 0.5, 0.0, &dd, &dr, &mut d, &mut xx).unwrap();
            let d1: Vec<f64> = dinv.iter().zip(&y0).map(|(a, b)| 0.5 * a * b).collect();
            close(&d.to_vec().unwrap(), &d1, tol);
            cheb(ctx, stream, 0.5, 0.75, &dd, &dr, &mut d, &mut xx).unwrap();
            let d2: Vec<f64> = d1.iter().zip(dinv.iter().zip(&y0)).map(|(p, (a, b))| 0.5 * a * b + 0.75 * p).collect();
            close(&d.to_vec().unwrap(), &d2, tol);
            let x2: Vec<f64> = x.iter().zip(d1.iter().zip(&d2)).map(|(a, (p, q))| a + p + q).collect();
            close(&xx.to_vec().unwrap(), &x2, tol);
            // jacobi
            let mut xj = up(&x).unwrap();
            jacobi(ctx, stream, 0.8, &dd, &dr, &mut xj).unwrap();
            let xj_want: Vec<f64> = x.iter().zip(dinv.iter().zip(&y0)).map(|(a, (d, r))| a + 0.8 * d * r).collect();
            close(&xj.to_vec().unwrap(), &xj_want, tol);
        }
        // lengths are checked
        let (a, mut b) = (DeviceVector::<T>::zeros(ctx, 3).unwrap(), DeviceVector::<T>::zeros(ctx, 4).unwrap());
        assert!(matches!(axpby(ctx, stream, 1.0, &a, 1.0, &mut b), Err(Error::DimensionMismatch { .. })));
    }

    #[test]
    fn vector_kernels_match_the_host_f64() {
        vector_kernels_match_the_host::<f64>(1e-14);
    }

    #[test]
    fn vector_kernels_match_the_host_f32() {
        vector_kernels_match_the_host::<f32>(1e-6);
    }

    /// The committed PTX (both variants) has every kernel this file names as an entry.
    #[test]
    fn every_amg_kernel_is_in_the_committed_ptx() {
        // At run time first: staged test executables run from another checkout of the crate.
        let root = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
        let dir = std::path::Path::new(&root).join("ptx");
        for file in ["amg.ptx", "amg.sm80.ptx"] {
            let text = std::fs::read_to_string(dir.join(file)).expect("committed ptx/amg*.ptx");
            for (_, name) in all_kernel_names() {
                assert!(text.contains(&format!(".visible .entry {name}(")), "{name} is not an entry of ptx/{file}");
            }
            assert!(ModuleId::Amg.ptx().contains(".visible .entry amg_axpby_f64("));
        }
    }
}
