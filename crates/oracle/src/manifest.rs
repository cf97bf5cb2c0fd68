//! The battery on disk, for frameworks outside Rust: `normoracle cases --out DIR` writes each
//! case's x, γ and β as .npy files and a `manifest.json` describing them (op, dtype, ε as
//! exact f32 bits, convention, seed); a driver script writes each case's outputs to the
//! file the manifest names, and `normoracle check DIR` judges them all.

use crate::cases::{self, BatteryConfig, Family};
use crate::domain::{Domain, Interval};
use crate::error::{Error, Result};
use crate::judge::{self, ProblemLabel, Report};
use crate::npy;
use crate::problem::{Eps, EpsConvention, Op, Problem};
use crate::Dtype;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The manifest's name inside the directory.
pub const MANIFEST: &str = "manifest.json";

/// One case on disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ManifestCase {
    pub id: usize,
    pub op: String,
    pub dtype: String,
    /// ε as the bits of an f32 (exact), and as a decimal for reading.
    pub eps_bits: String,
    pub eps: f32,
    pub convention: String,
    pub family: String,
    pub rows: usize,
    pub d: usize,
    pub x: String,
    pub gamma: Option<String>,
    pub beta: Option<String>,
    /// Where the driver writes the outputs (same shape and dtype as x).
    pub y: String,
}

/// The whole manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub normoracle: String,
    pub seed: u64,
    /// How dtypes are stored: f16 as '<f2', bf16 as '<u2' bit patterns, f32 '<f4', f64 '<f8'.
    pub storage: String,
    /// The kernel's declared domain (`cases --domain`), which `check DIR` decides its verdict
    /// on unless told otherwise; absent: every row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    pub cases: Vec<ManifestCase>,
}

/// Which battery `write_cases` writes: the ops and dtypes, the families and ε range kept
/// (the same filters as `fuzz`), and the domain recorded for `check`.
#[derive(Debug, Clone)]
pub struct CasesSpec {
    pub ops: Vec<Op>,
    pub dtypes: Vec<Dtype>,
    pub convention: EpsConvention,
    pub seed: u64,
    pub random_cases: usize,
    /// Keep only these families (all when empty).
    pub families: Vec<Family>,
    /// Keep only the cases whose ε lies here.
    pub eps: Interval,
    pub domain: Domain,
}

impl CasesSpec {
    /// Every family and ε of the batteries of these ops and dtypes.
    pub fn new(
        ops: &[Op],
        dtypes: &[Dtype],
        convention: EpsConvention,
        seed: u64,
        random_cases: usize,
    ) -> Self {
        CasesSpec {
            ops: ops.to_vec(),
            dtypes: dtypes.to_vec(),
            convention,
            seed,
            random_cases,
            families: Vec::new(),
            eps: Interval::ALL,
            domain: Domain::default(),
        }
    }
}

/// Writes the batteries of every (op, dtype) given into `dir`; returns the case count.
/// Each case is written as it is generated: a large `random_cases` costs disk, not memory.
pub fn write_cases(dir: &Path, spec: &CasesSpec) -> Result<usize> {
    let mut writer = DirWriter::create(dir, spec.seed)?;
    if !spec.domain.is_everything() {
        writer.manifest.domain = Some(spec.domain.to_string());
    }
    for &op in &spec.ops {
        for &dtype in &spec.dtypes {
            let mut config = BatteryConfig::new(op, dtype, spec.seed);
            config.convention = spec.convention;
            config.random_cases = spec.random_cases;
            config.families = spec.families.clone();
            config.eps = spec.eps;
            for id in 0..cases::battery::battery_len(&config) {
                if let Some(c) = cases::case(&config, id) {
                    writer.add(DiskCase {
                        id: c.id,
                        family: c.family.name(),
                        problem: &c.problem,
                    })?;
                }
            }
        }
    }
    writer.finish()
}

/// Readies `dir` for a new battery. A directory that exists must be empty: the outputs of an
/// earlier run left there would be judged by `check` as this run's, and a rerun with the
/// same seed would pass without any driver having run. With `overwrite`, the files the old
/// manifest names (inputs and outputs) and the manifest itself are removed instead.
pub fn prepare_dir(dir: &Path, overwrite: bool) -> Result<()> {
    let mut entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("cannot read {}: {e}", dir.display()))),
        Ok(entries) => entries,
    };
    if entries.next().is_none() {
        return Ok(());
    }
    if !overwrite {
        return Err(Error::usage(format!(
            "{} is not empty (an earlier run's outputs there would be judged as this run's); \
             choose a new directory, or --force to remove the files its manifest names",
            dir.display()
        )));
    }
    // An unreadable manifest names nothing to remove; write_problems still removes every
    // outputs file the new manifest names.
    if let Ok(old) = read_manifest(dir) {
        for c in &old.cases {
            let names = [Some(&c.x), c.gamma.as_ref(), c.beta.as_ref(), Some(&c.y)];
            for name in names.into_iter().flatten() {
                remove_if_present(dir, name)?;
            }
        }
    }
    remove_if_present(dir, MANIFEST)
}

