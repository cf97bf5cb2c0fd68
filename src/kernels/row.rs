//! One row of LayerNorm or RMSNorm, generic over the vector path `S` and the storage
//! format `T`: the single implementation every instruction set and dtype runs.
//!
//! Accuracy by design (u = 2^-53, n = d/16 the terms per partial sum):
//! * Loads widen exactly; γ and β arrive already widened to f64.
//! * LayerNorm statistics in one pass over the row, shifted by c (the mean of the first
//!   eight values): t = x − c, S = Σt, Q = Σt². With δ = μ − c, the variance
//!   (Q − S²/d)/d loses at most a factor 1 + δ²/σ² to cancellation; the pass is accepted
//!   only when δ² ≤ 8σ² (estimated), otherwise it is repeated with c moved to the estimated
//!   mean (at most twice: |μ − c| ≤ σ√d, and one move leaves |δ| ≲ n·u·σ√d). The mean
//!   offset never enters: a row 10^6 ± 1 is as accurate as a row 0 ± 1.
//! * The deviation x − μ = (x − c) − S/d, z = (x − μ)·r, y = γ·z + β with one fused
//!   multiply-add, then one correct rounding to `T` (f16/bf16 through round-to-odd).
//!   The f64 value is within a few u·|y| of the exact one (≲ n·u in the worst case of the
//!   sums, √n·u typically; more only where γ·z + β cancels).
//! * Near-ties: a lane whose f64 value lies within `NEAR_TIE_ULPS` f64-ulps of a rounding
//!   midpoint of `T` (normal range) is handed to the exact reference
//!   ([`crate::exact`]), which decides it exactly. That is where a rounding error could
//!   flip the result, and where structured inputs land (z = ±(1 − tiny) with β a
//!   midpoint, say); random data sends about 2^-24 of f32 elements there.
//!
//! Bit-identity: every path folds element `8j + k` into lane `k` of accumulator `j mod 2`
//! (sixteen partial sums) and combines them in the same order in scalar code; the
//! element-wise arithmetic is the same IEEE operations everywhere.
//! A row whose statistics are not finite (any ±∞ or NaN input) is written as NaN.

use super::element::Element;
use super::simd::{near_midpoint_lane, Simd, NEAR_TIE_ULPS};
use crate::exact::{ElementInput, RowKind, RowStats};
use crate::problem::{EpsConvention, Op};

/// The row's vectors folded into two accumulators: vector `j` into accumulator `j mod 2`
/// (the partial tail vector, zero-padded, into accumulator 1 through `fold_tail`).
trait Fold<S: Simd> {
    type Acc: Copy;
    fn fold(&self, s: S, acc: Self::Acc, x: S::V) -> Self::Acc;
    /// Folds the last, partial vector: lanes `len..8` hold zeros.
    fn fold_tail(&self, s: S, acc: Self::Acc, x: S::V, len: usize) -> Self::Acc;
}

#[inline(always)]
fn reduce<S: Simd, T: Element, F: Fold<S>>(s: S, x: &[T], f: &F, init: F::Acc) -> [F::Acc; 2] {
    let (chunks, tail) = x.as_chunks::<8>();
    let (pairs, rest) = chunks.as_chunks::<2>();
    let mut acc = [init; 2];
    for p in pairs {
        acc[0] = f.fold(s, acc[0], T::load(s, &p[0]));
        acc[1] = f.fold(s, acc[1], T::load(s, &p[1]));
    }
    if let [c] = rest {
        acc[0] = f.fold(s, acc[0], T::load(s, c));
    }
    if !tail.is_empty() {
        acc[1] = f.fold_tail(s, acc[1], load_padded(s, tail), tail.len());
    }
    acc
}

#[inline(always)]
fn load_padded<S: Simd, T: Element>(s: S, src: &[T]) -> S::V {
    let mut buf = [T::default(); 8];
    buf[..src.len()].copy_from_slice(src);
    T::load(s, &buf)
}

#[inline(always)]
fn load_padded_f64<S: Simd>(s: S, src: &[f64]) -> S::V {
    let mut buf = [0.0; 8];
    buf[..src.len()].copy_from_slice(src);
    s.load_lanes(buf)
}

