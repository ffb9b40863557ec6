//! The crate's error type.
//!
//! Every fallible function of spgpu returns [`Result<T>`](crate::Result), whose error is the
//! one [`Error`] enum below. Bad input (a malformed file, an invalid matrix, vectors of the
//! wrong length, no GPU) is always an `Err`, never a panic: a panic is a bug.

use std::path::PathBuf;

pub use crate::format::FormatError;
pub use crate::io::MatrixMarketError;

/// Shorthand for `std::result::Result<T, spgpu::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in spgpu.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No usable CUDA device: no driver, no GPU, or the device named by `SPGPU_DEVICE` does
    /// not exist. Code that can fall back to the CPU matches on this variant.
    #[error("no CUDA device available: {reason}")]
    NoDevice {
        /// What the driver said (for example "no CUDA-capable device is detected").
        reason: String,
    },
    /// A CUDA driver call failed. The driver's code is kept ([`DriverError::code`],
    /// [`DriverError::name`]); stream-capture failures say so
    /// ([`Error::is_capture_invalidated`]).
    #[error("CUDA error in {context}: {source}")]
    Cuda {
        /// What spgpu was doing (for example "launching spmv_csr_vector_f64").
        context: String,
        /// The driver's error code.
        #[source]
        source: DriverError,
    },
    /// A host matrix violates an invariant of its format.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// Operands whose dimensions do not fit together; nothing was computed or launched.
    #[error("dimension mismatch in {op}: expected {expected}, found {found}")]
    DimensionMismatch {
        /// The operation and operand, for example "spmv: length of x".
        op: &'static str,
        /// The length the operation needs.
        expected: usize,
        /// The length it was given.
        found: usize,
    },
    /// A Matrix Market file could not be read; the error carries the line and the text at
    /// fault.
    #[error(transparent)]
    MatrixMarket(#[from] MatrixMarketError),
    /// An I/O error, with the file it concerns when known.
    #[error("{}: {source}", path.as_ref().map_or_else(|| "I/O error".to_string(), |p| p.display().to_string()))]
    Io {
        /// The file being read or written, when known.
        path: Option<PathBuf>,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An argument outside the values an operation accepts (for example a kernel that does
    /// not apply to the matrix, or a non-finite scalar where one is required).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Building or uploading something would need more memory than is available (or than a
    /// limit the caller set); nothing was allocated. The message gives the estimate, what is
    /// available and how to raise the limit.
    #[error("not enough {memory} memory for {what}: needs about {}, {} available{}", human_bytes(*needed), human_bytes(*available), if hint.is_empty() { String::new() } else { format!(" ({hint})") })]
    InsufficientMemory {
        /// What was to be built, for example "gen:lap2d:20000 (f64 CSR)".
        what: String,
        /// "host" or "device".
        memory: &'static str,
        /// The estimated bytes it needs.
        needed: u64,
        /// The bytes available (or the limit in force).
        available: u64,
        /// How to proceed anyway, for example "raise the limit with --mem-limit"; may be empty.
        hint: String,
    },
}

/// Bytes as a short human-readable size with binary units ("1.5 GiB").
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

impl From<std::io::Error> for Error {
    fn from(source: std::io::Error) -> Self {
        Error::Io { path: None, source }
    }
}

impl Error {
    /// Wraps a CUDA driver error (a [`DriverError`], a raw `CUresult` or cust's
    /// [`CudaError`](cust::error::CudaError)) with what spgpu was doing when it happened.
    ///
    /// `CUDA_ERROR_NO_DEVICE`, `CUDA_ERROR_INVALID_DEVICE`, `CUDA_ERROR_NOT_INITIALIZED`,
    /// `CUDA_ERROR_STUB_LIBRARY` and a driver library that does not initialize become
    /// [`Error::NoDevice`], so callers have one variant to match for "no GPU here".
    pub fn cuda(context: impl Into<String>, source: impl Into<DriverError>) -> Self {
        let source = source.into();
        if source.means_no_device() {
            Error::NoDevice { reason: format!("{} ({})", source, context.into()) }
        } else {
            Error::Cuda { context: context.into(), source }
        }
    }

    /// Whether this error means that no GPU is usable (see [`Error::NoDevice`]).
    pub fn is_no_device(&self) -> bool {
        matches!(self, Error::NoDevice { .. })
    }

    /// The CUDA driver's error, for [`Error::Cuda`].
    pub fn driver_error(&self) -> Option<DriverError> {
        match self {
            Error::Cuda { source, .. } => Some(*source),
            _ => None,
        }
    }

    /// Whether this is a CUDA stream-capture error (codes 900 to 908, see
    /// [`DriverError::is_capture_error`]): a CUDA graph being recorded was invalidated, or
    /// an operation was refused because a capture was under way.
    pub fn is_capture_invalidated(&self) -> bool {
        self.driver_error().is_some_and(|e| e.is_capture_error())
    }
}

/// An error code of the CUDA driver API (a `CUresult` other than `CUDA_SUCCESS`), kept as
/// the driver returned it.
///
/// It displays as the driver's name and number, its description and, for the
/// stream-capture codes, what that means for spgpu:
/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901): operation failed due to a previous error
/// during capture; ...`. The name and description come from `cuGetErrorName` and
/// `cuGetErrorString`, or from spgpu's own table when the driver cannot be asked.
///
/// # Example
///
/// ```
/// use spgpu::error::DriverError;
/// let e = DriverError::from_code(901);
/// assert_eq!(e.code(), 901);
/// assert_eq!(e.name(), "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
/// assert!(e.is_capture_error());
/// let e = DriverError::from(cust::error::CudaError::OutOfMemory);
/// assert_eq!((e.code(), e.name().as_str()), (2, "CUDA_ERROR_OUT_OF_MEMORY"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DriverError {
    code: i32,
}

