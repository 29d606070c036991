/* Random numbers: the generator (seed, offset) and uniform, normal, bernoulli, randint, randperm,
 * multinomial, dropout, random_bits. One kernel (src/kernels/random.wgsl) computes Philox4x32-10
 * blocks; the stream and every mapping are defined in src/cpu/random.h, which the CPU reference
 * follows word for word. A call starts at the block offset / 4 and advances the offset by the
 * words it used, rounded up to whole blocks, so successive calls differ and a reseed replays. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/random.h"
#include "ops/index_shape.h"
#include "ops/ops.h"
#include "ops/random.h"
#include "tensor/record.h"

struct wgt_generator {
    uint64_t seed;
    uint64_t offset; /* 32-bit words of the stream consumed, a multiple of 4 */
};

wgt_status wgt_generator_create(uint64_t seed, wgt_generator **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "generator_create: NULL out");
    *out = calloc(1, sizeof **out);
    if (!*out) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "generator_create: out of host memory");
    (*out)->seed = seed;
    return WGT_OK;
}

void wgt_generator_free(wgt_generator *g) { free(g); }

void wgt_generator_manual_seed(wgt_generator *g, uint64_t seed)
{
    if (g) g->seed = seed, g->offset = 0;
}

uint64_t wgt_generator_seed(const wgt_generator *g) { return g ? g->seed : 0; }
uint64_t wgt_generator_offset(const wgt_generator *g) { return g ? g->offset : 0; }

void wgt_generator_set_offset(wgt_generator *g, uint64_t offset)
{
    if (g) g->offset = (offset + 3) & ~(uint64_t)3;
}

/* The call's first block, and the offset moved past `words` words. */
static uint64_t take(wgt_generator *g, uint64_t words)
{
    uint64_t block = g->offset / 4;
    g->offset += (words + 3) & ~(uint64_t)3;
    return block;
}

/* ---- the kernel ----------------------------------------------------------------------------- */

enum { K_BITS, K_UNIFORM, K_NORMAL, K_BERNOULLI, K_RANDINT, K_DROPOUT, K_RANDPERM, K_MULTINOMIAL, K_SHUFFLE };

typedef struct rnd_params {
    uint32_t n, blk_lo, blk_hi, c2, c3, k0, k1, x_off, out_w0, aux_w0, ia, range;
    float a, b;
    uint32_t K, S, C, e0, has_x, repl;
} rnd_params;

static wgt_status rnd_kernel(wgt_context *ctx, int kind, wgt_dtype xdt, wgt_dtype odt, int has_mask, wgt_kernel **k)
{
    char pre[12288];
    const char *ct = op_compute_type(odt);
    snprintf(pre, sizeof pre,
             "%s\nalias CT = %s;\nconst KIND: u32 = %du;\nconst PACK: u32 = %du;\nconst HAS_MASK: bool = %s;\n"
             "const WG: u32 = %uu;\n",
             op_wgsl_lib(), ct, kind, op_pack(odt), has_mask ? "true" : "false", op_workgroup_size(ctx));
    op_wgsl_loader(pre, sizeof pre, "ldx", "xs", xdt, "f32");
    op_wgsl_storer(pre, sizeof pre, "st", "out", odt, ct);
    op_wgsl_storer(pre, sizeof pre, "stm", "aux", WGT_BOOL, ct);
    if (strlen(pre) + 1 >= sizeof pre) return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "random: kernel prelude too long");
    return wgt_gpu_kernel(ctx, "random", pre, "main", NULL, 0, k);
}

/* The seed's two words may come from a graph scalar (a WGT_GRAPH_SEED scalar with the seed's value):
 * declared before each dispatch that reads them. */
static void seed_fields(wgt_context *ctx, uint64_t seed)
{
    wgt_gpu_param_scalar(ctx, offsetof(rnd_params, k0), WGT_PARAM_U32, WGT_GRAPH_SEED, (int64_t)seed, 1, 0);
    wgt_gpu_param_scalar(ctx, offsetof(rnd_params, k1), WGT_PARAM_U32_HI, WGT_GRAPH_SEED, (int64_t)seed, 1, 0);
}

/* Elementwise kinds over y (contiguous, numel n): element e of the call uses block `block` + e / 4.
 * x (contiguous, y's numel, or NULL) is read; mask (bool, contiguous, or NULL) written. The work
 * splits into dispatches of whole blocks that fit one binding. */
