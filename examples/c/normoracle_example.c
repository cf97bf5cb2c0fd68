/* An example LayerNorm/RMSNorm kernel behind normoracle's C ABI, in f32, f16 and bf16.
 *
 * Build and judge it:
 *   cc -O2 -shared -fPIC -o libexample.so examples/c/normoracle_example.c -lm
 *   normoracle fuzz --lib ./libexample.so --op layer_norm --dtype f32
 *
 * The design: two passes over the row with the statistics accumulated in double (every f32,
 * f16 or bf16 value and its square are exact in double), one rounding at the end. NaN or
 * ±Inf in a row propagate to NaN (IEEE); gamma/beta may be NULL (1 and 0). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static float bits_to_float(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }
static uint32_t float_to_bits(float f) { uint32_t u; memcpy(&u, &f, sizeof u); return u; }

/* IEEE binary16 <-> float. */
static float f16_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)man, -24);
    return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}
/* Round a double to the nearest binary16 (ties to even), directly from double. */
static uint16_t double_to_f16(double v) {
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (isnan(v)) return 0x7e00;
    if (a >= 65520.0) return sign | 0x7c00;
    if (a < ldexp(1.0, -14)) return sign | (uint16_t)nearbyint(ldexp(a, 24));
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    double q = ldexp(1.0, e - 11);
    double r = nearbyint(a / q) * q; /* may carry into the next binade: still exact */
    int re;
    double m = frexp(r, &re);
    uint16_t exp = (uint16_t)(re - 1 + 15), man = (uint16_t)((ldexp(m, 11) - 1024.0));
    return sign | (uint16_t)(exp << 10) | man;
}
static float bf16_to_float(uint16_t b) { return bits_to_float((uint32_t)b << 16); }
/* Round a double to the nearest bfloat16 (ties to even), directly from double. */
static uint16_t double_to_bf16(double v) {
    if (isnan(v)) return 0x7fc0;
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (a >= ldexp(255.0 * 2 - 1, 119)) return sign | 0x7f80; /* overflow threshold (2 - 2^-8)·2^127 */
    int e;
    frexp(a, &e);
    if (e < -125) e = -125; /* subnormal quantum 2^-133 */
    double q = ldexp(1.0, e - 8);
    float r = (float)(nearbyint(a / q) * q); /* exact in float */
    return sign | (uint16_t)(float_to_bits(r) >> 16);
}

typedef float (*load_fn)(const void *, size_t);
typedef void (*store_fn)(void *, size_t, double);
static float load_f32(const void *p, size_t i) { return ((const float *)p)[i]; }
static void store_f32(void *p, size_t i, double v) { ((float *)p)[i] = (float)v; }
static float load_f16(const void *p, size_t i) { return f16_to_float(((const uint16_t *)p)[i]); }
static void store_f16(void *p, size_t i, double v) { ((uint16_t *)p)[i] = double_to_f16(v); }
static float load_bf16(const void *p, size_t i) { return bf16_to_float(((const uint16_t *)p)[i]); }
static void store_bf16(void *p, size_t i, double v) { ((uint16_t *)p)[i] = double_to_bf16(v); }

static int normalize(const void *x, const void *gamma, const void *beta, void *y, size_t rows, size_t d,
                     float eps, int rms, load_fn load, store_fn store) {
    if (d == 0 || eps < 0) return 1;
    for (size_t r = 0; r < rows; r++) {
        size_t base = r * d;
        double mean = 0, var = 0;
        if (!rms) {
            for (size_t i = 0; i < d; i++) mean += load(x, base + i);
            mean /= (double)d;
        }
        for (size_t i = 0; i < d; i++) {
            double c = load(x, base + i) - mean;
            var += c * c;
        }
        var /= (double)d;
        double inv = 1.0 / sqrt(var + (double)eps);
        for (size_t i = 0; i < d; i++) {
            double g = gamma ? load(gamma, i) : 1.0, b = beta ? load(beta, i) : 0.0;
            store(y, base + i, (load(x, base + i) - mean) * inv * g + b);
        }
    }
    return 0;
}

int normoracle_layer_norm_f32(const float *x, const float *g, const float *b, float *y, size_t rows, size_t d, float eps) {
    return normalize(x, g, b, y, rows, d, eps, 0, load_f32, store_f32);
}
int normoracle_rms_norm_f32(const float *x, const float *g, float *y, size_t rows, size_t d, float eps) {
    return normalize(x, g, NULL, y, rows, d, eps, 1, load_f32, store_f32);
}
int normoracle_layer_norm_f16(const uint16_t *x, const uint16_t *g, const uint16_t *b, uint16_t *y, size_t rows, size_t d, float eps) {
    return normalize(x, g, b, y, rows, d, eps, 0, load_f16, store_f16);
}
int normoracle_rms_norm_f16(const uint16_t *x, const uint16_t *g, uint16_t *y, size_t rows, size_t d, float eps) {
    return normalize(x, g, NULL, y, rows, d, eps, 1, load_f16, store_f16);
}
int normoracle_layer_norm_bf16(const uint16_t *x, const uint16_t *g, const uint16_t *b, uint16_t *y, size_t rows, size_t d, float eps) {
    return normalize(x, g, b, y, rows, d, eps, 0, load_bf16, store_bf16);
}
int normoracle_rms_norm_bf16(const uint16_t *x, const uint16_t *g, uint16_t *y, size_t rows, size_t d, float eps) {
    return normalize(x, g, NULL, y, rows, d, eps, 1, load_bf16, store_bf16);
}
