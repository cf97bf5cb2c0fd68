//! AArch64 Advanced SIMD implementation of the eight-lane vector: four 2-lane registers.
//!
//! f16 ↔ f32 by FCVTL/FCVTN, written as inline assembly (their intrinsics are not stable
//! Rust; the instructions are base Advanced SIMD, no FP16 extension needed); f32 → odd uses
//! FCVTXN, the hardware's own round-to-odd narrowing.

use super::{NearFilter, Simd};
use crate::Vectorized;
use std::arch::aarch64::*;
use std::arch::asm;

/// Advanced SIMD (always present on AArch64).
#[derive(Debug, Clone, Copy)]
pub struct Neon(());

impl Neon {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Neon(())
    }

    /// Runs `k` compiled for NEON.
    #[inline]
    pub fn vectorize<K: Vectorized>(self, k: K) -> K::Output {
        #[target_feature(enable = "neon")]
        unsafe fn inner<K: Vectorized>(s: Neon, k: K) -> K::Output {
            k.run(s)
        }
        // SAFETY: NEON is part of the AArch64 baseline.
        unsafe { inner(self, k) }
    }

    /// Runs a closure with the token (for tests; not necessarily inlined).
    pub fn with<R>(self, f: impl FnOnce(Self) -> R) -> R {
        f(self)
    }
}

/// Eight f32, in two registers, widened to the vector's eight f64 lanes.
#[inline(always)]
unsafe fn widen_f32x8(lo: float32x4_t, hi: float32x4_t) -> [float64x2_t; 4] {
    [
        vcvt_f64_f32(vget_low_f32(lo)),
        vcvt_high_f64_f32(lo),
        vcvt_f64_f32(vget_low_f32(hi)),
        vcvt_high_f64_f32(hi),
    ]
}

/// Eight f16 (bit patterns) widened to f32, exactly (FCVTL, FCVTL2).
#[inline(always)]
unsafe fn f32x8_from_f16(h: uint16x8_t) -> (float32x4_t, float32x4_t) {
    let (lo, hi): (float32x4_t, float32x4_t);
    // `lo` is written before `h` is read again: `out`, not `lateout`, keeps them apart.
    asm!(
        "fcvtl {lo:v}.4s, {h:v}.4h",
        "fcvtl2 {hi:v}.4s, {h:v}.8h",
        h = in(vreg) h,
        lo = out(vreg) lo,
        hi = lateout(vreg) hi,
        options(pure, nomem, nostack, preserves_flags)
    );
    (lo, hi)
}

/// Eight f32 rounded to f16 (FCVTN, FCVTN2) by FPCR's rounding mode, which Rust keeps at
/// nearest-even, with FZ clear (subnormals kept) and AHP clear (IEEE half precision): the
/// rounding of `half::f16::from_f32` (the simd tests compare them on every finite f64 of
/// their stress set; a NaN comes out a quiet NaN, and the filter reports its lane).
#[inline(always)]
unsafe fn f16_from_f32x8(lo: float32x4_t, hi: float32x4_t) -> uint16x8_t {
    let h: uint16x8_t;
    // `h` is written before `hi` is read: `out`, not `lateout`, keeps them apart.
    asm!(
        "fcvtn {h:v}.4h, {lo:v}.4s",
        "fcvtn2 {h:v}.8h, {hi:v}.4s",
        lo = in(vreg) lo,
        hi = in(vreg) hi,
        h = out(vreg) h,
        options(pure, nomem, nostack, preserves_flags)
    );
    h
}

/// [`super::f16x16_to_f32`] by FCVTL.
#[inline(always)]
fn f16x16_to_f32(src: &[u16; 16]) -> [f32; 16] {
    let mut out = [0.0f32; 16];
    for k in 0..2 {
        // SAFETY: NEON is baseline; the accesses stay within the sixteen-element arrays.
        unsafe {
            let (lo, hi) = f32x8_from_f16(vld1q_u16(src.as_ptr().add(8 * k)));
            vst1q_f32(out.as_mut_ptr().add(8 * k), lo);
            vst1q_f32(out.as_mut_ptr().add(8 * k + 4), hi);
        }
    }
    out
}

