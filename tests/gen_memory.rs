//! The generators' peak host memory, measured by a counting allocator, against
//! `gen::estimate_host_bytes`; and the memory limit of `gen::from_spec`
//! (`SPGPU_MEM_LIMIT`). One test only: the allocator's count is process-wide and the
//! environment is shared, so nothing may run beside it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use spgpu::{gen, CsrMatrix, Error};

/// The system allocator, counting the bytes held now and the most held since the last reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = HELD.fetch_add(bytes, Ordering::SeqCst) + bytes;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: every call forwards to the system allocator with the caller's arguments, and only
// counts sizes on the side.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        System.dealloc(p, layout);
        HELD.fetch_sub(layout.size(), Ordering::SeqCst);
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = System.realloc(p, layout, new_size);
        if !q.is_null() {
            // Counted as a copy: both blocks at once, then the old one freed.
            grew(new_size);
            HELD.fetch_sub(layout.size(), Ordering::SeqCst);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Builds `spec` (f64, no memory limit) and returns the matrix and the most bytes held
/// meanwhile beyond what was held before.
fn peak_of(spec: &str) -> (CsrMatrix<f64>, u64) {
    let before = HELD.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let a = gen::from_spec_with_limit::<f64>(spec, None).unwrap();
    (a, (PEAK.load(Ordering::SeqCst) - before) as u64)
}

#[test]
fn estimates_bound_the_measured_peak() {
    peak_of("lap2d:10"); // the thread pool's own allocations, once
    let specs = [
        "lap2d:300",
        "stencil27:30",
        "elast:10",
        "banded:50000:5",
        "uniform:20000:20000:10",
        "powerlaw:100000",
        "longrows:2000",
        "rmat:14:16",
        "circuit:100000",
        "web:50000",
        "geo:50000",
        "graphlap:rmat:13:16",
        "graphlap:lap2d:200",
        "communities:50000:500",
    ];
    // A transpose holds the matrix twice while it sorts the entries by column, a
    // renumbering while it writes the renumbered copy.
    let twice = ["transpose:powerlaw:100000", "transpose:uniform:20000:30000:10", "permute:lap2d:300"];
    for (spec, copies) in specs.iter().map(|s| (*s, 1)).chain(twice.iter().map(|s| (*s, 2))) {
        let estimate = gen::estimate_host_bytes::<f64>(spec).unwrap();
        let (a, peak) = peak_of(spec);
        let bytes = copies * (8 * (a.nrows() as u64 + 1) + 12 * a.nnz() as u64);
        println!("{spec}: matrix {bytes} B ({copies} copies), peak {peak} B, estimate {estimate} B");
        // The estimate bounds the peak (beside a few scratch rows and task lists) ...
        assert!(peak <= estimate + estimate / 50 + (256 << 10), "{spec}: peak {peak} > estimate {estimate}");
        // ... without overstating it much,
        assert!(estimate <= 2 * peak, "{spec}: estimate {estimate} > 2 x peak {peak}");
        // and the peak stays near the size of the matrices held at once.
        assert!(
            peak >= bytes - bytes / 20 && peak <= bytes + bytes / 2 + (1 << 20),
            "{spec}: peak {peak}, matrix {bytes}"
        );
    }
    // Exact where a formula gives the entry count.
    for spec in ["lap2d:300", "stencil27:30", "elast:10", "banded:50000:5"] {
        let a = gen::from_spec_with_limit::<f64>(spec, None).unwrap();
        let bytes = 8 * (a.nrows() as u64 + 1) + 12 * a.nnz() as u64;
        assert_eq!(gen::estimate_host_bytes::<f64>(spec).unwrap(), bytes, "{spec}");
    }

    // A refusal allocates nothing of the matrix's size: lap2d:20000 would need 25.6 GB.
    let before = HELD.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let refused = gen::from_spec_with_limit::<f64>("lap2d:20000", Some(1 << 30));
    assert!(matches!(refused, Err(Error::InsufficientMemory { .. })), "{refused:?}");
    assert!(PEAK.load(Ordering::SeqCst) - before < 1 << 16);

    // SPGPU_MEM_LIMIT sets the limit of from_spec, above or below what is available.
    std::env::set_var("SPGPU_MEM_LIMIT", "1M");
    assert_eq!(gen::host_memory_limit().unwrap(), Some(1 << 20));
    match gen::from_spec::<f64>("lap2d:1000") {
        Err(Error::InsufficientMemory { what, needed, available, hint, .. }) => {
            assert_eq!((what.as_str(), needed, available), ("gen:lap2d:1000 (f64 CSR)", 67_952_008, 1 << 20));
            assert_eq!(hint, "set SPGPU_MEM_LIMIT to raise the limit");
        }
        other => panic!("expected InsufficientMemory, got {other:?}"),
    }
    assert_eq!(gen::from_spec::<f64>("lap2d:100").unwrap().nrows(), 10_000);
    std::env::set_var("SPGPU_MEM_LIMIT", "1024T");
    assert_eq!(gen::host_memory_limit().unwrap(), Some(1 << 50));
    std::env::set_var("SPGPU_MEM_LIMIT", "lots");
    match gen::from_spec::<f64>("lap2d:10") {
        Err(Error::InvalidArgument(msg)) => assert!(msg.starts_with("SPGPU_MEM_LIMIT='lots'"), "{msg}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    std::env::remove_var("SPGPU_MEM_LIMIT");
    if cfg!(target_os = "linux") {
        let available = gen::available_host_memory().expect("/proc/meminfo has MemAvailable");
        assert!(available > 1 << 20);
        assert!(gen::host_memory_limit().unwrap().is_some());
    }
}
