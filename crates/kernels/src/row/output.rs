//! The output pass of a row: the loop over its whole vectors (f32 path first where the
//! row takes it), the second look at the lanes the stores reported, the partial last
//! vector, and the exact decision of near-ties.

use super::certainty::{bound_terms, needs_exact};
use super::f32_path::{F32PathPass, F32PathRow};
use super::lanes::{lanes, load_padded};
use super::normalize::{affine, Normalize, RowConstants};
use super::params::{load_padded_param, Param, RowParams};
use super::statistics::Beside;
use super::Vectorized;
use super::{Row, Scratch};
use crate::element::Element;
use crate::exact::{ElementInput, RowKind, RowStats};
use crate::problem::EpsConvention;
use crate::simd::Simd;

/// The output loop over a row's whole vectors: y = γ·z(x) + β, rounded once to `T`, and
/// in `flags` the stores' reports (the lanes they reported, in the store's order: see
/// [`Element::reported_lanes`]), eight vectors' OR-ed ([`Reports`]): the loop only needs
/// to know where the reported lanes are, and the second look finds each vector's own.
/// `WIDE`: x is read from `wide`; `STREAM`: non-temporal stores. `beside` runs with the
/// loop, a group of vectors at a time (see [`Beside`]).
pub(super) struct OutputPass<
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
pub(super) struct Reports<T>(std::marker::PhantomData<T>);

impl<T: Element> Reports<T> {
    pub(super) const PER_STORE: usize = if T::STORES_PAIRS { 2 } else { 1 };
    pub(super) const GROUP: usize = Self::PER_STORE * T::STORES_PER_REPORT;

    /// The bytes the loop writes over `len` vectors: a last, partial group has a byte for
    /// each place in a store that one of its vectors takes (its odd last vector included).
    #[inline(always)]
    pub(super) fn bytes(len: usize) -> usize {
        len / Self::GROUP * Self::PER_STORE + (len % Self::GROUP).min(Self::PER_STORE)
    }

    /// Report q into its bytes of `flags` (the first place's byte low); a last, partial
    /// report into those it has.
    #[inline(always)]
    pub(super) fn record(flags: &mut [u8], q: usize, report: u16) {
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
    pub(super) fn vectors(i: usize, len: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
        let group = i / Self::PER_STORE * Self::GROUP;
        let first = group + i % Self::PER_STORE;
        (first..len.min(group + Self::GROUP)).step_by(Self::PER_STORE)
    }
}

/// What the output loop reads, as local slices (copied out of any struct the loop's stores
/// could be thought to change).
#[derive(Clone, Copy)]
pub(super) struct Sources<'a, T, P> {
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
pub(super) fn write_row<
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
    f32_row: Option<F32PathRow>,
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
    debug_assert!(!C::X_ONLY || (wide.is_empty() && f32_row.is_none()));
    let use_wide = !C::X_ONLY && !wide.is_empty();
    debug_assert!(K::ALONE || (!use_wide && f32_row.is_none()));
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
    let f32_row = if C::X_ONLY { None } else { f32_row };
    // Rows on the f32 path had their next row requested by the statistics pass
    // (`requested_by_statistics`), which took it from the row: neither loop requests it.
    debug_assert!(f32_row.is_none() || next.is_none());
    let start = match f32_row {
        Some(row) => {
            let pairs = xc.len() / 2;
            let (x16, g16, b16) = (pairs_of(xc), pairs_of(gc), pairs_of(bc));
            let y16 = yc[..2 * pairs].as_flattened_mut().as_chunks_mut::<16>().0;
            let f16 = flags[..2 * pairs].as_chunks_mut::<2>().0;
            macro_rules! f32_path {
                ($stream:literal) => {
                    s.isolated(F32PathPass::<T, P, C, G, B, $stream, true> {
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
                f32_path!(true)
            } else {
                f32_path!(false)
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
pub(super) fn flagged_vectors(flags: &[u8], out: &mut Vec<u32>) {
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
pub(super) fn pairs_of<X>(v: &[[X; 8]]) -> &[[X; 16]] {
    v.as_flattened().as_chunks::<16>().0
}

/// The vectors from `start` on; none of an absent γ or β (empty).
#[inline(always)]
pub(super) fn from<X>(v: &[X], start: usize) -> &[X] {
    v.get(start..).unwrap_or(&[])
}

/// The lanes the output pass reported (ŷ, γ, β lane by lane in `lanes`): each is rewritten
/// with the correct rounding of ŷ, and those that [`needs_exact`] says so are noted for
/// the exact decision.
#[cold]
#[inline(never)]
pub(super) fn second_look<T: Element, C: RowConstants, const G: bool, const B: bool>(
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
pub(super) fn settle_near_ties<T: Element, P: Param>(
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

pub(super) fn fill_nan<T: Element>(y: &mut [T]) {
    y.fill(T::from_bits(T::DTYPE.nan_bits()));
}

/// Finishes a row: the output pass (with `beside`), then exact decisions for near-ties.
#[inline(always)]
pub(super) fn finish_row<
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
    f32_row: Option<F32PathRow>,
    beside: K,
    scratch: &mut Scratch,
) -> K::Output {
    scratch.near_ties.clear();
    let out = write_row::<S, T, P, C, K, G, B>(s, &mut row, p, c, f32_row, beside, scratch);
    if !scratch.near_ties.is_empty() {
        settle_near_ties(row.x, p, row.y, &scratch.near_ties);
    }
    out
}
