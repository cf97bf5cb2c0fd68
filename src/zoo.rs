//! The accuracy table of real norm kernels — the norm-kernel counterpart of the "Accuracy of
//! Mathematical Functions" tables for libm. Every available kernel (builtins, the C example
//! compiled with the system's `cc`, the Python drivers whose packages import) runs the battery;
//! each (kernel, op, dtype) gets its verdict, max ULP, % correctly rounded, % faithful, the worst
//! input family, the largest |μ|/σ at which it still passes, and a reproducer of its worst case.

use crate::adapters::{self, dylib::DylibKernel, Kernel};
use crate::artifacts::format::Table;
use crate::artifacts::progress;
use crate::cases::rng::Rng;
use crate::cases::BatteryConfig;
use crate::error::Result;
use crate::judge::{self, ProblemLabel, Report};
use crate::manifest;
use crate::problem::{Eps, EpsConvention, Op, Problem};
use crate::Dtype;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The narrow formats the zoo covers (the C ABI's).
pub const ZOO_DTYPES: [Dtype; 3] = [Dtype::F32, Dtype::F16, Dtype::BF16];

/// What the zoo runs.
#[derive(Debug, Clone)]
pub struct ZooConfig {
    pub seed: u64,
    pub random_cases: usize,
    /// Builtin kernels to include (names `fuzz --builtin` accepts).
    pub builtins: Vec<String>,
    /// Compile and include examples/c/normoracle_example.c (needs `cc`).
    pub c_example: Option<PathBuf>,
    /// Python drivers to try (script paths), each run when its imports succeed.
    pub python_drivers: Vec<(String, PathBuf, Vec<String>)>,
    pub progress: bool,
}

/// One line of the table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ZooRow {
    pub kernel: String,
    pub op: Op,
    pub dtype: Dtype,
    pub passed: bool,
    pub max_ulp: u64,
    pub percent_correctly_rounded: f64,
    pub percent_faithful: f64,
    pub worst_family: String,
    /// Largest |μ|/σ = 10^k (k = 0..8) at which the kernel still passes; None if it fails at 1.
    pub max_mean_ratio_passing: Option<f64>,
    pub reproducer: String,
}

/// The family with the most failures (then the largest ULP error); "-" for a flawless run.
pub fn worst_family(report: &Report) -> String {
    if report.passed() && report.tally.max_ulp == 0 {
        return "-".into();
    }
    report
        .per_family
        .iter()
        .max_by(|a, b| (a.1.failed, a.1.max_ulp).cmp(&(b.1.failed, b.1.max_ulp)))
        .map(|(f, _)| f.clone())
        .unwrap_or_default()
}

fn row_from_report(
    kernel: &str,
    report: &Report,
    ratio: Option<f64>,
    reproducer: String,
) -> ZooRow {
    let t = &report.tally;
    ZooRow {
        kernel: kernel.to_string(),
        op: report.op,
        dtype: report.dtype,
        passed: report.passed(),
        max_ulp: t.max_ulp,
        percent_correctly_rounded: t.percent_correctly_rounded(),
        percent_faithful: t.percent_faithful(),
        worst_family: worst_family(report),
        max_mean_ratio_passing: ratio,
        reproducer,
    }
}

/// Rows of N(μ, 1) with μ = ratio (rounded to the format), d = 256, 4 rows.
fn mean_offset_problem(op: Op, dtype: Dtype, ratio: f64, seed: u64) -> Problem {
    let mut rng = Rng::new(seed, ratio.to_bits());
    let (rows, d) = (4, 256);
    Problem {
        op,
        dtype,
        eps: Eps::from_f32(1e-5).expect("valid"),
        convention: EpsConvention::Inside,
        rows,
        d,
        x: (0..rows * d)
            .map(|_| dtype.round_f64(ratio + rng.normal()))
            .collect(),
        gamma: None,
        beta: None,
    }
}

/// The largest 10^k (k = 0..8, while representable) at which the kernel passes every row.
pub fn max_mean_ratio_passing(
    kernel: &dyn Kernel,
    op: Op,
    dtype: Dtype,
    seed: u64,
) -> Result<Option<f64>> {
    let mut best = None;
    for k in 0..=8 {
        let ratio = 10f64.powi(k);
        if ratio * 2.0 > dtype.max_finite() {
            break;
        }
        let p = mean_offset_problem(op, dtype, ratio, seed);
        let mut report = Report::new(kernel.name(), op, dtype, p.convention, Some(seed));
        let label = ProblemLabel {
            case: None,
            family: "mean-offset".into(),
        };
        match kernel.run(&p) {
            Ok(y) => judge::judge_problem(&p, &y, &label, &mut report)?,
            Err(_) => return Ok(best),
        }
        if !report.passed() {
            break;
        }
        best = Some(ratio);
    }
    Ok(best)
}

