//! The statistics pass of a row: its sums folded in one fixed order, alone or beside the
//! previous row's output loop, and LayerNorm's shifted mean and variance from them.

use super::lanes::load_padded;
use super::Vectorized;
use crate::element::Element;
use crate::simd::Simd;

/// The row's vectors folded into two accumulators: vector `j` into accumulator `j mod 2`
/// (the partial tail vector, zero-padded, into accumulator 1 through `fold_tail`). Each
/// vector x is first `prepare`d (LayerNorm: t = x − c; RMSNorm: t = x), then folded.
pub(super) trait Fold<S: Simd> {
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
pub(super) const BLOCK_PAIRS: usize = 32;

/// The running sums of a row's statistics pass, in the one order every pass folds them
/// (see [`reduce`]): whole pairs of vectors, the first into accumulator 0 and the second
/// into 1, through fresh block accumulators ([`BLOCK_PAIRS`] pairs a block) that
/// `close_block` adds to the running ones; then an odd last whole vector into accumulator
/// 0 and the partial tail vector into 1. The standalone pass ([`reduce`]) and the pass
/// beside the previous row's output loop ([`NextRowSums`]) both fold through this, so
/// that they give the same bits.
pub(super) struct Sums<S: Simd, F: Fold<S>> {
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
/// widened once (see [`RowParams::widen_once`](super::params::RowParams::widen_once)) also keep the prepared vectors (t) in
/// `wide` for the output pass, which then starts from t; `wide` is empty otherwise. Where
/// `wide` is empty and a `request` is given (the next row's start: see
/// [`requested_by_statistics`](super::requested_by_statistics)), the loop requests the next row's cache line under each
/// of its own.
#[inline(always)]
pub(super) fn reduce<S: Simd, T: Element, F: Fold<S>>(
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
pub(super) fn fold_rest<S: Simd, T: Element, F: Fold<S>>(
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
/// (rows of f32 in calls of several rows: see [`fuses_next_statistics`](super::fuses_next_statistics)): the output loop
/// calls `group` for each of its whole groups of vectors (group q: vectors 8q..8q + 8,
/// pairs 4q..4q + 4 of the next row, the same count as the current row's), then `finish`
/// folds what is left. The loop's stores wait on memory while this folds from cache, so
/// the pass costs little of the time it took alone (where no line of memory moved).
/// The order of the folds is [`reduce`]'s, through the same [`Sums`]: the same bits.
pub(super) struct NextRowSums<'a, S: Simd, T, F: Fold<S>> {
    quads: &'a [[[[T; 8]; 2]; 4]],
    /// The pairs after the whole quads, the odd last whole vector and the partial tail.
    pairs_after: &'a [[[T; 8]; 2]],
    rest: &'a [[T; 8]],
    tail: &'a [T],
    f: F,
    sums: Sums<S, F>,
}

/// Groups of vectors of the output loop per block of the statistics (four pairs a group).
pub(super) const GROUPS_PER_BLOCK: usize = BLOCK_PAIRS / 4;

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

/// What the output loop of a row runs beside its own work, a group of vectors at a time
/// (see [`NextRowSums`]): nothing ([`Alone`]), or the next row's statistics pass
/// ([`NextShifted`], [`NextSquares`]). The description holds no vectors; `start` makes the
/// running state on the loop's vector path.
pub(super) trait Beside: Copy {
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
pub(super) struct Alone;

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
pub(super) struct NextShifted<'a, T> {
    pub(super) x: &'a [T],
    pub(super) shift: f64,
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
pub(super) struct NextSquares<'a, T> {
    pub(super) x: &'a [T],
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
pub(super) struct ShiftedSums<S: Simd, const SHIFT: bool> {
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
pub(super) struct SumOfSquares;

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
pub(super) fn sum_lanes<S: Simd>(s: S, acc: [S::V; 2]) -> f64 {
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
pub(super) struct ShiftedPass<'a, T> {
    pub(super) x: &'a [T],
    pub(super) wide: &'a mut [[f64; 8]],
    pub(super) shift: f64,
    /// The next row's start, to request as the pass goes (see [`reduce`]).
    pub(super) request: Option<*const u8>,
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
pub(super) struct SquaresPass<'a, T> {
    pub(super) x: &'a [T],
    pub(super) wide: &'a mut [[f64; 8]],
    /// As [`ShiftedPass::request`].
    pub(super) request: Option<*const u8>,
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
pub(super) fn shifted_sums<S: Simd, T: Element>(s: S, x: &[T], shift: f64) -> (f64, f64) {
    s.isolated(ShiftedPass {
        x,
        wide: &mut [],
        shift,
        request: None,
    })
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

/// `layer_norm_stats`, whose first pass (shift, Σ(x − c), Σ(x − c)²) may have been made
/// already, beside the previous row's output loop ([`NextShifted`]; then `wide` is empty).
#[inline(always)]
pub(super) fn layer_norm_stats_after<S: Simd, T: Element>(
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
/// and [`Centered`](super::normalize::Centered)), which pays on rows whose mean is small beside their spread. It costs
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
pub(super) fn first_shift<S: Simd, T: Element>(s: S, x: &[T]) -> f64 {
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
pub(super) fn is_zero_shift(shift: f64) -> bool {
    shift.to_bits() == 0
}

/// The shift c rounded to the row's format: every x − c is then exact and on the grid of
/// the row's values (no bits of c's below it), so Σ(x − c) is exact on most rows and the
/// squares' rounding errors are no more biased than those of the values' own squares
/// (see [`BLOCK_PAIRS`]).
#[inline(always)]
pub(super) fn on_grid<T: Element>(c: f64) -> f64 {
    T::DTYPE.to_f64(T::DTYPE.round_f64(c))
}
