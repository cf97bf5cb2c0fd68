//! The N = 4096 benchmark (the hidden size of a 7B model), all timed in the same run (median
//! of a few repeats): the certified ellipsoid ([`analyze`] with the default flags: secular
//! solver, structure certification) against `numpy.linalg.eigvalsh` of the very same matrix
//! `Q` (eigenvalues only, uncertified); optionally the bare decompositions (dense faer and the
//! secular solver) against `numpy.linalg.eigh`.

use super::concentration::Normal;
use super::decompose::{symmetric_eigen, Threads};
use super::verify::Method;
use super::{analyze, matrices, secular, EllipsoidInput, Options, Solver};
use crate::error::{Error, Result};
use crate::npy::{self, NpyArray, NpyData};
use crate::output::format::Table;
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
    /// The certified pipeline's solver and certification (`None`: its default).
    pub solver: Solver,
    pub method: Option<Method>,
    /// Also time the bare decompositions (dense faer, secular) against `numpy.linalg.eigh`.
    pub decompositions: bool,
}

impl Default for BenchParams {
    fn default() -> Self {
        BenchParams {
            n: 4096,
            repeats: 3,
            seed: 0x5eed,
            threads: Threads::Pool(0),
            numpy: true,
            solver: Solver::Secular,
            method: None,
            decompositions: false,
        }
    }
}

/// The certified runs' numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineTiming {
    pub solver: Solver,
    /// How the pairs were certified.
    pub method: Method,
    pub seconds: Vec<f64>,
    pub verified: bool,
    pub lambda_max_pair_radius: f64,
    pub zeta_max_pair_radius: f64,
    /// `‖VᵀV − I‖_F` bounds ([`Method::Residual`] only).
    pub lambda_orthonormality_defect: Option<f64>,
    pub zeta_orthonormality_defect: Option<f64>,
    pub max_relative_semi_axis_radius: f64,
    /// `max |λ − λ_numpy| / max |λ|` against `eigvalsh`, when numpy ran.
    pub agreement_with_numpy: Option<f64>,
    /// Whether every eigenvalue numpy's `eigvalsh` returned lies in our certified interval
    /// widened by `4·N·u·max|λ|` (numpy's backward error, roughly); when numpy ran.
    pub numpy_within_enclosures: Option<bool>,
}

impl PipelineTiming {
    pub fn median(&self) -> f64 {
        median(&self.seconds)
    }
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
    pub pipeline: PipelineTiming,
    pub numpy_eigvalsh_seconds: Option<Vec<f64>>,
    /// With [`BenchParams::decompositions`].
    pub dense: Option<Timing>,
    pub secular: Option<Timing>,
    pub numpy_eigh_seconds: Option<Vec<f64>>,
    /// Why numpy was not timed, if it was not.
    pub numpy_note: Option<String>,
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
    /// The certified ellipsoid's median time over numpy eigvalsh's (< 1: ours is faster).
    pub fn certified_over_eigvalsh(&self) -> Option<f64> {
        self.numpy_eigvalsh_seconds
            .as_deref()
            .map(|t| self.pipeline.median() / median(t))
    }

