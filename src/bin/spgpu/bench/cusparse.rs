//! cuSPARSE's `cusparseSpMV`, loaded at run time from the host's `libcusparse`.
//!
//! spgpu has no link-time dependency on cuSPARSE: this module opens the library with
//! `libloading`, looks up the dozen functions it needs, and declares them with the types
//! and enum values of `cusparse.h` and `library_types.h` of CUDA 12 and 13 (checked against
//! those headers: `CUSPARSE_SPMV_CSR_ALG1 = 2`, `CUSPARSE_SPMV_CSR_ALG2 = 3`,
//! `CUSPARSE_INDEX_32I = 2`, `CUSPARSE_INDEX_BASE_ZERO = 0`, `CUDA_R_32F = 0`,
//! `CUDA_R_64F = 1`, `CUSPARSE_OPERATION_NON_TRANSPOSE = 0`). When no library is found the
//! benchmark says so and goes on without cuSPARSE.
//!
//! cuSPARSE runs in the context that is current on the thread: the device's primary
//! context, which is the one `cust` retains, so it shares memory and streams with spgpu.

use super::BenchResult;
use cust::memory::{DeviceBuffer, DevicePointer};
use libloading::Library;
use spgpu::gpu::Stream;
use spgpu::gpu::{DeviceCsr, DeviceIndices64};
use spgpu::Scalar;
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;

type Status = c_int;
type Handle = *mut c_void;
type SpMat = *mut c_void;
type DnVec = *mut c_void;

const STATUS_SUCCESS: Status = 0;
const OPERATION_NON_TRANSPOSE: c_int = 0;
const INDEX_32I: c_int = 2;
const INDEX_64I: c_int = 3;
const INDEX_BASE_ZERO: c_int = 0;
const CUDA_R_32F: c_int = 0;
const CUDA_R_64F: c_int = 1;

/// The `cusparseSpMV` algorithms the benchmark times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// `CUSPARSE_SPMV_CSR_ALG1`, without preprocessing.
    Alg1,
    /// `CUSPARSE_SPMV_CSR_ALG2`.
    Alg2,
    /// `CUSPARSE_SPMV_CSR_ALG1` after `cusparseSpMV_preprocess` (cuSPARSE 12.4 and later).
    Alg1Preprocessed,
}

impl Algorithm {
    /// Every algorithm, in the order the reports list them.
    pub const ALL: [Algorithm; 3] = [Algorithm::Alg1, Algorithm::Alg2, Algorithm::Alg1Preprocessed];

    /// The implementation name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Alg1 => "cusparse-alg1",
            Algorithm::Alg2 => "cusparse-alg2",
            Algorithm::Alg1Preprocessed => "cusparse-alg1+pre",
        }
    }

    fn raw(self) -> c_int {
        match self {
            Algorithm::Alg1 | Algorithm::Alg1Preprocessed => 2,
            Algorithm::Alg2 => 3,
        }
    }
}

type FnCreate = unsafe extern "C" fn(*mut Handle) -> Status;
type FnDestroy = unsafe extern "C" fn(Handle) -> Status;
type FnSetStream = unsafe extern "C" fn(Handle, cust::sys::CUstream) -> Status;
type FnGetVersion = unsafe extern "C" fn(Handle, *mut c_int) -> Status;
type FnGetErrorString = unsafe extern "C" fn(Status) -> *const c_char;
type FnCreateCsr = unsafe extern "C" fn(
    *mut SpMat,
    i64,
    i64,
    i64,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
) -> Status;
type FnDestroySpMat = unsafe extern "C" fn(SpMat) -> Status;
type FnCreateDnVec = unsafe extern "C" fn(*mut DnVec, i64, *mut c_void, c_int) -> Status;
type FnDestroyDnVec = unsafe extern "C" fn(DnVec) -> Status;
type FnBufferSize = unsafe extern "C" fn(
    Handle,
    c_int,
    *const c_void,
    SpMat,
    DnVec,
    *const c_void,
    DnVec,
    c_int,
    c_int,
    *mut usize,
) -> Status;
type FnSpMv = unsafe extern "C" fn(
    Handle,
    c_int,
    *const c_void,
    SpMat,
    DnVec,
    *const c_void,
    DnVec,
    c_int,
    c_int,
    *mut c_void,
) -> Status;

