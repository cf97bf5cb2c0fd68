//! The LayerNorm hyperellipsoid (Riechers 2024, "Geometry and Dynamics of LayerNorm").
//!
//! `LN(a) = √N·G·Πa/√(‖Πa‖² + Nε) + b`, `G = diag(g)`, `Π = I − 11ᵀ/N`. With `u = √N·Πa/√(‖Πa‖² +
//! Nε)` (a vector of `1⊥` with `‖u‖² = N‖Πa‖²/(‖Πa‖² + Nε) ≤ N`), every output is `b + Gu`:
//!
//! * it lies in the hyperplane `α·(y − b) = 0`, `α = 1/g` ([`normal`]);
//! * it lies in the ellipsoid `(y − b)ᵀQ(y − b) ≤ N`, `Q = (GΠG)⁺` (`= Π₂G⁻²Π₂` with no zero
//!   gain), on its surface when `ε = 0`;
//! * the principal axes are the eigenvectors of `Q` with semi-axes `√(N/λ)`, equivalently
//!   `√(Nζ)` for the nonzero eigenvalues `ζ` of `ΠG²Π` ([`matrices`]).
//!
//! [`analyze`] computes both routes with a floating-point eigensolver ([`decompose`]) and then
//! proves error bounds for every eigenpair ([`verify`]); for small orders it also certifies the
//! spectra exactly from the characteristic polynomials ([`exact`]). [`concentration`] gives the
//! exact law of how close to the surface the outputs land for `ε > 0` (Riechers' Figure 2),
//! [`example`] the exact worked example, [`mod@bench`] the N = 4096 timing against numpy.
//!
//! **Zero gains.** Riechers replaces `G⁻²` by the square of the Drazin inverse. That matrix,
//! `diag(1/g_n²)` on the nonzero coordinates, bounds the image but is not its ellipsoid: with `k`
//! zero gains the tight form is `G_c⁻² + α_cα_cᵀ/k` on the nonzero coordinates `c` (the
//! pseudo-inverse of `GΠG`), e.g. `g = (1, 1, 0)` gives semi-axes `√3` and `1`, not `√3, √3`.
//! This module uses the tight form and reports Riechers' lengths alongside
//! ([`Ellipsoid::drazin_semi_axes`]). With `k ≥ 2` zero gains the outputs fill the solid
//! `(N − k)`-dimensional ellipsoid even at `ε = 0`; with `k ≤ 1` they lie on its surface.

pub mod bench;
pub mod concentration;
pub mod decompose;
pub mod exact;
pub mod example;
pub mod interval;
pub mod matrices;
pub mod normal;
pub mod poly;
pub mod report;
pub mod residual;
pub mod secular;
pub mod structure;
pub mod verify;

use crate::error::{Error, Result};
use decompose::{symmetric_eigen, SymEigen, Threads};
use interval::PREC;
use matrices::IntervalOperator;
use normal::NormalSpace;
use rug::float::Round;
use rug::Float;
use verify::{Certificate, Method};

/// Orders up to this also get the exact characteristic-polynomial check.
pub const EXACT_ORDER_MAX: usize = 8;

/// Gains whose nonzero magnitudes span more than `2^MAX_GAIN_SPAN_LOG2` are rejected: the
/// matrices' entries would overflow f64.
pub const MAX_GAIN_SPAN_LOG2: i32 = 400;

/// A validated ellipsoid problem.
#[derive(Debug, Clone, PartialEq)]
pub struct EllipsoidInput {
    pub gain: Vec<f64>,
    pub bias: Vec<f64>,
    pub eps: f64,
}

