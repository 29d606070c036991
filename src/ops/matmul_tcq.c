/* Quantized linear layers on the tensor cores (src/kernels/matmul_tcq.wgsl): prefill's products with
 * Q8_0 / Q4_0 weights as matmul_tcd.c's staged tiles, each k slab one block of every weight row of
 * the tile, dequantised into f16 in workgroup memory; x is read as f32 and rounded to f16 there too
 * (no copy of it), the sums are f32, the bias is the accumulators' start value.
 * WGT_QLINEAR_TC: 0 off (qlinear.wgsl's f32 tiles), 1 on where the device has 16x16x16 f16 x f16 ->
 * f32 subgroup matrices (and WGT_MATMUL_TCD does not turn the tensor cores off), emulate (scalar
 * fragments with the same tiles where the device has shader-f16: the tests on CPU adapters), deq
 * (a comparator: the weight dequantised into an f16 copy by matmul_tcq_dequant.wgsl, a weight-sized
 * write a product, then matmul_tcd as for f16 weights, under WGT_MATMUL_TCD's policy);
 * TCQ_DEFAULT when unset. WGT_QLINEAR_TC_TILE=FMxFN:SGRxSGC sets the fragments a subgroup and the
 * subgroups a workgroup (auto: smaller tiles for products of few tiles, see tcq_tile_of);
 * WGT_QLINEAR_TC_SPLIT=N forces N slices of k (0 or 1: none). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/matmul_fuse.h"
#include "ops/matmul_tcd.h"
#include "ops/matmul_tcq.h"

/* H200, 2026-12-03, two alternated rounds at -p 512 -n 128 (bench/results/h200/qpre-2026-12-03):
 * prefill Qwen2.5-0.5B Q8_0 16,738 / 16,297 -> 42,481 / 41,006 tok/s, Q4_0 16,791 / 16,974 -> 41,036 /
 * 41,858, Llama-3.2-1B Q8_0 7,073 / 7,148 -> 25,746 / 28,939, Q4_0 7,318 / 7,348 -> 27,888 / 28,001 */
#define TCQ_DEFAULT "1"
#define TCQ_FRAG 16
#define TCQ_BK 32 /* one block a slab: matmul_tcq.wgsl's BK */
/* the tiles tried in order where WGT_QLINEAR_TC_TILE is unset or does not fit: matmul_tcd's default
 * 128 x 128 (48 KiB of workgroup memory), then 64 x 64, then 32 x 32 (also CPU adapters) */
static const char *const tcq_tiles[] = {"4x2:2x4", "2x2:2x2", "1x2:2x1"};
/* WGT_QLINEAR_TC_TILE=auto: a product of fewer tiles than this (half the H200's 132 SMs) over a k
 * shorter than TCQ_SPLIT_K (too short to split) takes the next smaller tile (4 times as many):
 * Qwen2.5-0.5B's q and o at 512 tokens 28 -> 112 tiles of 64 x 64, k and v 4 -> 16 -> 64 of 32 x 32 */
#define TCQ_FEW 66
#define TCQ_SPLIT_K 1024

typedef struct tcq_tile {
    int fm, fn, sgr, sgc, sgs;
} tcq_tile;

static int tcq_mode(void)
{
    const char *v = getenv("WGT_QLINEAR_TC");
    if (!v || !*v) v = TCQ_DEFAULT;
    if (!strcmp(v, "emulate")) return 2;
    if (!strcmp(v, "deq")) return 3;
    return !strcmp(v, "1");
}

static uint32_t tcq_smem(const tcq_tile *t)
{
    uint32_t bm = (uint32_t)(t->sgr * t->fm * TCQ_FRAG), bn = (uint32_t)(t->sgc * t->fn * TCQ_FRAG);
    uint32_t cs = (uint32_t)(t->sgr * t->sgc) * TCQ_FRAG * TCQ_FRAG, bias = TCQ_FRAG * bn;
    return 4 * (cs > bias ? cs : bias) + 2 * 2 * (bm + bn) * (TCQ_BK + 8);
}

