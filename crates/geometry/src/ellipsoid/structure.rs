//! Certification from the structure, in O(N) per eigenpair (O(N²) in all), instead of dense
//! residuals and an `O(N³)` orthonormality bound ([`super::verify`]).
//!
//! The spectrum of `K = ΠG²Π` is known in closed form up to the roots of one secular
//! equation ([`super::secular`]; derivation in [`super::exact`]): `ζ = 0` with eigenvector
//! `1`, `ζ = δ_j` (`m_j − 1` times) with the zero-sum vectors of group `j`, and one root of
//! `f(ζ) = Σ_j m_j/(δ_j − ζ)` in each gap `(δ_j, δ_{j+1})`, with eigenvector
//! `w_n(ζ) = 1/(d_n − ζ)`. What is proved for every computed pair, and how:
//!
//! 1. **Eigenvalues.** `f` increases from `−∞` to `+∞` on each gap, so `f(ζ⁻) < 0 < f(ζ⁺)`
//!    puts the gap's root in `(ζ⁻, ζ⁺)`. Both signs are checked in outward-rounded f64 interval
//!    arithmetic (every operation's round-to-nearest result widened by one ulp each way,
//!    which encloses the exact result whenever it is finite), relative to the computed root's
//!    nearer pole so the differences `δ_j − δ_o = (|g_j| − |g_o|)(|g_j| + |g_o|)` keep their
//!    relative accuracy: `O(m)` per check for `m` distinct gains. The bracket starts a few
//!    ulps around the computed root and widens until both signs are proved (at worst it is
//!    the gap itself, still a proof). The eigenvalues `0` and `δ_j = g_j²` are exact.
//! 2. **Multiplicities.** The list above is the whole spectrum, counted with multiplicity, so
//!    every certified interval holds exactly the eigenvalues assigned to it; adjacent
//!    intervals that touch after rounding are merged into clusters as in [`super::verify`],
//!    with the same meaning (a cluster holds exactly as many eigenvalues as members).
//! 3. **Axes.** The exact eigenvector is known up to scale: `1`, a Helmert vector, or
//!    `w(ζ)` with `ζ` in its certified interval; each `w_n` is monotone in `ζ` on the gap, so
//!    an outward-rounded box `B ∋ w` follows in O(N). For a computed unit vector `v` and any
//!    `s`, `sin∠(v, w) ≤ ‖w − s v‖/‖w‖ ≤ max_{w∈B}‖w − s v‖ / min_{w∈B}‖w‖`.
//! 4. **The λ route.** `Q = (GΠG)⁺` has the eigenvalues `1/ζ` for `ζ ≠ 0` with axes `Gv`, and
//!    `0` on the normal space (`α = 1/g`, or the zero-gain `e_n`) — the identity the small
//!    orders also check exactly ([`super::exact`]). Its intervals are the reciprocals of
//!    `K`'s (outward), its boxes `g ⊙ B`. It is derived, not an independent solve: with this
//!    certification the two routes agree by construction.
//!
//! Every result depends only on the gains and the computed pair, never on the thread count.

use super::decompose::{SymEigen, Threads};
use super::interval::PREC;
use super::secular::{GramSpectrum, PairKind};
use super::verify::{Certificate, Cluster, Method, PairBound};
use rayon::prelude::*;
use rug::float::Round;
use rug::Float;

/// A closed f64 interval (`lo ≤ hi`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Iv {
    pub lo: f64,
    pub hi: f64,
}

/// One ulp below/above a round-to-nearest result: encloses the exact result of the operation
/// whenever the rounded result is finite.
#[inline]
fn down(x: f64) -> f64 {
    x.next_down()
}

#[inline]
fn up(x: f64) -> f64 {
    x.next_up()
}

impl Iv {
    pub fn point(x: f64) -> Iv {
        Iv { lo: x, hi: x }
    }

    /// Enclosure of the exact `a·b` and `a ± b` for exact f64 operands.
    fn around(x: f64) -> Iv {
        Iv {
            lo: down(x),
            hi: up(x),
        }
    }

    fn sub(self, o: Iv) -> Iv {
        Iv {
            lo: down(self.lo - o.hi),
            hi: up(self.hi - o.lo),
        }
    }

