//! What `spgpu cg` does around the solve: where the text report goes ([`Say`]), the
//! progress bar ([`Progress`]), Ctrl-C ([`interruptible`], [`interrupted`]) and the JSON
//! report ([`json_report`]).

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use spgpu::solver::{CgParams, CgReport, Checkpoint};
use spgpu::{reference, CsrMatrix, Scalar};

use super::{floor_bytes, write_history, Args};
use crate::{files, CliResult, Interrupted};

/// A path for messages: `-` is standard output.
pub(super) fn shown(path: &Path) -> String {
    if files::is_stdio(path) {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

/// Where the text report goes: standard output; standard error when a data output
/// (`-o -`, `--history -`) takes standard output; nowhere with `--json`.
pub(super) enum Say {
    Stdout,
    Stderr,
    Quiet,
}

impl Say {
    pub(super) fn for_args(args: &Args) -> Say {
        if args.json {
            Say::Quiet
        } else if [&args.output, &args.history].into_iter().flatten().any(|p| files::is_stdout(p)) {
            Say::Stderr
        } else {
            Say::Stdout
        }
    }

    /// Writes `text` and a line end; a closed standard output drops it (the files are
    /// still written, see `crate::report`).
    pub(super) fn line(&self, text: &str) -> std::io::Result<()> {
        match self {
            Say::Stdout => reportln!("{text}"),
            Say::Stderr => {
                eprintln!("{text}");
                Ok(())
            }
            Say::Quiet => Ok(()),
        }
    }
}

/// What the solve's monitor saw: the residual norm at each checkpoint, kept for a report
/// and a history when the solve is interrupted.
#[derive(Default)]
pub(super) struct Watch {
    pub(super) checkpoints: std::cell::RefCell<Vec<(usize, f64)>>,
    /// No progress bar (`--json`).
    pub(super) quiet: bool,
}

impl Watch {
    /// The monitor's work at a checkpoint: records it, moves the progress bar, and after
    /// Ctrl-C unwinds with [`Stop`].
    pub(super) fn checkpoint(&self, ck: &spgpu::solver::Checkpoint, progress: &mut Progress) {
        self.checkpoints.borrow_mut().push((ck.iterations, ck.rr.sqrt()));
        progress.update(ck);
        if crate::signal::interrupted() {
            progress.bar.finish_and_clear();
            std::panic::panic_any(Stop);
        }
    }
}

/// The payload that unwinds a solve from its monitor on Ctrl-C ([`interruptible`]).
pub(super) struct Stop;

/// Runs a solve whose monitor may unwind with [`Stop`] on Ctrl-C: `None` when it did. The
/// solver has no way to be cancelled from outside; its monitor runs at every checkpoint,
/// after the iterate is complete, so unwinding from there drops the solve's state as an
/// early return would and leaves `x` at the checkpoint's iterate.
pub(super) fn interruptible<R>(
    f: impl FnOnce() -> Result<R, Box<dyn std::error::Error>>,
) -> Result<Option<R>, Box<dyn std::error::Error>> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map(Some),
        Err(payload) if payload.is::<Stop>() => Ok(None),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// Whether `payload` is the unwinding of an interrupted solve (the panic hook keeps quiet).
pub fn is_stop(payload: &(dyn std::any::Any + Send)) -> bool {
    payload.is::<Stop>()
}

/// After Ctrl-C: prints the report so far, writes `-o` (with a comment that it did not
/// converge) and `--history` (the residual at the checkpoints seen), and returns the error
/// of status 130.
#[allow(clippy::too_many_arguments)]
pub(super) fn interrupted<T: Scalar>(
    args: &Args,
    say: &Say,
    a: &CsrMatrix<T>,
    b: &[T],
    x: &[T],
    watch: &Watch,
    known_solution: Option<&[T]>,
    where_: &str,
) -> CliResult {
    let checkpoints = watch.checkpoints.borrow();
    let iterations = checkpoints.last().map_or(0, |c| c.0);
    let norm = |v: &[T]| v.iter().map(|x| x.to_f64() * x.to_f64()).sum::<f64>().sqrt();
    let b_norm = norm(b).max(f64::MIN_POSITIVE);
    let mut r = b.to_vec();
    reference::spmv_csr(-T::ONE, a, x, T::ONE, &mut r)?;
    let true_rel = norm(&r) / b_norm;
    let mut text = format!(
        "device: {where_}\nstop: interrupted (Ctrl-C) after {iterations} iterations, not converged\ntrue relative \
         residual ||b - A x|| / ||b|| = {true_rel:.3e} (rtol {:e})",
        args.rtol
    );
    if let Some(s) = known_solution {
        text += &format!(
            "\nerror against the known solution {}: ||x - s|| / ||s|| = {:.3e}",
            args.solution.describe(),
            reference::relative_error(x, s)
        );
    }
    say.line(&text)?;
    let mark = format!(
        "% not converged: interrupted (Ctrl-C) after {iterations} iterations; true relative residual {true_rel:.3e}\n"
    );
    let mut written = Vec::new();
    if let Some(path) = &args.output {
        files::write(path, |w| spgpu::io::write_vector_to_writer(AfterBanner::new(w, mark.as_bytes()), x))?;
        written.push(format!("-o {}", shown(path)));
    }
    if let Some(path) = &args.history {
        write_history(path, &checkpoints, b_norm)?;
        written.push(format!("--history {} (the checkpoints only)", shown(path)));
    }
    if args.json {
        let json = serde_json::json!({
            "spgpu_json": crate::info::JSON_VERSION,
            "command": "cg",
            "matrix": args.matrix,
            "precision": T::NAME,
            "rows": a.nrows(),
            "nnz": a.nnz(),
            "device": where_,
            "stop_reason": "interrupted",
            "converged": false,
            "iterations": iterations,
            "relative_residual": true_rel,
            "rtol": args.rtol,
            "atol": args.atol,
            "error_against_known_solution": known_solution.map(|s| reference::relative_error(x, s)),
        });
        outln!("{json}")?;
    }
    let saved = if written.is_empty() { String::new() } else { format!("; wrote {}", written.join(" and ")) };
    Err(Interrupted(format!("interrupted after {iterations} iterations, not converged{saved}")).into())
}

/// A writer that puts `extra` after the first line (a Matrix Market banner): a comment
/// line where readers expect comments.
struct AfterBanner<'a, W: Write> {
    inner: W,
    extra: &'a [u8],
    done: bool,
}

impl<'a, W: Write> AfterBanner<'a, W> {
    fn new(inner: W, extra: &'a [u8]) -> Self {
        AfterBanner { inner, extra, done: false }
    }
}

impl<W: Write> Write for AfterBanner<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.done {
            return self.inner.write(buf);
        }
        match buf.iter().position(|&c| c == b'\n') {
            Some(i) => {
                self.inner.write_all(&buf[..=i])?;
                self.inner.write_all(self.extra)?;
                self.done = true;
                Ok(i + 1)
            }
            None => self.inner.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The progress bar of a solve: the relative residual against the target on a log scale
/// (from the first checkpoint's residual to the tolerance), and an estimate of the
/// iterations left from the convergence rate so far. Hidden unless standard error is a
/// terminal, and with `--json`.
pub(super) struct Progress {
    pub(super) bar: ProgressBar,
    b_norm: f64,
    /// The relative residual to reach: max(rtol, atol / ||b||), at least 1e-300.
    target: f64,
    /// The iterations and relative residual of the first checkpoint.
    start: Option<(usize, f64)>,
    max_iter: usize,
}

/// Steps of the bar: its position is the fraction of the way, on a log scale, times this.
const PROGRESS_STEPS: u64 = 1000;

impl Progress {
    pub(super) fn new(params: &CgParams, b_norm: f64, max_iter: usize, hidden: bool) -> Progress {
        let bar = if crate::progress::shown() && !hidden {
            let bar = ProgressBar::new(PROGRESS_STEPS);
            bar.set_style(
                ProgressStyle::with_template("{spinner} cg {bar:30} {msg} [{elapsed_precise}]")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        } else {
            ProgressBar::hidden()
        };
        let target = params.rtol.max(params.atol / b_norm).max(1e-300);
        Progress { bar, b_norm, target, start: None, max_iter }
    }

    pub(super) fn update(&mut self, ck: &Checkpoint) {
        let rel = ck.rr.sqrt() / self.b_norm;
        let (k0, rel0) = *self.start.get_or_insert((ck.iterations, rel.max(self.target)));
        // the way from the first residual down to the target, on a log scale
        let way = (rel0 / self.target).ln();
        let done = if way > 0.0 && rel > 0.0 { ((rel0 / rel).ln() / way).clamp(0.0, 1.0) } else { 1.0 };
        self.bar.set_position((done * PROGRESS_STEPS as f64) as u64);
        // the iterations left at the mean rate so far (log of the residual per iteration)
        let steps = ck.iterations.saturating_sub(k0);
        let rate = if steps > 0 && rel > 0.0 { (rel0 / rel).ln() / steps as f64 } else { 0.0 };
        let left = if rel <= self.target {
            "target reached".to_string()
        } else if rate > 0.0 {
            let left = ((rel / self.target).ln() / rate).ceil();
            let cap = self.max_iter.saturating_sub(ck.iterations) as f64;
            format!("about {:.0} iterations left", left.min(cap))
        } else {
            "no estimate yet".to_string()
        };
        self.bar.set_message(format!(
            "iteration {}: relative residual {rel:.2e}, target {:.0e}; {left}",
            ck.iterations, self.target
        ));
    }
}

/// The report as one JSON object (`docs/cli.md`).
#[allow(clippy::too_many_arguments)]
pub(super) fn json_report<T: Scalar>(
    args: &Args,
    r: &CgReport,
    a: &CsrMatrix<T>,
    x: &[T],
    known_solution: Option<&[T]>,
    read_time: Duration,
    upload_time: Duration,
    where_: &str,
    floor: Option<(f64, &str)>,
) -> serde_json::Value {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let per_iteration = r.time_per_iteration().as_secs_f64();
    let floor = floor.filter(|_| r.iterations > 0 && r.amg.is_none()).map(|(bw, source)| {
        let (spmv, vectors, bytes) = floor_bytes(a, r);
        let floor_s = bytes as f64 / (bw * 1e9);
        serde_json::json!({
            "bandwidth_gbs": bw,
            "source": source,
            "bytes": bytes,
            "spmv_bytes": spmv,
            "vector_bytes": vectors,
            "floor_us": floor_s * 1e6,
            "times_the_floor": per_iteration / floor_s,
        })
    });
    serde_json::json!({
        "spgpu_json": crate::info::JSON_VERSION,
        "command": "cg",
        "matrix": args.matrix,
        "precision": T::NAME,
        "rows": a.nrows(),
        "nnz": a.nnz(),
        "device": where_,
        "preconditioner": r.preconditioner,
        "stop_reason": r.stop_reason.to_string(),
        "converged": r.stop_reason == spgpu::solver::StopReason::Converged,
        "iterations": r.iterations,
        "restarts": r.restarts,
        "relative_residual": r.relative_residual,
        "recurrence_relative_residual": r.residual_norm / r.b_norm.max(f64::MIN_POSITIVE),
        "rtol": args.rtol,
        "atol": args.atol,
        "tolerance_met": r.tolerance_met(),
        "error_against_known_solution": known_solution.map(|s| reference::relative_error(x, s)),
        "warnings": r.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "auto": r.auto.as_ref().map(|c| serde_json::json!({ "chosen": c.chosen.name(), "reason": c.reason })),
        "reorder": r.reorder.as_ref().map(|o| {
            let locality = |l: &spgpu::reorder::Locality| serde_json::json!({
                "bandwidth": l.bandwidth,
                "profile": l.profile,
                "sectors_per_entry": l.sectors_per_entry,
                "sampled": l.sampled,
            });
            serde_json::json!({
                "requested": o.requested.name(),
                "ordering": o.ordering.name(),
                "reason": o.reason,
                "time_ms": ms(o.time),
                "probe_iterations": o.probe_iterations,
                "before": locality(&o.before),
                "after": o.after.as_ref().map(locality),
            })
        }),
        "times_ms": {
            "read": ms(read_time),
            "upload": ms(upload_time),
            "setup": ms(r.setup_time),
            "solve": ms(r.solve_time),
            "check": ms(r.check_time),
            "time_to_solution": ms(r.setup_time + r.solve_time),
        },
        "per_iteration_us": (r.iterations > 0).then_some(per_iteration * 1e6),
        "floor": floor,
        "amg": r.amg.as_ref().map(|h| serde_json::json!({
            "levels": h.levels.iter().map(|l| serde_json::json!({ "rows": l.rows, "entries": l.entries })).collect::<Vec<_>>(),
            "operator_complexity": h.operator_complexity,
            "grid_complexity": h.grid_complexity,
            "setup_place": h.setup_place,
            "fine_transfer": h.fine_transfer.to_string(),
            "setup_phases_ms": h.setup_phases.iter().map(|(what, t)| serde_json::json!([what, ms(*t)])).collect::<Vec<_>>(),
            "memory_bytes": h.memory.map(|m| serde_json::json!({
                "matrix": m.matrix,
                "hierarchy": m.hierarchy,
                "ratio": m.ratio(),
            })),
        })),
        "outputs": {
            "solution": args.output.as_deref().map(shown),
            "history": args.history.as_deref().map(shown),
        },
    })
}
