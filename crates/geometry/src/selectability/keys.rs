//! The two kinds of key sets the engine decides.
//!
//! * [`KeySet`]: keys h_j ∈ ℝ^d given as f64 values (each an exact rational), with optional
//!   score biases b_j. The score of key j under query v is v·h_j + b_j.
//! * [`ScaledKeySet`]: keys k_j = w_j/√q_j with w_j ∈ ℚ^d and q_j ∈ ℚ, q_j > 0: the exact
//!   form of normalized keys, whose coordinates are irrational. LayerNorm gives
//!   w_j = γ⊙(x_j − μ_j), q_j = σ_j² + ε; RMSNorm gives w_j = γ⊙x_j, q_j = mean(x_j²) + ε. A
//!   bias β after the gain adds v·β to every score and so changes no verdict; it is dropped.
//!   The score of key j under query v is v·w_j/√q_j, compared exactly by sign analysis and
//!   squaring (see `surd.rs`).

use crate::error::{Error, Result};
use crate::problem::Eps;
use rug::Rational;

/// Keys with f64 coordinates and optional biases (row-major, n × d).
#[derive(Debug, Clone, PartialEq)]
pub struct KeySet {
    n: usize,
    d: usize,
    data: Vec<f64>,
    bias: Option<Vec<f64>>,
}

impl KeySet {
    /// Validates sizes (n ≥ 1, d ≥ 1) and finiteness.
    pub fn new(n: usize, d: usize, data: Vec<f64>, bias: Option<Vec<f64>>) -> Result<Self> {
        if n == 0 {
            return Err(Error::input("no keys (n = 0)"));
        }
        if d == 0 {
            return Err(Error::input("keys of dimension 0"));
        }
        if data.len() != n.saturating_mul(d) {
            return Err(Error::input(format!(
                "{} values given for {n} keys of dimension {d}",
                data.len()
            )));
        }
        if let Some(pos) = data.iter().position(|x| !x.is_finite()) {
            return Err(Error::input(format!(
                "key {} coordinate {} is {} (keys must be finite)",
                pos / d,
                pos % d,
                data[pos]
            )));
        }
        if let Some(b) = &bias {
            if b.len() != n {
                return Err(Error::input(format!(
                    "{} biases given for {n} keys",
                    b.len()
                )));
            }
            if let Some(j) = b.iter().position(|x| !x.is_finite()) {
                return Err(Error::input(format!(
                    "bias {j} is {} (biases must be finite)",
                    b[j]
                )));
            }
        }
        Ok(KeySet { n, d, data, bias })
    }

    pub fn n(&self) -> usize {
        self.n
    }

    pub fn d(&self) -> usize {
        self.d
    }

    pub fn key(&self, j: usize) -> &[f64] {
        &self.data[j * self.d..(j + 1) * self.d]
    }

    pub fn data(&self) -> &[f64] {
        &self.data
    }

    pub fn has_bias(&self) -> bool {
        self.bias.is_some()
    }

    /// b_j (0 without biases).
    pub fn bias(&self, j: usize) -> f64 {
        self.bias.as_ref().map_or(0.0, |b| b[j])
    }

    pub fn biases(&self) -> Option<&[f64]> {
        self.bias.as_deref()
    }

    /// Key j as exact rationals.
    pub fn key_exact(&self, j: usize) -> Vec<Rational> {
        self.key(j).iter().map(|&x| exact(x)).collect()
    }

    /// b_j as an exact rational.
    pub fn bias_exact(&self, j: usize) -> Rational {
        exact(self.bias(j))
    }
}

/// The exact value of a finite f64.
pub fn exact(x: f64) -> Rational {
    Rational::from_f64(x).expect("finite by construction")
}

/// Which normalization produced a scaled key set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormKind {
    /// (x − μ)/√(σ² + ε), σ² the biased variance.
    LayerNorm,
    /// x/√(mean(x²) + ε).
    RmsNorm,
}

/// A normalization with its exact ε (an f32, as frameworks pass it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normalization {
    pub kind: NormKind,
    pub eps: Eps,
}

impl Normalization {
    pub fn layer_norm(eps: f32) -> Result<Self> {
        Ok(Normalization {
            kind: NormKind::LayerNorm,
            eps: Eps::from_f32(eps)?,
        })
    }

    pub fn rms_norm(eps: f32) -> Result<Self> {
        Ok(Normalization {
            kind: NormKind::RmsNorm,
            eps: Eps::from_f32(eps)?,
        })
    }

    /// `layernorm`, `rmsnorm`, `layernorm-eps=E`, `rmsnorm-eps=E` (E read as the nearest f32).
    pub fn name(&self) -> String {
        let base = match self.kind {
            NormKind::LayerNorm => "layernorm",
            NormKind::RmsNorm => "rmsnorm",
        };
        if self.eps.value() == 0.0 {
            base.to_string()
        } else {
            format!("{base}-eps={:e}", self.eps.value())
        }
    }
}

