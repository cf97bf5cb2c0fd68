//! Input families: each generates rows that exercise one way norm kernels go wrong. Values
//! are produced in f64 by portable arithmetic and rounded once to the problem's format.

use super::rng::Rng;
use crate::dtype::{pow2, Dtype};
use crate::error::{Error, Result};

/// A family of input rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// N(0, s²) rows at scales s = 1e-3 … 1e3.
    Gaussian,
    /// Mean μ far from 0 with small spread: |μ|/σ = 1e1 … 1e7 (as far as the format resolves).
    LargeMean,
    /// Variance comparable to ε: σ² ∈ {ε/10, ε, 10ε}.
    VarianceNearEps,
    /// Constant rows (0, 1, 1234, 4e4, 65504, near the format's max), some with one element
    /// one ULP up.
    Constant,
    /// Subnormal rows, and tiny normal rows whose squares underflow in the format.
    Subnormal,
    /// Values whose squares (or sums) overflow the format.
    OverflowingSquares,
    /// One NaN or ±∞ in one row; the other rows must be unaffected.
    NonFinite,
    /// ±0 mixed with small values, and all-zero rows.
    SignedZeros,
    /// Rows whose mean and variance are exact in any summation order (benchdnn's fill): a
    /// power of two times small integers in symmetric pairs.
    ExactStatistics,
}

