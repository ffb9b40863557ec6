//! Helpers shared by the integration tests: the external SuiteSparse matrices
//! (`SPGPU_MATRICES`) and the GPU, each skipped with a line on stderr or required by a
//! switch, and an independent residual check.
//!
//! Each test binary uses only some of these.
#![allow(dead_code)]

use spgpu::gpu::Context;
use spgpu::solver::{Backend, Jacobi, PrecondForm, Preconditioner};
use spgpu::{reference, CsrMatrix, Scalar};
use std::path::PathBuf;

/// The crate root: `CARGO_MANIFEST_DIR` at run time (cargo sets it, and so does the runner of
/// staged test executables on a GPU host), else where the crate was built.
pub fn crate_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// The `spgpu` binary: cargo's build of it, or the staged copy (`.gpu/bin/spgpu` under the
/// crate root) when the tests run on a GPU host without the build tree.
///
/// # Panics
///
/// When neither exists (cargo builds the binary with the `cli` feature only).
pub fn spgpu_binary() -> PathBuf {
    let built = PathBuf::from(option_env!("CARGO_BIN_EXE_spgpu").unwrap_or("(not built: no cli feature)"));
    let staged = crate_root().join(".gpu/bin/spgpu");
    [built.clone(), staged.clone()]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no spgpu binary: neither {} nor {}", built.display(), staged.display()))
}

/// The folder of external SuiteSparse matrices: `SPGPU_MATRICES`, the only place the tests
/// read it. `None`, with a line on stderr, when it is not set.
///
/// # Panics
///
/// When it is not set and `SPGPU_REQUIRE_MATRICES=1` (CI sets both), or when it names no
/// folder.
pub fn external_matrices() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("SPGPU_MATRICES") else {
        skip_without_matrices("SPGPU_MATRICES is not set; set it to a folder of SuiteSparse .mtx files");
        return None;
    };
    let dir = PathBuf::from(dir);
    assert!(dir.is_dir(), "SPGPU_MATRICES={}: no such folder", dir.display());
    Some(dir)
}

/// Reads an external matrix by name (without `.mtx`; `NAME.mtx.gz` also does) from
/// [`external_matrices`]; `None`, with a line on stderr, when the folder is not set or lacks
/// it.
///
/// # Panics
///
/// When the matrix is not there and `SPGPU_REQUIRE_MATRICES=1`, or the file does not read.
pub fn external_matrix<T: Scalar>(name: &str) -> Option<CsrMatrix<T>> {
    // a staged copy may be compressed
    let path = external_file(&[&format!("{name}.mtx"), &format!("{name}.mtx.gz")])?;
    Some(spgpu::io::read_csr::<T>(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display())))
}

/// The first of `names` in [`external_matrices`]; `None`, with a line on stderr, when the
/// folder is not set or has none of them.
///
/// # Panics
///
/// When none is there and `SPGPU_REQUIRE_MATRICES=1`.
pub fn external_file(names: &[&str]) -> Option<PathBuf> {
    let dir = external_matrices()?;
    let found = names.iter().map(|n| dir.join(n)).find(|p| p.is_file());
    if found.is_none() {
        skip_without_matrices(&format!("{} has no {}", dir.display(), names.join(" or ")));
    }
    found
}

/// Prints why the running test skips, on stderr (the harness does not capture it), or panics
/// when `SPGPU_REQUIRE_MATRICES=1`.
fn skip_without_matrices(why: &str) {
    let test = std::thread::current().name().unwrap_or("test").to_string();
    assert!(std::env::var("SPGPU_REQUIRE_MATRICES").as_deref() != Ok("1"), "{test}: {why} (SPGPU_REQUIRE_MATRICES=1)");
    // straight to stderr: the harness captures eprintln!, not this, so the skip always shows
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{test}: skipped: {why}");
}

/// The context, or `None` (with a printed line) when there is no GPU and none is required.
///
/// # Panics
///
/// When no GPU is usable and `SPGPU_REQUIRE_GPU=1`, or the GPU fails otherwise.
pub fn gpu(test: &str) -> Option<&'static Context> {
    match Context::global() {
        Ok(ctx) => Some(ctx),
        Err(e) if e.is_no_device() && std::env::var("SPGPU_REQUIRE_GPU").as_deref() != Ok("1") => {
            // stderr is not captured by the test harness, so the skip is always visible
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{test}: skipped, no GPU ({e})");
            None
        }
        Err(e) => panic!("{test}: no usable GPU ({e}); SPGPU_REQUIRE_GPU=1 requires one"),
    }
}

