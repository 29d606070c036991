/* Tensor-core products with fragments loaded straight from storage (src/kernels/matmul_tcd.wgsl).
 * On the H200 the subgroup-matrix products alone run at 648 TFLOP/s (bench/tc_peak.c), while
 * matmul_tc.wgsl, which converts and stages tiles through workgroup memory, stays below 30
 * (bench/results/h200/tc-2026-12-03/). Here each subgroup's fragments come from f16 rows in storage,
 * straight or through k slabs staged in workgroup memory (bench_tc_peak --gemm compares the ways).
 * Both operands must be f16 rows along k holding whole workgroup tiles; an operand that is not (f32
 * activations, a transposed view, a ragged edge) is first copied so by matmul_half.wgsl, zero
 * padded to the tiles (one extra dispatch, a pass over that operand).
 * WGT_MATMUL_TCD: 0 off, f16 (products with an f16 operand and no bf16 one), half (an f16 or bf16
 * operand), all (f32 ones too: their operands are rounded to f16), emulate (every float product
 * through the same tiles with the fragment products in scalar code, where the device has
 * shader-f16: the tests on CPU adapters);
 * TCD_DEFAULT when unset. WGT_MATMUL_TCD_TILE=FMxFN:SGRxSGC[:MODE[:BK]] sets the fragments a
 * subgroup (FM x FN of 16 x 16), the subgroups a workgroup, where the fragments come from (MODE,
 * matmul_tcd.wgsl's header: 0 storage, 1-4 k slabs of BK staged through workgroup memory) and BK.
 * A product of few tiles over a long k is split along k (matmul.c's mm_split_k and combine);
 * WGT_MATMUL_TCD_SPLIT=N forces N slices (0 or 1: none). The staged modes read ragged rows and (4-byte
 * words) f32 activations themselves, without matmul_half's copy (WGT_MATMUL_TCD_DIRECT=0: copied);
 * whole tiles with alpha or a bias store their fragments, then add it (WGT_MATMUL_TCD_EPI=0: through
 * workgroup memory fragment by fragment). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/matmul_tcd.h"

/* H200, 2026-12-03, two alternated rounds: Qwen2.5-0.5B f16 prefill 512 22,970 / 22,395 -> 49,143 /
 * 44,324 tok/s, Llama-3.2-1B 11,379 / 11,389 -> 13,518 / 34,459 (bench/results/h200/tcd-staged-2026-12-03) */
#define TCD_DEFAULT "f16"
#define TCD_FRAG 16 /* 16 x 16 x 16 fragments: the fastest shape bench/tc_peak.c measured */
/* the default tile (WGT_MATMUL_TCD_TILE's form): 128 x 128 outputs in 8 subgroups of 4 x 2 fragments,
 * k slabs of 32 staged by 4-byte loads, double-buffered (the best of five on the H200) */
#define TCD_TILE "4x2:2x4:3:32"
/* Defaults (1 on, 0 off) of WGT_MATMUL_TCD_EPI, _DIRECT and _SMALL (H200 A/Bs:
 * bench/results/h200/pre-2026-12-03 and pre-2026-12-03b: SMALL won 3 of 3 rounds on Qwen2.5-0.5B f16,
 * EPI lost 2 of 3, DIRECT's f32 loads slowed Llama-3.2-1B's products alone) */
#define TCD_EPI_DEFAULT 0
#define TCD_DIRECT_DEFAULT 0
#define TCD_SMALL_DEFAULT 1

typedef struct tcd_tile {
    int fm, fn, sgr, sgc, sgs, mode, bk;
} tcd_tile;

static int tcd_mode(void)
{
    const char *v = getenv("WGT_MATMUL_TCD");
    if (!v || !*v) v = TCD_DEFAULT;
    if (!strcmp(v, "half")) return 1;
    if (!strcmp(v, "all") || !strcmp(v, "1")) return 2;
    if (!strcmp(v, "emulate")) return 3;
    if (!strcmp(v, "f16")) return 4;
    return 0;
}

/* f16 elements a staged word of mode m (matmul_tcd.wgsl's EW); 1 for fragments from storage */
static int tcd_ew(int m)
{
    return m == 0 ? 1 : m == 2 || m == 3 ? 2 : 8;
}

static uint32_t tcd_smem(const tcd_tile *t)
{
    uint32_t bm = (uint32_t)(t->sgr * t->fm * TCD_FRAG), bn = (uint32_t)(t->sgc * t->fn * TCD_FRAG);
    uint32_t nbuf = t->mode >= 3 ? 2 : 1;
    return (uint32_t)(t->sgr * t->sgc) * TCD_FRAG * TCD_FRAG * 4 + (t->mode ? nbuf * (bm + bn) * (uint32_t)(t->bk + 8) * 2 : 32);
}

