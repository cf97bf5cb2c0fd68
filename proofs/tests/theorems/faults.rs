//! Every check can fail: on random inputs, deliberately wrong references (classic kernel bugs,
//! `normoracle_geometry::theorems::faults`) are caught by the theorems that speak about them, whenever
//! the input lets the bug show.

use normoracle::problem::EpsConvention;
use normoracle_geometry::theorems::exact_vec::{centered, is_constant, mean, normalize};
use normoracle_geometry::theorems::{
    decompositions, faults, norm_sqrt_d, projection, rms_vs_layer, two_point_map,
};
use normoracle_proofs::{
    config, eps, holds, qc_holds, quickcheck, row, rows, QcEps, QcRow, RawRow,
};
use proptest::prelude::*;
use quickcheck::TestResult;
use rug::Rational;
use std::cmp::Ordering;

/// Ok when `outcome` is a counterexample.
fn caught(what: &str, outcome: Result<(), String>) -> Result<(), String> {
    match outcome {
        Err(_) => Ok(()),
        Ok(()) => Err(format!("{what}: not caught")),
    }
}

/// On a non-constant row (d ≥ 2) every output-changing fault of the list is caught by the
/// theorem named with it.
fn faults_caught(x: &[Rational], e: &Rational) -> Result<(), String> {
    if x.len() < 2 || is_constant(x) {
        return Ok(());
    }
    let positive = if e.cmp0() == Ordering::Greater {
        e.clone()
    } else {
        Rational::from((1, 8))
    };
    let zero = Rational::new();
    caught(
        "unbiased variance / norm-sqrt-d",
        norm_sqrt_d::check_row(faults::unbiased_variance, x, &zero),
    )?;
    caught(
        "nudged entry / norm-sqrt-d",
        norm_sqrt_d::check_row(faults::nudged_last_entry, x, e),
    )?;
    caught(
        "doubled ε / norm-sqrt-d",
        norm_sqrt_d::check_row(faults::doubled_eps, x, &positive),
    )?;
    caught(
        "no ε / norm-sqrt-d",
        norm_sqrt_d::check_row(faults::no_eps, x, &positive),
    )?;
    caught(
        "flipped sign / norm-sqrt-d",
        norm_sqrt_d::check_row(faults::flipped_sign, x, e),
    )?;
    let ones = vec![Rational::from(1); x.len()];
    let bias: Vec<Rational> = (0..x.len()).map(|i| Rational::from(i as u32 % 3)).collect();
    caught(
        "dropped β / decompositions",
        decompositions::check_row(faults::dropped_beta, x, e, &ones, &bias),
    )?;
    caught(
        "swapped convention / decompositions",
        decompositions::check_row(faults::swapped_convention, x, &positive, &ones, &bias),
    )?;
    caught(
        "flipped sign / two-point-map",
        two_point_map::check_plane(faults::flipped_sign, x, &Rational::from(2), &zero, e, &bias),
    )?;
    caught(
        "centring on x₁ / projection",
        projection::check_row(
            faults::centre_on_first,
            projection::scaled_projection,
            &with_first_off_the_mean(x),
        ),
    )?;
    let lifted = with_nonzero_mean(x);
    caught(
        "no centring / rms-vs-layer",
        rms_vs_layer::check_row(
            faults::no_centering,
            &lifted,
            e,
            EpsConvention::Inside,
            &ones,
        ),
    )?;
    caught(
        "no centring / two-point-map converse",
        two_point_map::check_converse(faults::no_centering, x, &shifted(x)),
    )?;
    // And the definition itself passes all of them.
    holds_all(x, e, &ones, &bias)
}

/// x + 1 when mean(x) = 0, else x: a row whose mean is not 0, on x's ray modulo 1.
fn with_nonzero_mean(x: &[Rational]) -> Vec<Rational> {
    if mean(x).cmp0() == Ordering::Equal {
        shifted(x)
    } else {
        x.to_vec()
    }
}

/// x rotated so that its first entry is not its mean (some entry is not, x being non-constant):
/// centring on x₁ is the right centring exactly when x₁ = μ, so only such a row shows the fault.
fn with_first_off_the_mean(x: &[Rational]) -> Vec<Rational> {
    let mu = mean(x);
    let first = x.iter().position(|v| *v != mu).unwrap_or(0);
    let mut rotated = x.to_vec();
    rotated.rotate_left(first);
    rotated
}

/// x + 1.
fn shifted(x: &[Rational]) -> Vec<Rational> {
    x.iter().map(|v| Rational::from(v + 1u32)).collect()
}

fn holds_all(
    x: &[Rational],
    e: &Rational,
    ones: &[Rational],
    bias: &[Rational],
) -> Result<(), String> {
    norm_sqrt_d::check_row(normalize, x, e)?;
    decompositions::check_row(normalize, x, e, ones, bias)?;
    rms_vs_layer::check_row(normalize, &centered(x), e, EpsConvention::Outside, ones)?;
    two_point_map::check_converse(normalize, x, &with_nonzero_mean(x))
}

proptest! {
    #![proptest_config(config(16))]

    #[test]
    fn faulty_references_are_caught(r in row(), e in eps()) {
        holds(faults_caught(&r.values(), &e))?;
    }

    #[test]
    fn faults_are_caught_on_rows_of_two_families(r in rows(2), e in eps()) {
        // A row that mixes two families' values (huge and tiny, say).
        let mut x = r[0].values();
        x.extend(r[1].values());
        holds(faults_caught(&x, &e))?;
    }
}

#[test]
fn quickcheck_faulty_references_are_caught() {
    fn property(r: QcRow, e: QcEps) -> TestResult {
        qc_holds(faults_caught(&r.values(), &e.value()))
    }
    quickcheck(16, property as fn(QcRow, QcEps) -> TestResult);
}

/// The row CI's unseeded run shrank to: its first entry is its mean, so centring on x₁ was the
/// right centring and, before the row was rotated, the fault went unseen.
#[test]
fn first_entry_at_the_mean_still_shows_centring_on_it() {
    let r = RawRow {
        family: 18,
        param: 12390399853431291909,
        words: vec![
            11387505414459530855,
            3197452682823932617,
            16334310040878116255,
            5316736772525916710,
            18240653953196446481,
            13315534568930615760,
            12909071087747860690,
            16930898701241530644,
            11209230462910375413,
            1251769485601617986,
            5517484378887241978,
            5215448928469584731,
            17748970698017317312,
            8346977408654415347,
            6507039868568246544,
            2864166780434923689,
            16566634926358016935,
            3863248672252588718,
            5170214564218790097,
            3842233714484979707,
            14261656535773054103,
            13661040429479044789,
            10920297276610801146,
            17124811863344515245,
            6003389051759876378,
            13909486483762456521,
            17189780745263136937,
            8663725389532109863,
            559053846829133954,
            15699016387925700861,
            12588644529843286875,
            14175511886351020703,
            4689176101911629603,
        ],
    };
    let x = r.values();
    assert_eq!(
        x[0],
        mean(&x),
        "the row no longer has its first entry at the mean"
    );
    faults_caught(&x, &Rational::from(1)).unwrap();
}
