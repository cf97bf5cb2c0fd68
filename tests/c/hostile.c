/* Hostile kernels behind normoracle's C ABI (f32 LayerNorm and RMSNorm), selected with
 * -DVARIANT=<n>: each wraps the correct double two-pass example kernel and adds one thing no
 * correct kernel does (exits, crashes, hangs, scribbles, changes the floating-point
 * environment), or one thing a correct kernel may do and must still PASS with (prints, ignores
 * SIGTERM, closes its stdout, is slow). tests/harness.rs builds each one and asserts the
 * isolated harness's verdict and named finding. */
#define _GNU_SOURCE
#include <fenv.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define normoracle_layer_norm_f32 correct_layer_norm_f32
#define normoracle_rms_norm_f32 correct_rms_norm_f32
#include "../../examples/c/normoracle_example.c"
#undef normoracle_layer_norm_f32
#undef normoracle_rms_norm_f32

#define CORRECT 0
#define EXIT_0 1
#define EXIT_1 2
#define EXIT_2 3
#define SEGV 4
#define SEGV_WIDE 5
#define ABORT 6
#define INT_DIV_ZERO 7
#define SIGKILL_SELF 8
#define STACK_OVERFLOW 9
#define HEAP_OVERFLOW 10
#define CTOR_CRASH 11
#define DATA_SYMBOL 12
#define LOAD_FTZ_DAZ 13
#define LEAVE_FTZ_DAZ 14
#define LEAVE_TOWARD_ZERO 15
#define DAZ_READS_ZERO 16
#define UNMASK_DIVBYZERO 17
#define PAST_END 18
#define WRITE_X 19
#define WRITE_GAMMA 20
#define WRITE_BETA 21
#define SKIP_ROWS 22
#define HANG 23
#define HANG_WIDE 24
#define PRINTS 25
#define IGNORES_SIGNALS 26
#define CLOSES_STDIO 27
#define SLEEPS 28
#define LATE_WRITER 29
#define BEFORE_START 30
#define CLOSES_CHANNEL 31
#define WRITES_CHANNEL 32
#define FLUSH_SUBNORMALS 33
#define MEMORY_HOG 34

#ifndef VARIANT
#define VARIANT CORRECT
#endif

