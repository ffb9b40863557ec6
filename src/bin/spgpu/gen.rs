//! `spgpu gen`: write one of the crate's generated matrices ([`spgpu::gen`]) as Matrix
//! Market.
//!
//! `spgpu gen lap2d --size 1000 -o lap.mtx`, or a full name as `spgpu::gen::from_spec`
//! takes it, with or without `gen:`: `spgpu gen uniform:1000:1000:8 -o u.mtx`. `-o -`
//! writes to standard output; the line that says what was written goes to standard error.

use std::path::PathBuf;

use spgpu::io::{self, MmSymmetry};
use spgpu::{CsrMatrix, Scalar};

use crate::{files, CliResult, UsageError};

/// The generated matrices by full name, for `spgpu gen --help` (as `spgpu::gen::from_spec`
/// documents them).
const NAMES: &str = "\
Generated matrices by full name (also accepted as gen:NAME wherever a matrix file is):
  lap2d:N                       2D 5-point Laplacian, N^2 rows (SPD)
  lap3d:N                       3D 7-point Laplacian, N^3 rows (SPD)
  stencil27:N                   3D 27-point stencil, N^3 rows (SPD)
  elast:N                       3-DOF elasticity on an N^3 grid: 3 N^3 rows, 81 entries per
                                interior row (SPD); elast:64 has 61.7M entries
  uniform:ROWS:COLS:PER_ROW[:SEED]   PER_ROW uniform random columns per row
  powerlaw:ROWS[:SEED]          Lomax row lengths (mean 12.8, up to 20000), uniform columns
  longrows:ROWS[:SEED]          uniform:ROWS:10*ROWS:1000
  banded:N:HALF[:SEED]          band of half-width HALF (SPD)
  rmat:SCALE:EDGEFACTOR[:SEED]  Graph500 R-MAT graph (a=0.57, b=c=0.19): 2^SCALE rows,
                                EDGEFACTOR*2^SCALE edges drawn, labels permuted, self loops
                                dropped, repeats merged, weights in [0.5, 1.5); rmat:21:16
  circuit:N[:SEED]              3-8 entries per row near the diagonal, plus N/50000 power nets
                                of 20000-80000 entries in a row and a column (SPD);
                                circuit:3000000 has about 21M entries
  web:N[:SEED]                  web crawl: power-law out-degrees (mean 12.5, up to 5000),
                                75% of links within 16384 ids; web:4000000
  geo:N[:SEED]                  random geometric graph in the unit square, 12 neighbours on
                                average, numbered cell by cell (SPD); geo:4000000
  communities:N:SIZE[:DEGREE[:SEED]]  N vertices in communities of SIZE, DEGREE (default
                                16) links each, 90% inside their community, numbered
                                community by community; permute:communities:4000000:2000
  graphlap:NAME                 shifted graph Laplacian L + I of NAME's symmetrized pattern:
                                rows sum to 1 (SPD); graphlap:rmat:20:16
  transpose:NAME                the transpose of NAME: transpose:powerlaw:4000000 has even
                                rows and a few columns of up to 20000 entries
  permute:NAME                  P A P^T for the square NAME and a seeded random numbering P
                                (a grid point's 3 rows of elast stay together): a mesh or
                                graph numbered at random; permute:lap3d:150
The seed defaults to 42; the same name gives the same matrix on any machine.

Memory: the peak host memory of building the matrix is estimated first, and the
command stops at once when it exceeds the limit: SPGPU_MEM_LIMIT (bytes, with an optional
K, M, G or T suffix: SPGPU_MEM_LIMIT=64G) when set, else the memory available.";

/// Arguments of `spgpu gen`.
#[derive(clap::Args)]
#[command(after_long_help = NAMES, allow_negative_numbers = true)]
pub struct Args {
    /// The generator: lap2d, lap3d, stencil27, elast (grid side --size), uniform (--size rows,
    /// --cols, --per-row), powerlaw, longrows, circuit, web, geo (--size rows), banded
    /// (--size, --half-bandwidth), rmat (--size is the scale, --edge-factor); or a full name
    /// such as `lap2d:100`, `uniform:1000:1000:8:7` or `graphlap:rmat:16:16` (see --help).
    pub kind: String,
    /// Grid side (lap2d, lap3d, stencil27, elast, banded), number of rows (uniform, powerlaw,
    /// longrows, circuit, web, geo) or scale (rmat: 2^size rows).
    #[arg(long, value_parser = crate::whole::<usize>)]
    pub size: Option<usize>,
    /// Columns (uniform; default: --size).
    #[arg(long, value_parser = crate::whole::<usize>)]
    pub cols: Option<usize>,
    /// Entries per row (uniform).
    #[arg(long, default_value_t = 10, value_parser = crate::whole::<usize>)]
    pub per_row: usize,
    /// Half bandwidth (banded).
    #[arg(long, default_value_t = 5, value_parser = crate::whole::<usize>)]
    pub half_bandwidth: usize,
    /// Edges drawn per vertex (rmat).
    #[arg(long, default_value_t = 16, value_parser = crate::whole::<usize>)]
    pub edge_factor: usize,
    /// Random seed (uniform, powerlaw, longrows, banded, rmat, circuit, web, geo).
    #[arg(long, default_value_t = 42, value_parser = crate::whole::<u64>)]
    pub seed: u64,
    /// Write the lower triangle as `symmetric` (the Laplacians, stencils, elast, banded,
    /// circuit, geo and graphlap are symmetric).
    #[arg(long)]
    pub symmetric: bool,
    /// Precision of the values written: f64 or f32.
    #[arg(long, default_value = "f64", value_parser = ["f64", "f32"])]
    pub precision: String,
    /// The Matrix Market file to write (`.gz` for gzip; `-` for standard output).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// The `spgpu::gen::from_spec` name of the matrix the arguments ask for, without `gen:`.
fn spec(args: &Args) -> Result<String, UsageError> {
    let kind = args.kind.strip_prefix("gen:").unwrap_or(&args.kind);
    if kind.contains(':') {
        return Ok(kind.to_string());
    }
    let size = args.size.ok_or_else(|| UsageError(format!("spgpu gen {kind}: --size is required")))?;
    Ok(match kind {
        "lap2d" | "lap3d" | "stencil27" | "elast" => format!("{kind}:{size}"),
        "uniform" => format!("uniform:{size}:{}:{}:{}", args.cols.unwrap_or(size), args.per_row, args.seed),
        "powerlaw" | "longrows" | "circuit" | "web" | "geo" => format!("{kind}:{size}:{}", args.seed),
        "banded" => format!("banded:{size}:{}:{}", args.half_bandwidth, args.seed),
        "rmat" => format!("rmat:{size}:{}:{}", args.edge_factor, args.seed),
        k => {
            return Err(UsageError(format!(
                "unknown generator '{k}': expected lap2d, lap3d, stencil27, elast, uniform, powerlaw, longrows, \
                 banded, rmat, circuit, web or geo, or a full name such as graphlap:rmat:16:16"
            )))
        }
    })
}

fn generate<T: Scalar>(args: &Args, spec: &str) -> CliResult {
    let a: CsrMatrix<T> = crate::load_matrix(&format!("gen:{spec}"))?;
    let symmetry = if args.symmetric { MmSymmetry::Symmetric } else { MmSymmetry::General };
    files::write(&args.output, |w| io::write_csr_to_writer(w, &a, symmetry))?;
    eprintln!(
        "wrote {}: gen:{spec}, {} x {}, {} entries ({})",
        if files::is_stdio(&args.output) { "standard output".into() } else { args.output.display().to_string() },
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
    files::check_outputs(&[], &[("-o", &args.output)])?;
    if args.precision == "f32" {
        generate::<f32>(&args, &spec)
    } else {
        generate::<f64>(&args, &spec)
    }
}
