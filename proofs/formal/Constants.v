(** Generated from crates/oracle/src/judge/tolerance.rs by normoracle_geometry::theorems::formal::coq_constants;
    tests/formal_proofs.rs fails when this file and the judge differ. Do not edit. *)
From Coq Require Import Reals ZArith.
Open Scope R_scope.

(** Item 2: sums are exact where Σ|x| ≤ 2^(p − grid_headroom_bits + e) (GRID_HEADROOM_BITS). *)
Definition grid_headroom_bits : Z := 0%Z.

(** Items 6, 8, 9: c₃ = (1+u)^output_roundings (OUTPUT_ROUNDINGS). *)
Definition output_roundings : nat := 3%nat.

(** Item 9: the cap √d·(1−u)^-(d + cap_exponent_offset)/2 (CAP_EXPONENT_OFFSET). *)
Definition cap_exponent_offset : nat := 10%nat.

(** Item 2b: the shift's extra node weight over n leaves (tolerance::shifted_weight). *)
Definition shifted_weight_low : R := 1.
Definition shifted_weight_high : R := 2.
Definition shifted_weight_divisor : R := 2.
Definition shifted_weight (n : R) : R :=
  (n - shifted_weight_low) * (n + shifted_weight_high) / shifted_weight_divisor.

(** The f32 accumulation format. *)
Definition p_f32 : Z := 24%Z.
Definition u_f32 : R := (IZR 1 / IZR 16777216).
Definition u_min_f32 : R := (IZR 1 / IZR 713623846352979940529142984724747568191373312).

(** The f64 accumulation format. *)
Definition p_f64 : Z := 53%Z.
Definition u_f64 : R := (IZR 1 / IZR 9007199254740992).
Definition u_min_f64 : R := (IZR 1 / IZR 202402253307310618352495346718917307049556649764142118356901358027430339567995346891960383701437124495187077864316811911389808737385793476867013399940738509921517424276566361364466907742093216341239767678472745068562007483424692698618103355649159556340810056512358769552333414615230502532186327508646006263307707741093494784).
