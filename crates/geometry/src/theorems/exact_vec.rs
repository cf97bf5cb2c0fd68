//! Exact vectors and the exact definitions of LayerNorm and RMSNorm the theorems are checked
//! against.
//!
//! Inputs are rational vectors; outputs are vectors of [`Surd`]s, all in the field Q(√r) of one
//! radicand (r = σ²+ε for the ε-inside convention, r = σ² for ε-outside), so every identity
//! the papers state can be compared exactly.

use crate::exact::surd::{MixedRadicands, Surd};
use crate::problem::{EpsConvention, Op};
use rug::Rational;
use std::cmp::Ordering;

/// A vector of exact normalised values.
pub type SurdVec = Vec<Surd>;

/// d as a rational.
pub fn len_q(x: &[Rational]) -> Rational {
    Rational::from(x.len())
}

/// Σ x_i.
pub fn sum(x: &[Rational]) -> Rational {
    Rational::from(Rational::sum(x.iter()))
}

/// (1/d)·Σ x_i; zero for the empty vector.
pub fn mean(x: &[Rational]) -> Rational {
    if x.is_empty() {
        return Rational::new();
    }
    sum(x) / len_q(x)
}

/// a·b.
pub fn dot(a: &[Rational], b: &[Rational]) -> Rational {
    Rational::from(Rational::dot(a.iter().zip(b.iter())))
}

/// ‖x‖².
pub fn norm2(x: &[Rational]) -> Rational {
    dot(x, x)
}

/// x − μ·1.
pub fn centered(x: &[Rational]) -> Vec<Rational> {
    let mu = mean(x);
    x.iter().map(|v| Rational::from(v - &mu)).collect()
}

/// The biased variance σ² = ‖x − μ1‖²/d; zero for the empty vector.
pub fn variance(x: &[Rational]) -> Rational {
    if x.is_empty() {
        return Rational::new();
    }
    norm2(&centered(x)) / len_q(x)
}

/// mean(x²) = ‖x‖²/d (RMSNorm's rms², before ε); zero for the empty vector.
pub fn mean_square(x: &[Rational]) -> Rational {
    if x.is_empty() {
        return Rational::new();
    }
    norm2(x) / len_q(x)
}

/// λ·x + c·1.
pub fn affine(x: &[Rational], lambda: &Rational, c: &Rational) -> Vec<Rational> {
    x.iter().map(|v| Rational::from(v * lambda) + c).collect()
}

/// Whether every entry is equal (σ = 0); true for d ≤ 1.
pub fn is_constant(x: &[Rational]) -> bool {
    x.windows(2).all(|w| w[0] == w[1])
}

/// The factor 1/√(s+ε) (ε inside) or 1/(√s+ε) (ε outside) that multiplies the numerator, for
/// the second moment s (σ² for LayerNorm, mean(x²) for RMSNorm); `None` where it is 1/0.
pub fn inverse_scale(
    second_moment: &Rational,
    eps: &Rational,
    convention: EpsConvention,
) -> Option<Surd> {
    let denominator = match convention {
        EpsConvention::Inside => Surd::sqrt(Rational::from(second_moment + eps))?,
        EpsConvention::Outside => Surd::sqrt(second_moment.clone())?.add_rational(eps),
    };
    denominator.recip()
}

/// The exact definition of the normalisations as the reference states them:
/// LayerNorm y = γ⊙(x−μ)·s + β, RMSNorm y = γ⊙x·s + β, with s = 1/√(m+ε) (ε inside) or
/// 1/(√m+ε) (ε outside), m = σ² resp. mean(x²). γ = None means ones, β = None zeros.
/// `None` where the definition divides by zero (ε = 0 and m = 0: a constant row for
/// LayerNorm, the zero row for RMSNorm).
pub fn normalize(
    op: Op,
    x: &[Rational],
    eps: &Rational,
    convention: EpsConvention,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> Option<SurdVec> {
    let (numerator, moment) = match op {
        Op::LayerNorm => (centered(x), variance(x)),
        Op::RmsNorm => (x.to_vec(), mean_square(x)),
    };
    let s = inverse_scale(&moment, eps, convention)?;
    Some(assemble(&numerator, &s, gamma, beta))
}

/// γ⊙numerator·s + β (γ = None means ones, β = None zeros).
pub fn assemble(
    numerator: &[Rational],
    s: &Surd,
    gamma: Option<&[Rational]>,
    beta: Option<&[Rational]>,
) -> SurdVec {
    numerator
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let g = gamma.map_or_else(|| v.clone(), |g| Rational::from(v * &g[i]));
            let y = s.scale(&g);
            match beta {
                Some(b) => y.add_rational(&b[i]),
                None => y,
            }
        })
        .collect()
}

