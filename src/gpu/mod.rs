//! The GPU side of spgpu: a [`Context`], device vectors and matrices, the SpMV kernels and
//! the plan that picks one.
//!
//! - [`Context`] owns the CUDA context (the device's primary context), one non-blocking
//!   [`Stream`] and every loaded PTX module. [`Context::global`] makes it once per process, on the device named by
//!   `SPGPU_DEVICE` (default 0), and returns [`Error::NoDevice`](crate::Error::NoDevice)
//!   when there is no GPU.
//! - [`DeviceVector`] holds a dense vector; [`DeviceCsr`] and [`DeviceEll`] hold matrices and
//!   can only be made by uploading validated host matrices ([`CsrMatrix`](crate::CsrMatrix),
//!   [`EllMatrix`](crate::EllMatrix)), so the kernels need no bounds checks.
//! - `spmv(alpha, &x, beta, &mut y)` computes `y = alpha*A*x + beta*y` on the context's
//!   stream, without synchronizing. `beta == 0` never reads `y`; `alpha == 0` never reads
//!   `A` or `x`.
//! - [`SpmvPlan`] says which kernel and which device storage run a CSR matrix, and
//!   [`SpmvPlan::explain`]s why. It can be made without a GPU.
//!
//! # Layers
//!
//! The folders of `gpu/` are layers; each file imports only from its own layer and those
//! below it (`tests/layers.rs` reads the sources and checks it):
//!
//! - `runtime/`: the CUDA driver ([`driver`]), the [`Context`] and its [`DeviceInfo`],
//!   streams, device memory, vectors and the PTX modules.
//! - `plan/`: the rules, pure. Row statistics, the columns' layout and counts, the device's
//!   facts and the [`Tuning`] in; decisions out: the kernel ([`SpmvPlan`], whose docs give
//!   the rule), the row-block shape, chunk-major order and the L2 prefetch of the balanced
//!   kernel ([`balance`]), hot columns ([`hot`]), column parts ([`split`]) and 16-bit
//!   columns ([`narrow`]). Every threshold lives there, next to the measurement it came from.
//! - `kernels/`: one launcher per kernel and the one function that names them
//!   ([`kernel_name`]).
//! - `storage/`: [`DeviceCsr`], [`DeviceEll`], SELL-C-σ ([`sell`]), row blocks, hot columns,
//!   column parts and narrow columns on the device, and the maps that move new values on
//!   the same pattern into them ([`values`]). An upload asks the plan at each step and
//!   carries out its answer; some answers need what only the device can give (the columns'
//!   counts, the hot-column kernel's shared memory and occupancy), which the upload finds
//!   and passes to the plan's rule. The upload's decisions after the kernel rule (balanced
//!   in place of SELL where the balanced kernel would keep hot columns, column parts, SELL's
//!   padding, the row-block shape) are ordered by one function of `plan/`
//!   (`plan::upload::decide`), which asks the storage layer for what only the device or a
//!   layout can tell (the hot-column kernel's limits, the columns' counts, SELL's slots).
//!
//! Every `SPGPU_*` override of the rules is read once into [`Tuning::from_env`]; the same
//! overrides can be set in code through [`UploadOptions`], and [`SpmvPlan::explain`] names
//! those in force.
//!
//! # Threading model
//!
//! Every GPU type of spgpu can be used from many threads at once: rayon pools, web
//! servers and test harnesses need no lock of their own.
//!
//! | type | `Send` | `Sync` | notes |
//! |---|---|---|---|
//! | [`Context`] | yes | yes | one per process ([`Context::global`]), shared by reference |
//! | [`Stream`] | yes | yes | the driver orders work from all threads in call order |
//! | [`DeviceVector`], [`DeviceCsr`], [`DeviceEll`] | yes | yes | `&self` methods (SpMV, downloads) from any number of threads; `&mut self` ones (fills, uploads into) need exclusive access, as Rust enforces |
//! | [`Device`](crate::solver::Device) (the CG backend) | yes | yes | any number of solves at once, each with its own vectors |
//! | [`DeviceState`](crate::solver::DeviceState) | yes | yes | one solve's scalars; a solve borrows it mutably |
//! | [`DeviceRecording`](crate::solver::DeviceRecording) | yes | no | a CUDA graph, launched by one thread at a time |
//!
//! What may run concurrently: everything. Uploads, downloads, SpMV, CG solves with and
//! without CUDA graphs, and drops of vectors and matrices may race freely across threads.
//! How spgpu makes that safe:
//!
//! - All of spgpu's work (allocations, copies, launches, frees) goes to the context's one
//!   stream, which is **non-blocking**: spgpu never uses the legacy default stream, so
//!   other code's use of it neither waits for spgpu nor breaks a CUDA graph capture.
//!   Copies to and from the host are asynchronous copies on that stream followed by a
//!   wait; memory is allocated and freed stream-ordered (`cuMemAllocAsync`,
//!   `cuMemFreeAsync`), so a drop never synchronizes the device and never frees memory
//!   that queued work still uses.
//! - CG batches are recorded as CUDA graphs on a private non-blocking stream per
//!   [`Device`](crate::solver::Device), in `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL` (other
//!   threads' calls do not affect the capture), while a process-wide lock keeps spgpu's
//!   allocations, frees and copies waiting (a capture takes well under a millisecond).
//! - A recording remembers the allocations it uses and refuses to replay once any of them
//!   was freed ([`Backend::replay`](crate::solver::Backend::replay)).
//!
//! Work from different threads is ordered on the one stream in the order the calls are
//! made, and the kernels of one product (with hot columns, the gather of the hot entries of
//! `x` and the kernel that reads them, which share the matrix's scratch) are queued together
//! under a lock of the matrix, so results never depend on the interleaving; a thread that only reads what it
//! wrote itself needs no synchronization of its own. One thing is not safe while other
//! threads use spgpu: capturing [`Context::stream`] into a CUDA graph yourself (a capture
//! takes in whatever any thread queues on the stream); capture a stream of your own. And
//! a device-wide synchronization (`cuCtxSynchronize`, `cudaDeviceSynchronize`) by other
//! code while spgpu records a graph can invalidate the recording: the solver then goes on
//! launching step by step and says so in its report
//! ([`CgWarning::GraphRecordingFailed`](crate::solver::CgWarning::GraphRecordingFailed)).
//!
//! Errors keep the driver's code ([`Error::Cuda`](crate::Error::Cuda) with a
//! [`DriverError`](crate::error::DriverError)), and say when a stream capture was
//! invalidated.
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

pub(crate) mod kernels;
pub(crate) mod plan;
pub(crate) mod runtime;
pub(crate) mod storage;

#[doc(hidden)]
pub use kernels::all_kernel_names;
pub use kernels::{kernel_name, kernel_name_64, GpuKernel};
pub use plan::{ColumnLayout, KernelChoice, SpmvKernel, SpmvPlan, Tuning, UploadOptions, VECTOR_THREADS_PER_ROW};
pub use runtime::context::{Context, DeviceInfo, DEVICE_ENV, MEMORY_POOLS_ENV, PORTABLE_PTX_ENV};
pub use runtime::driver;
pub use runtime::memory::PINNED_STAGING_ENV;
pub use runtime::module::ModuleId;
pub use runtime::positions::positions_need_64_bits;
pub use runtime::stream::{Event, Stream};
pub use runtime::vector::DeviceVector;
pub use storage::csr::{CsrPtrs, DeviceCsr, DeviceIndices64};
pub use storage::ell::{DeviceEll, DEVICE_CONVERSION_ENV};
pub use storage::{balance, hot, narrow, sell, split, values};

// the paths the solver uses
pub(crate) use runtime::{memory, stream};
