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
use crate::harness::fpenv::FpControl;
use crate::harness::Call;
use crate::problem::{Op, Problem};
use std::ffi::c_int;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

    /// Calls the kernel on raw buffers of the ABI's values.
    ///
    /// # Safety
    /// `x` and `y` hold rows·d values of `V`, `gamma` and `beta` d values or are null; `y` is
    /// writable.
    #[allow(clippy::too_many_arguments)]
    unsafe fn call_raw(
        self,
        x: *const u8,
        gamma: *const u8,
        beta: *const u8,
        y: *mut u8,
        rows: usize,
        d: usize,
        eps: f32,
    ) -> c_int {
        let (x, gamma, beta, y) = (x.cast::<V>(), gamma.cast::<V>(), beta.cast::<V>(), y.cast());
        match self {
            Entry::LayerNorm(f) => f(x, gamma, beta, y, rows, d, eps),
            Entry::RmsNorm(f) => f(x, gamma, y, rows, d, eps),
        }
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
        // SAFETY: the buffers have the lengths the ABI promises (rows·d, d, d), or are NULL.
        let rc = unsafe {
            self.call_raw(
                x.as_ptr().cast(),
                ptr_or_null(&g).cast(),
                ptr_or_null(&b).cast(),
                y.as_mut_ptr().cast(),
                p.rows,
                p.d,
                p.eps.value(),
            )
        };
        match rc {
            0 => Ok(y.into_iter().map(V::to_problem_bits).collect()),
            rc => Err(rc),
        }
    }
}

/// A resolved entry point, by the ABI's value type.
#[derive(Clone, Copy)]
pub struct EntryPoint(Entries);

#[derive(Clone, Copy)]
enum Entries {
    F32(Entry<f32>),
    U16(Entry<u16>),
}

impl EntryPoint {
    /// Resolves `symbol` in `library` as the ABI's entry point of `op` in `dtype`.
    ///
    /// # Safety
    /// The symbol must have the ABI's signature for `op` and `dtype` (the user vouches for it).
    pub unsafe fn resolve(
        library: &libloading::Library,
        symbol: &str,
        op: Op,
        dtype: Dtype,
    ) -> std::result::Result<Self, libloading::Error> {
        Ok(EntryPoint(match dtype {
            Dtype::F32 => Entries::F32(Entry::resolve(library, symbol, op)?),
            _ => Entries::U16(Entry::resolve(library, symbol, op)?),
        }))
    }

    /// Calls the kernel on raw buffers of the ABI's values (f32, or u16 bit patterns).
    ///
    /// # Safety
    /// As the ABI requires: `x` and `y` hold rows·d values of the entry's type, `gamma` and
    /// `beta` d values or are null, `y` is writable.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn call_raw(
        self,
        x: *const u8,
        gamma: *const u8,
        beta: *const u8,
        y: *mut u8,
        rows: usize,
        d: usize,
        eps: f32,
    ) -> c_int {
        match self.0 {
            Entries::F32(e) => e.call_raw(x, gamma, beta, y, rows, d, eps),
            Entries::U16(e) => e.call_raw(x, gamma, beta, y, rows, d, eps),
        }
    }
}

/// One symbol of a loaded library, for one (op, dtype).
pub struct DylibKernel {
    // Keeps the library mapped while `entry` is callable.
    _library: libloading::Library,
    /// What loading changed in the floating-point control state, until the first call says so.
    load_change: Mutex<Option<Vec<String>>>,
    entry: EntryPoint,
    path: PathBuf,
    symbol: String,
    op: Op,
    dtype: Dtype,
}

/// The ABI's symbol name for an op and dtype, e.g. `normoracle_layer_norm_f32`.
pub fn default_symbol(op: Op, dtype: Dtype) -> String {
    format!("normoracle_{}_{}", op.name(), dtype.name())
}

/// Loads `path` and resolves `symbol` (default: the ABI's name for op and dtype): the library
/// (which must stay loaded while the entry point is called), the entry point and the symbol.
/// Loading runs the library's initializers in this process: the isolated harness does it in
/// its worker, never in the oracle.
pub fn open(
    path: &Path,
    symbol: Option<&str>,
    op: Op,
    dtype: Dtype,
) -> Result<(libloading::Library, EntryPoint, String)> {
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
    let entry = unsafe { EntryPoint::resolve(&library, &symbol, op, dtype) }.map_err(missing)?;
    Ok((library, entry, symbol))
}

impl DylibKernel {
    /// Loads `path` into this process and resolves `symbol` (default: the ABI's name for op
    /// and dtype). A crash or an exit in the library takes this process with it: use the
    /// isolated harness (`harness::Isolated`) for libraries you do not trust.
    ///
    /// A library whose loading changes the floating-point control state (FTZ/DAZ from
    /// -Ofast's startup code) has the state restored at once, so that the oracle never judges
    /// in it, and the change is a finding of the first call.
    pub fn load(path: &Path, symbol: Option<&str>, op: Op, dtype: Dtype) -> Result<Self> {
        let before = FpControl::read();
        let (library, entry, symbol) = open(path, symbol, op, dtype)?;
        let after = FpControl::read();
        if after != before {
            before.restore();
        }
        Ok(DylibKernel {
            load_change: Mutex::new(Some(before.changes_to(after)).filter(|c| !c.is_empty())),
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
        match self.entry.0 {
            Entries::F32(entry) => entry.call(p),
            Entries::U16(entry) => entry.call(p),
        }
        .map_err(|rc| format!("the kernel returned {rc}"))
    }

    fn call(&self, problem: &Problem) -> Call {
        let load_change = self.load_change.lock().map_or(None, |mut c| c.take());
        let mut call = crate::harness::call_in_process(self, problem);
        if let Some(changes) = load_change {
            call.findings
                .insert(0, crate::harness::load_changed(&changes));
        }
        call
    }
}
