//! The layers of `src/gpu/` (see `docs/architecture.md` and `gpu/mod.rs`): each file may
//! import only from its own layer and the layers below it, read from the sources.
//!
//! From the bottom: `runtime/` (driver, context, streams, memory, vectors, modules), `plan/`
//! (pure: statistics, column counts and device facts in, a decision out; it may use the
//! runtime's `DeviceInfo` only), `kernels/` (launch wrappers, kernel names; it may use the
//! plan's vocabulary: `SpmvKernel`, the compiled thread counts, the row-block shapes),
//! `storage/` (device layouts: carries out a plan through the kernels). `gpu/mod.rs` is the
//! facade that re-exports the public items and may name every layer.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const LAYERS: [&str; 4] = ["runtime", "plan", "kernels", "storage"];

/// Edges upward that are known and not yet removed: `(file, layer it imports)`. The test
/// fails when an edge appears that is not listed, and when a listed one is gone (so that the
/// list only shrinks).
const KNOWN_UPWARD: &[(&str, &str)] = &[
    // the carveout of the balanced kernels is set when the context is made, by name
    ("runtime/context.rs", "kernels"),
    ("runtime/context.rs", "plan"),
];

fn layer_of(rel: &Path) -> Option<usize> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    LAYERS.iter().position(|&l| l == first)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a source file without its comments (line comments and doc comments; the
/// sources use no block comments).
fn code(src: &str) -> Vec<String> {
    src.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => l[..i].to_string(),
            _ => l.to_string(),
        })
        .collect()
}

/// The layers a file's code names (`crate::gpu::<layer>`), and the paths through the
/// facade (`crate::gpu::Name` or `crate::gpu::{...}`) and through `super::` out of a
/// layer's `mod.rs`, which a layer's files must not use.
fn edges(rel: &Path, src: &str) -> (BTreeSet<usize>, Vec<String>) {
    let mut layers = BTreeSet::new();
    let mut bad = Vec::new();
    let is_mod = rel.file_name().is_some_and(|f| f == "mod.rs") && rel.components().count() == 2;
    let mut in_tests = false;
    for (n, line) in code(src).iter().enumerate() {
        if line.contains("mod tests") {
            in_tests = true;
        }
        let mut rest = line.as_str();
        while let Some(i) = rest.find("crate::gpu::") {
            let tail = &rest[i + "crate::gpu::".len()..];
            let seg: String = tail.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '{').collect();
            match LAYERS.iter().position(|&l| l == seg) {
                Some(k) => {
                    layers.insert(k);
                }
                None => bad.push(format!("{}:{}: through the facade: crate::gpu::{seg}", rel.display(), n + 1)),
            }
            rest = tail;
        }
        if is_mod && !in_tests && line.contains("super::") {
            bad.push(format!("{}:{}: super:: out of the layer", rel.display(), n + 1));
        }
    }
    (layers, bad)
}

#[test]
fn gpu_layers_import_downward_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/gpu");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    let mut upward = BTreeSet::new();
    let mut problems = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        let Some(own) = layer_of(rel) else { continue };
        let src = std::fs::read_to_string(f).unwrap();
        let (layers, bad) = edges(rel, &src);
        problems.extend(bad);
        for k in layers {
            if k > own {
                upward.insert((rel.to_str().unwrap().replace('\\', "/"), LAYERS[k].to_string()));
            }
        }
        // the plan takes device facts as DeviceInfo only
        if LAYERS[own] == "plan" {
            for (n, line) in code(&src).iter().enumerate() {
                if let Some(i) = line.find("crate::gpu::runtime::") {
                    let path = &line[i..];
                    if !path.starts_with("crate::gpu::runtime::context::DeviceInfo") {
                        problems.push(format!(
                            "{}:{}: the plan uses the runtime beyond DeviceInfo",
                            rel.display(),
                            n + 1
                        ));
                    }
                }
            }
        }
    }
    let known: BTreeSet<(String, String)> = KNOWN_UPWARD.iter().map(|&(f, l)| (f.to_string(), l.to_string())).collect();
    let new: Vec<_> = upward.difference(&known).collect();
    let gone: Vec<_> = known.difference(&upward).collect();
    assert!(new.is_empty(), "imports upward (a file must ask for what is above it as an argument): {new:?}");
    assert!(gone.is_empty(), "known upward imports that are gone: remove them from KNOWN_UPWARD: {gone:?}");
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_plan_is_pure() {
    // no device work, no environment: the plan's files name no cust type, no Context, and
    // read no variable (the tuning is read once, in plan/tuning.rs)
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/gpu/plan");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    for f in files {
        let name = f.file_name().unwrap().to_str().unwrap().to_string();
        for (n, line) in code(&std::fs::read_to_string(&f).unwrap()).iter().enumerate() {
            assert!(!line.contains("cust::"), "plan/{name}:{}: cust", n + 1);
            assert!(!line.contains("Context"), "plan/{name}:{}: a context", n + 1);
            if name != "tuning.rs" {
                assert!(!line.contains("env::var"), "plan/{name}:{}: reads the environment", n + 1);
            }
        }
    }
}

#[test]
fn tuning_variables_are_read_in_one_place() {
    // every SPGPU_* variable that changes a plan is read by plan/tuning.rs only
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().to_str().unwrap().replace('\\', "/");
        if rel == "gpu/plan/tuning.rs" || rel.starts_with("bin/") || rel.starts_with("bench/") {
            continue;
        }
        for (n, line) in code(&std::fs::read_to_string(&f).unwrap()).iter().enumerate() {
            for var in [
                "HOT_COLUMNS_ENV",
                "HOT_MIN_SHARE_ENV",
                "COLUMN_PARTS_ENV",
                "NARROW_COLUMNS_ENV",
                "CHUNK_MAJOR_ENV",
                "BALANCED_THREADS_ENV",
                "PREFETCH_X_ENV",
                "DEVICE_CONVERSION_ENV",
            ] {
                assert!(!(line.contains("env::var") && line.contains(var)), "{rel}:{}: reads {var}", n + 1);
            }
        }
    }
}
