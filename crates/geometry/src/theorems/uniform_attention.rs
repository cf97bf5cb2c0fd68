//! Theorem 6, uniform attention (Brody et al. §3.1): a query parallel to 1 scores every
//! LayerNorm-projected key equally (zero without β), so softmax attention is exactly uniform;
//! and only such queries do: any other query tells LN(q) from LN(−q).

use super::exact_vec::{is_constant, normalize, sum, surd_dot_rational, Reference, SurdVec};
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use crate::exact::surd::Surd;
use crate::problem::{EpsConvention, Op};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "uniform-attention",
    statement: "For a query q = c·1 and keys k_j = LayerNorm(x_j) + β (γ = 1, any ε ≥ 0, either convention), every score q·k_j equals c·Σβ exactly (0 without β), so softmax attention weights are exactly 1/n. Conversely, for a query q not parallel to 1 the keys LN(q) and LN(−q) (ε = 0) score √d·‖Pq‖ > 0 and −√d·‖Pq‖ < 0: no other query is uniform over all LN keys. RMSNorm keys (no projection) give no such guarantee.",
    source: "Brody et al. 2023 §3.1 (projection: queries ≈ c·1 attend to all keys equally) and §4.1",
    check,
};

/// q·k for every key.
pub fn scores(query: &[Rational], keys: &[SurdVec]) -> Result<Vec<Surd>, String> {
    keys.iter()
        .map(|k| surd_dot_rational(query, k).map_err(String::from))
        .collect()
}

/// Attention over these keys is exactly uniform iff every score equals the first (softmax
/// weights e^{s_j}/Σe^{s_k} = 1/Σe^{s_k − s_j} are then exactly 1/n).
pub fn uniform(scores: &[Surd]) -> bool {
    scores.windows(2).all(|w| w[0] == w[1])
}

/// q = c·1 against the defined LN keys of `rows` (+ β): every score is exactly c·Σβ.
pub fn check_ones_query(
    reference: Reference,
    c: &Rational,
    rows: &[Vec<Rational>],
    eps: &Rational,
    convention: EpsConvention,
    beta: &[Rational],
) -> Result<(), String> {
    let Some(d) = rows.first().map(Vec::len) else {
        return Ok(());
    };
    let query = vec![c.clone(); d];
    let keys: Vec<SurdVec> = rows
        .iter()
        .filter_map(|x| reference(Op::LayerNorm, x, eps, convention, None, Some(beta)))
        .collect();
    let want = Surd::rational(c * sum(beta));
    let s = scores(&query, &keys)?;
    if let Some(j) = s.iter().position(|sj| *sj != want) {
        return Err(format!(
            "c={c} ε={eps} {convention}: score of key {j} is {}, want c·Σβ = {want}",
            s[j]
        ));
    }
    if !uniform(&s) {
        return Err("equal scores judged non-uniform".into());
    }
    Ok(())
}

/// A query not parallel to 1 separates LN(q) from LN(−q): scores of opposite strict signs.
pub fn check_other_query(reference: Reference, q: &[Rational]) -> Result<(), String> {
    if is_constant(q) {
        return Ok(()); // q ∥ 1: the first claim
    }
    let zero = Rational::new();
    let neg: Vec<Rational> = q.iter().map(|v| Rational::from(-v)).collect();
    let keys: Vec<SurdVec> = [q, &neg[..]]
        .iter()
        .map(|x| {
            reference(Op::LayerNorm, x, &zero, EpsConvention::Inside, None, None)
                .ok_or("LN(±q) undefined")
        })
        .collect::<Result<_, _>>()?;
    let s = scores(q, &keys)?;
    // Scores of opposite strict signs: attention over {LN(q), LN(−q)} is not uniform.
    if s[0].signum() != Ordering::Greater {
        return Err(format!("score of LN(q) is {}, want > 0", s[0]));
    }
    if s[1].signum() != Ordering::Less {
        return Err(format!("score of LN(−q) is {}, want < 0", s[1]));
    }
    Ok(())
}

