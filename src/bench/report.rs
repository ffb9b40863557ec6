//! What a benchmark run produces, and its four forms: an aligned table on the terminal,
//! CSV (one row per measurement), JSON (run metadata, matrices, measurements and the
//! [`summary`](super::summary)) and Markdown (the summary, then one row per matrix and one
//! column per implementation).

use super::summary::{self, fmt_sig, table};
use super::timing::Method;
use std::fmt::Write as _;

/// The run as a whole: where and when it ran, and the copy bandwidth measured at its start.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// UTC time the run started, RFC 3339.
    pub date: String,
    /// `git describe` of the checkout, when known.
    pub commit: String,
    /// GPU name.
    pub gpu: String,
    /// CUDA driver version, `major.minor`.
    pub driver: String,
    /// cuSPARSE library and version, or why it is absent.
    pub cusparse: String,
    /// Device-to-device copy bandwidth in GB/s (bytes read plus written), or NaN.
    pub copy_gbps: f64,
    /// Host threads used by the CPU baselines.
    pub cpu_threads: usize,
    /// The command line that reproduces the run.
    pub command: String,
    /// The device's L2 cache in bytes (`CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`, or `--l2-mib`):
    /// the line between memory-bound and latency-bound matrices. 0 when unknown.
    pub l2_bytes: u64,
    /// Wall time of the whole run in seconds (NaN when rebuilt from a CSV).
    pub wall_seconds: f64,
}

/// One matrix of the run.
#[derive(Debug, Clone, Default)]
pub struct MatrixInfo {
    /// Short name: the file stem, or the generated spec.
    pub name: String,
    /// Where it came from: a path or `gen:...`.
    pub source: String,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Stored entries.
    pub nnz: usize,
    /// Mean stored entries per row.
    pub mean_row: f64,
    /// Longest row.
    pub max_row: usize,
    /// Standard deviation of row lengths.
    pub std_row: f64,
    /// Rows with no entries.
    pub empty_rows: usize,
    /// The plan's choice of kernel for the first precision run.
    pub plan: String,
    /// The plan's explanation of that choice ([`crate::gpu::SpmvPlan::explain`]).
    pub plan_explain: String,
    /// The plan's choice and explanation per precision (`"f64"`, `"f32"`): the plan depends
    /// on the element type, so each precision's rows report their own
    /// ([`MatrixInfo::plan_for`]).
    pub plans: Vec<(&'static str, String, String)>,
    /// Why the matrix was skipped, when it was (then no measurement refers to it).
    pub skipped: Option<String>,
    /// Seconds spent generating or reading it, on the host (NaN when unknown).
    pub load_seconds: f64,
}

impl MatrixInfo {
    /// The plan's choice for `scalar`, or for the first precision run when that one was not.
    pub fn plan_for(&self, scalar: &str) -> &str {
        self.plans.iter().find(|(s, ..)| *s == scalar).map_or(&self.plan, |(_, p, _)| p)
    }

    /// Records the plan's choice and explanation for `scalar` (the first ones also as
    /// [`MatrixInfo::plan`] and [`MatrixInfo::plan_explain`]).
    pub fn set_plan(&mut self, scalar: &'static str, plan: String, explain: String) {
        if self.plans.is_empty() {
            self.plan = plan.clone();
            self.plan_explain = explain.clone();
        }
        self.plans.retain(|(s, ..)| *s != scalar);
        self.plans.push((scalar, plan, explain));
    }
}

/// One timed implementation on one matrix and precision.
#[derive(Debug, Clone)]
pub struct Measurement {
    /// [`MatrixInfo::name`] of the matrix.
    pub matrix: String,
    /// `f32` or `f64`.
    pub scalar: &'static str,
    /// `spgpu-<kernel>`, `spgpu-auto`, `cusparse-alg1`, `cpu-sprs`, ...
    pub implementation: String,
    /// How the time was taken.
    pub method: Method,
    /// Median seconds per SpMV.
    pub seconds: f64,
    /// Fastest repetition.
    pub min_seconds: f64,
    /// Slowest repetition.
    pub max_seconds: f64,
    /// SpMVs per repetition, and repetitions.
    pub per_rep: usize,
    /// Repetitions.
    pub reps: usize,
    /// Bytes by the minimal CSR model.
    pub bytes: u64,
    /// Bytes the implementation's format holds and reads (ELL: padding included).
    pub format_bytes: u64,
    /// GB/s by the minimal model.
    pub gbps: f64,
    /// `gbps` over the copy bandwidth of the run (NaN for CPU baselines or unknown).
    pub fraction: f64,
    /// Relative 2-norm error against the CPU reference.
    pub rel_error: f64,
    /// Whether `rel_error` is within the tolerance of the precision.
    pub correct: bool,
    /// Wall seconds to upload the matrix for this implementation (preprocessing, copies,
    /// and for cuSPARSE its descriptor, buffer and preprocessing), NaN when not measured.
    pub upload_seconds: f64,
    /// Of which host preprocessing for the kernel ([`crate::gpu::DeviceCsr::preprocessing`];
    /// for cuSPARSE the whole setup), NaN when not measured.
    pub preprocessing_seconds: f64,
    /// Device bytes the matrix holds for this implementation
    /// ([`crate::gpu::DeviceCsr::device_bytes`]); 0 when not measured.
    pub device_bytes: u64,
}

/// Everything a run produced.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Run metadata.
    pub run: RunInfo,
    /// Matrices, in run order.
    pub matrices: Vec<MatrixInfo>,
    /// Measurements, in run order.
    pub measurements: Vec<Measurement>,
    /// Notes for the reader (skipped implementations and why).
    pub notes: Vec<String>,
}

