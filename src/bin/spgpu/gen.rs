//! `spgpu gen` (being written).
use crate::CliResult;

/// Arguments of `spgpu gen`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `spgpu gen`.
pub fn run(_args: Args) -> CliResult {
    Err("spgpu gen is not available in this build yet".into())
}