/* whether the staged words of a slab divide among the invocations */
static int tcd_fits(wgt_context *ctx, const tcd_tile *t)
{
    uint32_t nt = (uint32_t)(t->sgr * t->sgc * t->sgs);
    if (nt > wgt_gpu_limits(ctx)->max_compute_invocations_per_workgroup) return 0;
    if (tcd_smem(t) > wgt_gpu_limits(ctx)->max_compute_workgroup_storage_size) return 0;
    if (!t->mode) return 1;
    uint32_t ew = (uint32_t)tcd_ew(t->mode), bm = (uint32_t)(t->sgr * t->fm * TCD_FRAG), bn = (uint32_t)(t->sgc * t->fn * TCD_FRAG);
    return t->bk % TCD_FRAG == 0 && (bm * t->bk / ew) % nt == 0 && (bn * t->bk / ew) % nt == 0;
}

/* FMxFN:SGRxSGC[:MODE[:BK]] into *t when valid and fitting the device; 0 otherwise */
static int tcd_parse(wgt_context *ctx, const char *v, tcd_tile *t)
{
    int fm, fn, r, c, mode = 0, bk = 32;
    if (!v || sscanf(v, "%dx%d:%dx%d:%d:%d", &fm, &fn, &r, &c, &mode, &bk) < 4 || fm < 1 || fn < 1 || r < 1 || c < 1 ||
        fm > 4 || fn > 4 || r * c * t->sgs > 1024 || mode < 0 || mode > 4 || (bk != 16 && bk != 32 && bk != 64))
        return 0;
    tcd_tile f = {fm, fn, r, c, t->sgs, mode, bk};
    if (!tcd_fits(ctx, &f)) return 0;
    *t = f;
    return 1;
}

/* WGT_MATMUL_TCD_TILE, else TCD_TILE, else 2 x 2 fragments a subgroup in 2 x 2 subgroups with
 * fragments from storage (fits every device with 16x16 fragments) */
static tcd_tile tcd_tile_of(wgt_context *ctx)
{
    tcd_tile t = {2, 2, 2, 2, tcd_mode() == 3 ? 32 : (int)wgt_gpu_info(ctx)->limits.subgroup_max_size, 0, 32};
    if (!tcd_parse(ctx, getenv("WGT_MATMUL_TCD_TILE"), &t)) tcd_parse(ctx, TCD_TILE, &t);
    return t;
}

/* The tile of a product of M x N that the default tile t covers in fewer workgroups than the
 * H200's 132 SMs, over k < 1024 (Qwen2.5-0.5B's q/k/v and o products at 512 tokens: 36 and 28
 * tiles of 128 x 128, 17 TFLOP/s; a longer k keeps t, split along k: Llama-3.2-1B's q/k/v ran
 * 80.8 us in 96 tiles of 128 x 128 unsplit against 104.2 in 64 x 64):
 * WGT_MATMUL_TCD_SMALL (same form as WGT_MATMUL_TCD_TILE; 0: none; 1: TCD_SMALL), else TCD_SMALL
 * where it fits (when TCD_SMALL_DEFAULT); t itself otherwise (and under a forced
 * WGT_MATMUL_TCD_TILE or emulation, unless WGT_MATMUL_TCD_SMALL is given). */
#define TCD_SMALL "2x2:2x2:3:32"
static tcd_tile tcd_small_of(wgt_context *ctx, tcd_tile t, uint32_t M, uint32_t N, uint32_t K)
{
    const char *v = getenv("WGT_MATMUL_TCD_SMALL"), *forced = getenv("WGT_MATMUL_TCD_TILE");
    if ((v && !strcmp(v, "0")) || (!(v && *v) && !TCD_SMALL_DEFAULT)) return t;
    /* a forced tile, or emulation (the tests' tiles), keeps its tile unless a small one is given */
    if ((!v || !*v) && ((forced && *forced) || tcd_mode() == 3)) return t;
    uint32_t bm = (uint32_t)(t.sgr * t.fm * TCD_FRAG), bn = (uint32_t)(t.sgc * t.fn * TCD_FRAG);
    int64_t tiles = (int64_t)((M + bm - 1) / bm) * ((N + bn - 1) / bn);
    if (tiles >= 132 || (K >= 1024 && !getenv("WGT_MATMUL_TCD_SPLIT"))) return t; /* tcd_split's case */
    tcd_tile s = t;
    if (!tcd_parse(ctx, v && *v && strcmp(v, "1") ? v : TCD_SMALL, &s) && !tcd_parse(ctx, TCD_SMALL, &s)) return t;
    return s;
}

