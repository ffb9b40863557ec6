//! The tests of the `spgpu` command line (they run the binary), in one test executable:
//! `cargo test --test cli cli_exit::` runs one file's tests.

#[path = "../common/mod.rs"]
mod common;

mod bench_cli;
mod cli_exit;
mod cli_io;
mod cli_reorder;
mod cli_review;
mod cli_unix;
