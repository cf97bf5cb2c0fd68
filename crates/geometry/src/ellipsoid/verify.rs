//! Rigorous error bounds for a computed eigendecomposition `A ≈ V diag(μ) Vᵀ` of a symmetric
//! matrix `A` given exactly by its structure ([`IntervalOperator`]).
//!
//! What is proved, and how:
//!
//! 1. **Residuals.** For each computed pair `(μ_i, v_i)` (f64), `r_i = A v_i − μ_i v_i` is
//!    evaluated in outward-rounded 128-bit MPFR interval arithmetic, so `‖r_i‖ ≤ residual_upper`
//!    and `‖v_i‖ ≥ norm_lower` hold for the exact `A` defined by the f64 gains.
//!    Then some eigenvalue of `A` lies within `radius = ‖r_i‖/‖v_i‖` of `μ_i` (for symmetric
//!    `A`: expand `v_i` in an orthonormal eigenbasis, `‖r_i‖² = Σ c_j²(λ_j − μ_i)²`).
//! 2. **Orthonormality.** `‖VᵀV − I‖_F ≤ η` with `VᵀV` formed in f64 (faer) and its rounding
//!    error bounded by the inner-product bound `|fl(xᵀy) − xᵀy| ≤ γ_N |x|ᵀ|y| + N·2⁻¹⁰⁷⁴`
//!    (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1; any summation
//!    order, with or without FMA; the last term covers underflow), `γ_N = Nu/(1 − Nu)`,
//!    `u = 2⁻⁵³`, and `(|V|ᵀ|V|)_ij ≤ ‖v_i‖‖v_j‖`. The norms are summed in MPFR rounding up.
//! 3. **Clusters (Kahan 1967).** For symmetric `A`, any `X` of full column rank and diagonal
//!    `M`, there are `k` distinct eigenvalues `λ_{j_i}` of `A` with
//!    `|λ_{j_i} − μ_i| ≤ ‖AX − XM‖₂/σ_min(X)` (see R.-C. Li, "Matrix perturbation theory",
//!    *Handbook of Linear Algebra*). With `X = V_S` (a cluster `S` of computed pairs),
//!    `σ_min(V_S)² ≥ 1 − η` and `‖R_S‖₂ ≤ ‖R_S‖_F`, so `ρ_S = ‖R_S‖_F/√(1 − η)`. Adjacent
//!    clusters are merged until the intervals `[min μ_S − ρ_S, max μ_S + ρ_S]` are disjoint;
//!    since they cover all `N` computed pairs, each holds exactly `|S|` eigenvalues, and the
//!    `i`-th smallest eigenvalue of `A` lies within `ρ_S` of the `i`-th smallest `μ`.
//! 4. **Axes.** For a singleton cluster with distance `gap` from `μ_i` to every other cluster's
//!    interval, the angle between `v_i` and the true eigenvector obeys
//!    `sin θ ≤ (‖r_i‖/‖v_i‖)/gap`. Clusters with more than one member (repeated or nearly
//!    repeated gains) have no certified individual axes: only their span is meaningful.

use super::decompose::{SymEigen, Threads};
use super::interval::{add_up, sqrt_down_f64, sqrt_up_f64, PREC};
use super::matrices::IntervalOperator;
use super::residual::{residual_bounds, Workspace};
use crate::exact::superacc::SuperAccumulator;
use rayon::prelude::*;
use rug::float::Round;
use rug::ops::AssignRound;
use rug::Float;

/// How a certificate was proved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// MPFR residuals of every pair and an orthonormality bound (this module): any
    /// decomposition, `O(N³)`.
    Residual,
    /// Secular-equation brackets and the explicit eigenvectors ([`super::structure`]): the
    /// secular decomposition only, `O(N²)`.
    Structure,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Residual => "residual",
            Method::Structure => "structure",
        }
    }
}

