//! The judge's fast reference: for f32, f16 and bf16 with ε inside the square root, the
//! correctly rounded outputs come from normoracle's own kernels ([`crate::kernels`]), which
//! are correctly rounded by construction: their certainty test keeps a lane only where an
//! error bound proves its rounding, and sends every other lane to the exact reference
//! ([`crate::exact`]). The judge computes them a block of rows at a time and compares in the
//! same pass; an output equal to the kernels' bit for bit is correctly rounded.
//!
//! [`crate::exact::reference()`] stays the independent definition: `normoracle audit` checks
//! the two against each other bit for bit ([`disagreements`]) on the battery and on the
//! large bench input. The judge uses the kernels' values only on rows whose exact statistics
//! are finite and on the fast path ([`RowStats::fast`]); every other row, and every element
//! that differs from them, goes through the exact evaluation as before.

use crate::adapters::native::{self, RowBuffers};
use crate::dtype::Dtype;
use crate::error::Result;
use crate::exact::{reference::row_stats, RowKind, RowStats};
use crate::kernels::Options;
use crate::problem::{EpsConvention, Problem};
use half::{bf16, f16};
use normoracle_core::vector;

/// Rows per block: the kernels' outputs of a block stay in cache until they are compared.
pub const BLOCK_ROWS: usize = 8;

/// γ and β in the kernels' element type, converted once per problem.
enum Typed {
    F32(Option<Vec<f32>>, Option<Vec<f32>>),
    F16(Option<Vec<f16>>, Option<Vec<f16>>),
    Bf16(Option<Vec<bf16>>, Option<Vec<bf16>>),
}

/// The kernels as a reference for one problem.
pub struct FastReference {
    typed: Typed,
}

impl FastReference {
    /// `None` where the kernels do not apply (f64, ε outside the square root).
    pub fn new(problem: &Problem) -> Option<Self> {
        if problem.convention != EpsConvention::Inside {
            return None;
        }
        let g = problem.gamma.as_deref();
        let b = problem.beta.as_deref();
        let typed = match problem.dtype {
            Dtype::F32 => Typed::F32(g.map(native::typed), b.map(native::typed)),
            Dtype::F16 => Typed::F16(g.map(native::typed), b.map(native::typed)),
            Dtype::BF16 => Typed::Bf16(g.map(native::typed), b.map(native::typed)),
            Dtype::F64 => return None,
        };
        Some(FastReference { typed })
    }

    /// The kernels' outputs of rows `rows` in their own format, single-threaded (the judge
    /// runs blocks in parallel), in `scratch`'s buffers (reused); `None` if the kernels
    /// refuse the problem. (The judge compares with these: converting them to bits took a
    /// pass of its own.)
    pub fn rows_typed<'s>(
        &self,
        problem: &Problem,
        rows: std::ops::Range<usize>,
        scratch: &'s mut Scratch,
    ) -> Option<Expected<'s>> {
        let options = Self::options(&rows);
        match &self.typed {
            Typed::F32(g, b) => native::run_rows_typed(
                problem,
                g.as_deref(),
                b.as_deref(),
                rows,
                options,
                &mut scratch.f32,
            )
            .ok()
            .map(Expected::F32),
            Typed::F16(g, b) => native::run_rows_typed(
                problem,
                g.as_deref(),
                b.as_deref(),
                rows,
                options,
                &mut scratch.f16,
            )
            .ok()
            .map(Expected::F16),
            Typed::Bf16(g, b) => native::run_rows_typed(
                problem,
                g.as_deref(),
                b.as_deref(),
                rows,
                options,
                &mut scratch.bf16,
            )
            .ok()
            .map(Expected::Bf16),
        }
    }

    /// The kernels' options for a block: one task, no streaming stores.
    fn options(rows: &std::ops::Range<usize>) -> Options {
        Options {
            rows_per_task: Some(rows.len().max(1)),
            stream: Some(false),
            ..Options::default()
        }
    }

    /// [`Self::rows_typed`] as bits, into `out` (its old contents dropped); false if the
    /// kernels refuse the problem.
    pub fn rows_into(
        &self,
        problem: &Problem,
        rows: std::ops::Range<usize>,
        scratch: &mut Scratch,
        out: &mut Vec<u64>,
    ) -> bool {
        let Some(expected) = self.rows_typed(problem, rows, scratch) else {
            return false;
        };
        match expected {
            Expected::F32(e) => vector::map_into(e, out, |v| v.to_bits() as u64),
            Expected::F16(e) => vector::map_into(e, out, |v| v.to_bits() as u64),
            Expected::Bf16(e) => vector::map_into(e, out, |v| v.to_bits() as u64),
        }
        true
    }
}

