// A C model of the AVX-512 loops of one f32 LayerNorm row (crates/kernels/src/row.rs), used to find
// what bounds them (docs/speed.md, "The first campaigns"). Not part of the build; on an x86-64 CPU
// with AVX-512:
//
//   gcc -O2 -mavx512f -mavx512vl -mavx512dq -mfma -DVAR=0 model.c -o model && ./model
//
// VAR (bits, combinable):  0 the kernel's single-row loops (x widened once into `wide`,
//   γ and β in f32 converted on each load, y rounded to f32, near-tie test, one flag
//   byte per vector);  1 no `wide` store in the statistics pass;  2 γ, β read in f64 (no
//   conversion);  4 x converted again in the output pass instead of read from `wide`;
//   8 no near-tie test;  16 prefetch a line every two vectors (what a row with a next
//   row does);  32 the eight flags of a line OR-ed before one store;  64 the test kept in
//   a vector (min of masked sums) instead of a mask;  128 masks OR-ed in mask registers.
//
// Cycles are core cycles: the TSC is converted with a calibration loop of independent
// 256-bit vaddpd, taken as 0.5 cycles each (two FP add pipes, as on Zen 4). The throughputs
// of the conversion instructions come first.
#include <immintrin.h>
#include <stdio.h>
#include <x86intrin.h>

#define D 4096
#ifndef VAR
#define VAR 0
#endif

static float x[D] __attribute__((aligned(64))), g[D] __attribute__((aligned(64))),
    b[D] __attribute__((aligned(64))), y[D] __attribute__((aligned(64)));
static double wide[D] __attribute__((aligned(64))), g64[D] __attribute__((aligned(64))),
    b64[D] __attribute__((aligned(64)));
unsigned char flags[D / 8]; // not static: its stores must stay

#define CHAINS 8
#define N 50000000L
// Throughput of one instruction form: 8 independent chains, TSC ticks per instruction.
#define THROUGHPUT(T, init, op)                                                            \
  ({                                                                                       \
    T a0 = init, a1 = init, a2 = init, a3 = init, a4 = init, a5 = init, a6 = init,         \
      a7 = init;                                                                           \
    unsigned long t = __rdtsc();                                                           \
    for (long i = 0; i < N; i++)                                                           \
      __asm__ volatile(op(0) op(1) op(2) op(3) op(4) op(5) op(6) op(7)                     \
                       : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5),       \
                         "+v"(a6), "+v"(a7));                                              \
    (double)(__rdtsc() - t) / N / CHAINS;                                                  \
  })
#define ADD_YMM(i) "vaddpd %" #i ",%" #i ",%" #i "\n"
#define ADD_ZMM(i) ADD_YMM(i)
#define FMA_ZMM(i) "vfmadd231pd %" #i ",%" #i ",%" #i "\n"
#define PADDQ_ZMM(i) "vpaddq %" #i ",%" #i ",%" #i "\n"
#define PS2PD_ZMM(i) "vcvtps2pd %t" #i ",%" #i "\n"
#define PS2PD_YMM(i) "vcvtps2pd %x" #i ",%" #i "\n"
#define PD2PS_ZMM(i) "vcvtpd2ps %" #i ",%t" #i "\n"
#define PD2PS_YMM(i) "vcvtpd2ps %" #i ",%x" #i "\n"
// The integer route of int_widening.c: its shifts, extension, blend and gather.
#define PSLLQ_ZMM(i) "vpsllq $3, %" #i ",%" #i "\n"
#define PSRAQ_ZMM(i) "vpsraq $3, %" #i ",%" #i "\n"
#define TERNLOG_ZMM(i) "vpternlogq $0xd8, %" #i ",%" #i ",%" #i "\n"
#define PMOVSXDQ_ZMM(i) "vpmovsxdq %t" #i ",%" #i "\n"
#define PERMT2D_ZMM(i) "vpermt2d %" #i ",%" #i ",%" #i "\n"

__attribute__((noinline)) void stats(double *s, double *q) {
  __m512d c = _mm512_set1_pd(0.1), s0 = _mm512_setzero_pd(), s1 = s0, q0 = s0, q1 = s0;
  for (int j = 0; j < D; j += 16) {
    __m512d a = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_load_ps(x + j)), c);
    __m512d e = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_load_ps(x + j + 8)), c);
#if !(VAR & 1)
    _mm512_store_pd(wide + j, a);
    _mm512_store_pd(wide + j + 8, e);
#endif
    s0 = _mm512_add_pd(s0, a);
    s1 = _mm512_add_pd(s1, e);
    q0 = _mm512_fmadd_pd(a, a, q0);
    q1 = _mm512_fmadd_pd(e, e, q1);
  }
  *s = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
  *q = _mm512_reduce_add_pd(_mm512_add_pd(q0, q1));
}

