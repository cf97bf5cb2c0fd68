//! `normoracle theorems`: the papers' theorems, each checked in exact arithmetic, listed with
//! their verdicts. Exit 0 only when every theorem verified ("verified": exact checks on the
//! seeded instances tried, not a proof for all d; see `theorems::VERIFIED_MEANS`).

use super::Outcome;
use normoracle::output::format::Format;
use normoracle::output::progress;
use normoracle::{Error, Result};
use normoracle_geometry::theorems::{self, Budget, DEFAULT_CASES, DEFAULT_SEED};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output format: md, csv, latex or json.
    #[arg(long, default_value = "md")]
    pub format: Format,
    /// Random cases per theorem (on top of each theorem's fixed edge cases; at most 10⁷).
    #[arg(long, default_value_t = DEFAULT_CASES, value_parser = super::common::parse_random_cases)]
    pub cases: usize,
    /// Seed of the portable generator (printed in the table's comment).
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Check only the theorem with this id (repeatable).
    #[arg(long = "id")]
    pub ids: Vec<String>,
}

pub fn run(args: Args) -> Result<Outcome> {
    let catalogue = theorems::catalogue();
    let entries = if args.ids.is_empty() {
        catalogue
    } else {
        args.ids
            .iter()
            .map(|id| {
                theorems::find(id).ok_or_else(|| {
                    let known: Vec<_> = catalogue.iter().map(|e| e.id).collect();
                    Error::usage(format!(
                        "unknown theorem '{id}' (known: {})",
                        known.join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?
    };
    let budget = Budget {
        cases: args.cases,
        seed: args.seed,
    };
    let bar = progress::bar(entries.len() as u64, "theorems", true);
    let runs = theorems::run(&entries, budget, |r| {
        bar.set_message(r.entry.id);
        bar.inc(1);
    });
    bar.finish_and_clear();
    print!("{}", theorems::table(&runs, budget).render(args.format));
    Ok(Outcome::from_pass(theorems::all_verified(&runs)))
}
