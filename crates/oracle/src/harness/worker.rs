//! The worker process: loads the library, and calls its kernel on guarded buffers, one request
//! at a time (`normoracle worker`, started by the harness only).
//!
//! It reads requests on descriptor [`REQUEST_FD`] and answers on [`RESPONSE_FD`]; its standard
//! streams belong to the kernel (the parent captures them). Around each call it
//! - copies x, γ, β into buffers made read-only, and fills y's elements with a poison value;
//! - reads the floating-point control state before and after, and restores it if it changed;
//! - where elements of y still hold the poison, calls again with a second poison: those that
//!   hold it again were never written (a kernel may legitimately output any value once, not
//!   two chosen NaN payloads in two calls);
//! - checks the slack around y (writes just outside it), and, after the next call or at the
//!   end, whether y changed after the call returned (a thread still writing).
//!
//! A fatal signal during a call or while loading is placed by a handler (which buffer, which
//! element, read or write) and sent to the parent as a crash frame before the worker dies of
//! the same signal.

use super::fpenv::FpControl;
use super::guard::{Bounds, Guarded};
use super::protocol::{
    abi_bytes, read_frame, value_width, write_frame, CallRequest, CallResponse, CrashReport,
    Region, Request, Response, Spots,
};
use crate::adapters::dylib::{self, EntryPoint};
use crate::dtype::Dtype;
use crate::problem::Op;
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// The descriptor the worker reads requests from.
pub const REQUEST_FD: i32 = 3;
/// The descriptor the worker answers on.
pub const RESPONSE_FD: i32 = 4;
/// How long the worker waits after the last call before its final look for late writes
/// (the oracle judges the last case meanwhile).
const SETTLE: Duration = Duration::from_millis(2);
/// The worker's exit status when the harness's own channel fails (not the kernel's doing as
/// far as the worker can tell; the parent reports it with the worker's stderr).
pub const CHANNEL_FAILED: i32 = 3;

/// What the worker loads.
#[derive(Debug, Clone)]
pub struct WorkerSpec {
    pub lib: PathBuf,
    pub symbol: Option<String>,
    pub op: Op,
    pub dtype: Dtype,
    /// Address space the kernel may use beyond the worker's own, in bytes.
    pub memory_limit: Option<u64>,
}

/// Limits the address space to what the worker uses now plus `extra` bytes (its own
/// footprint — the binary, its libraries, the alternate signal stack — is not the kernel's).
fn limit_address_space(extra: u64) -> std::io::Result<()> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| std::io::Error::other("unreadable /proc/self/statm"))?;
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let bytes = pages.saturating_mul(page).saturating_add(extra);
    let limit = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: a valid rlimit for this process.
    if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The two poison values of y's elements for a dtype (bits; NaNs with unusual payloads).
fn poisons(dtype: Dtype) -> [u32; 2] {
    match dtype {
        Dtype::F16 => [0x7da5, 0xfe5a],
        Dtype::BF16 => [0x7fa5, 0xffda],
        _ => [0x7fa5_a5a5, 0xffda_5a5a],
    }
}

fn fill(bytes: &mut [u8], value: u32, width: usize) {
    let pattern = abi_bytes(u64::from(value), width);
    for chunk in bytes.chunks_exact_mut(width) {
        chunk.copy_from_slice(&pattern[..width]);
    }
}

fn element_equals(chunk: &[u8], value: u32, width: usize) -> bool {
    *chunk == abi_bytes(u64::from(value), width)[..width]
}

// The signal handler's view: each region's bounds (low, start, end, high), the value width,
// and whether the library is being loaded.
static BOUNDS: [AtomicUsize; 20] = [const { AtomicUsize::new(0) }; 20];
static WIDTH: AtomicUsize = AtomicUsize::new(4);
static LOADING: AtomicU8 = AtomicU8::new(0);

fn publish(region: Region, bounds: Bounds) {
    let k = region as usize * 4;
    for (i, v) in [bounds.low, bounds.start, bounds.end, bounds.high]
        .into_iter()
        .enumerate()
    {
        BOUNDS[k + i].store(v, Relaxed);
    }
}

