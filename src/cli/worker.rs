//! `normoracle worker` (hidden): the isolated harness's worker process, started by
//! `normoracle fuzz --lib` with its channel on descriptors 3 and 4. Not for people.

use normoracle::harness::worker::{self, WorkerSpec};
use normoracle::problem::Op;
use normoracle::Dtype;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[arg(long)]
    pub lib: PathBuf,
    #[arg(long)]
    pub symbol: Option<String>,
    #[arg(long, value_parser = |s: &str| s.parse::<Op>())]
    pub op: Op,
    #[arg(long, value_parser = |s: &str| s.parse::<Dtype>())]
    pub dtype: Dtype,
    /// Bytes of address space the kernel may use beyond the worker's own.
    #[arg(long)]
    pub memory_limit: Option<u64>,
}

/// Serves the harness; the worker's exit status (never a verdict: the parent reads its
/// answers, and treats its death as the kernel's).
pub fn run(args: Args) -> i32 {
    worker::serve(&WorkerSpec {
        lib: args.lib,
        symbol: args.symbol,
        op: args.op,
        dtype: args.dtype,
        memory_limit: args.memory_limit,
    })
}
