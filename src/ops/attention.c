/* Scaled dot-product attention (src/kernels/attention.wgsl): a flash-style kernel (online softmax
 * over blocks of keys, no score matrix), one workgroup per 4 query rows of a kv head (4 queries of
 * a head, or in decode 4 heads of a GQA group: K and V are read once for the four); when that
 * gives few workgroups (decode) the keys are split across workgroups and a second kernel merges
 * the splits. One query row a head (decode) over at most 256 visible keys and no mask takes
 * src/kernels/attention_decode.wgsl instead: one workgroup a head, one dispatch.
 * A sliding window (causal only) first drops the keys no query can see, so one query row needs
 * nothing more; several rows take attention.wgsl's WINDOW variant (a prelude constant: the
 * full-attention pipelines compile exactly as without windows), which also bounds each row from
 * below. Results are computed in f32 and cast to q's dtype. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "tensor/record.h"

/* Params of src/kernels/lib_attention.wgsl, field for field. */
typedef struct sdpa_gpu_params {
    uint32_t B, Hq, Lq, Lk;
    uint32_t D, Dv, group, nsplit;
    float scale;
    uint32_t causal;
    int32_t coff;
    uint32_t mask_kind;
    uint32_t per_split, off_q, off_k, off_v;
    uint32_t off_m, zero, kvec, pad2;
    uint32_t sq[4], sk[4], sv[4], sm[4];
} sdpa_gpu_params;

static wgt_status sdpa_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_sdpa(&in[0], &in[1], &in[2], in[3].data ? &in[3] : NULL, arg, &out[0]);
}

static wgt_status strides4(wgt_context *ctx, const wgt_layout *l, uint32_t *s)
{
    for (int d = 0; d < 4; d++) {
        if (l->strides[d] > UINT32_MAX) return op_fail(ctx, WGT_ERR_LIMIT, "sdpa: a stride past 2^32 elements");
        s[d] = (uint32_t)l->strides[d];
    }
    return WGT_OK;
}

/* What an attention prelude depends on (the pipeline cache's key, no padding bytes): the decode
 * kernel's prelude is built once per key, not on every token. */
typedef struct sdpa_key {
    uint8_t decode, q, k, v, mask, window; /* dtypes; mask: q's when there is none; window: WINDOW */
    uint8_t loads4, pad;                   /* LOADS4: sdpa_loads4 */
    uint32_t wg;                          /* the decode kernel's workgroup size; 0 for attention.wgsl */
} sdpa_key;

/* Both kernels' preludes: lib_attention.wgsl's params, nan and (decode) reduce sections, WG or
 * WINDOW, the loaders, and the ldk4 section of k's dtype. */
static char *sdpa_prelude(void *arg)
{
    const sdpa_key *key = arg;
    size_t cap = 16384;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    if (key->decode) snprintf(pre, cap, "const WG: u32 = %uu;\n", key->wg);
    else snprintf(pre, cap, "const WINDOW: bool = %s;\n", key->window ? "true" : "false");
    size_t used = strlen(pre);
    snprintf(pre + used, cap - used, "const LOADS4: bool = %s;\n", key->loads4 ? "true" : "false");
    wgt_dtype kdt = (wgt_dtype)key->k;
    if (!op_wgsl_section(pre, cap, "lib_attention", "params") || !op_wgsl_section(pre, cap, "lib_attention", "nan") ||
        (key->decode && !op_wgsl_section(pre, cap, "lib_attention", "reduce")) ||
        !op_wgsl_section(pre, cap, "lib_attention", kdt == WGT_F32 ? "ldk4 f32" : kdt == WGT_F16 ? "ldk4 f16" : "ldk4 bf16")) {
        free(pre);
        return NULL;
    }
    op_wgsl_loader(pre, cap, "ldq", "q", (wgt_dtype)key->q, "f32");
    op_wgsl_loader(pre, cap, "ldk", "k", kdt, "f32");
    op_wgsl_loader(pre, cap, "ldv", "v", (wgt_dtype)key->v, "f32");
    if (!key->decode) op_wgsl_loader(pre, cap, "ldm", "mask", (wgt_dtype)key->mask, "f32");
    return pre;
}

/* 1 when the key loops issue their loads together (LOADS4: four k row loads in attention_decode,
 * two in attention, and four v loads, before using them). WGT_ATTENTION_LOADS=4 or =1 decides;
 * unset: together for a decode step (one query row), one at a time for prefill (not measured).
 * On the H200 (Qwen2.5-0.5B f16 decode, two rounds, bench/results/h200/attention_ab.txt): after a
 * 512-token prompt (attention.wgsl's split keys) 646.9 / 646.7 against 498.3 / 498.7 tok/s; after
 * 16 (attention_decode) 819.2 / 819.4 against 820.6 / 822.1, noise-sized. */
static int sdpa_loads4(int one_row)
{
    const char *ld = getenv("WGT_ATTENTION_LOADS");
    if (ld && *ld) return !strcmp(ld, "4");
    return one_row;
}

/* decode over at most this many keys: attention_decode.wgsl, one dispatch (on the H200 it beats
 * the split path up to 256 keys and loses from 512: bench_ops --sdpa) */
#define SDPA_DECODE_MAX_KEYS 256

/* WGT_ATTENTION_DECODE=v4[:MAX[:WG]] (the default: v4:2048): a decode step (one query row, no mask)
 * with f32 q, k, v whose rows are whole 16-byte words (a model's f32 KV cache) runs
 * src/kernels/attention_decode_v4.wgsl (a key row's loads together, eight value rows in flight)
 * over at most MAX visible keys (256 unless given, at most 2048; past 256 only where the step is not
 * captured with its position a graph scalar: the graph's buckets assume the split path there), WG
 * invocations a workgroup (unless given: 256 up to 256 visible keys, 1024 past them, within the
 * device's limits), instead of attention_decode.wgsl (<= 256 keys) or the split path (two
 * dispatches); 0: those. On the H200 (bench/results/h200/decode-kernels-2026-12-03/, f16, with
 * fused_linear's rows entry): -p 16 -n 128 Llama-3.2-1B 848.3 / 847.9 -> 861.6 / 859.8 tok/s,
 * Qwen2.5-0.5B 874.2 / 874.1 -> 898.5 / 898.1; -p 512 Llama 715.1 -> 781.7 (256 invocations) and
 * 802.1 (1024), one run each. Up to 2048 keys by default since bench/results/h200/dec-2026-12-03/
 * (Qwen2.5-0.5B f16, -p 1536 -n 128, two rounds: 651.4 / 650.8 tok/s with the split kernels past
 * 1024 keys, 691.5 / 691.5 with v4:2048). */
#define SDPA_DECODE_V4_DEFAULT "v4:2048"

