//! The isolated harness against hostile kernels (tests/c/hostile.c): every way a kernel can
//! end, hang, scribble or change the floating-point environment is exit 1 with its named
//! finding — never 0, never a signal exit, never a hang past the timeout — and a correct kernel
//! that prints, ignores signals, closes its standard streams or is slow still passes.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_normoracle");

/// The variants of tests/c/hostile.c, by name.
const CORRECT: u32 = 0;
const EXIT_0: u32 = 1;
const EXIT_1: u32 = 2;
const EXIT_2: u32 = 3;
const SEGV: u32 = 4;
const SEGV_WIDE: u32 = 5;
const ABORT: u32 = 6;
const INT_DIV_ZERO: u32 = 7;
const SIGKILL_SELF: u32 = 8;
const STACK_OVERFLOW: u32 = 9;
const HEAP_OVERFLOW: u32 = 10;
const CTOR_CRASH: u32 = 11;
const DATA_SYMBOL: u32 = 12;
const LOAD_FTZ_DAZ: u32 = 13;
const LEAVE_FTZ_DAZ: u32 = 14;
const LEAVE_TOWARD_ZERO: u32 = 15;
const DAZ_READS_ZERO: u32 = 16;
const UNMASK_DIVBYZERO: u32 = 17;
const PAST_END: u32 = 18;
const WRITE_X: u32 = 19;
const WRITE_GAMMA: u32 = 20;
const WRITE_BETA: u32 = 21;
const SKIP_ROWS: u32 = 22;
const HANG: u32 = 23;
const HANG_WIDE: u32 = 24;
const PRINTS: u32 = 25;
const IGNORES_SIGNALS: u32 = 26;
const CLOSES_STDIO: u32 = 27;
const SLEEPS: u32 = 28;
const LATE_WRITER: u32 = 29;
const BEFORE_START: u32 = 30;
const CLOSES_CHANNEL: u32 = 31;
const WRITES_CHANNEL: u32 = 32;
const FLUSH_SUBNORMALS: u32 = 33;
const MEMORY_HOG: u32 = 34;

