(** Finite sums over the indices 0 … n−1 of a real sequence, and the few facts the
    geometry proofs use. Vectors of dimension d are functions [nat -> R] read on 0 … d−1. *)
From Coq Require Import Reals Lra Lia.
Open Scope R_scope.

Fixpoint sum (n : nat) (f : nat -> R) : R :=
  match n with O => 0 | S m => sum m f + f m end.

Lemma sum_ext n f g : (forall i, (i < n)%nat -> f i = g i) -> sum n f = sum n g.
Proof.
  induction n as [|n IH]; intros H; simpl; [reflexivity|].
  rewrite IH, H; [reflexivity|lia|intros; apply H; lia].
Qed.

Lemma sum_plus n f g : sum n (fun i => f i + g i) = sum n f + sum n g.
Proof. induction n as [|n IH]; simpl; [ring|rewrite IH; ring]. Qed.

Lemma sum_minus n f g : sum n (fun i => f i - g i) = sum n f - sum n g.
Proof. induction n as [|n IH]; simpl; [ring|rewrite IH; ring]. Qed.

Lemma sum_scal_l n c f : sum n (fun i => c * f i) = c * sum n f.
Proof. induction n as [|n IH]; simpl; [ring|rewrite IH; ring]. Qed.

Lemma sum_scal_r n c f : sum n (fun i => f i * c) = sum n f * c.
Proof. induction n as [|n IH]; simpl; [ring|rewrite IH; ring]. Qed.

Lemma sum_const n c : sum n (fun _ => c) = INR n * c.
Proof. induction n as [|n IH]; [simpl; ring|rewrite S_INR; simpl; rewrite IH; ring]. Qed.

Lemma sum_swap n m (f : nat -> nat -> R) :
  sum n (fun i => sum m (fun j => f i j)) = sum m (fun j => sum n (fun i => f i j)).
Proof.
  induction n as [|n IH]; simpl.
  - induction m as [|m IHm]; simpl; [reflexivity|rewrite <- IHm; ring].
  - rewrite IH, <- sum_plus. reflexivity.
Qed.

Lemma sum_nonneg n f : (forall i, (i < n)%nat -> 0 <= f i) -> 0 <= sum n f.
Proof.
  induction n as [|n IH]; intros H; simpl; [lra|].
  assert (0 <= sum n f) by (apply IH; intros; apply H; lia).
  assert (0 <= f n) by (apply H; lia). lra.
Qed.

Lemma sum_le n f g : (forall i, (i < n)%nat -> f i <= g i) -> sum n f <= sum n g.
Proof.
  intros H. assert (Hd : 0 <= sum n (fun i => g i - f i))
    by (apply sum_nonneg; intros i Hi; specialize (H i Hi); lra).
  rewrite sum_minus in Hd. lra.
Qed.

(** A sum of nonnegative terms is 0 only if every term is. *)
Lemma sum_nonneg_zero n f :
  (forall i, (i < n)%nat -> 0 <= f i) -> sum n f = 0 -> forall i, (i < n)%nat -> f i = 0.
Proof.
  induction n as [|n IH]; intros H Hs i Hi; [lia|]. simpl in Hs.
  assert (0 <= sum n f) by (apply sum_nonneg; intros; apply H; lia).
  assert (0 <= f n) by (apply H; lia).
  destruct (Nat.eq_dec i n) as [->|Hn]; [lra|].
  apply IH; [intros; apply H; lia|lra|lia].
Qed.

(** The Kronecker delta picks one term. *)
Definition kron (i j : nat) : R := if Nat.eqb i j then 1 else 0.

Lemma kron_sym i j : kron i j = kron j i.
Proof. unfold kron. now rewrite Nat.eqb_sym. Qed.

Lemma sum_kron n i f : (i < n)%nat -> sum n (fun j => kron i j * f j) = f i.
Proof.
  induction n as [|n IH]; intros Hi; [lia|simpl]. unfold kron at 2.
  destruct (Nat.eq_dec i n) as [->|Hn].
  - rewrite Nat.eqb_refl.
    rewrite (sum_ext n _ (fun _ => 0)); [rewrite sum_const; ring|].
    intros j Hj. unfold kron. replace (Nat.eqb n j) with false; [ring|].
    symmetry; apply Nat.eqb_neq; lia.
  - replace (Nat.eqb i n) with false by (symmetry; apply Nat.eqb_neq; lia).
    rewrite IH; [ring|lia].
Qed.

(** Vectors: dot product, squared norm, norm, mean. *)
Definition dot d (x y : nat -> R) := sum d (fun i => x i * y i).
Definition norm2 d x := dot d x x.
Definition norm d x := sqrt (norm2 d x).
Definition mean d x := sum d x / INR d.

Lemma norm2_nonneg d x : 0 <= norm2 d x.
Proof. apply sum_nonneg. intros. apply Rle_0_sqr. Qed.

(** A vector with a nonzero entry has a positive squared norm. *)
Lemma norm2_pos d x : (exists i, (i < d)%nat /\ x i <> 0) -> 0 < norm2 d x.
Proof.
  intros [i [Hi Hx]]. destruct (Rle_lt_or_eq_dec 0 _ (norm2_nonneg d x)) as [H|H]; [exact H|].
  exfalso. apply Hx. apply Rsqr_0_uniq.
  exact (sum_nonneg_zero d (fun i => x i * x i) (fun i _ => Rle_0_sqr (x i)) (eq_sym H) i Hi).
Qed.

Lemma dot_sym d x y : dot d x y = dot d y x.
Proof. apply sum_ext. intros. ring. Qed.
