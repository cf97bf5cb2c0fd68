//! AVX2 and AVX-512 implementations of the eight-lane vector.
//!
//! Every method is `#[inline(always)]` and only ever runs inlined into a function compiled
//! with the matching `#[target_feature]` (see [`Avx2::vectorize`], [`Avx512::vectorize`]);
//! the tokens are constructed only after runtime detection, which is what makes the
//! `unsafe` intrinsic calls sound.

use super::{CertainTest, NearFilter, Simd};
use crate::Vectorized;
use std::arch::x86_64::*;

mod avx2;
mod avx512;

/// AVX2 + FMA + F16C: eight lanes as two 4-lane registers (lanes 0–3, 4–7).
#[derive(Debug, Clone, Copy)]
pub struct Avx2(());

/// AVX-512F + VL + DQ + BW (+ AVX2, FMA, F16C): eight lanes in one register. `BF16`: the
/// CPU also has AVX512-BF16, whose conversion instruction rounds f32 to bf16.
///
/// BW (which every CPU with AVX-512VL and DQ made so far also has) for the 16-bit integer
/// maximum on 512 bits: a call's max |γ| and |β| of f16 took 11.7 % of a single row of 4096
/// compiled without it, in 256-bit halves with inserts and extracts, 6 % with it.
/// DQ (which every CPU with AVX-512VL made so far also has) for one instruction: `kmovb`
/// stores a store's report, a mask register, straight to its flag byte. Without it the
/// mask goes through a general register first (`kmovw`), a µop on port 0 on Intel cores,
/// the port the output loop's conversions and fused multiply-adds already keep busy
/// (Emerald Rapids, 2 threads, two series of eight alternating rounds: see docs/speed.md,
/// the section on that CPU).
#[derive(Debug, Clone, Copy)]
pub struct Avx512<const BF16: bool>(());

/// Sixteen u16 stored as two 16-byte halves, never as one 32-byte store: rows are often
/// only 16-byte aligned (a large `Vec` from the allocator is 16 bytes past a page), and
/// there half the 32-byte stores would cross a cache line (f16 RMSNorm, 24 rows of 4096
/// in cache: 1.035 of the time of 16-byte stores with y 16 bytes past a line, 0.965 with
/// y on one). The low half is stored by inline assembly, since LLVM joins two adjacent
/// stores into one; the high half is then `vextracti128` to memory, which takes no vector
/// ALU port. (Volatile stores did not serve: through a packed struct, LLVM passed the
/// halves through the stack.)
///
/// Safety: the caller has AVX (VEX `vmovdqu`); `dst` holds 32 bytes, of which the
/// assembly writes the first 16 (an unaligned store) and touches nothing else.
#[inline(always)]
unsafe fn put_u16x16_split(h: __m256i, dst: &mut [u16; 16], stream: bool) {
    let (lo, hi) = (_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
    if stream {
        put_u16x16(lo, hi, dst, true);
    } else {
        let p = dst.as_mut_ptr();
        std::arch::asm!(
            "vmovdqu xmmword ptr [{p}], {lo}",
            p = in(reg) p,
            lo = in(xmm_reg) lo,
            options(nostack, preserves_flags),
        );
        _mm_storeu_si128(p.add(8) as *mut __m128i, hi);
    }
}

impl Avx2 {
    pub fn new() -> Option<Self> {
        (is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c"))
        .then_some(Avx2(()))
    }

    /// Runs `k` compiled for AVX2 + FMA + F16C.
    #[inline]
    pub fn vectorize<K: Vectorized>(self, k: K) -> K::Output {
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn inner<K: Vectorized>(s: Avx2, k: K) -> K::Output {
            k.run(s)
        }
        // SAFETY: the token exists only when the CPU has these features.
        unsafe { inner(self, k) }
    }

    /// Runs a closure with the token (for tests; not necessarily inlined).
    pub fn with<R>(self, f: impl FnOnce(Self) -> R) -> R {
        f(self)
    }
}

fn has_avx512() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
}

impl Avx512<false> {
    pub fn new() -> Option<Self> {
        has_avx512().then_some(Avx512(()))
    }

    /// Runs `k` compiled for AVX-512F + VL + DQ + BW + AVX2 + FMA + F16C.
    #[inline]
    pub fn vectorize<K: Vectorized>(self, k: K) -> K::Output {
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,f16c")]
        unsafe fn inner<K: Vectorized>(s: Avx512<false>, k: K) -> K::Output {
            k.run(s)
        }
        // SAFETY: the token exists only when the CPU has these features.
        unsafe { inner(self, k) }
    }
}

impl Avx512<true> {
    pub fn new() -> Option<Self> {
        (has_avx512() && is_x86_feature_detected!("avx512bf16")).then_some(Avx512(()))
    }

    /// The plain AVX-512 token (its features are a subset of these).
    pub fn without_bf16(self) -> Avx512<false> {
        Avx512(())
    }

    /// Runs `k` compiled for AVX-512F + VL + DQ + BW + BF16 + AVX2 + FMA + F16C.
    #[inline]
    pub fn vectorize<K: Vectorized>(self, k: K) -> K::Output {
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512bf16,avx2,fma,f16c")]
        unsafe fn inner<K: Vectorized>(s: Avx512<true>, k: K) -> K::Output {
            k.run(s)
        }
        // SAFETY: the token exists only when the CPU has these features.
        unsafe { inner(self, k) }
    }
}

impl<const BF16: bool> Avx512<BF16> {
    /// Runs a closure with the token (for tests; not necessarily inlined).
    pub fn with<R>(self, f: impl FnOnce(Self) -> R) -> R {
        f(self)
    }
}

/// Eight f32 (bits) to bf16 bits in the low halves of their lanes: half a bf16 ulp added,
/// then the high halves kept. The rounding to nearest-even wherever the f32's low half is
/// not 0x8000 (a midpoint, rounded away from zero instead); a carry into the exponent is
/// the next binade, or ∞ past the largest bf16; a NaN gives whatever its bits give. The
/// callers report or never keep midpoints and NaN.
#[inline(always)]
unsafe fn bf16_half_up_x8(bits: __m256i) -> __m256i {
    _mm256_srli_epi32::<16>(_mm256_add_epi32(bits, _mm256_set1_epi32(0x8000)))
}

/// `bf16_half_up_x8` on sixteen lanes.
#[inline(always)]
unsafe fn bf16_half_up_x16(bits: __m512i) -> __m512i {
    _mm512_srli_epi32::<16>(_mm512_add_epi32(bits, _mm512_set1_epi32(0x8000)))
}

/// Eight bf16 bit patterns widened to f32 (exact: a bf16 is the top half of an f32).
#[inline(always)]
unsafe fn bf16_to_f32x8(src: &[u16; 8]) -> __m256 {
    let h = _mm_loadu_si128(src.as_ptr() as *const __m128i);
    _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
}

#[inline(always)]
unsafe fn split_f32x8(f: __m256) -> (__m256d, __m256d) {
    (
        _mm256_cvtps_pd(_mm256_castps256_ps128(f)),
        _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(f)),
    )
}

