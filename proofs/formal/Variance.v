(** Item 6 of crates/oracle/src/judge/tolerance.rs, its first step: the centred squares. With Σδ_i = 0 and a
    computed mean off by D (|D| ≤ e₂), the centred values δ̂_i = (δ_i − D)(1 + θ_i), |θ_i| ≤ u,
    have |Σδ̂_i² − dq| ≤ (2u+u²)(dq + d·e₂²) + d·e₂², dq = Σδ_i². *)
From Coq Require Import Reals Lra Lia ZArith.
From Flocq Require Import Core.
From Normoracle Require Import Sums Summation.
Open Scope R_scope.

(** Because Σδ_i = 0, Σ(δ_i − D)² = Σδ_i² + d·D² exactly. *)
Lemma shifted_squares d delta D : sum d delta = 0 ->
  sum d (fun i => (delta i - D) ^ 2) = sum d (fun i => delta i ^ 2) + INR d * D ^ 2.
Proof.
  intros H.
  rewrite (sum_ext d _ (fun i => (delta i ^ 2 + D ^ 2) - 2 * D * delta i)) by (intros; ring).
  rewrite sum_minus, sum_plus, sum_const, sum_scal_l, H. ring.
Qed.

Lemma sum_abs_le n f g : (forall i, (i < n)%nat -> Rabs (f i) <= g i) -> Rabs (sum n f) <= sum n g.
Proof.
  induction n as [|n IH]; intros H; simpl; [rewrite Rabs_R0; lra|].
  eapply Rle_trans; [apply Rabs_triang|]. apply Rplus_le_compat; [apply IH; intros; apply H; lia|apply H; lia].
Qed.

Section Variance.
Variable p : Z.
Context { prec_gt_0_ : Prec_gt_0 p }.
Notation u := (u p).

Theorem centred_squares d delta theta D e2 :
  sum d delta = 0 -> (forall i, (i < d)%nat -> Rabs (theta i) <= u) -> Rabs D <= e2 ->
  Rabs (sum d (fun i => ((delta i - D) * (1 + theta i)) ^ 2) - sum d (fun i => delta i ^ 2))
  <= (2 * u + u * u) * (sum d (fun i => delta i ^ 2) + INR d * e2 ^ 2) + INR d * e2 ^ 2.
Proof.
  intros Hs Ht HD. pose proof (u_nonneg p).
  assert (HD2 : D ^ 2 <= e2 ^ 2).
  { rewrite <- (pow2_abs D). apply pow_incr. split; [apply Rabs_pos|exact HD]. }
  assert (Hd : 0 <= INR d) by apply pos_INR.
  rewrite (sum_ext d _ (fun i => (delta i - D) ^ 2 * (2 * theta i + theta i ^ 2) + (delta i - D) ^ 2))
    by (intros; ring).
  rewrite sum_plus, shifted_squares by exact Hs.
  replace (sum d (fun i => (delta i - D) ^ 2 * (2 * theta i + theta i ^ 2)) +
           (sum d (fun i => delta i ^ 2) + INR d * D ^ 2) - sum d (fun i => delta i ^ 2))
    with (sum d (fun i => (delta i - D) ^ 2 * (2 * theta i + theta i ^ 2)) + INR d * D ^ 2) by ring.
  assert (Hb : Rabs (sum d (fun i => (delta i - D) ^ 2 * (2 * theta i + theta i ^ 2)))
               <= (2 * u + u * u) * sum d (fun i => (delta i - D) ^ 2)).
  { rewrite <- sum_scal_l. apply sum_abs_le. intros i Hi.
    specialize (Ht i Hi). pose proof (pow2_ge_0 (delta i - D)).
    assert (Rabs (theta i) ^ 2 <= u * u)
      by (simpl; rewrite Rmult_1_r; apply Rmult_le_compat; (apply Rabs_pos || assumption)).
    assert (Rabs (2 * theta i + theta i ^ 2) <= 2 * u + u * u).
    { eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult, <- RPow_abs, (Rabs_pos_eq 2) by lra. lra. }
    rewrite Rabs_mult, (Rabs_pos_eq ((delta i - D) ^ 2)) by exact H0. rewrite Rmult_comm.
    apply Rmult_le_compat_r; assumption. }
  rewrite shifted_squares in Hb by exact Hs.
  eapply Rle_trans; [apply Rabs_triang|].
  rewrite (Rabs_pos_eq (INR d * D ^ 2)) by (apply Rmult_le_pos; [exact Hd|apply pow2_ge_0]).
  assert (INR d * D ^ 2 <= INR d * e2 ^ 2) by (apply Rmult_le_compat_l; assumption).
  assert ((2 * u + u * u) * (sum d (fun i => delta i ^ 2) + INR d * D ^ 2)
          <= (2 * u + u * u) * (sum d (fun i => delta i ^ 2) + INR d * e2 ^ 2))
    by (apply Rmult_le_compat_l; [nra|lra]).
  lra.
Qed.

End Variance.
