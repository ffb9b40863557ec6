//! The honest summary of a run: per matrix and precision, the plan (`spgpu-auto`) against
//! the fastest cuSPARSE variant, with memory-bound and latency-bound matrices apart.
//!
//! A matrix is **memory-bound** in a precision when its working set by the minimal byte
//! model ([`super::model::csr_bytes`], the `bytes` of its measurements) is larger than the
//! device's L2 cache ([`RunInfo::l2_bytes`](super::report::RunInfo::l2_bytes)): then every
//! SpMV streams it from device memory. Otherwise it is **latency-bound**: it stays in L2
//! between launches, and launch latency and the kernel's critical path set the time.
//! Averaging the two kinds hides both, so each gets its own table and statistics.
//!
//! For each matrix and precision ([`MatrixSummary`]): the plan's time, the fastest spgpu
//! kernel, the fastest cuSPARSE variant, the **speedup** `t_cusparse / t_auto` (above 1:
//! the plan is faster), the fraction of the copy bandwidth each reaches, the plan's
//! preprocessing and upload time as multiples of one SpMV of the plan, and its device
//! memory over that of the CSR arrays. Each time is the best of the implementation's
//! timings (CUDA events, or a CUDA-graph replay where one was made), so both sides are
//! timed alike. For each group and precision ([`GroupStats`]): the geometric mean of the
//! speedups, the smallest and its matrix, and how many are below 1.

use super::report::{align, fmt_us, Measurement, Report};
use super::timing::Method;
use std::fmt::Write as _;

/// What limits a matrix's SpMV on the device (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bound {
    /// The working set is larger than the L2 cache.
    Memory,
    /// The working set fits in the L2 cache.
    Latency,
}

impl Bound {
    /// The bound of a working set of `bytes` on a device with an L2 of `l2_bytes` (0 when
    /// unknown: then every matrix counts as memory-bound).
    pub fn of(bytes: u64, l2_bytes: u64) -> Bound {
        if bytes > l2_bytes {
            Bound::Memory
        } else {
            Bound::Latency
        }
    }

    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Bound::Memory => "memory-bound",
            Bound::Latency => "latency-bound",
        }
    }
}

/// One matrix in one precision: the plan against the fastest cuSPARSE variant.
#[derive(Debug, Clone)]
pub struct MatrixSummary {
    /// The matrix's name.
    pub matrix: String,
    /// `f32` or `f64`.
    pub scalar: &'static str,
    /// Whether its working set exceeds the L2.
    pub bound: Bound,
    /// Bytes of one SpMV by the minimal model: the working set.
    pub working_set: u64,
    /// Rows.
    pub rows: usize,
    /// Stored entries.
    pub nnz: usize,
    /// The plan's kernel.
    pub plan: String,
    /// The best timing of `spgpu-auto`.
    pub auto: Option<Measurement>,
    /// The fastest spgpu implementation (auto or a forced kernel).
    pub best_spgpu: Option<Measurement>,
    /// The fastest cuSPARSE variant.
    pub best_cusparse: Option<Measurement>,
}

impl MatrixSummary {
    /// `t_cusparse / t_auto`: above 1 when the plan is faster; NaN when either is missing.
    pub fn speedup(&self) -> f64 {
        match (&self.auto, &self.best_cusparse) {
            (Some(a), Some(c)) if a.seconds > 0.0 => c.seconds / a.seconds,
            _ => f64::NAN,
        }
    }

    /// The plan's preprocessing time at upload over one SpMV of the plan.
    pub fn preprocessing_spmvs(&self) -> f64 {
        self.auto.as_ref().map_or(f64::NAN, |a| a.preprocessing_seconds / a.seconds)
    }

    /// The plan's upload time (preprocessing and copies) over one SpMV of the plan.
    pub fn upload_spmvs(&self) -> f64 {
        self.auto.as_ref().map_or(f64::NAN, |a| a.upload_seconds / a.seconds)
    }

