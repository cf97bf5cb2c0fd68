//! The error-model table: how strict the one tolerance formula is on each input family —
//! the bound B_i (`tolerance::bound`) in ULPs of the correctly rounded output, and the
//! condition number κ_i, over the battery, per op, dtype and family.

use super::tolerance::{condition, ElementTerms, RowBound};
use crate::cases::{self, BatteryConfig, Family};
use crate::exact::reference::{element_input, row_stats};
use crate::exact::{Element, RowKind};
use crate::output::format::Table;
use crate::problem::Op;
use crate::Dtype;

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The table for the battery of `seed` (systematic part only).
pub fn table(seed: u64) -> Table {
    let mut t = Table::new([
        "op",
        "dtype",
        "family",
        "elements",
        "median_kappa",
        "max_kappa",
        "median_bound_ulps",
        "max_bound_ulps",
    ]);
    t.comment("bound_ulps: the tolerance B_i of judge::tolerance divided by the ulp of the correctly rounded output (finite, defined elements)");
    for op in Op::ALL {
        for dtype in [Dtype::F32, Dtype::F16, Dtype::BF16] {
            let mut config = BatteryConfig::new(op, dtype, seed);
            config.random_cases = 0;
            let battery = cases::battery(&config);
            for family in Family::ALL {
                let (mut kappas, mut ulps) = (Vec::new(), Vec::new());
                for case in battery.iter().filter(|c| c.family == family) {
                    let p = &case.problem;
                    for r in 0..p.rows {
                        let stats = row_stats(p, r);
                        if stats.kind != RowKind::Defined {
                            continue;
                        }
                        let values: Vec<f64> = p.row(r).iter().map(|&b| dtype.to_f64(b)).collect();
                        let row_bound = RowBound::new(dtype, &stats, &values);
                        let mean_abs = stats.mean_abs(&values);
                        for i in 0..p.d {
                            let input = element_input(p, r, i);
                            let eval = Element::new(&stats, input).evaluate(dtype);
                            let y = dtype.to_f64(eval.rounded);
                            if !y.is_finite() {
                                continue;
                            }
                            let b = row_bound.bound(ElementTerms {
                                x: input.x,
                                gamma: input.gamma,
                                beta: input.beta,
                            });
                            kappas.push(condition(&stats, mean_abs, input.x));
                            ulps.push(b.to_f64() / dtype.ulp_at(y));
                        }
                    }
                }
                let n = kappas.len();
                let max = |v: &[f64]| v.iter().cloned().fold(f64::NAN, f64::max);
                let (max_k, max_u) = (max(&kappas), max(&ulps));
                t.push([
                    op.name().to_string(),
                    dtype.name().to_string(),
                    family.name().to_string(),
                    n.to_string(),
                    format!("{:.3e}", median(&mut kappas)),
                    format!("{max_k:.3e}"),
                    format!("{:.3e}", median(&mut ulps)),
                    format!("{max_u:.3e}"),
                ]);
            }
        }
    }
    t
}