/* FMxFN:SGRxSGC into *t when valid and fitting the device (workgroup memory, invocations, the
 * slabs' words dividing among the invocations) */
static int tcq_parse(wgt_context *ctx, const char *v, tcq_tile *t)
{
    int fm, fn, r, c;
    if (!v || sscanf(v, "%dx%d:%dx%d", &fm, &fn, &r, &c) != 4 || fm < 1 || fn < 1 || r < 1 || c < 1 || fm > 4 ||
        fn > 4 || r * c * t->sgs > 1024)
        return 0;
    tcq_tile f = {fm, fn, r, c, t->sgs};
    uint32_t nt = (uint32_t)(r * c * t->sgs), bm = (uint32_t)(r * fm * TCQ_FRAG), bn = (uint32_t)(c * fn * TCQ_FRAG);
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    uint64_t smem = lim->max_compute_workgroup_storage_size;
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    /* llvmpipe's OpenGL computed wrong results past 16 KiB though it reports 32 (matmul.c's regs_choose) */
    if ((info->backend == WGT_BACKEND_OPENGLES || info->backend == WGT_BACKEND_OPENGL || info->compat) && smem > 16384)
        smem = 16384;
    if (nt > lim->max_compute_invocations_per_workgroup || tcq_smem(&f) > smem || (bm * TCQ_BK / 4) % nt ||
        (bn * 2) % nt)
        return 0;
    *t = f;
    return 1;
}

/* WGT_QLINEAR_TC_TILE, else the first of tcq_tiles that fits the device; with
 * WGT_QLINEAR_TC_TILE=auto going on to the next smaller one while an M x N product has fewer than
 * TCQ_FEW tiles and a k too short to split */
static int tcq_tile_of(wgt_context *ctx, int emu, int64_t M, int64_t N, int64_t K, tcq_tile *t)
{
    t->sgs = emu ? 32 : (int)wgt_gpu_info(ctx)->limits.subgroup_max_size;
    if (t->sgs < 1 || (TCQ_FRAG * TCQ_FRAG) % t->sgs) return 0;
    const char *v = getenv("WGT_QLINEAR_TC_TILE");
    if (tcq_parse(ctx, v, t)) return 1;
    int found = 0, fewer = v && !strcmp(v, "auto");
    for (size_t i = 0; i < sizeof tcq_tiles / sizeof tcq_tiles[0]; i++) {
        tcq_tile c = *t;
        if (!tcq_parse(ctx, tcq_tiles[i], &c)) continue;
        *t = c, found = 1;
        int64_t bm = t->sgr * t->fm * TCQ_FRAG, bn = t->sgc * t->fn * TCQ_FRAG;
        if (!fewer || ((M + bm - 1) / bm) * ((N + bn - 1) / bn) >= TCQ_FEW || K >= TCQ_SPLIT_K) break;
    }
    return found;
}

typedef struct tcq_key {
    int32_t fm, fn, sgr, sgc, sgs, emu, type;
} tcq_key;

static char *tcq_prelude(void *arg)
{
    const tcq_key *k = arg;
    size_t cap = 16384;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    if (!op_tc_prelude_head(pre, cap, k->emu, k->sgs, k->sgr, k->sgc, k->fm, k->fn, TCQ_FRAG)) {
        free(pre);
        return NULL;
    }
    size_t n = strlen(pre);
    snprintf(pre + n, cap - n, "const FMT: u32 = %du;\n", k->type);
    if (!op_wgsl_section(pre, cap, "lib_matmul", "params") ||
        !op_wgsl_section(pre, cap, "lib_matmul_tcd", k->emu ? "frag scalar" : "frag subgroup matrix") ||
        !op_wgsl_section(pre, cap, "lib_matmul_tcd", k->emu ? "frag scalar staged" : "frag subgroup matrix stub") ||
        !op_wgsl_section(pre, cap, "lib_matmul_tcq", k->emu ? "acc scalar" : "acc subgroup matrix")) {
        free(pre);
        return NULL;
    }
    return pre;
}

static char *tcq_dq_prelude(void *arg)
{
    char *pre = malloc(64);
    if (pre) snprintf(pre, 64, "const FMT: u32 = %du;\n", *(const int32_t *)arg);
    return pre;
}