#if VARIANT == CTOR_CRASH
__attribute__((constructor)) static void on_load(void) { *(volatile int *)8 = 1; }
#elif VARIANT == LOAD_FTZ_DAZ
static void set_flush_bits(unsigned int bits);
/* What -Ofast's crtfastmath.o does when the library is loaded. */
__attribute__((constructor)) static void on_load(void) { set_flush_bits(0x8040); }
#elif VARIANT == IGNORES_SIGNALS
__attribute__((constructor)) static void on_load(void) {
    signal(SIGTERM, SIG_IGN);
    signal(SIGALRM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
}
#endif

/* Sets MXCSR bits on x86-64 (0x8000 FTZ, 0x0040 DAZ); on AArch64 either sets FPCR.FZ. */
static void set_flush_bits(unsigned int bits) {
#if defined(__x86_64__)
    unsigned int mxcsr;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    mxcsr |= bits;
    __asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
#elif defined(__aarch64__)
    unsigned long fpcr;
    (void)bits;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    fpcr |= 1ul << 24;
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#else
    (void)bits;
#endif
}

static int recurse(volatile char *p, int depth) {
    volatile char frame[4096];
    frame[0] = p ? p[0] : 0;
    return recurse(frame, depth + 1) + frame[1];
}

/* LATE_WRITER: call 3 leaves a thread behind that writes that call's y while call 4 runs
 * (call 4 waits until it has: deterministic, whatever the scheduling). */
static volatile int late_calls = 0, late_written = 0;
static void *write_late(void *arg) {
    float *y = arg;
    while (__atomic_load_n(&late_calls, __ATOMIC_SEQ_CST) < 4) usleep(50);
    y[0] = 12345.0f;
    __atomic_store_n(&late_written, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static int calls = 0;

/* The hostile part, before (returns < 0 to go on) or instead of the correct kernel. */
static int before(const float *x, const float *g, const float *b, float *y, size_t rows, size_t d) {
    (void)x; (void)g; (void)b; (void)y; (void)rows;
    calls++;
#if VARIANT == EXIT_0
    exit(0);
#elif VARIANT == EXIT_1
    exit(1);
#elif VARIANT == EXIT_2
    _exit(2);
#elif VARIANT == SEGV
    *(volatile int *)16 = 1;
#elif VARIANT == SEGV_WIDE
    if (d > 1000) *(volatile int *)16 = 1;
#elif VARIANT == ABORT
    abort();
#elif VARIANT == INT_DIV_ZERO
    volatile int seven = 7, zero = 0; /* both volatile: GCC turns 1/x into a compare */
    return seven / zero;
#elif VARIANT == SIGKILL_SELF
    raise(SIGKILL);
#elif VARIANT == STACK_OVERFLOW
    return recurse(NULL, 0);
#elif VARIANT == HEAP_OVERFLOW
    char *p = malloc(24);
    char *q = malloc(24);
    memset(p, 0x41, 64); /* over q's chunk header */
    free(q);
    free(p);
#elif VARIANT == LEAVE_FTZ_DAZ
    set_flush_bits(0x8040);
#elif VARIANT == LEAVE_TOWARD_ZERO
    fesetround(FE_TOWARDZERO);
#elif VARIANT == DAZ_READS_ZERO
    set_flush_bits(0x0040); /* DAZ: subnormal inputs read as 0, and left on */
#elif VARIANT == UNMASK_DIVBYZERO
    feenableexcept(FE_DIVBYZERO);
#elif VARIANT == HANG
    for (volatile int spin = 1; spin;) {}
#elif VARIANT == HANG_WIDE
    if (d > 1000) for (volatile int spin = 1; spin;) {}
#elif VARIANT == PRINTS
    printf("kernel says hello on stdout, call %d\n", calls);
    fprintf(stderr, "kernel says hello on stderr, call %d\n", calls);
    fflush(stdout);
#elif VARIANT == CLOSES_STDIO
    if (calls == 1) { fclose(stdout); close(1); close(2); }
#elif VARIANT == SLEEPS
    usleep(200000);
#elif VARIANT == CLOSES_CHANNEL
    close(3); close(4);
#elif VARIANT == MEMORY_HOG
    /* 1 GiB of scratch per call, touched: refused under --memory-limit. */
    size_t n = (size_t)1 << 30;
    char *scratch = malloc(n);
    if (!scratch) return 12; /* ENOMEM */
    for (size_t i = 0; i < n; i += 4096) scratch[i] = 1;
    free(scratch);
#elif VARIANT == WRITES_CHANNEL
    if (write(4, "garbage!garbage!", 16) < 0) return 1;
#endif
    return -1;
}

/* The hostile part after the correct kernel ran. */
static int after(const float *x, const float *g, const float *b, float *y, size_t rows, size_t d) {
    (void)x; (void)g; (void)b; (void)y; (void)rows; (void)d;
#if VARIANT == PAST_END
    y[rows * d] = 1.0f;
#elif VARIANT == BEFORE_START
    y[-1] = 1.0f;
#elif VARIANT == WRITE_X
    ((float *)x)[0] = x[0];
#elif VARIANT == WRITE_GAMMA
    if (g) ((float *)g)[d - 1] = g[d - 1];
#elif VARIANT == WRITE_BETA
    if (b) ((float *)b)[0] = b[0];
#elif VARIANT == LATE_WRITER
    if (calls == 3) {
        pthread_t t;
        pthread_create(&t, NULL, write_late, y);
        pthread_detach(t);
    }
    if (calls == 4) {
        __atomic_store_n(&late_calls, 4, __ATOMIC_SEQ_CST);
        for (int i = 0; i < 100000 && !__atomic_load_n(&late_written, __ATOMIC_SEQ_CST); i++) usleep(10);
    }
#endif
    return 0;
}

#if VARIANT == SKIP_ROWS
/* Only even rows are written: odd rows keep whatever y held. */
#define ROW_STEP 2
#else
#define ROW_STEP 1
#endif

#if VARIANT == FLUSH_SUBNORMALS
/* Reads subnormal inputs as 0 (what DAZ does), in a clean environment. */
static void flush(const float *x, float *t, size_t n) {
    for (size_t i = 0; i < n; i++) t[i] = fabsf(x[i]) < 1.17549435e-38f ? 0.0f * x[i] : x[i];
}
#endif

#if VARIANT == DATA_SYMBOL
const unsigned char normoracle_layer_norm_f32[64] = {0xff, 0xff, 0xff, 0xff};
#else
int normoracle_layer_norm_f32(const float *x, const float *g, const float *b, float *y, size_t rows, size_t d, float eps) {
    int rc = before(x, g, b, y, rows, d);
    if (rc >= 0) return rc;
#if VARIANT == FLUSH_SUBNORMALS
    float *t = malloc(rows * d * sizeof *t);
    flush(x, t, rows * d);
    x = t;
#endif
    for (size_t r = 0; r < rows; r += ROW_STEP) correct_layer_norm_f32(x + r * d, g, b, y + r * d, 1, d, eps);
#if VARIANT == FLUSH_SUBNORMALS
    free(t);
#endif
    return after(x, g, b, y, rows, d);
}
#endif

int normoracle_rms_norm_f32(const float *x, const float *g, float *y, size_t rows, size_t d, float eps) {
    int rc = before(x, g, NULL, y, rows, d);
    if (rc >= 0) return rc;
    for (size_t r = 0; r < rows; r += ROW_STEP) correct_rms_norm_f32(x + r * d, g, y + r * d, 1, d, eps);
    return after(x, g, NULL, y, rows, d);
}
