//! Compiles every `ptx/<stem>.cu` to `$OUT_DIR/<stem>.ptx`.
//!
//! With nvcc (from `$NVCC`, `$CUDA_PATH/bin/nvcc`, or `PATH`) each source is compiled with
//! `nvcc -ptx -O3 -arch=<arch>`, where `<arch>` is `$SPGPU_PTX_ARCH` or `compute_70`; a
//! compile error fails the build and shows the command and nvcc's own messages. Without
//! nvcc, the committed `ptx/<stem>.ptx` (made by `ptx/regen.sh`) is copied instead, with a
//! `cargo:warning`. The source tree is never written to.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The default virtual architecture: portable to every GPU from Volta on.
const DEFAULT_ARCH: &str = "compute_70";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=ptx");
    for var in ["NVCC", "CUDA_PATH", "SPGPU_PTX_ARCH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let ptx_dir = manifest.join("ptx");

    let mut sources = Vec::new();
    let entries = fs::read_dir(&ptx_dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", ptx_dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", ptx_dir.display())).path();
        println!("cargo:rerun-if-changed={}", path.display());
        if path.extension().is_some_and(|e| e == "cu") {
            sources.push(path);
        }
    }
    sources.sort();

    let arch = env::var("SPGPU_PTX_ARCH").unwrap_or_else(|_| DEFAULT_ARCH.to_string());
    let nvcc = find_nvcc();
    if nvcc.is_none() {
        println!("cargo:warning=nvcc not found (set NVCC or CUDA_PATH to use one): using the committed PTX in ptx/");
    }
    for cu in &sources {
        let stem = cu.file_stem().and_then(|s| s.to_str()).expect("a .cu file name is UTF-8");
        let dest = out_dir.join(format!("{stem}.ptx"));
        match &nvcc {
            Some(nvcc) => compile(nvcc, &arch, cu, &dest),
            None => {
                let committed = ptx_dir.join(format!("{stem}.ptx"));
                fs::copy(&committed, &dest).unwrap_or_else(|e| {
                    panic!(
                        "no nvcc and no committed PTX for {}: {e}; install nvcc, or run ptx/regen.sh \
                         on a machine that has it and commit ptx/{stem}.ptx",
                        cu.display()
                    )
                });
            }
        }
    }
}

/// Compiles one source with nvcc, failing the build with nvcc's messages on error.
fn compile(nvcc: &Path, arch: &str, cu: &Path, dest: &Path) {
    let mut cmd = Command::new(nvcc);
    cmd.arg("-ptx").arg("-O3").arg(format!("-arch={arch}")).arg("-o").arg(dest).arg(cu);
    let output = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if !output.status.success() {
        panic!(
            "nvcc failed ({}):\n  {cmd:?}\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// nvcc from `$NVCC`, `$CUDA_PATH/bin/nvcc`, or the first `nvcc` on `PATH`.
fn find_nvcc() -> Option<PathBuf> {
    if let Some(path) = env::var_os("NVCC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    if let Some(cuda) = env::var_os("CUDA_PATH") {
        let candidate = Path::new(&cuda).join("bin").join("nvcc");
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    env::split_paths(&env::var_os("PATH")?).map(|dir| dir.join("nvcc")).find(|p| p.is_file())
}
