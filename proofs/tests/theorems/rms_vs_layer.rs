//! Theorem `rms-vs-layer`: RMSNorm = LayerNorm iff mean(x) = 0; LayerNorm's output is exactly
//! orthogonal to 1; RMSNorm's exact cos² to 1.

use normoracle::problem::EpsConvention;
use normoracle_geometry::theorems::exact_vec::centered;
use normoracle_geometry::theorems::exact_vec::normalize;
use normoracle_geometry::theorems::rms_vs_layer::check_row;
use normoracle_proofs::{config, eps, holds, qc_holds, quickcheck, rows, QcEps, QcRowPair};
use proptest::prelude::*;
use quickcheck::TestResult;

fn convention(outside: bool) -> EpsConvention {
    if outside {
        EpsConvention::Outside
    } else {
        EpsConvention::Inside
    }
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn rms_equals_layer_iff_mean_zero(r in rows(2), e in eps(), outside in any::<bool>(), centre in any::<bool>()) {
        let x = if centre { centered(&r[0].values()) } else { r[0].values() };
        holds(check_row(normalize, &x, &e, convention(outside), &r[1].values()))?;
    }
}

#[test]
fn quickcheck_rms_equals_layer_iff_mean_zero() {
    fn property(p: QcRowPair, e: QcEps, outside: bool, centre: bool) -> TestResult {
        let x = if centre {
            centered(&p.0.values())
        } else {
            p.0.values()
        };
        qc_holds(check_row(
            normalize,
            &x,
            &e.value(),
            convention(outside),
            &p.1.values(),
        ))
    }
    quickcheck(
        24,
        property as fn(QcRowPair, QcEps, bool, bool) -> TestResult,
    );
}
