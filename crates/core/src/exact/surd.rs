//! Exact numbers of the form a + b·√r (a, b, r rational, r ≥ 0): the quadratic field Q(√r).
//!
//! Every LayerNorm/RMSNorm output is such a number: (x−μ)/√(σ²+ε) = (x−μ)·√(σ²+ε)/(σ²+ε) and
//! (x−μ)/(σ+ε) = (x−μ)/(√σ² + ε) both lie in Q(√·) of one radicand. So the theorems can be
//! checked with equality and order decided exactly, never with a float tolerance.
//!
//! Equality across different radicands is decided by one classical fact: if √r and √t are
//! irrational and r·t is not the square of a rational, then 1, √r, √t are linearly independent
//! over Q. Hence a + b√r = c + d√t (b, d ≠ 0) only when √t can be rewritten as (k/r)·√r with
//! k² = r·t, and then it is a comparison of coefficients.
//!
//! Comparisons of sums of surds with different radicands, as the normalized keys
//! k_j = w_j/√q_j of the selectability certificates need them, by sign analysis, squaring
//! and rational enclosures:
//! k_j = w_j/√q_j. Nothing here rounds: signs are decided by sign analysis and squaring, and
//! sums of several surds by rational enclosures √ρ ∈ [s/(b·2^p), (s+1)/(b·2^p)] with
//! s = ⌊√(ab·4^p)⌋, ρ = a/b, refined until the comparison is decided.

use rug::{Float, Integer, Rational};
use std::cmp::Ordering;
use std::fmt;

/// a + b·√r in canonical form: either b = 0 and r = 0 (a rational number), or b ≠ 0 and r > 0
/// is not the square of a rational (so √r is irrational and the representation is unique up
/// to moving square factors between b and r).
#[derive(Clone, Debug)]
pub struct Surd {
    a: Rational,
    b: Rational,
    r: Rational,
}

/// Two surds whose radicands do not share a field (a + b√r with c + d√t, r·t not a square):
/// their sum or general product leaves Q(√r). Only a checker bug produces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MixedRadicands {
    pub left: String,
    pub right: String,
}

impl fmt::Display for MixedRadicands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "internal: mixed radicands √({}) and √({}) in one operation",
            self.left, self.right
        )
    }
}

impl From<MixedRadicands> for String {
    fn from(e: MixedRadicands) -> String {
        e.to_string()
    }
}

/// The square root of q when it is rational (q ≥ 0 with numerator and denominator perfect
/// squares; rug keeps rationals in lowest terms, so that test is exact).
pub fn rational_sqrt(q: &Rational) -> Option<Rational> {
    if q.cmp0() == Ordering::Less {
        return None;
    }
    let (n, d) = (q.numer(), q.denom());
    if n.is_perfect_square() && d.is_perfect_square() {
        Some(Rational::from((
            Integer::from(n.sqrt_ref()),
            Integer::from(d.sqrt_ref()),
        )))
    } else {
        None
    }
}

impl Surd {
    /// The rational number q.
    pub fn rational(q: Rational) -> Surd {
        Surd {
            a: q,
            b: Rational::new(),
            r: Rational::new(),
        }
    }

    /// Zero.
    pub fn zero() -> Surd {
        Surd::rational(Rational::new())
    }

    /// √r for r ≥ 0; `None` for a negative radicand.
    pub fn sqrt(r: Rational) -> Option<Surd> {
        if r.cmp0() == Ordering::Less {
            return None;
        }
        Some(Surd::canonical(Rational::new(), Rational::from(1), r))
    }

    /// a + b·√r for r ≥ 0; `None` for a negative radicand.
    pub fn new(a: Rational, b: Rational, r: Rational) -> Option<Surd> {
        if r.cmp0() == Ordering::Less {
            return None;
        }
        Some(Surd::canonical(a, b, r))
    }

