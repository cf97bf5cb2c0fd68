//! z from x: the row's statistics as the constants of the output loops (LayerNorm's
//! centred form, RMSNorm's scaled one), and y = γ·z + β.

use super::certainty::{CheckConstants, ABSOLUTE_MEAN, ABSOLUTE_SPREAD, U};
use super::params::ParamsMax;
use super::statistics::{is_zero_shift, CenteredStats};
use crate::element::Element;
use crate::simd::{NearFilter, Simd};

/// The normalized value z of one vector, before γ and β: from x, or from t, x prepared by
/// the statistics pass ([`Fold::prepare`](super::statistics::Fold::prepare)) and kept by rows widened once. Both give the same
/// bits (z from x computes t first, the same way).
pub(super) trait Normalize<S: Simd>: Copy {
    /// Whether z subtracts the mean (LayerNorm), also on the f32 path ([`f32_path`](super::f32_path)).
    const CENTER: bool;
    fn z(&self, s: S, x: S::V) -> S::V;
    fn z_prepared(&self, s: S, t: S::V) -> S::V;
    /// The row's certainty filter of the f64 path ([`NearFilter`]).
    fn filter(&self) -> &NearFilter;
}

/// A row's statistics as scalars, turned into vectors inside the loops that use them.
pub(super) trait RowConstants: Copy {
    type N<S: Simd>: Normalize<S>;
    /// Whether rows with these constants compute z from x alone: never from the widened
    /// row, never on the f32 path. LayerNorm's constants for shift 0, whose only gain, the
    /// subtraction z(x) leaves out, is in the loop over x (z from the widened row never
    /// subtracts): the other loops are not compiled for them.
    const X_ONLY: bool = false;
    fn vectors<S: Simd>(self, s: S) -> Self::N<S>;
    fn check(&self) -> &CheckConstants;
}

/// LayerNorm: z = (x − c)·r − m·r, m = mean(x − c), as one fused multiply-add after the
/// exact x − c: one operation fewer per vector than ((x − c) − m)·r, for the same error
/// bound (½u·|z| + ½u·r·|m| against u·|z|; see [`RELATIVE`](super::certainty::RELATIVE) and `absolute`). `SHIFT` is
/// false where c = +0: z = fma(x, r, −m·r), the same bits without the subtraction.
#[derive(Clone, Copy)]
pub(super) struct Centered<S: Simd, const SHIFT: bool> {
    shift: S::V,
    /// −m·r.
    offset: S::V,
    scale: S::V,
    filter: NearFilter,
}

impl<S: Simd, const SHIFT: bool> Normalize<S> for Centered<S, SHIFT> {
    const CENTER: bool = true;
    #[inline(always)]
    fn z(&self, s: S, x: S::V) -> S::V {
        if SHIFT {
            self.z_prepared(s, s.sub(x, self.shift))
        } else {
            self.z_prepared(s, x)
        }
    }
    #[inline(always)]
    fn z_prepared(&self, s: S, t: S::V) -> S::V {
        s.fma(t, self.scale, self.offset)
    }
    #[inline(always)]
    fn filter(&self) -> &NearFilter {
        &self.filter
    }
}

/// [`Centered`]'s scalars: c, −m·r, r, and the certainty test (`SHIFT` false only where
/// c = +0).
#[derive(Clone, Copy)]
pub(super) struct CenteredConstants<const SHIFT: bool> {
    shift: f64,
    offset: f64,
    pub(super) scale: f64,
    check: CheckConstants,
}

impl CenteredConstants<true> {
    /// The same constants for a row whose shift is +0, with z(x) leaving out its
    /// subtraction.
    pub(super) fn without_shift(self) -> CenteredConstants<false> {
        debug_assert!(is_zero_shift(self.shift));
        let CenteredConstants {
            shift,
            offset,
            scale,
            check,
        } = self;
        CenteredConstants {
            shift,
            offset,
            scale,
            check,
        }
    }
}

impl<const SHIFT: bool> CenteredConstants<SHIFT> {
    /// The constants of a row of output format `T` with these statistics and ε.
    pub(super) fn new<T: Element>(
        stats: &CenteredStats,
        eps: f32,
        params: ParamsMax,
    ) -> CenteredConstants<SHIFT> {
        debug_assert!(SHIFT || is_zero_shift(stats.shift));
        let scale = 1.0 / (stats.var + eps as f64).sqrt();
        let absolute = U
            * scale
            * (ABSOLUTE_MEAN * stats.mean_shifted.abs() + ABSOLUTE_SPREAD * stats.var.sqrt());
        CenteredConstants {
            shift: stats.shift,
            offset: -(stats.mean_shifted * scale),
            scale,
            check: CheckConstants::new::<T>(absolute, params),
        }
    }
}

impl<const SHIFT: bool> RowConstants for CenteredConstants<SHIFT> {
    type N<S: Simd> = Centered<S, SHIFT>;
    const X_ONLY: bool = !SHIFT;
    #[inline(always)]
    fn vectors<S: Simd>(self, s: S) -> Centered<S, SHIFT> {
        Centered {
            shift: s.splat(self.shift),
            offset: s.splat(self.offset),
            scale: s.splat(self.scale),
            filter: self.check.filter,
        }
    }
    #[inline(always)]
    fn check(&self) -> &CheckConstants {
        &self.check
    }
}

/// RMSNorm: z = x·r.
#[derive(Clone, Copy)]
pub(super) struct Scaled<S: Simd> {
    scale: S::V,
    filter: NearFilter,
}

impl<S: Simd> Normalize<S> for Scaled<S> {
    const CENTER: bool = false;
    #[inline(always)]
    fn z(&self, s: S, x: S::V) -> S::V {
        s.mul(x, self.scale)
    }
    #[inline(always)]
    fn z_prepared(&self, s: S, t: S::V) -> S::V {
        self.z(s, t)
    }
    #[inline(always)]
    fn filter(&self) -> &NearFilter {
        &self.filter
    }
}

/// [`Scaled`]'s scalar r, and the certainty test.
#[derive(Clone, Copy)]
pub(super) struct ScaledConstants {
    pub(super) scale: f64,
    check: CheckConstants,
}

impl ScaledConstants {
    /// The constants of a row of output format `T` with Σx² = `sum_sq` and ε.
    pub(super) fn new<T: Element>(
        sum_sq: f64,
        d: usize,
        eps: f32,
        params: ParamsMax,
    ) -> ScaledConstants {
        ScaledConstants {
            scale: 1.0 / (sum_sq / d as f64 + eps as f64).sqrt(),
            // z = x·r has no error term that does not shrink with z.
            check: CheckConstants::new::<T>(0.0, params),
        }
    }
}

impl RowConstants for ScaledConstants {
    type N<S: Simd> = Scaled<S>;
    #[inline(always)]
    fn vectors<S: Simd>(self, s: S) -> Scaled<S> {
        Scaled {
            scale: s.splat(self.scale),
            filter: self.check.filter,
        }
    }
    #[inline(always)]
    fn check(&self) -> &CheckConstants {
        &self.check
    }
}

/// y = γ·z + β with one rounding, for whichever of γ (`G`) and β (`B`) are present.
#[inline(always)]
pub(super) fn affine<S: Simd, const G: bool, const B: bool>(
    s: S,
    z: S::V,
    g: S::V,
    b: S::V,
) -> S::V {
    match (G, B) {
        (true, true) => s.fma(g, z, b),
        (true, false) => s.mul(g, z),
        (false, true) => s.add(z, b),
        (false, false) => z,
    }
}
