//! The decision pipeline for normalized (scaled) keys k_j = w_j/√q_j. The float stages run on
//! f64 approximations of the keys and only propose; verdicts come from exact checks of
//! queries (`verify::check_scaled`) and of scaled-hull certificates (`certificate`).
//!
//! A scaled-hull certificate is assembled from three small float LPs over the cone system
//! Σ μ_j w_j = w_i, μ ≥ 0 (rational data, so every basis is re-solved exactly):
//! `below` minimizes ĉ·μ with ĉ_j ≈ √(q_j/q_i); `above` is a ray (Σν_j w_j = 0, Σν_j = 1)
//! or, when there is none, the maximizer of ĉ·μ. When the float stages fail, the exact LP is
//! run on rational enclosures of the keys with growing precision ("refined").

use super::certificate::{self, Above, Certificate, Query, Weights};
use super::decide::{
    exact_hull_lp, pow2_scale, weights, working_set_lp, Decision, LoopEnd, Method, Options,
};
use super::exact_solve;
use super::heuristics::{braid_reflect, FloatKeys};
use super::keys::ScaledKeySet;
use super::simplex::{self, Lp, LpOutcome};
use super::verify::{self, QueryCheck};
use crate::error::{Error, Result};
use crate::exact::surd::sqrt_bounds;
use rug::Rational;

/// Precisions (bits) of the rational enclosures tried by the refined exact fallback.
const REFINE_BITS: [u32; 3] = [64, 256, 1024];

/// Decides every key of a scaled key set, each verdict with a verified certificate. Errs only
/// when a key lies so close to the boundary of the others' hull that 1024-bit enclosures
/// cannot decide it.
pub fn decide_scaled(keys: &ScaledKeySet, opts: &Options) -> Result<Vec<Decision>> {
    let n = keys.n();
    let approx = keys.approx_key_set();
    let fdata: Option<Vec<f64>> = approx.as_ref().map(|a| {
        let s = pow2_scale(a.data().iter());
        a.data().iter().map(|x| x * s).collect()
    });
    let fk = fdata.as_ref().map(|data| FloatKeys {
        data,
        bias: None,
        n,
        d: keys.d(),
    });
    let mut out: Vec<Option<Decision>> = vec![None; n];
    let mut witnesses: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut hint = None;
    for i in 0..n {
        if opts.key_query {
            match verify::check_scaled(keys, i, &Query::OwnKey, hint) {
                QueryCheck::Selects => {
                    out[i] = Some(Decision {
                        certificate: Certificate::Query(Query::OwnKey),
                        method: Method::KeyAsQuery,
                    });
                    continue;
                }
                QueryCheck::BeatenBy(j) => {
                    hint = Some(j);
                    witnesses[i].push(j);
                }
            }
        }
        if let (Some(fk), true) = (&fk, opts.patience > 0) {
            if let Some(x) = braid_reflect(fk, i, opts.patience, &mut witnesses[i]) {
                let q = Query::Float(x);
                if verify::check_scaled(keys, i, &q, hint) == QueryCheck::Selects {
                    out[i] = Some(Decision {
                        certificate: Certificate::Query(q),
                        method: Method::BraidReflect,
                    });
                }
            }
        }
    }
    for i in 0..n {
        if out[i].is_some() {
            continue;
        }
        let mut decision = None;
        if let (Some(fk), true) = (&fk, opts.float_lp) {
            let mut verify =
                |v: &[f64], first| verify::check_scaled(keys, i, &Query::Float(v.to_vec()), first);
            decision = match working_set_lp(fk, i, &witnesses[i], &mut verify) {
                LoopEnd::Selects(v) => Some(Decision {
                    certificate: Certificate::Query(Query::Float(v)),
                    method: Method::FloatLp,
                }),
                LoopEnd::Support { .. } => {
                    let cols: Vec<usize> = (0..n).filter(|&j| j != i).collect();
                    scaled_hull(keys, i, &cols).map(|certificate| Decision {
                        certificate,
                        method: Method::FloatLp,
                    })
                }
                LoopEnd::GiveUp => None,
            };
        }
        out[i] = Some(match decision {
            Some(d) => d,
            None => refine(keys, i)?,
        });
    }
    Ok(out
        .into_iter()
        .map(|d| d.expect("every key decided"))
        .collect())
}

/// Exact rows of Σ_j μ_j w_j over `support`, optionally with a row of ones.
fn cone_rows(keys: &ScaledKeySet, support: &[usize], ones: bool) -> Vec<Vec<Rational>> {
    let mut rows: Vec<Vec<Rational>> = (0..keys.d())
        .map(|k| support.iter().map(|&j| keys.w(j)[k].clone()).collect())
        .collect();
    if ones {
        rows.push(vec![Rational::from(1); support.len()]);
    }
    rows
}

