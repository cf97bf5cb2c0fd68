//! Theorem `two-point-map`: the ones-plane maps to two points (App. B), the converse
//! metamorphic relation, and the exact ε-law replacing scale invariance.

use normoracle::problem::EpsConvention;
use normoracle_geometry::theorems::exact_vec::normalize;
use normoracle_geometry::theorems::two_point_map::{
    check_converse, check_plane, check_scale_law, converse_partner,
};
use normoracle_proofs::{
    config, eps, holds, nonzero_rational, qc_holds, quickcheck, rational, rows, QcEps, QcRational,
    QcRowPair,
};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::Rational;

fn alpha_or_zero(a: Rational, zero: bool) -> Rational {
    if zero {
        Rational::new()
    } else {
        a
    }
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn the_plane_maps_to_two_points(r in rows(2), a in nonzero_rational(), zero in proptest::bool::weighted(0.25), b in rational(), e in eps()) {
        holds(check_plane(normalize, &r[0].values(), &alpha_or_zero(a, zero), &b, &e, &r[1].values()))?;
    }

    #[test]
    fn equal_outputs_iff_positive_ray(r in rows(2), kind in any::<u64>(), lambda in nonzero_rational(), c in rational()) {
        let x = r[0].values();
        holds(check_converse(normalize, &x, &converse_partner(&x, kind, &lambda, &c, &r[1].values())))?;
    }

    #[test]
    fn eps_law_replaces_scale_invariance(r in rows(1), lambda in nonzero_rational(), one in proptest::bool::weighted(0.2), c in rational(), e in eps(), outside in any::<bool>()) {
        let lambda = if one { Rational::from(1) } else { lambda };
        let convention = if outside { EpsConvention::Outside } else { EpsConvention::Inside };
        holds(check_scale_law(normalize, &r[0].values(), &lambda, &c, &e, convention))?;
    }
}

#[test]
fn quickcheck_the_plane_maps_to_two_points() {
    fn property(p: QcRowPair, a: QcRational, b: QcRational, e: QcEps) -> TestResult {
        let alpha = alpha_or_zero(a.nonzero(), a.0.is_multiple_of(4));
        qc_holds(check_plane(
            normalize,
            &p.0.values(),
            &alpha,
            &b.value(),
            &e.value(),
            &p.1.values(),
        ))
    }
    quickcheck(
        24,
        property as fn(QcRowPair, QcRational, QcRational, QcEps) -> TestResult,
    );
}

#[test]
fn quickcheck_equal_outputs_iff_positive_ray() {
    fn property(p: QcRowPair, kind: u64, lambda: QcRational, c: QcRational) -> TestResult {
        let x = p.0.values();
        qc_holds(check_converse(
            normalize,
            &x,
            &converse_partner(&x, kind, &lambda.nonzero(), &c.value(), &p.1.values()),
        ))
    }
    quickcheck(
        24,
        property as fn(QcRowPair, u64, QcRational, QcRational) -> TestResult,
    );
}

#[test]
fn quickcheck_eps_law_replaces_scale_invariance() {
    fn property(
        p: QcRowPair,
        lambda: QcRational,
        c: QcRational,
        e: QcEps,
        outside: bool,
    ) -> TestResult {
        let convention = if outside {
            EpsConvention::Outside
        } else {
            EpsConvention::Inside
        };
        qc_holds(check_scale_law(
            normalize,
            &p.0.values(),
            &lambda.nonzero(),
            &c.value(),
            &e.value(),
            convention,
        ))
    }
    quickcheck(
        24,
        property as fn(QcRowPair, QcRational, QcRational, QcEps, bool) -> TestResult,
    );
}
