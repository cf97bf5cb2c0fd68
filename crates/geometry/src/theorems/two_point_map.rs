//! Theorem 4, the two-point map of the ones-plane (Brody et al. App. B) and its converse, the
//! metamorphic relation LN(x) = LN(x′) iff x′ = λx + c1 with λ > 0; and the exact law that
//! replaces scale invariance when ε > 0.

use super::exact_vec::{
    affine, centered, expect_equal, is_constant, layer_norm, len_q, norm2, normalize, Reference,
    SurdVec,
};
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use crate::exact::surd::Surd;
use crate::problem::{EpsConvention, Op};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "two-point-map",
    statement: "For v ⟂ 1, v ≠ 0, every x = αv + β1 maps to sign(α)·√d·v/‖v‖ (ε = 0): the plane span(v, 1) goes to exactly two points; LN is undefined at α = 0, and with ε > 0 the line α = 0 maps to 0 (then + b) and x to sign(α)·√d·v/√(‖v‖² + dε/α²). Conversely, for non-constant x and ε = 0, LN(x′) = LN(x) iff x′ = λx + c1 with λ > 0. With ε > 0 scale invariance fails by an exact law: LN_ε(λx + c1) = sign(λ)·LN_{ε/λ²}(x) (ε inside) and sign(λ)·LN_{ε/|λ|}(x) (ε outside), equal to LN_ε(x) for λ > 0 iff ε = 0 or λ = 1.",
    source: "Brody et al. 2023 App. B eqs. (9)-(15) and footnote 4; converse and ε-law: this project",
    check,
};

/// Where App. B says αv + β1 goes (v ⟂ 1, v ≠ 0), ε inside: sign(α)·√d·v/√(‖v‖² + dε/α²) for
/// α ≠ 0; 0 for α = 0 and ε > 0; undefined (`None`) for α = 0 and ε = 0.
pub fn two_point_image(v: &[Rational], alpha: &Rational, eps: &Rational) -> Option<SurdVec> {
    let d = len_q(v);
    if alpha.cmp0() == Ordering::Equal {
        return (eps.cmp0() == Ordering::Greater).then(|| vec![Surd::zero(); v.len()]);
    }
    let shrunk = norm2(v) + Rational::from(&d * eps) / Rational::from(alpha.square_ref());
    if shrunk.cmp0() != Ordering::Greater {
        return None; // v = 0 and ε = 0: outside the statement
    }
    let root = Surd::sqrt(d / shrunk)?;
    let signed = if alpha.cmp0() == Ordering::Less {
        root.neg()
    } else {
        root
    };
    Some(v.iter().map(|vi| signed.scale(vi)).collect())
}

/// The plane claims for one v (made ⟂ 1 by centring), α, β, ε and bias b. Vacuous when the
/// centred v is 0 (d = 1 or a constant source row).
pub fn check_plane(
    reference: Reference,
    v_source: &[Rational],
    alpha: &Rational,
    beta: &Rational,
    eps: &Rational,
    bias: &[Rational],
) -> Result<(), String> {
    let v = centered(v_source);
    if v.iter().all(|vi| vi.cmp0() == Ordering::Equal) {
        return Ok(());
    }
    let x = affine(&v, alpha, beta);
    let got = reference(
        Op::LayerNorm,
        &x,
        eps,
        EpsConvention::Inside,
        None,
        Some(bias),
    );
    let want = two_point_image(&v, alpha, eps).map(|y| {
        y.iter()
            .zip(bias)
            .map(|(yi, bi)| yi.add_rational(bi))
            .collect::<Vec<_>>()
    });
    match (got, want) {
        (Some(g), Some(w)) => expect_equal(
            &format!("LN(αv + β1) + b, α={alpha} β={beta} ε={eps}"),
            &g,
            &w,
        ),
        (None, None) => Ok(()),
        (g, w) => Err(format!(
            "α={alpha} ε={eps}: LN defined {}, App. B image defined {}",
            g.is_some(),
            w.is_some()
        )),
    }
}

