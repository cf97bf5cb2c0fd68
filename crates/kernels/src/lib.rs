//! normoracle's own LayerNorm/RMSNorm kernels: f32, f16 and bf16 in and out, ε inside the
//! square root, nearly always correctly rounded, at memory speed.
//!
//! * One generic row routine (`row`) over a vector of eight f64 lanes (`simd`) and a
//!   storage format (`element`); runtime dispatch to AVX-512, AVX2 + FMA + F16C, NEON or
//!   portable scalar code.
//! * f16 and bf16 rows of 4096 values or more on AVX-512 (on Zen 4 bf16 from 1024, f16
//!   from 2048; wider than 16384 elsewhere) compute their output in f32 (`row::f32_path`),
//!   keeping each value only where an error bound proves it the correct rounding, and
//!   computing the others again on the f64 path.
//! * Rows are independent and each row's arithmetic is fixed, so the output bits do not
//!   depend on the instruction set, the thread count or how rows are split among threads.
//! * Large batches run on rayon's current thread pool.
//!
//! ```
//! use normoracle_kernels as kernels;
//! let x = [1.0f32, 2.0, 3.0, 4.0];
//! let mut y = [0.0f32; 4];
//! kernels::layer_norm_f32(&x, None, None, &mut y, 4, 1e-5).unwrap();
//! assert!((y[0] + 1.3416).abs() < 1e-3);
//! ```

// The core modules under their own names, so `crate::dtype`, `crate::exact`, ... read as
// they do in every other normoracle crate.
#[cfg(test)]
use normoracle_core::rng;
use normoracle_core::{dtype, error, exact, problem};

#[cfg(test)]
mod boundaries;
pub mod cpu;
pub mod element;
pub mod floor;
mod row;
pub mod simd;

pub use element::Element;
pub use simd::Isa;

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::problem::Op;
use half::{bf16, f16};
use rayon::prelude::*;
use simd::{Scalar, Simd};

/// Work that runs on one instruction set: `run` is monomorphized and inlined into a
/// function compiled for that instruction set.
pub trait Vectorized {
    type Output;
    /// Whether the work may use AVX512-BF16 instructions. Where it may not, a CPU with them
    /// runs it on the plain AVX-512 path, and it is compiled for that path alone: the
    /// same code, in half the instances (a quarter of the kernels' x86 code was such
    /// copies).
    const AVX512_BF16: bool = true;
    fn run<S: Simd>(self, s: S) -> Self::Output;
}

/// A vector path whose CPU support has been checked.
#[derive(Debug, Clone, Copy)]
enum Token {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2(simd::x86::Avx2),
    #[cfg(target_arch = "x86_64")]
    Avx512(simd::x86::Avx512<false>),
    #[cfg(target_arch = "x86_64")]
    Avx512Bf16(simd::x86::Avx512<true>),
    #[cfg(target_arch = "aarch64")]
    Neon(simd::neon::Neon),
}

impl Token {
    fn new(isa: Isa) -> Result<Token> {
        let unavailable = || Error::usage(format!("instruction set {isa} is not available here"));
        match isa {
            Isa::Scalar => Ok(Token::Scalar),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => simd::x86::Avx2::new()
                .map(Token::Avx2)
                .ok_or_else(unavailable),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => simd::x86::Avx512::<false>::new()
                .map(Token::Avx512)
                .ok_or_else(unavailable),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Bf16 => simd::x86::Avx512::<true>::new()
                .map(Token::Avx512Bf16)
                .ok_or_else(unavailable),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => Ok(Token::Neon(simd::neon::Neon::new())),
            #[allow(unreachable_patterns)]
            _ => Err(unavailable()),
        }
    }

    /// [`Simd::F32X16_ONE_REGISTER`] of the instruction set, read through the same
    /// dispatch as the work.
    fn f32x16_one_register(self) -> bool {
        struct OneRegister;
        impl Vectorized for OneRegister {
            type Output = bool;
            const AVX512_BF16: bool = false;
            fn run<S: Simd>(self, _s: S) -> bool {
                S::F32X16_ONE_REGISTER
            }
        }
        self.vectorize(OneRegister)
    }

