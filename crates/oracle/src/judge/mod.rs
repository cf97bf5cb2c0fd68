//! The judge: compares a kernel's outputs with the correctly rounded reference, element by
//! element, and sorts each into a tier (`verdict`), with the one tolerance formula
//! (`tolerance`); `report` renders the result.

pub mod api;
pub mod bench;
pub mod error_model;
pub mod fast_reference;
mod model;
pub mod report;
mod row;
pub mod severity;
#[cfg(test)]
mod soundness;
pub mod standard;
#[cfg(test)]
mod tightness;
pub mod tolerance;
pub mod verdict;

use crate::adapters::Kernel;
use crate::cases::{self, BatteryConfig, Case};
use crate::domain::Domain;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::exact::reference::Evaluation;
use crate::exact::reference::{decoded_row_stats, f64_path};
use crate::exact::stats::Extremes;
use crate::exact::ElementInput;
use crate::exact::{Element, RowKind, RowStats};
use crate::harness::{Call, Finding, FindingKind};
use crate::problem::{EpsConvention, Op, Problem};
use crate::wide::Wide;
use rayon::prelude::*;
use row::{judge_row, Parameters, RowOutcome};
use serde::Serialize;
pub use standard::Standard;
use std::cell::OnceCell;
use std::cmp::Ordering;
use std::collections::BTreeMap;
pub use verdict::{Severity, Tally, Tier};

/// An element bit for bit equal to the fast reference takes its error statistics from t's
/// f64 approximation when that is this accurate, relative to |t| (2^-42).
const FAST_STATISTICS_RELATIVE_ERROR: f64 = 2.273_736_754_432_320_6e-13;

/// How many failures a report lists in full.
pub const FAILURES_LISTED: usize = 10;

/// One failing element, with everything needed to understand it.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub case: Option<usize>,
    pub family: String,
    pub row: usize,
    pub col: usize,
    pub d: usize,
    pub eps: f32,
    /// Row statistics (approximations of the exact values): μ, σ, and κ of this element.
    pub mean: f64,
    pub sigma: f64,
    pub kappa: f64,
    pub x: f64,
    pub x_bits: String,
    pub expected: f64,
    pub expected_bits: String,
    pub actual: f64,
    pub actual_bits: String,
    /// The exact value (approximately).
    pub exact: f64,
    pub ulp: Option<u64>,
    pub rel_err: f64,
    /// B_i rounded to f64 (∞ past f64::MAX; the judge compares with it unrounded).
    pub bound: f64,
    /// The error in units of the tolerance, |o − y|/(B_i + ulp) (> 1 here; ∞ for NaN and
    /// non-finite mismatches).
    pub bound_units: f64,
    /// The error in units of the element's output scale, |o − y|/(|γ_i| + |β_i|) (∞ for NaN
    /// and non-finite mismatches): next to ULPs, which swell near an exact zero.
    pub scale_units: f64,
    /// How badly it missed.
    pub severity: Severity,
}

/// One case's elements, for the per-case verdicts of a cases directory (`check DIR`).
#[derive(Debug, Clone, Serialize)]
pub struct CaseTally {
    pub case: usize,
    pub family: String,
    #[serde(flatten)]
    pub tally: Tally,
}

/// The verdict on a kernel over a set of problems.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub kernel: String,
    pub op: Op,
    pub dtype: Dtype,
    pub convention: EpsConvention,
    pub seed: Option<u64>,
    pub cases: usize,
    pub tally: Tally,
    pub per_family: BTreeMap<String, Tally>,
    /// The first failures, in battery order.
    pub failures: Vec<Failure>,
    /// Everything the kernel did wrong besides its outputs (an error return, a crash, a
    /// timeout, a write outside y, …), one line each: `case N (family): what`.
    pub kernel_errors: Vec<String>,
    /// The same, with their kinds and the kernel's own output (see `harness::Finding`).
    pub findings: Vec<KernelFinding>,
    /// Cases on which the kernel was not called (after failing the same way on consecutive
    /// cases): the verdict is FAIL, whatever the cases that ran gave.
    pub not_run: usize,
    /// A command that reproduces the first failure.
    pub reproducer: Option<String>,
    /// The case holding the element farthest (in ULPs) from the correctly rounded value.
    pub worst_case: Option<usize>,
    pub worst_case_ulp: u64,
    /// The standard the verdict is given against (`--require`; the bound by default).
    pub standard: Standard,
    /// The domain the verdict is decided on (`--domain`; every row by default).
    pub domain: Domain,
    /// What was judged outside the domain: information, not in the verdict.
    #[serde(rename = "outside_domain", skip_serializing_if = "Option::is_none")]
    pub outside: Option<Box<Report>>,
    /// Each case's tally, when asked for (`Report::keep_cases`; cases directories).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_case: Option<Vec<CaseTally>>,
}

