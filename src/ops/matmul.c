/* Matrix products: matmul (torch.matmul, 1-D to N-D, broadcast batch dims), linear, addmm,
 * baddbmm, outer. One GPU core computes out[z, m, n] = alpha * A[z] @ B[z] + beta * C[z] for
 * strided A [.., M, K], B [.., K, N], C [.., M, N] (transposed and broadcast views read in place)
 * into a contiguous f32 tensor, through one of two kernels:
 *  - src/kernels/matmul_gemv.wgsl for M <= 4 (decode), when A and B are contiguous along k (a weight
 *    stored [N, K], as PyTorch and GGUF keep it): each weight row streamed once, 16-byte loads;
 *    for 5 .. 64 rows (batch 1) matmul_rows.c's kernel instead (several sequences' decode step);
 *  - src/kernels/matmul.wgsl otherwise: 64x64 or 128x128 tiles in workgroup memory;
 *  - src/kernels/matmul_regs.wgsl instead, by default (WGT_MATMUL_TILE=0 turns it off; regs_choose):
 *    register tiles of 8 x 4 or 8 x 8 outputs an invocation (large products: 128 x 96 / 128 x 128
 *    tiles with named sums, WGT_MATMUL_TILE_UNROLL), 16-byte loads of operands
 *    contiguous in k or in m / n (every transposition the trainer makes), two stages;
 *  - src/kernels/matmul_tc.wgsl instead where the device has subgroup matrices with f16 operands
 *    and f32 results (the tensor cores) and WGT_MATMUL_TC's policy takes the product (tc_mode):
 *    tiles converted to f16 in workgroup memory, 16-byte loads where A and B are contiguous in k,
 *    f32 accumulation (WGT_MATMUL_TC=emulate: the same tiles with a scalar fragment product, for
 *    tests); op_matmul_tc_quant runs them for qlinear's GGUF blocks, dequantised into the tiles.
 * A small output over a long k (a weight's gradient: [O, I] summed over every token) is split along k
 * into slices of a scratch tensor that a second dispatch (`combine`) adds, so that enough
 * workgroups run.
 * f16/bf16 operands are converted in the kernel and every product accumulates in f32; results of
 * a half dtype are rounded once by a cast at the end. Integer products with an i32 or u32 result
 * run src/kernels/matmul_int.wgsl straight into the result (wrapping 32-bit sums, as the
 * reference's int64 sums cut to 32 bits); i64 results and integer products scaled by alpha or beta
 * (computed in double by the reference) run the reference. */
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/matmul_fuse.h"
#include "ops/matmul_tcd.h"
#include "ops/ops.h"
#include "tensor/record.h"

/* A product to run: layouts with the same number of dims (>= 2), batch dims already broadcast
 * to the output's (stride 0 where an operand repeats). c may be absent (has_c 0). */
typedef struct mm_job {
    const wgt_tensor *ta, *tb, *tc;
    wgt_layout a, b, c;
    int has_c;
    double alpha, beta;
} mm_job;

#define MM_MAXM_GEMV 4
#define MM_MAXM_SOLO 64 /* rows of A matmul_gemv.wgsl's `solo` takes (4 at a time) */

/* ---- kernels --------------------------------------------------------------------------------- */

/* What a matmul prelude depends on (the pipeline cache's key, no padding bytes): preludes are
 * built once per key, not on every call (a decode token runs a gemv per weight). */
typedef struct mm_key {
    uint8_t kind, da, db, dc; /* kind: MM_GEMV, MM_TILED, MM_TILED_BIG, MM_INT, MM_TC, MM_REGS */
    uint32_t wg;
    uint32_t sg; /* gemv: op_row_subgroups */
    /* MM_TC (mm_tc's fields): tile, k step, subgroup size and grid, fragment shape, scalar
     * fragments, f16 tiles, 16-byte loads */
    uint8_t bm, bn, bk, sgs, sgr, sgc, sm, sn, sk, emu, half, vec;
    uint8_t qt;  /* MM_TC: B as GGUF blocks of this wgt_ftype (0: a float tensor) */
    /* MM_REGS (mm_tile's fields; bm, bn, bk above): outputs per invocation, operand load modes,
     * 16-byte words of padding a k row of the tiles, entry `unrolled` (named sums) */
    uint8_t tm, tn, la;
    uint8_t lb, rpad, unroll, pad;
} mm_key;
enum { MM_GEMV, MM_TILED, MM_TILED_BIG, MM_INT, MM_TC, MM_REGS };

/* matmul_regs.wgsl's tile (regs_choose): BM x BN outputs a workgroup over k steps of BK, TM x TN per
 * invocation; la, lb: how A and B are loaded (0 one element at a time, 1 16-byte words along k,
 * 2 16-byte words along m / n); rpad: 16-byte words of padding after each k row of the tiles in
 * workgroup memory (its PAD). */
typedef struct mm_tile {
    int bm, bn, bk, tm, tn, la, lb, rpad, unroll;
} mm_tile;

/* The tensor-core tiles chosen for a product (tc_choose): BM x BN outputs a workgroup over k steps
 * of BK, SGR x SGC subgroups of SGS invocations, fragments SM x SN x SK; emu: scalar fragment
 * products; half: f16 tiles (else f32); vec: 16-byte loads (A and B contiguous in k). */
typedef struct mm_tc {
    int bm, bn, bk, sgs, sgr, sgc, sm, sn, sk, emu, half, vec, qt;
} mm_tc;

/* lib_matmul.wgsl's words_to dtype code: 0 f32, 1 f16, 2 bf16 */
static int mm_word_dtype(wgt_dtype d)
{
    return d == WGT_F32 ? 0 : d == WGT_F16 ? 1 : 2;
}

/* The prelude of key k with extra appended; without the default storer mm_st (skip_st: extra then
 * defines it, a graph's fused epilogue) or B's and C's loaders (skip bit 1: ldB / ldB8, bit 2: ldC;
 * a graph's merged product, mm_merge_prelude); bit 4 (gemv, f32 A): A's elements through the
 * extra's `fn ldA1(i: u32) -> f32` (a graph's fused prologue), the binding then array<u32>. Every float kernel stores its results through
 * `fn mm_st(i: u32, v: f32)`, element i of `out` (row stride ldo). */
