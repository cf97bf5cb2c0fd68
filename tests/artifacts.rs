//! Results a paper can cite: the machine-independent artifacts are pinned by snapshots (the
//! provenance's git commit redacted), and an artifact's bytes do not depend on the thread
//! count.

use normoracle_cli::artifacts::catalogue::catalogue;
use normoracle_cli::artifacts::registry::{render, Params};
use std::process::Command;

const SEED: u64 = 2024;

fn artifact(id: &str, format: &str) -> String {
    let a = catalogue()
        .into_iter()
        .find(|a| a.id == id)
        .expect("catalogued");
    assert!(
        a.machine_independent,
        "{id} is pinned only if machine-independent"
    );
    redact(&render(&a, &Params { seed: SEED }, format).unwrap())
}

/// The commit changes with every commit; the rest must not.
fn redact(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("(git ") {
            Some(i) => format!(
                "{}(git [commit]){}",
                &l[..i],
                &l[i..].split_once(')').map_or("", |p| p.1)
            ),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn error_model_snapshot() {
    insta::assert_snapshot!(artifact("error-model", "csv"));
}

#[test]
fn ellipsoid_example_snapshot() {
    insta::assert_snapshot!(artifact("ellipsoid-example", "md"));
}

#[test]
fn accuracy_table_snapshot() {
    insta::assert_snapshot!(artifact("accuracy-table", "csv"));
}

#[test]
fn theorems_snapshot() {
    insta::assert_snapshot!(artifact("theorems", "csv"));
}

#[test]
fn every_artifact_has_its_provenance_and_the_list_names_them_all() {
    let out = Command::new(env!("CARGO_BIN_EXE_normoracle"))
        .args(["reproduce", "--list"])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    for a in catalogue() {
        assert!(list.contains(a.id), "--list names {}", a.id);
    }
    for id in [
        "theorems",
        "ellipsoid-example",
        "ellipsoid-concentration",
        "accuracy-table",
        "error-model",
        "bench",
    ] {
        assert!(list.contains(id), "{id} is catalogued");
    }
    assert!(list
        .lines()
        .any(|l| l.starts_with("bench") && l.contains("machine-dependent")));
    let text = artifact("ellipsoid-example", "csv");
    for needle in [
        "# artifact: ellipsoid-example",
        "# normoracle ",
        "# seed: 2024",
        "# reproduce: normoracle reproduce ellipsoid-example --format csv --seed 2024",
        "# machine-independent: yes",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in\n{text}");
    }
}

#[test]
fn bytes_do_not_depend_on_the_thread_count() {
    let run = |threads: &str, id: &str, format: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_normoracle"))
            .args(["reproduce", id, "--format", format, "--seed", "7"])
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .unwrap();
        assert!(out.status.success());
        out.stdout
    };
    for (id, format) in [
        ("error-model", "csv"),
        ("accuracy-table", "json"),
        ("ellipsoid-concentration", "svg"),
    ] {
        assert_eq!(
            run("1", id, format),
            run("4", id, format),
            "{id} differs between 1 and 4 threads"
        );
    }
}

/// `majority` is machine-dependent (f32 training on candle's CPU kernels), so only its data is
/// pinned: the sequences are integers from the portable generator, the same on every machine.
#[cfg(feature = "candle")]
#[test]
fn majority_data_snapshot() {
    use normoracle_cli::experiments::majority::{dataset, MajorityConfig};
    let cfg = MajorityConfig::reproduction();
    let data = dataset(&cfg, 4, 0, 1);
    let text: String = data
        .tokens
        .chunks(cfg.len)
        .zip(&data.majority)
        .map(|(seq, m)| {
            let seq: Vec<String> = seq.iter().map(u32::to_string).collect();
            format!("{m}: {}\n", seq.join(" "))
        })
        .collect();
    insta::assert_snapshot!(text);
}
