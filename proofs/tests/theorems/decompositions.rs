//! Theorem `decompositions`: the blog's h∘g∘f (ε outside) and Riechers' eq. 6 (ε inside)
//! against the reference definition, with random γ and β, and when the conventions coincide.

use normoracle_geometry::theorems::decompositions::{check_row, coinciding_row};
use normoracle_geometry::theorems::exact_vec::normalize;
use normoracle_proofs::{
    config, eps, holds, qc_holds, quickcheck, rational, rows, QcEps, QcRowPair,
};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::Rational;

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn decompositions_are_the_definition(r in rows(3), e in eps()) {
        holds(check_row(normalize, &r[0].values(), &e, &r[1].values(), &r[2].values()))?;
    }

    #[test]
    fn conventions_coincide_where_two_sigma_plus_eps_is_one(e in eps(), mu in rational(), g in rows(1)) {
        if let Some(x) = coinciding_row(&e, &mu) {
            let gamma: Vec<Rational> = g[0].values().into_iter().cycle().take(2).collect();
            holds(check_row(normalize, &x, &e, &gamma, &gamma))?;
        }
    }
}

#[test]
fn quickcheck_decompositions_are_the_definition() {
    fn property(p: QcRowPair, e: QcEps) -> TestResult {
        let (x, gamma) = (p.0.values(), p.1.values());
        let beta: Vec<Rational> = gamma.iter().rev().cloned().collect();
        qc_holds(check_row(normalize, &x, &e.value(), &gamma, &beta))
    }
    quickcheck(24, property as fn(QcRowPair, QcEps) -> TestResult);
}
