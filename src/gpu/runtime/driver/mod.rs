//! The CUDA driver API, resolved at run time: spgpu builds and starts without the driver.
//!
//! [`cust`] calls the driver API (`cuInit`, `cuMemAlloc_v2`, ...) through the `extern "C"`
//! declarations of its sys crate, `cust_raw` (re-exported as [`cust::sys`]), and its build
//! script asks the linker for `-lcuda`. spgpu defines every one of those functions itself,
//! as a forwarder with the same name and signature (`#[no_mangle] extern "C"`), so the
//! linker resolves cust's calls, and any `cust::sys` call in spgpu, to spgpu's definitions
//! and never needs `libcuda.so`: an executable that uses spgpu lists no `libcuda` among the
//! libraries it needs (`readelf -d`) and starts on a machine with no NVIDIA software.
//! `build.rs` gives the linker an empty placeholder `libcuda.a` to satisfy cust's `-lcuda`
//! when no `libcuda.so` is installed.
//!
//! The first call of any forwarder opens the driver library, `libcuda.so.1` (or the file
//! named by [`DRIVER_ENV`]), once per process and thread-safely, and resolves every
//! function by name; each forwarder then calls the driver's function of the same name.
//! When the library cannot be opened (no NVIDIA driver) or is not a CUDA driver (it has no
//! `cuInit`):
//!
//! - `cuInit` returns `CUDA_ERROR_NO_DEVICE`, which [`Error::cuda`] turns into
//!   [`Error::NoDevice`] (so the CPU fallbacks of spgpu's callers follow);
//! - `cuGetErrorString` and `cuGetErrorName` still answer, because cust formats every
//!   error through `cuGetErrorString` (a failure there would panic while formatting): the
//!   string of `CUDA_ERROR_NO_DEVICE` and of `CUDA_ERROR_NOT_INITIALIZED` says why the driver
//!   is missing, that of any other code is its name;
//! - every other function returns `CUDA_ERROR_NOT_INITIALIZED` and touches none of its
//!   arguments.
//!
//! A driver that lacks one function (one older than cust's bindings) makes only that
//! forwarder return `CUDA_ERROR_NOT_FOUND`.
//!
//! # With another library that uses the driver
//!
//! A program may also contain code that links the driver itself (`-lcuda`, for example C
//! code or another CUDA crate). The executable's definitions win over those of a shared
//! library, so every call to one of these functions, wherever it comes from, goes through
//! spgpu's forwarder to the one driver instance in the process: `libcuda.so.1` is loaded
//! once whether it came as a dependency or through `dlopen`, and `dlopen` of a loaded
//! library returns it, so contexts, streams and memory are shared as usual. Functions that
//! cust's bindings do not declare (newer ones) resolve to `libcuda.so` directly; such a
//! program then needs `libcuda.so` to link, as it did before. The forwarders look
//! functions up only through the handle of the library they opened (`dlsym(handle, name)`,
//! which searches that library and its dependencies), never with `RTLD_DEFAULT` or
//! `RTLD_NEXT`: those could find the forwarder itself and recurse forever.
//!
//! # Example
//!
//! ```
//! match spgpu::gpu::driver::library() {
//!     Ok(name) => println!("CUDA driver: {name}"),
//!     Err(e) => println!("no CUDA driver: {e}"), // Error::NoDevice; the CPU still works
//! }
//! ```

use std::ffi::{c_char, CString, OsString};
use std::sync::OnceLock;

use cust::sys::CUresult;
use libloading::Library;

use crate::{Error, Result};

/// The environment variable that names the driver library to open instead of
/// [`DEFAULT_DRIVER`] (a file name searched like `dlopen` does, or a path). It is read once,
/// at the first driver call.
pub const DRIVER_ENV: &str = "SPGPU_CUDA_DRIVER";

/// The driver library opened by default: the name under which every NVIDIA driver installs
/// it (the CUDA runtime opens the same name).
pub const DEFAULT_DRIVER: &str = if cfg!(windows) { "nvcuda.dll" } else { "libcuda.so.1" };

/// The CUDA driver library spgpu opened: its name as given to `dlopen` ([`DEFAULT_DRIVER`],
/// or the value of [`DRIVER_ENV`]). The first call opens it, unless a driver call already
/// did.
///
/// # Errors
///
/// [`Error::NoDevice`] when the library cannot be opened (no NVIDIA driver is installed) or
/// has no `cuInit`; its reason carries the loader's message. The result is the same for
/// the whole process.
pub fn library() -> Result<&'static str> {
    match driver() {
        Ok(driver) => Ok(&driver.name),
        Err(missing) => Err(Error::NoDevice { reason: missing.reason.clone() }),
    }
}

