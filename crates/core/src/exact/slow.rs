//! An independent slow path, for cross-checking the reference: direct rational sums (no
//! superaccumulator), a two-pass exact variance (not S₂/d − μ²), t in MPFR at 1200 bits,
//! rounding by rational arithmetic (not `dtype::round_*`), and ties confirmed in exact
//! squared form. It shares only the problem's definition with `reference`.

use crate::problem::{EpsConvention, Op, Problem};
use crate::Dtype;
use rug::{Float, Integer, Rational};

const SLOW_PRECISION: u32 = 1200;

fn rat(x: f64) -> Rational {
    Rational::from_f64(x).expect("finite")
}

/// Rounds a rational to the format by scaling to its quantum; returns the value as an f64
/// and, when t lies within 2^-1000 quanta of a midpoint (on it included), that midpoint.
pub fn round_rational(dt: Dtype, t: &Rational) -> (f64, Option<Rational>) {
    if *t == 0 {
        return (0.0, None);
    }
    let abs = Rational::from(t.abs_ref());
    // 2^e ≤ |t| < 2^(e+1): from the MPFR exponent, corrected exactly.
    let mut e: i32 = Float::with_val(64, &abs).get_exp().expect("nonzero") - 1;
    let pow = |k: i32| {
        if k >= 0 {
            Rational::from(1) << k as u32
        } else {
            Rational::from(1) >> (-k) as u32
        }
    };
    while pow(e) > abs {
        e -= 1;
    }
    while pow(e + 1) <= abs {
        e += 1;
    }
    let quantum_exp = e.max(dt.emin()) - dt.precision() + 1;
    let scaled = &abs / pow(quantum_exp);
    let floor = Integer::from(scaled.floor_ref());
    let frac = scaled - Rational::from(&floor);
    let half = Rational::from((1, 2));
    let tie = frac == half;
    let off_half = Rational::from(&frac - &half).abs();
    let near = (off_half < Rational::from(1) >> 1000u32).then(|| {
        let m = (Rational::from(&floor) + &half) * pow(quantum_exp);
        if t.cmp0().is_lt() {
            -m
        } else {
            m
        }
    });
    let n = if frac > half || (tie && floor.is_odd()) {
        floor + 1
    } else {
        floor
    };
    let mag = Float::with_val(64, Rational::from(n) * pow(quantum_exp)).to_f64();
    let mag = if mag > dt.max_finite() {
        f64::INFINITY
    } else {
        mag
    };
    (if t.cmp0().is_lt() { -mag } else { mag }, near)
}

/// The correctly rounded value of every element (None where undefined, and on rows holding
/// NaN or ±∞, which callers judge separately).
pub fn slow_reference(p: &Problem) -> Vec<Option<f64>> {
    let dt = p.dtype;
    let eps = rat(p.eps.value() as f64);
    let mut out = Vec::with_capacity(p.x.len());
    for r in 0..p.rows {
        if p.row(r).iter().any(|&b| !dt.is_finite(b)) {
            out.extend(std::iter::repeat_n(None, p.d));
            continue;
        }
        let xs: Vec<Rational> = p.row(r).iter().map(|&b| rat(dt.to_f64(b))).collect();
        let d = Rational::from(p.d as u64);
        let mean = match p.op {
            Op::LayerNorm => xs.iter().fold(Rational::new(), |a, b| a + b) / &d,
            Op::RmsNorm => Rational::new(),
        };
        let q = xs
            .iter()
            .map(|x| Rational::from(x - &mean).square())
            .fold(Rational::new(), |a, b| a + b)
            / &d;
        let undefined = match p.convention {
            EpsConvention::Inside => Rational::from(&q + &eps) == 0,
            EpsConvention::Outside => q == 0 && eps == 0,
        };
        for (i, x) in xs.iter().enumerate() {
            if undefined {
                out.push(None);
                continue;
            }
            let g = rat(p.gamma_at(i));
            let b = rat(p.beta_at(i));
            let num = Rational::from(x - &mean) * &g;
            let exact_zero = is_exact_value(p.convention, &num, &b, &q, &eps, &Rational::new());
            let approx = |prec: u32| approximate_t(prec, p.convention, &num, &b, &q, &eps);
            // An exact zero is +0 (MPFR may only approximate it, with either sign); any other
            // t is approximated to 1100 bits relative, however deep the cancellation of
            // γ(x−μ)/s against β (found by fuzzing: at a fixed 1200 bits, t ≈ −2^-727 from
            // terms of 2^751 came out 0).
            let mut v = 0.0;
            if !exact_zero {
                let mut prec = SLOW_PRECISION;
                let (mut t, mut err_exp) = approx(prec);
                while t.is_zero() || exponent(&t) - err_exp < RELATIVE_BITS {
                    prec *= 2;
                    (t, err_exp) = approx(prec);
                }
                let near;
                (v, near) = round_rational(dt, &t.to_rational().expect("finite"));
                if let Some(m) = near {
                    if is_exact_value(p.convention, &num, &b, &q, &eps, &m) {
                        // An exact tie (t may be irrational-looking in MPFR, e.g. √ of a
                        // square with a factor 17, and land beside the midpoint): ties to even.
                        v = round_rational(dt, &m).0;
                    } else {
                        // Not a tie: t is within 2^-1000 quanta of the midpoint m but not on
                        // it; its side is decided at the precision where the approximation's
                        // error no longer reaches m.
                        loop {
                            let gap = Float::with_val(64, &t - Float::with_val(prec, &m));
                            if !gap.is_zero() && exponent(&gap) > err_exp + 1 {
                                break;
                            }
                            prec *= 2;
                            (t, err_exp) = approx(prec);
                        }
                        v = round_rational(dt, &t.to_rational().expect("finite")).0;
                    }
                }
            }
            out.push(Some(v));
        }
    }
    out
}