/// The cuSPARSE functions the benchmark calls, and the library that holds them.
struct Api {
    create: FnCreate,
    destroy: FnDestroy,
    set_stream: FnSetStream,
    get_version: FnGetVersion,
    get_error_string: Option<FnGetErrorString>,
    create_csr: FnCreateCsr,
    destroy_sp_mat: FnDestroySpMat,
    create_dn_vec: FnCreateDnVec,
    destroy_dn_vec: FnDestroyDnVec,
    buffer_size: FnBufferSize,
    preprocess: Option<FnSpMv>,
    spmv: FnSpMv,
    // Declared last: dropped after the function pointers above are no longer reachable.
    _lib: Library,
}

/// The file names and folders tried, in order, when `SPGPU_CUSPARSE` is not set.
pub fn candidates() -> Vec<PathBuf> {
    let names = ["libcusparse.so", "libcusparse.so.13", "libcusparse.so.12", "libcusparse.so.11"];
    let mut out: Vec<PathBuf> = names.iter().map(PathBuf::from).collect();
    let mut dirs =
        vec![PathBuf::from("/usr/local/cuda/lib64"), PathBuf::from("/usr/local/cuda/targets/x86_64-linux/lib")];
    if let Ok(p) = std::env::var("CUDA_PATH") {
        dirs.insert(0, PathBuf::from(p).join("lib64"));
    }
    // pip's nvidia-cusparse-cu* wheels, for every Python on the machine
    for root in ["/usr/lib", "/usr/local/lib", "/opt/conda/lib"] {
        if let Ok(rd) = std::fs::read_dir(root) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("python3") {
                    for pkgs in ["site-packages", "dist-packages"] {
                        dirs.push(e.path().join(pkgs).join("nvidia/cusparse/lib"));
                        dirs.push(e.path().join(pkgs).join("nvidia/cu13/lib"));
                    }
                }
            }
        }
    }
    for d in dirs {
        out.extend(names.iter().map(|n| d.join(n)));
    }
    out
}

impl Api {
    fn open() -> BenchResult<(Api, PathBuf)> {
        let tries = match std::env::var_os("SPGPU_CUSPARSE") {
            Some(p) => vec![PathBuf::from(p)],
            None => candidates(),
        };
        let mut last = String::from("no candidate");
        for path in tries {
            // SAFETY: loading libcusparse runs its initializers, which only register the
            // library with the CUDA runtime; it has no other load-time side effects.
            match unsafe { Library::new(&path) } {
                Ok(lib) => return Ok((Api::resolve(lib)?, path)),
                Err(e) => last = e.to_string(),
            }
        }
        Err(format!("libcusparse not found (last try: {last}); set SPGPU_CUSPARSE to its path").into())
    }

    fn resolve(lib: Library) -> BenchResult<Api> {
        // SAFETY: each symbol is looked up by its exact cuSPARSE name and given the C
        // signature declared in cusparse.h; the pointers are stored next to `lib`, which
        // outlives them (it is the last field of `Api`).
        unsafe {
            macro_rules! sym {
                ($name:literal) => {
                    *lib.get(concat!($name, "\0").as_bytes()).map_err(|e| format!("libcusparse: {}: {e}", $name))?
                };
            }
            macro_rules! opt {
                ($name:literal) => {
                    lib.get(concat!($name, "\0").as_bytes()).ok().map(|s| *s)
                };
            }
            Ok(Api {
                create: sym!("cusparseCreate"),
                destroy: sym!("cusparseDestroy"),
                set_stream: sym!("cusparseSetStream"),
                get_version: sym!("cusparseGetVersion"),
                get_error_string: opt!("cusparseGetErrorString"),
                create_csr: sym!("cusparseCreateCsr"),
                destroy_sp_mat: sym!("cusparseDestroySpMat"),
                create_dn_vec: sym!("cusparseCreateDnVec"),
                destroy_dn_vec: sym!("cusparseDestroyDnVec"),
                buffer_size: sym!("cusparseSpMV_bufferSize"),
                preprocess: opt!("cusparseSpMV_preprocess"),
                spmv: sym!("cusparseSpMV"),
                _lib: lib,
            })
        }
    }