/// Σ(x − c) and Σ(x − c)², per lane.
struct ShiftedSums<S: Simd> {
    shift: S::V,
}

impl<S: Simd> Fold<S> for ShiftedSums<S> {
    type Acc = (S::V, S::V);
    #[inline(always)]
    fn fold(&self, s: S, (sum, sum_sq): Self::Acc, x: S::V) -> Self::Acc {
        let t = s.sub(x, self.shift);
        (s.add(sum, t), s.fma(t, t, sum_sq))
    }
    #[inline(always)]
    fn fold_tail(&self, s: S, acc: Self::Acc, x: S::V, len: usize) -> Self::Acc {
        // Padding lanes would contribute 0 − c: zero them.
        let mut t = s.to_array(s.sub(x, self.shift));
        t[len..].fill(0.0);
        let t = s.load_lanes(t);
        (s.add(acc.0, t), s.fma(t, t, acc.1))
    }
}

/// Σx² (RMSNorm).
struct SumOfSquares;

impl<S: Simd> Fold<S> for SumOfSquares {
    type Acc = S::V;
    #[inline(always)]
    fn fold(&self, s: S, acc: S::V, x: S::V) -> S::V {
        s.fma(x, x, acc)
    }
    #[inline(always)]
    fn fold_tail(&self, s: S, acc: S::V, x: S::V, _len: usize) -> S::V {
        self.fold(s, acc, x)
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

/// The normalized value z of one vector, before γ and β.
trait Normalize<S: Simd> {
    fn z(&self, s: S, x: S::V) -> S::V;
}

/// LayerNorm: z = ((x − c) − m)·r, m = mean(x − c).
struct Centered<S: Simd> {
    shift: S::V,
    mean_shifted: S::V,
    scale: S::V,
}

impl<S: Simd> Normalize<S> for Centered<S> {
    #[inline(always)]
    fn z(&self, s: S, x: S::V) -> S::V {
        let dev = s.sub(s.sub(x, self.shift), self.mean_shifted);
        s.mul(dev, self.scale)
    }
}

/// RMSNorm: z = x·r.
struct Scaled<S: Simd> {
    scale: S::V,
}

impl<S: Simd> Normalize<S> for Scaled<S> {
    #[inline(always)]
    fn z(&self, s: S, x: S::V) -> S::V {
        s.mul(x, self.scale)
    }
}

/// y = γ·z + β with one rounding, for whichever of γ (`G`) and β (`B`) are present.
#[inline(always)]
fn affine<S: Simd, const G: bool, const B: bool>(s: S, z: S::V, g: S::V, b: S::V) -> S::V {
    match (G, B) {
        (true, true) => s.fma(g, z, b),
        (true, false) => s.mul(g, z),
        (false, true) => s.add(z, b),
        (false, false) => z,
    }
}

/// The row's parameters and what the exact reference needs to settle near-ties.
pub(crate) struct RowParams<'a> {
    pub op: Op,
    /// γ and β widened to f64 (length d), or empty when absent.
    pub gamma: &'a [f64],
    pub beta: &'a [f64],
    pub eps: f32,
    /// Write y with non-temporal stores (where a row starts 16-byte aligned).
    pub stream: bool,
}

/// The output pass: y = γ·z(x) + β, each lane rounded once to `T`; lanes near a rounding
/// midpoint are collected in `near_ties`.
#[inline(always)]
fn write_row<S: Simd, T: Element, N: Normalize<S>, const G: bool, const B: bool>(
    s: S,
    x: &[T],
    p: &RowParams<'_>,
    y: &mut [T],
    n: &N,
    near_ties: &mut Vec<u32>,
) {
    let y_start = y.as_ptr();
    let (xc, xt) = x.as_chunks::<8>();
    let (yc, yt) = y.as_chunks_mut::<8>();
    let (gc, gt) = p.gamma.as_chunks::<8>();
    let (bc, bt) = p.beta.as_chunks::<8>();
    let zero = s.splat(0.0);
    let stream = p.stream && (y_start as usize).is_multiple_of(16);
    for (j, (xv, yv)) in xc.iter().zip(yc.iter_mut()).enumerate() {
        let g = if G { s.load_lanes(gc[j]) } else { zero };
        let b = if B { s.load_lanes(bc[j]) } else { zero };
        let out = affine::<S, G, B>(s, n.z(s, T::load(s, xv)), g, b);
        let flagged = if stream {
            T::stream(s, out, yv)
        } else {
            T::store(s, out, yv)
        };
        if flagged != 0 {
            second_look(s.to_array(out), flagged, yv, 8 * j, near_ties);
        }
    }
    if !xt.is_empty() {
        let g = if G { load_padded_f64(s, gt) } else { zero };
        let b = if B { load_padded_f64(s, bt) } else { zero };
        let out = affine::<S, G, B>(s, n.z(s, load_padded(s, xt)), g, b);
        let mut buf = [T::default(); 8];
        let valid = ((1u16 << yt.len()) - 1) as u8;
        let flagged = T::store(s, out, &mut buf) & valid;
        if flagged != 0 {
            second_look(s.to_array(out), flagged, &mut buf, 8 * xc.len(), near_ties);
        }
        yt.copy_from_slice(&buf[..yt.len()]);
    }
}

/// The lanes a store reported: each is rewritten with its correct rounding, and those
/// within `NEAR_TIE_ULPS` of a midpoint are noted for the exact decision.
#[cold]
#[inline(never)]
fn second_look<T: Element>(
    lanes: [f64; 8],
    flagged: u8,
    out: &mut [T; 8],
    first: usize,
    near_ties: &mut Vec<u32>,
) {
    for (l, (&v, o)) in lanes.iter().zip(out.iter_mut()).enumerate() {
        if flagged & (1 << l) != 0 {
            *o = T::from_bits(T::DTYPE.round_f64(v));
            if v.is_finite() && near_midpoint_lane(v, T::HALF_ULP_BIT, NEAR_TIE_ULPS) {
                near_ties.push((first + l) as u32);
            }
        }
    }
}

/// Settles the near-tie elements of a row exactly with the reference's exact statistics
/// and exact midpoint decisions.
#[cold]
#[inline(never)]
fn settle_near_ties<T: Element>(x: &[T], p: &RowParams<'_>, y: &mut [T], near_ties: &[u32]) {
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
            gamma: p.gamma.get(i).copied().unwrap_or(1.0),
            beta: p.beta.get(i).copied().unwrap_or(0.0),
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

/// Finishes a row: the output pass, then exact decisions for near-ties.
#[inline(always)]
fn finish_row<S: Simd, T: Element, N: Normalize<S>, const G: bool, const B: bool>(
    s: S,
    x: &[T],
    p: &RowParams<'_>,
    y: &mut [T],
    n: &N,
    near_ties: &mut Vec<u32>,
) {
    near_ties.clear();
    write_row::<S, T, N, G, B>(s, x, p, y, n, near_ties);
    if !near_ties.is_empty() {
        settle_near_ties(x, p, y, near_ties);
    }
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
/// the mean, so cancellation costs at most a factor 9); otherwise the shift moves to the
/// estimated mean and the pass is repeated (a third pass is never needed in practice:
/// |μ − c| ≤ σ√d at first, and moving leaves |μ − c| ≲ (d/16)·u·σ√d). `None` when the sums
/// are not finite (a ±∞ or NaN in the row).
#[inline(always)]
pub(crate) fn layer_norm_stats<S: Simd, T: Element>(s: S, x: &[T]) -> Option<CenteredStats> {
    let d = x.len() as f64;
    // The first shift: the mean of the first eight values (exact sum, one rounding).
    let head = &x[..x.len().min(8)];
    let mut shift = s
        .to_array(load_padded(s, head))
        .iter()
        .fold(0.0, |a, v| a + v)
        / head.len() as f64;
    let mut passes = 0;
    loop {
        let zero = s.splat(0.0);
        let acc = reduce(
            s,
            x,
            &ShiftedSums {
                shift: s.splat(shift),
            },
            (zero, zero),
        );
        let sum = sum_lanes(s, [acc[0].0, acc[1].0]);
        let sum_sq = sum_lanes(s, [acc[0].1, acc[1].1]);
        if !(sum.is_finite() && sum_sq.is_finite()) {
            return None;
        }
        let m = sum / d;
        let var = sum_sq / d - m * m;
        passes += 1;
        if m * m <= 8.0 * var || passes == 3 {
            return Some(CenteredStats {
                shift,
                mean_shifted: m,
                var: var.max(0.0),
                passes,
            });
        }
        shift += m;
    }
}

/// y = γ ⊙ (x − μ)/√(σ² + ε) + β for one row.
#[inline(always)]
pub(crate) fn layer_norm_row<S: Simd, T: Element, const G: bool, const B: bool>(
    s: S,
    x: &[T],
    p: &RowParams<'_>,
    y: &mut [T],
    near_ties: &mut Vec<u32>,
) {
    let Some(stats) = layer_norm_stats(s, x) else {
        return fill_nan(y);
    };
    let n = Centered {
        shift: s.splat(stats.shift),
        mean_shifted: s.splat(stats.mean_shifted),
        scale: s.splat(1.0 / (stats.var + p.eps as f64).sqrt()),
    };
    finish_row::<S, T, _, G, B>(s, x, p, y, &n, near_ties);
}

/// y = γ ⊙ x/√(mean(x²) + ε) + β for one row.
#[inline(always)]
pub(crate) fn rms_norm_row<S: Simd, T: Element, const G: bool, const B: bool>(
    s: S,
    x: &[T],
    p: &RowParams<'_>,
    y: &mut [T],
    near_ties: &mut Vec<u32>,
) {
    let d = x.len() as f64;
    let sum_sq = sum_lanes(s, reduce(s, x, &SumOfSquares, s.splat(0.0)));
    if !sum_sq.is_finite() {
        return fill_nan(y);
    }
    let r = 1.0 / (sum_sq / d + p.eps as f64).sqrt();
    let n = Scaled { scale: s.splat(r) };
    finish_row::<S, T, _, G, B>(s, x, p, y, &n, near_ties);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::simd::Scalar;
    use rug::Rational;

    /// The exact variance of a row, as a rational.
    fn exact_var(x: &[f32]) -> Rational {
        let d = Rational::from(x.len() as u64);
        let xs: Vec<Rational> = x
            .iter()
            .map(|&v| Rational::from_f64(v as f64).unwrap())
            .collect();
        let mean: Rational = xs.iter().sum::<Rational>() / &d;
        let sq: Rational = xs.iter().map(|v| Rational::from(v - &mean).square()).sum();
        sq / d
    }

    /// Rows whose first eight values are far from the rest: the shift must move once, and
    /// the variance stays accurate to the bound of the accepted pass.
    #[test]
    fn lopsided_rows_move_the_shift_once() {
        for (d, high, spread) in [
            (256usize, 1e3f32, 1.0f32),
            (4096, 4096.0, 0.5),
            (40000, 1e6, 3.0),
        ] {
            let x: Vec<f32> = (0..d)
                .map(|i| {
                    if i < 8 {
                        high
                    } else {
                        spread * ((i * 7919 % 1013) as f32 / 1013.0 - 0.5)
                    }
                })
                .collect();
            let stats = layer_norm_stats(Scalar, &x).unwrap();
            assert_eq!(stats.passes, 2, "d={d}");
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

    /// Ordinary rows are done in one pass, including constant ones.
    #[test]
    fn ordinary_rows_take_one_pass() {
        let x: Vec<f32> = (0..1000).map(|i| 1e5 + ((i * 31) % 17) as f32).collect();
        assert_eq!(layer_norm_stats(Scalar, &x).unwrap().passes, 1);
        let c = [3.25f32; 9];
        let stats = layer_norm_stats(Scalar, &c).unwrap();
        assert_eq!((stats.passes, stats.var, stats.mean_shifted), (1, 0.0, 0.0));
        assert!(layer_norm_stats(Scalar, &[1.0, f32::INFINITY]).is_none());
    }
}
