//! AVX2 and AVX-512 implementations of the eight-lane vector.
//!
//! Every method is `#[inline(always)]` and only ever runs inlined into a function compiled
//! with the matching `#[target_feature]` (see [`Avx2::vectorize`], [`Avx512::vectorize`]);
//! the tokens are constructed only after runtime detection, which is what makes the
//! `unsafe` intrinsic calls sound.

use super::{CertainTest, NearFilter, Simd};
use crate::kernels::Vectorized;
use std::arch::x86_64::*;

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

impl Avx2 {
    /// Eight f64 lanes rounded to f32 (to nearest-even, one correct rounding).
    #[inline(always)]
    unsafe fn nearest_f32(self, v: (__m256d, __m256d)) -> __m256 {
        _mm256_set_m128(_mm256_cvtpd_ps(v.1), _mm256_cvtpd_ps(v.0))
    }

    // The stores test the filter on eight 32-bit lanes instead of two registers of four
    // 64-bit ones (the 64-bit `near` took 19 vector operations per eight lanes, these 9
    // or 6): the f16 and bf16 stores its threshold on the f32 they convert through, as on
    // AVX-512, the f32 store on the high halves of the f64 lanes (see `f32_out`).

    #[inline(always)]
    unsafe fn f32_out(
        self,
        v: (__m256d, __m256d),
        dst: &mut [f32; 8],
        stream: bool,
        f: &NearFilter,
    ) -> u8 {
        // The two halves of y are stored as they come from the conversions, and the filter
        // is tested on the f64 lanes' halves: no lane-crossing operation but the two
        // conversions (`nearest_f32` and the threshold on its result took an insert and
        // a `vpermq` more, on the conversions' pipe; see `halves_shuffled`).
        put_f32x8_halves(_mm256_cvtpd_ps(v.0), _mm256_cvtpd_ps(v.1), dst, stream);
        let (low, high) = halves_shuffled(v);
        // A report: its bits in `halves_shuffled`'s order (`f32_lanes` puts them in lane
        // order where the lanes are looked at).
        _mm256_movemask_ps(near_f32_shuffled(low, high, f)) as u8
    }

    #[inline(always)]
    unsafe fn f16_out(
        self,
        v: (__m256d, __m256d),
        dst: &mut [u16; 8],
        stream: bool,
        f: &NearFilter,
    ) -> u8 {
        // f64 → f32 → f16, both to nearest-even: as `Avx512::f16_out` (its comment has
        // the argument), the lanes whose f32 is an f16 midpoint report the filter's window.
        let nearest = self.nearest_f32(v);
        put_u16x8(
            _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(nearest),
            dst,
            stream,
        );
        midpoint_or_small(nearest, 0x1fff, 0x1000, f)
    }

    #[inline(always)]
    unsafe fn bf16_out(
        self,
        v: (__m256d, __m256d),
        dst: &mut [u16; 8],
        stream: bool,
        f: &NearFilter,
    ) -> u8 {
        // f64 → f32 → bf16, both to nearest: wrong only where the f32 lands exactly on a
        // bf16 midpoint (low half 0x8000), and every lane within 2^28 f64-ulps of one (the
        // filter's window is 2^24) is such a lane. Below 2^-126 the f32 is on the fixed
        // subnormal grid, which the bf16 grid coarsens by 2^16, so the same holds there;
        // those lanes are below the filter's threshold anyway. The second rounding adds
        // half a bf16 ulp to the f32 bits and keeps their high half (a carry into the
        // exponent is the next binade, or ∞ past the largest bf16): it rounds an f32 on a
        // midpoint away from zero instead of to even, and a NaN to whatever its bits give,
        // and both lanes are reported (the midpoint test; the threshold, which NaN fails)
        // and rewritten by the caller. (`bf16_nearest_x8`, which must get those right too,
        // takes five operations more.)
        let nearest = self.nearest_f32(v);
        let bits = _mm256_castps_si256(nearest);
        let biased = _mm256_add_epi32(bits, _mm256_set1_epi32(0x8000));
        // The high halves of the lanes: the low eight bytes of each 128-bit half, gathered.
        let high_halves = _mm256_setr_epi8(
            2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1, //
            2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1,
        );
        let picked = _mm256_shuffle_epi8(biased, high_halves);
        let gathered = _mm256_permute4x64_epi64::<0b00_00_10_00>(picked);
        put_u16x8(_mm256_castsi256_si128(gathered), dst, stream);
        midpoint_or_small(nearest, 0xffff, 0x8000, f)
    }
}

