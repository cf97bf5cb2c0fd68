//! # normoracle
//!
//! An exact oracle for normalization kernels (LayerNorm, RMSNorm in f16, bf16, f32, f64): the
//! crate a kernel author adds as a dev-dependency to judge a kernel from `cargo test`
//! ([`assert_kernel_passes!`], [`judge::api::judge_fn`]). It depends on neither the geometry's linear
//! algebra nor plotting (those live in `normoracle-geometry`).
//!
//! The data flow (see `docs/design.md`):
//! [`cases`] (a seeded battery) → [`problem::Problem`] → a kernel under test ([`adapters`];
//! shared libraries behind the C ABI in an isolated process, [`harness`]) and the exact
//! reference ([`exact`]) → the [`judge`] (metrics, the one tolerance formula, tiers) → a
//! verdict and its report. [`zoo`] runs every kernel available here; [`mod@bench`] times the
//! native kernels.
//!
//! The modules of `normoracle-core` and `normoracle-kernels` are re-exported under their own
//! names, so `normoracle::exact`, `normoracle::kernels` and the others are one import away.

pub use normoracle_core::{
    domain, dtype, error, exact, npy, output, problem, problem_io, wide, Dtype, Error, Result,
};
pub use normoracle_kernels as kernels;

pub mod adapters;
pub mod bench;
pub mod cases;
pub mod harness;
pub mod judge;
pub mod manifest;
pub mod zoo;