/// The verified facts about one computed eigenpair.
#[derive(Debug, Clone, PartialEq)]
pub struct PairBound {
    /// The computed eigenvalue `μ_i`.
    pub value: f64,
    /// An upper bound of `‖A v_i − μ_i v_i‖₂` ([`Method::Residual`] only).
    pub residual_upper: Option<f64>,
    /// A lower bound of `‖v_i‖₂` ([`Method::Residual`] only).
    pub norm_lower: Option<f64>,
    /// Some eigenvalue of `A` lies within this distance of `μ_i` (rounded up).
    pub radius: f64,
}

/// A maximal group of computed eigenvalues whose enclosures could not be separated.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Indices into the ascending computed eigenvalues (contiguous).
    pub members: std::ops::Range<usize>,
    /// Each true eigenvalue matched to a member lies within this distance of it.
    pub radius: f64,
    /// The certified interval `[min μ − ρ, max μ + ρ]`, holding exactly `members.len()`
    /// eigenvalues of `A` counted with multiplicity.
    pub lo: f64,
    pub hi: f64,
}

/// Everything certified about a computed eigendecomposition.
#[derive(Debug, Clone, PartialEq)]
pub struct Certificate {
    pub method: Method,
    pub pairs: Vec<PairBound>,
    /// An upper bound of `‖AV − V diag(μ)‖_F` ([`Method::Residual`] only).
    pub residual_frobenius_upper: Option<f64>,
    /// An upper bound of `‖VᵀV − I‖_F` ([`Method::Residual`] only).
    pub orthonormality_defect_upper: Option<f64>,
    /// Disjoint clusters covering all pairs, ascending; empty when `η ≥ 1` (nothing certified
    /// beyond the per-pair radii).
    pub clusters: Vec<Cluster>,
    /// For each pair: `sin θ` bound between `v_i` and the true eigenvector, when `v_i` is a
    /// singleton cluster; `None` inside a cluster.
    pub angle_bounds: Vec<Option<f64>>,
}

impl Certificate {
    /// Whether the whole spectrum is enclosed (the clusters exist).
    pub fn complete(&self) -> bool {
        !self.clusters.is_empty() || self.pairs.is_empty()
    }

    /// The certified radius of the `i`-th smallest eigenvalue (its cluster's), if complete.
    pub fn sorted_radius(&self, i: usize) -> Option<f64> {
        self.cluster_of(i).map(|c| c.radius)
    }

    pub fn cluster_of(&self, i: usize) -> Option<&Cluster> {
        // The clusters are contiguous and ascending.
        let k = self.clusters.partition_point(|c| c.members.end <= i);
        self.clusters.get(k).filter(|c| c.members.contains(&i))
    }

    /// The certified interval of the `i`-th smallest eigenvalue: its cluster's interval
    /// intersected with `μ_i ± ρ`, both proved (f64 bounds, as wide as the rounding needs).
    pub fn enclosure(&self, i: usize) -> Option<(f64, f64)> {
        let mu = self.pairs.get(i)?.value;
        self.cluster_of(i).map(|c| {
            let lo = (mu - c.radius).next_down().max(c.lo);
            let hi = (mu + c.radius).next_up().min(c.hi);
            (lo, hi)
        })
    }

    /// The largest per-pair radius.
    pub fn max_pair_radius(&self) -> f64 {
        self.pairs.iter().map(|p| p.radius).fold(0.0, f64::max)
    }

    /// The largest cluster radius (the worst certified eigenvalue error).
    pub fn max_cluster_radius(&self) -> f64 {
        self.clusters.iter().map(|c| c.radius).fold(0.0, f64::max)
    }
}

