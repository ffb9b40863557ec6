//! `spgpu cg --reorder` and the `permute:` and `communities:` generators from the command
//! line (CPU: no GPU needed): the same solution in the user's numbering whatever the
//! ordering, the ordering reported in text and JSON, and bad values refused as usage errors.

use crate::common;

use std::process::{Command, Output};

fn spgpu(args: &[&str]) -> Output {
    Command::new(common::spgpu_binary()).args(args).output().expect("running spgpu")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("spgpu-cli-reorder-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The values of a Matrix Market array file.
fn read_vector(path: &std::path::Path) -> Vec<f64> {
    let s = std::fs::read_to_string(path).unwrap();
    let mut lines = s.lines().filter(|l| !l.starts_with('%'));
    lines.next().expect("a size line");
    lines.map(|l| l.trim().parse::<f64>().unwrap()).collect()
}

#[test]
fn every_ordering_gives_the_solution_in_the_users_numbering() {
    let dir = scratch("orderings");
    // A mesh numbered at random, with a right-hand side that is not an eigenvector.
    let rhs = dir.join("b.mtx");
    let n = 20 * 20 * 20;
    let b: String = (0..n).map(|i| format!("{}\n", 1.0 + (i % 7) as f64)).collect();
    std::fs::write(&rhs, format!("%%MatrixMarket matrix array real general\n{n} 1\n{b}")).unwrap();
    let mut solutions = Vec::new();
    for ordering in ["none", "rcm", "graph", "auto"] {
        let out = dir.join(format!("x-{ordering}.mtx"));
        let o = spgpu(&[
            "cg",
            "gen:permute:lap3d:20",
            "--device",
            "cpu",
            "--rtol",
            "1e-10",
            "--reorder",
            ordering,
            "--rhs",
            rhs.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
        assert!(o.status.success(), "{ordering}: {stdout}{stderr}");
        assert!(stdout.contains("stop: converged"), "{ordering}: {stdout}");
        if ordering == "none" {
            assert!(!stdout.contains("reorder"), "{stdout}");
        } else {
            let line = stdout.lines().find(|l| l.starts_with(&format!("reorder {ordering}:"))).unwrap_or_else(|| {
                panic!("{ordering}: no reorder line in {stdout}");
            });
            assert!(line.contains("sectors of x per entry") || line.contains("kept"), "{line}");
        }
        solutions.push((ordering, read_vector(&out)));
    }
    let (_, reference) = &solutions[0];
    assert_eq!(reference.len(), n);
    for (ordering, x) in &solutions[1..] {
        let diff = x.iter().zip(reference).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        let scale = reference.iter().map(|v| v.abs()).fold(0.0, f64::max);
        assert!(diff <= 1e-7 * scale, "{ordering}: max difference {diff} against {scale}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_ordering_is_in_the_json_report() {
    let o = spgpu(&["cg", "gen:permute:lap2d:60", "--device", "cpu", "--reorder", "rcm", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let r = &v["reorder"];
    assert_eq!((r["requested"].as_str(), r["ordering"].as_str()), (Some("rcm"), Some("rcm")), "{v}");
    let (before, after) = (r["before"]["bandwidth"].as_u64().unwrap(), r["after"]["bandwidth"].as_u64().unwrap());
    assert!(after * 10 < before, "bandwidth {before} -> {after}");
    assert!(r["time_ms"].as_f64().unwrap() >= 0.0, "{r}");
    // without --reorder, null
    let o = spgpu(&["cg", "gen:lap2d:20", "--device", "cpu", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert!(v["reorder"].is_null(), "{v}");
}

#[test]
fn bad_orderings_and_generator_names_are_usage_errors() {
    let o = spgpu(&["cg", "gen:lap2d:10", "--device", "cpu", "--reorder", "metis"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("metis"), "{}", text(&o.stderr));
    let o = spgpu(&["info", "gen:permute:uniform:10:20:3"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains("square"), "{}", text(&o.stderr));
    let o = spgpu(&["info", "gen:communities:100:0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("communities of 0 vertices"), "{}", text(&o.stderr));
}

#[test]
fn a_permuted_elasticity_system_keeps_its_rigid_body_modes() {
    // AMG on the permuted system converges as on the natural one: the modes were permuted with it.
    let iterations = |spec: &str| {
        let o = spgpu(&["cg", spec, "--device", "cpu", "--precond", "amg", "--json"]);
        assert!(o.status.success(), "{spec}: {}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["iterations"].as_u64().unwrap()
    };
    let (natural, permuted) = (iterations("gen:elast:8"), iterations("gen:permute:elast:8"));
    assert!(permuted <= natural + 3, "natural {natural}, permuted {permuted}");
}

#[test]
fn info_reports_the_locality_and_what_each_ordering_makes_of_it() {
    let o = spgpu(&["info", "gen:permute:lap3d:16"]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let line = |prefix: &str| {
        out.lines().find(|l| l.trim_start().starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {out}"))
    };
    let bandwidth =
        |l: &str| l.split("bandwidth ").nth(1).unwrap().split(',').next().unwrap().parse::<usize>().unwrap();
    let (before, rcm, graph) = (line("locality:"), line("with rcm"), line("with graph"));
    assert!(bandwidth(rcm) * 5 < bandwidth(before), "{before}\n{rcm}");
    assert!(bandwidth(graph) * 5 < bandwidth(before), "{before}\n{graph}");
    assert!(line("--reorder auto:").contains("auto: rcm"), "{out}");
    // a natural numbering is kept; a rectangular matrix has no locality line
    let o = spgpu(&["info", "gen:lap2d:40"]);
    assert!(text(&o.stdout).contains("--reorder auto: none (the numbering already shares"), "{}", text(&o.stdout));
    let o = spgpu(&["info", "gen:uniform:10:20:3", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["locality"].is_null(), "{v}");
}
