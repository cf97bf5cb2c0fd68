//! The certificate target: key sets for `geometry::selectability`, every verdict checked by
//! the exact certificate checker, and arbitrary certificates held against the verdicts.
//!
//! Input (`key bytes`; bytes past the end read as 0):
//!
//! | bytes | meaning |
//! |---|---|
//! | 1 | flags: bits 0–1 what is decided (0 plain keys, 1 plain keys with biases, 2 layer-norm keys, 3 rms-norm keys); bit 2 a gain γ (normalized keys); bit 3 values on a grid (one byte each, i8/4: duplicates, hull points and ties come easily) else f64 bit patterns made finite; bits 4–5 the pipeline (all stages, no float LP, no key-as-query and no Braid-Reflect, nothing but the exact LP) |
//! | 1 | n − 1 (n = 1 + byte mod [`MAX_KEYS`]) |
//! | 1 | d − 1 (d = 1 + byte mod [`MAX_KEY_D`]) |
//! | 4 | ε as f32 bits (normalized keys; sign cleared, made finite) |
//! | n·d | key coordinates |
//! | n | biases (plain keys with biases) |
//! | d | γ (normalized keys with a gain) |
//! | the rest | a probe: a key index byte, then a query vector (d values) and hull weights (n bytes) |
//!
//! The properties: every verdict's certificate passes the checker; the pipelines agree
//! (plain keys also agree with the exact LP alone); a probe query the checker accepts means
//! the key is selectable, probe weights it accepts mean it is not (Motzkin: never both).

use super::checks::Finding;
use super::input::{make_finite, Reader};
use crate::dtype::Dtype;
use crate::geometry::selectability::{
    check_plain, check_scaled, decide_exact, decide_plain, decide_scaled, Certificate, Decision,
    KeySet, Normalization, Options, Query, ScaledKeySet,
};
use rug::Rational;

/// Most keys a fuzz input holds (the exact LP's cost grows fast with n and d).
pub const MAX_KEYS: usize = 8;
/// Widest key a fuzz input holds.
pub const MAX_KEY_D: usize = 6;

const BIASES: u8 = 1;
const LAYER_NORM: u8 = 2;
const RMS_NORM: u8 = 3;
const GAIN_GIVEN: u8 = 1 << 2;
const GRID: u8 = 1 << 3;
const PIPELINE_SHIFT: u8 = 4;

/// What a key input asks.
#[derive(Debug, Clone)]
pub struct KeyInput {
    pub keys: KeySet,
    /// The normalization applied to the keys (None: plain keys).
    pub norm: Option<(Normalization, Option<Vec<f64>>)>,
    pub options: Options,
    /// A key and a query vector and hull weights to hold against its verdict.
    pub probe: (usize, Vec<f64>, Vec<u8>),
}

/// The pipelines the flags choose from.
fn pipeline(index: u8) -> Options {
    let all = Options::default();
    match index & 3 {
        0 => all,
        1 => Options {
            float_lp: false,
            ..all
        },
        2 => Options {
            key_query: false,
            patience: 0,
            ..all
        },
        _ => Options {
            key_query: false,
            patience: 0,
            float_lp: false,
        },
    }
}

/// Decodes key bytes (every byte string decodes).
pub fn decode(bytes: &[u8]) -> KeyInput {
    let mut r = Reader::new(bytes);
    let flags = r.u8();
    let n = 1 + r.u8() as usize % MAX_KEYS;
    let d = 1 + r.u8() as usize % MAX_KEY_D;
    let eps_bits = r.uint(4) & 0x7fff_ffff;
    let eps = f32::from_bits(make_finite(Dtype::F32, eps_bits) as u32);
    let grid = flags & GRID != 0;
    let value = |r: &mut Reader| {
        if grid {
            r.u8() as i8 as f64 / 4.0
        } else {
            f64::from_bits(make_finite(Dtype::F64, r.uint(8)))
        }
    };
    let data: Vec<f64> = (0..n * d).map(|_| value(&mut r)).collect();
    let kind = flags & 3;
    let bias = (kind == BIASES).then(|| (0..n).map(|_| value(&mut r)).collect::<Vec<f64>>());
    let norm = match kind {
        LAYER_NORM | RMS_NORM => {
            let gain = (flags & GAIN_GIVEN != 0).then(|| (0..d).map(|_| value(&mut r)).collect());
            let norm = if kind == LAYER_NORM {
                Normalization::layer_norm(eps)
            } else {
                Normalization::rms_norm(eps)
            };
            Some((norm.expect("finite, not negative"), gain))
        }
        _ => None,
    };
    let key = r.u8() as usize % n;
    let query: Vec<f64> = (0..d).map(|_| value(&mut r)).collect();
    let weights: Vec<u8> = (0..n).map(|_| r.u8()).collect();
    KeyInput {
        keys: KeySet::new(n, d, data, bias).expect("sizes and finiteness hold by construction"),
        norm,
        options: pipeline(flags >> PIPELINE_SHIFT),
        probe: (key, query, weights),
    }
}