/// Removes the file `name` of `dir` if it exists. Only plain file names are taken: a
/// manifest naming `../x` cannot make `--force` remove anything outside the directory.
fn remove_if_present(dir: &Path, name: &str) -> Result<()> {
    if Path::new(name).file_name() != Some(std::ffi::OsStr::new(name)) {
        return Ok(());
    }
    let path = dir.join(name);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io(format!("cannot remove {}: {e}", path.display())))
        }
        _ => Ok(()),
    }
}

/// One problem to write into a cases directory: its id (unique per op and dtype) and the
/// label its outputs are tallied under (a battery family, a probe's name...).
#[derive(Debug, Clone, Copy)]
pub struct DiskCase<'a> {
    pub id: usize,
    pub family: &'a str,
    pub problem: &'a Problem,
}

/// Writes problems (x, γ, β as .npy files) and their manifest into `dir`, for any driver
/// that reads `normoracle cases` directories; returns the case count.
pub fn write_problems<'a>(
    dir: &Path,
    seed: u64,
    cases: impl IntoIterator<Item = DiskCase<'a>>,
) -> Result<usize> {
    let mut writer = DirWriter::create(dir, seed)?;
    for case in cases {
        writer.add(case)?;
    }
    writer.finish()
}

/// A cases directory being written: each case's files at once, the manifest at the end.
struct DirWriter<'d> {
    dir: &'d Path,
    manifest: Manifest,
}

impl<'d> DirWriter<'d> {
    fn create(dir: &'d Path, seed: u64) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("cannot create {}: {e}", dir.display())))?;
        Ok(DirWriter {
            dir,
            manifest: Manifest {
                normoracle: env!("CARGO_PKG_VERSION").into(),
                seed,
                storage: "f16 '<f2', bf16 '<u2' (bit patterns), f32 '<f4', f64 '<f8'".into(),
                domain: None,
                cases: Vec::new(),
            },
        })
    }

    fn add(&mut self, case: DiskCase) -> Result<()> {
        let dir = self.dir;
        let p = case.problem;
        let stem = format!("{}_{}_{:04}", p.op, p.dtype, case.id);
        let y = format!("{stem}_y.npy");
        // Outputs already there are no driver's answer to this battery.
        remove_if_present(dir, &y)?;
        let write = |suffix: &str, shape: Vec<usize>, bits: &[u64]| -> Result<String> {
            let name = format!("{stem}_{suffix}.npy");
            npy::write(&dir.join(&name), &npy::from_bits(shape, p.dtype, bits)?)?;
            Ok(name)
        };
        self.manifest.cases.push(ManifestCase {
            id: case.id,
            op: p.op.name().into(),
            dtype: p.dtype.name().into(),
            eps_bits: format!("0x{:08x}", p.eps.value().to_bits()),
            eps: p.eps.value(),
            convention: p.convention.name().into(),
            family: case.family.into(),
            rows: p.rows,
            d: p.d,
            x: write("x", vec![p.rows, p.d], &p.x)?,
            gamma: p
                .gamma
                .as_ref()
                .map(|g| write("gamma", vec![p.d], g))
                .transpose()?,
            beta: p
                .beta
                .as_ref()
                .map(|b| write("beta", vec![p.d], b))
                .transpose()?,
            y,
        });
        Ok(())
    }

    fn finish(self) -> Result<usize> {
        let text = serde_json::to_string_pretty(&self.manifest).expect("manifest serializes");
        std::fs::write(self.dir.join(MANIFEST), text)
            .map_err(|e| Error::io(format!("cannot write the manifest: {e}")))?;
        Ok(self.manifest.cases.len())
    }
}

/// Reads a directory's manifest.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::io(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::input(format!("{}: malformed manifest: {e}", path.display())))
}

