//! The careful-kernel model's arithmetic, where the bound runs it: the accumulation format
//! ([`Acc`]), the power-of-two scaling, and Welford's algorithm, whose errors the bound takes
//! a posteriori (`tolerance`, item 4). The soundness suite runs the rest of the model with
//! the same pieces.

use crate::dtype::exponent_of;
use crate::wide::Wide;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// The accumulation format: f32 (f16/bf16/f32 rows) or f64.
pub(crate) trait Acc:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    const ZERO: Self;
    /// Where max|x| must lie for the sums of squares neither to overflow nor to underflow.
    const SAFE_EXPONENT: i32;
    fn of(x: f64) -> Self;
    fn to_f64(self) -> f64;
    #[cfg(test)]
    fn sqrt(self) -> Self;
    fn mul_add(self, a: Self, b: Self) -> Self;
}

impl Acc for f32 {
    const ZERO: f32 = 0.0;
    const SAFE_EXPONENT: i32 = 50;
    fn of(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[cfg(test)]
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    fn mul_add(self, a: f32, b: f32) -> f32 {
        f32::mul_add(self, a, b)
    }
}

impl Acc for f64 {
    const ZERO: f64 = 0.0;
    const SAFE_EXPONENT: i32 = 400;
    fn of(x: f64) -> f64 {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    #[cfg(test)]
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    fn mul_add(self, a: f64, b: f64) -> f64 {
        f64::mul_add(self, a, b)
    }
}

/// The power of two 2^k a careful kernel scales its row by: down to max|x| ≈ 1 above
/// 2^SAFE (the squares would overflow); up below 2^-SAFE as far as ε·4^k stays below
/// 2^(2·SAFE) (where ε dominates, the squares' underflow does not matter); else k = 0.
pub(crate) fn scaling_exponent<A: Acc>(x: &[f64], eps: f64) -> i32 {
    let max = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if max == 0.0 || !max.is_finite() {
        return 0;
    }
    let e = exponent_of(max);
    let safe = A::SAFE_EXPONENT;
    if e > safe {
        -e
    } else if e < -safe {
        let room = if eps > 0.0 {
            ((2 * safe) as f64 - eps.log2()) / 2.0
        } else {
            f64::INFINITY
        };
        (-e).min(room.floor() as i32).max(0)
    } else {
        0
    }
}

/// x·2^k in the accumulation format (exact where it stays in range: 2^k itself may not be an
/// f64).
pub(crate) fn scaled<A: Acc>(x: &[f64], k: i32) -> Vec<A> {
    x.iter().map(|&v| A::of(libm::ldexp(v, k))).collect()
}

/// Welford's mean and M₂ of `x` in one lane (n, mean, M₂): each update
/// m ← m + fl(x − m)/k (or ·fl(1/k)), M₂ ← M₂ + (x − m_old)(x − m_new) (fused or not).
fn welford_lane<A: Acc>(x: impl Iterator<Item = A>, reciprocal: bool, fma: bool) -> (A, A, A) {
    let (mut n, mut m, mut m2) = (A::ZERO, A::ZERO, A::ZERO);
    let one = A::of(1.0);
    for t in x {
        n = n + one;
        let delta = t - m;
        m = if reciprocal {
            m + delta * (one / n)
        } else {
            m + delta / n
        };
        m2 = if fma {
            delta.mul_add(t - m, m2)
        } else {
            m2 + delta * (t - m)
        };
    }
    (n, m, m2)
}

/// Chan's merge of two lanes' (n, mean, M₂).
fn chan_merge<A: Acc>(a: (A, A, A), b: (A, A, A)) -> (A, A, A) {
    let n = a.0 + b.0;
    if n == A::ZERO {
        return a;
    }
    let delta = b.1 - a.1;
    let mean = a.1 + delta * (b.0 / n);
    let m2 = a.2 + b.2 + delta * delta * (a.0 * b.0 / n);
    (n, mean, m2)
}

fn merge_pairwise<A: Acc>(lanes: &[(A, A, A)]) -> (A, A, A) {
    match lanes.len() {
        1 => lanes[0],
        n => chan_merge(
            merge_pairwise(&lanes[..n / 2]),
            merge_pairwise(&lanes[n / 2..]),
        ),
    }
}

/// The order a Welford kernel visits the row in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Visit {
    AsGiven,
    Increasing,
    Decreasing,
}

/// One Welford kernel of the model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Welford {
    pub visit: Visit,
    /// Strided lanes (element i to lane i mod lanes), merged pairwise by Chan's formula.
    pub lanes: usize,
    pub reciprocal: bool,
    pub fma: bool,
}

