//! Exact row statistics. The sums Σx and Σx² are accumulated exactly (every input and, for
//! the narrow formats, every square is an exact f64), then the mean μ, the quantity q under
//! the root (σ² for LayerNorm, mean(x²) for RMSNorm) and ε become exact rationals. From them
//! come the fast path's double-double approximations: μ and the inverse scale 1/s.

use super::dd::DoubleDouble;
use super::superacc::{SuperAccumulator, SCALE_EXPONENT};
use crate::dtype::{exponent_of, Dtype};
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
        let extremes = Extremes::of(values);
        let nonfinite = !extremes.all_finite;
        let mut stats = RowStats {
            kind: RowKind::NonFinite,
            has_nan: extremes.has_nan,
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
        let (sum, sum_sq) = exact_sums_with(values, dtype, &extremes);
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
        let max_abs = extremes.largest;
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

/// What one pass over a row tells: whether every value is finite, whether one is NaN, and
/// the extremes of |x| over the finite values (the smallest over the nonzero ones; ∞ where
/// there is none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Extremes {
    pub all_finite: bool,
    pub has_nan: bool,
    pub largest: f64,
    pub smallest_nonzero: f64,
}

impl Extremes {
    /// Branch-free, in four lanes: one chain of dependent comparisons would take several
    /// cycles an element, and this pass stands in for four (finiteness, NaN, max |x|, the
    /// fixed-point route's smallest |x|).
    pub fn of(values: &[f64]) -> Extremes {
        let mut largest = [0.0f64; 4];
        let mut smallest = [f64::INFINITY; 4];
        let (mut all_finite, mut has_nan) = (true, false);
        let mut take = |lane: usize, x: f64| {
            all_finite &= x.is_finite();
            has_nan |= x.is_nan();
            // NaN and ±∞ compare false against what they would replace, or are excluded.
            let a = if x.is_finite() { x.abs() } else { 0.0 };
            largest[lane] = if a > largest[lane] { a } else { largest[lane] };
            let nonzero = if a == 0.0 { f64::INFINITY } else { a };
            smallest[lane] = if nonzero < smallest[lane] {
                nonzero
            } else {
                smallest[lane]
            };
        };
        let mut fours = values.chunks_exact(4);
        for four in &mut fours {
            for (lane, &x) in four.iter().enumerate() {
                take(lane, x);
            }
        }
        for (lane, &x) in fours.remainder().iter().enumerate() {
            take(lane, x);
        }
        Extremes {
            all_finite,
            has_nan,
            largest: largest.into_iter().fold(0.0, f64::max),
            smallest_nonzero: smallest.into_iter().fold(f64::INFINITY, f64::min),
        }
    }
}

/// Σx and Σx² of finite values, exactly.
pub fn exact_sums(values: &[f64], dtype: Dtype) -> (Rational, Rational) {
    exact_sums_with(values, dtype, &Extremes::of(values))
}

/// [`exact_sums`] with the row's [`Extremes`] already taken.
fn exact_sums_with(values: &[f64], dtype: Dtype, extremes: &Extremes) -> (Rational, Rational) {
    if dtype != Dtype::F64 {
        if let Some(sums) = fixed_point_sums(values, dtype, extremes) {
            return sums;
        }
    }
    superaccumulator_sums(values, dtype)
}

