//! Theorem `uniform-attention`: a query ∥ 1 scores every LN key equally (exactly c·Σβ), and any
//! other query separates LN(q) from LN(−q).

use normoracle::problem::EpsConvention;
use normoracle_geometry::theorems::exact_vec::normalize;
use normoracle_geometry::theorems::uniform_attention::{check_ones_query, check_other_query};
use normoracle_proofs::{
    config, eps, holds, qc_holds, quickcheck, rational, row, rows, QcEps, QcRational, QcRow,
    QcRowPair,
};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::Rational;

proptest! {
    #![proptest_config(config(16))]

    #[test]
    fn ones_query_attends_uniformly(keys in (1..=8usize).prop_flat_map(|n| rows(n + 1)), c in rational(), e in eps(), outside in any::<bool>(), no_bias in any::<bool>()) {
        let (bias_row, key_rows) = keys.split_last().expect("n + 1 ≥ 2 rows");
        let d = bias_row.d();
        let beta = if no_bias { vec![Rational::new(); d] } else { bias_row.values() };
        let values: Vec<Vec<Rational>> = key_rows.iter().map(|r| r.values()).collect();
        let convention = if outside { EpsConvention::Outside } else { EpsConvention::Inside };
        holds(check_ones_query(normalize, &c, &values, &e, convention, &beta))?;
    }

    #[test]
    fn other_queries_are_not_uniform(q in row()) {
        holds(check_other_query(normalize, &q.values()))?;
    }
}

#[test]
fn quickcheck_ones_query_attends_uniformly() {
    fn property(p: QcRowPair, c: QcRational, e: QcEps, outside: bool) -> TestResult {
        let keys = vec![p.0.values(), p.1.values()];
        let beta: Vec<Rational> = p.1.values().into_iter().rev().collect();
        let convention = if outside {
            EpsConvention::Outside
        } else {
            EpsConvention::Inside
        };
        qc_holds(check_ones_query(
            normalize,
            &c.value(),
            &keys,
            &e.value(),
            convention,
            &beta,
        ))
    }
    quickcheck(
        24,
        property as fn(QcRowPair, QcRational, QcEps, bool) -> TestResult,
    );
}

#[test]
fn quickcheck_other_queries_are_not_uniform() {
    fn property(q: QcRow) -> TestResult {
        qc_holds(check_other_query(normalize, &q.values()))
    }
    quickcheck(24, property as fn(QcRow) -> TestResult);
}
