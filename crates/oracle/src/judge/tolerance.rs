//! The one tolerance formula, and its derivation.
//!
//! # The careful-kernel model
//!
//! A kernel is judged against what a *careful* kernel of its dtype can deliver on the row at
//! hand. Such a kernel accumulates in precision u (u = 2^-24, p = 24 bits, for f16/bf16/f32:
//! f32 accumulation; u = 2^-53, p = 53 for f64), rounds to nearest after every operation,
//! scales a row by a power of two where its squares would overflow (`model::scaling_exponent`),
//! and computes:
//! - **mean** (LayerNorm), one of: (a) S = Σx_i by *any* summation tree — sequential in any
//!   order (sorted, reverse-sorted, as given), pairwise, blocked into lanes, any mix — then
//!   μ̂ = fl(S/d) or fl(S·fl(1/d)); (b) shifted: K = x_j for any j, S' = Σfl(x_i − K) by any
//!   tree, μ̂ = fl(K + fl(S'/d)) (or ·fl(1/d)); (c) Welford: m̂_k = fl(m̂_{k−1} +
//!   fl(fl(x_k − m̂_{k−1})/k)) (or ·fl(1/k)) with M₂ (fused or not), over the row as given,
//!   sorted increasingly or decreasingly, in 1, 8, 16 or 32 strided lanes merged pairwise by
//!   Chan's formula, v̂ = fl(M₂/d) or ·fl(1/d) (`model::welford_kernels`);
//! - **centring** δ̂_i = fl(x_i − μ̂) (RMSNorm: μ̂ = 0, δ_i = x_i);
//! - **sum of squares** (a, b) by any summation tree of fl(δ̂_i²) or of fused δ̂_i·δ̂_i + acc,
//!   then v̂ = fl(Q̂/d) or fl(Q̂·fl(1/d));
//! - **scale** ŝ = fl(√fl(v̂ + ε)) (ε inside) or fl(fl(√v̂) + ε) (outside), r̂ = fl(1/ŝ);
//! - **output** fl(fl(γ_i·fl(δ̂_i·r̂)) + β_i) in either order of the two products, FMA or not,
//!   then one rounding to the output format.
//!
//! # The bound
//!
//! Notation of `exact::stats`: μ, q = σ² (LayerNorm) or mean(x²) (RMSNorm), s = √(q+ε) or
//! √q + ε, δ_i = x_i − μ, Δ = max|δ_i|. T(a) = Σ_k w_k·a_(k), a sorted decreasingly,
//! w_1 = d−1, w_k = d−k+1 (lemma 1); c₃ = (1+u)³. Every statement is an exact inequality
//! (no first-order terms dropped, no probabilistic growth); where a term is 0, the condition
//! that makes it 0 is stated and checked on the row.
//!
//! 1. *Summation lemma.* Any binary summation tree of a_1…a_d in precision u errs by at most
//!    u·Σ_v|Ŝ_v| over its d−1 internal nodes v, and |Ŝ_v| ≤ (1+u)^(d−1)·W_v, W_v the sum of
//!    |a| under v. The nodes holding at least m leaves form a subtree closed under parents;
//!    a lowest one holds ≥ m leaves and every other of its J−1 members adds a child holding
//!    ≥ 1 leaf outside it, so there are J ≤ d−m+1 of them: the counts n_v, sorted, lie below
//!    (d, d−1, …, 2) one by one, and W_v ≤ P_{n_v} (the sum of the n_v largest |a|). Hence
//!    Σ_v W_v ≤ Σ_{m=2}^{d} P_m = T(|a|): |Ŝ − S| ≤ u(1+u)^(d−1)·T(|a|). The sequential sum
//!    of the decreasingly sorted row attains the node weights T, and its error does grow with
//!    them: a constant f32 row errs by ≈ d/4·u·Σ|x| (test
//!    `a_sequential_sum_of_a_constant_row_needs_lemma_1`), so no √d growth factor is sound.
//! 2. *Exact sums.* Let q_x be the largest power of two with every x_i/q_x an integer. If
//!    Σ|x_i| ≤ 2^p·q_x, every node of every tree holds a multiple of q_x of magnitude
//!    ≤ 2^p·q_x, which is representable: no addition rounds, S is exact in any tree (scaling
//!    by a power of two keeps this), and μ̂ is one of the two values fl(S/d), fl(S·fl(1/d)),
//!    computed here (for the narrow formats in f64 as well, so that a kernel accumulating in
//!    f64 passes too): e_sum = the largest of their distances to μ — exactly 0 where all
//!    equal μ (constant rows of short significands, the two-level row 2048/2050). Otherwise
//!    e_sum = (1+u)²·u(1+u)^(d−1)·T(|x|)/d + (2u+u²)|μ| (lemma 1, then the division or the
//!    rounded reciprocal and its product).
//!
//!    2b. *Shifted sums.* |x_i − K| ≤ |δ_i| + Δ for every K among the x_i. On a constant row
//!    every difference is 0 and μ̂ = K = μ: e_shift = 0. If Σ|x| + d·max|x| ≤ 2^p·q_x, every
//!    difference and partial sum is exact, S' = d(μ − K), and e_shift = (1+u)(2u+u²)Δ + u|μ|
//!    (division, then the addition of K). Otherwise, with the differences' roundings and
//!    lemma 1 over |x_i − K| ≤ |δ_i| + Δ: e_shift = (1+u)[(1+u)²·(u·Σ(|δ_i| + Δ) +
//!    u(1+u)^d·(T(|δ|) + Δ(d−1)(d+2)/2))/d + (2u+u²)Δ] + u|μ|.
//! 3. *Welford, a posteriori.* Welford's mean errs by Σ_k (k/d)·ρ_k, ρ_k its k-th update's
//!    rounding; the a-priori bound (d+1)/2·u·max|x| is nearly attained where fl(x − m̂)/k
//!    drops below half an ULP of m̂ and the mean stops moving (13 % of σ on a two-level f16
//!    row of d = 4096, test `welford_on_a_two_level_row_needs_its_own_errors`), and its M₂ is
//!    first order in those errors. Neither can be bounded usefully before the row is known,
//!    and every Welford kernel of the model is deterministic once it is: the bound runs them
//!    all (`model::welford_errors`: in the accumulation format, after the same scaling) and
//!    takes e_W = max|μ̂ − μ| and V_W = max|v̂ − q| over them — exactly their errors. On a
//!    constant row both are 0 (m̂_1 = x_1, every later x_k − m̂_{k−1} is 0).
//! 4. *Mean.* e_μ = max(e_sum, e_shift, e_W) (0 for RMSNorm); e_2 = max(e_sum, e_shift) for
//!    the two-pass variance.
//! 5. *Centring.* δ̂_i = (δ_i − D)(1+θ_i), D = μ̂ − μ, |θ_i| ≤ u: |δ̂_i − δ_i| ≤ (1+u)e_μ + u|δ_i|.
//! 6. *Variance.* Because Σδ_i = 0, Σ(δ_i − D)² = dq + dD² exactly, so
//!    |Σδ̂_i² − dq| ≤ (2u+u²)(dq + de_2²) + d·e_2². The squares round by u·Σδ̂², the tree by
//!    u(1+u)^(d−1)·T(a) with a_i = c₃(|δ_i| + e_2)² ≥ every leaf, the division by (1+u)²:
//!    |v̂ − q| ≤ E_v = max((1+u)²·E_Q/d + (2u+u²)q, V_W), where
//!    E_Q = (2u+u²)(dq + de_2²) + d·e_2² + u(1+u)²(dq + de_2²) + u(1+u)^(d−1)·T(a).
//! 7. *Scale.* Inside: |fl(v̂ + ε) − s²| ≤ E_w = E_v + u(s² + E_v); with τ = E_w/s² < 1,
//!    |√(1+t) − 1| ≤ τ/(1 + √(1−τ)) for |t| ≤ τ, so |ŝ − s| ≤ s·[(1+u)τ/(1+√(1−τ)) + u].
//!    Outside: |√v̂ − √q| ≤ min(√E_v, E_v/√q), two roundings follow:
//!    |ŝ − s| ≤ (1+u)((1+u)·min(…) + u√q) + u·s. Either way, with E_s/s < 1,
//!    |r̂·s − 1| ≤ ρ = (1+u)/(1 − E_s/s) − 1 (∞ otherwise: no bound).
//! 8. *Output.* With z_i = δ_i/s: |δ̂_i·r̂ − z_i| ≤ A_i = ((1+u)e_μ/s + u|z_i|)(1+ρ) + |z_i|ρ,
//!    and the three roundings of γ·(δ̂·r̂) + β (each |π| ≤ u, FMA only removes one) give
//!
//!      B_i = E·[ c₃|γ_i|·A_i + (c₃ − 1)|γ_i||z_i| + u|β_i| + 2|γ_i|·d·u_min/s ],
//!
//!    u_min the accumulation format's smallest subnormal: the earlier formula's allowance for
//!    squares and differences of tiny rows that underflow (kept as it was, not re-derived);
//!    E = 1 + 2^-30 the margin for evaluating B_i itself (`Wide`, 53-bit roundings of at most
//!    a few·d nonnegative terms, d < 2^20).
//!
//! 9. *Cap.* A two-pass kernel's |ẑ_i| = |δ̂_i|·r̂(1+π) never exceeds √d·(1−u)^-(d+10)/2:
//!    δ̂_i² ≤ Σδ̂_j², and the computed sum of those nonnegative terms, its division by d, ε's
//!    addition and the root lose at most a factor (1−u)^(d+6)/2 (Cauchy–Schwarz); a Welford
//!    kernel's |ẑ_i| ≤ c₃(|δ_i| + e_W)/ŝ_min, ŝ_min the least of their computed scales
//!    (lowered by (1−u)²; no cap where one is 0). With Z_i the larger of the two,
//!    |ŷ − y_i| ≤ c₃|γ_i|(Z_i + |z_i|) + u|β_i| + the underflow term, and B_i is the lesser of
//!    this and item 8's — what stays finite where ρ = ∞ (rows whose mean error may exceed σ:
//!    f32 rows of |μ|/σ ≳ 1/(d·u)).
//!
//! Where it collapses: on a constant row whose sums are exact (2), e_μ = 0 and every z_i = 0,
//! so B_i = u|β_i| plus the underflow term — the output must be β_i up to rounding. On the
//! two-level f16 row 2048/2050 (d = 768, ε = 1e-12) the sums are exact and only the Welford
//! kernels' measured errors remain: B_i ≈ 2e-4·|γ| where the κ-based bound allowed 4.7 %.
//!
//! An output o passes the bound when |o − y_i| ≤ B_i + ulp(max(|o|, |y_i|)), the last term
//! being the kernel's own final rounding to its output format. An output ±∞ passes where the
//! bound reaches the format's overflow threshold T on its side, |±T − y_i| ≤ B_i: there a
//! kernel within the bound may round to ∞ (`bound_use`); a NaN output never passes.
//!
//! What it rejects: every classic bug makes an O(1) relative error on some family of the
//! battery — one-pass variance (error ≈ u·κ², κ = M₁/s, against a bound linear in κ), ε
//! outside the root (rows with σ² ≈ ε), the (d−1) variance (relative 1/(2d)), no mean
//! subtraction, dropped SIMD tails, γ/β misindexed, statistics leaking across rows, and sums
//! of squares overflowing or underflowing in the kernel's format.

