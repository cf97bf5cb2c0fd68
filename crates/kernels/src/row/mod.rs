//! One row of LayerNorm or RMSNorm, generic over the vector path `S` and the storage
//! format `T`: the single implementation every instruction set and dtype runs.
//!
//! Accuracy by design (u = 2^-53, n = d/16 the terms per partial sum):
//! * Loads widen exactly; γ and β arrive widened exactly to f64 or as given (see
//!   [`Param`]) and are widened exactly to f64 on load. (f16/bf16 rows of at least
//!   [`f32_path::min_d`] values on AVX-512 (4096 on most CPUs), wider than [`WIDEN_MAX_D`]
//!   elsewhere, compute their output in f32 instead: see [`f32_path::applies`].)
//! * LayerNorm statistics in one pass over the row, shifted by c (0 where the first
//!   sixteen values' mean is within their spread of zero, else that mean rounded to `T`,
//!   so that every x − c is exact and on the row's grid; see [`first_shift`]): t = x − c, S = Σt,
//!   Q = Σt². With δ = μ − c, the variance (Q − S²/d)/d loses at most a factor 1 + δ²/σ²
//!   to cancellation; the pass is accepted only when δ² ≤ 8σ² (estimated; δ² ≤ σ² where
//!   c = 0), otherwise it is repeated with c moved to the estimated mean (at most
//!   twice: |μ − c| ≤ σ√d, and one move leaves |δ| ≲ n·u·σ√d). The mean offset never
//!   enters: a row 10^6 ± 1 is as accurate as a row 0 ± 1. Sums run in blocks of
//!   [`BLOCK_PAIRS`](statistics::BLOCK_PAIRS) vectors per accumulator (the rounding errors of sums of squares are
//!   biased, and would otherwise grow with d).
//! * The deviation x − μ = (x − c) − S/d, z = (x − μ)·r, y = γ·z + β with one fused
//!   multiply-add, then one correct rounding to `T` (f16/bf16 through round-to-odd).
//! * Certainty: the f64 value's error is taken to be at most RELATIVE·(|ŷ| + |β|) +
//!   |γ|·absolute (see [`RELATIVE`](certainty::RELATIVE): β's term covers γ·z + β cancelling, the absolute
//!   one z ≈ 0 in LayerNorm). A cheap filter per vector ([`NearFilter`](super::simd::NearFilter), which the
//!   stores test) passes the lanes far enough from every rounding midpoint of `T`; the
//!   others get the test itself, lane by lane ([`needs_exact`](certainty::needs_exact), on the fixed grid below
//!   `T`'s normal range), and those it cannot clear are decided by the exact reference
//!   ([`crate::exact`]).
//!
//! Bit-identity: every path folds element `8j + k` into lane `k` of accumulator `j mod 2`
//! (sixteen partial sums) and combines them in the same order in scalar code; the
//! element-wise arithmetic is the same IEEE operations everywhere (and the same whether an
//! element is computed in the main loop, again for a second look, or in the tail).
//! A row whose statistics are not finite (any ±∞ or NaN input) is written as NaN.
//!
//! Speed: the two loops over a row (statistics, output) each run in a function of their
//! own ([`Simd::isolated`]), so that their constants stay in registers; the output loop
//! has no branch on its data (what the stores report is OR-ed over eight vectors, recorded,
//! and looked at after the loop: see [`Reports`](output::Reports)) and requests the next row's cache lines
//! as it goes.

#[cfg(test)]
mod bound_tests;
mod certainty;
pub(crate) mod f32_path;
mod lanes;
mod normalize;
mod output;
mod params;
mod statistics;
#[cfg(test)]
mod tests;

use lanes::lanes_mut;
pub(crate) use lanes::{values, Line};
pub(crate) use params::{Param, ParamsMax, RowParams};
#[cfg(test)]
pub(crate) use statistics::{layer_norm_stats, sum_of_squares};

use super::element::Element;
use super::simd::Simd;
use super::Vectorized;
use normalize::{CenteredConstants, ScaledConstants};
use output::{fill_nan, finish_row};
use statistics::{
    first_shift, is_zero_shift, layer_norm_stats_after, Alone, NextShifted, NextSquares,
    SquaresPass,
};

/// Rows up to this width are widened once (where [`RowParams::widen_once`]): the widened
/// row (8 bytes a value) then stays in L2 beside γ and β; wider rows are widened twice.
pub(super) const WIDEN_MAX_D: usize = 16384;

