//! One row of LayerNorm or RMSNorm, generic over the vector path `S` and the storage
//! format `T`: the single implementation every instruction set and dtype runs.
//!
//! Accuracy by design (u = 2^-53, n = d/16 the terms per partial sum):
//! * Loads widen exactly; γ and β arrive widened exactly to f64 or as given (see
//!   [`Param`]) and are widened exactly to f64 on load. (f16/bf16 rows of at least
//!   [`narrow::min_d`] values on AVX-512 (4096 on most CPUs), wider than [`WIDEN_MAX_D`]
//!   elsewhere, compute their output in f32 instead: see [`narrow::applies`].)
//! * LayerNorm statistics in one pass over the row, shifted by c (0 where the first
//!   sixteen values' mean is within their spread of zero, else that mean rounded to `T`,
//!   so that every x − c is exact and on the row's grid; see [`first_shift`]): t = x − c, S = Σt,
//!   Q = Σt². With δ = μ − c, the variance (Q − S²/d)/d loses at most a factor 1 + δ²/σ²
//!   to cancellation; the pass is accepted only when δ² ≤ 8σ² (estimated; δ² ≤ σ² where
//!   c = 0), otherwise it is repeated with c moved to the estimated mean (at most
//!   twice: |μ − c| ≤ σ√d, and one move leaves |δ| ≲ n·u·σ√d). The mean offset never
//!   enters: a row 10^6 ± 1 is as accurate as a row 0 ± 1. Sums run in blocks of
//!   [`BLOCK_PAIRS`] vectors per accumulator (the rounding errors of sums of squares are
//!   biased, and would otherwise grow with d).
//! * The deviation x − μ = (x − c) − S/d, z = (x − μ)·r, y = γ·z + β with one fused
//!   multiply-add, then one correct rounding to `T` (f16/bf16 through round-to-odd).
//! * Certainty: the f64 value's error is taken to be at most RELATIVE·(|ŷ| + |β|) +
//!   |γ|·absolute (see [`RELATIVE`]: β's term covers γ·z + β cancelling, the absolute
//!   one z ≈ 0 in LayerNorm). A cheap filter per vector ([`NearFilter`], which the
//!   stores test) passes the lanes far enough from every rounding midpoint of `T`; the
//!   others get the test itself, lane by lane ([`needs_exact`], on the fixed grid below
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
//! and looked at after the loop: see [`Reports`]) and requests the next row's cache lines
//! as it goes.

use super::element::Element;
use super::narrow::{self, NarrowPass, NarrowRow};
use super::simd::{NearFilter, Simd};
use super::Vectorized;
use crate::dtype::pow2;
use crate::exact::{ElementInput, RowKind, RowStats};
use crate::problem::{EpsConvention, Op};

/// The row's vectors folded into two accumulators: vector `j` into accumulator `j mod 2`
/// (the partial tail vector, zero-padded, into accumulator 1 through `fold_tail`). Each
/// vector x is first `prepare`d (LayerNorm: t = x − c; RMSNorm: t = x), then folded.
trait Fold<S: Simd> {
    type Acc: Copy;
    fn prepare(&self, s: S, x: S::V) -> S::V;
    fn fold(&self, s: S, acc: Self::Acc, t: S::V) -> Self::Acc;
    /// Folds the last, partial vector (prepared from x padded with zeros): lanes `len..8`
    /// must not count.
    fn fold_tail(&self, s: S, acc: Self::Acc, t: S::V, len: usize) -> Self::Acc;
    /// Adds the accumulators of a block into the running ones.
    fn merge(&self, s: S, acc: Self::Acc, block: Self::Acc) -> Self::Acc;
}

/// Pairs of vectors folded into fresh accumulators before they are added to the running
/// ones. Rounding errors of a sum of squares are biased (squares of values on a grid have
/// biased low bits: odd k² ≡ 1 mod 8), so along one accumulator they add up with its
/// length: Σ(x − c)² was 57u off at d = 16384 (1024 terms per accumulator), which is
/// beyond what the output's certainty test allows for. Within blocks of 32 terms the bias
/// stays small, and the block sums' own roundings are not biased.
const BLOCK_PAIRS: usize = 32;

/// The running sums of a row's statistics pass, in the one order every pass folds them
/// (see [`reduce`]): whole pairs of vectors, the first into accumulator 0 and the second
/// into 1, through fresh block accumulators ([`BLOCK_PAIRS`] pairs a block) that
/// `close_block` adds to the running ones; then an odd last whole vector into accumulator
/// 0 and the partial tail vector into 1. The standalone pass ([`reduce`]) and the pass
/// beside the previous row's output loop ([`NextRowSums`]) both fold through this, so
/// that they give the same bits.
struct Sums<S: Simd, F: Fold<S>> {
    init: F::Acc,
    acc: [F::Acc; 2],
    part: [F::Acc; 2],
}

impl<S: Simd, F: Fold<S>> Sums<S, F> {
    #[inline(always)]
    fn new(init: F::Acc) -> Self {
        Sums {
            init,
            acc: [init; 2],
            part: [init; 2],
        }
    }

    /// Loads, prepares and folds a whole pair of vectors into the block's accumulators;
    /// the prepared vectors.
    #[inline(always)]
    fn pair<T: Element>(&mut self, s: S, f: &F, p: &[[T; 8]; 2]) -> [S::V; 2] {
        let a = f.prepare(s, T::load(s, &p[0]));
        let b = f.prepare(s, T::load(s, &p[1]));
        self.part[0] = f.fold(s, self.part[0], a);
        self.part[1] = f.fold(s, self.part[1], b);
        [a, b]
    }

    /// Adds the block's accumulators into the running ones and starts a fresh block.
    #[inline(always)]
    fn close_block(&mut self, s: S, f: &F) {
        self.acc[0] = f.merge(s, self.acc[0], self.part[0]);
        self.acc[1] = f.merge(s, self.acc[1], self.part[1]);
        self.part = [self.init; 2];
    }

    /// Folds the odd last whole vector (after the last block is closed).
    #[inline(always)]
    fn odd(&mut self, s: S, f: &F, a: S::V) {
        self.acc[0] = f.fold(s, self.acc[0], a);
    }

    /// Folds the partial tail vector of `len` values (after the last block is closed).
    #[inline(always)]
    fn tail(&mut self, s: S, f: &F, t: S::V, len: usize) {
        self.acc[1] = f.fold_tail(s, self.acc[1], t, len);
    }
}

/// The row's vectors folded into two accumulators through [`Sums`]: vector `j` into
/// accumulator `j mod 2` (the partial tail vector, zero-padded, into accumulator 1). Rows
/// widened once (see [`RowParams::widen_once`]) also keep the prepared vectors (t) in
/// `wide` for the output pass, which then starts from t; `wide` is empty otherwise. Where
/// `wide` is empty and a `request` is given (the next row's start: see
/// [`requested_by_statistics`]), the loop requests the next row's cache line under each
/// of its own.
#[inline(always)]
fn reduce<S: Simd, T: Element, F: Fold<S>>(
    s: S,
    x: &[T],
    f: &F,
    init: F::Acc,
    wide: &mut [[f64; 8]],
    request: Option<*const u8>,
) -> [F::Acc; 2] {
    let (chunks, tail) = x.as_chunks::<8>();
    let (pairs, rest) = chunks.as_chunks::<2>();
    let mut sums = Sums::<S, F>::new(init);
    if !wide.is_empty() {
        let (wide_pairs, wide_rest) = wide.split_at_mut(2 * pairs.len());
        let (wide_pairs, _) = wide_pairs.as_chunks_mut::<2>();
        for (block, wide_block) in pairs
            .chunks(BLOCK_PAIRS)
            .zip(wide_pairs.chunks_mut(BLOCK_PAIRS))
        {
            for (p, w) in block.iter().zip(wide_block.iter_mut()) {
                let [a, b] = sums.pair(s, f, p);
                w[0] = s.to_array(a);
                w[1] = s.to_array(b);
            }
            sums.close_block(s, f);
        }
        let mut w = wide_rest.iter_mut();
        if let [c] = rest {
            let a = f.prepare(s, T::load(s, c));
            *w.next().expect("sized for every vector") = s.to_array(a);
            sums.odd(s, f, a);
        }
        if !tail.is_empty() {
            let a = f.prepare(s, load_padded(s, tail));
            *w.next().expect("sized for every vector") = s.to_array(a);
            sums.tail(s, f, a, tail.len());
        }
    } else {
        // A pair of vectors is a cache line of f32, half of one of the 16-bit formats (and
        // a block, BLOCK_PAIRS pairs, a whole number of lines).
        let pair_bytes = 16 * std::mem::size_of::<T>();
        let pairs_per_line = (64 / pair_bytes).max(1);
        for (block_index, block) in pairs.chunks(BLOCK_PAIRS).enumerate() {
            for (i, p) in block.iter().enumerate() {
                if let Some(next) = request {
                    if i % pairs_per_line == 0 {
                        let pair = block_index * BLOCK_PAIRS + i;
                        s.prefetch(next.wrapping_add(pair * pair_bytes));
                    }
                }
                sums.pair(s, f, p);
            }
            sums.close_block(s, f);
        }
        fold_rest(s, f, &mut sums, rest, tail);
    }
    sums.acc
}

/// Folds the odd last whole vector (`rest`, empty or one) and the partial tail of a row
/// into `sums`, whose blocks are closed.
#[inline(always)]
fn fold_rest<S: Simd, T: Element, F: Fold<S>>(
    s: S,
    f: &F,
    sums: &mut Sums<S, F>,
    rest: &[[T; 8]],
    tail: &[T],
) {
    if let [c] = rest {
        sums.odd(s, f, f.prepare(s, T::load(s, c)));
    }
    if !tail.is_empty() {
        sums.tail(s, f, f.prepare(s, load_padded(s, tail)), tail.len());
    }
}

/// The statistics pass of the next row, run beside the output loop of the current one
/// (rows of f32 in calls of several rows: see [`fuses_next_statistics`]): the output loop
/// calls `group` for each of its whole groups of vectors (group q: vectors 8q..8q + 8,
/// pairs 4q..4q + 4 of the next row, the same count as the current row's), then `finish`
/// folds what is left. The loop's stores wait on memory while this folds from cache, so
/// the pass costs little of the time it took alone (where no line of memory moved).
/// The order of the folds is [`reduce`]'s, through the same [`Sums`]: the same bits.
struct NextRowSums<'a, S: Simd, T, F: Fold<S>> {
    quads: &'a [[[[T; 8]; 2]; 4]],
    /// The pairs after the whole quads, the odd last whole vector and the partial tail.
    pairs_after: &'a [[[T; 8]; 2]],
    rest: &'a [[T; 8]],
    tail: &'a [T],
    f: F,
    sums: Sums<S, F>,
}

/// Groups of vectors of the output loop per block of the statistics (four pairs a group).
const GROUPS_PER_BLOCK: usize = BLOCK_PAIRS / 4;

impl<'a, S: Simd, T: Element, F: Fold<S>> NextRowSums<'a, S, T, F> {
    #[inline(always)]
    fn new(x: &'a [T], f: F, init: F::Acc) -> Self {
        let (chunks, tail) = x.as_chunks::<8>();
        let (pairs, rest) = chunks.as_chunks::<2>();
        let (quads, pairs_after) = pairs.as_chunks::<4>();
        NextRowSums {
            quads,
            pairs_after,
            rest,
            tail,
            f,
            sums: Sums::new(init),
        }
    }

    /// Folds pairs 4q..4q + 4 (q below the output loop's whole groups, which are never
    /// more than the quads), closing the block they end.
    #[inline(always)]
    fn group(&mut self, s: S, q: usize) {
        for p in &self.quads[q] {
            self.sums.pair(s, &self.f, p);
        }
        if (q + 1).is_multiple_of(GROUPS_PER_BLOCK) {
            self.sums.close_block(s, &self.f);
        }
    }

    /// Folds the quads from `from` on (those the output loop did not take: the last group
    /// of a row of whole groups never leaves any) and everything after them, closing the
    /// last block where it is partial; the two accumulators.
    #[inline(always)]
    fn finish(mut self, s: S, from: usize) -> [F::Acc; 2] {
        for q in from..self.quads.len() {
            self.group(s, q);
        }
        let f = &self.f;
        for p in self.pairs_after {
            self.sums.pair(s, f, p);
        }
        let pairs = 4 * self.quads.len() + self.pairs_after.len();
        if !pairs.is_multiple_of(BLOCK_PAIRS) {
            self.sums.close_block(s, f);
        }
        fold_rest(s, f, &mut self.sums, self.rest, self.tail);
        self.sums.acc
    }
}

#[inline(always)]
fn load_padded<S: Simd, T: Element>(s: S, src: &[T]) -> S::V {
    let mut buf = [T::default(); 8];
    buf[..src.len()].copy_from_slice(src);
    T::load(s, &buf)
}

/// Eight f64 lanes on a cache line of their own (64-byte aligned): vector loads and
/// stores of widened values never straddle two lines.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
pub(crate) struct Line(pub [f64; 8]);

/// The lanes of consecutive lines.
pub(crate) fn lanes(lines: &[Line]) -> &[[f64; 8]] {
    // SAFETY: `Line` is `repr(C)` around one `[f64; 8]`, whose size (64) is a multiple of
    // its alignment: a slice of lines is a slice of `[f64; 8]` with a stricter alignment.
    unsafe { std::slice::from_raw_parts(lines.as_ptr().cast(), lines.len()) }
}

