//! `normoracle bench`: the native kernels, a memcpy of the same bytes and (with the `candle`
//! feature) candle-nn's kernels, timed in one run on one thread pool. Medians of several
//! samples; every speed is also given as a ratio to a memcpy of the same bytes timed in
//! alternation with it ([`time_against`]).

use super::{normalize, Element, Isa, Layout, Options, Params};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::problem::Op;
use half::{bf16, f16};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;
use std::time::{Duration, Instant};

/// What to measure.
#[derive(Debug, Clone)]
pub struct Config {
    /// (rows, d) pairs.
    pub sizes: Vec<(usize, usize)>,
    pub ops: Vec<Op>,
    pub dtypes: Vec<Dtype>,
    /// Samples per case; the median is reported.
    pub samples: usize,
    /// Each sample repeats the operation until it has run at least this long.
    pub min_sample: Duration,
    /// Instruction set of the native kernels (fastest available when `None`).
    pub isa: Option<Isa>,
    /// Non-temporal stores for y (`None`: the kernels' default, f32 outputs by size).
    pub stream: Option<bool>,
    /// Include candle-nn (needs the `candle` feature).
    pub candle: bool,
    /// Seed of the input data.
    pub seed: u64,
}

impl Config {
    /// The sizes: 4096×4096, 16384×1024, 64×65536, 1×4096.
    pub const DEFAULT_SIZES: [(usize, usize); 4] =
        [(4096, 4096), (16384, 1024), (64, 65536), (1, 4096)];
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sizes: Self::DEFAULT_SIZES.to_vec(),
            ops: Op::ALL.to_vec(),
            dtypes: vec![Dtype::F32, Dtype::F16, Dtype::BF16],
            samples: 9,
            min_sample: Duration::from_millis(20),
            isa: None,
            stream: None,
            candle: cfg!(feature = "candle"),
            seed: 1,
        }
    }
}

/// One measured case.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// `memcpy`, `native[avx512]`, `candle-nn`, ...
    pub kernel: String,
    /// `copy`, `layer_norm` or `rms_norm`.
    pub op: String,
    pub dtype: String,
    pub rows: usize,
    pub d: usize,
    /// Median seconds per call.
    pub seconds: f64,
    /// Bytes of x read plus bytes of y written, per second, in 10^9.
    pub gbps: f64,
    /// Speed relative to a memcpy of the same bytes: the median over samples of memcpy
    /// seconds / seconds, each sample taken right after one of the memcpy (see
    /// [`time_against`]); 1 for the memcpy itself.
    pub vs_memcpy: f64,
    pub threads: usize,
    /// The CPU that measured it ([`crate::kernels::cpu::describe`]).
    pub cpu: &'static str,
}

/// Parses "4096x4096,1x4096".
pub fn parse_sizes(text: &str) -> Result<Vec<(usize, usize)>> {
    text.split(',')
        .map(|item| {
            let bad = || Error::usage(format!("cannot read size '{item}' as ROWSxD"));
            let (r, d) = item.trim().split_once(['x', 'X']).ok_or_else(bad)?;
            let rows: usize = r.trim().parse().map_err(|_| bad())?;
            let d: usize = d.trim().parse().map_err(|_| bad())?;
            if rows == 0 || d == 0 {
                return Err(Error::usage(format!("size '{item}' has a zero dimension")));
            }
            Ok((rows, d))
        })
        .collect()
}

/// Median seconds per call of `f`: `samples` samples, each repeating `f` until it has run
/// `min_sample` (after one warm-up call).
pub fn time_median(samples: usize, min_sample: Duration, mut f: impl FnMut()) -> f64 {
    let reps = reps_for(min_sample, &mut f);
    median(
        (0..samples.max(1))
            .map(|_| per_call(reps, &mut f))
            .collect(),
    )
}

