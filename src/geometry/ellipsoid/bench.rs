//! The N = 4096 benchmark (the hidden size of a 7B model): the decomposition of the
//! ellipsoid's matrix `Q` by the dense solver and by the secular solver, against
//! `numpy.linalg.eigh` on the very same matrix, all timed in the same run (median of a few
//! repeats); optionally the whole certified pipeline.

use super::concentration::Normal;
use super::decompose::{symmetric_eigen, Threads};
use super::{analyze, matrices, secular, EllipsoidInput, Options, Solver};
use crate::artifacts::format::Table;
use crate::error::{Error, Result};
use crate::npy::{self, NpyArray, NpyData};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

#[derive(Debug, Clone, PartialEq)]
pub struct BenchParams {
    pub n: usize,
    pub repeats: usize,
    pub seed: u64,
    pub threads: Threads,
    /// Time numpy too (skipped with a note when python3/numpy is unavailable).
    pub numpy: bool,
    /// Also run and time the full certified pipeline ([`analyze`]: both routes, MPFR
    /// residuals, orthonormality bound) with this solver.
    pub verify: Option<Solver>,
}

impl Default for BenchParams {
    fn default() -> Self {
        BenchParams {
            n: 4096,
            repeats: 3,
            seed: 0x5eed,
            threads: Threads::Pool(0),
            numpy: true,
            verify: None,
        }
    }
}

/// The full certified run's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineTiming {
    pub solver: Solver,
    pub seconds: f64,
    pub verified: bool,
    pub lambda_max_pair_radius: f64,
    pub zeta_max_pair_radius: f64,
    pub lambda_orthonormality_defect: f64,
    pub zeta_orthonormality_defect: f64,
    pub max_relative_semi_axis_radius: f64,
}

/// One timed solver.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub seconds: Vec<f64>,
    /// `max |λ − λ_numpy| / max |λ|` over the sorted spectra, when numpy ran.
    pub agreement_with_numpy: Option<f64>,
}

impl Timing {
    pub fn median(&self) -> f64 {
        median(&self.seconds)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    pub params: BenchParams,
    pub threads_used: usize,
    pub dense: Timing,
    pub secular: Timing,
    pub numpy_seconds: Option<Vec<f64>>,
    /// Why numpy was not timed, if it was not.
    pub numpy_note: Option<String>,
    pub pipeline: Option<PipelineTiming>,
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        0.5 * (s[m - 1] + s[m])
    }
}

impl BenchReport {
    pub fn numpy_median(&self) -> Option<f64> {
        self.numpy_seconds.as_deref().map(median)
    }

    /// numpy's median time over the dense solver's (> 1: ours is faster).
    pub fn dense_ratio(&self) -> Option<f64> {
        self.numpy_median().map(|t| t / self.dense.median())
    }

    /// numpy's median time over the secular solver's.
    pub fn secular_ratio(&self) -> Option<f64> {
        self.numpy_median().map(|t| t / self.secular.median())
    }
}

/// Seeded LayerNorm-like gains: `exp(0.3 z)`, `z ~ N(0, 1)` (portable generation).
pub fn bench_gains(n: usize, seed: u64) -> Vec<f64> {
    let mut normal = Normal::new(seed);
    (0..n).map(|_| libm::exp(0.3 * normal.sample())).collect()
}

fn agreement(ours: &[f64], numpy: &[f64]) -> f64 {
    let mut sorted = numpy.to_vec();
    sorted.sort_by(f64::total_cmp);
    let scale = sorted
        .iter()
        .chain(ours)
        .fold(0.0f64, |m, x| m.max(x.abs()));
    sorted
        .iter()
        .zip(ours)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
        / scale
}