static wgt_status rnd_elementwise(wgt_context *ctx, int kind, uint64_t seed, uint64_t block, const uint32_t c23[2],
                                  const wgt_tensor *x, wgt_tensor *y, wgt_tensor *mask, const rnd_params *tmpl)
{
    int64_t n = wgt_layout_numel(&y->l);
    if (n == 0) return WGT_OK;
    wgt_kernel *k;
    wgt_status st = rnd_kernel(ctx, kind, x ? x->l.dtype : WGT_F32, y->l.dtype, mask != NULL, &k);
    if (st) return st;
    uint64_t limit = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    uint64_t esz = wgt_dtype_size(y->l.dtype);
    if (x && wgt_dtype_size(x->l.dtype) > esz) esz = wgt_dtype_size(x->l.dtype);
    int64_t per = (int64_t)((limit > 1024 ? limit - 1024 : limit) / esz) & ~(int64_t)1023;
    if (per > ((int64_t)1 << 30)) per = (int64_t)1 << 30;
    if (per < 1024) return op_fail(ctx, WGT_ERR_LIMIT, "random: storage bindings of %llu bytes are too small",
                                   (unsigned long long)limit);
    wgt_binding b[3];
    /* unused bindings: scratch ranges of the context's index-error buffer (never written here) */
    if (!x) st = index_dummy_bind(ctx, 1, &b[0]);
    if (!st && !mask) st = index_dummy_bind(ctx, 2, &b[2]);
    for (int64_t e0 = 0; !st && e0 < n; e0 += per) {
        int64_t e1 = e0 + per < n ? e0 + per : n, base;
        rnd_params p = *tmpl;
        uint64_t blk = kind == K_RANDPERM ? block : block + (uint64_t)e0 / 4; /* randperm: the key */
        p.n = (uint32_t)(e1 - e0);
        p.blk_lo = (uint32_t)blk, p.blk_hi = (uint32_t)(blk >> 32);
        p.c2 = c23 ? c23[0] : 0, p.c3 = c23 ? c23[1] : 0;
        p.k0 = (uint32_t)seed, p.k1 = (uint32_t)(seed >> 32);
        p.e0 = (uint32_t)e0;
        if (x) {
            if ((st = op_bind(x, x->l.offset + e0, x->l.offset + e1 - 1, &b[0], &base))) break;
            p.x_off = (uint32_t)(x->l.offset + e0 - base);
        }
        if ((st = op_bind(y, e0, e1 - 1, &b[1], &base))) break;
        p.out_w0 = (uint32_t)((e0 - base) / op_pack(y->l.dtype));
        if (mask) {
            if ((st = op_bind(mask, e0, e1 - 1, &b[2], &base))) break;
            p.aux_w0 = (uint32_t)((e0 - base) / 4);
        }
        uint64_t blocks = (uint64_t)(p.n + 3) / 4;
        uint32_t gx, gy;
        uint64_t wg = op_workgroup_size(ctx);
        op_grid(ctx, (blocks + wg - 1) / wg, &gx, &gy);
        seed_fields(ctx, seed);
        st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 3, gx, gy, 1);
    }
    return st;
}

/* ---- the reference -------------------------------------------------------------------------- */

typedef struct rnd_ref_arg {
    int kind, has_mask, has_x, replacement;
    uint64_t seed, block;
    float a, b;
    double mean, std;
    int64_t lo;
    uint32_t range;
} rnd_ref_arg;

static wgt_status rnd_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    rnd_ref_arg *r = arg;
    switch (r->kind) {
    case K_BITS: return wgt_cpu_random_bits(r->seed, r->block, &out[0]);
    case K_UNIFORM: return wgt_cpu_uniform(r->seed, r->block, r->a, r->b, &out[0]);
    case K_NORMAL: return wgt_cpu_normal(r->seed, r->block, r->mean, r->std, &out[0]);
    case K_BERNOULLI: return wgt_cpu_bernoulli(r->seed, r->block, r->has_x ? &in[0] : NULL, r->a, &out[0]);
    case K_RANDINT: return wgt_cpu_randint(r->seed, r->block, r->lo, r->range, &out[0]);
    case K_RANDPERM: return wgt_cpu_randperm(r->seed, r->block, &out[0]);
    case K_MULTINOMIAL: return wgt_cpu_multinomial(r->seed, r->block, &in[0], r->replacement, &out[0]);
    default: return wgt_cpu_dropout(r->seed, r->block, &in[0], r->a, r->b, &out[0], r->has_mask ? &out[1] : NULL);
    }
}

