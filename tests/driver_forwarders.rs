//! The driver forwarders (`src/gpu/runtime/driver/forwarders.rs`) against cust_raw's bindings.
//!
//! This file is also the generator of `forwarders.rs`: it reads cust_raw's `src/cuda.rs`
//! (found with `cargo metadata`), renders every `extern "C"` function and every `CUresult`
//! code, and compares the text with the committed file. After an update of cust:
//!
//! ```sh
//! SPGPU_REGENERATE=1 cargo test --test driver_forwarders   # rewrites forwarders.rs
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The generated file, relative to the crate root.
const GENERATED: &str = "src/gpu/runtime/driver/forwarders.rs";

/// One function of cust_raw's bindings.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    params: Vec<String>,
    ret: String,
}

fn crate_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// The host's target triple, from `rustc -vV` (`$RUSTC`, else `rustc`).
fn host_triple() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc).arg("-vV").output().unwrap_or_else(|e| panic!("running {rustc:?} -vV: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap_or_else(|| panic!("no host line in rustc -vV: {text}"))
        .trim()
        .to_string()
}

/// cust_raw's version and the path of its `src/cuda.rs`, from `cargo metadata`; `None` (with
/// a printed line) when the test does not run under cargo (a staged executable on a GPU host).
fn cust_raw_bindings() -> Option<(String, PathBuf)> {
    let Some(cargo) = std::env::var_os("CARGO") else {
        let line = "skipped: not run by cargo (CARGO is not set), so cust_raw's sources cannot be found\n";
        std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes()).ok();
        return None;
    };
    // Only this platform's packages: a fresh machine's cargo has downloaded no others, and
    // --offline then fails on the first of them (anstyle-wincon, a Windows-only dependency).
    let host = host_triple();
    let out = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--offline", "--filter-platform", &host])
        .current_dir(crate_root())
        .output()
        .unwrap_or_else(|e| panic!("running {cargo:?} metadata: {e}"));
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = meta["packages"].as_array().expect("cargo metadata lists packages");
    let found: Vec<_> = packages.iter().filter(|p| p["name"] == "cust_raw").collect();
    assert_eq!(found.len(), 1, "expected one cust_raw package in the dependency graph, found {}", found.len());
    let manifest = Path::new(found[0]["manifest_path"].as_str().expect("a manifest path"));
    let version = found[0]["version"].as_str().expect("a version").to_string();
    Some((version, manifest.parent().expect("the manifest is in a folder").join("src/cuda.rs")))
}