    /// `self·x` for an exact f64 `x`.
    fn scale(self, x: f64) -> Iv {
        if x == 0.0 {
            return Iv::point(0.0);
        }
        let (a, b) = (self.lo * x, self.hi * x);
        Iv {
            lo: down(a.min(b)),
            hi: up(a.max(b)),
        }
    }

    /// Positive product of two positive intervals.
    fn mul_pos(self, o: Iv) -> Iv {
        Iv {
            lo: down(self.lo * o.lo).max(0.0),
            hi: up(self.hi * o.hi),
        }
    }

    fn excludes_zero(self) -> bool {
        self.lo > 0.0 || self.hi < 0.0
    }

    /// `1/self` for an interval that excludes 0 (decreasing on each side of 0).
    fn recip(self) -> Iv {
        Iv {
            lo: down(1.0 / self.hi),
            hi: up(1.0 / self.lo),
        }
    }

    fn is_finite(self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }
}

/// `δ_j − δ_o = (|g_j| − |g_o|)(|g_j| + |g_o|)`, enclosed (exactly 0 for `j = o`).
fn pole_difference_iv(gj: f64, go: f64) -> Iv {
    if gj == go {
        return Iv::point(0.0);
    }
    let diff = Iv::around(gj - go);
    let sum = Iv::around(gj + go);
    let sign = if gj > go { 1.0 } else { -1.0 };
    let d = Iv {
        lo: diff.lo * sign,
        hi: diff.hi * sign,
    };
    let d = Iv {
        lo: d.lo.min(d.hi),
        hi: d.lo.max(d.hi),
    };
    let p = d.mul_pos(sum);
    if sign > 0.0 {
        p
    } else {
        Iv {
            lo: -p.hi,
            hi: -p.lo,
        }
    }
}

/// The secular function relative to one pole: `f(δ_o + τ) = Σ_j m_j/(Δ_j − τ)`.
struct Secular {
    delta: Vec<Iv>,
    mult: Vec<f64>,
}

impl Secular {
    fn relative_to(levels: &[f64], mult: &[f64], origin: usize) -> Self {
        Secular {
            delta: levels
                .iter()
                .map(|&x| pole_difference_iv(x, levels[origin]))
                .collect(),
            mult: mult.to_vec(),
        }
    }

    /// An upper bound of `f(δ_o + τ)` (`+∞` when a pole is not excluded).
    fn upper(&self, tau: f64) -> f64 {
        let t = Iv::point(tau);
        let mut sum = 0.0f64;
        for (d, m) in self.delta.iter().zip(&self.mult) {
            let den = d.sub(t);
            if !den.excludes_zero() {
                return f64::INFINITY;
            }
            // m/den is decreasing in den on each side of 0: its largest value is at den.lo.
            sum = up(sum + up(m / den.lo));
        }
        sum
    }

    /// A lower bound of `f(δ_o + τ)` (`−∞` when a pole is not excluded).
    fn lower(&self, tau: f64) -> f64 {
        let t = Iv::point(tau);
        let mut sum = 0.0f64;
        for (d, m) in self.delta.iter().zip(&self.mult) {
            let den = d.sub(t);
            if !den.excludes_zero() {
                return f64::NEG_INFINITY;
            }
            sum = down(sum + down(m / den.hi));
        }
        sum
    }
}

