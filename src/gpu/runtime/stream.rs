//! Non-blocking CUDA streams made through the driver API, and CUDA graphs recorded on them.
//!
//! cust 0.3.2's `Stream::new` silently drops `StreamFlags::NON_BLOCKING`, so its streams
//! synchronize with the legacy default stream. A blocking stream that is being captured
//! makes every use of the legacy stream in the context, from any thread, fail with
//! `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` and invalidate the capture (CUDA C++ Programming
//! Guide, "Prohibited and Unhandled Operations" of stream capture). spgpu's streams are
//! therefore made here with `cuStreamCreate(CU_STREAM_NON_BLOCKING)`, and their flags are
//! checked with `cuStreamGetFlags`.

use std::ffi::c_void;

use cust::event::EventFlags;
use cust::function::{BlockSize, Function, GridSize};
use cust::sys as cu;

use crate::error::DriverError;
use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::{capture_lock, gate_shared};
use crate::{Error, Result};

/// A CUDA stream that does not synchronize with the legacy default stream
/// (`CU_STREAM_NON_BLOCKING`), owned by spgpu.
///
/// It is what [`Context::stream`] returns, so code that shares data with spgpu can queue
/// its own work in order with spgpu's: pass [`Stream::raw_handle`] to other CUDA libraries,
/// or use it with cust's `launch!` macro, which calls [`Stream::launch`]. It is `Send` and
/// `Sync`: the driver accepts work on one stream from any number of threads, in the order
/// the calls are made.
#[derive(Debug)]
pub struct Stream {
    raw: cu::CUstream,
}

// SAFETY: a CUstream is a handle the driver lets any thread use concurrently; Stream owns
// it and destroys it once, in Drop.
unsafe impl Send for Stream {}
// SAFETY: as above; every method only passes the handle to thread-safe driver calls.
unsafe impl Sync for Stream {}

impl Stream {
    /// Creates a non-blocking stream in the current context and checks its flags.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when the driver refuses; [`Error::InvalidArgument`] when the stream
    /// it made does not report `CU_STREAM_NON_BLOCKING` (it is then destroyed).
    pub(crate) fn non_blocking(what: &str) -> Result<Stream> {
        let mut raw: cu::CUstream = std::ptr::null_mut();
        {
            let _gate = gate_shared();
            // SAFETY: cuStreamCreate(CUstream*, unsigned int) with a valid out-pointer; the
            // caller made the context current.
            let rc = unsafe { cu::cuStreamCreate(&mut raw, cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) };
            DriverError::check(rc).map_err(|e| Error::cuda(format!("creating {what}"), e))?;
        }
        let stream = Stream { raw };
        if !stream.is_non_blocking().map_err(|e| Error::cuda(format!("reading the flags of {what}"), e))? {
            return Err(Error::InvalidArgument(format!(
                "the CUDA driver created {what} without CU_STREAM_NON_BLOCKING; spgpu needs a non-blocking stream"
            )));
        }
        Ok(stream)
    }

    /// Whether the driver reports the stream as non-blocking (`cuStreamGetFlags`).
    ///
    /// # Errors
    ///
    /// The driver's error.
    pub fn is_non_blocking(&self) -> std::result::Result<bool, DriverError> {
        let mut flags: std::os::raw::c_uint = 0;
        // SAFETY: cuStreamGetFlags(CUstream, unsigned int*) on the live stream owned by self.
        DriverError::check(unsafe { cu::cuStreamGetFlags(self.raw, &mut flags) })?;
        Ok(flags & cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32 != 0)
    }

    /// The raw handle (a `CUstream`, `cudaStream_t` in the runtime API), for other CUDA code
    /// (cuSPARSE's `cusparseSetStream`, graph capture). It is valid while `self` lives.
    pub fn raw_handle(&self) -> *mut std::ffi::c_void {
        self.raw.cast()
    }

    /// The raw handle as cust's type, for the crate's launches and captures.
    pub(crate) fn as_inner(&self) -> cu::CUstream {
        self.raw
    }

