use super::super::normalize::{CenteredConstants, ScaledConstants};
use super::super::statistics::{is_zero_shift, layer_norm_stats, sum_of_squares};
use super::{applies, min_d, path_format, F32_PATH_MIN_D, WIDEN_MAX_D};
use super::{layer_norm, rms_norm, F32PathPass, ParamsMax};
use crate::dtype::Dtype;
use crate::element::Element;
use crate::exact::{ElementInput, RowKind, RowStats};
use crate::problem::{EpsConvention, Op};
use crate::simd::{uncertain_lane, CertainTest};
use crate::Vectorized;
use half::{bf16, f16};
use rand_chacha::rand_core::{RngCore, SeedableRng};

/// Uniform values in center ± spread, rounded to the format.
fn random<T: Element>(rng: &mut impl RngCore, n: usize, center: f64, spread: f64) -> Vec<T> {
    (0..n)
        .map(|_| {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            T::from_bits(T::DTYPE.round_f64(center + spread * (2.0 * u - 1.0)))
        })
        .collect()
}

fn values<T: Element>(v: &[T]) -> Vec<f64> {
    v.iter().map(|t| T::DTYPE.to_f64(t.to_bits())).collect()
}

/// Element i's input to the exact reference: γ and β empty where absent (1 and 0).
fn input_at<T: Element>(xs: &[f64], gamma: &[T], beta: &[T], i: usize) -> ElementInput {
    let value = |v: &T| T::DTYPE.to_f64(v.to_bits());
    ElementInput {
        x: xs[i],
        gamma: gamma.get(i).map_or(1.0, value),
        beta: beta.get(i).map_or(0.0, value),
    }
}

/// Rows that stress the bound, each as (x, γ, β): ordinary ones, large offsets with a
/// small spread, β cancelling γ·z in every other lane (|y| ≪ |γ·z|), outputs around
/// the smallest kept magnitude, and (bf16) outputs near the top of the range.
fn hard_rows<T: Element>(d: usize, seed: u64) -> Vec<(Vec<T>, Vec<T>, Vec<T>)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut rows = Vec::new();
    // (x center, x spread, γ center, β spread): the mean far from zero against the
    // spread (m_l matters), outputs near 2^-14, β much larger than γ·z (the final
    // rounding matters).
    for (center, spread, g_center, b_spread) in [
        (0.0, 1.0, 1.0, 0.5),
        // |μ|·r ≈ 0.87: the fused form near its widest offset.
        (0.5, 1.0, 1.0, 0.5),
        (3.0, 0.5, 1.0, 0.5),
        (200.0, 4.0, 1.0, 0.5),
        (-1000.0, 60.0, 1.0, 0.5),
        (2000.0, 1.0, 1.0, 0.5),
        (4000.0, 40.0, 1.0, 0.5),
        (0.0, 1.0, 2e-5, 1e-5),
        (0.0, 1.0, 1e-3, 2.0),
    ] {
        let x = random::<T>(&mut rng, d, center, spread);
        let g = random::<T>(&mut rng, d, g_center, 0.5 * g_center);
        let b = random::<T>(&mut rng, d, 0.0, b_spread);
        rows.push((x, g, b));
    }
    // β = −(γ·z rounded to the format) in every other lane: y is what the rounding of
    // γ·z left over.
    let x = random::<T>(&mut rng, d, 0.25, 1.0);
    let g = random::<T>(&mut rng, d, 1.0, 0.5);
    let xs = values(&x);
    let mean = xs.iter().sum::<f64>() / d as f64;
    let var = xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / d as f64;
    let gs = values(&g);
    let b = (0..d)
        .map(|i| {
            let z = (xs[i] - mean) / (var + 1e-5).sqrt();
            let cancel = if i % 2 == 0 { -gs[i] * z } else { 0.0 };
            T::from_bits(T::DTYPE.round_f64(cancel))
        })
        .collect();
    rows.push((x, g, b));
    if T::DTYPE == Dtype::BF16 {
        let x = random::<T>(&mut rng, d, 0.0, 1.0);
        let g = random::<T>(&mut rng, d, 1e38, 0.5e38);
        let b = random::<T>(&mut rng, d, 0.0, 1e38);
        rows.push((x, g, b));
    }
    rows
}

