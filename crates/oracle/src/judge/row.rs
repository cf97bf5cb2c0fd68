//! One row judged: each element's tier, ULP distance, relative and scale-unit errors against
//! the exact value, under the row's bound ([`super::tolerance`]); the row's tally and its
//! listed failures.

use super::*;
use fast_reference::Expected;
use normoracle_core::vector;
use tolerance::{ElementTerms, RowBound};

/// Columns the exact tier takes at once, and lanes of a row's sums of squares: a constant,
/// not the machine's vector width, so that the sums are the same on every machine.
const LANES: usize = 8;

/// The judgement of one element.
pub(super) struct ElementJudgement {
    pub(super) tier: Tier,
    /// ULP distance to the correctly rounded value (finite pairs only).
    pub(super) ulp: Option<u64>,
    /// |o − y|/|y| (∞ for a nonzero output where y = 0; 0 for the correctly rounded ±∞).
    pub(super) rel_err: f64,
    /// B_i (0 where the tier was decided without it).
    pub(super) bound: Wide,
    /// The fraction of B_i used, for elements judged against it (> 1: failed; ∞ for a NaN
    /// or non-finite mismatch).
    pub(super) bound_use: Option<f64>,
    /// How badly a failing element missed.
    pub(super) severity: Option<Severity>,
}

impl ElementJudgement {
    fn decided(tier: Tier, ulp: Option<u64>, rel_err: f64) -> Self {
        ElementJudgement {
            tier,
            ulp,
            rel_err,
            bound: Wide::ZERO,
            // Decided without the bound, a failure is a NaN or non-finite mismatch: no
            // tolerance covers it.
            bound_use: (tier == Tier::Fail).then_some(f64::INFINITY),
            severity: (tier == Tier::Fail).then_some(Severity::Wrong),
        }
    }
}

/// |o − y| ≤ max·|y|, decided without a division and without branches (so that a loop over it
/// vectorizes): |o − y| ≤ 0.999·max·|y| computed in f64 is below max·|y| exactly when that
/// product is normal. False for a NaN anywhere.
#[inline(always)]
fn certainly_within(o: f64, y: f64, max: f64) -> bool {
    let difference = (o - y).abs();
    let threshold = max * 0.999 * y.abs();
    difference == 0.0 || (difference <= threshold && threshold >= f64::MIN_POSITIVE)
}

/// The exact output of an element: the evaluation's f64 approximation, and, where that left
/// f64's range (an f64 element whose correctly rounded output is ±∞), MPFR's value as a
/// `Wide`, whose exponent is unbounded. A finite output there is judged against it like any
/// other. Ordinary elements stay in plain f64 (the judge's hot path).
pub(super) struct ExactValue {
    value: f64,
    past_max: Option<Wide>,
}

impl ExactValue {
    pub(super) fn of(e: &Element, eval: &Evaluation) -> Self {
        ExactValue {
            value: eval.value,
            past_max: eval
                .value
                .is_infinite()
                .then(|| Wide::from_float(&e.mpfr_value())),
        }
    }

    pub(super) fn wide(&self) -> Wide {
        self.past_max.unwrap_or(Wide::of(self.value))
    }

    /// Whether [`Self::relative_error`] of `o` (finite) is certainly at most `max` (≥ 0, or
    /// NaN: then false), without its division ([`certainly_within`]). Most elements of a row
    /// are decided here, and the division is a verdict's slowest operation per element.
    #[inline]
    fn relative_error_at_most(&self, o: f64, max: f64) -> bool {
        self.past_max.is_none() && certainly_within(o, self.value, max)
    }

    /// Raises the running maximum `max` to [`Self::relative_error`] of `o` (finite) where
    /// that may exceed it: the division only then.
    #[inline(always)]
    fn raise_max_rel_err(&self, o: f64, max: &mut f64) {
        if !self.relative_error_at_most(o, *max) {
            *max = verdict::max_nan_aware(*max, self.relative_error(o));
        }
    }

    /// |o − y|/|y|: 0 where equal, ∞ for a nonzero output where y = 0; in `Wide` past
    /// f64::MAX.
    #[inline]
    fn relative_error(&self, o: f64) -> f64 {
        #[cold]
        fn past_max(o: f64, y: Wide) -> f64 {
            ((Wide::of(o) - y) / y).abs().to_f64()
        }
        let y = self.value;
        if let Some(wide) = self.past_max {
            past_max(o, wide)
        } else if o == y {
            0.0
        } else if y == 0.0 {
            f64::INFINITY
        } else {
            ((o - y) / y).abs()
        }
    }
}

