//! The decision pipeline for plain keys, cheapest first; every stage's answer is verified
//! exactly before it is reported:
//!
//! 1. exact duplicates (a copy with bias ≥ b_i makes key i unselectable, λ = the copy);
//! 2. the key itself as query (verified by `verify.rs`);
//! 3. Braid-Reflect with a small patience (verified the same way);
//! 4. a float LP over a working set of keys that grows as needed (Clarkson's scheme: most
//!    keys are decided against the few keys already known to matter). A feasible answer's
//!    basis is re-solved exactly (`exact_solve.rs`) and checked for λ ≥ 0; an infeasible
//!    answer's Farkas vector is the candidate query, verified against every key; a key that
//!    beats it joins the working set and the LP runs again;
//! 5. when any of that fails, the exact rational LP over all keys (Bland's rule), whose
//!    certificate is checked by the simple checker in `certificate.rs`.

use super::certificate::{self, Certificate, Query, Weights};
use super::exact_solve;
use super::heuristics::{braid_reflect, FloatKeys};
use super::keys::KeySet;
use super::simplex::{self, Lp, LpOutcome, LpScalar};
use super::verify::{self, QueryCheck};
use rug::Rational;

/// Which stages run (all by default; tests switch them off to compare paths).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Try the key's own vector as query.
    pub key_query: bool,
    /// Braid-Reflect reflections per key (0: off).
    pub patience: usize,
    /// Use the float LP; without it every undecided key goes to the exact LP.
    pub float_lp: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            key_query: true,
            patience: 8,
            float_lp: true,
        }
    }
}

/// The stage that produced a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    Duplicate,
    KeyAsQuery,
    BraidReflect,
    FloatLp,
    ExactLp,
    /// Scaled keys: the exact LP on rational enclosures of the irrational keys.
    Refined,
}

impl Method {
    pub const ALL: [Method; 6] = [
        Method::Duplicate,
        Method::KeyAsQuery,
        Method::BraidReflect,
        Method::FloatLp,
        Method::ExactLp,
        Method::Refined,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Duplicate => "duplicate",
            Method::KeyAsQuery => "key-as-query",
            Method::BraidReflect => "braid-reflect",
            Method::FloatLp => "float-lp",
            Method::ExactLp => "exact-lp",
            Method::Refined => "refined-exact-lp",
        }
    }
}

/// A verdict with its verified certificate.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub certificate: Certificate,
    pub method: Method,
}

impl Decision {
    pub fn selectable(&self) -> bool {
        self.certificate.proves_selectable()
    }
}

/// 2^-e with 2^e > max |x| (1 when all are zero): an exact rescaling for the float stages.
pub(super) fn pow2_scale<'a>(values: impl Iterator<Item = &'a f64>) -> f64 {
    let max = values.fold(0.0f64, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        1.0
    } else {
        crate::dtype::pow2(-(crate::dtype::exponent_of(max) + 1).clamp(-1000, 1000))
    }
}

/// How the working-set LP ended for one key.
pub(super) enum LoopEnd {
    /// A verified selecting query.
    Selects(Vec<f64>),
    /// The float LP puts key i in the hull of these keys (and, with biases, whether the
    /// surplus of Σλ_j b_j ≥ b_i is basic): a candidate for an exact hull certificate.
    Support { keys: Vec<usize>, surplus: bool },
    /// The float answers were inconsistent: use the exact path.
    GiveUp,
}

/// The rows of "target = Σ λ_j col_j, Σ λ_j = 1" and, with biases, "Σ λ_j b_j − s = b_target"
/// (s ≥ 0 the surplus, a last column present when `surplus`): the hull system in any scalar,
/// shared by the float LP, the exact LP and the exact re-solve of a float basis.
pub(super) fn hull_system<S: LpScalar>(
    cols: &[&[S]],
    target: &[S],
    biases: Option<(&[S], &S)>,
    surplus: bool,
) -> Lp<S> {
    let width = cols.len() + usize::from(biases.is_some() && surplus);
    let mut a = Vec::with_capacity(target.len() + 2);
    let mut b = Vec::with_capacity(target.len() + 2);
    for (k, t) in target.iter().enumerate() {
        let mut row: Vec<S> = cols.iter().map(|c| c[k].clone()).collect();
        row.resize(width, S::zero());
        a.push(row);
        b.push(t.clone());
    }
    let mut ones = vec![S::one(); cols.len()];
    ones.resize(width, S::zero());
    a.push(ones);
    b.push(S::one());
    if let Some((col_bias, target_bias)) = biases {
        let mut row: Vec<S> = col_bias.to_vec();
        if surplus {
            row.push(S::one().neg());
        }
        a.push(row);
        b.push(target_bias.clone());
    }
    Lp { a, b, cost: None }
}

