//! Kernels under test, behind one trait: a plain careful f64 kernel (`reference_f64`), Rust
//! closures (`closure`), shared libraries through the C ABI (`dylib`), and our own kernels.

pub mod closure;
pub mod dylib;
pub mod reference_f64;

use crate::dtype::Dtype;
use crate::harness::{Call, Finding};
use crate::problem::{Op, Problem};

#[cfg(feature = "candle")]
pub mod candle;
pub mod native;

/// A normalization kernel the judge can run.
pub trait Kernel: Sync {
    /// A short name for reports (`native`, `reference-f64`, `lib:libfoo.so`, ...).
    fn name(&self) -> String;
    /// Whether it implements this op in this dtype.
    fn supports(&self, op: Op, dtype: Dtype) -> bool;
    /// Computes the outputs of `problem` (rows × d bits of `problem.dtype`), or says why it
    /// could not (a non-zero return code of a C kernel, say).
    fn run(&self, problem: &Problem) -> std::result::Result<Vec<u64>, String>;

    /// Runs the kernel as the judge calls it: the outputs and what was seen around the call.
    /// In process (this default), the floating-point control state is read before and after
    /// `run`, and restored if the kernel changed it (a finding), so that the judge never runs
    /// in a state a kernel set. The isolated harness (`harness::Isolated`) sees more.
    fn call(&self, problem: &Problem) -> Call {
        crate::harness::call_in_process(self, problem)
    }

    /// The problem the next call will be (None: there is none): an isolated kernel sends it
    /// to its worker now, so that the kernel runs while the judge works on the call before.
    fn prepare(&self, _next: Option<&Problem>) {}

    /// Called once after the last case: what the kernel did after its last call returned.
    fn finish(&self) -> Vec<Finding> {
        Vec::new()
    }
}

/// The kernels compiled into normoracle, by the names `fuzz --builtin` accepts.
pub fn builtin(name: &str) -> crate::Result<Box<dyn Kernel>> {
    match name {
        "reference-f64" => Ok(Box::new(reference_f64::ReferenceF64)),
        "native" => Ok(Box::new(native::Native::default())),
        #[cfg(feature = "candle")]
        other if candle::Candle::named(other).is_some() => {
            Ok(Box::new(candle::Candle::named(other).expect("checked")))
        }
        other if other.starts_with("native-") => {
            native::Native::named(other).map(|k| Box::new(k) as Box<dyn Kernel>)
        }
        other => Err(crate::Error::usage(format!(
            "unknown builtin kernel '{other}' (available: {})",
            builtin_names().join(", ")
        ))),
    }
}

/// Our own builtin kernels: the ones whose every verdict must be a pass (the library's tests
/// and the default fuzz run hold them to it). Third-party kernels (candle) are subjects.
pub const OWN_BUILTINS: [&str; 2] = ["reference-f64", "native"];

/// Names of the builtin kernels.
pub fn builtin_names() -> Vec<&'static str> {
    let names = OWN_BUILTINS.to_vec();
    #[cfg(feature = "candle")]
    let names = [names, candle::Candle::NAMES.to_vec()].concat();
    names
}
