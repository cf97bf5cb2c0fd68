//! The `normoracle` binary: a thin clap shell over the library. Exit codes: 0 pass,
//! 1 the kernel (or claim) under test failed, 2 usage or input error (one line on stderr).
//! A closed stdout (`| head`) is not an error: the output stops and the exit code is the
//! command's own (see cli/stdout.rs).

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            // --help and --version (clap's own text, on stdout), or the help shown for a
            // bare `normoracle` (on stderr, a usage error).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "normoracle: {}",
                one_line(&e.to_string())
            );
            return ExitCode::from(2);
        }
    };
    match cli::run(args) {
        Ok(outcome) => outcome.exit_code(),
        Err(e) => {
            // Not eprintln!: it panics when stderr is a closed pipe.
            let _ = writeln!(std::io::stderr(), "normoracle: {e}");
            ExitCode::from(2)
        }
    }
}

/// A clap error on one line: its message and details, without the usage and tips after them.
fn one_line(rendered: &str) -> String {
    rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect::<Vec<_>>()
        .join(" ")
        .trim_start_matches("error: ")
        .replace(": usage error: ", ": ")
}
