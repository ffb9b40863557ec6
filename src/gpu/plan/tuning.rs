//! Tuning: the overrides of the plan's rules, read once from the environment or set through
//! [`UploadOptions`].
//!
//! Every `SPGPU_*` variable that changes what an upload decides (the plan, the storage or a
//! launch shape) is read here, once per process, into [`Tuning::from_env`]; nothing else in
//! the crate reads them. A library user sets the same overrides in code with
//! [`UploadOptions::tuning`] and [`DeviceCsr::upload_with`](crate::gpu::DeviceCsr::upload_with).
//! Each field is `None` by default: the rule decides. [`SpmvPlan::explain`] names every
//! override in force (`override: SPGPU_COLUMN_PARTS=2`).
//!
//! The variables that do not change a plan stay where they are read: `SPGPU_DEVICE` (the
//! device), `SPGPU_MEMORY_POOLS`, `SPGPU_PORTABLE_PTX` and `SPGPU_PINNED_STAGING` (read once
//! when the [`Context`](crate::gpu::Context) is made), `SPGPU_CUDA_DRIVER` (the driver
//! library) and `SPGPU_MEM_LIMIT` (the generators' memory limit).

use std::fmt;
use std::sync::OnceLock;

use crate::gpu::plan::{KernelChoice, SpmvPlan};

/// Set to `0` to turn hot columns off (the balanced kernel then reads all of `x` from device
/// memory), to compare ([`Tuning::hot_columns`]).
pub const HOT_COLUMNS_ENV: &str = "SPGPU_HOT_COLUMNS";

/// Set to a share from 0 to 1 to replace the share of the entries that hot columns must
/// hold, to compare ([`Tuning::hot_min_share`]).
pub const HOT_MIN_SHARE_ENV: &str = "SPGPU_HOT_MIN_SHARE";

/// Set to `0` to run one pass whatever the rule says, or to a number of parts to force it
/// (on the matrices that pass the rest of the rule: scattered and spread columns, no hot
/// columns, not few rows, the automatic plan giving SELL or the balanced kernel), to compare
/// ([`Tuning::column_parts`]).
pub const COLUMN_PARTS_ENV: &str = "SPGPU_COLUMN_PARTS";

/// Set to `0` to store 32-bit columns even where 16-bit offsets fit, to compare
/// ([`Tuning::narrow_columns`]).
pub const NARROW_COLUMNS_ENV: &str = "SPGPU_NARROW_COLUMNS";

/// Set to `0` to keep the chunks of few rows in row order (no chunk-major order), to compare
/// ([`Tuning::chunk_major`]).
pub const CHUNK_MAJOR_ENV: &str = "SPGPU_CHUNK_MAJOR";

/// Set to 256 or 512 to cut the balanced kernel's rows into blocks of that many threads
/// whatever the rule says, to compare (the hot-column kernel keeps its own;
/// [`Tuning::balanced_threads`]).
pub const BALANCED_THREADS_ENV: &str = "SPGPU_BALANCED_THREADS";

/// Set to `0` or `1` to run the balanced kernels without or with the prefetching gathers of
/// `x` whatever its share of the L2, to compare ([`Tuning::prefetch_x`]).
pub const PREFETCH_X_ENV: &str = "SPGPU_PREFETCH_X";

/// Set to `0` to convert CSR to ELL and SELL on the host only, to compare
/// ([`Tuning::device_conversion`]).
pub const DEVICE_CONVERSION_ENV: &str = "SPGPU_DEVICE_CONVERSION";