    /// Waits until all work queued on the stream is done.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] with the driver's error, which may come from earlier asynchronous
    /// work.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: cuStreamSynchronize(CUstream) on the live stream owned by self.
        DriverError::check(unsafe { cu::cuStreamSynchronize(self.raw) })
            .map_err(|e| Error::cuda("synchronizing the stream", e))
    }

    /// Launches `func` on the stream; what cust's `launch!` macro calls. Use the macro:
    /// `launch!(function<<<grid, block, shared_bytes, stream>>>(args...))`.
    ///
    /// # Safety
    ///
    /// `args` must point to one value per kernel parameter, of the parameter's type and in
    /// its order, and the kernel must only touch memory that is valid for it until it
    /// completes (the usual contract of `cuLaunchKernel`).
    ///
    /// # Errors
    ///
    /// The driver's error, with its code.
    #[doc(hidden)]
    pub unsafe fn launch<G, B>(
        &self,
        func: &Function<'_>,
        grid: G,
        block: B,
        shared_bytes: u32,
        args: &[*mut c_void],
    ) -> std::result::Result<(), DriverError>
    where
        G: Into<GridSize>,
        B: Into<BlockSize>,
    {
        let (grid, block): (GridSize, BlockSize) = (grid.into(), block.into());
        // SAFETY: forwarded to the caller's contract; the stream is live and the function
        // belongs to a module loaded in the stream's context.
        DriverError::check(unsafe {
            cu::cuLaunchKernel(
                func.to_raw(),
                grid.x,
                grid.y,
                grid.z,
                block.x,
                block.y,
                block.z,
                shared_bytes,
                self.raw,
                args.as_ptr() as *mut *mut c_void,
                std::ptr::null_mut(),
            )
        })
    }

    /// Records the work that `record` queues on this stream as a CUDA graph, instead of
    /// running it.
    ///
    /// The capture uses `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`: potentially unsafe calls
    /// (allocations, synchronizations) are refused on the recording thread, where they
    /// would be bugs, while other threads stay free to make them (with the default
    /// `GLOBAL` mode, another thread's `cuMemAlloc` would fail during the capture; with
    /// `RELAXED`, a mistake on this thread would go unnoticed). The stream is
    /// non-blocking, so the legacy default stream, which other code may use on any thread,
    /// does not encompass it. And the capture gate is held exclusively from begin to end,
    /// so no allocation, free or copy of spgpu runs meanwhile. The capture ends on every
    /// path, a panic in `record` included.
    ///
    /// # Errors
    ///
    /// [`CaptureError::Recording`] with the error of `record` (nothing ran);
    /// [`CaptureError::Driver`] when the driver refused or invalidated the capture, or the
    /// graph does not instantiate (nothing ran either).
    pub(crate) fn capture(
        &self,
        ctx: &Context,
        record: impl FnOnce() -> Result<()>,
    ) -> std::result::Result<Graph, CaptureError> {
        let lock = capture_lock();
        ctx.make_current().map_err(CaptureError::Driver)?;
        // A blocking stream would make other threads' use of the legacy stream break the
        // capture: check, as the driver reports it, before every recording.
        match self.is_non_blocking() {
            Ok(true) => {}
            Ok(false) => {
                return Err(CaptureError::Driver(Error::InvalidArgument(
                    "refusing to record a CUDA graph on a blocking stream".into(),
                )))
            }
            Err(e) => return Err(CaptureError::Driver(Error::cuda("reading the flags of the capture stream", e))),
        }
        // SAFETY: cuStreamBeginCapture_v2(CUstream, CUstreamCaptureMode) on the live,
        // non-blocking stream owned by self, which is not capturing: captures on it happen
        // only here, under the exclusive capture lock, and always end before it is released.
        let rc = unsafe {
            cu::cuStreamBeginCapture_v2(self.raw, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        };
        DriverError::check(rc).map_err(|e| CaptureError::Driver(Error::cuda("beginning a CUDA graph capture", e)))?;
        let mut active = ActiveCapture { stream: self.raw, ended: false };
        let recorded = record();
        let ended = active.end();
        drop(lock);
        if let Err(e) = recorded {
            if let Ok(graph) = ended {
                // SAFETY: the graph was created by the capture and is not used after this.
                unsafe { cu::cuGraphDestroy(graph) };
            }
            return Err(CaptureError::Recording(e));
        }
        let graph = ended.map_err(|e| CaptureError::Driver(Error::cuda("ending a CUDA graph capture", e)))?;
        let mut exec: cu::CUgraphExec = std::ptr::null_mut();
        // SAFETY: cuGraphInstantiateWithFlags(CUgraphExec*, CUgraph, unsigned long long)
        // with the graph just captured and a valid out-pointer; flags 0.
        let rc = unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) };
        if let Err(e) = DriverError::check(rc) {
            // SAFETY: the graph was created by the capture and is not used after this.
            unsafe { cu::cuGraphDestroy(graph) };
            return Err(CaptureError::Driver(Error::cuda("instantiating a CUDA graph", e)));
        }
        Ok(Graph { graph, exec })
    }
}

/// A CUDA event, for timing work on a [`Stream`] (cust's `Event` can only be recorded on
/// cust's streams). The method names are cust's.
///
/// # Example
///
/// ```no_run
/// use cust::event::EventFlags;
/// use spgpu::gpu::{Context, Event};
/// let ctx = Context::global()?;
/// let (start, stop) = (Event::new(EventFlags::DEFAULT)?, Event::new(EventFlags::DEFAULT)?);
/// start.record(ctx.stream())?;
/// // ... queue work on ctx.stream() ...
/// stop.record(ctx.stream())?;
/// stop.synchronize()?;
/// println!("{} ms", stop.elapsed_time_f32(&start)?);
/// # Ok::<(), spgpu::Error>(())
/// ```
#[derive(Debug)]
pub struct Event {
    raw: cu::CUevent,
}

// SAFETY: a CUevent is a driver handle usable from any thread; Event owns it and destroys
// it once, in Drop.
unsafe impl Send for Event {}
// SAFETY: recording and querying an event from several threads is allowed by the driver.
unsafe impl Sync for Event {}