/// `f` timed against `base` in alternation: each sample of `f` right after one of `base`
/// (each as in [`time_median`]). Returns the median seconds per call of `f` and the
/// median over samples of base's time over f's. Each ratio compares two samples taken
/// moments apart, so it follows the machine's load as it changes: here a memcpy's own
/// median moved by up to 3× from run to run, and a ratio of two medians taken seconds
/// apart moved with it.
pub fn time_against(
    samples: usize,
    min_sample: Duration,
    mut base: impl FnMut(),
    mut f: impl FnMut(),
) -> (f64, f64) {
    let (base_reps, reps) = (
        reps_for(min_sample, &mut base),
        reps_for(min_sample, &mut f),
    );
    let (seconds, ratios) = (0..samples.max(1))
        .map(|_| {
            let b = per_call(base_reps, &mut base);
            let t = per_call(reps, &mut f);
            (t, b / t)
        })
        .unzip();
    (median(seconds), median(ratios))
}

/// Calls per sample so that a sample lasts at least `min_sample`, from one timed call after
/// a warm-up call.
fn reps_for(min_sample: Duration, f: &mut impl FnMut()) -> usize {
    f();
    let start = Instant::now();
    f();
    let once = start.elapsed().max(Duration::from_nanos(50));
    (min_sample.as_secs_f64() / once.as_secs_f64())
        .ceil()
        .max(1.0) as usize
}

/// Seconds per call of `f` over `reps` calls.
fn per_call(reps: usize, f: &mut impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..reps {
        f();
    }
    start.elapsed().as_secs_f64() / reps as f64
}

/// The median (the upper one of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Copies src into dst on the current pool, in the same task sizes as the kernels.
fn parallel_copy<T: Copy + Send + Sync>(src: &[T], dst: &mut [T]) {
    const CHUNK: usize = super::VALUES_PER_TASK;
    if src.len() <= CHUNK {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(CHUNK)
            .zip(src.par_chunks(CHUNK))
            .for_each(|(d, s)| d.copy_from_slice(s));
    }
}

/// Random inputs: x roughly N(0, 1) plus an offset, γ near 1, β near 0, all rounded to
/// the format.
fn random_values<T: Element>(n: usize, center: f64, spread: f64, seed: u64) -> Vec<T> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let u = |r: &mut rand_chacha::ChaCha8Rng| (r.next_u64() >> 11) as f64 * 2f64.powi(-53);
            let s = u(&mut rng) + u(&mut rng) + u(&mut rng) - 1.5;
            T::from_bits(T::DTYPE.round_f64(center + 2.0 * spread * s))
        })
        .collect()
}

/// Runs every case of `config` on the current rayon pool; `progress` is told each record.
pub fn run(config: &Config, mut progress: impl FnMut(&Record)) -> Result<Vec<Record>> {
    if config.candle && !cfg!(feature = "candle") {
        return Err(Error::usage(
            "candle-nn is not compiled in: build with --features candle",
        ));
    }
    let mut out = Vec::new();
    for &(rows, d) in &config.sizes {
        for &dtype in &config.dtypes {
            let mut emit = |r: Record| {
                progress(&r);
                out.push(r);
            };
            match dtype {
                Dtype::F32 => run_case::<f32>(config, rows, d, &mut emit)?,
                Dtype::F16 => run_case::<f16>(config, rows, d, &mut emit)?,
                Dtype::BF16 => run_case::<bf16>(config, rows, d, &mut emit)?,
                Dtype::F64 => return Err(Error::usage("the native kernels have no f64")),
            }
        }
    }
    Ok(out)
}