static int has_frag16(wgt_context *ctx)
{
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    for (int c = 0; c < info->n_subgroup_matrix_configs; c++)
        if (info->subgroup_matrix_configs[c].component == WGT_F16 && info->subgroup_matrix_configs[c].result == WGT_F32 &&
            info->subgroup_matrix_configs[c].m == TCD_FRAG && info->subgroup_matrix_configs[c].n == TCD_FRAG &&
            info->subgroup_matrix_configs[c].k == TCD_FRAG)
            return 1;
    return 0;
}

int op_matmul_tcd_take(wgt_context *ctx, int64_t M, int64_t N, int64_t K, wgt_dtype da, wgt_dtype db)
{
    int mode = tcd_mode();
    /* from 64 rows (prefill, training); emulation from any size the GEMVs leave (partial tiles) */
    if (!mode || M < (mode == 3 ? 1 : 64) || N < 1 || K < 1 || wgt_gpu_avoid_barriers(ctx)) return 0;
    int half = da == WGT_F16 || da == WGT_BF16 || db == WGT_F16 || db == WGT_BF16;
    if (mode == 1 && !half) return 0;
    /* f16: an f16 operand and no bf16 (bf16 values past f16's range would become infinities) */
    if (mode == 4 && (!(da == WGT_F16 || db == WGT_F16) || da == WGT_BF16 || db == WGT_BF16)) return 0;
    if (!op_is_float(da) || !op_is_float(db)) return 0;
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    if (!wgt_gpu_has_f16(ctx)) return 0;
    if (mode != 3 && (!info->has_subgroup_matrix || !wgt_gpu_sgmatrix_layout_template() ||
                      info->limits.subgroup_min_size != info->limits.subgroup_max_size))
        return 0;
    tcd_tile t = tcd_tile_of(ctx);
    if (t.sgs < 1 || (TCD_FRAG * TCD_FRAG) % t.sgs || !tcd_fits(ctx, &t)) return 0;
    /* padded copies of both operands must fit a binding and u32 indexing */
    uint64_t kp = (uint64_t)(K + 127) / 128 * 128, lim = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    uint64_t mp = (uint64_t)M + 128, np = (uint64_t)N + 128;
    if (mp * kp * 2 > lim || np * kp * 2 > lim || mp * kp > UINT32_MAX || np * kp > UINT32_MAX) return 0;
    return mode == 3 || has_frag16(ctx);
}

/* ---- matmul_half.wgsl: an operand as padded f16 rows -------------------------------------------- */

typedef struct half_params {
    uint32_t R, K, Rp, Kp, off, sr, sk, gx;
} half_params;

static char *half_prelude(void *arg)
{
    wgt_dtype dt = *(const wgt_dtype *)arg;
    char *pre = malloc(4096);
    if (!pre) return NULL;
    pre[0] = 0;
    op_wgsl_loader(pre, 4096, "ldX", "x", dt, "f32");
    return pre;
}

/* y (a new f16 tensor of Rp x Kp) = rows r < R of X (element off + r * sr + k * sk of binding bx,
 * k < K), zero elsewhere */
static wgt_status half_copy(wgt_context *ctx, const wgt_binding *bx, wgt_dtype dt, uint32_t R, uint32_t K,
                            uint32_t off, uint32_t sr, uint32_t sk, uint32_t Rp, uint32_t Kp, wgt_tensor **y,
                            wgt_binding *by)
{
    int32_t key = (int32_t)dt;
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "matmul_half", &key, sizeof key, half_prelude, &dt, "main", NULL, 0, &k);
    if (st) return st;
    int64_t n = (int64_t)Rp * Kp;
    if ((st = wgt_tensor_new(ctx, WGT_F16, 1, &n, y))) return st;
    int64_t base;
    if ((st = op_bind_all(*y, by, &base))) {
        wgt_tensor_free(*y);
        return st;
    }
    uint64_t words = (uint64_t)n / 2;
    uint32_t gx, gy;
    op_grid(ctx, (words + 255) / 256, &gx, &gy);
    half_params h = {R, K, Rp, Kp, off, sr, sk, gx * 256};
    wgt_binding b[2] = {*bx, *by};
    wgt_gpu_cost(ctx, (double)R * K * wgt_dtype_size(dt) + (double)n * 2, 0);
    st = wgt_gpu_dispatch(ctx, k, &h, sizeof h, b, 2, gx, gy, 1);
    if (st) wgt_tensor_free(*y);
    return st;
}

