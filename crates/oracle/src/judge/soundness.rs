//! The soundness suite: an adversarial careful kernel (`tolerance`'s model, every variant of
//! it) run over the battery and over random rows, judged element by element; no output may
//! FAIL. With the tightness probes (`judge::probes` tests) it pins the bound from both sides:
//! a term made smaller fails here, a term made larger passes an output a probe must fail.

use super::model::{scaled, scaling_exponent, welford, Acc, Visit, Welford};
use super::row::{judge_element, ExactValue};
use super::tolerance::RowBound;
use super::Tier;
use crate::cases::rng::Rng;
use crate::cases::{self, BatteryConfig};
use crate::dtype::{pow2, Dtype};
use crate::exact::reference::{element_input, row_stats};
use crate::exact::{Element, RowKind, RowStats};
use crate::problem::{Eps, EpsConvention, Op, Problem};
use std::cell::OnceCell;

/// The order (tree) of a sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Order {
    /// Sequential, as given.
    Natural,
    /// Sequential over the terms sorted increasingly.
    Sorted,
    /// Sequential over the terms sorted decreasingly.
    ReverseSorted,
    /// Sequential, largest magnitude first: the worst tree of lemma 1.
    LargestFirst,
    /// Recursive halving.
    Pairwise,
    /// `n` lanes, each sequential over every n-th term, then combined pairwise.
    Blocked(usize),
}

pub(crate) const ORDERS: [Order; 8] = [
    Order::Natural,
    Order::Sorted,
    Order::ReverseSorted,
    Order::LargestFirst,
    Order::Pairwise,
    Order::Blocked(8),
    Order::Blocked(16),
    Order::Blocked(32),
];

/// How the mean is formed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Mean {
    /// fl(S/d).
    Divided,
    /// fl(S·fl(1/d)) (and the variance likewise).
    Reciprocal,
    /// K = x_0, μ̂ = fl(K + fl(Σfl(x − K)/d)).
    Shifted,
    /// Welford's running mean and M₂ (order: as given).
    Welford,
}

pub(crate) const MEANS: [Mean; 4] = [
    Mean::Divided,
    Mean::Reciprocal,
    Mean::Shifted,
    Mean::Welford,
];

/// One careful kernel of the model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Variant {
    pub mean: Mean,
    pub order: Order,
    /// FMA in the sum of squares and the output's γ·a + β.
    pub fma: bool,
    /// Without FMA, (γ·δ̂)·r̂ instead of γ·(δ̂·r̂).
    pub gamma_first: bool,
}

/// Every variant: means × orders × FMA, the products' order alternating.
pub(crate) fn variants() -> Vec<Variant> {
    let mut out = Vec::new();
    for mean in MEANS {
        for (k, order) in ORDERS.into_iter().enumerate() {
            for fma in [false, true] {
                out.push(Variant {
                    mean,
                    order,
                    fma,
                    gamma_first: k % 2 == 1,
                });
            }
        }
    }
    out
}

fn sequential<A: Acc>(terms: impl Iterator<Item = A>) -> A {
    terms.fold(A::ZERO, |s, t| s + t)
}

fn pairwise<A: Acc>(terms: &[A]) -> A {
    match terms.len() {
        0 => A::ZERO,
        1 => terms[0],
        n => pairwise(&terms[..n / 2]) + pairwise(&terms[n / 2..]),
    }
}

fn sorted<A: Acc>(terms: &[A], key: impl Fn(A) -> A, decreasing: bool) -> Vec<A> {
    let mut v = terms.to_vec();
    v.sort_by(|a, b| {
        let o = key(*a).partial_cmp(&key(*b)).expect("finite terms");
        if decreasing {
            o.reverse()
        } else {
            o
        }
    });
    v
}

fn magnitude<A: Acc>(a: A) -> A {
    if a < A::ZERO {
        -a
    } else {
        a
    }
}

