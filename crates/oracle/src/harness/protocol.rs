//! The messages between the oracle and its worker process, and their byte format.
//!
//! A frame is a tag byte, the payload's length as a little-endian u64, and the payload. Every
//! integer is little-endian; arrays are the ABI's values (f32, or u16 bit patterns) in their
//! native byte order, as the worker hands them to the kernel. Decoding never panics and never
//! allocates more than the frame declares (bounded by [`MAX_PAYLOAD`]): a worker whose kernel
//! scribbled over the harness's descriptors is a finding, not a crash of the oracle.

use crate::dtype::Dtype;
use std::io::{self, Read, Write};

/// Bytes per value the ABI passes for a dtype: 4 for f32, 2 for f16/bf16 bit patterns.
pub fn value_width(dtype: Dtype) -> usize {
    if dtype == Dtype::F32 {
        4
    } else {
        2
    }
}

/// A value's bits as the ABI passes them: its `width` bytes, in native order, first.
pub fn abi_bytes(bits: u64, width: usize) -> [u8; 4] {
    if width == 2 {
        let [a, b] = (bits as u16).to_ne_bytes();
        [a, b, 0, 0]
    } else {
        (bits as u32).to_ne_bytes()
    }
}

/// The bits of one ABI value (`width` bytes, native order).
pub fn bits_of(bytes: &[u8]) -> u64 {
    match *bytes {
        [a, b] => u64::from(u16::from_ne_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_ne_bytes([a, b, c, d])),
        _ => 0,
    }
}

/// The largest payload either side accepts (4 GiB: far past any battery case).
pub const MAX_PAYLOAD: u64 = 1 << 32;

/// The parent's requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Call the kernel on one problem.
    Call(CallRequest),
    /// No more calls: check for late writes once more and exit.
    Finish,
}

/// One call: the problem's shape, ε, and the input arrays as the ABI passes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRequest {
    pub case: u64,
    pub rows: u64,
    pub d: u64,
    pub eps_bits: u32,
    /// Bytes per value (4 for f32, 2 for f16/bf16).
    pub width: u8,
    pub x: Vec<u8>,
    pub gamma: Option<Vec<u8>>,
    pub beta: Option<Vec<u8>>,
}

/// Elements of a buffer the kernel touched where it should not have, or not at all: how many,
/// and the first (an element index; negative before the start of the buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spots {
    pub count: u64,
    pub first: i64,
}

impl Spots {
    pub fn any(&self) -> bool {
        self.count > 0
    }
}

/// The worker's answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// The library is loaded and its symbol resolved; the control state before and after.
    Ready { before_load: u64, after_load: u64 },
    /// The library could not be loaded, or has no such symbol (a usage error, not a verdict).
    LoadFailed { message: String },
    /// A call's outcome.
    Called(CallResponse),
    /// The worker is about to die of a signal during a call (from its signal handler).
    Crash(CrashReport),
    /// After `Finish`: late writes into the last call's y, if any.
    Done { late: Spots },
}

/// What one call returned and what the worker saw around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResponse {
    pub return_code: i32,
    /// Control state before and after the call (the worker restores `before` if they differ).
    pub fp_before: u64,
    pub fp_after: u64,
    /// Writes into the previous call's y after that call had returned (seen now).
    pub late: Spots,
    /// Writes into the poisoned bytes before y's first element and after its last.
    pub before_start: Spots,
    pub past_end: Spots,
    /// Elements of y the kernel never wrote (still poison after two calls with two poisons).
    pub unwritten: Spots,
    pub y: Vec<u8>,
}

/// Where a fatal signal struck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashReport {
    pub signal: i32,
    /// The faulting address (SIGSEGV, SIGBUS, SIGFPE, SIGILL), else 0.
    pub address: u64,
    /// Which of the harness's buffers it lies in or next to ([`Region`]).
    pub region: u8,
    /// Its offset in elements from that buffer's first element (negative before it).
    pub element: i64,
    /// 0 unknown, 1 a read, 2 a write (x86-64's page-fault error code).
    pub access: u8,
    /// 1 while the library was being loaded, 0 during a call.
    pub loading: u8,
}

/// The buffers a crash can be placed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    None = 0,
    X = 1,
    Gamma = 2,
    Beta = 3,
    Y = 4,
}

impl Region {
    pub fn from_u8(v: u8) -> Region {
        match v {
            1 => Region::X,
            2 => Region::Gamma,
            3 => Region::Beta,
            4 => Region::Y,
            _ => Region::None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Region::None => "-",
            Region::X => "x",
            Region::Gamma => "γ",
            Region::Beta => "β",
            Region::Y => "y",
        }
    }
}

