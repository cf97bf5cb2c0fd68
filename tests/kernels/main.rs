//! Our kernels against the exact oracle, one module per concern (accuracy on the battery, the
//! public API, determinism across ISAs, threads and splits, the f64 and f32 paths), in one test
//! binary. `cargo test --test kernels determinism::` runs one of them. (kernels_oracle, which
//! starts the CLI binary, stays apart: .ci/aarch64 runs this binary without it.)

mod common;

mod accuracy;
mod api;
mod determinism;
mod paths;
