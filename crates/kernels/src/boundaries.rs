//! Test points about the rounding boundaries of the output formats, and the exact check
//! that both output paths' certainty tests ([`super::row`]'s `needs_exact`, the f32 path's
//! [`super::simd::uncertain_lane`]) are held to: a lane a test clears must round as every
//! value within its bound does.

use super::element::Element;
use crate::dtype::{pow2, Dtype};
use crate::exact::slow::round_rational;
use crate::rng::Rng;
use rug::Rational;

/// Bounds the tests are given, as multiples of a lane's distance to its nearest boundary:
/// from none to far beyond it, and about the half and the whole of it, where a test's
/// lower bound of the distance (at least half the true one) decides.
pub(crate) const BOUND_FACTORS: [f64; 9] = [
    0.0,
    1.0 / (1u64 << 40) as f64,
    0.25,
    0.49,
    0.51,
    1.0,
    1.01,
    4.0,
    1024.0,
];

/// The rounding boundaries of `T` about every kind of place: midpoints in random binades
/// and in the first and the last interval of a binade (beside its edges, past which the
/// next boundary is the other binade's, half or twice as far), the subnormal grid's first,
/// second, last and a random midpoint, the overflow threshold; both signs. Each is an f64
/// number (those of f16 and bf16 f32 numbers too).
fn boundaries<T: Element>(rng: &mut Rng) -> Vec<f64> {
    let dt = T::DTYPE;
    let p = T::PRECISION as i32;
    let top = (1u64 << (p - 1)) - 1;
    let mut at = Vec::new();
    for _ in 0..12 {
        let e = dt.emin() + rng.below((dt.emax() - dt.emin()) as usize) as i32;
        let k = rng.below(top as usize) as u64;
        for k in [0, k, top] {
            // The midpoint (2^(p−1) + k + ½)·2^(e−p+1), of the interval k above 2^e.
            at.push(((1u64 << (p - 1)) + k) as f64 * pow2(e - p + 1) + pow2(e - p));
        }
    }
    let s = dt.min_positive_subnormal();
    for k in [0, 1, rng.below(top as usize) as u64, top] {
        at.push((k as f64 + 0.5) * s);
    }
    // The overflow threshold: the midpoint of the largest finite value and ∞.
    at.push(dt.midpoint(dt.next_down(dt.inf_bits()), dt.inf_bits()));
    at.iter().flat_map(|&m| [m, -m]).collect()
}

/// Points about every boundary of `T` (`boundaries`, seeded), each with its boundary m: m
/// itself, and m ± 2^j and m + (a random multiple in [2^j, 2^(j+1))) units of `grid`'s
/// spacing about m (`grid`: the format the test computes y in, f64 or f32), for j from 0
/// to three past T's half-ulp in those units: from on the boundary to well into the next
/// interval.
pub(crate) fn points<T: Element>(seed: u64, grid: Dtype) -> Vec<(f64, f64)> {
    let mut rng = Rng::new(seed, 0);
    let half_ulp_bit = grid.precision() - 1 - T::PRECISION as i32;
    let mut points = Vec::new();
    for m in boundaries::<T>(&mut rng) {
        let unit = grid.ulp_at(m);
        points.push((m, m));
        for j in 0..=half_ulp_bit + 3 {
            let random = 1.0 + rng.uniform();
            for k in [1.0, -1.0, random] {
                points.push((m + k * pow2(j) * unit, m));
            }
        }
    }
    points
}

/// y's distance to its nearest rounding boundary of `T` (the midpoints between y's
/// rounding and its two neighbours, the overflow threshold beside the largest finite
/// value), rounded; `None` beyond the overflow threshold, where no interval holds y.
pub(crate) fn distance_to_boundary<T: Element>(y: f64) -> Option<f64> {
    let dt = T::DTYPE;
    let r = dt.round_f64(y);
    if !dt.is_finite(r) {
        return None;
    }
    let distance = [dt.next_up(r), dt.next_down(r)]
        .into_iter()
        .map(|n| (y - dt.midpoint(r, n)).abs())
        .fold(f64::INFINITY, f64::min);
    Some(distance)
}

/// Whether every value within `bound` of y rounds to `T` as y does, exactly: rounding is
/// monotonic, so both ends of [y − bound, y + bound], as rationals, round
/// ([`round_rational`], rational arithmetic of its own) to y's rounding.
pub(crate) fn bound_keeps_rounding<T: Element>(y: f64, bound: f64) -> bool {
    let rounded = T::DTYPE.to_f64(T::DTYPE.round_f64(y));
    let (y, bound) = (
        Rational::from_f64(y).unwrap(),
        Rational::from_f64(bound).unwrap(),
    );
    [Rational::from(&y - &bound), y + bound]
        .iter()
        .all(|end| round_rational(T::DTYPE, end).0 == rounded)
}

/// The checks above ran: a certainty test judged `total` cases of `dt` and gave each answer
/// often, clearing (keeping) at least an eighth of them and at most three quarters.
pub(crate) fn assert_both_answers_given(dt: &str, cleared: usize, total: usize) {
    eprintln!("{dt}: {cleared} of {total} cleared");
    assert!(
        cleared * 8 > total && cleared * 4 < 3 * total,
        "{dt}: {cleared} of {total}"
    );
}