/// The exact nonnegative solution on a float basis, as weights over keys.
fn exact_on_basis(
    keys: &ScaledKeySet,
    cols: &[usize],
    basis: &[usize],
    rhs: &[Rational],
    ones: bool,
) -> Option<Weights> {
    let support: Vec<usize> = basis.iter().map(|&c| cols[c]).collect();
    let x = exact_solve::solve(&cone_rows(keys, &support, ones), rhs)?;
    if x.iter().any(|v| *v < 0) {
        return None;
    }
    Some(weights(&support, x))
}

/// A scaled-hull certificate for key i from float LPs over `cols`, checked exactly.
fn scaled_hull(keys: &ScaledKeySet, i: usize, cols: &[usize]) -> Option<Certificate> {
    if !keys.approx_reliable() {
        return None;
    }
    let d = keys.d();
    let s = pow2_scale(cols.iter().chain([&i]).flat_map(|&j| keys.w_approx(j)));
    let a: Vec<Vec<f64>> = (0..d)
        .map(|k| cols.iter().map(|&j| keys.w_approx(j)[k] * s).collect())
        .collect();
    let b: Vec<f64> = keys.w_approx(i).iter().map(|x| x * s).collect();
    let c: Vec<f64> = cols
        .iter()
        .map(|&j| (keys.q_approx(j) / keys.q_approx(i)).sqrt())
        .collect();
    let iters = simplex::default_iterations(d + 1, cols.len());
    let target: Vec<Rational> = keys.w(i).to_vec();
    let below_lp = Lp {
        a: a.clone(),
        b: b.clone(),
        cost: Some(c.clone()),
    };
    let LpOutcome::Optimal { basis, .. } = simplex::solve(&below_lp, iters) else {
        return None;
    };
    let below = exact_on_basis(keys, cols, &basis, &target, false)?;
    let tight = Certificate::ScaledHull {
        below: below.clone(),
        above: None,
    };
    if certificate::check_scaled(keys, i, &tight).is_ok() {
        return Some(tight);
    }
    let mut ray_rows = a.clone();
    ray_rows.push(vec![1.0; cols.len()]);
    let mut ray_rhs = vec![0.0; d];
    ray_rhs.push(1.0);
    let ray_lp = Lp {
        a: ray_rows,
        b: ray_rhs,
        cost: None,
    };
    let above = match simplex::solve(&ray_lp, iters) {
        LpOutcome::Optimal { basis, .. } => {
            let mut rhs = vec![Rational::new(); d];
            rhs.push(Rational::from(1));
            exact_on_basis(keys, cols, &basis, &rhs, true).map(Above::Ray)
        }
        _ => {
            let max_lp = Lp {
                a,
                b,
                cost: Some(c.iter().map(|x| -x).collect()),
            };
            match simplex::solve(&max_lp, iters) {
                LpOutcome::Optimal { basis, .. } => {
                    exact_on_basis(keys, cols, &basis, &target, false).map(Above::Point)
                }
                _ => None,
            }
        }
    }?;
    let cert = Certificate::ScaledHull {
        below,
        above: Some(above),
    };
    certificate::check_scaled(keys, i, &cert).ok().map(|_| cert)
}

