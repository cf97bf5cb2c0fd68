//! Certificates and their exact checker.
//!
//! A verdict is only ever reported with a certificate, and a certificate means what this
//! checker accepts. The checker is deliberately simple: every quantity is a `rug::Rational`,
//! every comparison exact, nothing is skipped. (The pipeline verifies its candidates with
//! faster exact means, see `verify.rs`; tests and `--audit` run this checker on every
//! certificate too.)
//!
//! # What the certificates prove
//! Plain keys (score v·h_j + b_j):
//! * [`Certificate::Query`] v: v·h_i + b_i > v·h_j + b_j for every j ≠ i, so i is selected.
//! * [`Certificate::Hull`] λ over the other keys, λ ≥ 0, Σλ_j = 1, Σλ_j h_j = h_i and
//!   Σλ_j b_j ≥ b_i: for every v, Σλ_j(v·h_j + b_j) ≥ v·h_i + b_i, so some other key scores at
//!   least as high as i; i is never the strict maximum. (Without biases: h_i lies in the
//!   convex hull of the other keys.) By Motzkin's transposition theorem exactly one of the
//!   two exists, so the pair of certificate kinds is complete.
//!
//! Scaled keys k_j = w_j/√q_j (score v·w_j/√q_j):
//! * `Query` v: a_i/√q_i > a_j/√q_j with a = v·w, decided by sign analysis and squaring.
//! * [`Certificate::ScaledHull`]: `below` = μ ≥ 0 with Σμ_j w_j = w_i and
//!   s(μ) = Σ μ_j √(q_j/q_i) ≤ 1. Then k_i = Σ λ_j k_j with λ_j = μ_j √(q_j/q_i) ≥ 0 and
//!   Σλ = s(μ). If s(μ) = 1 exactly this is a convex combination. Otherwise `above` supplies
//!   either a ray ν ≥ 0, ν ≠ 0, Σν_j w_j = 0 (then s(μ + tν) grows continuously without
//!   bound, since s(ν) > 0) or a point μ⁺ of the same cone system with s(μ⁺) ≥ 1 (then s
//!   moves continuously from s(μ) to s(μ⁺) along the segment). Either way some μ* with
//!   Σμ*_j w_j = w_i, μ* ≥ 0 has s(μ*) = 1 exactly, so k_i is a convex combination of the
//!   other keys — with irrational weights, which is why the certificate carries the two
//!   rational ends instead.

use super::keys::{exact, KeySet, ScaledKeySet};
use crate::exact::surd::{cmp_scaled, cmp_surd_sum};
use rug::Rational;
use std::cmp::Ordering;
use std::fmt;

/// Sparse weights over keys: (index, weight) pairs.
pub type Weights = Vec<(usize, Rational)>;

/// The query of a selectability certificate.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// The key's own vector: h_i for plain keys, w_i for scaled keys.
    OwnKey,
    /// An f64 vector (exact rationals).
    Float(Vec<f64>),
    /// A rational vector.
    Exact(Vec<Rational>),
}

/// The second half of a scaled-hull certificate (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub enum Above {
    /// ν ≥ 0, ν ≠ 0, Σ ν_j w_j = 0.
    Ray(Weights),
    /// μ⁺ ≥ 0, Σ μ⁺_j w_j = w_i, Σ μ⁺_j √(q_j/q_i) ≥ 1.
    Point(Weights),
}

/// The evidence for one key's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Certificate {
    /// Selectable: this query gives the key a strictly higher score than every other key.
    Query(Query),
    /// Unselectable (plain keys): convex weights on the other keys (module docs).
    Hull(Weights),
    /// Unselectable (scaled keys): module docs.
    ScaledHull {
        below: Weights,
        above: Option<Above>,
    },
}

impl Certificate {
    /// True for the certificates of selectable keys.
    pub fn proves_selectable(&self) -> bool {
        matches!(self, Certificate::Query(_))
    }
}

