//! `spgpu convert` (being written).
use crate::CliResult;

/// Arguments of `spgpu convert`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `spgpu convert`.
pub fn run(_args: Args) -> CliResult {
    Err("spgpu convert is not available in this build yet".into())
}
