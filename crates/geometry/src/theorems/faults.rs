//! Deliberately wrong references: classic normalisation bugs, each with the signature of the
//! exact definition it imitates. They show that every theorem's check fails when the definition
//! it is checked against is wrong, so no check is vacuous. Never used by the catalogue.

use super::exact_vec::{
    assemble, centered, inverse_scale, len_q, mean_square, norm2, normalize, variance, Reference,
    SurdVec,
};
use crate::exact::surd::Surd;
use crate::problem::{EpsConvention, Op};
use rug::Rational;

/// σ² (and mean(x²)) divided by d − 1 instead of d (torch.var's default).
pub fn unbiased_variance(
    op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    let numerator = match op {
        Op::LayerNorm => centered(x),
        Op::RmsNorm => x.to_vec(),
    };
    let divisor = Rational::from(x.len().saturating_sub(1).max(1));
    let s = inverse_scale(&(norm2(&numerator) / divisor), eps, convention)?;
    Some(assemble(&numerator, &s, gamma, beta))
}

/// LayerNorm without the mean subtraction (RMSNorm under LayerNorm's name).
pub fn no_centering(
    _op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    normalize(Op::RmsNorm, x, eps, convention, gamma, beta)
}

/// RMSNorm that subtracts the mean (LayerNorm under RMSNorm's name).
pub fn centred_rms(
    _op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    normalize(Op::LayerNorm, x, eps, convention, gamma, beta)
}

/// ε in the other convention.
pub fn swapped_convention(
    op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    let other = match convention {
        EpsConvention::Inside => EpsConvention::Outside,
        EpsConvention::Outside => EpsConvention::Inside,
    };
    normalize(op, x, eps, other, gamma, beta)
}

/// 2ε instead of ε.
pub fn doubled_eps(
    op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    normalize(op, x, &Rational::from(eps * 2u32), convention, gamma, beta)
}

/// ε ignored.
pub fn no_eps(
    op: Op,
    x: &[Rational],
    _eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    normalize(op, x, &Rational::new(), convention, gamma, beta)
}

/// β ignored.
pub fn dropped_beta(
    op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    _beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    normalize(op, x, eps, convention, gamma, None)
}

/// γ ignored.
pub fn dropped_gamma(
    op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    _gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    normalize(op, x, eps, convention, None, beta)
}

/// The output negated.
pub fn flipped_sign(
    op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    normalize(op, x, eps, convention, gamma, beta).map(|y| y.iter().map(Surd::neg).collect())
}

/// The last entry off by 2^-80: invisible to any float tolerance, not to exact arithmetic.
pub fn nudged_last_entry(
    op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    let mut y = normalize(op, x, eps, convention, gamma, beta)?;
    if let Some(last) = y.last_mut() {
        *last = last.add_rational(&(Rational::from(1) >> 80u32));
    }
    Some(y)
}

/// Defined everywhere: β (or 0) where the definition divides by zero.
pub fn defined_everywhere(
    op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    normalize(op, x, eps, convention, gamma, beta).or_else(|| {
        Some(
            (0..x.len())
                .map(|i| Surd::rational(beta.map_or_else(Rational::new, |b| b[i].clone())))
                .collect(),
        )
    })
}

/// Every faulty reference with its name.
pub const ALL: [(&str, Reference); 11] = [
    ("unbiased variance", unbiased_variance),
    ("no centring", no_centering),
    ("centred RMSNorm", centred_rms),
    ("swapped ε convention", swapped_convention),
    ("doubled ε", doubled_eps),
    ("no ε", no_eps),
    ("dropped β", dropped_beta),
    ("dropped γ", dropped_gamma),
    ("flipped sign", flipped_sign),
    ("nudged last entry", nudged_last_entry),
    ("defined everywhere", defined_everywhere),
];

/// A centring x ↦ x − c·1 as the projection theorem checks it.
pub type Centering = fn(&[Rational]) -> Vec<Rational>;

