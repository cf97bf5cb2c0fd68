//! The properties the fuzz targets assert. Each returns a [`Finding`] (a description to print)
//! instead of panicking, so `cargo test` can replay inputs through the same code; the fuzz
//! targets panic with it.

use super::input;
use crate::adapters::Kernel;
use crate::dtype::Dtype;
use crate::exact::{self, RowKind};
use crate::judge::{self, report, ProblemLabel, Report, FAILURES_LISTED};
use crate::npy;
use crate::problem::{EpsConvention, Op, Problem};
use std::fmt;

/// A property that failed: what went wrong, with the input spelled out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding(pub String);

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn finding(what: impl Into<String>, problem: &Problem) -> Finding {
    Finding(format!("{}\n{}", what.into(), describe(problem)))
}

/// A problem in full, as the bits of its values (for reports of findings).
pub fn describe(p: &Problem) -> String {
    let hex = |v: &[u64]| {
        v.iter()
            .map(|&b| p.dtype.hex(b))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = format!(
        "problem: {} {} ε {} {}, {} rows × d {}\n",
        p.op,
        p.dtype,
        p.eps.describe(),
        p.convention,
        p.rows,
        p.d
    );
    for r in 0..p.rows {
        out += &format!("  x[{r}] = {}\n", hex(p.row(r)));
    }
    if let Some(g) = &p.gamma {
        out += &format!("  γ = {}\n", hex(g));
    }
    if let Some(b) = &p.beta {
        out += &format!("  β = {}\n", hex(b));
    }
    out
}

/// Whether a problem uses what the C ABI leaves out, which a kernel may refuse (with an
/// error, never a wrong answer): ε outside the root, and β for RMSNorm.
pub fn beyond_common_contract(problem: &Problem) -> bool {
    problem.convention == EpsConvention::Outside
        || (problem.op == Op::RmsNorm && problem.beta.is_some())
}

/// A kernel passes the judge on a problem: it computes outputs (no error, the right count)
/// and no element fails. Problems the kernel does not implement (its op and dtype, or
/// `beyond_common_contract` when it refuses them) pass vacuously.
pub fn kernel_passes(kernel: &dyn Kernel, problem: &Problem) -> Result<(), Finding> {
    if !kernel.supports(problem.op, problem.dtype) {
        return Ok(());
    }
    let actual = match kernel.run(problem) {
        Ok(actual) => actual,
        Err(_) if beyond_common_contract(problem) => return Ok(()),
        Err(e) => {
            return Err(finding(
                format!("{} refused a valid problem: {e}", kernel.name()),
                problem,
            ))
        }
    };
    let report = judge::judge_single(problem, &actual, kernel.name(), "fuzz").map_err(|e| {
        finding(
            format!("the judge rejected {}'s outputs: {e}", kernel.name()),
            problem,
        )
    })?;
    if report.passed() {
        Ok(())
    } else {
        Err(finding(
            format!("{} FAILS:\n{}", kernel.name(), report::text(&report)),
            problem,
        ))
    }
}

/// The reference agrees bit for bit with its independent slow path.
pub fn reference_matches_slow_path(problem: &Problem) -> Result<(), Finding> {
    let bad = exact::slow::disagreements(problem).map_err(|e| {
        finding(
            format!("the reference rejected a valid problem: {e}"),
            problem,
        )
    })?;
    if bad.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = bad
        .iter()
        .take(10)
        .map(|(k, fast, slow)| format!("  element {k}: reference {fast:e}, slow path {slow:e}"))
        .collect();
    Err(finding(
        format!(
            "the reference and the slow path disagree on {} elements:\n{}",
            bad.len(),
            listed.join("\n")
        ),
        problem,
    ))
}

/// The judge on arbitrary outputs. Input: problem bytes (dtype from the flags, parameters
/// possibly non-finite), a mode byte (bit 0: drop the last output), then outputs; outputs
/// the bytes do not cover are the reference's. The judge must accept exactly the valid
/// problems with the right number of outputs, never panic, render its report, and keep its
/// books: elements equal to the correctly rounded value never fail, NaN on a defined row
/// always does, and the tallies add up.
pub fn judge_is_consistent(bytes: &[u8]) -> Result<(), Finding> {
    let (problem, rest) = input::decode_problem(bytes, None, true);
    let mode = rest.first().copied().unwrap_or(0);
    let given = rest.get(1..).unwrap_or(&[]);
    let n = problem.rows * problem.d;
    let dtype = problem.dtype;
    let reference = problem
        .validate()
        .ok()
        .map(|()| exact::reference(&problem))
        .transpose()
        .map_err(|e| {
            finding(
                format!("the reference rejected a valid problem: {e}"),
                &problem,
            )
        })?;
    let mut actual: Vec<u64> = (0..n)
        .map(|k| {
            input::value_at(dtype, given, k)
                .or_else(|| reference.as_ref().map(|r| r.y[k]))
                .unwrap_or(0)
        })
        .collect();
    let drop_one = mode & 1 != 0;
    if drop_one {
        actual.pop();
    }
    let mut report = Report::new("fuzz", problem.op, dtype, problem.convention, None);
    let label = ProblemLabel {
        case: None,
        family: "fuzz".into(),
    };
    let verdict = judge::judge_problem(&problem, &actual, &label, &mut report);
    // Rendering never panics, whatever the report holds.
    let _ = (report::text(&report), report::json(&report));
    let reference = match (reference, drop_one, verdict) {
        (Some(reference), false, Ok(())) => reference,
        (None, _, Err(e)) | (Some(_), true, Err(e)) => {
            return one_line(&e.to_string(), &problem);
        }
        (_, _, Ok(())) => {
            return Err(finding(
                "the judge accepted an invalid problem or a wrong number of outputs",
                &problem,
            ))
        }
        (Some(_), false, Err(e)) => {
            return Err(finding(
                format!("the judge rejected a valid problem: {e}"),
                &problem,
            ))
        }
    };
    let t = &report.tally;
    let differing = (0..n).filter(|&k| actual[k] != reference.y[k]).count() as u64;
    let nan_on_defined_rows = (0..n)
        .filter(|&k| reference.stats[k / problem.d].kind == RowKind::Defined)
        .filter(|&k| dtype.is_nan(actual[k]))
        .count() as u64;
    let books = [
        (
            t.judged + t.undefined == n as u64,
            "judged + undefined ≠ rows × d",
        ),
        (
            t.exact + t.faithful + t.within_bound + t.failed == t.judged,
            "the tiers do not add up to the elements judged",
        ),
        (
            report.failures.len() as u64 == t.failed.min(FAILURES_LISTED as u64),
            "the failures listed do not match the failure count",
        ),
        (
            t.failed <= differing,
            "an output equal to the correctly rounded value was judged FAIL",
        ),
        (
            t.failed >= nan_on_defined_rows,
            "a NaN output on a defined row was not judged FAIL",
        ),
        (
            differing > 0 || (report.passed() && t.exact == t.judged),
            "the correctly rounded outputs themselves did not pass as exact",
        ),
        (report.cases == 1, "one problem judged, but cases ≠ 1"),
    ];
    for (holds, what) in books {
        if !holds {
            return Err(finding(
                format!("{what}\n{}", report::text(&report)),
                &problem,
            ));
        }
    }
    Ok(())
}

fn one_line(message: &str, problem: &Problem) -> Result<(), Finding> {
    if message.contains('\n') || message.is_empty() {
        Err(finding(
            format!("error message is not one line: {message:?}"),
            problem,
        ))
    } else {
        Ok(())
    }
}

/// `.npy` parsing of arbitrary bytes: an error or an array that is consistent (its shape
/// holds its data), serializes and parses back bit for bit, and converts to and from every
/// dtype's bits without loss.
pub fn npy_is_consistent(bytes: &[u8]) -> Result<(), Finding> {
    let fail = |what: String| Err(Finding(format!("{what}\ninput: {bytes:02x?}")));
    let array = match npy::parse(bytes) {
        Ok(a) => a,
        Err(e) => {
            let m = e.to_string();
            return if m.contains('\n') {
                fail(format!("error message is not one line: {m:?}"))
            } else {
                Ok(())
            };
        }
    };
    let count = array
        .shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n));
    if count != Some(array.data.len()) {
        return fail(format!(
            "shape {:?} but {} elements",
            array.shape,
            array.data.len()
        ));
    }
    if let Ok((rows, width)) = array.rows_and_width() {
        if rows.checked_mul(width) != Some(array.data.len()) {
            return fail(format!(
                "rows × width = {rows} × {width} but {} elements",
                array.data.len()
            ));
        }
    }
    if array.to_f64().len() != array.data.len() {
        return fail("to_f64 changed the element count".into());
    }
    let written = npy::to_bytes(&array);
    match npy::parse(&written) {
        Ok(back) if npy::to_bytes(&back) == written && back.shape == array.shape => {}
        Ok(_) => return fail("to_bytes then parse changed the array".into()),
        Err(e) => return fail(format!("to_bytes wrote a file parse rejects: {e}")),
    }
    for dtype in Dtype::ALL {
        if let Ok(bits) = npy::bits_of(&array, dtype, "x") {
            match npy::from_bits(array.shape.clone(), dtype, &bits) {
                Ok(again) if npy::to_bytes(&again) == written => {}
                _ => return fail(format!("bits_of/from_bits as {dtype} changed the array")),
            }
        }
    }
    Ok(())
}