/// The float LP of "h_i ∈ conv{h_j : j ∈ cols}" (with biases: and Σλ_j b_j ≥ b_i).
pub(super) fn hull_lp(fk: &FloatKeys, cols: &[usize], i: usize) -> Lp<f64> {
    let keys: Vec<&[f64]> = cols.iter().map(|&j| fk.key(j)).collect();
    let col_bias: Vec<f64> = cols.iter().map(|&j| fk.bias(j)).collect();
    let target_bias = fk.bias(i);
    let biases = fk.bias.is_some().then_some((&col_bias[..], &target_bias));
    hull_system(&keys, fk.key(i), biases, true)
}

/// The query read from the Farkas vector y = (y_h, y_1[, y_b]) of the hull LP:
/// y_h·h_j + y_1 + y_b b_j ≤ 0 < y_h·h_i + y_1 + y_b b_i and y_b ≥ 0. With y_b > 0 the query is
/// y_h/y_b; with y_b = 0 (no biases, or biases that do not matter) y_h separates the keys and
/// is stretched until the biases cannot undo the separation.
fn query_from_dual(y: &[f64], fk: &FloatKeys, i: usize) -> Option<Vec<f64>> {
    let d = fk.d;
    let mut v = y[..d].to_vec();
    if fk.bias.is_some() {
        let yb = y[d + 1];
        let scale = y.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        if yb > 1e-12 * scale {
            v.iter_mut().for_each(|x| *x /= yb);
        } else {
            let mut t = 1.0f64;
            for j in (0..fk.n).filter(|&j| j != i) {
                let db = fk.bias(j) - fk.bias(i);
                if db > 0.0 {
                    let g: f64 = v
                        .iter()
                        .zip(fk.key(i).iter().zip(fk.key(j)))
                        .map(|(a, (p, q))| a * (p - q))
                        .sum();
                    if g > 0.0 {
                        t = t.max(2.0 * db / g);
                    }
                }
            }
            let t = crate::dtype::pow2(crate::dtype::exponent_of(t) + 1);
            v.iter_mut().for_each(|x| *x *= t);
        }
    }
    v.iter().all(|x| x.is_finite()).then_some(v)
}

/// Clarkson's working-set loop for key i: solve the hull LP over a small set of keys (seeded
/// with the keys that beat i in the heuristics); a separating query that some outside key
/// still beats brings that key (and the next highest scorers, up to d + 1) into the set.
/// `verify` proves a query exactly.
pub(super) fn working_set_lp(
    fk: &FloatKeys,
    i: usize,
    seed: &[usize],
    verify: &mut dyn FnMut(&[f64], Option<usize>) -> QueryCheck,
) -> LoopEnd {
    let mut set: Vec<usize> = Vec::with_capacity(seed.len() + fk.d + 1);
    for &j in seed {
        if j != i && !set.contains(&j) {
            set.push(j);
        }
    }
    for _ in 0..=fk.n {
        let cols = &set;
        let lp = hull_lp(fk, cols, i);
        let iters = simplex::default_iterations(lp.b.len(), cols.len() + 1);
        match simplex::solve(&lp, iters) {
            LpOutcome::Optimal { basis, .. } => {
                let keys = basis
                    .iter()
                    .filter(|&&c| c < cols.len())
                    .map(|&c| cols[c])
                    .collect();
                let surplus = basis.contains(&cols.len());
                return LoopEnd::Support { keys, surplus };
            }
            LpOutcome::Infeasible { y } => {
                let Some(v) = query_from_dual(&y, fk, i) else {
                    return LoopEnd::GiveUp;
                };
                let s_i = fk.score(&v, i);
                let slack = 1e-12 * (1.0 + s_i.abs());
                let mut beaters: Vec<(f64, usize)> = (0..fk.n)
                    .filter(|&j| j != i)
                    .map(|j| (fk.score(&v, j), j))
                    .filter(|(s, _)| *s >= s_i - slack)
                    .collect();
                if beaters.is_empty() {
                    match verify(&v, None) {
                        QueryCheck::Selects => return LoopEnd::Selects(v),
                        QueryCheck::BeatenBy(j) => beaters.push((s_i, j)),
                    }
                }
                // The d + 1 highest scorers outside the set (a partial selection, not a sort:
                // with many keys most of them beat a query that only separates the set).
                beaters.retain(|(_, j)| !set.contains(j));
                let top = beaters.len().min(fk.d + 1);
                if top > 0 && top < beaters.len() {
                    beaters.select_nth_unstable_by(top - 1, |a, b| {
                        b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
                    });
                }
                let added = top;
                set.extend(beaters[..top].iter().map(|(_, j)| *j));
                if added == 0 {
                    return LoopEnd::GiveUp;
                }
            }
            LpOutcome::Unbounded { .. } | LpOutcome::IterationLimit => return LoopEnd::GiveUp,
        }
    }
    LoopEnd::GiveUp
}