/// Σ terms in `order`.
pub(crate) fn sum<A: Acc>(terms: &[A], order: Order) -> A {
    match order {
        Order::Natural => sequential(terms.iter().copied()),
        Order::Sorted => sequential(sorted(terms, |a| a, false).into_iter()),
        Order::ReverseSorted => sequential(sorted(terms, |a| a, true).into_iter()),
        Order::LargestFirst => sequential(sorted(terms, magnitude, true).into_iter()),
        Order::Pairwise => pairwise(terms),
        Order::Blocked(n) => {
            let lanes: Vec<A> = (0..n)
                .map(|j| sequential(terms.iter().skip(j).step_by(n).copied()))
                .collect();
            pairwise(&lanes)
        }
    }
}

/// Σ δ² in `order`: squares rounded, or fused into a sequential accumulator (FMA).
fn sum_of_squares<A: Acc>(delta: &[A], order: Order, fma: bool) -> A {
    let fused = |terms: &mut dyn Iterator<Item = A>| terms.fold(A::ZERO, |s, t| t.mul_add(t, s));
    match (order, fma) {
        (Order::Pairwise, _) | (_, false) => {
            let squares: Vec<A> = delta.iter().map(|&t| t * t).collect();
            sum(&squares, order)
        }
        (Order::Natural, true) => fused(&mut delta.iter().copied()),
        (Order::Sorted, true) => fused(&mut sorted(delta, |a| a * a, false).into_iter()),
        (Order::ReverseSorted | Order::LargestFirst, true) => {
            fused(&mut sorted(delta, |a| a * a, true).into_iter())
        }
        (Order::Blocked(n), true) => {
            let lanes: Vec<A> = (0..n)
                .map(|j| fused(&mut delta.iter().skip(j).step_by(n).copied()))
                .collect();
            pairwise(&lanes)
        }
    }
}

/// The row's outputs by one careful kernel, unrounded to the output format (as f64 of the
/// accumulation format's values).
pub(crate) fn model_row<A: Acc>(
    v: Variant,
    op: Op,
    convention: EpsConvention,
    eps: f64,
    x: &[f64],
    gamma: &[f64],
    beta: &[f64],
) -> Vec<f64> {
    let d = x.len();
    let k = scaling_exponent::<A>(x, eps);
    let xs = scaled::<A>(x, k);
    let n = A::of(d as f64);
    // Scaled down, ε·4^k may underflow to 0; the scale is then √v̂.
    let eps_scaled = match convention {
        EpsConvention::Inside => A::of(libm::ldexp(eps, 2 * k)),
        EpsConvention::Outside => A::of(libm::ldexp(eps, k)),
    };
    let reciprocal = v.mean == Mean::Reciprocal;
    let divide = |s: A| {
        if reciprocal {
            s * (A::of(1.0) / n)
        } else {
            s / n
        }
    };
    let (mean, welford_variance) = match (op, v.mean) {
        (Op::RmsNorm, _) => (A::ZERO, None),
        (Op::LayerNorm, Mean::Divided | Mean::Reciprocal) => (divide(sum(&xs, v.order)), None),
        (Op::LayerNorm, Mean::Shifted) => {
            let shift = xs[0];
            let differences: Vec<A> = xs.iter().map(|&t| t - shift).collect();
            (shift + sum(&differences, v.order) / n, None)
        }
        (Op::LayerNorm, Mean::Welford) => {
            // The model's Welford kernels (`model::welford_kernels`), picked by the order.
            let (visit, lanes) = match v.order {
                Order::Sorted => (Visit::Increasing, 1),
                Order::ReverseSorted | Order::LargestFirst => (Visit::Decreasing, 1),
                Order::Blocked(n) => (Visit::AsGiven, n),
                Order::Natural | Order::Pairwise => (Visit::AsGiven, 1),
            };
            // The division by k or the product with fl(1/k) alternates with the products' order.
            let w = Welford {
                visit,
                lanes,
                reciprocal: v.gamma_first,
                fma: v.fma,
            };
            let (m, variance) = welford(&xs, w);
            (m, Some(variance))
        }
    };
    let delta: Vec<A> = xs.iter().map(|&t| t - mean).collect();
    let variance = match welford_variance {
        Some(variance) => variance,
        None => divide(sum_of_squares(&delta, v.order, v.fma)),
    };
    let s = match convention {
        EpsConvention::Inside => (variance + eps_scaled).sqrt(),
        EpsConvention::Outside => variance.sqrt() + eps_scaled,
    };
    let r = A::of(1.0) / s;
    (0..d)
        .map(|i| {
            let (g, b) = (A::of(gamma[i]), A::of(beta[i]));
            // δ̂ = 0 gives β whatever r̂ is (a constant row near the format's end, scaled down,
            // may have ŝ = 0 or subnormal: r̂ = ∞, and 0·∞ is no careful kernel's output).
            let y = if delta[i] == A::ZERO {
                b
            } else if v.fma {
                g.mul_add(delta[i] * r, b)
            } else if v.gamma_first {
                (g * delta[i]) * r + b
            } else {
                g * (delta[i] * r) + b
            };
            y.to_f64()
        })
        .collect()
}

