//! Uniform attention with a gain (the gain-aware form of Brody et al. §3.1): after
//! LayerNorm with gain γ (no zero entry), every key k = γ⊙u·s + β has u ⊥ 1, so the query
//! q = c/γ (entrywise) scores every key exactly c·Σβᵢ/γᵢ, and attention is exactly uniform.
//! Only such queries are: for q not ∥ 1/γ, the inputs ±q⊙γ give keys of opposite scores.

use super::exact_vec::{is_constant, normalize, Reference, SurdVec};
use super::uniform_attention::{scores, uniform};
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use crate::exact::surd::Surd;
use crate::problem::{EpsConvention, Op};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "uniform-attention-gain",
    statement: "For keys k_j = LayerNorm(x_j) with gain γ (every γ_i ≠ 0), bias β, any ε ≥ 0 and either convention, the query q = c·(1/γ_1, …, 1/γ_d) scores every key exactly c·Σ_i β_i/γ_i (0 without β), so softmax attention is exactly uniform; with γ = 1 this is the query c·1 of Brody et al. Conversely (β = 0, ε = 0), for q not parallel to 1/γ the keys of the inputs x = ±q⊙γ score ±√d·‖P(q⊙γ)‖ (P = I − 11ᵀ/d), of opposite strict signs: no other query is uniform over all keys. The query c·1 is not uniform once γ is not constant.",
    source: "Brody et al. 2023 §3.1 (projection lets queries attend to all keys equally), with LayerNorm's gain γ of eq. (1)",
    check,
};

/// c/γ entrywise (`None` when some γᵢ = 0).
pub fn inverse_gain_query(c: &Rational, gamma: &[Rational]) -> Option<Vec<Rational>> {
    gamma
        .iter()
        .map(|g| (g.cmp0() != Ordering::Equal).then(|| Rational::from(c / g)))
        .collect()
}

fn keys(
    reference: Reference,
    rows: &[Vec<Rational>],
    eps: &Rational,
    convention: EpsConvention,
    gamma: &[Rational],
    beta: &[Rational],
) -> Vec<SurdVec> {
    rows.iter()
        .filter_map(|x| reference(Op::LayerNorm, x, eps, convention, Some(gamma), Some(beta)))
        .collect()
}

/// The query `query` against the defined LN keys of `rows` (gain γ, bias β): every score is
/// exactly c·Σβᵢ/γᵢ.
#[allow(clippy::too_many_arguments)]
pub fn check_gain_query(
    reference: Reference,
    query: &[Rational],
    c: &Rational,
    rows: &[Vec<Rational>],
    eps: &Rational,
    convention: EpsConvention,
    gamma: &[Rational],
    beta: &[Rational],
) -> Result<(), String> {
    let want: Rational = beta
        .iter()
        .zip(gamma)
        .map(|(b, g)| Rational::from(b / g))
        .sum::<Rational>()
        * c;
    let want = Surd::rational(want);
    let s = scores(query, &keys(reference, rows, eps, convention, gamma, beta))?;
    if let Some(j) = s.iter().position(|sj| *sj != want) {
        return Err(format!(
            "c={c} ε={eps} {convention}: score of key {j} is {}, want c·Σβ/γ = {want}",
            s[j]
        ));
    }
    if !uniform(&s) {
        return Err("equal scores judged non-uniform".into());
    }
    Ok(())
}

/// The claim with the query c/γ.
pub fn check_inverse_gain_query(
    reference: Reference,
    c: &Rational,
    rows: &[Vec<Rational>],
    eps: &Rational,
    convention: EpsConvention,
    gamma: &[Rational],
    beta: &[Rational],
) -> Result<(), String> {
    let q = inverse_gain_query(c, gamma).ok_or("a gain entry is 0")?;
    check_gain_query(reference, &q, c, rows, eps, convention, gamma, beta)
}

