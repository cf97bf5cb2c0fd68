//! Unselectable keys, decided exactly, every verdict with a certificate checked in exact
//! rational arithmetic.
//!
//! # The question
//! Keys h_1..h_n ∈ ℝ^d, optional biases b_j; key i is *selectable* when some query v gives it
//! the strictly highest score: v·h_i + b_i > v·h_j + b_j for all j ≠ i. Brody, Alon, Yahav
//! (2023, Theorem 1) observe that a key inside the convex hull of the others never is, and
//! that LayerNorm's scaling (every key on the √d sphere) makes every key selectable.
//!
//! # The theorem we decide with
//! The strict system (h_i − h_j)·v > b_j − b_i (j ≠ i) is infeasible if and only if (Motzkin's
//! transposition theorem) there are λ_j ≥ 0, Σλ_j = 1, with
//!
//! Σ_j λ_j h_j = h_i and Σ_j λ_j b_j ≥ b_i.
//!
//! Without biases: key i is unselectable iff h_i lies in the convex hull of the other keys
//! (a duplicate is the simplest case: λ = the copy). With biases: iff the lifted point
//! (h_i, b_i) lies on or below the upper hull of the other lifted points, in the sense above.
//! So each verdict has a certificate: a query v (selectable) or weights λ (unselectable);
//! exactly one kind exists. See [`certificate`] for the checker and for normalized keys,
//! whose coordinates are irrational (k_j = w_j/√q_j) and get certificates of their own.
//!
//! # The engine
//! [`decide_plain`] and [`decide_scaled`]: cheap heuristics (the key as its own query,
//! Braid-Reflect of Grivas et al. 2022), a float LP over a growing working set, and an exact
//! rational LP as the fallback. Every float answer is turned into a certificate and verified
//! exactly (`verify.rs`, `exact_solve.rs`); nothing is reported unverified.
//!
//! [`figure`] redoes Brody et al.'s Figure 1c/1d ([`eps_grid`]: 1d with ε > 0); [`counterexamples`] holds the proved
//! statements about ε > 0, RMSNorm and gain/bias.

pub mod certificate;
pub mod counterexamples;
mod decide;
mod decide_scaled;
pub mod eps_grid;
pub mod exact_solve;
pub mod figure;
pub mod filter;
pub mod heuristics;
pub mod keys;
pub mod lp_rival;
pub mod report;
pub mod simplex;
pub mod verify;

pub use certificate::{check_plain, check_scaled, Above, Certificate, Query, Rejected, Weights};
pub use decide::{decide_exact, decide_plain, Decision, Method, Options};
pub use decide_scaled::decide_scaled;
pub use keys::{KeySet, NormKind, NormSpec, Normalization, ScaledKeySet};
