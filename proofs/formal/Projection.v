(** Brody et al. 2023 eq. (4), App. C: the centring matrix P = I − 11ᵀ/d, for every d ≥ 1. *)
From Coq Require Import Reals Lra Lia Classical.
From Normoracle Require Import Sums.
Open Scope R_scope.

(** More than n vectors of R^n are linearly dependent (Steinitz, by elimination of the last
    coordinate): the half of "rank = dimension" that bounds a span's dimension. A family is
    w k i, k < m its vectors, i < n their coordinates. *)
Definition dependent n m (w : nat -> nat -> R) :=
  exists c : nat -> R, (exists k, (k < m)%nat /\ c k <> 0)
                       /\ forall i, (i < n)%nat -> sum m (fun k => c k * w k i) = 0.

Definition skip k0 k : nat := if Nat.ltb k k0 then k else S k.
Definition unskip k0 k : nat := if Nat.ltb k k0 then k else pred k.

Lemma sum_skip m k0 g : (k0 < m)%nat -> sum m g = sum (m - 1) (fun k => g (skip k0 k)) + g k0.
Proof.
  induction m as [|m IH]; intros Hk; [lia|].
  destruct (Nat.eq_dec k0 m) as [->|Hn].
  - simpl. replace (m - 0)%nat with m by lia. f_equal. apply sum_ext. intros k Hk'.
    unfold skip. replace (Nat.ltb k m) with true by (symmetry; apply Nat.ltb_lt; lia). reflexivity.
  - simpl sum at 1. rewrite IH by lia. destruct m as [|m]; [lia|].
    replace (S (S m) - 1)%nat with (S m) by lia. replace (S m - 1)%nat with m by lia.
    cbn [sum]. assert (E : skip k0 m = S m)
      by (unfold skip; replace (Nat.ltb m k0) with false by (symmetry; apply Nat.ltb_ge; lia); reflexivity).
    rewrite E. ring.
Qed.