/// A query q not ∥ 1/γ separates the keys of ±q⊙γ (β = 0, ε = 0): scores of opposite strict
/// signs, each ±√d·‖P(q⊙γ)‖ in absolute value.
pub fn check_other_gain_query(
    reference: Reference,
    q: &[Rational],
    gamma: &[Rational],
) -> Result<(), String> {
    let x: Vec<Rational> = q
        .iter()
        .zip(gamma)
        .map(|(a, g)| Rational::from(a * g))
        .collect();
    if is_constant(&x) {
        return Ok(()); // q ∥ 1/γ (or d = 1): the first claim
    }
    let neg: Vec<Rational> = x.iter().map(|v| Rational::from(-v)).collect();
    let zero = Rational::new();
    let ks: Vec<SurdVec> = [&x[..], &neg[..]]
        .iter()
        .map(|r| {
            reference(
                Op::LayerNorm,
                r,
                &zero,
                EpsConvention::Inside,
                Some(gamma),
                None,
            )
            .ok_or("LN(±q⊙γ) undefined")
        })
        .collect::<Result<_, _>>()?;
    let s = scores(q, &ks)?;
    // |score|² = d·‖Px‖²: the exact size of the separation.
    let centred = super::exact_vec::centered(&x);
    let want2 = super::exact_vec::len_q(&x) * super::exact_vec::norm2(&centred);
    for (sj, sign) in s.iter().zip([Ordering::Greater, Ordering::Less]) {
        if sj.signum() != sign || sj.square() != Surd::rational(want2.clone()) {
            return Err(format!(
                "score {sj} of LN(±q⊙γ): want sign {sign:?} and square d·‖P(q⊙γ)‖² = {want2}"
            ));
        }
    }
    Ok(())
}

/// With a non-constant gain, the query 1 is not uniform: γ = (1, 2), keys LN((1, 0)) and
/// LN((0, 1)) = ±(1, −2) score −1 and 1.
pub fn ones_query_fails_with_a_gain(reference: Reference) -> Result<(), String> {
    let q = |n: i64| Rational::from(n);
    let gamma = [q(1), q(2)];
    let rows = [vec![q(1), q(0)], vec![q(0), q(1)]];
    let ks = keys(
        reference,
        &rows,
        &q(0),
        EpsConvention::Inside,
        &gamma,
        &[q(0), q(0)],
    );
    if ks.len() != 2 {
        return Err("LN keys undefined".into());
    }
    let s = scores(&[q(1), q(1)], &ks)?;
    if uniform(&s) {
        return Err(format!(
            "the query 1 scored the gained keys uniformly: {s:?}"
        ));
    }
    Ok(())
}

