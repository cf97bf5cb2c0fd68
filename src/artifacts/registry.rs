//! Every result the project produces, one command away: `normoracle reproduce <id>`. Each
//! artifact carries its provenance (normoracle version and git commit, seed, parameters, the
//! command that reproduces it, whether it is machine-independent) in its header.

use crate::error::{Error, Result};
use crate::output::format::{Format, Table};

/// What an artifact produced.
pub enum Output {
    Table(Table),
    /// A table and its figure (SVG).
    Figure(Table, String),
}

/// Parameters a reproduction may set.
#[derive(Debug, Clone)]
pub struct Params {
    pub seed: u64,
}

/// One reproducible result.
pub struct Artifact {
    pub id: &'static str,
    pub description: &'static str,
    /// Same bytes on every machine (and thread count) for a given seed.
    pub machine_independent: bool,
    /// `produce` returns an `Output::Figure` (so "svg" is one of its formats).
    pub has_figure: bool,
    pub produce: fn(&Params) -> Result<Output>,
}

/// Checks that `a` renders in `format`, before any of its work (some take minutes).
pub fn check_format(a: &Artifact, format: &str) -> Result<()> {
    match format {
        "svg" if a.has_figure => Ok(()),
        "svg" => Err(Error::usage(format!(
            "artifact '{}' has no figure; use md, csv, latex or json",
            a.id
        ))),
        table => table.parse::<Format>().map(|_| ()),
    }
}

/// The provenance lines of an artifact's header.
pub fn provenance(a: &Artifact, p: &Params, format: &str) -> Vec<String> {
    vec![
        format!("artifact: {} — {}", a.id, a.description),
        format!(
            "normoracle {} (git {})",
            env!("CARGO_PKG_VERSION"),
            env!("NORMORACLE_GIT_COMMIT")
        ),
        format!("seed: {}", p.seed),
        format!(
            "reproduce: normoracle reproduce {} --format {format} --seed {}",
            a.id, p.seed
        ),
        if a.machine_independent {
            "machine-independent: yes (same bytes on every machine and thread count)".to_string()
        } else {
            "machine-independent: NO (timings or floating-point training of this machine)"
                .to_string()
        },
    ]
}

/// Renders an artifact in a format ("svg" for figures, else a table format).
pub fn render(a: &Artifact, p: &Params, format: &str) -> Result<String> {
    check_format(a, format)?;
    let header = provenance(a, p, format);
    let output = (a.produce)(p)?;
    match (output, format) {
        (Output::Figure(_, svg), "svg") => {
            // Provenance as SVG metadata, right after the root element opens (XML comments
            // cannot hold the "--" of the command line).
            let escape = |l: &str| {
                l.replace('&', "&amp;")
                    .replace('<', "&lt;")
                    .replace('>', "&gt;")
            };
            let metadata = format!(
                "<metadata>\n{}</metadata>\n",
                header
                    .iter()
                    .map(|l| format!("{}\n", escape(l)))
                    .collect::<String>()
            );
            let open = svg
                .find("<svg")
                .and_then(|i| svg[i..].find('>').map(|j| i + j + 1));
            Ok(match open {
                Some(end) => format!("{}\n{metadata}{}", &svg[..end], &svg[end..]),
                None => format!("{metadata}{svg}"),
            })
        }
        (Output::Table(_), "svg") => Err(Error::usage(format!(
            "artifact '{}' has no figure; use md, csv, latex or json",
            a.id
        ))),
        (Output::Table(mut t) | Output::Figure(mut t, _), f) => {
            let fmt: Format = f.parse()?;
            let mut lines = header;
            lines.append(&mut t.comments);
            t.comments = lines;
            Ok(t.render(fmt))
        }
    }
}
