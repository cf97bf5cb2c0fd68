//! How fast is a verdict? The oracle judges a rows × d tensor (f32, f16 or bf16) while numpy
//! computes an (inexact) float64 LayerNorm of the same values, measured side by side in one
//! run; docs/speed.md quotes the ratio.

use super::{judge_problem, ProblemLabel, Report};
use crate::adapters::{reference_f64::ReferenceF64, Kernel};
use crate::cases::rng::Rng;
use crate::error::{Error, Result};
use crate::npy;
use crate::problem::{Eps, EpsConvention, Op, Problem};
use crate::Dtype;
use std::time::Instant;

/// One measurement: medians over `repeats` runs, in seconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OracleTiming {
    pub dtype: String,
    pub rows: usize,
    pub d: usize,
    pub repeats: usize,
    pub verdict_seconds: f64,
    /// Every run, in order.
    pub verdict_runs: Vec<f64>,
    pub numpy_seconds: Option<f64>,
    /// numpy's every run, in order (empty without numpy).
    pub numpy_runs: Vec<f64>,
    pub ratio: Option<f64>,
    pub threads: usize,
    pub passed: bool,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A rows × d LayerNorm problem of N(0,1) data rounded to `dtype` (portable generator).
pub fn gaussian_problem(rows: usize, d: usize, seed: u64, dtype: Dtype) -> Problem {
    let mut rng = Rng::new(seed, 0);
    Problem {
        op: Op::LayerNorm,
        dtype,
        eps: Eps::from_f32(1e-5).expect("valid"),
        convention: EpsConvention::Inside,
        rows,
        d,
        x: (0..rows * d)
            .map(|_| dtype.round_f64(rng.normal()))
            .collect(),
        gamma: None,
        beta: None,
    }
}

const NUMPY_SCRIPT: &str = r#"
import sys, time
import numpy as np
x = np.load(sys.argv[1]); reps = int(sys.argv[2]); ts = []
for _ in range(reps):
    t = time.perf_counter()
    xd = x.astype(np.float64)
    m = xd.mean(axis=-1, keepdims=True)
    v = ((xd - m) ** 2).mean(axis=-1, keepdims=True)
    y = (xd - m) / np.sqrt(v + 1e-5)
    ts.append(time.perf_counter() - t)
print(",".join(map(repr, ts)))
"#;

/// Times numpy's float64 LayerNorm of the problem's x (as f32 values, which hold the narrow
/// formats exactly): every run's seconds, in order; empty when Python ([`npy::python`]) or
/// numpy is missing.
fn time_numpy(problem: &Problem, repeats: usize) -> Result<Vec<f64>> {
    let dir = std::env::temp_dir().join(format!("normoracle-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("x.npy");
    npy::write(
        &path,
        &npy::NpyArray::new(
            vec![problem.rows, problem.d],
            npy::NpyData::F32(
                problem
                    .x
                    .iter()
                    .map(|&b| problem.dtype.to_f64(b) as f32)
                    .collect(),
            ),
        )?,
    )?;
    let out = std::process::Command::new(npy::python())
        .arg("-c")
        .arg(NUMPY_SCRIPT)
        .arg(&path)
        .arg(repeats.to_string())
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    match out {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            text.trim()
                .split(',')
                .map(|t| t.parse::<f64>())
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|_| Error::io(format!("numpy timing printed '{}'", text.trim())))
        }
        _ => Ok(Vec::new()),
    }
}

/// A copy of `values` in memory advised for transparent huge pages, as numpy advises its
/// own arrays of 4 MiB and more (`numpy._core.multiarray._get_madvise_hugepage()`): the two
/// sides' large arrays under the same page policy. (With 4 KiB pages the verdict took 4 %
/// longer on an AMD EPYC of family 26.) A hint: where it is refused, nothing changes.
fn huge_page_copy<T: Copy>(values: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(values.len());
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 1 << 21;
        let start = out.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(values);
        let (first, last) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if first < last {
            // SAFETY: the range lies within `out`'s allocation, not yet touched; madvise
            // only advises how to back it.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                )
            };
        }
    }
    out.extend_from_slice(values);
    out
}

/// Judges reference-f64's outputs on a rows × d tensor `repeats` times, and times numpy.
pub fn oracle_vs_numpy(
    rows: usize,
    d: usize,
    repeats: usize,
    seed: u64,
    dtype: Dtype,
) -> Result<OracleTiming> {
    if dtype == Dtype::F64 {
        return Err(Error::usage("bench-oracle takes f32, f16 or bf16"));
    }
    let mut problem = gaussian_problem(rows, d, seed, dtype);
    let y = huge_page_copy(&ReferenceF64.run(&problem).map_err(Error::input)?);
    problem.x = huge_page_copy(&problem.x);
    let numpy_runs = time_numpy(&problem, repeats)?;
    let numpy_seconds = (!numpy_runs.is_empty()).then(|| median(numpy_runs.clone()));
    let mut times = Vec::new();
    let mut passed = true;
    for _ in 0..repeats {
        let mut report = Report::new(
            "reference-f64",
            problem.op,
            problem.dtype,
            problem.convention,
            Some(seed),
        );
        let label = ProblemLabel {
            case: None,
            family: "gaussian".into(),
        };
        let start = Instant::now();
        judge_problem(&problem, &y, &label, &mut report)?;
        times.push(start.elapsed().as_secs_f64());
        passed &= report.passed();
    }
    let verdict_seconds = median(times.clone());
    Ok(OracleTiming {
        dtype: dtype.to_string(),
        verdict_runs: times,
        rows,
        d,
        repeats,
        verdict_seconds,
        numpy_seconds,
        numpy_runs,
        ratio: numpy_seconds.map(|n| verdict_seconds / n),
        threads: rayon::current_num_threads(),
        passed,
    })
}