impl Report {
    pub fn new(
        kernel: impl Into<String>,
        op: Op,
        dtype: Dtype,
        convention: EpsConvention,
        seed: Option<u64>,
    ) -> Self {
        Report {
            kernel: kernel.into(),
            op,
            dtype,
            convention,
            seed,
            cases: 0,
            tally: Tally::default(),
            per_family: BTreeMap::new(),
            failures: Vec::new(),
            kernel_errors: Vec::new(),
            findings: Vec::new(),
            not_run: 0,
            reproducer: None,
            worst_case: None,
            worst_case_ulp: 0,
            standard: Standard::Bound,
            domain: Domain::default(),
            outside: None,
            per_case: None,
        }
    }

    /// Decides the verdict on `domain` only (the rows outside go to `outside`).
    pub fn within(mut self, domain: Domain) -> Self {
        self.domain = domain;
        self
    }

    /// Keeps each case's tally (`per_case`).
    pub fn keep_cases(mut self) -> Self {
        self.per_case = Some(Vec::new());
        self
    }

    /// The report of what lies outside the domain, made at the first such row.
    fn outside_mut(&mut self) -> &mut Report {
        let per_case = self.per_case.as_ref().map(|_| Vec::new());
        let (kernel, op, dtype, convention, seed, standard) = (
            self.kernel.clone(),
            self.op,
            self.dtype,
            self.convention,
            self.seed,
            self.standard,
        );
        self.outside.get_or_insert_with(|| {
            let mut r = Report::new(kernel, op, dtype, convention, seed);
            r.standard = standard;
            r.per_case = per_case;
            Box::new(r)
        })
    }

    /// The report on every row: the domain's and what lies outside it, together.
    pub fn whole(&self) -> Report {
        let mut whole = self.clone();
        whole.domain = Domain::default();
        let Some(outside) = whole.outside.take() else {
            return whole;
        };
        whole.cases += outside.cases;
        whole.tally.merge(&outside.tally);
        for (family, t) in &outside.per_family {
            whole.per_family.entry(family.clone()).or_default().merge(t);
        }
        whole.failures.extend(outside.failures.iter().cloned());
        whole.failures.sort_by_key(|f| f.case);
        whole.failures.truncate(FAILURES_LISTED);
        whole
            .kernel_errors
            .extend(outside.kernel_errors.iter().cloned());
        whole.findings.extend(outside.findings.iter().cloned());
        whole.not_run += outside.not_run;
        // The farthest case, the first in battery order among equals (as `absorb` keeps it).
        let farther = (
            outside.worst_case_ulp,
            std::cmp::Reverse(outside.worst_case),
        ) > (whole.worst_case_ulp, std::cmp::Reverse(whole.worst_case));
        if outside.worst_case.is_some() && (farther || whole.worst_case.is_none()) {
            whole.worst_case = outside.worst_case;
            whole.worst_case_ulp = outside.worst_case_ulp;
        }
        if let (Some(cases), Some(more)) = (&mut whole.per_case, &outside.per_case) {
            cases.extend(more.iter().cloned());
            cases.sort_by_key(|c| c.case);
        }
        whole
    }

    /// Sets the standard of the verdict, here and outside the domain.
    pub fn require(&mut self, standard: Standard) {
        self.standard = standard;
        if let Some(outside) = &mut self.outside {
            outside.standard = standard;
        }
    }

    /// Pass: no element failed, the kernel never refused a problem or misbehaved around a
    /// call, and it was called on every case.
    pub fn passed(&self) -> bool {
        self.tally.failed == 0
            && self.kernel_errors.is_empty()
            && self.findings.is_empty()
            && self.not_run == 0
    }

    /// The verdict: whether the report meets its standard (`passed` for the default bound).
    pub fn meets_standard(&self) -> bool {
        self.standard.met_by(self)
    }