static char *mm_prelude_gen(const mm_key *k, const char *extra, int skip_st, int skip)
{
    wgt_dtype da = (wgt_dtype)k->da, db = (wgt_dtype)k->db, dc = (wgt_dtype)k->dc;
    size_t cap = 49152 + (extra ? strlen(extra) : 0);
    char *pre = malloc(cap);
    if (!pre) return NULL;
    if (k->kind == MM_GEMV) {
        pre[0] = 0;
        op_wgsl_row_subgroups(pre, cap, (int)k->sg);
        size_t used = strlen(pre);
        snprintf(pre + used, cap - used, "const VA: u32 = %du;\nconst VB: u32 = %du;\nconst WG: u32 = %uu;\n",
                 da == WGT_F32 ? 2 : 1, db == WGT_F32 ? 2 : 1, k->wg);
        /* a graph's prologue (skip bit 4): extra defines ldA1(i), f32 element i of the binding */
        if (!op_wgsl_section(pre, cap, "lib_matmul", skip & 4 ? "gemv a prologue" : "gemv a")) {
            free(pre);
            return NULL;
        }
        if (!(skip & 4)) op_wgsl_vec8_loader(pre, cap, "ldA8", "a", da);
        /* skip bit 8: extra defines mm_pro_begin (a graph's fused norm) */
        if (!(skip & 8) && !op_wgsl_section(pre, cap, "lib_matmul", "gemv pro none")) {
            free(pre);
            return NULL;
        }
        if (!(skip & 1)) op_wgsl_vec8_loader(pre, cap, "ldB8", "b", db);
        if (!(skip & 2)) op_wgsl_loader(pre, cap, "ldC", "c", dc, "f32");
    } else if (k->kind == MM_TC) {
        /* Rows padded by 16 bytes (rows start in different banks). The fragment offsets derive from
         * the subgroup's index (lid / SGS), the same for all its invocations where subgroups are
         * consecutive invocations (NVIDIA), which the uniformity analysis cannot see: its rule is off. */
        int pad = k->half ? 8 : 4;
        snprintf(pre, cap,
                 "%s%s"
                 "const BM: u32 = %uu;\nconst BN: u32 = %uu;\nconst BK: u32 = %uu;\nconst WG: u32 = %uu;\n"
                 "const SGS: u32 = %uu;\nconst SGR: u32 = %uu;\nconst SGC: u32 = %uu;\n"
                 "const SM: u32 = %uu;\nconst SN: u32 = %uu;\nconst SK: u32 = %uu;\n"
                 "const LDA: u32 = %uu;\nconst LDB: u32 = %uu;\nalias TT = %s;\n",
                 k->half ? "enable f16;\n" : "",
                 k->emu ? "" : "enable chromium_experimental_subgroup_matrix;\n"
                               "diagnostic(off, chromium.subgroup_matrix_uniformity);\n",
                 k->bm, k->bn, k->bk, (unsigned)k->sgr * k->sgc * k->sgs, k->sgs, k->sgr, k->sgc, k->sm, k->sn,
                 k->sk, k->bk + pad, k->bk + pad, k->half ? "f16" : "f32");
        size_t used = strlen(pre);
        if (k->vec || k->qt) /* words of A (and B) */
            snprintf(pre + used, cap - used, "const EA: u32 = %du;\nconst EB: u32 = %du;\nconst DA: u32 = %du;\n"
                     "const DB: u32 = %du;\n", 16 / (int)wgt_dtype_size(da), k->qt ? 8 : 16 / (int)wgt_dtype_size(db),
                     mm_word_dtype(da), k->qt ? 1 : mm_word_dtype(db));
        if (!k->vec && !k->qt) {
            op_wgsl_loader(pre, cap, "ldA", "a", da, "f32");
            if (!(skip & 1)) op_wgsl_loader(pre, cap, "ldB", "b", db, "f32");
        }
        if (!(skip & 2)) op_wgsl_loader(pre, cap, "ldC", "c", dc, "f32");
        int ok = 1;
        if (k->qt) { /* qlinear.wgsl's block decoders, for its format */
            size_t n = 0;
            const char *dec = op_qlinear_decoders(&n);
            used = strlen(pre);
            ok = dec && used + n + 64 < cap;
            if (ok) snprintf(pre + used, cap - used, "const FMT: u32 = %du;\n%.*s\n", k->qt, (int)n, dec);
        }
        ok = ok && op_wgsl_section(pre, cap, "lib_matmul", "params") &&
             op_wgsl_section(pre, cap, "lib_matmul", k->qt ? "bindings q" : k->vec ? "bindings vec" : "bindings float");
        if (k->vec || k->qt)
            ok = ok && op_wgsl_section(pre, cap, "lib_matmul", "words") &&
                 op_wgsl_section(pre, cap, "lib_matmul", "tc load split") &&
                 op_wgsl_section(pre, cap, "lib_matmul", "tc load vec") &&
                 op_wgsl_section(pre, cap, "lib_matmul", k->qt ? "tc load b q" : "tc load b vec");
        else
            ok = ok && op_wgsl_section(pre, cap, "lib_matmul", "tc load scalar");
        ok = ok && op_wgsl_section(pre, cap, "lib_matmul_frag", k->emu ? "frag scalar" : "frag subgroup matrix");
        if (!ok) {
            free(pre);
            return NULL;
        }
    } else if (k->kind == MM_INT) {
        snprintf(pre, cap, "const WG: u32 = %uu;\n", k->wg);
        op_wgsl_loader(pre, cap, "ldA", "a", da, "i32");
        op_wgsl_loader(pre, cap, "ldB", "b", db, "i32");
        op_wgsl_loader(pre, cap, "ldC", "c", dc, "i32");
        if (!op_wgsl_section(pre, cap, "lib_matmul", "params") || !op_wgsl_section(pre, cap, "lib_matmul", "bindings int")) {
            free(pre);
            return NULL;
        }
    } else if (k->kind == MM_REGS) {
        int wg = (k->bm / k->tm) * (k->bn / k->tn);
        int ea = k->la ? 16 / (int)wgt_dtype_size(da) : 1, eb = k->lb ? 16 / (int)wgt_dtype_size(db) : 1;
        /* loads per invocation a step: elements (mode 0) or words */
        int na = (k->bm * k->bk / ea + wg - 1) / wg, nb = (k->bn * k->bk / eb + wg - 1) / wg;
        snprintf(pre, cap,
                 "const BM: u32 = %du;\nconst BN: u32 = %du;\nconst BK: u32 = %du;\nconst TM: u32 = %du;\n"
                 "const TN: u32 = %du;\nconst WG: u32 = %du;\nconst LA: u32 = %du;\nconst LB: u32 = %du;\n"
                 "const EA: u32 = %du;\nconst EB: u32 = %du;\nconst DA: u32 = %du;\nconst DB: u32 = %du;\n"
                 "const NA: u32 = %du;\nconst NB: u32 = %du;\nconst RA: u32 = %du;\nconst RB: u32 = %du;\n"
                 "const PAD: u32 = %du;\nalias TT = f32;\n",
                 k->bm, k->bn, k->bk, k->tm, k->tn, wg, k->la, k->lb, ea, eb, mm_word_dtype(da), mm_word_dtype(db), na,
                 nb, k->la ? na : (na + 3) / 4, k->lb ? nb : (nb + 3) / 4, k->rpad);
        op_wgsl_tile_sums(pre, cap, k->tm, k->tn);
        if (!k->la) op_wgsl_loader(pre, cap, "ldA", "a", da, "f32");
        if (!k->lb && !(skip & 1)) op_wgsl_loader(pre, cap, "ldB", "b", db, "f32");
        if (!(skip & 2)) op_wgsl_loader(pre, cap, "ldC", "c", dc, "f32");
        if (!op_wgsl_section(pre, cap, "lib_matmul", "params") || !op_wgsl_section(pre, cap, "lib_matmul", "words") ||
            !op_wgsl_section(pre, cap, "lib_matmul", k->la ? "operand a vec" : "operand a scalar") ||
            !op_wgsl_section(pre, cap, "lib_matmul",
                             !k->lb ? "operand b scalar" : skip & 1 ? "operand b vec binding" : "operand b vec") ||
            !op_wgsl_section(pre, cap, "lib_matmul", "bindings c out")) {
            free(pre);
            return NULL;
        }
    } else {
        int big = k->kind == MM_TILED_BIG;
        /* the workgroup size is part of the prelude, hence of the pipeline's key */
        snprintf(pre, cap, "const BM: u32 = %du;\nconst TM: u32 = %du;\nconst BK: u32 = %du;\nconst WG: u32 = %uu;\n",
                 big ? 128 : 64, big ? 8 : 4, big ? 8 : 16, k->wg);
        op_wgsl_loader(pre, cap, "ldA", "a", da, "f32");
        if (!(skip & 1)) op_wgsl_loader(pre, cap, "ldB", "b", db, "f32");
        if (!(skip & 2)) op_wgsl_loader(pre, cap, "ldC", "c", dc, "f32");
        if (!op_wgsl_section(pre, cap, "lib_matmul", "params") ||
            !op_wgsl_section(pre, cap, "lib_matmul", "bindings float")) {
            free(pre);
            return NULL;
        }
    }
    /* the default storer; with extra (a graph's) the elementwise ops' helpers (ew_host_note) */
    if ((k->kind != MM_INT && !skip_st && !op_wgsl_section(pre, cap, "lib_matmul", "store")) ||
        (extra && !op_wgsl_section(pre, cap, "lib_matmul", "epilogue helpers"))) {
        free(pre);
        return NULL;
    }
    if (extra) {
        size_t used = strlen(pre);
        snprintf(pre + used, cap - used, "%s", extra);
    }
    return pre;
}

static char *mm_prelude(void *arg) { return mm_prelude_gen(arg, NULL, 0, 0); }

/* ew_host_note's prelude (mm_note): skip_ld is mm_prelude_gen's skip (bit 4: a prologue defines
 * ldA1, which only the gemv kernel with f32 A reads through; bit 8: also mm_pro_begin). */
static char *mm_prelude_ex(const void *key, const char *extra, int skip_ld, int skip_st)
{
    return mm_prelude_gen(key, extra, skip_st, skip_ld);
}

static mm_key mm_key_of(wgt_context *ctx, int kind, wgt_dtype da, wgt_dtype db, wgt_dtype dc, const mm_tc *tc)
{
    mm_key key;
    memset(&key, 0, sizeof key); /* the key is compared as bytes */
    key.kind = (uint8_t)kind, key.da = (uint8_t)da, key.db = (uint8_t)db, key.dc = (uint8_t)dc;
    key.wg = op_workgroup_size(ctx);
    if (kind == MM_GEMV) key.sg = (uint32_t)op_row_subgroups(ctx);
    if (tc) {
        key.bm = (uint8_t)tc->bm, key.bn = (uint8_t)tc->bn, key.bk = (uint8_t)tc->bk, key.sgs = (uint8_t)tc->sgs;
        key.sgr = (uint8_t)tc->sgr, key.sgc = (uint8_t)tc->sgc, key.sm = (uint8_t)tc->sm, key.sn = (uint8_t)tc->sn;
        key.sk = (uint8_t)tc->sk, key.emu = (uint8_t)tc->emu, key.half = (uint8_t)tc->half, key.vec = (uint8_t)tc->vec;
        key.qt = (uint8_t)tc->qt;
    }
    return key;
}

static const char *mm_file(int kind)
{
    return kind == MM_GEMV ? "matmul_gemv" : kind == MM_INT ? "matmul_int" : kind == MM_TC ? "matmul_tc"
         : kind == MM_REGS ? "matmul_regs" : "matmul";
}

static wgt_status mm_kernel_tc(wgt_context *ctx, int kind, wgt_dtype da, wgt_dtype db, wgt_dtype dc,
                              const char *entry, const mm_tc *tc, wgt_kernel **k)
{
    mm_key key = mm_key_of(ctx, kind, da, db, dc, tc);
    return wgt_gpu_kernel_keyed(ctx, mm_file(kind), &key, sizeof key, mm_prelude, &key, entry, NULL, 0, k);
}

static wgt_status mm_kernel(wgt_context *ctx, int kind, wgt_dtype da, wgt_dtype db, wgt_dtype dc, const char *entry,
                           wgt_kernel **k)
{
    return mm_kernel_tc(ctx, kind, da, db, dc, entry, NULL, k);
}

/* entry "main", or "solo": the barrier-free variant (wgt_gpu_avoid_barriers: SwiftShader) */
static wgt_status gemv_kernel(wgt_context *ctx, wgt_dtype da, wgt_dtype db, wgt_dtype dc, const char *entry,
                              wgt_kernel **k)
{
    return mm_kernel(ctx, MM_GEMV, da, db, dc, entry, k);
}

/* 128x128 tiles (8x8 outputs per invocation) once there are enough tiles to fill the device, and
 * only with 256 invocations: with fewer each would hold twice the rows (16x8 accumulators). */
static int tiled_big(wgt_context *ctx, int64_t M, int64_t N)
{
    return op_workgroup_size(ctx) >= 256 && M >= 512 && N >= 512;
}

static wgt_status tiled_kernel(wgt_context *ctx, int big, wgt_dtype da, wgt_dtype db, wgt_dtype dc, wgt_kernel **k)
{
    return mm_kernel(ctx, big ? MM_TILED_BIG : MM_TILED, da, db, dc, "main", k);
}

static mm_key regs_key_of(const mm_tile *t, wgt_dtype da, wgt_dtype db, wgt_dtype dc)
{
    mm_key key;
    memset(&key, 0, sizeof key); /* the key is compared as bytes */
    key.kind = MM_REGS, key.da = (uint8_t)da, key.db = (uint8_t)db, key.dc = (uint8_t)dc;
    key.wg = (uint32_t)((t->bm / t->tm) * (t->bn / t->tn));
    key.bm = (uint8_t)t->bm, key.bn = (uint8_t)t->bn, key.bk = (uint8_t)t->bk;
    key.tm = (uint8_t)t->tm, key.tn = (uint8_t)t->tn, key.la = (uint8_t)t->la, key.lb = (uint8_t)t->lb;
    key.rpad = (uint8_t)t->rpad, key.unroll = (uint8_t)t->unroll;
    return key;
}

static const char *regs_entry(const mm_tile *t)
{
    return t->unroll ? "unrolled" : "main";
}

static wgt_status regs_kernel(wgt_context *ctx, const mm_tile *t, wgt_dtype da, wgt_dtype db, wgt_dtype dc,
                              wgt_kernel **k)
{
    mm_key key = regs_key_of(t, da, db, dc);
    return wgt_gpu_kernel_keyed(ctx, "matmul_regs", &key, sizeof key, mm_prelude, &key, regs_entry(t), NULL, 0, k);
}