/// One variant's outputs for row r of a problem, in the problem's format.
pub(crate) fn model_outputs(problem: &Problem, r: usize, v: Variant) -> Vec<u64> {
    let dtype = problem.dtype;
    let d = problem.d;
    let x: Vec<f64> = (0..d).map(|i| element_input(problem, r, i).x).collect();
    let gamma: Vec<f64> = (0..d).map(|i| problem.gamma_at(i)).collect();
    let beta: Vec<f64> = (0..d).map(|i| problem.beta_at(i)).collect();
    let eps = problem.eps.value() as f64;
    let y = match dtype {
        Dtype::F64 => model_row::<f64>(v, problem.op, problem.convention, eps, &x, &gamma, &beta),
        _ => model_row::<f32>(v, problem.op, problem.convention, eps, &x, &gamma, &beta),
    };
    y.iter().map(|&t| dtype.round_f64(t)).collect()
}

/// A failing element of the suite.
#[derive(Debug, Clone)]
pub(crate) struct Finding {
    pub variant: Variant,
    pub row: usize,
    pub col: usize,
    pub bound_use: f64,
}

/// What the suite saw: failures, and the largest bound use of any element judged against the
/// bound (per mean method: Divided, Reciprocal, Shifted, Welford).
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub findings: Vec<Finding>,
    pub elements: u64,
    pub max_bound_use: [f64; 4],
}

/// How the suite builds a row's bound: as the judge does, or weakened by a test to show that
/// a term is needed.
pub(crate) type BoundOf<'a> = &'a dyn Fn(Dtype, &RowStats, &[f64]) -> RowBound;

/// The judge's own bound.
pub(crate) fn judges_bound(dtype: Dtype, stats: &RowStats, values: &[f64]) -> RowBound {
    RowBound::new(dtype, stats, values)
}

/// Judges every variant's outputs on every defined row of `problem`, against `bound_of`.
pub(crate) fn check_problem(
    problem: &Problem,
    variants: &[Variant],
    bound_of: BoundOf,
    outcome: &mut Outcome,
) {
    let dtype = problem.dtype;
    for r in 0..problem.rows {
        let stats: RowStats = row_stats(problem, r);
        if stats.kind != RowKind::Defined {
            continue;
        }
        let values: Vec<f64> = (0..problem.d)
            .map(|i| element_input(problem, r, i).x)
            .collect();
        let cell = OnceCell::new();
        let row_bound = || *cell.get_or_init(|| bound_of(dtype, &stats, &values));
        let elements: Vec<(Element, _)> = (0..problem.d)
            .map(|i| {
                let e = Element::new(&stats, element_input(problem, r, i));
                let eval = e.evaluate(dtype);
                (e, eval)
            })
            .collect();
        for &v in variants {
            let outputs = model_outputs(problem, r, v);
            for (i, (e, eval)) in elements.iter().enumerate() {
                let y = ExactValue::of(e, eval);
                let j = judge_element(dtype, &row_bound, &stats, e, eval, &y, outputs[i]);
                outcome.elements += 1;
                let slot = MEANS.iter().position(|&m| m == v.mean).expect("a mean");
                if let Some(used) = j.bound_use {
                    outcome.max_bound_use[slot] = outcome.max_bound_use[slot].max(used);
                }
                if j.tier == Tier::Fail {
                    let y = y.wide();
                    let used =
                        super::tolerance::bound_use(dtype, dtype.to_f64(outputs[i]), y, j.bound);
                    outcome.findings.push(Finding {
                        variant: v,
                        row: r,
                        col: i,
                        bound_use: used,
                    });
                }
            }
        }
    }
}