/// A case read back from a directory.
#[derive(Debug, Clone)]
pub struct ReadCase {
    pub id: usize,
    pub family: String,
    pub problem: Problem,
    /// The outputs a driver wrote, None where it wrote none.
    pub outputs: Option<Vec<u64>>,
    /// The file the manifest names for the outputs.
    pub y_file: String,
}

/// Every case of a directory with the outputs written so far, and the manifest's seed.
pub fn read_cases(dir: &Path) -> Result<(u64, Vec<ReadCase>)> {
    let (manifest, cases) = read_selected(dir, &DirSelection::default())?;
    Ok((manifest.seed, cases))
}

/// The cases of a directory that `selection` keeps, with the manifest (its cases list
/// emptied: they are what was read).
fn read_selected(dir: &Path, selection: &DirSelection) -> Result<(Manifest, Vec<ReadCase>)> {
    let mut manifest = read_manifest(dir)?;
    let listed = std::mem::take(&mut manifest.cases);
    let mut out = Vec::with_capacity(listed.len());
    for c in listed {
        let op: Op = c.op.parse()?;
        let dtype: Dtype = c.dtype.parse()?;
        if !selection.keeps(op, dtype, c.id) {
            continue;
        }
        let read_bits = |name: &str, what: &str| -> Result<(Vec<usize>, Vec<u64>)> {
            let a = npy::read(&dir.join(name))?;
            Ok((a.shape.clone(), npy::bits_of(&a, dtype, what)?))
        };
        let (shape, x) = read_bits(&c.x, "x")?;
        // The manifest's rows and d must describe x: then rows × d is x's length and cannot
        // overflow anything downstream.
        if shape != [c.rows, c.d] {
            return Err(Error::input(format!(
                "{}: shape {shape:?}, but the manifest says rows = {}, d = {}",
                c.x, c.rows, c.d
            )));
        }
        let outputs = if dir.join(&c.y).exists() {
            let (y_shape, y) = read_bits(&c.y, "y")?;
            if y_shape != shape {
                return Err(Error::input(format!(
                    "{}: shape {y_shape:?}, expected {shape:?}",
                    c.y
                )));
            }
            Some(y)
        } else {
            None
        };
        let problem = Problem {
            op,
            dtype,
            eps: Eps::from_bits_text(&c.eps_bits)?,
            convention: c.convention.parse()?,
            rows: c.rows,
            d: c.d,
            x,
            gamma: c
                .gamma
                .as_ref()
                .map(|g| read_bits(g, "gamma").map(|t| t.1))
                .transpose()?,
            beta: c
                .beta
                .as_ref()
                .map(|b| read_bits(b, "beta").map(|t| t.1))
                .transpose()?,
        };
        out.push(ReadCase {
            id: c.id,
            family: c.family,
            problem,
            outputs,
            y_file: c.y,
        });
    }
    Ok((manifest, out))
}

/// Removes every output file of a directory, so that the next driver starts clean (a driver
/// that skips a case must not leave an earlier driver's outputs to be judged as its own).
pub fn clear_outputs(dir: &Path) -> Result<()> {
    for c in read_manifest(dir)?.cases {
        remove_if_present(dir, &c.y)?;
    }
    Ok(())
}

/// A case of a directory whose outputs file does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingOutput {
    pub op: Op,
    pub dtype: Dtype,
    pub id: usize,
    /// The file the manifest names for its outputs.
    pub y: String,
}

/// The verdicts on a directory's outputs.
#[derive(Debug, Clone)]
pub struct DirVerdicts {
    /// One report per (op, dtype) with at least one case judged, in manifest order.
    pub reports: Vec<Report>,
    /// Cases without outputs, in manifest order.
    pub missing: Vec<MissingOutput>,
}

impl DirVerdicts {
    pub fn missing_total(&self) -> usize {
        self.missing.len()
    }

    pub fn missing_for(&self, op: Op, dtype: Dtype) -> usize {
        self.missing
            .iter()
            .filter(|m| m.op == op && m.dtype == dtype)
            .count()
    }
}

/// Which cases of a directory `check` judges, and on which domain.
#[derive(Debug, Clone, Default)]
pub struct DirSelection {
    pub op: Option<Op>,
    pub dtype: Option<Dtype>,
    pub case: Option<usize>,
    /// The domain of the verdict; None: the manifest's, else every row.
    pub domain: Option<Domain>,
}

impl DirSelection {
    fn keeps(&self, op: Op, dtype: Dtype, id: usize) -> bool {
        self.op.is_none_or(|o| o == op)
            && self.dtype.is_none_or(|t| t == dtype)
            && self.case.is_none_or(|c| c == id)
    }

