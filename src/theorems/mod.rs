//! The papers' theorems: statements, sources and exact checkers, and the catalogue the CLI
//! lists (`normoracle theorems`) and `normoracle audit` runs.

pub mod convex_hull;

/// How hard a theorem's checker should try.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Random cases to try (on top of the fixed edge cases each checker always runs).
    pub cases: usize,
    /// Seed of the portable generator the checker draws from.
    pub seed: u64,
}

/// What a checker found.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// Cases tried (edge and random).
    pub cases: usize,
    /// The first counterexample, if any (a theorem whose check fails is reported, never hidden).
    pub counterexample: Option<String>,
}

/// One catalogued theorem.
#[derive(Debug, Clone, Copy)]
pub struct TheoremEntry {
    /// Short stable id, e.g. `projection`.
    pub id: &'static str,
    /// The statement, one paragraph.
    pub statement: &'static str,
    /// Paper, section, equation.
    pub source: &'static str,
    /// The exact checker.
    pub check: fn(Budget) -> CheckReport,
}