/* ---- the product --------------------------------------------------------------------------------- */

typedef struct tcd_key {
    int32_t fm, fn, sgr, sgc, sgs, dc, emu, mode, bk, epi, af32, ragged;
} tcd_key;

/* WGT_MATMUL_TCD_EPI=1: whole tiles with alpha or C (a bias) store their fragments, then fix_tile
 * adds it; 0: through Cs fragment by fragment */
static int tcd_epi(void)
{
    const char *v = getenv("WGT_MATMUL_TCD_EPI");
    return v && *v ? strcmp(v, "0") != 0 : TCD_EPI_DEFAULT;
}

/* WGT_MATMUL_TCD_DIRECT=1: the staged modes read ragged rows and (4-byte words) f32 A themselves;
 * 0: every operand that is not f16 rows of whole tiles copied by matmul_half.wgsl */
static int tcd_direct(void)
{
    const char *v = getenv("WGT_MATMUL_TCD_DIRECT");
    return v && *v ? strcmp(v, "0") != 0 : TCD_DIRECT_DEFAULT;
}

int op_tc_prelude_head(char *pre, size_t cap, int emu, int sgs, int sgr, int sgc, int fm, int fn, int frag)
{
    int n = snprintf(pre, cap, "enable f16;\n%s"
                     "const SGS: u32 = %du;\nconst SGR: u32 = %du;\nconst SGC: u32 = %du;\nconst FM: u32 = %du;\n"
                     "const FN: u32 = %du;\nconst SM: u32 = %du;\nconst SN: u32 = %du;\nconst SK: u32 = %du;\n",
                     emu ? "" : "enable chromium_experimental_subgroup_matrix;\n"
                                "diagnostic(off, chromium.subgroup_matrix_uniformity);\n",
                     sgs, sgr, sgc, fm, fn, frag, frag, frag);
    return n > 0 && (size_t)n < cap;
}

static char *tcd_prelude(void *arg)
{
    const tcd_key *k = arg;
    size_t cap = 16384;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    if (!op_tc_prelude_head(pre, cap, k->emu, k->sgs, k->sgr, k->sgc, k->fm, k->fn, TCD_FRAG)) {
        free(pre);
        return NULL;
    }
    size_t n = strlen(pre);
    snprintf(pre + n, cap - n,
             "const MODE: u32 = %du;\nconst BK: u32 = %du;\nconst NBUF: u32 = %du;\nalias AW = %s;\n"
             "const EPI_TILE: bool = %s;\nconst RAGGED: bool = %s;\nalias AWA = %s;\n",
             k->mode, k->bk, k->mode >= 3 ? 2 : 1,
             k->mode == 0 ? "f16" : tcd_ew(k->mode) == 8 ? "vec4<u32>" : "u32", k->epi ? "true" : "false", k->ragged ? "true" : "false",
             k->af32 ? "vec2<f32>" : k->mode == 0 ? "f16" : tcd_ew(k->mode) == 8 ? "vec4<u32>" : "u32");
    op_wgsl_loader(pre, cap, "ldC", "c", (wgt_dtype)k->dc, "f32");
    if (!op_wgsl_section(pre, cap, "lib_matmul", "params") ||
        !op_wgsl_section(pre, cap, "lib_matmul_tcd", k->mode == 0 ? "word f16" : tcd_ew(k->mode) == 8 ? "word vec4" : "word u32") ||
        !op_wgsl_section(pre, cap, "lib_matmul_tcd", k->af32 ? "word_a f32" : "word_a same") ||
        !op_wgsl_section(pre, cap, "lib_matmul_tcd", k->emu ? "frag scalar" : "frag subgroup matrix") ||
        (k->emu && !op_wgsl_section(pre, cap, "lib_matmul_tcd", k->mode ? "frag scalar staged" : "frag scalar global")) ||
        (!k->emu && !op_wgsl_section(pre, cap, "lib_matmul_tcd", k->mode ? "frag subgroup matrix stub" : "frag subgroup matrix global"))) {
        free(pre);
        return NULL;
    }
    return pre;
}

static uint32_t round_up(uint32_t v, uint32_t to)
{
    return (v + to - 1) / to * to;
}

