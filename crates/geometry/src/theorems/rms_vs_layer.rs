//! Theorem 5, RMSNorm vs LayerNorm: they agree exactly on mean-zero rows; LayerNorm's output is
//! exactly orthogonal to 1 (Gupta et al.'s 90°), RMSNorm's has an exact, generally nonzero
//! cos² to 1, given here as a rational function of the input for later experiments.

use super::exact_vec::{
    expect_equal, is_constant, len_q, mean, mean_square, norm2, normalize, sum, surd_norm2,
    surd_sum, Reference, SurdVec,
};
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use crate::problem::{EpsConvention, Op};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "rms-vs-layer",
    statement: "With the same ε, convention and γ (no zero entries), no β: RMSNorm(x) = LayerNorm(x) iff mean(x) = 0. LayerNorm's output (γ = 1) is exactly orthogonal to 1: Σy = 0, angle 90°. RMSNorm's output has cos²∠(y, 1) = (Σx)²/(d·‖x‖²) = μ²/mean(x²) exactly (any ε), zero iff μ = 0, one iff x is constant.",
    source: "Gupta et al. 2024 §2.2 and §4 (angle to the uniform vector); digest: RMSNorm; Zhang & Sennrich 2019",
    check,
};

/// cos² of the angle between v and 1: (v·1)²/(d·‖v‖²); `None` for v = 0 (no angle).
pub fn cos2_to_ones(v: &[Rational]) -> Option<Rational> {
    let n2 = norm2(v);
    if n2.cmp0() == Ordering::Equal {
        return None;
    }
    Some(Rational::from(sum(v).square_ref()) / (len_q(v) * n2))
}

/// cos² to 1 of an exact output vector; it must come out rational when the output is a rational
/// vector times one scalar, so anything else is an error.
pub fn cos2_to_ones_exact(y: &[crate::exact::surd::Surd]) -> Result<Option<Rational>, String> {
    let n2 = surd_norm2(y)?;
    if n2.is_zero() {
        return Ok(None);
    }
    let s = surd_sum(y)?;
    let ratio = s
        .square()
        .div(&n2.scale(&Rational::from(y.len())))
        .ok_or("zero norm")??;
    ratio
        .to_rational()
        .map(Some)
        .ok_or_else(|| format!("cos² to 1 is irrational: {ratio}"))
}

fn outputs_equal(a: &Option<SurdVec>, b: &Option<SurdVec>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => expect_equal("", a, b).is_ok(),
        (None, None) => true,
        _ => false,
    }
}

/// Every claim for one row, ε, convention and γ (a γ with a zero entry is replaced by ones).
pub fn check_row(
    reference: Reference,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: &[Rational],
) -> Result<(), String> {
    let ones = vec![Rational::from(1); x.len()];
    let gamma = if gamma.iter().any(|g| g.cmp0() == Ordering::Equal) {
        &ones[..]
    } else {
        gamma
    };
    let ln = reference(Op::LayerNorm, x, eps, convention, Some(gamma), None);
    let rms = reference(Op::RmsNorm, x, eps, convention, Some(gamma), None);
    let mean_zero = mean(x).cmp0() == Ordering::Equal;
    if outputs_equal(&ln, &rms) != mean_zero {
        return Err(format!(
            "{convention} ε={eps}: RMSNorm = LayerNorm is {}, mean(x) = 0 is {mean_zero}",
            !mean_zero
        ));
    }
    if let Some(y) = reference(Op::LayerNorm, x, eps, convention, None, None) {
        let s = surd_sum(&y)?;
        if !s.is_zero() {
            return Err(format!("Σ LayerNorm(x) = {s}, not 0"));
        }
        if let Some(c) = cos2_to_ones_exact(&y)?.filter(|c| c.cmp0() != Ordering::Equal) {
            return Err(format!("LayerNorm output has cos² {c} to 1, not 0"));
        }
    }
    if let Some(y) = reference(Op::RmsNorm, x, eps, convention, None, None) {
        let got = cos2_to_ones_exact(&y)?;
        let want = cos2_to_ones(x);
        if got != want {
            return Err(format!("cos² of RMSNorm(x) to 1: {got:?}, want {want:?}"));
        }
    }
    check_cos2(cos2_to_ones, x)
}