/// `||b - A x|| / ||b||` in f64 with the reference SpMV.
pub fn true_relative_residual<T: Scalar>(a: &CsrMatrix<T>, x: &[T], b: &[T]) -> f64 {
    let a64 = a.cast::<f64>();
    let x64: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let mut r: Vec<f64> = b.iter().map(|v| v.to_f64()).collect();
    reference::spmv_csr(-1.0, &a64, &x64, 1.0, &mut r).unwrap();
    let rn = r.iter().map(|v| v * v).sum::<f64>().sqrt();
    let bn = b.iter().map(|v| v.to_f64().powi(2)).sum::<f64>().sqrt();
    rn / bn
}

/// b = A * 1, so the exact solution is all ones.
pub fn rhs_of_ones<T: Scalar>(a: &CsrMatrix<T>) -> Vec<T> {
    let mut b = vec![T::ZERO; a.nrows()];
    reference::spmv_csr(T::ONE, a, &vec![T::ONE; a.ncols()], T::ZERO, &mut b).unwrap();
    b
}

/// Jacobi applied through the general (unfused) preconditioner path: the backend's
/// `hadamard` each iteration instead of the fused kernels, so tests can compare the two.
pub struct GeneralJacobi<V>(pub Jacobi<V>);

impl<T: Scalar, B: Backend<T>> Preconditioner<T, B> for GeneralJacobi<B::Vector> {
    fn name(&self) -> &'static str {
        "general-jacobi"
    }
    fn apply(&self, backend: &B, r: &B::Vector, z: &mut B::Vector) -> spgpu::Result<()> {
        backend.hadamard(self.0.inverse_diagonal(), r, z)
    }
    fn form(&self) -> PrecondForm<'_, B::Vector> {
        PrecondForm::General
    }
}

/// The relative error bound of one SpMV against the reference: 1e-5 for `f32`, 1e-12 for
/// `f64`.
pub fn spmv_tolerance<T: Scalar>() -> f64 {
    if T::BYTES == 4 {
        1e-5
    } else {
        1e-12
    }
}

/// Checks one product: the 2-norm relative error and every element against its own error
/// bound (`tol * (|alpha| sum |a_ij x_j| + |beta y_i|)`).
pub fn check_spmv<T: Scalar>(what: &str, a: &CsrMatrix<T>, alpha: T, x: &[T], beta: T, y0: &[T], got: &[T]) {
    let mut want = y0.to_vec();
    reference::spmv_csr(alpha, a, x, beta, &mut want).unwrap();
    let tol = spmv_tolerance::<T>();
    // Norm-wise: the error against the norm of |alpha| |A| |x| + |beta y|, the scale rounding
    // errors follow (a row whose terms cancel has a small result but not a small error).
    let scales: Vec<f64> = (0..a.nrows())
        .map(|i| {
            let (cols, vals) = a.row(i);
            let s: f64 = cols.iter().zip(vals).map(|(&c, &v)| (v.to_f64() * x[c as usize].to_f64()).abs()).sum();
            alpha.to_f64().abs() * s + if beta == T::ZERO { 0.0 } else { (beta.to_f64() * y0[i].to_f64()).abs() }
        })
        .collect();
    let diff: f64 = got.iter().zip(&want).map(|(g, w)| (g.to_f64() - w.to_f64()).powi(2)).sum::<f64>().sqrt();
    let norm: f64 = scales.iter().map(|s| s * s).sum::<f64>().sqrt();
    let err = diff / norm.max(f64::MIN_POSITIVE);
    assert!(err <= tol, "{what}: error {err:e} of the scale > {tol:e}");
    for i in 0..a.nrows() {
        let (cols, vals) = a.row(i);
        let mut scale: f64 = cols.iter().zip(vals).map(|(&c, &v)| (v.to_f64() * x[c as usize].to_f64()).abs()).sum();
        scale *= alpha.to_f64().abs();
        if beta != T::ZERO {
            scale += (beta.to_f64() * y0[i].to_f64()).abs();
        }
        let (g, w) = (got[i].to_f64(), want[i].to_f64());
        assert!(g.is_finite(), "{what}: y[{i}] = {g} (the reference has {w})");
        assert!(
            (g - w).abs() <= tol * scale + f64::MIN_POSITIVE,
            "{what}: y[{i}] = {g}, reference {w}, bound {}",
            tol * scale
        );
    }
}