/// Subtracts the first entry instead of the mean (an oblique projection along 1).
pub fn centre_on_first(x: &[Rational]) -> Vec<Rational> {
    let first = x.first().cloned().unwrap_or_default();
    x.iter().map(|v| Rational::from(v - &first)).collect()
}

/// Subtracts Σx/(d + 1).
pub fn centre_off_by_one(x: &[Rational]) -> Vec<Rational> {
    let mu = super::exact_vec::sum(x) / Rational::from(x.len() + 1);
    x.iter().map(|v| Rational::from(v - &mu)).collect()
}

/// σ² with the one-pass formula's sign slip: mean(x²) + μ².
pub fn variance_sign_slip(x: &[Rational]) -> Rational {
    let mu = super::exact_vec::mean(x);
    mean_square(x) + Rational::from(mu.square_ref())
}

/// σ² over d − 1.
pub fn variance_unbiased(x: &[Rational]) -> Rational {
    variance(x) * len_q(x) / Rational::from(x.len().saturating_sub(1).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theorems::exact_vec::{expect_equal, ints};

    /// Each fault's exact output on one row (x = (0, 2), ε = 1/4, γ = (2, 3), β = (5, 7)):
    /// the definition gives y = (−2·s + 5, 3·s + 7) with s = 1/√(1 + ε) = 2/√5.
    #[test]
    fn faults_compute_what_they_say() {
        let x = ints(&[0, 2]);
        let g = ints(&[2, 3]);
        let b = ints(&[5, 7]);
        let q = |n: i64, d: i64| Rational::from((n, d));
        let eps = q(1, 4);
        let run = |f: Reference, op: Op, c: EpsConvention, e: &Rational| {
            f(op, &x, e, c, Some(&g), Some(&b))
        };
        let inv_sqrt = |r: Rational| Surd::sqrt(r).unwrap().recip().unwrap();
        let affine = |s: &Surd, v: [i64; 2]| -> SurdVec {
            (0..2)
                .map(|i| {
                    s.scale(&Rational::from(v[i] * [2, 3][i]))
                        .add_rational(&b[i])
                })
                .collect()
        };
        let layer = EpsConvention::Inside;
        // unbiased: σ² = 2/1 → s = 1/√(2 + 1/4); RMS: mean square 4/1.
        assert_eq!(
            run(unbiased_variance, Op::LayerNorm, layer, &eps).unwrap(),
            affine(&inv_sqrt(q(9, 4)), [-1, 1])
        );
        assert_eq!(
            run(unbiased_variance, Op::RmsNorm, layer, &eps).unwrap(),
            affine(&inv_sqrt(q(17, 4)), [0, 2])
        );
        assert_eq!(
            run(no_centering, Op::LayerNorm, layer, &eps).unwrap(),
            affine(&inv_sqrt(q(9, 4)), [0, 2])
        );
        assert_eq!(
            run(centred_rms, Op::RmsNorm, layer, &eps).unwrap(),
            affine(&inv_sqrt(q(5, 4)), [-1, 1])
        );
        let outside = Surd::rational(q(4, 5));
        assert_eq!(
            run(swapped_convention, Op::LayerNorm, layer, &eps).unwrap(),
            affine(&outside, [-1, 1])
        );
        assert_eq!(
            run(
                swapped_convention,
                Op::LayerNorm,
                EpsConvention::Outside,
                &eps
            )
            .unwrap(),
            affine(&inv_sqrt(q(5, 4)), [-1, 1])
        );
        assert_eq!(
            run(doubled_eps, Op::LayerNorm, layer, &eps).unwrap(),
            affine(&inv_sqrt(q(3, 2)), [-1, 1])
        );
        assert_eq!(
            run(no_eps, Op::LayerNorm, layer, &eps).unwrap(),
            affine(&Surd::rational(q(1, 1)), [-1, 1])
        );
        let plain = inv_sqrt(q(5, 4));
        let no_beta: SurdVec = vec![plain.scale(&q(-2, 1)), plain.scale(&q(3, 1))];
        assert_eq!(
            run(dropped_beta, Op::LayerNorm, layer, &eps).unwrap(),
            no_beta
        );
        let no_gamma: SurdVec = vec![plain.neg().add_rational(&b[0]), plain.add_rational(&b[1])];
        assert_eq!(
            run(dropped_gamma, Op::LayerNorm, layer, &eps).unwrap(),
            no_gamma
        );
        let flipped: SurdVec = affine(&plain, [-1, 1]).iter().map(Surd::neg).collect();
        assert_eq!(
            run(flipped_sign, Op::LayerNorm, layer, &eps).unwrap(),
            flipped
        );
        let mut nudged = affine(&plain, [-1, 1]);
        nudged[1] = nudged[1].add_rational(&Rational::from((1, rug::Integer::from(1) << 80u32)));
        assert_eq!(
            run(nudged_last_entry, Op::LayerNorm, layer, &eps).unwrap(),
            nudged
        );
        // d = 3: the divisor d − 1 = 2 shows (x = (0, 1, 5): ‖x − μ‖² = 14, σ²' = 7).
        let wide = unbiased_variance(
            Op::LayerNorm,
            &ints(&[0, 1, 5]),
            &q(0, 1),
            layer,
            None,
            None,
        )
        .unwrap();
        assert_eq!(
            wide,
            ints(&[-2, -1, 3])
                .iter()
                .map(|v| inv_sqrt(q(7, 1)).scale(v))
                .collect::<Vec<_>>()
        );
        let constant = ints(&[3, 3]);
        let everywhere = defined_everywhere(
            Op::LayerNorm,
            &constant,
            &q(0, 1),
            layer,
            Some(&g),
            Some(&b),
        )
        .unwrap();
        assert_eq!(
            everywhere,
            vec![Surd::rational(q(5, 1)), Surd::rational(q(7, 1))]
        );
        assert_eq!(
            run(defined_everywhere, Op::LayerNorm, layer, &eps).unwrap(),
            affine(&plain, [-1, 1])
        );
    }

    #[test]
    fn every_fault_differs_from_the_definition_somewhere() {
        let x = ints(&[1, 2, 4, 11]);
        let g = ints(&[2, 1, 3, 1]);
        let b = ints(&[1, 0, 0, 5]);
        let eps = Rational::from((1, 3));
        for (name, fault) in ALL {
            let differs = [Op::LayerNorm, Op::RmsNorm].iter().any(|&op| {
                [EpsConvention::Inside, EpsConvention::Outside]
                    .iter()
                    .any(|&c| {
                        [&x[..], &ints(&[3, 3, 3, 3])].iter().any(|row| {
                            let e = if row[0] == row[1] {
                                Rational::new()
                            } else {
                                eps.clone()
                            };
                            match (
                                fault(op, row, &e, c, Some(&g), Some(&b)),
                                normalize(op, row, &e, c, Some(&g), Some(&b)),
                            ) {
                                (Some(f), Some(r)) => expect_equal("", &f, &r).is_err(),
                                (f, r) => f.is_some() != r.is_some(),
                            }
                        })
                    })
            });
            assert!(differs, "{name} is not a fault");
        }
        assert_eq!(centre_on_first(&x), ints(&[0, 1, 3, 10]));
        let quarter = |v: i64| Rational::from((v, 5));
        assert_eq!(
            centre_off_by_one(&x),
            vec![quarter(-13), quarter(-8), quarter(2), quarter(37)]
        );
        assert_eq!(
            variance_sign_slip(&x),
            Rational::from(142) / 4u32 + Rational::from(81) / 4u32
        );
        assert_eq!(variance_unbiased(&x), Rational::from(61) / 3u32);
        assert_ne!(centre_off_by_one(&x), centered(&x));
        assert_ne!(variance_sign_slip(&x), variance(&x));
        assert_ne!(variance_unbiased(&x), variance(&x));
        assert_eq!(variance_unbiased(&ints(&[5])), Rational::new());
        assert!(centre_on_first(&[]).is_empty());
    }
}
