//! ELLPACK matrices in device memory.

use cust::memory::DevicePointer;

use rayon::prelude::*;

use crate::format::DEFAULT_MAX_ELL_PADDING_RATIO;
use crate::gpu::kernels;
pub(crate) use crate::gpu::kernels::arrays::CsrOnDevice;
use crate::gpu::kernels::arrays::{EllArrays, SlotCols};
use crate::gpu::plan::SpmvPlan;
use crate::gpu::plan::Tuning;
use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::gpu::runtime::positions::PIECE;
use crate::gpu::runtime::vector::DeviceVector;
use crate::gpu::runtime::vector::{download, ptr_of, upload};
use crate::gpu::storage::values::{self, ValueMap};
use crate::{CsrMatrix, EllMatrix, Error, FormatError, Result, RowStats, Scalar, ELL_PADDING};

/// An ELLPACK matrix in device memory: `width * nrows` slots stored column-major (slot `k`
/// of row `i` at `k * nrows + i`), padding slots holding column [`ELL_PADDING`] and value
/// zero after each row's entries, exactly as in [`EllMatrix`]. When every entry lies within
/// 32767 of the diagonal, the columns are stored as 16-bit offsets from the row
/// ([`narrow`](crate::gpu::storage::narrow); [`narrow_columns`](DeviceEll::narrow_columns) says which).
///
/// It can only be made by uploading a validated [`EllMatrix`] (or a [`CsrMatrix`], converted
/// first), and always runs the ELL kernel: one thread per row, whose loads are coalesced
/// across a warp. It is the fastest format for matrices whose rows have about the same
/// length ([`SpmvPlan::explain`] says when).
///
/// # Example
///
/// ```no_run
/// use spgpu::gpu::{Context, DeviceEll, DeviceVector};
/// let ctx = Context::global()?;
/// let a = spgpu::gen::laplacian_2d::<f64>(1000);
/// let d_a = DeviceEll::from_csr(ctx, &a)?;
/// let x = DeviceVector::from_slice(ctx, &vec![1.0; a.ncols()])?;
/// let mut y = DeviceVector::zeros(ctx, a.nrows())?;
/// d_a.spmv(1.0, &x, 0.0, &mut y)?;
/// # Ok::<(), spgpu::Error>(())
/// ```
pub struct DeviceEll<T: Scalar> {
    ctx: &'static Context,
    nrows: usize,
    ncols: usize,
    nnz: usize,
    width: usize,
    cols: Option<SlotCols>,
    values: Option<DeviceMemory<T>>,
    stats: RowStats,
    plan: SpmvPlan,
    /// Where each slot takes its value from in CSR order, made by the first
    /// [`update_values`](DeviceEll::update_values) ([`crate::gpu::storage::values`]).
    value_map: Option<ValueMap>,
}

pub use crate::gpu::plan::tuning::DEVICE_CONVERSION_ENV;

/// Device memory left free beyond the CSR arrays for the conversion on the device to run.
pub(crate) const CONVERSION_MARGIN: u64 = 64 << 20;

impl<T: Scalar> CsrOnDevice<T> {
    /// Uploads `a`'s arrays when [`Tuning::device_conversion`] allows a conversion on the device
    /// and they fit in the free device memory with `extra` bytes more (what the conversion
    /// uploads beside them) and [`CONVERSION_MARGIN`] to spare; `None` otherwise. `into`
    /// names the storage made from them, for error messages.
    pub(crate) fn upload(
        ctx: &'static Context,
        a: &CsrMatrix<T>,
        extra: u64,
        into: &str,
        tuning: &Tuning,
    ) -> Result<Option<Self>> {
        if !tuning.device_conversion_allowed() {
            return Ok(None);
        }
        let bytes = (a.nrows() as u64 + 1) * 8 + a.nnz() as u64 * (4 + T::BYTES as u64) + extra;
        if ctx.available_memory()? < bytes + CONVERSION_MARGIN {
            return Ok(None);
        }
        let what = format!("(for the conversion to {into} on the device)");
        let arrays = || -> Result<Self> {
            Ok(CsrOnDevice {
                row_offsets: DeviceMemory::from_slice(ctx, a.row_offsets(), &format!("CSR row offsets {what}"))?,
                cols: DeviceMemory::from_slice(ctx, a.col_indices(), &format!("CSR column indices {what}"))?,
                vals: DeviceMemory::from_slice(ctx, a.values(), &format!("CSR values {what}"))?,
            })
        };
        // memory taken by another thread since the check: the host converts instead
        Ok(arrays().ok())
    }
}

