//! Theorem 2, the norm √d: LayerNorm and RMSNorm outputs lie on the sphere of radius √d when
//! ε = 0, strictly inside it by an exact factor when ε > 0; Riechers' eq. 5 form is the same map.

use super::exact_vec::{
    centered, expect_rational, expect_value, is_constant, len_q, mean, mean_square, norm2,
    normalize, surd_norm2, variance, Reference, SurdVec,
};
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use crate::exact::surd::Surd;
use crate::problem::{EpsConvention, Op};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "norm-sqrt-d",
    statement: "‖x − μ1‖² = d·σ² (eq. 5), so ‖(x − μ)/σ‖² = d exactly for every non-constant x, and ‖x/rms(x)‖² = d for every x ≠ 0. With ε > 0 the output shrinks by an exact law: ‖y‖² = d·m/(m + ε) < d (ε inside) and ‖y‖² = d·m/(√m + ε)² < d (ε outside), m = σ² for LayerNorm and mean(x²) for RMSNorm; a constant row maps to 0. Riechers' form √N·Π̂a/√(1 + Nε/aᵀΠa) equals the ε-inside LayerNorm output.",
    source: "Brody et al. 2023 §2 eqs. (1)-(5); Riechers 2024 eq. (5); digest: ‖LayerNorm(v)‖² = d",
    check,
};

/// The second moment the op divides by: σ² for LayerNorm, mean(x²) for RMSNorm.
fn moment(op: Op, x: &[Rational]) -> Rational {
    match op {
        Op::LayerNorm => variance(x),
        Op::RmsNorm => mean_square(x),
    }
}

/// Brody et al. eq. 5, ‖x − μ1‖² = d·σ², for a variance function (the definition:
/// `exact_vec::variance`), cross-checked by the one-pass form σ² = mean(x²) − μ².
pub fn check_eq5(variance: fn(&[Rational]) -> Rational, x: &[Rational]) -> Result<(), String> {
    let mu = mean(x);
    let one_pass = mean_square(x) - Rational::from(mu.square_ref());
    let sigma2 = variance(x);
    expect_rational("σ² vs mean(x²) − μ²", &sigma2, &one_pass)?;
    expect_rational(
        "‖x − μ1‖² vs d·σ²",
        &norm2(&centered(x)),
        &(sigma2 * len_q(x)),
    )
}

/// ε = 0: ‖y‖² = d whenever the output is defined (σ > 0, resp. x ≠ 0), and undefined exactly
/// when m = 0.
pub fn check_unit_sphere(
    reference: Reference,
    op: Op,
    convention: EpsConvention,
    x: &[Rational],
) -> Result<(), String> {
    let y = reference(op, x, &Rational::new(), convention, None, None);
    let degenerate = moment(op, x).cmp0() == Ordering::Equal;
    match (y, degenerate) {
        (None, true) => Ok(()),
        (None, false) => Err(format!("{op} {convention}: undefined although m > 0")),
        (Some(_), true) => Err(format!(
            "{op} {convention}: defined although m = 0 and ε = 0"
        )),
        (Some(y), false) => expect_value(
            &format!("{op} {convention}: ‖y‖² (ε = 0)"),
            &surd_norm2(&y)?,
            &len_q(x),
        ),
    }
}

/// ε ≥ 0: the exact shrink law and its strictness.
pub fn check_shrink(
    reference: Reference,
    op: Op,
    convention: EpsConvention,
    x: &[Rational],
    eps: &Rational,
) -> Result<(), String> {
    let what = format!("{op} {convention} ε={eps}");
    let m = moment(op, x);
    let d = len_q(x);
    let degenerate = m.cmp0() == Ordering::Equal && eps.cmp0() == Ordering::Equal;
    let Some(y) = reference(op, x, eps, convention, None, None) else {
        return if degenerate {
            Ok(())
        } else {
            Err(format!("{what}: undefined although m + ε > 0"))
        };
    };
    if degenerate {
        return Err(format!("{what}: defined although m = ε = 0"));
    }
    let n2 = surd_norm2(&y)?;
    let dm = Rational::from(&d * &m);
    match convention {
        EpsConvention::Inside => expect_value(
            &format!("{what}: ‖y‖² vs d·m/(m + ε)"),
            &n2,
            &(dm / Rational::from(&m + eps)),
        )?,
        EpsConvention::Outside => {
            // (√m + ε)²·‖y‖² = d·m, the law with the square root kept exact.
            let root_plus_eps = Surd::sqrt(m.clone())
                .ok_or("negative moment")?
                .add_rational(eps);
            expect_value(
                &format!("{what}: (√m + ε)²·‖y‖² vs d·m"),
                &root_plus_eps.square().mul(&n2)?,
                &dm,
            )?
        }
    }
    let expected = if m.cmp0() == Ordering::Equal {
        Ordering::Less // the zero vector: ‖y‖² = 0 < d
    } else if eps.cmp0() == Ordering::Equal {
        Ordering::Equal
    } else {
        Ordering::Less
    };
    let got = n2.cmp(&Surd::rational(d));
    if got != expected {
        return Err(format!(
            "{what}: ‖y‖² = {n2} compares {got:?} to d, want {expected:?}"
        ));
    }
    Ok(())
}

