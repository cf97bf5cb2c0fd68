//! How close to the surface LayerNorm's outputs land (Riechers 2024, Figure 2), and the exact
//! law they follow.
//!
//! With `u = √N·Πa/√(‖Πa‖² + Nε)`, every output has `(y − b)ᵀQ(y − b) = ‖u‖²` (at most one zero
//! gain), so
//!
//! `r := √((y − b)ᵀQ(y − b)/N) = √(σ²/(σ² + ε))`,  `σ² = ‖Πa‖²/N` (the row variance):
//!
//! the shrink factor of the normalization. `r = 1` exactly at `ε = 0`. For inputs
//! `a ~ N(0, I_N)`, Cochran's theorem gives `T := Nσ² = ‖Πa‖² ~ χ²_{N−1}`, and `r` is increasing
//! in `T`, so
//!
//! `P(r ≤ ρ) = F_{χ²_{N−1}}(Nερ²/(1 − ρ²))`,  `r_p = √(t_p/(t_p + Nε))`, `t_p` the χ² quantile.
//!
//! The χ² distribution function is the regularized incomplete gamma function `P((N−1)/2, t/2)`,
//! evaluated here with the series / continued fraction in plain f64 and the pure-Rust `libm`,
//! so the law's numbers are the same on every machine. Samples use `ChaCha8Rng` and
//! Box–Muller through `libm` for the same reason.

use crate::error::{Error, Result};
use crate::output::format::Table;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// The values of ε in Riechers' Figure 2.
pub const FIGURE_EPS: [f64; 3] = [1e-1, 1e-3, 1e-5];

/// Significance level of the Kolmogorov–Smirnov comparison of samples and law.
pub const KS_ALPHA: f64 = 1e-3;

/// The regularized lower incomplete gamma function `P(a, x)`, `a > 0`, `x ≥ 0`.
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x.is_infinite() {
        return 1.0;
    }
    let log_prefactor = -x + a * libm::log(x) - libm::lgamma(a);
    if x < a + 1.0 {
        // Σ xⁿ/(a(a+1)…(a+n)): converges fast for x < a + 1.
        let mut term = 1.0 / a;
        let mut sum = term;
        let mut k = a;
        for _ in 0..100_000 {
            k += 1.0;
            term *= x / k;
            sum += term;
            if term.abs() <= sum.abs() * 1e-17 {
                break;
            }
        }
        (sum * libm::exp(log_prefactor)).min(1.0)
    } else {
        1.0 - gamma_q_continued_fraction(a, x, log_prefactor)
    }
}

/// `Q(a, x) = 1 − P(a, x)` by the Legendre continued fraction (modified Lentz), `x ≥ a + 1`.
fn gamma_q_continued_fraction(a: f64, x: f64, log_prefactor: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..100_000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < TINY {
            d = TINY;
        }
        c = b + an / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() <= 1e-17 {
            break;
        }
    }
    (libm::exp(log_prefactor) * h).clamp(0.0, 1.0)
}

/// The χ²_k distribution function.
pub fn chi2_cdf(k: usize, t: f64) -> f64 {
    gamma_p(k as f64 / 2.0, t / 2.0)
}

/// The χ²_k density.
pub fn chi2_pdf(k: usize, t: f64) -> f64 {
    if t <= 0.0 {
        return 0.0;
    }
    let h = k as f64 / 2.0;
    libm::exp((h - 1.0) * libm::log(t) - t / 2.0 - h * std::f64::consts::LN_2 - libm::lgamma(h))
}

