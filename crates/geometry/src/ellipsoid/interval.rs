//! Closed intervals with MPFR endpoints rounded outward (lower bound rounded down, upper bound
//! rounded up). Every operation returns an interval that contains the exact result of the
//! operation applied to any points of its operands, so a residual computed with them is a
//! rigorous enclosure of the exact residual, not an estimate.

use rug::float::Round;
use rug::ops::{AssignRound, NegAssign};
use rug::Assign;
use rug::{Float, Rational};
use std::cmp::Ordering;

/// Working precision of the endpoints. 128 bits leaves the interval widths ~2^-120 relative,
/// far below the f64 residuals (~2^-52) they enclose.
pub const PREC: u32 = 128;

/// Where an interval lies relative to 0 (`Pos`: `lo ≥ 0`, `Neg`: `hi ≤ 0`).
#[derive(Clone, Copy)]
enum Sign {
    Pos,
    Neg,
    Straddle,
}

/// `[lo, hi]` with `lo ≤ hi`.
#[derive(Clone, Debug)]
pub struct Interval {
    lo: Float,
    hi: Float,
}

impl Interval {
    /// The exact point `x` (every f64 is exact at 128 bits).
    pub fn point(x: f64) -> Self {
        let v = Float::with_val(PREC, x);
        Interval {
            lo: v.clone(),
            hi: v,
        }
    }

    pub fn zero() -> Self {
        Interval::point(0.0)
    }

    /// The tightest 128-bit enclosure of a rational.
    pub fn from_rational(q: &Rational) -> Self {
        let (lo, _) = Float::with_val_round(PREC, q, Round::Down);
        let (hi, _) = Float::with_val_round(PREC, q, Round::Up);
        Interval { lo, hi }
    }

    /// An enclosure of `1/x` for a nonzero f64 `x`.
    pub fn recip_of(x: f64) -> Self {
        debug_assert!(x != 0.0);
        let one = Float::with_val(PREC, 1);
        let (lo, _) = Float::with_val_round(PREC, &one / x, Round::Down);
        let (hi, _) = Float::with_val_round(PREC, &one / x, Round::Up);
        Interval { lo, hi }
    }

    pub fn lo(&self) -> &Float {
        &self.lo
    }

    pub fn hi(&self) -> &Float {
        &self.hi
    }

    /// Whether the exact rational `q` lies in the interval.
    pub fn contains(&self, q: &Rational) -> bool {
        let lo = self.lo.to_rational().expect("finite endpoint");
        let hi = self.hi.to_rational().expect("finite endpoint");
        lo <= *q && *q <= hi
    }

    pub fn add(&self, o: &Interval) -> Interval {
        let mut lo = Float::new(PREC);
        let mut hi = Float::new(PREC);
        lo.assign_round(&self.lo + &o.lo, Round::Down);
        hi.assign_round(&self.hi + &o.hi, Round::Up);
        Interval { lo, hi }
    }

    /// In place `self += o` (the hot loop of every residual).
    pub fn add_assign(&mut self, o: &Interval) {
        let lo = std::mem::replace(&mut self.lo, Float::new(PREC));
        self.lo.assign_round(lo + &o.lo, Round::Down);
        let hi = std::mem::replace(&mut self.hi, Float::new(PREC));
        self.hi.assign_round(hi + &o.hi, Round::Up);
    }

    pub fn sub(&self, o: &Interval) -> Interval {
        let mut lo = Float::new(PREC);
        let mut hi = Float::new(PREC);
        lo.assign_round(&self.lo - &o.hi, Round::Down);
        hi.assign_round(&self.hi - &o.lo, Round::Up);
        Interval { lo, hi }
    }

