//! What `spgpu cg` does around the solve: where the text report goes ([`Say`]) and the
//! JSON report ([`json_report`]).

use std::path::Path;
use std::time::Duration;

use spgpu::solver::CgReport;
use spgpu::{reference, CsrMatrix, Scalar};

use super::{floor_bytes, Args};
use crate::files;

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
        } else if [&args.output, &args.history].into_iter().flatten().any(|p| files::is_stdio(p)) {
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
        "outputs": {
            "solution": args.output.as_deref().map(shown),
            "history": args.history.as_deref().map(shown),
        },
    })
}