/// Sparse weights: the nonzero entries of x, indexed by the keys its columns stand for (extra
/// trailing entries of x, such as a surplus, are dropped).
pub(super) fn weights(cols: &[usize], x: Vec<Rational>) -> Weights {
    cols.iter()
        .zip(x)
        .filter(|(_, v)| *v != 0)
        .map(|(&j, v)| (j, v))
        .collect()
}

/// The exact hull weights on a float LP's support, if they are nonnegative.
fn exact_hull(keys: &KeySet, i: usize, support: &[usize], surplus: bool) -> Option<Weights> {
    if surplus && !keys.has_bias() {
        return None;
    }
    let cols: Vec<Vec<Rational>> = support.iter().map(|&j| keys.key_exact(j)).collect();
    let col_refs: Vec<&[Rational]> = cols.iter().map(Vec::as_slice).collect();
    let col_bias: Vec<Rational> = support.iter().map(|&j| keys.bias_exact(j)).collect();
    let target_bias = keys.bias_exact(i);
    let biases = keys.has_bias().then_some((&col_bias[..], &target_bias));
    let system = hull_system(&col_refs, &keys.key_exact(i), biases, surplus);
    let x = exact_solve::solve(&system.a, &system.b)?;
    if x.iter().any(|v| *v < 0) {
        return None;
    }
    Some(weights(support, x))
}

/// The exact LP of "target ∈ conv(cols)" (with biases: and Σλ_j b_j ≥ b_target), solved with
/// Bland's rule. Columns are the candidate keys; the last column is the bias surplus.
pub(super) fn exact_hull_lp(
    cols: &[Vec<Rational>],
    target: &[Rational],
    biases: Option<(&[Rational], &Rational)>,
) -> LpOutcome<Rational> {
    let col_refs: Vec<&[Rational]> = cols.iter().map(Vec::as_slice).collect();
    simplex::solve(&hull_system(&col_refs, target, biases, true), usize::MAX)
}