/// The lanes of consecutive lines, mutably.
pub(crate) fn lanes_mut(lines: &mut [Line]) -> &mut [[f64; 8]] {
    // SAFETY: as in `lanes`, and the borrow is exclusive.
    unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast(), lines.len()) }
}

/// The first n values of consecutive lines (n ≤ 8 × lines).
pub(crate) fn values(lines: &[Line], n: usize) -> &[f64] {
    assert!(n <= 8 * lines.len());
    // SAFETY: the lines hold 8 × lines.len() ≥ n contiguous, initialized f64 values.
    unsafe { std::slice::from_raw_parts(lines.as_ptr().cast(), n) }
}

/// What the output loop of a row runs beside its own work, a group of vectors at a time
/// (see [`NextRowSums`]): nothing ([`Alone`]), or the next row's statistics pass
/// ([`NextShifted`], [`NextSquares`]). The description holds no vectors; `start` makes the
/// running state on the loop's vector path.
trait Beside: Copy {
    /// Whether this is [`Alone`].
    const ALONE: bool = false;
    type State<S: Simd>;
    type Output;
    fn start<S: Simd>(self, s: S) -> Self::State<S>;
    fn group<S: Simd>(self, s: S, state: &mut Self::State<S>, q: usize);
    /// What is left after the loop's whole groups (`from` of them), and the result.
    fn finish<S: Simd>(self, s: S, state: Self::State<S>, from: usize) -> Self::Output;
}

/// The output loop alone.
#[derive(Clone, Copy)]
struct Alone;

impl Beside for Alone {
    const ALONE: bool = true;
    type State<S: Simd> = ();
    type Output = ();
    #[inline(always)]
    fn start<S: Simd>(self, _s: S) {}
    #[inline(always)]
    fn group<S: Simd>(self, _s: S, _state: &mut (), _q: usize) {}
    #[inline(always)]
    fn finish<S: Simd>(self, _s: S, _state: (), _from: usize) {}
}

/// LayerNorm's first statistics pass of the next row, with shift c: (Σ(x − c),
/// Σ(x − c)²). It always subtracts c: x − (+0) = x bit for bit, so a shift of +0 gives the
/// sums [`ShiftedPass`] gives without the subtraction.
#[derive(Clone, Copy)]
struct NextShifted<'a, T> {
    x: &'a [T],
    shift: f64,
}

impl<'a, T: Element> Beside for NextShifted<'a, T> {
    type State<S: Simd> = NextRowSums<'a, S, T, ShiftedSums<S, true>>;
    type Output = (f64, f64);
    #[inline(always)]
    fn start<S: Simd>(self, s: S) -> Self::State<S> {
        let zero = s.splat(0.0);
        let f = ShiftedSums::<S, true> {
            shift: s.splat(self.shift),
        };
        NextRowSums::new(self.x, f, (zero, zero))
    }
    #[inline(always)]
    fn group<S: Simd>(self, s: S, state: &mut Self::State<S>, q: usize) {
        state.group(s, q);
    }
    #[inline(always)]
    fn finish<S: Simd>(self, s: S, state: Self::State<S>, from: usize) -> (f64, f64) {
        let acc = state.finish(s, from);
        (
            sum_lanes(s, [acc[0].0, acc[1].0]),
            sum_lanes(s, [acc[0].1, acc[1].1]),
        )
    }
}

/// RMSNorm's statistics pass of the next row: Σx².
#[derive(Clone, Copy)]
struct NextSquares<'a, T> {
    x: &'a [T],
}

impl<'a, T: Element> Beside for NextSquares<'a, T> {
    type State<S: Simd> = NextRowSums<'a, S, T, SumOfSquares>;
    type Output = f64;
    #[inline(always)]
    fn start<S: Simd>(self, s: S) -> Self::State<S> {
        NextRowSums::new(self.x, SumOfSquares, s.splat(0.0))
    }
    #[inline(always)]
    fn group<S: Simd>(self, s: S, state: &mut Self::State<S>, q: usize) {
        state.group(s, q);
    }
    #[inline(always)]
    fn finish<S: Simd>(self, s: S, state: Self::State<S>, from: usize) -> f64 {
        sum_lanes(s, state.finish(s, from))
    }
}

/// Σ(x − c) and Σ(x − c)², per lane; `SHIFT` false where c = +0, whose subtraction
/// (x − (+0) = x, bit for bit, −0 and NaN included) is left out.
struct ShiftedSums<S: Simd, const SHIFT: bool> {
    shift: S::V,
}

impl<S: Simd, const SHIFT: bool> Fold<S> for ShiftedSums<S, SHIFT> {
    type Acc = (S::V, S::V);
    #[inline(always)]
    fn prepare(&self, s: S, x: S::V) -> S::V {
        if SHIFT {
            s.sub(x, self.shift)
        } else {
            x
        }
    }
    #[inline(always)]
    fn fold(&self, s: S, (sum, sum_sq): Self::Acc, t: S::V) -> Self::Acc {
        (s.add(sum, t), s.fma(t, t, sum_sq))
    }
    #[inline(always)]
    fn fold_tail(&self, s: S, acc: Self::Acc, t: S::V, len: usize) -> Self::Acc {
        // Padding lanes hold 0 − c: zero them.
        let mut t = s.to_array(t);
        t[len..].fill(0.0);
        self.fold(s, acc, s.load_lanes(t))
    }
    #[inline(always)]
    fn merge(&self, s: S, (sum, sum_sq): Self::Acc, (bs, bq): Self::Acc) -> Self::Acc {
        (s.add(sum, bs), s.add(sum_sq, bq))
    }
}

/// Σx² (RMSNorm).
struct SumOfSquares;

impl<S: Simd> Fold<S> for SumOfSquares {
    type Acc = S::V;
    #[inline(always)]
    fn prepare(&self, _s: S, x: S::V) -> S::V {
        x
    }
    #[inline(always)]
    fn fold(&self, s: S, acc: S::V, x: S::V) -> S::V {
        s.fma(x, x, acc)
    }
    #[inline(always)]
    fn fold_tail(&self, s: S, acc: S::V, x: S::V, _len: usize) -> S::V {
        // Padding lanes hold zeros, whose squares add nothing.
        self.fold(s, acc, x)
    }
    #[inline(always)]
    fn merge(&self, s: S, acc: S::V, block: S::V) -> S::V {
        s.add(acc, block)
    }
}

/// The sixteen lanes of two accumulators summed in a fixed pairwise order.
#[inline(always)]
fn sum_lanes<S: Simd>(s: S, acc: [S::V; 2]) -> f64 {
    let (a, b) = (s.to_array(acc[0]), s.to_array(acc[1]));
    let mut v: [f64; 8] = std::array::from_fn(|k| a[k] + b[k]);
    let mut width = 4;
    while width > 0 {
        for k in 0..width {
            v[k] += v[k + width];
        }
        width /= 2;
    }
    v[0]
}

/// The statistics pass of LayerNorm with shift c: (Σ(x − c), Σ(x − c)²), widening the row
/// into `wide` on the way where that is not empty.
struct ShiftedPass<'a, T> {
    x: &'a [T],
    wide: &'a mut [[f64; 8]],
    shift: f64,
    /// The next row's start, to request as the pass goes (see [`reduce`]).
    request: Option<*const u8>,
}

impl<T: Element> Vectorized for ShiftedPass<'_, T> {
    type Output = (f64, f64);
    #[inline(always)]
    fn run<S: Simd>(self, s: S) -> (f64, f64) {
        let zero = s.splat(0.0);
        let shift = s.splat(self.shift);
        let acc = if is_zero_shift(self.shift) {
            let f = ShiftedSums::<S, false> { shift };
            reduce(s, self.x, &f, (zero, zero), self.wide, self.request)
        } else {
            let f = ShiftedSums::<S, true> { shift };
            reduce(s, self.x, &f, (zero, zero), self.wide, self.request)
        };
        (
            sum_lanes(s, [acc[0].0, acc[1].0]),
            sum_lanes(s, [acc[0].1, acc[1].1]),
        )
    }
}

/// The statistics pass of RMSNorm: Σx², widening the row into `wide` where that is not
/// empty.
struct SquaresPass<'a, T> {
    x: &'a [T],
    wide: &'a mut [[f64; 8]],
    /// As [`ShiftedPass::request`].
    request: Option<*const u8>,
}

impl<T: Element> Vectorized for SquaresPass<'_, T> {
    type Output = f64;
    #[inline(always)]
    fn run<S: Simd>(self, s: S) -> f64 {
        let zero = s.splat(0.0);
        sum_lanes(
            s,
            reduce(s, self.x, &SumOfSquares, zero, self.wide, self.request),
        )
    }
}

/// Σx² of a row as RMSNorm's statistics pass takes it, widening nothing (for the tests).
#[cfg(test)]
pub(crate) fn sum_of_squares<S: Simd, T: Element>(s: S, x: &[T]) -> f64 {
    s.isolated(SquaresPass {
        x,
        wide: &mut [],
        request: None,
    })
}

/// Σ(x − c) and Σ(x − c)² of a row as LayerNorm's statistics pass alone takes them with
/// shift c, widening nothing (for the tests).
#[cfg(test)]
fn shifted_sums<S: Simd, T: Element>(s: S, x: &[T], shift: f64) -> (f64, f64) {
    s.isolated(ShiftedPass {
        x,
        wide: &mut [],
        shift,
        request: None,
    })
}

/// The normalized value z of one vector, before γ and β: from x, or from t, x prepared by
/// the statistics pass ([`Fold::prepare`]) and kept by rows widened once. Both give the same
/// bits (z from x computes t first, the same way).
pub(super) trait Normalize<S: Simd>: Copy {
    /// Whether z subtracts the mean (LayerNorm), also on the f32 path ([`narrow`]).
    const CENTER: bool;
    fn z(&self, s: S, x: S::V) -> S::V;
    fn z_prepared(&self, s: S, t: S::V) -> S::V;
    /// The row's certainty filter of the f64 path ([`NearFilter`]).
    fn filter(&self) -> &NearFilter;
}

/// How far the f64 value y = γ·z + β of the output pass may be from the exact one, as the
/// certainty test takes it (u = 2^-53):
///
///   |ŷ − y| ≤ RELATIVE·(|ŷ| + |β|) + |γ|·absolute.
///
/// * RELATIVE covers the relative error of z (the scale's, from the variance's rounding
///   errors, and those of the few operations after it) and the final rounding, as a share
///   of |γ·z| ≤ |ŷ| + |β|: where γ·z + β cancels, the error is that of γ·z, not of ŷ.
/// * absolute (LayerNorm) covers z's error that does not shrink with z: r·|m − δ|, the
///   error of the mean (from the rounding errors of Σ(x − c)), and ½u·r·|m|, from m·r
///   rounded (z = fma(x − c, r, −m·r)). It is `u·r·(ABSOLUTE_MEAN·|m| + ABSOLUTE_SPREAD·σ)`.
///
/// These are coverage factors over the errors measured on random and structured rows
/// (`bound_tests`: at most 19 % of the bound, d from 64 to 65536), not proved bounds: the
/// summation errors are ≲ n·u in the worst case (n = d/16 terms per partial sum).
///
/// Each vector goes through a cheap filter ([`NearFilter`]): a lane passes when it is at
/// least W f64-ulps from the midpoint of its interval and |ŷ| ≥ small, with small =
/// max(2^emin, floor/((W − 64)·u)), floor = RELATIVE·max|β| + max|γ|·absolute over the
/// call. Then the bound is below RELATIVE·|ŷ| + (W − 64)·u·|ŷ| < W·u·|ŷ| < W ulps of ŷ:
/// less than the distance to any midpoint (those of the lower binade are at least
/// 2^(half_bit − 1) ulps away, and W ≤ 2^(half_bit − 1)). The lanes that fail it get the
/// test itself, lane by lane ([`needs_exact`]), and go to the exact reference if they fail
/// that.
pub(crate) const RELATIVE: f64 = 32.0 * U;
pub(crate) const ABSOLUTE_MEAN: f64 = 4.0;
pub(crate) const ABSOLUTE_SPREAD: f64 = 1.0;
const U: f64 = 1.0 / (1u64 << 53) as f64;
/// The filter's window W in f64-ulps, per format (`half_bit`): the lanes it sends to the
/// lane-by-lane test are those within W ulps of a midpoint, 2W/2^(half_bit + 1) of random
/// ones, and those below small, about 0.8·2·small of |ŷ| ~ N(0, 1), small ≈ 16/W with
/// the bench's γ and β: the sum is least for W² ≈ 2^(half_bit + 4.7). f32: 2^16 (4.4e-4
/// of its lanes, about two per row of 4096); f16: 2^23; bf16: 2^24 (below 1e-5).
#[inline(always)]
fn window(half_bit: u32) -> u64 {
    1 << ((half_bit + 5) / 2).min(half_bit - 1)
}

/// The least |ŷ| for which a window of w ulps covers the bound's `floor`: floor/((w − 64)·u),
/// rounded up by far more than the few roundings in and around it. A product with the
/// reciprocal, a constant where w is: this runs once a row, on the chain of scalar
/// operations between the row's sums and its output loop.
#[inline(always)]
fn covered_from(floor: f64, w: u64) -> f64 {
    floor * (1.0 / ((w - 64) as f64 * U)) * (1.0 + 1e-9)
}