fn convention_of(bit: u64) -> EpsConvention {
    if bit == 0 {
        EpsConvention::Inside
    } else {
        EpsConvention::Outside
    }
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            tally.record(
                || "the query 1 with gain (1, 2)".into(),
                ones_query_fails_with_a_gain(normalize),
            );
            let q = |n: i64| Rational::from(n);
            let rows = vec![
                vec![q(1), q(2), q(3)],
                vec![q(-4), q(0), q(9)],
                vec![q(5), q(5), q(5)],
            ];
            let gamma = [q(2), Rational::from((-1, 3)), q(5)];
            for eps in [q(0), q(1)] {
                for bit in [0, 1] {
                    tally.record(
                        || "edge keys".into(),
                        check_inverse_gain_query(
                            normalize,
                            &q(3),
                            &rows,
                            &eps,
                            convention_of(bit),
                            &gamma,
                            &[q(1), q(0), q(-2)],
                        ),
                    );
                }
            }
            tally.record(
                || "edge query".into(),
                check_other_gain_query(normalize, &[q(1), q(1), q(2)], &gamma),
            );
        },
        |inputs| {
            let d = inputs.width();
            let n = 1 + inputs.below(8) as usize;
            let rows: Vec<Vec<Rational>> = (0..n).map(|_| inputs.row_of_width(d).values).collect();
            let gamma: Vec<Rational> = (0..d).map(|_| inputs.nonzero_rational()).collect();
            let (c, eps) = (inputs.rational(), inputs.eps());
            let convention = convention_of(inputs.below(2));
            let beta = if inputs.below(2) == 0 {
                vec![Rational::new(); d]
            } else {
                inputs.row_of_width(d).values
            };
            let other = inputs.row_of_width(d).values;
            let name = |e: String| format!("{n} keys of width {d}: {e}");
            check_inverse_gain_query(normalize, &c, &rows, &eps, convention, &gamma, &beta)
                .map_err(name)?;
            check_other_gain_query(normalize, &other, &gamma).map_err(name)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theorems::exact_vec::ints;
    use crate::theorems::faults;

    #[test]
    fn the_inverse_gain_query_is_uniform() {
        let rows = vec![ints(&[1, 2, 7]), ints(&[7, -3, 0]), ints(&[0, 1, 1])];
        let gamma = ints(&[2, -1, 4]);
        let beta = ints(&[2, 1, 8]);
        // Scores: c·(2/2 + 1/(−1) + 8/4) = 2c.
        let q = inverse_gain_query(&Rational::from(3), &gamma).unwrap();
        let ks = keys(
            normalize,
            &rows,
            &Rational::new(),
            EpsConvention::Inside,
            &gamma,
            &beta,
        );
        let s = scores(&q, &ks).unwrap();
        assert!(s.iter().all(|v| v.to_rational() == Some(Rational::from(6))));
        for conv in [EpsConvention::Inside, EpsConvention::Outside] {
            check_inverse_gain_query(
                normalize,
                &Rational::from(3),
                &rows,
                &Rational::from((1, 7)),
                conv,
                &gamma,
                &beta,
            )
            .unwrap();
        }
        assert_eq!(inverse_gain_query(&Rational::from(1), &ints(&[1, 0])), None);
        check_other_gain_query(normalize, &ints(&[1, 2, 2]), &gamma).unwrap();
        // q ∥ 1/γ is the first claim, not a counterexample.
        check_other_gain_query(normalize, &q, &gamma).unwrap();
        ones_query_fails_with_a_gain(normalize).unwrap();
    }

    #[test]
    fn wrong_statements_and_faulty_references_are_caught() {
        let rows = vec![ints(&[1, 2, 7]), ints(&[7, -3, 0]), ints(&[0, 1, 1])];
        let gamma = ints(&[2, -1, 4]);
        let beta = ints(&[1, 0, 3]);
        let eps = Rational::from((1, 10));
        let c = Rational::from(2);
        // The query ∝ γ (instead of 1/γ), or ∝ 1, is not uniform.
        let along_gamma: Vec<Rational> = gamma.iter().map(|g| Rational::from(g * &c)).collect();
        for wrong in [along_gamma, vec![c.clone(); 3]] {
            assert!(check_gain_query(
                normalize,
                &wrong,
                &c,
                &rows,
                &eps,
                EpsConvention::Inside,
                &gamma,
                &beta
            )
            .is_err());
        }
        for (name, fault) in [
            ("no centring", faults::no_centering as Reference),
            ("dropped γ", faults::dropped_gamma),
            ("dropped β", faults::dropped_beta),
            ("nudged", faults::nudged_last_entry),
        ] {
            let caught = check_inverse_gain_query(
                fault,
                &c,
                &rows,
                &eps,
                EpsConvention::Inside,
                &gamma,
                &beta,
            );
            assert!(caught.is_err(), "{name}");
        }
        assert!(check_other_gain_query(faults::flipped_sign, &ints(&[1, 2, 2]), &gamma).is_err());
        assert!(
            check_other_gain_query(faults::unbiased_variance, &ints(&[1, 2, 2]), &gamma).is_err()
        );
        assert!(ones_query_fails_with_a_gain(faults::dropped_gamma).is_err());
    }
}
