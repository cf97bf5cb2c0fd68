//! Double-double arithmetic: the reference's fast path. Each value is an unevaluated sum
//! hi + lo with |lo| ≤ ulp(hi)/2. Only the error-free transformations below are used, so the
//! relative error of each operation is a small multiple of 2^-104; callers carry explicit
//! error bounds and fall back to exact arithmetic whenever a bound cannot decide.

/// hi + lo, normalized.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DoubleDouble {
    pub hi: f64,
    pub lo: f64,
}

/// Error-free sum: a + b = s + e exactly (Knuth), for finite inputs without overflow.
#[inline]
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// Error-free product: a·b = p + e exactly, when no underflow happens in e (and, without
/// hardware FMA, |a|, |b| < 2^996 for Dekker's split).
#[inline]
pub fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    #[cfg(target_feature = "fma")]
    {
        (p, a.mul_add(b, -p))
    }
    #[cfg(not(target_feature = "fma"))]
    {
        // Dekker/Veltkamp: a software fma would be a slow library call.
        let (ah, al) = split(a);
        let (bh, bl) = split(b);
        (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
    }
}

/// Veltkamp's split: a = hi + lo with hi holding the top 26 bits, exactly.
#[cfg(not(target_feature = "fma"))]
#[inline]
fn split(a: f64) -> (f64, f64) {
    const FACTOR: f64 = 134_217_729.0; // 2^27 + 1
    let c = FACTOR * a;
    let hi = c - (c - a);
    (hi, a - hi)
}

impl DoubleDouble {
    pub const ZERO: DoubleDouble = DoubleDouble { hi: 0.0, lo: 0.0 };

    #[inline]
    pub fn from_f64(x: f64) -> Self {
        DoubleDouble { hi: x, lo: 0.0 }
    }

    /// Normalizes an unevaluated sum so that hi = fl(hi + lo).
    #[inline]
    pub fn normalize(hi: f64, lo: f64) -> Self {
        let (h, l) = two_sum(hi, lo);
        DoubleDouble { hi: h, lo: l }
    }

    /// self + x for an exact f64 x; relative error ≤ 2^-105 of |self| + |x|.
    #[inline]
    pub fn add_f64(self, x: f64) -> Self {
        let (s, e) = two_sum(self.hi, x);
        Self::normalize(s, e + self.lo)
    }

    /// self + other; error ≤ 2^-104 (|self| + |other|).
    #[inline]
    pub fn plus(self, other: DoubleDouble) -> Self {
        let (s, e) = two_sum(self.hi, other.hi);
        let (t, f) = two_sum(self.lo, other.lo);
        let e = e + t;
        let (s, e) = two_sum(s, e);
        Self::normalize(s, e + f)
    }

    /// self · other; relative error ≤ 2^-102.
    #[inline]
    pub fn times(self, other: DoubleDouble) -> Self {
        let (p, e) = two_prod(self.hi, other.hi);
        let e = e + (self.hi * other.lo + self.lo * other.hi);
        Self::normalize(p, e)
    }

    /// self · x for an exact f64 x; relative error ≤ 2^-103.
    #[inline]
    pub fn mul_f64(self, x: f64) -> Self {
        let (p, e) = two_prod(self.hi, x);
        Self::normalize(p, e + self.lo * x)
    }

    #[inline]
    pub fn negated(self) -> Self {
        DoubleDouble {
            hi: -self.hi,
            lo: -self.lo,
        }
    }

    #[inline]
    pub fn abs_f64(self) -> f64 {
        self.hi.abs()
    }

    #[inline]
    pub fn is_finite(self) -> bool {
        self.hi.is_finite() && self.lo.is_finite()
    }

    /// The double-double nearest to a rational (hi = nearest f64, lo = nearest f64 to the rest):
    /// relative error ≤ 2^-105 unless the value is near the bottom of the f64 range.
    pub fn from_rational(q: &rug::Rational) -> Self {
        let hi = rational_to_f64_nearest(q);
        if !hi.is_finite() {
            return DoubleDouble { hi, lo: 0.0 };
        }
        let rest = q - rug::Rational::from_f64(hi).expect("finite");
        DoubleDouble {
            hi,
            lo: rational_to_f64_nearest(&rest),
        }
    }

    /// The double-double nearest to an MPFR value (same bounds as `from_rational`).
    pub fn from_float(f: &rug::Float) -> Self {
        let hi = f.to_f64();
        if !hi.is_finite() {
            return DoubleDouble { hi, lo: 0.0 };
        }
        let rest = rug::Float::with_val(f.prec(), f - hi);
        DoubleDouble {
            hi,
            lo: rest.to_f64(),
        }
    }
}

/// Nearest f64 to a rational (rug's own conversion rounds toward zero).
pub fn rational_to_f64_nearest(q: &rug::Rational) -> f64 {
    rug::Float::with_val(53, q).to_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rug::Rational;

    fn exact(x: DoubleDouble) -> Rational {
        Rational::from_f64(x.hi).unwrap() + Rational::from_f64(x.lo).unwrap()
    }

    #[test]
    fn error_free_transformations_are_exact() {
        let pairs = [
            (1.0, 1e-30),
            (1e16, -1.0),
            (3.0f64.sqrt(), 7.0f64.sqrt()),
            (-0.1, 0.3),
        ];
        for (a, b) in pairs {
            let (s, e) = two_sum(a, b);
            let ra = Rational::from_f64(a).unwrap();
            let rb = Rational::from_f64(b).unwrap();
            assert_eq!(
                Rational::from_f64(s).unwrap() + Rational::from_f64(e).unwrap(),
                Rational::from(&ra + &rb)
            );
            let (p, e) = two_prod(a, b);
            assert_eq!(
                Rational::from_f64(p).unwrap() + Rational::from_f64(e).unwrap(),
                ra * rb
            );
        }
    }

    #[test]
    fn products_and_sums_meet_their_bounds() {
        let a = DoubleDouble::from_rational(&Rational::from((1, 3)));
        let b = DoubleDouble::from_rational(&Rational::from((-2, 7)));
        let bound = |x: &Rational, rel: f64| x.clone().abs() * Rational::from_f64(rel).unwrap();
        let want = exact(a) * exact(b);
        let err = (&want - exact(a.times(b))).abs();
        assert!(err <= bound(&want, 2f64.powi(-102)));
        let want = exact(a) + exact(b);
        let err = (&want - exact(a.plus(b))).abs();
        assert!(err <= bound(&(exact(a).abs() + exact(b).abs()), 2f64.powi(-104)));
        let third = Rational::from((1, 3));
        let err = (&third - exact(a)).abs();
        assert!(err <= bound(&third, 2f64.powi(-105)));
    }
}
