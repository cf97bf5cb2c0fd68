//! Exact row statistics. The sums Σx and Σx² are accumulated exactly (every input and, for
//! the narrow formats, every square is an exact f64), then the mean μ, the quantity q under
//! the root (σ² for LayerNorm, mean(x²) for RMSNorm) and ε become exact rationals. From them
//! come the fast path's double-double approximations: μ and the inverse scale 1/s.

use super::dd::DoubleDouble;
use super::superacc::{SuperAccumulator, SCALE_EXPONENT};
use crate::dtype::Dtype;
use crate::problem::{EpsConvention, Op};
use crate::wide::Wide;
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
    /// The row holds NaN or ±∞. IEEE propagation: every output is NaN, except RMSNorm rows
    /// with ±∞ and no NaN, where finite elements tend to γ·0 + β (x/∞) and ±∞ ones are NaN.
    NonFinite,
}

/// The exact statistics of one row, and their fast-path approximations.
#[derive(Debug, Clone)]
pub struct RowStats {
    pub kind: RowKind,
    /// Whether the row holds a NaN (as opposed to only ±∞) — see `RowKind::NonFinite`.
    pub has_nan: bool,
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
    /// 1/s to 160 bits (0 on undefined rows): MPFR's exponent range holds every row's scale.
    pub inv_scale: Float,
    /// The factors of the judge's bound (`judge::tolerance`), each rounded once to 53 bits
    /// with an unbounded exponent (`Wide`), so that no product of them rounds to 0 or ∞ on
    /// the way on any row (s itself need not be an f64): 1/s; μ as hi + lo (μ's nearest, then
    /// the rest's: δ_i = x_i − μ is formed from both, accurate where x_i ≈ μ); and mean|x|
    /// (Σ|x| summed in order, then divided by d). On fast rows these are the f64 values
    /// `inv_scale_dd.hi`, `mean_dd` and the f64 sum's mean.
    pub inv_scale_wide: Wide,
    pub mean_wide: [Wide; 2],
    pub mean_abs: Wide,
    /// σ = √q as an f64, for reports (may under- or overflow on extreme f64 rows).
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
            has_nan: values.iter().any(|x| x.is_nan()),
            op,
            convention,
            mean: Rational::new(),
            q: Rational::new(),
            eps: eps.clone(),
            mean_dd: DoubleDouble::ZERO,
            inv_scale_dd: DoubleDouble::ZERO,
            fast: false,
            inv_scale: Float::new(SCALE_PRECISION),
            inv_scale_wide: Wide::ZERO,
            mean_wide: [Wide::ZERO; 2],
            mean_abs: Wide::ZERO,
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
        stats.sigma = q_float.sqrt().to_f64();
        if !undefined {
            stats.inv_scale = scale.recip();
            stats.inv_scale_dd = DoubleDouble::from_float(&stats.inv_scale);
        }
        let within = |x: f64| x == 0.0 || x.abs().log2().abs() < FAST_PATH_MAX_EXPONENT as f64;
        let max_abs = values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        stats.fast = !undefined
            && within(stats.inv_scale_dd.hi)
            && within(stats.mean_dd.hi)
            && within(max_abs)
            && within(max_abs * stats.inv_scale_dd.hi);
        stats.inv_scale_wide = Wide::from_float(&stats.inv_scale);
        stats.mean_wide = if stats.fast {
            // μ ≥ 2^-900 or 0: `from_rational`'s hi and lo are the nearest f64s (lo to within
            // 2^-1075, far below what the bound resolves).
            [Wide::of(stats.mean_dd.hi), Wide::of(stats.mean_dd.lo)]
        } else {
            let hi = Float::with_val(53, &mean);
            let rest = &mean - hi.to_rational().expect("finite");
            [
                Wide::from_float(&hi),
                Wide::from_float(&Float::with_val(53, &rest)),
            ]
        };
        // Σ|x| in order; on fast rows in f64, where it cannot overflow (|x| < 2^900) and every
        // addition rounds as `Wide`'s would (subnormal sums are exact in both).
        let sum_abs = if stats.fast {
            Wide::of(values.iter().map(|x| x.abs()).sum::<f64>())
        } else {
            values.iter().fold(Wide::ZERO, |a, x| a + Wide::of(x.abs()))
        };
        stats.mean_abs = sum_abs / Wide::of(d as f64);
        stats.mean = mean;
        stats.q = q;
        stats
    }
}

