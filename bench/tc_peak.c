/* The tensor cores' rate through WebGPU subgroup matrices, without a matrix product around them:
 * bench_tc_peak [--wgsl bench/tc_peak.wgsl] [--reps N] [--gemm bench/tc_gemm.wgsl] [--emulate] [--budget S]
 * [--sgs N] [--only SHAPE] [--gemm-only]
 * For fragment shapes 16x16x16 and 16x8x16 (f16 operands, f32 or f16 sums), the products of
 * bench/tc_peak.wgsl with fragments held in registers (loads 0) and loaded from workgroup memory
 * before every product (loads 1); TFLOP/s as 2 M N K a fragment product. A figure far below the
 * GPU's tensor peak here bounds what any subgroup-matrix matmul (src/kernels/matmul_tc.wgsl) can
 * reach through this WebGPU implementation. Needs an adapter with subgroup matrices (the H200 with
 * the 2026 Dawn); elsewhere it says so and exits 0.
 * --gemm then runs bench/tc_gemm.wgsl's products (out = A B^T in f16 with f32 sums: the square 4096
 * and Qwen2.5-0.5B's gate and down projections at 512 tokens) with the fragments loaded straight from
 * storage (matmul_tcd.wgsl's way) or staged through workgroup memory in several ways, over a range
 * of tiles: where the rate is lost between the fragments' 648 TFLOP/s and a product's. Every run is
 * checked against a CPU product (exact: the operands are quarters); --emulate runs the same tiles
 * with scalar fragments (CPU adapters with shader-f16: the check of the kernels' indexing). --budget
 * stops starting configurations after S seconds; --sgs sets the subgroup size the tiles assume
 * (default: the adapter's largest; a compile-only run on Dawn's Null adapter needs 32); --only runs
 * the shapes whose name holds SHAPE; --gemm-only leaves out the fragments' own table. */
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

/* ---- --gemm: bench/tc_gemm.wgsl ------------------------------------------------------------------ */

typedef struct gemm_cfg {
    int mode, fm, fn, sgr, sgc, bk;
} gemm_cfg;

typedef struct gemm_shape {
    const char *name;
    uint32_t M, N, K;
} gemm_shape;

typedef struct gemm_run {
    wgt_context *ctx;
    wgt_kernel *k;
    wgt_binding b[3];
    uint32_t prm[4], gx, gy;
} gemm_run;

static wgt_status gemm_one(void *arg)
{
    gemm_run *r = arg;
    return wgt_gpu_dispatch(r->ctx, r->k, r->prm, sizeof r->prm, r->b, 3, r->gx, r->gy, 1);
}

/* exact for the quarters the operands hold */
static uint16_t half_of(float v)
{
    if (v == 0.0f) return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    if (v < 0) v = -v;
    int e = 0;
    while (v >= 2.0f) v *= 0.5f, e++;
    while (v < 1.0f) v *= 2.0f, e--;
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((v - 1.0f) * 1024.0f));
}

static float quarter(uint32_t i, uint32_t salt)
{
    return (float)((int)((i * 7u + salt * 13u + (i >> 7)) % 9u) - 4) * 0.25f;
}

/* the section of body after the line "//@@ NAME" up to the next "//@@" */
static void add_section(char *dst, size_t cap, const char *body, const char *name)
{
    char tag[64];
    snprintf(tag, sizeof tag, "//@@ %s\n", name);
    const char *s = strstr(body, tag);
    if (!s) return;
    s += strlen(tag);
    const char *e = strstr(s, "//@@");
    size_t n = e ? (size_t)(e - s) : strlen(s), l = strlen(dst);
    if (l + n + 1 < cap) memcpy(dst + l, s, n), dst[l + n] = 0;
}

/* Seconds a call: bench_seconds with a shorter warm-up (the clocks are up after the first runs;
 * a hundred configurations must fit one device call) and at least 10 calls or 20 ms timed. */
