//! `reference-f64`: a plain, careful f64 kernel — two passes with pairwise sums over the row
//! scaled by a power of two (so nothing overflows or underflows), one rounding to the output
//! format. Not the oracle (that is `exact`): a baseline a correct kernel looks like. The
//! scale and the last step, γ·(x − μ)/s + β, whose factors span more than f64's range on
//! f64 rows, are formed in `Wide` where f64 would round to 0 or ∞ on the way.

use super::Kernel;
use crate::dtype::{exponent_of, Dtype};
use crate::problem::{EpsConvention, Op, Problem};
use crate::wide::Wide;

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
    // s in the row's own units, formed in `Wide` (no exponent limit): q·2^2k and ε need no
    // common scale there (ε·2^-2k overflows on tiny rows and underflows to 0 on huge
    // constant ones). Where both fit, this is the f64 √(q + ε·2^-2k) (or √q + ε·2^-k) of
    // the scaled row, times 2^k, bit for bit.
    let q_wide = Wide::of(q).scaled(2 * k);
    let s_wide = match convention {
        EpsConvention::Inside => (q_wide + Wide::of(eps)).sqrt(),
        EpsConvention::Outside => q_wide.sqrt() + Wide::of(eps),
    };
    let mean_wide = Wide::of(mean).scaled(k);
    // The last step in scaled f64 where s is a normal f64 there (else always in `Wide`).
    let s = s_wide.scaled(-k).to_normal_f64().filter(|&s| s > 0.0);
    centred
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let (g, b) = (gamma(i), beta(i));
            if let Some(s) = s {
                let q = c / s;
                let p = g * q;
                let y = p + b;
                // The f64 step is the `Wide` one below, bit for bit, where no value on the way
                // left f64's normal range (or was an exact 0): x's scaled copy, c = x − μ,
                // q = c/s and γ·q; and y is finite.
                let exact = xs[i].is_normal() || x[i] == 0.0;
                let in_range =
                    (c.is_normal() && q.is_normal() && (p.is_normal() || g == 0.0)) || c == 0.0;
                if exact && in_range && y.is_finite() {
                    return y;
                }
            }
            // γ·(x − μ)/s + β with nothing rounded to 0 or ∞ on the way (a tiny element beside
            // a huge row times a huge γ; γ·(x − μ)/s past f64::MAX with β bringing it back; x − μ
            // subnormal in a tiny row's own units): one rounding to f64 at the end.
            ((Wide::of(g) * ((Wide::of(x[i]) - mean_wide) / s_wide)) + Wide::of(b)).to_f64()
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// ULP distances of reference-f64's outputs from the correctly rounded ones (f64).
    fn distances(op: Op, eps: f32, x: &[f64], gamma: &[f64], beta: &[f64]) -> Vec<u64> {
        let p = Problem::one_row(op, Dtype::F64, eps, x, Some(gamma), Some(beta));
        let want = crate::exact::reference(&p).unwrap().y;
        let got = ReferenceF64.run(&p).unwrap();
        want.iter()
            .zip(&got)
            .map(|(&w, &g)| Dtype::F64.ulp_distance(w, g))
            .collect()
    }

    /// Where f64 would round to 0 or ∞ on the way, the last step runs in `Wide`: results stay
    /// within a few ULPs (exact means and sums here, so only the final steps' roundings).
    #[test]
    fn the_last_step_never_rounds_to_zero_or_infinity_on_the_way() {
        // x/s ≈ 1.4e-600 (the scaled copy of 1e-300 is 0 in f64) times γ = 1e300.
        let tiny_quotient = distances(Op::RmsNorm, 0.0, &[1e300, 1e-300], &[1.0, 1e300], &[0.0; 2]);
        // γ·(x − μ)/s = ±f64::MAX with β = ∓MAX/2 bringing the sum back.
        let half = f64::MAX / 2.0;
        let overflowing = distances(
            Op::LayerNorm,
            0.0,
            &[1e308, -1e308],
            &[f64::MAX; 2],
            &[-half, half],
        );
        // A tiny row under ε = 1e-5: ε·2^-2k overflows in the scaled units, and x − μ
        // (≈ 1e-310, μ inexact) is subnormal in the row's own units, keeping ~45 of its 53
        // bits; γ = 1e300 brings the output to ≈ 3e-8, where that was 158 ULPs off.
        let subnormal_centred = distances(
            Op::LayerNorm,
            1e-5,
            &[1e-310, 3e-310, 2.5e-310],
            &[1e300; 3],
            &[0.0; 3],
        );
        for d in [tiny_quotient, overflowing, subnormal_centred] {
            assert!(d.iter().all(|&u| u <= 2), "{d:?}");
        }
    }
}