/// A time in microseconds with three significant digits.
pub fn fmt_us(seconds: f64) -> String {
    fmt_sig(seconds * 1e6)
}

/// A fraction as a whole percentage, or `-`.
fn fmt_pct(f: f64) -> String {
    if f.is_finite() {
        format!("{:.0}%", f * 100.0)
    } else {
        "-".into()
    }
}

/// Pads cells to aligned columns (numbers right-aligned, text left-aligned).
pub fn align(rows: &[Vec<String>]) -> String {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> =
        (0..ncol).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let numeric = |s: &str| s.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '.');
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = width[c] - cell.chars().count();
            if c > 0 {
                line.push_str("  ");
            }
            if numeric(cell) && c > 0 {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The block printed for one matrix and precision: what it is, the plan, and every
/// measurement, fastest first.
pub fn matrix_block(m: &MatrixInfo, scalar: &str, rows: &[&Measurement]) -> String {
    let mut s = format!(
        "{} ({scalar}): {} x {}, {} entries, rows mean {:.1} / max {} / std {:.1}, {} empty; plan: {}; {} in {} s\n",
        m.name,
        m.rows,
        m.cols,
        m.nnz,
        m.mean_row,
        m.max_row,
        m.std_row,
        m.empty_rows,
        m.plan_for(scalar),
        if m.source.starts_with("gen:") { "generated" } else { "read" },
        fmt_sig(m.load_seconds)
    );
    let mut sorted: Vec<&&Measurement> = rows.iter().collect();
    sorted.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let mut table = vec![[
        "implementation",
        "timing",
        "us",
        "GB/s",
        "of copy",
        "upload ms",
        "prep ms",
        "device MB",
        "rel. error",
        "check",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for r in sorted {
        table.push(vec![
            r.implementation.clone(),
            r.method.name().into(),
            fmt_us(r.seconds),
            format!("{:.0}", r.gbps),
            fmt_pct(r.fraction),
            fmt_sig(r.upload_seconds * 1e3),
            fmt_sig(r.preprocessing_seconds * 1e3),
            if r.device_bytes > 0 { summary::fmt_mb(r.device_bytes) } else { "-".into() },
            format!("{:.1e}", r.rel_error),
            if r.correct { "ok".into() } else { "WRONG".into() },
        ]);
    }
    for line in align(&table).lines() {
        let _ = writeln!(s, "  {line}");
    }
    s
}

/// Quotes a CSV field when it needs it.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The columns of the CSV, in order. A CSV of a run before `upload_us` (2026-11-23) has
/// only the columns up to `correct`; [`from_csv`] reads both.
pub const CSV_COLUMNS: [&str; 26] = [
    "matrix",
    "scalar",
    "rows",
    "cols",
    "nnz",
    "mean_row",
    "max_row",
    "plan",
    "implementation",
    "timing",
    "median_us",
    "min_us",
    "max_us",
    "per_rep",
    "reps",
    "bytes",
    "format_bytes",
    "gbps",
    "fraction_of_copy",
    "rel_error",
    "correct",
    "upload_us",
    "preprocessing_us",
    "device_bytes",
    "load_s",
    "l2_bytes",
];

/// How many of [`CSV_COLUMNS`] every CSV has (the older runs' columns).
const CSV_REQUIRED: usize = 21;

/// The measurements as CSV, one row each, with the matrix's shape, its load time and the
/// device's L2 size repeated on every row (so that the CSV alone rebuilds the summary).
pub fn to_csv(r: &Report) -> String {
    let mut s = CSV_COLUMNS.join(",");
    s.push('\n');
    for m in &r.measurements {
        let info = r.matrices.iter().find(|i| i.name == m.matrix).cloned().unwrap_or_default();
        let f = |v: f64| if v.is_finite() { format!("{v}") } else { String::new() };
        let us = |v: f64| if v.is_finite() { format!("{:.3}", v * 1e6) } else { String::new() };
        let _ = writeln!(
            s,
            "{},{},{},{},{},{:.3},{},{},{},{},{:.3},{:.3},{:.3},{},{},{},{},{:.2},{},{:.3e},{},{},{},{},{},{}",
            csv_field(&m.matrix),
            m.scalar,
            info.rows,
            info.cols,
            info.nnz,
            info.mean_row,
            info.max_row,
            csv_field(info.plan_for(m.scalar)),
            csv_field(&m.implementation),
            m.method.name(),
            m.seconds * 1e6,
            m.min_seconds * 1e6,
            m.max_seconds * 1e6,
            m.per_rep,
            m.reps,
            m.bytes,
            m.format_bytes,
            m.gbps,
            f((m.fraction * 1e4).round() / 1e4),
            m.rel_error,
            m.correct,
            us(m.upload_seconds),
            us(m.preprocessing_seconds),
            if m.device_bytes > 0 { m.device_bytes.to_string() } else { String::new() },
            f((info.load_seconds * 1e3).round() / 1e3),
            if r.run.l2_bytes > 0 { r.run.l2_bytes.to_string() } else { String::new() }
        );
    }
    s
}

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number, or `null` for NaN and infinities.
fn json_num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

/// The whole report as JSON: `{"run": {...}, "notes": [...], "matrices": [...], "measurements": [...]}`.
pub fn to_json(r: &Report) -> String {
    let mut s = String::from("{\n  \"run\": {");
    let ri = &r.run;
    let _ = writeln!(
        s,
        "\"date\": {}, \"commit\": {}, \"gpu\": {}, \"driver\": {}, \"cusparse\": {}, \"copy_gbps\": {}, \
         \"l2_bytes\": {}, \"cpu_threads\": {}, \"wall_s\": {}, \"command\": {}}},",
        json_str(&ri.date),
        json_str(&ri.commit),
        json_str(&ri.gpu),
        json_str(&ri.driver),
        json_str(&ri.cusparse),
        json_num(ri.copy_gbps),
        ri.l2_bytes,
        ri.cpu_threads,
        json_num(ri.wall_seconds),
        json_str(&ri.command)
    );
    let notes: Vec<String> = r.notes.iter().map(|n| json_str(n)).collect();
    let _ = writeln!(s, "  \"notes\": [{}],", notes.join(", "));
    s.push_str("  \"matrices\": [\n");
    let mats: Vec<String> = r
        .matrices
        .iter()
        .map(|m| {
            format!(
                "    {{\"name\": {}, \"source\": {}, \"rows\": {}, \"cols\": {}, \"nnz\": {}, \"mean_row\": {}, \
                 \"max_row\": {}, \"std_row\": {}, \"empty_rows\": {}, \"plan\": {}, \"plans\": {{{}}}, \
                 \"plan_explain\": {}, \"plan_explains\": {{{}}}, \"skipped\": {}, \"load_s\": {}}}",
                json_str(&m.name),
                json_str(&m.source),
                m.rows,
                m.cols,
                m.nnz,
                json_num(m.mean_row),
                m.max_row,
                json_num(m.std_row),
                m.empty_rows,
                json_str(&m.plan),
                m.plans
                    .iter()
                    .map(|(s, p, _)| format!("{}: {}", json_str(s), json_str(p)))
                    .collect::<Vec<_>>()
                    .join(", "),
                json_str(&m.plan_explain),
                m.plans
                    .iter()
                    .map(|(s, _, e)| format!("{}: {}", json_str(s), json_str(e)))
                    .collect::<Vec<_>>()
                    .join(", "),
                m.skipped.as_deref().map_or_else(|| "null".into(), json_str),
                json_num(m.load_seconds)
            )
        })
        .collect();
    s.push_str(&mats.join(",\n"));
    s.push_str("\n  ],\n  \"measurements\": [\n");
    let meas: Vec<String> = r
        .measurements
        .iter()
        .map(|m| {
            format!(
                "    {{\"matrix\": {}, \"scalar\": {}, \"implementation\": {}, \"timing\": {}, \"median_us\": {}, \
                 \"min_us\": {}, \"max_us\": {}, \"per_rep\": {}, \"reps\": {}, \"bytes\": {}, \"format_bytes\": {}, \
                 \"gbps\": {}, \"fraction_of_copy\": {}, \"rel_error\": {}, \"correct\": {}, \"upload_us\": {}, \
                 \"preprocessing_us\": {}, \"device_bytes\": {}}}",
                json_str(&m.matrix),
                json_str(m.scalar),
                json_str(&m.implementation),
                json_str(m.method.name()),
                json_num(m.seconds * 1e6),
                json_num(m.min_seconds * 1e6),
                json_num(m.max_seconds * 1e6),
                m.per_rep,
                m.reps,
                m.bytes,
                m.format_bytes,
                json_num(m.gbps),
                json_num(m.fraction),
                json_num(m.rel_error),
                m.correct,
                json_num(m.upload_seconds * 1e6),
                json_num(m.preprocessing_seconds * 1e6),
                m.device_bytes
            )
        })
        .collect();
    s.push_str(&meas.join(",\n"));
    s.push_str("\n  ],\n");
    s.push_str(&summary_json(r));
    s.push_str("}\n");
    s
}

/// The `"summary"` member of the JSON: the rows and groups of [`summary`](super::summary).
fn summary_json(r: &Report) -> String {
    let rows = summary::matrices(r);
    let name = |m: &Option<Measurement>| m.as_ref().map_or_else(|| "null".into(), |m| json_str(&m.implementation));
    let us = |m: &Option<Measurement>| json_num(m.as_ref().map_or(f64::NAN, |m| m.seconds * 1e6));
    let frac = |m: &Option<Measurement>| json_num(m.as_ref().map_or(f64::NAN, |m| m.fraction));
    let lines: Vec<String> = rows
        .iter()
        .map(|m| {
            format!(
                "      {{\"matrix\": {}, \"scalar\": {}, \"bound\": {}, \"working_set_bytes\": {}, \"plan\": {}, \
                 \"auto_us\": {}, \"auto_fraction_of_copy\": {}, \"best_spgpu\": {}, \"best_spgpu_us\": {}, \
                 \"best_cusparse\": {}, \"best_cusparse_us\": {}, \"cusparse_fraction_of_copy\": {}, \
                 \"speedup\": {}, \"preprocessing_spmvs\": {}, \"upload_spmvs\": {}, \"memory_ratio\": {}}}",
                json_str(&m.matrix),
                json_str(m.scalar),
                json_str(m.bound.name()),
                m.working_set,
                json_str(&m.plan),
                us(&m.auto),
                frac(&m.auto),
                name(&m.best_spgpu),
                us(&m.best_spgpu),
                name(&m.best_cusparse),
                us(&m.best_cusparse),
                frac(&m.best_cusparse),
                json_num(m.speedup()),
                json_num(m.preprocessing_spmvs()),
                json_num(m.upload_spmvs()),
                json_num(m.memory_ratio())
            )
        })
        .collect();
    let groups: Vec<String> = summary::groups(&rows)
        .iter()
        .map(|g| {
            format!(
                "      {{\"bound\": {}, \"scalar\": {}, \"matrices\": {}, \"compared\": {}, \"geomean_speedup\": {}, \
                 \"min_speedup\": {}, \"min_matrix\": {}, \"below_one\": {}}}",
                json_str(g.bound.name()),
                json_str(g.scalar),
                g.matrices,
                g.compared,
                json_num(g.geomean),
                json_num(g.min.as_ref().map_or(f64::NAN, |m| m.0)),
                g.min.as_ref().map_or_else(|| "null".into(), |m| json_str(&m.1)),
                g.below_one
            )
        })
        .collect();
    format!(
        "  \"summary\": {{\n    \"rows\": [\n{}\n    ],\n    \"groups\": [\n{}\n    ]\n  }}\n",
        lines.join(",\n"),
        groups.join(",\n")
    )
}

/// The implementations of the report in a stable order: spgpu first, then cuSPARSE, then CPU.
pub fn implementations(r: &Report) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for m in &r.measurements {
        if !names.contains(&m.implementation) {
            names.push(m.implementation.clone());
        }
    }
    let rank = |n: &str| {
        if n.starts_with("spgpu-auto") {
            0
        } else if n.starts_with("spgpu") {
            1
        } else if n.starts_with("cusparse") {
            2
        } else {
            3
        }
    };
    names.sort_by_key(|n| rank(n));
    names
}

/// The best (lowest median) measurement of `implementation` on a matrix and precision:
/// with both event and graph timings, the graph one for small matrices is the kernel's own.
fn best<'a>(r: &'a Report, matrix: &str, scalar: &str, implementation: &str) -> Option<&'a Measurement> {
    r.measurements
        .iter()
        .filter(|m| m.matrix == matrix && m.scalar == scalar && m.implementation == implementation)
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
}