use super::model::{welford_errors, WelfordErrors};
use crate::dtype::{pow2, Dtype};
use crate::exact::RowStats;
use crate::problem::{EpsConvention, Op};
use crate::wide::Wide;
use rug::Float;
use std::cmp::Ordering;

/// E − 1: the relative margin for evaluating B_i in 53-bit `Wide` arithmetic.
const EVALUATION_MARGIN: f64 = 1.0 / (1u64 << 30) as f64;

// The structural constants of the bound. `theorems::formal::coq_constants` writes each one
// into `proofs/formal/Constants.v`, whose names the Coq development uses in place of
// literals, so that changing one here without the proofs fails `tests/formal_proofs.rs`.

/// Item 2: the exact-sum condition is Σ|x_i| ≤ 2^(p − GRID_HEADROOM_BITS)·q_x (Coq:
/// `grid_headroom_bits`; `sum_exact_on_grid` holds for every headroom ≥ 0).
pub const GRID_HEADROOM_BITS: i32 = 0;

/// Items 6, 8, 9: c₃ = (1+u)^OUTPUT_ROUNDINGS, the roundings of the output γ·(δ̂·r̂) + β (Coq:
/// `output_roundings`, in `c3`).
pub const OUTPUT_ROUNDINGS: i32 = 3;