/* WGT_ATTENTION_DECODE_SG=1|all|0: attention_decode_v4's two softmax reductions through subgroup
 * operations (lib_attention.wgsl "reduce subgroups": two barriers each) where subgroups of at most
 * 32 invocations are granted, else the tree in workgroup memory (log2(WG) + 2 barriers each); 1 (the
 * default): in workgroups of at most 256 invocations (where it won on the H200: -p 16 -n 128 Qwen
 * f16 976 -> 982, Llama f16 860-879 -> 882-885 tok/s, bench/results/h200/dec-2026-12-03/), all: in
 * the 1024-invocation ones past 256 keys too (unmeasured alone: a -p 512 run with it was 0.7% slower). */
#define SDPA_V4_SG_DEFAULT "1"

/* WGT_ATTENTION_DECODE_PRE=1|0: attention_decode_v4 with q read into each invocation's registers
 * and its first eight value rows requested before the scores (PRE in the kernel), where a
 * workgroup has at most 256 invocations and D at most 128: the step's q, k and v loads then wait
 * for one round of memory latency instead of three. On the H200 (bench/results/h200/dec-2026-12-03/,
 * -p 16 -n 128, two rounds) Qwen f16 1005.3 / 1005.0 -> 1019.2 / 1019.3 tok/s, Llama f16 902.8 /
 * 904.2 -> 913.4 / 912.1 against the same binary with 0. */
#define SDPA_V4_PRE_DEFAULT "1"

typedef struct sdpa_v4_key {
    uint32_t wg, d4, smax, sg, pre;
} sdpa_v4_key;

static char *sdpa_v4_prelude(void *arg)
{
    const sdpa_v4_key *key = arg;
    size_t cap = 8192;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    snprintf(pre, cap, "%sconst WG: u32 = %uu;\nconst D4: u32 = %uu;\nconst SMAX: u32 = %uu;\nconst PRE: u32 = %uu;\n",
             key->sg ? "enable subgroups;\n" : "", key->wg, key->d4, key->smax, key->pre);
    if (!op_wgsl_section(pre, cap, "lib_attention", "params") || !op_wgsl_section(pre, cap, "lib_attention", "nan") ||
        !op_wgsl_section(pre, cap, "lib_attention", key->sg ? "reduce subgroups" : "reduce")) {
        free(pre);
        return NULL;
    }
    return pre;
}

/* The keys attention_decode_v4.wgsl may take for a decode step over `visible` keys (0: not taken)
 * and its invocations a workgroup (*wg): WGT_ATTENTION_DECODE says v4, the operands are f32, D a
 * multiple of 16 (at most 1024), Dv of 4 (at most 4 a lane), every offset and stride in whole vec4s
 * but the last, which is 1. Bindings start at multiples of 256 bytes, so the views' own offsets
 * decide. */
static int64_t sdpa_v4_max(wgt_context *ctx, const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v,
                           int64_t visible, uint32_t *wg)
{
    const char *e = getenv("WGT_ATTENTION_DECODE");
    if (!e || !*e) e = SDPA_DECODE_V4_DEFAULT;
    if (strncmp(e, "v4", 2) || (e[2] && e[2] != ':')) return 0;
    char *end = NULL;
    long max = e[2] ? strtol(e + 3, &end, 10) : SDPA_DECODE_MAX_KEYS;
    if (max < 1 || max > 2048) max = SDPA_DECODE_MAX_KEYS;
    /* invocations a workgroup: a power of two within the device's limits */
    long w = end && *end == ':' ? strtol(end + 1, NULL, 10) : visible > SDPA_DECODE_MAX_KEYS ? 1024 : 256;
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    uint32_t cap = lim->max_compute_invocations_per_workgroup;
    if (lim->max_compute_workgroup_size_x < cap) cap = lim->max_compute_workgroup_size_x;
    if (w < 64 || w > 1024 || (w & (w - 1))) w = 256;
    while ((uint32_t)w > cap && w > 64) w /= 2;
    *wg = (uint32_t)w;
    const wgt_tensor *t[3] = {q, k, v};
    for (int i = 0; i < 3; i++) {
        const wgt_layout *l = &t[i]->l;
        if (l->dtype != WGT_F32 || l->strides[3] != 1 || l->offset % 4) return 0;
        for (int d = 0; d < 3; d++)
            if (l->strides[d] % 4 || l->strides[d] / 4 > UINT32_MAX) return 0;
    }
    int64_t D = q->l.shape[3], Dv = v->l.shape[3];
    if (D % 16 || D > 1024 || Dv % 4 || Dv == 0 || Dv / 4 > *wg) return 0;
    return max;
}

/* attention.wgsl's entry (mask may be NULL; window: its WINDOW variant) or attention_decode.wgsl's
 * main; one_row: a single query row (decode). */
static wgt_status sdpa_kernel(wgt_context *ctx, const char *file, const wgt_tensor *q, const wgt_tensor *k,
                              const wgt_tensor *v, const wgt_tensor *mask, int window, int one_row, const char *entry,
                              wgt_kernel **out)
{
    sdpa_key key;
    memset(&key, 0, sizeof key);
    key.window = (uint8_t)(window != 0);
    key.decode = !strcmp(file, "attention_decode");
    key.q = (uint8_t)q->l.dtype, key.k = (uint8_t)k->l.dtype, key.v = (uint8_t)v->l.dtype;
    key.mask = (uint8_t)(mask ? mask->l.dtype : q->l.dtype);
    key.wg = key.decode ? op_workgroup_size(ctx) : 0;
    key.loads4 = (uint8_t)sdpa_loads4(one_row);
    return wgt_gpu_kernel_keyed(ctx, file, &key, sizeof key, sdpa_prelude, &key, entry, NULL, 0, out);
}

/* The subgroup-matrix tiles of src/kernels/attention_tc.wgsl (prefill: several query rows, no mask,
 * no sliding window): BQ query rows a workgroup over blocks of BKV keys, NSG_TC subgroups of SGS
 * invocations, fragments SM x SN x SK; emu: scalar fragment products; half: f16 tiles (else f32). */
/* 1: the prefill tiles store f32 outputs token-major by default (WGT_ATTENTION_TC_ROWS) */
#define SDPA_TC_ROWS_DEFAULT 1
/* 1: a workgroup's query rows are the heads of one kv head at fewer positions by default
 * (WGT_ATTENTION_TC_GQA; sdpa_tc_heads) */
#define SDPA_TC_GQA_DEFAULT 1
/* 1: f32 k and v rows of whole 16-byte words (a model's cache) are loaded a block ahead as 16-byte
 * words by default (WGT_ATTENTION_TC_KV4; sdpa_tc_kv4). H200, a 512-token prefill's attention alone
 * (bench_ops --only prefill, bench/results/h200/pre-2026-12-03b): Llama-3.2-1B's 145.7 us -> 78.7
 * with KV4 -> 76.6 with KV4 and GQA; Qwen2.5-0.5B's 85.5 -> 48.0 -> 43.2 */
