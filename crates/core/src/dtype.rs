//! The floating-point formats judged: f16, bf16, f32 and f64. Values travel as raw bits
//! (`u64`, the low bits used) so every format shares one code path; each value is an exact
//! rational, exactly representable in f64 for the three narrow formats.

use crate::error::{Error, Result};
use rug::Rational;

/// A floating-point storage format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    F16,
    BF16,
    F32,
    F64,
}

impl Dtype {
    pub const ALL: [Dtype; 4] = [Dtype::F16, Dtype::BF16, Dtype::F32, Dtype::F64];

    pub fn name(self) -> &'static str {
        match self {
            Dtype::F16 => "f16",
            Dtype::BF16 => "bf16",
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
        }
    }

    /// Storage width in bits.
    #[inline]
    pub fn bits(self) -> u32 {
        match self {
            Dtype::F16 | Dtype::BF16 => 16,
            Dtype::F32 => 32,
            Dtype::F64 => 64,
        }
    }

    /// Significand precision p in bits, the implicit bit included.
    #[inline]
    pub fn precision(self) -> i32 {
        match self {
            Dtype::F16 => 11,
            Dtype::BF16 => 8,
            Dtype::F32 => 24,
            Dtype::F64 => 53,
        }
    }

    /// Exponent of the smallest normal number (2^emin).
    pub fn emin(self) -> i32 {
        match self {
            Dtype::F16 => -14,
            Dtype::BF16 | Dtype::F32 => -126,
            Dtype::F64 => -1022,
        }
    }

    /// Exponent of the largest finite binade.
    pub fn emax(self) -> i32 {
        match self {
            Dtype::F16 => 15,
            Dtype::BF16 | Dtype::F32 => 127,
            Dtype::F64 => 1023,
        }
    }

    /// Unit roundoff u = 2^-p of round-to-nearest.
    pub fn unit_roundoff(self) -> f64 {
        pow2(-self.precision())
    }

    /// The largest finite value.
    pub fn max_finite(self) -> f64 {
        match self {
            Dtype::F64 => f64::MAX,
            _ => (2.0 - pow2(1 - self.precision())) * pow2(self.emax()),
        }
    }

    /// The smallest positive subnormal value.
    pub fn min_positive_subnormal(self) -> f64 {
        pow2(self.emin() - self.precision() + 1)
    }

    #[inline]
    fn sign_mask(self) -> u64 {
        1u64 << (self.bits() - 1)
    }

    #[inline]
    fn exponent_mask(self) -> u64 {
        let e_bits = self.bits() as i32 - self.precision();
        ((1u64 << e_bits) - 1) << (self.precision() - 1)
    }

    /// Bits of +∞.
    #[inline]
    pub fn inf_bits(self) -> u64 {
        self.exponent_mask()
    }

    /// A quiet NaN's bits.
    pub fn nan_bits(self) -> u64 {
        self.exponent_mask() | (1u64 << (self.precision() - 2))
    }

    #[inline]
    pub fn is_nan(self, bits: u64) -> bool {
        let m = bits & !self.sign_mask();
        m > self.exponent_mask()
    }

    pub fn is_infinite(self, bits: u64) -> bool {
        bits & !self.sign_mask() == self.exponent_mask()
    }

    #[inline]
    pub fn is_finite(self, bits: u64) -> bool {
        bits & self.exponent_mask() != self.exponent_mask()
    }

    #[inline]
    pub fn is_sign_negative(self, bits: u64) -> bool {
        bits & self.sign_mask() != 0
    }

    /// The value of `bits` as an f64 (exact for every format; a NaN for every NaN). Plain
    /// bit arithmetic without branches, so that loops over it vectorize (`half`'s
    /// conversions test the CPU's features on every call).
    #[inline]
    pub fn to_f64(self, bits: u64) -> f64 {
        match self {
            Dtype::F16 => f16_to_f64(bits as u16),
            Dtype::BF16 => f32::from_bits((bits as u32 & 0xffff) << 16) as f64,
            Dtype::F32 => f32::from_bits(bits as u32) as f64,
            Dtype::F64 => f64::from_bits(bits),
        }
    }

    /// The values of a slice of bits, as f64 (exact; the format's match taken once, not per
    /// element as in a loop over [`Dtype::to_f64`]; compiled for the widest vector
    /// instructions the CPU has, [`crate::vector`]).
    pub fn decode(self, bits: &[u64]) -> Vec<f64> {
        let mut values = Vec::new();
        self.decode_into(bits, &mut values);
        values
    }

    /// [`Dtype::decode`] into `values` (its old contents dropped, its allocation reused).
    pub fn decode_into(self, bits: &[u64], values: &mut Vec<f64>) {
        use crate::vector::map_into;
        crate::vector::widest(
            #[inline(always)]
            || match self {
                Dtype::F16 => map_into(bits, values, |b| Dtype::F16.to_f64(b)),
                Dtype::BF16 => map_into(bits, values, |b| Dtype::BF16.to_f64(b)),
                Dtype::F32 => map_into(bits, values, |b| Dtype::F32.to_f64(b)),
                Dtype::F64 => map_into(bits, values, |b| Dtype::F64.to_f64(b)),
            },
        )
    }

    /// Bits of an f64 that is exactly representable in this format (NaN maps to NaN).
    #[inline]
    fn bits_of_representable(self, x: f64) -> u64 {
        match self {
            Dtype::F16 => half::f16::from_f64(x).to_bits() as u64,
            Dtype::BF16 => half::bf16::from_f64(x).to_bits() as u64,
            Dtype::F32 => (x as f32).to_bits() as u64,
            Dtype::F64 => x.to_bits(),
        }
    }

    /// The exact rational value of finite bits; `None` for NaN and ±∞.
    pub fn to_rational(self, bits: u64) -> Option<Rational> {
        Rational::from_f64(self.to_f64(bits))
    }

    /// Round-to-nearest-even of an f64 to this format (subnormals, overflow to ±∞, signed
    /// zeros), returned as bits. Exact: no double rounding.
    #[inline]
    pub fn round_f64(self, x: f64) -> u64 {
        if self == Dtype::F32 {
            // Rust's f64 → f32 conversion is IEEE round-to-nearest-even (subnormals, overflow).
            return (x as f32).to_bits() as u64;
        }
        if self == Dtype::F64 || !x.is_finite() {
            return self.bits_of_representable(x);
        }
        let a = x.abs();
        if a == 0.0 {
            return self.bits_of_representable(x);
        }
        // The quantum (ulp) of the binade of |x|, never below the subnormal quantum.
        let e = exponent_of(a).max(self.emin());
        let quantum = pow2(e - self.precision() + 1);
        // x / quantum and the product back are exact: scaling by a power of two within range.
        let rounded = (a / quantum).round_ties_even() * quantum;
        let signed = if x < 0.0 { -rounded } else { rounded };
        if rounded > self.max_finite() {
            return self.bits_of_representable(if x < 0.0 {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        self.bits_of_representable(signed)
    }

    /// Round-to-nearest-even of the exact sum hi + lo, where hi = fl64(hi + lo) (a normalized
    /// double-double). Correct for every format: for the narrow formats every midpoint and the
    /// overflow threshold are f64 numbers, so hi and hi + lo lie on the same side of each,
    /// except when hi is itself a midpoint; then lo decides.
    #[inline]
    pub fn round_double_double(self, hi: f64, lo: f64) -> u64 {
        let y = self.round_f64(hi);
        if self == Dtype::F64 || lo == 0.0 || !hi.is_finite() {
            return y;
        }
        let yv = self.to_f64(y);
        if yv == hi {
            return y;
        }
        // Neighbour of y on hi's side; hi is a tie iff it is the midpoint of y and it.
        let other = if hi > yv {
            self.next_up(y)
        } else {
            self.next_down(y)
        };
        let mid = self.midpoint(y, other);
        if mid != hi {
            return y;
        }
        if (lo > 0.0) == (self.to_f64(other) > yv) {
            other
        } else {
            y
        }
    }

    /// Midpoint of two adjacent values as an f64, exact for the narrow formats; the midpoint
    /// between the largest finite value and ∞ is the overflow threshold max + ulp/2.
    pub fn midpoint(self, a: u64, b: u64) -> f64 {
        let (va, vb) = (self.to_f64(a), self.to_f64(b));
        let finite = |v: f64, w: f64| {
            if v.is_infinite() {
                // The value the next binade would start at: max + ulp(max).
                w.signum() * pow2(self.emax() + 1)
            } else {
                v
            }
        };
        (finite(va, vb) + finite(vb, va)) / 2.0
    }

    /// The next value toward +∞ (−0 and +0 both step to the smallest positive subnormal;
    /// +∞ and NaN stay).
    #[inline]
    pub fn next_up(self, bits: u64) -> u64 {
        if self.is_nan(bits) || bits == self.inf_bits() {
            return bits;
        }
        let sign = self.sign_mask();
        if bits & !sign == 0 {
            return 1;
        }
        if bits & sign == 0 {
            bits + 1
        } else {
            bits - 1
        }
    }

    /// The next value toward −∞.
    #[inline]
    pub fn next_down(self, bits: u64) -> u64 {
        let neg = bits ^ self.sign_mask();
        self.next_up(neg) ^ self.sign_mask()
    }

    /// Position on the ordered line of values: ±0 → 0, next_up adds 1, ±∞ are one step past
    /// ±max. Not defined for NaN.
    #[inline]
    pub fn ordinal(self, bits: u64) -> i64 {
        let mag = (bits & !self.sign_mask()) as i64;
        if self.is_sign_negative(bits) {
            -mag
        } else {
            mag
        }
    }

    /// Distance in ULPs (steps on the ordered line) between two non-NaN values.
    #[inline]
    pub fn ulp_distance(self, a: u64, b: u64) -> u64 {
        self.ordinal(a).abs_diff(self.ordinal(b))
    }

    /// The spacing of this format's values at magnitude |x| (the ulp of the binade that holds
    /// x, subnormal spacing below the normal range).
    pub fn ulp_at(self, x: f64) -> f64 {
        let a = x.abs();
        if a == 0.0 || !a.is_finite() {
            return self.min_positive_subnormal();
        }
        pow2(exponent_of(a).max(self.emin()) - self.precision() + 1)
    }

    /// Hex rendering of bits at this format's width.
    pub fn hex(self, bits: u64) -> String {
        format!("0x{:0w$x}", bits, w = (self.bits() / 4) as usize)
    }
}

impl std::fmt::Display for Dtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Dtype {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "f16" | "float16" | "half" => Ok(Dtype::F16),
            "bf16" | "bfloat16" => Ok(Dtype::BF16),
            "f32" | "float32" | "float" => Ok(Dtype::F32),
            "f64" | "float64" | "double" => Ok(Dtype::F64),
            other => Err(Error::usage(format!(
                "unknown dtype '{other}' (f16, bf16, f32, f64)"
            ))),
        }
    }
}