/// The lanes whose f32 (y rounded to nearest) does not exceed the filter's threshold
/// rounded up to f32, NaN included: among them every lane with |y| < small (rounding to
/// f32 is monotonic). A compare mask.
#[inline(always)]
unsafe fn small_f32_x8(nearest: __m256, f: &NearFilter) -> __m256 {
    let magnitude = _mm256_and_ps(nearest, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff)));
    _mm256_cmp_ps::<_CMP_NGT_UQ>(magnitude, _mm256_set1_ps(f.small_f32))
}

/// The lanes whose f32 bits under `low` are `midpoint` (the f32 is a midpoint of the
/// narrower format) or that `small_f32_x8` reports, as a lane set.
#[inline(always)]
unsafe fn midpoint_or_small(nearest: __m256, low: i32, midpoint: i32, f: &NearFilter) -> u8 {
    let bits = _mm256_and_si256(_mm256_castps_si256(nearest), _mm256_set1_epi32(low));
    let on_midpoint = _mm256_cmpeq_epi32(bits, _mm256_set1_epi32(midpoint));
    let reported = _mm256_or_ps(_mm256_castsi256_ps(on_midpoint), small_f32_x8(nearest, f));
    _mm256_movemask_ps(reported) as u8
}

// SAFETY (all methods below): the token proves the CPU supports AVX2 + FMA + F16C, and the
// methods run inlined into `vectorize`'s target-feature function; pointer accesses stay
// within the eight-element arrays.
impl Simd for Avx2 {
    type V = (__m256d, __m256d);
    #[inline(always)]
    fn isolated<K: Vectorized>(self, k: K) -> K::Output {
        #[inline(never)]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn inner<K: Vectorized>(s: Avx2, k: K) -> K::Output {
            k.run(s)
        }
        // SAFETY: the token exists only when the CPU has these features.
        unsafe { inner(self, k) }
    }
    #[inline(always)]
    fn splat(self, v: f64) -> Self::V {
        unsafe { (_mm256_set1_pd(v), _mm256_set1_pd(v)) }
    }
    #[inline(always)]
    fn load_lanes(self, a: [f64; 8]) -> Self::V {
        unsafe {
            (
                _mm256_loadu_pd(a.as_ptr()),
                _mm256_loadu_pd(a.as_ptr().add(4)),
            )
        }
    }
    #[inline(always)]
    fn to_array(self, v: Self::V) -> [f64; 8] {
        let mut a = [0.0; 8];
        unsafe {
            _mm256_storeu_pd(a.as_mut_ptr(), v.0);
            _mm256_storeu_pd(a.as_mut_ptr().add(4), v.1);
        }
        a
    }
    #[inline(always)]
    fn add(self, a: Self::V, b: Self::V) -> Self::V {
        unsafe { (_mm256_add_pd(a.0, b.0), _mm256_add_pd(a.1, b.1)) }
    }
    #[inline(always)]
    fn sub(self, a: Self::V, b: Self::V) -> Self::V {
        unsafe { (_mm256_sub_pd(a.0, b.0), _mm256_sub_pd(a.1, b.1)) }
    }
    #[inline(always)]
    fn mul(self, a: Self::V, b: Self::V) -> Self::V {
        unsafe { (_mm256_mul_pd(a.0, b.0), _mm256_mul_pd(a.1, b.1)) }
    }
    #[inline(always)]
    fn fma(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V {
        unsafe {
            (
                _mm256_fmadd_pd(a.0, b.0, c.0),
                _mm256_fmadd_pd(a.1, b.1, c.1),
            )
        }
    }
    #[inline(always)]
    fn load_f32(self, src: &[f32; 8]) -> Self::V {
        unsafe { split_f32x8(_mm256_loadu_ps(src.as_ptr())) }
    }
    #[inline(always)]
    fn load_f16(self, src: &[u16; 8]) -> Self::V {
        // (Two 128-bit conversions of four, which on Zen 3 leave the pipe of the 256-bit
        // conversions and `vextractf128`, made a single row of 4096 about 5 % faster and
        // rows of 32768 and 65536 about 5 % slower: not kept.)
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr() as *const __m128i);
            split_f32x8(_mm256_cvtph_ps(h))
        }
    }
    #[inline(always)]
    fn load_bf16(self, src: &[u16; 8]) -> Self::V {
        // A bf16 is the high half of an f32: interleaved with zeros in 128-bit registers,
        // with no `vpmovzxwd` and `vextractf128`, which take the pipe of the 256-bit
        // conversions on Zen 3 (`benches/loop_model/avx2_ports.c`).
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr() as *const __m128i);
            let zero = _mm_setzero_si128();
            let lo = _mm_castsi128_ps(_mm_unpacklo_epi16(zero, h));
            let hi = _mm_castsi128_ps(_mm_unpackhi_epi16(zero, h));
            (_mm256_cvtps_pd(lo), _mm256_cvtps_pd(hi))
        }
    }
    #[inline(always)]
    fn store_f32(self, v: Self::V, dst: &mut [f32; 8], f: &NearFilter) -> u8 {
        unsafe { self.f32_out(v, dst, false, f) }
    }
    #[inline(always)]
    fn f32_lanes(self, report: u8) -> u8 {
        in_lane_order(report)
    }
    #[inline(always)]
    fn store_f16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe { self.f16_out(v, dst, false, f) }
    }
    #[inline(always)]
    fn store_bf16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe { self.bf16_out(v, dst, false, f) }
    }
    #[inline(always)]
    fn stream_f32(self, v: Self::V, dst: &mut [f32; 8], f: &NearFilter) -> u8 {
        unsafe { self.f32_out(v, dst, true, f) }
    }
    #[inline(always)]
    fn stream_f16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe { self.f16_out(v, dst, true, f) }
    }
    #[inline(always)]
    fn stream_bf16(self, v: Self::V, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe { self.bf16_out(v, dst, true, f) }
    }
    #[inline(always)]
    fn fence(self) {
        unsafe { _mm_sfence() }
    }
    #[inline(always)]
    fn prefetch(self, p: *const u8) {
        // SAFETY: a prefetch is a hint and never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p as *const i8) }
    }
    #[inline(always)]
    fn near(self, y: Self::V, f: &NearFilter) -> u8 {
        unsafe { near_x4(y.0, f) | (near_x4(y.1, f) << 4) }
    }
    type F32x16 = (__m256, __m256);
    #[inline(always)]
    fn f32x16_splat(self, v: f32) -> Self::F32x16 {
        unsafe { (_mm256_set1_ps(v), _mm256_set1_ps(v)) }
    }
    #[inline(always)]
    fn f32x16_load_f32(self, src: &[f32; 16]) -> Self::F32x16 {
        unsafe {
            (
                _mm256_loadu_ps(src.as_ptr()),
                _mm256_loadu_ps(src.as_ptr().add(8)),
            )
        }
    }
    #[inline(always)]
    fn f32x16_load_f16(self, src: &[u16; 16]) -> Self::F32x16 {
        unsafe {
            let p = src.as_ptr() as *const __m128i;
            (
                _mm256_cvtph_ps(_mm_loadu_si128(p)),
                _mm256_cvtph_ps(_mm_loadu_si128(p.add(1))),
            )
        }
    }
    #[inline(always)]
    fn f32x16_load_bf16(self, src: &[u16; 16]) -> Self::F32x16 {
        // Each bf16 as the high half of an f32, interleaved with zeros within 128-bit
        // halves: elements 0–3, 8–11 and 4–7, 12–15 (`f32x16_bf16_lanes`). Widening in
        // element order takes a `vpmovzxwd` per eight, which on Zen 3 shares the
        // conversions' pipe: the f32 path of bf16 rows ran 0.84–0.88 of its time with this
        // (one thread, 1 × 32768 and 4 × 65536).
        unsafe {
            let h = _mm256_loadu_si256(src.as_ptr() as *const __m256i);
            let zero = _mm256_setzero_si256();
            (
                _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, h)),
                _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, h)),
            )
        }
    }
    #[inline(always)]
    fn f32x16_bf16_lanes(self, lanes: u16) -> u16 {
        // Lanes 4–7 hold elements 8–11 and lanes 8–11 elements 4–7.
        (lanes & 0xf00f) | ((lanes & 0x00f0) << 4) | ((lanes >> 4) & 0x00f0)
    }
    #[inline(always)]
    fn f32x16_add(self, a: Self::F32x16, b: Self::F32x16) -> Self::F32x16 {
        unsafe { (_mm256_add_ps(a.0, b.0), _mm256_add_ps(a.1, b.1)) }
    }
    #[inline(always)]
    fn f32x16_sub(self, a: Self::F32x16, b: Self::F32x16) -> Self::F32x16 {
        unsafe { (_mm256_sub_ps(a.0, b.0), _mm256_sub_ps(a.1, b.1)) }
    }
    #[inline(always)]
    fn f32x16_mul(self, a: Self::F32x16, b: Self::F32x16) -> Self::F32x16 {
        unsafe { (_mm256_mul_ps(a.0, b.0), _mm256_mul_ps(a.1, b.1)) }
    }
    #[inline(always)]
    fn f32x16_fma(self, a: Self::F32x16, b: Self::F32x16, c: Self::F32x16) -> Self::F32x16 {
        unsafe {
            (
                _mm256_fmadd_ps(a.0, b.0, c.0),
                _mm256_fmadd_ps(a.1, b.1, c.1),
            )
        }
    }
    #[inline(always)]
    fn f32x16_uncertain(self, y: Self::F32x16, t: &CertainTest) -> u16 {
        unsafe { uncertain_x8(y.0, t) as u16 | ((uncertain_x8(y.1, t) as u16) << 8) }
    }
    #[inline(always)]
    fn f32x16_store_f32(self, v: Self::F32x16, dst: &mut [f32; 16], stream: bool) {
        let [lo, hi] = super::halves_mut(dst);
        unsafe {
            put_f32x8(v.0, lo, stream);
            put_f32x8(v.1, hi, stream);
        }
    }
    #[inline(always)]
    fn f32x16_store_f16(self, v: Self::F32x16, dst: &mut [u16; 16], stream: bool) {
        unsafe {
            let lo = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v.0);
            let hi = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v.1);
            put_u16x16(lo, hi, dst, stream);
        }
    }
    #[inline(always)]
    fn f32x16_store_bf16(self, v: Self::F32x16, dst: &mut [u16; 16], stream: bool) {
        unsafe {
            // In `f32x16_load_bf16`'s lane order: the pack within 128-bit halves puts the
            // elements back in order (0–3 from v.0, 4–7 from v.1, then 8–11, 12–15).
            // The lanes a caller keeps are finite, normal and not midpoints.
            let lo = bf16_half_up_x8(_mm256_castps_si256(v.0));
            let hi = bf16_half_up_x8(_mm256_castps_si256(v.1));
            let packed = _mm256_packus_epi32(lo, hi);
            // As `put_f32x8`: one 32-byte store, or, streamed, two 16-byte halves (rows
            // need only 16-byte alignment).
            if stream {
                let high = _mm256_extracti128_si256::<1>(packed);
                put_u16x16(_mm256_castsi256_si128(packed), high, dst, true);
            } else {
                _mm256_storeu_si256(dst.as_mut_ptr() as *mut __m256i, packed);
            }
        }
    }
}

