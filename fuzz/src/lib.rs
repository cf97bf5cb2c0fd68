//! Glue between libFuzzer and `normoracle::fuzzing`, where the input formats and the
//! properties live (so `cargo test` replays the same checks, `tests/fuzz_regressions.rs`).

pub mod cli;

use normoracle::fuzzing::{self, Target};

/// Checks one input of the named target; a finding is a panic (libFuzzer saves the input).
pub fn check(target: &str, data: &[u8]) {
    let target = Target::from_name(target).expect("fuzz targets are named after fuzzing::Target");
    if let Err(finding) = fuzzing::check(&target, data) {
        panic!("{} finding:\n{finding}", target.name());
    }
}
