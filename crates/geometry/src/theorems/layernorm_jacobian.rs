//! LayerNorm's Jacobian and its spectral norm, derived and checked exactly.
//!
//! For y = (x − μ)/√(σ² + ε) (γ = 1, ε inside) write u = Px = x − μ1, D = σ² + ε = ‖u‖²/d + ε.
//! Differentiating u/√D (u is linear in x, ∂D/∂x = 2u/d):
//!
//! J = (P − uuᵀ/(d·D))/√D.
//!
//! Since u ⊥ 1, J is symmetric with the orthogonal eigenspaces 1 (eigenvalue 0: shifts do not
//! move y), u (eigenvalue ε/D^{3/2}: at ε = 0 scaling does not move y) and 1⊥ ∩ u⊥ (eigenvalue
//! 1/√D, dimension d − 2). So ‖J‖₂ = 1/√(σ² + ε) for d ≥ 3, which at ε = 0 is
//! √d/‖x − μ1‖: O(√d/‖x‖) for centred x, not the O(d/‖x‖) of the digest (off by √d). For
//! d = 2 the third eigenspace is empty: ‖J‖₂ = ε/(σ² + ε)^{3/2}, and J = 0 at ε = 0 (the
//! two outputs ±(1, −1) are locally constant). A gain multiplies J by diag(γ) on the left.

use super::exact_vec::{centered, dot, len_q, norm2, variance};
use super::faults::Centering;
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "layernorm-jacobian",
    statement: "For y = LN(x) = (x − μ)/√(σ² + ε) (γ = 1, ε inside), with u = x − μ1 and D = σ² + ε > 0, the Jacobian is J = (P − uuᵀ/(d·D))/√D, P = I − 11ᵀ/d (equal, for every direction v, to the derivative of the definition along v). J is symmetric with eigenvalues 0 on 1, ε/D^{3/2} on u and 1/√D on the (d − 2)-dimensional rest, so ‖J‖₂ = 1/√(σ² + ε) for d ≥ 3 (= √d/‖x − μ1‖ at ε = 0, i.e. O(√d/‖x‖), not O(d/‖x‖)), and ‖J‖₂ = ε/(σ² + ε)^{3/2} for d = 2 (J = 0 at ε = 0).",
    source: "digest: LayerNorm gradients (its O(d/‖x‖) corrected); Ba et al. 2016 §5 (invariance to shifts and scalings), derived here",
    check,
};

/// A rational d × d matrix, row-major.
pub type Matrix = Vec<Vec<Rational>>;

/// The moments a definition of LayerNorm is built from (a centring and a variance), so a wrong
/// one can be passed to show the derivative check fails.
#[derive(Clone, Copy)]
pub struct Moments {
    pub centre: Centering,
    pub variance: fn(&[Rational]) -> Rational,
}

/// The definition's moments: x − μ1 and the biased variance.
pub const DEFINITION: Moments = Moments {
    centre: centered,
    variance,
};

/// `(M, D)` with J = M/√D: M = P − uuᵀ/(d·D), D = σ² + ε; `None` when D = 0.
pub fn jacobian(x: &[Rational], eps: &Rational) -> Option<(Matrix, Rational)> {
    let d = x.len();
    let u = centered(x);
    let big_d = variance(x) + eps;
    if big_d.cmp0() != Ordering::Greater {
        return None;
    }
    let scale = len_q(x) * &big_d;
    let inv_d = Rational::from(d).recip();
    let m = (0..d)
        .map(|i| {
            (0..d)
                .map(|j| {
                    let p = if i == j {
                        Rational::from(1 - &inv_d)
                    } else {
                        Rational::from(-&inv_d)
                    };
                    p - Rational::from(&u[i] * &u[j]) / &scale
                })
                .collect()
        })
        .collect();
    Some((m, big_d))
}

fn mat_vec(m: &Matrix, v: &[Rational]) -> Vec<Rational> {
    m.iter().map(|row| dot(row, v)).collect()
}