/// A proved bracket `[τ⁻, τ⁺]` of the root in gap `gap` (relative to pole `origin`), grown
/// around the computed `tau`; the whole open gap (as far as f64 can tell) when no tighter one
/// is proved.
fn bracket(levels: &[f64], mult: &[f64], gap: usize, origin: usize, tau: f64) -> Iv {
    let f = Secular::relative_to(levels, mult, origin);
    // The gap in τ units: (Δ_gap, Δ_{gap+1}), one end being 0.
    let (left, right) = (f.delta[gap], f.delta[gap + 1]);
    let inside = |x: f64| x > left.hi && x < right.lo;
    let centre = tau.clamp(left.hi, right.lo);
    let mut lo_found: Option<f64> = None;
    let mut hi_found: Option<f64> = None;
    let mut width = tau.abs().max(f64::MIN_POSITIVE) * 4.0 * f64::EPSILON;
    let mut halving = 0.5;
    for _ in 0..64 {
        if lo_found.is_none() {
            let mut x = tau - width;
            if !inside(x) {
                // Towards the pole, halving the distance each time.
                x = left.hi + (centre - left.hi) * halving;
            }
            if inside(x) && f.upper(x) < 0.0 {
                lo_found = Some(x);
            }
        }
        if hi_found.is_none() {
            let mut x = tau + width;
            if !inside(x) {
                x = right.lo - (right.lo - centre) * halving;
            }
            if inside(x) && f.lower(x) > 0.0 {
                hi_found = Some(x);
            }
        }
        if lo_found.is_some() && hi_found.is_some() {
            break;
        }
        width *= 16.0;
        if tau - width <= left.hi || tau + width >= right.lo {
            halving *= 0.25;
        }
    }
    // The root lies strictly between the two poles whatever happens.
    Iv {
        lo: lo_found.unwrap_or(left.lo),
        hi: hi_found.unwrap_or(right.hi),
    }
}

/// `g_o² + τ` rounded down and up (128-bit MPFR: `g_o²` is exact there).
fn shifted(go: f64, tau: Iv) -> Iv {
    let sq = Float::with_val(PREC, go) * go;
    let lo = Float::with_val_round(PREC, &sq + tau.lo, Round::Down).0;
    let hi = Float::with_val_round(PREC, &sq + tau.hi, Round::Up).0;
    Iv {
        lo: lo.to_f64_round(Round::Down),
        hi: hi.to_f64_round(Round::Up),
    }
}

/// `x²` for an exact f64, enclosed.
fn square_iv(x: f64) -> Iv {
    let sq = Float::with_val(PREC, x) * x;
    Iv {
        lo: sq.to_f64_round(Round::Down),
        hi: sq.to_f64_round(Round::Up),
    }
}

/// `1/ζ` for `ζ` in a positive interval, outward (`0` stays `0`).
fn reciprocal(z: Iv) -> Iv {
    if z.lo == 0.0 && z.hi == 0.0 {
        return z;
    }
    let one = Float::with_val(PREC, 1);
    let lo = Float::with_val_round(PREC, &one / z.hi, Round::Down).0;
    if z.lo <= 0.0 {
        return Iv {
            lo: lo.to_f64_round(Round::Down),
            hi: f64::INFINITY,
        };
    }
    let hi = Float::with_val_round(PREC, &one / z.lo, Round::Up).0;
    Iv {
        lo: lo.to_f64_round(Round::Down),
        hi: hi.to_f64_round(Round::Up),
    }
}

/// The exact eigenvector (up to scale) of one pair of `K`, as a box per coordinate.
enum Direction {
    Ones,
    /// `1` on the group's first `k` members, `−k` on member `k`, 0 elsewhere.
    Helmert {
        group: usize,
        k: usize,
    },
    /// `w_n = 1/(Δ_{group(n)} − τ)`, one interval per group.
    Root {
        per_group: Vec<Iv>,
    },
}

/// Where each coordinate sits: its group and its position within the group.
struct Layout {
    group_of: Vec<usize>,
    position: Vec<usize>,
}

impl Layout {
    fn of(spectrum: &GramSpectrum) -> Self {
        let n = spectrum.eig.n;
        let mut position = vec![0; n];
        for (_, members) in &spectrum.groups {
            for (p, &i) in members.iter().enumerate() {
                position[i] = p;
            }
        }
        Layout {
            group_of: spectrum.group_of(),
            position,
        }
    }
}

impl Direction {
    fn component(&self, n: usize, layout: &Layout) -> Iv {
        match self {
            Direction::Ones => Iv::point(1.0),
            Direction::Helmert { group, k } => {
                let p = layout.position[n];
                Iv::point(if layout.group_of[n] != *group || p > *k {
                    0.0
                } else if p < *k {
                    1.0
                } else {
                    -(*k as f64)
                })
            }
            Direction::Root { per_group } => per_group[layout.group_of[n]],
        }
    }
}

