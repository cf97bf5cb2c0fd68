//! The claims of the catalogue and of the judge that carry a machine-checked proof: the Coq
//! development in `proofs/formal/` (Coq 8.16, Flocq 4.1; compiled by `tests/formal_proofs.rs`,
//! which also prints `Print Assumptions` of every lemma named here), and the constants it
//! shares with the judge, generated from `judge::tolerance` into `proofs/formal/Constants.v`.
//!
//! A proof covers the statement it names, for every d; the rest of a theorem's statement stays
//! checked on the checker's instances, and `normoracle theorems` says which is which.

use crate::dtype::Dtype;
use crate::judge::tolerance::{
    accumulation_bits, accumulation_precision, CAP_EXPONENT_OFFSET, GRID_HEADROOM_BITS,
    OUTPUT_ROUNDINGS, SHIFTED_WEIGHT_DIVISOR, SHIFTED_WEIGHT_HIGH, SHIFTED_WEIGHT_LOW,
};
use rug::Rational;

/// One catalogue theorem's proved part.
#[derive(Debug, Clone, Copy)]
pub struct Proof {
    /// The catalogue id (`theorems::catalogue`).
    pub theorem: &'static str,
    /// The file under `proofs/formal/`.
    pub file: &'static str,
    /// Its main lemmas (each one's `Print Assumptions` is checked).
    pub lemmas: &'static [&'static str],
    /// What they prove, for every d.
    pub covers: &'static str,
}

/// The proved parts of the catalogue's theorems.
pub const PROOFS: &[Proof] = &[
    Proof {
        theorem: super::projection::THEOREM.id,
        file: "Projection.v",
        lemmas: &[
            "P_symmetric",
            "P_idempotent",
            "P_apply",
            "P_one",
            "P_trace",
            "P_image_perp",
            "P_fixes_perp",
            "P_kernel",
            "centred_pythagoras",
            "P_rank",
        ],
        covers: "P symmetric and idempotent, Px = x − μ1, P1 = 0, trace P = d − 1, image 1⟂ and kernel span(1), rank P = d − 1 (the d − 1 independent vectors e_j − e_d span the image, any d vectors of it are dependent), ‖x‖² = ‖x − μ1‖² + dμ²",
    },
    Proof {
        theorem: super::norm_sqrt_d::THEOREM.id,
        file: "Sphere.v",
        lemmas: &[
            "layer_norm_on_sphere",
            "rms_norm_on_sphere",
            "layer_norm_shrink",
            "layer_norm_outside_shrink",
            "rms_norm_shrink",
            "rms_norm_outside_shrink",
        ],
        covers: "‖LN(x)‖ = √d (σ > 0, ε = 0), ‖RMSNorm(x)‖ = √d (x ≠ 0), ‖y‖² = d·m/(m + ε) (ε inside) and d·m/(√m + ε)² (outside)",
    },
    Proof {
        theorem: super::two_point_map::THEOREM.id,
        file: "Sphere.v",
        lemmas: &["two_point_map"],
        covers: "x = αv + β1 (v ⟂ 1, v ≠ 0, α ≠ 0) maps to sign(α)·√d·v/‖v‖ (ε = 0)",
    },
    Proof {
        theorem: super::convex_hull::THEOREM.id,
        file: "Hull.v",
        lemmas: &[
            "hull_never_wins",
            "gordan",
            "outside_hull_wins",
            "sphere_self_wins",
            "layer_norm_outputs_selectable",
        ],
        covers: "a key in the convex hull of the others never strictly wins for any query, and a key outside it wins for some query (Gordan's alternative); a LayerNorm output (ε = 0, σ > 0) scores itself strictly above every other output",
    },
];

/// The judge's lemmas (`tolerance` items 1, 2, 2b, 5, 6, 7, 8, their chaining into one theorem
/// for a two-pass LayerNorm (plain or shifted mean) and one for RMSNorm, and item 9's cap for
/// the two-pass kernels), file and name, and their binary32 and binary64 instances at the
/// constants of `Constants.v`.
pub const JUDGE_LEMMAS: &[(&str, &str)] = &[
    ("Summation.v", "sum_exact_on_grid"),
    ("Summation.v", "sum_error_any_tree"),
    ("Weight.v", "node_weight_le_T"),
    ("Weight.v", "sum_error_tree_weight"),
    ("Weight.v", "T_is_tree_weight"),
    ("Weight.v", "sum_error_sorted_weight"),
    ("Weight.v", "T_le_entries"),
    ("Weight.v", "sum_error_dominated"),
    ("Scale.v", "mean_division"),
    ("Scale.v", "centring"),
    ("Scale.v", "add_eps"),
    ("Scale.v", "scale_inside"),
    ("Scale.v", "sqrt_diff_root"),
    ("Scale.v", "sqrt_diff_quotient"),
    ("Scale.v", "scale_outside"),
    ("Scale.v", "reciprocal"),
    ("Scale.v", "normalized"),
    ("Scale.v", "output"),
    ("Variance.v", "shifted_squares"),
    ("Variance.v", "centred_squares"),
    ("LayerNorm.v", "sum_of_squares"),
    ("LayerNorm.v", "variance_stage"),
    ("LayerNorm.v", "scale_stage"),
    ("LayerNorm.v", "output_stage"),
    ("LayerNorm.v", "layer_norm_from_mean"),
    ("LayerNorm.v", "two_pass_layer_norm"),
    ("LayerNorm.v", "sum_exact_FLX"),
    ("LayerNorm.v", "two_pass_layer_norm_exact_sums"),
    ("LayerNorm.v", "rms_sum_of_squares"),
    ("LayerNorm.v", "rms_norm"),
    ("Cap.v", "rounded_sum_lower"),
    ("Cap.v", "cap_bound"),
    ("Cap.v", "capped_output"),
    ("Shifted.v", "iw_one"),
    ("Shifted.v", "shifted_mean_stage"),
    ("Shifted.v", "shifted_layer_norm"),
    ("Shifted.v", "shifted_mean_constant"),
    ("Shifted.v", "shifted_mean_exact"),
    ("Judge.v", "f32_sum_exact_on_grid"),
    ("Judge.v", "f64_sum_exact_on_grid"),
    ("Judge.v", "f32_sum_error_any_tree"),
    ("Judge.v", "f64_sum_error_any_tree"),
    ("Judge.v", "f32_sum_error_sorted_weight"),
    ("Judge.v", "f64_sum_error_sorted_weight"),
];

