//! Kernels in shared libraries, through normoracle's C ABI (row-major contiguous; γ/β may be
//! NULL meaning 1 and 0; return 0 on success):
//!
//! ```c
//! int normoracle_layer_norm_f32(const float *x, const float *gamma, const float *beta,
//!                               float *y, size_t rows, size_t d, float eps);
//! int normoracle_rms_norm_f32(const float *x, const float *gamma, float *y,
//!                             size_t rows, size_t d, float eps);
//! /* _f16 and _bf16 likewise, with uint16_t bit patterns for x, gamma, beta and y */
//! ```

use super::Kernel;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::problem::{Op, Problem};
use std::ffi::c_int;
use std::path::{Path, PathBuf};

/// A value as the ABI passes it: f32, or the bit pattern of an f16/bf16 as u16.
trait AbiValue: Copy + Default {
    fn from_problem_bits(bits: u64) -> Self;
    fn to_problem_bits(self) -> u64;
}

impl AbiValue for f32 {
    fn from_problem_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fn to_problem_bits(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl AbiValue for u16 {
    fn from_problem_bits(bits: u64) -> Self {
        bits as u16
    }
    fn to_problem_bits(self) -> u64 {
        u64::from(self)
    }
}

type LayerNormFn<V> =
    unsafe extern "C" fn(*const V, *const V, *const V, *mut V, usize, usize, f32) -> c_int;
type RmsNormFn<V> = unsafe extern "C" fn(*const V, *const V, *mut V, usize, usize, f32) -> c_int;

/// The entry point of one op over values `V`.
#[derive(Clone, Copy)]
enum Entry<V> {
    LayerNorm(LayerNormFn<V>),
    RmsNorm(RmsNormFn<V>),
}

impl<V: AbiValue> Entry<V> {
    /// Resolves `symbol` as the ABI's entry point of `op`.
    ///
    /// # Safety
    /// The symbol must have the ABI's signature for `op` and `V` (the user vouches for it).
    unsafe fn resolve(
        library: &libloading::Library,
        symbol: &str,
        op: Op,
    ) -> std::result::Result<Self, libloading::Error> {
        Ok(match op {
            Op::LayerNorm => Entry::LayerNorm(*library.get::<LayerNormFn<V>>(symbol.as_bytes())?),
            Op::RmsNorm => Entry::RmsNorm(*library.get::<RmsNormFn<V>>(symbol.as_bytes())?),
        })
    }

    /// Calls the kernel on `p`: its output bits, or the non-zero code it returned.
    fn call(self, p: &Problem) -> std::result::Result<Vec<u64>, c_int> {
        let values = |v: &[u64]| {
            v.iter()
                .map(|&b| V::from_problem_bits(b))
                .collect::<Vec<V>>()
        };
        let x = values(&p.x);
        let g = p.gamma.as_deref().map(values);
        let b = p.beta.as_deref().map(values);
        let mut y = vec![V::default(); p.x.len()];
        let (rows, d, eps) = (p.rows, p.d, p.eps.value());
        // SAFETY: the buffers have the lengths the ABI promises (rows·d, d, d), or are NULL.
        let rc = unsafe {
            match self {
                Entry::LayerNorm(f) => f(
                    x.as_ptr(),
                    ptr_or_null(&g),
                    ptr_or_null(&b),
                    y.as_mut_ptr(),
                    rows,
                    d,
                    eps,
                ),
                Entry::RmsNorm(f) => f(x.as_ptr(), ptr_or_null(&g), y.as_mut_ptr(), rows, d, eps),
            }
        };
        match rc {
            0 => Ok(y.into_iter().map(V::to_problem_bits).collect()),
            rc => Err(rc),
        }
    }
}

/// The resolved entry point, by the ABI's value type.
#[derive(Clone, Copy)]
enum Entries {
    F32(Entry<f32>),
    U16(Entry<u16>),
}

/// One symbol of a loaded library, for one (op, dtype).
pub struct DylibKernel {
    // Keeps the library mapped while `entry` is callable.
    _library: libloading::Library,
    entry: Entries,
    path: PathBuf,
    symbol: String,
    op: Op,
    dtype: Dtype,
}

/// The ABI's symbol name for an op and dtype, e.g. `normoracle_layer_norm_f32`.
pub fn default_symbol(op: Op, dtype: Dtype) -> String {
    format!("normoracle_{}_{}", op.name(), dtype.name())
}

impl DylibKernel {
    /// Loads `path` and resolves `symbol` (default: the ABI's name for op and dtype).
    pub fn load(path: &Path, symbol: Option<&str>, op: Op, dtype: Dtype) -> Result<Self> {
        if dtype == Dtype::F64 {
            return Err(Error::usage(
                "the C ABI has no f64 entry points (f32, f16, bf16)",
            ));
        }
        let symbol = symbol
            .map(str::to_string)
            .unwrap_or_else(|| default_symbol(op, dtype));
        // SAFETY: loading runs the library's initializers; the user asked for this library.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| Error::io(format!("cannot load {}: {e}", path.display())))?;
        let missing = |e: libloading::Error| {
            Error::input(format!(
                "symbol '{symbol}' not found in {}: {e}",
                path.display()
            ))
        };
        // SAFETY: the symbol's type is the ABI's; a library exporting another signature under
        // this name breaks the ABI contract, which the user vouches for.
        let entry = unsafe {
            match dtype {
                Dtype::F32 => Entries::F32(Entry::resolve(&library, &symbol, op).map_err(missing)?),
                _ => Entries::U16(Entry::resolve(&library, &symbol, op).map_err(missing)?),
            }
        };
        Ok(DylibKernel {
            _library: library,
            entry,
            path: path.to_path_buf(),
            symbol,
            op,
            dtype,
        })
    }
}

fn ptr_or_null<T>(v: &Option<Vec<T>>) -> *const T {
    v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr())
}

impl Kernel for DylibKernel {
    fn name(&self) -> String {
        format!("lib:{}:{}", self.path.display(), self.symbol)
    }

    fn supports(&self, op: Op, dtype: Dtype) -> bool {
        op == self.op && dtype == self.dtype
    }

    fn run(&self, p: &Problem) -> std::result::Result<Vec<u64>, String> {
        match self.entry {
            Entries::F32(entry) => entry.call(p),
            Entries::U16(entry) => entry.call(p),
        }
        .map_err(|rc| format!("the kernel returned {rc}"))
    }
}
