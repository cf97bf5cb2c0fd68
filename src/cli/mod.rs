//! One file per subcommand, each a thin function over the library.

// First: its print!/println!/eprint!/eprintln! replace std's in every module below (a closed
// stdout ends the output quietly instead of panicking; see stdout.rs).
#[macro_use]
mod stdout;

pub mod audit;
pub mod bench;
pub mod bench_oracle;
pub mod cases;
pub mod check;
pub mod common;
pub mod fuzz;
pub mod reference;
pub mod reproduce;
pub mod worker;
pub mod zoo;

use clap::{Parser, Subcommand};
use normoracle::Result;
use std::process::ExitCode;

mod ellipsoid;
pub mod theorems;
pub mod unselectable;

/// What a subcommand concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything judged passed (exit 0).
    Pass,
    /// The kernel or claim under test failed (exit 1).
    Fail,
}

impl Outcome {
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Pass => ExitCode::SUCCESS,
            Outcome::Fail => ExitCode::from(1),
        }
    }
    pub fn from_pass(pass: bool) -> Self {
        if pass {
            Outcome::Pass
        } else {
            Outcome::Fail
        }
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "normoracle",
    version,
    about = "An exact oracle for LayerNorm/RMSNorm kernels, and the geometry of LayerNorm",
    long_about = "Exit codes: 0 pass, 1 the kernel (or claim) under test failed, 2 usage or input error."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Check everything built in (reference, kernels, theorems) and print a verdict table.
    Audit(audit::Args),
    /// Write the correctly rounded outputs of x (golden outputs for any test suite).
    Reference(reference::Args),
    /// Judge outputs produced by any framework against the exact reference.
    Check(check::Args),
    /// Time a verdict against numpy's float64 LayerNorm of the same data.
    BenchOracle(bench_oracle::Args),
    /// Write the battery to a directory (.npy files and a manifest) for other frameworks.
    Cases(cases::Args),
    /// The accuracy table of every kernel available here (builtins, the C example, Python drivers).
    Zoo(zoo::Args),
    /// Reproduce a published table or figure, with its provenance (--list names them).
    Reproduce(reproduce::Args),
    /// Run the battery through a kernel (shared library or builtin) and judge it.
    Fuzz(fuzz::Args),
    /// The papers' theorems, each checked in exact arithmetic, with their verdicts
    /// ("verified": exact checks on the seeded instances tried, not a proof for all d).
    Theorems(theorems::Args),
    /// Throughput of the native kernels vs a memcpy of the same bytes, the floor (what every
    /// kernel must do) and candle-nn.
    Bench(bench::Args),
    /// The LayerNorm output hyperellipsoid (Riechers 2024): normal, axes, certified lengths.
    Ellipsoid(ellipsoid::Args),
    /// Keys no query can select (Brody et al. 2023, Theorem 1), with exact certificates.
    Unselectable(unselectable::Args),
    /// The isolated harness's worker process (started by `fuzz --lib`, not by people).
    #[command(hide = true)]
    Worker(worker::Args),
}

pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Audit(a) => audit::run(a),
        Command::Reference(a) => reference::run(a),
        Command::Check(a) => check::run(a),
        Command::Fuzz(a) => fuzz::run(a),
        Command::Reproduce(a) => reproduce::run(a),
        Command::Zoo(a) => zoo::run(a),
        Command::Cases(a) => cases::run(a),
        Command::BenchOracle(a) => bench_oracle::run(a),
        Command::Theorems(args) => theorems::run(args),
        Command::Bench(a) => bench::run(a),
        Command::Ellipsoid(args) => ellipsoid::run(args),
        Command::Unselectable(a) => unselectable::run(a),
        Command::Worker(a) => std::process::exit(worker::run(a)),
    }
}
