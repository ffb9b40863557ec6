//! The host-side tests that need no GPU, no `spgpu` binary and no process-wide setting, in
//! one test executable: each file below was its own, and every one linked the whole crate
//! (`cargo test --test host formats::` runs one file's tests).
//!
//! The tests that set a process-wide state (the reader's memory limit, an environment
//! variable, a counting allocator) stay in their own executables: `memory_limit`, `mm_fuzz`,
//! `offsets64`, `gen_memory`.

#[path = "../common/mod.rs"]
mod common;

mod format_errors;
mod formats;
mod generators;
// the sprs and nalgebra-sparse conversions exist with both features only
#[cfg(all(feature = "sprs", feature = "nalgebra"))]
mod interop;
mod matrix_market;
mod reference;
mod reorder;
