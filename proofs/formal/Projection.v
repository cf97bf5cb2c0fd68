(** Brody et al. 2023 eq. (4), App. C: the centring matrix P = I − 11ᵀ/d, for every d ≥ 1. *)
From Coq Require Import Reals Lra Lia.
From Normoracle Require Import Sums.
Open Scope R_scope.

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

End Projection.
