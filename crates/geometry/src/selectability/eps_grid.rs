//! Brody et al.'s Figure 1d with the ε every framework uses: the same N(0, 1) keys (the
//! generator of [`super::figure`]), LayerNorm with ε > 0, every verdict with an exactly checked
//! certificate.
//!
//! With ε = 0 every LayerNorm output has norm √d and, for d ≥ 3, every key with its own
//! direction is selectable (Figure 1d is 0 everywhere). With ε > 0 the norm is
//! √d·σ/√(σ² + ε): a key whose input has a small variance shrinks towards the origin and can
//! fall inside the hull of the others. The artifact measures how often that happens on the
//! paper's own grid at ε = 10⁻⁵ (PyTorch's default), and sweeps ε at d = 3, where it happens
//! most. (d = 2 is excluded from the grid as in the paper: there LayerNorm has only the two
//! outputs ±(1, −1), so three or more keys always include a duplicate, which is unselectable.)

use super::figure::{figure_table, heatmap_svg, run_grid, Cell, FigureParams};
use super::keys::{NormSpec, Normalization};
use crate::error::Result;
use crate::output::format::Table;

/// The headline ε: PyTorch's `nn.LayerNorm` default.
pub const HEADLINE_EPS: f32 = 1e-5;

/// The ε values of the sweep at d = 3 (0 is the paper's Figure 1d).
pub const SWEEP_EPS: [f32; 6] = [0.0, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3];

/// What the artifact computes.
#[derive(Debug, Clone, PartialEq)]
pub struct EpsGridParams {
    /// The grid at the headline ε (its `norm` is LayerNorm with that ε).
    pub grid: FigureParams,
    /// The dimension of the sweep.
    pub sweep_d: usize,
    /// The ε values of the sweep.
    pub sweep_eps: Vec<f32>,
}

impl EpsGridParams {
    /// The paper's grid (d 3..15, n 3..60, 100 runs) at ε = 10⁻⁵, the sweep at d = 3.
    pub fn paper(seed: u64) -> Result<Self> {
        Ok(EpsGridParams {
            grid: FigureParams {
                seed,
                ..FigureParams::paper(layer_norm(HEADLINE_EPS)?)
            },
            sweep_d: 3,
            sweep_eps: SWEEP_EPS.to_vec(),
        })
    }

    /// A small slice for tests: d 3..5, n 3..24, 12 runs, the sweep at d = 3 over 0, 10⁻⁵,
    /// 10⁻³.
    pub fn reduced(seed: u64) -> Result<Self> {
        let paper = Self::paper(seed)?;
        Ok(EpsGridParams {
            grid: FigureParams {
                d: 3..=5,
                n: 3..=24,
                runs: 12,
                ..paper.grid
            },
            sweep_eps: vec![0.0, 1e-5, 1e-3],
            ..paper
        })
    }

    /// The sweep's figure parameters at one ε.
    fn sweep_params(&self, eps: f32) -> Result<FigureParams> {
        Ok(FigureParams {
            d: self.sweep_d..=self.sweep_d,
            norm: layer_norm(eps)?,
            ..self.grid.clone()
        })
    }

    /// Cells computed in all (grid and sweep), for progress.
    pub fn cells(&self) -> usize {
        self.grid.cells().len() + self.sweep_eps.len() * self.grid.n.clone().count()
    }
}

fn layer_norm(eps: f32) -> Result<NormSpec> {
    Ok(NormSpec::Norm(Normalization::layer_norm(eps)?))
}

/// The grid at the headline ε and the sweep, one cell list per sweep ε.
#[derive(Debug, Clone, PartialEq)]
pub struct EpsGrid {
    pub grid: Vec<Cell>,
    pub sweep: Vec<(f32, Vec<Cell>)>,
}

/// Runs the grid and the sweep; `tick` once per finished cell. Independent of thread count.
pub fn run(params: &EpsGridParams, tick: &(dyn Fn() + Sync)) -> Result<EpsGrid> {
    let grid = run_grid(&params.grid, tick)?;
    let sweep = params
        .sweep_eps
        .iter()
        .map(|&eps| Ok((eps, run_grid(&params.sweep_params(eps)?, tick)?)))
        .collect::<Result<_>>()?;
    Ok(EpsGrid { grid, sweep })
}