    /// numpy eigh's median time over a decomposition's (> 1: ours is faster).
    pub fn eigh_over(&self, t: &Timing) -> Option<f64> {
        self.numpy_eigh_seconds
            .as_deref()
            .map(|n| median(n) / t.median())
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

fn time_runs(
    name: &str,
    n: usize,
    repeats: usize,
    log: &dyn Fn(&str),
    mut solve: impl FnMut() -> Result<Vec<f64>>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut seconds = Vec::new();
    let mut values = Vec::new();
    for r in 0..repeats {
        log(&format!("{name}: N = {n} (run {}/{repeats})", r + 1));
        let t = Instant::now();
        values = solve()?;
        seconds.push(t.elapsed().as_secs_f64());
    }
    Ok((seconds, values))
}

/// Runs the benchmark; `log` receives one line per phase, `tick` the certified pairs.
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
    let mut numpy_note = (!params.numpy).then(|| "numpy not requested".to_string());
    let mut numpy = |mode: &str| -> Option<(Vec<f64>, Vec<f64>)> {
        if numpy_note.is_some() {
            return None;
        }
        log(&format!("numpy: numpy.linalg.{mode} on the same matrix"));
        match time_numpy(&q, n, params.repeats, params.seed, mode) {
            Ok(r) => Some(r),
            Err(note) => {
                numpy_note = Some(note);
                None
            }
        }
    };
    let eigvalsh = numpy("eigvalsh");
    let (dense, secular, numpy_eigh_seconds) = if params.decompositions {
        let eigh = numpy("eigh");
        let eigh_values = eigh.as_ref().map(|e| e.1.as_slice());
        let (seconds, values) = time_runs("dense (faer)", n, params.repeats, log, || {
            Ok(symmetric_eigen(n, &q, params.threads)?.values)
        })?;
        let dense = Timing {
            seconds,
            agreement_with_numpy: eigh_values.map(|w| agreement(&values, w)),
        };
        let (seconds, mut values) = time_runs("secular", n, params.repeats, log, || {
            let k = secular::gram_eigen(&g, params.threads);
            Ok(secular::tight_form_eigen(&g, &k, null).values)
        })?;
        values.sort_by(f64::total_cmp);
        let secular = Timing {
            seconds,
            agreement_with_numpy: eigh_values.map(|w| agreement(&values, w)),
        };
        (Some(dense), Some(secular), eigh.map(|e| e.0))
    } else {
        (None, None, None)
    };
    let input = EllipsoidInput::new(g.clone(), None, 0.0)?;
    let opts = Options {
        threads: params.threads,
        solver: params.solver,
        method: params.method,
        tick,
    };
    let mut last = None;
    let (seconds, _) = time_runs("certified ellipsoid", n, params.repeats, log, || {
        last = Some(analyze(&input, opts)?);
        Ok(Vec::new())
    })?;
    let e = last.expect("at least one run");
    // λ ascending: the nullity's zeros, then 1/ζ for the axes from the longest.
    let mut ours: Vec<f64> = vec![0.0; null];
    ours.extend(e.axes.iter().map(|a| a.lambda));
    let within = |w: &[f64]| {
        let mut w = w.to_vec();
        w.sort_by(f64::total_cmp);
        let scale = w.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let slack = 4.0 * n as f64 * f64::EPSILON * scale;
        w.iter().enumerate().all(|(i, &x)| {
            let (lo, hi) = e
                .lambda_enclosure(i)
                .unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
            lo - slack <= x && x <= hi + slack
        })
    };
    let pipeline = PipelineTiming {
        solver: params.solver,
        method: e.zeta_route.method,
        seconds,
        verified: e.verified(),
        lambda_max_pair_radius: e.lambda_route.max_pair_radius(),
        zeta_max_pair_radius: e.zeta_route.max_pair_radius(),
        lambda_orthonormality_defect: e.lambda_route.orthonormality_defect_upper,
        zeta_orthonormality_defect: e.zeta_route.orthonormality_defect_upper,
        max_relative_semi_axis_radius: e.max_relative_semi_axis_radius(),
        agreement_with_numpy: eigvalsh.as_ref().map(|(_, w)| agreement(&ours, w)),
        numpy_within_enclosures: eigvalsh.as_ref().map(|(_, w)| within(w)),
    };
    Ok(BenchReport {
        params: params.clone(),
        threads_used,
        pipeline,
        numpy_eigvalsh_seconds: eigvalsh.map(|e| e.0),
        dense,
        secular,
        numpy_eigh_seconds,
        numpy_note,
    })
}

const NUMPY_SCRIPT: &str = r#"
import json, sys, time
import numpy as np
m = np.load(sys.argv[1])
mode = sys.argv[4]
times = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    if mode == "eigh":
        w, v = np.linalg.eigh(m)
    else:
        w = np.linalg.eigvalsh(m)
    times.append(time.perf_counter() - t)
np.save(sys.argv[3], w)
print(json.dumps({"times": times, "numpy": np.__version__}))
"#;

/// Times numpy (`mode`: eigh or eigvalsh) in a subprocess ([`npy::python`]); `Err` is the
/// note to print.
fn time_numpy(
    q: &[f64],
    n: usize,
    repeats: usize,
    seed: u64,
    mode: &str,
) -> std::result::Result<(Vec<f64>, Vec<f64>), String> {
    let dir = std::env::temp_dir().join(format!(
        "normoracle-ellipsoid-bench-{}-{seed}-{mode}",
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
        let python = npy::python();
        let out = Command::new(&python)
            .arg("-c")
            .arg(NUMPY_SCRIPT)
            .arg(&matrix)
            .arg(repeats.to_string())
            .arg(&values)
            .arg(mode)
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

fn secs(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.3}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report as a table.
pub fn table(r: &BenchReport) -> Table {
    let mut t = Table::new(["measure", "value"]);
    t.comment(format!(
        "ellipsoid benchmark: N = {} (Q = Pi2 G^-2 Pi2, gains exp(0.3 z), seed {}), median of {} runs, {} thread(s)",
        r.params.n, r.params.seed, r.params.repeats, r.threads_used
    ));
    let p = &r.pipeline;
    let name = format!(
        "certified ellipsoid ({} solver, {} certification)",
        format!("{:?}", p.solver).to_lowercase(),
        p.method.name()
    );
    t.push([format!("{name} median s"), format!("{:.3}", p.median())]);
    t.push([format!("{name} runs s"), secs(&p.seconds)]);
    match &r.numpy_eigvalsh_seconds {
        Some(ns) => {
            t.push([
                "numpy.linalg.eigvalsh median s".to_string(),
                format!("{:.3}", median(ns)),
            ]);
            t.push(["numpy.linalg.eigvalsh runs s".to_string(), secs(ns)]);
        }
        None => t.push([
            "numpy".to_string(),
            r.numpy_note.clone().unwrap_or_default(),
        ]),
    }
    if let Some(ratio) = r.certified_over_eigvalsh() {
        t.push([
            "ratio certified / numpy eigvalsh".to_string(),
            format!("{ratio:.3}"),
        ]);
    }
    t.push(["certified".to_string(), yes_no(p.verified)]);
    if let Some(a) = p.agreement_with_numpy {
        t.push([
            "max |lambda - lambda eigvalsh| / max |lambda|".to_string(),
            format!("{a:.2e}"),
        ]);
    }
    if let Some(w) = p.numpy_within_enclosures {
        t.push([
            "eigvalsh's values within our enclosures (+ 4 N u max|lambda|)".to_string(),
            yes_no(w),
        ]);
    }
    t.push([
        "lambda route: max eigenvalue radius".to_string(),
        format!("{:.3e}", p.lambda_max_pair_radius),
    ]);
    t.push([
        "zeta route: max eigenvalue radius".to_string(),
        format!("{:.3e}", p.zeta_max_pair_radius),
    ]);
    for (route, eta) in [
        ("lambda", p.lambda_orthonormality_defect),
        ("zeta", p.zeta_orthonormality_defect),
    ] {
        if let Some(eta) = eta {
            t.push([
                format!("{route} route: |V^T V - I|_F bound"),
                format!("{eta:.3e}"),
            ]);
        }
    }
    t.push([
        "max relative semi-axis enclosure radius".to_string(),
        format!("{:.3e}", p.max_relative_semi_axis_radius),
    ]);
    for (name, timing) in [
        ("dense (faer self-adjoint EVD)", &r.dense),
        ("secular (structured, O(N^2))", &r.secular),
    ] {
        let Some(timing) = timing else { continue };
        t.push([
            format!("{name} median s"),
            format!("{:.3}", timing.median()),
        ]);
        t.push([format!("{name} runs s"), secs(&timing.seconds)]);
        if let Some(ratio) = r.eigh_over(timing) {
            t.push([
                format!("{name}: ratio numpy eigh / ours"),
                format!("{ratio:.2}"),
            ]);
        }
        if let Some(a) = timing.agreement_with_numpy {
            t.push([
                format!("{name}: max |eig - eig numpy| / max |eig|"),
                format!("{a:.2e}"),
            ]);
        }
    }
    if let Some(ns) = &r.numpy_eigh_seconds {
        t.push([
            "numpy.linalg.eigh median s".to_string(),
            format!("{:.3}", median(ns)),
        ]);
        t.push(["numpy.linalg.eigh runs s".to_string(), secs(ns)]);
    }
    t
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "NO" }.to_string()
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
            decompositions: true,
            ..BenchParams::default()
        };
        let r = run(&params, &|_| {}, &|| {}).unwrap();
        assert_eq!(r.pipeline.seconds.len(), 1);
        assert_eq!(r.pipeline.method, Method::Structure);
        assert!(r.numpy_eigvalsh_seconds.is_some() || r.numpy_note.is_some());
        let (dense, secular) = (r.dense.as_ref().unwrap(), r.secular.as_ref().unwrap());
        for a in [
            dense.agreement_with_numpy,
            secular.agreement_with_numpy,
            r.pipeline.agreement_with_numpy,
        ]
        .into_iter()
        .flatten()
        {
            assert!(a < 1e-10, "numpy and ours disagree: {a}");
        }
        assert!(r.pipeline.numpy_within_enclosures.is_none_or(|w| w));
        assert!(r.pipeline.verified);
        let md = table(&r).markdown();
        assert!(
            md.contains("certified ellipsoid (secular solver, structure certification) median s")
        );
        assert!(md.contains("dense (faer self-adjoint EVD) median s"));
        assert!(md.contains("secular (structured, O(N^2)) median s"));
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
