//! Entry positions on the device (CSR row offsets, the balanced kernel's block starts, SELL's
//! slice and chunk starts): 32-bit while the array they point into has at most
//! [`INDEX_LIMIT`] elements, 64-bit past it.
//!
//! The host keeps every position as `u64`; the device gets the narrowest width that holds
//! them, made and uploaded a piece at a time ([`PIECE`] elements), so no second full copy is
//! made on the host. Each kernel that reads positions is compiled for both widths (the
//! 64-bit variant's name ends in `_i64`, see `ptx/spmv.cu`), and the 32-bit variants are the
//! kernels spgpu always had: matrices that fit keep their speed.

use crate::gpu::runtime::context::Context;
use crate::gpu::runtime::memory::DeviceMemory;
use crate::{Result, INDEX_LIMIT};

/// Positions made and uploaded at a time (32 MiB of `u64`).
pub(crate) const PIECE: usize = 1 << 22;

/// Whether positions into an array of `len` elements need 64 bits on the device.
///
/// ```
/// use spgpu::gpu::positions_need_64_bits;
/// assert!(!positions_need_64_bits(spgpu::INDEX_LIMIT));
/// assert!(positions_need_64_bits(spgpu::INDEX_LIMIT + 1));
/// ```
pub fn positions_need_64_bits(len: usize) -> bool {
    len > INDEX_LIMIT
}

/// Positions in device memory, in the width [`positions_need_64_bits`] chose.
pub(crate) enum Positions {
    Narrow(DeviceMemory<u32>),
    Wide(DeviceMemory<u64>),
}

impl Positions {
    /// Uploads `host` (non-empty), 64-bit when `wide`, each position plus `base`.
    ///
    /// `base` is 0 except in tests, which shift every position past 2^32 (and the arrays
    /// they index back by as many elements) to run the 64-bit arithmetic on small matrices;
    /// it needs `wide`.
    pub(crate) fn upload(ctx: &'static Context, host: &[u64], wide: bool, base: u64, what: &str) -> Result<Self> {
        if wide {
            Ok(Positions::Wide(DeviceMemory::from_fn(ctx, host.len(), PIECE, what, |i| host[i] + base)?))
        } else {
            assert!(base == 0, "shifted positions need the 64-bit layout");
            debug_assert!(host.last().map_or(true, |&p| p <= u32::MAX as u64));
            Ok(Positions::Narrow(DeviceMemory::from_fn(ctx, host.len(), PIECE, what, |i| host[i] as u32)?))
        }
    }

    /// Whether the positions are 64-bit.
    pub(crate) fn is_wide(&self) -> bool {
        matches!(self, Positions::Wide(_))
    }

    /// The device address (the kernels take it as a pointer of the matching width).
    pub(crate) fn addr(&self) -> u64 {
        match self {
            Positions::Narrow(m) => m.as_device_ptr().as_raw(),
            Positions::Wide(m) => m.as_device_ptr().as_raw(),
        }
    }

    /// The `len` positions back on the host, less `base` (after the work queued before on
    /// the context's stream).
    pub(crate) fn download(&self, len: usize, base: u64, what: &str) -> Result<Vec<u64>> {
        match self {
            Positions::Narrow(m) => {
                let mut v = vec![0u32; len];
                m.copy_to_host(&mut v, what)?;
                Ok(v.into_iter().map(u64::from).collect())
            }
            Positions::Wide(m) => {
                let mut v = vec![0u64; len];
                m.copy_to_host(&mut v, what)?;
                v.iter_mut().for_each(|p| *p -= base);
                Ok(v)
            }
        }
    }
}

/// The kernel's view of an array of `U` whose positions are shifted by `base`: the address
/// `base` elements before it (wrapping), so that `ptr + position` is the element. `0` (null)
/// for no array.
pub(crate) fn shifted<U>(addr: u64, base: u64) -> u64 {
    if addr == 0 {
        0
    } else {
        addr.wrapping_sub(base.wrapping_mul(std::mem::size_of::<U>() as u64))
    }
}