pub(super) fn judge_element(
    dtype: Dtype,
    row_bound: &dyn Fn() -> RowBound,
    stats: &RowStats,
    e: &Element,
    eval: &Evaluation,
    y: &ExactValue,
    actual: u64,
) -> ElementJudgement {
    let expected = eval.rounded;
    if stats.kind == RowKind::NonFinite {
        // NaN is always IEEE-consistent here; a finite output only where the limit is finite.
        let limit_met = !dtype.is_nan(expected)
            && !dtype.is_nan(actual)
            && dtype.to_f64(actual) == dtype.to_f64(expected);
        return if dtype.is_nan(actual) || limit_met {
            ElementJudgement::decided(Tier::Exact, None, 0.0)
        } else {
            ElementJudgement::decided(Tier::Fail, None, f64::INFINITY)
        };
    }
    if dtype.is_nan(actual) {
        return ElementJudgement::decided(Tier::Fail, None, f64::INFINITY);
    }
    let o = dtype.to_f64(actual);
    let ulp = dtype.ulp_distance(actual, expected);
    if o == dtype.to_f64(expected) {
        // The correctly rounded ±∞ has no finite error to measure: what the format demands.
        let rel_err = if o.is_finite() {
            y.relative_error(o)
        } else {
            0.0
        };
        return ElementJudgement::decided(Tier::Exact, Some(0), rel_err);
    }
    let rel_err = y.relative_error(o);
    // ±∞ one step beyond ±MAX is no faithful rounding of a finite correctly rounded value: it
    // passes only within the bound, where that reaches the overflow threshold.
    if ulp == 1 && o.is_finite() {
        // Faithful iff the output is the neighbour on the exact value's side.
        let side = e.compare_to_value_with(dtype, expected, eval);
        let out_side = if dtype.ordinal(actual) > dtype.ordinal(expected) {
            Ordering::Greater
        } else {
            Ordering::Less
        };
        if side == out_side {
            return ElementJudgement::decided(Tier::Faithful, Some(1), rel_err);
        }
    }
    let input = e.input;
    let y = y.wide();
    let bound = row_bound().bound(ElementTerms {
        x: input.x,
        gamma: input.gamma,
        beta: input.beta,
    });
    let used = tolerance::bound_use(dtype, o, y, bound);
    let tier = if used <= 1.0 {
        Tier::WithinBound
    } else {
        Tier::Fail
    };
    let severity = (tier == Tier::Fail)
        .then(|| severity::classify(dtype, o, y, bound, input.gamma, input.beta));
    ElementJudgement {
        tier,
        ulp: Some(ulp),
        rel_err,
        bound,
        bound_use: Some(used),
        severity,
    }
}

/// |o − y| in units of the element's output scale |γ| + |β| (∞ for a NaN or non-finite
/// mismatch, and for any error where the scale is 0).
fn scale_units(o: f64, y: &ExactValue, tier: Tier, gamma: f64, beta: f64) -> f64 {
    if tier == Tier::Exact {
        return 0.0;
    }
    let error = if y.past_max.is_some() {
        (Wide::of(o) - y.wide()).abs().to_f64()
    } else {
        (o - y.value).abs()
    };
    let scale = gamma.abs() + beta.abs();
    if error.is_nan() {
        f64::INFINITY
    } else if error == 0.0 {
        0.0
    } else {
        error / scale
    }
}

/// Σ(o − y)² and Σy² of a row, for its normalized mean squared error: in f64, in
/// [`LANES`] lanes by column (column i adds to lane i mod [`LANES`], the lanes summed in
/// order at the end: the same sums on every machine, and the order lets the exact tier's
/// chunks add a lane each at once), except the terms past 2^960 (rows near f64::MAX, exact
/// values past it), which go to `Wide` sums so the ratio neither overflows nor turns NaN.
#[derive(Default)]
struct SquaredErrors {
    plain: [[f64; LANES]; 2],
    wide: [Wide; 2],
}

/// Terms up to this (≈ 2^960) go to the f64 lanes: no f64 sum of d such terms overflows.
const LARGE_SQUARE: f64 = 1.0e289;

impl SquaredErrors {
    /// Adds column `col`: output o, exact value y. An output that is the correctly rounded
    /// ±∞ adds no error (nothing finite to measure, and the format allows nothing better).
    #[inline(always)]
    fn add(&mut self, col: usize, o: f64, y: &ExactValue, correctly_rounded_infinity: bool) {
        let error = if correctly_rounded_infinity {
            0.0
        } else {
            o - y.value
        };
        let (error2, y2) = (error * error, y.value * y.value);
        if error2 <= LARGE_SQUARE && y2 <= LARGE_SQUARE {
            self.plain[0][col % LANES] += error2;
            self.plain[1][col % LANES] += y2;
        } else {
            self.add_wide(o, y, correctly_rounded_infinity);
        }
    }

