// A C model of how the row loops of f32 LayerNorm (crates/kernels/src/row.rs) meet memory, on one
// thread: 4096 rows of 4096 f32 (64 MiB in, 64 MiB out, y written with non-temporal
// stores), against plain streams of the same bytes. Used for docs/speed.md ("The first
// campaigns": the fused loop and γ, β traffic). Not part of the build; on an x86-64 CPU with
// AVX-512:
//
//   gcc -O2 -march=native memory.c -o memory && taskset -c 0 ./memory KS KO GB
//
// KS, KO: extra dependent fused multiply-adds per eight values in the statistics and the
// output loop (the kernel's own arithmetic is about KS = 1, KO = 2 on top of the
// conversions, which the model has). GB: γ and β in the output loop, 0 none, 1 f64 arrays
// (the kernel's multi-row calls), 2 f32 arrays converted on each load. Prints the best of
// seven runs of each variant, in ms:
//   read, ntwrite, ntcopy     one pass over x, one over y, a non-temporal copy x → y;
//   in-cache                  the row loops over 24 rows (in L2, y stored to cache), scaled
//                             to 4096 rows;
//   rows                      statistics loop, then output loop, row by row, requesting the
//                             next row's lines in the output loop (the kernel's loops);
//   fused                     the output loop of row r with the statistics of row r + 1,
//                             requesting row r + 2 (the experiment docs/speed.md reports).
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>

#include "loop_model.h"

#define N (16u << 20)
#define D 4096
#define ROWS (N / D)

static float *x, *y;
static double g64[D] __attribute__((aligned(64))), b64[D] __attribute__((aligned(64)));
static float g32[D] __attribute__((aligned(64))), b32[D] __attribute__((aligned(64)));
static int ks, ko, gb, stream = 1;

static inline __m512d work(__m512d v, int k) {
  __m512d c = _mm512_set1_pd(1.0000001);
  for (int i = 0; i < k; i++) v = _mm512_fmadd_pd(v, c, c);
  return v;
}

// Statistics of eight values (converted, worked on, summed).
static inline __m512d stat8(__m512d acc, const float *p) {
  return _mm512_add_pd(acc, work(_mm512_cvtps_pd(_mm256_loadu_ps(p)), ks));
}

// Output of eight values at column j: converted, centered, worked on, γ·z + β, rounded,
// streamed (stored to cache in the in-cache variant).
static inline void out8(const float *xr, float *yr, int j, __m512d mean) {
  __m512d v = work(_mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(xr + j)), mean), ko);
  if (gb == 1) v = _mm512_fmadd_pd(v, _mm512_load_pd(g64 + j), _mm512_load_pd(b64 + j));
  if (gb == 2)
    v = _mm512_fmadd_pd(v, _mm512_cvtps_pd(_mm256_load_ps(g32 + j)),
                        _mm512_cvtps_pd(_mm256_load_ps(b32 + j)));
  if (stream)
    _mm256_stream_ps(yr + j, _mm512_cvtpd_ps(v));
  else
    _mm256_store_ps(yr + j, _mm512_cvtpd_ps(v));
}

static __m512d mean_of(__m512d acc) { return _mm512_set1_pd(_mm512_reduce_add_pd(acc) * 1e-30); }

__attribute__((noinline)) static double read_all(void) {
  __m512 a = _mm512_setzero_ps();
  for (size_t i = 0; i < N; i += 16) a = _mm512_add_ps(a, _mm512_loadu_ps(x + i));
  return _mm512_reduce_add_ps(a);
}

__attribute__((noinline)) static void nt_write(void) {
  for (size_t i = 0; i < N; i += 8) _mm256_stream_ps(y + i, _mm256_set1_ps(1));
  _mm_sfence();
}

__attribute__((noinline)) static void nt_copy(void) {
  for (size_t i = 0; i < N; i += 8) _mm256_stream_ps(y + i, _mm256_loadu_ps(x + i));
  _mm_sfence();
}

__attribute__((noinline)) static void rows(size_t nrows) {
  for (size_t r = 0; r < nrows; r++) {
    const float *xr = x + r * D;
    float *yr = y + r * D;
    __m512d acc = _mm512_setzero_pd();
    for (int j = 0; j < D; j += 8) acc = stat8(acc, xr + j);
    __m512d mean = mean_of(acc);
    for (int j = 0; j < D; j += 8) {
      if (j % 16 == 0 && r + 1 < nrows) _mm_prefetch((const char *)(xr + D + j), _MM_HINT_T0);
      out8(xr, yr, j, mean);
    }
  }
  _mm_sfence();
}

__attribute__((noinline)) static void fused(void) {
  __m512d acc = _mm512_setzero_pd();
  for (int j = 0; j < D; j += 8) acc = stat8(acc, x + j);
  for (size_t r = 0; r < ROWS; r++) {
    const float *xr = x + r * D;
    float *yr = y + r * D;
    __m512d mean = mean_of(acc);
    acc = _mm512_setzero_pd();
    for (int j = 0; j < D; j += 8) {
      if (j % 16 == 0 && r + 2 < ROWS) _mm_prefetch((const char *)(xr + 2 * D + j), _MM_HINT_T0);
      if (r + 1 < ROWS) acc = stat8(acc, xr + D + j);
      out8(xr, yr, j, mean);
    }
  }
  _mm_sfence();
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: memory KS KO GB\n");
    return 2;
  }
  ks = atoi(argv[1]), ko = atoi(argv[2]), gb = atoi(argv[3]);
  x = aligned_alloc(64, N * sizeof(float));
  y = aligned_alloc(64, N * sizeof(float));
  for (size_t i = 0; i < N; i++) x[i] = i % 977, y[i] = 0;
  for (int i = 0; i < D; i++) g64[i] = g32[i] = 1 + i * 1e-6f, b64[i] = b32[i] = i * 1e-7f;
  enum { READ, WRITE, COPY, CACHE, ROWWISE, FUSED, VARIANTS };
  const char *names[VARIANTS] = {"read", "ntwrite", "ntcopy", "in-cache", "rows", "fused"};
  double best[VARIANTS];
  for (int v = 0; v < VARIANTS; v++) best[v] = 1e9;
  volatile double sink = 0;
  for (int rep = 0; rep < 7; rep++) {
    for (int v = 0; v < VARIANTS; v++) {
      double t = now();
      switch (v) {
        case READ: sink += read_all(); break;
        case WRITE: nt_write(); break;
        case COPY: nt_copy(); break;
        case CACHE:
          stream = 0;
          for (int k = 0; k < ROWS / 24; k++) rows(24);
          stream = 1;
          break;
        case ROWWISE: rows(ROWS); break;
        case FUSED: fused(); break;
      }
      t = now() - t;
      if (v == CACHE) t *= (double)ROWS / (ROWS / 24 * 24);
      if (t < best[v]) best[v] = t;
    }
  }
  printf("KS=%d KO=%d GB=%d:", ks, ko, gb);
  for (int v = 0; v < VARIANTS; v++) printf(" %s %.2f", names[v], best[v] * 1e3);
  printf(" ms\n");
  return 0;
}
