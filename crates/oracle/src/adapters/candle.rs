//! candle-nn 0.11's CPU normalization as kernels under test and as the baseline of
//! `normoracle bench` (cargo feature `candle`), by two routes through candle's code:
//!
//! - `candle-nn` (alias `candle`): `ops::layer_norm` and `ops::rms_norm`, the fused CPU ops.
//!   They accumulate Σx and Σx² in f32 in one pass and take var = Σx²/d − μ² with no clamp
//!   (candle-nn 0.11.1, src/ops.rs, `impl CustomOp3 for LayerNorm`), then round f16/bf16
//!   once from f32.
//! - `candle-nn-module`: the `LayerNorm` and `RmsNorm` modules on a strided (non-contiguous)
//!   view of x (inner stride 2). On contiguous input the modules call the ops above; on a strided view they
//!   run candle's composed tensor path (src/layer_norm.rs, `impl Module for LayerNorm`): two
//!   passes in f32 (x − μ first), the result rounded to the input dtype, then γ multiplied and
//!   β added in that dtype (two more roundings for f16/bf16).

use super::Kernel;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::kernels::Element;
use crate::problem::{EpsConvention, Op, Problem};
use candle_core::{Device, Tensor, WithDType};
use half::{bf16, f16};

/// Which of candle's code paths runs the normalization.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Route {
    /// `candle_nn::ops::{layer_norm, rms_norm}` on contiguous rows.
    #[default]
    Ops,
    /// The `LayerNorm`/`RmsNorm` modules on a strided view of the rows.
    Module,
}

/// candle-nn's CPU kernels (ε inside the square root; RMSNorm without β).
#[derive(Debug, Clone, Copy, Default)]
pub struct Candle {
    pub route: Route,
}

impl Candle {
    /// The builtin names of the routes (`fuzz --builtin NAME`).
    pub const NAMES: [&'static str; 2] = ["candle-nn", "candle-nn-module"];

    /// The kernel `fuzz --builtin` means by `name`, if it is one of candle's.
    pub fn named(name: &str) -> Option<Candle> {
        let route = match name {
            "candle" | "candle-nn" => Route::Ops,
            "candle-nn-module" => Route::Module,
            _ => return None,
        };
        Some(Candle { route })
    }
}

impl Kernel for Candle {
    fn name(&self) -> String {
        match self.route {
            Route::Ops => Self::NAMES[0],
            Route::Module => Self::NAMES[1],
        }
        .to_string()
    }

    fn supports(&self, _op: Op, dtype: Dtype) -> bool {
        matches!(dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16)
    }

    fn run(&self, problem: &Problem) -> std::result::Result<Vec<u64>, String> {
        if problem.convention != EpsConvention::Inside {
            return Err("candle-nn takes ε inside the square root only".to_string());
        }
        let prepared = Prepared::from_problem(problem, self.route).map_err(|e| e.to_string())?;
        prepared.run_bits().map_err(|e| e.to_string())
    }
}

fn candle_err(e: candle_core::Error) -> Error {
    Error::input(format!("candle: {e}"))
}

/// A problem turned into candle tensors once, so that `run` times the operation alone.
pub struct Prepared {
    route: Route,
    op: Op,
    dtype: Dtype,
    x: Tensor,
    gamma: Tensor,
    beta: Tensor,
    eps: f32,
}

impl Prepared {
    pub fn from_problem(p: &Problem, route: Route) -> Result<Prepared> {
        match p.dtype {
            Dtype::F32 => Self::typed::<f32>(p, route),
            Dtype::F16 => Self::typed::<f16>(p, route),
            Dtype::BF16 => Self::typed::<bf16>(p, route),
            Dtype::F64 => Err(Error::usage("the candle adapter runs f32, f16 and bf16")),
        }
    }

    fn typed<T: Element + WithDType>(p: &Problem, route: Route) -> Result<Prepared> {
        p.validate()?;
        if p.op == Op::RmsNorm && p.beta.is_some() {
            return Err(Error::usage("candle-nn's rms_norm takes no beta"));
        }
        let cpu = Device::Cpu;
        let values = |bits: &[u64]| bits.iter().map(|&b| T::from_bits(b)).collect::<Vec<T>>();
        let filled = |v: f32| vec![T::from_f64(v as f64); p.d];
        let x = match route {
            Route::Ops => Tensor::from_vec(values(&p.x), (p.rows, p.d), &cpu),
            // Every value followed by a spare one, viewed as rows × d with an inner stride of 2:
            // candle counts a view contiguous when every dimension longer than 1 has the
            // packed stride, so a transpose would not do for a single row (only d = 1 with
            // one row is contiguous here, and takes the ops).
            Route::Module => {
                let spaced: Vec<T> =
                    p.x.iter()
                        .flat_map(|&b| [T::from_bits(b), T::from_f64(0.0)])
                        .collect();
                Tensor::from_vec(spaced, (p.rows, p.d, 2), &cpu)
                    .and_then(|t| t.narrow(2, 0, 1))
                    .and_then(|t| t.squeeze(2))
            }
        }
        .map_err(candle_err)?;
        let gamma = p.gamma.as_deref().map_or_else(|| filled(1.0), values);
        let beta = p.beta.as_deref().map_or_else(|| filled(0.0), values);
        Ok(Prepared {
            route,
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
        use candle_nn::{LayerNorm, Module, RmsNorm};
        let (gamma, beta, eps) = (self.gamma.clone(), self.beta.clone(), self.eps);
        match (self.route, self.op) {
            (Route::Ops, Op::LayerNorm) => candle_nn::ops::layer_norm(&self.x, &gamma, &beta, eps),
            (Route::Ops, Op::RmsNorm) => candle_nn::ops::rms_norm(&self.x, &gamma, eps),
            (Route::Module, Op::LayerNorm) => {
                LayerNorm::new(gamma, beta, f64::from(eps)).forward(&self.x)
            }
            (Route::Module, Op::RmsNorm) => RmsNorm::new(gamma, f64::from(eps)).forward(&self.x),
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
