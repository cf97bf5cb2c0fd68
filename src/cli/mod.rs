//! One file per subcommand, each a thin function over the library.

use clap::{Parser, Subcommand};
use normoracle::Result;
use std::process::ExitCode;

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
    /// Keys no query can select (Brody et al. 2023, Theorem 1), with exact certificates.
    Unselectable(unselectable::Args),
}

pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::Unselectable(a) => unselectable::run(a),
    }
}
