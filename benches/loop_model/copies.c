// Copies of a buffer on two threads, each copying its half: glibc's memcpy, AVX-512 loads
// with cached stores, and with non-temporal stores; the times that the kernels' store
// policy is weighed against (docs/speed.md, "A third campaign on the Cascade Lake Xeon"). And
// the bench's memcpy (in tasks of 256 KiB, where glibc copies with `rep movsb`), `rep movsb`
// itself, and y staged: computed into a 16 KiB buffer in L1, then copied out by `rep movsb`,
// whose full-line writes need not read the line first (docs/speed.md, "A fourth campaign on the
// Cascade Lake Xeon"). Not part of the build; on an x86-64 CPU with AVX-512:
//
//   gcc -O2 -mavx512f -pthread copies.c -o copies && ./copies 64
//
// The argument is the MiB copied (read, and as many written). Prints, for each copy, the
// median and the best of 15 rounds (the copies alternate within a round), each round timed
// as the slower thread's own time.
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop_model.h"

#define ROUNDS 15

static char *src, *dst;
static size_t bytes;
// 0 memcpy, 1 cached stores, 2 non-temporal stores, 3 memcpy in 256 KiB tasks, 4 rep movsb
// in 256 KiB tasks, 5 staged through 16 KiB in L1.
#define MODES 6
#define TASK (256 << 10)
#define STAGE (16 << 10)
static int mode;
static pthread_barrier_t start;
static double seconds[2];

static inline void rep_movsb(void *d, const void *s, size_t n) {
  __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}

static void *copy_half(void *arg) {
  long id = (long)arg;
  size_t half = bytes / 2;
  char *s = src + id * half, *d = dst + id * half;
  pthread_barrier_wait(&start);
  double t = now();
  if (mode == 0) {
    memcpy(d, s, half);
  } else if (mode == 1) {
    for (size_t i = 0; i < half; i += 64) _mm512_storeu_si512(d + i, _mm512_loadu_si512(s + i));
  } else if (mode == 2) {
    for (size_t i = 0; i < half; i += 64)
      _mm512_stream_si512((void *)(d + i), _mm512_loadu_si512(s + i));
    _mm_sfence();
  } else if (mode == 3) {
    for (size_t c = 0; c < half; c += TASK) memcpy(d + c, s + c, TASK);
  } else if (mode == 4) {
    for (size_t c = 0; c < half; c += TASK) rep_movsb(d + c, s + c, TASK);
  } else {
    static __thread char stage[STAGE] __attribute__((aligned(64)));
    for (size_t c = 0; c < half; c += STAGE) {
      for (size_t i = 0; i < STAGE; i += 64) _mm512_store_si512(stage + i, _mm512_loadu_si512(s + c + i));
      rep_movsb(d + c, stage, STAGE);
    }
  }
  seconds[id] = now() - t;
  return 0;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long mib = argc > 1 ? atol(argv[1]) : 0;
  if (mib < 2 || mib % 2) {
    fprintf(stderr, "usage: copies MIB (even, at least 2)\n");
    return 2;
  }
  bytes = (size_t)mib << 20;
  src = aligned_alloc(64, bytes);
  dst = aligned_alloc(64, bytes);
  if (!src || !dst) {
    fprintf(stderr, "copies: cannot allocate %ld MiB twice\n", mib);
    return 2;
  }
  memset(src, 1, bytes);
  memset(dst, 2, bytes);
  double times[MODES][ROUNDS];
  for (int r = 0; r < ROUNDS; r++)
    for (mode = 0; mode < MODES; mode++) {
      pthread_t threads[2];
      pthread_barrier_init(&start, 0, 2);
      for (long i = 0; i < 2; i++) pthread_create(&threads[i], 0, copy_half, (void *)i);
      for (int i = 0; i < 2; i++) pthread_join(threads[i], 0);
      pthread_barrier_destroy(&start);
      times[mode][r] = seconds[0] > seconds[1] ? seconds[0] : seconds[1];
    }
  const char *names[MODES] = {"memcpy",         "cached stores",     "non-temporal stores",
                              "memcpy in tasks", "rep movsb in tasks", "staged, rep movsb"};
  for (int m = 0; m < MODES; m++) {
    qsort(times[m], ROUNDS, sizeof(double), by_value);
    printf("%-20s %ld MiB: median %.2f ms, best %.2f ms\n", names[m], mib,
           times[m][ROUNDS / 2] * 1e3, times[m][0] * 1e3);
  }
  return 0;
}