#define SDPA_TC_KV4_DEFAULT 1

typedef struct sdpa_tc {
    int bq, bkv, sgs, sm, sn, sk, emu, half;
} sdpa_tc;
#define NSG_TC 4

/* WGT_ATTENTION_TC: 1 the subgroup-matrix tiles (tensor cores: q, k, v and the probabilities
 * rounded to f16, f32 scores, softmax and sums) for prefill attention where the device has them;
 * 0 never; emulate[:MxNxK] the same tiles with scalar fragment products on any device (fragments
 * 16x8x8 unless given: the tests' way to run the tile logic on CPU adapters). Unset: the call's
 * wgt_sdpa_params.half_tiles (the models': on for f16 / bf16 / quantized weights, where the H200
 * won every round of a 512-token prefill by 2-5%, bench/results/h200/lead_ab.txt; off for f32
 * weights, whose logits the f16 rounding moves by up to 0.022); 1:MxNxK forces fragments of that
 * shape where the device offers them. Returns 0 off, 1 on (*forced: a shape given), 2 emulate. */
static int sdpa_tc_mode(int half_tiles, int *fm, int *fn, int *fk, int *forced)
{
    const char *v = getenv("WGT_ATTENTION_TC");
    if (!v || !*v) v = half_tiles ? "1" : "0";
    *fm = 16, *fn = 8, *fk = 8;
    *forced = 0;
    if (!strcmp(v, "0")) return 0;
    int m, n, k;
    const char *shape = strchr(v, ':');
    if (shape && sscanf(shape + 1, "%dx%dx%d", &m, &n, &k) == 3 && m > 0 && n > 0 && k > 0 && m <= 32 && n <= 32 &&
        k <= 32)
        *fm = m, *fn = n, *fk = k, *forced = 1;
    return strncmp(v, "emulate", 7) ? 1 : 2;
}

/* Whether the device multiplies f16 fragments m x n x k into f32. */
static int sdpa_has_frag(wgt_context *ctx, int m, int n, int k)
{
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    for (int c = 0; c < info->n_subgroup_matrix_configs; c++)
        if (info->subgroup_matrix_configs[c].component == WGT_F16 && info->subgroup_matrix_configs[c].result == WGT_F32 &&
            (int)info->subgroup_matrix_configs[c].m == m && (int)info->subgroup_matrix_configs[c].n == n &&
            (int)info->subgroup_matrix_configs[c].k == k)
            return 1;
    return 0;
}

/* Workgroup bytes of tiles bq x bkv for head dims D, Dv (attention_tc.wgsl's arrays). */
static uint64_t sdpa_tc_bytes(const sdpa_tc *t, int64_t D, int64_t Dv)
{
    int es = t->half ? 2 : 4, pad = t->half ? 8 : 4;
    int64_t lds = (t->bkv > Dv ? t->bkv : Dv) + 4;
    return (uint64_t)es * (uint64_t)(t->bq * (D + pad) + t->bkv * (D + pad) + t->bkv * (Dv + pad) + t->bq * (t->bkv + pad)) +
           4ull * (uint64_t)(t->bq * lds) + 8ull * NSG_TC * (uint64_t)t->sgs;
}

/* Whether an attention of head dims D, Dv takes attention_tc.wgsl, and with which tiles (*tc);
 * half_tiles: the call's wgt_sdpa_params.half_tiles. */
static int sdpa_tc_choose(wgt_context *ctx, int64_t D, int64_t Dv, int half_tiles, sdpa_tc *tc)
{
    int fm, fn, fk, forced, mode = sdpa_tc_mode(half_tiles, &fm, &fn, &fk, &forced);
    if (!mode || wgt_gpu_avoid_barriers(ctx) || D < 1 || Dv < 1 || D > 256 || Dv > 256) return 0;
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    memset(tc, 0, sizeof *tc);
    tc->half = wgt_gpu_has_f16(ctx);
    if (mode == 1) { /* f16 x f16 -> f32; 16x8x8 first (matmul_tc's choice), then M 16, N 8 or 16 */
        if (!info->has_subgroup_matrix || !tc->half || !wgt_gpu_sgmatrix_layout_template()) return 0;
        if (info->limits.subgroup_min_size != info->limits.subgroup_max_size) return 0;
        if (!(forced && sdpa_has_frag(ctx, fm, fn, fk)) && !op_sgmatrix_pick(ctx, &fm, &fn, &fk)) return 0;
        tc->sgs = (int)info->limits.subgroup_max_size;
    } else {
        tc->emu = 1, tc->sgs = 32;
    }
    tc->sm = fm, tc->sn = fn, tc->sk = fk;
    int wg = NSG_TC * tc->sgs;
    if (tc->sgs < 1 || tc->sgs > 64 || (fm * fn) % tc->sgs || D % fk || Dv % fn ||
        (uint32_t)wg > wgt_gpu_limits(ctx)->max_compute_invocations_per_workgroup ||
        (uint32_t)wg > wgt_gpu_limits(ctx)->max_compute_workgroup_size_x)
        return 0;
    uint32_t smem = wgt_gpu_limits(ctx)->max_compute_workgroup_storage_size;
    if (!tc->half && smem > 16384) smem = 16384; /* llvmpipe GL: wrong results past ~16 KiB of f32 tiles */
    /* the largest that fits; WGT_ATTENTION_TC_TILE=BQxBKV tries one first (tuning) */
    int tiles[6][2] = {{0, 0}, {32, 64}, {32, 32}, {16, 32}, {16, 16}, {16, 8}};
    const char *force = getenv("WGT_ATTENTION_TC_TILE");
    if (!force || sscanf(force, "%dx%d", &tiles[0][0], &tiles[0][1]) != 2 || tiles[0][0] < 1 || tiles[0][0] > 128 ||
        tiles[0][1] < 1 || tiles[0][1] > 128)
        tiles[0][0] = tiles[0][1] = 0;
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        sdpa_tc t = *tc;
        t.bq = tiles[i][0], t.bkv = tiles[i][1];
        if (!t.bq) continue;
        if (t.bq % t.sm || t.bkv % t.sn || t.bkv % t.sk || wg % t.bq || t.bkv % (wg / t.bq)) continue;
        if (sdpa_tc_bytes(&t, D, Dv) > smem) continue;
        *tc = t;
        return 1;
    }
    return 0;
}

int op_sdpa_tc_tiles(wgt_context *ctx, int64_t D, int64_t Dv, int *bq, int *bkv)
{
    sdpa_tc tc;
    if (!sdpa_tc_choose(ctx, D, Dv, 0, &tc)) return 0;
    *bq = tc.bq, *bkv = tc.bkv;
    return 1;
}