/// Σx and Σx² of finite values, exactly.
pub fn exact_sums(values: &[f64], dtype: Dtype) -> (Rational, Rational) {
    if dtype != Dtype::F64 {
        if let Some(sums) = fixed_point_sums(values) {
            return sums;
        }
    }
    superaccumulator_sums(values, dtype)
}

/// The fast route for rows of narrow-format values whose exponents span little: every value
/// is m·2^e with |m| < 2^24, so with e₀ the smallest exponent, Σ m·2^(e−e₀) and
/// Σ m²·2^(2(e−e₀)) are integers that fit an i128 when the span is small. None otherwise.
fn fixed_point_sums(values: &[f64]) -> Option<(Rational, Rational)> {
    // Decompose x = m·2^e with m an integer of at most 53 bits (24 for the narrow formats).
    let decompose = |x: f64| -> (i64, i32) {
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let frac = (bits & ((1u64 << 52) - 1)) as i64;
        let (m, e) = if biased == 0 {
            (frac, -1074)
        } else {
            (frac | (1i64 << 52), biased - 1075)
        };
        // Strip trailing zeros so m holds the significant bits only.
        let tz = (m.trailing_zeros()).min(63) as i32;
        let (m, e) = (m >> tz, e + tz);
        (if x < 0.0 { -m } else { m }, e)
    };
    let (mut e_min, mut e_max) = (i32::MAX, i32::MIN);
    for &x in values {
        if x != 0.0 {
            let (m, e) = decompose(x);
            if m.unsigned_abs() >= 1 << 24 {
                return None;
            }
            e_min = e_min.min(e);
            e_max = e_max.max(e);
        }
    }
    if e_min == i32::MAX {
        return Some((Rational::new(), Rational::new()));
    }
    let span = e_max - e_min;
    let log_d = (usize::BITS - values.len().leading_zeros()) as i32;
    if 2 * span + 48 + log_d + 2 >= 127 {
        return None;
    }
    let (mut s1, mut s2) = (0i128, 0i128);
    for &x in values {
        if x != 0.0 {
            let (m, e) = decompose(x);
            let k = (e - e_min) as u32;
            s1 += (m as i128) << k;
            s2 += ((m * m) as i128) << (2 * k);
        }
    }
    let scale = |v: i128, e: i32| {
        let r = Rational::from(rug::Integer::from(v));
        if e >= 0 {
            r << e as u32
        } else {
            r >> (-e) as u32
        }
    };
    Some((scale(s1, e_min), scale(s2, 2 * e_min)))
}

/// The general route: superaccumulators (any f64 values).
fn superaccumulator_sums(values: &[f64], dtype: Dtype) -> (Rational, Rational) {
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
    fn both_routes_give_the_same_sums() {
        let rows: [&[f64]; 4] = [
            &[1.5, -2.25, 1e-3_f32 as f64, 0.0, 3.0],
            &[1e30_f32 as f64, 1e-30_f32 as f64, -7.0],
            &[0.0, -0.0],
            &[65504.0, -65504.0, 2f64.powi(-24)],
        ];
        for row in rows {
            let fixed = fixed_point_sums(row);
            let general = superaccumulator_sums(row, Dtype::F32);
            let direct_sum = row
                .iter()
                .map(|&x| q(x))
                .fold(Rational::new(), |a, b| a + b);
            let direct_sq = row
                .iter()
                .map(|&x| q(x).square())
                .fold(Rational::new(), |a, b| a + b);
            assert_eq!(general, (direct_sum.clone(), direct_sq.clone()));
            if let Some(f) = fixed {
                assert_eq!(f, (direct_sum, direct_sq));
            }
        }
        // A wide exponent span must not take the fixed-point route.
        assert!(fixed_point_sums(&[1e30_f32 as f64, 1e-30_f32 as f64]).is_none());
        assert!(fixed_point_sums(&[1.5, -2.25, 0.001_f32 as f64]).is_some());
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