    /// Brings a + b√r (r ≥ 0) to canonical form: a rational √r is folded into a.
    fn canonical(a: Rational, b: Rational, r: Rational) -> Surd {
        if b.cmp0() == Ordering::Equal || r.cmp0() == Ordering::Equal {
            return Surd::rational(a);
        }
        match rational_sqrt(&r) {
            Some(s) => Surd::rational(a + b * s),
            None => Surd { a, b, r },
        }
    }

    /// The rational part a.
    pub fn rational_part(&self) -> &Rational {
        &self.a
    }

    /// The coefficient b of √r (zero for a rational number).
    pub fn surd_part(&self) -> &Rational {
        &self.b
    }

    /// The radicand r (zero for a rational number).
    pub fn radicand(&self) -> &Rational {
        &self.r
    }

    pub fn is_rational(&self) -> bool {
        self.b.cmp0() == Ordering::Equal
    }

    /// The value when it is rational.
    pub fn to_rational(&self) -> Option<Rational> {
        self.is_rational().then(|| self.a.clone())
    }

    pub fn is_zero(&self) -> bool {
        self.is_rational() && self.a.cmp0() == Ordering::Equal
    }

    /// Self written as x + y√r for the given irrational radicand r, when it lies in Q(√r).
    fn in_field_of(&self, r: &Rational) -> Option<(Rational, Rational)> {
        if self.is_rational() {
            return Some((self.a.clone(), Rational::new()));
        }
        if self.r == *r {
            return Some((self.a.clone(), self.b.clone()));
        }
        if r.cmp0() == Ordering::Equal {
            return None;
        }
        // √s = k/√r · ... : √s = √(s·r)/√r = (k/r)·√r when s·r = k² with k rational.
        let k = rational_sqrt(&Rational::from(&self.r * r))?;
        Some((self.a.clone(), (&self.b * k) / r))
    }

    /// The radicand two operands can share, with both written in its field.
    #[allow(clippy::type_complexity)]
    fn common_field(
        &self,
        other: &Surd,
    ) -> Result<(Rational, (Rational, Rational), (Rational, Rational)), MixedRadicands> {
        let r = if self.is_rational() {
            other.r.clone()
        } else {
            self.r.clone()
        };
        match (self.in_field_of(&r), other.in_field_of(&r)) {
            (Some(x), Some(y)) => Ok((r, x, y)),
            _ => Err(MixedRadicands {
                left: self.r.to_string(),
                right: other.r.to_string(),
            }),
        }
    }

    pub fn neg(&self) -> Surd {
        Surd {
            a: Rational::from(-&self.a),
            b: Rational::from(-&self.b),
            r: self.r.clone(),
        }
    }

    /// q·self for a rational q.
    pub fn scale(&self, q: &Rational) -> Surd {
        Surd::canonical(
            Rational::from(&self.a * q),
            Rational::from(&self.b * q),
            self.r.clone(),
        )
    }

    /// self + q for a rational q.
    pub fn add_rational(&self, q: &Rational) -> Surd {
        Surd {
            a: Rational::from(&self.a + q),
            b: self.b.clone(),
            r: self.r.clone(),
        }
    }

    pub fn add(&self, other: &Surd) -> Result<Surd, MixedRadicands> {
        let (r, (a, b), (c, d)) = self.common_field(other)?;
        Ok(Surd::canonical(a + c, b + d, r))
    }

    pub fn sub(&self, other: &Surd) -> Result<Surd, MixedRadicands> {
        self.add(&other.neg())
    }

    /// The product; also defined for two pure surds of unrelated radicands (b√r·d√t = bd√(rt)).
    pub fn mul(&self, other: &Surd) -> Result<Surd, MixedRadicands> {
        match self.common_field(other) {
            Ok((r, (a, b), (c, d))) => {
                let rational = Rational::from(&a * &c) + Rational::from(&b * &d) * &r;
                let surd = a * d + b * c;
                Ok(Surd::canonical(rational, surd, r))
            }
            Err(e) => {
                let pure = |s: &Surd| s.a.cmp0() == Ordering::Equal;
                if pure(self) && pure(other) {
                    Ok(Surd::canonical(
                        Rational::new(),
                        Rational::from(&self.b * &other.b),
                        Rational::from(&self.r * &other.r),
                    ))
                } else {
                    Err(e)
                }
            }
        }
    }