/// The exact fallback: the exact LP on rational enclosures of the keys at growing
/// precision; every answer is checked exactly against the true (irrational) keys.
fn refine(keys: &ScaledKeySet, i: usize) -> Result<Decision> {
    let n = keys.n();
    let cols: Vec<usize> = (0..n).filter(|&j| j != i).collect();
    let done = |certificate: Certificate| Decision {
        certificate,
        method: Method::Refined,
    };
    for bits in REFINE_BITS {
        // k̃_j = w_j·r_j with r_j the midpoint of an enclosure of 1/√q_j.
        let approx = |j: usize| -> Vec<Rational> {
            let (lo, hi) = sqrt_bounds(&Rational::from(keys.q(j).recip_ref()), bits);
            let r = (lo + hi) / 2u32;
            keys.w(j).iter().map(|x| Rational::from(x * &r)).collect()
        };
        let col_keys: Vec<Vec<Rational>> = cols.iter().map(|&j| approx(j)).collect();
        let d = keys.d();
        if let LpOutcome::Infeasible { y } = exact_hull_lp(&col_keys, &approx(i), None) {
            let q = Query::Exact(y[..d].to_vec());
            if verify::check_scaled(keys, i, &q, None) == QueryCheck::Selects {
                return Ok(done(Certificate::Query(q)));
            }
            // Too coarse to separate, or the key is on the hull's boundary: try the hull.
        }
        // Enclosures of c_j = √(q_j/q_i): upper ends for `below`, lower ends for `above`.
        let (c_lo, c_hi): (Vec<Rational>, Vec<Rational>) = cols
            .iter()
            .map(|&j| sqrt_bounds(&Rational::from(keys.q(j) / keys.q(i)), bits))
            .unzip();
        let rows = cone_rows(keys, &cols, false);
        let target = keys.w(i).to_vec();
        let below = match simplex::solve(
            &Lp {
                a: rows.clone(),
                b: target.clone(),
                cost: Some(c_hi),
            },
            usize::MAX,
        ) {
            LpOutcome::Optimal { x, .. } => weights(&cols, x),
            LpOutcome::Infeasible { y } => {
                // w_i is outside the cone of the others: y·w_j ≤ 0 < y·w_i selects key i.
                let q = Query::Exact(y);
                if verify::check_scaled(keys, i, &q, None) == QueryCheck::Selects {
                    return Ok(done(Certificate::Query(q)));
                }
                continue;
            }
            _ => continue,
        };
        let tight = Certificate::ScaledHull {
            below: below.clone(),
            above: None,
        };
        if certificate::check_scaled(keys, i, &tight).is_ok() {
            return Ok(done(tight));
        }
        let mut ray_rows = rows.clone();
        ray_rows.push(vec![Rational::from(1); cols.len()]);
        let mut ray_rhs = vec![Rational::new(); d];
        ray_rhs.push(Rational::from(1));
        let above = match simplex::solve(
            &Lp {
                a: ray_rows,
                b: ray_rhs,
                cost: None,
            },
            usize::MAX,
        ) {
            LpOutcome::Optimal { x, .. } => Above::Ray(weights(&cols, x)),
            _ => {
                let max_lp = Lp {
                    a: rows,
                    b: target,
                    cost: Some(c_lo.iter().map(|x| Rational::from(-x)).collect()),
                };
                match simplex::solve(&max_lp, usize::MAX) {
                    LpOutcome::Optimal { x, .. } => Above::Point(weights(&cols, x)),
                    _ => continue,
                }
            }
        };
        let cert = Certificate::ScaledHull {
            below,
            above: Some(above),
        };
        if certificate::check_scaled(keys, i, &cert).is_ok() {
            return Ok(done(cert));
        }
    }
    Err(Error::input(format!(
        "key {i}: the normalized key lies too close to the boundary of the other keys' hull to decide with {}-bit enclosures",
        REFINE_BITS[REFINE_BITS.len() - 1]
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selectability::keys::{KeySet, Normalization};

    fn all_paths() -> [Options; 3] {
        [
            Options::default(),
            Options {
                key_query: false,
                patience: 0,
                float_lp: true,
            },
            Options {
                key_query: false,
                patience: 0,
                float_lp: false,
            },
        ]
    }

    fn verdicts(keys: &ScaledKeySet, opts: &Options) -> Vec<bool> {
        let ds = decide_scaled(keys, opts).unwrap();
        for (i, d) in ds.iter().enumerate() {
            certificate::check_scaled(keys, i, &d.certificate)
                .unwrap_or_else(|e| panic!("key {i} via {:?}: {e}", d.method));
        }
        ds.iter().map(Decision::selectable).collect()
    }

    /// Three big keys around the origin and one small-variance key: selectable with ε = 0,
    /// inside the triangle once ε shrinks it.
    #[test]
    fn epsilon_shrinks_a_small_key_into_the_hull() {
        let delta = 1.0 / 512.0;
        let x = KeySet::new(
            4,
            3,
            vec![
                2.0, -1.0, -1.0, -1.0, 2.0, -1.0, -1.0, -1.0, 2.0, delta, 0.0, -delta,
            ],
            None,
        )
        .unwrap();
        for o in all_paths() {
            let zero =
                ScaledKeySet::normalize(&x, Normalization::layer_norm(0.0).unwrap(), None).unwrap();
            assert_eq!(verdicts(&zero, &o), [true; 4]);
            let eps = ScaledKeySet::normalize(&x, Normalization::layer_norm(1e-5).unwrap(), None)
                .unwrap();
            assert_eq!(verdicts(&eps, &o), [true, true, true, false]);
        }
    }

    /// Positively parallel LayerNorm inputs normalize to one point (ε = 0); with ε > 0 the
    /// longer one wins and the shorter one is unselectable only when the others surround 0.
    #[test]
    fn parallel_inputs() {
        let x = KeySet::new(
            3,
            3,
            vec![2.0, -1.0, -1.0, 4.0, -2.0, -2.0, -1.0, 2.0, -1.0],
            None,
        )
        .unwrap();
        for o in all_paths() {
            let zero =
                ScaledKeySet::normalize(&x, Normalization::layer_norm(0.0).unwrap(), None).unwrap();
            assert_eq!(verdicts(&zero, &o), [false, false, true]);
            let eps =
                ScaledKeySet::normalize(&x, Normalization::layer_norm(0.5).unwrap(), None).unwrap();
            // No key surrounds the origin, so the short key 0 is still selectable.
            assert_eq!(verdicts(&eps, &o), [true, true, true]);
        }
    }
}