/// Why bytes are not a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

const TAG_CALL: u8 = b'C';
const TAG_FINISH: u8 = b'F';
const TAG_READY: u8 = b'R';
const TAG_LOAD_FAILED: u8 = b'L';
const TAG_CALLED: u8 = b'Y';
const TAG_CRASH: u8 = b'X';
const TAG_DONE: u8 = b'D';

/// The byte size of a crash frame (fixed, so the signal handler can build it on its stack).
pub const CRASH_FRAME_LEN: usize = 9 + CRASH_PAYLOAD_LEN;
const CRASH_PAYLOAD_LEN: usize = 4 + 8 + 1 + 8 + 1 + 1;

/// A reader over a payload that fails instead of panicking.
struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ProtocolError> {
        if self.bytes.len() < n {
            return Err(ProtocolError(format!(
                "truncated {what}: {} bytes left, {n} needed",
                self.bytes.len()
            )));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn u8(&mut self, what: &str) -> Result<u8, ProtocolError> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, ProtocolError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, ProtocolError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn i64(&mut self, what: &str) -> Result<i64, ProtocolError> {
        Ok(self.u64(what)? as i64)
    }
    fn spots(&mut self, what: &str) -> Result<Spots, ProtocolError> {
        Ok(Spots {
            count: self.u64(what)?,
            first: self.i64(what)?,
        })
    }
    fn end(&self, what: &str) -> Result<(), ProtocolError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(ProtocolError(format!(
                "{} trailing bytes after {what}",
                self.bytes.len()
            )))
        }
    }
}

fn put_spots(out: &mut Vec<u8>, s: Spots) {
    out.extend_from_slice(&s.count.to_le_bytes());
    out.extend_from_slice(&s.first.to_le_bytes());
}

fn frame(tag: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + payload.len());
    out.push(tag);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The number of bytes `count` values of `width` bytes take, if it is a size at all.
fn array_len(count: u64, width: u8) -> Option<usize> {
    usize::try_from(count.checked_mul(u64::from(width))?).ok()
}

impl Request {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Request::Finish => frame(TAG_FINISH, &[]),
            Request::Call(c) => {
                // Written in place (the arrays, most of the bytes, are copied once).
                let params = [&c.gamma, &c.beta].into_iter().flatten();
                let len = 30 + c.x.len() + params.clone().map(Vec::len).sum::<usize>();
                let mut out = Vec::with_capacity(9 + len);
                out.push(TAG_CALL);
                out.extend_from_slice(&(len as u64).to_le_bytes());
                for v in [c.case, c.rows, c.d] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                out.extend_from_slice(&c.eps_bits.to_le_bytes());
                out.push(c.width);
                out.push(u8::from(c.gamma.is_some()) | u8::from(c.beta.is_some()) << 1);
                out.extend_from_slice(&c.x);
                for v in params {
                    out.extend_from_slice(v);
                }
                out
            }
        }
    }

    pub fn decode(tag: u8, payload: &[u8]) -> Result<Request, ProtocolError> {
        let mut c = Cursor { bytes: payload };
        match tag {
            TAG_FINISH => {
                c.end("finish")?;
                Ok(Request::Finish)
            }
            TAG_CALL => {
                let case = c.u64("case")?;
                let rows = c.u64("rows")?;
                let d = c.u64("d")?;
                let eps_bits = c.u32("ε")?;
                let width = c.u8("width")?;
                if width != 2 && width != 4 {
                    return Err(ProtocolError(format!("value width {width} (2 or 4)")));
                }
                let flags = c.u8("flags")?;
                if flags > 3 {
                    return Err(ProtocolError(format!("flags {flags:#x}")));
                }
                let x_len = rows
                    .checked_mul(d)
                    .and_then(|n| array_len(n, width))
                    .ok_or_else(|| ProtocolError(format!("rows × d = {rows} × {d} overflows")))?;
                let p_len = array_len(d, width)
                    .ok_or_else(|| ProtocolError(format!("d = {d} overflows")))?;
                let x = c.take(x_len, "x")?.to_vec();
                let mut param = |present: bool, what| -> Result<Option<Vec<u8>>, ProtocolError> {
                    Ok(if present {
                        Some(c.take(p_len, what)?.to_vec())
                    } else {
                        None
                    })
                };
                let gamma = param(flags & 1 == 1, "γ")?;
                let beta = param(flags & 2 == 2, "β")?;
                c.end("call")?;
                Ok(Request::Call(CallRequest {
                    case,
                    rows,
                    d,
                    eps_bits,
                    width,
                    x,
                    gamma,
                    beta,
                }))
            }
            other => Err(ProtocolError(format!("unknown request tag {other:#04x}"))),
        }
    }
}

