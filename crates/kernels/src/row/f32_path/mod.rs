//! The f32 output path of the 16-bit formats: y computed in f32, sixteen lanes a vector,
//! with no conversion to f64 and back; kept in every lane where an error bound proves that
//! it rounds (to f16 or bf16) as the exact value does, and computed again on the f64 path
//! (`row`) in the other lanes. The output bits are therefore those of the correct
//! rounding wherever the f32 path keeps a lane, and those of the f64 path elsewhere, on
//! every instruction set (the f32 operations and the test are the same IEEE operations
//! everywhere).
//!
//! # The computation (u = 2^-24, one f32 rounding per operation)
//! The statistics come from the f64 pass as before: the mean μ̂ = c + m (LayerNorm) and
//! r̂ ≈ r = 1/√(σ² + ε). Per row r_h = f32(r̂), and LayerNorm's rows take the mean out in
//! one of two forms (`Centering`):
//! * fused, where |μ̂|·r_h ≤ `FUSED_MAX_OFFSET` (the mean within a spread of zero, as in
//!   most activations): o = f32(−μ̂·r_h), and per element p̃ = fma(x, r_h, o), one
//!   operation;
//! * split, elsewhere: m_h = f32(μ̂), m_l = f32((c − m_h) + m), and per element
//!   d̃ = (x − m_h) − m_l, p̃ = d̃·r_h, three operations, but an e_m (below) that does not
//!   grow with |μ|.
//!
//! RMSNorm's p̃ = x·r_h. Then ỹ = fma(p̃, γ, β), one rounding (x exact in f32
//! throughout; absent γ or β, a product or a sum, the same bound).
//!
//! # The bound
//! Write d = x − μ, Y = γ·r·d (so y = Y + β), and r_h = r(1 + ρ) with |ρ| ≤ u + δ_r: the
//! f64 statistics give δ_r ≤ 16γ_n + 2^-51 (γ_n = n·2^-53/(1 − n·2^-53), n = ⌈d/16⌉ + 9
//! terms per partial sum, the variance within 27γ_n; see `row`), which the path requires
//! to be ≤ u/16. First the exact argument s = p̃·γ + β of the last fma, against y:
//! * RMSNorm: p̃ = x·r_h(1 + δ), so |p̃γ − Y| ≤ 2.07u|Y|.
//! * Fused: e_c = o + μ·r_h, exact inside the fma: p̃ = (r_h·d + e_c)(1 + δ), so
//!   |p̃γ − Y| ≤ 2.07u|Y| + 1.0001·r_h|γ||e_m| with e_m = |e_c|/r_h ≤ (sum error of μ̂) +
//!   (u + 3u_64)|μ̂| (μ̂ = c + m rounded in f64, −μ̂·r_h rounded in f64, then to f32,
//!   which the path requires to be normal or an exact zero).
//! * Split: e_m = μ − m_h − m_l, and d̃ = d + ε_d with |ε_d| ≤ 2.001u|d| + 1.001|e_m|:
//!   where x − m_h is exact (Sterbenz, x ∈ [m_h/2, 2m_h]) only the second subtraction
//!   rounds; elsewhere |x − m_h| ≥ |m_h|/2 ≥ |m_l|/(2.002u), so the first rounding is also
//!   relative to |d|. p̃ = (d + ε_d)·r_h(1 + δ), so |p̃γ − Y| ≤ 4.08u|Y| + 1.002·r_h|γ||e_m|.
//!
//! Underflow adds at most 2^-149·(|γ| + 1) (products and the fma's results that land
//! below 2^-126; sums that do are exact). So |s − y| ≤ a|Y| + c, a = 2.07u (4.08u split),
//! c = 1.002·r_h|γ||e_m| + 2^-149·(|γ| + 1). The last rounding gives ỹ = s(1 + δ'), and
//! with |s| ≤ |ỹ|/(1 − u) and |Y| ≤ |ỹ| + |ỹ − y| + |β|, A = |ỹ − y| satisfies
//! A ≤ a(|ỹ| + A + max|β|) + c + u|ỹ|/(1 − u), so A ≤ 3.071u|ỹ| + 2.0701u·max|β| +
//! 1.0001c (split: 5.081u|ỹ| + 4.081u·max|β| + 1.0001c). With K = 1.03·r_h·(bound of
//! |e_m|)·max|γ| + 2^-149·(max|γ| + 1) + 2.1u·max|β| (split 4.2u), the lane's error bound
//! E = 3.2u|ỹ| + 1.01K (split: 5.25u|ỹ| + 1.01K), computed in f32 with one fused
//! multiply-add of constants rounded to f32 (each rounding within a factor 1 − u below:
//! 3.2(1 − u)² > 3.071, 5.25(1 − u)² > 5.081, 1.01(1 − u)² > 1.0011), exceeds A. The
//! lane is kept
//! when E is below the distance from ỹ to the nearest rounding midpoint of the 16-bit
//! format ([`CertainTest`]): no midpoint lies between ỹ and y and y is not one, so both
//! round to the same value, which the store writes. Midpoints are 2^(23−p) f32-ulps apart
//! (p the format's significand bits), so a random lane is reported with probability about
//! E/2^(22−p) ulps: ≈ 0.2 % of f16 lanes, 0.02 % of bf16 lanes (in the rows of
//! `ordinary_rows_stay_on_the_f32_path`, β up to 0.5), where the f64 path is run
//! again on their vector. The floor of E is at least cap × the format's lowest kept
//! magnitude (2^-14 for f16, below which its grid is fixed and the midpoint pattern does
//! not apply; 2^-100 for bf16), so no lane below it is kept: the distance is at most
//! cap·|midpoint|, and the midpoint lies in ỹ's binade, below that power of two. A lane
//! whose ỹ is ±∞ or NaN has E = ∞ or NaN and a NaN midpoint pattern, so a NaN distance:
//! it is reported.
//!
//! What rows take the f64 path whole: LayerNorm rows whose shift was not accepted
//! (m² > 8σ², the statistics bound does not hold), rows wider than about 2^25, and rows
//! whose constants are not finite or normal (a NaN or ∞ in γ or β, r̂ beyond f32). On the
//! path, then, every value is finite, and the values of the reported lanes (computed on the
//! f64 path, rounded to the format) go back through f32 exactly to be stored with the rest.
//!
//! The tests check the bound against the exact reference (lane by lane, in every form:
//! the largest error took 0.69 of its bound in f16, 0.61 in bf16), and that ordinary rows
//! keep nearly every lane on the f32 path.