/// Key i decided by the exact rational LP over all other keys (Motzkin: one of the two
/// certificates exists), checked by the simple checker.
pub fn decide_exact(keys: &KeySet, i: usize) -> Decision {
    let d = keys.d();
    let cols: Vec<usize> = (0..keys.n()).filter(|&j| j != i).collect();
    let exact_keys: Vec<Vec<Rational>> = cols.iter().map(|&j| keys.key_exact(j)).collect();
    let target = keys.key_exact(i);
    let col_bias: Vec<Rational> = cols.iter().map(|&j| keys.bias_exact(j)).collect();
    let target_bias = keys.bias_exact(i);
    let biases = keys.has_bias().then_some((&col_bias[..], &target_bias));
    let certificate = match exact_hull_lp(&exact_keys, &target, biases) {
        LpOutcome::Optimal { x, .. } => Certificate::Hull(weights(&cols, x)),
        LpOutcome::Infeasible { y } => {
            let mut v: Vec<Rational> = y[..d].to_vec();
            if keys.has_bias() {
                let yb = &y[d + 1];
                if *yb > 0 {
                    v.iter_mut().for_each(|x| *x /= yb);
                } else {
                    // y_h·(h_i − h_j) > 0 for all j: stretch past every bias gap.
                    let mut t = Rational::from(1);
                    for (c, gap_j) in exact_keys.iter().zip(&col_bias) {
                        let gap = Rational::from(gap_j - &target_bias);
                        if gap > 0 {
                            let mut g = Rational::new();
                            for ((vk, p), q) in v.iter().zip(&target).zip(c) {
                                g += Rational::from(p - q) * vk;
                            }
                            let need = gap / g + 1u32;
                            if need > t {
                                t = need;
                            }
                        }
                    }
                    v.iter_mut().for_each(|x| *x *= &t);
                }
            }
            Certificate::Query(Query::Exact(v))
        }
        other => panic!("the exact simplex cannot end with {other:?}"),
    };
    if let Err(e) = certificate::check_plain(keys, i, &certificate) {
        panic!("internal error: the exact LP produced a certificate the checker rejects: {e}");
    }
    Decision {
        certificate,
        method: Method::ExactLp,
    }
}

/// For each key, the index of an identical key whose bias is at least as large.
fn duplicates(keys: &KeySet) -> Vec<Option<usize>> {
    let n = keys.n();
    // x + 0.0 maps −0.0 to +0.0, so equal values have equal bits.
    let bits = |j: usize| -> Vec<u64> { keys.key(j).iter().map(|x| (x + 0.0).to_bits()).collect() };
    let mut order: Vec<(Vec<u64>, usize)> = (0..n).map(|j| (bits(j), j)).collect();
    order.sort();
    let mut out = vec![None; n];
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && order[end].0 == order[start].0 {
            end += 1;
        }
        if end - start > 1 {
            let group: Vec<usize> = order[start..end].iter().map(|(_, j)| *j).collect();
            for &i in &group {
                out[i] = group
                    .iter()
                    .copied()
                    .filter(|&j| j != i && keys.bias(j) >= keys.bias(i))
                    .max_by(|&a, &b| keys.bias(a).total_cmp(&keys.bias(b)).then(b.cmp(&a)));
            }
        }
        start = end;
    }
    out
}

