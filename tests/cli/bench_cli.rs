//! `spgpu bench` from the command line: the summary rebuilt from a CSV (no GPU needed), the
//! CSV of an older run, the help, a clean failure without a GPU, and on a GPU a short run
//! whose every output is checked.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn spgpu(args: &[&str]) -> Output {
    Command::new(common::spgpu_binary()).args(args).output().expect("running spgpu")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Runs `spgpu ARGS`, which must succeed; its stdout and stderr.
fn ok(args: &[&str]) -> String {
    let o = spgpu(args);
    let out = text(&o);
    assert!(o.status.success(), "spgpu {args:?} failed:\n{out}");
    out
}

/// A scratch directory for one test, removed by the test at its end.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("spgpu-bench-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The header of the current CSV.
const HEADER: &str = "matrix,scalar,rows,cols,nnz,mean_row,max_row,plan,implementation,timing,median_us,min_us,\
                      max_us,per_rep,reps,bytes,format_bytes,gbps,fraction_of_copy,rel_error,correct,upload_us,\
                      preprocessing_us,device_bytes,load_s,l2_bytes";

/// One CSV row: `imp` on `matrix` in `scalar`, `us` per SpMV, `bytes` by the model, on a
/// device with a 50 MiB L2 and a 4000 GB/s copy bandwidth.
fn row(matrix: &str, scalar: &str, imp: &str, us: f64, bytes: u64) -> String {
    let gbps = bytes as f64 / (us * 1e-6) / 1e9;
    let auto = imp == "spgpu-auto";
    format!(
        "{matrix},{scalar},1000000,1000000,5000000,5.000,5,csr scalar,{imp},events,{us:.3},{us:.3},{us:.3},10,5,\
         {bytes},{bytes},{gbps:.2},{:.4},1.0e-16,true,{},{},{},1.5,52428800",
        gbps / 4000.0,
        if auto { "40000.000" } else { "" },
        if auto { "500.000" } else { "" },
        if auto { "64000004" } else { "" },
    )
}

/// Two matrices: `big` (memory-bound: 200 MB; plan 1.5x faster than cuSPARSE in f64, 0.5x
/// in f32) and `small` (latency-bound: 2 MB; 2x in f64).
fn csv() -> String {
    let rows = [
        row("big", "f64", "spgpu-auto", 100.0, 200_000_000),
        row("big", "f64", "spgpu-ell", 90.0, 200_000_000),
        row("big", "f64", "cusparse-alg1", 170.0, 200_000_000),
        row("big", "f64", "cusparse-alg1+pre", 150.0, 200_000_000),
        row("big", "f32", "spgpu-auto", 120.0, 130_000_000),
        row("big", "f32", "cusparse-alg1+pre", 60.0, 130_000_000),
        row("small", "f64", "spgpu-auto", 2.0, 2_000_000),
        row("small", "f64", "cusparse-alg2", 4.0, 2_000_000),
    ];
    format!("{HEADER}\n{}\n", rows.join("\n"))
}

