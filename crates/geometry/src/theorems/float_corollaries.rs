//! The theorems' float versions: what a float output of LayerNorm/RMSNorm (γ = 1, β = 0) must
//! satisfy when each entry is close to the exact value z, with the bounds derived here.
//!
//! Error model: |y_i − z_i| ≤ ρ·|z_i| + η for every i. A correctly rounded output (round to
//! nearest) has ρ = u = 2^-p and η = 2^(emin−p) (half the subnormal spacing); an output within
//! k ulps has ρ = 2k·u, η = 2k·η₀ (ulp(z) ≤ 2u·|z| in the normal range, = 2η₀ below it).
//! Let e = y − z and t = ρ + η. The exact output satisfies Σz = 0 (LayerNorm) and
//! ‖z‖² = D ≤ d (theorem norm-sqrt-d: D = d·m/(m + ε) inside, d·m/(√m + ε)² outside).
//!
//! * Mean: Σy = Σe, |Σe| ≤ ρ‖z‖₁ + dη ≤ ρ√d‖z‖ + dη ≤ d(ρ + η), so |mean(y)| ≤ t.
//! * Norm: ‖e‖ ≤ ρ‖z‖ + η√d ≤ t√d, and |‖y‖² − ‖z‖²| = |2z·e + ‖e‖²| ≤ 2‖z‖‖e‖ + ‖e‖² ≤
//!   d(2t + t²). With ε = 0 this reads |‖y‖² − d| ≤ d((1 + t)² − 1).
//!
//! Both are checked exactly: mean(y) and ‖y‖² are rationals, D is an exact [`Surd`].

use super::exact_vec::{mean, norm2, normalize, surd_norm2, SurdVec};
use super::inputs::{exact_pow2, Family};
use super::{run_checks, Budget, CheckReport, TheoremEntry};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::exact::surd::Surd;
use crate::problem::{EpsConvention, Op, Problem};
use rug::Rational;
use std::cmp::Ordering;

pub const THEOREM: TheoremEntry = TheoremEntry {
    id: "float-corollaries",
    statement: "If each entry of a float output y of LayerNorm or RMSNorm (γ = 1, β = 0) satisfies |y_i − z_i| ≤ ρ|z_i| + η around the exact z (correctly rounded: ρ = 2^-p, η = 2^(emin−p)), then with t = ρ + η: |mean(y)| ≤ t (LayerNorm) and |‖y‖² − ‖z‖²| ≤ d(2t + t²), ‖z‖² = d (ε = 0) or the exact shrunk norm. Checked on correctly rounded f16/bf16/f32/f64 outputs computed from the exact values.",
    source: "this project: Brody et al. 2023 eqs. (4)-(5) under round-to-nearest (IEEE 754 §4.3.1)",
    check,
};

/// |y_i − z_i| ≤ relative·|z_i| + absolute.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorModel {
    pub relative: Rational,
    pub absolute: Rational,
}

impl ErrorModel {
    /// Round to nearest in `dt`: ρ = 2^-p, η = 2^(emin−p).
    pub fn correctly_rounded(dt: Dtype) -> ErrorModel {
        let exact = exact_pow2;
        ErrorModel {
            relative: exact(-dt.precision()),
            absolute: exact(dt.emin() - dt.precision()),
        }
    }

    /// Within k ulps in `dt`: ρ = 2k·2^-p, η = 2k·2^(emin−p).
    pub fn within_ulps(dt: Dtype, k: u32) -> ErrorModel {
        let base = ErrorModel::correctly_rounded(dt);
        ErrorModel {
            relative: base.relative * (2 * k),
            absolute: base.absolute * (2 * k),
        }
    }

    /// t = ρ + η.
    pub fn t(&self) -> Rational {
        Rational::from(&self.relative + &self.absolute)
    }

    /// The bound on |mean(y)|: t.
    pub fn mean_bound(&self) -> Rational {
        self.t()
    }

