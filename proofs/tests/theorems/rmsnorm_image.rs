//! Theorem `rmsnorm-image`: RMSNorm's outputs lie on the axis-aligned ellipsoid
//! Σ((y−β)/γ)² = d·m·s², its semi-axis endpoints are the outputs of ±eᵢ, and its fibres at
//! ε = 0 are the open rays.

use normoracle::problem::EpsConvention;
use normoracle_geometry::theorems::exact_vec::normalize;
use normoracle_geometry::theorems::rmsnorm_image::{
    check_axis_endpoints, check_ellipsoid, check_fibres,
};
use normoracle_proofs::{
    config, eps, holds, nonzero_rational, qc_holds, quickcheck, rows, QcEps, QcRational, QcRowPair,
};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::Rational;

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
    fn outputs_lie_on_the_ellipsoid(
        r in rows(3),
        gains in proptest::collection::vec(nonzero_rational(), 512),
        e in eps(),
        outside in any::<bool>(),
        lambda in nonzero_rational(),
    ) {
        let d = r[0].d();
        prop_assume!(d <= gains.len());
        let gamma = &gains[..d];
        let x = r[0].values();
        holds(check_ellipsoid(normalize, &x, &e, convention(outside), gamma, &r[1].values()))?;
        holds(check_fibres(normalize, &x, &lambda.abs(), &r[2].values(), &e, gamma))?;
        if d <= 16 {
            holds(check_axis_endpoints(normalize, gamma, &r[1].values()))?;
        }
    }
}

#[test]
fn quickcheck_outputs_lie_on_the_ellipsoid() {
    fn property(p: QcRowPair, g: QcRational, e: QcEps, outside: bool) -> TestResult {
        let x = p.0.values();
        let gamma: Vec<Rational> = (1..=x.len())
            .map(|i| g.nonzero() * Rational::from((i as i64, 3)))
            .collect();
        qc_holds(
            check_ellipsoid(
                normalize,
                &x,
                &e.value(),
                convention(outside),
                &gamma,
                &p.1.values(),
            )
            .and_then(|()| {
                check_fibres(
                    normalize,
                    &x,
                    &Rational::from(7),
                    &p.1.values(),
                    &e.value(),
                    &gamma,
                )
            }),
        )
    }
    quickcheck(
        24,
        property as fn(QcRowPair, QcRational, QcEps, bool) -> TestResult,
    );
}