    #[cold]
    #[inline(never)]
    fn add_wide(&mut self, o: f64, y: &ExactValue, correctly_rounded_infinity: bool) {
        let y = y.wide();
        let error = if correctly_rounded_infinity {
            Wide::ZERO
        } else {
            Wide::of(o) - y
        };
        self.wide[0] = self.wide[0] + error * error;
        self.wide[1] = self.wide[1] + y * y;
    }

    fn nmse(&self) -> f64 {
        let ratio = |err2: f64, ref2: f64| {
            if ref2 > 0.0 {
                err2 / ref2
            } else if err2 > 0.0 {
                f64::INFINITY
            } else {
                0.0
            }
        };
        let in_order = |lanes: [f64; LANES]| lanes.into_iter().fold(0.0, |a, b| a + b);
        let [plain_err2, plain_ref2] = self.plain.map(in_order);
        if self.wide == [Wide::ZERO; 2] {
            return ratio(plain_err2, plain_ref2);
        }
        let err2 = self.wide[0] + Wide::of(plain_err2);
        let ref2 = self.wide[1] + Wide::of(plain_ref2);
        if ref2.is_zero() {
            return ratio(err2.to_f64(), 0.0);
        }
        (err2 / ref2).to_f64()
    }
}

pub(super) struct RowOutcome {
    pub(super) tally: Tally,
    pub(super) failures: Vec<Failure>,
}

/// γ and β as f64, decoded once per problem.
pub(super) struct Parameters {
    gamma: Vec<f64>,
    beta: Vec<f64>,
    /// Whether γ = 1 and β = 0 everywhere (no γ and β given, or only those): the exact
    /// tier then skips them (t̃ = δ·r, as the general formula gives it up to the sign of a
    /// zero, which nothing there looks at).
    identity: bool,
    /// ε exactly.
    eps: rug::Rational,
}

impl Parameters {
    pub(super) fn of(problem: &Problem) -> Self {
        let gamma: Vec<f64> = (0..problem.d).map(|i| problem.gamma_at(i)).collect();
        let beta: Vec<f64> = (0..problem.d).map(|i| problem.beta_at(i)).collect();
        let identity = gamma.iter().all(|&g| g == 1.0) && beta.iter().all(|&b| b == 0.0);
        Parameters {
            gamma,
            beta,
            identity,
            eps: problem.eps.exact(),
        }
    }
}

/// What the exact tier's runs of a row read: the outputs, the fast reference's outputs, the
/// row's values, γ and β, and the two statistics [`f64_path`] takes.
struct ExactRow<'a, E> {
    actual: &'a [u64],
    expected: &'a [E],
    values: &'a [f64],
    params: &'a Parameters,
    mean_hi: f64,
    inv_scale_hi: f64,
}

/// An output of the fast reference, as the kernels give it (in their format) or as bits.
pub(super) trait OutputBits: Copy {
    /// The format, where the type says it (then the exact tier compiles that format's
    /// loop only); None for bits of any format.
    const DTYPE: Option<Dtype>;
    fn bits(self) -> u64;
}

impl OutputBits for u64 {
    const DTYPE: Option<Dtype> = None;
    #[inline(always)]
    fn bits(self) -> u64 {
        self
    }
}

