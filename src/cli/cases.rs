//! `normoracle cases`: write the battery to a directory, for drivers in other frameworks.

use super::common::{parse_random_cases, BatteryFilters};
use super::Outcome;
use normoracle::cases::rng;
use normoracle::domain::Domain;
use normoracle::manifest::{self, CasesSpec};
use normoracle::problem::{EpsConvention, Op};
use normoracle::{Dtype, Result};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The directory to write (x, γ, β .npy files and manifest.json). It must be new or
    /// empty (exit 2 otherwise): an earlier run's outputs left there would be judged as the
    /// next driver's.
    #[arg(long)]
    pub out: PathBuf,
    /// Write over a non-empty directory: first remove the files its manifest names (inputs
    /// and outputs) and the manifest.
    #[arg(long)]
    pub force: bool,
    /// Ops (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "layer_norm,rms_norm", value_parser = |s: &str| s.parse::<Op>())]
    pub op: Vec<Op>,
    /// Dtypes (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "f32,f16,bf16", value_parser = |s: &str| s.parse::<Dtype>())]
    pub dtype: Vec<Dtype>,
    /// Seed (default: $NORMORACLE_SEED, else a fixed seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Random cases after the systematic ones, per (op, dtype) (at most 10⁷).
    #[arg(long, default_value_t = 0, value_parser = parse_random_cases)]
    pub cases: usize,
    #[arg(long, default_value = "inside", value_parser = |s: &str| s.parse::<EpsConvention>())]
    pub eps_convention: EpsConvention,
    #[command(flatten)]
    pub filters: BatteryFilters,
    /// The kernel's declared domain, recorded in the manifest: `check DIR` decides its verdict
    /// on it (every case is still written).
    #[arg(long, value_parser = |s: &str| s.parse::<Domain>())]
    pub domain: Option<Domain>,
}

pub fn run(args: Args) -> Result<Outcome> {
    let seed = match args.seed {
        Some(s) => s,
        None => rng::seed_from_env()?,
    };
    manifest::prepare_dir(&args.out, args.force)?;
    let spec = CasesSpec {
        families: args.filters.families()?,
        eps: args.filters.eps_range,
        domain: args.domain.unwrap_or_default(),
        ..CasesSpec::new(&args.op, &args.dtype, args.eps_convention, seed, args.cases)
    };
    let n = manifest::write_cases(&args.out, &spec)?;
    if n == 0 {
        return Err(normoracle::Error::usage(
            "the filters keep no case (see --family and --eps-range)",
        ));
    }
    eprintln!(
        "normoracle cases: {n} cases (seed {seed}) written to {}; write each case's outputs to the 'y' file its manifest entry names, then run: normoracle check {}",
        args.out.display(),
        args.out.display()
    );
    Ok(Outcome::Pass)
}
