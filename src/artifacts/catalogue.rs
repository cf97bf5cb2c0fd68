//! The catalogue of reproducible artifacts (`normoracle reproduce --list`).

use super::registry::{Artifact, Output, Params};
use crate::zoo::{self, ZooConfig};

fn accuracy_table(p: &Params) -> crate::Result<Output> {
    // The builtin kernels only: the C compiler and Python frameworks vary between machines.
    let cfg = ZooConfig {
        seed: p.seed,
        random_cases: 20,
        builtins: crate::adapters::builtin_names()
            .into_iter()
            .map(String::from)
            .collect(),
        c_example: None,
        python_drivers: Vec::new(),
        progress: false,
    };
    Ok(Output::Table(zoo::table(&zoo::run(&cfg)?, &cfg)))
}

fn error_model(p: &Params) -> crate::Result<Output> {
    Ok(Output::Table(crate::judge::error_model::table(p.seed)))
}

fn bench(_p: &Params) -> crate::Result<Output> {
    let t = crate::judge::bench::oracle_vs_numpy(1024, 4096, 3, 1)?;
    let mut table = super::format::Table::new([
        "benchmark",
        "rows",
        "d",
        "threads",
        "median_seconds",
        "numpy_seconds",
        "ratio",
    ]);
    table.push([
        "verdict vs numpy float64 LayerNorm".to_string(),
        t.rows.to_string(),
        t.d.to_string(),
        t.threads.to_string(),
        format!("{:.4}", t.verdict_seconds),
        t.numpy_seconds.map_or("-".into(), |v| format!("{v:.4}")),
        t.ratio.map_or("-".into(), |v| format!("{v:.2}")),
    ]);
    Ok(Output::Table(table))
}

/// Every artifact, in the order `--list` prints them.
pub fn catalogue() -> Vec<Artifact> {
    vec![
        Artifact {
            id: "accuracy-table",
            description: "verdict, max ULP, % correctly rounded, % faithful, worst family, max |mu|/sigma passing, per builtin kernel x op x dtype",
            machine_independent: true,
            produce: accuracy_table,
        },
        Artifact {
            id: "error-model",
            description: "the tolerance bound in ULPs and the condition number per op, dtype and input family",
            machine_independent: true,
            produce: error_model,
        },
        Artifact {
            id: "bench",
            description: "time of a verdict on 1024x4096 f32 next to numpy's float64 LayerNorm of the same data",
            machine_independent: false,
            produce: bench,
        },
    ]
}
