//! The `spgpu` command line: `info`, `convert`, `gen`, `spmv`, `cg` and `bench`.
//!
//! Each subcommand lives in its own module with an `Args` struct (clap) and a `run`
//! function. Errors are printed as one line, `spgpu: <message>`, with a non-zero exit and
//! no backtrace.

mod bench;
mod cg;
mod convert;
mod gen;
mod info;
mod spmv;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// What a subcommand returns: any error is printed on one line.
pub type CliResult = Result<(), Box<dyn std::error::Error>>;

/// Sparse matrix-vector products and conjugate gradient on NVIDIA GPUs.
#[derive(Parser)]
#[command(name = "spgpu", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a Matrix Market file's header, dimensions, row statistics and SpMV plan.
    Info(info::Args),
    /// Rewrite a Matrix Market file as sorted `coordinate real general` (or symmetric).
    Convert(convert::Args),
    /// Generate a matrix (Laplacians, random, power-law, banded) into a Matrix Market file.
    Gen(gen::Args),
    /// Run one SpMV on the GPU, check it against the CPU reference, and time it.
    Spmv(spmv::Args),
    /// Solve A x = b with conjugate gradient (GPU, or CPU without one).
    Cg(cg::Args),
    /// Benchmark SpMV kernels against cuSPARSE and the CPU over a set of matrices.
    Bench(bench::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(a) => info::run(a),
        Command::Convert(a) => convert::run(a),
        Command::Gen(a) => gen::run(a),
        Command::Spmv(a) => spmv::run(a),
        Command::Cg(a) => cg::run(a),
        Command::Bench(a) => bench::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spgpu: {e}");
            ExitCode::FAILURE
        }
    }
}