/* Slices of k for `tiles` workgroups over K: about two workgroups an SM of the H200 (264) where
 * there are fewer, each at least 512 long (matmul_tcd.c's rule); 1: none. */
static int64_t tcq_split(int64_t tiles, int64_t K)
{
    const char *v = getenv("WGT_QLINEAR_TC_SPLIT");
    if (v && *v) return atoi(v) > 1 ? atoi(v) : 1;
    if (tiles >= 264 || K < TCQ_SPLIT_K) return 1;
    int64_t s = (264 + tiles - 1) / tiles, most = K / 512;
    return s < most ? s : most;
}

/* WGT_QLINEAR_TC=deq: w dequantised into f16 rows [rows, cols], then op_matmul_tcd. */
static wgt_status tcq_deq(wgt_context *ctx, wgt_ftype type, const wgt_tensor *x, const wgt_tensor *w,
                          const wgt_tensor *bias, int64_t tokens, int64_t rows, int64_t cols, wgt_tensor *y, int *done)
{
    int64_t row_bytes = w->l.shape[1], n = rows * cols;
    uint64_t limit = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    if (!op_matmul_tcd_take(ctx, tokens, rows, cols, WGT_F32, WGT_F16) || (uint64_t)n * 2 + 256 > limit ||
        (uint64_t)(tokens * cols) * 4 + 256 > limit || (uint64_t)(rows * row_bytes) + 264 > limit ||
        (uint64_t)(tokens * rows) * 4 > limit || n > UINT32_MAX / 2)
        return WGT_OK;
    int32_t key = (int32_t)type;
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "matmul_tcq_dequant", &key, sizeof key, tcq_dq_prelude, &key, "main", NULL,
                                         0, &k);
    wgt_tensor *wd;
    if (st || (st = wgt_tensor_new(ctx, WGT_F16, 1, &n, &wd))) return st;
    wgt_binding db[2], bind[4];
    int64_t wbase, dbase, base[3], obase;
    if (!(st = op_bind(w, w->l.offset, w->l.offset + rows * row_bytes + 3, &db[0], &wbase)) &&
        !(st = op_bind_all(wd, &db[1], &dbase))) {
        uint32_t gx, gy;
        op_grid(ctx, ((uint64_t)n / 16 + 255) / 256, &gx, &gy);
        uint32_t dp[8] = {(uint32_t)rows, (uint32_t)cols, (uint32_t)(w->l.offset - wbase), (uint32_t)row_bytes, gx * 256,
                          0, 0, 0};
        wgt_gpu_cost(ctx, (uint64_t)rows * row_bytes + (uint64_t)n * 2, 0);
        st = wgt_gpu_dispatch(ctx, k, dp, sizeof dp, db, 2, gx, gy, 1);
    }
    if (!st && !(st = op_bind(x, x->l.offset, x->l.offset + tokens * cols - 1, &bind[0], &base[0])) &&
        !(st = op_bind(y, y->l.offset, y->l.offset + tokens * rows - 1, &bind[3], &obase))) {
        bind[1] = db[1];
        if (bias) st = op_bind(bias, bias->l.offset, bias->l.offset + rows - 1, &bind[2], &base[2]);
        else bind[2] = bind[0], base[2] = 0;
        mm_params p;
        memset(&p, 0, sizeof p);
        p.M = (uint32_t)tokens, p.N = (uint32_t)rows, p.K = (uint32_t)cols, p.batch = 1;
        p.off_a = (uint32_t)(x->l.offset - base[0]), p.sam = (uint32_t)cols, p.sak = 1;
        p.off_b = (uint32_t)(wd->l.offset - dbase), p.sbn = (uint32_t)cols, p.sbk = 1;
        p.has_c = bias != NULL, p.off_c = bias ? (uint32_t)(bias->l.offset - base[2]) : 0, p.scn = 1, p.scm = 0;
        p.alpha = 1, p.beta = 1;
        p.bshape[0] = p.bshape[1] = p.bshape[2] = p.bshape[3] = 1;
        p.ldo = (uint32_t)rows, p.n0 = (uint32_t)(y->l.offset - obase);
        if (!st) st = op_matmul_tcd(ctx, &p, bind, WGT_F32, WGT_F16, WGT_F32);
        if (!st) *done = 1;
    }
    wgt_tensor_free(wd);
    return st;
}

