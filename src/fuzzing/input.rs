//! The byte formats the fuzz targets read, and their inverses (so seed corpora can be
//! written from the battery).
//!
//! A problem, `problem bytes` (little-endian; bytes past the end read as 0, so every byte
//! string decodes):
//!
//! | bytes | meaning |
//! |---|---|
//! | 1 | flags: bit 0 op (0 layer_norm, 1 rms_norm); bit 1 ε convention (0 inside, 1 outside); bit 2 γ given; bit 3 β given; bits 4–5 dtype (f16, bf16, f32, f64; ignored by targets that fix the dtype); bit 6 ε as raw f32 bits (else an index into [`eps_schedule`]); bit 7 parameters as given (see below) |
//! | 1 | d − 1 (d = 1 + byte mod [`MAX_D`]) |
//! | 1 | rows − 1 (rows = 1 + byte mod [`MAX_ROWS`]) |
//! | 1 or 4 | ε: a schedule index (mod its length), or f32 bits |
//! | rows·d·w | x, w = the dtype's width in bytes: any bit pattern, NaN and ±∞ included |
//! | d·w each | γ, then β, when flagged |
//! | the rest | left to the target (the judge target's outputs) |
//!
//! ε is made valid (sign cleared; a NaN or ∞ pattern loses the top exponent bit, which makes
//! it finite), and so are γ and β unless bit 7 is set and the caller allows invalid
//! problems (the judge target, which must then answer with an error, not a panic).

use crate::cases::Family;
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::problem::{Eps, EpsConvention, Op, Problem};
use std::ffi::OsString;

/// Widest row a fuzz input describes (the slow path's cost grows with d).
pub const MAX_D: usize = 64;
/// Most rows a fuzz input describes.
pub const MAX_ROWS: usize = 4;

const OP_RMS: u8 = 1;
const CONVENTION_OUTSIDE: u8 = 1 << 1;
const GAMMA_GIVEN: u8 = 1 << 2;
const BETA_GIVEN: u8 = 1 << 3;
const DTYPE_SHIFT: u8 = 4;
const EPS_RAW: u8 = 1 << 6;
const PARAMETERS_AS_GIVEN: u8 = 1 << 7;

/// The ε values of every family's schedule, in increasing order: what an ε index selects.
pub fn eps_schedule() -> Vec<f32> {
    let mut all: Vec<f32> = Family::ALL
        .iter()
        .flat_map(|f| f.eps_schedule().iter().copied())
        .collect();
    all.sort_by(f32::total_cmp);
    all.dedup_by(|a, b| a.to_bits() == b.to_bits());
    all
}

/// A cursor over fuzz bytes that reads zeros past the end.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    pub(super) fn u8(&mut self) -> u8 {
        let b = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// An unsigned little-endian integer of `width` bytes.
    pub(super) fn uint(&mut self, width: usize) -> u64 {
        (0..width).fold(0u64, |acc, i| acc | (self.u8() as u64) << (8 * i))
    }

    fn rest(&self) -> &'a [u8] {
        self.bytes.get(self.pos..).unwrap_or(&[])
    }
}

/// The dtype's storage width in bytes.
pub fn width(dtype: Dtype) -> usize {
    dtype.bits() as usize / 8
}

/// `bits` if finite, else the same pattern without the top exponent bit (a finite value).
pub fn make_finite(dtype: Dtype, bits: u64) -> u64 {
    if dtype.is_finite(bits) {
        bits
    } else {
        bits & !(1u64 << (dtype.bits() - 2))
    }
}

/// ε from arbitrary f32 bits: sign cleared, made finite.
fn eps_from_bits(bits: u32) -> Eps {
    let magnitude = make_finite(Dtype::F32, (bits & 0x7fff_ffff) as u64) as u32;
    Eps::from_f32(f32::from_bits(magnitude)).expect("finite and not negative")
}

