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

type LayerNormF32 =
    unsafe extern "C" fn(*const f32, *const f32, *const f32, *mut f32, usize, usize, f32) -> c_int;
type RmsNormF32 =
    unsafe extern "C" fn(*const f32, *const f32, *mut f32, usize, usize, f32) -> c_int;
type LayerNormU16 =
    unsafe extern "C" fn(*const u16, *const u16, *const u16, *mut u16, usize, usize, f32) -> c_int;
type RmsNormU16 =
    unsafe extern "C" fn(*const u16, *const u16, *mut u16, usize, usize, f32) -> c_int;

#[derive(Clone, Copy)]
enum Entry {
    LayerNormF32(LayerNormF32),
    RmsNormF32(RmsNormF32),
    LayerNormU16(LayerNormU16),
    RmsNormU16(RmsNormU16),
}

/// One symbol of a loaded library, for one (op, dtype).
pub struct DylibKernel {
    // Keeps the library mapped while `entry` is callable.
    _library: libloading::Library,
    entry: Entry,
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
            match (op, dtype) {
                (Op::LayerNorm, Dtype::F32) => Entry::LayerNormF32(
                    *library
                        .get::<LayerNormF32>(symbol.as_bytes())
                        .map_err(missing)?,
                ),
                (Op::RmsNorm, Dtype::F32) => Entry::RmsNormF32(
                    *library
                        .get::<RmsNormF32>(symbol.as_bytes())
                        .map_err(missing)?,
                ),
                (Op::LayerNorm, _) => Entry::LayerNormU16(
                    *library
                        .get::<LayerNormU16>(symbol.as_bytes())
                        .map_err(missing)?,
                ),
                (Op::RmsNorm, _) => Entry::RmsNormU16(
                    *library
                        .get::<RmsNormU16>(symbol.as_bytes())
                        .map_err(missing)?,
                ),
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
        let n = p.x.len();
        let rc = match self.entry {
            Entry::LayerNormF32(_) | Entry::RmsNormF32(_) => {
                let to32 = |v: &[u64]| {
                    v.iter()
                        .map(|&b| f32::from_bits(b as u32))
                        .collect::<Vec<f32>>()
                };
                let x = to32(&p.x);
                let g = p.gamma.as_deref().map(to32);
                let b = p.beta.as_deref().map(to32);
                let mut y = vec![0f32; n];
                // SAFETY: buffers have the lengths the ABI promises (rows·d, d, d).
                let rc = unsafe {
                    match self.entry {
                        Entry::LayerNormF32(f) => f(
                            x.as_ptr(),
                            ptr_or_null(&g),
                            ptr_or_null(&b),
                            y.as_mut_ptr(),
                            p.rows,
                            p.d,
                            p.eps.value(),
                        ),
                        Entry::RmsNormF32(f) => f(
                            x.as_ptr(),
                            ptr_or_null(&g),
                            y.as_mut_ptr(),
                            p.rows,
                            p.d,
                            p.eps.value(),
                        ),
                        _ => unreachable!("f32 entries only"),
                    }
                };
                if rc == 0 {
                    return Ok(y.iter().map(|v| v.to_bits() as u64).collect());
                }
                rc
            }
            Entry::LayerNormU16(_) | Entry::RmsNormU16(_) => {
                let to16 = |v: &[u64]| v.iter().map(|&b| b as u16).collect::<Vec<u16>>();
                let x = to16(&p.x);
                let g = p.gamma.as_deref().map(to16);
                let b = p.beta.as_deref().map(to16);
                let mut y = vec![0u16; n];
                // SAFETY: as above.
                let rc = unsafe {
                    match self.entry {
                        Entry::LayerNormU16(f) => f(
                            x.as_ptr(),
                            ptr_or_null(&g),
                            ptr_or_null(&b),
                            y.as_mut_ptr(),
                            p.rows,
                            p.d,
                            p.eps.value(),
                        ),
                        Entry::RmsNormU16(f) => f(
                            x.as_ptr(),
                            ptr_or_null(&g),
                            y.as_mut_ptr(),
                            p.rows,
                            p.d,
                            p.eps.value(),
                        ),
                        _ => unreachable!("u16 entries only"),
                    }
                };
                if rc == 0 {
                    return Ok(y.iter().map(|&v| v as u64).collect());
                }
                rc
            }
        };
        Err(format!("the kernel returned {rc}"))
    }
}