/// Why a certificate was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected(pub String);

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "certificate rejected: {}", self.0)
    }
}

fn reject<T>(msg: impl Into<String>) -> Result<T, Rejected> {
    Err(Rejected(msg.into()))
}

/// The most bits the surd-sum comparison may refine to before giving up (module `surd`).
pub const SURD_PRECISION_CAP: u32 = 1 << 16;

fn query_vector(query: &Query, own: &[Rational]) -> Vec<Rational> {
    match query {
        Query::OwnKey => own.to_vec(),
        Query::Float(v) => v.iter().map(|&x| exact(x)).collect(),
        Query::Exact(v) => v.clone(),
    }
}

fn dot(a: &[Rational], b: &[Rational]) -> Rational {
    let mut s = Rational::new();
    for (x, y) in a.iter().zip(b) {
        s += Rational::from(x * y);
    }
    s
}

/// Indices in range, distinct, not `i`; weights ≥ 0.
fn check_weights(weights: &Weights, n: usize, i: usize, what: &str) -> Result<(), Rejected> {
    let mut seen = std::collections::BTreeSet::new();
    for (j, w) in weights {
        if *j >= n {
            return reject(format!("{what}: index {j} out of range (n = {n})"));
        }
        if *j == i {
            return reject(format!("{what}: uses the key itself"));
        }
        if !seen.insert(*j) {
            return reject(format!("{what}: index {j} repeated"));
        }
        if *w < 0 {
            return reject(format!("{what}: weight {w} on key {j} is negative"));
        }
    }
    Ok(())
}

/// Checks a certificate for key `i` of a plain key set, exactly.
pub fn check_plain(keys: &KeySet, i: usize, cert: &Certificate) -> Result<(), Rejected> {
    let n = keys.n();
    if i >= n {
        return reject(format!("key {i} out of range (n = {n})"));
    }
    let d = keys.d();
    match cert {
        Certificate::Query(query) => {
            let own = keys.key_exact(i);
            let v = query_vector(query, &own);
            if v.len() != d {
                return reject(format!("query of length {} for d = {d}", v.len()));
            }
            let score_i = dot(&v, &own) + keys.bias_exact(i);
            for j in (0..n).filter(|&j| j != i) {
                let score_j = dot(&v, &keys.key_exact(j)) + keys.bias_exact(j);
                if score_j >= score_i {
                    return reject(format!(
                        "key {j} scores {score_j} ≥ {score_i}, the score of key {i}"
                    ));
                }
            }
            Ok(())
        }
        Certificate::Hull(lambda) => {
            check_weights(lambda, n, i, "hull weights")?;
            let mut total = Rational::new();
            let mut combo = vec![Rational::new(); d];
            let mut bias = Rational::new();
            for (j, l) in lambda {
                total += l;
                for (c, x) in combo.iter_mut().zip(keys.key_exact(*j)) {
                    *c += x * l;
                }
                bias += keys.bias_exact(*j) * l;
            }
            if total != 1 {
                return reject(format!("hull weights sum to {total}, not 1"));
            }
            if combo != keys.key_exact(i) {
                return reject("Σ λ_j h_j ≠ h_i");
            }
            if bias < keys.bias_exact(i) {
                return reject(format!("Σ λ_j b_j = {bias} < b_i"));
            }
            Ok(())
        }
        Certificate::ScaledHull { .. } => reject("a scaled-hull certificate for plain keys"),
    }
}

/// Σ_j μ_j w_j for sparse μ.
fn combine(keys: &ScaledKeySet, weights: &Weights) -> Vec<Rational> {
    let mut out = vec![Rational::new(); keys.d()];
    for (j, m) in weights {
        for (c, x) in out.iter_mut().zip(keys.w(*j)) {
            *c += Rational::from(x * m);
        }
    }
    out
}