/* The tiles regs_choose tries, largest first: BM, BN, BK, TM, TN. On the H200 (bench_matmul, all of
 * its products one after another, bench/results/h200/sgemm_ab.txt) 128 x 64 x 8 with 8 x 4 an
 * invocation reached 25.0% of the f32 peak, 64 x 64 x 8 (8 x 4) 24.6%, 64 x 64 x 16 (4 x 4) 23.6%,
 * 128 x 64 x 16 18.5%, and 128 x 128 with 8 x 8 an invocation only 3% (its 64 sums and the next
 * step's loads do not stay in registers): it is not tried. */
static const int mm_tiles[][5] = {
    {128, 64, 8, 8, 4},  /* 256 invocations of 8 x 4 */
    {64, 64, 8, 8, 4},   /* 128 of 8 x 4 */
    {64, 64, 16, 4, 4},  /* 256 of 4 x 4: where 8 x 4 does not fit */
    {32, 32, 8, 4, 4},   /* 64: the last resort */
};

/* WGT_MATMUL_TILE_UNROLL=1's first tile (regs_big), through the entry `unrolled` (the named sums:
 * 8 x 8 an invocation spilled as an array, 3% of the peak): 128 x 96 (384 invocations of 8 x 4)
 * where A is read along k in words (x of a forward product, dY of an input gradient), 128 x 128
 * (256 of 8 x 8) where A is read along m (a weight gradient's dY^T) or one element a load (the lm
 * head's dlogits, rows of 50257). Measured on the H200 (bench/results/h200/sgemm2_ab.txt, forced,
 * robustness off; main's 128 x 64 array in brackets): GPT-2 mlp up fwd 48.0% of the f32 peak
 * (42.9), dx 49.9 (44.9), lm head fwd 51.5 (47.7), square 4096 51.8 (44.2); with 128 x 128: mlp up
 * dw 45.3 (39.3), lm head dw 52.0 (46.2), lm head dx 44.2 (36.1). Taken from one workgroup an SM
 * (132 tiles) on where its columns waste no more than 128 x 64's; otherwise mm_tiles as before. */
static int regs_big(int64_t M, int64_t N, int64_t batch, int la, mm_tile *c)
{
    c->bm = 128, c->bn = la == 1 ? 96 : 128, c->bk = 8, c->tm = 8, c->tn = la == 1 ? 4 : 8, c->unroll = 1;
    /* not where its columns cover N with more than 2% beyond 128 x 64's (attention's P v over a
     * head of 64: 96 columns for 64) */
    int64_t cols = (N + c->bn - 1) / c->bn * c->bn, cols64 = (N + 63) / 64 * 64;
    return cols * 50 <= cols64 * 51 && ((M + c->bm - 1) / c->bm) * ((N + c->bn - 1) / c->bn) * batch >= 132;
}

/* 1 when tile t fits the device: invocations within the limits, both stages of both tiles within
 * smem bytes, whole 16-byte words in each tile row (modes 1, 2), 4 x 4 blocks. */
static int tile_fits(wgt_context *ctx, const mm_tile *t, wgt_dtype da, wgt_dtype db, uint32_t smem)
{
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    if (t->bm < 4 || t->bn < 4 || t->bk < 1 || t->tm < 4 || t->tn < 4 || t->bm > 255 || t->bn > 255 || t->bk > 64 ||
        t->tm > 16 || t->tn > 16 || t->bm % t->tm || t->bn % t->tn || t->tm % 4 || t->tn % 4 || t->rpad < 0 ||
        t->rpad > 4)
        return 0;
    uint32_t wg = (uint32_t)((t->bm / t->tm) * (t->bn / t->tn));
    if (wg > lim->max_compute_invocations_per_workgroup || wg > lim->max_compute_workgroup_size_x) return 0;
    int ea = 16 / (int)wgt_dtype_size(da), eb = 16 / (int)wgt_dtype_size(db);
    if ((t->la == 1 && t->bk % ea) || (t->la == 2 && t->bm % ea) || (t->lb == 1 && t->bk % eb) ||
        (t->lb == 2 && t->bn % eb))
        return 0;
    return 2ull * (uint64_t)(t->bm + t->bn + 8 * t->rpad) * (uint64_t)t->bk * 4ull <= smem;
}

/* WGT_MATMUL_TILE_PAD (unset: MM_PAD_DEFAULT): 16-byte words of padding after each k row of the
 * register tiles in workgroup memory, 0 or 1. With 0, stores of one element per k row (mode 0 along
 * k: the logits' gradient [N, 50257] of an lm head; mode 1: x and the weight of a forward product)
 * put 4-8 invocations of a subgroup on one bank; with 1 they spread over all 32. Measured on the H200
 * (bench/results/h200/train_tiles_ab.txt): GPT-2 small's training 15,366 / 15,185 tok/s against
 * 15,400 / 15,365 without: no gain, off. */
#define MM_PAD_DEFAULT "0"
static int regs_pad(void)
{
    const char *v = getenv("WGT_MATMUL_TILE_PAD");
    if (!v || !*v) v = MM_PAD_DEFAULT;
    return v[0] == '1' ? 1 : 0;
}

/* WGT_MATMUL_TILE_TN (unset: MM_TN_DEFAULT): 1 gives products whose A is read along m (mode 2: A^T of
 * a weight's gradient dW = dY^T X, layout "tn") 64 x 64 tiles before 128 x 64: bench_matmul's
 * tile lines on the H200 (sgemm_ab.txt) had GPT-2's mlp up dW at 24.8 TFLOP/s with 64 x 64 x 8
 * against 21.1 with 128 x 64 x 8 (lm head dW 15.5 / 14.7, attention out dW 21.9 / 20.3), while the
 * nt and nn products were as fast or faster with 128 x 64. End to end (train_tiles_ab.txt) GPT-2
 * small's training was unchanged (15,390 / 15,361 tok/s against 15,400 / 15,365): off. */
#define MM_TN_DEFAULT "0"
static int regs_tn_small(int la)
{
    const char *v = getenv("WGT_MATMUL_TILE_TN");
    if (!v || !*v) v = MM_TN_DEFAULT;
    return la == 2 && v[0] == '1';
}

/* WGT_MATMUL_TILE_UNROLL (unset: MM_UNROLL_DEFAULT): 1 tries regs_big's tile first (matmul_regs.wgsl's
 * entry `unrolled`: the sums as named vec4s, op_wgsl_tile_sums), and a tile WGT_MATMUL_TILE forces runs
 * that entry too; 0: `main` (an array of sums) for every tile. On by default since it won every
 * round on the H200 (bench/results/h200/sgemm3_ab.txt): GPT-2 small training 28,043 / 27,861 ->
 * 30,104 / 30,339 tok/s, Qwen2.5-0.5B f16 prefill 512 23,053 / 23,300 -> 24,014 / 24,103. */
#define MM_UNROLL_DEFAULT "1"
static int regs_unroll(void)
{
    const char *v = getenv("WGT_MATMUL_TILE_UNROLL");
    if (!v || !*v) v = MM_UNROLL_DEFAULT;
    return v[0] == '1';
}

/* WGT_MATMUL_TILE: whether a float product runs matmul_regs.wgsl (register tiles, 16-byte loads,
 * two stages) instead of matmul.wgsl, and its tile *t. 0: never (matmul.wgsl: 2-3% of the H200's
 * f32 peak on large products, against 20-30% here); unset or auto: every float product matmul.wgsl
 * would take, the tile by shape: 128 x 64 once there are enough of them to fill the device, else
 * 64 x 64 (the k split, split_k, adds workgroups over a long k; WGT_MATMUL_TILE_TN: 64 x 64 for
 * weight gradients); BMxBNxBK:TMxTN forces a tile (tuning; auto's where it does not fit). la, lb:
 * the operands' load modes (operand_mode). Workgroup memory at most 16 KiB on OpenGL (llvmpipe's
 * computed wrong products past 16 KiB though it reports 32). */
static int regs_choose(wgt_context *ctx, int64_t M, int64_t N, int64_t batch, wgt_dtype da, wgt_dtype db, int la,
                       int lb, mm_tile *t)
{
    const char *force = getenv("WGT_MATMUL_TILE");
    if (force && !strcmp(force, "0")) return 0;
    t->bm = 0;
    uint32_t smem = wgt_gpu_limits(ctx)->max_compute_workgroup_storage_size;
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    if ((info->backend == WGT_BACKEND_OPENGLES || info->backend == WGT_BACKEND_OPENGL || info->compat) && smem > 16384)
        smem = 16384;
    int rpad = regs_pad(), unroll = regs_unroll();
    mm_tile f = {0, 0, 0, 0, 0, la, lb, rpad, unroll};
    if (force && sscanf(force, "%dx%dx%d:%dx%d", &f.bm, &f.bn, &f.bk, &f.tm, &f.tn) == 5 && tile_fits(ctx, &f, da, db, smem)) {
        *t = f;
        return 1;
    }
    if (unroll && !regs_tn_small(la) && regs_big(M, N, batch, la, &f) && tile_fits(ctx, &f, da, db, smem)) {
        *t = f;
        return 1;
    }
    int nt = (int)(sizeof mm_tiles / sizeof mm_tiles[0]);
    for (int i = regs_tn_small(la) ? 1 : 0; i < nt; i++) {
        mm_tile c = {mm_tiles[i][0], mm_tiles[i][1], mm_tiles[i][2], mm_tiles[i][3], mm_tiles[i][4], la, lb, rpad, 0};
        if (!tile_fits(ctx, &c, da, db, smem)) continue;
        *t = c;
        int64_t tiles = ((M + c.bm - 1) / c.bm) * ((N + c.bn - 1) / c.bn) * batch;
        if (tiles >= 264 || c.bm <= 64) return 1; /* two workgroups for each of the H200's 132 SMs */
    }
    return t->bm > 0; /* none fits: matmul.wgsl */
}

/* WGT_MATMUL_TC: half, the subgroup-matrix tiles (tensor cores: f16 operands, f32 sums) for
 * products with an f16 or bf16 operand (and quantized weights with WGT_MATMUL_TC_QUANT=1,
 * op_matmul_tc_quant), where the device has them (half weights bound such a product's precision already; f32 x f32 products keep
 * the f32 tiles); 0 never; 1[:MxNxK] every float product, f32 ones too (the adapter's fragment
 * shape unless given); emulate[:MxNxK] every float product through the same tiles with the
 * fragment product in scalar code (any device; fragment shape 16x8x8 unless given), for testing
 * the tile logic. Unset: MM_TC_DEFAULT. Returns 0 off, 1 half products, 2 all, 3 emulate.
 * Measured on the H200: bench/results/h200/matmul_ab.txt. */
