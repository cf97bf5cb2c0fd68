//! Rendering a report: text for people, JSON for machines.

use super::{Report, Tally};
use std::fmt::Write as _;

/// Lines of a kernel's own output shown under a finding (the end of it).
const OUTPUT_LINES: usize = 8;

fn tally_line(t: &Tally) -> String {
    format!(
        "{} judged: {} exact ({:.4}% correctly rounded), {} faithful ({:.4}% ≤ 1 ULP), {} within bound, {} FAIL ({}); {} undefined (not judged); max ULP {}, max rel err {:.3e}, max row NMSE {:.3e}, max bound use {:.3}{}",
        t.judged,
        t.exact,
        t.percent_correctly_rounded(),
        t.faithful,
        t.percent_faithful(),
        t.within_bound,
        t.failed,
        t.severities(),
        t.undefined,
        t.max_ulp_text(),
        t.max_rel_err,
        t.max_row_nmse,
        t.max_bound_use,
        if t.failed > 0 {
            format!("; {}", worst_error(t))
        } else {
            String::new()
        }
    )
}

/// "worst error 12.5 B, 0.031 of the output scale": a failure's size in units of the
/// tolerance and of |γ| + |β|, where ULPs near an exact zero say little.
fn worst_error(t: &Tally) -> String {
    format!(
        "worst error {:.3} B, {:.3e} of the output scale",
        t.max_bound_units, t.max_scale_units
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
    if !r.domain.is_everything() {
        let _ = writeln!(
            out,
            "  domain: {} (the verdict's; what lies outside is listed after)",
            r.domain
        );
    }
    let _ = writeln!(out, "  {}", tally_line(&r.tally));
    if r.per_family.len() > 1 {
        let _ = writeln!(out, "  per family:");
        family_lines(&mut out, r);
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
            "    {} {case}[{}] row {} col {} (d {}, ε {:e}): μ {:.6e} σ {:.6e} κ {:.3e}; x {:e} ({}) expected {:e} ({}) got {:e} ({}); exact {:.9e}; {ulp} ULP, rel err {:.3e}, bound {:.3e}, error {:.3} B = {:.3e} of the output scale",
            f.severity.name(),
            f.family, f.row, f.col, f.d, f.eps, f.mean, f.sigma, f.kappa, f.x, f.x_bits, f.expected, f.expected_bits, f.actual, f.actual_bits, f.exact, f.rel_err, f.bound, f.bound_units, f.scale_units
        );
    }
    if let Some(cases) = &r.per_case {
        let failing: Vec<usize> = cases
            .iter()
            .filter(|c| !r.standard.met_by_tally(&c.tally))
            .map(|c| c.case)
            .collect();
        if !failing.is_empty() {
            let _ = writeln!(
                out,
                "  failing cases: {} of {}: {}",
                failing.len(),
                cases.len(),
                id_ranges(&failing)
            );
        }
    }
    if let Some(cmd) = &r.reproducer {
        // The first failure's class, after the command (a shell comment): what it will show.
        let class = r
            .failures
            .first()
            .map_or(String::new(), |f| format!("  # {}", f.severity.name()));
        let _ = writeln!(out, "  reproduce: {cmd}{class}");
    }
    if let Some(outside) = &r.outside {
        outside_text(&mut out, outside);
    }
    out
}

/// A line per family: judged, FAIL by severity, worst errors, % exact.
fn family_lines(out: &mut String, r: &Report) {
    for (family, t) in &r.per_family {
        let _ = writeln!(
            out,
            "    {family:<20} {:>8} judged {:>6} FAIL ({})  max ULP {:>10}  worst {:>9.3} B {:>9.2e} scale  {:>9.4}% exact",
            t.judged,
            t.failed,
            t.severities(),
            t.max_ulp_text(),
            t.max_bound_units,
            t.max_scale_units,
            t.percent_correctly_rounded()
        );
    }
}

/// What was judged outside the declared domain: per family, as information.
fn outside_text(out: &mut String, outside: &Report) {
    let verdict = if outside.meets_standard() {
        "would pass"
    } else {
        "would FAIL"
    };
    let _ = writeln!(
        out,
        "  outside the domain (information, not in the verdict; {verdict}): {} elements, {} cases wholly outside",
        outside.tally.judged + outside.tally.undefined,
        outside.cases
    );
    let _ = writeln!(out, "    {}", tally_line(&outside.tally));
    family_lines(out, outside);
    for e in outside.kernel_errors.iter().take(super::FAILURES_LISTED) {
        let _ = writeln!(out, "    kernel error: {e}");
    }
    if outside.not_run > 0 {
        let _ = writeln!(out, "    not run: {} cases", outside.not_run);
    }
}

/// Ids as ranges: `0-3, 7, 9-12` (in the order given).
pub fn id_ranges(ids: &[usize]) -> String {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for &id in ids {
        match ranges.last_mut() {
            Some((_, last)) if last.checked_add(1) == Some(id) => *last = id,
            _ => ranges.push((id, id)),
        }
    }
    ranges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report as JSON (one object; `passed` says the verdict).
pub fn json(r: &Report) -> String {
    serde_json::to_string_pretty(&json_value(r)).expect("json") + "\n"
}

/// The report as a JSON value, verdicts added: the report's, each kept case's and the
/// outside part's (`passed`). Non-finite numbers (an ∞ error) become null, as JSON has none.
pub fn json_value(r: &Report) -> serde_json::Value {
    let mut v = serde_json::to_value(r).expect("reports serialize");
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("passed".into(), serde_json::Value::Bool(r.meets_standard()));
        m.insert("within_bound_everywhere".into(), r.passed().into());
        m.insert(
            "percent_correctly_rounded".into(),
            r.tally.percent_correctly_rounded().into(),
        );
        m.insert("percent_faithful".into(), r.tally.percent_faithful().into());
        if let (Some(cases), Some(serde_json::Value::Array(values))) =
            (&r.per_case, m.get_mut("per_case"))
        {
            for (c, value) in cases.iter().zip(values) {
                if let serde_json::Value::Object(case) = value {
                    case.insert("passed".into(), r.standard.met_by_tally(&c.tally).into());
                }
            }
        }
        if let Some(outside) = &r.outside {
            m.insert("outside_domain".into(), json_value(outside));
        }
    }
    v
}