    fn check(&self, status: Status, what: &str) -> BenchResult<()> {
        if status == STATUS_SUCCESS {
            return Ok(());
        }
        let text = self.get_error_string.map_or_else(String::new, |f| {
            // SAFETY: cusparseGetErrorString returns a static NUL-terminated string (or null).
            let p = unsafe { f(status) };
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: non-null, NUL-terminated, static (see above).
                format!(": {}", unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy())
            }
        });
        Err(format!("cuSPARSE {what} failed with status {status}{text}").into())
    }
}

/// A cuSPARSE handle bound to a stream.
pub struct CuSparse {
    api: Api,
    handle: Handle,
    /// Where the library was loaded from.
    pub path: PathBuf,
    /// `cusparseGetVersion`: major * 1000 + minor * 100 + patch.
    pub version: i32,
}

impl CuSparse {
    /// Loads libcusparse, creates a handle in the current context and binds it to `stream`.
    ///
    /// # Errors
    ///
    /// When no library can be loaded, a symbol is missing, or `cusparseCreate` fails.
    pub fn load(stream: &Stream) -> BenchResult<CuSparse> {
        let (api, path) = Api::open()?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: `handle` is a valid out-pointer; a CUDA context is current on the thread.
        api.check(unsafe { (api.create)(&mut handle) }, "cusparseCreate")?;
        let mut s = CuSparse { api, handle, path, version: 0 };
        // SAFETY: `handle` was just created; the stream outlives every call made through it
        // because the benchmark drops `CuSparse` before its context and stream.
        s.api.check(unsafe { (s.api.set_stream)(s.handle, stream.as_inner()) }, "cusparseSetStream")?;
        let mut v: c_int = 0;
        // SAFETY: valid handle and out-pointer.
        s.api.check(unsafe { (s.api.get_version)(s.handle, &mut v) }, "cusparseGetVersion")?;
        s.version = v;
        Ok(s)
    }

    /// The version as `major.minor.patch`.
    pub fn version_string(&self) -> String {
        format!("{}.{}.{}", self.version / 1000, (self.version % 1000) / 100, self.version % 100)
    }

    /// Whether `cusparseSpMV_preprocess` exists in this library.
    pub fn has_preprocess(&self) -> bool {
        self.api.preprocess.is_some()
    }

