//! Theorem `projection`: x − μ1 = Px, P's matrix identities, and Brody et al.'s App. C
//! construction, for random rows and every d drawn.

use normoracle_geometry::theorems::exact_vec::centered;
use normoracle_geometry::theorems::projection::{
    brody_m_inverse_scaled, check_matrices, check_row, MATRIX_MAX_D,
};
use normoracle_proofs::{config, holds, qc_holds, quickcheck, row, QcRow};
use proptest::prelude::*;
use quickcheck::TestResult;

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn rows_project_onto_the_ones_plane(r in row()) {
        holds(check_row(centered, normoracle_geometry::theorems::projection::scaled_projection, &r.values()))?;
    }

    #[test]
    fn matrices_and_the_app_c_construction(d in 1..=MATRIX_MAX_D) {
        holds(check_matrices(d, &normoracle_geometry::theorems::projection::scaled_projection(d), &brody_m_inverse_scaled(d)))?;
    }
}

#[test]
fn quickcheck_rows_project_onto_the_ones_plane() {
    fn property(r: QcRow) -> TestResult {
        qc_holds(check_row(
            centered,
            normoracle_geometry::theorems::projection::scaled_projection,
            &r.values(),
        ))
    }
    quickcheck(24, property as fn(QcRow) -> TestResult);
}

#[test]
fn quickcheck_matrices_and_the_app_c_construction() {
    fn property(d: u8) -> TestResult {
        let d = 1 + d as usize % MATRIX_MAX_D;
        qc_holds(check_matrices(
            d,
            &normoracle_geometry::theorems::projection::scaled_projection(d),
            &brody_m_inverse_scaled(d),
        ))
    }
    quickcheck(16, property as fn(u8) -> TestResult);
}