use super::normalize::{affine, Normalize, RowConstants};
use super::params::{Param, ParamsMax};
use super::statistics::CenteredStats;
use super::WIDEN_MAX_D;
use crate::cpu;
use crate::dtype::Dtype;
use crate::element::{Element, F32PathFormat};
use crate::simd::{CertainTest, Simd};
use crate::Vectorized;

/// The narrowest rows that take the f32 path (where the row allows it) on AVX-512, whose
/// sixteen f32 lanes are one register, on most CPUs ([`min_d`] gives the exceptions);
/// elsewhere rows wider than [`WIDEN_MAX_D`] do.
pub(crate) const F32_PATH_MIN_D: usize = 4096;

/// The narrowest rows of `format` that take the f32 path on AVX-512 on a CPU of `class`:
/// [`F32_PATH_MIN_D`], except on AMD's family 25 (with AVX-512: Zen 4), where bf16 rows take
/// it from 1024 and f16 rows from 2048.
///
/// Narrower rows stay on the f64 path, widened once, which is as fast or faster there:
/// 16384 × 1024 f16 LayerNorm on Zen 3, 2 threads, 4.2–4.6 ms against 5.0–5.2 on the f32
/// path, whose reported lanes, in about 3 % of f16 blocks, cost a mispredicted branch and
/// a pass of f64 code each. On an Emerald Rapids Xeon (one thread, rows in cache,
/// best-of timings, the f32 path's time over the f64 path's), AVX-512: 1.15 at 32 × 2048
/// (f16 LayerNorm), 1.12 (bf16 RMSNorm), 0.98–1.23 at 20 × 3072; from d = 4096, where the
/// f64 path's data (the widened row, γ and β in f64: 24 bytes a value) is twice L1, the
/// f32 path is faster: 0.71 (f16 LayerNorm), 0.89 (bf16), 0.84 (f16 RMSNorm) at
/// 16 × 4096, 0.81–0.90 for a single row of 4096, 0.87–0.89 at 8 × 8192; 2 threads,
/// 4096 × 4096 from memory, 0.85, 0.93, 0.87.
///
/// Zen 4 runs 512-bit f64 arithmetic and conversions at half the rate of 256-bit ones, so
/// that the f64 path costs it more and the f32 path pays from narrower rows. Measured on
/// a 2-vCPU EPYC (family 25 model 17, `native-avx512bf16`) with `benches/ab.py`, the f32
/// path from 1024 against the rule above, medians of the paired ratios new/old:
/// - one thread, rows in cache, 20 rounds: at 32 × 2048 LayerNorm bf16 0.873, f16 0.927,
///   RMSNorm bf16 0.886, f16 0.946; at 64 × 1024 bf16 0.946 and 0.929, f16 1.050 and
///   1.000; at 128 × 512 (no row changes path) 0.989–1.001;
/// - 2 threads, from memory, 20 rounds: at 8192 × 2048 LayerNorm bf16 0.726, f16 0.877,
///   RMSNorm bf16 0.731, f16 0.817; at 16384 × 1024 bf16 0.801 and 0.954, f16 1.033 and
///   1.062.
///
/// Hence bf16 from 1024 (its conversion to bf16 is one instruction for 32 values, f16's
/// one for 16) and f16 from 2048. Zen 3, AMD's other family-25 cores, has no AVX-512.
pub(crate) fn min_d(format: Dtype, class: cpu::Class) -> usize {
    match (class, format) {
        (cpu::Class::AmdFamily25, Dtype::BF16) => 1024,
        (cpu::Class::AmdFamily25, _) => 2048,
        _ => F32_PATH_MIN_D,
    }
}

