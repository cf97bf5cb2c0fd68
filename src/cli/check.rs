//! `normoracle check`: judges outputs produced by any framework, from .npy files.

use super::common::{shell_quote, EpsArgs};
use super::Outcome;
use normoracle::judge::{self, report, Report};
use normoracle::npy;
use normoracle::problem::Op;
use normoracle::problem::Problem;
use normoracle::problem_io::{self, ProblemFiles};
use normoracle::Dtype;
use normoracle::{Error, Result};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["dir", "x"])))]
pub struct Args {
    /// A directory written by `normoracle cases`, with the driver's outputs beside the inputs.
    pub dir: Option<PathBuf>,
    /// layer_norm or rms_norm (with --x).
    #[arg(long, requires = "x", value_parser = |s: &str| s.parse::<Op>())]
    pub op: Option<Op>,
    /// f16, bf16, f32 or f64 (with --x).
    #[arg(long, requires = "x", value_parser = |s: &str| s.parse::<Dtype>())]
    pub dtype: Option<Dtype>,
    #[command(flatten)]
    pub eps: EpsArgs,
    /// Inputs, shape (..., d); leading axes are rows.
    #[arg(long, requires_all = ["y", "op", "dtype"])]
    pub x: Option<PathBuf>,
    /// The outputs to judge, same shape and dtype as x.
    #[arg(long, requires = "x")]
    pub y: Option<PathBuf>,
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
    if let Some(dir) = &args.dir {
        return check_dir(dir, args.json);
    }
    let (Some(x_path), Some(y_path), Some(op), Some(dtype)) =
        (&args.x, &args.y, args.op, args.dtype)
    else {
        return Err(Error::usage(
            "give a cases directory, or --op, --dtype, --x and --y",
        ));
    };
    let files = ProblemFiles {
        x: x_path,
        gamma: args.gamma.as_deref(),
        beta: args.beta.as_deref(),
    };
    let (problem, shape) =
        problem_io::load(&files, op, dtype, args.eps.eps()?, args.eps.eps_convention)?;
    let y_array = npy::read(y_path)?;
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
    let mut rep = judge::judge_single(
        &problem,
        &y,
        format!("outputs:{}", y_path.display()),
        "file",
    )?;
    if let Some(f) = rep.failures.first() {
        let row = args.row.unwrap_or(f.row);
        rep.reproducer = Some(reproducer(&args, op, dtype, x_path, y_path, row));
    }
    if args.json {
        print!("{}", report::json(&rep));
    } else {
        print!("{}", report::text(&rep));
    }
    Ok(Outcome::from_pass(rep.passed()))
}

/// Judges every case of a `normoracle cases` directory that has outputs.
fn check_dir(dir: &std::path::Path, json: bool) -> Result<Outcome> {
    let verdicts = normoracle::manifest::judge_dir(dir, &format!("outputs:{}", dir.display()))?;
    let missing = verdicts.missing_total();
    let reports = verdicts.reports;
    if reports.is_empty() {
        return Err(Error::input(format!(
            "{}: no case has outputs yet ({missing} missing)",
            dir.display()
        )));
    }
    if json {
        let all: Vec<serde_json::Value> = reports
            .iter()
            .map(|r| serde_json::from_str(&report::json(r)).expect("json"))
            .collect();
        println!(
            "{}",
            serde_json::json!({"reports": all, "missing_outputs": missing})
        );
    } else {
        for r in &reports {
            print!("{}", report::text(r));
        }
        if missing > 0 {
            println!("{missing} cases have no outputs yet (not judged)");
        }
    }
    Ok(Outcome::from_pass(reports.iter().all(Report::passed)))
}

fn reproducer(args: &Args, op: Op, dtype: Dtype, x: &PathBuf, y: &PathBuf, row: usize) -> String {
    let q = |p: &PathBuf| shell_quote(&p.display().to_string());
    let mut cmd = format!(
        "normoracle check --op {} --dtype {} --eps-convention {} ",
        op, dtype, args.eps.eps_convention
    );
    match &args.eps.eps_bits {
        Some(b) => cmd += &format!("--eps-bits {} ", shell_quote(b)),
        None => cmd += &format!("--eps {} ", shell_quote(&args.eps.eps)),
    }
    cmd += &format!("--x {} --y {}", q(x), q(y));
    if let Some(g) = &args.gamma {
        cmd += &format!(" --gamma {}", q(g));
    }
    if let Some(b) = &args.beta {
        cmd += &format!(" --beta {}", q(b));
    }
    cmd + &format!(" --row {row}")
}