/* Whether attention_tc.wgsl reads k and v (p's strides and offsets) as 16-byte words a block ahead
 * (its KV4): f32 rows along d of whole words whose invocations' shares of a block are whole words;
 * WGT_ATTENTION_TC_KV4=0 never, 1 where it can, unset SDPA_TC_KV4_DEFAULT. */
static int sdpa_tc_kv4(const sdpa_tc *tc, const sdpa_gpu_params *p, wgt_dtype dk, wgt_dtype dv)
{
    const char *e = getenv("WGT_ATTENTION_TC_KV4");
    if (!(e && *e ? strcmp(e, "0") != 0 : SDPA_TC_KV4_DEFAULT)) return 0;
    uint32_t wg = (uint32_t)(NSG_TC * tc->sgs);
    if (dk != WGT_F32 || dv != WGT_F32 || p->sk[3] != 1 || p->sv[3] != 1 || p->D % 4 || p->Dv % 4) return 0;
    if ((tc->bkv * p->D / 4) % wg || (tc->bkv * p->Dv / 4) % wg) return 0;
    for (int i = 0; i < 3; i++)
        if (p->sk[i] % 4 || p->sv[i] % 4) return 0;
    return p->off_k % 4 == 0 && p->off_v % 4 == 0;
}

/* attention_tc.wgsl's pipeline key (no padding bytes) and prelude. */
typedef struct sdpa_tc_key {
    uint16_t d, dv;
    uint8_t q, k, v, bq, bkv, sgs, sm, sn, sk, emu, half, hp, kv4, pad;
} sdpa_tc_key;

/* The heads a workgroup of bq query rows packs (attention_tc.wgsl's HP: its rows are bq / HP
 * positions of HP heads sharing a kv head): the largest divisor of the group (query heads per kv
 * head) up to bq, so the heads reading a block of k and v run together (Llama-3.2-1B's 32 / 8
 * heads: 8 positions x 4 heads a workgroup) with WGT_ATTENTION_TC_GQA=1; 0: 1 (bq positions of one
 * head); unset: SDPA_TC_GQA_DEFAULT. */
static int sdpa_tc_heads(int64_t group, int bq)
{
    const char *v = getenv("WGT_ATTENTION_TC_GQA");
    if (!(v && *v ? strcmp(v, "0") != 0 : SDPA_TC_GQA_DEFAULT)) return 1;
    for (int hp = bq < group ? bq : (int)group; hp > 1; hp--)
        if (group % hp == 0) return hp;
    return 1;
}

static char *sdpa_tc_prelude(void *arg)
{
    const sdpa_tc_key *key = arg;
    size_t cap = 24576;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    int pad = key->half ? 8 : 4;
    snprintf(pre, cap,
             "%s%s"
             "const BQ: u32 = %uu;\nconst BKV: u32 = %uu;\nconst HP: u32 = %uu;\nconst D: u32 = %uu;\nconst DV: u32 = %uu;\n"
             "const WG: u32 = %uu;\nconst SGS: u32 = %uu;\nconst SM: u32 = %uu;\nconst SN: u32 = %uu;\n"
             "const SK: u32 = %uu;\nconst LDQ: u32 = %uu;\nconst LDK: u32 = %uu;\nconst LDV: u32 = %uu;\n"
             "const LDP: u32 = %uu;\nconst LDS: u32 = %uu;\nalias TT = %s;\n",
             key->half ? "enable f16;\n" : "",
             key->emu ? "" : "enable chromium_experimental_subgroup_matrix;\n"
                             "diagnostic(off, chromium.subgroup_matrix_uniformity);\n",
             key->bq, key->bkv, key->hp, key->d, key->dv, (unsigned)NSG_TC * key->sgs, key->sgs, key->sm, key->sn, key->sk,
             key->d + pad, key->d + pad, key->dv + pad, key->bkv + pad, (key->bkv > key->dv ? key->bkv : key->dv) + 4u,
             key->half ? "f16" : "f32");
    if (!op_wgsl_section(pre, cap, "lib_attention", "params") || !op_wgsl_section(pre, cap, "lib_attention", "nan") ||
        !op_wgsl_section(pre, cap, "lib_attention", key->emu ? "tc frag scalar" : "tc frag subgroup matrix") ||
        !op_wgsl_section(pre, cap, "lib_attention", key->kv4 ? "tc kv words" : "tc kv elements")) {
        free(pre);
        return NULL;
    }
    op_wgsl_loader(pre, cap, "ldq", "q", (wgt_dtype)key->q, "f32");
    if (!key->kv4) { /* with KV4 the "tc kv words" section holds ldk and ldv */
        op_wgsl_loader(pre, cap, "ldk", "k", (wgt_dtype)key->k, "f32");
        op_wgsl_loader(pre, cap, "ldv", "v", (wgt_dtype)key->v, "f32");
    }
    return pre;
}

/* The prefill attention through attention_tc.wgsl into out32 (p filled by sdpa_gpu). */
/* For WGT_PROFILE=1 (wgt_gpu_cost): the FLOPs of the (query row, key) pairs p's rows see (a causal
 * row i sees coff + i + 1 keys; 2 D for the score and 2 Dv for the values each), and with
 * kv_bytes the bytes an op must move: each visible key and value row once per kv head, the
 * queries and the output. In a captured graph the cost stays the capture's position's. */
static void sdpa_cost(wgt_context *ctx, const sdpa_gpu_params *p, int64_t Hkv, int64_t kv_bytes, int with_bytes)
{
    /* per (batch, head): the sum over query rows i of the keys each sees, clamp(coff + i + 1, 0, Lk):
     * the rows seeing 1..Lk - 1 keys sum as a series, those past Lk see Lk each */
    double keys = (double)p->Lq * p->Lk;
    if (p->causal && p->Lq) {
        int64_t first = (int64_t)p->coff + 1, last = first + p->Lq - 1, lk = p->Lk;
        int64_t lo = first > 1 ? first : 1, hi = last < lk ? last : lk;
        int64_t full_from = first > lk + 1 ? first : lk + 1;
        keys = (hi >= lo ? ((double)lo + hi) * (double)(hi - lo + 1) / 2 : 0) +
               (last >= full_from ? (double)(last - full_from + 1) * lk : 0);
    }
    double pairs = keys * p->B * p->Hq, flops = pairs * 2.0 * (p->D + p->Dv);
    uint64_t bytes = 0;
    if (with_bytes) {
        /* the keys the last row sees: every row's are among them */
        double kv_rows = p->causal ? (double)((int64_t)p->coff + p->Lq) : (double)p->Lk;
        if (kv_rows > p->Lk) kv_rows = p->Lk;
        if (kv_rows < 0) kv_rows = 0;
        bytes = (uint64_t)(kv_rows * p->B * Hkv * (double)kv_bytes) +
                (uint64_t)p->B * p->Hq * p->Lq * (uint64_t)(p->D + p->Dv) * 4;
    }
    wgt_gpu_cost(ctx, bytes, flops);
}