/// Whether rows of `format` and width d take the f32 path (where the row allows it), on an
/// instruction set whose sixteen f32 lanes are one register (`f32x16_one_register`:
/// AVX-512) or not, on a CPU of `class`. A property of the call alone (d, format,
/// instruction set, CPU), so that the path a row takes does not depend on the batch it
/// comes in (the output bits depend on neither: both paths write the correct rounding;
/// `tests/kernels/determinism.rs` compares them across instruction sets).
///
/// On the AVX2 path (two registers of eight f32, bf16 rounded by integer operations) the
/// f32 path is not faster at 4096: an Emerald Rapids Xeon, 16 × 4096, f16 LayerNorm 0.96
/// and RMSNorm 0.81 but bf16 LayerNorm 1.38; Zen 3, sixteen rows of 4096, 1.13–1.55.
/// There the f32 path keeps to rows wider than [`WIDEN_MAX_D`], which the f64 path would
/// widen from the format twice.
pub(crate) fn applies(
    d: usize,
    format: Dtype,
    f32x16_one_register: bool,
    class: cpu::Class,
) -> bool {
    if f32x16_one_register {
        d >= min_d(format, class)
    } else {
        d > WIDEN_MAX_D
    }
}

/// The format of the f32 path for rows of `T` of width d: `T::F32_PATH` where the path
/// [`applies`], `None` for f32 rows and for rows it does not take.
#[inline(always)]
pub(crate) fn path_format<T: Element>(
    d: usize,
    f32x16_one_register: bool,
    class: cpu::Class,
) -> Option<F32PathFormat> {
    T::F32_PATH.filter(|_| applies(d, T::DTYPE, f32x16_one_register, class))
}

