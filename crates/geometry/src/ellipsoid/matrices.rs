//! The two symmetric matrices whose spectra give the hyperellipsoid, as dense f64 matrices (for
//! the eigensolver) and as structured interval operators (for the rigorous residuals).
//!
//! With `G = diag(g)`, `Π = I − 11ᵀ/N`, `Z = {n : g_n = 0}`, `k = |Z|`:
//!
//! * the λ route: the quadratic form `Q` of the ellipsoid, `Q = (GΠG)⁺`. With no zero gain it
//!   is Riechers' `Π₂G⁻²Π₂`, `Π₂ = I − ααᵀ/αᵀα`, `α = 1/g`. With `1 ≤ k < N` zero gains it is,
//!   on the coordinates `Zᶜ`, `G_c⁻² + α_cα_cᵀ/k` (zero on `Z`): the Sherman–Morrison inverse of
//!   `G_c(I − 11ᵀ/N)G_c`. Semi-axis `√(N/λ)` for each nonzero eigenvalue `λ`.
//! * the ζ route: the Gram matrix `K = ΠG²Π` of the map `u ↦ Gu` on `1⊥`. Semi-axis `√(Nζ)`
//!   for each nonzero eigenvalue `ζ`, axis `Gv/‖Gv‖` for its eigenvector `v`.
//!
//! Both have nullity `max(k, 1)` (for `k < N`) and `λ = 1/ζ` pairs their nonzero eigenvalues.
//! Riechers' zero-gain prescription (square of the Drazin inverse, `Π₂ = I − Σ_Z e_n e_nᵀ`)
//! gives `diag(1/g_n²)` on `Zᶜ` instead of `Q`; it bounds the image but is not tight (see
//! [`drazin_semi_axes`]).

use super::interval::Interval;

/// The indices of the zero gains, ascending.
pub fn zero_gains(g: &[f64]) -> Vec<usize> {
    (0..g.len()).filter(|&i| g[i] == 0.0).collect()
}

/// The number of zero eigenvalues of `Q` and of `K`: `max(k, 1)`, or `N` when every gain is 0.
pub fn nullity(g: &[f64]) -> usize {
    let k = zero_gains(g).len();
    if k == g.len() {
        g.len()
    } else {
        k.max(1)
    }
}

/// `Q = (GΠG)⁺`, dense, column-major (symmetric, so the layout is moot).
pub fn tight_form_dense(g: &[f64]) -> Vec<f64> {
    let n = g.len();
    let mut q = vec![0.0; n * n];
    let zeros = zero_gains(g);
    let k = zeros.len();
    if k == n {
        return q;
    }
    let alpha: Vec<f64> = g
        .iter()
        .map(|&x| if x == 0.0 { 0.0 } else { 1.0 / x })
        .collect();
    if k == 0 {
        // Π₂ D Π₂ with D = diag(α²) and the unit normal u = α/‖α‖:
        // D − (Duuᵀ + uuᵀD) + u(uᵀDu)uᵀ. Written with u, no intermediate exceeds max α²
        // (α⁴ would overflow for gains spanning more than 2^256).
        let norm = alpha.iter().map(|a| a * a).sum::<f64>().sqrt();
        let u: Vec<f64> = alpha.iter().map(|a| a / norm).collect();
        let d: Vec<f64> = alpha.iter().map(|a| a * a).collect();
        let udu: f64 = u.iter().zip(&d).map(|(x, y)| x * x * y).sum();
        for j in 0..n {
            for i in 0..n {
                let mut v = -(d[i] * u[i] * u[j] + u[i] * u[j] * d[j]) + u[i] * udu * u[j];
                if i == j {
                    v += d[i];
                }
                q[i + j * n] = v;
            }
        }
    } else {
        let inv_k = 1.0 / k as f64;
        for j in 0..n {
            for i in 0..n {
                if g[i] == 0.0 || g[j] == 0.0 {
                    continue;
                }
                let mut v = alpha[i] * alpha[j] * inv_k;
                if i == j {
                    v += alpha[i] * alpha[i];
                }
                q[i + j * n] = v;
            }
        }
    }
    q
}

/// `K = ΠG²Π`, dense: `K_ij = δ_ij d_i − (d_i + d_j)/N + Σd/N²`, `d = g²`.
pub fn gram_dense(g: &[f64]) -> Vec<f64> {
    let n = g.len();
    let nf = n as f64;
    let d: Vec<f64> = g.iter().map(|x| x * x).collect();
    let sum_d: f64 = d.iter().sum();
    let mut k = vec![0.0; n * n];
    for j in 0..n {
        for i in 0..n {
            let mut v = sum_d / (nf * nf) - (d[i] + d[j]) / nf;
            if i == j {
                v += d[i];
            }
            k[i + j * n] = v;
        }
    }
    k
}

