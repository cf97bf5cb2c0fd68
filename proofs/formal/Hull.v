(** Brody, Alon, Yahav 2023, §4 Theorem 1 in its closed-hull form: a key in the convex hull of
    the other keys never strictly wins for any query, and conversely a key outside it wins for
    some query; and, with ε = 0, every LayerNorm output is selected by itself as query among
    keys with other outputs. *)
From Coq Require Import Reals Lra Lia Classical.
From Normoracle Require Import Sums Sphere.
Open Scope R_scope.

Section Hull.
Variable d : nat.

(** The query q scores h as high as the other keys k_0 … k_{n−1} at least once. *)
Theorem hull_never_wins (n : nat) (k : nat -> nat -> R) (lambda : nat -> R) (q : nat -> R) :
  (forall j, (j < n)%nat -> 0 <= lambda j) -> sum n lambda = 1 ->
  let h := fun t => sum n (fun j => lambda j * k j t) in
  ~ (forall j, (j < n)%nat -> dot d q (k j) < dot d q h).
Proof.
  intros Hl Hs h Hwin.
  assert (Hh : dot d q h = sum n (fun j => lambda j * dot d q (k j))).
  { unfold dot, h.
    rewrite (sum_ext d _ (fun t => sum n (fun j => lambda j * (q t * k j t))))
      by (intros; rewrite <- sum_scal_l; apply sum_ext; intros; ring).
    rewrite sum_swap. apply sum_ext. intros. apply sum_scal_l. }
  set (m := dot d q h).
  assert (Hz : sum n (fun j => lambda j * (m - dot d q (k j))) = 0).
  { rewrite (sum_ext n _ (fun j => m * lambda j - lambda j * dot d q (k j))) by (intros; ring).
    rewrite sum_minus, sum_scal_l, Hs, <- Hh. unfold m. ring. }
  assert (Hnn : forall j, (j < n)%nat -> 0 <= lambda j * (m - dot d q (k j))).
  { intros j Hj. apply Rmult_le_pos; [apply Hl; exact Hj|]. specialize (Hwin j Hj). unfold m. lra. }
  assert (H0 : forall j, (j < n)%nat -> lambda j = 0).
  { intros j Hj. pose proof (sum_nonneg_zero n _ Hnn Hz j Hj) as E.
    specialize (Hwin j Hj). apply Rmult_integral in E. destruct E as [E|E]; [exact E|].
    unfold m in E. lra. }
  rewrite (sum_ext n lambda (fun _ => 0)) in Hs by exact H0. rewrite sum_const in Hs. lra.
Qed.

(** On a sphere, a point is the unique best match for itself: a ≠ b and ‖a‖ = ‖b‖ give
    a·b < a·a (strict Cauchy–Schwarz). *)
Theorem sphere_self_wins a b :
  norm2 d a = norm2 d b -> (exists i, (i < d)%nat /\ a i <> b i) -> dot d a b < dot d a a.
Proof.
  intros Hn [i [Hi Hab]].
  assert (Hpos : 0 < norm2 d (fun t => a t - b t)) by (apply norm2_pos; exists i; split; [exact Hi|lra]).
  unfold norm2, dot in *.
  rewrite (sum_ext d _ (fun t => a t * a t - 2 * (a t * b t) + b t * b t)) in Hpos by (intros; ring).
  rewrite sum_plus, sum_minus, sum_scal_l in Hpos. lra.
Qed.