/* ---- argument checks ------------------------------------------------------------------------ */

static wgt_status check_common(wgt_context *ctx, wgt_generator *gen, const char *op, wgt_dtype dt, uint32_t ok_dtypes)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (!gen) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: NULL generator (make one with wgt_generator_create)", op);
    if ((unsigned)dt >= WGT_DTYPE_COUNT || !(ok_dtypes & (1u << dt))) {
        char list[128] = "";
        for (int d = 0; d < WGT_DTYPE_COUNT; d++)
            if (ok_dtypes & (1u << d))
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "",
                         wgt_dtype_name((wgt_dtype)d));
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: dtype %s is not supported (takes %s)", op,
                       (unsigned)dt < WGT_DTYPE_COUNT ? wgt_dtype_name(dt) : "(unknown)", list);
    }
    return WGT_OK;
}

static wgt_status check_shape(wgt_context *ctx, const char *op, int ndim, const int64_t *shape)
{
    if (ndim < 0 || ndim > WGT_MAX_DIMS || (ndim && !shape))
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: ndim %d must be in 0..%d with a shape", op, ndim, WGT_MAX_DIMS);
    for (int d = 0; d < ndim; d++)
        if (shape[d] < 0) return op_fail(ctx, WGT_ERR_SHAPE, "%s: negative size %lld in dim %d", op, (long long)shape[d], d);
    return WGT_OK;
}

#define FLOATS ((1u << WGT_F32) | (1u << WGT_F16) | (1u << WGT_BF16))
#define INTS ((1u << WGT_I32) | (1u << WGT_U32) | (1u << WGT_I8) | (1u << WGT_U8) | (1u << WGT_I64))

/* A new tensor filled by kind on the GPU or the reference. x: an input (contiguous on the GPU path). */
static wgt_status rnd_create(wgt_context *ctx, const char *op, int kind, rnd_ref_arg *ra, const rnd_params *tmpl,
                             const wgt_tensor *x, wgt_dtype dt, int ndim, const int64_t *shape, wgt_tensor **out,
                             wgt_tensor **mask)
{
    wgt_tensor *y = NULL, *m = NULL;
    wgt_status st = wgt_tensor_new(ctx, dt, ndim, shape, &y);
    if (!st && mask) st = wgt_tensor_new(ctx, WGT_BOOL, ndim, shape, &m);
    if (!st && op_use_gpu(ctx, op, dt, 1)) {
        wgt_tensor *xc = NULL;
        if (x && !(st = wgt_tensor_contiguous(x, &xc))) {
            st = rnd_elementwise(ctx, kind, ra->seed, ra->block, NULL, xc, y, m, tmpl);
            wgt_tensor_free(xc);
        } else if (!x) st = rnd_elementwise(ctx, kind, ra->seed, ra->block, NULL, NULL, y, m, tmpl);
    } else if (!st) {
        const wgt_tensor *ins[1] = {x};
        wgt_tensor *outs[2] = {y, m};
        ra->kind = kind;
        ra->has_mask = m != NULL;
        ra->has_x = x != NULL;
        st = op_reference(ctx, rnd_ref, ra, x ? ins : NULL, x ? 1 : 0, outs, m ? 2 : 1);
    }
    if (st) {
        wgt_tensor_free(m);
        m = NULL;
    }
    if (mask) *mask = m;
    return op_finish(st, y, out);
}

