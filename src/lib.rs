//! # normoracle-cli
//!
//! The top of normoracle: the suites and experiments that draw on every crate below — the
//! published artifacts ([`artifacts`], `normoracle reproduce`), Brody et al.'s training
//! experiment ([`experiments`]), the real model (`model`, feature `model`), the audit of
//! everything built in ([`audit`]) and the fuzzing drivers ([`fuzzing`]) — and the
//! `normoracle` binary (src/main.rs, a thin clap shell over these crates).
//!
//! The crates below, bottom up: `normoracle-core`, `normoracle-kernels`, `normoracle` (the
//! judge; what a kernel author adds for `cargo test`), `normoracle-geometry`. The map is in
//! `docs/design.md`.

// The crates below under their module names, so `crate::judge`, `crate::geometry`, ... read as
// they do everywhere else.
use normoracle::{
    adapters, cases, domain, dtype, error, exact, harness, judge, manifest, npy, output, problem,
    zoo, Dtype, Error, Result,
};
use normoracle_geometry as geometry;
use normoracle_geometry::theorems;

pub mod artifacts;
pub mod audit;
pub mod experiments;
pub mod fuzzing;
#[cfg(feature = "model")]
pub mod model;
