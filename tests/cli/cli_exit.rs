//! The exit status of `spgpu` (`docs/cli.md`): 0 success, 1 failure, 2 usage error; a
//! closed standard output ends any subcommand quietly; a header that announces more than
//! memory holds is a one-line error even under a 1 GiB address-space limit; a binary file's
//! bytes are shown escaped.

use crate::common;

use std::process::{Command, Output, Stdio};

fn spgpu(args: &[&str]) -> Output {
    Command::new(common::spgpu_binary()).args(args).output().expect("running spgpu")
}

fn data(rel: &str) -> String {
    common::crate_root().join("tests/data").join(rel).to_str().unwrap().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// No panic, no backtrace, and at most one line.
fn assert_clean(o: &Output, what: &str) {
    let err = stderr(o);
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{what}: {err}");
}

#[test]
fn usage_errors_exit_2() {
    let scratch = std::env::temp_dir().join(format!("spgpu-cli-exit-{}.mtx", std::process::id()));
    let out = scratch.to_str().unwrap();
    let cases: &[&[&str]] = &[
        // clap's own
        &[],
        &["nosuch"],
        &["info"],
        &["info", "a.mtx", "b.mtx"],
        &["info", "--bogus", "a.mtx"],
        &["convert", "a.mtx"],
        &["convert", "gen:lap2d:3", out, "--precision", "f16"],
        &["spmv", "gen:lap2d:3", "--repeats", "0"],
        &["cg", "gen:lap2d:3", "--precond", "ilu"],
        &["gen", "lap2d", "--size", "x", "-o", out],
        &["bench", "--reps", "0"],
        // spgpu's own: an unknown kernel, a malformed gen: name, a generator without its size
        &["spmv", "gen:lap2d:3", "--kernel", "warp"],
        &["spmv", "gen:lap2d:3", "--kernel", "vector,vector:3"],
        &["info", "gen:nosuch:3"],
        &["info", "gen:lap2d:x"],
        &["info", "gen:lap2d"],
        &["convert", "gen:uniform:10:5:8", out],
        &["spmv", "gen:lap2d:1:2", "--kernel", "scalar"],
        &["gen", "lap2d", "-o", out],
        &["gen", "torus", "--size", "3", "-o", out],
        &["gen", "gen:lap2d:x", "-o", out],
    ];
    for args in cases {
        let o = spgpu(args);
        assert_eq!(o.status.code(), Some(2), "spgpu {args:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty(), "spgpu {args:?}");
        assert_clean(&o, &format!("{args:?}"));
    }
    let _ = std::fs::remove_file(&scratch);
}

#[test]
fn help_and_version_exit_0_and_help_lists_the_exit_status() {
    for flag in ["--help", "-h"] {
        let o = spgpu(&[flag]);
        assert_eq!(o.status.code(), Some(0));
        let help = String::from_utf8_lossy(&o.stdout);
        for line in ["Exit status:", "  0    success", "  1    the command failed", "  2    usage error", "  101 "] {
            assert!(help.contains(line), "{flag}: no {line:?} in\n{help}");
        }
    }
    let o = spgpu(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("spgpu "));
    assert_eq!(spgpu(&["help", "info"]).status.code(), Some(0));
}

#[test]
fn failures_exit_1_on_one_line() {
    let dir = std::env::temp_dir().join(format!("spgpu-cli-exit-fail-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("o.mtx");
    let out = out.to_str().unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["info".into(), data("bad/row_past_size.mtx")],
        vec!["info".into(), data("bad/no_such_file.mtx")],
        vec!["info".into(), data("bad/binary_banner.mtx")],
        vec!["convert".into(), data("bad/too_many_counted.mtx"), out.into()],
        vec!["convert".into(), "--symmetric".into(), data("good/unsorted.mtx"), out.into()],
        vec!["convert".into(), data("good/symmetric.mtx"), dir.join("no/such/dir.mtx").to_str().unwrap().into()],
        vec!["spmv".into(), data("bad/value_not_number.mtx")],
        vec!["cg".into(), data("bad/index_zero.mtx"), "--device".into(), "cpu".into()],
    ];
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = spgpu(&args);
        assert_eq!(o.status.code(), Some(1), "spgpu {args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "spgpu {args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with("spgpu: "), "{}", stderr(&o));
        assert_clean(&o, &format!("{args:?}"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs spgpu with its standard output a pipe whose reading end is already closed.
fn with_closed_stdout(args: &[&str]) -> Output {
    let mut child = Command::new(common::spgpu_binary())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running spgpu");
    drop(child.stdout.take());
    child.wait_with_output().expect("waiting for spgpu")
}

#[test]
fn closed_stdout_ends_every_subcommand_quietly() {
    let dir = std::env::temp_dir().join(format!("spgpu-cli-exit-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gen_out = dir.join("g.mtx");
    let symmetric = data("good/symmetric.mtx");
    let cases: &[&[&str]] = &[
        &["info", &symmetric],
        &["info", "gen:lap2d:50"],
        // Megabytes of output: the pipe is surely closed before the last write.
        &["convert", "gen:lap2d:300", "/dev/stdout"],
        &["gen", "lap2d", "--size", "300", "-o", "/dev/stdout"],
        &["gen", "lap2d", "--size", "5", "-o", gen_out.to_str().unwrap()],
        &["spmv", "gen:lap2d:30", "--kernel", "auto,scalar"],
        &["cg", "gen:lap2d:30", "--device", "cpu"],
        &["--help"],
        &["info", "--help"],
    ];
    for args in cases {
        let o = with_closed_stdout(args);
        assert_eq!(o.status.code(), Some(0), "spgpu {args:?}: {}", stderr(&o));
        // a matrix written to a file says so on stderr, whatever became of stdout
        if args.contains(&gen_out.to_str().unwrap()) {
            assert!(stderr(&o).starts_with(&format!("wrote {}: ", gen_out.display())), "{}", stderr(&o));
            assert!(gen_out.is_file());
        } else {
            assert_eq!(stderr(&o), "", "spgpu {args:?}");
        }
    }
    // `spgpu bench` needs a GPU; without one it fails on one line, with one it prints
    // into the closed pipe: either way, no panic.
    let o = with_closed_stdout(&["bench", "--gen", "lap2d:30", "--reps", "1", "--no-cpu"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "bench: {:?} {}", o.status, stderr(&o));
    assert_clean(&o, "bench");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `spgpu ARGS` under `ulimit -v 1048576` (1 GiB of address space).
fn under_1gib(args: &[&str]) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg("ulimit -v 1048576 && exec \"$0\" \"$@\"").arg(common::spgpu_binary()).args(args);
    c
}

#[test]
fn huge_header_fails_cleanly_under_1gib_of_address_space() {
    // 70 bytes announcing a 2^31 - 1 square matrix with no entries: its CSR form needs 16 GiB
    // of (64-bit) row offsets.
    let huge = data("huge/dims_no_entries.mtx");
    for cmd in ["info", "convert", "spmv", "cg"] {
        let mut args = vec![cmd, huge.as_str()];
        if cmd == "convert" {
            args.push("/dev/null");
        }
        let o = under_1gib(&args).output().expect("running sh");
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert_eq!(err.lines().count(), 1, "{cmd}: {err}");
        assert!(
            err.starts_with(&format!(
                "spgpu: not enough host memory for {huge}: the row offsets of a 2147483647 x 2147483647 matrix \
                 (size line 2): needs about 16.0 GiB, "
            )),
            "{cmd}: {err}"
        );
        assert_clean(&o, cmd);
    }
    // One row, 2^31 - 1 columns: the matrix is small, the vectors of an SpMV are not.
    let wide = data("huge/columns_no_entries.mtx");
    let o = under_1gib(&["spmv", &wide]).output().expect("running sh");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("spgpu: not enough host memory for the vectors of a 1 x 2147483647 SpMV"),
        "{}",
        stderr(&o)
    );
    // A small file reads as usual under the same limit (with a few threads: each thread's
    // stack and malloc arena take address space, and hosts have up to 128 cores).
    let o =
        under_1gib(&["info", &data("good/symmetric.mtx")]).env("RAYON_NUM_THREADS", "4").output().expect("running sh");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn binary_files_are_shown_escaped() {
    for file in ["bad/binary_banner.mtx", "bad/binary_entry.mtx", "bad/control_in_keyword.mtx"] {
        let o = spgpu(&["info", &data(file)]);
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        let line = err.strip_suffix('\n').expect("one line");
        assert!(!line.chars().any(char::is_control), "{file}: {line:?}");
        assert!(line.contains("\\x"), "{file}: {line:?}");
    }
}
