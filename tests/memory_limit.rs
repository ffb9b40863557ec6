//! Sizes from a header never drive an allocation past the memory allowance: a file that
//! announces huge dimensions (or more entries than fit) is `Error::InsufficientMemory`
//! naming the size, never an abort.
//!
//! The limit of `spgpu::io::set_memory_limit` is global to the process, so this binary
//! holds one test, which sets and clears it.

use std::path::{Path, PathBuf};

use spgpu::io;
use spgpu::Error;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel)
}

/// The `(what, needed, available, hint)` of an `InsufficientMemory` error.
fn insufficient<T: std::fmt::Debug>(r: spgpu::Result<T>) -> (String, u64, u64, String) {
    match r {
        Err(Error::InsufficientMemory { what, memory: "host", needed, available, hint }) => {
            (what, needed, available, hint)
        }
        other => panic!("expected InsufficientMemory, got {other:?}"),
    }
}

#[test]
fn allocations_sized_by_the_input_stay_within_the_limit() {
    const GIB: u64 = 1 << 30;
    io::set_memory_limit(Some(GIB));
    assert_eq!(io::memory_limit(), Some(GIB));

    // 2^31 - 1 rows, no entries: the CSR form needs 2^31 row offsets (16 GiB).
    let huge = data("huge/dims_no_entries.mtx");
    let (what, needed, available, hint) = insufficient(io::read_csr::<f64>(&huge));
    assert_eq!(needed, 8 << 31);
    assert!(available <= GIB, "{available}");
    assert_eq!(what, format!("{}: the row offsets of a 2147483647 x 2147483647 matrix (size line 2)", huge.display()));
    assert_eq!(hint, "the limit set with spgpu::io::set_memory_limit");
    let msg = io::read_csr::<f32>(&huge).unwrap_err().to_string();
    assert!(
        msg.starts_with("not enough host memory for ") && msg.contains("needs about 16.0 GiB, 1.0 GiB available"),
        "{msg}"
    );
    // COO needs no memory per row: the matrix reads, with its dimensions.
    let coo = io::read_coo::<f64>(&huge).unwrap();
    assert_eq!((coo.nrows(), coo.ncols(), coo.nnz()), (2147483647, 2147483647, 0));
    // The same through a reader (no size), and gzip-compressed.
    let bytes = std::fs::read(&huge).unwrap();
    assert_eq!(insufficient(io::read_csr_from_reader::<f64>(&bytes[..])).1, 8 << 31);
    // A vector of 2^31 - 1 f64 (16 GiB).
    let (what, needed, ..) = insufficient(io::read_vector::<f64>(data("huge/vector_no_entries.mtx")));
    assert_eq!(needed, 8 * 2147483647);
    assert!(what.ends_with("a vector of length 2147483647 (size line 2)"), "{what}");
    // One row of 2^31 - 1 columns is cheap in CSR.
    let wide = io::read_csr::<f64>(data("huge/columns_no_entries.mtx")).unwrap();
    assert_eq!((wide.nrows(), wide.ncols(), wide.row_offsets()), (1, 2147483647, &[0u64, 0][..]));

    // Within the limit, large dimensions read as before.
    let text = "%%MatrixMarket matrix coordinate real general\n1048576 1048576 1\n1048576 3 2.5\n";
    let a = io::read_csr_from_str::<f64>(text).unwrap();
    assert_eq!((a.nrows(), a.get(1048575, 2)), (1048576, Some(2.5)));

    // Entries count too: with a 1 MiB limit, 200,000 entries (2.4 MiB of triplets) do not
    // fit, whatever the size line says.
    io::set_memory_limit(Some(1 << 20));
    let mut big = String::from("%%MatrixMarket matrix coordinate real general\n1000 1000 200000\n");
    for k in 0..200_000 {
        big.push_str(&format!("{} {} 1\n", k % 1000 + 1, k / 1000 % 1000 + 1));
    }
    let (what, needed, available, _) = insufficient(io::read_csr_from_reader::<f64>(big.as_bytes()));
    assert!(needed > 1 << 20 && available == 1 << 20, "{needed} {available}");
    assert!(what.starts_with("the "), "{what}");
    let (_, needed, ..) = insufficient(io::read_csr_from_str::<f64>(&big));
    assert!(needed > 1 << 20);

    // The public check, as the command line uses it for its vectors.
    assert!(io::check_memory("x", 1 << 19).is_ok());
    let (what, needed, ..) = insufficient(io::check_memory("the vectors of a 1 x 2147483647 SpMV", 1 << 34));
    assert_eq!((what.as_str(), needed), ("the vectors of a 1 x 2147483647 SpMV", 1 << 34));

    io::set_memory_limit(None);
    assert_eq!(io::memory_limit(), None);
    assert!(io::read_csr_from_str::<f64>(&big).is_ok());
    // What the system reports is always some positive amount on Linux.
    if cfg!(target_os = "linux") {
        assert!(io::available_host_memory().is_some_and(|a| a > 0));
    }
}
