//! cuSPARSE's `cusparseSpMV`, loaded at run time from the host's `libcusparse`.
//!
//! spgpu has no link-time dependency on cuSPARSE: this module opens the library with
//! `libloading`, looks up the dozen functions it needs, and declares them with the types
//! and enum values of `cusparse.h` and `library_types.h` of CUDA 12 and 13 (checked against
//! those headers: `CUSPARSE_SPMV_CSR_ALG1 = 2`, `CUSPARSE_SPMV_CSR_ALG2 = 3`,
//! `CUSPARSE_INDEX_32I = 2`, `CUSPARSE_INDEX_BASE_ZERO = 0`, `CUDA_R_32F = 0`,
//! `CUDA_R_64F = 1`, `CUSPARSE_OPERATION_NON_TRANSPOSE = 0`,
//! `CUSPARSE_OPERATION_TRANSPOSE = 1`). When no library is found the benchmark says so and
//! goes on without cuSPARSE.
//!
//! cuSPARSE runs in the context that is current on the thread: the device's primary
//! context, which is the one `cust` retains, so it shares memory and streams with spgpu.

use super::BenchResult;
use crate::gpu::Stream;
use crate::gpu::{DeviceCsr, DeviceIndices64};
use crate::Scalar;
use cust::memory::{DeviceBuffer, DevicePointer};
use libloading::Library;
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;

type Status = c_int;
type Handle = *mut c_void;
type SpMat = *mut c_void;
type DnVec = *mut c_void;

