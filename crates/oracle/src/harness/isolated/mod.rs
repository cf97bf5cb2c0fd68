//! The parent's side of the isolated harness: a kernel in a shared library, called in a
//! worker process that is restarted after every death.

use super::fpenv::FpControl;
use super::protocol::{
    abi_bytes, bits_of, value_width, CallRequest, CallResponse, CrashReport, Region, Request,
    Response, Spots, MAX_PAYLOAD,
};
use super::worker::{CHANNEL_FAILED, REQUEST_FD, RESPONSE_FD};
use super::{signal_name, Call, Finding, FindingKind};
use crate::adapters::{dylib, Kernel};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::problem::{Op, Problem};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod findings;
mod process;

use findings::{crash_place, death, response_name, spots_words};
use process::Waited;

/// How the worker is run.
#[derive(Debug, Clone)]
pub struct Isolation {
    /// The `normoracle` binary (the worker is its hidden `worker` subcommand).
    pub worker: PathBuf,
    /// The longest a call may take (the worker is killed with SIGKILL past it).
    pub timeout: Duration,
    /// The address space the kernel may use beyond the worker's own, in bytes (RLIMIT_AS,
    /// set by the worker before it loads the library).
    pub memory_limit: Option<u64>,
    /// Consecutive cases failing the same way (crash, exit, timeout) after which the kernel is
    /// no longer called: the remaining cases are reported as not run.
    pub max_consecutive: usize,
}

impl Isolation {
    /// The default per-call timeout: 200 times what a correct kernel needs (the C example
    /// passes the whole default battery with `--timeout 0.05`, its two calls on poisoned
    /// outputs included), and small enough that a kernel that hangs on every case ends the
    /// run in half a minute (`MAX_CONSECUTIVE` × this).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    pub const MAX_CONSECUTIVE: usize = 3;

    /// The defaults, with `worker` as the worker binary.
    pub fn new(worker: PathBuf) -> Self {
        Isolation {
            worker,
            timeout: Self::DEFAULT_TIMEOUT,
            memory_limit: None,
            max_consecutive: Self::MAX_CONSECUTIVE,
        }
    }
}

/// How much of the kernel's stdout/stderr is kept (the end of it).
const OUTPUT_KEPT: usize = 4096;
/// How long a worker that has sent a crash report or closed its channel may take to die.
const DYING: Duration = Duration::from_secs(2);
/// The least time given to an answer already due when the oracle comes to read it.
const COLLECT_GRACE: Duration = Duration::from_millis(100);
/// How long the rest of an answer may take once its header has arrived (a memory copy).
const PAYLOAD_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the worker may take to load the library and say so.
const LOAD_TIMEOUT_FLOOR: Duration = Duration::from_secs(10);

/// What the kernel printed, as the reader threads collect it.
#[derive(Default)]
struct Captured {
    /// The last `OUTPUT_KEPT` bytes.
    tail: Vec<u8>,
    /// All bytes ever read.
    total: u64,
    /// Streams still open.
    open: usize,
}

/// A running worker.
struct Worker {
    child: Child,
    requests: File,
    responses: File,
    output: Arc<Mutex<Captured>>,
}

/// Why a call failed in a way that counts towards stopping the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fatal {
    Signal(i32),
    Exit(i32),
    Timeout,
    Harness,
}

impl Fatal {
    fn words(self) -> String {
        match self {
            Fatal::Signal(s) => format!("crashes ({})", signal_name(s)),
            Fatal::Exit(c) => format!("exits (status {c})"),
            Fatal::Timeout => "timeouts".into(),
            Fatal::Harness => "broken channels".into(),
        }
    }
}

#[derive(Default)]
struct State {
    worker: Option<Worker>,
    /// The failure the last cases shared, and how many in a row.
    streak: Option<(Fatal, usize)>,
    /// Why the kernel is no longer called.
    stopped: bool,
    /// A change of the control state by loading, reported with the first call.
    load_change: Option<Vec<String>>,
    load_change_reported: bool,
    /// The request sent ahead (`prepare`), not yet answered.
    in_flight: Option<InFlight>,
    /// `Finish` was sent ahead (`prepare(None)`).
    finish_sent: bool,
}