/// A problem of one row.
pub(crate) fn one_row(
    op: Op,
    dtype: Dtype,
    convention: EpsConvention,
    eps: f32,
    x: &[f64],
    gamma: Option<&[f64]>,
    beta: Option<&[f64]>,
) -> Problem {
    let bits = |v: &[f64]| v.iter().map(|&t| dtype.round_f64(t)).collect::<Vec<u64>>();
    Problem {
        op,
        dtype,
        eps: Eps::from_f32(eps).expect("a valid ε"),
        convention,
        rows: 1,
        d: x.len(),
        x: bits(x),
        gamma: gamma.map(bits),
        beta: beta.map(bits),
    }
}

/// Random rows of many shapes, in the format's values: Gaussian at any scale and offset,
/// few-level rows, near-constant rows a few ULPs wide, rows with one outlier, rows spanning
/// many binades.
pub(crate) fn random_row(rng: &mut Rng, dtype: Dtype, d: usize) -> Vec<f64> {
    let scale = pow2((rng.below(41) as i32) - 20);
    let offset = match rng.below(4) {
        0 => 0.0,
        1 => scale * pow2(rng.below(12) as i32),
        2 => -scale * pow2(rng.below(20) as i32),
        _ => scale * rng.uniform() * 8.0,
    };
    let round = |t: f64| dtype.to_f64(dtype.round_f64(t));
    let shape = rng.below(6);
    (0..d)
        .map(|i| match shape {
            0 => round(offset + scale * rng.normal()),
            1 => {
                let levels = 2 + rng.below(3);
                round(offset + scale * rng.below(levels) as f64)
            }
            2 => {
                // A few ULPs around the offset (or the scale).
                let c = round(if offset != 0.0 { offset } else { scale * 1.37 });
                let ulp = dtype.ulp_at(c);
                round(c + ulp * rng.below(5) as f64)
            }
            3 => {
                if i == 0 {
                    round(offset + scale * 1000.0)
                } else {
                    round(offset + scale * rng.normal())
                }
            }
            4 => round(offset + scale * pow2(rng.below(30) as i32 - 15) * rng.normal()),
            _ => round(offset + scale * rng.uniform()),
        })
        .collect()
}

/// The battery of one op × dtype × convention through every variant.
pub(crate) fn check_battery(
    op: Op,
    dtype: Dtype,
    convention: EpsConvention,
    random_cases: usize,
    outcome: &mut Outcome,
) {
    let mut config = BatteryConfig::new(op, dtype, battery_seed());
    config.convention = convention;
    config.random_cases = random_cases;
    let all = variants();
    let stride = variant_stride();
    for case in cases::battery(&config) {
        let before = outcome.findings.len();
        // Each case takes every stride-th variant, starting at its id: all variants over the
        // battery, each on a 1/stride share of it.
        let variants: Vec<Variant> = all
            .iter()
            .enumerate()
            .filter(|(k, _)| (k + case.id) % stride == 0)
            .map(|(_, &v)| v)
            .collect();
        check_problem(&case.problem, &variants, &judges_bound, outcome);
        if outcome.findings.len() > before {
            eprintln!(
                "{op} {dtype} {convention}: case {} ({}) FAILs",
                case.id,
                case.family.name()
            );
        }
    }
}

fn long() -> bool {
    std::env::var_os("NORMORACLE_LONG").is_some()
}

/// The seed of the batteries and random rows: NORMORACLE_SEED where set (the long run loops
/// over seeds 1–20), else the default.
fn battery_seed() -> u64 {
    crate::cases::rng::seed_from_env().unwrap_or(crate::cases::rng::DEFAULT_SEED)
}

/// Random cases per battery, after the systematic ones: 200 under NORMORACLE_LONG=1.
fn battery_random_cases() -> usize {
    if long() {
        200
    } else {
        4
    }
}

/// How many variants share a battery case (`check_battery`): all under NORMORACLE_LONG=1.
fn variant_stride() -> usize {
    if long() {
        1
    } else {
        8
    }
}

/// Rows of the random part: NORMORACLE_LONG=1 runs a million (in release), else a slice.
fn random_rows() -> usize {
    if long() {
        1_000_000
    } else {
        600
    }
}

