(** The judge's lemmas at the constants the judge uses (Constants.v, generated from
    crates/oracle/src/judge/tolerance.rs): each constant is checked against IEEE 754 binary32 and binary64
    (Flocq's FLT format of precision prec and emin = 3 − emax − prec, emax = 128 and 1024),
    and the summation lemmas are instantiated there. *)
From Coq Require Import Reals Lra Lia ZArith List Permutation Sorted.
From Flocq Require Import Core.
From Normoracle Require Import Summation Weight Constants.
Open Scope R_scope.

Definition emin_f32 : Z := (3 - 128 - p_f32)%Z.
Definition emin_f64 : Z := (3 - 1024 - p_f64)%Z.

Lemma f32_precision : p_f32 = 24%Z.
Proof. reflexivity. Qed.
Lemma f64_precision : p_f64 = 53%Z.
Proof. reflexivity. Qed.

Global Instance f32_prec_gt_0 : Prec_gt_0 p_f32.
Proof. unfold Prec_gt_0. rewrite f32_precision. lia. Qed.
Global Instance f64_prec_gt_0 : Prec_gt_0 p_f64.
Proof. unfold Prec_gt_0. rewrite f64_precision. lia. Qed.

(** The judge's u is the unit roundoff 2^-p, its u_min the least subnormal 2^emin. *)
Lemma f32_u : u_f32 = u p_f32.
Proof. unfold u_f32, u. rewrite f32_precision. simpl. lra. Qed.
Lemma f64_u : u_f64 = u p_f64.
Proof. unfold u_f64, u. rewrite f64_precision. simpl. lra. Qed.
Lemma f32_u_min : u_min_f32 = bpow radix2 emin_f32.
Proof. unfold u_min_f32, emin_f32. rewrite f32_precision. simpl. lra. Qed.
Lemma f64_u_min : u_min_f64 = bpow radix2 emin_f64.
Proof. unfold u_min_f64, emin_f64. rewrite f64_precision. simpl. lra. Qed.

(** Item 2 in binary32 and binary64: leaves on a grid 2^e with Σ|x| ≤ 2^(p − grid_headroom_bits + e) sum exactly in
    every tree, under every rounding. *)
Theorem f32_sum_exact_on_grid (rnd : R -> Z) { valid_rnd : Valid_rnd rnd } e t :
  (emin_f32 <= e)%Z -> on_grid e t -> abs_sum t <= bpow radix2 (p_f32 - grid_headroom_bits + e) ->
  rounded_sum (round radix2 (FLT_exp emin_f32 p_f32) rnd) t = exact_sum t.
Proof. intros He Hg Hs. exact (sum_exact_on_grid _ _ rnd e t He Hg Hs). Qed.
Theorem f64_sum_exact_on_grid (rnd : R -> Z) { valid_rnd : Valid_rnd rnd } e t :
  (emin_f64 <= e)%Z -> on_grid e t -> abs_sum t <= bpow radix2 (p_f64 - grid_headroom_bits + e) ->
  rounded_sum (round radix2 (FLT_exp emin_f64 p_f64) rnd) t = exact_sum t.
Proof. intros He Hg Hs. exact (sum_exact_on_grid _ _ rnd e t He Hg Hs). Qed.

(** Item 1 (its γ form) with the judge's u, rounding to nearest (ties to even among others),
    no underflow or overflow. *)
Theorem f32_sum_error_any_tree choice t :
  Rabs (rounded_sum (round radix2 (FLX_exp p_f32) (Znearest choice)) t - exact_sum t)
  <= ((1 + u_f32) ^ (leaves t - 1) - 1) * abs_sum t.
Proof. rewrite f32_u. apply (sum_error_any_tree p_f32 choice t). Qed.
Theorem f64_sum_error_any_tree choice t :
  Rabs (rounded_sum (round radix2 (FLX_exp p_f64) (Znearest choice)) t - exact_sum t)
  <= ((1 + u_f64) ^ (leaves t - 1) - 1) * abs_sum t.
Proof. rewrite f64_u. apply (sum_error_any_tree p_f64 choice t). Qed.

(** Lemma 1 (item 1) as the judge evaluates it, with its u: for every tree of d leaves whose
    magnitudes, sorted decreasingly, are s, |Ŝ − S| ≤ u·(1+u)^(d−1)·tree_weight(s). *)
Theorem f32_sum_error_sorted_weight choice t s :
  Permutation (mags t) s -> StronglySorted Rge s ->
  Rabs (rounded_sum (round radix2 (FLX_exp p_f32) (Znearest choice)) t - exact_sum t)
  <= u_f32 * (1 + u_f32) ^ (length s - 1) * tree_weight s.
Proof. rewrite f32_u. apply sum_error_sorted_weight. exact _. Qed.
Theorem f64_sum_error_sorted_weight choice t s :
  Permutation (mags t) s -> StronglySorted Rge s ->
  Rabs (rounded_sum (round radix2 (FLX_exp p_f64) (Znearest choice)) t - exact_sum t)
  <= u_f64 * (1 + u_f64) ^ (length s - 1) * tree_weight s.
Proof. rewrite f64_u. apply sum_error_sorted_weight. exact _. Qed.
