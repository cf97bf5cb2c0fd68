//! Brody, Alon, Yahav (2023) Theorem 1: a key in the convex hull of the other keys never gets
//! the strictly highest score; LayerNorm (ε = 0) makes every key selectable.
//!
//! Why the closed-hull form. The paper's Theorem 1 takes h_n *interior* to the hull of S and
//! concludes max_{i<n} v·h_i > v·h_n for every v ≠ 0. An interior point needs a
//! full-dimensional hull, so the theorem is vacuous for LayerNorm keys (all in the hyperplane
//! 1⊥) and whenever n ≤ d; and the proof in its Appendix A fixes the index i before the query
//! (the index must depend on v). The form checked here, h_i ∈ conv(others) ⇒ for every v some
//! other key scores ≥ v·h_i, holds for boundary points and flat hulls alike, has the converse
//! (Motzkin) and so an exact certificate either way, and is what "unselectable" means in
//! `normoracle unselectable`. For d = 2, LayerNorm's image is the two points ±(1, −1): with
//! n ≥ 3 keys some output repeats and the repeated key is unselectable, so "every key is
//! selectable after LayerNorm" needs d ≥ 3.
//!
//! The checker drives the exact engine of `geometry::selectability` over fixed adversarial
//! sets and seeded random ones, and accepts a case only when (a) the verdict is the one the
//! construction forces, (b) the certificate passes the simple exact checker, and (c) the fast
//! pipeline and the exact-LP-only pipeline agree on every key.

use super::{Budget, CheckReport, TheoremEntry};
use crate::selectability::figure::gaussian_keys;
use crate::selectability::{
    check_plain, check_scaled, decide_plain, decide_scaled, Decision, KeySet, Normalization,
    Options, ScaledKeySet,
};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rug::Rational;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "convex-hull-unselectable",
    statement: "If h_i lies in the convex hull of the other keys (Σλ_j h_j = h_i, λ ≥ 0, Σλ = 1), then for every query v some other key scores at least as high: max_{j≠i} v·h_j ≥ v·h_i, so key i is never selected; with biases, the same holds when also Σλ_j b_j ≥ b_i. Conversely (Motzkin) a key outside that hull is the unique maximizer of some query. After LayerNorm with ε = 0 every key whose centred input has its own direction is selectable: the query u_i = x_i − μ_i gives it score √d‖u_i‖ > √d u_i·u_j/‖u_j‖ (strict Cauchy–Schwarz). This is the closed-hull form: Brody et al.'s Theorem 1 assumes h_n interior to the hull and concludes a strict max_{i<n} v·h_i > v·h_n, which needs a full-dimensional hull, so it says nothing about LayerNorm keys (all in 1⊥) or about n ≤ d keys, and its Appendix A proof picks the hull vertex i independently of v; the closed form needs neither and has an exact certificate either way. For d = 2 LayerNorm has only the outputs ±(1, −1): three or more keys always include a duplicate, which is unselectable.",
    source: "Brody, Alon, Yahav 2023, §4 Theorem 1",
    check,
};

fn exact_only() -> Options {
    Options {
        key_query: false,
        patience: 0,
        float_lp: false,
    }
}

/// Decides a plain key set twice (fast and exact-only), checks every certificate, and
/// returns the verdicts.
pub fn certified_plain(keys: &KeySet) -> Result<Vec<bool>, String> {
    let fast = decide_plain(keys, &Options::default());
    let slow = decide_plain(keys, &exact_only());
    for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
        check_plain(keys, i, &f.certificate)
            .map_err(|e| format!("key {i} ({:?}): {e}", f.method))?;
        check_plain(keys, i, &s.certificate).map_err(|e| format!("key {i} (exact LP): {e}"))?;
        if f.selectable() != s.selectable() {
            return Err(format!("key {i}: fast and exact pipelines disagree"));
        }
    }
    Ok(fast.iter().map(Decision::selectable).collect())
}

/// The same for a scaled key set.
pub fn certified_scaled(keys: &ScaledKeySet) -> Result<Vec<bool>, String> {
    let fast = decide_scaled(keys, &Options::default()).map_err(|e| e.to_string())?;
    for (i, f) in fast.iter().enumerate() {
        check_scaled(keys, i, &f.certificate)
            .map_err(|e| format!("key {i} ({:?}): {e}", f.method))?;
    }
    Ok(fast.iter().map(Decision::selectable).collect())
}

/// The portable generator the case constructions draw from.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Small integers in [−r, r].
fn small(rng: &mut ChaCha8Rng, r: u64) -> f64 {
    (rng.next_u64() % (2 * r + 1)) as f64 - r as f64
}