/// Decodes a problem. `dtype` fixes the format (else the flags choose it); `allow_invalid`
/// lets bit 7 keep non-finite γ/β, so the problem may fail `Problem::validate`. Returns the
/// problem and the bytes after it.
pub fn decode_problem(bytes: &[u8], dtype: Option<Dtype>, allow_invalid: bool) -> (Problem, &[u8]) {
    let mut r = Reader { bytes, pos: 0 };
    let flags = r.u8();
    let d = 1 + r.u8() as usize % MAX_D;
    let rows = 1 + r.u8() as usize % MAX_ROWS;
    let dtype = dtype.unwrap_or(Dtype::ALL[(flags >> DTYPE_SHIFT) as usize & 3]);
    let eps = if flags & EPS_RAW != 0 {
        eps_from_bits(r.uint(4) as u32)
    } else {
        let schedule = eps_schedule();
        Eps::from_f32(schedule[r.u8() as usize % schedule.len()]).expect("schedules are valid")
    };
    let w = width(dtype);
    let x: Vec<u64> = (0..rows * d).map(|_| r.uint(w)).collect();
    let keep_as_given = allow_invalid && flags & PARAMETERS_AS_GIVEN != 0;
    let mut parameter = |given: bool| {
        given.then(|| {
            (0..d)
                .map(|_| {
                    let bits = r.uint(w);
                    if keep_as_given {
                        bits
                    } else {
                        make_finite(dtype, bits)
                    }
                })
                .collect::<Vec<u64>>()
        })
    };
    let gamma = parameter(flags & GAMMA_GIVEN != 0);
    let beta = parameter(flags & BETA_GIVEN != 0);
    let problem = Problem {
        op: if flags & OP_RMS != 0 {
            Op::RmsNorm
        } else {
            Op::LayerNorm
        },
        dtype,
        eps,
        convention: if flags & CONVENTION_OUTSIDE != 0 {
            EpsConvention::Outside
        } else {
            EpsConvention::Inside
        },
        rows,
        d,
        x,
        gamma,
        beta,
    };
    let rest = r.rest();
    (problem, rest)
}

/// The bytes `decode_problem` reads back as `problem` (for any fixed dtype equal to the
/// problem's, or none). Errors when the problem is larger than the format describes
/// (d > `MAX_D`, rows > `MAX_ROWS`) or has a non-finite γ/β.
pub fn encode_problem(problem: &Problem) -> Result<Vec<u8>> {
    problem.validate()?;
    if problem.d > MAX_D || problem.rows == 0 || problem.rows > MAX_ROWS {
        return Err(Error::input(format!(
            "a fuzz input holds at most {MAX_ROWS} rows of width {MAX_D}, not {} × {}",
            problem.rows, problem.d
        )));
    }
    let dtype_index = Dtype::ALL
        .iter()
        .position(|&d| d == problem.dtype)
        .expect("every dtype is listed") as u8;
    let schedule_index = eps_schedule()
        .iter()
        .position(|e| e.to_bits() == problem.eps.value().to_bits());
    let mut flags = dtype_index << DTYPE_SHIFT;
    if problem.op == Op::RmsNorm {
        flags |= OP_RMS;
    }
    if problem.convention == EpsConvention::Outside {
        flags |= CONVENTION_OUTSIDE;
    }
    if problem.gamma.is_some() {
        flags |= GAMMA_GIVEN;
    }
    if problem.beta.is_some() {
        flags |= BETA_GIVEN;
    }
    if schedule_index.is_none() {
        flags |= EPS_RAW;
    }
    let mut out = vec![flags, (problem.d - 1) as u8, (problem.rows - 1) as u8];
    match schedule_index {
        Some(i) => out.push(i as u8),
        None => out.extend(problem.eps.value().to_bits().to_le_bytes()),
    }
    let w = width(problem.dtype);
    let values = problem
        .x
        .iter()
        .chain(problem.gamma.iter().flatten())
        .chain(problem.beta.iter().flatten());
    for &bits in values {
        out.extend(&bits.to_le_bytes()[..w]);
    }
    Ok(out)
}

/// Values of `dtype` as fuzz bytes (the judge target's outputs).
pub fn encode_values(dtype: Dtype, bits: &[u64]) -> Vec<u8> {
    let w = width(dtype);
    bits.iter()
        .flat_map(|b| b.to_le_bytes()[..w].to_vec())
        .collect()
}

