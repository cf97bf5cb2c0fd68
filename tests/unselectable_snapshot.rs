//! Pinned, citable outputs of the unselectable-keys engine: a reduced Figure 1c grid
//! (d 3..8, n 3..30, 20 runs, seed 123), a reduced Figure 1d at ε = 1e-5, the ε counterexample
//! and the normalization cases.
//! Every number comes with exactly verified certificates; a change here is a change in
//! results and must be reviewed.

use normoracle_geometry::selectability::counterexamples::{eps_counterexample, norm_cases};
use normoracle_geometry::selectability::figure::{figure_table, run_grid, FigureParams};
use normoracle_geometry::selectability::NormSpec;

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

#[test]
fn figure_1d_needs_d_at_least_3() {
    // LayerNorm maps every d = 2 row to ±(1, −1) (ε = 0): with n ≥ 3 keys some output repeats
    // and a repeated key is unselectable, so every run of such a cell has one.
    let params = FigureParams {
        d: 2..=3,
        n: 2..=12,
        runs: 10,
        ..FigureParams::paper("layernorm".parse().unwrap())
    };
    let cells = run_grid(&params, &|| {}).unwrap();
    for c in &cells {
        match (c.d, c.n) {
            (2, 2) => assert!(c.runs_with_unselectable < c.runs, "{c:?}"),
            (2, _) => assert_eq!(c.runs_with_unselectable, c.runs, "{c:?}"),
            _ => assert_eq!(c.unselectable, 0, "{c:?}"),
        }
    }
    // A d = 2 key is unselectable exactly when another key has the same output: the keys of
    // the sign that occurs more than once.
    let two_keys = cells.iter().find(|c| (c.d, c.n) == (2, 2)).unwrap();
    assert_eq!(two_keys.unselectable, 2 * two_keys.runs_with_unselectable);
}

#[test]
fn figure_1d_eps_reduced() {
    use normoracle_geometry::selectability::eps_grid::{run, table, EpsGridParams};
    let params = EpsGridParams::reduced(123).unwrap();
    let result = run(&params, &|| {}).unwrap();
    // ε = 0 in the sweep is Figure 1d itself: no unselectable key at d = 3.
    let (eps0, cells0) = &result.sweep[0];
    assert_eq!(*eps0, 0.0);
    assert!(cells0.iter().all(|c| c.unselectable == 0));
    insta::assert_snapshot!("figure_1d_eps_reduced", table(&params, &result).csv());
}