    fn vectorize<K: Vectorized>(self, k: K) -> K::Output {
        match self {
            Token::Scalar => k.run(Scalar),
            #[cfg(target_arch = "x86_64")]
            Token::Avx2(t) => t.vectorize(k),
            #[cfg(target_arch = "x86_64")]
            Token::Avx512(t) => t.vectorize(k),
            #[cfg(target_arch = "x86_64")]
            Token::Avx512Bf16(t) => {
                // A constant condition: the branch not taken is not compiled for `K`.
                if K::AVX512_BF16 {
                    t.vectorize(k)
                } else {
                    t.without_bf16().vectorize(k)
                }
            }
            #[cfg(target_arch = "aarch64")]
            Token::Neon(t) => t.vectorize(k),
        }
    }
}

/// Where the rows of x and y lie: row r of x is `x[r·x_stride .. r·x_stride + d]`, of y
/// `y[r·y_stride .. r·y_stride + d]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub rows: usize,
    pub d: usize,
    pub x_stride: usize,
    pub y_stride: usize,
}

impl Layout {
    /// Rows stored back to back.
    pub fn contiguous(rows: usize, d: usize) -> Layout {
        Layout {
            rows,
            d,
            x_stride: d,
            y_stride: d,
        }
    }

    /// The number of values a buffer with this row stride must hold.
    fn extent(&self, stride: usize) -> usize {
        if self.rows == 0 {
            0
        } else {
            (self.rows - 1) * stride + self.d
        }
    }

    fn validate(&self, x_len: usize, y_len: usize) -> Result<()> {
        if self.d == 0 {
            return Err(Error::input("row width d = 0: nothing to normalize"));
        }
        for (name, stride, len) in [("x", self.x_stride, x_len), ("y", self.y_stride, y_len)] {
            if stride < self.d {
                return Err(Error::input(format!(
                    "{name} row stride {stride} is smaller than the row width d = {}",
                    self.d
                )));
            }
            let need = (self.rows.saturating_sub(1))
                .checked_mul(stride)
                .and_then(|v| v.checked_add(self.d))
                .ok_or_else(|| Error::input(format!("{name} layout overflows usize")))?;
            if self.rows > 0 && len < need {
                return Err(Error::input(format!(
                    "{name} holds {len} values, {} rows of width {} at stride {stride} need {need}",
                    self.rows, self.d
                )));
            }
        }
        Ok(())
    }
}

/// The parameters of a normalization: optional γ (all ones when absent) and β (all zeros),
/// each of length d, and ε (inside the square root; finite, not negative).
#[derive(Debug, Clone, Copy)]
pub struct Params<'a, T> {
    pub gamma: Option<&'a [T]>,
    pub beta: Option<&'a [T]>,
    pub eps: f32,
}

/// How to run: which instruction set (the fastest available when `None`), how many rows
/// each parallel task takes (chosen from the row width when `None`; `Some(n)` with
/// n ≥ rows runs on the calling thread), and whether y is written with non-temporal
/// stores that bypass the caches (when `None`: for outputs of at least
/// [`STREAM_MIN_BYTES`], in f32, or in any format on an Intel CPU). None of them changes
/// a single output bit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    pub isa: Option<Isa>,
    pub rows_per_task: Option<usize>,
    pub stream: Option<bool>,
}

/// Outputs at least this large are streamed past the caches by default (f32 on most CPUs,
/// the 16-bit formats on most of Intel's: see `streams_by_default`): they would not stay
/// cached anyway, and streaming saves reading every output line before writing it.
pub const STREAM_MIN_BYTES: usize = 24 << 20;

