//! The byte model: how many bytes an SpMV `y = alpha*A*x + beta*y` must move at least.
//!
//! Every figure of `spgpu bench` divides these bytes by a time, so it is written down once,
//! here, and documented in `docs/performance.md`:
//!
//! - **CSR, minimal**: each stored value and column index once, the row offsets once, `x`
//!   once (each of its `ncols` elements, however often the matrix reads it: a perfect cache),
//!   and `y` written once, plus read once more when `beta != 0`:
//!   `nnz*(4 + s) + (nrows + 1)*o + ncols*s + nrows*s (+ nrows*s)` with `s` the element size
//!   and `o` the offset size (4, or 8 for a matrix past `INDEX_LIMIT` entries).
//!   This is the model of `anchors.md`, and the one every implementation (CSR, ELL, cuSPARSE,
//!   CPU) is measured against, so their GB/s compare as effective throughput.
//! - **ELL, as stored**: what the padded format itself holds: `width*nrows` slots of index
//!   and value (padding included, honestly counted), no row offsets, plus `x` and `y` as
//!   above. Reported next to the minimal figure, it shows what padding costs.

/// Bytes of one 32-bit index.
const INDEX_BYTES: u64 = 4;

/// Minimal bytes moved by one CSR SpMV (see the module docs).
///
/// `scalar_bytes` is the element size (4 for `f32`, 8 for `f64`); `beta_nonzero` adds the
/// read of `y`.
pub fn csr_bytes(nrows: usize, ncols: usize, nnz: usize, scalar_bytes: usize, beta_nonzero: bool) -> u64 {
    let (m, n, nnz, s) = (nrows as u64, ncols as u64, nnz as u64, scalar_bytes as u64);
    let y = if beta_nonzero { 2 * m * s } else { m * s };
    nnz * (INDEX_BYTES + s) + (m + 1) * offset_bytes(nnz) + n * s + y
}

/// Bytes of one row offset: 4, or 8 past [`crate::INDEX_LIMIT`] entries (64-bit offsets).
fn offset_bytes(nnz: u64) -> u64 {
    if nnz > crate::INDEX_LIMIT as u64 {
        8
    } else {
        INDEX_BYTES
    }
}

/// Bytes held and read by one ELL SpMV: every slot, padding included (see the module docs).
pub fn ell_bytes(nrows: usize, ncols: usize, width: usize, scalar_bytes: usize, beta_nonzero: bool) -> u64 {
    let (m, n, w, s) = (nrows as u64, ncols as u64, width as u64, scalar_bytes as u64);
    let y = if beta_nonzero { 2 * m * s } else { m * s };
    w * m * (INDEX_BYTES + s) + n * s + y
}

/// GB/s (10^9 bytes per second) for `bytes` moved in `seconds`.
pub fn gbps(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / seconds / 1e9
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_model_matches_the_anchors_for_lap2d_2000() {
        // anchors.md: nnz*12 + (rows+1)*4 + cols*8 + rows*8, f64, beta = 0
        let (m, nnz) = (4_000_000usize, 19_992_000usize);
        let b = csr_bytes(m, m, nnz, 8, false);
        assert_eq!(b, 19_992_000 * 12 + 4_000_001 * 4 + 4_000_000 * 8 + 4_000_000 * 8);
        // 131 us at this byte count is 57% of 4.28 TB/s, as the anchors table says
        let pct = gbps(b, 131e-6) / 4280.0 * 100.0;
        assert!((pct - 57.0).abs() < 1.0, "{pct}");
    }

    #[test]
    fn beta_adds_one_read_of_y_and_f32_halves_values() {
        assert_eq!(csr_bytes(10, 20, 30, 8, true) - csr_bytes(10, 20, 30, 8, false), 80);
        assert_eq!(csr_bytes(10, 20, 30, 4, false), 30 * 8 + 11 * 4 + 20 * 4 + 10 * 4);
    }

    #[test]
    fn ell_counts_padding_and_no_offsets() {
        // 3 rows of width 4 (one row of 4, two of 1: 6 of 12 slots are padding)
        assert_eq!(ell_bytes(3, 5, 4, 8, false), 12 * 12 + 5 * 8 + 3 * 8);
        // without padding ELL moves less than CSR: no row offsets
        assert!(ell_bytes(4, 4, 2, 8, false) < csr_bytes(4, 4, 8, 8, false));
    }

    #[test]
    fn offsets_are_counted_with_8_bytes_past_the_index_limit() {
        let nnz = crate::INDEX_LIMIT + 1;
        assert_eq!(csr_bytes(10, 10, nnz, 4, false), nnz as u64 * 8 + 11 * 8 + 40 + 40);
        assert_eq!(csr_bytes(10, 10, nnz - 1, 4, false), (nnz as u64 - 1) * 8 + 11 * 4 + 40 + 40);
    }

    #[test]
    fn gbps_of_zero_time_is_nan() {
        assert!(gbps(1, 0.0).is_nan());
        assert_eq!(gbps(2_000_000_000, 1.0), 2.0);
    }
}
