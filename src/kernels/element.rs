//! The storage formats the kernels read and write: f32, f16 and bf16, each widened exactly
//! to f64 lanes on load and rounded once (correctly) on store.

use super::simd::Simd;
use crate::dtype::Dtype;
use half::{bf16, f16};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// A storage format of the kernels: f32, `half::f16` or `half::bf16`.
pub trait Element: Copy + Default + Send + Sync + 'static + sealed::Sealed {
    const DTYPE: Dtype;
    /// 52 − p for a significand of p bits: in the low 53 − p bits of an f64 (in this
    /// format's normal range), a rounding midpoint of this format is the pattern
    /// `1 << HALF_ULP_BIT`.
    const HALF_ULP_BIT: u32 = 52 - Self::PRECISION;
    /// Significand bits, the implicit one included.
    const PRECISION: u32;
    /// Whether rows are widened to f64 once, in the statistics pass, and read back wide by
    /// the output pass, in every call: cheaper than widening again for the 16-bit formats.
    /// f32 rows are widened once only in single-task calls (see `run_rows`). Widening
    /// changes no bit of the output.
    const WIDEN_ONCE: bool;
    /// Eight values widened (exactly) to f64 lanes.
    fn load<S: Simd>(s: S, src: &[Self; 8]) -> S::V;
    /// Eight f64 lanes, each rounded to nearest-even in this format, except perhaps in
    /// the lanes returned (see [`Simd`]'s contract).
    fn store<S: Simd>(s: S, v: S::V, dst: &mut [Self; 8]) -> u8;
    /// `store` with a non-temporal hint; `dst` must be 16-byte aligned.
    fn stream<S: Simd>(s: S, v: S::V, dst: &mut [Self; 8]) -> u8;
    /// The value with these raw bits (the low `DTYPE.bits()` bits).
    fn from_bits(bits: u64) -> Self;
    fn to_bits(self) -> u64;
}

impl Element for f32 {
    const DTYPE: Dtype = Dtype::F32;
    const PRECISION: u32 = 24;
    const WIDEN_ONCE: bool = false;
    #[inline(always)]
    fn load<S: Simd>(s: S, src: &[f32; 8]) -> S::V {
        s.load_f32(src)
    }
    #[inline(always)]
    fn store<S: Simd>(s: S, v: S::V, dst: &mut [f32; 8]) -> u8 {
        s.store_f32(v, dst)
    }
    #[inline(always)]
    fn stream<S: Simd>(s: S, v: S::V, dst: &mut [f32; 8]) -> u8 {
        s.stream_f32(v, dst)
    }
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
}

/// The bit patterns of eight half-precision values.
#[inline(always)]
fn bits_of<H>(src: &[H; 8]) -> &[u16; 8] {
    const { assert!(std::mem::size_of::<H>() == 2) };
    // SAFETY: only used with half::f16 and half::bf16, both #[repr(transparent)] over u16.
    unsafe { &*(src as *const [H; 8] as *const [u16; 8]) }
}

#[inline(always)]
fn bits_of_mut<H>(dst: &mut [H; 8]) -> &mut [u16; 8] {
    const { assert!(std::mem::size_of::<H>() == 2) };
    // SAFETY: as in `bits_of`; every u16 pattern is a valid f16/bf16.
    unsafe { &mut *(dst as *mut [H; 8] as *mut [u16; 8]) }
}

impl Element for f16 {
    const DTYPE: Dtype = Dtype::F16;
    const PRECISION: u32 = 11;
    const WIDEN_ONCE: bool = true;
    #[inline(always)]
    fn load<S: Simd>(s: S, src: &[f16; 8]) -> S::V {
        s.load_f16(bits_of(src))
    }
    #[inline(always)]
    fn store<S: Simd>(s: S, v: S::V, dst: &mut [f16; 8]) -> u8 {
        s.store_f16(v, bits_of_mut(dst))
    }
    #[inline(always)]
    fn stream<S: Simd>(s: S, v: S::V, dst: &mut [f16; 8]) -> u8 {
        s.stream_f16(v, bits_of_mut(dst))
    }
    fn from_bits(bits: u64) -> Self {
        f16::from_bits(bits as u16)
    }
    fn to_bits(self) -> u64 {
        f16::to_bits(self) as u64
    }
}

impl Element for bf16 {
    const DTYPE: Dtype = Dtype::BF16;
    const PRECISION: u32 = 8;
    const WIDEN_ONCE: bool = true;
    #[inline(always)]
    fn load<S: Simd>(s: S, src: &[bf16; 8]) -> S::V {
        s.load_bf16(bits_of(src))
    }
    #[inline(always)]
    fn store<S: Simd>(s: S, v: S::V, dst: &mut [bf16; 8]) -> u8 {
        s.store_bf16(v, bits_of_mut(dst))
    }
    #[inline(always)]
    fn stream<S: Simd>(s: S, v: S::V, dst: &mut [bf16; 8]) -> u8 {
        s.stream_bf16(v, bits_of_mut(dst))
    }
    fn from_bits(bits: u64) -> Self {
        bf16::from_bits(bits as u16)
    }
    fn to_bits(self) -> u64 {
        bf16::to_bits(self) as u64
    }
}