const STATUS_SUCCESS: Status = 0;
const OPERATION_NON_TRANSPOSE: c_int = 0;
const OPERATION_TRANSPOSE: c_int = 1;
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

    /// Prepares `y = A x` (alpha = 1, beta = 0), or `y = A^T x` with
    /// `CUSPARSE_OPERATION_TRANSPOSE` when `transpose` (x of `a`'s rows, y of its columns),
    /// with `alg` on spgpu's device matrix `a` (its arrays, shared, not copied) and device
    /// vectors `x` and `y`; the returned plan launches one `cusparseSpMV` per call.
    ///
    /// # Errors
    ///
    /// A failed cuSPARSE call or allocation (an algorithm without the transpose operation),
    /// an empty matrix (cuSPARSE needs entries), or [`Algorithm::Alg1Preprocessed`] on a
    /// library without `cusparseSpMV_preprocess`.
    pub fn plan<'a, T: Scalar>(
        &'a self,
        a: &'a DeviceCsr<T>,
        x: DevicePointer<T>,
        y: DevicePointer<T>,
        alg: Algorithm,
        transpose: bool,
    ) -> BenchResult<SpmvPlan<'a, T>> {
        let op = if transpose { OPERATION_TRANSPOSE } else { OPERATION_NON_TRANSPOSE };
        if a.nnz() == 0 {
            return Err("cuSPARSE is not run on a matrix without entries".into());
        }
        let value_type = if T::BYTES == 4 { CUDA_R_32F } else { CUDA_R_64F };
        let arrays = a.csr_ptrs().ok_or("cuSPARSE needs the matrix stored as CSR")?;
        if !arrays.offsets_64_bit {
            return self.plan_with(a, x, y, (alg, op), value_type, INDEX_32I, None);
        }
        // 64-bit offsets: cuSPARSE's CUSPARSE_INDEX_64I, with spgpu's 32-bit columns where the
        // library takes them, else with the columns widened to 64 bits on the device.
        match self.plan_with(a, x, y, (alg, op), value_type, INDEX_64I, None) {
            Ok(p) => Ok(p),
            Err(mixed) => {
                let wide = a.col_indices_64()?.ok_or("cuSPARSE is not run on a matrix without entries")?;
                self.plan_with(a, x, y, (alg, op), value_type, INDEX_64I, Some(wide))
                    .map_err(|e| format!("cuSPARSE with 64-bit offsets: {e} (with 32-bit columns: {mixed})").into())
            }
        }
    }

    /// [`plan`](Self::plan) with the algorithm and operation `(alg, op)`, the offsets of
    /// index type `offsets` and, when `wide_cols` is given, those 64-bit columns instead of
    /// the matrix's 32-bit ones.
    #[allow(clippy::too_many_arguments)]
    fn plan_with<'a, T: Scalar>(
        &'a self,
        a: &'a DeviceCsr<T>,
        x: DevicePointer<T>,
        y: DevicePointer<T>,
        (alg, op): (Algorithm, c_int),
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
        let mut plan = SpmvPlan::new(self, a, alg, value_type, index_types);
        plan.op = op;
        plan.wide_cols = wide_cols;
        let part = Part {
            rows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            offsets: (arrays.row_offsets, offsets),
            cols: (cols, col_type),
            values: arrays.values.as_raw(),
            x: x.as_raw(),
            y: y.as_raw(),
        };
        // SAFETY: the three device arrays hold nrows+1, nnz and nnz (> 0) elements of the
        // declared types (offsets u32 read as int32 only while nnz <= INDEX_LIMIT = i32::MAX,
        // else u64 read as int64 below 2^63; columns u32 below ncols <= i32::MAX, or the u64
        // widened copy the plan owns); x and y hold ncols and nrows elements (nrows and ncols
        // with the transpose operation) and the caller keeps them alive as long as the plan,
        // which borrows `a`.
        unsafe { plan.add_part(&part)? };
        Ok(plan)
    }

    /// `y = A x` as cuSPARSE 12.6 can run a matrix past `INDEX_LIMIT` entries: in row blocks
    /// of at most `INDEX_LIMIT` entries each, with 32-bit indices (its fastest layout), one
    /// `cusparseSpMV` per block, back to back on the stream, on spgpu's arrays (each block
    /// gets its own rebased 32-bit offsets; columns and values are shared). `host_offsets` are
    /// the host matrix's row offsets, the same as `a`'s.
    ///
    /// # Errors
    ///
    /// As [`plan`](Self::plan).
    pub fn plan_row_blocks<'a, T: Scalar>(
        &'a self,
        a: &'a DeviceCsr<T>,
        host_offsets: &[u64],
        x: DevicePointer<T>,
        y: DevicePointer<T>,
        alg: Algorithm,
    ) -> BenchResult<SpmvPlan<'a, T>> {
        let arrays = a.csr_ptrs().ok_or("cuSPARSE needs the matrix stored as CSR")?;
        if a.nnz() == 0 || host_offsets.len() != a.nrows() + 1 || host_offsets[a.nrows()] as usize != a.nnz() {
            return Err("cuSPARSE row blocks need the matrix's entries and its host offsets".into());
        }
        let value_type = if T::BYTES == 4 { CUDA_R_32F } else { CUDA_R_64F };
        let mut plan = SpmvPlan::new(self, a, alg, value_type, "32I in row blocks");
        for w in row_block_bounds(host_offsets, crate::INDEX_LIMIT as u64).windows(2) {
            let (r0, r1) = (w[0], w[1]);
            let base = host_offsets[r0];
            let rebased: Vec<u32> = host_offsets[r0..=r1].iter().map(|&o| (o - base) as u32).collect();
            let offsets = DeviceBuffer::from_slice(&rebased)?;
            let part = Part {
                rows: r1 - r0,
                ncols: a.ncols(),
                nnz: (host_offsets[r1] - base) as usize,
                offsets: (offsets.as_device_ptr().as_raw(), INDEX_32I),
                cols: (arrays.col_indices.as_raw() + 4 * base, INDEX_32I),
                values: arrays.values.as_raw() + T::BYTES as u64 * base,
                x: x.as_raw(),
                y: y.as_raw() + (T::BYTES * r0) as u64,
            };
            plan.block_offsets.push(offsets);
            // SAFETY: the block's offsets (just uploaded, owned by the plan) run from 0 to its
            // entry count below 2^31; its columns and values are the matrix's from entry
            // `base` on, of which the block reads its count; y is offset to the block's first
            // row and holds its rows; x holds ncols elements.
            unsafe { plan.add_part(&part)? };
        }
        Ok(plan)
    }
}

/// Row bounds `0 = r_0 < r_1 < ... = nrows` of blocks of consecutive rows holding at most
/// `limit` entries each (a row longer than `limit` would be a block of its own; a CSR row
/// has at most `ncols <= INDEX_LIMIT` entries, so it never is).
fn row_block_bounds(offsets: &[u64], limit: u64) -> Vec<usize> {
    let nrows = offsets.len() - 1;
    let mut bounds = vec![0];
    let mut r0 = 0;
    while r0 < nrows {
        // the last row end within `limit` entries of r0's start
        let end = offsets.partition_point(|&o| o <= offsets[r0] + limit) - 1;
        r0 = end.clamp(r0 + 1, nrows);
        bounds.push(r0);
    }
    bounds
}

