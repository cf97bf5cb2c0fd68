//! Certified signs from floating-point arithmetic: a float result together with a rigorous
//! bound on its distance from the exact value. When the bound is smaller than the result the
//! sign is proved; otherwise the caller decides exactly (rug). This is the fast path of
//! certificate verification (a "floating-point filter", as in robust geometric predicates);
//! the simple exact checker in `certificate.rs` never uses it.
//!
//! # The bound for a dot product
//! Let s = Σ_{k<m} p_k q_k with f64 inputs and let Ŝ be the recursive sum of the rounded
//! products, T̂ the same sum of |fl(p_k q_k)|. Every term passes through at most m roundings,
//! so without underflow |Ŝ − s| ≤ γ_m T with T = Σ|p_k q_k| and γ_m = mu/(1 − mu), u = 2^-53
//! (Higham, *Accuracy and Stability*, §3.1). A product that underflows adds an absolute error
//! of at most 2^-1075; additions of subnormals are exact. So
//! |Ŝ − s| ≤ γ_m T + m·2^-1074, and T ≤ (T̂ + m·2^-1074)/(1 − γ_m). For mu ≤ 1/100 this gives
//! |Ŝ − s| ≤ 2mu·T̂ + 2m·2^-1074. We use β = fl(fl(4mu)·T̂) + 2^-990 (computed in round to
//! nearest, so β ≥ (1−u)²·4mu·T̂ + 2^-991 ≥ 2mu·T̂ + 2m·2^-1074 for m ≤ 2^40), and the
//! enclosure [next_down(fl(Ŝ − β)), next_up(fl(Ŝ + β))].
//!
//! Inputs that are themselves rounded (an exact rational converted to f64, error < 1 ulp, at
//! most 2u relative in the normal range) are covered by counting two extra roundings per
//! inexact factor: `extra` in [`dot`]. The caller guarantees such inputs are normal or zero.

/// The largest number of roundings per term the bound is derived for.
const MAX_TERMS: usize = 1 << 40;

/// The next f64 toward +∞ (NaN and +∞ stay). Mirrors `Dtype::F64.next_up`, inlined here
/// because it sits in the innermost loops.
#[inline]
pub fn next_up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

/// The next f64 toward −∞.
#[inline]
pub fn next_down(x: f64) -> f64 {
    -next_up(-x)
}

/// A closed interval [lo, hi] that is known to contain an exact real value. Operations round
/// outward (one ulp each way), so the enclosure stays rigorous. Anything that is not finite
/// widens to the whole line, so a NaN can never masquerade as a sign.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub const WHOLE: Interval = Interval {
        lo: f64::NEG_INFINITY,
        hi: f64::INFINITY,
    };

    /// The exact value x (an f64 is an exact rational).
    pub fn point(x: f64) -> Self {
        if x.is_finite() {
            Interval { lo: x, hi: x }
        } else {
            Self::WHOLE
        }
    }

    /// An enclosure of a value whose f64 approximation `x` is off by less than one ulp (any
    /// rounding direction): two ulps either way.
    pub fn around(x: f64) -> Self {
        if x.is_finite() {
            Self::checked(next_down(next_down(x)), next_up(next_up(x)))
        } else {
            Self::WHOLE
        }
    }

    fn checked(lo: f64, hi: f64) -> Self {
        if lo.is_nan() || hi.is_nan() || lo > hi {
            Self::WHOLE
        } else {
            Interval { lo, hi }
        }
    }

    /// Proved > 0.
    pub fn is_pos(&self) -> bool {
        self.lo > 0.0
    }

    /// Proved < 0.
    pub fn is_neg(&self) -> bool {
        self.hi < 0.0
    }

    /// The proved sign, if any (zero is never proved: an exact zero needs the exact path).
    pub fn sign(&self) -> Option<std::cmp::Ordering> {
        if self.is_pos() {
            Some(std::cmp::Ordering::Greater)
        } else if self.is_neg() {
            Some(std::cmp::Ordering::Less)
        } else {
            None
        }
    }

    /// The product, rounded outward.
    fn times(self, o: Interval) -> Interval {
        if !(self.lo.is_finite() && self.hi.is_finite() && o.lo.is_finite() && o.hi.is_finite()) {
            return Self::WHOLE;
        }
        let p = [
            self.lo * o.lo,
            self.lo * o.hi,
            self.hi * o.lo,
            self.hi * o.hi,
        ];
        let lo = p.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Self::checked(next_down(lo), next_up(hi))
    }

    /// x² (tighter than the product when the interval straddles zero).
    pub fn square(self) -> Interval {
        let m = self.times(self);
        if self.lo <= 0.0 && self.hi >= 0.0 {
            Interval { lo: 0.0, hi: m.hi }
        } else {
            Interval {
                lo: m.lo.max(0.0),
                hi: m.hi,
            }
        }
    }
}

impl std::ops::Add for Interval {
    type Output = Interval;
    fn add(self, o: Interval) -> Interval {
        Self::checked(next_down(self.lo + o.lo), next_up(self.hi + o.hi))
    }
}