    /// `self · x` for an exact f64 `x`.
    pub fn mul_f64(&self, x: f64) -> Interval {
        let mut lo = Float::new(PREC);
        let mut hi = Float::new(PREC);
        if x >= 0.0 {
            lo.assign_round(&self.lo * x, Round::Down);
            hi.assign_round(&self.hi * x, Round::Up);
        } else {
            lo.assign_round(&self.hi * x, Round::Down);
            hi.assign_round(&self.lo * x, Round::Up);
        }
        Interval { lo, hi }
    }

    /// `self · o`, both intervals: the endpoint products selected by the operands' signs
    /// (two MPFR products except when both straddle 0), each rounded outward.
    pub fn mul(&self, o: &Interval) -> Interval {
        use Sign::{Neg, Pos, Straddle};
        let (a, b) = (self, o);
        let down = |x: &Float, y: &Float| Float::with_val_round(PREC, x * y, Round::Down).0;
        let up = |x: &Float, y: &Float| Float::with_val_round(PREC, x * y, Round::Up).0;
        let (lo, hi) = match (a.sign(), b.sign()) {
            (Pos, Pos) => (down(&a.lo, &b.lo), up(&a.hi, &b.hi)),
            (Pos, Neg) => (down(&a.hi, &b.lo), up(&a.lo, &b.hi)),
            (Pos, Straddle) => (down(&a.hi, &b.lo), up(&a.hi, &b.hi)),
            (Neg, Pos) => (down(&a.lo, &b.hi), up(&a.hi, &b.lo)),
            (Neg, Neg) => (down(&a.hi, &b.hi), up(&a.lo, &b.lo)),
            (Neg, Straddle) => (down(&a.lo, &b.hi), up(&a.lo, &b.lo)),
            (Straddle, Pos) => (down(&a.lo, &b.hi), up(&a.hi, &b.hi)),
            (Straddle, Neg) => (down(&a.hi, &b.lo), up(&a.lo, &b.lo)),
            (Straddle, Straddle) => {
                let l1 = down(&a.lo, &b.hi);
                let l2 = down(&a.hi, &b.lo);
                let h1 = up(&a.lo, &b.lo);
                let h2 = up(&a.hi, &b.hi);
                (if l1 < l2 { l1 } else { l2 }, if h1 > h2 { h1 } else { h2 })
            }
        };
        Interval { lo, hi }
    }

    fn sign(&self) -> Sign {
        if self.lo.cmp0() != Some(Ordering::Less) {
            Sign::Pos
        } else if self.hi.cmp0() != Some(Ordering::Greater) {
            Sign::Neg
        } else {
            Sign::Straddle
        }
    }

    /// `self / o` for an interval `o` that excludes zero.
    pub fn div(&self, o: &Interval) -> Interval {
        assert!(
            o.lo.cmp0() == Some(Ordering::Greater) || o.hi.cmp0() == Some(Ordering::Less),
            "interval division by an interval containing 0"
        );
        let mut lo: Option<Float> = None;
        let mut hi: Option<Float> = None;
        for a in [&self.lo, &self.hi] {
            for b in [&o.lo, &o.hi] {
                let (d, _) = Float::with_val_round(PREC, a / b, Round::Down);
                let (u, _) = Float::with_val_round(PREC, a / b, Round::Up);
                if lo.as_ref().is_none_or(|l| d < *l) {
                    lo = Some(d);
                }
                if hi.as_ref().is_none_or(|h| u > *h) {
                    hi = Some(u);
                }
            }
        }
        Interval {
            lo: lo.expect("four quotients"),
            hi: hi.expect("four quotients"),
        }
    }

    /// `max |x|` over the interval.
    pub fn magnitude(&self) -> Float {
        let a = Float::with_val(PREC, self.lo.abs_ref());
        let b = Float::with_val(PREC, self.hi.abs_ref());
        if a > b {
            a
        } else {
            b
        }
    }

    /// An upper bound of `x²` over the interval.
    pub fn square_upper(&self) -> Float {
        let m = self.magnitude();
        let (s, _) = Float::with_val_round(PREC, m.square_ref(), Round::Up);
        s
    }
}