/// The angle function's own claims, for a cos² function (the definition: [`cos2_to_ones`]):
/// defined iff x ≠ 0; zero iff μ = 0; one iff x is constant; equal to μ²/mean(x²).
pub fn check_cos2(cos2: fn(&[Rational]) -> Option<Rational>, x: &[Rational]) -> Result<(), String> {
    let Some(c) = cos2(x) else {
        return if x.iter().all(|v| v.cmp0() == Ordering::Equal) {
            Ok(())
        } else {
            Err("cos² to 1 undefined for x ≠ 0".into())
        };
    };
    let mu = mean(x);
    if (c.cmp0() == Ordering::Equal) != (mu.cmp0() == Ordering::Equal) {
        return Err(format!("cos² {c} to 1 but μ = {mu}"));
    }
    if (c == 1) != is_constant(x) {
        return Err(format!(
            "cos² {c} to 1 but x constant is {}",
            is_constant(x)
        ));
    }
    let closed = Rational::from(mu.square_ref()) / mean_square(x);
    if c != closed {
        return Err(format!("cos² {c} vs μ²/mean(x²) = {closed}"));
    }
    Ok(())
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            let q = |n: i64| Rational::from(n);
            let rows = [
                vec![q(-1), q(1)],
                vec![q(1), q(2)],
                vec![q(3); 4],
                vec![q(0); 3],
                vec![q(2), q(-5), q(3)],
            ];
            for x in rows {
                for eps in [q(0), Rational::from((1, 1000))] {
                    for conv in [EpsConvention::Inside, EpsConvention::Outside] {
                        let gamma = vec![q(2); x.len()];
                        tally.record(
                            || format!("edge {x:?} ε={eps} {conv}"),
                            check_row(normalize, &x, &eps, conv, &gamma),
                        );
                    }
                }
            }
        },
        |inputs| {
            let row = inputs.row();
            let eps = inputs.eps();
            let convention = if inputs.below(2) == 0 {
                EpsConvention::Inside
            } else {
                EpsConvention::Outside
            };
            let gamma = inputs.row_of_width(row.d()).values;
            // Half the rows are centred, so both sides of the iff are exercised.
            let x = if inputs.below(2) == 0 {
                super::exact_vec::centered(&row.values)
            } else {
                row.values.clone()
            };
            check_row(normalize, &x, &eps, convention, &gamma)
                .map_err(|e| format!("{} ε={eps} {convention}: {e}", row.describe()))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::surd::Surd;
    use crate::theorems::exact_vec::ints;
    use crate::theorems::faults;

    #[test]
    fn cos2_by_hand() {
        assert_eq!(cos2_to_ones(&ints(&[1, 1])), Some(Rational::from(1)));
        assert_eq!(cos2_to_ones(&ints(&[1, -1])), Some(Rational::new()));
        assert_eq!(cos2_to_ones(&ints(&[1, 0])), Some(Rational::from((1, 2))));
        assert_eq!(
            cos2_to_ones(&ints(&[3, 4, 0])),
            Some(Rational::from((49, 75)))
        );
        assert_eq!(cos2_to_ones(&ints(&[0, 0])), None);
        let r2 = Surd::sqrt(Rational::from(2)).unwrap();
        assert_eq!(
            cos2_to_ones_exact(&[r2.clone(), Surd::zero()]).unwrap(),
            Some(Rational::from((1, 2)))
        );
        assert_eq!(
            cos2_to_ones_exact(&[Surd::zero(), Surd::zero()]).unwrap(),
            None
        );
        // (√2, 1) is not a rational vector times one scalar: its cos² is irrational.
        assert!(cos2_to_ones_exact(&[r2, Surd::rational(Rational::from(1))]).is_err());
    }

    #[test]
    fn rms_equals_layer_only_on_centred_rows() {
        let g = ints(&[1, 3, -2]);
        for eps in [Rational::new(), Rational::from((1, 2))] {
            for conv in [EpsConvention::Inside, EpsConvention::Outside] {
                check_row(normalize, &ints(&[-1, 3, -2]), &eps, conv, &g).unwrap();
                check_row(normalize, &ints(&[1, 3, -2]), &eps, conv, &g).unwrap();
                check_row(normalize, &ints(&[0, 3, -2]), &eps, conv, &ints(&[0, 1, 1])).unwrap();
                check_row(normalize, &ints(&[4, 4, 4]), &eps, conv, &g).unwrap();
            }
        }
        let x = ints(&[1, 3, -2]);
        let ln = normalize(
            Op::LayerNorm,
            &x,
            &Rational::new(),
            EpsConvention::Inside,
            None,
            None,
        );
        let rms = normalize(
            Op::RmsNorm,
            &x,
            &Rational::new(),
            EpsConvention::Inside,
            None,
            None,
        );
        assert!(!outputs_equal(&ln, &rms));
        assert!(outputs_equal(&ln, &ln));
        assert!(outputs_equal(&None, &None));
        assert!(!outputs_equal(&ln, &None));
        let y = rms.unwrap();
        assert_eq!(
            cos2_to_ones_exact(&y).unwrap(),
            Some(Rational::from((4, 42)))
        );
    }

    #[test]
    fn faulty_angle_functions_are_caught() {
        fn unsquared(v: &[Rational]) -> Option<Rational> {
            let n2 = norm2(v);
            (n2.cmp0() != Ordering::Equal).then(|| sum(v).abs() / (len_q(v) * n2))
        }
        fn over_d_minus_one(v: &[Rational]) -> Option<Rational> {
            cos2_to_ones(v).map(|c| c * len_q(v) / Rational::from(v.len().max(2) - 1))
        }
        fn never(_: &[Rational]) -> Option<Rational> {
            None
        }
        fn shifted(v: &[Rational]) -> Option<Rational> {
            cos2_to_ones(v).map(|c| c / 2u32 + Rational::from((1, 2)))
        }
        fn bent(v: &[Rational]) -> Option<Rational> {
            cos2_to_ones(v).map(|c| {
                if c == 1 {
                    c
                } else {
                    Rational::from(c.square_ref())
                }
            })
        }
        let e = check_cos2(shifted, &ints(&[1, -1])).unwrap_err();
        assert!(e.contains("μ ="), "{e}");
        let e = check_cos2(over_d_minus_one, &ints(&[2, 2])).unwrap_err();
        assert!(e.contains("constant"), "{e}");
        let e = check_cos2(bent, &ints(&[1, 0])).unwrap_err();
        assert!(e.contains("μ²/mean(x²)"), "{e}");
        assert!(check_cos2(unsquared, &ints(&[2, 0, 0])).is_err());
        assert!(check_cos2(never, &ints(&[1, 0])).is_err());
        check_cos2(never, &ints(&[0, 0])).unwrap();
        for x in [
            ints(&[1, 0]),
            ints(&[3, 3]),
            ints(&[-2, 2]),
            ints(&[0, 0]),
            ints(&[5, -1, 7]),
        ] {
            check_cos2(cos2_to_ones, &x).unwrap();
        }
    }

    #[test]
    fn a_gamma_with_a_zero_entry_is_replaced_by_ones() {
        // γ = 0 would make both outputs 0 (equal although μ ≠ 0): outside the statement.
        for gamma in [ints(&[0, 0, 0]), ints(&[0, 2, 3])] {
            check_row(
                normalize,
                &ints(&[1, 3, 5]),
                &Rational::new(),
                EpsConvention::Inside,
                &gamma,
            )
            .unwrap();
        }
    }

    #[test]
    fn faulty_references_are_caught() {
        let eps = Rational::from((1, 2));
        let g = ints(&[1, 3, -2]);
        let rows = [ints(&[1, 3, -2]), ints(&[-1, 3, -2]), ints(&[4, 4, 4])];
        for (name, fault) in [
            ("no centring", faults::no_centering as Reference),
            ("centred RMSNorm", faults::centred_rms),
            ("nudged", faults::nudged_last_entry),
        ] {
            let caught = rows.iter().any(|x| {
                [Rational::new(), eps.clone()]
                    .iter()
                    .any(|e| check_row(fault, x, e, EpsConvention::Inside, &g).is_err())
            });
            assert!(caught, "{name}");
        }
        // A reference whose RMSNorm drifts off its cos² law (x/‖x‖ with one entry doubled).
        fn skewed_rms(
            op: Op,
            x: &[Rational],
            e: &Rational,
            c: EpsConvention,
            gm: Option<&[Rational]>,
            b: Option<&[Rational]>,
        ) -> Option<SurdVec> {
            let mut y = normalize(op, x, e, c, gm, b)?;
            if op == Op::RmsNorm {
                y[0] = y[0].scale(&Rational::from(2));
            }
            Some(y)
        }
        assert!(check_row(
            skewed_rms,
            &ints(&[1, 3, 5]),
            &Rational::new(),
            EpsConvention::Inside,
            &g
        )
        .is_err());
        // A LayerNorm whose output carries a component along 1.
        fn lifted_ln(
            op: Op,
            x: &[Rational],
            e: &Rational,
            c: EpsConvention,
            gm: Option<&[Rational]>,
            b: Option<&[Rational]>,
        ) -> Option<SurdVec> {
            let y = normalize(op, x, e, c, gm, b)?;
            Some(if op == Op::LayerNorm && gm.is_none() {
                y.iter()
                    .map(|v| v.add_rational(&Rational::from(1)))
                    .collect()
            } else {
                y
            })
        }
        let e = check_row(
            lifted_ln,
            &ints(&[1, 3, 5]),
            &Rational::new(),
            EpsConvention::Inside,
            &g,
        )
        .unwrap_err();
        assert!(e.contains("Σ LayerNorm"), "{e}");
    }
}