/// Runs the benchmark; `log` receives one line per phase.
pub fn run(
    params: &BenchParams,
    log: &dyn Fn(&str),
    tick: &(dyn Fn() + Sync),
) -> Result<BenchReport> {
    if params.n < 2 || params.repeats == 0 {
        return Err(Error::usage("bench needs --n >= 2 and --repeats >= 1"));
    }
    let threads_used = match params.threads {
        Threads::One => 1,
        Threads::Pool(0) => rayon::current_num_threads(),
        Threads::Pool(t) => t,
    };
    let n = params.n;
    let g = bench_gains(n, params.seed);
    let q = matrices::tight_form_dense(&g);
    let null = matrices::nullity(&g);
    let time = |name: &str, solve: &dyn Fn() -> Result<Vec<f64>>| -> Result<(Vec<f64>, Vec<f64>)> {
        let mut seconds = Vec::new();
        let mut values = Vec::new();
        for r in 0..params.repeats {
            log(&format!(
                "{name}: decomposing the {n}×{n} matrix (run {}/{})",
                r + 1,
                params.repeats
            ));
            let t = Instant::now();
            values = solve()?;
            seconds.push(t.elapsed().as_secs_f64());
        }
        Ok((seconds, values))
    };
    let (dense_seconds, dense_values) = time("dense (faer)", &|| {
        Ok(symmetric_eigen(n, &q, params.threads)?.values)
    })?;
    let (secular_seconds, mut secular_values) = time("secular", &|| {
        let k = secular::gram_eigen(&g, params.threads);
        Ok(secular::tight_form_eigen(&g, &k, null).values)
    })?;
    secular_values.sort_by(f64::total_cmp);
    let (numpy_seconds, numpy_note, numpy_values) = if params.numpy {
        log("numpy: numpy.linalg.eigh on the same matrix");
        match time_numpy(&q, n, params.repeats, params.seed) {
            Ok((times, values)) => (Some(times), None, Some(values)),
            Err(note) => (None, Some(note), None),
        }
    } else {
        (None, Some("numpy not requested".to_string()), None)
    };
    let pipeline = match params.verify {
        Some(solver) => {
            log(&format!(
                "pipeline ({solver:?}): both routes, MPFR residuals and orthonormality bounds"
            ));
            let input = EllipsoidInput::new(g.clone(), None, 0.0)?;
            let t = Instant::now();
            let e = analyze(
                &input,
                Options {
                    threads: params.threads,
                    solver,
                    tick,
                },
            )?;
            Some(PipelineTiming {
                solver,
                seconds: t.elapsed().as_secs_f64(),
                verified: e.verified(),
                lambda_max_pair_radius: e.lambda_route.max_pair_radius(),
                zeta_max_pair_radius: e.zeta_route.max_pair_radius(),
                lambda_orthonormality_defect: e.lambda_route.orthonormality_defect_upper,
                zeta_orthonormality_defect: e.zeta_route.orthonormality_defect_upper,
                max_relative_semi_axis_radius: e.max_relative_semi_axis_radius(),
            })
        }
        None => None,
    };
    Ok(BenchReport {
        params: params.clone(),
        threads_used,
        dense: Timing {
            seconds: dense_seconds,
            agreement_with_numpy: numpy_values.as_deref().map(|w| agreement(&dense_values, w)),
        },
        secular: Timing {
            seconds: secular_seconds,
            agreement_with_numpy: numpy_values
                .as_deref()
                .map(|w| agreement(&secular_values, w)),
        },
        numpy_seconds,
        numpy_note,
        pipeline,
    })
}

const NUMPY_SCRIPT: &str = r#"
import json, sys, time
import numpy as np
m = np.load(sys.argv[1])
times = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    w, v = np.linalg.eigh(m)
    times.append(time.perf_counter() - t)
np.save(sys.argv[3], w)
print(json.dumps({"times": times, "numpy": np.__version__}))
"#;

