//! CSR to ELLPACK and SELL-C-σ on the device (`ell_from_csr_<T>`, `sell_from_csr_<T>` and
//! their 16-bit forms): the ELL slots the upload makes on the GPU must be those the host
//! conversion makes ([`EllMatrix`]), bit for bit, with 32-bit columns and with narrow
//! (16-bit) ones, for rows of every length up to the width, empty rows, one row and one
//! column; SELL storage made on the device must download to the matrix and give the same
//! products, bit for bit, as SELL made on the host (`SPGPU_DEVICE_CONVERSION=0`), its far
//! columns' table included.
//!
//! The host's conversion is asked for through the upload's tuning
//! ([`Tuning::device_conversion`](spgpu::gpu::Tuning::device_conversion)), as
//! `SPGPU_DEVICE_CONVERSION=0` would. It skips with a printed line when there is no GPU, and fails
//! instead when `SPGPU_REQUIRE_GPU=1`.

mod common;
use common::gpu;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use spgpu::gpu::DEVICE_CONVERSION_ENV;
use spgpu::gpu::{DeviceCsr, DeviceEll, DeviceVector, KernelChoice, Tuning, UploadOptions};
use spgpu::{reference, CsrMatrix, EllMatrix, Scalar};

/// `nrows x ncols`, row lengths uniform in `0..=max_len` (at most `ncols`), columns either
/// near the diagonal (within `spread`) or anywhere.
fn random_csr(nrows: usize, ncols: usize, max_len: usize, spread: Option<usize>, seed: u64) -> CsrMatrix<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut off, mut cols, mut vals) = (vec![0u64], Vec::new(), Vec::new());
    for i in 0..nrows {
        let len = rng.random_range(0..=max_len.min(ncols));
        let mut row: Vec<u32> = (0..len)
            .map(|_| match spread {
                Some(s) => {
                    let lo = i.saturating_sub(s);
                    let hi = (i + s).min(ncols - 1);
                    rng.random_range(lo..=hi.max(lo)) as u32
                }
                None => rng.random_range(0..ncols) as u32,
            })
            .collect();
        row.sort_unstable();
        row.dedup();
        vals.extend(row.iter().map(|_| rng.random_range(-1.0..1.0)));
        cols.extend(row);
        off.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(nrows, ncols, off, cols, vals).unwrap()
}

/// `a` with rows 5 (600 entries), 1700 (3000) and 2999 (513) made long.
fn with_long_rows(a: CsrMatrix<f64>) -> CsrMatrix<f64> {
    let long = [(5usize, 600usize), (1700, 3000), (2999, 513)];
    let (mut off, mut cols, mut vals) = (vec![0u64], Vec::new(), Vec::new());
    for i in 0..a.nrows() {
        match long.iter().find(|l| l.0 == i) {
            Some(&(_, n)) => {
                cols.extend((0..n as u32).map(|k| k * (a.ncols() as u32 / n as u32)));
                vals.extend((0..n).map(|k| 1.0 / (k as f64 + 1.0)));
            }
            None => {
                let (c, v) = a.row(i);
                cols.extend_from_slice(c);
                vals.extend_from_slice(v);
            }
        }
        off.push(cols.len() as u64);
    }
    CsrMatrix::try_from_parts(a.nrows(), a.ncols(), off, cols, vals).unwrap()
}

fn same_bits<T: Scalar>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_f64().to_bits() == y.to_f64().to_bits())
}

/// `y = A x` on the device with `m`, checked against the reference; `y` starts as NaN.
fn product<T: Scalar>(
    what: &str,
    m: &dyn Fn(&DeviceVector<T>, &mut DeviceVector<T>),
    x: &DeviceVector<T>,
    want: &[T],
) -> Vec<T> {
    let ctx = x.context();
    let mut d_y = DeviceVector::from_slice(ctx, &vec![T::from_f64(f64::NAN); want.len()]).unwrap();
    m(x, &mut d_y);
    let y = d_y.to_vec().unwrap();
    for (i, (g, w)) in y.iter().zip(want).enumerate() {
        let (g, w) = (g.to_f64(), w.to_f64());
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{what}: y[{i}] = {g}, reference {w}");
    }
    y
}

/// One upload's result with the conversion on the device and on the host: whether its slots
/// are narrow and its product; `None` when the storage is refused (too much padding).
type Converted<T> = Option<(bool, Vec<T>)>;

