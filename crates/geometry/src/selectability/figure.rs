//! Brody, Alon, Yahav (2023) Figure 1c/1d redone with exact certificates.
//!
//! For every cell (d, n) of the grid and every run, n keys are drawn iid N(0, 1) and rounded to
//! f32 (the authors' dtype), optionally normalized (exactly: normalized keys are kept as
//! w_j/√q_j), and every key is decided with a verified certificate. Each cell reports both
//! readings of the figure:
//!
//! * `p_any_unselectable`: the fraction of runs with at least one unselectable key (what the
//!   authors' script plots);
//! * `mean_fraction_unselectable`: the mean over runs of (unselectable keys)/n (what the
//!   caption says).
//!
//! Generation is portable and independent of thread count: run r of cell (d, n) draws from a
//! ChaCha8 stream seeded with the 32 bytes (seed, d, n, r) (little-endian u64s), turned into
//! normals by Box–Muller with the pure-Rust `libm`.

use super::certificate;
use super::decide::{decide_plain, Decision, Method, Options};
use super::decide_scaled::decide_scaled;
use super::keys::{KeySet, NormSpec, ScaledKeySet};
use crate::error::{Error, Result};
use crate::output::format::Table;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use std::ops::RangeInclusive;

/// `n·d` values iid N(0, 1), rounded to f32, for run `run` of cell (d, n) under `seed`.
pub fn gaussian_keys(seed: u64, d: usize, n: usize, run: usize) -> Vec<f64> {
    let mut bytes = [0u8; 32];
    for (chunk, v) in bytes
        .chunks_mut(8)
        .zip([seed, d as u64, n as u64, run as u64])
    {
        chunk.copy_from_slice(&v.to_le_bytes());
    }
    let mut rng = ChaCha8Rng::from_seed(bytes);
    let unit = |rng: &mut ChaCha8Rng| (rng.next_u64() >> 11) as f64 * crate::dtype::pow2(-53);
    let mut out = Vec::with_capacity(n * d + 1);
    while out.len() < n * d {
        // u1 ∈ (0, 1] keeps the logarithm finite.
        let u1 = 1.0 - unit(&mut rng);
        let u2 = unit(&mut rng);
        let r = libm::sqrt(-2.0 * libm::log(u1));
        let theta = 2.0 * std::f64::consts::PI * u2;
        out.push(r * libm::cos(theta));
        out.push(r * libm::sin(theta));
    }
    out.truncate(n * d);
    out.into_iter().map(|x| x as f32 as f64).collect()
}

/// The keys of run `run` of cell (d, n) as an (n, d) f32 array, for `unselectable sample`.
pub fn sample_npy(seed: u64, d: usize, n: usize, run: usize) -> Result<crate::npy::NpyArray> {
    if d == 0 || n == 0 {
        return Err(Error::usage("sample needs d ≥ 1 and n ≥ 1"));
    }
    let data = gaussian_keys(seed, d, n, run)
        .into_iter()
        .map(|x| x as f32)
        .collect();
    crate::npy::NpyArray::new(vec![n, d], crate::npy::NpyData::F32(data))
}

/// What the figure command computes.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureParams {
    pub d: RangeInclusive<usize>,
    pub n: RangeInclusive<usize>,
    pub runs: usize,
    pub seed: u64,
    pub norm: NormSpec,
    /// Also run the simple exact checker (`certificate.rs`) on every certificate.
    pub audit: bool,
    pub options: Options,
}

impl FigureParams {
    /// The authors' grid: d 3..15, n 3..60, 100 runs, seed 123.
    pub fn paper(norm: NormSpec) -> Self {
        FigureParams {
            d: 3..=15,
            n: 3..=60,
            runs: 100,
            seed: 123,
            norm,
            audit: false,
            options: Options::default(),
        }
    }

    /// The grid the snapshot test pins: d 3..8, n 3..30, 20 runs, seed 123.
    pub fn reduced(norm: NormSpec) -> Self {
        FigureParams {
            d: 3..=8,
            n: 3..=30,
            runs: 20,
            ..Self::paper(norm)
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.d.is_empty() || *self.d.start() == 0 {
            return Err(Error::usage(
                "--d must be a nonempty range of dimensions ≥ 1",
            ));
        }
        if self.n.is_empty() || *self.n.start() == 0 {
            return Err(Error::usage(
                "--n must be a nonempty range of key counts ≥ 1",
            ));
        }
        if self.runs == 0 {
            return Err(Error::usage("--runs must be at least 1"));
        }
        Ok(())
    }

    /// Cells in table order (d major, n minor).
    pub fn cells(&self) -> Vec<(usize, usize)> {
        self.d
            .clone()
            .flat_map(|d| self.n.clone().map(move |n| (d, n)))
            .collect()
    }
}

/// One cell's counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub d: usize,
    pub n: usize,
    pub runs: usize,
    /// Runs with at least one unselectable key.
    pub runs_with_unselectable: usize,
    /// Unselectable keys over all runs.
    pub unselectable: usize,
    /// Verdicts per pipeline stage (indexed like `Method::ALL`).
    pub by_method: [usize; 6],
}

