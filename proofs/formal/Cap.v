(** Item 9 of crates/oracle/src/judge/tolerance.rs, the cap, for the two-pass kernels of the model (LayerNorm
    and RMSNorm): whatever the row, |δ̂_i·r̂| ≤ two_pass_cap = √d·(1−u)^-(d+c)/2, c =
    cap_exponent_offset (Constants.v), so every output
    is within c₃|γ_i|(two_pass_cap + |z_i|) + u|β_i| of y_i — the bound that stays finite where
    ρ is not. Rounding to nearest without underflow or overflow (FLX). *)
From Coq Require Import Reals Lra Lia ZArith List Permutation.
From Flocq Require Import Core Relative.
From Normoracle Require Import Constants Summation Weight Scale Sums LayerNorm.
Open Scope R_scope.

Fixpoint nonneg_leaves t := match t with Leaf x => 0 <= x | Node l r => nonneg_leaves l /\ nonneg_leaves r end.

Lemma nonneg_on d it f : row_tree d it -> (forall i, (i < d)%nat -> 0 <= f i) -> nonneg_leaves (on f it).
Proof.
  intros Hrow H. assert (G : forall i, In i (indices it) -> 0 <= f i)
    by (intros i Hi; apply H, (in_row d it Hrow), Hi).
  clear H Hrow. induction it as [i|l IHl r IHr]; simpl.
  - apply G. left. reflexivity.
  - split; [apply IHl|apply IHr]; intros i Hi; apply G; simpl; apply in_or_app; tauto.
Qed.

Lemma term_le_sum n f i : (forall j, (j < n)%nat -> 0 <= f j) -> (i < n)%nat -> f i <= sum n f.
Proof.
  induction n as [|n IH]; intros H Hi; [lia|]. simpl. destruct (Nat.eq_dec i n) as [->|Hn].
  - assert (0 <= sum n f) by (apply sum_nonneg; intros; apply H; lia). lra.
  - assert (f i <= sum n f) by (apply IH; [intros; apply H; lia|lia]).
    assert (0 <= f n) by (apply H; lia). lra.
Qed.

Lemma pow_antimono x n m : 0 <= x <= 1 -> (n <= m)%nat -> x ^ m <= x ^ n.
Proof.
  intros Hx H. induction H as [|m H IH]; [lra|]. simpl.
  assert (0 <= x ^ m) by (apply pow_le; lra). nra.
Qed.

Section Cap.
Variable p : Z.
Context { prec_gt_0_ : Prec_gt_0 p }.
Variable choice : Z -> bool.
Notation u := (u p).
Notation fl := (round radix2 (FLX_exp p) (Znearest choice)).

Lemma fl_bounds y : 0 <= y -> (1 - u) * y <= fl y /\ fl y <= (1 + u) * y.
Proof.
  intros Hy. destruct (fl_rel p choice y) as [e [He ->]]. apply Rabs_le_inv in He. split; nra.
Qed.

(** A tree of nonnegative leaves loses at most a factor (1−u)^(n−1). *)
Lemma rounded_sum_lower t : nonneg_leaves t ->
  0 <= exact_sum t /\ (1 - u) ^ (leaves t - 1) * exact_sum t <= rounded_sum fl t.