/// Whether x′ = λx + c1 for some λ > 0 and c (x not constant): P x′ = λ·P x, λ read off a
/// nonzero entry of P x and confirmed on all.
pub fn on_positive_ray(x: &[Rational], x2: &[Rational]) -> bool {
    let (px, px2) = (centered(x), centered(x2));
    let Some(i) = px.iter().position(|v| v.cmp0() != Ordering::Equal) else {
        return false;
    };
    let lambda = Rational::from(&px2[i] / &px[i]);
    lambda.cmp0() == Ordering::Greater
        && px
            .iter()
            .zip(&px2)
            .all(|(a, b)| Rational::from(a * &lambda) == *b)
}

/// The converse (ε = 0, x not constant): LN(x′) = LN(x) iff x′ is on x's positive ray modulo 1.
pub fn check_converse(reference: Reference, x: &[Rational], x2: &[Rational]) -> Result<(), String> {
    if is_constant(x) || x.len() != x2.len() {
        return Ok(()); // outside the statement
    }
    let zero = Rational::new();
    let equal = match (
        layer_norm(reference, x, &zero),
        layer_norm(reference, x2, &zero),
    ) {
        (Some(a), Some(b)) => expect_equal("", &a, &b).is_ok(),
        _ => false,
    };
    let ray = on_positive_ray(x, x2);
    if equal != ray {
        return Err(format!(
            "LN(x′) = LN(x): {equal}, x′ = λx + c1 with λ > 0: {ray}"
        ));
    }
    Ok(())
}

/// The ε that makes LN_ε(λx + c1) = sign(λ)·LN_ε′(x): ε/λ² inside, ε/|λ| outside; `None` for
/// λ = 0.
pub fn rescaled_eps(
    eps: &Rational,
    lambda: &Rational,
    convention: EpsConvention,
) -> Option<Rational> {
    if lambda.cmp0() == Ordering::Equal {
        return None;
    }
    Some(match convention {
        EpsConvention::Inside => eps / Rational::from(lambda.square_ref()),
        EpsConvention::Outside => eps / Rational::from(lambda.abs_ref()),
    })
}

/// The exact ε-law for λ ≠ 0 and any c, and the iff for scale invariance (λ > 0, x not
/// constant): LN_ε(λx + c1) = LN_ε(x) iff ε = 0 or λ = 1.
pub fn check_scale_law(
    reference: Reference,
    x: &[Rational],
    lambda: &Rational,
    c: &Rational,
    eps: &Rational,
    convention: EpsConvention,
) -> Result<(), String> {
    let Some(eps_law) = rescaled_eps(eps, lambda, convention) else {
        return Ok(()); // λ = 0: outside the statement
    };
    let what = format!("{convention} λ={lambda} c={c} ε={eps}");
    let moved = reference(
        Op::LayerNorm,
        &affine(x, lambda, c),
        eps,
        convention,
        None,
        None,
    );
    let law = reference(Op::LayerNorm, x, &eps_law, convention, None, None).map(|y| {
        if lambda.cmp0() == Ordering::Less {
            y.iter().map(Surd::neg).collect()
        } else {
            y
        }
    });
    match (&moved, &law) {
        (Some(m), Some(l)) => {
            expect_equal(&format!("{what}: LN_ε(λx + c1) vs sign(λ)·LN_ε′(x)"), m, l)?
        }
        (None, None) => {}
        _ => return Err(format!("{what}: one side of the ε-law is undefined")),
    }
    if lambda.cmp0() == Ordering::Greater && !is_constant(x) {
        let plain = reference(Op::LayerNorm, x, eps, convention, None, None);
        let invariant = match (moved, plain) {
            (Some(m), Some(p)) => expect_equal("", &m, &p).is_ok(),
            _ => false,
        };
        let predicted = eps.cmp0() == Ordering::Equal || *lambda == 1;
        if invariant != predicted {
            return Err(format!(
                "{what}: scale invariant {invariant}, predicted (ε = 0 or λ = 1) {predicted}"
            ));
        }
    }
    Ok(())
}

