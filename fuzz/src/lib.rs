//! Glue between libFuzzer and `normoracle_cli::fuzzing`, where the input formats and the
//! properties live (so `cargo test` replays the same checks, `tests/fuzz_regressions.rs`).

pub mod cli;

use normoracle_cli::fuzzing::{self, Target};

/// Makes rayon's global pool the fuzzing thread alone, once: parallel iterators (the judge's
/// rows, the reference, candle's ops) then run inline on it. With any worker thread — even
/// one, as RAYON_NUM_THREADS=1 gives — the instrumented idle loop of that thread (spinning,
/// then sleeping, for as long as the scheduler decides) adds coverage that differs from run
/// to run, and the same input with the same seed explores differently.
pub fn single_threaded() {
    static POOL: std::sync::Once = std::sync::Once::new();
    POOL.call_once(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .use_current_thread()
            .build_global()
            .expect("rayon's global pool is built here first");
    });
}

/// Checks one input of the named target; a finding is a panic (libFuzzer saves the input).
pub fn check(target: &str, data: &[u8]) {
    single_threaded();
    let target = Target::from_name(target).expect("fuzz targets are named after fuzzing::Target");
    if let Err(finding) = fuzzing::check(&target, data) {
        panic!("{} finding:\n{finding}", target.name());
    }
}