/// Verifies `eig` against the exact operator `op`. `tick` is called once per eigenpair.
pub fn certify(
    op: &IntervalOperator,
    eig: &SymEigen,
    threads: Threads,
    tick: &(dyn Fn() + Sync),
) -> Certificate {
    let n = eig.n;
    assert_eq!(op.order(), n, "operator and decomposition orders differ");
    let compute = |ws: &mut Workspace, i: usize| {
        let b = pair_bound(op, eig.values[i], eig.vector(i), ws);
        tick();
        b
    };
    let pairs: Vec<(PairBound, Float)> = match threads {
        Threads::One => {
            let mut ws = Workspace::new(n);
            (0..n).map(|i| compute(&mut ws, i)).collect()
        }
        Threads::Pool(t) => {
            let work = || {
                (0..n)
                    .into_par_iter()
                    .map_init(|| Workspace::new(n), compute)
                    .collect()
            };
            if t == 0 {
                work()
            } else {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .map_or_else(|_| work(), |pool| pool.install(work))
            }
        }
    };
    // Sums in index order, so the bounds do not depend on the thread count.
    let mut r2_total = Float::new(PREC);
    for (_, r2) in &pairs {
        add_up(&mut r2_total, r2);
    }
    let eta = orthonormality_defect(eig, threads);
    let residual_squares: Vec<Float> = pairs.iter().map(|(_, r2)| r2.clone()).collect();
    let pairs: Vec<PairBound> = pairs.into_iter().map(|(p, _)| p).collect();
    // The sorted matching of item 3 needs the computed values in ascending order.
    let sorted = eig.values.windows(2).all(|w| w[0] <= w[1]);
    let clusters = if eta < 1.0 && sorted {
        clusters(&eig.values, &residual_squares, eta)
    } else {
        Vec::new()
    };
    let angle_bounds = angle_bounds(&pairs, &clusters);
    Certificate {
        method: Method::Residual,
        pairs,
        residual_frobenius_upper: Some(sqrt_up_f64(&r2_total)),
        orthonormality_defect_upper: Some(eta),
        clusters,
        angle_bounds,
    }
}

/// The bound of one pair, and an upper bound of `‖r‖²` (for the Frobenius sums).
fn pair_bound(op: &IntervalOperator, mu: f64, v: &[f64], ws: &mut Workspace) -> (PairBound, Float) {
    let (r2, v2) = residual_bounds(op, mu, v, ws);
    let residual_upper = sqrt_up_f64(&r2);
    let norm_lower = sqrt_down_f64(&v2);
    let radius = if norm_lower > 0.0 {
        div_up(residual_upper, norm_lower)
    } else {
        f64::INFINITY
    };
    (
        PairBound {
            value: mu,
            residual_upper: Some(residual_upper),
            norm_lower: Some(norm_lower),
            radius,
        },
        r2,
    )
}

/// `a/b` rounded up (positive operands).
fn div_up(a: f64, b: f64) -> f64 {
    let fa = Float::with_val(PREC, a);
    let (q, _) = Float::with_val_round(PREC, &fa / b, Round::Up);
    q.to_f64_round(Round::Up)
}

/// An upper bound of `‖VᵀV − I‖_F` (see the module documentation, item 2).
pub fn orthonormality_defect(eig: &SymEigen, threads: Threads) -> f64 {
    let n = eig.n;
    if n == 0 {
        return 0.0;
    }
    let v = faer::MatRef::from_column_major_slice(&eig.vectors, n, n);
    let mut c = faer::Mat::<f64>::zeros(n, n);
    let par = match threads {
        Threads::One => faer::Par::Seq,
        Threads::Pool(t) => faer::Par::rayon(t),
    };
    faer::linalg::matmul::matmul(c.as_mut(), faer::Accum::Replace, v.transpose(), v, 1.0, par);
    // C_ij − δ_ij is exact in f64: off the diagonal it is C_ij, on it Sterbenz's lemma applies
    // for C_ii ∈ [1/2, 2] (outside, ‖VᵀV − I‖ ≥ 1/2 and nothing is certified anyway).
    if (0..n).any(|i| !(0.5..=2.0).contains(&c[(i, i)])) {
        return f64::INFINITY;
    }
    let entries = (0..n)
        .flat_map(|j| (0..n).map(move |i| (i, j)))
        .map(|(i, j)| c[(i, j)] - if i == j { 1.0 } else { 0.0 });
    let mut eta = sum_of_squares_upper(entries);
    eta.sqrt_round(Round::Up);
    // γ_N Σ‖v_i‖² + N²·2⁻¹⁰⁷⁴, rounding up. N·u and 1 − N·u are exact at 128 bits (N < 2^64).
    let norms2 = sum_of_squares_upper(eig.vectors.iter().copied());
    let nu = Float::with_val(PREC, n) * Float::with_val(PREC, f64::EPSILON / 2.0);
    let one_minus_nu = Float::with_val(PREC, 1) - &nu;
    let (gamma, _) = Float::with_val_round(PREC, &nu / &one_minus_nu, Round::Up);
    let (mut rounding, _) = Float::with_val_round(PREC, &gamma * &norms2, Round::Up);
    let underflow = Float::with_val(PREC, n * n) * Float::with_val(PREC, f64::from_bits(1));
    add_up(&mut rounding, &underflow);
    add_up(&mut eta, &rounding);
    eta.to_f64_round(Round::Up)
}