/// An x′ for the converse: on the positive ray, on the negative ray, a perturbed ray point, an
/// unrelated row, or a constant row, chosen by `kind` (mod 5).
pub fn converse_partner(
    x: &[Rational],
    kind: u64,
    lambda: &Rational,
    c: &Rational,
    other: &[Rational],
) -> Vec<Rational> {
    let pos = lambda.clone().abs();
    match kind % 5 {
        0 => affine(x, &pos, c),
        1 => affine(x, &Rational::from(-&pos), c),
        2 => {
            let mut y = affine(x, &pos, c);
            let k = (kind / 5) as usize % y.len().max(1);
            if let Some(yk) = y.get_mut(k) {
                *yk += Rational::from((1, 1u64 << 40));
            }
            y
        }
        3 => other.to_vec(),
        _ => vec![c.clone(); x.len()],
    }
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            let q = |n: i64, d: i64| Rational::from((n, d));
            let v = vec![q(1, 1), q(-2, 1), q(0, 1), q(5, 1)];
            let b = vec![q(0, 1), q(1, 2), q(-1, 1), q(3, 1)];
            for alpha in [q(0, 1), q(3, 1), q(-1, 7)] {
                for eps in [q(0, 1), q(1, 100000)] {
                    tally.record(
                        || format!("edge α={alpha} ε={eps}"),
                        check_plane(normalize, &v, &alpha, &q(-9, 2), &eps, &b),
                    );
                }
            }
            for kind in 0..5 {
                let other = vec![q(2, 1), q(0, 1), q(1, 1), q(1, 1)];
                let x2 = converse_partner(&v, kind, &q(2, 3), &q(1, 1), &other);
                tally.record(
                    || format!("edge converse kind {kind}"),
                    check_converse(normalize, &v, &x2),
                );
            }
            for lambda in [q(1, 1), q(2, 1), q(-1, 1), q(-1, 3)] {
                for conv in [EpsConvention::Inside, EpsConvention::Outside] {
                    tally.record(
                        || "edge ε-law".into(),
                        check_scale_law(normalize, &v, &lambda, &q(5, 1), &q(1, 10), conv),
                    );
                }
            }
        },
        |inputs| {
            let row = inputs.row();
            let d = row.d();
            let alpha = if inputs.below(4) == 0 {
                Rational::new()
            } else {
                inputs.nonzero_rational()
            };
            let (beta, eps) = (inputs.rational(), inputs.eps());
            let bias = inputs.row_of_width(d).values;
            let name = |e: String| format!("{}: {e}", row.describe());
            check_plane(normalize, &row.values, &alpha, &beta, &eps, &bias).map_err(name)?;
            let kind = inputs.word();
            let lambda = inputs.nonzero_rational();
            let c = inputs.rational();
            let other = inputs.row_of_width(d).values;
            let x2 = converse_partner(&row.values, kind, &lambda, &c, &other);
            check_converse(normalize, &row.values, &x2)
                .map_err(|e| name(format!("partner kind {}: {e}", kind % 5)))?;
            let lambda = if inputs.below(8) == 0 {
                Rational::from(1)
            } else {
                lambda
            };
            let convention = if inputs.below(2) == 0 {
                EpsConvention::Inside
            } else {
                EpsConvention::Outside
            };
            check_scale_law(normalize, &row.values, &lambda, &c, &eps, convention).map_err(name)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theorems::exact_vec::ints;
    use crate::theorems::faults;

    #[test]
    fn the_plane_maps_to_two_points() {
        // v = (−1, 1): αv + β1 ↦ sign(α)·(−1, 1) for ε = 0.
        let v = ints(&[-1, 1]);
        let y = two_point_image(&v, &Rational::from(-5), &Rational::new()).unwrap();
        assert_eq!(y[0].to_rational(), Some(Rational::from(1)));
        assert_eq!(y[1].to_rational(), Some(Rational::from(-1)));
        let y = two_point_image(&v, &Rational::from(5), &Rational::new()).unwrap();
        assert_eq!(y[1].to_rational(), Some(Rational::from(1)));
        // ε = 1, α = 2: √2·v/√(2 + 2/4) = v·√(4/5).
        let y = two_point_image(&v, &Rational::from(2), &Rational::from(1)).unwrap();
        assert_eq!(y[1], Surd::sqrt(Rational::from((4, 5))).unwrap());
        assert!(two_point_image(&v, &Rational::new(), &Rational::new()).is_none());
        assert!(two_point_image(&v, &Rational::new(), &Rational::from(1))
            .unwrap()
            .iter()
            .all(Surd::is_zero));
        let zeros = ints(&[0, 0]);
        for alpha in [-3, 0, 2] {
            for eps in [Rational::new(), Rational::from((1, 3))] {
                check_plane(
                    normalize,
                    &v,
                    &Rational::from(alpha),
                    &Rational::from(7),
                    &eps,
                    &zeros,
                )
                .unwrap();
                check_plane(
                    normalize,
                    &ints(&[1, 4, 0]),
                    &Rational::from(alpha),
                    &Rational::from(7),
                    &eps,
                    &ints(&[1, 2, 3]),
                )
                .unwrap();
            }
        }
        check_plane(
            normalize,
            &ints(&[4, 4]),
            &Rational::from(1),
            &Rational::new(),
            &Rational::new(),
            &zeros,
        )
        .unwrap();
    }

    #[test]
    fn converse_separates_rays() {
        let x = ints(&[1, 2, 4]);
        assert!(on_positive_ray(&x, &ints(&[3, 5, 9])));
        assert!(!on_positive_ray(&x, &ints(&[-1, -3, -7])));
        assert!(!on_positive_ray(&x, &ints(&[3, 5, 10])));
        assert!(!on_positive_ray(&x, &ints(&[3, 3, 3])));
        assert!(!on_positive_ray(&ints(&[2, 2]), &ints(&[2, 2])));
        assert!(on_positive_ray(&ints(&[2, 2, 3]), &ints(&[0, 0, 5])));
        for kind in 0..10 {
            let x2 = converse_partner(
                &x,
                kind,
                &Rational::from(-2),
                &Rational::from(1),
                &ints(&[0, 0, 1]),
            );
            check_converse(normalize, &x, &x2).unwrap();
            assert_eq!(on_positive_ray(&x, &x2), kind % 5 == 0, "kind {kind}");
        }
        assert_eq!(
            converse_partner(&x, 0, &Rational::from(-2), &Rational::from(1), &[]),
            ints(&[3, 5, 9])
        );
        assert_eq!(
            converse_partner(&x, 1, &Rational::from(2), &Rational::from(1), &[]),
            ints(&[-1, -3, -7])
        );
        assert_eq!(
            converse_partner(&x, 4, &Rational::from(2), &Rational::from(1), &[]),
            ints(&[1, 1, 1])
        );
        let nudged = converse_partner(&x, 2 + 5, &Rational::from(1), &Rational::new(), &[]);
        assert_eq!(
            nudged[1],
            Rational::from(2) + Rational::from((1, 1u64 << 40))
        );
        assert_eq!(
            (nudged[0].clone(), nudged[2].clone()),
            (Rational::from(1), Rational::from(4))
        );
        check_converse(normalize, &ints(&[1, 1]), &ints(&[0, 1])).unwrap();
        // Rows of different widths are outside the statement.
        check_converse(normalize, &ints(&[1, 2, 3]), &ints(&[2, 4])).unwrap();
        assert_eq!(
            converse_partner(
                &x,
                3,
                &Rational::from(2),
                &Rational::from(1),
                &ints(&[7, 8, 9])
            ),
            ints(&[7, 8, 9])
        );
    }

    #[test]
    fn eps_breaks_scale_invariance_by_the_exact_law() {
        let x = ints(&[1, 2, 4]);
        let eps = Rational::from((1, 100));
        for conv in [EpsConvention::Inside, EpsConvention::Outside] {
            for lambda in [1, 2, -1, -3] {
                check_scale_law(
                    normalize,
                    &x,
                    &Rational::from(lambda),
                    &Rational::from(3),
                    &eps,
                    conv,
                )
                .unwrap();
                check_scale_law(
                    normalize,
                    &x,
                    &Rational::from(lambda),
                    &Rational::from(3),
                    &Rational::new(),
                    conv,
                )
                .unwrap();
            }
        }
        check_scale_law(
            normalize,
            &ints(&[2, 2]),
            &Rational::from(3),
            &Rational::new(),
            &Rational::new(),
            EpsConvention::Inside,
        )
        .unwrap();
        // The law's ε′ differs between conventions; using the wrong one is caught.
        let lambda = Rational::from(2);
        let moved = normalize(
            Op::LayerNorm,
            &affine(&x, &lambda, &Rational::new()),
            &eps,
            EpsConvention::Outside,
            None,
            None,
        )
        .unwrap();
        let wrong = normalize(
            Op::LayerNorm,
            &x,
            &rescaled_eps(&eps, &lambda, EpsConvention::Inside).unwrap(),
            EpsConvention::Outside,
            None,
            None,
        )
        .unwrap();
        assert!(expect_equal("wrong ε′", &moved, &wrong).is_err());
        assert_eq!(
            rescaled_eps(&eps, &Rational::from(-2), EpsConvention::Outside),
            Some(Rational::from((1, 200)))
        );
        assert_eq!(
            rescaled_eps(&eps, &Rational::from(-2), EpsConvention::Inside),
            Some(Rational::from((1, 400)))
        );
    }

    #[test]
    fn faulty_references_are_caught() {
        // Centred, every entry of x is nonzero (mean 5/4), so the plane check is not vacuous.
        let x = ints(&[1, 2, 4, -2]);
        let b = ints(&[1, 0, 2, 0]);
        let third = Rational::from((1, 3));
        let zero = Rational::new();
        let plane = |f: Reference, alpha: i64, eps: &Rational| {
            check_plane(f, &x, &Rational::from(alpha), &Rational::from(5), eps, &b)
        };
        for (name, f) in [
            ("unbiased", faults::unbiased_variance as Reference),
            ("flipped", faults::flipped_sign),
            ("nudged", faults::nudged_last_entry),
            ("dropped β", faults::dropped_beta),
            ("no centring", faults::no_centering),
            ("doubled ε", faults::doubled_eps),
            ("swapped", faults::swapped_convention),
        ] {
            assert!(plane(f, 2, &third).is_err(), "{name}");
        }
        assert!(plane(faults::defined_everywhere, 0, &zero).is_err());
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
        assert!(plane(never_defined, 2, &zero).is_err());
        assert!(plane(normalize, 0, &zero).is_ok());
        // The converse sees a reference that is not shift-invariant or not scale-invariant.
        let shifted = affine(&x, &Rational::from(1), &Rational::from(7));
        assert!(check_converse(faults::no_centering, &x, &shifted).is_err());
        let scaled = affine(&x, &Rational::from(3), &Rational::new());
        assert!(check_converse(faults::doubled_eps, &x, &scaled).is_ok()); // ε = 0 in the converse
        assert!(check_converse(faults::nudged_last_entry, &x, &x).is_ok());
        assert!(check_converse(
            faults::flipped_sign,
            &x,
            &affine(&x, &Rational::from(-1), &zero)
        )
        .is_ok());
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
        assert!(check_converse(
            sign_by_first,
            &x,
            &affine(&x, &Rational::from(1), &Rational::from(-9))
        )
        .is_err());
        assert!(check_converse(never_defined, &x, &x).is_err());
        // The ε-law sees a reference with the wrong ε handling (a consistently doubled ε is a
        // valid LayerNorm with another ε, so only the plane check above catches it).
        for (name, f) in [
            ("no ε", faults::no_eps as Reference),
            ("swapped", faults::swapped_convention),
            ("no centring", faults::no_centering),
        ] {
            let caught = [EpsConvention::Inside, EpsConvention::Outside]
                .iter()
                .any(|&c| {
                    check_scale_law(f, &x, &Rational::from(3), &Rational::from(2), &third, c)
                        .is_err()
                });
            assert!(caught, "{name}");
        }
        assert!(check_scale_law(
            faults::flipped_sign,
            &x,
            &Rational::from(-3),
            &zero,
            &third,
            EpsConvention::Inside
        )
        .is_ok());
        assert!(check_scale_law(
            sign_by_first,
            &x,
            &Rational::from(-3),
            &zero,
            &third,
            EpsConvention::Inside
        )
        .is_err());
        // Undefined on both sides of the law, but then not scale invariant where it must be.
        assert!(check_scale_law(
            never_defined,
            &x,
            &Rational::from(2),
            &zero,
            &zero,
            EpsConvention::Inside
        )
        .is_err());
        fn defined_on_scaled(
            op: Op,
            x: &[Rational],
            e: &Rational,
            c: EpsConvention,
            g: Option<&[Rational]>,
            b: Option<&[Rational]>,
        ) -> Option<SurdVec> {
            if x[0] == 1 {
                None
            } else {
                normalize(op, x, e, c, g, b)
            }
        }
        assert!(check_scale_law(
            defined_on_scaled,
            &x,
            &Rational::from(2),
            &zero,
            &third,
            EpsConvention::Inside
        )
        .is_err());
        assert!(
            check_scale_law(normalize, &x, &zero, &zero, &third, EpsConvention::Inside).is_ok()
        );
    }
}
