//! `normoracle check`: judges outputs produced by any framework, from .npy files.

use super::common::{shell_quote, NormArgs};
use super::Outcome;
use normoracle::judge::{self, report, ProblemLabel, Report};
use normoracle::npy;
use normoracle::problem::Problem;
use normoracle::problem_io::{self, ProblemFiles};
use normoracle::{Error, Result};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    pub norm: NormArgs,
    /// Inputs, shape (..., d); leading axes are rows.
    #[arg(long)]
    pub x: PathBuf,
    /// The outputs to judge, same shape and dtype as x.
    #[arg(long)]
    pub y: PathBuf,
    /// γ, shape (d,) (default: ones).
    #[arg(long)]
    pub gamma: Option<PathBuf>,
    /// β, shape (d,) (default: zeros).
    #[arg(long)]
    pub beta: Option<PathBuf>,
    /// Judge only this row.
    #[arg(long)]
    pub row: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
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
        args.norm.eps()?,
        args.norm.eps_convention,
    )?;
    let y_array = npy::read(&args.y)?;
    if y_array.shape != shape {
        return Err(Error::input(format!(
            "y has shape {:?} but x has shape {shape:?}",
            y_array.shape
        )));
    }
    let y = npy::bits_of(&y_array, problem.dtype, "y")?;
    let (problem, y) = match args.row {
        None => (problem, y),
        Some(r) if r < problem.rows => {
            let d = problem.d;
            let one = Problem {
                rows: 1,
                x: problem.row(r).to_vec(),
                ..problem.clone()
            };
            (one, y[r * d..(r + 1) * d].to_vec())
        }
        Some(r) => {
            return Err(Error::usage(format!(
                "--row {r} but x has {} rows",
                problem.rows
            )))
        }
    };
    let mut rep = Report::new(
        format!("outputs:{}", args.y.display()),
        problem.op,
        problem.dtype,
        problem.convention,
        None,
    );
    let label = ProblemLabel {
        case: None,
        family: "file".into(),
    };
    judge::judge_problem(&problem, &y, &label, &mut rep)?;
    if let Some(f) = rep.failures.first() {
        let row = args.row.unwrap_or(f.row);
        rep.reproducer = Some(reproducer(&args, row));
    }
    if args.json {
        print!("{}", report::json(&rep));
    } else {
        print!("{}", report::text(&rep));
    }
    Ok(Outcome::from_pass(rep.passed()))
}

fn reproducer(args: &Args, row: usize) -> String {
    let q = |p: &PathBuf| shell_quote(&p.display().to_string());
    let mut cmd = format!(
        "normoracle check --op {} --dtype {} --eps-convention {} ",
        args.norm.op, args.norm.dtype, args.norm.eps_convention
    );
    match &args.norm.eps_bits {
        Some(b) => cmd += &format!("--eps-bits {} ", shell_quote(b)),
        None => cmd += &format!("--eps {} ", shell_quote(&args.norm.eps)),
    }
    cmd += &format!("--x {} --y {}", q(&args.x), q(&args.y));
    if let Some(g) = &args.gamma {
        cmd += &format!(" --gamma {}", q(g));
    }
    if let Some(b) = &args.beta {
        cmd += &format!(" --beta {}", q(b));
    }
    cmd + &format!(" --row {row}")
}
