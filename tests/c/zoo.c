/* A zoo of LayerNorm/RMSNorm kernels behind normoracle's C ABI, correct and buggy, selected
 * at compile time with -DVARIANT=<n>. The integration test tests/c_abi.rs builds each one and
 * asserts the judge's verdict: correct kernels pass, buggy ones fail.
 *
 * Every variant computes in float or double and converts at the edges, so the same code
 * serves f32, f16 and bf16 (f16/bf16 are IEEE bit patterns in uint16_t). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CORRECT_F64_TWO_PASS 1
#define CORRECT_F64_WELFORD 2
#define CORRECT_F32_PAIRWISE 3
#define BUG_ONE_PASS_F32 10
#define BUG_EPS_OUTSIDE 11
#define BUG_UNBIASED 12
#define BUG_NO_MEAN 13
#define BUG_TAIL_DROPPED 14
#define BUG_GAMMA_INDEX 15
#define BUG_LEAK_ACROSS_ROWS 16
#define BUG_F32_OVERFLOW 17
#define BUG_HALF_ACCUMULATION 18
#define BUG_RETURNS_ERROR 19

#ifndef VARIANT
#define VARIANT CORRECT_F32_PAIRWISE
#endif

/* ---- format conversions (round to nearest even) ---- */
static float bits_to_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t float_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static float f16_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_to_float(sign | 0x7f800000 | (man << 13));
    if (exp == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)man, -24);
    return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}