impl Event {
    /// Creates an event in the current context (`cuEventCreate`).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] with the driver's error.
    pub fn new(flags: EventFlags) -> Result<Event> {
        let mut raw: cu::CUevent = std::ptr::null_mut();
        // SAFETY: cuEventCreate(CUevent*, unsigned int) with a valid out-pointer.
        DriverError::check(unsafe { cu::cuEventCreate(&mut raw, flags.bits()) })
            .map_err(|e| Error::cuda("creating a CUDA event", e))?;
        Ok(Event { raw })
    }

    /// Records the event on `stream` (`cuEventRecord`).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] with the driver's error.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        // SAFETY: cuEventRecord(CUevent, CUstream) with the live event and a live stream.
        DriverError::check(unsafe { cu::cuEventRecord(self.raw, stream.raw) })
            .map_err(|e| Error::cuda("recording a CUDA event", e))
    }

    /// Waits until the work recorded before the event is done.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] with the driver's error (or an earlier asynchronous one).
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: cuEventSynchronize(CUevent) on the live event.
        DriverError::check(unsafe { cu::cuEventSynchronize(self.raw) })
            .map_err(|e| Error::cuda("waiting for a CUDA event", e))
    }

    /// Milliseconds between `start` and this event, both recorded and complete.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] with the driver's error.
    pub fn elapsed_time_f32(&self, start: &Event) -> Result<f32> {
        let mut ms = 0.0f32;
        // SAFETY: cuEventElapsedTime(float*, CUevent, CUevent) with a valid out-pointer and
        // two live events.
        DriverError::check(unsafe { cu::cuEventElapsedTime(&mut ms, start.raw, self.raw) })
            .map_err(|e| Error::cuda("reading a CUDA event time", e))?;
        Ok(ms)
    }

    /// The raw handle, valid while `self` lives.
    pub fn as_inner(&self) -> cu::CUevent {
        self.raw
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event is owned by self and destroyed once, here.
        unsafe {
            cu::cuEventDestroy_v2(self.raw);
        }
    }
}

/// Why [`Stream::capture`] failed.
#[derive(Debug)]
pub(crate) enum CaptureError {
    /// The recording closure failed.
    Recording(Error),
    /// The driver refused or invalidated the capture.
    Driver(Error),
}

/// A capture under way on a stream; ends it when dropped (a panic while recording).
struct ActiveCapture {
    stream: cu::CUstream,
    ended: bool,
}

impl ActiveCapture {
    /// Ends the capture and returns its graph (non-null).
    fn end(&mut self) -> std::result::Result<cu::CUgraph, DriverError> {
        self.ended = true;
        let mut graph: cu::CUgraph = std::ptr::null_mut();
        // SAFETY: cuStreamEndCapture(CUstream, CUgraph*) on the stream where this thread
        // began the capture; graph is a valid out-pointer.
        let rc = unsafe { cu::cuStreamEndCapture(self.stream, &mut graph) };
        match DriverError::check(rc) {
            Err(e) => {
                if !graph.is_null() {
                    // SAFETY: a graph returned alongside an error is still ours to destroy.
                    unsafe { cu::cuGraphDestroy(graph) };
                }
                Err(e)
            }
            Ok(()) if graph.is_null() => Err(DriverError::from(cu::CUresult::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)),
            Ok(()) => Ok(graph),
        }
    }
}

impl Drop for ActiveCapture {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.end();
        }
    }
}

/// An instantiated CUDA graph. `Send` but not `Sync`: the driver does not allow one
/// executable graph to be launched from two threads at once.
pub(crate) struct Graph {
    graph: cu::CUgraph,
    exec: cu::CUgraphExec,
}

// SAFETY: graph handles may be used from any thread, one thread at a time; Graph is not
// Sync, so `launch(&self)` is never called from two threads at once.
unsafe impl Send for Graph {}

impl Graph {
    /// Launches the graph on `stream` (no wait).
    ///
    /// # Safety
    ///
    /// Every allocation the recorded kernels use must be live, and stay live until the
    /// graph completes (spgpu frees on the same stream, so a free queued after this call
    /// is enough).
    pub(crate) unsafe fn launch(&self, stream: &Stream) -> Result<()> {
        // SAFETY: cuGraphLaunch(CUgraphExec, CUstream) with the executable graph owned by
        // self and a live stream; the memory it uses is the caller's contract.
        DriverError::check(unsafe { cu::cuGraphLaunch(self.exec, stream.raw) })
            .map_err(|e| Error::cuda("launching a CUDA graph", e))
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: both handles were created by Stream::capture and are destroyed once, here;
        // a launch still running completes before the driver releases it.
        unsafe {
            cu::cuGraphExecDestroy(self.exec);
            cu::cuGraphDestroy(self.graph);
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _gate = gate_shared();
        // SAFETY: the stream is owned by self and destroyed once, here; work still queued
        // on it completes first (cuStreamDestroy does not wait, but the driver keeps the
        // stream's resources until its work is done).
        unsafe {
            cu::cuStreamDestroy_v2(self.raw);
        }
    }
}
