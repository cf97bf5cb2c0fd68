//! `normoracle audit`: everything built in, checked, with a verdict table — the reference
//! against its independent slow path, every builtin kernel over the battery, and the
//! theorem catalogue.

use crate::adapters;
use crate::cases::{self, BatteryConfig, Family};
use crate::exact::slow;
use crate::judge;
use crate::output::format::Table;
use crate::output::progress;
use crate::problem::{EpsConvention, Op};
use crate::theorems::float_corollaries::{check_problem_output, ErrorModel};
use crate::theorems::Budget;
use crate::{Dtype, Result};
use std::time::Instant;

/// How much the audit runs.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    pub seed: u64,
    /// Random battery cases per builtin kernel run.
    pub kernel_cases: usize,
    /// Widest row the reference self-check cross-checks with the slow path.
    pub self_check_max_d: usize,
    pub progress: bool,
}

/// One line of the verdict table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AuditRow {
    pub section: String,
    pub subject: String,
    pub checked: String,
    pub passed: bool,
    pub detail: String,
    pub seconds: f64,
}

/// The reference against the slow path on the battery's narrow cases, for one combination.
fn self_check(
    op: Op,
    dtype: Dtype,
    convention: EpsConvention,
    cfg: &AuditConfig,
) -> Result<AuditRow> {
    let start = Instant::now();
    let mut battery = BatteryConfig::new(op, dtype, cfg.seed);
    battery.convention = convention;
    battery.random_cases = 0;
    let mut elements = 0usize;
    let mut bad = Vec::new();
    for case in cases::battery(&battery)
        .into_iter()
        .filter(|c| c.problem.d <= cfg.self_check_max_d)
    {
        elements += case.problem.x.len();
        for (k, got, want) in slow::disagreements(&case.problem)? {
            bad.push(format!(
                "case {} element {k}: reference {got:e}, slow path {want:e}",
                case.id
            ));
        }
    }
    Ok(AuditRow {
        section: "reference".into(),
        subject: format!("{op} {dtype} ε-{convention}"),
        checked: format!("{elements} elements vs slow path"),
        passed: bad.is_empty(),
        detail: bad
            .first()
            .cloned()
            .unwrap_or_else(|| "all agree bit for bit".into()),
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// A builtin kernel over the battery.
fn kernel_check(name: &str, op: Op, dtype: Dtype, cfg: &AuditConfig) -> Result<Option<AuditRow>> {
    let kernel = adapters::builtin(name)?;
    if !kernel.supports(op, dtype) {
        return Ok(None);
    }
    let start = Instant::now();
    let mut battery = BatteryConfig::new(op, dtype, cfg.seed);
    battery.random_cases = cfg.kernel_cases;
    let report = judge::run_battery(kernel.as_ref(), &battery, None, false)?;
    let t = &report.tally;
    let worst = crate::zoo::worst_family(&report);
    Ok(Some(AuditRow {
        section: "kernel".into(),
        subject: format!("{name} {op} {dtype}"),
        checked: format!("{} cases, {} elements", report.cases, t.judged),
        passed: report.passed(),
        detail: format!(
            "{:.4}% correctly rounded, {:.4}% faithful, max ULP {}, {} FAIL, worst family {worst}",
            t.percent_correctly_rounded(),
            t.percent_faithful(),
            t.max_ulp,
            t.failed
        ),
        seconds: start.elapsed().as_secs_f64(),
    }))
}

/// The judge's fast reference (the kernels, [`judge::fast_reference`]) against the exact
/// reference, bit for bit, on the battery of one op and format (with the kernels' random
/// cases) and, once per format, on the large bench input (`bench-oracle`'s 4096 × 4096).
fn fast_reference_check(op: Op, dtype: Dtype, cfg: &AuditConfig) -> Result<AuditRow> {
    let start = Instant::now();
    let mut battery = BatteryConfig::new(op, dtype, cfg.seed);
    battery.random_cases = cfg.kernel_cases;
    let mut problems: Vec<(String, crate::problem::Problem)> = cases::battery(&battery)
        .into_iter()
        .map(|c| (format!("case {}", c.id), c.problem))
        .collect();
    if op == Op::LayerNorm {
        problems.push((
            "the bench input".into(),
            judge::bench::gaussian_problem(4096, 4096, 1, dtype),
        ));
    }
    let mut compared = 0;
    let mut first_bad = None;
    for (name, problem) in &problems {
        let Some(fast) = judge::fast_reference::whole(problem) else {
            continue;
        };
        let (bad, n) = judge::fast_reference::disagreements(problem, &fast)?;
        compared += n;
        if let Some(b) = bad.first() {
            first_bad.get_or_insert(format!(
                "{name} row {} col {}: kernels {}, exact {} ({} elements differ)",
                b.row,
                b.col,
                dtype.hex(b.fast),
                dtype.hex(b.exact),
                bad.len()
            ));
        }
    }
    Ok(AuditRow {
        section: "fast reference".into(),
        subject: format!("{op} {dtype} ε-inside"),
        checked: format!("{compared} elements: kernels vs exact reference"),
        passed: first_bad.is_none(),
        detail: first_bad.unwrap_or_else(|| "all agree bit for bit".into()),
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// What the float corollaries are checked on: the reference (correctly rounded) and every
/// builtin kernel that promises to be within one ULP.
fn corollary_subjects() -> Vec<(&'static str, u32)> {
    let mut v = vec![("reference", 0)];
    v.extend(
        adapters::OWN_BUILTINS
            .into_iter()
            .filter(|n| n.starts_with("native"))
            .map(|n| (n, 1)),
    );
    v
}

/// The float corollaries (|mean(y)| and |‖y‖² − ‖z‖²| bounds, `theorems::float_corollaries`)
/// on a subject's outputs for the battery's cases without γ/β.
fn corollary_check(name: &str, ulps: u32, cfg: &AuditConfig) -> Result<AuditRow> {
    let start = Instant::now();
    let mut outputs = 0usize;
    let mut first_bad = None;
    for op in Op::ALL {
        for dtype in Dtype::ALL {
            let kernel = if name == "reference" {
                None
            } else {
                Some(adapters::builtin(name)?)
            };
            if kernel.as_ref().is_some_and(|k| !k.supports(op, dtype)) {
                continue;
            }
            let mut battery = BatteryConfig::new(op, dtype, cfg.seed);
            battery.random_cases = 0;
            let model = if ulps == 0 {
                ErrorModel::correctly_rounded(dtype)
            } else {
                ErrorModel::within_ulps(dtype, ulps)
            };
            for case in cases::battery(&battery).into_iter().filter(|c| {
                c.problem.gamma.is_none() && c.problem.beta.is_none() && c.problem.d <= 1025
            }) {
                let y = match &kernel {
                    None => crate::exact::reference(&case.problem)?.y,
                    Some(k) => match k.run(&case.problem) {
                        Ok(y) => y,
                        Err(e) => return Err(crate::Error::input(format!("{name}: {e}"))),
                    },
                };
                outputs += case.problem.rows;
                if let Some(bad) = check_problem_output(&case.problem, &y, &model)? {
                    first_bad.get_or_insert(format!("{op} {dtype} case {}: {bad}", case.id));
                }
            }
        }
    }
    Ok(AuditRow {
        section: "corollary".into(),
        subject: format!("{name} (within {ulps} ULP)"),
        checked: format!("{outputs} output rows: |mean(y)|, |‖y‖²−‖z‖²|"),
        passed: first_bad.is_none(),
        detail: first_bad.unwrap_or_else(|| "bounds hold exactly".into()),
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Runs the whole audit.
pub fn run(cfg: &AuditConfig) -> Result<Vec<AuditRow>> {
    let mut rows = Vec::new();
    let mut combos = Vec::new();
    for op in Op::ALL {
        for dt in Dtype::ALL {
            for c in [EpsConvention::Inside, EpsConvention::Outside] {
                combos.push((op, dt, c));
            }
        }
    }
    // Our own kernels: the audit is of normoracle; third-party kernels are in `zoo`.
    let kernels = adapters::OWN_BUILTINS;
    let theorems = crate::theorems::catalogue();
    let corollary_kernels = corollary_subjects();
    let fast_formats = [Dtype::F32, Dtype::F16, Dtype::BF16];
    let total = combos.len()
        + Op::ALL.len() * fast_formats.len()
        + kernels.len() * Op::ALL.len() * Dtype::ALL.len()
        + theorems.len()
        + corollary_kernels.len();
    let bar = progress::bar(total as u64, "checks", cfg.progress);
    for (op, dt, c) in combos {
        rows.push(self_check(op, dt, c, cfg)?);
        bar.inc(1);
    }
    for op in Op::ALL {
        for dt in fast_formats {
            rows.push(fast_reference_check(op, dt, cfg)?);
            bar.inc(1);
        }
    }
    for name in kernels {
        for op in Op::ALL {
            for dt in Dtype::ALL {
                if let Some(row) = kernel_check(name, op, dt, cfg)? {
                    rows.push(row);
                }
                bar.inc(1);
            }
        }
    }
    let budget = Budget {
        cases: crate::theorems::DEFAULT_CASES,
        seed: cfg.seed,
    };
    for run in crate::theorems::run(&theorems, budget, |_| bar.inc(1)) {
        rows.push(AuditRow {
            section: "theorem".into(),
            subject: run.entry.id.into(),
            checked: format!("{} cases, exact arithmetic", run.report.cases),
            passed: run.report.verified(),
            detail: run.verdict(),
            seconds: run.seconds,
        });
    }
    for (name, ulps) in corollary_kernels {
        rows.push(corollary_check(name, ulps, cfg)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(rows)
}

/// The verdict table.
pub fn table(rows: &[AuditRow], cfg: &AuditConfig) -> Table {
    let mut t = Table::new([
        "section", "subject", "checked", "verdict", "detail", "seconds",
    ]);
    t.comment(format!(
        "normoracle {} audit, seed {}",
        env!("CARGO_PKG_VERSION"),
        cfg.seed
    ));
    t.comment(format!(
        "reference self-check: battery cases with d ≤ {} against the slow path; kernels: battery with {} random cases; families: {}",
        cfg.self_check_max_d,
        cfg.kernel_cases,
        Family::ALL.map(|f| f.name()).join(", ")
    ));
    for r in rows {
        t.push([
            r.section.clone(),
            r.subject.clone(),
            r.checked.clone(),
            if r.passed {
                "PASS".into()
            } else {
                "FAIL".into()
            },
            r.detail.clone(),
            format!("{:.2}", r.seconds),
        ]);
    }
    t
}