/// The projection matters: with RMSNorm keys RMS((1, 0)) = (√2, 0) and RMS((1, −1)) = (1, −1),
/// the query 1 scores √2 and 0.
pub fn rms_keys_are_not_uniform(reference: Reference) -> Result<(), String> {
    let q = |n: i64| Rational::from(n);
    let rows = [vec![q(1), q(0)], vec![q(1), q(-1)]];
    let keys: Vec<SurdVec> = rows
        .iter()
        .map(|x| {
            reference(Op::RmsNorm, x, &q(0), EpsConvention::Inside, None, None)
                .ok_or("RMS undefined")
        })
        .collect::<Result<_, _>>()?;
    let s = scores(&[q(1), q(1)], &keys)?;
    if uniform(&s) {
        return Err(format!("RMSNorm keys scored uniformly: {}, {}", s[0], s[1]));
    }
    Ok(())
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            tally.record(
                || "RMSNorm witness".into(),
                rms_keys_are_not_uniform(normalize),
            );
            let q = |n: i64| Rational::from(n);
            let rows = vec![
                vec![q(1), q(2), q(3)],
                vec![q(-4), q(0), q(9)],
                vec![q(5), q(5), q(5)],
            ];
            for eps in [q(0), q(1)] {
                for conv in [EpsConvention::Inside, EpsConvention::Outside] {
                    tally.record(
                        || "edge keys".into(),
                        check_ones_query(normalize, &q(3), &rows, &eps, conv, &[q(1), q(0), q(-2)]),
                    );
                }
            }
            tally.record(
                || "edge query".into(),
                check_other_query(normalize, &[q(1), q(1), q(2)]),
            );
        },
        |inputs| {
            let d = inputs.width();
            let n = 1 + inputs.below(8) as usize;
            let rows: Vec<_> = (0..n).map(|_| inputs.row_of_width(d)).collect();
            let values: Vec<Vec<Rational>> = rows.iter().map(|r| r.values.clone()).collect();
            let (c, eps) = (inputs.rational(), inputs.eps());
            let convention = if inputs.below(2) == 0 {
                EpsConvention::Inside
            } else {
                EpsConvention::Outside
            };
            let beta = if inputs.below(2) == 0 {
                vec![Rational::new(); d]
            } else {
                inputs.row_of_width(d).values
            };
            let name = |e: String| format!("{} keys of {}: {e}", n, rows[0].describe());
            check_ones_query(normalize, &c, &values, &eps, convention, &beta).map_err(name)?;
            check_other_query(normalize, &values[0]).map_err(name)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theorems::exact_vec::ints;
    use crate::theorems::faults;

    #[test]
    fn ones_query_is_uniform() {
        let rows = vec![ints(&[1, 2]), ints(&[7, -3]), ints(&[0, 1])];
        check_ones_query(
            normalize,
            &Rational::from(5),
            &rows,
            &Rational::new(),
            EpsConvention::Inside,
            &ints(&[0, 0]),
        )
        .unwrap();
        check_ones_query(
            normalize,
            &Rational::from(5),
            &rows,
            &Rational::from(1),
            EpsConvention::Outside,
            &ints(&[2, 1]),
        )
        .unwrap();
        check_ones_query(
            normalize,
            &Rational::from(5),
            &[],
            &Rational::new(),
            EpsConvention::Inside,
            &[],
        )
        .unwrap();
        // Scores: (5, 5)·(LN + (2, 1)) = 15 for every key.
        let keys: Vec<SurdVec> = rows
            .iter()
            .map(|x| {
                normalize(
                    Op::LayerNorm,
                    x,
                    &Rational::new(),
                    EpsConvention::Inside,
                    None,
                    Some(&ints(&[2, 1])),
                )
                .unwrap()
            })
            .collect();
        let s = scores(&ints(&[5, 5]), &keys).unwrap();
        assert!(s
            .iter()
            .all(|v| v.to_rational() == Some(Rational::from(15))));
        assert!(uniform(&s));
        assert!(uniform(&[]));
        assert!(!uniform(&[Surd::zero(), Surd::rational(Rational::from(1))]));
    }

    #[test]
    fn other_queries_are_not() {
        check_other_query(normalize, &ints(&[1, 2, 2])).unwrap();
        check_other_query(normalize, &ints(&[3, 3])).unwrap();
        rms_keys_are_not_uniform(normalize).unwrap();
        let keys: Vec<SurdVec> = [ints(&[0, 1]), ints(&[1, 0])]
            .iter()
            .map(|x| {
                normalize(
                    Op::LayerNorm,
                    x,
                    &Rational::new(),
                    EpsConvention::Inside,
                    None,
                    None,
                )
                .unwrap()
            })
            .collect();
        assert!(!uniform(&scores(&ints(&[1, 2]), &keys).unwrap()));
        assert!(uniform(&scores(&ints(&[2, 2]), &keys).unwrap()));
    }

    #[test]
    fn faulty_references_are_caught() {
        let rows = vec![ints(&[1, 2, 7]), ints(&[7, -3, 0]), ints(&[0, 1, 1])];
        let beta = ints(&[1, 0, 3]);
        let eps = Rational::from((1, 10));
        for (name, fault) in [
            ("no centring", faults::no_centering as Reference),
            ("dropped β", faults::dropped_beta),
            ("nudged", faults::nudged_last_entry),
        ] {
            let caught = check_ones_query(
                fault,
                &Rational::from(2),
                &rows,
                &eps,
                EpsConvention::Inside,
                &beta,
            );
            assert!(caught.is_err(), "{name}");
        }
        // Other queries: a reference that loses the sign, or is undefined.
        fn sign_by_first(
            op: Op,
            x: &[Rational],
            e: &Rational,
            c: EpsConvention,
            g: Option<&[Rational]>,
            b: Option<&[Rational]>,
        ) -> Option<SurdVec> {
            let y = normalize(op, x, e, c, g, b)?;
            Some(if x[0].cmp0() == Ordering::Less {
                y.iter().map(Surd::neg).collect()
            } else {
                y
            })
        }
        let e = check_other_query(sign_by_first, &ints(&[1, 2, 2])).unwrap_err();
        assert!(e.contains("LN(−q)"), "{e}");
        fn negate_positive_first(
            op: Op,
            x: &[Rational],
            e: &Rational,
            c: EpsConvention,
            g: Option<&[Rational]>,
            b: Option<&[Rational]>,
        ) -> Option<SurdVec> {
            let y = normalize(op, x, e, c, g, b)?;
            Some(if x[0].cmp0() == Ordering::Greater {
                y.iter().map(Surd::neg).collect()
            } else {
                y
            })
        }
        let e = check_other_query(negate_positive_first, &ints(&[1, 2, 2])).unwrap_err();
        assert!(e.contains("LN(q)"), "{e}");
        assert!(check_other_query(faults::flipped_sign, &ints(&[1, 2, 2])).is_err());
        fn never_defined(
            _: Op,
            _: &[Rational],
            _: &Rational,
            _: EpsConvention,
            _: Option<&[Rational]>,
            _: Option<&[Rational]>,
        ) -> Option<SurdVec> {
            None
        }
        assert!(check_other_query(never_defined, &ints(&[1, 2, 2])).is_err());
        assert!(rms_keys_are_not_uniform(never_defined).is_err());
        assert!(rms_keys_are_not_uniform(faults::centred_rms).is_err());
    }
}
