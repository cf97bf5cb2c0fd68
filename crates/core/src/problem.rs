//! What is being normalized: the operation, its ε convention, the exact ε, the storage
//! format and the data (rows × d, optional γ and β), all as raw bits of one dtype.

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use rug::Rational;

/// The normalization operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// y = γ⊙(x−μ)/√(σ²+ε) + β, σ² the biased (1/d) variance.
    LayerNorm,
    /// y = γ⊙x/√(mean(x²)+ε) (+ β where given).
    RmsNorm,
}

impl Op {
    pub const ALL: [Op; 2] = [Op::LayerNorm, Op::RmsNorm];
    pub fn name(self) -> &'static str {
        match self {
            Op::LayerNorm => "layer_norm",
            Op::RmsNorm => "rms_norm",
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Op {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "layer_norm" | "layernorm" | "ln" => Ok(Op::LayerNorm),
            "rms_norm" | "rmsnorm" | "rms" => Ok(Op::RmsNorm),
            other => Err(Error::usage(format!(
                "unknown op '{other}' (layer_norm, rms_norm)"
            ))),
        }
    }
}

/// Where ε enters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum EpsConvention {
    /// (x−μ)/√(σ²+ε), x/√(mean(x²)+ε): PyTorch, ONNX, most frameworks.
    #[default]
    Inside,
    /// (x−μ)/(σ+ε), x/(rms+ε): some hand-written code.
    Outside,
}

impl EpsConvention {
    pub fn name(self) -> &'static str {
        match self {
            EpsConvention::Inside => "inside",
            EpsConvention::Outside => "outside",
        }
    }
}

impl std::fmt::Display for EpsConvention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for EpsConvention {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "inside" => Ok(EpsConvention::Inside),
            "outside" => Ok(EpsConvention::Outside),
            other => Err(Error::usage(format!(
                "unknown eps convention '{other}' (inside, outside)"
            ))),
        }
    }
}

/// ε as an exact value: an f32 (what the C ABI and most frameworks pass). Its exact rational
/// value is the one used by the reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eps(f32);

impl Eps {
    /// The f32 nearest to a decimal string (Rust's parser rounds correctly).
    pub fn from_decimal(text: &str) -> Result<Self> {
        let v: f32 = text
            .trim()
            .parse()
            .map_err(|_| Error::usage(format!("cannot read eps '{text}' as a number")))?;
        Self::from_f32(v)
    }

    /// The f32 with these bits, e.g. `0x3727c5ac` (≈1e-5).
    pub fn from_bits_text(text: &str) -> Result<Self> {
        let t = text.trim();
        let digits = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        let bits = u32::from_str_radix(digits, 16)
            .map_err(|_| Error::usage(format!("cannot read eps bits '{text}' as hex")))?;
        Self::from_f32(f32::from_bits(bits))
    }

    pub fn from_f32(v: f32) -> Result<Self> {
        if v.is_nan() || v.is_infinite() {
            return Err(Error::usage(format!("eps must be finite, got {v}")));
        }
        if v.is_sign_negative() && v != 0.0 {
            return Err(Error::usage(format!("eps must not be negative, got {v:e}")));
        }
        Ok(Eps(v.abs()))
    }

    pub fn value(self) -> f32 {
        self.0
    }

    pub fn exact(self) -> Rational {
        Rational::from_f64(self.0 as f64).expect("finite")
    }

    /// A one-token description: decimal and exact bits.
    pub fn describe(self) -> String {
        format!("{:e} (f32 0x{:08x})", self.0, self.0.to_bits())
    }
}

/// A normalization problem: everything the reference and a kernel need for one tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub op: Op,
    pub dtype: Dtype,
    pub eps: Eps,
    pub convention: EpsConvention,
    pub rows: usize,
    pub d: usize,
    /// rows × d bits, row-major.
    pub x: Vec<u64>,
    /// d bits, or None meaning all ones.
    pub gamma: Option<Vec<u64>>,
    /// d bits, or None meaning all zeros.
    pub beta: Option<Vec<u64>>,
}

impl Problem {
    /// Checks shapes and parameters; returns a one-line error for anything a kernel or the
    /// reference cannot be asked.
    pub fn validate(&self) -> Result<()> {
        if self.d == 0 {
            return Err(Error::input("row width d = 0: nothing to normalize"));
        }
        if self.rows.checked_mul(self.d) != Some(self.x.len()) {
            return Err(Error::input(format!(
                "x holds {} values, expected rows × d = {} × {}",
                self.x.len(),
                self.rows,
                self.d
            )));
        }
        for (name, p) in [("gamma", &self.gamma), ("beta", &self.beta)] {
            if let Some(v) = p {
                if v.len() != self.d {
                    return Err(Error::input(format!(
                        "{name} has {} values but rows have d = {}",
                        v.len(),
                        self.d
                    )));
                }
                if let Some(i) = v.iter().position(|&b| !self.dtype.is_finite(b)) {
                    return Err(Error::input(format!(
                        "{name}[{i}] is not finite; parameters must be finite"
                    )));
                }
            }
        }
        if self.op == Op::RmsNorm && self.beta.is_some() {
            // Allowed: y = γ⊙x/rms + β. Nothing to reject.
        }
        Ok(())
    }

    pub fn row(&self, r: usize) -> &[u64] {
        &self.x[r * self.d..(r + 1) * self.d]
    }

    pub fn gamma_at(&self, i: usize) -> f64 {
        self.gamma.as_ref().map_or(1.0, |g| self.dtype.to_f64(g[i]))
    }

    pub fn beta_at(&self, i: usize) -> f64 {
        self.beta.as_ref().map_or(0.0, |b| self.dtype.to_f64(b[i]))
    }
}

impl Problem {
    /// One row of values (each rounded to the format) under ε inside: the unit tests' problem
    /// (of every crate, hence public).
    #[doc(hidden)]
    pub fn one_row(
        op: Op,
        dtype: Dtype,
        eps: f32,
        x: &[f64],
        gamma: Option<&[f64]>,
        beta: Option<&[f64]>,
    ) -> Problem {
        let bits = |v: &[f64]| v.iter().map(|&v| dtype.round_f64(v)).collect::<Vec<u64>>();
        Problem {
            op,
            dtype,
            eps: Eps::from_f32(eps).expect("a valid ε"),
            convention: EpsConvention::Inside,
            rows: 1,
            d: x.len(),
            x: bits(x),
            gamma: gamma.map(bits),
            beta: beta.map(bits),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eps_parsing() {
        assert_eq!(
            Eps::from_decimal("1e-5").unwrap().value().to_bits(),
            0x3727c5ac
        );
        assert_eq!(Eps::from_bits_text("0x3727c5ac").unwrap().value(), 1e-5f32);
        assert!(Eps::from_decimal("-1e-5").is_err());
        assert!(Eps::from_decimal("nan").is_err());
        assert!(Eps::from_decimal("abc").is_err());
        assert_eq!(Eps::from_decimal("-0").unwrap().value().to_bits(), 0);
    }
}

/// Serialized by name, as on the command line.
macro_rules! serialize_by_name {
    ($($t:ty),*) => {$(
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    )*};
}
serialize_by_name!(Op, EpsConvention, Dtype);
