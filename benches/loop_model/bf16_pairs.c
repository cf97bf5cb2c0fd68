// A C model of the output loop of the 16-bit formats' f32 path for bf16 on AVX-512 without
// AVX512-BF16 (crates/kernels/src/narrow.rs, the stores of crates/kernels/src/simd/x86.rs), one row of
// 4096 in L1, against a variant that widens 32 values at a time (docs/speed.md, "A third
// campaign on the Cascade Lake Xeon"). Not part of the build; on an x86-64 CPU with AVX-512:
//
//   gcc -O2 -march=native bf16_pairs.c -o bf16_pairs && ./bf16_pairs X_OFF PARAMS_OFF Y_OFF
//
// Offsets: bytes past a 64-byte line of x, of γ and β, of y (even, below 64).
//   kernel: per sixteen values, x, γ and β each widened by `vpmovzxwd` and `vpslld`, y
//           computed and tested as the kernel does (seven operations), a branch out of
//           the fast path where a lane is flagged and two zero flag bytes where none is,
//           rounded by adding half an ulp, shifted, narrowed by `vpmovdw`, stored as two
//           16-byte halves (the high one by `vextracti128` to memory; the kernel's own
//           bf16 store extracts it to a register, one port-5 operation more);
//   pairs:  per 32 values, one 64-byte load each, widened by `vpunpcklwd` and `vpunpckhwd`
//           with zero (lanes 0-3, 8-11, ... and 4-7, 12-15, ...), the two results rounded,
//           shifted and joined by one `vpackusdw`, which puts them back in element order,
//           for one 64-byte store; one branch and four zero flag bytes per pair of blocks
//           (the lanes' elements would be sorted out only off the fast path).
// The data flag no lane (main checks), so both loops run every block.
// Prints the best of 400 series of 200 calls of each, alternated, in ns per sixteen values.
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "loop_model.h"

#define N 4096

static uint16_t xs[N + 64] __attribute__((aligned(64))), gs[N + 64] __attribute__((aligned(64))),
    bs[N + 64] __attribute__((aligned(64))), ys[N + 64] __attribute__((aligned(64)));
static uint8_t flag_bytes[N / 8];

#define CONSTANTS                                                                              \
  __m512 scale = _mm512_set1_ps(0.6931472f), offset = _mm512_set1_ps(0.0953102f),                        \
         slope = _mm512_set1_ps(1e-9f), floor_ = _mm512_set1_ps(1e-30f),                      \
         cap = _mm512_set1_ps(1e-4f);                                                         \
  __m512i low_mask = _mm512_set1_epi32(0xffff), half = _mm512_set1_epi32(0x8000),             \
          bias = _mm512_set1_epi32(0x8000)

static inline __m512 widen16(const uint16_t *p) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *)p)), 16));
}

// The kernel stores one flag byte per eight values (passed in, so that they are stored).
__attribute__((noinline)) static unsigned kernel(const uint16_t *x, const uint16_t *g,
                                                 const uint16_t *b, uint16_t *y, uint8_t *flags) {
  CONSTANTS;
  for (int j = 0; j < N; j += 16) {
    __m512 v = _mm512_fmadd_ps(_mm512_fmadd_ps(widen16(x + j), scale, offset), widen16(g + j),
                               widen16(b + j));
    __mmask16 u = uncertain(v, slope, floor_, low_mask, half, cap);
    // As the kernel: a block with a flagged lane leaves the loop's fast path (rare; here
    // never taken), the others store two zero flag bytes.
    if (__builtin_expect(u != 0, 0)) return 1;
    *(uint16_t *)(flags + j / 8) = 0;
    __m256i h = _mm512_cvtepi32_epi16(
        _mm512_srli_epi32(_mm512_add_epi32(_mm512_castps_si512(v), bias), 16));
    // Two 16-byte halves, the high one by `vextracti128` to memory, as the kernel stores.
    __asm__ volatile("vmovdqu %1, (%0)\n\tvextracti128 $1, %2, 16(%0)"
                     :
                     : "r"(y + j), "x"(_mm256_castsi256_si128(h)), "x"(h)
                     : "memory");
  }
  return 0;
}