/// Overrides of the plan's rules; every field `None` (the default) lets the rule decide.
///
/// [`Tuning::from_env`] reads them from the `SPGPU_*` variables once per process;
/// [`UploadOptions`] carries them to an upload. A plan made twice for the same matrix on the
/// same device with the same tuning is the same.
///
/// ```
/// use spgpu::gpu::Tuning;
/// let t = Tuning { column_parts: Some(2), ..Tuning::default() };
/// assert_eq!(t.overrides(), vec!["SPGPU_COLUMN_PARTS=2".to_string()]);
/// assert!(Tuning::default().overrides().is_empty());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tuning {
    /// `Some(false)`: no hot columns ([`HOT_COLUMNS_ENV`]` = 0`).
    pub hot_columns: Option<bool>,
    /// The share of the entries (0 to 1) that hot columns must hold, in place of the rule's
    /// 20% (columns near the diagonal) and 10% (scattered columns) ([`HOT_MIN_SHARE_ENV`]).
    pub hot_min_share: Option<f64>,
    /// `Some(0)`: one pass; `Some(k)`: `k` column parts (at most 16, at most one per
    /// column) where the rest of the rule for parts holds ([`COLUMN_PARTS_ENV`]).
    pub column_parts: Option<usize>,
    /// `Some(false)`: 32-bit columns even where 16-bit offsets fit ([`NARROW_COLUMNS_ENV`]).
    pub narrow_columns: Option<bool>,
    /// `Some(false)`: the chunks of few rows in row order ([`CHUNK_MAJOR_ENV`]` = 0`).
    pub chunk_major: Option<bool>,
    /// Row blocks of this many threads (256 or 512; other counts are ignored) for the
    /// balanced kernel without hot columns ([`BALANCED_THREADS_ENV`]).
    pub balanced_threads: Option<usize>,
    /// `Some(true)` / `Some(false)`: the balanced kernel gathers `x` with / without the L2
    /// prefetch hint whatever its share of the L2 ([`PREFETCH_X_ENV`]).
    pub prefetch_x: Option<bool>,
    /// `Some(false)`: CSR is converted to ELL and SELL on the host only
    /// ([`DEVICE_CONVERSION_ENV`]` = 0`). Changes where the conversion runs, not its result.
    pub device_conversion: Option<bool>,
}

/// What parsing one variable gave: the value, or a warning for a value that is ignored.
type Parsed<T> = std::result::Result<Option<T>, String>;

fn flag(name: &str, v: &str, off_only: bool) -> Parsed<bool> {
    match v.trim() {
        "0" => Ok(Some(false)),
        "1" if !off_only => Ok(Some(true)),
        "1" => Ok(None),
        other => Err(format!(
            "{name}={other:?} is ignored: expected {}",
            if off_only { "0 (off) or 1 (the rule)" } else { "0 (off) or 1 (on)" }
        )),
    }
}

impl Tuning {
    /// The overrides of the `SPGPU_*` variables, read from the environment the first time
    /// this is called in the process and kept: later changes of the environment do not
    /// change it (set [`UploadOptions::tuning`] instead). A value that cannot be parsed is
    /// ignored with a warning on stderr, printed once.
    pub fn from_env() -> Tuning {
        static ENV: OnceLock<Tuning> = OnceLock::new();
        *ENV.get_or_init(|| {
            let (tuning, warnings) = Tuning::parse(|name| std::env::var(name).ok());
            for w in warnings {
                eprintln!("spgpu: warning: {w}");
            }
            tuning
        })
    }

    /// The tuning that `lookup` (the value of a variable, by name) gives, and a warning for
    /// each value that is ignored.
    pub(crate) fn parse(lookup: impl Fn(&str) -> Option<String>) -> (Tuning, Vec<String>) {
        let mut warnings = Vec::new();
        fn keep<T>(r: Parsed<T>, warnings: &mut Vec<String>) -> Option<T> {
            r.unwrap_or_else(|w| {
                warnings.push(w);
                None
            })
        }
        let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let mut t = Tuning::default();
        if let Some(v) = var(HOT_COLUMNS_ENV) {
            t.hot_columns = keep(flag(HOT_COLUMNS_ENV, &v, true), &mut warnings);
        }
        if let Some(v) = var(HOT_MIN_SHARE_ENV) {
            t.hot_min_share = keep(
                match v.trim().parse::<f64>() {
                    Ok(s) if (0.0..=1.0).contains(&s) => Ok(Some(s)),
                    _ => Err(format!("{HOT_MIN_SHARE_ENV}={v:?} is ignored: expected a share from 0 to 1")),
                },
                &mut warnings,
            );
        }
        if let Some(v) = var(COLUMN_PARTS_ENV) {
            t.column_parts = keep(
                match v.trim().parse::<usize>() {
                    Ok(k) => Ok(Some(k)),
                    Err(_) => {
                        Err(format!("{COLUMN_PARTS_ENV}={v:?} is ignored: expected a count of parts (0: one pass)"))
                    }
                },
                &mut warnings,
            );
        }
        if let Some(v) = var(NARROW_COLUMNS_ENV) {
            t.narrow_columns = keep(flag(NARROW_COLUMNS_ENV, &v, true), &mut warnings);
        }
        if let Some(v) = var(CHUNK_MAJOR_ENV) {
            t.chunk_major = keep(flag(CHUNK_MAJOR_ENV, &v, true), &mut warnings);
        }
        if let Some(v) = var(BALANCED_THREADS_ENV) {
            t.balanced_threads = keep(
                match v.trim().parse::<usize>() {
                    Ok(n) if crate::gpu::plan::balance::RowShape::with_threads(n).is_some() => Ok(Some(n)),
                    _ => Err(format!("{BALANCED_THREADS_ENV}={v:?} is ignored: expected 256 or 512")),
                },
                &mut warnings,
            );
        }
        if let Some(v) = var(PREFETCH_X_ENV) {
            t.prefetch_x = keep(flag(PREFETCH_X_ENV, &v, false), &mut warnings);
        }
        if let Some(v) = var(DEVICE_CONVERSION_ENV) {
            t.device_conversion = keep(flag(DEVICE_CONVERSION_ENV, &v, true), &mut warnings);
        }
        (t, warnings)
    }