Theorem more_vectors_dependent n : forall m w, (n < m)%nat -> dependent n m w.
Proof.
  induction n as [|n IH]; intros m w Hm.
  - exists (fun _ => 1). split; [exists 0%nat; split; [lia|lra]|intros; lia].
  - destruct (classic (exists k0, (k0 < m)%nat /\ w k0 n <> 0)) as [[k0 [Hk0 Hw]]|Hno].
    + set (r k := w (skip k0 k) n / w k0 n).
      set (v k i := w (skip k0 k) i - r k * w k0 i).
      destruct (IH (m - 1)%nat v ltac:(lia)) as [c' [[k' [Hk' Hc']] Hz]].
      set (c0 := - sum (m - 1) (fun k => c' k * r k)).
      exists (fun k => if Nat.eqb k k0 then c0 else c' (unskip k0 k)). split.
      * exists (skip k0 k'). split; [unfold skip; destruct (Nat.ltb_spec k' k0); lia|].
        replace (Nat.eqb (skip k0 k') k0) with false
          by (symmetry; apply Nat.eqb_neq; unfold skip; destruct (Nat.ltb_spec k' k0); lia).
        replace (unskip k0 (skip k0 k')) with k'; [exact Hc'|].
        unfold skip, unskip. destruct (Nat.ltb_spec k' k0).
        -- replace (Nat.ltb k' k0) with true by (symmetry; apply Nat.ltb_lt; lia). reflexivity.
        -- replace (Nat.ltb (S k') k0) with false by (symmetry; apply Nat.ltb_ge; lia). reflexivity.
      * intros i Hi. rewrite (sum_skip m k0) by exact Hk0. rewrite Nat.eqb_refl.
        rewrite (sum_ext (m - 1) _ (fun k => c' k * w (skip k0 k) i)).
        2: { intros k Hk. unfold skip, unskip. destruct (Nat.ltb_spec k k0).
             - replace (Nat.eqb k k0) with false by (symmetry; apply Nat.eqb_neq; lia).
               replace (Nat.ltb k k0) with true by (symmetry; apply Nat.ltb_lt; lia). reflexivity.
             - replace (Nat.eqb (S k) k0) with false by (symmetry; apply Nat.eqb_neq; lia).
               replace (Nat.ltb (S k) k0) with false by (symmetry; apply Nat.ltb_ge; lia).
               reflexivity. }
        assert (Hv : sum (m - 1) (fun k => c' k * v k i) = 0).
        { destruct (Nat.eq_dec i n) as [->|Hin]; [|apply Hz; lia].
          rewrite (sum_ext (m - 1) _ (fun _ => 0)); [rewrite sum_const; ring|].
          intros k _. unfold v, r. field. exact Hw. }
        unfold v in Hv. rewrite (sum_ext (m - 1) _ (fun k => c' k * w (skip k0 k) i - c' k * r k * w k0 i))
          in Hv by (intros; ring).
        rewrite sum_minus, sum_scal_r in Hv. unfold c0. lra.
    + destruct (IH m w ltac:(lia)) as [c [Hc Hz]]. exists c. split; [exact Hc|].
      intros i Hi. destruct (Nat.eq_dec i n) as [->|Hin]; [|apply Hz; lia].
      rewrite (sum_ext m _ (fun _ => 0)); [rewrite sum_const; ring|].
      intros k Hk. destruct (Req_dec (w k n) 0) as [->|H]; [ring|].
      exfalso. apply Hno. exists k. split; assumption.
Qed.

Section Projection.
Variable d : nat.
Hypothesis d_pos : (0 < d)%nat.

Let dR_pos : 0 < INR d.
Proof. apply lt_0_INR; exact d_pos. Qed.

(** P's entries, and P applied to x. *)
Definition P (i j : nat) : R := kron i j - / INR d.
Definition apply_P (x : nat -> R) (i : nat) : R := sum d (fun j => P i j * x j).

Theorem P_symmetric i j : P i j = P j i.
Proof. unfold P. now rewrite kron_sym. Qed.

(** Px = x − μ1. *)
Theorem P_apply x i : (i < d)%nat -> apply_P x i = x i - mean d x.
Proof.
  intros Hi. unfold apply_P, P, mean.
  rewrite (sum_ext d _ (fun j => kron i j * x j - / INR d * x j)) by (intros; ring).
  rewrite sum_minus, sum_kron, sum_scal_l by exact Hi. field. lra.
Qed.

(** The column sums of P vanish: 1ᵀP = 0, and P1 = 0. *)
Lemma P_column_sum j : (j < d)%nat -> sum d (fun k => P k j) = 0.
Proof.
  intros Hj. unfold P. rewrite sum_minus, sum_const.
  rewrite (sum_ext d _ (fun k => kron j k * 1)) by (intros; rewrite kron_sym; ring).
  rewrite sum_kron by exact Hj. field. lra.
Qed.

Theorem P_one i : (i < d)%nat -> apply_P (fun _ => 1) i = 0.
Proof.
  intros Hi. rewrite P_apply by exact Hi. unfold mean. rewrite sum_const. field. lra.
Qed.

(** P² = P, entry by entry. *)
Theorem P_idempotent i j :
  (i < d)%nat -> (j < d)%nat -> sum d (fun k => P i k * P k j) = P i j.
Proof.
  intros Hi Hj. change (apply_P (fun k => P k j) i = P i j).
  rewrite P_apply by exact Hi. unfold mean. rewrite P_column_sum by exact Hj. field. lra.
Qed.

(** trace P = d − 1. *)
Theorem P_trace : sum d (fun i => P i i) = INR d - 1.
Proof.
  unfold P. rewrite sum_minus, sum_const.
  rewrite (sum_ext d _ (fun _ => 1)) by (intros; unfold kron; now rewrite Nat.eqb_refl).
  rewrite sum_const. field. lra.
Qed.

(** The image of P is 1⟂ and its kernel is span(1): P fixes exactly the vectors with zero
    sum, and maps exactly the constant vectors to 0. *)
Theorem P_image_perp x : sum d (apply_P x) = 0.
Proof.
  rewrite (sum_ext d _ (fun i => x i - mean d x)) by (intros; apply P_apply; assumption).
  rewrite sum_minus, sum_const. unfold mean. field. lra.
Qed.

Theorem P_fixes_perp x : sum d x = 0 -> forall i, (i < d)%nat -> apply_P x i = x i.
Proof. intros Hs i Hi. rewrite P_apply by exact Hi. unfold mean. rewrite Hs. field. lra. Qed.

Theorem P_kernel x :
  (forall i, (i < d)%nat -> apply_P x i = 0) <-> (forall i j, (i < d)%nat -> (j < d)%nat -> x i = x j).
Proof.
  split.
  - intros H i j Hi Hj. pose proof (H i Hi) as A. pose proof (H j Hj) as B.
    rewrite P_apply in A, B by assumption. lra.
  - intros H i Hi. rewrite P_apply by exact Hi. unfold mean.
    rewrite (sum_ext d x (fun _ => x i)) by (intros k Hk; apply H; assumption).
    rewrite sum_const. field. lra.
Qed.

(** Pythagoras: ‖x‖² = ‖x − μ1‖² + dμ², and x − μ1 ⟂ 1. *)
Theorem centred_pythagoras x :
  norm2 d x = norm2 d (fun i => x i - mean d x) + INR d * mean d x ^ 2.
Proof.
  unfold norm2, dot.
  rewrite (sum_ext d (fun i => (x i - mean d x) * (x i - mean d x))
             (fun i => x i * x i - 2 * mean d x * x i + mean d x ^ 2)) by (intros; ring).
  rewrite sum_plus, sum_minus, sum_scal_l, sum_const.
  unfold mean at 2. field_simplify_eq; [|lra]. unfold mean. field. lra.
Qed.

(** rank P = d − 1: the d − 1 vectors b_j = e_j − e_{d−1} (j < d − 1) lie in P's image (P fixes
    them), are linearly independent, and span the image — every Px is Σ_j (Px)_j·b_j. So the
    image of P, which is 1⟂, has a basis of d − 1 vectors. *)
Definition basis (j i : nat) : R := kron j i - kron (d - 1) i.

Lemma basis_perp j : (j < d)%nat -> sum d (basis j) = 0.
Proof.
  intros Hj. unfold basis. rewrite sum_minus.
  rewrite (sum_ext d (kron j) (fun i => kron j i * 1)) by (intros; ring).
  rewrite (sum_ext d (kron (d - 1)) (fun i => kron (d - 1) i * 1)) by (intros; ring).
  rewrite !sum_kron by lia. ring.
Qed.

Theorem basis_in_image j i : (j < d - 1)%nat -> (i < d)%nat -> apply_P (basis j) i = basis j i.
Proof. intros Hj Hi. apply P_fixes_perp; [apply basis_perp; lia|exact Hi]. Qed.

Lemma sum_kron_out n i f : (n <= i)%nat -> sum n (fun j => kron j i * f j) = 0.
Proof.
  intros Hn. rewrite (sum_ext n _ (fun _ => 0)); [rewrite sum_const; ring|].
  intros j Hj. unfold kron. replace (Nat.eqb j i) with false; [ring|].
  symmetry. apply Nat.eqb_neq. lia.
Qed.

Theorem basis_independent (c : nat -> R) :
  (forall i, (i < d)%nat -> sum (d - 1) (fun j => c j * basis j i) = 0) ->
  forall j, (j < d - 1)%nat -> c j = 0.
Proof.
  intros H j Hj. specialize (H j ltac:(lia)). unfold basis in H.
  rewrite (sum_ext (d - 1) _ (fun k => kron j k * c k - kron k (d - 1) * 0)) in H.
  - rewrite sum_minus, sum_kron in H by exact Hj. rewrite sum_scal_r in H. lra.
  - intros k Hk. unfold kron. rewrite (Nat.eqb_sym j k).
    replace (Nat.eqb (d - 1) j) with false by (symmetry; apply Nat.eqb_neq; lia). ring.
Qed.

Theorem basis_spans (y : nat -> R) : sum d y = 0 ->
  forall i, (i < d)%nat -> y i = sum (d - 1) (fun j => y j * basis j i).
Proof.
  intros Hs i Hi. unfold basis.
  rewrite (sum_ext (d - 1) _ (fun j => kron j i * y j - kron (d - 1) i * y j)) by (intros; ring).
  rewrite sum_minus, sum_scal_l.
  replace d with (S (d - 1)) in Hs by lia. simpl in Hs.
  destruct (Nat.eq_dec i (d - 1)) as [->|Hn].
  - rewrite sum_kron_out by lia. unfold kron. rewrite Nat.eqb_refl. lra.
  - rewrite (sum_ext (d - 1) _ (fun j => kron i j * y j)) by (intros; now rewrite kron_sym).
    rewrite sum_kron by lia. unfold kron. replace (Nat.eqb (d - 1) i) with false
      by (symmetry; apply Nat.eqb_neq; lia). ring.
Qed.

(** … and no d vectors of the image are independent: with the basis above, the largest
    number of independent vectors in P's image — its dimension, P's rank — is d − 1. *)
Theorem image_dependent (w : nat -> nat -> R) :
  (forall k i, (k < d)%nat -> (i < d)%nat -> apply_P (w k) i = w k i) -> dependent d d w.
Proof.
  intros Hw.
  assert (Hs : forall k, (k < d)%nat -> sum d (w k) = 0).
  { intros k Hk. rewrite <- (P_image_perp (w k)). apply sum_ext. intros i Hi. symmetry. apply Hw; assumption. }
  destruct (more_vectors_dependent (d - 1) d w ltac:(lia)) as [c [Hc Hz]].
  exists c. split; [exact Hc|]. intros i Hi.
  destruct (Nat.eq_dec i (d - 1)) as [->|Hn]; [|apply Hz; lia].
  rewrite (sum_ext d _ (fun k => - sum (d - 1) (fun i => c k * w k i))).
  - rewrite (sum_ext d _ (fun k => -1 * sum (d - 1) (fun i => c k * w k i))) by (intros; ring).
    rewrite sum_scal_l, sum_swap, (sum_ext (d - 1) _ (fun _ => 0)) by (intros; apply Hz; lia).
    rewrite sum_const. ring.
  - intros k Hk. specialize (Hs k Hk). replace d with (S (d - 1)) in Hs at 1 by lia. cbn [sum] in Hs.
    rewrite sum_scal_l. replace (w k (d - 1)%nat) with (- sum (d - 1) (w k)) by lra. ring.
Qed.

(** rank P = d − 1, in one statement: the d − 1 vectors b_j are in P's image, independent, and
    every vector of the image is their combination with its first d − 1 entries as
    coefficients; and any d vectors of the image are dependent. *)
Theorem P_rank :
  (forall j i, (j < d - 1)%nat -> (i < d)%nat -> apply_P (basis j) i = basis j i)
  /\ (forall c : nat -> R, (forall i, (i < d)%nat -> sum (d - 1) (fun j => c j * basis j i) = 0) ->
      forall j, (j < d - 1)%nat -> c j = 0)
  /\ (forall x i, (i < d)%nat -> apply_P x i = sum (d - 1) (fun j => apply_P x j * basis j i))
  /\ (forall w : nat -> nat -> R,
      (forall k i, (k < d)%nat -> (i < d)%nat -> apply_P (w k) i = w k i) -> dependent d d w).
Proof.
  split; [exact basis_in_image|split; [exact basis_independent|split; [|exact image_dependent]]].
  intros x. apply basis_spans, P_image_perp.
Qed.

End Projection.
