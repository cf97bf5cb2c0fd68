//! The tightness probes: rows where the model's sums are exact (or nearly so), so the bound
//! collapses to a few roundings (and, where Welford may err, its allowance): wrong outputs
//! the κ-based bound used to accept FAIL here, exact outputs PASS, and every model kernel
//! (`soundness`) passes the same rows.

use super::judge_single;
use super::soundness::{check_problem, judges_bound, one_row, variants, Outcome};
use crate::dtype::Dtype;
use crate::exact::reference;
use crate::problem::{EpsConvention, Op, Problem};

/// The report's (failed, judged) for `outputs` (values, rounded to the format).
fn verdict(p: &Problem, outputs: &[f64]) -> (u64, u64) {
    let bits: Vec<u64> = outputs.iter().map(|&v| p.dtype.round_f64(v)).collect();
    let t = judge_single(p, &bits, "probe", "probe").unwrap().tally;
    (t.failed, t.judged)
}

fn exact_values(p: &Problem) -> Vec<f64> {
    let y = reference(p).unwrap().y;
    y.iter().map(|&b| p.dtype.to_f64(b)).collect()
}

/// Exact outputs PASS, `wrong` FAILs on every element, and every model kernel passes.
fn assert_probe(p: &Problem, wrong: &[f64], what: &str) {
    let exact = exact_values(p);
    assert_eq!(verdict(p, &exact).0, 0, "{what}: the exact outputs");
    let (failed, judged) = verdict(p, wrong);
    assert_eq!(
        failed, judged,
        "{what}: {failed} of {judged} wrong outputs FAIL"
    );
    let mut outcome = Outcome::default();
    check_problem(p, &variants(), &judges_bound, &mut outcome);
    assert!(
        outcome.findings.is_empty(),
        "{what}: a model kernel FAILs: {:?}",
        &outcome.findings[..1]
    );
}

/// The constant rows: 10000 (d = 768, ε = 1e-6), exact output 0: 0.39 and 3.0
/// everywhere used to PASS (bound use 0.002 and 0.013); and −65504 at ε = 1e-12 with β.
#[test]
fn constant_rows_with_wrong_outputs_fail() {
    for dtype in [Dtype::F16, Dtype::BF16, Dtype::F32] {
        let c = dtype.to_f64(dtype.round_f64(10000.0));
        let p = one_row(
            Op::LayerNorm,
            dtype,
            EpsConvention::Inside,
            1e-6,
            &[c; 768],
            None,
            None,
        );
        for wrong in [0.39, 3.0, 1e-3] {
            assert_probe(
                &p,
                &[wrong; 768],
                &format!("{dtype} constant 10000 → {wrong}"),
            );
        }
        let m = -dtype.to_f64(dtype.round_f64(65504.0));
        let beta = vec![-0.289; 64];
        let p = one_row(
            Op::LayerNorm,
            dtype,
            EpsConvention::Inside,
            1e-12,
            &[m; 64],
            Some(&[1.0; 64]),
            Some(&beta),
        );
        assert_probe(&p, &[3094.0; 64], &format!("{dtype} constant −65504"));
        assert_probe(
            &p,
            &[-0.28; 64],
            &format!("{dtype} constant −65504, 3 % off"),
        );
    }
}

/// The two-level f16 row 2048/2050 (d = 768, ε = 1e-12): outputs off by 4 % FAIL (they
/// used to PASS), and by 3 %; the sums are exact, so only the Welford kernels' own errors remain.
#[test]
fn a_two_level_row_off_by_four_percent_fails() {
    let x: Vec<f64> = (0..768)
        .map(|i| if i % 3 == 0 { 2050.0 } else { 2048.0 })
        .collect();
    let p = one_row(
        Op::LayerNorm,
        Dtype::F16,
        EpsConvention::Inside,
        1e-12,
        &x,
        None,
        None,
    );
    for factor in [1.04, 1.03] {
        let off: Vec<f64> = exact_values(&p).iter().map(|y| y * factor).collect();
        assert_probe(&p, &off, &format!("two-level f16, ×{factor}"));
    }
    let x: Vec<f64> = (0..768)
        .map(|i| if i % 2 == 0 { 2050.0 } else { 2048.0 })
        .collect();
    let p = one_row(
        Op::LayerNorm,
        Dtype::F16,
        EpsConvention::Inside,
        1e-12,
        &x,
        None,
        None,
    );
    let off: Vec<f64> = exact_values(&p).iter().map(|y| y * 0.96).collect();
    assert_probe(&p, &off, "two-level f16 (halves), 4 % off");
}

/// Large-mean rows three ULPs wide (f16 around 1200, |μ|/σ ≈ 1470; bf16 around 200): outputs
/// off by 2 % of the output scale (|γ| = 1) FAIL; the f16 one used to PASS (the κ-based bound
/// was ≈ 3.4 % there; now the sums are exact and the Welford kernels' own errors remain).
#[test]
fn a_large_mean_row_off_by_two_percent_of_scale_fails() {
    for (dtype, centre) in [(Dtype::F16, 1200.0), (Dtype::BF16, 200.0)] {
        let x: Vec<f64> = (0..768).map(|i| centre + (i % 3) as f64 - 1.0).collect();
        let p = one_row(
            Op::LayerNorm,
            dtype,
            EpsConvention::Inside,
            1e-12,
            &x,
            None,
            None,
        );
        let off: Vec<f64> = exact_values(&p).iter().map(|y| y + 0.02).collect();
        assert_probe(&p, &off, &format!("{dtype} large mean, +2 % of scale"));
    }
}
