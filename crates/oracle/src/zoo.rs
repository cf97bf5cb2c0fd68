//! The accuracy table of real norm kernels — the norm-kernel counterpart of the "Accuracy of
//! Mathematical Functions" tables for libm. Every available kernel (builtins, the C example
//! compiled with the system's `cc`, the Python drivers whose packages import) runs the battery;
//! each (kernel, op, dtype) gets its verdict, max ULP, % correctly rounded, % faithful, the worst
//! input family, the largest |μ|/σ at which it still passes, the classic bugs it shows on their
//! minimal reproducers, and a reproducer of its worst case. Every kernel answers the same
//! problems: in process, through the C ABI, or through a Python driver over .npy files.

use crate::adapters::{self, dylib::DylibKernel, Kernel};
use crate::cases::{probes, BatteryConfig};
use crate::domain::Domain;
use crate::error::Result;
use crate::judge::{self, Report, Standard};
use crate::manifest::{self, CasesSpec, DirSelection, DiskCase};
use crate::output::format::Table;
use crate::output::progress;
use crate::problem::{EpsConvention, Op, Problem};
use crate::Dtype;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The formats the zoo covers by default (the C ABI's).
pub const ZOO_DTYPES: [Dtype; 3] = [Dtype::F32, Dtype::F16, Dtype::BF16];

/// What the zoo runs.
#[derive(Debug, Clone)]
pub struct ZooConfig {
    pub seed: u64,
    /// The ops and dtypes to cover (every one, and [`ZOO_DTYPES`], by default).
    pub ops: Vec<Op>,
    pub dtypes: Vec<Dtype>,
    pub random_cases: usize,
    /// Builtin kernels to include (names `fuzz --builtin` accepts).
    pub builtins: Vec<String>,
    /// Compile and include examples/c/normoracle_example.c (needs `cc`).
    pub c_example: Option<PathBuf>,
    /// Shared libraries behind the C ABI, each with its row label (`zoo --lib LABEL=PATH`,
    /// e.g. ggml's norms through scripts/ggml_shim.sh). An (op, dtype) whose symbol the
    /// library lacks reads "unsupported".
    pub c_libs: Vec<(String, PathBuf)>,
    /// Python drivers to try (script paths), each run when its imports succeed.
    pub python_drivers: Vec<PythonDriver>,
    pub progress: bool,
    /// The standard of the verdicts (`--require`; the bound by default).
    pub standard: Standard,
    /// The domain of the second reading (`verdict_in_domain`): each kernel is read on the
    /// whole battery and on it.
    pub domain: Domain,
}

/// Where a kernel stands for one (op, dtype).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ZooVerdict {
    Pass,
    Fail,
    /// The kernel has no such op or dtype (a driver wrote no output for any of its cases).
    Unsupported,
}

impl ZooVerdict {
    pub fn name(self) -> &'static str {
        match self {
            ZooVerdict::Pass => "pass",
            ZooVerdict::Fail => "FAIL",
            ZooVerdict::Unsupported => "unsupported",
        }
    }
}

/// One line of the table.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ZooRow {
    pub kernel: String,
    pub op: Op,
    pub dtype: Dtype,
    /// On the whole battery.
    pub verdict: ZooVerdict,
    /// On the rows of the declared domain (`ZooConfig::domain`) only.
    pub verdict_in_domain: ZooVerdict,
    pub max_ulp: u64,
    pub percent_correctly_rounded: f64,
    pub percent_faithful: f64,
    pub worst_family: String,
    /// The failed elements by severity ("a off-model, b inaccurate, c wrong"; "-" for a pass).
    pub severities: String,
    /// Largest |μ|/σ = 10^k (k = 0..8, while the format holds it) at which the kernel passes
    /// every smaller ratio too; None if it fails already at 1 (or is unsupported).
    pub max_mean_ratio_passing: Option<f64>,
    /// The classic bugs it shows on their minimal reproducers (`cases::probes`), each with
    /// what the kernel gave.
    pub findings: Vec<String>,
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

/// The case a row's reproducer reruns: the first failing one on the whole battery, else the
/// one farthest from the correctly rounded outputs.
fn worst_case(report: &Report) -> usize {
    let whole = report.whole();
    whole.first_failing_case().or(whole.worst_case).unwrap_or(0)
}

/// A targeted problem every kernel answers next to the battery.
#[derive(Debug, Clone)]
struct Extra {
    problem: Problem,
    kind: ExtraKind,
}