impl std::ops::Sub for Interval {
    type Output = Interval;
    fn sub(self, o: Interval) -> Interval {
        Self::checked(next_down(self.lo - o.hi), next_up(self.hi - o.lo))
    }
}

impl std::ops::Mul for Interval {
    type Output = Interval;
    fn mul(self, o: Interval) -> Interval {
        self.times(o)
    }
}

impl std::ops::Neg for Interval {
    type Output = Interval;
    fn neg(self) -> Interval {
        Interval {
            lo: -self.hi,
            hi: -self.lo,
        }
    }
}

/// An enclosure of Σ_k a_k b_k computed in f64. `extra` counts additional relative roundings
/// of u in each term's factors (2 per factor that is an f64 approximation of an exact value,
/// see the module docs); 0 when both factors are exact f64 values.
pub fn dot(a: &[f64], b: &[f64], extra: usize) -> Interval {
    debug_assert_eq!(a.len(), b.len());
    let mut s = 0.0f64;
    let mut t = 0.0f64;
    for (x, y) in a.iter().zip(b) {
        let p = x * y;
        s += p;
        t += p.abs();
    }
    enclose(s, t, a.len() + extra)
}

/// Ŝ and T̂ of the score v·h + c (c an exact f64): the plain sum and the sum of absolute
/// values of the rounded terms, in one pass, for [`cmp_sums`].
#[inline]
pub fn score_sums(v: &[f64], h: &[f64], c: f64) -> (f64, f64) {
    let mut s = 0.0f64;
    let mut t = 0.0f64;
    for (x, y) in v.iter().zip(h) {
        let p = x * y;
        s += p;
        t += p.abs();
    }
    (s + c, t + c.abs())
}

/// The proved sign of s_a − s_b for two sums of `m` rounded terms, given their (Ŝ, T̂) from
/// [`score_sums`], or `None` when the floats cannot tell. With β = fl(4mu·T̂) + 2^-990 as in
/// [`enclose`] (|Ŝ − s| ≤ β), D = fl(Ŝ_a − Ŝ_b) and B = fl(β_a + β_b): s_a − s_b ≥
/// D/(1+u) − B/(1−u) > 0 when D > fl(B·(1 + 4u)), and symmetrically for < 0. No directed
/// rounding is needed, which keeps the hot loop short.
#[inline]
pub fn cmp_sums(a: (f64, f64), b: (f64, f64), m: usize) -> Option<std::cmp::Ordering> {
    if !(a.0.is_finite() && a.1.is_finite() && b.0.is_finite() && b.1.is_finite()) || m >= MAX_TERMS
    {
        return None;
    }
    let four_mu = (4 * m.max(1)) as f64 * (f64::EPSILON / 2.0);
    let tiny = crate::dtype::pow2(-990);
    let bound = ((four_mu * a.1 + tiny) + (four_mu * b.1 + tiny)) * (1.0 + 2.0 * f64::EPSILON);
    let diff = a.0 - b.0;
    if !bound.is_finite() {
        None
    } else if diff > bound {
        Some(std::cmp::Ordering::Greater)
    } else if -diff > bound {
        Some(std::cmp::Ordering::Less)
    } else {
        None
    }
}

