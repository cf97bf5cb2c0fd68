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

use super::cpu;
use super::element::Element;
use super::row::{affine, CenteredStats, Normalize, Param, RowConstants, WIDEN_MAX_D};
use super::simd::{CertainTest, Simd};
use super::Vectorized;
use crate::dtype::Dtype;

/// What the f32 path needs of a 16-bit format.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NarrowFormat {
    /// The rounding midpoints' bit in the low bits of an f32: 23 − p for a significand of
    /// p bits.
    pub half_bit: u32,
    /// The smallest magnitude the path keeps (see the module comment).
    pub lowest: f64,
}

/// The narrowest rows that take the f32 path (where the row allows it) on AVX-512, whose
/// sixteen f32 lanes are one register, on most CPUs ([`min_d`] gives the exceptions);
/// elsewhere rows wider than [`WIDEN_MAX_D`] do.
pub(crate) const NARROW_MIN_D: usize = 4096;

/// The narrowest rows of `format` that take the f32 path on AVX-512 on a CPU of `class`:
/// [`NARROW_MIN_D`], except on AMD's family 25 (with AVX-512: Zen 4), where bf16 rows take
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
        _ => NARROW_MIN_D,
    }
}

/// Whether rows of `format` and width d take the f32 path (where the row allows it), on an
/// instruction set whose sixteen f32 lanes are one register (`f32x16_one_register`:
/// AVX-512) or not, on a CPU of `class`. A property of the call alone (d, format,
/// instruction set, CPU), so that the path a row takes does not depend on the batch it
/// comes in (the output bits depend on neither: both paths write the correct rounding;
/// `tests/kernels_determinism.rs` compares them across instruction sets).
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

/// The format of the f32 path for rows of `T` of width d: `T::NARROW` where the path
/// [`applies`], `None` for f32 rows and for rows it does not take.
#[inline(always)]
pub(crate) fn path_format<T: Element>(
    d: usize,
    f32x16_one_register: bool,
    class: cpu::Class,
) -> Option<NarrowFormat> {
    T::NARROW.filter(|_| applies(d, T::DTYPE, f32x16_one_register, class))
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
pub(crate) struct NarrowRow {
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
    format: NarrowFormat,
) -> Option<NarrowRow> {
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
    format: NarrowFormat,
) -> Option<NarrowRow> {
    constants(Centering::None, 0.0, scale, d, params, format)
}

/// The largest magnitudes of γ (1 when absent) and β (0 when absent); NaN where one is NaN.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParamsMax {
    pub gamma: f64,
    pub beta: f64,
}

impl ParamsMax {
    /// Neither γ nor β.
    pub const NONE: ParamsMax = ParamsMax {
        gamma: 1.0,
        beta: 0.0,
    };
}