    /// Bytes of the CSR arrays in this precision: row offsets, column indices and values.
    pub fn csr_array_bytes(&self) -> u64 {
        let s = if self.scalar == "f32" { 4 } else { 8 };
        (self.rows as u64 + 1) * 4 + self.nnz as u64 * (4 + s)
    }

    /// The plan's device memory over that of the CSR arrays (1 when it keeps nothing
    /// else); NaN when unknown.
    pub fn memory_ratio(&self) -> f64 {
        match &self.auto {
            Some(a) if a.device_bytes > 0 && self.csr_array_bytes() > 0 => {
                a.device_bytes as f64 / self.csr_array_bytes() as f64
            }
            _ => f64::NAN,
        }
    }
}

/// The lowest median among measurements that pass `keep`.
fn fastest<'a>(ms: impl Iterator<Item = &'a Measurement>, keep: impl Fn(&str) -> bool) -> Option<Measurement> {
    ms.filter(|m| keep(&m.implementation) && m.seconds.is_finite())
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
        .cloned()
}

/// One [`MatrixSummary`] per matrix and precision of the report, memory-bound first, each
/// group by increasing working set (a matrix's precisions next to each other, f64 first).
pub fn matrices(r: &Report) -> Vec<MatrixSummary> {
    let l2 = r.run.l2_bytes;
    let mut keys: Vec<(&str, &'static str)> = Vec::new();
    for m in &r.measurements {
        if !keys.contains(&(m.matrix.as_str(), m.scalar)) {
            keys.push((m.matrix.as_str(), m.scalar));
        }
    }
    let out: Vec<MatrixSummary> = keys
        .into_iter()
        .map(|(name, scalar)| {
            let ms = || r.measurements.iter().filter(move |m| m.matrix == name && m.scalar == scalar);
            let info = r.matrices.iter().find(|i| i.name == name);
            let working_set = ms().map(|m| m.bytes).max().unwrap_or(0);
            MatrixSummary {
                matrix: name.to_string(),
                scalar,
                bound: Bound::of(working_set, l2),
                working_set,
                rows: info.map_or(0, |i| i.rows),
                nnz: info.map_or(0, |i| i.nnz),
                plan: info.map_or_else(String::new, |i| i.plan_for(scalar).to_string()),
                auto: fastest(ms(), |i| i == "spgpu-auto"),
                best_spgpu: fastest(ms(), |i| i.starts_with("spgpu-")),
                best_cusparse: fastest(ms(), |i| i.starts_with("cusparse")),
            }
        })
        .collect();
    // the sort key of a matrix: its largest working set in the report (f64 when present)
    let sizes: Vec<u64> = out
        .iter()
        .map(|s| out.iter().filter(|o| o.matrix == s.matrix).map(|o| o.working_set).max().unwrap_or(0))
        .collect();
    let mut keyed: Vec<(u64, MatrixSummary)> = sizes.into_iter().zip(out).collect();
    keyed.sort_by(|(ka, a), (kb, b)| {
        (a.bound, *ka, &a.matrix, a.scalar != "f64").cmp(&(b.bound, *kb, &b.matrix, b.scalar != "f64"))
    });
    keyed.into_iter().map(|(_, s)| s).collect()
}

/// Statistics of the speedups of one group in one precision.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupStats {
    /// The group.
    pub bound: Bound,
    /// `f32` or `f64`.
    pub scalar: &'static str,
    /// Matrices of the group in this precision.
    pub matrices: usize,
    /// Those with both an auto and a cuSPARSE time (the ones the statistics cover).
    pub compared: usize,
    /// Geometric mean of their speedups (NaN when none).
    pub geomean: f64,
    /// The smallest speedup and its matrix.
    pub min: Option<(f64, String)>,
    /// How many speedups are below 1 (cuSPARSE faster than the plan).
    pub below_one: usize,
}

/// The geometric mean of positive finite values; NaN when there are none.
pub fn geomean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
        sum += v.ln();
        n += 1;
    }
    if n == 0 {
        f64::NAN
    } else {
        (sum / n as f64).exp()
    }
}

