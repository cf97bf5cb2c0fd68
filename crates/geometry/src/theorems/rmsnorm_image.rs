//! RMSNorm's image: RMS(x) = γ⊙x/√(mean(x²) + ε) + β lies on the axis-aligned ellipsoid
//! Σ (yᵢ − βᵢ)²/γᵢ² = d·m/(m + ε) (m = mean(x²), ε inside; d·m/(√m + ε)² outside), whose
//! semi-axes at ε = 0 are √d·|γᵢ| along the coordinate axes, each reached (by x = ±eᵢ). No
//! projection: the image is full-dimensional (the surface of a d-ellipsoid, not the
//! (d−1)-dimensional one of LayerNorm, Riechers 2024). Its fibres at ε = 0 are the open rays
//! {λx : λ > 0}; with ε > 0 the scale λ moves the output along the ray, so no two points of a ray
//! share an output. The ε law: r² = m/(m + ε), so for x ~ N(0, I), d·m ~ χ²_d and
//! P(r ≤ ρ) = F_{χ²_d}(d·ε·ρ²/(1 − ρ²)) (LayerNorm's has χ²_{d−1}).

use super::exact_vec::{expect_equal, mean_square, normalize, Reference, SurdVec};
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use crate::exact::surd::Surd;
use crate::problem::{EpsConvention, Op};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "rmsnorm-image",
    statement: "RMS(x) = γ⊙x·s + β with s = 1/√(m + ε) (ε inside) or 1/(√m + ε) (outside), m = mean(x²), every γ_i ≠ 0: Σ_i (y_i − β_i)²/γ_i² = d·m·s², i.e. d·m/(m + ε) inside, ≤ d with equality iff ε = 0. So the image lies on the axis-aligned ellipsoid with semi-axes √d·|γ_i| (ε = 0; inside it for ε > 0, at squared radius r² = m/(m + ε)), and the semi-axis endpoints β ± √d·γ_i·e_i are the outputs of ±e_i: no projection, the image spans all d dimensions. Fibres at ε = 0: RMS(λx) = RMS(x) for every λ > 0, and RMS(x') ≠ RMS(x) when x' is not a positive multiple of x; with ε > 0, RMS(λx) ≠ RMS(x) for λ ≠ 1. ε law: for x ~ N(0, I_d), P(r ≤ ρ) = F_{χ²_d}(dερ²/(1 − ρ²)).",
    source: "Zhang & Sennrich 2019 (RMSNorm); digest: RMSNorm; the ellipsoid form of Riechers 2024 §2 without the projection",
    check,
};

/// Σ((yᵢ − βᵢ)/γᵢ)², exactly.
pub fn gain_form(y: &[Surd], gamma: &[Rational], beta: &[Rational]) -> Result<Surd, String> {
    y.iter()
        .zip(gamma)
        .zip(beta)
        .try_fold(Surd::zero(), |acc, ((yi, g), b)| {
            let z = yi
                .add_rational(&Rational::from(-b))
                .scale(&Rational::from(g.recip_ref()));
            acc.add(&z.square()).map_err(|e| e.to_string())
        })
}

/// d·m·s² for the convention, exactly (the squared radius times d).
pub fn predicted_form(x: &[Rational], eps: &Rational, convention: EpsConvention) -> Option<Surd> {
    let m = mean_square(x);
    let d = Rational::from(x.len());
    let s2 = match convention {
        EpsConvention::Inside => {
            let q = Rational::from(&m + eps);
            if q.cmp0() == Ordering::Equal {
                return None;
            }
            Surd::rational(q.recip())
        }
        EpsConvention::Outside => Surd::sqrt(m.clone())?.add_rational(eps).square().recip()?,
    };
    Some(s2.scale(&(d * m)))
}

/// The ellipsoid claim for one input: the gain form equals d·m·s², is ≤ d, and equals d iff
/// ε = 0.
pub fn check_ellipsoid(
    reference: Reference,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: &[Rational],
    beta: &[Rational],
) -> Result<(), String> {
    let Some(y) = reference(Op::RmsNorm, x, eps, convention, Some(gamma), Some(beta)) else {
        return match predicted_form(x, eps, convention) {
            None => Ok(()), // the zero row at ε = 0: undefined on both sides
            Some(_) => Err("RMS undefined where the definition is defined".into()),
        };
    };
    let form = gain_form(&y, gamma, beta)?;
    let want = predicted_form(x, eps, convention).ok_or("RMS defined at the zero row, ε = 0")?;
    if form != want {
        return Err(format!("Σ((y−β)/γ)² = {form}, want d·m·s² = {want}"));
    }
    let d = Surd::rational(Rational::from(x.len()));
    let on_surface = form.cmp_value(&d);
    let want_surface = if eps.cmp0() == Ordering::Equal {
        Ordering::Equal
    } else {
        Ordering::Less
    };
    if on_surface != want_surface {
        return Err(format!(
            "Σ((y−β)/γ)² = {form} vs d = {d}: want {want_surface:?}"
        ));
    }
    Ok(())
}