/// Times numpy in a subprocess (`$NORMORACLE_PYTHON` or `python3`); `Err` is the note to print.
fn time_numpy(
    q: &[f64],
    n: usize,
    repeats: usize,
    seed: u64,
) -> std::result::Result<(Vec<f64>, Vec<f64>), String> {
    let dir = std::env::temp_dir().join(format!(
        "normoracle-ellipsoid-bench-{}-{seed}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("numpy skipped: cannot create {}: {e}", dir.display()))?;
    let result = (|| {
        let matrix = dir.join("q.npy");
        let values = dir.join("w.npy");
        npy::write(
            &matrix,
            &NpyArray::new(vec![n, n], NpyData::F64(q.to_vec())).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let python = std::env::var("NORMORACLE_PYTHON").unwrap_or_else(|_| "python3".to_string());
        let out = Command::new(&python)
            .arg("-c")
            .arg(NUMPY_SCRIPT)
            .arg(&matrix)
            .arg(repeats.to_string())
            .arg(&values)
            .output()
            .map_err(|e| format!("numpy skipped: cannot run {python}: {e}"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().last().unwrap_or("").to_string();
            return Err(format!("numpy skipped: {python} failed: {last}"));
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("numpy skipped: bad output: {e}"))?;
        let times: Vec<f64> = v["times"]
            .as_array()
            .ok_or("numpy skipped: no times")?
            .iter()
            .filter_map(|x| x.as_f64())
            .collect();
        let w = read_values(&values)?;
        Ok((times, w))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn read_values(path: &Path) -> std::result::Result<Vec<f64>, String> {
    npy::read(path)
        .map(|a| a.to_f64())
        .map_err(|e| format!("numpy skipped: {e}"))
}

/// The report as a table.
pub fn table(r: &BenchReport) -> Table {
    let mut t = Table::new(["measure", "value"]);
    t.comment(format!(
        "ellipsoid benchmark: N = {} (Q = Pi2 G^-2 Pi2, gains exp(0.3 z), seed {}), median of {} runs, {} thread(s)",
        r.params.n, r.params.seed, r.params.repeats, r.threads_used
    ));
    let secs = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (name, timing, ratio) in [
        ("dense (faer self-adjoint EVD)", &r.dense, r.dense_ratio()),
        (
            "secular (structured, O(N^2))",
            &r.secular,
            r.secular_ratio(),
        ),
    ] {
        t.push([
            format!("{name} median s"),
            format!("{:.3}", timing.median()),
        ]);
        t.push([format!("{name} runs s"), secs(&timing.seconds)]);
        if let Some(ratio) = ratio {
            t.push([format!("{name}: ratio numpy / ours"), format!("{ratio:.2}")]);
        }
        if let Some(a) = timing.agreement_with_numpy {
            t.push([
                format!("{name}: max |eig - eig numpy| / max |eig|"),
                format!("{a:.2e}"),
            ]);
        }
    }
    match &r.numpy_seconds {
        Some(ns) => {
            t.push([
                "numpy.linalg.eigh median s".to_string(),
                format!("{:.3}", median(ns)),
            ]);
            t.push(["numpy.linalg.eigh runs s".to_string(), secs(ns)]);
        }
        None => t.push([
            "numpy".to_string(),
            r.numpy_note.clone().unwrap_or_default(),
        ]),
    }
    if let Some(p) = &r.pipeline {
        let solver = format!("{:?}", p.solver).to_lowercase();
        t.push([
            format!("certified pipeline ({solver} solver, both routes + MPFR bounds) s"),
            format!("{:.2}", p.seconds),
        ]);
        t.push([
            "certified".to_string(),
            if p.verified { "yes" } else { "NO" }.to_string(),
        ]);
        t.push([
            "lambda route: max eigenpair residual radius".to_string(),
            format!("{:.3e}", p.lambda_max_pair_radius),
        ]);
        t.push([
            "zeta route: max eigenpair residual radius".to_string(),
            format!("{:.3e}", p.zeta_max_pair_radius),
        ]);
        t.push([
            "lambda route: |V^T V - I|_F bound".to_string(),
            format!("{:.3e}", p.lambda_orthonormality_defect),
        ]);
        t.push([
            "zeta route: |V^T V - I|_F bound".to_string(),
            format!("{:.3e}", p.zeta_orthonormality_defect),
        ]);
        t.push([
            "max relative semi-axis enclosure radius".to_string(),
            format!("{:.3e}", p.max_relative_semi_axis_radius),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_bench_runs_and_reports_a_ratio_or_a_note() {
        let params = BenchParams {
            n: 80,
            repeats: 1,
            threads: Threads::One,
            verify: Some(Solver::Secular),
            ..BenchParams::default()
        };
        let r = run(&params, &|_| {}, &|| {}).unwrap();
        assert_eq!(r.dense.seconds.len(), 1);
        assert!(r.numpy_seconds.is_some() || r.numpy_note.is_some());
        for a in [r.dense.agreement_with_numpy, r.secular.agreement_with_numpy]
            .into_iter()
            .flatten()
        {
            assert!(a < 1e-10, "numpy and ours disagree: {a}");
        }
        let p = r.pipeline.as_ref().unwrap();
        assert!(p.verified);
        let md = table(&r).markdown();
        assert!(md.contains("dense (faer self-adjoint EVD) median s"));
        assert!(md.contains("secular (structured, O(N^2)) median s"));
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