fn battery_rows(
    kernel: &dyn Kernel,
    name: &str,
    args: &str,
    cfg: &ZooConfig,
    bar: &indicatif::ProgressBar,
) -> Result<Vec<ZooRow>> {
    let mut rows = Vec::new();
    for op in Op::ALL {
        for dtype in ZOO_DTYPES {
            bar.inc(1);
            if !kernel.supports(op, dtype) {
                continue;
            }
            let mut config = BatteryConfig::new(op, dtype, cfg.seed);
            config.random_cases = cfg.random_cases;
            let report = judge::run_battery(kernel, &config, None, false)?;
            let case = report
                .first_failing_case()
                .or(report.worst_case)
                .unwrap_or(0);
            let reproducer = format!(
                "normoracle fuzz {args} --op {op} --dtype {dtype} --seed {} --cases {} --case {case}",
                cfg.seed, cfg.random_cases
            );
            let ratio = max_mean_ratio_passing(kernel, op, dtype, cfg.seed)?;
            rows.push(row_from_report(name, &report, ratio, reproducer));
        }
    }
    Ok(rows)
}

/// Compiles the C example into `dir`; None when no C compiler works.
fn compile_c_example(source: &Path, dir: &Path) -> Option<PathBuf> {
    let out = dir.join("libnormoracle_example.so");
    let ok = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(source)
        .arg("-lm")
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    ok.then_some(out)
}

/// Whether `python3 -c 'import MODULES'` succeeds.
pub fn python_imports(modules: &[&str]) -> bool {
    Command::new("python3")
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Runs the zoo.
pub fn run(cfg: &ZooConfig) -> Result<Vec<ZooRow>> {
    let mut rows = Vec::new();
    let per_kernel = (Op::ALL.len() * ZOO_DTYPES.len()) as u64;
    let kernels = cfg.builtins.len() as u64 + u64::from(cfg.c_example.is_some());
    let bar = progress::bar(
        per_kernel * kernels + cfg.python_drivers.len() as u64,
        "kernel runs",
        cfg.progress,
    );
    for name in &cfg.builtins {
        let kernel = adapters::builtin(name)?;
        rows.extend(battery_rows(
            kernel.as_ref(),
            name,
            &format!("--builtin {name}"),
            cfg,
            &bar,
        )?);
    }
    let tmp = tempdir()?;
    if let Some(source) = &cfg.c_example {
        if let Some(lib) = compile_c_example(source, &tmp) {
            for op in Op::ALL {
                for dtype in ZOO_DTYPES {
                    let kernel = DylibKernel::load(&lib, None, op, dtype)?;
                    let name = "c-example (double two-pass)";
                    let args = format!(
                        "--lib {}",
                        lib.file_name()
                            .map(|n| n.to_string_lossy())
                            .unwrap_or_default()
                    );
                    let one =
                        battery_rows(&kernel, name, &args, cfg, &progress::bar(0, "", false))?;
                    rows.extend(one.into_iter().filter(|r| r.op == op && r.dtype == dtype));
                    bar.inc(1);
                }
            }
        }
    }
    if !cfg.python_drivers.is_empty() {
        let dir = tmp.join("cases");
        manifest::write_cases(
            &dir,
            &Op::ALL,
            &ZOO_DTYPES,
            EpsConvention::Inside,
            cfg.seed,
            cfg.random_cases,
        )?;
        for (name, script, args) in &cfg.python_drivers {
            bar.inc(1);
            let status = Command::new("python3")
                .arg(script)
                .arg(&dir)
                .args(args)
                .output();
            if !matches!(&status, Ok(o) if o.status.success()) {
                continue; // its framework is not installed here
            }
            let (reports, _missing) = manifest::judge_dir(&dir, name)?;
            for report in reports {
                let case = report
                    .first_failing_case()
                    .or(report.worst_case)
                    .unwrap_or(0);
                let reproducer = format!(
                    "normoracle cases --out DIR --seed {} --cases {} && python3 {} DIR {} && normoracle check DIR  # case {case}",
                    cfg.seed,
                    cfg.random_cases,
                    script.display(),
                    args.join(" ")
                );
                rows.push(row_from_report(name, &report, None, reproducer));
            }
        }
    }
    bar.finish_and_clear();
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(rows)
}

fn tempdir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("normoracle-zoo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The accuracy table (CSV columns start kernel,op,dtype,verdict).
pub fn table(rows: &[ZooRow], cfg: &ZooConfig) -> Table {
    let mut t = Table::new([
        "kernel",
        "op",
        "dtype",
        "verdict",
        "max_ulp",
        "pct_correctly_rounded",
        "pct_faithful",
        "worst_family",
        "max_mean_ratio_passing",
        "reproducer",
    ]);
    t.comment(format!("normoracle {} accuracy table, seed {}, battery of 198 systematic + {} random cases per (op, dtype)", env!("CARGO_PKG_VERSION"), cfg.seed, cfg.random_cases));
    t.comment("max_mean_ratio_passing: largest |mu|/sigma = 10^k (N(mu,1) rows, d = 256) the kernel still passes");
    for r in rows {
        t.push([
            r.kernel.clone(),
            r.op.name().to_string(),
            r.dtype.name().to_string(),
            if r.passed {
                "pass".into()
            } else {
                "FAIL".into()
            },
            r.max_ulp.to_string(),
            format!("{:.4}", r.percent_correctly_rounded),
            format!("{:.4}", r.percent_faithful),
            r.worst_family.clone(),
            r.max_mean_ratio_passing
                .map_or("-".into(), |v| format!("{v:e}")),
            r.reproducer.clone(),
        ]);
    }
    t
}
