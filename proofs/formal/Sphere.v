(** Brody et al. 2023 eqs. (1)-(5) and App. B: LayerNorm's and RMSNorm's outputs lie on the
    sphere of radius √d (ε = 0), the exact shrink law for ε > 0, and the two-point map. *)
From Coq Require Import Reals Lra Lia.
From Normoracle Require Import Sums.
Open Scope R_scope.

Section Sphere.
Variable d : nat.
Hypothesis d_pos : (0 < d)%nat.

Let dR_pos : 0 < INR d.
Proof. apply lt_0_INR; exact d_pos. Qed.

Definition centre (x : nat -> R) i := x i - mean d x.
(** σ² (the population variance) and mean(x²). *)
Definition var x := norm2 d (centre x) / INR d.
Definition mean_sq x := norm2 d x / INR d.

(** LayerNorm and RMSNorm without γ, β, ε inside or outside the root. *)
Definition layer_norm eps x i := centre x i / sqrt (var x + eps).
Definition layer_norm_outside eps x i := centre x i / (sqrt (var x) + eps).
Definition rms_norm eps x i := x i / sqrt (mean_sq x + eps).
Definition rms_norm_outside eps x i := x i / (sqrt (mean_sq x) + eps).

Lemma div_nonneg a b : 0 <= a -> 0 < b -> 0 <= a / b.
Proof. intros. unfold Rdiv. apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]. Qed.

Lemma var_nonneg x : 0 <= var x.
Proof. unfold var. apply div_nonneg; [apply norm2_nonneg|lra]. Qed.

Lemma mean_sq_nonneg x : 0 <= mean_sq x.
Proof. unfold mean_sq. apply div_nonneg; [apply norm2_nonneg|lra]. Qed.

(** Dividing a vector by c scales its squared norm by 1/c². *)
Lemma norm2_div y c : c <> 0 -> norm2 d (fun i => y i / c) = norm2 d y / c ^ 2.
Proof.
  intros Hc. unfold norm2, dot.
  rewrite (sum_ext d _ (fun i => y i * y i * / c ^ 2)) by (intros; field; exact Hc).
  rewrite sum_scal_r. field. exact Hc.
Qed.

(** The norm law for a vector divided by a positive scale: ‖y/c‖² = d·m/c² when ‖y‖² = d·m. *)
Lemma scaled_norm2 y m c : norm2 d y = INR d * m -> 0 < c ->
  norm2 d (fun i => y i / c) = INR d * m / c ^ 2.
Proof. intros Hy Hc. rewrite norm2_div by lra. now rewrite Hy. Qed.

Lemma norm2_centre x : norm2 d (centre x) = INR d * var x.
Proof. unfold var. field. lra. Qed.

Lemma norm2_x x : norm2 d x = INR d * mean_sq x.
Proof. unfold mean_sq. field. lra. Qed.

(** The shrink law: ‖LN_ε(x)‖² = d·σ²/(σ² + ε), ε inside the root (σ² + ε > 0). *)
Theorem layer_norm_shrink eps x : 0 < var x + eps ->
  norm2 d (layer_norm eps x) = INR d * var x / (var x + eps).
Proof.
  intros H. unfold layer_norm. rewrite scaled_norm2 with (m := var x).
  - rewrite pow2_sqrt by lra. reflexivity.
  - apply norm2_centre.
  - apply sqrt_lt_R0; exact H.
Qed.

(** ε outside: ‖y‖² = d·σ²/(σ + ε)². *)
Theorem layer_norm_outside_shrink eps x : 0 < sqrt (var x) + eps ->
  norm2 d (layer_norm_outside eps x) = INR d * var x / (sqrt (var x) + eps) ^ 2.
Proof. intros H. apply scaled_norm2; [apply norm2_centre|exact H]. Qed.

(** ‖LN(x)‖ = √d for σ > 0 and ε = 0. *)
Theorem layer_norm_on_sphere x : 0 < var x -> norm d (layer_norm 0 x) = sqrt (INR d).
Proof.
  intros H. unfold norm. rewrite layer_norm_shrink by lra. f_equal. field. lra.