wgt_status op_matmul_tcq(wgt_context *ctx, wgt_ftype type, const wgt_tensor *x, const wgt_tensor *w,
                         const wgt_tensor *bias, int64_t tokens, int64_t rows, int64_t cols, wgt_tensor *y, int *done)
{
    *done = 0;
    int mode = tcq_mode();
    if (!mode || (type != WGT_FTYPE_Q8_0 && type != WGT_FTYPE_Q4_0) || tokens < 1 || rows < 1 || cols % TCQ_BK ||
        !wgt_gpu_has_f16(ctx) || wgt_gpu_avoid_barriers(ctx) || x->l.dtype != WGT_F32 || x->l.offset % 4 ||
        w->l.offset % 2 || w->l.shape[1] % 2)
        return WGT_OK;
    if (mode == 3) return tcq_deq(ctx, type, x, w, bias, tokens, rows, cols, y, done);
    /* the tensor cores: where matmul_tcd would take an f16 product of this size */
    if (mode == 1 && (!wgt_gpu_info(ctx)->has_subgroup_matrix || !op_matmul_tcd_take(ctx, tokens, rows, cols, WGT_F16, WGT_F16)))
        return WGT_OK; /* (WGT_MATMUL_TCD=emulate makes the take true without subgroup matrices) */
    tcq_tile t;
    if (!tcq_tile_of(ctx, mode == 2, tokens, rows, cols, &t)) return WGT_OK;
    int64_t row_bytes = w->l.shape[1];
    uint64_t limit = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    uint32_t bm = (uint32_t)(t.sgr * t.fm * TCQ_FRAG), bn = (uint32_t)(t.sgc * t.fn * TCQ_FRAG);
    int64_t gx = (rows + bn - 1) / bn, gy = (tokens + bm - 1) / bm;
    int64_t slices = tcq_split(gx * gy, cols);
    /* one binding each, u32 indices, even block addresses (the kernel reads a block's scale from
     * one word), the grid within the device's dimensions */
    if (x->l.dtype != WGT_F32 || x->l.offset % 4 || w->l.offset % 2 || row_bytes % 2 ||
        (uint64_t)(tokens * cols) * 4 + 256 > limit || (uint64_t)(rows * row_bytes) + 264 > limit ||
        (uint64_t)(tokens * rows) * 4 * (uint64_t)slices > limit || tokens * cols > UINT32_MAX / 2 ||
        rows * row_bytes > UINT32_MAX / 2 || (uint64_t)gy > wgt_gpu_limits(ctx)->max_compute_workgroups_per_dimension ||
        (uint64_t)gx > wgt_gpu_limits(ctx)->max_compute_workgroups_per_dimension)
        return WGT_OK;
    tcq_key key = {t.fm, t.fn, t.sgr, t.sgc, t.sgs, mode == 2, (int32_t)type};
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "matmul_tcq", &key, sizeof key, tcq_prelude, &key, "main", NULL, 0, &k);
    if (st) return st;
    wgt_binding bind[4];
    mm_params p;
    if ((st = mm_quant_bind(x, w, bias, tokens, rows, cols, y, bind, &p))) return st;
    if (slices > 1) st = mm_split_k(ctx, &p, k, bind, WGT_F32, slices, (uint32_t)gx, (uint32_t)gy);
    else {
        /* the blocks, x and y once (WGT_PROFILE=1) */
        wgt_gpu_cost(ctx, (uint64_t)rows * row_bytes + (uint64_t)tokens * cols * 4 + (uint64_t)tokens * rows * 4,
                     2.0 * tokens * (double)rows * cols);
        st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, bind, 4, (uint32_t)gx, (uint32_t)gy, 1);
    }
    if (!st) *done = 1;
    return st;
}