impl<T: Scalar> EllArrays<T> for DeviceEll<T> {
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.ncols
    }
    fn width(&self) -> usize {
        self.width
    }
    fn is_wide(&self) -> bool {
        DeviceEll::is_wide(self)
    }
    fn narrow_columns(&self) -> bool {
        DeviceEll::narrow_columns(self)
    }
    fn cols_addr(&self) -> u64 {
        DeviceEll::cols_addr(self)
    }
    fn values_ptr(&self) -> DevicePointer<T> {
        DeviceEll::values_ptr(self)
    }
}

/// Whether the ELL kernel needs 64-bit slot arithmetic: its slot index runs to
/// `(width + 1) * nrows`, which must otherwise fit 32 bits.
fn slots_need_64_bits(width: usize, nrows: usize) -> bool {
    width.saturating_add(1).saturating_mul(nrows) > u32::MAX as usize
}

impl<T: Scalar> DeviceEll<T> {
    /// Uploads a host ELLPACK matrix.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`](crate::Error::Cuda) when allocation or a copy fails.
    pub fn upload(ctx: &'static Context, a: &EllMatrix<T>) -> Result<Self> {
        Self::upload_tuned(ctx, a, &Tuning::from_env())
    }

    /// [`upload`](Self::upload) with the overrides of `tuning` in place of the
    /// environment's ([`Tuning::narrow_columns`] applies).
    ///
    /// # Errors
    ///
    /// As [`upload`](Self::upload).
    pub fn upload_tuned(ctx: &'static Context, a: &EllMatrix<T>, tuning: &Tuning) -> Result<Self> {
        let stats = RowStats::from_lengths((0..a.nrows()).map(|i| a.row(i).count()), a.ncols());
        let nrows = a.nrows();
        let narrow = crate::gpu::plan::narrow::ell_slots(a, tuning);
        let cols = match a.col_indices() {
            [] => None,
            c => {
                let mut d = SlotCols::uninit(ctx, c.len(), narrow, "ELL column indices")?;
                d.copy_from_host_at(0, c, |s| s % nrows, &mut Vec::new(), "ELL column indices")?;
                Some(d)
            }
        };
        let mut plan = SpmvPlan::for_ell::<T>(&stats, ctx.warp_size());
        plan.set_narrow(cols.as_ref().is_some_and(SlotCols::is_narrow));
        let values = upload(a.values(), "ELL values")?;
        Ok(DeviceEll {
            ctx,
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            width: a.width(),
            cols,
            values,
            stats,
            plan,
            value_map: None,
        })
    }

    /// Converts a CSR matrix to ELLPACK (with [`EllMatrix::try_from_csr`]'s padding limit) and
    /// uploads it.
    ///
    /// The conversion runs on the device when the CSR arrays fit in the memory left beside
    /// the slots: they are uploaded, a kernel makes the slots, and they are freed. Otherwise
    /// it runs on the host a piece of rows at a time (in parallel), each piece uploaded
    /// before the next is made: the host holds the CSR matrix and one piece (about 4 million
    /// slots), never a second full copy. Both give the same slots.
    ///
    /// # Errors
    ///
    /// [`Error::Format`](crate::Error::Format) ([`FormatError::EllPaddingLimit`](crate::FormatError::EllPaddingLimit))
    /// when ELL would pad too much, before anything is allocated; [`Error::Cuda`](crate::Error::Cuda) when
    /// allocation or a copy fails.
    pub fn from_csr(ctx: &'static Context, a: &CsrMatrix<T>) -> Result<Self> {
        Self::from_csr_tuned(ctx, a, &Tuning::from_env())
    }

