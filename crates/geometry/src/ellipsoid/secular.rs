//! An O(N²) eigensolver for the ellipsoid's matrices that uses their structure instead of a
//! dense decomposition (see [`super::exact`] for the derivation). With `d = g²` grouped into
//! distinct values `δ_1 < … < δ_m` of multiplicities `m_j`, the eigenpairs of `K = ΠDΠ` are
//!
//! * `ζ = 0` with `1/√N`;
//! * `ζ = δ_j` (`m_j − 1` times) with Helmert vectors on the group (zero sum);
//! * one root `ζ` of `Σ_j m_j/(δ_j − ζ) = 0` in each gap `(δ_j, δ_{j+1})`, with
//!   `v_n ∝ 1/(d_n − ζ)`.
//!
//! Each root is found by bisection relative to its nearer pole (`ζ = δ_o + τ`), with the
//! differences `δ_j − δ_o = (|g_j| − |g_o|)(|g_j| + |g_o|)` formed to full relative accuracy,
//! so the eigenvector components are accurate even for roots crowding a pole. Only IEEE
//! `+ − × ÷ √` in a fixed order are used and each root is independent, so the result is the
//! same on every machine and for every thread count. Like the dense solvers, its output is an
//! approximation whose error [`super::verify`] then bounds rigorously.

use super::decompose::{SymEigen, Threads};
use rayon::prelude::*;

/// Groups of equal `|g|`: `(|g|, indices)`, ascending.
fn groups(g: &[f64]) -> Vec<(f64, Vec<usize>)> {
    let mut order: Vec<usize> = (0..g.len()).collect();
    order.sort_by(|&a, &b| g[a].abs().total_cmp(&g[b].abs()));
    let mut out: Vec<(f64, Vec<usize>)> = Vec::new();
    for i in order {
        let a = g[i].abs();
        match out.last_mut() {
            Some((v, members)) if *v == a => members.push(i),
            _ => out.push((a, vec![i])),
        }
    }
    out
}

/// `|g_j|² − |g_o|²` to full relative accuracy.
pub fn pole_difference(gj: f64, go: f64) -> f64 {
    (gj - go) * (gj + go)
}

/// `Σ_j m_j/(Δ_j − τ)` (fixed order).
fn secular(delta: &[f64], mult: &[f64], tau: f64) -> f64 {
    delta.iter().zip(mult).map(|(d, m)| m / (d - tau)).sum()
}

/// `F(τ) = τ·f(τ) = −m_o + τ·r(τ)` and `F'(τ) = r + τ r'`, where `r` sums the terms of every
/// pole but the origin `o` (`Δ_o = 0`): `F` has no pole at the origin, so Newton's method
/// converges fast even for roots crowding it.
fn scaled_secular(delta: &[f64], mult: &[f64], origin: usize, tau: f64) -> (f64, f64) {
    let (mut r, mut dr) = (0.0, 0.0);
    for (j, (d, m)) in delta.iter().zip(mult).enumerate() {
        if j != origin {
            let inv = 1.0 / (d - tau);
            r += m * inv;
            dr += m * inv * inv;
        }
    }
    (tau * r - mult[origin], r + tau * dr)
}

/// The root in the gap between groups `i` and `i + 1`: `(origin group, τ)` with
/// `ζ = δ_origin + τ`.
fn root_in_gap(levels: &[f64], mult: &[f64], i: usize) -> (usize, f64) {
    let half = 0.5 * pole_difference(levels[i + 1], levels[i]);
    let from_left: Vec<f64> = levels
        .iter()
        .map(|&x| pole_difference(x, levels[i]))
        .collect();
    // f is increasing on the gap; its sign at the midpoint picks the nearer pole as origin.
    // `neg`/`pos` bracket the root with F(neg) < 0 < F(pos) (F(0) = −m_o < 0).
    let (origin, delta, pos) = if secular(&from_left, mult, half) >= 0.0 {
        (i, from_left, half)
    } else {
        let from_right: Vec<f64> = levels
            .iter()
            .map(|&x| pole_difference(x, levels[i + 1]))
            .collect();
        let lo = (from_right[i] + half).min(-0.0);
        (i + 1, from_right, lo)
    };
    let (mut neg, mut pos) = (0.0f64, pos);
    let mut tau = 0.5 * pos;
    for _ in 0..200 {
        let (f, df) = scaled_secular(&delta, mult, origin, tau);
        if f == 0.0 {
            break;
        }
        if f < 0.0 {
            neg = tau;
        } else {
            pos = tau;
        }
        let (a, b) = (neg.min(pos), neg.max(pos));
        let newton = tau - f / df;
        let next = if newton > a && newton < b {
            newton
        } else {
            0.5 * (a + b)
        };
        if next == tau
            || (next - tau).abs() <= 2.0 * f64::EPSILON * next.abs()
            || next <= a
            || next >= b
        {
            tau = next.clamp(a, b);
            break;
        }
        tau = next;
    }
    (origin, tau)
}

