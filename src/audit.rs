//! `normoracle audit`: everything built in, checked, with a verdict table — the reference
//! against its independent slow path, every builtin kernel over the battery, and the
//! theorem catalogue.

use crate::adapters;
use crate::artifacts::format::Table;
use crate::artifacts::progress;
use crate::cases::{self, BatteryConfig, Family};
use crate::exact::slow;
use crate::judge;
use crate::problem::{EpsConvention, Op};
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
    let worst = report
        .per_family
        .iter()
        .max_by_key(|(_, f)| (f.failed, f.max_ulp))
        .map(|(name, _)| name.clone())
        .unwrap_or_default();
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
    let kernels = adapters::builtin_names();
    let total = combos.len()
        + kernels.len() * Op::ALL.len() * Dtype::ALL.len()
        + crate::theorems_catalogue_len();
    let bar = progress::bar(total as u64, "checks", cfg.progress);
    for (op, dt, c) in combos {
        rows.push(self_check(op, dt, c, cfg)?);
        bar.inc(1);
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
    rows.extend(crate::theorem_rows(cfg.seed, &bar));
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
