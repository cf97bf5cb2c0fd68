//! Theorem 3, decompositions: LayerNorm as written in the blog post (h∘g∘f, the ε-outside
//! convention) and in Riechers' eq. 6 (the ε-inside convention) are exact identities against the
//! reference's definition γ⊙(x − μ)/√(σ² + ε) + β (resp. /(σ + ε)); and the two conventions
//! give the same output exactly when ε = 0 or 2σ + ε = 1.

use super::exact_vec::{
    centered, expect_equal, mean, norm2, normalize, variance, Reference, SurdVec,
};
use super::projection::{apply_dense, scaled_projection, DENSE_MAX_D};
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use crate::exact::surd::Surd;
use crate::problem::{EpsConvention, Op};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "decompositions",
    statement: "LayerNorm = h∘g∘f with f(x) = (I − 11ᵀ/n)x, g(x) = √n·x/(‖x‖ + ε√n), h(x) = diag(a)x + b is exactly a⊙(x − μ)/(σ + ε) + b (the ε-outside convention); Riechers' LN(a) = √N·diag(g)·Πa/√(‖Πa‖² + Nε) + b is exactly g⊙(x − μ)/√(σ² + ε) + b (ε inside). The two conventions agree on a row with γ⊙(x − μ) ≠ 0 iff ε = 0 or 2σ + ε = 1.",
    source: "blog 'Visualizing layer normalization' (lnorm = h∘g∘f); Riechers 2024 eq. (6); digest definition",
    check,
};

/// Πx: a dense matrix product where that is affordable, else x − μ1.
fn project(x: &[Rational]) -> Vec<Rational> {
    if x.len() <= DENSE_MAX_D {
        apply_dense(&scaled_projection(x.len()), x)
    } else {
        centered(x)
    }
}

/// The blog's h(g(f(x))). `None` where g divides by zero (f(x) = 0 and ε = 0).
pub fn blog_hgf(
    x: &[Rational],
    eps: &Rational,
    a: &[Rational],
    b: &[Rational],
) -> Result<Option<SurdVec>, String> {
    if x.is_empty() {
        return Ok(None); // d = 0: g's √n/√n is 0/0
    }
    let v = project(x);
    let n = Rational::from(x.len());
    // g(v) = √n·v/(‖v‖ + ε√n) = v/(‖v‖/√n + ε): numerator and denominator divided by √n > 0,
    // which leaves one square root, √(‖v‖²/n), as a product of pure surds.
    let norm_over_root_n = Surd::sqrt(norm2(&v))
        .ok_or("negative ‖v‖²")?
        .mul(&Surd::sqrt(n.recip()).ok_or("negative 1/n")?)?;
    let Some(factor) = norm_over_root_n.add_rational(eps).recip() else {
        return Ok(None);
    };
    let g: Vec<Surd> = v.iter().map(|vi| factor.scale(vi)).collect();
    Ok(Some(
        g.iter()
            .zip(a.iter().zip(b))
            .map(|(gi, (ai, bi))| gi.scale(ai).add_rational(bi))
            .collect(),
    ))
}

/// Riechers eq. 6 as printed. `None` where ‖Πa‖² + Nε = 0.
pub fn riechers_eq6(
    a: &[Rational],
    eps: &Rational,
    g: &[Rational],
    b: &[Rational],
) -> Result<Option<SurdVec>, String> {
    let pia = project(a);
    let n = Rational::from(a.len());
    let radicand = norm2(&pia) + Rational::from(&n * eps);
    if radicand.cmp0() == Ordering::Equal {
        return Ok(None);
    }
    let factor = Surd::sqrt(n)
        .ok_or("negative N")?
        .mul(&Surd::sqrt(radicand.recip()).ok_or("negative radicand")?)?;
    Ok(Some(
        pia.iter()
            .zip(g.iter().zip(b))
            .map(|(p, (gi, bi))| factor.scale(&Rational::from(p * gi)).add_rational(bi))
            .collect(),
    ))
}

fn compare(what: &str, formula: Option<SurdVec>, reference: Option<SurdVec>) -> Result<(), String> {
    match (formula, reference) {
        (Some(f), Some(r)) => expect_equal(what, &f, &r),
        (None, None) => Ok(()),
        (f, r) => Err(format!(
            "{what}: formula defined {}, reference defined {}",
            f.is_some(),
            r.is_some()
        )),
    }
}

