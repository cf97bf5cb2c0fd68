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
    // (library, what it is, which (op, dtype) pairs it must fail). The correct kernels fail
    // none; a bug in the mean cannot show in RMSNorm, which has none; an f32 overflow cannot
    // happen with f16 inputs, whose squares fit in f32.
    type Applies = fn(&str, &str) -> bool;
    let none: Applies = |_, _| false;
    let all: Applies = |_, _| true;
    let layer_norm_only: Applies = |op, _| op == "layer_norm";
    let mut libs: Vec<(PathBuf, String, Applies)> = vec![(
        build(example, None, dir.path()),
        "correct kernel example".to_string(),
        none,
    )];
    for v in [1, 2, 3] {
        libs.push((
            build(zoo, Some(v), dir.path()),
            format!("correct kernel zoo {v}"),
            none,
        ));
    }
    let bugs: [(u32, &str, Applies); 10] = [
        (10, "one-pass variance", |op, dt| {
            op == "layer_norm" || dt != "f16"
        }),
        (11, "eps outside the root", all),
        (12, "unbiased (d-1) variance", all),
        (13, "no mean subtraction", layer_norm_only),
        (14, "SIMD tail dropped", all),
        (15, "gamma/beta misindexed", all),
        (16, "statistics leak across rows", layer_norm_only),
        (17, "f32 sums overflow", |_, dt| dt != "f16"),
        (18, "sums of squares in the storage format", all),
        (19, "kernel returns an error", all),
    ];
    for (v, what, applies) in bugs {
        libs.push((build(zoo, Some(v), dir.path()), what.to_string(), applies));
    }
    let jobs: Vec<(&Path, &str, &str, &str, i32)> = libs
        .iter()
        .flat_map(|(lib, what, applies)| {
            OPS.iter().flat_map(move |&op| {
                DTYPES.iter().map(move |&dt| {
                    let want = if applies(op, dt) { 1 } else { 0 };
                    (lib.as_path(), what.as_str(), op, dt, want)
                })
            })
        })
        .collect();
    // Each run is one process that mostly waits on one core: as many at once as there are
    // cores (CI's 2 halve this test), each judged here in the jobs' order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut results: Vec<(usize, (i32, String))> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&(lib, _, op, dt, _)) = jobs.get(k) else {
                            return done;
                        };
                        done.push((k, fuzz(lib, op, dt, &[])));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    });
    results.sort_by_key(|(k, _)| *k);
    assert_eq!(results.len(), jobs.len());
    for ((_, (code, out)), (_, what, op, dt, want)) in results.into_iter().zip(&jobs) {
        assert_eq!(code, *want, "{what} ({op} {dt}) exit code:\n{out}");
        if *want == 1 {
            assert!(
                out.contains("reproduce: normoracle fuzz"),
                "a failure prints its reproducer"
            );
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

/// The zoo over shared libraries (`zoo --lib LABEL=PATH`), from a battery without random cases.
fn zoo_lib_rows(label: &str, lib: &Path) -> Vec<normoracle::zoo::ZooRow> {
    use normoracle::zoo::{self, ZooConfig};
    let cfg = ZooConfig {
        seed: 11,
        ops: normoracle::problem::Op::ALL.to_vec(),
        dtypes: zoo::ZOO_DTYPES.to_vec(),
        random_cases: 0,
        builtins: Vec::new(),
        c_example: None,
        c_libs: vec![(label.to_string(), lib.to_path_buf())],
        python_drivers: Vec::new(),
        progress: false,
        standard: normoracle::judge::Standard::Bound,
        domain: normoracle::domain::Domain::typical(),
    };
    zoo::run(&cfg).unwrap()
}

/// A library that exports some of the ABI's entry points gets rows for those, and
/// "unsupported" for the others (ggml's norms exist in f32 only).
#[test]
fn zoo_libs_without_an_entry_point_read_unsupported() {
    use normoracle::zoo::ZooVerdict;
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("rms_f32.c");
    std::fs::write(
        &source,
        "#include <math.h>\n#include <stddef.h>\n\
         int normoracle_rms_norm_f32(const float *x, const float *g, float *y, size_t rows,\n\
                                     size_t d, float eps) {\n\
             for (size_t r = 0; r < rows; r++) {\n\
                 double s = 0;\n\
                 for (size_t i = 0; i < d; i++) s += (double)x[r*d+i] * x[r*d+i];\n\
                 double inv = 1.0 / sqrt(s / (double)d + (double)eps);\n\
                 for (size_t i = 0; i < d; i++) y[r*d+i] = (float)(x[r*d+i] * inv * (g ? g[i] : 1.0));\n\
             }\n\
             return 0;\n\
         }\n",
    )
    .unwrap();
    let lib = dir.path().join("librms.so");
    let status = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&source)
        .arg("-lm")
        .status()
        .expect("cc runs");
    assert!(status.success());
    let rows = zoo_lib_rows("rms only", &lib);
    assert_eq!(rows.len(), 6, "{rows:?}");
    for r in &rows {
        let expected = if r.op.name() == "rms_norm" && r.dtype.name() == "f32" {
            ZooVerdict::Pass
        } else {
            ZooVerdict::Unsupported
        };
        assert_eq!(r.verdict, expected, "{r:?}");
        assert!(r.reproducer.contains("--lib "), "{r:?}");
    }
}

/// ggml's CPU ggml_norm / ggml_rms_norm (scripts/ggml_shim.sh builds the shim; the test does
/// not run where it has not been built): f32 only, and the squares are summed in f32 without
/// scaling, so x = [2^64, −2^64] gives 0 for ±1 in both ops.
#[test]
fn ggml_fails_f32_on_overflowing_squares() {
    use normoracle::zoo::ZooVerdict;
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ggml/libnormoracle_ggml.so");
    if !lib.is_file() {
        eprintln!(
            "{} not built (scripts/ggml_shim.sh): test not run",
            lib.display()
        );
        return;
    }
    let rows = zoo_lib_rows("ggml", &lib);
    assert_eq!(rows.len(), 6, "{rows:?}");
    for r in &rows {
        if r.dtype.name() != "f32" {
            assert_eq!(r.verdict, ZooVerdict::Unsupported, "{r:?}");
            continue;
        }
        assert_eq!(r.verdict, ZooVerdict::Fail, "{r:?}");
        assert!(
            r.findings
                .iter()
                .any(|f| f.starts_with("Σx² overflows f32") && f.ends_with("gives 0 for 1")),
            "{r:?}"
        );
    }
}
