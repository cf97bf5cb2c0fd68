//! Exact row statistics. The sums Σx and Σx² are accumulated exactly (every input and, for
//! the narrow formats, every square is an exact f64), then the mean μ, the quantity q under
//! the root (σ² for LayerNorm, mean(x²) for RMSNorm) and ε become exact rationals. From them
//! come the fast path's double-double approximations: μ and the inverse scale 1/s.

use super::dd::DoubleDouble;
use super::superacc::{SuperAccumulator, SCALE_EXPONENT};
use crate::dtype::{exponent_of, Dtype};
use crate::problem::{EpsConvention, Op};
use crate::wide::Wide;
use rug::{Float, Rational};

/// Working precision (bits) of the MPFR evaluation of 1/s.
const SCALE_PRECISION: u32 = 160;
/// Magnitudes the double-double fast path accepts without under- or overflow in its
/// error-free transformations; rows outside go to the exact path.
const FAST_PATH_MAX_EXPONENT: i32 = 900;

/// What kind of row this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// Every output is a real number.
    Defined,
    /// The scale s is 0 (σ²+ε = 0, or σ = ε = 0 outside): outputs are 0/0, not judged.
    Undefined,
    /// The row holds NaN or ±∞. IEEE propagation: every output is NaN, except RMSNorm rows
    /// with ±∞ and no NaN, where finite elements tend to γ·0 + β (x/∞) and ±∞ ones are NaN.
    NonFinite,
}

/// The exact statistics of one row, and their fast-path approximations.
#[derive(Debug, Clone)]
pub struct RowStats {
    pub kind: RowKind,
    /// Whether the row holds a NaN (as opposed to only ±∞) — see `RowKind::NonFinite`.
    pub has_nan: bool,
    pub op: Op,
    pub convention: EpsConvention,
    /// μ exactly (0 for RMSNorm).
    pub mean: Rational,
    /// q exactly: σ² = mean((x−μ)²) for LayerNorm, mean(x²) for RMSNorm.
    pub q: Rational,
    /// ε exactly.
    pub eps: Rational,
    /// μ as a double-double.
    pub mean_dd: DoubleDouble,
    /// 1/s as a double-double, s = √(q+ε) (inside) or √q + ε (outside).
    pub inv_scale_dd: DoubleDouble,
    /// Whether the double-double fast path is safe for this row.
    pub fast: bool,
    /// 1/s to 160 bits (0 on undefined rows): MPFR's exponent range holds every row's scale.
    pub inv_scale: Float,
    /// The factors of the judge's bound (`judge::tolerance`), each rounded once to 53 bits
    /// with an unbounded exponent (`Wide`), so that no product of them rounds to 0 or ∞ on
    /// the way on any row (s itself need not be an f64): 1/s; μ as hi + lo (μ's nearest, then
    /// the rest's: δ_i = x_i − μ is formed from both, accurate where x_i ≈ μ). On fast rows
    /// these are the f64 values `inv_scale_dd.hi` and `mean_dd`. (mean|x|, the last factor,
    /// is [`RowStats::mean_abs`]: only reports need it, so a row computes it when one does.)
    pub inv_scale_wide: Wide,
    pub mean_wide: [Wide; 2],
    /// σ = √q as an f64, for reports (may under- or overflow on extreme f64 rows).
    pub sigma: f64,
}

impl RowStats {
    /// Computes the statistics of a row of exact values (each an f64 of `dtype`'s value set).
    pub fn compute(
        values: &[f64],
        dtype: Dtype,
        op: Op,
        convention: EpsConvention,
        eps: &Rational,
    ) -> RowStats {
        Self::compute_with(values, &Extremes::of(values), dtype, op, convention, eps)
    }