/// The semi-axis endpoints at ε = 0: RMS(±eᵢ) = β ± √d·γᵢ·eᵢ.
pub fn check_axis_endpoints(
    reference: Reference,
    gamma: &[Rational],
    beta: &[Rational],
) -> Result<(), String> {
    let d = gamma.len();
    let root_d = Surd::sqrt(Rational::from(d)).ok_or("d = 0")?;
    for i in 0..d {
        for sign in [1i64, -1] {
            let mut x = vec![Rational::new(); d];
            x[i] = Rational::from(sign);
            let y = reference(
                Op::RmsNorm,
                &x,
                &Rational::new(),
                EpsConvention::Inside,
                Some(gamma),
                Some(beta),
            )
            .ok_or("RMS(±e_i) undefined")?;
            let want: SurdVec = (0..d)
                .map(|j| {
                    let axis = if j == i {
                        root_d.scale(&Rational::from(&gamma[j] * sign))
                    } else {
                        Surd::zero()
                    };
                    axis.add_rational(&beta[j])
                })
                .collect();
            expect_equal(&format!("RMS({sign}·e_{i})"), &y, &want)?;
        }
    }
    Ok(())
}

/// The fibres: with ε = 0, RMS(λx) = RMS(x) for λ > 0 and RMS(x') ≠ RMS(x) for `other` not a
/// positive multiple of x; with ε > 0, RMS(λx) ≠ RMS(x) for λ ≠ 1.
pub fn check_fibres(
    reference: Reference,
    x: &[Rational],
    lambda: &Rational,
    other: &[Rational],
    eps: &Rational,
    gamma: &[Rational],
) -> Result<(), String> {
    if x.iter().all(|v| v.cmp0() == Ordering::Equal) || lambda.cmp0() != Ordering::Greater {
        return Ok(());
    }
    let run = |row: &[Rational], e: &Rational| {
        reference(
            Op::RmsNorm,
            row,
            e,
            EpsConvention::Inside,
            Some(gamma),
            None,
        )
    };
    let scaled: Vec<Rational> = x.iter().map(|v| Rational::from(v * lambda)).collect();
    let zero = Rational::new();
    let y = run(x, &zero).ok_or("RMS(x) undefined")?;
    let y_scaled = run(&scaled, &zero).ok_or("RMS(λx) undefined")?;
    expect_equal(&format!("ε = 0: RMS({lambda}·x) vs RMS(x)"), &y_scaled, &y)?;
    if !positive_multiple(other, x) {
        if let Some(y_other) = run(other, &zero) {
            if expect_equal("", &y_other, &y).is_ok() {
                return Err("ε = 0: RMS(x') = RMS(x) with x' not a positive multiple of x".into());
            }
        }
    }
    if eps.cmp0() == Ordering::Greater && *lambda != 1 {
        let (a, b) = (run(x, eps), run(&scaled, eps));
        if let (Some(a), Some(b)) = (a, b) {
            if expect_equal("", &a, &b).is_ok() {
                return Err(format!("ε = {eps}: RMS({lambda}·x) = RMS(x)"));
            }
        }
    }
    Ok(())
}

