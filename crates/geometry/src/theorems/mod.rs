//! The papers' theorems: statements, sources and exact checkers, and the catalogue the CLI
//! lists (`normoracle theorems`) and `normoracle audit` runs.
//!
//! Each theorem is one module declaring `pub const THEOREM: TheoremEntry` (id, statement,
//! source and its exact checker, in one place). The checker runs fixed edge cases and then
//! `Budget::cases` random cases drawn from [`inputs`] (a portable ChaCha stream seeded by the
//! budget's seed and the theorem's id), and decides every claim in exact arithmetic
//! ([`crate::exact::surd::Surd`], rationals, exact integers): claims with √ are compared in the quadratic
//! field they live in, never with a float tolerance. The `proofs/` crate drives the same
//! check functions with proptest and quickcheck.

use crate::output::format::Table;
use std::time::Instant;

pub mod decompositions;
pub mod exact_vec;
pub mod faults;
pub mod float_corollaries;
pub mod formal;
pub mod inputs;
pub mod layernorm_jacobian;
pub mod norm_sqrt_d;
pub mod projection;
pub mod rms_vs_layer;
pub mod rmsnorm_image;
pub mod two_point_map;
pub mod uniform_attention;
pub mod uniform_attention_gain;

pub mod ellipsoid;

pub mod convex_hull;

/// How hard a theorem's checker should try.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Random cases to try (on top of the fixed edge cases each checker always runs).
    pub cases: usize,
    /// Seed of the portable generator the checker draws from.
    pub seed: u64,
}

/// The seed `normoracle theorems` uses unless told otherwise.
pub const DEFAULT_SEED: u64 = 20230612;

/// What the verdict "verified" means, printed with every table of verdicts.
pub const VERIFIED_MEANS: &str = "verified = every claim held, decided in exact arithmetic, on the instances tried (the fixed edge cases and the seeded random ones); it is not a proof for all d";

/// The random cases per theorem `normoracle theorems` tries unless told otherwise.
pub const DEFAULT_CASES: usize = 64;

/// What a checker found.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// Cases tried (edge and random).
    pub cases: usize,
    /// The first counterexample, if any (a theorem whose check fails is reported, never hidden).
    pub counterexample: Option<String>,
}

impl CheckReport {
    pub fn verified(&self) -> bool {
        self.counterexample.is_none()
    }
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

/// Every catalogued theorem, in a fixed order. (The convex-hull and ellipsoid theorems join
/// from their own modules.)
pub fn catalogue() -> Vec<TheoremEntry> {
    vec![
        projection::THEOREM,
        norm_sqrt_d::THEOREM,
        decompositions::THEOREM,
        two_point_map::THEOREM,
        rms_vs_layer::THEOREM,
        uniform_attention::THEOREM,
        float_corollaries::THEOREM,
        ellipsoid::THEOREM,
        convex_hull::THEOREM,
        uniform_attention_gain::THEOREM,
        rmsnorm_image::THEOREM,
        layernorm_jacobian::THEOREM,
    ]
}

/// The entry with this id.
pub fn find(id: &str) -> Option<TheoremEntry> {
    catalogue().into_iter().find(|e| e.id == id)
}

/// One theorem's run: its entry, what the checker found and how long it took.
#[derive(Debug, Clone)]
pub struct TheoremRun {
    pub entry: TheoremEntry,
    pub report: CheckReport,
    pub seconds: f64,
}

impl TheoremRun {
    /// `verified`, or `FAILED: <counterexample>`.
    pub fn verdict(&self) -> String {
        match &self.report.counterexample {
            None => "verified".to_string(),
            Some(c) => format!("FAILED: {c}"),
        }
    }
}

/// Runs the entries in order; `on_done` sees each run as it finishes (for progress).
pub fn run(
    entries: &[TheoremEntry],
    budget: Budget,
    mut on_done: impl FnMut(&TheoremRun),
) -> Vec<TheoremRun> {
    entries
        .iter()
        .map(|entry| {
            let start = Instant::now();
            let report = (entry.check)(budget);
            let run = TheoremRun {
                entry: *entry,
                report,
                seconds: start.elapsed().as_secs_f64(),
            };
            on_done(&run);
            run
        })
        .collect()
}

/// Whether every run verified.
pub fn all_verified(runs: &[TheoremRun]) -> bool {
    runs.iter().all(|r| r.report.verified())
}

/// The runs as a table: id, statement, source, cases, verdict, proof (what `formal` proves
/// for every d, and what is only checked), seconds.
pub fn table(runs: &[TheoremRun], budget: Budget) -> Table {
    let mut t = Table::new([
        "id",
        "statement",
        "source",
        "cases",
        "verdict",
        "proof",
        "seconds",
    ]);
    t.comment(format!(
        "normoracle theorems: seed {}, {} random cases per theorem plus fixed edge cases; exact arithmetic",
        budget.seed, budget.cases
    ));
    t.comment(VERIFIED_MEANS);
    for r in runs {
        t.push([
            r.entry.id.to_string(),
            r.entry.statement.to_string(),
            r.entry.source.to_string(),
            r.report.cases.to_string(),
            r.verdict(),
            formal::status(r.entry.id, r.report.cases),
            format!("{:.3}", r.seconds),
        ]);
    }
    t
}

/// Counts cases and keeps the first counterexample.
#[derive(Debug, Default)]
pub struct Tally {
    cases: usize,
    counterexample: Option<String>,
}

impl Tally {
    /// Records one case's outcome; `label` names the case in a counterexample.
    pub fn record(&mut self, label: impl FnOnce() -> String, outcome: Result<(), String>) {
        self.cases += 1;
        if let (Err(e), None) = (outcome, &self.counterexample) {
            self.counterexample = Some(format!("{}: {e}", label()));
        }
    }

