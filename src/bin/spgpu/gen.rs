//! `spgpu gen`: write one of the crate's generated matrices ([`spgpu::gen`]) as Matrix
//! Market.
//!
//! `spgpu gen lap2d --size 1000 -o lap.mtx`, or a full name as `spgpu::gen::from_spec`
//! takes it: `spgpu gen uniform:1000:1000:8 -o u.mtx`.

use std::path::PathBuf;

use spgpu::io::{self, MmSymmetry};
use spgpu::{CsrMatrix, Scalar};

use crate::CliResult;

/// Arguments of `spgpu gen`.
#[derive(clap::Args)]
pub struct Args {
    /// The generator: lap2d, lap3d, stencil27 (grid side --size), uniform (--size rows,
    /// --cols, --per-row), powerlaw, longrows (--size rows), banded (--size, --half-bandwidth);
    /// or a full name such as `lap2d:100` or `uniform:1000:1000:8:7`.
    pub kind: String,
    /// Grid side (lap2d, lap3d, stencil27, banded) or number of rows (uniform, powerlaw,
    /// longrows).
    #[arg(long)]
    pub size: Option<usize>,
    /// Columns (uniform; default: --size).
    #[arg(long)]
    pub cols: Option<usize>,
    /// Entries per row (uniform).
    #[arg(long, default_value_t = 10)]
    pub per_row: usize,
    /// Half bandwidth (banded).
    #[arg(long, default_value_t = 5)]
    pub half_bandwidth: usize,
    /// Random seed (uniform, powerlaw, longrows, banded).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Write the lower triangle as `symmetric` (the Laplacians and stencils are symmetric).
    #[arg(long)]
    pub symmetric: bool,
    /// Precision of the values written: f64 or f32.
    #[arg(long, default_value = "f64", value_parser = ["f64", "f32"])]
    pub precision: String,
    /// The Matrix Market file to write (`.gz` for gzip).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// The `spgpu::gen::from_spec` name of the matrix the arguments ask for.
fn spec(args: &Args) -> Result<String, String> {
    if args.kind.contains(':') {
        return Ok(args.kind.clone());
    }
    let size = args.size.ok_or_else(|| format!("spgpu gen {}: --size is required", args.kind))?;
    Ok(match args.kind.as_str() {
        "lap2d" | "lap3d" | "stencil27" => format!("{}:{size}", args.kind),
        "uniform" => format!("uniform:{size}:{}:{}:{}", args.cols.unwrap_or(size), args.per_row, args.seed),
        "powerlaw" | "longrows" => format!("{}:{size}:{}", args.kind, args.seed),
        "banded" => format!("banded:{size}:{}:{}", args.half_bandwidth, args.seed),
        k => {
            return Err(format!(
                "unknown generator '{k}': expected lap2d, lap3d, stencil27, uniform, powerlaw, longrows or banded"
            ))
        }
    })
}

fn generate<T: Scalar>(args: &Args, spec: &str) -> CliResult {
    let a: CsrMatrix<T> = spgpu::gen::from_spec(spec)?;
    let symmetry = if args.symmetric { MmSymmetry::Symmetric } else { MmSymmetry::General };
    io::write_csr(&args.output, &a, symmetry)?;
    println!(
        "wrote {}: gen:{spec}, {} x {}, {} entries ({})",
        args.output.display(),
        a.nrows(),
        a.ncols(),
        a.nnz(),
        T::NAME
    );
    Ok(())
}

/// Runs `spgpu gen`.
pub fn run(args: Args) -> CliResult {
    let spec = spec(&args)?;
    if args.precision == "f32" {
        generate::<f32>(&args, &spec)
    } else {
        generate::<f64>(&args, &spec)
    }
}
