//! The library API for Rust users: judge a kernel written as a closure over typed slices, or
//! outputs already computed, inside your own `cargo test`, with the same report as the CLI.
//!
//! ```no_run
//! use normoracle::problem::Op;
//! let report = normoracle::judge::api::judge_fn::<f32, _>(Op::RmsNorm, |x, gamma, _beta, y, d, eps| {
//!     for (xr, yr) in x.chunks(d).zip(y.chunks_mut(d)) {
//!         let ms = xr.iter().map(|v| (*v as f64) * (*v as f64)).sum::<f64>() / d as f64;
//!         let r = 1.0 / (ms + eps as f64).sqrt();
//!         for i in 0..d {
//!             yr[i] = (xr[i] as f64 * r * gamma.map_or(1.0, |g| g[i] as f64)) as f32;
//!         }
//!     }
//!     Ok(())
//! });
//! assert!(report.passed(), "{}", normoracle::judge::report::text(&report));
//! ```

use super::{judge_single, run_battery, Report, Standard};
use crate::adapters::closure::{SliceKernel, SliceKernelFn, Storage};
use crate::cases::{rng, BatteryConfig};
use crate::error::Result;
use crate::problem::{Eps, EpsConvention, Op, Problem};

/// Runs the default battery (seed from `NORMORACLE_SEED` or the default; ε inside) through a
/// typed closure kernel and returns the report.
pub fn judge_fn<T: Storage, F: SliceKernelFn<T>>(op: Op, kernel: F) -> Report {
    let seed = rng::seed_from_env().unwrap_or(rng::DEFAULT_SEED);
    let config = BatteryConfig::new(op, T::DTYPE, seed);
    judge_fn_with(&config, kernel)
}

/// Runs a given battery through a typed closure kernel.
pub fn judge_fn_with<T: Storage, F: SliceKernelFn<T>>(config: &BatteryConfig, kernel: F) -> Report {
    judge_fn_requiring(config, Standard::Bound, kernel)
}

/// Runs a given battery through a typed closure kernel, the verdict (`Report::meets_standard`)
/// against `standard` (`--require`), on the rows of `config.domain` (`--domain`; the rest is
/// in `Report::outside`).
pub fn judge_fn_requiring<T: Storage, F: SliceKernelFn<T>>(
    config: &BatteryConfig,
    standard: Standard,
    kernel: F,
) -> Report {
    let k = SliceKernel::<T, F>::new("closure", config.op, config.convention, kernel);
    let mut report = run_battery(&k, config, None, false)
        .expect("a closure kernel supports its own op and dtype");
    report.require(standard);
    report
}

/// Judges outputs `y` already computed for inputs x (rows × d), γ, β.
#[allow(clippy::too_many_arguments)]
pub fn judge_outputs<T: Storage>(
    op: Op,
    eps: f32,
    convention: EpsConvention,
    x: &[T],
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    y: &[T],
    d: usize,
) -> Result<Report> {
    let bits = |v: &[T]| v.iter().map(|b| b.to_bits()).collect::<Vec<u64>>();
    let problem = Problem {
        op,
        dtype: T::DTYPE,
        eps: Eps::from_f32(eps)?,
        convention,
        rows: x.len().checked_div(d).unwrap_or(0),
        d,
        x: bits(x),
        gamma: gamma.map(bits),
        beta: beta.map(bits),
    };
    judge_single(&problem, &bits(y), "outputs", "given")
}

/// Asserts that a closure kernel passes the battery, printing the report when it does not;
/// `require = STANDARD` holds it to a stricter standard than the bound, `domain = DOMAIN`
/// decides the verdict on the kernel's declared domain only.
///
/// `assert_kernel_passes!(Op::LayerNorm, f32, |x, gamma, beta, y, d, eps| { ...; Ok(()) })`
/// `assert_kernel_passes!(Op::LayerNorm, f32, kernel, require = Standard::Faithful)`
/// `assert_kernel_passes!(Op::RmsNorm, f32, kernel, domain = "eps=1e-6..,finite".parse().unwrap())`
#[macro_export]
macro_rules! assert_kernel_passes {
    ($op:expr, $t:ty, $kernel:expr) => {
        $crate::assert_kernel_passes!($op, $t, $kernel, require = $crate::judge::Standard::Bound)
    };
    ($op:expr, $t:ty, $kernel:expr, domain = $domain:expr) => {
        $crate::assert_kernel_passes!(
            $op,
            $t,
            $kernel,
            require = $crate::judge::Standard::Bound,
            domain = $domain
        )
    };
    ($op:expr, $t:ty, $kernel:expr, require = $standard:expr) => {
        $crate::assert_kernel_passes!(
            $op,
            $t,
            $kernel,
            require = $standard,
            domain = $crate::domain::Domain::default()
        )
    };
    ($op:expr, $t:ty, $kernel:expr, require = $standard:expr, domain = $domain:expr) => {{
        let seed = $crate::cases::rng::seed_from_env().unwrap_or($crate::cases::rng::DEFAULT_SEED);
        let mut config = $crate::cases::BatteryConfig::new(
            $op,
            <$t as $crate::adapters::closure::Storage>::DTYPE,
            seed,
        );
        config.domain = $domain;
        let report = $crate::judge::api::judge_fn_requiring::<$t, _>(&config, $standard, $kernel);
        assert!(
            report.meets_standard(),
            "{}",
            $crate::judge::report::text(&report)
        );
        report
    }};
}
