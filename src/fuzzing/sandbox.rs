//! The directory the CLI target's command lines run in: small `.npy` problems with their
//! correctly rounded outputs for every dtype, a malformed file, and a `cases` directory with
//! a two-case manifest (one case with outputs, one without). Paths on fuzzed command lines
//! are confined to it, so fuzzing reads only these files and writes nothing.

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::exact;
use crate::manifest::{Manifest, ManifestCase, MANIFEST};
use crate::npy;
use crate::problem::{Eps, EpsConvention, Op, Problem};
use std::path::{Component, Path, PathBuf};

/// Bumped whenever the files change (fuzzing processes share a sandbox per layout).
pub const LAYOUT: u32 = 1;
/// A file that is not a `.npy` file.
pub const GARBAGE: &str = "garbage.npy";
/// The cases directory (`normoracle check cases`).
pub const CASES: &str = "cases";
/// Rows and width of the sandbox's problems.
const ROWS: usize = 4;
const D: usize = 16;

/// The name of a sandbox file: `<dtype>_<what>.npy`, what ∈ x, y, gamma, beta.
pub fn file(dtype: Dtype, what: &str) -> String {
    format!("{dtype}_{what}.npy")
}

/// The sandbox problem in `dtype`: layer norm, ε = 1e-5 inside, with γ and β; rows that
/// mix scales and signs, one of them constant.
pub fn problem(dtype: Dtype) -> Problem {
    let value = |r: usize, i: usize| -> f64 {
        if r == 3 {
            return 1234.0;
        }
        let t = (i as f64 - 7.5) / 4.0;
        let scale = [1.0, 1e-3, 250.0][r];
        scale * (t + 0.125 * ((i * 7 + r) % 5) as f64)
    };
    Problem {
        op: Op::LayerNorm,
        dtype,
        eps: Eps::from_f32(1e-5).expect("valid"),
        convention: EpsConvention::Inside,
        rows: ROWS,
        d: D,
        x: (0..ROWS * D)
            .map(|k| dtype.round_f64(value(k / D, k % D)))
            .collect(),
        gamma: Some(
            (0..D)
                .map(|i| dtype.round_f64(1.0 + i as f64 / 16.0))
                .collect(),
        ),
        beta: Some(
            (0..D)
                .map(|i| dtype.round_f64(i as f64 / 64.0 - 0.1))
                .collect(),
        ),
    }
}

/// Writes the sandbox's files into `dir` (created if needed).
pub fn write(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir.join(CASES))
        .map_err(|e| Error::io(format!("cannot create {}: {e}", dir.display())))?;
    let mut cases = Vec::new();
    for dtype in Dtype::ALL {
        let p = problem(dtype);
        let y = exact::reference(&p)?.y;
        let arrays = [
            ("x", vec![ROWS, D], &p.x),
            ("y", vec![ROWS, D], &y),
            ("gamma", vec![D], p.gamma.as_ref().expect("given")),
            ("beta", vec![D], p.beta.as_ref().expect("given")),
        ];
        for (what, shape, bits) in arrays {
            let array = npy::from_bits(shape, dtype, bits)?;
            npy::write(&dir.join(file(dtype, what)), &array)?;
            // The cases directory holds f32 with outputs and bf16 without.
            if matches!(dtype, Dtype::F32 | Dtype::BF16) && what != "beta" {
                let skip = dtype == Dtype::BF16 && what == "y";
                if !skip {
                    npy::write(&dir.join(CASES).join(file(dtype, what)), &array)?;
                }
            }
        }
        if matches!(dtype, Dtype::F32 | Dtype::BF16) {
            cases.push(ManifestCase {
                id: cases.len(),
                op: p.op.name().into(),
                dtype: dtype.name().into(),
                eps_bits: format!("0x{:08x}", p.eps.value().to_bits()),
                eps: p.eps.value(),
                convention: p.convention.name().into(),
                family: "sandbox".into(),
                rows: ROWS,
                d: D,
                x: file(dtype, "x"),
                gamma: Some(file(dtype, "gamma")),
                beta: None,
                y: file(dtype, "y"),
            });
        }
    }
    // Case 0's outputs were computed with β; its manifest entry has none, so it fails: the
    // cases directory exercises a failing verdict and a missing output.
    let manifest = Manifest {
        normoracle: env!("CARGO_PKG_VERSION").into(),
        seed: 0,
        storage: "f16 '<f2', bf16 '<u2' (bit patterns), f32 '<f4', f64 '<f8'".into(),
        domain: None,
        cases,
    };
    let text = serde_json::to_string_pretty(&manifest).expect("manifest serializes");
    std::fs::write(dir.join(CASES).join(MANIFEST), text)
        .map_err(|e| Error::io(format!("cannot write the sandbox manifest: {e}")))?;
    std::fs::write(dir.join(GARBAGE), b"\x93NUMPY\x01\x00garbage")
        .map_err(|e| Error::io(format!("cannot write {GARBAGE}: {e}")))?;
    Ok(())
}

/// Writes the sandbox once into `dir` (shared by concurrent fuzzing processes: written to a
/// private directory, then renamed into place).
pub fn ensure(dir: &Path) -> Result<()> {
    if dir.join(CASES).join(MANIFEST).exists() {
        return Ok(());
    }
    let private = dir.with_extension(format!("tmp{}", std::process::id()));
    write(&private)?;
    if std::fs::rename(&private, dir).is_err() {
        // Another process won the race (or a stale directory is in the way): keep theirs.
        let _ = std::fs::remove_dir_all(&private);
    }
    if dir.join(CASES).join(MANIFEST).exists() {
        Ok(())
    } else {
        Err(Error::io(format!(
            "cannot set up the sandbox {}",
            dir.display()
        )))
    }
}

/// `path` inside `sandbox`, or None when it could leave it (absolute, `..`, or empty).
pub fn confine(sandbox: &Path, path: &Path) -> Option<PathBuf> {
    let inside = path.components().count() > 0
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    inside.then(|| sandbox.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confinement() {
        let s = Path::new("/sandbox");
        assert_eq!(confine(s, Path::new("a/b.npy")), Some(s.join("a/b.npy")));
        assert_eq!(confine(s, Path::new("./a")), Some(s.join("./a")));
        assert_eq!(confine(s, Path::new("../a")), None);
        assert_eq!(confine(s, Path::new("a/../../b")), None);
        assert_eq!(confine(s, Path::new("/etc/passwd")), None);
        assert_eq!(confine(s, Path::new("")), None);
    }

    #[test]
    fn sandbox_problems_are_defined_and_its_outputs_pass() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path()).unwrap();
        for dtype in Dtype::ALL {
            let p = problem(dtype);
            let out = exact::reference(&p).unwrap();
            assert!(out.undefined_rows().is_empty());
            let y = npy::read(&dir.path().join(file(dtype, "y"))).unwrap();
            assert_eq!(npy::bits_of(&y, dtype, "y").unwrap(), out.y);
        }
        let verdicts = crate::manifest::judge_dir(&dir.path().join(CASES), "sandbox").unwrap();
        let missing = verdicts.missing_total();
        let reports = verdicts.reports;
        assert_eq!(missing, 1);
        assert_eq!(reports.len(), 1);
        assert!(
            !reports[0].passed(),
            "outputs computed with β pass without it"
        );
    }
}