/// The names of every driver function spgpu forwards (all that `cust::sys` declares).
#[doc(hidden)]
pub fn forwarded_functions() -> &'static [&'static str] {
    forwarders::FORWARDED
}

/// The opened driver library and the address of every function it has.
struct Driver {
    name: String,
    functions: forwarders::Functions,
    // Kept open for the life of the process: the addresses above point into it.
    _library: Library,
}

/// Why no driver could be loaded, and the texts `cuGetErrorString` gives for the two codes
/// the forwarders then return.
struct Missing {
    reason: String,
    no_device: CString,
    not_initialized: CString,
}

impl Missing {
    fn new(cause: String) -> Self {
        let c_string = |s: String| CString::new(s.replace('\0', " ")).expect("NUL bytes were replaced");
        Missing {
            no_device: c_string(format!("no CUDA driver ({cause})")),
            not_initialized: c_string(format!("the CUDA driver is not loaded ({cause})")),
            reason: format!("no CUDA driver ({cause})"),
        }
    }

    /// `cuGetErrorString` without a driver.
    ///
    /// # Safety
    ///
    /// `p_str` is null or valid for a write.
    unsafe fn error_string(&self, error: CUresult, p_str: *mut *const c_char) -> CUresult {
        let text = match error {
            CUresult::CUDA_ERROR_NO_DEVICE => Some(self.no_device.as_ptr()),
            CUresult::CUDA_ERROR_NOT_INITIALIZED => Some(self.not_initialized.as_ptr()),
            _ => error_name(error),
        };
        // SAFETY: the caller's contract.
        unsafe { answer(text, p_str) }
    }
}

/// `cuGetErrorName` without a driver.
///
/// # Safety
///
/// `p_str` is null or valid for a write.
unsafe fn error_name_without_driver(error: CUresult, p_str: *mut *const c_char) -> CUresult {
    // SAFETY: the caller's contract.
    unsafe { answer(error_name(error), p_str) }
}

/// Stores a static string for `cuGetErrorString`/`cuGetErrorName` the way the driver does:
/// an unknown code stores null and returns `CUDA_ERROR_INVALID_VALUE`.
///
/// # Safety
///
/// `p_str` is null or valid for a write.
unsafe fn answer(text: Option<*const c_char>, p_str: *mut *const c_char) -> CUresult {
    if p_str.is_null() {
        return CUresult::CUDA_ERROR_INVALID_VALUE;
    }
    // SAFETY: p_str is not null, and valid for a write by the caller's contract.
    unsafe { *p_str = text.unwrap_or(std::ptr::null()) };
    if text.is_some() {
        CUresult::CUDA_SUCCESS
    } else {
        CUresult::CUDA_ERROR_INVALID_VALUE
    }
}

/// The name of an error code as a NUL-terminated static string (`CUDA_ERROR_NO_DEVICE`).
fn error_name(error: CUresult) -> Option<*const c_char> {
    forwarders::ERROR_NAMES.iter().find(|(code, _)| *code == error).map(|(_, name)| name.as_ptr().cast())
}

static DRIVER: OnceLock<std::result::Result<Driver, Missing>> = OnceLock::new();

/// The driver, opened on the first call (from any thread; the others wait for it).
fn driver() -> std::result::Result<&'static Driver, &'static Missing> {
    DRIVER.get_or_init(load).as_ref()
}

fn load() -> std::result::Result<Driver, Missing> {
    let name: OsString =
        std::env::var_os(DRIVER_ENV).filter(|s| !s.is_empty()).unwrap_or_else(|| DEFAULT_DRIVER.into());
    let shown = name.to_string_lossy().into_owned();
    // SAFETY: opening a library runs its initialisers. Those of the CUDA driver are made to
    // run from any thread at any time (the CUDA runtime opens it the same way); a library
    // named by the user through DRIVER_ENV is the user's choice.
    let library = unsafe { Library::new(&name) }.map_err(|e| Missing::new(e.to_string()))?;
    let functions = forwarders::Functions::resolve(&library);
    if !functions.has_init() {
        return Err(Missing::new(format!("{shown} has no cuInit: not a CUDA driver library")));
    }
    Ok(Driver { name: shown, functions, _library: library })
}

