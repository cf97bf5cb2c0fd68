//! # normoracle-geometry
//!
//! The geometry of LayerNorm: what the projection and the scaling do to sets of vectors
//! ([`selectability`]: keys no query can select, Brody et al. 2023; [`ellipsoid`]: the output
//! hyperellipsoid, Riechers 2024), and the papers' theorems, each checked in exact arithmetic
//! ([`theorems`]). The only normoracle crate with dense linear algebra (faer, nalgebra) and
//! plotting (plotters).

// The modules below it under their own names (`crate::exact`, `crate::judge`, ...).
use normoracle::{dtype, error, exact, judge, npy, output, problem};

pub mod ellipsoid;
pub mod selectability;
pub mod theorems;