Proof.
  pose proof (u_nonneg p) as Hu. pose proof (u_le_half p) as Hu2.
  induction t as [y|l IHl r IHr]; simpl.
  - intros H. split; [exact H|]. lra.
  - intros [Hl Hr]. destruct (IHl Hl) as [El Bl]. destruct (IHr Hr) as [Er Br].
    pose proof (leaves_pos l). pose proof (leaves_pos r).
    set (a := rounded_sum fl l) in *. set (b := rounded_sum fl r) in *.
    assert (Pl : 0 <= (1 - u) ^ (leaves l - 1)) by (apply pow_le; lra).
    assert (Pr : 0 <= (1 - u) ^ (leaves r - 1)) by (apply pow_le; lra).
    assert (0 <= a) by nra. assert (0 <= b) by nra.
    destruct (fl_bounds (a + b) ltac:(lra)) as [Lo _].
    assert (Gl : (1 - u) ^ (leaves l + leaves r - 1) <= (1 - u) * (1 - u) ^ (leaves l - 1)).
    { rewrite tech_pow_Rmult. apply pow_antimono; [lra|lia]. }
    assert (Gr : (1 - u) ^ (leaves l + leaves r - 1) <= (1 - u) * (1 - u) ^ (leaves r - 1)).
    { rewrite tech_pow_Rmult. apply pow_antimono; [lra|lia]. }
    split; [lra|].
    set (G := (1 - u) ^ (leaves l + leaves r - 1)) in *.
    assert (G * exact_sum l <= (1 - u) * (1 - u) ^ (leaves l - 1) * exact_sum l)
      by (apply Rmult_le_compat_r; lra).
    assert (G * exact_sum r <= (1 - u) * (1 - u) ^ (leaves r - 1) * exact_sum r)
      by (apply Rmult_le_compat_r; lra).
    assert ((1 - u) * ((1 - u) ^ (leaves l - 1) * exact_sum l) <= (1 - u) * a)
      by (apply Rmult_le_compat_l; lra).
    assert ((1 - u) * ((1 - u) ^ (leaves r - 1) * exact_sum r) <= (1 - u) * b)
      by (apply Rmult_le_compat_l; lra).
    lra.
Qed.

(** two_pass_cap of tolerance.rs: √d·(1−u)^-(d + cap_exponent_offset)/2. *)
Definition two_pass_cap (d : nat) := sqrt (INR d) / sqrt ((1 - u) ^ (d + cap_exponent_offset)).

(** Item 9: for every row, any centred values δ̂ (fl(x − μ̂) or x itself), their squares rounded
    or fused and summed by any tree, either division, ε ≥ 0 inside or outside:
    |δ̂_i·r̂| ≤ two_pass_cap. *)
Theorem cap_bound inside d dh it sq vh eps i :
  (0 < d)%nat -> 0 <= eps -> row_tree d it ->
  (forall j, (j < d)%nat -> square_leaf p choice (dh j) (sq j)) ->
  divided p choice (rounded_sum fl (on sq it)) (INR d) vh -> (i < d)%nat ->
  Rabs (dh i * fl (1 / computed_scale p choice inside vh eps)) <= two_pass_cap d.