/// [`super::f32x16_to_f16`] by FCVTN.
#[inline(always)]
fn f32x16_to_f16(v: [f32; 16]) -> [u16; 16] {
    let mut out = [0u16; 16];
    for k in 0..2 {
        // SAFETY: as in `f16x16_to_f32`.
        unsafe {
            let lo = vld1q_f32(v.as_ptr().add(8 * k));
            let hi = vld1q_f32(v.as_ptr().add(8 * k + 4));
            vst1q_u16(out.as_mut_ptr().add(8 * k), f16_from_f32x8(lo, hi));
        }
    }
    out
}

/// Lanes rounded to f32 to odd (FCVTXN), as f32 bits.
#[inline(always)]
unsafe fn odd_f32_bits(v: [float64x2_t; 4]) -> (uint32x4_t, uint32x4_t) {
    let lo = vcvtx_high_f32_f64(vcvtx_f32_f64(v[0]), v[1]);
    let hi = vcvtx_high_f32_f64(vcvtx_f32_f64(v[2]), v[3]);
    (vreinterpretq_u32_f32(lo), vreinterpretq_u32_f32(hi))
}

/// f32 bits (rounded to odd) to bf16 with round-to-nearest-even, the same integer recipe
/// as `bf16_bits_from_odd_f32`; NaN stays quiet NaN.
#[inline(always)]
unsafe fn bf16_from_odd(b: uint32x4_t) -> uint16x4_t {
    let is_nan = vcgtq_u32(
        vandq_u32(b, vdupq_n_u32(0x7fff_ffff)),
        vdupq_n_u32(0x7f80_0000),
    );
    let lsb = vandq_u32(vshrq_n_u32::<16>(b), vdupq_n_u32(1));
    let biased = vaddq_u32(vaddq_u32(b, vdupq_n_u32(0x7fff)), lsb);
    let rounded = vshrq_n_u32::<16>(biased);
    let quiet = vorrq_u32(vshrq_n_u32::<16>(b), vdupq_n_u32(0x40));
    vmovn_u32(vbslq_u32(is_nan, quiet, rounded))
}