/// A request the worker has (or is about to have), and when it was sent: the kernel's time
/// counts from then.
struct InFlight {
    key: ProblemKey,
    sent: Instant,
    mark: u64,
}

/// What identifies a problem sent ahead: the address and length of its values (the caller
/// passes the same problem to `prepare` and then `call`), its shape, ε, and a few of its
/// values (hashing them all would cost as much as sending them again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProblemKey {
    x: (usize, usize),
    rows: usize,
    d: usize,
    eps_bits: u32,
    sample: [u64; 4],
}

impl ProblemKey {
    fn of(p: &Problem) -> Self {
        let n = p.x.len();
        let at = |k: usize| p.x.get(k * n / 4).copied().unwrap_or(0);
        ProblemKey {
            x: (p.x.as_ptr() as usize, n),
            rows: p.rows,
            d: p.d,
            eps_bits: p.eps.value().to_bits(),
            sample: [
                at(0),
                at(1),
                at(2),
                at(3).max(p.x.last().copied().unwrap_or(0)),
            ],
        }
    }
}

/// A kernel in a shared library, called in a worker process.
pub struct Isolated {
    isolation: Isolation,
    lib: PathBuf,
    symbol: String,
    op: Op,
    dtype: Dtype,
    state: Mutex<State>,
}

/// Why a worker did not start.
enum StartFailure {
    /// The library or symbol is missing (a usage error).
    Load(String),
    /// It died, hung or misbehaved while loading.
    Kernel(Finding, Fatal),
}