/// An exact normalisation with the signature of [`normalize`]: the definition a theorem is
/// checked against. The catalogue passes [`normalize`] (the lead's `exact` reference can be
/// passed the same way); tests pass the deliberately wrong ones of [`super::faults`] to show that
/// every check can fail.
pub type Reference = fn(
    Op,
    &[Rational],
    &Rational,
    EpsConvention,
    Option<&[Rational]>,
    Option<&[Rational]>,
) -> Option<SurdVec>;

/// LayerNorm without γ and β, ε inside: (x−μ)/√(σ²+ε), by `reference`.
pub fn layer_norm(reference: Reference, x: &[Rational], eps: &Rational) -> Option<SurdVec> {
    reference(Op::LayerNorm, x, eps, EpsConvention::Inside, None, None)
}

/// Σ y_i.
pub fn surd_sum(y: &[Surd]) -> Result<Surd, MixedRadicands> {
    y.iter().try_fold(Surd::zero(), |acc, v| acc.add(v))
}

/// a·b for a rational a.
pub fn surd_dot_rational(a: &[Rational], y: &[Surd]) -> Result<Surd, MixedRadicands> {
    a.iter()
        .zip(y)
        .try_fold(Surd::zero(), |acc, (ai, yi)| acc.add(&yi.scale(ai)))
}

/// ‖y‖².
pub fn surd_norm2(y: &[Surd]) -> Result<Surd, MixedRadicands> {
    y.iter()
        .try_fold(Surd::zero(), |acc, v| acc.add(&v.square()))
}

/// The first index where two exact vectors differ (or the shorter length when the lengths
/// differ), with both values, for counterexample messages.
pub fn first_difference(a: &[Surd], b: &[Surd]) -> Option<(usize, String)> {
    if a.len() != b.len() {
        return Some((
            a.len().min(b.len()),
            format!("lengths {} vs {}", a.len(), b.len()),
        ));
    }
    a.iter()
        .zip(b)
        .position(|(u, v)| u != v)
        .map(|i| (i, format!("{} vs {}", a[i], b[i])))
}

/// Ok when two exact vectors are equal entry by entry, else a message naming the first
/// differing entry.
pub fn expect_equal(what: &str, a: &[Surd], b: &[Surd]) -> Result<(), String> {
    match first_difference(a, b) {
        None => Ok(()),
        Some((i, detail)) => Err(format!("{what}: entry {i} differs: {detail}")),
    }
}

/// Ok when the exact rationals agree.
pub fn expect_rational(what: &str, got: &Rational, want: &Rational) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got}, want {want}"))
    }
}

/// Ok when the exact number equals the rational.
pub fn expect_value(what: &str, got: &Surd, want: &Rational) -> Result<(), String> {
    if got.cmp_value(&Surd::rational(want.clone())) == Ordering::Equal {
        Ok(())
    } else {
        Err(format!("{what}: got {got}, want {want}"))
    }
}