#define MM_TC_DEFAULT "0"
static int tc_mode(int *fm, int *fn, int *fk)
{
    const char *v = getenv("WGT_MATMUL_TC");
    if (!v || !*v) v = MM_TC_DEFAULT;
    *fm = 16, *fn = 8, *fk = 8;
    if (!strcmp(v, "0")) return 0;
    int emu = !strncmp(v, "emulate", 7);
    const char *shape = strchr(v, ':');
    int m, n, k;
    if (shape && sscanf(shape + 1, "%dx%dx%d", &m, &n, &k) == 3 && m > 0 && n > 0 && k > 0 && m <= 64 && n <= 64 && k <= 32)
        *fm = m, *fn = n, *fk = k;
    else if (!emu)
        *fm = 0; /* the adapter's configuration */
    return emu ? 3 : !strncmp(v, "half", 4) ? 1 : 2;
}

/* The tile shapes tried, in order: BM, BN, SGR x SGC subgroups. 64 x 64 in 2 x 2 subgroups was the
 * fastest on the H200 (Qwen2.5-0.5B f16 prefill, 512 tokens, 16x8x8 fragments: 13,654 tok/s
 * against 12,815 for 128 x 64, 11,038 for 128 x 128 in 2 x 2 and 9,330 with 128 x 128 in 2 x 4 for
 * the widest products; bench/results/h200/prefill_ab.txt); 32 x 32 where workgroup memory is short.
 * WGT_MATMUL_TC_TILE=BMxBNxBK:SGRxSGC forces one (tuning; ignored where it does not fit). */
static const int tc_tiles[][4] = {{64, 64, 2, 2}, {32, 32, 2, 2}};

/* 1 when tile t fits: whole fragments per subgroup, whole loads per invocation, workgroup memory
 * (two stages of both tiles and a fragment per subgroup) within smem, WG within the limits. */
static int tc_fits(wgt_context *ctx, mm_tc *t, uint32_t smem)
{
    int wm = t->bm / t->sgr, wn = t->bn / t->sgc, wg = t->sgr * t->sgc * t->sgs;
    int es = t->half ? 2 : 4, pad = t->half ? 8 : 4;
    if (t->bm > 128 || t->bn > 128 || t->bk > 64 || t->bm < 1 || t->bn < 1 || t->bk < 1 || t->sgr < 1 || t->sgc < 1)
        return 0;
    if (wm % t->sm || wn % t->sn || t->bk % t->sk || t->bm % t->sgr || t->bn % t->sgc || t->bk % 8) return 0;
    if ((uint32_t)wg > wgt_gpu_limits(ctx)->max_compute_invocations_per_workgroup ||
        (uint32_t)wg > wgt_gpu_limits(ctx)->max_compute_workgroup_size_x)
        return 0;
    int ea = t->vec ? 8 : 1; /* the smaller word (f16); f32 loads are checked below */
    if (t->qt) { /* A in f32 words, B in pieces of 8 elements, one 32-element unit a k step */
        if (t->bk != 32 || (t->bm * t->bk / 4) % wg || (t->bn * 4) % wg) return 0;
    } else if ((t->bm * t->bk / ea) % wg || (t->bn * t->bk / ea) % wg || (t->bm * t->bk / 4) % wg ||
               (t->bn * t->bk / 4) % wg)
        return 0;
    uint64_t bytes = 2ull * (uint64_t)(t->bm + t->bn) * (uint64_t)(t->bk + pad) * (uint64_t)es +
                     4ull * (uint64_t)(t->sgr * t->sgc * t->sm * t->sn);
    return bytes <= smem;
}

/* Whether a float product (dtypes da, db) of M x N, batch `batch`, takes the subgroup-matrix
 * tiles, and which (*tc); vec: A and B contiguous in k with rows of whole 16-byte words. */
static int tc_choose(wgt_context *ctx, int64_t M, int64_t N, int64_t batch, wgt_dtype da, wgt_dtype db, int vec,
                     int qt, mm_tc *tc)
{
    int fm, fn, fk, mode = tc_mode(&fm, &fn, &fk);
    if (!mode || M <= MM_MAXM_GEMV || wgt_gpu_avoid_barriers(ctx)) return 0;
    if (mode == 1 && da != WGT_F16 && da != WGT_BF16 && db != WGT_F16 && db != WGT_BF16) return 0;
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    memset(tc, 0, sizeof *tc);
    tc->half = wgt_gpu_has_f16(ctx);
    /* WGT_MATMUL_TC_VEC=0: A and B through the one-element loader even where 16-byte words would do
     * (tuning: the H200 ran square 4096 A B (scalar) at 28 TFLOP/s, A B^T (words) at 9) */
    const char *vv = getenv("WGT_MATMUL_TC_VEC");
    tc->vec = vec && !(vv && !strcmp(vv, "0")), tc->qt = qt;
    if (mode != 3) { /* the largest f16 x f16 -> f32 configuration; one fixed subgroup size */
        if (!info->has_subgroup_matrix || !tc->half || !wgt_gpu_sgmatrix_layout_template()) return 0;
        if (info->limits.subgroup_min_size != info->limits.subgroup_max_size) return 0;
        /* 16x8x8 first (the shape measured fastest with these tiles, bench/results/h200/
         * prefill_ab.txt; 16x16x16 unmeasured with them), then NVIDIA's other tensor-core shapes
         * (M 16, N 8 or 16), the largest of those, then any */
        if (!fm && !op_sgmatrix_pick(ctx, &fm, &fn, &fk)) return 0; /* fm set: WGT_MATMUL_TC=1:MxNxK */
        tc->sgs = (int)info->limits.subgroup_max_size;
    } else {
        tc->emu = 1, tc->sgs = 32;
        if (32 % fm || 32 % fn || 32 % fk) return 0;
    }
    tc->sm = fm, tc->sn = fn, tc->sk = fk;
    if (tc->sgs < 1 || tc->sgs > 64 || (fm * fn) % tc->sgs) return 0;
    uint32_t smem = wgt_gpu_limits(ctx)->max_compute_workgroup_storage_size;
    /* f32 tiles (emulation without shader-f16) stay within the spec's 16 KiB: llvmpipe's OpenGL ES
     * computed wrong 16x16x16 products with 22 KiB of f32 tiles (32 KiB reported), right ones at 13 */
    if (!tc->half && smem > 16384) smem = 16384;
    const char *force = getenv("WGT_MATMUL_TC_TILE");
    int bm, bn, bk, sr, sc;
    if (force && sscanf(force, "%dx%dx%d:%dx%d", &bm, &bn, &bk, &sr, &sc) == 5) {
        tc->bm = bm, tc->bn = bn, tc->bk = bk, tc->sgr = sr, tc->sgc = sc;
        if (tc_fits(ctx, tc, smem)) return 1;
    }
    /* the first tile that fits (a long k over few tiles is split, see split_k); k steps of 32, or
     * 16 where workgroup memory is short */
    int nt = (int)(sizeof tc_tiles / sizeof tc_tiles[0]);
    for (int i = 0; i < nt; i++)
        for (int k = 32; k >= (qt ? 32 : 16); k -= 16) {
            mm_tc t = *tc;
            t.bm = tc_tiles[i][0], t.bn = tc_tiles[i][1], t.sgr = tc_tiles[i][2], t.sgc = tc_tiles[i][3], t.bk = k;
            if (!tc_fits(ctx, &t, smem)) continue;
            *tc = t;
            return 1;
        }
    return 0;
}

/* Into how many slices of k a product of `tiles` workgroups per batch over k is split: enough
 * slices for about 512 workgroups, each slice at least 256 long; 1: none. WGT_MATMUL_SPLIT_K=0
 * turns it off (comparisons). On the H200 it took the default model's training from 58.3k to 73.6k
 * tok/s and GPT-2 small's from 2,083 to 2,242 (bench/results/h200/matmul_ab.txt). */
static int64_t split_k(int64_t tiles, int64_t K)
{
    const char *v = getenv("WGT_MATMUL_SPLIT_K");
    if (v && !strcmp(v, "0")) return 1;
    if (tiles >= 256 || K < 1024) return 1;
    int64_t s = (512 + tiles - 1) / tiles, most = K / 256;
    return s < most ? s : most;
}

static wgt_status int_kernel(wgt_context *ctx, wgt_dtype da, wgt_dtype db, wgt_dtype dc, wgt_kernel **k)
{
    return mm_kernel(ctx, MM_INT, da, db, dc, "main", k);
}

/* ---- the core -------------------------------------------------------------------------------- */

/* Run the tiled kernel k (params *p for the whole product, batch 1) as `slices` slices of k into a
 * scratch tensor, then `combine` them with alpha, beta C into bind[3] (columns from p->n0).
 * Also matmul_tcd.c's (its kernel reads p.tpr as the slice length and writes slice z at rows z * M). */
wgt_status mm_split_k(wgt_context *ctx, const mm_params *p, wgt_kernel *k, const wgt_binding *bind,
                      wgt_dtype dc, int64_t slices, uint32_t gx, uint32_t gy)
{
    uint64_t mn = (uint64_t)p->M * p->N;
    int64_t kc = ((int64_t)p->K + slices - 1) / slices;
    kc = (kc + 63) / 64 * 64; /* whole k steps of every kernel */
    slices = ((int64_t)p->K + kc - 1) / kc;
    if (mn * (uint64_t)slices > UINT32_MAX) return wgt_ctx_error(ctx, WGT_ERR_LIMIT, "matmul: k split past 2^32 elements");
    int64_t shape[1] = {(int64_t)(mn * (uint64_t)slices)};
    wgt_tensor *part;
    wgt_status st = wgt_tensor_new(ctx, WGT_F32, 1, shape, &part);
    if (st) return st;
    wgt_binding pb;
    int64_t pbase; /* 0: a new tensor, written and read from its start */
    if ((st = op_bind_all(part, &pb, &pbase))) {
        wgt_tensor_free(part);
        return st;
    }
    mm_params q = *p;
    q.alpha = 1, q.has_c = 0, q.ldo = q.N, q.n0 = 0, q.z0 = 0, q.tpr = (uint32_t)kc;
    wgt_binding b1[4] = {bind[0], bind[1], bind[2], pb};
    wgt_gpu_cost(ctx, 0, 2.0 * p->M * (double)p->N * p->K); /* WGT_PROFILE=1: bytes are the bound ranges */
    st = wgt_gpu_dispatch(ctx, k, &q, sizeof q, b1, 4, gx, gy, (uint32_t)slices);
    wgt_kernel *kc_k = NULL;
    if (!st) st = mm_kernel(ctx, MM_TILED, WGT_F32, WGT_F32, dc, "combine", &kc_k);
    if (!st) {
        mm_params r = *p;
        r.batch = (uint32_t)slices, r.off_a = 0, r.tpr = 0;
        wgt_binding b2[4] = {pb, pb, bind[2], bind[3]};
        uint32_t cx, cy;
        op_grid(ctx, (mn + op_workgroup_size(ctx) - 1) / op_workgroup_size(ctx), &cx, &cy);
        st = wgt_gpu_dispatch(ctx, kc_k, &r, sizeof r, b2, 4, cx, cy, 1);
    }
    wgt_tensor_free(part);
    return st;
}

