//! The severity of a failing element (`verdict::Severity`): how far beyond the model it is.
//! A report counts the classes per family, so that a last-bit disagreement (off-model) reads
//! differently from a kernel that is broken (wrong).

use super::verdict::{Severity, OFF_MODEL_ULPS};
use crate::dtype::Dtype;
use crate::wide::Wide;

/// The class of an output o that failed the bound B of the exact value y, for an element of
/// parameters γ, β. `o` and `y` finite or not; NaN outputs and NaN expectations are `Wrong`.
pub fn classify(dtype: Dtype, o: f64, y: Wide, bound: Wide, gamma: f64, beta: f64) -> Severity {
    if o.is_nan() || y.is_nan() || o.is_infinite() == y.is_finite() {
        return Severity::Wrong;
    }
    if o.is_infinite() {
        // Both infinite and still failing: the opposite infinity.
        return Severity::Wrong;
    }
    let error = (Wide::of(o) - y).abs();
    let larger = o.abs().max(y.abs().to_f64()).min(dtype.max_finite());
    let ulp = Wide::of(dtype.ulp_at(larger));
    let scale = Wide::of(gamma.abs() + beta.abs());
    let beyond = |a: Wide, b: Wide| (a - b).to_f64() > 0.0;
    let clearly_nonzero = |v: Wide| beyond(v.abs(), bound + ulp);
    let opposite_signs = (o < 0.0) != (y.to_f64() < 0.0) && o != 0.0 && !y.is_zero();
    if beyond(error, scale)
        || (opposite_signs && clearly_nonzero(Wide::of(o)) && clearly_nonzero(y))
    {
        return Severity::Wrong;
    }
    if beyond(error, bound + Wide::of(OFF_MODEL_ULPS) * ulp) {
        Severity::Inaccurate
    } else {
        Severity::OffModel
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each class at its edges: f32 outputs near 1 (ulp 2^-23·… ), B = 1e-6, γ = 1, β = 0.
    #[test]
    fn classes_split_at_four_ulps_the_scale_and_the_sign() {
        let (b, y) = (Wide::of(1e-6), Wide::of(1.0));
        let ulp = Dtype::F32.ulp_at(1.0);
        let at = |o: f64| classify(Dtype::F32, o, y, b, 1.0, 0.0);
        assert_eq!(at(1.0 + 1e-6 + 3.5 * ulp), Severity::OffModel);
        assert_eq!(at(1.0 + 1e-6 + 4.5 * ulp), Severity::Inaccurate);
        assert_eq!(at(1.9), Severity::Inaccurate);
        assert_eq!(at(2.1), Severity::Wrong);
        assert_eq!(at(-0.5), Severity::Wrong);
        assert_eq!(at(f64::NAN), Severity::Wrong);
        assert_eq!(at(f64::INFINITY), Severity::Wrong);
        // Near an exact 0, a sign flip within the tolerance of 0 is no wrong sign.
        let tiny = classify(Dtype::F32, -2e-6, Wide::of(1e-7), b, 1.0, 0.0);
        assert_eq!(tiny, Severity::Inaccurate);
        let flip = classify(Dtype::F32, -2e-6, Wide::of(2e-6), b, 1.0, 0.0);
        assert_eq!(flip, Severity::Wrong);
        // The scale is |γ| + |β|.
        assert_eq!(
            classify(Dtype::F32, 5.0, y, b, 2.0, 3.0),
            Severity::Inaccurate
        );
        assert_eq!(classify(Dtype::F32, 7.0, y, b, 2.0, 3.0), Severity::Wrong);
    }
}
