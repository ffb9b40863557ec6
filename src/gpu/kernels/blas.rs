//! Launchers of the conjugate-gradient vector kernels in `ptx/cg.cu`.
//!
//! The kernels keep the iteration's scalars in a [`Workspace`] in device memory: a slot
//! array of doubles (`rho`, `p'Ap`, `alpha`, `beta`, `r'r`, the tolerance, a status word,
//! the iteration count, results of [`dot`] and [`norm`]), the per-block partial sums of the
//! reductions, the integer ticket of the last-block pattern, and an optional residual
//! history. Every launcher checks the operands' lengths and converts sizes with
//! `u32::try_from` before it launches, on the stream it is given (the context's, or a
//! solver's capture stream while a batch of iterations is recorded as a CUDA graph),
//! without synchronizing.
//!
//! Index limits: the kernels take lengths as 32-bit `unsigned` (every launcher refuses a
//! length above `u32::MAX` with [`Error::InvalidArgument`]) and walk them with a 64-bit
//! grid-stride index, so no accepted length can wrap the loop; the ELL kernel's slot index
//! is checked to fit 32 bits here.

use cust::function::Function;
use cust::launch;
use cust::memory::DevicePointer;

use super::arrays::{CsrArrays, EllArrays};
use super::{index, BLOCK};
use crate::error::DriverError;
use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::gpu::runtime::module::ModuleId;
use crate::gpu::runtime::stream::Stream;
use crate::gpu::runtime::vector::check_len;
use crate::gpu::runtime::vector::DeviceVector;
use crate::{Error, Result, Scalar};

/// Most blocks of a reduction (`CG_MAX_BLOCKS` in `ptx/cg.cu`).
pub(crate) const CG_MAX_BLOCKS: u32 = 1024;
/// Slots of the scalar array (`S_*` in `ptx/cg.cu`).
pub(crate) const SLOT_PAP: usize = 1;
/// `r'r` after the last update.
pub(crate) const SLOT_RR: usize = 4;
/// The status word (0 running, 1 converged, 2 breakdown, 3 non-finite).
pub(crate) const SLOT_STATUS: usize = 6;
/// Iterations since the last start.
pub(crate) const SLOT_ITER: usize = 7;
/// The result of [`dot`].
pub(crate) const SLOT_DOT: usize = 8;
/// The scale of [`norm`]: the largest absolute value.
pub(crate) const SLOT_NORM_SCALE: usize = 9;
/// The scaled sum of squares of [`norm`].
pub(crate) const SLOT_NORM_SSQ: usize = 10;
/// Length of the scalar array.
pub(crate) const SLOTS: usize = 16;

/// The preconditioner modes of `ptx/cg.cu` (`MODE_*`).
pub(crate) const MODE_IDENTITY: i32 = 0;
/// `z = dinv .* r`, fused.
pub(crate) const MODE_DIAGONAL: i32 = 1;
/// `z` is a vector of its own.
pub(crate) const MODE_GENERAL: i32 = 2;

/// The kernels of `ptx/cg.cu`, independent of the element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CgKernel {
    Start,
    Alpha,
    SpmvCsrAlpha,
    SpmvEllAlpha,
    /// [`SpmvEllAlpha`](CgKernel::SpmvEllAlpha) on 16-bit column offsets
    /// ([`narrow`](crate::gpu::storage::narrow)).
    SpmvEll16Alpha,
    Update,
    Rho,
    Direction,
    Dot,
    Hadamard,
    Norm,
    Scale,
}

impl CgKernel {
    const ALL: [CgKernel; 12] = [
        CgKernel::Start,
        CgKernel::Alpha,
        CgKernel::SpmvCsrAlpha,
        CgKernel::SpmvEllAlpha,
        CgKernel::SpmvEll16Alpha,
        CgKernel::Update,
        CgKernel::Rho,
        CgKernel::Direction,
        CgKernel::Dot,
        CgKernel::Hadamard,
        CgKernel::Norm,
        CgKernel::Scale,
    ];
}