impl<const BF16: bool> Avx512<BF16> {
    /// Sixteen f32 to bf16 bits, packed in lane order: `vcvtneps2bf16` where the CPU has
    /// AVX512-BF16, else half a bf16 ulp added and the high halves kept
    /// (`bf16_half_up_x8`), which differs from it only on midpoints and NaN: every caller
    /// reports those or never keeps them.
    #[inline(always)]
    unsafe fn bf16_x16(self, v: __m512) -> __m256i {
        if BF16 {
            std::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(v))
        } else {
            _mm512_cvtepi32_epi16(bf16_half_up_x16(_mm512_castps_si512(v)))
        }
    }

    /// `bf16_x16` on eight lanes.
    #[inline(always)]
    unsafe fn bf16_x8(self, v: __m256) -> __m128i {
        if BF16 {
            std::mem::transmute::<__m128bh, __m128i>(_mm256_cvtneps_pbh(v))
        } else {
            _mm256_cvtepi32_epi16(bf16_half_up_x8(_mm256_castps_si256(v)))
        }
    }

    /// The lanes within the filter's window of a midpoint: one addition and one bit test.
    #[inline(always)]
    unsafe fn within_window(self, y: __m512d, f: &NearFilter) -> u8 {
        let sum = _mm512_add_epi64(_mm512_castpd_si512(y), _mm512_set1_epi64(f.offset as i64));
        _mm512_testn_epi64_mask(sum, _mm512_set1_epi64(f.mask as i64))
    }

    #[inline(always)]
    unsafe fn f32_out(self, v: __m512d, dst: &mut [f32; 8], stream: bool, f: &NearFilter) -> u8 {
        // The conversion is one correct rounding; the filter's threshold is tested on the
        // f32 it gives (eight 32-bit lanes, half the width of the f64 lanes).
        let nearest = _mm512_cvtpd_ps(v);
        put_f32x8(nearest, dst, stream);
        // The lanes that pass, above the threshold and outside the window, in one masked
        // test; the report is their complement (see `large_f32`).
        let sum = _mm512_add_epi64(_mm512_castpd_si512(v), _mm512_set1_epi64(f.offset as i64));
        !_mm512_mask_test_epi64_mask(large_f32(nearest, f), sum, _mm512_set1_epi64(f.mask as i64))
    }

    #[inline(always)]
    unsafe fn f16_out(self, v: __m512d, dst: &mut [u16; 8], stream: bool, f: &NearFilter) -> u8 {
        // f64 → f32 → f16, both to nearest-even: equal to one rounding except where the
        // f32 lands exactly on an f16 midpoint (low 13 bits 0x1000 in the normal range;
        // below 2^-14 the f16 grid is fixed, and those lanes are below the filter's
        // threshold, which is at least 2^-14). Every lane within 2^28 f64-ulps of a
        // midpoint is among the reported ones (its f32 is the midpoint itself): a wider
        // window than the filter's (2^23), which this test therefore covers.
        let nearest = _mm512_cvtpd_ps(v);
        put_u16x8(
            _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(nearest),
            dst,
            stream,
        );
        let low = _mm256_and_si256(_mm256_castps_si256(nearest), _mm256_set1_epi32(0x1fff));
        !_mm256_mask_cmpneq_epi32_mask(large_f32(nearest, f), low, _mm256_set1_epi32(0x1000))
    }

    /// Two vectors' `f16_out` (`bf16_out` where `TO_BF16`) on
    /// sixteen lanes: the two f32 halves joined (one insert), then one conversion and one
    /// midpoint and threshold test for both, where the eight-lane form takes each twice:
    /// each is a µop or two on ports 0 and 5, which the output loop keeps busy. One
    /// thread, rows in cache, against two eight-lane stores: f16 LayerNorm 0.92–0.94 of
    /// the time (24 × 4096, 64 × 1024), RMSNorm 0.97, bf16 LayerNorm 0.94.
    #[inline(always)]
    unsafe fn out_pair<const TO_BF16: bool>(
        self,
        v: [__m512d; 2],
        dst: &mut [u16; 16],
        stream: bool,
        f: &NearFilter,
    ) -> u16 {
        let first = _mm512_castps256_ps512(_mm512_cvtpd_ps(v[0]));
        let nearest = _mm512_insertf32x8::<1>(first, _mm512_cvtpd_ps(v[1]));
        // The midpoints of the format, as f32 bit patterns (see `f16_out`, `bf16_out`).
        let (h, low_bits, midpoint) = if TO_BF16 {
            (self.bf16_x16(nearest), 0xffff, 0x8000)
        } else {
            let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(nearest);
            (h, 0x1fff, 0x1000)
        };
        put_u16x16_split(h, dst, stream);
        let low = _mm512_and_si512(_mm512_castps_si512(nearest), _mm512_set1_epi32(low_bits));
        let magnitude = _mm512_abs_ps(nearest);
        let large = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(magnitude, _mm512_set1_ps(f.small_f32));
        !_mm512_mask_cmpneq_epi32_mask(large, low, _mm512_set1_epi32(midpoint))
    }

    #[inline(always)]
    unsafe fn bf16_out(self, v: __m512d, dst: &mut [u16; 8], stream: bool, f: &NearFilter) -> u8 {
        // f64 → f32 → bf16, both to nearest-even. The two roundings equal one except where
        // the f32 lands exactly on a bf16 midpoint (low half 0x8000), and every lane within
        // 2^28 f64-ulps of a midpoint (the filter's window is 2^24) is such a lane: its f32
        // is the midpoint itself. Those lanes are reported, and rewritten by the caller.
        // VCVTNEPS2BF16 also flushes subnormal inputs to zero: those are below the
        // filter's threshold (at least 2^-126). Without AVX512-BF16 the second rounding
        // adds half a bf16 ulp to the f32 bits and keeps their high halves, as on AVX2
        // (`Avx2::bf16_out` has the argument): it differs from nearest-even only on the
        // midpoints and NaN, both reported (the midpoint test; the threshold, which NaN
        // fails). It replaced a rounding to odd and the f64 window test: on a Cascade Lake
        // Xeon, one thread, 64 × 1024 in cache, best of 1000 calls, bf16 LayerNorm 80 → 42
        // µs and RMSNorm 72 → 33 µs (f16: 40 and 31 µs).
        let nearest = _mm512_cvtpd_ps(v);
        put_u16x8(self.bf16_x8(nearest), dst, stream);
        let low = _mm256_and_si256(_mm256_castps_si256(nearest), _mm256_set1_epi32(0xffff));
        !_mm256_mask_cmpneq_epi32_mask(large_f32(nearest, f), low, _mm256_set1_epi32(0x8000))
    }
}

