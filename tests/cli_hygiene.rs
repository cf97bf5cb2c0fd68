//! The command line's hygiene: a closed stdout ends a command quietly with its own exit code;
//! `check DIR` fails on missing outputs; `cases --out` does not leave an earlier run's
//! outputs to be judged; sizes are checked before anything is allocated; reads stop where
//! the .npy header says; formats and ids are checked before any work. Every exit code is
//! 0, 1 or 2, and every error one line.

use normoracle::npy::{self, NpyArray, NpyData};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_normoracle");

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