(** Brody, Alon, Yahav 2023, §4 Theorem 1 in its closed-hull form: a key in the convex hull of
    the other keys never strictly wins for any query; and, with ε = 0, every LayerNorm output
    is selected by itself as query among keys with other outputs. *)
From Coq Require Import Reals Lra Lia.
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