/// Riechers eq. 5 computed as printed: Πa ≠ 0 ↦ √N·(Πa/‖Πa‖)/√(1 + Nε/(aᵀΠa)); each factor is a
/// pure square root, so their product is exact.
pub fn riechers_eq5(a: &[Rational], eps: &Rational) -> Result<Option<SurdVec>, String> {
    let pia = centered(a);
    let norm2_pia = norm2(&pia);
    if norm2_pia.cmp0() == Ordering::Equal {
        return Ok(None); // a ∝ 1: the paper maps it to 0 (a convention where ε = 0)
    }
    let n = len_q(a);
    let a_pi_a = super::exact_vec::dot(a, &pia);
    let inv_norm = Surd::sqrt(norm2_pia.recip()).ok_or("negative ‖Πa‖²")?;
    let shrink = Rational::from(1) + Rational::from(&n * eps) / a_pi_a;
    let inv_shrink = Surd::sqrt(shrink.recip()).ok_or("negative 1 + Nε/aᵀΠa")?;
    let factor = Surd::sqrt(n)
        .ok_or("negative N")?
        .mul(&inv_norm)?
        .mul(&inv_shrink)?;
    Ok(Some(pia.iter().map(|v| factor.scale(v)).collect()))
}

/// Riechers eq. 5 equals the ε-inside LayerNorm output; a ∝ 1 maps to 0, which the reference
/// agrees with when ε > 0 (and leaves undefined when ε = 0).
pub fn check_riechers_eq5(
    reference: Reference,
    a: &[Rational],
    eps: &Rational,
) -> Result<(), String> {
    let y = reference(Op::LayerNorm, a, eps, EpsConvention::Inside, None, None);
    match (riechers_eq5(a, eps)?, y) {
        (Some(r), Some(y)) => {
            super::exact_vec::expect_equal("Riechers eq. 5 vs (x − μ)/√(σ² + ε)", &r, &y)
        }
        (None, Some(y)) if y.iter().all(Surd::is_zero) => Ok(()),
        (None, None) if eps.cmp0() == Ordering::Equal && is_constant(a) => Ok(()),
        (r, y) => Err(format!(
            "Riechers eq. 5 defined: {}, reference defined: {}",
            r.is_some(),
            y.is_some()
        )),
    }
}

