//! ELLPACK storage: every row padded to the length of the longest, stored column-major.

use super::{CsrMatrix, FormatError};
use crate::Scalar;

/// The column index stored in padding slots of an [`EllMatrix`]: `u32::MAX` (`-1` as the
/// kernels' signed 32-bit index). A padding slot also stores the value zero; kernels skip
/// slots with this column, so padding never reads `x` (NaN in `x` cannot leak through it).
pub const ELL_PADDING: u32 = u32::MAX;

/// The default padding limit of [`EllMatrix::try_from_csr`]: ELL may store at most this many
/// times the slots CSR stores (`width * nrows <= 3 * max(nnz, nrows)`).
///
/// One long row makes every row as long as it; the limit refuses such matrices with a typed
/// error instead of exhausting memory.
pub const DEFAULT_MAX_ELL_PADDING_RATIO: usize = 3;

/// A sparse matrix in ELLPACK form, validated on construction (it can only be built from a
/// [`CsrMatrix`]).
///
/// # Format
///
/// `width` is the length of the longest row. Both arrays hold `width * nrows` slots in
/// column-major order: slot `k` of row `i` is at `k * nrows + i`, so consecutive rows (GPU
/// threads) read consecutive addresses. A row's entries fill its first slots in increasing
/// column order; its remaining slots are padding: column [`ELL_PADDING`], value zero.
///
/// # Invariants
///
/// Those of the CSR matrix it came from, plus: every non-padding column is `< ncols`,
/// padding only follows a row's entries, and `width * nrows` is within the limit it was
/// built with.
///
/// # Example
///
/// ```
/// use spgpu::{CsrMatrix, EllMatrix, ELL_PADDING};
/// let a = CsrMatrix::try_from_parts(2, 3, vec![0, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0])?;
/// let e = EllMatrix::try_from_csr(&a)?;
/// assert_eq!(e.width(), 2);
/// // column-major: slot 0 of rows 0 and 1, then slot 1 of rows 0 and 1
/// assert_eq!(e.col_indices(), &[0, 1, 2, ELL_PADDING]);
/// assert_eq!(e.to_csr(), a);
/// # Ok::<(), spgpu::FormatError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EllMatrix<T> {
    nrows: usize,
    ncols: usize,
    width: usize,
    nnz: usize,
    col_indices: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> EllMatrix<T> {
    /// Converts from CSR with the default padding limit
    /// ([`DEFAULT_MAX_ELL_PADDING_RATIO`] times `max(nnz, nrows)` slots).
    ///
    /// # Errors
    ///
    /// [`FormatError::EllPaddingLimit`] when ELL would store more slots than that.
    pub fn try_from_csr(a: &CsrMatrix<T>) -> Result<Self, FormatError> {
        let limit = DEFAULT_MAX_ELL_PADDING_RATIO.saturating_mul(a.nnz().max(a.nrows()));
        Self::try_from_csr_with_limit(a, limit)
    }

    /// Converts from CSR, refusing when ELL would store more than `max_slots` slots
    /// (`width * nrows`, padding included).
    ///
    /// # Errors
    ///
    /// [`FormatError::EllPaddingLimit`] when `width * nrows > max_slots`, checked before
    /// anything is allocated.
    ///
    /// # Example
    ///
    /// ```
    /// use spgpu::{CooMatrix, EllMatrix, FormatError};
    /// // 1000 rows of one entry, and one row of 100: ELL would store 100 x 1000 slots.
    /// let mut coo = CooMatrix::<f64>::new(1000, 1000)?;
    /// for i in 0..1000 {
    ///     coo.push(i, i, 1.0)?;
    /// }
    /// for j in 500..599 {
    ///     coo.push(0, j, 1.0)?;
    /// }
    /// let a = coo.to_csr();
    /// let err = EllMatrix::try_from_csr(&a).unwrap_err(); // default: 3 x 1099 slots
    /// assert!(matches!(err, FormatError::EllPaddingLimit { width: 100, padded: 100_000, .. }));
    /// let e = EllMatrix::try_from_csr_with_limit(&a, 100_000)?; // the caller accepts it
    /// assert_eq!(e.width(), 100);
    /// # Ok::<(), FormatError>(())
    /// ```
    pub fn try_from_csr_with_limit(a: &CsrMatrix<T>, max_slots: usize) -> Result<Self, FormatError> {
        let nrows = a.nrows();
        let width = (0..nrows).map(|i| a.row_len(i)).max().unwrap_or(0);
        let padded = width.saturating_mul(nrows);
        if padded > max_slots {
            return Err(FormatError::EllPaddingLimit { width, nrows, nnz: a.nnz(), padded, limit: max_slots });
        }
        let mut col_indices = vec![ELL_PADDING; padded];
        let mut values = vec![T::ZERO; padded];
        for i in 0..nrows {
            let (cols, vals) = a.row(i);
            for (k, (&c, &v)) in cols.iter().zip(vals).enumerate() {
                col_indices[k * nrows + i] = c;
                values[k * nrows + i] = v;
            }
        }
        Ok(EllMatrix { nrows, ncols: a.ncols(), width, nnz: a.nnz(), col_indices, values })
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Slots per row: the length of the longest row.
    pub fn width(&self) -> usize {
        self.width
    }
    /// Number of stored entries, padding excluded.
    pub fn nnz(&self) -> usize {
        self.nnz
    }
    /// Column indices of all `width * nrows` slots, column-major; padding is
    /// [`ELL_PADDING`].
    pub fn col_indices(&self) -> &[u32] {
        &self.col_indices
    }
    /// Values of all slots, column-major; padding is zero.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// The entries of row `i` as `(column, value)` pairs, padding skipped.
    ///
    /// # Panics
    ///
    /// If `i >= nrows`.
    pub fn row(&self, i: usize) -> impl Iterator<Item = (u32, T)> + '_ {
        assert!(i < self.nrows, "row {i} out of range for {} rows", self.nrows);
        (0..self.width)
            .map(move |k| (self.col_indices[k * self.nrows + i], self.values[k * self.nrows + i]))
            .take_while(|&(c, _)| c != ELL_PADDING)
    }
    /// Converts back to CSR (exact: the same entries in the same order).
    pub fn to_csr(&self) -> CsrMatrix<T> {
        let mut offsets = Vec::with_capacity(self.nrows + 1);
        offsets.push(0u64);
        let mut cols = Vec::with_capacity(self.nnz);
        let mut vals = Vec::with_capacity(self.nnz);
        for i in 0..self.nrows {
            for (c, v) in self.row(i) {
                cols.push(c);
                vals.push(v);
            }
            offsets.push(cols.len() as u64);
        }
        // SAFETY: an EllMatrix is only built from a valid CSR matrix, row by row in order.
        unsafe { CsrMatrix::from_parts_unchecked(self.nrows, self.ncols, offsets, cols, vals) }
    }
}

impl<T: Scalar> TryFrom<&CsrMatrix<T>> for EllMatrix<T> {
    type Error = FormatError;
    /// The same as [`EllMatrix::try_from_csr`], with the default padding limit.
    fn try_from(a: &CsrMatrix<T>) -> Result<Self, FormatError> {
        EllMatrix::try_from_csr(a)
    }
}

impl<T: Scalar> From<&EllMatrix<T>> for CsrMatrix<T> {
    /// The same as [`EllMatrix::to_csr`].
    fn from(a: &EllMatrix<T>) -> Self {
        a.to_csr()
    }
}