static wgt_status sdpa_tc_run(wgt_context *ctx, const sdpa_tc *tc, const wgt_tensor *q, const wgt_tensor *k,
                              const wgt_tensor *v, wgt_tensor *out32, sdpa_gpu_params *p)
{
    sdpa_tc_key key;
    memset(&key, 0, sizeof key);
    key.d = (uint16_t)p->D, key.dv = (uint16_t)p->Dv;
    key.q = (uint8_t)q->l.dtype, key.k = (uint8_t)k->l.dtype, key.v = (uint8_t)v->l.dtype;
    key.bq = (uint8_t)tc->bq, key.bkv = (uint8_t)tc->bkv, key.sgs = (uint8_t)tc->sgs;
    key.sm = (uint8_t)tc->sm, key.sn = (uint8_t)tc->sn, key.sk = (uint8_t)tc->sk;
    key.emu = (uint8_t)tc->emu, key.half = (uint8_t)tc->half;
    key.hp = (uint8_t)sdpa_tc_heads(p->group, tc->bq);
    wgt_binding b[4];
    int64_t base;
    wgt_status st;
    if ((st = op_bind_all(q, &b[0], &base))) return st;
    p->off_q = (uint32_t)(q->l.offset - base);
    if ((st = op_bind_all(k, &b[1], &base))) return st;
    p->off_k = (uint32_t)(k->l.offset - base);
    if ((st = op_bind_all(v, &b[2], &base))) return st;
    p->off_v = (uint32_t)(v->l.offset - base);
    if ((st = op_bind_all(out32, &b[3], &base))) return st;
    /* the output's offset and strides ride in the mask's fields (no mask on this path) */
    p->off_m = (uint32_t)(out32->l.offset - base);
    if ((st = strides4(ctx, &out32->l, p->sm))) return st;
    key.kv4 = (uint8_t)sdpa_tc_kv4(tc, p, k->l.dtype, v->l.dtype);
    wgt_kernel *kt;
    if ((st = wgt_gpu_kernel_keyed(ctx, "attention_tc", &key, sizeof key, sdpa_tc_prelude, &key, "main", NULL, 0, &kt)))
        return st;
    uint32_t gx, gy;
    uint64_t pp = (uint64_t)tc->bq / key.hp; /* positions a workgroup */
    op_grid(ctx, (uint64_t)p->B * (p->Hq / key.hp) * ((p->Lq + pp - 1) / pp), &gx, &gy);
    sdpa_cost(ctx, p, k->l.shape[1], 0, 0);
    return wgt_gpu_dispatch(ctx, kt, p, sizeof *p, b, 4, gx, gy, 1);
}

/* A decode step's position may be a graph scalar: the causal offset and the keys it sees follow it
 * (fields of the next dispatch's parameters). */
static void sdpa_tie_position(wgt_context *ctx, int64_t coff, int64_t Lk)
{
    wgt_gpu_param_scalar(ctx, offsetof(sdpa_gpu_params, coff), WGT_PARAM_I32, WGT_GRAPH_POSITION, coff, 1, 0);
    wgt_gpu_param_scalar(ctx, offsetof(sdpa_gpu_params, Lk), WGT_PARAM_U32, WGT_GRAPH_POSITION, coff, 1, Lk - coff);
}

/* How the split path divides Lk keys among workgroups: one workgroup per 4 query rows; split the
 * keys when that leaves too few workgroups to fill the device: aim at ~512, each with at least a
 * block of 64 keys. nsplit splits of per keys (a multiple of 64). */
static void sdpa_split(int64_t groups, int64_t Lk, int64_t *nsplit_out, int64_t *per_out)
{
    int64_t nsplit = 1;
    if (groups < 512 && Lk > 128) {
        nsplit = (512 + groups - 1) / groups;
        int64_t max_split = (Lk + 63) / 64;
        if (nsplit > max_split) nsplit = max_split;
        if (nsplit > 64) nsplit = 64;
    }
    int64_t per = (Lk + nsplit - 1) / nsplit;
    per = (per + 63) / 64 * 64;
    if (per == 0) per = 64;
    *nsplit_out = Lk ? (Lk + per - 1) / per : 1;
    *per_out = per;
}

/* Up to SDPA_DECODE_MAX_KEYS keys a decode step runs attention_decode, whose grid does not depend
 * on the key count (bucket 0). Past them a captured step records the split kernels over the whole
 * cache's rows in splits of `per` keys (sdpa_gpu's any_len), those past the key count empty, and
 * the combine skips empty splits: the graph equals eager attention at every key count whose split
 * has the same `per` (which changes only where eager's nsplit reaches its cap of 64, or with the
 * key count where the device is filled without splitting). */
int64_t op_sdpa_decode_bucket(int64_t Hq, int64_t Hkv, int64_t Lk)
{
    if (Lk <= SDPA_DECODE_MAX_KEYS) return 0;
    int64_t nsplit, per;
    sdpa_split(Hkv * ((Hq / Hkv + 3) / 4), Lk, &nsplit, &per);
    return per;
}

/* Rows along dim 2 of t's storage from its view's start: the cache's capacity behind a prefix view. */
static int64_t rows_in_storage(const wgt_tensor *t)
{
    int64_t sr = t->l.strides[2], have = (int64_t)(t->st->bytes / wgt_dtype_size(t->l.dtype));
    int64_t last = t->l.offset; /* the view's last element but along dim 2 */
    for (int d = 0; d < 4; d++)
        if (d != 2 && t->l.shape[d] > 0) last += (t->l.shape[d] - 1) * t->l.strides[d];
    return sr > 0 && have > last ? (have - 1 - last) / sr + 1 : t->l.shape[2];
}

/* WGT_SDPA_FWD=training|products|kernel (unset: SDPA_FWD_DEFAULT): f32 attention over several
 * query rows without a mask or window, every query seeing a key (where the subgroup-matrix tiles
 * are not chosen), as two batched products through the register tiles and one row kernel between
 * them (training: only where autograd records it, i.e. a training step's forward; products: every
 * prompt too, unmeasured for inference; kernel: never):
 * S = q k^T ([B, Hkv, G, Lq, Lk], k broadcast over a group's G query heads, never repeated),
 * P = softmax(scale S, causal) (attention_grad.wgsl's `probs`), y = P v. attention.wgsl (kernel)
 * runs a workgroup per 4 query rows over every key (GPT-2 small's training: 1.8 ms a layer on the
 * H200, ~1.7 TFLOP/s); the products run at ~18 TFLOP/s but write and read S and P (B Hq Lq Lk f32
 * each): taken up to 2^28 elements. On the H200 (bench/results/h200/train_tiles_ab.txt) GPT-2
 * small's training step went 266 -> 252 ms with products alone. */