#[derive(Debug, Clone)]
enum ExtraKind {
    /// A row of the mean-offset sweep, at this |μ|/σ.
    MeanOffset(f64),
    Probe {
        name: &'static str,
        bug: &'static str,
    },
}

/// The sweep and the probes of every (op, dtype) of the zoo, in a fixed order.
fn extras(cfg: &ZooConfig) -> Vec<Extra> {
    let mut out = Vec::new();
    for &op in &cfg.ops {
        for &dtype in &cfg.dtypes {
            for (ratio, problem) in probes::mean_offset_sweep(op, dtype, cfg.seed) {
                out.push(Extra {
                    problem,
                    kind: ExtraKind::MeanOffset(ratio),
                });
            }
            for p in probes::probes(op, dtype) {
                out.push(Extra {
                    problem: p.problem,
                    kind: ExtraKind::Probe {
                        name: p.name,
                        bug: p.bug,
                    },
                });
            }
        }
    }
    out
}

/// What a kernel's outputs for the extras of (op, dtype) say: the largest mean ratio it
/// passes (and every smaller one), and the findings of the probes it fails. `outputs[i]` is
/// the kernel's answer to `extras[i]` (None: it gave none).
fn read_extras(
    extras: &[Extra],
    outputs: &[Option<Vec<u64>>],
    op: Op,
    dtype: Dtype,
) -> Result<(Option<f64>, Vec<String>)> {
    let mut ratio_reached = None;
    let mut sweep_broken = false;
    let mut findings = Vec::new();
    for (extra, output) in extras.iter().zip(outputs) {
        let p = &extra.problem;
        if p.op != op || p.dtype != dtype {
            continue;
        }
        let report = match output {
            Some(y) => Some(judge::judge_single(p, y, "zoo", "extra")?),
            None => None,
        };
        let passed = report.as_ref().is_some_and(Report::passed);
        match extra.kind {
            ExtraKind::MeanOffset(ratio) => {
                sweep_broken |= !passed;
                if !sweep_broken {
                    ratio_reached = Some(ratio);
                }
            }
            ExtraKind::Probe { bug, .. } if !passed => {
                let symptom = report.as_ref().map_or("no output".into(), symptom);
                findings.push(format!("{bug}: {symptom}"));
            }
            ExtraKind::Probe { .. } => {}
        }
    }
    Ok((ratio_reached, findings))
}

/// How a failed probe's outputs went wrong, in a few words: its first wrong element.
fn symptom(report: &Report) -> String {
    match report.failures.first() {
        Some(f) => format!("gives {} for {}", f.actual, f.expected),
        None => "the kernel failed".into(),
    }
}

/// A row from a report whose verdict is decided on the zoo's domain (the rows outside it in
/// `outside`): the numbers are the whole battery's.
fn row_from_report(
    kernel: &str,
    in_domain: &Report,
    (ratio, findings): (Option<f64>, Vec<String>),
    reproducer: String,
) -> ZooRow {
    let verdict = |passed: bool| {
        if passed {
            ZooVerdict::Pass
        } else {
            ZooVerdict::Fail
        }
    };
    let report = &in_domain.whole();
    let t = &report.tally;
    ZooRow {
        kernel: kernel.to_string(),
        op: report.op,
        dtype: report.dtype,
        verdict: verdict(report.meets_standard()),
        verdict_in_domain: verdict(in_domain.meets_standard()),
        max_ulp: t.max_ulp,
        percent_correctly_rounded: t.percent_correctly_rounded(),
        percent_faithful: t.percent_faithful(),
        worst_family: worst_family(report),
        severities: if t.failed > 0 {
            t.severities()
        } else {
            "-".into()
        },
        max_mean_ratio_passing: ratio,
        findings,
        reproducer,
    }
}

fn unsupported_row(kernel: &str, op: Op, dtype: Dtype, reproducer: String) -> ZooRow {
    ZooRow {
        kernel: kernel.to_string(),
        op,
        dtype,
        verdict: ZooVerdict::Unsupported,
        verdict_in_domain: ZooVerdict::Unsupported,
        max_ulp: 0,
        percent_correctly_rounded: 0.0,
        percent_faithful: 0.0,
        worst_family: "-".into(),
        severities: "-".into(),
        max_mean_ratio_passing: None,
        findings: Vec::new(),
        reproducer,
    }
}

