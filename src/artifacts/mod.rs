//! Reproducible results: the registry `normoracle reproduce` runs and the catalogue of what
//! each artifact is (their tables and bars come from [`crate::output`]).

mod bench;
pub mod catalogue;
pub mod registry;
