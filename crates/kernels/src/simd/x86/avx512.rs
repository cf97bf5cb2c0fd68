//! The AVX-512 vector: one register of eight f64 lanes (with AVX512-BF16's conversions where
//! the CPU has them).

use super::*;

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
                let [lo, hi] = crate::simd::halves_mut(dst);
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
                let [a, b] = crate::simd::halves_mut(dst);
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
