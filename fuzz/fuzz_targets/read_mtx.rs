//! Fuzzes the Matrix Market reader on arbitrary bytes: CSR (f64 and f32), COO and vectors,
//! plain and gzip-compressed; every matrix read must write and read back identically, and
//! every error must be one printable line.
//!
//! Dimensions up to the index limit are read: the reader's memory limit is set to
//! [`MEMORY_LIMIT`], so a header that announces more rows than that holds is an
//! `InsufficientMemory` error, found before anything is allocated.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run read_mtx seeds -- -max_total_time=600 -rss_limit_mb=2048 -timeout=10`
//! (from `fuzz/`; copy `seeds/` to a scratch corpus first to keep it clean).
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use spgpu::io;
use spgpu::{CsrMatrix, Error, Scalar};

/// The most one array the reader allocates may take (8 MiB: 2^21 row offsets). Larger
/// dimensions are refused before anything is allocated; within the limit each input still
/// builds several CSR matrices of that many rows (f64 and f32, round trips, gzip, and the
/// debug build's validation of each), which keeps the slowest input near a second under
/// AddressSanitizer.
const MEMORY_LIMIT: u64 = 8 << 20;

/// Whether `r` failed for want of memory (dimensions past [`MEMORY_LIMIT`]).
fn out_of_memory<T>(r: &spgpu::Result<T>) -> bool {
    matches!(r, Err(Error::InsufficientMemory { .. }))
}

fn same<T: Scalar>(a: &CsrMatrix<T>, b: &CsrMatrix<T>) -> bool {
    a.nrows() == b.nrows()
        && a.ncols() == b.ncols()
        && a.row_offsets() == b.row_offsets()
        && a.col_indices() == b.col_indices()
        && a.values().iter().zip(b.values()).all(|(x, y)| {
            let (x, y) = (x.to_f64(), y.to_f64());
            // Bitwise (so -0.0 differs from 0.0), except that a NaN is written `nan`: its
            // sign and payload do not survive text.
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        })
}

fn round_trip<T: Scalar>(a: &CsrMatrix<T>) {
    let mut out = Vec::new();
    io::write_csr_to_writer(&mut out, a, io::MmSymmetry::General).expect("writing to memory");
    let b = io::read_csr_from_reader::<T>(&out[..]).expect("reading back what was written");
    assert!(same(a, &b), "round trip changed the matrix");
}

fuzz_target!(|data: &[u8]| {
    io::set_memory_limit(Some(MEMORY_LIMIT));
    let header = io::read_header_from_reader(data);
    let a = io::read_csr_from_reader::<f64>(data);
    let b = io::read_csr_from_reader::<f32>(data);
    if let Ok(a) = &a {
        round_trip(a);
    }
    if let Ok(b) = &b {
        round_trip(b);
        // Every file f32 accepts, f64 accepts (f32 only adds overflow errors; its row
        // offsets take as much memory).
        assert!(a.is_ok(), "f32 accepted a file that f64 rejected");
    }
    for e in [a.as_ref().err(), b.as_ref().err()].into_iter().flatten() {
        let msg = e.to_string();
        assert!(!msg.chars().any(char::is_control), "an error that is not one printable line: {msg:?}");
    }
    let coo = io::read_coo_from_reader::<f64>(data);
    // COO needs no memory per row: it may read what CSR cannot hold.
    if !out_of_memory(&a) {
        assert_eq!(coo.is_ok(), a.is_ok(), "COO and CSR disagree");
    }
    if let Ok(c) = &coo {
        let h = header.as_ref().expect("a COO matrix was read from a file whose header is bad");
        assert_eq!((c.nrows(), c.ncols()), (h.nrows, h.ncols), "COO dimensions differ from the header");
    }
    let v = io::read_vector_from_reader::<f64>(data);
    if let Ok(v) = &v {
        let h = header.as_ref().expect("a vector was read from a file whose header is bad");
        assert_eq!(v.len(), h.nrows, "vector length differs from the header");
    }
    if let Err(Error::InsufficientMemory { needed, .. }) = &a {
        assert!(*needed > MEMORY_LIMIT, "refused {needed} bytes, within the limit");
    }
    if let Ok(a) = &a {
        let h = header.as_ref().expect("a matrix was read from a file whose header is bad");
        assert_eq!((a.nrows(), a.ncols()), (h.nrows, h.ncols), "dimensions differ from the header");
    }
    // The gzip path, on the same bytes compressed.
    if data.first().is_some_and(|c| c & 1 == 1) && !data.starts_with(&[0x1f, 0x8b]) {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        let gz = enc.finish().unwrap();
        let c = io::read_csr_from_reader::<f64>(&gz[..]);
        match (&a, &c) {
            (Ok(a), Ok(c)) => assert!(same(a, c)),
            (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
            _ => panic!("gzip and plain reads disagree"),
        }
    }
});