/// s(μ) = Σ μ_j √(q_j/q_i) compared with 1.
fn scaled_sum_vs_one(keys: &ScaledKeySet, i: usize, mu: &Weights) -> Result<Ordering, Rejected> {
    let terms: Vec<(Rational, Rational)> = mu
        .iter()
        .map(|(j, m)| (m.clone(), Rational::from(keys.q(*j) / keys.q(i))))
        .collect();
    cmp_surd_sum(&terms, &Rational::from(1), SURD_PRECISION_CAP)
        .or_else(|_| reject("Σ μ_j √(q_j/q_i) is too close to 1 to decide"))
}

/// Checks a certificate for key `i` of a scaled key set, exactly.
pub fn check_scaled(keys: &ScaledKeySet, i: usize, cert: &Certificate) -> Result<(), Rejected> {
    let n = keys.n();
    if i >= n {
        return reject(format!("key {i} out of range (n = {n})"));
    }
    match cert {
        Certificate::Query(query) => {
            let v = query_vector(query, keys.w(i));
            if v.len() != keys.d() {
                return reject(format!("query of length {} for d = {}", v.len(), keys.d()));
            }
            let a_i = dot(&v, keys.w(i));
            for j in (0..n).filter(|&j| j != i) {
                let a_j = dot(&v, keys.w(j));
                if cmp_scaled(&a_i, keys.q(i), &a_j, keys.q(j)) != Ordering::Greater {
                    return reject(format!("key {j} scores at least as high as key {i}"));
                }
            }
            Ok(())
        }
        Certificate::ScaledHull { below, above } => {
            check_weights(below, n, i, "below")?;
            if combine(keys, below) != keys.w(i) {
                return reject("below: Σ μ_j w_j ≠ w_i");
            }
            match scaled_sum_vs_one(keys, i, below)? {
                Ordering::Greater => reject("below: Σ μ_j √(q_j/q_i) > 1"),
                Ordering::Equal => Ok(()),
                Ordering::Less => match above {
                    None => reject("below: Σ μ_j √(q_j/q_i) < 1 and no upper end given"),
                    Some(Above::Ray(nu)) => {
                        check_weights(nu, n, i, "ray")?;
                        if nu.iter().all(|(_, x)| *x == 0) {
                            return reject("ray: all weights are zero");
                        }
                        if combine(keys, nu).iter().any(|x| *x != 0) {
                            return reject("ray: Σ ν_j w_j ≠ 0");
                        }
                        Ok(())
                    }
                    Some(Above::Point(mu_plus)) => {
                        check_weights(mu_plus, n, i, "above")?;
                        if combine(keys, mu_plus) != keys.w(i) {
                            return reject("above: Σ μ_j w_j ≠ w_i");
                        }
                        if scaled_sum_vs_one(keys, i, mu_plus)? == Ordering::Less {
                            return reject("above: Σ μ_j √(q_j/q_i) < 1");
                        }
                        Ok(())
                    }
                },
            }
        }
        Certificate::Hull(_) => reject("a plain hull certificate for scaled keys"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selectability::keys::Normalization;

    fn r(n: i64, d: i64) -> Rational {
        Rational::from((n, d))
    }

    fn square() -> KeySet {
        // Corners of a square and its centre (index 4).
        KeySet::new(
            5,
            2,
            vec![0.0, 0.0, 2.0, 0.0, 0.0, 2.0, 2.0, 2.0, 1.0, 1.0],
            None,
        )
        .unwrap()
    }

    #[test]
    fn plain_certificates_are_checked() {
        let keys = square();
        let centre = Certificate::Hull(vec![(0, r(1, 2)), (3, r(1, 2))]);
        assert!(check_plain(&keys, 4, &centre).is_ok());
        // Wrong weights, weights not summing to one, negative, self-use, wrong key.
        for bad in [
            vec![(0, r(1, 3)), (3, r(2, 3))],
            vec![(0, r(1, 2)), (3, r(1, 2)), (1, r(0, 1)), (2, r(1, 10))],
            vec![(1, r(1, 1)), (2, r(1, 1)), (0, r(-1, 1))],
            vec![(4, r(1, 1))],
            vec![(0, r(1, 2)), (0, r(1, 2))],
        ] {
            assert!(check_plain(&keys, 4, &Certificate::Hull(bad)).is_err());
        }
        assert!(check_plain(&keys, 3, &centre).is_err());
        // The corner (2, 2) is selected by its own vector; the centre is not.
        assert!(check_plain(&keys, 3, &Certificate::Query(Query::OwnKey)).is_ok());
        assert!(check_plain(&keys, 4, &Certificate::Query(Query::OwnKey)).is_err());
        // A tie is not a selection: query (1, 0) ties corners 1 and 3.
        assert!(check_plain(&keys, 1, &Certificate::Query(Query::Float(vec![1.0, 0.0]))).is_err());
        assert!(check_plain(&keys, 1, &Certificate::Query(Query::Float(vec![1.0, -0.5]))).is_ok());
    }

    #[test]
    fn biases_enter_both_kinds() {
        // Three collinear keys; the middle one with a large bias becomes selectable.
        let keys = KeySet::new(3, 1, vec![-1.0, 0.0, 1.0], Some(vec![0.0, 2.0, 0.0])).unwrap();
        assert!(check_plain(&keys, 1, &Certificate::Query(Query::Float(vec![0.0]))).is_ok());
        let hull = Certificate::Hull(vec![(0, r(1, 2)), (2, r(1, 2))]);
        assert!(check_plain(&keys, 1, &hull).is_err(), "Σλb = 0 < 2");
        let low = KeySet::new(3, 1, vec![-1.0, 0.0, 1.0], Some(vec![0.0, -1.0, 0.0])).unwrap();
        assert!(check_plain(&low, 1, &hull).is_ok());
    }

    #[test]
    fn scaled_certificates_are_checked() {
        // LayerNorm (ε = 0) of an equilateral configuration and of a shorter copy of key 0.
        let x = KeySet::new(
            4,
            3,
            vec![
                2.0, -1.0, -1.0, -1.0, 2.0, -1.0, -1.0, -1.0, 2.0, 1.0, -0.5, -0.5,
            ],
            None,
        )
        .unwrap();
        let s = ScaledKeySet::normalize(&x, Normalization::layer_norm(0.0).unwrap(), None).unwrap();
        // Keys 0 and 3 normalize to the same point: each is unselectable, s(μ) = 1 exactly.
        let dup = Certificate::ScaledHull {
            below: vec![(0, r(1, 2))],
            above: None,
        };
        assert!(check_scaled(&s, 3, &dup).is_ok());
        assert!(check_scaled(&s, 3, &Certificate::Query(Query::OwnKey)).is_err());
        assert!(check_scaled(&s, 1, &Certificate::Query(Query::OwnKey)).is_ok());
        // With ε > 0 key 3 (smaller variance) shrinks more: s(μ) < 1, so a ray is needed.
        let se =
            ScaledKeySet::normalize(&x, Normalization::layer_norm(0.5).unwrap(), None).unwrap();
        assert!(check_scaled(&se, 3, &dup).is_err());
        let with_ray = Certificate::ScaledHull {
            below: vec![(0, r(1, 2))],
            above: Some(Above::Ray(vec![(0, r(1, 1)), (1, r(1, 1)), (2, r(1, 1))])),
        };
        assert!(check_scaled(&se, 3, &with_ray).is_ok());
        let bad_ray = Certificate::ScaledHull {
            below: vec![(0, r(1, 2))],
            above: Some(Above::Ray(vec![(0, r(1, 1)), (1, r(1, 1))])),
        };
        assert!(check_scaled(&se, 3, &bad_ray).is_err());
        // The longer key 0 is selectable under ε > 0 by its own vector.
        assert!(check_scaled(&se, 0, &Certificate::Query(Query::OwnKey)).is_ok());
    }
}
