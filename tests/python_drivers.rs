//! Frameworks through .npy files: `normoracle cases` → a Python driver → `normoracle check`.
//! numpy's float64 two-pass must pass and its float32 one-pass must fail; the accuracy table's
//! findings about onnxruntime and jax hold. CI installs the packages at pinned versions
//! (examples/python/requirements.txt); where a package cannot be imported, its test says so
//! and returns.

use normoracle::dtype::Dtype;
use normoracle::problem::Op;
use normoracle::zoo::{self, ZooConfig, ZooRow, ZooVerdict};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_normoracle");

/// Whether python3 imports `modules`; says on stderr that the test does not run when not.
fn importable(modules: &str, framework: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("{framework} is not importable here: test not run");
    }
    ok
}

fn cases(dir: &Path, ops: &str, dtypes: &str) {
    let status = Command::new(BIN)
        .args(["cases", "--out"])
        .arg(dir)
        .args(["--op", ops, "--dtype", dtypes, "--seed", "5"])
        .status()
        .unwrap();
    assert!(status.success());
}

fn driver(script: &str, dir: &Path, args: &[&str]) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/python/");
    let out = Command::new("python3")
        .arg(format!("{path}{script}"))
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check(dir: &Path) -> (i32, String) {
    let out = Command::new(BIN).arg("check").arg(dir).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn numpy_two_pass_passes_and_one_pass_fails() {
    if !importable("numpy", "numpy") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    cases(dir.path(), "layer_norm,rms_norm", "f32,f16,bf16");
    driver("numpy_driver.py", dir.path(), &["two-pass"]);
    let (code, out) = check(dir.path());
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("PASS:").count(), 6, "{out}");
    driver("numpy_driver.py", dir.path(), &["one-pass"]);
    let (code, out) = check(dir.path());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL: outputs:") && out.contains("layer_norm f32"),
        "{out}"
    );
}

/// The zoo over Python drivers: the listed drivers' rows for these ops and dtypes, from a
/// battery without random cases.
fn zoo_rows(drivers: &[(&str, &str, &[&str])], ops: &[Op], dtypes: &[Dtype]) -> Vec<ZooRow> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/python");
    let cfg = ZooConfig {
        seed: 11,
        ops: ops.to_vec(),
        dtypes: dtypes.to_vec(),
        random_cases: 0,
        builtins: Vec::new(),
        c_example: None,
        c_libs: Vec::new(),
        python_drivers: drivers
            .iter()
            .map(|(name, script, args)| {
                let script = if Path::new(script).is_absolute() {
                    PathBuf::from(script)
                } else {
                    path.join(script)
                };
                (
                    name.to_string(),
                    script,
                    args.iter().map(|a| a.to_string()).collect(),
                )
            })
            .collect(),
        progress: false,
        standard: normoracle::judge::Standard::Bound,
        domain: normoracle::domain::Domain::typical(),
    };
    zoo::run(&cfg).unwrap()
}

fn find<'a>(rows: &'a [ZooRow], kernel: &str, op: Op, dtype: Dtype) -> &'a ZooRow {
    rows.iter()
        .find(|r| r.kernel == kernel && r.op == op && r.dtype == dtype)
        .unwrap_or_else(|| panic!("no row {kernel} {op} {dtype}"))
}

/// Each driver is judged on its own outputs only. A driver that writes nothing gets
/// "unsupported" rows. The zoo once left the previous driver's outputs in the shared cases
/// directory and judged them as the next driver's: onnxruntime, which cannot run bf16 here,
/// was credited with numpy's bf16 verdicts.
#[test]
fn zoo_drivers_are_judged_on_their_own_outputs() {
    if !importable("numpy", "numpy") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let silent = dir.path().join("silent_driver.py");
    std::fs::write(&silent, "# writes no outputs\n").unwrap();
    let silent = silent.to_str().unwrap();
    let rows = zoo_rows(
        &[
            ("two-pass", "numpy_driver.py", &["two-pass"]),
            ("one-pass", "numpy_driver.py", &["one-pass"]),
            ("silent", silent, &[]),
        ],
        &[Op::LayerNorm],
        &zoo::ZOO_DTYPES,
    );
    assert_eq!(rows.len(), 9);
    for r in rows.iter().filter(|r| r.kernel == "silent") {
        assert_eq!(r.verdict, ZooVerdict::Unsupported, "{r:?}");
    }
    for r in rows.iter().filter(|r| r.kernel == "two-pass") {
        assert_eq!(r.verdict, ZooVerdict::Pass, "{r:?}");
        assert!(r.findings.is_empty(), "{r:?}");
        let top = if r.dtype == Dtype::F16 { 1e4 } else { 1e8 };
        assert_eq!(r.max_mean_ratio_passing, Some(top), "{r:?}");
    }
    // The float32 one-pass driver: NaN on the negative-variance reproducer, large means lost.
    let one_pass = find(&rows, "one-pass", Op::LayerNorm, Dtype::F32);
    assert_eq!(one_pass.verdict, ZooVerdict::Fail);
    assert!(
        one_pass.findings[0].starts_with("one-pass E[x²]−E[x]² < 0")
            && one_pass.findings[0].ends_with("NaN for -0.7060907483100891"),
        "{one_pass:?}"
    );
    assert!(
        one_pass.max_mean_ratio_passing.unwrap() < 1e4,
        "{one_pass:?}"
    );
}

