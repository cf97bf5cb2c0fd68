//! The C ABI end to end: C kernels are compiled with the system's `cc`, loaded by
//! `normoracle fuzz --lib`, and judged. Correct kernels (double accumulation two-pass or
//! Welford, careful f32 pairwise with power-of-two scaling, the shipped example) must pass;
//! each classic bug must fail where it applies; bad libraries are usage errors (exit 2).

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_normoracle");

fn build(source: &str, variant: Option<u32>, dir: &Path) -> PathBuf {
    let name = format!(
        "lib{}.so",
        variant.map_or("example".to_string(), |v| format!("zoo{v}"))
    );
    let out = dir.join(name);
    let mut cmd = Command::new("cc");
    cmd.args(["-O2", "-w", "-shared", "-fPIC", "-o"])
        .arg(&out)
        .arg(source)
        .arg("-lm");
    if let Some(v) = variant {
        cmd.arg(format!("-DVARIANT={v}"));
    }
    let status = cmd.status().expect("cc runs");
    assert!(status.success(), "cc failed for {source} {variant:?}");
    out
}

fn fuzz(lib: &Path, op: &str, dtype: &str, extra: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["fuzz", "--lib"])
        .arg(lib)
        .args([
            "--op", op, "--dtype", dtype, "--cases", "20", "--seed", "11",
        ])
        .args(extra)
        .output()
        .expect("normoracle runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

const OPS: [&str; 2] = ["layer_norm", "rms_norm"];
const DTYPES: [&str; 3] = ["f32", "f16", "bf16"];

#[test]
fn correct_kernels_pass_and_every_bug_fails_where_it_applies() {
    let dir = tempfile::tempdir().unwrap();
    let zoo = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/zoo.c");
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/c/normoracle_example.c"
    );
    let mut libs = vec![("example".to_string(), build(example, None, dir.path()))];
    for v in [1, 2, 3] {
        libs.push((format!("zoo {v}"), build(zoo, Some(v), dir.path())));
    }
    for (name, lib) in &libs {
        for op in OPS {
            for dt in DTYPES {
                let (code, out) = fuzz(lib, op, dt, &[]);
                assert_eq!(code, 0, "correct kernel {name} {op} {dt} must pass:\n{out}");
            }
        }
    }
    // (variant, which (op, dtype) pairs it must fail): a bug in the mean cannot show in
    // RMSNorm, which has none; an f32 overflow cannot happen with f16 inputs, whose squares
    // fit in f32.
    let all = |_: &str, _: &str| true;
    let layer_norm_only = |op: &str, _: &str| op == "layer_norm";
    type Applies<'a> = &'a dyn Fn(&str, &str) -> bool;
    let bugs: [(u32, &str, Applies); 10] = [
        (10, "one-pass variance", &|op, dt| {
            op == "layer_norm" || dt != "f16"
        }),
        (11, "eps outside the root", &all),
        (12, "unbiased (d-1) variance", &all),
        (13, "no mean subtraction", &layer_norm_only),
        (14, "SIMD tail dropped", &all),
        (15, "gamma/beta misindexed", &all),
        (16, "statistics leak across rows", &layer_norm_only),
        (17, "f32 sums overflow", &|_, dt| dt != "f16"),
        (18, "sums of squares in the storage format", &all),
        (19, "kernel returns an error", &all),
    ];
    for (v, what, applies) in bugs {
        let lib = build(zoo, Some(v), dir.path());
        for op in OPS {
            for dt in DTYPES {
                let (code, out) = fuzz(&lib, op, dt, &[]);
                let want = if applies(op, dt) { 1 } else { 0 };
                assert_eq!(code, want, "{what} ({op} {dt}) exit code:\n{out}");
                if want == 1 {
                    assert!(
                        out.contains("reproduce: normoracle fuzz"),
                        "a failure prints its reproducer"
                    );
                }
            }
        }
    }
}

#[test]
fn a_failure_reproduces_from_its_printed_case() {
    let dir = tempfile::tempdir().unwrap();
    let lib = build(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/zoo.c"),
        Some(12),
        dir.path(),
    );
    let (code, out) = fuzz(&lib, "layer_norm", "f32", &[]);
    assert_eq!(code, 1);
    let case = out
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("reproduce: ")
                .and_then(|c| c.split("--case ").nth(1))
                .and_then(|c| c.split_whitespace().next())
        })
        .expect("a reproducer line")
        .to_string();
    let (code, out) = fuzz(&lib, "layer_norm", "f32", &["--case", &case]);
    assert_eq!(code, 1, "the printed case fails alone:\n{out}");
    assert!(out.contains(", 1 cases"));
}

#[test]
fn bad_libraries_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let lib = build(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/c/normoracle_example.c"
        ),
        None,
        dir.path(),
    );
    let (code, out) = fuzz(&lib, "layer_norm", "f32", &["--symbol", "no_such_symbol"]);
    assert_eq!(code, 2);
    assert!(out.contains("symbol 'no_such_symbol' not found"), "{out}");
    assert_eq!(out.trim().lines().count(), 1, "one line: {out}");
    let (code, _) = fuzz(&dir.path().join("missing.so"), "layer_norm", "f32", &[]);
    assert_eq!(code, 2);
    let (code, _) = fuzz(&lib, "layer_norm", "f64", &[]);
    assert_eq!(code, 2);
    let not_a_library = dir.path().join("text.so");
    std::fs::write(&not_a_library, "not elf").unwrap();
    let (code, _) = fuzz(&not_a_library, "rms_norm", "f16", &[]);
    assert_eq!(code, 2);
}