/// One line per dimension (or per sweep ε): cells with an unselectable key, the largest
/// probability of a run with one (and its n), the mean fraction at the largest n.
fn summary(label: &str, cells: &[&Cell]) -> String {
    let nonzero = cells.iter().filter(|c| c.unselectable > 0).count();
    let worst = cells
        .iter()
        .max_by(|a, b| a.p_any().total_cmp(&b.p_any()).then(b.n.cmp(&a.n)));
    let last = cells.iter().max_by_key(|c| c.n);
    match (worst, last) {
        (Some(w), Some(l)) => format!(
            "{label}: {nonzero} of {} cells have an unselectable key; max p_any {:.2} (n = {}); at n = {}: p_any {:.2}, mean fraction {:.4}",
            cells.len(),
            w.p_any(),
            w.n,
            l.n,
            l.p_any(),
            l.mean_fraction()
        ),
        _ => format!("{label}: no cells"),
    }
}

/// Per-dimension summaries of the grid and per-ε summaries of the sweep.
pub fn summaries(params: &EpsGridParams, result: &EpsGrid) -> Vec<String> {
    let mut lines = Vec::new();
    for d in params.grid.d.clone() {
        let cells: Vec<&Cell> = result.grid.iter().filter(|c| c.d == d).collect();
        lines.push(summary(
            &format!("eps {:e}, d = {d}", params.grid_eps()),
            &cells,
        ));
    }
    for (eps, cells) in &result.sweep {
        let cells: Vec<&Cell> = cells.iter().collect();
        lines.push(summary(
            &format!("sweep d = {}, eps {eps:e}", params.sweep_d),
            &cells,
        ));
    }
    lines
}

impl EpsGridParams {
    /// The headline ε as an f32 (0 when the grid is not LayerNorm with ε).
    pub fn grid_eps(&self) -> f32 {
        match self.grid.norm {
            NormSpec::Norm(n) => n.eps.value(),
            NormSpec::None => 0.0,
        }
    }
}

/// The table: an `eps` column before the figure's columns; the grid's rows, then the sweep's;
/// the summaries as comments.
pub fn table(params: &EpsGridParams, result: &EpsGrid) -> Table {
    let base = figure_table(&params.grid, &result.grid);
    let mut columns = vec!["eps".to_string()];
    columns.extend(base.columns.iter().cloned());
    let mut t = Table::new(columns);
    t.comment("normoracle figure1d-eps: Brody et al. Figure 1d with LayerNorm eps > 0");
    for c in &base.comments {
        t.comment(c.clone());
    }
    t.comment(format!(
        "then the sweep: d = {}, the same n and runs, eps in {}",
        params.sweep_d,
        params
            .sweep_eps
            .iter()
            .map(|e| format!("{e:e}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    for line in summaries(params, result) {
        t.comment(line);
    }
    let eps_text = format!("{:e}", params.grid_eps());
    for row in base.rows {
        let mut r = vec![eps_text.clone()];
        r.extend(row);
        t.push(r);
    }
    for (eps, cells) in &result.sweep {
        for c in cells {
            t.push([
                format!("{eps:e}"),
                c.d.to_string(),
                c.n.to_string(),
                c.runs.to_string(),
                format!("{:.6}", c.p_any()),
                format!("{:.6}", c.mean_fraction()),
            ]);
        }
    }
    t
}

/// The reproducible artifact: the table and the heatmap of the grid at the headline ε.
pub fn artifact(params: &EpsGridParams, tick: &(dyn Fn() + Sync)) -> Result<(Table, String)> {
    let result = run(params, tick)?;
    Ok((
        table(params, &result),
        heatmap_svg(&params.grid, &result.grid)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_follow_the_paper() {
        let p = EpsGridParams::paper(123).unwrap();
        assert_eq!((p.grid.d.clone(), p.grid.n.clone()), (3..=15, 3..=60));
        assert_eq!(p.grid.runs, 100);
        assert_eq!(p.grid_eps(), 1e-5);
        assert_eq!(p.grid.norm.name(), "layernorm-eps=1e-5");
        assert_eq!(p.cells(), 13 * 58 + 6 * 58);
        let sweep = p.sweep_params(1e-3).unwrap();
        assert_eq!(sweep.d, 3..=3);
        assert_eq!(sweep.seed, 123);
    }

    #[test]
    fn summaries_name_the_worst_cell() {
        let cell = |n, runs_with_unselectable, unselectable| Cell {
            d: 3,
            n,
            runs: 10,
            runs_with_unselectable,
            unselectable,
            by_method: [0; 6],
        };
        let (a, b, c) = (cell(3, 0, 0), cell(4, 5, 6), cell(5, 2, 2));
        let s = summary("x", &[&a, &b, &c]);
        assert_eq!(
            s,
            "x: 2 of 3 cells have an unselectable key; max p_any 0.50 (n = 4); at n = 5: p_any 0.20, mean fraction 0.0400"
        );
        assert_eq!(summary("y", &[]), "y: no cells");
    }
}
