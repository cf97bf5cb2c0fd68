//! Exact sums of f64 values: a "small superaccumulator" (after R. Neal, 2015). Every f64 is
//! an integer times 2^-1074; its 53-bit significand, shifted to its position, is split into
//! 32-bit chunks added to signed 64-bit bins. No rounding ever happens, so the sum is exact
//! whatever the order of additions — which also makes it independent of thread count.

use rug::Integer;

/// Bins of 32 bits cover positions 0..=2045+84 (the lowest bit is 2^-1074).
const BINS: usize = 67;
/// Additions a bin absorbs before carries must be propagated (each adds < 2^32 in magnitude).
const ADDS_BEFORE_CARRY: u32 = 1 << 30;

/// An exact accumulator of finite f64 values.
#[derive(Clone)]
pub struct SuperAccumulator {
    bins: [i64; BINS],
    adds: u32,
}

impl Default for SuperAccumulator {
    fn default() -> Self {
        Self::new()
    }
}

impl SuperAccumulator {
    pub fn new() -> Self {
        SuperAccumulator {
            bins: [0; BINS],
            adds: 0,
        }
    }

    /// Adds a finite f64 exactly. Non-finite values must be filtered out by the caller.
    #[inline]
    pub fn add(&mut self, x: f64) {
        debug_assert!(x.is_finite());
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as usize;
        let frac = bits & ((1u64 << 52) - 1);
        let (mantissa, position) = if biased == 0 {
            (frac, 0)
        } else {
            (frac | (1u64 << 52), biased - 1)
        };
        if mantissa == 0 {
            return;
        }
        let index = position >> 5;
        let shifted = (mantissa as u128) << (position & 31);
        let parts = [
            (shifted & 0xffff_ffff) as i64,
            ((shifted >> 32) & 0xffff_ffff) as i64,
            (shifted >> 64) as i64,
        ];
        if bits >> 63 == 0 {
            for (k, p) in parts.iter().enumerate() {
                self.bins[index + k] += p;
            }
        } else {
            for (k, p) in parts.iter().enumerate() {
                self.bins[index + k] -= p;
            }
        }
        self.adds += 1;
        if self.adds == ADDS_BEFORE_CARRY {
            self.propagate_carries();
        }
    }

    /// Moves each bin's bits above 32 into the next bin, so every bin but the top one lies
    /// in [0, 2^32). The represented value is unchanged.
    fn propagate_carries(&mut self) {
        for k in 0..BINS - 1 {
            let carry = self.bins[k] >> 32; // arithmetic shift: floor division
            self.bins[k] -= carry << 32;
            self.bins[k + 1] += carry;
        }
        self.adds = 0;
    }

    /// Adds another accumulator's sum.
    pub fn merge(&mut self, other: &SuperAccumulator) {
        let mut o = other.clone();
        o.propagate_carries();
        self.propagate_carries();
        for k in 0..BINS {
            self.bins[k] += o.bins[k];
        }
        self.propagate_carries();
    }

    /// The exact sum as an integer I with sum = I · 2^-1074.
    pub fn to_integer(&self) -> Integer {
        let mut acc = self.clone();
        acc.propagate_carries();
        let mut total = Integer::new();
        for k in (0..BINS).rev() {
            total <<= 32;
            total += acc.bins[k];
        }
        total
    }

    pub fn is_zero(&self) -> bool {
        let mut acc = self.clone();
        acc.propagate_carries();
        acc.bins.iter().all(|&b| b == 0)
    }
}

/// Exponent of the superaccumulator's unit: sums are integers times 2^SCALE_EXPONENT.
pub const SCALE_EXPONENT: i32 = -1074;

#[cfg(test)]
mod tests {
    use super::*;
    use rug::Rational;

    fn exact(xs: &[f64]) -> Rational {
        xs.iter()
            .map(|&x| Rational::from_f64(x).unwrap())
            .fold(Rational::new(), |a, b| a + b)
    }

    fn as_rational(acc: &SuperAccumulator) -> Rational {
        Rational::from(acc.to_integer()) >> 1074
    }

    #[test]
    fn sums_are_exact_across_the_whole_range() {
        let xs = [
            f64::MAX,
            -f64::MAX,
            5e-324,
            1.0,
            1e-300,
            -3.5,
            f64::MAX,
            2.2250738585072014e-308,
            -0.0,
            1e308,
        ];
        let mut acc = SuperAccumulator::new();
        xs.iter().for_each(|&x| acc.add(x));
        assert_eq!(as_rational(&acc), exact(&xs));
    }

    #[test]
    fn cancellation_leaves_the_tiny_part() {
        let mut acc = SuperAccumulator::new();
        for x in [1e300, 5e-324, -1e300] {
            acc.add(x);
        }
        assert_eq!(as_rational(&acc), Rational::from_f64(5e-324).unwrap());
        let mut z = SuperAccumulator::new();
        z.add(2.5);
        z.add(-2.5);
        assert!(z.is_zero());
    }

    #[test]
    fn merge_equals_sequential() {
        let mut s = 99u64;
        let xs: Vec<f64> = (0..5000)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                f64::from_bits(s >> 2) * if s & 1 == 0 { 1.0 } else { -1.0 }
            })
            .filter(|x| x.is_finite())
            .collect();
        let mut a = SuperAccumulator::new();
        let mut b = SuperAccumulator::new();
        let mut all = SuperAccumulator::new();
        for (i, &x) in xs.iter().enumerate() {
            if i % 2 == 0 {
                a.add(x)
            } else {
                b.add(x)
            }
            all.add(x);
        }
        a.merge(&b);
        assert_eq!(a.to_integer(), all.to_integer());
        assert_eq!(as_rational(&all), exact(&xs));
    }
}
