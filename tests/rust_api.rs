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

/// RMSNorm whose sum of squares overflows as an f32 one would (∞ → outputs 0) once Σx²
/// passes f32::MAX, i.e. on rows of |x| ≳ 1e19: a kernel documented for |x| ≤ 1e4.
fn rms_f32_squares(
    x: &[f32],
    g: Option<&[f32]>,
    _b: Option<&[f32]>,
    y: &mut [f32],
    d: usize,
    eps: f32,
) -> Result<(), String> {
    for (xr, yr) in x.chunks(d).zip(y.chunks_mut(d)) {
        let squares = xr.iter().map(|&v| v as f64 * v as f64).sum::<f64>();
        // The f32 sum's overflow, alone: elsewhere the statistics are f64's.
        let ms = if (squares as f32).is_infinite() {
            f64::INFINITY
        } else {
            squares / d as f64
        };
        let r = 1.0 / (ms + eps as f64).sqrt();
        for i in 0..d {
            yr[i] = (xr[i] as f64 * r * g.map_or(1.0, |g| g[i] as f64)) as f32;
        }
    }
    Ok(())
}

/// A declared domain decides the verdict: the f32-squares kernel fails the whole battery (its
/// overflowing rows are `wrong`), meets the bound on `absx=..1e4,finite`, where every failure
/// it makes lies outside and is reported there; a kernel failing inside the domain still
/// fails. `assert_kernel_passes!(…, domain = …)` takes the same domain.
#[test]
fn a_declared_domain_decides_the_verdict() {
    use normoracle::domain::Domain;
    use normoracle::judge::api::judge_fn_requiring;
    use normoracle::judge::Standard;
    let mut config = BatteryConfig::new(Op::RmsNorm, normoracle::Dtype::F32, 5);
    config.random_cases = 0;
    let whole = judge_fn_requiring(&config, Standard::Bound, rms_f32_squares);
    assert!(!whole.meets_standard() && whole.tally.wrong > 0);
    assert!(whole.outside.is_none());
    let domain: Domain = "absx=..1e4,finite".parse().unwrap();
    config.domain = domain;
    let declared = judge_fn_requiring(&config, Standard::Bound, rms_f32_squares);
    assert!(
        declared.meets_standard(),
        "{}",
        normoracle::judge::report::text(&declared)
    );
    let outside = declared.outside.as_deref().expect("rows outside");
    assert!(!outside.meets_standard() && outside.tally.failed == whole.tally.failed);
    // Every element is judged once, on one side or the other.
    assert_eq!(
        declared.tally.judged + outside.tally.judged,
        whole.tally.judged
    );
    assert_eq!(declared.whole().tally, whole.tally);
    let text = normoracle::judge::report::text(&declared);
    assert!(
        text.starts_with("PASS") && text.contains("outside the domain"),
        "{text}"
    );
    assert!(text.contains("would FAIL"), "{text}");
    // A domain that keeps the overflowing rows keeps the verdict.
    config.domain = "finite".parse().unwrap();
    assert!(!judge_fn_requiring(&config, Standard::Bound, rms_f32_squares).meets_standard());
    let report = assert_kernel_passes!(Op::RmsNorm, f32, rms_f32_squares, domain = domain);
    assert!(report.outside.is_some());
    let report = assert_kernel_passes!(
        Op::RmsNorm,
        f32,
        kernel_rms,
        require = normoracle::judge::Standard::Ulp(1),
        domain = domain
    );
    assert_eq!(report.domain, domain);
}
