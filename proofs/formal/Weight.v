(** Lemma 1 of crates/oracle/src/judge/tolerance.rs as the judge uses it: every summation tree of a_1 … a_d
    errs by at most u·(1+u)^(d−1)·T(|a|), T(a) = Σ_{m=2}^{d} P_m(a), P_m the sum of the m
    largest entries — for a decreasingly sorted list, T = (d−1)·a_1 + Σ_{k≥2} (d−k+1)·a_k, the
    weights of `tolerance::tree_weight`. Rounding to nearest, no underflow or overflow. *)
From Coq Require Import Reals Lra Lia ZArith List Permutation Sorted.
From Flocq Require Import Core Relative.
From Normoracle Require Import Sums Summation.
Import ListNotations.
Open Scope R_scope.

(** P_m(l): the largest sum of at most m entries of l (of m entries, for nonnegative ones). *)
Fixpoint top (m : nat) (l : list R) : R :=
  match l, m with
  | [], _ => 0
  | _, O => 0
  | x :: l', S m' => Rmax (x + top m' l') (top m l')
  end.

Definition nonneg (l : list R) := Forall (fun x => 0 <= x) l.

Lemma top_nonneg m l : nonneg l -> 0 <= top m l.
Proof.
  revert m. induction l as [|x l IH]; intros m H; destruct m; simpl; try lra.
  inversion H; subst. eapply Rle_trans; [|apply Rmax_r]. apply IH; assumption.
Qed.

Lemma top_mono m l : nonneg l -> top m l <= top (S m) l.
Proof.
  revert m. induction l as [|x l IH]; intros m H; simpl; [lra|].
  inversion H; subst. destruct m as [|m].
  - pose proof (top_nonneg 1 l H3). eapply Rle_trans; [|apply Rmax_r]. lra.
  - apply Rmax_lub.
    + eapply Rle_trans; [|apply Rmax_l]. pose proof (IH m H3). lra.
    + eapply Rle_trans; [|apply Rmax_r]. apply IH; assumption.
Qed.

Lemma top_mono_le m n l : nonneg l -> (m <= n)%nat -> top m l <= top n l.
Proof.
  intros H Hmn. induction Hmn; [lra|]. eapply Rle_trans; [exact IHHmn|apply top_mono; exact H].
Qed.

Lemma top_app_l m a b : nonneg a -> nonneg b -> top m a <= top m (a ++ b).
Proof.
  revert m. induction a as [|x a IH]; intros m Ha Hb; simpl.
  - apply top_nonneg; exact Hb.
  - inversion Ha; subst. destruct m as [|m]; [destruct (a ++ b); simpl; lra|].
    assert (nonneg (a ++ b)) by (apply Forall_app; split; assumption).
    apply Rmax_lub.
    + eapply Rle_trans; [|apply Rmax_l]. pose proof (IH m H2 Hb). lra.
    + eapply Rle_trans; [|apply Rmax_r]. apply IH; assumption.
Qed.

Lemma top_app_r m a b : nonneg a -> nonneg b -> top m b <= top m (a ++ b).
Proof.
  revert m. induction a as [|x a IH]; intros m Ha Hb; simpl; [lra|].
  inversion Ha; subst. destruct m as [|m].
  - destruct b; simpl; [lra|]. destruct (a ++ r :: b); simpl; lra.
  - eapply Rle_trans; [|apply Rmax_r]. apply IH; assumption.
Qed.

Fixpoint list_sum (l : list R) := match l with [] => 0 | x :: l' => x + list_sum l' end.

Lemma top_full m l : nonneg l -> (length l <= m)%nat -> list_sum l <= top m l.
Proof.
  revert m. induction l as [|x l IH]; intros m H Hm; simpl; [lra|].
  inversion H; subst. destruct m as [|m]; [simpl in Hm; lia|].
  eapply Rle_trans; [|apply Rmax_l]. simpl in Hm. pose proof (IH m H3 ltac:(lia)). lra.
Qed.

(** T(l) = Σ_{m=2}^{|l|} P_m(l). *)
Definition T (l : list R) := sum (length l - 1) (fun j => top (j + 2) l).

Lemma sum_split n m f : sum (n + m) f = sum n f + sum m (fun j => f (n + j)%nat).
Proof.
  induction m as [|m IH]; simpl; [rewrite Nat.add_0_r; ring|].
  rewrite Nat.add_succ_r. simpl. rewrite IH. ring.
Qed.

(** The leaves' magnitudes, and the internal nodes' total weight Σ_v W_v. *)
Fixpoint mags t := match t with Leaf x => [Rabs x] | Node l r => mags l ++ mags r end.
Fixpoint node_weight t :=
  match t with Leaf _ => 0 | Node l r => abs_sum (Node l r) + node_weight l + node_weight r end.

Lemma mags_nonneg t : nonneg (mags t).
Proof.
  induction t; simpl; [constructor; [apply Rabs_pos|constructor]|apply Forall_app; split; assumption].
Qed.

Lemma mags_length t : length (mags t) = leaves t.
Proof. induction t; simpl; [reflexivity|rewrite app_length; lia]. Qed.

Lemma mags_sum t : list_sum (mags t) = abs_sum t.
Proof.
  induction t as [x|l IHl r IHr]; simpl; [ring|].
  rewrite <- IHl, <- IHr. clear. induction (mags l); simpl; [ring|rewrite IHl0; ring].
Qed.

(** The combinatorial step: Σ_v W_v ≤ T(|a|), for every tree. *)
Theorem node_weight_le_T t : node_weight t <= T (mags t).
Proof.
  induction t as [x|l IHl r IHr]; [unfold T; simpl; lra|].
  pose proof (mags_nonneg l) as Nl. pose proof (mags_nonneg r) as Nr.
  assert (Na : nonneg (mags l ++ mags r)) by (apply Forall_app; split; assumption).
  pose proof (leaves_pos l) as Pl. pose proof (leaves_pos r) as Pr.
  unfold T in *. simpl. rewrite app_length, !mags_length in *.
  set (a := mags l ++ mags r).
  replace (leaves l + leaves r - 1)%nat with ((leaves l - 1) + (leaves r - 1) + 1)%nat by lia.
  rewrite sum_split, sum_split. simpl.
  assert (A : sum (leaves l - 1) (fun j => top (j + 2) (mags l))
              <= sum (leaves l - 1) (fun j => top (j + 2) a))
    by (apply sum_le; intros; apply top_app_l; assumption).
  assert (B : sum (leaves r - 1) (fun j => top (j + 2) (mags r))
              <= sum (leaves r - 1) (fun j => top (leaves l - 1 + j + 2) a)).
  { apply sum_le. intros j _. eapply Rle_trans; [apply (top_app_r _ (mags l)); assumption|].
    apply top_mono_le; [exact Na|lia]. }
  assert (C : abs_sum (Node l r) <= top (leaves l - 1 + (leaves r - 1) + 0 + 2) a).
  { rewrite <- (mags_sum (Node l r)). apply top_full; [exact Na|].
    unfold a. rewrite app_length, !mags_length. lia. }
  simpl in C. lra.
Qed.

Lemma node_weight_nonneg t : 0 <= node_weight t.
Proof.
  induction t as [x|l IHl r IHr]; simpl; [lra|].
  pose proof (abs_sum_nonneg l). pose proof (abs_sum_nonneg r). lra.
Qed.

Section Error.
Variable p : Z.
Context { prec_gt_0_ : Prec_gt_0 p }.
Variable choice : Z -> bool.
Notation u := (u p).
Notation fl := (round radix2 (FLX_exp p) (Znearest choice)).

(** Each node's rounding costs at most u times its computed operands' sum, which is at most
    (1+u)^(d−1) times the node's weight. *)
Lemma sum_error_node_weight t :
  Rabs (rounded_sum fl t - exact_sum t) <= u * (1 + u) ^ (leaves t - 1) * node_weight t.
Proof.
  pose proof (u_nonneg p) as Hu.
  induction t as [x|l IHl r IHr]; simpl.
  { rewrite Rminus_diag_eq, Rabs_R0 by reflexivity. lra. }
  pose proof (leaves_pos l) as Pl. pose proof (leaves_pos r) as Pr.
  destruct (sum_error_any_tree p choice l) as [_ Bl].
  destruct (sum_error_any_tree p choice r) as [_ Br].
  set (a := rounded_sum fl l) in *. set (b := rounded_sum fl r) in *.
  set (G := (1 + u) ^ (leaves l + leaves r - 1)).
  assert (Gl : (1 + u) ^ (leaves l - 1) <= G) by (apply pow_growth; lia).
  assert (Gr : (1 + u) ^ (leaves r - 1) <= G) by (apply pow_growth; lia).
  pose proof (abs_sum_nonneg l) as Al. pose proof (abs_sum_nonneg r) as Ar.
  pose proof (node_weight_nonneg l) as Wl. pose proof (node_weight_nonneg r) as Wr.
  destruct (relative_error_N_FLX_ex radix2 p prec_gt_0_ choice (a + b)) as [eps [Heps Hfl]].
  fold u in Heps. rewrite Hfl.
  replace ((a + b) * (1 + eps) - (exact_sum l + exact_sum r))
    with ((a - exact_sum l) + (b - exact_sum r) + eps * (a + b)) by ring.
  assert (E1 : u * (1 + u) ^ (leaves l - 1) * node_weight l <= u * G * node_weight l)
    by (apply Rmult_le_compat_r; [exact Wl|apply Rmult_le_compat_l; assumption]).
  assert (E2 : u * (1 + u) ^ (leaves r - 1) * node_weight r <= u * G * node_weight r)
    by (apply Rmult_le_compat_r; [exact Wr|apply Rmult_le_compat_l; assumption]).
  assert (Hab : Rabs (a + b) <= G * (abs_sum l + abs_sum r)).
  { eapply Rle_trans; [apply Rabs_triang|].
    assert ((1 + u) ^ (leaves l - 1) * abs_sum l <= G * abs_sum l) by (apply Rmult_le_compat_r; assumption).
    assert ((1 + u) ^ (leaves r - 1) * abs_sum r <= G * abs_sum r) by (apply Rmult_le_compat_r; assumption).
    lra. }
  assert (E3 : Rabs (eps * (a + b)) <= u * (G * (abs_sum l + abs_sum r))).
  { rewrite Rabs_mult. apply Rmult_le_compat; (apply Rabs_pos || assumption). }
  eapply Rle_trans; [apply Rabs_triang|].
  eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|]. fold G. lra.
Qed.

(** Lemma 1: |Ŝ − S| ≤ u·(1+u)^(d−1)·T(|a|), for every summation tree. *)
Theorem sum_error_tree_weight t :
  Rabs (rounded_sum fl t - exact_sum t) <= u * (1 + u) ^ (leaves t - 1) * T (mags t).
Proof.
  eapply Rle_trans; [apply sum_error_node_weight|]. apply Rmult_le_compat_l.
  - apply Rmult_le_pos; [apply u_nonneg|apply pow_le; pose proof (u_nonneg p); lra].
  - apply node_weight_le_T.
Qed.
End Error.

(** T does not depend on the order of the entries. *)
Lemma top_0 l : top 0 l = 0.
Proof. destruct l; reflexivity. Qed.

Lemma top_swap m x y l : top m (x :: y :: l) = top m (y :: x :: l).
Proof.
  destruct m as [|[|k]]; simpl; [reflexivity| |].
  - rewrite !top_0. unfold Rmax. repeat destruct Rle_dec; lra.
  - unfold Rmax. repeat destruct Rle_dec; lra.
Qed.

Lemma top_perm l l' : Permutation l l' -> forall m, top m l = top m l'.
Proof.
  induction 1 as [|x l l' H IH|x y l|l l' l'' H1 IH1 H2 IH2]; intros m.
  - reflexivity.
  - destruct m; simpl; [reflexivity|]. now rewrite !IH.
  - apply top_swap.
  - now rewrite IH1, IH2.
Qed.

Theorem T_perm l l' : Permutation l l' -> T l = T l'.
Proof.
  intros H. unfold T. rewrite (Permutation_length H). apply sum_ext. intros. apply top_perm, H.
Qed.

(** On a decreasingly sorted list, P_m is the sum of the first m entries … *)
Lemma firstn_step x s m : nonneg (x :: s) -> StronglySorted Rge (x :: s) ->
  list_sum (firstn (S m) s) <= x + list_sum (firstn m s).
Proof.
  revert x m. induction s as [|y s IH]; intros x m N S; simpl.
  - rewrite firstn_nil. simpl. inversion N. lra.
  - inversion S as [|? ? S' F]; subst. inversion F as [|? ? Hxy _]; subst.
    inversion N as [|? ? _ N']. destruct m as [|m]; [simpl|rewrite !firstn_cons; cbn [list_sum]].
    + destruct s; simpl; lra.
    + pose proof (IH y m N' S'). lra.
Qed.

Lemma top_sorted m s : nonneg s -> StronglySorted Rge s -> top m s = list_sum (firstn m s).
Proof.
  revert m. induction s as [|x s IH]; intros m N S; [destruct m; reflexivity|].
  destruct m as [|m]; [reflexivity|]. simpl.
  pose proof N as N0. inversion N as [|? ? _ N']. inversion S as [|? ? S' _]; subst.
  rewrite !IH by assumption. pose proof (firstn_step x s m N0 S).
  unfold Rmax. destruct Rle_dec; lra.
Qed.

(** … and T is the weighted sum `tolerance::tree_weight` computes: entry k (from 0) of the
    sorted magnitudes weighs d − 1 for k = 0 and d − k after. *)
Definition tree_weight (s : list R) :=
  let d := length s in
  sum d (fun k => INR (if Nat.eqb k 0 then d - 1 else d - k) * nth k s 0).

Lemma sum_shift n f : sum (S n) f = f O + sum n (fun j => f (S j)).
Proof. induction n as [|n IH]; simpl in *; [ring|]. rewrite IH. ring. Qed.

Definition T_sorted (s : list R) := sum (length s - 1) (fun j => list_sum (firstn (j + 2) s)).

Lemma T_sorted_cons x y s :
  T_sorted (x :: y :: s) = INR (S (length s)) * x + y + T_sorted (y :: s).
Proof.
  unfold T_sorted. simpl length. replace (S (S (length s)) - 1)%nat with (S (length s)) by lia.
  replace (S (length s) - 1)%nat with (length s) by lia.
  rewrite (sum_ext _ _ (fun j => x + list_sum (firstn (j + 1) (y :: s))))
    by (intros j _; replace (j + 2)%nat with (S (j + 1)) by lia; reflexivity).
  rewrite sum_plus, sum_const, sum_shift. simpl (list_sum (firstn (0 + 1) _)).
  rewrite (sum_ext (length s) (fun j => list_sum (firstn (S j + 1) (y :: s)))
             (fun j => list_sum (firstn (j + 2) (y :: s))))
    by (intros j _; replace (S j + 1)%nat with (j + 2)%nat by lia; reflexivity).
  ring.
Qed.

Lemma tree_weight_cons x y s :
  tree_weight (x :: y :: s) = INR (S (length s)) * x + y + tree_weight (y :: s).
Proof.
  unfold tree_weight. simpl length. rewrite !sum_shift. simpl Nat.eqb. cbv iota.
  replace (S (S (length s)) - 1)%nat with (S (length s)) by lia.
  replace (S (length s) - 1)%nat with (length s) by lia.
  rewrite (sum_ext (length s)
             (fun j => INR (S (S (length s)) - S (S j)) * nth (S (S j)) (x :: y :: s) 0)
             (fun j => INR (S (length s) - S j) * nth (S j) (y :: s) 0)) by (intros; reflexivity).
  simpl nth. rewrite S_INR. ring.
Qed.

Lemma T_sorted_is_tree_weight s : T_sorted s = tree_weight s.
Proof.
  induction s as [|x [|y s] IH]; [reflexivity|unfold T_sorted, tree_weight; simpl; ring|].
  rewrite T_sorted_cons, tree_weight_cons, IH. reflexivity.
Qed.

(** For decreasingly sorted magnitudes, T is `tolerance::tree_weight`'s sum. *)
Theorem T_is_tree_weight s : nonneg s -> StronglySorted Rge s -> T s = tree_weight s.
Proof.
  intros N S. rewrite <- T_sorted_is_tree_weight. unfold T, T_sorted.
  apply sum_ext. intros. apply top_sorted; assumption.
Qed.

(** Lemma 1 as the judge evaluates it: for every tree whose leaves' magnitudes, sorted
    decreasingly, are s, |Ŝ − S| ≤ u·(1+u)^(d−1)·tree_weight(s). *)
Theorem sum_error_sorted_weight p { prec_gt_0_ : Prec_gt_0 p } choice t s :
  Permutation (mags t) s -> StronglySorted Rge s ->
  Rabs (rounded_sum (round radix2 (FLX_exp p) (Znearest choice)) t - exact_sum t)
  <= u p * (1 + u p) ^ (length s - 1) * tree_weight s.
Proof.
  intros P S. rewrite <- (Permutation_length P), mags_length, <- T_is_tree_weight, <- (T_perm _ _ P).
  - apply sum_error_tree_weight; exact prec_gt_0_.
  - apply (Permutation_Forall P), mags_nonneg.
  - exact S.
Qed.

(** T is monotone in its entries: magnitudes bounded entry by entry by a list a give the bound
    with T(a) (item 6 takes a_i = c₃(|δ_i| + e₂)², above every square the kernel sums). *)
Lemma top_le_entries m l a : Forall2 Rle l a -> top m l <= top m a.
Proof.
  intros H. revert m. induction H as [|x y l a Hxy H IH]; intros m; [simpl; lra|].
  destruct m as [|m]; simpl; [lra|].
  apply Rmax_lub.
  - eapply Rle_trans; [|apply Rmax_l]. pose proof (IH m). lra.
  - eapply Rle_trans; [|apply Rmax_r]. apply IH.
Qed.

Lemma forall2_length (l a : list R) : Forall2 Rle l a -> length l = length a.
Proof. induction 1; simpl; congruence. Qed.

Lemma T_le_entries l a : Forall2 Rle l a -> T l <= T a.
Proof.
  intros H. unfold T. rewrite (forall2_length _ _ H). apply sum_le. intros. apply top_le_entries, H.
Qed.

Theorem sum_error_dominated p { prec_gt_0_ : Prec_gt_0 p } choice t a :
  Forall2 Rle (mags t) a ->
  Rabs (rounded_sum (round radix2 (FLX_exp p) (Znearest choice)) t - exact_sum t)
  <= u p * (1 + u p) ^ (length a - 1) * T a.
Proof.
  intros H. rewrite <- (forall2_length _ _ H), mags_length.
  eapply Rle_trans; [apply sum_error_tree_weight; exact prec_gt_0_|].
  apply Rmult_le_compat_l; [|apply T_le_entries, H].
  apply Rmult_le_pos; [apply u_nonneg|apply pow_le; pose proof (u_nonneg p); lra].
Qed.
