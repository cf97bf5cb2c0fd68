(** Item 2b of crates/oracle/src/judge/tolerance.rs, the shifted sums: K = x_j for any j, S' = Σ fl(x_i − K)
    by any summation tree, μ̂ = fl(K + fl(S'/d)) or fl(K + fl(S'·fl(1/d))), errs by at most
    e_shift = (1+u)[(1+u)²·(u·Σ(|δ_i| + Δ) + u(1+u)^d·(T(|δ|) + Δ(d−1)(d+2)/2))/d + (2u+u²)Δ]
    + u|μ|, Δ ≥ max|δ_i| (and 0 on a constant row, (1+u)(2u+u²)Δ + u|μ| where the shifted sums
    are exact) — and the end-to-end theorem for a two-pass LayerNorm whose mean is shifted.
    Rounding to nearest without underflow or overflow (FLX). *)
From Coq Require Import Reals Lra Lia ZArith List Permutation.
From Flocq Require Import Core Relative.
From Normoracle Require Import Constants Summation Weight Scale Variance Sums LayerNorm.
Import ListNotations.
Open Scope R_scope.

(** The internal nodes' total weight of an index tree under leaf weights f. *)
Fixpoint isum (f : nat -> R) it := match it with ILeaf i => f i | INode l r => isum f l + isum f r end.
Fixpoint iw (f : nat -> R) it :=
  match it with ILeaf _ => 0 | INode l r => isum f l + isum f r + iw f l + iw f r end.

Lemma abs_sum_on f it : abs_sum (on f it) = isum (fun i => Rabs (f i)) it.
Proof. induction it as [i|l IHl r IHr]; simpl; [reflexivity|rewrite IHl, IHr; reflexivity]. Qed.

Lemma node_weight_on f it : node_weight (on f it) = iw (fun i => Rabs (f i)) it.
Proof.
  induction it as [i|l IHl r IHr]; [reflexivity|].
  change (node_weight (on f (INode l r)))
    with (abs_sum (Node (on f l) (on f r)) + node_weight (on f l) + node_weight (on f r)).
  simpl abs_sum. rewrite !abs_sum_on, IHl, IHr. reflexivity.
Qed.

Lemma isum_mono f g it : (forall i, In i (indices it) -> f i <= g i) -> isum f it <= isum g it.
Proof.
  induction it as [i|l IHl r IHr]; simpl; intros H; [apply H; left; reflexivity|].
  apply Rplus_le_compat; [apply IHl|apply IHr]; intros i Hi; apply H, in_or_app; tauto.
Qed.

Lemma iw_mono f g it : (forall i, In i (indices it) -> f i <= g i) -> iw f it <= iw g it.
Proof.
  induction it as [i|l IHl r IHr]; simpl; intros H; [lra|].
  assert (Hl : forall i, In i (indices l) -> f i <= g i) by (intros; apply H, in_or_app; tauto).
  assert (Hr : forall i, In i (indices r) -> f i <= g i) by (intros; apply H, in_or_app; tauto).
  pose proof (isum_mono f g l Hl). pose proof (isum_mono f g r Hr).
  pose proof (IHl Hl). pose proof (IHr Hr). lra.
Qed.

Lemma isum_lin a b f g it : isum (fun i => a * f i + b * g i) it = a * isum f it + b * isum g it.
Proof. induction it as [i|l IHl r IHr]; simpl; [ring|rewrite IHl, IHr; ring]. Qed.

Lemma iw_lin a b f g it : iw (fun i => a * f i + b * g i) it = a * iw f it + b * iw g it.
Proof. induction it as [i|l IHl r IHr]; simpl; [ring|rewrite !isum_lin, IHl, IHr; ring]. Qed.

Lemma isum_one it : isum (fun _ => 1) it = INR (length (indices it)).
Proof.
  induction it as [i|l IHl r IHr]; simpl; [reflexivity|].
  rewrite app_length, plus_INR, IHl, IHr. reflexivity.
Qed.

Lemma indices_length it : 1 <= INR (length (indices it)).
Proof.
  induction it as [j|a IHa b IHb]; simpl; [lra|].
  rewrite app_length, plus_INR. pose proof (pos_INR (length (indices b))). lra.
Qed.

(** A tree of n leaves of weight 1 has node weight at most 2 + 3 + … + n = (n−1)(n+2)/2. *)
Lemma iw_one it : iw (fun _ => 1) it <= shifted_weight (INR (length (indices it))).
Proof.
  unfold shifted_weight, shifted_weight_low, shifted_weight_high, shifted_weight_divisor.
  induction it as [i|l IHl r IHr]; simpl; [lra|].
  rewrite !isum_one, app_length, plus_INR.
  pose proof (indices_length l). pose proof (indices_length r).
  set (nl := INR (length (indices l))) in *. set (nr := INR (length (indices r))) in *.
  assert (0 <= (nl - 1) * (nr - 1)) by nra. lra.
Qed.

Section Shifted.
Variable p : Z.
Context { prec_gt_0_ : Prec_gt_0 p }.
Variable choice : Z -> bool.
Notation u := (u p).
Notation fl := (round radix2 (FLX_exp p) (Znearest choice)).

(** The shifted mean, K = x_j, either division. *)
Definition shifted_mean d x it j muh :=
  let Sh := rounded_sum fl (on (fun i => fl (x i - x j)) it) in
  muh = fl (x j + fl (Sh / INR d)) \/ muh = fl (x j + fl (Sh * fl (1 / INR d))).

(** e_shift as `RowBound::with_welford` computes it (general case), Δ = largest. *)
Definition shift_error d x largest :=
  let dl i := Rabs (delta OpLayerNorm d x i) in
  let sum_abs := sum d dl + INR d * largest in
  let weights := shifted_weight (INR d) in
  let t := T (map dl (seq 0 d)) + weights * largest in
  let s := u * sum_abs + u * growth p d * (1 + u) * t in
  (1 + u) * ((1 + u) * (1 + u) * s / INR d + division p * largest) + u * Rabs (mean d x).

Theorem shifted_mean_stage d x it j muh largest :
  (0 < d)%nat -> row_tree d it -> (j < d)%nat ->
  (forall i, (i < d)%nat -> Rabs (delta OpLayerNorm d x i) <= largest) ->
  shifted_mean d x it j muh -> Rabs (muh - mean d x) <= shift_error d x largest.
Proof.
  intros Hd Hrow Hj HD Hmu. assert (HdR : 0 < INR d) by (apply lt_0_INR; exact Hd).
  pose proof (u_nonneg p) as Hu.
  set (K := x j). set (y i := fl (x i - K)). set (dl i := Rabs (delta OpLayerNorm d x i)).
  assert (HdK : forall i, (i < d)%nat -> Rabs (x i - K) <= dl i + largest).
  { intros i Hi. unfold K, dl. cbn [delta].
    replace (x i - x j) with ((x i - mean d x) - (x j - mean d x)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp.
    pose proof (HD j Hj). cbn [delta] in H. lra. }
  assert (Hy : forall i, (i < d)%nat -> Rabs (y i - (x i - K)) <= u * (dl i + largest)
                                     /\ Rabs (y i) <= (1 + u) * (dl i + largest)).
  { intros i Hi. unfold y. destruct (fl_rel p choice (x i - K)) as [e [He ->]].
    pose proof (HdK i Hi). pose proof (Rabs_pos (x i - K)). pose proof (Rabs_pos e).
    replace ((x i - K) * (1 + e) - (x i - K)) with ((x i - K) * e) by ring.
    rewrite !Rabs_mult. pose proof (one_plus_le p e He). pose proof (Rabs_pos (1 + e)). split; nra. }
  (* the leaves' roundings *)
  assert (Hexact : sum d (fun i => x i - K) = INR d * (mean d x - K))
    by (unfold mean; rewrite sum_minus, sum_const; field; lra).
  assert (H1 : Rabs (sum d y - INR d * (mean d x - K)) <= u * (sum d dl + INR d * largest)).
  { rewrite <- Hexact, <- sum_minus.
    replace (sum d dl + INR d * largest) with (sum d (fun i => dl i + largest))
      by (rewrite sum_plus, sum_const; ring).
    rewrite <- sum_scal_l. apply sum_abs_le. intros i Hi. apply (Hy i Hi). }
  (* the tree *)
  pose proof (sum_error_node_weight p choice (on y it)) as H2.
  rewrite (leaves_on_row d it Hrow), (exact_on_row d it Hrow), node_weight_on in H2.
  assert (H3 : iw (fun i => Rabs (y i)) it <= (1 + u) * (T (map dl (seq 0 d))
                                                + shifted_weight (INR d) * largest)).
  { eapply Rle_trans.
    - apply (iw_mono _ (fun i => (1 + u) * dl i + ((1 + u) * largest) * 1)).
      intros i Hi. pose proof (proj2 (Hy i (in_row d it Hrow i Hi))). lra.
    - rewrite iw_lin.
      pose proof (node_weight_le_T (on (fun i => delta OpLayerNorm d x i) it)) as Hw.
      rewrite node_weight_on, (T_on_row d it Hrow) in Hw. fold dl in Hw.
      pose proof (iw_one it) as H1'. rewrite (Permutation_length Hrow), seq_length in H1'.
      assert (0 <= largest) by (pose proof (HD 0%nat Hd); pose proof (Rabs_pos (delta OpLayerNorm d x 0)); lra).
      assert ((1 + u) * largest * iw (fun _ => 1) it
              <= (1 + u) * largest * shifted_weight (INR d))
        by (apply Rmult_le_compat_l; [nra|exact H1']).
      assert ((1 + u) * iw dl it <= (1 + u) * T (map dl (seq 0 d))) by (apply Rmult_le_compat_l; lra).
      lra. }
  set (Sh := rounded_sum fl (on y it)) in *.
  assert (HS : Rabs (Sh - INR d * (mean d x - K))
               <= u * (sum d dl + INR d * largest)
                  + u * growth p d * (1 + u) * (T (map dl (seq 0 d)) + shifted_weight (INR d) * largest)).
  { replace (Sh - INR d * (mean d x - K)) with ((Sh - sum d y) + (sum d y - INR d * (mean d x - K))) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    assert (0 <= u * (1 + u) ^ (d - 1)) by (apply Rmult_le_pos; [lra|apply pow_le; lra]).
    assert (u * (1 + u) ^ (d - 1) * iw (fun i => Rabs (y i)) it
            <= u * (1 + u) ^ (d - 1) * ((1 + u) * (T (map dl (seq 0 d)) + shifted_weight (INR d) * largest)))
      by (apply Rmult_le_compat_l; assumption).
    unfold growth. lra. }
  set (E' := u * (sum d dl + INR d * largest)
             + u * growth p d * (1 + u) * (T (map dl (seq 0 d)) + shifted_weight (INR d) * largest)) in *.
  destruct (mean_division p choice _ _ _ _ HdR HS) as [M1 M2].
  replace (INR d * (mean d x - K) / INR d) with (mean d x - K) in M1, M2 by (field; lra).
  assert (HK : Rabs (mean d x - K) <= largest).
  { pose proof (HD j Hj) as H. cbn [delta] in H. unfold K. rewrite <- Rabs_Ropp.
    replace (- (mean d x - x j)) with (x j - mean d x) by ring. exact H. }
  assert (Hdiv : (2 * u + u * u) * Rabs (mean d x - K) <= division p * largest)
    by (unfold division; apply Rmult_le_compat_l; [nra|exact HK]).
  (* the final addition of K *)
  assert (Fin : forall m', Rabs (m' - (mean d x - K)) <= (1 + u) ^ 2 * E' / INR d + (2 * u + u * u) * Rabs (mean d x - K) ->
            Rabs (fl (K + m') - mean d x) <= shift_error d x largest).
  { intros m' Hm. destruct (fl_rel p choice (K + m')) as [e [He ->]].
    replace ((K + m') * (1 + e) - mean d x) with ((m' - (mean d x - K)) * (1 + e) + mean d x * e) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
    pose proof (one_plus_le p e He). pose proof (Rabs_pos (m' - (mean d x - K))). pose proof (Rabs_pos (mean d x)).
    assert (Rabs (m' - (mean d x - K)) * Rabs (1 + e) <= ((1 + u) ^ 2 * E' / INR d + division p * largest) * (1 + u))
      by (apply Rmult_le_compat; try apply Rabs_pos; lra).
    assert (Rabs (mean d x) * Rabs e <= Rabs (mean d x) * u) by (apply Rmult_le_compat_l; assumption).
    unfold shift_error. cbv zeta. fold dl. fold E'.
    replace ((1 + u) * (1 + u) * E' / INR d) with ((1 + u) ^ 2 * E' / INR d) by (field; lra).
    lra. }
  unfold shifted_mean in Hmu. fold K in Hmu. fold y in Hmu. fold Sh in Hmu.
  destruct Hmu as [->| ->]; apply Fin; assumption.
Qed.

(** The end-to-end theorem for the two-pass LayerNorm with a shifted mean: [formula] for every
    two_pass_error, mean_error ≥ shift_error (e₂, e_μ) and e_v ≥ two_pass_variance_error. *)
Theorem shifted_layer_norm inside d x gamma beta eps it1 it2 j muh sq vh largest two_pass_error
    mean_error e_v :
  (0 < d)%nat -> 0 <= eps -> row_tree d it1 -> row_tree d it2 -> (j < d)%nat ->
  (forall i, (i < d)%nat -> Rabs (delta OpLayerNorm d x i) <= largest) ->
  shifted_mean d x it1 j muh ->
  (forall i, (i < d)%nat -> square_leaf p choice (fl (x i - muh)) (sq i)) ->
  divided p choice (rounded_sum fl (on sq it2)) (INR d) vh ->
  shift_error d x largest <= two_pass_error -> shift_error d x largest <= mean_error ->
  two_pass_variance_error p OpLayerNorm d x two_pass_error <= e_v ->
  0 < scale OpLayerNorm inside d x eps -> relative_scale p OpLayerNorm inside d x eps e_v < 1 ->
  forall i yh, (i < d)%nat ->
  output_of p choice (fl (x i - muh)) (fl (1 / computed_scale p choice inside vh eps)) (gamma i) (beta i) yh ->
  Rabs (yh - exact_output OpLayerNorm inside d x eps gamma beta i)
  <= formula p OpLayerNorm inside d x eps mean_error e_v gamma beta i.
Proof.
  intros Hd Heps Hr1 Hr2 Hj HD Hmu Hsq Hvh He2 Hemu.
  pose proof (shifted_mean_stage d x it1 j muh largest Hd Hr1 Hj HD Hmu) as Hmean.
  apply (layer_norm_from_mean p choice inside d x gamma beta eps it2 muh sq vh); (assumption || lra).
Qed.

Lemma on_ext f g it : (forall i, In i (indices it) -> f i = g i) -> on f it = on g it.
Proof.
  induction it as [i|l IHl r IHr]; simpl; intros H; [rewrite H; [reflexivity|left; reflexivity]|].
  rewrite IHl, IHr; [reflexivity| |]; intros i Hi; apply H, in_or_app; tauto.
Qed.

Lemma rounded_sum_zeros it : rounded_sum fl (on (fun _ => 0) it) = 0.
Proof.
  induction it as [i|l IHl r IHr]; simpl; [reflexivity|].
  rewrite IHl, IHr, Rplus_0_r. apply round_0, valid_rnd_N.
Qed.

(** Item 2b on a constant row whose value is a float: every difference is 0 and μ̂ = K = μ,
    so the judge's e_shift = 0 there. *)
Theorem shifted_mean_constant d x it j muh :
  (0 < d)%nat -> row_tree d it -> (forall i, (i < d)%nat -> x i = x j) ->
  generic_format radix2 (FLX_exp p) (x j) -> shifted_mean d x it j muh -> muh = mean d x.
Proof.
  intros Hd Hrow Hc Hf Hmu. assert (HdR : 0 < INR d) by (apply lt_0_INR; exact Hd).
  assert (Hm : mean d x = x j).
  { unfold mean. rewrite (sum_ext d x (fun _ => x j)) by exact Hc. rewrite sum_const. field. lra. }
  unfold shifted_mean in Hmu.
  rewrite (on_ext _ (fun _ => 0)), rounded_sum_zeros in Hmu.
  2: { intros i Hi. rewrite (Hc i (in_row d it Hrow i Hi)), Rminus_diag_eq by reflexivity.
       apply round_0, valid_rnd_N. }
  assert (Z : forall y, fl (0 * y) = 0) by (intros; rewrite Rmult_0_l; apply round_0, valid_rnd_N).
  unfold Rdiv in Hmu. rewrite Hm.
  destruct Hmu as [->| ->]; rewrite Z, Rplus_0_r; apply round_generic; [apply valid_rnd_N|exact Hf|apply valid_rnd_N|exact Hf].
Qed.

(** e_shift where the shifted sums are exact, as the judge computes it: (1+u)(2u+u²)Δ + u|μ|. *)
Definition shift_exact_error d x largest := (1 + u) * division p * largest + u * Rabs (mean d x).

Lemma term_le_sum' n f i : (forall j, (j < n)%nat -> 0 <= f j) -> (i < n)%nat -> f i <= sum n f.
Proof.
  induction n as [|n IH]; intros H Hi; [lia|]. simpl. destruct (Nat.eq_dec i n) as [->|Hn].
  - assert (0 <= sum n f) by (apply sum_nonneg; intros; apply H; lia). lra.
  - assert (f i <= sum n f) by (apply IH; [intros; apply H; lia|lia]).
    assert (0 <= f n) by (apply H; lia). lra.
Qed.

(** Item 2b where the row lies on a grid 2^e with Σ|x| + d·max|x| ≤ 2^(p − grid_headroom_bits + e): every difference
    and partial sum is exact, S' = d(μ − K), and |μ̂ − μ| ≤ shift_exact_error. *)
Theorem shifted_mean_exact d x it j muh largest xmax e :
  (0 < d)%nat -> row_tree d it -> (j < d)%nat ->
  (forall i, (i < d)%nat -> Rabs (delta OpLayerNorm d x i) <= largest) ->
  (forall i, (i < d)%nat -> Rabs (x i) <= xmax) ->
  (forall i, (i < d)%nat -> exists m : Z, x i = IZR m * bpow radix2 e) ->
  sum d (fun i => Rabs (x i)) + INR d * xmax <= bpow radix2 (p - grid_headroom_bits + e) ->
  shifted_mean d x it j muh -> Rabs (muh - mean d x) <= shift_exact_error d x largest.
Proof.
  intros Hd Hrow Hj HD Hx Hg Hs Hmu. assert (HdR : 0 < INR d) by (apply lt_0_INR; exact Hd).
  assert (Hs' : sum d (fun i => Rabs (x i)) + INR d * xmax <= bpow radix2 (p + e))
    by (eapply Rle_trans; [exact Hs|]; apply bpow_le; unfold grid_headroom_bits; lia).
  pose proof (u_nonneg p) as Hu. set (K := x j).
  assert (Hxm : 0 <= xmax) by (pose proof (Hx j Hj); pose proof (Rabs_pos (x j)); lra).
  assert (HdX : xmax <= INR d * xmax).
  { assert (1 <= INR d) by (apply (le_INR 1); lia). nra. }
  assert (Hsum0 : forall i, (i < d)%nat -> Rabs (x i) <= sum d (fun i => Rabs (x i)))
    by (intros i Hi; apply (term_le_sum' d (fun i => Rabs (x i))); [intros; apply Rabs_pos|exact Hi]).
  destruct (Hg j Hj) as [mj Ej].
  assert (Hgd : forall i, (i < d)%nat -> exists m : Z, x i - K = IZR m * bpow radix2 e).
  { intros i Hi. destruct (Hg i Hi) as [mi Ei]. exists (mi - mj)%Z. unfold K.
    rewrite Ei, Ej, minus_IZR. ring. }
  assert (HdK : forall i, (i < d)%nat -> Rabs (x i - K) <= Rabs (x i) + xmax).
  { intros i Hi. unfold Rminus. eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp.
    pose proof (Hx j Hj). unfold K. lra. }
  (* the differences are exact *)
  assert (Hdiff : forall i, (i < d)%nat -> fl (x i - K) = x i - K).
  { intros i Hi. destruct (Hgd i Hi) as [m Em]. rewrite Em.
    apply round_generic; [apply valid_rnd_N|]. apply (generic_format_FLX_FLT radix2 e).
    apply (grid_format p e m e (Z.le_refl e)). rewrite <- Em.
    pose proof (HdK i Hi). pose proof (Hsum0 i Hi). lra. }
  (* and so is their sum *)
  assert (HS : rounded_sum fl (on (fun i => fl (x i - K)) it) = INR d * (mean d x - K)).
  { rewrite (on_ext _ (fun i => x i - K)) by (intros i Hi; apply Hdiff, (in_row d it Hrow), Hi).
    rewrite (sum_exact_FLX p choice e).
    - rewrite (exact_on_row d it Hrow). unfold mean. rewrite sum_minus, sum_const. field. lra.
    - apply (on_grid_on_row p choice d); assumption.
    - rewrite (abs_sum_on_row d it _ Hrow). eapply Rle_trans; [|exact Hs].
      eapply Rle_trans; [apply (sum_le _ _ (fun i => Rabs (x i) + xmax)); exact HdK|].
      rewrite sum_plus, sum_const. lra. }
  assert (HK : Rabs (mean d x - K) <= largest).
  { pose proof (HD j Hj) as H. cbn [delta] in H. unfold K. rewrite <- Rabs_Ropp.
    replace (- (mean d x - x j)) with (x j - mean d x) by ring. exact H. }
  assert (Hz : Rabs (INR d * (mean d x - K) - INR d * (mean d x - K)) <= 0)
    by (rewrite Rminus_diag_eq, Rabs_R0 by reflexivity; lra).
  destruct (mean_division p choice _ _ _ _ HdR Hz) as [M1 M2].
  replace (INR d * (mean d x - K) / INR d) with (mean d x - K) in M1, M2 by (field; lra).
  assert (Hdiv : (1 + u) ^ 2 * 0 / INR d + (2 * u + u * u) * Rabs (mean d x - K) <= division p * largest).
  { unfold division. replace ((1 + u) ^ 2 * 0 / INR d) with 0 by (field; lra).
    assert ((2 * u + u * u) * Rabs (mean d x - K) <= (2 * u + u * u) * largest)
      by (apply Rmult_le_compat_l; [nra|exact HK]). lra. }
  assert (Fin : forall m', Rabs (m' - (mean d x - K)) <= division p * largest ->
            Rabs (fl (K + m') - mean d x) <= shift_exact_error d x largest).
  { intros m' Hm. destruct (fl_rel p choice (K + m')) as [e' [He ->]].
    replace ((K + m') * (1 + e') - mean d x) with ((m' - (mean d x - K)) * (1 + e') + mean d x * e') by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
    pose proof (one_plus_le p e' He). pose proof (Rabs_pos (m' - (mean d x - K))). pose proof (Rabs_pos (mean d x)).
    assert (Rabs (m' - (mean d x - K)) * Rabs (1 + e') <= division p * largest * (1 + u))
      by (apply Rmult_le_compat; try apply Rabs_pos; lra).
    assert (Rabs (mean d x) * Rabs e' <= Rabs (mean d x) * u) by (apply Rmult_le_compat_l; assumption).
    unfold shift_exact_error. lra. }
  unfold shifted_mean in Hmu. fold K in Hmu. rewrite HS in Hmu.
  replace (INR d * (mean d x - K) / INR d) with (mean d x - K) in Hmu by (field; lra).
  destruct Hmu as [->| ->]; apply Fin; lra.
Qed.

End Shifted.
