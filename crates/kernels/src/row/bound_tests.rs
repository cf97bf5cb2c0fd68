//! The certainty test's bound against the exact error of the f64 values it judges.
use super::certainty::*;
use super::normalize::*;
use super::params::*;
use super::statistics::*;
use super::*;
use crate::dtype::pow2;
use crate::dtype::Dtype;
use crate::problem::Op;
use crate::simd::Scalar;
use rug::{Float, Rational};

/// A small seeded generator (portable arithmetic).
struct Lcg(u64);
impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Rows of width d whose lanes hit what the bound's terms are for: every seventh value
/// is the row's mean rounded to f32 (z ≈ 0, where z's error does not shrink with z),
/// the first eight are far from the rest on some rows (the shift moves), and β cancels
/// γ·z to a few bits in every fifth lane. Rows with offset 0.97 (μ ≈ 0.99σ) start
/// ±3σ, so that the first shift is 0 and the pass is accepted next to its limit,
/// m² ≤ var.
fn row(g: &mut Lcg, trial: usize, d: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let offset = [0.0, 0.5, 2.0, 100.0, 1e4, -3.0, 0.97, -0.9][trial % 8];
    let spread = [1.0, 1e-3, 1e3][trial % 3];
    let mut x: Vec<f32> = (0..d)
        .map(|_| ((offset + (g.unit() - 0.5) * 3.4) * spread) as f32)
        .collect();
    if trial.is_multiple_of(5) {
        x[..8].fill((3.0 * offset * spread + spread) as f32);
    }
    if offset == 0.97 {
        for (k, v) in x[..8].iter_mut().enumerate() {
            *v = ((if k % 2 == 0 { 3.0 } else { -3.0 }) * spread) as f32;
        }
    }
    let mean = x.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
    for v in x.iter_mut().step_by(7) {
        *v = mean as f32;
    }
    // γ and β of every size against z, so that outputs far above 1 test the bound's
    // relative term (32u·|ŷ| exceeds 32u only there).
    let scale = [1.0, 1024.0, 1.0 / 1024.0, 3e5][(trial / 8) % 4];
    let gamma: Vec<f32> = (0..d).map(|_| ((0.5 + g.unit()) * scale) as f32).collect();
    let beta: Vec<f32> = (0..d).map(|_| ((g.unit() - 0.5) * scale) as f32).collect();
    (x, gamma, beta)
}

/// ŷ's exact error never exceeds the bound of the test that judges it, on rows up to
/// d = 16384, both ops, where β cancels γ·z, where z ≈ 0, with shift 0 at its limit,
/// and with γ and β from about 2^-10 to 3e5 (a bound of 32u alone, whatever |ŷ|, fails
/// at 1024). (Measured: the error reaches 20 % of the bound on these 40 rows; before γ
/// and β were scaled, 19 % of the bound on 40 rows, 13 % on 120 rows
/// with d up to 65536; 11 % and 12 % when z was ((x − c) − m)·r, two roundings after
/// x − c. On 160 rows of these, 20 % with a shift, 17 % with shift 0, whose worst is
/// the rows accepted next to m² = var.)
#[test]
fn the_bound_covers_the_error_of_the_f64_value() {
    let mut g = Lcg(7);
    let eps = 1e-5f32;
    let (mut zero_shift_rows, mut worst) = (0, 0f64);
    for trial in 0..40 {
        let d = [64usize, 333, 1024, 4096, 16384][trial % 5];
        let (x, gamma, mut beta) = row(&mut g, trial, d);
        let xs: Vec<Rational> = x
            .iter()
            .map(|&v| Rational::from_f64(v as f64).unwrap())
            .collect();
        let dq = Rational::from(d as u64);
        for op in Op::ALL {
            let center = op == Op::LayerNorm;
            let mean: Rational = if center {
                xs.iter().sum::<Rational>() / &dq
            } else {
                Rational::new()
            };
            let q: Rational = xs
                .iter()
                .map(|v| Rational::from(v - &mean).square())
                .sum::<Rational>()
                / &dq;
            let r = Float::with_val(300, q + Rational::from_f64(eps as f64).unwrap())
                .sqrt()
                .recip();
            let (y, size, floor) = if center {
                let stats = layer_norm_stats(Scalar, &x, &mut [], None).unwrap();
                let none = ParamsMax::NONE;
                if is_zero_shift(stats.shift) {
                    zero_shift_rows += 1;
                    let c = CenteredConstants::<false>::new::<f32>(&stats, eps, none);
                    f64_values(c, &x, &gamma, &mut beta)
                } else {
                    let c = CenteredConstants::<true>::new::<f32>(&stats, eps, none);
                    f64_values(c, &x, &gamma, &mut beta)
                }
            } else {
                let sum_sq = sum_of_squares(Scalar, &x);
                f64_values(
                    ScaledConstants::new::<f32>(sum_sq, d, eps, ParamsMax::NONE),
                    &x,
                    &gamma,
                    &mut beta,
                )
            };
            for i in 0..y.len() {
                let z = Float::with_val(300, Rational::from_f64(x[i] as f64).unwrap() - &mean) * &r;
                let exact = z * gamma[i] + beta[i];
                let err = (Float::with_val(300, y[i]) - exact).abs().to_f64();
                let bound = size[i].mul_add(RELATIVE, floor[i]);
                worst = worst.max(err / bound);
                assert!(
                    err <= bound,
                    "{op} d={d} trial {trial} lane {i}: error {err:e} > bound {bound:e} (ŷ = {:e})",
                    y[i]
                );
            }
        }
    }
    eprintln!("the largest error took {worst:.3} of its bound");
    // The five rows that start ±3σ, and some of those with offset 0, 0.5 and −0.9.
    assert!(zero_shift_rows >= 6, "{zero_shift_rows} rows with shift 0");
}