impl EllipsoidInput {
    /// Checks the gains (finite, nonempty, dynamic range), the bias (same length, finite; zero
    /// when absent) and ε (finite, ≥ 0).
    pub fn new(gain: Vec<f64>, bias: Option<Vec<f64>>, eps: f64) -> Result<Self> {
        let n = gain.len();
        if n == 0 {
            return Err(Error::input("the gain vector is empty"));
        }
        if let Some(i) = gain.iter().position(|x| !x.is_finite()) {
            return Err(Error::input(format!(
                "gain[{i}] = {} is not finite",
                gain[i]
            )));
        }
        let bias = bias.unwrap_or_else(|| vec![0.0; n]);
        if bias.len() != n {
            return Err(Error::input(format!(
                "bias has length {} but the gain has length {n}",
                bias.len()
            )));
        }
        if let Some(i) = bias.iter().position(|x| !x.is_finite()) {
            return Err(Error::input(format!(
                "bias[{i}] = {} is not finite",
                bias[i]
            )));
        }
        if !eps.is_finite() || eps < 0.0 {
            return Err(Error::usage(format!(
                "eps must be finite and >= 0, got {eps}"
            )));
        }
        let nonzero: Vec<i32> = gain
            .iter()
            .filter(|&&x| x != 0.0)
            .map(|&x| crate::dtype::exponent_of(x))
            .collect();
        if let (Some(lo), Some(hi)) = (nonzero.iter().min(), nonzero.iter().max()) {
            if hi - lo > MAX_GAIN_SPAN_LOG2 {
                return Err(Error::input(format!(
                    "nonzero gains span 2^{} (more than 2^{MAX_GAIN_SPAN_LOG2}): the ellipsoid's matrices overflow f64",
                    hi - lo
                )));
            }
        }
        Ok(EllipsoidInput { gain, bias, eps })
    }

    pub fn n(&self) -> usize {
        self.gain.len()
    }
}

/// One principal axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Unit direction (an eigenvector of `Q`), sign fixed so its largest component is positive.
    pub direction: Vec<f64>,
    /// The computed length: `√(N/λ)` from the computed `λ` when it lies in the certified
    /// interval, else `√(Nζ)` from the computed `ζ` (the dense λ route loses the longest axes
    /// when the gains span many orders of magnitude), else the nearest end of the interval.
    pub semi_axis: f64,
    /// Certified enclosure of the exact semi-axis: the intersection of both routes' enclosures.
    pub semi_axis_lo: f64,
    pub semi_axis_hi: f64,
    /// The computed eigenvalue of `Q` and of `ΠG²Π` (`λζ = 1` exactly).
    pub lambda: f64,
    pub zeta: f64,
    /// `sin θ` bound between `direction` and the exact axis, when the axis is isolated.
    pub angle_bound: Option<f64>,
    /// How many axes share this one's certified cluster (> 1: repeated or nearly repeated
    /// lengths; the individual directions are then not determined, their span is).
    pub cluster_size: usize,
    /// Sine of the angle between this direction and the span of the ζ route's axes of the same
    /// cluster (a cross-check, not a certificate).
    pub route_sine: f64,
}

/// The exact characteristic-polynomial check of a small problem.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactCheck {
    /// Sturm counts agree with every certified cluster of the λ route (and its zeros).
    pub lambda_counts_match: bool,
    /// The same for the ζ route.
    pub zeta_counts_match: bool,
    /// The nonzero parts of the two characteristic polynomials are reciprocal (`λ = 1/ζ`).
    pub reciprocal: bool,
}

/// The hyperellipsoid of LayerNorm outputs, with its certificates.
#[derive(Debug, Clone, PartialEq)]
pub struct Ellipsoid {
    pub n: usize,
    pub center: Vec<f64>,
    pub eps: f64,
    pub normal: NormalSpace,
    /// Descending semi-axis length.
    pub axes: Vec<Axis>,
    /// Certificates in the scaled units (gains scaled by `2^-scale_exponent`).
    pub lambda_route: Certificate,
    pub zeta_route: Certificate,
    /// The gains were scaled by `2^-scale_exponent` (exactly) before the decompositions.
    pub scale_exponent: i32,
    /// Both routes' enclosures intersect for every axis, both spectra are fully enclosed.
    pub routes_agree: bool,
    /// Riechers' Drazin-inverse lengths, when some gain is 0 (they overshoot the image).
    pub drazin_semi_axes: Option<Vec<f64>>,
    /// The exact check, for orders up to [`EXACT_ORDER_MAX`].
    pub exact: Option<ExactCheck>,
    /// For ε > 0 and at most one zero gain: the law of `r = √((y−b)ᵀQ(y−b)/N)` for standard
    /// normal inputs.
    pub surface_law: Option<concentration::SurfaceLaw>,
}

impl Ellipsoid {
    /// Whether everything claimed was certified.
    pub fn verified(&self) -> bool {
        self.routes_agree
            && self
                .exact
                .as_ref()
                .is_none_or(|e| e.lambda_counts_match && e.zeta_counts_match && e.reciprocal)
    }

    /// The certified interval of the `i`-th smallest eigenvalue of `Q` in the original units
    /// (the scaling by `2^(−2·scale_exponent)` is exact unless it leaves f64's normal range).
    pub fn lambda_enclosure(&self, i: usize) -> Option<(f64, f64)> {
        let s = -2 * self.scale_exponent;
        self.lambda_route
            .enclosure(i)
            .map(|(lo, hi)| (libm::scalbn(lo, s), libm::scalbn(hi, s)))
    }