/* Fold batch dims into M where A, C and the output step over them as over more rows and B repeats
 * (x [B, L, K] @ w: one [B * L, K] product), then drop size-1 batch dims and merge the rest where
 * all operands allow. Leaves at most WGT_MAX_DIMS - 2 batch dims in job->*.shape[0 .. *nb). */
static void mm_simplify(mm_job *j, int *nb_out)
{
    int nb = j->a.ndim - 2;
    wgt_layout *ls[3] = {&j->a, &j->b, &j->c};
    int nl = j->has_c ? 3 : 2;
    /* fold the innermost batch dim into M while possible */
    while (nb > 0) {
        int d = nb - 1;
        int64_t M = j->a.shape[nb];
        int ok = j->b.strides[d] == 0 || j->a.shape[d] == 1;
        ok = ok && (j->a.shape[d] == 1 || j->a.strides[d] == M * j->a.strides[nb] || M == 1);
        if (j->has_c) ok = ok && (j->a.shape[d] == 1 || j->c.strides[d] == M * j->c.strides[nb] || M == 1);
        if (!ok) break;
        for (int i = 0; i < nl; i++) {
            wgt_layout *l = ls[i];
            if (i != 1) { /* A and C: rows */
                if (M == 1) l->strides[nb] = l->strides[d];
                l->shape[nb] *= l->shape[d];
            }
        }
        for (int i = 0; i < nl; i++) { /* remove dim d */
            wgt_layout *l = ls[i];
            for (int e = d; e < l->ndim - 1; e++) l->shape[e] = l->shape[e + 1], l->strides[e] = l->strides[e + 1];
            l->ndim--;
        }
        nb--;
    }
    /* drop size-1 batch dims, then merge neighbours */
    int w = 0;
    for (int d = 0; d < nb; d++) {
        if (j->a.shape[d] == 1) continue;
        for (int i = 0; i < nl; i++) ls[i]->shape[w] = ls[i]->shape[d], ls[i]->strides[w] = ls[i]->strides[d];
        if (w > 0) {
            int merge = 1;
            for (int i = 0; i < nl; i++)
                merge = merge && ls[i]->strides[w - 1] == ls[i]->strides[w] * ls[i]->shape[w];
            if (merge) {
                for (int i = 0; i < nl; i++) ls[i]->shape[w - 1] *= ls[i]->shape[w], ls[i]->strides[w - 1] = ls[i]->strides[w];
                continue;
            }
        }
        w++;
    }
    for (int i = 0; i < nl; i++) {
        wgt_layout *l = ls[i];
        l->shape[w] = l->shape[nb], l->strides[w] = l->strides[nb];
        l->shape[w + 1] = l->shape[nb + 1], l->strides[w + 1] = l->strides[nb + 1];
        l->ndim = w + 2;
    }
    *nb_out = w;
}

/* Can layout l (dims [.., rows, K]) be read as vec4s along k? All offsets and strides but the
 * innermost in whole 16-byte units, k contiguous. */
static int vec_ok(const wgt_layout *l, int64_t base, int kdim)
{
    int epv = 16 / (int)wgt_dtype_size(l->dtype);
    if (l->strides[kdim] != 1 && l->shape[kdim] > 1) return 0;
    if ((l->offset - base) % epv) return 0;
    for (int d = 0; d < l->ndim; d++)
        if (d != kdim && l->shape[d] > 1 && l->strides[d] % epv) return 0;
    return 1;
}

/* How matmul_regs.wgsl loads an operand of layout l (dims [.., rows, K] or [.., K, rows]: its dim kd is
 * k, rd the rows): 1 in 16-byte words along k, 2 along the rows, where l is contiguous along that dim,
 * of whole words there (its extent a multiple of a word's elements) and every other stride and the
 * offset from the binding's start (element base) are whole words; else 0, one element a load. */
static int operand_mode(const wgt_layout *l, int64_t base, int rd, int kd)
{
    int epv = 16 / (int)wgt_dtype_size(l->dtype);
    if (!op_is_float(l->dtype) || wgt_dtype_size(l->dtype) > 4) return 0;
    for (int d = 0; d < l->ndim; d++)
        if (l->shape[d] == 0) return 0; /* nothing to read: no whole word to bind */
    for (int mode = 1; mode <= 2; mode++) {
        int fd = mode == 1 ? kd : rd;
        if (l->strides[fd] != 1 || l->shape[fd] % epv || (l->offset - base) % epv) continue;
        int ok = 1;
        for (int d = 0; d < l->ndim; d++)
            if (d != fd && l->shape[d] > 1 && l->strides[d] % epv) ok = 0;
        if (ok) return mode;
    }
    return 0;
}

/* The offset, strides and batch strides (bs[4 - nb ..]) of layout l in 16-byte words, for an
 * operand operand_mode took: dims nb and nb + 1 into *s0 and *s1 (the contiguous one becomes 1). */
static void operand_words(const wgt_layout *l, int64_t base, int nb, uint32_t *off, uint32_t *s0, uint32_t *s1,
                          uint32_t *bs)
{
    int epv = 16 / (int)wgt_dtype_size(l->dtype);
    *off = (uint32_t)((l->offset - base) / epv);
    *s0 = l->strides[nb] == 1 ? 1u : (uint32_t)(l->strides[nb] / epv);
    *s1 = l->strides[nb + 1] == 1 ? 1u : (uint32_t)(l->strides[nb + 1] / epv);
    for (int d = 0; d < nb; d++) bs[4 - nb + d] = (uint32_t)(l->strides[d] / epv);
}

static wgt_status fits_u32(wgt_context *ctx, int64_t v)
{
    if (v < 0 || v > (int64_t)UINT32_MAX)
        return wgt_ctx_error(ctx, WGT_ERR_LIMIT, "matmul: a size or stride past 2^32 elements");
    return WGT_OK;
}

/* An operand the integer kernel loads exactly as i32 (i64 would need both words). */
static int mm_int_operand(wgt_dtype d)
{
    return op_is_int(d) && d != WGT_I64;
}

/* 1 when mm_gpu can take the job into a result of dtype odt: at most 4 batch dims after
 * simplification; float operands for a float result; for an i32/u32 result integer operands, no
 * scaling (the reference sums such products exactly, others in double) and M * N in 32 bits. */
static int mm_gpu_ok(const mm_job *j, wgt_dtype odt)
{
    mm_job t = *j;
    int nb;
    mm_simplify(&t, &nb);
    if (nb > 4) return 0;
    if (op_is_float(odt))
        return op_is_float(j->a.dtype) && op_is_float(j->b.dtype) && (!j->has_c || op_is_float(j->c.dtype));
    if (odt != WGT_I32 && odt != WGT_U32) return 0;
    int64_t M = t.a.shape[nb], N = t.b.shape[nb + 1];
    return mm_int_operand(j->a.dtype) && mm_int_operand(j->b.dtype) && (!j->has_c || mm_int_operand(j->c.dtype)) &&
           j->alpha == 1 && (!j->has_c || j->beta == 1) && (N == 0 || M <= (int64_t)(UINT32_MAX / 2) / N);
}

/* Say what the product's one dispatch (mark: wgt_gpu_capture_mark before it) computed, so a
 * captured graph can merge it with products sharing its input (matmul_fuse.c) or fuse an
 * elementwise chain after it into its store (elementwise_fuse.c). key: its kernel's (key.kind 0
 * and cols 0: none chosen, no note); gemv: the kernel is matmul_gemv.wgsl (B through ldB8). */
static void mm_note_dispatch(wgt_context *ctx, int mark, const mm_key *key, const char *entry, uint32_t cols,
                             const mm_params *p, wgt_dtype db, wgt_dtype dc, int gemv, int64_t numel)
{
    if (!cols) return;
    mm_note n;
    memset(&n, 0, sizeof n);
    memcpy(n.h.key, key, sizeof *key);
    n.h.prelude = mm_prelude_ex;
    n.h.file = mm_file(key->kind), n.h.name = "matmul";
    n.h.n_bind = 4, n.h.in = 0, n.h.out = 3;
    n.h.unused = p->has_c ? 0u : 1u << 2; /* C's binding is A again, never read */
    n.h.in_var = "a", n.h.in_dt = (wgt_dtype)key->da;
    n.h.out_var = "out", n.h.st = "mm_st", n.h.st_type = "f32", n.h.out_dt = WGT_F32;
    n.h.out_numel = numel;
    n.h.st_elem = 1, n.h.mm = 1;
    /* the gemv kernel reads f32 A through ldA8, which a prologue builds from element loads */
    if (gemv && key->da == WGT_F32) n.h.ld = "ldA1", n.h.ld_type = "f32";
    n.entry = entry;
    n.db = db, n.dc = dc;
    n.cols = cols;
    n.grid2d = n.gemv = gemv;
    n.bload = gemv ? MM_LOAD_B8 : key->kind == MM_REGS && key->lb == 1 ? MM_LOAD_WORD : MM_LOAD_ELEM;
    n.krow = n.bload != MM_LOAD_ELEM ? (uint32_t)(p->K * wgt_dtype_size(db) / 16) : p->K;
    /* B read through a function of its index only: matmul.wgsl's ldB, matmul_gemv.wgsl's ldB8,
     * matmul_regs.wgsl's ldB or wordB along k (the tensor-core tiles read words of it directly) */
    n.merge = key->kind == MM_GEMV || key->kind == MM_TILED || key->kind == MM_TILED_BIG ||
              (key->kind == MM_REGS && key->lb != 2);
    wgt_gpu_capture_note(ctx, mark, EW_HOST_NOTE, &n, sizeof n);
}

