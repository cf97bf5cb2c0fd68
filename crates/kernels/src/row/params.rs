//! γ and β as the output pass holds them, and a row's parameters.

use crate::element::{Element, F32PathFormat};
use crate::problem::Op;
use crate::simd::Simd;

/// How γ and β are held for the output pass: f64 (widened once per call, loaded as they
/// are), or the row's own format, as given and widened on every load (single rows, and
/// wide rows of f32; there the row type is `f32` itself). Each holds every f32, f16 and bf16
/// value exactly.
pub(crate) trait Param: Copy + Default + Send + Sync + 'static {
    fn load<S: Simd>(s: S, v: &[Self; 8]) -> S::V;
    /// Sixteen values as f32 lanes (exact: every value is an f32, f16 or bf16 one).
    fn load16<S: Simd>(s: S, v: &[Self; 16]) -> S::F32x16;
    /// Two blocks of sixteen as `Element::load16_pair` loads x, in its lane order.
    fn load16_pair<S: Simd>(s: S, v: &[Self; 32]) -> [S::F32x16; 2];
    fn to_f64(self) -> f64;
}

impl Param for f64 {
    #[inline(always)]
    fn load<S: Simd>(s: S, v: &[f64; 8]) -> S::V {
        s.load_lanes(*v)
    }
    #[inline(always)]
    fn load16<S: Simd>(s: S, v: &[f64; 16]) -> S::F32x16 {
        // Never reached: rows on the f32 path hold γ and β as given (`normalize`), which
        // `Element::load16` loads in x's lane order.
        s.f32x16_load_f32(&v.map(|g| g as f32))
    }
    #[inline(always)]
    fn load16_pair<S: Simd>(s: S, v: &[f64; 32]) -> [S::F32x16; 2] {
        // Never reached, as `load16`.
        let [a, b] = crate::simd::halves(v);
        [Self::load16(s, a), Self::load16(s, b)]
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl<T: Element> Param for T {
    #[inline(always)]
    fn load<S: Simd>(s: S, v: &[T; 8]) -> S::V {
        T::load(s, v)
    }
    #[inline(always)]
    fn load16<S: Simd>(s: S, v: &[T; 16]) -> S::F32x16 {
        T::load16(s, v)
    }
    #[inline(always)]
    fn load16_pair<S: Simd>(s: S, v: &[T; 32]) -> [S::F32x16; 2] {
        T::load16_pair(s, v)
    }
    fn to_f64(self) -> f64 {
        T::DTYPE.to_f64(self.to_bits())
    }
}

#[inline(always)]
pub(super) fn load_padded_param<S: Simd, P: Param>(s: S, src: &[P]) -> S::V {
    let mut buf = [P::default(); 8];
    buf[..src.len()].copy_from_slice(src);
    P::load(s, &buf)
}

/// The row's parameters and what the exact reference needs to settle near-ties.
pub(crate) struct RowParams<'a, P> {
    pub op: Op,
    /// γ and β (length d), or empty when absent.
    pub gamma: &'a [P],
    pub beta: &'a [P],
    pub eps: f32,
    /// Write y with non-temporal stores (where a row starts 16-byte aligned).
    pub stream: bool,
    /// Widen rows once (up to [`WIDEN_MAX_D`](super::WIDEN_MAX_D)): the statistics pass keeps the widened row
    /// for the output pass (see `run_rows`).
    pub widen_once: bool,
    /// max |γ| and |β| of the call: the f64 path's certainty filter, and the f32 path of
    /// the 16-bit formats ([`f32_path`](super::f32_path)).
    pub params_max: ParamsMax,
}

impl<P> RowParams<'_, P> {
    /// The format of the f32 path where the rows of `T` take it, else `None` (always for
    /// f32 rows). The call decides it once (`f32_path::path_format`), and the 16-bit formats'
    /// rows are widened once exactly where they do not take it (see `run_rows`).
    #[inline(always)]
    pub(super) fn f32_path<T: Element>(&self) -> Option<F32PathFormat> {
        T::F32_PATH.filter(|_| !self.widen_once)
    }
}

/// The largest magnitudes of γ (1 when absent) and β (0 when absent); NaN where one is NaN.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParamsMax {
    pub gamma: f64,
    pub beta: f64,
}

impl ParamsMax {
    /// Neither γ nor β.
    pub const NONE: ParamsMax = ParamsMax {
        gamma: 1.0,
        beta: 0.0,
    };
}
