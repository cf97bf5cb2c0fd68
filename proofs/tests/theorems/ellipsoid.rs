//! The LayerNorm hyperellipsoid (Riechers 2024), driven hard: random rational and float gains
//! (zero and repeated gains included) through the exact checkers of
//! `normoracle_geometry::theorems::ellipsoid`, the f64 pipeline's certified enclosures against exact
//! Sturm counts, and sampled outputs against the axes. `NORMORACLE_LONG=1` runs many more
//! cases.

use normoracle_geometry::ellipsoid::concentration::Normal;
use normoracle_geometry::ellipsoid::{analyze, exact, EllipsoidInput, Options, Solver};
use normoracle_geometry::theorems::ellipsoid::{
    check, check_axes, check_drazin_overshoot, check_output, Instance,
};
use normoracle_geometry::theorems::Budget;
use normoracle_proofs::{cases, config_replaying_regressions, long, seeded_quickcheck};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::Rational;

/// Small rationals; 0 and repeats come from the gain strategy.
fn small_rational() -> impl Strategy<Value = Rational> {
    (-12i64..=12, 1i64..=4).prop_map(|(p, q)| Rational::from((p, q)))
}

/// Gains of length 2..=6 where each entry is fresh, zero, or a copy (up to sign) of an
/// earlier one.
fn rational_gains() -> impl Strategy<Value = Vec<Rational>> {
    prop::collection::vec(
        (
            small_rational(),
            0u8..10,
            any::<prop::sample::Index>(),
            any::<bool>(),
        ),
        2..=6,
    )
    .prop_map(|raw| {
        let mut g: Vec<Rational> = Vec::new();
        for (fresh, kind, idx, flip) in raw {
            let x = match kind {
                0 | 1 => Rational::new(),
                2..=4 if !g.is_empty() => {
                    let y = g[idx.index(g.len())].clone();
                    if flip {
                        -y
                    } else {
                        y
                    }
                }
                _ => fresh,
            };
            g.push(x);
        }
        g
    })
}

/// Float gains (exact dyadic rationals once read), zeros and repeats included.
fn float_gains() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec((-3.0f64..3.0, 0u8..10, any::<prop::sample::Index>()), 2..=5).prop_map(
        |raw| {
            let mut g: Vec<f64> = Vec::new();
            for (fresh, kind, idx) in raw {
                let x = match kind {
                    0 => 0.0,
                    1 | 2 if !g.is_empty() => g[idx.index(g.len())],
                    _ => fresh,
                };
                g.push(x);
            }
            g
        },
    )
}

fn rationals(x: &[f64]) -> Vec<Rational> {
    exact::rationals(x)
}

proptest! {
    #![proptest_config(config_replaying_regressions(48))]

    /// Hyperplane, quadratic form (= N·σ²/(σ²+ε), = N at ε = 0), support bound: exact, for
    /// rational parameters and inputs.
    #[test]
    fn outputs_lie_on_the_hyperplane_and_in_the_ellipsoid(
        gain in rational_gains(),
        seed_vecs in prop::collection::vec(small_rational(), 24),
        eps_num in 0i64..5,
    ) {
        let n = gain.len();
        let inst = Instance {
            gain: gain.clone(),
            bias: seed_vecs[..n].to_vec(),
            eps: Rational::from((eps_num, 100)),
        };
        let q = exact::tight_form(&gain);
        let a = &seed_vecs[6..6 + n];
        let dirs = vec![seed_vecs[12..12 + n].to_vec(), seed_vecs[18..18 + n].to_vec()];
        prop_assert_eq!(check_output(&inst, &q, a, &dirs), Ok(()));
    }

    /// Every axis, all at once modulo the secular polynomial; the Drazin overshoot.
    #[test]
    fn axes_and_endpoints_hold_exactly_for_rational_gains(gain in rational_gains()) {
        let axes = check_axes(&gain);
        prop_assert!(axes.is_ok(), "{:?}", axes);
        prop_assert_eq!(check_drazin_overshoot(&gain), Ok(()));
    }

    /// The same for float gains read exactly (large dyadic denominators).
    #[test]
    fn axes_hold_exactly_for_float_gains(g in float_gains(), a in prop::collection::vec(-4.0f64..4.0, 5)) {
        let gain = rationals(&g);
        prop_assert!(check_axes(&gain).is_ok());
        let n = g.len();
        let inst = Instance { gain: gain.clone(), bias: vec![Rational::new(); n], eps: Rational::from((1, 100_000)) };
        prop_assert_eq!(check_output(&inst, &exact::tight_form(&gain), &rationals(&a[..n]), &[]), Ok(()));
    }

    /// The f64 pipeline is certified with either solver, and its certified semi-axis
    /// enclosures contain the exact lengths: every [lo², hi²]/N holds at least one root of
    /// det(xI − ΠG²Π), and no more than the axes whose enclosures overlap it.
    #[test]
    fn certified_enclosures_contain_the_exact_spectrum(g in float_gains()) {
        prop_assume!(g.iter().any(|&x| x != 0.0));
        let p = exact::char_poly(&exact::gram(&rationals(&g)));
        let n = Rational::from(g.len() as u64);
        for solver in [Solver::Dense, Solver::Secular] {
            let input = EllipsoidInput::new(g.clone(), None, 1e-5).unwrap();
            let e = analyze(&input, Options { solver, ..Options::default() }).unwrap();
            prop_assert!(e.verified(), "{:?}", solver);
            for (i, axis) in e.axes.iter().enumerate() {
                let lo = Rational::from_f64(axis.semi_axis_lo).unwrap().square() / &n;
                let hi = Rational::from_f64(axis.semi_axis_hi).unwrap().square() / &n;
                let overlapping = e
                    .axes
                    .iter()
                    .filter(|b| b.semi_axis_lo <= axis.semi_axis_hi && axis.semi_axis_lo <= b.semi_axis_hi)
                    .count();
                let roots = exact::roots_in_closed(&p, &lo, &hi);
                prop_assert!(roots >= 1 && roots <= overlapping, "{:?} axis {} [{}, {}]: {} roots", solver, i, lo, hi, roots);
            }
        }
    }
}