/// The χ²_k quantile, by bisection on [`chi2_cdf`] (deterministic, to f64 resolution).
pub fn chi2_quantile(k: usize, p: f64) -> f64 {
    assert!(
        (0.0..1.0).contains(&p) && k > 0,
        "chi2_quantile: p = {p}, k = {k}"
    );
    if p == 0.0 {
        return 0.0;
    }
    let mut hi = k as f64 + 1.0;
    while chi2_cdf(k, hi) < p {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..2000 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if chi2_cdf(k, mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The law of `r` for `N`-dimensional standard normal inputs at a given ε > 0.
#[derive(Debug, Clone, PartialEq)]
pub struct SurfaceLaw {
    pub n: usize,
    pub eps: f64,
}

impl SurfaceLaw {
    pub fn new(n: usize, eps: f64) -> Self {
        assert!(n >= 2 && eps > 0.0, "the law needs N ≥ 2 and ε > 0");
        SurfaceLaw { n, eps }
    }

    fn n_eps(&self) -> f64 {
        self.n as f64 * self.eps
    }

    /// `P(r ≤ ρ)`.
    pub fn cdf(&self, rho: f64) -> f64 {
        if rho <= 0.0 {
            return 0.0;
        }
        if rho >= 1.0 {
            return 1.0;
        }
        let t = self.n_eps() * rho * rho / ((1.0 - rho) * (1.0 + rho));
        chi2_cdf(self.n - 1, t)
    }

    /// `P(1 − r ≤ δ)`: the mass within relative distance δ of the surface.
    pub fn cdf_of_gap(&self, delta: f64) -> f64 {
        1.0 - self.cdf(1.0 - delta)
    }

    /// The `p`-quantile of `1 − r`'s complement: `1 − r_p`, computed without cancellation as
    /// `(Nε/(t + Nε))/(1 + r_p)`.
    pub fn gap_at_quantile(&self, p: f64) -> f64 {
        let t = chi2_quantile(self.n - 1, p);
        let s = self.n_eps() / (t + self.n_eps());
        let r = (t / (t + self.n_eps())).sqrt();
        s / (1.0 + r)
    }

    /// The `p`-quantile of `r`.
    pub fn quantile(&self, p: f64) -> f64 {
        let t = chi2_quantile(self.n - 1, p);
        (t / (t + self.n_eps())).sqrt()
    }

    /// The density of `x = log10(1 − r)`.
    pub fn log_gap_density(&self, x: f64) -> f64 {
        let gap = libm::pow(10.0, x);
        let rho = 1.0 - gap;
        if rho <= 0.0 {
            return 0.0;
        }
        let one_minus_rho2 = gap * (1.0 + rho);
        let t = self.n_eps() * rho * rho / one_minus_rho2;
        let dt_drho = 2.0 * self.n_eps() * rho / (one_minus_rho2 * one_minus_rho2);
        chi2_pdf(self.n - 1, t) * dt_drho * gap * std::f64::consts::LN_10
    }

    pub fn to_json(&self) -> serde_json::Value {
        let quantiles: Vec<serde_json::Value> = [0.01, 0.5, 0.99]
            .iter()
            .map(|&p| serde_json::json!({"p": p, "one_minus_r": self.gap_at_quantile(p)}))
            .collect();
        serde_json::json!({
            "n": self.n,
            "eps": self.eps,
            "law": "r^2 = T/(T + N eps), T ~ chi2(N-1)",
            "one_minus_r_quantiles": quantiles,
        })
    }
}

/// Seeded standard normal samples (Box–Muller, `libm`, `ChaCha8Rng`).
pub struct Normal {
    rng: ChaCha8Rng,
    spare: Option<f64>,
}

impl Normal {
    pub fn new(seed: u64) -> Self {
        Normal {
            rng: ChaCha8Rng::seed_from_u64(seed),
            spare: None,
        }
    }

    /// Uniform in `(0, 1]`.
    fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    pub fn sample(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let radius = (-2.0 * libm::log(self.uniform())).sqrt();
        let angle = 2.0 * std::f64::consts::PI * self.uniform();
        self.spare = Some(radius * libm::sin(angle));
        radius * libm::cos(angle)
    }
}

/// What to sample.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcentrationParams {
    pub n: usize,
    pub samples: usize,
    pub seed: u64,
    pub eps: Vec<f64>,
    /// Gains (no zero gain); `None`: seeded gains uniform in [0.5, 1.5].
    pub gain: Option<Vec<f64>>,
}

impl ConcentrationParams {
    /// Riechers' Figure 2 setting: N = 3, ε ∈ {1e-1, 1e-3, 1e-5}.
    pub fn figure(seed: u64) -> Self {
        ConcentrationParams {
            n: 3,
            samples: 20_000,
            seed,
            eps: FIGURE_EPS.to_vec(),
            gain: None,
        }
    }
}

/// The empirical distribution of `r` for one ε, against its law.
#[derive(Debug, Clone, PartialEq)]
pub struct EpsSample {
    pub law: SurfaceLaw,
    /// `1 − r` of every sample, ascending.
    pub gaps: Vec<f64>,
    /// Kolmogorov–Smirnov distance between the samples of `r` and the law.
    pub ks: f64,
}

impl EpsSample {
    /// The empirical `p`-quantile of `1 − r`'s complement (the order statistic of `r` at
    /// rank `⌈p·n⌉`, i.e. of `1 − r` at rank `n + 1 − ⌈p·n⌉`).
    pub fn gap_at_quantile(&self, p: f64) -> f64 {
        let n = self.gaps.len();
        let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
        self.gaps[n - rank]
    }
}

/// The whole experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Concentration {
    pub params: ConcentrationParams,
    pub gain: Vec<f64>,
    pub bias: Vec<f64>,
    pub per_eps: Vec<EpsSample>,
}

/// The two-sided KS critical value at level `alpha` for `n` samples (asymptotic).
pub fn ks_critical(n: usize, alpha: f64) -> f64 {
    (-(alpha / 2.0).ln() / 2.0).sqrt() / (n as f64).sqrt()
}

impl Concentration {
    /// Every ε's samples are within the KS critical value of the law.
    pub fn pass(&self) -> bool {
        self.per_eps
            .iter()
            .all(|s| s.ks < ks_critical(s.gaps.len(), KS_ALPHA))
    }
}

/// Draws the samples: `a ~ N(0, I_N)`, `y = LN(a)` (f64, two-pass variance, ε inside), and
/// `r = √(Σ((y_n − b_n)/g_n)²/N)` from the outputs themselves.
pub fn run(params: &ConcentrationParams, tick: &dyn Fn()) -> Result<Concentration> {
    let n = params.n;
    if n < 2 {
        return Err(Error::usage("the concentration law needs N >= 2"));
    }
    if params.samples == 0 {
        return Err(Error::usage("need at least one sample"));
    }
    if let Some(e) = params.eps.iter().find(|e| !(e.is_finite() && **e > 0.0)) {
        return Err(Error::usage(format!(
            "every eps must be finite and > 0, got {e}"
        )));
    }
    let mut normal = Normal::new(params.seed);
    let gain = match &params.gain {
        Some(g) => {
            if g.len() != n {
                return Err(Error::input(format!(
                    "gain has length {} but N = {n}",
                    g.len()
                )));
            }
            if g.iter().any(|x| !x.is_finite() || *x == 0.0) {
                return Err(Error::input(
                    "the concentration experiment needs finite nonzero gains",
                ));
            }
            g.clone()
        }
        None => (0..n).map(|_| 0.5 + normal.uniform()).collect(),
    };
    let bias: Vec<f64> = (0..n).map(|_| 0.1 * normal.sample()).collect();
    let mut per_eps = Vec::with_capacity(params.eps.len());
    let mut a = vec![0.0; n];
    for &eps in &params.eps {
        let law = SurfaceLaw::new(n, eps);
        let mut gaps = Vec::with_capacity(params.samples);
        let mut rs = Vec::with_capacity(params.samples);
        for _ in 0..params.samples {
            for x in a.iter_mut() {
                *x = normal.sample();
            }
            let mean = a.iter().sum::<f64>() / n as f64;
            let var = a.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
            let inv = 1.0 / (var + eps).sqrt();
            let mut q = 0.0;
            for i in 0..n {
                let y = gain[i] * (a[i] - mean) * inv + bias[i];
                let z = (y - bias[i]) / gain[i];
                q += z * z;
            }
            let r = (q / n as f64).sqrt();
            rs.push(r);
            gaps.push(1.0 - r);
            tick();
        }
        rs.sort_by(f64::total_cmp);
        gaps.sort_by(f64::total_cmp);
        let m = rs.len() as f64;
        let ks = rs
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                let f = law.cdf(r);
                ((i + 1) as f64 / m - f).max(f - i as f64 / m)
            })
            .fold(0.0, f64::max);
        per_eps.push(EpsSample { law, gaps, ks });
    }
    Ok(Concentration {
        params: params.clone(),
        gain,
        bias,
        per_eps,
    })
}

