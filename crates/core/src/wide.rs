//! [`Wide`]: a real number as an f64 significand and an i32 exponent, for the few formulas
//! whose factors span f64's whole range and beyond (the judge's bound B_i, reference-f64's
//! last step), where a product or sum must never round to 0 or ∞ on the way while the final
//! value is representable: a tiny |x_i|/s times a huge γ_i, a huge γ_i·κ_i times u.
//!
//! Every operation rounds once, to 53 bits, to nearest even, as f64 does; only the exponent
//! is unbounded (±2^31, far beyond any product of a few f64s and MPFR scales). Hence:
//! - a `Wide` computation equals MPFR's at precision 53 (whose exponent range is as wide),
//!   operation for operation, bit for bit — the unit tests check exactly that;
//! - where the same computation in f64 keeps every intermediate in f64's normal range (or
//!   exactly 0), it gives the same bits as f64. A formula written once over [`Real`] can so
//!   run in plain f64 on ordinary inputs and in `Wide` elsewhere, with one set of results.
//!
//! Zero is unsigned (+0). ±∞ and NaN inputs are carried as their f64 and propagate as in f64.

use crate::dtype::pow2;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// m·2^e with 1 ≤ |m| < 2 (finite nonzero values), m = 0 (zero, e = 0), or m non-finite
/// (e = 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wide {
    m: f64,
    e: i32,
}

const EXPONENT_BITS: u64 = 0x7ff << 52;

impl Wide {
    pub const ZERO: Wide = Wide { m: 0.0, e: 0 };

    /// x, exactly (subnormals included).
    #[inline]
    pub fn of(x: f64) -> Wide {
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        if biased == 0x7ff {
            return Wide { m: x, e: 0 };
        }
        if biased == 0 {
            if x == 0.0 {
                return Wide::ZERO;
            }
            // Subnormal: 2^64·x is normal and exact.
            let w = Wide::of(x * pow2(64));
            return Wide {
                m: w.m,
                e: w.e - 64,
            };
        }
        Wide {
            m: f64::from_bits((bits & !EXPONENT_BITS) | (1023 << 52)),
            e: biased - 1023,
        }
    }

    /// m·2^e for a finite or non-finite m of any magnitude (exact: only the exponent moves).
    #[inline]
    fn normalized(m: f64, e: i32) -> Wide {
        let w = Wide::of(m);
        if w.m == 0.0 || !w.m.is_finite() {
            return w;
        }
        Wide { m: w.m, e: w.e + e }
    }

    /// The nearest `Wide` to an MPFR value (one rounding to 53 bits; MPFR's exponent range
    /// fits in ours for every value this crate forms).
    pub fn from_float(f: &rug::Float) -> Wide {
        if f.is_zero() {
            return Wide::ZERO;
        }
        if !f.is_finite() {
            return Wide {
                m: f.to_f64(),
                e: 0,
            };
        }
        // m in [0.5, 1), rounded to nearest.
        let (m, e) = f.to_f64_exp();
        Wide::normalized(2.0 * m, e - 1)
    }

    /// The value as an MPFR float of `precision` bits (exact for precision ≥ 53).
    pub fn to_float(self, precision: u32) -> rug::Float {
        let mut f = rug::Float::with_val(precision, self.m);
        if self.m.is_finite() {
            f <<= self.e;
        }
        f
    }

    /// The nearest f64 (one rounding; 0 or ±∞ beyond f64's range, subnormal where it falls
    /// there).
    #[inline]
    pub fn to_f64(self) -> f64 {
        if !self.m.is_finite() {
            return self.m;
        }
        if let Some(v) = self.to_normal_f64() {
            // The common case, without ldexp's call.
            return v;
        }
        // Past ±1100 the result is 0 or ±∞ whatever the exponent; libm's ldexp rounds once
        // (it never rounds twice into the subnormal range).
        libm::ldexp(self.m, self.e.clamp(-1100, 1100))
    }

    /// The value as an f64 where that is exact and normal (or 0); None otherwise.
    #[inline]
    pub fn to_normal_f64(self) -> Option<f64> {
        // 1 ≤ |m| < 2 and a normal exponent: m·2^e is exact (zero is m = 0, e = 0).
        (self.m.is_finite() && (-1022..=1023).contains(&self.e)).then(|| self.m * pow2(self.e))
    }

    /// floor(log2 |v|) of a finite nonzero value; None for 0 and non-finite values.
    #[inline]
    pub fn exponent(self) -> Option<i32> {
        (self.m != 0.0 && self.m.is_finite()).then_some(self.e)
    }

    /// v·2^k, exactly.
    #[inline]
    pub fn scaled(self, k: i32) -> Wide {
        if self.m == 0.0 || !self.m.is_finite() {
            return self;
        }
        Wide {
            m: self.m,
            e: self.e + k,
        }
    }

