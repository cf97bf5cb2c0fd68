//! One row judged: each element's tier, ULP distance, relative and scale-unit errors against
//! the exact value, under the row's bound ([`super::tolerance`]); the row's tally and its
//! listed failures.

use super::*;
use tolerance::{ElementTerms, RowBound};

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

/// Σ(o − y)² and Σy² of a row, for its normalized mean squared error: in f64, except the
/// terms past 2^960 (rows near f64::MAX, exact values past it), which go to `Wide` sums so
/// the ratio neither overflows nor turns NaN.
#[derive(Default)]
struct SquaredErrors {
    plain: [f64; 2],
    wide: [Wide; 2],
}

impl SquaredErrors {
    /// Adds one element: output o, exact value y. An output that is the correctly rounded ±∞
    /// adds no error (nothing finite to measure, and the format allows nothing better).
    fn add(&mut self, o: f64, y: &ExactValue, correctly_rounded_infinity: bool) {
        const LARGE: f64 = 1.0e289; // ≈ 2^960: no f64 sum of d such terms overflows
        let error = if correctly_rounded_infinity {
            0.0
        } else {
            o - y.value
        };
        let (error2, y2) = (error * error, y.value * y.value);
        if error2 <= LARGE && y2 <= LARGE {
            self.plain[0] += error2;
            self.plain[1] += y2;
        } else {
            let y = y.wide();
            let error = if correctly_rounded_infinity {
                Wide::ZERO
            } else {
                Wide::of(o) - y
            };
            self.wide[0] = self.wide[0] + error * error;
            self.wide[1] = self.wide[1] + y * y;
        }
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
        let [plain_err2, plain_ref2] = self.plain;
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
}

impl Parameters {
    pub(super) fn of(problem: &Problem) -> Self {
        Parameters {
            gamma: (0..problem.d).map(|i| problem.gamma_at(i)).collect(),
            beta: (0..problem.d).map(|i| problem.beta_at(i)).collect(),
        }
    }
}

/// Judges row `r`. `expected`: the fast reference's outputs of the row
/// ([`fast_reference`]), used where the row's statistics allow it.
pub(super) fn judge_row(
    problem: &Problem,
    params: &Parameters,
    r: usize,
    actual: &[u64],
    label: &ProblemLabel,
    expected: Option<&[u64]>,
) -> RowOutcome {
    let dtype = problem.dtype;
    let d = problem.d;
    let stats = row_stats(problem, r);
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    if stats.kind == RowKind::Undefined {
        tally.undefined = d as u64;
        return RowOutcome { tally, failures };
    }
    let mut squares = SquaredErrors::default();
    let expected = expected.filter(|_| fast_reference::row_applies(&stats));
    let values: Vec<f64> = problem.row(r).iter().map(|&b| dtype.to_f64(b)).collect();
    // Built at the first element that needs it (most rows of a good kernel need none).
    let row_bound_cell = OnceCell::new();
    let row_bound = || *row_bound_cell.get_or_init(|| RowBound::new(dtype, &stats, &values));
    for (i, &a) in actual.iter().enumerate() {
        let input = ElementInput {
            x: values[i],
            gamma: params.gamma[i],
            beta: params.beta[i],
        };
        let e = Element::new(&stats, input);
        if let Some(t) = expected
            .filter(|exp| exp[i] == a)
            .and_then(|_| e.approximate_f64())
            .filter(|&(t, err)| err <= t.abs() * FAST_STATISTICS_RELATIVE_ERROR)
        {
            // Bit for bit the correctly rounded output: the exact tier, with the f64
            // approximation of t for the error statistics where it is accurate to 2^-42
            // (elsewhere, as near a cancellation, the exact evaluation below gives it).
            let o = dtype.to_f64(a);
            let y = ExactValue {
                value: t.0,
                past_max: None,
            };
            tally.add(Tier::Exact);
            let rel_err = if o.is_finite() {
                y.relative_error(o)
            } else {
                0.0
            };
            tally.max_rel_err = verdict::max_nan_aware(tally.max_rel_err, rel_err);
            squares.add(o, &y, o.is_infinite());
            continue;
        }
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
            squares.add(o, &y, correctly_rounded_infinity);
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
                kappa: tolerance::condition(&stats, x),
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
    }
    if stats.kind == RowKind::Defined {
        tally.max_row_nmse = verdict::max_nan_aware(0.0, squares.nmse());
    }
    RowOutcome { tally, failures }
}
