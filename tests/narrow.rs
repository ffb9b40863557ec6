//! Narrow columns (`spgpu::gpu::narrow`): ELL and SELL slots store 16-bit offsets from the
//! row when every entry lies within 32767 of the diagonal (SELL also when the others lie in
//! a few far columns, through a table), and 32-bit columns otherwise.
//! Checked on the GPU against the reference, against the 32-bit form of the same matrix
//! (bit-identical: `SPGPU_NARROW_COLUMNS=0` forces it), through downloads, and through CG's
//! fused ELL kernel.
//!
//! The 32-bit form is asked for through the upload's tuning ([`Tuning::narrow_columns`]),
//! as `SPGPU_NARROW_COLUMNS=0` would. It skips with a printed line when there is no GPU, and
//! fails instead when `SPGPU_REQUIRE_GPU=1`.

mod common;
use common::gpu;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spgpu::gpu::{Context, DeviceCsr, DeviceEll, DeviceVector, KernelChoice, Tuning, UploadOptions};
use spgpu::solver::{cg, CgParams, Device};
use spgpu::{reference, CsrMatrix, EllMatrix, Scalar};

/// An SPD matrix of `n` rows with entries -1 at each offset of `offsets` (both sides of the
/// diagonal, where they exist) and the row's entry count on the diagonal, plus `extra`
/// symmetric pairs `(i, j)` of -1 (their rows' diagonals grow by one).
fn banded<T: Scalar>(n: usize, offsets: &[usize], extra: &[(usize, usize)]) -> CsrMatrix<T> {
    let mut rows: Vec<Vec<(u32, f64)>> = vec![Vec::new(); n];
    for (i, row) in rows.iter_mut().enumerate() {
        for &d in offsets {
            if i >= d {
                row.push(((i - d) as u32, -1.0));
            }
            if i + d < n {
                row.push(((i + d) as u32, -1.0));
            }
        }
    }
    for &(i, j) in extra {
        rows[i].push((j as u32, -1.0));
        rows[j].push((i as u32, -1.0));
    }
    let (mut off, mut cols, mut vals) = (vec![0u64], Vec::new(), Vec::new());
    for (i, mut row) in rows.into_iter().enumerate() {
        let diag = row.len() as f64 + 1.0;
        row.push((i as u32, diag));
        row.sort_by_key(|e| e.0);
        cols.extend(row.iter().map(|e| e.0));
        vals.extend(row.iter().map(|e| T::from_f64(e.1)));
        off.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(n, n, off, cols, vals).unwrap()
}

/// `banded` with row `long` replaced by one of `len` entries spread over all columns
/// (longer than SELL's 512: a long row, kept apart with 32-bit columns).
fn with_long_row<T: Scalar>(a: &CsrMatrix<T>, long: usize, len: usize) -> CsrMatrix<T> {
    let n = a.nrows();
    let (mut off, mut cols, mut vals) = (vec![0u64], Vec::new(), Vec::new());
    for i in 0..n {
        if i == long {
            cols.extend((0..len).map(|k| (k * (n / len)) as u32));
            vals.extend((0..len).map(|k| T::from_f64(1.0 + k as f64 / 64.0)));
        } else {
            let (c, v) = a.row(i);
            cols.extend_from_slice(c);
            vals.extend_from_slice(v);
        }
        off.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(n, n, off, cols, vals).unwrap()
}

/// The environment's tuning, with narrow columns allowed or not (`SPGPU_NARROW_COLUMNS=0`).
fn narrow_allowed(allowed: bool) -> Tuning {
    Tuning { narrow_columns: (!allowed).then_some(false), ..Tuning::from_env() }
}

/// `y = alpha A x + beta y0` on the device, checked against the reference
/// (`common::check_spmv`).
fn multiply<T: Scalar>(
    what: &str,
    ctx: &'static Context,
    d: &DeviceCsr<T>,
    a: &CsrMatrix<T>,
    alpha: f64,
    beta: f64,
) -> Vec<T> {
    let mut rng = StdRng::seed_from_u64(99);
    let x: Vec<T> = (0..a.ncols()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    let y0: Vec<T> = if beta == 0.0 {
        vec![T::from_f64(f64::NAN); a.nrows()]
    } else {
        (0..a.nrows()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect()
    };
    let (alpha, beta) = (T::from_f64(alpha), T::from_f64(beta));
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let mut d_y = DeviceVector::from_slice(ctx, &y0).unwrap();
    d.spmv(alpha, &d_x, beta, &mut d_y).unwrap();
    let got = d_y.to_vec().unwrap();
    common::check_spmv(what, a, alpha, &x, beta, &y0, &got);
    got
}

fn bits<T: Scalar>(v: &[T]) -> Vec<u64> {
    v.iter().map(|g| g.to_f64().to_bits()).collect()
}

fn uploads<T: Scalar>(ctx: &'static Context) {
    let n = 70_000;
    let near = banded::<T>(n, &[1, 2_000, 32_767], &[]);
    let far = banded::<T>(n, &[1, 2_000], &[(0, 32_768)]);
    let long = with_long_row(&near, 40_000, 700);
    // (name, matrix, kernel, narrow expected, far columns expected)
    let cases = [
        ("offsets up to 32767, ELL", &near, KernelChoice::Ell, true, 0),
        ("offsets up to 32767, SELL", &near, KernelChoice::Sell, true, 0),
        ("one pair 32768 away, ELL", &far, KernelChoice::Ell, false, 0),
        ("one pair 32768 away, SELL (columns 0 and 32768 through the table)", &far, KernelChoice::Sell, true, 2),
        ("a long row of far entries, SELL (long rows keep 32-bit columns)", &long, KernelChoice::Sell, true, 0),
    ];
    for (name, a, choice, narrow, nfar) in cases {
        let what = format!("{name}, {}", T::NAME);
        let d =
            DeviceCsr::upload_with(ctx, a, UploadOptions::kernel(choice).with_tuning(narrow_allowed(true))).unwrap();
        assert_eq!(d.plan().narrow_columns(), narrow, "{what}: {}", d.plan().explain());
        assert_eq!(d.plan().far_columns(), nfar, "{what}: {}", d.plan().explain());
        assert_eq!(d.plan().explain().contains("16-bit offsets"), narrow, "{what}");
        assert_eq!(d.download().unwrap(), *a, "{what}: download");
        let wide =
            DeviceCsr::upload_with(ctx, a, UploadOptions::kernel(choice).with_tuning(narrow_allowed(false))).unwrap();
        assert!(!wide.plan().narrow_columns(), "{what}: {}", wide.plan().explain());
        assert!(wide.plan().explain().contains("override: SPGPU_NARROW_COLUMNS=0"), "{what}");
        // narrow slots take 2 bytes fewer each, a far column's table entry 4
        let slots = (wide.device_bytes() + 4 * nfar - d.device_bytes()) / 2;
        assert_eq!(slots > 0, narrow, "{what}: {} against {} bytes", d.device_bytes(), wide.device_bytes());
        for (alpha, beta) in [(1.0, 0.0), (-2.5, 1.0), (0.0, -2.5)] {
            let got = multiply(&what, ctx, &d, a, alpha, beta);
            let again = multiply(&what, ctx, &d, a, alpha, beta);
            let wide_got = multiply(&format!("{what}, 32-bit"), ctx, &wide, a, alpha, beta);
            assert_eq!(bits(&got), bits(&again), "{what}: repeated calls");
            assert_eq!(bits(&got), bits(&wide_got), "{what}: narrow against 32-bit columns");
        }
    }
    // DeviceEll, from CSR and from a host ELLPACK matrix
    let e = EllMatrix::try_from_csr(&near).unwrap();
    let on = narrow_allowed(true);
    for d in [DeviceEll::from_csr_tuned(ctx, &near, &on).unwrap(), DeviceEll::upload_tuned(ctx, &e, &on).unwrap()] {
        assert!(d.narrow_columns() && d.plan().narrow_columns(), "{}", T::NAME);
        assert!(d.col_indices_addr() == 0 && d.col_offsets_addr() != 0);
        assert_eq!(d.download().unwrap(), e, "DeviceEll download, {}", T::NAME);
    }
    let e = EllMatrix::try_from_csr(&far).unwrap();
    let d = DeviceEll::upload_tuned(ctx, &e, &on).unwrap();
    assert!(!d.narrow_columns() && d.col_indices_addr() != 0 && d.col_offsets_addr() == 0);
    assert_eq!(d.download().unwrap(), e);
}

/// CG with ELL (its fused SpMV and p'Ap kernel) on narrow and 32-bit columns: the same
/// iterations and the same bits.
fn cg_on_both<T: Scalar>(ctx: &'static Context) {
    let a = banded::<T>(50_000, &[1, 250, 32_767], &[]);
    // b = A s for a varying s (the vector of ones is an eigenvector of these matrices)
    let s: Vec<T> = (0..a.nrows()).map(|i| T::from_f64(1.0 + (i % 7) as f64 / 7.0)).collect();
    let mut b = vec![T::ZERO; a.nrows()];
    reference::spmv_csr(T::ONE, &a, &s, T::ZERO, &mut b).unwrap();
    let params = CgParams { rtol: if T::BYTES == 4 { 1e-4 } else { 1e-10 }, ..CgParams::default() };
    let device = Device::new(ctx).unwrap();
    let d_b = DeviceVector::from_slice(ctx, &b).unwrap();
    let mut runs = Vec::new();
    for allowed in [true, false] {
        let d_a = DeviceEll::from_csr_tuned(ctx, &a, &narrow_allowed(allowed)).unwrap();
        assert_eq!(d_a.narrow_columns(), allowed);
        let mut d_x = DeviceVector::zeros(ctx, a.nrows()).unwrap();
        let report = cg(&device, &d_a, &d_b, &mut d_x, &params).unwrap();
        let x = d_x.to_vec().unwrap();
        let err = x.iter().zip(&s).map(|(v, w)| (v.to_f64() - w.to_f64()).abs()).fold(0.0, f64::max);
        assert!(err < if T::BYTES == 4 { 1e-2 } else { 1e-7 }, "{}: max error {err}", T::NAME);
        runs.push((report.iterations, bits(&x)));
    }
    assert!(runs[0].0 > 1);
    assert_eq!(runs[0], runs[1], "{}: narrow and 32-bit CG differ", T::NAME);
}

#[test]
fn narrow_columns_give_the_bits_of_32_bit_ones() {
    let Some(ctx) = gpu("narrow_columns_give_the_bits_of_32_bit_ones") else { return };
    uploads::<f64>(ctx);
    uploads::<f32>(ctx);
    cg_on_both::<f64>(ctx);
    cg_on_both::<f32>(ctx);
}
