//! Device memory: every allocation, copy and free of spgpu, ordered on the context's
//! stream, plus the two process-wide locks that make them safe from many threads while a
//! CUDA graph is being recorded.
//!
//! - **Stream-ordered allocation.** Memory comes from `cuMemAllocAsync` and goes back with
//!   `cuMemFreeAsync`, both on the context's stream (devices without memory pools fall
//!   back to `cuMemAlloc` and a synchronized `cuMemFree`). A free is thus ordered after
//!   every kernel queued before it, and never synchronizes the device, so it cannot
//!   conflict with a stream capture in another thread.
//! - **Asynchronous copies.** Host-device copies are `cuMemcpyHtoDAsync`/`cuMemcpyDtoHAsync`
//!   on the context's stream followed by a synchronization of that stream; spgpu never
//!   uses the legacy default stream. The synchronization that follows every copy keeps the
//!   host buffer borrowed until the copy is done. Uploads of at least
//!   [`STAGED_MIN_BYTES`] go through the context's two pinned **staging buffers**
//!   ([`Staging`], [`STAGING_BYTES`] each, allocated once with the context, since
//!   `cuMemHostAlloc` synchronizes the device): the host copies one piece into a buffer
//!   with all its threads while the device reads the other. On the H200 host, uploads from
//!   pageable memory, which the driver stages with one thread, ran at 5-6.5 GB/s.
//!   `SPGPU_PINNED_STAGING=0` turns the staging off, to compare.
//! - **The capture gate**, a process-wide reader-writer lock: allocations, frees, copies
//!   and stream creation hold it shared; recording a CUDA graph holds it exclusively (well
//!   under a millisecond). So no spgpu allocation, free or copy runs while a capture is
//!   being recorded, whatever the driver's own rules (see `Stream::capture`).
//! - **The registry of live allocations** (base address to a unique id). A recorded graph
//!   remembers the ids of the allocations it uses; replaying it checks them under the
//!   registry's lock, and a free removes its entry under the same lock before it queues
//!   the free. So a replay is either refused (something was freed) or queued before the
//!   free, on the same stream, and never runs on freed memory.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use cust::memory::{DeviceCopy, DevicePointer};
use cust::sys as cu;

use crate::error::DriverError;
use crate::gpu::runtime::context::Context;
use crate::{Error, Result};

static CAPTURE_GATE: RwLock<()> = RwLock::new(());

thread_local! {
    /// Whether this thread holds the capture gate exclusively (is recording a graph).
    static CAPTURING: Cell<bool> = const { Cell::new(false) };
}

