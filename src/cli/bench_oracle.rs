//! `normoracle bench-oracle`: the time of a verdict against numpy's float64 LayerNorm of the
//! same data, measured side by side, in f32, f16 and bf16.

use super::common::{at_most, generated_values, MAX_REPEATS};
use super::Outcome;
use normoracle::judge::bench;
use normoracle::{Dtype, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Rows of the data (--rows × --d at most 2^28).
    #[arg(long, default_value_t = 4096)]
    pub rows: usize,
    /// Row width.
    #[arg(long, default_value_t = 4096)]
    pub d: usize,
    /// Runs per side, at most 1000; medians are reported.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Formats to time, comma-separated (f32, f16, bf16).
    #[arg(long, value_delimiter = ',', default_values_t = vec![Dtype::F32, Dtype::F16, Dtype::BF16])]
    pub dtype: Vec<Dtype>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<Outcome> {
    if args.rows == 0 || args.d == 0 || args.repeats == 0 {
        return Err(normoracle::Error::usage(
            "--rows, --d and --repeats must be positive",
        ));
    }
    generated_values("--rows × --d", args.rows, args.d)?;
    at_most("--repeats", args.repeats, MAX_REPEATS)?;
    let mut all = Vec::new();
    for &dtype in &args.dtype {
        let t = bench::oracle_vs_numpy(args.rows, args.d, args.repeats, args.seed, dtype)?;
        if !args.json {
            let runs = t
                .verdict_runs
                .iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(", ");
            println!(
                "verdict on {}×{} {} (reference-f64 outputs, {} threads): median {:.3} s over {} runs ({runs})",
                t.rows, t.d, t.dtype, t.threads, t.verdict_seconds, t.repeats
            );
            match (t.numpy_seconds, t.ratio) {
                (Some(n), Some(r)) => println!("numpy float64 LayerNorm of the same data: median {n:.3} s; ratio verdict/numpy = {r:.3}"),
                _ => println!(
                    "numpy: not importable ({} -c 'import numpy' failed; NORMORACLE_PYTHON chooses the interpreter); no ratio",
                    normoracle::npy::python()
                ),
            }
        }
        all.push(t);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&all).expect("json"));
    }
    Ok(Outcome::Pass)
}