/// The fast route for rows of narrow-format values whose magnitudes span little: every
/// value of a format of precision p is a multiple of 2^e₀, with e₀ the lowest exponent of
/// the row's smallest nonzero |x| (or of the format's subnormals) less p − 1, so
/// k = x·2^(−e₀) is an integer, and Σk and Σk² fit an i128 when max|x|/2^e₀ is small.
/// Two passes of plain arithmetic: the extremes of |x|, then each k (the scaling exact, its
/// conversion checked) with its square in i128. None where the span is too wide, or where a
/// value is not a multiple of 2^e₀ (values not of `dtype`); the superaccumulator takes those.
fn fixed_point_sums(
    values: &[f64],
    dtype: Dtype,
    extremes: &Extremes,
) -> Option<(Rational, Rational)> {
    let (smallest, largest) = (extremes.smallest_nonzero, extremes.largest);
    if !extremes.all_finite {
        return None;
    }
    if largest == 0.0 {
        return Some((Rational::new(), Rational::new()));
    }
    let p = dtype.precision();
    let e_min = exponent_of(smallest).max(dtype.emin()) - (p - 1);
    // Every |k| < 2^bits.
    let bits = exponent_of(largest) + 1 - e_min;
    let log_d = (usize::BITS - values.len().leading_zeros()) as i32;
    if bits > 62 || 2 * bits + log_d > 126 || !(-1022..=1023).contains(&-e_min) {
        return None;
    }
    let scale = crate::dtype::pow2(-e_min);
    let (mut s1, mut s2) = (0i128, 0i128);
    let mut integral = true;
    for &x in values {
        let scaled = x * scale; // exact: a power-of-two scaling within f64's normal range
        let k = scaled as i64;
        integral &= k as f64 == scaled;
        s1 += k as i128;
        s2 += (k as i128) * (k as i128);
    }
    if !integral {
        return None;
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
            let fixed = fixed_point_sums(row, Dtype::F32, &Extremes::of(row));
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
        assert!(fixed_point_sums(
            &[1e30_f32 as f64, 1e-30_f32 as f64],
            Dtype::F32,
            &Extremes::of(&[1e30_f32 as f64, 1e-30_f32 as f64])
        )
        .is_none());
        assert!(fixed_point_sums(
            &[1.5, -2.25, 0.001_f32 as f64],
            Dtype::F32,
            &Extremes::of(&[1.5, -2.25, 0.001_f32 as f64])
        )
        .is_some());
        // A value with more significant bits than the format's is refused, not truncated.
        assert!(fixed_point_sums(&[1.5, 0.1], Dtype::F32, &Extremes::of(&[1.5, 0.1])).is_none());
        assert!(fixed_point_sums(
            &[1.5, 0.1_f32 as f64],
            Dtype::F16,
            &Extremes::of(&[1.5, 0.1_f32 as f64])
        )
        .is_none());
    }

    /// The fixed-point route against the superaccumulator on random rows of every narrow
    /// format, spans from one binade to past the route's limit, subnormals and zeros mixed in.
    #[test]
    fn fixed_point_route_agrees_with_the_superaccumulator_on_random_rows() {
        let mut rng = crate::rng::Rng::new(20261206, 0);
        let mut taken = 0;
        for case in 0..600 {
            let dtype = [Dtype::F32, Dtype::F16, Dtype::BF16][case % 3];
            let d = 1 + rng.below(300);
            let span = rng.below(48) as i32;
            let base = rng.below(60) as i32 - 40;
            let row: Vec<f64> = (0..d)
                .map(|_| {
                    if rng.below(10) == 0 {
                        return if rng.coin() { 0.0 } else { -0.0 };
                    }
                    let e = base - rng.below(span as usize + 1) as i32;
                    let x = rng.normal() * crate::dtype::pow2(e);
                    dtype.to_f64(dtype.round_f64(x))
                })
                .collect();
            if let Some(fixed) = fixed_point_sums(&row, dtype, &Extremes::of(&row)) {
                taken += 1;
                assert_eq!(fixed, superaccumulator_sums(&row, dtype), "{dtype} {row:?}");
            }
        }
        assert!(
            taken > 300,
            "the fixed-point route was taken {taken} times of 600"
        );
    }

    /// The one-pass extremes against their definitions, on rows of every length mod 4 with
    /// zeros, NaN and ±∞ in every lane.
    #[test]
    fn extremes_match_their_definitions() {
        let mut rng = crate::rng::Rng::new(5, 0);
        for _ in 0..2000 {
            let d = rng.below(13);
            let row: Vec<f64> = (0..d)
                .map(|_| match rng.below(12) {
                    0 => 0.0,
                    1 => f64::NAN,
                    2 => f64::INFINITY * if rng.coin() { 1.0 } else { -1.0 },
                    _ => rng.normal() * crate::dtype::pow2(rng.below(200) as i32 - 100),
                })
                .collect();
            let finite = || row.iter().filter(|x| x.is_finite()).map(|x| x.abs());
            let want = Extremes {
                all_finite: row.iter().all(|x| x.is_finite()),
                has_nan: row.iter().any(|x| x.is_nan()),
                largest: finite().fold(0.0, f64::max),
                smallest_nonzero: finite().filter(|&a| a != 0.0).fold(f64::INFINITY, f64::min),
            };
            assert_eq!(Extremes::of(&row), want, "{row:?}");
        }
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