/// The lanes of y below the filter's threshold (NaN included).
#[inline(always)]
unsafe fn small_f64(y: __m512d, f: &NearFilter) -> u8 {
    let magnitude = _mm512_castsi512_pd(_mm512_and_si512(
        _mm512_castpd_si512(y),
        _mm512_set1_epi64(i64::MAX),
    ));
    _mm512_cmp_pd_mask::<_CMP_NGE_UQ>(magnitude, _mm512_set1_pd(f.small))
}

/// The lanes whose f32 (y rounded to nearest) exceeds the filter's threshold rounded up to
/// f32 (NaN fails): the others include every lane with |y| < small. The stores report the
/// complement of the lanes that pass, computed as a mask of those lanes (this, then the
/// midpoint or window test masked by it) and one NOT: the output loop's OR of several
/// reports then becomes an AND of the masks and one NOT, one mask operation a vector
/// fewer than an OR of two tests each (one thread, rows in cache, with the reports of
/// eight vectors OR-ed: f32 RMSNorm 16 × 4096 took 0.95 of the time).
#[inline(always)]
unsafe fn large_f32(nearest: __m256, f: &NearFilter) -> u8 {
    let magnitude = _mm256_and_ps(nearest, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff)));
    _mm256_cmp_ps_mask::<_CMP_GT_OQ>(magnitude, _mm256_set1_ps(f.small_f32))
}