/// Value k of `dtype` in `bytes`, if all its bytes are there.
pub fn value_at(dtype: Dtype, bytes: &[u8], k: usize) -> Option<u64> {
    let w = width(dtype);
    let chunk = bytes.get(k * w..(k + 1) * w)?;
    Some(
        chunk
            .iter()
            .enumerate()
            .fold(0u64, |acc, (i, &b)| acc | (b as u64) << (8 * i)),
    )
}

/// Command-line arguments from fuzz bytes: NUL-separated (any other byte, invalid UTF-8
/// included, is kept), after the program name `normoracle`.
pub fn argv_from_bytes(bytes: &[u8]) -> Vec<OsString> {
    let mut argv = vec![OsString::from("normoracle")];
    if !bytes.is_empty() {
        argv.extend(bytes.split(|&b| b == 0).map(os_string_from_bytes));
    }
    argv
}

/// The bytes `argv_from_bytes` reads back as these arguments (program name excluded).
pub fn argv_to_bytes(args: &[&str]) -> Vec<u8> {
    args.join("\0").into_bytes()
}

#[cfg(unix)]
fn os_string_from_bytes(bytes: &[u8]) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    OsString::from_vec(bytes.to_vec())
}

#[cfg(not(unix))]
fn os_string_from_bytes(bytes: &[u8]) -> OsString {
    OsString::from(String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{battery, BatteryConfig};
    use rand_core::{RngCore, SeedableRng};

    #[test]
    fn battery_problems_round_trip() {
        let mut checked = 0;
        for dtype in Dtype::ALL {
            for op in Op::ALL {
                let mut cfg = BatteryConfig::new(op, dtype, 7);
                cfg.random_cases = 10;
                cfg.convention = if op == Op::RmsNorm {
                    EpsConvention::Outside
                } else {
                    EpsConvention::Inside
                };
                for case in battery(&cfg) {
                    let Ok(bytes) = encode_problem(&case.problem) else {
                        assert!(case.problem.d > MAX_D);
                        continue;
                    };
                    let tail = [1u8, 2, 3];
                    let with_tail = [bytes.clone(), tail.to_vec()].concat();
                    for fixed in [None, Some(dtype)] {
                        let (p, rest) = decode_problem(&with_tail, fixed, false);
                        assert_eq!(p, case.problem);
                        assert_eq!(rest, tail);
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 500, "only {checked} problems fit the format");
    }

    #[test]
    fn every_byte_string_decodes_to_a_valid_problem() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for len in 0..600 {
            let mut bytes = vec![0u8; len];
            rng.fill_bytes(&mut bytes);
            let (p, _) = decode_problem(&bytes, None, false);
            p.validate().unwrap();
            assert!(p.d <= MAX_D && p.rows <= MAX_ROWS);
            // With parameters as given, only γ/β can be invalid.
            let (q, _) = decode_problem(&bytes, None, true);
            assert_eq!(
                (q.op, q.dtype, q.d, q.rows, &q.x),
                (p.op, p.dtype, p.d, p.rows, &p.x)
            );
        }
    }

    #[test]
    fn non_finite_patterns_become_finite() {
        for dtype in Dtype::ALL {
            for bits in [dtype.inf_bits(), dtype.nan_bits(), dtype.inf_bits() | 1] {
                assert!(dtype.is_finite(make_finite(dtype, bits)));
                let negative = bits | 1u64 << (dtype.bits() - 1);
                assert!(dtype.is_finite(make_finite(dtype, negative)));
            }
            assert_eq!(make_finite(dtype, 0x1234), 0x1234);
        }
        assert_eq!(
            eps_from_bits(0xff80_0000).value(),
            f32::from_bits(0x3f80_0000)
        );
        assert_eq!(eps_from_bits(0x8000_0000).value().to_bits(), 0);
    }

    #[test]
    fn argv_round_trips() {
        let args = ["check", "--eps", "", "x.npy"];
        let argv = argv_from_bytes(&argv_to_bytes(&args));
        assert_eq!(argv.len(), 5);
        assert_eq!(argv[0], "normoracle");
        assert_eq!(argv[3], "");
        assert_eq!(argv_from_bytes(&[]).len(), 1);
    }
}
