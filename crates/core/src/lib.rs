//! # normoracle-core
//!
//! What every other normoracle crate builds on: the storage formats ([`dtype`]), a problem and
//! its parameters ([`problem`]), errors ([`error`]), exact and correctly rounded arithmetic with
//! the independent reference ([`exact`]), the seeded generator ([`rng`]), `.npy` files
//! ([`npy`], [`problem_io`]), input domains ([`domain`]), wide rows ([`wide`]), and the bottom
//! output layer: tables and progress bars ([`output`]). See `docs/design.md` for the crate map.

pub mod domain;
pub mod dtype;
pub mod error;
pub mod exact;
pub mod npy;
pub mod output;
pub mod problem;
pub mod problem_io;
pub mod rng;
pub mod vector;
pub mod wide;

pub use dtype::Dtype;
pub use error::{Error, Result};