    /// [`Self::compute`] with the row's [`Extremes`] already taken (as
    /// [`Extremes::decode`] takes them).
    pub fn compute_with(
        values: &[f64],
        extremes: &Extremes,
        dtype: Dtype,
        op: Op,
        convention: EpsConvention,
        eps: &Rational,
    ) -> RowStats {
        let d = values.len();
        let extremes = *extremes;
        let nonfinite = !extremes.all_finite;
        let mut stats = RowStats {
            kind: RowKind::NonFinite,
            has_nan: extremes.has_nan,
            op,
            convention,
            mean: Rational::new(),
            q: Rational::new(),
            eps: eps.clone(),
            mean_dd: DoubleDouble::ZERO,
            inv_scale_dd: DoubleDouble::ZERO,
            fast: false,
            inv_scale: Float::new(SCALE_PRECISION),
            inv_scale_wide: Wide::ZERO,
            mean_wide: [Wide::ZERO; 2],
            sigma: f64::NAN,
        };
        if nonfinite || d == 0 {
            return stats;
        }
        let (sum, sum_sq) = exact_sums_with(values, dtype, &extremes);
        let d_q = Rational::from(d as u64);
        let mean_all = Rational::from(&sum / &d_q);
        let mean_sq = Rational::from(&sum_sq / &d_q);
        let (mean, q) = match op {
            Op::LayerNorm => {
                let sq = Rational::from(mean_all.square_ref());
                (mean_all, mean_sq - sq)
            }
            Op::RmsNorm => (Rational::new(), mean_sq),
        };
        debug_assert!(q >= 0);
        let undefined = match convention {
            EpsConvention::Inside => Rational::from(&q + eps) == 0,
            EpsConvention::Outside => q == 0 && *eps == 0,
        };
        stats.kind = if undefined {
            RowKind::Undefined
        } else {
            RowKind::Defined
        };
        let q_float = Float::with_val(SCALE_PRECISION, &q);
        let scale = match convention {
            EpsConvention::Inside => {
                Float::with_val(SCALE_PRECISION, Rational::from(&q + eps)).sqrt()
            }
            EpsConvention::Outside => q_float.clone().sqrt() + eps,
        };
        stats.mean_dd = DoubleDouble::from_rational(&mean);
        stats.sigma = q_float.sqrt().to_f64();
        if !undefined {
            stats.inv_scale = scale.recip();
            stats.inv_scale_dd = DoubleDouble::from_float(&stats.inv_scale);
        }
        let within = |x: f64| x == 0.0 || x.abs().log2().abs() < FAST_PATH_MAX_EXPONENT as f64;
        let max_abs = extremes.largest;
        stats.fast = !undefined
            && within(stats.inv_scale_dd.hi)
            && within(stats.mean_dd.hi)
            && within(max_abs)
            && within(max_abs * stats.inv_scale_dd.hi);
        stats.inv_scale_wide = Wide::from_float(&stats.inv_scale);
        stats.mean_wide = if stats.fast {
            // μ ≥ 2^-900 or 0: `from_rational`'s hi and lo are the nearest f64s (lo to within
            // 2^-1075, far below what the bound resolves).
            [Wide::of(stats.mean_dd.hi), Wide::of(stats.mean_dd.lo)]
        } else {
            let hi = Float::with_val(53, &mean);
            let rest = &mean - hi.to_rational().expect("finite");
            [
                Wide::from_float(&hi),
                Wide::from_float(&Float::with_val(53, &rest)),
            ]
        };
        stats.mean = mean;
        stats.q = q;
        stats
    }

    /// mean|x| of the row's `values` (those the statistics were computed from), rounded once
    /// to 53 bits with an unbounded exponent: Σ|x| summed in order, then divided by d. On
    /// fast rows the sum is in f64, where it cannot overflow (|x| < 2^900) and every addition
    /// rounds as `Wide`'s would (subnormal sums are exact in both).
    pub fn mean_abs(&self, values: &[f64]) -> Wide {
        let sum_abs = if self.fast {
            Wide::of(values.iter().map(|x| x.abs()).sum::<f64>())
        } else {
            values.iter().fold(Wide::ZERO, |a, x| a + Wide::of(x.abs()))
        };
        sum_abs / Wide::of(values.len() as f64)
    }
}

/// What one pass over a row tells: whether every value is finite, whether one is NaN, and
/// the extremes of |x| over the finite values (the smallest over the nonzero ones; ∞ where
/// there is none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Extremes {
    pub all_finite: bool,
    pub has_nan: bool,
    pub largest: f64,
    pub smallest_nonzero: f64,
}

impl Extremes {
    /// One branch-free pass over the bit patterns of |x| in eight lanes (this pass stands in
    /// for four: finiteness, NaN, max |x|, the fixed-point route's smallest |x|): with the
    /// sign cleared, the order of the patterns as integers is the order of the magnitudes,
    /// +∞ is the pattern above every finite one and NaNs lie above it. Integer maxima and
    /// minima vectorize on every instruction set, with no chain of dependent comparisons;
    /// compiled for the widest vector instructions the CPU has ([`crate::vector`]).
    pub fn of(values: &[f64]) -> Extremes {
        crate::vector::widest(
            #[inline(always)]
            || Self::of_in(values),
        )
    }

