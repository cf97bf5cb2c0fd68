//! The geometry of LayerNorm: what the projection and the scaling do to sets of vectors.
pub mod ellipsoid;
pub mod selectability;
