(** The judge's summation lemmas (crates/oracle/src/judge/tolerance.rs, items 1 and 2), in Flocq: a
    summation tree is any order and any bracketing of the additions — sequential in any
    order, pairwise, blocked, any mix. *)
From Coq Require Import Reals Lra Lia ZArith.
From Flocq Require Import Core Relative.
From Normoracle Require Import Constants.
Open Scope R_scope.

Inductive tree := Leaf (x : R) | Node (l r : tree).

Fixpoint exact_sum t := match t with Leaf x => x | Node l r => exact_sum l + exact_sum r end.
Fixpoint abs_sum t := match t with Leaf x => Rabs x | Node l r => abs_sum l + abs_sum r end.
Fixpoint leaves t : nat := match t with Leaf _ => 1%nat | Node l r => (leaves l + leaves r)%nat end.

(** The tree evaluated with every addition rounded by [rnd]. *)
Fixpoint rounded_sum (rnd : R -> R) t :=
  match t with Leaf x => x | Node l r => rnd (rounded_sum rnd l + rounded_sum rnd r) end.

Lemma abs_sum_nonneg t : 0 <= abs_sum t.
Proof. induction t; simpl; [apply Rabs_pos|lra]. Qed.

Lemma exact_le_abs_sum t : Rabs (exact_sum t) <= abs_sum t.
Proof.
  induction t as [x|l IHl r IHr]; simpl; [lra|].
  eapply Rle_trans; [apply Rabs_triang|lra].
Qed.

Lemma leaves_pos t : (1 <= leaves t)%nat.
Proof. induction t; simpl; lia. Qed.

Section Format.
Variables p emin : Z.
Context { prec_gt_0_ : Prec_gt_0 p }.

Notation fmt := (FLT_exp emin p).
Notation bpow := (bpow radix2).

(** Every leaf is an integer multiple of 2^e. *)
Fixpoint on_grid e t : Prop :=
  match t with
  | Leaf x => exists m : Z, x = IZR m * bpow e
  | Node l r => on_grid e l /\ on_grid e r
  end.

Lemma exact_on_grid e t : on_grid e t -> exists m : Z, exact_sum t = IZR m * bpow e.
Proof.
  induction t as [x|l IHl r IHr]; simpl; [tauto|].
  intros [Hl Hr]. destruct (IHl Hl) as [ml El]. destruct (IHr Hr) as [mr Er].
  exists (ml + mr)%Z. rewrite El, Er, plus_IZR. ring.
Qed.

(** A multiple of 2^e (e ≥ emin) of magnitude at most 2^(p+e) is a float. *)
Lemma grid_format m e :
  (emin <= e)%Z -> Rabs (IZR m * bpow e) <= bpow (p + e) ->
  generic_format radix2 fmt (IZR m * bpow e).
Proof.
  intros He Hm.
  assert (Hp : (0 < p)%Z) by (apply prec_gt_0_).
  rewrite Rabs_mult, (Rabs_pos_eq (bpow e)) in Hm by apply bpow_ge_0.
  rewrite bpow_plus in Hm.
  assert (Hb : IZR (Z.abs m) <= bpow p).
  { rewrite abs_IZR. apply Rmult_le_reg_r with (bpow e); [apply bpow_gt_0|exact Hm]. }
  rewrite <- IZR_Zpower in Hb by lia. apply le_IZR in Hb.
  destruct (Zle_lt_or_eq _ _ Hb) as [Hlt|Heq].
  - apply generic_format_FLT. exact (FLT_spec _ _ _ _ (Float radix2 m e) eq_refl Hlt He).
  - assert (Hv : Rabs (IZR m * bpow e) = bpow (p + e)).
    { rewrite Rabs_mult, (Rabs_pos_eq (bpow e)) by apply bpow_ge_0.
      rewrite <- abs_IZR, Heq, IZR_Zpower by lia. now rewrite <- bpow_plus. }
    assert (Hf : generic_format radix2 fmt (bpow (p + e))).
    { apply generic_format_bpow. unfold FLT_exp. lia. }
    destruct (Rle_or_lt 0 (IZR m * bpow e)) as [Hs|Hs].
    + rewrite Rabs_pos_eq in Hv by exact Hs. now rewrite Hv.
    + rewrite Rabs_left in Hv by exact Hs.
      replace (IZR m * bpow e) with (- bpow (p + e)) by lra. now apply generic_format_opp.
Qed.

(** Item 2, exact sums: leaves on a common grid 2^e (e ≥ emin) whose magnitudes sum to at
    most 2^(p − h + e), h = grid_headroom_bits ≥ 0 (Constants.v), are summed exactly by every
    tree, under every rounding. *)
Theorem sum_exact_on_grid (rnd : R -> Z) { valid_rnd : Valid_rnd rnd } e t :
  (emin <= e)%Z -> on_grid e t -> abs_sum t <= bpow (p - grid_headroom_bits + e) ->
  rounded_sum (round radix2 fmt rnd) t = exact_sum t.
Proof.
  intros He Hg Hh.
  assert (Hs : abs_sum t <= bpow (p + e)).
  { eapply Rle_trans; [exact Hh|]. apply bpow_le. unfold grid_headroom_bits. lia. }
  clear Hh. revert Hg Hs. induction t as [x|l IHl r IHr]; simpl; [reflexivity|].
  intros [Gl Gr] Hs.
  pose proof (abs_sum_nonneg l). pose proof (abs_sum_nonneg r).
  rewrite IHl, IHr by (assumption || lra).
  destruct (exact_on_grid e (Node l r) (conj Gl Gr)) as [m Em]. simpl in Em. rewrite Em.
  apply round_generic; [exact valid_rnd|]. apply grid_format; [exact He|].
  rewrite <- Em. eapply Rle_trans; [apply (exact_le_abs_sum (Node l r))|exact Hs].