impl CrashReport {
    /// The frame, built without allocating (the signal handler sends it).
    pub fn frame(&self) -> [u8; CRASH_FRAME_LEN] {
        let mut out = [0u8; CRASH_FRAME_LEN];
        out[0] = TAG_CRASH;
        out[1..9].copy_from_slice(&(CRASH_PAYLOAD_LEN as u64).to_le_bytes());
        out[9..13].copy_from_slice(&self.signal.to_le_bytes());
        out[13..21].copy_from_slice(&self.address.to_le_bytes());
        out[21] = self.region;
        out[22..30].copy_from_slice(&self.element.to_le_bytes());
        out[30] = self.access;
        out[31] = self.loading;
        out
    }
}

impl Response {
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Response::Ready {
                before_load,
                after_load,
            } => {
                let mut p = before_load.to_le_bytes().to_vec();
                p.extend_from_slice(&after_load.to_le_bytes());
                frame(TAG_READY, &p)
            }
            Response::LoadFailed { message } => frame(TAG_LOAD_FAILED, message.as_bytes()),
            Response::Called(c) => {
                let mut p = Vec::with_capacity(84 + c.y.len());
                p.extend_from_slice(&c.return_code.to_le_bytes());
                p.extend_from_slice(&c.fp_before.to_le_bytes());
                p.extend_from_slice(&c.fp_after.to_le_bytes());
                for s in [c.late, c.before_start, c.past_end, c.unwritten] {
                    put_spots(&mut p, s);
                }
                p.extend_from_slice(&c.y);
                frame(TAG_CALLED, &p)
            }
            Response::Crash(c) => c.frame().to_vec(),
            Response::Done { late } => {
                let mut p = Vec::new();
                put_spots(&mut p, *late);
                frame(TAG_DONE, &p)
            }
        }
    }

    pub fn decode(tag: u8, payload: &[u8]) -> Result<Response, ProtocolError> {
        let mut c = Cursor { bytes: payload };
        let response = match tag {
            TAG_READY => Response::Ready {
                before_load: c.u64("control state")?,
                after_load: c.u64("control state")?,
            },
            TAG_LOAD_FAILED => Response::LoadFailed {
                message: String::from_utf8(c.take(payload.len(), "message")?.to_vec())
                    .map_err(|_| ProtocolError("a message that is not UTF-8".into()))?,
            },
            TAG_CALLED => {
                let return_code = c.u32("return code")? as i32;
                let fp_before = c.u64("control state")?;
                let fp_after = c.u64("control state")?;
                let late = c.spots("late writes")?;
                let before_start = c.spots("writes before y")?;
                let past_end = c.spots("writes past y")?;
                let unwritten = c.spots("unwritten elements")?;
                let y = c.take(c.bytes.len(), "y")?.to_vec();
                Response::Called(CallResponse {
                    return_code,
                    fp_before,
                    fp_after,
                    late,
                    before_start,
                    past_end,
                    unwritten,
                    y,
                })
            }
            TAG_CRASH => Response::Crash(CrashReport {
                signal: c.u32("signal")? as i32,
                address: c.u64("address")?,
                region: c.u8("region")?,
                element: c.i64("element")?,
                access: c.u8("access")?,
                loading: c.u8("loading")?,
            }),
            TAG_DONE => Response::Done {
                late: c.spots("late writes")?,
            },
            other => return Err(ProtocolError(format!("unknown response tag {other:#04x}"))),
        };
        c.end("response")?;
        Ok(response)
    }
}

/// Reads one frame: Ok(None) at a clean end of stream (no byte of a new frame).
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; 9];
    let mut got = 0;
    while got < head.len() {
        match r.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "torn frame")),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&head[1..]);
    let len = u64::from_le_bytes(len);
    if len > MAX_PAYLOAD {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes (at most {MAX_PAYLOAD})"),
        ));
    }
    // Read through `take` so that a lying length allocates only what arrives (at most
    // 64 MiB reserved ahead).
    let mut payload = Vec::with_capacity(len.min(1 << 26) as usize);
    r.take(len).read_to_end(&mut payload)?;
    if payload.len() as u64 != len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "torn frame"));
    }
    Ok(Some((head[0], payload)))
}

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, frame: &[u8]) -> io::Result<()> {
    w.write_all(frame)?;
    w.flush()
}

