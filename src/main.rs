//! The `normoracle` binary: a thin clap shell over the library. Exit codes: 0 pass,
//! 1 the kernel (or claim) under test failed, 2 usage or input error (one line on stderr).

use clap::Parser;
use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(outcome) => outcome.exit_code(),
        Err(e) => {
            eprintln!("normoracle: {e}");
            ExitCode::from(2)
        }
    }
}