/// Which exact eigenpair of `ΠG²Π` a computed pair approximates (the structure above): what
/// [`super::structure`] certifies it against.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PairKind {
    /// `ζ = 0`, eigenvector `1` (exactly).
    Ones,
    /// `ζ = δ_group`, the `k`-th Helmert vector of the group (`1` on its first `k` members,
    /// `−k` on member `k`), exactly.
    Helmert { group: usize, k: usize },
    /// The root of the secular equation in the gap above group `gap`, computed as
    /// `ζ = δ_origin + tau` (`origin` is `gap` or `gap + 1`).
    Root { gap: usize, origin: usize, tau: f64 },
}

/// The secular decomposition with its structure: the groups of equal `|g|` and, for every
/// computed pair (ascending, as in `eig`), the exact pair it approximates.
#[derive(Debug, Clone, PartialEq)]
pub struct GramSpectrum {
    pub eig: SymEigen,
    pub kinds: Vec<PairKind>,
    /// Distinct `|g|`, ascending, and the indices holding each.
    pub groups: Vec<(f64, Vec<usize>)>,
}

impl GramSpectrum {
    /// The distinct `|g|`, ascending.
    pub fn levels(&self) -> Vec<f64> {
        self.groups.iter().map(|(a, _)| *a).collect()
    }

    /// The multiplicities of the levels, as f64.
    pub fn multiplicities(&self) -> Vec<f64> {
        self.groups.iter().map(|(_, m)| m.len() as f64).collect()
    }

    /// For every coordinate, its group.
    pub fn group_of(&self) -> Vec<usize> {
        let n = self.eig.n;
        let mut out = vec![0; n];
        for (j, (_, members)) in self.groups.iter().enumerate() {
            for &i in members {
                out[i] = j;
            }
        }
        out
    }
}

/// The eigendecomposition of `ΠG²Π` (ascending eigenvalues, unit eigenvectors).
pub fn gram_eigen(g: &[f64], threads: Threads) -> SymEigen {
    gram_spectrum(g, threads).eig
}

/// [`gram_eigen`] with the structure of every pair. The roots are found in parallel with
/// [`Threads::Pool`], each independently, and every vector is filled from its pair's
/// description: the bits do not depend on the thread count.
pub fn gram_spectrum(g: &[f64], threads: Threads) -> GramSpectrum {
    let n = g.len();
    let groups = groups(g);
    let levels: Vec<f64> = groups.iter().map(|(a, _)| *a).collect();
    let mult: Vec<f64> = groups.iter().map(|(_, m)| m.len() as f64).collect();
    let mut pairs: Vec<(f64, PairKind)> = Vec::with_capacity(n);
    pairs.push((0.0, PairKind::Ones));
    for (group, (a, members)) in groups.iter().enumerate() {
        for k in 1..members.len() {
            pairs.push((a * a, PairKind::Helmert { group, k }));
        }
    }
    let solve = |i: usize| {
        let (origin, tau) = root_in_gap(&levels, &mult, i);
        let go = levels[origin];
        (
            go * go + tau,
            PairKind::Root {
                gap: i,
                origin,
                tau,
            },
        )
    };
    let gaps = levels.len().saturating_sub(1);
    let roots: Vec<(f64, PairKind)> = match threads {
        Threads::One => (0..gaps).map(solve).collect(),
        Threads::Pool(_) => (0..gaps).into_par_iter().map(solve).collect(),
    };
    pairs.extend(roots);
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let fill = |v: &mut [f64], kind: &PairKind| match *kind {
        PairKind::Ones => v.fill(1.0 / (n as f64).sqrt()),
        PairKind::Helmert { group, k } => {
            // (1, …, 1, −k, 0, …)/√(k(k+1)) on the group.
            let members = &groups[group].1;
            let s = 1.0 / ((k * (k + 1)) as f64).sqrt();
            for &i in &members[..k] {
                v[i] = s;
            }
            v[members[k]] = -(k as f64) * s;
        }
        PairKind::Root { origin, tau, .. } => {
            let go = levels[origin];
            for (a, members) in &groups {
                let c = 1.0 / (pole_difference(*a, go) - tau);
                for &m in members {
                    v[m] = c;
                }
            }
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            for x in v.iter_mut() {
                *x /= norm;
            }
        }
    };
    let mut vectors = vec![0.0; n * n];
    match threads {
        Threads::One => vectors
            .chunks_mut(n.max(1))
            .zip(&pairs)
            .for_each(|(v, p)| fill(v, &p.1)),
        Threads::Pool(_) => vectors
            .par_chunks_mut(n.max(1))
            .zip(&pairs)
            .for_each(|(v, p)| fill(v, &p.1)),
    }
    GramSpectrum {
        eig: SymEigen {
            n,
            values: pairs.iter().map(|p| p.0).collect(),
            vectors,
        },
        kinds: pairs.iter().map(|p| p.1).collect(),
        groups,
    }
}