/// What is applied to the keys before deciding: nothing, or a normalization.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NormSpec {
    None,
    Norm(Normalization),
}

impl NormSpec {
    pub fn name(&self) -> String {
        match self {
            NormSpec::None => "none".to_string(),
            NormSpec::Norm(n) => n.name(),
        }
    }
}

impl std::str::FromStr for NormSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let (base, eps) = match s.split_once("-eps=") {
            Some((b, e)) => (b, Some(e)),
            None => (s, None),
        };
        let eps = match eps {
            Some(text) => Eps::from_decimal(text)?,
            None => Eps::from_f32(0.0)?,
        };
        let kind = match base {
            "none" if s == "none" => return Ok(NormSpec::None),
            "layernorm" | "layer_norm" | "ln" => NormKind::LayerNorm,
            "rmsnorm" | "rms_norm" | "rms" => NormKind::RmsNorm,
            _ => {
                return Err(Error::usage(format!(
                    "unknown norm '{s}' (none, layernorm, rmsnorm, layernorm-eps=E, rmsnorm-eps=E)"
                )))
            }
        };
        Ok(NormSpec::Norm(Normalization { kind, eps }))
    }
}

/// Keys k_j = w_j/√q_j, exact, with f64 approximations for the fast path.
#[derive(Debug, Clone)]
pub struct ScaledKeySet {
    n: usize,
    d: usize,
    w: Vec<Vec<Rational>>,
    q: Vec<Rational>,
    /// w rounded toward zero (row-major).
    w_approx: Vec<f64>,
    /// q rounded toward zero.
    q_approx: Vec<f64>,
    /// ŵ/√q̂ in plain f64: only for heuristics and float LPs, never for a verdict.
    key_approx: Vec<f64>,
    /// Every nonzero w is within [2^-1000, 2^1000] and every q too, so the filter's
    /// relative-error model for ŵ and q̂ holds (`filter.rs`).
    approx_reliable: bool,
}

impl ScaledKeySet {
    /// From exact parts; q_j must be positive.
    pub fn new(w: Vec<Vec<Rational>>, q: Vec<Rational>) -> Result<Self> {
        let n = w.len();
        if n == 0 {
            return Err(Error::input("no keys (n = 0)"));
        }
        let d = w[0].len();
        if d == 0 {
            return Err(Error::input("keys of dimension 0"));
        }
        if q.len() != n || w.iter().any(|r| r.len() != d) {
            return Err(Error::input(
                "scaled keys: ragged rows or q of the wrong length",
            ));
        }
        if let Some(j) = q.iter().position(|x| *x <= 0) {
            return Err(Error::input(format!(
                "key {j}: the normalizer's radicand is {} (must be > 0; a constant row with ε = 0 has no normalized value)",
                q[j]
            )));
        }
        let in_range =
            |x: f64| x == 0.0 || (x.abs() >= 2f64.powi(-1000) && x.abs() <= 2f64.powi(1000));
        let mut approx_reliable = true;
        let mut w_approx = Vec::with_capacity(n * d);
        for row in &w {
            for x in row {
                let a = x.to_f64();
                approx_reliable &= in_range(a) && (a != 0.0 || *x == 0);
                w_approx.push(a);
            }
        }
        let q_approx: Vec<f64> = q.iter().map(|x| x.to_f64()).collect();
        approx_reliable &= q_approx.iter().all(|&x| x != 0.0 && in_range(x));
        let key_approx = (0..n)
            .flat_map(|j| {
                let s = q_approx[j].sqrt();
                w_approx[j * d..(j + 1) * d]
                    .iter()
                    .map(move |x| x / s)
                    .collect::<Vec<_>>()
            })
            .collect();
        Ok(ScaledKeySet {
            n,
            d,
            w,
            q,
            w_approx,
            q_approx,
            key_approx,
            approx_reliable,
        })
    }