#define RAND_BEGIN(ctx, gen, out, op, dt, ok)                                                      \
    if (!(ctx) || !(out)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: NULL argument", op);     \
    *(out) = NULL;                                                                                 \
    {                                                                                              \
        wgt_status rb_st_ = check_common(ctx, gen, op, dt, ok);                                    \
        if (rb_st_) return rb_st_;                                                                 \
    }

static int64_t numel_of(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* ---- the ops -------------------------------------------------------------------------------- */

wgt_status wgt_random_bits(wgt_context *ctx, wgt_generator *gen, int ndim, const int64_t *shape, wgt_tensor **out)
{
    RAND_BEGIN(ctx, gen, out, "random_bits", WGT_U32, 1u << WGT_U32);
    wgt_status st = check_shape(ctx, "random_bits", ndim, shape);
    if (st) return st;
    rnd_ref_arg ra = {0};
    ra.seed = gen->seed, ra.block = take(gen, (uint64_t)numel_of(ndim, shape));
    rnd_params p = {0};
    return rnd_create(ctx, "random_bits", K_BITS, &ra, &p, NULL, WGT_U32, ndim, shape, out, NULL);
}

wgt_status wgt_rand_uniform(wgt_context *ctx, wgt_generator *gen, wgt_dtype dtype, int ndim, const int64_t *shape,
                            double lo, double hi, wgt_tensor **out)
{
    RAND_BEGIN(ctx, gen, out, "uniform", dtype, FLOATS);
    wgt_status st = check_shape(ctx, "uniform", ndim, shape);
    if (st) return st;
    if (!isfinite(lo) || !isfinite(hi) || !(lo <= hi) || !isfinite((float)(hi - lo)) || fabs(lo) > 3e38 || fabs(hi) > 3e38)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "uniform: needs finite lo <= hi with hi - lo within f32's range (got %g, %g)", lo, hi);
    rnd_ref_arg ra = {0};
    ra.seed = gen->seed, ra.block = take(gen, (uint64_t)numel_of(ndim, shape));
    ra.a = (float)lo, ra.b = (float)(hi - lo);
    rnd_params p = {0};
    p.a = ra.a, p.b = ra.b;
    return rnd_create(ctx, "uniform", K_UNIFORM, &ra, &p, NULL, dtype, ndim, shape, out, NULL);
}

wgt_status wgt_rand_normal(wgt_context *ctx, wgt_generator *gen, wgt_dtype dtype, int ndim, const int64_t *shape,
                           double mean, double std, wgt_tensor **out)
{
    RAND_BEGIN(ctx, gen, out, "normal", dtype, FLOATS);
    wgt_status st = check_shape(ctx, "normal", ndim, shape);
    if (st) return st;
    if (!isfinite(mean) || !isfinite(std) || std < 0 || fabs(mean) > 3e38 || std > 3e38)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "normal: needs a finite mean and std >= 0 (got %g, %g)", mean, std);
    rnd_ref_arg ra = {0};
    ra.seed = gen->seed, ra.block = take(gen, (uint64_t)numel_of(ndim, shape));
    ra.mean = (float)mean, ra.std = (float)std;
    rnd_params p = {0};
    p.a = (float)mean, p.b = (float)std;
    return rnd_create(ctx, "normal", K_NORMAL, &ra, &p, NULL, dtype, ndim, shape, out, NULL);
}

wgt_status wgt_bernoulli_scalar(wgt_context *ctx, wgt_generator *gen, wgt_dtype dtype, int ndim, const int64_t *shape,
                                double p, wgt_tensor **out)
{
    RAND_BEGIN(ctx, gen, out, "bernoulli", dtype, FLOATS | INTS | (1u << WGT_BOOL));
    wgt_status st = check_shape(ctx, "bernoulli", ndim, shape);
    if (st) return st;
    if (!(p >= 0 && p <= 1)) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "bernoulli: p = %g must be in [0, 1]", p);
    rnd_ref_arg ra = {0};
    ra.seed = gen->seed, ra.block = take(gen, (uint64_t)numel_of(ndim, shape));
    ra.a = (float)p;
    rnd_params pp = {0};
    pp.a = ra.a;
    return rnd_create(ctx, "bernoulli", K_BERNOULLI, &ra, &pp, NULL, dtype, ndim, shape, out, NULL);
}

static wgt_status bernoulli_unrecorded(wgt_generator *gen, const wgt_tensor *p, wgt_tensor **out)
{
    if (!p || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "bernoulli: NULL argument");
    wgt_context *ctx = p->st->ctx;
    RAND_BEGIN(ctx, gen, out, "bernoulli (p)", p->l.dtype, FLOATS);
    rnd_ref_arg ra = {0};
    ra.seed = gen->seed, ra.block = take(gen, (uint64_t)wgt_layout_numel(&p->l));
    rnd_params pp = {0};
    pp.has_x = 1;
    return rnd_create(ctx, "bernoulli", K_BERNOULLI, &ra, &pp, p, p->l.dtype, p->l.ndim, p->l.shape, out, NULL);
}