    /// Whether uploads may store 16-bit column offsets ([`Tuning::narrow_columns`]).
    pub(crate) fn narrow_allowed(&self) -> bool {
        self.narrow_columns != Some(false)
    }

    /// Whether hot columns are allowed ([`Tuning::hot_columns`]).
    pub(crate) fn hot_allowed(&self) -> bool {
        self.hot_columns != Some(false)
    }

    /// Whether chunks of few rows may come in chunk-major order ([`Tuning::chunk_major`]).
    pub(crate) fn chunk_major_allowed(&self) -> bool {
        self.chunk_major != Some(false)
    }

    /// Whether conversions may run on the device ([`Tuning::device_conversion`]).
    pub(crate) fn device_conversion_allowed(&self) -> bool {
        self.device_conversion != Some(false)
    }

    /// Every override in force, as `VARIABLE=value`, in a fixed order.
    pub fn overrides(&self) -> Vec<String> {
        let mut v = Vec::new();
        let b = |on: bool| if on { "1" } else { "0" };
        if let Some(on) = self.hot_columns {
            v.push(format!("{HOT_COLUMNS_ENV}={}", b(on)));
        }
        if let Some(s) = self.hot_min_share {
            v.push(format!("{HOT_MIN_SHARE_ENV}={s}"));
        }
        if let Some(k) = self.column_parts {
            v.push(format!("{COLUMN_PARTS_ENV}={k}"));
        }
        if let Some(on) = self.narrow_columns {
            v.push(format!("{NARROW_COLUMNS_ENV}={}", b(on)));
        }
        if let Some(on) = self.chunk_major {
            v.push(format!("{CHUNK_MAJOR_ENV}={}", b(on)));
        }
        if let Some(n) = self.balanced_threads {
            v.push(format!("{BALANCED_THREADS_ENV}={n}"));
        }
        if let Some(on) = self.prefetch_x {
            v.push(format!("{PREFETCH_X_ENV}={}", b(on)));
        }
        if let Some(on) = self.device_conversion {
            v.push(format!("{DEVICE_CONVERSION_ENV}={}", b(on)));
        }
        v
    }
}

impl fmt::Display for Tuning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = self.overrides();
        if o.is_empty() {
            f.write_str("no overrides")
        } else {
            f.write_str(&o.join(", "))
        }
    }
}

/// How [`DeviceCsr::upload_with`](crate::gpu::DeviceCsr::upload_with) uploads a matrix: the
/// kernel asked for and the tuning of the plan's rules.
///
/// [`Default`] is the automatic plan with the environment's tuning ([`Tuning::from_env`]);
/// a [`KernelChoice`] converts into the options that force it.
///
/// ```
/// use spgpu::gpu::{KernelChoice, Tuning, UploadOptions};
/// let opts = UploadOptions { tuning: Tuning { column_parts: Some(0), ..Tuning::from_env() }, ..Default::default() };
/// assert_eq!(opts.kernel, KernelChoice::Auto);
/// assert_eq!(UploadOptions::from(KernelChoice::Ell).kernel, KernelChoice::Ell);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct UploadOptions {
    /// The kernel: [`KernelChoice::Auto`] for the plan's rule.
    pub kernel: KernelChoice,
    /// Overrides of the plan's rules.
    pub tuning: Tuning,
}

impl Default for UploadOptions {
    fn default() -> Self {
        UploadOptions { kernel: KernelChoice::Auto, tuning: Tuning::from_env() }
    }
}

impl UploadOptions {
    /// The options of `kernel` with the environment's tuning.
    pub fn kernel(kernel: KernelChoice) -> Self {
        UploadOptions { kernel, ..Default::default() }
    }

