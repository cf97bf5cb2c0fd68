//! `normoracle reproduce bench`: the oracle's speed, each figure a ratio against its rival
//! measured in the same run, with every side's median and range over its runs.

use crate::error::Result;
use crate::output::format::Table;
use normoracle::adapters::{dylib::DylibKernel, Kernel};
use normoracle::cases::{battery, BatteryConfig};
use normoracle::problem::Op;
use normoracle::zoo::compile_c_example;
use normoracle::Dtype;
use normoracle_geometry::ellipsoid::bench::median;
use normoracle_geometry::selectability::lp_rival::{self, LpSample};
use std::path::Path;
use std::time::Instant;

/// Runs per side.
const RUNS: usize = 5;

/// Median and range of a side's runs, as table cells.
fn cells(runs: &[f64]) -> [String; 2] {
    let (Some(lo), Some(hi)) = (
        runs.iter().copied().reduce(f64::min),
        runs.iter().copied().reduce(f64::max),
    ) else {
        return ["-".into(), "-".into()];
    };
    [format!("{:.4}", median(runs)), format!("{lo:.4}-{hi:.4}")]
}

fn ratio(ours: &[f64], rival: &[f64]) -> String {
    if ours.is_empty() || rival.is_empty() {
        return "-".into();
    }
    format!("{:.3}", median(ours) / median(rival))
}

struct Row<'a> {
    benchmark: String,
    size: String,
    threads: usize,
    ours: &'a [f64],
    rival: &'a str,
    rival_runs: &'a [f64],
}

fn push(table: &mut Table, row: Row) {
    let [m, r] = cells(row.ours);
    let [rm, rr] = cells(row.rival_runs);
    table.push([
        row.benchmark,
        row.size,
        row.threads.to_string(),
        m,
        r,
        row.rival.to_string(),
        rm,
        rr,
        ratio(row.ours, row.rival_runs),
    ]);
}

/// The bench table: exact verdicts against numpy's float64 LayerNorm, the certified
/// ellipsoid against numpy's eigvalsh, `fuzz --lib` (isolated) against the kernel's own time,
/// and Figure 1c's engine against a HiGHS LP per key.
pub fn table(seed: u64) -> Result<Table> {
    use normoracle_geometry::ellipsoid::bench as ellipsoid;
    let mut table = Table::new([
        "benchmark",
        "size",
        "threads",
        "median_seconds",
        "range_seconds",
        "rival",
        "rival_median_seconds",
        "rival_range_seconds",
        "ratio",
    ]);
    table.comment(format!(
        "ratio = ours / rival (medians), {RUNS} runs a side, measured in this one run; CPU: {}",
        normoracle::kernels::cpu::describe()
    ));
    for dtype in [Dtype::F32, Dtype::F16, Dtype::BF16] {
        let t = normoracle::judge::bench::oracle_vs_numpy(4096, 4096, RUNS, seed, dtype)?;
        push(
            &mut table,
            Row {
                benchmark: format!("exact verdict {dtype}"),
                size: format!("{}x{}", t.rows, t.d),
                threads: t.threads,
                ours: &t.verdict_runs,
                rival: "numpy float64 LayerNorm",
                rival_runs: &t.numpy_runs,
            },
        );
    }
    let params = ellipsoid::BenchParams {
        repeats: RUNS,
        seed,
        ..ellipsoid::BenchParams::default()
    };
    let r = ellipsoid::run(&params, &|_| {}, &|| {})?;
    push(
        &mut table,
        Row {
            benchmark: "certified ellipsoid (default flags)".into(),
            size: format!("N = {}", params.n),
            threads: r.threads_used,
            ours: &r.pipeline.seconds,
            rival: "numpy.linalg.eigvalsh (uncertified)",
            rival_runs: r.numpy_eigvalsh_seconds.as_deref().unwrap_or(&[]),
        },
    );
    let (isolated, own, cases) = fuzz_lib_vs_kernel(seed)?;
    push(
        &mut table,
        Row {
            benchmark: "fuzz --lib, isolated (C example, layer_norm f32)".into(),
            size: format!("{cases} cases"),
            threads: rayon::current_num_threads(),
            ours: &isolated,
            rival: "the kernel's own calls, in process",
            rival_runs: &own,
        },
    );
    let sample = LpSample {
        runs: 3,
        ..LpSample::default_sample()
    };
    let (mut ours, mut highs, mut last) = (Vec::new(), Vec::new(), None);
    for _ in 0..RUNS {
        let c = lp_rival::compare(&sample)?;
        ours.push(c.ours_seconds);
        highs.extend(c.highs_seconds);
        last = Some(c);
    }
    let last = last.expect("RUNS > 0");
    push(
        &mut table,
        Row {
            benchmark: format!(
                "figure 1c engine, certified ({} unselectable; HiGHS disagrees on {})",
                last.ours_unselectable,
                last.disagreements.map_or("-".into(), |n| n.to_string())
            ),
            size: format!("{} key sets, {} keys", last.key_sets, last.keys),
            threads: 1,
            ours: &ours,
            rival: "scipy HiGHS, one LP per key",
            rival_runs: &highs,
        },
    );
    Ok(table)
}

/// `fuzz --lib` over the default battery (layer_norm f32, the seed's 200 random cases) with
/// the C example kernel, isolated (this binary as the command, wall time), against the sum of
/// the kernel's own calls on the same cases in this process. Empty runs where `cc` or the
/// example's source (from the build's source tree) is missing.
fn fuzz_lib_vs_kernel(seed: u64) -> Result<(Vec<f64>, Vec<f64>, usize)> {
    let config = BatteryConfig::new(Op::LayerNorm, Dtype::F32, seed);
    let cases = battery(&config);
    // Not `bench-oracle`'s directory (normoracle-bench-PID), which its numpy timing removes.
    let dir = std::env::temp_dir().join(format!("normoracle-bench-lib-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/c/normoracle_example.c");
    let Some(lib) = compile_c_example(&source, &dir) else {
        let _ = std::fs::remove_dir_all(&dir);
        return Ok((Vec::new(), Vec::new(), cases.len()));
    };
    let exe = std::env::current_exe()?;
    let (mut isolated, mut own) = (Vec::new(), Vec::new());
    let kernel = DylibKernel::load(&lib, None, Op::LayerNorm, Dtype::F32)?;
    for _ in 0..RUNS {
        let start = Instant::now();
        let status = std::process::Command::new(&exe)
            .args(["fuzz", "--lib"])
            .arg(&lib)
            .args(["--op", "layer_norm", "--dtype", "f32", "--json", "--seed"])
            .arg(seed.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()?;
        isolated.push(start.elapsed().as_secs_f64());
        if !status.success() {
            return Err(crate::Error::io(format!(
                "bench: fuzz --lib with the C example exited {status}"
            )));
        }
        let start = Instant::now();
        for case in &cases {
            kernel.run(&case.problem).map_err(crate::Error::io)?;
        }
        own.push(start.elapsed().as_secs_f64());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok((isolated, own, cases.len()))
}