/// Item 9: the cap √d·(1−u)^-(d + CAP_EXPONENT_OFFSET)/2 (Coq: `cap_exponent_offset`, in
/// `two_pass_cap`).
pub const CAP_EXPONENT_OFFSET: i32 = 10;

/// Item 2b: the shift's extra node weight over d leaves, (d − LOW)(d + HIGH)/DIVISOR (Coq:
/// `shifted_weight_low`, `_high`, `_divisor`, in `shifted_weight`, bounded by `iw_one`).
pub const SHIFTED_WEIGHT_LOW: i32 = 1;
/// See `SHIFTED_WEIGHT_LOW`.
pub const SHIFTED_WEIGHT_HIGH: i32 = 2;
/// See `SHIFTED_WEIGHT_LOW`.
pub const SHIFTED_WEIGHT_DIVISOR: i32 = 2;

/// c₃ = (1+u)^OUTPUT_ROUNDINGS.
fn c3(u: f64) -> f64 {
    (1.0 + u).powi(OUTPUT_ROUNDINGS)
}

/// Item 2b's weight of the shift over d leaves: (d − 1)(d + 2)/2 with the constants above.
pub fn shifted_weight(d: usize) -> f64 {
    let d = d as f64;
    (d - f64::from(SHIFTED_WEIGHT_LOW)) * (d + f64::from(SHIFTED_WEIGHT_HIGH))
        / f64::from(SHIFTED_WEIGHT_DIVISOR)
}

/// Item 9: √d·(1−u)^-(d + CAP_EXPONENT_OFFSET)/2.
pub fn two_pass_cap(d: usize, u: f64) -> f64 {
    (d as f64).sqrt() * (1.0 - u).powf(-(d as f64 + f64::from(CAP_EXPONENT_OFFSET)) / 2.0)
}

/// The accumulation precision the model assumes for kernels of a dtype: (u, u_min).
pub fn accumulation_precision(dtype: Dtype) -> (f64, f64) {
    match dtype {
        Dtype::F64 => (pow2(-53), pow2(-1074)),
        Dtype::F16 | Dtype::BF16 | Dtype::F32 => (pow2(-24), pow2(-149)),
    }
}

/// p, the accumulation format's significand bits.
pub fn accumulation_bits(dtype: Dtype) -> i32 {
    match dtype {
        Dtype::F64 => 53,
        _ => 24,
    }
}

/// Orders two nonnegative `Wide`s (0 first).
fn compare_nonnegative(a: Wide, b: Wide) -> Ordering {
    match (a.exponent(), b.exponent()) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(ea), Some(eb)) if ea != eb => ea.cmp(&eb),
        (Some(e), Some(_)) => a.scaled(-e).to_f64().total_cmp(&b.scaled(-e).to_f64()),
    }
}

pub(crate) fn max_nonnegative(a: Wide, b: Wide) -> Wide {
    if compare_nonnegative(a, b) == Ordering::Less {
        b
    } else {
        a
    }
}

/// T(a) of lemma 1: Σ_k w_k·a_(k), a sorted decreasingly, w_1 = d−1, w_k = d−k+1 — the total
/// weight of the internal nodes of the worst summation tree over these magnitudes.
pub fn tree_weight(mut a: Vec<Wide>) -> Wide {
    let d = a.len();
    a.sort_by(|x, y| compare_nonnegative(*y, *x));
    a.iter().enumerate().fold(Wide::ZERO, |sum, (k, &v)| {
        let w = if k == 0 { d - 1 } else { d - k };
        sum + Wide::of(w as f64) * v
    })
}