    /// The bound on |‖y‖² − ‖z‖²|: d(2t + t²).
    pub fn norm_bound(&self, d: usize) -> Rational {
        let t = self.t();
        (Rational::from(t.square_ref()) + t * 2u32) * Rational::from(d)
    }

    /// Whether y_i is within the model around z_i (exact).
    pub fn admits(&self, z: &Surd, y: &Rational) -> bool {
        let err = Surd::rational(y.clone()).sub(z).map(|e| e.abs());
        let bound = z.abs().scale(&self.relative).add_rational(&self.absolute);
        err.is_ok_and(|e| e <= bound)
    }
}

/// The exact value of bits, with ±∞ standing at ±2^(emax+1) so the midpoint between the largest
/// finite value and ∞ is the overflow threshold.
fn point(dt: Dtype, bits: u64) -> Rational {
    dt.to_rational(bits).unwrap_or_else(|| {
        let edge = exact_pow2(dt.emax() + 1);
        if dt.is_sign_negative(bits) {
            -edge
        } else {
            edge
        }
    })
}

/// Round to nearest, ties to even, of an exact value to `dt` (bits): a float candidate (a
/// 256-bit approximation rounded twice, so possibly one ulp off), then [`round_from`].
pub fn round_exact(dt: Dtype, z: &Surd) -> u64 {
    round_from(dt, z, dt.round_f64(z.to_float(256).to_f64()))
}

/// The correctly rounded bits of z, reached from any starting candidate by exact comparisons
/// with the midpoints to its neighbours: one ulp per step, so start close.
pub fn round_from(dt: Dtype, z: &Surd, start: u64) -> u64 {
    let mut c = start;
    let is_even = |b: u64| b & 1 == 0;
    loop {
        if c != dt.inf_bits() {
            let up = dt.next_up(c);
            let mid = Surd::rational((point(dt, c) + point(dt, up)) / 2u32);
            match z.cmp(&mid) {
                Ordering::Greater => {
                    c = up;
                    continue;
                }
                Ordering::Equal if is_even(up) => {
                    c = up;
                    continue;
                }
                _ => {}
            }
        }
        if c != (dt.inf_bits() | (1u64 << (dt.bits() - 1))) {
            let down = dt.next_down(c);
            let mid = Surd::rational((point(dt, c) + point(dt, down)) / 2u32);
            match z.cmp(&mid) {
                Ordering::Less => {
                    c = down;
                    continue;
                }
                Ordering::Equal if is_even(down) => {
                    c = down;
                    continue;
                }
                _ => {}
            }
        }
        break;
    }
    if dt.to_f64(c) == 0.0 {
        // The sign of a zero result follows the exact value's sign (+0 for an exact 0).
        return if z.signum() == Ordering::Less {
            1u64 << (dt.bits() - 1)
        } else {
            0
        };
    }
    c
}

/// The corollaries for one row: `y` (exact values of a float output) against the exact
/// output, under `model`. `Ok` also where the exact output is undefined (no claim).
pub fn check_output(
    model: &ErrorModel,
    op: Op,
    convention: EpsConvention,
    x: &[Rational],
    eps: &Rational,
    y: &[Rational],
) -> std::result::Result<(), String> {
    let Some(z) = normalize(op, x, eps, convention, None, None) else {
        return Ok(());
    };
    if y.len() != z.len() {
        return Err(format!("output has {} entries, want {}", y.len(), z.len()));
    }
    let d = x.len();
    if op == Op::LayerNorm {
        let mean = mean(y);
        if Rational::from(mean.abs_ref()) > model.mean_bound() {
            return Err(format!(
                "|mean(y)| = {:e} > bound {:e}",
                mean.to_f64().abs(),
                model.mean_bound().to_f64()
            ));
        }
    }
    let gap = Surd::rational(norm2(y)).sub(&surd_norm2(&z)?)?.abs();
    let bound = model.norm_bound(d);
    if gap > Surd::rational(bound.clone()) {
        return Err(format!(
            "|‖y‖² − ‖z‖²| = {:e} > bound {:e}",
            gap.approx(),
            bound.to_f64()
        ));
    }
    Ok(())
}

