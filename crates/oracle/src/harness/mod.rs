//! How a kernel under test is called, and what the oracle sees of the call beyond its outputs.
//!
//! A kernel in a shared library runs in a worker process ([`Isolated`], [`worker`]): the
//! oracle never loads the library, never shares its address space or floating-point
//! environment with it, and survives whatever it does. Each call is guarded
//! ([`guard`]: read-only inputs, guard pages and poison around y, a poisoned y to find
//! elements never written), timed (a per-call timeout enforced with SIGKILL, which no library
//! can ignore), and watched ([`fpenv`]: the floating-point control state before and after
//! loading and around each call). What it sees is a [`Finding`]; every finding fails the
//! run (exit 1), and names its case.
//!
//! In-process kernels (builtins, Rust closures) get the floating-point check alone
//! (`Kernel::call`'s default).

pub mod fpenv;
pub mod guard;
mod isolated;
pub mod protocol;
pub mod worker;

use crate::adapters::Kernel;
use crate::problem::Problem;
use fpenv::FpControl;
pub use isolated::{Isolated, Isolation};
use serde::Serialize;

/// What one call of a kernel produced.
#[derive(Debug, Clone, Default)]
pub struct Call {
    /// The outputs (rows × d bits of the problem's dtype), when the kernel returned: judged
    /// even when a finding fails the case anyway (its errors are reported too).
    pub outputs: Option<Vec<u64>>,
    /// What the harness saw; each fails the case.
    pub findings: Vec<Finding>,
    /// The kernel was not called (it had failed the same way on consecutive cases).
    pub not_run: bool,
}

impl Call {
    pub fn returned(outputs: Vec<u64>) -> Self {
        Call {
            outputs: Some(outputs),
            ..Call::default()
        }
    }

    pub fn failed(finding: Finding) -> Self {
        Call {
            findings: vec![finding],
            ..Call::default()
        }
    }
}

/// Something a kernel did that no correct kernel does, besides wrong outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// Returned a non-zero code (the C ABI's error return).
    ReturnedError,
    /// Returned the wrong number of outputs (Rust kernels).
    WrongLength,
    /// Died of a signal during the call (or while its library was loaded).
    Crashed,
    /// Ended the process (exit, _exit) during the call.
    Exited,
    /// Did not return within the timeout.
    TimedOut,
    /// Wrote to one of its inputs x, γ, β.
    WroteInput,
    /// Wrote outside y (before its first or past its last element).
    WroteOutside,
    /// Left elements of y unwritten.
    Unwritten,
    /// Wrote y after the call had returned (a thread left running).
    LateWrite,
    /// Left the floating-point control state changed after the call.
    FpEnvironment,
    /// Changed the floating-point control state when its library was loaded.
    FpEnvironmentAtLoad,
    /// Broke the harness's channel to the worker, or the worker failed.
    Harness,
    /// Not called on the remaining cases after failing the same way on consecutive ones.
    Stopped,
}

impl FindingKind {
    /// Words for reports.
    pub fn label(self) -> &'static str {
        match self {
            FindingKind::ReturnedError => "returned an error",
            FindingKind::WrongLength => "wrong output length",
            FindingKind::Crashed => "crashed",
            FindingKind::Exited => "exited",
            FindingKind::TimedOut => "timed out",
            FindingKind::WroteInput => "wrote to its input",
            FindingKind::WroteOutside => "wrote outside y",
            FindingKind::Unwritten => "left y unwritten",
            FindingKind::LateWrite => "wrote y after returning",
            FindingKind::FpEnvironment => "changed the floating-point environment",
            FindingKind::FpEnvironmentAtLoad => {
                "changed the floating-point environment when loaded"
            }
            FindingKind::Harness => "broke the harness",
            FindingKind::Stopped => "stopped",
        }
    }
}

/// One finding: its kind, what exactly happened, and the kernel's own output around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub detail: String,
    /// The end of what the kernel printed on stdout/stderr during the call, if anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl Finding {
    pub fn new(kind: FindingKind, detail: impl Into<String>) -> Self {
        Finding {
            kind,
            detail: detail.into(),
            output: None,
        }
    }
}