/// [`GroupStats`] for every group and precision present, memory-bound first, f64 first.
pub fn groups(rows: &[MatrixSummary]) -> Vec<GroupStats> {
    let mut out = Vec::new();
    for bound in [Bound::Memory, Bound::Latency] {
        for scalar in ["f64", "f32"] {
            let members: Vec<&MatrixSummary> = rows.iter().filter(|s| s.bound == bound && s.scalar == scalar).collect();
            if members.is_empty() {
                continue;
            }
            let compared: Vec<(f64, &str)> = members
                .iter()
                .map(|s| (s.speedup(), s.matrix.as_str()))
                .filter(|(v, _)| v.is_finite() && *v > 0.0)
                .collect();
            out.push(GroupStats {
                bound,
                scalar,
                matrices: members.len(),
                compared: compared.len(),
                geomean: geomean(compared.iter().map(|c| c.0)),
                min: compared.iter().min_by(|a, b| a.0.total_cmp(&b.0)).map(|(v, m)| (*v, m.to_string())),
                below_one: compared.iter().filter(|c| c.0 < 1.0).count(),
            });
        }
    }
    out
}

/// A number with three significant digits from 1 up (`131`, `10.1`, `8.23`), two decimals
/// below; `-` when not finite.
pub fn fmt_sig(v: f64) -> String {
    // the thresholds are those of the rounded value: 99.996 prints as 100, not 100.0
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 99.95 {
        format!("{v:.0}")
    } else if v.abs() >= 9.995 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A speedup as `1.54x` (`-` when not finite).
pub fn fmt_speedup(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}x")
    } else {
        "-".into()
    }
}

/// Bytes in MB (10^6), three significant digits.
pub fn fmt_mb(bytes: u64) -> String {
    fmt_sig(bytes as f64 / 1e6)
}

/// `time (fraction)` of a measurement, `*` for a CUDA-graph replay.
fn timed(m: &Measurement) -> String {
    let mark = if m.method == Method::Graph { "*" } else { "" };
    if m.fraction.is_finite() {
        format!("{}{mark} ({:.0}%)", fmt_us(m.seconds), m.fraction * 100.0)
    } else {
        format!("{}{mark}", fmt_us(m.seconds))
    }
}

/// Rows as a Markdown table (first row the header) or as aligned text.
pub fn table(rows: &[Vec<String>], markdown: bool) -> String {
    if !markdown {
        return align(rows);
    }
    let mut s = String::new();
    for (i, row) in rows.iter().enumerate() {
        let _ = writeln!(s, "| {} |", row.join(" | "));
        if i == 0 {
            let _ = writeln!(s, "|{}", "---|".repeat(row.len()));
        }
    }
    s
}

/// The L2 size as text: `60 MiB`, or `unknown`.
fn l2_text(l2: u64) -> String {
    if l2 == 0 {
        "unknown".into()
    } else {
        format!("{} MiB", fmt_sig(l2 as f64 / f64::from(1u32 << 20)))
    }
}