/// An upper bound of `sin∠(v, w)` over every `w` in the box `component(0..n)` (item 3 of the
/// module documentation); 1 when nothing better is proved.
pub fn box_angle_bound(v: &[f64], component: impl Fn(usize) -> Iv) -> f64 {
    // s = v·c/v·v with c the box centre (any s is valid; this one is nearly optimal).
    let (mut vc, mut vv) = (0.0, 0.0);
    for (n, &x) in v.iter().enumerate() {
        let b = component(n);
        vc += x * (0.5 * b.lo + 0.5 * b.hi);
        vv += x * x;
    }
    if vv == 0.0 || !vc.is_finite() {
        return 1.0;
    }
    let s = vc / vv;
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (n, &x) in v.iter().enumerate() {
        let b = component(n);
        let sv = Iv::around(s * x);
        let e = up(b.hi - sv.lo).max(up(sv.hi - b.lo)).max(0.0);
        num = up(num + up(e * e));
        let m = if b.lo > 0.0 {
            b.lo
        } else if b.hi < 0.0 {
            -b.hi
        } else {
            0.0
        };
        den = down(den + down(m * m)).max(0.0);
    }
    if den <= 0.0 || !num.is_finite() {
        return 1.0;
    }
    up(up(num.sqrt()) / down(den.sqrt())).min(1.0)
}

/// The certificates of both routes for the secular decomposition `spectrum` of `K` and the
/// derived `lambda` decomposition of `Q` (as [`super::secular::tight_form_eigen`] builds it:
/// the `nullity` zero pairs first, then descending `ζ`). `g` are the (scaled) gains.
pub fn certify(
    g: &[f64],
    spectrum: &GramSpectrum,
    lambda: &SymEigen,
    nullity: usize,
    threads: Threads,
    tick: &(dyn Fn() + Sync),
) -> (Certificate, Certificate) {
    let n = g.len();
    let levels = spectrum.levels();
    let mult = spectrum.multiplicities();
    let layout = Layout::of(spectrum);
    let zeros: Vec<usize> = (0..n).filter(|&c| g[c] == 0.0).collect();
    // For each pair of K: the enclosure of its exact eigenvalue and its exact direction.
    let describe = |i: usize| -> (Iv, Direction) {
        match spectrum.kinds[i] {
            PairKind::Ones => (Iv::point(0.0), Direction::Ones),
            PairKind::Helmert { group, k } => {
                (square_iv(levels[group]), Direction::Helmert { group, k })
            }
            PairKind::Root { gap, origin, tau } => {
                let t = bracket(&levels, &mult, gap, origin, tau);
                let go = levels[origin];
                let per_group = levels
                    .iter()
                    .map(|&x| {
                        let den = pole_difference_iv(x, go).sub(t);
                        if den.excludes_zero() && den.is_finite() {
                            den.recip()
                        } else {
                            Iv {
                                lo: f64::NEG_INFINITY,
                                hi: f64::INFINITY,
                            }
                        }
                    })
                    .collect();
                (shifted(go, t), Direction::Root { per_group })
            }
        }
    };
    // Per pair of K: (ζ enclosure, ζ-route angle bound, λ-route angle bound of its axis Gv).
    let work = |i: usize| {
        let (z, dir) = describe(i);
        let zeta_angle = box_angle_bound(spectrum.eig.vector(i), |c| dir.component(c, &layout));
        tick();
        (z, zeta_angle, dir)
    };
    let per_pair: Vec<(Iv, f64, Direction)> = match threads {
        Threads::One => (0..n).map(work).collect(),
        Threads::Pool(_) => (0..n).into_par_iter().map(work).collect(),
    };
    // The λ route: its pair j ≥ nullity is K's pair n − 1 − (j − nullity).
    let lambda_work = |j: usize| {
        let r = if j < nullity {
            let angle = if zeros.is_empty() {
                box_angle_bound(lambda.vector(j), |c| Iv::around(1.0 / g[c]))
            } else {
                let z = zeros[j];
                box_angle_bound(lambda.vector(j), |c| {
                    Iv::point(if c == z { 1.0 } else { 0.0 })
                })
            };
            (Iv::point(0.0), angle)
        } else {
            let i = n - 1 - (j - nullity);
            let (z, _, dir) = &per_pair[i];
            let angle =
                box_angle_bound(lambda.vector(j), |c| dir.component(c, &layout).scale(g[c]));
            (reciprocal(*z), angle)
        };
        tick();
        r
    };
    let lambda_pairs: Vec<(Iv, f64)> = match threads {
        Threads::One => (0..n).map(lambda_work).collect(),
        Threads::Pool(_) => (0..n).into_par_iter().map(lambda_work).collect(),
    };
    let zeta_cert = certificate(
        &spectrum.eig.values,
        per_pair.iter().map(|(z, a, _)| (*z, *a)).collect(),
    );
    let lambda_cert = certificate(&lambda.values, lambda_pairs);
    (lambda_cert, zeta_cert)
}

