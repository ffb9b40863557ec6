//! The command line against inputs a hostile user gives it: negative and malformed option
//! values, standard output by another name (`/dev/stdout`, a redirection in append mode),
//! the null device, output names that are folders, and headers announcing billions of
//! columns.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn spgpu(args: &[&str]) -> Output {
    Command::new(common::spgpu_binary()).args(args).output().expect("running spgpu")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A scratch directory, removed by the test at its end.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spgpu-cli-review-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// Status 2, one line that starts with `expected`, no clap hint, no panic.
fn assert_usage(args: &[&str], expected: &str) {
    let o = spgpu(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(expected), "{args:?}: {err}");
    assert!(!err.contains("tip:") && !err.contains("panicked"), "{args:?}: {err}");
}

#[test]
fn negative_whole_numbers_are_refused_saying_why() {
    let bad = "expected a whole number >= 0, found \"-3\"";
    assert_usage(&["cg", "gen:lap2d:5", "--device", "cpu", "--max-iter", "-3"], bad);
    assert_usage(&["cg", "gen:lap2d:5", "--device", "cpu", "--leading", "-3"], bad);
    assert_usage(&["cg", "gen:lap2d:5", "--device", "cpu", "--max-coarse", "-3"], bad);
    assert_usage(&["cg", "gen:lap2d:5", "--device", "cpu", "--gpu", "-3"], bad);
    assert_usage(&["spmv", "gen:lap2d:5", "--gpu", "-3"], bad);
    assert_usage(&["spmv", "gen:lap2d:5", "--seed", "-3"], bad);
    assert_usage(&["gen", "lap2d", "--size", "-3", "-o", "-"], bad);
    assert_usage(&["gen", "uniform:10:10:2", "--seed", "-3", "-o", "-"], bad);
    assert_usage(&["bench", "--gen", "lap2d:5", "--graph-below", "-3"], bad);
    assert_usage(&["bench", "--gen", "lap2d:5", "--gpu", "-3"], bad);
    // ranged ones say their range
    assert_usage(&["spmv", "gen:lap2d:5", "--repeats", "-1"], "expected a whole number >= 0, found \"-1\"");
    assert_usage(&["spmv", "gen:lap2d:5", "--repeats", "0"], "expected a whole number >= 1, found 0");
    assert_usage(
        &["bench", "--gen", "lap2d:5", "--copy-mib", "-1"],
        "expected a whole number from 1 to 65536, found \"-1\"",
    );
    assert_usage(&["cg", "gen:lap2d:5", "--device", "cpu", "--check-interval", "-1"], "expected a whole number >= 0");
    assert_usage(&["cg", "gen:lap2d:5", "--device", "cpu", "--check-interval", "0"], "expected a whole number >= 1");
    assert_usage(&["cg", "gen:lap2d:5", "--device", "cpu", "--max-iter", "1e3"], "expected a whole number >= 0");
}

