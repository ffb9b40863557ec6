//! Every kernel launch of spgpu, and the one function that names the kernels.
//!
//! Each kernel has one safe `pub(crate)` launcher that checks the operands' lengths,
//! converts sizes with `u32::try_from`, and launches on the context's stream without
//! synchronizing. The kernels' sources are in `ptx/`.

pub(crate) mod amg;
pub(crate) mod arrays;
pub(crate) mod blas;
pub(crate) mod spmv;

use crate::gpu::runtime::module::ModuleId;

use crate::gpu::plan::SpmvKernel;
use crate::{Error, Result};

/// Threads per block of every launch (`SPGPU_BLOCK` in `ptx/common.cuh`).
pub(crate) const BLOCK: u32 = 256;

/// Threads per block of the hot-column kernel (`SPGPU_HOT_GROUPS * SPGPU_BLOCK`).
pub(crate) const HOT_THREADS: u32 = 4 * BLOCK;

/// A GPU kernel of spgpu, independent of its element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GpuKernel {
    /// One of the SpMV kernels (module [`ModuleId::Spmv`]).
    Spmv(SpmvKernel),
    /// The ELL, SELL or vector CSR kernel reading 16-bit column offsets (`spmv_ell16_<T>`,
    /// `spmv_sell16_<T>`, `spmv_csr16_vector_tpr<N>_<T>`, each with a 64-bit variant; module
    /// [`ModuleId::Spmv`]; see [`narrow`](crate::gpu::storage::narrow)). Only [`SpmvKernel::Ell`],
    /// [`SpmvKernel::Sell`] and [`SpmvKernel::Vector`] have one.
    Narrow(SpmvKernel),
    /// The SELL kernel reading 16-bit column offsets and a table of far columns
    /// (`spmv_sell16f_<T>`, with a 64-bit variant; module [`ModuleId::Spmv`]; see
    /// [`narrow::far_columns`](crate::gpu::storage::narrow::far_columns)).
    SellFar,
    /// `y[i] = value` for a dense vector (module [`ModuleId::Spmv`]).
    FillVector,
    /// `out[i] = in[i]` from `u32` to `u64` (module [`ModuleId::Spmv`], one kernel for both
    /// element types, named `widen_u32_u64`): 64-bit column indices for other libraries.
    WidenIndices,
    /// The balanced kernel with the hot entries of `x` in shared memory (`spmv_csr_hot_<T>`,
    /// with a 64-bit variant; module [`ModuleId::Spmv`]).
    BalancedHot,
    /// The balanced kernel with row blocks of this many threads, one of the other shapes of
    /// [`RowShape::ALL`](crate::gpu::balance::RowShape::ALL) (`spmv_csr_balanced<threads>_<T>`,
    /// with a 64-bit variant; module [`ModuleId::Spmv`]).
    BalancedShape(u32),
    /// The balanced kernel for row blocks whose chunks come in chunk-major order
    /// ([`RowBlocks::sweep`](crate::gpu::storage::balance::RowBlocks::sweep); `spmv_csr_balanced_sweep_<T>`,
    /// with a 64-bit variant; module [`ModuleId::Spmv`]).
    BalancedSweep,
    /// The balanced kernel with row blocks of this many threads (a shape of
    /// [`RowShape::ALL`](crate::gpu::balance::RowShape::ALL)), gathering `x` with a 128-byte L2
    /// prefetch hint ([`balance::prefetch_x`](crate::gpu::balance::prefetch_x);
    /// `spmv_csr_balanced_px_<T>` for the default shape, `spmv_csr_balanced<threads>_px_<T>`
    /// for the others, each with a 64-bit variant; module [`ModuleId::Spmv`]).
    BalancedPrefetch(u32),
    /// The hot-column kernel ([`GpuKernel::BalancedHot`]) gathering the other columns' `x`
    /// with the L2 prefetch hint (`spmv_csr_hot_px_<T>`, with a 64-bit variant; module
    /// [`ModuleId::Spmv`]).
    BalancedHotPrefetch,
    /// ELLPACK slots from CSR arrays on the device, the upload's conversion
    /// (`ell_from_csr_<T>`, or `ell16_from_csr_<T>` for narrow slots when `narrow`; module
    /// [`ModuleId::Spmv`]).
    EllFromCsr {
        /// Whether the slots store 16-bit column offsets ([`narrow`](crate::gpu::storage::narrow)).
        narrow: bool,
    },
    /// SELL-C-σ slots from CSR arrays on the device, the upload's conversion
    /// (`sell_from_csr_<T>`, or `sell16_from_csr_<T>` for narrow slots when `narrow`; module
    /// [`ModuleId::Spmv`]).
    SellFromCsr {
        /// Whether the slots store 16-bit column offsets ([`narrow`](crate::gpu::storage::narrow)).
        narrow: bool,
    },
    /// SELL-C-σ slots with 16-bit offsets and a table of far columns from CSR arrays on the
    /// device (`sell16f_from_csr_<T>`, module [`ModuleId::Spmv`]; see [`GpuKernel::SellFar`]).
    SellFarFromCsr,
    /// `out[i] = x[idx[i]]` (`gather_<T>`, module [`ModuleId::Spmv`]): the hot entries of `x`.
    Gather,
    /// Hot-column storage back to plain column indices (module [`ModuleId::Spmv`], one kernel
    /// for both element types, named `unflag_hot_columns`).
    UnflagHot,
    /// The entries of each column (module [`ModuleId::Spmv`], one kernel for both element
    /// types, named `count_columns`): the upload's count for choosing hot columns.
    CountColumns,
    /// Plain column indices to hot-column storage (module [`ModuleId::Spmv`], one kernel for
    /// both element types, named `flag_hot_columns`).
    FlagHot,
    /// `dst[i] = src[map[i]]`, 0 where `map[i]` is all ones (`update_values_<T>`, with a
    /// variant for a 64-bit map; module [`ModuleId::Spmv`]): new values in CSR order moved
    /// into the slots of ELL, SELL or column parts
    /// ([`DeviceCsr::update_values`](crate::gpu::DeviceCsr::update_values)).
    UpdateValues,
}

