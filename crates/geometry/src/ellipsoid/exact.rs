//! Exact arithmetic for small orders: the ellipsoid's matrices over ℚ, their characteristic
//! polynomials, Sturm counts that certify a floating-point spectrum, and the secular structure
//! of `ΠG²Π` that yields every axis in closed form.
//!
//! **The secular structure.** Let `δ_1 < … < δ_m` be the distinct values of `d = g²` with
//! multiplicities `m_j`. An eigenvector `v ∈ 1⊥` of `ΠDΠ` with eigenvalue `ζ` satisfies
//! `(D − ζ)v = c1`. Either `ζ = δ_j` with `m_j ≥ 2` (`v` supported on that group, summing to 0:
//! `m_j − 1` eigenvectors such as `e_i − e_l`), or `v_n ∝ 1/(d_n − ζ)` and `1ᵀv = 0`:
//! `Σ_j m_j/(δ_j − ζ) = 0`, i.e. `s(ζ) = Σ_j m_j ∏_{i≠j}(δ_i − ζ) = 0`, a polynomial of degree
//! `m − 1` whose roots interlace the `δ_j` strictly. Multiplying by `∏(δ_j − ζ)` gives the
//! polynomial eigenvector `v_n(ζ) = ∏_{j : δ_j ≠ d_n}(δ_j − ζ)`, so identities that hold modulo
//! `s` hold at every root at once: that is how the theorem checker verifies all axes exactly.

use super::poly::Poly;
use super::verify::Certificate;
use super::ExactCheck;
use rug::{Integer, Rational};
use std::cmp::Ordering;

/// Exact rationals of f64 values (every finite f64 is a dyadic rational).
pub fn rationals(x: &[f64]) -> Vec<Rational> {
    x.iter()
        .map(|&v| Rational::from_f64(v).expect("finite"))
        .collect()
}

pub type Matrix = Vec<Vec<Rational>>;

fn zeros(n: usize) -> Matrix {
    vec![vec![Rational::new(); n]; n]
}

/// `Q = (GΠG)⁺` exactly (see [`super::matrices`]).
pub fn tight_form(g: &[Rational]) -> Matrix {
    let n = g.len();
    let mut q = zeros(n);
    let k = g.iter().filter(|x| x.cmp0() == Ordering::Equal).count();
    if k == n {
        return q;
    }
    let alpha: Vec<Rational> = g
        .iter()
        .map(|x| {
            if x.cmp0() == Ordering::Equal {
                Rational::new()
            } else {
                Rational::from(x.recip_ref())
            }
        })
        .collect();
    if k == 0 {
        // Π₂ D Π₂ with Π₂ = I − ααᵀ/s, D = diag(α²), multiplied out as matrices.
        let s: Rational = alpha.iter().map(|a| Rational::from(a.square_ref())).sum();
        let p2: Matrix = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        let mut v = Rational::from(&alpha[i] * &alpha[j]) / &s;
                        v = -v;
                        if i == j {
                            v += 1;
                        }
                        v
                    })
                    .collect()
            })
            .collect();
        let d: Matrix = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if i == j {
                            Rational::from(alpha[i].square_ref())
                        } else {
                            Rational::new()
                        }
                    })
                    .collect()
            })
            .collect();
        q = mat_mul(&mat_mul(&p2, &d), &p2);
    } else {
        let inv_k = Rational::from((1, k as u64));
        for i in 0..n {
            for j in 0..n {
                if g[i].cmp0() == Ordering::Equal || g[j].cmp0() == Ordering::Equal {
                    continue;
                }
                let mut v = Rational::from(&alpha[i] * &alpha[j]) * &inv_k;
                if i == j {
                    v += Rational::from(alpha[i].square_ref());
                }
                q[i][j] = v;
            }
        }
    }
    q
}

/// `K = ΠG²Π` exactly.
pub fn gram(g: &[Rational]) -> Matrix {
    let n = g.len();
    let nn = Rational::from(n as u64);
    let pi: Matrix = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| Rational::from(if i == j { 1 } else { 0 }) - Rational::from(1) / &nn)
                .collect()
        })
        .collect();
    let d: Matrix = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        Rational::from(g[i].square_ref())
                    } else {
                        Rational::new()
                    }
                })
                .collect()
        })
        .collect();
    mat_mul(&mat_mul(&pi, &d), &pi)
}

