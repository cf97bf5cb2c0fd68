//! `normoracle bench`: the native kernels, a memcpy of the same bytes, the floor
//! ([`crate::kernels::floor`]: what every kernel must do, and no more) and (with the `candle`
//! feature) candle-nn's kernels, timed in one run on one thread pool. Medians of several
//! samples; every speed is also given as a ratio to a memcpy of the same bytes, and the
//! native kernels' as ratios to the floor's and candle-nn's, each timed in alternation
//! with it ([`time_together`]).

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::kernels::{floor::floor, normalize, Element, Isa, Layout, Options, Params};
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
    /// seconds / seconds, each sample in the same round as one of the memcpy, which opens
    /// the round (see [`time_together`]); 1 for the memcpy itself.
    pub vs_memcpy: f64,
    /// Speed relative to the floor ([`crate::kernels::floor`]; native kernels): the median over
    /// samples of the floor's seconds / seconds, each pair of samples taken moments apart.
    /// At most about 1: the floor does part of what every kernel does.
    pub vs_floor: Option<f64>,
    /// Speed relative to candle-nn's kernel of the same op (native kernels, where candle-nn
    /// ran): the median over samples of candle-nn's seconds / seconds, each pair of
    /// samples taken moments apart (see [`time_together`]).
    pub vs_candle: Option<f64>,
    /// The dtype of that candle-nn kernel: the record's own, but f16 for bf16, whose
    /// yardstick in issue 5 is candle-nn's f16 layer_norm.
    pub candle_dtype: Option<String>,
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

/// Several operations timed in alternation: each sample of each, in the order given, right
/// after one of the one before (each sample as in [`time_median`]). Returns each
/// operation's seconds per call, sample by sample. A ratio of two operations' samples of
/// the same round ([`paired_ratio`]) compares two samples taken moments apart, so it
/// follows the machine's load as it changes: here a memcpy's own median moved by up to 3×
/// from run to run, and a ratio of two medians taken seconds apart moved with it.
pub fn time_together(
    samples: usize,
    min_sample: Duration,
    ops: &mut [&mut dyn FnMut()],
) -> Vec<Vec<f64>> {
    let reps: Vec<usize> = ops.iter_mut().map(|f| reps_for(min_sample, f)).collect();
    let mut seconds = vec![Vec::with_capacity(samples.max(1)); ops.len()];
    for _ in 0..samples.max(1) {
        for ((f, &reps), times) in ops.iter_mut().zip(&reps).zip(&mut seconds) {
            times.push(per_call(reps, f));
        }
    }
    seconds
}

/// The median over the rounds of [`time_together`] of `base`'s time over `of`'s: how many
/// times faster `of` ran.
pub fn paired_ratio(base: &[f64], of: &[f64]) -> f64 {
    median(base.iter().zip(of).map(|(b, t)| b / t).collect())
}

/// Round by round, the lesser of two operations' seconds (samples of [`time_together`]):
/// the floor's time, its cached and streamed stores timed in the same round.
fn faster_per_round(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(a, b)| a.min(*b)).collect()
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
    const CHUNK: usize = crate::kernels::VALUES_PER_TASK;
    if src.len() <= CHUNK {
        dst.copy_from_slice(src);
    } else {
        dst.par_chunks_mut(CHUNK)
            .zip(src.par_chunks(CHUNK))
            .for_each(|(d, s)| d.copy_from_slice(s));
    }
}

/// A case's inputs: x roughly N(0.5, 1) (n values), γ near 1 and β near 0 (d each), all
/// rounded to the format from the same reals whatever the format (for a seed). The bench's
/// inputs, public so that other timings (`examples/kernel_timing.rs`) use the same.
pub struct Inputs<T> {
    pub x: Vec<T>,
    pub gamma: Vec<T>,
    pub beta: Vec<T>,
}

impl<T: Element> Inputs<T> {
    pub fn new(n: usize, d: usize, seed: u64) -> Inputs<T> {
        Inputs {
            x: random_values(n, 0.5, 1.0, seed),
            gamma: random_values(d, 1.0, 0.1, seed + 1),
            beta: random_values(d, 0.0, 0.1, seed + 2),
        }
    }
}