/// Riechers' literal zero-gain semi-axes: `√N·|g_n|` along `e_n` for every nonzero gain (from
/// `diag(1/g_n²)` on `Zᶜ`), descending. They contain the image but overshoot it whenever a
/// gain is 0: with `g = (1, 0)` the outputs are `b ± (1, 0)`, not `b ± (√2, 0)`.
pub fn drazin_semi_axes(g: &[f64]) -> Vec<f64> {
    let root_n = (g.len() as f64).sqrt();
    let mut v: Vec<f64> = g
        .iter()
        .filter(|&&x| x != 0.0)
        .map(|x| root_n * x.abs())
        .collect();
    v.sort_by(|a, b| b.total_cmp(a));
    v
}

/// A symmetric matrix given by its structure, applied with outward-rounded interval arithmetic:
/// the product encloses the exact product of the exact matrix (defined by the f64 gains) with
/// an f64 vector.
#[derive(Clone, Debug)]
pub enum IntervalOperator {
    /// `P D P`, `P = I − aaᵀ/(aᵀa)`.
    ProjectedDiagonal {
        a: Vec<Interval>,
        a_norm2: Interval,
        d: Vec<Interval>,
    },
    /// `D + c·aaᵀ` on the coordinates `support`, zero elsewhere.
    DiagonalPlusRankOne {
        n: usize,
        support: Vec<usize>,
        d: Vec<Interval>,
        a: Vec<Interval>,
        c: Interval,
    },
    /// The zero matrix of order `n`.
    Zero { n: usize },
}

impl IntervalOperator {
    /// The operator of `Q` (the λ route).
    pub fn tight_form(g: &[f64]) -> Self {
        let n = g.len();
        let zeros = zero_gains(g);
        let k = zeros.len();
        if k == n {
            return IntervalOperator::Zero { n };
        }
        if k == 0 {
            let a: Vec<Interval> = g.iter().map(|&x| Interval::recip_of(x)).collect();
            let d: Vec<Interval> = a.iter().map(|x| x.mul(x)).collect();
            let mut a_norm2 = Interval::zero();
            for x in &d {
                a_norm2.add_assign(x);
            }
            IntervalOperator::ProjectedDiagonal { a, a_norm2, d }
        } else {
            let support: Vec<usize> = (0..n).filter(|&i| g[i] != 0.0).collect();
            let a: Vec<Interval> = support.iter().map(|&i| Interval::recip_of(g[i])).collect();
            let d: Vec<Interval> = a.iter().map(|x| x.mul(x)).collect();
            let c = Interval::from_rational(&rug::Rational::from((1, k as u64)));
            IntervalOperator::DiagonalPlusRankOne {
                n,
                support,
                d,
                a,
                c,
            }
        }
    }

    /// The operator of `K = ΠG²Π` (the ζ route).
    pub fn gram(g: &[f64]) -> Self {
        let n = g.len();
        let a = vec![Interval::point(1.0); n];
        let a_norm2 = Interval::point(n as f64);
        let d = g.iter().map(|&x| Interval::point(x).mul_f64(x)).collect();
        IntervalOperator::ProjectedDiagonal { a, a_norm2, d }
    }

    pub fn order(&self) -> usize {
        match self {
            IntervalOperator::ProjectedDiagonal { d, .. } => d.len(),
            IntervalOperator::DiagonalPlusRankOne { n, .. } | IntervalOperator::Zero { n } => *n,
        }
    }

    /// An enclosure of `A v`.
    pub fn apply(&self, v: &[f64]) -> Vec<Interval> {
        match self {
            IntervalOperator::ProjectedDiagonal { a, a_norm2, d } => {
                let pv = project(a, a_norm2, v.iter().map(|&x| Interval::point(x)).collect());
                let dpv = pv.iter().zip(d).map(|(x, di)| x.mul(di)).collect();
                project(a, a_norm2, dpv)
            }
            IntervalOperator::DiagonalPlusRankOne {
                n,
                support,
                d,
                a,
                c,
            } => {
                let mut dot = Interval::zero();
                for (ai, &i) in a.iter().zip(support) {
                    dot.add_assign(&ai.mul_f64(v[i]));
                }
                let scaled = dot.mul(c);
                let mut out = vec![Interval::zero(); *n];
                for (j, &i) in support.iter().enumerate() {
                    out[i] = d[j].mul_f64(v[i]).add(&a[j].mul(&scaled));
                }
                out
            }
            IntervalOperator::Zero { n } => vec![Interval::zero(); *n],
        }
    }
}