/// The test itself for one lane: whether ŷ = `y` rounds (to the output format) as the
/// exact value does, given the bound fma(size, RELATIVE, floor) (see [`bound_terms`]).
/// It compares the bound with a lower bound of the distance to the nearest midpoint: the
/// distance to the midpoint of y's own interval (y's bits below the format's last one
/// replaced by the midpoint pattern: the same binade, so the subtraction is exact), and
/// |y|·2^(−p−2) for the lower binade's (for y in [2^e, 2^(e+1)), the nearest below 2^e is
/// 2^e − 2^(e−p−1)); below the format's normal range, the distance on its fixed grid.
/// Non-finite values are left as they are (a row whose statistics are finite has a
/// finite ŷ wherever γ and β are finite).
fn needs_exact<T: Element>(y: f64, size: f64, floor: f64) -> bool {
    if !y.is_finite() {
        return false;
    }
    let bound = size.mul_add(RELATIVE, floor);
    let magnitude = y.abs();
    let distance = if magnitude >= pow2(T::DTYPE.emin()) {
        let half = 1u64 << T::HALF_ULP_BIT;
        let midpoint = f64::from_bits((y.to_bits() & !(2 * half - 1)) | half);
        let lower = magnitude * pow2(-(T::PRECISION as i32) - 2);
        (y - midpoint).abs().min(lower)
    } else {
        // The midpoints (k + ½)·s of the subnormal spacing s (zero is s/2 away). Exact:
        // scaling by a power of two, and a subtraction of numbers below 2^24 whose
        // difference has no more bits than y.
        let spacing = T::DTYPE.min_positive_subnormal();
        let w = magnitude / spacing;
        (w - w.floor() - 0.5).abs() * spacing
    };
    // NaN in the bound (a NaN γ or β) fails the lane: `kept` is false for it.
    let kept = bound < distance;
    !kept
}

/// A row's constants of the certainty test, as scalars.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckConstants {
    /// z's absolute error term (0 for RMSNorm).
    absolute: f64,
    filter: NearFilter,
}

impl CheckConstants {
    /// The test of a row of output format `T` whose z has absolute error term `absolute`,
    /// with max |γ| and |β| of the call in `params`.
    fn new<T: Element>(absolute: f64, params: narrow::ParamsMax) -> CheckConstants {
        let floor = RELATIVE * params.beta + params.gamma * absolute;
        // Rounded up by far more than the few roundings above and below; NaN (a NaN in γ
        // or β) fails every lane, as it should.
        let w = window(T::HALF_ULP_BIT);
        let filter = NearFilter::new(T::DTYPE, w, covered_from(floor, w));
        CheckConstants { absolute, filter }
    }
}

/// The two terms of the bound (size, floor) of each lane of ŷ = `y`, γ = `g`, β = `b`
/// (those absent ignored): bound = fma(size, RELATIVE, floor). RMSNorm's `absolute` is 0.
fn bound_terms<const G: bool, const B: bool>(
    c: &CheckConstants,
    y: [f64; 8],
    g: [f64; 8],
    b: [f64; 8],
) -> ([f64; 8], [f64; 8]) {
    let size = std::array::from_fn(|l| {
        if B {
            y[l].abs() + b[l].abs()
        } else {
            y[l].abs()
        }
    });
    // |γ| = 1 where there is no γ.
    let floor = std::array::from_fn(|l| {
        if G {
            g[l].abs() * c.absolute
        } else {
            c.absolute
        }
    });
    (size, floor)
}

/// A row's statistics as scalars, turned into vectors inside the loops that use them.
pub(super) trait RowConstants: Copy {
    type N<S: Simd>: Normalize<S>;
    /// Whether rows with these constants compute z from x alone: never from the widened
    /// row, never on the f32 path. LayerNorm's constants for shift 0, whose only gain, the
    /// subtraction z(x) leaves out, is in the loop over x (z from the widened row never
    /// subtracts): the other loops are not compiled for them.
    const X_ONLY: bool = false;
    fn vectors<S: Simd>(self, s: S) -> Self::N<S>;
    fn check(&self) -> &CheckConstants;
}

/// LayerNorm: z = (x − c)·r − m·r, m = mean(x − c), as one fused multiply-add after the
/// exact x − c: one operation fewer per vector than ((x − c) − m)·r, for the same error
/// bound (½u·|z| + ½u·r·|m| against u·|z|; see [`RELATIVE`] and `absolute`). `SHIFT` is
/// false where c = +0: z = fma(x, r, −m·r), the same bits without the subtraction.
#[derive(Clone, Copy)]
struct Centered<S: Simd, const SHIFT: bool> {
    shift: S::V,
    /// −m·r.
    offset: S::V,
    scale: S::V,
    filter: NearFilter,
}

impl<S: Simd, const SHIFT: bool> Normalize<S> for Centered<S, SHIFT> {
    const CENTER: bool = true;
    #[inline(always)]
    fn z(&self, s: S, x: S::V) -> S::V {
        if SHIFT {
            self.z_prepared(s, s.sub(x, self.shift))
        } else {
            self.z_prepared(s, x)
        }
    }
    #[inline(always)]
    fn z_prepared(&self, s: S, t: S::V) -> S::V {
        s.fma(t, self.scale, self.offset)
    }
    #[inline(always)]
    fn filter(&self) -> &NearFilter {
        &self.filter
    }
}

/// [`Centered`]'s scalars: c, −m·r, r, and the certainty test (`SHIFT` false only where
/// c = +0).
#[derive(Clone, Copy)]
struct CenteredConstants<const SHIFT: bool> {
    shift: f64,
    offset: f64,
    scale: f64,
    check: CheckConstants,
}

impl CenteredConstants<true> {
    /// The same constants for a row whose shift is +0, with z(x) leaving out its
    /// subtraction.
    fn without_shift(self) -> CenteredConstants<false> {
        debug_assert!(is_zero_shift(self.shift));
        let CenteredConstants {
            shift,
            offset,
            scale,
            check,
        } = self;
        CenteredConstants {
            shift,
            offset,
            scale,
            check,
        }
    }
}

impl<const SHIFT: bool> CenteredConstants<SHIFT> {
    /// The constants of a row of output format `T` with these statistics and ε.
    fn new<T: Element>(
        stats: &CenteredStats,
        eps: f32,
        params: narrow::ParamsMax,
    ) -> CenteredConstants<SHIFT> {
        debug_assert!(SHIFT || is_zero_shift(stats.shift));
        let scale = 1.0 / (stats.var + eps as f64).sqrt();
        let absolute = U
            * scale
            * (ABSOLUTE_MEAN * stats.mean_shifted.abs() + ABSOLUTE_SPREAD * stats.var.sqrt());
        CenteredConstants {
            shift: stats.shift,
            offset: -(stats.mean_shifted * scale),
            scale,
            check: CheckConstants::new::<T>(absolute, params),
        }
    }
}

impl<const SHIFT: bool> RowConstants for CenteredConstants<SHIFT> {
    type N<S: Simd> = Centered<S, SHIFT>;
    const X_ONLY: bool = !SHIFT;
    #[inline(always)]
    fn vectors<S: Simd>(self, s: S) -> Centered<S, SHIFT> {
        Centered {
            shift: s.splat(self.shift),
            offset: s.splat(self.offset),
            scale: s.splat(self.scale),
            filter: self.check.filter,
        }
    }
    #[inline(always)]
    fn check(&self) -> &CheckConstants {
        &self.check
    }
}

/// RMSNorm: z = x·r.
#[derive(Clone, Copy)]
struct Scaled<S: Simd> {
    scale: S::V,
    filter: NearFilter,
}

impl<S: Simd> Normalize<S> for Scaled<S> {
    const CENTER: bool = false;
    #[inline(always)]
    fn z(&self, s: S, x: S::V) -> S::V {
        s.mul(x, self.scale)
    }
    #[inline(always)]
    fn z_prepared(&self, s: S, t: S::V) -> S::V {
        self.z(s, t)
    }
    #[inline(always)]
    fn filter(&self) -> &NearFilter {
        &self.filter
    }
}

/// [`Scaled`]'s scalar r, and the certainty test.
#[derive(Clone, Copy)]
struct ScaledConstants {
    scale: f64,
    check: CheckConstants,
}

impl ScaledConstants {
    /// The constants of a row of output format `T` with Σx² = `sum_sq` and ε.
    fn new<T: Element>(
        sum_sq: f64,
        d: usize,
        eps: f32,
        params: narrow::ParamsMax,
    ) -> ScaledConstants {
        ScaledConstants {
            scale: 1.0 / (sum_sq / d as f64 + eps as f64).sqrt(),
            // z = x·r has no error term that does not shrink with z.
            check: CheckConstants::new::<T>(0.0, params),
        }
    }
}

impl RowConstants for ScaledConstants {
    type N<S: Simd> = Scaled<S>;
    #[inline(always)]
    fn vectors<S: Simd>(self, s: S) -> Scaled<S> {
        Scaled {
            scale: s.splat(self.scale),
            filter: self.check.filter,
        }
    }
    #[inline(always)]
    fn check(&self) -> &CheckConstants {
        &self.check
    }
}

/// y = γ·z + β with one rounding, for whichever of γ (`G`) and β (`B`) are present.
#[inline(always)]
pub(super) fn affine<S: Simd, const G: bool, const B: bool>(
    s: S,
    z: S::V,
    g: S::V,
    b: S::V,
) -> S::V {
    match (G, B) {
        (true, true) => s.fma(g, z, b),
        (true, false) => s.mul(g, z),
        (false, true) => s.add(z, b),
        (false, false) => z,
    }
}

/// How γ and β are held for the output pass: f64 (widened once per call, loaded as they
/// are), or the row's own format, as given and widened on every load (single rows, and
/// wide rows of f32; there the row type is `f32` itself). Each holds every f32, f16 and bf16
/// value exactly.
pub(crate) trait Param: Copy + Default + Send + Sync + 'static {
    fn load<S: Simd>(s: S, v: &[Self; 8]) -> S::V;
    /// Sixteen values as f32 lanes (exact: every value is an f32, f16 or bf16 one).
    fn load16<S: Simd>(s: S, v: &[Self; 16]) -> S::F32x16;
    /// Two blocks of sixteen as `Element::load16_pair` loads x, in its lane order.
    fn load16_pair<S: Simd>(s: S, v: &[Self; 32]) -> [S::F32x16; 2];
    fn to_f64(self) -> f64;
}

impl Param for f64 {
    #[inline(always)]
    fn load<S: Simd>(s: S, v: &[f64; 8]) -> S::V {
        s.load_lanes(*v)
    }
    #[inline(always)]
    fn load16<S: Simd>(s: S, v: &[f64; 16]) -> S::F32x16 {
        // Never reached: rows on the f32 path hold γ and β as given (`normalize`), which
        // `Element::load16` loads in x's lane order.
        s.f32x16_load_f32(&v.map(|g| g as f32))
    }
    #[inline(always)]
    fn load16_pair<S: Simd>(s: S, v: &[f64; 32]) -> [S::F32x16; 2] {
        // Never reached, as `load16`.
        let [a, b] = crate::kernels::simd::halves(v);
        [Self::load16(s, a), Self::load16(s, b)]
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl<T: Element> Param for T {
    #[inline(always)]
    fn load<S: Simd>(s: S, v: &[T; 8]) -> S::V {
        T::load(s, v)
    }
    #[inline(always)]
    fn load16<S: Simd>(s: S, v: &[T; 16]) -> S::F32x16 {
        T::load16(s, v)
    }
    #[inline(always)]
    fn load16_pair<S: Simd>(s: S, v: &[T; 32]) -> [S::F32x16; 2] {
        T::load16_pair(s, v)
    }
    fn to_f64(self) -> f64 {
        T::DTYPE.to_f64(self.to_bits())
    }
}

#[inline(always)]
fn load_padded_param<S: Simd, P: Param>(s: S, src: &[P]) -> S::V {
    let mut buf = [P::default(); 8];
    buf[..src.len()].copy_from_slice(src);
    P::load(s, &buf)
}

/// The row's parameters and what the exact reference needs to settle near-ties.
pub(crate) struct RowParams<'a, P> {
    pub op: Op,
    /// γ and β (length d), or empty when absent.
    pub gamma: &'a [P],
    pub beta: &'a [P],
    pub eps: f32,
    /// Write y with non-temporal stores (where a row starts 16-byte aligned).
    pub stream: bool,
    /// Widen rows once (up to [`WIDEN_MAX_D`]): the statistics pass keeps the widened row
    /// for the output pass (see `run_rows`).
    pub widen_once: bool,
    /// max |γ| and |β| of the call: the f64 path's certainty filter, and the f32 path of
    /// the 16-bit formats ([`narrow`]).
    pub params_max: narrow::ParamsMax,
}

impl<P> RowParams<'_, P> {
    /// The format of the f32 path where the rows of `T` take it, else `None` (always for
    /// f32 rows). The call decides it once (`narrow::path_format`), and the 16-bit formats'
    /// rows are widened once exactly where they do not take it (see `run_rows`).
    #[inline(always)]
    fn f32_path<T: Element>(&self) -> Option<narrow::NarrowFormat> {
        T::NARROW.filter(|_| !self.widen_once)
    }
}

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

/// Whether the next row's statistics pass runs beside this row's output loop ([`Beside`]):
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
    debug_assert!(T::NARROW.is_none());
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
    /// are; the f64 path's laid out as [`Reports`] says.
    flags: Vec<u8>,
    /// The indices of the flags that are set, found by [`flagged_vectors`].
    flagged: Vec<u32>,
}