/// The row's grid: the exponent of q_x (every x_i/q_x an integer) and Σ|x|; None for a row
/// of zeros.
fn grid(values: &[f64]) -> Option<(i32, Wide)> {
    let mut quantum: Option<i32> = None;
    let mut sum = Wide::ZERO;
    for &x in values {
        if x == 0.0 {
            continue;
        }
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i32;
        let fraction = bits & ((1u64 << 52) - 1);
        let (significand, exponent) = if biased == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1u64 << 52), biased - 1075)
        };
        let q = exponent + significand.trailing_zeros() as i32;
        quantum = Some(quantum.map_or(q, |m: i32| m.min(q)));
        sum = sum + Wide::of(x.abs());
    }
    quantum.map(|q| (q, sum))
}

/// Whether magnitudes summing to `total` (rounded: compared with room to spare), all
/// multiples of 2^quantum, have every partial sum exact in p bits.
fn fits_the_grid(total: Wide, quantum: i32, p: i32) -> bool {
    let limit = Wide::of(1.0).scaled(p - GRID_HEADROOM_BITS + quantum);
    compare_nonnegative(total * Wide::of(1.0 + EVALUATION_MARGIN), limit) != Ordering::Greater
}

/// Whether every partial sum of the row, in any tree, is exact in p bits (item 2): all x_i
/// are multiples of a power of two q_x with Σ|x_i| ≤ 2^p·q_x.
pub fn sums_are_exact(values: &[f64], p: i32) -> bool {
    grid(values).is_none_or(|(quantum, sum)| fits_the_grid(sum, quantum, p))
}

/// Whether the shifted sums Σ(x_i − K) are exact for every K among the x_i (item 2b):
/// Σ|x_i − K| ≤ Σ|x| + d·max|x| ≤ 2^p·q_x.
fn shifted_sums_are_exact(values: &[f64], p: i32) -> bool {
    let max = values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let d = Wide::of(values.len() as f64);
    grid(values).is_none_or(|(quantum, sum)| fits_the_grid(sum + d * Wide::of(max), quantum, p))
}

/// The mean errors of the exact-sum case (item 2): max |μ̂ − μ| over μ̂ = fl(S/d) and
/// fl(S·fl(1/d)) in the accumulation format — and, for the narrow formats, in f64 too (a kernel
/// accumulating more precisely than the model must pass as well) — S = Σx exactly; None where
/// S leaves the accumulation format's normal range (the general bound then applies).
fn exact_sum_mean_error(dtype: Dtype, values: &[f64], mean: [Wide; 2]) -> Option<Wide> {
    // S is a multiple of q_x below 2^p·q_x: exact in f64 in any order.
    let sum: f64 = values.iter().sum();
    let d = values.len() as f64;
    if !sum.is_finite() || (sum != 0.0 && sum.abs() < f64::MIN_POSITIVE) {
        return None;
    }
    let mut candidates = vec![sum / d, sum * (1.0 / d)];
    if dtype != Dtype::F64 {
        let s = sum as f32;
        if !s.is_finite() || (s != 0.0 && s.abs() < f32::MIN_POSITIVE) || s as f64 != sum {
            return None;
        }
        let n = d as f32;
        candidates.extend([(s / n) as f64, (s * (1.0 / n)) as f64]);
    }
    let error = |c: f64| (Wide::of(c) - mean[0] - mean[1]).abs();
    Some(
        candidates
            .into_iter()
            .map(error)
            .fold(Wide::ZERO, max_nonnegative),
    )
}

/// The parts of B_i fixed by the row, each a ratio to s where s enters.
#[derive(Debug, Clone, Copy)]
pub struct RowBound {
    pub op: Op,
    pub d: usize,
    /// u of the accumulation format.
    pub u: f64,
    /// 1/s, and μ as hi + lo (δ_i = (x_i − μ_hi) − μ_lo).
    pub inv_scale: Wide,
    pub mean: [Wide; 2],
    /// Whether every sum of x is exact (item 2).
    pub sums_exact: bool,
    /// Whether all x_i are equal (item 3).
    pub constant: bool,
    /// e_sum, e_shift, e_W and e_μ = their max (items 2-4).
    pub sum_error: Wide,
    pub shift_error: Wide,
    pub welford_error: Wide,
    /// The Welford kernels' largest |v̂ − q| (item 4).
    pub welford_variance_error: Wide,
    pub mean_error: Wide,
    /// ρ: |r̂·s − 1| ≤ ρ (item 7).
    pub scale_error: f64,
    /// d·u_min/s.
    pub underflow: Wide,
    /// Item 9: √d·(1−u)^-(d+10)/2, the largest |ẑ| of a two-pass kernel.
    pub two_pass_cap: f64,
    /// Item 9: a lower bound on every Welford kernel's ŝ (None where none ran).
    pub welford_least_scale: Option<Wide>,
}

impl RowBound {
    /// The row's part of the bound, from its statistics and its values (a defined row).
    pub fn new(dtype: Dtype, stats: &RowStats, values: &[f64]) -> RowBound {
        RowBound::with_welford(dtype, stats, values, true)
    }

