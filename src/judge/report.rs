//! Rendering a report: text for people, JSON for machines.

use super::{Report, Tally};
use std::fmt::Write as _;

/// Lines of a kernel's own output shown under a finding (the end of it).
const OUTPUT_LINES: usize = 8;

fn tally_line(t: &Tally) -> String {
    format!(
        "{} judged: {} exact ({:.4}% correctly rounded), {} faithful ({:.4}% ≤ 1 ULP), {} within bound, {} FAIL ({}); {} undefined (not judged); max ULP {}, max rel err {:.3e}, max row NMSE {:.3e}, max bound use {:.3}",
        t.judged,
        t.exact,
        t.percent_correctly_rounded(),
        t.faithful,
        t.percent_faithful(),
        t.within_bound,
        t.failed,
        t.severities(),
        t.undefined,
        t.max_ulp,
        t.max_rel_err,
        t.max_row_nmse,
        t.max_bound_use
    )
}

/// The human-readable report.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    let verdict = if r.meets_standard() { "PASS" } else { "FAIL" };
    let seed = r.seed.map_or(String::new(), |s| format!(", seed {s}"));
    let _ = writeln!(
        out,
        "{verdict}: {} — {} {} (ε {}){seed}, {} cases{}",
        r.kernel,
        r.op,
        r.dtype,
        r.convention,
        r.cases,
        if r.standard == super::Standard::Bound {
            String::new()
        } else {
            format!(", required: {}", r.standard)
        }
    );
    let _ = writeln!(out, "  {}", tally_line(&r.tally));
    if r.per_family.len() > 1 {
        let _ = writeln!(out, "  per family:");
        for (family, t) in &r.per_family {
            let _ = writeln!(
                out,
                "    {family:<20} {:>8} judged {:>6} FAIL ({})  max ULP {:>10}  {:>9.4}% exact",
                t.judged,
                t.failed,
                t.severities(),
                t.max_ulp,
                t.percent_correctly_rounded()
            );
        }
    }
    for (k, e) in r
        .kernel_errors
        .iter()
        .enumerate()
        .take(super::FAILURES_LISTED)
    {
        let _ = writeln!(out, "  kernel error: {e}");
        let printed = r.findings.get(k).and_then(|f| f.finding.output.as_deref());
        let lines: Vec<&str> = printed.into_iter().flat_map(str::lines).collect();
        for line in &lines[lines.len().saturating_sub(OUTPUT_LINES)..] {
            let _ = writeln!(out, "    | {line}");
        }
    }
    if r.kernel_errors.len() > super::FAILURES_LISTED {
        let _ = writeln!(out, "  … {} kernel errors in all", r.kernel_errors.len());
    }
    if r.not_run > 0 {
        let _ = writeln!(
            out,
            "  not run: {} cases (the kernel was stopped after consecutive failures)",
            r.not_run
        );
    }
    if !r.failures.is_empty() {
        let _ = writeln!(out, "  first {} failures:", r.failures.len());
    }
    for f in &r.failures {
        let case = f.case.map_or(String::new(), |c| format!("case {c} "));
        let ulp = f.ulp.map_or("-".to_string(), |u| u.to_string());
        let _ = writeln!(
            out,
            "    {} {case}[{}] row {} col {} (d {}, ε {:e}): μ {:.6e} σ {:.6e} κ {:.3e}; x {:e} ({}) expected {:e} ({}) got {:e} ({}); exact {:.9e}; {ulp} ULP, rel err {:.3e}, bound {:.3e}",
            f.severity.name(),
            f.family, f.row, f.col, f.d, f.eps, f.mean, f.sigma, f.kappa, f.x, f.x_bits, f.expected, f.expected_bits, f.actual, f.actual_bits, f.exact, f.rel_err, f.bound
        );
    }
    if let Some(cmd) = &r.reproducer {
        // The first failure's class, after the command (a shell comment): what it will show.
        let class = r
            .failures
            .first()
            .map_or(String::new(), |f| format!("  # {}", f.severity.name()));
        let _ = writeln!(out, "  reproduce: {cmd}{class}");
    }
    out
}

/// The report as JSON (one object; `passed` says the verdict).
pub fn json(r: &Report) -> String {
    let mut v = serde_json::to_value(r).expect("reports serialize");
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("passed".into(), serde_json::Value::Bool(r.meets_standard()));
        m.insert("within_bound_everywhere".into(), r.passed().into());
        m.insert(
            "percent_correctly_rounded".into(),
            r.tally.percent_correctly_rounded().into(),
        );
        m.insert("percent_faithful".into(), r.tally.percent_faithful().into());
    }
    serde_json::to_string_pretty(&v).expect("json") + "\n"
}