/// The endpoints whose products bound `a·b` from below and from above, chosen by the operands'
/// signs; both candidates of each bound when both operands straddle 0.
enum Corners<'a> {
    Two {
        lo: (&'a Float, &'a Float),
        hi: (&'a Float, &'a Float),
    },
    Four {
        lo: [(&'a Float, &'a Float); 2],
        hi: [(&'a Float, &'a Float); 2],
    },
}

fn corners<'a>(a: &'a Interval, b: &'a Interval) -> Corners<'a> {
    use Sign::{Neg, Pos, Straddle};
    let two = |lo, hi| Corners::Two { lo, hi };
    match (a.sign(), b.sign()) {
        (Pos, Pos) => two((&a.lo, &b.lo), (&a.hi, &b.hi)),
        (Pos, Neg) => two((&a.hi, &b.lo), (&a.lo, &b.hi)),
        (Pos, Straddle) => two((&a.hi, &b.lo), (&a.hi, &b.hi)),
        (Neg, Pos) => two((&a.lo, &b.hi), (&a.hi, &b.lo)),
        (Neg, Neg) => two((&a.hi, &b.hi), (&a.lo, &b.lo)),
        (Neg, Straddle) => two((&a.lo, &b.hi), (&a.lo, &b.lo)),
        (Straddle, Pos) => two((&a.lo, &b.hi), (&a.hi, &b.hi)),
        (Straddle, Neg) => two((&a.hi, &b.lo), (&a.lo, &b.lo)),
        (Straddle, Straddle) => Corners::Four {
            lo: [(&a.lo, &b.hi), (&a.hi, &b.lo)],
            hi: [(&a.lo, &b.lo), (&a.hi, &b.hi)],
        },
    }
}

/// Allocation-free updates for the residual kernels (each result rounded outward once: MPFR's
/// fused multiply-add rounds the exact `x·y ± z`).
impl Interval {
    /// `self = [x, x]` (exact).
    pub fn set_f64(&mut self, x: f64) {
        self.lo.assign(x);
        self.hi.assign(x);
    }

    /// `self = a·b + c`.
    pub fn assign_mul_add(&mut self, a: &Interval, b: &Interval, c: &Interval) {
        match corners(a, b) {
            Corners::Two { lo, hi } => {
                self.lo
                    .assign_round(lo.0.mul_add_ref(lo.1, &c.lo), Round::Down);
                self.hi
                    .assign_round(hi.0.mul_add_ref(hi.1, &c.hi), Round::Up);
            }
            Corners::Four { lo, hi } => {
                let l0 =
                    Float::with_val_round(PREC, lo[0].0.mul_add_ref(lo[0].1, &c.lo), Round::Down).0;
                let l1 =
                    Float::with_val_round(PREC, lo[1].0.mul_add_ref(lo[1].1, &c.lo), Round::Down).0;
                let h0 =
                    Float::with_val_round(PREC, hi[0].0.mul_add_ref(hi[0].1, &c.hi), Round::Up).0;
                let h1 =
                    Float::with_val_round(PREC, hi[1].0.mul_add_ref(hi[1].1, &c.hi), Round::Up).0;
                self.lo = if l0 < l1 { l0 } else { l1 };
                self.hi = if h0 > h1 { h0 } else { h1 };
            }
        }
    }