    /// The largest certified relative error of a semi-axis, `(hi − lo)/(2·semi_axis)`.
    pub fn max_relative_semi_axis_radius(&self) -> f64 {
        self.axes
            .iter()
            .map(|a| (a.semi_axis_hi - a.semi_axis_lo) / (2.0 * a.semi_axis))
            .fold(0.0, f64::max)
    }
}

/// Which eigensolver produces the approximations that are then certified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Solver {
    /// Dense symmetric eigensolvers on both matrices (nalgebra up to order 64, faer above):
    /// two independent decompositions.
    Dense,
    /// The O(N²) secular solver ([`secular`]) on `ΠG²Π`, the λ route derived from it
    /// (portable: the same bits on every machine and thread count).
    Secular,
}

impl std::str::FromStr for Solver {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "dense" => Ok(Solver::Dense),
            "secular" => Ok(Solver::Secular),
            other => Err(Error::usage(format!(
                "unknown solver '{other}' (dense, secular)"
            ))),
        }
    }
}

/// How to run [`analyze`].
#[derive(Clone, Copy)]
pub struct Options<'a> {
    pub threads: Threads,
    pub solver: Solver,
    /// How the pairs are certified; `None`: [`Method::Structure`] for the secular solver
    /// (O(N²)), [`Method::Residual`] for the dense one (the only method that applies to it).
    pub method: Option<Method>,
    /// Called once per verified eigenpair (both routes: `2N` calls).
    pub tick: &'a (dyn Fn() + Sync),
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            threads: Threads::One,
            solver: Solver::Secular,
            method: None,
            tick: &|| {},
        }
    }
}

/// Computes and certifies the hyperellipsoid.
pub fn analyze(input: &EllipsoidInput, opts: Options<'_>) -> Result<Ellipsoid> {
    let n = input.n();
    let scale_exponent = input
        .gain
        .iter()
        .filter(|&&x| x != 0.0)
        .map(|&x| crate::dtype::exponent_of(x))
        .max()
        .unwrap_or(0);
    let g: Vec<f64> = input
        .gain
        .iter()
        .map(|&x| libm::scalbn(x, -scale_exponent))
        .collect();
    let null = matrices::nullity(&g);

    let method = match (opts.solver, opts.method) {
        (Solver::Dense, Some(Method::Structure)) => {
            return Err(Error::usage(
                "the structure certification needs the secular solver (the dense solver is certified by residuals)",
            ))
        }
        (_, Some(m)) => m,
        (Solver::Dense, None) => Method::Residual,
        (Solver::Secular, None) => Method::Structure,
    };
    let residual = |lambda_eig: &SymEigen, zeta_eig: &SymEigen| {
        (
            verify::certify(
                &IntervalOperator::tight_form(&g),
                lambda_eig,
                opts.threads,
                opts.tick,
            ),
            verify::certify(
                &IntervalOperator::gram(&g),
                zeta_eig,
                opts.threads,
                opts.tick,
            ),
        )
    };
    let (lambda_eig, zeta_eig, (lambda_route, zeta_route)) = match opts.solver {
        Solver::Dense => {
            let lambda_eig = symmetric_eigen(n, &matrices::tight_form_dense(&g), opts.threads)?;
            let zeta_eig = symmetric_eigen(n, &matrices::gram_dense(&g), opts.threads)?;
            let routes = residual(&lambda_eig, &zeta_eig);
            (lambda_eig, zeta_eig, routes)
        }
        Solver::Secular => {
            let spectrum = secular::gram_spectrum(&g, opts.threads);
            let lambda_eig = secular::tight_form_eigen_with(&g, &spectrum.eig, null, opts.threads);
            let routes = match method {
                Method::Structure => {
                    structure::certify(&g, &spectrum, &lambda_eig, null, opts.threads, opts.tick)
                }
                Method::Residual => residual(&lambda_eig, &spectrum.eig),
            };
            (lambda_eig, spectrum.eig, routes)
        }
    };

    let route_sines = route_sines(
        &g,
        &lambda_eig,
        &lambda_route,
        &zeta_eig,
        null,
        opts.threads,
    );
    let mut axes = Vec::with_capacity(n - null);
    let mut routes_agree = lambda_route.complete() && zeta_route.complete();
    for (a, &route_sine) in route_sines.iter().enumerate() {
        let li = null + a;
        let zi = n - 1 - a;
        let (lo, hi) = semi_axis_enclosure(n, &lambda_route, li, &zeta_route, zi, scale_exponent);
        routes_agree &= lo <= hi;
        let lambda_s = lambda_eig.values[li];
        let from_lambda = libm::scalbn((n as f64 / lambda_s).sqrt(), scale_exponent);
        let from_zeta = libm::scalbn((n as f64 * zeta_eig.values[zi]).sqrt(), scale_exponent);
        let semi_axis = best_estimate(from_lambda, from_zeta, lo, hi);
        axes.push(Axis {
            direction: Vec::new(),
            semi_axis,
            semi_axis_lo: lo,
            semi_axis_hi: hi,
            lambda: libm::scalbn(lambda_s, -2 * scale_exponent),
            zeta: libm::scalbn(zeta_eig.values[zi], 2 * scale_exponent),
            angle_bound: lambda_route.angle_bounds[li],
            cluster_size: lambda_route.cluster_of(li).map_or(1, |c| c.members.len()),
            route_sine,
        });
    }
    // The directions last, after the ζ route's vectors are gone (N² doubles each).
    drop(zeta_eig);
    let fill = |(a, axis): (usize, &mut Axis)| {
        axis.direction = canonical_sign(lambda_eig.vector(null + a));
    };
    match opts.threads {
        Threads::One => axes.iter_mut().enumerate().for_each(fill),
        Threads::Pool(_) => {
            use rayon::prelude::*;
            axes.par_iter_mut().enumerate().for_each(fill)
        }
    }
    drop(lambda_eig);

    let exact =
        (n <= EXACT_ORDER_MAX).then(|| exact::check_routes(&g, &lambda_route, &zeta_route, null));
    let zero_count = matrices::zero_gains(&g).len();
    Ok(Ellipsoid {
        n,
        center: input.bias.clone(),
        eps: input.eps,
        normal: normal::normal_space(&input.gain),
        axes,
        lambda_route,
        zeta_route,
        scale_exponent,
        routes_agree,
        drazin_semi_axes: (zero_count > 0).then(|| matrices::drazin_semi_axes(&input.gain)),
        exact,
        surface_law: (input.eps > 0.0 && zero_count <= 1 && n >= 2)
            .then(|| concentration::SurfaceLaw::new(n, input.eps)),
    })
}