/// One `cusparseSpMV` of a plan: a CSR block `y[..rows] = A_block x`, or `y = A^T x` with the
/// transpose operation (addresses on the device).
struct Part {
    rows: usize,
    ncols: usize,
    nnz: usize,
    /// Address and cuSPARSE index type of the `rows + 1` offsets.
    offsets: (u64, c_int),
    /// Address and index type of the columns.
    cols: (u64, c_int),
    values: u64,
    /// Address of x: `ncols` elements, `rows` with the transpose operation.
    x: u64,
    /// Address of y: `rows` elements, `ncols` with the transpose operation.
    y: u64,
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

/// One prepared `y = A x` with cuSPARSE: descriptors and work buffer of each part (one, or
/// one per row block), scalars.
pub struct SpmvPlan<'a, T: Scalar> {
    cs: &'a CuSparse,
    parts: Vec<Descriptors>,
    alg: Algorithm,
    /// `CUSPARSE_OPERATION_NON_TRANSPOSE` or `CUSPARSE_OPERATION_TRANSPOSE`.
    op: c_int,
    value_type: c_int,
    alpha: T,
    beta: T,
    index_types: &'static str,
    wide_cols: Option<DeviceIndices64>,
    block_offsets: Vec<DeviceBuffer<u32>>,
    _a: &'a DeviceCsr<T>,
}

/// The cuSPARSE objects of one part.
struct Descriptors {
    mat: SpMat,
    x: DnVec,
    y: DnVec,
    buffer: Option<DeviceBuffer<u8>>,
}

impl<'a, T: Scalar> SpmvPlan<'a, T> {
    fn new(
        cs: &'a CuSparse,
        a: &'a DeviceCsr<T>,
        alg: Algorithm,
        value_type: c_int,
        index_types: &'static str,
    ) -> Self {
        SpmvPlan {
            cs,
            parts: Vec::new(),
            alg,
            op: OPERATION_NON_TRANSPOSE,
            value_type,
            alpha: T::ONE,
            beta: T::ZERO,
            index_types,
            wide_cols: None,
            block_offsets: Vec::new(),
            _a: a,
        }
    }

    /// Creates the descriptors of one part, sizes and allocates its buffer, and runs the
    /// preprocessing for [`Algorithm::Alg1Preprocessed`].
    ///
    /// # Safety
    ///
    /// The part's addresses are device arrays of the declared types and lengths that live as
    /// long as the plan.
    unsafe fn add_part(&mut self, p: &Part) -> BenchResult<()> {
        let api = &self.cs.api;
        let vt = self.value_type;
        self.parts.push(Descriptors {
            mat: std::ptr::null_mut(),
            x: std::ptr::null_mut(),
            y: std::ptr::null_mut(),
            buffer: None,
        });
        let d = self.parts.last_mut().expect("just pushed");
        let (x_len, y_len) = if self.op == OPERATION_TRANSPOSE { (p.rows, p.ncols) } else { (p.ncols, p.rows) };
        // SAFETY: the caller guarantees the arrays; the descriptors are destroyed in drop.
        api.check(
            unsafe {
                (api.create_csr)(
                    &mut d.mat,
                    p.rows as i64,
                    p.ncols as i64,
                    p.nnz as i64,
                    p.offsets.0 as *mut c_void,
                    p.cols.0 as *mut c_void,
                    p.values as *mut c_void,
                    p.offsets.1,
                    p.cols.1,
                    INDEX_BASE_ZERO,
                    vt,
                )
            },
            "cusparseCreateCsr",
        )?;
        // SAFETY: x and y hold x_len and y_len elements (the caller guarantees).
        api.check(
            unsafe { (api.create_dn_vec)(&mut d.x, x_len as i64, p.x as *mut c_void, vt) },
            "cusparseCreateDnVec(x)",
        )?;
        // SAFETY: as above.
        api.check(
            unsafe { (api.create_dn_vec)(&mut d.y, y_len as i64, p.y as *mut c_void, vt) },
            "cusparseCreateDnVec(y)",
        )?;
        let mut size = 0usize;
        let (alpha, beta) = ((&self.alpha as *const T).cast(), (&self.beta as *const T).cast());
        // SAFETY: valid handle and descriptors; alpha and beta point to host scalars of the
        // compute type (the default host pointer mode).
        api.check(
            unsafe {
                (api.buffer_size)(self.cs.handle, self.op, alpha, d.mat, d.x, beta, d.y, vt, self.alg.raw(), &mut size)
            },
            "cusparseSpMV_bufferSize",
        )?;
        d.buffer = Some(DeviceBuffer::<u8>::zeroed(size.max(1))?);
        if self.alg == Algorithm::Alg1Preprocessed {
            let pre = api.preprocess.ok_or("this libcusparse has no cusparseSpMV_preprocess (needs 12.4+)")?;
            let buffer = buffer_ptr(&d.buffer);
            // SAFETY: as for the buffer size query; the buffer holds `size` bytes.
            api.check(
                unsafe { pre(self.cs.handle, self.op, alpha, d.mat, d.x, beta, d.y, vt, self.alg.raw(), buffer) },
                "cusparseSpMV_preprocess",
            )?;
        }
        Ok(())
    }
}

