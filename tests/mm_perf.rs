//! Timing aid for the reader (ignored by default): reads the bench file of
//! `benches/mm_read.rs` a few times and prints wall time and CPU time (user + system, from
//! `/proc/self/stat`) per read, a figure that stays meaningful on a loaded machine.
//!
//! `cargo bench --bench mm_read -- zzz` creates the file; then
//! `cargo test --release --test mm_perf -- --ignored --nocapture`.

use std::path::Path;
use std::time::Instant;

/// User + system CPU seconds of this process so far (Linux).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of the file (utime, stime) are 11 and 12 after the command name.
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

#[test]
#[ignore = "timing aid: needs the generated bench file and a release build"]
fn time_reads_of_the_bench_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    for name in ["mm_read_400000x12.mtx", "mm_read_400000x12_shuffled.mtx"] {
        let path = dir.join(name);
        let Ok(meta) = std::fs::metadata(&path) else {
            println!("skipped: {} not found (run the mm_read bench once)", path.display());
            continue;
        };
        let mb = meta.len() as f64 / 1e6;
        for _ in 0..5 {
            let (t, c) = (Instant::now(), cpu_seconds());
            let a = spgpu::io::read_csr::<f64>(&path).unwrap();
            let wall = t.elapsed().as_secs_f64();
            let cpu = cpu_seconds().zip(c).map_or(f64::NAN, |(b, a)| b - a);
            println!("{name}: {wall:.3} s wall ({:.0} MB/s), {cpu:.2} s CPU, nnz {}", mb / wall, a.nnz());
        }
    }
}