/// Key bytes for keys on the grid (each coordinate a multiple of 1/4 in [−32, 31.75]) or as
/// f64 bits: the inverse of `decode` for such inputs (probe: key 0, zero query and weights).
pub fn encode(
    keys: &[Vec<f64>],
    bias: Option<&[f64]>,
    norm: Option<(Normalization, Option<&[f64]>)>,
    pipeline_index: u8,
) -> Vec<u8> {
    let n = keys.len();
    let d = keys[0].len();
    assert!((1..=MAX_KEYS).contains(&n) && (1..=MAX_KEY_D).contains(&d));
    let all: Vec<f64> = keys
        .iter()
        .flatten()
        .copied()
        .chain(bias.into_iter().flatten().copied())
        .chain(norm.and_then(|(_, g)| g).into_iter().flatten().copied())
        .collect();
    let on_grid = all
        .iter()
        .all(|&v| (v * 4.0).fract() == 0.0 && (-128.0..=127.0).contains(&(v * 4.0)));
    let kind = match (bias, norm) {
        (Some(_), _) => BIASES,
        (None, None) => 0,
        (None, Some((n, _))) => match n.kind {
            crate::geometry::selectability::NormKind::LayerNorm => LAYER_NORM,
            crate::geometry::selectability::NormKind::RmsNorm => RMS_NORM,
        },
    };
    let mut flags = kind | (pipeline_index & 3) << PIPELINE_SHIFT;
    if on_grid {
        flags |= GRID;
    }
    if matches!(norm, Some((_, Some(_)))) {
        flags |= GAIN_GIVEN;
    }
    let eps = norm.map_or(0.0, |(n, _)| n.eps.value());
    let mut out = vec![flags, (n - 1) as u8, (d - 1) as u8];
    out.extend(eps.to_bits().to_le_bytes());
    for v in all {
        if on_grid {
            out.push((v * 4.0) as i8 as u8);
        } else {
            out.extend(v.to_bits().to_le_bytes());
        }
    }
    out
}

fn finding(what: impl Into<String>, input: &KeyInput) -> Finding {
    Finding(format!("{}\ninput: {input:?}", what.into()))
}

/// The properties of the module documentation.
pub fn certificates_verify(bytes: &[u8]) -> Result<(), Finding> {
    let input = decode(bytes);
    match &input.norm {
        None => plain(&input),
        Some((norm, gain)) => {
            let scaled = match ScaledKeySet::normalize(&input.keys, *norm, gain.as_deref()) {
                Ok(s) => s,
                // Keys the normalization leaves undefined (σ² + ε = 0): a clean error.
                Err(_) => return Ok(()),
            };
            scaled_keys(&input, &scaled)
        }
    }
}

fn verdicts(decisions: &[Decision]) -> Vec<bool> {
    decisions.iter().map(Decision::selectable).collect()
}

fn plain(input: &KeyInput) -> Result<(), Finding> {
    let keys = &input.keys;
    let decisions = decide_plain(keys, &input.options);
    if decisions.len() != keys.n() {
        return Err(finding("not one decision per key", input));
    }
    for (i, dec) in decisions.iter().enumerate() {
        check_plain(keys, i, &dec.certificate).map_err(|e| {
            finding(
                format!(
                    "key {i}: the {} verdict does not verify: {e}",
                    dec.method.name()
                ),
                input,
            )
        })?;
        let exact = decide_exact(keys, i);
        if exact.selectable() != dec.selectable() {
            return Err(finding(
                format!("key {i}: the pipeline and the exact LP disagree"),
                input,
            ));
        }
    }
    probe(input, &verdicts(&decisions), |i, c| {
        check_plain(keys, i, c).is_ok()
    })
}