/// Riechers' Figure 2 as reproducible artifacts: the table and the SVG for
/// [`ConcentrationParams::figure`] with the given seed.
pub fn figure_artifacts(seed: u64) -> Result<(Table, String)> {
    let c = run(&ConcentrationParams::figure(seed), &|| {})?;
    Ok((table(&c), svg(&c)?))
}

/// Quantiles reported in the table.
pub const TABLE_QUANTILES: [f64; 5] = [0.01, 0.1, 0.5, 0.9, 0.99];

/// The table: for each ε and quantile `p`, `1 − r` at the empirical and the law quantile of `r`;
/// then one row per ε with the KS distance and its critical value.
pub fn table(c: &Concentration) -> Table {
    let mut t = Table::new([
        "eps",
        "quantile of r",
        "1 - r (samples)",
        "1 - r (law)",
        "ratio",
    ]);
    t.comment(format!(
        "LayerNorm surface concentration (Riechers 2024, Fig. 2): r = sqrt((y-b)^T G^-2 (y-b) / N), N = {}, {} samples per eps, seed {}",
        c.params.n, c.params.samples, c.params.seed
    ));
    t.comment("law: r^2 = T/(T + N eps) with T = N sigma^2 ~ chi2(N-1) for a ~ N(0, I_N); r = 1 exactly at eps = 0");
    for s in &c.per_eps {
        t.comment(format!(
            "eps = {:e}: Kolmogorov-Smirnov D = {:.5} vs critical {:.5} (alpha = {KS_ALPHA}) -> {}",
            s.law.eps,
            s.ks,
            ks_critical(s.gaps.len(), KS_ALPHA),
            if s.ks < ks_critical(s.gaps.len(), KS_ALPHA) {
                "consistent"
            } else {
                "REJECTED"
            }
        ));
    }
    for s in &c.per_eps {
        for &p in &TABLE_QUANTILES {
            let emp = s.gap_at_quantile(p);
            let law = s.law.gap_at_quantile(p);
            t.push([
                format!("{:e}", s.law.eps),
                format!("{p}"),
                format!("{emp:.4e}"),
                format!("{law:.4e}"),
                format!("{:.4}", emp / law),
            ]);
        }
    }
    t
}

