//! AArch64 Advanced SIMD implementation of the eight-lane vector: four 2-lane registers.
//!
//! f16 conversions go through the portable per-lane code (the NEON f16 intrinsics are not
//! stable Rust); f32 → odd uses FCVTXN, the hardware's own round-to-odd narrowing.

use super::{f16_bits_from_odd_f32, NearFilter, Scalar, Simd};
use crate::kernels::Vectorized;
use std::arch::aarch64::*;

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

#[inline(always)]
unsafe fn widen_f32x4(f: float32x4_t) -> (float64x2_t, float64x2_t) {
    (vcvt_f64_f32(vget_low_f32(f)), vcvt_high_f64_f32(f))
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
        unsafe {
            let (a, b) = widen_f32x4(vld1q_f32(src.as_ptr()));
            let (c, d) = widen_f32x4(vld1q_f32(src.as_ptr().add(4)));
            [a, b, c, d]
        }
    }
    #[inline(always)]
    fn load_f16(self, src: &[u16; 8]) -> Self::V {
        self.load_lanes(Scalar.load_f16(src))
    }
    #[inline(always)]
    fn load_bf16(self, src: &[u16; 8]) -> Self::V {
        unsafe {
            let h = vld1q_u16(src.as_ptr());
            let lo = vshlq_n_u32::<16>(vmovl_u16(vget_low_u16(h)));
            let hi = vshlq_n_u32::<16>(vmovl_high_u16(h));
            let (a, b) = widen_f32x4(vreinterpretq_f32_u32(lo));
            let (c, d) = widen_f32x4(vreinterpretq_f32_u32(hi));
            [a, b, c, d]
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
        let mut bits = [0u32; 8];
        unsafe {
            let (lo, hi) = odd_f32_bits(v);
            vst1q_u32(bits.as_mut_ptr(), lo);
            vst1q_u32(bits.as_mut_ptr().add(4), hi);
        }
        *dst = bits.map(|b| f16_bits_from_odd_f32(f32::from_bits(b)));
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
        // The portable definition, lane by lane (aarch64 is neither tuned nor measured here).
        Scalar.near(self.to_array(y), f)
    }
    // The f32 output path on plain arrays (the compiler vectorizes the arithmetic; the f16
    // conversions are per lane, as in `load_f16`).
    super::portable_f32x16!();
}
