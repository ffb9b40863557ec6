//! Matrix Market read throughput: spgpu against `sprs` and `nalgebra-sparse`.
//!
//! The input is generated once into `target/bench-data/`: a `coordinate real general` file
//! of 400000 x 400000 with 12 entries per row at uniformly random columns (4.8M entries),
//! values uniform in (0, 1) printed with full precision (shortest round-trip form, 16 to 17
//! significant digits), rows in order as a writer of a CSR matrix emits them: about 160 MB.
//! A second file holds the same lines
//! shuffled, for spgpu's unsorted path (counting sort).
//!
//! Groups, all with `Throughput::Bytes(file size)`:
//! - `mm_read/spgpu_csr_f64`: [`spgpu::io::read_csr`] (parallel parse, CSR built);
//! - `mm_read/spgpu_csr_f64_shuffled`: the same on the shuffled file;
//! - `mm_read/sprs_trimat_f64`: `sprs::io::read_matrix_market` (triplets only);
//! - `mm_read/nalgebra_coo_f64`: `nalgebra_sparse::io::load_coo_from_matrix_market_file`
//!   (COO only), 7 to 18 s per read depending on the machine: 10 samples, one iteration
//!   each, no warm-up to speak of.
//!
//! Run: `cargo bench --bench mm_read`. Set `SPGPU_MM_BENCH_ROWS` for a smaller file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const PER_ROW: usize = 12;

fn rows() -> usize {
    std::env::var("SPGPU_MM_BENCH_ROWS").ok().and_then(|s| s.parse().ok()).unwrap_or(400_000)
}

/// Generates (once) the sorted and shuffled files; returns their paths.
fn bench_files() -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).expect("creating target/bench-data");
    let n = rows();
    let sorted = dir.join(format!("mm_read_{n}x{PER_ROW}.mtx"));
    let shuffled = dir.join(format!("mm_read_{n}x{PER_ROW}_shuffled.mtx"));
    if sorted.exists() && shuffled.exists() {
        return (sorted, shuffled);
    }
    let mut rng = StdRng::seed_from_u64(2026);
    let mut lines: Vec<String> = Vec::with_capacity(n * PER_ROW);
    let mut buf = ryu::Buffer::new();
    for i in 0..n {
        let mut cols: Vec<usize> = (0..PER_ROW).map(|_| rng.random_range(0..n)).collect();
        cols.sort_unstable();
        cols.dedup();
        for c in cols {
            let v: f64 = rng.random_range(f64::EPSILON..1.0);
            lines.push(format!("{} {} {}", i + 1, c + 1, buf.format_finite(v)));
        }
    }
    let header = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} {}\n", lines.len());
    let write = |path: &Path, lines: &[String]| {
        let mut w = std::io::BufWriter::new(std::fs::File::create(path).expect("creating the bench file"));
        w.write_all(header.as_bytes()).unwrap();
        for l in lines {
            w.write_all(l.as_bytes()).unwrap();
            w.write_all(b"\n").unwrap();
        }
        w.flush().unwrap();
    };
    write(&sorted, &lines);
    // Fisher-Yates with the same seeded generator.
    for k in (1..lines.len()).rev() {
        let j = rng.random_range(0..=k);
        lines.swap(k, j);
    }
    write(&shuffled, &lines);
    (sorted, shuffled)
}

fn mm_read(c: &mut Criterion) {
    let (sorted, shuffled) = bench_files();
    let bytes = std::fs::metadata(&sorted).unwrap().len();
    println!("bench file: {} ({:.1} MB)", sorted.display(), bytes as f64 / 1e6);
    let mut g = c.benchmark_group("mm_read");
    g.throughput(Throughput::Bytes(bytes));
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(2));
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("spgpu_csr_f64", |b| {
        b.iter(|| spgpu::io::read_csr::<f64>(&sorted).expect("spgpu read"));
    });
    g.bench_function("spgpu_csr_f64_shuffled", |b| {
        b.iter(|| spgpu::io::read_csr::<f64>(&shuffled).expect("spgpu read"));
    });
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("sprs_trimat_f64", |b| {
        b.iter(|| sprs::io::read_matrix_market::<f64, usize, _>(&sorted).expect("sprs read"));
    });
    // Seconds per read: the minimum of 10 samples, each one read.
    g.warm_up_time(Duration::from_millis(1));
    g.measurement_time(Duration::from_secs(1));
    g.bench_function("nalgebra_coo_f64", |b| {
        b.iter(|| nalgebra_sparse::io::load_coo_from_matrix_market_file::<f64, _>(&sorted).expect("nalgebra read"));
    });
    g.finish();
}

criterion_group!(benches, mm_read);
criterion_main!(benches);
