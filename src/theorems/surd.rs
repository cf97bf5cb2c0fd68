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
        // self − other = X + Y√t with X = (a − c) + b√r in Q(√r) and Y = −d rational, √t
        // irrational and outside Q(√r). Same signs (or X = 0) decide at once; otherwise compare
        // X² with Y²·t, which lie in one field.
        let x = Surd::canonical(
            Rational::from(&self.a - &other.a),
            self.b.clone(),
            self.r.clone(),
        );
        let y = Rational::from(-&other.b);
        let (sx, sy) = (x.signum(), y.cmp0());
        if sx == sy || sx == Ordering::Equal {
            return sy;
        }
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
    let (sa, sb) = (a.cmp0(), Rational::from(b * r).cmp0());
    if sb == Ordering::Equal || sa == sb {
        return if sa == Ordering::Equal { sb } else { sa };
    }
    if sa == Ordering::Equal {
        return sb;
    }
    // Opposite signs: the larger of a² and b²r wins.
    let a2 = Rational::from(a.square_ref());
    let b2r = Rational::from(b.square_ref()) * r;
    match a2.cmp(&b2r) {
        Ordering::Greater => sa,
        Ordering::Less => sb,
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
        assert!(x.mul(&r3).is_err());
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