/// Splits a byte string into frames and decodes each as a response and as a request (the
/// worker-protocol fuzz target): never panics; every frame that decodes encodes to the same
/// bytes.
pub fn check_round_trip(bytes: &[u8]) -> Result<(), String> {
    let mut r = bytes;
    while let Ok(Some((tag, payload))) = read_frame(&mut r) {
        let mut whole = vec![tag];
        whole.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        whole.extend_from_slice(&payload);
        if let Ok(resp) = Response::decode(tag, &payload) {
            let again = resp.encode();
            if again != whole {
                return Err(format!("response {resp:?} re-encodes differently"));
            }
        }
        if let Ok(req) = Request::decode(tag, &payload) {
            if req.encode() != whole {
                return Err(format!("request {req:?} re-encodes differently"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(gamma: bool, beta: bool) -> CallRequest {
        CallRequest {
            case: 7,
            rows: 2,
            d: 3,
            eps_bits: 1e-5f32.to_bits(),
            width: 4,
            x: (0..24).collect(),
            gamma: gamma.then(|| vec![1; 12]),
            beta: beta.then(|| vec![2; 12]),
        }
    }

    fn decode_request(frame: &[u8]) -> Result<Request, ProtocolError> {
        let (tag, payload) = read_frame(&mut &frame[..]).unwrap().unwrap();
        Request::decode(tag, &payload)
    }

    fn decode_response(frame: &[u8]) -> Result<Response, ProtocolError> {
        let (tag, payload) = read_frame(&mut &frame[..]).unwrap().unwrap();
        Response::decode(tag, &payload)
    }

    #[test]
    fn every_message_round_trips() {
        for (g, b) in [(false, false), (true, false), (false, true), (true, true)] {
            let r = Request::Call(call(g, b));
            assert_eq!(decode_request(&r.encode()).unwrap(), r);
        }
        assert_eq!(
            decode_request(&Request::Finish.encode()).unwrap(),
            Request::Finish
        );
        let spots = |c, f| Spots { count: c, first: f };
        let responses = [
            Response::Ready {
                before_load: 0x1f80,
                after_load: 0x9fc0,
            },
            Response::LoadFailed {
                message: "symbol 'f' not found".into(),
            },
            Response::Called(CallResponse {
                return_code: -3,
                fp_before: 1,
                fp_after: 2,
                late: spots(1, 5),
                before_start: spots(2, -1),
                past_end: spots(3, 6),
                unwritten: spots(0, 0),
                y: vec![9; 24],
            }),
            Response::Crash(CrashReport {
                signal: 11,
                address: 0xdead_beef,
                region: 4,
                element: -2,
                access: 2,
                loading: 0,
            }),
            Response::Done { late: spots(4, 0) },
        ];
        for r in responses {
            let bytes = r.encode();
            assert_eq!(decode_response(&bytes).unwrap(), r);
            assert!(check_round_trip(&bytes).is_ok());
        }
    }

    #[test]
    fn malformed_frames_are_errors_not_panics() {
        let good = Request::Call(call(true, true)).encode();
        // Every truncation of the payload (with the length patched to match) is an error.
        for cut in 9..good.len() {
            let mut bytes = good[..cut].to_vec();
            bytes[1..9].copy_from_slice(&((cut - 9) as u64).to_le_bytes());
            assert!(decode_request(&bytes).is_err(), "cut at {cut}");
        }
        // A frame claiming more than arrives is torn; one past the limit is refused unread.
        let mut lying = good.clone();
        lying[1..9].copy_from_slice(&(good.len() as u64).to_le_bytes());
        assert!(read_frame(&mut &lying[..]).is_err());
        let mut huge = good.clone();
        huge[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(read_frame(&mut &huge[..]).is_err());
        // rows × d overflowing, a bad width and unknown tags.
        let mut overflow = call(false, false);
        overflow.rows = u64::MAX;
        overflow.d = 3;
        let bytes = Request::Call(overflow).encode();
        assert!(decode_request(&bytes).unwrap_err().0.contains("overflows"));
        let mut wide = Request::Call(call(false, false)).encode();
        wide[9 + 28] = 3;
        assert!(decode_request(&wide).unwrap_err().0.contains("width"));
        assert!(Request::decode(b'?', &[]).is_err());
        assert!(Response::decode(b'?', &[]).is_err());
        assert!(
            Response::decode(TAG_DONE, &[0; 17]).is_err(),
            "trailing byte"
        );
        // A clean end of stream is None; a torn header an error.
        assert!(read_frame(&mut &[][..]).unwrap().is_none());
        assert!(read_frame(&mut &[b'F', 0][..]).is_err());
    }
}