fn assert_sound(what: &str, outcome: &Outcome) {
    let first: Vec<String> = outcome
        .findings
        .iter()
        .take(5)
        .map(|f| {
            format!(
                "{:?} row {} col {}: bound use {:.3}",
                f.variant, f.row, f.col, f.bound_use
            )
        })
        .collect();
    assert!(
        outcome.findings.is_empty(),
        "{what}: {} of {} model outputs FAIL, first {first:#?}",
        outcome.findings.len(),
        outcome.elements,
    );
    eprintln!(
        "{what}: {} elements, max bound use (divided, reciprocal, shifted, Welford) {:.3?}",
        outcome.elements, outcome.max_bound_use
    );
}

fn battery_of(dtype: Dtype) {
    for op in Op::ALL {
        for convention in [EpsConvention::Inside, EpsConvention::Outside] {
            let mut outcome = Outcome::default();
            check_battery(op, dtype, convention, battery_random_cases(), &mut outcome);
            let seed = battery_seed();
            assert_sound(&format!("{op} {dtype} {convention}, seed {seed}"), &outcome);
        }
    }
}

#[test]
fn every_model_kernel_passes_the_f16_battery() {
    battery_of(Dtype::F16);
}

#[test]
fn every_model_kernel_passes_the_bf16_battery() {
    battery_of(Dtype::BF16);
}

#[test]
fn every_model_kernel_passes_the_f32_battery() {
    battery_of(Dtype::F32);
}

#[test]
fn every_model_kernel_passes_the_f64_battery() {
    battery_of(Dtype::F64);
}

/// Random rows of every shape (`random_row`), d from 1 to 300 (one in eight up to 4096),
/// every op, format, convention and ε of the battery's range, random γ and β; split over
/// threads. The seed comes from NORMORACLE_SEED where set.
#[test]
fn every_model_kernel_passes_random_rows() {
    use rayon::prelude::*;
    let seed = battery_seed();
    let rows = random_rows();
    let chunks = 64;
    let variants = variants();
    let outcomes: Vec<Outcome> = (0..chunks)
        .into_par_iter()
        .map(|chunk| {
            let mut rng = Rng::new(seed, 0x50_0000 + chunk as u64);
            let mut outcome = Outcome::default();
            for _ in 0..rows.div_ceil(chunks) {
                let dtype = *rng.choose(&Dtype::ALL);
                let op = *rng.choose(&Op::ALL);
                let convention = *rng.choose(&[EpsConvention::Inside, EpsConvention::Outside]);
                let d = if rng.below(8) == 0 {
                    1 + rng.below(4096)
                } else {
                    1 + rng.below(300)
                };
                let eps = *rng.choose(&[0.0f32, 1e-12, 1e-6, 1e-5, 1e-3]);
                let x = random_row(&mut rng, dtype, d);
                let params = |rng: &mut Rng, around: f64| -> Vec<f64> {
                    (0..d).map(|_| around + rng.normal()).collect()
                };
                let gamma = rng.coin().then(|| params(&mut rng, 1.0));
                let beta = rng.coin().then(|| params(&mut rng, 0.0));
                let p = one_row(
                    op,
                    dtype,
                    convention,
                    eps,
                    &x,
                    gamma.as_deref(),
                    beta.as_deref(),
                );
                check_problem(&p, &variants, &judges_bound, &mut outcome);
            }
            outcome
        })
        .collect();
    let mut all = Outcome::default();
    for o in outcomes {
        all.elements += o.elements;
        all.findings.extend(o.findings);
        for k in 0..4 {
            all.max_bound_use[k] = all.max_bound_use[k].max(o.max_bound_use[k]);
        }
    }
    assert_sound(&format!("{rows} random rows, seed {seed}"), &all);
}

