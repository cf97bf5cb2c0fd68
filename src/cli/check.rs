//! `normoracle check`: judges outputs produced by any framework, from .npy files.

use super::common::{shell_quote, verdict_flags, EpsArgs};
use super::Outcome;
use normoracle::domain::Domain;
use normoracle::judge::{self, report, Report, Standard};
use normoracle::manifest::{DirSelection, MissingOutput};
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
    /// Every case must have its outputs: any missing fail the check (exit 1, the missing
    /// cases named); none at all is a usage error (exit 2: run your driver first).
    pub dir: Option<PathBuf>,
    /// layer_norm or rms_norm (with --x; with DIR, judge only this op).
    #[arg(long, value_parser = |s: &str| s.parse::<Op>())]
    pub op: Option<Op>,
    /// f16, bf16, f32 or f64 (with --x; with DIR, judge only this dtype).
    #[arg(long, value_parser = |s: &str| s.parse::<Dtype>())]
    pub dtype: Option<Dtype>,
    /// With DIR: judge only the case of this id (of each op and dtype judged).
    #[arg(long, requires = "dir")]
    pub case: Option<usize>,
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
    /// The standard to meet: exact, faithful, ulp:N or bound (the model's B_i).
    #[arg(long, default_value = "bound", value_parser = |s: &str| s.parse::<Standard>())]
    pub require: Standard,
    /// The kernel's declared domain, e.g. eps=1e-6..,absx=..1e4,finite: the verdict is
    /// decided on the rows inside; the rest is reported apart. With DIR, the default is the
    /// domain its manifest records (`cases --domain`), else every row.
    #[arg(long, value_parser = |s: &str| s.parse::<Domain>())]
    pub domain: Option<Domain>,
}

pub fn run(args: Args) -> Result<Outcome> {
    if let Some(dir) = &args.dir {
        return check_dir(dir, &args);
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
    let mut rep = Report::new(
        format!("outputs:{}", y_path.display()),
        problem.op,
        problem.dtype,
        problem.convention,
        None,
    )
    .within(args.domain.unwrap_or_default());
    let label = judge::ProblemLabel {
        case: None,
        family: "file".into(),
    };
    judge::judge_problem(&problem, &y, &label, &mut rep)?;
    rep.require(args.require);
    if let Some(f) = rep.failures.first() {
        let row = args.row.unwrap_or(f.row);
        rep.reproducer = Some(reproducer(&args, op, dtype, x_path, y_path, row));
    }
    if args.json {
        print!("{}", report::json(&rep));
    } else {
        print!("{}", report::text(&rep));
    }
    Ok(Outcome::from_pass(rep.meets_standard()))
}

/// Judges every case of a `normoracle cases` directory. Every case must have outputs: one
/// the driver did not write fails the check (exit 1), since a driver that skips cases would
/// otherwise pass on the few it wrote; a directory with no outputs at all is a usage error
/// (exit 2: the driver has not run).
fn check_dir(dir: &std::path::Path, args: &Args) -> Result<Outcome> {
    let json = args.json;
    let selection = DirSelection {
        op: args.op,
        dtype: args.dtype,
        case: args.case,
        domain: args.domain,
    };
    let verdicts = normoracle::manifest::judge_dir_selected(
        dir,
        &format!("outputs:{}", dir.display()),
        &selection,
    )?;
    let missing = &verdicts.missing;
    let mut reports = verdicts.reports.clone();
    for r in &mut reports {
        r.require(args.require);
        if let Some(case) = r.first_failing_case() {
            r.reproducer = Some(dir_reproducer(dir, r, case, args));
        }
    }
    let reports = &reports;
    if reports.is_empty() && args.case.is_some() {
        return Err(Error::usage(format!(
            "{}: no case {} with outputs{}",
            dir.display(),
            args.case.unwrap_or_default(),
            selection.describe()
        )));
    }
    if reports.is_empty() {
        return Err(Error::usage(format!(
            "{}: no outputs found ({} cases, no 'y' file); run your driver first",
            dir.display(),
            missing.len()
        )));
    }
    let passed = missing.is_empty() && reports.iter().all(Report::meets_standard);
    if json {
        let all: Vec<serde_json::Value> = reports.iter().map(report::json_value).collect();
        let missing_cases: Vec<serde_json::Value> = missing
            .iter()
            .map(|m| {
                serde_json::json!({"op": m.op.name(), "dtype": m.dtype.name(), "case": m.id, "y": m.y})
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "passed": passed,
                "reports": all,
                "missing_outputs": missing.len(),
                "missing_cases": missing_cases,
            })
        );
    } else {
        for r in reports {
            print!("{}", report::text(r));
        }
        if !missing.is_empty() {
            print!("{}", missing_text(missing, reports));
        }
    }
    Ok(Outcome::from_pass(passed))
}

/// The cases without outputs, per (op, dtype), as a FAIL block.
fn missing_text(missing: &[MissingOutput], reports: &[Report]) -> String {
    let judged: usize = reports.iter().map(|r| r.cases).sum();
    let mut out = format!(
        "FAIL: {} of {} cases have no outputs (the driver did not write them):\n",
        missing.len(),
        missing.len() + judged
    );
    let mut rest = missing;
    while let Some(first) = rest.first() {
        let same = rest
            .iter()
            .take_while(|m| m.op == first.op && m.dtype == first.dtype)
            .count();
        let (group, tail) = rest.split_at(same);
        let ids: Vec<usize> = group.iter().map(|m| m.id).collect();
        out += &format!(
            "  {} {}: {} cases, ids {} (e.g. {})\n",
            first.op,
            first.dtype,
            group.len(),
            report::id_ranges(&ids),
            first.y
        );
        rest = tail;
    }
    out
}

/// `normoracle check DIR --op O --dtype T --case ID`, with the standard and domain given.
fn dir_reproducer(dir: &std::path::Path, r: &Report, case: usize, args: &Args) -> String {
    let mut cmd = format!(
        "normoracle check {} --op {} --dtype {} --case {case}",
        shell_quote(&dir.display().to_string()),
        r.op,
        r.dtype
    );
    cmd += &verdict_flags(args.domain.as_ref(), args.require);
    cmd
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
    cmd += &verdict_flags(args.domain.as_ref(), args.require);
    cmd + &format!(" --row {row}")
}