/// Sizes `wide` for a row of width d: d/8 vectors where the row is widened once, else
/// empty.
#[inline(always)]
fn prepare_wide(wide: &mut Vec<Line>, d: usize, widen_once: bool) {
    if widen_once && d <= WIDEN_MAX_D {
        wide.resize(d.div_ceil(8), Line::default());
    } else {
        wide.clear();
    }
}

/// One row to normalize: its x, the next row's x (prefetched while this one is written;
/// empty for the last row), the x of the row after it (likewise; prefetched instead where
/// the next row's statistics are computed beside this row's output: see
/// [`fuses_next_statistics`]) and its y.
pub(crate) struct Row<'a, T> {
    pub x: &'a [T],
    pub next: &'a [T],
    pub after_next: &'a [T],
    pub y: &'a mut [T],
}

/// The first statistics pass of a row, made beside the previous row's output loop (see
/// [`fuses_next_statistics`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ahead {
    /// LayerNorm: the shift c, Σ(x − c) and Σ(x − c)².
    Shifted { shift: f64, sum: f64, sum_sq: f64 },
    /// RMSNorm: Σx².
    Squares(f64),
}

/// Whether the next row's statistics pass runs beside this row's output loop ([`Beside`](statistics::Beside)):
/// for rows of f32 that are not widened once, in calls that write y through the caches,
/// with a next row. Such an output loop waits on memory: each line of y is read before it
/// is written. The statistics pass alone reads x from cache while no line of memory
/// moves; beside the loop, it fills those waits. (Streamed stores read no line, and the
/// 16-bit formats' rows are bound by their arithmetic and widened once on the f64 path.)
/// Measured with `benches/ab.py`, f32, new/old medians of paired rounds:
/// * The Cascade Lake Xeon, 2 threads (y cached by default there), 8 rounds: LayerNorm
///   0.974 (4096 × 4096) and 0.911 (16384 × 1024), RMSNorm 0.931 and 0.842; 6 rounds of
///   another build of the same code: 0.936, 0.885, 0.938, 0.844. 64 × 65536, one row a
///   task (nothing beside), 0.97–1.01. With no statistics pass at all, LayerNorm had
///   taken 0.89 and 0.87 of the time: the most this could gain.
/// * A 16-core Emerald Rapids host, 16 threads: `--stream off`, 20 rounds, LayerNorm 0.921
///   and 0.925, RMSNorm 0.942 and 0.974 (64 × 65536: 0.969, 1.007); with streamed y (the
///   default there for f32 outputs of 24 MiB or more), 24 rounds, 1.023, 1.063, 0.996,
///   1.038 (64 × 65536: 0.982, 0.981), hence no pass beside streamed stores. On 2
///   threads, whose runs there ranged over 0.5–2.1, 0.95–1.09 with 0.95 at 64 × 65536.
#[inline(always)]
fn fuses_next_statistics<T: Element, P>(row: &Row<'_, T>, p: &RowParams<'_, P>) -> bool {
    debug_assert!(T::F32_PATH.is_none());
    !p.widen_once && !p.stream && !row.next.is_empty()
}

/// Buffers a task reuses from row to row.
#[derive(Default)]
pub(crate) struct Scratch {
    /// Elements of the current row to decide exactly.
    near_ties: Vec<u32>,
    /// The current row widened to f64 (where [`RowParams::widen_once`]), else empty.
    wide: Vec<Line>,
    /// The reports of the row's whole vectors (see [`Element::reported_lanes`]): the f32
    /// path's of the 16-bit formats one per vector, lane sets as those formats' reports
    /// are; the f64 path's laid out as [`Reports`](output::Reports) says.
    flags: Vec<u8>,
    /// The indices of the flags that are set, found by [`flagged_vectors`](output::flagged_vectors).
    flagged: Vec<u32>,
}

/// Where the next row's cache lines are requested: by the statistics pass (returned, and
/// `row.next` emptied, so that the output loop requests nothing) for rows of the 16-bit
/// formats that take the f32 path ([`f32_path`]), by the output loop for the others.
/// Measured on 2 threads of the Emerald Rapids Xeon, one binary switching between the two
/// call by call (medians of 20 paired ratios): the 16-bit rows of 4096 took 0.95–0.98 of
/// the time with the statistics pass requesting (f16 and bf16, LayerNorm and RMSNorm,
/// 4096 × 4096), f16 LayerNorm 2048 × 8192 0.95; f32 rows took 1.03–1.09 (LayerNorm at
/// 4096 × 4096 and 16384 × 1024, RMSNorm), so theirs stay in the output loop.
/// `on_f32_path`: the row takes that path ([`f32_path::path_format`]).
#[inline(always)]
fn requested_by_statistics<T>(row: &mut Row<'_, T>, on_f32_path: bool) -> Option<*const u8> {
    (on_f32_path && !row.next.is_empty())
        .then(|| std::mem::take(&mut row.next).as_ptr() as *const u8)
}