/// f32's unit roundoff, 2^-24.
const U: f64 = 1.0 / (1u64 << 24) as f64;
/// f64's unit roundoff, 2^-53.
const U64: f64 = f64::EPSILON / 2.0;
/// The lane bound's slope and β's coefficient (module comment): rows without the split
/// centering (p̃γ within 2.07u of Y) take 3.2u·|ỹ| + 2.1u·max|β|, 3.2(1 − u)² > 3.071 and
/// 2.1·1.01(1 − u)² > 2.0701; rows with it (4.08u) take 5.25u·|ỹ| + 4.2u·max|β|,
/// 5.25(1 − u)² > 5.081 and 4.2·1.01(1 − u)² > 4.081.
const SLOPE: f64 = 3.2 * U;
const BETA: f64 = 2.1 * U;
const SLOPE_SPLIT: f64 = 5.25 * U;
const BETA_SPLIT: f64 = 4.2 * U;

/// The widest mean offset |μ̂|·r̂ (in units of the row's spread) for which a LayerNorm row
/// takes the fused form ([`Centering::Fused`]): its e_m, u·|μ̂| and more, then adds at
/// most about u·max|γ| to the floor of the lane's bound, against 3.2u·|ỹ| from the
/// rest (a lane of |ỹ| ≈ 1 reported about 30 % more often, the worst case, for two
/// operations fewer per vector of every lane).
const FUSED_MAX_OFFSET: f64 = 1.0;

/// How the f32 path takes the mean out of x (module comment).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Centering {
    /// RMSNorm: nothing (p̃ = x·r_h).
    None,
    /// p̃ = fma(x, r_h, o), o = f32(−μ̂·r_h): rows whose mean is within
    /// [`FUSED_MAX_OFFSET`] spreads of zero.
    Fused { offset: f32 },
    /// p̃ = ((x − m_h) − m_l)·r_h, μ ≈ m_h + m_l: the other LayerNorm rows.
    Split { mean_hi: f32, mean_lo: f32 },
}

/// A row's constants on the f32 path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct F32PathRow {
    pub centering: Centering,
    /// f32(r̂).
    pub scale: f32,
    pub test: CertainTest,
}

/// γ_k = k·u64/(1 − k·u64) for the partial sums of a row of width d (k = ⌈d/16⌉ + 9).
fn sum_error(d: usize) -> f64 {
    let k = (d.div_ceil(16) + 9) as f64 * U64;
    k / (1.0 - k)
}

/// The f32 path's constants for a LayerNorm row, or `None` where it must not run.
pub(crate) fn layer_norm(
    stats: &CenteredStats,
    scale: f64,
    d: usize,
    params: ParamsMax,
    format: F32PathFormat,
) -> Option<F32PathRow> {
    let (c, m) = (stats.shift, stats.mean_shifted);
    // The variance bound (and the mean's below) hold for accepted shifts only.
    let accepted = m * m <= 8.0 * stats.var;
    if !accepted {
        return None;
    }
    // The mean's sum error (Σ|x − c| ≤ d·√(Q/d), Q/d = σ² + m²).
    let sum_error = 1.01 * sum_error(d) * (stats.var + m * m).sqrt();
    let mean = c + m;
    // r_h as the loop takes it (`constants` declines rows where it is not normal).
    let scale32 = scale as f32 as f64;
    let product = -(mean * scale32);
    let offset = product as f32;
    // o is f32(−μ̂·r_h), one rounding of each, not an underflow (a zero o only from a
    // zero product).
    if product.abs() <= FUSED_MAX_OFFSET && (offset.is_normal() || product == 0.0) {
        // e_m ≥ |o + μ·r_h|/r_h: the sum error, μ̂ = c + m rounded, −μ̂·r_h rounded in
        // f64, then to f32.
        let mean_error = sum_error + (U + 3.0 * U64) * mean.abs();
        let centering = Centering::Fused { offset };
        return constants(centering, 1.05 * mean_error, scale, d, params, format);
    }
    let mean_hi = mean as f32;
    let apart = c - mean_hi as f64;
    let mean_lo = (apart + m) as f32;
    // |μ − m_h − m_l|: the sum error, the two f64 roundings of (c − m_h) + m, the f32
    // rounding of m_l.
    let mean_error =
        sum_error + 2.0 * U64 * (2.0 * apart.abs() + m.abs()) + U * (mean_lo as f64).abs();
    let normal = |v: f32| v == 0.0 || v.is_normal();
    if !(normal(mean_hi) && mean_lo.is_finite()) {
        return None;
    }
    let centering = Centering::Split { mean_hi, mean_lo };
    constants(centering, 1.05 * mean_error, scale, d, params, format)
}