/// An upper bound of `Σ x_k²`, as a 128-bit float: each square split exactly into
/// `hi + lo` (`hi = x·x`, `lo = fma(x, x, −hi)`), summed exactly by the superaccumulator; the
/// split is exact unless `lo` underflows, which costs at most `2⁻¹⁰⁷⁵` per term.
pub fn sum_of_squares_upper(xs: impl Iterator<Item = f64>) -> Float {
    let mut acc = SuperAccumulator::new();
    let mut terms: u64 = 0;
    for x in xs {
        let hi = x * x;
        let lo = x.mul_add(x, -hi);
        acc.add(hi);
        acc.add(lo);
        terms += 1;
    }
    let units = acc.to_integer() + terms;
    let (sum, _) = Float::with_val_round(PREC, &units, Round::Up);
    sum >> 1074u32
}

/// Merges adjacent computed eigenvalues into clusters until the cluster intervals are disjoint.
fn clusters(values: &[f64], residual_squares: &[Float], eta: f64) -> Vec<Cluster> {
    // √(1 − η) rounded down: dividing by it (rounding up) bounds 1/σ_min(V_S) from above.
    let one = Float::with_val(PREC, 1);
    let eta_f = Float::with_val(PREC, eta);
    let (mut scale, _) = Float::with_val_round(PREC, &one - &eta_f, Round::Down);
    scale.sqrt_round(Round::Down);
    let make = |range: std::ops::Range<usize>| {
        let mut r2 = Float::new(PREC);
        for s in &residual_squares[range.clone()] {
            add_up(&mut r2, s);
        }
        r2.sqrt_round(Round::Up);
        let mut rho = Float::new(PREC);
        rho.assign_round(&r2 / &scale, Round::Up);
        let radius = rho.to_f64_round(Round::Up);
        let first = Float::with_val(PREC, values[range.start]);
        let last = Float::with_val(PREC, values[range.end - 1]);
        let (lo, _) = Float::with_val_round(PREC, &first - &rho, Round::Down);
        let (hi, _) = Float::with_val_round(PREC, &last + &rho, Round::Up);
        Cluster {
            members: range,
            radius,
            lo: lo.to_f64_round(Round::Down),
            hi: hi.to_f64_round(Round::Up),
        }
    };
    let mut out: Vec<Cluster> = (0..values.len()).map(|i| make(i..i + 1)).collect();
    // Each merge removes one cluster, so this terminates after at most N − 1 merges.
    while let Some(i) = (0..out.len().saturating_sub(1)).find(|&i| out[i].hi >= out[i + 1].lo) {
        let merged = make(out[i].members.start..out[i + 1].members.end);
        out.splice(i..i + 2, [merged]);
    }
    out
}