/// The `extern "C"` name of a CG kernel for an element type: `cg_<op>[_<format>_<variant>]_<scalar>`.
/// The only place where CG kernel names are built.
pub(crate) fn cg_kernel_name(kernel: CgKernel, scalar: &str) -> String {
    let op = match kernel {
        CgKernel::Start => "start",
        CgKernel::Alpha => "alpha",
        CgKernel::SpmvCsrAlpha => "spmv_csr_alpha",
        CgKernel::SpmvEllAlpha => "spmv_ell_alpha",
        CgKernel::SpmvEll16Alpha => "spmv_ell16_alpha",
        CgKernel::Update => "update",
        CgKernel::Rho => "rho",
        CgKernel::Direction => "direction",
        CgKernel::Dot => "dot",
        CgKernel::Hadamard => "hadamard",
        CgKernel::Norm => "norm",
        CgKernel::Scale => "scale",
    };
    format!("cg_{op}_{scalar}")
}

/// Every CG kernel name, with its module, for `tests/ptx.rs`.
pub(crate) fn all_kernel_names() -> Vec<(ModuleId, String)> {
    CgKernel::ALL.iter().flat_map(|&k| ["f32", "f64"].map(|s| (ModuleId::Cg, cg_kernel_name(k, s)))).collect()
}

/// The grid of every CG kernel on `n` elements: one block per `BLOCK` elements, at least
/// one, at most [`CG_MAX_BLOCKS`]. It depends on `n` only, so reductions repeat bit for bit.
pub(crate) fn cg_grid(n: usize) -> u32 {
    u32::try_from(n.div_ceil(BLOCK as usize)).unwrap_or(u32::MAX).clamp(1, CG_MAX_BLOCKS)
}

/// The device memory of the iteration's scalars and reductions.
pub(crate) struct Workspace {
    slots: DeviceMemory<f64>,
    partials: DeviceMemory<f64>,
    ticket: DeviceMemory<u32>,
    history: Option<DeviceMemory<f64>>,
    history_cap: u32,
}

impl Workspace {
    /// Zeroed scalars, partials for [`CG_MAX_BLOCKS`] blocks, and room for `history`
    /// residual norms (the zeroing is queued on the context's stream).
    pub(crate) fn new(ctx: &'static Context, history: usize) -> Result<Self> {
        let history_cap = index("CG history length", history)?;
        Ok(Workspace {
            slots: DeviceMemory::zeroed(ctx, SLOTS, "the CG scalars")?,
            partials: DeviceMemory::zeroed(ctx, 2 * CG_MAX_BLOCKS as usize, "the CG partial sums")?,
            ticket: DeviceMemory::zeroed(ctx, 1, "the CG ticket")?,
            history: if history > 0 {
                Some(DeviceMemory::zeroed(ctx, history, "the CG residual history")?)
            } else {
                None
            },
            history_cap,
        })
    }

    /// Copies the scalar slots to the host, after the work queued before on the context's
    /// stream.
    pub(crate) fn read_slots(&self) -> Result<[f64; SLOTS]> {
        let mut out = [0.0; SLOTS];
        self.slots.copy_to_host(&mut out, "the CG scalars")?;
        Ok(out)
    }

    /// The first `count` recorded `r'r` values.
    pub(crate) fn read_history(&self, count: usize) -> Result<Vec<f64>> {
        let count = count.min(self.history_cap as usize);
        let Some(h) = &self.history else { return Ok(Vec::new()) };
        let mut all = vec![0.0; self.history_cap as usize];
        h.copy_to_host(&mut all, "the CG residual history")?;
        all.truncate(count);
        Ok(all)
    }

