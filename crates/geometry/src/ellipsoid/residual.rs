//! The hot loop of the verification: `‖A v − μ v‖²` bounded from above and `‖v‖²` from below for
//! the structured operators of [`IntervalOperator`], in outward-rounded 128-bit interval
//! arithmetic without allocating per entry (fused multiply-adds into a reusable
//! [`Workspace`]). [`IntervalOperator::apply`] is the plain reference it is tested against.

use super::interval::{Interval, PREC};
use super::matrices::IntervalOperator;
use rug::float::Round;
use rug::ops::AssignRound;
use rug::Float;
use std::cmp::Ordering;

/// Scratch space for one thread, reused across eigenvectors.
pub struct Workspace {
    v: Vec<Interval>,
    p: Vec<Interval>,
    q: Vec<Interval>,
    dot: Interval,
    scratch: Interval,
    r: Interval,
    tmp: Float,
}

impl Workspace {
    pub fn new(n: usize) -> Self {
        Workspace {
            v: vec![Interval::zero(); n],
            p: vec![Interval::zero(); n],
            q: vec![Interval::zero(); n],
            dot: Interval::zero(),
            scratch: Interval::zero(),
            r: Interval::zero(),
            tmp: Float::new(PREC),
        }
    }
}

/// `acc += x²` rounded in direction `round` (`x²` formed exactly inside the fma).
fn add_square(acc: &mut Float, x: &Float, tmp: &mut Float, round: Round) {
    std::mem::swap(acc, tmp);
    acc.assign_round(x.mul_add_ref(x, tmp), round);
}

/// Returns `(U, L)` with `‖A v − μ v‖² ≤ U` and `‖v‖² ≥ L` for the exact operator.
pub fn residual_bounds(
    op: &IntervalOperator,
    mu: f64,
    v: &[f64],
    ws: &mut Workspace,
) -> (Float, Float) {
    let n = v.len();
    for (slot, &x) in ws.v.iter_mut().zip(v) {
        slot.set_f64(x);
    }
    // ws.p[i] ← an enclosure of (A v)_i.
    match op {
        IntervalOperator::ProjectedDiagonal { a, a_norm2, d } => {
            // P x = x − a (aᵀx)/(aᵀa), twice around the diagonal.
            ws.dot.set_f64(0.0);
            for (ai, vi) in a.iter().zip(&ws.v) {
                ws.dot.add_mul(ai, vi, &mut ws.scratch);
            }
            let c = ws.dot.div(a_norm2);
            for i in 0..n {
                ws.p[i].assign_sub_mul(&a[i], &c, &ws.v[i]);
                ws.q[i].assign_mul(&d[i], &ws.p[i]);
            }
            ws.dot.set_f64(0.0);
            for (ai, qi) in a.iter().zip(&ws.q) {
                ws.dot.add_mul(ai, qi, &mut ws.scratch);
            }
            let c = ws.dot.div(a_norm2);
            for ((p, ai), qi) in ws.p.iter_mut().zip(a).zip(&ws.q) {
                p.assign_sub_mul(ai, &c, qi);
            }
        }
        IntervalOperator::DiagonalPlusRankOne {
            support, d, a, c, ..
        } => {
            ws.dot.set_f64(0.0);
            for (aj, &i) in a.iter().zip(support) {
                ws.dot.add_mul(aj, &ws.v[i], &mut ws.scratch);
            }
            let scaled = ws.dot.mul(c);
            for p in ws.p.iter_mut() {
                p.set_f64(0.0);
            }
            for (j, &i) in support.iter().enumerate() {
                ws.q[i].assign_mul(&d[j], &ws.v[i]);
                ws.p[i].assign_mul_add(&a[j], &scaled, &ws.q[i]);
            }
        }
        IntervalOperator::Zero { .. } => {
            for p in ws.p.iter_mut() {
                p.set_f64(0.0);
            }
        }
    }
    let mu = Interval::point(mu);
    let mut r2 = Float::new(PREC);
    let mut v2 = Float::new(PREC);
    for i in 0..n {
        ws.r.assign_sub_mul(&mu, &ws.v[i], &ws.p[i]);
        let (lo, hi) = (ws.r.lo(), ws.r.hi());
        // max |x| over [lo, hi] is at an endpoint.
        let m = if lo.cmp_abs(hi) == Some(Ordering::Greater) {
            lo
        } else {
            hi
        };
        add_square(&mut r2, m, &mut ws.tmp, Round::Up);
        add_square(&mut v2, ws.v[i].lo(), &mut ws.tmp, Round::Down);
    }
    (r2, v2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ellipsoid::interval::add_up;

    /// The reference: the residual through the allocating `apply`.
    fn reference(op: &IntervalOperator, mu: f64, v: &[f64]) -> Float {
        let av = op.apply(v);
        let mut r2 = Float::new(PREC);
        for (avi, &vi) in av.iter().zip(v) {
            add_up(
                &mut r2,
                &avi.sub(&Interval::point(vi).mul_f64(mu)).square_upper(),
            );
        }
        r2
    }

    #[test]
    fn the_kernel_matches_the_reference_on_every_operator() {
        let v = [0.31, -0.52, 0.11, 0.27, -0.17];
        for g in [
            vec![1.0, -2.0, 0.5, 3.0, 1.25],
            vec![1.0, 0.0, 2.0, 0.0, 3.0],
            vec![0.0; 5],
        ] {
            for op in [IntervalOperator::tight_form(&g), IntervalOperator::gram(&g)] {
                for mu in [0.0, 0.7, -1.3] {
                    let mut ws = Workspace::new(5);
                    let (r2, v2) = residual_bounds(&op, mu, &v, &mut ws);
                    let want = reference(&op, mu, &v);
                    let rel = Float::with_val(PREC, &r2 - &want).abs()
                        / Float::with_val(PREC, &want + 1e-300);
                    assert!(rel < 1e-30, "g = {g:?}, mu = {mu}: {r2} vs {want}");
                    let exact_v2: f64 = v.iter().map(|x| x * x).sum();
                    assert!((v2.to_f64() - exact_v2).abs() < 1e-15);
                }
            }
        }
    }

    #[test]
    fn an_exact_eigenpair_has_a_tiny_residual_and_a_wrong_one_does_not() {
        // K = ΠG²Π with g = (1, 1, 2): e1 − e2 is an exact eigenvector with ζ = 1.
        let op = IntervalOperator::gram(&[1.0, 1.0, 2.0]);
        let mut ws = Workspace::new(3);
        let (r2, _) = residual_bounds(&op, 1.0, &[1.0, -1.0, 0.0], &mut ws);
        assert!(r2 < 1e-70, "{r2}");
        let (r2, _) = residual_bounds(&op, 1.0 + 1e-9, &[1.0, -1.0, 0.0], &mut ws);
        // ‖r‖² = 2·(1e-9)² exactly, up to rounding of 1 + 1e-9.
        assert!(r2 > 1.99e-18 && r2 < 2.01e-18, "{r2}");
    }
}