/// `x − a (aᵀx)/(aᵀa)`.
fn project(a: &[Interval], a_norm2: &Interval, x: Vec<Interval>) -> Vec<Interval> {
    let mut dot = Interval::zero();
    for (ai, xi) in a.iter().zip(&x) {
        dot.add_assign(&ai.mul(xi));
    }
    let c = dot.div(a_norm2);
    x.iter()
        .zip(a)
        .map(|(xi, ai)| xi.sub(&ai.mul(&c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rug::Rational;

    /// The exact rational matrices, written independently of the dense builders: `Q` as the
    /// pseudo-inverse's defining products and `K` as Π·G²·Π multiplied out.
    fn exact_products(g: &[f64], m: &[f64], v: &[f64]) -> (Vec<Rational>, Vec<Rational>) {
        let n = g.len();
        let r = |x: f64| Rational::from_f64(x).unwrap();
        // m v exactly (m given in f64: the dense matrix as computed).
        let mv: Vec<Rational> = (0..n)
            .map(|i| (0..n).map(|j| r(m[i + j * n]) * r(v[j])).sum())
            .collect();
        // K v exactly: Π D Π v.
        let mean = |x: &[Rational]| x.iter().cloned().sum::<Rational>() / Rational::from(n as u64);
        let vr: Vec<Rational> = v.iter().map(|&x| r(x)).collect();
        let m1 = mean(&vr);
        let pv: Vec<Rational> = vr.iter().map(|x| Rational::from(x - &m1)).collect();
        let dpv: Vec<Rational> = pv
            .iter()
            .zip(g)
            .map(|(x, &gi)| x.clone() * r(gi * gi))
            .collect();
        let m2 = mean(&dpv);
        let kv = dpv.iter().map(|x| Rational::from(x - &m2)).collect();
        (mv, kv)
    }

    #[test]
    fn interval_gram_product_encloses_the_exact_product() {
        let g = [0.75, -1.5, 2.0, 0.0, 3.25];
        let v = [0.1, -0.7, 0.3, 0.2, 0.05];
        let (_, kv) = exact_products(&g, &gram_dense(&g), &v);
        let enc = IntervalOperator::gram(&g).apply(&v);
        for (e, x) in enc.iter().zip(&kv) {
            assert!(e.contains(x), "{e:?} misses {x}");
        }
    }

    #[test]
    fn tight_form_inverts_g_pi_g_on_its_range() {
        // Q·(GΠG)·Q = Q and (GΠG)·Q·(GΠG) = GΠG, checked on vectors with the dense f64 Q
        // against the exact products (the f64 entries are within rounding of the exact ones).
        for g in [
            vec![1.0, 2.0, -0.5, 4.0],
            vec![1.0, 0.0, 2.0, 0.0, 3.0],
            vec![2.0, 0.0, 1.0],
        ] {
            let n = g.len();
            let q = tight_form_dense(&g);
            let gpg = |x: &[f64]| {
                let gx: Vec<f64> = x.iter().zip(&g).map(|(a, b)| a * b).collect();
                let m = gx.iter().sum::<f64>() / n as f64;
                gx.iter()
                    .zip(&g)
                    .map(|(a, b)| (a - m) * b)
                    .collect::<Vec<f64>>()
            };
            let qmul = |x: &[f64]| {
                (0..n)
                    .map(|i| (0..n).map(|j| q[i + j * n] * x[j]).sum())
                    .collect::<Vec<f64>>()
            };
            let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37 + 0.1).sin()).collect();
            let y = gpg(&x);
            let back = gpg(&qmul(&y));
            for (a, b) in back.iter().zip(&y) {
                assert!((a - b).abs() < 1e-12, "{g:?}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn interval_tight_form_encloses_the_dense_form_up_to_its_rounding() {
        for g in [vec![1.0, 2.0, -0.5, 4.0], vec![1.0, 0.0, 2.0, 0.0, 3.0]] {
            let v: Vec<f64> = (0..g.len()).map(|i| 0.3 - 0.1 * i as f64).collect();
            let (qv_dense, _) = exact_products(&g, &tight_form_dense(&g), &v);
            let enc = IntervalOperator::tight_form(&g).apply(&v);
            for (e, x) in enc.iter().zip(&qv_dense) {
                let lo = e.lo().to_f64();
                let hi = e.hi().to_f64();
                assert!(hi - lo < 1e-30);
                assert!((x.to_f64() - lo).abs() < 1e-14, "{x} vs [{lo}, {hi}]");
            }
        }
    }

    #[test]
    fn nullity_and_drazin_lengths() {
        assert_eq!(nullity(&[1.0, 2.0, 3.0]), 1);
        assert_eq!(nullity(&[1.0, 0.0, 3.0]), 1);
        assert_eq!(nullity(&[0.0, 0.0, 3.0]), 2);
        assert_eq!(nullity(&[0.0, 0.0]), 2);
        assert_eq!(drazin_semi_axes(&[1.0, 0.0]), vec![2f64.sqrt()]);
    }
}