/// The capture gate held shared: no graph is being recorded while it lives. `None` on the
/// thread that is recording (the driver then refuses what a capture forbids, rather than
/// this thread deadlocking on its own lock).
pub(crate) fn gate_shared() -> Option<RwLockReadGuard<'static, ()>> {
    if CAPTURING.with(Cell::get) {
        None
    } else {
        Some(CAPTURE_GATE.read().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The capture gate held exclusively, by the thread that records a graph.
pub(crate) struct CaptureLock {
    _guard: RwLockWriteGuard<'static, ()>,
}

/// Takes the capture gate exclusively: waits until no allocation, free or copy of spgpu
/// is under way, and keeps new ones waiting until the lock is dropped.
pub(crate) fn capture_lock() -> CaptureLock {
    let guard = CAPTURE_GATE.write().unwrap_or_else(PoisonError::into_inner);
    CAPTURING.with(|c| c.set(true));
    CaptureLock { _guard: guard }
}

impl Drop for CaptureLock {
    fn drop(&mut self) {
        CAPTURING.with(|c| c.set(false));
    }
}

/// Live allocations: base address to id.
static LIVE: Mutex<BTreeMap<u64, u64>> = Mutex::new(BTreeMap::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn live() -> MutexGuard<'static, BTreeMap<u64, u64>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The ids of the allocations that start at `ptrs`, or the first address that is not
/// the start of a live spgpu allocation.
pub(crate) fn allocation_ids(ptrs: &[u64]) -> std::result::Result<Vec<(u64, u64)>, u64> {
    let live = live();
    ptrs.iter().map(|&p| live.get(&p).map(|&id| (p, id)).ok_or(p)).collect()
}

/// Runs `f` (which queues work on the context's stream) after checking that every
/// `(address, id)` is still a live allocation, with the registry locked throughout, so
/// no free can be queued between the check and the work.
///
/// # Errors
///
/// [`Error::InvalidArgument`] naming the first allocation that was freed (nothing is
/// queued then), or the error of `f`.
pub(crate) fn with_live<R>(allocations: &[(u64, u64)], what: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    let live = live();
    if let Some(&(ptr, _)) = allocations.iter().find(|(p, id)| live.get(p) != Some(id)) {
        return Err(Error::InvalidArgument(format!(
            "{what}: the device memory at {ptr:#x} it uses has been freed since it was recorded (a vector, \
             matrix or solver state was dropped); record it again"
        )));
    }
    let out = f();
    drop(live);
    out
}

/// `len` elements of `U` in device memory, allocated on the context's stream and freed
/// there when dropped.
///
/// The memory is uninitialized until written; every constructor of spgpu writes it
/// (copy, memset or kernel) before handing it out.
pub(crate) struct DeviceMemory<U> {
    ctx: &'static Context,
    ptr: u64,
    len: usize,
    pooled: bool,
    _t: PhantomData<U>,
}

// SAFETY: the memory is owned (no other handle to it exists) and device memory can be
// used and freed from any thread; `U` only fixes the element type.
unsafe impl<U: Send> Send for DeviceMemory<U> {}
// SAFETY: shared references only read the address and length, or copy out of the memory.
unsafe impl<U: Sync> Sync for DeviceMemory<U> {}

fn bytes_of<U>(len: usize, what: &str) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<U>())
        .ok_or_else(|| Error::InvalidArgument(format!("{what}: {len} elements overflow the address space")))
}

fn stream_raw(ctx: &Context) -> cu::CUstream {
    ctx.stream().as_inner()
}

/// Bytes of each of a context's two pinned staging buffers ([`Staging`]).
pub(crate) const STAGING_BYTES: usize = 8 << 20;

/// Uploads of at least this many bytes go through the staging buffers; smaller ones are
/// copied from the caller's memory directly.
pub(crate) const STAGED_MIN_BYTES: usize = 1 << 20;

/// Set to `0` to upload from pageable memory only (no staging buffers), to compare.
pub const PINNED_STAGING_ENV: &str = "SPGPU_PINNED_STAGING";

/// Two pinned host buffers of [`STAGING_BYTES`], and an event per buffer recorded after the
/// copy that reads it, so that the next fill of a buffer waits only for its own copy (also
/// across uploads: `pending` says which events to wait for first).
#[derive(Debug)]
pub(crate) struct Staging {
    bufs: [*mut u8; 2],
    events: [crate::gpu::runtime::stream::Event; 2],
    pending: [bool; 2],
    /// Set when a staged upload failed: a copy might still read a buffer that its event
    /// does not cover, so the buffers are not used again.
    broken: bool,
}

// SAFETY: the buffers are pinned host memory owned by the Staging (freed once, in Drop),
// used only under the context's Mutex<Staging>.
unsafe impl Send for Staging {}

impl Staging {
    /// Allocates the buffers (`cuMemHostAlloc`) and events in the current context; `None`
    /// when [`PINNED_STAGING_ENV`] is `0`.
    ///
    /// A driver that refuses the pinned memory (a host short of it) or the events gives
    /// `None` too: uploads then go from pageable memory, as with the variable set.
    pub(crate) fn new() -> Result<Option<Staging>> {
        if std::env::var(PINNED_STAGING_ENV).is_ok_and(|v| v.trim() == "0") {
            return Ok(None);
        }
        let flags = cust::event::EventFlags::DISABLE_TIMING;
        let (Ok(e0), Ok(e1)) =
            (crate::gpu::runtime::stream::Event::new(flags), crate::gpu::runtime::stream::Event::new(flags))
        else {
            return Ok(None);
        };
        let events = [e0, e1];
        let mut st = Staging { bufs: [std::ptr::null_mut(); 2], events, pending: [false; 2], broken: false };
        for b in &mut st.bufs {
            let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
            // SAFETY: cuMemHostAlloc(void**, size_t, unsigned int) with a valid out-pointer;
            // a buffer allocated here is freed in Drop (null ones are skipped there).
            let rc = unsafe { cu::cuMemHostAlloc(&mut p, STAGING_BYTES, 0) };
            if DriverError::check(rc).is_err() {
                return Ok(None); // st is dropped: the buffer already allocated is freed
            }
            *b = p.cast();
        }
        Ok(Some(st))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for &b in &self.bufs {
            if !b.is_null() {
                // SAFETY: b came from cuMemHostAlloc and is freed once, here.
                unsafe { cu::cuMemFreeHost(b.cast()) };
            }
        }
    }
}

impl<U: DeviceCopy> DeviceMemory<U> {
    /// Uninitialized device memory for `len > 0` elements.
    fn alloc(ctx: &'static Context, len: usize, what: &str) -> Result<Self> {
        let bytes = bytes_of::<U>(len, what)?.max(1);
        let pooled = ctx.memory_pools();
        let mut ptr: cu::CUdeviceptr = 0;
        {
            let _gate = gate_shared();
            ctx.make_current()?;
            // SAFETY: cuMemAllocAsync(CUdeviceptr*, size_t, CUstream) with a valid out-pointer
            // and the context's live stream (current context made current above);
            // cuMemAlloc_v2(CUdeviceptr*, size_t) likewise.
            let rc = unsafe {
                if pooled {
                    cu::cuMemAllocAsync(&mut ptr, bytes, stream_raw(ctx))
                } else {
                    cu::cuMemAlloc_v2(&mut ptr, bytes)
                }
            };
            DriverError::check(rc).map_err(|e| Error::cuda(format!("allocating {what} ({bytes} bytes)"), e))?;
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        live().insert(ptr, id);
        Ok(DeviceMemory { ctx, ptr, len, pooled, _t: PhantomData })
    }

    /// Uninitialized device memory for `len > 0` elements, to be filled before it is read
    /// (piece by piece with [`copy_from_host_at`](Self::copy_from_host_at)).
    pub(crate) fn uninit(ctx: &'static Context, len: usize, what: &str) -> Result<Self> {
        Self::alloc(ctx, len, what)
    }

    /// `len > 0` elements whose bytes are all zero (0.0 for floats, 0 for integers); the
    /// memset is queued on the context's stream, nothing waits.
    pub(crate) fn zeroed(ctx: &'static Context, len: usize, what: &str) -> Result<Self> {
        Self::filled(ctx, len, 0, what)
    }

    /// `len > 0` elements whose bytes all equal `byte`; the memset is queued on the context's
    /// stream, nothing waits.
    pub(crate) fn filled(ctx: &'static Context, len: usize, byte: u8, what: &str) -> Result<Self> {
        let mem = Self::alloc(ctx, len, what)?;
        let bytes = bytes_of::<U>(len, what)?;
        let _gate = gate_shared();
        // SAFETY: cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream) on the
        // `bytes` bytes just allocated, on the stream the allocation was ordered on.
        let rc = unsafe { cu::cuMemsetD8Async(mem.ptr, byte, bytes, stream_raw(ctx)) };
        DriverError::check(rc).map_err(|e| Error::cuda(format!("filling {what} with {byte:#04x} bytes"), e))?;
        Ok(mem)
    }

    /// A copy of `data` (non-empty), complete when this returns.
    pub(crate) fn from_slice(ctx: &'static Context, data: &[U], what: &str) -> Result<Self> {
        let mut mem = Self::alloc(ctx, data.len(), what)?;
        mem.copy_from_host(data, what)?;
        Ok(mem)
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The device address.
    pub(crate) fn as_device_ptr(&self) -> DevicePointer<U> {
        DevicePointer::from_raw(self.ptr)
    }

    /// Overwrites the memory with `src` (`src.len() == self.len()`, checked), after the
    /// work queued before on the context's stream; complete when this returns.
    pub(crate) fn copy_from_host(&mut self, src: &[U], what: &str) -> Result<()> {
        crate::gpu::runtime::vector::check_len("copy to the device: length of the source", self.len, src.len())?;
        self.copy_from_host_at(0, src, what)
    }

    /// Overwrites elements `start..start + src.len()` with `src` (in bounds, checked), after
    /// the work queued before on the context's stream; complete when this returns. Large
    /// arrays are uploaded piece by piece with it, so that no second full copy is made on
    /// the host.
    pub(crate) fn copy_from_host_at(&mut self, start: usize, src: &[U], what: &str) -> Result<()> {
        if start.checked_add(src.len()).map_or(true, |end| end > self.len) {
            return Err(Error::InvalidArgument(format!(
                "uploading {what}: elements {start}..{} are past the {} of the device array",
                start.saturating_add(src.len()),
                self.len
            )));
        }
        if src.is_empty() {
            return Ok(());
        }
        let bytes = bytes_of::<U>(src.len(), what)?;
        let offset = bytes_of::<U>(start, what)? as u64;
        // The staging buffers when they are free: an upload that finds them taken (by another
        // thread, or by this one further up its stack, as when a rayon task uploads while
        // the buffers' owner waits for its own parallel copy) goes straight from its memory
        // instead of waiting, so no upload ever blocks on another.
        // A poisoned lock (a panic during a staged upload) or a failed staged upload leaves
        // the buffers unused from then on.
        let staging = match self.ctx.staging().filter(|_| bytes >= STAGED_MIN_BYTES).map(std::sync::Mutex::try_lock) {
            Some(Ok(st)) if !st.broken => Some(st),
            _ => None,
        };
        if let Some(mut st) = staging {
            // SAFETY: the elements of a DeviceCopy slice are plain bytes, `bytes` of them.
            let raw = unsafe { std::slice::from_raw_parts(src.as_ptr().cast::<u8>(), bytes) };
            let done = self.copy_staged(&mut st, offset, raw, what);
            // complete (or failed) before the buffers are handed on: no copy still reads them
            let synced = self.ctx.synchronize().map_err(|e| in_context(e, &format!("uploading {what}")));
            if done.is_err() || synced.is_err() {
                st.broken = true;
            } else {
                st.pending = [false; 2];
            }
            return done.and(synced);
        }
        {
            let _gate = gate_shared();
            self.ctx.make_current()?;
            // SAFETY: cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t, CUstream): the
            // destination range start..start + src.len() lies within the allocation
            // (checked), the source slice has `bytes` bytes and stays borrowed until the
            // stream is synchronized below, so the driver's read of it completes while it
            // lives.
            let rc = unsafe {
                cu::cuMemcpyHtoDAsync_v2(self.ptr + offset, src.as_ptr().cast(), bytes, stream_raw(self.ctx))
            };
            DriverError::check(rc).map_err(|e| Error::cuda(format!("uploading {what} ({bytes} bytes)"), e))?;
        }
        self.ctx.synchronize().map_err(|e| in_context(e, &format!("uploading {what}")))
    }

    /// The bytes `src` to the device at byte `offset`, through the staging buffers: each
    /// piece of [`STAGING_BYTES`] is copied into a buffer by the host's threads once that
    /// buffer's previous copy is done, then queued (`cuMemcpyHtoDAsync` from pinned memory);
    /// the caller synchronizes.
    ///
    /// The capture gate is held only while each piece is queued, not during the host copies
    /// or the waits: a rayon worker that runs other tasks while it waits for the parallel
    /// copy may run one that takes the gate, and must not find it held by itself behind a
    /// waiting writer.
    fn copy_staged(&mut self, st: &mut Staging, offset: u64, src: &[u8], what: &str) -> Result<()> {
        use rayon::prelude::*;
        self.ctx.make_current()?;
        for (k, piece) in src.chunks(STAGING_BYTES).enumerate() {
            let i = k % 2;
            if st.pending[i] {
                st.events[i].synchronize().map_err(|e| in_context(e, &format!("uploading {what}")))?;
                st.pending[i] = false;
            }
            // SAFETY: buffer i holds STAGING_BYTES >= piece.len() bytes of pinned host memory,
            // which no copy reads any more (its event completed, or it was never used), and
            // nothing else borrows it (the staging lock is held).
            let buf = unsafe { std::slice::from_raw_parts_mut(st.bufs[i], piece.len()) };
            // one chunk per thread (at least 64 KiB): the host's copy, not the bus, is the
            // slower side (one thread copies about 10 GB/s on the H200 host; the bus from
            // pinned memory 55 GB/s)
            let chunk = piece.len().div_ceil(rayon::current_num_threads()).max(64 << 10);
            buf.par_chunks_mut(chunk).zip(piece.par_chunks(chunk)).for_each(|(d, s)| d.copy_from_slice(s));
            let at = offset + (k * STAGING_BYTES) as u64;
            let _gate = gate_shared();
            self.ctx.make_current()?;
            // SAFETY: cuMemcpyHtoDAsync_v2(CUdeviceptr, const void*, size_t, CUstream): the
            // destination range lies within the allocation (the caller checked the whole
            // copy), the source is the pinned buffer's first piece.len() bytes, which stay
            // untouched until the event recorded next completes (or, should the record
            // fail, until the caller's synchronization; the buffers are not used again if
            // that fails too).
            let rc = unsafe {
                cu::cuMemcpyHtoDAsync_v2(self.ptr + at, buf.as_ptr().cast(), piece.len(), stream_raw(self.ctx))
            };
            DriverError::check(rc)
                .map_err(|e| Error::cuda(format!("uploading {what} ({} bytes at byte {at})", piece.len()), e))?;
            st.pending[i] = true;
            st.events[i].record(self.ctx.stream()).map_err(|e| in_context(e, &format!("uploading {what}")))?;
        }
        Ok(())
    }

    /// `len > 0` elements `f(0), f(1), ...` made on the host a piece of at most `piece`
    /// elements at a time and uploaded piece by piece (the host holds one piece, never the
    /// whole array).
    pub(crate) fn from_fn(
        ctx: &'static Context,
        len: usize,
        piece: usize,
        what: &str,
        f: impl Fn(usize) -> U + Sync,
    ) -> Result<Self>
    where
        U: Send,
    {
        use rayon::prelude::*;
        let mut mem = Self::alloc(ctx, len, what)?;
        let mut buf = Vec::with_capacity(piece.min(len));
        let mut start = 0;
        while start < len {
            let end = (start + piece).min(len);
            buf.clear();
            (start..end).into_par_iter().map(&f).collect_into_vec(&mut buf);
            mem.copy_from_host_at(start, &buf, what)?;
            start = end;
        }
        Ok(mem)
    }

    /// Copies the memory into `dst` (`dst.len() == self.len()`, checked), after the work
    /// queued before on the context's stream; complete when this returns.
    pub(crate) fn copy_to_host(&self, dst: &mut [U], what: &str) -> Result<()> {
        crate::gpu::runtime::vector::check_len("copy to the host: length of the destination", self.len, dst.len())?;
        let bytes = bytes_of::<U>(self.len, what)?;
        {
            let _gate = gate_shared();
            self.ctx.make_current()?;
            // SAFETY: cuMemcpyDtoHAsync_v2(void*, CUdeviceptr, size_t, CUstream): `dst` has
            // room for `bytes` bytes (same length, checked) and stays mutably borrowed until
            // the stream is synchronized below; U is DeviceCopy (plain bits), so any bytes
            // the device holds are a valid U.
            let rc =
                unsafe { cu::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), self.ptr, bytes, stream_raw(self.ctx)) };
            DriverError::check(rc).map_err(|e| Error::cuda(format!("downloading {what} ({bytes} bytes)"), e))?;
        }
        self.ctx.synchronize().map_err(|e| in_context(e, &format!("downloading {what}")))
    }

    /// `self = src` on the device, queued on the context's stream (no wait). Lengths must
    /// match (checked).
    pub(crate) fn copy_from_device(&mut self, src: &DeviceMemory<U>, what: &str) -> Result<()> {
        crate::gpu::runtime::vector::check_len("device copy: length of the source", self.len, src.len)?;
        let bytes = bytes_of::<U>(self.len, what)?;
        let _gate = gate_shared();
        self.ctx.make_current()?;
        // SAFETY: cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, CUstream): both are
        // live allocations of `bytes` bytes; `self` is borrowed mutably so they are distinct
        // allocations and do not overlap; the copy is ordered on the context's stream with
        // the work before and after it, and a free of either is queued on the same stream,
        // after it.
        let rc = unsafe { cu::cuMemcpyDtoDAsync_v2(self.ptr, src.ptr, bytes, stream_raw(self.ctx)) };
        DriverError::check(rc).map_err(|e| Error::cuda(format!("copying {what} on the device"), e))
    }
}

/// Prefixes the context of an error of a synchronization.
fn in_context(e: Error, what: &str) -> Error {
    match e {
        Error::Cuda { context, source } => Error::Cuda { context: format!("{what}: {context}"), source },
        other => other,
    }
}

impl<U> std::fmt::Debug for DeviceMemory<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceMemory").field("ptr", &format_args!("{:#x}", self.ptr)).field("len", &self.len).finish()
    }
}