/// The output loop over a row's whole vectors: y = γ·z(x) + β, rounded once to `T`, and
/// in `flags` the stores' reports (the lanes they reported, in the store's order: see
/// [`Element::reported_lanes`]), eight vectors' OR-ed ([`Reports`]): the loop only needs
/// to know where the reported lanes are, and the second look finds each vector's own.
/// `WIDE`: x is read from `wide`; `STREAM`: non-temporal stores. `beside` runs with the
/// loop, a group of vectors at a time (see [`Beside`]).
struct OutputPass<
    'a,
    T,
    P,
    C,
    K,
    const G: bool,
    const B: bool,
    const WIDE: bool,
    const STREAM: bool,
> {
    x: &'a [[T; 8]],
    wide: &'a [[f64; 8]],
    gamma: &'a [[P; 8]],
    beta: &'a [[P; 8]],
    y: &'a mut [[T; 8]],
    flags: &'a mut [u8],
    /// The start of the next row, if any: its cache lines are requested, one per line of
    /// this row, as the loop goes. None for a row with no next one (a single row, the last
    /// row of a task), whose loop then issues no prefetch at all: prefetching its own
    /// lines instead cost ≈ 0.5 cycles per vector in a C model of the f32 loop (9 % of the
    /// output pass); 1×4096 f32 RMSNorm 1.28 → 1.23 µs without it.
    next: Option<*const u8>,
    constants: C,
    beside: K,
}

impl<
        T: Element,
        P: Param,
        C: RowConstants,
        K: Beside,
        const G: bool,
        const B: bool,
        const WIDE: bool,
        const STREAM: bool,
    > Vectorized for OutputPass<'_, T, P, C, K, G, B, WIDE, STREAM>
{
    type Output = (u16, K::Output);
    #[inline(always)]
    fn run<S: Simd>(self, s: S) -> (u16, K::Output) {
        let n = self.constants.vectors(s);
        let len = self.y.len();
        let src = Sources {
            x: &self.x[..len],
            wide: if WIDE { &self.wide[..len] } else { &[] },
            gamma: if G { &self.gamma[..len] } else { &[] },
            beta: if B { &self.beta[..len] } else { &[] },
        };
        let (y, flags) = (self.y, &mut self.flags[..Reports::<T>::bytes(len)]);
        // Whole reports (see [`Reports`]), each requesting, with a next row, the lines of
        // the next row under its own; then the last, partial one. Without a next row no
        // line is requested: prefetching a row's own lines cost ≈ 0.5 cycles per vector
        // in a C model of the f32 loop.
        let group = Reports::<T>::GROUP;
        let lines_per_group = (group * 8 * std::mem::size_of::<T>()).div_ceil(64);
        let whole = len / group;
        let mut any = 0u16;
        let mut beside = self.beside.start(s);
        for q in 0..whole {
            let lines = self
                .next
                .map(|next| next.wrapping_add(64 * lines_per_group * q));
            let vectors = q * group..(q + 1) * group;
            let report = src
                .part::<G, B, WIDE>(vectors.clone())
                .write_group::<S, _, G, B, WIDE, STREAM>(s, &n, &mut y[vectors], lines);
            Reports::<T>::record(flags, q, report);
            any |= report;
            self.beside.group(s, &mut beside, q);
        }
        // The last, partial report: the same lines as a whole one's, not shared through a
        // closure (compiled without the instruction set, the loop ran 25× slower), and
        // apart so that the whole reports' loops, of a constant length, unroll.
        if whole * group < len {
            let vectors = whole * group..len;
            let report = src
                .part::<G, B, WIDE>(vectors.clone())
                .write_group::<S, _, G, B, WIDE, STREAM>(s, &n, &mut y[vectors], None);
            Reports::<T>::record(flags, whole, report);
            any |= report;
        }
        let beside = self.beside.finish(s, beside, whole);
        if T::STORES_PAIRS {
            (any, beside)
        } else {
            // f32 reports every flag to the scan: most rows of f32 have a flagged vector
            // (the window reports about one value in 4096), so the OR would rarely spare
            // the scan.
            (u16::MAX, beside)
        }
    }
}

/// Where the f64 path's output loop records its stores' reports in `flags`, counting from
/// the first vector the loop takes. A report covers a group of [`Reports::GROUP`] vectors,
/// the reports of [`Element::STORES_PER_REPORT`] stores OR-ed, and has a byte for each
/// place in a store: byte b of group q covers vectors qG + b, qG + b + W, … (W vectors a
/// store, G a group). Both have G = 8: f32 a byte for eight single stores, the 16-bit
/// formats two for four pairs (the even vectors' byte low). The second look stores each
/// vector a set byte covers again, to a buffer, for its own report (see `write_row`).
struct Reports<T>(std::marker::PhantomData<T>);

impl<T: Element> Reports<T> {
    const PER_STORE: usize = if T::STORES_PAIRS { 2 } else { 1 };
    const GROUP: usize = Self::PER_STORE * T::STORES_PER_REPORT;

    /// The bytes the loop writes over `len` vectors: a last, partial group has a byte for
    /// each place in a store that one of its vectors takes (its odd last vector included).
    #[inline(always)]
    fn bytes(len: usize) -> usize {
        len / Self::GROUP * Self::PER_STORE + (len % Self::GROUP).min(Self::PER_STORE)
    }

    /// Report q into its bytes of `flags` (the first place's byte low); a last, partial
    /// report into those it has.
    #[inline(always)]
    fn record(flags: &mut [u8], q: usize, report: u16) {
        let at = q * Self::PER_STORE;
        if Self::PER_STORE == 1 {
            flags[at] = report as u8;
        } else if at + Self::PER_STORE <= flags.len() {
            flags[at..at + Self::PER_STORE].copy_from_slice(&report.to_le_bytes());
        } else {
            // A last group of one vector: one byte.
            flags[at] = report as u8;
        }
    }

    /// The vectors below `len` that byte i reports on.
    #[inline(always)]
    fn vectors(i: usize, len: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
        let group = i / Self::PER_STORE * Self::GROUP;
        let first = group + i % Self::PER_STORE;
        (first..len.min(group + Self::GROUP)).step_by(Self::PER_STORE)
    }
}

/// What the output loop reads, as local slices (copied out of any struct the loop's stores
/// could be thought to change).
#[derive(Clone, Copy)]
struct Sources<'a, T, P> {
    x: &'a [[T; 8]],
    wide: &'a [[f64; 8]],
    gamma: &'a [[P; 8]],
    beta: &'a [[P; 8]],
}

impl<T: Element, P: Param> Sources<'_, T, P> {
    /// Vector j of y, stored; the store's report (see [`Element::reported_lanes`]).
    #[inline(always)]
    fn write<
        S: Simd,
        N: Normalize<S>,
        const G: bool,
        const B: bool,
        const WIDE: bool,
        const STREAM: bool,
    >(
        self,
        s: S,
        n: &N,
        j: usize,
        y: &mut [[T; 8]],
    ) -> u8 {
        let (out, _, _) = self.value::<S, N, G, B, WIDE>(s, n, j);
        if STREAM {
            T::stream(s, out, &mut y[j], n.filter())
        } else {
            T::store(s, out, &mut y[j], n.filter())
        }
    }

    /// The sources of the vectors `vectors` (sliced once, so that a loop over them has
    /// no bounds checks).
    #[inline(always)]
    fn part<const G: bool, const B: bool, const WIDE: bool>(
        self,
        vectors: std::ops::Range<usize>,
    ) -> Self {
        Sources {
            x: &self.x[vectors.clone()],
            wide: if WIDE {
                &self.wide[vectors.clone()]
            } else {
                &[]
            },
            gamma: if G { &self.gamma[vectors.clone()] } else { &[] },
            beta: if B { &self.beta[vectors] } else { &[] },
        }
    }

    /// Every vector of `y` (the sources' vectors), stored a store at a time (one vector or
    /// a pair, and an odd last vector alone); their reports, OR-ed. With `lines` (the
    /// next row's line under the first vector), each store that starts a cache line
    /// requests the next row's line under it first: spread among the stores, not all at
    /// the start of the group (with the stores of y streamed, 16384 × 1024 f32 LayerNorm
    /// on 2 threads took 1.15 of the time requesting a group's four lines at once).
    #[inline(always)]
    fn write_group<
        S: Simd,
        N: Normalize<S>,
        const G: bool,
        const B: bool,
        const WIDE: bool,
        const STREAM: bool,
    >(
        self,
        s: S,
        n: &N,
        y: &mut [[T; 8]],
        lines: Option<*const u8>,
    ) -> u16 {
        let vector_bytes = 8 * std::mem::size_of::<T>();
        let request = |j: usize| {
            if let Some(lines) = lines {
                if (j * vector_bytes).is_multiple_of(64) {
                    s.prefetch(lines.wrapping_add(j * vector_bytes));
                }
            }
        };
        if T::STORES_PAIRS {
            let mut report = 0u16;
            for k in 0..y.len() / 2 {
                request(2 * k);
                report |= self.write_pair::<S, N, G, B, WIDE, STREAM>(s, n, k, y);
            }
            if y.len() % 2 == 1 {
                report |= self.write::<S, N, G, B, WIDE, STREAM>(s, n, y.len() - 1, y) as u16;
            }
            report
        } else {
            // OR-ed as bytes: kept in mask registers, where an OR of wider words moved
            // each report to a general register first.
            let mut report = 0u8;
            for j in 0..y.len() {
                request(j);
                report |= self.write::<S, N, G, B, WIDE, STREAM>(s, n, j, y);
            }
            report as u16
        }
    }

    /// Vectors 2k and 2k + 1 of y, stored as a pair ([`Element::store_pair`]); the
    /// report, the first vector's in the low byte.
    #[inline(always)]
    fn write_pair<
        S: Simd,
        N: Normalize<S>,
        const G: bool,
        const B: bool,
        const WIDE: bool,
        const STREAM: bool,
    >(
        self,
        s: S,
        n: &N,
        k: usize,
        y: &mut [[T; 8]],
    ) -> u16 {
        let j = 2 * k;
        let (first, _, _) = self.value::<S, N, G, B, WIDE>(s, n, j);
        let (second, _, _) = self.value::<S, N, G, B, WIDE>(s, n, j + 1);
        let y: &mut [T; 16] = y[j..j + 2].as_flattened_mut().try_into().expect("16");
        T::store_pair(s, [first, second], y, n.filter(), STREAM)
    }

    /// The f64 value (before rounding) of vector j of y, and γ and β (zero where absent).
    #[inline(always)]
    fn value<S: Simd, N: Normalize<S>, const G: bool, const B: bool, const WIDE: bool>(
        self,
        s: S,
        n: &N,
        j: usize,
    ) -> (S::V, S::V, S::V) {
        let zero = s.splat(0.0);
        let g = if G { P::load(s, &self.gamma[j]) } else { zero };
        let b = if B { P::load(s, &self.beta[j]) } else { zero };
        let z = if WIDE {
            n.z_prepared(s, s.load_lanes(self.wide[j]))
        } else {
            n.z(s, T::load(s, &self.x[j]))
        };
        (affine::<S, G, B>(s, z, g, b), g, b)
    }
}

/// The output pass of a row: the whole vectors in [`OutputPass`] (with `beside`, which
/// only rows off the f32 path and not widened take), then a second look at the lanes its
/// stores reported (those vectors computed again: the same operations give the same
/// values), then the partial last vector; lanes near a rounding midpoint are collected in
/// `near_ties`. Returns what `beside` gave.
#[inline(always)]
fn write_row<
    S: Simd,
    T: Element,
    P: Param,
    C: RowConstants,
    K: Beside,
    const G: bool,
    const B: bool,