/// Riechers' zero-gain prescription: `Π₂ G^{D2} Π₂ = diag(1/g_n² or 0)` when some gain is 0.
pub fn drazin_form(g: &[Rational]) -> Matrix {
    let n = g.len();
    let mut m = zeros(n);
    for i in 0..n {
        if g[i].cmp0() != Ordering::Equal {
            m[i][i] = Rational::from(g[i].square_ref()).recip();
        }
    }
    m
}

pub fn mat_mul(a: &Matrix, b: &Matrix) -> Matrix {
    let n = a.len();
    let m = b.first().map_or(0, Vec::len);
    (0..n)
        .map(|i| {
            (0..m)
                .map(|j| {
                    let mut s = Rational::new();
                    for (l, bl) in b.iter().enumerate() {
                        if a[i][l].cmp0() != Ordering::Equal && bl[j].cmp0() != Ordering::Equal {
                            s += Rational::from(&a[i][l] * &bl[j]);
                        }
                    }
                    s
                })
                .collect()
        })
        .collect()
}

pub fn mat_vec(a: &Matrix, v: &[Rational]) -> Vec<Rational> {
    a.iter()
        .map(|row| row.iter().zip(v).map(|(x, y)| Rational::from(x * y)).sum())
        .collect()
}

/// `det(xI − A)` by Faddeev–LeVerrier (exact over ℚ).
pub fn char_poly(a: &Matrix) -> Poly {
    let n = a.len();
    let mut c = vec![Rational::new(); n + 1];
    c[n] = Rational::from(1);
    let mut m = zeros(n);
    for k in 1..=n {
        // M_k = A M_{k−1} + c_{n−k+1} I.
        let mut next = mat_mul(a, &m);
        for (i, row) in next.iter_mut().enumerate() {
            row[i] += &c[n - k + 1];
        }
        m = next;
        let am = mat_mul(a, &m);
        let trace: Rational = (0..n).map(|i| am[i][i].clone()).sum();
        c[n - k] = -trace / Rational::from(k as u64);
    }
    Poly::new(c)
}

/// The number of roots of `p` in the closed interval `[lo, hi]`, with multiplicity.
pub fn roots_in_closed(p: &Poly, lo: &Rational, hi: &Rational) -> usize {
    let mut at_lo = 0;
    let mut q = p.clone();
    while !q.is_zero() && q.eval(lo).cmp0() == Ordering::Equal {
        q = q.div_rem(&Poly::linear_root(lo)).0;
        at_lo += 1;
    }
    at_lo + p.count_roots_with_multiplicity(lo, hi)
}

/// Sturm-checks a certificate: every cluster interval holds exactly as many roots of `p` as it
/// has members.
fn clusters_match(p: &Poly, cert: &Certificate) -> bool {
    cert.complete()
        && cert.clusters.iter().all(|c| {
            let lo = Rational::from_f64(c.lo).expect("finite cluster bound");
            let hi = Rational::from_f64(c.hi).expect("finite cluster bound");
            roots_in_closed(p, &lo, &hi) == c.members.len()
        })
}

/// The exact check of both routes for small orders (`g` already scaled, as analysed).
pub fn check_routes(
    g: &[f64],
    lambda_route: &Certificate,
    zeta_route: &Certificate,
    null: usize,
) -> ExactCheck {
    let gr = rationals(g);
    let p_q = char_poly(&tight_form(&gr));
    let p_k = char_poly(&gram(&gr));
    let (zq, rest_q) = p_q.split_zero_roots();
    let (zk, rest_k) = p_k.split_zero_roots();
    ExactCheck {
        lambda_counts_match: clusters_match(&p_q, lambda_route),
        zeta_counts_match: clusters_match(&p_k, zeta_route),
        reciprocal: zq == null && zk == null && rest_k.reversed().monic() == rest_q.monic(),
    }
}

/// The secular structure of `ΠG²Π` (module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct Secular {
    /// Distinct values of `g²`, ascending, with multiplicities.
    pub values: Vec<(Rational, usize)>,
    /// `s(ζ) = Σ_j m_j ∏_{i≠j}(δ_i − ζ)`.
    pub poly: Poly,
}

