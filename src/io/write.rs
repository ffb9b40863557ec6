//! The writer: CSR to `coordinate real general|symmetric`, dense vectors to `array`.

use std::io::Write;

use super::header::MmSymmetry;
use crate::{CsrMatrix, Error, Result, Scalar};

/// Appends `v` in decimal.
#[inline]
fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

/// Appends `v` in its shortest form that reads back to the same `T` (`ryu`), or `inf`,
/// `-inf`, `nan`, which the reader accepts.
#[inline]
fn push_value<T: Scalar>(out: &mut Vec<u8>, buf: &mut ryu::Buffer, v: T) {
    let x = v.to_f64();
    if !x.is_finite() {
        out.extend_from_slice(if x.is_nan() {
            b"nan"
        } else if x > 0.0 {
            b"inf"
        } else {
            b"-inf"
        });
    } else if T::BYTES == 4 {
        out.extend_from_slice(buf.format_finite(x as f32).as_bytes());
    } else {
        out.extend_from_slice(buf.format_finite(x).as_bytes());
    }
}

/// The value at `(i, j)` of `a`, if stored (binary search: columns are sorted).
fn lookup<T: Scalar>(a: &CsrMatrix<T>, i: usize, j: u32) -> Option<T> {
    let (cols, vals) = a.row(i);
    cols.binary_search(&j).ok().map(|k| vals[k])
}

/// Checks that `a` is symmetric (`sign = 1`) or skew-symmetric (`sign = -1`): every stored
/// `a(i,j)` has a stored `a(j,i) == sign * a(i,j)`, and a skew-symmetric diagonal is zero.
fn check_mirrored<T: Scalar>(a: &CsrMatrix<T>, skew: bool) -> Result<()> {
    let what = if skew { "skew-symmetric" } else { "symmetric" };
    if a.nrows() != a.ncols() {
        return Err(Error::InvalidArgument(format!(
            "cannot write a {} x {} matrix as {what}: it is not square",
            a.nrows(),
            a.ncols()
        )));
    }
    for i in 0..a.nrows() {
        let (cols, vals) = a.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            let want = if skew { -v } else { v };
            let ok = if j as usize == i {
                !skew || v == T::ZERO
            } else {
                // Bitwise equality also accepts equal NaNs.
                lookup(a, j as usize, i as u32)
                    .is_some_and(|m| m == want || m.to_f64().to_bits() == want.to_f64().to_bits())
            };
            if !ok {
                return Err(Error::InvalidArgument(format!(
                    "cannot write the matrix as {what}: entry ({}, {}) has no matching entry ({}, {})",
                    i + 1,
                    j + 1,
                    j + 1,
                    i + 1
                )));
            }
        }
    }
    Ok(())
}

/// Writes `a` as Matrix Market `coordinate real` to `w`: rows in order, columns sorted,
/// values in shortest round-trip form, so that reading the output gives back `a` exactly
/// (infinities are written `inf`, `-inf`; a NaN is written `nan` and reads back as a NaN,
/// without its sign and payload).
///
/// `General` writes every entry; `Symmetric` writes the lower triangle (diagonal included)
/// and `SkewSymmetric` the strictly lower triangle, after checking that `a` has that
/// symmetry.
///
/// # Errors
///
/// [`Error::InvalidArgument`] for `Hermitian`, or when `a` does not have the symmetry asked
/// for (the message names an entry without its mirror); [`Error::Io`] when writing fails.
pub fn write_csr_to_writer<T: Scalar, W: Write>(mut w: W, a: &CsrMatrix<T>, symmetry: MmSymmetry) -> Result<()> {
    let skew = match symmetry {
        MmSymmetry::General => None,
        MmSymmetry::Symmetric => Some(false),
        MmSymmetry::SkewSymmetric => Some(true),
        MmSymmetry::Hermitian => {
            return Err(Error::InvalidArgument(
                "spgpu writes real matrices: use MmSymmetry::Symmetric instead of Hermitian".into(),
            ))
        }
    };
    if let Some(skew) = skew {
        check_mirrored(a, skew)?;
    }
    let keep = |i: usize, j: usize| match skew {
        None => true,
        Some(false) => j <= i,
        Some(true) => j < i,
    };
    let stored: usize = (0..a.nrows()).map(|i| a.row(i).0.iter().filter(|&&j| keep(i, j as usize)).count()).sum();
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(
        format!(
            "%%MatrixMarket matrix coordinate real {}\n% written by spgpu {} ({})\n{} {} {}\n",
            symmetry.keyword(),
            env!("CARGO_PKG_VERSION"),
            T::NAME,
            a.nrows(),
            a.ncols(),
            stored
        )
        .as_bytes(),
    );
    let mut buf = ryu::Buffer::new();
    for i in 0..a.nrows() {
        let (cols, vals) = a.row(i);
        for (&j, &v) in cols.iter().zip(vals) {
            if !keep(i, j as usize) {
                continue;
            }
            push_u64(&mut out, i as u64 + 1);
            out.push(b' ');
            push_u64(&mut out, j as u64 + 1);
            out.push(b' ');
            push_value(&mut out, &mut buf, v);
            out.push(b'\n');
        }
        if out.len() >= 1 << 16 {
            w.write_all(&out)?;
            out.clear();
        }
    }
    w.write_all(&out)?;
    w.flush()?;
    Ok(())
}

/// Writes `v` as Matrix Market `array real general`, `n x 1`, values in shortest
/// round-trip form.
///
/// # Errors
///
/// [`Error::Io`] when writing fails.
pub fn write_vector_to_writer<T: Scalar, W: Write>(mut w: W, v: &[T]) -> Result<()> {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(
        format!(
            "%%MatrixMarket matrix array real general\n% written by spgpu {} ({})\n{} 1\n",
            env!("CARGO_PKG_VERSION"),
            T::NAME,
            v.len()
        )
        .as_bytes(),
    );
    let mut buf = ryu::Buffer::new();
    for &x in v {
        push_value(&mut out, &mut buf, x);
        out.push(b'\n');
        if out.len() >= 1 << 16 {
            w.write_all(&out)?;
            out.clear();
        }
    }
    w.write_all(&out)?;
    w.flush()?;
    Ok(())
}
