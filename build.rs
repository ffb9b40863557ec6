//! Compiles every `ptx/<stem>.cu` to `$OUT_DIR/<stem>.ptx` and `$OUT_DIR/<stem>.sm80.ptx`
//! (the variant GPUs from Ampere on load; see `ptx/regen.sh`).
//!
//! With nvcc (from `$NVCC`, `$CUDA_PATH/bin/nvcc`, or `PATH`) each source is compiled with
//! `nvcc -ptx -O3 -arch=<arch>`, where `<arch>` is `$SPGPU_PTX_ARCH` or `compute_70` for the
//! first (`$SPGPU_PTX_ARCH` changes only this one) and `compute_80` for the second; a
//! compile error fails the build and shows the command and nvcc's own messages. An nvcc too
//! old for `compute_80` (before CUDA 11.0) gets a `cargo:warning`, and the second variant is
//! then a copy of the first (valid on those GPUs too, without what needs `compute_80`).
//! Without nvcc, the committed `ptx/<stem>.ptx` and `ptx/<stem>.sm80.ptx` (made by
//! `ptx/regen.sh`) are copied instead, with a `cargo:warning`. The source tree is never
//! written to.
//!
//! It also lets the crate link without the CUDA driver: cust's build script asks the
//! linker for `-lcuda`, but spgpu defines every driver function itself and opens the
//! driver at run time (`src/gpu/runtime/driver`). When no `libcuda.so` is where the linker looks,
//! an empty `libcuda.a` in `$OUT_DIR/nodriver` stands in for it (see [`placeholder_driver`]).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The default virtual architecture: portable to every GPU from Volta on.
const DEFAULT_ARCH: &str = "compute_70";

/// The virtual architecture of the second variant, `<stem>.sm80.ptx`, for GPUs from Ampere on.
const AMPERE_ARCH: &str = "compute_80";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=ptx");
    for var in ["NVCC", "CUDA_PATH", "SPGPU_PTX_ARCH", "CUDA_LIBRARY_PATH", "LIBRARY_PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    placeholder_driver(&out_dir);
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
    let ampere = nvcc.as_deref().is_some_and(supports_ampere);
    if nvcc.is_some() && !ampere {
        println!(
            "cargo:warning=nvcc cannot compile for {AMPERE_ARCH}: the PTX for GPUs from Ampere on is the {arch} PTX"
        );
    }
    for cu in &sources {
        let stem = cu.file_stem().and_then(|s| s.to_str()).expect("a .cu file name is UTF-8");
        for (arch, file) in [(arch.as_str(), format!("{stem}.ptx")), (AMPERE_ARCH, format!("{stem}.sm80.ptx"))] {
            let dest = out_dir.join(&file);
            match &nvcc {
                Some(_) if arch == AMPERE_ARCH && !ampere => {
                    let first = out_dir.join(format!("{stem}.ptx"));
                    fs::copy(&first, &dest).unwrap_or_else(|e| panic!("cannot copy {}: {e}", first.display()));
                }
                Some(nvcc) => compile(nvcc, arch, cu, &dest),
                None => {
                    let committed = ptx_dir.join(&file);
                    fs::copy(&committed, &dest).unwrap_or_else(|e| {
                        panic!(
                            "no nvcc and no committed ptx/{file} for {}: {e}; install nvcc, or run \
                             ptx/regen.sh on a machine that has it and commit ptx/{file}",
                            cu.display()
                        )
                    });
                }
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

/// Whether nvcc knows the virtual architecture [`AMPERE_ARCH`] (CUDA 11.0 and newer):
/// `nvcc --list-gpu-arch` names it.
fn supports_ampere(nvcc: &Path) -> bool {
    Command::new(nvcc).arg("--list-gpu-arch").output().is_ok_and(|o| {
        o.status.success() && String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == AMPERE_ARCH)
    })
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

/// Puts an empty static archive `libcuda.a` on the link path when the linker would find no
/// `libcuda.so`, so that cust's `-lcuda` resolves to nothing and spgpu's own definitions of
/// the driver functions are used (they open the driver at run time).
///
/// When a `libcuda.so` is found nothing is added: that library then satisfies `-lcuda`
/// (spgpu's definitions still win, so the executable does not need it at run time), and
/// other code in the same program that links the driver for functions spgpu does not
/// define keeps working. The file found is watched, so that the build script runs again
/// (and adds the placeholder) if it disappears.
fn placeholder_driver(out_dir: &Path) {
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "windows" || target_os == "macos" {
        return;
    }
    if let Some(found) = driver_library_dirs().iter().map(|d| d.join("libcuda.so")).find(|p| p.is_file()) {
        println!("cargo:rerun-if-changed={}", found.display());
        return;
    }
    let dir = out_dir.join("nodriver");
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    // An archive with no members: the global header alone.
    let archive = dir.join("libcuda.a");
    fs::write(&archive, b"!<arch>\n").unwrap_or_else(|e| panic!("cannot write {}: {e}", archive.display()));
    println!("cargo:rustc-link-search=native={}", dir.display());
}

/// The folders where the linker looks for `-lcuda`: those cust's build script adds (from
/// `CUDA_LIBRARY_PATH` and the usual toolkit folders), `LIBRARY_PATH`, and the system's.
fn driver_library_dirs() -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> =
        env::var_os("CUDA_LIBRARY_PATH").map(|p| env::split_paths(&p).collect()).unwrap_or_default();
    bases.extend(["/opt/cuda", "/usr/local/cuda"].map(PathBuf::from));
    if let Ok(entries) = fs::read_dir("/usr/local") {
        bases.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("cuda-"))),
        );
    }
    let mut dirs = Vec::new();
    for base in bases {
        for sub in ["lib64", "lib64/stubs", "targets/x86_64-linux/lib", "targets/x86_64-linux/lib/stubs"] {
            dirs.push(base.join(sub));
        }
    }
    dirs.extend(env::var_os("LIBRARY_PATH").map(|p| env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default());
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    for prefix in ["/usr/lib", "/lib"] {
        dirs.push(PathBuf::from(format!("{prefix}/{arch}-linux-gnu")));
        dirs.push(PathBuf::from(format!("{prefix}64")));
        dirs.push(PathBuf::from(prefix));
    }
    dirs
}