/// The eigendecomposition of `Q = (GΠG)⁺` derived from that of `ΠG²Π`: `λ = 1/ζ` with axis
/// `Gv/‖Gv‖` for every `ζ ≠ 0`, and the normal space (`α/‖α‖` or the zero-gain `e_n`) for
/// `λ = 0`. The zero eigenvalues of `K` are known by construction (the first `nullity`).
pub fn tight_form_eigen(g: &[f64], gram: &SymEigen, nullity: usize) -> SymEigen {
    tight_form_eigen_with(g, gram, nullity, Threads::One)
}

/// [`tight_form_eigen`], the axes filled in parallel with [`Threads::Pool`] (the same bits).
pub fn tight_form_eigen_with(
    g: &[f64],
    gram: &SymEigen,
    nullity: usize,
    threads: Threads,
) -> SymEigen {
    let n = g.len();
    let mut values = Vec::with_capacity(n);
    let mut vectors = vec![0.0; n * n];
    let zeros: Vec<usize> = (0..n).filter(|&i| g[i] == 0.0).collect();
    if zeros.is_empty() {
        let alpha: Vec<f64> = g.iter().map(|x| 1.0 / x).collect();
        let norm = alpha.iter().map(|x| x * x).sum::<f64>().sqrt();
        values.push(0.0);
        for (v, a) in vectors.iter_mut().zip(&alpha) {
            *v = a / norm;
        }
    } else {
        for (j, &z) in zeros.iter().take(nullity).enumerate() {
            values.push(0.0);
            vectors[j * n + z] = 1.0;
        }
    }
    // Descending ζ gives ascending λ.
    values.extend((nullity..n).rev().map(|i| 1.0 / gram.values[i]));
    let axis = |(j, out): (usize, &mut [f64])| {
        let v = gram.vector(n - 1 - (j - nullity));
        for ((o, x), gi) in out.iter_mut().zip(v).zip(g) {
            *o = x * gi;
        }
        let norm = out.iter().map(|x| x * x).sum::<f64>().sqrt();
        for o in out.iter_mut() {
            *o /= norm;
        }
    };
    if n > 0 {
        let rest = &mut vectors[nullity * n..];
        match threads {
            Threads::One => rest
                .chunks_mut(n)
                .enumerate()
                .map(|(k, c)| (k + nullity, c))
                .for_each(axis),
            Threads::Pool(_) => rest
                .par_chunks_mut(n)
                .enumerate()
                .map(|(k, c)| (k + nullity, c))
                .for_each(axis),
        }
    }
    SymEigen { n, values, vectors }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ellipsoid::matrices::{gram_dense, nullity, tight_form_dense};

    fn max_residual(n: usize, a: &[f64], e: &SymEigen) -> f64 {
        (0..n)
            .map(|k| {
                let v = e.vector(k);
                (0..n)
                    .map(|i| {
                        ((0..n).map(|j| a[i + j * n] * v[j]).sum::<f64>() - e.values[k] * v[i])
                            .abs()
                    })
                    .fold(0.0, f64::max)
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn the_worked_example_spectrum_is_found() {
        let g = [2.0, 9.0, 12.0, 13.0];
        let e = gram_eigen(&g, Threads::One);
        let want = [0.0, 31.5, 109.0, 158.0];
        for (x, w) in e.values.iter().zip(want) {
            assert!((x - w).abs() <= 1e-12 * w.max(1.0), "{x} vs {w}");
        }
        assert!(max_residual(4, &gram_dense(&g), &e) < 1e-12);
        let q = tight_form_eigen(&g, &e, 1);
        assert!(max_residual(4, &tight_form_dense(&g), &q) < 1e-14);
    }

    #[test]
    fn zeros_repeats_and_near_repeats_are_handled() {
        for g in [
            vec![1.0, 1.0, 1.0, 2.0, 0.5],
            vec![1.0, 0.0, 2.0, 0.0, 3.0, -2.0],
            vec![1.0, 1.0 + 1e-12, 2.0, -1.0, 0.7],
            vec![0.0, 0.0, 0.0],
            vec![1.5],
        ] {
            let n = g.len();
            let e = gram_eigen(&g, Threads::One);
            assert_eq!(e.values.len(), n);
            assert!(e.values.windows(2).all(|w| w[0] <= w[1]));
            assert!(max_residual(n, &gram_dense(&g), &e) < 1e-12, "{g:?}");
            let q = tight_form_eigen(&g, &e, nullity(&g));
            let scale = tight_form_dense(&g)
                .iter()
                .fold(1.0f64, |m, x| m.max(x.abs()));
            assert!(
                max_residual(n, &tight_form_dense(&g), &q) < 1e-12 * scale,
                "{g:?}"
            );
        }
    }

    #[test]
    fn results_do_not_depend_on_threads() {
        let g: Vec<f64> = (0..200)
            .map(|i| 0.5 + ((i * 37) % 101) as f64 / 50.0)
            .collect();
        assert_eq!(
            gram_eigen(&g, Threads::One),
            gram_eigen(&g, Threads::Pool(0))
        );
    }
}
