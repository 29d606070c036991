/* Subgroup matrices (chromium-experimental-subgroup-matrix, the tensor cores): for every f16/f32
 * configuration the adapter offers, one subgroup computes C = A x B (A M x K, B K x N, row-major)
 * with subgroupMatrixMultiply, in the WGSL dialect of the loaded Dawn (wgt_abi), and C is compared
 * with a CPU product. Inputs are multiples of 1/4 in [-2, 2], so every product and sum is exact in
 * f16 and f32 and the comparison is exact. Adapters without the feature (lavapipe, llvmpipe: every
 * CPU adapter of `make deps`) have nothing to test: the test says so and passes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"
#include "support/check.h"

/* Exact for the values used here: 0 and normal numbers with few mantissa bits. */
static uint16_t to_f16(float x)
{
    if (x == 0) return 0;
    uint16_t sign = x < 0 ? 0x8000 : 0;
    float a = fabsf(x);
    int e = (int)floorf(log2f(a));
    float m = a / ldexpf(1, e) - 1; /* [0, 1) */
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)lrintf(m * 1024));
}

static float from_f16(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e ? ldexpf(1 + m / 1024.0f, e - 15) : ldexpf(m / 1024.0f, -14);
    return (h & 0x8000) ? -v : v;
}

static void kernel_source(char *out, size_t cap, const char *ct, const char *rt, uint32_t m, uint32_t n, uint32_t k,
                          uint32_t sg)
{
    /* mid-2025 Dawn: the layout is a bool argument (col_major); the standard dialect of 2026 Dawn
     * takes it as a template argument (row_major / col_major). */
    char la[160], lb[160], st[160];
    if (wgt_abi->wgsl_sgmatrix_layout_template) {
        snprintf(la, sizeof la, "subgroupMatrixLoad<subgroup_matrix_left<%s, %u, %u>, row_major>(&a, 0u, %uu)", ct, k, m, k);
        snprintf(lb, sizeof lb, "subgroupMatrixLoad<subgroup_matrix_right<%s, %u, %u>, row_major>(&b, 0u, %uu)", ct, n, k, n);
        snprintf(st, sizeof st, "subgroupMatrixStore<row_major>(&c, 0u, r, %uu)", n);
    } else {
        snprintf(la, sizeof la, "subgroupMatrixLoad<subgroup_matrix_left<%s, %u, %u>>(&a, 0u, false, %uu)", ct, k, m, k);
        snprintf(lb, sizeof lb, "subgroupMatrixLoad<subgroup_matrix_right<%s, %u, %u>>(&b, 0u, false, %uu)", ct, n, k, n);
        snprintf(st, sizeof st, "subgroupMatrixStore(&c, 0u, r, false, %uu)", n);
    }
    snprintf(out, cap,
             "%senable chromium_experimental_subgroup_matrix;\n"
             "@group(0) @binding(1) var<storage, read> a: array<%s>;\n"
             "@group(0) @binding(2) var<storage, read> b: array<%s>;\n"
             "@group(0) @binding(3) var<storage, read_write> c: array<%s>;\n"
             "@compute @workgroup_size(%u)\n"
             "fn main() {\n"
             "    let l = %s;\n"
             "    let rr = %s;\n"
             "    let r = subgroupMatrixMultiply<%s>(l, rr);\n"
             "    %s;\n"
             "}\n",
             strcmp(ct, "f16") && strcmp(rt, "f16") ? "" : "enable f16;\n", ct, ct, rt, sg, la, lb, rt, st);
}