/// The fast reference's outputs of some elements, in the kernels' format as they give them.
#[derive(Clone, Copy)]
pub enum Expected<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
    Bf16(&'a [bf16]),
}

impl<'a> Expected<'a> {
    /// Elements `range` of these.
    pub fn slice(self, range: std::ops::Range<usize>) -> Expected<'a> {
        match self {
            Expected::F32(e) => Expected::F32(&e[range]),
            Expected::F16(e) => Expected::F16(&e[range]),
            Expected::Bf16(e) => Expected::Bf16(&e[range]),
        }
    }
}

/// The kernels' buffers, one set per format, reused from block to block.
#[derive(Default)]
pub struct Scratch {
    f32: RowBuffers<f32>,
    f16: RowBuffers<f16>,
    bf16: RowBuffers<bf16>,
}

/// Whether the judge takes a row's reference values from the kernels.
pub fn row_applies(stats: &RowStats) -> bool {
    stats.kind == RowKind::Defined && stats.fast
}

/// One element where the fast reference and [`crate::exact::reference()`] differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    pub row: usize,
    pub col: usize,
    pub fast: u64,
    pub exact: u64,
}

/// Whether two outputs agree for the judge: the same bits, or both zero. The kernels may give
/// an exact zero as −0 where the reference's convention is +0; the judge's exact tier compares
/// values, so it does not tell them apart.
pub fn agree(dtype: Dtype, fast: u64, exact: u64) -> bool {
    fast == exact || (dtype.to_f64(fast) == 0.0 && dtype.to_f64(exact) == 0.0)
}

/// The elements of the rows the judge takes from the kernels ([`row_applies`]) where `fast`
/// (all of the problem's outputs, as the kernels give them) and the exact reference do not
/// [`agree`]; and how many elements were compared.
pub fn disagreements(problem: &Problem, fast: &[u64]) -> Result<(Vec<Disagreement>, usize)> {
    let exact = crate::exact::reference(problem)?.y;
    let d = problem.d;
    let mut out = Vec::new();
    let mut compared = 0;
    for r in 0..problem.rows {
        if !row_applies(&row_stats(problem, r)) {
            continue;
        }
        compared += d;
        for c in 0..d {
            let k = r * d + c;
            if !agree(problem.dtype, fast[k], exact[k]) {
                out.push(Disagreement {
                    row: r,
                    col: c,
                    fast: fast[k],
                    exact: exact[k],
                });
            }
        }
    }
    Ok((out, compared))
}

