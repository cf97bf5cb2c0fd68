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
//! being the kernel's own final rounding to its output format.
//!
//! What it rejects: every classic bug makes an O(1) relative error on some family of the
//! battery — one-pass variance (error ≈ u·κ² where the bound grows like u·κ), ε outside
//! the root (rows with σ² ≈ ε), the (d−1) variance (relative 1/(2d), above 2(L+9)uκ for
//! d ≤ 4096), no mean subtraction, dropped SIMD tails, γ/β misindexed, statistics leaking
//! across rows, and sums of squares overflowing or underflowing in the kernel's format.

use crate::dtype::{exponent_of, pow2, Dtype};
use crate::exact::RowStats;
use crate::problem::Op;

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

/// The condition number κ_i = (|x_i| + mean|x|)/s of element i (RMSNorm: |x_i|/s).
pub fn condition(stats: &RowStats, x: f64) -> f64 {
    match stats.op {
        Op::LayerNorm => stats.over_scale(x.abs()) + stats.mean_abs_over_scale,
        Op::RmsNorm => stats.over_scale(x.abs()),
    }
}

/// The inputs of the bound for one element.
#[derive(Debug, Clone, Copy)]
pub struct ElementTerms {
    pub x: f64,
    pub gamma: f64,
    pub beta: f64,
    /// The exact output, approximately (|y| enters only through u·|y|).
    pub y: f64,
}

/// B_i of the module documentation: how far a correct kernel's unrounded result may be from
/// the exact one.
pub fn bound(dtype: Dtype, d: usize, stats: &RowStats, e: ElementTerms) -> f64 {
    let (u, u_min) = accumulation_precision(dtype);
    let l = summation_depth(d);
    // Every term is a ratio to s, computed as such (s itself may not be an f64).
    let x_over_s = stats.over_scale(e.x);
    let (delta_over_s, e_mu_over_s) = match stats.op {
        Op::LayerNorm => (
            x_over_s - stats.mean_over_scale,
            (l + 1.0) * u * stats.mean_abs_over_scale,
        ),
        Op::RmsNorm => (x_over_s, 0.0),
    };
    let g = e.gamma.abs();
    // |γ_i|·κ_i, formed without κ_i alone (which underflows for a tiny x_i over a huge s while
    // |γ_i|·κ_i does not: found by fuzzing, f64 rms_norm, x/s ≈ 1e-545, γ·x/s ≈ 4e-264).
    let gamma_condition = match stats.op {
        Op::LayerNorm => 2.0 * stats.times_over_scale(g, e.x.abs() / 2.0 + stats.mean_abs / 2.0),
        Op::RmsNorm => stats.times_over_scale(g, e.x.abs()),
    };
    let first_order = product(&[2.0 * (l + 9.0) * u, gamma_condition]);
    let mean_error_squared = product(&[g, delta_over_s.abs(), e_mu_over_s, e_mu_over_s]);
    let parameters = u * (e.beta.abs() + e.y.abs());
    let underflow = stats.times_over_scale(g, d as f64 * u_min);
    let b = SAFETY_FACTOR * (first_order + mean_error_squared + parameters + underflow);
    // κ past the f64 range (x/s overflows: a huge constant row with ε > 0) makes ∞ − ∞ in
    // δ/s; the model's bound there is unbounded, not undefined.
    if b.is_nan() {
        f64::INFINITY
    } else {
        b
    }
}

/// The product of the factors, left to right; where that underflows (a subnormal γ times u,
/// say, before κ brings the product back: found by fuzzing, f64 outputs near 1e-314 got a
/// bound of 0) it is formed from the factors' significands and exponents separately.
fn product(factors: &[f64]) -> f64 {
    let p: f64 = factors.iter().product();
    if p.abs() >= f64::MIN_POSITIVE || !p.is_finite() || factors.contains(&0.0) {
        return p;
    }
    if factors.iter().any(|f| !f.is_finite()) {
        return p;
    }
    let (m, e) = factors.iter().fold((1.0f64, 0i32), |(m, e), &f| {
        let k = exponent_of(f);
        (m * libm::ldexp(f, -k), e + k)
    });
    libm::ldexp(m, e)
}

/// The fraction of the tolerance an output uses: |o − y| / (B + ulp(max(|o|, |y|))).
/// The output passes the bound when it is at most 1.
pub fn bound_use(dtype: Dtype, o: f64, y: f64, b: f64) -> f64 {
    let slack = b + dtype.ulp_at(o.abs().max(y.abs()));
    (o - y).abs() / slack
}

/// Whether output value `o` (finite) lies within the bound of the exact value `y`.
pub fn within_bound(dtype: Dtype, o: f64, y: f64, b: f64) -> bool {
    bound_use(dtype, o, y, b) <= 1.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::EpsConvention;
    use rug::Rational;

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
            y: 1.0,
        };
        let b_calm = bound(Dtype::F32, 4, &calm, t(2.0));
        let b_hard = bound(Dtype::F32, 4, &hard, t(2.0 + off));
        assert!(b_hard > 1000.0 * b_calm);
        // One-pass variance in f32 at κ = 1e4 errs by ≈ u·κ² ≫ 1: far outside.
        assert!(b_hard < 0.1);
        // A correctly rounded f32 value is always inside.
        assert!(within_bound(Dtype::F32, 1.0 + 2f64.powi(-23), 1.0, b_calm));
        assert!(!within_bound(Dtype::F32, 1.001, 1.0, b_calm));
    }

    #[test]
    fn products_do_not_underflow_on_the_way() {
        let tiny = 1e-315;
        // Left to right, tiny·u underflows to 0 before 1e20 would restore it.
        assert_eq!(tiny * pow2(-53) * 1e20, 0.0);
        let p = product(&[tiny, pow2(-53), 1e20]);
        assert!((p / (tiny * 1e20 * pow2(-53)) - 1.0).abs() < 1e-12, "{p:e}");
        // In range, the plain left-to-right product (bit for bit).
        assert_eq!(product(&[3.0, 0.1, 7.0]), 3.0 * 0.1 * 7.0);
        assert_eq!(product(&[tiny, 0.0, 1e300]), 0.0);
    }
}