/// Every value the f32 path keeps is the correct rounding of the exact result (the
/// exact reference decides), for both operations, with and without γ and β.
#[test]
fn kept_values_are_correctly_rounded() {
    fn check<T: Element>() -> (usize, usize) {
        let d = 2048;
        let (mut kept, mut total) = (0, 0);
        for (n, (x, g, b)) in hard_rows::<T>(d, 11).into_iter().enumerate() {
            for op in Op::ALL {
                for affine in [true, false] {
                    let (g, b) = if affine {
                        (&g[..], &b[..])
                    } else {
                        (&[][..], &[][..])
                    };
                    let Some((y, reported)) = f32_path_blocks(op, &x, g, b, 1e-5) else {
                        continue;
                    };
                    let eps = rug::Rational::from_f64(1e-5f32 as f64).unwrap();
                    let xs = values(&x);
                    let stats = RowStats::compute(&xs, T::DTYPE, op, EpsConvention::Inside, &eps);
                    assert_eq!(stats.kind, RowKind::Defined);
                    for i in (0..y.len()).filter(|&i| !reported[i]) {
                        let input = input_at(&xs, g, b, i);
                        let want = crate::exact::Element::new(&stats, input).round(T::DTYPE);
                        assert_eq!(
                            y[i].to_bits(),
                            want,
                            "{} {op:?} row {n} affine={affine} i={i}",
                            T::DTYPE
                        );
                    }
                    kept += reported.iter().filter(|&&r| !r).count();
                    total += reported.len();
                }
            }
        }
        (kept, total)
    }
    for (dt, (kept, total)) in [("f16", check::<f16>()), ("bf16", check::<bf16>())] {
        // The path ran: most values were kept, and so checked.
        eprintln!("{dt}: {kept} of {total} kept");
        assert!(kept * 10 > total * 8, "{dt}: {kept} of {total} kept");
    }
}

/// The lane bound E = slope·|ỹ| + floor (module comment) covers |ỹ − y| in every lane
/// of the hard rows, LayerNorm in either form of centering and RMSNorm, with and
/// without γ and β, y from MPFR. The largest share of the bound an error took is
/// printed per form; the fused form's e_m (u·|μ̂| and more) is what covers lanes with
/// ỹ ≈ 0 of rows whose mean is off zero.
#[test]
fn the_bound_covers_every_lane_in_every_form() {
    use super::{Centering, LaneConstants};
    use crate::row::{layer_norm_stats, sum_of_squares};
    use crate::simd::{Scalar, Simd};
    /// The loop's ỹ of a row in its form of centering.
    fn values_of<const G: bool, const B: bool>(
        lanes: &LaneConstants<Scalar>,
        centering: Centering,
        x: [f32; 16],
        gamma: [f32; 16],
        beta: [f32; 16],
    ) -> [f32; 16] {
        match centering {
            Centering::None => lanes.values::<G, B, false>(Scalar, false, x, gamma, beta),
            Centering::Fused { .. } => lanes.values::<G, B, true>(Scalar, true, x, gamma, beta),
            Centering::Split { .. } => lanes.values::<G, B, false>(Scalar, true, x, gamma, beta),
        }
    }
    /// The worst share of the bound per form: RMSNorm, fused, split.
    fn check<T: Element>() -> [f64; 3] {
        let (d, s, eps) = (2048, Scalar, 1e-5f32);
        let exact_eps = rug::Rational::from_f64(eps as f64).unwrap();
        let mut worst = [0f64; 3];
        let mut rows = [0; 3];
        let format = T::F32_PATH.unwrap();
        for (x, g, b) in hard_rows::<T>(d, 5) {
            let xs = values(&x);
            // The row's statistics, once for both ops' affine and plain forms.
            let stats = layer_norm_stats(s, &x, &mut [], None).expect("finite rows");
            let layer_norm_scale = 1.0 / (stats.var + eps as f64).sqrt();
            let mean_square = sum_of_squares(s, &x) / d as f64;
            let rms_norm_scale = 1.0 / (mean_square + eps as f64).sqrt();
            for op in Op::ALL {
                let exact = RowStats::compute(&xs, T::DTYPE, op, EpsConvention::Inside, &exact_eps);
                for affine in [true, false] {
                    let (g, b) = if affine {
                        (&g[..], &b[..])
                    } else {
                        (&[][..], &[][..])
                    };
                    let params = super::ParamsMax {
                        gamma: if affine { T::abs_max(g) } else { 1.0 },
                        beta: T::abs_max(b),
                    };
                    let row = match op {
                        Op::LayerNorm => {
                            super::layer_norm(&stats, layer_norm_scale, d, params, format)
                        }
                        Op::RmsNorm => super::rms_norm(rms_norm_scale, d, params, format),
                    };
                    let Some(row) = row else { continue };
                    let form = match row.centering {
                        Centering::None => 0,
                        Centering::Fused { .. } => 1,
                        Centering::Split { .. } => 2,
                    };
                    rows[form] += 1;
                    let lanes = LaneConstants::new(s, &row);
                    let t = row.test;
                    for j in 0..d / 16 {
                        let load = |v: &[T]| T::load16(s, v[16 * j..][..16].try_into().unwrap());
                        let y = if affine {
                            let (x, g, b) = (load(&x), load(g), load(b));
                            values_of::<true, true>(&lanes, row.centering, x, g, b)
                        } else {
                            let zero = s.f32x16_splat(0.0);
                            values_of::<false, false>(&lanes, row.centering, load(&x), zero, zero)
                        };
                        for (l, &lane) in y.iter().enumerate() {
                            let input = input_at(&xs, g, b, 16 * j + l);
                            let value = crate::exact::Element::new(&exact, input).mpfr_value();
                            let error = (value - lane as f64).abs().to_f64();
                            let bound = (lane as f64).abs() * t.slope as f64 + t.floor as f64;
                            worst[form] = worst[form].max(error / bound);
                        }
                    }
                }
            }
        }
        assert!(
            rows.iter().all(|&n| n > 0),
            "{}: rows per form {rows:?}",
            T::DTYPE
        );
        worst
    }
    for (dt, worst) in [("f16", check::<f16>()), ("bf16", check::<bf16>())] {
        eprintln!(
            "{dt}: the largest error took {:.3} (RMSNorm), {:.3} (fused), {:.3} (split) of its bound",
            worst[0], worst[1], worst[2]
        );
        assert!(worst.iter().all(|&w| w <= 1.0), "{dt}: {worst:?}");
    }
}