    /// The device addresses of the workspace's allocations.
    pub(crate) fn addresses(&self) -> Vec<u64> {
        let mut v = vec![
            self.slots.as_device_ptr().as_raw(),
            self.partials.as_device_ptr().as_raw(),
            self.ticket.as_device_ptr().as_raw(),
        ];
        v.extend(self.history.as_ref().map(|h| h.as_device_ptr().as_raw()));
        v
    }

    fn history_ptr(&self) -> DevicePointer<f64> {
        self.history.as_ref().map_or_else(DevicePointer::null, DeviceMemory::as_device_ptr)
    }
}

/// The CG kernels of one element type, looked up once per solve.
pub(crate) struct CgKernels<'a> {
    functions: Vec<Function<'a>>,
}

impl<'a> CgKernels<'a> {
    /// Looks up every CG kernel for `T`.
    pub(crate) fn load<T: Scalar>(ctx: &'a Context) -> Result<Self> {
        ctx.make_current()?;
        let functions = CgKernel::ALL
            .iter()
            .map(|&k| ctx.function(ModuleId::Cg, &cg_kernel_name(k, T::NAME)))
            .collect::<Result<Vec<_>>>()?;
        Ok(CgKernels { functions })
    }

    fn get(&self, k: CgKernel) -> &Function<'a> {
        let i = CgKernel::ALL.iter().position(|&x| x == k).expect("every CgKernel is in ALL");
        &self.functions[i]
    }
}

fn launch_error(kernel: CgKernel) -> impl Fn(DriverError) -> Error {
    move |e| Error::cuda(format!("launching {}", cg_kernel_name(kernel, "<T>")), e)
}

/// The pointer of an optional vector, null when absent.
fn opt_ptr<T: Scalar>(v: Option<&DeviceVector<T>>) -> DevicePointer<T> {
    v.map_or_else(DevicePointer::null, |v| v.as_device_ptr())
}

/// Checks an optional vector's length.
fn check_opt<T: Scalar>(op: &'static str, n: usize, v: Option<&DeviceVector<T>>) -> Result<()> {
    v.map_or(Ok(()), |v| check_len(op, n, v.len()))
}

/// Checks that the mode's vector is present.
fn check_mode<T: Scalar>(mode: i32, z: Option<&DeviceVector<T>>, dinv: Option<&DeviceVector<T>>) -> Result<()> {
    let ok = match mode {
        MODE_IDENTITY => true,
        MODE_DIAGONAL => dinv.is_some(),
        MODE_GENERAL => z.is_some(),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!("CG preconditioner mode {mode} without its vector")))
    }
}

/// `cg_start_<T>`: `p = z`, `rho = r'z`, `rr = r'r`, the status and iteration 0.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    ws: &mut Workspace,
    tol2: f64,
    r: &DeviceVector<T>,
    z: Option<&DeviceVector<T>>,
    dinv: Option<&DeviceVector<T>>,
    mode: i32,
    p: &mut DeviceVector<T>,
) -> Result<()> {
    let len = r.len();
    check_len("cg start: length of p", len, p.len())?;
    check_opt("cg start: length of z", len, z)?;
    check_opt("cg start: length of the inverse diagonal", len, dinv)?;
    check_mode(mode, z, dinv)?;
    let n = index("CG vector length", len)?;
    let grid = cg_grid(len);
    ctx.make_current()?;
    let f = k.get(CgKernel::Start);
    let (rp, zp, dp, pp) = (r.as_device_ptr(), opt_ptr(z), opt_ptr(dinv), p.as_device_ptr());
    let (s, parts, ticket, hist, cap) = (
        ws.slots.as_device_ptr(),
        ws.partials.as_device_ptr(),
        ws.ticket.as_device_ptr(),
        ws.history_ptr(),
        ws.history_cap,
    );
    // SAFETY: cg_start_<T>(unsigned n, const T* r, const T* z, const T* dinv, int mode, T* p,
    // double tol2, double* s, double* partials, unsigned* ticket, double* hist,
    // unsigned hist_cap); arguments match in order and type. r and p have n elements (checked
    // above), z and dinv have n elements when present and the kernel reads only the one the
    // mode names (checked present), s has SLOTS >= 9 slots, partials 2 * CG_MAX_BLOCKS
    // entries for a grid of at most CG_MAX_BLOCKS blocks of BLOCK threads (the kernel's
    // assumption), hist has hist_cap entries (null when 0, then never written). p is
    // borrowed mutably and cannot alias r, z or dinv.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, rp, zp, dp, mode, pp, tol2, s, parts, ticket, hist, cap)) }
        .map_err(launch_error(CgKernel::Start))
}

