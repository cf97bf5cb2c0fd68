//! `normoracle audit`: the main job — everything built in, checked, and a verdict table.

use super::Outcome;
use normoracle::cases::rng;
use normoracle::output::format::Format;
use normoracle::Result;
use normoracle_cli::audit::{self, AuditConfig};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Seed of every battery (default: $NORMORACLE_SEED, else a fixed seed). Printed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Random battery cases per builtin kernel (at most 10⁷).
    #[arg(long, default_value_t = 50, value_parser = super::common::parse_random_cases)]
    pub cases: usize,
    /// Widest row of the reference's cross-check with its slow path.
    #[arg(long, default_value_t = 65)]
    pub self_check_max_d: usize,
    /// md, csv, latex or json.
    #[arg(long, default_value = "md", value_parser = |s: &str| s.parse::<Format>())]
    pub format: Format,
}

pub fn run(args: Args) -> Result<Outcome> {
    let seed = match args.seed {
        Some(s) => s,
        None => rng::seed_from_env()?,
    };
    let cfg = AuditConfig {
        seed,
        kernel_cases: args.cases,
        self_check_max_d: args.self_check_max_d,
        progress: true,
    };
    eprintln!("normoracle audit: seed {seed}");
    let rows = audit::run(&cfg)?;
    print!("{}", audit::table(&rows, &cfg).render(args.format));
    let failed = rows.iter().filter(|r| !r.passed).count();
    eprintln!("normoracle audit: {} checks, {} failed", rows.len(), failed);
    Ok(Outcome::from_pass(failed == 0))
}
