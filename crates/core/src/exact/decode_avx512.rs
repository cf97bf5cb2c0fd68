//! [`super::stats::Extremes::decode`] in AVX-512: a row's bits to f64 values and their
//! extremes in one pass. The compiler vectorizes the two passes it replaces
//! ([`crate::dtype::Dtype::decode`], then [`super::stats::Extremes::of`]) but not their
//! fusion, so this one is written with intrinsics. Same values bit for bit (NaNs with
//! their payloads included) and the same extremes:
//! `the_one_pass_decode_gives_the_two_passes_values_and_extremes` compares them.

use super::stats::{Extremes, INFINITY, MAGNITUDE};
use crate::dtype::Dtype;
use std::arch::x86_64::*;

const LANES: usize = 8;

/// The values of `bits` (a row of `dtype`) into `values` (its old contents dropped), and
/// their extremes.
///
/// # Safety
/// The CPU must have AVX-512F and F16C.
#[target_feature(enable = "avx512f,f16c")]
pub(super) unsafe fn decode(dtype: Dtype, bits: &[u64], values: &mut Vec<f64>) -> Extremes {
    match dtype {
        Dtype::F32 => decode_with(bits, values, |v| {
            _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_cvtepi64_epi32(v)))
        }),
        Dtype::BF16 => decode_with(bits, values, |v| {
            let shifted = _mm512_slli_epi64::<16>(_mm512_and_si512(v, _mm512_set1_epi64(0xffff)));
            _mm512_cvtps_pd(_mm256_castsi256_ps(_mm512_cvtepi64_epi32(shifted)))
        }),
        Dtype::F16 => decode_with(bits, values, |v| f16_lanes(v)),
        Dtype::F64 => decode_with(bits, values, |v| _mm512_castsi512_pd(v)),
    }
}

/// Eight f16 (the low 16 bits of each lane) as f64, exactly; a NaN keeps its payload
/// unquieted, as [`Dtype::to_f64`] gives it (the hardware conversion quiets it).
#[inline(always)]
unsafe fn f16_lanes(v: __m512i) -> __m512d {
    let converted = _mm512_cvtps_pd(_mm256_cvtph_ps(_mm512_cvtepi64_epi16(v)));
    let nan = _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(converted, converted);
    if nan == 0 {
        return converted;
    }
    let sign = _mm512_slli_epi64::<48>(_mm512_and_si512(v, _mm512_set1_epi64(0x8000)));
    let payload = _mm512_slli_epi64::<42>(_mm512_and_si512(v, _mm512_set1_epi64(0x3ff)));
    let special = _mm512_or_si512(
        _mm512_or_si512(sign, payload),
        _mm512_set1_epi64(INFINITY as i64),
    );
    _mm512_mask_blend_pd(nan, converted, _mm512_castsi512_pd(special))
}

#[inline(always)]
unsafe fn decode_with(
    bits: &[u64],
    values: &mut Vec<f64>,
    lanes: impl Fn(__m512i) -> __m512d,
) -> Extremes {
    let n = bits.len();
    values.clear();
    values.reserve(n);
    let magnitude = _mm512_set1_epi64(MAGNITUDE as i64);
    let infinity = _mm512_set1_epi64(INFINITY as i64);
    let zero = _mm512_setzero_si512();
    let (mut any, mut largest, mut smallest) = (zero, zero, infinity);
    let whole = n / LANES * LANES;
    let out = values.as_mut_ptr();
    let mut i = 0;
    while i < whole {
        // The row comes from memory: asked for 2 KiB ahead (the hardware's prefetcher
        // alone left this loop waiting on it; a prefetch never faults).
        _mm_prefetch::<_MM_HINT_T0>(bits.as_ptr().wrapping_add(i + 256) as *const i8);
        // SAFETY: i + 8 ≤ n, within `bits` and the capacity of `values`.
        let v = _mm512_loadu_si512(bits.as_ptr().add(i) as *const _);
        let x = lanes(v);
        _mm512_storeu_pd(out.add(i), x);
        let a = _mm512_and_si512(_mm512_castpd_si512(x), magnitude);
        any = _mm512_max_epu64(any, a);
        let finite = _mm512_cmplt_epu64_mask(a, infinity);
        largest = _mm512_mask_max_epu64(largest, finite, largest, a);
        let nonzero = finite & _mm512_cmpneq_epu64_mask(a, zero);
        smallest = _mm512_mask_min_epu64(smallest, nonzero, smallest, a);
        i += LANES;
    }
    // The rest (fewer than eight), widened as the portable decode does.
    for (k, &b) in bits[whole..].iter().enumerate() {
        out.add(whole + k).write(dtype_value(&lanes, b));
    }
    // SAFETY: all n values are written.
    values.set_len(n);
    let rest = Extremes::of(&values[whole..]);
    let any = _mm512_reduce_max_epu64(any);
    let largest = f64::from_bits(_mm512_reduce_max_epu64(largest)).max(rest.largest);
    let smallest = f64::from_bits(_mm512_reduce_min_epu64(smallest)).min(rest.smallest_nonzero);
    Extremes {
        all_finite: any < INFINITY && rest.all_finite,
        has_nan: any > INFINITY || rest.has_nan,
        largest,
        smallest_nonzero: smallest,
    }
}

/// One element through the vector conversion (lane 0 of a vector of it).
#[inline(always)]
unsafe fn dtype_value(lanes: &impl Fn(__m512i) -> __m512d, b: u64) -> f64 {
    _mm512_cvtsd_f64(lanes(_mm512_set1_epi64(b as i64)))
}