    /// Prepares `y = A x` (alpha = 1, beta = 0) with `alg` on spgpu's device matrix `a`
    /// (its arrays, shared, not copied) and device vectors `x` and `y`; the returned plan
    /// launches one `cusparseSpMV` per call.
    ///
    /// # Errors
    ///
    /// A failed cuSPARSE call or allocation, an empty matrix (cuSPARSE needs entries), or
    /// [`Algorithm::Alg1Preprocessed`] on a library without `cusparseSpMV_preprocess`.
    pub fn plan<'a, T: Scalar>(
        &'a self,
        a: &'a DeviceCsr<T>,
        x: DevicePointer<T>,
        y: DevicePointer<T>,
        alg: Algorithm,
    ) -> BenchResult<SpmvPlan<'a, T>> {
        if a.nnz() == 0 {
            return Err("cuSPARSE is not run on a matrix without entries".into());
        }
        let value_type = if T::BYTES == 4 { CUDA_R_32F } else { CUDA_R_64F };
        let arrays = a.csr_ptrs().ok_or("cuSPARSE needs the matrix stored as CSR")?;
        if !arrays.offsets_64_bit {
            return self.plan_with(a, x, y, alg, value_type, INDEX_32I, None);
        }
        // 64-bit offsets: cuSPARSE's CUSPARSE_INDEX_64I, with spgpu's 32-bit columns where the
        // library takes them, else with the columns widened to 64 bits on the device.
        match self.plan_with(a, x, y, alg, value_type, INDEX_64I, None) {
            Ok(p) => Ok(p),
            Err(mixed) => {
                let wide = a.col_indices_64()?.ok_or("cuSPARSE is not run on a matrix without entries")?;
                self.plan_with(a, x, y, alg, value_type, INDEX_64I, Some(wide))
                    .map_err(|e| format!("cuSPARSE with 64-bit offsets: {e} (with 32-bit columns: {mixed})").into())
            }
        }
    }

    /// [`plan`](Self::plan) with the offsets of index type `offsets` and, when `wide_cols` is
    /// given, those 64-bit columns instead of the matrix's 32-bit ones.
    #[allow(clippy::too_many_arguments)]
    fn plan_with<'a, T: Scalar>(
        &'a self,
        a: &'a DeviceCsr<T>,
        x: DevicePointer<T>,
        y: DevicePointer<T>,
        alg: Algorithm,
        value_type: c_int,
        offsets: c_int,
        wide_cols: Option<DeviceIndices64>,
    ) -> BenchResult<SpmvPlan<'a, T>> {
        let arrays = a.csr_ptrs().ok_or("cuSPARSE needs the matrix stored as CSR")?;
        let (cols, col_type) = match &wide_cols {
            Some(w) => (w.addr(), INDEX_64I),
            None => (arrays.col_indices.as_raw(), INDEX_32I),
        };
        let index_types = match (offsets, col_type) {
            (INDEX_32I, _) => "32I",
            (_, INDEX_32I) => "64I offsets, 32I columns",
            _ => "64I",
        };
        let mut plan = SpmvPlan {
            cs: self,
            mat: std::ptr::null_mut(),
            x: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            buffer: None,
            alg,
            value_type,
            alpha: T::ONE,
            beta: T::ZERO,
            index_types,
            _wide_cols: wide_cols,
            _a: a,
        };
        let api = &self.api;
        // SAFETY: the three device arrays hold nrows+1, nnz and nnz (> 0) elements of the
        // declared types (offsets u32 read as int32 only while nnz <= INDEX_LIMIT = i32::MAX,
        // else u64 read as int64 below 2^63; columns u32 below ncols <= i32::MAX, or the u64
        // widened copy the plan owns); the plan borrows `a`, and its descriptor is destroyed
        // in `SpmvPlan::drop`.
        api.check(
            unsafe {
                (api.create_csr)(
                    &mut plan.mat,
                    a.nrows() as i64,
                    a.ncols() as i64,
                    a.nnz() as i64,
                    arrays.row_offsets as *mut c_void,
                    cols as *mut c_void,
                    arrays.values.as_mut_ptr().cast(),
                    offsets,
                    col_type,
                    INDEX_BASE_ZERO,
                    value_type,
                )
            },
            "cusparseCreateCsr",
        )?;
        // SAFETY: `x` and `y` point to device vectors of ncols and nrows elements that the
        // caller keeps alive as long as the plan.
        api.check(
            unsafe { (api.create_dn_vec)(&mut plan.x, a.ncols() as i64, x.as_mut_ptr().cast(), value_type) },
            "cusparseCreateDnVec(x)",
        )?;
        // SAFETY: as above.
        api.check(
            unsafe { (api.create_dn_vec)(&mut plan.y, a.nrows() as i64, y.as_mut_ptr().cast(), value_type) },
            "cusparseCreateDnVec(y)",
        )?;
        let mut size = 0usize;
        // SAFETY: valid handle and descriptors; alpha and beta point to host scalars of the
        // compute type (the default host pointer mode).
        api.check(
            unsafe {
                (api.buffer_size)(
                    self.handle,
                    OPERATION_NON_TRANSPOSE,
                    (&plan.alpha as *const T).cast(),
                    plan.mat,
                    plan.x,
                    (&plan.beta as *const T).cast(),
                    plan.y,
                    value_type,
                    alg.raw(),
                    &mut size,
                )
            },
            "cusparseSpMV_bufferSize",
        )?;
        plan.buffer = Some(DeviceBuffer::<u8>::zeroed(size.max(1))?);
        if alg == Algorithm::Alg1Preprocessed {
            let pre = api.preprocess.ok_or("this libcusparse has no cusparseSpMV_preprocess (needs 12.4+)")?;
            // SAFETY: as for the buffer size query; the buffer holds `size` bytes.
            api.check(
                unsafe {
                    pre(
                        self.handle,
                        OPERATION_NON_TRANSPOSE,
                        (&plan.alpha as *const T).cast(),
                        plan.mat,
                        plan.x,
                        (&plan.beta as *const T).cast(),
                        plan.y,
                        value_type,
                        alg.raw(),
                        plan.buffer_ptr(),
                    )
                },
                "cusparseSpMV_preprocess",
            )?;
        }
        Ok(plan)
    }
}