    /// The id of the first failing case (element failure or kernel finding), if any.
    pub fn first_failing_case(&self) -> Option<usize> {
        let element = self.failures.first().and_then(|f| f.case);
        let finding = self.findings.iter().find_map(|f| f.case);
        match (element, finding) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Records a finding of the kernel on a case.
    pub fn add_finding(&mut self, case: Option<usize>, family: &str, finding: Finding) {
        let at = match case {
            Some(c) => format!("case {c} ({family})"),
            None => family.to_string(),
        };
        self.kernel_errors.push(format!(
            "{at}: {}: {}",
            finding.kind.label(),
            finding.detail
        ));
        self.findings.push(KernelFinding {
            case,
            family: family.to_string(),
            finding,
        });
    }
}

/// A finding of the harness, placed in the battery.
#[derive(Debug, Clone, Serialize)]
pub struct KernelFinding {
    pub case: Option<usize>,
    pub family: String,
    #[serde(flatten)]
    pub finding: Finding,
}

/// What the judge knows about the problem being judged, for the report.
#[derive(Debug, Clone)]
pub struct ProblemLabel {
    pub case: Option<usize>,
    pub family: String,
}

/// Judges a kernel's outputs (`actual`, rows × d bits) for a problem into `report`.
pub fn judge_problem(
    problem: &Problem,
    actual: &[u64],
    label: &ProblemLabel,
    report: &mut Report,
) -> Result<()> {
    judge_problem_with(problem, actual, label, report, true)
}

/// [`judge_problem`], with or without the fast reference (for comparing the two).
pub fn judge_problem_with(
    problem: &Problem,
    actual: &[u64],
    label: &ProblemLabel,
    report: &mut Report,
    use_fast_reference: bool,
) -> Result<()> {
    problem.validate()?;
    if actual.len() != problem.rows * problem.d {
        return Err(Error::input(format!(
            "outputs hold {} values, expected rows × d = {} × {}",
            actual.len(),
            problem.rows,
            problem.d
        )));
    }
    let d = problem.d;
    let params = Parameters::of(problem);
    let fast = use_fast_reference
        .then(|| fast_reference::FastReference::new(problem))
        .flatten();
    let blocks = problem.rows.div_ceil(fast_reference::BLOCK_ROWS);
    let outcomes: Vec<RowOutcome> = (0..blocks)
        .into_par_iter()
        .map_init(BlockScratch::default, |scratch, b| {
            let first = b * fast_reference::BLOCK_ROWS;
            let rows = first..(first + fast_reference::BLOCK_ROWS).min(problem.rows);
            // The block's rows decoded first: that pass reads x from memory, and the fast
            // reference's conversion then finds it in cache.
            let BlockScratch { values, kernels } = scratch;
            values.resize_with(rows.len(), Vec::new);
            let extremes: Vec<Extremes> = rows
                .clone()
                .zip(values.iter_mut())
                .map(|(r, v)| Extremes::decode_into(problem.dtype, problem.row(r), v))
                .collect();
            let expected = fast
                .as_ref()
                .and_then(|f| f.rows_typed(problem, rows.clone(), kernels));
            rows.zip(values.iter())
                .zip(extremes)
                .map(|((r, values), extremes)| {
                    let exp = expected.map(|e| e.slice((r - first) * d..(r - first + 1) * d));
                    let actual = &actual[r * d..(r + 1) * d];
                    judge_row(problem, &params, r, (values, &extremes), actual, label, exp)
                })
                .collect::<Vec<_>>()
        })
        .flatten_iter()
        .collect();
    if report.domain.is_everything() {
        absorb(report, label, outcomes, true);
        return Ok(());
    }
    let domain = report.domain;
    let (inside, outside): (Vec<_>, Vec<_>) = outcomes
        .into_iter()
        .enumerate()
        .partition(|(r, _)| domain.admits_row(problem, *r));
    let rows = |part: Vec<(usize, RowOutcome)>| part.into_iter().map(|(_, o)| o).collect();
    // A case counts where it has rows inside the domain, else outside (its rows on both
    // sides are tallied on their sides).
    let wholly_outside = inside.is_empty();
    if !inside.is_empty() {
        absorb(report, label, rows(inside), true);
    }
    if !outside.is_empty() {
        absorb(report.outside_mut(), label, rows(outside), wholly_outside);
    }
    Ok(())
}

/// What a thread reuses from block to block: the rows' values, the kernels' buffers and
/// outputs (fresh buffers of a block's size cost page faults and the allocator's trimming).
#[derive(Default)]
struct BlockScratch {
    values: Vec<Vec<f64>>,
    kernels: fast_reference::Scratch,
}

/// Adds a case's judged rows to a report: its family's tally, the totals, the first
/// failures, the worst case and, where kept, the case's own tally; `count_case` counts the
/// case in `cases`.
fn absorb(report: &mut Report, label: &ProblemLabel, outcomes: Vec<RowOutcome>, count_case: bool) {
    let mut case_tally = Tally::default();
    for o in &outcomes {
        case_tally.merge(&o.tally);
    }
    report
        .per_family
        .entry(label.family.clone())
        .or_default()
        .merge(&case_tally);
    if case_tally.max_ulp > report.worst_case_ulp || report.worst_case.is_none() {
        report.worst_case = label.case;
        report.worst_case_ulp = case_tally.max_ulp;
    }
    report.tally.merge(&case_tally);
    for o in outcomes {
        for f in o.failures {
            if report.failures.len() < FAILURES_LISTED {
                report.failures.push(f);
            }
        }
    }
    if let (Some(per_case), Some(case)) = (&mut report.per_case, label.case) {
        per_case.push(CaseTally {
            case,
            family: label.family.clone(),
            tally: case_tally,
        });
    }
    report.cases += usize::from(count_case);
}

/// Judges one problem's outputs on their own, into a fresh report for `kernel` (no seed, no
/// battery case; the rows are tallied under `family`).
pub fn judge_single(
    problem: &Problem,
    actual: &[u64],
    kernel: impl Into<String>,
    family: &str,
) -> Result<Report> {
    let mut report = Report::new(kernel, problem.op, problem.dtype, problem.convention, None);
    let label = ProblemLabel {
        case: None,
        family: family.into(),
    };
    judge_problem(problem, actual, &label, &mut report)?;
    Ok(report)
}

/// Runs a kernel over a battery and judges every case. `progress` shows a bar on stderr.
pub fn run_battery(
    kernel: &dyn Kernel,
    config: &BatteryConfig,
    only_case: Option<usize>,
    progress: bool,
) -> Result<Report> {
    if !kernel.supports(config.op, config.dtype) {
        return Err(Error::usage(format!(
            "kernel '{}' does not implement {} in {}",
            kernel.name(),
            config.op,
            config.dtype
        )));
    }
    let ids: Vec<usize> = match only_case {
        Some(id) => vec![id],
        None => (0..cases::battery::battery_len(config)).collect(),
    };
    let mut report = Report::new(
        kernel.name(),
        config.op,
        config.dtype,
        config.convention,
        Some(config.seed),
    )
    .within(config.domain);
    let bar = crate::output::progress::bar(ids.len() as u64, "cases", progress);
    let mut ids = ids.into_iter();
    // The cases in order, the filtered-out ones skipped.
    let mut next_case = || -> Result<Option<Case>> {
        for id in ids.by_ref() {
            bar.inc(1);
            match cases::case(config, id) {
                Some(case) => return Ok(Some(case)),
                None if only_case.is_some() => {
                    return Err(Error::usage(format!(
                        "the battery has no case {id} (or it is filtered out)"
                    )))
                }
                None => {}
            }
        }
        Ok(None)
    };
    let mut last = None;
    let mut pending = next_case()?;
    kernel.prepare(pending.as_ref().map(|c| &c.problem));
    while let Some(case) = pending.take() {
        let call = kernel.call(&case.problem);
        // The next case goes to the kernel before this one is judged: an isolated kernel
        // computes it meanwhile (and after the last, its worker's final wait overlaps too).
        pending = next_case()?;
        kernel.prepare(pending.as_ref().map(|c| &c.problem));
        judge_call(&case, call, &mut report)?;
        last = Some((case.id, case.family.name()));
    }
    // Writes after the last call returned are that case's.
    for finding in kernel.finish() {
        let (case, family) = last.map_or((None, "run"), |(c, f)| (Some(c), f));
        report.add_finding(case, family, finding);
    }
    bar.finish_and_clear();
    Ok(report)
}

/// Runs and judges one case: its outputs are judged whenever the kernel returned some, and
/// every finding of the call is recorded beside them.
pub fn judge_case(kernel: &dyn Kernel, case: &Case, report: &mut Report) -> Result<()> {
    judge_call(case, kernel.call(&case.problem), report)
}

/// Judges what a call of the kernel on `case` gave.
fn judge_call(case: &Case, call: Call, report: &mut Report) -> Result<()> {
    let label = ProblemLabel {
        case: Some(case.id),
        family: case.family.name().to_string(),
    };
    // Outputs are judged row by row against the domain; what else happened on a case with no
    // row inside it is information too.
    let report = if report.domain.admits_any_row(&case.problem) {
        report
    } else {
        report.outside_mut()
    };
    if call.not_run {
        report.not_run += 1;
        return Ok(());
    }
    for finding in call.findings {
        report.add_finding(label.case, &label.family, finding);
    }
    match call.outputs {
        Some(actual) if actual.len() == case.problem.x.len() => {
            judge_problem(&case.problem, &actual, &label, report)
        }
        Some(actual) => {
            let finding = Finding::new(
                FindingKind::WrongLength,
                format!(
                    "the kernel returned {} values, expected {}",
                    actual.len(),
                    case.problem.x.len()
                ),
            );
            report.add_finding(label.case, &label.family, finding);
            report.cases += 1;
            Ok(())
        }
        None => {
            report.cases += 1;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(op: Op, dtype: Dtype, x: &[f64], gamma: &[f64], beta: &[f64]) -> Problem {
        Problem::one_row(op, dtype, 0.0, x, Some(gamma), Some(beta))
    }

    /// ±∞ for a finite correctly rounded value passes only where the bound reaches the overflow
    /// threshold T on its side (a kernel within the bound may round to ∞ there), and is never
    /// faithful (it used to pass as faithful one step beyond MAX, whatever the bound).
    #[test]
    fn an_infinite_output_passes_only_where_the_bound_reaches_overflow() {
        // rms_norm f32, x = [1, −1] (s = 1), γ = 1, β = MAX: t₀ = MAX + 1 rounds to MAX, and
        // B ≥ 2u·MAX ≫ T − t₀ = 2^103.
        let p = problem(
            Op::RmsNorm,
            Dtype::F32,
            &[1.0, -1.0],
            &[1.0; 2],
            &[f32::MAX as f64; 2],
        );
        let mut y = crate::exact::reference(&p).unwrap().y;
        assert_eq!(Dtype::F32.to_f64(y[0]), f32::MAX as f64);
        y[0] = Dtype::F32.inf_bits();
        let t = judge_single(&p, &y, "inf", "extreme").unwrap().tally;
        assert_eq!((t.faithful, t.within_bound, t.failed), (0, 1, 0));
        // layer_norm f64, y₀ ≈ 6.3e299 with B ≈ 8e295: +∞ and −∞ are far outside.
        let x: Vec<f64> = [1.0, -1.0, 2.0, -2.0].iter().map(|v| 1e10 + v).collect();
        let p = problem(Op::LayerNorm, Dtype::F64, &x, &[1e300; 4], &[0.0; 4]);
        for inf in [f64::INFINITY, f64::NEG_INFINITY] {
            let mut y = crate::exact::reference(&p).unwrap().y;
            y[0] = inf.to_bits();
            let report = judge_single(&p, &y, "inf", "extreme").unwrap();
            assert_eq!(report.tally.failed, 1, "{}", report::text(&report));
        }
        // A finite ±MAX where ±∞ is correctly rounded stays faithful (round toward zero):
        // t₀ = MAX + 1.5·2^103 lies past f32's overflow threshold MAX + 2^103.
        let gamma = 1.5 * 2f64.powi(103);
        let p = problem(
            Op::RmsNorm,
            Dtype::F32,
            &[1.0, -1.0],
            &[gamma; 2],
            &[f32::MAX as f64; 2],
        );
        let mut y = crate::exact::reference(&p).unwrap().y;
        assert_eq!(y[0], Dtype::F32.inf_bits());
        y[0] = Dtype::F32.inf_bits() - 1;
        let report = judge_single(&p, &y, "max", "extreme").unwrap();
        assert_eq!((report.tally.faithful, report.tally.failed), (1, 0));
    }

    /// |γ_i|·κ_i past f64::MAX while the bound itself is finite: an earlier bound became ∞
    /// there and accepted any finite output. layer_norm f64, ε = 0, x = 1e10 + [1, −1, 2, −2]
    /// (κ ≈ 1.3e10), γ = 1e300, y₀ ≈ 6.3e299; the row's sums are exact, so B_0 is the
    /// shifted and Welford kernels' mean error over s: ≈ 1e-6·|y₀|.
    #[test]
    fn a_wrong_output_fails_where_gamma_times_kappa_overflows() {
        let x: Vec<f64> = [1.0, -1.0, 2.0, -2.0].iter().map(|v| 1e10 + v).collect();
        let p = problem(Op::LayerNorm, Dtype::F64, &x, &[1e300; 4], &[0.0; 4]);
        let reference = crate::exact::reference(&p).unwrap().y;
        let judge_first = |value: f64| {
            let mut y = reference.clone();
            y[0] = value.to_bits();
            judge_single(&p, &y, "overflow", "extreme").unwrap().tally
        };
        let y0 = f64::from_bits(reference[0]);
        // Within the bound, and outside it.
        assert_eq!(judge_first(y0 * (1.0 + 1e-8)).within_bound, 1);
        assert_eq!(judge_first(y0 * (1.0 + 1e-4)).failed, 1);
        assert_eq!(judge_first(-y0).failed, 1);
    }
}
