//! Host-only checks of the committed PTX (`ptx/<stem>.ptx` and `ptx/<stem>.sm80.ptx`): it is
//! not stale, it is portable, and it holds every kernel the Rust side can name.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use spgpu::gpu::{all_kernel_names, ModuleId};

const HASH_PREFIX: &str = "// spgpu-source-sha256: ";

fn ptx_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ptx")
}

/// The stems of every `ptx/*.cu`.
fn sources() -> Vec<String> {
    let mut stems: Vec<String> = fs::read_dir(ptx_dir())
        .expect("ptx/ is listable")
        .map(|e| e.expect("ptx/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_string())
        .collect();
    stems.sort();
    stems
}

/// The quoted `#include "NAME"` targets of a source, each once, in order of appearance.
fn quoted_includes(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix('#') else { continue };
        let Some(rest) = rest.trim_start().strip_prefix("include") else { continue };
        let rest = rest.trim_start();
        if let Some(name) = rest.strip_prefix('"').and_then(|r| r.split('"').next()) {
            if !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The source hash by the rule of `ptx/regen.sh`: SHA-256 of `<stem>.cu` followed by each of
/// its quoted includes.
fn source_hash(stem: &str) -> String {
    let cu = fs::read(ptx_dir().join(format!("{stem}.cu"))).unwrap();
    let mut h = Sha256::new();
    h.update(&cu);
    for inc in quoted_includes(&String::from_utf8_lossy(&cu)) {
        let bytes = fs::read(ptx_dir().join(&inc)).unwrap_or_else(|e| panic!("{stem}.cu includes {inc}: {e}"));
        h.update(&bytes);
    }
    format!("{:x}", h.finalize())
}

/// The committed PTX files of a source: `<stem>.ptx` (compute_70) and `<stem>.sm80.ptx`
/// (compute_80), with the highest `sm_NN` target each may have.
fn variants(stem: &str) -> [(String, u32); 2] {
    [(format!("{stem}.ptx"), 70), (format!("{stem}.sm80.ptx"), 80)]
}

fn committed(file: &str) -> String {
    fs::read_to_string(ptx_dir().join(file))
        .unwrap_or_else(|e| panic!("ptx/{file} is missing ({e}): run ptx/regen.sh and commit it"))
}

/// The `.entry` names of a PTX text.
fn entries(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.strip_prefix(".visible .entry ").or_else(|| l.strip_prefix(".entry "))?;
            Some(rest.split('(').next().unwrap().trim().to_string())
        })
        .collect()
}

#[test]
fn there_is_a_source_for_every_module() {
    let stems = sources();
    for m in ModuleId::ALL {
        assert!(stems.iter().any(|s| s == m.stem()), "module {:?} has no ptx/{}.cu", m, m.stem());
    }
}

#[test]
fn committed_ptx_hash_is_not_stale() {
    for stem in sources() {
        for (file, _) in variants(&stem) {
            let ptx = committed(&file);
            let first = ptx.lines().next().unwrap_or("");
            let recorded = first
                .strip_prefix(HASH_PREFIX)
                .unwrap_or_else(|| panic!("ptx/{file} does not start with {HASH_PREFIX:?}: run ptx/regen.sh"));
            assert_eq!(
                recorded.trim(),
                source_hash(&stem),
                "ptx/{file} is stale: its sources changed since it was generated; run ptx/regen.sh and commit it"
            );
        }
    }
}

#[test]
fn the_hash_covers_the_headers() {
    // The rule hashes direct quoted includes only, so headers must not include headers.
    for entry in fs::read_dir(ptx_dir()).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "cuh") {
            let text = fs::read_to_string(&p).unwrap();
            assert!(quoted_includes(&text).is_empty(), "{} includes another header", p.display());
        }
    }
    assert_eq!(
        quoted_includes("#include \"a.cuh\"\n  # include \"b.cuh\" // x\n#include <c.h>\n#include \"a.cuh\""),
        ["a.cuh", "b.cuh"]
    );
}