/// cust's own error codes (not the driver's): `InvalidMemoryAllocation`, `OptixError`.
const CUST_CODES: [(i32, &str); 2] = [(100_100, "cust: invalid memory allocation"), (100_101, "cust: OptiX error")];

impl DriverError {
    /// The error with driver code `code` (any value; `0` is `CUDA_SUCCESS` and should not
    /// be wrapped).
    pub fn from_code(code: i32) -> Self {
        DriverError { code }
    }

    /// The driver's number, for example 901.
    pub fn code(&self) -> i32 {
        self.code
    }

    /// The driver's name, for example `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`
    /// (`cuGetErrorName`), or `CUDA_ERROR_<code>` for a code this build does not know.
    pub fn name(&self) -> String {
        if let Some(&(_, name)) = CUST_CODES.iter().find(|(c, _)| *c == self.code) {
            return name.to_string();
        }
        match cu_result(self.code) {
            Some(rc) => driver_string(rc, cust::sys::cuGetErrorName).unwrap_or_else(|| format!("{rc:?}")),
            None => format!("CUDA_ERROR_{}", self.code),
        }
    }

    /// The driver's description (`cuGetErrorString`), empty when the driver cannot be
    /// asked.
    pub fn description(&self) -> String {
        cu_result(self.code).and_then(|rc| driver_string(rc, cust::sys::cuGetErrorString)).unwrap_or_default()
    }

    /// Whether this is one of the stream-capture errors (900 to 908:
    /// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, `_INVALIDATED`, `_MERGE`, `_UNMATCHED`,
    /// `_UNJOINED`, `_ISOLATION`, `_IMPLICIT`, `CUDA_ERROR_CAPTURED_EVENT`,
    /// `CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD`): a CUDA graph capture was invalidated, or
    /// an operation conflicted with one.
    pub fn is_capture_error(&self) -> bool {
        (900..=908).contains(&self.code)
    }

    /// Whether the code means that no GPU is usable (see [`Error::cuda`]).
    fn means_no_device(&self) -> bool {
        // 3 not initialized, 34 stub library, 100 no device, 101 invalid device,
        // 303 shared object init failed.
        matches!(self.code, 3 | 34 | 100 | 101 | 303)
    }

    /// The raw `CUresult` of a driver call: `Ok` for `CUDA_SUCCESS`.
    ///
    /// # Errors
    ///
    /// The code, for any other value.
    pub fn check(rc: cust::sys::CUresult) -> std::result::Result<(), DriverError> {
        match rc {
            cust::sys::CUresult::CUDA_SUCCESS => Ok(()),
            rc => Err(DriverError::from(rc)),
        }
    }
}