/// `cg_alpha_<T>`: `p'q` reduced into `alpha = rho / p'q`.
pub(crate) fn alpha<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    ws: &mut Workspace,
    p: &DeviceVector<T>,
    q: &DeviceVector<T>,
) -> Result<()> {
    check_len("cg alpha: length of q", p.len(), q.len())?;
    let n = index("CG vector length", p.len())?;
    let grid = cg_grid(p.len());
    ctx.make_current()?;
    let f = k.get(CgKernel::Alpha);
    let (pp, qp) = (p.as_device_ptr(), q.as_device_ptr());
    let (s, parts, ticket) = (ws.slots.as_device_ptr(), ws.partials.as_device_ptr(), ws.ticket.as_device_ptr());
    // SAFETY: cg_alpha_<T>(unsigned n, const T* p, const T* q, double* s, double* partials,
    // unsigned* ticket); arguments match. p and q have n elements (checked), the workspace
    // sizes fit a grid of at most CG_MAX_BLOCKS blocks of BLOCK threads.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, pp, qp, s, parts, ticket)) }
        .map_err(launch_error(CgKernel::Alpha))
}

/// `cg_spmv_csr_alpha_<T>`: `q = A p` (one thread per row) fused with `p'q` into `alpha`.
pub(crate) fn spmv_csr_alpha<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    ws: &mut Workspace,
    a: &impl CsrArrays,
    p: &DeviceVector<T>,
    q: &mut DeviceVector<T>,
) -> Result<()> {
    check_len("cg spmv: length of p", a.ncols(), p.len())?;
    check_len("cg spmv: length of q", a.nrows(), q.len())?;
    check_len("cg spmv: the matrix must be square", a.nrows(), a.ncols())?;
    let nrows = index("rows", a.nrows())?;
    let grid = cg_grid(a.nrows());
    ctx.make_current()?;
    let f = k.get(CgKernel::SpmvCsrAlpha);
    let (offsets, cols, vals) = match a.plain_csr() {
        Some((false, offsets, cols, vals)) => (offsets, cols, vals),
        _ => return Err(Error::InvalidArgument("cg spmv: the fused kernel needs CSR with 32-bit offsets".into())),
    };
    let (pp, qp) = (p.as_device_ptr(), q.as_device_ptr());
    let (s, parts, ticket) = (ws.slots.as_device_ptr(), ws.partials.as_device_ptr(), ws.ticket.as_device_ptr());
    // SAFETY: cg_spmv_csr_alpha_<T>(unsigned nrows, const unsigned* offsets, const unsigned*
    // cols, const T* vals, const T* p, T* q, double* s, double* partials, unsigned* ticket);
    // arguments match. The arrays are those of a validated DeviceCsr<T> (offsets bounded by
    // nnz, columns below ncols == p.len()), q has nrows elements and p has nrows == ncols
    // (checked above, so p[row] is in bounds); q is borrowed mutably and cannot alias p.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(nrows, offsets, cols, vals, pp, qp, s, parts, ticket)) }
        .map_err(launch_error(CgKernel::SpmvCsrAlpha))
}

