//! `spgpu bench` (being written).
use crate::CliResult;

/// Arguments of `spgpu bench`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `spgpu bench`.
pub fn run(_args: Args) -> CliResult {
    Err("spgpu bench is not available in this build yet".into())
}