/// The enclosure of a sum Ŝ of `m`-rounding terms whose absolute sum is T̂ (module docs).
pub fn enclose(s: f64, t: f64, m: usize) -> Interval {
    if !(s.is_finite() && t.is_finite()) || m >= MAX_TERMS {
        return Interval::WHOLE;
    }
    let four_mu = (4 * m.max(1)) as f64 * f64::EPSILON / 2.0;
    let beta = four_mu * t + crate::dtype::pow2(-990);
    Interval::checked(next_down(s - beta), next_up(s + beta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rug::Rational;

    fn exact_dot(a: &[f64], b: &[f64]) -> Rational {
        let mut s = Rational::new();
        for (x, y) in a.iter().zip(b) {
            s += Rational::from_f64(*x).unwrap() * Rational::from_f64(*y).unwrap();
        }
        s
    }

    fn contains(iv: Interval, r: &Rational) -> bool {
        let lo = Rational::from_f64(iv.lo);
        let hi = Rational::from_f64(iv.hi);
        lo.is_none_or(|lo| lo <= *r) && hi.is_none_or(|hi| *r <= hi)
    }

    /// Near-cancelling dot products (the adversarial case for a filter): the enclosure must
    /// always contain the exact value, and must prove the sign whenever it is far from zero.
    #[test]
    fn dot_enclosure_contains_the_exact_value_under_cancellation() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut proved = 0;
        for trial in 0..4000 {
            let m = 1 + (next() % 24) as usize;
            let scale = 2f64.powi((next() % 200) as i32 - 100);
            let mut a: Vec<f64> = (0..m)
                .map(|_| ((next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * scale)
                .collect();
            let b: Vec<f64> = (0..m)
                .map(|_| ((next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 3.0)
                .collect();
            if trial % 2 == 0 && m >= 2 {
                // Make the last term cancel the rest almost exactly.
                let partial: f64 = a[..m - 1].iter().zip(&b).map(|(x, y)| x * y).sum();
                if b[m - 1] != 0.0 {
                    a[m - 1] = -partial / b[m - 1];
                }
            }
            let iv = dot(&a, &b, 0);
            let exact = exact_dot(&a, &b);
            assert!(contains(iv, &exact), "trial {trial}: {iv:?} misses {exact}");
            if iv.sign().is_some() {
                proved += 1;
            }
        }
        assert!(
            proved > 1500,
            "the filter should prove most signs, proved {proved}"
        );
    }

    /// cmp_sums never contradicts the exact order, and decides clear cases.
    #[test]
    fn cmp_sums_agrees_with_exact_differences() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut decided = 0;
        for trial in 0..4000 {
            let m = 1 + trial % 20;
            let v: Vec<f64> = (0..m).map(|_| next()).collect();
            let a: Vec<f64> = (0..m).map(|_| next()).collect();
            // b is a or a one-ulp nudge of it: near ties.
            let mut b = a.clone();
            if trial % 3 != 0 {
                let k = trial % m;
                b[k] = if trial % 2 == 0 {
                    next_up(b[k])
                } else {
                    b[k] + next()
                };
            }
            let (ca, cb) = (next(), if trial % 5 == 0 { 0.0 } else { next() * 1e-12 });
            let sa = score_sums(&v, &a, ca);
            let sb = score_sums(&v, &b, cb);
            let exact = |x: &[f64], c: f64| exact_dot(&v, x) + Rational::from_f64(c).unwrap();
            let truth = exact(&a, ca).cmp(&exact(&b, cb));
            if let Some(o) = cmp_sums(sa, sb, m + 1) {
                assert_eq!(o, truth, "trial {trial}");
                decided += 1;
            }
        }
        assert!(decided > 2000, "decided only {decided}");
    }

    /// Catastrophic cancellation: fl(big + small − big) loses `small`, so the float order of
    /// two such sums can be the opposite of the exact one. A filter without its bound fails
    /// this test.
    #[test]
    fn cmp_sums_survives_catastrophic_cancellation() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut wrong_in_float = 0;
        for _ in 0..2000 {
            let big = crate::dtype::pow2(50 + (next() % 20) as i32);
            let small_a = (next() % 1000) as f64 / 64.0;
            let small_b = (next() % 1000) as f64 / 64.0;
            let v = [1.0, 1.0, 1.0];
            let a = [big, small_a, -big];
            let b = [small_b, 0.0, 0.0];
            let sa = score_sums(&v, &a, 0.0);
            let sb = score_sums(&v, &b, 0.0);
            let truth = small_a.total_cmp(&small_b);
            if sa.0.total_cmp(&sb.0) != truth {
                wrong_in_float += 1;
            }
            if let Some(o) = cmp_sums(sa, sb, 4) {
                assert_eq!(o, truth, "big {big} small {small_a} vs {small_b}");
            }
            let iv = dot(&v, &a, 0) - dot(&v, &b, 0);
            match truth {
                std::cmp::Ordering::Greater => assert!(!iv.is_neg()),
                std::cmp::Ordering::Less => assert!(!iv.is_pos()),
                std::cmp::Ordering::Equal => assert!(iv.sign().is_none()),
            }
        }
        assert!(
            wrong_in_float > 100,
            "the test must contain float-wrong cases"
        );
    }

    #[test]
    fn underflowing_products_are_covered() {
        let a = [1e-300, -1e-300, 3e-200];
        let b = [1e-20, 1e-20, 1e-130];
        let iv = dot(&a, &b, 0);
        assert!(contains(iv, &exact_dot(&a, &b)));
    }

    #[test]
    fn overflow_and_nan_give_no_sign() {
        assert_eq!(dot(&[1e300, 1e300], &[1e300, 1.0], 0), Interval::WHOLE);
        assert_eq!(dot(&[f64::NAN], &[1.0], 0).sign(), None);
        assert_eq!(Interval::point(f64::NAN), Interval::WHOLE);
    }

    #[test]
    fn interval_ops_enclose() {
        let x = Interval::point(0.1);
        let y = Interval::point(0.2);
        let s = x + y;
        let exact = Rational::from_f64(0.1).unwrap() + Rational::from_f64(0.2).unwrap();
        assert!(contains(s, &exact));
        let p = x * y - Interval::point(0.02);
        let exact_p = Rational::from_f64(0.1).unwrap() * Rational::from_f64(0.2).unwrap()
            - Rational::from_f64(0.02).unwrap();
        assert!(contains(p, &exact_p));
        assert!(Interval { lo: -1.0, hi: 2.0 }.square().lo == 0.0);
        assert_eq!(next_up(0.0), f64::from_bits(1));
        assert_eq!(next_down(1.0), 1.0 - f64::EPSILON / 2.0);
    }
}
