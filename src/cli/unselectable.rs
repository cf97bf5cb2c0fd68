//! `normoracle unselectable check|figure|bench`: keys that no query can select (Brody, Alon,
//! Yahav 2023, Theorem 1), decided with exactly verified certificates.

use super::common::{at_most, generated_values, MAX_REPEATS};
use super::Outcome;
use clap::{Args as ClapArgs, Subcommand};
use normoracle::output::format::Format;
use normoracle::output::progress;
use normoracle::{Error, Result};
use normoracle_geometry::selectability::figure::{self, FigureParams};
use normoracle_geometry::selectability::report;
use normoracle_geometry::selectability::{NormSpec, Options};
use std::ops::RangeInclusive;
use std::path::PathBuf;

#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Sub,
}

#[derive(Subcommand, Debug)]
pub enum Sub {
    /// Decide every key of an (n, d) .npy array; exit 0 all selectable, 1 some unselectable.
    Check(CheckArgs),
    /// Brody et al. Figure 1c/1d: both readings per (d, n) cell, as a table (and an SVG).
    Figure(FigureArgs),
    /// Cost per key for growing n and d.
    Bench(BenchArgs),
    /// Write the keys of one figure run (cell d, n, run r) as an (n, d) f32 .npy file.
    Sample(SampleArgs),
}

#[derive(ClapArgs, Debug)]
pub struct SampleArgs {
    /// Dimension of the keys (n × d at most 2^28).
    #[arg(long)]
    pub d: usize,
    /// Number of keys.
    #[arg(long)]
    pub n: usize,
    #[arg(long, default_value_t = 0)]
    pub run: usize,
    #[arg(long, default_value_t = 123)]
    pub seed: u64,
    /// Output .npy path.
    #[arg(short, long)]
    pub out: PathBuf,
}

#[derive(ClapArgs, Debug)]
pub struct CheckArgs {
    /// Keys: an (n, d) array (f16, bf16 as <u2, f32 or f64).
    pub keys: PathBuf,
    /// Score biases: an (n,) array (score v·h_j + b_j).
    #[arg(long)]
    pub bias: Option<PathBuf>,
    /// Normalize the keys exactly first: none, layernorm, rmsnorm, layernorm-eps=E, rmsnorm-eps=E.
    #[arg(long, default_value = "none")]
    pub norm: String,
    /// A gain γ (a (d,) array) applied after the normalization.
    #[arg(long)]
    pub gain: Option<PathBuf>,
    /// JSON output: {"unselectable": [indices], "keys": [...certificates...]}.
    #[arg(long)]
    pub json: bool,
    /// Also list the selectable keys with their queries.
    #[arg(long)]
    pub all: bool,
}

#[derive(ClapArgs, Debug)]
pub struct FigureArgs {
    /// Dimensions, e.g. 3..15 (inclusive; the largest d × the largest n at most 2^28).
    #[arg(long, default_value = "3..15")]
    pub d: String,
    /// Key counts, e.g. 3..60 (inclusive; at most 2^20 cells of d × n).
    #[arg(long, default_value = "3..60")]
    pub n: String,
    /// Runs per cell, at most 10^6.
    #[arg(long, default_value_t = 100)]
    pub runs: usize,
    #[arg(long, default_value_t = 123)]
    pub seed: u64,
    /// none, layernorm, rmsnorm, layernorm-eps=E, rmsnorm-eps=E.
    #[arg(long, default_value = "none")]
    pub norm: String,
    /// Table format: md, csv, latex, json.
    #[arg(long, default_value = "md")]
    pub format: String,
    /// Also write the two heatmaps as SVG here.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Re-check every certificate with the simple exact checker as well.
    #[arg(long)]
    pub audit: bool,
    /// Braid-Reflect reflections per key before the LP.
    #[arg(long, default_value_t = Options::default().patience)]
    pub patience: usize,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

#[derive(ClapArgs, Debug)]
pub struct BenchArgs {
    /// Dimensions, comma-separated (each d × each n at most 2^28).
    #[arg(long, default_value = "3,8,16,64")]
    pub d: String,
    /// Key counts, comma-separated.
    #[arg(long, default_value = "100,1000,10000")]
    pub n: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value = "none")]
    pub norm: String,
    /// Timed repetitions per size, at most 1000 (the median is reported).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    #[arg(long, default_value = "md")]
    pub format: String,
    #[arg(long, default_value_t = Options::default().patience)]
    pub patience: usize,
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: Args) -> Result<Outcome> {
    match args.command {
        Sub::Check(a) => check(a),
        Sub::Figure(a) => figure(a),
        Sub::Bench(a) => bench(a),
        Sub::Sample(a) => sample(a),
    }
}

fn check(a: CheckArgs) -> Result<Outcome> {
    let norm: NormSpec = a.norm.parse()?;
    let rep = report::check_files(
        &a.keys,
        a.bias.as_deref(),
        norm,
        a.gain.as_deref(),
        &Options::default(),
    )?;
    if a.json {
        print!("{}", rep.to_json());
    } else {
        print!("{}", rep.to_text(a.all));
    }
    Ok(Outcome::from_pass(rep.all_selectable()))
}