/// The corollaries for a problem's whole output (bits of `problem.dtype`). `Ok(None)` when the
/// bounds hold, `Ok(Some(message))` naming the first row that breaks them (or a non-finite entry
/// where the exact value is finite); `Err` where the corollaries do not apply (γ or β given).
pub fn check_problem_output(
    problem: &Problem,
    y_bits: &[u64],
    model: &ErrorModel,
) -> Result<Option<String>> {
    problem.validate()?;
    if problem.gamma.is_some() || problem.beta.is_some() {
        return Err(Error::usage(
            "the float corollaries are stated for γ = 1, β = 0",
        ));
    }
    if y_bits.len() != problem.x.len() {
        return Err(Error::input(format!(
            "output holds {} values, expected {}",
            y_bits.len(),
            problem.x.len()
        )));
    }
    let dt = problem.dtype;
    let eps = problem.eps.exact();
    for r in 0..problem.rows {
        let row = problem.row(r);
        let Some(x) = row
            .iter()
            .map(|&b| dt.to_rational(b))
            .collect::<Option<Vec<_>>>()
        else {
            continue; // non-finite input: no exact output to compare with
        };
        let out = &y_bits[r * problem.d..(r + 1) * problem.d];
        let Some(y) = out
            .iter()
            .map(|&b| dt.to_rational(b))
            .collect::<Option<Vec<_>>>()
        else {
            if normalize(problem.op, &x, &eps, problem.convention, None, None).is_some() {
                return Ok(Some(format!(
                    "row {r}: non-finite output where the exact value is finite"
                )));
            }
            continue;
        };
        if let Err(e) = check_output(model, problem.op, problem.convention, &x, &eps, &y) {
            return Ok(Some(format!("row {r}: {e}")));
        }
    }
    Ok(None)
}

/// A rounding of exact values to a format's bits (the definition: [`round_exact`]).
pub type Rounding = fn(Dtype, &Surd) -> u64;

/// The rounded output of an exact one.
pub fn round_all(round: Rounding, dt: Dtype, z: &SurdVec) -> Vec<Rational> {
    z.iter()
        .map(|zi| {
            dt.to_rational(round(dt, zi))
                .expect("bounded outputs round to finite values")
        })
        .collect()
}

/// One case of the catalogue: round the exact output (correctly, with [`round_exact`]), confirm the error model holds
/// entry by entry (the premise), then the corollaries.
pub fn check_rounded_case(
    round: Rounding,
    dt: Dtype,
    op: Op,
    convention: EpsConvention,
    x: &[Rational],
    eps: &Rational,
) -> std::result::Result<(), String> {
    let Some(z) = normalize(op, x, eps, convention, None, None) else {
        return Ok(());
    };
    let model = ErrorModel::correctly_rounded(dt);
    let y = round_all(round, dt, &z);
    if let Some(i) = (0..y.len()).find(|&i| !model.admits(&z[i], &y[i])) {
        return Err(format!(
            "{dt}: rounded entry {i} {} is not within u|z| + η of {}",
            y[i], z[i]
        ));
    }
    check_output(&model, op, convention, x, eps, &y)
        .map_err(|e| format!("{dt} {op} {convention}: {e}"))
}