#[inline(always)]
unsafe fn put_f32x8(f: __m256, dst: &mut [f32; 8], stream: bool) {
    if stream {
        // Two 16-byte non-temporal stores: rows need only 16-byte alignment.
        let (lo, hi) = (_mm256_castps256_ps128(f), _mm256_extractf128_ps::<1>(f));
        put_f32x8_halves(lo, hi, dst, true);
    } else {
        _mm256_storeu_ps(dst.as_mut_ptr(), f);
    }
}

/// Eight f32 in two halves, stored (streamed: two 16-byte halves, each aligned).
#[inline(always)]
unsafe fn put_f32x8_halves(lo: __m128, hi: __m128, dst: &mut [f32; 8], stream: bool) {
    let (first, second) = dst.split_at_mut(4);
    put_f32x4(lo, first.try_into().expect("4 lanes"), stream);
    put_f32x4(hi, second.try_into().expect("4 lanes"), stream);
}

/// Four f32 stored (streamed: one 16-byte non-temporal store, aligned).
#[inline(always)]
unsafe fn put_f32x4(f: __m128, dst: &mut [f32; 4], stream: bool) {
    if stream {
        debug_assert_eq!(dst.as_ptr() as usize % 16, 0);
        _mm_stream_ps(dst.as_mut_ptr(), f);
    } else {
        _mm_storeu_ps(dst.as_mut_ptr(), f);
    }
}

#[inline(always)]
unsafe fn put_u16x8(h: __m128i, dst: &mut [u16; 8], stream: bool) {
    if stream {
        debug_assert_eq!(dst.as_ptr() as usize % 16, 0);
        _mm_stream_si128(dst.as_mut_ptr() as *mut __m128i, h);
    } else {
        _mm_storeu_si128(dst.as_mut_ptr() as *mut __m128i, h);
    }
}