/* One configuration; sizes in elements. f16 arrays are padded to 4 bytes by the allocator. */
static void run_config(wgt_context *ctx, wgt_dtype comp, wgt_dtype res, uint32_t m, uint32_t n, uint32_t k)
{
    const char *ct = comp == WGT_F16 ? "f16" : "f32", *rt = res == WGT_F16 ? "f16" : "f32";
    size_t ce = comp == WGT_F16 ? 2 : 4, re = res == WGT_F16 ? 2 : 4;
    float A[64 * 64], B[64 * 64];
    uint8_t ha[64 * 64 * 4] = {0}, hb[64 * 64 * 4] = {0}, hc[64 * 64 * 4] = {0};
    if (m * k > 64 * 64 || k * n > 64 * 64 || m * n > 64 * 64) {
        fprintf(stderr, "skip %s x %s -> %s %ux%ux%u: larger than this test's buffers\n", ct, ct, rt, m, n, k);
        return;
    }
    for (uint32_t i = 0; i < m * k; i++) A[i] = (float)((int)((i * 7 + 3) % 17) - 8) / 4;
    for (uint32_t i = 0; i < k * n; i++) B[i] = (float)((int)((i * 5 + 1) % 17) - 8) / 4;
    for (uint32_t i = 0; i < m * k; i++) {
        if (ce == 2) ((uint16_t *)ha)[i] = to_f16(A[i]); else ((float *)ha)[i] = A[i];
    }
    for (uint32_t i = 0; i < k * n; i++) {
        if (ce == 2) ((uint16_t *)hb)[i] = to_f16(B[i]); else ((float *)hb)[i] = B[i];
    }
    char src[2048], label[96];
    kernel_source(src, sizeof src, ct, rt, m, n, k, ctx->info.limits.subgroup_max_size);
    snprintf(label, sizeof label, "sgmatrix_%s_%s_%ux%ux%u", ct, rt, m, n, k);
    wgt_kernel *kern;
    wgt_buffer *ba, *bb, *bc;
    size_t sa = (m * k * ce + 3) / 4 * 4, sb = (k * n * ce + 3) / 4 * 4, sc = (m * n * re + 3) / 4 * 4;
    MUST(wgt_gpu_kernel_source(ctx, label, src, "main", NULL, 0, &kern));
    MUST(wgt_gpu_alloc(ctx, sa, &ba));
    MUST(wgt_gpu_alloc(ctx, sb, &bb));
    MUST(wgt_gpu_alloc(ctx, sc, &bc));
    MUST(wgt_gpu_upload(ctx, ba, 0, ha, sa));
    MUST(wgt_gpu_upload(ctx, bb, 0, hb, sb));
    wgt_binding binds[3] = {{ba, 0, sa}, {bb, 0, sb}, {bc, 0, sc}};
    MUST(wgt_gpu_dispatch(ctx, kern, NULL, 0, binds, 3, 1, 1, 1));
    MUST(wgt_gpu_download(ctx, bc, 0, hc, sc));
    int bad = 0;
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            double want = 0;
            for (uint32_t p = 0; p < k; p++) want += (double)A[i * k + p] * B[p * n + j];
            float got = re == 2 ? from_f16(((uint16_t *)hc)[i * n + j]) : ((float *)hc)[i * n + j];
            if (got != (float)want && bad++ < 5)
                fprintf(stderr, "%s: C[%u][%u] = %g, want %g\n", label, i, j, got, want);
        }
    CHECK(bad == 0, "%s: %d of %u elements differ", label, bad, m * n);
    printf("%s: %s\n", label, bad ? "FAIL" : "exact");
    wgt_gpu_release(ctx, ba);
    wgt_gpu_release(ctx, bb);
    wgt_gpu_release(ctx, bc);
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    const wgt_adapter_info *i = &ctx->info;
    if (!i->has_subgroup_matrix) {
        printf("test_gpu_sgmatrix: '%s' (%s) offers no subgroup matrices: nothing to test\n", i->name, i->backend_name);
    } else {
        CHECK(i->n_subgroup_matrix_configs > 0, "subgroup matrices granted but no configuration reported");
        int tested = 0, need_f16 = 0;
        for (int c = 0; c < i->n_subgroup_matrix_configs; c++) {
            wgt_dtype comp = i->subgroup_matrix_configs[c].component, res = i->subgroup_matrix_configs[c].result;
            if ((comp != WGT_F16 && comp != WGT_F32) || (res != WGT_F16 && res != WGT_F32)) continue;
            /* f16 tiles need shader-f16, which the 2025 Dawn never grants on NVIDIA. */
            if ((comp == WGT_F16 || res == WGT_F16) && !i->has_f16) {
                need_f16++;
                continue;
            }
            run_config(ctx, comp, res, i->subgroup_matrix_configs[c].m, i->subgroup_matrix_configs[c].n,
                       i->subgroup_matrix_configs[c].k);
            tested++;
        }
        if (need_f16)
            printf("test_gpu_sgmatrix: %d f16 configurations left out: no shader-f16 on '%s' with %s\n", need_f16,
                   i->name, i->webgpu_lib_description);
        CHECK(tested > 0 || need_f16 > 0, "no f16/f32 subgroup-matrix configuration to test");
    }
    CHECK(wgt_context_health(ctx) == WGT_OK, "context unhealthy: %s", wgt_context_errmsg(ctx));
    wgt_context_free(ctx);
    return test_finish("test_gpu_sgmatrix");
}