/// Whether the ε-inside and ε-outside outputs must coincide: ε = 0, or 2σ + ε = 1 (decided
/// exactly as ε ≤ 1 and 4σ² = (1 − ε)²), or γ⊙(x − μ) = 0 (both outputs are β).
pub fn conventions_agree(x: &[Rational], eps: &Rational, gamma: &[Rational]) -> bool {
    if eps.cmp0() == Ordering::Equal {
        return true;
    }
    let mu = mean(x);
    if x.iter()
        .zip(gamma)
        .all(|(xi, gi)| gi.cmp0() == Ordering::Equal || *xi == mu)
    {
        return true;
    }
    let one_minus_eps = Rational::from(1) - eps;
    one_minus_eps.cmp0() != Ordering::Less
        && variance(x) * 4u32 == Rational::from(one_minus_eps.square_ref())
}

/// Every claim for one row: both decompositions against `reference`, and when the two
/// conventions coincide.
pub fn check_row(
    reference: Reference,
    x: &[Rational],
    eps: &Rational,
    gamma: &[Rational],
    beta: &[Rational],
) -> Result<(), String> {
    if x.is_empty() {
        return Ok(()); // the statements are for d ≥ 1
    }
    let inside = reference(
        Op::LayerNorm,
        x,
        eps,
        EpsConvention::Inside,
        Some(gamma),
        Some(beta),
    );
    let outside = reference(
        Op::LayerNorm,
        x,
        eps,
        EpsConvention::Outside,
        Some(gamma),
        Some(beta),
    );
    compare(
        "blog h∘g∘f vs a⊙(x − μ)/(σ + ε) + b",
        blog_hgf(x, eps, gamma, beta)?,
        outside.clone(),
    )?;
    compare(
        "Riechers eq. 6 vs g⊙(x − μ)/√(σ² + ε) + b",
        riechers_eq6(x, eps, gamma, beta)?,
        inside.clone(),
    )?;
    if let (Some(i), Some(o)) = (inside, outside) {
        let same = expect_equal("", &i, &o).is_ok();
        let predicted = conventions_agree(x, eps, gamma);
        if same != predicted {
            return Err(format!(
                "ε inside and outside agree: {same}, predicted (ε = 0 or 2σ + ε = 1 or γ⊙(x − μ) = 0): {predicted}"
            ));
        }
    }
    Ok(())
}

