//! The catalogue as `normoracle theorems` runs it: every entry verifies on its own seeded
//! ChaCha stream (more cases and another seed under NORMORACLE_LONG=1).

use normoracle_geometry::theorems::{catalogue, run, Budget};
use normoracle_proofs::{cases, long};

#[test]
fn every_catalogued_theorem_verifies() {
    let budget = Budget {
        cases: cases(16) as usize,
        seed: if long() { 0x0005_eed1 } else { 7 },
    };
    for r in run(&catalogue(), budget, |_| {}) {
        assert!(r.report.verified(), "{}: {}", r.entry.id, r.verdict());
        assert!(
            r.report.cases > budget.cases,
            "{} ran its edge cases too",
            r.entry.id
        );
    }
}
