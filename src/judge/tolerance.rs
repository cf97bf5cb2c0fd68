//! The one tolerance formula, and its derivation.
//!
//! A kernel is judged against what a *correct* kernel of its dtype can deliver. The model is
//! the careful single-precision kernel: two passes, pairwise (or blocked) sums accumulated in
//! precision `u` (2^-24 for f16/bf16/f32 kernels, which accumulate in f32; 2^-53 for f64),
//! the row scaled by a power of two so nothing overflows, one rounding at the end. Kernels
//! that accumulate more precisely (f64, Welford in f64) have smaller errors and pass too.
//!
//! Derivation (Higham-style, first order in u; L = ⌈log₂ d⌉ + 1 + ⌈√d⌉ bounds the error
//! factor of a sum of d terms: ⌈log₂ d⌉ + 1 for a pairwise sum, plus ⌈√d⌉ for a blocked or
//! sequential one, whose rounding errors grow like √d·u with high probability (Higham & Mary,
//! "A new approach to probabilistic rounding error analysis", SISC 2019);
//! notation of `exact::stats`: μ the mean, s the scale √(σ²+ε) or σ+ε, δ_i = x_i − μ,
//! M₁ = mean|x| ≥ |μ|):
//! - mean: |μ̂ − μ| ≤ e_μ = (L+1)·u·M₁ (pairwise sum of |x|, then the division);
//! - centring: |δ̂_i − δ_i| ≤ e_μ + u·|δ_i|;
//! - variance: Σ(δ_j + e)² = Σδ_j² + d·e² because Σδ_j = 0, so σ̂² has relative error
//!   ≤ (L+3)·u + (e_μ/s)²; s inherits half of it (times σ²/(σ²+ε) ≤ 1) plus 2u for +ε and √;
//! - output: y_i = γ_i·δ̂_i/ŝ + β_i, three more roundings.
//!
//! Collecting terms, with κ_i = (|x_i| + M₁)/s the condition number of element i:
//!
//!   B_i = F·[ |γ_i|·2(L+9)·u·κ_i + |γ_i|·(|δ_i|/s)·(e_μ/s)² + u·(|β_i| + |y_i|)
//!             + |γ_i|·d·u_min/s ]
//!
//! where u_min is the smallest subnormal of the accumulation format (underflow in sums of
//! squares of tiny rows, after the careful kernel's power-of-two scaling), and F = 2 covers the
//! second-order terms and blocked summation orders. RMSNorm has μ = 0: e_μ = 0.
//!
//! An output o passes the bound when |o − y_i| ≤ B_i + ulp(max(|o|, |y_i|)), the last term
//! being the kernel's own final rounding to its output format. B_i and that comparison are
//! evaluated with no intermediate rounding to 0 or ∞ (`Wide`; see `evaluate`), so a term
//! whose factors under- or overflow on the way keeps its value. An output ±∞ passes where the
//! bound reaches the format's overflow threshold T on its side, |±T − y_i| ≤ B_i: there a
//! kernel within the bound may round to ∞ (`bound_use`); a NaN output never passes.
//!
//! What it rejects: every classic bug makes an O(1) relative error on some family of the
//! battery — one-pass variance (error ≈ u·κ² where the bound grows like u·κ), ε outside
//! the root (rows with σ² ≈ ε), the (d−1) variance (relative 1/(2d), above 2(L+9)uκ for
//! d ≤ 4096), no mean subtraction, dropped SIMD tails, γ/β misindexed, statistics leaking
//! across rows, and sums of squares overflowing or underflowing in the kernel's format.

use crate::dtype::{pow2, Dtype};
use crate::exact::RowStats;
use crate::problem::Op;
use crate::wide::{Real, Wide};

/// Safety factor F of the formula.
pub const SAFETY_FACTOR: f64 = 2.0;

/// The accumulation precision the model assumes for kernels of a dtype: (u, u_min).
pub fn accumulation_precision(dtype: Dtype) -> (f64, f64) {
    match dtype {
        Dtype::F64 => (pow2(-53), pow2(-1074)),
        Dtype::F16 | Dtype::BF16 | Dtype::F32 => (pow2(-24), pow2(-149)),
    }
}

/// Error factor L = ⌈log₂ d⌉ + 1 + ⌈√d⌉ of a sum of d terms (pairwise depth, plus the
/// probabilistic growth of sequential or blocked sums).
pub fn summation_depth(d: usize) -> f64 {
    let log2_ceil = (usize::BITS - d.saturating_sub(1).leading_zeros()) as f64;
    log2_ceil + 1.0 + (d as f64).sqrt().ceil()
}