impl GpuKernel {
    /// The module that holds the kernel.
    pub fn module(self) -> ModuleId {
        match self {
            GpuKernel::Spmv(_)
            | GpuKernel::Narrow(_)
            | GpuKernel::SellFar
            | GpuKernel::FillVector
            | GpuKernel::WidenIndices
            | GpuKernel::BalancedHot
            | GpuKernel::BalancedShape(_)
            | GpuKernel::BalancedSweep
            | GpuKernel::BalancedPrefetch(_)
            | GpuKernel::BalancedHotPrefetch
            | GpuKernel::EllFromCsr { .. }
            | GpuKernel::SellFromCsr { .. }
            | GpuKernel::SellFarFromCsr
            | GpuKernel::Gather
            | GpuKernel::UnflagHot
            | GpuKernel::CountColumns
            | GpuKernel::FlagHot
            | GpuKernel::UpdateValues => ModuleId::Spmv,
        }
    }

    /// Every kernel the Rust side can launch (each exists for f32 and f64, but the
    /// [untyped](GpuKernel::is_untyped) ones, which are one each).
    pub fn all() -> Vec<GpuKernel> {
        let mut all = vec![
            GpuKernel::Spmv(SpmvKernel::Scalar),
            GpuKernel::Spmv(SpmvKernel::Ell),
            GpuKernel::Spmv(SpmvKernel::Balanced),
            GpuKernel::Spmv(SpmvKernel::Sell),
            GpuKernel::Narrow(SpmvKernel::Ell),
            GpuKernel::Narrow(SpmvKernel::Sell),
            GpuKernel::SellFar,
            GpuKernel::FillVector,
            GpuKernel::WidenIndices,
            GpuKernel::BalancedHot,
            GpuKernel::BalancedSweep,
            GpuKernel::BalancedHotPrefetch,
            GpuKernel::Gather,
            GpuKernel::UnflagHot,
            GpuKernel::CountColumns,
            GpuKernel::FlagHot,
            GpuKernel::EllFromCsr { narrow: false },
            GpuKernel::EllFromCsr { narrow: true },
            GpuKernel::SellFromCsr { narrow: false },
            GpuKernel::SellFromCsr { narrow: true },
            GpuKernel::SellFarFromCsr,
            GpuKernel::UpdateValues,
        ];
        all.extend(
            crate::gpu::plan::balance::RowShape::ALL
                .iter()
                .filter(|&&s| s != crate::gpu::plan::balance::RowShape::DEFAULT)
                .map(|s| GpuKernel::BalancedShape(s.threads as u32)),
        );
        all.extend(
            crate::gpu::plan::balance::RowShape::ALL.iter().map(|s| GpuKernel::BalancedPrefetch(s.threads as u32)),
        );
        for threads_per_row in crate::gpu::plan::VECTOR_THREADS_PER_ROW {
            all.push(GpuKernel::Spmv(SpmvKernel::Vector { threads_per_row }));
            all.push(GpuKernel::Narrow(SpmvKernel::Vector { threads_per_row }));
        }
        all
    }