// SAFETY (all methods below): NEON is always present on AArch64; pointer accesses stay
// within the eight-element arrays.
impl Simd for Neon {
    type V = [float64x2_t; 4];
    #[inline(always)]
    fn isolated<K: Vectorized>(self, k: K) -> K::Output {
        #[inline(never)]
        #[target_feature(enable = "neon")]
        unsafe fn inner<K: Vectorized>(s: Neon, k: K) -> K::Output {
            k.run(s)
        }
        // SAFETY: NEON is part of the AArch64 baseline.
        unsafe { inner(self, k) }
    }
    #[inline(always)]
    fn splat(self, v: f64) -> Self::V {
        unsafe { [vdupq_n_f64(v); 4] }
    }
    #[inline(always)]
    fn load_lanes(self, a: [f64; 8]) -> Self::V {
        unsafe { std::array::from_fn(|k| vld1q_f64(a.as_ptr().add(2 * k))) }
    }
    #[inline(always)]
    fn to_array(self, v: Self::V) -> [f64; 8] {
        let mut a = [0.0; 8];
        for (k, r) in v.iter().enumerate() {
            unsafe { vst1q_f64(a.as_mut_ptr().add(2 * k), *r) };
        }
        a
    }
    #[inline(always)]
    fn add(self, a: Self::V, b: Self::V) -> Self::V {
        unsafe { std::array::from_fn(|k| vaddq_f64(a[k], b[k])) }
    }
    #[inline(always)]
    fn sub(self, a: Self::V, b: Self::V) -> Self::V {
        unsafe { std::array::from_fn(|k| vsubq_f64(a[k], b[k])) }
    }
    #[inline(always)]
    fn mul(self, a: Self::V, b: Self::V) -> Self::V {
        unsafe { std::array::from_fn(|k| vmulq_f64(a[k], b[k])) }
    }
    #[inline(always)]
    fn fma(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V {
        unsafe { std::array::from_fn(|k| vfmaq_f64(c[k], a[k], b[k])) }
    }
    #[inline(always)]
    fn load_f32(self, src: &[f32; 8]) -> Self::V {
        unsafe { widen_f32x8(vld1q_f32(src.as_ptr()), vld1q_f32(src.as_ptr().add(4))) }
    }
    #[inline(always)]
    fn load_f16(self, src: &[u16; 8]) -> Self::V {
        unsafe {
            let (lo, hi) = f32x8_from_f16(vld1q_u16(src.as_ptr()));
            widen_f32x8(lo, hi)
        }
    }
    #[inline(always)]
    fn load_bf16(self, src: &[u16; 8]) -> Self::V {
        unsafe {
            let h = vld1q_u16(src.as_ptr());
            let lo = vshlq_n_u32::<16>(vmovl_u16(vget_low_u16(h)));
            let hi = vshlq_n_u32::<16>(vmovl_high_u16(h));
            widen_f32x8(vreinterpretq_f32_u32(lo), vreinterpretq_f32_u32(hi))
        }
    }
    #[inline(always)]
    fn store_f32(self, v: Self::V, dst: &mut [f32; 8], f: &NearFilter) -> u8 {
        unsafe {
            let lo = vcvt_high_f32_f64(vcvt_f32_f64(v[0]), v[1]);
            let hi = vcvt_high_f32_f64(vcvt_f32_f64(v[2]), v[3]);
            vst1q_f32(dst.as_mut_ptr(), lo);
            vst1q_f32(dst.as_mut_ptr().add(4), hi);
        }
        self.near(v, f)
    }
    #[inline(always)]
    fn store_f16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe {
            // Rounded to odd, then to nearest: one correct rounding (f32 holds the f16
            // significand and two more bits), as in `f16_bits_from_odd_f32`.
            let (lo, hi) = odd_f32_bits(v);
            let h = f16_from_f32x8(vreinterpretq_f32_u32(lo), vreinterpretq_f32_u32(hi));
            vst1q_u16(dst.as_mut_ptr(), h);
        }
        self.near(v, f)
    }
    #[inline(always)]
    fn store_bf16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe {
            let (lo, hi) = odd_f32_bits(v);
            vst1q_u16(
                dst.as_mut_ptr(),
                vcombine_u16(bf16_from_odd(lo), bf16_from_odd(hi)),
            );
        }
        self.near(v, f)
    }
    #[inline(always)]
    fn near(self, y: Self::V, f: &NearFilter) -> u8 {
        // `near_lane` on two lanes at a time: a lane passes where its pattern lies outside
        // the window and |y| ≥ small (a NaN lane or a NaN small fails the comparison).
        // Nothing else is reported: the scalar definition exactly.
        unsafe {
            let (offset, mask) = (vdupq_n_u64(f.offset), vdupq_n_u64(f.mask));
            let small = vdupq_n_f64(f.small);
            let pass = |v: float64x2_t| {
                let bits = vaddq_u64(vreinterpretq_u64_f64(v), offset);
                let in_window = vceqzq_u64(vandq_u64(bits, mask));
                vbicq_u64(vcgeq_f64(vabsq_f64(v), small), in_window)
            };
            let pairs = |a: float64x2_t, b: float64x2_t| {
                vmovn_u32(vcombine_u32(vmovn_u64(pass(a)), vmovn_u64(pass(b))))
            };
            let lanes = vcombine_u16(pairs(y[0], y[1]), pairs(y[2], y[3]));
            const BIT: [u16; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
            !(vaddvq_u16(vandq_u16(lanes, vld1q_u16(BIT.as_ptr()))) as u8)
        }
    }
    // The f32 output path on plain arrays (the compiler vectorizes the arithmetic), with
    // FCVTL/FCVTN for f16.
    super::portable_f32x16!(f16x16_to_f32, f32x16_to_f16);
}