    pub fn square(&self) -> Surd {
        // (a + b√r)² = a² + b²r + 2ab√r: same field, never mixed.
        let rational =
            Rational::from(self.a.square_ref()) + Rational::from(self.b.square_ref()) * &self.r;
        let surd = Rational::from(&self.a * &self.b) * 2u32;
        Surd::canonical(rational, surd, self.r.clone())
    }

    /// 1/self; `None` for zero. 1/(a + b√r) = (a − b√r)/(a² − b²r), and a² ≠ b²r because √r
    /// is irrational in canonical form.
    pub fn recip(&self) -> Option<Surd> {
        if self.is_zero() {
            return None;
        }
        let norm =
            Rational::from(self.a.square_ref()) - Rational::from(self.b.square_ref()) * &self.r;
        Some(Surd::canonical(
            Rational::from(&self.a / &norm),
            Rational::from(-&self.b) / &norm,
            self.r.clone(),
        ))
    }

    pub fn div(&self, other: &Surd) -> Option<Result<Surd, MixedRadicands>> {
        other.recip().map(|inv| self.mul(&inv))
    }

    /// The sign of the value, exact.
    pub fn signum(&self) -> Ordering {
        sign_of(&self.a, &self.b, &self.r)
    }

    /// Exact comparison of values, for any two radicands.
    pub fn cmp_value(&self, other: &Surd) -> Ordering {
        if let Ok(diff) = self.sub(other) {
            return diff.signum();
        }
        // self − other = X + Y√t with X = (a − c) + b√r in Q(√r) and Y = −d ≠ 0 rational, √t
        // irrational and outside Q(√r). The sign is that of the larger in magnitude of X and
        // Y√t: compare X² with Y²·t, which lie in one field (never equal: X = ±Y√t would put √t
        // in Q(√r)).
        let x = Surd::canonical(
            Rational::from(&self.a - &other.a),
            self.b.clone(),
            self.r.clone(),
        );
        let y = Rational::from(-&other.b);
        let (sx, sy) = (x.signum(), y.cmp0());
        let y2t = Rational::from(y.square_ref()) * &other.r;
        match x.square().add_rational(&(-y2t)).signum() {
            Ordering::Greater => sx,
            Ordering::Less => sy,
            Ordering::Equal => Ordering::Equal,
        }
    }

    pub fn abs(&self) -> Surd {
        if self.signum() == Ordering::Less {
            self.neg()
        } else {
            self.clone()
        }
    }

    /// The value to `prec` bits (for rounding candidates and messages, never for verdicts).
    pub fn to_float(&self, prec: u32) -> Float {
        let root = Float::with_val(prec, &self.r).sqrt();
        Float::with_val(prec, &self.a) + Float::with_val(prec, &self.b) * root
    }

    /// An approximation for messages.
    pub fn approx(&self) -> f64 {
        self.to_float(128).to_f64()
    }
}

/// sign(a + b√r) for r ≥ 0.
fn sign_of(a: &Rational, b: &Rational, r: &Rational) -> Ordering {
    // The larger in magnitude of a and b√r decides; equal magnitudes add up (same signs, or
    // both zero) or cancel (opposite signs).
    let (sa, sb) = (a.cmp0(), Rational::from(b * r).cmp0());
    let a2 = Rational::from(a.square_ref());
    let b2r = Rational::from(b.square_ref()) * r;
    match a2.cmp(&b2r) {
        Ordering::Greater => sa,
        Ordering::Less => sb,
        Ordering::Equal if sa == sb => sa,
        Ordering::Equal => Ordering::Equal,
    }
}

impl PartialEq for Surd {
    /// Equality of values (not of representations): √8 == 2·√2.
    fn eq(&self, other: &Surd) -> bool {
        self.cmp_value(other) == Ordering::Equal
    }
}

impl Eq for Surd {}

