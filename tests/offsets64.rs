//! Host-side 64-bit index paths: entry counts past 2^31 are no longer refused by any index
//! limit (memory is the limit), sizes are planned before anything is built, and the
//! Matrix Market header takes entry counts past 2^31.

use spgpu::{gen, io, CsrMatrix, Error, FormatError, ENTRY_LIMIT, INDEX_LIMIT};

#[test]
fn generated_matrices_past_2_to_the_31_entries_are_planned_not_refused() {
    // lap3d:680: 314,432,000 rows, 2,198,249,600 entries (past INDEX_LIMIT): 8 bytes per
    // offset, 12 per f64 entry, exactly.
    let nnz = 7 * 680u64.pow(3) - 6 * 680u64.pow(2);
    assert!(nnz > INDEX_LIMIT as u64);
    assert_eq!(gen::estimate_host_bytes::<f64>("lap3d:680").unwrap(), 8 * (680u64.pow(3) + 1) + 12 * nnz);
    // Refused with the estimate when the memory limit is below it, before anything is built.
    match gen::from_spec_with_limit::<f32>("lap3d:680", Some(1 << 30)) {
        Err(Error::InsufficientMemory { needed, available, .. }) => {
            assert_eq!((needed, available), (8 * (680u64.pow(3) + 1) + 8 * nnz, 1 << 30))
        }
        other => panic!("expected InsufficientMemory, got {other:?}"),
    }
    // An R-MAT graph of 4.3 billion drawn edges is planned, and refused the same way.
    let rmat = gen::estimate_host_bytes::<f32>("rmat:27:32").unwrap();
    assert!(rmat >= 8 * (32u64 << 27), "{rmat}");
    assert!(matches!(
        gen::from_spec_with_limit::<f32>("rmat:27:32", Some(1 << 30)),
        Err(Error::InsufficientMemory { .. })
    ));
    // Only counts no allocation could hold are refused as too large.
    assert!(matches!(
        gen::rmat::<f32>(30, 1 << 30, 0),
        Err(FormatError::TooLarge { what: "stored entries (expected)", limit: ENTRY_LIMIT, .. })
    ));
}

#[test]
fn the_matrix_market_header_takes_entry_counts_past_2_to_the_31() {
    // 2^31 entries declared, one given: the count is read (no index limit on it), and the
    // file is then refused for what it lacks or for the memory the count asks for; never as
    // "too large".
    let text = "%%MatrixMarket matrix coordinate real general\n3 3 2147483648\n1 1 1.0\n";
    let h = io::read_header_from_reader(text.as_bytes()).unwrap();
    assert_eq!(h.entries, 1 << 31);
    io::set_memory_limit(Some(1 << 30));
    let r = io::read_csr_from_str::<f64>(text);
    io::set_memory_limit(None);
    match r {
        Err(Error::InsufficientMemory { .. }) => {}
        Err(Error::MatrixMarket(e)) => assert_ne!(e.kind, io::MatrixMarketErrorKind::TooLarge, "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Dimensions keep their 32-bit limit.
    let text = "%%MatrixMarket matrix coordinate real general\n2147483648 3 1\n1 1 1.0\n";
    match io::read_csr_from_str::<f64>(text) {
        Err(Error::MatrixMarket(e)) => assert_eq!(e.kind, io::MatrixMarketErrorKind::TooLarge),
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn offsets_are_64_bit_on_the_host_and_round_trip_through_sprs_and_nalgebra() {
    let a = gen::laplacian_2d::<f64>(30);
    let offsets: &[u64] = a.row_offsets();
    assert_eq!(offsets[a.nrows()], a.nnz() as u64);
    let s: sprs::CsMat<f64> = a.clone().into();
    assert_eq!(s.indptr().raw_storage().iter().map(|&o| o as u64).collect::<Vec<_>>(), offsets);
    assert_eq!(CsrMatrix::try_from(&s).unwrap(), a);
    let n: nalgebra_sparse::CsrMatrix<f64> = a.clone().into();
    assert_eq!(CsrMatrix::try_from(n).unwrap(), a);
}

/// Time and peak memory of generating an R-MAT graph: `SPGPU_RMAT=SCALE:EDGEFACTOR cargo test
/// --release --test offsets64 -- --ignored --nocapture` (f32).
#[test]
#[ignore = "a measurement: run by hand with SPGPU_RMAT set"]
fn rmat_generation_time_and_peak_memory() {
    let spec = std::env::var("SPGPU_RMAT").unwrap_or_else(|_| "20:16".into());
    let started = std::time::Instant::now();
    let a = gen::from_spec_with_limit::<f32>(&format!("rmat:{spec}"), None).unwrap();
    let secs = started.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm: u64 =
        status.lines().find(|l| l.starts_with("VmHWM:")).unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    let csr = 8 * (a.nrows() as u64 + 1) + 8 * a.nnz() as u64;
    println!(
        "rmat:{spec}: {} entries in {secs:.2} s on {} threads; peak {:.3} GiB = {:.3}x the CSR arrays ({:.3} GiB)",
        a.nnz(),
        rayon::current_num_threads(),
        (hwm * 1024) as f64 / (1u64 << 30) as f64,
        (hwm * 1024) as f64 / csr as f64,
        csr as f64 / (1u64 << 30) as f64
    );
    assert!(a.nnz() > 0);
}