impl OutputBits for f32 {
    const DTYPE: Option<Dtype> = Some(Dtype::F32);
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl OutputBits for half::f16 {
    const DTYPE: Option<Dtype> = Some(Dtype::F16);
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl OutputBits for half::bf16 {
    const DTYPE: Option<Dtype> = Some(Dtype::BF16);
    #[inline(always)]
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}

impl<E: OutputBits> ExactRow<'_, E> {
    /// The exact tier's run from element `start`: elements bit for bit equal to the fast
    /// reference ([`fast_reference`]; taken only on rows on the fast path, where
    /// [`f64_path`] is `Element::approximate_f64`), with t's f64 approximation accurate to
    /// 2^-42 for the error statistics (elsewhere, as near a cancellation, the exact
    /// evaluation gives them). Counts them into `tally` and `squares`, and returns the first
    /// element that is not one of them (or d). Most elements of a good kernel end here: whole
    /// chunks of [`LANES`] columns at a time ([`Self::chunk`], straight-line code the
    /// compiler vectorizes), single elements ([`Self::single`]) up to the next chunk's start
    /// and wherever a chunk holds anything else, with the format's decoding inlined
    /// (`decode`, the bits' value; `decode_lanes`, a chunk's eight) and the running values in
    /// registers.
    #[inline(always)]
    fn run<const IDENTITY: bool>(
        &self,
        decode: impl Fn(u64) -> f64 + Copy,
        decode_lanes: impl Fn(&[u64; LANES]) -> [f64; LANES] + Copy,
        start: usize,
        tally: &mut Tally,
        squares: &mut SquaredErrors,
    ) -> usize {
        let d = self.values.len();
        let mut max_rel_err = tally.max_rel_err;
        // The lanes in a local the loop keeps in registers (through `squares`, every chunk
        // stored them and loaded them back: a chain of memory round trips).
        let mut lanes = squares.plain;
        let mut i = start;
        while i < d {
            if i.is_multiple_of(LANES)
                && i + LANES <= d
                && self.chunk::<IDENTITY>(decode_lanes, i, &mut max_rel_err, &mut lanes)
            {
                i += LANES;
            } else if self.single(decode, i, &mut max_rel_err, &mut lanes) {
                i += 1;
            } else {
                break;
            }
        }
        squares.plain = lanes;
        let counted = (i - start) as u64;
        tally.judged += counted;
        tally.exact += counted;
        tally.max_rel_err = max_rel_err;
        i
    }

    /// One element of the run, if it is one (else nothing is counted).
    #[inline(always)]
    fn single(
        &self,
        decode: impl Fn(u64) -> f64,
        i: usize,
        max_rel_err: &mut f64,
        lanes: &mut [[f64; LANES]; 2],
    ) -> bool {
        let a = self.actual[i];
        if a != self.expected[i].bits() {
            return false;
        }
        let input = ElementInput {
            x: self.values[i],
            gamma: self.params.gamma[i],
            beta: self.params.beta[i],
        };
        let (t, err) = f64_path(self.mean_hi, self.inv_scale_hi, input);
        // NaN in either side (an overflowed t̃) leaves the run as well.
        let accurate = err <= t.abs() * FAST_STATISTICS_RELATIVE_ERROR;
        if !accurate {
            return false;
        }
        let o = decode(a);
        // The correctly rounded ±∞ adds no error (as `SquaredErrors::add` counts it).
        let error = if o.is_infinite() { 0.0 } else { o - t };
        let (error2, t2) = (error * error, t * t);
        // Terms for the `Wide` sums leave the run too: the element-by-element path adds them.
        if !(error2 <= LARGE_SQUARE && t2 <= LARGE_SQUARE) {
            return false;
        }
        let y = ExactValue {
            value: t,
            past_max: None,
        };
        if o.is_finite() {
            y.raise_max_rel_err(o, max_rel_err);
        }
        lanes[0][i % LANES] += error2;
        lanes[1][i % LANES] += t2;
        true
    }

    /// Columns `i..i + LANES` (i a multiple of [`LANES`]) at once, where every one of them is
    /// an ordinary element of the run: equal to the fast reference, t̃ accurate, a finite
    /// output, squares below [`LARGE_SQUARE`]. Then it adds what [`Self::single`] would
    /// add for each (each square to its column's lane; the running maximum is a maximum, so
    /// the order of its updates does not matter) and returns true; else it changes nothing.
    #[inline(always)]
    fn chunk<const IDENTITY: bool>(
        &self,
        decode_lanes: impl Fn(&[u64; LANES]) -> [f64; LANES],
        i: usize,
        max_rel_err: &mut f64,
        lanes: &mut [[f64; LANES]; 2],
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                self.actual.as_ptr().wrapping_add(i + 256) as *const i8,
            )
        };
        let columns = i..i + LANES;
        let actual: &[u64; LANES] = self.actual[columns.clone()].try_into().expect("LANES");
        let expected: &[E; LANES] = self.expected[columns.clone()].try_into().expect("LANES");
        let values: &[f64; LANES] = self.values[columns.clone()].try_into().expect("LANES");
        // γ = 1 and β = −0 give δ·r exactly, and the compiler drops them.
        let (gamma, beta): (&[f64; LANES], &[f64; LANES]) = if IDENTITY {
            (&[1.0; LANES], &[-0.0; LANES])
        } else {
            (
                self.params.gamma[columns.clone()]
                    .try_into()
                    .expect("LANES"),
                self.params.beta[columns].try_into().expect("LANES"),
            )
        };
        let mut ordinary = true;
        for k in 0..LANES {
            ordinary &= actual[k] == expected[k].bits();
        }
        if !ordinary {
            return false;
        }
        let outputs = decode_lanes(actual);
        let (mut t, mut o) = ([0.0; LANES], [0.0; LANES]);
        let (mut error2, mut t2) = ([0.0; LANES], [0.0; LANES]);
        // Whether some lane's relative error may exceed the running maximum.
        let mut above = false;
        for k in 0..LANES {
            let input = ElementInput {
                x: values[k],
                gamma: gamma[k],
                beta: beta[k],
            };
            let (tk, err) = f64_path(self.mean_hi, self.inv_scale_hi, input);
            let ok = err <= tk.abs() * FAST_STATISTICS_RELATIVE_ERROR;
            let out = outputs[k];
            ordinary &= ok & out.is_finite();
            above |= !certainly_within(out, tk, *max_rel_err);
            error2[k] = (out - tk) * (out - tk);
            t2[k] = tk * tk;
            ordinary &= error2[k] <= LARGE_SQUARE && t2[k] <= LARGE_SQUARE;
            t[k] = tk;
            o[k] = out;
        }
        if !ordinary {
            return false;
        }
        if above {
            self.update_max(&t, &o, max_rel_err);
        }
        for k in 0..LANES {
            lanes[0][k] += error2[k];
            lanes[1][k] += t2[k];
        }
        true
    }

    /// The running maximum of the relative errors, updated by a chunk's lanes (rarely: the
    /// first chunk of a row, then where a larger error appears).
    #[inline(never)]
    fn update_max(&self, t: &[f64; LANES], o: &[f64; LANES], max_rel_err: &mut f64) {
        for k in 0..LANES {
            let y = ExactValue {
                value: t[k],
                past_max: None,
            };
            y.raise_max_rel_err(o[k], max_rel_err);
        }
    }

    /// [`Self::run`] with the format's decoding, compiled for the widest instructions the
    /// CPU has ([`normoracle_core::vector`]): the same operations on every instruction set
    /// (IEEE additions, multiplications, comparisons; nothing fused), so the same tallies
    /// and sums (`the_exact_tier_is_the_same_chunked_single_and_on_every_isa`).
    fn run_in(
        &self,
        dtype: Dtype,
        start: usize,
        tally: &mut Tally,
        squares: &mut SquaredErrors,
    ) -> usize {
        self.run_on(vector::Isa::widest(), dtype, start, tally, squares)
    }

    /// [`Self::run_in`] on `isa`. (Each copy is a function of its own with the instruction
    /// set enabled: inlined through a closure, the chunk's loop was not vectorized.)
    fn run_on(
        &self,
        isa: vector::Isa,
        dtype: Dtype,
        start: usize,
        tally: &mut Tally,
        squares: &mut SquaredErrors,
    ) -> usize {
        match isa {
            vector::Isa::Baseline => self.run_in_any(dtype, start, tally, squares),
            // SAFETY: `Isa` offers these only where the CPU has them.
            #[cfg(target_arch = "x86_64")]
            vector::Isa::Avx2 => unsafe { self.run_in_avx2(dtype, start, tally, squares) },
            #[cfg(target_arch = "x86_64")]
            vector::Isa::Avx512 => unsafe { self.run_in_avx512(dtype, start, tally, squares) },
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_in_avx2(
        &self,
        dtype: Dtype,
        start: usize,
        tally: &mut Tally,
        squares: &mut SquaredErrors,
    ) -> usize {
        self.run_in_any(dtype, start, tally, squares)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,f16c")]
    unsafe fn run_in_avx512(
        &self,
        dtype: Dtype,
        start: usize,
        tally: &mut Tally,
        squares: &mut SquaredErrors,
    ) -> usize {
        // SAFETY: this function runs only where the CPU has AVX-512F and F16C.
        let f16_lanes = |bits: &[u64; LANES]| unsafe { f16_lanes_f16c(bits) };
        self.run_formats(dtype, start, tally, squares, f16_lanes)
    }

    /// [`Self::run`] with γ and β skipped where they are the identity.
    #[inline(always)]
    fn run_with(
        &self,
        decode: impl Fn(u64) -> f64 + Copy,
        decode_lanes: impl Fn(&[u64; LANES]) -> [f64; LANES] + Copy,
        start: usize,
        tally: &mut Tally,
        squares: &mut SquaredErrors,
    ) -> usize {
        if self.params.identity {
            self.run::<true>(decode, decode_lanes, start, tally, squares)
        } else {
            self.run::<false>(decode, decode_lanes, start, tally, squares)
        }
    }

    /// [`Self::run`] with the format's decoding ([`Dtype::to_f64`] of a constant format,
    /// so that its match folds away inside the loop), for the caller's instruction set.
    #[inline(always)]
    fn run_in_any(
        &self,
        dtype: Dtype,
        start: usize,
        tally: &mut Tally,
        squares: &mut SquaredErrors,
    ) -> usize {
        self.run_formats(dtype, start, tally, squares, lanes_of(f16_value))
    }

    /// [`Self::run_in_any`] with the chunks' f16 outputs decoded by `f16_lanes`.
    #[inline(always)]
    fn run_formats(
        &self,
        dtype: Dtype,
        start: usize,
        tally: &mut Tally,
        squares: &mut SquaredErrors,
        f16_lanes: impl Fn(&[u64; LANES]) -> [f64; LANES] + Copy,
    ) -> usize {
        let f32_value = |b| Dtype::F32.to_f64(b);
        let bf16_value = |b| Dtype::BF16.to_f64(b);
        let f64_value = |b| Dtype::F64.to_f64(b);
        debug_assert!(E::DTYPE.is_none_or(|own| own == dtype));
        match E::DTYPE.unwrap_or(dtype) {
            Dtype::F32 => self.run_with(f32_value, lanes_of(f32_value), start, tally, squares),
            Dtype::F16 => self.run_with(f16_value, f16_lanes, start, tally, squares),
            Dtype::BF16 => self.run_with(bf16_value, lanes_of(bf16_value), start, tally, squares),
            Dtype::F64 => self.run_with(f64_value, lanes_of(f64_value), start, tally, squares),
        }
    }
}

#[inline(always)]
fn f16_value(b: u64) -> f64 {
    Dtype::F16.to_f64(b)
}

/// Eight outputs decoded one by one.
#[inline(always)]
fn lanes_of(decode: impl Fn(u64) -> f64 + Copy) -> impl Fn(&[u64; LANES]) -> [f64; LANES] + Copy {
    move |bits| {
        let mut values = [0.0; LANES];
        for k in 0..LANES {
            values[k] = decode(bits[k]);
        }
        values
    }
}

/// Eight f16 outputs (the low 16 bits of each) as f64 with F16C: the same values as
/// [`Dtype::to_f64`] but for NaNs (quieted), which never take a chunk (its outputs are
/// finite). The integer recipe that keeps NaNs took a third of f16's exact tier.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,f16c")]
#[inline]
unsafe fn f16_lanes_f16c(bits: &[u64; LANES]) -> [f64; LANES] {
    use std::arch::x86_64::*;
    let v = _mm512_loadu_si512(bits.as_ptr() as *const _);
    let wide = _mm512_cvtps_pd(_mm256_cvtph_ps(_mm512_cvtepi64_epi16(v)));
    std::mem::transmute::<__m512d, [f64; LANES]>(wide)
}

/// Judges row `r` (`decoded`: its values and extremes, [`Extremes::decode`]). `expected`:
/// the fast reference's outputs of the row ([`fast_reference`]), used where the row's
/// statistics allow it.
pub(super) fn judge_row(
    problem: &Problem,
    params: &Parameters,
    r: usize,
    (values, extremes): (&[f64], &Extremes),
    actual: &[u64],
    label: &ProblemLabel,
    expected: Option<Expected>,
) -> RowOutcome {
    let dtype = problem.dtype;
    let d = problem.d;
    let stats = decoded_row_stats(problem, &params.eps, values, extremes);
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    if stats.kind == RowKind::Undefined {
        tally.undefined = d as u64;
        return RowOutcome { tally, failures };
    }
    let mut squares = SquaredErrors::default();
    let expected = expected.filter(|_| fast_reference::row_applies(&stats));
    // Built at the first element that needs it (most rows of a good kernel need none).
    let row_bound_cell = OnceCell::new();
    let row_bound = || *row_bound_cell.get_or_init(|| RowBound::new(dtype, &stats, values));
    // κ's mean|x|, at the first failure listed.
    let mean_abs = OnceCell::new();
    // The exact tier's run from element i, against the fast reference in its own type.
    let run_exact = |expected: Expected, i, tally: &mut Tally, squares: &mut SquaredErrors| {
        fn row<'a, E>(
            expected: &'a [E],
            actual: &'a [u64],
            values: &'a [f64],
            params: &'a Parameters,
            stats: &RowStats,
        ) -> ExactRow<'a, E> {
            ExactRow {
                actual,
                expected,
                values,
                params,
                mean_hi: stats.mean_dd.hi,
                inv_scale_hi: stats.inv_scale_dd.hi,
            }
        }
        match expected {
            Expected::F32(e) => {
                row(e, actual, values, params, &stats).run_in(dtype, i, tally, squares)
            }
            Expected::F16(e) => {
                row(e, actual, values, params, &stats).run_in(dtype, i, tally, squares)
            }
            Expected::Bf16(e) => {
                row(e, actual, values, params, &stats).run_in(dtype, i, tally, squares)
            }
        }
    };
    let mut i = 0;
    while i < d {
        if let Some(expected) = expected {
            i = run_exact(expected, i, &mut tally, &mut squares);
            if i == d {
                break;
            }
        }
        let a = actual[i];
        let input = ElementInput {
            x: values[i],
            gamma: params.gamma[i],
            beta: params.beta[i],
        };
        let e = Element::new(&stats, input);
        let eval = match stats.kind {
            RowKind::Defined => e.evaluate(dtype),
            _ => Evaluation {
                rounded: crate::exact::reference::nonfinite_row_output(problem, &stats, e.input),
                value: f64::NAN,
                bound: None,
            },
        };
        let y = ExactValue::of(&e, &eval);

        let ElementJudgement {
            tier,
            ulp,
            rel_err,
            bound,
            bound_use,
            severity,
        } = judge_element(dtype, &row_bound, &stats, &e, &eval, &y, a);
        tally.add(tier);
        if let Some(s) = severity {
            tally.add_severity(s);
            if ulp.is_none() {
                tally.unmeasured_failures += 1;
            }
        }
        if let Some(u) = ulp {
            tally.max_ulp = tally.max_ulp.max(u);
        }
        tally.max_rel_err = verdict::max_nan_aware(tally.max_rel_err, rel_err);
        if let Some(used) = bound_use {
            tally.max_bound_units = tally.max_bound_units.max(used);
            if tier == Tier::WithinBound {
                tally.max_bound_use = tally.max_bound_use.max(used);
            }
        }
        let scale = if stats.kind == RowKind::Defined {
            scale_units(dtype.to_f64(a), &y, tier, e.input.gamma, e.input.beta)
        } else if tier == Tier::Fail {
            f64::INFINITY
        } else {
            0.0
        };
        tally.max_scale_units = tally.max_scale_units.max(scale);
        if stats.kind == RowKind::Defined {
            let o = dtype.to_f64(a);
            let correctly_rounded_infinity = o.is_infinite() && tier == Tier::Exact;
            squares.add(i, o, &y, correctly_rounded_infinity);
        }
        if tier == Tier::Fail && failures.len() < FAILURES_LISTED {
            let x = e.input.x;
            failures.push(Failure {
                case: label.case,
                family: label.family.clone(),
                row: r,
                col: i,
                d,
                eps: problem.eps.value(),
                mean: stats.mean_dd.hi,
                sigma: stats.sigma,
                kappa: tolerance::condition(
                    &stats,
                    *mean_abs.get_or_init(|| stats.mean_abs(values)),
                    x,
                ),
                x,
                x_bits: dtype.hex(problem.x[r * d + i]),
                expected: dtype.to_f64(eval.rounded),
                expected_bits: dtype.hex(eval.rounded),
                actual: dtype.to_f64(a),
                actual_bits: dtype.hex(a),
                exact: eval.value,
                ulp,
                rel_err,
                bound: bound.to_f64(),
                bound_units: bound_use.unwrap_or(f64::INFINITY),
                scale_units: scale,
                severity: severity.unwrap_or(Severity::Wrong),
            });
        }
        i += 1;
    }
    if stats.kind == RowKind::Defined {
        tally.max_row_nmse = verdict::max_nan_aware(0.0, squares.nmse());
    }
    RowOutcome { tally, failures }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row's exact-tier runs as the judge takes them (a run, then the element that ended
    /// it skipped, then the next run), by `run`; the tally and the squares' bits.
    fn runs_of_row(
        exact_row: &ExactRow<u64>,
        mut run: impl FnMut(&ExactRow<u64>, usize, &mut Tally, &mut SquaredErrors) -> usize,
    ) -> (Tally, [[u64; LANES]; 2]) {
        let (mut tally, mut squares) = (Tally::default(), SquaredErrors::default());
        let mut i = 0;
        while i < exact_row.values.len() {
            i = run(exact_row, i, &mut tally, &mut squares) + 1;
        }
        (tally, squares.plain.map(|lanes| lanes.map(f64::to_bits)))
    }

    /// Rows of f32, f16 and bf16 problems (with and without γ and β) whose outputs are the
    /// fast reference's with a few elements off by one step, ±∞ or NaN: each row's runs by
    /// the chunked loop, by single elements only, and compiled for every instruction set
    /// the CPU has all count the same elements and give the same maximum and the same bits
    /// of every lane of the squares.
    #[test]
    fn the_exact_tier_is_the_same_chunked_single_and_on_every_isa() {
        let mut rng = crate::cases::rng::Rng::new(3, 0);
        let mut compared = 0;
        for (dtype, affine) in [
            (Dtype::F32, false),
            (Dtype::F32, true),
            (Dtype::F16, true),
            (Dtype::BF16, false),
        ] {
            for d in [1, 7, 8, 9, 64, 203] {
                let mut problem = super::super::bench::gaussian_problem(6, d, 5, dtype);
                if affine {
                    problem.gamma = Some((0..d).map(|_| dtype.round_f64(rng.normal())).collect());
                    problem.beta = Some((0..d).map(|_| dtype.round_f64(rng.normal())).collect());
                }
                let expected = fast_reference::whole(&problem).expect("the kernels apply");
                let mut actual = expected.clone();
                for v in actual.iter_mut() {
                    match rng.below(40) {
                        0 => *v += 1,
                        1 => *v = dtype.round_f64(f64::INFINITY),
                        2 => *v = dtype.nan_bits(),
                        _ => {}
                    }
                }
                let params = Parameters::of(&problem);
                for r in 0..problem.rows {
                    let (values, stats) =
                        crate::exact::reference::row_values_and_stats(&problem, r);
                    assert!(fast_reference::row_applies(&stats));
                    let exact_row: ExactRow<u64> = ExactRow {
                        actual: &actual[r * d..(r + 1) * d],
                        expected: &expected[r * d..(r + 1) * d],
                        values: &values,
                        params: &params,
                        mean_hi: stats.mean_dd.hi,
                        inv_scale_hi: stats.inv_scale_dd.hi,
                    };
                    let chunked = runs_of_row(&exact_row, |row, i, tally, squares| {
                        row.run_in_any(dtype, i, tally, squares)
                    });
                    let single = runs_of_row(&exact_row, |row, mut i, tally, squares| {
                        let mut max = tally.max_rel_err;
                        let start = i;
                        while i < d
                            && row.single(|b| dtype.to_f64(b), i, &mut max, &mut squares.plain)
                        {
                            i += 1;
                        }
                        tally.judged += (i - start) as u64;
                        tally.exact += (i - start) as u64;
                        tally.max_rel_err = max;
                        i
                    });
                    let key = |(t, lanes): &(Tally, [[u64; LANES]; 2])| {
                        (t.judged, t.exact, t.max_rel_err.to_bits(), *lanes)
                    };
                    assert_eq!(key(&chunked), key(&single), "{dtype} d = {d} row {r}");
                    for isa in vector::Isa::each() {
                        let compiled = runs_of_row(&exact_row, |row, i, tally, squares| {
                            row.run_on(isa, dtype, i, tally, squares)
                        });
                        let at = format!("{isa:?}: {dtype} d = {d} row {r}");
                        assert_eq!(key(&chunked), key(&compiled), "{at}");
                    }
                    compared += chunked.0.exact;
                }
            }
        }
        assert!(compared > 2000, "only {compared} elements in runs");
    }

    /// The division-free test never says "at most" where the division says more: random
    /// outputs, exact values and running maxima over many binades, ties and zeros included.
    /// (A threshold without the 0.999, or without the normal-range condition, fails here.)
    #[test]
    fn relative_error_at_most_never_hides_a_larger_error() {
        let mut rng = crate::cases::rng::Rng::new(7, 0);
        let mut decided = 0;
        for _ in 0..200_000 {
            let y = rng.normal() * crate::dtype::pow2(rng.below(2074) as i32 - 1074);
            let exact = ExactValue {
                value: y,
                past_max: None,
            };
            let o = match rng.below(4) {
                0 => y,
                1 => f64::from_bits(y.to_bits() + 1 + rng.below(3) as u64),
                2 => y * (1.0 + rng.normal() * crate::dtype::pow2(-(rng.below(60) as i32))),
                _ => 0.0,
            };
            if !o.is_finite() {
                continue;
            }
            let rel = exact.relative_error(o);
            let max = match rng.below(3) {
                0 => rel,
                1 => rel * (1.0 - crate::dtype::pow2(-(rng.below(53) as i32))),
                _ => rng.uniform() * crate::dtype::pow2(-(rng.below(1075) as i32)),
            };
            if exact.relative_error_at_most(o, max) {
                decided += 1;
                assert!(rel <= max, "o = {o:e}, y = {y:e}: {rel:e} > max {max:e}");
            }
        }
        assert!(decided > 50_000, "decided {decided}");
    }
}
