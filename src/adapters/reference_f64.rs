//! `reference-f64`: a plain, careful f64 kernel — two passes with pairwise sums over the row
//! scaled by a power of two (so nothing overflows or underflows), one rounding to the output
//! format. Not the oracle (that is `exact`): a baseline a correct kernel looks like.

use super::Kernel;
use crate::dtype::{exponent_of, Dtype};
use crate::problem::{EpsConvention, Op, Problem};

pub struct ReferenceF64;

/// Pairwise sum (blocks of 8 summed sequentially, then halves).
pub fn pairwise_sum(v: &[f64]) -> f64 {
    if v.len() <= 8 {
        v.iter().sum()
    } else {
        let (a, b) = v.split_at(v.len() / 2);
        pairwise_sum(a) + pairwise_sum(b)
    }
}

/// y = γ·(x−μ)/s + β for one row, computed in f64 (NaN/∞ inputs propagate to NaN).
pub fn normalize_row_f64(
    op: Op,
    convention: EpsConvention,
    eps: f64,
    x: &[f64],
    gamma: impl Fn(usize) -> f64,
    beta: impl Fn(usize) -> f64,
) -> Vec<f64> {
    let d = x.len() as f64;
    let max = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if !max.is_finite() || x.iter().any(|v| v.is_nan()) {
        return vec![f64::NAN; x.len()];
    }
    let k = if max == 0.0 { 0 } else { exponent_of(max) };
    // Scaling by 2^-k is exact (libm's ldexp handles the whole range, subnormals included).
    let xs: Vec<f64> = x.iter().map(|&v| libm::ldexp(v, -k)).collect();
    let mean = match op {
        Op::LayerNorm => pairwise_sum(&xs) / d,
        Op::RmsNorm => 0.0,
    };
    let centred: Vec<f64> = xs.iter().map(|v| v - mean).collect();
    let squares: Vec<f64> = centred.iter().map(|c| c * c).collect();
    let q = pairwise_sum(&squares) / d;
    // In scaled units ε becomes ε·2^-2k (inside) or ε·2^-k (outside); when that overflows
    // (tiny rows scaled up), ε dominates and the unscaled form is safe instead.
    let scale_of = |q: f64, e: f64| match convention {
        EpsConvention::Inside => (q + e).sqrt(),
        EpsConvention::Outside => q.sqrt() + e,
    };
    let eps_scaled = match convention {
        EpsConvention::Inside => libm::ldexp(eps, -2 * k),
        EpsConvention::Outside => libm::ldexp(eps, -k),
    };
    let scaled = scale_of(q, eps_scaled);
    // A huge constant row: ε·2^-2k underflowed to 0 with q = 0; unscaled, s = √ε.
    let use_scaled = eps_scaled.is_finite() && (scaled > 0.0 || eps == 0.0);
    // The units of c and s: 2^units (scaled) or 1 (unscaled).
    let (centred, s, units) = if use_scaled {
        (centred, scaled, k)
    } else {
        let unscaled: Vec<f64> = centred.iter().map(|&c| libm::ldexp(c, k)).collect();
        (unscaled, scale_of(libm::ldexp(q, 2 * k), eps), 0)
    };
    centred
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let q = c / s;
            let (g, b) = (gamma(i), beta(i));
            if q.abs() < f64::MIN_POSITIVE {
                return tiny_quotient_times_gain(x[i], mean, k, s, units, g) + b;
            }
            let y = g * q + b;
            if y.is_finite() {
                y
            } else {
                // γ·q past the f64 range with β bringing the sum back (found by fuzzing):
                // formed at a quarter of the scale, where it cannot overflow.
                libm::ldexp(libm::ldexp(g, -2) * q + libm::ldexp(b, -2), 2)
            }
        })
        .collect()
}

/// γ·(x − μ)/s where the quotient falls below f64's normal range (an element tiny beside its
/// row: its scaled copy, or the quotient, underflows) while a large γ may bring the product
/// back into range — found by fuzzing: f64 rows spanning 10^300 and more with γ ≈ 10^216.
/// Every factor is brought to [1, 2) by its exponent (exact), the product formed there, and
/// the exponents applied once at the end. μ = mean·2^k (`mean` in scaled units), s is in
/// units of 2^units.
fn tiny_quotient_times_gain(x: f64, mean: f64, k: i32, s: f64, units: i32, gamma: f64) -> f64 {
    let exponent = |v: f64| (v != 0.0).then(|| exponent_of(v));
    // The exponent of the larger of |x| and |μ| (μ's own, not its possibly underflowed f64).
    let e = match (exponent(x), exponent(mean).map(|m| m + k)) {
        (None, None) => return 0.0,
        (a, b) => a.max(b).expect("one is nonzero"),
    };
    if gamma == 0.0 || s == 0.0 || !s.is_finite() {
        return gamma * ((libm::ldexp(x, -units) - libm::ldexp(mean, k - units)) / s);
    }
    let c = libm::ldexp(x, -e) - libm::ldexp(mean, k - e);
    let (g, f) = (exponent_of(gamma), exponent_of(s));
    let product = libm::ldexp(gamma, -g) * c / libm::ldexp(s, -f);
    libm::ldexp(product, g + e - f - units)
}

impl Kernel for ReferenceF64 {
    fn name(&self) -> String {
        "reference-f64".into()
    }
    fn supports(&self, _op: Op, _dtype: Dtype) -> bool {
        true
    }
    fn run(&self, p: &Problem) -> std::result::Result<Vec<u64>, String> {
        let dt = p.dtype;
        let eps = p.eps.value() as f64;
        let mut out = Vec::with_capacity(p.x.len());
        for r in 0..p.rows {
            let x: Vec<f64> = p.row(r).iter().map(|&b| dt.to_f64(b)).collect();
            let y = normalize_row_f64(
                p.op,
                p.convention,
                eps,
                &x,
                |i| p.gamma_at(i),
                |i| p.beta_at(i),
            );
            out.extend(y.into_iter().map(|v| dt.round_f64(v)));
        }
        Ok(out)
    }
}