pub fn secular(g: &[Rational]) -> Secular {
    let mut d: Vec<Rational> = g.iter().map(|x| Rational::from(x.square_ref())).collect();
    d.sort();
    let mut values: Vec<(Rational, usize)> = Vec::new();
    for x in d {
        match values.last_mut() {
            Some((v, m)) if *v == x => *m += 1,
            _ => values.push((x, 1)),
        }
    }
    let factor = |v: &Rational| Poly::new(vec![v.clone(), Rational::from(-1)]);
    let mut poly = Poly::zero();
    for (j, (_, mj)) in values.iter().enumerate() {
        let mut term = Poly::constant(Rational::from(*mj as u64));
        for (i, (vi, _)) in values.iter().enumerate() {
            if i != j {
                term = term.mul(&factor(vi));
            }
        }
        poly = poly.add(&term);
    }
    Secular { values, poly }
}

impl Secular {
    /// The polynomial eigenvector component `v_n(ζ) = ∏_{j : δ_j ≠ d_n}(δ_j − ζ)`.
    pub fn eigenvector_component(&self, d_n: &Rational) -> Poly {
        self.values
            .iter()
            .filter(|(v, _)| v != d_n)
            .fold(Poly::constant(Rational::from(1)), |p, (v, _)| {
                p.mul(&Poly::new(vec![v.clone(), Rational::from(-1)]))
            })
    }

    /// The full characteristic polynomial of `ΠG²Π` the structure predicts:
    /// `x · ∏_j (x − δ_j)^{m_j − 1} · s(x)/lc(s)`.
    pub fn predicted_char_poly(&self) -> Poly {
        let mut p = Poly::x().mul(&self.poly.monic());
        for (v, m) in &self.values {
            p = p.mul(&Poly::linear_root(v).pow(m - 1));
        }
        p
    }
}

/// Exact rational roots of `p` near the given approximations, recognised by continued-fraction
/// convergents (denominators up to `10^9`) and confirmed by exact evaluation; ascending,
/// without repetition.
pub fn rational_roots_near(p: &Poly, approximations: &[f64]) -> Vec<Rational> {
    let mut found: Vec<Rational> = Vec::new();
    for &x in approximations {
        for c in convergents(x, Integer::from(1_000_000_000u64)) {
            if p.eval(&c).cmp0() == Ordering::Equal && !found.contains(&c) {
                found.push(c);
                break;
            }
        }
    }
    found.sort();
    found
}

fn convergents(x: f64, max_den: Integer) -> Vec<Rational> {
    let mut out = Vec::new();
    let Some(mut r) = Rational::from_f64(x) else {
        return out;
    };
    let (mut h0, mut h1) = (Integer::from(0), Integer::from(1));
    let (mut k0, mut k1) = (Integer::from(1), Integer::from(0));
    for _ in 0..64 {
        let a = r.clone().floor().into_numer_denom().0;
        let h2 = Integer::from(&a * &h1) + &h0;
        let k2 = Integer::from(&a * &k1) + &k0;
        if k2 > max_den {
            break;
        }
        out.push(Rational::from((h2.clone(), k2.clone())));
        (h0, h1, k0, k1) = (h1, h2, k1, k2);
        let frac = r.clone() - Rational::from(a);
        if frac.cmp0() == Ordering::Equal {
            break;
        }
        r = frac.recip();
    }
    out
}