/* out (contiguous, [batch.., M, N] in any grouping of those dims) = the job; out is f32, or i32/u32
 * for integer jobs (those mm_gpu_ok accepts). */
static wgt_status mm_gpu(wgt_context *ctx, const mm_job *job, wgt_tensor *out)
{
    int ints = !op_is_float(out->l.dtype);
    mm_job j = *job;
    int nb;
    mm_simplify(&j, &nb);
    if (nb > 4) return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "matmul: more than 4 batch dims reached the GPU path");
    int64_t M = j.a.shape[nb], K = j.a.shape[nb + 1], N = j.b.shape[nb + 1];
    int64_t batch = 1;
    for (int d = 0; d < nb; d++) batch *= j.a.shape[d];
    if (M == 0 || N == 0 || batch == 0) return WGT_OK;
    wgt_status st;
    if (!j.has_c) { /* the kernel still binds something there (A again, never read through it) */
        j.c = j.a;
        for (int d = 0; d < j.c.ndim; d++) j.c.strides[d] = 0;
        j.tc = j.ta;
    }
    mm_params p;
    memset(&p, 0, sizeof p);
    const int64_t sizes[] = {M, N, K, batch};
    for (int i = 0; i < 4; i++)
        if ((st = fits_u32(ctx, sizes[i]))) return st;
    p.M = (uint32_t)M, p.N = (uint32_t)N, p.K = (uint32_t)K, p.batch = (uint32_t)batch;
    p.has_c = (uint32_t)j.has_c;
    p.alpha = (float)j.alpha, p.beta = (float)j.beta;
    p.ldo = (uint32_t)N;
    for (int d = 0; d < 4; d++) p.bshape[d] = 1;
    for (int d = 0; d < nb; d++) {
        int s = 4 - nb + d;
        p.bshape[s] = (uint32_t)j.a.shape[d];
        if ((st = fits_u32(ctx, j.a.strides[d])) || (st = fits_u32(ctx, j.b.strides[d])) ||
            (st = fits_u32(ctx, j.has_c ? j.c.strides[d] : 0)))
            return st;
    }

    /* Split along N when B is larger than one binding (a big vocabulary's output projection on a
     * device with small bindings): each chunk binds its weight rows / columns. */
    uint64_t limit = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    int64_t blo, bhi;
    op_extent(&j.b, &blo, &bhi);
    uint64_t bbytes = (uint64_t)(bhi - blo + 1) * wgt_dtype_size(j.b.dtype);
    int64_t nchunks = bbytes > limit / 2 ? (int64_t)(bbytes / (limit / 2) + 1) : 1;
    int64_t nper = (N + nchunks - 1) / nchunks;
    nper = (nper + 127) / 128 * 128;

    wgt_binding bo_out;
    int64_t obase;
    if ((st = op_bind_all(out, &bo_out, &obase))) return st;
    for (int64_t n0 = 0; n0 < N; n0 += nper) {
        int64_t n1 = n0 + nper < N ? n0 + nper : N;
        wgt_layout la = j.a, lb = j.b, lc = j.c;
        lb.offset += n0 * lb.strides[nb + 1], lb.shape[nb + 1] = n1 - n0;
        lc.offset += n0 * lc.strides[nb + 1], lc.shape[nb + 1] = n1 - n0;
        wgt_binding bind[4];
        int64_t base[3], lo, hi;
        wgt_tensor ta = *j.ta, tb = *j.tb, tcc = *j.tc;
        ta.l = la, tb.l = lb, tcc.l = lc;
        const wgt_tensor *ts[3] = {&ta, &tb, &tcc};
        for (int i = 0; i < 3; i++) {
            op_extent(&ts[i]->l, &lo, &hi);
            if ((st = op_bind(ts[i], lo, hi, &bind[i], &base[i]))) return st;
        }
        bind[3] = bo_out;
        p.N = (uint32_t)(n1 - n0);
        p.n0 = (uint32_t)n0;
        /* matmul_gemv.wgsl's barrier-free entry (SwiftShader, wgt_gpu_avoid_barriers) also takes a short
         * prompt's prefill: the tiled kernels' barriers cost more there than re-reading the weights */
        int solo = wgt_gpu_avoid_barriers(ctx);
        /* A and B both read along k in 16-byte words (B [.., K, N]: the k dim is nb, rows are n) */
        int kvec = !ints && K > 0 && K % 8 == 0 && vec_ok(&la, base[0], nb + 1);
        if (kvec) {
            wgt_layout bt = lb; /* as [.., N, K] */
            bt.shape[nb] = lb.shape[nb + 1], bt.strides[nb] = lb.strides[nb + 1];
            bt.shape[nb + 1] = lb.shape[nb], bt.strides[nb + 1] = lb.strides[nb];
            kvec = vec_ok(&bt, base[1], nb + 1);
        }
        /* 5 .. 64 rows of one product read along k: matmul_rows.c (each weight piece once per 8 rows) */
        int few = kvec && batch == 1 && op_rows_take(ctx, M, MM_MAXM_GEMV + 1);
        int gemv = kvec && M <= (solo ? MM_MAXM_SOLO : few ? OP_ROWS_MAX : MM_MAXM_GEMV);
        /* the tensor cores with fragments from storage (matmul_tcd.c), where its policy takes it */
        if (!ints && !gemv && !few && batch == 1 && op_matmul_tcd_take(ctx, M, n1 - n0, K, la.dtype, lb.dtype)) {
            mm_params q = p;
            q.off_a = (uint32_t)(la.offset - base[0]), q.off_b = (uint32_t)(lb.offset - base[1]);
            q.off_c = (uint32_t)(lc.offset - base[2]);
            q.sam = (uint32_t)la.strides[nb], q.sak = (uint32_t)la.strides[nb + 1];
            q.sbk = (uint32_t)lb.strides[nb], q.sbn = (uint32_t)lb.strides[nb + 1];
            q.scm = (uint32_t)lc.strides[nb], q.scn = (uint32_t)lc.strides[nb + 1];
            if ((st = op_matmul_tcd(ctx, &q, bind, la.dtype, lb.dtype, lc.dtype))) return st;
            continue;
        }
        mm_tc tc;
        mm_key nk; /* the kernel's key, entry and output columns a workgroup, for mm_note_dispatch */
        memset(&nk, 0, sizeof nk);
        const char *nentry = "main";
        uint32_t ncols = 0;
        int use_tc = !ints && !gemv && tc_choose(ctx, M, n1 - n0, batch, la.dtype, lb.dtype, kvec, 0, &tc);
        wgt_kernel *k;
        uint32_t gx, gy;
        uint64_t groups;
        if (gemv || (use_tc && tc.vec)) { /* offsets and strides of A and B in 16-byte words */
            int epa = 16 / (int)wgt_dtype_size(la.dtype), epb = 16 / (int)wgt_dtype_size(lb.dtype);
            p.off_a = (uint32_t)((la.offset - base[0]) / epa);
            p.off_b = (uint32_t)((lb.offset - base[1]) / epb);
            p.sam = (uint32_t)(la.strides[nb] / epa);
            p.sbn = (uint32_t)(lb.strides[nb + 1] / epb);
            p.sak = p.sbk = 1;
            for (int d = 0; d < nb; d++) {
                p.bsa[4 - nb + d] = (uint32_t)(la.strides[d] / epa);
                p.bsb[4 - nb + d] = (uint32_t)(lb.strides[d] / epb);
            }
        }
        if (few) {
            op_rows_params r = {p.M, p.N, p.K, 0, p.off_a, p.sam, p.off_b, p.sbn, (uint32_t)(lc.offset - base[2]),
                                (uint32_t)lc.strides[nb], (uint32_t)lc.strides[nb + 1], p.has_c, p.alpha, p.beta,
                                p.n0, p.ldo, 0, {0}};
            if ((st = op_rows_run(ctx, la.dtype, lb.dtype, (wgt_ftype)0, lc.dtype, &r, bind))) return st;
            continue;
        }
        if (gemv) {
            /* 8 rows per workgroup (32 invocations a row) streamed best on the H200 at every size
             * measured; fewer when that would leave under 256 workgroups */
            int wg = (int)op_workgroup_size(ctx), rows = wg / 32;
            while (rows > 2 && (n1 - n0) / rows < 256) rows /= 2;
            if (rows < 1) rows = 1;
            p.tpr = (uint32_t)(wg / rows);
            if (solo) rows = 64, p.tpr = 1; /* one invocation a column, 64 a workgroup */
            if ((st = gemv_kernel(ctx, la.dtype, lb.dtype, lc.dtype, solo ? "solo" : "main", &k))) return st;
            groups = ((uint64_t)(n1 - n0) + rows - 1) / rows;
            nk = mm_key_of(ctx, MM_GEMV, la.dtype, lb.dtype, lc.dtype, NULL), ncols = (uint32_t)rows;
            nentry = solo ? "solo" : "main";
        } else {
            if (!(use_tc && tc.vec)) {
                p.off_a = (uint32_t)(la.offset - base[0]);
                p.off_b = (uint32_t)(lb.offset - base[1]);
                p.sam = (uint32_t)la.strides[nb], p.sak = (uint32_t)la.strides[nb + 1];
                p.sbk = (uint32_t)lb.strides[nb], p.sbn = (uint32_t)lb.strides[nb + 1];
                for (int d = 0; d < nb; d++) {
                    p.bsa[4 - nb + d] = (uint32_t)la.strides[d];
                    p.bsb[4 - nb + d] = (uint32_t)lb.strides[d];
                }
            }
            if (ints) {
                if ((st = int_kernel(ctx, la.dtype, lb.dtype, lc.dtype, &k))) return st;
                uint32_t wg = op_workgroup_size(ctx);
                groups = ((uint64_t)M * (uint64_t)(n1 - n0) + wg - 1) / wg;
            } else {
                int tm, tn;
                if (use_tc) {
                    st = mm_kernel_tc(ctx, MM_TC, la.dtype, lb.dtype, lc.dtype, "main", &tc, &k);
                    nk = mm_key_of(ctx, MM_TC, la.dtype, lb.dtype, lc.dtype, &tc);
                    tm = tc.bm, tn = tc.bn;
                } else {
                    mm_tile t;
                    int ma = operand_mode(&la, base[0], nb, nb + 1), mb = operand_mode(&lb, base[1], nb + 1, nb);
                    if (regs_choose(ctx, M, n1 - n0, batch, la.dtype, lb.dtype, ma, mb, &t)) {
                        if (t.la) operand_words(&la, base[0], nb, &p.off_a, &p.sam, &p.sak, p.bsa);
                        if (t.lb) operand_words(&lb, base[1], nb, &p.off_b, &p.sbk, &p.sbn, p.bsb);
                        st = regs_kernel(ctx, &t, la.dtype, lb.dtype, lc.dtype, &k);
                        nk = regs_key_of(&t, la.dtype, lb.dtype, lc.dtype);
                        nentry = regs_entry(&t);
                        tm = t.bm, tn = t.bn;
                    } else {
                        int big = tiled_big(ctx, M, n1 - n0);
                        st = tiled_kernel(ctx, big, la.dtype, lb.dtype, lc.dtype, &k);
                        nk = mm_key_of(ctx, big ? MM_TILED_BIG : MM_TILED, la.dtype, lb.dtype, lc.dtype, NULL);
                        tm = tn = big ? 128 : 64;
                    }
                }
                if (st) return st;
                groups = 0;
                gx = (uint32_t)((n1 - n0 + tn - 1) / tn);
                gy = (uint32_t)((M + tm - 1) / tm);
                ncols = (uint32_t)tn;
                int64_t slices = batch == 1 && nchunks == 1 ? split_k((int64_t)gx * gy, K) : 1;
                if (slices > 1) {
                    p.off_c = (uint32_t)(lc.offset - base[2]);
                    p.scm = (uint32_t)lc.strides[nb], p.scn = (uint32_t)lc.strides[nb + 1];
                    if ((st = mm_split_k(ctx, &p, k, bind, lc.dtype, slices, gx, gy)))
                        return st;
                    continue;
                }
            }
        }
        p.off_c = (uint32_t)(lc.offset - base[2]);
        p.scm = (uint32_t)lc.strides[nb], p.scn = (uint32_t)lc.strides[nb + 1];
        for (int d = 0; d < nb; d++) p.bsc[4 - nb + d] = (uint32_t)lc.strides[d];
        if (gemv || ints) op_grid(ctx, groups, &gx, &gy);
        uint32_t zmax = wgt_gpu_limits(ctx)->max_compute_workgroups_per_dimension;
        if (zmax == 0) zmax = 65535;
        /* one dispatch for the whole product: a graph may fuse it (mm_note) */
        int mark = nchunks == 1 && batch <= zmax && !ints ? wgt_gpu_capture_mark(ctx) : -1;
        for (int64_t z0 = 0; z0 < batch; z0 += zmax) {
            p.z0 = (uint32_t)z0;
            uint32_t gz = (uint32_t)(batch - z0 < zmax ? batch - z0 : zmax);
            wgt_gpu_cost(ctx, 0, 2.0 * p.M * (double)p.N * p.K * gz); /* WGT_PROFILE=1 */
            if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, bind, 4, gx, gy, gz))) return st;
        }
        if (mark >= 0) mm_note_dispatch(ctx, mark, &nk, nentry, ncols, &p, lb.dtype, lc.dtype, gemv, wgt_tensor_numel(out));
    }
    return WGT_OK;
}

