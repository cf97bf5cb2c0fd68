//! Shared by the kernel tests: a seeded set of row families (a different mix from the
//! battery's, wider rows) and the library's correctly rounded reference for one row.

#![allow(dead_code)]

use normoracle::dtype::Dtype;
use normoracle::problem::{Eps, EpsConvention, Op, Problem};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One row as a problem (ε inside).
pub fn row_problem(
    op: Op,
    dt: Dtype,
    x: &[u64],
    gamma: Option<&[u64]>,
    beta: Option<&[u64]>,
    eps: f32,
) -> Problem {
    Problem {
        op,
        dtype: dt,
        eps: Eps::from_f32(eps).expect("a valid eps"),
        convention: EpsConvention::Inside,
        rows: 1,
        d: x.len(),
        x: x.to_vec(),
        gamma: gamma.map(<[u64]>::to_vec),
        beta: beta.map(<[u64]>::to_vec),
    }
}

/// The correctly rounded outputs of a problem, from `normoracle::exact::reference` (itself
/// checked bit for bit against the independent slow path by `audit` and tests/reference.rs).
pub fn reference_of(problem: &Problem) -> Vec<u64> {
    normoracle::exact::reference(problem)
        .expect("a valid problem")
        .y
}

/// One test row: the data, optional parameters, ε and the family it came from.
#[derive(Debug, Clone)]
pub struct Row {
    pub family: &'static str,
    pub x: Vec<u64>,
    pub gamma: Option<Vec<u64>>,
    pub beta: Option<Vec<u64>>,
    pub eps: f32,
}

/// Round to the format.
fn q(dt: Dtype, v: f64) -> u64 {
    dt.round_f64(v)
}

pub struct Gen {
    rng: ChaCha8Rng,
    pub dt: Dtype,
}

impl Gen {
    pub fn new(dt: Dtype, seed: u64) -> Gen {
        Gen {
            rng: ChaCha8Rng::seed_from_u64(seed),
            dt,
        }
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * 2f64.powi(-53)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.rng.next_u64() % n
    }

    /// Values of a family, quantized to the format.
    pub fn values(&mut self, family: &str, d: usize) -> Vec<u64> {
        let dt = self.dt;
        let (emin, emax) = match dt {
            Dtype::F16 => (-14, 15),
            Dtype::BF16 => (-100, 100),
            _ => (-60, 60),
        };
        match family {
            // Roughly N(0, 1): the sum of three uniforms, rescaled.
            "standard" => (0..d)
                .map(|_| {
                    let s = self.unit() + self.unit() + self.unit() - 1.5;
                    q(dt, 2.0 * s)
                })
                .collect(),
            // A mean far larger than the spread: a few ulps of noise around 2^k.
            "offset" => {
                let k = match dt {
                    Dtype::F16 => 4 + self.below(10) as i32,
                    Dtype::BF16 => 4 + self.below(40) as i32,
                    _ => 4 + self.below(100) as i32,
                };
                let center = 2f64.powi(k) * (1.0 + self.unit());
                let ulp = dt.ulp_at(center);
                (0..d)
                    .map(|_| q(dt, center + ulp * (self.below(64) as f64 - 32.0)))
                    .collect()
            }
            // Magnitudes over a wide range, random signs.
            "wide" => (0..d)
                .map(|_| {
                    let e = emin + self.below((emax - emin) as u64) as i32;
                    let s = if self.below(2) == 0 { 1.0 } else { -1.0 };
                    q(dt, s * (1.0 + self.unit()) * 2f64.powi(e))
                })
                .collect(),
            // A spread of one or two ulps: σ far below ε for ordinary ε.
            "ulps" => {
                let center = 1.0 + self.unit();
                let ulp = dt.ulp_at(center);
                (0..d)
                    .map(|_| q(dt, center + ulp * self.below(3) as f64))
                    .collect()
            }
            "constant" => vec![q(dt, 3.0 * self.unit() - 1.5); d],
            // Small integers: exact statistics, many exact outputs and ties.
            "integers" => (0..d).map(|_| q(dt, self.below(17) as f64 - 8.0)).collect(),
            other => panic!("unknown family {other}"),
        }
    }

    pub fn params(&mut self, d: usize) -> (Option<Vec<u64>>, Option<Vec<u64>>) {
        let dt = self.dt;
        let p = |g: &mut Gen| (0..d).map(|_| q(dt, 4.0 * g.unit() - 2.0)).collect();
        match self.below(4) {
            0 => (None, None),
            1 => (Some(p(self)), None),
            2 => (None, Some(p(self))),
            _ => (Some(p(self)), Some(p(self))),
        }
    }
}

pub const FAMILIES: [&str; 6] = ["standard", "offset", "wide", "ulps", "constant", "integers"];
pub const WIDTHS: [usize; 15] = [1, 2, 3, 5, 7, 8, 9, 16, 17, 31, 64, 65, 127, 256, 1000];

/// The battery: every family × width, a few rows each, ε from a small set (0 only where
/// the row cannot be constant).
pub fn battery(dt: Dtype, seed: u64, rows_each: usize) -> Vec<Row> {
    let mut g = Gen::new(dt, seed);
    let mut out = Vec::new();
    for family in FAMILIES {
        for d in WIDTHS {
            for _ in 0..rows_each {
                let x = g.values(family, d);
                let (gamma, beta) = g.params(d);
                let distinct = x.iter().any(|&v| dt.to_f64(v) != dt.to_f64(x[0]));
                let eps = match g.below(3) {
                    0 if distinct => 0.0,
                    1 => 1e-12,
                    _ => 1e-5,
                };
                out.push(Row {
                    family,
                    x,
                    gamma,
                    beta,
                    eps,
                });
            }
        }
    }
    out
}