    /// `self = c − a·b`.
    pub fn assign_sub_mul(&mut self, a: &Interval, b: &Interval, c: &Interval) {
        // c − a·b ≥ c_lo − max(a·b) = −(max(a·b) − c_lo): an fms rounded up, negated.
        match corners(a, b) {
            Corners::Two { lo, hi } => {
                self.lo
                    .assign_round(hi.0.mul_sub_ref(hi.1, &c.lo), Round::Up);
                self.hi
                    .assign_round(lo.0.mul_sub_ref(lo.1, &c.hi), Round::Down);
            }
            Corners::Four { lo, hi } => {
                let l0 =
                    Float::with_val_round(PREC, hi[0].0.mul_sub_ref(hi[0].1, &c.lo), Round::Up).0;
                let l1 =
                    Float::with_val_round(PREC, hi[1].0.mul_sub_ref(hi[1].1, &c.lo), Round::Up).0;
                let h0 =
                    Float::with_val_round(PREC, lo[0].0.mul_sub_ref(lo[0].1, &c.hi), Round::Down).0;
                let h1 =
                    Float::with_val_round(PREC, lo[1].0.mul_sub_ref(lo[1].1, &c.hi), Round::Down).0;
                self.lo = if l0 > l1 { l0 } else { l1 };
                self.hi = if h0 < h1 { h0 } else { h1 };
            }
        }
        self.lo.neg_assign();
        self.hi.neg_assign();
    }

    /// `self = a·b`.
    pub fn assign_mul(&mut self, a: &Interval, b: &Interval) {
        match corners(a, b) {
            Corners::Two { lo, hi } => {
                self.lo.assign_round(lo.0 * lo.1, Round::Down);
                self.hi.assign_round(hi.0 * hi.1, Round::Up);
            }
            Corners::Four { .. } => *self = a.mul(b),
        }
    }

    /// `self += a·b`, using `scratch` (any interval) to avoid allocating.
    pub fn add_mul(&mut self, a: &Interval, b: &Interval, scratch: &mut Interval) {
        std::mem::swap(self, scratch);
        self.assign_mul_add(a, b, scratch);
    }
}

/// Adds `x` to `acc` rounding up (for upper bounds of sums of nonnegative terms).
pub fn add_up(acc: &mut Float, x: &Float) {
    let a = std::mem::replace(acc, Float::new(PREC));
    acc.assign_round(a + x, Round::Up);
}

/// `√x` rounded up, as an f64 rounded up: an f64 upper bound of the exact root.
pub fn sqrt_up_f64(x: &Float) -> f64 {
    let mut s = x.clone();
    s.sqrt_round(Round::Up);
    s.to_f64_round(Round::Up)
}