/// The rows of an in-process kernel (`kernel_for` gives it for each op and dtype: a builtin,
/// or a C library's entry point).
fn kernel_rows(
    name: &str,
    args: &str,
    cfg: &ZooConfig,
    extras: &[Extra],
    bar: &indicatif::ProgressBar,
    kernel_for: impl Fn(Op, Dtype) -> Result<Option<Box<dyn Kernel>>>,
) -> Result<Vec<ZooRow>> {
    let mut rows = Vec::new();
    for &op in &cfg.ops {
        for &dtype in &cfg.dtypes {
            bar.inc(1);
            let reproducer = |case: usize| {
                format!(
                    "normoracle fuzz {args} --op {op} --dtype {dtype} --seed {} --cases {} --case {case}",
                    cfg.seed, cfg.random_cases
                )
            };
            let Some(kernel) = kernel_for(op, dtype)? else {
                rows.push(unsupported_row(name, op, dtype, reproducer(0)));
                continue;
            };
            if !kernel.supports(op, dtype) {
                continue;
            }
            let mut config = BatteryConfig::new(op, dtype, cfg.seed);
            config.random_cases = cfg.random_cases;
            config.domain = cfg.domain;
            let mut report = judge::run_battery(kernel.as_ref(), &config, None, false)?;
            report.require(cfg.standard);
            let outputs: Vec<Option<Vec<u64>>> = extras
                .iter()
                .map(|e| {
                    let p = &e.problem;
                    (p.op == op && p.dtype == dtype)
                        .then(|| kernel.run(p).ok())
                        .flatten()
                })
                .collect();
            let extra = read_extras(extras, &outputs, op, dtype)?;
            rows.push(row_from_report(
                name,
                &report,
                extra,
                reproducer(worst_case(&report)),
            ));
        }
    }
    Ok(rows)
}

/// Where a Python driver's problems are written: the battery, and the extras.
struct DriverDirs {
    battery: PathBuf,
    extras: PathBuf,
}

/// Runs a Python driver (`python3 SCRIPT DIR ARGS…`) over a cases directory, cleared of
/// earlier outputs first; whether it succeeded (it fails where its framework is missing).
pub fn run_driver(
    script: &std::path::Path,
    args: &[String],
    dir: &std::path::Path,
) -> Result<bool> {
    manifest::clear_outputs(dir)?;
    let ran = Command::new("python3")
        .arg(script)
        .arg(dir)
        .args(args)
        .output();
    Ok(matches!(&ran, Ok(o) if o.status.success()))
}

/// The rows of a Python driver, run over the battery directory and the extras directory
/// (each cleared of the previous driver's outputs first). Empty when the driver fails.
fn driver_rows(
    (name, script, args): &(String, PathBuf, Vec<String>),
    cfg: &ZooConfig,
    dirs: &DriverDirs,
    extras: &[Extra],
) -> Result<Vec<ZooRow>> {
    for dir in [&dirs.battery, &dirs.extras] {
        if !run_driver(script, args, dir)? {
            return Ok(Vec::new()); // its framework is not installed here
        }
    }
    let selection = DirSelection {
        domain: Some(cfg.domain),
        ..DirSelection::default()
    };
    let verdicts = manifest::judge_dir_selected(&dirs.battery, name, &selection)?;
    let (_, extra_cases) = manifest::read_cases(&dirs.extras)?;
    let outputs: Vec<Option<Vec<u64>>> = extra_cases.into_iter().map(|c| c.outputs).collect();
    let mut rows = Vec::new();
    for &op in &cfg.ops {
        for &dtype in &cfg.dtypes {
            let report = verdicts
                .reports
                .iter()
                .find(|r| r.op == op && r.dtype == dtype);
            let missing = verdicts.missing_for(op, dtype);
            let case = report.map_or(0, worst_case);
            let reproducer = format!(
                "normoracle cases --out DIR --seed {} --cases {} && python3 {} DIR {} && normoracle check DIR  # case {case}",
                cfg.seed,
                cfg.random_cases,
                script.display(),
                args.join(" ")
            );
            match report {
                Some(report) => {
                    let mut report = report.clone();
                    report.require(cfg.standard);
                    if missing > 0 {
                        // Skipping some valid cases of an op and dtype it runs is a failure.
                        report
                            .kernel_errors
                            .push(format!("{missing} cases without outputs"));
                    }
                    let extra = read_extras(extras, &outputs, op, dtype)?;
                    rows.push(row_from_report(name, &report, extra, reproducer));
                }
                None if missing > 0 => rows.push(unsupported_row(name, op, dtype, reproducer)),
                None => {}
            }
        }
    }
    Ok(rows)
}

