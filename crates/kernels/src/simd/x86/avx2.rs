//! The AVX2 + FMA + F16C vector: two four-lane registers per vector of eight f64 lanes.

use super::*;

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
        let [lo, hi] = crate::simd::halves_mut(dst);
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