    /// [`Self::of`] for the caller's instruction set.
    #[inline(always)]
    fn of_in(values: &[f64]) -> Extremes {
        const LANES: usize = 8;
        // The largest pattern, the largest finite one, the smallest finite nonzero one (∞'s
        // pattern where there is none).
        let mut any = [0u64; LANES];
        let mut largest = [0u64; LANES];
        let mut smallest = [INFINITY; LANES];
        let mut take = |lane: usize, x: f64| {
            let a = x.to_bits() & MAGNITUDE;
            let finite = a < INFINITY;
            any[lane] = any[lane].max(a);
            largest[lane] = largest[lane].max(if finite { a } else { 0 });
            let nonzero = if finite && a != 0 { a } else { INFINITY };
            smallest[lane] = smallest[lane].min(nonzero);
        };
        let mut chunks = values.chunks_exact(LANES);
        for chunk in &mut chunks {
            for (lane, &x) in chunk.iter().enumerate() {
                take(lane, x);
            }
        }
        for (lane, &x) in chunks.remainder().iter().enumerate() {
            take(lane, x);
        }
        let any = any.into_iter().max().unwrap_or(0);
        Extremes {
            all_finite: any < INFINITY,
            has_nan: any > INFINITY,
            largest: f64::from_bits(largest.into_iter().max().unwrap_or(0)),
            smallest_nonzero: f64::from_bits(smallest.into_iter().min().unwrap_or(INFINITY)),
        }
    }

    /// The values of a row of `dtype` bits ([`Dtype::decode`]) and their extremes: in one
    /// pass where the CPU has AVX-512 (`exact::decode_avx512`), else in two.
    pub fn decode(dtype: Dtype, bits: &[u64]) -> (Vec<f64>, Extremes) {
        let mut values = Vec::new();
        let extremes = Self::decode_into(dtype, bits, &mut values);
        (values, extremes)
    }

    /// [`Self::decode`] into `values` (its old contents dropped, its allocation reused).
    pub fn decode_into(dtype: Dtype, bits: &[u64], values: &mut Vec<f64>) -> Extremes {
        #[cfg(target_arch = "x86_64")]
        if crate::vector::Isa::widest() == crate::vector::Isa::Avx512 {
            // SAFETY: the CPU has AVX-512F and F16C.
            return unsafe { super::decode_avx512::decode(dtype, bits, values) };
        }
        dtype.decode_into(bits, values);
        Self::of(values)
    }
}

/// Σx and Σx² of finite values, exactly.
pub fn exact_sums(values: &[f64], dtype: Dtype) -> (Rational, Rational) {
    exact_sums_with(values, dtype, &Extremes::of(values))
}

/// [`exact_sums`] with the row's [`Extremes`] already taken.
fn exact_sums_with(values: &[f64], dtype: Dtype, extremes: &Extremes) -> (Rational, Rational) {
    if dtype != Dtype::F64 {
        if let Some(sums) = fixed_point_sums(values, dtype, extremes) {
            return sums;
        }
    }
    superaccumulator_sums(values, dtype)
}

/// The fast route for rows of narrow-format values whose magnitudes span little: every
/// value of a format of precision p is a multiple of 2^e₀, with e₀ the lowest exponent of
/// the row's smallest nonzero |x| (or of the format's subnormals) less p − 1, so
/// k = x·2^(−e₀) is an integer, and Σk and Σk² fit an i128 when max|x|/2^e₀ is small.
/// A pass of plain arithmetic after the extremes of |x|: in f64 lanes where the row is
/// narrow enough ([`f64_lane_sums`]), else each k (the scaling exact, its conversion
/// checked) with its square in i128. None where the span is too wide, or where a value is
/// not a multiple of 2^e₀ (values not of `dtype`); the superaccumulator takes those.
fn fixed_point_sums(
    values: &[f64],
    dtype: Dtype,
    extremes: &Extremes,
) -> Option<(Rational, Rational)> {
    let (smallest, largest) = (extremes.smallest_nonzero, extremes.largest);
    if !extremes.all_finite {
        return None;
    }
    if largest == 0.0 {
        return Some((Rational::new(), Rational::new()));
    }
    let p = dtype.precision();
    let e_min = exponent_of(smallest).max(dtype.emin()) - (p - 1);
    // Every |k| < 2^bits.
    let bits = exponent_of(largest) + 1 - e_min;
    let log_d = (usize::BITS - values.len().leading_zeros()) as i32;
    if bits > 62 || 2 * bits + log_d > 126 || !(-1022..=1023).contains(&-e_min) {
        return None;
    }
    let scale = crate::dtype::pow2(-e_min);
    let (s1, s2) = f64_lane_sums(values, scale, bits).or_else(|| i128_sums(values, scale))?;
    let scale = |v: i128, e: i32| {
        let r = Rational::from(rug::Integer::from(v));
        if e >= 0 {
            r << e as u32
        } else {
            r >> (-e) as u32
        }
    };
    Some((scale(s1, e_min), scale(s2, 2 * e_min)))
}