/// Keys with small integer coordinates plus one key that is a dyadic convex combination of
/// some of them (exact in f64); returns the keys and the index of the combination.
pub fn hull_case(rng: &mut ChaCha8Rng) -> (KeySet, usize) {
    let d = 1 + (rng.next_u64() % 5) as usize;
    let m = 1 + (rng.next_u64() % 8) as usize;
    let mut data: Vec<f64> = (0..m * d).map(|_| small(rng, 6)).collect();
    // Weights k_j/2^s with Σ k_j = 2^s.
    let s = 1 + (rng.next_u64() % 4) as u32;
    let total = 1u64 << s;
    let mut left = total;
    let mut combo = vec![0.0; d];
    for j in 0..m {
        let k = if j + 1 == m {
            left
        } else {
            rng.next_u64() % (left + 1)
        };
        left -= k;
        let w = k as f64 / total as f64;
        for c in 0..d {
            combo[c] += w * data[j * d + c];
        }
    }
    let at = (rng.next_u64() % (m as u64 + 1)) as usize;
    for (c, v) in combo.into_iter().enumerate() {
        data.insert(at * d + c, v);
    }
    (KeySet::new(m + 1, d, data, None).expect("finite"), at)
}

/// Random keys and a random direction with a unique maximizer (if any): that key must be
/// selectable.
pub fn argmax_case(rng: &mut ChaCha8Rng) -> (KeySet, Option<usize>) {
    let d = 1 + (rng.next_u64() % 4) as usize;
    let n = 1 + (rng.next_u64() % 10) as usize;
    let data: Vec<f64> = (0..n * d).map(|_| small(rng, 5)).collect();
    let v: Vec<f64> = (0..d).map(|_| small(rng, 3)).collect();
    let scores: Vec<f64> = (0..n)
        .map(|j| (0..d).map(|c| v[c] * data[j * d + c]).sum())
        .collect();
    let best = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let winners: Vec<usize> = (0..n).filter(|&j| scores[j] == best).collect();
    let unique = (winners.len() == 1).then(|| winners[0]);
    (KeySet::new(n, d, data, None).expect("finite"), unique)
}

/// Gaussian f32 keys, with one row replaced by a positive power-of-two multiple plus a
/// constant of another row when `twin` (the two normalize to the same point).
pub fn layer_norm_case(rng: &mut ChaCha8Rng, twin: bool) -> (KeySet, Option<(usize, usize)>) {
    let d = 2 + (rng.next_u64() % 7) as usize;
    let n = 2 + (rng.next_u64() % 24) as usize;
    let mut data = gaussian_keys(rng.next_u64(), d, n, 0);
    let pair = twin.then(|| {
        let a = (rng.next_u64() % n as u64) as usize;
        let b = (a + 1 + (rng.next_u64() % (n as u64 - 1)) as usize) % n;
        let scale = [0.5, 2.0, 4.0][(rng.next_u64() % 3) as usize];
        let shift = small(rng, 3);
        for c in 0..d {
            data[b * d + c] = data[a * d + c] * scale + shift;
        }
        (a, b)
    });
    (KeySet::new(n, d, data, None).expect("finite"), pair)
}

/// For each normalized key (ε = 0): does no other key's w point the same way? Decided
/// exactly and independently of the engine: w_a ∥⁺ w_b iff w_a·w_b > 0 and
/// (w_a·w_b)² = ‖w_a‖²‖w_b‖². (In d = 2 every centred input is ± one vector, so LayerNorm
/// has only two outputs: Brody et al. App. B.)
pub fn own_directions(keys: &ScaledKeySet) -> Vec<bool> {
    let dot = |a: usize, b: usize| -> Rational {
        let mut s = Rational::new();
        for (x, y) in keys.w(a).iter().zip(keys.w(b)) {
            s += Rational::from(x * y);
        }
        s
    };
    let same = |a: usize, b: usize| {
        let ab = dot(a, b);
        ab > 0 && Rational::from(&ab * &ab) == dot(a, a) * dot(b, b)
    };
    (0..keys.n())
        .map(|a| (0..keys.n()).all(|b| b == a || !same(a, b)))
        .collect()
}

