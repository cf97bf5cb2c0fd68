//! Writes the fuzz targets' seed corpora (battery cases in each target's input format):
//!
//! `cargo run --example fuzz_seeds -- DIR [TARGET...]`
//!
//! writes `DIR/<target>/seed-NNN` for each target named (default: every target the library
//! knows, the cli target included). Existing files of the same names are overwritten; other
//! corpus entries are kept.

use normoracle_cli::fuzzing::Target;
use std::path::PathBuf;
use std::process::ExitCode;

fn run() -> normoracle::Result<usize> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or_else(|| normoracle::Error::usage("usage: fuzz_seeds DIR [TARGET...]"))?,
    );
    let named: Vec<String> = args.collect();
    let targets = if named.is_empty() {
        let mut all = Target::library_checked();
        all.push(Target::Cli);
        all
    } else {
        named
            .iter()
            .map(|n| Target::from_name(n))
            .collect::<normoracle::Result<_>>()?
    };
    let mut written = 0;
    for target in targets {
        let corpus = dir.join(target.name());
        std::fs::create_dir_all(&corpus)?;
        for (i, seed) in target.seeds().iter().enumerate() {
            std::fs::write(corpus.join(format!("seed-{i:03}")), seed)?;
            written += 1;
        }
    }
    Ok(written)
}

fn main() -> ExitCode {
    match run() {
        Ok(n) => {
            eprintln!("fuzz_seeds: {n} seeds written");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fuzz_seeds: {e}");
            ExitCode::from(2)
        }
    }
}