/// The per-matrix tables, one per group, each under a heading line (`### ` in Markdown).
pub fn matrix_tables(r: &Report, markdown: bool) -> String {
    let rows = matrices(r);
    let mut s = String::new();
    for bound in [Bound::Memory, Bound::Latency] {
        let members: Vec<&MatrixSummary> = rows.iter().filter(|m| m.bound == bound).collect();
        if members.is_empty() {
            continue;
        }
        let rel = if bound == Bound::Memory { ">" } else { "<=" };
        let title = format!(
            "{} ({} matrix-precision pairs; working set {rel} L2 = {})",
            capitalized(bound.name()),
            members.len(),
            l2_text(r.run.l2_bytes)
        );
        let _ = writeln!(s, "{}{title}\n", if markdown { "### " } else { "" });
        let mut t = vec![[
            "matrix",
            "scalar",
            "MB",
            "rows",
            "nnz",
            "plan",
            "auto us (of copy)",
            "best spgpu",
            "best cuSPARSE",
            "speedup",
            "prep / SpMV",
            "upload / SpMV",
            "memory",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()];
        for m in members {
            t.push(vec![
                m.matrix.clone(),
                m.scalar.to_string(),
                fmt_mb(m.working_set),
                m.rows.to_string(),
                m.nnz.to_string(),
                m.plan.clone(),
                m.auto.as_ref().map_or_else(|| "-".into(), timed),
                m.best_spgpu.as_ref().map_or_else(
                    || "-".into(),
                    |b| format!("{} {}", b.implementation.trim_start_matches("spgpu-"), timed(b)),
                ),
                m.best_cusparse.as_ref().map_or_else(
                    || "-".into(),
                    |b| format!("{} {}", b.implementation.trim_start_matches("cusparse-"), timed(b)),
                ),
                fmt_speedup(m.speedup()),
                fmt_sig(m.preprocessing_spmvs()),
                fmt_sig(m.upload_spmvs()),
                if m.memory_ratio().is_finite() { format!("{:.2}x", m.memory_ratio()) } else { "-".into() },
            ]);
        }
        s.push_str(&table(&t, markdown));
        s.push('\n');
    }
    s
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// The statistics table: one row per group and precision.
pub fn group_table(r: &Report, markdown: bool) -> String {
    let mut t = vec![["group", "scalar", "matrices", "geomean speedup", "min speedup", "below 1.0x"]
        .iter()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()];
    for g in groups(&matrices(r)) {
        t.push(vec![
            g.bound.name().to_string(),
            g.scalar.to_string(),
            if g.compared == g.matrices { g.matrices.to_string() } else { format!("{} of {}", g.compared, g.matrices) },
            fmt_speedup(g.geomean),
            g.min.as_ref().map_or_else(|| "-".into(), |(v, m)| format!("{} ({m})", fmt_speedup(*v))),
            g.below_one.to_string(),
        ]);
    }
    table(&t, markdown)
}

/// The whole summary: the legend, the group statistics and the per-matrix tables.
pub fn summary(r: &Report, markdown: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "speedup = fastest cuSPARSE time / spgpu auto time (above 1.00x: the plan is faster); times in us, \
         (percent of the {} GB/s copy bandwidth by the minimal byte model), * = CUDA-graph replay; prep and \
         upload = the plan's preprocessing and upload time in SpMVs of the plan; memory = the plan's device \
         memory / the CSR arrays'; MB = working set by the byte model.\n",
        fmt_sig(r.run.copy_gbps)
    );
    s.push_str(&group_table(r, markdown));
    s.push('\n');
    s.push_str(&matrix_tables(r, markdown));
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::report::{MatrixInfo, RunInfo};
    use super::*;

    /// A measurement of `imp` on `matrix` taking `us` microseconds with `bytes` by the model.
    pub(crate) fn meas(matrix: &str, scalar: &'static str, imp: &str, us: f64, bytes: u64) -> Measurement {
        let gbps = bytes as f64 / (us * 1e-6) / 1e9;
        Measurement {
            matrix: matrix.into(),
            scalar,
            implementation: imp.into(),
            method: Method::Events,
            seconds: us * 1e-6,
            min_seconds: us * 1e-6,
            max_seconds: us * 1e-6,
            per_rep: 10,
            reps: 5,
            bytes,
            format_bytes: bytes,
            gbps,
            fraction: gbps / 4000.0,
            rel_error: 0.0,
            correct: true,
            upload_seconds: f64::NAN,
            preprocessing_seconds: f64::NAN,
            device_bytes: 0,
        }
    }

    /// Three matrices on a device with a 50 MB L2: `big` (200 MB in f64, 100 MB in f32),
    /// `mid` (80 MB in f64, 40 MB in f32: memory-bound only in f64) and `small` (1 MB).
    pub(crate) fn synthetic() -> Report {
        let mut ms = Vec::new();
        let mut push = |matrix: &str, scalar: &'static str, bytes: u64, auto: f64, kernel: f64, cus: [f64; 2]| {
            let mut a = meas(matrix, scalar, "spgpu-auto", auto, bytes);
            a.upload_seconds = 1000.0 * auto * 1e-6;
            a.preprocessing_seconds = 2.0 * auto * 1e-6;
            let s = if scalar == "f32" { 4 } else { 8 };
            a.device_bytes = 1_000_001 * 4 + 5_000_000 * (4 + s);
            ms.push(a);
            ms.push(meas(matrix, scalar, "spgpu-scalar", kernel, bytes));
            ms.push(meas(matrix, scalar, "cusparse-alg1", cus[0], bytes));
            ms.push(meas(matrix, scalar, "cusparse-alg1+pre", cus[1], bytes));
        };
        push("big", "f64", 200_000_000, 100.0, 80.0, [150.0, 120.0]); // 1.2x
        push("big", "f32", 100_000_000, 60.0, 70.0, [90.0, 75.0]); // 1.25x
        push("mid", "f64", 80_000_000, 50.0, 40.0, [45.0, 40.0]); // 0.8x
        push("mid", "f32", 40_000_000, 30.0, 40.0, [33.0, 60.0]); // 1.1x
        push("small", "f64", 1_000_000, 2.0, 1.5, [5.0, 4.0]); // 2x
        push("small", "f32", 500_000, 2.0, 1.5, [5.5, 8.0]); // 2.75x
        let info = |name: &str| MatrixInfo {
            name: name.into(),
            rows: 1_000_000,
            cols: 1_000_000,
            nnz: 5_000_000,
            plan: "csr scalar".into(),
            ..Default::default()
        };
        Report {
            run: RunInfo { copy_gbps: 4000.0, l2_bytes: 50_000_000, ..Default::default() },
            matrices: vec![info("small"), info("mid"), info("big")],
            measurements: ms,
            notes: Vec::new(),
        }
    }

    #[test]
    fn matrices_are_grouped_by_the_l2_and_sorted_by_size() {
        let rows = matrices(&synthetic());
        let got: Vec<(&str, &str, Bound)> = rows.iter().map(|s| (s.matrix.as_str(), s.scalar, s.bound)).collect();
        assert_eq!(
            got,
            [
                ("mid", "f64", Bound::Memory),
                ("big", "f64", Bound::Memory),
                ("big", "f32", Bound::Memory),
                ("small", "f64", Bound::Latency),
                ("small", "f32", Bound::Latency),
                ("mid", "f32", Bound::Latency),
            ]
        );
        // exactly the L2 size fits
        assert_eq!(Bound::of(50, 50), Bound::Latency);
        assert_eq!(Bound::of(51, 50), Bound::Memory);
    }

    #[test]
    fn each_row_compares_auto_with_the_fastest_cusparse_variant() {
        let rows = matrices(&synthetic());
        let big = &rows[1];
        assert_eq!(big.best_cusparse.as_ref().unwrap().implementation, "cusparse-alg1+pre");
        assert_eq!(big.best_spgpu.as_ref().unwrap().implementation, "spgpu-scalar");
        assert!((big.speedup() - 1.2).abs() < 1e-12, "{}", big.speedup());
        assert!((big.preprocessing_spmvs() - 2.0).abs() < 1e-9);
        assert!((big.upload_spmvs() - 1000.0).abs() < 1e-9);
        assert!((big.memory_ratio() - 1.0).abs() < 1e-12, "{}", big.memory_ratio());
        // mid f32: alg1 is the faster cuSPARSE variant; auto is the fastest spgpu kernel
        let mid32 = rows.iter().find(|s| s.matrix == "mid" && s.scalar == "f32").unwrap();
        assert_eq!(mid32.best_cusparse.as_ref().unwrap().implementation, "cusparse-alg1");
        assert_eq!(mid32.best_spgpu.as_ref().unwrap().implementation, "spgpu-auto");
        assert!((mid32.speedup() - 1.1).abs() < 1e-12);
        // without cuSPARSE there is no speedup
        let mut r = synthetic();
        r.measurements.retain(|m| !m.implementation.starts_with("cusparse"));
        assert!(matrices(&r).iter().all(|s| s.speedup().is_nan()));
    }

    #[test]
    fn numbers_keep_three_digits_across_rounding() {
        assert_eq!(fmt_sig(100e-6 * 1e6), "100");
        assert_eq!(fmt_sig(99.96), "100");
        assert_eq!(fmt_sig(99.94), "99.9");
        assert_eq!(fmt_sig(9.996), "10.0");
        assert_eq!(fmt_sig(0.5), "0.50");
        assert_eq!(fmt_sig(f64::INFINITY), "-");
    }

    #[test]
    fn geomean_ignores_what_is_not_a_positive_number() {
        assert!((geomean([2.0, 8.0]) - 4.0).abs() < 1e-12);
        assert!((geomean([0.5, 2.0, f64::NAN, 0.0, -1.0]) - 1.0).abs() < 1e-12);
        assert!(geomean([]).is_nan());
    }

    #[test]
    fn groups_give_geomean_min_and_count_below_one() {
        let g = groups(&matrices(&synthetic()));
        let keys: Vec<(Bound, &str, usize)> = g.iter().map(|g| (g.bound, g.scalar, g.matrices)).collect();
        assert_eq!(
            keys,
            [
                (Bound::Memory, "f64", 2),
                (Bound::Memory, "f32", 1),
                (Bound::Latency, "f64", 1),
                (Bound::Latency, "f32", 2)
            ]
        );
        let mem64 = &g[0];
        assert!((mem64.geomean - (1.2f64 * 0.8).sqrt()).abs() < 1e-12, "{}", mem64.geomean);
        let (v, m) = mem64.min.clone().unwrap();
        assert!((v - 0.8).abs() < 1e-12 && m == "mid", "{v} {m}");
        assert_eq!(mem64.below_one, 1);
        let lat32 = &g[3];
        assert!((lat32.geomean - (1.1f64 * 2.75).sqrt()).abs() < 1e-12);
        assert_eq!((lat32.below_one, lat32.compared), (0, 2));
        // a matrix without cuSPARSE counts as a member, not in the statistics
        let mut r = synthetic();
        r.measurements.retain(|m| !(m.matrix == "mid" && m.implementation.starts_with("cusparse")));
        let g = groups(&matrices(&r));
        assert_eq!((g[0].matrices, g[0].compared, g[0].below_one), (2, 1, 0));
        assert!((g[0].geomean - 1.2).abs() < 1e-12);
        assert!(group_table(&r, false).contains("1 of 2"), "{}", group_table(&r, false));
    }

    #[test]
    fn tables_show_both_groups_and_the_figures() {
        let r = synthetic();
        let md = summary(&r, true);
        assert!(md.contains("### Memory-bound (3 matrix-precision pairs; working set > L2 = 47.7 MiB)"), "{md}");
        assert!(md.contains("### Latency-bound (3 matrix-precision pairs; working set <= L2 = 47.7 MiB)"), "{md}");
        assert!(md.contains("| memory-bound | f64 | 2 | 0.98x | 0.80x (mid) | 1 |"), "{md}");
        let big = md.lines().find(|l| l.starts_with("| big | f64 |")).unwrap();
        assert_eq!(
            big,
            "| big | f64 | 200 | 1000000 | 5000000 | csr scalar | 100 (50%) | scalar 80.0 (62%) | alg1+pre 120 (42%) \
             | 1.20x | 2.00 | 1000 | 1.00x |"
        );
        let text = summary(&r, false);
        assert!(text.lines().all(|l| !l.ends_with(' ')));
        assert!(text.contains("Latency-bound"));
    }
}