/// The kernels' outputs of the whole problem, as the judge computes them block by block.
pub fn whole(problem: &Problem) -> Option<Vec<u64>> {
    let reference = FastReference::new(problem)?;
    let mut y = Vec::with_capacity(problem.rows * problem.d);
    let (mut scratch, mut block) = (Scratch::default(), Vec::new());
    let mut first = 0;
    while first < problem.rows {
        let end = (first + BLOCK_ROWS).min(problem.rows);
        if !reference.rows_into(problem, first..end, &mut scratch, &mut block) {
            return None;
        }
        y.extend_from_slice(&block);
        first = end;
    }
    Some(y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{self, BatteryConfig};
    use crate::problem::Op;

    #[test]
    fn the_kernels_agree_with_the_exact_reference_and_a_wrong_bit_is_caught() {
        for dtype in [Dtype::F32, Dtype::F16, Dtype::BF16] {
            let mut battery = BatteryConfig::new(Op::LayerNorm, dtype, 3);
            battery.random_cases = 2;
            let mut compared = 0;
            for case in cases::battery(&battery)
                .into_iter()
                .filter(|c| c.problem.d <= 300 && c.problem.rows * c.problem.d <= 4096)
            {
                let fast = whole(&case.problem).expect("the kernels apply");
                let (bad, n) = disagreements(&case.problem, &fast).unwrap();
                assert!(bad.is_empty(), "{dtype} case {}: {bad:?}", case.id);
                compared += n;
                // One flipped bit in an element the judge would take from the kernels.
                if let Some(r) =
                    (0..case.problem.rows).find(|&r| row_applies(&row_stats(&case.problem, r)))
                {
                    let mut wrong = fast.clone();
                    wrong[r * case.problem.d] ^= 1;
                    let (bad, _) = disagreements(&case.problem, &wrong).unwrap();
                    assert_eq!(bad.len(), 1, "{dtype} case {}", case.id);
                    assert_eq!((bad[0].row, bad[0].col), (r, 0));
                    // ...and the judge, trusting it, would call the wrong bits exact: what
                    // the audit's comparison is there to rule out.
                    assert!(!agree(
                        dtype,
                        wrong[r * case.problem.d],
                        fast[r * case.problem.d]
                    ));
                }
            }
            assert!(
                compared > 1000,
                "{dtype}: only {compared} elements compared"
            );
        }
    }

    #[test]
    fn the_judge_gives_the_same_verdicts_with_and_without_it() {
        use crate::judge::{judge_problem_with, ProblemLabel, Report};
        for (op, dtype) in [
            (Op::LayerNorm, Dtype::F32),
            (Op::RmsNorm, Dtype::F16),
            (Op::LayerNorm, Dtype::BF16),
        ] {
            let mut battery = BatteryConfig::new(op, dtype, 5);
            battery.random_cases = 2;
            for case in cases::battery(&battery)
                .into_iter()
                .filter(|c| c.problem.d <= 300 && c.problem.rows * c.problem.d <= 2048)
            {
                let p = &case.problem;
                // The correctly rounded outputs, every third one step up, every seventh 3 up.
                let mut y = crate::exact::reference(p).unwrap().y;
                for (k, v) in y.iter_mut().enumerate() {
                    if dtype.is_nan(*v) || !dtype.to_f64(*v).is_finite() {
                        continue;
                    }
                    if k % 3 == 1 {
                        *v += 1;
                    } else if k % 7 == 2 {
                        *v += 3;
                    }
                }
                let judge = |fast: bool| {
                    let mut report = Report::new("test", op, dtype, p.convention, Some(5));
                    let label = ProblemLabel {
                        case: Some(case.id),
                        family: "f".into(),
                    };
                    judge_problem_with(p, &y, &label, &mut report, fast).unwrap();
                    report
                };
                let (a, b) = (judge(true), judge(false));
                let (ta, tb) = (&a.tally, &b.tally);
                assert_eq!(
                    (
                        ta.exact,
                        ta.faithful,
                        ta.within_bound,
                        ta.failed,
                        ta.max_ulp
                    ),
                    (
                        tb.exact,
                        tb.faithful,
                        tb.within_bound,
                        tb.failed,
                        tb.max_ulp
                    ),
                    "{op} {dtype} case {}",
                    case.id
                );
                assert_eq!(a.failures.len(), b.failures.len());
                // The statistics agree to the f64 approximation's accuracy.
                for (x, y) in [
                    (ta.max_rel_err, tb.max_rel_err),
                    (ta.max_row_nmse, tb.max_row_nmse),
                ] {
                    // Where t's f64 approximation is used it is accurate to 2^-42 of |t|.
                    assert!(
                        x == y || (x - y).abs() <= 5e-13 + 1e-9 * y.abs(),
                        "{op} {dtype} case {}: {x} vs {y}",
                        case.id
                    );
                }
            }
        }
    }

    #[test]
    fn f64_and_eps_outside_have_no_fast_reference() {
        let mut battery = BatteryConfig::new(Op::LayerNorm, Dtype::F64, 3);
        battery.random_cases = 0;
        let case = cases::battery(&battery).remove(0);
        assert!(FastReference::new(&case.problem).is_none());
        let mut battery = BatteryConfig::new(Op::RmsNorm, Dtype::F32, 3);
        battery.convention = EpsConvention::Outside;
        battery.random_cases = 0;
        let case = cases::battery(&battery).remove(0);
        assert!(FastReference::new(&case.problem).is_none());
    }
}
