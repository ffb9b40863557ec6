//! `spgpu info`: what a matrix is, before it is computed with.
//!
//! Prints the Matrix Market banner, the dimensions, the stored and expanded entry counts,
//! the row-length statistics and histogram, the structural and numerical symmetry, how
//! unevenly the columns are read (what the balanced kernel's hot columns would hold), and the
//! SpMV plan the GPU code would choose ([`SpmvPlan::with_columns`] with the matrix's
//! [`SpmvPlan::column_layout`] and a warp of 32, for f64 values and, where it differs, f32;
//! no GPU is needed). It also counts the NaN, infinite and explicitly zero values and says
//! where the first of each is (`spgpu cg` refuses a matrix with a NaN or an infinity).
//! `--json` prints the same as one JSON object.

use spgpu::gpu::hot::{HotColumns, HOT_BYTES_PER_BLOCK};
use spgpu::gpu::{KernelChoice, SpmvPlan};
use spgpu::reorder::{self, Locality};
use spgpu::CsrMatrix;

use crate::CliResult;

/// Arguments of `spgpu info`.
#[derive(clap::Args)]
pub struct Args {
    /// A Matrix Market file (plain or gzip-compressed), `-` for standard input, or a
    /// generated matrix `gen:NAME` (any name of `spgpu gen --help`: lap2d:N, uniform:R:C:K,
    /// powerlaw:R, rmat:S:E, web:N, circuit:N, geo:N, elast:N, communities:N:SIZE, graphlap:NAME,
    /// transpose:NAME, permute:NAME,
    /// ...).
    pub matrix: String,
    /// Print one JSON object on standard output instead of the text (`docs/cli.md`).
    #[arg(long)]
    pub json: bool,
}

/// The version of the JSON objects of `spgpu info`, `spmv` and `cg` (`"spgpu_json"`): raised
/// when a field changes meaning or goes; new fields may come without it.
pub const JSON_VERSION: u32 = 1;

/// Values that are not ordinary numbers: NaN, infinities, explicit zeros, each counted with
/// the (row, column) of the first, 0-based, in row order.
#[derive(Default)]
struct Values {
    nan: (usize, Option<(usize, usize)>),
    inf: (usize, Option<(usize, usize)>),
    zero: (usize, Option<(usize, usize)>),
}

fn values(a: &CsrMatrix<f64>) -> Values {
    use rayon::prelude::*;
    let count = |(n, first): &mut (usize, Option<(usize, usize)>), at: (usize, usize)| {
        *n += 1;
        first.get_or_insert(at);
    };
    let merge = |x: (usize, Option<(usize, usize)>), y: (usize, Option<(usize, usize)>)| (x.0 + y.0, x.1.or(y.1));
    (0..a.nrows())
        .into_par_iter()
        .fold(Values::default, |mut s, i| {
            let (cols, vals) = a.row(i);
            for (&j, &v) in cols.iter().zip(vals) {
                let at = (i, j as usize);
                if v.is_nan() {
                    count(&mut s.nan, at);
                } else if v.is_infinite() {
                    count(&mut s.inf, at);
                } else if v == 0.0 {
                    count(&mut s.zero, at);
                }
            }
            s
        })
        .reduce(Values::default, |x, y| Values {
            nan: merge(x.nan, y.nan),
            inf: merge(x.inf, y.inf),
            zero: merge(x.zero, y.zero),
        })
}

impl Values {
    /// One phrase per kind: `2 NaN (the first at row 3, column 1)`, 1-based.
    fn describe(&self) -> String {
        let one = |(n, first): (usize, Option<(usize, usize)>), what: &str| match first {
            Some((i, j)) if n > 0 => format!("{n} {what} (the first at row {}, column {})", i + 1, j + 1),
            _ => format!("0 {what}"),
        };
        format!("{}, {}, {}", one(self.nan, "NaN"), one(self.inf, "infinite"), one(self.zero, "explicit zeros"))
    }