/// Declares the forwarders, from the list that `forwarders.rs` (generated from cust_raw's
/// bindings) gives: for each function, a `#[no_mangle] extern "C"` definition and a slot in
/// [`Functions`](forwarders::Functions).
///
/// Each forwarder has the exact signature of cust_raw's declaration, with cust_raw's types,
/// rather than being a signature-free assembly trampoline: the compiler checks every
/// signature against `cust::sys` (the `const` below fails to compile when one differs), the
/// code is portable Rust, and an absent driver is handled in Rust per function.
macro_rules! forwarders {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty;)*) => {
        /// The address of every driver function, resolved by name from the driver library;
        /// `None` for a function the driver does not have.
        pub(super) struct Functions {
            $($name: Option<unsafe extern "C" fn($($ty),*) -> $ret>,)*
        }

        impl Functions {
            /// Looks every function up in `library` (through its handle only).
            pub(super) fn resolve(library: &libloading::Library) -> Self {
                Functions {
                    $($name: {
                        // SAFETY: the symbol of this name in the CUDA driver is the function that
                        // cuda.h declares, which cust_raw binds with exactly this signature.
                        let symbol = unsafe {
                            library.get::<unsafe extern "C" fn($($ty),*) -> $ret>(concat!(stringify!($name), "\0").as_bytes())
                        };
                        symbol.ok().map(|f| *f)
                    },)*
                }
            }

            /// Whether the library has `cuInit`, the one function every CUDA driver has.
            pub(super) fn has_init(&self) -> bool {
                self.cuInit.is_some()
            }
        }

        /// The name of every forwarded function.
        pub(super) const FORWARDED: &[&str] = &[$(stringify!($name)),*];

        // Fails to compile when a forwarder's signature is not exactly that of cust_raw's
        // declaration of the same name.
        const _: () = {
            $(let _: unsafe extern "C" fn($($ty),*) -> $ret = cust::sys::$name;)*
        };

        $(
            /// Forwards to the CUDA driver's function of the same name (see the module docs).
            #[no_mangle]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
                match super::driver() {
                    Ok(driver) => match driver.functions.$name {
                        // SAFETY: the driver's own function, with its own signature (see
                        // `resolve`); the caller upholds the driver's contract for it.
                        Some(f) => unsafe { f($($arg),*) },
                        None => CUresult::CUDA_ERROR_NOT_FOUND,
                    },
                    Err(missing) => without_driver!($name, missing, ($($arg),*)),
                }
            }
        )*
    };
}

/// What a forwarder returns when there is no driver: `cuInit` reports no device, the two
/// error-text functions answer from spgpu's own table, every other function is not
/// initialized.
macro_rules! without_driver {
    (cuInit, $missing:ident, $args:tt) => {{
        let _ = $missing;
        CUresult::CUDA_ERROR_NO_DEVICE
    }};
    (cuGetErrorString, $missing:ident, ($error:ident, $p_str:ident)) => {
        // SAFETY: the caller passes a pointer valid for a write (or null), as the driver requires.
        unsafe { $missing.error_string($error, $p_str) }
    };
    (cuGetErrorName, $missing:ident, ($error:ident, $p_str:ident)) => {{
        let _ = $missing;
        // SAFETY: as for cuGetErrorString.
        unsafe { super::error_name_without_driver($error, $p_str) }
    }};
    ($name:ident, $missing:ident, $args:tt) => {{
        let _ = $missing;
        CUresult::CUDA_ERROR_NOT_INITIALIZED
    }};
}

/// Every `CUresult` that cust_raw's bindings declare (the generated list of `forwarders.rs`).
pub(crate) fn cu_results() -> impl Iterator<Item = CUresult> {
    forwarders::ERROR_NAMES.iter().map(|&(code, _)| code)
}

/// Declares `ERROR_NAMES`: every error code of cust_raw's `CUresult` with its name as a
/// NUL-terminated string.
macro_rules! error_names {
    ($($code:ident,)*) => {
        /// Every `CUresult` code and its name, NUL-terminated.
        pub(super) const ERROR_NAMES: &[(CUresult, &str)] = &[$((CUresult::$code, concat!(stringify!($code), "\0")),)*];
    };
}

// The forwarders are the driver's own C names and signatures (camelCase functions and
// parameters, up to 11 arguments); their contract is the driver's, documented in cuda.h.
#[allow(non_snake_case, clippy::too_many_arguments, clippy::missing_safety_doc)]
mod forwarders;