/// LayerNorm rows take the fused form where their mean is within
/// `FUSED_MAX_OFFSET` spreads of zero, the split form beyond; RMSNorm rows neither.
#[test]
fn the_fused_form_is_taken_near_zero_only() {
    use super::{Centering, FUSED_MAX_OFFSET};
    use crate::row::statistics::CenteredStats;
    let format = f16::F32_PATH.unwrap();
    let params = super::ParamsMax::NONE;
    let form = |mean: f64, var: f64| {
        let stats = CenteredStats {
            shift: 0.0,
            mean_shifted: mean,
            var,
            passes: 1,
        };
        let scale = 1.0 / var.sqrt();
        super::layer_norm(&stats, scale, 4096, params, format).map(|r| r.centering)
    };
    assert!(matches!(form(0.0, 1.0), Some(Centering::Fused { offset }) if offset == 0.0));
    assert!(matches!(form(0.5, 4.0), Some(Centering::Fused { offset }) if offset == -0.25));
    let edge = FUSED_MAX_OFFSET;
    assert!(matches!(form(edge, 1.0), Some(Centering::Fused { .. })));
    assert!(matches!(form(-edge, 1.0), Some(Centering::Fused { .. })));
    let beyond = edge * (1.0 + 1e-9);
    assert!(matches!(form(beyond, 1.0), Some(Centering::Split { .. })));
    assert!(
        matches!(form(3.0, 2.0), Some(Centering::Split { mean_hi, mean_lo })
        if mean_hi == 3.0 && mean_lo == 0.0)
    );
    let rms = super::rms_norm(1.0, 4096, params, format).unwrap();
    assert_eq!(rms.centering, Centering::None);
}

/// Exact ties and values just above them in f16's subnormal range, where its grid is
/// fixed (2^-24) and its midpoints are not where the bit pattern of the normal range
/// puts them: RMSNorm of ones with ε = 3 gives z = 1/2 exactly, with ε one f32 step
/// below 3 a hair above 1/2 (an f32 rounds it to 1/2); γ = k·2^-24, k odd, puts y on
/// (or just above) the midpoints. Every value kept must be the correct rounding.
#[test]
fn f16_subnormal_midpoints_are_not_kept_wrongly() {
    let d = 1024;
    let x = vec![f16::ONE; d];
    let gamma: Vec<f16> = (0..d)
        .map(|i| f16::from_bits((2 * (i % 300) + 1) as u16))
        .collect();
    for eps in [3.0f32, 3.0f32.next_down()] {
        let Some((y, reported)) = f32_path_blocks(Op::RmsNorm, &x, &gamma, &[], eps) else {
            panic!("the row may take the path");
        };
        let xs = values(&x);
        let e = rug::Rational::from_f64(eps as f64).unwrap();
        let stats = RowStats::compute(&xs, Dtype::F16, Op::RmsNorm, EpsConvention::Inside, &e);
        for i in (0..d).filter(|&i| !reported[i]) {
            let input = ElementInput {
                x: 1.0,
                gamma: gamma[i].to_f64(),
                beta: 0.0,
            };
            let want = crate::exact::Element::new(&stats, input).round(Dtype::F16);
            assert_eq!(y[i].to_bits() as u64, want, "eps={eps} i={i}");
        }
    }
}

