//! The correctly rounded reference. For each output element the exact real value
//! t = γ·(x−μ)/s + β is rounded to nearest-even in the output format:
//!
//! 1. fast path: t in double-double with a rigorous error bound E; if t−E and t+E round to
//!    the same value, so does t (rounding is monotonic);
//! 2. otherwise the exact decision: t is compared with the midpoints around a candidate by
//!    exact sign analysis (no √ is ever taken: sign(P − Q·√w) is decided on P² and Q²·w).
//!
//! Exact ties round to even; results past the overflow threshold round to ±∞; an exact zero
//! is +0 and a tiny nonzero result that rounds to zero keeps its sign.

use super::dd::DoubleDouble;
use super::stats::{RowKind, RowStats};
use crate::dtype::{pow2, Dtype};
use crate::error::Result;
use crate::problem::{EpsConvention, Problem};
use rayon::prelude::*;
use rug::{Float, Rational};
use std::cmp::Ordering;

/// The fast path's error bound, relative to the magnitudes of the computation: the analysis
/// in `approximate` gives 2^-99; 2^-96 leaves a factor of 8 for the bound's own rounding.
const FAST_PATH_RELATIVE_ERROR: f64 = 1.262_177_448_353_618_9e-29; // 2^-96
/// Absolute floor of the fast-path bound (the fast path is never used near underflow).
const FAST_PATH_ABSOLUTE_ERROR: f64 = 1e-290;
/// MPFR precision of the exact path's first candidate.
const CANDIDATE_PRECISION: u32 = 256;

/// One element's inputs: the exact x, γ and β (as f64, exact for every format).
#[derive(Debug, Clone, Copy)]
pub struct ElementInput {
    pub x: f64,
    pub gamma: f64,
    pub beta: f64,
}

/// The exact value t of one output element, seen through its row's statistics.
pub struct Element<'a> {
    pub stats: &'a RowStats,
    pub input: ElementInput,
}

impl<'a> Element<'a> {
    pub fn new(stats: &'a RowStats, input: ElementInput) -> Self {
        Element { stats, input }
    }

    /// t ≈ hi + lo with |t − (hi+lo)| ≤ bound, or None where the fast path does not apply.
    pub fn approximate(&self) -> Option<(DoubleDouble, f64)> {
        let s = self.stats;
        if !s.fast {
            return None;
        }
        let ElementInput { x, gamma, beta } = self.input;
        // δ = x − μ: error ≤ 2^-105|μ| (μ's double-double) + 2^-104(|x|+|μ|) (the addition).
        let delta = DoubleDouble::from_f64(x).add(s.mean_dd.neg());
        // p = δ/s: relative error ≤ 2^-102 (product) + 2^-105 (1/s's double-double).
        let p = delta.mul(s.inv_scale_dd);
        if p.hi != 0.0 && p.hi.abs() < pow2(-900) {
            return None;
        }
        // γ·p exactly up to 2^-103 relative, then + β with error ≤ 2^-104(|γp| + |β|).
        let t = p.mul_f64(gamma).add_f64(beta);
        if !t.is_finite() {
            return None;
        }
        // All terms together stay below 2^-99·(|γ|/s·(|δ|+|μ|) + |β| + |t|).
        let magnitude =
            gamma.abs() * s.inv_scale_dd.hi.abs() * (delta.hi.abs() + s.mean_dd.hi.abs())
                + beta.abs()
                + t.hi.abs();
        Some((
            t,
            magnitude * FAST_PATH_RELATIVE_ERROR + FAST_PATH_ABSOLUTE_ERROR,
        ))
    }

    /// sign(t − m), exactly.
    pub fn compare(&self, m: &Rational) -> Ordering {
        let s = self.stats;
        let ElementInput { x, gamma, beta } = self.input;
        let x = Rational::from_f64(x).expect("finite input");
        let gamma = Rational::from_f64(gamma).expect("finite gamma");
        let beta = Rational::from_f64(beta).expect("finite beta");
        // t − m = A/s − B with A = γ(x−μ), B = m − β, and s > 0.
        let a = gamma * (x - &s.mean);
        let b = Rational::from(m - &beta);
        match s.convention {
            // A/√(q+ε) − B has the sign of A − B·√(q+ε).
            EpsConvention::Inside => {
                let w = Rational::from(&s.q + &s.eps);
                sign_of_p_minus_q_sqrt(&a, &b, &w)
            }
            // A/(√q+ε) − B has the sign of (A − Bε) − B·√q.
            EpsConvention::Outside => {
                let p = a - Rational::from(&b * &s.eps);
                sign_of_p_minus_q_sqrt(&p, &b, &s.q)
            }
        }
    }