/// Bits of t's magnitude the approximation must be exact to: near-midpoint detection looks
/// 2^-1000 quanta deep, and a quantum is at least 2^-53 of |t| in every format.
const RELATIVE_BITS: i32 = 1100;

/// MPFR's exponent of a nonzero value: 2^(e−1) ≤ |v| < 2^e.
fn exponent(v: &Float) -> i32 {
    v.get_exp().expect("nonzero and finite")
}

/// t = num/s + b at `prec` bits, and an exponent E with |t − t̃| < 2^E: num, √, the division
/// (and ε's addition outside) each round once, at most 2^-prec relative, so the quotient errs by
/// < 5·2^-prec of itself and the final addition by 2^-prec of t̃; E = max exponent − prec + 4.
fn approximate_t(
    prec: u32,
    convention: EpsConvention,
    num: &Rational,
    b: &Rational,
    q: &Rational,
    eps: &Rational,
) -> (Float, i32) {
    let scale = match convention {
        EpsConvention::Inside => Float::with_val(prec, Rational::from(q + eps)).sqrt(),
        EpsConvention::Outside => Float::with_val(prec, q).sqrt() + eps,
    };
    let quotient = Float::with_val(prec, num) / scale;
    let t = Float::with_val(prec, &quotient + b);
    let largest = [&quotient, &t]
        .iter()
        .filter(|v| !v.is_zero())
        .map(|v| exponent(v))
        .max()
        .unwrap_or(i32::MIN / 2);
    (t, largest - prec as i32 + 4)
}

/// Whether num/s + b equals m exactly: sign agreement and squares (s² rational inside;
/// outside, num/(√q+ε) = m − b ⇔ num − (m−b)ε = (m−b)√q).
fn is_exact_value(
    conv: EpsConvention,
    num: &Rational,
    b: &Rational,
    q: &Rational,
    eps: &Rational,
    m: &Rational,
) -> bool {
    let rhs = Rational::from(m - b);
    let (lhs, w) = match conv {
        EpsConvention::Inside => (num.clone(), Rational::from(q + eps)),
        EpsConvention::Outside => ((num - Rational::from(&rhs * eps)), q.clone()),
    };
    lhs.cmp0() == rhs.cmp0()
        && Rational::from(lhs.square_ref()) == Rational::from(rhs.square_ref()) * w
}

/// Compares the reference with the slow path on a problem: the elements that disagree, as
/// (index, reference value, slow value).
pub fn disagreements(p: &Problem) -> crate::Result<Vec<(usize, f64, f64)>> {
    let fast = super::reference(p)?;
    let slow = slow_reference(p);
    let mut bad = Vec::new();
    for (k, want) in slow.iter().enumerate() {
        if fast.stats[k / p.d].kind == super::RowKind::NonFinite {
            continue;
        }
        let got = p.dtype.to_f64(fast.y[k]);
        let agree = match want {
            None => got.is_nan(),
            Some(w) => {
                got.to_bits() == w.to_bits()
                    || (got == 0.0 && *w == 0.0 && got.is_sign_negative() == w.is_sign_negative())
            }
        };
        if !agree {
            bad.push((k, got, want.unwrap_or(f64::NAN)));
        }
    }
    Ok(bad)
}
