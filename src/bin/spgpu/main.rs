//! The `spgpu` command line: `info`, `convert`, `gen`, `spmv`, `cg` and `bench`.
//!
//! Each subcommand lives in its own module with an `Args` struct (clap) and a `run`
//! function. Errors are printed as one line, `spgpu: <message>`, with no backtrace, and the
//! exit status says what kind of fault it was ([`EXIT_STATUS`], `docs/cli.md`): 0 success,
//! 1 failure, 2 usage error, 130 Ctrl-C. Output goes through [`outln!`] and [`out!`], whose
//! failures are errors, so that a closed pipe (`spgpu info m.mtx | head -1`) ends the
//! command quietly; a report that must not stop the files still to be written goes through
//! [`reportln!`], which drops what a closed pipe cannot take. Data written to standard
//! output is only data: status lines go to standard error. Files are read and written
//! through [`files`]: `-` for standard input and output, outputs checked before the work,
//! written atomically.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Writes a line to standard output, like `println!`, but returns the write's result
/// (for `?`) instead of panicking when standard output is closed.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)
    }};
}

/// Writes to standard output, like `print!`, returning the write's result (see [`outln!`]).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*)
    }};
}

/// Writes a line of a report to standard output, like [`outln!`], except that a closed
/// pipe is not an error: the line is dropped (and so is the rest of the report), and the
/// command goes on to write its files. Other write errors are returned.
macro_rules! reportln {
    ($($arg:tt)*) => {
        crate::report(format_args!($($arg)*))
    };
}

mod bench;
mod cg;
mod convert;
mod files;
mod gen;
mod info;
mod progress;
mod signal;
mod spmv;

/// Whether a write of [`reportln!`] found standard output closed.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The body of [`reportln!`]: one line to standard output, nothing once it is closed.
pub fn report(line: std::fmt::Arguments) -> std::io::Result<()> {
    use std::sync::atomic::Ordering;
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    match writeln!(std::io::stdout().lock(), "{line}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        other => other,
    }
}

/// A command stopped by Ctrl-C after saving what it could: exit status 130.
#[derive(Debug)]
pub struct Interrupted(pub String);

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Interrupted {}

/// Parses a whole-number option value (a clap `value_parser`): a negative or malformed one
/// is refused with what was expected (the subcommands allow negative numbers as values, so
/// that `--max-iter -3` reaches this rather than clap's hint to write `-- -3`).
pub fn whole<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    s.trim().parse::<T>().map_err(|e| format!("expected a whole number >= 0, found {s:?} ({e})"))
}

/// [`whole`] for a count that must be at least 1.
pub fn at_least_one<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr + Default + PartialEq,
    T::Err: std::fmt::Display,
{
    let n = whole::<T>(s)?;
    if n == T::default() {
        return Err("expected a whole number >= 1, found 0".into());
    }
    Ok(n)
}