/// [`needs_exact`]'s contract, checked exactly about every kind of rounding boundary of
/// the three formats (`kernels::boundaries`), at distances from 0 to well past half an
/// interval, with bounds from 0 to 2^10 times the distance, made of either term or both:
/// - a lane it clears rounds as every value within its bound does
///   (`boundaries::bound_keeps_rounding`: both ends of [ŷ − E, ŷ + E], exactly);
/// - it clears every lane farther than 4·E from any boundary (its distance is at least
///   half the true one; see its comment): it does not send lanes that cannot be wrong
///   to the exact reference;
/// - it clears non-finite lanes (their row's statistics were finite: NaN in γ or β).
#[test]
fn needs_exact_clears_only_lanes_their_bound_keeps_on_one_side() {
    use crate::boundaries::{
        assert_both_answers_given, bound_keeps_rounding, distance_to_boundary, points,
        BOUND_FACTORS,
    };
    fn check<T: Element>(seed: u64) -> (usize, usize) {
        let dt = T::DTYPE;
        let (mut cleared, mut total) = (0, 0);
        for (y, m) in points::<T>(seed, Dtype::F64) {
            let distance = distance_to_boundary::<T>(y);
            // Beyond the overflow threshold, multiples of y's f64 spacing.
            let scale = distance
                .unwrap_or(Dtype::F64.ulp_at(y))
                .max(f64::MIN_POSITIVE);
            for e in BOUND_FACTORS.map(|f| f * scale) {
                let halves = (e / RELATIVE / 2.0, e / 2.0);
                for (size, floor) in [(0.0, e), (e / RELATIVE, 0.0), halves] {
                    let bound = size.mul_add(RELATIVE, floor);
                    total += 1;
                    if !needs_exact::<T>(y, size, floor) {
                        cleared += 1;
                        assert!(
                            bound_keeps_rounding::<T>(y, bound),
                            "{dt}: y = {y:e} cleared with bound {bound:e} (boundary {m:e})"
                        );
                    }
                }
                if distance.is_some_and(|d| d > 4.0 * e) {
                    assert!(
                        !needs_exact::<T>(y, 0.0, e),
                        "{dt}: y = {y:e} sent to the exact reference with bound {e:e} (boundary {m:e})"
                    );
                }
            }
        }
        for y in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(!needs_exact::<T>(y, 1.0, 1.0), "{dt}: {y}");
        }
        (cleared, total)
    }
    for (dt, (cleared, total)) in [
        ("f32", check::<f32>(11)),
        ("f16", check::<half::f16>(12)),
        ("bf16", check::<half::bf16>(13)),
    ] {
        assert_both_answers_given(dt, cleared, total);
    }
}

