//! `spgpu bench`: the command line's arguments; the harness is [`spgpu::bench`].

use crate::{files, CliResult, UsageError};
use spgpu::bench::{Options, Precision, Suite};
use spgpu::gpu::KernelChoice;
use std::path::{Path, PathBuf};

/// Arguments of `spgpu bench`.
#[derive(clap::Args, Debug)]
#[command(after_help = spgpu::bench::help_suffix(), allow_negative_numbers = true)]
pub struct Args {
    /// Matrix Market files (.mtx, .mtx.gz) or folders of them. Without paths, --gen and
    /// --suite: the folder $SPGPU_MATRICES, else matrices/suitesparse (see matrices/README.md).
    pub paths: Vec<PathBuf>,
    /// A generated matrix by name, for example lap2d:2000, stencil27:100, powerlaw:1000000,
    /// longrows:20000 (repeatable; see `spgpu gen`).
    #[arg(long = "gen", value_name = "NAME")]
    pub gens: Vec<String>,
    /// A named set of generated matrices: large (the fit set), validate, check, shapes or stress
    /// (repeatable; combines with paths and --gen; listed below).
    #[arg(long = "suite", value_enum, value_name = "NAME")]
    pub suites: Vec<Suite>,
    /// The spgpu kernels to run, comma-separated, for example auto,balanced,ell,vector:8
    /// [default: auto and every forced kernel: scalar, vector:2 .. vector:32, balanced,
    /// ell]. auto always runs: the summary compares it with cuSPARSE.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_kernel)]
    pub kernels: Vec<KernelChoice>,
    /// Element type(s) to benchmark.
    #[arg(long, value_enum, default_value = "f64")]
    pub precision: Precision,
    /// Write every measurement as CSV to this file.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the run, matrices, measurements and summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw the plan's speedup over the fastest cuSPARSE variant per matrix (log axis, one
    /// panel per group, f64 and f32 as two series) as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write the summary and the table of every implementation as Markdown to this file.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Repetitions per timing (each about 2 ms of back-to-back launches, or one launch of a
    /// slower kernel); the median is reported.
    #[arg(long, default_value_t = 5, value_parser = crate::whole_in(1u32, 1000))]
    pub reps: u32,
    /// Also time CUDA-graph replays for matrices with fewer entries than this.
    #[arg(long, default_value_t = 1_000_000, value_name = "NNZ", value_parser = crate::whole::<usize>)]
    pub graph_below: usize,
    /// Size in MiB of each buffer of the copy-bandwidth measurement (two are allocated).
    #[arg(long, default_value_t = 2048, value_parser = crate::whole_in(1u64, 65536))]
    pub copy_mib: u64,
    /// Skip cuSPARSE.
    #[arg(long)]
    pub no_cusparse: bool,
    /// Skip the CPU baselines.
    #[arg(long)]
    pub no_cpu: bool,
    /// The L2 size in MiB that separates memory-bound from latency-bound matrices, instead
    /// of the device's (or, with --from-csv, the CSV's; needed for a CSV without l2_bytes).
    #[arg(long, value_name = "MIB", value_parser = crate::whole_in(1u64, 1_000_000))]
    pub l2_mib: Option<u64>,
    /// Run nothing: rebuild the summary, Markdown, JSON and plot from the CSV of an earlier
    /// run (no GPU needed).
    #[arg(long, value_name = "FILE.csv", conflicts_with_all = ["paths", "gens", "suites", "kernels", "transpose"])]
    pub from_csv: Option<PathBuf>,
    /// Benchmark y = A^T x instead: spgpu's spmv_transpose (the explicit transpose it builds
    /// and keeps) against cuSPARSE's transpose operation on A (cusparse-<alg>-transpose) and
    /// cuSPARSE on the explicit transpose (cusparse-<alg>-explicit); forced kernels and the
    /// CPU run on the explicit transpose.
    #[arg(long)]
    pub transpose: bool,
    #[command(flatten)]
    pub gpu: crate::GpuArg,
}

impl Args {
    /// The harness's options from the parsed arguments.
    fn options(self) -> Options {
        Options {
            paths: self.paths,
            gens: self.gens,
            suites: self.suites,
            kernels: self.kernels,
            precision: self.precision,
            csv: self.csv,
            json: self.json,
            plot: self.plot,
            markdown: self.markdown,
            reps: self.reps,
            graph_below: self.graph_below,
            copy_mib: self.copy_mib,
            no_cusparse: self.no_cusparse,
            no_cpu: self.no_cpu,
            l2_mib: self.l2_mib,
            from_csv: self.from_csv,
            transpose: self.transpose,
        }
    }
}

/// Parses one entry of `--kernels`.
fn parse_kernel(s: &str) -> Result<KernelChoice, String> {
    s.trim().parse::<KernelChoice>().map_err(|e| e.to_string())
}

