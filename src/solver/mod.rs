//! Conjugate gradient for symmetric positive definite systems, on the GPU or the CPU.
//!
//! [`cg`] solves `A x = b` for any [`LinearOperator`] on any [`Backend`]: the host
//! ([`Host`], with a [`CsrMatrix`](crate::CsrMatrix) and `Vec<T>`) or the device (device
//! matrices and vectors, see [`crate::gpu`]). One algorithm serves both, so they share their
//! tests.
//!
//! On the device an iteration is four kernel launches and no host round trip: the SpMV
//! `q = A p`; `p'q` reduced to `alpha = rho / p'Ap` on the device; one fused pass for
//! `x += alpha p`, `r -= alpha q`, the Jacobi scaling `z = r / diag(A)`, `r'r` and `r'z`,
//! reduced to `beta`; and `p = z + beta p`. The scalars stay in device memory; the residual
//! norm and a status word come back every [`CgParams::check_interval`] iterations.
//! Reductions are deterministic (fixed grid, fixed order, no floating-point atomics), so a
//! run repeats bit for bit.
//!
//! GPU solves may run from many threads at once (see
//! [the threading model](crate::gpu#threading-model)). The solver stops honestly: at the
//! tolerance, at the limit of the element type's precision ([`precision_floor`],
//! [`StopReason::PrecisionLimit`], flagged beforehand by [`CgParams::precision_warning`]),
//! or with a breakdown only when `p'Ap <= 0` far from the solution; norms never overflow
//! for finite data.
//!
//! # Example
//!
//! ```
//! use spgpu::{gen, solver::{cg, CgParams, Host, PreconditionerKind, StopReason}};
//! let a = gen::laplacian_2d::<f64>(16);
//! let b = vec![1.0; a.nrows()];
//! let mut x = vec![0.0; a.nrows()];
//! let params = CgParams { preconditioner: PreconditionerKind::Jacobi, ..CgParams::default() };
//! let report = cg(&Host, &a, &b, &mut x, &params)?;
//! assert_eq!(report.stop_reason, StopReason::Converged);
//! assert!(report.relative_residual <= 1e-8);
//! # Ok::<(), spgpu::solver::CgError>(())
//! ```

mod amg;
mod backend;
#[allow(clippy::module_inception)]
mod cg;
mod device;
mod host;
mod operator;
mod precond;
mod reorder;

pub use amg::{
    auto_for_device, auto_precheck, build_auto, Amg, AmgDeviceMatrix, AmgDeviceVector, AmgHierarchy, AmgInfo, AmgLevel,
    AmgLevelInfo, AmgMemory, AmgParams, AutoChoice, FineTransfer, SetupPlace, Smoother, AUTO_DOMINANCE_LIMIT,
    AUTO_MAX_OPERATOR_COMPLEXITY, AUTO_MIN_COARSENING, AUTO_SKEW_LIMIT, COARSE_THETA, DENSE_LIMIT,
};
pub use backend::{Backend, Checkpoint, PrecondForm, ScaledNorm, Status};
pub use cg::{
    cg, cg_vector_bytes, cg_with, iteration_floor_bytes, precision_floor, CgError, CgParams, CgReport, CgWarning,
    StopReason, HISTORY_LIMIT, PRECISION_LIMIT_FACTOR,
};
pub use device::{Device, DeviceRecording, DeviceState};
pub use host::{Host, HostState};
pub use operator::{DeviceMatrix, LinearOperator};
pub use precond::{Identity, Jacobi, Preconditioner, PreconditionerKind};
pub use reorder::{cg_reordered, Renumbered, ReorderInfo, SolveIn};