Proof.
  intros Hd Heps Hrow Hsq Hvh Hi. assert (HdR : 0 < INR d) by (apply lt_0_INR; exact Hd).
  pose proof (u_nonneg p) as Hu. pose proof (u_le_half p) as Hu2.
  assert (Hpow : forall n, 0 < (1 - u) ^ n) by (intros; apply pow_lt; lra).
  assert (Hcap : 0 <= two_pass_cap d).
  { unfold two_pass_cap, Rdiv. apply Rmult_le_pos; [apply sqrt_pos|].
    apply Rlt_le, Rinv_0_lt_compat, sqrt_lt_R0, Hpow. }
  destruct (Req_dec (dh i) 0) as [Z|NZ]; [rewrite Z, Rmult_0_l, Rabs_R0; exact Hcap|].
  set (SS := sum d (fun j => dh j * dh j)).
  assert (Hsq0 : forall j, 0 <= dh j * dh j) by (intros j; pose proof (Rle_0_sqr (dh j)) as H; exact H).
  assert (HiS : dh i * dh i <= SS)
    by (apply (term_le_sum d (fun j => dh j * dh j)); [intros; apply Hsq0|exact Hi]).
  assert (HS : 0 < SS) by (pose proof (Rle_0_sqr (dh i)); assert (dh i * dh i <> 0) by (intro E; apply Rmult_integral in E; tauto); unfold Rsqr in *; lra).
  (* the squares *)
  assert (Hleaf : forall j, (j < d)%nat -> 0 <= sq j /\ (1 - u) * (dh j * dh j) <= sq j).
  { intros j Hj. destruct (Hsq j Hj) as [->| ->].
    - destruct (fl_bounds (dh j * dh j) (Hsq0 j)) as [L _]. pose proof (Hsq0 j).
      split; [|exact L]. nra.
    - pose proof (Hsq0 j). split; nra. }
  destruct (rounded_sum_lower (on sq it) (nonneg_on d it sq Hrow (fun j Hj => proj1 (Hleaf j Hj))))
    as [HQ0 HQ].
  rewrite (leaves_on_row d it Hrow) in HQ. rewrite (exact_on_row d it Hrow) in HQ, HQ0.
  set (Q := rounded_sum fl (on sq it)) in *.
  assert (HsumS : (1 - u) * SS <= sum d sq).
  { unfold SS. rewrite <- sum_scal_l. apply sum_le. intros j Hj. apply Hleaf, Hj. }
  assert (HQS : (1 - u) ^ d * SS <= Q).
  { replace d with (S (d - 1)) at 1 by lia. simpl. pose proof (Hpow (d - 1)%nat).
    assert ((1 - u) ^ (d - 1) * ((1 - u) * SS) <= (1 - u) ^ (d - 1) * sum d sq)
      by (apply Rmult_le_compat_l; lra). lra. }
  assert (HQpos : 0 <= Q).
  { assert (0 <= (1 - u) ^ d * SS) by (apply Rmult_le_pos; [apply Rlt_le, Hpow|lra]). lra. }
  (* the division *)
  assert (Hv : (1 - u) * (1 - u) * Q / INR d <= vh).
  { assert (0 <= Q / INR d) by (apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]).
    destruct Hvh as [->| ->].
    - destruct (fl_bounds (Q / INR d)) as [L _]; [assumption|].
      assert ((1 - u) * (1 - u) * Q / INR d = (1 - u) * ((1 - u) * (Q / INR d))) by (field; lra).
      assert ((1 - u) * (Q / INR d) <= Q / INR d) by nra. nra.
    - assert (Hd1 : 0 <= 1 / INR d) by (apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]).
      destruct (fl_bounds (1 / INR d) Hd1) as [L1 _].
      assert (Hf1 : 0 <= fl (1 / INR d)) by nra.
      destruct (fl_bounds (Q * fl (1 / INR d))) as [L2 _]; [nra|].
      assert (Q * ((1 - u) * (1 / INR d)) <= Q * fl (1 / INR d)) by (apply Rmult_le_compat_l; lra).
      assert ((1 - u) * (1 - u) * Q / INR d = (1 - u) * (Q * ((1 - u) * (1 / INR d)))) by (field; lra).
      nra. }
  assert (Hv0 : 0 <= vh).
  { assert (0 <= (1 - u) * (1 - u) * Q / INR d); [|lra].
    apply Rmult_le_pos; [apply Rmult_le_pos; [nra|lra]|apply Rlt_le, Rinv_0_lt_compat; lra]. }
  (* the scale: ŝ² ≥ (1−u)⁴·v̂ *)
  set (sh := computed_scale p choice inside vh eps).
  assert (Hs : 0 <= sh /\ (1 - u) ^ 4 * vh <= sh * sh).
  { unfold sh, computed_scale. destruct inside.
    - destruct (fl_bounds (vh + eps)) as [Lw _]; [lra|].
      set (w := fl (vh + eps)) in *. assert (Hw : (1 - u) * vh <= w) by nra.
      assert (0 <= w) by nra.
      destruct (fl_bounds (sqrt w) (sqrt_pos w)) as [Ls _]. pose proof (sqrt_pos w).
      assert (Sw : sqrt w * sqrt w = w) by (apply sqrt_sqrt; lra).
      split; [nra|].
      assert ((1 - u) * sqrt w * ((1 - u) * sqrt w) <= fl (sqrt w) * fl (sqrt w))
        by (apply Rmult_le_compat; nra).
      assert ((1 - u) ^ 4 * vh <= (1 - u) * (1 - u) * ((1 - u) * vh)).
      { simpl. rewrite Rmult_1_r. assert (0 <= (1 - u) * (1 - u) * ((1 - u) * vh)) by (apply Rmult_le_pos; nra).
        assert ((1 - u) * ((1 - u) * (1 - u) * ((1 - u) * vh)) <= (1 - u) * (1 - u) * ((1 - u) * vh)) by nra.
        nra. }
      nra.
    - destruct (fl_bounds (sqrt vh) (sqrt_pos vh)) as [L1 _]. pose proof (sqrt_pos vh).
      assert (Sv : sqrt vh * sqrt vh = vh) by (apply sqrt_sqrt; lra).
      set (r := fl (sqrt vh)) in *. assert (0 <= r) by nra.
      destruct (fl_bounds (r + eps)) as [L2 _]; [lra|].
      assert (Hl : (1 - u) * (1 - u) * sqrt vh <= fl (r + eps)) by nra.
      assert (0 <= (1 - u) * (1 - u) * sqrt vh) by (apply Rmult_le_pos; nra).
      split; [lra|].
      assert ((1 - u) * (1 - u) * sqrt vh * ((1 - u) * (1 - u) * sqrt vh) <= fl (r + eps) * fl (r + eps))
        by (apply Rmult_le_compat; lra).
      assert (E : (1 - u) ^ 4 * vh = (1 - u) * (1 - u) * sqrt vh * ((1 - u) * (1 - u) * sqrt vh))
        by (rewrite <- Sv at 1; ring).
      lra. }
  destruct Hs as [Hs0 Hs2].
  (* ŝ > 0 and d·ŝ² ≥ (1−u)^(d+6)·SS *)
  assert (HK : (1 - u) ^ (d + 6) * SS <= INR d * (sh * sh)).
  { rewrite pow_add. replace ((1 - u) ^ 6) with ((1 - u) ^ 4 * ((1 - u) * (1 - u))) by ring.
    assert (A : (1 - u) ^ d * SS * ((1 - u) * (1 - u)) <= Q * ((1 - u) * (1 - u)))
      by (apply Rmult_le_compat_r; nra).
    assert (B : Q * ((1 - u) * (1 - u)) <= INR d * vh).
    { apply Rmult_le_reg_r with (/ INR d); [apply Rinv_0_lt_compat; lra|].
      replace (INR d * vh * / INR d) with vh by (field; lra).
      replace (Q * ((1 - u) * (1 - u)) * / INR d) with ((1 - u) * (1 - u) * Q / INR d) by (field; lra).
      exact Hv. }
    assert (C : (1 - u) ^ 4 * (INR d * vh) <= INR d * (sh * sh)).
    { replace ((1 - u) ^ 4 * (INR d * vh)) with (INR d * ((1 - u) ^ 4 * vh)) by ring.
      apply Rmult_le_compat_l; lra. }
    pose proof (Hpow 4%nat).
    assert ((1 - u) ^ 4 * ((1 - u) ^ d * SS * ((1 - u) * (1 - u))) <= (1 - u) ^ 4 * (INR d * vh))
      by (apply Rmult_le_compat_l; lra).
    replace ((1 - u) ^ d * ((1 - u) ^ 4 * ((1 - u) * (1 - u))) * SS)
      with ((1 - u) ^ 4 * ((1 - u) ^ d * SS * ((1 - u) * (1 - u)))) by ring.
    lra. }
  assert (Hsh : 0 < sh).
  { destruct (Rle_lt_or_eq_dec 0 sh Hs0) as [H|H]; [exact H|].
    rewrite <- H in HK. pose proof (Hpow (d + 6)%nat). nra. }
  (* the reciprocal: 0 ≤ r̂·ŝ ≤ 1 + u *)
  set (rh := fl (1 / sh)).
  assert (Hr : 0 <= rh * sh <= 1 + u).
  { assert (H1 : 0 <= 1 / sh) by (apply Rmult_le_pos; [lra|apply Rlt_le, Rinv_0_lt_compat; lra]).
    destruct (fl_bounds (1 / sh) H1) as [L U]. fold rh in L, U.
    assert (1 / sh * sh = 1) by (field; lra). split; nra. }
  (* |δ̂_i r̂|²·(1−u)^(d + cap_exponent_offset) ≤ d: the offset is 6 + 4 *)
  assert (Hsq2 : (dh i * rh) * (dh i * rh) * (1 - u) ^ (d + cap_exponent_offset) <= INR d).
  { replace (d + cap_exponent_offset)%nat with ((d + 6) + 4)%nat by (unfold cap_exponent_offset; lia). rewrite pow_add.
    set (K := (1 - u) ^ (d + 6)) in *. pose proof (Hpow (d + 6)%nat) as HK0. fold K in HK0.
    pose proof (Hpow 4%nat).
    assert (rh * rh * (dh i * dh i) <= rh * rh * SS) by (apply Rmult_le_compat_l; nra).
    assert (rh * rh * (K * SS) <= rh * rh * (INR d * (sh * sh))) by (apply Rmult_le_compat_l; nra).
    assert (E1 : rh * rh * (INR d * (sh * sh)) = INR d * ((rh * sh) * (rh * sh))) by ring.
    assert ((rh * sh) * (rh * sh) <= (1 + u) * (1 + u)) by (apply Rmult_le_compat; lra).
    assert (INR d * ((rh * sh) * (rh * sh)) <= INR d * ((1 + u) * (1 + u))) by (apply Rmult_le_compat_l; lra).
    assert (Hu4 : (1 + u) * (1 + u) * (1 - u) ^ 4 <= 1).
    { simpl. rewrite Rmult_1_r.
      assert (0 <= (1 - u) * (1 - u)) by nra.
      assert ((1 + u) * (1 - u) <= 1) by nra.
      assert (0 <= (1 + u) * (1 - u)) by nra. nra. }
    assert (INR d * ((1 + u) * (1 + u)) * (1 - u) ^ 4 <= INR d)
      by (replace (INR d) with (INR d * 1) at 2 by ring;
          rewrite Rmult_assoc; apply Rmult_le_compat_l; lra).
    assert (dh i * rh * (dh i * rh) * (K * (1 - u) ^ 4)
            = (rh * rh * (dh i * dh i)) * K * (1 - u) ^ 4) by ring.
    assert (rh * rh * (dh i * dh i) * K <= rh * rh * SS * K) by (apply Rmult_le_compat_r; lra).
    assert (rh * rh * SS * K * (1 - u) ^ 4 <= INR d * ((1 + u) * (1 + u)) * (1 - u) ^ 4).
    { apply Rmult_le_compat_r; [lra|]. replace (rh * rh * SS * K) with (rh * rh * (K * SS)) by ring. lra. }
    assert (rh * rh * (dh i * dh i) * K * (1 - u) ^ 4 <= rh * rh * SS * K * (1 - u) ^ 4)
      by (apply Rmult_le_compat_r; lra).
    lra. }
  unfold two_pass_cap. pose proof (Hpow (d + cap_exponent_offset)%nat) as HP.
  rewrite <- sqrt_div_alt by exact HP.
  rewrite <- (sqrt_Rsqr (Rabs (dh i * rh))) by apply Rabs_pos.
  apply sqrt_le_1_alt. rewrite <- Rsqr_abs. unfold Rsqr.
  apply Rmult_le_reg_r with ((1 - u) ^ (d + cap_exponent_offset)); [exact HP|].
  replace (INR d / (1 - u) ^ (d + cap_exponent_offset) * (1 - u) ^ (d + cap_exponent_offset)) with (INR d) by (field; lra).
  exact Hsq2.