/// Whether a = λ·b for some λ > 0 (b ≠ 0).
fn positive_multiple(a: &[Rational], b: &[Rational]) -> bool {
    let Some(k) = b.iter().position(|v| v.cmp0() != Ordering::Equal) else {
        return false;
    };
    let lambda = Rational::from(&a[k] / &b[k]);
    lambda.cmp0() == Ordering::Greater
        && a.iter()
            .zip(b)
            .all(|(u, v)| *u == Rational::from(v * &lambda))
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            let q = |n: i64| Rational::from(n);
            let gamma = [q(2), Rational::from((-1, 3)), q(5)];
            let beta = [q(1), q(0), q(-2)];
            tally.record(
                || "axis endpoints, γ = (2, −1/3, 5)".into(),
                check_axis_endpoints(normalize, &gamma, &beta),
            );
            for eps in [q(0), Rational::from((1, 4))] {
                for conv in [EpsConvention::Inside, EpsConvention::Outside] {
                    for x in [[q(1), q(2), q(3)], [q(0), q(0), q(0)], [q(3), q(0), q(-4)]] {
                        tally.record(
                            || format!("edge x = {x:?}, ε = {eps}, {conv}"),
                            check_ellipsoid(normalize, &x, &eps, conv, &gamma, &beta),
                        );
                    }
                }
            }
            tally.record(
                || "edge fibres".into(),
                check_fibres(
                    normalize,
                    &[q(1), q(-2), q(2)],
                    &q(3),
                    &[q(-1), q(2), q(-2)],
                    &Rational::from((1, 100)),
                    &gamma,
                ),
            );
        },
        |inputs| {
            let d = inputs.width();
            let x = inputs.row_of_width(d).values;
            let gamma: Vec<Rational> = (0..d).map(|_| inputs.nonzero_rational()).collect();
            let beta = inputs.row_of_width(d).values;
            let eps = inputs.eps();
            let convention = if inputs.below(2) == 0 {
                EpsConvention::Inside
            } else {
                EpsConvention::Outside
            };
            let lambda = inputs.nonzero_rational().abs();
            let other = inputs.row_of_width(d).values;
            let name = |e: String| format!("width {d}: {e}");
            check_ellipsoid(normalize, &x, &eps, convention, &gamma, &beta).map_err(name)?;
            if d <= 8 {
                check_axis_endpoints(normalize, &gamma, &beta).map_err(name)?;
            }
            check_fibres(normalize, &x, &lambda, &other, &eps, &gamma).map_err(name)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theorems::exact_vec::ints;
    use crate::theorems::faults;

    #[test]
    fn the_image_is_the_axis_aligned_ellipsoid() {
        let gamma = ints(&[2, -1, 4]);
        let beta = ints(&[1, 0, 3]);
        // x = (1, 2, 2): m = 3, ε = 1: form = 3·3/4 = 9/4.
        let x = ints(&[1, 2, 2]);
        let y = normalize(
            Op::RmsNorm,
            &x,
            &Rational::from(1),
            EpsConvention::Inside,
            Some(&gamma),
            Some(&beta),
        )
        .unwrap();
        assert_eq!(
            gain_form(&y, &gamma, &beta).unwrap(),
            Surd::rational(Rational::from((9, 4)))
        );
        for eps in [Rational::new(), Rational::from(1)] {
            for conv in [EpsConvention::Inside, EpsConvention::Outside] {
                check_ellipsoid(normalize, &x, &eps, conv, &gamma, &beta).unwrap();
            }
        }
        check_ellipsoid(
            normalize,
            &ints(&[0, 0, 0]),
            &Rational::new(),
            EpsConvention::Inside,
            &gamma,
            &beta,
        )
        .unwrap();
        check_axis_endpoints(normalize, &gamma, &beta).unwrap();
        check_fibres(
            normalize,
            &x,
            &Rational::from((5, 2)),
            &ints(&[2, 4, 5]),
            &Rational::from((1, 9)),
            &gamma,
        )
        .unwrap();
        assert!(positive_multiple(&ints(&[2, 4, 4]), &x));
        assert!(!positive_multiple(&ints(&[-1, -2, -2]), &x));
        assert!(!positive_multiple(&x, &ints(&[0, 0, 0])));
    }

    #[test]
    fn faulty_references_are_caught() {
        let gamma = ints(&[2, -1, 4]);
        let beta = ints(&[1, 0, 3]);
        let x = ints(&[1, 2, 7]);
        let eps = Rational::from((1, 10));
        for (name, fault) in [
            ("centred RMSNorm", faults::centred_rms as Reference),
            ("unbiased", faults::unbiased_variance),
            ("dropped γ", faults::dropped_gamma),
            ("dropped β", faults::dropped_beta),
            ("doubled ε", faults::doubled_eps),
            ("swapped convention", faults::swapped_convention),
            ("nudged", faults::nudged_last_entry),
        ] {
            let caught = check_ellipsoid(fault, &x, &eps, EpsConvention::Inside, &gamma, &beta);
            assert!(caught.is_err(), "{name}");
        }
        // ε ignored: the output lands on the surface although ε > 0.
        assert!(check_ellipsoid(
            faults::no_eps,
            &x,
            &eps,
            EpsConvention::Inside,
            &gamma,
            &beta
        )
        .is_err());
        // Defined at the zero row: caught by the ε = 0 case.
        assert!(check_ellipsoid(
            faults::defined_everywhere,
            &ints(&[0, 0, 0]),
            &Rational::new(),
            EpsConvention::Inside,
            &gamma,
            &beta
        )
        .is_err());
        assert!(check_axis_endpoints(faults::dropped_gamma, &gamma, &beta).is_err());
        assert!(check_axis_endpoints(faults::centred_rms, &gamma, &beta).is_err());
        // A scale-dependent reference (ε ignored is scale-free, doubled-ε is not at ε = 0):
        // the fibre claim with ε > 0 fails for a reference that ignores ε.
        assert!(check_fibres(
            faults::no_eps,
            &x,
            &Rational::from(3),
            &ints(&[2, 4, 5]),
            &eps,
            &gamma
        )
        .is_err());
        // A reference that ignores the sign of the input merges x and −x.
        fn by_abs(
            op: Op,
            x: &[Rational],
            e: &Rational,
            c: EpsConvention,
            g: Option<&[Rational]>,
            b: Option<&[Rational]>,
        ) -> Option<SurdVec> {
            let a: Vec<Rational> = x.iter().map(|v| v.clone().abs()).collect();
            normalize(op, &a, e, c, g, b)
        }
        assert!(check_fibres(
            by_abs,
            &x,
            &Rational::from(3),
            &ints(&[-1, -2, -7]),
            &Rational::new(),
            &gamma
        )
        .is_err());
    }
}
