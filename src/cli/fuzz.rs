//! `normoracle fuzz`: runs the battery through a kernel (a shared library or a builtin) and
//! judges it.

use super::common::{shell_quote, verdict_flags, BatteryFilters};
use super::Outcome;
use normoracle::adapters::{self, dylib::DylibKernel, Kernel};
use normoracle::cases::{rng, BatteryConfig};
use normoracle::domain::Domain;
use normoracle::harness::{Isolated, Isolation};
use normoracle::judge::{self, report, Standard};
use normoracle::problem::{EpsConvention, Op};
use normoracle::{Dtype, Error, Result};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A shared library exporting normoracle's C ABI.
    #[arg(long, conflicts_with = "builtin", required_unless_present = "builtin")]
    pub lib: Option<PathBuf>,
    /// The symbol to call (default: normoracle_<op>_<dtype>).
    #[arg(long, requires = "lib")]
    pub symbol: Option<String>,
    /// A kernel compiled into normoracle (reference-f64, native, ...).
    #[arg(long)]
    pub builtin: Option<String>,
    /// layer_norm or rms_norm.
    #[arg(long, value_parser = |s: &str| s.parse::<Op>())]
    pub op: Op,
    /// f16, bf16, f32 (or f64 for builtins).
    #[arg(long, value_parser = |s: &str| s.parse::<Dtype>())]
    pub dtype: Dtype,
    /// Seed of the battery (default: $NORMORACLE_SEED, else a fixed seed). Printed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Random cases after the systematic ones (at most 10⁷).
    #[arg(long, default_value_t = 200, value_parser = super::common::parse_random_cases)]
    pub cases: usize,
    /// Run only this case of the battery (as printed in a failure).
    #[arg(long)]
    pub case: Option<usize>,
    #[command(flatten)]
    pub filters: BatteryFilters,
    /// The ε convention the kernel implements.
    #[arg(long, default_value = "inside", value_parser = |s: &str| s.parse::<EpsConvention>())]
    pub eps_convention: EpsConvention,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Seconds one call of a --lib kernel may take before it is killed (a finding).
    #[arg(long, default_value_t = Isolation::DEFAULT_TIMEOUT.as_secs_f64(), value_parser = parse_timeout)]
    pub timeout: f64,
    /// Address space the --lib kernel may use beyond its worker's own, in MiB (an allocation
    /// past it fails inside the kernel).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub memory_limit: Option<u64>,
    /// Load the --lib library into this process instead of a worker (no isolation: a crash,
    /// an exit or a changed floating-point environment takes the verdict with it).
    #[arg(long, requires = "lib")]
    pub in_process: bool,
    /// The standard to meet: exact, faithful, ulp:N or bound (the model's B_i).
    #[arg(long, default_value = "bound", value_parser = |s: &str| s.parse::<Standard>())]
    pub require: Standard,
    /// The kernel's declared domain, e.g. eps=1e-6..,absx=..1e4,finite: every case runs, the
    /// verdict is decided on the rows inside, the rest is reported apart.
    #[arg(long, value_parser = |s: &str| s.parse::<Domain>())]
    pub domain: Option<Domain>,
}

fn parse_timeout(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t.is_finite() && (0.001..=86400.0).contains(&t) => Ok(t),
        _ => Err(format!(
            "'{s}' is not a number of seconds in [0.001, 86400]"
        )),
    }
}

/// The isolated harness for `--lib`, with this binary as its worker.
fn isolation(args: &Args) -> Result<Isolation> {
    let worker = std::env::current_exe().map_err(|e| {
        Error::io(format!(
            "cannot find the normoracle binary for the worker: {e}"
        ))
    })?;
    Ok(Isolation {
        timeout: std::time::Duration::from_secs_f64(args.timeout),
        memory_limit: args.memory_limit.map(|mib| mib << 20),
        ..Isolation::new(worker)
    })
}

pub fn run(args: Args) -> Result<Outcome> {
    let seed = match args.seed {
        Some(s) => s,
        None => rng::seed_from_env()?,
    };
    let kernel: Box<dyn Kernel> = match (&args.lib, &args.builtin) {
        (Some(lib), _) if args.in_process => Box::new(DylibKernel::load(
            lib,
            args.symbol.as_deref(),
            args.op,
            args.dtype,
        )?),
        (Some(lib), _) => Box::new(Isolated::start(
            isolation(&args)?,
            lib,
            args.symbol.as_deref(),
            args.op,
            args.dtype,
        )?),
        (None, Some(name)) => adapters::builtin(name)?,
        (None, None) => return Err(Error::usage("give --lib PATH or --builtin NAME")),
    };
    let config = BatteryConfig {
        op: args.op,
        dtype: args.dtype,
        convention: args.eps_convention,
        seed,
        random_cases: args.cases,
        families: args.filters.families()?,
        eps: args.filters.eps_range,
        domain: args.domain.unwrap_or_default(),
    };
    if !args.json {
        eprintln!(
            "normoracle fuzz: {} {} {} seed {seed}",
            kernel.name(),
            args.op,
            args.dtype
        );
    }
    let mut report = judge::run_battery(kernel.as_ref(), &config, args.case, !args.json)?;
    report.require(args.require);
    if let Some(case) = report.first_failing_case() {
        report.reproducer = Some(reproducer(&args, seed, case));
    }
    if args.json {
        print!("{}", report::json(&report));
    } else {
        print!("{}", report::text(&report));
    }
    Ok(Outcome::from_pass(report.meets_standard()))
}

fn reproducer(args: &Args, seed: u64, case: usize) -> String {
    let kernel = match (&args.lib, &args.builtin) {
        (Some(lib), _) => {
            let sym = args
                .symbol
                .as_ref()
                .map_or(String::new(), |s| format!(" --symbol {}", shell_quote(s)));
            format!("--lib {}{sym}", shell_quote(&lib.display().to_string()))
        }
        (None, Some(b)) => format!("--builtin {}", shell_quote(b)),
        _ => String::new(),
    };
    let kernel = if args.in_process {
        format!("{kernel} --in-process")
    } else {
        kernel
    };
    let timeout = if args.timeout != Isolation::DEFAULT_TIMEOUT.as_secs_f64() && args.lib.is_some()
    {
        format!(" --timeout {}", args.timeout)
    } else {
        String::new()
    };
    let standard = verdict_flags(args.domain.as_ref(), args.require);
    format!(
        "normoracle fuzz {kernel} --op {} --dtype {} --eps-convention {} --seed {seed} --cases {} --case {case}{timeout}{standard}",
        args.op, args.dtype, args.eps_convention, args.cases
    )
}
