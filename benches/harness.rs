//! The isolated harness's cost: `normoracle fuzz --lib` over the default battery with a
//! correct kernel (examples/c/normoracle_example.c), in the isolated worker and
//! `--in-process`, timed in alternation in the same run (the order flips every round), per op
//! and dtype. Prints each mode's median wall time and range, and the ratio isolated /
//! in-process (median of the per-round ratios, and their range).
//!
//!   cargo bench --bench harness                 # 7 rounds
//!   NORMORACLE_BENCH_ROUNDS=15 cargo bench --bench harness

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_normoracle");

fn compile_example(dir: &Path) -> PathBuf {
    let lib = dir.join("libexample.so");
    let source = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/c/normoracle_example.c"
    );
    let status = Command::new("cc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(source)
        .arg("-lm")
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed");
    lib
}

/// One `fuzz --lib` run's wall time in seconds (it must pass).
fn run(lib: &Path, op: &str, dtype: &str, in_process: bool) -> f64 {
    let mut command = Command::new(BIN);
    command
        .args(["fuzz", "--lib"])
        .arg(lib)
        .args(["--op", op, "--dtype", dtype, "--seed", "1", "--json"]);
    if in_process {
        command.arg("--in-process");
    }
    let start = Instant::now();
    let out = command.output().expect("normoracle runs");
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{op} {dtype} in_process={in_process}"
    );
    seconds
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let rounds: usize = std::env::var("NORMORACLE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let dir = std::env::temp_dir().join(format!("normoracle-bench-harness-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = compile_example(&dir);
    println!(
        "fuzz --lib over the default battery (seed 1, 200 random cases), {rounds} rounds, isolated and --in-process alternating"
    );
    println!(
        "{:<22} {:>22} {:>22} {:>24}",
        "op dtype", "isolated s (range)", "in-process s (range)", "ratio median (range)"
    );
    for (op, dtype) in [
        ("layer_norm", "f32"),
        ("rms_norm", "f32"),
        ("layer_norm", "f16"),
        ("layer_norm", "bf16"),
    ] {
        let (mut isolated, mut in_process, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            let (a, b) = if round % 2 == 0 {
                let a = run(&lib, op, dtype, false);
                (a, run(&lib, op, dtype, true))
            } else {
                let b = run(&lib, op, dtype, true);
                (run(&lib, op, dtype, false), b)
            };
            isolated.push(a);
            in_process.push(b);
            ratios.push(a / b);
        }
        let range = |v: &[f64]| {
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(0.0, f64::max);
            (min, max)
        };
        let (ri, rp, rr) = (range(&isolated), range(&in_process), range(&ratios));
        println!(
            "{:<22} {:>8.3} ({:.3}-{:.3}) {:>8.3} ({:.3}-{:.3}) {:>8.3} ({:.3}-{:.3})",
            format!("{op} {dtype}"),
            median(&mut isolated),
            ri.0,
            ri.1,
            median(&mut in_process),
            rp.0,
            rp.1,
            median(&mut ratios),
            rr.0,
            rr.1
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
