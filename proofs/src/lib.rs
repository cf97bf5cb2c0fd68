//! Property suites for the theorems catalogued in `normoracle_geometry::theorems`, one test file per
//! theorem in `tests/`, each driving the library's exact check functions with proptest and with
//! quickcheck.
//!
//! Both frameworks draw raw 64-bit words and hand them to the same maps the catalogue uses
//! (`normoracle_geometry::theorems::inputs`): a row is (family, param, words), so a shrunk
//! counterexample reads the same whichever generator found it.
//!
//! Case counts and widths: modest by default (the whole suite runs in well under a minute);
//! `NORMORACLE_LONG=1` raises the case counts and lets widths reach 4096.

use normoracle::cases::rng::{seed_from_env, SEED_ENV};
use normoracle_geometry::theorems::inputs::{
    eps_from_word, nonzero_rational_from_word, rational_from_word, width_from_word, Family,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use quickcheck::{Arbitrary, Gen, TestResult};
use rug::Rational;

/// Whether long-run settings are on (`NORMORACLE_LONG=1`).
pub fn long() -> bool {
    std::env::var("NORMORACLE_LONG").is_ok_and(|v| v == "1")
}

/// The widest row drawn: 4096 in long runs, 512 by default (widths 1..=64 stay the common case).
pub fn max_width() -> usize {
    if long() {
        4096
    } else {
        512
    }
}

/// Cases per property: `default` normally, 40× that in long runs.
pub fn cases(default: u32) -> u32 {
    if long() {
        default * 40
    } else {
        default
    }
}

/// The suites' seed: `NORMORACLE_SEED`, else the project's fixed default, so that every run (CI's
/// included) draws the same cases and a failure reproduces. It is printed, which the test harness
/// shows beside a failure; set the variable to explore other cases.
pub fn seed() -> u64 {
    let seed = seed_from_env().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("property seed {seed} (set {SEED_ENV} to draw other cases)");
    seed
}

/// A proptest config with `cases(default)` cases drawn from `seed()` and no regression files in
/// the tree (a failure prints its shrunk input, which is the reproducer).
pub fn config(default: u32) -> Config {
    Config {
        cases: cases(default),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed()),
        ..Config::default()
    }
}

/// `config(default)`, still replaying the failures recorded in the `.proptest-regressions` file
/// beside the test (for the suites that have one checked in).
pub fn config_replaying_regressions(default: u32) -> Config {
    Config {
        failure_persistence: Config::default().failure_persistence,
        ..config(default)
    }
}

/// A quickcheck runner of `cases(default)` tests drawn from `seed()` (quickcheck's own default
/// generator size, 100).
pub fn seeded_quickcheck(default: u32) -> quickcheck::QuickCheck {
    quickcheck::QuickCheck::new()
        .rng(Gen::from_size_and_seed(100, seed()))
        .tests(u64::from(cases(default)))
        .max_tests(u64::from(cases(default)) * 10)
}

/// A row as raw words: the family index, its parameter and one word per entry.
#[derive(Debug, Clone)]
pub struct RawRow {
    pub family: usize,
    pub param: u64,
    pub words: Vec<u64>,
}

impl RawRow {
    pub fn family(&self) -> Family {
        Family::from_index(self.family)
    }

    pub fn values(&self) -> Vec<Rational> {
        self.family().row(self.param, &self.words)
    }

    pub fn d(&self) -> usize {
        self.words.len()
    }
}

/// Widths: 1..=64 seven times in eight, else up to [`max_width`].
pub fn width() -> BoxedStrategy<usize> {
    let max = max_width();
    prop_oneof![7 => 1..=64usize, 1 => 65..=max].boxed()
}

/// A row of the given width from any family.
pub fn row_of_width(d: usize) -> BoxedStrategy<RawRow> {
    (
        0..Family::all().len(),
        any::<u64>(),
        proptest::collection::vec(any::<u64>(), d),
    )
        .prop_map(|(family, param, words)| RawRow {
            family,
            param,
            words,
        })
        .boxed()
}

/// A row of a random width from any family.
pub fn row() -> BoxedStrategy<RawRow> {
    width().prop_flat_map(row_of_width).boxed()
}

/// `n` rows of one random width.
pub fn rows(n: usize) -> BoxedStrategy<Vec<RawRow>> {
    width()
        .prop_flat_map(move |d| proptest::collection::vec(row_of_width(d), n))
        .boxed()
}

/// ε ≥ 0 (see `eps_from_word`).
pub fn eps() -> BoxedStrategy<Rational> {
    any::<u64>().prop_map(eps_from_word).boxed()
}

/// A rational scalar.
pub fn rational() -> BoxedStrategy<Rational> {
    any::<u64>().prop_map(rational_from_word).boxed()
}