#define SDPA_FWD_DEFAULT "training"
static int sdpa_products_take(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, int64_t Lq, int64_t Lk,
                              int masked, int64_t window, int causal, int64_t coff)
{
    const char *e = getenv("WGT_SDPA_FWD");
    if (!e || !*e) e = SDPA_FWD_DEFAULT;
    int training = !strcmp(e, "training");
    if ((strcmp(e, "products") && !training) || Lq < 2 || masked || window > 0 || (causal && coff < 0) || Lk < 1) return 0;
    if (training && !(op_grad_mode() && (op_tracked(q) || op_tracked(k) || op_tracked(v)))) return 0;
    if (q->l.dtype != WGT_F32 || k->l.dtype != WGT_F32 || v->l.dtype != WGT_F32) return 0;
    return (uint64_t)q->l.shape[0] * (uint64_t)q->l.shape[1] * (uint64_t)Lq * (uint64_t)Lk <= (1ull << 28);
}

static wgt_status sdpa_products(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, double scale, int causal,
                                int64_t coff, wgt_tensor **out)
{
    int64_t B = q->l.shape[0], Hq = q->l.shape[1], Lq = q->l.shape[2], D = q->l.shape[3];
    int64_t Hkv = k->l.shape[1], Dv = v->l.shape[3];
    int64_t qs[5] = {B, Hkv, Hq / Hkv, Lq, D}, ys[4] = {B, Hq, Lq, Dv};
    wgt_tensor *qg = NULL, *ku = NULL, *kt = NULL, *vu = NULL, *sc = NULL, *pr = NULL, *yg = NULL;
    int was = op_grad_mode(); /* views and products of this op's own, not recorded */
    op_grad_mode_set(0);
    wgt_status st = wgt_tensor_reshape(q, 5, qs, &qg);
    if (!st) st = wgt_tensor_unsqueeze(k, 2, &ku);
    if (!st) st = wgt_tensor_transpose(ku, 3, 4, &kt);
    if (!st) st = wgt_tensor_unsqueeze(v, 2, &vu);
    if (!st) st = wgt_matmul(qg, kt, &sc);
    if (!st) st = op_sdpa_probs(sc, scale, causal, Lq, coff, 0, &pr);
    if (!st) st = wgt_matmul(pr, vu, &yg);
    if (!st) st = wgt_tensor_reshape(yg, 4, ys, out);
    op_grad_mode_set(was);
    wgt_tensor_free(qg), wgt_tensor_free(ku), wgt_tensor_free(kt), wgt_tensor_free(vu);
    wgt_tensor_free(sc), wgt_tensor_free(pr), wgt_tensor_free(yg);
    return st;
}

