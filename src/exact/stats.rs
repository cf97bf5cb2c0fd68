//! Exact row statistics. The sums Σx and Σx² are accumulated exactly (every input and, for
//! the narrow formats, every square is an exact f64), then the mean μ, the quantity q under
//! the root (σ² for LayerNorm, mean(x²) for RMSNorm) and ε become exact rationals. From them
//! come the fast path's double-double approximations: μ and the inverse scale 1/s.

use super::dd::DoubleDouble;
use super::superacc::{SuperAccumulator, SCALE_EXPONENT};
use crate::dtype::Dtype;
use crate::problem::{EpsConvention, Op};
use rug::{Float, Rational};

/// Working precision (bits) of the MPFR evaluation of 1/s.
const SCALE_PRECISION: u32 = 160;
/// Magnitudes the double-double fast path accepts without under- or overflow in its
/// error-free transformations; rows outside go to the exact path.
const FAST_PATH_MAX_EXPONENT: i32 = 900;

/// What kind of row this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// Every output is a real number.
    Defined,
    /// The scale s is 0 (σ²+ε = 0, or σ = ε = 0 outside): outputs are 0/0, not judged.
    Undefined,
    /// The row holds NaN or ±∞: every output is NaN (IEEE propagation).
    NonFinite,
}

/// The exact statistics of one row, and their fast-path approximations.
#[derive(Debug, Clone)]
pub struct RowStats {
    pub kind: RowKind,
    pub op: Op,
    pub convention: EpsConvention,
    /// μ exactly (0 for RMSNorm).
    pub mean: Rational,
    /// q exactly: σ² = mean((x−μ)²) for LayerNorm, mean(x²) for RMSNorm.
    pub q: Rational,
    /// ε exactly.
    pub eps: Rational,
    /// μ as a double-double.
    pub mean_dd: DoubleDouble,
    /// 1/s as a double-double, s = √(q+ε) (inside) or √q + ε (outside).
    pub inv_scale_dd: DoubleDouble,
    /// Whether the double-double fast path is safe for this row.
    pub fast: bool,
    /// Approximations the judge's tolerance uses (f64, relative error ≲ 2^-50).
    pub mean_abs: f64,
    pub scale: f64,
    pub sigma: f64,
}

impl RowStats {
    /// Computes the statistics of a row of exact values (each an f64 of `dtype`'s value set).
    pub fn compute(
        values: &[f64],
        dtype: Dtype,
        op: Op,
        convention: EpsConvention,
        eps: &Rational,
    ) -> RowStats {
        let d = values.len();
        let nonfinite = values.iter().any(|x| !x.is_finite());
        let mut stats = RowStats {
            kind: RowKind::NonFinite,
            op,
            convention,
            mean: Rational::new(),
            q: Rational::new(),
            eps: eps.clone(),
            mean_dd: DoubleDouble::ZERO,
            inv_scale_dd: DoubleDouble::ZERO,
            fast: false,
            mean_abs: f64::NAN,
            scale: f64::NAN,
            sigma: f64::NAN,
        };
        if nonfinite || d == 0 {
            return stats;
        }
        let (sum, sum_sq) = exact_sums(values, dtype);
        let d_q = Rational::from(d as u64);
        let mean_all = Rational::from(&sum / &d_q);
        let mean_sq = Rational::from(&sum_sq / &d_q);
        let (mean, q) = match op {
            Op::LayerNorm => {
                let sq = Rational::from(mean_all.square_ref());
                (mean_all, mean_sq - sq)
            }
            Op::RmsNorm => (Rational::new(), mean_sq),
        };
        debug_assert!(q >= 0);
        let undefined = match convention {
            EpsConvention::Inside => Rational::from(&q + eps) == 0,
            EpsConvention::Outside => q == 0 && *eps == 0,
        };
        stats.kind = if undefined {
            RowKind::Undefined
        } else {
            RowKind::Defined
        };
        let q_float = Float::with_val(SCALE_PRECISION, &q);
        let scale = match convention {
            EpsConvention::Inside => {
                Float::with_val(SCALE_PRECISION, Rational::from(&q + eps)).sqrt()
            }
            EpsConvention::Outside => q_float.clone().sqrt() + eps,
        };
        stats.mean_dd = DoubleDouble::from_rational(&mean);
        stats.scale = scale.to_f64();
        stats.sigma = q_float.sqrt().to_f64();
        stats.mean_abs = values.iter().map(|x| x.abs()).sum::<f64>() / d as f64;
        if !undefined {
            stats.inv_scale_dd = DoubleDouble::from_float(&scale.recip());
        }
        let within = |x: f64| x == 0.0 || x.abs().log2().abs() < FAST_PATH_MAX_EXPONENT as f64;
        let max_abs = values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        stats.fast = !undefined
            && within(stats.inv_scale_dd.hi)
            && within(stats.mean_dd.hi)
            && within(max_abs)
            && within(max_abs * stats.inv_scale_dd.hi);
        stats.mean = mean;
        stats.q = q;
        stats
    }
}

