//! The command line's hygiene: a closed stdout ends a command quietly with its own exit code;
//! `check DIR` fails on missing outputs; `cases --out` does not leave an earlier run's
//! outputs to be judged; sizes are checked before anything is allocated; reads stop where
//! the .npy header says; formats and ids are checked before any work. Every exit code is
//! 0, 1 or 2, and every error one line.

use normoracle::npy::{self, NpyArray, NpyData};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_normoracle");

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts exit 2 with one line on stderr containing `needle`.
fn assert_usage_error(args: &[&str], needle: &str) {
    let (code, _, err) = run(args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: '{err}' lacks '{needle}'");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

/// Runs the binary with stdout a pipe whose reader is already gone (as after `| head`, once
/// head has read its fill); returns the exit code and stderr.
fn run_with_closed_stdout(args: &[&str]) -> (i32, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let out = Command::new(BIN)
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn save(dir: &Path, name: &str, shape: Vec<usize>, data: NpyData) -> String {
    let p: PathBuf = dir.join(name);
    npy::write(&p, &NpyArray::new(shape, data).unwrap()).unwrap();
    p.display().to_string()
}

/// x (2 rows of 4) and outputs that are far off: `check` fails on them (exit 1).
fn failing_check_files(dir: &Path) -> (String, String) {
    let x = save(
        dir,
        "x.npy",
        vec![2, 4],
        NpyData::F32(vec![1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 2.0, 7.0]),
    );
    let y = save(dir, "y.npy", vec![2, 4], NpyData::F32(vec![9.0; 8]));
    (x, y)
}

fn check_args<'a>(x: &'a str, y: &'a str) -> Vec<&'a str> {
    vec![
        "check",
        "--op",
        "layer_norm",
        "--dtype",
        "f32",
        "--x",
        x,
        "--y",
        y,
    ]
}

#[test]
fn a_closed_stdout_ends_quietly_with_the_commands_own_code() {
    for args in [
        &["reproduce", "--list"][..],
        &["--help"][..],
        &["check", "--help"][..],
    ] {
        let (code, err) = run_with_closed_stdout(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let (x, y) = failing_check_files(dir.path());
    let (code, err) = run_with_closed_stdout(&check_args(&x, &y));
    assert_eq!(code, 1, "the verdict's code: {err}");
    assert!(err.is_empty(), "{err}");
    let mut json = check_args(&x, &y);
    json.push("--json");
    assert_eq!(run_with_closed_stdout(&json).0, 1);
    // Errors keep exit 2 and their line on stderr.
    let missing = dir.path().join("nothing.npy").display().to_string();
    let (code, err) = run_with_closed_stdout(&check_args(&missing, &y));
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn a_closed_stderr_is_no_panic_either() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cases").display().to_string();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = Command::new(BIN)
        .args(["cases", "--out", &out, "--op", "rms_norm", "--dtype", "f16"])
        .stdout(Stdio::null())
        .stderr(writer)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_stdout_that_cannot_be_written_is_exit_2() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // not Linux
    };
    let out = Command::new(BIN)
        .args(["reproduce", "--list"])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write to stdout"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `normoracle cases` for one (op, dtype): the 198 systematic cases.
fn write_cases(dir: &Path, extra: &[&str]) -> (i32, String) {
    let out = dir.display().to_string();
    let mut args = vec![
        "cases",
        "--out",
        &out,
        "--op",
        "layer_norm",
        "--dtype",
        "f32",
        "--seed",
        "7",
    ];
    args.extend_from_slice(extra);
    let (code, _, err) = run(&args);
    (code, err)
}

fn manifest(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Writes the correctly rounded outputs of case `index` where its manifest entry says.
fn write_reference_outputs(dir: &Path, index: usize) {
    let case = &manifest(dir)["cases"][index];
    let file = |key: &str| dir.join(case[key].as_str().unwrap()).display().to_string();
    let (x, y) = (file("x"), file("y"));
    let mut args = vec![
        "reference".to_string(),
        "--op".into(),
        "layer_norm".into(),
        "--dtype".into(),
        "f32".into(),
        "--eps-bits".into(),
        case["eps_bits"].as_str().unwrap().into(),
        "--x".into(),
        x,
        "--out".into(),
        y,
    ];
    for key in ["gamma", "beta"] {
        if case[key].is_string() {
            args.push(format!("--{key}"));
            args.push(file(key));
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = run(&args);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn check_dir_fails_on_missing_outputs_and_refuses_a_dir_without_any() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cases");
    assert_eq!(write_cases(&dir, &[]).0, 0);
    let dir_arg = dir.display().to_string();
    assert_usage_error(
        &["check", &dir_arg],
        "no outputs found (198 cases, no 'y' file); run your driver first",
    );
    // One output of 198 (case 1: case 0 has rows of width 1 and ε = 0, undefined), and
    // correct: the 197 missing fail the check, named.
    write_reference_outputs(&dir, 1);
    let (code, out, err) = run(&["check", &dir_arg]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("PASS"), "the one case written passes: {out}");
    assert!(
        out.contains("FAIL: 197 of 198 cases have no outputs"),
        "{out}"
    );
    assert!(
        out.contains("layer_norm f32: 197 cases, ids 0, 2-197 (e.g. layer_norm_f32_0000_y.npy)"),
        "{out}"
    );
    let (code, out, _) = run(&["check", &dir_arg, "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["passed"], false);
    assert_eq!(v["missing_outputs"], 197);
    assert_eq!(v["missing_cases"][1]["case"], 2);
    assert_eq!(v["missing_cases"][1]["y"], "layer_norm_f32_0002_y.npy");
    assert_eq!(v["reports"][0]["passed"], true);
}

#[test]
fn cases_refuses_a_used_directory_and_force_removes_its_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cases");
    assert_eq!(write_cases(&dir, &[]).0, 0);
    write_reference_outputs(&dir, 1);
    let y = dir.join("layer_norm_f32_0001_y.npy");
    assert!(y.exists());
    // The same seed again: refused, and the old outputs stay untouched.
    let (code, err) = write_cases(&dir, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not empty"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(y.exists());
    // --force: the outputs are gone, so nothing passes without a driver.
    let (code, err) = write_cases(&dir, &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(!y.exists(), "--force left an earlier run's outputs");
    assert!(dir.join("manifest.json").exists());
    let dir_arg = dir.display().to_string();
    assert_usage_error(&["check", &dir_arg], "no outputs found");
    // Without a manifest to name them, outputs the new manifest names are removed too.
    std::fs::remove_file(dir.join("manifest.json")).unwrap();
    std::fs::copy(dir.join("layer_norm_f32_0001_x.npy"), &y).unwrap();
    assert_eq!(write_cases(&dir, &["--force"]).0, 0);
    assert!(!y.exists());
    // A file in the way is an error, not a panic.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    assert_eq!(write_cases(&file, &[]).0, 2);
    assert_eq!(write_cases(&file, &["--force"]).0, 2);
}

#[test]
fn case_counts_are_bounded_instead_of_wrapping() {
    let huge = "18446744073709551418"; // 198 short of 2^64: the battery's length wrapped to 0
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c").display().to_string();
    for args in [
        vec![
            "fuzz",
            "--builtin",
            "reference-f64",
            "--op",
            "layer_norm",
            "--dtype",
            "f32",
            "--cases",
            huge,
        ],
        vec![
            "fuzz",
            "--builtin",
            "native",
            "--op",
            "rms_norm",
            "--dtype",
            "f32",
            "--cases",
            "10000001",
        ],
        vec!["cases", "--out", &out, "--cases", huge],
        vec!["zoo", "--builtins-only", "--cases", huge],
        vec!["audit", "--cases", huge],
    ] {
        let (code, stdout, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {stdout}{err}");
        assert!(err.contains("from 0 to 10000000"), "{args:?}: {err}");
        assert!(!stdout.contains("PASS"), "{args:?}: {stdout}");
    }
    assert!(!Path::new(&out).exists());
}

/// A .npy header for `shape` of `<f4`, version 1, with `body` after it.
fn npy_bytes(shape: &str, body: &[u8]) -> Vec<u8> {
    let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}\n");
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(body);
    out
}

#[test]
fn declared_sizes_are_checked_before_anything_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, bytes: Vec<u8>| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let reference = |x: &str| {
        vec![
            "reference".to_string(),
            "--op".into(),
            "layer_norm".into(),
            "--dtype".into(),
            "f32".into(),
            "--x".into(),
            x.into(),
            "--out".into(),
            dir.path().join("y.npy").display().to_string(),
        ]
    };
    let cases = [
        // No rows: nothing to judge, and a width no file bounds (this aborted).
        (
            "empty.npy",
            npy_bytes("(0, 1099511627776)", b""),
            "has no rows",
        ),
        // A few bytes claiming 4 TiB: refused before reading or allocating.
        (
            "huge.npy",
            npy_bytes("(1, 1099511627776)", b""),
            "needs 4398046511104 bytes",
        ),
        (
            "overflow.npy",
            npy_bytes("(4294967296, 4294967296)", b""),
            "too large",
        ),
        (
            "short.npy",
            npy_bytes("(2, 2)", &[0; 12]),
            "data holds 12 bytes",
        ),
        (
            "long.npy",
            npy_bytes("(2, 2)", &[0; 20]),
            "data holds 20 bytes",
        ),
    ];
    for (name, bytes, needle) in cases {
        let x = file(name, bytes);
        let args = reference(&x);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_usage_error(&args, needle);
        let y = file("y_any.npy", npy_bytes("(2, 2)", &[0; 16]));
        assert_usage_error(&check_args(&x, &y), needle);
    }
    // A header length beyond any numpy header.
    let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
    v2.extend(0x7fff_ffffu32.to_le_bytes());
    let x = file("v2.npy", v2);
    assert_usage_error(&check_args(&x, &x), "at most 1048576");
}

#[test]
fn streams_are_read_no_further_than_their_header_declares() {
    // /dev/zero never ends: the magic check stops it at once.
    assert_usage_error(&check_args("/dev/zero", "/dev/zero"), "bad magic");
    // A pipe that declares 4 values and then never stops: an error after one byte more.
    let mut child = Command::new(BIN)
        .args(check_args("/dev/stdin", "/dev/null"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let chunk = vec![0u8; 1 << 16];
        let _ = stdin.write_all(&npy_bytes("(2, 2)", &[0; 16]));
        let start = Instant::now();
        // Stops when the reader is gone; the deadline keeps a reader that slurps from
        // hanging the test (it fails below instead).
        while stdin.write_all(&chunk).is_ok() && start.elapsed() < Duration::from_secs(20) {}
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("more bytes than shape [2, 2]"), "{err}");
}

#[test]
fn a_manifest_must_describe_its_arrays() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cases");
    assert_eq!(write_cases(&dir, &[]).0, 0);
    let mut m = manifest(&dir);
    // rows × d overflows usize (and wrapped past the size check).
    m["cases"][0]["rows"] = serde_json::json!(1u64 << 62);
    m["cases"][0]["d"] = serde_json::json!(8);
    std::fs::write(dir.join("manifest.json"), m.to_string()).unwrap();
    assert_usage_error(
        &["check", &dir.display().to_string()],
        "but the manifest says",
    );
}

#[test]
fn generated_sizes_are_bounded_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("keys.npy").display().to_string();
    let big = "4294967296"; // 2^32
    for (args, needle) in [
        (
            vec!["bench-oracle", "--rows", big, "--d", big],
            "--rows × --d",
        ),
        (
            vec!["bench-oracle", "--rows", "1", "--d", "300000000"],
            "2^28",
        ),
        (
            vec!["bench-oracle", "--rows", "2", "--d", "2", "--repeats", big],
            "--repeats",
        ),
        (
            vec!["unselectable", "sample", "--n", big, "--d", big, "-o", &out],
            "--n × --d",
        ),
        (
            vec![
                "unselectable",
                "figure",
                "--d",
                "3..18446744073709551615",
                "--quiet",
            ],
            "2^28",
        ),
        (
            vec![
                "unselectable",
                "figure",
                "--d",
                "3",
                "--n",
                "3..2000000",
                "--quiet",
            ],
            "cells",
        ),
        (
            vec!["unselectable", "figure", "--runs", big, "--quiet"],
            "--runs",
        ),
        (
            vec!["unselectable", "bench", "--n", big, "--d", "3", "--quiet"],
            "2^28",
        ),
        (
            vec!["unselectable", "bench", "--repeat", big, "--quiet"],
            "--repeat",
        ),
    ] {
        assert_usage_error(&args, needle);
    }
    assert!(!Path::new(&out).exists());
}

#[test]
fn formats_and_ids_are_checked_before_any_work() {
    for (args, needle) in [
        (
            vec!["reproduce", "accuracy-table", "--format", "docx"],
            "unknown format 'docx'",
        ),
        (
            vec!["reproduce", "accuracy-table", "--format", "svg"],
            "has no figure",
        ),
        (vec!["reproduce", "no-such-artifact"], "unknown artifact"),
    ] {
        let start = Instant::now();
        assert_usage_error(&args, needle);
        // The accuracy table takes many seconds to produce (minutes unoptimized).
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{args:?}: work first"
        );
    }
}

#[test]
fn help_and_version_exit_0_and_usage_errors_exit_2() {
    assert_eq!(run(&["--help"]).0, 0);
    assert_eq!(run(&["--version"]).0, 0);
    assert_eq!(run(&["cases", "--help"]).0, 0);
    assert_eq!(run(&[]).0, 2);
    assert_eq!(run(&["no-such-command"]).0, 2);
    let (_, help, _) = run(&["cases", "--help"]);
    assert!(help.contains("--force"), "{help}");
    let (_, help, _) = run(&["check", "--help"]);
    assert!(help.contains("run your driver first"), "{help}");
}

#[test]
fn ellipsoid_bench_and_theorems_sizes_are_bounded_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let gain = save(
        dir.path(),
        "g.npy",
        vec![3],
        NpyData::F64(vec![1.0, 2.0, 3.0]),
    );
    let huge = "18446744073709551615";
    for (args, needle) in [
        (
            vec!["ellipsoid", "concentration", "--samples", huge],
            "--n × --samples",
        ),
        (
            vec![
                "ellipsoid",
                "concentration",
                "--n",
                "4294967296",
                "--samples",
                "10",
            ],
            "2^28",
        ),
        (vec!["ellipsoid", "bench", "--n", huge], "--n × --n"),
        (vec!["ellipsoid", "bench", "--repeats", huge], "--repeats"),
        (
            vec!["ellipsoid", "--gain", &gain, "--threads", huge],
            "--threads",
        ),
        (vec!["bench", "--samples", huge], "--samples"),
        (vec!["bench", "--threads", huge], "--threads"),
        (vec!["bench", "--sizes", "65536x65536"], "ROWS × D"),
    ] {
        assert_usage_error(&args, needle);
    }
    let (code, _, err) = run(&["theorems", "--cases", huge]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("from 0 to 10000000"), "{err}");
}