static wgt_status sdpa_gpu(wgt_context *ctx, const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v,
                           const wgt_tensor *mask, const wgt_layout *lmask, const wgt_sdpa_params *sp, wgt_dtype odt,
                           wgt_tensor **y)
{
    wgt_tensor *out32 = NULL, *part = NULL;
    int64_t B = q->l.shape[0], Hq = q->l.shape[1], Lq = q->l.shape[2], D = q->l.shape[3];
    int64_t coff = sp ? sp->causal_offset : 0, window = sp && sp->causal ? sp->window : 0;
    /* a window: the keys before the first one query 0 sees are nobody's, so k, v (and the mask)
     * start there; views of the same buffers, with the causal offset moved along */
    wgt_tensor kw = *k, vw = *v;
    wgt_layout mw;
    if (mask) mw = *lmask;
    if (window > 0 && coff - window + 1 > 0) {
        int64_t first = coff - window + 1 < k->l.shape[2] ? coff - window + 1 : k->l.shape[2];
        kw.l.offset += first * kw.l.strides[2], kw.l.shape[2] -= first;
        vw.l.offset += first * vw.l.strides[2], vw.l.shape[2] -= first;
        if (mask) mw.offset += first * mw.strides[3], mw.shape[3] -= first;
        coff -= first;
    }
    k = &kw, v = &vw;
    if (mask) lmask = &mw;
    int64_t Hkv = k->l.shape[1], Lk = k->l.shape[2], Dv = v->l.shape[3];
    /* one query row sees every key left (those past it are cut by causal) */
    int windowed = window > 0 && Lq > 1 && coff + Lq - 1 - window + 1 > 0;
    int64_t rows = B * Hq * Lq;
    int64_t oshape[4] = {B, Hq, Lq, Dv};
    wgt_status st = wgt_tensor_new(ctx, WGT_F32, 4, oshape, &out32);
    if (st) return st;
    if (rows == 0 || Dv == 0) goto finish;
    sdpa_gpu_params p;
    memset(&p, 0, sizeof p);
    p.B = (uint32_t)B, p.Hq = (uint32_t)Hq, p.Lq = (uint32_t)Lq, p.Lk = (uint32_t)Lk;
    p.D = (uint32_t)D, p.Dv = (uint32_t)Dv, p.group = (uint32_t)(Hq / Hkv);
    p.scale = (float)(sp && sp->scale != 0 ? sp->scale : 1.0 / sqrt((double)D));
    p.causal = sp && sp->causal;
    if (windowed) p.pad2 = (uint32_t)(window < INT32_MAX / 2 ? window : INT32_MAX / 2);
    if (coff > INT32_MAX / 2) coff = INT32_MAX / 2; /* sees every key anyway */
    if (coff < INT32_MIN / 2) coff = INT32_MIN / 2;
    p.coff = (int32_t)coff;
    p.mask_kind = !mask ? 0 : mask->l.dtype == WGT_BOOL ? 2 : 1;
    /* One workgroup per 4 query rows; split the keys when that leaves too few workgroups to fill
     * the device: aim at ~512, each with at least a block of 64 keys. */
    int64_t groups = B * Hkv * ((Hq / Hkv * Lq + 3) / 4), nsplit, per;
    sdpa_split(groups, Lk, &nsplit, &per);
    p.nsplit = (uint32_t)nsplit, p.per_split = (uint32_t)per;
    if ((st = strides4(ctx, &q->l, p.sq)) || (st = strides4(ctx, &k->l, p.sk)) || (st = strides4(ctx, &v->l, p.sv)))
        goto done;
    if (mask && (st = strides4(ctx, lmask, p.sm))) goto done;

    /* prefill without a mask or window: the subgroup-matrix tiles where the device (or
     * WGT_ATTENTION_TC=emulate) has them; every row sees a key */
    sdpa_tc tc;
    if (Lq > 1 && !mask && !windowed && Lk > 0 && (!p.causal || p.coff >= 0) &&
        sdpa_tc_choose(ctx, D, Dv, sp && sp->half_tiles, &tc)) {
        /* f32 out of inputs autograd never touched: stored token-major ([B, Lq, Hq, Dv] seen as [B, Hq, Lq, Dv]), so
         * a model's heads back to rows ([L, Hq Dv]) is a view, not a copy (WGT_ATTENTION_TC_ROWS=1;
         * 0: head-major; unset: SDPA_TC_ROWS_DEFAULT) */
        const char *rows_env = getenv("WGT_ATTENTION_TC_ROWS");
        int rows = rows_env && *rows_env ? strcmp(rows_env, "0") != 0 : SDPA_TC_ROWS_DEFAULT;
        if (odt == WGT_F32 && rows && !q->ag && !k->ag && !v->ag) {
            int64_t tshape[4] = {B, Lq, Hq, Dv};
            wgt_tensor *tok;
            if ((st = wgt_tensor_new(ctx, WGT_F32, 4, tshape, &tok))) goto done;
            wgt_tensor_free(out32);
            out32 = NULL;
            st = wgt_tensor_transpose(tok, 1, 2, &out32);
            wgt_tensor_free(tok);
            if (st) goto done;
        }
        st = sdpa_tc_run(ctx, &tc, q, k, v, out32, &p);
        if (st) goto done;
        goto finish;
    }
    /* else f32 prompts as two products and a row kernel (WGT_SDPA_FWD) */
    if (sdpa_products_take(q, k, v, Lq, Lk, mask != NULL, window, p.causal, coff)) {
        wgt_tensor_free(out32);
        out32 = NULL;
        st = sdpa_products(q, k, v, p.scale, p.causal, coff, &out32);
        if (st) goto done;
        goto finish;
    }
    wgt_kernel *kmain, *kcomb = NULL;
    int64_t visible = !p.causal ? Lk : coff + 1 < 0 ? 0 : coff + 1 > Lk ? Lk : coff + 1;
    uint32_t v4wg = 256;
    int64_t v4max = Lq == 1 && !mask && !wgt_gpu_avoid_barriers(ctx) ? sdpa_v4_max(ctx, q, k, v, visible, &v4wg) : 0;
    if (v4max > SDPA_DECODE_MAX_KEYS && p.causal && wgt_gpu_capture_ties(ctx, WGT_GRAPH_POSITION, coff))
        v4max = SDPA_DECODE_MAX_KEYS;
    if (Lq == 1 && !mask && visible <= (v4max > SDPA_DECODE_MAX_KEYS ? v4max : SDPA_DECODE_MAX_KEYS)) {
        wgt_kernel *kd;
        wgt_binding b[4];
        int64_t base;
        int solo = wgt_gpu_avoid_barriers(ctx); /* the barrier-free entry point (SwiftShader) */
        if ((st = op_bind_all(q, &b[0], &base))) goto done;
        p.off_q = (uint32_t)(q->l.offset - base);
        /* k and v are usually a cache's prefix that grows every token: bound whole, the bind
         * group is reused */
        if ((st = op_bind_storage(k, &b[1], &base))) goto done;
        p.off_k = (uint32_t)(k->l.offset - base);
        if ((st = op_bind_storage(v, &b[2], &base))) goto done;
        p.off_v = (uint32_t)(v->l.offset - base);
        if ((st = op_bind_all(out32, &b[3], &base))) goto done;
        p.pad2 = (uint32_t)(out32->l.offset - base);
        p.kvec = k->l.strides[3] == 1 && D % 4 == 0 && p.off_k % 2 == 0 && p.sk[0] % 2 == 0 && p.sk[1] % 2 == 0 &&
                 p.sk[2] % 2 == 0;
        if (v4max) { /* attention_decode_v4.wgsl: offsets and strides in vec4s */
            p.off_q /= 4, p.off_k /= 4, p.off_v /= 4;
            for (int d = 0; d < 3; d++) p.sq[d] /= 4, p.sk[d] /= 4, p.sv[d] /= 4;
            const char *sge = getenv("WGT_ATTENTION_DECODE_SG");
            if (!sge || !*sge) sge = SDPA_V4_SG_DEFAULT;
            sdpa_v4_key vk = {v4wg, (uint32_t)(D / 4), v4max > 256 ? (uint32_t)(v4max + 255) / 256 * 256 : 256,
                              strcmp(sge, "0") && (v4wg <= 256 || !strcmp(sge, "all")) && op_row_subgroups(ctx), 0};
            const char *pe = getenv("WGT_ATTENTION_DECODE_PRE");
            if (!pe || !*pe) pe = SDPA_V4_PRE_DEFAULT;
            vk.pre = strcmp(pe, "0") && v4wg <= 256 && D <= 128;
            st = wgt_gpu_kernel_keyed(ctx, "attention_decode_v4", &vk, sizeof vk, sdpa_v4_prelude, &vk, "main", NULL, 0, &kd);
        } else
            st = sdpa_kernel(ctx, "attention_decode", q, k, v, NULL, 0, 1, solo ? "solo" : "main", &kd);
        if (st) goto done;
        uint32_t gx, gy;
        /* main: a workgroup a row; solo: an invocation per 4 value features of a row, 16 a workgroup */
        op_grid(ctx, solo ? ((uint64_t)rows * (uint64_t)((Dv + 3) / 4) + 15) / 16 : (uint64_t)rows, &gx, &gy);
        if (p.causal) sdpa_tie_position(ctx, coff, Lk);
        sdpa_cost(ctx, &p, Hkv, D * (int64_t)wgt_dtype_size(k->l.dtype) + Dv * (int64_t)wgt_dtype_size(v->l.dtype), 1);
        if ((st = wgt_gpu_dispatch(ctx, kd, &p, sizeof p, b, 4, gx, gy, 1))) goto done;
        goto finish;
    }
    /* a decode step captured with its position a graph scalar (the key count follows it): the
     * split over the cache's capacity, the splits past the key count empty (op_sdpa_decode_bucket),
     * so the grid is the same at every position of the bucket */
    if (Lq == 1 && !mask && p.causal && window == 0 && coff + 1 == Lk && wgt_gpu_capture_ties(ctx, WGT_GRAPH_POSITION, coff)) {
        int64_t cap = rows_in_storage(k), capv = rows_in_storage(v);
        if (capv < cap) cap = capv;
        if (cap < Lk) cap = Lk;
        nsplit = (cap + per - 1) / per;
        if (nsplit > 65535) {
            st = op_fail(ctx, WGT_ERR_LIMIT, "sdpa: a captured decode step over a cache of %lld rows", (long long)cap);
            goto done;
        }
        p.nsplit = (uint32_t)nsplit;
    }
    if ((st = sdpa_kernel(ctx, "attention", q, k, v, mask, windowed, Lq == 1, "main", &kmain))) goto done;
    if (nsplit > 1 && (st = sdpa_kernel(ctx, "attention", q, k, v, mask, windowed, Lq == 1, "combine", &kcomb)))
        goto done;
    int64_t pn = nsplit > 1 ? rows * nsplit * (Dv + 2) : 1;
    if ((st = wgt_tensor_new(ctx, WGT_F32, 1, &pn, &part))) goto done;
    wgt_binding b[6];
    int64_t base;
    if ((st = op_bind_all(q, &b[0], &base))) goto done;
    p.off_q = (uint32_t)(q->l.offset - base);
    /* a decode step (one query row, causal, no mask) binds the cache whole, as attention_decode
     * does: the bindings do not follow the key count, so a captured step replays for every key
     * count with the same split (op_sdpa_decode_bucket) */
    int step_like = Lq == 1 && !mask && p.causal;
    if ((st = (step_like ? op_bind_storage : op_bind_all)(k, &b[1], &base))) goto done;
    p.off_k = (uint32_t)(k->l.offset - base);
    if ((st = (step_like ? op_bind_storage : op_bind_all)(v, &b[2], &base))) goto done;
    p.off_v = (uint32_t)(v->l.offset - base);
    if (mask) {
        wgt_tensor tm = *mask;
        tm.l = *lmask;
        if ((st = op_bind_all(&tm, &b[3], &base))) goto done;
        p.off_m = (uint32_t)(lmask->offset - base);
    } else
        b[3] = b[0];
    if ((st = op_bind_all(out32, &b[4], &base)) || (st = op_bind_all(part, &b[5], &base))) goto done;
    uint32_t gx, gy;
    /* the vector path reads whole rows of k from even element indices */
    p.kvec = k->l.strides[3] == 1 && D % 4 == 0 && p.off_k % 2 == 0 && p.sk[0] % 2 == 0 && p.sk[1] % 2 == 0 &&
             p.sk[2] % 2 == 0;
    op_grid(ctx, (uint64_t)groups, &gx, &gy);
    if (step_like) sdpa_tie_position(ctx, coff, Lk);
    sdpa_cost(ctx, &p, Hkv, 0, 0);
    if ((st = wgt_gpu_dispatch(ctx, kmain, &p, sizeof p, b, 6, gx, gy, (uint32_t)nsplit))) goto done;
    op_grid(ctx, (uint64_t)rows, &gx, &gy);
    if (nsplit > 1 && step_like) sdpa_tie_position(ctx, coff, Lk);
    if (nsplit > 1 && (st = wgt_gpu_dispatch(ctx, kcomb, &p, sizeof p, b, 6, gx, gy, 1))) goto done;
finish:
    if (odt == WGT_F32) {
        *y = out32;
        out32 = NULL;
    } else
        st = wgt_tensor_cast(out32, odt, y);
done:
    wgt_tensor_free(out32);
    wgt_tensor_free(part);
    return st;
}

