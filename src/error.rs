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
    /// A CUDA driver call failed.
    #[error("CUDA error in {context}: {source}")]
    Cuda {
        /// What spgpu was doing (for example "launching spmv_csr_vector_f64").
        context: String,
        /// The driver's error.
        #[source]
        source: cust::error::CudaError,
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
    /// Wraps a CUDA driver error with what spgpu was doing when it happened.
    ///
    /// `CUDA_ERROR_NO_DEVICE` and a missing driver become [`Error::NoDevice`], so callers
    /// have one variant to match for "no GPU here".
    pub fn cuda(context: impl Into<String>, source: cust::error::CudaError) -> Self {
        use cust::error::CudaError as E;
        match source {
            E::NoDevice | E::InvalidDevice | E::NotInitialized | E::SharedObjectInitFailed => {
                Error::NoDevice { reason: format!("{} ({})", source, context.into()) }
            }
            _ => Error::Cuda { context: context.into(), source },
        }
    }

    /// Whether this error means that no GPU is usable (see [`Error::NoDevice`]).
    pub fn is_no_device(&self) -> bool {
        matches!(self, Error::NoDevice { .. })
    }
}