/// `√x` rounded down, as an f64 rounded down.
pub fn sqrt_down_f64(x: &Float) -> f64 {
    let mut s = x.clone();
    s.sqrt_round(Round::Down);
    s.to_f64_round(Round::Down)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: i64, d: i64) -> Rational {
        Rational::from((n, d))
    }

    #[test]
    fn operations_enclose_the_exact_result() {
        let third = Interval::from_rational(&q(1, 3));
        let seventh = Interval::recip_of(7.0);
        assert!(third.contains(&q(1, 3)));
        assert!(!third.contains(&(q(1, 3) + q(1, 1 << 40))));
        assert!(seventh.contains(&q(1, 7)));
        assert!(third.add(&seventh).contains(&q(10, 21)));
        assert!(third.sub(&seventh).contains(&q(4, 21)));
        assert!(third.mul(&seventh).contains(&q(1, 21)));
        // Every sign combination of the operands.
        let neg_third = third.mul_f64(-1.0);
        for (a, qa) in [(&third, q(1, 3)), (&neg_third, q(-1, 3))] {
            for (b, qb) in [(&seventh, q(1, 7)), (&seventh.mul_f64(-1.0), q(-1, 7))] {
                assert!(a.mul(b).contains(&Rational::from(&qa * &qb)));
                assert!(b.mul(a).contains(&Rational::from(&qa * &qb)));
            }
        }
        // Straddling operands: [-1, 2]·[-3, 5] = [-6, 10], [-1, 2]·[1/3] ∋ -1/3 and 2/3.
        let s1 = Interval {
            lo: Float::with_val(PREC, -1),
            hi: Float::with_val(PREC, 2),
        };
        let s2 = Interval {
            lo: Float::with_val(PREC, -3),
            hi: Float::with_val(PREC, 5),
        };
        let p = s1.mul(&s2);
        assert_eq!((p.lo.to_f64(), p.hi.to_f64()), (-6.0, 10.0));
        for (a, b) in [
            (&s1, &third),
            (&third, &s1),
            (&s1, &neg_third),
            (&neg_third, &s1),
        ] {
            let p = a.mul(b);
            assert!(
                p.contains(&q(-1, 3)) && p.contains(&q(2, 3))
                    || p.contains(&q(1, 3)) && p.contains(&q(-2, 3))
            );
        }
        assert!(third.mul_f64(-3.0).contains(&q(-1, 1)));
        assert!(third.div(&seventh).contains(&q(7, 3)));
        let mut acc = Interval::zero();
        for _ in 0..3 {
            acc.add_assign(&third);
        }
        assert!(acc.contains(&q(1, 1)));
    }

    #[test]
    fn in_place_updates_agree_with_the_allocating_operations() {
        let vals = [q(1, 3), q(-2, 7), q(5, 11), q(0, 1)];
        let ivs: Vec<Interval> = vals.iter().map(Interval::from_rational).collect();
        let wide = Interval {
            lo: Float::with_val(PREC, -1),
            hi: Float::with_val(PREC, 2),
        };
        let wide2 = Interval {
            lo: Float::with_val(PREC, -3),
            hi: Float::with_val(PREC, 5),
        };
        let mut all: Vec<(Interval, Vec<Rational>)> = ivs
            .iter()
            .cloned()
            .zip(vals.iter().map(|v| vec![v.clone()]))
            .collect();
        all.push((wide.clone(), vec![q(-1, 1), q(2, 1), q(1, 2)]));
        all.push((wide2.clone(), vec![q(-3, 1), q(5, 1), q(0, 1)]));
        let mut out = Interval::zero();
        let mut scratch = Interval::zero();
        for (a, pa) in &all {
            for (b, pb) in &all {
                for (c, pc) in &all {
                    for x in pa {
                        for y in pb {
                            for z in pc {
                                let xy = Rational::from(x * y);
                                out.assign_mul_add(a, b, c);
                                assert!(out.contains(&Rational::from(&xy + z)));
                                out.assign_sub_mul(a, b, c);
                                assert!(out.contains(&Rational::from(z - &xy)));
                                out.assign_mul(a, b);
                                assert!(out.contains(&xy));
                                let mut acc = c.clone();
                                acc.add_mul(a, b, &mut scratch);
                                assert!(acc.contains(&Rational::from(&xy + z)));
                            }
                        }
                    }
                }
            }
        }
        // Tight on exact points: (1/3)·3 + 0 is enclosed within 2^-120.
        out.assign_mul_add(&ivs[0], &Interval::point(3.0), &ivs[3]);
        assert!(Float::with_val(PREC, out.hi() - out.lo()) < 1e-36);
        let mut p = Interval::zero();
        p.set_f64(0.25);
        assert!(p.contains(&q(1, 4)) && p.lo() == p.hi());
    }

    #[test]
    fn squares_and_roots_round_outward() {
        let x = Interval::point(-2.0).add(&Interval::point(0.5).mul_f64(1.0)); // -1.5
        assert_eq!(x.square_upper(), 2.25);
        let both = Interval {
            lo: Float::with_val(PREC, -1),
            hi: Float::with_val(PREC, 2),
        };
        assert_eq!(both.square_upper(), 4.0);
        assert_eq!(sqrt_up_f64(&Float::with_val(PREC, 4)), 2.0);
        assert!(sqrt_up_f64(&Float::with_val(PREC, 2)) >= std::f64::consts::SQRT_2);
        assert!(sqrt_down_f64(&Float::with_val(PREC, 2)) < sqrt_up_f64(&Float::with_val(PREC, 2)));
    }
}