/* Slices of k for a product of `tiles` workgroups over K (padded): as many as keep the slices'
 * workgroups within one an SM of the H200 (132), each at least 512 long; 1: none. Llama-3.2-1B's
 * products alone at 512 tokens (bench_matmul, bench/results/h200/pre-2026-12-03b) ran faster with
 * fewer slices than the 264 workgroups aimed at before: q/k/v (96 tiles) 99.0 us in 3 slices, 80.8
 * in 1; o (64 tiles) 76.0 in 4, 65.0 in 2; down (64 tiles, k 8192) 198.8 in 5, 163.5 in 2. Whole
 * prefill 512 in one H200 call (bench/results/h200/final-2026-12-03-1640): Llama-3.2-1B f16 35,870
 * tok/s with 264, 38,627-40,586 with 132 (three rounds). */
static int64_t tcd_split(int64_t tiles, uint32_t K)
{
    const char *v = getenv("WGT_MATMUL_TCD_SPLIT");
    if (v && *v) return atoi(v) > 1 ? atoi(v) : 1;
    if (tiles >= 66 || K < 1024) return 1;
    int64_t s = 132 / tiles, most = K / 512;
    return s < most ? s : most;
}

wgt_status op_matmul_tcd(wgt_context *ctx, const mm_params *p, const wgt_binding bind[4], wgt_dtype da, wgt_dtype db,
                         wgt_dtype dc)
{
    tcd_tile t = tcd_small_of(ctx, tcd_tile_of(ctx), p->M, p->N, p->K);
    uint32_t bm = (uint32_t)(t.sgr * t.fm * TCD_FRAG), bn = (uint32_t)(t.sgc * t.fn * TCD_FRAG);
    /* k whole slabs (staged) or fragments; a split's slices are whole 64s (mm_split_k) */
    uint32_t kstep = (uint32_t)t.bk; /* matmul_tcd.wgsl's k loop steps BK in every mode */
    uint32_t kp = round_up(p->K, kstep), mp = round_up(p->M, bm), np = round_up(p->N, bn);
    uint32_t ew = (uint32_t)tcd_ew(t.mode);
    int64_t slices = tcd_split((int64_t)(mp / bm) * (np / bn), kp);
    if (slices > 1) kp = round_up(p->K, 64);
    mm_params q = *p;
    q.K = kp;
    wgt_binding b[4] = {bind[0], bind[1], bind[2], bind[3]};
    wgt_tensor *ta = NULL, *tb = NULL;
    wgt_status st = WGT_OK;
    /* A as is: f16 rows along k, whole tiles of rows (any rows when staged) and k, in whole staged
     * words; f32 rows too where the words are 4 bytes (two f32 read, packed as they are staged) */
    int direct = t.mode && tcd_direct();
    int af32 = direct && ew == 2 && da == WGT_F32 && p->sak == 1 && p->K == kp && p->off_a % 2 == 0 && p->sam % 2 == 0;
    if (!af32 && !(da == WGT_F16 && p->sak == 1 && (p->M == mp || direct) && p->K == kp && p->off_a % ew == 0 &&
                   p->sam % ew == 0)) {
        st = half_copy(ctx, &bind[0], da, p->M, p->K, p->off_a, p->sam, p->sak, mp, kp, &ta, &b[0]);
        q.off_a = 0, q.sam = kp;
    }
    /* B[k, n] at off_b + n * sbn + k * sbk: as is when f16 with sbk 1 and whole tiles */
    if (!st && !(db == WGT_F16 && p->sbk == 1 && (p->N == np || direct) && p->K == kp && p->off_b % ew == 0 &&
                 p->sbn % ew == 0)) {
        st = half_copy(ctx, &bind[1], db, p->N, p->K, p->off_b, p->sbn, p->sbk, np, kp, &tb, &b[1]);
        q.off_b = 0, q.sbn = kp;
    }
    q.sak = q.sbk = 1;
    q.tpr = 0;
    wgt_kernel *k = NULL;
    if (!st) {
        tcd_key key = {t.fm, t.fn, t.sgr, t.sgc, t.sgs, (int32_t)dc, tcd_mode() == 3, t.mode, t.bk, tcd_epi(), af32,
                       /* an operand read as it is with rows past the tiles' (copies are padded) */
                       (!ta && p->M != mp) || (!tb && p->N != np)};
        st = wgt_gpu_kernel_keyed(ctx, "matmul_tcd", &key, sizeof key, tcd_prelude, &key, "main", NULL, 0, &k);
    }
    if (!st && slices > 1) {
        st = mm_split_k(ctx, &q, k, b, dc, slices, np / bn, mp / bm);
    } else if (!st) {
        wgt_gpu_cost(ctx, 0, 2.0 * p->M * (double)p->N * p->K);
        st = wgt_gpu_dispatch(ctx, k, &q, sizeof q, b, 4, np / bn, mp / bm, 1);
    }
    wgt_tensor_free(ta);
    wgt_tensor_free(tb);
    return st;
}