    /// " (op …, dtype …)" for messages: the filters given.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(op) = self.op {
            parts.push(format!("op {op}"));
        }
        if let Some(dtype) = self.dtype {
            parts.push(format!("dtype {dtype}"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join(", "))
        }
    }
}

/// Judges every case of a directory whose outputs exist: one report per (op, dtype), and the
/// cases whose outputs are missing.
pub fn judge_dir(dir: &Path, kernel_name: &str) -> Result<DirVerdicts> {
    judge_dir_selected(dir, kernel_name, &DirSelection::default())
}

/// Judges the selected cases of a directory, each case's tally kept (`Report::per_case`),
/// the verdict decided on the selection's domain or the manifest's.
pub fn judge_dir_selected(
    dir: &Path,
    kernel_name: &str,
    selection: &DirSelection,
) -> Result<DirVerdicts> {
    let (manifest, cases) = read_selected(dir, selection)?;
    let seed = manifest.seed;
    let domain = match (selection.domain, &manifest.domain) {
        (Some(domain), _) => domain,
        (None, Some(text)) => text.parse().map_err(|e: Error| {
            Error::input(format!("{}: the manifest's domain: {e}", dir.display()))
        })?,
        (None, None) => Domain::default(),
    };
    let mut verdicts = DirVerdicts {
        reports: Vec::new(),
        missing: Vec::new(),
    };
    for c in cases {
        let (op, dtype) = (c.problem.op, c.problem.dtype);
        let Some(y) = &c.outputs else {
            verdicts.missing.push(MissingOutput {
                op,
                dtype,
                id: c.id,
                y: c.y_file,
            });
            continue;
        };
        let reports = &mut verdicts.reports;
        let index = match reports.iter().position(|r| r.op == op && r.dtype == dtype) {
            Some(i) => i,
            None => {
                let convention = c.problem.convention;
                reports.push(
                    Report::new(kernel_name, op, dtype, convention, Some(seed))
                        .within(domain)
                        .keep_cases(),
                );
                reports.len() - 1
            }
        };
        let label = ProblemLabel {
            case: Some(c.id),
            family: c.family.clone(),
        };
        judge::judge_problem(&c.problem, y, &label, &mut reports[index])?;
    }
    Ok(verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::{reference_f64::ReferenceF64, Kernel};

    #[test]
    fn cases_round_trip_through_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let spec = CasesSpec::new(&[Op::RmsNorm], &[Dtype::BF16], EpsConvention::Inside, 3, 2);
        let n = write_cases(dir.path(), &spec).unwrap();
        assert_eq!(n, 9 * 22 + 2);
        let manifest = read_manifest(dir.path()).unwrap();
        // A driver: the builtin f64 kernel writes every case's outputs, except one.
        for c in manifest.cases.iter().skip(1) {
            let x = npy::read(&dir.path().join(&c.x)).unwrap();
            let problem = Problem {
                op: Op::RmsNorm,
                dtype: Dtype::BF16,
                eps: Eps::from_bits_text(&c.eps_bits).unwrap(),
                convention: EpsConvention::Inside,
                rows: c.rows,
                d: c.d,
                x: npy::bits_of(&x, Dtype::BF16, "x").unwrap(),
                gamma: c.gamma.as_ref().map(|g| {
                    npy::bits_of(&npy::read(&dir.path().join(g)).unwrap(), Dtype::BF16, "g")
                        .unwrap()
                }),
                beta: None,
            };
            let y = ReferenceF64.run(&problem).unwrap();
            npy::write(
                &dir.path().join(&c.y),
                &npy::from_bits(x.shape.clone(), Dtype::BF16, &y).unwrap(),
            )
            .unwrap();
        }
        let verdicts = judge_dir(dir.path(), "driver").unwrap();
        let first = &manifest.cases[0];
        assert_eq!(
            verdicts.missing,
            vec![MissingOutput {
                op: Op::RmsNorm,
                dtype: Dtype::BF16,
                id: first.id,
                y: first.y.clone(),
            }]
        );
        assert_eq!(verdicts.reports.len(), 1);
        assert!(verdicts.reports[0].passed());
        assert_eq!(verdicts.reports[0].cases, n - 1);
        // Cleared, nothing is left to judge.
        clear_outputs(dir.path()).unwrap();
        let verdicts = judge_dir(dir.path(), "driver").unwrap();
        assert!(verdicts.reports.is_empty());
        assert_eq!(verdicts.missing_total(), n);
    }
}
