//! `normoracle zoo`: the accuracy table of every kernel available here.

use super::Outcome;
use normoracle::adapters;
use normoracle::cases::rng;
use normoracle::domain::Domain;
use normoracle::judge::Standard;
use normoracle::output::format::Format;
use normoracle::problem::Op;
use normoracle::zoo::{self, ZooConfig};
use normoracle::{Dtype, Error, Result};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// md, csv, latex or json.
    #[arg(long, default_value = "md", value_parser = |s: &str| s.parse::<Format>())]
    pub format: Format,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Ops (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "layer_norm,rms_norm", value_parser = |s: &str| s.parse::<Op>())]
    pub op: Vec<Op>,
    /// Dtypes (comma-separated; f32, f16, bf16).
    #[arg(long, value_delimiter = ',', default_value = "f32,f16,bf16", value_parser = parse_zoo_dtype)]
    pub dtype: Vec<Dtype>,
    /// Random battery cases per (kernel, op, dtype), after the systematic ones (at most 10⁷).
    #[arg(long, default_value_t = 50, value_parser = super::common::parse_random_cases)]
    pub cases: usize,
    /// Where examples/c and examples/python live.
    #[arg(long)]
    pub examples: Option<PathBuf>,
    /// A shared library behind the C ABI as LABEL=PATH (repeatable), e.g. ggml's norms:
    /// `scripts/ggml_shim.sh` builds target/ggml/libnormoracle_ggml.so and prints the label.
    /// Its (op, dtype) without an entry point read "unsupported".
    #[arg(long = "lib", value_parser = parse_lib)]
    pub libs: Vec<(String, PathBuf)>,
    /// Only the builtin kernels (the machine-independent part).
    #[arg(long)]
    pub builtins_only: bool,
    /// The standard of the verdicts: exact, faithful, ulp:N or bound (default). Given, the
    /// command exits 1 when a kernel misses it on its declared domain.
    #[arg(long, value_parser = |s: &str| s.parse::<Standard>())]
    pub require: Option<Standard>,
    /// The domain of each kernel's second reading (verdict_in_domain).
    #[arg(long, default_value = normoracle::domain::TYPICAL, value_parser = |s: &str| s.parse::<Domain>())]
    pub domain: Domain,
}

pub fn run(args: Args) -> Result<Outcome> {
    let seed = match args.seed {
        Some(s) => s,
        None => rng::seed_from_env()?,
    };
    let examples = args.examples.unwrap_or_else(|| {
        let here = PathBuf::from("examples");
        if here.is_dir() {
            here
        } else {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")
        }
    });
    let python_drivers = if args.builtins_only {
        Vec::new()
    } else {
        zoo::python_drivers(&examples)
    };
    let cfg = ZooConfig {
        seed,
        ops: args.op,
        dtypes: args.dtype,
        random_cases: args.cases,
        builtins: adapters::builtin_names()
            .into_iter()
            .map(String::from)
            .collect(),
        c_example: (!args.builtins_only)
            .then(|| examples.join("c").join("normoracle_example.c"))
            .filter(|p| p.exists()),
        c_libs: if args.builtins_only {
            Vec::new()
        } else {
            args.libs
        },
        python_drivers,
        progress: true,
        standard: args.require.unwrap_or_default(),
        domain: args.domain,
    };
    eprintln!("normoracle zoo: seed {seed}");
    let rows = zoo::run(&cfg)?;
    print!("{}", zoo::table(&rows, &cfg).render(args.format));
    // A table by default; held to a standard, a kernel that misses it on its domain fails.
    let missed = rows
        .iter()
        .any(|r| r.verdict_in_domain == zoo::ZooVerdict::Fail);
    Ok(Outcome::from_pass(args.require.is_none() || !missed))
}

/// `LABEL=PATH` (the row's label, the library); a bare PATH is labelled by its file name.
fn parse_lib(s: &str) -> Result<(String, PathBuf)> {
    let (label, path) = match s.rsplit_once('=') {
        Some((label, path)) if !label.is_empty() => (label.to_string(), PathBuf::from(path)),
        _ => {
            let path = PathBuf::from(s);
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            (name.unwrap_or_else(|| s.to_string()), path)
        }
    };
    if path.is_file() {
        Ok((label, path))
    } else {
        Err(Error::usage(format!("--lib: no file {}", path.display())))
    }
}

/// A dtype the zoo's kernels take (f64 is not in the C ABI).
fn parse_zoo_dtype(s: &str) -> Result<Dtype> {
    let dtype: Dtype = s.parse()?;
    if zoo::ZOO_DTYPES.contains(&dtype) {
        Ok(dtype)
    } else {
        Err(Error::usage(format!(
            "the zoo covers f32, f16 and bf16, not {dtype}"
        )))
    }
}