/// Decides every key of a plain key set, each verdict with a verified certificate.
pub fn decide_plain(keys: &KeySet, opts: &Options) -> Vec<Decision> {
    let n = keys.n();
    let scale = pow2_scale(keys.data().iter().chain(keys.biases().unwrap_or(&[])));
    let fdata: Vec<f64> = keys.data().iter().map(|x| x * scale).collect();
    let fbias: Option<Vec<f64>> = keys.biases().map(|b| b.iter().map(|x| x * scale).collect());
    let fk = FloatKeys {
        data: &fdata,
        bias: fbias.as_deref(),
        n,
        d: keys.d(),
    };
    let dup = duplicates(keys);
    let mut out: Vec<Option<Decision>> = vec![None; n];
    // Keys that beat key i during the heuristics: the seed of its LP working set.
    let mut witnesses: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut hint = None;
    for i in 0..n {
        if let Some(j) = dup[i] {
            out[i] = Some(Decision {
                certificate: Certificate::Hull(vec![(j, Rational::from(1))]),
                method: Method::Duplicate,
            });
            continue;
        }
        if opts.key_query {
            match verify::check_plain(keys, i, &Query::OwnKey, hint) {
                QueryCheck::Selects => {
                    out[i] = Some(Decision {
                        certificate: Certificate::Query(Query::OwnKey),
                        method: Method::KeyAsQuery,
                    });
                    continue;
                }
                QueryCheck::BeatenBy(j) => {
                    hint = Some(j);
                    witnesses[i].push(j);
                }
            }
        }
        if opts.patience > 0 {
            if let Some(x) = braid_reflect(&fk, i, opts.patience, &mut witnesses[i]) {
                if verify::check_plain_float(keys, i, &x, hint) == QueryCheck::Selects {
                    out[i] = Some(Decision {
                        certificate: Certificate::Query(Query::Float(x)),
                        method: Method::BraidReflect,
                    });
                }
            }
        }
    }
    for i in 0..n {
        if out[i].is_some() {
            continue;
        }
        let decision = if opts.float_lp {
            let mut verify = |v: &[f64], first| verify::check_plain_float(keys, i, v, first);
            match working_set_lp(&fk, i, &witnesses[i], &mut verify) {
                LoopEnd::Selects(v) => Some(Decision {
                    certificate: Certificate::Query(Query::Float(v)),
                    method: Method::FloatLp,
                }),
                LoopEnd::Support {
                    keys: support,
                    surplus,
                } => exact_hull(keys, i, &support, surplus).map(|w| Decision {
                    certificate: Certificate::Hull(w),
                    method: Method::FloatLp,
                }),
                LoopEnd::GiveUp => None,
            }
        } else {
            None
        };
        out[i] = Some(decision.unwrap_or_else(|| decide_exact(keys, i)));
    }
    out.into_iter()
        .map(|d| d.expect("every key decided"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_paths() -> [Options; 3] {
        [
            Options::default(),
            Options {
                key_query: false,
                patience: 0,
                float_lp: true,
            },
            Options {
                key_query: false,
                patience: 0,
                float_lp: false,
            },
        ]
    }

    fn verdicts(keys: &KeySet, opts: &Options) -> Vec<bool> {
        let ds = decide_plain(keys, opts);
        for (i, d) in ds.iter().enumerate() {
            certificate::check_plain(keys, i, &d.certificate)
                .unwrap_or_else(|e| panic!("key {i} via {:?}: {e}", d.method));
        }
        ds.iter().map(Decision::selectable).collect()
    }

    #[test]
    fn square_with_centre_and_duplicates() {
        let keys = KeySet::new(
            6,
            2,
            vec![0.0, 0.0, 2.0, 0.0, 0.0, 2.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0],
            None,
        )
        .unwrap();
        for o in all_paths() {
            assert_eq!(verdicts(&keys, &o), [true, true, true, false, false, false]);
        }
    }

    #[test]
    fn lower_rank_sets() {
        // Collinear keys in ℝ³: only the two ends are selectable.
        let keys = KeySet::new(
            4,
            3,
            vec![
                0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.25, 0.25, 0.25, -3.0, -3.0, -3.0,
            ],
            None,
        )
        .unwrap();
        for o in all_paths() {
            assert_eq!(verdicts(&keys, &o), [false, true, false, true]);
        }
        // A single key is always selectable.
        let one = KeySet::new(1, 2, vec![5.0, -1.0], None).unwrap();
        assert_eq!(verdicts(&one, &Options::default()), [true]);
    }

    #[test]
    fn biases_change_verdicts() {
        // Middle key lifted by its bias becomes selectable; a duplicate with a lower bias
        // does not block.
        let keys = KeySet::new(
            4,
            1,
            vec![-1.0, 0.0, 1.0, 0.0],
            Some(vec![0.0, 1.5, 0.0, 1.0]),
        )
        .unwrap();
        for o in all_paths() {
            assert_eq!(verdicts(&keys, &o), [true, true, true, false]);
        }
        let low = KeySet::new(3, 1, vec![-1.0, 0.0, 1.0], Some(vec![0.0, -0.5, 0.0])).unwrap();
        for o in all_paths() {
            assert_eq!(verdicts(&low, &o), [true, false, true]);
        }
        // Equal biases on a duplicate pair: neither can win.
        let tie = KeySet::new(2, 1, vec![1.0, 1.0], Some(vec![2.0, 2.0])).unwrap();
        assert_eq!(verdicts(&tie, &Options::default()), [false, false]);
    }

    #[test]
    fn paths_agree_on_random_sets() {
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as i64 % 7) as f64
        };
        for trial in 0..60 {
            let d = 1 + trial % 4;
            let n = 2 + trial % 9;
            let data: Vec<f64> = (0..n * d).map(|_| next()).collect();
            let bias = (trial % 3 == 0).then(|| (0..n).map(|_| next() / 2.0).collect());
            let keys = KeySet::new(n, d, data, bias).unwrap();
            let reference = verdicts(&keys, &all_paths()[2]);
            for o in all_paths() {
                assert_eq!(verdicts(&keys, &o), reference, "trial {trial}");
            }
        }
    }
}
