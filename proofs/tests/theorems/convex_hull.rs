//! Property suite for `convex-hull-unselectable` (Brody, Alon, Yahav 2023, Theorem 1) and the
//! exact engine behind it. Small case counts by default; NORMORACLE_LONG=1 runs many more.
//!
//! Independent routes used as oracles: an exact planar convex hull (integer orientation
//! tests), MPFR at 2000 bits for surd comparisons, and direct rational substitution for the
//! exact solver. The engine's own pipelines (fast vs exact-LP-only) are also compared.

use normoracle::exact::surd::cmp_scaled;
use normoracle_geometry::selectability::figure::gaussian_keys;
use normoracle_geometry::selectability::filter::{cmp_sums, dot, score_sums};
use normoracle_geometry::selectability::{
    check_plain, check_scaled, decide_plain, decide_scaled, exact_solve, Decision, KeySet,
    Normalization, Options, ScaledKeySet,
};
use normoracle_geometry::theorems::convex_hull::{self, own_directions};
use normoracle_geometry::theorems::Budget;
use normoracle_proofs::{cases, config_replaying_regressions, long, seeded_quickcheck};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::{Float, Rational};
use std::cmp::Ordering;

fn exact_only() -> Options {
    Options {
        key_query: false,
        patience: 0,
        float_lp: false,
    }
}

/// Verdicts of the default pipeline, with every certificate checked and the exact-only
/// pipeline agreeing.
fn verdicts(keys: &KeySet) -> Vec<bool> {
    let fast = decide_plain(keys, &Options::default());
    let slow = decide_plain(keys, &exact_only());
    for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
        check_plain(keys, i, &f.certificate)
            .unwrap_or_else(|e| panic!("key {i} {:?}: {e}", f.method));
        check_plain(keys, i, &s.certificate).unwrap_or_else(|e| panic!("key {i} exact: {e}"));
        assert_eq!(
            f.selectable(),
            s.selectable(),
            "key {i}: pipelines disagree"
        );
    }
    fast.iter().map(Decision::selectable).collect()
}

/// Small-integer key sets with optional half-integer biases.
fn key_sets(max_n: usize, max_d: usize, bias: bool) -> impl Strategy<Value = KeySet> {
    (1..=max_n, 1..=max_d).prop_flat_map(move |(n, d)| {
        let biases = if bias {
            proptest::option::weighted(0.4, proptest::collection::vec(-4i32..=4, n)).boxed()
        } else {
            Just(None).boxed()
        };
        (proptest::collection::vec(-4i32..=4, n * d), biases).prop_map(move |(v, b)| {
            KeySet::new(
                n,
                d,
                v.into_iter().map(f64::from).collect(),
                b.map(|b| b.into_iter().map(|x| f64::from(x) / 2.0).collect()),
            )
            .unwrap()
        })
    })
}

/// Exact planar hull (Andrew's monotone chain, i128 orientation): the points that are strict
/// vertices of the convex hull of `pts` (collinear boundary points excluded).
fn strict_vertices(pts: &[(i128, i128)]) -> Vec<(i128, i128)> {
    let mut p: Vec<(i128, i128)> = pts.to_vec();
    p.sort();
    p.dedup();
    if p.len() <= 2 {
        return p;
    }
    let cross = |o: (i128, i128), a: (i128, i128), b: (i128, i128)| -> i128 {
        (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
    };
    let mut hull: Vec<(i128, i128)> = Vec::new();
    for pass in 0..2 {
        let start = hull.len();
        let iter: Box<dyn Iterator<Item = &(i128, i128)>> = if pass == 0 {
            Box::new(p.iter())
        } else {
            Box::new(p.iter().rev())
        };
        for &q in iter {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], q) <= 0
            {
                hull.pop();
            }
            hull.push(q);
        }
        hull.pop();
    }
    hull
}