/// The certified interval of the semi-axis `a` (descending), from both routes, in the original
/// units. Empty (`lo > hi`) when the routes contradict each other.
fn semi_axis_enclosure(
    n: usize,
    lambda_route: &Certificate,
    li: usize,
    zeta_route: &Certificate,
    zi: usize,
    scale_exponent: i32,
) -> (f64, f64) {
    let nf = Float::with_val(PREC, n);
    let (mut lo, mut hi) = (Float::new(PREC), Float::with_val(PREC, f64::INFINITY));
    if let Some((l_lo, l_hi)) = lambda_route.enclosure(li) {
        // ℓ = √(N/λ) is decreasing in λ.
        lo = Float::with_val_round(PREC, &nf / l_hi, Round::Down)
            .0
            .sqrt_round_owned(Round::Down);
        if l_lo > 0.0 {
            hi = Float::with_val_round(PREC, &nf / l_lo, Round::Up)
                .0
                .sqrt_round_owned(Round::Up);
        }
    }
    if let Some((z_lo, z_hi)) = zeta_route.enclosure(zi) {
        // ℓ = √(Nζ).
        if z_lo > 0.0 {
            let l = Float::with_val_round(PREC, &nf * z_lo, Round::Down)
                .0
                .sqrt_round_owned(Round::Down);
            if l > lo {
                lo = l;
            }
        }
        let h = Float::with_val_round(PREC, &nf * z_hi, Round::Up)
            .0
            .sqrt_round_owned(Round::Up);
        if h < hi {
            hi = h;
        }
    }
    (
        libm::scalbn(lo.to_f64_round(Round::Down), scale_exponent),
        libm::scalbn(hi.to_f64_round(Round::Up), scale_exponent),
    )
}