    #[inline]
    pub fn abs(self) -> Wide {
        Wide {
            m: self.m.abs(),
            e: self.e,
        }
    }

    /// √v, one rounding (f64's correctly rounded √ of the significand, or of twice it for an
    /// odd exponent); NaN below 0.
    #[inline]
    pub fn sqrt(self) -> Wide {
        if self.m == 0.0 || !self.m.is_finite() || self.m < 0.0 {
            return Wide {
                m: self.m.sqrt(),
                e: 0,
            };
        }
        let odd = self.e.rem_euclid(2);
        Wide::normalized((self.m * (1 + odd) as f64).sqrt(), (self.e - odd) / 2)
    }

    pub fn is_zero(self) -> bool {
        self.m == 0.0
    }

    pub fn is_finite(self) -> bool {
        self.m.is_finite()
    }

    pub fn is_nan(self) -> bool {
        self.m.is_nan()
    }
}

impl Default for Wide {
    fn default() -> Self {
        Wide::ZERO
    }
}

impl From<f64> for Wide {
    fn from(x: f64) -> Wide {
        Wide::of(x)
    }
}

impl Mul for Wide {
    type Output = Wide;
    /// One rounding: the significands' product (in [1, 4)) rounds as f64's product would.
    #[inline]
    fn mul(self, o: Wide) -> Wide {
        Wide::normalized(self.m * o.m, self.e + o.e)
    }
}

impl Div for Wide {
    type Output = Wide;
    /// One rounding: the significands' quotient lies in (1/2, 2).
    #[inline]
    fn div(self, o: Wide) -> Wide {
        Wide::normalized(self.m / o.m, self.e - o.e)
    }
}

impl Add for Wide {
    type Output = Wide;
    /// One rounding: the smaller operand is aligned to the larger one's exponent (exact for
    /// shifts up to 60, its significand stays normal); past 60 it lies below half an ulp of
    /// the larger one, which is then the correctly rounded sum.
    #[inline]
    fn add(self, o: Wide) -> Wide {
        if !self.m.is_finite() || !o.m.is_finite() {
            return Wide {
                m: self.m + o.m,
                e: 0,
            };
        }
        if o.m == 0.0 {
            return self;
        }
        if self.m == 0.0 {
            return o;
        }
        let (hi, lo) = if self.e >= o.e { (self, o) } else { (o, self) };
        let shift = hi.e as i64 - lo.e as i64;
        if shift > 60 {
            return hi;
        }
        Wide::normalized(hi.m + lo.m * pow2(-(shift as i32)), hi.e)
    }
}

impl Neg for Wide {
    type Output = Wide;
    #[inline]
    fn neg(self) -> Wide {
        Wide {
            m: -self.m,
            e: self.e,
        }
    }
}

impl Sub for Wide {
    type Output = Wide;
    #[inline]
    fn sub(self, o: Wide) -> Wide {
        self + (-o)
    }
}

/// The arithmetic a formula needs to run in f64 and in [`Wide`] alike (written once, the two
/// give the same bits wherever f64 does not under- or overflow: see the module comment).
pub trait Real:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// x, exactly.
    fn of(x: f64) -> Self;
    fn abs(self) -> Self;
}

impl Real for f64 {
    #[inline]
    fn of(x: f64) -> f64 {
        x
    }
    #[inline]
    fn abs(self) -> f64 {
        f64::abs(self)
    }
}

