//! `normoracle theorems`: the table in every format, exit 0 when all verify, exit 2 on bad
//! arguments.

use std::process::Command;

fn normoracle(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_normoracle"))
        .args(args)
        .output()
        .expect("run normoracle")
}

#[test]
fn json_lists_every_theorem_verified() {
    let out = normoracle(&[
        "theorems", "--format", "json", "--cases", "4", "--seed", "11",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = table["rows"].as_array().expect("rows");
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    for id in [
        "projection",
        "norm-sqrt-d",
        "decompositions",
        "two-point-map",
        "rms-vs-layer",
        "uniform-attention",
        "float-corollaries",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    for r in rows {
        assert_eq!(r["verdict"], "verified", "{r}");
        assert!(r["cases"].as_str().unwrap().parse::<usize>().unwrap() > 4);
        assert!(r["seconds"].as_str().unwrap().parse::<f64>().is_ok());
        assert!(!r["source"].as_str().unwrap().is_empty());
    }
    assert!(table["comments"][0].as_str().unwrap().contains("seed 11"));
}

#[test]
fn formats_and_selection() {
    let out = normoracle(&[
        "theorems",
        "--format",
        "csv",
        "--cases",
        "2",
        "--id",
        "projection",
        "--id",
        "rms-vs-layer",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\nid,statement,source,cases,verdict,proof,seconds\n"),
        "{text}"
    );
    // The proof column: Coq's lemmas where a proof covers the theorem, the instances elsewhere.
    assert!(
        text.contains("\"proved for all d (Coq: Projection.v:P_symmetric, P_idempotent"),
        "{text}"
    );
    assert!(
        text.contains(",verified,checked on 22 instances,"),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("projection,") || l.starts_with("rms-vs-layer,"))
            .count(),
        2
    );
    let out = normoracle(&[
        "theorems",
        "--format",
        "latex",
        "--cases",
        "1",
        "--id",
        "uniform-attention",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("\\begin{tabular}"));
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    let out = normoracle(&["theorems", "--id", "no-such-theorem"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("unknown theorem 'no-such-theorem'"), "{err}");
    let out = normoracle(&["theorems", "--format", "xml"]);
    assert_eq!(out.status.code(), Some(2));
}