/* a draw: its gradient in p is zero (PyTorch's derivatives.yaml: bernoulli's self: zeros_like(grad)) */
wgt_status wgt_bernoulli(wgt_generator *gen, const wgt_tensor *p, wgt_tensor **out)
{
    return op_record(bernoulli_unrecorded(gen, p, out), OP_GRAD_BERNOULLI, &p, 1, NULL, 0, out);
}

wgt_status wgt_randint(wgt_context *ctx, wgt_generator *gen, int64_t lo, int64_t hi, wgt_dtype dtype, int ndim,
                       const int64_t *shape, wgt_tensor **out)
{
    RAND_BEGIN(ctx, gen, out, "randint", dtype, FLOATS | INTS);
    wgt_status st = check_shape(ctx, "randint", ndim, shape);
    if (st) return st;
    /* the dtype's range, and the 32-bit arithmetic of the kernel */
    int64_t dmin = INT32_MIN, dmax = INT32_MAX;
    switch (dtype) {
    case WGT_U32: dmin = 0, dmax = UINT32_MAX; break;
    case WGT_I8: dmin = -128, dmax = 127; break;
    case WGT_U8: dmin = 0, dmax = 255; break;
    case WGT_F16: dmin = -2048, dmax = 2048; break;
    case WGT_BF16: dmin = -256, dmax = 256; break;
    case WGT_F32: dmin = -(1 << 24), dmax = 1 << 24; break;
    default: break;
    }
    if (!(lo < hi) || lo < dmin || hi - 1 > dmax || hi - lo > ((int64_t)1 << 32))
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT,
                       "randint: needs lo < hi with [lo, hi) inside %s's exact range [%lld, %lld] (got [%lld, %lld))",
                       wgt_dtype_name(dtype), (long long)dmin, (long long)dmax, (long long)lo, (long long)hi);
    rnd_ref_arg ra = {0};
    ra.seed = gen->seed, ra.block = take(gen, (uint64_t)numel_of(ndim, shape));
    ra.lo = lo, ra.range = (uint32_t)(hi - lo); /* 2^32 wraps to 0, meaning all words */
    rnd_params p = {0};
    p.ia = (uint32_t)lo, p.range = ra.range;
    return rnd_create(ctx, "randint", K_RANDINT, &ra, &p, NULL, dtype, ndim, shape, out, NULL);
}

wgt_status wgt_randperm(wgt_context *ctx, wgt_generator *gen, int64_t n, wgt_dtype dtype, wgt_tensor **out)
{
    RAND_BEGIN(ctx, gen, out, "randperm", dtype, FLOATS | INTS);
    int64_t dmax = dtype == WGT_I8 ? 127 : dtype == WGT_U8 ? 255
                 : dtype == WGT_F16 ? 2048 : dtype == WGT_BF16 ? 256 : dtype == WGT_F32 ? 1 << 24 : INT32_MAX;
    if (n < 0 || n - 1 > dmax)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "randperm: n = %lld must be in 0..%lld for %s", (long long)n,
                       (long long)dmax + 1, wgt_dtype_name(dtype));
    rnd_ref_arg ra = {0};
    int shuffle = n <= WGT_RANDPERM_SHUFFLE_MAX;
    ra.seed = gen->seed, ra.block = take(gen, shuffle ? (uint64_t)n : 4);
    rnd_params p = {0};
    int h = 1;
    while (h < 16 && (1ull << (2 * h)) <= (uint64_t)n) h++; /* 4^h > n: see src/cpu/random.c */
    p.K = (uint32_t)n, p.S = (uint32_t)h;
    if (!shuffle) return rnd_create(ctx, "randperm", K_RANDPERM, &ra, &p, NULL, dtype, 1, &n, out, NULL);
    /* small n: one workgroup shuffles in workgroup memory */
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, dtype, 1, &n, &y);
    if (st || n == 0) return op_finish(st, y, out);
    if (op_use_gpu(ctx, "randperm", dtype, 1)) {
        wgt_kernel *k;
        wgt_binding b[3];
        int64_t base;
        if (!(st = rnd_kernel(ctx, K_SHUFFLE, WGT_F32, dtype, 0, &k)) && !(st = index_dummy_bind(ctx, 1, &b[0])) &&
            !(st = op_bind_all(y, &b[1], &base)) && !(st = index_dummy_bind(ctx, 2, &b[2]))) {
            p.n = (uint32_t)n;
            p.blk_lo = (uint32_t)ra.block, p.blk_hi = (uint32_t)(ra.block >> 32);
            p.k0 = (uint32_t)ra.seed, p.k1 = (uint32_t)(ra.seed >> 32);
            p.out_w0 = (uint32_t)((y->l.offset - base) / op_pack(dtype));
            seed_fields(ctx, ra.seed);
            st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 3, 1, 1, 1);
        }
    } else {
        ra.kind = K_RANDPERM;
        st = op_reference(ctx, rnd_ref, &ra, NULL, 0, &y, 1);
    }
    return op_finish(st, y, out);
}