Qed.

Theorem rms_norm_shrink eps x : 0 < mean_sq x + eps ->
  norm2 d (rms_norm eps x) = INR d * mean_sq x / (mean_sq x + eps).
Proof.
  intros H. unfold rms_norm. rewrite scaled_norm2 with (m := mean_sq x).
  - rewrite pow2_sqrt by lra. reflexivity.
  - apply norm2_x.
  - apply sqrt_lt_R0; exact H.
Qed.

Theorem rms_norm_outside_shrink eps x : 0 < sqrt (mean_sq x) + eps ->
  norm2 d (rms_norm_outside eps x) = INR d * mean_sq x / (sqrt (mean_sq x) + eps) ^ 2.
Proof. intros H. apply scaled_norm2; [apply norm2_x|exact H]. Qed.

(** ‖RMSNorm(x)‖ = √d for every x ≠ 0 (ε = 0). *)
Theorem rms_norm_on_sphere x : (exists i, (i < d)%nat /\ x i <> 0) ->
  norm d (rms_norm 0 x) = sqrt (INR d).
Proof.
  intros Hx. assert (0 < mean_sq x).
  { unfold mean_sq. apply Rdiv_lt_0_compat; [apply norm2_pos; exact Hx|lra]. }
  unfold norm. rewrite rms_norm_shrink by lra. f_equal. field. lra.
Qed.

(** The two-point map (App. B): for v ⟂ 1, v ≠ 0 and α ≠ 0, x = αv + β1 maps to
    sign(α)·√d·v/‖v‖ (ε = 0), sign(α) = α/|α|. *)
Lemma norm2_ext_centre x alpha v :
  (forall k, centre x k = alpha * v k) -> norm2 d (centre x) = alpha ^ 2 * norm2 d v.
Proof.
  intros H. unfold norm2, dot. rewrite <- sum_scal_l. apply sum_ext. intros. rewrite H. ring.
Qed.

Theorem two_point_map v alpha beta :
  sum d v = 0 -> (exists i, (i < d)%nat /\ v i <> 0) -> alpha <> 0 ->
  forall i, (i < d)%nat ->
  layer_norm 0 (fun k => alpha * v k + beta) i
  = alpha / Rabs alpha * sqrt (INR d) * v i / norm d v.
Proof.
  intros Hs Hv Ha i Hi.
  set (x := fun k => alpha * v k + beta).
  assert (Hm : mean d x = beta).
  { unfold mean, x. rewrite sum_plus, sum_scal_l, sum_const, Hs. field. lra. }
  assert (Hc : forall k, centre x k = alpha * v k) by (intros; unfold centre; rewrite Hm; unfold x; ring).
  assert (Hn : 0 < norm2 d v) by (apply norm2_pos; exact Hv).
  assert (Hvar : var x = (Rabs alpha * norm d v / sqrt (INR d)) ^ 2).
  { unfold var. rewrite (norm2_ext_centre x alpha v Hc). unfold norm.
    assert (Hd : sqrt (INR d) <> 0) by (apply Rgt_not_eq, sqrt_lt_R0; lra).
    replace ((Rabs alpha * sqrt (norm2 d v) / sqrt (INR d)) ^ 2)
      with (Rabs alpha ^ 2 * sqrt (norm2 d v) ^ 2 / sqrt (INR d) ^ 2) by (field; exact Hd).
    rewrite pow2_abs, !pow2_sqrt by lra. reflexivity. }
  unfold layer_norm. rewrite Rplus_0_r, Hvar, sqrt_pow2.
  - rewrite Hc. unfold norm.
    assert (0 < Rabs alpha) by (apply Rabs_pos_lt; exact Ha).
    assert (0 < sqrt (norm2 d v)) by (apply sqrt_lt_R0; lra).
    assert (0 < sqrt (INR d)) by (apply sqrt_lt_R0; lra).
    field. repeat split; lra.
  - apply div_nonneg; [apply Rmult_le_pos; [apply Rabs_pos|apply sqrt_pos]|].
    apply sqrt_lt_R0; lra.
Qed.

End Sphere.
