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

fn theorems(p: &Params) -> crate::Result<Output> {
    use crate::theorems::{self, Budget, DEFAULT_CASES};
    let budget = Budget {
        cases: DEFAULT_CASES,
        seed: p.seed,
    };
    let runs = theorems::run(&theorems::catalogue(), budget, |_| {});
    let mut table = theorems::table(&runs, budget);
    // Timings vary between machines: the artifact keeps everything else.
    if let Some(col) = table.columns.iter().position(|c| c == "seconds") {
        table.columns.remove(col);
        for row in &mut table.rows {
            row.remove(col);
        }
    }
    Ok(Output::Table(table))
}

fn ellipsoid_example(_p: &Params) -> crate::Result<Output> {
    Ok(Output::Table(
        crate::geometry::ellipsoid::example::riechers_example()?.table,
    ))
}

fn ellipsoid_concentration(p: &Params) -> crate::Result<Output> {
    let (table, svg) = crate::geometry::ellipsoid::concentration::figure_artifacts(p.seed)?;
    Ok(Output::Figure(table, svg))
}

/// Every artifact, in the order `--list` prints them.
pub fn catalogue() -> Vec<Artifact> {
    vec![
        Artifact {
            id: "theorems",
            description: "the theorem catalogue: id, statement, source, cases tried, verdict (exact arithmetic)",
            machine_independent: true,
            produce: theorems,
        },
        Artifact {
            id: "ellipsoid-example",
            description: "the LayerNorm hyperellipsoid of a small rational gain (Riechers 2024): exact normal, axes and semi-axes",
            machine_independent: true,
            produce: ellipsoid_example,
        },
        Artifact {
            id: "ellipsoid-concentration",
            description: "surface concentration at eps 1e-1, 1e-3, 1e-5 (Riechers Fig. 2): empirical quantiles vs the exact law, with SVG",
            machine_independent: true,
            produce: ellipsoid_concentration,
        },
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