/// Whether y is streamed when [`Options::stream`] is `None`: outputs of at least
/// [`STREAM_MIN_BYTES`], in f32 on every CPU but the Skylake server cores, and in the
/// 16-bit formats on Intel's other than those.
///
/// The 16-bit formats' rows are bound more by their arithmetic than by memory, so whether
/// saving the reads of y's lines pays for the non-temporal stores (16 bytes per eight
/// values) depends on the CPU. On Zen 3 it did not (2 threads, cached stores over
/// streamed ones, LayerNorm, medians of 8–20 paired rounds: f16 0.89–0.96 at
/// 16384 × 1024, 0.87–0.98 at 4096 × 4096, 0.94 at 8192 × 4096, 0.96 at 32768 × 1024;
/// bf16 0.93–1.05, 0.94, 0.90, 1.00; the same four lines streamed back to back from an
/// L1 buffer were slower still). On an Emerald Rapids Xeon it did (2 threads, streamed
/// over cached, `benches/ab.py`, eight rounds: LayerNorm f16 1.01 at 4096 × 4096 and 0.87
/// at 16384 × 1024, bf16 0.95 and 0.92; RMSNorm f16 0.90 and 0.81, bf16 0.86 and 0.87;
/// this rule against the one before, a second series: 0.81–0.97 in the same eight cases).
/// f32 measured even either way on Zen 3 (0.98 at 4096 × 4096, 1.04 at 16384 × 1024) and
/// much faster streamed on the Xeon (LayerNorm about 0.7 of the cached stores' time), so
/// it streams on both. On Zen 4 (a 2-vCPU EPYC, family 25 model 17, `native-avx512bf16`;
/// `benches/ab.py`, `--stream off` against `on`, ten rounds, 2 threads, streamed over
/// cached, 4096 × 4096, 16384 × 1024, 2048 × 8192) f32 gained again (LayerNorm 0.81, 0.82,
/// 0.82; RMSNorm 0.78, 0.80, 0.77) and the 16-bit formats did not (LayerNorm f16 1.01,
/// 0.93, 1.35, bf16 0.98, 0.88, 0.92; RMSNorm f16 1.00, 1.15, 0.95, bf16 1.04, 1.05,
/// 0.94), so AMD's family 25 keeps Zen 3's rule.
///
/// On a Cascade Lake Xeon (2 vCPUs, L3 36 MiB; `bench --stream on|off` alternated, eight
/// rounds, 2 threads, medians of the paired ratios, cached over streamed) streaming lost
/// in f32: LayerNorm 0.88 at 4096 × 4096, 0.97 at 16384 × 1024, 0.86 at 8192 × 2048 and
/// 2048 × 8192, 0.89 at 1024 × 16384; RMSNorm 0.86, 0.95, 0.83, 0.87, 0.85. The 16-bit
/// formats lost too, by less: LayerNorm f16 0.91, 0.95, 0.83 (4096 × 4096, 16384 × 1024,
/// 8192 × 2048), bf16 0.95, 0.96, 0.93; RMSNorm f16 0.93, 0.90, 0.93, bf16 1.05, 0.94,
/// 0.96. (A likely reason, which that machine could not show, having no hardware
/// counters: these cores hold a fill buffer for each streamed line until it reaches the
/// memory controller, across the mesh, so that one core's streamed writes are slow; with
/// many cores writing at once streaming may pay again, which two vCPUs could not test.)
/// So these cores store through the caches. No output bit depends on any of this.
fn streams_by_default(dtype: Dtype, layout: Layout, class: cpu::Class) -> bool {
    let bytes = layout.rows * layout.d * (dtype.bits() as usize / 8);
    let streams = match class {
        cpu::Class::Intel => true,
        cpu::Class::SkylakeServer => false,
        cpu::Class::AmdFamily25 | cpu::Class::Other => dtype == Dtype::F32,
    };
    bytes >= STREAM_MIN_BYTES && streams
}

/// Values per parallel task when `rows_per_task` is not given: large enough to amortize
/// scheduling, small enough to balance a few threads.
pub const VALUES_PER_TASK: usize = 1 << 16;

/// f32 rows at least this wide read γ and β as given, in f32 (see [`normalize`]).
const F32_PARAMS_MIN_D: usize = 8192;

/// Whether the rows of a call read γ and β as given, in their own format, rather than
/// widened to f64 once per call (see [`normalize`]): single rows, f32 rows of at least
/// [`F32_PARAMS_MIN_D`], and the 16-bit formats' rows that take the f32 path ([`row::f32_path`]),
/// which loads them in the lane order of x (`Element::elements16`).
fn params_as_given(layout: Layout, f32_path: bool) -> bool {
    layout.rows == 1 || layout.d >= F32_PARAMS_MIN_D || f32_path
}