/// A third-party kernel behind a Python driver: its name in the table, the script
/// (`examples/python/*_driver.py`, run as `python3 SCRIPT DIR ARGS…`) and its arguments.
pub type PythonDriver = (String, PathBuf, Vec<String>);

/// The Python drivers under `examples` whose script exists and whose framework imports here,
/// each labelled with the framework's version (the accuracy table's and the real-model
/// artifact's one list).
pub fn python_drivers(examples: &std::path::Path) -> Vec<PythonDriver> {
    let py = |f: &str| examples.join("python").join(f);
    let drivers = [
        (
            "numpy {v} float64 two-pass",
            "numpy_driver.py",
            vec!["two-pass"],
            vec!["numpy"],
        ),
        (
            "numpy {v} float32 one-pass",
            "numpy_driver.py",
            vec!["one-pass"],
            vec!["numpy"],
        ),
        (
            "onnxruntime {v} LayerNormalization/RMSNormalization",
            "onnxruntime_driver.py",
            vec![],
            vec!["numpy", "onnx", "onnxruntime"],
        ),
        (
            "jax {v} two-pass (float32 statistics)",
            "jax_driver.py",
            vec!["two-pass"],
            vec!["numpy", "jax"],
        ),
        (
            "jax {v} fast-variance (flax LayerNorm default)",
            "jax_driver.py",
            vec!["fast-variance"],
            vec!["numpy", "jax"],
        ),
        (
            "openvino {v} CPU (MVN / RMS pattern)",
            "openvino_driver.py",
            vec![],
            vec!["numpy", "openvino"],
        ),
        // Outside CI (docs/zoo.md): tinygrad needs clang, paddle and tensorflow are large.
        (
            "tinygrad {v} nn.LayerNorm/RMSNorm",
            "tinygrad_driver.py",
            vec![],
            vec!["numpy", "tinygrad"],
        ),
        (
            "paddlepaddle {v} F.layer_norm/rms_norm (CPU)",
            "paddle_driver.py",
            vec![],
            vec!["numpy", "paddle"],
        ),
        (
            "tensorflow {v} keras LayerNormalization/RMSNormalization",
            "tensorflow_driver.py",
            vec![],
            vec!["numpy", "tensorflow"],
        ),
    ];
    drivers
        .into_iter()
        .filter(|(_, script, _, _)| py(script).exists())
        // The framework's version (the last module's) goes into the row's label; a framework
        // that does not import gives none, and no row.
        .filter_map(|(name, script, a, modules)| {
            let version = python_version(&modules)?;
            Some((
                name.replace("{v}", &version),
                py(script),
                a.into_iter().map(String::from).collect(),
            ))
        })
        .collect()
}

/// Compiles the C example into `dir`; None when no C compiler works.
pub fn compile_c_example(source: &Path, dir: &Path) -> Option<PathBuf> {
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

/// The entry point of (op, dtype) in `lib`; None when the library does not export it (the
/// library must load).
fn lib_kernel(lib: &Path, op: Op, dtype: Dtype) -> Result<Option<Box<dyn Kernel>>> {
    match DylibKernel::load(lib, None, op, dtype) {
        Ok(kernel) => Ok(Some(Box::new(kernel))),
        Err(crate::error::Error::Input(_)) => Ok(None), // no such symbol
        Err(e) => Err(e),
    }
}

/// The version of the last of `modules` (its `__version__`, else its distribution's, up to any
/// '-' build suffix) when python3 imports them all; None when it does not.
pub fn python_version(modules: &[&str]) -> Option<String> {
    let last = modules.last()?;
    let out = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import importlib.metadata, {}; v = getattr({last}, '__version__', None) or \
             importlib.metadata.version('{last}'); print(v.split('-')[0])",
            modules.join(", ")
        ))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs the zoo.