/// The vector filter a row's [`CheckConstants`] build (window W from [`window`],
/// threshold from [`covered_from`]) clears only lanes that [`needs_exact`] clears with
/// the largest bound any lane of the call can have (size |ŷ| + max|β|, floor
/// max|γ|·absolute): lanes W − 2 to 4W f64-ulps from a boundary, at magnitudes about
/// the threshold, for RMSNorm (absolute 0) and LayerNorm, with and without large γ and
/// β. And it is not far wider than it has to be: W is what `window`'s comment derives
/// (2^16, 2^23, 2^24), and its threshold within a factor 2 of floor/(W·u).
#[test]
fn the_filter_clears_only_lanes_the_test_clears() {
    fn check<T: Element>(g: &mut Lcg, window_bits: u32) -> usize {
        let dt = T::DTYPE;
        let w = window(T::HALF_ULP_BIT);
        assert_eq!(w, 1 << window_bits, "{dt}");
        let mut passed = 0;
        for absolute in [0.0, 1e-16, 1e-12, 1e-6] {
            for (gamma, beta) in [(1.0, 0.0), (1.0, 1.0), (1e3, 1e4), (0.01, 3.0)] {
                let params = ParamsMax { gamma, beta };
                let c = CheckConstants::new::<T>(absolute, params);
                let floor = RELATIVE * beta + gamma * absolute;
                let small = c.filter.small;
                let least = pow2(dt.emin());
                assert!(small >= least, "{dt}");
                assert!(
                    small <= (2.0 * floor / ((w - 64) as f64 * U)).max(least),
                    "{dt}: threshold {small:e} for floor {floor:e}"
                );
                let magnitudes = [1.0, 1.0 + 2f64.powi(-40), 1.5, 2.0, 1e3]
                    .map(|k| k * small)
                    .into_iter()
                    .chain([1.0, 3.7e4].map(|v| v * (1.0 + g.unit())));
                for magnitude in magnitudes {
                    if magnitude >= dt.max_finite() {
                        continue;
                    }
                    // The boundary just above: the midpoint of magnitude's interval.
                    let r = dt.round_f64(magnitude);
                    let m = dt.midpoint(r, dt.next_up(r));
                    let ulp = Dtype::F64.ulp_at(m);
                    for k in [w - 2, w - 1, w, w + 1, 2 * w, 4 * w] {
                        for y in [m - k as f64 * ulp, m + k as f64 * ulp] {
                            for y in [y, -y] {
                                if near_lane(y, &c.filter) {
                                    continue;
                                }
                                passed += 1;
                                assert!(
                                    !needs_exact::<T>(y, y.abs() + beta, gamma * absolute),
                                    "{dt}: y = {y:e} passed the filter (absolute {absolute:e}, γ {gamma:e}, β {beta:e})"
                                );
                            }
                        }
                    }
                }
            }
        }
        passed
    }
    use crate::simd::near_lane;
    let mut g = Lcg(13);
    for (dt, passed) in [
        ("f32", check::<f32>(&mut g, 16)),
        ("f16", check::<half::f16>(&mut g, 23)),
        ("bf16", check::<half::bf16>(&mut g, 24)),
    ] {
        eprintln!("{dt}: {passed} lanes passed the filter");
        assert!(passed > 100, "{dt}: {passed}");
    }
}

/// ŷ and the bound's two terms for every whole vector of a row (γ, β as f32), after
/// setting every fifth β to −γ·ẑ rounded to f32 (cancellation to about 24 bits).
fn f64_values<C: RowConstants>(
    c: C,
    x: &[f32],
    gamma: &[f32],
    beta: &mut [f32],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let s = Scalar;
    let n = c.vectors(s);
    let (mut y, mut size, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    for j in 0..x.len() / 8 {
        let at = 8 * j..8 * j + 8;
        let z = n.z(s, s.load_f32(x[at.clone()].try_into().unwrap()));
        for l in (0..8).filter(|l| (8 * j + l) % 5 == 0) {
            beta[8 * j + l] = -((gamma[8 * j + l] as f64 * z[l]) as f32);
        }
        let g = s.load_f32(gamma[at.clone()].try_into().unwrap());
        let b = s.load_f32(beta[at].try_into().unwrap());
        let out = affine::<Scalar, true, true>(s, z, g, b);
        let (sz, fl) = bound_terms::<true, true>(c.check(), out, g, b);
        y.extend(out);
        size.extend(sz);
        floor.extend(fl);
    }
    (y, size, floor)
}