/// LayerNorm or RMSNorm of every row of `x` into `y` (see [`Layout`], [`Params`],
/// [`Options`]). Errors (never panics) on d = 0, buffers too short for the layout, γ/β of
/// the wrong length, ε negative or not finite, an unavailable instruction set.
/// A row holding ±∞ or NaN comes out as NaN.
pub fn normalize<'a, T: Element>(
    op: Op,
    x: &[T],
    y: &mut [T],
    layout: Layout,
    params: Params<'a, T>,
    options: Options,
) -> Result<()> {
    layout.validate(x.len(), y.len())?;
    for (name, p) in [("gamma", params.gamma), ("beta", params.beta)] {
        if let Some(v) = p {
            if v.len() != layout.d {
                return Err(Error::input(format!(
                    "{name} has {} values but rows have d = {}",
                    v.len(),
                    layout.d
                )));
            }
        }
    }
    if !params.eps.is_finite() || params.eps < 0.0 {
        return Err(Error::usage(format!(
            "eps must be finite and not negative, got {}",
            params.eps
        )));
    }
    let token = Token::new(options.isa.unwrap_or_else(Isa::detect))?;
    if layout.rows == 0 {
        return Ok(());
    }
    let x = &x[..layout.extent(layout.x_stride)];
    let y = &mut y[..layout.extent(layout.y_stride)];
    // γ and β as given, in the row's own format, widened on every load: for a single row,
    // where widening them first would cost as much again as reading them; for wide rows,
    // where f64 copies (16 bytes per element for the two) would crowd the row out of L2
    // (at d = 65536: 1 MiB of 2) and be read from L3; for the 16-bit formats' rows on
    // the f32 path ([`f32_path`]), which converts them with one instruction per sixteen
    // (f32 copies made once per call were slower: f16 LayerNorm, 2 threads, 64 × 65536
    // 1.23 → 1.15 ms and 4 × 32768 87 → 33 µs as given; one thread, in cache, copies in
    // the loads' lane order took 1.01 of the time at 16 × 4096, 1.06 at 8 × 8192, 1.16 at
    // 4 × 16384). Otherwise they are widened to f64 once per call and shared by every
    // row: the output pass loads them with no conversion. Either way the same values.
    // max |γ| and |β|, once per call: the f64 path's certainty filter (and the f32 path's
    // bound) take them as bounds of every lane's.
    let params_max = token.vectorize(ParamsMaxOf(params));
    // Whether the rows take the 16-bit formats' f32 path: a property of d, the format, the
    // instruction set and the CPU, never of the batch (see `f32_path::applies`).
    let class = cpu::Class::detect();
    let f32_path =
        row::f32_path::path_format::<T>(layout.d, token.f32x16_one_register(), class).is_some();
    let call = Call {
        op,
        layout,
        options,
        class,
        f32_path,
    };
    if params_as_given(layout, f32_path) {
        let params = RowsParams {
            gamma: params.gamma.unwrap_or(&[]),
            beta: params.beta.unwrap_or(&[]),
            eps: params.eps,
            params_max,
        };
        run_rows(token, call, x, y, params);
        return Ok(());
    }
    let widen = |p: Option<&[T]>| p.map(|v| token.vectorize(Widen(v)));
    let (gamma, beta) = (widen(params.gamma), widen(params.beta));
    fn values(p: &Option<Vec<row::Line>>, d: usize) -> &[f64] {
        p.as_deref().map_or(&[], |l| row::values(l, d))
    }
    let params = RowsParams {
        gamma: values(&gamma, layout.d),
        beta: values(&beta, layout.d),
        eps: params.eps,
        params_max,
    };
    run_rows(token, call, x, y, params);
    Ok(())
}

/// γ, β (widened to `P`, empty when absent), ε, and max |γ| and |β|.
#[derive(Clone, Copy)]
struct RowsParams<'a, P> {
    gamma: &'a [P],
    beta: &'a [P],
    eps: f32,
    params_max: row::ParamsMax,
}

/// max |γ| and |β| of a call, each in one pass compiled for the instruction set.
struct ParamsMaxOf<'a, T>(Params<'a, T>);

impl<T: Element> Vectorized for ParamsMaxOf<'_, T> {
    type Output = row::ParamsMax;
    const AVX512_BF16: bool = T::AVX512_BF16;
    #[inline(always)]
    fn run<S: Simd>(self, _s: S) -> row::ParamsMax {
        // Plain branches: a closure would be compiled without the instruction set.
        let mut max = row::ParamsMax::NONE;
        if let Some(g) = self.0.gamma {
            max.gamma = T::abs_max(g);
        }
        if let Some(b) = self.0.beta {
            max.beta = T::abs_max(b);
        }
        max
    }
}