pub fn run(cfg: &ZooConfig) -> Result<Vec<ZooRow>> {
    let mut rows = Vec::new();
    let per_kernel = (cfg.ops.len() * cfg.dtypes.len()) as u64;
    let kernels =
        (cfg.builtins.len() + cfg.c_libs.len()) as u64 + u64::from(cfg.c_example.is_some());
    let bar = progress::bar(
        per_kernel * kernels + cfg.python_drivers.len() as u64,
        "kernel runs",
        cfg.progress,
    );
    let extras = extras(cfg);
    for name in &cfg.builtins {
        let args = format!("--builtin {name}");
        rows.extend(kernel_rows(name, &args, cfg, &extras, &bar, |_, _| {
            adapters::builtin(name).map(Some)
        })?);
    }
    let tmp = tempdir()?;
    if let Some(source) = &cfg.c_example {
        if let Some(lib) = compile_c_example(source, &tmp) {
            let file = lib.file_name().map(|n| n.to_string_lossy().into_owned());
            let args = format!("--lib {}", file.unwrap_or_default());
            rows.extend(kernel_rows(
                "c-example (double two-pass)",
                &args,
                cfg,
                &extras,
                &bar,
                |op, dtype| Ok(Some(Box::new(DylibKernel::load(&lib, None, op, dtype)?))),
            )?);
        }
    }
    for (label, lib) in &cfg.c_libs {
        let args = format!("--lib {}", lib.display());
        rows.extend(kernel_rows(
            label,
            &args,
            cfg,
            &extras,
            &bar,
            |op, dtype| lib_kernel(lib, op, dtype),
        )?);
    }
    if !cfg.python_drivers.is_empty() {
        let dirs = DriverDirs {
            battery: tmp.join("cases"),
            extras: tmp.join("extras"),
        };
        manifest::write_cases(
            &dirs.battery,
            &CasesSpec::new(
                &cfg.ops,
                &cfg.dtypes,
                EpsConvention::Inside,
                cfg.seed,
                cfg.random_cases,
            ),
        )?;
        manifest::write_problems(
            &dirs.extras,
            cfg.seed,
            extras.iter().enumerate().map(|(id, e)| DiskCase {
                id,
                family: match e.kind {
                    ExtraKind::MeanOffset(_) => "mean-offset",
                    ExtraKind::Probe { name, .. } => name,
                },
                problem: &e.problem,
            }),
        )?;
        for driver in &cfg.python_drivers {
            bar.inc(1);
            rows.extend(driver_rows(driver, cfg, &dirs, &extras)?);
        }
    }
    bar.finish_and_clear();
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(rows)
}

/// A fresh directory for one run (runs in one process, e.g. tests, get their own).
fn tempdir() -> Result<PathBuf> {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("normoracle-zoo-{}-{run}", std::process::id()));
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
        "verdict_in_domain",
        "max_ulp",
        "pct_correctly_rounded",
        "pct_faithful",
        "worst_family",
        "fail_severity",
        "max_mean_ratio_passing",
        "finding",
        "reproducer",
    ]);
    t.comment(format!("normoracle {} accuracy table, seed {}, battery of 198 systematic + {} random cases per (op, dtype)", env!("CARGO_PKG_VERSION"), cfg.seed, cfg.random_cases));
    t.comment("max_mean_ratio_passing: largest |mu|/sigma = 10^k (k = 0..8; N(mu,1) rows, d = 256) the kernel passes, every smaller ratio too; <1: it fails at 1");
    t.comment("finding: the classic bugs it shows on their minimal reproducers, and what it gave");
    t.comment(format!(
        "verdict: on the whole battery; verdict_in_domain: on its rows in the domain {} only; against the standard '{}'",
        cfg.domain, cfg.standard
    ));
    for r in rows {
        let supported = r.verdict != ZooVerdict::Unsupported;
        let number = |v: String| if supported { v } else { "-".into() };
        t.push([
            r.kernel.clone(),
            r.op.name().to_string(),
            r.dtype.name().to_string(),
            r.verdict.name().into(),
            r.verdict_in_domain.name().into(),
            number(r.max_ulp.to_string()),
            number(format!("{:.4}", r.percent_correctly_rounded)),
            number(format!("{:.4}", r.percent_faithful)),
            r.worst_family.clone(),
            r.severities.clone(),
            number(
                r.max_mean_ratio_passing
                    .map_or("<1".into(), |v| format!("{v:e}")),
            ),
            if r.findings.is_empty() {
                "-".into()
            } else {
                r.findings.join("; ")
            },
            r.reproducer.clone(),
        ]);
    }
    t
}