// How B_i is evaluated. Its factors (|x_i|, M₁, μ, 1/s, |γ_i|, d·u_min, …) span f64's whole
// range on f64 rows, and s itself need not be an f64. One formula (`terms`) is written over
// `Real` and evaluated in `Wide` (f64 significand, unbounded exponent: no intermediate
// rounds to 0 or ∞, only the final B_i is ever rounded to f64). Ordinary elements — every
// input and row factor 0 or within 2^±PLAIN_EXPONENT — take the same formula in plain f64,
// where nothing can leave f64's normal range either, so both give the same bits.

/// The plain path's box: with x, γ, β, y, 1/s, μ_hi, μ_lo and M₁ each 0 or in
/// [2^-K, 2^(K+1)), every intermediate of `terms` in f64 is 0 or within
/// [2^(-7K-156), 2^(7K+8)) — the extremes are |γ|·|δ/s|·(e_μ/s)², where a nonzero
/// δ = (x − μ_hi) − μ_lo, a sum of multiples of 2^(-K-52), is at least that — which is
/// normal for K = 120. Only d·u_min/s with f64's u_min = 2^-1074 leaves it (see `evaluate`).
const PLAIN_EXPONENT: i32 = 120;

/// v where it lies in the plain path's box (0 or 2^-K ≤ |v| < 2^(K+1)), else None.
#[inline]
fn plain(v: f64) -> Option<f64> {
    let exponent = ((v.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    (v == 0.0 || exponent.abs() <= PLAIN_EXPONENT).then_some(v)
}

#[inline]
fn plain_wide(w: Wide) -> Option<f64> {
    match w.exponent() {
        Some(e) if e.abs() <= PLAIN_EXPONENT => Some(w.to_f64()),
        None if w.is_zero() => Some(0.0),
        _ => None,
    }
}

/// The row's factors of B_i: 1/s, μ = mean + mean_lo and M₁ (`RowStats::inv_scale_wide`,
/// `mean_wide`, `mean_abs`).
#[derive(Debug, Clone, Copy)]
struct RowFactors {
    inv_scale: Wide,
    mean: Wide,
    mean_lo: Wide,
    mean_abs: Wide,
}

impl RowFactors {
    fn of(stats: &RowStats) -> Self {
        RowFactors {
            inv_scale: stats.inv_scale_wide,
            mean: stats.mean_wide[0],
            mean_lo: stats.mean_wide[1],
            mean_abs: stats.mean_abs,
        }
    }
}

/// The factors of B_i for one element, in f64 or in `Wide`.
#[derive(Debug, Clone, Copy)]
struct Factors<T> {
    x: T,
    gamma: T,
    beta: T,
    y: T,
    inv_scale: T,
    mean: T,
    mean_lo: T,
    mean_abs: T,
}

impl Factors<Wide> {
    fn wide(row: &RowFactors, e: &ElementTerms) -> Self {
        Factors {
            x: Wide::of(e.x),
            gamma: Wide::of(e.gamma),
            beta: Wide::of(e.beta),
            y: e.y,
            inv_scale: row.inv_scale,
            mean: row.mean,
            mean_lo: row.mean_lo,
            mean_abs: row.mean_abs,
        }
    }
}

impl Factors<f64> {
    /// The factors as f64s where all lie in the plain path's box.
    #[inline]
    fn plain(row: &RowFactors, e: &ElementTerms) -> Option<Self> {
        Some(Factors {
            x: plain(e.x)?,
            gamma: plain(e.gamma)?,
            beta: plain(e.beta)?,
            y: plain_wide(e.y)?,
            inv_scale: plain_wide(row.inv_scale)?,
            mean: plain_wide(row.mean)?,
            mean_lo: plain_wide(row.mean_lo)?,
            mean_abs: plain_wide(row.mean_abs)?,
        })
    }
}

/// The constants of B_i for a dtype and width, each exact in f64.
struct Constants {
    u: f64,
    /// 2(L+9)·u, the first-order term's factor.
    first_order: f64,
    /// (L+1)·u: e_μ = (L+1)·u·M₁.
    mean_error: f64,
    /// d·u_min.
    underflow: f64,
}

impl Constants {
    fn new(dtype: Dtype, d: usize) -> Self {
        let (u, u_min) = accumulation_precision(dtype);
        let l = summation_depth(d);
        Constants {
            u,
            first_order: 2.0 * (l + 9.0) * u,
            mean_error: (l + 1.0) * u,
            underflow: d as f64 * u_min,
        }
    }
}

/// The four terms of B_i/F, each a product of ratios to s (s itself is never formed).
#[derive(Debug, Clone, Copy)]
struct Terms<T> {
    /// |γ|·2(L+9)·u·κ, as 2(L+9)u·(|γ|·((|x| + M₁)·(1/s))).
    first_order: T,
    /// |γ|·(|δ|/s)·(e_μ/s)².
    mean_error_squared: T,
    /// u·(|β| + |y|).
    parameters: T,
    /// |γ|·d·u_min/s.
    underflow: T,
}

#[inline]
fn terms<T: Real>(op: Op, c: &Constants, f: &Factors<T>) -> Terms<T> {
    let r = f.inv_scale;
    let g = f.gamma.abs();
    let (delta_over_s, e_mu_over_s, condition_numerator) = match op {
        // δ = (x − μ_hi) − μ_lo: accurate to a rounding or two where x ≈ μ (x/s − μ/s would
        // leave only the noise of their roundings where κ ≫ 1, and the term with it).
        Op::LayerNorm => (
            (f.x - f.mean - f.mean_lo) * r,
            T::of(c.mean_error) * (f.mean_abs * r),
            f.x.abs() + f.mean_abs,
        ),
        Op::RmsNorm => (f.x * r, T::of(0.0), f.x.abs()),
    };
    Terms {
        first_order: T::of(c.first_order) * (g * (condition_numerator * r)),
        mean_error_squared: g * delta_over_s.abs() * e_mu_over_s * e_mu_over_s,
        parameters: T::of(c.u) * (f.beta.abs() + f.y.abs()),
        underflow: underflow_term(c, f.gamma, r),
    }
}

#[inline]
fn underflow_term<T: Real>(c: &Constants, gamma: T, inv_scale: T) -> T {
    gamma.abs() * (T::of(c.underflow) * inv_scale)
}

/// F times the sum of the terms; NaN (only from non-finite inputs) is an unbounded bound.
fn finish(sum: Wide) -> Wide {
    let b = Wide::of(SAFETY_FACTOR) * sum;
    if b.is_nan() {
        Wide::of(f64::INFINITY)
    } else {
        b
    }
}

/// The condition number κ_i = (|x_i| + mean|x|)/s of element i (RMSNorm: |x_i|/s), for
/// reports: rounded once to f64 (0 or ∞ where it leaves f64's range).
pub fn condition(stats: &RowStats, x: f64) -> f64 {
    fn kappa<T: Real>(op: Op, x: T, inv_scale: T, mean_abs: T) -> T {
        match op {
            Op::LayerNorm => x.abs() * inv_scale + mean_abs * inv_scale,
            Op::RmsNorm => x.abs() * inv_scale,
        }
    }
    let (r, m) = (stats.inv_scale_wide, stats.mean_abs);
    match (plain(x), plain_wide(r), plain_wide(m)) {
        (Some(x), Some(r), Some(m)) => kappa(stats.op, x, r, m),
        _ => kappa(stats.op, Wide::of(x), r, m).to_f64(),
    }
}

/// The inputs of the bound for one element.
#[derive(Debug, Clone, Copy)]
pub struct ElementTerms {
    pub x: f64,
    pub gamma: f64,
    pub beta: f64,
    /// The exact output, approximately (|y| enters only through u·|y|): a `Wide`, because
    /// on f64 rows it may lie past f64::MAX where the correctly rounded output is ±∞.
    pub y: Wide,
}

/// B_i of the module documentation: how far a correct kernel's unrounded result may be from
/// the exact one. A `Wide`, never rounded on the way (`within_bound` compares with it as
/// such; `to_f64` rounds it for reports).
pub fn bound(dtype: Dtype, d: usize, stats: &RowStats, e: ElementTerms) -> Wide {
    evaluate(
        dtype,
        stats.op,
        &Constants::new(dtype, d),
        &RowFactors::of(stats),
        &e,
    )
}

fn evaluate(dtype: Dtype, op: Op, c: &Constants, row: &RowFactors, e: &ElementTerms) -> Wide {
    if let Some(f) = Factors::plain(row, e) {
        let t = terms(op, c, &f);
        let rest = t.first_order + t.mean_error_squared + t.parameters;
        if dtype != Dtype::F64 {
            // In the box, d·u_min/s with the narrow formats' u_min = 2^-149 is ≥ 2^(-149-K)
            // and |γ| times it ≥ 2^(-149-2K): normal.
            return finish(Wide::of(rest + t.underflow));
        }
        // f64's d·2^-1074 is subnormal itself: that term is formed wide and added to the rest
        // (which is exact to the last bit here: the same bits as the wide path).
        return finish(Wide::of(rest) + underflow_term(c, Wide::of(f.gamma), row.inv_scale));
    }
    let t = terms(op, c, &Factors::wide(row, e));
    finish(t.first_order + t.mean_error_squared + t.parameters + t.underflow)
}

/// The fraction of the tolerance an output uses: |o − y| / (B + ulp(max(|o|, |y|))), the ulp
/// being the format's, at most MAX's (the kernel's last rounding; past MAX it rounds to ±∞).
/// The output passes the bound when it is at most 1. Formed in f64 where y, |o − y| and the
/// slack are finite f64s (one rounding each, as `Wide`'s), else in `Wide`: a slack past
/// f64::MAX, a difference of two values near ±f64::MAX, or an exact y past f64::MAX (whose
/// correctly rounded output is ±∞) neither overflows nor accepts.
///
/// For o = ±∞ (y finite) it is |±T − y| / B, T = MAX + ulp(MAX)/2 the format's overflow
/// threshold: a kernel whose unrounded result lies within B of y rounds to ±∞ exactly when
/// that result reaches ±T (T already is the last rounding's, so no ulp of slack).
pub fn bound_use(dtype: Dtype, o: f64, y: Wide, b: Wide) -> f64 {
    let max = dtype.max_finite();
    if o.is_infinite() && y.is_finite() {
        let threshold = Wide::of(max) + Wide::of(dtype.ulp_at(max)).scaled(-1);
        let threshold = if o > 0.0 { threshold } else { -threshold };
        return ((threshold - y).abs() / b).to_f64();
    }
    let last_rounding = |larger: f64| dtype.ulp_at(larger.min(max));
    if let Some(y) = y.to_normal_f64() {
        let ulp = last_rounding(o.abs().max(y.abs()));
        if let Some(b) = b.to_normal_f64() {
            let (difference, slack) = ((o - y).abs(), b + ulp);
            if difference.is_finite() && slack.is_finite() {
                return difference / slack;
            }
        }
    }
    let ulp = last_rounding(o.abs().max(y.abs().to_f64()));
    ((Wide::of(o) - y).abs() / (b + Wide::of(ulp))).to_f64()
}

/// Whether output value `o` lies within the bound of the exact value `y` (±∞ where the bound
/// reaches the overflow threshold on its side; a finite o where y lies past the threshold
/// and within the bound of o; never NaN, never for a non-finite y).
pub fn within_bound(dtype: Dtype, o: f64, y: Wide, b: Wide) -> bool {
    bound_use(dtype, o, y, b) <= 1.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::EpsConvention;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};
    use rug::{Float, Rational};

    #[test]
    fn depth_is_ceil_log2_plus_one_plus_ceil_sqrt() {
        assert_eq!(summation_depth(1), 2.0);
        assert_eq!(summation_depth(2), 4.0);
        assert_eq!(summation_depth(3), 5.0);
        assert_eq!(summation_depth(4096), 13.0 + 64.0);
        assert_eq!(summation_depth(4097), 14.0 + 65.0);
    }

    #[test]
    fn bound_grows_with_condition_and_rejects_a_one_pass_error() {
        let zero = Rational::new();
        let calm = RowStats::compute(
            &[-1.0, 0.0, 1.0, 2.0],
            Dtype::F32,
            Op::LayerNorm,
            EpsConvention::Inside,
            &zero,
        );
        let off = 1e4;
        let shifted: Vec<f64> = [-1.0, 0.0, 1.0, 2.0].iter().map(|v| v + off).collect();
        let hard = RowStats::compute(
            &shifted,
            Dtype::F32,
            Op::LayerNorm,
            EpsConvention::Inside,
            &zero,
        );
        let t = |x| ElementTerms {
            x,
            gamma: 1.0,
            beta: 0.0,
            y: Wide::of(1.0),
        };
        let b_calm = bound(Dtype::F32, 4, &calm, t(2.0));
        let b_hard = bound(Dtype::F32, 4, &hard, t(2.0 + off));
        let (b_calm, b_hard) = (b_calm.to_f64(), b_hard.to_f64());
        assert!(b_hard > 1000.0 * b_calm);
        // One-pass variance in f32 at κ = 1e4 errs by ≈ u·κ² ≫ 1: far outside.
        assert!(b_hard < 0.1);
        // A correctly rounded f32 value is always inside.
        let b_calm = Wide::of(b_calm);
        assert!(within_bound(
            Dtype::F32,
            1.0 + 2f64.powi(-23),
            Wide::of(1.0),
            b_calm
        ));
        assert!(!within_bound(Dtype::F32, 1.001, Wide::of(1.0), b_calm));
    }

    /// The same formula in MPFR at `p` bits, operation for operation as `terms` (MPFR's
    /// exponent range is as wide as `Wide`'s).
    fn mpfr_terms(op: Op, c: &Constants, f: &Factors<Wide>, p: u32) -> Terms<Float> {
        let v = |w: Wide| w.to_float(p);
        let k = |x: f64| Float::with_val(p, x);
        let mul = |a: &Float, b: &Float| Float::with_val(p, a * b);
        let add = |a: &Float, b: &Float| Float::with_val(p, a + b);
        let r = v(f.inv_scale);
        let g = v(f.gamma).abs();
        let sub = |a: &Float, b: &Float| Float::with_val(p, a - b);
        let (delta_over_s, e_mu_over_s, numerator) = match op {
            Op::LayerNorm => (
                mul(&sub(&sub(&v(f.x), &v(f.mean)), &v(f.mean_lo)), &r),
                mul(&k(c.mean_error), &mul(&v(f.mean_abs), &r)),
                add(&v(f.x).abs(), &v(f.mean_abs)),
            ),
            Op::RmsNorm => (mul(&v(f.x), &r), k(0.0), v(f.x).abs()),
        };
        Terms {
            first_order: mul(&k(c.first_order), &mul(&g, &mul(&numerator, &r))),
            mean_error_squared: mul(
                &mul(&mul(&g, &delta_over_s.abs()), &e_mu_over_s),
                &e_mu_over_s,
            ),
            parameters: mul(&k(c.u), &add(&v(f.beta).abs(), &v(f.y).abs())),
            underflow: mul(&g, &mul(&k(c.underflow), &r)),
        }
    }

    fn mpfr_bound(t: &Terms<Float>, p: u32) -> Float {
        let sum = [&t.mean_error_squared, &t.parameters, &t.underflow]
            .iter()
            .fold(t.first_order.clone(), |a, b| Float::with_val(p, &a + *b));
        sum * SAFETY_FACTOR
    }

    /// A finite f64 with a binary exponent in ±`spread` (any finite f64 past 1074), zero
    /// one time in eight, either sign.
    fn any_value(rng: &mut ChaCha8Rng, spread: u32) -> f64 {
        if rng.next_u32().is_multiple_of(8) {
            return 0.0;
        }
        if spread > 1074 {
            return loop {
                let x = f64::from_bits(rng.next_u64());
                if x.is_finite() {
                    break x;
                }
            };
        }
        let k = (rng.next_u32() % (2 * spread + 1)) as i32 - spread as i32;
        let m = 1.0 + (rng.next_u64() >> 12) as f64 * pow2(-52);
        let sign = if rng.next_u32().is_multiple_of(2) {
            1.0
        } else {
            -1.0
        };
        sign * libm::ldexp(m, k)
    }

    /// A row factor with an exponent in ±`spread` (past f64's range where it is > 1023).
    fn any_factor(rng: &mut ChaCha8Rng, spread: u32) -> Wide {
        let k = (rng.next_u32() % (2 * spread + 1)) as i32 - spread as i32;
        Wide::of(any_value(rng, 0).abs()).scaled(k)
    }

    struct Case {
        dtype: Dtype,
        op: Op,
        d: usize,
        row: RowFactors,
        e: ElementTerms,
    }

    /// Cases in three regimes: inside the plain path's box, around its edge, and across
    /// and past f64's whole range.
    fn cases(seed: u64, n: usize) -> Vec<Case> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|i| {
                let (value_spread, factor_spread) = match i % 3 {
                    0 => (100, 100),
                    1 => (130, 130),
                    _ => (1100, 1500),
                };
                let mut v = || any_value(&mut rng, value_spread);
                let e = ElementTerms {
                    x: v(),
                    gamma: v(),
                    beta: v(),
                    y: Wide::of(v()),
                };
                let mean = any_factor(&mut rng, factor_spread);
                // μ_lo: below half an ulp of μ_hi, or 0.
                let lo = Wide::of(any_value(&mut rng, 0)).scaled(-54 - (i % 7) as i32 * 9);
                let row = RowFactors {
                    inv_scale: any_factor(&mut rng, factor_spread),
                    mean,
                    mean_lo: mean * lo,
                    mean_abs: any_factor(&mut rng, factor_spread),
                };
                Case {
                    dtype: Dtype::ALL[rng.next_u32() as usize % 4],
                    op: Op::ALL[rng.next_u32() as usize % 2],
                    d: 1 + rng.next_u32() as usize % 5000,
                    row,
                    e,
                }
            })
            .collect()
    }

    /// Each term of B_i, in `Wide`, is MPFR's 53-bit evaluation of the same formula bit for
    /// bit, at any exponents: no intermediate rounds to 0 or ∞.
    #[test]
    fn each_term_equals_mpfr_at_extreme_exponents() {
        for case in cases(11, 6000) {
            let c = Constants::new(case.dtype, case.d);
            let f = Factors::wide(&case.row, &case.e);
            let (t, m) = (terms(case.op, &c, &f), mpfr_terms(case.op, &c, &f, 53));
            for (name, w, f) in [
                ("first order", t.first_order, &m.first_order),
                ("mean error²", t.mean_error_squared, &m.mean_error_squared),
                ("parameters", t.parameters, &m.parameters),
                ("underflow", t.underflow, &m.underflow),
            ] {
                assert_eq!(w.to_float(53), *f, "{name}: {:?} {:?}", case.row, case.e);
            }
        }
    }

    /// B_i — by the plain f64 path where the inputs allow it, else in `Wide` — is MPFR's
    /// 53-bit evaluation of the formula bit for bit: the two paths agree, and the plain path
    /// loses nothing to the f64 range. Both paths run, and the f64 dtype's subnormal d·u_min.
    #[test]
    fn bound_equals_mpfr_and_both_paths_agree() {
        let (mut plain_f64, mut plain_narrow, mut wide) = (0, 0, 0);
        for case in cases(12, 9000) {
            let c = Constants::new(case.dtype, case.d);
            let b = evaluate(case.dtype, case.op, &c, &case.row, &case.e);
            let f = Factors::wide(&case.row, &case.e);
            let want = mpfr_bound(&mpfr_terms(case.op, &c, &f, 53), 53);
            assert_eq!(b.to_float(53), want, "{:?} {:?}", case.row, case.e);
            match (Factors::plain(&case.row, &case.e), case.dtype) {
                (Some(_), Dtype::F64) => plain_f64 += 1,
                (Some(_), _) => plain_narrow += 1,
                (None, _) => wide += 1,
            }
        }
        assert!(plain_f64 > 300 && plain_narrow > 1000 && wide > 3000);
    }

    /// The products are accurate, not only reproducible: against MPFR at 300 bits, the terms
    /// without cancellation (all but LayerNorm's δ/s = x/s − μ/s) err by a few roundings.
    #[test]
    fn terms_are_accurate_at_extreme_exponents() {
        for case in cases(13, 6000) {
            let c = Constants::new(case.dtype, case.d);
            let f = Factors::wide(&case.row, &case.e);
            let (t, m) = (terms(case.op, &c, &f), mpfr_terms(case.op, &c, &f, 300));
            let mut pairs = vec![
                (t.first_order, &m.first_order),
                (t.parameters, &m.parameters),
                (t.underflow, &m.underflow),
            ];
            if case.op == Op::RmsNorm {
                pairs.push((t.mean_error_squared, &m.mean_error_squared));
            }
            for (w, exact) in pairs {
                if exact.is_zero() {
                    assert!(w.is_zero());
                    continue;
                }
                let rel = Float::with_val(300, w.to_float(300) / exact) - 1u32;
                assert!(rel.abs() < 5.0 * pow2(-53), "{:?} {:?}", case.row, case.e);
            }
        }
    }

    /// The row factors are μ and 1/s to 53 bits, and mean|x| is Σ|x| summed in order at 53
    /// bits, then divided by d: on f64 rows spanning the whole range (where s is no f64 and
    /// the sum would overflow in f64) as on ordinary ones (where they are plain f64s).
    #[test]
    fn row_factors_are_nearest_53_bits() {
        let rows: [(&[f64], Dtype); 5] = [
            (&[1.0, 2.0, 4.0, -0.5], Dtype::F32),
            (&[1e300, -1.7e308, 1.7e308, 5e-324, 1.7e308], Dtype::F64),
            (&[2e-242, 7e302, -7e302, 1e-300], Dtype::F64),
            (&[5e-324, 1e-323, -5e-324, 2e-323], Dtype::F64),
            (&[1e-20, 3e-20, 1e-19], Dtype::F32),
        ];
        for (values, dtype) in rows {
            for op in Op::ALL {
                let eps = Rational::from_f64(1e-5).unwrap();
                let s = RowStats::compute(values, dtype, op, EpsConvention::Inside, &eps);
                let exact_inv_scale = Float::with_val(
                    300,
                    Float::with_val(300, Rational::from(&s.q + &eps))
                        .sqrt()
                        .recip(),
                );
                assert_eq!(
                    s.inv_scale_wide.to_float(53),
                    Float::with_val(53, &exact_inv_scale)
                );
                let [hi, lo] = s.mean_wide;
                assert_eq!(hi.to_float(53), Float::with_val(53, &s.mean));
                let rest = &s.mean - hi.to_float(53).to_rational().unwrap();
                assert_eq!(lo.to_float(53), Float::with_val(53, &rest));
                let sum = values
                    .iter()
                    .fold(Float::new(53), |a, x| Float::with_val(53, a + x.abs()));
                let mean_abs = Float::with_val(53, sum / values.len() as u32);
                assert_eq!(s.mean_abs.to_float(53), mean_abs, "{values:?}");
                if s.fast {
                    assert_eq!(s.inv_scale_wide.to_f64(), s.inv_scale_dd.hi);
                    assert_eq!([hi.to_f64(), lo.to_f64()], [s.mean_dd.hi, s.mean_dd.lo]);
                }
            }
        }
    }

    /// The main term survives where its factors under- or overflow alone: κ_i = |x_i|/s below
    /// f64's range with |γ_i|·κ_i inside it (the CI finding of 9dfb72a), |γ_i|·κ_i past it
    /// with 2(L+9)u·|γ_i|·κ_i inside, and a subnormal γ_i times u before κ_i brings it back.
    #[test]
    fn the_main_term_never_rounds_to_zero_or_infinity_on_the_way() {
        let eps = Rational::new();
        let main_term = |stats: &RowStats, x: f64, gamma: f64, d: usize| {
            let c = Constants::new(Dtype::F64, d);
            let numerator = match stats.op {
                Op::LayerNorm => Float::with_val(300, x.abs() + stats.mean_abs.to_float(300)),
                Op::RmsNorm => Float::with_val(300, x.abs()),
            };
            let exact =
                numerator * stats.inv_scale.clone() * gamma.abs() * c.first_order * SAFETY_FACTOR;
            let e = ElementTerms {
                x,
                gamma,
                beta: 0.0,
                y: Wide::ZERO,
            };
            let b = bound(Dtype::F64, d, stats, e).to_float(300);
            // B_i ≥ F·(first-order term), and the first-order term dominates here.
            let rel = (Float::with_val(300, &b / &exact) - 1u32).to_f64();
            assert!(
                (-1e-15..1e-6).contains(&rel),
                "B = {b:e}, first order {exact:e}"
            );
        };
        let rms = |values: &[f64]| {
            RowStats::compute(values, Dtype::F64, Op::RmsNorm, EpsConvention::Inside, &eps)
        };
        let underflowing_kappa = rms(&[2e-242, 7e302, -7e302]);
        assert_eq!(2e-242 * underflowing_kappa.inv_scale_wide.to_f64(), 0.0);
        main_term(&underflowing_kappa, 2e-242, 1.7e286, 3);
        let offset: Vec<f64> = [1.0, -1.0, 2.0, -2.0].iter().map(|v| 1e10 + v).collect();
        let layer = RowStats::compute(
            &offset,
            Dtype::F64,
            Op::LayerNorm,
            EpsConvention::Inside,
            &eps,
        );
        assert!((1e300 * condition(&layer, offset[0])).is_infinite());
        main_term(&layer, offset[0], 1e300, 4);
        main_term(&layer, offset[0], 1e-315, 4);
    }

    /// δ_i is accurate where x_i ≈ μ (κ ≫ 1: the second-order term dominates B_i there, and
    /// x/s − μ/s would leave only the noise of their roundings): rows one ulp apart at 1 and
    /// at 1e300 (the wide path), against δ_i/s from the exact μ.
    #[test]
    fn delta_is_accurate_where_x_is_near_the_mean() {
        for c in [1.0, 1e300] {
            let ulp = Dtype::F64.ulp_at(c);
            let values = [c, c, c + ulp, c, c + 2.0 * ulp, c - ulp, c];
            let eps = Rational::new();
            let s = RowStats::compute(
                &values,
                Dtype::F64,
                Op::LayerNorm,
                EpsConvention::Inside,
                &eps,
            );
            assert_eq!(s.fast, c == 1.0);
            let consts = Constants::new(Dtype::F64, values.len());
            for &x in &values {
                let e = ElementTerms {
                    x,
                    gamma: 1.0,
                    beta: 0.0,
                    y: Wide::ZERO,
                };
                let t = terms(
                    Op::LayerNorm,
                    &consts,
                    &Factors::wide(&RowFactors::of(&s), &e),
                );
                let delta = Rational::from_f64(x).unwrap() - &s.mean;
                let e_mu_over_s = Float::with_val(300, s.mean_abs.to_float(300) * &s.inv_scale)
                    * consts.mean_error;
                let exact =
                    Float::with_val(300, delta) * &s.inv_scale * e_mu_over_s.clone() * e_mu_over_s;
                let rel =
                    Float::with_val(300, t.mean_error_squared.to_float(300) / exact.abs()) - 1u32;
                assert!(rel.to_f64().abs() < 1e-14, "c = {c:e}, x = {x:e}: {rel}");
            }
        }
    }

    /// The comparison itself neither overflows nor accepts by overflow: a bound past
    /// f64::MAX is compared as such, and so is a difference of two values near ±f64::MAX.
    #[test]
    fn within_bound_past_the_f64_range() {
        let (o, y) = (-1.7e308, Wide::of(1.7e308));
        let below = Wide::of(1.35e308).scaled(1); // 2.7e308 < |o − y| = 3.4e308
        let above = Wide::of(1.75e308).scaled(1); // 3.5e308
        assert!(below.to_f64().is_infinite());
        assert!(!within_bound(Dtype::F64, o, y, below));
        assert!(within_bound(Dtype::F64, o, y, above));
        let used = bound_use(Dtype::F64, o, y, above);
        assert!((used - 3.4 / 3.5).abs() < 1e-12, "{used}");
        // A finite output where the exact value lies past f64::MAX (correctly rounded: +∞):
        // y = 2^1025 ≈ 3.6e308, o = 0 is within B = 2^1025 (plus MAX's ulp), not within
        // B = 2^1024; o = MAX is within B = 2^1024. The ulp of slack is MAX's, 2^971.
        let past = Wide::of(1.0).scaled(1025);
        assert!(past.to_f64().is_infinite());
        assert!(within_bound(Dtype::F64, 0.0, past, past));
        assert!(!within_bound(Dtype::F64, 0.0, past, past.scaled(-1)));
        assert!(within_bound(Dtype::F64, f64::MAX, past, past.scaled(-1)));
        let used = bound_use(Dtype::F64, 0.0, past, past.scaled(-1));
        assert!((used - 2.0).abs() < 1e-12, "{used}");
        // ±∞ where the bound reaches the overflow threshold T = 2^1024 − 2^970 on its side:
        // from y = 1.7e308, T − y ≈ 9.77e306 and −T − y ≈ −3.498e308.
        let threshold = Wide::of(1.0).scaled(1024) - Wide::of(1.0).scaled(970);
        let gap = (threshold - y).to_f64();
        assert!((gap / 9.769313486231581e306 - 1.0).abs() < 1e-12, "{gap:e}");
        let (reaching, short) = (Wide::of(gap), Wide::of(gap * (1.0 - 1e-15)));
        assert!(within_bound(Dtype::F64, f64::INFINITY, y, reaching));
        assert!(!within_bound(Dtype::F64, f64::INFINITY, y, short));
        assert!(!within_bound(Dtype::F64, f64::NEG_INFINITY, y, reaching));
        assert!(within_bound(Dtype::F64, f64::NEG_INFINITY, y, above));
        // f32: T = MAX + 2^103.
        let t32 = f32::MAX as f64 + 2f64.powi(103);
        assert!(within_bound(
            Dtype::F32,
            f64::INFINITY,
            Wide::of(1e38),
            Wide::of(t32 - 1e38)
        ));
        assert!(!within_bound(
            Dtype::F32,
            f64::INFINITY,
            Wide::of(1e38),
            Wide::of(t32 - 1.0001e38)
        ));
        assert!(!within_bound(
            Dtype::F64,
            f64::NAN,
            y,
            Wide::of(f64::INFINITY)
        ));
        // In range, the plain f64 ratio.
        let b = Wide::of(1e-3);
        let want = (1.0f64 - 1.0005).abs() / (1e-3 + Dtype::F64.ulp_at(1.0005));
        assert_eq!(bound_use(Dtype::F64, 1.0005, Wide::of(1.0), b), want);
    }
}