/// The proved part of catalogue theorem `id`, if any.
pub fn proof_of(id: &str) -> Option<&'static Proof> {
    PROOFS.iter().find(|p| p.theorem == id)
}

/// The `proof` column of `normoracle theorems`: what is proved for every d and what is only
/// checked on the `cases` instances the checker ran.
pub fn status(id: &str, cases: usize) -> String {
    match proof_of(id) {
        Some(p) => format!(
            "proved for all d (Coq: {}:{}): {}; the rest checked on {cases} instances",
            p.file,
            p.lemmas.join(", "),
            p.covers
        ),
        None => format!("checked on {cases} instances"),
    }
}

/// A float as an exact Coq real: `(IZR n / IZR m)`.
fn coq_real(x: f64) -> String {
    let r = Rational::from_f64(x).expect("a finite constant");
    format!("(IZR {} / IZR {})", r.numer(), r.denom())
}

/// The text of `proofs/formal/Constants.v`: the bound's structural constants
/// (`tolerance::GRID_HEADROOM_BITS`, `OUTPUT_ROUNDINGS`, `CAP_EXPONENT_OFFSET`, the
/// `SHIFTED_WEIGHT_*` of `tolerance::shifted_weight`), which the Coq files use by name, and the
/// accumulation formats' p, u and u_min as the judge uses them
/// (`tolerance::accumulation_precision`, `accumulation_bits`).
pub fn coq_constants() -> String {
    let mut out = String::from(
        "(** Generated from crates/oracle/src/judge/tolerance.rs by normoracle_geometry::theorems::formal::coq_constants;\n    \
         tests/formal_proofs.rs fails when this file and the judge differ. Do not edit. *)\n\
         From Coq Require Import Reals ZArith.\nOpen Scope R_scope.\n",
    );
    out.push_str(&format!(
        "\n(** Item 2: sums are exact where Σ|x| ≤ 2^(p − grid_headroom_bits + e) (GRID_HEADROOM_BITS). *)\n\
         Definition grid_headroom_bits : Z := {GRID_HEADROOM_BITS}%Z.\n\
         \n(** Items 6, 8, 9: c₃ = (1+u)^output_roundings (OUTPUT_ROUNDINGS). *)\n\
         Definition output_roundings : nat := {OUTPUT_ROUNDINGS}%nat.\n\
         \n(** Item 9: the cap √d·(1−u)^-(d + cap_exponent_offset)/2 (CAP_EXPONENT_OFFSET). *)\n\
         Definition cap_exponent_offset : nat := {CAP_EXPONENT_OFFSET}%nat.\n\
         \n(** Item 2b: the shift's extra node weight over n leaves (tolerance::shifted_weight). *)\n\
         Definition shifted_weight_low : R := {SHIFTED_WEIGHT_LOW}.\n\
         Definition shifted_weight_high : R := {SHIFTED_WEIGHT_HIGH}.\n\
         Definition shifted_weight_divisor : R := {SHIFTED_WEIGHT_DIVISOR}.\n\
         Definition shifted_weight (n : R) : R :=\n  \
         (n - shifted_weight_low) * (n + shifted_weight_high) / shifted_weight_divisor.\n"
    ));
    for (name, dtype) in [("f32", Dtype::F32), ("f64", Dtype::F64)] {
        let (u, u_min) = accumulation_precision(dtype);
        let p = accumulation_bits(dtype);
        out.push_str(&format!(
            "\n(** The {name} accumulation format. *)\n\
             Definition p_{name} : Z := {p}%Z.\n\
             Definition u_{name} : R := {}.\n\
             Definition u_min_{name} : R := {}.\n",
            coq_real(u),
            coq_real(u_min)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_proof_names_a_catalogued_theorem() {
        for p in PROOFS {
            assert!(super::super::find(p.theorem).is_some(), "{}", p.theorem);
            assert!(!p.lemmas.is_empty());
        }
        assert_eq!(PROOFS.len(), 4);
        assert!(status("projection", 7).starts_with("proved for all d (Coq: Projection.v:"));
        assert!(status("projection", 7).ends_with("checked on 7 instances"));
        assert_eq!(
            status(super::super::rms_vs_layer::THEOREM.id, 7),
            "checked on 7 instances"
        );
    }

    #[test]
    fn constants_are_exact() {
        let c = coq_constants();
        assert!(c.contains("Definition p_f32 : Z := 24%Z."), "{c}");
        assert!(
            c.contains("Definition u_f32 : R := (IZR 1 / IZR 16777216)."),
            "{c}"
        );
        assert!(c.contains("Definition p_f64 : Z := 53%Z."), "{c}");
        assert!(
            c.contains("Definition cap_exponent_offset : nat := 10%nat."),
            "{c}"
        );
        assert!(
            c.contains("Definition output_roundings : nat := 3%nat."),
            "{c}"
        );
        assert!(
            c.contains("Definition grid_headroom_bits : Z := 0%Z."),
            "{c}"
        );
        assert!(
            c.contains("Definition shifted_weight_high : R := 2."),
            "{c}"
        );
    }
}
