//! Proved statements about normalization and selectability, each checked exactly when its
//! table is built (a failed check is an error, never a quiet row).
//!
//! # ε > 0 breaks LayerNorm's guarantee
//! With ε = 0 every LayerNorm output has norm √d, so every key (with a distinct direction) is
//! selectable. With ε > 0 the norm is √d·σ/√(σ² + ε): keys whose variance σ² is comparable to
//! ε shrink towards the origin, and a shrunken key can fall inside the hull of the others.
//! [`eps_counterexample`]: in d = 3 take x_0 = (2,−1,−1), x_1 = (−1,2,−1), x_2 = (−1,−1,2)
//! (σ² = 2) and x_3 = (δ, 0, −δ) with δ = 2^-9 (σ² = 2δ²/3 ≈ 2.5·10⁻⁶). Since
//! u_3 = (δ/3)(2u_0 + u_1) and u_0 + u_1 + u_2 = 0, key 3 is unselectable exactly when
//! δ·√(q_0/q_3) ≤ 1 (q = σ² + ε), i.e. when ε ≥ ε* = 4δ²/(3(1 − δ²)) ≈ 5.09·10⁻⁶ — about
//! twice its variance. PyTorch's default ε = 10⁻⁵ is past the threshold.
//!
//! # Gain, bias, RMSNorm ([`norm_cases`])
//! A bias β after the gain adds v·β to every score: no verdict changes. With ε = 0 the
//! LayerNorm keys s_j = u_j/√q_j lie on a sphere in 1⟂ and a gain maps them to Γs_j:
//! * no zero gain: v = Γ⁻¹u_i gives v·Γs_j = u_i·u_j/√q_j, maximal only at j = i
//!   (Cauchy–Schwarz), so every key stays selectable;
//! * one zero gain γ_k = 0: v_l = (u_il − u_ik)/γ_l (l ≠ k), v_k = 0 gives
//!   v·Γs_j = (u_i·u_j − u_ik·Σ_l u_jl)/√q_j = u_i·u_j/√q_j since Σ_l u_jl = 0: still
//!   selectable (Γ is injective on 1⟂);
//! * two zero gains: Γ flattens the sphere and keys can land inside: a proved counterexample.
//!
//! RMSNorm keys fill the whole sphere in ℝ^d, so a single zero gain already flattens it.

use super::certificate::{check_scaled, Above, Certificate, Query};
use super::decide::{Decision, Options};
use super::decide_scaled::decide_scaled;
use super::figure::gaussian_keys;
use super::keys::{exact, KeySet, Normalization, ScaledKeySet};
use crate::error::{Error, Result};
use crate::output::format::Table;
use rug::Rational;

/// δ of the ε counterexample.
pub const DELTA: f64 = 1.0 / 512.0;

/// The keys of the ε counterexample (d = 3).
pub fn eps_counterexample_keys() -> KeySet {
    KeySet::new(
        4,
        3,
        vec![
            2.0, -1.0, -1.0, -1.0, 2.0, -1.0, -1.0, -1.0, 2.0, DELTA, 0.0, -DELTA,
        ],
        None,
    )
    .expect("fixed keys are valid")
}

/// ε* = 4δ²/(3(1 − δ²)): key 3 is unselectable exactly when ε ≥ ε*.
pub fn eps_threshold() -> Rational {
    let d2 = exact(DELTA) * exact(DELTA);
    Rational::from(&d2 * 4u32) / (Rational::from(1u32 - &d2) * 3u32)
}

/// The hand-made certificate for key 3 under any ε ≥ ε*: μ = (2δ/3, δ/3, 0) on keys 0, 1 and
/// the ray ν = (1, 1, 1) (u_0 + u_1 + u_2 = 0).
pub fn eps_certificate() -> Certificate {
    let d = exact(DELTA);
    Certificate::ScaledHull {
        below: vec![
            (0, Rational::from(&d * 2u32) / 3u32),
            (1, Rational::from(&d / 3u32)),
        ],
        above: Some(Above::Ray(vec![
            (0, Rational::from(1)),
            (1, Rational::from(1)),
            (2, Rational::from(1)),
        ])),
    }
}

fn fail(what: &str) -> Error {
    Error::input(format!("internal check failed: {what}"))
}

/// Decides and audits: every certificate passes the simple checker.
fn decide_checked(keys: &ScaledKeySet) -> Result<Vec<Decision>> {
    let ds = decide_scaled(keys, &Options::default())?;
    for (i, d) in ds.iter().enumerate() {
        check_scaled(keys, i, &d.certificate).map_err(|e| fail(&format!("key {i}: {e}")))?;
    }
    Ok(ds)
}

fn verdict_text(ds: &[Decision]) -> String {
    let bad: Vec<String> = (0..ds.len())
        .filter(|&i| !ds[i].selectable())
        .map(|i| i.to_string())
        .collect();
    if bad.is_empty() {
        format!("all {} selectable", ds.len())
    } else {
        format!("unselectable: {}", bad.join(" "))
    }
}