    /// Whether the kernel is one for both element types (its name has no scalar): the
    /// kernels that only move column indices.
    pub fn is_untyped(self) -> bool {
        matches!(self, GpuKernel::WidenIndices | GpuKernel::UnflagHot | GpuKernel::CountColumns | GpuKernel::FlagHot)
    }
}

/// The `extern "C"` name of a kernel for an element type (`"f32"` or `"f64"`, see
/// [`Scalar::NAME`](crate::Scalar::NAME)): `<op>_<format>_<variant>_<scalar>`. This is the
/// only place where kernel names are built.
///
/// ```
/// use spgpu::gpu::{kernel_name, GpuKernel, SpmvKernel};
/// assert_eq!(kernel_name(GpuKernel::Spmv(SpmvKernel::Scalar), "f64"), "spmv_csr_scalar_f64");
/// assert_eq!(
///     kernel_name(GpuKernel::Spmv(SpmvKernel::Vector { threads_per_row: 8 }), "f32"),
///     "spmv_csr_vector_tpr8_f32"
/// );
/// assert_eq!(kernel_name(GpuKernel::Spmv(SpmvKernel::Ell), "f64"), "spmv_ell_f64");
/// assert_eq!(kernel_name(GpuKernel::Narrow(SpmvKernel::Sell), "f32"), "spmv_sell16_f32");
/// assert_eq!(
///     kernel_name(GpuKernel::Narrow(SpmvKernel::Vector { threads_per_row: 32 }), "f64"),
///     "spmv_csr16_vector_tpr32_f64"
/// );
/// ```
pub fn kernel_name(kernel: GpuKernel, scalar: &str) -> String {
    match kernel {
        GpuKernel::Spmv(SpmvKernel::Scalar) => format!("spmv_csr_scalar_{scalar}"),
        GpuKernel::Spmv(SpmvKernel::Vector { threads_per_row }) => {
            format!("spmv_csr_vector_tpr{threads_per_row}_{scalar}")
        }
        GpuKernel::Spmv(SpmvKernel::Ell) => format!("spmv_ell_{scalar}"),
        GpuKernel::Spmv(SpmvKernel::Balanced) => format!("spmv_csr_balanced_{scalar}"),
        GpuKernel::Spmv(SpmvKernel::Sell) => format!("spmv_sell_{scalar}"),
        GpuKernel::Narrow(SpmvKernel::Vector { threads_per_row }) => {
            format!("spmv_csr16_vector_tpr{threads_per_row}_{scalar}")
        }
        GpuKernel::Narrow(k) => format!("{}16_{scalar}", kernel_name(GpuKernel::Spmv(k), "").trim_end_matches('_')),
        GpuKernel::SellFar => format!("spmv_sell16f_{scalar}"),
        GpuKernel::FillVector => format!("fill_vector_{scalar}"),
        GpuKernel::WidenIndices => "widen_u32_u64".to_string(),
        GpuKernel::BalancedHot => format!("spmv_csr_hot_{scalar}"),
        GpuKernel::BalancedShape(threads) => format!("spmv_csr_balanced{threads}_{scalar}"),
        GpuKernel::BalancedSweep => format!("spmv_csr_balanced_sweep_{scalar}"),
        GpuKernel::BalancedPrefetch(threads) if threads as usize == crate::gpu::plan::balance::BLOCK_THREADS => {
            format!("spmv_csr_balanced_px_{scalar}")
        }
        GpuKernel::BalancedPrefetch(threads) => format!("spmv_csr_balanced{threads}_px_{scalar}"),
        GpuKernel::BalancedHotPrefetch => format!("spmv_csr_hot_px_{scalar}"),
        GpuKernel::EllFromCsr { narrow: false } => format!("ell_from_csr_{scalar}"),
        GpuKernel::EllFromCsr { narrow: true } => format!("ell16_from_csr_{scalar}"),
        GpuKernel::SellFromCsr { narrow: false } => format!("sell_from_csr_{scalar}"),
        GpuKernel::SellFromCsr { narrow: true } => format!("sell16_from_csr_{scalar}"),
        GpuKernel::SellFarFromCsr => format!("sell16f_from_csr_{scalar}"),
        GpuKernel::Gather => format!("gather_{scalar}"),
        GpuKernel::UnflagHot => "unflag_hot_columns".to_string(),
        GpuKernel::CountColumns => "count_columns".to_string(),
        GpuKernel::FlagHot => "flag_hot_columns".to_string(),
        GpuKernel::UpdateValues => format!("update_values_{scalar}"),
    }
}