fn run_case<T: Element>(
    config: &Config,
    rows: usize,
    d: usize,
    emit: &mut impl FnMut(Record),
) -> Result<()> {
    let n = rows
        .checked_mul(d)
        .ok_or_else(|| Error::usage("size overflows"))?;
    let x: Vec<T> = random_values(n, 0.5, 1.0, config.seed);
    let gamma: Vec<T> = random_values(d, 1.0, 0.1, config.seed + 1);
    let beta: Vec<T> = random_values(d, 0.0, 0.1, config.seed + 2);
    let mut y = vec![T::default(); n];
    let bytes = 2.0 * n as f64 * (T::DTYPE.bits() / 8) as f64;
    let threads = rayon::current_num_threads();
    let dtype = T::DTYPE.name().to_string();
    let record = |kernel: String, op: &str, seconds: f64, vs_memcpy: f64| Record {
        kernel,
        op: op.to_string(),
        dtype: dtype.clone(),
        rows,
        d,
        seconds,
        gbps: bytes / seconds / 1e9,
        vs_memcpy,
        threads,
        cpu: crate::kernels::cpu::describe(),
    };
    // The copy writes a buffer of its own, not y: timed in alternation with a kernel, both
    // closures hold their output mutably at once. The same bytes are read and written.
    let mut copy = vec![T::default(); n];
    let memcpy = time_median(config.samples, config.min_sample, || {
        parallel_copy(&x, &mut copy)
    });
    emit(record("memcpy".into(), "copy", memcpy, 1.0));
    let isa = config.isa.unwrap_or_else(Isa::detect);
    let options = Options {
        isa: Some(isa),
        stream: config.stream,
        ..Options::default()
    };
    for &op in &config.ops {
        // LayerNorm with γ and β, RMSNorm with γ: the usual configurations.
        let params = Params {
            gamma: Some(&gamma),
            beta: (op == Op::LayerNorm).then_some(&beta[..]),
            eps: 1e-5,
        };
        let layout = Layout::contiguous(rows, d);
        normalize(op, &x, &mut y, layout, params, options)?;
        let (seconds, vs_memcpy) = time_against(
            config.samples,
            config.min_sample,
            || parallel_copy(&x, &mut copy),
            || normalize(op, &x, &mut y, layout, params, options).expect("validated above"),
        );
        emit(record(
            format!("native-{isa}"),
            op.name(),
            seconds,
            vs_memcpy,
        ));
        #[cfg(feature = "candle")]
        if config.candle {
            let problem = crate::problem::Problem {
                op,
                dtype: T::DTYPE,
                eps: crate::problem::Eps::from_f32(1e-5)?,
                convention: crate::problem::EpsConvention::Inside,
                rows,
                d,
                x: x.iter().map(|v| v.to_bits()).collect(),
                gamma: Some(gamma.iter().map(|v| v.to_bits()).collect()),
                beta: params.beta.map(|b| b.iter().map(|v| v.to_bits()).collect()),
            };
            let prepared = crate::adapters::candle::Prepared::from_problem(
                &problem,
                crate::adapters::candle::Route::Ops,
            )?;
            drop(problem);
            prepared.run()?;
            let (seconds, vs_memcpy) = time_against(
                config.samples,
                config.min_sample,
                || parallel_copy(&x, &mut copy),
                || {
                    prepared.run().expect("ran once above");
                },
            );
            emit(record("candle-nn".into(), op.name(), seconds, vs_memcpy));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ratio is base's time over f's, sample by sample, and the seconds are f's: a base
    /// that sleeps 8 ms against an f that sleeps 1 ms gives about 8 (at least 1.5 however
    /// late the sleeps wake), and f's seconds at least 1 ms.
    #[test]
    fn time_against_gives_base_over_f() {
        let sleep = |ms| move || std::thread::sleep(Duration::from_millis(ms));
        let (seconds, ratio) = time_against(3, Duration::ZERO, sleep(8), sleep(1));
        assert!(seconds >= 1e-3, "{seconds}");
        assert!(ratio > 1.5, "{ratio}");
        let (seconds, ratio) = time_against(3, Duration::ZERO, sleep(1), sleep(8));
        assert!(seconds >= 8e-3, "{seconds}");
        assert!(ratio < 1.0 / 1.5, "{ratio}");
    }
}