/// Σk and Σk² of the integers k = x·`scale` (|k| < 2^62, Σk² < 2^126) in i128; None where a
/// k is not an integer.
fn i128_sums(values: &[f64], scale: f64) -> Option<(i128, i128)> {
    let (mut s1, mut s2) = (0i128, 0i128);
    let mut integral = true;
    for &x in values {
        let scaled = x * scale; // exact: a power-of-two scaling within f64's normal range
        let k = scaled as i64;
        integral &= k as f64 == scaled;
        s1 += k as i128;
        s2 += (k as i128) * (k as i128);
    }
    integral.then_some((s1, s2))
}

/// The bits below the sign of an f64: its pattern of |x|.
pub(super) const MAGNITUDE: u64 = !(1u64 << 63);
/// The pattern of +∞: above every finite |x|'s, below every NaN's.
pub(super) const INFINITY: u64 = 0x7ff0_0000_0000_0000;

/// Lanes of [`f64_lane_sums`]: value i goes to lane i mod `SUM_LANES`.
const SUM_LANES: usize = 8;

/// Σk and Σk² of the integers k = x·`scale` (|k| < 2^`bits`), in f64 arithmetic that is
/// exact: each k splits as h·2^s + l (s = ⌈bits/2⌉, h = k·2^−s rounded to an integer, so
/// |h| ≤ 2^(bits−s) and |l| ≤ 2^(s−1)), and k² = h²·2^2s + 2hl·2^s + l². Every term of
/// Σk, Σh², Σhl and Σl² is an integer of magnitude below 2^bits, each sum goes in
/// [`SUM_LANES`] lanes of n = ⌈d/SUM_LANES⌉ terms at most, and where n·2^bits ≤ 2^53 every
/// partial sum is an integer that f64 holds: no addition rounds. The lanes are then added
/// in i128. The compiler vectorizes the lanes (a chain of i128 additions it does not), with
/// the widest instructions the CPU has ([`crate::vector`]; the same sums: nothing rounds).
/// None where the row is too
/// wide for that, or a k is not an integer (then the caller's route says so).
fn f64_lane_sums(values: &[f64], scale: f64, bits: i32) -> Option<(i128, i128)> {
    let per_lane = values.len().div_ceil(SUM_LANES).max(1);
    let log_n = usize::BITS - (per_lane - 1).leading_zeros(); // n ≤ 2^log_n
    if !(1..=53).contains(&bits) || bits as u32 + log_n > 53 {
        return None;
    }
    use crate::vector::Isa;
    match Isa::widest() {
        // Fused multiply-adds there: every product and sum is exact, so they change no bit.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => Isa::Avx512.run(
            #[inline(always)]
            || f64_lane_sums_of::<true>(values, scale, bits),
        ),
        isa => isa.run(
            #[inline(always)]
            || f64_lane_sums_of::<false>(values, scale, bits),
        ),
    }
}

/// Adding and subtracting 1.5·2^52 rounds an f64 below 2^51 in magnitude to an integer.
const ROUNDER: f64 = 6_755_399_441_055_744.0;