static uint16_t float_to_f16(float f) {
    uint32_t u = float_to_bits(f), sign = (u >> 16) & 0x8000;
    float a = fabsf(f);
    if (isnan(f)) return (uint16_t)(sign | 0x7e00);
    if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00);
    if (a < ldexpf(1.0f, -14)) { /* subnormal: quantum 2^-24, nearbyint rounds to even */
        return (uint16_t)(sign | (uint16_t)nearbyintf(ldexpf(a, 24)));
    }
    int e; frexpf(a, &e); /* a = m·2^e, m in [0.5,1) */
    float q = ldexpf(1.0f, e - 11);
    float r = nearbyintf(a / q) * q; /* exact: scaling by powers of two */
    uint32_t ru = float_to_bits(r);
    uint32_t exp = ((ru >> 23) & 0xff) - 112, man = (ru >> 13) & 0x3ff;
    return (uint16_t)(sign | (exp << 10) | man);
}
static float bf16_to_float(uint16_t b) { return bits_to_float((uint32_t)b << 16); }
static uint16_t float_to_bf16(float f) {
    uint32_t u = float_to_bits(f);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* ---- row kernels in float ---- */
static float pairwise_f32(const float *v, size_t n) {
    if (n <= 8) { float s = 0; for (size_t i = 0; i < n; i++) s += v[i]; return s; }
    return pairwise_f32(v, n / 2) + pairwise_f32(v + n / 2, n - n / 2);
}

static double leak_sum = 0, leak_sq = 0; /* BUG_LEAK_ACROSS_ROWS keeps these between rows */

static int row(const float *x, const float *g, const float *b, float *y, size_t d, float eps, int rms) {
#define G(i) (g ? g[i] : 1.0f)
#define B(i) (b ? b[i] : 0.0f)
#if VARIANT == CORRECT_F64_TWO_PASS || VARIANT == BUG_EPS_OUTSIDE || VARIANT == BUG_UNBIASED || \
    VARIANT == BUG_NO_MEAN || VARIANT == BUG_GAMMA_INDEX || VARIANT == BUG_TAIL_DROPPED || \
    VARIANT == BUG_LEAK_ACROSS_ROWS
    size_t n = d;
#if VARIANT == BUG_TAIL_DROPPED
    n = d & ~(size_t)7; /* a vector loop of 8 whose scalar tail was forgotten */
#endif
    double mean = 0, var = 0;
#if VARIANT == BUG_LEAK_ACROSS_ROWS
    for (size_t i = 0; i < n; i++) leak_sum += x[i];
    mean = leak_sum / (double)n;
#else
    for (size_t i = 0; i < n; i++) mean += x[i];
    mean /= (double)n;
#endif
#if VARIANT == BUG_NO_MEAN
    mean = 0;
#endif
    if (rms) mean = 0;
    for (size_t i = 0; i < n; i++) var += ((double)x[i] - mean) * ((double)x[i] - mean);
#if VARIANT == BUG_UNBIASED
    var /= (double)(n - 1);
#else
    var /= (double)n;
#endif
#if VARIANT == BUG_EPS_OUTSIDE
    double r = 1.0 / (sqrt(var) + eps);
#else
    double r = 1.0 / sqrt(var + eps);
#endif
    for (size_t i = 0; i < n; i++) {
#if VARIANT == BUG_GAMMA_INDEX
        size_t gi = d - 1 - i;
#else
        size_t gi = i;
#endif
        y[i] = (float)(((double)x[i] - mean) * r * G(gi) + B(gi));
    }
    return 0;
#elif VARIANT == CORRECT_F64_WELFORD
    double mean = 0, m2 = 0;
    for (size_t i = 0; i < d; i++) {
        double v = x[i], delta = v - mean;
        mean += delta / (double)(i + 1);
        m2 += delta * (v - mean);
    }
    double var = m2 / (double)d;
    if (rms) { var = 0; for (size_t i = 0; i < d; i++) var += (double)x[i] * x[i]; var /= (double)d; mean = 0; }
    double r = 1.0 / sqrt(var + eps);
    for (size_t i = 0; i < d; i++) y[i] = (float)(((double)x[i] - mean) * r * G(i) + B(i));
    return 0;
#elif VARIANT == CORRECT_F32_PAIRWISE || VARIANT == BUG_F32_OVERFLOW || VARIANT == BUG_HALF_ACCUMULATION
    float *t = malloc(d * sizeof(float));
    if (!t) return 1;
    float amax = 0;
    for (size_t i = 0; i < d; i++) amax = fmaxf(amax, fabsf(x[i]));
    if (isnan(amax) || isinf(amax) || x[0] != x[0]) { for (size_t i = 0; i < d; i++) y[i] = NAN; free(t); return 0; }
    int k = 0;
#if VARIANT == CORRECT_F32_PAIRWISE
    if (amax > 0) frexpf(amax, &k); /* the row is scaled by 2^-k: nothing overflows */
#endif
    float mean = 0;
    for (size_t i = 0; i < d; i++) t[i] = ldexpf(x[i], -k);
    if (!rms) mean = pairwise_f32(t, d) / (float)d;
    for (size_t i = 0; i < d; i++) { t[i] = t[i] - mean; }
    float *sq = malloc(d * sizeof(float));
    if (!sq) { free(t); return 1; }
    for (size_t i = 0; i < d; i++) sq[i] = t[i] * t[i];
#if VARIANT == BUG_HALF_ACCUMULATION
    /* sums of squares accumulated in the storage format (f16 overflows at 65504) */
    float acc = 0;
    for (size_t i = 0; i < d; i++) acc = f16_to_float(float_to_f16(acc + f16_to_float(float_to_f16(sq[i]))));
    float var = acc / (float)d;
#else
    float var = pairwise_f32(sq, d) / (float)d;
#endif
    free(sq);
    float eps_scaled = ldexpf(eps, -2 * k);
    for (size_t i = 0; i < d; i++) {
        float v;
        if (isinf(eps_scaled)) /* a tiny row: ε dominates; undo the scaling first */
            v = ldexpf(t[i], k) / sqrtf(ldexpf(var, 2 * k) + eps);
        else if (var + eps_scaled == 0.0f && eps > 0) /* a huge constant row: ε·2^-2k underflowed */
            v = 0.0f;
        else
            v = t[i] / sqrtf(var + eps_scaled);
        y[i] = v * G(i) + B(i);
    }
    free(t);
    return 0;
#elif VARIANT == BUG_ONE_PASS_F32
    float s = 0, s2 = 0;
    for (size_t i = 0; i < d; i++) { s += x[i]; s2 += x[i] * x[i]; }
    float mean = rms ? 0 : s / (float)d;
    float var = s2 / (float)d - mean * mean;
    float r = 1.0f / sqrtf(var + eps);
    for (size_t i = 0; i < d; i++) y[i] = (x[i] - mean) * r * G(i) + B(i);
    return 0;
#elif VARIANT == BUG_RETURNS_ERROR
    (void)x; (void)g; (void)b; (void)y; (void)eps; (void)rms;
    return d > 1000 ? 3 : (int)(y[0] = 0);
#endif
#undef G
#undef B
}

/* ---- the ABI, for each storage format ---- */
static int run(const float *x, const float *g, const float *b, float *y, size_t rows, size_t d, float eps, int rms) {
    leak_sum = 0; leak_sq = 0;
    for (size_t r = 0; r < rows; r++) {
        int rc = row(x + r * d, g, b, y + r * d, d, eps, rms);
        if (rc) return rc;
    }
    return 0;
}

int normoracle_layer_norm_f32(const float *x, const float *g, const float *b, float *y, size_t rows, size_t d, float eps) {
    memset(y, 0, rows * d * sizeof(float));
    return run(x, g, b, y, rows, d, eps, 0);
}
int normoracle_rms_norm_f32(const float *x, const float *g, float *y, size_t rows, size_t d, float eps) {
    memset(y, 0, rows * d * sizeof(float));
    return run(x, g, NULL, y, rows, d, eps, 1);
}

#define HALF_ENTRY(NAME, TO_F, FROM_F, RMS)                                                      \
    static int NAME##_impl(const uint16_t *x, const uint16_t *g, const uint16_t *b, uint16_t *y, \
                           size_t rows, size_t d, float eps) {                                   \
        size_t n = rows * d;                                                                     \
        float *xf = malloc(n * sizeof(float)), *yf = calloc(n, sizeof(float));                   \
        float *gf = g ? malloc(d * sizeof(float)) : NULL, *bf = b ? malloc(d * sizeof(float)) : NULL; \
        for (size_t i = 0; i < n; i++) xf[i] = TO_F(x[i]);                                       \
        for (size_t i = 0; g && i < d; i++) gf[i] = TO_F(g[i]);                                  \
        for (size_t i = 0; b && i < d; i++) bf[i] = TO_F(b[i]);                                  \
        int rc = run(xf, gf, bf, yf, rows, d, eps, RMS);                                         \
        for (size_t i = 0; i < n; i++) y[i] = FROM_F(yf[i]);                                     \
        free(xf); free(yf); free(gf); free(bf);                                                  \
        return rc;                                                                               \
    }
HALF_ENTRY(ln_f16, f16_to_float, float_to_f16, 0)
HALF_ENTRY(rms_f16, f16_to_float, float_to_f16, 1)
HALF_ENTRY(ln_bf16, bf16_to_float, float_to_bf16, 0)
HALF_ENTRY(rms_bf16, bf16_to_float, float_to_bf16, 1)

int normoracle_layer_norm_f16(const uint16_t *x, const uint16_t *g, const uint16_t *b, uint16_t *y, size_t rows, size_t d, float eps) { return ln_f16_impl(x, g, b, y, rows, d, eps); }
int normoracle_rms_norm_f16(const uint16_t *x, const uint16_t *g, uint16_t *y, size_t rows, size_t d, float eps) { return rms_f16_impl(x, g, NULL, y, rows, d, eps); }
int normoracle_layer_norm_bf16(const uint16_t *x, const uint16_t *g, const uint16_t *b, uint16_t *y, size_t rows, size_t d, float eps) { return ln_bf16_impl(x, g, b, y, rows, d, eps); }
int normoracle_rms_norm_bf16(const uint16_t *x, const uint16_t *g, uint16_t *y, size_t rows, size_t d, float eps) { return rms_bf16_impl(x, g, NULL, y, rows, d, eps); }
