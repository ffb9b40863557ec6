//! `spgpu cg` (being written).
use crate::CliResult;

/// Arguments of `spgpu cg`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `spgpu cg`.
pub fn run(_args: Args) -> CliResult {
    Err("spgpu cg is not available in this build yet".into())
}
