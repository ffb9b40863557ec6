//! # spgpu: sparse matrix-vector products and conjugate gradient on NVIDIA GPUs
//!
//! spgpu computes `y = alpha*A*x + beta*y` for sparse `A` on an NVIDIA GPU through the
//! [`cust`] crate, and builds a conjugate-gradient solver on it. Matrices are validated on
//! the host before they are uploaded, and a robust Matrix Market reader brings them in.
//!
//! ## Glossary
//!
//! - **host**: the CPU and its memory. Host formats ([`CsrMatrix`], [`EllMatrix`],
//!   [`CooMatrix`]) live there and are validated when built.
//! - **device**: the GPU and its memory. Device matrices are uploaded copies of host ones.
//! - **stream**: a queue of GPU work; launches on one stream run in order and return to the
//!   host at once, without waiting for the GPU.
//! - **kernel**: a function that runs on the GPU in many threads at once; spgpu's kernels
//!   are CUDA C in `ptx/`, compiled to PTX and loaded once per context.
//!
//! ## Quick start (host side)
//!
//! ```
//! use spgpu::{gen, reference, CsrMatrix};
//! let a: CsrMatrix<f64> = gen::laplacian_2d(4); // 16 x 16, 5-point stencil
//! let x = vec![1.0; a.ncols()];
//! let mut y = vec![f64::NAN; a.nrows()]; // beta = 0: y is never read
//! reference::spmv_csr(1.0, &a, &x, 0.0, &mut y)?;
//! assert_eq!(y[5], 0.0); // an interior row of the Laplacian sums to zero
//! # Ok::<(), spgpu::Error>(())
//! ```
//!
//! ## Building
//!
//! spgpu needs no NVIDIA software to build, link or start: it opens the CUDA driver
//! (`libcuda.so.1`) when the first GPU call is made (see [`gpu::driver`]), and without one
//! the GPU entry points return [`Error::NoDevice`]. cust's build script needs the
//! environment variable `CUDA_LIBRARY_PATH` to name a folder with a `lib64` folder when no
//! CUDA toolkit is installed; `CUDA_LIBRARY_PATH=/usr` does on x86_64 Linux (put it in the
//! `[env]` table of your `.cargo/config.toml`).
//!
//! Features, all on by default: `cli` (the `spgpu` command line tool and its dependencies),
//! `sprs` and `nalgebra` (the conversions in [`interop`]). With `default-features = false`
//! the library depends on neither those crates nor the tool's.
#![deny(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

#[cfg(feature = "cli")]
pub mod bench;
pub mod bytes;
pub mod error;
pub mod format;
pub mod gen;
pub mod gpu;
pub mod interop;
pub mod io;
pub mod reference;
pub mod reorder;
pub mod scalar;
pub mod solver;

pub use error::{Error, Result};
pub use format::{CooMatrix, CsrMatrix, EllMatrix, FormatError, RowStats, ELL_PADDING, ENTRY_LIMIT, INDEX_LIMIT};
pub use scalar::Scalar;