/// Random values: roughly N(center, spread²), rounded to the format.
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
    let Inputs { x, gamma, beta } = Inputs::<T>::new(n, d, config.seed);
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
        vs_floor: None,
        vs_candle: None,
        candle_dtype: None,
        threads,
        cpu: crate::kernels::cpu::describe(),
    };
    // The copy writes a buffer of its own, not y: timed in alternation with a kernel, both
    // closures hold their output mutably at once. The same bytes are read and written.
    let mut copy = vec![T::default(); n];
    // The floor's y, likewise its own (one buffer for its two store policies, timed one
    // after the other).
    let floor_y = std::cell::RefCell::new(vec![T::default(); n]);
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
    let layout = Layout::contiguous(rows, d);
    // The floor does the same whatever the op: checked once a case.
    floor(&x, &mut floor_y.borrow_mut(), layout, Some(isa), None)?;
    for (i, &op) in config.ops.iter().enumerate() {
        // LayerNorm with γ and β, RMSNorm with γ: the usual configurations.
        let params = Params {
            gamma: Some(&gamma),
            beta: (op == Op::LayerNorm).then_some(&beta[..]),
            eps: 1e-5,
        };
        normalize(op, &x, &mut y, layout, params, options)?;
        let mut candle = candle_kernels(config, op, rows, &x, params)?;
        // One round: the memcpy, ours, candle-nn's kernels (its own dtype's first), then the
        // floor with y streamed past the caches and through them. The floor's time in a
        // round is the lesser of its two: whichever store policy a kernel takes, it cannot
        // beat both. It comes last so that each of the others follows what it followed
        // before the floor was timed (the memcpy a kernel's output written through the
        // caches): right after the memcpy it made f16 LayerNorm 1.08 and 1.15 times as
        // slow at 4096 × 4096 and 16384 × 1024 (`benches/ab.py`, 8 rounds, 2 threads),
        // whose output a cached floor had left in L3 to be written back.
        let mut copy_op = || parallel_copy(&x, &mut copy);
        let mut native_op =
            || normalize(op, &x, &mut y, layout, params, options).expect("validated above");
        let floor_op = |stream| {
            let mut y = floor_y.borrow_mut();
            floor(&x, &mut y, layout, Some(isa), Some(stream)).expect("validated above")
        };
        let (mut floor_streamed, mut floor_cached) = (|| floor_op(true), || floor_op(false));
        let mut ops: Vec<&mut dyn FnMut()> = vec![&mut copy_op, &mut native_op];
        ops.extend(candle.iter_mut().map(|k| &mut k.run as &mut dyn FnMut()));
        ops.extend([
            &mut floor_streamed as &mut dyn FnMut(),
            &mut floor_cached as &mut dyn FnMut(),
        ]);
        let seconds = time_together(config.samples, config.min_sample, &mut ops);
        let [copies, native, others @ ..] = &seconds[..] else {
            unreachable!("the memcpy and ours are always timed")
        };
        let [candle_seconds @ .., streamed, cached] = others else {
            unreachable!("the floor is always timed")
        };
        let floors = &faster_per_round(cached, streamed);
        // The floor does the same whatever the op: recorded once a case.
        if i == 0 {
            emit(record(
                "floor".into(),
                "floor",
                median(floors.clone()),
                paired_ratio(copies, floors),
            ));
        }
        let mut ours = record(
            format!("native-{isa}"),
            op.name(),
            median(native.clone()),
            paired_ratio(copies, native),
        );
        ours.vs_floor = Some(paired_ratio(floors, native));
        // candle-nn's kernel in our dtype is recorded; the yardstick is the last one run.
        if let (Some(yardstick), Some(theirs)) = (candle.last(), candle_seconds.last()) {
            ours.vs_candle = Some(paired_ratio(theirs, native));
            ours.candle_dtype = Some(yardstick.dtype.name().to_string());
        }
        emit(ours);
        if let Some(theirs) = candle_seconds.first() {
            emit(record(
                "candle-nn".into(),
                op.name(),
                median(theirs.clone()),
                paired_ratio(copies, theirs),
            ));
        }
    }
    Ok(())
}

/// One of candle-nn's kernels, ready to run on a case's inputs.
struct CandleKernel {
    dtype: Dtype,
    run: Box<dyn FnMut()>,
}