impl Family {
    pub const ALL: [Family; 9] = [
        Family::Gaussian,
        Family::LargeMean,
        Family::VarianceNearEps,
        Family::Constant,
        Family::Subnormal,
        Family::OverflowingSquares,
        Family::NonFinite,
        Family::SignedZeros,
        Family::ExactStatistics,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Gaussian => "gaussian",
            Family::LargeMean => "large-mean",
            Family::VarianceNearEps => "variance-near-eps",
            Family::Constant => "constant",
            Family::Subnormal => "subnormal",
            Family::OverflowingSquares => "overflowing-squares",
            Family::NonFinite => "non-finite",
            Family::SignedZeros => "signed-zeros",
            Family::ExactStatistics => "exact-statistics",
        }
    }

    pub fn from_name(name: &str) -> Result<Family> {
        Family::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                Error::usage(format!(
                    "unknown family '{name}' ({})",
                    Family::ALL.map(|f| f.name()).join(", ")
                ))
            })
    }

    /// The ε values this family is run with, cycled over its cases. Each family's list keeps
    /// the values that make it discriminating (e.g. tiny rows need ε = 0 to expose a
    /// variance that underflows to zero).
    pub fn eps_schedule(self) -> &'static [f32] {
        match self {
            Family::Gaussian | Family::OverflowingSquares => &[0.0, 1e-12, 1e-6, 1e-5, 0.1, 10.0],
            Family::LargeMean => &[0.0, 1e-12, 1e-6, 1e-5],
            Family::VarianceNearEps => &[1e-6, 1e-5, 0.1, 10.0],
            Family::Constant => &[1e-5, 0.0, 0.1, 1e-12],
            Family::Subnormal => &[0.0, 0.0, 0.0, 1e-12],
            Family::NonFinite => &[1e-5, 0.0],
            Family::SignedZeros => &[0.0, 1e-5],
            Family::ExactStatistics => &[0.0, 1e-5, 0.1],
        }
    }

    /// Generates `rows × d` values (bits of `dtype`) for this family.
    pub fn generate(
        self,
        rng: &mut Rng,
        dtype: Dtype,
        rows: usize,
        d: usize,
        eps: f32,
    ) -> Vec<u64> {
        let mut out = Vec::with_capacity(rows * d);
        let nonfinite_row = rng.below(rows.max(1));
        for r in 0..rows {
            let row = match self {
                Family::Gaussian => {
                    let scale = 10f64.powi(rng.below(7) as i32 - 3);
                    (0..d).map(|_| scale * rng.normal()).collect()
                }
                Family::LargeMean => {
                    let max_log_ratio = match dtype {
                        Dtype::BF16 => 2,
                        Dtype::F16 => 3,
                        Dtype::F32 | Dtype::F64 => 7,
                    };
                    let ratio = 10f64.powi(1 + rng.below(max_log_ratio) as i32);
                    let sigma = pow2(rng.below(9) as i32 - 4);
                    let mean = if rng.coin() {
                        ratio * sigma
                    } else {
                        -ratio * sigma
                    };
                    (0..d).map(|_| mean + sigma * rng.normal()).collect()
                }
                Family::VarianceNearEps => {
                    let factor = *rng.choose(&[0.1, 1.0, 10.0]);
                    let sigma = libm::sqrt(factor * eps.max(1e-12) as f64);
                    let mean = sigma * (rng.below(7) as f64 - 3.0);
                    (0..d).map(|_| mean + sigma * rng.normal()).collect()
                }
                Family::Constant => {
                    let max = dtype.max_finite();
                    let c = *rng.choose(&[0.0, 1.0, 1234.0, 4e4, 65504.0, max, max / 2.0]);
                    let c = if rng.coin() { -c.min(max) } else { c.min(max) };
                    let mut row = vec![c; d];
                    if rng.coin() {
                        // One element one ULP away (down at ±max, which has no finite step up).
                        let i = rng.below(d);
                        let bits = dtype.round_f64(c);
                        let step = dtype.next_up(bits);
                        let step = if dtype.is_finite(step) {
                            step
                        } else {
                            dtype.next_down(bits)
                        };
                        row[i] = dtype.to_f64(step);
                    }
                    row
                }
                Family::Subnormal => {
                    let min_normal = pow2(dtype.emin());
                    let pure = rng.coin();
                    (0..d)
                        .map(|_| {
                            let sign = if rng.coin() { 1.0 } else { -1.0 };
                            if pure {
                                sign * min_normal * rng.uniform()
                            } else {
                                // Tiny normals: squares fall below the format's range.
                                let k = rng.below((dtype.precision() as usize).max(2)) as i32;
                                sign * min_normal * pow2(k) * (1.0 + rng.uniform())
                            }
                        })
                        .collect()
                }
                Family::OverflowingSquares => {
                    let emax = dtype.emax();
                    if rng.below(3) == 0 {
                        // Same sign, all near the max: the sum overflows too.
                        let max = dtype.max_finite();
                        (0..d).map(|_| max * (0.5 + 0.5 * rng.uniform())).collect()
                    } else {
                        let lo = emax / 2 + 1;
                        (0..d)
                            .map(|_| {
                                let e = lo + rng.below((emax - lo) as usize) as i32;
                                let sign = if rng.coin() { 1.0 } else { -1.0 };
                                sign * pow2(e) * (1.0 + rng.uniform())
                            })
                            .collect()
                    }
                }
                Family::NonFinite => {
                    let mut row: Vec<f64> = (0..d).map(|_| rng.normal()).collect();
                    if r == nonfinite_row {
                        let i = rng.below(d);
                        row[i] = *rng.choose(&[f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
                    }
                    row
                }
                Family::SignedZeros => {
                    let all_zero = r == 0;
                    (0..d)
                        .map(|_| {
                            if all_zero || rng.coin() {
                                if rng.coin() {
                                    0.0
                                } else {
                                    -0.0
                                }
                            } else {
                                1e-2 * rng.normal()
                            }
                        })
                        .collect()
                }
                Family::ExactStatistics => {
                    let scale = pow2(rng.below(11) as i32 - 5);
                    let m = rng.below(9) as f64 - 4.0;
                    let mut a = vec![0.0f64; d];
                    for pair in 0..d / 2 {
                        let v = rng.below(3) as f64;
                        a[2 * pair] = v;
                        a[2 * pair + 1] = -v;
                    }
                    // Shuffle (Fisher–Yates) so the pairs are not adjacent.
                    for i in (1..d).rev() {
                        let j = rng.below(i + 1);
                        a.swap(i, j);
                    }
                    a.iter().map(|v| scale * (m + v)).collect::<Vec<f64>>()
                }
            };
            out.extend(row.into_iter().map(|v: f64| dtype.round_f64(v)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_produce_what_they_promise() {
        let mut rng = Rng::new(1, 1);
        for dt in Dtype::ALL {
            let sub = Family::Subnormal.generate(&mut rng, dt, 4, 64, 0.0);
            assert!(sub
                .iter()
                .all(|&b| dt.to_f64(b).abs() < pow2(dt.emin() + dt.precision())));
            let big = Family::OverflowingSquares.generate(&mut rng, dt, 4, 64, 0.0);
            assert!(big.iter().all(|&b| {
                let v = dt.to_f64(b).abs();
                dt.is_finite(b) && (v * v > dt.max_finite() || v > dt.max_finite() / 2.0)
            }));
            let nf = Family::NonFinite.generate(&mut rng, dt, 4, 16, 0.0);
            assert_eq!(nf.iter().filter(|&&b| !dt.is_finite(b)).count(), 1);
            let ex = Family::ExactStatistics.generate(&mut rng, dt, 3, 33, 0.0);
            for row in ex.chunks(33) {
                let vals: Vec<f64> = row.iter().map(|&b| dt.to_f64(b)).collect();
                let mean = vals.iter().sum::<f64>() / 33.0;
                assert_eq!(vals.iter().sum::<f64>(), 33.0 * mean);
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for f in Family::ALL {
            assert_eq!(Family::from_name(f.name()).unwrap(), f);
        }
        assert!(Family::from_name("nope").is_err());
    }
}