wgt_status mm_quant_bind(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *bias, int64_t tokens,
                         int64_t rows, int64_t cols, wgt_tensor *y, wgt_binding bind[4], mm_params *p)
{
    int64_t row_bytes = w->l.shape[1], base[3], obase;
    wgt_status st;
    if ((st = op_bind(x, x->l.offset, x->l.offset + tokens * cols - 1, &bind[0], &base[0])) ||
        (st = op_bind(w, w->l.offset, w->l.offset + rows * row_bytes + 3, &bind[1], &base[1])) ||
        (st = op_bind(y, y->l.offset, y->l.offset + tokens * rows - 1, &bind[3], &obase)))
        return st;
    if (bias) {
        if ((st = op_bind(bias, bias->l.offset, bias->l.offset + rows - 1, &bind[2], &base[2]))) return st;
    } else
        bind[2] = bind[0], base[2] = 0;
    memset(p, 0, sizeof *p);
    p->M = (uint32_t)tokens, p->N = (uint32_t)rows, p->K = (uint32_t)cols, p->batch = 1;
    p->off_a = (uint32_t)((x->l.offset - base[0]) / 4), p->sam = (uint32_t)(cols / 4), p->sak = 1;
    p->off_b = (uint32_t)(w->l.offset - base[1]), p->sbn = (uint32_t)row_bytes, p->sbk = 1;
    p->has_c = bias != NULL, p->off_c = bias ? (uint32_t)(bias->l.offset - base[2]) : 0, p->scn = 1;
    p->alpha = 1, p->beta = 1;
    for (int d = 0; d < 4; d++) p->bshape[d] = 1;
    p->ldo = (uint32_t)rows, p->n0 = (uint32_t)(y->l.offset - obase);
    return WGT_OK;
}

/* Quantized weights through the tiles (declared in ops.h): x as A in 16-byte words, the blocks as
 * B ([n] rows of row_bytes bytes from byte off_b: p.sbn = row_bytes), bias as C broadcast over
 * rows. Only with WGT_MATMUL_TC_QUANT=1 (and WGT_MATMUL_TC's policy): on the H200 Qwen2.5-0.5B
 * q8_0 / q4_0 prefill ran at 694 / 674 tok/s through them against 2,078 / 1,926 with qlinear.wgsl
 * (single runs, the pipelines compiled cold; a warm profile: 1.26 ms a product). */
wgt_status op_matmul_tc_quant(wgt_context *ctx, int type, const wgt_tensor *x, const wgt_tensor *w,
                              const wgt_tensor *bias, int64_t tokens, int64_t rows, int64_t cols, wgt_tensor *y,
                              int *done)
{
    *done = 0;
    mm_tc tc;
    int64_t row_bytes = w->l.shape[1];
    uint64_t limit = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    const char *q = getenv("WGT_MATMUL_TC_QUANT");
    if (!q || strcmp(q, "1") || tokens <= MM_MAXM_GEMV || cols % 32 || x->l.dtype != WGT_F32 || x->l.offset % 4 || y->l.offset ||
        (uint64_t)(tokens * cols) * 4 + 256 > limit || (uint64_t)(rows * row_bytes) + 260 > limit ||
        (uint64_t)(tokens * rows) * 4 > limit || tokens * cols > UINT32_MAX / 2 || rows * row_bytes > UINT32_MAX / 2 ||
        !tc_choose(ctx, tokens, rows, 1, WGT_F32, WGT_F16, 0, type, &tc))
        return WGT_OK;
    wgt_kernel *k;
    wgt_status st = mm_kernel_tc(ctx, MM_TC, WGT_F32, WGT_U8, WGT_F32, "main", &tc, &k);
    if (st) return st;
    wgt_binding bind[4];
    mm_params p;
    if ((st = mm_quant_bind(x, w, bias, tokens, rows, cols, y, bind, &p))) return st;
    uint32_t gx = (uint32_t)((rows + tc.bn - 1) / tc.bn), gy = (uint32_t)((tokens + tc.bm - 1) / tc.bm);
    int64_t slices = split_k((int64_t)gx * gy, cols);
    *done = 1;
    if (slices > 1) return mm_split_k(ctx, &p, k, bind, WGT_F32, slices, gx, gy);
    wgt_gpu_cost(ctx, 0, 2.0 * p.M * (double)p.N * p.K); /* WGT_PROFILE=1 */
    return wgt_gpu_dispatch(ctx, k, &p, sizeof p, bind, 4, gx, gy, 1);
}

/* Run the job into a new tensor of (ndim, shape) and dtype odt (float results through f32). */
static wgt_status mm_run(wgt_context *ctx, const mm_job *j, int ndim, const int64_t *shape, wgt_dtype odt,
                         wgt_tensor **out)
{
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, op_is_float(odt) ? WGT_F32 : odt, ndim, shape, &y);
    if (st) return st;
    if ((st = mm_gpu(ctx, j, y))) {
        wgt_tensor_free(y);
        return st;
    }
    if (odt == WGT_F32 || !op_is_float(odt)) {
        *out = y;
        return WGT_OK;
    }
    st = wgt_tensor_cast(y, odt, out);
    wgt_tensor_free(y);
    return st;
}

static wgt_status need_float_or_int(wgt_context *ctx, const char *op, const wgt_tensor *t)
{
    if (t->l.dtype == WGT_BOOL)
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: bool tensors have no product; cast them first", op);
    return WGT_OK;
}

/* ---- matmul ---------------------------------------------------------------------------------- */

static wgt_status matmul_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_matmul(&in[0], &in[1], &out[0]);
}

static wgt_status matmul_impl(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    OP_BEGIN(a, out);
    const wgt_tensor *ins[2] = {a, b};
    wgt_status st = op_same_context("matmul", ins, 2);
    if (st || (st = need_float_or_int(ctx, "matmul", a)) || (st = need_float_or_int(ctx, "matmul", b))) return st;
    int na = a->l.ndim, nbd = b->l.ndim;
    if (na < 1 || nbd < 1)
        return op_fail(ctx, WGT_ERR_SHAPE, "matmul: operands need at least 1 dim (got %d and %d)", na, nbd);
    /* 1-D operands gain a dim: a [K] -> [1, K], b [K] -> [K, 1] */
    wgt_layout a2 = a->l, b2 = b->l;
    if (na == 1) {
        a2.ndim = 2, a2.shape[1] = a->l.shape[0], a2.strides[1] = a->l.strides[0];
        a2.shape[0] = 1, a2.strides[0] = 0;
    }
    if (nbd == 1) {
        b2.ndim = 2, b2.shape[0] = b->l.shape[0], b2.strides[0] = b->l.strides[0];
        b2.shape[1] = 1, b2.strides[1] = 0;
    }
    int64_t M = a2.shape[a2.ndim - 2], K = a2.shape[a2.ndim - 1], N = b2.shape[b2.ndim - 1];
    if (b2.shape[b2.ndim - 2] != K)
        return op_fail(ctx, WGT_ERR_SHAPE, "matmul: inner sizes differ: a has %lld columns, b %lld rows", (long long)K,
                       (long long)b2.shape[b2.ndim - 2]);
    /* broadcast the batch dims */
    wgt_layout ba = a2, bb = b2;
    ba.ndim -= 2, bb.ndim -= 2;
    int nbatch;
    int64_t full[WGT_MAX_DIMS + 2];
    if ((st = op_broadcast_shape(ctx, "matmul", &ba, &bb, &nbatch, full))) return st;
    if (nbatch + 2 > WGT_MAX_DIMS) return op_fail(ctx, WGT_ERR_SHAPE, "matmul: more than %d dims", WGT_MAX_DIMS);
    int64_t ashape[WGT_MAX_DIMS], bshape[WGT_MAX_DIMS];
    memcpy(ashape, full, sizeof(int64_t) * nbatch);
    memcpy(bshape, full, sizeof(int64_t) * nbatch);
    ashape[nbatch] = M, ashape[nbatch + 1] = K, bshape[nbatch] = K, bshape[nbatch + 1] = N;
    mm_job j = {a, b, NULL, {0}, {0}, {0}, 0, 1, 0};
    op_broadcast_layout(&a2, nbatch + 2, ashape, &j.a);
    op_broadcast_layout(&b2, nbatch + 2, bshape, &j.b);
    /* broadcast_layout zeroes strides where sizes differ; the 1-D promotions are already right */
    int ond = 0;
    int64_t oshape[WGT_MAX_DIMS];
    for (int d = 0; d < nbatch; d++) oshape[ond++] = full[d];
    if (na > 1) oshape[ond++] = M;
    if (nbd > 1) oshape[ond++] = N;
    wgt_dtype odt = op_promote(a->l.dtype, b->l.dtype);
    int gpu_ok = mm_gpu_ok(&j, odt);
    if (op_use_gpu(ctx, "matmul", odt, gpu_ok)) return mm_run(ctx, &j, ond, oshape, odt, out);
    if ((st = op_fallback_status(ctx, "matmul", odt, gpu_ok))) return st;
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, odt, ond, oshape, &y))) return st;
    return op_finish(op_reference(ctx, matmul_ref, NULL, ins, 2, &y, 1), y, out);
}

