// One row in L1, one core: a memcpy of it against loops that do less than any LayerNorm
// (docs/speed.md, "Zen 4, a fifth campaign: the floor"). Not part of the build; on an x86-64
// CPU with AVX-512:
//
//   gcc -O2 -march=native floor.c -o floor -lm && ./floor 4096 2000 0 && ./floor 4096 2000 16
//
// Arguments: the row's width D (a multiple of 64), the calls a sample, and the bytes past a
// cache line at which x and y start (0 or 16: a `Vec` is often 16 bytes past a line).
// Prints the median and best of 41 samples of each loop, the loops alternating in each
// sample, and the ratio of the medians to the memcpy's:
// - memcpy: glibc's, of the row (the bench's yardstick for a single row);
// - read+sub: the row summed (four sums of sixteen f32 lanes), then y = x − mean: what the
//   bench's floor (`kernels::floor`) does, the least any LayerNorm or RMSNorm does;
// - naive_f32: the one-pass E[x], E[x²] LayerNorm in f32 with γ and β, a kernel the judge
//   fails (its arithmetic, not its accuracy, is the point here);
// - naive_f64: the same in f64 lanes (x, γ, β widened, one rounding at the end), with no
//   certainty test: the arithmetic of an f64 kernel at its least.
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "loop_model.h"

static size_t D;
static float *x, *y, *g, *b;

__attribute__((noinline)) static void copy(void) { __builtin_memcpy(y, x, D * 4); }

__attribute__((noinline)) static void read_sub(void) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < D; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  __m512 m = _mm512_set1_ps(s / D);
  for (size_t i = 0; i < D; i += 16) _mm512_storeu_ps(y + i, _mm512_sub_ps(_mm512_loadu_ps(x + i), m));
}

__attribute__((noinline)) static void naive_f32(void) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, q0 = a0, q1 = a0;
  for (size_t i = 0; i < D; i += 32) {
    __m512 u = _mm512_loadu_ps(x + i), v = _mm512_loadu_ps(x + i + 16);
    a0 = _mm512_add_ps(a0, u);
    a1 = _mm512_add_ps(a1, v);
    q0 = _mm512_fmadd_ps(u, u, q0);
    q1 = _mm512_fmadd_ps(v, v, q1);
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
  float q = _mm512_reduce_add_ps(_mm512_add_ps(q0, q1));
  float mu = s / D, var = q / D - mu * mu;
  __m512 m = _mm512_set1_ps(mu), r = _mm512_set1_ps(1.0f / sqrtf(var + 1e-5f));
  for (size_t i = 0; i < D; i += 16) {
    __m512 z = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), m), r);
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(z, _mm512_loadu_ps(g + i), _mm512_loadu_ps(b + i)));
  }
}

__attribute__((noinline)) static void naive_f64(void) {
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, q0 = a0, q1 = a0;
  __m512d c = _mm512_set1_pd(x[0]);
  for (size_t i = 0; i < D; i += 16) {
    __m512d u = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), c);
    __m512d v = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)), c);
    a0 = _mm512_add_pd(a0, u);
    a1 = _mm512_add_pd(a1, v);
    q0 = _mm512_fmadd_pd(u, u, q0);
    q1 = _mm512_fmadd_pd(v, v, q1);
  }
  double s = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
  double q = _mm512_reduce_add_pd(_mm512_add_pd(q0, q1));
  double mu = s / D, var = q / D - mu * mu;
  __m512d m = _mm512_set1_pd(mu + x[0]), r = _mm512_set1_pd(1.0 / sqrt(var + 1e-5));
  for (size_t i = 0; i < D; i += 8) {
    __m512d z = _mm512_mul_pd(_mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), m), r);
    __m512d o = _mm512_fmadd_pd(z, _mm512_cvtps_pd(_mm256_loadu_ps(g + i)),
                                _mm512_cvtps_pd(_mm256_loadu_ps(b + i)));
    _mm256_storeu_ps(y + i, _mm512_cvtpd_ps(o));
  }
}

static int by_value(const void *p, const void *q) {
  double u = *(const double *)p, v = *(const double *)q;
  return u < v ? -1 : u > v;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: floor D CALLS [OFFSET]\n");
    return 2;
  }
  D = atol(argv[1]);
  long calls = atol(argv[2]);
  int offset = argc > 3 ? atoi(argv[3]) : 0;
  if (D == 0 || D % 64 || calls <= 0 || offset < 0 || offset >= 64 || offset % 4) {
    fprintf(stderr, "floor: D a multiple of 64, CALLS at least 1, OFFSET a multiple of 4 below 64\n");
    return 2;
  }
  x = (float *)((char *)aligned_alloc(64, D * 4 + 64) + offset);
  y = (float *)((char *)aligned_alloc(64, D * 4 + 64) + offset);
  g = aligned_alloc(64, D * 4);
  b = aligned_alloc(64, D * 4);
  for (size_t i = 0; i < D; i++) {
    x[i] = 0.5f + (float)rand() / RAND_MAX;
    g[i] = 1.0f;
    b[i] = 0.0f;
  }
  void (*loops[])(void) = {copy, read_sub, naive_f32, naive_f64};
  const char *names[] = {"memcpy", "read+sub", "naive_f32", "naive_f64"};
  enum { LOOPS = 4, SAMPLES = 41 };
  static double t[LOOPS][SAMPLES];
  for (int s = 0; s < SAMPLES; s++)
    for (int k = 0; k < LOOPS; k++) {
      double start = now();
      for (long i = 0; i < calls; i++) loops[k]();
      t[k][s] = (now() - start) / calls;
    }
  for (int k = 0; k < LOOPS; k++) qsort(t[k], SAMPLES, sizeof(double), by_value);
  printf("row of %zu f32, x and y %d bytes past a line\n", D, offset);
  for (int k = 0; k < LOOPS; k++)
    printf("%-10s median %8.3f us  best %8.3f us  memcpy/this (medians) %.2f\n", names[k],
           t[k][SAMPLES / 2] * 1e6, t[k][0] * 1e6, t[0][SAMPLES / 2] / t[k][SAMPLES / 2]);
  return 0;
}
