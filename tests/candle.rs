//! candle-nn 0.11 under the judge (cargo feature `candle`): the finding read from its source
//! (src/ops.rs: the CPU layer_norm takes var = Σx²/d − μ² in f32 with no clamp), confirmed by
//! minimal reproducers, and the adapters' wiring (both routes pass where f32 suffices).
#![cfg(feature = "candle")]

use normoracle::adapters::builtin;
use normoracle::dtype::Dtype;
use normoracle::exact;
use normoracle::judge::{self, Report};
use normoracle::problem::{Eps, EpsConvention, Op, Problem};

fn f32_problem(op: Op, rows: &[&[f32]]) -> Problem {
    let d = rows[0].len();
    Problem {
        op,
        dtype: Dtype::F32,
        eps: Eps::from_f32(1e-5).unwrap(),
        convention: EpsConvention::Inside,
        rows: rows.len(),
        d,
        x: rows
            .iter()
            .flat_map(|r| r.iter().map(|v| u64::from(v.to_bits())))
            .collect(),
        gamma: None,
        beta: None,
    }
}

fn run(kernel: &str, p: &Problem) -> (Vec<f32>, Report) {
    let k = builtin(kernel).unwrap();
    let bits = k.run(p).unwrap();
    let report = judge::judge_single(p, &bits, k.name(), "candle").unwrap();
    (
        bits.iter().map(|&b| f32::from_bits(b as u32)).collect(),
        report,
    )
}

fn reference(p: &Problem) -> Vec<f32> {
    let r = exact::reference(p).unwrap();
    r.y.iter().map(|&b| f32::from_bits(b as u32)).collect()
}

/// x = [1000, 1000, 1000.125], ε = 1e-5: Σx²/d − μ² rounds to −0.0625 in f32 (the true
/// variance is 1/288 ≈ 0.00347), √(var + ε) is NaN, and so is every output. The reference is
/// finite; the judge fails candle; candle's own composed module path (two passes) passes,
/// within the bound though not correctly rounded (its f32 mean is rounded before x − μ).
#[test]
fn negative_one_pass_variance_gives_nan() {
    let p = f32_problem(Op::LayerNorm, &[&[1000.0, 1000.0, 1000.125]]);
    let want = reference(&p);
    assert!(want.iter().all(|v| v.is_finite()));
    // (1/12)/√(1/288 + 1e-5)
    assert!((want[2] - 1.41219).abs() < 1e-4, "{want:?}");
    let (got, report) = run("candle", &p);
    assert!(got.iter().all(|v| v.is_nan()), "{got:?}");
    assert!(!report.passed());
    let (got, report) = run("candle-nn-module", &p);
    assert!(report.passed(), "{}", judge::report::text(&report));
    assert!(
        got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-3),
        "{got:?}"
    );
}

/// x = [3000, 3001]: the one-pass variance cancels to exactly 0, so the outputs are
/// ±(1/2)/√ε ≈ ±158.1 instead of ±0.99998.
#[test]
fn cancelled_one_pass_variance_inflates_outputs() {
    let p = f32_problem(Op::LayerNorm, &[&[3000.0, 3001.0]]);
    let want = reference(&p);
    assert!((want[1] - 0.99998).abs() < 1e-5, "{want:?}");
    let (got, report) = run("candle-nn", &p);
    assert!((got[1] - 158.11389).abs() < 1e-3, "{got:?}");
    assert!(!report.passed());
}

/// Rows where f32 one-pass statistics are harmless (mean 0, spread 1): both routes pass in
/// f32, so the failures above are candle's arithmetic, not the adapter's wiring. RMSNorm has
/// no mean to cancel: candle passes it on the reproducer rows too.
#[test]
fn both_routes_pass_benign_rows() {
    let benign: &[f32] = &[-1.5, 0.25, 0.75, -0.125, 1.0, 0.5, -0.875, 0.0];
    for kernel in ["candle-nn", "candle-nn-module"] {
        let offset: &[f32] = &[1000.0, 1000.0, 1000.125, 3.0, 3.0, 3.0, 3.0, 3.0];
        for (op, rows) in [
            (Op::LayerNorm, vec![benign]),
            (Op::RmsNorm, vec![benign, offset]),
        ] {
            let (_, report) = run(kernel, &f32_problem(op, &rows));
            assert!(
                report.passed(),
                "{kernel} {op:?}: {}",
                judge::report::text(&report)
            );
        }
    }
}

/// The module route really is a different code path: on f16 it rounds the normalized value to
/// f16 before multiplying by γ, a double rounding the fused op avoids; the judge sees it.
#[test]
fn module_route_rounds_twice_in_f16() {
    use half::f16;
    let d = 64;
    let x: Vec<u64> = (0..d)
        .map(|i| {
            f16::from_f64(((i * 37) % 64) as f64 / 7.0 - 4.0)
                .to_bits()
                .into()
        })
        .collect();
    let gamma: Vec<u64> = (0..d)
        .map(|i| f16::from_f64(1.0 + (i % 13) as f64 / 9.0).to_bits().into())
        .collect();
    let beta: Vec<u64> = (0..d)
        .map(|i| f16::from_f64((i % 5) as f64 / 3.0).to_bits().into())
        .collect();
    let p = Problem {
        op: Op::LayerNorm,
        dtype: Dtype::F16,
        eps: Eps::from_f32(1e-5).unwrap(),
        convention: EpsConvention::Inside,
        rows: 1,
        d,
        x,
        gamma: Some(gamma),
        beta: Some(beta),
    };
    let k_ops = builtin("candle-nn").unwrap().run(&p).unwrap();
    let k_module = builtin("candle-nn-module").unwrap().run(&p).unwrap();
    assert_ne!(k_ops, k_module, "the two routes computed the same bits");
}

/// The finding reaches the accuracy table: candle-nn's f32 layer_norm row names the one-pass
/// variance and the NaN it gives on the minimal reproducer; the module route (two passes) does
/// not show it, and neither shows it in RMSNorm, which has no mean.
#[test]
fn the_accuracy_table_carries_the_finding() {
    use normoracle::zoo::{self, ZooConfig, ZooVerdict};
    let cfg = ZooConfig {
        seed: 7,
        ops: Op::ALL.to_vec(),
        dtypes: zoo::ZOO_DTYPES.to_vec(),
        random_cases: 0,
        builtins: vec!["candle-nn".into(), "candle-nn-module".into()],
        c_example: None,
        c_libs: Vec::new(),
        python_drivers: Vec::new(),
        progress: false,
        standard: normoracle::judge::Standard::Bound,
        domain: normoracle::domain::Domain::typical(),
    };
    let rows = zoo::run(&cfg).unwrap();
    assert_eq!(rows.len(), 12);
    let negative_variance = |r: &zoo::ZooRow| {
        r.findings
            .iter()
            .any(|f| f.starts_with("one-pass E[x²]−E[x]² < 0") && f.contains("gives NaN"))
    };
    for r in &rows {
        let expected = r.kernel == "candle-nn" && r.op == Op::LayerNorm && r.dtype == Dtype::F32;
        assert_eq!(negative_variance(r), expected, "{r:?}");
        if expected {
            assert_eq!(r.verdict, ZooVerdict::Fail);
        }
    }
    let table = zoo::table(&rows, &cfg).render(normoracle::output::format::Format::Csv);
    assert!(
        table.contains("[1000, 1000, 1000.125]: gives NaN"),
        "{table}"
    );
}