Qed.

End Format.

(** Item 1, rounding to nearest without underflow (Flocq's FLX format: unbounded exponents,
    so the hypothesis "no overflow, no underflow" is built in), with u = 2^-p: every tree of
    n leaves errs by at most ((1+u)^(n−1) − 1)·Σ|a| — exact, no first-order term dropped —
    and its result is at most (1+u)^(n−1)·Σ|a| in magnitude. *)
Section Error.
Variable p : Z.
Context { prec_gt_0_ : Prec_gt_0 p }.
Variable choice : Z -> bool.

Definition u := / 2 * bpow radix2 (- p + 1).
Notation fl := (round radix2 (FLX_exp p) (Znearest choice)).

Lemma u_nonneg : 0 <= u.
Proof. unfold u. apply Rmult_le_pos; [lra|apply bpow_ge_0]. Qed.

Lemma u_le_half : u <= / 2.
Proof.
  unfold u. assert (bpow radix2 (- p + 1) <= 1).
  { replace 1 with (bpow radix2 0) by reflexivity. apply bpow_le.
    pose proof prec_gt_0_ as H. unfold Prec_gt_0 in H. lia. }
  lra.
Qed.

Lemma u_is_half_ulp_of_one : u = bpow radix2 (- p).
Proof.
  unfold u. replace (- p + 1)%Z with (1 + - p)%Z by ring.
  rewrite bpow_plus. simpl. unfold Z.pow_pos. simpl. field.
Qed.

Lemma pow_growth n m : (n <= m)%nat -> (1 + u) ^ n <= (1 + u) ^ m.
Proof. intros H. apply Rle_pow; [pose proof u_nonneg; lra|exact H]. Qed.

Theorem sum_error_any_tree t :
  Rabs (rounded_sum fl t - exact_sum t) <= ((1 + u) ^ (leaves t - 1) - 1) * abs_sum t
  /\ Rabs (rounded_sum fl t) <= (1 + u) ^ (leaves t - 1) * abs_sum t.
Proof.
  pose proof u_nonneg as Hu.
  induction t as [x|l [El Bl] r [Er Br]]; simpl.
  { rewrite Rminus_diag_eq, Rabs_R0 by reflexivity. lra. }
  pose proof (leaves_pos l) as Hl. pose proof (leaves_pos r) as Hr.
  set (a := rounded_sum fl l) in *. set (b := rounded_sum fl r) in *.
  set (gl := (1 + u) ^ (leaves l - 1)) in *. set (gr := (1 + u) ^ (leaves r - 1)) in *.
  set (G := (1 + u) ^ (leaves l + leaves r - 1)).
  assert (Hgl : (1 + u) * gl <= G).
  { unfold gl, G. rewrite tech_pow_Rmult. apply pow_growth. lia. }
  assert (Hgr : (1 + u) * gr <= G).
  { unfold gr, G. rewrite tech_pow_Rmult. apply pow_growth. lia. }
  assert (Hgl1 : 1 <= gl) by (unfold gl; apply pow_R1_Rle; lra).
  assert (Hgr1 : 1 <= gr) by (unfold gr; apply pow_R1_Rle; lra).
  pose proof (abs_sum_nonneg l) as Al. pose proof (abs_sum_nonneg r) as Ar.
  destruct (relative_error_N_FLX_ex radix2 p prec_gt_0_ choice (a + b)) as [eps [Heps Hfl]].
  fold u in Heps. rewrite Hfl.
  assert (Hab : Rabs (a + b) <= gl * abs_sum l + gr * abs_sum r)
    by (eapply Rle_trans; [apply Rabs_triang|lra]).
  assert (Hdab : Rabs (eps * (a + b)) <= u * (gl * abs_sum l + gr * abs_sum r)).
  { rewrite Rabs_mult. apply Rmult_le_compat; (apply Rabs_pos || assumption). }
  split.
  - replace ((a + b) * (1 + eps) - (exact_sum l + exact_sum r))
      with ((a - exact_sum l) + (b - exact_sum r) + eps * (a + b)) by ring.
    eapply Rle_trans; [apply Rabs_triang|].
    eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    assert (G * abs_sum l >= (1 + u) * gl * abs_sum l) by (apply Rle_ge, Rmult_le_compat_r; lra).
    assert (G * abs_sum r >= (1 + u) * gr * abs_sum r) by (apply Rle_ge, Rmult_le_compat_r; lra).
    fold G. nra.
  - rewrite Rabs_mult.
    assert (Rabs (1 + eps) <= 1 + u) by (apply Rabs_le; split; apply Rabs_le_inv in Heps; lra).
    assert (Rabs (a + b) * Rabs (1 + eps) <= (gl * abs_sum l + gr * abs_sum r) * (1 + u))
      by (apply Rmult_le_compat; (apply Rabs_pos || assumption)).
    assert (G * abs_sum l >= (1 + u) * gl * abs_sum l) by (apply Rle_ge, Rmult_le_compat_r; lra).
    assert (G * abs_sum r >= (1 + u) * gr * abs_sum r) by (apply Rle_ge, Rmult_le_compat_r; lra).
    fold G. nra.
Qed.

End Error.
