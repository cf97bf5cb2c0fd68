//! The worker process as the parent sees it: started with its pipes, fed a request, waited
//! on with a deadline, and killed.

use super::*;

pub(super) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, which are then owned here.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // 1 MiB of buffer where the system allows it (64 KiB otherwise): a case's arrays cross in
    // one or a few writes instead of a context switch every 64 KiB.
    // SAFETY: F_SETPIPE_SZ on a pipe just made; failure leaves the default size.
    unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 1 << 20) };
    // SAFETY: both are fresh descriptors owned by no one else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads exactly `buf.len()` bytes before `deadline`: Ok(false) at end of stream before the
/// first byte, Err(TimedOut) past the deadline.
pub(super) fn read_exact_until(
    file: &mut File,
    buf: &mut [u8],
    deadline: Instant,
) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut poll = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, ms) };
        if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if ready == 0 {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        match file.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// What waiting for a response gave.
pub(super) enum Waited {
    Response(Response),
    /// The channel closed (the worker died or closed it).
    Closed,
    TimedOut,
    /// Bytes that are not a response.
    Garbage(String),
}

impl Worker {
    pub(super) fn spawn(
        isolation: &Isolation,
        lib: &Path,
        symbol: &str,
        op: Op,
        dtype: Dtype,
    ) -> Result<Self> {
        let io = |e: std::io::Error| Error::io(format!("cannot start the worker: {e}"));
        let (request_read, request_write) = pipe().map_err(io)?;
        let (response_read, response_write) = pipe().map_err(io)?;
        let mut command = Command::new(&isolation.worker);
        command
            .arg("worker")
            .arg("--lib")
            .arg(lib)
            .args([
                "--symbol",
                symbol,
                "--op",
                op.name(),
                "--dtype",
                dtype.name(),
            ])
            .args(
                isolation
                    .memory_limit
                    .map(|bytes| format!("--memory-limit={bytes}")),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (request_fd, response_fd) = (request_read.as_raw_fd(), response_write.as_raw_fd());
        // SAFETY: only async-signal-safe calls (fcntl, dup2, setpgid) between fork
        // and exec.
        unsafe {
            command.pre_exec(move || {
                // Move both ends above the target numbers first, so that dup2 never clobbers
                // one with the other; dup2 clears close-on-exec on the targets.
                let a = libc::fcntl(request_fd, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(response_fd, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0 || b < 0 || libc::dup2(a, REQUEST_FD) < 0 || libc::dup2(b, RESPONSE_FD) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                // Its own process group: a timeout kills whatever the kernel started too.
                libc::setpgid(0, 0);
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(|e| {
            Error::io(format!(
                "cannot start the worker {}: {e}",
                isolation.worker.display()
            ))
        })?;
        drop((request_read, response_write));
        let output = Arc::new(Mutex::new(Captured::default()));
        let streams: [Option<Box<dyn Read + Send>>; 2] = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ];
        for mut stream in streams.into_iter().flatten() {
            let output = Arc::clone(&output);
            output.lock().map(|mut o| o.open += 1).ok();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    let n = match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if let Ok(mut o) = output.lock() {
                        o.total += n as u64;
                        o.tail.extend_from_slice(&buf[..n]);
                        let excess = o.tail.len().saturating_sub(OUTPUT_KEPT);
                        o.tail.drain(..excess);
                    }
                }
                output.lock().map(|mut o| o.open -= 1).ok();
            });
        }
        Ok(Worker {
            child,
            requests: File::from(request_write),
            responses: File::from(response_read),
            output,
        })
    }

    pub(super) fn wait_response(&mut self, deadline: Instant, max_payload: u64) -> Waited {
        // A request sent ahead may have been answered while this process was busy past the
        // deadline: the answer (its header at least, the pipe's first bytes) is there at once,
        // and gets a moment to be seen.
        let deadline = deadline.max(Instant::now() + COLLECT_GRACE);
        let mut head = [0u8; 9];
        match read_exact_until(&mut self.responses, &mut head, deadline) {
            Ok(true) => {}
            Ok(false) => return Waited::Closed,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Waited::TimedOut,
            Err(_) => return Waited::Closed,
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(&head[1..]);
        let len = u64::from_le_bytes(len);
        if len > max_payload {
            return Waited::Garbage(format!("a frame of {len} bytes"));
        }
        // The kernel has returned (the worker writes after the call): the rest is a copy.
        let deadline = Instant::now() + PAYLOAD_TIMEOUT;
        let mut payload = vec![0u8; len as usize];
        match read_exact_until(&mut self.responses, &mut payload, deadline) {
            Ok(true) => {}
            Ok(false) if len == 0 => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Waited::TimedOut,
            Ok(false) | Err(_) => return Waited::Closed,
        }
        match Response::decode(head[0], &payload) {
            Ok(r) => Waited::Response(r),
            Err(e) => Waited::Garbage(e.0),
        }
    }

    pub(super) fn send(&mut self, request: &Request) -> std::io::Result<()> {
        self.requests.write_all(&request.encode())?;
        self.requests.flush()
    }

    /// Kills the worker's whole process group (SIGKILL: no library can ignore it) and reaps it.
    pub(super) fn kill(&mut self) -> Option<ExitStatus> {
        let pid = self.child.id() as i32;
        // SAFETY: signals the worker's own process group (it called setpgid(0, 0)), and the
        // worker itself in case it had not yet.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
        self.child.wait().ok()
    }

    /// Waits for a worker that is dying on its own (crash frame sent, or channel closed), then
    /// kills what is left.
    pub(super) fn reap(&mut self) -> Option<ExitStatus> {
        let until = Instant::now() + DYING;
        while Instant::now() < until {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    // Whatever it started goes with it.
                    // SAFETY: as in `kill`.
                    unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
                    return Some(status);
                }
                Ok(None) => std::thread::sleep(Duration::from_micros(200)),
                Err(_) => break,
            }
        }
        self.kill()
    }

    pub(super) fn output_mark(&self) -> u64 {
        self.output.lock().map_or(0, |o| o.total)
    }

    /// What the kernel printed since `mark` (the kept end of it), waiting briefly for the
    /// streams of a dead worker to drain.
    pub(super) fn output_since(&self, mark: u64, dead: bool) -> Option<String> {
        if dead {
            let until = Instant::now() + Duration::from_millis(200);
            while Instant::now() < until && self.output.lock().map_or(0, |o| o.open) > 0 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let o = self.output.lock().ok()?;
        let new = o.total.saturating_sub(mark).min(o.tail.len() as u64) as usize;
        if new == 0 {
            return None;
        }
        let text = String::from_utf8_lossy(&o.tail[o.tail.len() - new..]).into_owned();
        let cut = if o.total - mark > new as u64 {
            "… "
        } else {
            ""
        };
        Some(format!("{cut}{}", text.trim_end()))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}