impl Real for Wide {
    #[inline]
    fn of(x: f64) -> Wide {
        Wide::of(x)
    }
    #[inline]
    fn abs(self) -> Wide {
        Wide::abs(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};
    use rug::Float;

    /// A finite f64 of any exponent (subnormals and the ends of the range included), any sign.
    fn any_f64(rng: &mut ChaCha8Rng) -> f64 {
        loop {
            let x = f64::from_bits(rng.next_u64());
            if x.is_finite() {
                return x;
            }
        }
    }

    /// A Wide far outside f64's range: an f64 significand times 2^(±3000).
    fn any_wide(rng: &mut ChaCha8Rng) -> Wide {
        let k = (rng.next_u32() % 6001) as i32 - 3000;
        Wide::of(any_f64(rng)).scaled(k)
    }

    fn mpfr(w: Wide) -> Float {
        w.to_float(53)
    }

    /// The same value, as MPFR at 53 bits sees it (exactly representable in both).
    fn same(w: Wide, f: &Float) -> bool {
        if w.is_zero() {
            return f.is_zero();
        }
        w.to_float(200) == *f
    }

    #[test]
    fn of_is_exact_and_normalized() {
        for x in [
            1.0,
            -1.5,
            3.0,
            5e-324,
            -2.2250738585072014e-308,
            1e-310,
            f64::MAX,
        ] {
            let w = Wide::of(x);
            assert!((1.0..2.0).contains(&w.m.abs()), "{x:e}: {w:?}");
            assert_eq!(w.to_f64(), x);
            assert_eq!(w.to_float(64), Float::with_val(64, x));
        }
        assert_eq!(Wide::of(5e-324).exponent(), Some(-1074));
        assert_eq!(Wide::of(-0.0), Wide::ZERO);
        assert!(Wide::of(f64::NAN).is_nan());
        assert_eq!(Wide::of(f64::INFINITY).to_f64(), f64::INFINITY);
    }

    /// Each operation is MPFR's at precision 53 with a wide exponent, bit for bit, on
    /// operands spanning 2^±3000 — including sums that cancel and operands far apart.
    #[test]
    fn operations_equal_mpfr_at_53_bits() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for i in 0..20_000 {
            let a = any_wide(&mut rng);
            // Every third pair is close in exponent (cancellation, carries, ties).
            let b = match i % 3 {
                0 => any_wide(&mut rng),
                1 => Wide::of(any_f64(&mut rng)).scaled(a.e - 1023 + (rng.next_u32() % 120) as i32),
                _ => -a + Wide::of(f64::from_bits(rng.next_u64() % 4096)).scaled(a.e + 1074 - 60),
            };
            let (fa, fb) = (mpfr(a), mpfr(b));
            let sum = Float::with_val(53, &fa + &fb);
            let difference = Float::with_val(53, &fa - &fb);
            let product = Float::with_val(53, &fa * &fb);
            assert!(same(a + b, &sum), "{a:?} + {b:?}: {:?} vs {sum}", a + b);
            assert!(same(a - b, &difference), "{a:?} - {b:?}");
            assert!(same(a * b, &product), "{a:?} * {b:?}");
            if !b.is_zero() {
                let quotient = Float::with_val(53, &fa / &fb);
                assert!(same(a / b, &quotient), "{a:?} / {b:?}");
            }
            let root = Float::with_val(53, fa.clone().abs().sqrt_ref());
            assert!(same(a.abs().sqrt(), &root), "√{a:?}");
        }
    }

    /// Within f64's normal range the same operations give f64's own bits.
    #[test]
    fn in_range_operations_equal_f64() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut tested = 0;
        while tested < 20_000 {
            let (a, b) = (any_f64(&mut rng), any_f64(&mut rng));
            for (w, f) in [
                (Wide::of(a) + Wide::of(b), a + b),
                (Wide::of(a) - Wide::of(b), a - b),
                (Wide::of(a) * Wide::of(b), a * b),
                (Wide::of(a) / Wide::of(b), a / b),
                (Wide::of(a.abs()).sqrt(), a.abs().sqrt()),
            ] {
                if f.is_normal() {
                    assert_eq!(w.to_f64().to_bits(), f.to_bits(), "{a:e}, {b:e}");
                    tested += 1;
                }
            }
        }
    }

    /// From and to MPFR and f64 at the ends of f64's range: one rounding each, to nearest.
    #[test]
    fn conversions_round_once() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for _ in 0..20_000 {
            let w = any_wide(&mut rng);
            // Into the subnormal range and past both ends: MPFR's own double conversion.
            let f = w.to_float(53);
            assert_eq!(w.to_f64().to_bits(), f.to_f64().to_bits(), "{w:?}");
            // From 200 bits: the nearest 53-bit value.
            let wide = Float::with_val(200, &f * Float::with_val(200, 1.0 + 1e-40));
            let back = Wide::from_float(&wide);
            assert!(same(back, &Float::with_val(53, &wide)), "{w:?}");
        }
        // Half the smallest subnormal rounds to even (0); just above it rounds up.
        let just_above_half = Wide::of(1.0 + f64::EPSILON).scaled(-1075);
        assert_eq!(just_above_half.to_f64(), 5e-324);
        assert_eq!(Wide::of(1.0).scaled(-1075).to_f64(), 0.0);
        assert_eq!(Wide::of(1.0).scaled(1024).to_f64(), f64::INFINITY);
        assert_eq!(Wide::of(-1.5).scaled(-5000).to_f64(), 0.0);
        assert_eq!(Wide::of(f64::MAX).to_normal_f64(), Some(f64::MAX));
        assert_eq!(Wide::of(1e-310).to_normal_f64(), None);
    }

    /// The pattern this type exists for: a product that under- or overflows on the way in f64.
    #[test]
    fn products_survive_the_way() {
        let (tiny, huge) = (Wide::of(2e-242) / Wide::of(7e302), Wide::of(1e300));
        assert_eq!(2e-242 / 7e302 * 1e300, 0.0);
        let p = (tiny * huge).to_f64();
        assert!((p / (2e-242 / 7.0 * 1e-2) - 1.0).abs() < 1e-15, "{p:e}");
        let over = Wide::of(1e300) * Wide::of(1e10) * Wide::of(1e-16);
        assert!((over.to_f64() / 1e294 - 1.0).abs() < 1e-15);
        assert!((1e300 * 1e10 * 1e-16f64).is_infinite());
    }
}