/// The first of the two computed lengths that lies in the certified `[lo, hi]`, else the first
/// clamped into it (when the interval is empty the routes disagree and nothing is certified).
fn best_estimate(from_lambda: f64, from_zeta: f64, lo: f64, hi: f64) -> f64 {
    let inside = |x: f64| lo <= x && x <= hi;
    if inside(from_lambda) {
        from_lambda
    } else if inside(from_zeta) {
        from_zeta
    } else {
        let x = if from_lambda.is_nan() {
            from_zeta
        } else {
            from_lambda
        };
        if lo <= hi {
            x.clamp(lo, hi)
        } else {
            x
        }
    }
}

trait SqrtRoundOwned {
    fn sqrt_round_owned(self, round: Round) -> Float;
}

impl SqrtRoundOwned for Float {
    fn sqrt_round_owned(mut self, round: Round) -> Float {
        self.sqrt_round(round);
        self
    }
}

/// Flips `v` so that its largest-magnitude component (the first, on ties) is positive.
pub fn canonical_sign(v: &[f64]) -> Vec<f64> {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if x.abs() > v[best].abs() {
            best = i;
        }
    }
    if v.get(best).is_some_and(|&x| x < 0.0) {
        v.iter().map(|x| -x).collect()
    } else {
        v.to_vec()
    }
}

/// The `route_sine` of every axis: the distance of the ζ route's unit axis `h = Gv/‖Gv‖` from
/// the span of the λ route's axes of the same cluster, `‖h − Σ_j (h·w_j) w_j‖` (for an
/// isolated axis, the sine of the angle between the two directions, without the cancellation
/// of `√(1 − cos²)`).
fn route_sines(
    g: &[f64],
    lambda_eig: &SymEigen,
    lambda_route: &Certificate,
    zeta_eig: &SymEigen,
    null: usize,
    threads: Threads,
) -> Vec<f64> {
    let n = g.len();
    let sine = |a: usize| {
        let zi = n - 1 - a;
        let gv: Vec<f64> = zeta_eig
            .vector(zi)
            .iter()
            .zip(g)
            .map(|(v, gi)| v * gi)
            .collect();
        let norm = gv.iter().map(|x| x * x).sum::<f64>().sqrt();
        let mut rest: Vec<f64> = gv.iter().map(|x| x / norm).collect();
        let li = null + a;
        let members = lambda_route
            .cluster_of(li)
            .map_or(li..li + 1, |c| c.members.clone());
        // The axis' own partner first; the rest of a cluster only while the remainder is not
        // yet at rounding level (projecting out more can only shrink it further, and a large
        // cluster would cost N per member per axis).
        let others = members.filter(|&j| j >= null && j != li);
        for j in std::iter::once(li).chain(others) {
            let w = lambda_eig.vector(j);
            let c: f64 = w.iter().zip(&rest).map(|(x, y)| x * y).sum();
            for (r, x) in rest.iter_mut().zip(w) {
                *r -= c * x;
            }
            if rest.iter().map(|x| x * x).sum::<f64>() <= (16.0 * f64::EPSILON).powi(2) {
                break;
            }
        }
        rest.iter().map(|x| x * x).sum::<f64>().sqrt()
    };
    match threads {
        Threads::One => (0..n - null).map(sine).collect(),
        Threads::Pool(_) => {
            use rayon::prelude::*;
            (0..n - null).into_par_iter().map(sine).collect()
        }
    }
}

