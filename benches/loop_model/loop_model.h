// What the loop models share: the clock, and the kernels' certainty test on AVX-512. Each
// model is one C file compiled alone (its header gives the command); this header sits beside
// them.
#ifndef LOOP_MODEL_H
#define LOOP_MODEL_H

#include <immintrin.h>
#include <time.h>

// Seconds on the monotonic clock.
static inline double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#ifdef __AVX512DQ__
// The certainty test of the 16-bit formats' f32 path (`f32x16_uncertain` in
// crates/kernels/src/simd/x86.rs): lanes whose bound reaches the distance to the nearest rounding
// midpoint.
static inline __mmask16 uncertain(__m512 y, __m512 slope, __m512 floor_, __m512i low_mask,
                                  __m512i half, __m512 cap) {
  __m512 bound = _mm512_fmadd_ps(_mm512_abs_ps(y), slope, floor_);
  __m512 mid = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_andnot_si512(low_mask, _mm512_castps_si512(y)), half));
  __m512 distance = _mm512_range_ps(_mm512_sub_ps(y, mid), _mm512_mul_ps(mid, cap), 0xa);
  return ~_mm512_cmp_ps_mask(bound, distance, _CMP_LT_OQ);
}
#endif

#endif