/// The f32 path's constants for an RMSNorm row (d̃ = x, exact), or `None`.
pub(crate) fn rms_norm(
    scale: f64,
    d: usize,
    params: ParamsMax,
    format: F32PathFormat,
) -> Option<F32PathRow> {
    constants(Centering::None, 0.0, scale, d, params, format)
}

fn constants(
    centering: Centering,
    mean_error: f64,
    scale: f64,
    d: usize,
    params: ParamsMax,
    format: F32PathFormat,
) -> Option<F32PathRow> {
    // A NaN or ∞ in β: such lanes are NaN, ±∞ or cancelled, left to the f64 path.
    if !params.beta.is_finite() {
        return None;
    }
    let gamma_max = params.gamma;
    // δ_r ≤ u/16 (module comment).
    if 16.0 * sum_error(d) + 4.0 * U64 > U / 16.0 {
        return None;
    }
    let scale32 = scale as f32;
    if !scale32.is_normal() {
        return None;
    }
    let (slope, beta) = match centering {
        Centering::Split { .. } => (SLOPE_SPLIT, BETA_SPLIT),
        Centering::None | Centering::Fused { .. } => (SLOPE, BETA),
    };
    let tiny = f64::from_bits((1023 - 148) << 52); // 2^-148
    let absolute = 1.03 * scale32 as f64 * (mean_error + tiny) * gamma_max
        + tiny / 2.0 * (gamma_max + 1.0)
        + beta * params.beta;
    if !absolute.is_finite() {
        // A NaN or ∞ in γ (which `max` below would drop).
        return None;
    }
    // The lower binade's midpoints are half as far apart: at least |y|·2^(h − 25) ulps away
    // (h = half_bit), the cap on the distance.
    let cap = f64::from_bits(((1023 + format.half_bit - 25) as u64) << 52);
    // 1.01: room for this f64 arithmetic and the rounding to f32.
    let floor = 1.01 * absolute.max(cap * format.lowest);
    if !(floor as f32).is_finite() {
        return None;
    }
    let half = 1u32 << format.half_bit;
    Some(F32PathRow {
        centering,
        scale: scale32,
        test: CertainTest {
            slope: slope as f32,
            floor: floor as f32,
            cap: cap as f32,
            low_mask: 2 * half - 1,
            half,
        },
    })
}

/// The output loop of a row on the f32 path, over its whole pairs of vectors (sixteen
/// values): y written, each vector's lanes that the f32 path cannot keep computed again on
/// the f64 path (before the store: streamed lines are not touched again), and in `flags`
/// the lanes the f64 stores among those reported (one byte per vector of eight, as the
/// f64 loop records them). The row's constants `C` say whether z subtracts the mean
/// ([`Normalize::CENTER`]), the row's [`Centering`] how; `STREAM`: non-temporal stores;
/// `REDO`: the kernels' pass (without it, for the tests: y as the f32 path computes it
/// everywhere, and in `flags` the lanes it cannot keep).
pub(super) struct F32PathPass<
    'a,
    T,
    P,
    C,
    const G: bool,
    const B: bool,
    const STREAM: bool,
    const REDO: bool,