impl<U> Drop for DeviceMemory<U> {
    fn drop(&mut self) {
        let _gate = gate_shared();
        // The registry stays locked until the free is queued (see `with_live`).
        let mut live = live();
        live.remove(&self.ptr);
        // A failure cannot be reported from a drop; the memory is then released with the
        // context, at exit.
        if self.ctx.make_current().is_err() {
            return;
        }
        let stream = stream_raw(self.ctx);
        // SAFETY: the allocation is owned by self and freed once, here. cuMemFreeAsync
        // (CUdeviceptr, CUstream) orders the free after all work queued on the context's
        // stream, where every use of the memory was queued, and after which nothing can use
        // it (the registry entry is gone, so no recorded graph using it is replayed). In
        // the fallback, the stream is synchronized first so that cuMemFree cannot free
        // memory that queued work still uses.
        unsafe {
            if self.pooled {
                let _ = cu::cuMemFreeAsync(self.ptr, stream);
            } else {
                let _ = cu::cuStreamSynchronize(stream);
                let _ = cu::cuMemFree_v2(self.ptr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_is_not_taken_again_by_the_recording_thread() {
        let lock = capture_lock();
        assert!(gate_shared().is_none(), "the recording thread must not wait for itself");
        // Another thread waits until the capture lock is released.
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let g = gate_shared();
            tx.send(g.is_some()).unwrap();
        });
        assert!(rx.recv_timeout(std::time::Duration::from_millis(100)).is_err(), "waited for the capture");
        drop(lock);
        assert!(rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap());
        t.join().unwrap();
        assert!(gate_shared().is_some());
    }

    #[test]
    fn replay_checks_see_freed_allocations() {
        // Registry entries are made by hand here (no GPU): one live, one gone.
        let (a, b) = (0xdead_0000_u64, 0xdead_1000_u64);
        live().insert(a, 7);
        assert_eq!(allocation_ids(&[a]), Ok(vec![(a, 7)]));
        assert_eq!(allocation_ids(&[a, b]), Err(b));
        let ran = with_live(&[(a, 7)], "replaying", || Ok(42)).unwrap();
        assert_eq!(ran, 42);
        // Same address, another allocation (id 8): refused, and `f` does not run.
        live().insert(a, 8);
        let err = with_live(&[(a, 7)], "replaying", || -> Result<()> { panic!("must not run") }).unwrap_err();
        assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("freed")), "{err}");
        live().remove(&a);
    }
}
