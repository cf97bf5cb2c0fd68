//! The `native` kernel: normoracle's own SIMD LayerNorm/RMSNorm (`crate::kernels`) for f32,
//! f16 and bf16 with ε inside the square root.

use super::Kernel;
use crate::dtype::Dtype;
use crate::kernels::{self, Element, Isa, Layout, Options, Params};
use crate::problem::{EpsConvention, Op, Problem};
use half::{bf16, f16};
use normoracle_core::vector;

/// normoracle's own kernels, on the fastest instruction set unless `options` says otherwise.
#[derive(Debug, Clone, Copy, Default)]
pub struct Native {
    pub options: Options,
}

impl Native {
    /// The kernels on one instruction set (for comparing paths).
    pub fn on(isa: Isa) -> Native {
        Native {
            options: Options {
                isa: Some(isa),
                ..Options::default()
            },
        }
    }

    /// `native-<isa>` (`native-scalar`, `native-avx2`, `native-avx512`, `native-neon`): the
    /// kernels on that instruction set, if this CPU has it.
    pub fn named(name: &str) -> crate::Result<Native> {
        let isa: Isa = name
            .strip_prefix("native-")
            .ok_or_else(|| crate::Error::usage(format!("'{name}' is not native-<isa>")))?
            .parse()?;
        if !isa.is_available() {
            return Err(crate::Error::usage(format!(
                "instruction set {isa} is not available on this CPU"
            )));
        }
        Ok(Native::on(isa))
    }
}

impl Kernel for Native {
    fn name(&self) -> String {
        match self.options.isa {
            Some(isa) => format!("native-{isa}"),
            None => "native".to_string(),
        }
    }

    fn supports(&self, _op: Op, dtype: Dtype) -> bool {
        matches!(dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16)
    }

    fn run(&self, problem: &Problem) -> std::result::Result<Vec<u64>, String> {
        if problem.convention != EpsConvention::Inside {
            return Err("the native kernels take ε inside the square root only".to_string());
        }
        match problem.dtype {
            Dtype::F32 => run_typed::<f32>(problem, self.options),
            Dtype::F16 => run_typed::<f16>(problem, self.options),
            Dtype::BF16 => run_typed::<bf16>(problem, self.options),
            Dtype::F64 => Err("the native kernels do not implement f64".to_string()),
        }
    }
}

fn run_typed<T: Element>(p: &Problem, options: Options) -> std::result::Result<Vec<u64>, String> {
    let gamma = p.gamma.as_deref().map(typed::<T>);
    let beta = p.beta.as_deref().map(typed::<T>);
    run_rows(p, gamma.as_deref(), beta.as_deref(), 0..p.rows, options)
}

/// Values given as bits, in the kernels' element type.
pub fn typed<T: Element>(bits: &[u64]) -> Vec<T> {
    vector::widest(
        #[inline(always)]
        || vector::map_to_vec(bits, T::from_bits),
    )
}

/// The kernels' outputs (bits) for the rows `rows` of `p`, with γ and β already in `T`.
pub fn run_rows<T: Element>(
    p: &Problem,
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    rows: std::ops::Range<usize>,
    options: Options,
) -> std::result::Result<Vec<u64>, String> {
    let mut buffers = RowBuffers::default();
    let y = run_rows_typed(p, gamma, beta, rows, options, &mut buffers)?;
    Ok(vector::widest(
        #[inline(always)]
        || vector::map_to_vec(y, T::to_bits),
    ))
}

/// The rows in the kernels' type and their outputs, reused from block to block (fresh
/// buffers of a block's size cost page faults and the allocator's trimming).
#[derive(Default)]
pub struct RowBuffers<T> {
    x: Vec<T>,
    y: Vec<T>,
}

/// The kernels' outputs for the rows `rows` of `p` in their own type, in `buffers`
/// (reused).
pub fn run_rows_typed<'b, T: Element>(
    p: &Problem,
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    rows: std::ops::Range<usize>,
    options: Options,
    buffers: &'b mut RowBuffers<T>,
) -> std::result::Result<&'b [T], String> {
    let bits = &p.x[rows.start * p.d..rows.end * p.d];
    let RowBuffers { x, y } = buffers;
    vector::widest(
        #[inline(always)]
        || vector::map_into(bits, x, T::from_bits),
    );
    // Every output is written: the old values need no clearing.
    y.resize(x.len(), T::default());
    let params = Params {
        gamma,
        beta,
        eps: p.eps.value(),
    };
    kernels::normalize(
        p.op,
        x,
        y,
        Layout::contiguous(rows.len(), p.d),
        params,
        options,
    )
    .map_err(|e| e.to_string())?;
    Ok(y)
}