/// Σx and Σx² of finite values, exactly.
pub fn exact_sums(values: &[f64], dtype: Dtype) -> (Rational, Rational) {
    let mut sum = SuperAccumulator::new();
    let mut sum_sq = SuperAccumulator::new();
    // For f64 inputs the square needs two f64s (two_prod), exact only away from the ends of
    // the exponent range; rows that leave it are squared in rational arithmetic.
    let squares_exact_in_f64 = dtype != Dtype::F64;
    let safe_two_prod = |x: f64| x == 0.0 || (x.abs() > 1e-140 && x.abs() < 1e150);
    if squares_exact_in_f64 || values.iter().all(|&x| safe_two_prod(x)) {
        for &x in values {
            sum.add(x);
            if squares_exact_in_f64 {
                sum_sq.add(x * x);
            } else {
                let (p, e) = super::dd::two_prod(x, x);
                sum_sq.add(p);
                sum_sq.add(e);
            }
        }
        (to_rational(&sum), to_rational(&sum_sq))
    } else {
        let mut sq = Rational::new();
        for &x in values {
            sum.add(x);
            let r = Rational::from_f64(x).expect("finite");
            sq += r.square();
        }
        (to_rational(&sum), sq)
    }
}

fn to_rational(acc: &SuperAccumulator) -> Rational {
    Rational::from(acc.to_integer()) >> (-SCALE_EXPONENT) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(x: f64) -> Rational {
        Rational::from_f64(x).unwrap()
    }

    #[test]
    fn layer_norm_stats_are_exact() {
        let row = [1.0, 2.0, 4.0];
        let s = RowStats::compute(
            &row,
            Dtype::F32,
            Op::LayerNorm,
            EpsConvention::Inside,
            &q(0.0),
        );
        assert_eq!(s.mean, Rational::from((7, 3)));
        // σ² = (1+4+16)/3 − 49/9 = 14/9
        assert_eq!(s.q, Rational::from((14, 9)));
        assert_eq!(s.kind, RowKind::Defined);
        assert!(s.fast);
    }

    #[test]
    fn constant_rows_are_undefined_only_without_eps() {
        let row = [3.0; 5];
        let s = RowStats::compute(
            &row,
            Dtype::F16,
            Op::LayerNorm,
            EpsConvention::Inside,
            &q(0.0),
        );
        assert_eq!(s.kind, RowKind::Undefined);
        let s = RowStats::compute(
            &row,
            Dtype::F16,
            Op::LayerNorm,
            EpsConvention::Inside,
            &q(1e-5),
        );
        assert_eq!(s.kind, RowKind::Defined);
        let s = RowStats::compute(
            &row,
            Dtype::F16,
            Op::RmsNorm,
            EpsConvention::Outside,
            &q(0.0),
        );
        assert_eq!(s.kind, RowKind::Defined);
        assert_eq!(s.q, Rational::from(9));
    }

    #[test]
    fn nonfinite_rows_are_flagged() {
        let s = RowStats::compute(
            &[1.0, f64::NAN],
            Dtype::F32,
            Op::RmsNorm,
            EpsConvention::Inside,
            &q(0.0),
        );
        assert_eq!(s.kind, RowKind::NonFinite);
    }

    #[test]
    fn f64_extremes_are_squared_exactly() {
        let row = [1e-300, f64::MAX, -f64::MAX, 5e-324];
        let (s1, s2) = exact_sums(&row, Dtype::F64);
        assert_eq!(s1, q(1e-300) + q(5e-324));
        let want = row
            .iter()
            .map(|&x| q(x).square())
            .fold(Rational::new(), |a, b| a + b);
        assert_eq!(s2, want);
        let s = RowStats::compute(
            &row,
            Dtype::F64,
            Op::LayerNorm,
            EpsConvention::Inside,
            &q(0.0),
        );
        assert!(!s.fast);
    }
}