/// The whole result as the JSON object `normoracle ellipsoid --json` prints: `normal` (unit
/// vector, or null when the normal space has dimension ≠ 1), `normal_space`, `axes` (unit
/// vectors) and `semi_axes`, descending, plus the certificates.
pub fn to_json(e: &Ellipsoid) -> serde_json::Value {
    use serde_json::json;
    let cert = |c: &Certificate| {
        json!({
            "method": c.method.name(),
            "max_pair_residual": c.pairs.iter().map(|p| p.residual_upper).try_fold(0.0, |m: f64, r| r.map(|r| m.max(r))),
            "max_pair_radius": c.max_pair_radius(),
            "residual_frobenius": c.residual_frobenius_upper,
            "orthonormality_defect": c.orthonormality_defect_upper,
            "max_cluster_radius": c.max_cluster_radius(),
            "clusters": c.clusters.len(),
            "complete": c.complete(),
        })
    };
    json!({
        "n": e.n,
        "eps": e.eps,
        "center": e.center,
        "normal": e.normal.unit_normal(),
        "normal_space": e.normal.basis,
        "zero_gains": e.normal.zero_gains,
        "axes": e.axes.iter().map(|a| &a.direction).collect::<Vec<_>>(),
        "semi_axes": e.axes.iter().map(|a| a.semi_axis).collect::<Vec<_>>(),
        "semi_axes_certified": e.axes.iter().map(|a| [a.semi_axis_lo, a.semi_axis_hi]).collect::<Vec<_>>(),
        "lambda": e.axes.iter().map(|a| a.lambda).collect::<Vec<_>>(),
        "zeta": e.axes.iter().map(|a| a.zeta).collect::<Vec<_>>(),
        "axis_sine_bounds": e.axes.iter().map(|a| a.angle_bound).collect::<Vec<_>>(),
        "cluster_sizes": e.axes.iter().map(|a| a.cluster_size).collect::<Vec<_>>(),
        "verification": {
            "verified": e.verified(),
            "routes_agree": e.routes_agree,
            "scale_exponent": e.scale_exponent,
            "lambda_route": cert(&e.lambda_route),
            "zeta_route": cert(&e.zeta_route),
            "max_relative_semi_axis_radius": e.max_relative_semi_axis_radius(),
            "max_route_sine": e.axes.iter().map(|a| a.route_sine).fold(0.0, f64::max),
            "exact": e.exact.as_ref().map(|x| json!({
                "lambda_counts_match": x.lambda_counts_match,
                "zeta_counts_match": x.zeta_counts_match,
                "reciprocal": x.reciprocal,
            })),
        },
        "drazin_semi_axes": e.drazin_semi_axes,
        "surface_law": e.surface_law.as_ref().map(|l| l.to_json()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(g: &[f64], solver: Solver) -> Ellipsoid {
        let input = EllipsoidInput::new(g.to_vec(), None, 1e-5).unwrap();
        analyze(
            &input,
            Options {
                solver,
                ..Options::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn gains_spanning_many_orders_are_certified_with_either_solver() {
        let g = [1e-100, 1.0, 3.0, 1e-50, 7.0];
        for solver in [Solver::Dense, Solver::Secular] {
            let e = run(&g, solver);
            assert!(e.verified(), "{solver:?}");
            let longest = e.axes[0].semi_axis;
            for a in &e.axes {
                assert!(
                    a.semi_axis_lo <= a.semi_axis && a.semi_axis <= a.semi_axis_hi,
                    "{solver:?}: {a:?}"
                );
                // Residual bounds are absolute: an axis 1e-50 of the longest is enclosed, not
                // resolved; the others are resolved to ~1e-15.
                if a.semi_axis > 1e-3 * longest {
                    let width = a.semi_axis_hi - a.semi_axis_lo;
                    assert!(width <= 1e-14 * a.semi_axis, "{solver:?}: {a:?}");
                }
            }
        }
    }

    #[test]
    fn power_of_two_scaling_is_exact() {
        let g = [0.3, -1.7, 2.2, 0.9, 1.1];
        let scaled: Vec<f64> = g.iter().map(|x| x * 1024.0).collect();
        for solver in [Solver::Dense, Solver::Secular] {
            let a = run(&g, solver);
            let b = run(&scaled, solver);
            for (x, y) in a.axes.iter().zip(&b.axes) {
                assert_eq!(x.semi_axis * 1024.0, y.semi_axis);
                assert_eq!(x.semi_axis_lo * 1024.0, y.semi_axis_lo);
                assert_eq!(x.direction, y.direction);
            }
        }
    }

    #[test]
    fn inputs_are_validated() {
        assert!(EllipsoidInput::new(vec![], None, 0.0).is_err());
        assert!(EllipsoidInput::new(vec![1.0, f64::INFINITY], None, 0.0).is_err());
        assert!(EllipsoidInput::new(vec![1.0, 2.0], Some(vec![0.0]), 0.0).is_err());
        assert!(EllipsoidInput::new(vec![1.0, 2.0], Some(vec![0.0, f64::NAN]), 0.0).is_err());
        assert!(EllipsoidInput::new(vec![1.0, 2.0], None, -1e-5).is_err());
        assert!(EllipsoidInput::new(vec![1e-200, 1e200], None, 0.0).is_err());
        assert!("qr".parse::<Solver>().is_err());
    }

    #[test]
    fn the_json_object_has_the_documented_keys() {
        let j = to_json(&run(&[2.0, 9.0, 12.0, 13.0], Solver::Secular));
        for key in [
            "normal",
            "axes",
            "semi_axes",
            "normal_space",
            "verification",
        ] {
            assert!(j.get(key).is_some(), "{key}");
        }
        let lengths: Vec<f64> = j["semi_axes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert!(lengths.windows(2).all(|w| w[0] >= w[1]));
    }
}
