//! Exact comparisons of numbers with square roots (surds), as needed for normalized keys
//! k_j = w_j/√q_j. Nothing here rounds: signs are decided by sign analysis and squaring, and
//! sums of several surds by rational enclosures √ρ ∈ [s/(b·2^p), (s+1)/(b·2^p)] with
//! s = ⌊√(ab·4^p)⌋, ρ = a/b, refined until the comparison is decided.

use rug::{Integer, Rational};
use std::cmp::Ordering;

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

/// √ρ when ρ ≥ 0 is the square of a rational.
pub fn exact_sqrt(rho: &Rational) -> Option<Rational> {
    if *rho < 0 {
        return None;
    }
    let (num, den) = (rho.numer(), rho.denom());
    if num.is_perfect_square() && den.is_perfect_square() {
        Some(Rational::from((num.clone().sqrt(), den.clone().sqrt())))
    } else {
        None
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
        match exact_sqrt(rho) {
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
