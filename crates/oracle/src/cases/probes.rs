//! Small targeted problems the accuracy table runs beside the battery: the mean-offset sweep
//! (how large |μ|/σ may grow before a kernel fails) and minimal reproducers of classic bugs,
//! each small enough to be read in a report ("x = [1000, 1000, 1000.125] gives NaN").

use super::rng::Rng;
use crate::dtype::Dtype;
use crate::problem::{Eps, EpsConvention, Op, Problem};

/// ε of every problem here: the usual 1e-5, inside the square root.
const EPS: f32 = 1e-5;

/// The sweep's ratios |μ|/σ are 10^k for k in this range (while 2·10^k fits the format).
pub const MEAN_RATIO_EXPONENTS: std::ops::RangeInclusive<i32> = 0..=8;

/// Rows of N(μ, 1) with μ = `ratio` (each value rounded to the format), 4 rows × d = 256.
pub fn mean_offset(op: Op, dtype: Dtype, ratio: f64, seed: u64) -> Problem {
    let mut rng = Rng::new(seed, ratio.to_bits());
    let (rows, d) = (4, 256);
    let x = (0..rows * d)
        .map(|_| dtype.round_f64(ratio + rng.normal()))
        .collect();
    problem(op, dtype, rows, d, x)
}

/// The sweep for one (op, dtype): (ratio, problem) for every ratio the format can hold.
pub fn mean_offset_sweep(op: Op, dtype: Dtype, seed: u64) -> Vec<(f64, Problem)> {
    MEAN_RATIO_EXPONENTS
        .map(|k| 10f64.powi(k))
        .take_while(|ratio| ratio * 2.0 <= dtype.max_finite())
        .map(|ratio| (ratio, mean_offset(op, dtype, ratio, seed)))
        .collect()
}

/// A minimal reproducer of a classic bug: a problem a correct kernel gets right and the bug
/// gets visibly wrong.
#[derive(Debug, Clone)]
pub struct Probe {
    /// A short stable name (`negative-one-pass-variance`).
    pub name: &'static str,
    /// The bug it exposes and the input, for the table: `"E[x²] − E[x]² < 0 in f32, x = [...]"`.
    pub bug: &'static str,
    pub problem: Problem,
}

/// The probes that apply to (op, dtype).
pub fn probes(op: Op, dtype: Dtype) -> Vec<Probe> {
    let mut out = Vec::new();
    if op == Op::LayerNorm && dtype == Dtype::F32 {
        // σ² = 1/288 ≈ 0.0035, but in f32 Σx²/3 rounds to 1000083.3125 and μ² to
        // 1000083.375: the one-pass variance is −0.0625, and √(var + ε) is NaN.
        out.push(Probe {
            name: "negative-one-pass-variance",
            bug: "one-pass E[x²]−E[x]² < 0 in f32, x = [1000, 1000, 1000.125]",
            problem: row(op, dtype, &[1000.0, 1000.0, 1000.125]),
        });
    }
    // Σx² = 2^129 overflows f32 (and bf16, which has f32's range); the outputs are ±1.
    // For f16 the same bug needs only 256² · 2 = 2^17 > 65504.
    let (big, bug) = match dtype {
        Dtype::F16 => (256.0, "Σx² overflows an f16 accumulator, x = [256, −256]"),
        Dtype::F64 => return out,
        Dtype::F32 | Dtype::BF16 => (
            2f64.powi(64),
            "Σx² overflows f32 (no scaling), x = [2^64, −2^64]",
        ),
    };
    out.push(Probe {
        name: "overflowing-sum-of-squares",
        bug,
        problem: row(op, dtype, &[big, -big]),
    });
    out
}

fn row(op: Op, dtype: Dtype, values: &[f64]) -> Problem {
    let x = values.iter().map(|&v| dtype.round_f64(v)).collect();
    problem(op, dtype, 1, values.len(), x)
}

fn problem(op: Op, dtype: Dtype, rows: usize, d: usize, x: Vec<u64>) -> Problem {
    Problem {
        op,
        dtype,
        eps: Eps::from_f32(EPS).expect("1e-5 is a valid ε"),
        convention: EpsConvention::Inside,
        rows,
        d,
        x,
        gamma: None,
        beta: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact;

    /// Each probe's values are exact in its format, its reference outputs are finite, and the
    /// bug it names really breaks it: the one-pass f32 variance is negative, and the f32 (or
    /// f16) sum of squares overflows.
    #[test]
    fn probes_are_exact_finite_and_break_the_named_bug() {
        for op in Op::ALL {
            for dtype in [Dtype::F32, Dtype::F16, Dtype::BF16] {
                for probe in probes(op, dtype) {
                    let p = &probe.problem;
                    let values: Vec<f64> = p.x.iter().map(|&b| dtype.to_f64(b)).collect();
                    let y = exact::reference(p).unwrap();
                    assert!(y.y.iter().all(|&b| dtype.is_finite(b)), "{}", probe.name);
                    match probe.name {
                        "negative-one-pass-variance" => {
                            let x: Vec<f32> = values.iter().map(|&v| v as f32).collect();
                            let n = x.len() as f32;
                            let mean = x.iter().sum::<f32>() / n;
                            let mean_sq = x.iter().map(|v| v * v).sum::<f32>() / n;
                            assert!(mean_sq - mean * mean < 0.0);
                        }
                        "overflowing-sum-of-squares" => {
                            let sum_sq: f64 = values.iter().map(|v| v * v).sum();
                            assert!(sum_sq > dtype.max_finite(), "{dtype}");
                        }
                        other => panic!("untested probe {other}"),
                    }
                }
            }
        }
        assert_eq!(probes(Op::LayerNorm, Dtype::F32).len(), 2);
        assert_eq!(probes(Op::RmsNorm, Dtype::F16).len(), 1);
    }

    #[test]
    fn the_sweep_stops_where_the_format_ends() {
        assert_eq!(mean_offset_sweep(Op::LayerNorm, Dtype::F32, 1).len(), 9);
        // f16: 2·10^4 ≤ 65504 < 2·10^5.
        let f16 = mean_offset_sweep(Op::RmsNorm, Dtype::F16, 1);
        assert_eq!(f16.last().unwrap().0, 1e4);
        let (ratio, p) = &f16[2];
        let mean = p.x.iter().map(|&b| Dtype::F16.to_f64(b)).sum::<f64>() / p.x.len() as f64;
        assert!((mean - ratio).abs() < 1.0, "{mean}");
    }
}