fn check(budget: Budget) -> CheckReport {
    run_checks(
        budget,
        THEOREM.id,
        |tally| {
            let q = |n: i64| Rational::from(n);
            // ε = 0 on a row whose output is irrational, and a row of one huge offset.
            let rows = [
                vec![q(0), q(1), q(3)],
                vec![q(1 << 40), q((1 << 40) + 1), q(1 << 40)],
            ];
            for dt in Dtype::ALL {
                for x in &rows {
                    for op in Op::ALL {
                        tally.record(
                            || format!("edge {dt} {op}"),
                            check_rounded_case(
                                round_exact,
                                dt,
                                op,
                                EpsConvention::Inside,
                                x,
                                &q(0),
                            ),
                        );
                    }
                }
            }
            tally.record(
                || "d = 1".into(),
                check_rounded_case(
                    round_exact,
                    Dtype::F32,
                    Op::RmsNorm,
                    EpsConvention::Outside,
                    &[q(3)],
                    &q(1),
                ),
            );
        },
        |inputs| {
            let dt = Dtype::ALL[inputs.below(4) as usize];
            let d = inputs.width();
            let fam = Family::of_dtype(dt)[inputs.below(5) as usize];
            let row = inputs.row_of(fam, d);
            let eps = inputs.eps();
            let op = Op::ALL[inputs.below(2) as usize];
            let convention = if inputs.below(2) == 0 {
                EpsConvention::Inside
            } else {
                EpsConvention::Outside
            };
            check_rounded_case(round_exact, dt, op, convention, &row.values, &eps)
                .map_err(|e| format!("{} ε={eps}: {e}", row.describe()))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::pow2;
    use crate::problem::Eps;
    use crate::theorems::exact_vec::ints;

    #[test]
    fn round_exact_agrees_with_the_format_rounding_on_rationals() {
        // Values exactly representable in f64 round like Dtype::round_f64 (itself checked
        // against MPFR in dtype.rs), including ties and subnormals.
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for dt in [Dtype::F16, Dtype::BF16, Dtype::F32] {
            let mut xs = vec![
                1.0 + dt.unit_roundoff(),
                1.0 + 3.0 * dt.unit_roundoff(),
                dt.min_positive_subnormal() / 2.0,
                dt.min_positive_subnormal() * 1.5,
                -0.0,
                0.0,
                -dt.min_positive_subnormal() / 4.0,
                dt.max_finite() * 1.5,
            ];
            for _ in 0..2000 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let v = f64::from_bits(s);
                if v.is_finite() && v.abs() < 1e6 && v.abs() > 1e-45 {
                    xs.push(v);
                }
            }
            for v in xs {
                let z = Surd::rational(Rational::from_f64(v).unwrap());
                // An exact zero has no sign: it rounds to +0.
                let want = if v == 0.0 { 0 } else { dt.round_f64(v) };
                let got = round_exact(dt, &z);
                assert_eq!(
                    got,
                    want,
                    "{dt} {v:e}: got {:e} want {:e}",
                    dt.to_f64(got),
                    dt.to_f64(want)
                );
            }
        }
    }

    #[test]
    fn round_exact_on_surds() {
        // √2 in f32 is 0x3fb504f3; −√2 its negation; √(1/2)·2^-140 is subnormal in f32.
        let r2 = Surd::sqrt(Rational::from(2)).unwrap();
        assert_eq!(round_exact(Dtype::F32, &r2), 0x3fb5_04f3);
        assert_eq!(round_exact(Dtype::F32, &r2.neg()), 0xbfb5_04f3);
        assert_eq!(round_exact(Dtype::F64, &r2), 2f64.sqrt().to_bits());
        assert_eq!(
            round_exact(Dtype::F16, &r2),
            half::f16::from_f64(2f64.sqrt()).to_bits() as u64
        );
        let tiny = r2.scale(&Rational::from_f64(pow2(-141)).unwrap());
        assert_eq!(
            Dtype::F32.to_f64(round_exact(Dtype::F32, &tiny)),
            (2f64.sqrt() * pow2(-141)) as f32 as f64
        );
        // A negative value below half the smallest subnormal rounds to −0.
        let neg_tiny = Surd::rational(-Rational::from_f64(pow2(-160)).unwrap());
        assert_eq!(round_exact(Dtype::F32, &neg_tiny), 0x8000_0000);
        // Beyond the overflow threshold: ∞.
        let huge = Surd::rational(Rational::from_f64(pow2(17)).unwrap());
        assert_eq!(round_exact(Dtype::F16, &huge), Dtype::F16.inf_bits());
        assert_eq!(
            round_exact(Dtype::F16, &huge.neg()),
            Dtype::F16.inf_bits() | 0x8000
        );
    }

    #[test]
    fn the_exact_correction_reaches_the_rounding_from_any_nearby_start() {
        let dt = Dtype::F32;
        let one = 0x3f80_0000u64;
        let q = |v: f64| Rational::from_f64(v).unwrap();
        // Double rounding: 1 + 2^-24 + 2^-80 rounds to 1 + 2^-24 in f64, a tie that f32 breaks
        // to 1; the exact value is above the midpoint, so 1 + 2^-23.
        let z = Surd::rational(q(1.0 + pow2(-24)) + (Rational::from(1) >> 80u32));
        assert_eq!(dt.round_f64(z.approx()), one);
        assert_eq!(round_exact(dt, &z), one + 1);
        // Exact ties go to the even neighbour, from below and from above.
        let tie_odd_even = Surd::rational(q(1.0 + 3.0 * pow2(-24))); // between one+1 (odd) and one+2
        let tie_even_odd = Surd::rational(q(1.0 + pow2(-24))); // between one (even) and one+1
        for start in [one - 3, one - 1, one, one + 1, one + 2, one + 5] {
            assert_eq!(
                round_from(dt, &tie_odd_even, start),
                one + 2,
                "start {start:#x}"
            );
            assert_eq!(
                round_from(dt, &tie_even_odd, start),
                one,
                "start {start:#x}"
            );
            assert_eq!(
                round_from(dt, &tie_odd_even.neg(), start | 1 << 31),
                (one + 2) | 1 << 31
            );
            assert_eq!(
                round_from(dt, &tie_even_odd.neg(), start | 1 << 31),
                one | 1 << 31
            );
            // √2/2 = 0x3f3504f3 in f32 (irrational: never a tie), from nearby starts.
            let half_r2 = Surd::sqrt(Rational::from((1, 2))).unwrap();
            let near = 0x3f35_04f3 + start - one;
            assert_eq!(round_from(dt, &half_r2, near), 0x3f35_04f3);
        }
        // Across zero: signed zeros and the smallest subnormals.
        let tiny = Surd::rational(q(pow2(-149)));
        assert_eq!(round_from(dt, &tiny, 0x8000_0003), 1);
        assert_eq!(round_from(dt, &tiny.neg(), 3), 0x8000_0001);
        assert_eq!(round_from(dt, &Surd::zero(), 0x8000_0002), 0);
        assert_eq!(round_from(dt, &tiny.scale(&q(0.25)).neg(), 2), 0x8000_0000);
    }

    #[test]
    fn round_exact_at_the_overflow_threshold() {
        // f16: max 65504, next binade would start at 65536, threshold 65520 (a tie: to ∞, whose
        // significand is even). −∞ mirrors it.
        let dt = Dtype::F16;
        let at = |v: i64| round_exact(dt, &Surd::rational(Rational::from(v)));
        assert_eq!(at(65520), dt.inf_bits());
        assert_eq!(at(65519), 0x7bff);
        assert_eq!(at(-65520), dt.inf_bits() | 0x8000);
        assert_eq!(at(-65519), 0xfbff);
        assert_eq!(point(dt, dt.inf_bits()), Rational::from(65536));
        assert_eq!(point(dt, dt.inf_bits() | 0x8000), Rational::from(-65536));
        assert_eq!(point(dt, 0x3c00), Rational::from(1));
        // Just above the threshold by an irrational amount, and just below.
        let above = Surd::sqrt(Rational::from(65520i64 * 65520 + 1)).unwrap();
        let below = Surd::sqrt(Rational::from(65520i64 * 65520 - 1)).unwrap();
        assert_eq!(round_exact(dt, &above), dt.inf_bits());
        assert_eq!(round_exact(dt, &below), 0x7bff);
    }

    #[test]
    fn bounds_and_model() {
        let m = ErrorModel::correctly_rounded(Dtype::F32);
        assert_eq!(m.relative, Rational::from_f64(pow2(-24)).unwrap());
        assert_eq!(m.absolute, Rational::from_f64(pow2(-150)).unwrap());
        let t = m.t();
        assert_eq!(t, exact_pow2(-24) + exact_pow2(-150));
        assert_eq!(m.mean_bound(), t);
        assert_eq!(
            m.norm_bound(4),
            (Rational::from(1) + &t).square() * 4u32 - 4u32
        );
        let k = ErrorModel::within_ulps(Dtype::F32, 3);
        assert_eq!(k.relative, Rational::from_f64(6.0 * pow2(-24)).unwrap());
        assert_eq!(k.absolute, Rational::from_f64(6.0 * pow2(-150)).unwrap());
        let z = Surd::rational(Rational::from(1));
        assert!(m.admits(&z, &Rational::from(1)));
        assert!(m.admits(
            &z,
            &(Rational::from(1) + Rational::from_f64(pow2(-24)).unwrap())
        ));
        assert!(!m.admits(
            &z,
            &(Rational::from(1) + Rational::from_f64(pow2(-23)).unwrap())
        ));
    }

    #[test]
    fn correctly_rounded_outputs_satisfy_the_corollaries() {
        let x = ints(&[1, 2, 4, 8, 16, 3]);
        for dt in Dtype::ALL {
            for op in Op::ALL {
                for conv in [EpsConvention::Inside, EpsConvention::Outside] {
                    for eps in [Rational::new(), Rational::from((1, 3))] {
                        check_rounded_case(round_exact, dt, op, conv, &x, &eps).unwrap();
                    }
                }
            }
        }
        assert!(check_rounded_case(
            round_exact,
            Dtype::F32,
            Op::LayerNorm,
            EpsConvention::Inside,
            &ints(&[2, 2]),
            &Rational::new()
        )
        .is_ok());
    }

    #[test]
    fn faulty_outputs_break_the_corollaries() {
        let x = ints(&[1, 2, 4, 8, 16, 3, -5, 7]);
        let eps = Rational::new();
        let m = ErrorModel::correctly_rounded(Dtype::F32);
        let z = normalize(Op::LayerNorm, &x, &eps, EpsConvention::Inside, None, None).unwrap();
        let y = round_all(round_exact, Dtype::F32, &z);
        check_output(&m, Op::LayerNorm, EpsConvention::Inside, &x, &eps, &y).unwrap();
        // Every entry pushed up by 4 ulps of 1: the mean leaves the bound.
        let shift = Rational::from_f64(pow2(-21)).unwrap();
        let biased: Vec<Rational> = y.iter().map(|v| Rational::from(v + &shift)).collect();
        let e =
            check_output(&m, Op::LayerNorm, EpsConvention::Inside, &x, &eps, &biased).unwrap_err();
        assert!(e.contains("mean"), "{e}");
        // The unbiased variance (d − 1): ‖y‖² = d − 1 instead of d.
        let n = Rational::from(x.len());
        let scale = (Rational::from(&n - 1u32) / &n).square();
        let wrong: Vec<Rational> = y.iter().map(|v| Rational::from(v * &scale)).collect();
        let e = check_output(&m, Op::RmsNorm, EpsConvention::Inside, &x, &eps, &wrong).unwrap_err();
        assert!(e.contains("‖y‖²"), "{e}");
        assert!(check_output(&m, Op::LayerNorm, EpsConvention::Inside, &x, &eps, &y[..3]).is_err());
        // Undefined rows carry no claim.
        assert!(check_output(
            &m,
            Op::LayerNorm,
            EpsConvention::Inside,
            &ints(&[1, 1]),
            &eps,
            &[]
        )
        .is_ok());
    }

    #[test]
    fn bounds_are_inclusive_and_tight_where_derived() {
        // z = (−1, 1) (LayerNorm, ε = 0, d = 2). y = (−1 + 2t, 1) has mean exactly t;
        // y = (1 + t)·z has ‖y‖² − d exactly d(2t + t²): both on the bound, so both pass, and a
        // hair beyond fails.
        let m = ErrorModel::correctly_rounded(Dtype::F32);
        let t = m.t();
        let x = ints(&[-1, 1]);
        let zero = Rational::new();
        let check =
            |y: &[Rational]| check_output(&m, Op::LayerNorm, EpsConvention::Inside, &x, &zero, y);
        let hair = Rational::from(1) >> 200u32;
        let on_mean = [
            Rational::from(-1) + Rational::from(&t * 2u32),
            Rational::from(1),
        ];
        check(&on_mean).unwrap();
        let past_mean = [on_mean[0].clone() + &hair, on_mean[1].clone() + &hair];
        assert!(check(&past_mean).unwrap_err().contains("mean"));
        let grown = Rational::from(1) + &t;
        let on_norm = [Rational::from(-&grown), grown.clone()];
        check(&on_norm).unwrap();
        let past_norm = [Rational::from(-&grown) - &hair, grown + &hair];
        assert!(check(&past_norm).unwrap_err().contains("‖y‖²"));
    }

    #[test]
    fn a_wrong_rounding_breaks_the_premise() {
        // Rounding one ulp toward −∞ from the correct result leaves u|z| + η.
        fn one_below(dt: Dtype, z: &Surd) -> u64 {
            dt.next_down(round_exact(dt, z))
        }
        let x = ints(&[1, 2, 4, 8]);
        let e = check_rounded_case(
            one_below,
            Dtype::F32,
            Op::LayerNorm,
            EpsConvention::Inside,
            &x,
            &Rational::new(),
        )
        .unwrap_err();
        assert!(e.contains("not within"), "{e}");
        check_rounded_case(
            round_exact,
            Dtype::F32,
            Op::LayerNorm,
            EpsConvention::Inside,
            &x,
            &Rational::new(),
        )
        .unwrap();
    }

    #[test]
    fn problem_outputs() {
        let dt = Dtype::F32;
        let xs = [
            1.0f32, 2.0, 4.0, 9.0, 3.0, -1.0, 0.5, 7.0, 5.0, 5.0, 5.0, 5.0,
        ];
        let mut problem = Problem {
            op: Op::LayerNorm,
            dtype: dt,
            eps: Eps::from_f32(0.0).unwrap(),
            convention: EpsConvention::Inside,
            rows: 3,
            d: 4,
            x: xs.iter().map(|v| v.to_bits() as u64).collect(),
            gamma: None,
            beta: None,
        };
        let exact: Vec<u64> = (0..3)
            .flat_map(|r| {
                let x: Vec<Rational> = problem
                    .row(r)
                    .iter()
                    .map(|&b| dt.to_rational(b).unwrap())
                    .collect();
                match normalize(
                    Op::LayerNorm,
                    &x,
                    &Rational::new(),
                    EpsConvention::Inside,
                    None,
                    None,
                ) {
                    Some(z) => z.iter().map(|zi| round_exact(dt, zi)).collect::<Vec<_>>(),
                    None => vec![dt.nan_bits(); 4],
                }
            })
            .collect();
        let m = ErrorModel::correctly_rounded(dt);
        assert_eq!(check_problem_output(&problem, &exact, &m).unwrap(), None);
        let mut bad = exact.clone();
        bad[0] = dt.nan_bits();
        assert!(check_problem_output(&problem, &bad, &m)
            .unwrap()
            .unwrap()
            .contains("non-finite"));
        let mut bad = exact.clone();
        bad[1] = (2.0f32).to_bits() as u64;
        assert!(check_problem_output(&problem, &bad, &m)
            .unwrap()
            .unwrap()
            .starts_with("row 0"));
        // A faulty second row is reported as row 1; the constant third row has no claim.
        let mut bad = exact.clone();
        bad[5] = (2.0f32).to_bits() as u64;
        assert!(check_problem_output(&problem, &bad, &m)
            .unwrap()
            .unwrap()
            .starts_with("row 1"));
        let mut free = exact.clone();
        free[8] = (1.0f32).to_bits() as u64;
        assert_eq!(check_problem_output(&problem, &free, &m).unwrap(), None);
        assert!(check_problem_output(&problem, &exact[..4], &m).is_err());
        problem.beta = Some(vec![0; 4]);
        assert!(check_problem_output(&problem, &exact, &m).is_err());
    }
}