/// [`f64_lane_sums`]'s loop, for the caller's instruction set (and without its guard);
/// with fused multiply-adds where `FMA` (only where the instruction set has them: elsewhere
/// `mul_add` is a slow library call). Every product and partial sum is an integer f64
/// holds, so fused or not they are the same; where a k is not an integer the result is
/// None either way (l = k − h·2^s is exact whatever k is: h·2^s is).
#[inline(always)]
fn f64_lane_sums_of<const FMA: bool>(
    values: &[f64],
    scale: f64,
    bits: i32,
) -> Option<(i128, i128)> {
    let s = (bits + 1) / 2;
    let (down, up) = (crate::dtype::pow2(-s), crate::dtype::pow2(s));
    // Σk, Σh², Σhl, Σl², each in SUM_LANES lanes; and the bits of every l's distance from
    // an integer, or-ed (0 where every k is an integer, as it is for values of the format;
    // an integer or vectorizes where a NaN-aware maximum does not).
    let mut sums = [[0.0f64; SUM_LANES]; 4];
    let mut off_integer = [0u64; SUM_LANES];
    // Lane by lane over a whole chunk: straight-line code the compiler vectorizes.
    #[inline(always)]
    fn add<const FMA: bool>(
        chunk: &[f64; SUM_LANES],
        [scale, down, up]: [f64; 3],
        sums: &mut [[f64; SUM_LANES]; 4],
        off_integer: &mut [u64; SUM_LANES],
    ) {
        // a·b + c, fused where FMA.
        let mul_add = |a: f64, b: f64, c: f64| if FMA { a.mul_add(b, c) } else { a * b + c };
        for lane in 0..SUM_LANES {
            let k = chunk[lane] * scale; // exact: a power-of-two scaling in the normal range
            let h = (k * down + ROUNDER) - ROUNDER;
            let l = mul_add(-h, up, k); // exact: an integer below 2^s where k is one
            off_integer[lane] |= (((l + ROUNDER) - ROUNDER) - l).to_bits();
            sums[0][lane] += k;
            sums[1][lane] = mul_add(h, h, sums[1][lane]);
            sums[2][lane] = mul_add(h, l, sums[2][lane]);
            sums[3][lane] = mul_add(l, l, sums[3][lane]);
        }
    }
    let (chunks, rest) = values.as_chunks::<SUM_LANES>();
    for chunk in chunks {
        add::<FMA>(chunk, [scale, down, up], &mut sums, &mut off_integer);
    }
    // The rest padded with zeros, which add nothing (0 + s = s for every partial sum s).
    let mut last = [0.0; SUM_LANES];
    last[..rest.len()].copy_from_slice(rest);
    add::<FMA>(&last, [scale, down, up], &mut sums, &mut off_integer);
    if off_integer.iter().any(|&v| v != 0) {
        return None;
    }
    // Each lane's sum is an integer of magnitude at most 2^53: exact as i64.
    let [k, h2, hl, l2] = sums.map(|lanes| lanes.iter().map(|&v| v as i64 as i128).sum::<i128>());
    Some((k, (h2 << (2 * s)) + (hl << (s + 1)) + l2))
}

/// The general route: superaccumulators (any f64 values).
fn superaccumulator_sums(values: &[f64], dtype: Dtype) -> (Rational, Rational) {
    let mut sum = SuperAccumulator::new();
    let mut sum_sq = SuperAccumulator::new();
    // For f64 inputs the square needs two f64s (two_prod), exact only away from the ends of
    // the exponent range; rows that leave it are squared in rational arithmetic.
    let squares_exact_in_f64 = dtype != Dtype::F64;
    let safe_two_prod = |x: f64| x == 0.0 || (x.abs() > 1e-140 && x.abs() < 1e150);
    if squares_exact_in_f64 || values.iter().all(|&x| safe_two_prod(x)) {
        for &x in values {
            sum.add(x);
            if squares_exact_in_f64 {
                sum_sq.add(x * x);
            } else {
                let (p, e) = super::dd::two_prod(x, x);
                sum_sq.add(p);
                sum_sq.add(e);
            }
        }
        (to_rational(&sum), to_rational(&sum_sq))
    } else {
        let mut sq = Rational::new();
        for &x in values {
            sum.add(x);
            let r = Rational::from_f64(x).expect("finite");
            sq += r.square();
        }
        (to_rational(&sum), sq)
    }
}