/* Philox at an arbitrary counter on ctx's adapter (known-answer tests of the kernel). */
wgt_status wgt_random_block(wgt_context *ctx, const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    if (!ctx || !ctr || !key || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "random_block: NULL argument");
    if (wgt_gpu_runs_reference(ctx)) {
        wgt_philox4x32_10(ctr, key, out);
        return WGT_OK;
    }
    int64_t four = 4;
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, WGT_U32, 1, &four, &y);
    if (st) return st;
    rnd_params p = {0};
    uint64_t seed = key[0] | (uint64_t)key[1] << 32, block = ctr[0] | (uint64_t)ctr[1] << 32;
    st = rnd_elementwise(ctx, K_BITS, seed, block, ctr + 2, NULL, y, NULL, &p);
    if (!st) st = wgt_tensor_to_host(y, out, 16);
    wgt_tensor_free(y);
    return st;
}

/* ---- multinomial ---------------------------------------------------------------------------- */

static wgt_status mn_gpu(wgt_context *ctx, uint64_t seed, uint64_t block, const wgt_tensor *probs, int64_t N,
                         int64_t K, int64_t S, int replacement, wgt_tensor *y)
{
    wgt_kernel *k;
    wgt_status st = rnd_kernel(ctx, K_MULTINOMIAL, probs->l.dtype, y->l.dtype, 0, &k);
    if (st) return st;
    wgt_tensor *scratch = NULL;
    wgt_binding b[3];
    int64_t base;
    rnd_params p = {0};
    p.n = (uint32_t)N, p.K = (uint32_t)K, p.S = (uint32_t)S, p.C = (uint32_t)((K + 255) / 256);
    p.blk_lo = (uint32_t)block, p.blk_hi = (uint32_t)(block >> 32);
    p.k0 = (uint32_t)seed, p.k1 = (uint32_t)(seed >> 32);
    p.repl = (uint32_t)replacement;
    if ((st = op_bind_all(probs, &b[0], &base))) return st;
    p.x_off = (uint32_t)(probs->l.offset - base);
    if ((st = op_bind_all(y, &b[1], &base))) return st;
    p.out_w0 = (uint32_t)(y->l.offset - base);
    if (replacement) st = index_dummy_bind(ctx, 2, &b[2]);
    else {
        int64_t nk = N * K;
        if (!(st = wgt_tensor_new(ctx, WGT_F32, 1, &nk, &scratch))) st = op_bind_all(scratch, &b[2], &base);
    }
    /* with replacement, rows with many samples spread them over several workgroups (each sums the
     * row's weights again: worth it from about 4 samples per invocation) */
    int64_t parts = replacement ? S / 1024 : 1;
    if (parts > 64) parts = 64;
    if (parts < 1) parts = 1;
    p.e0 = (uint32_t)parts;
    uint32_t gx, gy;
    op_grid(ctx, (uint64_t)(N * parts), &gx, &gy);
    if (!st) seed_fields(ctx, seed);
    if (!st) st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 3, gx, gy, 1);
    wgt_tensor_free(scratch);
    return st;
}