/// The figure: the density of `log10(1 − r)` per ε, samples (step histogram) against the law
/// (smooth curve).
pub fn svg(c: &Concentration) -> Result<String> {
    use plotters::prelude::*;
    let all: Vec<f64> = c
        .per_eps
        .iter()
        .flat_map(|s| s.gaps.iter().copied())
        .filter(|&g| g > 0.0)
        .map(libm::log10)
        .collect();
    if all.is_empty() {
        return Err(Error::input("no sample landed off the surface (all r = 1)"));
    }
    let x_lo = all.iter().copied().fold(f64::INFINITY, f64::min).floor();
    let x_hi = all
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max)
        .ceil()
        .min(0.0)
        .max(x_lo + 1.0);
    let bins = 40 * (x_hi - x_lo) as usize;
    let width = (x_hi - x_lo) / bins as f64;
    let histograms: Vec<Vec<f64>> = c
        .per_eps
        .iter()
        .map(|s| {
            let mut h = vec![0.0; bins];
            for &g in s.gaps.iter().filter(|&&g| g > 0.0) {
                let b = (((libm::log10(g) - x_lo) / width) as usize).min(bins - 1);
                h[b] += 1.0;
            }
            h.iter()
                .map(|x| x / (s.gaps.len() as f64 * width))
                .collect()
        })
        .collect();
    let curves: Vec<Vec<(f64, f64)>> = c
        .per_eps
        .iter()
        .map(|s| {
            (0..=4 * bins)
                .map(|i| {
                    let x = x_lo + (x_hi - x_lo) * i as f64 / (4 * bins) as f64;
                    (x, s.law.log_gap_density(x))
                })
                .collect()
        })
        .collect();
    let y_hi = histograms
        .iter()
        .flatten()
        .copied()
        .chain(curves.iter().flatten().map(|p| p.1))
        .fold(0.0, f64::max)
        * 1.45; // headroom for the legend above the curves
    let colors = [
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0x94, 0x67, 0xbd),
    ];
    let mut out = String::new();
    let draw = |out: &mut String| -> std::result::Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::with_string(out, (900, 540)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "LayerNorm outputs near the ellipsoid surface, N = {} (Riechers 2024, Fig. 2)",
                    c.params.n
                ),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x_lo..x_hi, 0.0..y_hi)?;
        chart
            .configure_mesh()
            .x_desc("log10(1 - r),  r = sqrt((y-b)^T G^-2 (y-b) / N)")
            .y_desc("density")
            .draw()?;
        for (i, s) in c.per_eps.iter().enumerate() {
            let color = colors[i % colors.len()];
            let steps: Vec<(f64, f64)> = histograms[i]
                .iter()
                .enumerate()
                .flat_map(|(b, &h)| {
                    let x0 = x_lo + b as f64 * width;
                    [(x0, h), (x0 + width, h)]
                })
                .collect();
            chart
                .draw_series(LineSeries::new(steps, color.mix(0.55).stroke_width(1)))?
                .label(format!("eps = {:e}: samples", s.law.eps))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.mix(0.55)));
            chart
                .draw_series(LineSeries::new(curves[i].clone(), color.stroke_width(2)))?
                .label(format!("eps = {:e}: law (chi2, N-1 dof)", s.law.eps))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw(&mut out).map_err(|e| Error::io(format!("drawing the SVG: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rug::Float;

    #[test]
    fn chi2_cdf_matches_closed_forms_and_mpfr() {
        // Even k: 1 − e^{−t/2} Σ_{j<k/2} (t/2)^j/j!.
        for k in [2usize, 4, 10] {
            for t in [0.1, 1.0, 3.0, 9.0, 30.0] {
                let h = t / 2.0;
                let mut term = 1.0;
                let mut sum = 0.0;
                for j in 0..k / 2 {
                    if j > 0 {
                        term *= h / j as f64;
                    }
                    sum += term;
                }
                let want = 1.0 - (-h).exp() * sum;
                let got = chi2_cdf(k, t);
                assert!((got - want).abs() < 1e-14, "k={k} t={t}: {got} vs {want}");
            }
        }
        // Odd and large k against MPFR's incomplete gamma: P(a, x) = 1 − Γ(a, x)/Γ(a).
        for (k, t) in [
            (1usize, 0.3),
            (3, 2.0),
            (767, 700.0),
            (767, 830.0),
            (4095, 4000.0),
        ] {
            let a = Float::with_val(256, k as f64 / 2.0);
            let x = Float::with_val(256, t / 2.0);
            let upper = a.clone().gamma_inc(&x);
            let gamma_a = a.clone().gamma();
            let ratio = Float::with_val(256, &upper / &gamma_a);
            let want: f64 = (Float::with_val(256, 1) - ratio).to_f64();
            let got = chi2_cdf(k, t);
            assert!((got - want).abs() < 1e-12, "k={k} t={t}: {got} vs {want}");
        }
    }

    #[test]
    fn quantiles_invert_the_cdf() {
        for k in [1usize, 2, 5, 100] {
            for p in [0.001, 0.3, 0.5, 0.99] {
                let t = chi2_quantile(k, p);
                assert!((chi2_cdf(k, t) - p).abs() < 1e-12, "k={k} p={p}");
            }
        }
        let law = SurfaceLaw::new(3, 1e-3);
        for p in [0.01, 0.5, 0.99] {
            let r = law.quantile(p);
            assert!((law.cdf(r) - p).abs() < 1e-9);
            assert!((1.0 - r - law.gap_at_quantile(p)).abs() < 1e-12);
        }
    }

    #[test]
    fn the_law_for_n3_is_exponential() {
        // N = 3: T ~ χ²₂ = Exp(1/2): P(r ≤ ρ) = 1 − exp(−3ερ²/(2(1 − ρ²))).
        let law = SurfaceLaw::new(3, 1e-1);
        for rho in [0.2, 0.5, 0.9, 0.99] {
            let want = 1.0 - (-0.3f64 * rho * rho / (2.0 * (1.0 - rho * rho))).exp();
            assert!((law.cdf(rho) - want).abs() < 1e-14);
        }
        // The density of log10(1 − r) integrates to 1.
        let mut total = 0.0;
        let step = 1e-3;
        let mut x = -9.0;
        while x < 0.0 {
            total += law.log_gap_density(x + step / 2.0) * step;
            x += step;
        }
        assert!((total - 1.0).abs() < 1e-4, "{total}");
    }

    #[test]
    fn samples_follow_the_law_and_a_wrong_law_is_rejected() {
        let params = ConcentrationParams {
            samples: 4000,
            ..ConcentrationParams::figure(7)
        };
        let c = run(&params, &|| {}).unwrap();
        assert!(
            c.pass(),
            "{:?}",
            c.per_eps.iter().map(|s| s.ks).collect::<Vec<_>>()
        );
        // The same samples against the law of another N must fail: the test can go red.
        let mut wrong = c.clone();
        for s in wrong.per_eps.iter_mut() {
            let law = SurfaceLaw::new(5, s.law.eps);
            let m = s.gaps.len() as f64;
            let mut rs: Vec<f64> = s.gaps.iter().map(|g| 1.0 - g).collect();
            rs.sort_by(f64::total_cmp);
            s.ks = rs
                .iter()
                .enumerate()
                .map(|(i, &r)| ((i + 1) as f64 / m - law.cdf(r)).max(law.cdf(r) - i as f64 / m))
                .fold(0.0, f64::max);
        }
        assert!(!wrong.pass());
        // Smaller ε puts the outputs closer to the surface: medians of 1 − r fall ~100× per step.
        let med: Vec<f64> = c.per_eps.iter().map(|s| s.gap_at_quantile(0.5)).collect();
        assert!(med[0] > 50.0 * med[1] && med[1] > 50.0 * med[2], "{med:?}");
    }

    #[test]
    fn the_experiment_is_deterministic_and_the_outputs_render() {
        let params = ConcentrationParams {
            samples: 500,
            ..ConcentrationParams::figure(11)
        };
        let a = run(&params, &|| {}).unwrap();
        let b = run(&params, &|| {}).unwrap();
        assert_eq!(a, b);
        let t = table(&a).markdown();
        assert!(t.contains("| 1e-5 | 0.5 |"), "{t}");
        let s = svg(&a).unwrap();
        assert!(s.starts_with("<svg") && s.contains("log10(1 - r)"));
        assert!(run(
            &ConcentrationParams {
                n: 1,
                ..params.clone()
            },
            &|| {}
        )
        .is_err());
        assert!(run(
            &ConcentrationParams {
                eps: vec![0.0],
                ..params
            },
            &|| {}
        )
        .is_err());
    }
}
