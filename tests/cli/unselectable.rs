//! `normoracle unselectable ...` end to end: exit codes (0 all selectable, 1 some
//! unselectable, 2 bad input), JSON shape, determinism of the figure.

use normoracle::npy::{self, NpyArray, NpyData};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_normoracle"))
}

fn write(dir: &Path, name: &str, shape: Vec<usize>, data: Vec<f64>) -> PathBuf {
    let path = dir.join(name);
    npy::write(&path, &NpyArray::new(shape, NpyData::F64(data)).unwrap()).unwrap();
    path
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).expect("valid JSON on stdout")
}

/// A square's corners and its centre (key 4).
fn square(dir: &Path) -> PathBuf {
    write(
        dir,
        "square.npy",
        vec![5, 2],
        vec![0., 0., 2., 0., 0., 2., 2., 2., 1., 1.],
    )
}

#[test]
fn check_exit_codes_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let sq = square(dir.path());
    let o = run(&["unselectable", "check", sq.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 1, "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["unselectable"], serde_json::json!([4]));
    let cert = &v["keys"][4]["certificate"];
    assert_eq!(cert["kind"], "hull");
    let total: f64 = cert["weights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            let s = w["weight"].as_str().unwrap();
            match s.split_once('/') {
                Some((a, b)) => a.parse::<f64>().unwrap() / b.parse::<f64>().unwrap(),
                None => s.parse().unwrap(),
            }
        })
        .sum();
    assert_eq!(total, 1.0);
    assert_eq!(v["keys"][0]["certificate"]["kind"], "query");

    // Corners only: all selectable.
    let corners = write(
        dir.path(),
        "corners.npy",
        vec![4, 2],
        vec![0., 0., 2., 0., 0., 2., 2., 2.],
    );
    let o = run(&["unselectable", "check", corners.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 0);
    assert_eq!(json(&o)["unselectable"], serde_json::json!([]));

    // Text output names the unselectable key and its weights.
    let o = run(&["unselectable", "check", sq.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("1 unselectable (4)") && text.contains("key 4: unselectable"),
        "{text}"
    );
}

#[test]
fn biases_can_make_the_centre_selectable() {
    let dir = tempfile::tempdir().unwrap();
    let sq = square(dir.path());
    let b = write(dir.path(), "b.npy", vec![5], vec![0., 0., 0., 0., 3.]);
    let o = run(&[
        "unselectable",
        "check",
        sq.to_str().unwrap(),
        "--bias",
        b.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let low = write(dir.path(), "low.npy", vec![5], vec![0., 0., 0., 0., -3.]);
    let o = run(&[
        "unselectable",
        "check",
        sq.to_str().unwrap(),
        "--bias",
        low.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 1);
}

#[test]
fn normalized_keys_and_the_eps_counterexample() {
    let dir = tempfile::tempdir().unwrap();
    let d = 1.0 / 512.0;
    let keys = write(
        dir.path(),
        "eps.npy",
        vec![4, 3],
        vec![2., -1., -1., -1., 2., -1., -1., -1., 2., d, 0., -d],
    );
    let k = keys.to_str().unwrap();
    assert_eq!(
        code(&run(&["unselectable", "check", k, "--norm", "layernorm"])),
        0
    );
    let o = run(&[
        "unselectable",
        "check",
        k,
        "--norm",
        "layernorm-eps=1e-5",
        "--json",
    ]);
    assert_eq!(code(&o), 1);
    let v = json(&o);
    assert_eq!(v["unselectable"], serde_json::json!([3]));
    assert_eq!(v["keys"][3]["certificate"]["kind"], "scaled-hull");
    // Without normalization the small key sits inside the triangle anyway.
    assert_eq!(code(&run(&["unselectable", "check", k])), 1);
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.npy");
    std::fs::write(&garbage, b"not an npy file").unwrap();
    let flat = write(dir.path(), "flat.npy", vec![4], vec![1., 2., 3., 4.]);
    let nan = write(
        dir.path(),
        "nan.npy",
        vec![2, 2],
        vec![1., f64::NAN, 0., 0.],
    );
    let sq = square(dir.path());
    let short_bias = write(dir.path(), "b.npy", vec![3], vec![0., 0., 0.]);
    let constant = write(
        dir.path(),
        "c.npy",
        vec![2, 3],
        vec![5., 5., 5., 1., 2., 3.],
    );
    let missing = dir.path().join("missing.npy");
    let cases: Vec<Vec<&str>> = vec![
        vec!["unselectable", "check", garbage.to_str().unwrap()],
        vec!["unselectable", "check", flat.to_str().unwrap()],
        vec!["unselectable", "check", nan.to_str().unwrap()],
        vec![
            "unselectable",
            "check",
            sq.to_str().unwrap(),
            "--bias",
            short_bias.to_str().unwrap(),
        ],
        vec![
            "unselectable",
            "check",
            constant.to_str().unwrap(),
            "--norm",
            "layernorm",
        ],
        vec![
            "unselectable",
            "check",
            sq.to_str().unwrap(),
            "--norm",
            "batchnorm",
        ],
        vec!["unselectable", "check", missing.to_str().unwrap()],
        vec!["unselectable", "figure", "--d", "3..x"],
        vec!["unselectable", "figure", "--runs", "0"],
        vec!["unselectable", "figure", "--format", "xml"],
    ];
    for args in cases {
        let o = run(&args);
        assert_eq!(
            code(&o),
            2,
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn figure_csv_is_deterministic_with_both_readings() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("fig.svg");
    let args = [
        "unselectable",
        "figure",
        "--d",
        "2..3",
        "--n",
        "3..8",
        "--runs",
        "5",
        "--seed",
        "9",
        "--format",
        "csv",
        "--quiet",
        "--svg",
        svg.to_str().unwrap(),
    ];
    let a = run(&args);
    let b = run(&args);
    assert_eq!(code(&a), 0, "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    let text = String::from_utf8(a.stdout).unwrap();
    let mut lines = text.lines().skip_while(|l| l.starts_with('#'));
    assert_eq!(
        lines.next(),
        Some("d,n,runs,p_any_unselectable,mean_fraction_unselectable")
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 2 * 6);
    for r in &rows {
        // p_any ≥ mean fraction, both in [0, 1].
        assert!(r[3] >= r[4] && r[4] >= 0.0 && r[3] <= 1.0, "{r:?}");
    }
    assert!(text.contains("seed 9"));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

#[test]
fn bench_and_sample_run() {
    let o = run(&[
        "unselectable",
        "bench",
        "--d",
        "3",
        "--n",
        "20",
        "--quiet",
        "--format",
        "csv",
    ]);
    assert_eq!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stdout).contains("us_per_key"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.npy");
    let o = run(&[
        "unselectable",
        "sample",
        "--d",
        "4",
        "--n",
        "7",
        "--run",
        "2",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0);
    let a = npy::read(&out).unwrap();
    assert_eq!(a.shape, vec![7, 4]);
}