/// [`uncertain_lane`]'s contract, checked exactly as `needs_exact`'s is (`row.rs`)
/// about every kind of rounding boundary of f16 and bf16 (`kernels::boundaries`), with
/// the tests of real rows (RMSNorm with and without γ and β, LayerNorm in its split
/// form), their floors raised to bounds from 2^-40 to 2^10 times a lane's distance to
/// its boundary:
/// - a lane it keeps rounds as every value within its bound fma(|y|, slope, floor),
///   as the lane computes it in f32, does (`boundaries::bound_keeps_rounding`);
/// - it keeps every lane farther than 4 bounds from any boundary (its distance is at
///   least half the true one), so it does not hand back lanes that cannot be wrong;
/// - it keeps no NaN or ±∞.
#[test]
fn uncertain_lane_keeps_only_lanes_their_bound_keeps_on_one_side() {
    use super::{Centering, ParamsMax};
    use crate::boundaries::{
        assert_both_answers_given, bound_keeps_rounding, distance_to_boundary, points,
        BOUND_FACTORS,
    };
    use crate::row::statistics::CenteredStats;
    fn check<T: Element>(seed: u64) -> (usize, usize) {
        let (dt, format) = (T::DTYPE, T::F32_PATH.unwrap());
        let rms = |gamma, beta| {
            let params = ParamsMax { gamma, beta };
            super::rms_norm(1.0, 16, params, format).unwrap().test
        };
        let stats = CenteredStats {
            shift: 0.0,
            mean_shifted: 3.0,
            var: 2.0,
            passes: 1,
        };
        let split =
            super::layer_norm(&stats, 0.5f64.sqrt(), 4096, ParamsMax::NONE, format).unwrap();
        assert!(matches!(split.centering, Centering::Split { .. }));
        let (mut kept, mut total) = (0, 0);
        for (y, m) in points::<T>(seed, Dtype::F32) {
            let y = y as f32;
            let distance = distance_to_boundary::<T>(y as f64);
            for base in [rms(1.0, 0.0), rms(4.0, 100.0), split.test] {
                for f in BOUND_FACTORS {
                    let raised = (f * distance.unwrap_or(0.0)) as f32;
                    let t = CertainTest {
                        floor: base.floor.max(raised),
                        ..base
                    };
                    let bound = y.abs().mul_add(t.slope, t.floor);
                    total += 1;
                    if !uncertain_lane(y, &t) {
                        kept += 1;
                        assert!(
                            y.is_finite() && bound_keeps_rounding::<T>(y as f64, bound as f64),
                            "{dt}: y = {y:e} kept with bound {bound:e} (boundary {m:e})"
                        );
                    }
                    if distance.is_some_and(|d| d > 4.0 * bound as f64) {
                        assert!(
                            !uncertain_lane(y, &t),
                            "{dt}: y = {y:e} handed back with bound {bound:e} (boundary {m:e})"
                        );
                    }
                }
            }
        }
        for y in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let t = rms(1.0, 0.0);
            assert!(uncertain_lane(y, &t), "{dt}: {y}");
        }
        (kept, total)
    }
    for (dt, (kept, total)) in [("f16", check::<f16>(21)), ("bf16", check::<bf16>(22))] {
        assert_both_answers_given(dt, kept, total);
    }
}

