/* The tensor cores' rate through WebGPU subgroup matrices, without a matrix product around them:
 * bench_tc_peak [--wgsl bench/tc_peak.wgsl] [--reps N]
 * For fragment shapes 16x16x16 and 16x8x16 (f16 operands, f32 or f16 sums), the products of
 * bench/tc_peak.wgsl with fragments held in registers (loads 0) and loaded from workgroup memory
 * before every product (loads 1); TFLOP/s as 2 M N K a fragment product. A figure far below the
 * GPU's tensor peak here bounds what any subgroup-matrix matmul (src/kernels/matmul_tc.wgsl) can
 * reach through this WebGPU implementation. Needs an adapter with subgroup matrices (the H200 with
 * the 2026 Dawn); elsewhere it says so and exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

typedef struct run {
    wgt_context *ctx;
    wgt_kernel *k;
    wgt_binding out;
    uint32_t groups;
} run;

static wgt_status one(void *arg)
{
    run *r = arg;
    return wgt_gpu_dispatch(r->ctx, r->k, NULL, 0, &r->out, 1, r->groups, 1, 1);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

int main(int argc, char **argv)
{
    const char *path = "bench/tc_peak.wgsl";
    int reps = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--wgsl") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--wgsl FILE] [--reps N]\n", argv[0]);
            return 2;
        }
    }
    char *body = read_file(path);
    if (!body) {
        fprintf(stderr, "%s: cannot read (run from the repository root or give --wgsl)\n", path);
        return 1;
    }
    wgt_context *ctx;
    TRY(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    TRY(wgt_context_adapter_info(ctx, &info));
    printf("adapter: %s (%s), %d reps\n", info.name, info.backend_name, reps);
    if (!info.has_subgroup_matrix || !wgt_gpu_has_f16(ctx)) {
        printf("no subgroup matrices with f16 here: nothing to measure\n");
        wgt_context_free(ctx);
        free(body);
        return 0;
    }
    const uint32_t groups = 132 * 32, iter = 4096;
    static const struct { int sm, sn, sk; const char *acc; } shapes[] = {
        {16, 16, 16, "f32"}, {16, 8, 16, "f32"}, {16, 16, 16, "f16"}, {16, 8, 8, "f32"}};
    wgt_buffer *buf;
    uint64_t bytes = (uint64_t)groups * 4 * 4 * 16 * 16 * 4;
    TRY(wgt_gpu_alloc(ctx, bytes, &buf));
    printf("%-10s %-4s %-6s %12s %10s\n", "fragment", "sum", "loads", "TFLOP/s", "us");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int loads = 0; loads < 2; loads++) {
            size_t cap = strlen(body) + 512;
            char *src = malloc(cap);
            snprintf(src, cap,
                     "enable f16;\nenable chromium_experimental_subgroup_matrix;\n"
                     "diagnostic(off, chromium.subgroup_matrix_uniformity);\n"
                     "alias TT = f16;\nalias TR = %s;\nconst SM: u32 = %du;\nconst SN: u32 = %du;\n"
                     "const SK: u32 = %du;\nconst LOADS: u32 = %du;\n%s",
                     shapes[s].acc, shapes[s].sm, shapes[s].sn, shapes[s].sk, loads, body);
            wgt_kconst it = {"ITER", iter};
            run r = {ctx, NULL, {buf, 0, bytes}, groups};
            wgt_status st = wgt_gpu_kernel_source(ctx, "tc_peak", src, "main", &it, 1, &r.k);
            free(src);
            if (st) {
                printf("%2dx%2dx%-4d %-4s %-6d not compiled: %s\n", shapes[s].sm, shapes[s].sn, shapes[s].sk,
                       shapes[s].acc, loads, wgt_errmsg());
                continue;
            }
            double t = bench_seconds(ctx, one, &r, reps);
            double flop = 2.0 * shapes[s].sm * shapes[s].sn * shapes[s].sk * 4.0 * 4.0 * groups * iter;
            printf("%2dx%2dx%-4d %-4s %-6d %12.1f %10.1f\n", shapes[s].sm, shapes[s].sn, shapes[s].sk,
                   shapes[s].acc, loads, flop / t / 1e12, t * 1e6);
        }
    wgt_gpu_release(ctx, buf);
    wgt_context_free(ctx);
    free(body);
    return 0;
}