/// y = γ ⊙ (x − μ)/√(σ² + ε) + β for one row. `ahead`: this row's first statistics pass, where the previous row made it; returns the
/// next row's, where this row makes it ([`fuses_next_statistics`]).
#[inline(always)]
pub(crate) fn layer_norm_row<S: Simd, T: Element, P: Param, const G: bool, const B: bool>(
    s: S,
    mut row: Row<'_, T>,
    p: &RowParams<'_, P>,
    scratch: &mut Scratch,
    ahead: Option<Ahead>,
) -> Option<Ahead> {
    let d = row.x.len();
    let format = p.f32_path::<T>();
    let request = requested_by_statistics(&mut row, format.is_some());
    prepare_wide(&mut scratch.wide, d, p.widen_once);
    let first = match ahead {
        Some(Ahead::Shifted { shift, sum, sum_sq }) => Some((shift, sum, sum_sq)),
        _ => None,
    };
    let wide = lanes_mut(&mut scratch.wide);
    let Some(stats) = layer_norm_stats_after(s, row.x, wide, request, first) else {
        fill_nan(row.y);
        return None;
    };
    let c = CenteredConstants::<true>::new::<T>(&stats, p.eps, p.params_max);
    if const { T::F32_PATH.is_none() } && fuses_next_statistics(&row, p) {
        let next = NextShifted {
            x: row.next,
            shift: first_shift(s, row.next),
        };
        row.next = std::mem::take(&mut row.after_next);
        let (sum, sum_sq) = if is_zero_shift(stats.shift) {
            finish_row::<S, T, P, _, _, G, B>(s, row, p, c.without_shift(), None, next, scratch)
        } else {
            finish_row::<S, T, P, _, _, G, B>(s, row, p, c, None, next, scratch)
        };
        return Some(Ahead::Shifted {
            shift: next.shift,
            sum,
            sum_sq,
        });
    }
    let f32_row = format.and_then(|f| f32_path::layer_norm(&stats, c.scale, d, p.params_max, f));
    // Shift 0 saves its subtraction only where z comes from x (see `RowConstants::X_ONLY`);
    // elsewhere the shifted constants subtract +0, which changes no bit.
    if is_zero_shift(stats.shift) && scratch.wide.is_empty() && f32_row.is_none() {
        let c = c.without_shift();
        finish_row::<S, T, P, _, _, G, B>(s, row, p, c, None, Alone, scratch);
    } else {
        finish_row::<S, T, P, _, _, G, B>(s, row, p, c, f32_row, Alone, scratch);
    }
    None
}

/// y = γ ⊙ x/√(mean(x²) + ε) + β for one row. `ahead`: as in [`layer_norm_row`].
#[inline(always)]
pub(crate) fn rms_norm_row<S: Simd, T: Element, P: Param, const G: bool, const B: bool>(
    s: S,
    mut row: Row<'_, T>,
    p: &RowParams<'_, P>,
    scratch: &mut Scratch,
    ahead: Option<Ahead>,
) -> Option<Ahead> {
    let d = row.x.len();
    let format = p.f32_path::<T>();
    let request = requested_by_statistics(&mut row, format.is_some());
    prepare_wide(&mut scratch.wide, d, p.widen_once);
    let sum_sq = match ahead {
        Some(Ahead::Squares(sum_sq)) => sum_sq,
        _ => s.isolated(SquaresPass {
            x: row.x,
            wide: lanes_mut(&mut scratch.wide),
            request,
        }),
    };
    if !sum_sq.is_finite() {
        fill_nan(row.y);
        return None;
    }
    let c = ScaledConstants::new::<T>(sum_sq, d, p.eps, p.params_max);
    if const { T::F32_PATH.is_none() } && fuses_next_statistics(&row, p) {
        let next = NextSquares { x: row.next };
        row.next = std::mem::take(&mut row.after_next);
        let sum_sq = finish_row::<S, T, P, _, _, G, B>(s, row, p, c, None, next, scratch);
        return Some(Ahead::Squares(sum_sq));
    }
    let f32_row = format.and_then(|f| f32_path::rms_norm(c.scale, d, p.params_max, f));
    finish_row::<S, T, P, _, _, G, B>(s, row, p, c, f32_row, Alone, scratch);
    None
}