/// Collapses runs of whitespace to one space.
fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Splits at commas outside brackets.
fn split_top_level(s: &str) -> Vec<String> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '<' | '[' => depth += 1,
            ')' | '>' | ']' if !s[..i].ends_with('-') => depth -= 1,
            ',' if depth == 0 => {
                parts.push(squeeze(&s[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(squeeze(&s[start..]));
    parts.retain(|p| !p.is_empty());
    parts
}

/// Every function declared in an `extern "C" { ... }` block of bindgen's output.
fn parse_functions(src: &str) -> Vec<Function> {
    const OPEN: &str = "extern \"C\" {";
    let mut functions = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find(OPEN) {
        let block = &rest[i + OPEN.len()..];
        let end = block.find("\n}").expect("an extern block ends with a closing brace on its own line");
        for decl in block[..end].split(';').map(squeeze).filter(|d| !d.is_empty()) {
            let sig = decl.strip_prefix("pub fn ").unwrap_or_else(|| panic!("not a function declaration: {decl}"));
            let open = sig.find('(').unwrap_or_else(|| panic!("no parameter list: {decl}"));
            let close = sig.rfind(')').unwrap_or_else(|| panic!("no parameter list: {decl}"));
            let ret = sig[close + 1..].trim().strip_prefix("->").map_or("()", str::trim).to_string();
            assert!(!sig[open..close].contains("..."), "a variadic function cannot be forwarded: {decl}");
            functions.push(Function {
                name: sig[..open].trim().to_string(),
                params: split_top_level(&sig[open + 1..close]),
                ret,
            });
        }
        rest = &block[end..];
    }
    functions
}

/// Every variant of `enum cudaError_enum` (`CUresult`).
fn parse_error_codes(src: &str) -> Vec<String> {
    const OPEN: &str = "pub enum cudaError_enum {";
    let start = src.find(OPEN).expect("cust_raw declares enum cudaError_enum") + OPEN.len();
    let body = &src[start..start + src[start..].find('}').expect("the enum ends")];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| l.split('=').next().expect("a variant").trim().to_string())
        .collect()
}

fn render(version: &str, functions: &[Function], codes: &[String]) -> String {
    let mut out = format!(
        "//! The driver functions spgpu forwards: every function that cust_raw {version} declares (in\n\
         //! its `src/cuda.rs`), with cust_raw's signature, and every code of its `CUresult`.\n\
         //!\n\
         //! GENERATED by `tests/driver_forwarders.rs`; do not edit. After an update of cust:\n\
         //! `SPGPU_REGENERATE=1 cargo test --test driver_forwarders`.\n\
         \n\
         use cust::sys::*;\n\
         \n\
         forwarders! {{\n"
    );
    for f in functions {
        out += &format!("    fn {}({}) -> {};\n", f.name, f.params.join(", "), f.ret);
    }
    out += "}\n\nerror_names! {\n";
    for code in codes {
        out += &format!("    {code},\n");
    }
    out += "}\n";
    out
}

#[test]
fn every_cust_raw_function_has_a_forwarder() {
    let Some((version, bindings)) = cust_raw_bindings() else { return };
    let src = std::fs::read_to_string(&bindings).unwrap_or_else(|e| panic!("reading {}: {e}", bindings.display()));
    let functions = parse_functions(&src);
    let codes = parse_error_codes(&src);
    assert!(functions.len() > 300, "only {} functions parsed from {}", functions.len(), bindings.display());
    assert!(codes.len() > 80, "only {} error codes parsed from {}", codes.len(), bindings.display());
    for f in &functions {
        assert_eq!(f.ret, "CUresult", "{} returns {}, not CUresult", f.name, f.ret);
    }

    let expected = render(&version, &functions, &codes);
    let path = crate_root().join(GENERATED);
    if std::env::var("SPGPU_REGENERATE").as_deref() == Ok("1") {
        std::fs::write(&path, &expected).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        println!("regenerated {} from {}", path.display(), bindings.display());
    }

    let declared: BTreeSet<&str> = functions.iter().map(|f| f.name.as_str()).collect();
    let forwarded: BTreeSet<&str> = spgpu::gpu::driver::forwarded_functions().iter().copied().collect();
    let missing: Vec<_> = declared.difference(&forwarded).collect();
    let extra: Vec<_> = forwarded.difference(&declared).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "cust_raw {version} ({}) and the forwarders differ: {} functions have no forwarder (first: {:?}); {} \
         forwarders are of undeclared functions (first: {:?}). Run SPGPU_REGENERATE=1 cargo test --test \
         driver_forwarders",
        bindings.display(),
        missing.len(),
        &missing[..missing.len().min(10)],
        extra.len(),
        &extra[..extra.len().min(10)],
    );
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let stale = committed.lines().zip(expected.lines()).position(|(a, b)| a != b);
    assert!(
        committed == expected,
        "{GENERATED} is not what cust_raw {version} gives (first differing line: {:?}). Run \
         SPGPU_REGENERATE=1 cargo test --test driver_forwarders",
        stale.map(|i| i + 1)
    );
}

#[test]
fn parses_bindgen_declarations() {
    let src = "extern \"C\" {\n    pub fn cuInit(Flags: ::std::os::raw::c_uint) -> CUresult;\n}\n\
               pub type CUhostFn = ::std::option::Option<unsafe extern \"C\" fn(userData: *mut c_void)>;\n\
               extern \"C\" {\n    pub fn cuMemcpyHtoDAsync_v2(\n        dstDevice: CUdeviceptr,\n        \
               srcHost: *const ::std::os::raw::c_void,\n        ByteCount: usize,\n        hStream: CUstream,\n    \
               ) -> CUresult;\n}\n\
               pub enum cudaError_enum {\n    CUDA_SUCCESS = 0,\n    CUDA_ERROR_INVALID_VALUE = 1,\n}\n";
    let functions = parse_functions(src);
    assert_eq!(
        functions,
        [
            Function {
                name: "cuInit".into(),
                params: vec!["Flags: ::std::os::raw::c_uint".into()],
                ret: "CUresult".into()
            },
            Function {
                name: "cuMemcpyHtoDAsync_v2".into(),
                params: vec![
                    "dstDevice: CUdeviceptr".into(),
                    "srcHost: *const ::std::os::raw::c_void".into(),
                    "ByteCount: usize".into(),
                    "hStream: CUstream".into()
                ],
                ret: "CUresult".into()
            },
        ]
    );
    assert_eq!(parse_error_codes(src), ["CUDA_SUCCESS", "CUDA_ERROR_INVALID_VALUE"]);
    assert_eq!(
        split_top_level("f: Option<unsafe extern \"C\" fn(a: u32, b: u32) -> u32>, n: usize"),
        ["f: Option<unsafe extern \"C\" fn(a: u32, b: u32) -> u32>", "n: usize"]
    );
}

/// The driver functions spgpu and its users call through `cust::sys` are forwarded, under
/// the names the driver exports (the `_v2` ones where cuda.h maps a name to one). Runs
/// everywhere, staged executables included.
#[test]
fn forwards_the_functions_spgpu_uses() {
    let forwarded = spgpu::gpu::driver::forwarded_functions();
    for name in [
        "cuInit",
        "cuDriverGetVersion",
        "cuDeviceGet",
        "cuDeviceGetAttribute",
        "cuGetErrorName",
        "cuGetErrorString",
        "cuCtxCreate_v2",
        "cuDevicePrimaryCtxRetain",
        "cuModuleLoadData",
        "cuModuleGetFunction",
        "cuLaunchKernel",
        "cuMemAlloc_v2",
        "cuMemFree_v2",
        "cuMemAllocHost_v2",
        "cuMemFreeHost",
        "cuMemAllocAsync",
        "cuMemFreeAsync",
        "cuMemcpyHtoD_v2",
        "cuMemcpyDtoH_v2",
        "cuMemcpyHtoDAsync_v2",
        "cuMemcpyDtoHAsync_v2",
        "cuMemGetInfo_v2",
        "cuStreamCreate",
        "cuStreamGetFlags",
        "cuStreamSynchronize",
        "cuStreamBeginCapture_v2",
        "cuStreamEndCapture",
        "cuStreamIsCapturing",
        "cuStreamGetCaptureInfo",
        "cuStreamGetCaptureInfo_v2",
        "cuGraphInstantiate_v2",
        "cuGraphLaunch",
        "cuGraphExecDestroy",
        "cuGraphDestroy",
        "cuEventCreate",
        "cuEventRecord",
        "cuEventElapsedTime",
    ] {
        assert!(forwarded.contains(&name), "{name} is not forwarded");
    }
    assert!(!forwarded.contains(&"cuMemAlloc"), "cuda.h maps cuMemAlloc to cuMemAlloc_v2; cust_raw binds the latter");
}