    fn json(&self) -> serde_json::Value {
        let one = |(n, first): (usize, Option<(usize, usize)>)| {
            serde_json::json!({
                "count": n,
                "first": first.map(|(i, j)| serde_json::json!({ "row": i + 1, "col": j + 1 })),
            })
        };
        serde_json::json!({ "nan": one(self.nan), "infinite": one(self.inf), "explicit_zeros": one(self.zero) })
    }
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
    let generated = args.matrix.starts_with("gen:");
    let (header, a) = crate::load_with_header::<f64>(&args.matrix, true)?;
    let stats = a.row_stats();
    let sym = symmetry(&a);
    let vals = values(&a);
    let reads = column_reads(&a);
    // The plan the GPU code would choose (warp of 32) for f64 values; its text starts
    // "SpMV plan:". A rule that depends on the element type may choose otherwise for f32.
    let hint = SpmvPlan::column_layout(&a, &stats, KernelChoice::Auto, &spgpu::gpu::Tuning::from_env());
    let plan = SpmvPlan::with_columns::<f64>(&stats, 32, KernelChoice::Auto, hint)?;
    let single = SpmvPlan::with_columns::<f32>(&stats, 32, KernelChoice::Auto, hint)?;
    let locality = orderings(&args.matrix, &a);
    let cells = a.nrows() as f64 * a.ncols() as f64;
    let density = if cells > 0.0 { a.nnz() as f64 / cells } else { 0.0 };

    if args.json {
        let banner = header.as_ref().map(|h| {
            serde_json::json!({
                "object": h.object.keyword(),
                "format": h.format.keyword(),
                "field": h.field.keyword(),
                "symmetry": h.symmetry.keyword(),
            })
        });
        let symmetry = sym.as_ref().map(|s| {
            serde_json::json!({
                "off_diagonal": s.off_diagonal,
                "mirrored": s.mirrored,
                "structural": s.mirrored == s.off_diagonal,
                "numerical": s.numerically,
            })
        });
        let skipped = reads.as_ref().err().cloned();
        let reads = reads.ok().flatten().map(|[(n64, s64, k64), (n32, s32, k32)]| {
            serde_json::json!({
                "f64": { "columns": n64, "percent_of_entries": s64, "times_their_share": k64 },
                "f32": { "columns": n32, "percent_of_entries": s32, "times_their_share": k32 },
            })
        });
        let report = serde_json::json!({
            "spgpu_json": JSON_VERSION,
            "command": "info",
            "matrix": args.matrix,
            "generated": generated,
            "banner": banner,
            "stored_entries": header.as_ref().map(|h| h.entries),
            "rows": a.nrows(),
            "cols": a.ncols(),
            "nnz": a.nnz(),
            "density": density,
            "row_lengths": {
                "min": stats.min,
                "mean": stats.mean,
                "max": stats.max,
                "std_dev": stats.std_dev,
                "empty_rows": stats.empty_rows,
            },
            "symmetry": symmetry,
            "values": vals.json(),
            "column_reads": reads,
            "locality_skipped": locality.as_ref().err(),
            "locality": locality.as_ref().ok().and_then(Option::as_ref).map(|reorder::Survey { choice, candidates: tried }| {
                let l = |l: &Locality| serde_json::json!({
                    "bandwidth": l.bandwidth,
                    "profile": l.profile,
                    "mean_distance": l.mean_distance,
                    "sectors_per_entry": l.sectors_per_entry,
                    "sampled": l.sampled,
                });
                serde_json::json!({
                    "numbering": l(&choice.before),
                    "orderings": tried.iter().map(|c| serde_json::json!({
                        "ordering": c.ordering.name(),
                        "after": l(&c.after),
                        "time_ms": c.time.as_secs_f64() * 1e3,
                    })).collect::<Vec<_>>(),
                    "auto": { "ordering": choice.ordering.name(), "reason": choice.reason },
                })
            }),
            "column_reads_skipped": skipped,
            "plan": {
                "kernel": plan.kernel().to_string(),
                "reason": plan.reason(),
                "f32_kernel": single.kernel().to_string(),
                "f32_reason": single.reason(),
            },
        });
        outln!("{report}")?;
        return Ok(());
    }

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
        None if generated => {
            outln!("matrix:          {} (generated)", args.matrix)?;
            outln!("stored entries:  {}", a.nnz())?;
        }
        None => outln!("file:            {} (its header is not in its first MiB)", args.matrix)?,
    }
    outln!("dimensions:      {} x {}", a.nrows(), a.ncols())?;
    outln!("nnz:             {} (symmetry expanded, duplicates summed; density {density:.3e})", a.nnz())?;
    out!("{stats}")?;
    outln!("values:          {}", vals.describe())?;
    match sym {
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
    if let Err(why) = &reads {
        outln!("column reads:    not counted: {why}")?;
    }
    if let Ok(Some([(n64, s64, k64), (n32, s32, k32)])) = reads {
        outln!(
            "column reads:    the {n64} most-read columns hold {s64:.1}% of the entries ({k64:.1} x their share of \
             the columns), the {n32} most-read {s32:.1}% ({k32:.1} x): what hot columns would hold in f64 and f32"
        )?;
    }
    if let Err(why) = &locality {
        outln!("locality:        not measured: {why}")?;
    }
    if let Ok(Some(reorder::Survey { choice, candidates: tried })) = &locality {
        let l = |l: &Locality| {
            format!(
                "bandwidth {}, profile {}, mean |i - j| {:.1}, {:.2} sectors of x per entry{}",
                l.bandwidth,
                l.profile,
                l.mean_distance,
                l.sectors_per_entry,
                if l.sampled { " (sampled)" } else { "" }
            )
        };
        outln!("locality:        {}", l(&choice.before))?;
        for c in tried {
            outln!(
                "  with {:<5}      {} (ordered in {:.1} ms)",
                c.ordering.name(),
                l(&c.after),
                c.time.as_secs_f64() * 1e3
            )?;
        }
        outln!("  --reorder auto: {} ({})", choice.ordering, choice.reason)?;
    }
    outln!("{}", plan.explain().trim_end())?;
    if single.kernel() != plan.kernel() {
        outln!("  with f32 values: {} ({})", single.kernel(), single.reason())?;
    }
    Ok(())
}