/// J·v equals the derivative along v of the definition built from `moments`:
/// d/dt (c(x) + t·c(v))/√(q(t)) at t = 0, with q(t) = var(x + tv) + ε = q₀ + q₁t + q₂t²
/// (q₁ = var(x + v) − var(x) − var(v), exact for any quadratic variance), i.e.
/// (c(v) − c(x)·q₁/(2q₀))/√q₀. Compared exactly: same signs, and squares cross-multiplied by
/// the two radicands.
pub fn check_derivative(
    x: &[Rational],
    v: &[Rational],
    eps: &Rational,
    moments: Moments,
) -> Result<(), String> {
    let Some((m, big_d)) = jacobian(x, eps) else {
        return Ok(());
    };
    let closed = mat_vec(&m, v);
    let var = moments.variance;
    let q0 = var(x) + eps;
    if q0.cmp0() != Ordering::Greater {
        return Err(format!(
            "the definition's radicand is {q0} where D = {big_d} > 0"
        ));
    }
    let sum: Vec<Rational> = x
        .iter()
        .zip(v)
        .map(|(a, b)| Rational::from(a + b))
        .collect();
    let q1 = var(&sum) - var(x) - var(v);
    let (cx, cv) = ((moments.centre)(x), (moments.centre)(v));
    let half = Rational::from(&q1 / &q0) / 2u32;
    for i in 0..x.len() {
        let derived = Rational::from(&cv[i] - &Rational::from(&cx[i] * &half));
        let same = derived.cmp0() == closed[i].cmp0()
            && Rational::from(derived.square_ref()) * &big_d
                == Rational::from(closed[i].square_ref()) * &q0;
        if !same {
            return Err(format!(
                "entry {i} of J·v: closed form {}/√{big_d}, derivative of the definition {derived}/√{q0}",
                closed[i]
            ));
        }
    }
    Ok(())
}

/// ‖J‖₂² from the exact spectral decomposition M = 0·E₁ + (ε/D)·E₂ + 1·E₃ with the orthogonal
/// projectors E₁ = 11ᵀ/d, E₂ = uuᵀ/‖u‖², E₃ = I − E₁ − E₂ (checked: u ⊥ 1, the identity entry
/// by entry, trace E₃ = d − 2); ‖M‖₂ is the largest eigenvalue with a nonempty eigenspace.
pub fn spectral_norm2(x: &[Rational], eps: &Rational) -> Result<Option<Rational>, String> {
    let Some((m, big_d)) = jacobian(x, eps) else {
        return Ok(None);
    };
    let d = x.len();
    let u = centered(x);
    if u.iter().cloned().sum::<Rational>().cmp0() != Ordering::Equal {
        return Err("u is not orthogonal to 1".into());
    }
    let uu = norm2(&u);
    let along_u = Rational::from(eps / &big_d);
    let inv_d = Rational::from(d).recip();
    let mut trace3 = Rational::new();
    for i in 0..d {
        for j in 0..d {
            let e1 = inv_d.clone();
            let e2 = if uu.cmp0() == Ordering::Equal {
                Rational::new()
            } else {
                Rational::from(&u[i] * &u[j]) / &uu
            };
            let id = Rational::from(u8::from(i == j));
            let e3 = Rational::from(&id - &e1) - &e2;
            if i == j {
                trace3 += &e3;
            }
            let want = if uu.cmp0() == Ordering::Equal {
                // u = 0 (ε > 0): M = P.
                Rational::from(&id - &e1)
            } else {
                Rational::from(&along_u * &e2) + &e3
            };
            if m[i][j] != want {
                return Err(format!(
                    "M[{i}][{j}] = {} but the decomposition gives {want}",
                    m[i][j]
                ));
            }
        }
    }
    let rank_e2 = usize::from(uu.cmp0() != Ordering::Equal);
    let want_trace = Rational::from(d - 1 - rank_e2);
    if trace3 != want_trace {
        return Err(format!("trace E3 = {trace3}, want {want_trace}"));
    }
    if along_u > 1 {
        return Err(format!("ε/D = {along_u} > 1"));
    }
    // Eigenvalues of M with nonempty eigenspaces: ε/D on u (if u ≠ 0), 1 on E₃ (if trace > 0).
    let top = if trace3.cmp0() == Ordering::Greater {
        Rational::from(1)
    } else if rank_e2 == 1 {
        along_u
    } else {
        Rational::new()
    };
    Ok(Some(Rational::from(top.square_ref()) / big_d))
}