/// Random output directions in f64, sampled extents along the certified axes: never beyond the
/// semi-axis (exact support inequality), and close to it for some sample (ε = 0); the
/// constructed input (the ζ-route eigenvector) reaches the endpoint.
#[test]
fn sampled_extents_match_the_axes() {
    let trials = if long() { 40 } else { 6 };
    let samples = if long() { 20_000 } else { 4000 };
    let mut normal = Normal::new(42);
    for t in 0..trials {
        let n = 3 + t % 2;
        let g: Vec<f64> = (0..n).map(|_| 0.5 + normal.sample().abs()).collect();
        let e = analyze(
            &EllipsoidInput::new(g.clone(), None, 0.0).unwrap(),
            Options::default(),
        )
        .unwrap();
        assert!(e.verified());
        let gain = rationals(&g);
        let inst = Instance {
            gain: gain.clone(),
            bias: vec![Rational::new(); n],
            eps: Rational::new(),
        };
        let q = exact::tight_form(&gain);
        let dirs: Vec<Vec<Rational>> = e.axes.iter().map(|a| rationals(&a.direction)).collect();
        let mut best = vec![0.0f64; e.axes.len()];
        for s in 0..samples {
            let a: Vec<f64> = (0..n).map(|_| normal.sample()).collect();
            // Exact claims on a few samples (they are slow-ish), float extents on all.
            if s % 200 == 0 {
                assert_eq!(check_output(&inst, &q, &rationals(&a), &dirs), Ok(()));
            }
            let mean = a.iter().sum::<f64>() / n as f64;
            let norm = a
                .iter()
                .map(|x| (x - mean) * (x - mean))
                .sum::<f64>()
                .sqrt();
            let y: Vec<f64> = (0..n)
                .map(|i| (n as f64).sqrt() * g[i] * (a[i] - mean) / norm)
                .collect();
            for (k, axis) in e.axes.iter().enumerate() {
                let proj: f64 = y.iter().zip(&axis.direction).map(|(a, b)| a * b).sum();
                best[k] = best[k].max(proj.abs() / axis.semi_axis);
            }
        }
        for (k, b) in best.iter().enumerate() {
            assert!(*b <= 1.0 + 1e-9, "trial {t}: sample beyond axis {k}: {b}");
            assert!(
                *b >= 0.9,
                "trial {t}: samples never came near the end of axis {k}: {b}"
            );
        }
    }
}

/// The theorem checker itself, on its own seeded stream.
#[test]
fn the_catalogue_checker_verifies() {
    let r = check(Budget {
        cases: cases(24) as usize,
        seed: if long() { 99 } else { 3 },
    });
    assert!(r.counterexample.is_none(), "{:?}", r.counterexample);
}

/// quickcheck: for integer gains with a zero, the tight form's longest semi-axis is at most
/// Riechers' Drazin one, and strictly shorter than it along every coordinate.
#[test]
fn quickcheck_drazin_never_tighter() {
    fn prop(raw: Vec<i8>) -> TestResult {
        let mut g: Vec<f64> = raw.iter().take(5).map(|&x| (x % 7) as f64).collect();
        if g.len() < 2 || g.iter().all(|&x| x == 0.0) {
            return TestResult::discard();
        }
        g[0] = 0.0;
        if g.iter().all(|&x| x == 0.0) {
            return TestResult::discard();
        }
        let e = analyze(
            &EllipsoidInput::new(g.clone(), None, 0.0).unwrap(),
            Options::default(),
        )
        .unwrap();
        let drazin = e.drazin_semi_axes.clone().unwrap();
        let tight_max = e.axes.first().map_or(0.0, |a| a.semi_axis_lo);
        TestResult::from_bool(
            e.verified()
                && tight_max <= drazin[0]
                && check_drazin_overshoot(&rationals(&g)).is_ok(),
        )
    }
    seeded_quickcheck(40).quickcheck(prop as fn(Vec<i8>) -> TestResult);
}

/// quickcheck: the exact quadratic form of an output equals N σ²/(σ² + ε) for float inputs
/// and no zero gain (the law of the concentration figure, pointwise).
#[test]
fn quickcheck_shrink_factor_is_exact() {
    fn prop(a: Vec<i16>, g: Vec<u8>, eps: u8) -> TestResult {
        let n = a.len().min(g.len()).min(6);
        if n < 2 {
            return TestResult::discard();
        }
        let gain: Vec<Rational> = g[..n]
            .iter()
            .map(|&x| Rational::from((1 + x as i64, 16)))
            .collect();
        let a: Vec<Rational> = a[..n]
            .iter()
            .map(|&x| Rational::from((x as i64, 8)))
            .collect();
        let inst = Instance {
            gain: gain.clone(),
            bias: vec![Rational::new(); n],
            eps: Rational::from((eps as i64, 1000)),
        };
        TestResult::from_bool(check_output(&inst, &exact::tight_form(&gain), &a, &[]).is_ok())
    }
    seeded_quickcheck(100).quickcheck(prop as fn(Vec<i16>, Vec<u8>, u8) -> TestResult);
}