fn lib_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// Builds a variant of hostile.c (with `flags`, e.g. -Ofast) into a shared library.
fn build(variant: u32, flags: &str) -> PathBuf {
    let tag = flags.replace(['-', ' '], "");
    let out = lib_dir().join(format!("libhostile{variant}{tag}.so"));
    if out.exists() {
        return out;
    }
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c/hostile.c");
    let partial = out.with_extension(format!("{}.tmp", std::process::id()));
    let status = Command::new("cc")
        .args(["-w", "-shared", "-fPIC"])
        .args(flags.split_whitespace())
        .arg(format!("-DVARIANT={variant}"))
        .arg("-o")
        .arg(&partial)
        .arg(source)
        .args(["-lm", "-lpthread"])
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed for variant {variant} {flags}");
    std::fs::rename(&partial, &out).unwrap();
    out
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("--json output does not parse ({e}):\n{}", self.stdout))
    }

    /// The kinds of the report's findings, with their details.
    fn findings(&self) -> Vec<(String, String)> {
        self.json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["kind"].as_str().unwrap().to_string(),
                    f["detail"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

/// `normoracle fuzz --lib` over a few families of the battery (f32, seed 3), with `extra`.
fn fuzz(lib: &Path, op: &str, families: &str, extra: &[&str]) -> Run {
    let start = Instant::now();
    let shape = ["--op", op, "--dtype", "f32", "--cases", "0", "--seed", "3"];
    let judged = ["--family", families, "--json"];
    let out = fuzz_text(lib, &[&shape[..], &judged, extra].concat());
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: start.elapsed(),
    }
}

/// `normoracle fuzz --lib LIB ARGS…` as a person runs it (text report).
fn fuzz_text(lib: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(["fuzz", "--lib"])
        .arg(lib)
        .args(args)
        .output()
        .expect("normoracle runs")
}

/// The variant fails with exit 1 and a finding of `kind` whose detail contains `detail`.
fn assert_finding(variant: u32, flags: &str, families: &str, kind: &str, detail: &str) -> Run {
    let run = fuzz(
        &build(variant, flags),
        "layer_norm",
        families,
        &["--timeout", "2"],
    );
    assert_eq!(
        run.code,
        Some(1),
        "variant {variant}: exit {:?}\n{}\n{}",
        run.code,
        run.stdout,
        run.stderr
    );
    let report = run.json();
    assert_eq!(report["passed"], Value::Bool(false));
    let findings = run.findings();
    assert!(
        findings
            .iter()
            .any(|(k, d)| k == kind && d.contains(detail)),
        "variant {variant}: no {kind} finding with '{detail}' in {findings:#?}"
    );
    assert!(
        report["reproducer"].as_str().unwrap().contains("--case "),
        "a reproducer names the case"
    );
    run
}

#[test]
fn a_correct_kernel_passes_isolated_in_every_op() {
    let lib = build(CORRECT, "-O2");
    for op in ["layer_norm", "rms_norm"] {
        let run = fuzz(&lib, op, "gaussian,subnormal,constant", &[]);
        assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
        assert!(run.findings().is_empty());
    }
}

#[test]
fn ending_the_process_is_a_finding_not_a_verdict() {
    for variant in [EXIT_0, EXIT_1, EXIT_2] {
        let status = variant - 1;
        let run = assert_finding(
            variant,
            "",
            "gaussian",
            "exited",
            &format!("exit status {status}"),
        );
        // Three consecutive exits stop the kernel: the rest are not run.
        let report = run.json();
        assert!(report["not_run"].as_u64().unwrap() > 0, "{}", run.stdout);
    }
}

#[test]
fn crashes_are_findings_with_their_signal_and_place() {
    assert_finding(SEGV, "", "gaussian", "crashed", "SIGSEGV");
    assert_finding(ABORT, "", "gaussian", "crashed", "SIGABRT");
    assert_finding(INT_DIV_ZERO, "", "gaussian", "crashed", "SIGFPE");
    assert_finding(SIGKILL_SELF, "", "gaussian", "crashed", "SIGKILL");
    assert_finding(STACK_OVERFLOW, "", "gaussian", "crashed", "SIGSEGV");
    assert_finding(DATA_SYMBOL, "", "gaussian", "crashed", "SIG");
    assert_finding(
        CTOR_CRASH,
        "",
        "gaussian",
        "crashed",
        "while its library was being loaded",
    );
    // glibc's own diagnosis comes with it, as the kernel's output.
    let run = assert_finding(HEAP_OVERFLOW, "-O0", "gaussian", "crashed", "SIGABRT");
    assert!(run.stdout.contains("free"), "{}", run.stdout);
}

#[test]
fn a_crash_on_wide_rows_only_names_those_cases_and_the_rest_pass() {
    let run = assert_finding(SEGV_WIDE, "", "gaussian", "crashed", "SIGSEGV");
    let report = run.json();
    // The narrow cases ran and were judged; only d > 1000 crashed.
    assert!(report["tally"]["judged"].as_u64().unwrap() > 0);
    assert_eq!(report["tally"]["failed"].as_u64().unwrap(), 0);
    let crashed: Vec<u64> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["case"].as_u64().unwrap())
        .collect();
    assert_eq!(crashed.len(), 3, "1024, 1025 and 4096: {crashed:?}");
}

