//! The certainty test of the f64 path: how far a lane's f64 value may be from the exact
//! one, and whether that decides its rounding or the exact reference must.

use super::params::ParamsMax;
use crate::dtype::pow2;
use crate::element::Element;
use crate::simd::NearFilter;

/// How far the f64 value y = γ·z + β of the output pass may be from the exact one, as the
/// certainty test takes it (u = 2^-53):
///
///   |ŷ − y| ≤ RELATIVE·(|ŷ| + |β|) + |γ|·absolute.
///
/// * RELATIVE covers the relative error of z (the scale's, from the variance's rounding
///   errors, and those of the few operations after it) and the final rounding, as a share
///   of |γ·z| ≤ |ŷ| + |β|: where γ·z + β cancels, the error is that of γ·z, not of ŷ.
/// * absolute (LayerNorm) covers z's error that does not shrink with z: r·|m − δ|, the
///   error of the mean (from the rounding errors of Σ(x − c)), and ½u·r·|m|, from m·r
///   rounded (z = fma(x − c, r, −m·r)). It is `u·r·(ABSOLUTE_MEAN·|m| + ABSOLUTE_SPREAD·σ)`.
///
/// These are coverage factors over the errors measured on random and structured rows
/// (`bound_tests`: at most 19 % of the bound, d from 64 to 65536), not proved bounds: the
/// summation errors are ≲ n·u in the worst case (n = d/16 terms per partial sum).
///
/// Each vector goes through a cheap filter ([`NearFilter`]): a lane passes when it is at
/// least W f64-ulps from the midpoint of its interval and |ŷ| ≥ small, with small =
/// max(2^emin, floor/((W − 64)·u)), floor = RELATIVE·max|β| + max|γ|·absolute over the
/// call. Then the bound is below RELATIVE·|ŷ| + (W − 64)·u·|ŷ| < W·u·|ŷ| < W ulps of ŷ:
/// less than the distance to any midpoint (those of the lower binade are at least
/// 2^(half_bit − 1) ulps away, and W ≤ 2^(half_bit − 1)). The lanes that fail it get the
/// test itself, lane by lane ([`needs_exact`]), and go to the exact reference if they fail
/// that.
pub(crate) const RELATIVE: f64 = 32.0 * U;
pub(crate) const ABSOLUTE_MEAN: f64 = 4.0;
pub(crate) const ABSOLUTE_SPREAD: f64 = 1.0;
pub(super) const U: f64 = 1.0 / (1u64 << 53) as f64;
/// The filter's window W in f64-ulps, per format (`half_bit`): the lanes it sends to the
/// lane-by-lane test are those within W ulps of a midpoint, 2W/2^(half_bit + 1) of random
/// ones, and those below small, about 0.8·2·small of |ŷ| ~ N(0, 1), small ≈ 16/W with
/// the bench's γ and β: the sum is least for W² ≈ 2^(half_bit + 4.7). f32: 2^16 (4.4e-4
/// of its lanes, about two per row of 4096); f16: 2^23; bf16: 2^24 (below 1e-5).
#[inline(always)]
pub(super) fn window(half_bit: u32) -> u64 {
    1 << ((half_bit + 5) / 2).min(half_bit - 1)
}

/// The least |ŷ| for which a window of w ulps covers the bound's `floor`: floor/((w − 64)·u),
/// rounded up by far more than the few roundings in and around it. A product with the
/// reciprocal, a constant where w is: this runs once a row, on the chain of scalar
/// operations between the row's sums and its output loop.
#[inline(always)]
pub(super) fn covered_from(floor: f64, w: u64) -> f64 {
    floor * (1.0 / ((w - 64) as f64 * U)) * (1.0 + 1e-9)
}

/// The test itself for one lane: whether ŷ = `y` rounds (to the output format) as the
/// exact value does, given the bound fma(size, RELATIVE, floor) (see [`bound_terms`]).
/// It compares the bound with a lower bound of the distance to the nearest midpoint: the
/// distance to the midpoint of y's own interval (y's bits below the format's last one
/// replaced by the midpoint pattern: the same binade, so the subtraction is exact), and
/// |y|·2^(−p−2) for the lower binade's (for y in [2^e, 2^(e+1)), the nearest below 2^e is
/// 2^e − 2^(e−p−1)); below the format's normal range, the distance on its fixed grid.
/// Non-finite values are left as they are (a row whose statistics are finite has a
/// finite ŷ wherever γ and β are finite).
pub(super) fn needs_exact<T: Element>(y: f64, size: f64, floor: f64) -> bool {
    if !y.is_finite() {
        return false;
    }
    let bound = size.mul_add(RELATIVE, floor);
    let magnitude = y.abs();
    let distance = if magnitude >= pow2(T::DTYPE.emin()) {
        let half = 1u64 << T::HALF_ULP_BIT;
        let midpoint = f64::from_bits((y.to_bits() & !(2 * half - 1)) | half);
        let lower = magnitude * pow2(-(T::PRECISION as i32) - 2);
        (y - midpoint).abs().min(lower)
    } else {
        // The midpoints (k + ½)·s of the subnormal spacing s (zero is s/2 away). Exact:
        // scaling by a power of two, and a subtraction of numbers below 2^24 whose
        // difference has no more bits than y.
        let spacing = T::DTYPE.min_positive_subnormal();
        let w = magnitude / spacing;
        (w - w.floor() - 0.5).abs() * spacing
    };
    // NaN in the bound (a NaN γ or β) fails the lane: `kept` is false for it.
    let kept = bound < distance;
    !kept
}

/// A row's constants of the certainty test, as scalars.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckConstants {
    /// z's absolute error term (0 for RMSNorm).
    absolute: f64,
    pub(super) filter: NearFilter,
}

impl CheckConstants {
    /// The test of a row of output format `T` whose z has absolute error term `absolute`,
    /// with max |γ| and |β| of the call in `params`.
    pub(super) fn new<T: Element>(absolute: f64, params: ParamsMax) -> CheckConstants {
        let floor = RELATIVE * params.beta + params.gamma * absolute;
        // Rounded up by far more than the few roundings above and below; NaN (a NaN in γ
        // or β) fails every lane, as it should.
        let w = window(T::HALF_ULP_BIT);
        let filter = NearFilter::new(T::DTYPE, w, covered_from(floor, w));
        CheckConstants { absolute, filter }
    }
}

/// The two terms of the bound (size, floor) of each lane of ŷ = `y`, γ = `g`, β = `b`
/// (those absent ignored): bound = fma(size, RELATIVE, floor). RMSNorm's `absolute` is 0.
pub(super) fn bound_terms<const G: bool, const B: bool>(
    c: &CheckConstants,
    y: [f64; 8],
    g: [f64; 8],
    b: [f64; 8],
) -> ([f64; 8], [f64; 8]) {
    let size = std::array::from_fn(|l| {
        if B {
            y[l].abs() + b[l].abs()
        } else {
            y[l].abs()
        }
    });
    // |γ| = 1 where there is no γ.
    let floor = std::array::from_fn(|l| {
        if G {
            g[l].abs() * c.absolute
        } else {
            c.absolute
        }
    });
    (size, floor)
}
