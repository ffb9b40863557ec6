//! `spgpu info` (being written).
use crate::CliResult;

/// Arguments of `spgpu info`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `spgpu info`.
pub fn run(_args: Args) -> CliResult {
    Err("spgpu info is not available in this build yet".into())
}