fn constants(
    centering: Centering,
    mean_error: f64,
    scale: f64,
    d: usize,
    params: ParamsMax,
    format: NarrowFormat,
) -> Option<NarrowRow> {
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
    Some(NarrowRow {
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
pub(super) struct NarrowPass<
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
    pub row: NarrowRow,
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
    > Vectorized for NarrowPass<'_, T, P, C, G, B, STREAM, REDO>
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
    > NarrowPass<'_, T, P, C, G, B, STREAM, REDO>
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
    fn new(s: S, row: &NarrowRow) -> LaneConstants<S> {
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
mod tests {
    use super::{applies, min_d, path_format, NARROW_MIN_D, WIDEN_MAX_D};
    use crate::dtype::Dtype;
    use crate::exact::{ElementInput, RowKind, RowStats};
    use crate::kernels::element::Element;
    use crate::kernels::row::narrow_blocks;
    use crate::kernels::simd::{uncertain_lane, CertainTest};
    use crate::problem::{EpsConvention, Op};
    use half::{bf16, f16};
    use rand_chacha::rand_core::{RngCore, SeedableRng};

    /// Uniform values in center ± spread, rounded to the format.
    fn random<T: Element>(rng: &mut impl RngCore, n: usize, center: f64, spread: f64) -> Vec<T> {
        (0..n)
            .map(|_| {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                T::from_bits(T::DTYPE.round_f64(center + spread * (2.0 * u - 1.0)))
            })
            .collect()
    }

    fn values<T: Element>(v: &[T]) -> Vec<f64> {
        v.iter().map(|t| T::DTYPE.to_f64(t.to_bits())).collect()
    }

    /// Element i's input to the exact reference: γ and β empty where absent (1 and 0).
    fn input_at<T: Element>(xs: &[f64], gamma: &[T], beta: &[T], i: usize) -> ElementInput {
        let value = |v: &T| T::DTYPE.to_f64(v.to_bits());
        ElementInput {
            x: xs[i],
            gamma: gamma.get(i).map_or(1.0, value),
            beta: beta.get(i).map_or(0.0, value),
        }
    }

    /// Rows that stress the bound, each as (x, γ, β): ordinary ones, large offsets with a
    /// small spread, β cancelling γ·z in every other lane (|y| ≪ |γ·z|), outputs around
    /// the smallest kept magnitude, and (bf16) outputs near the top of the range.
    fn hard_rows<T: Element>(d: usize, seed: u64) -> Vec<(Vec<T>, Vec<T>, Vec<T>)> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut rows = Vec::new();
        // (x center, x spread, γ center, β spread): the mean far from zero against the
        // spread (m_l matters), outputs near 2^-14, β much larger than γ·z (the final
        // rounding matters).
        for (center, spread, g_center, b_spread) in [
            (0.0, 1.0, 1.0, 0.5),
            // |μ|·r ≈ 0.87: the fused form near its widest offset.
            (0.5, 1.0, 1.0, 0.5),
            (3.0, 0.5, 1.0, 0.5),
            (200.0, 4.0, 1.0, 0.5),
            (-1000.0, 60.0, 1.0, 0.5),
            (2000.0, 1.0, 1.0, 0.5),
            (4000.0, 40.0, 1.0, 0.5),
            (0.0, 1.0, 2e-5, 1e-5),
            (0.0, 1.0, 1e-3, 2.0),
        ] {
            let x = random::<T>(&mut rng, d, center, spread);
            let g = random::<T>(&mut rng, d, g_center, 0.5 * g_center);
            let b = random::<T>(&mut rng, d, 0.0, b_spread);
            rows.push((x, g, b));
        }
        // β = −(γ·z rounded to the format) in every other lane: y is what the rounding of
        // γ·z left over.
        let x = random::<T>(&mut rng, d, 0.25, 1.0);
        let g = random::<T>(&mut rng, d, 1.0, 0.5);
        let xs = values(&x);
        let mean = xs.iter().sum::<f64>() / d as f64;
        let var = xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / d as f64;
        let gs = values(&g);
        let b = (0..d)
            .map(|i| {
                let z = (xs[i] - mean) / (var + 1e-5).sqrt();
                let cancel = if i % 2 == 0 { -gs[i] * z } else { 0.0 };
                T::from_bits(T::DTYPE.round_f64(cancel))
            })
            .collect();
        rows.push((x, g, b));
        if T::DTYPE == Dtype::BF16 {
            let x = random::<T>(&mut rng, d, 0.0, 1.0);
            let g = random::<T>(&mut rng, d, 1e38, 0.5e38);
            let b = random::<T>(&mut rng, d, 0.0, 1e38);
            rows.push((x, g, b));
        }
        rows
    }

    /// Every value the f32 path keeps is the correct rounding of the exact result (the
    /// exact reference decides), for both operations, with and without γ and β.
    #[test]
    fn kept_values_are_correctly_rounded() {
        fn check<T: Element>() -> (usize, usize) {
            let d = 2048;
            let (mut kept, mut total) = (0, 0);
            for (n, (x, g, b)) in hard_rows::<T>(d, 11).into_iter().enumerate() {
                for op in Op::ALL {
                    for affine in [true, false] {
                        let (g, b) = if affine {
                            (&g[..], &b[..])
                        } else {
                            (&[][..], &[][..])
                        };
                        let Some((y, reported)) = narrow_blocks(op, &x, g, b, 1e-5) else {
                            continue;
                        };
                        let eps = rug::Rational::from_f64(1e-5f32 as f64).unwrap();
                        let xs = values(&x);
                        let stats =
                            RowStats::compute(&xs, T::DTYPE, op, EpsConvention::Inside, &eps);
                        assert_eq!(stats.kind, RowKind::Defined);
                        for i in (0..y.len()).filter(|&i| !reported[i]) {
                            let input = input_at(&xs, g, b, i);
                            let want = crate::exact::Element::new(&stats, input).round(T::DTYPE);
                            assert_eq!(
                                y[i].to_bits(),
                                want,
                                "{} {op:?} row {n} affine={affine} i={i}",
                                T::DTYPE
                            );
                        }
                        kept += reported.iter().filter(|&&r| !r).count();
                        total += reported.len();
                    }
                }
            }
            (kept, total)
        }
        for (dt, (kept, total)) in [("f16", check::<f16>()), ("bf16", check::<bf16>())] {
            // The path ran: most values were kept, and so checked.
            eprintln!("{dt}: {kept} of {total} kept");
            assert!(kept * 10 > total * 8, "{dt}: {kept} of {total} kept");
        }
    }

    /// The lane bound E = slope·|ỹ| + floor (module comment) covers |ỹ − y| in every lane
    /// of the hard rows, LayerNorm in either form of centering and RMSNorm, with and
    /// without γ and β, y from MPFR. The largest share of the bound an error took is
    /// printed per form; the fused form's e_m (u·|μ̂| and more) is what covers lanes with
    /// ỹ ≈ 0 of rows whose mean is off zero.
    #[test]
    fn the_bound_covers_every_lane_in_every_form() {
        use super::{Centering, LaneConstants};
        use crate::kernels::row::{layer_norm_stats, sum_of_squares};
        use crate::kernels::simd::{Scalar, Simd};
        /// The loop's ỹ of a row in its form of centering.
        fn values_of<const G: bool, const B: bool>(
            lanes: &LaneConstants<Scalar>,
            centering: Centering,
            x: [f32; 16],
            gamma: [f32; 16],
            beta: [f32; 16],
        ) -> [f32; 16] {
            match centering {
                Centering::None => lanes.values::<G, B, false>(Scalar, false, x, gamma, beta),
                Centering::Fused { .. } => lanes.values::<G, B, true>(Scalar, true, x, gamma, beta),
                Centering::Split { .. } => {
                    lanes.values::<G, B, false>(Scalar, true, x, gamma, beta)
                }
            }
        }
        /// The worst share of the bound per form: RMSNorm, fused, split.
        fn check<T: Element>() -> [f64; 3] {
            let (d, s, eps) = (2048, Scalar, 1e-5f32);
            let exact_eps = rug::Rational::from_f64(eps as f64).unwrap();
            let mut worst = [0f64; 3];
            let mut rows = [0; 3];
            let format = T::NARROW.unwrap();
            for (x, g, b) in hard_rows::<T>(d, 5) {
                let xs = values(&x);
                // The row's statistics, once for both ops' affine and plain forms.
                let stats = layer_norm_stats(s, &x, &mut [], None).expect("finite rows");
                let layer_norm_scale = 1.0 / (stats.var + eps as f64).sqrt();
                let mean_square = sum_of_squares(s, &x) / d as f64;
                let rms_norm_scale = 1.0 / (mean_square + eps as f64).sqrt();
                for op in Op::ALL {
                    let exact =
                        RowStats::compute(&xs, T::DTYPE, op, EpsConvention::Inside, &exact_eps);
                    for affine in [true, false] {
                        let (g, b) = if affine {
                            (&g[..], &b[..])
                        } else {
                            (&[][..], &[][..])
                        };
                        let params = super::ParamsMax {
                            gamma: if affine { T::abs_max(g) } else { 1.0 },
                            beta: T::abs_max(b),
                        };
                        let row = match op {
                            Op::LayerNorm => {
                                super::layer_norm(&stats, layer_norm_scale, d, params, format)
                            }
                            Op::RmsNorm => super::rms_norm(rms_norm_scale, d, params, format),
                        };
                        let Some(row) = row else { continue };
                        let form = match row.centering {
                            Centering::None => 0,
                            Centering::Fused { .. } => 1,
                            Centering::Split { .. } => 2,
                        };
                        rows[form] += 1;
                        let lanes = LaneConstants::new(s, &row);
                        let t = row.test;
                        for j in 0..d / 16 {
                            let load =
                                |v: &[T]| T::load16(s, v[16 * j..][..16].try_into().unwrap());
                            let y = if affine {
                                let (x, g, b) = (load(&x), load(g), load(b));
                                values_of::<true, true>(&lanes, row.centering, x, g, b)
                            } else {
                                let zero = s.f32x16_splat(0.0);
                                values_of::<false, false>(
                                    &lanes,
                                    row.centering,
                                    load(&x),
                                    zero,
                                    zero,
                                )
                            };
                            for (l, &lane) in y.iter().enumerate() {
                                let input = input_at(&xs, g, b, 16 * j + l);
                                let value = crate::exact::Element::new(&exact, input).mpfr_value();
                                let error = (value - lane as f64).abs().to_f64();
                                let bound = (lane as f64).abs() * t.slope as f64 + t.floor as f64;
                                worst[form] = worst[form].max(error / bound);
                            }
                        }
                    }
                }
            }
            assert!(
                rows.iter().all(|&n| n > 0),
                "{}: rows per form {rows:?}",
                T::DTYPE
            );
            worst
        }
        for (dt, worst) in [("f16", check::<f16>()), ("bf16", check::<bf16>())] {
            eprintln!(
                "{dt}: the largest error took {:.3} (RMSNorm), {:.3} (fused), {:.3} (split) of its bound",
                worst[0], worst[1], worst[2]
            );
            assert!(worst.iter().all(|&w| w <= 1.0), "{dt}: {worst:?}");
        }
    }

    /// LayerNorm rows take the fused form where their mean is within
    /// `FUSED_MAX_OFFSET` spreads of zero, the split form beyond; RMSNorm rows neither.
    #[test]
    fn the_fused_form_is_taken_near_zero_only() {
        use super::{Centering, FUSED_MAX_OFFSET};
        use crate::kernels::row::CenteredStats;
        let format = f16::NARROW.unwrap();
        let params = super::ParamsMax::NONE;
        let form = |mean: f64, var: f64| {
            let stats = CenteredStats {
                shift: 0.0,
                mean_shifted: mean,
                var,
                passes: 1,
            };
            let scale = 1.0 / var.sqrt();
            super::layer_norm(&stats, scale, 4096, params, format).map(|r| r.centering)
        };
        assert!(matches!(form(0.0, 1.0), Some(Centering::Fused { offset }) if offset == 0.0));
        assert!(matches!(form(0.5, 4.0), Some(Centering::Fused { offset }) if offset == -0.25));
        let edge = FUSED_MAX_OFFSET;
        assert!(matches!(form(edge, 1.0), Some(Centering::Fused { .. })));
        assert!(matches!(form(-edge, 1.0), Some(Centering::Fused { .. })));
        let beyond = edge * (1.0 + 1e-9);
        assert!(matches!(form(beyond, 1.0), Some(Centering::Split { .. })));
        assert!(
            matches!(form(3.0, 2.0), Some(Centering::Split { mean_hi, mean_lo })
            if mean_hi == 3.0 && mean_lo == 0.0)
        );
        let rms = super::rms_norm(1.0, 4096, params, format).unwrap();
        assert_eq!(rms.centering, Centering::None);
    }

    /// Exact ties and values just above them in f16's subnormal range, where its grid is
    /// fixed (2^-24) and its midpoints are not where the bit pattern of the normal range
    /// puts them: RMSNorm of ones with ε = 3 gives z = 1/2 exactly, with ε one f32 step
    /// below 3 a hair above 1/2 (an f32 rounds it to 1/2); γ = k·2^-24, k odd, puts y on
    /// (or just above) the midpoints. Every value kept must be the correct rounding.
    #[test]
    fn f16_subnormal_midpoints_are_not_kept_wrongly() {
        let d = 1024;
        let x = vec![f16::ONE; d];
        let gamma: Vec<f16> = (0..d)
            .map(|i| f16::from_bits((2 * (i % 300) + 1) as u16))
            .collect();
        for eps in [3.0f32, 3.0f32.next_down()] {
            let Some((y, reported)) = narrow_blocks(Op::RmsNorm, &x, &gamma, &[], eps) else {
                panic!("the row may take the path");
            };
            let xs = values(&x);
            let e = rug::Rational::from_f64(eps as f64).unwrap();
            let stats = RowStats::compute(&xs, Dtype::F16, Op::RmsNorm, EpsConvention::Inside, &e);
            for i in (0..d).filter(|&i| !reported[i]) {
                let input = ElementInput {
                    x: 1.0,
                    gamma: gamma[i].to_f64(),
                    beta: 0.0,
                };
                let want = crate::exact::Element::new(&stats, input).round(Dtype::F16);
                assert_eq!(y[i].to_bits() as u64, want, "eps={eps} i={i}");
            }
        }
    }

    /// [`uncertain_lane`]'s contract, checked exactly as `needs_exact`'s is (`row.rs`)
    /// about every kind of rounding boundary of f16 and bf16 (`kernels::boundaries`), with
    /// the tests of real rows (RMSNorm with and without γ and β, LayerNorm in its split
    /// form), their floors raised to bounds from 2^-40 to 2^10 times a lane's distance to
    /// its boundary:
    /// - a lane it keeps rounds as every value within its bound fma(|y|, slope, floor),
    ///   as the lane computes it in f32, does (`boundaries::bound_keeps_rounding`);
    /// - it keeps every lane farther than 4 bounds from any boundary (its distance is at
    ///   least half the true one), so it does not hand back lanes that cannot be wrong;
    /// - it keeps no NaN or ±∞.
    #[test]
    fn uncertain_lane_keeps_only_lanes_their_bound_keeps_on_one_side() {
        use super::{Centering, ParamsMax};
        use crate::kernels::boundaries::{
            assert_both_answers_given, bound_keeps_rounding, distance_to_boundary, points,
            BOUND_FACTORS,
        };
        use crate::kernels::row::CenteredStats;
        fn check<T: Element>(seed: u64) -> (usize, usize) {
            let (dt, format) = (T::DTYPE, T::NARROW.unwrap());
            let rms = |gamma, beta| {
                let params = ParamsMax { gamma, beta };
                super::rms_norm(1.0, 16, params, format).unwrap().test
            };
            let stats = CenteredStats {
                shift: 0.0,
                mean_shifted: 3.0,
                var: 2.0,
                passes: 1,
            };
            let split =
                super::layer_norm(&stats, 0.5f64.sqrt(), 4096, ParamsMax::NONE, format).unwrap();
            assert!(matches!(split.centering, Centering::Split { .. }));
            let (mut kept, mut total) = (0, 0);
            for (y, m) in points::<T>(seed, Dtype::F32) {
                let y = y as f32;
                let distance = distance_to_boundary::<T>(y as f64);
                for base in [rms(1.0, 0.0), rms(4.0, 100.0), split.test] {
                    for f in BOUND_FACTORS {
                        let raised = (f * distance.unwrap_or(0.0)) as f32;
                        let t = CertainTest {
                            floor: base.floor.max(raised),
                            ..base
                        };
                        let bound = y.abs().mul_add(t.slope, t.floor);
                        total += 1;
                        if !uncertain_lane(y, &t) {
                            kept += 1;
                            assert!(
                                y.is_finite() && bound_keeps_rounding::<T>(y as f64, bound as f64),
                                "{dt}: y = {y:e} kept with bound {bound:e} (boundary {m:e})"
                            );
                        }
                        if distance.is_some_and(|d| d > 4.0 * bound as f64) {
                            assert!(
                                !uncertain_lane(y, &t),
                                "{dt}: y = {y:e} handed back with bound {bound:e} (boundary {m:e})"
                            );
                        }
                    }
                }
            }
            for y in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                let t = rms(1.0, 0.0);
                assert!(uncertain_lane(y, &t), "{dt}: {y}");
            }
            (kept, total)
        }
        for (dt, (kept, total)) in [("f16", check::<f16>(21)), ("bf16", check::<bf16>(22))] {
            assert_both_answers_given(dt, kept, total);
        }
    }

    /// The distance to the lower binade's midpoints bounds the test too: just above 1, the
    /// nearest f16 midpoint is 1 − 2^-12 (2048 f32-ulps of 1 below), not 1 + 2^-11 (4096
    /// above), so a bound of 3000 ulps must report the lane; a bound of a few ulps keeps it,
    /// and an exact midpoint is always reported.
    #[test]
    fn the_lower_binade_bounds_the_distance() {
        let format = f16::NARROW.unwrap();
        let params = super::ParamsMax {
            gamma: 1.0,
            beta: 0.0,
        };
        let row = super::rms_norm(1.0, 16, params, format).unwrap();
        let t = &row.test;
        let ulp = f32::EPSILON;
        // A floor of 3000 ulps of 1 (the row's bound is a few).
        let wide = CertainTest {
            floor: 3000.0 * ulp,
            ..*t
        };
        assert!(uncertain_lane(1.0 + ulp, &wide));
        assert!(!uncertain_lane(1.0 + 64.0 * ulp, t));
        assert!(uncertain_lane(1.0 + 2f32.powi(-11), t));
        assert!(!uncertain_lane(1.0 + 2f32.powi(-11) + 64.0 * ulp, t));
    }

    /// The f32 path's widths, where sixteen f32 lanes are one register: from 4096 on most
    /// CPUs, and on AMD's family 25 (Zen 4) bf16 from 1024 and f16 from 2048; beyond the
    /// widened rows' limit elsewhere, on every CPU. Never for f32 rows.
    #[test]
    fn the_path_starts_at_its_width_per_instruction_set_format_and_cpu() {
        use crate::kernels::cpu::Class::{AmdFamily25, Intel, Other, SkylakeServer};
        assert_eq!(NARROW_MIN_D, 4096);
        // (class, f16's first width, bf16's)
        for (class, f16_from, bf16_from) in [
            (Intel, 4096, 4096),
            (SkylakeServer, 4096, 4096),
            (AmdFamily25, 2048, 1024),
            (Other, 4096, 4096),
        ] {
            for (format, from) in [(Dtype::F16, f16_from), (Dtype::BF16, bf16_from)] {
                assert_eq!(min_d(format, class), from, "{format:?} {class:?}");
                assert!(!applies(from - 1, format, true, class));
                assert!(applies(from, format, true, class));
                assert!(!applies(WIDEN_MAX_D, format, false, class));
                assert!(applies(WIDEN_MAX_D + 1, format, false, class));
                assert!(applies(WIDEN_MAX_D + 1, format, true, class));
            }
            assert_eq!(
                path_format::<half::f16>(f16_from, true, class),
                half::f16::NARROW
            );
            assert_eq!(path_format::<half::f16>(f16_from - 1, true, class), None);
            assert_eq!(
                path_format::<half::bf16>(bf16_from, true, class),
                half::bf16::NARROW
            );
            assert_eq!(path_format::<half::bf16>(16384, false, class), None);
            for (d, register) in [(4096, true), (16385, false), (1 << 16, true)] {
                assert_eq!(path_format::<f32>(d, register, class), None);
            }
        }
    }

    /// Both 16-bit formats' constants of the f32 path.
    const FORMATS: [super::NarrowFormat; 2] = [f16::NARROW.unwrap(), bf16::NARROW.unwrap()];

    /// Each form of centering, with constants of the split form's kind.
    const EVERY_FORM: [super::Centering; 3] = [
        super::Centering::None,
        super::Centering::Fused { offset: 0.5 },
        super::Centering::Split {
            mean_hi: 300.0,
            mean_lo: 1e-6,
        },
    ];

    /// A finite f64 as an exact rational.
    fn exact(v: f64) -> rug::Rational {
        rug::Rational::from_f64(v).expect("finite")
    }

    /// γ_k = k·2^-53/(1 − k·2^-53) exactly, k = ⌈d/16⌉ + 9: the relative error bound of a
    /// row's f64 sums (module comment), as `sum_error` computes it in f64.
    fn exact_sum_error(d: usize) -> rug::Rational {
        let k = rug::Rational::from((d.div_ceil(16) + 9) as u64) / rug::Rational::from(1u128 << 53);
        k.clone() / (1 - k)
    }

    /// f32(r̂) as r_h = r(1 + ρ) needs |ρ| ≤ u + δ_r with δ_r ≤ 16γ_k + 2^-51 ≤ u/16 (module
    /// comment; γ_k = k·2^-53/(1 − k·2^-53), k = ⌈d/16⌉ + 9). That condition, decided
    /// exactly here, gives the widest row the path takes, 2^25 − 160 values: `constants`
    /// must take a row of that width and decline one value wider, in either format and
    /// form. The f64 arithmetic of the gate and of `sum_error` is what is tested: neither
    /// changes an output bit of rows narrow enough to test against the reference, and
    /// cargo-mutants' changes to it (γ_k as 0, k·9 instead of k + 9, the gate at u
    /// instead of u/16, its 2^-51 subtracted) had passed every other test.
    #[test]
    fn the_path_takes_rows_up_to_the_width_its_statistics_allow() {
        use rug::Rational;
        let allowed = |d: usize| {
            let delta = 16 * exact_sum_error(d) + Rational::from(4) / Rational::from(1u128 << 53);
            delta <= Rational::from(1) / Rational::from(1u128 << 28)
        };
        // The widest allowed width, by bisection (allowed is monotone in d).
        let (mut lo, mut hi) = (16usize, 1usize << 30);
        assert!(allowed(lo) && !allowed(hi));
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if allowed(mid) {
                lo = mid
            } else {
                hi = mid
            }
        }
        assert_eq!(lo, (1 << 25) - 160);
        let params = super::ParamsMax::NONE;
        for format in FORMATS {
            for centering in EVERY_FORM {
                let at = |d| super::constants(centering, 1e-9, 1.0, d, params, format);
                assert!(at(lo).is_some(), "{centering:?}: {lo} declined");
                assert!(at(lo + 1).is_none(), "{centering:?}: {} taken", lo + 1);
            }
        }
    }

    /// Asserts that a row's lane bound covers what the module comment's proof requires,
    /// decided exactly: E = slope·|ỹ| + floor is one f32 fused multiply-add, so E ≥
    /// (slope·|ỹ| + floor)(1 − u), and the proof needs slope·(1 − u) ≥ 3.071u (split:
    /// 5.081u) and floor·(1 − u) ≥ 2.0701u·max|β| + 1.0001c (split: 4.081u·max|β|), with
    /// c = 1.002·r_h·max|γ|·e_m plus 2^-149·(max|γ| + 1) for a bound e_m of the mean's
    /// error; and the floor must reach cap × the format's lowest kept magnitude.
    fn assert_bound_covers(
        row: &super::NarrowRow,
        params: super::ParamsMax,
        e_m: &rug::Rational,
        format: super::NarrowFormat,
        case: &str,
    ) {
        use rug::Rational;
        let ratio = |n: u32, d: u32| Rational::from(n) / Rational::from(d);
        let u = ratio(1, 1 << 24);
        let one_less = Rational::from(1) - &u;
        let split = matches!(row.centering, super::Centering::Split { .. });
        let (slope_needed, beta_needed) = if split {
            (ratio(5081, 1000) * &u, ratio(4081, 1000) * &u)
        } else {
            (ratio(3071, 1000) * &u, ratio(20701, 10000) * &u)
        };
        let underflow =
            Rational::from(1) / (Rational::from(1u64 << 63) * Rational::from(1u128 << 86));
        let gamma = exact(params.gamma);
        let c =
            ratio(1002, 1000) * exact(row.scale as f64) * &gamma * e_m + underflow * (gamma + 1);
        let floor_needed = beta_needed * exact(params.beta) + ratio(10001, 10000) * c;
        let (slope, floor) = (exact(row.test.slope as f64), exact(row.test.floor as f64));
        assert!(slope * &one_less >= slope_needed, "slope: {case}");
        assert!(floor.clone() * &one_less >= floor_needed, "floor: {case}");
        let cap_floor = exact(row.test.cap as f64) * exact(format.lowest);
        assert!(floor >= cap_floor, "cap: {case}");
    }

    /// `constants` against the proof's requirements ([`assert_bound_covers`]) with e_m the
    /// bound it is given, over a grid from a tiny spread to a huge one, γ up to 2^60 (where
    /// the underflow term outweighs the cap's floor in bf16) and β up to 2^40; every row of
    /// it is taken. The terms that matter only there (the underflow term, the mean's error
    /// times max|γ|) had passed every output test under cargo-mutants' changes: the tests'
    /// errors stay far inside the bound.
    #[test]
    fn the_lane_bound_covers_what_its_proof_requires() {
        let mut checked = 0;
        for format in FORMATS {
            for centering in EVERY_FORM {
                for scale in [2f64.powi(-20), 1.0, 1024.0, 2f64.powi(60)] {
                    for mean_error in [0.0, 2f64.powi(-30), 1e-3, 1.0] {
                        for gamma in [2f64.powi(-20), 1.0, 2f64.powi(20), 2f64.powi(60)] {
                            for beta in [0.0, 1.0, 2f64.powi(40)] {
                                let params = super::ParamsMax { gamma, beta };
                                let row = super::constants(
                                    centering, mean_error, scale, 4096, params, format,
                                )
                                .expect("a row of the grid declined");
                                let e_m = exact(mean_error);
                                let case = format!(
                                    "{centering:?} r̂ {scale:e} e_m {mean_error:e} γ {gamma:e} β {beta:e}"
                                );
                                assert_bound_covers(&row, params, &e_m, format, &case);
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 2 * 3 * 4 * 4 * 4 * 3);
    }

    /// `layer_norm`'s bound of the mean's error against its definition, decided exactly:
    /// the sum error γ_k·√(var + m²) (Σ|x − c| ≤ d·√(Q/d), k = ⌈d/16⌉ + 9) plus, in the
    /// fused form, |o + μ̂·r_h|/r_h and, in the split one, |μ̂ − m_h − m_l|, with μ̂ = c + m
    /// exactly; the row's bound must then cover the proof's requirement
    /// ([`assert_bound_covers`]). Rows of 16 values to 2^24, means on zero (the sum error
    /// alone) and far from it (the split form), spreads from 2^-30 to 2^20, and their
    /// scaled copies by 2^±20: a row whose shift was not accepted (m² > 8·var) is declined
    /// at every scale. cargo-mutants' weakenings of the sum error (divided by √(var + m²),
    /// or √(var·m²)), of the split form's rounding terms and of the acceptance test
    /// (m² + … or 8 + var) had passed every other test.
    #[test]
    fn the_mean_error_covers_its_definition_in_either_form() {
        use crate::kernels::row::CenteredStats;
        use rug::float::Round;
        use rug::Float;
        let (mut fused, mut split) = (0, 0);
        // (c, m, var): accepted shifts, m² ≤ 8·var.
        let accepted = [
            (0.0, 0.0, 1.0),
            (0.0, 0.0, 2f64.powi(20)),
            (0.0, 1e-3, 2f64.powi(-20)),
            (0.0, 0.7, 1.0),
            (0.0, -2.5, 1.0),
            (1000.0 + 1.0 / 3.0, 0.01, 1e-4),
            (1000.0 + 1.0 / 3.0, -0.02, 1e-4),
            (1.0 + 2f64.powi(-30), 2f64.powi(-35), 2f64.powi(-60)),
            (-3.7, 1.1, 1.0),
            (2f64.powi(-20) / 3.0, 0.0, 2f64.powi(-60)),
        ];
        for format in FORMATS {
            for d in [16, 4096, 1 << 24] {
                for (c, m, var) in accepted {
                    for k in [-20, 0, 20] {
                        let s = 2f64.powi(k);
                        let stats = CenteredStats {
                            shift: c * s,
                            mean_shifted: m * s,
                            var: var * s * s,
                            passes: 1,
                        };
                        let scale = 1.0 / stats.var.sqrt();
                        for gamma in [1.0, 1024.0] {
                            let params = super::ParamsMax { gamma, beta: 0.0 };
                            let case =
                                format!("d {d} c {c:e} m {m:e} var {var:e} × 2^{k} γ {gamma}");
                            let row = super::layer_norm(&stats, scale, d, params, format)
                                .unwrap_or_else(|| panic!("declined: {case}"));
                            let q = exact(stats.var) + exact(stats.mean_shifted).square();
                            let mut root = Float::with_val_round(256, q, Round::Up).0;
                            root.sqrt_round(Round::Up);
                            let mean = exact(stats.shift) + exact(stats.mean_shifted);
                            let rounding = match row.centering {
                                super::Centering::Fused { offset } => {
                                    fused += 1;
                                    let r_h = exact(row.scale as f64);
                                    (exact(offset as f64) + mean * &r_h).abs() / r_h
                                }
                                super::Centering::Split { mean_hi, mean_lo } => {
                                    split += 1;
                                    (mean - exact(mean_hi as f64) - exact(mean_lo as f64)).abs()
                                }
                                super::Centering::None => unreachable!("a LayerNorm row"),
                            };
                            let e_m =
                                exact_sum_error(d) * root.to_rational().expect("finite") + rounding;
                            assert_bound_covers(&row, params, &e_m, format, &case);
                        }
                    }
                }
            }
        }
        // Both forms were checked.
        assert!(fused > 50 && split > 50, "fused {fused}, split {split}");
        // Shifts that were not accepted, just past m² = 8·var, at every scale.
        for (c, m) in [(0.0, 3.0), (5.0, -3.0), (0.0, 2.8285)] {
            for k in [-20, 0, 20] {
                let s = 2f64.powi(k);
                let stats = CenteredStats {
                    shift: c * s,
                    mean_shifted: m * s,
                    var: s * s,
                    passes: 2,
                };
                let format = bf16::NARROW.unwrap();
                let row = super::layer_norm(&stats, 1.0 / s, 4096, super::ParamsMax::NONE, format);
                assert!(row.is_none(), "c {c} m {m} × 2^{k} taken");
            }
        }
    }

    /// Ordinary rows keep nearly every value on the f32 path: the bound is not so loose that
    /// the path hands most of the work back.
    #[test]
    fn ordinary_rows_stay_on_the_f32_path() {
        fn share<T: Element>() -> f64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
            let (mut reported, mut total) = (0, 0);
            for op in Op::ALL {
                for (center, spread) in [(0.0, 1.0), (3.0, 0.5), (-100.0, 2.0)] {
                    let x = random::<T>(&mut rng, 4096, center, spread);
                    let g = random::<T>(&mut rng, 4096, 1.0, 0.5);
                    let b = random::<T>(&mut rng, 4096, 0.0, 0.5);
                    let (_, r) = narrow_blocks(op, &x, &g, &b, 1e-5).expect("allowed");
                    reported += r.iter().filter(|&&r| r).count();
                    total += r.len();
                }
            }
            reported as f64 / total as f64
        }
        let (f16_share, bf16_share) = (share::<f16>(), share::<bf16>());
        eprintln!(
            "lanes reported: f16 {:.3} %, bf16 {:.4} %",
            100.0 * f16_share,
            100.0 * bf16_share
        );
        // About E/2^(22−p) for an error bound of E ulps (module comment).
        assert!(f16_share < 0.003, "f16: {f16_share}");
        assert!(bf16_share < 0.0005, "bf16: {bf16_share}");
    }
}