/// Pairs, clusters and angle bounds from the per-pair enclosures (item 2).
fn certificate(values: &[f64], pairs: Vec<(Iv, f64)>) -> Certificate {
    let radius_of = |mu: f64, iv: Iv| up(mu - iv.lo).max(up(iv.hi - mu)).max(0.0);
    let pair_bounds: Vec<PairBound> = values
        .iter()
        .zip(&pairs)
        .map(|(&mu, (iv, _))| PairBound {
            value: mu,
            residual_upper: None,
            norm_lower: None,
            radius: radius_of(mu, *iv),
        })
        .collect();
    let sorted = values.windows(2).all(|w| w[0] <= w[1]);
    let mut clusters: Vec<Cluster> = Vec::new();
    if sorted {
        for (i, (iv, _)) in pairs.iter().enumerate() {
            let (lo, hi) = (iv.lo.min(values[i]), iv.hi.max(values[i]));
            clusters.push(Cluster {
                members: i..i + 1,
                radius: 0.0,
                lo,
                hi,
            });
            // Merge backwards until the last two intervals are disjoint.
            while clusters.len() >= 2 {
                let last = clusters.len() - 1;
                if clusters[last - 1].hi < clusters[last].lo {
                    break;
                }
                let c = clusters.pop().expect("two clusters");
                let p = clusters.last_mut().expect("two clusters");
                p.members.end = c.members.end;
                p.lo = p.lo.min(c.lo);
                p.hi = p.hi.max(c.hi);
            }
        }
        for c in clusters.iter_mut() {
            c.radius = c
                .members
                .clone()
                .map(|i| radius_of(values[i], Iv { lo: c.lo, hi: c.hi }))
                .fold(0.0, f64::max);
        }
    }
    let mut angle_bounds = vec![None; pairs.len()];
    for c in &clusters {
        if c.members.len() == 1 {
            angle_bounds[c.members.start] = Some(pairs[c.members.start].1);
        }
    }
    Certificate {
        method: Method::Structure,
        pairs: pair_bounds,
        residual_frobenius_upper: None,
        orthonormality_defect_upper: None,
        clusters,
        angle_bounds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ellipsoid::matrices::nullity;
    use crate::ellipsoid::secular::{gram_spectrum, tight_form_eigen};

    fn no_tick() {}

    fn run(g: &[f64], spectrum: &GramSpectrum) -> (Certificate, Certificate) {
        let null = nullity(g);
        let lambda = tight_form_eigen(g, &spectrum.eig, null);
        certify(g, spectrum, &lambda, null, Threads::One, &no_tick)
    }

    #[test]
    fn the_worked_example_is_enclosed_tightly() {
        // ζ ∈ {0, 63/2, 109, 158} exactly.
        let g = [2.0, 9.0, 12.0, 13.0];
        let s = gram_spectrum(&g, Threads::One);
        let (lambda, zeta) = run(&g, &s);
        assert_eq!(zeta.clusters.len(), 4);
        for (i, exact) in [0.0, 31.5, 109.0, 158.0].iter().enumerate() {
            let c = zeta.cluster_of(i).unwrap();
            assert!(c.lo <= *exact && *exact <= c.hi, "{exact}: {c:?}");
            assert!(c.hi - c.lo <= 1e-12 * exact, "{c:?}");
            assert!(
                zeta.angle_bounds[i].unwrap() < 1e-13,
                "{:?}",
                zeta.angle_bounds
            );
            assert!(
                lambda.angle_bounds[i].unwrap() < 1e-13,
                "{:?}",
                lambda.angle_bounds
            );
        }
        for (i, exact) in [158.0, 109.0, 31.5].iter().enumerate() {
            let c = lambda.cluster_of(i + 1).unwrap();
            assert!(c.lo <= 1.0 / exact && 1.0 / exact <= c.hi, "{c:?}");
        }
    }

    #[test]
    fn a_wrong_eigenvalue_or_axis_is_caught() {
        let g = [2.0, 9.0, 12.0, 13.0];
        let good = gram_spectrum(&g, Threads::One);
        // The pair of ζ = 109 (index 2) claims 109 + 1e-6: the proved enclosure still holds
        // the exact 109 and its radius covers the error.
        let mut bad = good.clone();
        bad.eig.values[2] += 1e-6;
        if let PairKind::Root { tau, .. } = &mut bad.kinds[2] {
            *tau += 1e-6;
        }
        let (_, zeta) = run(&g, &bad);
        let c = zeta.cluster_of(2).unwrap();
        assert!(c.lo <= 109.0 && 109.0 <= c.hi, "{c:?}");
        assert!(zeta.pairs[2].radius >= 1e-6 * 0.999, "{:?}", zeta.pairs[2]);
        // A wrong axis: one component off by 1e-3.
        let mut bad = good.clone();
        bad.eig.vectors[2 * 4] += 1e-3;
        let (lambda, zeta) = run(&g, &bad);
        assert!(
            zeta.angle_bounds[2].unwrap() >= 5e-4,
            "{:?}",
            zeta.angle_bounds
        );
        // The λ route's axis derived from it (Gv) is caught too; the others stay tight.
        assert!(
            lambda.angle_bounds[2].unwrap() >= 1e-5,
            "{:?}",
            lambda.angle_bounds
        );
        assert!(lambda.angle_bounds[1].unwrap() < 1e-13);
        // A wrong Helmert vector (repeated gains) is caught too.
        let g = [1.0, 1.0, 2.0];
        let mut s = gram_spectrum(&g, Threads::One);
        let i = s
            .kinds
            .iter()
            .position(|k| matches!(k, PairKind::Helmert { .. }))
            .unwrap();
        s.eig.vectors[i * 3 + 2] += 1e-4;
        let (_, zeta) = run(&g, &s);
        assert!(
            zeta.angle_bounds[i].unwrap() >= 5e-5,
            "{:?}",
            zeta.angle_bounds
        );
    }

    #[test]
    fn zeros_repeats_and_crowded_roots_are_certified() {
        for g in [
            vec![1.0, 1.0, 1.0, 2.0, 0.5],
            vec![1.0, 0.0, 2.0, 0.0, 3.0, -2.0],
            vec![1.0, 1.0 + 1e-12, 2.0, -1.0, 0.7],
            vec![1.0, 1.0 + f64::EPSILON, 3.0],
            vec![0.0, 0.0, 0.0],
            vec![1.5],
            vec![1e-100, 1.0, 3.0, 1e-50, 7.0],
        ] {
            let s = gram_spectrum(&g, Threads::One);
            let (lambda, zeta) = run(&g, &s);
            for cert in [&lambda, &zeta] {
                assert!(cert.complete(), "{g:?}");
                let covered: usize = cert.clusters.iter().map(|c| c.members.len()).sum();
                assert_eq!(covered, g.len());
                assert!(cert.clusters.windows(2).all(|w| w[0].hi < w[1].lo), "{g:?}");
            }
        }
    }

    #[test]
    fn brackets_of_many_roots_are_tight_and_thread_independent() {
        let g: Vec<f64> = (0..300)
            .map(|i| 0.5 + ((i * 37) % 101) as f64 / 50.0 + (i as f64) * 1e-9)
            .collect();
        let s = gram_spectrum(&g, Threads::One);
        let null = nullity(&g);
        let lambda = tight_form_eigen(&g, &s.eig, null);
        let one = certify(&g, &s, &lambda, null, Threads::One, &no_tick);
        let all = certify(&g, &s, &lambda, null, Threads::Pool(0), &no_tick);
        assert_eq!(one, all);
        let worst = one
            .1
            .pairs
            .iter()
            .map(|p| p.radius / p.value.max(1e-300))
            .fold(0.0, f64::max);
        assert!(worst < 1e-12, "{worst}");
    }
}
