(** The end-to-end theorem of crates/oracle/src/judge/tolerance.rs for a two-pass LayerNorm (items 1, 2, 5,
    6, 7, 8 chained): every kernel of the documented model — any summation trees for Σx and
    Σ(x − μ̂)², squares rounded or fused, the mean and the variance by division or by the
    rounded reciprocal, ε inside or outside the root, the reciprocal of the scale, and the
    output in either order of the two products, with or without FMA — computes every element
    within the judge's B_i, less its underflow term, its cap and its evaluation margin E; and
    the same for RMSNorm (no mean). Rounding to nearest (any tie rule) without underflow or
    overflow (Flocq's FLX), u = 2^-p. The terms carry the names tolerance.rs gives them. *)
From Coq Require Import Reals Lra Lia ZArith List Permutation.
From Flocq Require Import Core Relative.
From Normoracle Require Import Constants Summation Weight Scale Variance Sums.
Import ListNotations.
Open Scope R_scope.

(** A summation tree over a row: its leaves are indices, each of 0 … d−1 once. *)
Inductive itree := ILeaf (i : nat) | INode (l r : itree).
Fixpoint indices it := match it with ILeaf i => [i] | INode l r => indices l ++ indices r end.
Fixpoint on (f : nat -> R) it : tree :=
  match it with ILeaf i => Leaf (f i) | INode l r => Node (on f l) (on f r) end.
Definition row_tree (d : nat) it := Permutation (indices it) (seq 0 d).

Lemma list_sum_app a b : list_sum (a ++ b) = list_sum a + list_sum b.
Proof. induction a as [|x a IH]; simpl; [ring|rewrite IH; ring]. Qed.

Lemma list_sum_perm a b : Permutation a b -> list_sum a = list_sum b.
Proof. induction 1; simpl; [ring|rewrite IHPermutation; ring|ring|lra]. Qed.

Lemma list_sum_seq d f : list_sum (map f (seq 0 d)) = sum d f.
Proof.
  induction d as [|d IH]; [reflexivity|].
  rewrite seq_S, map_app, list_sum_app, IH. simpl. ring.
Qed.

Lemma exact_on f it : exact_sum (on f it) = list_sum (map f (indices it)).
Proof. induction it as [i|l IHl r IHr]; simpl; [ring|rewrite IHl, IHr, map_app, list_sum_app; ring]. Qed.

Lemma mags_on f it : mags (on f it) = map (fun i => Rabs (f i)) (indices it).
Proof. induction it as [i|l IHl r IHr]; simpl; [reflexivity|rewrite IHl, IHr, map_app; reflexivity]. Qed.

Lemma leaves_on f it : leaves (on f it) = length (indices it).
Proof. induction it as [i|l IHl r IHr]; simpl; [reflexivity|rewrite app_length; lia]. Qed.

Section Row.
Variables (d : nat) (it : itree).
Hypothesis row : row_tree d it.

Lemma exact_on_row f : exact_sum (on f it) = sum d f.
Proof. rewrite exact_on, (list_sum_perm _ _ (Permutation_map f row)). apply list_sum_seq. Qed.

Lemma leaves_on_row f : leaves (on f it) = d.
Proof. rewrite leaves_on, (Permutation_length row). apply seq_length. Qed.

Lemma in_row i : In i (indices it) -> (i < d)%nat.
Proof. intros H. apply (Permutation_in _ row), in_seq in H. lia. Qed.

Lemma T_on_row f : T (mags (on f it)) = T (map (fun i => Rabs (f i)) (seq 0 d)).
Proof. rewrite mags_on. apply T_perm, Permutation_map, row. Qed.

(** Leaves bounded entry by entry by a_i give the tree term u(1+u)^(d−1)·T(a). *)
Lemma dominated_on_row (f a : nat -> R) :
  (forall i, (i < d)%nat -> Rabs (f i) <= a i) ->
  Forall2 Rle (mags (on f it)) (map a (indices it))
  /\ T (map a (indices it)) = T (map a (seq 0 d)) /\ length (map a (indices it)) = d.
Proof.
  intros H. split; [|split].
  - rewrite mags_on. assert (G : forall i, In i (indices it) -> Rabs (f i) <= a i)
      by (intros i Hi; apply H, in_row, Hi).
    clear H. induction (indices it) as [|i l IH]; simpl; constructor.
    + apply G; left; reflexivity.
    + apply IH. intros j Hj. apply G. right. exact Hj.
  - apply T_perm, Permutation_map, row.
  - rewrite map_length, (Permutation_length row). apply seq_length.
Qed.
End Row.

(** The exact statistics, as `exact::stats` names them: the operation (tolerance.rs's `Op`),
    δ_i = x_i − μ (LayerNorm) or x_i (RMSNorm), q = Σδ²/d (σ² or mean(x²)), s = √(q + ε)
    (ε inside) or √q + ε (outside), and the exact output y_i = γ_i·δ_i/s + β_i. *)
Inductive op := OpLayerNorm | OpRmsNorm.
Definition delta o d x i := match o with OpLayerNorm => x i - mean d x | OpRmsNorm => x i end.
Definition variance o d x := sum d (fun i => delta o d x i ^ 2) / INR d.
Definition scale o (inside : bool) d x eps :=
  if inside then sqrt (variance o d x + eps) else sqrt (variance o d x) + eps.
Definition exact_output o inside d x eps (gamma beta : nat -> R) i :=
  gamma i * (delta o d x i / scale o inside d x eps) + beta i.

Lemma delta_sum d x : (0 < d)%nat -> sum d (delta OpLayerNorm d x) = 0.
Proof.
  intros Hd. assert (0 < INR d) by (apply lt_0_INR; exact Hd).
  unfold delta, mean. rewrite sum_minus, sum_const. field. lra.
Qed.

Lemma variance_nonneg o d x : 0 <= variance o d x.
Proof.
  unfold variance, Rdiv. apply Rmult_le_pos.
  - apply sum_nonneg. intros. apply pow2_ge_0.
  - destruct d; [simpl; rewrite Rinv_0; lra|]. apply Rlt_le, Rinv_0_lt_compat, lt_0_INR. lia.
Qed.

Lemma sqrt_diff_root_any a b E : 0 <= b -> Rabs (a - b) <= E -> Rabs (sqrt a - sqrt b) <= sqrt E.
Proof.
  intros Hb H. destruct (Rle_or_lt 0 a) as [Ha|Ha]; [exact (sqrt_diff_root a b E Ha Hb H)|].
  rewrite (sqrt_neg_0 a) by lra. rewrite Rminus_0_l, Rabs_Ropp, Rabs_pos_eq by apply sqrt_pos.
  apply sqrt_le_1_alt. apply Rabs_le_inv in H. lra.
Qed.

Lemma sqrt_diff_quotient_any a b E : 0 < b -> Rabs (a - b) <= E -> Rabs (sqrt a - sqrt b) <= E / sqrt b.
Proof.
  intros Hb H. destruct (Rle_or_lt 0 a) as [Ha|Ha]; [exact (sqrt_diff_quotient a b E Ha Hb H)|].
  pose proof (sqrt_lt_R0 b Hb). assert (Sb : sqrt b * sqrt b = b) by (apply sqrt_sqrt; lra).
  rewrite (sqrt_neg_0 a) by lra. rewrite Rminus_0_l, Rabs_Ropp, Rabs_pos_eq by apply sqrt_pos.
  apply Rabs_le_inv in H. replace (sqrt b) with (b / sqrt b) at 1 by (field_simplify_eq; lra).
  unfold Rdiv. apply Rmult_le_compat_r; [apply Rlt_le, Rinv_0_lt_compat|]; lra.
Qed.

Section TwoPass.
Variable p : Z.
Context { prec_gt_0_ : Prec_gt_0 p }.
Variable choice : Z -> bool.
Notation u := (u p).
Notation fl := (round radix2 (FLX_exp p) (Znearest choice)).

(** The model's choices, each one of the alternatives tolerance.rs lists. *)
Definition divided a dR r := r = fl (a / dR) \/ r = fl (a * fl (1 / dR)).
Definition square_leaf a y := y = fl (a * a) \/ y = a * a.
Definition output_of dh rh g b y :=
  y = fl (fl (g * fl (dh * rh)) + b) \/ y = fl (fl (fl (g * dh) * rh) + b)
  \/ y = fl (g * fl (dh * rh) + b) \/ y = fl (fl (g * dh) * rh + b).
Definition computed_scale (inside : bool) vh eps :=
  if inside then fl (sqrt (fl (vh + eps))) else fl (fl (sqrt vh) + eps).

(** The judge's terms, as `RowBound::with_welford` and `RowBound::bound` compute them. *)
Definition growth (d : nat) := (1 + u) ^ (d - 1).
Definition division := 2 * u + u * u.
Definition c3 := (1 + u) ^ output_roundings.
Definition sum_error d x :=
  (1 + u) * (1 + u) * u * growth d * T (map (fun i => Rabs (x i)) (seq 0 d)) / INR d
  + division * Rabs (mean d x).
Definition leaf_bound o d x two_pass_error i :=
  c3 * ((Rabs (delta o d x i) + two_pass_error) * (Rabs (delta o d x i) + two_pass_error)).
Definition e_q o d x two_pass_error :=
  let dq := INR d * variance o d x in
  let de2 := INR d * two_pass_error * two_pass_error in
  division * (dq + de2) + de2 + u * (1 + u) * (1 + u) * (dq + de2)
  + u * growth d * T (map (leaf_bound o d x two_pass_error) (seq 0 d)).
Definition two_pass_variance_error o d x two_pass_error :=
  (1 + u) * (1 + u) * e_q o d x two_pass_error / INR d + division * variance o d x.
Definition root_error q e_v := if Rle_dec q 0 then sqrt e_v else Rmin (e_v / sqrt q) (sqrt e_v).
Definition relative_scale o (inside : bool) d x eps e_v :=
  let q := variance o d x in
  if inside then
    let s2 := q + eps in let tau := (e_v + u * (s2 + e_v)) / s2 in
    (1 + u) * tau / (1 + sqrt (1 - tau)) + u
  else (1 + u) * ((1 + u) * root_error q e_v + u * sqrt q) / scale o false d x eps + u.
Definition scale_error relative_scale := (1 + u) / (1 - relative_scale) - 1.
Definition formula o inside d x eps mean_error e_v (gamma beta : nat -> R) i :=
  let s := scale o inside d x eps in
  let z := Rabs (delta o d x i) / s in
  let rho := scale_error (relative_scale o inside d x eps e_v) in
  let centring := ((1 + u) * mean_error / s + u * z) * (1 + rho) + z * rho in
  c3 * Rabs (gamma i) * centring + (c3 - 1) * Rabs (gamma i) * z + u * Rabs (beta i).

(** A rounding as a function of its argument: fl(y) = y(1 + θ(y)), |θ(y)| ≤ u. *)
Definition theta y := if Req_EM_T y 0 then 0 else fl y / y - 1.

Lemma theta_spec y : Rabs (theta y) <= u /\ fl y = y * (1 + theta y).
Proof.
  unfold theta. destruct (Req_EM_T y 0) as [->|Hy].
  - rewrite Rabs_R0, round_0 by exact _. split; [apply u_nonneg|ring].
  - destruct (fl_rel p choice y) as [e [He Hfl]].
    assert (E : fl y / y - 1 = e) by (rewrite Hfl; field; exact Hy).
    rewrite E. split; assumption.
Qed.

(** Item 2, general case: |μ̂ − μ| ≤ e_sum. *)
Lemma mean_stage d x it muh :
  (0 < d)%nat -> row_tree d it -> divided (rounded_sum fl (on x it)) (INR d) muh ->
  Rabs (muh - mean d x) <= sum_error d x.
Proof.
  intros Hd Hrow Hmu. assert (HdR : 0 < INR d) by (apply lt_0_INR; exact Hd).
  pose proof (sum_error_tree_weight p choice (on x it)) as HS.
  rewrite (leaves_on_row d it Hrow), (T_on_row d it Hrow), (exact_on_row d it Hrow) in HS.
  destruct (mean_division p choice _ _ _ _ HdR HS) as [H1 H2].
  assert (E : (1 + u) ^ 2 * (u * (1 + u) ^ (d - 1) * T (map (fun i => Rabs (x i)) (seq 0 d))) / INR d
              + (2 * u + u * u) * Rabs (sum d x / INR d) = sum_error d x)
    by (unfold sum_error, growth, division, mean; field; lra).
  unfold mean. rewrite <- E. destruct Hmu as [->| ->]; assumption.
Qed.

(** Item 6's assembly: the centred squares (exact part), the squares' roundings, and the
    summation tree over leaves bounded by a_i = c₃(|δ_i| + e₂)² give |Q̂ − dq| ≤ E_Q. *)
Theorem sum_of_squares d x it muh sq e2 :
  (0 < d)%nat -> row_tree d it -> Rabs (muh - mean d x) <= e2 ->
  (forall i, (i < d)%nat -> square_leaf (fl (x i - muh)) (sq i)) ->
  Rabs (rounded_sum fl (on sq it) - INR d * variance OpLayerNorm d x) <= e_q OpLayerNorm d x e2.
Proof.
  intros Hd Hrow He2 Hsq. assert (HdR : 0 < INR d) by (apply lt_0_INR; exact Hd).
  pose proof (u_nonneg p) as Hu.
  set (D := muh - mean d x) in *.
  set (th i := theta (x i - muh)).
  set (dh i := fl (x i - muh)).
  assert (Hth : forall i, (i < d)%nat -> Rabs (th i) <= u) by (intros; apply theta_spec).
  assert (Hdh : forall i, dh i = (delta OpLayerNorm d x i - D) * (1 + th i)).
  { intros i. unfold dh, th. rewrite (proj2 (theta_spec (x i - muh))). unfold delta, D. ring. }
  assert (Hdq : sum d (fun i => delta OpLayerNorm d x i ^ 2) = INR d * variance OpLayerNorm d x)
    by (unfold variance; field; lra).
  assert (He2' : 0 <= e2) by (pose proof (Rabs_pos D); lra).
  (* each rounded square: |sq_i − dh_i²| ≤ u·dh_i² and |sq_i| ≤ (1+u)·dh_i² *)
  assert (Hleaf : forall i, (i < d)%nat ->
            Rabs (sq i - dh i * dh i) <= u * (dh i * dh i) /\ Rabs (sq i) <= (1 + u) * (dh i * dh i)).
  { intros i Hi. pose proof (Rle_0_sqr (dh i)) as H0. unfold Rsqr in H0.
    destruct (Hsq i Hi) as [Hs|Hs]; fold (dh i) in Hs; rewrite Hs.
    - destruct (fl_rel p choice (dh i * dh i)) as [e [He ->]].
      replace (dh i * dh i * (1 + e) - dh i * dh i) with (dh i * dh i * e) by ring.
      rewrite !(Rabs_mult (dh i * dh i)), (Rabs_pos_eq (dh i * dh i)) by exact H0.
      pose proof (one_plus_le p e He).
      assert (Rabs e * (dh i * dh i) <= u * (dh i * dh i)) by (apply Rmult_le_compat_r; assumption).
      assert (Rabs (1 + e) * (dh i * dh i) <= (1 + u) * (dh i * dh i))
        by (apply Rmult_le_compat_r; assumption).
      split; lra.
    - rewrite Rminus_diag_eq, Rabs_R0, Rabs_pos_eq by (reflexivity || exact H0). nra. }
  (* dh_i² ≤ (1+u)²(δ_i − D)² *)
  assert (Hdh2 : forall i, (i < d)%nat -> dh i * dh i <= (1 + u) * (1 + u) * (delta OpLayerNorm d x i - D) ^ 2).
  { intros i Hi. rewrite Hdh. pose proof (one_plus_le p _ (Hth i Hi)) as H1.
    assert (Rabs (1 + th i) * Rabs (1 + th i) <= (1 + u) * (1 + u))
      by (apply Rmult_le_compat; (apply Rabs_pos || assumption)).
    rewrite <- Rabs_mult, Rabs_pos_eq in H
      by (pose proof (Rle_0_sqr (1 + th i)) as Hq; unfold Rsqr in Hq; exact Hq). pose proof (pow2_ge_0 (delta OpLayerNorm d x i - D)).
    replace ((delta OpLayerNorm d x i - D) * (1 + th i) * ((delta OpLayerNorm d x i - D) * (1 + th i)))
      with ((delta OpLayerNorm d x i - D) ^ 2 * ((1 + th i) * (1 + th i))) by ring.
    rewrite (Rmult_comm ((1 + u) * (1 + u))). apply Rmult_le_compat_l; assumption. }
  (* Σδ̂² ≤ (1+u)²(dq + de₂²) *)
  assert (HD2 : D ^ 2 <= e2 * e2).
  { rewrite <- (pow2_abs D). simpl. rewrite Rmult_1_r. apply Rmult_le_compat; (apply Rabs_pos || assumption). }
  assert (Hsum2 : sum d (fun i => dh i * dh i)
                  <= (1 + u) * (1 + u) * (INR d * variance OpLayerNorm d x + INR d * e2 * e2)).
  { eapply Rle_trans; [apply sum_le; exact Hdh2|]. rewrite sum_scal_l.
    rewrite shifted_squares by (apply delta_sum; exact Hd). rewrite Hdq.
    apply Rmult_le_compat_l; [nra|]. rewrite Rmult_assoc. apply Rplus_le_compat_l.
    apply Rmult_le_compat_l; lra. }
  (* the squares' roundings *)
  assert (Hround : Rabs (sum d sq - sum d (fun i => dh i * dh i))
                   <= u * (1 + u) * (1 + u) * (INR d * variance OpLayerNorm d x + INR d * e2 * e2)).
  { rewrite <- sum_minus. eapply Rle_trans; [apply sum_abs_le; intros i Hi; apply (Hleaf i Hi)|].
    rewrite sum_scal_l.
    assert (u * sum d (fun i => dh i * dh i)
            <= u * ((1 + u) * (1 + u) * (INR d * variance OpLayerNorm d x + INR d * e2 * e2)))
      by (apply Rmult_le_compat_l; assumption).
    lra. }
  (* the exact part, item 6's first step *)
  assert (Hcentred : Rabs (sum d (fun i => dh i * dh i) - INR d * variance OpLayerNorm d x)
                     <= division * (INR d * variance OpLayerNorm d x + INR d * e2 * e2) + INR d * e2 * e2).
  { pose proof (centred_squares p d (delta OpLayerNorm d x) th D e2 (delta_sum d x Hd) Hth ltac:(exact He2)) as H.
    rewrite Hdq in H.
    rewrite (sum_ext d _ (fun i => ((delta OpLayerNorm d x i - D) * (1 + th i)) ^ 2))
      by (intros i _; rewrite Hdh; ring).
    unfold division. replace (INR d * e2 * e2) with (INR d * e2 ^ 2) by ring. exact H. }
  (* the tree *)
  assert (Hbound : forall i, (i < d)%nat -> Rabs (sq i) <= leaf_bound OpLayerNorm d x e2 i).
  { intros i Hi. unfold leaf_bound, c3, output_roundings. eapply Rle_trans; [apply (Hleaf i Hi)|].
    pose proof (Hdh2 i Hi).
    assert (Hb : (delta OpLayerNorm d x i - D) ^ 2 <= (Rabs (delta OpLayerNorm d x i) + e2) * (Rabs (delta OpLayerNorm d x i) + e2)).
    { rewrite <- pow2_abs. simpl. rewrite Rmult_1_r.
      assert (Rabs (delta OpLayerNorm d x i - D) <= Rabs (delta OpLayerNorm d x i) + e2).
      { eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_Ropp. lra. }
      apply Rmult_le_compat; (apply Rabs_pos || assumption). }
    replace ((1 + u) ^ 3) with ((1 + u) * ((1 + u) * (1 + u))) by ring.
    rewrite Rmult_assoc. apply Rmult_le_compat_l; [lra|].
    eapply Rle_trans; [eassumption|]. apply Rmult_le_compat_l; [nra|exact Hb]. }
  destruct (dominated_on_row d it Hrow sq (leaf_bound OpLayerNorm d x e2) Hbound) as [Hf [HT Hl]].
  pose proof (sum_error_dominated p choice (on sq it) _ Hf) as Htree.
  rewrite HT, Hl, (exact_on_row d it Hrow) in Htree.
  unfold e_q, growth. fold D in Hcentred.
  replace (rounded_sum fl (on sq it) - INR d * variance OpLayerNorm d x)
    with ((rounded_sum fl (on sq it) - sum d sq) + (sum d sq - sum d (fun i => dh i * dh i))
          + (sum d (fun i => dh i * dh i) - INR d * variance OpLayerNorm d x)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. lra.
Qed.

(** Item 6 with the division: |v̂ − q| ≤ (1+u)²E_Q/d + (2u+u²)q. *)
Lemma variance_stage d x it muh sq vh e2 :
  (0 < d)%nat -> row_tree d it -> Rabs (muh - mean d x) <= e2 ->
  (forall i, (i < d)%nat -> square_leaf (fl (x i - muh)) (sq i)) ->
  divided (rounded_sum fl (on sq it)) (INR d) vh ->
  Rabs (vh - variance OpLayerNorm d x) <= two_pass_variance_error OpLayerNorm d x e2.
Proof.
  intros Hd Hrow He2 Hsq Hvh. assert (HdR : 0 < INR d) by (apply lt_0_INR; exact Hd).
  pose proof (sum_of_squares d x it muh sq e2 Hd Hrow He2 Hsq) as HQ.
  destruct (mean_division p choice _ _ _ _ HdR HQ) as [H1 H2].
  replace (INR d * variance OpLayerNorm d x / INR d) with (variance OpLayerNorm d x) in H1, H2 by (field; lra).
  rewrite (Rabs_pos_eq (variance OpLayerNorm d x)) in H1, H2 by apply variance_nonneg.
  assert (E : (1 + u) ^ 2 * e_q OpLayerNorm d x e2 / INR d + (2 * u + u * u) * variance OpLayerNorm d x
              = two_pass_variance_error OpLayerNorm d x e2)
    by (unfold two_pass_variance_error, division; field; lra).
  rewrite <- E. destruct Hvh as [->| ->]; assumption.
Qed.

(** Item 7: the computed scale is within s·relative_scale of s. *)
Lemma scale_stage o inside d x vh eps e_v :
  0 <= eps -> Rabs (vh - variance o d x) <= e_v -> 0 < scale o inside d x eps ->
  relative_scale o inside d x eps e_v < 1 ->
  Rabs (computed_scale inside vh eps - scale o inside d x eps)
  <= scale o inside d x eps * relative_scale o inside d x eps e_v.
Proof.
  intros Heps Hv Hs Hrel. pose proof (variance_nonneg o d x) as Hq. pose proof (u_nonneg p) as Hu.
  unfold computed_scale, relative_scale in *. destruct inside; unfold scale in *.
  - set (q := variance o d x) in *. set (s := sqrt (q + eps)) in *.
    assert (Hss : s * s = q + eps) by (apply sqrt_sqrt; lra).
    pose proof (add_eps p choice vh q eps e_v Hq Heps Hv) as Hw. rewrite <- Hss in Hw.
    set (tau := (e_v + u * (q + eps + e_v)) / (q + eps)) in *.
    assert (Htau : tau < 1).
    { destruct (Rlt_or_le tau 1) as [H|H]; [exact H|].
      rewrite (sqrt_neg_0 (1 - tau)) in Hrel by lra. exfalso.
      assert (0 <= tau) by lra. assert (u * tau >= 0) by (apply Rle_ge, Rmult_le_pos; lra).
      replace ((1 + u) * tau / (1 + 0)) with (tau + u * tau) in Hrel by field. lra. }
    pose proof (scale_inside p choice _ s _ Hs Hw) as H. rewrite Hss in H. apply H. exact Htau.
  - set (q := variance o d x) in *. set (M := root_error q e_v).
    assert (HM : Rabs (sqrt vh - sqrt q) <= M).
    { unfold M, root_error. destruct (Rle_dec q 0) as [H0|H0].
      - apply sqrt_diff_root_any; assumption.
      - apply Rmin_glb; [apply sqrt_diff_quotient_any; [lra|assumption]|apply sqrt_diff_root_any; assumption]. }
    eapply Rle_trans; [apply (scale_outside p choice vh q eps M Hq Heps HM)|].
    apply Req_le. field. lra.
Qed.

(** Item 8's output roundings, in each of the model's forms. *)
Lemma output_forms dh rh g b y : output_of dh rh g b y ->
  exists p0 p1 p2, Rabs p0 <= u /\ Rabs p1 <= u /\ Rabs p2 <= u
                   /\ y = (g * (dh * rh) * (1 + p0) * (1 + p1) + b) * (1 + p2).
Proof.
  pose proof (u_nonneg p) as Hu. assert (H0 : Rabs 0 <= u) by (rewrite Rabs_R0; exact Hu).
  intros [H|[H|[H|H]]]; subst y.
  - destruct (fl_rel p choice (dh * rh)) as [e0 [H0' ->]].
    destruct (fl_rel p choice (g * (dh * rh * (1 + e0)))) as [e1 [H1 ->]].
    destruct (fl_rel p choice (g * (dh * rh * (1 + e0)) * (1 + e1) + b)) as [e2 [H2 ->]].
    exists e0, e1, e2. repeat split; try assumption. ring.
  - destruct (fl_rel p choice (g * dh)) as [e0 [H0' ->]].
    destruct (fl_rel p choice (g * dh * (1 + e0) * rh)) as [e1 [H1 ->]].
    destruct (fl_rel p choice (g * dh * (1 + e0) * rh * (1 + e1) + b)) as [e2 [H2 ->]].
    exists e0, e1, e2. repeat split; try assumption. ring.
  - destruct (fl_rel p choice (dh * rh)) as [e0 [H0' ->]].
    destruct (fl_rel p choice (g * (dh * rh * (1 + e0)) + b)) as [e2 [H2 ->]].
    exists e0, 0, e2. repeat split; try assumption. ring.
  - destruct (fl_rel p choice (g * dh)) as [e0 [H0' ->]].
    destruct (fl_rel p choice (g * dh * (1 + e0) * rh + b)) as [e2 [H2 ->]].
    exists e0, 0, e2. repeat split; try assumption. ring.
Qed.

(** Items 7 and 8 for either operation: a computed variance within e_v of q and centred values
    δ̂_i within (1+u)e_μ + u|δ_i| of δ_i give every output of the model within [formula]. *)
Theorem output_stage o inside d x gamma beta eps vh dh mean_error e_v i yh :
  0 <= eps -> Rabs (vh - variance o d x) <= e_v ->
  0 < scale o inside d x eps -> relative_scale o inside d x eps e_v < 1 ->
  Rabs (dh - delta o d x i) <= (1 + u) * mean_error + u * Rabs (delta o d x i) ->
  output_of dh (fl (1 / computed_scale inside vh eps)) (gamma i) (beta i) yh ->
  Rabs (yh - exact_output o inside d x eps gamma beta i)
  <= formula o inside d x eps mean_error e_v gamma beta i.
Proof.
  intros Heps Hv Hs Hrel Hc Hout.
  pose proof (scale_stage o inside d x vh eps e_v Heps Hv Hs Hrel) as Hsc.
  set (s := scale o inside d x eps) in *. set (rel := relative_scale o inside d x eps e_v) in *.
  pose proof (reciprocal p choice s _ (s * rel) Hs Hsc) as Hrho.
  replace (s * rel / s) with rel in Hrho by (field; lra). specialize (Hrho Hrel).
  pose proof (normalized p _ _ _ s mean_error _ Hs Hc Hrho) as Hn.
  destruct (output_forms _ _ _ _ _ Hout) as [p0 [p1 [p2 [H0 [H1 [H2 ->]]]]]].
  pose proof (output p _ _ (gamma i) (beta i) _ p0 p1 p2 H0 H1 H2 Hn) as Ho.
  unfold exact_output, formula, scale_error, c3, output_roundings. fold s. fold rel.
  replace (Rabs (delta o d x i) / s) with (Rabs (delta o d x i / s)); [exact Ho|].
  unfold Rdiv. rewrite Rabs_mult, (Rabs_pos_eq (/ s)); [reflexivity|].
  apply Rlt_le, Rinv_0_lt_compat. exact Hs.
Qed.

(** The chain from the mean on: a computed mean within e₂ (two_pass_error) and e_μ
    (mean_error) of μ gives every output of the two-pass model within [formula]. *)
Theorem layer_norm_from_mean inside d x gamma beta eps it2 muh sq vh two_pass_error mean_error
    e_v :
  (0 < d)%nat -> 0 <= eps -> row_tree d it2 ->
  Rabs (muh - mean d x) <= two_pass_error -> Rabs (muh - mean d x) <= mean_error ->
  (forall i, (i < d)%nat -> square_leaf (fl (x i - muh)) (sq i)) ->
  divided (rounded_sum fl (on sq it2)) (INR d) vh ->
  two_pass_variance_error OpLayerNorm d x two_pass_error <= e_v ->
  0 < scale OpLayerNorm inside d x eps -> relative_scale OpLayerNorm inside d x eps e_v < 1 ->
  forall i yh, (i < d)%nat ->
  output_of (fl (x i - muh)) (fl (1 / computed_scale inside vh eps)) (gamma i) (beta i) yh ->
  Rabs (yh - exact_output OpLayerNorm inside d x eps gamma beta i)
  <= formula OpLayerNorm inside d x eps mean_error e_v gamma beta i.
Proof.
  intros Hd Heps Hr2 He2 Hemu Hsq Hvh Hev Hs Hrel i yh Hi Hout.
  pose proof (variance_stage d x it2 muh sq vh two_pass_error Hd Hr2 He2 Hsq Hvh) as Hv.
  apply (output_stage OpLayerNorm inside d x gamma beta eps vh (fl (x i - muh)) mean_error e_v);
    try assumption; [lra|].
  exact (centring p choice (x i) (mean d x) muh mean_error Hemu).
Qed.

(** The end-to-end theorem. A row x of d ≥ 1 reals (floats or not), ε ≥ 0, a computed mean μ̂
    from any summation tree [it1] of x by either division, the squares of δ̂_i = fl(x_i − μ̂)
    rounded or fused, summed by any tree [it2], divided either way into v̂, the scale ŝ with ε
    inside or outside, r̂ = fl(1/ŝ), and each output ŷ_i in any of the four forms: then
    |ŷ_i − y_i| ≤ c₃|γ_i|·A_i + (c₃ − 1)|γ_i||z_i| + u|β_i| ([formula]), the judge's B_i less
    its underflow term, cap and margin — for every two_pass_error ≥ sum_error (e₂),
    mean_error ≥ sum_error (e_μ) and e_v ≥ two_pass_variance_error (E_v), as the judge's maxima
    are, provided s > 0 and relative_scale < 1 (where the judge's ρ is finite). *)
Theorem two_pass_layer_norm inside d x gamma beta eps it1 it2 muh sq vh two_pass_error
    mean_error e_v :
  (0 < d)%nat -> 0 <= eps -> row_tree d it1 -> row_tree d it2 ->
  divided (rounded_sum fl (on x it1)) (INR d) muh ->
  (forall i, (i < d)%nat -> square_leaf (fl (x i - muh)) (sq i)) ->
  divided (rounded_sum fl (on sq it2)) (INR d) vh ->
  sum_error d x <= two_pass_error -> sum_error d x <= mean_error ->
  two_pass_variance_error OpLayerNorm d x two_pass_error <= e_v ->
  0 < scale OpLayerNorm inside d x eps -> relative_scale OpLayerNorm inside d x eps e_v < 1 ->
  forall i yh, (i < d)%nat ->
  output_of (fl (x i - muh)) (fl (1 / computed_scale inside vh eps)) (gamma i) (beta i) yh ->
  Rabs (yh - exact_output OpLayerNorm inside d x eps gamma beta i)
  <= formula OpLayerNorm inside d x eps mean_error e_v gamma beta i.
Proof.
  intros Hd Heps Hr1 Hr2 Hmu Hsq Hvh He2 Hemu.
  pose proof (mean_stage d x it1 muh Hd Hr1 Hmu) as Hmean.
  apply (layer_norm_from_mean inside d x gamma beta eps it2 muh sq vh); (assumption || lra).
Qed.

(** Item 2 without underflow: leaves on a grid 2^e with Σ|x| ≤ 2^(p − grid_headroom_bits + e)
    sum exactly in every tree (FLX has no least exponent, so any e will do). *)
Lemma sum_exact_FLX e t : on_grid e t -> abs_sum t <= bpow radix2 (p - grid_headroom_bits + e) ->
  rounded_sum fl t = exact_sum t.
Proof.
  intros Hg Hh.
  assert (Hs : abs_sum t <= bpow radix2 (p + e)).
  { eapply Rle_trans; [exact Hh|]. apply bpow_le. unfold grid_headroom_bits. lia. }
  clear Hh. revert Hg Hs. induction t as [y|l IHl r IHr]; simpl; [reflexivity|].
  intros [Gl Gr] Hs.
  pose proof (abs_sum_nonneg l). pose proof (abs_sum_nonneg r).
  rewrite IHl, IHr by (assumption || lra).
  destruct (exact_on_grid e (Node l r) (conj Gl Gr)) as [m Em]. simpl in Em. rewrite Em.
  apply round_generic; [apply valid_rnd_N|]. apply (generic_format_FLX_FLT radix2 e).
  apply (grid_format p e m e (Z.le_refl e)). rewrite <- Em.
  eapply Rle_trans; [apply (exact_le_abs_sum (Node l r))|exact Hs].
Qed.

Lemma abs_sum_on_row d it f : row_tree d it -> abs_sum (on f it) = sum d (fun i => Rabs (f i)).
Proof.
  intros Hrow. rewrite <- (mags_sum (on f it)), mags_on.
  rewrite (list_sum_perm _ _ (Permutation_map _ Hrow)). apply list_sum_seq.
Qed.

Lemma on_grid_on_row d it f e : row_tree d it ->
  (forall i, (i < d)%nat -> exists m : Z, f i = IZR m * bpow radix2 e) -> on_grid e (on f it).
Proof.
  intros Hrow H. assert (G : forall i, In i (indices it) -> exists m : Z, f i = IZR m * bpow radix2 e)
    by (intros i Hi; apply H, (in_row d it Hrow), Hi).
  clear H Hrow. induction it as [i|l IHl r IHr]; simpl.
  - apply G. left. reflexivity.
  - split; [apply IHl|apply IHr]; intros i Hi; apply G; simpl; apply in_or_app; tauto.
Qed.

(** Item 2, exact sums: the computed mean is one of the two values the judge computes, so
    its error is at most the larger of their distances to μ (the judge's e_sum there). *)
Definition exact_sum_error d x :=
  Rmax (Rabs (fl (sum d x / INR d) - mean d x)) (Rabs (fl (sum d x * fl (1 / INR d)) - mean d x)).

Lemma exact_mean_stage d x it muh e :
  row_tree d it -> (forall i, (i < d)%nat -> exists m : Z, x i = IZR m * bpow radix2 e) ->
  sum d (fun i => Rabs (x i)) <= bpow radix2 (p - grid_headroom_bits + e) ->
  divided (rounded_sum fl (on x it)) (INR d) muh -> Rabs (muh - mean d x) <= exact_sum_error d x.
Proof.
  intros Hrow Hg Hs Hmu.
  rewrite (sum_exact_FLX e) in Hmu
    by (apply (on_grid_on_row d) || (rewrite (abs_sum_on_row d)); assumption).
  rewrite (exact_on_row d it Hrow) in Hmu. unfold exact_sum_error.
  destruct Hmu as [->| ->]; [apply Rmax_l|apply Rmax_r].
Qed.

(** The end-to-end theorem where the row's sums are exact (item 2's condition): the same
    bound with e_sum the judge's exact-case value. *)
Theorem two_pass_layer_norm_exact_sums inside d x gamma beta eps e it1 it2 muh sq vh
    two_pass_error mean_error e_v :
  (0 < d)%nat -> 0 <= eps -> row_tree d it1 -> row_tree d it2 ->
  (forall i, (i < d)%nat -> exists m : Z, x i = IZR m * bpow radix2 e) ->
  sum d (fun i => Rabs (x i)) <= bpow radix2 (p - grid_headroom_bits + e) ->
  divided (rounded_sum fl (on x it1)) (INR d) muh ->
  (forall i, (i < d)%nat -> square_leaf (fl (x i - muh)) (sq i)) ->
  divided (rounded_sum fl (on sq it2)) (INR d) vh ->
  exact_sum_error d x <= two_pass_error -> exact_sum_error d x <= mean_error ->
  two_pass_variance_error OpLayerNorm d x two_pass_error <= e_v ->
  0 < scale OpLayerNorm inside d x eps -> relative_scale OpLayerNorm inside d x eps e_v < 1 ->
  forall i yh, (i < d)%nat ->
  output_of (fl (x i - muh)) (fl (1 / computed_scale inside vh eps)) (gamma i) (beta i) yh ->
  Rabs (yh - exact_output OpLayerNorm inside d x eps gamma beta i)
  <= formula OpLayerNorm inside d x eps mean_error e_v gamma beta i.
Proof.
  intros Hd Heps Hr1 Hr2 Hg Hs Hmu Hsq Hvh He2 Hemu.
  pose proof (exact_mean_stage d x it1 muh e Hr1 Hg Hs Hmu) as Hmean.
  apply (layer_norm_from_mean inside d x gamma beta eps it2 muh sq vh); (assumption || lra).
Qed.

(** RMSNorm, the judge's op = RmsNorm: no mean (δ̂_i = x_i exactly), so e_sum = e_shift = 0,
    two_pass_error = 0 and mean_error = 0; the squares fl(x_i²) or x_i² (FMA), summed by any
    tree and divided either way, give |Q̂ − dq| ≤ E_Q at e₂ = 0. *)
Theorem rms_sum_of_squares d x it sq :
  (0 < d)%nat -> row_tree d it -> (forall i, (i < d)%nat -> square_leaf (x i) (sq i)) ->
  Rabs (rounded_sum fl (on sq it) - INR d * variance OpRmsNorm d x) <= e_q OpRmsNorm d x 0.
Proof.
  intros Hd Hrow Hsq. assert (HdR : 0 < INR d) by (apply lt_0_INR; exact Hd).
  pose proof (u_nonneg p) as Hu.
  assert (Hdq : sum d (fun i => x i * x i) = INR d * variance OpRmsNorm d x).
  { unfold variance. cbn [delta]. rewrite (sum_ext d (fun i => x i * x i) (fun i => x i ^ 2)) by (intros; ring).
    field. lra. }
  assert (Hleaf : forall i, (i < d)%nat ->
            Rabs (sq i - x i * x i) <= u * (x i * x i) /\ Rabs (sq i) <= (1 + u) * (x i * x i)).
  { intros i Hi. pose proof (Rle_0_sqr (x i)) as H0. unfold Rsqr in H0.
    destruct (Hsq i Hi) as [Hs|Hs]; rewrite Hs.
    - destruct (fl_rel p choice (x i * x i)) as [e [He ->]].
      replace (x i * x i * (1 + e) - x i * x i) with (x i * x i * e) by ring.
      rewrite !(Rabs_mult (x i * x i)), (Rabs_pos_eq (x i * x i)) by exact H0.
      pose proof (one_plus_le p e He).
      assert (Rabs e * (x i * x i) <= u * (x i * x i)) by (apply Rmult_le_compat_r; assumption).
      assert (Rabs (1 + e) * (x i * x i) <= (1 + u) * (x i * x i))
        by (apply Rmult_le_compat_r; assumption).
      split; lra.
    - rewrite Rminus_diag_eq, Rabs_R0, Rabs_pos_eq by (reflexivity || exact H0). nra. }
  assert (Hround : Rabs (sum d sq - sum d (fun i => x i * x i)) <= u * (INR d * variance OpRmsNorm d x)).
  { rewrite <- sum_minus, <- Hdq, <- sum_scal_l. apply sum_abs_le. intros i Hi. apply (Hleaf i Hi). }
  assert (Hbound : forall i, (i < d)%nat -> Rabs (sq i) <= leaf_bound OpRmsNorm d x 0 i).
  { intros i Hi. unfold leaf_bound, c3, output_roundings. cbn [delta]. rewrite Rplus_0_r.
    eapply Rle_trans; [apply (Hleaf i Hi)|].
    rewrite <- Rabs_mult, Rabs_pos_eq by (pose proof (Rle_0_sqr (x i)) as H0; unfold Rsqr in H0; exact H0).
    pose proof (Rle_0_sqr (x i)) as H0. unfold Rsqr in H0.
    apply Rmult_le_compat_r; [exact H0|]. simpl. nra. }
  destruct (dominated_on_row d it Hrow sq (leaf_bound OpRmsNorm d x 0) Hbound) as [Hf [HT Hl]].
  pose proof (sum_error_dominated p choice (on sq it) _ Hf) as Htree.
  rewrite HT, Hl, (exact_on_row d it Hrow) in Htree.
  pose proof (variance_nonneg OpRmsNorm d x) as Hq.
  assert (Hdq0 : 0 <= INR d * variance OpRmsNorm d x) by (apply Rmult_le_pos; lra).
  assert (0 <= u * (INR d * variance OpRmsNorm d x)) by (apply Rmult_le_pos; lra).
  assert (0 <= u * u * (INR d * variance OpRmsNorm d x)) by (apply Rmult_le_pos; [nra|lra]).
  assert (0 <= u * u * u * (INR d * variance OpRmsNorm d x)) by (apply Rmult_le_pos; [nra|lra]).
  unfold e_q, growth, division. cbv zeta.
  rewrite Hdq in Hround.
  replace (rounded_sum fl (on sq it) - INR d * variance OpRmsNorm d x)
    with ((rounded_sum fl (on sq it) - sum d sq) + (sum d sq - INR d * variance OpRmsNorm d x))
    by ring.
  eapply Rle_trans; [apply Rabs_triang|]. lra.
Qed.

Lemma rms_variance_stage d x it sq vh :
  (0 < d)%nat -> row_tree d it -> (forall i, (i < d)%nat -> square_leaf (x i) (sq i)) ->
  divided (rounded_sum fl (on sq it)) (INR d) vh ->
  Rabs (vh - variance OpRmsNorm d x) <= two_pass_variance_error OpRmsNorm d x 0.
Proof.
  intros Hd Hrow Hsq Hvh. assert (HdR : 0 < INR d) by (apply lt_0_INR; exact Hd).
  pose proof (rms_sum_of_squares d x it sq Hd Hrow Hsq) as HQ.
  destruct (mean_division p choice _ _ _ _ HdR HQ) as [H1 H2].
  replace (INR d * variance OpRmsNorm d x / INR d) with (variance OpRmsNorm d x) in H1, H2 by (field; lra).
  rewrite (Rabs_pos_eq (variance OpRmsNorm d x)) in H1, H2 by apply variance_nonneg.
  assert (E : (1 + u) ^ 2 * e_q OpRmsNorm d x 0 / INR d + (2 * u + u * u) * variance OpRmsNorm d x
              = two_pass_variance_error OpRmsNorm d x 0)
    by (unfold two_pass_variance_error, division; field; lra).
  rewrite <- E. destruct Hvh as [->| ->]; assumption.
Qed.

(** The end-to-end theorem for RMSNorm: every kernel of the model (any tree for Σx², squares
    rounded or fused, either division, ε inside or outside, any of the four output forms) is
    within [formula] at mean_error = 0, for every e_v ≥ two_pass_variance_error at e₂ = 0. *)
Theorem rms_norm inside d x gamma beta eps it sq vh e_v :
  (0 < d)%nat -> 0 <= eps -> row_tree d it ->
  (forall i, (i < d)%nat -> square_leaf (x i) (sq i)) ->
  divided (rounded_sum fl (on sq it)) (INR d) vh ->
  two_pass_variance_error OpRmsNorm d x 0 <= e_v ->
  0 < scale OpRmsNorm inside d x eps -> relative_scale OpRmsNorm inside d x eps e_v < 1 ->
  forall i yh, (i < d)%nat ->
  output_of (x i) (fl (1 / computed_scale inside vh eps)) (gamma i) (beta i) yh ->
  Rabs (yh - exact_output OpRmsNorm inside d x eps gamma beta i)
  <= formula OpRmsNorm inside d x eps 0 e_v gamma beta i.
Proof.
  intros Hd Heps Hrow Hsq Hvh Hev Hs Hrel i yh Hi Hout.
  pose proof (rms_variance_stage d x it sq vh Hd Hrow Hsq Hvh) as Hv.
  apply (output_stage OpRmsNorm inside d x gamma beta eps vh (x i) 0 e_v); try assumption; [lra|].
  cbn [delta]. rewrite Rminus_diag_eq, Rabs_R0 by reflexivity.
  pose proof (u_nonneg p). pose proof (Rabs_pos (x i)).
  assert (0 <= u * Rabs (x i)) by (apply Rmult_le_pos; assumption). lra.
Qed.

End TwoPass.
