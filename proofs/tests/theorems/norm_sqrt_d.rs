//! Theorem `norm-sqrt-d`: ‖y‖² = d exactly (ε = 0), the exact shrink law for ε > 0 in both
//! conventions and for both ops, and Riechers' eq. 5 form.

use normoracle_geometry::theorems::exact_vec::normalize;
use normoracle_geometry::theorems::norm_sqrt_d::{check_riechers_eq5, check_row};
use normoracle_proofs::{config, eps, holds, qc_holds, quickcheck, row, QcEps, QcRow};
use proptest::prelude::*;
use quickcheck::TestResult;

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn norms_follow_the_exact_law(r in row(), e in eps()) {
        holds(check_row(normalize, &r.values(), &e))?;
    }

    #[test]
    fn riechers_eq5_is_layer_norm(r in row(), e in eps()) {
        holds(check_riechers_eq5(normalize, &r.values(), &e))?;
    }
}

#[test]
fn quickcheck_norms_follow_the_exact_law() {
    fn property(r: QcRow, e: QcEps) -> TestResult {
        qc_holds(check_row(normalize, &r.values(), &e.value()))
    }
    quickcheck(24, property as fn(QcRow, QcEps) -> TestResult);
}
