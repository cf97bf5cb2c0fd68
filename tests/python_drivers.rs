//! Frameworks through .npy files: `normoracle cases` → a Python driver → `normoracle check`.
//! numpy's float64 two-pass must pass and its float32 one-pass must fail; onnxruntime and jax
//! must go through the pipeline to a verdict (0 or 1, never a usage error). CI installs the
//! packages (.ci/run); where a package cannot be imported, its test says so and returns.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_normoracle");

fn importable(modules: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
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
    if !importable("numpy") {
        eprintln!("numpy is not importable here: test not run");
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

#[test]
fn onnxruntime_reaches_a_verdict() {
    if !importable("numpy, onnx, onnxruntime") {
        eprintln!("onnxruntime is not importable here: test not run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    cases(dir.path(), "layer_norm", "f16");
    driver("onnxruntime_driver.py", dir.path(), &[]);
    let (code, out) = check(dir.path());
    assert!(code == 0 || code == 1, "{out}");
    eprintln!("{out}");
}

#[test]
fn jax_reaches_a_verdict_and_fast_variance_fails() {
    if !importable("numpy, jax") {
        eprintln!("jax is not importable here: test not run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    cases(dir.path(), "layer_norm", "f32");
    driver("jax_driver.py", dir.path(), &["fast-variance"]);
    let (code, out) = check(dir.path());
    // E[x²]−E[x]² in float32 cannot survive the large-mean family.
    assert_eq!(code, 1, "{out}");
}