/// `<stem>.ptx` runs on every GPU from Volta on, `<stem>.sm80.ptx` on every GPU from Ampere
/// on (the devices that load it: `ModuleId::ptx_for`), and both on drivers from 520 on.
#[test]
fn committed_ptx_is_portable() {
    for stem in sources() {
        for (file, most) in variants(&stem) {
            let ptx = committed(&file);
            let target = ptx.lines().find_map(|l| l.trim().strip_prefix(".target ")).expect(".target line");
            let sm: u32 = target.trim().trim_start_matches("sm_").parse().expect("sm_NN target");
            assert!(sm <= most, "ptx/{file} targets sm_{sm}; it must target compute_{most} or older");
            let version = ptx.lines().find_map(|l| l.trim().strip_prefix(".version ")).expect(".version line");
            let (major, minor) = version.trim().split_once('.').expect("major.minor");
            let (major, minor): (u32, u32) = (major.parse().unwrap(), minor.parse().unwrap());
            assert!(
                (major, minor) <= (7, 8),
                "ptx/{file} is PTX ISA {major}.{minor}; drivers older than CUDA 12 need <= 7.8 (use nvcc 11.8)"
            );
        }
    }
    for m in ModuleId::ALL {
        assert_eq!(m.ptx_for((7, 0)), m.ptx(), "{m:?} on Volta");
        assert_eq!(m.ptx_for((7, 5)), m.ptx(), "{m:?} on Turing");
        assert_eq!(m.ptx_for((8, 0)), m.ptx_sm80(), "{m:?} on Ampere");
        assert_eq!(m.ptx_for((9, 0)), m.ptx_sm80(), "{m:?} on Hopper");
    }
}

#[test]
fn every_kernel_name_is_an_entry_of_the_committed_and_the_built_ptx() {
    let names = all_kernel_names();
    assert!(!names.is_empty());
    for (module, name) in names {
        for (file, _) in variants(module.stem()) {
            assert!(entries(&committed(&file)).contains(&name), "{name} is not an .entry of ptx/{file}");
        }
        for (built, which) in [(module.ptx(), "compute_70"), (module.ptx_sm80(), "compute_80")] {
            assert!(
                entries(built).contains(&name),
                "{name} is not an .entry of the PTX built for module {} ({which})",
                module.stem()
            );
        }
    }
}

/// The value of `#define NAME value` in a source of `ptx/`.
fn define(file: &str, name: &str) -> u64 {
    let text = fs::read_to_string(ptx_dir().join(file)).unwrap_or_else(|e| panic!("reading ptx/{file}: {e}"));
    let value = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("#define ")?.strip_prefix(name)?.strip_prefix(' ').map(str::trim))
        .unwrap_or_else(|| panic!("no #define {name} in ptx/{file}"));
    let digits = value.trim_end_matches('u');
    match digits.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => digits.parse(),
    }
    .unwrap_or_else(|e| panic!("#define {name} {value} in ptx/{file}: {e}"))
}

/// The kernels and the host agree on the shapes they share. A mismatch in the chunk sizes
/// would not give wrong sums but a hang: the balanced kernel's chunk blocks compute their
/// row's first chunk and chunk count from SPGPU_BALANCED_CHUNK, and the last chunk waits for
/// the slots of the others.
#[test]
fn kernel_constants_match_the_host() {
    use spgpu::gpu::{balance, hot, narrow, sell};
    assert_eq!(define("common.cuh", "SPGPU_BLOCK"), balance::BLOCK_THREADS as u64);
    assert_eq!(define("spmv.cu", "SPGPU_BALANCED_ENTRIES"), balance::BLOCK_ENTRIES as u64);
    assert_eq!(define("spmv.cu", "SPGPU_BALANCED_CHUNK"), balance::CHUNK_ENTRIES as u64);
    // more rows per block on the host than the kernel sums would leave rows unwritten
    assert_eq!(define("spmv.cu", "SPGPU_BALANCED_ROWS"), balance::BLOCK_ROWS as u64);
    for s in balance::RowShape::ALL {
        let kernel_rows = if s.threads == balance::BLOCK_THREADS { balance::BLOCK_ROWS } else { s.threads };
        assert_eq!(s.rows, kernel_rows, "rows per block of the {}-thread shape", s.threads);
    }
    assert_eq!(define("spmv.cu", "SPGPU_LONG_FLAG"), u64::from(balance::LONG_FLAG));
    assert_eq!(define("spmv.cu", "SPGPU_SELL_CHUNK"), sell::CHUNK as u64);
    assert_eq!(define("spmv.cu", "SPGPU_HOT_FLAG"), u64::from(hot::HOT_FLAG));
    assert_eq!(define("common.cuh", "SPGPU_NARROW_PADDING"), u64::from(narrow::NARROW_PADDING));
    assert_eq!(define("spmv.cu", "SPGPU_VECTOR_BATCH_STEPS"), narrow::VECTOR_BATCH_STEPS as u64);
    assert_eq!(define("common.cuh", "SPGPU_FAR_SLOTS"), narrow::FAR_SLOTS as u64);
    assert_eq!(define("common.cuh", "SPGPU_FAR_CODE"), u64::from(narrow::FAR_CODE));
    assert_eq!(define("common.cuh", "SPGPU_ELL_PADDING"), u64::from(spgpu::ELL_PADDING));
}