wgt_status wgt_multinomial(wgt_generator *gen, const wgt_tensor *probs, int64_t num_samples, int replacement,
                           wgt_dtype dtype, wgt_tensor **out)
{
    if (!probs || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "multinomial: NULL argument");
    wgt_context *ctx = probs->st->ctx;
    RAND_BEGIN(ctx, gen, out, "multinomial (index dtype)", dtype, (1u << WGT_I32) | (1u << WGT_I64));
    int nd = probs->l.ndim;
    if (nd < 1 || nd > 2) return op_fail(ctx, WGT_ERR_SHAPE, "multinomial: probs must be [K] or [N, K], not %d-D", nd);
    if (!op_is_float(probs->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "multinomial: probs must be f32, f16 or bf16, not %s",
                       wgt_dtype_name(probs->l.dtype));
    int64_t N = nd == 2 ? probs->l.shape[0] : 1, K = probs->l.shape[nd - 1];
    if (K < 1) return op_fail(ctx, WGT_ERR_SHAPE, "multinomial: probs has no categories");
    if (num_samples < 0 || (!replacement && num_samples > K))
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT,
                       "multinomial: num_samples = %lld must be >= 0%s (K = %lld)", (long long)num_samples,
                       replacement ? "" : " and at most K without replacement", (long long)K);
    if ((double)N * (double)K >= 4294967296.0 || (double)N * (double)num_samples >= 4294967296.0)
        return op_fail(ctx, WGT_ERR_LIMIT, "multinomial: rows x categories and rows x samples must stay below 2^32");
    rnd_ref_arg ra = {0};
    ra.seed = gen->seed, ra.block = take(gen, (uint64_t)(N * num_samples));
    ra.replacement = replacement != 0;
    int64_t shape[2] = {N, num_samples};
    wgt_tensor *y = NULL;
    wgt_status st = wgt_tensor_new(ctx, dtype, nd, nd == 2 ? shape : shape + 1, &y);
    if (st || N * num_samples == 0) return op_finish(st, y, out);
    if (op_use_gpu(ctx, "multinomial", dtype, 1)) {
        wgt_tensor *pc = NULL;
        if (!(st = wgt_tensor_contiguous(probs, &pc))) st = mn_gpu(ctx, ra.seed, ra.block, pc, N, K, num_samples, ra.replacement, y);
        wgt_tensor_free(pc);
    } else {
        ra.kind = K_MULTINOMIAL;
        const wgt_tensor *ins[1] = {probs};
        st = op_reference(ctx, rnd_ref, &ra, ins, 1, &y, 1);
    }
    return op_finish(st, y, out);
}

/* ---- dropout -------------------------------------------------------------------------------- */

wgt_status wgt_dropout(wgt_generator *gen, const wgt_tensor *x, double p, int training, wgt_tensor **out,
                       wgt_tensor **mask)
{
    if (!x || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "dropout: NULL argument");
    if (mask) *mask = NULL;
    wgt_context *ctx = x->st->ctx;
    RAND_BEGIN(ctx, gen, out, "dropout (x)", x->l.dtype, FLOATS);
    if (!(p >= 0 && p <= 1)) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "dropout: p = %g must be in [0, 1]", p);
    if (!training || p == 0) { /* the identity, and a mask of ones; no numbers drawn */
        wgt_status st = wgt_tensor_contiguous(x, out);
        if (!st && mask && (st = wgt_full(ctx, WGT_BOOL, x->l.ndim, x->l.shape, 1, mask))) {
            wgt_tensor_free(*out);
            *out = NULL;
        }
        return st;
    }
    rnd_ref_arg ra = {0};
    ra.seed = gen->seed, ra.block = take(gen, (uint64_t)wgt_layout_numel(&x->l));
    ra.a = (float)(1.0 - p);            /* kept when u < 1 - p */
    ra.b = p == 1 ? 0.0f : (float)(1.0 / (1.0 - p));
    rnd_params pp = {0};
    pp.a = ra.a, pp.b = ra.b;
    /* while autograd records, the mask is made even when the caller wants none: the backward
     * formula reads it (the same numbers are drawn either way) */
    wgt_tensor *own_mask = NULL, **mk = mask ? mask : x->ag && op_grad_mode() ? &own_mask : NULL;
    wgt_status st = rnd_create(ctx, "dropout", K_DROPOUT, &ra, &pp, x, x->l.dtype, x->l.ndim, x->l.shape, out, mk);
    double scale = ra.b;
    const wgt_tensor *rec_in[2] = {x, mk ? *mk : NULL};
    st = op_record(st, OP_GRAD_DROPOUT, rec_in, 2, &scale, sizeof scale, out);
    wgt_tensor_free(own_mask);
    if (st && mask) {
        wgt_tensor_free(*mask);
        *mask = NULL;
    }
    return st;
}
