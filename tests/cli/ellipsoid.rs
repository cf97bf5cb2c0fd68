//! `normoracle ellipsoid`: exit codes, the JSON object, bad input.

use normoracle::npy::{self, NpyArray, NpyData};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_normoracle"))
}

fn write(dir: &Path, name: &str, shape: Vec<usize>, data: Vec<f64>) -> PathBuf {
    let p = dir.join(name);
    npy::write(&p, &NpyArray::new(shape, NpyData::F64(data)).unwrap()).unwrap();
    p
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run normoracle")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn norm(v: &serde_json::Value) -> f64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap().powi(2))
        .sum::<f64>()
        .sqrt()
}

fn one_line_error(out: &Output, needle: &str) {
    assert_eq!(
        out.status.code(),
        Some(2),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{err}");
}

#[test]
fn json_has_unit_normal_unit_axes_and_descending_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let g = write(dir.path(), "g.npy", vec![4], vec![2.0, 9.0, 12.0, 13.0]);
    let b = write(dir.path(), "b.npy", vec![4], vec![1.0, -1.0, 0.5, 0.0]);
    for args in [
        vec![
            "ellipsoid",
            "--gain",
            g.to_str().unwrap(),
            "--bias",
            b.to_str().unwrap(),
            "--json",
        ],
        vec![
            "ellipsoid",
            "axes",
            "--gain",
            g.to_str().unwrap(),
            "--json",
            "--eps",
            "0",
        ],
    ] {
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j = json(&out);
        assert!((norm(&j["normal"]) - 1.0).abs() < 1e-15);
        // The normal is along 1/g.
        let normal: Vec<f64> = j["normal"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert!((normal[0] / normal[1] - 4.5).abs() < 1e-12);
        let axes = j["axes"].as_array().unwrap();
        let lengths: Vec<f64> = j["semi_axes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(axes.len(), 3);
        assert_eq!(lengths.len(), 3);
        assert!(lengths.windows(2).all(|w| w[0] > w[1]));
        // √632, √436, √126.
        for (l, want) in lengths.iter().zip([632f64, 436.0, 126.0]) {
            assert!((l - want.sqrt()).abs() < 1e-12, "{l}");
        }
        for a in axes {
            assert!((norm(a) - 1.0).abs() < 1e-14);
            let dot: f64 = a
                .as_array()
                .unwrap()
                .iter()
                .zip(&normal)
                .map(|(x, n)| x.as_f64().unwrap() * n)
                .sum();
            assert!(dot.abs() < 1e-14, "axis not in the hyperplane: {dot}");
        }
        assert_eq!(j["verification"]["verified"], true);
        assert_eq!(j["verification"]["exact"]["zeta_counts_match"], true);
    }
}

#[test]
fn zero_gains_report_the_normal_space_and_the_drazin_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let g = write(dir.path(), "g.npy", vec![3], vec![1.0, 1.0, 0.0]);
    let out = run(&["ellipsoid", "--gain", g.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let j = json(&out);
    // One zero gain: the normal is e_3.
    assert_eq!(j["normal"], serde_json::json!([0.0, 0.0, 1.0]));
    assert_eq!(j["normal_space"], serde_json::json!([[0.0, 0.0, 1.0]]));
    let lengths: Vec<f64> = j["semi_axes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(
        (lengths[0] - 3f64.sqrt()).abs() < 1e-14 && (lengths[1] - 1.0).abs() < 1e-14,
        "{lengths:?}"
    );
    assert!(j["drazin_semi_axes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| (x.as_f64().unwrap() - 3f64.sqrt()).abs() < 1e-14));
    // Two zero gains: no single normal.
    let g2 = write(dir.path(), "g2.npy", vec![4], vec![1.0, 0.0, 2.0, 0.0]);
    let j2 = json(&run(&[
        "ellipsoid",
        "--gain",
        g2.to_str().unwrap(),
        "--json",
    ]));
    assert!(j2["normal"].is_null());
    assert_eq!(j2["normal_space"].as_array().unwrap().len(), 2);
    assert_eq!(j2["axes"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let nan = write(dir.path(), "nan.npy", vec![3], vec![1.0, f64::NAN, 2.0]);
    one_line_error(
        &run(&["ellipsoid", "--gain", nan.to_str().unwrap()]),
        "not finite",
    );
    let g = write(dir.path(), "g.npy", vec![3], vec![1.0, 2.0, 3.0]);
    let b4 = write(dir.path(), "b4.npy", vec![4], vec![0.0; 4]);
    one_line_error(
        &run(&[
            "ellipsoid",
            "--gain",
            g.to_str().unwrap(),
            "--bias",
            b4.to_str().unwrap(),
        ]),
        "bias has length 4",
    );
    let two_rows = write(dir.path(), "rows.npy", vec![2, 3], vec![1.0; 6]);
    one_line_error(
        &run(&["ellipsoid", "--gain", two_rows.to_str().unwrap()]),
        "expected one vector",
    );
    one_line_error(
        &run(&["ellipsoid", "--gain", "/nonexistent/g.npy"]),
        "cannot read",
    );
    one_line_error(
        &run(&["ellipsoid", "--gain", g.to_str().unwrap(), "--eps=-1"]),
        "eps",
    );
    one_line_error(
        &run(&["ellipsoid", "--gain", g.to_str().unwrap(), "--eps", "nan"]),
        "eps",
    );
    one_line_error(
        &run(&[
            "ellipsoid",
            "--gain",
            g.to_str().unwrap(),
            "--format",
            "xml",
        ]),
        "unknown format",
    );
    one_line_error(&run(&["ellipsoid"]), "--gain");
    one_line_error(
        &run(&["ellipsoid", "--gain", g.to_str().unwrap(), "--solver", "qr"]),
        "unknown solver",
    );
    let empty = write(dir.path(), "empty.npy", vec![0], vec![]);
    one_line_error(
        &run(&["ellipsoid", "--gain", empty.to_str().unwrap()]),
        "empty",
    );
    // clap's own usage errors also exit 2.
    assert_eq!(
        run(&["ellipsoid", "--gain", g.to_str().unwrap(), "axes"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn example_concentration_and_bench_run() {
    let out = run(&["ellipsoid", "example"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2·√158 = sqrt(632)") && text.contains("(√3, √3)"),
        "{text}"
    );

    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("fig.svg");
    let out = run(&[
        "ellipsoid",
        "concentration",
        "--samples",
        "3000",
        "--seed",
        "5",
        "--svg",
        svg.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("# LayerNorm surface concentration") && table.contains("1e-5,0.5,"),
        "{table}"
    );
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    one_line_error(&run(&["ellipsoid", "concentration", "--eps", "0"]), "eps");

    let out = run(&[
        "ellipsoid",
        "bench",
        "--n",
        "70",
        "--repeats",
        "1",
        "--no-numpy",
        "--threads",
        "1",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("certified ellipsoid (secular solver, structure certification) median s"));
}
