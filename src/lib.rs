//! # normoracle
//!
//! An exact oracle for normalization kernels (LayerNorm, RMSNorm in f16, bf16, f32, f64) and
//! the geometry of LayerNorm.
//!
//! The data flow (see `docs/design.md`):
//! `cases` (a seeded battery) → [`problem::Problem`] → a kernel under test (`adapters`) and
//! the exact reference (`exact`) → the `judge` (metrics, the one tolerance formula, tiers) →
//! a verdict and its report.

pub mod adapters;
pub mod artifacts;
pub mod cases;
pub mod domain;
pub mod dtype;
pub mod error;
pub mod exact;
pub mod experiments;
pub mod fuzzing;
pub mod geometry;
pub mod harness;
pub mod judge;
pub mod kernels;
pub mod manifest;
#[cfg(feature = "model")]
pub mod model;
pub mod npy;
pub mod output;
pub mod problem;
pub mod problem_io;
pub mod theorems;
pub mod wide;
pub mod zoo;

pub use dtype::Dtype;
pub use error::{Error, Result};

pub mod audit;
