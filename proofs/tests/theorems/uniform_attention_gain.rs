//! Theorem `uniform-attention-gain`: with gain γ (no zero entry), the query c/γ scores every
//! LN key exactly c·Σβ/γ; any query not ∥ 1/γ separates the keys of ±q⊙γ.

use normoracle::problem::EpsConvention;
use normoracle_geometry::theorems::exact_vec::normalize;
use normoracle_geometry::theorems::uniform_attention_gain::{
    check_inverse_gain_query, check_other_gain_query,
};
use normoracle_proofs::{
    config, eps, holds, nonzero_rational, qc_holds, quickcheck, rational, rows, QcEps, QcRational,
    QcRowPair,
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
    #![proptest_config(config(16))]

    #[test]
    fn inverse_gain_query_attends_uniformly(
        keys in (2..=8usize).prop_flat_map(|n| rows(n + 1)),
        gains in proptest::collection::vec(nonzero_rational(), 512),
        c in rational(),
        e in eps(),
        outside in any::<bool>(),
    ) {
        let (bias_row, key_rows) = keys.split_last().expect("n + 1 ≥ 3 rows");
        let d = bias_row.d();
        let gamma = &gains[..d.min(gains.len())];
        prop_assume!(gamma.len() == d);
        let values: Vec<Vec<Rational>> = key_rows.iter().map(|r| r.values()).collect();
        holds(check_inverse_gain_query(normalize, &c, &values, &e, convention(outside), gamma, &bias_row.values()))?;
    }

    #[test]
    fn other_queries_separate(
        pair in rows(1),
        gains in proptest::collection::vec(nonzero_rational(), 512),
    ) {
        let q = pair[0].values();
        prop_assume!(q.len() <= gains.len());
        holds(check_other_gain_query(normalize, &q, &gains[..q.len()]))?;
    }
}

#[test]
fn quickcheck_inverse_gain_query_attends_uniformly() {
    fn property(p: QcRowPair, c: QcRational, g: QcRational, e: QcEps, outside: bool) -> TestResult {
        let keys = vec![p.0.values(), p.1.values()];
        let d = keys[0].len();
        // Gains g·(1, 2, 3, …): nonzero, not constant.
        let gamma: Vec<Rational> = (1..=d).map(|i| g.nonzero() * Rational::from(i)).collect();
        let beta: Vec<Rational> = p.1.values().into_iter().rev().collect();
        qc_holds(
            check_inverse_gain_query(
                normalize,
                &c.value(),
                &keys,
                &e.value(),
                convention(outside),
                &gamma,
                &beta,
            )
            .and_then(|()| check_other_gain_query(normalize, &p.0.values(), &gamma)),
        )
    }
    quickcheck(
        24,
        property as fn(QcRowPair, QcRational, QcRational, QcEps, bool) -> TestResult,
    );
}