fn check<T: Scalar>(name: &str, a: &CsrMatrix<T>, ctx: &'static spgpu::gpu::Context) {
    let want = EllMatrix::try_from_csr(a).ok();
    let mut rng = StdRng::seed_from_u64(5);
    let x: Vec<T> = (0..a.ncols()).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    let mut y_ref = vec![T::ZERO; a.nrows()];
    reference::spmv_csr(T::ONE, a, &x, T::ZERO, &mut y_ref).unwrap();
    let d_x = DeviceVector::from_slice(ctx, &x).unwrap();
    let mut results: Vec<(Converted<T>, Converted<T>)> = Vec::new();
    for device in ["1", "0"] {
        let tuning = Tuning { device_conversion: (device == "0").then_some(false), ..Tuning::from_env() };
        let what = format!("{name} ({}), {DEVICE_CONVERSION_ENV}={device}", T::NAME);
        let ell = want.as_ref().map(|want| {
            let d = DeviceEll::from_csr_tuned(ctx, a, &tuning).unwrap();
            let got = d.download().unwrap();
            assert_eq!(got.col_indices(), want.col_indices(), "{what}: slot columns");
            assert!(same_bits(got.values(), want.values()), "{what}: slot values");
            let y = product(&what, &|x, y| d.spmv(T::ONE, x, T::ZERO, y).unwrap(), &d_x, &y_ref);
            // the plan's upload (ELL storage) converts the same way
            let c =
                DeviceCsr::upload_with(ctx, a, UploadOptions::kernel(KernelChoice::Ell).with_tuning(tuning)).unwrap();
            assert_eq!(&c.download().unwrap(), a, "{what}: the CSR download of ELL storage");
            let y2 = product(&what, &|x, y| c.spmv(T::ONE, x, T::ZERO, y).unwrap(), &d_x, &y_ref);
            assert!(same_bits(&y, &y2), "{what}: DeviceCsr stored as ELL differs from DeviceEll");
            (d.narrow_columns(), y)
        });
        let sell = match DeviceCsr::upload_with(ctx, a, UploadOptions::kernel(KernelChoice::Sell).with_tuning(tuning)) {
            Ok(s) => {
                assert_eq!(&s.download().unwrap(), a, "{what}: the CSR download of SELL storage");
                let y = product(&format!("{what}, SELL"), &|x, y| s.spmv(T::ONE, x, T::ZERO, y).unwrap(), &d_x, &y_ref);
                Some((s.plan().narrow_columns(), y))
            }
            Err(spgpu::Error::InvalidArgument(e)) => {
                println!("{what}: SELL skipped ({e})");
                None
            }
            Err(e) => panic!("{what}: SELL upload: {e}"),
        };
        results.push((ell, sell));
    }
    for (form, on_device, on_host) in [("ELL", &results[0].0, &results[1].0), ("SELL", &results[0].1, &results[1].1)] {
        match (on_device, on_host) {
            (Some((n0, y0)), Some((n1, y1))) => {
                assert_eq!(n0, n1, "{name}: {form} narrow on the device and on the host");
                assert!(same_bits(y0, y1), "{name}: {form} made on the device and on the host give other products");
            }
            (None, None) => {}
            _ => panic!("{name}: {form} refused by one conversion only"),
        }
    }
    assert!(results[0].0.is_some() || results[0].1.is_some(), "{name}: neither ELL nor SELL was tried");
}

#[test]
fn device_conversions_match_the_host() {
    let Some(ctx) = gpu("device_conversions_match_the_host") else { return };
    let cases: Vec<(&str, CsrMatrix<f64>)> = vec![
        ("random 3001 x 2500, columns anywhere", random_csr(3001, 2500, 17, None, 1)),
        ("random 5000 x 5000, columns within 40 (narrow)", random_csr(5000, 5000, 9, Some(40), 2)),
        ("40000 x 70000, columns within 30000 (narrow)", random_csr(40_000, 70_000, 6, Some(30_000), 3)),
        ("one row", random_csr(1, 300, 300, None, 4)),
        ("one column", random_csr(777, 1, 1, None, 5)),
        ("width 1 with empty rows", random_csr(1000, 1000, 1, Some(3), 6)),
        (
            "rows past 512 entries among short ones (SELL's long rows)",
            with_long_rows(random_csr(3000, 4000, 12, None, 7)),
        ),
        // a band plus 4 power nets: narrow SELL slots with a table of the nets' far columns
        ("circuit of 200000 rows (SELL's far columns)", spgpu::gen::circuit::<f64>(200_000, 3).unwrap()),
    ];
    for (name, a) in &cases {
        assert!(a.nnz() > 0, "{name}");
        check::<f64>(name, a, ctx);
        check::<f32>(name, &a.cast(), ctx);
    }
}