/// Runs `spgpu bench`: the GPU chosen, every output checked, and without a GPU (unless
/// `--from-csv`) a one-line refusal that says a GPU is needed, before any matrix is made.
pub fn run(args: Args) -> CliResult {
    args.gpu.apply()?;
    let outputs: Vec<(&str, &Path)> =
        [("--csv", &args.csv), ("--json", &args.json), ("--plot", &args.plot), ("--markdown", &args.markdown)]
            .into_iter()
            .filter_map(|(option, p)| p.as_deref().map(|p| (option, p)))
            .collect();
    if let Some((option, path)) = outputs.iter().find(|(_, p)| files::is_stdout(p)) {
        return Err(UsageError(format!(
            "{option} {}: spgpu bench prints its summary on standard output; give {option} a file",
            path.display()
        ))
        .into());
    }
    let inputs: Vec<&Path> = args.paths.iter().map(PathBuf::as_path).chain(args.from_csv.as_deref()).collect();
    files::check_outputs(&inputs, &outputs)?;
    if args.from_csv.is_none() {
        if let Err(e) = spgpu::gpu::Context::global() {
            if e.is_no_device() {
                return Err(format!(
                    "spgpu bench needs a CUDA GPU, and there is none ({e}); `spgpu bench --from-csv RUN.csv` rebuilds \
                     the summary of an earlier run without one"
                )
                .into());
            }
        }
    }
    spgpu::bench::run(&args.options())
}

#[cfg(test)]
mod tests {
    use super::*;
    use spgpu::bench::forced_kernels;

    /// The arguments of `spgpu bench ARGS`, parsed as the command line parses them.
    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        #[derive(clap::Parser, Debug)]
        struct Cli {
            #[command(flatten)]
            bench: Args,
        }
        <Cli as clap::Parser>::try_parse_from(std::iter::once("bench").chain(args.iter().copied())).map(|c| c.bench)
    }

    #[test]
    fn kernels_default_to_every_forced_kernel_and_can_be_named() {
        let all = forced_kernels(&[], 32);
        assert_eq!(all, KernelChoice::forced(32));
        let names: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(
            names,
            ["scalar", "vector:2", "vector:4", "vector:8", "vector:16", "vector:32", "balanced", "sell", "ell"]
        );
        let a = parse(&["--suite", "large", "--kernels", "auto,balanced,ell,vector:8", "--kernels", "ell"]).unwrap();
        assert_eq!(a.suites, [Suite::Large]);
        assert_eq!(
            forced_kernels(&a.kernels, 32),
            [KernelChoice::Balanced, KernelChoice::Ell, KernelChoice::VectorTpr(8)]
        );
        // auto alone: nothing forced
        assert!(forced_kernels(&parse(&["--kernels", "auto"]).unwrap().kernels, 32).is_empty());
        let e = parse(&["--kernels", "auto,vector:3"]).unwrap_err().to_string();
        assert!(e.contains("unknown kernel \"vector:3\""), "{e}");
        let e = parse(&["--suite", "huge"]).unwrap_err().to_string();
        assert!(e.contains("large") && e.contains("validate"), "{e}");
        let e = parse(&["--from-csv", "a.csv", "--suite", "large"]).unwrap_err().to_string();
        assert!(e.contains("cannot be used with"), "{e}");
        assert_eq!(parse(&["--from-csv", "a.csv", "--l2-mib", "50"]).unwrap().l2_mib, Some(50));
        for (flag, value) in [("--copy-mib", "-1"), ("--l2-mib", "0"), ("--reps", "1001"), ("--copy-mib", "x")] {
            let e = parse(&["--suite", "large", flag, value]).unwrap_err().to_string();
            assert!(e.contains("expected a whole number from 1 to"), "{flag} {value}: {e}");
        }
        assert_eq!(parse(&["--suite", "large", "--copy-mib", "65536"]).unwrap().copy_mib, 65536);
        assert!(parse(&["--suite", "large", "--transpose"]).unwrap().transpose);
        assert!(!parse(&["--suite", "large"]).unwrap().transpose);
        let e = parse(&["--from-csv", "a.csv", "--transpose"]).unwrap_err().to_string();
        assert!(e.contains("cannot be used with"), "{e}");
    }

    #[test]
    fn help_lists_the_suites_and_the_summary() {
        #[derive(clap::Parser, Debug)]
        struct Cli {
            #[command(flatten)]
            bench: Args,
        }
        let help = <Cli as clap::CommandFactory>::command().render_long_help().to_string();
        for text in
            ["--suite <NAME>", "--kernels <LIST>", "--l2-mib <MIB>", "rmat:21:16", "speedup = t_cusparse / t_auto"]
        {
            assert!(help.contains(text), "missing {text} in\n{help}");
        }
    }
}