fn fixed_cases() -> Vec<(&'static str, KeySet, Vec<bool>)> {
    let ks = |n, d, v: Vec<f64>| KeySet::new(n, d, v, None).expect("fixed keys are valid");
    vec![
        (
            "square with centre and a boundary midpoint",
            ks(6, 2, vec![0., 0., 2., 0., 0., 2., 2., 2., 1., 1., 1., 0.]),
            vec![true, true, true, true, false, false],
        ),
        (
            "duplicates",
            ks(3, 2, vec![1., 1., 1., 1., -1., 0.]),
            vec![false, false, true],
        ),
        (
            "collinear in 3-D",
            ks(3, 3, vec![0., 0., 0., 1., 2., 3., 0.5, 1., 1.5]),
            vec![true, true, false],
        ),
        ("one key", ks(1, 4, vec![1., 2., 3., 4.]), vec![true]),
        (
            "one-ulp perturbation of a centre",
            ks(4, 2, vec![-1., 0., 1., 0., 0., 2., 0., f64::EPSILON]),
            vec![true, true, true, false],
        ),
        (
            "2^-40 outside the edge of a triangle (float LP sees it on the edge)",
            ks(4, 2, vec![0., 0., 1., 0., 0., 1., -(2f64.powi(-40)), 0.5]),
            vec![true, true, true, true],
        ),
        (
            "2^-40 inside the edge of a triangle",
            ks(4, 2, vec![0., 0., 1., 0., 0., 1., 2f64.powi(-40), 0.5]),
            vec![true, true, true, false],
        ),
        (
            "a key one ulp outside an edge",
            ks(3, 2, vec![-1., 1., 1., 1., 0., 1. + f64::EPSILON]),
            vec![true, true, true],
        ),
    ]
}

/// The exact checker of the theorem (see the module docs).
pub fn check(budget: Budget) -> CheckReport {
    let mut cases = 0usize;
    let mut counterexample = None;
    let mut record = |label: String, outcome: Result<(), String>| {
        cases += 1;
        if let (Err(e), None) = (&outcome, &counterexample) {
            counterexample = Some(format!("{label}: {e}"));
        }
    };
    for (name, keys, expect) in fixed_cases() {
        let outcome = certified_plain(&keys).and_then(|v| {
            (v == expect)
                .then_some(())
                .ok_or(format!("verdicts {v:?}, expected {expect:?}"))
        });
        record(name.to_string(), outcome);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(budget.seed);
    for k in 0..budget.cases {
        let (label, outcome) = match k % 4 {
            0 => {
                let (keys, at) = hull_case(&mut rng);
                let outcome = certified_plain(&keys).and_then(|v| {
                    (!v[at]).then_some(()).ok_or(format!(
                        "key {at} is in the hull but was certified selectable"
                    ))
                });
                (
                    format!("hull case {k} ({} keys, d = {})", keys.n(), keys.d()),
                    outcome,
                )
            }
            1 => {
                let (keys, winner) = argmax_case(&mut rng);
                let outcome = certified_plain(&keys).and_then(|v| match winner {
                    Some(w) if !v[w] => Err(format!(
                        "key {w} is a unique maximizer but was certified unselectable"
                    )),
                    _ => Ok(()),
                });
                (format!("argmax case {k}"), outcome)
            }
            r => {
                let (keys, twins) = layer_norm_case(&mut rng, r == 3);
                let outcome = Normalization::layer_norm(0.0)
                    .and_then(|ln| ScaledKeySet::normalize(&keys, ln, None))
                    .map_err(|e| e.to_string())
                    .and_then(|s| certified_scaled(&s).map(|v| (s, v)))
                    .and_then(|(s, v)| {
                        let expect = own_directions(&s);
                        if let Some((a, b)) = twins {
                            if expect[a] || expect[b] {
                                return Err("the twin construction did not coincide".into());
                            }
                        }
                        (v == expect).then_some(()).ok_or(format!(
                            "LayerNorm (ε = 0) verdicts {v:?}, expected {expect:?}"
                        ))
                    });
                (
                    format!("LayerNorm case {k} ({} keys, d = {})", keys.n(), keys.d()),
                    outcome,
                )
            }
        };
        record(label, outcome);
    }
    CheckReport {
        cases,
        counterexample,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_theorem_checks() {
        let r = check(Budget { cases: 24, seed: 5 });
        assert_eq!(r.counterexample, None);
        assert_eq!(r.cases, 24 + fixed_cases().len());
    }

    #[test]
    fn constructions_do_what_they_claim() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..20 {
            let (keys, at) = hull_case(&mut rng);
            assert!(at < keys.n());
            let (keys, pair) = layer_norm_case(&mut rng, true);
            let (a, b) = pair.unwrap();
            assert!(a != b && a < keys.n() && b < keys.n());
        }
    }
}