    /// `new` with or without the Welford kernels' errors (tests show they are needed).
    pub(crate) fn with_welford(
        dtype: Dtype,
        stats: &RowStats,
        values: &[f64],
        welford: bool,
    ) -> RowBound {
        let d = values.len();
        let (u, u_min) = accumulation_precision(dtype);
        let wide = Wide::of;
        let one_plus_u = wide(1.0 + u);
        let growth = wide((1.0 + u).powi(d.saturating_sub(1) as i32) * (1.0 + EVALUATION_MARGIN));
        let dw = wide(d as f64);
        let constant = values.iter().all(|&x| x == values[0]);
        let delta = |x: f64| match stats.op {
            Op::LayerNorm => (wide(x) - stats.mean_wide[0] - stats.mean_wide[1]).abs(),
            Op::RmsNorm => wide(x.abs()),
        };
        let abs_delta: Vec<Wide> = values.iter().map(|&x| delta(x)).collect();
        let (sums_exact, sum_error, shift_error) = match stats.op {
            Op::RmsNorm => (true, Wide::ZERO, Wide::ZERO),
            Op::LayerNorm => {
                let p = accumulation_bits(dtype);
                let sums_exact = sums_are_exact(values, p);
                let mu_abs = (stats.mean_wide[0] + stats.mean_wide[1]).abs();
                let division = wide(2.0 * u + u * u);
                let general = || {
                    let t = tree_weight(values.iter().map(|x| wide(x.abs())).collect());
                    one_plus_u * one_plus_u * wide(u) * growth * t / dw + division * mu_abs
                };
                let sum_error = if sums_exact {
                    exact_sum_mean_error(dtype, values, stats.mean_wide).unwrap_or_else(general)
                } else {
                    general()
                };
                // Item 2b: |x_i − K| ≤ |δ_i| + Δ, Δ = max|δ|.
                let largest = abs_delta
                    .iter()
                    .fold(Wide::ZERO, |m, &a| max_nonnegative(m, a));
                let shift_error = if constant {
                    Wide::ZERO
                } else if shifted_sums_are_exact(values, p) {
                    one_plus_u * division * largest + wide(u) * mu_abs
                } else {
                    let sum_abs = abs_delta.iter().fold(Wide::ZERO, |a, &b| a + b) + dw * largest;
                    let weights = wide(shifted_weight(d));
                    let t = tree_weight(abs_delta.clone()) + weights * largest;
                    let sum = wide(u) * sum_abs + wide(u) * growth * one_plus_u * t;
                    one_plus_u * (one_plus_u * one_plus_u * sum / dw + division * largest)
                        + wide(u) * mu_abs
                };
                (sums_exact, sum_error, shift_error)
            }
        };
        let q = Wide::from_float(&Float::with_val(64, &stats.q));
        let eps_f64 = Float::with_val(64, &stats.eps).to_f64();
        let eps = Wide::of(eps_f64);
        // Item 4: the Welford kernels' actual errors (RMSNorm has no mean to run).
        let ran = match (stats.op, welford) {
            (Op::LayerNorm, true) if dtype == Dtype::F64 => {
                Some(welford_errors::<f64>(values, eps_f64, stats.mean_wide, q))
            }
            (Op::LayerNorm, true) => {
                Some(welford_errors::<f32>(values, eps_f64, stats.mean_wide, q))
            }
            _ => None,
        };
        let WelfordErrors {
            mean: welford_error,
            variance: welford_variance_error,
            least_variance,
        } = ran.unwrap_or(WelfordErrors {
            mean: Wide::ZERO,
            variance: Wide::ZERO,
            least_variance: Wide::ZERO,
        });
        // Item 9: the least scale a Welford kernel divides by (None: none ran).
        let welford_least_scale = if ran.is_none() {
            None
        } else {
            let root = least_variance.sqrt();
            let s = match stats.convention {
                EpsConvention::Inside => (least_variance + eps).sqrt(),
                EpsConvention::Outside => root + eps,
            };
            Some(wide((1.0 - u) * (1.0 - u)) * s)
        };
        let two_pass_error = max_nonnegative(sum_error, shift_error);
        let mean_error = max_nonnegative(two_pass_error, welford_error);
        // Item 6.
        let c3 = wide(c3(u));
        let leaves = abs_delta
            .iter()
            .map(|&a| {
                let a = a + two_pass_error;
                c3 * a * a
            })
            .collect();
        let dq = dw * q;
        let de2 = dw * two_pass_error * two_pass_error;
        let two_u = wide(2.0 * u + u * u);
        let e_q = two_u * (dq + de2)
            + de2
            + wide(u) * one_plus_u * one_plus_u * (dq + de2)
            + wide(u) * growth * tree_weight(leaves);
        let two_pass_variance_error = one_plus_u * one_plus_u * e_q / dw + two_u * q;
        let e_v = max_nonnegative(
            two_pass_variance_error,
            welford_variance_error * wide(1.0 + EVALUATION_MARGIN),
        );
        // Item 7, as E_s/s.
        let inv_scale = stats.inv_scale_wide;
        let relative_scale = match stats.convention {
            EpsConvention::Inside => {
                let s2 = q + eps;
                let tau = ((e_v + wide(u) * (s2 + e_v)) / s2).to_f64();
                if tau < 1.0 {
                    (1.0 + u) * tau / (1.0 + (1.0 - tau).sqrt()) + u
                } else {
                    f64::INFINITY
                }
            }
            EpsConvention::Outside => {
                let sigma = q.sqrt();
                let root_error = if q.is_zero() {
                    e_v.sqrt()
                } else {
                    let by_quotient = e_v / sigma;
                    let by_root = e_v.sqrt();
                    if compare_nonnegative(by_quotient, by_root) == Ordering::Less {
                        by_quotient
                    } else {
                        by_root
                    }
                };
                let e_s = one_plus_u * (one_plus_u * root_error + wide(u) * sigma);
                (e_s * inv_scale).to_f64() + u
            }
        };
        let relative_scale = relative_scale * (1.0 + EVALUATION_MARGIN);
        let scale_error = if relative_scale < 1.0 {
            (1.0 + u) / (1.0 - relative_scale) - 1.0
        } else {
            f64::INFINITY
        };
        RowBound {
            op: stats.op,
            d,
            u,
            inv_scale,
            mean: stats.mean_wide,
            sums_exact,
            constant,
            sum_error,
            shift_error,
            welford_error,
            welford_variance_error,
            mean_error,
            scale_error: scale_error * (1.0 + EVALUATION_MARGIN),
            underflow: wide(d as f64 * u_min) * inv_scale,
            two_pass_cap: two_pass_cap(d, u),
            welford_least_scale,
        }
    }