/// The words are x86-64's (MXCSR); AArch64's FPCR changes are found by the same code.
#[test]
#[cfg(target_arch = "x86_64")]
fn floating_point_environment_changes_are_findings() {
    assert_finding(
        LOAD_FTZ_DAZ,
        "",
        "gaussian",
        "fp-environment-at-load",
        "flush-to-zero (FTZ) turned on",
    );
    assert_finding(
        LEAVE_FTZ_DAZ,
        "",
        "gaussian",
        "fp-environment",
        "denormals-are-zero (DAZ) turned on",
    );
    assert_finding(
        LEAVE_TOWARD_ZERO,
        "",
        "gaussian",
        "fp-environment",
        "toward zero",
    );
    assert_finding(
        UNMASK_DIVBYZERO,
        "",
        "gaussian",
        "fp-environment",
        "divide-by-zero",
    );
    // Reading subnormals as 0 under DAZ it set itself: the change is seen, and the outputs are
    // judged in a clean process.
    let run = assert_finding(DAZ_READS_ZERO, "", "subnormal", "fp-environment", "DAZ");
    assert!(run.json()["tally"]["failed"].as_u64().unwrap() > 0);
    // The same misreading without touching the environment fails on its outputs alone.
    let run = fuzz(&build(FLUSH_SUBNORMALS, ""), "layer_norm", "subnormal", &[]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(run.json()["tally"]["failed"].as_u64().unwrap() > 0);
}

/// A correct kernel built with -Ofast: its startup code turns FTZ/DAZ on when loaded (GCC
/// links crtfastmath.o into shared objects built with -Ofast).
#[test]
#[cfg(target_arch = "x86_64")]
fn an_ofast_build_fails_for_its_load_time_ftz() {
    let lib = build(CORRECT, "-Ofast");
    let run = fuzz(&lib, "layer_norm", "gaussian", &[]);
    let findings = run.findings();
    if findings.is_empty() {
        // A toolchain that does not link crtfastmath.o: nothing changed, nothing to see.
        assert_eq!(run.code, Some(0), "{}", run.stdout);
        return;
    }
    assert_eq!(run.code, Some(1));
    assert!(
        findings.iter().any(|(k, _)| k == "fp-environment-at-load"),
        "{findings:?}"
    );
}

#[test]
fn writes_outside_y_and_into_inputs_are_placed() {
    assert_finding(
        PAST_END,
        "",
        "gaussian",
        "wrote-outside",
        "past the end of y",
    );
    assert_finding(
        BEFORE_START,
        "",
        "gaussian",
        "wrote-outside",
        "before the start of y",
    );
    assert_finding(
        WRITE_X,
        "",
        "gaussian",
        "wrote-input",
        "its input x (element 0;",
    );
    assert_finding(WRITE_GAMMA, "", "gaussian", "wrote-input", "its input γ");
    assert_finding(
        WRITE_BETA,
        "",
        "gaussian",
        "wrote-input",
        "its input β (element 0;",
    );
}

#[test]
fn rows_never_written_are_found_whatever_y_held() {
    let run = assert_finding(SKIP_ROWS, "", "gaussian", "unwritten", "never wrote");
    assert!(
        run.findings()[0].1.contains("row 1, col 0"),
        "{:?}",
        run.findings()
    );
    // The poison is judged as the NaN it is: those elements fail too.
    assert!(run.json()["tally"]["failed"].as_u64().unwrap() > 0);
}

#[test]
fn a_thread_writing_y_after_the_call_is_caught() {
    assert_finding(
        LATE_WRITER,
        "",
        "gaussian",
        "late-write",
        "changed after it had returned",
    );
}

#[test]
fn hangs_time_out_and_stop_the_kernel() {
    let run = fuzz(
        &build(HANG, ""),
        "layer_norm",
        "gaussian",
        &["--timeout", "0.5"],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let findings = run.findings();
    assert_eq!(findings.len(), 3, "{findings:?}");
    assert!(findings.iter().all(|(k, _)| k == "timed-out"));
    assert!(findings[2].1.contains("not called on the remaining cases"));
    assert_eq!(run.json()["not_run"].as_u64(), Some(22 - 3));
    assert!(run.elapsed < Duration::from_secs(20), "{:?}", run.elapsed);
    // Only on wide rows: the rest are judged.
    let run = assert_finding(
        HANG_WIDE,
        "",
        "gaussian",
        "timed-out",
        "did not return within",
    );
    assert!(run.json()["tally"]["judged"].as_u64().unwrap() > 0);
}

/// With default settings a kernel that hangs on every case ends the run in well under two
/// minutes (three timeouts of 10 s, then the rest are not run).
#[test]
fn an_always_hanging_kernel_ends_the_default_run_in_under_two_minutes() {
    let lib = build(HANG, "");
    let start = Instant::now();
    let out = fuzz_text(&lib, &["--op", "layer_norm", "--dtype", "f32"]);
    let elapsed = start.elapsed();
    assert_eq!(out.status.code(), Some(1));
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("timed out") && text.contains("not run:"),
        "{text}"
    );
}

/// `--memory-limit` bounds what the kernel may map beyond the worker's own footprint: a
/// kernel wanting 1 GiB a call gets NULL from malloc under 64 MiB (its error return is the
/// finding), and runs under 2048 MiB.
#[test]
fn a_memory_limit_binds_the_kernel_not_the_worker() {
    let lib = build(MEMORY_HOG, "-O2");
    let run = fuzz(&lib, "rms_norm", "constant", &["--memory-limit", "64"]);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let findings = run.findings();
    assert!(
        findings
            .iter()
            .all(|(k, d)| k == "returned-error" && d.contains("returned 12")),
        "{findings:?}"
    );
    let correct = fuzz(
        &build(CORRECT, "-O2"),
        "rms_norm",
        "constant",
        &["--memory-limit", "64"],
    );
    assert_eq!(
        correct.code,
        Some(0),
        "{}\n{}",
        correct.stdout,
        correct.stderr
    );
    let roomy = fuzz(
        &lib,
        "rms_norm",
        "constant",
        &["--memory-limit", "2048", "--case", "66"],
    );
    assert_eq!(roomy.code, Some(0), "{}\n{}", roomy.stdout, roomy.stderr);
}

#[test]
fn a_broken_channel_is_a_finding() {
    assert_finding(CLOSES_CHANNEL, "", "gaussian", "harness", "descriptor");
    assert_finding(WRITES_CHANNEL, "", "gaussian", "harness", "");
}

#[test]
fn correct_kernels_that_print_ignore_signals_close_stdio_or_sleep_still_pass() {
    for variant in [PRINTS, IGNORES_SIGNALS, CLOSES_STDIO] {
        let run = fuzz(&build(variant, ""), "layer_norm", "gaussian,constant", &[]);
        assert_eq!(
            run.code,
            Some(0),
            "variant {variant}: {}\n{}",
            run.stdout,
            run.stderr
        );
        assert!(run.findings().is_empty());
        assert!(!run.stdout.contains("kernel says hello"));
    }
    // Text reports stay clean too.
    let lib = build(PRINTS, "");
    let out = fuzz_text(
        &lib,
        &[
            "--op", "rms_norm", "--dtype", "f32", "--cases", "0", "--family", "constant",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("PASS"));
    // 0.2 s per call: slow, correct, and within the timeout.
    let run = fuzz(&build(SLEEPS, ""), "rms_norm", "constant", &[]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
}

#[test]
fn the_kernel_output_is_shown_with_a_failure() {
    let run = fuzz(&build(ABORT, ""), "layer_norm", "gaussian", &[]);
    assert_eq!(run.code, Some(1));
    let out = fuzz_text(
        &build(HEAP_OVERFLOW, "-O0"),
        &[
            "--op",
            "layer_norm",
            "--dtype",
            "f32",
            "--cases",
            "0",
            "--family",
            "gaussian",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("FAIL"), "{text}");
    assert!(
        text.contains("(gaussian): crashed: SIGABRT (abort)"),
        "{text}"
    );
    assert!(text.contains("    | ") && text.contains("free"), "{text}");
    assert!(text.contains("reproduce: normoracle fuzz --lib"), "{text}");
}

#[test]
fn a_missing_symbol_or_library_is_a_usage_error() {
    let lib = build(CORRECT, "");
    let run = fuzz(&lib, "layer_norm", "gaussian", &["--symbol", "nope"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("symbol 'nope' not found"),
        "{}",
        run.stderr
    );
    let run = fuzz(
        Path::new("/nonexistent/lib.so"),
        "layer_norm",
        "gaussian",
        &[],
    );
    assert_eq!(run.code, Some(2));
    // The worker subcommand refuses to run without the harness's descriptors.
    let out = Command::new(BIN)
        .args(["worker", "--lib"])
        .arg(&lib)
        .args(["--op", "layer_norm", "--dtype", "f32"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `--in-process` keeps the old behaviour for trusted libraries: same verdict on a correct
/// kernel, and (by design) no protection.
#[test]
fn in_process_gives_the_same_verdict_on_a_correct_kernel() {
    let lib = build(CORRECT, "-O2");
    let isolated = fuzz(&lib, "layer_norm", "gaussian,large-mean", &[]);
    let in_process = fuzz(&lib, "layer_norm", "gaussian,large-mean", &["--in-process"]);
    assert_eq!((isolated.code, in_process.code), (Some(0), Some(0)));
    assert_eq!(isolated.json()["tally"], in_process.json()["tally"]);
}