impl Cell {
    /// The fraction of runs with at least one unselectable key.
    pub fn p_any(&self) -> f64 {
        self.runs_with_unselectable as f64 / self.runs as f64
    }

    /// The mean over runs of the fraction of unselectable keys.
    pub fn mean_fraction(&self) -> f64 {
        self.unselectable as f64 / (self.n * self.runs) as f64
    }
}

/// Decides one key set drawn for (d, n, run), returning the decisions.
pub fn decide_run(params: &FigureParams, d: usize, n: usize, run: usize) -> Result<Vec<Decision>> {
    let data = gaussian_keys(params.seed, d, n, run);
    let keys = KeySet::new(n, d, data, None)?;
    match params.norm {
        NormSpec::None => {
            let ds = decide_plain(&keys, &params.options);
            if params.audit {
                for (i, dec) in ds.iter().enumerate() {
                    certificate::check_plain(&keys, i, &dec.certificate).map_err(|e| {
                        Error::input(format!("audit: cell d={d} n={n} run {run} key {i}: {e}"))
                    })?;
                }
            }
            Ok(ds)
        }
        NormSpec::Norm(norm) => {
            let scaled = ScaledKeySet::normalize(&keys, norm, None)?;
            let ds = decide_scaled(&scaled, &params.options)?;
            if params.audit {
                for (i, dec) in ds.iter().enumerate() {
                    certificate::check_scaled(&scaled, i, &dec.certificate).map_err(|e| {
                        Error::input(format!("audit: cell d={d} n={n} run {run} key {i}: {e}"))
                    })?;
                }
            }
            Ok(ds)
        }
    }
}

fn run_cell(params: &FigureParams, d: usize, n: usize) -> Result<Cell> {
    let mut cell = Cell {
        d,
        n,
        runs: params.runs,
        runs_with_unselectable: 0,
        unselectable: 0,
        by_method: [0; 6],
    };
    for run in 0..params.runs {
        let ds = decide_run(params, d, n, run)?;
        let bad = ds.iter().filter(|x| !x.selectable()).count();
        cell.unselectable += bad;
        cell.runs_with_unselectable += usize::from(bad > 0);
        for dec in &ds {
            let k = Method::ALL
                .iter()
                .position(|m| *m == dec.method)
                .expect("listed");
            cell.by_method[k] += 1;
        }
    }
    Ok(cell)
}