(** The converse (Brody et al.'s Theorem 1 is an equivalence): a key h outside the convex hull
    of the others wins for some query. The separation comes from Gordan's alternative, proved by
    induction on the number of vectors: either some q has q·a_j < 0 for every j, or a
    nonnegative, nonzero λ has Σλ_j a_j = 0. *)
Lemma dot_comb_l al be x y v :
  dot d (fun t => al * x t - be * y t) v = al * dot d x v - be * dot d y v.
Proof.
  unfold dot. rewrite (sum_ext d _ (fun t => al * (x t * v t) - be * (y t * v t))) by (intros; ring).
  rewrite sum_minus, !sum_scal_l. ring.
Qed.

Lemma dot_comb_r al be x y v :
  dot d v (fun t => al * x t - be * y t) = al * dot d v x - be * dot d v y.
Proof. rewrite dot_sym, dot_comb_l, (dot_sym d x), (dot_sym d y). ring. Qed.

(** A small enough step keeps finitely many negative numbers negative. *)
Lemma small_step m (al be : nat -> R) : (forall j, (j < m)%nat -> al j < 0) ->
  exists t, 0 < t /\ forall s, 0 <= s <= t -> forall j, (j < m)%nat -> al j + s * be j < 0.
Proof.
  induction m as [|m IH]; intros H.
  - exists 1. split; [lra|]. intros; lia.
  - destruct IH as [t' [Ht' Hs]]; [intros; apply H; lia|].
    pose proof (H m ltac:(lia)) as Hm. pose proof (Rabs_pos (be m)).
    set (r := - al m / (Rabs (be m) + 1)).
    assert (Hr : 0 < r) by (unfold r; apply Rdiv_lt_0_compat; lra).
    assert (Hr1 : r * Rabs (be m) < - al m).
    { assert (r * (Rabs (be m) + 1) = - al m) by (unfold r; field; lra). nra. }
    exists (Rmin t' r). split; [apply Rmin_pos; assumption|].
    intros s [Hs0 Hst] j Hj. pose proof (Rmin_l t' r). pose proof (Rmin_r t' r).
    destruct (Nat.eq_dec j m) as [->|Hn]; [|apply Hs; [lra|lia]].
    assert (s * be m <= s * Rabs (be m)) by (apply Rmult_le_compat_l; [lra|apply Rle_abs]).
    assert (s * Rabs (be m) <= r * Rabs (be m)) by (apply Rmult_le_compat_r; lra).
    lra.
Qed.

Theorem gordan m : forall a : nat -> nat -> R,
  (exists q, forall j, (j < m)%nat -> dot d q (a j) < 0)
  \/ (exists lam, (forall j, (j < m)%nat -> 0 <= lam j) /\ 0 < sum m lam
                  /\ forall t, (t < d)%nat -> sum m (fun j => lam j * a j t) = 0).
Proof.
  induction m as [|m IH]; intros a.
  { left. exists (fun _ => 0). intros; lia. }
  destruct (IH a) as [[q Hq]|[lam [Hl [Hs Hz]]]].
  2: { right. exists (fun j => if Nat.ltb j m then lam j else 0). split; [|split].
       - intros j Hj. destruct (Nat.ltb_spec j m); [apply Hl; lia|lra].
       - simpl. rewrite Nat.ltb_irrefl, Rplus_0_r.
         rewrite (sum_ext m _ lam); [exact Hs|]. intros j Hj. now replace (Nat.ltb j m) with true
           by (symmetry; apply Nat.ltb_lt; lia).
       - intros t Ht. simpl. rewrite Nat.ltb_irrefl, Rmult_0_l, Rplus_0_r.
         rewrite <- (Hz t Ht). apply sum_ext. intros j Hj.
         now replace (Nat.ltb j m) with true by (symmetry; apply Nat.ltb_lt; lia). }
  set (c := dot d q (a m)).
  destruct (Rlt_or_le c 0) as [Hc|Hc].
  { left. exists q. intros j Hj. destruct (Nat.eq_dec j m) as [->|Hn]; [exact Hc|apply Hq; lia]. }
  set (b j t := c * a j t - dot d q (a j) * a m t).
  destruct (IH b) as [[q' Hq']|[lam [Hl [Hs Hz]]]].
  - set (q1 t := c * q' t - dot d q' (a m) * q t).
    assert (H1 : forall j, dot d q1 (a j) = dot d q' (b j)).
    { intros j. unfold q1, b. rewrite dot_comb_l, dot_comb_r. unfold c. ring. }
    assert (H1m : dot d q1 (a m) = 0) by (unfold q1; rewrite dot_comb_l; unfold c; ring).
    destruct (classic (exists t, (t < d)%nat /\ a m t <> 0)) as [Hne|H0].
    + pose proof (norm2_pos d (a m) Hne) as Hn.
      destruct (small_step m (fun j => dot d q1 (a j)) (fun j => - dot d (a m) (a j)))
        as [s [Hs0 Hsm]]; [intros j Hj; rewrite H1; apply Hq'; exact Hj|].
      left. exists (fun t => 1 * q1 t - s * a m t). intros j Hj. rewrite dot_comb_l.
      destruct (Nat.eq_dec j m) as [->|Hjm].
      * rewrite H1m. unfold norm2 in Hn. nra.
      * pose proof (Hsm s ltac:(lra) j ltac:(lia)). lra.
    + right. exists (fun j => if Nat.eqb j m then 1 else 0). split; [|split].
      * intros j _. destruct (Nat.eqb j m); lra.
      * simpl. rewrite Nat.eqb_refl. rewrite (sum_ext m _ (fun _ => 0)); [rewrite sum_const; lra|].
        intros j Hj. now replace (Nat.eqb j m) with false by (symmetry; apply Nat.eqb_neq; lia).
      * intros t Ht. simpl. rewrite Nat.eqb_refl.
        rewrite (sum_ext m _ (fun _ => 0)); [rewrite sum_const|].
        -- destruct (Req_dec (a m t) 0) as [E|E]; [rewrite E; ring|].
           exfalso. apply H0. exists t. split; assumption.
        -- intros j Hj. replace (Nat.eqb j m) with false by (symmetry; apply Nat.eqb_neq; lia). ring.
  - right. set (w := - sum m (fun j => lam j * dot d q (a j))).
    assert (Hw : 0 < w).
    { assert (Ew : w = sum m (fun j => lam j * - dot d q (a j))).
      { unfold w. rewrite (sum_ext m (fun j => lam j * - dot d q (a j))
                                     (fun j => -1 * (lam j * dot d q (a j)))) by (intros; ring).
        rewrite sum_scal_l. ring. }
      rewrite Ew.
      assert (Hnn : forall j, (j < m)%nat -> 0 <= lam j * - dot d q (a j))
        by (intros j Hj; apply Rmult_le_pos; [apply Hl; exact Hj|pose proof (Hq j Hj); lra]).
      destruct (Rle_lt_or_eq_dec 0 _ (sum_nonneg m _ Hnn)) as [Hp|Hp]; [lra|].
      exfalso. assert (Hall : forall j, (j < m)%nat -> lam j = 0).
      { intros j Hj. pose proof (sum_nonneg_zero m _ Hnn (eq_sym Hp) j Hj) as E.
        pose proof (Hq j Hj). apply Rmult_integral in E. destruct E; [assumption|lra]. }
      rewrite (sum_ext m lam (fun _ => 0)), sum_const in Hs by exact Hall. lra. }
    exists (fun j => if Nat.ltb j m then c * lam j else w). split; [|split].
    + intros j Hj. destruct (Nat.ltb_spec j m); [apply Rmult_le_pos; [lra|apply Hl; lia]|lra].
    + simpl. rewrite Nat.ltb_irrefl.
      rewrite (sum_ext m _ (fun j => c * lam j)), sum_scal_l.
      * assert (0 <= c * sum m lam) by (apply Rmult_le_pos; lra). lra.
      * intros j Hj. now replace (Nat.ltb j m) with true by (symmetry; apply Nat.ltb_lt; lia).
    + intros t Ht. simpl. rewrite Nat.ltb_irrefl.
      rewrite (sum_ext m _ (fun j => lam j * b j t + lam j * dot d q (a j) * a m t)).
      * rewrite sum_plus, Hz by exact Ht. rewrite sum_scal_r. unfold w. ring.
      * intros j Hj. replace (Nat.ltb j m) with true by (symmetry; apply Nat.ltb_lt; lia).
        unfold b. ring.
Qed.

(** The converse of Theorem 1: a key h that is no convex combination of k_0 … k_{n−1} wins
    strictly, for some query q, against every one of them. *)
Theorem outside_hull_wins (n : nat) (k : nat -> nat -> R) (h : nat -> R) :
  ~ (exists lambda, (forall j, (j < n)%nat -> 0 <= lambda j) /\ sum n lambda = 1
                    /\ forall t, (t < d)%nat -> h t = sum n (fun j => lambda j * k j t)) ->
  exists q, forall j, (j < n)%nat -> dot d q (k j) < dot d q h.
Proof.
  intros Hout. destruct (gordan n (fun j t => 1 * k j t - 1 * h t)) as [[q Hq]|[lam [Hl [Hs Hz]]]].
  - exists q. intros j Hj. specialize (Hq j Hj). rewrite dot_comb_r in Hq. lra.
  - exfalso. apply Hout. exists (fun j => lam j / sum n lam). split; [|split].
    + intros j Hj. apply Rmult_le_pos; [apply Hl; exact Hj|apply Rlt_le, Rinv_0_lt_compat; exact Hs].
    + unfold Rdiv. rewrite sum_scal_r. field. lra.
    + intros t Ht. specialize (Hz t Ht).
      rewrite (sum_ext n _ (fun j => lam j * k j t - h t * lam j)), sum_minus, sum_scal_l in Hz
        by (intros; ring).
      rewrite (sum_ext n _ (fun j => / sum n lam * (lam j * k j t))) by (intros; unfold Rdiv; ring).
      rewrite sum_scal_l. apply Rmult_eq_reg_l with (sum n lam); [|lra].
      field_simplify; [lra|lra].
Qed.

Hypothesis d_pos : (0 < d)%nat.

(** With ε = 0 every LayerNorm output is selectable: keys LN(x_0) … LN(x_{n−1}) of rows with
    σ > 0, the query LN(x_i) scores LN(x_i) strictly above every key with another output. *)
Theorem layer_norm_outputs_selectable (x : nat -> nat -> R) (i j : nat) :
  0 < var d (x i) -> 0 < var d (x j) ->
  (exists t, (t < d)%nat /\ layer_norm d 0 (x i) t <> layer_norm d 0 (x j) t) ->
  dot d (layer_norm d 0 (x i)) (layer_norm d 0 (x j))
  < dot d (layer_norm d 0 (x i)) (layer_norm d 0 (x i)).
Proof.
  intros Hi Hj Hne. apply sphere_self_wins; [|exact Hne].
  unfold norm2. fold (norm2 d (layer_norm d 0 (x i))). fold (norm2 d (layer_norm d 0 (x j))).
  rewrite !layer_norm_shrink by (exact d_pos || lra). field. lra.
Qed.

End Hull.