static double gemm_seconds(wgt_context *ctx, gemm_run *r)
{
    double w0 = wgt_now_seconds();
    for (int i = 0; i < 3 || wgt_now_seconds() - w0 < 0.03; i++) TRY(gemm_one(r));
    TRY(wgt_context_sync(ctx, -1));
    double t0 = wgt_now_seconds(), t;
    int n = 0;
    do {
        for (int i = 0; i < 10; i++) TRY(gemm_one(r));
        n += 10;
        TRY(wgt_context_sync(ctx, -1));
    } while ((t = wgt_now_seconds() - t0) < 0.02);
    return t / n;
}

static int run_gemm(wgt_context *ctx, const char *path, int emulate, double budget, int force_sgs, const char *only)
{
    double t_start = wgt_now_seconds();
    char *file = wgt_gpu_read_text(path);
    if (!file) {
        fprintf(stderr, "%s: cannot read\n", path);
        return 1;
    }
    const char *cut = strstr(file, "//@@");
    size_t body_n = cut ? (size_t)(cut - file) : strlen(file);
    static const gemm_shape big[] = {{"square 4096", 4096, 4096, 4096},
                                     {"qwen gate", 512, 4864, 896},
                                     {"qwen down", 512, 896, 4864}};
    static const gemm_shape small[] = {{"small", 128, 256, 192}};
    const gemm_shape *shapes = emulate ? small : big;
    int n_shapes = emulate ? 1 : 3;
    static const int tiles[][4] = {{2, 2, 2, 2}, {4, 2, 2, 2}, {4, 4, 2, 2}, {2, 2, 4, 2}, {4, 2, 2, 4}, {2, 4, 4, 2}};
    int n_tiles = sizeof tiles / sizeof tiles[0];
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    /* operands and out sized for the largest shape */
    uint64_t na = 0, nb = 0, no = 0;
    for (int s = 0; s < n_shapes; s++) {
        if ((uint64_t)shapes[s].M * shapes[s].K > na) na = (uint64_t)shapes[s].M * shapes[s].K;
        if ((uint64_t)shapes[s].N * shapes[s].K > nb) nb = (uint64_t)shapes[s].N * shapes[s].K;
        if ((uint64_t)shapes[s].M * shapes[s].N > no) no = (uint64_t)shapes[s].M * shapes[s].N;
    }
    uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2);
    float *ho = malloc(no * 4), *fa = malloc(na * 4), *fb = malloc(nb * 4);
    if (!ha || !hb || !ho || !fa || !fb) return 1;
    wgt_buffer *ba, *bb, *bo;
    TRY(wgt_gpu_alloc(ctx, na * 2, &ba));
    TRY(wgt_gpu_alloc(ctx, nb * 2, &bb));
    TRY(wgt_gpu_alloc(ctx, no * 4, &bo));
    int failed = 0;
    printf("\n%s: out = A B^T, f16 operands, f32 sums; fragments 16x16x16%s\n", path,
           emulate ? " (emulated in scalar code)" : "");
    printf("modes: 0 storage; 1 staged 16-byte loads; 2 staged 4-byte loads; 3 = 2 double-buffered; "
           "4 = 1 double-buffered; 5 = 0 with K constant; hot: operands from the first 128 rows (cache-resident)\n");
    printf("%-12s %4s %-10s %3s %3s %4s %10s %10s %8s\n", "shape", "mode", "tile", "bk", "hot", "wgs", "TFLOP/s",
           "us", "check");
    for (int s = 0; s < n_shapes; s++) {
        gemm_shape sh = shapes[s];
        if (only && !strstr(sh.name, only)) continue;
        for (uint64_t i = 0; i < (uint64_t)sh.M * sh.K; i++) fa[i] = quarter((uint32_t)i, 1), ha[i] = half_of(fa[i]);
        for (uint64_t i = 0; i < (uint64_t)sh.N * sh.K; i++) fb[i] = quarter((uint32_t)i, 2), hb[i] = half_of(fb[i]);
        TRY(wgt_gpu_upload(ctx, ba, 0, ha, (uint64_t)sh.M * sh.K * 2));
        TRY(wgt_gpu_upload(ctx, bb, 0, hb, (uint64_t)sh.N * sh.K * 2));
        for (int mode = 0; mode <= 5; mode++)
            for (int t = 0; t < n_tiles; t++)
                for (int bk = 32; bk <= 64; bk += 32)
                    for (int hot = 0; hot <= (!emulate && s == 0 && (mode == 0 || mode == 3 || mode == 5) ? 1 : 0); hot++) {
                        int direct = mode == 0 || mode == 5;
                        if ((direct || (s > 0 && mode < 3)) && bk == 64) continue;
                        if (budget > 0 && wgt_now_seconds() - t_start > budget) {
                            printf("%-12s stopped: past the budget of %.0f s\n", sh.name, budget);
                            goto done;
                        }
                        /* scalar fragments take llvmpipe's compiler long: two tiles, one slab each mode */
                        if (emulate && ((t != 0 && t != 4) || bk != 32)) continue;
                        int fm = tiles[t][0], fn = tiles[t][1], sgr = tiles[t][2], sgc = tiles[t][3];
                        uint32_t sgs = emulate ? 32 : force_sgs ? (uint32_t)force_sgs : lim->subgroup_max_size, nt = (uint32_t)(sgr * sgc) * sgs;
                        uint32_t bm = (uint32_t)(sgr * fm * 16), bn = (uint32_t)(sgc * fn * 16);
                        uint32_t ew = mode == 2 || mode == 3 ? 2 : 8, nbuf = mode >= 3 ? 2 : 1;
                        uint32_t wgmem = !direct ? nbuf * (bm + bn) * (uint32_t)(bk + 8) * 2 : 0;
                        if (sh.M % bm || sh.N % bn || sh.K % (uint32_t)bk || nt > lim->max_compute_invocations_per_workgroup ||
                            wgmem > lim->max_compute_workgroup_storage_size)
                            continue;
                        if (!direct && ((bm * bk / ew) % nt || (bn * bk / ew) % nt || bm * bk / ew < nt || bn * bk / ew < nt))
                            continue;
                        size_t cap = body_n + 16384;
                        char *src = malloc(cap);
                        snprintf(src, cap,
                                 "enable f16;\n%s"
                                 "const SGS: u32 = %uu;\nconst SGR: u32 = %du;\nconst SGC: u32 = %du;\n"
                                 "const FM: u32 = %du;\nconst FN: u32 = %du;\nconst BK: u32 = %du;\n"
                                 "const MODE: u32 = %du;\nconst NBUF: u32 = %uu;\nconst KS: u32 = %uu;\nalias AW = %s;\n"
                                 "fn word(w: AW, j: u32) -> u32 { return %s; }\n",
                                 emulate ? ""
                                         : "enable chromium_experimental_subgroup_matrix;\n"
                                           "diagnostic(off, chromium.subgroup_matrix_uniformity);\n",
                                 sgs, sgr, sgc, fm, fn, bk, mode, nbuf, sh.K,
                                 direct ? "f16" : ew == 8 ? "vec4<u32>" : "u32",
                                 direct ? "0u" : ew == 8 ? "w[j]" : "w");
                        size_t l = strlen(src);
                        memcpy(src + l, file, body_n), src[l + body_n] = 0;
                        add_section(src, cap, file, emulate ? "scalar" : "subgroup matrix");
                        if (direct) add_section(src, cap, file, emulate ? "scalar global" : "subgroup matrix global");
                        else add_section(src, cap, file, emulate ? "scalar staged" : "subgroup matrix stub");
                        char tile[32];
                        snprintf(tile, sizeof tile, "%dx%d:%dx%d", fm, fn, sgr, sgc);
                        gemm_run r = {ctx, NULL, {{ba, 0, (uint64_t)sh.M * sh.K * 2}, {bb, 0, (uint64_t)sh.N * sh.K * 2},
                                                  {bo, 0, (uint64_t)sh.M * sh.N * 4}},
                                      {sh.M, sh.N, sh.K, hot ? 128u : 0u}, sh.N / bn, sh.M / bm};
                        wgt_status st = wgt_gpu_kernel_source(ctx, "tc_gemm", src, "main", NULL, 0, &r.k);
                        free(src);
                        if (st) {
                            printf("%-12s %4d %-10s %3d %3d not compiled: %s\n", sh.name, mode, tile, bk, hot, wgt_errmsg());
                            failed++;
                            continue;
                        }
                        TRY(wgt_gpu_fill_zero(ctx, bo, 0, (uint64_t)sh.M * sh.N * 4));
                        TRY(gemm_one(&r));
                        TRY(wgt_gpu_download(ctx, bo, 0, ho, (uint64_t)sh.M * sh.N * 4));
                        /* every element on CPU adapters, 4096 sampled ones elsewhere */
                        uint64_t n = (uint64_t)sh.M * sh.N, step = emulate ? 1 : n / 4096 + 1, bad = 0;
                        for (uint64_t e = 0; e < n; e += step) {
                            uint32_t m = (uint32_t)(e / sh.N), c = (uint32_t)(e % sh.N);
                            uint32_t am = hot ? m % 128 : m, bc = hot ? c % 128 : c;
                            double ref = 0;
                            for (uint32_t k = 0; k < sh.K; k++) ref += (double)fa[(uint64_t)am * sh.K + k] * fb[(uint64_t)bc * sh.K + k];
                            if (ho[e] != (float)ref) bad++;
                        }
                        double sec = emulate ? 0 : gemm_seconds(ctx, &r);
                        double flop = 2.0 * sh.M * sh.N * sh.K;
                        printf("%-12s %4d %-10s %3d %3d %4u %10.1f %10.1f %8s\n", sh.name, mode, tile, bk, hot,
                               (sh.M / bm) * (sh.N / bn), sec > 0 ? flop / sec / 1e12 : 0.0, sec * 1e6,
                               bad ? "WRONG" : "ok");
                        fflush(stdout);
                        failed += bad != 0;
                    }
    }
