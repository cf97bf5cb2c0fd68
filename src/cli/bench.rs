//! `normoracle bench`: throughput of the native kernels against a memcpy of the same bytes,
//! the floor (what every kernel must do, and no more) and candle-nn with the `candle`
//! feature, measured in the same run.

use super::common::{at_most, generated_values, MAX_REPEATS, MAX_THREADS};
use super::Outcome;
use normoracle::bench::{self, Config, Record};
use normoracle::dtype::Dtype;
use normoracle::output::format::{Format, Table};
use normoracle::problem::Op;
use normoracle::{Error, Result};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// One JSON record per case (kernel, op, dtype, rows, d, seconds, gbps, vs_memcpy,
    /// vs_floor, vs_candle, candle_dtype, threads, cpu), as a JSON array, instead of a table.
    #[arg(long)]
    json: bool,
    /// Table format: md, csv or latex.
    #[arg(long, default_value = "md")]
    format: String,
    /// Threads of the pool everything runs on, at most 1024 (default: RAYON_NUM_THREADS or
    /// all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Comma-separated ROWSxD sizes (each ROWS × D at most 2^28).
    #[arg(long, default_value = "4096x4096,16384x1024,64x65536,1x4096")]
    sizes: String,
    /// Comma-separated ops.
    #[arg(long, default_value = "layer_norm,rms_norm")]
    ops: String,
    /// Comma-separated dtypes (f32, f16, bf16).
    #[arg(long, default_value = "f32,f16,bf16")]
    dtypes: String,
    /// Samples per case, at most 1000 (the median is reported).
    #[arg(long, default_value_t = 9)]
    samples: usize,
    /// Minimum milliseconds per sample (short calls are repeated).
    #[arg(long, default_value_t = 20)]
    min_sample_ms: u64,
    /// Instruction set of the native kernels: scalar, avx2, avx512, avx512bf16, neon
    /// (default: fastest).
    #[arg(long)]
    isa: Option<String>,
    /// Non-temporal stores for y: auto (outputs of 24 MiB or more: f32 on every CPU, f16 and
    /// bf16 on Intel's; none on Intel's Skylake server cores, model 85), on, off.
    #[arg(long, default_value = "auto")]
    stream: String,
    /// Leave candle-nn out even when it is compiled in.
    #[arg(long)]
    no_candle: bool,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn list<T: std::str::FromStr<Err = Error>>(text: &str) -> Result<Vec<T>> {
    text.split(',').map(|s| s.trim().parse()).collect()
}

pub fn run(args: Args) -> Result<Outcome> {
    at_most("--samples", args.samples, MAX_REPEATS)?;
    if let Some(threads) = args.threads {
        at_most("--threads", threads, MAX_THREADS)?;
    }
    let sizes = bench::parse_sizes(&args.sizes)?;
    for &(rows, d) in &sizes {
        generated_values("ROWS × D of --sizes", rows, d)?;
    }
    let config = Config {
        sizes,
        ops: list::<Op>(&args.ops)?,
        dtypes: list::<Dtype>(&args.dtypes)?,
        samples: args.samples,
        min_sample: Duration::from_millis(args.min_sample_ms),
        isa: args.isa.as_deref().map(str::parse).transpose()?,
        stream: match args.stream.as_str() {
            "auto" => None,
            "on" => Some(true),
            "off" => Some(false),
            other => {
                return Err(Error::usage(format!(
                    "--stream takes auto, on or off, not '{other}'"
                )))
            }
        },
        candle: cfg!(feature = "candle") && !args.no_candle,
        seed: args.seed,
    };
    let format: Format = args.format.parse()?;
    if let Some(isa) = config.isa {
        if !isa.is_available() {
            return Err(Error::usage(format!(
                "instruction set {isa} is not available here"
            )));
        }
    }
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(n) = args.threads {
        if n == 0 {
            return Err(Error::usage("--threads must be at least 1"));
        }
        pool = pool.num_threads(n);
    }
    let pool = pool
        .build()
        .map_err(|e| Error::usage(format!("cannot build a thread pool: {e}")))?;
    let cases = config.sizes.len()
        * config.dtypes.len()
        * (2 + config.ops.len() * (1 + config.candle as usize));
    let bar = normoracle::output::progress::bar(cases as u64, "cases", true);
    let records = pool.install(|| {
        bench::run(&config, |r| {
            bar.set_message(format!(
                "{} {} {} {}x{}",
                r.kernel, r.op, r.dtype, r.rows, r.d
            ));
            bar.inc(1);
        })
    })?;
    bar.finish_and_clear();
    if args.json {
        let lines: Vec<String> = records
            .iter()
            .map(|r| serde_json::to_string(r).expect("records serialize"))
            .collect();
        println!("[\n{}\n]", lines.join(",\n"));
    } else {
        print!("{}", table(&records, &config).render(format));
    }
    Ok(Outcome::Pass)
}

fn table(records: &[Record], config: &Config) -> Table {
    let mut t = Table::new([
        "kernel", "op", "dtype", "rows×d", "median", "GB/s", "×memcpy", "×floor", "×candle",
    ]);
    let (threads, cpu) = records.first().map_or((0, ""), |r| (r.threads, r.cpu));
    t.comment(format!(
        "normoracle bench: {threads} threads, {} samples (median), seed {}; GB/s counts x read + y written; ×memcpy, ×floor and ×candle: medians of ratios to samples taken in alternation; the floor does only what every kernel must (one pass reducing x, one writing y; the faster of cached and streamed stores), so no kernel's ×memcpy can much exceed its; CPU: {cpu}",
        config.samples, config.seed
    ));
    for r in records {
        let vs_candle = match (r.vs_candle, &r.candle_dtype) {
            (Some(v), Some(dtype)) if *dtype == r.dtype => format!("{v:.1}"),
            (Some(v), Some(dtype)) => format!("{v:.1} (vs {dtype})"),
            _ => String::new(),
        };
        t.push([
            r.kernel.clone(),
            r.op.clone(),
            r.dtype.clone(),
            format!("{}×{}", r.rows, r.d),
            human_seconds(r.seconds),
            format!("{:.2}", r.gbps),
            format!("{:.2}", r.vs_memcpy),
            r.vs_floor.map_or_else(String::new, |v| format!("{v:.2}")),
            vs_candle,
        ]);
    }
    t
}

fn human_seconds(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} µs", s * 1e6)
    }
}