/// The distance to the lower binade's midpoints bounds the test too: just above 1, the
/// nearest f16 midpoint is 1 − 2^-12 (2048 f32-ulps of 1 below), not 1 + 2^-11 (4096
/// above), so a bound of 3000 ulps must report the lane; a bound of a few ulps keeps it,
/// and an exact midpoint is always reported.
#[test]
fn the_lower_binade_bounds_the_distance() {
    let format = f16::F32_PATH.unwrap();
    let params = super::ParamsMax {
        gamma: 1.0,
        beta: 0.0,
    };
    let row = super::rms_norm(1.0, 16, params, format).unwrap();
    let t = &row.test;
    let ulp = f32::EPSILON;
    // A floor of 3000 ulps of 1 (the row's bound is a few).
    let wide = CertainTest {
        floor: 3000.0 * ulp,
        ..*t
    };
    assert!(uncertain_lane(1.0 + ulp, &wide));
    assert!(!uncertain_lane(1.0 + 64.0 * ulp, t));
    assert!(uncertain_lane(1.0 + 2f32.powi(-11), t));
    assert!(!uncertain_lane(1.0 + 2f32.powi(-11) + 64.0 * ulp, t));
}

/// The f32 path's widths, where sixteen f32 lanes are one register: from 4096 on most
/// CPUs, and on AMD's family 25 (Zen 4) bf16 from 1024 and f16 from 2048; beyond the
/// widened rows' limit elsewhere, on every CPU. Never for f32 rows.
#[test]
fn the_path_starts_at_its_width_per_instruction_set_format_and_cpu() {
    use crate::cpu::Class::{AmdFamily25, Intel, Other, SkylakeServer};
    assert_eq!(F32_PATH_MIN_D, 4096);
    // (class, f16's first width, bf16's)
    for (class, f16_from, bf16_from) in [
        (Intel, 4096, 4096),
        (SkylakeServer, 4096, 4096),
        (AmdFamily25, 2048, 1024),
        (Other, 4096, 4096),
    ] {
        for (format, from) in [(Dtype::F16, f16_from), (Dtype::BF16, bf16_from)] {
            assert_eq!(min_d(format, class), from, "{format:?} {class:?}");
            assert!(!applies(from - 1, format, true, class));
            assert!(applies(from, format, true, class));
            assert!(!applies(WIDEN_MAX_D, format, false, class));
            assert!(applies(WIDEN_MAX_D + 1, format, false, class));
            assert!(applies(WIDEN_MAX_D + 1, format, true, class));
        }
        assert_eq!(
            path_format::<half::f16>(f16_from, true, class),
            half::f16::F32_PATH
        );
        assert_eq!(path_format::<half::f16>(f16_from - 1, true, class), None);
        assert_eq!(
            path_format::<half::bf16>(bf16_from, true, class),
            half::bf16::F32_PATH
        );
        assert_eq!(path_format::<half::bf16>(16384, false, class), None);
        for (d, register) in [(4096, true), (16385, false), (1 << 16, true)] {
            assert_eq!(path_format::<f32>(d, register, class), None);
        }
    }
}

/// Both 16-bit formats' constants of the f32 path.
const FORMATS: [super::F32PathFormat; 2] = [f16::F32_PATH.unwrap(), bf16::F32_PATH.unwrap()];

/// Each form of centering, with constants of the split form's kind.
const EVERY_FORM: [super::Centering; 3] = [
    super::Centering::None,
    super::Centering::Fused { offset: 0.5 },
    super::Centering::Split {
        mean_hi: 300.0,
        mean_lo: 1e-6,
    },
];

/// A finite f64 as an exact rational.
fn exact(v: f64) -> rug::Rational {
    rug::Rational::from_f64(v).expect("finite")
}

/// γ_k = k·2^-53/(1 − k·2^-53) exactly, k = ⌈d/16⌉ + 9: the relative error bound of a
/// row's f64 sums (module comment), as `sum_error` computes it in f64.
fn exact_sum_error(d: usize) -> rug::Rational {
    let k = rug::Rational::from((d.div_ceil(16) + 9) as u64) / rug::Rational::from(1u128 << 53);
    k.clone() / (1 - k)
}