/// The constant f32 row of c = 1.99682534 (a full significand whose low bits make every
/// addition of a sequential sum round the same way), d = 4096: the sum errs by ≈ 1018·u·Σ|x|,
/// far beyond the √d growth the earlier bound assumed ((L+1)·u·Σ|x|, L + 1 = 78). Lemma 1
/// holds it; without e_sum the sequential kernels FAIL.
#[test]
fn a_sequential_sum_of_a_constant_row_needs_lemma_1() {
    let c = f32::from_bits(0x3fff_97f9); // 1.99682534
    let d = 4096;
    let sum = (0..d).fold(0.0f32, |s, _| s + c) as f64;
    let exact = c as f64 * d as f64;
    let growth = (sum - exact).abs() / (pow2(-24) * exact);
    assert!(growth > 1000.0, "{growth}");
    let p = one_row(
        Op::LayerNorm,
        Dtype::F32,
        EpsConvention::Inside,
        1e-5,
        &vec![c as f64; d],
        None,
        None,
    );
    let sequential: Vec<Variant> = variants()
        .into_iter()
        .filter(|v| v.mean == Mean::Divided && v.order == Order::Natural)
        .collect();
    let mut outcome = Outcome::default();
    check_problem(&p, &sequential, &judges_bound, &mut outcome);
    assert_sound("constant f32 row", &outcome);
    // The kernel's error uses a good part of the bound: lemma 1 is tight here.
    assert!(
        outcome.max_bound_use[0] > 0.3,
        "{:?}",
        outcome.max_bound_use
    );
    let mut weakened = Outcome::default();
    let without_sum_error = |dtype: Dtype, stats: &RowStats, values: &[f64]| {
        let mut b = RowBound::new(dtype, stats, values);
        b.mean_error = b.welford_error;
        b
    };
    check_problem(&p, &sequential, &without_sum_error, &mut weakened);
    assert!(
        !weakened.findings.is_empty(),
        "{:?}",
        weakened.max_bound_use
    );
}

/// Welford on the two-level f16 row (512 of 2048, then 3584 of 2050), d = 4096, ε = 1e-12:
/// once fl(x − m̂)/k falls below half an ULP of m̂ the running mean stops moving, and it
/// ends ≈ 13 % of σ short (9.2 times the (L+1)·u·mean|x| growth the earlier bound assumed).
/// The row's sums are exact (e_sum = 0): only the Welford kernels' own errors (item 4) cover
/// it; without them it FAILs.
#[test]
fn welford_on_a_two_level_row_needs_its_own_errors() {
    let x: Vec<f64> = (0..4096)
        .map(|i| if i < 512 { 2048.0 } else { 2050.0 })
        .collect();
    let p = one_row(
        Op::LayerNorm,
        Dtype::F16,
        EpsConvention::Inside,
        1e-12,
        &x,
        None,
        None,
    );
    let welford_variants: Vec<Variant> = variants()
        .into_iter()
        .filter(|v| v.mean == Mean::Welford)
        .collect();
    let mut outcome = Outcome::default();
    check_problem(&p, &welford_variants, &judges_bound, &mut outcome);
    assert_sound("two-level f16 row, Welford", &outcome);
    assert!(
        outcome.max_bound_use[3] > 0.1,
        "{:?}",
        outcome.max_bound_use
    );
    let mut weakened = Outcome::default();
    let without_welford = |dtype: Dtype, stats: &RowStats, values: &[f64]| {
        RowBound::with_welford(dtype, stats, values, false)
    };
    check_problem(&p, &welford_variants, &without_welford, &mut weakened);
    assert!(
        !weakened.findings.is_empty(),
        "{:?}",
        weakened.max_bound_use
    );
}

/// ρ (the scale's error, item 7) is needed: on Gaussian RMSNorm rows (e_μ = 0, so only ρ
/// and the roundings remain), the model's kernels FAIL without it.
#[test]
fn the_scale_error_is_needed() {
    let mut rng = Rng::new(7, 7);
    let variants = variants();
    let without_scale = |dtype: Dtype, stats: &RowStats, values: &[f64]| {
        let mut b = RowBound::new(dtype, stats, values);
        b.scale_error = 0.0;
        b
    };
    let mut outcome = Outcome::default();
    for _ in 0..2 {
        let x: Vec<f64> = (0..1024).map(|_| rng.normal()).collect();
        let p = one_row(
            Op::RmsNorm,
            Dtype::F32,
            EpsConvention::Inside,
            1e-5,
            &x,
            None,
            None,
        );
        check_problem(&p, &variants, &without_scale, &mut outcome);
    }
    assert!(!outcome.findings.is_empty());
}
