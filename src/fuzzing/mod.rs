//! What the fuzz targets in `fuzz/` check, kept in the library so `cargo test` replays seed
//! corpora and minimized findings through the same decoding and assertions
//! (`tests/fuzz_regressions.rs`).
//!
//! - [`input`]: the byte formats of fuzz inputs (every byte string decodes) and their
//!   inverses, for seed corpora.
//! - [`checks`]: the properties, returning a [`checks::Finding`] instead of panicking.
//! - [`seeds`]: seed corpora from the battery.
//! - [`sandbox`]: the files the CLI target's arguments may name.
//!
//! The targets, by name (`fuzz/fuzz_targets/<name>.rs`): `kernel_<builtin>_<dtype>` (a
//! builtin kernel passes the judge: `reference-f64`, `native`, and `candle-nn` and
//! `candle-nn-module` with the fuzz crate's `candle` feature), `reference` (the reference equals its slow path),
//! `judge` (arbitrary outputs: no panic, consistent books), `npy` (`npy::parse` of arbitrary
//! bytes), `certificate` (every unselectability verdict verifies, [`keys`]), `worker_protocol`
//! (the isolated harness's frames: no panic, decode ∘ encode is the identity) and `cli`
//! (arbitrary arguments to the binary's parser; checked in the fuzz crate, which compiles the
//! binary's `cli` module, and by the tests through the binary).

pub mod checks;
pub mod input;
pub mod keys;
pub mod sandbox;
pub mod seeds;

use crate::adapters;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::problem::Op;
pub use checks::Finding;

/// A fuzz target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A builtin kernel (by its `adapters::builtin` name) in one dtype passes the judge.
    Kernel { kernel: String, dtype: Dtype },
    /// The reference agrees with its slow path.
    Reference,
    /// The judge on arbitrary outputs.
    Judge,
    /// `.npy` parsing of arbitrary bytes.
    Npy,
    /// Unselectable-key verdicts and their certificates.
    Certificate,
    /// Arbitrary command lines (parsed by the binary's clap definitions).
    Cli,
    /// The isolated harness's worker protocol: arbitrary frames decode without panicking,
    /// and every frame that decodes encodes to the same bytes.
    WorkerProtocol,
}

impl Target {
    /// The target's file name in `fuzz/fuzz_targets/` (and its corpus directory).
    pub fn name(&self) -> String {
        match self {
            Target::Kernel { kernel, dtype } => {
                format!("kernel_{}_{dtype}", kernel.replace('-', "_"))
            }
            Target::Reference => "reference".into(),
            Target::Judge => "judge".into(),
            Target::Npy => "npy".into(),
            Target::Certificate => "certificate".into(),
            Target::Cli => "cli".into(),
            Target::WorkerProtocol => "worker_protocol".into(),
        }
    }

    /// The target a name denotes (`kernel_reference_f64_bf16` → reference-f64 in bf16).
    pub fn from_name(name: &str) -> Result<Target> {
        match name {
            "reference" => return Ok(Target::Reference),
            "judge" => return Ok(Target::Judge),
            "npy" => return Ok(Target::Npy),
            "certificate" => return Ok(Target::Certificate),
            "cli" => return Ok(Target::Cli),
            "worker_protocol" => return Ok(Target::WorkerProtocol),
            _ => {}
        }
        name.strip_prefix("kernel_")
            .and_then(|rest| rest.rsplit_once('_'))
            .and_then(|(kernel, dtype)| {
                Some(Target::Kernel {
                    kernel: kernel.replace('_', "-"),
                    dtype: dtype.parse().ok()?,
                })
            })
            .ok_or_else(|| Error::usage(format!("unknown fuzz target '{name}'")))
    }

    /// The targets the library checks itself: each of our own builtin kernels
    /// ([`adapters::OWN_BUILTINS`]) in every dtype it implements, the reference, the judge,
    /// the `.npy` reader and the certificates. (candle's targets find candle's inaccuracies
    /// at once; they are fuzzed on request, not held to a pass.)
    pub fn library_checked() -> Vec<Target> {
        let mut all = Vec::new();
        for name in adapters::OWN_BUILTINS {
            let kernel = adapters::builtin(name).expect("builtin names resolve");
            for dtype in Dtype::ALL {
                if Op::ALL.iter().any(|&op| kernel.supports(op, dtype)) {
                    all.push(Target::Kernel {
                        kernel: name.to_string(),
                        dtype,
                    });
                }
            }
        }
        all.extend([
            Target::Reference,
            Target::Judge,
            Target::Npy,
            Target::Certificate,
            Target::WorkerProtocol,
        ]);
        all
    }

    /// The seed corpus of this target, from the battery.
    pub fn seeds(&self) -> Vec<Vec<u8>> {
        match self {
            Target::Kernel { dtype, .. } => seeds::kernel(*dtype),
            Target::Reference => seeds::reference(),
            Target::Judge => seeds::judge(),
            Target::Npy => seeds::npy(),
            Target::Certificate => seeds::certificate(),
            Target::Cli => seeds::cli(),
            Target::WorkerProtocol => seeds::worker_protocol(),
        }
    }
}

/// Checks one input of a target. The CLI target is checked in the fuzz crate (it needs the
/// binary's parser): asking here is a usage error, reported as a finding.
pub fn check(target: &Target, bytes: &[u8]) -> std::result::Result<(), Finding> {
    match target {
        Target::Kernel { kernel, dtype } => {
            let k = adapters::builtin(kernel).map_err(|e| Finding(e.to_string()))?;
            let (problem, _) = input::decode_problem(bytes, Some(*dtype), false);
            checks::kernel_passes(k.as_ref(), &problem)
        }
        Target::Reference => {
            let (problem, _) = input::decode_problem(bytes, None, false);
            checks::reference_matches_slow_path(&problem)
        }
        Target::Judge => checks::judge_is_consistent(bytes),
        Target::Npy => checks::npy_is_consistent(bytes),
        Target::Certificate => keys::certificates_verify(bytes),
        Target::WorkerProtocol => {
            crate::harness::protocol::check_round_trip(bytes).map_err(Finding)
        }
        Target::Cli => Err(Finding(
            "the cli target runs the binary's parser: use the fuzz crate or the binary".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let mut all = Target::library_checked();
        all.push(Target::Cli);
        for t in all {
            assert_eq!(Target::from_name(&t.name()).unwrap(), t);
        }
        assert_eq!(
            Target::from_name("kernel_reference_f64_bf16").unwrap(),
            Target::Kernel {
                kernel: "reference-f64".into(),
                dtype: Dtype::BF16
            }
        );
        assert!(Target::from_name("kernel_x_f8").is_err());
        assert!(Target::from_name("nope").is_err());
    }
}