/// The locality of `a`'s numbering, what RCM and the graph ordering make of it, and what
/// `--reorder auto` would take ([`reorder::survey`]); `None` when `a` is not square. The
/// renumbered copy each ordering is measured on is checked against the memory first: the
/// error says why it was not measured.
fn orderings(name: &str, a: &CsrMatrix<f64>) -> Result<Option<reorder::Survey>, String> {
    if a.nrows() != a.ncols() || a.nrows() < 2 {
        return Ok(None);
    }
    let bytes = a.nnz() as u64 * 12 + (a.nrows() as u64 + 1) * 8 + 3 * a.nrows() as u64 * 8;
    spgpu::io::check_memory(
        &format!("a renumbered copy of {name} ({} entries), to measure the orderings", a.nnz()),
        bytes,
    )
    .map_err(|e| e.to_string())?;
    Ok(Some(reorder::survey(a)))
}
/// The most-read columns in one precision: how many, their percentage of the entries, and
/// how many times their share of the columns that is.
type ColumnShare = (usize, f64, f64);

/// How unevenly the columns are read: the share of the entries in the most-read columns, as
/// many as the balanced kernel's hot columns hold per block in f64 and f32
/// ([`HOT_BYTES_PER_BLOCK`]; on the GPU the upload also asks each to repay its copy): for
/// each, the columns, their percentage of the entries and how many times their share of
/// the columns that is. `None` for a matrix without entries.
///
/// # Errors
///
/// Why they were not counted: the count of every column (4 bytes each, and 8 per column
/// read) does not fit in memory (a file can announce 2^31 - 1 columns and hold one entry).
fn column_reads(a: &CsrMatrix<f64>) -> Result<Option<[ColumnShare; 2]>, String> {
    if a.nnz() == 0 {
        return Ok(None);
    }
    let bytes = (a.ncols() as u64).saturating_mul(4).saturating_add((a.ncols().min(a.nnz()) as u64).saturating_mul(8));
    spgpu::io::check_memory(&format!("the entry counts of the {} columns", a.ncols()), bytes)
        .map_err(|e| e.to_string())?;
    let share = |bytes: usize| {
        let hot = HotColumns::select(a.col_indices(), a.ncols(), HOT_BYTES_PER_BLOCK / bytes, 0);
        let share = hot.entries() as f64 / a.nnz() as f64;
        (hot.len(), 100.0 * share, share * a.ncols() as f64 / hot.len().max(1) as f64)
    };
    Ok(Some([share(8), share(4)]))
}
