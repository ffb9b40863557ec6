//! The process-wide CUDA context: device, primary context, stream and loaded modules.

use std::env;
use std::sync::OnceLock;
use std::time::Duration;

use cust::context::{Context as CudaContext, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::event::EventFlags;
use cust::function::Function;
use cust::module::Module;
use cust::CudaFlags;

use crate::gpu::runtime::stream::Event;

use crate::gpu::runtime::module::ModuleId;

use crate::error::DriverError;
use crate::gpu::runtime::stream::Stream;
use crate::{Error, Result};

/// The environment variable that picks the CUDA device by ordinal (default 0).
pub const DEVICE_ENV: &str = "SPGPU_DEVICE";

/// The environment variable that, set to `0`, turns off stream-ordered allocation
/// (`cuMemAllocAsync`) even where the device supports memory pools; spgpu then uses
/// `cuMemAlloc` and a synchronized `cuMemFree` (see [`Context::memory_pools`]).
pub const MEMORY_POOLS_ENV: &str = "SPGPU_MEMORY_POOLS";

/// The environment variable that, set to `1`, loads the portable PTX (`compute_70`) on every
/// device, instead of the `compute_80` variant that GPUs from Ampere on load
/// ([`ModuleId::ptx_for`]): to compare the two.
pub const PORTABLE_PTX_ENV: &str = "SPGPU_PORTABLE_PTX";

/// What spgpu knows about the device its context runs on ([`Context::info`]); more fields may
/// come, so it cannot be built outside the crate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceInfo {
    /// The device ordinal (from `SPGPU_DEVICE`, default 0).
    pub ordinal: u32,
    /// The device's name, for example "NVIDIA H200".
    pub name: String,
    /// Compute capability as `(major, minor)`, for example `(9, 0)`.
    pub compute_capability: (u32, u32),
    /// Threads per warp (32 on every NVIDIA GPU so far); caps the vector kernel's threads per
    /// row.
    pub warp_size: u32,
    /// Number of streaming multiprocessors.
    pub sm_count: u32,
    /// The most shared memory one block can use, in bytes, when a kernel opts in
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`; 227 KiB on the H200): bounds
    /// the hot columns of the balanced kernel ([`hot`](crate::gpu::storage::hot)).
    pub shared_memory_per_block_optin: u32,
    /// Shared memory per SM, in bytes (228 KiB on the H200).
    pub shared_memory_per_multiprocessor: u32,
    /// Total device memory in bytes.
    pub total_memory: usize,
    /// The L2 cache in bytes (50 MiB on the H100, 60 MiB on the H200): bounds the `x` that the
    /// balanced kernel gathers with an L2 prefetch
    /// ([`balance::prefetch_x`](crate::gpu::balance::prefetch_x)).
    pub l2_cache_bytes: usize,
}

/// The CUDA context of spgpu: the device's primary context, one non-blocking stream, and
/// every PTX module, loaded once when the context is made.
///
/// There is one per process, made by [`Context::global`] on first use; device vectors and
/// matrices keep a `&'static Context`. It is `Send` and `Sync` and can be used from any
/// number of threads at once: every entry point makes the context current on the calling
/// thread first. All of spgpu's work goes to its one [`stream`](Context::stream), in the
/// order the calls are made; launches return without waiting for the GPU, and only copies
/// to the host, [`synchronize`](Context::synchronize) and [`time`](Context::time) wait.
/// See [the threading model](crate::gpu#threading-model).
#[derive(Debug)]
pub struct Context {
    // Field order is drop order; the context is never dropped in practice (it lives in a
    // static), but modules, buffers and the stream belong before the context they live in.
    modules: Vec<Module>,
    staging: Option<std::sync::Mutex<crate::gpu::runtime::memory::Staging>>,
    stream: Stream,
    info: DeviceInfo,
    memory_pools: bool,
    /// The virtual architecture of the loaded PTX ([`Context::ptx_arch`]).
    ptx_arch: String,
    /// Whether the loaded SpMV PTX has the L2 prefetch hint ([`Context::l2_prefetch`]).
    l2_prefetch: bool,
    context: CudaContext,
}

/// Why the global context could not be made, kept so that every later call returns the
/// same error.
#[derive(Debug)]
enum InitFailure {
    NoDevice(String),
    Cuda(String, DriverError),
    InvalidArgument(String),
}

impl InitFailure {
    fn from_error(e: Error) -> Self {
        match e {
            Error::NoDevice { reason } => InitFailure::NoDevice(reason),
            Error::Cuda { context, source } => InitFailure::Cuda(context, source),
            // the message alone: `to_error` wraps it again
            Error::InvalidArgument(msg) => InitFailure::InvalidArgument(msg),
            other => InitFailure::InvalidArgument(other.to_string()),
        }
    }

    fn to_error(&self) -> Error {
        match self {
            InitFailure::NoDevice(reason) => Error::NoDevice { reason: reason.clone() },
            InitFailure::Cuda(context, source) => Error::Cuda { context: context.clone(), source: *source },
            InitFailure::InvalidArgument(msg) => Error::InvalidArgument(msg.clone()),
        }
    }
}

static GLOBAL: OnceLock<std::result::Result<Context, InitFailure>> = OnceLock::new();

/// The shared memory the balanced kernels prefer, in percent of the SM's (30%: the 100 KiB
/// configuration on the H200). Eight blocks of the balanced kernel need 74 KiB; left to
/// itself the driver picks 132 KiB, leaving less L1 for the gathers of `x`. On the H200
/// this took the R-MAT, web-like and power-law matrices 1-3% faster (`web:4000000` f32
/// 309.7 -> 303.3 us, `rmat:22:8` f64 301.6 -> 293.7 us).
const BALANCED_SHARED_CARVEOUT: i32 = 30;

/// Sets the balanced kernels' preferred shared-memory carveout
/// ([`BALANCED_SHARED_CARVEOUT`]), once, when the modules are loaded.
fn prefer_l1(modules: &[Module]) -> Result<()> {
    let spmv = &modules[ModuleId::Spmv.index()];
    for scalar in ["f32", "f64"] {
        // (shape, chunk-major, prefetching gathers): every balanced kernel
        let shapes = crate::gpu::plan::balance::RowShape::ALL
            .into_iter()
            .flat_map(|s| [(s, false, false), (s, false, true)])
            .chain([(crate::gpu::plan::balance::RowShape::DEFAULT, true, false)]);
        for (wide, (shape, sweep, prefetch)) in
            [false, true].into_iter().flat_map(|w| shapes.clone().map(move |s| (w, s)))
        {
            let name = crate::gpu::kernels::balanced_kernel_name(shape, sweep, prefetch, scalar, wide);
            let function = spmv.get_function(&name).map_err(|e| Error::cuda(format!("looking up kernel {name}"), e))?;
            // SAFETY: cuFuncSetAttribute(CUfunction, attribute, int) on a function of a loaded
            // module; the carveout is a preference in 0..=100.
            let rc = unsafe {
                cust::sys::cuFuncSetAttribute(
                    function.to_raw(),
                    cust::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                    BALANCED_SHARED_CARVEOUT,
                )
            };
            DriverError::check(rc)
                .map_err(|e| Error::cuda(format!("setting the shared memory carveout of {name}"), e))?;
        }
    }
    Ok(())
}

impl Context {
    /// The process-wide context, made on first call on the device named by `SPGPU_DEVICE`
    /// (an ordinal, default 0), with every PTX module loaded. It is current on the calling
    /// thread when this returns.
    ///
    /// # Errors
    ///
    /// [`Error::NoDevice`] when there is no driver, no GPU, or no device of that ordinal;
    /// [`Error::InvalidArgument`] when `SPGPU_DEVICE` is not a number; [`Error::Cuda`] when
    /// the driver fails otherwise (for example a PTX module that does not load). A failure
    /// is remembered: later calls return the same error.
    ///
    /// # Example
    ///
    /// ```no_run
    /// match spgpu::gpu::Context::global() {
    ///     Ok(ctx) => println!("running on {}", ctx.info().name),
    ///     Err(e) if e.is_no_device() => println!("no GPU: {e}"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn global() -> Result<&'static Context> {
        let ctx = GLOBAL
            .get_or_init(|| Context::init().map_err(InitFailure::from_error))
            .as_ref()
            .map_err(InitFailure::to_error)?;
        ctx.make_current()?;
        Ok(ctx)
    }

    fn init() -> Result<Context> {
        let ordinal = match env::var(DEVICE_ENV) {
            Ok(s) => s.trim().parse::<u32>().map_err(|_| {
                Error::InvalidArgument(format!("{DEVICE_ENV}={s:?} is not a device ordinal (0, 1, ...)"))
            })?,
            Err(_) => 0,
        };
        cust::init(CudaFlags::empty()).map_err(|e| Error::cuda("initializing the CUDA driver", e))?;
        let device =
            Device::get_device(ordinal).map_err(|e| Error::cuda(format!("opening CUDA device {ordinal}"), e))?;
        let attr = |a: DeviceAttribute, what: &str| -> Result<u32> {
            let v = device
                .get_attribute(a)
                .map_err(|e| Error::cuda(format!("reading the {what} of device {ordinal}"), e))?;
            u32::try_from(v).map_err(|_| Error::InvalidArgument(format!("device {ordinal} reports a {what} of {v}")))
        };
        // attributes that cust's DeviceAttribute lacks
        let raw_attr = |a: cust::sys::CUdevice_attribute, what: &str| -> Result<i32> {
            let mut v = 0;
            // SAFETY: cuDeviceGetAttribute(int*, CUdevice_attribute, CUdevice) with a valid
            // out-pointer and the device opened above.
            let rc = unsafe { cust::sys::cuDeviceGetAttribute(&mut v, a, device.as_raw()) };
            DriverError::check(rc).map_err(|e| Error::cuda(format!("reading the {what} of device {ordinal}"), e))?;
            Ok(v)
        };
        let context =
            CudaContext::new(device).map_err(|e| Error::cuda(format!("creating a context on device {ordinal}"), e))?;
        let info = DeviceInfo {
            ordinal,
            name: device.name().map_err(|e| Error::cuda("reading the device name", e))?,
            compute_capability: (
                attr(DeviceAttribute::ComputeCapabilityMajor, "compute capability")?,
                attr(DeviceAttribute::ComputeCapabilityMinor, "compute capability")?,
            ),
            warp_size: attr(DeviceAttribute::WarpSize, "warp size")?,
            sm_count: attr(DeviceAttribute::MultiprocessorCount, "multiprocessor count")?,
            shared_memory_per_block_optin: raw_attr(
                cust::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                "shared memory per block",
            )?
            .max(0) as u32,
            shared_memory_per_multiprocessor: attr(
                DeviceAttribute::MaxSharedMemoryPerMultiprocessor,
                "shared memory per multiprocessor",
            )?,
            total_memory: device.total_memory().map_err(|e| Error::cuda("reading the device memory size", e))?,
            l2_cache_bytes: attr(DeviceAttribute::L2CacheSize, "L2 cache size")? as usize,
        };
        // Non-blocking: it never waits for (or joins) the legacy default stream, which spgpu
        // does not use (every copy is asynchronous on this stream) but other code may.
        CurrentContext::set_current(&context).map_err(|e| Error::cuda("making the new context current", e))?;
        let stream = Stream::non_blocking("the context's stream")?;
        // Stream-ordered allocation (cuMemAllocAsync) where the device supports memory pools.
        let pools =
            raw_attr(cust::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, "memory-pool support")?;
        let memory_pools = pools != 0 && env::var(MEMORY_POOLS_ENV).map_or(true, |v| v.trim() != "0");
        let portable = env::var(PORTABLE_PTX_ENV).is_ok_and(|v| v.trim() == "1");
        let capability = if portable { (7, 0) } else { info.compute_capability };
        let modules = ModuleId::ALL
            .iter()
            .map(|&id| {
                let stem = id.stem();
                let which = if capability.0 >= 8 {
                    format!("ptx/{stem}.sm80.ptx; {PORTABLE_PTX_ENV}=1 loads ptx/{stem}.ptx instead")
                } else {
                    format!("ptx/{stem}.ptx")
                };
                Module::from_ptx(id.ptx_for(capability), &[])
                    .map_err(|e| Error::cuda(format!("loading PTX module {stem} ({which})"), e))
            })
            .collect::<Result<Vec<_>>>()?;
        prefer_l1(&modules)?;
        let staging = crate::gpu::runtime::memory::Staging::new()?.map(std::sync::Mutex::new);
        // as the PTX says (`.target sm_NN`): build.rs may have made it for another one
        let target = ModuleId::Spmv.ptx_for(capability).lines().find_map(|l| l.trim().strip_prefix(".target "));
        let ptx_arch = target.map_or_else(|| "unknown".into(), |t| t.trim().replacen("sm_", "compute_", 1));
        // as the PTX says too: the compute_80 PTX of an nvcc before 11.4 has no hint
        let l2_prefetch = ModuleId::Spmv.ptx_for(capability).contains(".L2::128B.");
        Ok(Context { modules, staging, stream, info, memory_pools, ptx_arch, l2_prefetch, context })
    }

    /// Makes this context current on the calling thread. Every spgpu entry point does this
    /// itself; call it before using the [`stream`](Context::stream) or the context with
    /// other CUDA code directly from a new thread.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the driver refuses.
    pub fn make_current(&self) -> Result<()> {
        CurrentContext::set_current(&self.context).map_err(|e| Error::cuda("making the CUDA context current", e))
    }

    /// The pinned staging buffers of large uploads ([`crate::gpu::runtime::memory::Staging`]).
    pub(crate) fn staging(&self) -> Option<&std::sync::Mutex<crate::gpu::runtime::memory::Staging>> {
        self.staging.as_ref()
    }

    /// The device this context runs on.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The warp size of the device (see [`DeviceInfo::warp_size`]).
    pub fn warp_size(&self) -> u32 {
        self.info.warp_size
    }

    /// The stream all of spgpu's copies, launches, allocations and frees go to: a
    /// non-blocking stream ([`Stream`]). Other code (cuSPARSE, extra kernels) that shares
    /// data with spgpu should use it too, to stay ordered; work on another stream must be
    /// ordered with it by the caller (an event, or a synchronization).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The virtual architecture of the PTX the kernels were loaded from, as its `.target`
    /// line names it: `"compute_80"` on GPUs of compute capability 8.0 and up, `"compute_70"`
    /// on older ones and where [`PORTABLE_PTX_ENV`] is `1` ([`ModuleId::ptx_for`]), unless
    /// `build.rs` made the PTX for another (`SPGPU_PTX_ARCH`, or an nvcc without
    /// `compute_80`).
    pub fn ptx_arch(&self) -> &str {
        &self.ptx_arch
    }

    /// Whether the loaded SpMV PTX has the 128-byte L2 prefetch hint on its loads
    /// (`ld.global...L2::128B`): the PTX for `compute_80` and newer, made by nvcc 11.4 or
    /// newer (`ptx/common.cuh`), as the committed files are.
    pub fn l2_prefetch(&self) -> bool {
        self.l2_prefetch
    }

    /// Whether device memory is allocated stream-ordered (`cuMemAllocAsync`, when the
    /// device supports memory pools and `SPGPU_MEMORY_POOLS` is not `0`) rather than with
    /// `cuMemAlloc`.
    pub fn memory_pools(&self) -> bool {
        self.memory_pools
    }

    /// Device memory available to new allocations, in bytes: the driver's free memory plus,
    /// with memory pools, what the device's default pool holds but does not use (spgpu's
    /// freed allocations, which the pool hands out again).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the driver refuses a query.
    pub fn available_memory(&self) -> Result<u64> {
        use cust::sys as cu;
        self.make_current()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: cuMemGetInfo_v2(size_t*, size_t*) with valid out-pointers, this context
        // current.
        DriverError::check(unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) })
            .map_err(|e| Error::cuda("querying the free device memory", e))?;
        let mut available = free as u64;
        if self.memory_pools {
            let mut dev: cu::CUdevice = 0;
            let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
            let (mut reserved, mut used) = (0u64, 0u64);
            // SAFETY: valid out-pointers; the pool is the current device's default pool,
            // whose attributes RESERVED_MEM_CURRENT and USED_MEM_CURRENT are cuuint64_t.
            let rc = unsafe {
                let mut rc = cu::cuCtxGetDevice(&mut dev);
                if rc == cu::CUresult::CUDA_SUCCESS {
                    rc = cu::cuDeviceGetDefaultMemPool(&mut pool, dev);
                }
                for (attr, out) in [
                    (cu::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &mut reserved),
                    (cu::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &mut used),
                ] {
                    if rc == cu::CUresult::CUDA_SUCCESS {
                        rc = cu::cuMemPoolGetAttribute(pool, attr, (out as *mut u64).cast());
                    }
                }
                rc
            };
            DriverError::check(rc).map_err(|e| Error::cuda("querying the device memory pool", e))?;
            available += reserved.saturating_sub(used);
        }
        Ok(available)
    }

    /// The cust context (the device's primary context).
    #[allow(dead_code)]
    pub(crate) fn cuda_context(&self) -> &CudaContext {
        &self.context
    }

    /// A kernel of a loaded module, by its `extern "C"` name (see
    /// [`kernel_name`](crate::gpu::kernels::kernel_name)).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] (not found) when the module has no such kernel.
    pub(crate) fn function(&self, module: ModuleId, name: &str) -> Result<Function<'_>> {
        self.modules[module.index()]
            .get_function(name)
            .map_err(|e| Error::cuda(format!("looking up kernel {name} in module {}", module.stem()), e))
    }

    /// Waits until all work queued on the stream is done.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] if the work failed (errors of earlier asynchronous launches surface
    /// here).
    pub fn synchronize(&self) -> Result<()> {
        self.make_current()?;
        self.stream.synchronize()
    }

    /// Times the GPU work that `work` queues on the stream, with CUDA events recorded before
    /// and after it, and returns the elapsed device time (resolution about 0.5 µs). Waits for
    /// the work to finish.
    ///
    /// # Errors
    ///
    /// The first error of `work`, or [`Error::Cuda`] when an event fails.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use spgpu::gpu::{Context, DeviceCsr, DeviceVector};
    /// let ctx = Context::global()?;
    /// let a = DeviceCsr::upload(ctx, &spgpu::gen::laplacian_2d::<f64>(1000))?;
    /// let x = DeviceVector::from_slice(ctx, &vec![1.0; a.ncols()])?;
    /// let mut y = DeviceVector::zeros(ctx, a.nrows())?;
    /// let t = ctx.time(|| (0..20).try_for_each(|_| a.spmv(1.0, &x, 0.0, &mut y)))?;
    /// println!("{:.1} us per SpMV", t.as_secs_f64() * 1e6 / 20.0);
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn time<F>(&self, work: F) -> Result<Duration>
    where
        F: FnOnce() -> Result<()>,
    {
        self.make_current()?;
        let (start, stop) = (Event::new(EventFlags::DEFAULT)?, Event::new(EventFlags::DEFAULT)?);
        start.record(&self.stream)?;
        work()?;
        stop.record(&self.stream)?;
        stop.synchronize()?;
        let ms = stop.elapsed_time_f32(&start)?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
    }
}
