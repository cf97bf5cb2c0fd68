//! Pinned, citable outputs of the unselectable-keys engine: a reduced Figure 1c grid
//! (d 3..8, n 3..30, 20 runs, seed 123), the ε counterexample and the normalization cases.
//! Every number comes with exactly verified certificates; a change here is a change in
//! results and must be reviewed.

use normoracle::geometry::selectability::counterexamples::{eps_counterexample, norm_cases};
use normoracle::geometry::selectability::figure::{figure_table, run_grid, FigureParams};
use normoracle::geometry::selectability::NormSpec;

#[test]
fn figure_1c_reduced_grid() {
    let params = FigureParams::reduced(NormSpec::None);
    let cells = run_grid(&params, &|| {}).unwrap();
    insta::assert_snapshot!("figure_1c_reduced", figure_table(&params, &cells).csv());
}

#[test]
fn figure_1d_reduced_grid_is_all_zero() {
    let params = FigureParams::reduced("layernorm".parse().unwrap());
    let cells = run_grid(&params, &|| {}).unwrap();
    assert!(cells.iter().all(|c| c.unselectable == 0));
}

#[test]
fn eps_counterexample_table() {
    let (table, _) = eps_counterexample().unwrap();
    insta::assert_snapshot!("eps_counterexample", table.markdown());
}

#[test]
fn normalization_cases_table() {
    insta::assert_snapshot!("normalization_cases", norm_cases().unwrap().markdown());
}
