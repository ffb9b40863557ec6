//! `spgpu info`: what a matrix is, before it is computed with.
//!
//! Prints the Matrix Market banner, the dimensions, the stored and expanded entry counts,
//! the row-length statistics and histogram, the structural and numerical symmetry, how
//! unevenly the columns are read (what the balanced kernel's hot columns would hold), and the
//! SpMV plan the GPU code would choose ([`SpmvPlan::with_columns`] with the matrix's
//! [`SpmvPlan::column_layout`] and a warp of 32, for f64 values and, where it differs, f32;
//! no GPU is needed).

use spgpu::gpu::hot::{HotColumns, HOT_BYTES_PER_BLOCK};
use spgpu::gpu::{KernelChoice, SpmvPlan};
use spgpu::CsrMatrix;

use crate::CliResult;

/// Arguments of `spgpu info`.
#[derive(clap::Args)]
pub struct Args {
    /// A Matrix Market file (plain or gzip-compressed), `-` for standard input, or a
    /// generated matrix `gen:NAME` (any name of `spgpu gen --help`: lap2d:N, uniform:R:C:K,
    /// powerlaw:R, rmat:S:E, web:N, circuit:N, geo:N, elast:N, graphlap:NAME, transpose:NAME,
    /// ...).
    pub matrix: String,
}

/// How symmetric a matrix is.
struct Symmetry {
    /// Off-diagonal entries whose mirror position is also stored.
    mirrored: usize,
    /// Off-diagonal entries.
    off_diagonal: usize,
    /// Whether every mirror is stored with an equal value.
    numerically: bool,
}

fn symmetry(a: &CsrMatrix<f64>) -> Option<Symmetry> {
    if a.nrows() != a.ncols() {
        return None;
    }
    // rows in parallel (a binary search per entry, no transpose: billions of entries cost
    // no second copy)
    use rayon::prelude::*;
    let s = (0..a.nrows())
        .into_par_iter()
        .fold(
            || Symmetry { mirrored: 0, off_diagonal: 0, numerically: true },
            |mut s, i| {
                let (cols, vals) = a.row(i);
                for (&j, &v) in cols.iter().zip(vals) {
                    if j as usize == i {
                        continue;
                    }
                    s.off_diagonal += 1;
                    let (mc, mv) = a.row(j as usize);
                    match mc.binary_search(&(i as u32)) {
                        Ok(k) => {
                            s.mirrored += 1;
                            s.numerically &= mv[k] == v;
                        }
                        Err(_) => s.numerically = false,
                    }
                }
                s
            },
        )
        .reduce(
            || Symmetry { mirrored: 0, off_diagonal: 0, numerically: true },
            |x, y| Symmetry {
                mirrored: x.mirrored + y.mirrored,
                off_diagonal: x.off_diagonal + y.off_diagonal,
                numerically: x.numerically && y.numerically,
            },
        );
    Some(s)
}

/// Runs `spgpu info`.
pub fn run(args: Args) -> CliResult {
    let (header, a) = crate::load_with_header::<f64>(&args.matrix, true)?;
    match &header {
        Some(h) => {
            outln!("file:            {}", if args.matrix == "-" { "standard input" } else { &args.matrix })?;
            outln!(
                "banner:          %%MatrixMarket {} {} {} {}",
                h.object.keyword(),
                h.format.keyword(),
                h.field.keyword(),
                h.symmetry.keyword()
            )?;
            outln!("stored entries:  {} (in the file)", h.entries)?;
        }
        None if args.matrix.starts_with("gen:") => {
            outln!("matrix:          {} (generated)", args.matrix)?;
            outln!("stored entries:  {}", a.nnz())?;
        }
        None => outln!("file:            {} (its header is not in its first MiB)", args.matrix)?,
    }
    outln!("dimensions:      {} x {}", a.nrows(), a.ncols())?;
    let cells = a.nrows() as f64 * a.ncols() as f64;
    let density = if cells > 0.0 { a.nnz() as f64 / cells } else { 0.0 };
    outln!("nnz:             {} (symmetry expanded, duplicates summed; density {density:.3e})", a.nnz())?;
    let stats = a.row_stats();
    out!("{stats}")?;
    match symmetry(&a) {
        None => outln!("symmetry:        none (not square)")?,
        Some(s) => {
            let pct = if s.off_diagonal == 0 { 100.0 } else { 100.0 * s.mirrored as f64 / s.off_diagonal as f64 };
            let structural = if s.mirrored == s.off_diagonal { "yes" } else { "no" };
            outln!(
                "symmetry:        structurally symmetric: {structural} ({pct:.1}% of {} off-diagonal entries mirrored); \
                 numerically symmetric: {}",
                s.off_diagonal,
                if s.numerically { "yes" } else { "no" }
            )?;
        }
    }
    column_reads(&a)?;
    // The plan the GPU code would choose (warp of 32) for f64 values; its text starts
    // "SpMV plan:". A rule that depends on the element type may choose otherwise for f32.
    let hint = SpmvPlan::column_layout(&a, &stats, KernelChoice::Auto, &spgpu::gpu::Tuning::from_env());
    let plan = SpmvPlan::with_columns::<f64>(&stats, 32, KernelChoice::Auto, hint)?;
    outln!("{}", plan.explain().trim_end())?;
    let single = SpmvPlan::with_columns::<f32>(&stats, 32, KernelChoice::Auto, hint)?;
    if single.kernel() != plan.kernel() {
        outln!("  with f32 values: {} ({})", single.kernel(), single.reason())?;
    }
    Ok(())
}

/// How unevenly the columns are read: the share of the entries in the most-read columns, as
/// many as the balanced kernel's hot columns hold per block in f64 and f32
/// ([`HOT_BYTES_PER_BLOCK`]; on the GPU the upload also asks each to repay its copy).
fn column_reads(a: &CsrMatrix<f64>) -> CliResult {
    if a.nnz() == 0 {
        return Ok(());
    }
    // the share of the entries in the most-read columns, and how many times their share of
    // the columns that is
    let share = |bytes: usize| {
        let hot = HotColumns::select(a.col_indices(), a.ncols(), HOT_BYTES_PER_BLOCK / bytes, 0);
        let share = hot.entries() as f64 / a.nnz() as f64;
        (hot.len(), 100.0 * share, share * a.ncols() as f64 / hot.len().max(1) as f64)
    };
    let ((n64, s64, k64), (n32, s32, k32)) = (share(8), share(4));
    outln!(
        "column reads:    the {n64} most-read columns hold {s64:.1}% of the entries ({k64:.1} x their share of \
         the columns), the {n32} most-read {s32:.1}% ({k32:.1} x): what hot columns would hold in f64 and f32"
    )?;
    Ok(())
}
