//! The normal space of the hyperellipsoid: the left null space of `diag(g) − g1ᵀ/N` (Riechers
//! 2024). Every LayerNorm output `y` has `y − b` orthogonal to it.
//!
//! * No zero gain: the span of `α`, `α_n = 1/g_n` (`αᵀG Πa = 1ᵀΠa = 0`).
//! * Zero gains `Z ≠ ∅`: the span of `{e_n : n ∈ Z}` (`(y − b)_n = g_n(…) = 0` there). A vector
//!   `w` with `wᵀ(G − g1ᵀ/N) = 0` has `g_n w_n = c` for all `n`; a zero gain forces `c = 0`, so
//!   `w` lives on `Z`.

use super::interval::PREC;
use rug::float::Round;
use rug::Float;

/// The normal space, as an orthonormal basis.
#[derive(Clone, Debug, PartialEq)]
pub struct NormalSpace {
    /// The indices of the zero gains (empty in the generic case).
    pub zero_gains: Vec<usize>,
    /// Orthonormal basis: `α/‖α‖` when no gain is 0, else the unit vectors `e_n`, `n ∈ Z`.
    pub basis: Vec<Vec<f64>>,
}

impl NormalSpace {
    /// The unit normal of the hyperplane, when the normal space is a line.
    pub fn unit_normal(&self) -> Option<&[f64]> {
        match self.basis.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The dimension of the image's affine hull: `N − dim(normal space)`.
    pub fn image_dimension(&self, n: usize) -> usize {
        n - self.basis.len()
    }
}

/// The normal space for the gains `g` (any nonzero scale). `α/‖α‖` is evaluated with 256-bit
/// MPFR and rounded to nearest once per component, so each component is within one ulp of the
/// exact unit normal.
pub fn normal_space(g: &[f64]) -> NormalSpace {
    let n = g.len();
    let zero_gains: Vec<usize> = (0..n).filter(|&i| g[i] == 0.0).collect();
    let basis = if zero_gains.is_empty() {
        let prec = 2 * PREC;
        let alpha: Vec<Float> = g
            .iter()
            .map(|&x| Float::with_val(prec, 1.0 / Float::with_val(prec, x)))
            .collect();
        let mut norm2 = Float::new(prec);
        for a in &alpha {
            norm2 += Float::with_val(prec, a.square_ref());
        }
        let norm = norm2.sqrt();
        vec![alpha
            .iter()
            .map(|a| Float::with_val(prec, a / &norm).to_f64_round(Round::Nearest))
            .collect()]
    } else {
        zero_gains
            .iter()
            .map(|&z| {
                let mut e = vec![0.0; n];
                e[z] = 1.0;
                e
            })
            .collect()
    };
    NormalSpace { zero_gains, basis }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_normal_is_the_reciprocal_gain_direction() {
        let ns = normal_space(&[1.0, -2.0, 4.0, 4.0]);
        let u = ns.unit_normal().unwrap();
        // α = (1, -1/2, 1/4, 1/4), ‖α‖² = 1 + 1/4 + 1/16 + 1/16 = 11/8.
        let norm = (11.0f64 / 8.0).sqrt();
        let want = [1.0 / norm, -0.5 / norm, 0.25 / norm, 0.25 / norm];
        for (a, b) in u.iter().zip(want) {
            assert!((a - b).abs() <= f64::EPSILON * b.abs(), "{a} vs {b}");
        }
        assert_eq!(ns.image_dimension(4), 3);
    }

    #[test]
    fn zero_gains_span_the_normal_space() {
        let ns = normal_space(&[1.0, 0.0, 3.0, 0.0]);
        assert_eq!(ns.zero_gains, vec![1, 3]);
        assert!(ns.unit_normal().is_none());
        assert_eq!(
            ns.basis,
            vec![vec![0.0, 1.0, 0.0, 0.0], vec![0.0, 0.0, 0.0, 1.0]]
        );
        assert_eq!(ns.image_dimension(4), 2);
    }
}
