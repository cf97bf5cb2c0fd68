//! The command line: exit codes (0 pass, 1 the kernel failed, 2 bad input with one line on
//! stderr), never a panic, whatever the input.

use normoracle::npy::{self, NpyArray, NpyData};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_normoracle");

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn save(dir: &Path, name: &str, shape: Vec<usize>, data: NpyData) -> String {
    let p: PathBuf = dir.join(name);
    npy::write(&p, &NpyArray::new(shape, data).unwrap()).unwrap();
    p.display().to_string()
}

fn assert_usage_error(args: &[&str], needle: &str) {
    let (code, _, err) = run(args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: '{err}' lacks '{needle}'");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn reference_then_check_round_trip_and_bad_outputs_fail() {
    let dir = tempfile::tempdir().unwrap();
    let x: Vec<f32> = (0..24).map(|i| ((i * 7) % 11) as f32 - 3.5).collect();
    let xp = save(dir.path(), "x.npy", vec![2, 3, 4], NpyData::F32(x));
    let yp = dir.path().join("y.npy").display().to_string();
    let (code, _, err) = run(&[
        "reference",
        "--op",
        "layer_norm",
        "--dtype",
        "f32",
        "--x",
        &xp,
        "--out",
        &yp,
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = run(&[
        "check",
        "--op",
        "layer_norm",
        "--dtype",
        "f32",
        "--x",
        &xp,
        "--y",
        &yp,
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("24 exact"), "{out}");
    // Perturb one element far beyond any bound: FAIL, exit 1, with a reproducer.
    let mut y = npy::read(Path::new(&yp)).unwrap();
    if let NpyData::F32(v) = &mut y.data {
        v[5] += 0.5;
    }
    npy::write(Path::new(&yp), &y).unwrap();
    let (code, out, _) = run(&[
        "check",
        "--op",
        "layer_norm",
        "--dtype",
        "f32",
        "--x",
        &xp,
        "--y",
        &yp,
        "--json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["passed"], false);
    assert_eq!(v["failures"][0]["row"], 1);
    assert_eq!(v["failures"][0]["col"], 1);
    assert!(v["reproducer"].as_str().unwrap().ends_with("--row 1"));
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let x = save(
        dir.path(),
        "x.npy",
        vec![2, 3],
        NpyData::F32(vec![1.0, 2.0, 4.0, 0.0, f32::NAN, 1.0]),
    );
    let g4 = save(dir.path(), "g4.npy", vec![4], NpyData::F32(vec![1.0; 4]));
    let gnan = save(
        dir.path(),
        "gnan.npy",
        vec![3],
        NpyData::F32(vec![1.0, f32::NAN, 1.0]),
    );
    let empty = save(dir.path(), "d0.npy", vec![3, 0], NpyData::F32(vec![]));
    let x16 = save(
        dir.path(),
        "x16.npy",
        vec![2, 3],
        NpyData::F16(vec![0x3c00; 6]),
    );
    let garbage = dir.path().join("garbage.npy");
    std::fs::write(&garbage, b"\x93NUMPY\x01\x00\xff\xffoops").unwrap();
    let garbage = garbage.display().to_string();
    let out = dir.path().join("y.npy").display().to_string();
    let r = |extra: &[&str]| {
        let mut a = vec![
            "reference",
            "--op",
            "layer_norm",
            "--dtype",
            "f32",
            "--out",
            &out,
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let call = |extra: &[&str], needle: &str| {
        let v = r(extra);
        assert_usage_error(&v.iter().map(String::as_str).collect::<Vec<_>>(), needle);
    };
    call(&["--x", &x, "--eps", "-1e-5"], "eps must not be negative");
    call(&["--x", &x, "--eps", "abc"], "cannot read eps");
    call(&["--x", &x, "--gamma", &g4], "rows of x have d = 3");
    call(&["--x", &x, "--gamma", &gnan], "not finite");
    call(&["--x", &empty], "d = 0");
    call(&["--x", &x16], "needs '<f4'");
    call(&["--x", &garbage], "truncated");
    call(&["--x", "/nonexistent/x.npy"], "cannot read");
    assert_usage_error(
        &[
            "fuzz",
            "--builtin",
            "nope",
            "--op",
            "layer_norm",
            "--dtype",
            "f32",
        ],
        "unknown builtin",
    );
    assert_usage_error(
        &[
            "fuzz",
            "--builtin",
            "reference-f64",
            "--op",
            "layer_norm",
            "--dtype",
            "f32",
            "--family",
            "nope",
        ],
        "unknown family",
    );
    let (code, _, _) = run(&["fuzz", "--op", "layer_norm", "--dtype", "f99"]);
    assert_eq!(code, 2, "clap usage errors exit 2 too");
    // A NaN row is not an error: its outputs are NaN, the other row is normalized.
    let (code, _, err) = run(&r(&["--x", &x])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    let y = npy::read(Path::new(&out)).unwrap().to_f64();
    assert!(y[..3].iter().all(|v| v.is_finite()) && y[3..].iter().all(|v| v.is_nan()));
}

#[test]
fn width_one_rows_are_defined_with_eps_and_undefined_without() {
    let dir = tempfile::tempdir().unwrap();
    let x = save(
        dir.path(),
        "x.npy",
        vec![3, 1],
        NpyData::F64(vec![1.0, -2.0, 0.0]),
    );
    let b = save(dir.path(), "b.npy", vec![1], NpyData::F64(vec![0.25]));
    let out = dir.path().join("y.npy").display().to_string();
    let (code, _, _) = run(&[
        "reference",
        "--op",
        "layer_norm",
        "--dtype",
        "f64",
        "--x",
        &x,
        "--beta",
        &b,
        "--out",
        &out,
    ]);
    assert_eq!(code, 0);
    assert_eq!(npy::read(Path::new(&out)).unwrap().to_f64(), vec![0.25; 3]);
    let (code, _, err) = run(&[
        "reference",
        "--op",
        "layer_norm",
        "--dtype",
        "f64",
        "--eps",
        "0",
        "--x",
        &x,
        "--out",
        &out,
    ]);
    assert_eq!(code, 0);
    assert!(err.contains("3 undefined rows"), "{err}");
}

#[test]
fn builtin_reference_kernel_passes_from_the_cli() {
    let (code, out, _) = run(&[
        "fuzz",
        "--builtin",
        "reference-f64",
        "--op",
        "rms_norm",
        "--dtype",
        "bf16",
        "--cases",
        "10",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["passed"], true);
    assert_eq!(v["cases"], 9 * 22 + 10);
}

/// The records of a short `bench --json` (three samples of a millisecond) with these
/// arguments.
fn bench_records(args: &[&str]) -> Vec<serde_json::Value> {
    let short = ["bench", "--json", "--samples", "3", "--min-sample-ms", "1"];
    let (code, out, err) = run(&[&short[..], args].concat());
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("a JSON array")
}

/// `bench --json`: one record per case with the fields docs/speed.md names; the memcpy's ratio
/// to itself is 1, and each kernel's GB/s is its bytes over its seconds.
#[test]
fn bench_json_records_are_consistent() {
    let records = bench_records(&[
        "--no-candle",
        "--sizes",
        "3x64,1x20",
        "--dtypes",
        "f32,bf16",
    ]);
    // Per size and dtype: memcpy, the floor, LayerNorm, RMSNorm, in that order.
    assert_eq!(records.len(), 2 * 2 * 4, "{records:?}");
    for case in records.chunks(4) {
        let ops: Vec<&str> = case.iter().map(|r| r["op"].as_str().unwrap()).collect();
        assert_eq!(ops, ["copy", "floor", "layer_norm", "rms_norm"], "{case:?}");
    }
    for r in &records {
        let field = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
        let (rows, d, seconds) = (field("rows"), field("d"), field("seconds"));
        let width = if r["dtype"] == "f32" { 4.0 } else { 2.0 };
        let bytes = 2.0 * rows * d * width;
        assert!(seconds > 0.0 && field("threads") >= 1.0, "{r}");
        let gbps = bytes / seconds / 1e9;
        assert!((field("gbps") - gbps).abs() <= 1e-9 * gbps, "{r}");
        let vs_memcpy = field("vs_memcpy");
        assert!(vs_memcpy.is_finite() && vs_memcpy > 0.0, "{r}");
        // The machine that measured it, the same line in every record.
        let cpu = r["cpu"].as_str().unwrap_or_else(|| panic!("cpu in {r}"));
        assert!(!cpu.is_empty() && cpu == records[0]["cpu"], "{r}");
        // The native kernels' ratio to the floor, timed in the same rounds; none for the
        // memcpy and the floor.
        match r["kernel"].as_str().unwrap() {
            "memcpy" => assert_eq!((r["op"].as_str(), vs_memcpy), (Some("copy"), 1.0)),
            "floor" => assert_eq!(r["op"], "floor", "{r}"),
            k => {
                assert!(k.starts_with("native-"), "{r}");
                let vs_floor = field("vs_floor");
                assert!(vs_floor.is_finite() && vs_floor > 0.0, "{r}");
            }
        }
        if !r["kernel"].as_str().unwrap().starts_with("native-") {
            assert!(r["vs_floor"].is_null(), "{r}");
        }
        // No candle-nn, no ratio to it.
        assert!(
            r["vs_candle"].is_null() && r["candle_dtype"].is_null(),
            "{r}"
        );
    }
}

/// With candle-nn, each native record carries its paired ratio to candle-nn's kernel of the
/// same op: the same dtype's, f16's for bf16 (issue 5's yardstick); candle-nn's own
/// records follow ours, in the case's dtype, with no ratio to themselves.
#[cfg(feature = "candle")]
#[test]
fn bench_json_pairs_native_records_with_candle() {
    let records = bench_records(&["--sizes", "2x64", "--dtypes", "f32,f16,bf16"]);
    // Per dtype: memcpy, the floor, then ours and candle-nn's for each of the two ops.
    assert_eq!(records.len(), 3 * 6, "{records:?}");
    for (case, dtype) in records.chunks(6).zip(["f32", "f16", "bf16"]) {
        let kernels: Vec<&str> = case.iter().map(|r| r["kernel"].as_str().unwrap()).collect();
        assert_eq!(kernels[..2], ["memcpy", "floor"]);
        for pair in case[2..].chunks(2) {
            let (ours, theirs) = (&pair[0], &pair[1]);
            assert!(
                ours["kernel"].as_str().unwrap().starts_with("native-"),
                "{ours}"
            );
            assert_eq!(theirs["kernel"], "candle-nn", "{theirs}");
            assert_eq!(
                (&ours["dtype"], &theirs["dtype"]),
                (&dtype.into(), &dtype.into())
            );
            assert_eq!(ours["op"], theirs["op"]);
            let yardstick = if dtype == "bf16" { "f16" } else { dtype };
            assert_eq!(ours["candle_dtype"], yardstick, "{ours}");
            let ratio = ours["vs_candle"]
                .as_f64()
                .unwrap_or_else(|| panic!("{ours}"));
            assert!(ratio.is_finite() && ratio > 0.0, "{ours}");
            assert!(theirs["vs_candle"].is_null() && theirs["candle_dtype"].is_null());
        }
    }
}

/// `benches/runs_table.py` (the docs' tables over several bench runs), on three copies of
/// a real `bench --json` report whose native ratios are set to known values: each target's
/// cell is the median over the runs of our kernel's ratio for its op and size (not the same
/// run's in every cell), in bold where it meets the target; `--ranges` adds [min–max]; the
/// targets without their records (no candle-nn) read "–"; a file that is not a bench
/// report is a one-line error and exit 2.
#[test]
fn runs_table_gives_each_targets_median_over_the_runs() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/runs_table.py");
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("python3 is not here: test not run");
        return;
    }
    let report = bench_records(&["--no-candle", "--sizes", "3x64,1x20", "--dtypes", "f32"]);
    // vs_memcpy of (op, size) in runs 0, 1, 2; the medians are those of runs 2, 0, 1, 1.
    let ratios = |op: &str, d: u64| match (op, d) {
        ("layer_norm", 64) => [0.9, 0.5, 0.7],
        ("layer_norm", _) => [0.6, 0.8, 0.4],
        ("rms_norm", 64) => [0.1, 0.2, 0.3],
        _ => [0.95, 0.85, 0.75],
    };
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..3)
        .map(|k| {
            let mut run = report.clone();
            for r in run.iter_mut().filter(|r| r["kernel"] != "memcpy") {
                let (op, d) = (r["op"].as_str().unwrap(), r["d"].as_u64().unwrap());
                r["vs_memcpy"] = ratios(op, d)[k].into();
            }
            // The floor's own row (medians 0.9 and 0.7), never in bold.
            for r in run.iter_mut().filter(|r| r["kernel"] == "floor") {
                let d = r["d"].as_u64().unwrap();
                r["vs_memcpy"] = [[1.0, 0.9, 0.8], [0.7, 0.6, 0.75]][(d != 64) as usize][k].into();
            }
            // candle-nn's records of the same cases, as `--features candle` adds them, which
            // the targets' cells must leave out.
            let theirs: Vec<serde_json::Value> = run
                .iter()
                .filter(|r| r["kernel"] != "memcpy")
                .map(|r| {
                    let mut r = r.clone();
                    r["kernel"] = "candle-nn".into();
                    r["vs_memcpy"] = 5.0.into();
                    r
                })
                .collect();
            run.extend(theirs);
            let path = dir.path().join(format!("run{k}.json"));
            std::fs::write(&path, serde_json::to_string(&run).unwrap()).unwrap();
            path
        })
        .collect();
    let run_script = |files: &[PathBuf], extra: &[&str]| {
        Command::new("python3")
            .arg(script)
            .args(files)
            .args(extra)
            .output()
            .unwrap()
    };
    let table = |extra: &[&str]| -> String {
        let out = run_script(&paths, extra);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        String::from_utf8(out.stdout).unwrap()
    };
    let csv = table(&["--format", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "target,3 × 64,1 × 20", "{csv}");
    assert!(
        lines.contains(&"f32 LayerNorm ≥ 0.8× memcpy,0.70,0.60"),
        "{csv}"
    );
    assert!(
        lines.contains(&"f32 RMSNorm ≥ 0.8× memcpy,0.20,0.85"),
        "{csv}"
    );
    assert!(lines.contains(&"f32 LayerNorm ≥ 3× candle-nn,–,–"), "{csv}");
    assert!(
        lines.contains(&"f32 floor ×memcpy (no kernel above it),0.90,0.70"),
        "{csv}"
    );
    let markdown = table(&["--ranges"]);
    assert!(
        markdown
            .contains("| f32 RMSNorm ≥ 0.8× memcpy | 0.20 [0.10–0.30] | **0.85 [0.75–0.95]** |"),
        "{markdown}"
    );
    assert!(
        markdown.contains(
            "| f32 floor ×memcpy (no kernel above it) | 0.90 [0.80–1.00] | 0.70 [0.60–0.75] |"
        ),
        "{markdown}"
    );

    let not_a_report = dir.path().join("not_a_report.json");
    std::fs::write(&not_a_report, "{\"cases\": 3}").unwrap();
    let bad = run_script(&[not_a_report], &[]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `fuzz --builtin native --json` writes the same bytes whatever the thread count (what
/// `benches/cross_machine.py` relies on to compare machines by a hash of the report), and
/// every judged element is the correctly rounded value.
#[test]
fn native_fuzz_report_is_the_same_bytes_at_any_thread_count() {
    for (op, dtype) in [("layer_norm", "f16"), ("rms_norm", "f32")] {
        let report = |threads: &str| {
            let out = Command::new(BIN)
                .args([
                    "fuzz",
                    "--builtin",
                    "native",
                    "--op",
                    op,
                    "--dtype",
                    dtype,
                    "--cases",
                    "60",
                    "--seed",
                    "7",
                    "--json",
                ])
                .env("RAYON_NUM_THREADS", threads)
                .output()
                .expect("runs");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{op} {dtype} on {threads} threads"
            );
            out.stdout
        };
        let one = report("1");
        assert_eq!(one, report("3"), "{op} {dtype}: 1 and 3 threads");
        let v: serde_json::Value = serde_json::from_slice(&one).unwrap();
        assert_eq!(v["passed"], true);
        assert!(v["tally"]["judged"].as_u64().unwrap() > 0, "{v}");
        assert_eq!(v["tally"]["exact"], v["tally"]["judged"], "{op} {dtype}");
    }
}

/// `--require`: the native kernels meet `exact` on the battery; reference-f64 (an f64 kernel
/// rounding once) meets the bound but not `exact`; a malformed standard is a usage error.
#[test]
fn require_sets_the_standard_and_the_exit_code() {
    for dtype in ["f32", "f16", "bf16"] {
        for op in ["layer_norm", "rms_norm"] {
            let args = [
                "fuzz",
                "--builtin",
                "native",
                "--op",
                op,
                "--dtype",
                dtype,
                "--cases",
                "5",
                "--require",
                "exact",
            ];
            let (code, out, err) = run(&args);
            assert_eq!(code, 0, "{args:?}: {out}{err}");
            assert!(out.contains("required: exact"), "{out}");
        }
    }
    let reference = |standard: &str| {
        run(&[
            "fuzz",
            "--builtin",
            "reference-f64",
            "--op",
            "layer_norm",
            "--dtype",
            "f32",
            "--cases",
            "0",
            "--seed",
            "2024",
            "--require",
            standard,
            "--json",
        ])
    };
    let (code, out, _) = reference("exact");
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["standard"], "exact");
    assert_eq!(v["passed"], false);
    assert_eq!(v["within_bound_everywhere"], true);
    assert_eq!(reference("bound").0, 0);
    assert_eq!(reference("ulp:1000").0, 0);
    let (code, _, err) = run(&[
        "fuzz",
        "--builtin",
        "native",
        "--op",
        "layer_norm",
        "--dtype",
        "f32",
        "--require",
        "ulp:x",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("expected exact, faithful, ulp:N or bound"),
        "{err}"
    );
}

/// The first probe end to end: a constant f16 row of 10000 (d = 768, ε = 1e-6), whose
/// exact outputs are 0: 0.39 and 3.0 everywhere FAIL (exit 1, "wrong" for 3.0, past the
/// output scale |γ| + |β| = 1), exact zeros PASS (exit 0). The κ-based bound passed both.
#[test]
fn a_constant_row_with_wrong_outputs_fails_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let f16 = |v: f32| half::f16::from_f32(v).to_bits();
    let x = save(
        dir.path(),
        "x.npy",
        vec![1, 768],
        NpyData::F16(vec![f16(10000.0); 768]),
    );
    let check = |value: f32| {
        let y = save(
            dir.path(),
            "y.npy",
            vec![1, 768],
            NpyData::F16(vec![f16(value); 768]),
        );
        run(&[
            "check",
            "--op",
            "layer_norm",
            "--dtype",
            "f16",
            "--eps",
            "1e-6",
            "--x",
            &x,
            "--y",
            &y,
        ])
    };
    let (code, out, err) = check(0.0);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = check(0.39);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("768 FAIL (0 off-model, 768 inaccurate, 0 wrong)"),
        "{out}"
    );
    let (code, out, _) = check(3.0);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("768 wrong") && out.contains("# wrong"),
        "{out}"
    );
}

/// A cases directory judged case by case: `cases` keeps only the families and ε asked for;
/// `check DIR --json` gives each case's verdict and the failing case's reproducer
/// `check DIR --op … --dtype … --case ID`, which judges that case alone; a family whose
/// failure is a NaN shows max ULP "NaN/∞" (never 0) and its error in units of B and of the
/// output scale.
#[test]
fn a_cases_directory_is_judged_case_by_case() {
    use normoracle::manifest;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cases");
    let dir_arg = dir.display().to_string();
    let (code, _, err) = run(&[
        "cases",
        "--out",
        &dir_arg,
        "--op",
        "rms_norm",
        "--dtype",
        "f32",
        "--family",
        "gaussian,constant",
        "--eps-range",
        "1e-6..",
        "--seed",
        "3",
    ]);
    assert_eq!(code, 0, "{err}");
    let listed = manifest::read_manifest(&dir).unwrap().cases;
    assert!(!listed.is_empty());
    for c in &listed {
        assert!(
            ["gaussian", "constant"].contains(&c.family.as_str()),
            "{c:?}"
        );
        assert!(c.eps >= 1e-6f32, "{c:?}");
    }
    // A driver writing the correctly rounded outputs, but a NaN in one case.
    let (_, cases) = manifest::read_cases(&dir).unwrap();
    let victim = cases.iter().find(|c| c.family == "gaussian").unwrap().id;
    for c in &cases {
        let mut y = normoracle::exact::reference(&c.problem).unwrap().y;
        if c.id == victim {
            y[0] = f32::NAN.to_bits() as u64;
        }
        let shape = vec![c.problem.rows, c.problem.d];
        let array = npy::from_bits(shape, c.problem.dtype, &y).unwrap();
        npy::write(&dir.join(&c.y_file), &array).unwrap();
    }
    let (code, out, _) = run(&["check", &dir_arg, "--json"]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let report = &v["reports"][0];
    let per_case = report["per_case"].as_array().unwrap();
    assert_eq!(per_case.len(), cases.len());
    for c in per_case {
        assert_eq!(c["passed"], c["case"] != victim, "{c}");
    }
    let reproducer = report["reproducer"].as_str().unwrap();
    let expected = format!("check {dir_arg} --op rms_norm --dtype f32 --case {victim}");
    assert!(reproducer.ends_with(&expected), "{reproducer}");
    assert!(
        report["failures"][0]["bound_units"].is_null(),
        "∞ in JSON: {report}"
    );
    let (code, text, _) = run(&["check", &dir_arg]);
    assert_eq!(code, 1);
    assert!(
        text.contains(&format!("failing cases: 1 of {}: {victim}", cases.len())),
        "{text}"
    );
    assert!(
        text.contains("NaN/∞") && !text.contains("max ULP 0,"),
        "{text}"
    );
    // The reproducer judges that case alone; another case passes alone.
    let one = |id: usize| {
        let id = id.to_string();
        run(&[
            "check", &dir_arg, "--op", "rms_norm", "--dtype", "f32", "--case", &id,
        ])
    };
    let (code, text, _) = one(victim);
    assert_eq!(code, 1);
    assert!(text.contains(", 1 cases"), "{text}");
    let other = cases.iter().find(|c| c.id != victim).unwrap().id;
    assert_eq!(one(other).0, 0);
    assert_usage_error(&["check", &dir_arg, "--case", "99999"], "no case 99999");
    // A filter that keeps nothing is a usage error, as is a malformed range.
    let empty = tmp.path().join("empty").display().to_string();
    assert_usage_error(
        &[
            "cases",
            "--out",
            &empty,
            "--eps-range",
            "1e3..",
            "--op",
            "rms_norm",
        ],
        "keep no case",
    );
    assert_usage_error(
        &["cases", "--out", &empty, "--eps-range", "1..0"],
        "LO ≤ HI",
    );
}

/// `--domain` on `check` and in a manifest: a row of |x| = 1e30 with wrong outputs fails the
/// whole reading and passes `--domain absx=..1e4`, where it is reported apart; `cases
/// --domain` records the domain, which `check DIR` then applies; a malformed domain is a
/// usage error.
#[test]
fn a_declared_domain_decides_the_cli_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let rows: [[f32; 4]; 2] = [[1.0, 2.0, 3.0, 4.0], [1e30, -2e30, 3e30, 4e30]];
    let x: Vec<f32> = rows.concat();
    let x_path = save(tmp.path(), "x.npy", vec![2, 4], NpyData::F32(x.clone()));
    let problem = normoracle::problem::Problem {
        op: normoracle::problem::Op::RmsNorm,
        dtype: normoracle::Dtype::F32,
        eps: normoracle::problem::Eps::from_f32(1e-5).unwrap(),
        convention: normoracle::problem::EpsConvention::Inside,
        rows: 2,
        d: 4,
        x: x.iter().map(|v| v.to_bits() as u64).collect(),
        gamma: None,
        beta: None,
    };
    let mut y: Vec<f32> = normoracle::exact::reference(&problem)
        .unwrap()
        .y
        .iter()
        .map(|&b| f32::from_bits(b as u32))
        .collect();
    y[5] = -y[5]; // the large row's second output, sign flipped
    let y_path = save(tmp.path(), "y.npy", vec![2, 4], NpyData::F32(y.clone()));
    let check = |extra: &[&str]| {
        let mut args = vec![
            "check", "--op", "rms_norm", "--dtype", "f32", "--x", &x_path, "--y", &y_path,
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    assert_eq!(check(&[]).0, 1);
    let (code, out, _) = check(&["--domain", "absx=..1e4"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("domain: absx=..1e4") && out.contains("would FAIL"),
        "{out}"
    );
    let (code, out, _) = check(&["--domain", "absx=..1e4", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["passed"], true);
    assert_eq!(v["domain"], "absx=..1e4");
    assert_eq!(v["outside_domain"]["passed"], false);
    assert_eq!(v["outside_domain"]["tally"]["wrong"], 1);
    // A wrong output inside the domain fails it.
    y[1] *= 1.5;
    save(tmp.path(), "y.npy", vec![2, 4], NpyData::F32(y));
    let (code, out, _) = check(&["--domain", "absx=..1e4"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("--domain absx=..1e4"),
        "the reproducer keeps it: {out}"
    );
    assert_usage_error(
        &[
            "check",
            "--op",
            "rms_norm",
            "--dtype",
            "f32",
            "--x",
            &x_path,
            "--y",
            &y_path,
            "--domain",
            "size=1..2",
        ],
        "--domain clause 'size=1..2'",
    );
    // Recorded by `cases`, applied by `check DIR`.
    let dir = tmp.path().join("cases");
    let dir_arg = dir.display().to_string();
    let (code, _, err) = run(&[
        "cases",
        "--out",
        &dir_arg,
        "--op",
        "rms_norm",
        "--dtype",
        "f32",
        "--domain",
        "eps=1e-5..",
    ]);
    assert_eq!(code, 0, "{err}");
    let manifest = normoracle::manifest::read_manifest(&dir).unwrap();
    assert_eq!(manifest.domain.as_deref(), Some("eps=1e-5.."));
}

/// `zoo --require`: a table that exits 0 by default; held to a standard, it exits 1 exactly
/// when some kernel's verdict on its declared domain is FAIL (with the candle feature, candle's
/// builtins are rows too). reference-f64 (one rounding from f64) misses `exact` in layer_norm
/// f32 on both readings, and in f16 only outside the domain; native meets it everywhere.
#[test]
fn zoo_require_sets_the_exit_code() {
    let zoo = |dtype: &str, extra: &[&str]| {
        let mut args = vec![
            "zoo",
            "--builtins-only",
            "--cases",
            "0",
            "--seed",
            "2024",
            "--op",
            "layer_norm",
            "--dtype",
            dtype,
            "--format",
            "csv",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    // The exit code a table calls for: 1 when a row's verdict_in_domain (5th column) is FAIL.
    let expected_code = |csv: &str| {
        let failing = csv
            .lines()
            .filter(|l| !l.starts_with('#'))
            .any(|l| l.split(',').nth(4) == Some("FAIL"));
        i32::from(failing)
    };
    let (code, out, err) = zoo("f32", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("verdict,verdict_in_domain"), "{out}");
    let (code, out, _) = zoo("f32", &["--require", "bound"]);
    assert_eq!(code, expected_code(&out), "{out}");
    assert!(
        out.contains("reference-f64,layer_norm,f32,pass,pass"),
        "{out}"
    );
    let (code, out, _) = zoo("f32", &["--require", "exact"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("reference-f64,layer_norm,f32,FAIL,FAIL"),
        "{out}"
    );
    assert!(out.contains("native,layer_norm,f32,pass,pass"), "{out}");
    let (code, out, _) = zoo("f16", &["--require", "exact"]);
    assert_eq!(code, expected_code(&out), "{out}");
    assert!(
        out.contains("reference-f64,layer_norm,f16,FAIL,pass"),
        "{out}"
    );
    assert!(out.contains("native,layer_norm,f16,pass,pass"), "{out}");
    // The whole battery as the domain: the f16 miss counts.
    let (code, out, _) = zoo("f16", &["--require", "exact", "--domain", ""]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("reference-f64,layer_norm,f16,FAIL,FAIL"),
        "{out}"
    );
}