/// The summary: one row per matrix and precision, one column per implementation, each
/// cell `time µs (fraction of copy)` of its best timing; `*` marks a graph-replay time.
/// As Markdown when `markdown`, else as an aligned text table.
pub fn summary(r: &Report, markdown: bool) -> String {
    let imps = implementations(r);
    let mut header = vec!["matrix".to_string(), "scalar".into(), "rows".into(), "nnz".into(), "mean / max row".into()];
    header.extend(imps.iter().cloned());
    let mut rows = vec![header];
    let mut seen: Vec<(String, &str)> = Vec::new();
    for m in &r.measurements {
        let key = (m.matrix.clone(), m.scalar);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let info = r.matrices.iter().find(|i| i.name == m.matrix).cloned().unwrap_or_default();
        let mut row = vec![
            m.matrix.clone(),
            m.scalar.to_string(),
            info.rows.to_string(),
            info.nnz.to_string(),
            format!("{:.1} / {}", info.mean_row, info.max_row),
        ];
        for imp in &imps {
            row.push(best(r, &m.matrix, m.scalar, imp).map_or_else(|| "-".to_string(), cell));
        }
        rows.push(row);
    }
    table(&rows, markdown)
}

/// Splits one CSV line into fields (double quotes, with `""` for a quote inside).
fn csv_split(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Rebuilds a report from the CSV of an earlier run ([`to_csv`]): matrices (with their load
/// time), measurements (with upload, preprocessing and device memory), the L2 size, and the
/// copy bandwidth (GB/s over fraction of any GPU row). The GPU name and the other run
/// metadata are not in the CSV and stay empty. A CSV of an older run, without the columns
/// after `correct`, is read too: those figures are then unknown (NaN, 0), and so is the L2
/// size (`l2_bytes` 0).
///
/// # Errors
///
/// A missing column or a field that does not parse, with its line number.
pub fn from_csv(text: &str) -> Result<Report, String> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let header = lines.next().map(|(_, l)| csv_split(l)).ok_or("empty CSV")?;
    let names = CSV_COLUMNS;
    let mut idx: Vec<Option<usize>> = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let at = header.iter().position(|h| h == name);
        if at.is_none() && k < CSV_REQUIRED {
            return Err(format!("CSV has no column {name}"));
        }
        idx.push(at);
    }
    let mut r = Report::default();
    let mut copies = Vec::new();
    let mut l2s: Vec<u64> = Vec::new();
    for (no, line) in lines {
        let f = csv_split(line);
        let get = |k: usize| idx[k].and_then(|i| f.get(i)).map(String::as_str).unwrap_or("");
        let bad = |k: usize| format!("line {}: bad {} {:?}", no + 1, names[k], get(k));
        let num = |k: usize| get(k).parse::<f64>().map_err(|_| bad(k));
        let opt = |k: usize| if get(k).is_empty() { Ok(f64::NAN) } else { num(k) };
        let int = |k: usize| get(k).parse::<u64>().map_err(|_| bad(k));
        let opt_int = |k: usize| if get(k).is_empty() { Ok(0) } else { int(k) };
        let scalar = match get(1) {
            "f32" => "f32",
            "f64" => "f64",
            _ => return Err(bad(1)),
        };
        let method = match get(9) {
            "events" => Method::Events,
            "graph" => Method::Graph,
            "wall" => Method::Wall,
            _ => return Err(bad(9)),
        };
        if !r.matrices.iter().any(|m| m.name == get(0)) {
            r.matrices.push(MatrixInfo {
                name: get(0).to_string(),
                rows: int(2)? as usize,
                cols: int(3)? as usize,
                nnz: int(4)? as usize,
                mean_row: num(5)?,
                max_row: int(6)? as usize,
                load_seconds: opt(24)?,
                ..Default::default()
            });
        }
        if let Some(info) = r.matrices.iter_mut().find(|m| m.name == get(0)) {
            if !info.plans.iter().any(|(s, ..)| *s == scalar) {
                info.set_plan(scalar, get(7).to_string(), String::new());
            }
        }
        let l2 = opt_int(25)?;
        if l2 > 0 && !l2s.contains(&l2) {
            l2s.push(l2);
        }
        let m = Measurement {
            matrix: get(0).to_string(),
            scalar,
            implementation: get(8).to_string(),
            method,
            seconds: num(10)? * 1e-6,
            min_seconds: num(11)? * 1e-6,
            max_seconds: num(12)? * 1e-6,
            per_rep: int(13)? as usize,
            reps: int(14)? as usize,
            bytes: int(15)?,
            format_bytes: int(16)?,
            gbps: num(17)?,
            fraction: opt(18)?,
            rel_error: num(19)?,
            correct: get(20) == "true",
            upload_seconds: opt(21)? * 1e-6,
            preprocessing_seconds: opt(22)? * 1e-6,
            device_bytes: opt_int(23)?,
        };
        if m.fraction > 0.0 {
            copies.push(m.gbps / m.fraction);
        }
        r.measurements.push(m);
    }
    if l2s.len() > 1 {
        return Err(format!("CSV mixes runs on devices of different L2 sizes: {l2s:?} bytes"));
    }
    r.run.l2_bytes = l2s.first().copied().unwrap_or(0);
    copies.sort_by(f64::total_cmp);
    r.run.copy_gbps = copies.get(copies.len() / 2).copied().unwrap_or(f64::NAN);
    r.run.wall_seconds = f64::NAN;
    Ok(r)
}

