//! The human-readable report of a certified ellipsoid (`normoracle ellipsoid axes`): beside
//! the result it renders, so that the CLI only parses, calls and prints.

use super::verify::Method;
use super::Ellipsoid;
use crate::output::format::{Format, Table};

fn vec_text(v: &[f64]) -> String {
    format!(
        "[{}]",
        v.iter()
            .map(|x| format!("{x:.12}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The human-readable report: a header, the semi-axes table, the axes (small N), the
/// verification summary.
pub fn text(e: &Ellipsoid, format: Format) -> String {
    let mut out = String::new();
    let line = |out: &mut String, s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(
        &mut out,
        format!(
            "LayerNorm output hyperellipsoid (Riechers 2024), N = {}, eps = {:e}",
            e.n, e.eps
        ),
    );
    match e.normal.unit_normal() {
        Some(u) if e.normal.zero_gains.is_empty() => line(
            &mut out,
            format!("normal (unit, along alpha = 1/g): {}", vec_text(u)),
        ),
        _ if e.normal.zero_gains.len() == e.n => line(
            &mut out,
            "every gain is 0: every output equals b".to_string(),
        ),
        _ => line(
            &mut out,
            format!(
                "normal space: e_n for the zero gains n = {:?} (1-based: {:?})",
                e.normal.zero_gains,
                e.normal
                    .zero_gains
                    .iter()
                    .map(|i| i + 1)
                    .collect::<Vec<_>>()
            ),
        ),
    }
    line(
        &mut out,
        format!(
            "image: a {}-dimensional ellipsoid centred at b; outputs lie {} (y-b)^T Q (y-b) = N",
            e.normal.image_dimension(e.n),
            if e.eps > 0.0 {
                "strictly inside"
            } else if e.normal.zero_gains.len() >= 2 {
                "inside (>= 2 zero gains)"
            } else {
                "on"
            }
        ),
    );
    let mut t = Table::new([
        "axis",
        "semi-axis",
        "certified lo",
        "certified hi",
        "lambda",
        "zeta",
        "sin(angle) bound",
        "cluster",
    ]);
    t.comment(match e.zeta_route.method {
        Method::Residual => "semi-axis = sqrt(N/lambda) = sqrt(N zeta); [lo, hi] proved by MPFR residual bounds on both routes",
        Method::Structure => "semi-axis = sqrt(N/lambda) = sqrt(N zeta); [lo, hi] proved by sign checks of the secular equation",
    });
    for (i, a) in e.axes.iter().enumerate() {
        t.push([
            (i + 1).to_string(),
            format!("{:.15e}", a.semi_axis),
            format!("{:.15e}", a.semi_axis_lo),
            format!("{:.15e}", a.semi_axis_hi),
            format!("{:.15e}", a.lambda),
            format!("{:.15e}", a.zeta),
            a.angle_bound
                .map_or("-".to_string(), |s| format!("{s:.2e}")),
            a.cluster_size.to_string(),
        ]);
    }
    out.push_str(&t.render(format));
    if e.n <= 12 {
        for (i, a) in e.axes.iter().enumerate() {
            line(
                &mut out,
                format!("axis {}: {}", i + 1, vec_text(&a.direction)),
            );
        }
    }
    let c = |name: &str, cert: &super::verify::Certificate| {
        let how = match cert.orthonormality_defect_upper {
            Some(eta) => format!(
                "max eigenpair residual radius {:.3e}, |V^T V - I|_F <= {eta:.3e}",
                cert.max_pair_radius()
            ),
            None => format!(
                "secular-equation brackets, max eigenvalue radius {:.3e}",
                cert.max_pair_radius()
            ),
        };
        format!(
            "{name}: {how}, {} clusters, max cluster radius {:.3e}",
            cert.clusters.len(),
            cert.max_cluster_radius()
        )
    };
    line(
        &mut out,
        c("lambda route (Q = (G Pi G)^+)", &e.lambda_route),
    );
    line(&mut out, c("zeta route (Pi G^2 Pi)", &e.zeta_route));
    line(
        &mut out,
        format!(
            "routes agree: {}; max relative semi-axis radius {:.3e}; max sine between the routes' axes {:.3e}",
            if e.routes_agree { "yes" } else { "NO" },
            e.max_relative_semi_axis_radius(),
            e.axes.iter().map(|a| a.route_sine).fold(0.0, f64::max)
        ),
    );
    if let Some(x) = &e.exact {
        line(
            &mut out,
            format!(
                "exact check (characteristic polynomials, Sturm): lambda {}, zeta {}, lambda = 1/zeta {}",
                ok(x.lambda_counts_match),
                ok(x.zeta_counts_match),
                ok(x.reciprocal)
            ),
        );
    }
    if let Some(d) = &e.drazin_semi_axes {
        line(
            &mut out,
            format!(
                "note: Riechers' Drazin-inverse ellipsoid (lengths {}) contains the image and touches it only where the centred input vanishes on every zero gain; its lengths are not the image's semi-axes",
                vec_text(d)
            ),
        );
    }
    if let Some(law) = &e.surface_law {
        line(
            &mut out,
            format!(
                "eps = {:e}: for a ~ N(0, I), 1 - r has median {:.3e} (1%: {:.3e}, 99%: {:.3e}), r = sqrt((y-b)^T Q (y-b)/N)",
                law.eps,
                law.gap_at_quantile(0.5),
                law.gap_at_quantile(0.99),
                law.gap_at_quantile(0.01)
            ),
        );
    }
    line(&mut out, format!("verified: {}", ok(e.verified())));
    out
}

fn ok(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "NO"
    }
}