__attribute__((noinline)) static unsigned pairs(const uint16_t *x, const uint16_t *g,
                                                const uint16_t *b, uint16_t *y, uint8_t *flags) {
  CONSTANTS;
  __m512i zero = _mm512_setzero_si512();
  for (int j = 0; j < N; j += 32) {
    __m512i xr = _mm512_loadu_si512((const void *)(x + j)),
            gr = _mm512_loadu_si512((const void *)(g + j)),
            br = _mm512_loadu_si512((const void *)(b + j));
#define LANES(r, unpack) _mm512_castsi512_ps(unpack(zero, r))
    __m512 v0 = _mm512_fmadd_ps(
        _mm512_fmadd_ps(LANES(xr, _mm512_unpacklo_epi16), scale, offset),
        LANES(gr, _mm512_unpacklo_epi16), LANES(br, _mm512_unpacklo_epi16));
    __m512 v1 = _mm512_fmadd_ps(
        _mm512_fmadd_ps(LANES(xr, _mm512_unpackhi_epi16), scale, offset),
        LANES(gr, _mm512_unpackhi_epi16), LANES(br, _mm512_unpackhi_epi16));
    __mmask16 u0 = uncertain(v0, slope, floor_, low_mask, half, cap),
              u1 = uncertain(v1, slope, floor_, low_mask, half, cap);
    // The same for a pair of blocks (v0 holds elements 0-3, 8-11, ..., v1 4-7, 12-15, ...).
    if (__builtin_expect((u0 | u1) != 0, 0)) return 1;
    *(uint32_t *)(flags + j / 8) = 0;
    __m512i r0 = _mm512_srli_epi32(_mm512_add_epi32(_mm512_castps_si512(v0), bias), 16);
    __m512i r1 = _mm512_srli_epi32(_mm512_add_epi32(_mm512_castps_si512(v1), bias), 16);
    _mm512_storeu_si512((void *)(y + j), _mm512_packus_epi32(r0, r1));
  }
  return 0;
}

int main(int argc, char **argv) {
  int off[3];
  for (int i = 0; i < 3; i++) {
    off[i] = argc == 4 ? atoi(argv[1 + i]) : -1;
    if (off[i] < 0 || off[i] >= 64 || off[i] % 2) {
      fprintf(stderr, "usage: bf16_pairs X_OFF PARAMS_OFF Y_OFF (even bytes below 64)\n");
      return 2;
    }
  }
  for (int i = 0; i < N + 64; i++) {
    xs[i] = 0x3f80 + (i * 37 % 100);
    gs[i] = 0x3f80 + i % 7;
    bs[i] = 0x3c00 + i % 5;
  }
  const uint16_t *x = xs + off[0] / 2, *g = gs + off[1] / 2, *b = bs + off[1] / 2;
  uint16_t *y = ys + off[2] / 2;
  double best[2] = {1e9, 1e9};
  unsigned sink = 0;
  for (int r = 0; r < 400; r++)
    for (int v = 0; v < 2; v++) {
      double t = now();
      for (int k = 0; k < 200; k++) sink += v ? pairs(x, g, b, y, flag_bytes) : kernel(x, g, b, y, flag_bytes);
      t = now() - t;
      if (t < best[v]) best[v] = t;
    }
  // Both loops run every block: the data leave no lane near a midpoint.
  if (kernel(x, g, b, y, flag_bytes) || pairs(x, g, b, y, flag_bytes)) {
    fprintf(stderr, "bf16_pairs: a lane was flagged; the model times unflagged rows only\n");
    return 1;
  }
  double per16 = 1e9 / 200 / (N / 16);
  printf("offsets %d %d %d: kernel %.3f ns, pairs %.3f ns per sixteen values; pairs/kernel "
         "%.3f (%u)\n",
         off[0], off[1], off[2], best[0] * per16, best[1] * per16, best[1] / best[0], sink & 1);
  return 0;
}