/// The most runs per figure cell (the paper's figure has 100).
const MAX_RUNS: usize = 1_000_000;
/// The most (d, n) cells of a figure (the paper's has 13 × 58).
const MAX_CELLS: usize = 1 << 20;

/// Rejects figure grids whose keys or cells cannot be held (a range to `usize::MAX`
/// overflowed the cell count, and each run's keys are n × d values).
fn check_grid_size(
    d: &RangeInclusive<usize>,
    n: &RangeInclusive<usize>,
    runs: usize,
) -> Result<()> {
    generated_values("the largest --n × the largest --d", *n.end(), *d.end())?;
    let len = |r: &RangeInclusive<usize>| (r.end() - r.start()).saturating_add(1);
    let cells = len(d).saturating_mul(len(n));
    at_most("the number of (d, n) cells", cells, MAX_CELLS)?;
    at_most("--runs", runs, MAX_RUNS)?;
    Ok(())
}

/// `a..b`, `a..=b` (both inclusive) or a single number.
fn parse_range(text: &str, what: &str) -> Result<RangeInclusive<usize>> {
    let bad = || Error::usage(format!("--{what} '{text}': expected a range like 3..15"));
    let num = |s: &str| s.trim().parse::<usize>().map_err(|_| bad());
    match text.split_once("..") {
        Some((a, b)) => Ok(num(a)?..=num(b.trim_start_matches('='))?),
        None => {
            let v = num(text)?;
            Ok(v..=v)
        }
    }
}

fn parse_list(text: &str, what: &str) -> Result<Vec<usize>> {
    text.split(',')
        .map(|s| {
            s.trim().parse::<usize>().map_err(|_| {
                Error::usage(format!("--{what} '{text}': expected numbers like 3,8,16"))
            })
        })
        .collect()
}

fn figure(a: FigureArgs) -> Result<Outcome> {
    let format: Format = a.format.parse()?;
    let mut params = FigureParams {
        d: parse_range(&a.d, "d")?,
        n: parse_range(&a.n, "n")?,
        runs: a.runs,
        seed: a.seed,
        norm: a.norm.parse()?,
        audit: a.audit,
        options: Options::default(),
    };
    params.options.patience = a.patience;
    params.validate()?;
    check_grid_size(&params.d, &params.n, params.runs)?;
    let cells = params.cells().len();
    let bar = progress::bar(cells as u64, "cells", !a.quiet);
    let start = std::time::Instant::now();
    let result = figure::run_grid(&params, &|| bar.inc(1));
    bar.finish_and_clear();
    let cells_out = result?;
    let secs = start.elapsed().as_secs_f64();
    let keys: usize = cells_out.iter().map(|c| c.n * c.runs).sum();
    eprintln!(
        "figure: {cells} cells, {keys} keys, every verdict certified{} in {secs:.2} s on {} threads ({})",
        if params.audit { " and audited" } else { "" },
        rayon::current_num_threads(),
        figure::stage_summary(&cells_out)
    );
    print!(
        "{}",
        figure::figure_table(&params, &cells_out).render(format)
    );
    if let Some(path) = &a.svg {
        let svg = figure::heatmap_svg(&params, &cells_out)?;
        std::fs::write(path, svg)
            .map_err(|e| Error::io(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(Outcome::Pass)
}

fn bench(a: BenchArgs) -> Result<Outcome> {
    let format: Format = a.format.parse()?;
    let dims = parse_list(&a.d, "d")?;
    let sizes = parse_list(&a.n, "n")?;
    let max = |v: &[usize]| v.iter().copied().max().unwrap_or(0);
    generated_values("the largest --n × the largest --d", max(&sizes), max(&dims))?;
    at_most("--repeat", a.repeat, MAX_REPEATS)?;
    let options = Options {
        patience: a.patience,
        ..Options::default()
    };
    let bar = progress::bar((dims.len() * sizes.len()) as u64, "sizes", !a.quiet);
    let table = figure::bench_table(
        &dims,
        &sizes,
        a.seed,
        a.norm.parse()?,
        a.repeat,
        &options,
        &|| bar.inc(1),
    );
    bar.finish_and_clear();
    print!("{}", table?.render(format));
    Ok(Outcome::Pass)
}

fn sample(a: SampleArgs) -> Result<Outcome> {
    generated_values("--n × --d", a.n, a.d)?;
    let array = figure::sample_npy(a.seed, a.d, a.n, a.run)?;
    normoracle::npy::write(&a.out, &array)?;
    Ok(Outcome::Pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_lists_parse() {
        assert_eq!(parse_range("3..15", "d").unwrap(), 3..=15);
        assert_eq!(parse_range("3..=15", "d").unwrap(), 3..=15);
        assert_eq!(parse_range("7", "d").unwrap(), 7..=7);
        assert!(parse_range("a..b", "d").is_err());
        assert_eq!(parse_list("3, 8,16", "d").unwrap(), vec![3, 8, 16]);
        assert!(parse_list("3,,8", "d").is_err());
    }
}