fn cert_text(c: &Certificate) -> String {
    match c {
        Certificate::Query(_) => "query".to_string(),
        Certificate::Hull(_) => "hull".to_string(),
        Certificate::ScaledHull { above: None, .. } => "scaled hull, s(μ) = 1".to_string(),
        Certificate::ScaledHull {
            above: Some(Above::Ray(_)),
            ..
        } => "scaled hull + ray".to_string(),
        Certificate::ScaledHull {
            above: Some(Above::Point(_)),
            ..
        } => "scaled hull + upper point".to_string(),
    }
}

/// Per ε tried: ε and the selectable flag of each key.
pub type EpsVerdicts = Vec<(f32, Vec<bool>)>;

/// The ε counterexample as a table: for each ε, the verdicts on the four keys, with every
/// certificate checked exactly, plus the hand-made certificate for key 3 where ε ≥ ε*.
/// Returns the table and the per-ε verdicts (ε, selectable flags).
pub fn eps_counterexample() -> Result<(Table, EpsVerdicts)> {
    let keys = eps_counterexample_keys();
    let threshold = eps_threshold();
    let mut t = Table::new([
        "eps",
        "eps_vs_threshold",
        "verdicts",
        "key3_certificate",
        "hand_certificate_key3",
    ]);
    t.comment("LayerNorm with eps > 0 makes a key unselectable (d = 3):");
    t.comment("x0 = (2,-1,-1), x1 = (-1,2,-1), x2 = (-1,-1,2), x3 = (d,0,-d), d = 2^-9 (variance of x3 = 2d^2/3 = 2.54e-6)");
    t.comment(format!(
        "proved threshold eps* = 4d^2/(3(1-d^2)) = {} ~ {:.6e}; key 3 is unselectable iff eps >= eps*",
        threshold,
        threshold.to_f64()
    ));
    t.comment("eps as f32 values, every verdict with an exactly checked certificate");
    let mut out = Vec::new();
    for eps in [0.0f32, 1e-6, 5e-6, 5.08e-6, 5.09e-6, 1e-5, 1e-3, 1.0] {
        let scaled = ScaledKeySet::normalize(&keys, Normalization::layer_norm(eps)?, None)?;
        let ds = decide_checked(&scaled)?;
        let eps_exact = exact(eps as f64);
        let past = eps_exact >= threshold;
        let flags: Vec<bool> = ds.iter().map(Decision::selectable).collect();
        if flags != [true, true, true, !past] {
            return Err(fail(&format!(
                "ε = {eps:e}: verdicts {flags:?} contradict the threshold"
            )));
        }
        let hand = check_scaled(&scaled, 3, &eps_certificate()).is_ok();
        if hand != past {
            return Err(fail(&format!(
                "ε = {eps:e}: the hand certificate disagrees"
            )));
        }
        t.push([
            format!("{eps:e}"),
            if past { ">= eps*" } else { "< eps*" }.to_string(),
            verdict_text(&ds),
            cert_text(&ds[3].certificate),
            if hand { "accepted" } else { "rejected" }.to_string(),
        ]);
        out.push((eps, flags));
    }
    Ok((t, out))
}

/// Query v = Γ⁻¹u_i for LayerNorm with a gain without zeros, or the one-zero variant (module
/// docs); `u` is the centred input.
pub fn gain_query(u: &[Rational], gain: &[f64]) -> Option<Vec<Rational>> {
    let zeros: Vec<usize> = (0..gain.len()).filter(|&k| gain[k] == 0.0).collect();
    let shift = match zeros.as_slice() {
        [] => Rational::new(),
        [k] => u[*k].clone(),
        _ => return None,
    };
    Some(
        u.iter()
            .zip(gain)
            .map(|(x, &g)| {
                if g == 0.0 {
                    Rational::new()
                } else {
                    Rational::from(x - &shift) / exact(g)
                }
            })
            .collect(),
    )
}

/// One checked row of [`norm_cases`].
struct Case {
    name: &'static str,
    norm: Normalization,
    keys: KeySet,
    gain: Option<Vec<f64>>,
    /// Expected selectable flags (None: all selectable).
    expect: Option<Vec<bool>>,
    /// Also check the constructive gain query for every key.
    gain_queries: bool,
}