impl PartialOrd for Surd {
    fn partial_cmp(&self, other: &Surd) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Surd {
    fn cmp(&self, other: &Surd) -> Ordering {
        self.cmp_value(other)
    }
}

impl From<Rational> for Surd {
    fn from(q: Rational) -> Surd {
        Surd::rational(q)
    }
}

impl fmt::Display for Surd {
    /// `a`, or `a + b·√(r)` (≈ decimal).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_rational() {
            write!(f, "{}", self.a)
        } else {
            write!(
                f,
                "{} + {}·√({}) (≈{:e})",
                self.a,
                self.b,
                self.r,
                self.approx()
            )
        }
    }
}

/// The sign of a/√q − b/√r for q, r > 0: the order of the scores of two scaled keys whose
/// query products are a = v·w_i and b = v·w_j.
pub fn cmp_scaled(a: &Rational, q: &Rational, b: &Rational, r: &Rational) -> Ordering {
    debug_assert!(*q > 0 && *r > 0);
    // a/√q − b/√r has the sign of a√r − b√q (multiply by √q√r > 0).
    let sa = a.cmp0();
    let sb = b.cmp0();
    if sa != sb {
        return sa.cmp(&sb);
    }
    if sa == Ordering::Equal {
        return Ordering::Equal;
    }
    // Same nonzero sign: compare the squares a²r and b²q, reversed when both are negative.
    let lhs = Rational::from(a * a) * r;
    let rhs = Rational::from(b * b) * q;
    let by_square = lhs.cmp(&rhs);
    if sa == Ordering::Greater {
        by_square
    } else {
        by_square.reverse()
    }
}

/// Rational bounds lo ≤ √ρ ≤ hi (ρ ≥ 0) with hi − lo ≤ 2^-p / denominator(ρ).
pub fn sqrt_bounds(rho: &Rational, p: u32) -> (Rational, Rational) {
    let (a, b) = (rho.numer(), rho.denom());
    // √(a/b) = √(ab)/b.
    let scaled = Integer::from(a * b) << (2 * p);
    let s = scaled.sqrt();
    let den = Integer::from(b << p);
    let lo = Rational::from((s.clone(), den.clone()));
    let hi = Rational::from((s + 1u32, den));
    (lo, hi)
}

/// The comparison could not be decided within the precision cap (only possible when the two
/// sides differ by less than about 2^-cap; exact equality of an irrational sum with a
/// rational cannot happen, see [`cmp_surd_sum`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecided;