>(
    s: S,
    row: &mut Row<'_, T>,
    p: &RowParams<'_, P>,
    c: C,
    narrow: Option<NarrowRow>,
    beside: K,
    scratch: &mut Scratch,
) -> K::Output {
    let Row { x, next, y, .. } = row;
    let Scratch {
        near_ties,
        wide,
        flags,
        flagged,
    } = scratch;
    let wide = lanes(wide);
    debug_assert!(!C::X_ONLY || (wide.is_empty() && narrow.is_none()));
    let use_wide = !C::X_ONLY && !wide.is_empty();
    debug_assert!(K::ALONE || (!use_wide && narrow.is_none()));
    let stream = p.stream && (y.as_ptr() as usize).is_multiple_of(16);
    let (xc, xt) = x.as_chunks::<8>();
    let (yc, yt) = y.as_chunks_mut::<8>();
    let (gc, gt) = p.gamma.as_chunks::<8>();
    let (bc, bt) = p.beta.as_chunks::<8>();
    // Every entry is written by the loop: grown, never cleared.
    if flags.len() < xc.len() {
        flags.resize(xc.len(), 0);
    }
    let flags = &mut flags[..xc.len()];
    let next = (!next.is_empty()).then_some(next.as_ptr() as *const u8);
    // The f32 path takes the whole pairs of vectors where the row allows it; the f64 loop
    // takes the rest (every vector, or the odd last one).
    // (A constant condition: constants that take x only compile neither the f32 path nor
    // the passes over the widened row.)
    let narrow = if C::X_ONLY { None } else { narrow };
    // Rows on the f32 path had their next row requested by the statistics pass
    // (`requested_by_statistics`), which took it from the row: neither loop requests it.
    debug_assert!(narrow.is_none() || next.is_none());
    let start = match narrow {
        Some(row) => {
            let pairs = xc.len() / 2;
            let (x16, g16, b16) = (pairs_of(xc), pairs_of(gc), pairs_of(bc));
            let y16 = yc[..2 * pairs].as_flattened_mut().as_chunks_mut::<16>().0;
            let f16 = flags[..2 * pairs].as_chunks_mut::<2>().0;
            macro_rules! narrow {
                ($stream:literal) => {
                    s.isolated(NarrowPass::<T, P, C, G, B, $stream, true> {
                        x: x16,
                        gamma: g16,
                        beta: b16,
                        y: y16,
                        flags: f16,
                        row,
                        constants: c,
                    })
                };
            }
            if stream {
                narrow!(true)
            } else {
                narrow!(false)
            }
            2 * pairs
        }
        None => 0,
    };
    macro_rules! pass {
        ($wide:literal, $stream:literal) => {
            s.isolated(OutputPass::<T, P, C, K, G, B, $wide, $stream> {
                x: &xc[start..],
                wide: from(wide, start),
                gamma: from(gc, start),
                beta: from(bc, start),
                y: &mut yc[start..],
                flags: &mut flags[start..],
                next,
                constants: c,
                beside,
            })
        };
    }
    // The OR of the f64 loop's reports; the f32 path's are always scanned.
    let mut reported = if start > 0 { u16::MAX } else { 0 };
    // (Constant conditions: the passes over the widened row are compiled neither for
    // constants that take x only nor beside another pass, nor streamed passes beside one.)
    let (report, beside) = if start == xc.len() {
        // No whole vector for the loop: `beside` runs alone.
        (0, beside.finish(s, beside.start(s), 0))
    } else if !K::ALONE {
        // Beside another pass only where y is cached (see `fuses_next_statistics`).
        debug_assert!(!stream);
        pass!(false, false)
    } else if C::X_ONLY {
        if stream {
            pass!(false, true)
        } else {
            pass!(false, false)
        }
    } else {
        match (use_wide, stream) {
            (false, false) => pass!(false, false),
            (false, true) => pass!(false, true),
            (true, false) => pass!(true, false),
            (true, true) => pass!(true, true),
        }
    };
    reported |= report;
    let n = c.vectors(s);
    let zero = s.splat(0.0);
    let src = Sources {
        x: xc,
        wide,
        gamma: gc,
        beta: bc,
    };
    // Most f32 rows have a flagged vector or two (a row of 4096 about one), so the scan
    // runs on most rows: out of line, in a loop of its own (inlined here, among the row's
    // live values, it kept its iterators on the stack; the code around the two loops took
    // 15 % of a 4096 × 4096 f32 LayerNorm's kernel samples on Zen 3, 7.5 % with this).
    // 16-bit rows have fewer, and the OR of the reports spares those with none the scan,
    // whose 8-byte loads would wait for the flag stores just made to reach the cache
    // (64 × 1024 f16 LayerNorm: the scan's share of the samples fell from 10.9 % to 1.9 %).
    // The f32 path's flags are one a vector; the f64 loop's from `start` on, its reports
    // (see [`Reports`]).
    let flags = &flags[..start + Reports::<T>::bytes(xc.len() - start)];
    if reported != 0 {
        flagged_vectors(flags, flagged);
    } else {
        flagged.clear();
    }
    for &i in flagged.iter() {
        let i = i as usize;
        let (vectors, first) = if i < start {
            ((i..i + 1).step_by(1), 0)
        } else {
            (Reports::<T>::vectors(i - start, xc.len() - start), start)
        };
        let shared = vectors.len() > 1;
        for j in vectors {
            let j = first + j;
            let (out, g, b) = if use_wide {
                src.value::<S, _, G, B, true>(s, &n, j)
            } else {
                src.value::<S, _, G, B, false>(s, &n, j)
            };
            // A report of several vectors: each vector's own, from the same store again
            // (the same operations give the same value and report), so that the second
            // look takes the lanes it took when every vector had its own report.
            let report = if shared {
                T::store(s, out, &mut [T::default(); 8], n.filter())
            } else {
                flags[i]
            };
            if report == 0 {
                continue;
            }
            // Not `[out, g, b].map(..)`: the closure is compiled without the instruction
            // set, and each `to_array` became a call.
            let lanes = [s.to_array(out), s.to_array(g), s.to_array(b)];
            let reported = T::reported_lanes(s, report);
            second_look::<T, C, G, B>(c, lanes, reported, &mut yc[j], 8 * j, near_ties);
        }
    }
    if !xt.is_empty() {
        let g = if G { load_padded_param(s, gt) } else { zero };
        let b = if B { load_padded_param(s, bt) } else { zero };
        let z = if use_wide {
            n.z_prepared(s, s.load_lanes(wide[xc.len()]))
        } else {
            n.z(s, load_padded(s, xt))
        };
        let out = affine::<S, G, B>(s, z, g, b);
        let mut buf = [T::default(); 8];
        let valid = ((1u16 << yt.len()) - 1) as u8;
        let flagged = T::reported_lanes(s, T::store(s, out, &mut buf, n.filter())) & valid;
        if flagged != 0 {
            let lanes = [s.to_array(out), s.to_array(g), s.to_array(b)];
            second_look::<T, C, G, B>(c, lanes, flagged, &mut buf, 8 * xc.len(), near_ties);
        }
        yt.copy_from_slice(&buf[..yt.len()]);
    }
    beside
}

/// The indices of the nonzero entries of `flags`, in order, into `out` (cleared first):
/// eight flags at a time, each set byte of a word found by its trailing zeros.
#[inline(never)]
fn flagged_vectors(flags: &[u8], out: &mut Vec<u32>) {
    out.clear();
    let (words, rest) = flags.as_chunks::<8>();
    for (w, word) in words.iter().enumerate() {
        let mut word = u64::from_le_bytes(*word);
        while word != 0 {
            let byte = word.trailing_zeros() / 8;
            out.push(8 * w as u32 + byte);
            word &= !(0xff << (8 * byte));
        }
    }
    let first = 8 * words.len() as u32;
    for (k, &f) in rest.iter().enumerate() {
        if f != 0 {
            out.push(first + k as u32);
        }
    }
}

/// Whole pairs of vectors as blocks of sixteen.
#[inline(always)]
fn pairs_of<X>(v: &[[X; 8]]) -> &[[X; 16]] {
    v.as_flattened().as_chunks::<16>().0
}

/// The vectors from `start` on; none of an absent γ or β (empty).
#[inline(always)]
fn from<X>(v: &[X], start: usize) -> &[X] {
    v.get(start..).unwrap_or(&[])
}

/// The lanes the output pass reported (ŷ, γ, β lane by lane in `lanes`): each is rewritten
/// with the correct rounding of ŷ, and those that [`needs_exact`] says so are noted for
/// the exact decision.
#[cold]
#[inline(never)]
fn second_look<T: Element, C: RowConstants, const G: bool, const B: bool>(
    c: C,
    lanes: [[f64; 8]; 3],
    flagged: u8,
    out: &mut [T; 8],
    first: usize,
    near_ties: &mut Vec<u32>,
) {
    let [y, g, b] = lanes;
    let (size, floor) = bound_terms::<G, B>(c.check(), y, g, b);
    for (l, o) in out.iter_mut().enumerate() {
        if flagged & (1 << l) != 0 {
            *o = T::from_bits(T::DTYPE.round_f64(y[l]));
            if needs_exact::<T>(y[l], size[l], floor[l]) {
                near_ties.push((first + l) as u32);
            }
        }
    }
}

/// Settles the near-tie elements of a row exactly with the reference's exact statistics
/// and exact midpoint decisions.
#[cold]
#[inline(never)]
fn settle_near_ties<T: Element, P: Param>(
    x: &[T],
    p: &RowParams<'_, P>,
    y: &mut [T],
    near_ties: &[u32],
) {
    let values: Vec<f64> = x.iter().map(|v| T::DTYPE.to_f64(v.to_bits())).collect();
    let eps = rug::Rational::from_f64(p.eps as f64).expect("eps is finite");
    let stats = RowStats::compute(&values, T::DTYPE, p.op, EpsConvention::Inside, &eps);
    if stats.kind != RowKind::Defined {
        return;
    }
    for &i in near_ties {
        let i = i as usize;
        let input = ElementInput {
            x: values[i],
            gamma: p.gamma.get(i).map_or(1.0, |g| g.to_f64()),
            beta: p.beta.get(i).map_or(0.0, |b| b.to_f64()),
        };
        if !(input.gamma.is_finite() && input.beta.is_finite()) {
            continue;
        }
        let bits = crate::exact::Element::new(&stats, input).round(T::DTYPE);
        y[i] = T::from_bits(bits);
    }
}

fn fill_nan<T: Element>(y: &mut [T]) {
    y.fill(T::from_bits(T::DTYPE.nan_bits()));
}

/// Finishes a row: the output pass (with `beside`), then exact decisions for near-ties.
#[inline(always)]
fn finish_row<
    S: Simd,
    T: Element,
    P: Param,
    C: RowConstants,
    K: Beside,
    const G: bool,
    const B: bool,
>(
    s: S,
    mut row: Row<'_, T>,
    p: &RowParams<'_, P>,
    c: C,
    narrow: Option<NarrowRow>,
    beside: K,
    scratch: &mut Scratch,
) -> K::Output {
    scratch.near_ties.clear();
    let out = write_row::<S, T, P, C, K, G, B>(s, &mut row, p, c, narrow, beside, scratch);
    if !scratch.near_ties.is_empty() {
        settle_near_ties(row.x, p, row.y, &scratch.near_ties);
    }
    out
}

/// LayerNorm statistics: mean(x) = shift + mean_shifted, var = mean((x − mean)²).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CenteredStats {
    pub shift: f64,
    pub mean_shifted: f64,
    pub var: f64,
    /// Passes over the row it took (1 unless the first shift was far from the mean); the
    /// tests check it.
    #[allow(dead_code)]
    pub passes: u32,
}

/// The statistics of a row in one pass, shifted by c: S = Σ(x − c), Q = Σ(x − c)², then
/// m = S/d and var = Q/d − m². Accepted when m² ≤ 8·var (the shift lies within √8 σ of
/// the mean, so cancellation costs at most a factor 9), or m² ≤ var where c = 0 (a factor
/// 2: see [`first_shift`]); otherwise the shift moves to the estimated mean and the pass is
/// repeated (a third pass is never needed in practice: |μ − c| ≤ σ√d at first, and moving
/// leaves |μ − c| ≲ (d/16)·u·σ√d). `None` when the sums are not finite (a ±∞ or NaN in
/// the row). The first pass requests the lines of `request` (see [`reduce`]).
#[cfg(test)]
pub(crate) fn layer_norm_stats<S: Simd, T: Element>(
    s: S,
    x: &[T],
    wide: &mut [[f64; 8]],
    request: Option<*const u8>,
) -> Option<CenteredStats> {
    layer_norm_stats_after(s, x, wide, request, None)
}

/// [`layer_norm_stats`], whose first pass (shift, Σ(x − c), Σ(x − c)²) may have been made
/// already, beside the previous row's output loop ([`NextShifted`]; then `wide` is empty).
#[inline(always)]
fn layer_norm_stats_after<S: Simd, T: Element>(
    s: S,
    x: &[T],
    wide: &mut [[f64; 8]],
    request: Option<*const u8>,
    first: Option<(f64, f64, f64)>,
) -> Option<CenteredStats> {
    debug_assert!(first.is_none() || wide.is_empty());
    let d = x.len() as f64;
    let (mut shift, mut made) = match first {
        Some((shift, sum, sum_sq)) => (shift, Some((sum, sum_sq))),
        None => (first_shift(s, x), None),
    };
    let mut passes = 0;
    loop {
        let (sum, sum_sq) = made.take().unwrap_or_else(|| {
            s.isolated(ShiftedPass {
                x,
                wide: &mut *wide,
                shift,
                request: if passes == 0 { request } else { None },
            })
        });
        if !(sum.is_finite() && sum_sq.is_finite()) {
            return None;
        }
        let m = sum / d;
        let var = sum_sq / d - m * m;
        passes += 1;
        let cancellation = if is_zero_shift(shift) { 1.0 } else { 8.0 };
        if m * m <= cancellation * var || passes == 3 {
            return Some(CenteredStats {
                shift,
                mean_shifted: m,
                var: var.max(0.0),
                passes,
            });
        }
        shift = on_grid::<T>(shift + m);
    }
}