    /// The exact normalized form of `keys` (which must carry no biases) under `norm`, with an
    /// optional gain γ (one value per coordinate).
    pub fn normalize(keys: &KeySet, norm: Normalization, gain: Option<&[f64]>) -> Result<Self> {
        if keys.has_bias() {
            return Err(Error::usage(
                "score biases cannot be combined with a normalization of the keys",
            ));
        }
        let d = keys.d();
        if let Some(g) = gain {
            if g.len() != d {
                return Err(Error::input(format!(
                    "{} gains given for keys of dimension {d}",
                    g.len()
                )));
            }
            if let Some(k) = g.iter().position(|x| !x.is_finite()) {
                return Err(Error::input(format!(
                    "gain {k} is {} (must be finite)",
                    g[k]
                )));
            }
        }
        let eps = norm.eps.exact();
        let dr = Rational::from(d as u64);
        let gain: Option<Vec<Rational>> = gain.map(|g| g.iter().map(|&x| exact(x)).collect());
        let mut w = Vec::with_capacity(keys.n());
        let mut q = Vec::with_capacity(keys.n());
        for j in 0..keys.n() {
            let x = keys.key_exact(j);
            let u: Vec<Rational> = match norm.kind {
                NormKind::LayerNorm => {
                    let mut mean = Rational::new();
                    for v in &x {
                        mean += v;
                    }
                    mean /= &dr;
                    x.into_iter().map(|v| v - &mean).collect()
                }
                NormKind::RmsNorm => x,
            };
            let mut sq = Rational::new();
            for v in &u {
                sq += Rational::from(v * v);
            }
            let qj = sq / &dr + &eps;
            if qj == 0 {
                return Err(Error::input(format!(
                    "key {j} is constant ({} with ε = 0 is undefined)",
                    norm.name()
                )));
            }
            let wj = match &gain {
                Some(g) => u.into_iter().zip(g).map(|(v, gk)| v * gk).collect(),
                None => u,
            };
            w.push(wj);
            q.push(qj);
        }
        Self::new(w, q)
    }

    pub fn n(&self) -> usize {
        self.n
    }

    pub fn d(&self) -> usize {
        self.d
    }

    pub fn w(&self, j: usize) -> &[Rational] {
        &self.w[j]
    }

    pub fn q(&self, j: usize) -> &Rational {
        &self.q[j]
    }

    pub fn w_approx(&self, j: usize) -> &[f64] {
        &self.w_approx[j * self.d..(j + 1) * self.d]
    }

    pub fn q_approx(&self, j: usize) -> f64 {
        self.q_approx[j]
    }

    /// The f64 approximation of key j (heuristics only).
    pub fn key_approx(&self, j: usize) -> &[f64] {
        &self.key_approx[j * self.d..(j + 1) * self.d]
    }

    pub fn approx_reliable(&self) -> bool {
        self.approx_reliable
    }

    /// The approximated keys as a plain key set (for the float stages of the pipeline).
    pub fn approx_key_set(&self) -> Option<KeySet> {
        KeySet::new(self.n, self.d, self.key_approx.clone(), None).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_rejects_bad_shapes_and_values() {
        assert!(KeySet::new(0, 2, vec![], None).is_err());
        assert!(KeySet::new(1, 0, vec![], None).is_err());
        assert!(KeySet::new(2, 2, vec![1.0; 3], None).is_err());
        assert!(KeySet::new(1, 2, vec![1.0, f64::NAN], None).is_err());
        assert!(KeySet::new(2, 1, vec![1.0, 2.0], Some(vec![0.0])).is_err());
        assert!(KeySet::new(2, 1, vec![1.0, 2.0], Some(vec![0.0, f64::INFINITY])).is_err());
        assert!(KeySet::new(2, 1, vec![1.0, 2.0], Some(vec![0.0, 1.0])).is_ok());
    }

    #[test]
    fn layer_norm_is_exact() {
        let keys = KeySet::new(1, 3, vec![1.0, 2.0, 6.0], None).unwrap();
        let s =
            ScaledKeySet::normalize(&keys, Normalization::layer_norm(0.0).unwrap(), None).unwrap();
        // μ = 3, u = (−2, −1, 3), σ² = 14/3.
        assert_eq!(
            s.w(0),
            &[Rational::from(-2), Rational::from(-1), Rational::from(3)]
        );
        assert_eq!(*s.q(0), Rational::from((14, 3)));
        let constant = KeySet::new(1, 2, vec![5.0, 5.0], None).unwrap();
        assert!(
            ScaledKeySet::normalize(&constant, Normalization::layer_norm(0.0).unwrap(), None)
                .is_err()
        );
        assert!(
            ScaledKeySet::normalize(&constant, Normalization::layer_norm(1e-5).unwrap(), None)
                .is_ok()
        );
    }

    #[test]
    fn norm_specs_parse() {
        assert_eq!("none".parse::<NormSpec>().unwrap(), NormSpec::None);
        let NormSpec::Norm(n) = "layernorm-eps=1e-5".parse::<NormSpec>().unwrap() else {
            panic!()
        };
        assert_eq!(n.kind, NormKind::LayerNorm);
        assert_eq!(n.eps.value(), 1e-5f32);
        assert_eq!(n.name(), "layernorm-eps=1e-5");
        assert!("none-eps=1".parse::<NormSpec>().is_err());
        assert!("batchnorm".parse::<NormSpec>().is_err());
        assert!("layernorm-eps=-1".parse::<NormSpec>().is_err());
    }
}