proptest! {
    #![proptest_config(config_replaying_regressions(48))]

    /// Every certificate passes the checker; fast and exact-only pipelines agree.
    #[test]
    fn certificates_always_check(keys in key_sets(9, 4, true)) {
        verdicts(&keys);
    }

    /// Theorem 1: a dyadic convex combination of other keys is unselectable.
    #[test]
    fn hull_points_are_unselectable(seed in any::<u64>()) {
        let (keys, at) = convex_hull::hull_case(&mut convex_hull::rng(seed));
        prop_assert!(!verdicts(&keys)[at]);
    }

    /// The converse: a unique maximizer of some direction is selectable.
    #[test]
    fn unique_maximizers_are_selectable(seed in any::<u64>()) {
        let (keys, winner) = convex_hull::argmax_case(&mut convex_hull::rng(seed));
        if let Some(w) = winner {
            prop_assert!(verdicts(&keys)[w]);
        }
    }

    /// In the plane, selectable ⟺ a strict vertex of the hull of all keys that occurs once,
    /// decided by an independent exact hull. One extra key sits at the midpoint of two others
    /// nudged by 2^-k: the adversarial case for the float LP (just inside or just outside).
    #[test]
    fn planar_verdicts_match_an_exact_hull(
        pts in proptest::collection::vec((-6i64..=6, -6i64..=6), 2..14),
        pick in (any::<usize>(), any::<usize>()),
        nudge in (-1i64..=1, -1i64..=1, 20i32..50),
    ) {
        let (a, b) = (pts[pick.0 % pts.len()], pts[pick.1 % pts.len()]);
        let (dx, dy, k) = nudge;
        let h = 2f64.powi(-k);
        let extra = ((a.0 + b.0) as f64 / 2.0 + dx as f64 * h, (a.1 + b.1) as f64 / 2.0 + dy as f64 * h);
        let mut all: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (x as f64, y as f64)).collect();
        all.push(extra);
        let data: Vec<f64> = all.iter().flat_map(|&(x, y)| [x, y]).collect();
        let keys = KeySet::new(all.len(), 2, data, None).unwrap();
        let v = verdicts(&keys);
        // The oracle works on integers: scale by 2^(k+1), exactly.
        let scale = 2f64.powi(k + 1);
        let ints: Vec<(i128, i128)> = all.iter().map(|&(x, y)| ((x * scale) as i128, (y * scale) as i128)).collect();
        let hull = strict_vertices(&ints);
        for (i, p) in ints.iter().enumerate() {
            let unique = ints.iter().filter(|q| *q == p).count() == 1;
            prop_assert_eq!(v[i], unique && hull.contains(p), "point {} {:?}", i, all[i]);
        }
    }

    /// No key has both an accepted query and an accepted hull certificate (the checker is
    /// sound): every key's hull certificate (from the biased and the bias-free problem) and
    /// every query seen (all keys' query certificates, the key itself, small integer
    /// directions) is tried on every key.
    #[test]
    fn no_key_is_both_selectable_and_unselectable(keys in key_sets(7, 3, true), dirs in proptest::collection::vec(proptest::collection::vec(-2i32..=2, 3), 4)) {
        use normoracle_geometry::selectability::{Certificate, Query};
        let (n, d) = (keys.n(), keys.d());
        let plain = KeySet::new(n, d, keys.data().to_vec(), None).unwrap();
        let mut certs: Vec<Certificate> = decide_plain(&keys, &Options::default()).into_iter().map(|x| x.certificate).collect();
        certs.extend(decide_plain(&plain, &Options::default()).into_iter().map(|x| x.certificate));
        certs.push(Certificate::Query(Query::OwnKey));
        for dir in &dirs {
            certs.push(Certificate::Query(Query::Float(dir[..d].iter().map(|&x| f64::from(x)).collect())));
        }
        for i in 0..n {
            let accepted: Vec<bool> = certs
                .iter()
                .filter(|c| match c {
                    Certificate::Hull(w) => w.iter().all(|(j, _)| *j != i),
                    _ => true,
                })
                .filter(|c| check_plain(&keys, i, c).is_ok())
                .map(|c| c.proves_selectable())
                .collect();
            prop_assert!(
                !(accepted.contains(&true) && accepted.contains(&false)),
                "key {} has both kinds of certificate accepted", i
            );
        }
    }

    /// Verdicts follow the keys under permutation, exact rescaling by 2^k and translation.
    #[test]
    fn verdicts_are_invariant(keys in key_sets(8, 3, false), shift in -3i32..=3, k in -3i32..=3, rot in 0usize..8) {
        let base = verdicts(&keys);
        let (n, d) = (keys.n(), keys.d());
        let perm: Vec<usize> = (0..n).map(|j| (j + rot) % n).collect();
        let moved: Vec<f64> = perm
            .iter()
            .flat_map(|&j| keys.key(j).iter().map(|x| x * 2f64.powi(k) + f64::from(shift)))
            .collect();
        let other = verdicts(&KeySet::new(n, d, moved, None).unwrap());
        for (pos, &j) in perm.iter().enumerate() {
            prop_assert_eq!(other[pos], base[j]);
        }
    }

    /// LayerNorm with ε = 0: exactly the keys with their own direction are selectable.
    #[test]
    fn layer_norm_selects_every_own_direction(seed in any::<u64>(), twin in any::<bool>()) {
        let (keys, _) = convex_hull::layer_norm_case(&mut convex_hull::rng(seed), twin);
        let s = ScaledKeySet::normalize(&keys, Normalization::layer_norm(0.0).unwrap(), None).unwrap();
        let v = convex_hull::certified_scaled(&s).unwrap();
        prop_assert_eq!(v, own_directions(&s));
    }

    /// ε > 0 with small-variance rows: certificates check, and the float pipeline agrees with
    /// the refined exact fallback alone.
    #[test]
    fn epsilon_verdicts_agree_across_paths(seed in any::<u64>(), n in 3usize..9, shrink in 0u32..3) {
        let d = 3;
        let mut data = gaussian_keys(seed, d, n, 0);
        // Shrink one row so its variance is comparable to ε.
        let scale = [1e-2, 3e-3, 1e-3][shrink as usize];
        for x in &mut data[..d] {
            *x = (*x * scale) as f32 as f64;
        }
        let keys = KeySet::new(n, d, data, None).unwrap();
        let s = ScaledKeySet::normalize(&keys, Normalization::layer_norm(1e-5).unwrap(), None).unwrap();
        let fast = decide_scaled(&s, &Options::default()).unwrap();
        let slow = decide_scaled(&s, &exact_only()).unwrap();
        for (i, (f, g)) in fast.iter().zip(&slow).enumerate() {
            prop_assert!(check_scaled(&s, i, &f.certificate).is_ok());
            prop_assert!(check_scaled(&s, i, &g.certificate).is_ok());
            prop_assert_eq!(f.selectable(), g.selectable(), "key {}", i);
        }
    }
}