/// The name of an SpMV kernel's variant for 64-bit positions ([`kernel_name`] followed by
/// `_i64`), run when a matrix has more than [`INDEX_LIMIT`](crate::INDEX_LIMIT) entries; the
/// 32-bit variant ([`kernel_name`]) otherwise. Other kernels have no such variant.
///
/// ```
/// use spgpu::gpu::{kernel_name_64, GpuKernel, SpmvKernel};
/// assert_eq!(kernel_name_64(SpmvKernel::Balanced, "f32"), "spmv_csr_balanced_f32_i64");
/// ```
pub fn kernel_name_64(kernel: SpmvKernel, scalar: &str) -> String {
    kernel_name(GpuKernel::Spmv(kernel), scalar) + "_i64"
}

/// [`kernel_name`] of an SpMV kernel, or [`kernel_name_64`] when `wide`.
pub(crate) fn spmv_kernel_name(kernel: SpmvKernel, scalar: &str, wide: bool) -> String {
    if wide {
        kernel_name_64(kernel, scalar)
    } else {
        kernel_name(GpuKernel::Spmv(kernel), scalar)
    }
}

/// The name of the balanced kernel for row blocks of this shape: [`spmv_kernel_name`] of
/// [`SpmvKernel::Balanced`] for the default shape, [`GpuKernel::BalancedShape`] otherwise,
/// [`GpuKernel::BalancedSweep`] for blocks in chunk-major order (`sweep`; `_i64` when
/// `wide`), or [`GpuKernel::BalancedPrefetch`] of the shape when `prefetch` (blocks in row
/// order only: chunk-major blocks have no such variant).
pub(crate) fn balanced_kernel_name(
    shape: crate::gpu::plan::balance::RowShape,
    sweep: bool,
    prefetch: bool,
    scalar: &str,
    wide: bool,
) -> String {
    if sweep {
        kernel_name(GpuKernel::BalancedSweep, scalar) + if wide { "_i64" } else { "" }
    } else if prefetch {
        kernel_name(GpuKernel::BalancedPrefetch(shape.threads as u32), scalar) + if wide { "_i64" } else { "" }
    } else if shape == crate::gpu::plan::balance::RowShape::DEFAULT {
        spmv_kernel_name(SpmvKernel::Balanced, scalar, wide)
    } else {
        kernel_name(GpuKernel::BalancedShape(shape.threads as u32), scalar) + if wide { "_i64" } else { "" }
    }
}

/// The name of the hot-column kernel ([`GpuKernel::BalancedHot`], or
/// [`GpuKernel::BalancedHotPrefetch`] when `prefetch`; `_i64` when `wide`).
pub(crate) fn hot_kernel_name(prefetch: bool, scalar: &str, wide: bool) -> String {
    let kernel = if prefetch { GpuKernel::BalancedHotPrefetch } else { GpuKernel::BalancedHot };
    kernel_name(kernel, scalar) + if wide { "_i64" } else { "" }
}

/// [`spmv_kernel_name`] of the ELL, SELL or vector kernel, or of its variant reading 16-bit
/// column offsets ([`GpuKernel::Narrow`]) when `narrow`.
pub(crate) fn slot_kernel_name(kernel: SpmvKernel, scalar: &str, wide: bool, narrow: bool) -> String {
    if narrow {
        kernel_name(GpuKernel::Narrow(kernel), scalar) + if wide { "_i64" } else { "" }
    } else {
        spmv_kernel_name(kernel, scalar, wide)
    }
}

