//! Dense vectors in device memory.

use cust::memory::{CopyDestination, DeviceBuffer, DevicePointer};

use super::{kernels, Context};
use crate::{Error, Result, Scalar};

/// A dense vector of `T` in device memory.
///
/// Made from a host slice ([`from_slice`](DeviceVector::from_slice)) or as zeros
/// ([`zeros`](DeviceVector::zeros)); read back with [`to_vec`](DeviceVector::to_vec) or
/// [`copy_to`](DeviceVector::copy_to). An empty vector holds no device memory (CUDA cannot
/// allocate zero bytes) and its [`as_device_ptr`](DeviceVector::as_device_ptr) is null.
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
    buf: Option<DeviceBuffer<T>>,
    len: usize,
}

impl<T: Scalar> DeviceVector<T> {
    /// Uploads a host slice.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when allocation or the copy fails (for example out of memory).
    pub fn from_slice(ctx: &'static Context, data: &[T]) -> Result<Self> {
        ctx.make_current()?;
        let buf = if data.is_empty() {
            None
        } else {
            Some(
                DeviceBuffer::from_slice(data)
                    .map_err(|e| Error::cuda(format!("uploading a vector of {} {} values", data.len(), T::NAME), e))?,
            )
        };
        Ok(DeviceVector { ctx, buf, len: data.len() })
    }

    /// A vector of `len` zeros.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when allocation fails.
    pub fn zeros(ctx: &'static Context, len: usize) -> Result<Self> {
        ctx.make_current()?;
        let buf = if len == 0 {
            None
        } else {
            // SAFETY: the buffer is uninitialized only until the fill kernel below, queued on
            // the context's stream before anything else can use the vector, writes every element.
            let buf = unsafe { DeviceBuffer::uninitialized(len) }
                .map_err(|e| Error::cuda(format!("allocating a vector of {len} {} values", T::NAME), e))?;
            Some(buf)
        };
        let mut v = DeviceVector { ctx, buf, len };
        v.fill(T::ZERO)?;
        Ok(v)
    }

    /// Sets every element to `value`, with a kernel on the context's stream (no wait).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when the launch fails; [`Error::InvalidArgument`] when the vector is
    /// longer than the kernels' 32-bit index allows.
    pub fn fill(&mut self, value: T) -> Result<()> {
        kernels::spmv::fill(self.ctx, self, value)
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

    /// Copies the vector to a new host `Vec`, after all work queued on the stream is done.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when the copy fails or earlier asynchronous work failed.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = vec![T::ZERO; self.len];
        self.copy_to(&mut out)?;
        Ok(out)
    }

    /// Copies the vector into `dst`, after all work queued on the stream is done.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `dst.len() != self.len()`; [`Error::Cuda`] when the
    /// copy fails or earlier asynchronous work failed.
    pub fn copy_to(&self, dst: &mut [T]) -> Result<()> {
        check_len("DeviceVector::copy_to: length of the destination", self.len, dst.len())?;
        self.ctx.synchronize()?;
        if let Some(buf) = &self.buf {
            buf.copy_to(dst).map_err(|e| Error::cuda(format!("downloading a vector of {} values", self.len), e))?;
        }
        Ok(())
    }

    /// Overwrites the vector with `src`, after all work queued on the stream is done.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `src.len() != self.len()`; [`Error::Cuda`] when the
    /// copy fails.
    pub fn copy_from(&mut self, src: &[T]) -> Result<()> {
        check_len("DeviceVector::copy_from: length of the source", self.len, src.len())?;
        self.ctx.synchronize()?;
        if let Some(buf) = &mut self.buf {
            buf.copy_from(src).map_err(|e| Error::cuda(format!("uploading a vector of {} values", self.len), e))?;
        }
        Ok(())
    }

    /// The device address of the first element, for passing to other CUDA code (a kernel of
    /// your own, cuSPARSE through FFI); null for an empty vector. The memory stays valid
    /// while `self` lives. Work on it should go to [`Context::stream`] to stay ordered with
    /// spgpu's.
    pub fn as_device_ptr(&self) -> DevicePointer<T> {
        self.buf.as_ref().map_or_else(DevicePointer::null, |b| b.as_device_ptr())
    }
}

impl<T: Scalar> std::fmt::Debug for DeviceVector<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceVector").field("scalar", &T::NAME).field("len", &self.len).finish()
    }
}

impl<T: Scalar> Drop for DeviceVector<T> {
    fn drop(&mut self) {
        // cuMemFree needs the context current on this thread; a failure here cannot be
        // reported, and the memory is then released with the context.
        let _ = self.ctx.make_current();
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

/// Uploads a host slice into an optional buffer (none when empty).
pub(crate) fn upload<U: cust::memory::DeviceCopy>(data: &[U], what: &str) -> Result<Option<DeviceBuffer<U>>> {
    if data.is_empty() {
        Ok(None)
    } else {
        DeviceBuffer::from_slice(data).map(Some).map_err(|e| Error::cuda(format!("uploading {what}"), e))
    }
}

/// Downloads an optional buffer (none meaning empty) into a `Vec`.
pub(crate) fn download<U: cust::memory::DeviceCopy + Default + Clone>(
    buf: Option<&DeviceBuffer<U>>,
    len: usize,
    what: &str,
) -> Result<Vec<U>> {
    let mut out = vec![U::default(); len];
    if let Some(b) = buf {
        b.copy_to(&mut out[..]).map_err(|e| Error::cuda(format!("downloading {what}"), e))?;
    }
    Ok(out)
}

/// The device pointer of an optional buffer, null when none.
pub(crate) fn ptr_of<U: cust::memory::DeviceCopy>(buf: Option<&DeviceBuffer<U>>) -> DevicePointer<U> {
    buf.map_or_else(DevicePointer::null, |b| b.as_device_ptr())
}