/// onnxruntime (the version .ci/run pins): LayerNormalization and RMSNormalization pass in
/// f16 and fail in f32, where the sums of squares overflow (no scaling); bf16 does not run on
/// its CPU provider.
#[test]
fn onnxruntime_fails_f32_on_overflowing_squares() {
    if !importable("numpy, onnx, onnxruntime", "onnxruntime") {
        return;
    }
    let name = "onnxruntime";
    let rows = zoo_rows(
        &[(name, "onnxruntime_driver.py", &[])],
        &Op::ALL,
        &zoo::ZOO_DTYPES,
    );
    for op in [Op::LayerNorm, Op::RmsNorm] {
        let f32_row = find(&rows, name, op, Dtype::F32);
        assert_eq!(f32_row.verdict, ZooVerdict::Fail, "{f32_row:?}");
        assert!(
            f32_row
                .findings
                .iter()
                .any(|f| f.starts_with("Σx² overflows f32")),
            "{f32_row:?}"
        );
        assert_eq!(find(&rows, name, op, Dtype::F16).verdict, ZooVerdict::Pass);
        assert_eq!(
            find(&rows, name, op, Dtype::BF16).verdict,
            ZooVerdict::Unsupported
        );
    }
}

/// jax with flax's default fast variance (E[x²]−E[x]², clamped at 0): the clamp turns the
/// negative variance into 0, so instead of NaN the outputs blow up by 1/√ε; the two-pass jax
/// driver survives the reproducer. Both fail f32 on overflowing squares.
#[test]
fn jax_fast_variance_shows_the_one_pass_finding() {
    if !importable("numpy, jax", "jax") {
        return;
    }
    let rows = zoo_rows(
        &[
            ("fast", "jax_driver.py", &["fast-variance"]),
            ("two-pass", "jax_driver.py", &["two-pass"]),
        ],
        &[Op::LayerNorm],
        &[Dtype::F32],
    );
    let one_pass = |r: &ZooRow| {
        r.findings
            .iter()
            .find(|f| f.starts_with("one-pass E[x²]−E[x]² < 0"))
            .cloned()
    };
    let fast = find(&rows, "fast", Op::LayerNorm, Dtype::F32);
    assert_eq!(fast.verdict, ZooVerdict::Fail);
    let finding = one_pass(fast).unwrap_or_else(|| panic!("{fast:?}"));
    assert!(!finding.contains("NaN"), "{finding}");
    assert_eq!(
        one_pass(find(&rows, "two-pass", Op::LayerNorm, Dtype::F32)),
        None
    );
}

/// OpenVINO's CPU plugin (the version .ci/run pins): its MVN and the RMS pattern sum the
/// squares in f32 without scaling, so f32 fails on overflowing squares in both ops; its
/// LayerNorm passes in f16, whose squares fit.
#[test]
fn openvino_fails_f32_on_overflowing_squares() {
    if !importable("numpy, openvino", "openvino") {
        return;
    }
    let name = "openvino";
    let rows = zoo_rows(
        &[(name, "openvino_driver.py", &[])],
        &Op::ALL,
        &[Dtype::F32, Dtype::F16],
    );
    for op in [Op::LayerNorm, Op::RmsNorm] {
        let f32_row = find(&rows, name, op, Dtype::F32);
        assert_eq!(f32_row.verdict, ZooVerdict::Fail, "{f32_row:?}");
        assert!(
            f32_row
                .findings
                .iter()
                .any(|f| f.starts_with("Σx² overflows f32")),
            "{f32_row:?}"
        );
    }
    let f16_row = find(&rows, name, Op::LayerNorm, Dtype::F16);
    assert_eq!(f16_row.verdict, ZooVerdict::Pass, "{f16_row:?}");
}

/// The drivers of the frameworks outside CI (tinygrad needs clang; paddlepaddle and
/// tensorflow are large) run where they are installed: each writes outputs for the f32
/// LayerNorm cases it can run, and what it cannot run it leaves without outputs.
#[test]
fn drivers_outside_ci_run_where_installed() {
    for (modules, framework, script) in [
        ("numpy, tinygrad", "tinygrad", "tinygrad_driver.py"),
        ("numpy, paddle", "paddlepaddle", "paddle_driver.py"),
        ("numpy, tensorflow", "tensorflow", "tensorflow_driver.py"),
    ] {
        if !importable(modules, framework) {
            continue;
        }
        let has_clang = || Command::new("clang").arg("--version").output().is_ok();
        if framework == "tinygrad" && !has_clang() {
            eprintln!("tinygrad's CPU device needs clang, not installed here: test not run");
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new(BIN)
            .args(["cases", "--out"])
            .arg(dir.path())
            .args(["--op", "layer_norm", "--dtype", "f32", "--seed", "5"])
            .args(["--cases", "0", "--family", "gaussian"])
            .status()
            .unwrap();
        assert!(status.success());
        driver(script, dir.path(), &[]);
        let (code, out) = check(dir.path());
        assert!(code == 0 || code == 1, "{framework}: {out}");
        assert!(out.contains("layer_norm f32"), "{framework}: {out}");
    }
}