/// The region an address lies in or beside, and its element offset there.
fn place(address: usize) -> (Region, i64) {
    let width = WIDTH.load(Relaxed).max(1) as i64;
    for region in [Region::X, Region::Gamma, Region::Beta, Region::Y] {
        let k = region as usize * 4;
        let [low, start, _, high] = [0, 1, 2, 3].map(|i| BOUNDS[k + i].load(Relaxed));
        if low <= address && address < high {
            let offset = address as i64 - start as i64;
            return (region, offset.div_euclid(width));
        }
    }
    (Region::None, 0)
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn access_of(signal: i32, context: *mut libc::c_void) -> u8 {
    if signal != libc::SIGSEGV || context.is_null() {
        return 0;
    }
    // SAFETY: the kernel passes a valid ucontext_t to an SA_SIGINFO handler.
    let err = unsafe {
        (*(context as *const libc::ucontext_t)).uc_mcontext.gregs[libc::REG_ERR as usize]
    };
    // Bit 1 of the page-fault error code: the access was a write.
    if err & 2 != 0 {
        2
    } else {
        1
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn access_of(_: i32, _: *mut libc::c_void) -> u8 {
    0
}

extern "C" fn on_fatal_signal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    let faulting = matches!(
        signal,
        libc::SIGSEGV | libc::SIGBUS | libc::SIGFPE | libc::SIGILL
    );
    let address = if faulting && !info.is_null() {
        // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
        unsafe { (*info).si_addr() as usize }
    } else {
        0
    };
    let (region, element) = if address != 0 {
        place(address)
    } else {
        (Region::None, 0)
    };
    let frame = CrashReport {
        signal,
        address: address as u64,
        region: region as u8,
        element,
        access: access_of(signal, context),
        loading: LOADING.load(Relaxed),
    }
    .frame();
    // SAFETY: write(2) and raise(3) are async-signal-safe; the frame lives on this stack. The
    // disposition was reset on entry (SA_RESETHAND), so the raised signal, delivered when the
    // handler returns, ends the worker with that signal.
    unsafe {
        libc::write(RESPONSE_FD, frame.as_ptr().cast(), frame.len());
        libc::raise(signal);
    }
}

/// Installs the crash handler for the fatal signals, on an alternate stack (so a stack
/// overflow is reported too).
fn install_crash_handlers() {
    const ALT_STACK: usize = 256 * 1024;
    let stack = Box::leak(vec![0u8; ALT_STACK].into_boxed_slice());
    let alt = libc::stack_t {
        ss_sp: stack.as_mut_ptr().cast(),
        ss_flags: 0,
        ss_size: ALT_STACK,
    };
    // SAFETY: the alternate stack is leaked (lives as long as the process); the sigaction
    // struct is fully initialized (zeroed, then the fields set).
    unsafe {
        libc::sigaltstack(&alt, std::ptr::null_mut());
        for signal in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGABRT,
            libc::SIGTRAP,
            libc::SIGSYS,
        ] {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESETHAND;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// The guarded input buffers of one call.
struct Inputs {
    x: Guarded,
    gamma: Option<Guarded>,
    beta: Option<Guarded>,
}

/// Spare mappings, reused by later calls (a fresh mapping per buffer and call cost the
/// worker more than the kernel: page faults, and address-space changes on every call).
#[derive(Default)]
struct Pool {
    spare: Vec<Guarded>,
}

impl Pool {
    const KEPT: usize = 8;

    /// A buffer of `len` bytes: a spare mapping it fits, laid out anew, or a fresh one.
    fn take(&mut self, len: usize) -> std::io::Result<Guarded> {
        match self.spare.iter().position(|g| g.fits(len)) {
            Some(k) => {
                let mut g = self.spare.swap_remove(k);
                g.relayout(len)?;
                Ok(g)
            }
            None => Guarded::new(len),
        }
    }

    fn give(&mut self, g: Guarded) {
        if self.spare.len() < Self::KEPT {
            self.spare.push(g);
        }
    }
}

fn read_only(pool: &mut Pool, bytes: &[u8], region: Region) -> std::io::Result<Guarded> {
    let mut g = pool.take(bytes.len())?;
    g.bytes_mut().copy_from_slice(bytes);
    g.protect_read_only()?;
    publish(region, g.bounds());
    Ok(g)
}

impl Inputs {
    fn of(pool: &mut Pool, c: &CallRequest) -> std::io::Result<Self> {
        for region in [Region::Gamma, Region::Beta] {
            publish(region, Bounds::default());
        }
        let x = read_only(pool, &c.x, Region::X)?;
        let mut param = |v: &Option<Vec<u8>>, region| {
            v.as_deref()
                .map(|bytes| read_only(pool, bytes, region))
                .transpose()
        };
        let gamma = param(&c.gamma, Region::Gamma)?;
        let beta = param(&c.beta, Region::Beta)?;
        Ok(Inputs { x, gamma, beta })
    }

    fn give_back(self, pool: &mut Pool) {
        pool.give(self.x);
        for g in [self.gamma, self.beta].into_iter().flatten() {
            pool.give(g);
        }
    }
}

fn ptr_of(g: &Option<Guarded>) -> *const u8 {
    g.as_ref().map_or(std::ptr::null(), Guarded::ptr)
}

/// One call with y's elements filled with `poison`: the return code and the control state
/// before and after (restored to `before` if the kernel changed it).
fn call_once(
    entry: EntryPoint,
    c: &CallRequest,
    inputs: &Inputs,
    y: &mut Guarded,
    poison: u32,
) -> (i32, FpControl, FpControl) {
    let width = usize::from(c.width);
    fill(y.bytes_mut(), poison, width);
    let before = FpControl::read();
    // SAFETY: the buffers hold rows·d (x, y) and d (γ, β) values of the entry's type, as the
    // request was decoded to; y is writable. What the kernel does beyond that is the
    // harness's to catch.
    let rc = unsafe {
        entry.call_raw(
            inputs.x.ptr(),
            ptr_of(&inputs.gamma),
            ptr_of(&inputs.beta),
            y.mut_ptr(),
            c.rows as usize,
            c.d as usize,
            f32::from_bits(c.eps_bits),
        )
    };
    let after = FpControl::read();
    if after != before {
        before.restore();
    }
    (rc, before, after)
}

/// Elements of the last call's y that changed since its outputs were sent.
fn late_writes(last: &Option<(Guarded, Vec<u8>)>, width: usize) -> Spots {
    let mut spots = Spots::default();
    if let Some((y, sent)) = last {
        for (k, (now, then)) in y
            .bytes()
            .chunks_exact(width)
            .zip(sent.chunks_exact(width))
            .enumerate()
        {
            if now != then {
                if spots.count == 0 {
                    spots.first = k as i64;
                }
                spots.count += 1;
            }
        }
    }
    spots
}

/// One request: the kernel's call(s) on guarded buffers, and what was seen around them;
/// `previous` is the last call's y and the bytes sent for it, checked for late writes after
/// this call.
fn call(
    entry: EntryPoint,
    dtype: Dtype,
    c: &CallRequest,
    previous: Option<(Guarded, Vec<u8>)>,
    pool: &mut Pool,
) -> std::io::Result<(CallResponse, Guarded)> {
    let width = usize::from(c.width);
    let inputs = Inputs::of(pool, c)?;
    let mut y = pool.take(c.x.len())?;
    publish(Region::Y, y.bounds());
    let [first_poison, second_poison] = poisons(dtype);
    let (return_code, fp_before, fp_after) = call_once(entry, c, &inputs, &mut y, first_poison);
    let outputs = y.bytes().to_vec();
    let still_poison: Vec<usize> = outputs
        .chunks_exact(width)
        .enumerate()
        .filter(|(_, v)| element_equals(v, first_poison, width))
        .map(|(k, _)| k)
        .collect();
    let mut unwritten = Spots::default();
    if !still_poison.is_empty() {
        call_once(entry, c, &inputs, &mut y, second_poison);
        let again = y.bytes();
        for &k in &still_poison {
            if element_equals(&again[k * width..][..width], second_poison, width) {
                if unwritten.count == 0 {
                    unwritten.first = k as i64;
                }
                unwritten.count += 1;
            }
        }
    }
    let (before_start, past_end) = y.slack_damage(width);
    let late = late_writes(&previous, width);
    inputs.give_back(pool);
    if let Some((last_y, _)) = previous {
        pool.give(last_y);
    }
    Ok((
        CallResponse {
            return_code,
            fp_before: fp_before.0,
            fp_after: fp_after.0,
            late,
            before_start,
            past_end,
            unwritten,
            y: outputs,
        },
        y,
    ))
}

fn send(out: &mut File, response: &Response) -> bool {
    write_frame(out, &response.encode()).is_ok()
}

/// Runs the worker: returns its exit status.
pub fn serve(spec: &WorkerSpec) -> i32 {
    // SAFETY: F_GETFD only asks whether the descriptors are open.
    let open = |fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0;
    if !open(REQUEST_FD) || !open(RESPONSE_FD) {
        eprintln!("normoracle worker: started by the harness only (`normoracle fuzz --lib`)");
        return 2;
    }
    // SAFETY: both descriptors are open (checked above) and owned by this process alone.
    // Never closed by a drop: a kernel may have closed them already, and closing a closed
    // descriptor aborts (std's I/O-safety check); the worker's exit closes them.
    let (mut requests, mut responses) = unsafe {
        (
            ManuallyDrop::new(File::from_raw_fd(REQUEST_FD)),
            ManuallyDrop::new(File::from_raw_fd(RESPONSE_FD)),
        )
    };
    install_crash_handlers();
    if let Some(extra) = spec.memory_limit {
        if let Err(e) = limit_address_space(extra) {
            eprintln!("normoracle worker: cannot limit the address space: {e}");
            return CHANNEL_FAILED;
        }
    }
    let width = value_width(spec.dtype);
    WIDTH.store(width, Relaxed);
    LOADING.store(1, Relaxed);
    let before_load = FpControl::read();
    let opened = dylib::open(&spec.lib, spec.symbol.as_deref(), spec.op, spec.dtype);
    let after_load = FpControl::read();
    LOADING.store(0, Relaxed);
    let (_library, entry) = match opened {
        Ok((library, entry, _)) => (library, entry),
        Err(e) => {
            let message = e.to_string();
            send(&mut responses, &Response::LoadFailed { message });
            return 0;
        }
    };
    let ready = Response::Ready {
        before_load: before_load.0,
        after_load: after_load.0,
    };
    if !send(&mut responses, &ready) {
        return CHANNEL_FAILED;
    }
    let mut last: Option<(Guarded, Vec<u8>)> = None;
    let mut pool = Pool::default();
    loop {
        let (tag, payload) = match read_frame(&mut *requests) {
            Ok(Some(frame)) => frame,
            Ok(None) => return 0,
            Err(_) => return CHANNEL_FAILED,
        };
        let request = match Request::decode(tag, &payload) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("normoracle worker: bad request: {e}");
                return CHANNEL_FAILED;
            }
        };
        match request {
            Request::Finish => {
                std::thread::sleep(SETTLE);
                let late = late_writes(&last, width);
                send(&mut responses, &Response::Done { late });
                // The last y stays mapped: a thread may still be writing it.
                std::mem::forget(last);
                return 0;
            }
            Request::Call(c) => {
                // The last y stays as it was through this call and is compared after it: a
                // thread of the last call writing it while this one runs is seen. It is reused
                // then (a thread writing it later writes into a later call's buffers: a crash
                // where that is an input, a wrong output where it is y).
                let (response, y) = match call(entry, spec.dtype, &c, last.take(), &mut pool) {
                    Ok(done) => done,
                    Err(e) => {
                        eprintln!("normoracle worker: cannot map the buffers: {e}");
                        return CHANNEL_FAILED;
                    }
                };
                let sent = y.bytes().to_vec();
                if !send(&mut responses, &Response::Called(response)) {
                    return CHANNEL_FAILED;
                }
                last = Some((y, sent));
            }
        }
    }
}
