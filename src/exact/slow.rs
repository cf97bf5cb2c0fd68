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
            let scale = match p.convention {
                EpsConvention::Inside => {
                    Float::with_val(SLOW_PRECISION, Rational::from(&q + &eps)).sqrt()
                }
                EpsConvention::Outside => Float::with_val(SLOW_PRECISION, &q).sqrt() + &eps,
            };
            let t = Float::with_val(SLOW_PRECISION, &num) / scale + &b;
            let t_rat = t.to_rational().expect("finite");
            let (mut v, near) = round_rational(dt, &t_rat);
            if let Some(m) = near {
                if is_exact_value(p.convention, &num, &b, &q, &eps, &m) {
                    // An exact tie (t may be irrational-looking in MPFR, e.g. √ of a square
                    // with a factor 17, and land beside the midpoint): ties to even.
                    v = round_rational(dt, &m).0;
                } else {
                    // Not a tie: t is within 2^-1000 quanta of a midpoint but not on it; its
                    // side is the side of the approximation's error, decided at higher
                    // precision.
                    let t2 = Float::with_val(4 * SLOW_PRECISION, &num)
                        / match p.convention {
                            EpsConvention::Inside => {
                                Float::with_val(4 * SLOW_PRECISION, Rational::from(&q + &eps))
                                    .sqrt()
                            }
                            EpsConvention::Outside => {
                                Float::with_val(4 * SLOW_PRECISION, &q).sqrt() + &eps
                            }
                        }
                        + &b;
                    v = round_rational(dt, &t2.to_rational().expect("finite")).0;
                }
            }
            if v == 0.0 && is_exact_value(p.convention, &num, &b, &q, &eps, &Rational::new()) {
                // An exact zero is +0; MPFR may only approximate it, with either sign.
                v = 0.0;
            }
            out.push(Some(v));
        }
    }
    out
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
