(** The judge's per-operation lemmas (crates/oracle/src/judge/tolerance.rs, items 2, 5, 7 and 8): the mean's
    division, the centring, the scale's square root and reciprocal, and the output's three
    roundings — rounding to nearest (any tie rule, so ties-to-even too) without underflow or
    overflow (Flocq's FLX), u = 2^-p. *)
From Coq Require Import Reals Lra Lia ZArith.
From Flocq Require Import Core Relative.
From Normoracle Require Import Summation.
Open Scope R_scope.

Section Scale.
Variable p : Z.
Context { prec_gt_0_ : Prec_gt_0 p }.
Variable choice : Z -> bool.

Notation u := (u p).
Notation fl := (round radix2 (FLX_exp p) (Znearest choice)).

Lemma fl_rel x : exists e, Rabs e <= u /\ fl x = x * (1 + e).
Proof. exact (relative_error_N_FLX_ex radix2 p prec_gt_0_ choice x). Qed.

Lemma one_plus_le e : Rabs e <= u -> Rabs (1 + e) <= 1 + u.
Proof. intros H. apply Rabs_le_inv in H. apply Rabs_le. lra. Qed.

(** Item 2's division: μ̂ = fl(Ŝ/d) or fl(Ŝ·fl(1/d)) errs by at most
    (1+u)²·E_S/d + (2u+u²)·|S/d| when |Ŝ − S| ≤ E_S. *)
Lemma two_roundings_rel e1 e2 : Rabs e1 <= u -> Rabs e2 <= u ->
  Rabs ((1 + e1) * (1 + e2) - 1) <= 2 * u + u * u /\ Rabs ((1 + e1) * (1 + e2)) <= (1 + u) ^ 2.
Proof.
  intros H1 H2. pose proof (Rabs_pos e1). pose proof (Rabs_pos e2). split.
  - replace ((1 + e1) * (1 + e2) - 1) with (e1 + e2 + e1 * e2) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. eapply Rle_trans; [apply Rplus_le_compat_l, Req_le, Rabs_mult|].
    eapply Rle_trans; [apply Rplus_le_compat_r, Rabs_triang|].
    assert (Rabs e1 * Rabs e2 <= u * u) by (apply Rmult_le_compat; assumption). lra.
  - rewrite Rabs_mult. simpl. rewrite Rmult_1_r.
    apply Rmult_le_compat; try apply Rabs_pos; apply one_plus_le; assumption.
Qed.

Theorem mean_division S Sh dR ES :
  0 < dR -> Rabs (Sh - S) <= ES ->
  Rabs (fl (Sh / dR) - S / dR) <= (1 + u) ^ 2 * ES / dR + (2 * u + u * u) * Rabs (S / dR)
  /\ Rabs (fl (Sh * fl (1 / dR)) - S / dR)
     <= (1 + u) ^ 2 * ES / dR + (2 * u + u * u) * Rabs (S / dR).
Proof.
  intros Hd HS.
  assert (Key : forall e1 e2, Rabs e1 <= u -> Rabs e2 <= u ->
    Rabs (Sh / dR * ((1 + e1) * (1 + e2)) - S / dR)
    <= (1 + u) ^ 2 * ES / dR + (2 * u + u * u) * Rabs (S / dR)).
  { intros e1 e2 H1 H2. destruct (two_roundings_rel e1 e2 H1 H2) as [Ht Hc].
    set (c := (1 + e1) * (1 + e2)) in *.
    replace (Sh / dR * c - S / dR) with ((Sh - S) / dR * c + S / dR * (c - 1)) by (field; lra).
    eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
    unfold Rdiv at 1. rewrite Rabs_mult, (Rabs_pos_eq (/ dR)) by (apply Rlt_le, Rinv_0_lt_compat; lra).
    assert (Rabs (Sh - S) * / dR <= ES / dR) by (apply Rmult_le_compat_r; [apply Rlt_le, Rinv_0_lt_compat|]; lra).
    apply Rplus_le_compat.
    - replace ((1 + u) ^ 2 * ES / dR) with (ES / dR * (1 + u) ^ 2) by (field; lra).
      apply Rmult_le_compat; try assumption; try apply Rabs_pos.
      apply Rmult_le_pos; [apply Rabs_pos|apply Rlt_le, Rinv_0_lt_compat; lra].
    - rewrite Rmult_comm. apply Rmult_le_compat_r; [apply Rabs_pos|assumption]. }
  split.
  - destruct (fl_rel (Sh / dR)) as [e [He ->]].
    replace (Sh / dR * (1 + e)) with (Sh / dR * ((1 + e) * (1 + 0))) by ring.
    apply (Key e 0 He). rewrite Rabs_R0; apply u_nonneg.
  - destruct (fl_rel (1 / dR)) as [e1 [H1 ->]]. destruct (fl_rel (Sh * (1 / dR * (1 + e1)))) as [e2 [H2 ->]].
    replace (Sh * (1 / dR * (1 + e1)) * (1 + e2)) with (Sh / dR * ((1 + e1) * (1 + e2))) by (field; lra).
    apply Key; assumption.
Qed.

(** Item 5, centring: |μ̂ − μ| ≤ e_μ gives |fl(x − μ̂) − (x − μ)| ≤ (1+u)·e_μ + u·|x − μ|. *)
Theorem centring x mu muh e_mu : Rabs (muh - mu) <= e_mu ->
  Rabs (fl (x - muh) - (x - mu)) <= (1 + u) * e_mu + u * Rabs (x - mu).
Proof.
  intros H. destruct (fl_rel (x - muh)) as [e [He ->]].
  replace ((x - muh) * (1 + e) - (x - mu)) with (- (muh - mu) * (1 + e) + (x - mu) * e) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, Rabs_Ropp.
  rewrite (Rmult_comm (1 + u)). apply Rplus_le_compat.
  - apply Rmult_le_compat; try apply Rabs_pos; [assumption|apply one_plus_le; assumption].
  - rewrite (Rmult_comm u). apply Rmult_le_compat_l; [apply Rabs_pos|assumption].
Qed.

(** Item 7, ε's addition: |v̂ − q| ≤ E_v, q ≥ 0, ε ≥ 0 give |fl(v̂ + ε) − (q + ε)| ≤
    E_w = E_v + u·((q + ε) + E_v). *)
Theorem add_eps vh q eps Ev : 0 <= q -> 0 <= eps -> Rabs (vh - q) <= Ev ->
  Rabs (fl (vh + eps) - (q + eps)) <= Ev + u * ((q + eps) + Ev).
Proof.
  intros Hq He Hv. destruct (fl_rel (vh + eps)) as [e [He' ->]].
  replace ((vh + eps) * (1 + e) - (q + eps)) with ((vh - q) + (vh + eps) * e) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. apply Rplus_le_compat; [exact Hv|].
  rewrite Rabs_mult, Rmult_comm. apply Rmult_le_compat; try apply Rabs_pos; [exact He'|].
  apply Rabs_le_inv in Hv. apply Rabs_le. lra.
Qed.

(** Item 7: |√(1+t) − 1| ≤ τ/(1 + √(1−τ)) for |t| ≤ τ < 1. *)
Lemma sqrt_one_plus t tau : Rabs t <= tau -> tau < 1 ->
  Rabs (sqrt (1 + t) - 1) <= tau / (1 + sqrt (1 - tau)).
Proof.
  intros Ht Htau. pose proof (Rabs_pos t). apply Rabs_le_inv in Ht as Ht'.
  assert (H1 : sqrt (1 - tau) <= sqrt (1 + t)) by (apply sqrt_le_1_alt; lra).
  pose proof (sqrt_pos (1 - tau)).
  assert (Hs : sqrt (1 + t) * sqrt (1 + t) = 1 + t) by (apply sqrt_sqrt; lra).
  assert (E : sqrt (1 + t) - 1 = t * / (sqrt (1 + t) + 1)).
  { apply Rmult_eq_reg_r with (sqrt (1 + t) + 1); [|lra].
    rewrite Rmult_assoc, Rinv_l, Rmult_1_r by lra.
    replace ((sqrt (1 + t) - 1) * (sqrt (1 + t) + 1)) with (sqrt (1 + t) * sqrt (1 + t) - 1) by ring.
    rewrite Hs. ring. }
  rewrite E.
  rewrite Rabs_mult, (Rabs_pos_eq (/ _)) by (apply Rlt_le, Rinv_0_lt_compat; lra).
  unfold Rdiv. apply Rmult_le_compat; try assumption.
  - apply Rlt_le, Rinv_0_lt_compat; lra.
  - apply Rinv_le_contravar; lra.
Qed.

(** Item 7, ε inside: from |w − s²| ≤ E_w (w = fl(v̂ + ε)), τ = E_w/s² < 1, the computed
    scale ŝ = fl(√w) satisfies |ŝ − s| ≤ s·((1+u)·τ/(1 + √(1−τ)) + u). *)
Theorem scale_inside w s Ew : 0 < s -> Rabs (w - s * s) <= Ew -> Ew / (s * s) < 1 ->
  Rabs (fl (sqrt w) - s) <= s * ((1 + u) * (Ew / (s * s)) / (1 + sqrt (1 - Ew / (s * s))) + u).
Proof.
  intros Hs Hw Htau. set (tau := Ew / (s * s)) in *. set (t := (w - s * s) / (s * s)).
  assert (Hss : 0 < s * s) by nra.
  assert (Ht : Rabs t <= tau).
  { unfold t, tau, Rdiv. rewrite Rabs_mult, (Rabs_pos_eq (/ (s * s))) by (apply Rlt_le, Rinv_0_lt_compat; lra).
    apply Rmult_le_compat_r; [apply Rlt_le, Rinv_0_lt_compat|]; lra. }
  assert (Hw' : w = s * s * (1 + t)) by (unfold t; field; lra).
  pose proof (Rabs_le_inv _ _ Ht) as Htau0.
  assert (Hroot : sqrt w = s * sqrt (1 + t)).
  { rewrite Hw', sqrt_mult by lra. now rewrite sqrt_square by lra. }
  destruct (fl_rel (sqrt w)) as [e [He ->]]. rewrite Hroot.
  pose proof (sqrt_one_plus t tau Ht Htau) as K.
  replace (s * sqrt (1 + t) * (1 + e) - s) with (s * ((sqrt (1 + t) - 1) * (1 + e) + e)) by ring.
  rewrite Rabs_mult, (Rabs_pos_eq s) by lra. apply Rmult_le_compat_l; [lra|].
  eapply Rle_trans; [apply Rabs_triang|]. rewrite Rabs_mult. apply Rplus_le_compat; [|assumption].
  rewrite Rmult_comm. unfold Rdiv. rewrite Rmult_assoc.
  apply Rmult_le_compat; try apply Rabs_pos; [apply one_plus_le; assumption|exact K].
Qed.

(** Item 7, ε outside: |√v̂ − √q| ≤ min(√E_v, E_v/√q) … *)
Lemma sqrt_diff_root a b E : 0 <= a -> 0 <= b -> Rabs (a - b) <= E -> Rabs (sqrt a - sqrt b) <= sqrt E.
Proof.
  intros Ha Hb H. pose proof (sqrt_pos a). pose proof (sqrt_pos b).
  assert (Sa : sqrt a * sqrt a = a) by (apply sqrt_sqrt; lra).
  assert (Sb : sqrt b * sqrt b = b) by (apply sqrt_sqrt; lra).
  rewrite <- (sqrt_Rsqr (Rabs (sqrt a - sqrt b))) by apply Rabs_pos.
  apply sqrt_le_1_alt. rewrite <- Rsqr_abs. unfold Rsqr. apply Rabs_le_inv in H.
  destruct (Rle_or_lt (sqrt b) (sqrt a)); nra.
Qed.

Lemma sqrt_diff_quotient a b E : 0 <= a -> 0 < b -> Rabs (a - b) <= E ->
  Rabs (sqrt a - sqrt b) <= E / sqrt b.
Proof.
  intros Ha Hb H. pose proof (sqrt_pos a). pose proof (sqrt_lt_R0 b Hb).
  assert (Sa : sqrt a * sqrt a = a) by (apply sqrt_sqrt; lra).
  assert (Sb : sqrt b * sqrt b = b) by (apply sqrt_sqrt; lra).
  replace (sqrt a - sqrt b) with ((a - b) / (sqrt a + sqrt b)) by (field_simplify_eq; nra || lra).
  unfold Rdiv. rewrite Rabs_mult, (Rabs_pos_eq (/ _)) by (apply Rlt_le, Rinv_0_lt_compat; lra).
  apply Rmult_le_compat; try apply Rabs_pos; try (apply Rlt_le, Rinv_0_lt_compat; lra); [exact H|].
  apply Rinv_le_contravar; lra.
Qed.

(** … and the two roundings of ŝ = fl(fl(√v̂) + ε) add
    |ŝ − s| ≤ (1+u)((1+u)·M + u√q) + u·s, s = √q + ε, for |√v̂ − √q| ≤ M. *)
Theorem scale_outside vh q eps M : 0 <= q -> 0 <= eps -> Rabs (sqrt vh - sqrt q) <= M ->
  Rabs (fl (fl (sqrt vh) + eps) - (sqrt q + eps))
  <= (1 + u) * ((1 + u) * M + u * sqrt q) + u * (sqrt q + eps).
Proof.
  intros Hq He HM. pose proof (sqrt_pos q). pose proof (u_nonneg p).
  destruct (fl_rel (sqrt vh)) as [e1 [H1 ->]]. destruct (fl_rel (sqrt vh * (1 + e1) + eps)) as [e2 [H2 ->]].
  set (r := sqrt vh * (1 + e1)).
  assert (Hr : Rabs (r - sqrt q) <= (1 + u) * M + u * sqrt q).
  { unfold r. replace (sqrt vh * (1 + e1) - sqrt q) with ((sqrt vh - sqrt q) * (1 + e1) + sqrt q * e1) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq (sqrt q)) by lra.
    apply Rplus_le_compat.
    - rewrite Rmult_comm. apply Rmult_le_compat; try apply Rabs_pos; [apply one_plus_le|]; assumption.
    - rewrite Rmult_comm. apply Rmult_le_compat_r; assumption. }
  replace ((r + eps) * (1 + e2) - (sqrt q + eps)) with ((r - sqrt q) * (1 + e2) + (sqrt q + eps) * e2) by ring.
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult, (Rabs_pos_eq (sqrt q + eps)) by lra.
  apply Rplus_le_compat.
  - rewrite Rmult_comm. apply Rmult_le_compat; try apply Rabs_pos; [apply one_plus_le|]; assumption.
  - rewrite Rmult_comm. apply Rmult_le_compat_r; [lra|assumption].
Qed.

(** Item 7, the reciprocal: |ŝ − s| ≤ E_s with E_s/s < 1 gives |fl(1/ŝ)·s − 1| ≤ ρ =
    (1+u)/(1 − E_s/s) − 1. *)
Theorem reciprocal s sh Es : 0 < s -> Rabs (sh - s) <= Es -> Es / s < 1 ->
  Rabs (fl (1 / sh) * s - 1) <= (1 + u) / (1 - Es / s) - 1.
Proof.
  intros Hs Hsh HE. set (E := Es / s) in *. pose proof (u_nonneg p).
  assert (HEs : Es = E * s) by (unfold E; field; lra).
  assert (H0 : 0 <= E).
  { unfold E, Rdiv. apply Rmult_le_pos; [|apply Rlt_le, Rinv_0_lt_compat; lra].
    pose proof (Rabs_pos (sh - s)). lra. }
  apply Rabs_le_inv in Hsh. rewrite HEs in Hsh.
  assert (Hsh0 : 0 < sh) by nra.
  set (q := s / sh). assert (Hq : q * sh = s) by (unfold q; field; lra).
  assert (Hq0 : 0 < q) by (unfold q; apply Rdiv_lt_0_compat; lra).
  set (a := 1 / (1 - E)). set (b := 1 / (1 + E)).
  assert (Ha : q <= a).
  { unfold a. apply Rmult_le_reg_r with (1 - E); [lra|].
    replace (1 / (1 - E) * (1 - E)) with 1 by (field; lra). nra. }
  assert (Hb : b <= q).
  { unfold b. apply Rmult_le_reg_r with (1 + E); [lra|].
    replace (1 / (1 + E) * (1 + E)) with 1 by (field; lra). nra. }
  assert (Hab : 0 <= b * (1 - u) + a * (1 + u) - 2).
  { replace (b * (1 - u) + a * (1 + u) - 2) with (2 * E * (u + E) / ((1 - E) * (1 + E)))
      by (unfold a, b; field; lra).
    unfold Rdiv. apply Rmult_le_pos; [apply Rmult_le_pos; lra|apply Rlt_le, Rinv_0_lt_compat; nra]. }
  destruct (fl_rel (1 / sh)) as [e [He ->]]. apply Rabs_le_inv in He.
  replace (1 / sh * (1 + e) * s) with (q * (1 + e)) by (unfold q; field; lra).
  replace ((1 + u) / (1 - E)) with (a * (1 + u)) by (unfold a; field; lra).
  pose proof (u_le_half p).
  assert (q * (1 - u) <= q * (1 + e)) by (apply Rmult_le_compat_l; lra).
  assert (q * (1 + e) <= q * (1 + u)) by (apply Rmult_le_compat_l; lra).
  assert (b * (1 - u) <= q * (1 - u)) by (apply Rmult_le_compat_r; lra).
  assert (q * (1 + u) <= a * (1 + u)) by (apply Rmult_le_compat_r; lra).
  apply Rabs_le. split; lra.
Qed.

(** Item 8: with |δ̂ − δ| ≤ (1+u)e_μ + u|δ| and |r̂·s − 1| ≤ ρ, z = δ/s:
    |δ̂·r̂ − z| ≤ A = ((1+u)e_μ/s + u|z|)(1+ρ) + |z|ρ. *)
Theorem normalized delta deltah rh s e_mu rho : 0 < s ->
  Rabs (deltah - delta) <= (1 + u) * e_mu + u * Rabs delta -> Rabs (rh * s - 1) <= rho ->
  Rabs (deltah * rh - delta / s)
  <= ((1 + u) * e_mu / s + u * Rabs (delta / s)) * (1 + rho) + Rabs (delta / s) * rho.
Proof.
  intros Hs Hd Hr. set (k := rh * s) in *.
  replace (deltah * rh - delta / s) with ((deltah - delta) / s * k + delta / s * (k - 1))
    by (unfold k; field; lra).
  assert (Hrs : Rabs k <= 1 + rho).
  { replace k with (1 + (k - 1)) by ring. eapply Rle_trans; [apply Rabs_triang|].
    rewrite Rabs_R1. lra. }
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !(Rabs_mult _ k), (Rabs_mult _ (k - 1)).
  apply Rplus_le_compat; [|apply Rmult_le_compat_l; [apply Rabs_pos|assumption]].
  apply Rmult_le_compat; try apply Rabs_pos; [|assumption].
  unfold Rdiv. rewrite !Rabs_mult, !(Rabs_pos_eq (/ s)) by (apply Rlt_le, Rinv_0_lt_compat; lra).
  replace ((1 + u) * e_mu * / s + u * (Rabs delta * / s)) with (((1 + u) * e_mu + u * Rabs delta) * / s) by ring.
  apply Rmult_le_compat_r; [apply Rlt_le, Rinv_0_lt_compat; lra|assumption].
Qed.

(** Item 8, the output's three roundings (either order of the two products; an FMA is the case
    of one π being 0): |δ̂·r̂ − z| ≤ A gives an output within
    c₃·|γ|·A + (c₃ − 1)·|γ|·|z| + u·|β| of γ·z + β, c₃ = (1+u)³. *)
Theorem output a z gamma beta A p0 p1 p2 :
  Rabs p0 <= u -> Rabs p1 <= u -> Rabs p2 <= u -> Rabs (a - z) <= A ->
  Rabs ((gamma * a * (1 + p0) * (1 + p1) + beta) * (1 + p2) - (gamma * z + beta))
  <= (1 + u) ^ 3 * Rabs gamma * A + ((1 + u) ^ 3 - 1) * Rabs gamma * Rabs z + u * Rabs beta.
Proof.
  intros H0 H1 H2 HA. pose proof (u_nonneg p).
  set (c := (1 + p0) * (1 + p1) * (1 + p2)).
  assert (Hc : Rabs c <= (1 + u) ^ 3).
  { unfold c. rewrite !Rabs_mult.
    pose proof (one_plus_le p0 H0). pose proof (one_plus_le p1 H1). pose proof (one_plus_le p2 H2).
    assert (Rabs (1 + p0) * Rabs (1 + p1) <= (1 + u) * (1 + u))
      by (apply Rmult_le_compat; (apply Rabs_pos || assumption)).
    replace ((1 + u) ^ 3) with ((1 + u) * (1 + u) * (1 + u)) by ring.
    apply Rmult_le_compat; try assumption; [apply Rmult_le_pos|]; apply Rabs_pos. }
  assert (Hc1 : Rabs (c - 1) <= (1 + u) ^ 3 - 1).
  { pose proof (u_le_half p). apply Rabs_le_inv in H0, H1, H2. apply Rabs_le. unfold c.
    assert ((1 - u) * (1 - u) <= (1 + p0) * (1 + p1)) by (apply Rmult_le_compat; lra).
    assert ((1 + p0) * (1 + p1) <= (1 + u) * (1 + u)) by (apply Rmult_le_compat; lra).
    assert ((1 - u) * (1 - u) * (1 - u) <= (1 + p0) * (1 + p1) * (1 + p2))
      by (apply Rmult_le_compat; try lra; apply Rmult_le_pos; lra).
    assert ((1 + p0) * (1 + p1) * (1 + p2) <= (1 + u) * (1 + u) * (1 + u))
      by (apply Rmult_le_compat; try lra; apply Rmult_le_pos; lra).
    assert ((1 - u) * (1 - u) * (1 - u) = 2 - (1 + u) * (1 + u) * (1 + u) + 6 * (u * u)) by ring.
    assert (0 <= u * u) by (apply Rmult_le_pos; lra).
    replace ((1 + u) ^ 3) with ((1 + u) * (1 + u) * (1 + u)) by ring. lra. }
  replace ((gamma * a * (1 + p0) * (1 + p1) + beta) * (1 + p2) - (gamma * z + beta))
    with (gamma * ((a - z) * c + z * (c - 1)) + beta * p2) by (unfold c; ring).
  eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult.
  assert (T : Rabs ((a - z) * c + z * (c - 1)) <= A * (1 + u) ^ 3 + Rabs z * ((1 + u) ^ 3 - 1)).
  { eapply Rle_trans; [apply Rabs_triang|]. rewrite !Rabs_mult. apply Rplus_le_compat.
    - apply Rmult_le_compat; try apply Rabs_pos; assumption.
    - apply Rmult_le_compat_l; [apply Rabs_pos|assumption]. }
  assert (Rabs gamma * Rabs ((a - z) * c + z * (c - 1))
          <= Rabs gamma * (A * (1 + u) ^ 3 + Rabs z * ((1 + u) ^ 3 - 1)))
    by (apply Rmult_le_compat_l; [apply Rabs_pos|exact T]).
  assert (Rabs beta * Rabs p2 <= Rabs beta * u) by (apply Rmult_le_compat_l; [apply Rabs_pos|exact H2]).
  lra.
Qed.

End Scale.