/// [`whole`] for a count in `lo..=hi`: a negative, malformed or out-of-range value is
/// refused with the range expected.
pub fn whole_in<T>(lo: T, hi: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy + Send + Sync + 'static,
    T::Err: std::fmt::Display,
{
    move |s: &str| {
        let n = s
            .trim()
            .parse::<T>()
            .map_err(|e| format!("expected a whole number from {lo} to {hi}, found {s:?} ({e})"))?;
        if n < lo || n > hi {
            return Err(format!("expected a whole number from {lo} to {hi}, found {n}"));
        }
        Ok(n)
    }
}

/// `--gpu N`, for every command that uses the GPU.
#[derive(clap::Args, Debug)]
pub struct GpuArg {
    /// The GPU to use, by CUDA ordinal (default: $SPGPU_DEVICE, else 0).
    #[arg(long, value_name = "N", value_parser = whole::<u32>)]
    pub gpu: Option<u32>,
}

impl GpuArg {
    /// Chooses the GPU before anything opens one: `--gpu N` sets `SPGPU_DEVICE`, which the
    /// library reads when it makes its context; without it, a `SPGPU_DEVICE` that is not an
    /// ordinal is a usage error here rather than a failure on first use.
    ///
    /// # Errors
    ///
    /// A [`UsageError`] for a `SPGPU_DEVICE` that is not a whole number.
    pub fn apply(&self) -> Result<(), UsageError> {
        let var = spgpu::gpu::DEVICE_ENV;
        match self.gpu {
            // Called first thing in a command, before any thread is started.
            Some(n) => std::env::set_var(var, n.to_string()),
            None => {
                if let Some(v) = std::env::var_os(var) {
                    let v = v.to_string_lossy();
                    if v.trim().parse::<u32>().is_err() {
                        return Err(UsageError(format!(
                            "{var}={v:?} is not a GPU ordinal (0, 1, ...); --gpu N chooses the GPU too"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// What a subcommand returns: any error is printed on one line.
pub type CliResult = Result<(), Box<dyn std::error::Error>>;

/// A fault of the command line itself (a malformed or missing argument, options that do
/// not go together), found by a subcommand rather than by clap: printed on one line like
/// any error, with exit status 2 like clap's own usage errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// The exit status of `spgpu`, as `spgpu --help` shows it (and `docs/cli.md`).
const EXIT_STATUS: &str = "\
Exit status:
  0    success; also when the reader of the output closes it early (`spgpu info m.mtx | head -1`)
  1    the command failed: a file that cannot be read or is malformed (the message names the
       file and line), not enough memory, a GPU error, a result that fails its check, a solve
       that does not converge
  2    usage error: an unknown subcommand or option, a missing or malformed argument (a `gen:`
       name included), options that do not go together, an output that is an input
  101  an internal error (a panic): a bug, please report it
  130  interrupted by Ctrl-C (`spgpu cg` first prints its report so far and writes its outputs)";

/// Sparse matrix-vector products and conjugate gradient on NVIDIA GPUs.
#[derive(Parser)]
#[command(name = "spgpu", version, about, long_about = None, after_help = EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a Matrix Market file's header, dimensions, row statistics and SpMV plan.
    Info(info::Args),
    /// Rewrite a Matrix Market file as sorted `coordinate real general` (or symmetric).
    Convert(convert::Args),
    /// Generate a matrix (Laplacians, random, power-law, banded) into a Matrix Market file.
    Gen(gen::Args),
    /// Run one SpMV on the GPU, check it against the CPU reference, and time it.
    Spmv(spmv::Args),
    /// Solve A x = b with conjugate gradient (GPU, or CPU without one).
    Cg(Box<cg::Args>),
    /// Benchmark SpMV kernels against cuSPARSE and the CPU over a set of matrices.
    Bench(bench::Args),
}

/// Loads the matrix named on the command line: a generated `gen:NAME`, a Matrix Market
/// file, or `-` for standard input. A malformed `gen:` name, or one past the index limit, is
/// a [`UsageError`]; a file that cannot be read, or a matrix that does not fit in memory, is
/// an ordinary error. Generating, reading standard input and reading a large file show
/// progress on a terminal.
pub fn load_matrix<T: spgpu::Scalar>(spec: &str) -> Result<spgpu::CsrMatrix<T>, Box<dyn std::error::Error>> {
    load_with_header(spec, false).map(|(_, a)| a)
}

/// [`load_matrix`], with the Matrix Market header when `header` is asked for and the
/// matrix is read (`None` for a generated matrix, or a header that standard input's first
/// MiB does not hold).
pub fn load_with_header<T: spgpu::Scalar>(
    spec: &str,
    header: bool,
) -> Result<(Option<spgpu::io::MatrixMarketHeader>, spgpu::CsrMatrix<T>), Box<dyn std::error::Error>> {
    if spec.starts_with("gen:") {
        let bar = progress::spinner(&format!("generating {spec}"));
        let a = spgpu::gen::from_spec::<T>(spec);
        bar.finish_and_clear();
        return a.map(|a| (None, a)).map_err(|e| gen_error(spec, e));
    }
    let path = std::path::Path::new(spec);
    let streamed =
        files::streamed(path).map_err(|source| spgpu::Error::Io { path: Some(path.to_path_buf()), source })?;
    Ok(match streamed {
        None if header => {
            let (h, a) = spgpu::io::read_csr_with_header::<T>(path)?;
            (Some(h), a)
        }
        None => (None, spgpu::io::read_csr::<T>(path)?),
        Some((reader, name)) if header => {
            let (reader, kept) = files::Prefix::new(reader, 1 << 20);
            let a = spgpu::io::read_csr_from_reader::<T>(reader).map_err(|e| files::named(e, &name))?;
            let kept = kept.lock().map(|k| k.clone()).unwrap_or_default();
            (spgpu::io::read_header_from_reader(&kept[..]).ok(), a)
        }
        Some((reader, name)) => {
            (None, spgpu::io::read_csr_from_reader::<T>(reader).map_err(|e| files::named(e, &name))?)
        }
    })
}

/// A generator's error: a malformed name, or dimensions past the index limit, is a
/// [`UsageError`] that names the matrix (the same name always fails); others stay as they
/// are (not enough memory).
fn gen_error(spec: &str, e: spgpu::Error) -> Box<dyn std::error::Error> {
    match e {
        spgpu::Error::InvalidArgument(m) => UsageError(m).into(),
        spgpu::Error::Format(f) => UsageError(format!("generated matrix '{spec}': {f}")).into(),
        e => e.into(),
    }
}

/// `spgpu gen` reports its argument faults as [`UsageError`]s (`--size is required`, an
/// unknown generator) or as [`spgpu::Error::InvalidArgument`] (a `--symmetric` that does not
/// fit the generator): its matrix is a function of its arguments, so both are usage errors.
/// Other errors (a file that cannot be written, not enough memory) stay as they are.
fn gen_usage(e: Box<dyn std::error::Error>) -> Box<dyn std::error::Error> {
    match e.downcast::<spgpu::Error>() {
        Ok(e) => match *e {
            spgpu::Error::InvalidArgument(m) => UsageError(m).into(),
            e => e.into(),
        },
        Err(e) => e,
    }
}

/// Whether `e`, or an error it wraps, is a write to a closed pipe.
fn is_closed_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(e) = cur {
        if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) {
            return true;
        }
        if let Some(spgpu::Error::Io { source, .. }) = e.downcast_ref::<spgpu::Error>() {
            if source.kind() == std::io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        cur = e.source();
    }
    false
}

/// Makes a `println!` (or `eprintln!`) that fails on a closed pipe end the process quietly
/// (and the unwinding of a solve stopped by Ctrl-C pass silently)
/// instead of panicking with a backtrace: status 0 for standard output (its reader has
/// what it wanted), 1 for standard error. [`outln!`] turns such failures into errors; this
/// covers the `println!`s of modules that do not use it.
fn quiet_on_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        // a solve stopped by Ctrl-C, caught by cg::interruptible: nothing to say
        if cg::is_stop(payload) {
            return;
        }
        let msg =
            payload.downcast_ref::<String>().map(String::as_str).or_else(|| payload.downcast_ref::<&str>().copied());
        if let Some(msg) = msg {
            // The standard library's message: "failed printing to stdout: Broken pipe (os error 32)".
            if msg.to_ascii_lowercase().contains("broken pipe") {
                if msg.starts_with("failed printing to stdout") {
                    std::process::exit(0);
                }
                if msg.starts_with("failed printing to stderr") {
                    std::process::exit(1);
                }
            }
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_closed_pipe();
    signal::install();
    // clap prints its own usage errors and exits with status 2 (0 for --help, --version).
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info(a) => info::run(a),
        Command::Convert(a) => convert::run(a),
        Command::Gen(a) => gen::run(a).map_err(gen_usage),
        Command::Spmv(a) => spmv::run(a),
        Command::Cg(a) => cg::run(*a),
        Command::Bench(a) => bench::run(a),
    };
    let result = result.and_then(|()| Ok(std::io::stdout().flush()?));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_closed_pipe(&*e) => ExitCode::SUCCESS,
        Err(e) => {
            // Nothing more to do if standard error is closed too.
            let _ = writeln!(std::io::stderr(), "spgpu: {e}");
            if e.is::<UsageError>() {
                ExitCode::from(2)
            } else if e.is::<Interrupted>() {
                ExitCode::from(signal::INTERRUPTED_STATUS)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_pipes_are_found_in_any_wrapping() {
        let pipe = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let boxed: Box<dyn std::error::Error> = pipe().into();
        assert!(is_closed_pipe(&*boxed));
        let wrapped: Box<dyn std::error::Error> =
            spgpu::Error::Io { path: Some("/dev/stdout".into()), source: pipe() }.into();
        assert!(is_closed_pipe(&*wrapped));
        let other: Box<dyn std::error::Error> = std::io::Error::from(std::io::ErrorKind::NotFound).into();
        assert!(!is_closed_pipe(&*other));
    }

    #[test]
    fn gen_argument_faults_are_usage_errors() {
        let usage: Box<dyn std::error::Error> = UsageError("spgpu gen lap2d: --size is required".into()).into();
        assert!(gen_usage(usage).is::<UsageError>());
        let unwritable: Box<dyn std::error::Error> = "-o x/y.mtx: cannot be written".into();
        assert!(!gen_usage(unwritable).is::<UsageError>());
        let invalid: Box<dyn std::error::Error> = spgpu::Error::InvalidArgument("x".into()).into();
        assert!(gen_usage(invalid).is::<UsageError>());
        let io: Box<dyn std::error::Error> = spgpu::Error::from(std::io::Error::other("disk full")).into();
        assert!(gen_usage(io).is::<spgpu::Error>());
        assert!(load_matrix::<f64>("gen:nosuch:3").is_err_and(|e| e.is::<UsageError>()));
        assert!(load_matrix::<f64>("gen:lap2d:x").is_err_and(|e| e.is::<UsageError>()));
        let past = load_matrix::<f64>("gen:lap2d:100000000").unwrap_err();
        assert!(past.is::<UsageError>() && past.to_string().starts_with("generated matrix 'gen:lap2d:100000000': "));
        assert_eq!(load_matrix::<f64>("gen:lap2d:3").unwrap().nrows(), 9);
    }

    #[test]
    fn help_lists_the_exit_status() {
        use clap::CommandFactory;
        let help = Cli::command().render_help().to_string();
        assert!(help.contains("Exit status:") && help.contains("  2    usage error"), "{help}");
    }
}