/// `√q` for a nonnegative rational, written exactly as `c·√s` with `s` a squarefree integer
/// when possible (`√632 = 2√158`, `√(63/2) = 3/2·√14`), else as `√(q)`.
pub fn sqrt_text(q: &Rational) -> String {
    if q.cmp0() == Ordering::Equal {
        return "0".into();
    }
    // √(a/b) = √(ab)/b; pull the square part out of ab by trial division (small numbers only).
    let (num, den) = q.clone().into_numer_denom();
    let mut rest = Integer::from(&num * &den);
    if rest.significant_bits() > 64 {
        return format!("√({q})");
    }
    let mut outside = Integer::from(1);
    let mut f = Integer::from(2);
    while Integer::from(&f * &f) <= rest {
        let f2 = Integer::from(&f * &f);
        while rest.is_divisible(&f2) {
            rest /= &f2;
            outside *= &f;
        }
        f += 1;
    }
    let coef = Rational::from((outside, den));
    match (coef == 1, rest == 1) {
        (_, true) => coef.to_string(),
        (true, false) => format!("√{rest}"),
        (false, false) => format!("{coef}·√{rest}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: i64, d: i64) -> Rational {
        Rational::from((n, d))
    }

    fn ints(v: &[i64]) -> Vec<Rational> {
        v.iter().map(|&x| Rational::from(x)).collect()
    }

    #[test]
    fn char_poly_of_small_matrices() {
        // [[2, 1], [1, 2]]: x² − 4x + 3.
        let a = vec![ints(&[2, 1]), ints(&[1, 2])];
        assert_eq!(char_poly(&a), Poly::new(ints(&[3, -4, 1])));
        let b = vec![ints(&[1, 2, 3]), ints(&[0, 4, 5]), ints(&[0, 0, 6])];
        assert_eq!(char_poly(&b), Poly::new(ints(&[-24, 34, -11, 1])));
    }

    #[test]
    fn worked_example_spectrum_is_rational() {
        // g = (2, 9, 12, 13): ΠG²Π has eigenvalues 0, 63/2, 109, 158.
        let g = ints(&[2, 9, 12, 13]);
        let p = char_poly(&gram(&g));
        let want = [q(0, 1), q(63, 2), q(109, 1), q(158, 1)]
            .iter()
            .fold(Poly::constant(q(1, 1)), |acc, r| {
                acc.mul(&Poly::linear_root(r))
            });
        assert_eq!(p, want);
        // And Q's nonzero eigenvalues are the reciprocals.
        let pq = char_poly(&tight_form(&g));
        let want_q = [q(0, 1), q(2, 63), q(1, 109), q(1, 158)]
            .iter()
            .fold(Poly::constant(q(1, 1)), |acc, r| {
                acc.mul(&Poly::linear_root(r))
            });
        assert_eq!(pq, want_q);
        assert_eq!(
            rational_roots_near(&p, &[31.499999999, 109.00000001, 157.9999999]),
            vec![q(63, 2), q(109, 1), q(158, 1)]
        );
    }

    #[test]
    fn secular_structure_predicts_the_char_poly() {
        for g in [
            ints(&[2, 9, 12, 13]),
            ints(&[1, 1, 2, 3, 3, 3]),
            ints(&[1, 0, 2, 0]),
            ints(&[-1, 1, 5]),
        ] {
            let sec = secular(&g);
            assert_eq!(sec.predicted_char_poly(), char_poly(&gram(&g)), "g = {g:?}");
        }
    }

    #[test]
    fn zero_gains_tight_form_differs_from_drazin() {
        // g = (1, 1, 0): tight Q = [[2, 1, 0], [1, 2, 0], [0, 0, 0]] (λ = 3, 1, 0),
        // Riechers' Drazin form diag(1, 1, 0) (λ = 1, 1, 0).
        let g = ints(&[1, 1, 0]);
        let t = tight_form(&g);
        assert_eq!(
            t,
            vec![ints(&[2, 1, 0]), ints(&[1, 2, 0]), ints(&[0, 0, 0])]
        );
        assert_eq!(char_poly(&drazin_form(&g)), Poly::new(ints(&[0, 1, -2, 1])));
    }

    #[test]
    fn closed_interval_counts_include_the_left_end() {
        let p = Poly::linear_root(&q(1, 1))
            .pow(2)
            .mul(&Poly::linear_root(&q(3, 1)));
        assert_eq!(roots_in_closed(&p, &q(1, 1), &q(2, 1)), 2);
        assert_eq!(roots_in_closed(&p, &q(1, 1), &q(3, 1)), 3);
        assert_eq!(roots_in_closed(&p, &q(3, 2), &q(5, 2)), 0);
    }

    #[test]
    fn square_roots_are_simplified() {
        assert_eq!(sqrt_text(&q(632, 1)), "2·√158");
        assert_eq!(sqrt_text(&q(126, 1)), "3·√14");
        assert_eq!(sqrt_text(&q(9, 4)), "3/2");
        assert_eq!(sqrt_text(&q(3, 1)), "√3");
        assert_eq!(sqrt_text(&q(1, 2)), "1/2·√2");
    }
}