static wgt_status sdpa_unrecorded(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *mask,
                    const wgt_sdpa_params *params, wgt_tensor **out)
{
    OP_BEGIN(q, out);
    const wgt_tensor *ins[4] = {q, k, v, mask};
    wgt_status st = op_same_context("sdpa", ins, mask ? 4 : 3);
    if (st) return st;
    if (q->l.ndim != 4 || k->l.ndim != 4 || v->l.ndim != 4)
        return op_fail(ctx, WGT_ERR_SHAPE, "sdpa: q, k and v must be 4-D [B, H, L, D] (got %d, %d, %d dims)", q->l.ndim,
                       k->l.ndim, v->l.ndim);
    int64_t B = q->l.shape[0], Hq = q->l.shape[1], Lq = q->l.shape[2], D = q->l.shape[3];
    int64_t Hkv = k->l.shape[1], Lk = k->l.shape[2], Dv = v->l.shape[3];
    if (k->l.shape[0] != B || v->l.shape[0] != B || v->l.shape[1] != Hkv || v->l.shape[2] != Lk || k->l.shape[3] != D ||
        Hkv == 0 || Hq % Hkv)
        return op_fail(ctx, WGT_ERR_SHAPE, "sdpa: shapes must be q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] "
                       "with Hq a multiple of Hkv");
    if (!op_is_float(q->l.dtype) || !op_is_float(k->l.dtype) || !op_is_float(v->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "sdpa: q, k and v must be f32, f16 or bf16");
    if (params && (params->window < 0 || (params->window > 0 && !params->causal)))
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "sdpa: window %lld: a sliding window is positive and needs causal "
                       "attention", (long long)params->window);
    wgt_layout lmask;
    if (mask) {
        int64_t full[4] = {B, Hq, Lq, Lk};
        wgt_layout lf;
        wgt_layout_contiguous(&lf, WGT_F32, 4, full);
        int n;
        int64_t s[WGT_MAX_DIMS];
        if ((st = op_broadcast_shape(ctx, "sdpa", &mask->l, &lf, &n, s))) return st;
        if (n != 4 || memcmp(s, full, sizeof full))
            return op_fail(ctx, WGT_ERR_SHAPE, "sdpa: the mask must broadcast to [B, Hq, Lq, Lk]");
        if (mask->l.dtype != WGT_BOOL && !op_is_float(mask->l.dtype))
            return op_fail(ctx, WGT_ERR_DTYPE, "sdpa: the mask must be bool or float, not %s", wgt_dtype_name(mask->l.dtype));
        op_broadcast_layout(&mask->l, 4, full, &lmask);
    }
    int gpu_ok = D <= 256 && Dv <= 256;
    if (op_use_gpu(ctx, "sdpa", q->l.dtype, gpu_ok)) return sdpa_gpu(ctx, q, k, v, mask, &lmask, params, q->l.dtype, out);
    if ((st = op_fallback_status(ctx, "sdpa", q->l.dtype, gpu_ok))) return st;
    wgt_tensor *y;
    int64_t shape[4] = {B, Hq, Lq, Dv};
    if ((st = wgt_tensor_new(ctx, q->l.dtype, 4, shape, &y))) return st;
    wgt_sdpa_params none = {0, 0, 0};
    st = op_reference(ctx, sdpa_ref, params ? (void *)params : &none, ins, 4, &y, 1);
    return op_finish(st, y, out);
}

wgt_status wgt_sdpa(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *mask,
                    const wgt_sdpa_params *params, wgt_tensor **out)
{
    const wgt_tensor *in[4] = {q, k, v, mask};
    wgt_sdpa_params p = params ? *params : (wgt_sdpa_params){0}; /* zeros mean what NULL means */
    return op_record(sdpa_unrecorded(q, k, v, mask, params, out), OP_GRAD_SDPA, in, 4, &p, sizeof p, out);
}