/// What [`normalize`] settles once for every row of a call.
#[derive(Clone, Copy)]
struct Call {
    op: Op,
    layout: Layout,
    options: Options,
    /// This CPU's class (the default store policy depends on it).
    class: cpu::Class,
    /// Whether the rows take the 16-bit formats' f32 path (never for f32 rows).
    f32_path: bool,
}

/// Every row, on rayon's pool when there are several tasks.
fn run_rows<T: Element, P: row::Param>(
    token: Token,
    call: Call,
    x: &[T],
    y: &mut [T],
    params: RowsParams<'_, P>,
) {
    let Call {
        op,
        layout,
        options,
        class,
        f32_path,
    } = call;
    let rows_per_task = rows_per_task(options.rows_per_task, layout.d);
    let stream = options
        .stream
        .unwrap_or_else(|| streams_by_default(T::DTYPE, layout, class));
    // The 16-bit formats' rows are widened once where they take the f64 path (where
    // `f32_path` is false, and `RowParams::f32_path` reads the path back from this; the
    // others take the f32 path, which reads x itself, and its rows that may not take it,
    // rarely, convert x again). f32 rows only in
    // a LayerNorm of a single row, where reading the f64 row back beats converting x again
    // (1 × 4096 2.10 → 1.82 µs). Elsewhere converting x again was faster: rows streamed
    // from memory by many tasks (4096 × 4096 LayerNorm 4.8 → 5.4 ms when widened); and, on
    // Zen 3 (one thread, rows in cache, the same binary either way, best of 400 × 10
    // calls), single tasks of several rows (LayerNorm 16 × 4096 0.91 of the widened time,
    // 4 × 4096 0.92; RMSNorm 0.84, 0.87; 16 × 1024 and 4 × 16384 within 2 %) and RMSNorm's
    // single rows (1 × 4096 0.95, 1 × 16384 0.91), whose widened row is x itself. Earlier,
    // on Zen 4, 16 × 1024 had gained from widening (8.5 → 6.8 µs); here it is even.
    // (A single row is always a single task: rows_per_task ≥ 1.)
    let widen_once = match T::F32_PATH {
        Some(_) => !f32_path,
        None => op == Op::LayerNorm && layout.rows == 1,
    };
    let task = |first_row: usize, y_rows: &mut [T]| {
        let rows = Rows {
            op,
            x: &x[first_row * layout.x_stride..],
            y: y_rows,
            layout,
            params,
            stream,
            widen_once,
        };
        token.vectorize(rows);
    };
    in_tasks(y, layout, rows_per_task, task);
}

/// Rows per parallel task: as requested, else enough for [`VALUES_PER_TASK`] values; at
/// least one.
fn rows_per_task(requested: Option<usize>, d: usize) -> usize {
    requested
        .unwrap_or_else(|| (VALUES_PER_TASK / d).max(1))
        .max(1)
}

/// `task(first_row, y_rows)` over y in runs of `rows_per_task` rows (the last may be
/// shorter), on rayon's pool where there are several.
fn in_tasks<T: Send>(
    y: &mut [T],
    layout: Layout,
    rows_per_task: usize,
    task: impl Fn(usize, &mut [T]) + Sync,
) {
    if rows_per_task >= layout.rows {
        task(0, y);
    } else {
        y.par_chunks_mut(rows_per_task * layout.y_stride)
            .enumerate()
            .for_each(|(i, y_rows)| task(i * rows_per_task, y_rows));
    }
}

/// Values widened (exactly) with the instruction set's conversions, to f64 on 64-byte
/// aligned lines, the last one padded with zeros. A scalar loop (`half`'s software
/// conversion) cost 10 µs for γ and β at d = 4096, five times the row itself.
struct Widen<'a, T>(&'a [T]);