> {
    pub x: &'a [[T; 16]],
    pub gamma: &'a [[P; 16]],
    pub beta: &'a [[P; 16]],
    pub y: &'a mut [[T; 16]],
    pub flags: &'a mut [[u8; 2]],
    // No next row: a row on this path has the next row's lines requested by its
    // statistics pass (`row::requested_by_statistics`), so this loop requests none.
    pub row: F32PathRow,
    /// The f64 path's constants of the row.
    pub constants: C,
}

impl<
        T: Element,
        P: Param,
        C: RowConstants,
        const G: bool,
        const B: bool,
        const STREAM: bool,
        const REDO: bool,
    > Vectorized for F32PathPass<'_, T, P, C, G, B, STREAM, REDO>
{
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        // One loop per form of centering (a constant in the loop); RMSNorm's rows have
        // none, and compile one loop only.
        let center = <C::N<S> as Normalize<S>>::CENTER;
        if center && matches!(self.row.centering, Centering::Fused { .. }) {
            self.rows::<S, true>(s)
        } else {
            self.rows::<S, false>(s)
        }
    }
}

impl<
        T: Element,
        P: Param,
        C: RowConstants,
        const G: bool,
        const B: bool,
        const STREAM: bool,
        const REDO: bool,
    > F32PathPass<'_, T, P, C, G, B, STREAM, REDO>
{
    /// The loop, for rows whose centering is [`Centering::Fused`] (`FUSED`) or not.
    #[inline(always)]
    fn rows<S: Simd, const FUSED: bool>(self, s: S) {
        // γ and β in the row's format, loaded in the lane order of its x (see
        // `Element::elements16`): `normalize` never widens them for rows on this path.
        debug_assert!(!(G || B) || std::mem::size_of::<P>() == std::mem::size_of::<T>());
        let c = Splats {
            lanes: LaneConstants::new(s, &self.row),
            test: self.row.test,
            wide: self.constants.vectors(s),
        };
        let len = self.y.len();
        let src = Blocks {
            x: &self.x[..len],
            gamma: if G { &self.gamma[..len] } else { &[] },
            beta: if B { &self.beta[..len] } else { &[] },
        };
        let (y, flags) = (self.y, &mut self.flags[..len]);
        // Two blocks at a time (bf16 loads and stores them as a pair on AVX-512; elsewhere
        // a pair is two blocks); an odd last block alone.
        for k in 0..len / 2 {
            let j = 2 * k;
            let out = pair_mut(&mut y[j..j + 2]);
            let reported = src.write_pair::<S, _, G, B, FUSED, STREAM, REDO>(s, &c, j, out);
            flags[j..j + 2].copy_from_slice(&reported);
        }
        if len % 2 == 1 {
            let j = len - 1;
            flags[j] = src.write::<S, _, G, B, FUSED, STREAM, REDO>(s, &c, j, &mut y[j]);
        }
    }
}

/// Two consecutive blocks as one array of 32 values.
#[inline(always)]
fn pair<X>(blocks: &[[X; 16]]) -> &[X; 32] {
    blocks.as_flattened().try_into().expect("two blocks")
}

/// Two consecutive blocks as one array of 32 values, to write.
#[inline(always)]
fn pair_mut<X>(blocks: &mut [[X; 16]]) -> &mut [X; 32] {
    blocks.as_flattened_mut().try_into().expect("two blocks")
}

/// A row's constants as vectors, for both paths.
struct Splats<S: Simd, N> {
    lanes: LaneConstants<S>,
    test: CertainTest,
    wide: N,
}

/// The constants of [`LaneConstants::values`] as vectors: `center` holds o (and zero)
/// for the fused form, m_h and m_l for the split one, zeros for RMSNorm.
struct LaneConstants<S: Simd> {
    center: [S::F32x16; 2],
    scale: S::F32x16,
}