#[test]
fn from_csv_rebuilds_the_summary_and_every_file() {
    let dir = scratch("from-csv");
    let input = dir.join("run.csv");
    std::fs::write(&input, csv()).unwrap();
    let (md, json, svg, again) = (dir.join("s.md"), dir.join("s.json"), dir.join("s.svg"), dir.join("again.csv"));
    let out = ok(&[
        "bench",
        "--from-csv",
        path(&input),
        "--markdown",
        path(&md),
        "--json",
        path(&json),
        "--plot",
        path(&svg),
        "--csv",
        path(&again),
    ]);
    assert!(out.contains("8 measurements of 2 matrices"), "{out}");
    assert!(out.contains("Memory-bound (2 matrix-precision pairs; working set > L2 = 50.0 MiB)"), "{out}");
    assert!(out.contains("Latency-bound (1 matrix-precision pairs; working set <= L2 = 50.0 MiB)"), "{out}");
    let stats: Vec<&str> =
        out.lines().filter(|l| l.starts_with("memory-bound") || l.starts_with("latency-bound")).collect();
    let words: Vec<Vec<&str>> = stats.iter().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(words[0], ["memory-bound", "f64", "1", "1.50x", "1.50x", "(big)", "0"], "{out}");
    assert_eq!(words[1], ["memory-bound", "f32", "1", "0.50x", "0.50x", "(big)", "1"], "{out}");
    assert_eq!(words[2], ["latency-bound", "f64", "1", "2.00x", "2.00x", "(small)", "0"], "{out}");
    // the big f64 row: auto, best kernel, best cuSPARSE, speedup, prep and upload in SpMVs, memory
    let big = out.lines().find(|l| l.starts_with("big") && l.contains(" f64 ")).unwrap();
    for cell in ["100 (50%)", "ell 90.0 (56%)", "alg1+pre 150 (33%)", "1.50x", "5.00", "400", "1.00x"] {
        assert!(big.contains(cell), "{cell} not in {big}");
    }
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("| memory-bound | f32 | 1 | 0.50x | 0.50x (big) | 1 |"), "{md}");
    assert!(md.contains("### Latency-bound"), "{md}");
    let json = std::fs::read_to_string(&json).unwrap();
    assert!(json.contains("\"l2_bytes\": 52428800"), "{json}");
    assert!(json.contains("\"geomean_speedup\": 1.5"), "{json}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("memory-bound") && svg.contains("latency-bound") && svg.contains("big (200 MB)"));
    // the rewritten CSV rebuilds the same summary
    let out2 = ok(&["bench", "--from-csv", path(&again)]);
    let summary = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(summary(&out), summary(&out2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_csv_of_an_older_run_needs_the_l2_size() {
    let dir = scratch("old-csv");
    let input = dir.join("old.csv");
    // the columns up to `correct`, as runs before the summary wrote them
    let old: String = csv()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            f[..21].join(",") + "\n"
        })
        .collect();
    std::fs::write(&input, old).unwrap();
    let o = spgpu(&["bench", "--from-csv", path(&input)]);
    assert!(!o.status.success());
    assert!(text(&o).contains("no l2_bytes column (a CSV of an older run): pass --l2-mib"), "{}", text(&o));
    // with it, 1 MiB puts both matrices above the L2
    let out = ok(&["bench", "--from-csv", path(&input), "--l2-mib", "1"]);
    assert!(out.contains("Memory-bound (3 matrix-precision pairs; working set > L2 = 1.00 MiB)"), "{out}");
    assert!(!out.contains("Latency-bound ("), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn help_describes_suites_kernels_and_the_summary() {
    let out = ok(&["bench", "--help"]);
    for t in
        ["--suite <NAME>", "--kernels <LIST>", "--l2-mib <MIB>", "large", "validate", "speedup = t_cusparse / t_auto"]
    {
        assert!(out.contains(t), "missing {t} in\n{out}");
    }
}

#[test]
fn a_bench_without_a_gpu_fails_before_generating_anything() {
    if spgpu::gpu::Context::global().is_ok() {
        // the short run below covers a GPU
        let line = "a_bench_without_a_gpu_fails_before_generating_anything: skipped: a GPU is present";
        std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes()).ok();
        return;
    }
    let t = std::time::Instant::now();
    let o = spgpu(&["bench", "--suite", "large", "--no-cusparse", "--no-cpu"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("no CUDA device"), "{}", text(&o));
    // the suite's 12 large matrices take many seconds to generate: none was
    assert!(t.elapsed().as_secs_f64() < 5.0, "{:?}", t.elapsed());
}

#[test]
fn a_short_run_on_the_gpu_writes_a_complete_summary() {
    if common::gpu("a_short_run_on_the_gpu_writes_a_complete_summary").is_none() {
        return;
    }
    let dir = scratch("gpu");
    let (csv, md) = (dir.join("run.csv"), dir.join("run.md"));
    let out = ok(&[
        "bench",
        "--gen",
        "lap2d:300",
        "--gen",
        "powerlaw:20000",
        "--precision",
        "both",
        "--no-cpu",
        "--reps",
        "2",
        "--copy-mib",
        "64",
        "--kernels",
        "auto,scalar,balanced,ell",
        "--csv",
        path(&csv),
        "--markdown",
        path(&md),
    ]);
    let text_csv = std::fs::read_to_string(&csv).unwrap();
    let back = text_csv.lines().skip(1).filter(|l| l.contains(",spgpu-auto,")).count();
    // two matrices, two precisions, events and graph timing (both are below 1M entries)
    assert_eq!(back, 8, "{text_csv}");
    for l in text_csv.lines().skip(1).filter(|l| l.contains(",spgpu-auto,")) {
        let f: Vec<&str> = l.split(',').collect();
        let n = f.len();
        // upload_us, preprocessing_us, device_bytes, load_s and l2_bytes are all measured
        assert!(f[n - 5..].iter().all(|v| !v.is_empty()), "{l}");
        assert!(f[n - 1].parse::<u64>().unwrap() > 1 << 20, "{l}");
    }
    // every forced kernel is measured or skipped with a note
    for k in ["scalar", "balanced", "ell"] {
        let measured = text_csv.contains(&format!(",spgpu-{k},"));
        let noted = out.contains(&format!("spgpu-{k} skipped")) || out.contains(&format!("spgpu-{k}: DeviceCsr"));
        assert!(measured || noted, "spgpu-{k} neither measured nor noted:\n{out}");
    }
    // both matrices fit in the L2: one group, and the Markdown has it
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("### Latency-bound (4 matrix-precision pairs"), "{md}");
    std::fs::remove_dir_all(&dir).ok();
}