/// f32(r̂) as r_h = r(1 + ρ) needs |ρ| ≤ u + δ_r with δ_r ≤ 16γ_k + 2^-51 ≤ u/16 (module
/// comment; γ_k = k·2^-53/(1 − k·2^-53), k = ⌈d/16⌉ + 9). That condition, decided
/// exactly here, gives the widest row the path takes, 2^25 − 160 values: `constants`
/// must take a row of that width and decline one value wider, in either format and
/// form. The f64 arithmetic of the gate and of `sum_error` is what is tested: neither
/// changes an output bit of rows narrow enough to test against the reference, and
/// cargo-mutants' changes to it (γ_k as 0, k·9 instead of k + 9, the gate at u
/// instead of u/16, its 2^-51 subtracted) had passed every other test.
#[test]
fn the_path_takes_rows_up_to_the_width_its_statistics_allow() {
    use rug::Rational;
    let allowed = |d: usize| {
        let delta = 16 * exact_sum_error(d) + Rational::from(4) / Rational::from(1u128 << 53);
        delta <= Rational::from(1) / Rational::from(1u128 << 28)
    };
    // The widest allowed width, by bisection (allowed is monotone in d).
    let (mut lo, mut hi) = (16usize, 1usize << 30);
    assert!(allowed(lo) && !allowed(hi));
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if allowed(mid) {
            lo = mid
        } else {
            hi = mid
        }
    }
    assert_eq!(lo, (1 << 25) - 160);
    let params = super::ParamsMax::NONE;
    for format in FORMATS {
        for centering in EVERY_FORM {
            let at = |d| super::constants(centering, 1e-9, 1.0, d, params, format);
            assert!(at(lo).is_some(), "{centering:?}: {lo} declined");
            assert!(at(lo + 1).is_none(), "{centering:?}: {} taken", lo + 1);
        }
    }
}

/// Asserts that a row's lane bound covers what the module comment's proof requires,
/// decided exactly: E = slope·|ỹ| + floor is one f32 fused multiply-add, so E ≥
/// (slope·|ỹ| + floor)(1 − u), and the proof needs slope·(1 − u) ≥ 3.071u (split:
/// 5.081u) and floor·(1 − u) ≥ 2.0701u·max|β| + 1.0001c (split: 4.081u·max|β|), with
/// c = 1.002·r_h·max|γ|·e_m plus 2^-149·(max|γ| + 1) for a bound e_m of the mean's
/// error; and the floor must reach cap × the format's lowest kept magnitude.
fn assert_bound_covers(
    row: &super::F32PathRow,
    params: super::ParamsMax,
    e_m: &rug::Rational,
    format: super::F32PathFormat,
    case: &str,
) {
    use rug::Rational;
    let ratio = |n: u32, d: u32| Rational::from(n) / Rational::from(d);
    let u = ratio(1, 1 << 24);
    let one_less = Rational::from(1) - &u;
    let split = matches!(row.centering, super::Centering::Split { .. });
    let (slope_needed, beta_needed) = if split {
        (ratio(5081, 1000) * &u, ratio(4081, 1000) * &u)
    } else {
        (ratio(3071, 1000) * &u, ratio(20701, 10000) * &u)
    };
    let underflow = Rational::from(1) / (Rational::from(1u64 << 63) * Rational::from(1u128 << 86));
    let gamma = exact(params.gamma);
    let c = ratio(1002, 1000) * exact(row.scale as f64) * &gamma * e_m + underflow * (gamma + 1);
    let floor_needed = beta_needed * exact(params.beta) + ratio(10001, 10000) * c;
    let (slope, floor) = (exact(row.test.slope as f64), exact(row.test.floor as f64));
    assert!(slope * &one_less >= slope_needed, "slope: {case}");
    assert!(floor.clone() * &one_less >= floor_needed, "floor: {case}");
    let cap_floor = exact(row.test.cap as f64) * exact(format.lowest);
    assert!(floor >= cap_floor, "cap: {case}");
}