impl<T: Element> Vectorized for Widen<'_, T> {
    type Output = Vec<row::Line>;
    const AVX512_BF16: bool = T::AVX512_BF16;
    #[inline(always)]
    fn run<S: Simd>(self, s: S) -> Vec<row::Line> {
        let (chunks, tail) = self.0.as_chunks::<8>();
        let mut out = Vec::with_capacity(self.0.len().div_ceil(8));
        // Written in place, then the length set: `push` kept its length and pointer in
        // memory and went through the stack for every line (a plain loop: a closure would
        // be compiled without the instruction set).
        for (slot, c) in out.spare_capacity_mut().iter_mut().zip(chunks) {
            slot.write(row::Line(s.to_array(T::load(s, c))));
        }
        // SAFETY: the capacity holds a line per whole chunk (and one more for the tail),
        // and the loop above initialized the first `chunks.len()` of them.
        unsafe { out.set_len(chunks.len()) };
        if !tail.is_empty() {
            let mut lanes = [0.0; 8];
            for (slot, v) in lanes.iter_mut().zip(tail) {
                *slot = T::DTYPE.to_f64(v.to_bits());
            }
            out.push(row::Line(lanes));
        }
        out
    }
}

/// A run of consecutive rows: `x` and `y` start at the first one; `gamma`/`beta` are
/// widened to `P`, empty when absent.
struct Rows<'a, T, P> {
    op: Op,
    x: &'a [T],
    y: &'a mut [T],
    layout: Layout,
    params: RowsParams<'a, P>,
    stream: bool,
    /// See `run_rows`.
    widen_once: bool,
}

impl<T: Element, P: row::Param> Vectorized for Rows<'_, T, P> {
    type Output = ();
    const AVX512_BF16: bool = T::AVX512_BF16;
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        // One monomorphization per presence of γ and β, so absent ones cost nothing.
        match (self.params.gamma.is_empty(), self.params.beta.is_empty()) {
            (false, false) => self.each_row::<S, true, true>(s),
            (false, true) => self.each_row::<S, true, false>(s),
            (true, false) => self.each_row::<S, false, true>(s),
            (true, true) => self.each_row::<S, false, false>(s),
        }
    }
}

impl<T: Element, P: row::Param> Rows<'_, T, P> {
    #[inline(always)]
    fn each_row<S: Simd, const G: bool, const B: bool>(self, s: S) {
        let params = row::RowParams {
            op: self.op,
            gamma: self.params.gamma,
            beta: self.params.beta,
            eps: self.params.eps,
            stream: self.stream,
            widen_once: self.widen_once,
            params_max: self.params.params_max,
        };
        // Buffers kept by each thread from call to call: no allocation, no zeroing.
        thread_local! {
            static SCRATCH: std::cell::RefCell<row::Scratch> = Default::default();
        }
        // Taken out and put back (no closure: the rows must run in this function, compiled
        // for the instruction set).
        let mut scratch = SCRATCH.take();
        self.rows_with::<S, G, B>(s, &params, &mut scratch);
        SCRATCH.set(scratch);
    }

    #[inline(always)]
    fn rows_with<S: Simd, const G: bool, const B: bool>(
        self,
        s: S,
        params: &row::RowParams<'_, P>,
        scratch: &mut row::Scratch,
    ) {
        let Layout {
            d,
            x_stride,
            y_stride,
            ..
        } = self.layout;
        let rows = self.y.len().div_ceil(y_stride);
        // Row r's x; empty past the last row.
        let x_of = |r: usize| -> &[T] {
            if r < rows {
                &self.x[r * x_stride..r * x_stride + d]
            } else {
                &[]
            }
        };
        // The next row's first statistics pass, where a row made it (`row::Ahead`).
        let mut ahead = None;
        for r in 0..rows {
            let row = row::Row {
                x: x_of(r),
                next: x_of(r + 1),
                after_next: x_of(r + 2),
                y: &mut self.y[r * y_stride..r * y_stride + d],
            };
            ahead = match self.op {
                Op::LayerNorm => {
                    row::layer_norm_row::<S, T, P, G, B>(s, row, params, scratch, ahead)
                }
                Op::RmsNorm => row::rms_norm_row::<S, T, P, G, B>(s, row, params, scratch, ahead),
            };
        }
        if self.stream {
            s.fence();
        }
    }
}

/// LayerNorm of contiguous rows of width d (x.len() a multiple of d) with the defaults.
pub fn layer_norm<T: Element>(
    x: &[T],
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    y: &mut [T],
    d: usize,
    eps: f32,
) -> Result<()> {
    contiguous(Op::LayerNorm, x, gamma, beta, y, d, eps)
}