/// The stated norm: ‖J‖₂² = 1/(σ² + ε) for d ≥ 3, ε²/(σ² + ε)³ for d = 2, and (at ε = 0,
/// d ≥ 3) d/‖x − μ1‖².
pub fn check_norm(x: &[Rational], eps: &Rational, claimed: ClaimedNorm) -> Result<(), String> {
    let Some(got) = spectral_norm2(x, eps)? else {
        return Ok(());
    };
    let want = claimed(x, eps).ok_or("no claimed norm where J is defined")?;
    if got != want {
        return Err(format!("‖J‖₂² = {got}, the statement says {want}"));
    }
    if eps.cmp0() == Ordering::Equal && x.len() >= 3 {
        let via_length = len_q(x) / norm2(&centered(x));
        if got != via_length {
            return Err(format!(
                "ε = 0: ‖J‖₂² = {got} but d/‖x − μ1‖² = {via_length}"
            ));
        }
    }
    Ok(())
}

/// A statement of ‖J‖₂² as a function of (x, ε).
pub type ClaimedNorm = fn(&[Rational], &Rational) -> Option<Rational>;

/// The theorem's ‖J‖₂².
pub fn stated_norm2(x: &[Rational], eps: &Rational) -> Option<Rational> {
    let big_d = variance(x) + eps;
    if big_d.cmp0() != Ordering::Greater {
        return None;
    }
    Some(match x.len() {
        0 | 1 => Rational::new(),
        2 => Rational::from(eps.square_ref()) / big_d.clone().square() / big_d,
        _ => big_d.recip(),
    })
}