/// The first shift, from the row's first (up to) sixteen values, widened: 0 where their
/// mean h is within their spread of zero (h² ≤ mean((x − h)²)), else h rounded to the row's
/// grid. c = 0 saves a subtraction per vector in both passes (`SHIFT` in [`ShiftedSums`]
/// and [`Centered`]), which pays on rows whose mean is small beside their spread. It costs
/// accuracy where the mean is not small: Σx² then holds μ² beside σ², which the variance
/// cancels. So a pass with c = 0 is accepted only when m² ≤ var (the variance loses at most
/// a factor 2 to the cancellation, as with a shift within σ of the mean); on other rows the
/// head misled, and the pass is repeated with c at the mean. Sixteen values, not eight,
/// because the head misleads less: on normal rows with μ = 0.5σ it chooses 0 on 93 % of
/// them (eight: 83 %), with μ = 1.2σ, where that pass is repeated, on 21 % (eight: 24 %).
///
/// On the vector path (rows of sixteen or more) the sums are two short trees: as chains of
/// sixteen scalar additions they cost 16 × 1024 f16 LayerNorm a few per cent of its time.
#[inline(always)]
fn first_shift<S: Simd, T: Element>(s: S, x: &[T]) -> f64 {
    let (mean, spread) = if let Some((head, _)) = x.split_first_chunk::<16>() {
        let (low, high) = head.split_at(8);
        let a = T::load(s, low.try_into().expect("eight values"));
        let b = T::load(s, high.try_into().expect("eight values"));
        let mean = sum_lanes(s, [a, b]) / 16.0;
        let (da, db) = (s.sub(a, s.splat(mean)), s.sub(b, s.splat(mean)));
        (mean, sum_lanes(s, [s.mul(da, da), s.mul(db, db)]) / 16.0)
    } else {
        let mut head = [0.0; 16];
        for (lanes, part) in head.chunks_mut(8).zip(x.chunks(8)) {
            lanes.copy_from_slice(&s.to_array(load_padded(s, part)));
        }
        let head = &head[..x.len()];
        let n = head.len() as f64;
        let mean = head.iter().fold(0.0, |a, v| a + v) / n;
        (
            mean,
            head.iter().fold(0.0, |a, v| a + (v - mean) * (v - mean)) / n,
        )
    };
    // NaN or ±∞ fails the test and stays in the shift: the sums are then not finite.
    if mean * mean <= spread {
        0.0
    } else {
        on_grid::<T>(mean)
    }
}

/// Whether the shift is +0, whose subtraction the loops leave out (−0 is not: x − (−0)
/// turns x = −0 into +0).
#[inline(always)]
fn is_zero_shift(shift: f64) -> bool {
    shift.to_bits() == 0
}

/// The shift c rounded to the row's format: every x − c is then exact and on the grid of
/// the row's values (no bits of c's below it), so Σ(x − c) is exact on most rows and the
/// squares' rounding errors are no more biased than those of the values' own squares
/// (see [`BLOCK_PAIRS`]).
#[inline(always)]
fn on_grid<T: Element>(c: f64) -> f64 {
    T::DTYPE.to_f64(T::DTYPE.round_f64(c))
}

