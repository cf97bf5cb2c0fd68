//! Fast exact verification of candidate queries: every pairwise score comparison is first
//! tried with a certified float enclosure (`filter.rs`) and decided exactly in rationals only
//! when the enclosure cannot tell. The answer is as exact as the checker's; it is only faster.

use super::certificate::Query;
use super::filter::{cmp_sums, dot, score_sums, Interval};
use super::keys::{exact, KeySet, ScaledKeySet};
use crate::exact::surd::cmp_scaled;
use rug::Rational;
use std::cmp::Ordering;

/// What a query does to key i, proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryCheck {
    /// Key i gets a strictly higher score than every other key.
    Selects,
    /// Key `by` scores at least as high as key i.
    BeatenBy(usize),
}

fn exact_dot(v: &[Rational], x: &[Rational]) -> Rational {
    let mut s = Rational::new();
    for (a, b) in v.iter().zip(x) {
        s += Rational::from(a * b);
    }
    s
}

/// Does query v (f64) select key i of a plain key set? Tries `first` before the others (a key
/// that beat i before is likely to again).
pub fn check_plain_float(keys: &KeySet, i: usize, v: &[f64], first: Option<usize>) -> QueryCheck {
    let m = keys.d() + 1;
    let sums = |j: usize| score_sums(v, keys.key(j), keys.bias(j));
    let s_i = sums(i);
    let mut exact_i: Option<Rational> = None;
    let exact_score = |j: usize| -> Rational {
        let vr: Vec<Rational> = v.iter().map(|&x| exact(x)).collect();
        exact_dot(&vr, &keys.key_exact(j)) + keys.bias_exact(j)
    };
    let order = first
        .into_iter()
        .chain((0..keys.n()).filter(move |&j| Some(j) != first));
    for j in order.filter(|&j| j != i) {
        match cmp_sums(s_i, sums(j), m) {
            Some(Ordering::Greater) => continue,
            Some(_) => return QueryCheck::BeatenBy(j),
            None => {
                let e_i = exact_i.get_or_insert_with(|| exact_score(i));
                if *e_i <= exact_score(j) {
                    return QueryCheck::BeatenBy(j);
                }
            }
        }
    }
    QueryCheck::Selects
}

/// Does a rational query select key i of a plain key set? (Exact throughout.)
pub fn check_plain_exact(keys: &KeySet, i: usize, v: &[Rational]) -> QueryCheck {
    let score = |j: usize| exact_dot(v, &keys.key_exact(j)) + keys.bias_exact(j);
    let s_i = score(i);
    match (0..keys.n()).find(|&j| j != i && score(j) >= s_i) {
        Some(j) => QueryCheck::BeatenBy(j),
        None => QueryCheck::Selects,
    }
}

/// Does the query select key i of a plain key set?
pub fn check_plain(keys: &KeySet, i: usize, query: &Query, first: Option<usize>) -> QueryCheck {
    match query {
        Query::OwnKey => check_plain_float(keys, i, keys.key(i), first),
        Query::Float(v) => check_plain_float(keys, i, v, first),
        Query::Exact(v) => check_plain_exact(keys, i, v),
    }
}

/// The proved order of a_i/√q_i and a_j/√q_j from enclosures, if the enclosures decide it.
fn cmp_scaled_enclosed(
    a_i: Interval,
    q_i: Interval,
    a_j: Interval,
    q_j: Interval,
) -> Option<Ordering> {
    let (ge_i, le_i) = (a_i.lo >= 0.0, a_i.hi <= 0.0);
    let (ge_j, le_j) = (a_j.lo >= 0.0, a_j.hi <= 0.0);
    if a_i.is_pos() && le_j || ge_i && a_j.is_neg() {
        return Some(Ordering::Greater);
    }
    if a_j.is_pos() && le_i || ge_j && a_i.is_neg() {
        return Some(Ordering::Less);
    }
    // Same proved sign: compare a_i² q_j with a_j² q_i.
    let squares = (a_i.square() * q_j - a_j.square() * q_i).sign()?;
    if a_i.is_pos() && a_j.is_pos() {
        Some(squares)
    } else if a_i.is_neg() && a_j.is_neg() {
        Some(squares.reverse())
    } else {
        None
    }
}