/// A call of an in-process kernel: `run`, with the floating-point control state read before
/// and after, and restored (a finding) if the kernel changed it.
pub fn call_in_process<K: Kernel + ?Sized>(kernel: &K, problem: &Problem) -> Call {
    let before = FpControl::read();
    let result = kernel.run(problem);
    let after = FpControl::read();
    let mut call = match result {
        Ok(y) => Call::returned(y),
        Err(msg) => Call::failed(Finding::new(FindingKind::ReturnedError, msg)),
    };
    if after != before {
        before.restore();
        call.findings.push(call_changed(&before.changes_to(after)));
    }
    call
}

/// The finding of a library whose loading changed the floating-point control state.
pub fn load_changed(changes: &[String]) -> Finding {
    Finding::new(
        FindingKind::FpEnvironmentAtLoad,
        format!(
            "{} (what -Ofast/-ffast-math startup code does): every program that loads the library computes in that mode",
            changes.join("; ")
        ),
    )
}

/// The finding of a call that left the floating-point control state changed.
pub fn call_changed(changes: &[String]) -> Finding {
    Finding::new(
        FindingKind::FpEnvironment,
        format!("left behind after the call: {}", changes.join("; ")),
    )
}

/// The name of a signal, for reports.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGSEGV => "SIGSEGV (segmentation fault)",
        libc::SIGBUS => "SIGBUS (bus error)",
        libc::SIGFPE => "SIGFPE (arithmetic exception)",
        libc::SIGILL => "SIGILL (illegal instruction)",
        libc::SIGABRT => "SIGABRT (abort)",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS (bad system call)",
        libc::SIGXCPU => "SIGXCPU (CPU time limit)",
        libc::SIGPIPE => "SIGPIPE",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::reference_f64::ReferenceF64;
    use crate::cases::{BatteryConfig, Family};
    use crate::dtype::Dtype;
    use crate::judge;
    use crate::problem::Op;

    /// A correct in-process kernel that turns FTZ/DAZ on in every call and leaves them on.
    struct LeavesFlushToZero;

    impl Kernel for LeavesFlushToZero {
        fn name(&self) -> String {
            "leaves-ftz".into()
        }
        fn supports(&self, op: Op, dtype: Dtype) -> bool {
            ReferenceF64.supports(op, dtype)
        }
        fn run(&self, p: &Problem) -> std::result::Result<Vec<u64>, String> {
            let y = ReferenceF64.run(p);
            let now = FpControl::read();
            FpControl(now.0 | flush_to_zero_bits()).restore();
            y
        }
    }

    fn flush_to_zero_bits() -> u64 {
        if cfg!(target_arch = "x86_64") {
            0x8040
        } else {
            1 << 24
        }
    }

    /// The judge never runs in the state an in-process kernel left: each call's change is a
    /// finding, undone before the outputs are judged, and the subnormal rows (which FTZ/DAZ
    /// in the judge would read as zero, as "undefined") are judged as in a clean run.
    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn an_in_process_kernel_cannot_leave_the_judge_flushing_subnormals() {
        let clean = FpControl::read();
        let mut config = BatteryConfig::new(Op::LayerNorm, Dtype::F32, 5);
        config.random_cases = 0;
        config.families = vec![Family::Subnormal];
        let report = judge::run_battery(&LeavesFlushToZero, &config, None, false).unwrap();
        assert_eq!(FpControl::read(), clean);
        let honest = judge::run_battery(&ReferenceF64, &config, None, false).unwrap();
        assert!(honest.passed());
        assert!(!report.passed());
        assert_eq!(report.findings.len(), report.cases);
        assert!(report
            .findings
            .iter()
            .all(|f| f.finding.kind == FindingKind::FpEnvironment));
        // The outputs were judged in a clean state: the same tallies as the honest kernel's.
        assert_eq!(report.tally.judged, honest.tally.judged);
        assert_eq!(report.tally.undefined, honest.tally.undefined);
        assert_eq!(report.tally.failed, 0);
    }
}