/// RMSNorm of contiguous rows of width d (x.len() a multiple of d) with the defaults.
pub fn rms_norm<T: Element>(
    x: &[T],
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    y: &mut [T],
    d: usize,
    eps: f32,
) -> Result<()> {
    contiguous(Op::RmsNorm, x, gamma, beta, y, d, eps)
}

/// LayerNorm of rows at any strides.
pub fn layer_norm_strided<T: Element>(
    x: &[T],
    y: &mut [T],
    layout: Layout,
    params: Params<'_, T>,
) -> Result<()> {
    normalize(Op::LayerNorm, x, y, layout, params, Options::default())
}

/// RMSNorm of rows at any strides.
pub fn rms_norm_strided<T: Element>(
    x: &[T],
    y: &mut [T],
    layout: Layout,
    params: Params<'_, T>,
) -> Result<()> {
    normalize(Op::RmsNorm, x, y, layout, params, Options::default())
}

fn contiguous<T: Element>(
    op: Op,
    x: &[T],
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    y: &mut [T],
    d: usize,
    eps: f32,
) -> Result<()> {
    if d == 0 {
        return Err(Error::input("row width d = 0: nothing to normalize"));
    }
    if !x.len().is_multiple_of(d) {
        return Err(Error::input(format!(
            "x holds {} values, not a whole number of rows of width d = {d}",
            x.len()
        )));
    }
    if y.len() != x.len() {
        return Err(Error::input(format!(
            "y holds {} values but x holds {}",
            y.len(),
            x.len()
        )));
    }
    let layout = Layout::contiguous(x.len() / d, d);
    normalize(
        op,
        x,
        y,
        layout,
        Params { gamma, beta, eps },
        Options::default(),
    )
}

/// Typed entry points, e.g. `layer_norm_f32(x, gamma, beta, y, d, eps)`.
macro_rules! typed {
    ($($name:ident => $generic:ident::<$t:ty>),* $(,)?) => {$(
        #[doc = concat!("[`", stringify!($generic), "`] for `", stringify!($t), "`.")]
        pub fn $name(
            x: &[$t],
            gamma: Option<&[$t]>,
            beta: Option<&[$t]>,
            y: &mut [$t],
            d: usize,
            eps: f32,
        ) -> Result<()> {
            $generic(x, gamma, beta, y, d, eps)
        }
    )*};
}

typed! {
    layer_norm_f32 => layer_norm::<f32>,
    layer_norm_f16 => layer_norm::<f16>,
    layer_norm_bf16 => layer_norm::<bf16>,
    rms_norm_f32 => rms_norm::<f32>,
    rms_norm_f16 => rms_norm::<f16>,
    rms_norm_bf16 => rms_norm::<bf16>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outputs of at least `STREAM_MIN_BYTES` are streamed by default: f32 on every CPU
    /// but the Skylake server cores, the 16-bit formats on Intel's other than those;
    /// smaller outputs never.
    #[test]
    fn large_outputs_stream_by_default_by_format_and_cpu() {
        use cpu::Class::{AmdFamily25, Intel, Other, SkylakeServer};
        for (dtype, classes) in [
            (
                Dtype::F32,
                [
                    (Intel, true),
                    (SkylakeServer, false),
                    (AmdFamily25, true),
                    (Other, true),
                ],
            ),
            (
                Dtype::F16,
                [
                    (Intel, true),
                    (SkylakeServer, false),
                    (AmdFamily25, false),
                    (Other, false),
                ],
            ),
            (
                Dtype::BF16,
                [
                    (Intel, true),
                    (SkylakeServer, false),
                    (AmdFamily25, false),
                    (Other, false),
                ],
            ),
        ] {
            let bytes = dtype.bits() as usize / 8;
            let rows = STREAM_MIN_BYTES / bytes / 1024;
            let at = Layout::contiguous(rows, 1024);
            let below = Layout::contiguous(rows - 1, 1024);
            let huge = Layout::contiguous(4 * rows, 1024);
            for (class, streams) in classes {
                assert_eq!(
                    streams_by_default(dtype, at, class),
                    streams,
                    "{dtype:?} {class:?}"
                );
                assert_eq!(
                    streams_by_default(dtype, huge, class),
                    streams,
                    "{dtype:?} {class:?}"
                );
                assert!(
                    !streams_by_default(dtype, below, class),
                    "{dtype:?} {class:?}"
                );
            }
        }
    }
}