impl From<cust::sys::CUresult> for DriverError {
    fn from(rc: cust::sys::CUresult) -> Self {
        DriverError { code: rc as i32 }
    }
}

impl From<cust::error::CudaError> for DriverError {
    fn from(e: cust::error::CudaError) -> Self {
        // cust's discriminants are the driver's codes (and 100100+ for its own errors).
        DriverError { code: e as u32 as i32 }
    }
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.code)?;
        let description = self.description();
        if !description.is_empty() {
            write!(f, ": {description}")?;
        }
        match self.code {
            901 | 906 => f.write_str(
                "; a CUDA graph capture was invalidated and nothing it recorded ran (906: some code used the \
                 legacy default stream while a blocking stream of the context was capturing)",
            ),
            c if (900..=908).contains(&c) => f.write_str("; this is a CUDA graph stream-capture error"),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for DriverError {}

/// A string the driver returns for `rc` (`cuGetErrorName` or `cuGetErrorString`), or `None`
/// when the driver does not answer.
fn driver_string(
    rc: cust::sys::CUresult,
    get: unsafe extern "C" fn(cust::sys::CUresult, *mut *const std::os::raw::c_char) -> cust::sys::CUresult,
) -> Option<String> {
    let mut ptr: *const std::os::raw::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName / cuGetErrorString(CUresult, const char**) take any CUresult
    // (rc is a valid variant of the enum) and a valid out-pointer; on success `ptr` is a
    // NUL-terminated string with static lifetime in the driver, which is copied here.
    let ok = unsafe { get(rc, &mut ptr) } == cust::sys::CUresult::CUDA_SUCCESS;
    if !ok || ptr.is_null() {
        return None;
    }
    // SAFETY: non-null, NUL-terminated, static (see above).
    Some(unsafe { std::ffi::CStr::from_ptr(ptr) }.to_string_lossy().into_owned())
}

/// The `CUresult` variant with code `code`, when the bindings know it.
fn cu_result(code: i32) -> Option<cust::sys::CUresult> {
    crate::gpu::driver::cu_results().find(|&rc| rc as i32 == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_table_is_sorted_and_complete_for_cust() {
        use cust::error::CudaError as E;
        for e in [E::InvalidValue, E::OutOfMemory, E::NoDevice, E::IllegalAddress, E::NotSupported, E::UnknownError] {
            assert!(cu_result(DriverError::from(e).code()).is_some(), "{e:?}");
        }
        assert_eq!(cu_result(906), Some(cust::sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT));
        assert_eq!(cu_result(12345), None);
    }

    #[test]
    fn driver_errors_keep_their_code_and_say_when_a_capture_broke() {
        let e = Error::cuda("uploading a vector", cust::sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
        assert_eq!(e.driver_error().map(|d| d.code()), Some(906));
        assert!(e.is_capture_invalidated());
        let text = e.to_string();
        assert!(text.contains("CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (906)"), "{text}");
        assert!(text.contains("capture was invalidated"), "{text}");
        assert!(text.contains("uploading a vector"), "{text}");
        let e = Error::cuda("allocating", cust::error::CudaError::OutOfMemory);
        assert!(!e.is_capture_invalidated());
        assert!(e.to_string().contains("CUDA_ERROR_OUT_OF_MEMORY (2)"), "{e}");
        assert_eq!(DriverError::from_code(77777).name(), "CUDA_ERROR_77777");
        assert_eq!(
            DriverError::from(cust::error::CudaError::InvalidMemoryAllocation).name(),
            "cust: invalid memory allocation"
        );
    }

    #[test]
    fn no_device_codes_become_no_device() {
        for rc in [cust::sys::CUresult::CUDA_ERROR_NO_DEVICE, cust::sys::CUresult::CUDA_ERROR_STUB_LIBRARY] {
            assert!(Error::cuda("initializing", rc).is_no_device());
        }
        assert!(Error::cuda("initializing", cust::error::CudaError::NotInitialized).is_no_device());
    }
}