/// Every kernel name the Rust side can produce, with its module: the list `tests/ptx.rs`
/// checks against the `.entry` lines of the PTX.
pub fn all_kernel_names() -> Vec<(ModuleId, String)> {
    let mut names = Vec::new();
    for kernel in GpuKernel::all() {
        if kernel.is_untyped() {
            names.push((kernel.module(), kernel_name(kernel, "")));
            continue;
        }
        for scalar in ["f32", "f64"] {
            names.push((kernel.module(), kernel_name(kernel, scalar)));
            if let GpuKernel::Spmv(k) = kernel {
                names.push((kernel.module(), kernel_name_64(k, scalar)));
            }
            if matches!(
                kernel,
                GpuKernel::BalancedHot
                    | GpuKernel::BalancedShape(_)
                    | GpuKernel::BalancedSweep
                    | GpuKernel::BalancedPrefetch(_)
                    | GpuKernel::BalancedHotPrefetch
                    | GpuKernel::Narrow(_)
                    | GpuKernel::SellFar
                    | GpuKernel::UpdateValues
            ) {
                names.push((kernel.module(), kernel_name(kernel, scalar) + "_i64"));
            }
        }
    }
    names.extend(blas::all_kernel_names());
    names.extend(amg::all_kernel_names());
    names
}

/// A count as the kernels' 32-bit index.
pub(crate) fn index(what: &str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::InvalidArgument(format!("{what} = {n} exceeds the 32-bit GPU index")))
}

/// Blocks for `n` work items at `per_block` items per block.
pub(crate) fn blocks(n: usize, per_block: u32) -> Result<u32> {
    index("the grid size", n.div_ceil(per_block as usize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::plan::SpmvPlan;

    #[test]
    fn names_are_unique_and_follow_the_scheme() {
        let names = all_kernel_names();
        let unique: std::collections::HashSet<_> = names.iter().map(|(_, n)| n.clone()).collect();
        assert_eq!(unique.len(), names.len());
        // SpMV kernels (4 + 5 vector, each in two widths), fill, the hot-column kernel (two
        // widths) and its gather, the balanced kernel of 512-thread blocks (two widths), the
        // narrow ELL, SELL and 5 vector kernels (two widths), the two conversions each to ELL
        // and SELL, then widen, unflag, count and flag, then the CG kernels of blas.rs
        // (and the SELL kernel with far columns, two widths, and its conversion; the balanced
        // kernel for chunk-major order, two widths; the prefetching variants of the two
        // balanced shapes and of the hot-column kernel, two widths)
        assert_eq!(
            names.len(),
            2 * (2 * 9 + 1)
                + 2 * 3
                + 2 * 2
                + 2 * 2 * 8
                + 2 * 5
                + 4
                + 2 * 12
                + 2 * 2
                + 2 * 2 * 3
                + 2 * 2
                + amg::all_kernel_names().len()
        );
        assert!(unique.contains("spmv_csr_balanced_px_f32") && unique.contains("spmv_csr_balanced512_px_f64_i64"));
        assert!(unique.contains("spmv_csr_hot_px_f64") && unique.contains("spmv_csr_hot_px_f32_i64"));
        assert!(unique.contains("spmv_csr_balanced_sweep_f32") && unique.contains("spmv_csr_balanced_sweep_f64_i64"));
        assert!(unique.contains("spmv_sell16f_f32") && unique.contains("spmv_sell16f_f64_i64"));
        assert!(unique.contains("spmv_csr16_vector_tpr2_f32") && unique.contains("spmv_csr16_vector_tpr32_f64_i64"));
        assert!(unique.contains("ell_from_csr_f64") && unique.contains("ell16_from_csr_f32"));
        assert!(unique.contains("spmv_csr_balanced512_f32") && unique.contains("spmv_csr_balanced512_f64_i64"));
        assert!(unique.contains("spmv_ell16_f32") && unique.contains("spmv_sell16_f64_i64"));
        assert!(unique.contains("spmv_sell_f64_i64") && unique.contains("widen_u32_u64"));
        assert!(unique.contains("spmv_csr_hot_f32_i64") && unique.contains("unflag_hot_columns"));
        assert!(unique.contains("count_columns") && unique.contains("flag_hot_columns"));
        assert!(unique.contains("spmv_csr_vector_tpr32_f64"));
        assert!(unique.contains("update_values_f32") && unique.contains("update_values_f64_i64"));
        // the heuristic can only produce kernels from the list
        for mean in [0.0, 1.0, 3.0, 5.0, 27.0, 1e6] {
            let tpr = SpmvPlan::design_threads_per_row(mean, 32);
            assert!(unique.contains(&kernel_name(GpuKernel::Spmv(SpmvKernel::Vector { threads_per_row: tpr }), "f32")));
        }
    }
}
