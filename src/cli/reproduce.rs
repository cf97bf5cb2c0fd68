//! `normoracle reproduce`: every table and figure the project produces, with its provenance.

use super::Outcome;
use normoracle::{Error, Result};
use normoracle_cli::artifacts::catalogue::{catalogue, resolve_seed};
use normoracle_cli::artifacts::registry::{self, Params};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The artifact's id (see --list).
    #[arg(required_unless_present = "list")]
    pub artifact: Option<String>,
    /// List the artifacts, one line each.
    #[arg(long)]
    pub list: bool,
    /// md, csv, latex, json, or svg (figures).
    #[arg(long, default_value = "md")]
    pub format: String,
    /// Seed (else NORMORACLE_SEED, else the paper's own seed where the artifact redoes an
    /// experiment, e.g. 123 for figure1c/figure1d, else the project's default).
    #[arg(long)]
    pub seed: Option<u64>,
}

pub fn run(args: Args) -> Result<Outcome> {
    let all = catalogue();
    if args.list {
        for a in &all {
            let tag = if a.machine_independent {
                ""
            } else {
                " [machine-dependent]"
            };
            println!("{:<24} {}{tag}", a.id, a.description);
        }
        return Ok(Outcome::Pass);
    }
    let id = args.artifact.unwrap_or_default();
    let artifact = all.iter().find(|a| a.id == id).ok_or_else(|| {
        Error::usage(format!(
            "unknown artifact '{id}' (normoracle reproduce --list)"
        ))
    })?;
    let seed = resolve_seed(artifact.id, args.seed)?;
    print!(
        "{}",
        registry::render(artifact, &Params { seed }, &args.format)?
    );
    Ok(Outcome::Pass)
}