/// `cg_spmv_ell_alpha_<T>`: `q = A p` for ELLPACK fused with `p'q` into `alpha`.
pub(crate) fn spmv_ell_alpha<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    ws: &mut Workspace,
    a: &impl EllArrays<T>,
    p: &DeviceVector<T>,
    q: &mut DeviceVector<T>,
) -> Result<()> {
    check_len("cg spmv: length of p", a.ncols(), p.len())?;
    check_len("cg spmv: length of q", a.nrows(), q.len())?;
    check_len("cg spmv: the matrix must be square", a.nrows(), a.ncols())?;
    let nrows = index("rows", a.nrows())?;
    let width = index("ELL width", a.width())?;
    // The kernel's slot index runs to width * nrows plus one row stride: it must fit 32 bits.
    index("ELL slots", (a.width() + 1).saturating_mul(a.nrows()))?;
    let grid = cg_grid(a.nrows());
    ctx.make_current()?;
    let kernel = if a.narrow_columns() { CgKernel::SpmvEll16Alpha } else { CgKernel::SpmvEllAlpha };
    let f = k.get(kernel);
    let (cols, vals) = (a.cols_addr(), a.values_ptr());
    let (pp, qp) = (p.as_device_ptr(), q.as_device_ptr());
    let (s, parts, ticket) = (ws.slots.as_device_ptr(), ws.partials.as_device_ptr(), ws.ticket.as_device_ptr());
    // SAFETY: cg_spmv_ell[16]_alpha_<T>(unsigned nrows, unsigned width, const unsigned* cols
    // or const unsigned short* col_offsets (16: the matrix stores narrow columns, which decode
    // to its columns), const T* vals, const T* p, T* q, double* s, double* partials, unsigned* ticket);
    // arguments match. The arrays hold width * nrows slots of a validated DeviceEll<T> whose
    // non-padding columns are below ncols == p.len(); q has nrows elements, p has nrows
    // (square, checked); the slot arithmetic fits 32 bits (checked). q cannot alias p.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(nrows, width, cols, vals, pp, qp, s, parts, ticket)) }
        .map_err(launch_error(kernel))
}

/// `cg_update_<T>`: `x += alpha p`, `r -= alpha q`, `r'r`, `r'z`, `beta`, the status.
#[allow(clippy::too_many_arguments)]
pub(crate) fn update<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    ws: &mut Workspace,
    x: &mut DeviceVector<T>,
    r: &mut DeviceVector<T>,
    p: &DeviceVector<T>,
    q: &DeviceVector<T>,
    dinv: Option<&DeviceVector<T>>,
    mode: i32,
) -> Result<()> {
    let len = x.len();
    check_len("cg update: length of r", len, r.len())?;
    check_len("cg update: length of p", len, p.len())?;
    check_len("cg update: length of q", len, q.len())?;
    check_opt("cg update: length of the inverse diagonal", len, dinv)?;
    if mode == MODE_DIAGONAL && dinv.is_none() {
        return Err(Error::InvalidArgument("CG diagonal mode without the inverse diagonal".into()));
    }
    let n = index("CG vector length", len)?;
    let grid = cg_grid(len);
    ctx.make_current()?;
    let f = k.get(CgKernel::Update);
    let (xp, rp, pp, qp, dp) =
        (x.as_device_ptr(), r.as_device_ptr(), p.as_device_ptr(), q.as_device_ptr(), opt_ptr(dinv));
    let (s, parts, ticket, hist, cap) = (
        ws.slots.as_device_ptr(),
        ws.partials.as_device_ptr(),
        ws.ticket.as_device_ptr(),
        ws.history_ptr(),
        ws.history_cap,
    );
    // SAFETY: cg_update_<T>(unsigned n, T* x, T* r, const T* p, const T* q, const T* dinv,
    // int mode, double* s, double* partials, unsigned* ticket, double* hist, unsigned
    // hist_cap); arguments match. x, r, p, q have n elements (checked), dinv too when present
    // and it is read only in diagonal mode (checked present); x and r are borrowed mutably so
    // they alias nothing; the workspace fits the grid; hist has hist_cap entries and the
    // kernel writes index it only when it < hist_cap.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, xp, rp, pp, qp, dp, mode, s, parts, ticket, hist, cap)) }
        .map_err(launch_error(CgKernel::Update))
}

