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

use super::{index, BLOCK};
use crate::error::DriverError;
use crate::gpu::vector::check_len;
use crate::gpu::{Context, DeviceVector, ModuleId, Stream};
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

/// Every AMG kernel name, with its module, for `tests/ptx.rs`.
pub(crate) fn all_kernel_names() -> Vec<(ModuleId, String)> {
    AmgKernel::TYPED.iter().flat_map(|&k| ["f32", "f64"].map(|s| (ModuleId::Amg, amg_kernel_name(k, s)))).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_scheme_and_are_unique() {
        let names = all_kernel_names();
        assert_eq!(names.len(), 2 * AmgKernel::TYPED.len());
        let unique: std::collections::HashSet<_> = names.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(unique.len(), names.len());
        for n in ["amg_axpby_f32", "amg_axpby_f64", "amg_cheb_f32", "amg_cheb_f64", "amg_jacobi_f32", "amg_jacobi_f64"]
        {
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
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ptx");
        for file in ["amg.ptx", "amg.sm80.ptx"] {
            let text = std::fs::read_to_string(dir.join(file)).expect("committed ptx/amg*.ptx");
            for (_, name) in all_kernel_names() {
                assert!(text.contains(&format!(".visible .entry {name}(")), "{name} is not an entry of ptx/{file}");
            }
            assert!(ModuleId::Amg.ptx().contains(".visible .entry amg_axpby_f64("));
        }
    }
}