impl Isolated {
    /// Starts a worker for `symbol` (default: the ABI's name) of `lib`: a usage error (exit 2)
    /// where the library or the symbol cannot be found; a kernel that crashes or hangs while
    /// its library loads is a finding of the first call instead.
    pub fn start(
        isolation: Isolation,
        lib: &Path,
        symbol: Option<&str>,
        op: Op,
        dtype: Dtype,
    ) -> Result<Self> {
        if dtype == Dtype::F64 {
            return Err(Error::usage(
                "the C ABI has no f64 entry points (f32, f16, bf16)",
            ));
        }
        // A bare name is looked up by the dynamic loader (LD_LIBRARY_PATH, the system's
        // directories) in the worker; a path must name a file.
        let is_path = lib.components().count() > 1;
        if is_path && !lib.exists() {
            return Err(Error::io(format!(
                "cannot load {}: no such file",
                lib.display()
            )));
        }
        let kernel = Isolated {
            symbol: symbol.map_or_else(|| dylib::default_symbol(op, dtype), str::to_string),
            lib: lib.to_path_buf(),
            isolation,
            op,
            dtype,
            state: Mutex::new(State::default()),
        };
        {
            let mut state = kernel.lock();
            match kernel.start_worker(&mut state) {
                Ok(worker) => state.worker = Some(worker),
                Err(StartFailure::Load(message)) => return Err(Error::input(message)),
                // Reported by the first call, which starts it again.
                Err(StartFailure::Kernel(..)) => {}
            }
        }
        Ok(kernel)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn start_worker(&self, state: &mut State) -> std::result::Result<Worker, StartFailure> {
        let mut worker = Worker::spawn(
            &self.isolation,
            &self.lib,
            &self.symbol,
            self.op,
            self.dtype,
        )
        .map_err(|e| StartFailure::Load(e.to_string()))?;
        let deadline = Instant::now() + self.isolation.timeout.max(LOAD_TIMEOUT_FLOOR);
        let failure = |worker: &mut Worker, kind, fatal, detail: String| {
            let output = worker.output_since(0, true);
            StartFailure::Kernel(
                Finding {
                    kind,
                    detail,
                    output,
                },
                fatal,
            )
        };
        match worker.wait_response(deadline, 1 << 16) {
            Waited::Response(Response::Ready {
                before_load,
                after_load,
            }) => {
                let changes = FpControl(before_load).changes_to(FpControl(after_load));
                if !changes.is_empty() && state.load_change.is_none() {
                    state.load_change = Some(changes);
                }
                Ok(worker)
            }
            Waited::Response(Response::LoadFailed { message }) => {
                worker.reap();
                Err(StartFailure::Load(message))
            }
            Waited::Response(Response::Crash(report)) => {
                let status = worker.reap();
                let signal = status.and_then(|s| s.signal()).unwrap_or(report.signal);
                Err(failure(
                    &mut worker,
                    FindingKind::Crashed,
                    Fatal::Signal(signal),
                    format!("{} while its library was being loaded", signal_name(signal)),
                ))
            }
            Waited::TimedOut => {
                worker.kill();
                Err(failure(
                    &mut worker,
                    FindingKind::TimedOut,
                    Fatal::Timeout,
                    "its library did not finish loading in time".into(),
                ))
            }
            Waited::Closed => {
                let status = worker.reap();
                let (kind, fatal, words) = death(status);
                Err(failure(
                    &mut worker,
                    kind,
                    fatal,
                    format!("{words} while its library was being loaded"),
                ))
            }
            Waited::Response(other) => {
                worker.kill();
                Err(failure(
                    &mut worker,
                    FindingKind::Harness,
                    Fatal::Harness,
                    format!("the worker answered {other:?} while loading"),
                ))
            }
            Waited::Garbage(what) => {
                worker.kill();
                Err(failure(
                    &mut worker,
                    FindingKind::Harness,
                    Fatal::Harness,
                    format!("the worker's channel carried {what} while loading"),
                ))
            }
        }
    }

    fn width(&self) -> usize {
        value_width(self.dtype)
    }

    fn request(&self, p: &Problem, case: u64) -> CallRequest {
        let width = self.width();
        let bytes = |bits: &[u64]| -> Vec<u8> {
            bits.iter()
                .flat_map(|&b| abi_bytes(b, width).into_iter().take(width))
                .collect()
        };
        CallRequest {
            case,
            rows: p.rows as u64,
            d: p.d as u64,
            eps_bits: p.eps.value().to_bits(),
            width: width as u8,
            x: bytes(&p.x),
            gamma: p.gamma.as_deref().map(bytes),
            beta: p.beta.as_deref().map(bytes),
        }
    }

    fn outputs(&self, y: &[u8]) -> Vec<u64> {
        y.chunks_exact(self.width()).map(bits_of).collect()
    }

    /// The findings a returned call carries.
    fn findings_of(&self, r: &CallResponse, d: u64) -> Vec<Finding> {
        let mut out = Vec::new();
        if r.return_code != 0 {
            out.push(Finding::new(
                FindingKind::ReturnedError,
                format!("the kernel returned {}", r.return_code),
            ));
        }
        let changes = FpControl(r.fp_before).changes_to(FpControl(r.fp_after));
        if !changes.is_empty() {
            out.push(super::call_changed(&changes));
        }
        if r.before_start.any() {
            out.push(Finding::new(
                FindingKind::WroteOutside,
                format!(
                    "wrote before the start of y: {} element(s), the nearest element {}",
                    r.before_start.count, r.before_start.first
                ),
            ));
        }
        if r.past_end.any() {
            out.push(Finding::new(
                FindingKind::WroteOutside,
                format!(
                    "wrote past the end of y: {} element(s), the first element {} (y has {})",
                    r.past_end.count,
                    r.past_end.first,
                    r.y.len() / self.width()
                ),
            ));
        }
        // A kernel that returned an error owes no outputs (and none are judged).
        if r.unwritten.any() && r.return_code == 0 {
            out.push(Finding::new(
                FindingKind::Unwritten,
                format!("never wrote {}", spots_words(r.unwritten, d)),
            ));
        }
        out
    }

    /// A fresh worker in `state`, or the failed call its start is.
    fn restart(&self, state: &mut State) -> std::result::Result<(), Call> {
        state.worker = None;
        match self.start_worker(state) {
            Ok(w) => {
                state.worker = Some(w);
                Ok(())
            }
            Err(StartFailure::Kernel(finding, fatal)) => Err(self.fatal(state, finding, fatal)),
            Err(StartFailure::Load(message)) => {
                let finding = Finding::new(
                    FindingKind::Harness,
                    format!("the worker could not load the library again: {message}"),
                );
                Err(self.fatal(state, finding, Fatal::Harness))
            }
        }
    }

    /// Ends a failed call: the worker is gone, the streak grows, and past the limit the kernel
    /// is stopped.
    fn fatal(&self, state: &mut State, mut finding: Finding, fatal: Fatal) -> Call {
        state.worker = None;
        let count = match state.streak {
            Some((f, n)) if f == fatal => n + 1,
            _ => 1,
        };
        state.streak = Some((fatal, count));
        let mut call = Call::default();
        if count >= self.isolation.max_consecutive {
            state.stopped = true;
            finding.detail.push_str(&format!(
                "; {count} consecutive {}: the kernel is not called on the remaining cases",
                fatal.words()
            ));
        }
        call.findings.push(finding);
        call
    }

    fn call_isolated(&self, p: &Problem, case: u64) -> Call {
        let mut state = self.lock();
        if state.stopped {
            return Call {
                not_run: true,
                ..Call::default()
            };
        }
        let mut early = Vec::new();
        if state.worker.is_none() {
            if let Err(failed) = self.restart(&mut state) {
                return failed;
            }
        }
        if let (Some(changes), false) = (&state.load_change, state.load_change_reported) {
            early.push(super::load_changed(changes));
            state.load_change_reported = true;
        }
        let n = (p.rows * p.d) as u64;
        let elements = [0, n, p.d as u64, p.d as u64, n];
        let width = self.width() as u64;
        let max_payload = (n * width + 256).min(MAX_PAYLOAD);
        let d = p.d as u64;
        let sent_ahead = match state.in_flight.take() {
            Some(f) if f.key == ProblemKey::of(p) => Some(f),
            // Another problem was sent ahead: its answer would come first. A fresh worker
            // (callers that keep `prepare`'s contract never get here).
            Some(_) => {
                if let Err(failed) = self.restart(&mut state) {
                    return failed;
                }
                None
            }
            None => None,
        };
        let worker = state.worker.as_mut().expect("started above");
        let (sent, mark) = match sent_ahead {
            Some(f) => (f.sent, f.mark),
            None => {
                let mark = worker.output_mark();
                // A failed write means the worker is gone: what it said before dying is read
                // below.
                let _ = worker.send(&Request::Call(self.request(p, case)));
                (Instant::now(), mark)
            }
        };
        let waited = worker.wait_response(sent + self.isolation.timeout, max_payload);
        let (finding, fatal) = match waited {
            Waited::Response(Response::Called(r)) => {
                let mut findings = early;
                if r.late.any() {
                    findings.push(Finding::new(
                        FindingKind::LateWrite,
                        format!(
                            "y of the previous call changed after it had returned: {}",
                            spots_words(r.late, d)
                        ),
                    ));
                }
                findings.extend(self.findings_of(&r, d));
                let output = worker.output_since(mark, false);
                for f in &mut findings {
                    f.output.clone_from(&output);
                }
                state.streak = None;
                return Call {
                    outputs: (r.return_code == 0).then(|| self.outputs(&r.y)),
                    findings,
                    not_run: false,
                };
            }
            Waited::Response(Response::Crash(report)) => {
                let status = worker.reap();
                let signal = status.and_then(|s| s.signal()).unwrap_or(report.signal);
                let place = crash_place(&report, &elements);
                let kind = match (Region::from_u8(report.region), report.access) {
                    _ if place.starts_with("writing to its input") => FindingKind::WroteInput,
                    // The guard page after (or before) y: the same bug as a write into the
                    // slack, caught by the page instead of the poison.
                    (Region::Y, 0 | 2) => FindingKind::WroteOutside,
                    _ => FindingKind::Crashed,
                };
                let place = if place.is_empty() {
                    String::new()
                } else {
                    format!(" {place}")
                };
                (
                    Finding::new(kind, format!("{}{place}", signal_name(signal))),
                    Fatal::Signal(signal),
                )
            }
            Waited::Closed => {
                let status = worker.reap();
                let (kind, fatal, words) = death(status);
                (
                    Finding::new(kind, format!("{words} during the call")),
                    fatal,
                )
            }
            Waited::TimedOut => {
                worker.kill();
                (
                    Finding::new(
                        FindingKind::TimedOut,
                        format!(
                            "did not return within {:.1} s (killed)",
                            self.isolation.timeout.as_secs_f64()
                        ),
                    ),
                    Fatal::Timeout,
                )
            }
            Waited::Response(other) => {
                worker.kill();
                (
                    Finding::new(
                        FindingKind::Harness,
                        format!(
                            "the worker answered {} instead of a result",
                            response_name(&other)
                        ),
                    ),
                    Fatal::Harness,
                )
            }
            Waited::Garbage(what) => {
                worker.kill();
                (
                    Finding::new(
                        FindingKind::Harness,
                        format!("the worker's channel carried {what} (did the kernel write to descriptor {RESPONSE_FD}?)"),
                    ),
                    Fatal::Harness,
                )
            }
        };
        let output = worker.output_since(mark, true);
        let mut call = self.fatal(&mut state, Finding { output, ..finding }, fatal);
        early.append(&mut call.findings);
        call.findings = early;
        call
    }

    /// Sends the next call's request (or, at the end, `Finish`) ahead, so that the worker
    /// works while the oracle judges the call before. Only to a running worker with nothing
    /// in flight; a call that finds no request of its own in flight sends it then.
    fn prepare_isolated(&self, next: Option<&Problem>) {
        let mut state = self.lock();
        if state.stopped || state.in_flight.is_some() || state.finish_sent {
            return;
        }
        let request = match next {
            Some(p) => Request::Call(self.request(p, 0)),
            None => Request::Finish,
        };
        let Some(worker) = state.worker.as_mut() else {
            return;
        };
        let mark = worker.output_mark();
        let _ = worker.send(&request);
        match next {
            Some(p) => {
                state.in_flight = Some(InFlight {
                    key: ProblemKey::of(p),
                    sent: Instant::now(),
                    mark,
                })
            }
            None => state.finish_sent = true,
        }
    }

    /// Ends the worker after the last call: writes into the last call's y that came late.
    fn finish_isolated(&self) -> Vec<Finding> {
        let mut state = self.lock();
        let finish_sent = std::mem::take(&mut state.finish_sent);
        state.in_flight = None;
        let Some(mut worker) = state.worker.take() else {
            return Vec::new();
        };
        if !finish_sent {
            let _ = worker.send(&Request::Finish);
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        let findings = match worker.wait_response(deadline, 1 << 10) {
            Waited::Response(Response::Done { late }) if late.any() => vec![Finding::new(
                FindingKind::LateWrite,
                format!(
                    "y of the last call changed after it had returned: {} element(s), the first element {}",
                    late.count, late.first
                ),
            )],
            _ => Vec::new(),
        };
        worker.reap();
        findings
    }
}

impl Kernel for Isolated {
    fn name(&self) -> String {
        format!("lib:{}:{}", self.lib.display(), self.symbol)
    }

    fn supports(&self, op: Op, dtype: Dtype) -> bool {
        op == self.op && dtype == self.dtype
    }

    fn run(&self, problem: &Problem) -> std::result::Result<Vec<u64>, String> {
        let call = self.call_isolated(problem, 0);
        match (call.outputs, call.findings.first()) {
            (Some(y), None) => Ok(y),
            (_, Some(f)) => Err(format!("{}: {}", f.kind.label(), f.detail)),
            (None, None) => Err("not run".into()),
        }
    }

    fn call(&self, problem: &Problem) -> Call {
        self.call_isolated(problem, 0)
    }

    fn prepare(&self, next: Option<&Problem>) {
        self.prepare_isolated(next)
    }

    fn finish(&self) -> Vec<Finding> {
        self.finish_isolated()
    }
}
