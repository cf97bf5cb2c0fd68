//! `normoracle unselectable check`: reading keys from .npy files, deciding them, and writing
//! the verdicts with their certificates as text or JSON.

use super::certificate::{Above, Certificate, Query, Weights};
use super::decide::{decide_plain, Decision, Options};
use super::decide_scaled::decide_scaled;
use super::keys::{exact, KeySet, NormSpec, ScaledKeySet};
use crate::error::{Error, Result};
use crate::npy;
use rug::Rational;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

/// The decided key set.
#[derive(Debug, Clone)]
pub struct CheckReport {
    pub n: usize,
    pub d: usize,
    pub norm: NormSpec,
    pub with_bias: bool,
    pub with_gain: bool,
    pub decisions: Vec<Decision>,
    /// The exact query vector of every key's own-key query (h_i, or w_i when normalized), so
    /// reports can print `Query::OwnKey` as numbers.
    own: Vec<Vec<Rational>>,
}

impl CheckReport {
    /// Indices (0-based) of the unselectable keys.
    pub fn unselectable(&self) -> Vec<usize> {
        (0..self.n)
            .filter(|&i| !self.decisions[i].selectable())
            .collect()
    }

    pub fn all_selectable(&self) -> bool {
        self.decisions.iter().all(Decision::selectable)
    }

    fn query_values(&self, i: usize, q: &Query) -> Vec<Rational> {
        match q {
            Query::OwnKey => self.own[i].clone(),
            Query::Float(v) => v.iter().map(|&x| exact(x)).collect(),
            Query::Exact(v) => v.clone(),
        }
    }

    fn certificate_json(&self, i: usize, c: &Certificate) -> Value {
        let weights = |w: &Weights| -> Value {
            Value::Array(
                w.iter()
                    .map(|(j, x)| json!({"key": j, "weight": x.to_string()}))
                    .collect(),
            )
        };
        match c {
            Certificate::Query(q) => json!({
                "kind": "query",
                "query": self.query_values(i, q).iter().map(|x| x.to_string()).collect::<Vec<_>>(),
            }),
            Certificate::Hull(w) => json!({"kind": "hull", "weights": weights(w)}),
            Certificate::ScaledHull { below, above } => json!({
                "kind": "scaled-hull",
                "below": weights(below),
                "above": match above {
                    None => Value::Null,
                    Some(Above::Ray(r)) => json!({"ray": weights(r)}),
                    Some(Above::Point(p)) => json!({"point": weights(p)}),
                },
            }),
        }
    }

    /// `{"n", "d", "norm", "unselectable": [indices], "keys": [{index, selectable, method,
    /// certificate}]}`; rationals as "p/q" strings.
    pub fn to_json(&self) -> String {
        let keys: Vec<Value> = self
            .decisions
            .iter()
            .enumerate()
            .map(|(i, dec)| {
                json!({
                    "index": i,
                    "selectable": dec.selectable(),
                    "method": dec.method.name(),
                    "certificate": self.certificate_json(i, &dec.certificate),
                })
            })
            .collect();
        let v = json!({
            "n": self.n,
            "d": self.d,
            "norm": self.norm.name(),
            "bias": self.with_bias,
            "gain": self.with_gain,
            "certificates": "verified in exact rational arithmetic",
            "unselectable": self.unselectable(),
            "keys": keys,
        });
        let mut s = serde_json::to_string_pretty(&v).expect("json of plain values");
        s.push('\n');
        s
    }

    /// A summary line, then one line per unselectable key with its weights (and, with `all`,
    /// one line per selectable key with its query).
    pub fn to_text(&self, all: bool) -> String {
        let bad = self.unselectable();
        let mut out = format!(
            "{} keys, d = {}, norm {}: {} unselectable{}\n",
            self.n,
            self.d,
            self.norm.name(),
            bad.len(),
            if bad.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    bad.iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        );
        let name = if matches!(self.norm, NormSpec::None) {
            "h"
        } else {
            "w"
        };
        let combo = |w: &Weights| -> String {
            w.iter()
                .map(|(j, x)| format!("{x}·{name}_{j}"))
                .collect::<Vec<_>>()
                .join(" + ")
        };
        for (i, dec) in self.decisions.iter().enumerate() {
            let line = match &dec.certificate {
                Certificate::Hull(w) => format!("key {i}: unselectable: h_{i} = {}", combo(w)),
                Certificate::ScaledHull { below, above } => {
                    let tail = match above {
                        None => " with Σ μ_j √(q_j/q_i) = 1".to_string(),
                        Some(Above::Ray(r)) => {
                            format!(", Σ μ_j √(q_j/q_i) ≤ 1, ray 0 = {}", combo(r))
                        }
                        Some(Above::Point(p)) => format!(
                            ", Σ μ_j √(q_j/q_i) ≤ 1 ≤ the same sum for w_{i} = {}",
                            combo(p)
                        ),
                    };
                    format!("key {i}: unselectable: w_{i} = {}{tail}", combo(below))
                }
                Certificate::Query(q) if all => format!(
                    "key {i}: selectable by query ({})",
                    self.query_values(i, q)
                        .iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Certificate::Query(_) => continue,
            };
            let _ = writeln!(out, "{line}   [{}]", dec.method.name());
        }
        out
    }
}

fn read_matrix(path: &Path) -> Result<(usize, usize, Vec<f64>)> {
    let a = npy::read(path)?;
    if a.shape.len() != 2 {
        return Err(Error::input(format!(
            "{}: keys must be an (n, d) array, got shape {:?}",
            path.display(),
            a.shape
        )));
    }
    Ok((a.shape[0], a.shape[1], a.to_f64()))
}

fn read_vector(path: &Path, len: usize, what: &str) -> Result<Vec<f64>> {
    let a = npy::read(path)?;
    if a.shape != [len] {
        return Err(Error::input(format!(
            "{}: {what} must have shape ({len},), got {:?}",
            path.display(),
            a.shape
        )));
    }
    Ok(a.to_f64())
}

/// Reads and decides keys (and optional biases, normalization, gain) from .npy files.
pub fn check_files(
    keys_path: &Path,
    bias_path: Option<&Path>,
    norm: NormSpec,
    gain_path: Option<&Path>,
    options: &Options,
) -> Result<CheckReport> {
    let (n, d, data) = read_matrix(keys_path)?;
    let bias = bias_path.map(|p| read_vector(p, n, "biases")).transpose()?;
    let gain = gain_path
        .map(|p| read_vector(p, d, "the gain"))
        .transpose()?;
    let keys = KeySet::new(n, d, data, bias)?;
    check_keys(&keys, norm, gain.as_deref(), options)
}

/// Decides keys already in memory.
pub fn check_keys(
    keys: &KeySet,
    norm: NormSpec,
    gain: Option<&[f64]>,
    options: &Options,
) -> Result<CheckReport> {
    let (decisions, own) = match norm {
        NormSpec::None => {
            if gain.is_some() {
                return Err(Error::usage("--gain needs --norm layernorm or rmsnorm"));
            }
            let own = (0..keys.n()).map(|i| keys.key_exact(i)).collect();
            (decide_plain(keys, options), own)
        }
        NormSpec::Norm(nm) => {
            let scaled = ScaledKeySet::normalize(keys, nm, gain)?;
            let own = (0..keys.n()).map(|i| scaled.w(i).to_vec()).collect();
            (decide_scaled(&scaled, options)?, own)
        }
    };
    Ok(CheckReport {
        n: keys.n(),
        d: keys.d(),
        norm,
        with_bias: keys.has_bias(),
        with_gain: gain.is_some(),
        decisions,
        own,
    })
}
