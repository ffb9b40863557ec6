//! The command line as a Unix tool (`docs/cli.md`): data on standard output is only data,
//! `-` for standard input and output, outputs checked before the work and written
//! atomically, never over an input, files written whether or not standard output is
//! open, usage errors with status 2, `--json`, `--gpu`, Ctrl-C with status 130.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn spgpu(args: &[&str]) -> Output {
    Command::new(common::spgpu_binary()).args(args).output().expect("running spgpu")
}

/// `spgpu ARGS` with `input` on standard input.
fn spgpu_with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(common::spgpu_binary())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running spgpu");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // written from a thread: spgpu may write its output before it has read everything
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("waiting for spgpu");
    feeder.join().unwrap();
    out
}

fn data(rel: &str) -> String {
    common::crate_root().join("tests/data").join(rel).to_str().unwrap().to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch directory, removed by the test at its end.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spgpu-cli-unix-{}-{name}", std::process::id()));
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

#[test]
fn data_on_standard_output_is_only_data() {
    let a = spgpu::gen::laplacian_2d::<f64>(30);
    // gen and convert to /dev/stdout and to `-`: the status line is on stderr, the matrix
    // reads back exactly
    for args in [
        vec!["gen", "lap2d:30", "-o", "-"],
        vec!["gen", "lap2d:30", "-o", "/dev/stdout"],
        vec!["gen", "gen:lap2d:30", "-o", "-"],
        vec!["convert", "gen:lap2d:30", "/dev/stdout"],
        vec!["convert", "gen:lap2d:30", "-"],
    ] {
        let o = spgpu(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let back = spgpu::io::read_csr_from_reader::<f64>(&o.stdout[..]).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert_eq!(back, a, "{args:?}");
        assert!(stdout(&o).starts_with("%%MatrixMarket matrix coordinate real general\n"), "{args:?}");
        assert!(!stdout(&o).contains("wrote"), "{args:?}");
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("wrote standard output: ") || err.starts_with("wrote /dev/stdout: "), "{err}");
    }
    // `gen gen:NAME` names its matrix once
    let o = spgpu(&["gen", "gen:lap2d:30", "-o", "-"]);
    assert!(stderr(&o).contains(": gen:lap2d:30, 900 x 900") && !stderr(&o).contains("gen:gen:"), "{}", stderr(&o));

    // `spgpu gen lap2d:30 -o - | spgpu info -`, and convert - -
    let matrix = spgpu(&["gen", "lap2d:30", "-o", "-"]).stdout;
    let o = spgpu_with_stdin(&["info", "-"], &matrix);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("dimensions:      900 x 900"), "{}", stdout(&o));
    assert!(stdout(&o).contains("banner:          %%MatrixMarket matrix coordinate real general"), "{}", stdout(&o));
    let o = spgpu_with_stdin(&["convert", "-", "-"], &matrix);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(spgpu::io::read_csr_from_reader::<f64>(&o.stdout[..]).unwrap(), a);
    // a malformed standard input names itself
    let o = spgpu_with_stdin(&["info", "-"], b"%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).starts_with("spgpu: <stdin>:3: index out of range"), "{}", stderr(&o));
    // cg reads A from standard input, and with `-o -` writes only x there (its report on stderr)
    let o = spgpu_with_stdin(&["cg", "-", "--device", "cpu", "-o", "-"], &matrix);
    assert!(o.status.success(), "{}", stderr(&o));
    let x = spgpu::io::read_vector_from_reader::<f64>(&o.stdout[..]).unwrap();
    assert_eq!(x.len(), 900);
    assert!(stderr(&o).contains("stop: converged"), "{}", stderr(&o));
}

#[test]
fn an_output_that_is_an_input_is_refused_before_any_work() {
    let dir = scratch("same");
    let a = dir.join("A.mtx");
    assert!(spgpu(&["gen", "lap2d:20", "-o", s(&a)]).status.success());
    let before = std::fs::read(&a).unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let link = dir.join("link.mtx");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let hard = dir.join("hard.mtx");
    std::fs::hard_link(&a, &hard).unwrap();
    let dotted = dir.join("sub/../A.mtx");
    for (args, option) in [
        (vec!["cg", s(&a), "--device", "cpu", "-o", s(&a)], "-o"),
        (vec!["cg", s(&a), "--device", "cpu", "-o", s(&dotted)], "-o"),
        (vec!["cg", s(&a), "--device", "cpu", "-o", s(&link)], "-o"),
        (vec!["cg", s(&link), "--device", "cpu", "-o", s(&hard)], "-o"),
        (vec!["cg", "gen:lap2d:20", "--device", "cpu", "--rhs", s(&a), "--history", s(&a)], "--history"),
        (vec!["convert", s(&a), s(&hard)], "the output"),
    ] {
        let t = Instant::now();
        let o = spgpu(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("spgpu: {option} ")) && err.contains("(the same file)"), "{err}");
        assert!(stdout(&o).is_empty(), "{args:?}: nothing solved: {}", stdout(&o));
        assert!(t.elapsed() < Duration::from_secs(5));
        assert_eq!(std::fs::read(&a).unwrap(), before, "{args:?} changed the input");
    }
    // two outputs that are one file, two on standard output
    let x = dir.join("x.mtx");
    for args in [
        vec!["cg", "gen:lap2d:5", "--device", "cpu", "-o", s(&x), "--history", s(&x)],
        vec!["cg", "gen:lap2d:5", "--device", "cpu", "-o", "-", "--history", "-"],
        vec!["cg", "gen:lap2d:5", "--device", "cpu", "-o", "-", "--json"],
    ] {
        let o = spgpu(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("both write to"), "{}", stderr(&o));
    }
    assert_eq!(names(&dir), ["A.mtx", "hard.mtx", "link.mtx", "sub"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_output_is_checked_before_the_work() {
    let dir = scratch("check");
    let ro = dir.join("ro.mtx");
    std::fs::write(&ro, "old").unwrap();
    let mut perm = std::fs::metadata(&ro).unwrap().permissions();
    perm.set_readonly(true);
    std::fs::set_permissions(&ro, perm).unwrap();
    let missing = dir.join("missing/dir/x.mtx");
    // lap2d:2000 takes many seconds to solve: a refusal after the solve would show
    let big = ["cg", "gen:lap2d:2000", "--device", "cpu"];
    for (extra, option, why) in [
        (vec!["-o", s(&missing)], "-o", "no folder"),
        (vec!["--history", s(&missing)], "--history", "no folder"),
        (vec!["-o", s(&dir)], "-o", "it is a directory"),
        (vec!["--history", s(&ro)], "--history", "read-only"),
    ] {
        let args: Vec<&str> = big.iter().copied().chain(extra).collect();
        let t = Instant::now();
        let o = spgpu(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(&format!("spgpu: {option} ")) && err.contains(why), "{err}");
        assert!(t.elapsed() < Duration::from_secs(5), "{args:?} took {:?}", t.elapsed());
    }
    // the same for gen, convert and bench
    for args in [
        vec!["gen", "lap2d:2000", "-o", s(&missing)],
        vec!["convert", "gen:lap2d:2000", s(&missing)],
        vec!["bench", "--gen", "lap2d:2000", "--csv", s(&missing)],
        vec!["bench", "--gen", "lap2d:2000", "--markdown", s(&dir)],
    ] {
        let t = Instant::now();
        let o = spgpu(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("cannot be written"), "{args:?}: {}", stderr(&o));
        assert!(t.elapsed() < Duration::from_secs(5), "{args:?} took {:?}", t.elapsed());
    }
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "old");
    let mut perm = std::fs::metadata(&ro).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&ro, perm).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_write_leaves_the_old_file_and_no_temporary() {
    let dir = scratch("atomic");
    let out = dir.join("out.mtx");
    std::fs::write(&out, "the old content\n").unwrap();
    // --symmetric on a matrix that is not: the writer fails after the header
    let o = spgpu(&["convert", "--symmetric", &data("good/unsorted.mtx"), s(&out)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "the old content\n");
    assert_eq!(names(&dir), ["out.mtx"]);
    // a successful write replaces it whole, and leaves no temporary either
    let o = spgpu(&["convert", &data("good/symmetric.mtx"), s(&out)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        spgpu::io::read_csr::<f64>(&out).unwrap(),
        spgpu::io::read_csr::<f64>(data("good/symmetric.mtx")).unwrap()
    );
    let gz = dir.join("out.mtx.gz");
    assert!(spgpu(&["gen", "lap2d:10", "-o", s(&gz)]).status.success());
    assert_eq!(spgpu::io::read_csr::<f64>(&gz).unwrap(), spgpu::gen::laplacian_2d::<f64>(10));
    assert_eq!(names(&dir), ["out.mtx", "out.mtx.gz"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_are_written_whether_or_not_standard_output_is_open() {
    let dir = scratch("closed");
    let (x, h) = (dir.join("x.mtx"), dir.join("h.csv"));
    let args = ["cg", "gen:lap2d:40", "--device", "cpu", "-o", s(&x), "--history", s(&h)];
    // standard output closed before the first line
    let mut child =
        Command::new(common::spgpu_binary()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(spgpu::io::read_vector::<f64>(&x).unwrap().len(), 1600);
    assert!(std::fs::read_to_string(&h).unwrap().starts_with("iteration,residual_norm,relative_residual\n0,"));
    std::fs::remove_file(&x).unwrap();
    std::fs::remove_file(&h).unwrap();
    // `| head -1`: one line read, then the pipe closed
    let mut child =
        Command::new(common::spgpu_binary()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("matrix: gen:lap2d:40"), "{first}");
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(spgpu::io::read_vector::<f64>(&x).unwrap().len(), 1600);
    assert!(h.is_file());
    assert!(stderr(&o).contains("solution written to") && !stderr(&o).contains("panicked"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cg_refuses_a_header_of_300_million_rows_cleanly() {
    // 150 million rows, no entries: the reader's row offsets (1.2 GB) fit in 4 GiB of address
    // space, CG's vectors (9 x 1.2 GB) do not
    let dir = scratch("huge");
    let f = dir.join("rows.mtx");
    std::fs::write(&f, "%%MatrixMarket matrix coordinate real general\n150000000 150000000 0\n").unwrap();
    let o = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304 && exec \"$0\" \"$@\"")
        .arg(common::spgpu_binary())
        .args(["cg", s(&f), "--device", "cpu"])
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("spgpu: not enough host memory for the vectors of CG on 150000000 rows"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn argument_values_out_of_range_are_usage_errors() {
    for (args, expected) in [
        (vec!["cg", "gen:lap2d:5", "--rtol=-1"], "spgpu: --rtol must be a finite number >= 0, got -1"),
        (vec!["cg", "gen:lap2d:5", "--rtol", "-1"], "spgpu: --rtol must be a finite number >= 0, got -1"),
        (vec!["cg", "gen:lap2d:5", "--rtol", "nan"], "spgpu: --rtol must be a finite number >= 0, got NaN"),
        (vec!["cg", "gen:lap2d:5", "--rtol", "-x"], "error: invalid value '-x' for '--rtol <RTOL>'"),
        (vec!["cg", "gen:lap2d:5", "--atol", "-1e-3"], "spgpu: --atol must be a finite number >= 0, got -0.001"),
        (
            vec!["cg", "gen:lap2d:5", "--bandwidth-gbs", "0"],
            "spgpu: --bandwidth-gbs must be a finite number > 0, got 0",
        ),
        (
            vec!["cg", "gen:lap2d:5", "--bandwidth-gbs", "-5"],
            "spgpu: --bandwidth-gbs must be a finite number > 0, got -5",
        ),
        (vec!["cg", "gen:lap2d:5", "--leading", "5000"], "spgpu: --leading 5000: the matrix is only 25 x 25"),
        (vec!["cg", "gen:lap2d:5", "--leading", "0"], "spgpu: --leading must be at least 1"),
        (vec!["info", "gen:lap2d:100000000"], "spgpu: generated matrix 'gen:lap2d:100000000': rows is"),
        (vec!["gen", "lap2d:100000000", "-o", "-"], "spgpu: generated matrix 'gen:lap2d:100000000': rows is"),
        (vec!["bench", "--gen", "lap2d:5", "--csv", "-"], "spgpu: --csv -: spgpu bench prints its summary"),
    ] {
        let mut args = args.clone();
        if args[0] == "cg" {
            args.extend(["--device", "cpu"]);
        }
        let o = spgpu(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with(expected), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("tip:"), "{args:?}: {}", stderr(&o));
    }
    // the GPU ordinal: a malformed SPGPU_DEVICE is named once; --gpu takes precedence
    for cmd in [&["spmv", "gen:lap2d:5"][..], &["cg", "gen:lap2d:5"], &["bench", "--gen", "lap2d:5"]] {
        let o = Command::new(common::spgpu_binary()).args(cmd).env("SPGPU_DEVICE", "abc").output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            "spgpu: SPGPU_DEVICE=\"abc\" is not a GPU ordinal (0, 1, ...); --gpu N chooses the GPU too\n"
        );
    }
    let o = Command::new(common::spgpu_binary())
        .args(["spmv", "gen:lap2d:5", "--gpu", "0", "--kernel", "scalar"])
        .env("SPGPU_DEVICE", "abc")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = spgpu(&["cg", "gen:lap2d:5", "--gpu", "x"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn the_gpu_is_chosen_with_gpu() {
    if spgpu::gpu::Context::global().is_ok() {
        // with a GPU, device 0 exists; the cg_gpu tests cover solving there
        let o = spgpu(&["cg", "gen:lap2d:5", "--device", "gpu", "--gpu", "0"]);
        assert!(o.status.success(), "{}", stderr(&o));
        return;
    }
    // without one, --gpu names the device the driver is asked for, and fails as any GPU would
    let o = spgpu(&["cg", "gen:lap2d:5", "--device", "gpu", "--gpu", "3"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no CUDA device"), "{}", stderr(&o));
}

#[test]
fn on_the_cpu_cg_does_not_rate_itself_against_the_h200() {
    let o = spgpu(&["cg", "gen:lap2d:20", "--device", "cpu"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains("H200") && !out.contains("x the floor"), "{out}");
    assert!(out.contains("no bytes-moved floor on the CPU"), "{out}");
    let o = spgpu(&["cg", "gen:lap2d:20", "--device", "cpu", "--bandwidth-gbs", "50"]);
    assert!(stdout(&o).contains("/ 50 GB/s (from --bandwidth-gbs)") && stdout(&o).contains("x the floor"));
}

#[test]
fn bench_without_a_gpu_says_it_needs_one() {
    if spgpu::gpu::Context::global().is_ok() {
        std::io::stderr().write_all(b"bench_without_a_gpu_says_it_needs_one: skipped: a GPU is present\n").ok();
        return;
    }
    let o = spgpu(&["bench", "--gen", "lap2d:30"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("spgpu: spgpu bench needs a CUDA GPU, and there is none"), "{err}");
    assert!(err.contains("--from-csv"), "{err}");
}

#[test]
fn info_counts_nan_inf_and_explicit_zeros() {
    let o = spgpu(&["info", &data("good/special_values.mtx")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "values:          1 NaN (the first at row 1, column 3), 2 infinite (the first at row 1, column 1), 0 \
             explicit zeros"
        ),
        "{}",
        stdout(&o)
    );
    let o = spgpu_with_stdin(
        &["info", "-", "--json"],
        b"%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 0\n2 2 1\n3 2 0.0\n",
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["values"]["explicit_zeros"]["count"], 2);
    assert_eq!(v["values"]["explicit_zeros"]["first"], serde_json::json!({ "row": 1, "col": 1 }));
    assert_eq!(v["values"]["nan"]["count"], 0);
    assert_eq!(v["values"]["nan"]["first"], serde_json::Value::Null);
}

#[test]
fn json_is_one_object_on_standard_output() {
    let o = spgpu(&["info", &data("good/symmetric.mtx"), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("info --json");
    assert_eq!((v["spgpu_json"].as_u64(), v["command"].as_str()), (Some(1), Some("info")));
    assert_eq!((v["rows"].as_u64(), v["cols"].as_u64(), v["nnz"].as_u64()), (Some(3), Some(3), Some(6)));
    assert_eq!(v["banner"]["symmetry"], "symmetric");
    assert_eq!(v["stored_entries"], 4);
    assert_eq!(v["symmetry"]["structural"], true);
    assert!(v["plan"]["kernel"].is_string());

    let o = spgpu(&["spmv", "gen:lap2d:10", "--json", "--kernel", "auto,scalar"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("spmv --json");
    assert_eq!((v["spgpu_json"].as_u64(), v["command"].as_str()), (Some(1), Some("spmv")));
    assert_eq!(v["rows"], 100);
    assert!(v["cpu_reference_us"].is_number());
    if v["device"].is_null() {
        assert_eq!(v["plans"].as_array().unwrap().len(), 2);
    } else {
        assert_eq!(v["results"].as_array().unwrap().len(), 2);
    }

    let dir = scratch("json");
    let x = dir.join("x.mtx");
    let o = spgpu(&["cg", "gen:lap2d:20", "--device", "cpu", "--json", "-o", s(&x)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("cg --json");
    assert_eq!((v["spgpu_json"].as_u64(), v["command"].as_str()), (Some(1), Some("cg")));
    assert_eq!(v["converged"], true);
    assert_eq!(v["stop_reason"], "converged");
    assert!(v["iterations"].as_u64().unwrap() > 5);
    assert!(v["relative_residual"].as_f64().unwrap() <= 1e-8);
    assert!(v["error_against_known_solution"].as_f64().unwrap() < 1e-6);
    assert!(v["times_ms"]["solve"].is_number());
    assert_eq!(v["floor"], serde_json::Value::Null, "no floor on the CPU without --bandwidth-gbs");
    assert_eq!(v["outputs"]["solution"], s(&x));
    assert!(x.is_file());
    // a solve that does not converge still prints its object, and fails
    let o = spgpu(&["cg", "gen:lap2d:20", "--device", "cpu", "--json", "--max-iter", "3"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("cg --json");
    assert_eq!((v["converged"].as_bool(), v["iterations"].as_u64()), (Some(false), Some(3)));
    assert_eq!(v["amg"], serde_json::Value::Null, "no hierarchy with Jacobi");
    // AMG: the levels, the complexities and the memory against the matrix's
    let o = spgpu(&["cg", "gen:lap2d:64", "--device", "cpu", "--precond", "amg", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("cg --json with AMG");
    let levels = v["amg"]["levels"].as_array().expect("the levels");
    assert!(levels.len() >= 2, "{v}");
    assert_eq!((levels[0]["rows"].as_u64(), levels[0]["entries"].as_u64()), (Some(4096), Some(20224)));
    assert!(v["amg"]["operator_complexity"].as_f64().unwrap() > 1.0);
    assert_eq!(v["amg"]["fine_transfer"], "implicit", "{v}");
    let m = &v["amg"]["memory_bytes"];
    assert_eq!(m["matrix"].as_u64(), Some(4097 * 8 + 20224 * 12));
    let ratio = m["hierarchy"].as_f64().unwrap() / m["matrix"].as_f64().unwrap();
    assert!((m["ratio"].as_f64().unwrap() - ratio).abs() < 1e-12 && ratio > 0.5, "{m}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether this process ignores SIGINT (then so would spgpu, as started from here).
fn sigint_ignored() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:")).map(str::trim).unwrap_or("0");
    u64::from_str_radix(mask, 16).is_ok_and(|m| m & (1 << (2 - 1)) != 0)
}

#[test]
fn ctrl_c_during_cg_reports_saves_and_exits_130() {
    if sigint_ignored() {
        std::io::stderr().write_all(b"ctrl_c_during_cg_reports_saves_and_exits_130: skipped: SIGINT is ignored\n").ok();
        return;
    }
    let dir = scratch("ctrlc");
    let (x, h) = (dir.join("x.mtx"), dir.join("h.csv"));
    // lap2d:700 on the CPU takes thousands of iterations, many seconds
    let mut child = Command::new(common::spgpu_binary())
        .args(["cg", "gen:lap2d:700", "--device", "cpu", "--max-iter", "100000", "-o", s(&x), "--history", s(&h)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with("matrix: gen:lap2d:700"), "{first}");
    // the solve has started (the line is printed just before it)
    std::thread::sleep(Duration::from_millis(500));
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{rest}\n{err}");
    assert!(rest.contains("stop: interrupted (Ctrl-C) after"), "{rest}");
    assert!(rest.contains("true relative residual"), "{rest}");
    assert!(err.contains("spgpu: interrupted after") && err.contains("not converged"), "{err}");
    // a readable partial solution, marked as not converged
    let text = std::fs::read_to_string(&x).unwrap();
    assert!(text.lines().nth(1).unwrap().starts_with("% not converged: interrupted (Ctrl-C) after"), "{text:.200}");
    assert_eq!(spgpu::io::read_vector::<f64>(&x).unwrap().len(), 490_000);
    let history = std::fs::read_to_string(&h).unwrap();
    assert!(history.starts_with("iteration,residual_norm,relative_residual\n0,"), "{history}");
    assert_eq!(names(&dir), ["h.csv", "x.mtx"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_while_writing_leaves_no_temporary() {
    if sigint_ignored() {
        return;
    }
    let dir = scratch("ctrlc-write");
    let out = dir.join("big.mtx");
    std::fs::write(&out, "the old content\n").unwrap();
    // about 150 MB of Matrix Market text, written for a while
    let child = Command::new(common::spgpu_binary())
        .args(["gen", "lap2d:2000", "-o", s(&out)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // once the temporary file beside the target is there, the matrix is being written
    let t = Instant::now();
    while !names(&dir).iter().any(|n| n.starts_with(".big.mtx.")) {
        assert!(t.elapsed() < Duration::from_secs(60), "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(5));
    }
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "the old content\n");
    assert_eq!(names(&dir), ["big.mtx"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