/// The value of binary16 bits as an f64, exactly (a NaN for every NaN), with selections
/// where `half` branches ([`Dtype::to_f64`]).
#[inline(always)]
fn f16_to_f64(h: u16) -> f64 {
    let sign = ((h & 0x8000) as u64) << 48;
    let exponent = ((h >> 10) & 0x1f) as u64;
    let mantissa = (h & 0x3ff) as u64;
    // Normal: (1 + m/2^10)·2^(e − 15), an f64 of exponent e − 15 + 1023.
    let normal = f64::from_bits(sign | ((exponent + 1008) << 52) | (mantissa << 42));
    // Subnormal or zero: m·2^-24, signed.
    let subnormal = f64::from_bits((mantissa as f64 / 16_777_216.0).to_bits() | sign);
    // ±∞, or a NaN (with the f16's payload).
    let special = f64::from_bits(sign | 0x7ff0_0000_0000_0000 | (mantissa << 42));
    match exponent {
        0 => subnormal,
        31 => special,
        _ => normal,
    }
}

/// 2^e as an f64 for any e in the f64 range, subnormal powers included.
pub fn pow2(e: i32) -> f64 {
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

/// floor(log2 |x|) of a finite nonzero f64, subnormals included.
pub fn exponent_of(x: f64) -> i32 {
    let bits = x.abs().to_bits();
    let biased = (bits >> 52) as i32;
    if biased == 0 {
        // Subnormal: the leading one's position in the 52-bit fraction.
        let frac = bits & ((1u64 << 52) - 1);
        -1074 + (63 - frac.leading_zeros() as i32)
    } else {
        biased - 1023
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The branch-free conversions give `half`'s value for every 16-bit pattern: the same
    /// bits, or a NaN where `half` gives one.
    #[test]
    fn to_f64_is_halfs_conversion_for_every_bit_pattern() {
        for bits in 0..=u16::MAX {
            for (dtype, theirs) in [
                (Dtype::F16, half::f16::from_bits(bits).to_f64()),
                (Dtype::BF16, half::bf16::from_bits(bits).to_f64()),
            ] {
                let ours = dtype.to_f64(bits as u64);
                if theirs.is_nan() {
                    assert!(ours.is_nan(), "{dtype} {bits:#06x}: {ours}");
                } else {
                    assert_eq!(ours.to_bits(), theirs.to_bits(), "{dtype} {bits:#06x}");
                }
            }
        }
    }
    use rug::float::Round;
    use rug::Float;

    /// The independent route: MPFR at the format's precision for normal results; below the
    /// normal range, exact rational rounding to the fixed subnormal quantum (ties to even).
    fn mpfr_round(dt: Dtype, x: &Rational) -> f64 {
        let f = Float::with_val_round(dt.precision() as u32, x, Round::Nearest).0;
        let r: f64 = if f.to_f64().abs() < pow2(dt.emin()) {
            let q = Rational::from_f64(dt.min_positive_subnormal()).unwrap();
            let scaled = Rational::from(x / &q);
            let floor = Rational::from(scaled.floor_ref());
            let frac = Rational::from(&scaled - &floor);
            let half = Rational::from((1, 2));
            let floor_int = floor.numer().clone();
            let n = if frac > half || (frac == half && floor_int.is_odd()) {
                floor_int + 1u32
            } else {
                floor_int
            };
            // Rounding to zero keeps the sign of x, as IEEE rounding does.
            (n.to_f64() * dt.min_positive_subnormal()).copysign(x.to_f64())
        } else {
            f.to_f64()
        };
        if r.abs() > dt.max_finite() {
            r.signum() * f64::INFINITY
        } else {
            r
        }
    }

    #[test]
    fn round_f64_matches_mpfr_on_boundaries() {
        for dt in [Dtype::F16, Dtype::BF16, Dtype::F32] {
            let mut xs = vec![
                dt.max_finite(),
                dt.midpoint(dt.bits_of_representable(dt.max_finite()), dt.inf_bits()),
                dt.min_positive_subnormal() / 2.0,
                dt.min_positive_subnormal() * 1.5,
                dt.min_positive_subnormal() * 2.5,
                pow2(dt.emin()) * (1.0 - pow2(-30)),
                1.0 + dt.unit_roundoff(),
                1.0 + 3.0 * dt.unit_roundoff(),
                1.0 - dt.unit_roundoff() / 2.0,
            ];
            let mut s = 0x1234_5678_9abc_def0u64;
            for _ in 0..20000 {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let e = (s >> 40) as i32 % (dt.emax() - dt.emin() + 2 * dt.precision() + 4)
                    + dt.emin()
                    - dt.precision()
                    - 2;
                let m = 1.0 + (s >> 11) as f64 * pow2(-53);
                xs.push(m * pow2(e));
            }
            for x in xs {
                for v in [x, -x] {
                    let want = mpfr_round(dt, &Rational::from_f64(v).unwrap());
                    let got = dt.to_f64(dt.round_f64(v));
                    assert_eq!(got.to_bits(), want.to_bits(), "{dt} {v:e}");
                }
            }
        }
    }

    #[test]
    fn double_double_ties_follow_the_low_part() {
        let dt = Dtype::F32;
        let mid = 1.0 + pow2(-24); // midpoint of 1 and 1 + 2^-23
        assert_eq!(dt.to_f64(dt.round_double_double(mid, 0.0)), 1.0);
        assert_eq!(
            dt.to_f64(dt.round_double_double(mid, 1e-30)),
            1.0 + pow2(-23)
        );
        assert_eq!(dt.to_f64(dt.round_double_double(mid, -1e-30)), 1.0);
        let mid_odd = 1.0 + 3.0 * pow2(-24); // ties to even go up here
        assert_eq!(
            dt.to_f64(dt.round_double_double(mid_odd, 0.0)),
            1.0 + 4.0 * pow2(-24)
        );
        assert_eq!(
            dt.to_f64(dt.round_double_double(mid_odd, -1e-30)),
            1.0 + 2.0 * pow2(-23) - pow2(-23)
        );
        let thr = dt.midpoint(dt.round_f64(dt.max_finite()), dt.inf_bits());
        assert!(dt.is_infinite(dt.round_double_double(thr, 0.0)));
        assert!(dt.is_finite(dt.round_double_double(thr, -1e-300)));
    }

    #[test]
    fn ordinal_steps_and_zero_signs() {
        for dt in Dtype::ALL {
            let zero = 0u64;
            let neg_zero = dt.sign_mask();
            assert_eq!(dt.ulp_distance(zero, neg_zero), 0);
            assert_eq!(dt.ulp_distance(dt.next_up(neg_zero), dt.next_down(zero)), 2);
            let max = dt.inf_bits() - 1;
            assert_eq!(dt.next_up(max), dt.inf_bits());
            assert_eq!(dt.to_f64(max), dt.max_finite());
            assert!(dt.is_nan(dt.nan_bits()));
            assert_eq!(dt.ulp_at(1.0), 2.0 * dt.unit_roundoff());
        }
    }

    #[test]
    fn exponent_and_pow2_cover_subnormals() {
        assert_eq!(exponent_of(5e-324), -1074);
        assert_eq!(exponent_of(1.0), 0);
        assert_eq!(exponent_of(0.75), -1);
        assert_eq!(pow2(-1074), 5e-324);
        assert_eq!(pow2(1023), 8.98846567431158e307);
    }
}