/// `constants` against the proof's requirements ([`assert_bound_covers`]) with e_m the
/// bound it is given, over a grid from a tiny spread to a huge one, γ up to 2^60 (where
/// the underflow term outweighs the cap's floor in bf16) and β up to 2^40; every row of
/// it is taken. The terms that matter only there (the underflow term, the mean's error
/// times max|γ|) had passed every output test under cargo-mutants' changes: the tests'
/// errors stay far inside the bound.
#[test]
fn the_lane_bound_covers_what_its_proof_requires() {
    let mut checked = 0;
    for format in FORMATS {
        for centering in EVERY_FORM {
            for scale in [2f64.powi(-20), 1.0, 1024.0, 2f64.powi(60)] {
                for mean_error in [0.0, 2f64.powi(-30), 1e-3, 1.0] {
                    for gamma in [2f64.powi(-20), 1.0, 2f64.powi(20), 2f64.powi(60)] {
                        for beta in [0.0, 1.0, 2f64.powi(40)] {
                            let params = super::ParamsMax { gamma, beta };
                            let row = super::constants(
                                centering, mean_error, scale, 4096, params, format,
                            )
                            .expect("a row of the grid declined");
                            let e_m = exact(mean_error);
                            let case = format!(
                                "{centering:?} r̂ {scale:e} e_m {mean_error:e} γ {gamma:e} β {beta:e}"
                            );
                            assert_bound_covers(&row, params, &e_m, format, &case);
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(checked, 2 * 3 * 4 * 4 * 4 * 3);
}

/// `layer_norm`'s bound of the mean's error against its definition, decided exactly:
/// the sum error γ_k·√(var + m²) (Σ|x − c| ≤ d·√(Q/d), k = ⌈d/16⌉ + 9) plus, in the
/// fused form, |o + μ̂·r_h|/r_h and, in the split one, |μ̂ − m_h − m_l|, with μ̂ = c + m
/// exactly; the row's bound must then cover the proof's requirement
/// ([`assert_bound_covers`]). Rows of 16 values to 2^24, means on zero (the sum error
/// alone) and far from it (the split form), spreads from 2^-30 to 2^20, and their
/// scaled copies by 2^±20: a row whose shift was not accepted (m² > 8·var) is declined
/// at every scale. cargo-mutants' weakenings of the sum error (divided by √(var + m²),
/// or √(var·m²)), of the split form's rounding terms and of the acceptance test
/// (m² + … or 8 + var) had passed every other test.
#[test]
fn the_mean_error_covers_its_definition_in_either_form() {
    use crate::row::statistics::CenteredStats;
    use rug::float::Round;
    use rug::Float;
    let (mut fused, mut split) = (0, 0);
    // (c, m, var): accepted shifts, m² ≤ 8·var.
    let accepted = [
        (0.0, 0.0, 1.0),
        (0.0, 0.0, 2f64.powi(20)),
        (0.0, 1e-3, 2f64.powi(-20)),
        (0.0, 0.7, 1.0),
        (0.0, -2.5, 1.0),
        (1000.0 + 1.0 / 3.0, 0.01, 1e-4),
        (1000.0 + 1.0 / 3.0, -0.02, 1e-4),
        (1.0 + 2f64.powi(-30), 2f64.powi(-35), 2f64.powi(-60)),
        (-3.7, 1.1, 1.0),
        (2f64.powi(-20) / 3.0, 0.0, 2f64.powi(-60)),
    ];
    for format in FORMATS {
        for d in [16, 4096, 1 << 24] {
            for (c, m, var) in accepted {
                for k in [-20, 0, 20] {
                    let s = 2f64.powi(k);
                    let stats = CenteredStats {
                        shift: c * s,
                        mean_shifted: m * s,
                        var: var * s * s,
                        passes: 1,
                    };
                    let scale = 1.0 / stats.var.sqrt();
                    for gamma in [1.0, 1024.0] {
                        let params = super::ParamsMax { gamma, beta: 0.0 };
                        let case = format!("d {d} c {c:e} m {m:e} var {var:e} × 2^{k} γ {gamma}");
                        let row = super::layer_norm(&stats, scale, d, params, format)
                            .unwrap_or_else(|| panic!("declined: {case}"));
                        let q = exact(stats.var) + exact(stats.mean_shifted).square();
                        let mut root = Float::with_val_round(256, q, Round::Up).0;
                        root.sqrt_round(Round::Up);
                        let mean = exact(stats.shift) + exact(stats.mean_shifted);
                        let rounding = match row.centering {
                            super::Centering::Fused { offset } => {
                                fused += 1;
                                let r_h = exact(row.scale as f64);
                                (exact(offset as f64) + mean * &r_h).abs() / r_h
                            }
                            super::Centering::Split { mean_hi, mean_lo } => {
                                split += 1;
                                (mean - exact(mean_hi as f64) - exact(mean_lo as f64)).abs()
                            }
                            super::Centering::None => unreachable!("a LayerNorm row"),
                        };
                        let e_m =
                            exact_sum_error(d) * root.to_rational().expect("finite") + rounding;
                        assert_bound_covers(&row, params, &e_m, format, &case);
                    }
                }
            }
        }
    }
    // Both forms were checked.
    assert!(fused > 50 && split > 50, "fused {fused}, split {split}");
    // Shifts that were not accepted, just past m² = 8·var, at every scale.
    for (c, m) in [(0.0, 3.0), (5.0, -3.0), (0.0, 2.8285)] {
        for k in [-20, 0, 20] {
            let s = 2f64.powi(k);
            let stats = CenteredStats {
                shift: c * s,
                mean_shifted: m * s,
                var: s * s,
                passes: 2,
            };
            let format = bf16::F32_PATH.unwrap();
            let row = super::layer_norm(&stats, 1.0 / s, 4096, super::ParamsMax::NONE, format);
            assert!(row.is_none(), "c {c} m {m} × 2^{k} taken");
        }
    }
}

/// Ordinary rows keep nearly every value on the f32 path: the bound is not so loose that
/// the path hands most of the work back.
#[test]
fn ordinary_rows_stay_on_the_f32_path() {
    fn share<T: Element>() -> f64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (mut reported, mut total) = (0, 0);
        for op in Op::ALL {
            for (center, spread) in [(0.0, 1.0), (3.0, 0.5), (-100.0, 2.0)] {
                let x = random::<T>(&mut rng, 4096, center, spread);
                let g = random::<T>(&mut rng, 4096, 1.0, 0.5);
                let b = random::<T>(&mut rng, 4096, 0.0, 0.5);
                let (_, r) = f32_path_blocks(op, &x, &g, &b, 1e-5).expect("allowed");
                reported += r.iter().filter(|&&r| r).count();
                total += r.len();
            }
        }
        reported as f64 / total as f64
    }
    let (f16_share, bf16_share) = (share::<f16>(), share::<bf16>());
    eprintln!(
        "lanes reported: f16 {:.3} %, bf16 {:.4} %",
        100.0 * f16_share,
        100.0 * bf16_share
    );
    // About E/2^(22−p) for an error bound of E ulps (module comment).
    assert!(f16_share < 0.003, "f16: {f16_share}");
    assert!(bf16_share < 0.0005, "bf16: {bf16_share}");
}

/// One row of the 16-bit formats through the f32 path's loop alone (portable code, no
/// second computation): the whole blocks of sixteen of y as that path computes them, and
/// per value whether it reported it (the kernels compute those again on the f64 path);
/// `None` where the row may not take the path. For the tests of [`f32_path`].
fn f32_path_blocks<T: Element>(
    op: Op,
    x: &[T],
    gamma: &[T],
    beta: &[T],
    eps: f32,
) -> Option<(Vec<T>, Vec<bool>)> {
    use crate::simd::Scalar;
    let s = Scalar;
    let d = x.len();
    let format = T::F32_PATH.expect("a 16-bit format");
    let params = ParamsMax {
        gamma: if gamma.is_empty() {
            1.0
        } else {
            T::abs_max(gamma)
        },
        beta: T::abs_max(beta),
    };
    let blocks = d / 16;
    let mut y = vec![T::default(); 16 * blocks];
    let mut flags = vec![[0u8; 2]; blocks];
    let (x16, g16, b16) = (x.as_chunks().0, gamma.as_chunks().0, beta.as_chunks().0);
    macro_rules! pass {
        ($c:expr, $row:expr) => {{
            let (c, row) = ($c, $row);
            let y16 = y.as_chunks_mut().0;
            macro_rules! with {
                ($g:literal, $b:literal) => {
                    F32PathPass::<T, T, _, $g, $b, false, false> {
                        x: x16,
                        gamma: g16,
                        beta: b16,
                        y: y16,
                        flags: &mut flags,
                        row,
                        constants: c,
                    }
                    .run(s)
                };
            }
            match (gamma.is_empty(), beta.is_empty()) {
                (false, false) => with!(true, true),
                (false, true) => with!(true, false),
                (true, false) => with!(false, true),
                (true, true) => with!(false, false),
            }
        }};
    }
    match op {
        Op::LayerNorm => {
            let stats = layer_norm_stats(s, x, &mut [], None)?;
            if is_zero_shift(stats.shift) {
                let c = CenteredConstants::<false>::new::<T>(&stats, eps, params);
                pass!(c, layer_norm(&stats, c.scale, d, params, format)?)
            } else {
                let c = CenteredConstants::<true>::new::<T>(&stats, eps, params);
                pass!(c, layer_norm(&stats, c.scale, d, params, format)?)
            }
        }
        Op::RmsNorm => {
            let sum_sq = sum_of_squares(s, x);
            let c = ScaledConstants::new::<T>(sum_sq, d, eps, params);
            pass!(c, rms_norm(c.scale, d, params, format)?)
        }
    }
    let reported = flags
        .iter()
        .flat_map(|f| (0..16).map(move |l| f[l / 8] & (1 << (l % 8)) != 0))
        .collect();
    Some((y, reported))
}