    /// B_i of item 8 for one element: how far a careful kernel's unrounded result may be from
    /// the exact one. A `Wide`, never rounded on the way (`within_bound` compares with it as
    /// such; `to_f64` rounds it for reports); ∞ where the row admits no bound (ρ = ∞).
    pub fn bound(&self, e: ElementTerms) -> Wide {
        let u = self.u;
        let wide = Wide::of;
        let r = self.inv_scale;
        let z = match self.op {
            Op::LayerNorm => ((wide(e.x) - self.mean[0] - self.mean[1]) * r).abs(),
            Op::RmsNorm => (wide(e.x) * r).abs(),
        };
        let rho = wide(self.scale_error);
        let mean_over_s = wide(1.0 + u) * self.mean_error * r;
        let centring = (mean_over_s + wide(u) * z) * (wide(1.0) + rho) + z * rho;
        let g = wide(e.gamma.abs());
        let c3 = c3(u);
        let rest = wide(u) * wide(e.beta.abs()) + wide(2.0) * g * self.underflow;
        let formula = wide(c3) * g * centring + wide(c3 - 1.0) * g * z + rest;
        // Item 9: no kernel's |ẑ| exceeds the cap; the output errs by at most c₃|γ|(cap + |z|).
        let delta = z / r;
        let welford_z = match self.welford_least_scale {
            None => Wide::ZERO,
            // ŝ = 0: that kernel's outputs are ±∞ or NaN, no cap.
            Some(s) if s.is_zero() => wide(f64::INFINITY),
            Some(s) => wide(c3) * (delta + self.welford_error) / s,
        };
        let cap = max_nonnegative(wide(self.two_pass_cap), welford_z);
        let capped = wide(c3) * g * (cap + z) + rest;
        let sum = if compare_nonnegative(capped, formula) == Ordering::Less {
            capped
        } else {
            formula
        };
        let b = wide(1.0 + EVALUATION_MARGIN) * sum;
        if b.is_nan() {
            Wide::of(f64::INFINITY)
        } else {
            b
        }
    }
}

/// B_i for element `e` of a row (`RowBound::new` then `RowBound::bound`; build the
/// `RowBound` once per row where several elements are judged).
pub fn bound(dtype: Dtype, stats: &RowStats, values: &[f64], e: ElementTerms) -> Wide {
    RowBound::new(dtype, stats, values).bound(e)
}

/// The condition number κ_i = (|x_i| + mean|x|)/s of element i (RMSNorm: |x_i|/s), for
/// reports: rounded once to f64 (0 or ∞ where it leaves f64's range). `mean_abs`: the row's
/// [`RowStats::mean_abs`].
pub fn condition(stats: &RowStats, mean_abs: Wide, x: f64) -> f64 {
    let (r, m) = (stats.inv_scale_wide, mean_abs);
    let kappa = match stats.op {
        Op::LayerNorm => Wide::of(x).abs() * r + m * r,
        Op::RmsNorm => Wide::of(x).abs() * r,
    };
    kappa.to_f64()
}

/// The inputs of the bound for one element.
#[derive(Debug, Clone, Copy)]
pub struct ElementTerms {
    pub x: f64,
    pub gamma: f64,
    pub beta: f64,
}

/// The fraction of the tolerance an output uses: |o − y| / (B + ulp(max(|o|, |y|))), the ulp
/// being the format's, at most MAX's (the kernel's last rounding; past MAX it rounds to ±∞).
/// The output passes the bound when it is at most 1. Formed in f64 where y, |o − y| and the
/// slack are finite f64s (one rounding each, as `Wide`'s), else in `Wide`: a slack past
/// f64::MAX, a difference of two values near ±f64::MAX, or an exact y past f64::MAX (whose
/// correctly rounded output is ±∞) neither overflows nor accepts.
///
/// For o = ±∞ (y finite) it is |±T − y| / B, T = MAX + ulp(MAX)/2 the format's overflow
/// threshold: a kernel whose unrounded result lies within B of y rounds to ±∞ exactly when
/// that result reaches ±T (T already is the last rounding's, so no ulp of slack).
pub fn bound_use(dtype: Dtype, o: f64, y: Wide, b: Wide) -> f64 {
    let max = dtype.max_finite();
    if o.is_infinite() && y.is_finite() {
        let threshold = Wide::of(max) + Wide::of(dtype.ulp_at(max)).scaled(-1);
        let threshold = if o > 0.0 { threshold } else { -threshold };
        return ((threshold - y).abs() / b).to_f64();
    }
    let last_rounding = |larger: f64| dtype.ulp_at(larger.min(max));
    if let Some(y) = y.to_normal_f64() {
        let ulp = last_rounding(o.abs().max(y.abs()));
        if let Some(b) = b.to_normal_f64() {
            let (difference, slack) = ((o - y).abs(), b + ulp);
            if difference.is_finite() && slack.is_finite() {
                return difference / slack;
            }
        }
    }
    let ulp = last_rounding(o.abs().max(y.abs().to_f64()));
    ((Wide::of(o) - y).abs() / (b + Wide::of(ulp))).to_f64()
}

