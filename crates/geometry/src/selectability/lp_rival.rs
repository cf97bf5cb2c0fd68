//! Figure 1c's engine against the textbook method: one floating-point LP per key (is h_i in
//! the convex hull of the others? λ ≥ 0, Σλ = 1, Σλ_j h_j = h_i), solved by scipy's HiGHS, on
//! a sample of the figure's key sets, timed side by side in one run (`reproduce bench`). Both
//! sides decide the same keys one key set at a time on one thread; the verdicts are compared
//! too (HiGHS has no certificate: where it disagrees with ours, ours is the checked one).

use super::figure::{decide_run, gaussian_keys, FigureParams};
use super::keys::NormSpec;
use crate::error::{Error, Result};
use std::time::Instant;

/// The sample: run `0..runs` of each (d, n) cell, the figure's generator and seed.
#[derive(Debug, Clone)]
pub struct LpSample {
    pub dims: Vec<usize>,
    pub sizes: Vec<usize>,
    pub runs: usize,
    pub seed: u64,
}

impl LpSample {
    /// Nine cells across the figure's grid (d 3, 8, 15 × n 10, 30, 60), 10 runs each: 90
    /// key sets, 3 000 keys, the authors' seed 123.
    pub fn default_sample() -> Self {
        LpSample {
            dims: vec![3, 8, 15],
            sizes: vec![10, 30, 60],
            runs: 10,
            seed: 123,
        }
    }

    fn key_sets(&self) -> Vec<(usize, usize, usize)> {
        let mut sets = Vec::new();
        for &d in &self.dims {
            for &n in &self.sizes {
                sets.extend((0..self.runs).map(|run| (d, n, run)));
            }
        }
        sets
    }
}

/// One comparison: the seconds each side took over the whole sample, their verdicts.
#[derive(Debug, Clone)]
pub struct LpComparison {
    pub key_sets: usize,
    pub keys: usize,
    pub ours_seconds: f64,
    pub ours_unselectable: usize,
    /// None where Python with numpy and scipy is missing.
    pub highs_seconds: Option<f64>,
    pub highs_unselectable: Option<usize>,
    /// Keys where HiGHS's verdict differs from the certified one.
    pub disagreements: Option<usize>,
}

