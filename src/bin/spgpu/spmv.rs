//! `spgpu spmv` (being written).
use crate::CliResult;

/// Arguments of `spgpu spmv`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `spgpu spmv`.
pub fn run(_args: Args) -> CliResult {
    Err("spgpu spmv is not available in this build yet".into())
}