/// Every claim for one row and one ε, against `reference`.
pub fn check_row(reference: Reference, x: &[Rational], eps: &Rational) -> Result<(), String> {
    if x.is_empty() {
        return Ok(()); // the statements are for d ≥ 1
    }
    check_eq5(variance, x)?;
    for op in Op::ALL {
        for convention in [EpsConvention::Inside, EpsConvention::Outside] {
            check_unit_sphere(reference, op, convention, x)?;
            check_shrink(reference, op, convention, x, eps)?;
        }
    }
    check_riechers_eq5(reference, x, eps)
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            let q = |n: i64, d: i64| Rational::from((n, d));
            let rows = [
                vec![q(0, 1), q(2, 1)],
                vec![q(1, 1)],
                vec![q(3, 1); 5],
                vec![q(0, 1); 3],
                vec![q(1, 3), q(-2, 7), q(5, 2)],
            ];
            for x in rows {
                for eps in [q(0, 1), q(1, 100000), q(1, 1), q(3, 1)] {
                    tally.record(
                        || format!("edge row {x:?} ε={eps}"),
                        check_row(normalize, &x, &eps),
                    );
                }
            }
        },
        |inputs| {
            let row = inputs.row();
            let eps = inputs.eps();
            check_row(normalize, &row.values, &eps)
                .map_err(|e| format!("{} ε={eps}: {e}", row.describe()))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theorems::exact_vec::ints;
    use crate::theorems::faults;

    #[test]
    fn known_rows() {
        let x = ints(&[1, 2, 4]);
        for eps in [Rational::new(), Rational::from((1, 7)), Rational::from(2)] {
            check_row(normalize, &x, &eps).unwrap();
        }
        check_row(normalize, &ints(&[7, 7, 7]), &Rational::new()).unwrap();
        check_row(normalize, &ints(&[7, 7, 7]), &Rational::from(1)).unwrap();
        check_row(normalize, &ints(&[0]), &Rational::new()).unwrap();
        check_row(normalize, &ints(&[0, 0]), &Rational::from(1)).unwrap();
    }

    #[test]
    fn riechers_by_hand() {
        // a = (0, 2), ε = 1: Πa = (−1, 1), N = 2, aᵀΠa = 2: y = √2·(−1, 1)/√2/√2 = (−1, 1)/√2.
        let y = riechers_eq5(&ints(&[0, 2]), &Rational::from(1))
            .unwrap()
            .unwrap();
        assert_eq!(y[1], Surd::sqrt(Rational::from((1, 2))).unwrap());
        assert_eq!(y[0], Surd::sqrt(Rational::from((1, 2))).unwrap().neg());
        // ε = 0 on a = (1, 2, 6): Πa = (−2, −1, 3), ‖Πa‖² = 14: y = √(3/14)·Πa.
        let y = riechers_eq5(&ints(&[1, 2, 6]), &Rational::new())
            .unwrap()
            .unwrap();
        assert_eq!(y[2], Surd::sqrt(Rational::from((27, 14))).unwrap());
        assert!(riechers_eq5(&ints(&[4, 4]), &Rational::from(1))
            .unwrap()
            .is_none());
    }

    /// Every fault the theorem must see, with a row and ε that expose it.
    #[test]
    fn faulty_references_are_caught() {
        let x = ints(&[1, 2, 4, 9]);
        let third = Rational::from((1, 3));
        let cases: [(&str, Reference, Vec<Rational>, Rational); 8] = [
            (
                "unbiased variance",
                faults::unbiased_variance,
                x.clone(),
                Rational::new(),
            ),
            (
                "swapped convention",
                faults::swapped_convention,
                x.clone(),
                third.clone(),
            ),
            ("doubled ε", faults::doubled_eps, x.clone(), third.clone()),
            ("no ε", faults::no_eps, x.clone(), third.clone()),
            (
                "flipped sign",
                faults::flipped_sign,
                x.clone(),
                third.clone(),
            ),
            (
                "nudged",
                faults::nudged_last_entry,
                x.clone(),
                Rational::new(),
            ),
            (
                "defined everywhere",
                faults::defined_everywhere,
                ints(&[3, 3]),
                Rational::new(),
            ),
            (
                "centred RMSNorm",
                faults::centred_rms,
                ints(&[3, 3]),
                Rational::new(),
            ),
        ];
        for (name, fault, row, eps) in cases {
            assert!(check_row(fault, &row, &eps).is_err(), "{name} not caught");
        }
        // Each claim on its own.
        assert!(check_unit_sphere(
            faults::unbiased_variance,
            Op::RmsNorm,
            EpsConvention::Outside,
            &x
        )
        .is_err());
        assert!(check_unit_sphere(
            faults::defined_everywhere,
            Op::LayerNorm,
            EpsConvention::Inside,
            &ints(&[2, 2])
        )
        .is_err());
        assert!(check_unit_sphere(
            faults::centred_rms,
            Op::RmsNorm,
            EpsConvention::Inside,
            &ints(&[2, 2])
        )
        .is_err());
        for conv in [EpsConvention::Inside, EpsConvention::Outside] {
            for op in Op::ALL {
                assert!(
                    check_shrink(faults::doubled_eps, op, conv, &x, &third).is_err(),
                    "{op} {conv}"
                );
                assert!(
                    check_shrink(faults::no_eps, op, conv, &x, &third).is_err(),
                    "{op} {conv}"
                );
                assert!(check_shrink(normalize, op, conv, &x, &third).is_ok());
            }
        }
        // ε = 0 on the zero row is undefined; a reference defined there is caught, and so is one
        // undefined where m + ε > 0.
        assert!(check_shrink(
            faults::defined_everywhere,
            Op::RmsNorm,
            EpsConvention::Inside,
            &ints(&[0, 0]),
            &Rational::new()
        )
        .is_err());
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
        assert!(check_shrink(
            never_defined,
            Op::LayerNorm,
            EpsConvention::Inside,
            &x,
            &third
        )
        .is_err());
        assert!(check_shrink(
            never_defined,
            Op::LayerNorm,
            EpsConvention::Inside,
            &ints(&[1, 1]),
            &third
        )
        .is_err());
        assert!(check_shrink(
            never_defined,
            Op::LayerNorm,
            EpsConvention::Inside,
            &ints(&[1, 1]),
            &Rational::new()
        )
        .is_ok());
        assert!(
            check_unit_sphere(never_defined, Op::LayerNorm, EpsConvention::Inside, &x).is_err()
        );
        assert!(check_riechers_eq5(never_defined, &x, &third).is_err());
        assert!(check_riechers_eq5(never_defined, &ints(&[1, 1]), &third).is_err());
        assert!(
            check_riechers_eq5(faults::defined_everywhere, &ints(&[1, 1]), &Rational::new())
                .is_ok()
        );
        assert!(check_riechers_eq5(faults::nudged_last_entry, &ints(&[1, 1]), &third).is_err());
        assert!(check_eq5(faults::variance_unbiased, &x).is_err());
        assert!(check_eq5(faults::variance_sign_slip, &x).is_err());
        check_eq5(variance, &x).unwrap();
        // A shrink law that is right but strict where it must be equal: ε = 0 must give d.
        fn shrinks_always(
            op: Op,
            x: &[Rational],
            eps: &Rational,
            c: EpsConvention,
            g: Option<&[Rational]>,
            b: Option<&[Rational]>,
        ) -> Option<SurdVec> {
            normalize(op, x, &(eps + Rational::from((1, 1000))), c, g, b)
        }
        assert!(check_shrink(
            shrinks_always,
            Op::LayerNorm,
            EpsConvention::Inside,
            &x,
            &Rational::new()
        )
        .is_err());
    }
}
