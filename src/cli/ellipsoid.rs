//! `normoracle ellipsoid`: the LayerNorm output hyperellipsoid (Riechers 2024) — normal,
//! principal axes, certified semi-axes; its surface concentration; the exact worked examples;
//! the N = 4096 benchmark. `normoracle ellipsoid --gain g.npy` is `ellipsoid axes --gain g.npy`.

use super::common::{at_most, generated_values, MAX_REPEATS, MAX_THREADS};
use super::Outcome;
use clap::Subcommand;
use normoracle::output::format::Format;
use normoracle::output::progress;
use normoracle::{npy, Error, Result};
use normoracle_geometry::ellipsoid::{
    self, bench, concentration, decompose::Threads, example, to_json, verify::Method,
    EllipsoidInput, Options, Solver,
};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Sub>,
    #[command(flatten)]
    pub axes: AxesArgs,
}

#[derive(Subcommand, Debug)]
pub enum Sub {
    /// Normal, principal axes and certified semi-axes of the output ellipsoid (the default).
    Axes(AxesArgs),
    /// How close to the surface outputs land for eps > 0 (Riechers' Figure 2): samples against
    /// the exact chi-square law, as a table and an SVG figure. Exit 1 if a KS test rejects.
    Concentration(ConcentrationArgs),
    /// The exact worked examples (N = 4 with a rational spectrum; N = 3 with a zero gain).
    Example(FormatArgs),
    /// The certified ellipsoid of N = 4096 gains timed against numpy.linalg.eigvalsh of the
    /// same matrix, in the same run (and the bare decompositions against eigh).
    Bench(BenchArgs),
}

#[derive(clap::Args, Debug)]
pub struct AxesArgs {
    /// Gains g (.npy, 1-D or one row; f16/bf16/f32/f64).
    #[arg(long, value_name = "G.npy")]
    pub gain: Option<PathBuf>,
    /// Bias b (.npy, same length as g); zero when absent.
    #[arg(long, value_name = "B.npy")]
    pub bias: Option<PathBuf>,
    /// LayerNorm's eps (inside the square root). The ellipsoid does not depend on it; for
    /// eps > 0 the outputs lie strictly inside, and the law of how close is reported.
    #[arg(long, default_value_t = 1e-5)]
    pub eps: f64,
    /// Print the whole result as one JSON object ("normal", "axes", "semi_axes", ...).
    #[arg(long)]
    pub json: bool,
    /// Format of the semi-axes table: md, csv, latex, json.
    #[arg(long, default_value = "md")]
    pub format: String,
    /// Threads (0: all cores; at most 1024). With the secular solver every output is the same
    /// for every thread count; the dense solver's last bits may depend on it.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Eigensolver: secular (O(N^2), structured, portable) or dense (nalgebra/faer on both
    /// matrices). Either way every eigenpair is then certified.
    #[arg(long, default_value = "secular")]
    pub solver: String,
    /// Certification: auto (structure for the secular solver, residual for dense), structure
    /// (secular-equation brackets and the explicit eigenvectors, O(N^2)) or residual (MPFR
    /// residuals and an orthonormality bound, O(N^3)).
    #[arg(long, default_value = "auto")]
    pub certify: String,
}

#[derive(clap::Args, Debug)]
pub struct ConcentrationArgs {
    /// Dimension N of the inputs (Riechers' figure: 3; N × --samples at most 2^28).
    #[arg(long, default_value_t = 3)]
    pub n: usize,
    /// Samples per eps.
    #[arg(long, default_value_t = 20_000)]
    pub samples: usize,
    /// Seed of the portable generator.
    #[arg(long, default_value_t = 2024)]
    pub seed: u64,
    /// Comma-separated eps values.
    #[arg(long, value_delimiter = ',', default_values_t = concentration::FIGURE_EPS.to_vec())]
    pub eps: Vec<f64>,
    /// Gains (.npy, length N, no zero); default: seeded gains in [0.5, 1.5].
    #[arg(long, value_name = "G.npy")]
    pub gain: Option<PathBuf>,
    /// Write the figure here.
    #[arg(long, value_name = "FIG.svg")]
    pub svg: Option<PathBuf>,
    /// Table format: md, csv, latex, json.
    #[arg(long, default_value = "md")]
    pub format: String,
}

#[derive(clap::Args, Debug)]
pub struct FormatArgs {
    /// Table format: md, csv, latex, json.
    #[arg(long, default_value = "md")]
    pub format: String,
}

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Matrix order (4096: the hidden size of a 7B model; N × N at most 2^28).
    #[arg(long, default_value_t = 4096)]
    pub n: usize,
    /// Timed runs of each solver, at most 1000 (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Threads for our solver (0: all cores, as numpy's BLAS uses by default; at most 1024).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Do not time numpy.
    #[arg(long)]
    pub no_numpy: bool,
    /// Also time the bare decompositions (dense faer, secular) against numpy.linalg.eigh.
    #[arg(long)]
    pub decompositions: bool,
    /// Solver of the certified ellipsoid: secular or dense.
    #[arg(long, default_value = "secular")]
    pub solver: String,
    /// Its certification: auto, structure or residual.
    #[arg(long, default_value = "auto")]
    pub certify: String,
    /// Table format: md, csv, latex, json.
    #[arg(long, default_value = "md")]
    pub format: String,
}