/// Verdicts per pipeline stage over all cells, e.g. `key-as-query 1758885, float-lp 274946`
/// (implementation detail, so it is printed by the CLI rather than pinned in the table).
pub fn stage_summary(cells: &[Cell]) -> String {
    let mut methods = [0usize; 6];
    for c in cells {
        for (m, k) in methods.iter_mut().zip(c.by_method) {
            *m += k;
        }
    }
    Method::ALL
        .iter()
        .zip(methods)
        .filter(|(_, k)| *k > 0)
        .map(|(m, k)| format!("{} {k}", m.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every cell of the grid, in table order. `tick` is called once per finished cell (from
/// worker threads). The result does not depend on the number of threads.
pub fn run_grid(params: &FigureParams, tick: &(dyn Fn() + Sync)) -> Result<Vec<Cell>> {
    params.validate()?;
    // Larger cells first, so the slowest work does not start last.
    let mut order: Vec<(usize, (usize, usize))> = params.cells().into_iter().enumerate().collect();
    order.sort_by_key(|(_, (d, n))| std::cmp::Reverse(n * d));
    let mut done: Vec<(usize, Cell)> = order
        .par_iter()
        .map(|&(k, (d, n))| {
            let cell = run_cell(params, d, n);
            tick();
            cell.map(|c| (k, c))
        })
        .collect::<Result<_>>()?;
    done.sort_by_key(|(k, _)| *k);
    Ok(done.into_iter().map(|(_, c)| c).collect())
}

fn range_text(r: &RangeInclusive<usize>) -> String {
    format!("{}..{}", r.start(), r.end())
}

/// The figure's data as a table: columns d, n, runs, p_any_unselectable,
/// mean_fraction_unselectable (6 decimals), with the parameters and totals as comments.
pub fn figure_table(params: &FigureParams, cells: &[Cell]) -> Table {
    let mut t = Table::new([
        "d",
        "n",
        "runs",
        "p_any_unselectable",
        "mean_fraction_unselectable",
    ]);
    t.comment("normoracle unselectable figure (Brody, Alon, Yahav 2023, Figure 1c/1d)");
    t.comment(format!(
        "d {} n {} runs {} seed {} norm {}",
        range_text(&params.d),
        range_text(&params.n),
        params.runs,
        params.seed,
        params.norm.name()
    ));
    t.comment(
        "keys iid N(0,1) rounded to f32: ChaCha8 seeded (seed, d, n, run) + Box-Muller (libm)",
    );
    t.comment("every verdict carries a certificate verified in exact rational arithmetic");
    t.comment(
        "p_any_unselectable = runs with >= 1 unselectable key / runs (the authors' plot); \
         mean_fraction_unselectable = mean over runs of unselectable/n (the caption)",
    );
    let keys: usize = cells.iter().map(|c| c.n * c.runs).sum();
    let bad: usize = cells.iter().map(|c| c.unselectable).sum();
    t.comment(format!("keys {keys}, unselectable {bad}"));
    for c in cells {
        t.push([
            c.d.to_string(),
            c.n.to_string(),
            c.runs.to_string(),
            format!("{:.6}", c.p_any()),
            format!("{:.6}", c.mean_fraction()),
        ]);
    }
    t
}

/// The reproducible artifact: run the grid (no progress display) and return the table and
/// the SVG heatmap, e.g. `figure_artifact(&FigureParams::reduced(NormSpec::None))`.
pub fn figure_artifact(params: &FigureParams) -> Result<(Table, String)> {
    let cells = run_grid(params, &|| {})?;
    Ok((figure_table(params, &cells), heatmap_svg(params, &cells)?))
}

/// A colour from white (0) through orange to dark red (1).
fn heat(v: f64) -> plotters::style::RGBColor {
    let v = v.clamp(0.0, 1.0);
    let stops = [
        (255.0, 255.0, 255.0),
        (253.0, 174.0, 97.0),
        (215.0, 48.0, 39.0),
        (103.0, 0.0, 13.0),
    ];
    let x = v * (stops.len() - 1) as f64;
    let k = (x.floor() as usize).min(stops.len() - 2);
    let t = x - k as f64;
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    plotters::style::RGBColor(
        lerp(stops[k].0, stops[k + 1].0),
        lerp(stops[k].1, stops[k + 1].1),
        lerp(stops[k].2, stops[k + 1].2),
    )
}

/// Two heatmaps side by side (x: n, y: d): the probability of any unselectable key and the
/// mean fraction of unselectable keys. SVG only; text is written as SVG text elements.
pub fn heatmap_svg(params: &FigureParams, cells: &[Cell]) -> Result<String> {
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 520)).into_drawing_area();
        let fail = |e: &dyn std::fmt::Display| Error::io(format!("drawing the heatmap: {e}"));
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let (left, right) = root.split_horizontally(600);
        // Cells centred on integer (n, d), so the tick labels sit in the middle of their row.
        let (n0, n1) = (*params.n.start() as f64 - 0.5, *params.n.end() as f64 + 0.5);
        let (d0, d1) = (*params.d.start() as f64 - 0.5, *params.d.end() as f64 + 0.5);
        let panels = [
            (
                &left,
                "P(a run has an unselectable key)",
                Cell::p_any as fn(&Cell) -> f64,
            ),
            (
                &right,
                "mean fraction of unselectable keys",
                Cell::mean_fraction,
            ),
        ];
        for (area, title, value) in panels {
            let caption = format!(
                "{title}: norm {}, {} runs, seed {}",
                params.norm.name(),
                params.runs,
                params.seed
            );
            let mut chart = ChartBuilder::on(area)
                .caption(caption, ("sans-serif", 14))
                .margin(10)
                .x_label_area_size(35)
                .y_label_area_size(35)
                .build_cartesian_2d(n0..n1, d0..d1)
                .map_err(|e| fail(&e))?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_desc("n (keys); colour: white 0 to dark red 1")
                .y_desc("d (dimension)")
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| format!("{y:.0}"))
                .draw()
                .map_err(|e| fail(&e))?;
            chart
                .draw_series(cells.iter().map(|c| {
                    let (x, y) = (c.n as f64, c.d as f64);
                    Rectangle::new(
                        [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                        heat(value(c)).filled(),
                    )
                }))
                .map_err(|e| fail(&e))?;
        }
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}

/// The cost-per-key benchmark: one key set per (d, n) (run 0 of the figure's generator),
/// decided `repeat` times; the median wall time, the time per key and the verdicts per stage.
/// Times depend on the machine; the verdict columns do not.
pub fn bench_table(
    dims: &[usize],
    sizes: &[usize],
    seed: u64,
    norm: NormSpec,
    repeat: usize,
    options: &Options,
    tick: &dyn Fn(),
) -> Result<Table> {
    if dims.is_empty() || sizes.is_empty() || dims.contains(&0) || sizes.contains(&0) {
        return Err(Error::usage(
            "bench needs nonempty lists of d ≥ 1 and n ≥ 1",
        ));
    }
    let mut t = Table::new([
        "d",
        "n",
        "median_s",
        "us_per_key",
        "unselectable",
        "key-as-query",
        "braid-reflect",
        "float-lp",
        "exact-lp",
        "refined",
    ]);
    t.comment(format!(
        "normoracle unselectable bench: seed {seed}, norm {}, median of {} runs, {} rayon threads available (one key set at a time, single-threaded)",
        norm.name(),
        repeat.max(1),
        rayon::current_num_threads()
    ));
    let params = FigureParams {
        seed,
        norm,
        options: *options,
        ..FigureParams::paper(norm)
    };
    for &d in dims {
        for &n in sizes {
            let mut times = Vec::new();
            let mut last = Vec::new();
            for _ in 0..repeat.max(1) {
                let start = std::time::Instant::now();
                last = decide_run(&params, d, n, 0)?;
                times.push(start.elapsed().as_secs_f64());
            }
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let count = |m: Method| last.iter().filter(|x| x.method == m).count().to_string();
            t.push([
                d.to_string(),
                n.to_string(),
                format!("{median:.4}"),
                format!("{:.2}", median * 1e6 / n as f64),
                last.iter().filter(|x| !x.selectable()).count().to_string(),
                count(Method::KeyAsQuery),
                count(Method::BraidReflect),
                count(Method::FloatLp),
                count(Method::ExactLp),
                count(Method::Refined),
            ]);
            tick();
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_f32() {
        let a = gaussian_keys(123, 3, 5, 0);
        assert_eq!(a, gaussian_keys(123, 3, 5, 0));
        assert_ne!(a, gaussian_keys(123, 3, 5, 1));
        assert_ne!(a, gaussian_keys(124, 3, 5, 0));
        assert_eq!(a.len(), 15);
        assert!(a.iter().all(|&x| x as f32 as f64 == x));
        // A crude moment check over many draws.
        let many = gaussian_keys(1, 1, 20000, 0);
        let mean: f64 = many.iter().sum::<f64>() / many.len() as f64;
        let var: f64 =
            many.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / many.len() as f64;
        assert!(
            mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
            "mean {mean} var {var}"
        );
    }

    #[test]
    fn grid_is_thread_count_independent() {
        let params = FigureParams {
            d: 2..=3,
            n: 3..=6,
            runs: 3,
            ..FigureParams::paper(NormSpec::None)
        };
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| run_grid(&params, &|| {}))
            .unwrap();
        let two = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap()
            .install(|| run_grid(&params, &|| {}))
            .unwrap();
        assert_eq!(one, two);
        // d = 2, n = 6: six Gaussian points in the plane nearly always have one inside.
        assert!(one.iter().any(|c| c.unselectable > 0));
        let svg = heatmap_svg(&params, &one).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("<rect"));
        let csv = figure_table(&params, &one).csv();
        assert!(csv.contains("\nd,n,runs,p_any_unselectable,mean_fraction_unselectable\n"));
    }

    #[test]
    fn layer_norm_zero_eps_is_all_selectable() {
        let params = FigureParams {
            d: 3..=4,
            n: 3..=12,
            runs: 2,
            audit: true,
            ..FigureParams::paper("layernorm".parse().unwrap())
        };
        let cells = run_grid(&params, &|| {}).unwrap();
        assert!(cells.iter().all(|c| c.unselectable == 0));
        let none = run_grid(
            &FigureParams {
                norm: NormSpec::None,
                ..params
            },
            &|| {},
        )
        .unwrap();
        assert!(none.iter().any(|c| c.unselectable > 0));
    }
}
