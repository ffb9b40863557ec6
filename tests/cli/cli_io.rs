//! The `info`, `convert` and `gen` commands: output, round trips, and one-line errors that
//! name the file and line with a non-zero exit.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output};

fn spgpu(args: &[&str]) -> Output {
    Command::new(common::spgpu_binary()).args(args).output().expect("running spgpu")
}

fn data(rel: &str) -> String {
    common::crate_root().join("tests/data").join(rel).to_str().unwrap().to_string()
}

/// A scratch directory for this test binary, removed at the end of each test that uses it.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spgpu-cli-io-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn info_reports_header_counts_stats_symmetry_and_plan() {
    let o = spgpu(&["info", &data("good/symmetric.mtx")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("%%MatrixMarket matrix coordinate real symmetric"), "{out}");
    assert!(out.contains("dimensions:      3 x 3"), "{out}");
    assert!(out.contains("stored entries:  4 (in the file)"), "{out}");
    assert!(out.contains("nnz:             6 "), "{out}");
    assert!(out.contains("row lengths: min 2, mean 2.00, max 2"), "{out}");
    assert!(out.contains("structurally symmetric: yes"), "{out}");
    assert!(out.contains("numerically symmetric: yes"), "{out}");
    // every column read twice: the most-read hold the entries in proportion
    assert!(
        out.contains(
            "column reads:    the 3 most-read columns hold 100.0% of the entries (1.0 x their share of the columns)"
        ),
        "{out}"
    );
    assert!(out.contains("SpMV plan:"), "{out}");

    let o = spgpu(&["info", &data("good/unsorted.mtx")]);
    let out = stdout(&o);
    assert!(out.contains("structurally symmetric: yes (100.0% of 2 off-diagonal entries mirrored)"), "{out}");
    assert!(out.contains("numerically symmetric: no"), "{out}");

    let o = spgpu(&["info", "gen:lap2d:10"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("dimensions:      100 x 100"));
}

#[test]
fn bad_files_give_one_line_naming_file_and_line() {
    for (file, line, what) in [
        ("bad/row_past_size.mtx", 4, "index out of range"),
        ("bad/value_not_number.mtx", 4, "not a number"),
        ("bad/missing_size_line.mtx", 5, "bad size line"),
    ] {
        let path = data(file);
        for cmd in ["info", "convert"] {
            let mut args = vec![cmd, path.as_str()];
            if cmd == "convert" {
                args.push("/dev/null");
            }
            let o = spgpu(&args);
            assert_eq!(o.status.code(), Some(1), "{cmd} {file}");
            let err = stderr(&o);
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.starts_with(&format!("spgpu: {path}:{line}: {what}")), "{err}");
            assert!(!err.contains("backtrace") && !err.contains("panicked"), "{err}");
        }
    }
    let o = spgpu(&["info", &data("bad/no_such_file.mtx")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with(&format!("spgpu: {}: ", data("bad/no_such_file.mtx"))), "{}", stderr(&o));
}

#[test]
fn convert_sorts_expands_and_round_trips() {
    let dir = scratch("convert");
    let out = dir.join("u.mtx");
    let o = spgpu(&["convert", &data("good/duplicates.mtx"), out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('%')).collect();
    assert_eq!(body, vec!["2 2 3", "1 1 3.0", "1 2 1.0", "2 2 7.0"]);
    assert!(text.starts_with("%%MatrixMarket matrix coordinate real general\n"));

    // Symmetric in, symmetric out (lower triangle), gzip.
    let sym = dir.join("s.mtx.gz");
    let o = spgpu(&["convert", "--symmetric", &data("good/array_symmetric.mtx"), sym.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = spgpu::io::read_csr::<f64>(data("good/array_symmetric.mtx")).unwrap();
    assert_eq!(spgpu::io::read_csr::<f64>(&sym).unwrap(), a);
    let h = spgpu::io::read_header(&sym).unwrap();
    assert_eq!((h.symmetry, h.entries), (spgpu::io::MmSymmetry::Symmetric, 5));

    // --symmetric on a matrix that is not: refused on one line.
    let o = spgpu(&["convert", "--symmetric", &data("good/unsorted.mtx"), dir.join("x.mtx").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is not") || stderr(&o).contains("no matching entry"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gen_writes_the_generators() {
    let dir = scratch("gen");
    let p = dir.join("lap.mtx");
    let o = spgpu(&["gen", "lap2d", "--size", "12", "--symmetric", "-o", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(spgpu::io::read_csr::<f64>(&p).unwrap(), spgpu::gen::laplacian_2d::<f64>(12));

    let u = dir.join("u.mtx");
    let o = spgpu(&[
        "gen",
        "uniform",
        "--size",
        "50",
        "--cols",
        "70",
        "--per-row",
        "4",
        "--seed",
        "3",
        "-o",
        u.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(spgpu::io::read_csr::<f64>(&u).unwrap(), spgpu::gen::random_uniform::<f64>(50, 70, 4, 3));

    let b = dir.join("b.mtx");
    let o = spgpu(&["gen", "banded:40:2:9", "-o", b.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(spgpu::io::read_csr::<f64>(&b).unwrap(), spgpu::gen::banded::<f64>(40, 2, 9));

    // Argument faults are usage errors (status 2).
    let o = spgpu(&["gen", "lap2d", "-o", b.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).trim(), "spgpu: spgpu gen lap2d: --size is required");
    let o = spgpu(&["gen", "torus", "--size", "3", "-o", b.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown generator 'torus'"));
    std::fs::remove_dir_all(&dir).unwrap();
}