/// RMSNorm, gain and bias: which normalizations keep every key selectable, each row proved
/// by exactly checked certificates (module docs).
pub fn norm_cases() -> Result<Table> {
    let random = |d: usize, n: usize| {
        KeySet::new(n, d, gaussian_keys(7, d, n, 0), None).expect("finite Gaussian keys")
    };
    let ln = Normalization::layer_norm(0.0)?;
    let rms = Normalization::rms_norm(0.0)?;
    let two_zero_keys = KeySet::new(
        3,
        4,
        vec![
            1.0, -1.0, 0.0, 0.0, -1.0, 1.0, 0.0, 0.0, 0.125, -0.125, 5.0, -5.0,
        ],
        None,
    )?;
    let rms_zero_keys = KeySet::new(3, 2, vec![1.0, 0.0, -1.0, 0.0, 1.0, 7.0], None)?;
    let cases = vec![
        Case {
            name: "LayerNorm, eps = 0",
            norm: ln,
            keys: random(3, 60),
            gain: None,
            expect: None,
            gain_queries: false,
        },
        Case {
            name: "RMSNorm, eps = 0",
            norm: rms,
            keys: random(3, 60),
            gain: None,
            expect: None,
            gain_queries: false,
        },
        Case {
            name: "LayerNorm, eps = 0, gain without zeros",
            norm: ln,
            keys: random(4, 60),
            gain: Some(vec![0.25, 3.0, -1.5, 0.75]),
            expect: None,
            gain_queries: true,
        },
        Case {
            name: "LayerNorm, eps = 0, gain with one zero",
            norm: ln,
            keys: random(4, 60),
            gain: Some(vec![0.25, 0.0, -1.5, 0.75]),
            expect: None,
            gain_queries: true,
        },
        Case {
            name: "LayerNorm, eps = 0, gain with two zeros",
            norm: ln,
            keys: two_zero_keys.clone(),
            gain: Some(vec![1.0, 1.0, 0.0, 0.0]),
            expect: Some(vec![true, true, false]),
            gain_queries: false,
        },
        Case {
            name: "LayerNorm, eps = 0, same keys without gain",
            norm: ln,
            keys: two_zero_keys,
            gain: None,
            expect: None,
            gain_queries: false,
        },
        Case {
            name: "RMSNorm, eps = 0, gain with one zero",
            norm: rms,
            keys: rms_zero_keys.clone(),
            gain: Some(vec![1.0, 0.0]),
            expect: Some(vec![true, true, false]),
            gain_queries: false,
        },
        Case {
            name: "RMSNorm, eps = 0, same keys without gain",
            norm: rms,
            keys: rms_zero_keys,
            gain: None,
            expect: None,
            gain_queries: false,
        },
    ];
    let mut t = Table::new(["case", "n", "d", "gain", "verdicts", "certificates"]);
    t.comment("Which normalizations keep every key selectable (each row checked exactly)");
    t.comment("a bias after the gain adds v.beta to every score and changes no verdict");
    for case in cases {
        let scaled = ScaledKeySet::normalize(&case.keys, case.norm, case.gain.as_deref())?;
        let ds = decide_checked(&scaled)?;
        let flags: Vec<bool> = ds.iter().map(Decision::selectable).collect();
        let expect = case.expect.clone().unwrap_or(vec![true; flags.len()]);
        if flags != expect {
            return Err(fail(&format!("{}: verdicts {flags:?}", case.name)));
        }
        if case.gain_queries {
            let gain = case.gain.as_deref().expect("gain cases carry a gain");
            let plain = ScaledKeySet::normalize(&case.keys, case.norm, None)?;
            for i in 0..scaled.n() {
                let v = gain_query(plain.w(i), gain).ok_or_else(|| fail("gain query"))?;
                check_scaled(&scaled, i, &Certificate::Query(Query::Exact(v)))
                    .map_err(|e| fail(&format!("{}: gain query for key {i}: {e}", case.name)))?;
            }
        }
        let mut kinds: Vec<String> = ds.iter().map(|d| cert_text(&d.certificate)).collect();
        kinds.sort();
        kinds.dedup();
        let certs = if case.gain_queries {
            format!(
                "{}; the constructive query (u_i - u_ik 1)/gain (module docs) checked for every key",
                kinds.join(", ")
            )
        } else {
            kinds.join(", ")
        };
        t.push([
            case.name.to_string(),
            scaled.n().to_string(),
            scaled.d().to_string(),
            case.gain
                .as_ref()
                .map_or("-".to_string(), |g| format!("{g:?}")),
            verdict_text(&ds),
            certs,
        ]);
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eps_counterexample_holds() {
        let (table, rows) = eps_counterexample().unwrap();
        assert!(rows.iter().any(|(e, f)| *e == 0.0 && f.iter().all(|&x| x)));
        assert!(rows.iter().any(|(e, f)| *e == 1e-5 && !f[3]));
        assert_eq!(table.rows.len(), rows.len());
        // ε* ≈ 5.086e-6 sits between the two f32 values 5.08e-6 and 5.09e-6.
        let t = eps_threshold().to_f64();
        assert!(5.08e-6 < t && t < 5.09e-6, "{t}");
    }

    #[test]
    fn norm_cases_hold() {
        let t = norm_cases().unwrap();
        assert_eq!(t.rows.len(), 8);
    }

    #[test]
    fn gain_query_needs_at_most_one_zero() {
        let u = [Rational::from(1), Rational::from(-2), Rational::from(1)];
        assert!(gain_query(&u, &[1.0, 0.0, 0.0]).is_none());
        assert_eq!(
            gain_query(&u, &[2.0, 0.0, 1.0]).unwrap(),
            vec![Rational::from((3, 2)), Rational::new(), Rational::from(3)]
        );
    }
}