/// Where the next row's cache lines are requested: by the statistics pass (returned, and
/// `row.next` emptied, so that the output loop requests nothing) for rows of the 16-bit
/// formats that take the f32 path ([`narrow`]), by the output loop for the others.
/// Measured on 2 threads of the Emerald Rapids Xeon, one binary switching between the two
/// call by call (medians of 20 paired ratios): the 16-bit rows of 4096 took 0.95–0.98 of
/// the time with the statistics pass requesting (f16 and bf16, LayerNorm and RMSNorm,
/// 4096 × 4096), f16 LayerNorm 2048 × 8192 0.95; f32 rows took 1.03–1.09 (LayerNorm at
/// 4096 × 4096 and 16384 × 1024, RMSNorm), so theirs stay in the output loop.
/// `on_f32_path`: the row takes that path ([`narrow::path_format`]).
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
    if const { T::NARROW.is_none() } && fuses_next_statistics(&row, p) {
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
    let narrow = format.and_then(|f| narrow::layer_norm(&stats, c.scale, d, p.params_max, f));
    // Shift 0 saves its subtraction only where z comes from x (see `RowConstants::X_ONLY`);
    // elsewhere the shifted constants subtract +0, which changes no bit.
    if is_zero_shift(stats.shift) && scratch.wide.is_empty() && narrow.is_none() {
        let c = c.without_shift();
        finish_row::<S, T, P, _, _, G, B>(s, row, p, c, None, Alone, scratch);
    } else {
        finish_row::<S, T, P, _, _, G, B>(s, row, p, c, narrow, Alone, scratch);
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
    if const { T::NARROW.is_none() } && fuses_next_statistics(&row, p) {
        let next = NextSquares { x: row.next };
        row.next = std::mem::take(&mut row.after_next);
        let sum_sq = finish_row::<S, T, P, _, _, G, B>(s, row, p, c, None, next, scratch);
        return Some(Ahead::Squares(sum_sq));
    }
    let narrow = format.and_then(|f| narrow::rms_norm(c.scale, d, p.params_max, f));
    finish_row::<S, T, P, _, _, G, B>(s, row, p, c, narrow, Alone, scratch);
    None
}

/// One row of the 16-bit formats through the f32 path's loop alone (portable code, no
/// second computation): the whole blocks of sixteen of y as that path computes them, and
/// per value whether it reported it (the kernels compute those again on the f64 path);
/// `None` where the row may not take the path. For the tests of [`narrow`].
#[cfg(test)]
pub(crate) fn narrow_blocks<T: Element>(
    op: Op,
    x: &[T],
    gamma: &[T],
    beta: &[T],
    eps: f32,
) -> Option<(Vec<T>, Vec<bool>)> {
    use crate::kernels::simd::Scalar;
    let s = Scalar;
    let d = x.len();
    let format = T::NARROW.expect("a 16-bit format");
    let params = narrow::ParamsMax {
        gamma: if gamma.is_empty() {
            1.0
        } else {
            T::abs_max(gamma)
        },
        beta: T::abs_max(beta),
    };
    let blocks = d / 16;
    let mut y = vec![T::default(); 16 * blocks];
    let mut flags = vec![[0u8; 2]; blocks];
    let (x16, g16, b16) = (x.as_chunks().0, gamma.as_chunks().0, beta.as_chunks().0);
    macro_rules! pass {
        ($c:expr, $row:expr) => {{
            let (c, row) = ($c, $row);
            let y16 = y.as_chunks_mut().0;
            macro_rules! with {
                ($g:literal, $b:literal) => {
                    NarrowPass::<T, T, _, $g, $b, false, false> {
                        x: x16,
                        gamma: g16,
                        beta: b16,
                        y: y16,
                        flags: &mut flags,
                        row,
                        constants: c,
                    }
                    .run(s)
                };
            }
            match (gamma.is_empty(), beta.is_empty()) {
                (false, false) => with!(true, true),
                (false, true) => with!(true, false),
                (true, false) => with!(false, true),
                (true, true) => with!(false, false),
            }
        }};
    }
    match op {
        Op::LayerNorm => {
            let stats = layer_norm_stats(s, x, &mut [], None)?;
            if is_zero_shift(stats.shift) {
                let c = CenteredConstants::<false>::new::<T>(&stats, eps, params);
                pass!(c, narrow::layer_norm(&stats, c.scale, d, params, format)?)
            } else {
                let c = CenteredConstants::<true>::new::<T>(&stats, eps, params);
                pass!(c, narrow::layer_norm(&stats, c.scale, d, params, format)?)
            }
        }
        Op::RmsNorm => {
            let sum_sq = sum_of_squares(s, x);
            let c = ScaledConstants::new::<T>(sum_sq, d, eps, params);
            pass!(c, narrow::rms_norm(c.scale, d, params, format)?)
        }
    }
    let reported = flags
        .iter()
        .flat_map(|f| (0..16).map(move |l| f[l / 8] & (1 << (l % 8)) != 0))
        .collect();
    Some((y, reported))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report layout of the output loop, for a format storing one vector at a time
    /// (f32) and one storing pairs (f16), over rows of 0 to 40 vectors: every vector is
    /// reported on by exactly one byte of the loop's `Reports::bytes`, the byte its
    /// store's report is OR-ed into (group j / 8, the vector's place in its store), and
    /// `record` writes each report's bytes there, the first place's low, a last group of
    /// one vector's in one byte.
    #[test]
    fn reports_cover_every_vector_once_where_recorded() {
        fn check<T: Element>() {
            let (per_store, group) = (Reports::<T>::PER_STORE, Reports::<T>::GROUP);
            assert_eq!(group, 8, "{:?}", T::DTYPE);
            for len in 0..=40usize {
                let bytes = Reports::<T>::bytes(len);
                let mut covering = vec![Vec::new(); len];
                for i in 0..bytes {
                    let vectors: Vec<usize> = Reports::<T>::vectors(i, len).collect();
                    assert!(!vectors.is_empty(), "{:?} len {len}: byte {i}", T::DTYPE);
                    for j in vectors {
                        covering[j].push(i);
                    }
                }
                for (j, bytes_of_j) in covering.iter().enumerate() {
                    let recorded = j / group * per_store + j % group % per_store;
                    assert_eq!(
                        bytes_of_j,
                        &[recorded],
                        "{:?} len {len}: vector {j}",
                        T::DTYPE
                    );
                }
                let mut flags = vec![0u8; bytes];
                for q in 0..len.div_ceil(group) {
                    Reports::<T>::record(&mut flags, q, 0xa5c3);
                }
                let want: Vec<u8> = (0..bytes)
                    .map(|i| if i % per_store == 0 { 0xc3 } else { 0xa5 })
                    .collect();
                assert_eq!(flags, want, "{:?} len {len}", T::DTYPE);
            }
        }
        check::<f32>();
        check::<half::f16>();
    }

    /// The statistics pass requests the next row for rows on the 16-bit formats' f32 path
    /// only (where the caller says so: `narrow::path_format`, whose widths
    /// `the_path_starts_at_its_width_per_instruction_set_format_and_cpu` checks), and takes
    /// the request from the row.
    #[test]
    fn the_statistics_pass_requests_the_next_row_of_the_f32_path_only() {
        use half::f16;
        // Taken from the row, so that its output loop requests nothing more; a last row
        // (no next one) requests nothing, nor does a row off the path.
        let (x, next) = (vec![f16::ONE; 16385], vec![f16::ZERO; 16385]);
        let mut y = vec![f16::ZERO; 16385];
        let mut row = Row {
            x: &x,
            next: &next,
            after_next: &[],
            y: &mut y,
        };
        let request = requested_by_statistics(&mut row, true);
        assert_eq!(request, Some(next.as_ptr() as *const u8));
        assert!(row.next.is_empty());
        assert_eq!(requested_by_statistics(&mut row, true), None);
        let (x32, next32) = (vec![1.0f32; 16385], vec![0.0f32; 16385]);
        let mut y32 = vec![0.0f32; 16385];
        let mut row = Row {
            x: &x32,
            next: &next32,
            after_next: &[],
            y: &mut y32,
        };
        assert_eq!(requested_by_statistics(&mut row, false), None);
        assert_eq!(row.next.len(), 16385);
    }

    /// Every nonzero flag is found, in order, whatever its place in its word (several in
    /// one word included) and in the bytes after the last whole word; `out` is cleared.
    #[test]
    fn flagged_vectors_finds_every_set_flag_in_order() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in 0..40 {
            for density in [1, 3, 8] {
                let flags: Vec<u8> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        if state % 8 < density {
                            (state >> 32) as u8 | 1
                        } else {
                            0
                        }
                    })
                    .collect();
                let want: Vec<u32> = (0..len as u32)
                    .filter(|&j| flags[j as usize] != 0)
                    .collect();
                let mut got = vec![7, 7];
                flagged_vectors(&flags, &mut got);
                assert_eq!(got, want, "flags {flags:?}");
            }
        }
    }
    use crate::kernels::simd::Scalar;
    use rug::Rational;

    /// The exact mean and variance of a row, as rationals.
    fn exact_moments(x: &[f32]) -> (Rational, Rational) {
        let d = Rational::from(x.len() as u64);
        let xs: Vec<Rational> = x
            .iter()
            .map(|&v| Rational::from_f64(v as f64).unwrap())
            .collect();
        let mean: Rational = xs.iter().sum::<Rational>() / &d;
        let sq: Rational = xs.iter().map(|v| Rational::from(v - &mean).square()).sum();
        (mean, sq / d)
    }

    /// The exact variance of a row, as a rational.
    fn exact_var(x: &[f32]) -> Rational {
        exact_moments(x).1
    }

    /// d values offset + spread·t, t spread over (−0.5, 0.5) by a fixed stride (never 0).
    fn spread_row(d: usize, offset: f32, spread: f32) -> Vec<f32> {
        (0..d)
            .map(|i| offset + spread * ((i * 7919 % 1013) as f32 / 1013.0 - 0.5))
            .collect()
    }

    /// A row of d values whose first sixteen (those the first shift is taken from) are
    /// `high`, the rest `spread_row(d, 0, spread)`'s.
    fn lopsided_row(d: usize, high: f32, spread: f32) -> Vec<f32> {
        let mut x = spread_row(d, 0.0, spread);
        x[..16].fill(high);
        x
    }

    /// 4096 values ±1.7 around `offset` (σ ≈ 0.98), the first eight ±2 (mean 0, range 4).
    fn straddling_head_row(offset: f32) -> Vec<f32> {
        let mut x = spread_row(4096, offset, 3.4);
        for (i, v) in x[..8].iter_mut().enumerate() {
            *v = [2.0, -2.0][i % 2];
        }
        x
    }

    /// Rows whose first sixteen values (those the first shift is taken from) are far from
    /// the rest: the shift must move once, and the variance stays accurate to the bound of
    /// the accepted pass.
    #[test]
    fn lopsided_rows_move_the_shift_once() {
        for (d, high, spread) in [
            (256usize, 1e3f32, 1.0f32),
            (4096, 4096.0, 0.5),
            (40000, 1e6, 3.0),
        ] {
            let x = lopsided_row(d, high, spread);
            let stats = layer_norm_stats(Scalar, &x, &mut [], None).unwrap();
            assert_eq!(stats.passes, 2, "d={d}");
            // The same when the first pass was made beside the previous row's output loop:
            // that pass is judged as the pass alone is, and rejected.
            let next = NextShifted {
                x: &x,
                shift: first_shift(Scalar, &x),
            };
            let (sum, sum_sq) = next.finish(Scalar, next.start(Scalar), 0);
            let first = Some((next.shift, sum, sum_sq));
            let after = layer_norm_stats_after(Scalar, &x, &mut [], None, first).unwrap();
            assert_eq!(format!("{after:?}"), format!("{stats:?}"), "d={d}");
            let m2 = stats.mean_shifted * stats.mean_shifted;
            assert!(m2 <= 8.0 * stats.var, "d={d}: {stats:?}");
            let exact = exact_var(&x);
            let err = (Rational::from_f64(stats.var).unwrap() - &exact).abs();
            // 27·γ_n with n = d/16 + 4 terms per partial sum, u = 2^-53.
            let bound = exact
                * Rational::from_f64(27.0 * (d as f64 / 16.0 + 8.0) * 2f64.powi(-53)).unwrap();
            assert!(
                err <= bound,
                "d={d}: variance error {} > bound {}",
                err.to_f64(),
                bound.to_f64()
            );
        }
    }

    /// Rows whose first eight values straddle zero start from shift 0, and keep it where
    /// the mean is within σ of zero; where it is not, the pass with shift 0 is rejected
    /// (it would lose up to a factor 9 to cancellation) and repeated at the mean.
    #[test]
    fn the_shift_is_zero_only_for_rows_near_zero() {
        let d = 4096;
        let row = straddling_head_row;
        for offset in [0.0f32, 0.5, -0.9] {
            let stats = layer_norm_stats(Scalar, &row(offset), &mut [], None).unwrap();
            assert_eq!((stats.shift, stats.passes), (0.0, 1), "offset {offset}");
        }
        for offset in [1.5f32, -2.5, 100.0] {
            let x = row(offset);
            let stats = layer_norm_stats(Scalar, &x, &mut [], None).unwrap();
            assert_eq!(stats.passes, 2, "offset {offset}: {stats:?}");
            let mean = x.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
            assert!((stats.shift - mean).abs() < 1e-3, "{stats:?}");
            let exact = exact_var(&x);
            let err = (Rational::from_f64(stats.var).unwrap() - &exact).abs();
            assert!(
                err < exact * Rational::from_f64(1e-14).unwrap(),
                "{stats:?}"
            );
        }
        // A head far from zero beside its range keeps its mean as the first shift.
        let x: Vec<f32> = (0..d).map(|i| 10.0 + (i % 5) as f32).collect();
        assert_eq!(first_shift(Scalar, &[10.0f32, 11.0, 12.0, 13.0]), 11.5);
        assert_eq!(first_shift(Scalar, &[10.0f32; 16]), 10.0);
        // Mean 0.45, within the spread (mean square deviation 2.63).
        assert_eq!(first_shift(Scalar, &[0.3f32, -2.0, 2.5, 1.0]).to_bits(), 0);
        let wide: Vec<f32> = (0..20).map(|i| [0.3, -2.0, 2.5, 1.0][i % 4]).collect();
        assert_eq!(first_shift(Scalar, &wide).to_bits(), 0);
        let far: Vec<f32> = wide.iter().map(|v| v + 2.0).collect();
        assert_eq!(first_shift(Scalar, &far), 2.45f32 as f64);
        assert_eq!(
            layer_norm_stats(Scalar, &x, &mut [], None).unwrap().passes,
            1
        );
    }

    /// The statistics pass's decisions compare m² with a multiple of the variance, so they
    /// do not depend on the row's scale: a row scaled by a power of two (exact in f32)
    /// takes the same passes, and its statistics are the unscaled ones scaled exactly
    /// (shift and mean by k, variance by k²). Rows of tiny spread are where a test that
    /// compared m² with the variance plus a constant, or divided by it, would accept a
    /// pass it must reject (both were cargo-mutants survivors of the two tests above).
    #[test]
    fn the_statistics_pass_does_not_depend_on_the_row_scale() {
        // Near zero and off it, with shift 0 accepted or rejected (the rows of
        // `the_shift_is_zero_only_for_rows_near_zero`); lopsided heads, whose shifted
        // first pass is rejected (as in `lopsided_rows_move_the_shift_once`); and an
        // ordinary row far from zero.
        let mut rows: Vec<Vec<f32>> = [0.0f32, 0.5, -0.9, 1.5, -2.5, 100.0]
            .into_iter()
            .map(straddling_head_row)
            .collect();
        rows.push(lopsided_row(256, 1e3, 1.0));
        rows.push(lopsided_row(4096, 1.0, 0.5));
        rows.push(spread_row(1000, 10.0, 1.0));
        for x in &rows {
            let at_one = layer_norm_stats(Scalar, x, &mut [], None).unwrap();
            for k in [2f32.powi(-12), 2f32.powi(12)] {
                let scaled: Vec<f32> = x.iter().map(|v| v * k).collect();
                let stats = layer_norm_stats(Scalar, &scaled, &mut [], None).unwrap();
                let k = k as f64;
                assert_eq!(
                    (stats.passes, stats.shift, stats.mean_shifted, stats.var),
                    (
                        at_one.passes,
                        at_one.shift * k,
                        at_one.mean_shifted * k,
                        at_one.var * k * k
                    ),
                    "d={} k={k}: at scale 1 {at_one:?}",
                    x.len()
                );
            }
        }
    }

    /// [`first_shift`] against its definition, decided exactly: h is the mean of the
    /// row's first min(d, 16) values and s the mean of their squared deviations from h;
    /// the shift is 0 where h² ≤ s, else h rounded to the row's format. Rows of 1 to 40
    /// values (both of its branches: the scalar one below sixteen), h²/s from about 10^-3
    /// to 10^3, scales from 2^-20 to 2^20. Rows within 10^-6 of h² = s, where the f64
    /// sums may decide either way, are skipped. (Six mutations survived the hand-picked
    /// rows before this test: the short rows' spread with `/ n` as `* n` or `% n`, a `-`
    /// or the `*` as `/`, and the test's `mean * mean` as `mean + mean`. A `-` as `+` is
    /// the same spread up to rounding: Σ(v + h)(v − h) = Σv² − n·h² = Σ(v − h)².)
    #[test]
    fn the_first_shift_follows_its_definition() {
        let mut rng = crate::cases::rng::Rng::new(11, 0);
        let mut decided = [0usize; 2];
        for _ in 0..4000 {
            let d = 1 + rng.below(40);
            let scale = 2f64.powi(rng.below(41) as i32 - 20);
            let sign = if rng.coin() { 1.0 } else { -1.0 };
            let offset = sign * 10f64.powf(3.0 * rng.uniform() - 1.5);
            let x: Vec<f32> = (0..d)
                .map(|_| ((offset + rng.normal()) * scale) as f32)
                .collect();
            let (mean, spread) = exact_moments(&x[..d.min(16)]);
            let square = mean.clone().square();
            let margin = Rational::from(&square - &spread).abs();
            if margin <= Rational::from_f64(1e-6).unwrap() * Rational::from(&square + &spread) {
                continue;
            }
            let shift = first_shift(Scalar, &x);
            if square <= spread {
                assert_eq!(shift.to_bits(), 0, "{x:?}");
                decided[0] += 1;
            } else {
                // h rounded to f32: within half an f32 unit of h (the f64 sums add a
                // negligible error), so within one.
                let h = mean.to_f64();
                let unit = (h.abs() as f32).next_up() as f64 - (h.abs() as f32) as f64;
                assert!(
                    (shift - h).abs() <= unit,
                    "shift {shift} for h = {h}: {x:?}"
                );
                decided[1] += 1;
            }
        }
        assert!(decided.iter().all(|&k| k > 800), "{decided:?}");
    }

    /// The next row's statistics, folded beside an output loop a group of eight vectors
    /// at a time ([`NextShifted`], [`NextSquares`]), are the bits of the pass alone
    /// ([`ShiftedPass`], [`SquaresPass`]) for every width: blocks closed inside the loop
    /// and after it, odd last vectors, partial tails, rows of no whole vector. The values
    /// span 2^±24, so that a sum folded in another order rounds otherwise. Shift +0 is
    /// subtracted beside the loop and left out alone (the same bits).
    #[test]
    fn statistics_beside_the_output_loop_are_those_of_the_pass_alone() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        // 1744, 1792 and 1807 end in a partial block (13 or 16 pairs) after 27 or 28 whole
        // groups, which pairs miscounted as 4 + groups + the rest would call whole and
        // leave unclosed.
        let widths = (0..=140).chain([
            255, 256, 257, 511, 512, 513, 527, 1031, 1744, 1792, 1807, 4096, 4109,
        ]);
        for d in widths {
            let x: Vec<f32> = (0..d)
                .map(|_| {
                    let r = next();
                    let m = (r & 0xffff) as f32 / 65536.0 + 0.5;
                    let e = ((r >> 16) % 49) as i32 - 24;
                    let sign = if r >> 31 == 1 { -1.0 } else { 1.0 };
                    sign * m * 2f32.powi(e)
                })
                .collect();
            // The output loop's whole groups (eight vectors each) of a row of width d.
            let whole = d / 8 / 8;
            for shift in [0.0, on_grid::<f32>(0.37), first_shift(Scalar, &x)] {
                let alone = shifted_sums(Scalar, &x, shift);
                let beside = NextShifted { x: &x, shift };
                for from in [whole, 0] {
                    let mut state = beside.start(Scalar);
                    for q in 0..from {
                        beside.group(Scalar, &mut state, q);
                    }
                    let got = beside.finish(Scalar, state, from);
                    assert_eq!(
                        (got.0.to_bits(), got.1.to_bits()),
                        (alone.0.to_bits(), alone.1.to_bits()),
                        "d={d} shift={shift} groups in the loop {from}: {got:?} {alone:?}"
                    );
                }
            }
            let alone = sum_of_squares(Scalar, &x);
            let beside = NextSquares { x: &x };
            let mut state = beside.start(Scalar);
            for q in 0..whole {
                beside.group(Scalar, &mut state, q);
            }
            let got = beside.finish(Scalar, state, whole);
            assert_eq!(got.to_bits(), alone.to_bits(), "d={d}: {got} {alone}");
        }
    }

    /// A row hands the next row its first statistics pass exactly where
    /// [`fuses_next_statistics`] allows it (a next row, y cached, not widened once), equal
    /// bit for bit to the pass alone on that row; and a row given such sums starts from
    /// them: its own sums give its output alone, another row's sums change it. (The output
    /// bits of a batch cannot show whether the pass ran beside: that is what this checks.)
    #[test]
    fn rows_hand_the_next_row_its_first_pass_where_the_rule_allows() {
        let d = 1031;
        let row = |k: usize| -> Vec<f32> {
            (0..d)
                .map(|i| ((i * 7919 + k * 101) % 1013) as f32 / 1013.0 - 0.3 + k as f32)
                .collect()
        };
        let (x0, x1, x2) = (row(0), row(1), row(2));
        for op in Op::ALL {
            let params = |stream, widen_once| RowParams::<f64> {
                op,
                gamma: &[],
                beta: &[],
                eps: 1e-5,
                stream,
                widen_once,
                params_max: narrow::ParamsMax::NONE,
            };
            let run = |p: &RowParams<'_, f64>, x: &[f32], next: &[f32], ahead| {
                let mut y = vec![0.0f32; d];
                let row = Row {
                    x,
                    next,
                    after_next: &x2,
                    y: &mut y,
                };
                let mut scratch = Scratch::default();
                let handed = match op {
                    Op::LayerNorm => layer_norm_row::<_, f32, f64, false, false>(
                        Scalar,
                        row,
                        p,
                        &mut scratch,
                        ahead,
                    ),
                    Op::RmsNorm => rms_norm_row::<_, f32, f64, false, false>(
                        Scalar,
                        row,
                        p,
                        &mut scratch,
                        ahead,
                    ),
                };
                (handed.map(|a| format!("{a:?}")), y)
            };
            // The first pass alone on a row, as a row would hand it on.
            let first_pass = |x: &[f32]| match op {
                Op::LayerNorm => {
                    let shift = first_shift(Scalar, x);
                    let (sum, sum_sq) = shifted_sums(Scalar, x, shift);
                    Ahead::Shifted { shift, sum, sum_sq }
                }
                Op::RmsNorm => Ahead::Squares(sum_of_squares(Scalar, x)),
            };
            let cached = params(false, false);
            let want = format!("{:?}", first_pass(&x1));
            assert_eq!(run(&cached, &x0, &x1, None).0, Some(want), "{op}");
            for (p, next, why) in [
                (params(true, false), &x1[..], "y streamed"),
                (params(false, true), &x1[..], "widened once"),
                (params(false, false), &[][..], "no next row"),
            ] {
                assert_eq!(run(&p, &x0, next, None).0, None, "{op}: {why}");
            }
            let (_, alone) = run(&cached, &x1, &[], None);
            let (_, own) = run(&cached, &x1, &[], Some(first_pass(&x1)));
            let (_, other) = run(&cached, &x1, &[], Some(first_pass(&x0)));
            let bits = |y: &[f32]| y.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&own), bits(&alone), "{op}");
            assert_ne!(bits(&other), bits(&alone), "{op}");
        }
    }

    /// Ordinary rows are done in one pass, including constant ones.
    #[test]
    fn ordinary_rows_take_one_pass() {
        let x: Vec<f32> = (0..1000).map(|i| 1e5 + ((i * 31) % 17) as f32).collect();
        assert_eq!(
            layer_norm_stats(Scalar, &x, &mut [], None).unwrap().passes,
            1
        );
        let c = [3.25f32; 9];
        let stats = layer_norm_stats(Scalar, &c, &mut [], None).unwrap();
        assert_eq!((stats.passes, stats.var, stats.mean_shifted), (1, 0.0, 0.0));
        assert!(layer_norm_stats(Scalar, &[1.0, f32::INFINITY], &mut [], None).is_none());
    }
}