/// The low and the high 32-bit halves of eight f64 lanes, each as one register in the
/// lane order [0, 1, 4, 5 | 2, 3, 6, 7] (`vshufps` works within 128-bit halves). Putting
/// them back in order would take a lane-crossing `vpermq`, and on Zen 3 `vpermq`,
/// `vinsertf128` and the f32 ↔ f64 conversions share one pipe (one of them per cycle, all
/// together, in a C loop of independent chains), so the order is fixed on the mask's bits
/// instead, by `in_lane_order`, and only where the lanes are looked at (`Simd::f32_lanes`).
#[inline(always)]
unsafe fn halves_shuffled(v: (__m256d, __m256d)) -> (__m256i, __m256i) {
    let (a, b) = (_mm256_castpd_ps(v.0), _mm256_castpd_ps(v.1));
    (
        _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(a, b)),
        _mm256_castps_si256(_mm256_shuffle_ps::<0b11_01_11_01>(a, b)),
    )
}

/// A movemask of lanes in `halves_shuffled`'s order, as a lane set: bits 2, 3 hold lanes
/// 4, 5 and bits 4, 5 lanes 2, 3, so the two pairs swap.
#[inline(always)]
fn in_lane_order(shuffled: u8) -> u8 {
    (shuffled & 0b1100_0011) | ((shuffled & 0b0000_1100) << 2) | ((shuffled & 0b0011_0000) >> 2)
}

/// `near_lane` for an f32 filter on eight lanes, from their halves in `halves_shuffled`'s
/// order, as a compare mask in that order. The window: its bits lie at or below bit 28
/// (an f32's half-ulp bit in an f64), so the low halves, and the low half of the offset
/// added to them, decide it (a carry out of them reaches only bits the mask clears). The
/// threshold: the high halves, sign cleared, against `small_high` (see there), NaN failing.
#[inline(always)]
unsafe fn near_f32_shuffled(low: __m256i, high: __m256i, f: &NearFilter) -> __m256 {
    debug_assert_eq!(f.mask >> 32, 0, "not an f32 filter");
    let sum = _mm256_add_epi32(low, _mm256_set1_epi32(f.offset as i32));
    let masked = _mm256_and_si256(sum, _mm256_set1_epi32(f.mask as i32));
    let in_window = _mm256_castsi256_ps(_mm256_cmpeq_epi32(masked, _mm256_setzero_si256()));
    let magnitude = _mm256_and_ps(
        _mm256_castsi256_ps(high),
        _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff)),
    );
    let small = _mm256_cmp_ps::<_CMP_NGT_UQ>(magnitude, _mm256_set1_ps(f.small_high));
    _mm256_or_ps(in_window, small)
}

/// Four lanes of `near_lane` (see `NearFilter`).
#[inline(always)]
unsafe fn near_x4(y: __m256d, f: &NearFilter) -> u8 {
    let sum = _mm256_add_epi64(_mm256_castpd_si256(y), _mm256_set1_epi64x(f.offset as i64));
    let masked = _mm256_and_si256(sum, _mm256_set1_epi64x(f.mask as i64));
    let in_window = _mm256_cmpeq_epi64(masked, _mm256_setzero_si256());
    let magnitude = _mm256_and_pd(y, _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX)));
    let small = _mm256_cmp_pd::<_CMP_NGE_UQ>(magnitude, _mm256_set1_pd(f.small));
    _mm256_movemask_pd(_mm256_or_pd(_mm256_castsi256_pd(in_window), small)) as u8
}

/// Eight lanes of `uncertain_lane` (see `CertainTest`).
#[inline(always)]
unsafe fn uncertain_x8(y: __m256, t: &CertainTest) -> u8 {
    let abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
    let bound = _mm256_fmadd_ps(
        _mm256_and_ps(y, abs),
        _mm256_set1_ps(t.slope),
        _mm256_set1_ps(t.floor),
    );
    let midpoint = _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_andnot_si256(_mm256_set1_epi32(t.low_mask as i32), _mm256_castps_si256(y)),
        _mm256_set1_epi32(t.half as i32),
    ));
    let apart = _mm256_and_ps(_mm256_sub_ps(y, midpoint), abs);
    let capped = _mm256_and_ps(_mm256_mul_ps(midpoint, _mm256_set1_ps(t.cap)), abs);
    let distance = _mm256_min_ps(apart, capped);
    !(_mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(bound, distance)) as u8)
}

/// Sixteen u16 in two halves, stored (streamed: two 16-byte halves, each aligned).
#[inline(always)]
unsafe fn put_u16x16(lo: __m128i, hi: __m128i, dst: &mut [u16; 16], stream: bool) {
    let (a, b) = dst.split_at_mut(8);
    put_u16x8(lo, a.try_into().expect("8 lanes"), stream);
    put_u16x8(hi, b.try_into().expect("8 lanes"), stream);
}