impl Drop for CuSparse {
    fn drop(&mut self) {
        // SAFETY: the handle was created in `load` and is destroyed once; every plan borrows
        // `self`, so none is alive here.
        unsafe {
            (self.api.destroy)(self.handle);
        }
    }
}

/// One prepared `y = A x` with cuSPARSE: descriptors, work buffer, scalars.
pub struct SpmvPlan<'a, T: Scalar> {
    cs: &'a CuSparse,
    mat: SpMat,
    x: DnVec,
    y: DnVec,
    buffer: Option<DeviceBuffer<u8>>,
    alg: Algorithm,
    value_type: c_int,
    alpha: T,
    beta: T,
    index_types: &'static str,
    _wide_cols: Option<DeviceIndices64>,
    _a: &'a DeviceCsr<T>,
}

impl<T: Scalar> SpmvPlan<'_, T> {
    /// The index types cuSPARSE runs with: `"32I"`, `"64I offsets, 32I columns"` or `"64I"`.
    pub fn index_types(&self) -> &'static str {
        self.index_types
    }

    /// Bytes of the work buffer cuSPARSE asked for (`cusparseSpMV_bufferSize`).
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer.as_ref().map_or(0, |b| b.len() as u64)
    }

    fn buffer_ptr(&self) -> *mut c_void {
        self.buffer.as_ref().map_or(std::ptr::null_mut(), |b| b.as_device_ptr().as_mut_ptr().cast())
    }

    /// Enqueues one `cusparseSpMV` on the handle's stream.
    ///
    /// # Errors
    ///
    /// The status of `cusparseSpMV`, when it is not success.
    pub fn launch(&self) -> BenchResult<()> {
        let api = &self.cs.api;
        // SAFETY: the descriptors, buffer and scalars were set up in `CuSparse::plan` and
        // live as long as `self`; the call only enqueues work on the bound stream.
        api.check(
            unsafe {
                (api.spmv)(
                    self.cs.handle,
                    OPERATION_NON_TRANSPOSE,
                    (&self.alpha as *const T).cast(),
                    self.mat,
                    self.x,
                    (&self.beta as *const T).cast(),
                    self.y,
                    self.value_type,
                    self.alg.raw(),
                    self.buffer_ptr(),
                )
            },
            "cusparseSpMV",
        )
    }
}

impl<T: Scalar> Drop for SpmvPlan<'_, T> {
    fn drop(&mut self) {
        let api = &self.cs.api;
        // SAFETY: each descriptor was created in `CuSparse::plan` (or is null: never created)
        // and is destroyed once.
        unsafe {
            if !self.y.is_null() {
                (api.destroy_dn_vec)(self.y);
            }
            if !self.x.is_null() {
                (api.destroy_dn_vec)(self.x);
            }
            if !self.mat.is_null() {
                (api.destroy_sp_mat)(self.mat);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_values_match_cusparse_h() {
        assert_eq!(Algorithm::Alg1.raw(), 2);
        assert_eq!(Algorithm::Alg1Preprocessed.raw(), 2);
        assert_eq!(Algorithm::Alg2.raw(), 3);
        assert_eq!(Algorithm::ALL.map(Algorithm::name), ["cusparse-alg1", "cusparse-alg2", "cusparse-alg1+pre"]);
    }

    #[test]
    fn candidates_start_with_the_plain_names_and_include_cuda_lib64() {
        let c = candidates();
        assert_eq!(c[0], PathBuf::from("libcusparse.so"));
        assert!(c.contains(&PathBuf::from("/usr/local/cuda/lib64/libcusparse.so.12")));
    }

    #[test]
    fn a_missing_override_is_an_error_not_a_panic() {
        std::env::set_var("SPGPU_CUSPARSE", "/nonexistent/libcusparse.so");
        let r = Api::open();
        std::env::remove_var("SPGPU_CUSPARSE");
        let msg = r.err().expect("must fail").to_string();
        assert!(msg.contains("libcusparse not found"), "{msg}");
    }
}