/* Autograd records the product as one node (src/tensor/record.h). */
wgt_status wgt_matmul(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {a, b};
    return op_record(matmul_impl(a, b, out), OP_GRAD_MATMUL, in, 2, NULL, 0, out);
}

/* ---- linear ---------------------------------------------------------------------------------- */

static wgt_status linear_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_linear(&in[0], &in[1], in[2].data ? &in[2] : NULL, &out[0]);
}

static wgt_status linear_impl(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *bias, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const wgt_tensor *ins[3] = {x, w, bias};
    wgt_status st = op_same_context("linear", ins, bias ? 3 : 2);
    if (st || (st = need_float_or_int(ctx, "linear", x)) || (st = need_float_or_int(ctx, "linear", w))) return st;
    int nd = x->l.ndim;
    if (nd < 1 || nd + 1 > WGT_MAX_DIMS || w->l.ndim != 2 || w->l.shape[1] != x->l.shape[nd - 1])
        return op_fail(ctx, WGT_ERR_SHAPE, "linear: x [..., I] and w [O, I] do not fit (x has %d dims, last %lld; w has %d dims)",
                       nd, nd ? (long long)x->l.shape[nd - 1] : 0LL, w->l.ndim);
    int64_t O = w->l.shape[0], I = w->l.shape[1];
    if (bias && (bias->l.ndim != 1 || bias->l.shape[0] != O))
        return op_fail(ctx, WGT_ERR_SHAPE, "linear: bias must be [%lld]", (long long)O);
    /* x [lead.., I] as [lead[:-1].., rows, I] times w^T [I, O] (a view), repeated over the lead dims */
    mm_job j = {x, w, bias, {0}, {0}, {0}, bias != NULL, 1, 1};
    j.a = x->l;
    if (nd == 1) { /* [I] -> [1, I] */
        j.a.ndim = 2, j.a.shape[1] = I, j.a.strides[1] = x->l.strides[0], j.a.shape[0] = 1, j.a.strides[0] = 0;
    }
    int n = j.a.ndim; /* batch dims n - 2 */
    j.b = w->l;
    j.b.ndim = n;
    for (int d = 0; d < n - 2; d++) j.b.shape[d] = j.a.shape[d], j.b.strides[d] = 0;
    j.b.shape[n - 2] = I, j.b.strides[n - 2] = w->l.strides[1];
    j.b.shape[n - 1] = O, j.b.strides[n - 1] = w->l.strides[0];
    j.b.offset = w->l.offset;
    if (bias) {
        j.c = bias->l;
        j.c.ndim = n;
        for (int d = 0; d < n - 1; d++) j.c.shape[d] = j.a.shape[d], j.c.strides[d] = 0;
        j.c.shape[n - 1] = O, j.c.strides[n - 1] = bias->l.strides[0];
    }
    int64_t oshape[WGT_MAX_DIMS];
    memcpy(oshape, x->l.shape, sizeof(int64_t) * nd);
    oshape[nd - 1] = O;
    wgt_dtype odt = op_promote(x->l.dtype, w->l.dtype);
    if (bias) odt = op_promote(odt, bias->l.dtype);
    int gpu_ok = mm_gpu_ok(&j, odt);
    if (op_use_gpu(ctx, "linear", odt, gpu_ok)) return mm_run(ctx, &j, nd, oshape, odt, out);
    if ((st = op_fallback_status(ctx, "linear", odt, gpu_ok))) return st;
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, odt, nd, oshape, &y))) return st;
    return op_finish(op_reference(ctx, linear_ref, NULL, ins, 3, &y, 1), y, out);
}

wgt_status wgt_linear(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *bias, wgt_tensor **out)
{
    const wgt_tensor *in[3] = {x, w, bias};
    return op_record(linear_impl(x, w, bias, out), OP_GRAD_LINEAR, in, 3, NULL, 0, out);
}

/* ---- addmm, baddbmm, outer ------------------------------------------------------------------- */

typedef struct addmm_arg {
    int nd;
    double beta, alpha;
} addmm_arg;

static wgt_status addmm_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    addmm_arg *a = arg;
    const wgt_cpu_tensor *self = in[0].data ? &in[0] : NULL;
    if (a->nd == 2) return wgt_cpu_addmm(self, &in[1], &in[2], a->beta, a->alpha, &out[0]);
    return wgt_cpu_baddbmm(self, &in[1], &in[2], a->beta, a->alpha, &out[0]);
}

static wgt_status addmm_impl(const char *op, int nd, const wgt_tensor *self, const wgt_tensor *m1, const wgt_tensor *m2,
                             double beta, double alpha, wgt_tensor **out);

/* beta self + alpha m1 m2, recorded as one node (the gradient of self is beta g, summed to its shape) */
static wgt_status addmm_nd(const char *op, int nd, const wgt_tensor *self, const wgt_tensor *m1, const wgt_tensor *m2,
                           double beta, double alpha, wgt_tensor **out)
{
    const wgt_tensor *in[3] = {self, m1, m2};
    double rec[2] = {beta, alpha};
    return op_record(addmm_impl(op, nd, self, m1, m2, beta, alpha, out), OP_GRAD_ADDMM, in, 3, rec, sizeof rec, out);
}

static wgt_status addmm_impl(const char *op, int nd, const wgt_tensor *self, const wgt_tensor *m1, const wgt_tensor *m2,
                             double beta, double alpha, wgt_tensor **out)
{
    OP_BEGIN(m1, out);
    const wgt_tensor *ins[3] = {m1, m2, self};
    wgt_status st = op_same_context(op, ins, self ? 3 : 2);
    if (st || (st = need_float_or_int(ctx, op, m1)) || (st = need_float_or_int(ctx, op, m2))) return st;
    if (m1->l.ndim != nd || m2->l.ndim != nd || m1->l.shape[nd - 1] != m2->l.shape[nd - 2] ||
        (nd == 3 && m1->l.shape[0] != m2->l.shape[0]))
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: needs %s with matching inner sizes", op,
                       nd == 2 ? "m1 [M, K] and m2 [K, N]" : "b1 [B, M, K] and b2 [B, K, N]");
    int64_t oshape[3];
    for (int d = 0; d < nd - 1; d++) oshape[d] = m1->l.shape[d];
    oshape[nd - 1] = m2->l.shape[nd - 1];
    mm_job j = {m1, m2, self, m1->l, m2->l, {0}, self && beta != 0, alpha, beta};
    if (self) {
        wgt_layout o;
        wgt_layout_contiguous(&o, WGT_F32, nd, oshape);
        int ndim;
        int64_t bs[WGT_MAX_DIMS];
        if ((st = op_broadcast_shape(ctx, op, &self->l, &o, &ndim, bs))) return st;
        if (ndim != nd || memcmp(bs, oshape, sizeof(int64_t) * nd))
            return op_fail(ctx, WGT_ERR_SHAPE, "%s: self does not broadcast to the product's shape", op);
        op_broadcast_layout(&self->l, nd, oshape, &j.c);
    }
    wgt_dtype odt = op_promote(m1->l.dtype, m2->l.dtype);
    if (self) odt = op_promote(odt, self->l.dtype);
    int gpu_ok = mm_gpu_ok(&j, odt);
    if (op_use_gpu(ctx, op, odt, gpu_ok)) return mm_run(ctx, &j, nd, oshape, odt, out);
    if ((st = op_fallback_status(ctx, op, odt, gpu_ok))) return st;
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, odt, nd, oshape, &y))) return st;
    addmm_arg arg = {nd, beta, alpha};
    const wgt_tensor *rin[3] = {self, m1, m2};
    return op_finish(op_reference(ctx, addmm_ref, &arg, rin, 3, &y, 1), y, out);
}

wgt_status wgt_addmm(const wgt_tensor *self, const wgt_tensor *m1, const wgt_tensor *m2, double beta, double alpha,
                     wgt_tensor **out)
{
    return addmm_nd("addmm", 2, self, m1, m2, beta, alpha, out);
}

wgt_status wgt_baddbmm(const wgt_tensor *self, const wgt_tensor *b1, const wgt_tensor *b2, double beta, double alpha,
                       wgt_tensor **out)
{
    return addmm_nd("baddbmm", 3, self, b1, b2, beta, alpha, out);
}

wgt_status wgt_outer(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    OP_BEGIN(a, out);
    const wgt_tensor *ins[2] = {a, b};
    wgt_status st = op_same_context("outer", ins, 2);
    if (st) return st;
    if (a->l.ndim != 1 || b->l.ndim != 1) return op_fail(ctx, WGT_ERR_SHAPE, "outer: needs two 1-D tensors");
    /* a [N] as [N, 1] times b [M] as [1, M] */
    wgt_tensor *a2, *b2;
    if ((st = wgt_tensor_unsqueeze(a, 1, &a2))) return st;
    if ((st = wgt_tensor_unsqueeze(b, 0, &b2))) {
        wgt_tensor_free(a2);
        return st;
    }
    st = wgt_matmul(a2, b2, out);
    wgt_tensor_free(a2);
    wgt_tensor_free(b2);
    return st;
}