/// A nonzero rational scalar.
pub fn nonzero_rational() -> BoxedStrategy<Rational> {
    any::<u64>().prop_map(nonzero_rational_from_word).boxed()
}

/// A check's outcome as a proptest result.
pub fn holds(outcome: Result<(), String>) -> Result<(), TestCaseError> {
    outcome.map_err(TestCaseError::fail)
}

/// A check's outcome as a quickcheck result.
pub fn qc_holds(outcome: Result<(), String>) -> TestResult {
    match outcome {
        Ok(()) => TestResult::passed(),
        Err(e) => TestResult::error(e),
    }
}

/// Runs a quickcheck property with `cases(default)` seeded tests.
pub fn quickcheck<A: quickcheck::Testable>(default: u32, property: A) {
    seeded_quickcheck(default).quickcheck(property);
}

/// quickcheck's row: the same raw words, shrunk by dropping and simplifying words.
#[derive(Debug, Clone)]
pub struct QcRow(pub RawRow);

impl QcRow {
    pub fn values(&self) -> Vec<Rational> {
        self.0.values()
    }
}

impl Arbitrary for QcRow {
    fn arbitrary(g: &mut Gen) -> QcRow {
        let d = width_from_word(u64::arbitrary(g), max_width());
        QcRow(RawRow {
            family: usize::arbitrary(g) % Family::all().len(),
            param: u64::arbitrary(g),
            words: (0..d).map(|_| u64::arbitrary(g)).collect(),
        })
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = QcRow>> {
        let RawRow {
            family,
            param,
            words,
        } = self.0.clone();
        Box::new(words.shrink().filter(|w| !w.is_empty()).map(move |words| {
            QcRow(RawRow {
                family,
                param,
                words,
            })
        }))
    }
}

/// quickcheck's pair of rows of one width (the second row's words are cut or cycled to fit).
#[derive(Debug, Clone)]
pub struct QcRowPair(pub RawRow, pub RawRow);

impl QcRowPair {
    fn fitted(a: RawRow, mut b: RawRow) -> QcRowPair {
        let d = a.d();
        b.words = (0..d)
            .map(|i| b.words.get(i).copied().unwrap_or(i as u64 ^ b.param))
            .collect();
        QcRowPair(a, b)
    }
}

impl Arbitrary for QcRowPair {
    fn arbitrary(g: &mut Gen) -> QcRowPair {
        QcRowPair::fitted(QcRow::arbitrary(g).0, QcRow::arbitrary(g).0)
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = QcRowPair>> {
        let b = self.1.clone();
        Box::new(
            QcRow(self.0.clone())
                .shrink()
                .map(move |a| QcRowPair::fitted(a.0, b.clone())),
        )
    }
}

/// quickcheck's ε ≥ 0.
#[derive(Debug, Clone)]
pub struct QcEps(pub u64);

impl QcEps {
    pub fn value(&self) -> Rational {
        eps_from_word(self.0)
    }
}

impl Arbitrary for QcEps {
    fn arbitrary(g: &mut Gen) -> QcEps {
        QcEps(u64::arbitrary(g))
    }
    fn shrink(&self) -> Box<dyn Iterator<Item = QcEps>> {
        Box::new(self.0.shrink().map(QcEps))
    }
}

/// quickcheck's rational scalar.
#[derive(Debug, Clone)]
pub struct QcRational(pub u64);

impl QcRational {
    pub fn value(&self) -> Rational {
        rational_from_word(self.0)
    }
    pub fn nonzero(&self) -> Rational {
        nonzero_rational_from_word(self.0)
    }
}

impl Arbitrary for QcRational {
    fn arbitrary(g: &mut Gen) -> QcRational {
        QcRational(u64::arbitrary(g))
    }
    fn shrink(&self) -> Box<dyn Iterator<Item = QcRational>> {
        Box::new(self.0.shrink().map(QcRational))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_share_a_width() {
        let mut g = Gen::new(50);
        for _ in 0..20 {
            let p = QcRowPair::arbitrary(&mut g);
            assert_eq!(p.0.d(), p.1.d());
            assert_eq!(p.0.values().len(), p.1.values().len());
            assert!(p.shrink().all(|s| s.0.d() == s.1.d() && s.0.d() >= 1));
        }
    }

    #[test]
    fn settings_follow_the_environment() {
        // The default profile (NORMORACLE_LONG unset in `cargo test`) stays small.
        if !long() {
            assert_eq!(cases(10), 10);
            assert_eq!(max_width(), 512);
        } else {
            assert_eq!(cases(10), 400);
            assert_eq!(max_width(), 4096);
        }
        assert!(config(3).failure_persistence.is_none());
    }
}