fn angle_bounds(pairs: &[PairBound], clusters: &[Cluster]) -> Vec<Option<f64>> {
    let mut out = vec![None; pairs.len()];
    for (c_idx, c) in clusters.iter().enumerate() {
        if c.members.len() != 1 {
            continue;
        }
        let i = c.members.start;
        let mu = pairs[i].value;
        let mut gap = f64::INFINITY;
        if c_idx > 0 {
            gap = gap.min(mu - clusters[c_idx - 1].hi);
        }
        if let Some(next) = clusters.get(c_idx + 1) {
            gap = gap.min(next.lo - mu);
        }
        // The f64 subtractions above may round up; shrink the gap by one relative ulp to keep
        // the bound an upper bound.
        let gap = gap * (1.0 - f64::EPSILON);
        out[i] = Some(if gap.is_infinite() {
            0.0
        } else if gap > 0.0 {
            div_up(pairs[i].radius, gap).min(1.0)
        } else {
            1.0
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ellipsoid::decompose::symmetric_eigen;
    use crate::ellipsoid::matrices::{gram_dense, tight_form_dense};

    fn no_tick() {}

    #[test]
    fn certified_clusters_enclose_the_known_spectrum() {
        // g = (2, 9, 12, 13): ζ ∈ {0, 63/2, 109, 158} exactly (the worked example).
        let g = [2.0, 9.0, 12.0, 13.0];
        let k = gram_dense(&g);
        let e = symmetric_eigen(4, &k, Threads::One).unwrap();
        let cert = certify(&IntervalOperator::gram(&g), &e, Threads::One, &no_tick);
        assert!(cert.complete());
        assert_eq!(cert.clusters.len(), 4);
        for (i, exact) in [0.0, 31.5, 109.0, 158.0].iter().enumerate() {
            let c = cert.cluster_of(i).unwrap();
            assert!(
                c.lo <= *exact && *exact <= c.hi,
                "{exact} not in [{}, {}]",
                c.lo,
                c.hi
            );
            assert!(c.radius < 1e-11);
            assert!(cert.angle_bounds[i].unwrap() < 1e-12);
        }
    }

    #[test]
    fn a_wrong_eigenvalue_is_not_certified_near_its_claim() {
        let g = [2.0, 9.0, 12.0, 13.0];
        let k = gram_dense(&g);
        let mut e = symmetric_eigen(4, &k, Threads::One).unwrap();
        e.values[2] += 1e-3;
        let cert = certify(&IntervalOperator::gram(&g), &e, Threads::One, &no_tick);
        // The residual grows to ~1e-3: the radius must cover the true 109.
        assert!(cert.pairs[2].radius >= 1e-3 * 0.999);
        let c = cert.cluster_of(2).unwrap();
        assert!(c.lo <= 109.0 && 109.0 <= c.hi);
    }

    #[test]
    fn repeated_gains_form_a_cluster_without_axis_bounds() {
        let g = [1.0, 1.0, 2.0, 3.0];
        let q = tight_form_dense(&g);
        let e = symmetric_eigen(4, &q, Threads::One).unwrap();
        let cert = certify(
            &IntervalOperator::tight_form(&g),
            &e,
            Threads::One,
            &no_tick,
        );
        assert!(cert.complete());
        // λ = 1 (e1 − e2 direction) is exact; whether the solver splits it or not, every
        // eigenvalue is enclosed.
        assert!(cert.orthonormality_defect_upper.unwrap() < 1e-13);
        let lambda_one = (0..4).any(|i| {
            let c = cert.cluster_of(i).unwrap();
            c.lo <= 1.0 && 1.0 <= c.hi
        });
        assert!(lambda_one);
    }

    #[test]
    fn sums_of_squares_are_bounded_tightly_from_above() {
        use rug::Rational;
        let xs = [0.1, -3.0e-200, 1.0 / 3.0, 7.5, 1e-170];
        let exact: Rational = xs
            .iter()
            .map(|&x| Rational::from_f64(x).unwrap().square())
            .sum();
        let bound = sum_of_squares_upper(xs.iter().copied())
            .to_rational()
            .unwrap();
        assert!(bound >= exact);
        // Rounded up to 128 bits once: within 2^-127 relative.
        assert!(
            Rational::from(&bound - &exact) < exact.clone() * Rational::from_f64(1e-38).unwrap()
        );
        assert_eq!(sum_of_squares_upper(std::iter::empty()), 0.0);
    }

    #[test]
    fn non_orthonormal_vectors_raise_the_defect() {
        let g = [2.0, 9.0, 12.0, 13.0];
        let mut e = symmetric_eigen(4, &gram_dense(&g), Threads::One).unwrap();
        for x in e.vectors[4..8].iter_mut() {
            *x *= 1.5;
        }
        let eta = orthonormality_defect(&e, Threads::One);
        assert!(eta >= 1.25 - 1e-12, "{eta}");
    }
}