impl<S: Simd> LaneConstants<S> {
    #[inline(always)]
    fn new(s: S, row: &F32PathRow) -> LaneConstants<S> {
        let center = match row.centering {
            Centering::None => [0.0, 0.0],
            Centering::Fused { offset } => [offset, 0.0],
            Centering::Split { mean_hi, mean_lo } => [mean_hi, mean_lo],
        };
        LaneConstants {
            center: center.map(|v| s.f32x16_splat(v)),
            scale: s.f32x16_splat(row.scale),
        }
    }

    /// ỹ of sixteen lanes (module comment): `center` for LayerNorm (a constant where this
    /// is inlined), `FUSED` for its rows of [`Centering::Fused`]; absent γ and β (`G`, `B`
    /// false) are not read.
    #[inline(always)]
    fn values<const G: bool, const B: bool, const FUSED: bool>(
        &self,
        s: S,
        center: bool,
        x: S::F32x16,
        gamma: S::F32x16,
        beta: S::F32x16,
    ) -> S::F32x16 {
        let [first, second] = self.center;
        let p = match (center, FUSED) {
            (false, _) => s.f32x16_mul(x, self.scale),
            (true, true) => s.f32x16_fma(x, self.scale, first),
            (true, false) => s.f32x16_mul(s.f32x16_sub(s.f32x16_sub(x, first), second), self.scale),
        };
        // γ·p̃ + β with one rounding.
        match (G, B) {
            (true, true) => s.f32x16_fma(p, gamma, beta),
            (true, false) => s.f32x16_mul(p, gamma),
            (false, true) => s.f32x16_add(p, beta),
            (false, false) => p,
        }
    }
}

/// What the loop reads, as local slices.
#[derive(Clone, Copy)]
struct Blocks<'a, T, P> {
    x: &'a [[T; 16]],
    gamma: &'a [[P; 16]],
    beta: &'a [[P; 16]],
}