/// Whether output value `o` lies within the bound of the exact value `y` (±∞ where the bound
/// reaches the overflow threshold on its side; a finite o where y lies past the threshold
/// and within the bound of o; never NaN, never for a non-finite y).
pub fn within_bound(dtype: Dtype, o: f64, y: Wide, b: Wide) -> bool {
    bound_use(dtype, o, y, b) <= 1.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::EpsConvention;
    use rug::Rational;

    /// Σ over the internal nodes of |their sum of |a||, for a tree given as nested pairs.
    enum Tree {
        Leaf(usize),
        Node(Box<Tree>, Box<Tree>),
    }

    fn node_weights(t: &Tree, a: &[f64]) -> (f64, f64) {
        match t {
            Tree::Leaf(i) => (a[*i], 0.0),
            Tree::Node(l, r) => {
                let ((wl, nl), (wr, nr)) = (node_weights(l, a), node_weights(r, a));
                (wl + wr, nl + nr + wl + wr)
            }
        }
    }

    /// Every binary tree over the leaves `ids`, in every split (Catalan many: small d only).
    fn all_trees(ids: &[usize]) -> Vec<Tree> {
        if ids.len() == 1 {
            return vec![Tree::Leaf(ids[0])];
        }
        let mut out = Vec::new();
        for k in 1..ids.len() {
            for l in all_trees(&ids[..k]) {
                for r in all_trees(&ids[k..]) {
                    out.push(Tree::Node(Box::new(clone_tree(&l)), Box::new(r)));
                }
            }
        }
        out
    }

    fn clone_tree(t: &Tree) -> Tree {
        match t {
            Tree::Leaf(i) => Tree::Leaf(*i),
            Tree::Node(l, r) => Tree::Node(Box::new(clone_tree(l)), Box::new(clone_tree(r))),
        }
    }

    fn permutations(d: usize) -> Vec<Vec<usize>> {
        if d == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in permutations(d - 1) {
            for k in 0..=p.len() {
                let mut q = p.clone();
                q.insert(k, d - 1);
                out.push(q);
            }
        }
        out
    }

    /// Lemma 1: T(|a|) is the largest node weight of any tree in any leaf order, and the
    /// sequential sum of the decreasingly sorted row attains it (so it is the least such
    /// bound). Checked over every tree and order up to d = 6.
    #[test]
    fn tree_weight_is_the_worst_tree_over_every_order() {
        let rows: [&[f64]; 4] = [
            &[3.0, 1.0, 2.0],
            &[1.0, 1.0, 1.0, 1.0],
            &[5.0, 0.5, 2.0, 7.0, 1.0],
            &[9.0, 1.0, 1.0, 1.0, 4.0, 0.25],
        ];
        for a in rows {
            let d = a.len();
            let t = tree_weight(a.iter().map(|&v| Wide::of(v)).collect()).to_f64();
            let mut worst = 0.0f64;
            for order in permutations(d) {
                for tree in all_trees(&order) {
                    worst = worst.max(node_weights(&tree, a).1);
                }
            }
            assert_eq!(worst, t, "{a:?}");
        }
        // The weights: d−1 for the largest, then d−1, d−2, …, 1.
        let t = tree_weight([1.0, 4.0, 2.0, 3.0].iter().map(|&v| Wide::of(v)).collect());
        assert_eq!(t.to_f64(), 3.0 * 4.0 + 3.0 * 3.0 + 2.0 * 2.0 + 1.0);
    }

    /// Item 2's condition: Σ|x| ≤ 2^p·q_x, at its edge, with subnormals and zeros.
    #[test]
    fn sums_are_exact_exactly_when_the_grid_fits_the_precision() {
        assert!(sums_are_exact(&[2048.0, 2050.0, 2048.0], 24));
        // 2^24 ones: Σ = 2^24 = 2^p·1 fits; one more 1 does not.
        assert!(sums_are_exact(&[8_388_608.0, 8_388_608.0], 24));
        assert!(!sums_are_exact(&[8_388_608.0, 8_388_608.0, 1.0], 24));
        assert!(!sums_are_exact(&[1.0, pow2(-24)], 24));
        assert!(sums_are_exact(&[1.0, pow2(-20)], 24));
        assert!(sums_are_exact(&[0.0, -0.0], 24));
        assert!(sums_are_exact(&[5e-324, 1e-323], 53));
        let full = f32::from_bits(0x3fff_97f9) as f64; // 1.99682534
        assert!(!sums_are_exact(&[full; 4096], 24));
        assert!(sums_are_exact(&[full; 2], 53));
    }

    fn row(values: &[f64], dtype: Dtype, op: Op, eps: f64) -> (RowStats, RowBound) {
        let eps = Rational::from_f64(eps).unwrap();
        let s = RowStats::compute(values, dtype, op, EpsConvention::Inside, &eps);
        let b = RowBound::new(dtype, &s, values);
        (s, b)
    }

    /// Items 2-3: on a constant row of a short significand the mean is exact for every model
    /// kernel, so B_i is u|β| plus the underflow term; a constant row of a full f32
    /// significand keeps lemma 1's term (its sequential sums do err).
    #[test]
    fn constant_rows_vanish_where_their_sums_are_exact() {
        for dtype in [Dtype::F16, Dtype::BF16, Dtype::F32] {
            let (_, b) = row(&[1.5; 100], dtype, Op::LayerNorm, 1e-5);
            assert!(
                b.sums_exact && b.constant && b.mean_error.is_zero(),
                "{dtype:?}"
            );
            let e = ElementTerms {
                x: 1.5,
                gamma: 1.0,
                beta: 0.25,
            };
            let want = 0.25 * pow2(-24) + 2.0 * 100.0 * pow2(-149) / 1e-5f64.sqrt();
            let got = b.bound(e).to_f64();
            assert!(
                (got / want - 1.0).abs() < 1e-6,
                "{dtype:?}: {got:e} vs {want:e}"
            );
        }
        let full = f32::from_bits(0x3fff_97f9) as f64; // 1.99682534
        let (_, b) = row(&[full; 4096], Dtype::F32, Op::LayerNorm, 1e-5);
        assert!(!b.sums_exact && b.welford_error.is_zero());
        let e_sum = b.sum_error.to_f64();
        // (1+u)²·u·(1+u)^4095·T/d + 2u|μ| with T = (d−1 + d(d−1)/2)·c.
        let u = pow2(-24);
        let t = (4095.0 + 4096.0 * 4095.0 / 2.0) * full;
        let want = u * t / 4096.0 + 2.0 * u * full;
        assert!(e_sum >= want && e_sum < want * 1.001, "{e_sum:e} {want:e}");
    }

    /// The two-level f16 row: exact sums, so only the Welford kernels' own errors remain
    /// (≈ 1e-4 of σ at d = 768): the bound is a small fraction of the 4 % that used to pass.
    #[test]
    fn two_level_row_keeps_only_the_welford_errors() {
        let values: Vec<f64> = (0..768)
            .map(|i| if i % 2 == 0 { 2048.0 } else { 2050.0 })
            .collect();
        let (_, b) = row(&values, Dtype::F16, Op::LayerNorm, 1e-12);
        assert!(b.sums_exact && b.sum_error.is_zero());
        let welford = b.welford_error.to_f64();
        assert!(welford > 0.0 && welford < 1e-2, "{welford:e}");
        let e = ElementTerms {
            x: 2050.0,
            gamma: 1.0,
            beta: 0.0,
        };
        let bound = b.bound(e).to_f64();
        assert!(bound < 0.02, "{bound}");
    }

    #[test]
    fn within_bound_past_the_f64_range() {
        let (o, y) = (-1.7e308, Wide::of(1.7e308));
        let below = Wide::of(1.35e308).scaled(1); // 2.7e308 < |o − y| = 3.4e308
        let above = Wide::of(1.75e308).scaled(1); // 3.5e308
        assert!(below.to_f64().is_infinite());
        assert!(!within_bound(Dtype::F64, o, y, below));
        assert!(within_bound(Dtype::F64, o, y, above));
        let used = bound_use(Dtype::F64, o, y, above);
        assert!((used - 3.4 / 3.5).abs() < 1e-12, "{used}");
        // A finite output where the exact value lies past f64::MAX (correctly rounded: +∞):
        // y = 2^1025 ≈ 3.6e308, o = 0 is within B = 2^1025 (plus MAX's ulp), not within
        // B = 2^1024; o = MAX is within B = 2^1024. The ulp of slack is MAX's, 2^971.
        let past = Wide::of(1.0).scaled(1025);
        assert!(past.to_f64().is_infinite());
        assert!(within_bound(Dtype::F64, 0.0, past, past));
        assert!(!within_bound(Dtype::F64, 0.0, past, past.scaled(-1)));
        assert!(within_bound(Dtype::F64, f64::MAX, past, past.scaled(-1)));
        let used = bound_use(Dtype::F64, 0.0, past, past.scaled(-1));
        assert!((used - 2.0).abs() < 1e-12, "{used}");
        // ±∞ where the bound reaches the overflow threshold T = 2^1024 − 2^970 on its side:
        // from y = 1.7e308, T − y ≈ 9.77e306 and −T − y ≈ −3.498e308.
        let threshold = Wide::of(1.0).scaled(1024) - Wide::of(1.0).scaled(970);
        let gap = (threshold - y).to_f64();
        assert!((gap / 9.769313486231581e306 - 1.0).abs() < 1e-12, "{gap:e}");
        let (reaching, short) = (Wide::of(gap), Wide::of(gap * (1.0 - 1e-15)));
        assert!(within_bound(Dtype::F64, f64::INFINITY, y, reaching));
        assert!(!within_bound(Dtype::F64, f64::INFINITY, y, short));
        assert!(!within_bound(Dtype::F64, f64::NEG_INFINITY, y, reaching));
        assert!(within_bound(Dtype::F64, f64::NEG_INFINITY, y, above));
        // f32: T = MAX + 2^103.
        let t32 = f32::MAX as f64 + 2f64.powi(103);
        assert!(within_bound(
            Dtype::F32,
            f64::INFINITY,
            Wide::of(1e38),
            Wide::of(t32 - 1e38)
        ));
        assert!(!within_bound(
            Dtype::F32,
            f64::INFINITY,
            Wide::of(1e38),
            Wide::of(t32 - 1.0001e38)
        ));
        assert!(!within_bound(
            Dtype::F64,
            f64::NAN,
            y,
            Wide::of(f64::INFINITY)
        ));
        // In range, the plain f64 ratio.
        let b = Wide::of(1e-3);
        let want = (1.0f64 - 1.0005).abs() / (1e-3 + Dtype::F64.ulp_at(1.0005));
        assert_eq!(bound_use(Dtype::F64, 1.0005, Wide::of(1.0), b), want);
    }
}