#[test]
fn the_catalogued_checker_finds_no_counterexample() {
    let budget = Budget {
        cases: cases(40) as usize,
        seed: if long() { 0x5e1e_c7ab } else { 11 },
    };
    let report = (convex_hull::THEOREM.check)(budget);
    assert_eq!(report.counterexample, None);
    assert!(report.cases > budget.cases);
}

/// The float filter's enclosure contains the exact dot product (any finite inputs).
#[test]
fn filter_enclosures_contain_the_exact_value() {
    fn prop(a: Vec<f64>, b: Vec<f64>) -> TestResult {
        let m = a.len().min(b.len());
        let (a, b) = (&a[..m], &b[..m]);
        if a.iter().chain(b).any(|x| !x.is_finite()) {
            return TestResult::discard();
        }
        let iv = dot(a, b, 0);
        let mut exact = Rational::new();
        for (x, y) in a.iter().zip(b) {
            exact += Rational::from_f64(*x).unwrap() * Rational::from_f64(*y).unwrap();
        }
        let lo_ok = Rational::from_f64(iv.lo).is_none_or(|lo| lo <= exact);
        let hi_ok = Rational::from_f64(iv.hi).is_none_or(|hi| exact <= hi);
        let (sa, sb) = (score_sums(a, b, 0.0), score_sums(b, a, 0.0));
        // Commuted factors give the same exact value: the filter may not order them.
        let tie_ok = cmp_sums(sa, sb, m).is_none_or(|o| o == Ordering::Equal);
        TestResult::from_bool(lo_ok && hi_ok && tie_ok)
    }
    seeded_quickcheck(200).quickcheck(prop as fn(Vec<f64>, Vec<f64>) -> TestResult);
}