// SAFETY (all methods below): the token proves the CPU supports AVX-512F + VL + DQ + BW
// (+ BF16 when `BF16`) + AVX2 + FMA + F16C, and the methods run inlined into `vectorize`'s
// target-feature function; pointer accesses stay within the eight-element arrays.
impl<const BF16: bool> Simd for Avx512<BF16> {
    type V = __m512d;
    const F32X16_ONE_REGISTER: bool = true;
    #[inline(always)]
    fn isolated<K: Vectorized>(self, k: K) -> K::Output {
        #[inline(never)]
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,f16c")]
        unsafe fn inner<K: Vectorized>(s: Avx512<false>, k: K) -> K::Output {
            k.run(s)
        }
        #[inline(never)]
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx512bf16,avx2,fma,f16c")]
        unsafe fn inner_bf16<K: Vectorized>(s: Avx512<true>, k: K) -> K::Output {
            k.run(s)
        }
        // SAFETY: the token exists only when the CPU has these features (with BF16 only
        // when it also has AVX512-BF16).
        unsafe {
            if BF16 {
                inner_bf16(Avx512(()), k)
            } else {
                inner(Avx512(()), k)
            }
        }
    }
    #[inline(always)]
    fn splat(self, v: f64) -> __m512d {
        unsafe { _mm512_set1_pd(v) }
    }
    #[inline(always)]
    fn load_lanes(self, a: [f64; 8]) -> __m512d {
        unsafe { _mm512_loadu_pd(a.as_ptr()) }
    }
    #[inline(always)]
    fn to_array(self, v: __m512d) -> [f64; 8] {
        let mut a = [0.0; 8];
        unsafe { _mm512_storeu_pd(a.as_mut_ptr(), v) };
        a
    }
    #[inline(always)]
    fn add(self, a: __m512d, b: __m512d) -> __m512d {
        unsafe { _mm512_add_pd(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m512d, b: __m512d) -> __m512d {
        unsafe { _mm512_sub_pd(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m512d, b: __m512d) -> __m512d {
        unsafe { _mm512_mul_pd(a, b) }
    }
    #[inline(always)]
    fn fma(self, a: __m512d, b: __m512d, c: __m512d) -> __m512d {
        unsafe { _mm512_fmadd_pd(a, b, c) }
    }
    #[inline(always)]
    fn load_f32(self, src: &[f32; 8]) -> __m512d {
        unsafe { _mm512_cvtps_pd(_mm256_loadu_ps(src.as_ptr())) }
    }
    #[inline(always)]
    fn load_f16(self, src: &[u16; 8]) -> __m512d {
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr() as *const __m128i);
            _mm512_cvtps_pd(_mm256_cvtph_ps(h))
        }
    }
    #[inline(always)]
    fn load_bf16(self, src: &[u16; 8]) -> __m512d {
        unsafe { _mm512_cvtps_pd(bf16_to_f32x8(src)) }
    }
    #[inline(always)]
    fn store_f32(self, v: __m512d, dst: &mut [f32; 8], f: &NearFilter) -> u8 {
        unsafe { self.f32_out(v, dst, false, f) }
    }
    #[inline(always)]
    fn store_f16(self, v: __m512d, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe { self.f16_out(v, dst, false, f) }
    }
    #[inline(always)]
    fn store_bf16(self, v: __m512d, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe { self.bf16_out(v, dst, false, f) }
    }
    #[inline(always)]
    fn stream_f32(self, v: __m512d, dst: &mut [f32; 8], f: &NearFilter) -> u8 {
        unsafe { self.f32_out(v, dst, true, f) }
    }
    #[inline(always)]
    fn stream_f16(self, v: __m512d, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe { self.f16_out(v, dst, true, f) }
    }
    #[inline(always)]
    fn stream_bf16(self, v: __m512d, dst: &mut [u16; 8], f: &NearFilter) -> u8 {
        unsafe { self.bf16_out(v, dst, true, f) }
    }
    #[inline(always)]
    fn store_16bit_pair<const TO_BF16: bool>(
        self,
        v: [__m512d; 2],
        dst: &mut [u16; 16],
        f: &NearFilter,
        stream: bool,
    ) -> Option<u16> {
        Some(unsafe { self.out_pair::<TO_BF16>(v, dst, stream, f) })
    }
    #[inline(always)]
    fn fence(self) {
        unsafe { _mm_sfence() }
    }
    #[inline(always)]
    fn prefetch(self, p: *const u8) {
        // SAFETY: a prefetch is a hint and never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p as *const i8) }
    }
    #[inline(always)]
    fn near(self, y: __m512d, f: &NearFilter) -> u8 {
        unsafe { self.within_window(y, f) | small_f64(y, f) }
    }
    type F32x16 = __m512;
    #[inline(always)]
    fn f32x16_splat(self, v: f32) -> __m512 {
        unsafe { _mm512_set1_ps(v) }
    }
    #[inline(always)]
    fn f32x16_load_f32(self, src: &[f32; 16]) -> __m512 {
        unsafe { _mm512_loadu_ps(src.as_ptr()) }
    }
    #[inline(always)]
    fn f32x16_load_f16(self, src: &[u16; 16]) -> __m512 {
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(src.as_ptr() as *const __m256i)) }
    }
    #[inline(always)]
    fn f32x16_load_bf16(self, src: &[u16; 16]) -> __m512 {
        unsafe {
            let h = _mm256_loadu_si256(src.as_ptr() as *const __m256i);
            _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
        }
    }
    #[inline(always)]
    fn f32x16_add(self, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    fn f32x16_sub(self, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    fn f32x16_mul(self, a: __m512, b: __m512) -> __m512 {
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    fn f32x16_fma(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn f32x16_uncertain(self, y: __m512, t: &CertainTest) -> u16 {
        unsafe {
            let bound = _mm512_fmadd_ps(
                _mm512_abs_ps(y),
                _mm512_set1_ps(t.slope),
                _mm512_set1_ps(t.floor),
            );
            let midpoint = _mm512_castsi512_ps(_mm512_or_si512(
                _mm512_andnot_si512(_mm512_set1_epi32(t.low_mask as i32), _mm512_castps_si512(y)),
                _mm512_set1_epi32(t.half as i32),
            ));
            let apart = _mm512_sub_ps(y, midpoint);
            let capped = _mm512_mul_ps(midpoint, _mm512_set1_ps(t.cap));
            // The smaller magnitude, its sign cleared, in one instruction (AVX512-DQ's
            // `vrangeps`, imm 0b1010): the two `abs` and the `min` of the scalar
            // definition, which it matches (both are NaN together, see `uncertain_lane`).
            let distance = _mm512_range_ps::<0b1010>(apart, capped);
            !_mm512_cmp_ps_mask::<_CMP_LT_OQ>(bound, distance)
        }
    }
    #[inline(always)]
    fn f32x16_store_f32(self, v: __m512, dst: &mut [f32; 16], stream: bool) {
        unsafe {
            if stream {
                // As the f64 path's stores: 16-byte non-temporal parts (rows need only
                // 16-byte alignment).
                let [lo, hi] = super::halves_mut(dst);
                put_f32x8(_mm512_castps512_ps256(v), lo, true);
                put_f32x8(_mm512_extractf32x8_ps::<1>(v), hi, true);
            } else {
                _mm512_storeu_ps(dst.as_mut_ptr(), v)
            }
        }
    }
    #[inline(always)]
    fn f32x16_store_f16(self, v: __m512, dst: &mut [u16; 16], stream: bool) {
        unsafe {
            let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
            put_u16x16(
                _mm256_castsi256_si128(h),
                _mm256_extracti128_si256::<1>(h),
                dst,
                stream,
            );
        }
    }
    #[inline(always)]
    fn f32x16_store_bf16(self, v: __m512, dst: &mut [u16; 16], stream: bool) {
        unsafe {
            // The lanes a caller keeps are finite, normal and not midpoints (low half
            // 0x8000), where `bf16_x16` is the rounding to nearest-even.
            let h = self.bf16_x16(v);
            put_u16x16(
                _mm256_castsi256_si128(h),
                _mm256_extracti128_si256::<1>(h),
                dst,
                stream,
            );
        }
    }
    // Pairs of blocks: each bf16 the high half of an f32, interleaved with zeros within
    // 128-bit lanes, which takes one `vpunpck[lh]wd` per sixteen values instead of
    // `vpmovzxwd` and `vpslld`; the store joins the two vectors' high halves with one
    // `vpackusdw`, which puts them back in element order, for one 64-byte store. A C model
    // of the f32 path's bf16 loop (`benches/loop_model/bf16_pairs.c`, Cascade Lake, in L1)
    // ran in 0.67–0.80 of the time of sixteen values at a time. With AVX512-BF16 too:
    // its conversion (`vcvtneps2bf16`) wants element order, and two blocks converted by
    // it, one after the other, took longer than this form on an Emerald Rapids Xeon
    // (docs/speed.md).
    #[inline(always)]
    fn f32x16_load_bf16_pair(self, src: &[u16; 32]) -> [__m512; 2] {
        unsafe {
            let h = _mm512_loadu_si512(src.as_ptr() as *const _);
            let zero = _mm512_setzero_si512();
            [
                _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, h)),
                _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, h)),
            ]
        }
    }
    #[inline(always)]
    fn f32x16_bf16_pair_elements(self, lanes: [u16; 2]) -> [u16; 2] {
        // Lane 4q + i of the first vector holds element 8q + i of the pair, lane 4q + i of
        // the second 8q + 4 + i (q < 4, i < 4): block 0 has q = 0, 1, block 1 q = 2, 3.
        let [a, b] = lanes.map(u32::from);
        let block = |a: u32, b: u32| (a & 0xf) | (b & 0xf) << 4 | (a & 0xf0) << 4 | (b & 0xf0) << 8;
        [block(a, b) as u16, block(a >> 8, b >> 8) as u16]
    }
    #[inline(always)]
    fn f32x16_store_bf16_pair(self, v: [__m512; 2], dst: &mut [u16; 32], stream: bool) {
        unsafe {
            // As `bf16_x16`: the lanes a caller keeps are finite, normal and not midpoints.
            let packed = _mm512_packus_epi32(
                bf16_half_up_x16(_mm512_castps_si512(v[0])),
                bf16_half_up_x16(_mm512_castps_si512(v[1])),
            );
            if stream {
                // Streamed rows are only 16-byte aligned: 16-byte parts, as `put_u16x16`.
                let [a, b] = super::halves_mut(dst);
                let (lo, hi) = (
                    _mm512_castsi512_si256(packed),
                    _mm512_extracti64x4_epi64::<1>(packed),
                );
                put_u16x16(
                    _mm256_castsi256_si128(lo),
                    _mm256_extracti128_si256::<1>(lo),
                    a,
                    true,
                );
                put_u16x16(
                    _mm256_castsi256_si128(hi),
                    _mm256_extracti128_si256::<1>(hi),
                    b,
                    true,
                );
            } else {
                _mm512_storeu_si512(dst.as_mut_ptr() as *mut _, packed);
            }
        }
    }
}