pub fn run(args: Args) -> Result<Outcome> {
    match args.command {
        None => axes(args.axes),
        Some(Sub::Axes(a)) => axes(a),
        Some(Sub::Concentration(a)) => concentration_cmd(a),
        Some(Sub::Example(a)) => example_cmd(a),
        Some(Sub::Bench(a)) => bench_cmd(a),
    }
}

/// `--certify`: `None` for auto.
fn certify_method(s: &str) -> Result<Option<Method>> {
    match s {
        "auto" => Ok(None),
        "structure" => Ok(Some(Method::Structure)),
        "residual" => Ok(Some(Method::Residual)),
        other => Err(Error::usage(format!(
            "unknown --certify '{other}' (auto, structure, residual)"
        ))),
    }
}

fn threads(t: usize) -> Threads {
    if t == 1 {
        Threads::One
    } else {
        Threads::Pool(t)
    }
}

/// A 1-D vector from a .npy file (one row).
fn read_vector(path: &Path, what: &str) -> Result<Vec<f64>> {
    let a = npy::read(path)?;
    let (rows, _) = a.rows_and_width()?;
    if rows != 1 {
        return Err(Error::input(format!(
            "{what} {}: expected one vector, got shape {:?}",
            path.display(),
            a.shape
        )));
    }
    Ok(a.to_f64())
}

fn axes(a: AxesArgs) -> Result<Outcome> {
    at_most("--threads", a.threads, MAX_THREADS)?;
    let format: Format = a.format.parse()?;
    let solver: Solver = a.solver.parse()?;
    let method = certify_method(&a.certify)?;
    let gain_path = a
        .gain
        .ok_or_else(|| Error::usage("ellipsoid: --gain G.npy is required"))?;
    let gain = read_vector(&gain_path, "gain")?;
    let bias = a
        .bias
        .as_deref()
        .map(|p| read_vector(p, "bias"))
        .transpose()?;
    let input = EllipsoidInput::new(gain, bias, a.eps)?;
    let n = input.n();
    let pb = progress::bar(2 * n as u64, "eigenpairs verified", n >= 256);
    let tick = || pb.inc(1);
    let e = ellipsoid::analyze(
        &input,
        Options {
            threads: threads(a.threads),
            solver,
            method,
            tick: &tick,
        },
    )?;
    pb.finish_and_clear();
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&e)).expect("json")
        );
    } else {
        print!("{}", ellipsoid::report::text(&e, format));
    }
    Ok(Outcome::from_pass(e.verified()))
}

fn concentration_cmd(a: ConcentrationArgs) -> Result<Outcome> {
    generated_values("--n × --samples", a.n, a.samples)?;
    generated_values("--samples × the number of --eps", a.samples, a.eps.len())?;
    let format: Format = a.format.parse()?;
    let gain = a
        .gain
        .as_deref()
        .map(|p| read_vector(p, "gain"))
        .transpose()?;
    let params = concentration::ConcentrationParams {
        n: a.n,
        samples: a.samples,
        seed: a.seed,
        eps: a.eps,
        gain,
    };
    let total = (params.samples * params.eps.len()) as u64;
    let pb = progress::bar(total, "samples", total >= 200_000);
    let c = concentration::run(&params, &|| pb.inc(1))?;
    pb.finish_and_clear();
    print!("{}", concentration::table(&c).render(format));
    if let Some(path) = &a.svg {
        std::fs::write(path, concentration::svg(&c)?)
            .map_err(|e| Error::io(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(Outcome::from_pass(c.pass()))
}

fn example_cmd(a: FormatArgs) -> Result<Outcome> {
    let format: Format = a.format.parse()?;
    let mut pass = true;
    for ex in [example::riechers_example()?, example::zero_gain_example()?] {
        print!("{}", ex.table.render(format));
        println!();
        pass &= ex.all_checks_pass;
    }
    Ok(Outcome::from_pass(pass))
}

fn bench_cmd(a: BenchArgs) -> Result<Outcome> {
    generated_values("--n × --n", a.n, a.n)?;
    at_most("--repeats", a.repeats, MAX_REPEATS)?;
    at_most("--threads", a.threads, MAX_THREADS)?;
    let format: Format = a.format.parse()?;
    let params = bench::BenchParams {
        n: a.n,
        repeats: a.repeats,
        seed: a.seed,
        threads: threads(a.threads),
        numpy: !a.no_numpy,
        solver: a.solver.parse()?,
        method: certify_method(&a.certify)?,
        decompositions: a.decompositions,
    };
    let pb = progress::bar(
        (2 * a.n * a.repeats) as u64,
        "certified ellipsoid eigenpairs verified",
        a.n >= 256,
    );
    let log = |s: &str| {
        if pb.is_hidden() {
            eprintln!("{s}");
        } else {
            pb.println(s);
        }
    };
    let r = bench::run(&params, &log, &|| pb.inc(1))?;
    pb.finish_and_clear();
    print!("{}", bench::table(&r).render(format));
    Ok(Outcome::from_pass(r.pipeline.verified))
}