    pub fn failed(&self) -> bool {
        self.counterexample.is_some()
    }

    pub fn report(self) -> CheckReport {
        CheckReport {
            cases: self.cases,
            counterexample: self.counterexample,
        }
    }
}

/// The common checker loop: `edge` records the fixed cases, then `case` runs on `budget.cases`
/// random draws from the theorem's stream, stopping at the first counterexample.
pub fn run_checks(
    budget: Budget,
    id: &str,
    edge: impl FnOnce(&mut Tally),
    mut case: impl FnMut(&mut inputs::Inputs) -> Result<(), String>,
) -> CheckReport {
    let mut tally = Tally::default();
    edge(&mut tally);
    let mut stream = inputs::Inputs::new(budget.seed, id);
    for i in 0..budget.cases {
        if tally.failed() {
            break;
        }
        let outcome = case(&mut stream);
        tally.record(
            || format!("random case {i} of seed {}", budget.seed),
            outcome,
        );
    }
    tally.report()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_ids_are_unique_and_described() {
        let cat = catalogue();
        let mut ids: Vec<_> = cat.iter().map(|e| e.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), cat.len());
        for e in &cat {
            assert!(!e.statement.is_empty() && !e.source.is_empty(), "{}", e.id);
            assert!(!e.statement.contains('\n'), "{}: one paragraph", e.id);
        }
        assert_eq!(find("projection").map(|e| e.id), Some("projection"));
        assert!(find("nope").is_none());
    }

    #[test]
    fn every_entry_verifies_on_a_small_budget() {
        for seed in [1, 2] {
            let budget = Budget { cases: 12, seed };
            for run in run(&catalogue(), budget, |_| {}) {
                assert!(run.report.verified(), "{}: {}", run.entry.id, run.verdict());
                assert!(run.report.cases > budget.cases, "{}", run.entry.id);
            }
        }
    }

    fn passing(b: Budget) -> CheckReport {
        run_checks(
            b,
            "passing",
            |t| t.record(|| "edge".into(), Ok(())),
            |_| Ok(()),
        )
    }

    fn failing(b: Budget) -> CheckReport {
        run_checks(
            b,
            "failing",
            |t| t.record(|| "edge".into(), Ok(())),
            |s| {
                if s.below(4) == 0 {
                    Err("boom".into())
                } else {
                    Ok(())
                }
            },
        )
    }

    #[test]
    fn runner_counts_and_stops_at_the_first_counterexample() {
        let b = Budget { cases: 50, seed: 3 };
        let ok = passing(b);
        assert_eq!(
            ok,
            CheckReport {
                cases: 51,
                counterexample: None
            }
        );
        let bad = failing(b);
        let msg = bad.counterexample.clone().unwrap();
        assert!(
            msg.starts_with("random case ") && msg.ends_with(": boom"),
            "{msg}"
        );
        assert!(bad.cases < 51);
        let entries = [
            TheoremEntry {
                id: "ok",
                statement: "s",
                source: "src",
                check: passing,
            },
            TheoremEntry {
                id: "bad",
                statement: "s",
                source: "src",
                check: failing,
            },
        ];
        let mut seen = Vec::new();
        let runs = run(&entries, b, |r| seen.push(r.entry.id));
        assert_eq!(seen, ["ok", "bad"]);
        assert!(!all_verified(&runs));
        assert!(all_verified(&runs[..1]));
        let t = table(&runs, b);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][3], "51");
        assert_eq!(t.rows[0][4], "verified");
        assert!(t.rows[1][4].starts_with("FAILED: random case"));
        assert!(t.comments[0].contains("seed 3"));
        assert!(t.comments[1].contains("not a proof"), "{:?}", t.comments);
    }

    #[test]
    fn tally_keeps_the_first_counterexample() {
        let mut t = Tally::default();
        t.record(|| "a".into(), Ok(()));
        assert!(!t.failed());
        t.record(|| "b".into(), Err("first".into()));
        t.record(|| "c".into(), Err("second".into()));
        assert!(t.failed());
        let r = t.report();
        assert_eq!(r.cases, 3);
        assert_eq!(r.counterexample.as_deref(), Some("b: first"));
        assert!(!r.verified());
    }
}