    /// sign(t − v) for a float value v given as bits of `dtype`; ±∞ compare as such.
    pub fn compare_to_value(&self, dtype: Dtype, bits: u64) -> Ordering {
        match dtype.to_rational(bits) {
            Some(v) => self.compare(&v),
            None if dtype.is_sign_negative(bits) => Ordering::Greater,
            None => Ordering::Less,
        }
    }

    /// The correctly rounded value of t in `dtype`, as bits.
    pub fn round(&self, dtype: Dtype) -> u64 {
        if let Some((t, err)) = self.approximate() {
            let low = t.add_f64(-err);
            let high = t.add_f64(err);
            let a = dtype.round_double_double(low.hi, low.lo);
            let b = dtype.round_double_double(high.hi, high.lo);
            if a == b {
                return a;
            }
            return self.round_exactly(dtype, dtype.round_double_double(t.hi, t.lo));
        }
        self.round_exactly(dtype, dtype.round_f64(self.mpfr_value().to_f64()))
    }

    /// t evaluated in MPFR (a candidate for the exact path, and the judge's approximation
    /// on rows outside the fast path).
    pub fn mpfr_value(&self) -> Float {
        let s = self.stats;
        let p = CANDIDATE_PRECISION;
        let ElementInput { x, gamma, beta } = self.input;
        let delta = Float::with_val(p, x) - Float::with_val(p, &s.mean);
        let scale = match s.convention {
            EpsConvention::Inside => Float::with_val(p, Rational::from(&s.q + &s.eps)).sqrt(),
            EpsConvention::Outside => Float::with_val(p, &s.q).sqrt() + &s.eps,
        };
        delta / scale * gamma + beta
    }

    /// t as the nearest f64 (for error metrics; exact enough, not used for decisions).
    pub fn value_f64(&self) -> f64 {
        match self.approximate() {
            Some((t, _)) => t.hi,
            None => self.mpfr_value().to_f64(),
        }
    }

    /// Walks from a candidate to the correctly rounded value by exact midpoint comparisons.
    fn round_exactly(&self, dtype: Dtype, mut candidate: u64) -> u64 {
        loop {
            let up = dtype.next_up(candidate);
            let down = dtype.next_down(candidate);
            if up != candidate {
                match self.compare(&midpoint(dtype, candidate, up)) {
                    Ordering::Greater => {
                        candidate = up;
                        continue;
                    }
                    Ordering::Equal => {
                        return with_sign_of_zero(dtype, even_of(candidate, up), self)
                    }
                    Ordering::Less => {}
                }
            }
            if down != candidate {
                match self.compare(&midpoint(dtype, candidate, down)) {
                    Ordering::Less => {
                        candidate = down;
                        continue;
                    }
                    Ordering::Equal => {
                        return with_sign_of_zero(dtype, even_of(candidate, down), self)
                    }
                    Ordering::Greater => {}
                }
            }
            return with_sign_of_zero(dtype, candidate, self);
        }
    }
}

/// Zero results: +0 for an exact zero, the sign of t for a tiny t that rounds to zero.
fn with_sign_of_zero(dtype: Dtype, bits: u64, e: &Element) -> u64 {
    if dtype.to_f64(bits) != 0.0 {
        return bits;
    }
    match e.compare(&Rational::new()) {
        Ordering::Less => dtype.round_f64(-0.0),
        _ => 0,
    }
}

/// Of two adjacent values, the one whose significand is even (∞ counts as even).
fn even_of(a: u64, b: u64) -> u64 {
    if a & 1 == 0 {
        a
    } else {
        b
    }
}