fn to_rational(acc: &SuperAccumulator) -> Rational {
    Rational::from(acc.to_integer()) >> (-SCALE_EXPONENT) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::Isa;

    fn q(x: f64) -> Rational {
        Rational::from_f64(x).unwrap()
    }

    #[test]
    fn layer_norm_stats_are_exact() {
        let row = [1.0, 2.0, 4.0];
        let s = RowStats::compute(
            &row,
            Dtype::F32,
            Op::LayerNorm,
            EpsConvention::Inside,
            &q(0.0),
        );
        assert_eq!(s.mean, Rational::from((7, 3)));
        // σ² = (1+4+16)/3 − 49/9 = 14/9
        assert_eq!(s.q, Rational::from((14, 9)));
        assert_eq!(s.kind, RowKind::Defined);
        assert!(s.fast);
    }

    #[test]
    fn constant_rows_are_undefined_only_without_eps() {
        let row = [3.0; 5];
        let s = RowStats::compute(
            &row,
            Dtype::F16,
            Op::LayerNorm,
            EpsConvention::Inside,
            &q(0.0),
        );
        assert_eq!(s.kind, RowKind::Undefined);
        let s = RowStats::compute(
            &row,
            Dtype::F16,
            Op::LayerNorm,
            EpsConvention::Inside,
            &q(1e-5),
        );
        assert_eq!(s.kind, RowKind::Defined);
        let s = RowStats::compute(
            &row,
            Dtype::F16,
            Op::RmsNorm,
            EpsConvention::Outside,
            &q(0.0),
        );
        assert_eq!(s.kind, RowKind::Defined);
        assert_eq!(s.q, Rational::from(9));
    }

    #[test]
    fn nonfinite_rows_are_flagged() {
        let s = RowStats::compute(
            &[1.0, f64::NAN],
            Dtype::F32,
            Op::RmsNorm,
            EpsConvention::Inside,
            &q(0.0),
        );
        assert_eq!(s.kind, RowKind::NonFinite);
    }

    /// The f64 lanes give the i128 route's sums wherever they take a row, and take every row
    /// narrow enough (n·2^bits ≤ 2^53, n values a lane). Values off the format's grid are
    /// refused.
    #[test]
    fn the_f64_lanes_give_the_i128_sums() {
        let mut rng = crate::rng::Rng::new(11, 0);
        let (mut taken, mut refused) = (0, 0);
        for trial in 0..3000 {
            let dtype = [Dtype::F32, Dtype::F16, Dtype::BF16][trial % 3];
            let d = [1, 2, 3, 7, 8, 9, 31, 256, 1000, 1024, 4096][rng.below(11)];
            let p = dtype.precision();
            // Small values at 2^e_small, large ones up to 2^e_large.
            let e_small = -(rng.below(30) as i32);
            let e_large = e_small + rng.below(31) as i32;
            let values: Vec<f64> = (0..d)
                .map(|i| {
                    let e = if i % 2 == 0 { e_large } else { e_small };
                    let top = 1u64 << (p - 1);
                    let mantissa = top | (rng.next_u64() & (top - 1));
                    let x = mantissa as f64 * crate::dtype::pow2(e - (p - 1));
                    let x = if rng.below(4) == 0 { -x } else { x };
                    dtype.to_f64(dtype.round_f64(x))
                })
                .collect();
            let extremes = Extremes::of(&values);
            // (Rows that overflowed the format, or underflowed to zeros.)
            if !extremes.all_finite || extremes.largest == 0.0 {
                continue;
            }
            let e_min = exponent_of(extremes.smallest_nonzero).max(dtype.emin()) - (p - 1);
            let bits = exponent_of(extremes.largest) + 1 - e_min;
            let scale = crate::dtype::pow2(-e_min);
            let exact = i128_sums(&values, scale).expect("values of the format");
            match f64_lane_sums(&values, scale, bits) {
                Some(lanes) => {
                    assert_eq!(lanes, exact, "{dtype} d = {d}, bits = {bits}");
                    // Compiled for every instruction set the CPU has.
                    for isa in Isa::each() {
                        let sums = isa.run(|| f64_lane_sums_of::<false>(&values, scale, bits));
                        assert_eq!(sums, Some(exact), "{isa:?}: {dtype} d = {d}");
                    }
                    #[cfg(target_arch = "x86_64")]
                    if Isa::widest() == Isa::Avx512 {
                        let fused =
                            Isa::Avx512.run(|| f64_lane_sums_of::<true>(&values, scale, bits));
                        assert_eq!(fused, Some(exact), "fused: {dtype} d = {d}");
                    }
                    assert!(lane_terms(d) * crate::dtype::pow2(bits) <= crate::dtype::pow2(53));
                    taken += 1;
                }
                None => {
                    assert!(lane_terms(d) * crate::dtype::pow2(bits) > crate::dtype::pow2(53));
                    refused += 1;
                }
            }
            // Off the grid: one value with a bit below 2^e_min.
            let mut off = values.clone();
            off[0] += crate::dtype::pow2(e_min - 1) * off[0].signum();
            if off[0] != values[0] {
                assert_eq!(f64_lane_sums(&off, scale, bits), None);
                for isa in Isa::each() {
                    assert_eq!(
                        isa.run(|| f64_lane_sums_of::<false>(&off, scale, bits)),
                        None
                    );
                    assert_eq!(
                        isa.run(|| f64_lane_sums_of::<true>(&off, scale, bits)),
                        None
                    );
                }
            }
        }
        assert!(
            taken > 1000 && refused > 100,
            "taken {taken}, refused {refused}"
        );
    }

    /// The most values a lane of [`f64_lane_sums`] adds, rounded up to a power of two.
    fn lane_terms(d: usize) -> f64 {
        d.div_ceil(SUM_LANES).max(1).next_power_of_two() as f64
    }

    /// The guard of the f64 lanes is tight: at one bit past it, rows whose lanes hold n − 1
    /// values just below 2^bits and one odd k round in the lanes (their partial sums pass
    /// 2^53), and the guard refuses them; at its edge the lanes are exact.
    #[test]
    fn the_f64_lanes_stop_where_their_sums_would_round() {
        for log_n in [2u32, 4, 7, 9] {
            let n = 1usize << log_n;
            for past_edge in [false, true] {
                let bits = 53 - log_n as i32 + past_edge as i32;
                // k = 2^23 + 1 for the last value of each lane (e₀ = -23 - 23 = -46: the
                // small value is (1 + 2^-23)·2^-23), k = (2^24 − 1)·2^(bits − 24) for the
                // others (|k| < 2^bits).
                let small = (1.0 + crate::dtype::pow2(-23)) * crate::dtype::pow2(-23);
                let large = (2.0 - crate::dtype::pow2(-23)) * crate::dtype::pow2(bits - 47);
                let values: Vec<f64> = (0..n * SUM_LANES)
                    .map(|i| if i / SUM_LANES == n - 1 { small } else { large })
                    .collect();
                let extremes = Extremes::of(&values);
                let e_min = exponent_of(extremes.smallest_nonzero) - 23;
                assert_eq!(e_min, -46);
                assert_eq!(exponent_of(extremes.largest) + 1 - e_min, bits);
                let scale = crate::dtype::pow2(46);
                let exact = i128_sums(&values, scale).unwrap();
                let guarded = f64_lane_sums(&values, scale, bits);
                if let Some(sums) = guarded {
                    assert_eq!(sums, exact, "n = {n}, bits = {bits}");
                }
                if past_edge {
                    assert_eq!(guarded, None, "n = {n}");
                    assert_ne!(
                        f64_lane_sums_of::<false>(&values, scale, bits),
                        Some(exact),
                        "n = {n}"
                    );
                } else {
                    assert_eq!(guarded, Some(exact), "n = {n}");
                }
            }
        }
    }

    #[test]
    fn both_routes_give_the_same_sums() {
        let rows: [&[f64]; 4] = [
            &[1.5, -2.25, 1e-3_f32 as f64, 0.0, 3.0],
            &[1e30_f32 as f64, 1e-30_f32 as f64, -7.0],
            &[0.0, -0.0],
            &[65504.0, -65504.0, 2f64.powi(-24)],
        ];
        for row in rows {
            let fixed = fixed_point_sums(row, Dtype::F32, &Extremes::of(row));
            let general = superaccumulator_sums(row, Dtype::F32);
            let direct_sum = row
                .iter()
                .map(|&x| q(x))
                .fold(Rational::new(), |a, b| a + b);
            let direct_sq = row
                .iter()
                .map(|&x| q(x).square())
                .fold(Rational::new(), |a, b| a + b);
            assert_eq!(general, (direct_sum.clone(), direct_sq.clone()));
            if let Some(f) = fixed {
                assert_eq!(f, (direct_sum, direct_sq));
            }
        }
        // A wide exponent span must not take the fixed-point route.
        assert!(fixed_point_sums(
            &[1e30_f32 as f64, 1e-30_f32 as f64],
            Dtype::F32,
            &Extremes::of(&[1e30_f32 as f64, 1e-30_f32 as f64])
        )
        .is_none());
        assert!(fixed_point_sums(
            &[1.5, -2.25, 0.001_f32 as f64],
            Dtype::F32,
            &Extremes::of(&[1.5, -2.25, 0.001_f32 as f64])
        )
        .is_some());
        // A value with more significant bits than the format's is refused, not truncated.
        assert!(fixed_point_sums(&[1.5, 0.1], Dtype::F32, &Extremes::of(&[1.5, 0.1])).is_none());
        assert!(fixed_point_sums(
            &[1.5, 0.1_f32 as f64],
            Dtype::F16,
            &Extremes::of(&[1.5, 0.1_f32 as f64])
        )
        .is_none());
    }

    /// The fixed-point route against the superaccumulator on random rows of every narrow
    /// format, spans from one binade to past the route's limit, subnormals and zeros mixed in.
    #[test]
    fn fixed_point_route_agrees_with_the_superaccumulator_on_random_rows() {
        let mut rng = crate::rng::Rng::new(20261206, 0);
        let mut taken = 0;
        for case in 0..600 {
            let dtype = [Dtype::F32, Dtype::F16, Dtype::BF16][case % 3];
            let d = 1 + rng.below(300);
            let span = rng.below(48) as i32;
            let base = rng.below(60) as i32 - 40;
            let row: Vec<f64> = (0..d)
                .map(|_| {
                    if rng.below(10) == 0 {
                        return if rng.coin() { 0.0 } else { -0.0 };
                    }
                    let e = base - rng.below(span as usize + 1) as i32;
                    let x = rng.normal() * crate::dtype::pow2(e);
                    dtype.to_f64(dtype.round_f64(x))
                })
                .collect();
            if let Some(fixed) = fixed_point_sums(&row, dtype, &Extremes::of(&row)) {
                taken += 1;
                assert_eq!(fixed, superaccumulator_sums(&row, dtype), "{dtype} {row:?}");
            }
        }
        assert!(
            taken > 300,
            "the fixed-point route was taken {taken} times of 600"
        );
    }

    /// The one-pass extremes against their definitions, on rows of every length mod 8 with
    /// zeros, NaN and ±∞ in every lane, on every instruction set the CPU has.
    #[test]
    fn extremes_match_their_definitions() {
        let mut rng = crate::rng::Rng::new(5, 0);
        for _ in 0..2000 {
            let d = rng.below(21);
            let row: Vec<f64> = (0..d)
                .map(|_| match rng.below(12) {
                    0 => 0.0,
                    1 => f64::NAN,
                    2 => f64::INFINITY * if rng.coin() { 1.0 } else { -1.0 },
                    _ => rng.normal() * crate::dtype::pow2(rng.below(200) as i32 - 100),
                })
                .collect();
            let finite = || row.iter().filter(|x| x.is_finite()).map(|x| x.abs());
            let want = Extremes {
                all_finite: row.iter().all(|x| x.is_finite()),
                has_nan: row.iter().any(|x| x.is_nan()),
                largest: finite().fold(0.0, f64::max),
                smallest_nonzero: finite().filter(|&a| a != 0.0).fold(f64::INFINITY, f64::min),
            };
            assert_eq!(Extremes::of(&row), want, "{row:?}");
            for isa in Isa::each() {
                assert_eq!(isa.run(|| Extremes::of_in(&row)), want, "{isa:?}: {row:?}");
            }
        }
    }

    /// Rows of random bit patterns (every kind of value: NaNs quiet and signaling, ±∞,
    /// subnormals, zeros) of every format and of every length mod 8: the values bit for bit
    /// and the extremes of [`Extremes::decode`] are those of the two portable passes.
    #[test]
    fn the_one_pass_decode_gives_the_two_passes_values_and_extremes() {
        let mut rng = crate::rng::Rng::new(9, 0);
        for trial in 0..4000 {
            let dtype = [Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::F64][trial % 4];
            let width = dtype.bits();
            let d = rng.below(40);
            let bits: Vec<u64> = (0..d)
                .map(|_| {
                    let b = rng.next_u64();
                    let b = if width == 64 {
                        b
                    } else {
                        b & ((1 << width) - 1)
                    };
                    // Mostly ordinary values (random exponents are mostly huge or tiny), and
                    // signed zeros.
                    match rng.below(6) {
                        0 | 1 => b,
                        2 => b & (1 << (width - 1)),
                        _ => {
                            let x = rng.normal() * crate::dtype::pow2(rng.below(20) as i32 - 10);
                            dtype.round_f64(x)
                        }
                    }
                })
                .collect();
            let (values, extremes) = Extremes::decode(dtype, &bits);
            // The two portable passes.
            let want_values = dtype.decode(&bits);
            let want = Extremes::of(&want_values);
            let as_bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(as_bits(&values), as_bits(&want_values), "{dtype} {bits:x?}");
            assert_eq!(extremes, want, "{dtype} {bits:x?}");
        }
    }

    #[test]
    fn f64_extremes_are_squared_exactly() {
        let row = [1e-300, f64::MAX, -f64::MAX, 5e-324];
        let (s1, s2) = exact_sums(&row, Dtype::F64);
        assert_eq!(s1, q(1e-300) + q(5e-324));
        let want = row
            .iter()
            .map(|&x| q(x).square())
            .fold(Rational::new(), |a, b| a + b);
        assert_eq!(s2, want);
        let s = RowStats::compute(
            &row,
            Dtype::F64,
            Op::LayerNorm,
            EpsConvention::Inside,
            &q(0.0),
        );
        assert!(!s.fast);
    }
}