done:
    wgt_gpu_release(ctx, ba);
    wgt_gpu_release(ctx, bb);
    wgt_gpu_release(ctx, bo);
    free(ha), free(hb), free(ho), free(fa), free(fb), free(file);
    return failed != 0;
}

int main(int argc, char **argv)
{
    const char *path = "bench/tc_peak.wgsl";
    const char *gemm = NULL;
    int reps = 20, emulate = 0;
    double budget = 0;
    int sgs = 0;
    const char *only = NULL;
    int gemm_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--wgsl") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gemm") && i + 1 < argc) gemm = argv[++i];
        else if (!strcmp(argv[i], "--emulate")) emulate = 1;
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc) budget = atof(argv[++i]);
        else if (!strcmp(argv[i], "--sgs") && i + 1 < argc) sgs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--gemm-only")) gemm_only = 1;
        else {
            fprintf(stderr, "usage: %s [--wgsl FILE] [--reps N] [--gemm FILE] [--emulate] [--budget S] [--sgs N] [--only SHAPE] [--gemm-only]\n", argv[0]);
            return 2;
        }
    }
    char *body = wgt_gpu_read_text(path);
    if (!body) {
        fprintf(stderr, "%s: cannot read (run from the repository root or give --wgsl)\n", path);
        return 1;
    }
    wgt_context *ctx;
    TRY(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    TRY(wgt_context_adapter_info(ctx, &info));
    printf("adapter: %s (%s), %d reps\n", info.name, info.backend_name, reps);
    if (emulate) {
        int rc = wgt_gpu_has_f16(ctx) && gemm ? run_gemm(ctx, gemm, 1, 0, 0, NULL) : 0;
        if (!wgt_gpu_has_f16(ctx) || !gemm) printf("--emulate needs --gemm and shader-f16: nothing to run\n");
        wgt_context_free(ctx);
        free(body);
        return rc;
    }
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
    for (size_t s = 0; s < (gemm_only ? 0 : sizeof shapes / sizeof shapes[0]); s++)
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
    int rc = gemm ? run_gemm(ctx, gemm, 0, budget, sgs, only) : 0;
    wgt_context_free(ctx);
    free(body);
    return rc;
}
