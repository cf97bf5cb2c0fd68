//! `normoracle reference`: golden outputs, correctly rounded, for anyone's test suite.

use super::common::NormArgs;
use super::Outcome;
use normoracle::exact;
use normoracle::npy;
use normoracle::problem_io::{self, ProblemFiles};
use normoracle::Result;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub norm: NormArgs,
    /// Inputs, shape (..., d); leading axes are rows.
    #[arg(long)]
    pub x: PathBuf,
    /// γ, shape (d,) (default: ones).
    #[arg(long)]
    pub gamma: Option<PathBuf>,
    /// β, shape (d,) (default: zeros).
    #[arg(long)]
    pub beta: Option<PathBuf>,
    /// Where to write y (same dtype and shape as x).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: Args) -> Result<Outcome> {
    let files = ProblemFiles {
        x: &args.x,
        gamma: args.gamma.as_deref(),
        beta: args.beta.as_deref(),
    };
    let (problem, shape) = problem_io::load(
        &files,
        args.norm.op,
        args.norm.dtype,
        args.norm.eps.eps()?,
        args.norm.eps.eps_convention,
    )?;
    let out = exact::reference(&problem)?;
    npy::write(&args.out, &npy::from_bits(shape, problem.dtype, &out.y)?)?;
    let undefined = out.undefined_rows();
    eprintln!(
        "normoracle reference: {} rows × d {} {} {}, ε = {} ({}): correctly rounded outputs written to {}",
        problem.rows,
        problem.d,
        problem.op,
        problem.dtype,
        problem.eps.describe(),
        problem.convention,
        args.out.display()
    );
    if !undefined.is_empty() {
        let shown: Vec<String> = undefined.iter().take(20).map(|r| r.to_string()).collect();
        eprintln!(
            "normoracle reference: {} undefined rows (σ²+ε = 0; written as NaN): {}{}",
            undefined.len(),
            shown.join(", "),
            if undefined.len() > 20 { ", …" } else { "" }
        );
    }
    Ok(Outcome::Pass)
}