/// One summary cell: `time (fraction)` of a measurement, `*` for a graph replay.
fn cell(b: &Measurement) -> String {
    let mark = if b.method == Method::Graph { "*" } else { "" };
    let wrong = if b.correct { "" } else { " WRONG" };
    if b.fraction.is_finite() {
        format!("{}{mark} ({}){wrong}", fmt_us(b.seconds), fmt_pct(b.fraction))
    } else {
        format!("{}{mark}{wrong}", fmt_us(b.seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::super::summary::tests::synthetic;
    use super::*;

    fn sample() -> Report {
        let meas = |imp: &str, us: f64, method| Measurement {
            matrix: "lap2d:2000".into(),
            scalar: "f64",
            implementation: imp.into(),
            method,
            seconds: us * 1e-6,
            min_seconds: us * 1e-6,
            max_seconds: us * 1e-6,
            per_rep: 10,
            reps: 5,
            bytes: 335_904_004,
            format_bytes: 335_904_004,
            gbps: 335_904_004.0 / (us * 1e-6) / 1e9,
            fraction: if method == Method::Wall { f64::NAN } else { 335_904_004.0 / (us * 1e-6) / 1e9 / 4280.0 },
            rel_error: 1e-16,
            correct: true,
            upload_seconds: if imp == "spgpu-auto" { 0.04 } else { f64::NAN },
            preprocessing_seconds: if imp == "spgpu-auto" { 0.002 } else { f64::NAN },
            device_bytes: if imp == "spgpu-auto" { 255_904_004 } else { 0 },
        };
        Report {
            run: RunInfo { gpu: "H200 \"test\"".into(), copy_gbps: 4280.0, l2_bytes: 62_914_560, ..Default::default() },
            matrices: vec![MatrixInfo {
                name: "lap2d:2000".into(),
                source: "gen:lap2d:2000".into(),
                rows: 4_000_000,
                cols: 4_000_000,
                nnz: 19_992_000,
                mean_row: 5.0,
                max_row: 5,
                plan: "ell, uniform rows".into(),
                load_seconds: 0.42,
                ..Default::default()
            }],
            measurements: vec![
                meas("cusparse-alg1+pre", 131.0, Method::Events),
                meas("spgpu-auto", 77.0, Method::Events),
                meas("spgpu-auto", 70.0, Method::Graph),
                meas("cpu-sprs", 9000.0, Method::Wall),
            ],
            notes: vec!["a note, with a comma".into()],
        }
    }

    #[test]
    fn times_format_with_three_significant_digits() {
        assert_eq!(fmt_us(131e-6), "131");
        assert_eq!(fmt_us(10.14e-6), "10.1");
        assert_eq!(fmt_us(8.234e-6), "8.23");
        assert_eq!(fmt_us(f64::NAN), "-");
    }

    #[test]
    fn summary_picks_the_best_timing_and_marks_graphs() {
        let s = summary(&sample(), true);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "| matrix | scalar | rows | nnz | mean / max row | spgpu-auto | cusparse-alg1+pre | cpu-sprs |"
        );
        assert!(lines[2].contains("| 70.0* (112%) |"), "{}", lines[2]);
        assert!(lines[2].contains("| 131 (60%) |"), "{}", lines[2]);
        let text = summary(&sample(), false);
        assert!(text.lines().all(|l| !l.ends_with(' ')));
    }

    #[test]
    fn csv_has_one_row_per_measurement_and_quotes_commas() {
        let c = to_csv(&sample());
        assert_eq!(c.lines().count(), 5);
        assert_eq!(c.lines().next().unwrap(), CSV_COLUMNS.join(","));
        let auto = c.lines().nth(2).unwrap();
        assert!(auto.contains("\"ell, uniform rows\""));
        // the quoted plan holds one comma
        assert_eq!(CSV_COLUMNS.len(), auto.split(',').count() - 1);
        assert!(auto.ends_with(",true,40000.000,2000.000,255904004,0.42,62914560"), "{auto}");
        let cpu = c.lines().nth(4).unwrap();
        assert!(cpu.ends_with(",true,,,,0.42,62914560"), "{cpu}");
    }

    #[test]
    fn csv_round_trips_with_the_whole_summary() {
        let a = sample();
        let b = from_csv(&to_csv(&a)).unwrap();
        assert_eq!(b.measurements.len(), a.measurements.len());
        assert_eq!(b.matrices[0].plan, "ell, uniform rows");
        assert_eq!(b.matrices[0].load_seconds, 0.42);
        assert_eq!(b.run.l2_bytes, 62_914_560);
        assert!((b.run.copy_gbps - 4280.0).abs() < 1.0, "{}", b.run.copy_gbps);
        assert!(b.measurements[3].fraction.is_nan());
        assert_eq!(b.measurements[1].device_bytes, 255_904_004);
        assert!((b.measurements[1].upload_seconds - 0.04).abs() < 1e-12);
        assert!(b.measurements[0].upload_seconds.is_nan());
        assert_eq!(summary(&a, true), summary(&b, true));
        assert_eq!(summary::summary(&a, true), summary::summary(&b, true));
        // the synthetic report of the summary tests: two groups, both precisions
        let s = synthetic();
        let back = from_csv(&to_csv(&s)).unwrap();
        assert_eq!(summary::summary(&s, true), summary::summary(&back, true));
        assert_eq!(summary::groups(&summary::matrices(&s)), summary::groups(&summary::matrices(&back)));
        assert_eq!(csv_split("a,\"b,\"\"c\"\"\",d"), ["a", "b,\"c\"", "d"]);
        assert!(from_csv("matrix,scalar\n").unwrap_err().contains("no column rows"));
        let broken = to_csv(&a).replace(",events,", ",sometimes,");
        assert!(from_csv(&broken).unwrap_err().contains("line 2: bad timing \"sometimes\""));
        let mixed = to_csv(&a).replacen(",62914560\n", ",52428800\n", 1);
        assert!(from_csv(&mixed).unwrap_err().contains("different L2 sizes"));
    }

    #[test]
    fn each_precision_keeps_its_own_plan() {
        // the plan depends on the element type: rows of 1000 on 45000 rows are ELL in f64
        // and the vector kernel in f32
        let mut a = sample();
        a.matrices[0].plan = String::new();
        a.matrices[0].set_plan("f64", "ell".into(), "SpMV plan: ell".into());
        a.matrices[0].set_plan("f32", "csr vector (16 threads per row)".into(), String::new());
        let mut single = a.measurements[1].clone();
        single.scalar = "f32";
        a.measurements.push(single);
        assert_eq!(a.matrices[0].plan, "ell", "the first precision's plan stays the matrix's");
        assert_eq!(a.matrices[0].plan_explain, "SpMV plan: ell");
        let c = to_csv(&a);
        assert!(
            c.lines().any(|l| l.starts_with("lap2d:2000,f32,") && l.contains(",csr vector (16 threads per row),")),
            "{c}"
        );
        assert!(c.lines().any(|l| l.starts_with("lap2d:2000,f64,") && l.contains(",ell,")), "{c}");
        let b = from_csv(&c).unwrap();
        assert_eq!(b.matrices[0].plan_for("f32"), "csr vector (16 threads per row)");
        assert_eq!(b.matrices[0].plan_for("f64"), "ell");
        let rows = summary::matrices(&b);
        let plan_of = |scalar: &str| rows.iter().find(|m| m.scalar == scalar).unwrap().plan.clone();
        assert_eq!(plan_of("f32"), "csr vector (16 threads per row)");
        assert_eq!(plan_of("f64"), "ell");
        let refs: Vec<&Measurement> = a.measurements.iter().filter(|m| m.scalar == "f32").collect();
        assert!(matrix_block(&a.matrices[0], "f32", &refs).lines().next().unwrap().contains("plan: csr vector"));
        let j = to_json(&a);
        assert!(j.contains("\"plans\": {\"f64\": \"ell\", \"f32\": \"csr vector (16 threads per row)\"}"), "{j}");
        assert!(j.contains("\"plan_explains\": {\"f64\": \"SpMV plan: ell\", \"f32\": \"\"}"), "{j}");
    }

    #[test]
    fn csv_of_an_older_run_is_read_without_the_new_figures() {
        // the columns up to `correct`, as the runs of 2026-11-23 and before wrote them
        let old: String = to_csv(&sample())
            .lines()
            .map(|l| {
                let f = csv_split(l);
                let keep: Vec<String> = f[..f.len() - (CSV_COLUMNS.len() - CSV_REQUIRED)]
                    .iter()
                    .map(|x| if x.contains(',') { format!("\"{x}\"") } else { x.clone() })
                    .collect();
                keep.join(",") + "\n"
            })
            .collect();
        assert!(old.starts_with("matrix,scalar,") && old.lines().next().unwrap().ends_with(",rel_error,correct"));
        let r = from_csv(&old).unwrap();
        assert_eq!((r.measurements.len(), r.run.l2_bytes), (4, 0));
        assert!(r.matrices[0].load_seconds.is_nan());
        assert!(r.measurements.iter().all(|m| m.upload_seconds.is_nan() && m.device_bytes == 0));
        assert_eq!(r.measurements[2].seconds, 70e-6);
    }

    #[test]
    fn json_escapes_strings_nulls_nan_and_holds_the_summary() {
        assert_eq!(json_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        let j = to_json(&sample());
        assert!(j.contains("\"gpu\": \"H200 \\\"test\\\"\""));
        assert!(j.contains("\"timing\": \"graph\""));
        assert!(j.contains("\"l2_bytes\": 62914560"));
        assert!(j.contains("\"upload_us\": 40000, \"preprocessing_us\": 2000, \"device_bytes\": 255904004"), "{j}");
        assert!(j.contains("\"bound\": \"memory-bound\", \"working_set_bytes\": 335904004"), "{j}");
        assert!(j.contains("\"speedup\": 1.8714285714285714"), "{j}");
        assert!(j.contains("\"geomean_speedup\": 1.8714285714285714"), "{j}");
        assert_eq!(json_num(f64::NAN), "null");
        // balanced braces and brackets: a cheap structural check
        assert_eq!(j.matches('{').count(), j.matches('}').count());
        assert_eq!(j.matches('[').count(), j.matches(']').count());
    }

    #[test]
    fn matrix_block_lists_fastest_first() {
        let r = sample();
        let refs: Vec<&Measurement> = r.measurements.iter().collect();
        let b = matrix_block(&r.matrices[0], "f64", &refs);
        assert!(b.lines().next().unwrap().ends_with("plan: ell, uniform rows; generated in 0.42 s"), "{b}");
        let order: Vec<&str> = b.lines().skip(2).map(|l| l.split_whitespace().next().unwrap()).collect();
        assert_eq!(order, ["spgpu-auto", "spgpu-auto", "cusparse-alg1+pre", "cpu-sprs"]);
        let first: Vec<&str> = b.lines().nth(2).unwrap().split_whitespace().collect();
        assert_eq!(first[..8], ["spgpu-auto", "graph", "70.0", "4799", "112%", "40.0", "2.00", "256"], "{b}");
    }
}
