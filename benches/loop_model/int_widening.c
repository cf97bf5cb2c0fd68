// f32 <-> f64 conversion of a row in L1, against an integer route on the bits (docs/speed.md,
// "Zen 4, a fourth campaign"). Not part of the build; on an x86-64 CPU with AVX-512:
//
//   gcc -O2 -march=x86-64-v4 int_widening.c -o int_widening && taskset -c 1 ./int_widening
//
// Widening: the f32 bits sign-extended to 64, shifted left 29, bits 62..60 cleared give
// x·2^-896 as an f64, exact for every finite f32 (subnormals land on f64 subnormals); the
// 2^896 goes into the multiply that follows (here an fma into two accumulators). Narrowing:
// y·2^-896 rounded to f32 on its bits (2^28 added, bits 59..29 moved up by 3 under the sign,
// the upper halves of two vectors gathered by one vpermt2d; a tie rounds up, which the
// kernels' near-tie test would report anyway). Both routes are checked value for value
// first; then TSC ticks per eight values, best of five.
#include <immintrin.h>
#include <stdio.h>
#include <x86intrin.h>
#define D 4096
#define REPS 200000
static float x[D] __attribute__((aligned(64)));
static double w[D] __attribute__((aligned(64)));
static float y[D] __attribute__((aligned(64)));
static volatile double sink;
__attribute__((noinline)) void widen_cvt(void) {
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, k = _mm512_set1_pd(0x1p896);
  for (int j = 0; j < D; j += 16) {
    a0 = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_load_ps(x + j)), k, a0);
    a1 = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_load_ps(x + j + 8)), k, a1);
  }
  sink = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
}
// Eight f32 at p as x·2^-896 in f64 bits.
static inline __m512i widened(const float *p) {
  __m512i v = _mm512_cvtepi32_epi64(_mm256_load_si256((const __m256i *)p));
  return _mm512_and_si512(_mm512_slli_epi64(v, 29), _mm512_set1_epi64(0x8FFFFFFFFFFFFFFFll));
}
// Sixteen y·2^-896 at p rounded to f32 bits.
static inline __m512i narrowed(const double *p) {
  const __m512i half = _mm512_set1_epi64(1ll << 28), sign = _mm512_set1_epi64(1ll << 63);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  __m512i a = _mm512_add_epi64(_mm512_load_si512(p), half);
  __m512i b = _mm512_add_epi64(_mm512_load_si512(p + 8), half);
  // bits 59..29 to 62..32, the sign kept at 63: the f32 in the upper half
  a = _mm512_ternarylogic_epi64(_mm512_slli_epi64(a, 3), a, sign, 0xd8);
  b = _mm512_ternarylogic_epi64(_mm512_slli_epi64(b, 3), b, sign, 0xd8);
  return _mm512_permutex2var_epi32(a, odd, b);
}
__attribute__((noinline)) void widen_int(void) {
  for (int j = 0; j < D; j += 8) _mm512_store_si512(w + j, widened(x + j));
}
__attribute__((noinline)) void widen_int_fma(void) {
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, k = _mm512_set1_pd(0x1p896);
  for (int j = 0; j < D; j += 16) {
    a0 = _mm512_fmadd_pd(_mm512_castsi512_pd(widened(x + j)), k, a0);
    a1 = _mm512_fmadd_pd(_mm512_castsi512_pd(widened(x + j + 8)), k, a1);
  }
  sink = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
}
__attribute__((noinline)) void narrow_cvt(void) {
  __m512i acc = _mm512_setzero_si512();
  for (int j = 0; j < D; j += 16) {
    __m256 a = _mm512_cvtpd_ps(_mm512_load_pd(w + j)), b = _mm512_cvtpd_ps(_mm512_load_pd(w + j + 8));
    acc = _mm512_xor_si512(acc, _mm512_castps_si512(_mm512_insertf32x8(_mm512_castps256_ps512(a), b, 1)));
  }
  sink = _mm512_reduce_add_epi64(acc);
}
__attribute__((noinline)) void narrow_int_reg(void) {
  __m512i acc = _mm512_setzero_si512();
  for (int j = 0; j < D; j += 16) acc = _mm512_xor_si512(acc, narrowed(w + j));
  sink = _mm512_reduce_add_epi64(acc);
}
__attribute__((noinline)) void narrow_int(void) {
  for (int j = 0; j < D; j += 16) _mm512_store_si512(y + j, narrowed(w + j));
}
static double cycles(void (*f)(void)) {
  double best = 1e300;
  for (int r = 0; r < 5; r++) {
    unsigned long t = __rdtsc();
    for (int i = 0; i < REPS / 5; i++) f();
    double c = (double)(__rdtsc() - t) / (REPS / 5) / (D / 8);
    if (c < best) best = c;
  }
  return best;
}
int main(void) {
  for (int j = 0; j < D; j++) x[j] = (float)(j * 0.37 - 700.0) * (j % 3 ? 1e-3f : 1.0f);
  widen_int();
  for (int j = 0; j < D; j++) w[j] *= 0x1p896;  // check: exact x
  int bad = 0;
  for (int j = 0; j < D; j++) bad += w[j] != (double)x[j];
  for (int j = 0; j < D; j++) w[j] = ((double)x[j] + 1e-9) * 0x1p-896;
  narrow_int();
  for (int j = 0; j < D; j++) bad += y[j] != (float)((double)x[j] + 1e-9);
  printf("wrong values: %d\n", bad);
  // TSC ticks per eight values
  printf("widen+fma  vcvtps2pd %.2f  integer %.2f\n", cycles(widen_cvt), cycles(widen_int_fma));
  printf("narrow     vcvtpd2ps %.2f  integer %.2f\n", cycles(narrow_cvt), cycles(narrow_int_reg));
}
