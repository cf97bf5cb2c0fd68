//! The property suites of the theorems (proptest, quickcheck), one module per theorem, in one
//! test binary: one link instead of one per suite. `cargo test -p normoracle-proofs
//! convex_hull::` runs one suite.

mod catalogue;
mod convex_hull;
mod decompositions;
mod ellipsoid;
mod faults;
mod float_corollaries;
mod layernorm_jacobian;
mod norm_sqrt_d;
mod projection;
mod rms_vs_layer;
mod rmsnorm_image;
mod surd;
mod two_point_map;
mod uniform_attention;
mod uniform_attention_gain;