/// Compares Σ_k c_k·√ρ_k with `rhs`, for c_k ≥ 0 and ρ_k ≥ 0.
///
/// Terms whose ρ_k is a rational square are summed exactly. If every term is of that kind
/// the comparison is exact. Otherwise the sum is irrational: grouping √ρ = t·√m (m
/// square-free > 1), the sum is R + Σ_m C_m√m with every C_m > 0, and 1, √m for distinct
/// square-free m are linearly independent over ℚ, so it never equals a rational. Refining
/// rational enclosures therefore decides the comparison; `max_bits` caps the precision.
pub fn cmp_surd_sum(
    terms: &[(Rational, Rational)],
    rhs: &Rational,
    max_bits: u32,
) -> Result<Ordering, Undecided> {
    let mut rational_part = Rational::new();
    let mut irrational: Vec<(&Rational, &Rational)> = Vec::new();
    for (c, rho) in terms {
        debug_assert!(*c >= 0 && *rho >= 0);
        if *c == 0 {
            continue;
        }
        match rational_sqrt(rho) {
            Some(root) => rational_part += root * c,
            None => irrational.push((c, rho)),
        }
    }
    if irrational.is_empty() {
        return Ok(rational_part.cmp(rhs));
    }
    let mut p = 64u32;
    loop {
        let mut lo = rational_part.clone();
        let mut hi = rational_part.clone();
        for (c, rho) in &irrational {
            let (l, h) = sqrt_bounds(rho, p);
            lo += l * *c;
            hi += h * *c;
        }
        if hi < *rhs {
            return Ok(Ordering::Less);
        }
        if lo > *rhs {
            return Ok(Ordering::Greater);
        }
        if p >= max_bits {
            return Err(Undecided);
        }
        p = (p * 2).min(max_bits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: i64, d: i64) -> Rational {
        Rational::from((n, d))
    }
    fn s(a: Rational, b: Rational, r: Rational) -> Surd {
        Surd::new(a, b, r).unwrap()
    }

    #[test]
    fn rational_sqrt_only_of_squares() {
        assert_eq!(rational_sqrt(&q(9, 4)), Some(q(3, 2)));
        assert_eq!(rational_sqrt(&q(0, 1)), Some(q(0, 1)));
        assert_eq!(rational_sqrt(&q(2, 1)), None);
        assert_eq!(rational_sqrt(&q(4, 3)), None);
        assert_eq!(rational_sqrt(&q(-4, 1)), None);
    }

    #[test]
    fn canonical_form_folds_square_radicands() {
        let x = Surd::sqrt(q(49, 9)).unwrap();
        assert_eq!(x.to_rational(), Some(q(7, 3)));
        let y = Surd::sqrt(q(2, 1)).unwrap();
        assert!(!y.is_rational());
        assert_eq!(y.radicand(), &q(2, 1));
        assert!(Surd::sqrt(q(-1, 1)).is_none());
        assert!(Surd::new(q(1, 1), q(1, 1), q(-2, 1)).is_none());
        assert!(s(q(1, 2), q(0, 1), q(5, 1)).is_rational());
        assert_eq!(s(q(1, 2), q(0, 1), q(5, 1)).radicand(), &q(0, 1));
        assert_eq!(s(q(1, 2), q(3, 1), q(0, 1)).surd_part(), &q(0, 1));
        assert_eq!(s(q(1, 2), q(3, 1), q(0, 1)).to_rational(), Some(q(1, 2)));
    }

    #[test]
    fn equality_across_radicands() {
        // √8 = 2√2, √(1/2) = √2/2, √2 ≠ √3, 1 + √2 ≠ 1 + √3.
        let r8 = Surd::sqrt(q(8, 1)).unwrap();
        let two_r2 = s(q(0, 1), q(2, 1), q(2, 1));
        assert_eq!(r8, two_r2);
        assert_eq!(Surd::sqrt(q(1, 2)).unwrap(), s(q(0, 1), q(1, 2), q(2, 1)));
        assert_ne!(Surd::sqrt(q(2, 1)).unwrap(), Surd::sqrt(q(3, 1)).unwrap());
        assert_ne!(s(q(1, 1), q(1, 1), q(2, 1)), s(q(1, 1), q(1, 1), q(3, 1)));
        assert_ne!(
            Surd::sqrt(q(2, 1)).unwrap(),
            Surd::rational(q(141421, 100000))
        );
        assert_ne!(s(q(1, 1), q(1, 1), q(2, 1)), s(q(1, 1), q(-1, 1), q(2, 1)));
    }

    #[test]
    fn order_is_exact_near_ties() {
        // √2 lies between 1.41421356 and 1.41421357; 1 + √2 vs √3 + ... across fields.
        let r2 = Surd::sqrt(q(2, 1)).unwrap();
        assert_eq!(
            r2.cmp(&Surd::rational(q(141421356, 100000000))),
            Ordering::Greater
        );
        assert_eq!(
            r2.cmp(&Surd::rational(q(141421357, 100000000))),
            Ordering::Less
        );
        let r3 = Surd::sqrt(q(3, 1)).unwrap();
        assert!(r2 < r3);
        // 1 + √2 ≈ 2.4142 > √5 ≈ 2.2361; √2 + 1/3 ≈ 1.7475 > √3 ≈ 1.7321; √2 + 1/4 < √3.
        assert!(r2.add_rational(&q(1, 1)) > Surd::sqrt(q(5, 1)).unwrap());
        assert!(r2.add_rational(&q(1, 3)) > r3);
        assert!(r2.add_rational(&q(1, 4)) < r3);
        assert!(r2.neg().add_rational(&q(-1, 4)) > r3.neg());
        // Across fields with nonzero rational parts on both sides.
        let one_r2 = r2.add_rational(&q(1, 1)); // 2.414
        assert!(one_r2 < r3.add_rational(&q(2, 1))); // 3.732
        assert!(one_r2 > r3.add_rational(&q(1, 2))); // 2.232
        assert!(one_r2 < r3.add_rational(&q(7, 10))); // 2.432
        assert!(one_r2.neg() > r3.add_rational(&q(7, 10)).neg());
        assert!(r2.add_rational(&q(-3, 1)) > r3.neg().add_rational(&q(1, 10))); // −1.586 > −1.632
        assert_eq!(
            s(q(2, 1), q(-1, 1), q(2, 1)).cmp(&s(q(1, 1), q(-1, 1), q(3, 1))),
            Ordering::Greater
        );
        // Signs on the boundary of the rule: equal magnitudes add or cancel.
        assert_eq!(sign_of(&q(3, 1), &q(1, 1), &q(9, 1)), Ordering::Greater);
        assert_eq!(sign_of(&q(-3, 1), &q(-1, 1), &q(9, 1)), Ordering::Less);
        assert_eq!(sign_of(&q(3, 1), &q(-1, 1), &q(9, 1)), Ordering::Equal);
        assert_eq!(sign_of(&q(0, 1), &q(0, 1), &q(5, 1)), Ordering::Equal);
        assert_eq!(sign_of(&q(-2, 1), &q(7, 1), &q(0, 1)), Ordering::Less);
        assert_eq!(sign_of(&q(0, 1), &q(-7, 1), &q(2, 1)), Ordering::Less);
        assert_eq!(r2.neg().signum(), Ordering::Less);
        assert_eq!(s(q(-3, 2), q(1, 1), q(2, 1)).signum(), Ordering::Less);
        assert_eq!(s(q(3, 2), q(-1, 1), q(2, 1)).signum(), Ordering::Greater);
        assert_eq!(s(q(-1, 1), q(1, 1), q(2, 1)).signum(), Ordering::Greater);
        assert_eq!(Surd::zero().signum(), Ordering::Equal);
        assert_eq!(r2.abs(), r2.neg().abs());
    }

    #[test]
    fn field_operations() {
        let r2 = Surd::sqrt(q(2, 1)).unwrap();
        let x = r2.add_rational(&q(1, 1)); // 1 + √2
                                           // (1 + √2)(1 − √2) = −1
        let conj = s(q(1, 1), q(-1, 1), q(2, 1));
        assert_eq!(x.mul(&conj).unwrap().to_rational(), Some(q(-1, 1)));
        assert_eq!(x.square(), s(q(3, 1), q(2, 1), q(2, 1)));
        assert_eq!(x.mul(&x).unwrap(), x.square());
        assert_eq!(x.recip().unwrap(), s(q(-1, 1), q(1, 1), q(2, 1)));
        assert_eq!(
            x.mul(&x.recip().unwrap()).unwrap().to_rational(),
            Some(q(1, 1))
        );
        assert_eq!(x.sub(&x).unwrap().to_rational(), Some(q(0, 1)));
        assert_eq!(x.div(&x).unwrap().unwrap().to_rational(), Some(q(1, 1)));
        assert!(Surd::zero().recip().is_none());
        assert_eq!(x.scale(&q(0, 1)).to_rational(), Some(q(0, 1)));
        // √2 · √3 = √6 (pure surds of unrelated radicands); (1+√2)·√3 leaves the field.
        let r3 = Surd::sqrt(q(3, 1)).unwrap();
        assert_eq!(r2.mul(&r3).unwrap(), Surd::sqrt(q(6, 1)).unwrap());
        let two_r2 = r2.scale(&q(2, 1));
        let three_r3 = r3.scale(&q(3, 1));
        assert_eq!(
            two_r2.mul(&three_r3).unwrap(),
            Surd::sqrt(q(6, 1)).unwrap().scale(&q(6, 1))
        );
        let mixed = x.mul(&r3).unwrap_err();
        assert_eq!(
            mixed,
            MixedRadicands {
                left: "2".into(),
                right: "3".into()
            }
        );
        assert_eq!(
            String::from(mixed.clone()),
            "internal: mixed radicands √(2) and √(3) in one operation"
        );
        assert_eq!(mixed.to_string(), String::from(mixed));
        assert!(x.add(&r3).is_err());
        // √2 · √8 = 4 (related radicands share a field).
        assert_eq!(
            r2.mul(&Surd::sqrt(q(8, 1)).unwrap()).unwrap().to_rational(),
            Some(q(4, 1))
        );
        assert_eq!(
            r2.add(&Surd::sqrt(q(8, 1)).unwrap()).unwrap(),
            Surd::sqrt(q(18, 1)).unwrap()
        );
        let approx = x.approx();
        assert!((approx - (1.0 + 2f64.sqrt())).abs() < 1e-15);
        assert_eq!(x.rational_part(), &q(1, 1));
        assert_eq!(x.surd_part(), &q(1, 1));
        assert!(x.to_string().contains("√(2)"));
        assert_eq!(Surd::from(q(3, 4)).to_string(), "3/4");
    }
}

#[cfg(test)]
mod comparison_tests {
    use super::*;

    fn r(n: i64, d: i64) -> Rational {
        Rational::from((n, d))
    }

    #[test]
    fn scaled_scores_compare_exactly() {
        // 1/√2 vs 1/√3: greater.
        assert_eq!(
            cmp_scaled(&r(1, 1), &r(2, 1), &r(1, 1), &r(3, 1)),
            Ordering::Greater
        );
        // 2/√4 = 1/√1: equal.
        assert_eq!(
            cmp_scaled(&r(2, 1), &r(4, 1), &r(1, 1), &r(1, 1)),
            Ordering::Equal
        );
        // −1/√2 vs −1/√3: −0.707 < −0.577.
        assert_eq!(
            cmp_scaled(&r(-1, 1), &r(2, 1), &r(-1, 1), &r(3, 1)),
            Ordering::Less
        );
        // Mixed signs and zeros.
        assert_eq!(
            cmp_scaled(&r(0, 1), &r(2, 1), &r(-1, 1), &r(3, 1)),
            Ordering::Greater
        );
        assert_eq!(
            cmp_scaled(&r(0, 1), &r(2, 1), &r(0, 1), &r(3, 1)),
            Ordering::Equal
        );
        assert_eq!(
            cmp_scaled(&r(-5, 1), &r(2, 1), &r(1, 100), &r(3, 1)),
            Ordering::Less
        );
    }

    #[test]
    fn surd_sums() {
        // √2 + √3 ≈ 3.146 vs 22/7 ≈ 3.1429: greater.
        let terms = [(r(1, 1), r(2, 1)), (r(1, 1), r(3, 1))];
        assert_eq!(cmp_surd_sum(&terms, &r(22, 7), 4096), Ok(Ordering::Greater));
        assert_eq!(cmp_surd_sum(&terms, &r(315, 100), 4096), Ok(Ordering::Less));
        // Rational roots: 1/2·√(1/4) + 3·√(4/9) = 1/4 + 2 = 9/4 exactly.
        let exact = [(r(1, 2), r(1, 4)), (r(3, 1), r(4, 9))];
        assert_eq!(cmp_surd_sum(&exact, &r(9, 4), 64), Ok(Ordering::Equal));
        // Zero coefficients vanish, whatever the radicand.
        assert_eq!(
            cmp_surd_sum(&[(r(0, 1), r(2, 1))], &r(0, 1), 64),
            Ok(Ordering::Equal)
        );
    }

    #[test]
    fn sqrt_bounds_bracket() {
        for (n, d) in [(2i64, 1i64), (1, 3), (10, 7), (123456789, 1000)] {
            let rho = r(n, d);
            let (lo, hi) = sqrt_bounds(&rho, 80);
            assert!(Rational::from(&lo * &lo) <= rho && rho <= Rational::from(&hi * &hi));
            assert!(hi - lo < r(1, 1i64 << 60));
        }
    }
}