impl<T: Element, P: Param> Blocks<'_, T, P> {
    /// Block j of y, stored; the lanes the f64 stores reported, one byte per eight.
    #[inline(always)]
    fn write<
        S: Simd,
        N: Normalize<S>,
        const G: bool,
        const B: bool,
        const FUSED: bool,
        const STREAM: bool,
        const REDO: bool,
    >(
        self,
        s: S,
        c: &Splats<S, N>,
        j: usize,
        y: &mut [T; 16],
    ) -> [u8; 2] {
        let x = T::load16(s, &self.x[j]);
        let zero = s.f32x16_splat(0.0);
        let gamma = if G {
            P::load16(s, &self.gamma[j])
        } else {
            zero
        };
        let beta = if B { P::load16(s, &self.beta[j]) } else { zero };
        let out = c.lanes.values::<G, B, FUSED>(s, N::CENTER, x, gamma, beta);
        let uncertain = s.f32x16_uncertain(out, &c.test);
        if !REDO {
            T::store16(s, out, y, STREAM);
            return T::elements16(s, uncertain).to_le_bytes();
        }
        if uncertain == 0 {
            T::store16(s, out, y, STREAM);
            return [0, 0];
        }
        // Lanes to write as the f64 path writes them (in about 3 % of f16 blocks).
        let mut block = [T::default(); 16];
        T::store16(s, out, &mut block, false);
        let reported = self.redo::<S, N, G, B>(s, c, j, T::elements16(s, uncertain), &mut block);
        // Stored the way the other blocks are (a plain store among streamed ones costs
        // more than the whole block): the values go through f32 exactly, none being NaN
        // (the row, γ and β are finite on this path).
        T::store16(s, T::load16(s, &block), y, STREAM);
        reported
    }

    /// Blocks j and j + 1 of y, stored as a pair ([`Element::store16_pair`]); as
    /// [`Blocks::write`], the reports of each.
    #[inline(always)]
    fn write_pair<
        S: Simd,
        N: Normalize<S>,
        const G: bool,
        const B: bool,
        const FUSED: bool,
        const STREAM: bool,
        const REDO: bool,
    >(
        self,
        s: S,
        c: &Splats<S, N>,
        j: usize,
        y: &mut [T; 32],
    ) -> [[u8; 2]; 2] {
        let x = T::load16_pair(s, pair(&self.x[j..j + 2]));
        let zero = s.f32x16_splat(0.0);
        let gamma = if G {
            P::load16_pair(s, pair(&self.gamma[j..j + 2]))
        } else {
            [zero; 2]
        };
        let beta = if B {
            P::load16_pair(s, pair(&self.beta[j..j + 2]))
        } else {
            [zero; 2]
        };
        // Written out, not through closures, which need not inherit the instruction set.
        let out = [
            c.lanes
                .values::<G, B, FUSED>(s, N::CENTER, x[0], gamma[0], beta[0]),
            c.lanes
                .values::<G, B, FUSED>(s, N::CENTER, x[1], gamma[1], beta[1]),
        ];
        let uncertain = [
            s.f32x16_uncertain(out[0], &c.test),
            s.f32x16_uncertain(out[1], &c.test),
        ];
        if !REDO {
            T::store16_pair(s, out, y, STREAM);
            return T::elements16_pair(s, uncertain).map(u16::to_le_bytes);
        }
        if uncertain == [0, 0] {
            T::store16_pair(s, out, y, STREAM);
            return [[0, 0]; 2];
        }
        // As in `write`, each block's uncertain elements computed again on the f64 path.
        let elements = T::elements16_pair(s, uncertain);
        let mut blocks = [T::default(); 32];
        T::store16_pair(s, out, &mut blocks, false);
        let mut reported = [[0u8; 2]; 2];
        for (i, block) in blocks.as_chunks_mut::<16>().0.iter_mut().enumerate() {
            if elements[i] != 0 {
                reported[i] = self.redo::<S, N, G, B>(s, c, j + i, elements[i], block);
            }
        }
        T::store16_pair(s, T::load16_pair(s, &blocks), y, STREAM);
        reported
    }

    /// The elements `uncertain` of block j (bit e: element e), computed on the f64 path
    /// and written into `block` (the block as the f32 path rounded it, in element order);
    /// the lanes the f64 stores reported, one byte per eight.
    #[inline(always)]
    fn redo<S: Simd, N: Normalize<S>, const G: bool, const B: bool>(
        self,
        s: S,
        c: &Splats<S, N>,
        j: usize,
        uncertain: u16,
        block: &mut [T; 16],
    ) -> [u8; 2] {
        let mut reported = [0u8; 2];
        for (half, r) in reported.iter_mut().enumerate() {
            let lanes = (uncertain >> (8 * half)) as u8;
            if lanes == 0 {
                continue;
            }
            let at = 8 * half..8 * half + 8;
            let eight = |v: &[P; 16]| -> [P; 8] { v[at.clone()].try_into().expect("8 lanes") };
            let zero = s.splat(0.0);
            let g = if G {
                P::load(s, &eight(&self.gamma[j]))
            } else {
                zero
            };
            let b = if B {
                P::load(s, &eight(&self.beta[j]))
            } else {
                zero
            };
            let x8: &[T; 8] = self.x[j][at.clone()].try_into().expect("8 lanes");
            let value = affine::<S, G, B>(s, c.wide.z(s, T::load(s, x8)), g, b);
            let mut again = [T::default(); 8];
            *r = T::reported_lanes(s, T::store(s, value, &mut again, c.wide.filter())) & lanes;
            for (l, v) in again.into_iter().enumerate() {
                if lanes & (1 << l) != 0 {
                    block[8 * half + l] = v;
                }
            }
        }
        reported
    }
}

#[cfg(test)]
mod tests;