const HIGHS_SCRIPT: &str = r#"
import sys, time
import numpy as np
from scipy.optimize import linprog
sets = np.load(sys.argv[1], allow_pickle=False)   # (sets, n_max, d) zero-padded
sizes = np.load(sys.argv[2], allow_pickle=False)  # (sets,) n of each set
out = []
start = time.perf_counter()
for keys, n in zip(sets, sizes.astype(int)):
    keys = keys[:n].astype(np.float64)
    for i in range(n):
        others = np.delete(keys, i, axis=0)
        a_eq = np.vstack([others.T, np.ones(n - 1)])
        b_eq = np.append(keys[i], 1.0)
        r = linprog(np.zeros(n - 1), A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        out.append(1 if r.status == 0 else 0)   # feasible: inside the hull, unselectable
seconds = time.perf_counter() - start
print(seconds)
print("".join(map(str, out)))
"#;

/// Decides the sample with our engine (certified, one thread) and with a HiGHS LP per key.
pub fn compare(sample: &LpSample) -> Result<LpComparison> {
    let sets = sample.key_sets();
    if sets.is_empty() || sample.dims.contains(&0) || sample.sizes.contains(&0) {
        return Err(Error::usage(
            "the LP comparison needs d ≥ 1, n ≥ 1 and runs ≥ 1",
        ));
    }
    let params = FigureParams {
        seed: sample.seed,
        ..FigureParams::paper(NormSpec::None)
    };
    let start = Instant::now();
    let mut ours = Vec::new();
    for &(d, n, run) in &sets {
        ours.extend(
            decide_run(&params, d, n, run)?
                .iter()
                .map(|x| !x.selectable()),
        );
    }
    let ours_seconds = start.elapsed().as_secs_f64();
    let ours_unselectable = ours.iter().filter(|&&u| u).count();
    let highs = run_highs(sample, &sets)?;
    let (highs_seconds, highs_unselectable, disagreements) = match highs {
        Some((seconds, verdicts)) => {
            if verdicts.len() != ours.len() {
                return Err(Error::io(format!(
                    "HiGHS gave {} verdicts for {} keys",
                    verdicts.len(),
                    ours.len()
                )));
            }
            let differ = verdicts.iter().zip(&ours).filter(|(a, b)| a != b).count();
            (
                Some(seconds),
                Some(verdicts.iter().filter(|&&u| u).count()),
                Some(differ),
            )
        }
        None => (None, None, None),
    };
    Ok(LpComparison {
        key_sets: sets.len(),
        keys: ours.len(),
        ours_seconds,
        ours_unselectable,
        highs_seconds,
        highs_unselectable,
        disagreements,
    })
}

/// HiGHS's seconds and verdicts (true: unselectable), key by key in our order; None where
/// Python ([`crate::npy::python`]), numpy or scipy is missing.
fn run_highs(
    sample: &LpSample,
    sets: &[(usize, usize, usize)],
) -> Result<Option<(f64, Vec<bool>)>> {
    use crate::npy::{python, write, NpyArray, NpyData};
    let n_max = sample.sizes.iter().copied().max().unwrap_or(0);
    let d_max = sample.dims.iter().copied().max().unwrap_or(0);
    // The sets padded to one (sets, n_max, d_max) f32 array; a set's d columns come first
    // (the zero columns after them change no hull question).
    let mut padded = vec![0f32; sets.len() * n_max * d_max];
    for (s, &(d, n, run)) in sets.iter().enumerate() {
        for (k, x) in gaussian_keys(sample.seed, d, n, run)
            .into_iter()
            .enumerate()
        {
            padded[(s * n_max + k / d) * d_max + k % d] = x as f32;
        }
    }
    let dir = std::env::temp_dir().join(format!("normoracle-highs-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (keys_path, sizes_path) = (dir.join("keys.npy"), dir.join("sizes.npy"));
    write(
        &keys_path,
        &NpyArray::new(vec![sets.len(), n_max, d_max], NpyData::F32(padded))?,
    )?;
    let sizes = sets.iter().map(|&(_, n, _)| n as f64).collect();
    write(
        &sizes_path,
        &NpyArray::new(vec![sets.len()], NpyData::F64(sizes))?,
    )?;
    let out = std::process::Command::new(python())
        .arg("-c")
        .arg(HIGHS_SCRIPT)
        .arg(&keys_path)
        .arg(&sizes_path)
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = match out {
        Ok(o) if o.status.success() => o,
        _ => return Ok(None),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let seconds = lines
        .next()
        .and_then(|l| l.trim().parse::<f64>().ok())
        .ok_or_else(|| Error::io(format!("the HiGHS script printed '{}'", text.trim())))?;
    let verdicts = lines
        .next()
        .unwrap_or("")
        .trim()
        .bytes()
        .map(|b| b == b'1')
        .collect();
    Ok(Some((seconds, verdicts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small sample: every key counted, our verdicts those of the figure's engine, and,
    /// where scipy is installed, HiGHS agreeing with them on these well-separated keys.
    #[test]
    fn a_small_sample_is_compared_key_by_key() {
        let sample = LpSample {
            dims: vec![2, 3],
            sizes: vec![4, 9],
            runs: 2,
            seed: 123,
        };
        let c = compare(&sample).unwrap();
        assert_eq!(c.key_sets, 8);
        assert_eq!(c.keys, 2 * 2 * (4 + 9));
        assert!(c.ours_unselectable > 0 && c.ours_unselectable < c.keys);
        if let Some(highs) = c.highs_unselectable {
            assert_eq!(c.disagreements, Some(0), "HiGHS found {highs}");
        }
    }
}
