//! The GPU side of spgpu: a [`Context`], device vectors and matrices, the SpMV kernels and
//! the plan that picks one.
//!
//! - [`Context`] owns the CUDA context (the device's primary context), one stream and every
//!   loaded PTX module. [`Context::global`] makes it once per process, on the device named by
//!   `SPGPU_DEVICE` (default 0), and returns [`Error::NoDevice`](crate::Error::NoDevice)
//!   when there is no GPU.
//! - [`DeviceVector`] holds a dense vector; [`DeviceCsr`] and [`DeviceEll`] hold matrices and
//!   can only be made by uploading validated host matrices ([`CsrMatrix`](crate::CsrMatrix),
//!   [`EllMatrix`](crate::EllMatrix)), so the kernels need no bounds checks.
//! - `spmv(alpha, &x, beta, &mut y)` computes `y = alpha*A*x + beta*y` on the context's
//!   stream, without synchronizing. `beta == 0` never reads `y`; `alpha == 0` never reads
//!   `A` or `x`.
//! - [`SpmvPlan`] is the one place where a CSR kernel is chosen from the row statistics
//!   (see its docs for the rule); it can be built without a GPU and [`SpmvPlan::explain`]s
//!   its choice.
//!
//! # Example
//!
//! ```no_run
//! use spgpu::gpu::{Context, DeviceCsr, DeviceVector};
//! let ctx = Context::global()?;
//! let a = spgpu::gen::laplacian_2d::<f64>(100);
//! let d_a = DeviceCsr::upload(ctx, &a)?;
//! println!("{}", d_a.plan().explain());
//! let x = DeviceVector::from_slice(ctx, &vec![1.0; a.ncols()])?;
//! let mut y = DeviceVector::zeros(ctx, a.nrows())?;
//! d_a.spmv(1.0, &x, 0.0, &mut y)?;
//! let y_host = y.to_vec()?;
//! assert_eq!(y_host.len(), a.nrows());
//! # Ok::<(), spgpu::Error>(())
//! ```

mod context;
mod csr;
pub mod driver;
mod ell;
pub(crate) mod kernels;
mod module;
mod plan;
mod vector;

pub use context::{Context, DeviceInfo, DEVICE_ENV};
pub use csr::DeviceCsr;
pub use ell::DeviceEll;
#[doc(hidden)]
pub use kernels::all_kernel_names;
pub use kernels::{kernel_name, GpuKernel};
pub use module::ModuleId;
pub use plan::{KernelChoice, SpmvKernel, SpmvPlan, VECTOR_THREADS_PER_ROW};
pub use vector::DeviceVector;