/// The digest's scaling, read exactly: ‖J‖₂² = d²/‖x − μ1‖² (ε = 0).
pub fn digest_norm2(x: &[Rational], eps: &Rational) -> Option<Rational> {
    let n = norm2(&centered(x));
    (n.cmp0() == Ordering::Greater && eps.cmp0() == Ordering::Equal)
        .then(|| len_q(x).square() / n)
        .or_else(|| stated_norm2(x, eps))
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            let q = |n: i64| Rational::from(n);
            let rows = [
                vec![q(1), q(2), q(3)],
                vec![q(3), q(-1)],
                vec![q(5), q(5), q(5)],
                vec![q(1), q(0), q(0), q(0)],
            ];
            for x in &rows {
                for eps in [q(0), Rational::from((1, 8))] {
                    let v: Vec<Rational> = (0..x.len()).map(|i| q(i as i64 * 2 - 1)).collect();
                    tally.record(
                        || format!("edge x = {x:?}, ε = {eps}"),
                        check_derivative(x, &v, &eps, DEFINITION)
                            .and_then(|()| check_derivative(x, x, &eps, DEFINITION))
                            .and_then(|()| check_norm(x, &eps, stated_norm2)),
                    );
                }
            }
        },
        |inputs| {
            // J is d × d: widths up to 48 keep the exact matrices small.
            let d = 1 + inputs.width() % 48;
            let x = inputs.row_of_width(d).values;
            let v = inputs.row_of_width(d).values;
            let eps = if inputs.below(3) == 0 {
                Rational::new()
            } else {
                inputs.eps()
            };
            let name = |e: String| format!("width {d}, ε = {eps}: {e}");
            check_derivative(&x, &v, &eps, DEFINITION).map_err(name)?;
            check_norm(&x, &eps, stated_norm2).map_err(name)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theorems::exact_vec::ints;
    use crate::theorems::faults;

    #[test]
    fn the_jacobian_of_a_small_row() {
        // x = (1, 2, 3), ε = 0: u = (−1, 0, 1), σ² = 2/3, D = 2/3;
        // M = P − uuᵀ/2 and ‖J‖₂² = 1/D = 3/2 = d/‖u‖².
        let x = ints(&[1, 2, 3]);
        let (m, d) = jacobian(&x, &Rational::new()).unwrap();
        assert_eq!(d, Rational::from((2, 3)));
        let third = |n: i64| Rational::from((n, 3));
        let sixth = |n: i64| Rational::from((n, 6));
        assert_eq!(m[0], vec![sixth(1), third(-1), sixth(1)]);
        assert_eq!(m[1], vec![third(-1), third(2), third(-1)]);
        assert_eq!(
            spectral_norm2(&x, &Rational::new()).unwrap(),
            Some(Rational::from((3, 2)))
        );
        check_norm(&x, &Rational::new(), stated_norm2).unwrap();
        check_derivative(&x, &ints(&[4, -1, 7]), &Rational::from((1, 5)), DEFINITION).unwrap();
        // Along u at ε = 0 the output does not move: J·u = 0.
        assert!(mat_vec(&m, &ints(&[-1, 0, 1]))
            .iter()
            .all(|v| v.cmp0() == Ordering::Equal));
        // d = 2: J = 0 at ε = 0; ε²/D³ otherwise.
        let pair = ints(&[3, -1]);
        assert_eq!(
            spectral_norm2(&pair, &Rational::new()).unwrap(),
            Some(Rational::new())
        );
        let eps = Rational::from((1, 2));
        // σ² = 4, D = 9/2: ε²/D³ = (1/4)/(729/8) = 2/729.
        assert_eq!(
            spectral_norm2(&pair, &eps).unwrap(),
            Some(Rational::from((2, 729)))
        );
        // A constant row with ε > 0: J = P/√ε.
        assert_eq!(
            spectral_norm2(&ints(&[5, 5, 5]), &eps).unwrap(),
            Some(Rational::from(2))
        );
        assert_eq!(
            spectral_norm2(&ints(&[5, 5, 5]), &Rational::new()).unwrap(),
            None
        );
    }

    #[test]
    fn wrong_definitions_and_the_digest_scaling_are_caught() {
        let x = ints(&[1, 2, 7, -3]);
        let v = ints(&[2, -1, 0, 5]);
        let eps = Rational::from((1, 10));
        for (name, wrong) in [
            (
                "centre on first",
                Moments {
                    centre: faults::centre_on_first,
                    ..DEFINITION
                },
            ),
            (
                "centre off by one",
                Moments {
                    centre: faults::centre_off_by_one,
                    ..DEFINITION
                },
            ),
            (
                "variance sign slip",
                Moments {
                    variance: faults::variance_sign_slip,
                    ..DEFINITION
                },
            ),
            (
                "unbiased variance",
                Moments {
                    variance: faults::variance_unbiased,
                    ..DEFINITION
                },
            ),
        ] {
            assert!(check_derivative(&x, &v, &eps, wrong).is_err(), "{name}");
        }
        // The digest's O(d/‖x‖), read as d²/‖u‖², is rejected (off by a factor d in the square).
        let e = check_norm(&x, &Rational::new(), digest_norm2).unwrap_err();
        assert!(e.contains("the statement says"), "{e}");
        // So is forgetting the d = 2 case.
        let e = check_norm(&ints(&[3, -1]), &eps, |x, e| {
            Some((variance(x) + e).recip())
        })
        .unwrap_err();
        assert!(e.contains("the statement says"), "{e}");
    }
}