Qed.

(** The capped bound: every output form is within c₃|γ|(two_pass_cap + |z|) + u|β| of
    γz + β, for any z (the judge's `capped`, two-pass part of Z_i). *)
Theorem capped_output inside d dh it sq vh eps i g b z yh :
  (0 < d)%nat -> 0 <= eps -> row_tree d it ->
  (forall j, (j < d)%nat -> square_leaf p choice (dh j) (sq j)) ->
  divided p choice (rounded_sum fl (on sq it)) (INR d) vh -> (i < d)%nat ->
  output_of p choice (dh i) (fl (1 / computed_scale p choice inside vh eps)) g b yh ->
  Rabs (yh - (g * z + b)) <= c3 p * Rabs g * (two_pass_cap d + Rabs z) + u * Rabs b.
Proof.
  intros Hd Heps Hrow Hsq Hvh Hi Hout.
  pose proof (cap_bound inside d dh it sq vh eps i Hd Heps Hrow Hsq Hvh Hi) as Hc.
  destruct (output_forms p choice _ _ _ _ _ Hout) as [p0 [p1 [p2 [H0 [H1 [H2 ->]]]]]].
  set (a := dh i * fl (1 / computed_scale p choice inside vh eps)) in *.
  pose proof (u_nonneg p) as Hu.
  pose proof (one_plus_le p p0 H0). pose proof (one_plus_le p p1 H1). pose proof (one_plus_le p p2 H2).
  assert (Hc3 : Rabs ((1 + p0) * (1 + p1) * (1 + p2)) <= c3 p).
  { unfold c3, output_roundings. rewrite !Rabs_mult.
    assert (Rabs (1 + p0) * Rabs (1 + p1) <= (1 + u) * (1 + u))
      by (apply Rmult_le_compat; (apply Rabs_pos || assumption)).
    replace ((1 + u) ^ 3) with ((1 + u) * (1 + u) * (1 + u)) by ring.
    apply Rmult_le_compat; try assumption; [apply Rmult_le_pos|]; apply Rabs_pos. }
  assert (Hc1 : 1 <= c3 p) by (unfold c3, output_roundings; apply pow_R1_Rle; lra).
  replace ((g * a * (1 + p0) * (1 + p1) + b) * (1 + p2) - (g * z + b))
    with (g * (a * ((1 + p0) * (1 + p1) * (1 + p2))) - g * z + b * p2) by ring.
  set (c := (1 + p0) * (1 + p1) * (1 + p2)) in *.
  eapply Rle_trans; [apply Rabs_triang|].
  eapply Rle_trans; [apply Rplus_le_compat_r; unfold Rminus; apply Rabs_triang|].
  rewrite Rabs_Ropp, !Rabs_mult.
  pose proof (Rabs_pos g). pose proof (Rabs_pos a). pose proof (Rabs_pos z). pose proof (Rabs_pos b).
  assert (Rabs a * Rabs c <= two_pass_cap d * c3 p)
    by (apply Rmult_le_compat; (apply Rabs_pos || assumption)).
  assert (Rabs g * (Rabs a * Rabs c) <= Rabs g * (two_pass_cap d * c3 p))
    by (apply Rmult_le_compat_l; assumption).
  assert (Rabs g * Rabs z <= Rabs g * Rabs z * c3 p) by (rewrite <- (Rmult_1_r (Rabs g * Rabs z)) at 1; apply Rmult_le_compat_l; [nra|exact Hc1]).
  assert (Rabs b * Rabs p2 <= Rabs b * u) by (apply Rmult_le_compat_l; assumption).
  lra.
Qed.

End Cap.
