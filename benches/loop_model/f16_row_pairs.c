// A C model of the f16 output loop of the 16-bit formats' f32 path on AVX-512
// (crates/kernels/src/narrow.rs, with γ and β), over two rows of 4096 in L1: the kernel's order,
// one row after the other, against two rows taken together, γ and β converted once for
// both (docs/speed.md, "A fourth campaign on the Cascade Lake Xeon"). Not part of the build; on
// an x86-64 CPU with AVX-512:
//
//   gcc -O2 -march=native f16_row_pairs.c -o f16_row_pairs && ./f16_row_pairs [Y_OFF]
//
// Y_OFF: bytes of y past a 4 KiB page (x, γ and β start on one), even, below 4096.
//   rows:  per 32 values of a row, one 32-byte load and `vcvtph2ps` for each half of x, γ
//          and β, y = fma(fma(x, r, o), γ, β), the certainty test (`f32x16_uncertain`),
//          one branch per pair of vectors, `vcvtps2ph` and one 64-byte store, four zero
//          flag bytes;
//   pairs: the same per row, with γ and β loaded and converted once for both rows.
// Every call takes the branch for a few blocks (the data's lanes near midpoints), in both.
// Prints the best of 400 series of 200 calls of each, alternated, in ns per sixteen values
// of a row, and their ratio.
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "loop_model.h"

#define N 4096

static uint16_t xs[2][N] __attribute__((aligned(4096))), gs[N] __attribute__((aligned(4096))),
    bs[N] __attribute__((aligned(4096)));
static uint16_t y_pages[2 * N + 2048] __attribute__((aligned(4096)));
static uint16_t (*ys)[N];
static uint8_t flag_bytes[2][N / 8];

static inline __m512 load_f16(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)p));
}

// One pair of vectors of row r at j, given γ and β converted; returns whether a lane was
// flagged (the kernel would redo the block on the f64 path).
static inline int pair_out(int r, int j, __m512 g0, __m512 g1, __m512 b0, __m512 b1) {
  const __m512 scale = _mm512_set1_ps(0.9f), offset = _mm512_set1_ps(0.01f);
  const __m512 slope = _mm512_set1_ps(2e-7f), floor_ = _mm512_set1_ps(1e-7f),
               cap = _mm512_set1_ps(1.0f / 8192);
  const __m512i low_mask = _mm512_set1_epi32(0x3fff), half = _mm512_set1_epi32(0x2000);
  __m512 x0 = load_f16(&xs[r][j]), x1 = load_f16(&xs[r][j + 16]);
  __m512 y0 = _mm512_fmadd_ps(_mm512_fmadd_ps(x0, scale, offset), g0, b0);
  __m512 y1 = _mm512_fmadd_ps(_mm512_fmadd_ps(x1, scale, offset), g1, b1);
  __mmask16 u0 = uncertain(y0, slope, floor_, low_mask, half, cap);
  __mmask16 u1 = uncertain(y1, slope, floor_, low_mask, half, cap);
  __m256i h0 = _mm512_cvtps_ph(y0, 0), h1 = _mm512_cvtps_ph(y1, 0);
  _mm512_storeu_si512(&ys[r][j], _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1));
  *(uint32_t *)&flag_bytes[r][j / 8] = 0;
  return (u0 | u1) != 0;
}

__attribute__((noinline)) static int rows(void) {
  int flagged = 0;
  for (int r = 0; r < 2; r++)
    for (int j = 0; j < N; j += 32) {
      __m512 g0 = load_f16(&gs[j]), g1 = load_f16(&gs[j + 16]);
      __m512 b0 = load_f16(&bs[j]), b1 = load_f16(&bs[j + 16]);
      if (__builtin_expect(pair_out(r, j, g0, g1, b0, b1), 0)) flagged++;
    }
  return flagged;
}

__attribute__((noinline)) static int pairs(void) {
  int flagged = 0;
  for (int j = 0; j < N; j += 32) {
    __m512 g0 = load_f16(&gs[j]), g1 = load_f16(&gs[j + 16]);
    __m512 b0 = load_f16(&bs[j]), b1 = load_f16(&bs[j + 16]);
    for (int r = 0; r < 2; r++)
      if (__builtin_expect(pair_out(r, j, g0, g1, b0, b1), 0)) flagged++;
  }
  return flagged;
}

int main(int argc, char **argv) {
  long y_off = argc > 1 ? atol(argv[1]) : 0;
  if (y_off < 0 || y_off >= 4096 || y_off % 2) {
    fprintf(stderr, "usage: f16_row_pairs [Y_OFF] (even, below 4096)\n");
    return 2;
  }
  ys = (uint16_t(*)[N])(y_pages + y_off / 2);
  for (int i = 0; i < N; i++) {
    xs[0][i] = 0x3c00 + (i * 37 % 1000);
    xs[1][i] = 0x3800 + (i * 91 % 1000);
    gs[i] = 0x3c00 + i % 300;
    bs[i] = 0x2000 + i % 500;
  }
  double best[2] = {1e9, 1e9};
  int flagged[2] = {0, 0};
  for (int series = 0; series < 400; series++)
    for (int k = 0; k < 2; k++) {
      double t = now();
      for (int c = 0; c < 200; c++) flagged[k] += k ? pairs() : rows();
      t = (now() - t) / 200 / (2 * N / 16) * 1e9;
      if (t < best[k]) best[k] = t;
    }
  if (flagged[0] != flagged[1]) {
    fprintf(stderr, "f16_row_pairs: the two loops flagged different blocks\n");
    return 1;
  }
  printf("y at %ld: rows %.3f ns, pairs %.3f ns per sixteen values of a row (pairs/rows %.3f)\n",
         y_off, best[0], best[1], best[1] / best[0]);
  return 0;
}