    /// [`from_csr`](Self::from_csr) with the overrides of `tuning` in place of the
    /// environment's ([`Tuning::narrow_columns`] and [`Tuning::device_conversion`] apply).
    ///
    /// # Errors
    ///
    /// As [`from_csr`](Self::from_csr).
    pub fn from_csr_tuned(ctx: &'static Context, a: &CsrMatrix<T>, tuning: &Tuning) -> Result<Self> {
        let limit = DEFAULT_MAX_ELL_PADDING_RATIO.saturating_mul(a.nnz().max(a.nrows()));
        let narrow = crate::gpu::plan::narrow::ell_columns(a, None, tuning);
        Self::from_csr_with(ctx, a, &a.row_stats(), limit, narrow, tuning)
    }

    /// [`from_csr`](Self::from_csr) with the row statistics already made, a padding limit
    /// in slots, whether the slots store 16-bit column offsets (the plan's
    /// [`ell_columns`](crate::gpu::narrow::ell_columns)), and the tuning (whether
    /// the conversion may run on the device).
    pub(crate) fn from_csr_with(
        ctx: &'static Context,
        a: &CsrMatrix<T>,
        stats: &RowStats,
        max_slots: usize,
        narrow: bool,
        tuning: &Tuning,
    ) -> Result<Self> {
        let (nrows, width) = (a.nrows(), stats.max);
        let padded = width.saturating_mul(nrows);
        if padded > max_slots {
            let e = FormatError::EllPaddingLimit { width, nrows, nnz: a.nnz(), padded, limit: max_slots };
            return Err(e.into());
        }
        let mut plan = SpmvPlan::for_ell::<T>(stats, ctx.warp_size());
        plan.set_narrow(narrow && padded > 0); // no slots: nothing stored narrow
        let (mut slot_cols, mut values) = (None, None);
        if padded > 0 {
            let mut cols = SlotCols::uninit(ctx, padded, narrow, "ELL column indices")?;
            let mut vals = DeviceMemory::<T>::uninit(ctx, padded, "ELL values")?;
            if Self::convert_on_device(ctx, a, width, &mut cols, &mut vals, tuning)? {
                return Ok(DeviceEll {
                    ctx,
                    nrows,
                    ncols: a.ncols(),
                    nnz: a.nnz(),
                    width,
                    cols: Some(cols),
                    values: Some(vals),
                    stats: stats.clone(),
                    plan,
                    value_map: None,
                });
            }
            let mut buf = Vec::new();
            let (off, acols, avals) = (a.row_offsets(), a.col_indices(), a.values());
            let rows_per_piece = (PIECE / width).max(1);
            let (mut tile_c, mut tile_v) = (Vec::new(), Vec::new());
            for r0 in (0..nrows).step_by(rows_per_piece) {
                let n = rows_per_piece.min(nrows - r0);
                // the piece, column-major: slot k of row r0 + i at k * n + i
                tile_c.resize(width * n, ELL_PADDING);
                tile_v.resize(width * n, T::ZERO);
                tile_c.par_iter_mut().zip(tile_v.par_iter_mut()).enumerate().with_min_len(1 << 12).for_each(
                    |(t, (c, v))| {
                        let (k, i) = (t / n, r0 + t % n);
                        let j = off[i] as usize + k;
                        (*c, *v) = if j < off[i + 1] as usize { (acols[j], avals[j]) } else { (ELL_PADDING, T::ZERO) };
                    },
                );
                for k in 0..width {
                    let at = k * nrows + r0;
                    cols.copy_from_host_at(
                        at,
                        &tile_c[k * n..(k + 1) * n],
                        |i| r0 + i,
                        &mut buf,
                        "ELL column indices",
                    )?;
                    vals.copy_from_host_at(at, &tile_v[k * n..(k + 1) * n], "ELL values")?;
                }
            }
            (slot_cols, values) = (Some(cols), Some(vals));
        }
        Ok(DeviceEll {
            ctx,
            nrows,
            ncols: a.ncols(),
            nnz: a.nnz(),
            width,
            cols: slot_cols,
            values,
            stats: stats.clone(),
            plan,
            value_map: None,
        })
    }

