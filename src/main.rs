//! The `normoracle` binary: a thin clap shell over the library. Exit codes: 0 pass,
//! 1 the kernel (or claim) under test failed, 2 usage or input error (one line on stderr).
//! A closed stdout (`| head`) is not an error: the output stops and the exit code is the
//! command's own (see cli/stdout.rs).

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(outcome) => outcome.exit_code(),
        Err(e) => {
            // Not eprintln!: it panics when stderr is a closed pipe.
            let _ = writeln!(std::io::stderr(), "normoracle: {e}");
            ExitCode::from(2)
        }
    }
}