/// Exact surd comparison against MPFR at 2000 bits (an independent route).
#[test]
fn scaled_comparisons_agree_with_mpfr() {
    fn prop(a: (i32, u16), q: (u16, u16), b: (i32, u16), r: (u16, u16)) -> TestResult {
        let rat = |n: i64, d: u16| Rational::from((n, i64::from(d.max(1))));
        let (a, b) = (rat(a.0 as i64, a.1), rat(b.0 as i64, b.1));
        let (q, r) = (rat(i64::from(q.0) + 1, q.1), rat(i64::from(r.0) + 1, r.1));
        let exact = cmp_scaled(&a, &q, &b, &r);
        let f =
            |x: &Rational, y: &Rational| Float::with_val(2000, x) / Float::with_val(2000, y).sqrt();
        let diff = f(&a, &q) - f(&b, &r);
        let tiny = Float::with_val(2000, Float::i_exp(1, -1500));
        let mpfr = if diff.clone().abs() < tiny {
            // Numerically a tie: the exact route must call it one iff a²r = b²q with equal signs.
            Ordering::Equal
        } else if diff > 0 {
            Ordering::Greater
        } else {
            Ordering::Less
        };
        TestResult::from_bool(exact == mpfr)
    }
    seeded_quickcheck(300)
        .quickcheck(prop as fn((i32, u16), (u16, u16), (i32, u16), (u16, u16)) -> TestResult);
    // Constructed ties: a/√q = (2a)/√(4q).
    for (n, d) in [(3i64, 7i64), (-5, 2), (0, 1)] {
        let a = Rational::from((n, d));
        let q = Rational::from((11, 3));
        assert_eq!(
            cmp_scaled(&a, &q, &(a.clone() * 2u32), &(q.clone() * 4u32)),
            Ordering::Equal
        );
    }
}

/// The exact solver's answers satisfy every equation (checked by direct substitution).
#[test]
fn exact_solutions_substitute_back() {
    fn prop(rows: Vec<Vec<i8>>, rhs: Vec<i8>) -> TestResult {
        let m = rows.len().min(rhs.len()).min(6);
        if m == 0 {
            return TestResult::discard();
        }
        let r = rows[..m].iter().map(Vec::len).min().unwrap_or(0).min(m);
        let a: Vec<Vec<Rational>> = rows[..m]
            .iter()
            .map(|row| row[..r].iter().map(|&x| Rational::from(x)).collect())
            .collect();
        let b: Vec<Rational> = rhs[..m].iter().map(|&x| Rational::from(x)).collect();
        match exact_solve::solve(&a, &b) {
            None => TestResult::passed(),
            Some(x) => TestResult::from_bool(a.iter().zip(&b).all(|(row, bi)| {
                let mut s = Rational::new();
                for (c, v) in row.iter().zip(&x) {
                    s += Rational::from(c * v);
                }
                s == *bi
            })),
        }
    }
    seeded_quickcheck(300).quickcheck(prop as fn(Vec<Vec<i8>>, Vec<i8>) -> TestResult);
    // A square nonsingular system always has its solution found.
    let a = vec![
        vec![Rational::from(2), Rational::from(1), Rational::from(0)],
        vec![Rational::from(0), Rational::from(3), Rational::from(1)],
        vec![Rational::from(1), Rational::from(0), Rational::from(4)],
    ];
    let b = vec![Rational::from(1), Rational::from(2), Rational::from(3)];
    assert!(exact_solve::solve(&a, &b).is_some());
}