/// Every Welford kernel of the model: 3 visits × lanes 1, 8, 16, 32 × reciprocal × FMA.
pub(crate) fn welford_kernels() -> Vec<Welford> {
    let mut out = Vec::new();
    for visit in [Visit::AsGiven, Visit::Increasing, Visit::Decreasing] {
        for lanes in [1, 8, 16, 32] {
            for reciprocal in [false, true] {
                for fma in [false, true] {
                    out.push(Welford {
                        visit,
                        lanes,
                        reciprocal,
                        fma,
                    });
                }
            }
        }
    }
    out
}

/// A Welford kernel's (μ̂, v̂ = fl(M₂/d) or fl(M₂·fl(1/d))) over the scaled row `xs`.
pub(crate) fn welford<A: Acc>(xs: &[A], w: Welford) -> (A, A) {
    let mut v = xs.to_vec();
    match w.visit {
        Visit::AsGiven => {}
        Visit::Increasing => v.sort_by(|a, b| a.partial_cmp(b).expect("finite")),
        Visit::Decreasing => v.sort_by(|a, b| b.partial_cmp(a).expect("finite")),
    }
    let lanes: Vec<(A, A, A)> = (0..w.lanes.min(v.len()).max(1))
        .map(|j| {
            welford_lane(
                v.iter().skip(j).step_by(w.lanes).copied(),
                w.reciprocal,
                w.fma,
            )
        })
        .collect();
    let (n, mean, m2) = merge_pairwise(&lanes);
    let variance = if w.reciprocal {
        m2 * (A::of(1.0) / n)
    } else {
        m2 / n
    };
    (mean, variance)
}

/// What the model's Welford kernels did on a row: max |μ̂ − μ|, max |v̂ − q| and min v̂, in
/// the row's units (μ as hi + lo, q to 53 bits).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WelfordErrors {
    pub mean: Wide,
    pub variance: Wide,
    pub least_variance: Wide,
}

/// Runs every Welford kernel of the model on the row. Errors ∞ where a kernel's arithmetic
/// leaves the format (no finite bound).
pub(crate) fn welford_errors<A: Acc>(
    x: &[f64],
    eps: f64,
    mean: [Wide; 2],
    q: Wide,
) -> WelfordErrors {
    let k = scaling_exponent::<A>(x, eps);
    let xs = scaled::<A>(x, k);
    let infinite = Wide::of(f64::INFINITY);
    let mut out = WelfordErrors {
        mean: Wide::ZERO,
        variance: Wide::ZERO,
        least_variance: infinite,
    };
    for w in welford_kernels() {
        let (m, v) = welford(&xs, w);
        let (m, v) = (m.to_f64(), v.to_f64());
        if !m.is_finite() || !v.is_finite() {
            return WelfordErrors {
                mean: infinite,
                variance: infinite,
                least_variance: Wide::ZERO,
            };
        }
        let v = Wide::of(v).scaled(-2 * k);
        let dm = (Wide::of(m).scaled(-k) - mean[0] - mean[1]).abs();
        out.mean = super::tolerance::max_nonnegative(out.mean, dm);
        out.variance = super::tolerance::max_nonnegative(out.variance, (v - q).abs());
        if super::tolerance::max_nonnegative(v, out.least_variance) == out.least_variance {
            out.least_variance = v;
        }
    }
    out
}