/// `cg_rho_<T>`: `rho' = r'z`, `beta = rho'/rho` (general preconditioners).
pub(crate) fn rho<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    ws: &mut Workspace,
    r: &DeviceVector<T>,
    z: &DeviceVector<T>,
) -> Result<()> {
    check_len("cg rho: length of z", r.len(), z.len())?;
    let n = index("CG vector length", r.len())?;
    let grid = cg_grid(r.len());
    ctx.make_current()?;
    let f = k.get(CgKernel::Rho);
    let (rp, zp) = (r.as_device_ptr(), z.as_device_ptr());
    let (s, parts, ticket) = (ws.slots.as_device_ptr(), ws.partials.as_device_ptr(), ws.ticket.as_device_ptr());
    // SAFETY: cg_rho_<T>(unsigned n, const T* r, const T* z, double* s, double* partials,
    // unsigned* ticket); arguments match, r and z have n elements (checked), the workspace
    // fits the grid.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, rp, zp, s, parts, ticket)) }.map_err(launch_error(CgKernel::Rho))
}

/// `cg_direction_<T>`: `p = z + beta p`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn direction<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    ws: &Workspace,
    p: &mut DeviceVector<T>,
    r: &DeviceVector<T>,
    z: Option<&DeviceVector<T>>,
    dinv: Option<&DeviceVector<T>>,
    mode: i32,
) -> Result<()> {
    let len = p.len();
    check_len("cg direction: length of r", len, r.len())?;
    check_opt("cg direction: length of z", len, z)?;
    check_opt("cg direction: length of the inverse diagonal", len, dinv)?;
    check_mode(mode, z, dinv)?;
    let n = index("CG vector length", len)?;
    let grid = cg_grid(len);
    ctx.make_current()?;
    let f = k.get(CgKernel::Direction);
    let (pp, rp, zp, dp) = (p.as_device_ptr(), r.as_device_ptr(), opt_ptr(z), opt_ptr(dinv));
    let s = ws.slots.as_device_ptr();
    // SAFETY: cg_direction_<T>(unsigned n, T* p, const T* r, const T* z, const T* dinv,
    // int mode, const double* s); arguments match. p and r have n elements, z and dinv too
    // when present, and the kernel reads only the one the mode names (checked present). p is
    // borrowed mutably and aliases none of the others.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, pp, rp, zp, dp, mode, s)) }
        .map_err(launch_error(CgKernel::Direction))
}

/// `cg_dot_<T>`: `a'b` into the workspace's dot slot (read it with
/// [`Workspace::read_slots`]).
pub(crate) fn dot<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    ws: &mut Workspace,
    a: &DeviceVector<T>,
    b: &DeviceVector<T>,
) -> Result<()> {
    check_len("dot: length of the second vector", a.len(), b.len())?;
    let n = index("vector length", a.len())?;
    let grid = cg_grid(a.len());
    ctx.make_current()?;
    let f = k.get(CgKernel::Dot);
    let (ap, bp) = (a.as_device_ptr(), b.as_device_ptr());
    let (s, parts, ticket) = (ws.slots.as_device_ptr(), ws.partials.as_device_ptr(), ws.ticket.as_device_ptr());
    // SAFETY: cg_dot_<T>(unsigned n, const T* a, const T* b, double* s, double* partials,
    // unsigned* ticket); arguments match, a and b have n elements (checked), the workspace
    // fits the grid.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, ap, bp, s, parts, ticket)) }.map_err(launch_error(CgKernel::Dot))
}

