/* ggml's CPU LayerNorm and RMSNorm behind normoracle's C ABI: each call builds the graph a
 * llama.cpp model builds for its norms (ggml_norm or ggml_rms_norm, then ggml_mul by γ and
 * ggml_add of β when given) on a ggml context, runs it on ggml's CPU backend in one thread,
 * and copies the result out. The CPU backend fuses RMS_NORM followed by MUL into one pass,
 * as it does in llama.cpp's graphs.
 *
 * Only f32: ggml's CPU norm and rms_norm take F32 tensors only (ggml_compute_forward_norm
 * aborts on any other type), so no _f16/_bf16 entry points are exported and the zoo reads
 * those rows as unsupported.
 *
 * Build: scripts/ggml_shim.sh (downloads llama-cpp-python's source distribution, which
 * carries ggml, builds ggml's CPU backend and links this file against it). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ggml.h"
#include "ggml-cpu.h"

static int norm(const float *x, const float *gamma, const float *beta, float *y, size_t rows, size_t d,
                float eps, int rms) {
    if (d == 0 || !(eps >= 0.0f)) return 1; /* ggml asserts eps >= 0 */
    if (rows == 0) return 0;
    size_t n = rows * d;
    struct ggml_init_params params = {
        /* x, the norm, γ, β, their products, the work buffer, and slack */
        .mem_size = 8 * n * sizeof(float) + 4 * d * sizeof(float) + 16 * ggml_tensor_overhead() +
                    ggml_graph_overhead() + (1 << 20),
        .mem_buffer = NULL,
        .no_alloc = false,
    };
    struct ggml_context *ctx = ggml_init(params);
    if (!ctx) return 2;
    struct ggml_tensor *tx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, (int64_t)d, (int64_t)rows);
    memcpy(tx->data, x, n * sizeof(float));
    struct ggml_tensor *out = rms ? ggml_rms_norm(ctx, tx, eps) : ggml_norm(ctx, tx, eps);
    if (gamma) {
        struct ggml_tensor *tg = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, (int64_t)d);
        memcpy(tg->data, gamma, d * sizeof(float));
        out = ggml_mul(ctx, out, tg);
    }
    if (beta) {
        struct ggml_tensor *tb = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, (int64_t)d);
        memcpy(tb->data, beta, d * sizeof(float));
        out = ggml_add(ctx, out, tb);
    }
    struct ggml_cgraph *graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, out);
    enum ggml_status status = ggml_graph_compute_with_ctx(ctx, graph, 1);
    if (status == GGML_STATUS_SUCCESS) memcpy(y, out->data, n * sizeof(float));
    ggml_free(ctx);
    return status == GGML_STATUS_SUCCESS ? 0 : 3;
}

int normoracle_layer_norm_f32(const float *x, const float *gamma, const float *beta, float *y, size_t rows,
                              size_t d, float eps) {
    return norm(x, gamma, beta, y, rows, d, eps, 0);
}

int normoracle_rms_norm_f32(const float *x, const float *gamma, float *y, size_t rows, size_t d, float eps) {
    return norm(x, gamma, NULL, y, rows, d, eps, 1);
}