/// The exact midpoint of two adjacent values; beside ±∞ it is the overflow threshold.
pub fn midpoint(dtype: Dtype, a: u64, b: u64) -> Rational {
    let value = |bits: u64, other: u64| -> Rational {
        dtype.to_rational(bits).unwrap_or_else(|| {
            // ∞ stands for 2^(emax+1), the value one ulp past the largest finite number.
            let p = Rational::from(Rational::from(1) << (dtype.emax() + 1) as u32);
            if dtype.is_sign_negative(bits) || dtype.to_f64(other) < 0.0 {
                -p
            } else {
                p
            }
        })
    };
    (value(a, b) + value(b, a)) / 2
}

/// sign(P − Q·√w) for rationals P, Q and w ≥ 0, exactly.
pub fn sign_of_p_minus_q_sqrt(p: &Rational, q: &Rational, w: &Rational) -> Ordering {
    let sign_p = p.cmp0();
    let sign_qs = if *w == 0 { Ordering::Equal } else { q.cmp0() };
    match (sign_p, sign_qs) {
        (Ordering::Equal, Ordering::Equal) => Ordering::Equal,
        (Ordering::Greater | Ordering::Equal, Ordering::Less | Ordering::Equal) => {
            Ordering::Greater
        }
        (Ordering::Less | Ordering::Equal, Ordering::Greater | Ordering::Equal) => Ordering::Less,
        (Ordering::Greater, Ordering::Greater) => {
            // P − Q√w > 0 ⇔ P² > Q²w.
            let lhs = Rational::from(p.square_ref());
            let rhs = Rational::from(q.square_ref()) * w;
            lhs.cmp(&rhs)
        }
        (Ordering::Less, Ordering::Less) => {
            // −|P| + |Q|√w > 0 ⇔ Q²w > P².
            let lhs = Rational::from(p.square_ref());
            let rhs = Rational::from(q.square_ref()) * w;
            rhs.cmp(&lhs)
        }
    }
}

/// The reference outputs of a whole problem.
#[derive(Debug, Clone)]
pub struct ReferenceOutput {
    pub stats: Vec<RowStats>,
    /// Correctly rounded outputs (bits of the problem's dtype); NaN on non-finite rows and on
    /// undefined rows (which `stats[r].kind` marks).
    pub y: Vec<u64>,
}

impl ReferenceOutput {
    pub fn undefined_rows(&self) -> Vec<usize> {
        self.stats
            .iter()
            .enumerate()
            .filter(|(_, s)| s.kind == RowKind::Undefined)
            .map(|(r, _)| r)
            .collect()
    }
}

/// Inputs of element (r, i) of a problem.
pub fn element_input(problem: &Problem, r: usize, i: usize) -> ElementInput {
    ElementInput {
        x: problem.dtype.to_f64(problem.x[r * problem.d + i]),
        gamma: problem.gamma_at(i),
        beta: problem.beta_at(i),
    }
}

/// The exact statistics of row r.
pub fn row_stats(problem: &Problem, r: usize) -> RowStats {
    let values: Vec<f64> = problem
        .row(r)
        .iter()
        .map(|&b| problem.dtype.to_f64(b))
        .collect();
    RowStats::compute(
        &values,
        problem.dtype,
        problem.op,
        problem.convention,
        &problem.eps.exact(),
    )
}

/// Correctly rounded outputs of row r into `out` (length d).
pub fn reference_row(problem: &Problem, r: usize, stats: &RowStats, out: &mut [u64]) {
    let dtype = problem.dtype;
    match stats.kind {
        RowKind::NonFinite | RowKind::Undefined => out.fill(dtype.nan_bits()),
        RowKind::Defined => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = Element::new(stats, element_input(problem, r, i)).round(dtype);
            }
        }
    }
}

/// The correctly rounded reference of a problem (rows in parallel; the result does not depend
/// on the thread count).
pub fn reference(problem: &Problem) -> Result<ReferenceOutput> {
    problem.validate()?;
    let d = problem.d;
    let mut y = vec![0u64; problem.rows * d];
    let stats: Vec<RowStats> = y
        .par_chunks_mut(d)
        .enumerate()
        .map(|(r, out)| {
            let stats = row_stats(problem, r);
            reference_row(problem, r, &stats, out);
            stats
        })
        .collect();
    Ok(ReferenceOutput { stats, y })
}