    /// The ELL form of a CSR matrix already on the device (`offsets`: `nrows + 1` 64-bit
    /// offsets, `cols`, `vals`; `stats` its row statistics), made there by `ell_from_csr_<T>`;
    /// with `narrow` the slots store 16-bit column offsets (the caller checked that every
    /// entry lies within [`MAX_OFFSET`](crate::gpu::plan::narrow::MAX_OFFSET) of its row).
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) when the arrays do not
    /// match `nrows` and `stats`; [`Error::Cuda`](crate::Error::Cuda).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_device_csr(
        ctx: &'static Context,
        nrows: usize,
        ncols: usize,
        stats: &RowStats,
        narrow: bool,
        offsets: &DeviceMemory<u64>,
        cols: &DeviceMemory<u32>,
        vals: &DeviceMemory<T>,
    ) -> Result<Self> {
        let width = stats.max;
        let padded = width.saturating_mul(nrows);
        let mut plan = SpmvPlan::for_ell::<T>(stats, ctx.warp_size());
        plan.set_narrow(narrow && padded > 0);
        let (mut slot_cols, mut values) = (None, None);
        if padded > 0 {
            let mut c = SlotCols::uninit(ctx, padded, narrow, "ELL column indices")?;
            let mut v = DeviceMemory::<T>::uninit(ctx, padded, "ELL values")?;
            kernels::spmv::ell_from_csr(ctx, nrows, width, offsets, cols, vals, &mut c, &mut v)?;
            (slot_cols, values) = (Some(c), Some(v));
        }
        Ok(DeviceEll {
            ctx,
            nrows,
            ncols,
            nnz: stats.nnz,
            width,
            cols: slot_cols,
            values,
            stats: stats.clone(),
            plan,
            value_map: None,
        })
    }

    /// Fills the slots on the device when [`Tuning::device_conversion`] allows it and the CSR
    /// arrays (64-bit offsets) fit in the device memory left beside the slots with
    /// [`CONVERSION_MARGIN`] to spare: the arrays are uploaded, `ell_from_csr_<T>` makes the
    /// slots, and they are freed. `false` (nothing done) otherwise: the host converts.
    fn convert_on_device(
        ctx: &'static Context,
        a: &CsrMatrix<T>,
        width: usize,
        cols: &mut SlotCols,
        vals: &mut DeviceMemory<T>,
        tuning: &Tuning,
    ) -> Result<bool> {
        let Some(csr) = CsrOnDevice::upload(ctx, a, 0, "ELL", tuning)? else { return Ok(false) };
        kernels::spmv::ell_from_csr(ctx, a.nrows(), width, &csr.row_offsets, &csr.cols, &csr.vals, cols, vals)?;
        drop(csr); // freed in stream order, after the conversion
        ctx.synchronize()?;
        Ok(true)
    }

    /// Whether the kernel runs with 64-bit slot arithmetic (`(width + 1) * nrows` past
    /// `u32::MAX`).
    pub(crate) fn is_wide(&self) -> bool {
        slots_need_64_bits(self.width, self.nrows)
    }

    /// `y = alpha*A*x + beta*y` with the ELL kernel, queued on the context's stream; does not
    /// wait for the GPU. `beta == 0` never reads `y` (NaN in `y` does not spread);
    /// `alpha == 0` never reads `A` or `x` and only scales `y`. Sums are accumulated in `f64`.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`](crate::Error::DimensionMismatch) when `x.len() != ncols` or `y.len() != nrows`; nothing is
    /// launched then. [`Error::Cuda`](crate::Error::Cuda) when the launch fails.
    pub fn spmv(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> Result<()> {
        kernels::spmv::ell(self.ctx, self, alpha, x, beta, y)
    }

    /// Replaces the values with `values`, given in the CSR order of the matrix that was
    /// uploaded (row by row, each row's entries by column), keeping the slots' columns:
    /// the slots then hold the bits an upload of the same matrix with these values would
    /// store. Non-finite values are stored as they are, as an upload stores them.
    ///
    /// The values are copied to the device once and moved into their slots there by a
    /// gather (`update_values_<T>`) through a map of each slot's CSR position, which the
    /// first call makes ([`prepare_value_updates`](DeviceEll::prepare_value_updates)) and
    /// keeps on the device (4 bytes per slot). Queued on the context's stream like a
    /// product; the copy is complete when this returns, so `values` may be reused at once.
    ///
    /// # Errors
    ///
    /// [`Error::DimensionMismatch`] when `values.len() != nnz`, before anything is copied;
    /// [`Error::Cuda`] when a copy or the launch fails.
    ///
    /// # Example
    ///
    /// ```no_run
    /// use spgpu::gpu::{Context, DeviceEll};
    /// let ctx = Context::global()?;
    /// let a = spgpu::gen::laplacian_2d::<f64>(100);
    /// let mut d_a = DeviceEll::from_csr(ctx, &a)?;
    /// let doubled: Vec<f64> = a.values().iter().map(|v| 2.0 * v).collect();
    /// d_a.update_values(&doubled)?;
    /// assert_eq!(d_a.download()?.to_csr().values(), &doubled[..]);
    /// # Ok::<(), spgpu::Error>(())
    /// ```
    pub fn update_values(&mut self, values: &[T]) -> Result<()> {
        if values.len() != self.nnz {
            return Err(Error::DimensionMismatch {
                op: "DeviceEll::update_values: length of values (the entries of A)",
                expected: self.nnz,
                found: values.len(),
            });
        }
        if self.nnz == 0 {
            return Ok(());
        }
        self.prepare_value_updates()?;
        let src = DeviceMemory::from_slice(self.ctx, values, "new ELL values (CSR order)")?;
        self.gather_values(&src)
    }

    /// Makes the map that [`update_values`](DeviceEll::update_values) gathers through, if
    /// it is not made yet: the slots' columns are read back to find the rows' lengths, and
    /// the map is made on the host and uploaded. Call it before timing updates.
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`] when a copy fails.
    pub fn prepare_value_updates(&mut self) -> Result<()> {
        if self.value_map.is_some() {
            return Ok(());
        }
        let Some(cols) = &self.cols else { return Ok(()) };
        let (nrows, width) = (self.nrows, self.width);
        let slots = width * nrows;
        let offsets = match cols {
            SlotCols::Wide(c) => {
                let raw = download(Some(c), slots, "ELL column indices")?;
                values::ell_row_offsets(&raw, nrows, width, ELL_PADDING)
            }
            SlotCols::Narrow(c) => {
                let raw = download(Some(c), slots, "ELL column offsets")?;
                values::ell_row_offsets(&raw, nrows, width, crate::gpu::storage::narrow::NARROW_PADDING)
            }
        };
        self.value_map = ValueMap::upload(self.ctx, &values::ell_map(&offsets, width), "ELL value map")?;
        Ok(())
    }

    /// Gathers the values in CSR order in `src` (`nnz` of them) into the slots through the
    /// map ([`prepare_value_updates`](DeviceEll::prepare_value_updates) made it).
    pub(crate) fn gather_values(&mut self, src: &DeviceMemory<T>) -> Result<()> {
        crate::gpu::runtime::vector::check_len("ELL update: values", self.nnz, src.len())?;
        if let (Some(map), Some(dst)) = (&self.value_map, self.values.as_mut()) {
            // SAFETY: the map gives each slot a CSR position of this matrix, below nnz ==
            // src.len() (checked), or all ones for a padding slot.
            unsafe { kernels::spmv::update_values(self.ctx, map, src, dst)? };
        }
        Ok(())
    }

    /// Device bytes of the map of [`update_values`](DeviceEll::update_values), 0 before the
    /// first update.
    pub(crate) fn value_map_bytes(&self) -> usize {
        self.value_map.as_ref().map_or(0, ValueMap::bytes)
    }

    /// The plan (always the ELL kernel), with the row statistics it saw.
    pub fn plan(&self) -> &SpmvPlan {
        &self.plan
    }

    /// The row statistics of the stored entries (padding excluded).
    pub fn row_stats(&self) -> &RowStats {
        &self.stats
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Number of stored entries, padding excluded.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// Slots per row: the length of the longest row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// The context the matrix lives in.
    pub fn context(&self) -> &'static Context {
        self.ctx
    }

    /// Copies the matrix back to the host (after queued work is done).
    ///
    /// # Errors
    ///
    /// [`Error::Cuda`](crate::Error::Cuda) when a copy fails or earlier asynchronous work failed.
    pub fn download(&self) -> Result<EllMatrix<T>> {
        let slots = self.width * self.nrows;
        let cols = match &self.cols {
            Some(c) => c.download(slots, |s| s % self.nrows, "ELL column indices")?,
            None => Vec::new(),
        };
        let vals = download(self.values.as_ref(), slots, "ELL values")?;
        let mut offsets = Vec::with_capacity(self.nrows + 1);
        offsets.push(0u64);
        let (mut csr_cols, mut csr_vals) = (Vec::with_capacity(self.nnz), Vec::with_capacity(self.nnz));
        for i in 0..self.nrows {
            for k in 0..self.width {
                let slot = k * self.nrows + i;
                if cols[slot] == ELL_PADDING {
                    break;
                }
                csr_cols.push(cols[slot]);
                csr_vals.push(vals[slot]);
            }
            offsets.push(csr_cols.len() as u64);
        }
        let csr = CsrMatrix::try_from_parts(self.nrows, self.ncols, offsets, csr_cols, csr_vals)?;
        Ok(EllMatrix::try_from_csr_with_limit(&csr, slots)?)
    }

    /// Device address of the column indices (`width * nrows` `u32`, column-major); 0 when
    /// there are no slots or the columns are stored as offsets
    /// ([`narrow_columns`](DeviceEll::narrow_columns)).
    pub fn col_indices_addr(&self) -> u64 {
        match &self.cols {
            Some(SlotCols::Wide(m)) => m.as_device_ptr().as_raw(),
            _ => 0,
        }
    }

    /// Whether the columns are stored as 16-bit offsets from the row
    /// ([`narrow`](crate::gpu::storage::narrow)): every entry lies within
    /// [`MAX_OFFSET`](crate::gpu::storage::narrow::MAX_OFFSET) of the diagonal.
    pub fn narrow_columns(&self) -> bool {
        self.cols.as_ref().is_some_and(SlotCols::is_narrow)
    }

    /// Device address of the column offsets (`width * nrows` 16-bit offsets, column-major,
    /// see [`narrow`](crate::gpu::narrow)); 0 when there are no slots or the columns are
    /// stored as 32-bit indices.
    pub fn col_offsets_addr(&self) -> u64 {
        match &self.cols {
            Some(SlotCols::Narrow(m)) => m.as_device_ptr().as_raw(),
            _ => 0,
        }
    }

    /// Device address of the columns, either form (0 when there are no slots).
    pub(crate) fn cols_addr(&self) -> u64 {
        self.cols.as_ref().map_or(0, SlotCols::addr)
    }

    /// Device address of the values (`width * nrows` `T`, column-major); 0 when there are no
    /// slots.
    pub fn values_addr(&self) -> u64 {
        self.values_ptr().as_raw()
    }

    /// [`values_addr`](DeviceEll::values_addr) as cust's pointer type, for the launches.
    pub(crate) fn values_ptr(&self) -> DevicePointer<T> {
        ptr_of(self.values.as_ref())
    }
}

impl<T: Scalar> std::fmt::Debug for DeviceEll<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceEll")
            .field("scalar", &T::NAME)
            .field("nrows", &self.nrows)
            .field("ncols", &self.ncols)
            .field("nnz", &self.nnz)
            .field("width", &self.width)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::slots_need_64_bits;

    #[test]
    fn slot_arithmetic_widens_when_width_plus_one_rows_pass_32_bits() {
        // the kernel's slot index reaches (width + 1) * nrows
        let n = (u32::MAX as usize) / 8;
        assert!(!slots_need_64_bits(7, n));
        assert!(slots_need_64_bits(7, n + 1));
        assert!(slots_need_64_bits(usize::MAX, 2)); // saturates, never wraps
        assert!(!slots_need_64_bits(0, 0));
        // lap3d:680 (314,432,000 rows of at most 7): 32-bit slots suffice
        assert!(!slots_need_64_bits(7, 314_432_000));
        // lap3d:844 (601,211,584 rows): 64-bit
        assert!(slots_need_64_bits(7, 601_211_584));
    }
}
