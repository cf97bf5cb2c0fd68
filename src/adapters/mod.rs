//! Kernels under test, behind one trait: our own (`native`), a plain f64 two-pass reference
//! implementation, shared libraries through the C ABI (`dylib`), and .npy files (`npy`).

use crate::dtype::Dtype;
use crate::problem::{Op, Problem};

#[cfg(feature = "candle")]
pub mod candle;
pub mod native;

/// A normalization kernel the judge can run.
pub trait Kernel: Sync {
    /// A short name for reports (`native`, `reference-f64`, `lib:libfoo.so`, ...).
    fn name(&self) -> String;
    /// Whether it implements this op in this dtype with this problem's ε convention.
    fn supports(&self, op: Op, dtype: Dtype) -> bool;
    /// Computes the outputs of `problem` (rows × d bits of `problem.dtype`), or says why it
    /// could not (a non-zero return code of a C kernel, say).
    fn run(&self, problem: &Problem) -> std::result::Result<Vec<u64>, String>;
}
