//! `spgpu convert`: rewrite a matrix as sorted Matrix Market `coordinate real`.
//!
//! The input (any Matrix Market matrix the reader accepts, plain or gzip, or a generated
//! `gen:NAME`) is read with symmetry expanded and duplicates summed, then written row by
//! row with sorted columns: `general` by default, or the lower triangle as `symmetric` with
//! `--symmetric` (refused, naming an entry, when the matrix is not symmetric). An output
//! name ending in `.gz` is compressed. `-` reads standard input or writes standard output;
//! the line that says what was written goes to standard error. The output is written
//! atomically and may not be the input (`crate::files`).

use std::path::{Path, PathBuf};

use spgpu::io::{self, MmSymmetry};
use spgpu::Scalar;

use crate::{files, CliResult};

/// Arguments of `spgpu convert`.
#[derive(clap::Args)]
pub struct Args {
    /// The matrix to read: a Matrix Market file, `gen:NAME`, or `-` for standard input.
    pub input: String,
    /// The Matrix Market file to write (`.gz` for gzip; `-` for standard output).
    pub output: PathBuf,
    /// Store the lower triangle as `symmetric` (the matrix must be symmetric).
    #[arg(long)]
    pub symmetric: bool,
    /// Precision of the values: f64, or f32 (values rounded to f32 and written in their
    /// shortest f32 form).
    #[arg(long, default_value = "f64", value_parser = ["f64", "f32"])]
    pub precision: String,
}

fn convert<T: Scalar>(args: &Args) -> CliResult {
    let a = crate::load_matrix::<T>(&args.input)?;
    let symmetry = if args.symmetric { MmSymmetry::Symmetric } else { MmSymmetry::General };
    files::write(&args.output, |w| io::write_csr_to_writer(w, &a, symmetry))?;
    eprintln!(
        "wrote {}: {} x {}, {} entries, coordinate real {} ({})",
        if files::is_stdio(&args.output) { "standard output".into() } else { args.output.display().to_string() },
        a.nrows(),
        a.ncols(),
        a.nnz(),
        symmetry.keyword(),
        T::NAME
    );
    Ok(())
}

/// Runs `spgpu convert`.
pub fn run(args: Args) -> CliResult {
    files::check_outputs(&[Path::new(&args.input)], &[("the output", &args.output)])?;
    if args.precision == "f32" {
        convert::<f32>(&args)
    } else {
        convert::<f64>(&args)
    }
}
