//! Theorem `layernorm-jacobian`: J = (P − uuᵀ/(dD))/√D is the derivative of the definition
//! along every direction, and ‖J‖₂ = 1/√(σ² + ε) (d ≥ 3), ε/(σ² + ε)^{3/2} (d = 2).

use normoracle_geometry::theorems::layernorm_jacobian::{
    check_derivative, check_norm, stated_norm2, DEFINITION,
};
use normoracle_proofs::{config, eps, holds, qc_holds, quickcheck, row_of_width, QcEps, QcRowPair};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::Rational;

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn the_jacobian_is_the_derivative_and_its_norm_is_exact(
        r in (1..=40usize).prop_flat_map(|d| proptest::collection::vec(row_of_width(d), 2)),
        e in eps(),
        zero_eps in any::<bool>(),
    ) {
        let e = if zero_eps { Rational::new() } else { e };
        let (x, v) = (r[0].values(), r[1].values());
        holds(check_derivative(&x, &v, &e, DEFINITION))?;
        holds(check_norm(&x, &e, stated_norm2))?;
    }
}

#[test]
fn quickcheck_the_jacobian_is_the_derivative() {
    fn property(p: QcRowPair, e: QcEps) -> TestResult {
        let (x, v) = (p.0.values(), p.1.values());
        if x.len() > 64 {
            return TestResult::discard();
        }
        qc_holds(
            check_derivative(&x, &v, &e.value(), DEFINITION)
                .and_then(|()| check_norm(&x, &e.value(), stated_norm2)),
        )
    }
    quickcheck(24, property as fn(QcRowPair, QcEps) -> TestResult);
}