fn scaled_keys(input: &KeyInput, scaled: &ScaledKeySet) -> Result<(), Finding> {
    let decisions = match decide_scaled(scaled, &input.options) {
        Ok(d) => d,
        // Too close to a hull boundary for 1024-bit enclosures: a clean, documented error.
        Err(_) => return Ok(()),
    };
    if decisions.len() != scaled.n() {
        return Err(finding("not one decision per key", input));
    }
    for (i, dec) in decisions.iter().enumerate() {
        check_scaled(scaled, i, &dec.certificate).map_err(|e| {
            finding(
                format!(
                    "key {i}: the {} verdict does not verify: {e}",
                    dec.method.name()
                ),
                input,
            )
        })?;
    }
    // Another pipeline reaches the same verdicts.
    let exact_only = pipeline(3);
    if input.options != exact_only {
        if let Ok(other) = decide_scaled(scaled, &exact_only) {
            if verdicts(&other) != verdicts(&decisions) {
                return Err(finding("the exact-only pipeline disagrees", input));
            }
        }
    }
    probe(input, &verdicts(&decisions), |i, c| {
        check_scaled(scaled, i, c).is_ok()
    })
}

/// The probe's certificates, when the checker accepts them, agree with the verdict.
fn probe(
    input: &KeyInput,
    selectable: &[bool],
    accepts: impl Fn(usize, &Certificate) -> bool,
) -> Result<(), Finding> {
    let (i, query, weights) = &input.probe;
    let query = Certificate::Query(Query::Float(query.clone()));
    if accepts(*i, &query) && !selectable[*i] {
        return Err(finding(
            format!("key {i}: the checker accepts a query for an unselectable key"),
            input,
        ));
    }
    let total: u64 = weights
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != *i)
        .map(|(_, &w)| w as u64)
        .sum();
    if total > 0 {
        let hull: Vec<(usize, Rational)> = weights
            .iter()
            .enumerate()
            .filter(|&(j, &w)| j != *i && w > 0)
            .map(|(j, &w)| (j, Rational::from((w as u64, total))))
            .collect();
        let hull = if input.norm.is_some() {
            Certificate::ScaledHull {
                below: hull,
                above: None,
            }
        } else {
            Certificate::Hull(hull)
        };
        if accepts(*i, &hull) && selectable[*i] {
            return Err(finding(
                format!("key {i}: the checker accepts hull weights for a selectable key"),
                input,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_keys_decode_back() {
        let rows = vec![vec![0.0, 1.5], vec![-2.25, 31.75], vec![1e-300, 3.0]];
        for grid_rows in [rows[..2].to_vec(), rows.clone()] {
            let bias: Vec<f64> = (0..grid_rows.len()).map(|j| j as f64).collect();
            let input = decode(&encode(&grid_rows, Some(&bias), None, 2));
            let flat: Vec<f64> = grid_rows.iter().flatten().copied().collect();
            assert_eq!(
                input.keys,
                KeySet::new(grid_rows.len(), 2, flat, Some(bias)).unwrap()
            );
            assert_eq!(input.options, pipeline(2));
            assert!(input.norm.is_none());
        }
        let gain = [2.0, 0.5];
        let rms = Normalization::rms_norm(1e-5).unwrap();
        let input = decode(&encode(&rows, None, Some((rms, Some(&gain))), 0));
        let (norm, g) = input.norm.unwrap();
        assert_eq!(norm, rms);
        assert_eq!(g.as_deref(), Some(&gain[..]));
    }

    #[test]
    fn a_hull_point_is_unselectable_and_its_probe_query_is_rejected() {
        let square = vec![
            vec![0.0, 0.0],
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![1.0, 1.0],
            vec![0.5, 0.5],
        ];
        let mut bytes = encode(&square, None, None, 0);
        // Probe key 4 (the centre) with the query (1, 1) and equal weights on the corners.
        bytes.push(4);
        bytes.extend([4u8, 4]);
        bytes.extend([1u8, 1, 1, 1, 0]);
        let input = decode(&bytes);
        assert_eq!(input.probe, (4, vec![1.0, 1.0], vec![1, 1, 1, 1, 0]));
        let decisions = decide_plain(&input.keys, &input.options);
        assert!(!decisions[4].selectable() && decisions[0].selectable());
        certificates_verify(&bytes).unwrap();
    }
}
