//! candle-nn 0.11's CPU `ops::layer_norm` and `ops::rms_norm` as a kernel under test and as
//! the baseline of `normoracle bench` (cargo feature `candle`). candle accumulates in f32
//! (LayerNorm as E[x²] − μ²) and rounds f16/bf16 through f32.

use super::Kernel;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::kernels::Element;
use crate::problem::{EpsConvention, Op, Problem};
use candle_core::{Device, Tensor, WithDType};
use half::{bf16, f16};

/// candle-nn's CPU kernels (ε inside the square root; RMSNorm without β).
#[derive(Debug, Clone, Copy, Default)]
pub struct Candle;

impl Kernel for Candle {
    fn name(&self) -> String {
        "candle-nn".to_string()
    }

    fn supports(&self, _op: Op, dtype: Dtype) -> bool {
        matches!(dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16)
    }

    fn run(&self, problem: &Problem) -> std::result::Result<Vec<u64>, String> {
        if problem.convention != EpsConvention::Inside {
            return Err("candle-nn takes ε inside the square root only".to_string());
        }
        let prepared = Prepared::from_problem(problem).map_err(|e| e.to_string())?;
        prepared.run_bits().map_err(|e| e.to_string())
    }
}

fn candle_err(e: candle_core::Error) -> Error {
    Error::input(format!("candle: {e}"))
}

/// A problem turned into candle tensors once, so that `run` times the operation alone.
pub struct Prepared {
    op: Op,
    dtype: Dtype,
    x: Tensor,
    gamma: Tensor,
    beta: Tensor,
    eps: f32,
}

impl Prepared {
    pub fn from_problem(p: &Problem) -> Result<Prepared> {
        match p.dtype {
            Dtype::F32 => Self::typed::<f32>(p),
            Dtype::F16 => Self::typed::<f16>(p),
            Dtype::BF16 => Self::typed::<bf16>(p),
            Dtype::F64 => Err(Error::usage("the candle adapter runs f32, f16 and bf16")),
        }
    }

    fn typed<T: Element + WithDType>(p: &Problem) -> Result<Prepared> {
        p.validate()?;
        if p.op == Op::RmsNorm && p.beta.is_some() {
            return Err(Error::usage("candle-nn's rms_norm takes no beta"));
        }
        let cpu = Device::Cpu;
        let values = |bits: &[u64]| bits.iter().map(|&b| T::from_bits(b)).collect::<Vec<T>>();
        let filled = |v: f32| vec![T::from_f64(v as f64); p.d];
        let x = Tensor::from_vec(values(&p.x), (p.rows, p.d), &cpu).map_err(candle_err)?;
        let gamma = p.gamma.as_deref().map_or_else(|| filled(1.0), values);
        let beta = p.beta.as_deref().map_or_else(|| filled(0.0), values);
        Ok(Prepared {
            op: p.op,
            dtype: p.dtype,
            x,
            gamma: Tensor::from_vec(gamma, p.d, &cpu).map_err(candle_err)?,
            beta: Tensor::from_vec(beta, p.d, &cpu).map_err(candle_err)?,
            eps: p.eps.value(),
        })
    }

    /// Runs candle's kernel (on rayon's current pool).
    pub fn run(&self) -> Result<Tensor> {
        match self.op {
            Op::LayerNorm => candle_nn::ops::layer_norm(&self.x, &self.gamma, &self.beta, self.eps),
            Op::RmsNorm => candle_nn::ops::rms_norm(&self.x, &self.gamma, self.eps),
        }
        .map_err(candle_err)
    }

    /// Runs it and returns the output bits, row-major.
    pub fn run_bits(&self) -> Result<Vec<u64>> {
        let y = self.run()?.flatten_all().map_err(candle_err)?;
        Ok(match self.dtype {
            Dtype::F32 => y
                .to_vec1::<f32>()
                .map_err(candle_err)?
                .into_iter()
                .map(Element::to_bits)
                .collect(),
            Dtype::F16 => y
                .to_vec1::<f16>()
                .map_err(candle_err)?
                .into_iter()
                .map(Element::to_bits)
                .collect(),
            _ => y
                .to_vec1::<bf16>()
                .map_err(candle_err)?
                .into_iter()
                .map(Element::to_bits)
                .collect(),
        })
    }
}