/// Does the query select key i of a scaled key set?
pub fn check_scaled(
    keys: &ScaledKeySet,
    i: usize,
    query: &Query,
    first: Option<usize>,
) -> QueryCheck {
    let exact_v: Vec<Rational> = match query {
        Query::OwnKey => keys.w(i).to_vec(),
        Query::Float(v) => v.iter().map(|&x| exact(x)).collect(),
        Query::Exact(v) => v.clone(),
    };
    // The enclosure of a_j = v·w_j: ŵ carries two roundings per factor (`filter.rs`).
    let fast: Option<Box<dyn Fn(usize) -> Interval + '_>> = match query {
        _ if !keys.approx_reliable() => None,
        Query::OwnKey => {
            let wi = keys.w_approx(i);
            Some(Box::new(move |j| dot(wi, keys.w_approx(j), 4)))
        }
        Query::Float(v) => Some(Box::new(move |j| dot(v, keys.w_approx(j), 2))),
        Query::Exact(_) => None,
    };
    let q_iv = |j: usize| Interval::around(keys.q_approx(j));
    let a_i_iv = fast.as_ref().map(|f| f(i));
    let mut a_i_exact: Option<Rational> = None;
    let order = first
        .into_iter()
        .chain((0..keys.n()).filter(move |&j| Some(j) != first));
    for j in order.filter(|&j| j != i) {
        if let (Some(f), Some(ai)) = (&fast, a_i_iv) {
            match cmp_scaled_enclosed(ai, q_iv(i), f(j), q_iv(j)) {
                Some(Ordering::Greater) => continue,
                Some(_) => return QueryCheck::BeatenBy(j),
                None => {}
            }
        }
        let ai = a_i_exact.get_or_insert_with(|| exact_dot(&exact_v, keys.w(i)));
        let aj = exact_dot(&exact_v, keys.w(j));
        if cmp_scaled(ai, keys.q(i), &aj, keys.q(j)) != Ordering::Greater {
            return QueryCheck::BeatenBy(j);
        }
    }
    QueryCheck::Selects
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selectability::certificate::{check_plain as checker, Certificate};
    use crate::selectability::keys::Normalization;

    /// Near-ties decided by the fast path must agree with the simple checker.
    #[test]
    fn fast_plain_agrees_with_checker_on_near_ties() {
        let e = f64::EPSILON;
        // Keys 0 and 1 differ in the last bit; under query (1, 1) their scores nearly tie.
        let data = vec![1.0, 1.0 + e, 1.0 + e, 1.0, 0.5, 0.5, 1.0 + 2.0 * e, 1.0 - e];
        let keys = KeySet::new(4, 2, data, None).unwrap();
        for i in 0..4 {
            for v in [
                vec![1.0, 1.0],
                vec![1.0, 1.0 + e],
                vec![-1.0, 3.0],
                vec![1e-300, 1e-300],
            ] {
                let fast = check_plain_float(&keys, i, &v, None) == QueryCheck::Selects;
                let slow = checker(&keys, i, &Certificate::Query(Query::Float(v.clone()))).is_ok();
                assert_eq!(fast, slow, "key {i}, query {v:?}");
            }
        }
    }

    #[test]
    fn fast_scaled_agrees_with_checker() {
        use crate::selectability::certificate::check_scaled as checker;
        // Nearly parallel LayerNorm inputs: their normalized keys nearly coincide.
        let e = f64::EPSILON;
        let data = vec![
            2.0,
            -1.0,
            -1.0,
            2.0 + 4.0 * e,
            -1.0,
            -1.0,
            -1.0,
            2.0,
            -1.0,
            4.0,
            -2.0,
            -2.0,
        ];
        let keys = KeySet::new(4, 3, data, None).unwrap();
        for eps in [0.0f32, 1e-5, 3.0] {
            let s = ScaledKeySet::normalize(&keys, Normalization::layer_norm(eps).unwrap(), None)
                .unwrap();
            for i in 0..4 {
                for q in [
                    Query::OwnKey,
                    Query::Float(vec![1.0, 0.0, -1.0]),
                    Query::Float(vec![1.0, -0.5, -0.5]),
                ] {
                    let fast = check_scaled(&s, i, &q, None) == QueryCheck::Selects;
                    let slow = checker(&s, i, &Certificate::Query(q.clone())).is_ok();
                    assert_eq!(fast, slow, "ε {eps}, key {i}, query {q:?}");
                }
            }
        }
    }
}
