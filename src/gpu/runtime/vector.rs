//! Dense vectors in device memory.

use cust::memory::{DeviceCopy, DevicePointer};

use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::{Error, Result, Scalar};

/// A dense vector of `T` in device memory.
///
/// Made from a host slice ([`from_slice`](DeviceVector::from_slice)) or as zeros
/// ([`zeros`](DeviceVector::zeros)); read back with [`to_vec`](DeviceVector::to_vec) or
/// [`copy_to`](DeviceVector::copy_to). An empty vector holds no device memory (CUDA cannot
/// allocate zero bytes) and its [`device_addr`](DeviceVector::device_addr) is 0.
///
/// It is `Send` and `Sync` (see [the threading model](crate::gpu#threading-model)): it can be
/// moved to, dropped on, and read from any thread. Its memory is allocated and freed in
/// order on the context's stream, so dropping it never waits for the GPU and never frees
/// memory that queued work still uses.
///
/// # Example
///
/// ```no_run
/// use spgpu::gpu::{Context, DeviceVector};
/// let ctx = Context::global()?;
/// let mut v = DeviceVector::from_slice(ctx, &[1.0f32, 2.0, 3.0])?;
/// v.fill(0.5)?;
/// assert_eq!(v.to_vec()?, vec![0.5; 3]);
/// # Ok::<(), spgpu::Error>(())
/// ```
pub struct DeviceVector<T: Scalar> {
    ctx: &'static Context,
    buf: Option<DeviceMemory<T>>,
    len: usize,
}

impl<T: Scalar> DeviceVector<T> {
    /// A vector of the `len` elements of `buf` (`None` when `len == 0`).
    pub(crate) fn from_memory(ctx: &'static Context, buf: Option<DeviceMemory<T>>, len: usize) -> Self {
        debug_assert_eq!(buf.as_ref().map_or(0, DeviceMemory::len), len);
        DeviceVector { ctx, buf, len }
    }

    /// Uploads a host slice; the copy is complete when this returns.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when allocation or the copy fails (for example out of memory).
    pub fn from_slice(ctx: &'static Context, data: &[T]) -> Result<Self> {
        let what = format!("a vector of {} {} values", data.len(), T::NAME);
        let buf = if data.is_empty() { None } else { Some(DeviceMemory::from_slice(ctx, data, &what)?) };
        Ok(DeviceVector { ctx, buf, len: data.len() })
    }

    /// A vector of `len` zeros (a memset queued on the context's stream; no wait).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when allocation fails.
    pub fn zeros(ctx: &'static Context, len: usize) -> Result<Self> {
        let what = format!("a vector of {len} {} values", T::NAME);
        // All-zero bytes are 0.0 in f32 and f64.
        let buf = if len == 0 { None } else { Some(DeviceMemory::zeroed(ctx, len, &what)?) };
        Ok(DeviceVector { ctx, buf, len })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the vector has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The context the vector lives in.
    pub fn context(&self) -> &'static Context {
        self.ctx
    }

    /// Copies the vector to a new host `Vec`, after all work queued on the context's
    /// stream before it is done.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when the copy fails or earlier asynchronous work failed.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = vec![T::ZERO; self.len];
        self.copy_to(&mut out)?;
        Ok(out)
    }

    /// Copies the vector into `dst`, after all work queued on the context's stream before
    /// it is done (an asynchronous copy on that stream, then a wait).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `dst.len() != self.len()`; [`Error::Cuda`] when the
    /// copy fails or earlier asynchronous work failed.
    pub fn copy_to(&self, dst: &mut [T]) -> Result<()> {
        check_len("DeviceVector::copy_to: length of the destination", self.len, dst.len())?;
        match &self.buf {
            Some(buf) => buf.copy_to_host(dst, &format!("a vector of {} values", self.len)),
            None => Ok(()),
        }
    }

    /// Overwrites the vector with `src`, in order after the work queued before on the
    /// context's stream; the copy is complete when this returns.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `src.len() != self.len()`; [`Error::Cuda`] when the
    /// copy fails.
    pub fn copy_from(&mut self, src: &[T]) -> Result<()> {
        check_len("DeviceVector::copy_from: length of the source", self.len, src.len())?;
        let len = self.len;
        match &mut self.buf {
            Some(buf) => buf.copy_from_host(src, &format!("a vector of {len} values")),
            None => Ok(()),
        }
    }

    /// `self = src` on the device, queued on the context's stream (no wait).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when the lengths differ; [`Error::Cuda`] when the copy
    /// cannot be queued.
    pub fn copy_from_device(&mut self, src: &DeviceVector<T>) -> Result<()> {
        check_len("DeviceVector::copy_from_device: length of the source", self.len, src.len)?;
        let len = self.len;
        match (&mut self.buf, &src.buf) {
            (Some(dst), Some(src)) => dst.copy_from_device(src, &format!("a vector of {len} values")),
            _ => Ok(()),
        }
    }

    /// The device address of the first element, for passing to other CUDA code (a kernel of
    /// your own, cuSPARSE through FFI); 0 for an empty vector. The memory stays valid while
    /// `self` lives. Work on it should go to [`Context::stream`] to stay ordered with
    /// spgpu's (the memory is allocated, written and freed in order on that stream).
    pub fn device_addr(&self) -> u64 {
        self.as_device_ptr().as_raw()
    }

    /// [`device_addr`](DeviceVector::device_addr) as cust's pointer type, for the crate's
    /// launches.
    pub(crate) fn as_device_ptr(&self) -> DevicePointer<T> {
        ptr_of(self.buf.as_ref())
    }
}

impl<T: Scalar> std::fmt::Debug for DeviceVector<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceVector").field("scalar", &T::NAME).field("len", &self.len).finish()
    }
}

/// `Err(DimensionMismatch)` unless `found == expected`.
pub(crate) fn check_len(op: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::DimensionMismatch { op, expected, found })
    }
}

/// Uploads a host slice into an optional buffer (none when empty), on the process-wide
/// context's stream; complete when this returns. This is the one upload path of spgpu's
/// device matrices and vectors (asynchronous copy on the context's stream, then a wait;
/// never the legacy default stream).
pub(crate) fn upload<U: DeviceCopy>(data: &[U], what: &str) -> Result<Option<DeviceMemory<U>>> {
    if data.is_empty() {
        Ok(None)
    } else {
        DeviceMemory::from_slice(Context::global()?, data, what).map(Some)
    }
}

/// Downloads an optional buffer (none meaning empty) into a `Vec` of `len` elements, after
/// the work queued before on the context's stream.
pub(crate) fn download<U: DeviceCopy + Default + Clone>(
    buf: Option<&DeviceMemory<U>>,
    len: usize,
    what: &str,
) -> Result<Vec<U>> {
    let mut out = vec![U::default(); len];
    if let Some(b) = buf {
        b.copy_to_host(&mut out, what)?;
    }
    Ok(out)
}

/// The device pointer of an optional buffer, null when none.
pub(crate) fn ptr_of<U: DeviceCopy>(buf: Option<&DeviceMemory<U>>) -> DevicePointer<U> {
    buf.map_or_else(DevicePointer::null, DeviceMemory::as_device_ptr)
}
