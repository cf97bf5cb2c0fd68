//! The worked examples' exact values, pinned by a snapshot (every value in them is exact, so
//! the snapshot is the same on every machine).

use normoracle_geometry::ellipsoid::example::{riechers_example, zero_gain_example};

#[test]
fn worked_example_n4_rational_spectrum() {
    let ex = riechers_example().unwrap();
    assert!(ex.all_checks_pass);
    insta::assert_snapshot!("worked_example_n4", ex.table.markdown());
}

#[test]
fn worked_example_n3_zero_gain() {
    let ex = zero_gain_example().unwrap();
    assert!(ex.all_checks_pass);
    insta::assert_snapshot!("worked_example_n3_zero_gain", ex.table.markdown());
}