__attribute__((noinline)) void output(double m, double r) {
  __m512d vm = _mm512_set1_pd(m), vr = _mm512_set1_pd(r), c = _mm512_set1_pd(0.1);
  // The kernel's f32 near-tie window: [midpoint − 32, midpoint + 32) f64 ulps.
  __m512i off = _mm512_set1_epi64(32 - (1L << 28));
  __m512i mask = _mm512_set1_epi64(((2L << 28) - 1) & ~63L);
  __mmask8 acc = 0;
  __m512i vacc = _mm512_set1_epi64(-1);
  for (int j = 0; j < D; j += 8) {
#if VAR & 16
    if (!(j & 8))
      _mm_prefetch((const char *)(x + j), _MM_HINT_T0);
#endif
#if VAR & 2
    __m512d gg = _mm512_load_pd(g64 + j), bb = _mm512_load_pd(b64 + j);
#else
    __m512d gg = _mm512_cvtps_pd(_mm256_load_ps(g + j));
    __m512d bb = _mm512_cvtps_pd(_mm256_load_ps(b + j));
#endif
#if VAR & 4
    __m512d t = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_load_ps(x + j)), c);
#else
    __m512d t = _mm512_load_pd(wide + j);
#endif
    __m512d v = _mm512_fmadd_pd(gg, _mm512_mul_pd(_mm512_sub_pd(t, vm), vr), bb);
    _mm256_store_ps(y + j, _mm512_cvtpd_ps(v));
    __m512i sum = _mm512_add_epi64(_mm512_castpd_si512(v), off);
#if VAR & 8
    (void)sum;
#elif VAR & 64
    vacc = _mm512_min_epu64(vacc, _mm512_and_si512(sum, mask));
    if ((j & 63) == 56) {
      flags[j / 64] = _mm512_cmpeq_epi64_mask(vacc, _mm512_setzero_si512());
      vacc = _mm512_set1_epi64(-1);
    }
#elif VAR & 128
    acc = _kor_mask8(acc, _mm512_testn_epi64_mask(sum, mask));
    if ((j & 63) == 56) {
      flags[j / 64] = acc;
      acc = 0;
    }
#elif VAR & 32
    acc |= _mm512_testn_epi64_mask(sum, mask);
    if ((j & 63) == 56) {
      flags[j / 64] = acc;
      acc = 0;
    }
#else
    flags[j / 8] = _mm512_testn_epi64_mask(sum, mask);
#endif
  }
  (void)acc;
  (void)vacc;
  (void)c;
}

int main(void) {
  double tsc_per_cycle = THROUGHPUT(__m256d, _mm256_set1_pd(1.0), ADD_YMM) / 0.5;
  printf("TSC ticks per core cycle: %.3f (vaddpd ymm taken as 0.5 cycles)\n", tsc_per_cycle);
  struct {
    const char *name;
    double ticks;
  } forms[] = {
      {"vaddpd zmm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), ADD_ZMM)},
      {"vfmadd231pd zmm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), FMA_ZMM)},
      {"vpaddq zmm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), PADDQ_ZMM)},
      {"vcvtps2pd zmm <- ymm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), PS2PD_ZMM)},
      {"vcvtps2pd ymm <- xmm", THROUGHPUT(__m256d, _mm256_set1_pd(1.0), PS2PD_YMM)},
      {"vcvtpd2ps ymm <- zmm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), PD2PS_ZMM)},
      {"vcvtpd2ps xmm <- ymm", THROUGHPUT(__m256d, _mm256_set1_pd(1.0), PD2PS_YMM)},
      {"vpsllq zmm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), PSLLQ_ZMM)},
      {"vpsraq zmm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), PSRAQ_ZMM)},
      {"vpternlogq zmm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), TERNLOG_ZMM)},
      {"vpmovsxdq zmm <- ymm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), PMOVSXDQ_ZMM)},
      {"vpermt2d zmm", THROUGHPUT(__m512d, _mm512_set1_pd(1.0), PERMT2D_ZMM)},
  };
  for (unsigned i = 0; i < sizeof forms / sizeof forms[0]; i++)
    printf("%-22s %.2f cycles\n", forms[i].name, forms[i].ticks / tsc_per_cycle);

  for (int i = 0; i < D; i++) {
    x[i] = (i * 7919 % 1000) * 0.001f;
    g[i] = 1.0f + i * 1e-4f;
    b[i] = 0.5f;
    g64[i] = g[i];
    b64[i] = b[i];
  }
  double s = 0, q = 0;
  const long reps = 200000;
  unsigned long best_stats = -1, best_output = -1;
  for (int round = 0; round < 5; round++) {
    unsigned long t0 = __rdtsc();
    for (long i = 0; i < reps; i++)
      stats(&s, &q);
    unsigned long t1 = __rdtsc();
    for (long i = 0; i < reps; i++)
      output(s * 1e-9, 1.0 + q * 1e-12);
    unsigned long t2 = __rdtsc();
    if (t1 - t0 < best_stats)
      best_stats = t1 - t0;
    if (t2 - t1 < best_output)
      best_output = t2 - t1;
  }
  double per_vector = (double)reps * (D / 8) * tsc_per_cycle;
  printf("VAR %d: statistics pass %.2f, output pass %.2f cycles per eight elements (best of 5)\n",
         VAR, best_stats / per_vector, best_output / per_vector);
  return 0;
}
