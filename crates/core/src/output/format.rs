//! Tables as Markdown, CSV, LaTeX or JSON: the one place output formats are written, so
//! every table the project prints (verdicts, figures' data, accuracy tables) looks alike.

use crate::error::{Error, Result};
use std::fmt::Write as _;

/// An output format for tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Csv,
    Latex,
    Json,
}

impl std::str::FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "md" | "markdown" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "latex" | "tex" => Ok(Format::Latex),
            "json" => Ok(Format::Json),
            other => Err(Error::usage(format!(
                "unknown format '{other}' (md, csv, latex, json)"
            ))),
        }
    }
}

/// A table of strings with optional comment lines (provenance, parameters) printed before it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// Lines printed before the table: `# ...` in CSV, `<!-- -->` free text in Markdown,
    /// `% ...` in LaTeX, a "comments" array in JSON.
    pub comments: Vec<String>,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Self {
        Table {
            comments: Vec::new(),
            columns: columns.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn comment(&mut self, line: impl Into<String>) -> &mut Self {
        self.comments.push(line.into());
        self
    }

    /// Appends a row; it must have one cell per column.
    pub fn push<S: Into<String>>(&mut self, row: impl IntoIterator<Item = S>) {
        let row: Vec<String> = row.into_iter().map(Into::into).collect();
        assert_eq!(row.len(), self.columns.len(), "row width != column count");
        self.rows.push(row);
    }

    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Markdown => self.markdown(),
            Format::Csv => self.csv(),
            Format::Latex => self.latex(),
            Format::Json => self.json(),
        }
    }

    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for c in &self.comments {
            let _ = writeln!(out, "{c}  ");
        }
        if !self.comments.is_empty() {
            out.push('\n');
        }
        let esc = |s: &str| s.replace('|', "\\|");
        let _ = writeln!(
            out,
            "| {} |",
            self.columns
                .iter()
                .map(|c| esc(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(out, "|{}", "---|".repeat(self.columns.len()));
        for r in &self.rows {
            let _ = writeln!(
                out,
                "| {} |",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
            );
        }
        out
    }

    pub fn csv(&self) -> String {
        let mut out = String::new();
        for c in &self.comments {
            let _ = writeln!(out, "# {c}");
        }
        let cell = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let _ = writeln!(
            out,
            "{}",
            self.columns
                .iter()
                .map(|c| cell(c))
                .collect::<Vec<_>>()
                .join(",")
        );
        for r in &self.rows {
            let _ = writeln!(
                out,
                "{}",
                r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(",")
            );
        }
        out
    }

    pub fn latex(&self) -> String {
        let esc = |s: &str| {
            let mut o = String::with_capacity(s.len());
            for ch in s.chars() {
                match ch {
                    '\\' => o.push_str("\\textbackslash{}"),
                    '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                        o.push('\\');
                        o.push(ch)
                    }
                    '~' => o.push_str("\\textasciitilde{}"),
                    '^' => o.push_str("\\textasciicircum{}"),
                    _ => o.push(ch),
                }
            }
            o
        };
        let mut out = String::new();
        for c in &self.comments {
            let _ = writeln!(out, "% {c}");
        }
        let _ = writeln!(
            out,
            "\\begin{{tabular}}{{{}}}",
            "l".repeat(self.columns.len())
        );
        let _ = writeln!(out, "\\hline");
        let _ = writeln!(
            out,
            "{} \\\\",
            self.columns
                .iter()
                .map(|c| esc(c))
                .collect::<Vec<_>>()
                .join(" & ")
        );
        let _ = writeln!(out, "\\hline");
        for r in &self.rows {
            let _ = writeln!(
                out,
                "{} \\\\",
                r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" & ")
            );
        }
        let _ = writeln!(out, "\\hline");
        let _ = writeln!(out, "\\end{{tabular}}");
        out
    }

    /// `{"comments": [...], "columns": [...], "rows": [{column: cell, ...}, ...]}`.
    pub fn json(&self) -> String {
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                serde_json::Value::Object(
                    self.columns
                        .iter()
                        .cloned()
                        .zip(r.iter().map(|c| serde_json::Value::String(c.clone())))
                        .collect(),
                )
            })
            .collect();
        let v = serde_json::json!({
            "comments": self.comments,
            "columns": self.columns,
            "rows": rows,
        });
        let mut s = serde_json::to_string_pretty(&v).expect("json of strings");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(["a", "b"]);
        t.comment("seed 1");
        t.push(["1", "x,y"]);
        t.push(["2_", "|"]);
        t
    }

    #[test]
    fn formats_escape_their_special_characters() {
        let t = sample();
        assert_eq!(t.csv(), "# seed 1\na,b\n1,\"x,y\"\n2_,|\n");
        assert!(t.markdown().contains("| 2_ | \\| |"));
        assert!(t.latex().contains("2\\_ & | \\\\"));
        let j: serde_json::Value = serde_json::from_str(&t.json()).unwrap();
        assert_eq!(j["rows"][0]["b"], "x,y");
    }

    #[test]
    fn format_names_parse() {
        assert_eq!("md".parse::<Format>().unwrap(), Format::Markdown);
        assert!("xml".parse::<Format>().is_err());
    }
}