/// candle-nn's kernels of a case: its kernel in the case's dtype, and for bf16 its f16 one
/// too, run on the f16 case's inputs (the same seeds: the same reals rounded to f16), the
/// yardstick of issue 5 for both 16-bit formats. None without the `candle` feature or with
/// `config.candle` off.
fn candle_kernels<T: Element>(
    config: &Config,
    op: Op,
    rows: usize,
    x: &[T],
    params: Params<'_, T>,
) -> Result<Vec<CandleKernel>> {
    if !config.candle {
        return Ok(Vec::new());
    }
    // `run` refuses `config.candle` without the feature.
    #[cfg(not(feature = "candle"))]
    return {
        let _ = (op, rows, x, params);
        Ok(Vec::new())
    };
    #[cfg(feature = "candle")]
    {
        use crate::adapters::candle::{Prepared, Route};
        let d = x.len() / rows;
        let prepare = |dtype: Dtype, x: Vec<u64>, gamma: Vec<u64>, beta: Option<Vec<u64>>| {
            let problem = crate::problem::Problem {
                op,
                dtype,
                eps: crate::problem::Eps::from_f32(params.eps)?,
                convention: crate::problem::EpsConvention::Inside,
                rows,
                d,
                x,
                gamma: Some(gamma),
                beta,
            };
            let prepared = Prepared::from_problem(&problem, Route::Ops)?;
            prepared.run()?;
            Ok::<_, Error>(CandleKernel {
                dtype,
                run: Box::new(move || {
                    prepared.run().expect("ran once above");
                }),
            })
        };
        fn bits<U: Element>(v: &[U]) -> Vec<u64> {
            v.iter().map(|v| v.to_bits()).collect()
        }
        let gamma = params.gamma.map_or_else(Vec::new, bits);
        let mut kernels = vec![prepare(T::DTYPE, bits(x), gamma, params.beta.map(bits))?];
        if T::DTYPE == Dtype::BF16 {
            let f16 = Inputs::<f16>::new(x.len(), d, config.seed);
            let beta = params.beta.map(|_| bits(&f16.beta));
            kernels.push(prepare(Dtype::F16, bits(&f16.x), bits(&f16.gamma), beta)?);
        }
        Ok(kernels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each operation's samples are its own, in rounds: an operation that sleeps 8 ms
    /// against one that sleeps 1 ms gives a paired ratio of about 8 (at least 1.5 however
    /// late the sleeps wake) and each sample at least its sleep, whatever the order.
    #[test]
    fn time_together_keeps_each_operation_s_samples() {
        let sleep = |ms| move || std::thread::sleep(Duration::from_millis(ms));
        let (mut slow, mut fast, mut mid) = (sleep(8), sleep(1), sleep(3));
        let seconds = time_together(3, Duration::ZERO, &mut [&mut slow, &mut fast, &mut mid]);
        assert_eq!(seconds.len(), 3);
        for (times, least) in seconds.iter().zip([8e-3, 1e-3, 3e-3]) {
            assert_eq!(times.len(), 3);
            assert!(times.iter().all(|&t| t >= least), "{times:?}");
        }
        let ratio = paired_ratio(&seconds[0], &seconds[1]);
        assert!(ratio > 1.5, "{ratio}");
        let ratio = paired_ratio(&seconds[1], &seconds[0]);
        assert!(ratio < 1.0 / 1.5, "{ratio}");
    }

    /// The floor's time in a round is the lesser of its two store policies' in that round,
    /// whichever of the two is faster, round by round.
    #[test]
    fn the_floor_takes_the_faster_policy_of_each_round() {
        let (cached, streamed) = ([1.0, 5.0, 3.0], [2.0, 4.0, 3.0]);
        assert_eq!(faster_per_round(&cached, &streamed), [1.0, 4.0, 3.0]);
        assert_eq!(faster_per_round(&streamed, &cached), [1.0, 4.0, 3.0]);
    }

    /// The paired ratio is the median of the rounds' ratios, not a ratio of medians.
    #[test]
    fn paired_ratio_is_the_median_of_the_rounds_ratios() {
        // The rounds' ratios are 2, 0.1 and 3 (median 2); the medians' ratio is 3 / 10.
        assert_eq!(paired_ratio(&[2.0, 3.0, 30.0], &[1.0, 30.0, 10.0]), 2.0);
        assert_eq!(paired_ratio(&[3.0, 1.0, 10.0], &[1.0, 1.0, 1.0]), 3.0);
    }
}