#[test]
fn amg_parameters_are_usage_errors_before_any_work() {
    for (args, expected) in [
        (vec!["--theta", "-1"], "spgpu: --theta must be a finite number >= 0, got -1"),
        (vec!["--theta", "nan"], "spgpu: --theta must be a finite number >= 0, got NaN"),
        (vec!["--coarse-theta", "-0.5"], "spgpu: --coarse-theta must be a finite number >= 0, got -0.5"),
        (vec!["--block-size", "0"], "expected a whole number >= 1, found 0"),
        (vec!["--block-size", "7"], "spgpu: --block-size 7 does not divide the 25 rows of gen:lap2d:5"),
    ] {
        let mut all = vec!["cg", "gen:lap2d:5", "--device", "cpu", "--precond", "amg"];
        all.extend(args);
        let o = spgpu(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{all:?}: {}", stderr(&o));
        // refused before the solve: no report
        assert!(!stdout(&o).contains("stop:"), "{all:?}: {}", stdout(&o));
    }
}

#[test]
fn a_bad_diagonal_is_named_by_its_row_counted_from_1_in_any_ordering() {
    let dir = scratch("diag");
    let f = dir.join("a.mtx");
    // row 2 (1-based) is empty: its diagonal is 0
    std::fs::write(&f, "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 2\n3 3 2\n").unwrap();
    for precond in ["jacobi", "amg"] {
        for reorder in ["none", "rcm", "graph"] {
            let o = spgpu(&["cg", s(&f), "--device", "cpu", "--precond", precond, "--reorder", reorder]);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{precond} {reorder}: {err}");
            assert!(err.contains("diagonal entry at row 2 is 0"), "{precond} {reorder}: {err}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn standard_output_by_another_name_is_standard_output() {
    // with --json, or another output on `-`, /dev/stdout is refused before the work
    assert_usage(
        &["cg", "gen:lap2d:5", "--device", "cpu", "--json", "-o", "/dev/stdout"],
        "--json and -o /dev/stdout both write to standard output",
    );
    assert_usage(
        &["cg", "gen:lap2d:5", "--device", "cpu", "--history", "/dev/stdout", "-o", "-"],
        "both write to standard output",
    );
    assert_usage(&["bench", "--gen", "lap2d:5", "--json", "/dev/stdout"], "--json /dev/stdout: spgpu bench prints");
    // alone, it takes standard output: the report goes to standard error, the data is only data
    let o = spgpu(&["cg", "gen:lap2d:8", "--device", "cpu", "-o", "/dev/stdout"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("%%MatrixMarket matrix array real general\n"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("stop:"), "{}", stdout(&o));
    assert!(stderr(&o).contains("stop: converged"), "{}", stderr(&o));
    let x = spgpu::io::read_vector_from_reader::<f64>(&o.stdout[..]).unwrap();
    assert_eq!(x.len(), 64);
}

#[test]
fn dev_stdout_redirected_in_append_mode_appends() {
    let dir = scratch("append");
    let log = dir.join("log.txt");
    std::fs::write(&log, "an earlier line\n").unwrap();
    let file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let o = Command::new(common::spgpu_binary())
        .args(["gen", "lap2d:3", "-o", "/dev/stdout"])
        .stdout(Stdio::from(file))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with("an earlier line\n%%MatrixMarket matrix coordinate real general\n"), "{text}");
    assert_eq!(names(&dir), ["log.txt"]);
    // standard output appended to the input is writing the input
    let a = dir.join("a.mtx");
    std::fs::write(&a, "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 2\n").unwrap();
    for out in ["/dev/stdout", "-"] {
        let file = std::fs::OpenOptions::new().append(true).open(&a).unwrap();
        let o = Command::new(common::spgpu_binary())
            .args(["convert", s(&a), out])
            .stdout(Stdio::from(file))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{out}: {}", stderr(&o));
        assert!(stderr(&o).contains("is the input"), "{out}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(&a).unwrap().lines().count(), 3);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_null_device_takes_any_number_of_outputs() {
    let o = spgpu(&["cg", "gen:lap2d:5", "--device", "cpu", "-o", "/dev/null", "--history", "/dev/null"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("stop: converged"), "{}", stdout(&o));
}

#[test]
fn an_output_named_as_a_folder_is_refused_before_the_work() {
    let dir = scratch("folder");
    for name in ["newdir/", ".", "..", "sub/."] {
        let o = Command::new(common::spgpu_binary())
            .args(["cg", "gen:lap2d:5", "--device", "cpu", "-o", name])
            .current_dir(&dir)
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.starts_with(&format!("spgpu: -o {name}: cannot be written: the name is a folder's")), "{err}");
        assert!(!stdout(&o).contains("stop:"), "{name}: solved before refusing: {}", stdout(&o));
        assert!(names(&dir).is_empty(), "{name}: {:?}", names(&dir));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn info_on_two_billion_columns_does_not_abort() {
    // one entry, 2e9 columns: counting every column's entries takes 8 GB, more than a 4 GiB
    // address space holds; the rest of info is cheap
    let dir = scratch("wide");
    let f = dir.join("wide.mtx");
    std::fs::write(&f, "%%MatrixMarket matrix coordinate real general\n1 2000000000 1\n1 1 1.0\n").unwrap();
    for json in [false, true] {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg("ulimit -v 4194304 && exec \"$0\" \"$@\"").arg(common::spgpu_binary()).args(["info", s(&f)]);
        if json {
            cmd.arg("--json");
        }
        let o = cmd.env("RAYON_NUM_THREADS", "2").output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        if json {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["cols"].as_u64(), Some(2_000_000_000));
            assert!(v["column_reads"].is_null());
            assert!(v["column_reads_skipped"].as_str().unwrap().starts_with("not enough host memory"), "{v}");
        } else {
            assert!(stdout(&o).contains("column reads:    not counted: not enough host memory"), "{}", stdout(&o));
            assert!(stdout(&o).contains("dimensions:      1 x 2000000000"), "{}", stdout(&o));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_named_pipe_is_written_once_its_reader_is_there() {
    use std::io::Read;
    let dir = scratch("fifo");
    let fifo = dir.join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let path = fifo.clone();
    // the reader opens the FIFO once and reads it to its end (a check that opened and
    // closed the FIFO before generating the matrix would end it with nothing, and leave
    // the writer waiting for a reader)
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::fs::File::open(&path).unwrap().read_to_string(&mut text).unwrap();
        text
    });
    let o = Command::new("timeout")
        .arg("60")
        .arg(common::spgpu_binary())
        .args(["gen", "lap2d:300", "-o", s(&fifo)])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = reader.join().unwrap();
    assert!(text.starts_with("%%MatrixMarket matrix coordinate real general\n"), "{text}");
    assert_eq!(spgpu::io::read_csr_from_reader::<f64>(text.as_bytes()).unwrap().nnz(), 448_800);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_dangling_link_is_written_through_or_refused_before_the_work() {
    let dir = scratch("dangling");
    let (link, missing) = (dir.join("x.mtx"), dir.join("no/such/folder/x.mtx"));
    std::os::unix::fs::symlink(&missing, &link).unwrap();
    let o = spgpu(&["cg", "gen:lap2d:5", "--device", "cpu", "-o", s(&link)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot be written: no folder"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("stop:"), "{}", stdout(&o));
    // the link is kept, not replaced by a file
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    // into a folder that exists: the file is made where the link points
    std::fs::create_dir(dir.join("there")).unwrap();
    let link2 = dir.join("y.mtx");
    std::os::unix::fs::symlink("there/y.mtx", &link2).unwrap();
    let o = spgpu(&["cg", "gen:lap2d:5", "--device", "cpu", "-o", s(&link2)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link2).unwrap().file_type().is_symlink());
    assert_eq!(spgpu::io::read_vector::<f64>(&dir.join("there/y.mtx")).unwrap().len(), 25);
    assert_eq!(names(&dir.join("there")), ["y.mtx"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
