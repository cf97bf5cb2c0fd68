//! Judging Rust closures from a user's own tests: a correct kernel passes, a buggy one fails,
//! and outputs computed elsewhere can be judged directly.

use normoracle::assert_kernel_passes;
use normoracle::cases::{BatteryConfig, Family};
use normoracle::judge::api::{judge_fn_with, judge_outputs};
use normoracle::problem::{EpsConvention, Op};

fn layer_norm_f64_accumulating(
    x: &[f32],
    g: Option<&[f32]>,
    b: Option<&[f32]>,
    y: &mut [f32],
    d: usize,
    eps: f32,
    unbiased: bool,
) -> Result<(), String> {
    for (xr, yr) in x.chunks(d).zip(y.chunks_mut(d)) {
        let mean = xr.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
        let n = if unbiased {
            (d as f64 - 1.0).max(1.0)
        } else {
            d as f64
        };
        let var = xr.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
        let r = 1.0 / (var + eps as f64).sqrt();
        for i in 0..d {
            let gi = g.map_or(1.0, |g| g[i] as f64);
            let bi = b.map_or(0.0, |b| b[i] as f64);
            yr[i] = ((xr[i] as f64 - mean) * r * gi + bi) as f32;
        }
    }
    Ok(())
}

#[test]
fn a_correct_closure_passes_the_default_battery() {
    let report = assert_kernel_passes!(Op::LayerNorm, f32, |x, g, b, y, d, eps| {
        layer_norm_f64_accumulating(x, g, b, y, d, eps, false)
    });
    assert!(report.tally.percent_correctly_rounded() > 95.0);
}

#[test]
fn a_buggy_closure_fails_with_its_family_named() {
    let mut config = BatteryConfig::new(Op::LayerNorm, normoracle::Dtype::F32, 3);
    config.random_cases = 0;
    config.families = vec![Family::Gaussian];
    let report = judge_fn_with(&config, |x, g, b, y, d, eps| {
        layer_norm_f64_accumulating(x, g, b, y, d, eps, true)
    });
    assert!(!report.passed());
    assert!(report.failures.iter().all(|f| f.family == "gaussian"));
    assert!(normoracle::judge::report::text(&report).starts_with("FAIL"));
}

#[test]
fn outputs_can_be_judged_directly() {
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let y = [-1.3416408f32, -0.4472136, 0.4472136, 1.3416408];
    let r = judge_outputs(
        Op::LayerNorm,
        0.0,
        EpsConvention::Inside,
        &x,
        None,
        None,
        &y,
        4,
    )
    .unwrap();
    assert!(r.passed());
    assert_eq!(r.tally.exact, 4);
    let bad = [-1.3416408f32, -0.4472136, 0.4472136, 1.35];
    assert!(!judge_outputs(
        Op::LayerNorm,
        0.0,
        EpsConvention::Inside,
        &x,
        None,
        None,
        &bad,
        4
    )
    .unwrap()
    .passed());
    assert!(judge_outputs(
        Op::LayerNorm,
        -1.0,
        EpsConvention::Inside,
        &x,
        None,
        None,
        &y,
        4
    )
    .is_err());
    assert!(judge_outputs(
        Op::LayerNorm,
        0.0,
        EpsConvention::Inside,
        &x,
        None,
        None,
        &y,
        0
    )
    .is_err());
}

/// `require = …` holds a closure to a stricter standard: the f64-accumulating kernel meets the
/// bound and faithfulness on the Gaussian family; one in f32 arithmetic the bound, not `exact`.
#[test]
fn a_required_standard_decides_the_verdict() {
    use normoracle::judge::api::judge_fn_requiring;
    use normoracle::judge::Standard;
    let mut config = BatteryConfig::new(Op::LayerNorm, normoracle::Dtype::F32, 3);
    config.random_cases = 0;
    config.families = vec![Family::Gaussian];
    let kernel = |x: &[f32], g: Option<&[f32]>, b: Option<&[f32]>, y: &mut [f32], d, eps| {
        layer_norm_f64_accumulating(x, g, b, y, d, eps, false)
    };
    let bound = judge_fn_requiring(&config, Standard::Bound, kernel);
    assert_eq!(bound.standard, Standard::Bound);
    assert!(bound.meets_standard() && bound.passed());
    let faithful = judge_fn_requiring(&config, Standard::Faithful, kernel);
    assert!(faithful.meets_standard(), "{}", faithful.tally.max_ulp);
    // In f32 arithmetic (a careful kernel of the model): within the bound, not exact.
    let in_f32 = |x: &[f32], g: Option<&[f32]>, b: Option<&[f32]>, y: &mut [f32], d, eps: f32| {
        for (xr, yr) in x.chunks(d).zip(y.chunks_mut(d)) {
            let mean = xr.iter().sum::<f32>() / d as f32;
            let var = xr.iter().map(|&v| (v - mean) * (v - mean)).sum::<f32>() / d as f32;
            let r = 1.0 / (var + eps).sqrt();
            for i in 0..d {
                let gi = g.map_or(1.0, |g| g[i]);
                let bi = b.map_or(0.0, |b| b[i]);
                yr[i] = (xr[i] - mean) * r * gi + bi;
            }
        }
        Ok(())
    };
    let exact = judge_fn_requiring(&config, Standard::Exact, in_f32);
    assert!(exact.passed() && !exact.meets_standard());
    let report = assert_kernel_passes!(Op::RmsNorm, f32, kernel_rms, require = Standard::Ulp(1));
    assert!(report.tally.max_ulp <= 1);
}

fn kernel_rms(
    x: &[f32],
    g: Option<&[f32]>,
    b: Option<&[f32]>,
    y: &mut [f32],
    d: usize,
    eps: f32,
) -> Result<(), String> {
    for (xr, yr) in x.chunks(d).zip(y.chunks_mut(d)) {
        let ms = xr.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / d as f64;
        let r = 1.0 / (ms + eps as f64).sqrt();
        for i in 0..d {
            let gi = g.map_or(1.0, |g| g[i] as f64);
            let bi = b.map_or(0.0, |b| b[i] as f64);
            yr[i] = (xr[i] as f64 * r * gi + bi) as f32;
        }
    }
    Ok(())
}