/// `cg_hadamard_<T>`: `out = a .* b`.
pub(crate) fn hadamard<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    a: &DeviceVector<T>,
    b: &DeviceVector<T>,
    out: &mut DeviceVector<T>,
) -> Result<()> {
    check_len("hadamard: length of the second vector", a.len(), b.len())?;
    check_len("hadamard: length of the output", a.len(), out.len())?;
    let n = index("vector length", a.len())?;
    let grid = cg_grid(a.len());
    ctx.make_current()?;
    let f = k.get(CgKernel::Hadamard);
    let (ap, bp, op) = (a.as_device_ptr(), b.as_device_ptr(), out.as_device_ptr());
    // SAFETY: cg_hadamard_<T>(unsigned n, const T* a, const T* b, T* out); arguments match,
    // all three have n elements (checked), out is borrowed mutably and aliases neither input.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, ap, bp, op)) }.map_err(launch_error(CgKernel::Hadamard))
}

/// `cg_norm_<T>`: `||a||` without overflow, as the scale `max |a_i|` and the scaled sum of
/// squares `sum (a_i / scale)^2` in the workspace's norm slots (read them with
/// [`Workspace::read_slots`]).
pub(crate) fn norm<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    ws: &mut Workspace,
    a: &DeviceVector<T>,
) -> Result<()> {
    let n = index("vector length", a.len())?;
    let grid = cg_grid(a.len());
    ctx.make_current()?;
    let f = k.get(CgKernel::Norm);
    let ap = a.as_device_ptr();
    let (s, parts, ticket) = (ws.slots.as_device_ptr(), ws.partials.as_device_ptr(), ws.ticket.as_device_ptr());
    // SAFETY: cg_norm_<T>(unsigned n, const T* a, double* s, double* partials, unsigned*
    // ticket); arguments match, a has n elements (null only when n == 0, then never read),
    // the workspace fits the grid (at most CG_MAX_BLOCKS blocks of BLOCK threads).
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, ap, s, parts, ticket)) }.map_err(launch_error(CgKernel::Norm))
}

/// `cg_scale_<T>`: `a *= alpha` (alpha rounded to `T`).
pub(crate) fn scale<T: Scalar>(
    ctx: &Context,
    stream: &Stream,
    k: &CgKernels<'_>,
    alpha: f64,
    a: &mut DeviceVector<T>,
) -> Result<()> {
    let n = index("vector length", a.len())?;
    let grid = cg_grid(a.len());
    ctx.make_current()?;
    let f = k.get(CgKernel::Scale);
    let ap = a.as_device_ptr();
    // SAFETY: cg_scale_<T>(unsigned n, double alpha, T* a); arguments match, a has n
    // elements and is borrowed mutably.
    unsafe { launch!(f<<<grid, BLOCK, 0, stream>>>(n, alpha, ap)) }.map_err(launch_error(CgKernel::Scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_is_bounded_and_the_index_limit_is_enforced() {
        assert_eq!(cg_grid(0), 1);
        assert_eq!(cg_grid(257), 2);
        assert_eq!(cg_grid(usize::MAX), CG_MAX_BLOCKS);
        // Every length a launcher accepts fits the kernels' `unsigned n`; the kernels walk
        // it with a 64-bit index (ptx/cg.cu, GRID_STRIDE), so n = u32::MAX cannot wrap.
        assert_eq!(index("vector length", u32::MAX as usize).unwrap(), u32::MAX);
        let err = index("vector length", u32::MAX as usize + 1).unwrap_err();
        assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("32-bit")), "{err}");
    }

    #[test]
    fn every_cg_kernel_has_a_unique_name() {
        let names = all_kernel_names();
        assert_eq!(names.len(), 2 * CgKernel::ALL.len());
        let unique: std::collections::HashSet<_> = names.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(unique.len(), names.len());
        assert!(unique.contains("cg_norm_f64") && unique.contains("cg_scale_f32"));
    }
}
