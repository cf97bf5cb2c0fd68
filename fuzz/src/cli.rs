//! The cli target: arbitrary command lines through the binary's own clap definitions
//! (`src/cli`, compiled here as a module, unchanged), then the commands that only read:
//! `check` with every path confined to a sandbox of small files, `fuzz --builtin` for one
//! `--case`, and `fuzz --lib` naming no file (its options and refusal, isolated or
//! `--in-process`). Commands that write files, load shared libraries or run long are parsed
//! only.
//! Properties: no panic (clap's definitions included: its debug assertions run here), and
//! every error is one line.

use clap::Parser;
use normoracle_cli::fuzzing::{input, sandbox};
use std::path::PathBuf;
use std::sync::OnceLock;

#[allow(dead_code)]
#[path = "../../src/cli/mod.rs"]
mod binary_cli;

use binary_cli::{Cli, Command};

/// The sandbox, written once per machine and layout (shared by parallel fuzzing jobs).
fn sandbox_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("normoracle-fuzz-sandbox-v{}", sandbox::LAYOUT));
        sandbox::ensure(&dir).expect("the cli target's sandbox can be written");
        dir
    })
}

/// Runs one fuzz input.
pub fn run(data: &[u8]) {
    crate::single_threaded();
    let argv = input::argv_from_bytes(data);
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => {
            // What the binary prints for usage errors, --help and --version.
            let _ = e.render().to_string();
            return;
        }
    };
    let result = match cli.command {
        Command::Check(mut args) => {
            let dir = sandbox_dir();
            let confine = |p: &mut Option<PathBuf>| match p.take() {
                None => Some(()),
                Some(path) => sandbox::confine(dir, &path).map(|inside| *p = Some(inside)),
            };
            let all_inside = [
                &mut args.dir,
                &mut args.x,
                &mut args.y,
                &mut args.gamma,
                &mut args.beta,
            ]
            .into_iter()
            .all(|p| confine(p).is_some());
            if !all_inside {
                return;
            }
            binary_cli::check::run(args)
        }
        Command::Fuzz(args) if args.lib.is_none() && args.case.is_some() => {
            binary_cli::fuzz::run(args)
        }
        // A library path inside the sandbox that names no file: the isolated harness's checks
        // of its options and its refusal, before any worker would start (this binary is no
        // `normoracle` to start as one).
        Command::Fuzz(mut args) if args.case.is_some() => {
            let Some(lib) = args.lib.take() else { return };
            match sandbox::confine(sandbox_dir(), &lib) {
                Some(inside) if !inside.exists() => args.lib = Some(inside),
                _ => return,
            }
            binary_cli::fuzz::run(args)
        }
        _ => return,
    };
    if let Err(e) = result {
        let message = e.to_string();
        assert!(
            !message.contains('\n') && !message.is_empty(),
            "error message is not one line: {message:?}\nargv: {argv:?}"
        );
    }
}
