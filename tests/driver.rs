//! The CUDA driver resolved at run time (`spgpu::gpu::driver`): through the installed driver
//! when there is one, and, in child processes that name another library in
//! `SPGPU_CUDA_DRIVER`, without a driver (a missing file) and with a library that is not
//! a driver (`libm.so.6`). The child tests are `#[ignore]`d and run only through their
//! parent test.

use std::ffi::{c_char, c_int, CStr};
use std::process::Command;
use std::sync::{Arc, Barrier};

use cust::sys::{self, CUdeviceptr, CUresult};
use spgpu::gpu::driver::{self, DEFAULT_DRIVER, DRIVER_ENV};
use spgpu::gpu::Context;

/// A driver library that does not exist.
const MISSING: &str = "/nonexistent/spgpu-test/libcuda.so.1";

/// Runs the ignored test `name` of this executable in a child process with
/// `SPGPU_CUDA_DRIVER=driver`, and fails with the child's output unless it passed.
fn run_child(name: &str, driver: &str) {
    let exe = std::env::current_exe().expect("the path of this test executable");
    let out = Command::new(&exe)
        .args([name, "--exact", "--ignored", "--test-threads=1", "--nocapture"])
        .env(DRIVER_ENV, driver)
        .env_remove("SPGPU_REQUIRE_GPU")
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child test {name} with {DRIVER_ENV}={driver} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

/// The text a `cuGetErrorString`/`cuGetErrorName`-like function stores for `code`.
fn text_of(f: unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult, code: CUresult) -> (CUresult, String) {
    let mut p: *const c_char = std::ptr::null();
    // SAFETY: p is valid for a write; the driver (or spgpu) stores a static string or null.
    let r = unsafe { f(code, &mut p) };
    let text = if p.is_null() {
        String::new()
    } else {
        // SAFETY: a non-null answer is a NUL-terminated static string.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    };
    (r, text)
}

/// The no-driver contract, checked on whatever `library()` reported as the reason.
fn check_without_driver(reason: &str) {
    // SAFETY (all calls below): each pointer passed is valid for the write the function
    // may make; without a driver none is written.
    unsafe {
        assert_eq!(sys::cuInit(0), CUresult::CUDA_ERROR_NO_DEVICE);
        let mut version: c_int = -7;
        assert_eq!(sys::cuDriverGetVersion(&mut version), CUresult::CUDA_ERROR_NOT_INITIALIZED);
        assert_eq!(version, -7, "a forwarder without a driver wrote its argument");
        let mut count: c_int = -7;
        assert_eq!(sys::cuDeviceGetCount(&mut count), CUresult::CUDA_ERROR_NOT_INITIALIZED);
        assert_eq!(count, -7);
        let mut ptr: CUdeviceptr = 12345;
        assert_eq!(sys::cuMemAlloc_v2(&mut ptr, 1024), CUresult::CUDA_ERROR_NOT_INITIALIZED);
        assert_eq!(ptr, 12345);
        assert_eq!(sys::cuStreamSynchronize(std::ptr::null_mut()), CUresult::CUDA_ERROR_NOT_INITIALIZED);
        assert_eq!(
            sys::cuGetErrorString(CUresult::CUDA_ERROR_NO_DEVICE, std::ptr::null_mut()),
            CUresult::CUDA_ERROR_INVALID_VALUE
        );
    }
    // The error texts still answer: cust formats every error through cuGetErrorString.
    assert_eq!(
        text_of(sys::cuGetErrorString, CUresult::CUDA_ERROR_NO_DEVICE),
        (CUresult::CUDA_SUCCESS, reason.to_string())
    );
    let (r, not_init) = text_of(sys::cuGetErrorString, CUresult::CUDA_ERROR_NOT_INITIALIZED);
    assert_eq!(r, CUresult::CUDA_SUCCESS);
    assert!(not_init.starts_with("the CUDA driver is not loaded ("), "{not_init}");
    assert_eq!(
        text_of(sys::cuGetErrorString, CUresult::CUDA_ERROR_OUT_OF_MEMORY),
        (CUresult::CUDA_SUCCESS, "CUDA_ERROR_OUT_OF_MEMORY".to_string())
    );
    assert_eq!(
        text_of(sys::cuGetErrorName, CUresult::CUDA_ERROR_INVALID_VALUE),
        (CUresult::CUDA_SUCCESS, "CUDA_ERROR_INVALID_VALUE".to_string())
    );
    assert_eq!(
        text_of(sys::cuGetErrorName, CUresult::CUDA_SUCCESS),
        (CUresult::CUDA_SUCCESS, "CUDA_SUCCESS".to_string())
    );

    // cust's own calls go through the forwarders: the message is spgpu's, not a driver's.
    let err = cust::init(cust::CudaFlags::empty()).expect_err("cust::init without a driver");
    assert_eq!(err, cust::error::CudaError::NoDevice);
    assert!(err.to_string().contains(reason), "cust's message {err} does not carry {reason:?}");
    // And spgpu falls back to Error::NoDevice, with the loader's reason.
    let e = Context::global().expect_err("a context without a driver");
    assert!(e.is_no_device(), "{e:?}");
    assert!(e.to_string().contains(reason), "{e}");
}

#[test]
#[ignore = "run in a child process by without_the_driver_library"]
fn child_without_driver() {
    assert_eq!(std::env::var(DRIVER_ENV).as_deref(), Ok(MISSING), "run through without_the_driver_library");
    // The first use from many threads at once: one load, the same answer for all.
    let barrier = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            // SAFETY: cuInit takes no pointer.
            std::thread::spawn(move || {
                barrier.wait();
                unsafe { sys::cuInit(0) }
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().expect("a thread calling cuInit"), CUresult::CUDA_ERROR_NO_DEVICE);
    }
    let e = driver::library().expect_err("no driver at a path that does not exist");
    assert!(e.is_no_device(), "{e:?}");
    let spgpu::Error::NoDevice { reason } = e else { unreachable!() };
    assert!(reason.starts_with("no CUDA driver ("), "{reason}");
    assert!(reason.contains(MISSING), "the reason should name the library: {reason}");
    check_without_driver(&reason);
}

#[test]
fn without_the_driver_library() {
    run_child("child_without_driver", MISSING);
}

#[test]
#[ignore = "run in a child process by with_a_library_that_is_not_a_driver"]
fn child_not_a_driver() {
    assert_eq!(
        std::env::var(DRIVER_ENV).as_deref(),
        Ok("libm.so.6"),
        "run through with_a_library_that_is_not_a_driver"
    );
    let e = driver::library().expect_err("libm is not a CUDA driver");
    let spgpu::Error::NoDevice { reason } = e else { panic!("expected Error::NoDevice, got {e:?}") };
    assert_eq!(reason, "no CUDA driver (libm.so.6 has no cuInit: not a CUDA driver library)");
    check_without_driver(&reason);
}

#[test]
fn with_a_library_that_is_not_a_driver() {
    run_child("child_not_a_driver", "libm.so.6");
}

/// Through the driver installed on this machine, if any: on a GPU host (and with
/// `SPGPU_REQUIRE_GPU=1`) the calls reach it; on a machine without one, the no-driver
/// contract holds in this process too.
#[test]
fn calls_reach_the_installed_driver() {
    let require_gpu = std::env::var("SPGPU_REQUIRE_GPU").as_deref() == Ok("1");
    match driver::library() {
        Ok(name) => {
            let expected = std::env::var(DRIVER_ENV).unwrap_or_else(|_| DEFAULT_DRIVER.to_string());
            assert_eq!(name, expected);
            let mut version: c_int = 0;
            // SAFETY: version is valid for a write.
            assert_eq!(unsafe { sys::cuDriverGetVersion(&mut version) }, CUresult::CUDA_SUCCESS);
            assert!(version >= 11000, "driver API version {version}");
            // The driver's own texts.
            assert_eq!(text_of(sys::cuGetErrorName, CUresult::CUDA_ERROR_NO_DEVICE).1, "CUDA_ERROR_NO_DEVICE");
            // SAFETY: cuInit takes no pointer.
            let init = unsafe { sys::cuInit(0) };
            if require_gpu {
                assert_eq!(init, CUresult::CUDA_SUCCESS, "SPGPU_REQUIRE_GPU=1 but cuInit failed");
                let mut count: c_int = 0;
                // SAFETY: count is valid for a write.
                assert_eq!(unsafe { sys::cuDeviceGetCount(&mut count) }, CUresult::CUDA_SUCCESS);
                assert!(count >= 1, "{count} devices");
            } else {
                assert!(matches!(init, CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_NO_DEVICE), "cuInit: {init:?}");
            }
            println!("driver {name}, API version {version}, cuInit: {init:?}");
        }
        Err(e) => {
            assert!(!require_gpu, "SPGPU_REQUIRE_GPU=1 but no driver: {e}");
            let spgpu::Error::NoDevice { reason } = e else { panic!("expected Error::NoDevice, got {e:?}") };
            println!("no driver here: {reason}");
            check_without_driver(&reason);
        }
    }
}