/// A row with σ = (1 − ε)/2 where both conventions coincide although ε > 0: x = (μ − σ, μ + σ).
pub fn coinciding_row(eps: &Rational, mu: &Rational) -> Option<Vec<Rational>> {
    let sigma = (Rational::from(1) - eps) / 2u32;
    (sigma.cmp0() == Ordering::Greater)
        .then(|| vec![Rational::from(mu - &sigma), Rational::from(mu + &sigma)])
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            let q = |n: i64, d: i64| Rational::from((n, d));
            for eps in [q(0, 1), q(1, 4), q(1, 100000), q(1, 1)] {
                for mu in [q(0, 1), q(-3, 2)] {
                    if let Some(x) = coinciding_row(&eps, &mu) {
                        let ones = vec![q(1, 1); 2];
                        tally.record(
                            || format!("coinciding row ε={eps}"),
                            check_row(normalize, &x, &eps, &ones, &ones),
                        );
                    }
                }
                let x = vec![q(1, 1), q(4, 1), q(4, 1), q(7, 3)];
                let g = vec![q(2, 1), q(0, 1), q(-1, 3), q(5, 1)];
                let b = vec![q(0, 1), q(1, 1), q(-1, 1), q(1, 7)];
                tally.record(
                    || format!("edge ε={eps}"),
                    check_row(normalize, &x, &eps, &g, &b),
                );
                tally.record(
                    || format!("constant row ε={eps}"),
                    check_row(normalize, &vec![q(2, 1); 3], &eps, &g[..3], &b[..3]),
                );
            }
        },
        |inputs| {
            let row = inputs.row();
            let d = row.d();
            let eps = inputs.eps();
            let gamma = inputs.row_of_width(d).values;
            let beta = inputs.row_of_width(d).values;
            check_row(normalize, &row.values, &eps, &gamma, &beta)
                .map_err(|e| format!("{} ε={eps}: {e}", row.describe()))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::surd::rational_sqrt;
    use crate::theorems::exact_vec::ints;
    use crate::theorems::faults;

    #[test]
    fn decompositions_match_on_known_rows() {
        let x = ints(&[1, 5, 2, 8]);
        let g = ints(&[1, 2, 3, 4]);
        let b = ints(&[0, -1, 1, 0]);
        for eps in [Rational::new(), Rational::from((1, 9)), Rational::from(4)] {
            check_row(normalize, &x, &eps, &g, &b).unwrap();
        }
        let ones = ints(&[1, 1]);
        let zeros = ints(&[0, 0]);
        // The blog's g at ε = 0 is √n·v/‖v‖: x = (0, 2): v = (−1, 1), g(v) = (−1, 1); with
        // ε = 1: (−1, 1)/2, then h adds b.
        let y = blog_hgf(&ints(&[0, 2]), &Rational::new(), &ones, &zeros)
            .unwrap()
            .unwrap();
        assert_eq!(y[0].to_rational(), Some(Rational::from(-1)));
        let y = blog_hgf(
            &ints(&[0, 2]),
            &Rational::from(1),
            &ints(&[2, 3]),
            &ints(&[5, 7]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(y[0].to_rational(), Some(Rational::from(4)));
        assert_eq!(y[1].to_rational(), Some(Rational::from((17, 2))));
        // Riechers eq. 6 on x = (0, 2), ε = 1: √2·(−1, 1)/√(2 + 2) = (−1, 1)/√2.
        let y = riechers_eq6(&ints(&[0, 2]), &Rational::from(1), &ones, &zeros)
            .unwrap()
            .unwrap();
        assert_eq!(y[1], Surd::sqrt(Rational::from((1, 2))).unwrap());
        let y = riechers_eq6(
            &ints(&[0, 2]),
            &Rational::from(1),
            &ints(&[2, 3]),
            &ints(&[5, 7]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            y[0],
            Surd::sqrt(Rational::from(2))
                .unwrap()
                .neg()
                .add_rational(&Rational::from(5))
        );
        assert!(blog_hgf(&ints(&[3, 3]), &Rational::new(), &ones, &zeros)
            .unwrap()
            .is_none());
        assert!(
            riechers_eq6(&ints(&[3, 3]), &Rational::new(), &ones, &zeros)
                .unwrap()
                .is_none()
        );
        assert!(
            blog_hgf(&ints(&[3, 3]), &Rational::from(1), &ones, &ints(&[4, 5]))
                .unwrap()
                .unwrap()[1]
                == Surd::rational(Rational::from(5))
        );
        assert!(
            riechers_eq6(&ints(&[3, 3]), &Rational::from(1), &ones, &ints(&[4, 5]))
                .unwrap()
                .unwrap()[0]
                == Surd::rational(Rational::from(4))
        );
        // Beyond the dense width the projection is x − μ1.
        let wide: Vec<Rational> = (0..DENSE_MAX_D as i64 + 2)
            .map(|i| Rational::from(i % 7))
            .collect();
        assert_eq!(project(&wide), centered(&wide));
        let w1 = vec![Rational::from(1); wide.len()];
        check_row(normalize, &wide, &Rational::from((1, 5)), &w1, &w1).unwrap();
    }

    #[test]
    fn conventions_coincide_only_where_predicted() {
        let ones = ints(&[1, 1]);
        let eps = Rational::from((1, 4));
        let x = coinciding_row(&eps, &Rational::from(3)).unwrap();
        assert!(rational_sqrt(&variance(&x)).is_some());
        assert!(conventions_agree(&x, &eps, &ones));
        check_row(normalize, &x, &eps, &ones, &ones).unwrap();
        let x = ints(&[0, 4]);
        assert!(!conventions_agree(&x, &eps, &ones));
        assert!(conventions_agree(&x, &Rational::new(), &ones));
        assert!(conventions_agree(&x, &eps, &ints(&[0, 0])));
        assert!(!conventions_agree(&x, &eps, &ints(&[0, 1])));
        assert!(conventions_agree(&ints(&[2, 2]), &eps, &ones));
        // 4σ² = (1 − ε)² also holds for ε = 3 with σ = 1, but then 2σ + ε = 5.
        assert!(!conventions_agree(
            &ints(&[0, 2]),
            &Rational::from(3),
            &ones
        ));
        assert!(conventions_agree(&ints(&[0, 1]), &Rational::new(), &ones));
        assert!(coinciding_row(&Rational::from(1), &Rational::new()).is_none());
        // The blog's decomposition is not the ε-inside reference when ε > 0.
        let blog = blog_hgf(&x, &eps, &ones, &ints(&[0, 0])).unwrap();
        let inside = normalize(Op::LayerNorm, &x, &eps, EpsConvention::Inside, None, None);
        assert!(compare("mixed conventions", blog, inside).is_err());
        assert!(compare("undefined vs defined", None, Some(vec![])).is_err());
        assert!(compare("both undefined", None, None).is_ok());
    }

    #[test]
    fn faulty_references_are_caught() {
        let x = ints(&[1, 5, 2, 8]);
        let g = ints(&[1, 2, 3, 4]);
        let b = ints(&[0, -1, 1, 0]);
        let eps = Rational::from((1, 9));
        for (name, fault) in faults::ALL {
            if name == "centred RMSNorm" {
                continue; // RMSNorm is not part of this theorem
            }
            let caught = [eps.clone(), Rational::new()].iter().any(|e| {
                [&x[..], &ints(&[3, 3, 3, 3])]
                    .iter()
                    .any(|row| check_row(fault, row, e, &g, &b).is_err())
            });
            assert!(caught, "{name} not caught");
        }
    }
}