    /// These options with `tuning` in place of theirs.
    pub fn with_tuning(self, tuning: Tuning) -> Self {
        UploadOptions { tuning, ..self }
    }
}

impl From<KernelChoice> for UploadOptions {
    fn from(kernel: KernelChoice) -> Self {
        UploadOptions::kernel(kernel)
    }
}

impl From<&UploadOptions> for UploadOptions {
    fn from(opts: &UploadOptions) -> Self {
        opts.clone()
    }
}

impl SpmvPlan {
    /// The overrides in force when the plan was made ([`Tuning::overrides`]), which
    /// [`explain`](SpmvPlan::explain) names.
    pub fn overrides(&self) -> Vec<String> {
        self.tuning.overrides()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(vars: &[(&str, &str)]) -> (Tuning, Vec<String>) {
        Tuning::parse(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
    }

    #[test]
    fn nothing_set_is_no_override() {
        let (t, w) = parse(&[]);
        assert_eq!(t, Tuning::default());
        assert!(w.is_empty() && t.overrides().is_empty());
        assert_eq!(t.to_string(), "no overrides");
        // empty values count as unset
        assert_eq!(parse(&[(COLUMN_PARTS_ENV, " ")]).0, Tuning::default());
    }

    #[test]
    fn each_variable_parses() {
        let (t, w) = parse(&[
            (HOT_COLUMNS_ENV, "0"),
            (HOT_MIN_SHARE_ENV, " 0.3"),
            (COLUMN_PARTS_ENV, "2"),
            (NARROW_COLUMNS_ENV, "0"),
            (CHUNK_MAJOR_ENV, "0"),
            (BALANCED_THREADS_ENV, "512"),
            (PREFETCH_X_ENV, "1"),
            (DEVICE_CONVERSION_ENV, "0 "),
        ]);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            t,
            Tuning {
                hot_columns: Some(false),
                hot_min_share: Some(0.3),
                column_parts: Some(2),
                narrow_columns: Some(false),
                chunk_major: Some(false),
                balanced_threads: Some(512),
                prefetch_x: Some(true),
                device_conversion: Some(false),
            }
        );
        assert!(!t.narrow_allowed() && !t.hot_allowed() && !t.chunk_major_allowed() && !t.device_conversion_allowed());
        assert_eq!(t.overrides().len(), 8);
        assert_eq!(parse(&[(PREFETCH_X_ENV, "0")]).0.prefetch_x, Some(false));
        assert_eq!(parse(&[(COLUMN_PARTS_ENV, "0")]).0.column_parts, Some(0));
        assert_eq!(parse(&[(BALANCED_THREADS_ENV, "256")]).0.balanced_threads, Some(256));
        // 1 for a switch that can only be turned off is the rule: no override
        for name in [HOT_COLUMNS_ENV, NARROW_COLUMNS_ENV, CHUNK_MAJOR_ENV, DEVICE_CONVERSION_ENV] {
            let (t, w) = parse(&[(name, "1")]);
            assert_eq!(t, Tuning::default(), "{name}");
            assert!(w.is_empty(), "{name}");
        }
    }

    #[test]
    fn bad_values_are_ignored_with_a_warning() {
        for (name, value) in [
            (HOT_COLUMNS_ENV, "off"),
            (HOT_MIN_SHARE_ENV, "1.5"),
            (HOT_MIN_SHARE_ENV, "lots"),
            (COLUMN_PARTS_ENV, "-1"),
            (NARROW_COLUMNS_ENV, "no"),
            (CHUNK_MAJOR_ENV, "2"),
            (BALANCED_THREADS_ENV, "300"),
            (PREFETCH_X_ENV, "yes"),
            (DEVICE_CONVERSION_ENV, "host"),
        ] {
            let (t, w) = parse(&[(name, value)]);
            assert_eq!(t, Tuning::default(), "{name}={value}");
            assert_eq!(w.len(), 1, "{name}={value}");
            assert!(w[0].starts_with(&format!("{name}=")) && w[0].contains("is ignored"), "{}", w[0]);
        }
    }

    #[test]
    fn options_convert_from_a_choice() {
        let o = UploadOptions::from(KernelChoice::Sell);
        assert_eq!(o.kernel, KernelChoice::Sell);
        assert_eq!(o.tuning, Tuning::from_env());
        let t = Tuning { prefetch_x: Some(false), ..Tuning::default() };
        assert_eq!(UploadOptions::default().with_tuning(t).tuning, t);
        assert_eq!(UploadOptions::from(&o), o);
    }
}