fn buffer_ptr(b: &Option<DeviceBuffer<u8>>) -> *mut c_void {
    b.as_ref().map_or(std::ptr::null_mut(), |b| b.as_device_ptr().as_mut_ptr().cast())
}

impl<T: Scalar> SpmvPlan<'_, T> {
    /// The index types cuSPARSE runs with: `"32I"`, `"64I offsets, 32I columns"`, `"64I"` or
    /// `"32I in row blocks"`.
    pub fn index_types(&self) -> &'static str {
        self.index_types
    }

    /// Number of `cusparseSpMV` calls per product (row blocks).
    pub fn parts(&self) -> usize {
        self.parts.len()
    }

    /// Bytes of the work buffers cuSPARSE asked for (`cusparseSpMV_bufferSize`), the 64-bit
    /// column copy and the blocks' offsets.
    pub fn buffer_bytes(&self) -> u64 {
        let buffers: usize = self.parts.iter().map(|d| d.buffer.as_ref().map_or(0, |b| b.len())).sum();
        let offsets: usize = self.block_offsets.iter().map(|b| 4 * b.len()).sum();
        (buffers + offsets + self.wide_cols.as_ref().map_or(0, |w| 8 * w.len())) as u64
    }

    /// Enqueues the plan's `cusparseSpMV` calls on the handle's stream.
    ///
    /// # Errors
    ///
    /// The status of `cusparseSpMV`, when it is not success.
    pub fn launch(&self) -> BenchResult<()> {
        let api = &self.cs.api;
        let (alpha, beta) = ((&self.alpha as *const T).cast(), (&self.beta as *const T).cast());
        for d in &self.parts {
            // SAFETY: the descriptors, buffer and scalars were set up in `add_part` and live
            // as long as `self`; the call only enqueues work on the bound stream.
            api.check(
                unsafe {
                    (api.spmv)(
                        self.cs.handle,
                        self.op,
                        alpha,
                        d.mat,
                        d.x,
                        beta,
                        d.y,
                        self.value_type,
                        self.alg.raw(),
                        buffer_ptr(&d.buffer),
                    )
                },
                "cusparseSpMV",
            )?;
        }
        Ok(())
    }
}

impl<T: Scalar> Drop for SpmvPlan<'_, T> {
    fn drop(&mut self) {
        let api = &self.cs.api;
        for d in &self.parts {
            // SAFETY: each descriptor was created in `add_part` (or is null: never created)
            // and is destroyed once.
            unsafe {
                if !d.y.is_null() {
                    (api.destroy_dn_vec)(d.y);
                }
                if !d.x.is_null() {
                    (api.destroy_dn_vec)(d.x);
                }
                if !d.mat.is_null() {
                    (api.destroy_sp_mat)(d.mat);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_blocks_hold_at_most_the_limit() {
        // rows of 3, 4, 0, 5, 2 entries; blocks of at most 7
        let off = [0u64, 3, 7, 7, 12, 14];
        assert_eq!(row_block_bounds(&off, 7), vec![0, 3, 5]);
        assert_eq!(row_block_bounds(&off, 100), vec![0, 5]);
        // a row longer than the limit is a block of its own
        assert_eq!(row_block_bounds(&off, 4), vec![0, 1, 3, 4, 5]);
        assert_eq!(row_block_bounds(&[0u64], 7), vec![0]);
    }

    #[test]
    fn algorithm_values_match_cusparse_h() {
        assert_eq!(Algorithm::Alg1.raw(), 2);
        assert_eq!(Algorithm::Alg1Preprocessed.raw(), 2);
        assert_eq!(Algorithm::Alg2.raw(), 3);
        assert_eq!((OPERATION_NON_TRANSPOSE, OPERATION_TRANSPOSE), (0, 1));
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