/// Rationals from integers, for tests and fixed edge cases.
pub fn ints(values: &[i64]) -> Vec<Rational> {
    values.iter().map(|&v| Rational::from(v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: i64, d: i64) -> Rational {
        Rational::from((n, d))
    }

    #[test]
    fn statistics_by_hand() {
        let x = ints(&[1, 2, 3, 6]);
        assert_eq!(sum(&x), q(12, 1));
        assert_eq!(mean(&x), q(3, 1));
        assert_eq!(centered(&x), ints(&[-2, -1, 0, 3]));
        assert_eq!(variance(&x), q(14, 4));
        assert_eq!(mean_square(&x), q(50, 4));
        assert_eq!(dot(&x, &ints(&[1, 0, 0, 1])), q(7, 1));
        assert_eq!(norm2(&x), q(50, 1));
        assert_eq!(affine(&x, &q(2, 1), &q(-1, 1)), ints(&[1, 3, 5, 11]));
        assert!(!is_constant(&x));
        assert!(is_constant(&ints(&[4, 4, 4])));
        assert!(is_constant(&ints(&[4])));
        assert_eq!(mean(&[]), q(0, 1));
        assert_eq!(variance(&[]), q(0, 1));
        assert_eq!(mean_square(&[]), q(0, 1));
    }

    #[test]
    fn layer_norm_of_a_known_row() {
        // x = (0, 2): μ = 1, σ² = 1, y = (−1, 1); with ε = 3: y = (−1, 1)/2.
        let x = ints(&[0, 2]);
        let y = layer_norm(normalize, &x, &q(0, 1)).unwrap();
        assert_eq!(
            y.iter()
                .map(|v| v.to_rational().unwrap())
                .collect::<Vec<_>>(),
            ints(&[-1, 1])
        );
        let y = layer_norm(normalize, &x, &q(3, 1)).unwrap();
        assert_eq!(y[1].to_rational(), Some(q(1, 2)));
        // ε outside: (x−μ)/(σ+ε) = (−1, 1)/4 with ε = 3.
        let y = normalize(
            Op::LayerNorm,
            &x,
            &q(3, 1),
            EpsConvention::Outside,
            None,
            None,
        )
        .unwrap();
        assert_eq!(y[0].to_rational(), Some(q(-1, 4)));
        // γ, β: γ⊙y + β.
        let g = ints(&[2, 3]);
        let b = ints(&[5, 7]);
        let y = normalize(
            Op::LayerNorm,
            &x,
            &q(0, 1),
            EpsConvention::Inside,
            Some(&g),
            Some(&b),
        )
        .unwrap();
        assert_eq!(y[0].to_rational(), Some(q(3, 1)));
        assert_eq!(y[1].to_rational(), Some(q(10, 1)));
        // Undefined on a constant row without ε; zero with ε.
        assert!(layer_norm(normalize, &ints(&[5, 5]), &q(0, 1)).is_none());
        assert!(layer_norm(normalize, &ints(&[5, 5]), &q(1, 1))
            .unwrap()
            .iter()
            .all(Surd::is_zero));
    }

    #[test]
    fn rms_norm_of_a_known_row() {
        // x = (1, 1, 1, 1, 2, 2, 2, 2)... simpler: x = (3, 4): mean(x²) = 25/2, y = x·√2/5.
        let x = ints(&[3, 4]);
        let y = normalize(Op::RmsNorm, &x, &q(0, 1), EpsConvention::Inside, None, None).unwrap();
        assert_eq!(y[0], Surd::sqrt(q(18, 25)).unwrap());
        assert_eq!(surd_norm2(&y).unwrap().to_rational(), Some(q(2, 1)));
        assert!(normalize(
            Op::RmsNorm,
            &ints(&[0, 0]),
            &q(0, 1),
            EpsConvention::Inside,
            None,
            None
        )
        .is_none());
        let y = normalize(
            Op::RmsNorm,
            &x,
            &q(0, 1),
            EpsConvention::Outside,
            None,
            None,
        )
        .unwrap();
        assert_eq!(y[1], Surd::sqrt(q(32, 25)).unwrap());
    }

    #[test]
    fn sums_dots_and_messages() {
        let r2 = Surd::sqrt(q(2, 1)).unwrap();
        let y = vec![r2.clone(), r2.neg(), Surd::rational(q(1, 1))];
        assert_eq!(surd_sum(&y).unwrap().to_rational(), Some(q(1, 1)));
        assert_eq!(surd_norm2(&y).unwrap().to_rational(), Some(q(5, 1)));
        assert_eq!(
            surd_dot_rational(&ints(&[1, 1, 0]), &y)
                .unwrap()
                .to_rational(),
            Some(q(0, 1))
        );
        assert!(expect_equal("same", &y, &y).is_ok());
        let mut z = y.clone();
        z[2] = Surd::rational(q(2, 1));
        let e = expect_equal("changed", &y, &z).unwrap_err();
        assert!(e.contains("entry 2"), "{e}");
        assert!(expect_equal("len", &y, &y[..2])
            .unwrap_err()
            .contains("lengths"));
        assert!(expect_rational("r", &q(1, 2), &q(1, 2)).is_ok());
        assert!(expect_rational("r", &q(1, 2), &q(1, 3)).is_err());
        assert!(expect_value("v", &r2, &q(1, 1)).is_err());
        assert!(expect_value("v", &Surd::rational(q(1, 1)), &q(1, 1)).is_ok());
    }
}