/// The certainty test's bound against the exact error of the f64 values it judges.
#[cfg(test)]
mod bound_tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::kernels::simd::Scalar;
    use rug::{Float, Rational};

    /// A small seeded generator (portable arithmetic).
    struct Lcg(u64);
    impl Lcg {
        fn unit(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// Rows of width d whose lanes hit what the bound's terms are for: every seventh value
    /// is the row's mean rounded to f32 (z ≈ 0, where z's error does not shrink with z),
    /// the first eight are far from the rest on some rows (the shift moves), and β cancels
    /// γ·z to a few bits in every fifth lane. Rows with offset 0.97 (μ ≈ 0.99σ) start
    /// ±3σ, so that the first shift is 0 and the pass is accepted next to its limit,
    /// m² ≤ var.
    fn row(g: &mut Lcg, trial: usize, d: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let offset = [0.0, 0.5, 2.0, 100.0, 1e4, -3.0, 0.97, -0.9][trial % 8];
        let spread = [1.0, 1e-3, 1e3][trial % 3];
        let mut x: Vec<f32> = (0..d)
            .map(|_| ((offset + (g.unit() - 0.5) * 3.4) * spread) as f32)
            .collect();
        if trial.is_multiple_of(5) {
            x[..8].fill((3.0 * offset * spread + spread) as f32);
        }
        if offset == 0.97 {
            for (k, v) in x[..8].iter_mut().enumerate() {
                *v = ((if k % 2 == 0 { 3.0 } else { -3.0 }) * spread) as f32;
            }
        }
        let mean = x.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
        for v in x.iter_mut().step_by(7) {
            *v = mean as f32;
        }
        // γ and β of every size against z, so that outputs far above 1 test the bound's
        // relative term (32u·|ŷ| exceeds 32u only there).
        let scale = [1.0, 1024.0, 1.0 / 1024.0, 3e5][(trial / 8) % 4];
        let gamma: Vec<f32> = (0..d).map(|_| ((0.5 + g.unit()) * scale) as f32).collect();
        let beta: Vec<f32> = (0..d).map(|_| ((g.unit() - 0.5) * scale) as f32).collect();
        (x, gamma, beta)
    }

    /// ŷ's exact error never exceeds the bound of the test that judges it, on rows up to
    /// d = 16384, both ops, where β cancels γ·z, where z ≈ 0, with shift 0 at its limit,
    /// and with γ and β from about 2^-10 to 3e5 (a bound of 32u alone, whatever |ŷ|, fails
    /// at 1024). (Measured: the error reaches 20 % of the bound on these 40 rows; before γ
    /// and β were scaled, 19 % of the bound on 40 rows, 13 % on 120 rows
    /// with d up to 65536; 11 % and 12 % when z was ((x − c) − m)·r, two roundings after
    /// x − c. On 160 rows of these, 20 % with a shift, 17 % with shift 0, whose worst is
    /// the rows accepted next to m² = var.)
    #[test]
    fn the_bound_covers_the_error_of_the_f64_value() {
        let mut g = Lcg(7);
        let eps = 1e-5f32;
        let (mut zero_shift_rows, mut worst) = (0, 0f64);
        for trial in 0..40 {
            let d = [64usize, 333, 1024, 4096, 16384][trial % 5];
            let (x, gamma, mut beta) = row(&mut g, trial, d);
            let xs: Vec<Rational> = x
                .iter()
                .map(|&v| Rational::from_f64(v as f64).unwrap())
                .collect();
            let dq = Rational::from(d as u64);
            for op in Op::ALL {
                let center = op == Op::LayerNorm;
                let mean: Rational = if center {
                    xs.iter().sum::<Rational>() / &dq
                } else {
                    Rational::new()
                };
                let q: Rational = xs
                    .iter()
                    .map(|v| Rational::from(v - &mean).square())
                    .sum::<Rational>()
                    / &dq;
                let r = Float::with_val(300, q + Rational::from_f64(eps as f64).unwrap())
                    .sqrt()
                    .recip();
                let (y, size, floor) = if center {
                    let stats = layer_norm_stats(Scalar, &x, &mut [], None).unwrap();
                    let none = narrow::ParamsMax::NONE;
                    if is_zero_shift(stats.shift) {
                        zero_shift_rows += 1;
                        let c = CenteredConstants::<false>::new::<f32>(&stats, eps, none);
                        f64_values(c, &x, &gamma, &mut beta)
                    } else {
                        let c = CenteredConstants::<true>::new::<f32>(&stats, eps, none);
                        f64_values(c, &x, &gamma, &mut beta)
                    }
                } else {
                    let sum_sq = sum_of_squares(Scalar, &x);
                    f64_values(
                        ScaledConstants::new::<f32>(sum_sq, d, eps, narrow::ParamsMax::NONE),
                        &x,
                        &gamma,
                        &mut beta,
                    )
                };
                for i in 0..y.len() {
                    let z =
                        Float::with_val(300, Rational::from_f64(x[i] as f64).unwrap() - &mean) * &r;
                    let exact = z * gamma[i] + beta[i];
                    let err = (Float::with_val(300, y[i]) - exact).abs().to_f64();
                    let bound = size[i].mul_add(RELATIVE, floor[i]);
                    worst = worst.max(err / bound);
                    assert!(
                        err <= bound,
                        "{op} d={d} trial {trial} lane {i}: error {err:e} > bound {bound:e} (ŷ = {:e})",
                        y[i]
                    );
                }
            }
        }
        eprintln!("the largest error took {worst:.3} of its bound");
        // The five rows that start ±3σ, and some of those with offset 0, 0.5 and −0.9.
        assert!(zero_shift_rows >= 6, "{zero_shift_rows} rows with shift 0");
    }

    /// [`needs_exact`]'s contract, checked exactly about every kind of rounding boundary of
    /// the three formats (`kernels::boundaries`), at distances from 0 to well past half an
    /// interval, with bounds from 0 to 2^10 times the distance, made of either term or both:
    /// - a lane it clears rounds as every value within its bound does
    ///   (`boundaries::bound_keeps_rounding`: both ends of [ŷ − E, ŷ + E], exactly);
    /// - it clears every lane farther than 4·E from any boundary (its distance is at least
    ///   half the true one; see its comment): it does not send lanes that cannot be wrong
    ///   to the exact reference;
    /// - it clears non-finite lanes (their row's statistics were finite: NaN in γ or β).
    #[test]
    fn needs_exact_clears_only_lanes_their_bound_keeps_on_one_side() {
        use crate::kernels::boundaries::{
            assert_both_answers_given, bound_keeps_rounding, distance_to_boundary, points,
            BOUND_FACTORS,
        };
        fn check<T: Element>(seed: u64) -> (usize, usize) {
            let dt = T::DTYPE;
            let (mut cleared, mut total) = (0, 0);
            for (y, m) in points::<T>(seed, Dtype::F64) {
                let distance = distance_to_boundary::<T>(y);
                // Beyond the overflow threshold, multiples of y's f64 spacing.
                let scale = distance
                    .unwrap_or(Dtype::F64.ulp_at(y))
                    .max(f64::MIN_POSITIVE);
                for e in BOUND_FACTORS.map(|f| f * scale) {
                    let halves = (e / RELATIVE / 2.0, e / 2.0);
                    for (size, floor) in [(0.0, e), (e / RELATIVE, 0.0), halves] {
                        let bound = size.mul_add(RELATIVE, floor);
                        total += 1;
                        if !needs_exact::<T>(y, size, floor) {
                            cleared += 1;
                            assert!(
                                bound_keeps_rounding::<T>(y, bound),
                                "{dt}: y = {y:e} cleared with bound {bound:e} (boundary {m:e})"
                            );
                        }
                    }
                    if distance.is_some_and(|d| d > 4.0 * e) {
                        assert!(
                            !needs_exact::<T>(y, 0.0, e),
                            "{dt}: y = {y:e} sent to the exact reference with bound {e:e} (boundary {m:e})"
                        );
                    }
                }
            }
            for y in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                assert!(!needs_exact::<T>(y, 1.0, 1.0), "{dt}: {y}");
            }
            (cleared, total)
        }
        for (dt, (cleared, total)) in [
            ("f32", check::<f32>(11)),
            ("f16", check::<half::f16>(12)),
            ("bf16", check::<half::bf16>(13)),
        ] {
            assert_both_answers_given(dt, cleared, total);
        }
    }

    /// The vector filter a row's [`CheckConstants`] build (window W from [`window`],
    /// threshold from [`covered_from`]) clears only lanes that [`needs_exact`] clears with
    /// the largest bound any lane of the call can have (size |ŷ| + max|β|, floor
    /// max|γ|·absolute): lanes W − 2 to 4W f64-ulps from a boundary, at magnitudes about
    /// the threshold, for RMSNorm (absolute 0) and LayerNorm, with and without large γ and
    /// β. And it is not far wider than it has to be: W is what `window`'s comment derives
    /// (2^16, 2^23, 2^24), and its threshold within a factor 2 of floor/(W·u).
    #[test]
    fn the_filter_clears_only_lanes_the_test_clears() {
        fn check<T: Element>(g: &mut Lcg, window_bits: u32) -> usize {
            let dt = T::DTYPE;
            let w = window(T::HALF_ULP_BIT);
            assert_eq!(w, 1 << window_bits, "{dt}");
            let mut passed = 0;
            for absolute in [0.0, 1e-16, 1e-12, 1e-6] {
                for (gamma, beta) in [(1.0, 0.0), (1.0, 1.0), (1e3, 1e4), (0.01, 3.0)] {
                    let params = narrow::ParamsMax { gamma, beta };
                    let c = CheckConstants::new::<T>(absolute, params);
                    let floor = RELATIVE * beta + gamma * absolute;
                    let small = c.filter.small;
                    let least = pow2(dt.emin());
                    assert!(small >= least, "{dt}");
                    assert!(
                        small <= (2.0 * floor / ((w - 64) as f64 * U)).max(least),
                        "{dt}: threshold {small:e} for floor {floor:e}"
                    );
                    let magnitudes = [1.0, 1.0 + 2f64.powi(-40), 1.5, 2.0, 1e3]
                        .map(|k| k * small)
                        .into_iter()
                        .chain([1.0, 3.7e4].map(|v| v * (1.0 + g.unit())));
                    for magnitude in magnitudes {
                        if magnitude >= dt.max_finite() {
                            continue;
                        }
                        // The boundary just above: the midpoint of magnitude's interval.
                        let r = dt.round_f64(magnitude);
                        let m = dt.midpoint(r, dt.next_up(r));
                        let ulp = Dtype::F64.ulp_at(m);
                        for k in [w - 2, w - 1, w, w + 1, 2 * w, 4 * w] {
                            for y in [m - k as f64 * ulp, m + k as f64 * ulp] {
                                for y in [y, -y] {
                                    if near_lane(y, &c.filter) {
                                        continue;
                                    }
                                    passed += 1;
                                    assert!(
                                        !needs_exact::<T>(y, y.abs() + beta, gamma * absolute),
                                        "{dt}: y = {y:e} passed the filter (absolute {absolute:e}, γ {gamma:e}, β {beta:e})"
                                    );
                                }
                            }
                        }
                    }
                }
            }
            passed
        }
        use crate::kernels::simd::near_lane;
        let mut g = Lcg(13);
        for (dt, passed) in [
            ("f32", check::<f32>(&mut g, 16)),
            ("f16", check::<half::f16>(&mut g, 23)),
            ("bf16", check::<half::bf16>(&mut g, 24)),
        ] {
            eprintln!("{dt}: {passed} lanes passed the filter");
            assert!(passed > 100, "{dt}: {passed}");
        }
    }

    /// ŷ and the bound's two terms for every whole vector of a row (γ, β as f32), after
    /// setting every fifth β to −γ·ẑ rounded to f32 (cancellation to about 24 bits).
    fn f64_values<C: RowConstants>(
        c: C,
        x: &[f32],
        gamma: &[f32],
        beta: &mut [f32],
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let s = Scalar;
        let n = c.vectors(s);
        let (mut y, mut size, mut floor) = (Vec::new(), Vec::new(), Vec::new());
        for j in 0..x.len() / 8 {
            let at = 8 * j..8 * j + 8;
            let z = n.z(s, s.load_f32(x[at.clone()].try_into().unwrap()));
            for l in (0..8).filter(|l| (8 * j + l) % 5 == 0) {
                beta[8 * j + l] = -((gamma[8 * j + l] as f64 * z[l]) as f32);
            }
            let g = s.load_f32(gamma[at.clone()].try_into().unwrap());
            let b = s.load_f32(beta[at].try_into().unwrap());
            let out = affine::<Scalar, true, true>(s, z, g, b);
            let (sz, fl) = bound_terms::<true, true>(c.check(), out, g, b);
            y.extend(out);
            size.extend(sz);
            floor.extend(fl);
        }
        (y, size, floor)
    }
}
