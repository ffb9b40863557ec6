//! Conversions between spgpu's host formats and those of [sprs](https://docs.rs/sprs) and
//! [nalgebra-sparse](https://docs.rs/nalgebra-sparse).
//!
//! Each side is a default feature of spgpu: `sprs` and `nalgebra`. Without them
//! (`default-features = false`) this module is empty and neither crate is a dependency.
//!
//! Every conversion is a [`From`] or [`TryFrom`] implementation, so it reads
//! `CsrMatrix::try_from(m)?` or `let m: sprs::CsMatI<f64, u32> = a.into();`. Conversions
//! into spgpu are `TryFrom` with a [`FormatError`](crate::FormatError): they validate every
//! invariant spgpu's formats document, the 32-bit index limit
//! ([`INDEX_LIMIT`](crate::INDEX_LIMIT)) included, since a foreign type may hold a larger
//! matrix or (through its unchecked constructors) a malformed one. Conversions out of spgpu
//! cannot fail and are `From`.
//!
//! spgpu stores `u32` offsets and indices. Where the other crate can store them too, the
//! arrays move and nothing is copied (validation still reads them once on the way in);
//! where it stores `usize`, the index arrays are converted (a copy) and the values move:
//!
//! | other type | into spgpu | out of spgpu |
//! |---|---|---|
//! | `sprs::CsMatI<T, u32>`, CSR storage | [`CsrMatrix`](crate::CsrMatrix): moves columns and values, widens the offsets to `u64` | `TryFrom`: moves columns and values, narrows the offsets (refused past `u32::MAX` entries) |
//! | `sprs::CsMatI<T, u32>`, CSC storage | [`CsrMatrix`](crate::CsrMatrix): moves, then transposes (a new matrix) | (out of spgpu: CSR storage) |
//! | `&sprs::CsMatI<T, u32>`, `&sprs::CsMat<T>`, and views (`CsMatViewI<T, u32>`, `CsMatView<T>`, for example from `slice_outer`) | [`CsrMatrix`](crate::CsrMatrix): copies (CSC: transposes) | — |
//! | `sprs::CsMat<T>` (`usize`), CSR or CSC | [`CsrMatrix`](crate::CsrMatrix): copies indices, moves values (CSC: transposes) | copies indices, moves values |
//! | `sprs::TriMatI<T, u32>` | [`CooMatrix`](crate::CooMatrix): copies (a `TriMat` cannot be taken apart) | moves all three arrays |
//! | `sprs::TriMat<T>` (`usize`) | [`CooMatrix`](crate::CooMatrix): copies | copies indices, moves values |
//! | `nalgebra_sparse::CsrMatrix<T>` | [`CsrMatrix`](crate::CsrMatrix): copies indices, moves values (by reference: copies) | copies indices, moves values |
//! | `nalgebra_sparse::CscMatrix<T>` | [`CsrMatrix`](crate::CsrMatrix): copies indices, moves values (by reference: copies), transposes | — |
//! | `nalgebra_sparse::CooMatrix<T>` | [`CooMatrix`](crate::CooMatrix): copies indices, moves values (by reference: copies) | copies indices, moves values |
//!
//! Duplicates are allowed in the triplet types on both sides and are kept as they are; they
//! are summed only when a [`CooMatrix`](crate::CooMatrix) becomes CSR.
//!
//! # Example
//!
//! ```
//! # #[cfg(all(feature = "sprs", feature = "nalgebra"))] {
//! use spgpu::CsrMatrix;
//! let a: CsrMatrix<f64> = spgpu::gen::laplacian_2d(3);
//! // Out to sprs (moving the entries; the offsets narrow to u32), and back.
//! let s = sprs::CsMatI::<f64, u32>::try_from(a.clone())?;
//! assert_eq!(s.nnz(), a.nnz());
//! let b = CsrMatrix::try_from(s)?;
//! assert_eq!(a, b);
//! // Through nalgebra-sparse (usize indices: the indices are copied).
//! let n: nalgebra_sparse::CsrMatrix<f64> = b.into();
//! assert_eq!(CsrMatrix::try_from(n)?, a);
//! # }
//! # Ok::<(), spgpu::FormatError>(())
//! ```

#[cfg(feature = "nalgebra")]
mod nalgebra;
#[cfg(feature = "sprs")]
mod sprs;

/// An error found while reading CSC arrays as the CSR arrays of the transpose: a
/// dimension past the limit is named as the matrix's own (rows for columns and the reverse);
/// other errors name positions in the transpose, whose row `j` is column `j` of the matrix.
#[cfg(any(feature = "sprs", feature = "nalgebra"))]
fn csc_error(e: crate::FormatError) -> crate::FormatError {
    use crate::FormatError;
    match e {
        FormatError::TooLarge { what: "rows", value, limit } => FormatError::TooLarge { what: "columns", value, limit },
        FormatError::TooLarge { what: "columns", value, limit } => FormatError::TooLarge { what: "rows", value, limit },
        e => e,
    }
}
