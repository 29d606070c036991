/* The gradient-check runner and its cases (see gradcheck.h for the method and tolerances). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grad/gradcheck.h"
#include "harness/harness.h"

#define GC_MAX_IN 5

typedef enum gc_kind {
    GC_NONE = 0, /* no input (the rest of a row's list) */
    GC_DIFF,     /* float input that requires grad */
    GC_DISTINCT, /* as GC_DIFF, values pairwise >= (hi - lo) / n apart (no ties for max/min) */
    GC_CONST,    /* float input without grad */
    GC_INDEX,    /* i32 values in [lo, hi) */
    GC_MASK,     /* bool */
    GC_PERM,     /* i32 in [lo, hi), distinct down each column of dim 0 (a scatter without collisions) */
} gc_kind;

typedef struct gc_in {
    gc_kind kind;
    int ndim;
    int64_t shape[4];
    double lo, hi;
    double grid; /* > 0: values snapped to lo + k * grid + offset (binary max/min: no ties) */
    double offset;
} gc_in;

typedef struct gc_case gc_case;
typedef wgt_status (*gc_fwd)(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out);

/* A GRAD row of the op table (src/ops/optable.h describes the columns). */
struct gc_case {
    const char *op;   /* the row whose backward it checks */
    const char *name; /* shown and matched by `wgt ops --check --grad NAME` ("": the op's name) */
    gc_fwd fwd;       /* the forward, through the op API: gc_<what> below */
    gc_in in[GC_MAX_IN];
    int iarg[4];      /* what the forward takes besides tensors (see each gc_ function) */
    double darg[2];
    int f32_only;     /* 1: the forward takes no f16/bf16 (else those are checked too) */
    double tol;       /* factor on the tolerances (1 if 0) */
    int n_in;         /* filled in from in[] */
    int code;         /* filled in: the op row's code (its wgt_unary_op, wgt_binary_op, ...) */
};

/* ---- forward functions ----------------------------------------------------------------------- */

/* Convolution geometries of the conv cases (iarg[1]): strides, padding incl. 'same', dilation,
 * groups and output_padding, 1-, 2- and 3-D. */
static const wgt_conv_params conv_cfg[] = {
    {.stride = {2}, .pad_begin = {1}, .pad_end = {1}},                                         /* 0: 1-D */
    {.stride = {2, 1}, .dilation = {1, 2}, .pad_begin = {1, 0}, .pad_end = {1, 0}, .groups = 2}, /* 1: 2-D */
    {.dilation = {2, 2}, .padding = WGT_CONV_PAD_SAME},                                          /* 2: same */
    {.stride = {1, 2, 1}, .pad_begin = {1, 0, 1}, .pad_end = {1, 0, 1}},                        /* 3: 3-D */
    {.stride = {2}, .pad_begin = {1}, .pad_end = {1}, .output_padding = {1}},                   /* 4: T 1-D */
    {.stride = {2, 2}, .dilation = {1, 2}, .pad_begin = {1, 0}, .pad_end = {1, 0}, .output_padding = {1, 0},
     .groups = 2},                                                                              /* 5: T 2-D */
    {.stride = {2, 2, 2}},                                                                      /* 6: T 3-D */
};

/* iarg: transposed, geometry, and for 3-D (the case's shapes hold 4 dims) the H of x and the kh of
 * the weight, whose last dims hold H x W and kh x kw */
static wgt_status gc_conv(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    const wgt_tensor *b = c->n_in > 2 ? x[2] : NULL, *xi = x[0], *wi = x[1];
    wgt_tensor *x5 = NULL, *w5 = NULL;
    wgt_status st = WGT_OK;
    if (c->iarg[2]) {
        const int64_t *xs = wgt_tensor_shape(x[0]), *ws = wgt_tensor_shape(x[1]);
        int64_t s5[5] = {xs[0], xs[1], xs[2], c->iarg[2], xs[3] / c->iarg[2]};
        int64_t k5[5] = {ws[0], ws[1], ws[2], c->iarg[3], ws[3] / c->iarg[3]};
        st = wgt_tensor_reshape(x[0], 5, s5, &x5);
        if (!st) st = wgt_tensor_reshape(x[1], 5, k5, &w5);
        xi = x5, wi = w5;
    }
    const wgt_conv_params *p = &conv_cfg[c->iarg[1]];
    if (!st) st = c->iarg[0] ? wgt_conv_transpose(xi, wi, b, p, out) : wgt_conv(xi, wi, b, p, out);
    wgt_tensor_free(x5), wgt_tensor_free(w5);
    return st;
}

/* Pool windows of the pool cases (iarg[1]): overlapping, padded, dilated, ceil mode, both
 * count_include_pad settings and divisor_override. */
static const wgt_pool_params pool_cfg[] = {
    {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .ceil_mode = 1},              /* 0: max */
    {.kernel = {2, 2}, .stride = {1, 1}, .dilation = {2, 1}},                             /* 1: max, dilated */
    {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = 1, .count_include_pad = 1}, /* 2: avg */
    {.kernel = {3, 2}, .stride = {2, 1}, .padding = {1, 1}, .ceil_mode = 1},              /* 3: avg, no pad count */
    {.kernel = {3}, .stride = {2}, .padding = {1}, .divisor_override = 5},                /* 4: avg 1-D override */
};
static const int64_t pool_osize[2][2] = {{3, 4}, {4, 0}}; /* adaptive: overlapping windows of 5 x 6, 6 */

/* iarg: 0 max, 1 avg, 2 adaptive avg, 3 adaptive max, 4 max with indices returned; the geometry
 * (adaptive: the output size); spatial dims */
static wgt_status gc_pool(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    const wgt_pool_params *p = &pool_cfg[c->iarg[1]];
    wgt_tensor *idx = NULL;
    wgt_status st;
    switch (c->iarg[0]) {
    case 0: return wgt_max_pool(x[0], c->iarg[2], p, out, NULL);
    case 1: return wgt_avg_pool(x[0], c->iarg[2], p, out);
    case 2: return wgt_adaptive_avg_pool(x[0], c->iarg[2], pool_osize[c->iarg[1]], out);
    case 3: return wgt_adaptive_max_pool(x[0], c->iarg[2], pool_osize[c->iarg[1]], out, NULL);
    default:
        st = wgt_max_pool(x[0], c->iarg[2], p, out, &idx);
        wgt_tensor_free(idx);
        return st;
    }
}

/* Output sizes of the interpolate cases (iarg[3]); darg[0] > 0: the 1-D scale factor instead. */
/* iarg: 0 group_norm (iarg[1] groups), 1 batch_norm training, 2 batch_norm evaluation (the running
 * statistics: inputs 3 and 4) */
static wgt_status gc_gbnorm(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    if (c->iarg[0] == 0) return wgt_group_norm(x[0], c->iarg[1], x[1], x[2], 1e-5, out);
    return wgt_batch_norm(x[0], c->iarg[0] == 2 ? x[3] : NULL, c->iarg[0] == 2 ? x[4] : NULL, x[1], x[2],
                          c->iarg[0] == 1, 0.1, 1e-5, out);
}

/* iarg: dim */
static wgt_status gc_scan(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    return wgt_scan((wgt_scan_op)c->code, x[0], c->iarg[0], out, NULL);
}

static const int64_t interp_size[4][2] = {{5, 7}, {8, 0}, {7, 3}, {6, 8}};

/* iarg: mode, spatial dims, align_corners, size */
static wgt_status gc_interp(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    const double sc[2] = {c->darg[0], c->darg[0]};
    return wgt_interpolate(x[0], c->iarg[1], (wgt_interp_mode)c->iarg[0], c->darg[0] > 0 ? NULL : interp_size[c->iarg[3]],
                           c->darg[0] > 0 ? sc : NULL, c->iarg[2], out);
}

static wgt_status gc_unary(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    if (c->darg[0] || c->darg[1]) {
        wgt_unary_params p = wgt_unary_params_default((wgt_unary_op)c->code);
        p.lo = c->darg[0], p.hi = c->darg[1];
        return wgt_unary_ex((wgt_unary_op)c->code, &p, x[0], out);
    }
    return wgt_unary((wgt_unary_op)c->code, x[0], out);
}

static wgt_status gc_binary(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    return wgt_binary((wgt_binary_op)c->code, x[0], x[1], out);
}

static wgt_status gc_where(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    (void)c;
    return wgt_where(x[2], x[0], x[1], out);
}

/* cast to f32 of a transposed view (a copy that changes layout and dtype) */
static wgt_status gc_cast(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    (void)c;
    wgt_tensor *t;
    wgt_status st = wgt_tensor_transpose(x[0], 0, 1, &t);
    if (!st) st = wgt_tensor_cast(t, WGT_F32, out);
    wgt_tensor_free(t);
    return st;
}

static wgt_status gc_contiguous(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    (void)c;
    wgt_tensor *t;
    wgt_status st = wgt_tensor_permute(x[0], (const int[]){2, 0, 1}, &t);
    if (!st) st = wgt_tensor_contiguous(t, out);
    wgt_tensor_free(t);
    return st;
}

static wgt_status gc_reshape(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    (void)c;
    wgt_tensor *t;
    /* a transposed input cannot be viewed: reshape copies */
    wgt_status st = wgt_tensor_transpose(x[0], 0, 1, &t);
    if (!st) st = wgt_tensor_reshape(t, 2, (const int64_t[]){2, -1}, out);
    wgt_tensor_free(t);
    return st;
}

static wgt_status gc_views(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    /* narrow, unsqueeze, expand, squeeze, transpose in a chain: [3, 4] -> [4, 2, 2] */
    (void)c;
    wgt_tensor *a = NULL, *b = NULL, *d = NULL, *e = NULL;
    wgt_status st = wgt_tensor_narrow(x[0], 0, 1, 2, &a);                        /* [2, 4] */
    if (!st) st = wgt_tensor_unsqueeze(a, 0, &b);                                /* [1, 2, 4] */
    if (!st) st = wgt_tensor_expand(b, 3, (const int64_t[]){2, -1, -1}, &d);     /* [2, 2, 4] */
    if (!st) st = wgt_tensor_transpose(d, 0, 2, &e);                             /* [4, 2, 2] */
    wgt_tensor_free(a), wgt_tensor_free(b), wgt_tensor_free(d);
    if (st) return st;
    wgt_tensor *f = NULL;
    st = wgt_tensor_unsqueeze(e, 3, &f);
    if (!st) st = wgt_tensor_squeeze(f, 3, out);
    wgt_tensor_free(e), wgt_tensor_free(f);
    return st;
}

/* iarg[0]: 0 transpose dims 0, 2; 1 permute (2, 0, 1); 2 expand [3, 1, 4] to [2, 3, 5, 4] (the
 * gradient sums over the broadcast dims) */
static wgt_status gc_view(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    switch (c->iarg[0]) {
    case 0: return wgt_tensor_transpose(x[0], 0, 2, out);
    case 1: return wgt_tensor_permute(x[0], (const int[]){2, 0, 1}, out);
    default: return wgt_tensor_expand(x[0], 4, (const int64_t[]){2, -1, 5, -1}, out);
    }
}

static wgt_status gc_cat(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    const wgt_tensor *xs[3] = {x[0], x[1], x[2]};
    return wgt_cat(xs, 3, c->iarg[0], out);
}

static wgt_status gc_stack(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    const wgt_tensor *xs[2] = {x[0], x[1]};
    return wgt_stack(xs, 2, c->iarg[0], out);
}

static wgt_status gc_split(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    /* the pieces of a split, multiplied together: each piece's gradient lands in its range */
    (void)c;
    wgt_tensor *p[2] = {0};
    wgt_status st = wgt_split(x[0], (const int64_t[]){2, 2}, 2, 1, p);
    if (!st) st = wgt_binary(WGT_BINARY_MUL, p[0], p[1], out);
    wgt_tensor_free(p[0]), wgt_tensor_free(p[1]);
    return st;
}

/* iarg: dims (a bit per dim, 0: all), keepdim; darg[0]: the correction (var, std) */
/* the two grids of meshgrid(x0, x1), multiplied (iarg[0]: indexing xy) */
static wgt_status gc_meshgrid(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    const wgt_tensor *xs[2] = {x[0], x[1]};
    wgt_tensor *p[2] = {0};
    wgt_status st = wgt_meshgrid(xs, 2, c->iarg[0], p);
    if (!st) st = wgt_binary(WGT_BINARY_MUL, p[0], p[1], out);
    wgt_tensor_free(p[0]), wgt_tensor_free(p[1]);
    return st;
}

static wgt_status gc_reduce(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    return wgt_reduce((wgt_reduce_op)c->code, x[0], (uint32_t)c->iarg[0], c->iarg[1], c->darg[0], out);
}

static wgt_status gc_extreme(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    wgt_tensor *idx = NULL;
    wgt_status st = c->iarg[0] ? wgt_max_dim(x[0], c->iarg[1], c->iarg[2], out, &idx)
                               : wgt_min_dim(x[0], c->iarg[1], c->iarg[2], out, &idx);
    wgt_tensor_free(idx);
    return st;
}

static wgt_status gc_matmul(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    (void)c;
    return wgt_matmul(x[0], x[1], out);
}

static wgt_status gc_matmul_t(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    /* a transposed operand read in place */
    (void)c;
    wgt_tensor *t;
    wgt_status st = wgt_tensor_transpose(x[1], -1, -2, &t);
    if (!st) st = wgt_matmul(x[0], t, out);
    wgt_tensor_free(t);
    return st;
}

static wgt_status gc_linear(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    return wgt_linear(x[0], x[1], c->n_in > 2 ? x[2] : NULL, out);
}

static wgt_status gc_addmm(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    if (c->iarg[0] == 3) return wgt_baddbmm(x[0], x[1], x[2], c->darg[0], c->darg[1], out);
    return wgt_addmm(x[0], x[1], x[2], c->darg[0], c->darg[1], out);
}

static wgt_status gc_softmax(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    return c->iarg[1] ? wgt_log_softmax(x[0], c->iarg[0], out) : wgt_softmax(x[0], c->iarg[0], out);
}

static wgt_status gc_norm(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    if (c->iarg[0]) return wgt_rms_norm(x[0], c->iarg[1], c->n_in > 1 ? x[1] : NULL, 1e-5, out);
    return wgt_layer_norm(x[0], c->iarg[1], c->n_in > 1 ? x[1] : NULL, c->n_in > 2 ? x[2] : NULL, 1e-5, out);
}

static wgt_status gc_embedding(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    (void)c;
    return wgt_embedding(x[0], x[1], WGT_F32, out);
}

static wgt_status gc_index(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    if (c->iarg[0] == 0) return wgt_index_select(x[0], c->iarg[1], x[1], out);
    if (c->iarg[0] == 1) return wgt_gather(x[0], c->iarg[1], x[1], out);
    return wgt_masked_fill(x[0], x[1], 0.5, out);
}

/* iarg: reduction, ignore_index (-100: none hit), nll; darg[0]: label smoothing; a third input is
 * the class weight */
static wgt_status gc_ce(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    const wgt_tensor *w = c->n_in > 2 ? x[2] : NULL;
    int64_t ign = c->iarg[1] == INT_MIN ? WGT_NO_IGNORE_INDEX : c->iarg[1]; /* INT_MIN: none */
    if (c->iarg[2]) return wgt_nll_loss(x[0], x[1], w, ign, (wgt_reduction)c->iarg[0], out);
    return wgt_cross_entropy(x[0], x[1], w, ign, c->darg[0], (wgt_reduction)c->iarg[0], out);
}

/* iarg[0]: 0 mse, 1 l1, 2 smooth_l1 (beta darg[0]), 3 bce, 4 bce_with_logits, 5 kl_div (log_target
 * iarg[2]), 6 huber (delta darg[0]); iarg[1]: reduction */
static wgt_status gc_pointwise(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    wgt_reduction r = (wgt_reduction)c->iarg[1];
    switch (c->iarg[0]) {
    case 0: return wgt_mse_loss(x[0], x[1], r, out);
    case 1: return wgt_l1_loss(x[0], x[1], r, out);
    case 2: return wgt_smooth_l1_loss(x[0], x[1], r, c->darg[0], out);
    case 6: return wgt_huber_loss(x[0], x[1], r, c->darg[0], out);
    case 3: return wgt_binary_cross_entropy(x[0], x[1], c->n_in > 2 ? x[2] : NULL, r, out);
    case 4: return wgt_binary_cross_entropy_with_logits(x[0], x[1], c->n_in > 2 ? x[2] : NULL,
                                                        c->n_in > 3 ? x[3] : NULL, r, out);
    default: return wgt_kl_div(x[0], x[1], r, c->iarg[2], out);
    }
}

/* iarg: interleaved, rot_dim; llama3 scaling when darg[0] > 0 */
static wgt_status gc_rope(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    wgt_rope_params p = {0};
    p.theta = 10000;
    if (c->darg[0] > 0) {
        p.scaling = WGT_ROPE_LLAMA3, p.factor = c->darg[0], p.low_freq_factor = 1, p.high_freq_factor = 4;
        p.original_max_position = 16;
    }
    return wgt_rope(x[0], x[1], c->iarg[1], c->iarg[0], &p, out);
}

/* iarg: causal, causal_offset, window; a fourth input is the mask */
static wgt_status gc_sdpa(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    wgt_sdpa_params p = {0, c->iarg[0], c->iarg[1], c->iarg[2]};
    return wgt_sdpa(x[0], x[1], x[2], c->n_in > 3 ? x[3] : NULL, &p, out);
}

/* iarg: mode, padding, align_corners */
static wgt_status gc_grid(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    return wgt_grid_sample(x[0], x[1], (wgt_grid_mode)c->iarg[0], (wgt_grid_padding)c->iarg[1], c->iarg[2], out);
}

/* iarg: 0 scatter (set), 1 scatter_add, 2 index_add (alpha darg[0]), 3 scatter with mode iarg[2];
 * dim. Inputs: self, index, src. */
static wgt_status gc_scatter(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    if (c->iarg[0] == 3) return wgt_scatter(x[0], c->iarg[1], x[1], x[2], (wgt_scatter_mode)c->iarg[2], out);
    if (c->iarg[0] == 2) return wgt_index_add(x[0], c->iarg[1], x[1], x[2], c->darg[0], out);
    if (c->iarg[0] == 1) return wgt_scatter_add(x[0], c->iarg[1], x[1], x[2], out);
    return wgt_scatter(x[0], c->iarg[1], x[1], x[2], WGT_SCATTER_SET, out);
}

/* dropout with p = darg[0] from a generator of a fixed seed: the same mask on every call */
static wgt_status gc_dropout(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    wgt_generator *g = NULL;
    wgt_status st = wgt_generator_create(1234, &g);
    if (!st) st = wgt_dropout(g, x[0], c->darg[0], 1, out, NULL);
    wgt_generator_free(g);
    return st;
}

/* iarg[0]: 0 flip dims 0, 2; 1 roll; 2 repeat (with a new leading dim); 3 pad (and crop; mode
 * iarg[1]); 4 tril; 5 triu */
static wgt_status gc_move(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    switch (c->iarg[0]) {
    case 0: return wgt_flip(x[0], (const int[]){0, 2}, 2, out);
    case 1: return wgt_roll(x[0], (const int64_t[]){1, -2}, (const int[]){2, 1}, 2, out);
    case 2: return wgt_repeat(x[0], (const int64_t[]){2, 3, 2}, 3, out);
    case 3: return wgt_pad(x[0], (wgt_pad_mode)c->iarg[1], (const int64_t[]){0, 1, -1, 1, 2, 1}, 0.5, out);
    case 4: return wgt_tril(x[0], 1, out);
    default: return wgt_triu(x[0], -1, out);
    }
}

/* iarg[0]: 0 sort descending dim 1, 1 topk 3 smallest, 2 kthvalue 2 of dim 1, 3 median dim -1 */
static wgt_status gc_select(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    switch (c->iarg[0]) {
    case 0: return wgt_sort(x[0], 1, 1, out, NULL);
    case 1: return wgt_topk(x[0], 3, -1, 0, 1, out, NULL);
    case 2: return wgt_kthvalue(x[0], 2, 1, 0, out, NULL);
    default: return wgt_median(x[0], -1, 1, out, NULL);
    }
}

/* iarg[0]: 0 diff (n iarg[1] along dim iarg[2]; inputs 1 and 2, when given: prepend, append), 1 trace,
 * 2 diag (offset iarg[1]), 3 diag_embed (offset iarg[1], dims iarg[2], iarg[3]), 4 cdist (p darg[0],
 * mode iarg[1]), 5 cosine_similarity (dim iarg[1]), 6 bernoulli (a generator of a fixed seed),
 * 7 masked_select, 8 index_put (inputs: self, values, the n_in - 2 index tensors; accumulate iarg[1]) */
static wgt_status gc_misc(const gc_case *c, wgt_tensor *const *x, wgt_tensor **out)
{
    wgt_generator *g = NULL;
    wgt_status st;
    switch (c->iarg[0]) {
    case 0: return wgt_diff(x[0], c->iarg[1], c->iarg[2], c->n_in > 1 ? x[1] : NULL, c->n_in > 2 ? x[2] : NULL, out);
    case 1: return wgt_trace(x[0], out);
    case 2: return wgt_diag(x[0], c->iarg[1], out);
    case 3: return wgt_diag_embed(x[0], c->iarg[1], c->iarg[2], c->iarg[3], out);
    case 4: return wgt_cdist(x[0], x[1], c->darg[0], (wgt_cdist_mode)c->iarg[1], out);
    case 5: return wgt_cosine_similarity(x[0], x[1], c->iarg[1], 1e-8, out);
    case 6:
        st = wgt_generator_create(99, &g);
        if (!st) st = wgt_bernoulli(g, x[0], out);
        wgt_generator_free(g);
        return st;
    case 7: return wgt_masked_select(x[0], x[1], out);
    default: return wgt_index_put(x[0], (const wgt_tensor *const *)x + 2, c->n_in - 2, x[1], c->iarg[1], out);
    }
}

/* ---- the cases: the GRAD rows of the op table ------------------------------------------------ */

/* The row macros of src/ops/optable.h's GRAD column: a shape, then an input of each kind. */
#define GC_NDIM_(a, b, c, d, n, ...) n
#define S(...) GC_NDIM_(__VA_ARGS__, 4, 3, 2, 1, 0), {__VA_ARGS__}
#define DIFF(shape, lo, hi) {GC_DIFF, shape, lo, hi, 0, 0}
#define DISTINCT(shape, lo, hi) {GC_DISTINCT, shape, lo, hi, 0, 0}
#define GRID(shape, lo, hi, step, offset) {GC_DIFF, shape, lo, hi, step, offset}
#define CONST(shape, lo, hi) {GC_CONST, shape, lo, hi, 0, 0}
#define INDEX(shape, lo, hi) {GC_INDEX, shape, lo, hi, 0, 0}
#define MASK(shape) {GC_MASK, shape, 0, 1, 0, 0}
#define PERM(shape, lo, hi) {GC_PERM, shape, lo, hi, 0, 0}
#define GRAD(op_, name_, fwd_, ...) {.op = op_, .name = name_, .fwd = fwd_, __VA_ARGS__},
static gc_case cases[] = {
#include "ops/optable_all.h"
};
#undef GRAD
#undef S
#undef DIFF
#undef DISTINCT
#undef GRID
#undef CONST
#undef INDEX
#undef MASK
#undef PERM

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

/* What the rows leave implicit: the name (the op's when ""), the number of inputs, the op's code. */
static void init_cases(void)
{
    static int done;
    if (done) return;
    done = 1;
    for (int k = 0; k < N_CASES; k++) {
        gc_case *c = &cases[k];
        if (!c->name[0]) c->name = c->op;
        while (c->n_in < GC_MAX_IN && c->in[c->n_in].kind) c->n_in++;
        const hx_op *o = hx_find(c->op);
        c->code = o ? o->code : 0;
    }
}

int gc_case_count(void) { return N_CASES; }
const char *gc_case_name(int i)
{
    init_cases();
    return i >= 0 && i < N_CASES ? cases[i].name : NULL;
}
const char *gc_case_op(int i) { return i >= 0 && i < N_CASES ? cases[i].op : NULL; }

/* ---- the runner ------------------------------------------------------------------------------ */

static uint64_t rng_state;
static double urand(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static int64_t numel_of(const gc_in *in)
{
    int64_t n = 1;
    for (int d = 0; d < in->ndim; d++) n *= in->shape[d];
    return n;
}

static int is_diff(const gc_in *in) { return in->kind == GC_DIFF || in->kind == GC_DISTINCT; }

/* Keep clear of the kinks of the piecewise ops (0, +-0.5, +-1, +-3) by more than the step. */
static double off_kinks(double v)
{
    static const double kinks[] = {0, 0.5, -0.5, 1, -1, 3, -3};
    for (size_t k = 0; k < sizeof kinks / sizeof kinks[0]; k++)
        if (fabs(v - kinks[k]) < 0.05) v = kinks[k] + (v < kinks[k] ? -0.05 : 0.05);
    return v;
}

static void gen_values(const gc_in *in, float *v)
{
    int64_t n = numel_of(in);
    if (in->kind == GC_DISTINCT) { /* a shuffled ladder: neighbours (hi - lo) / n apart */
        for (int64_t i = 0; i < n; i++) v[i] = (float)(in->lo + (in->hi - in->lo) * (i + 0.5) / n);
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)(urand() * (i + 1));
            float t = v[i];
            v[i] = v[j], v[j] = t;
        }
        return;
    }
    if (in->kind == GC_PERM) { /* each column of dim 0: the first rows of a shuffle of [lo, hi) */
        int64_t rows = in->shape[0], cols = n / (rows ? rows : 1), m = (int64_t)(in->hi - in->lo);
        for (int64_t j = 0; j < cols; j++) {
            int64_t perm[64];
            for (int64_t k = 0; k < m && k < 64; k++) perm[k] = k;
            for (int64_t k = 0; k < rows && k < m; k++) {
                int64_t r = k + (int64_t)(urand() * (double)(m - k)), t = perm[k];
                perm[k] = perm[r], perm[r] = t;
                v[k * cols + j] = (float)(in->lo + (double)perm[k]);
            }
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double x = in->lo + (in->hi - in->lo) * urand();
        if (in->kind == GC_INDEX) x = floor(x);
        else if (in->kind == GC_MASK) /* each row keeps its first element (attention needs a visible key) */
            x = urand() < 0.5 || i % in->shape[in->ndim - 1] == 0;
        else if (in->grid > 0) x = in->lo + floor((x - in->lo) / in->grid) * in->grid + in->offset;
        else x = off_kinks(x);
        v[i] = (float)x;
    }
}

typedef struct run {
    wgt_context *ctx;
    const gc_case *c;
    float *data[GC_MAX_IN]; /* host values of every input */
    wgt_dtype dt;           /* dtype of the float inputs */
    wgt_tensor *x[GC_MAX_IN];
} run;

static void run_free_inputs(run *r)
{
    for (int i = 0; i < r->c->n_in; i++) {
        wgt_tensor_free(r->x[i]);
        r->x[i] = NULL;
    }
}

static wgt_status make_inputs(run *r, int with_grad)
{
    wgt_status st = WGT_OK;
    for (int i = 0; i < r->c->n_in && !st; i++) {
        const gc_in *in = &r->c->in[i];
        int64_t n = numel_of(in);
        if (in->kind == GC_INDEX || in->kind == GC_PERM || in->kind == GC_MASK) {
            int32_t *iv = malloc(sizeof *iv * (n ? n : 1));
            uint8_t *bv = malloc(n ? n : 1);
            if (!iv || !bv) st = WGT_ERR_OUT_OF_MEMORY;
            for (int64_t j = 0; j < n && !st; j++) iv[j] = (int32_t)r->data[i][j], bv[j] = r->data[i][j] != 0;
            if (!st)
                st = in->kind != GC_MASK ? wgt_tensor_from_host(r->ctx, WGT_I32, in->ndim, in->shape, iv, &r->x[i])
                                          : wgt_tensor_from_host(r->ctx, WGT_BOOL, in->ndim, in->shape, bv, &r->x[i]);
            free(iv), free(bv);
            continue;
        }
        wgt_tensor *f = NULL;
        st = wgt_tensor_from_host(r->ctx, WGT_F32, in->ndim, in->shape, r->data[i], &f);
        if (!st && r->dt != WGT_F32) {
            st = wgt_tensor_cast(f, r->dt, &r->x[i]);
            wgt_tensor_free(f);
        } else
            r->x[i] = f;
        if (!st && with_grad && is_diff(in)) st = wgt_tensor_set_requires_grad(r->x[i], 1);
    }
    return st;
}

/* The forward's output as host f32 (*out malloc'd, *n elements). */
static wgt_status forward_host(run *r, float **out, int64_t *n)
{
    wgt_tensor *y = NULL, *f = NULL;
    wgt_status st = r->c->fwd(r->c, r->x, &y);
    if (!st) st = wgt_tensor_cast(y, WGT_F32, &f);
    if (!st) {
        *n = wgt_tensor_numel(f);
        *out = malloc(sizeof(float) * (*n ? *n : 1));
        st = *out ? wgt_tensor_to_host(f, *out, sizeof(float) * *n) : WGT_ERR_OUT_OF_MEMORY;
    }
    wgt_tensor_free(y), wgt_tensor_free(f);
    return st;
}

/* Forward, loss = sum(out * W), backward; grads[i] (malloc'd) for each differentiable input.
 * *W is made on the first call (numel of the output) and reused. */
static wgt_status backward_host(run *r, float **W, int64_t *nW, float **grads)
{
    wgt_tensor *y = NULL, *w = NULL, *p = NULL, *loss = NULL;
    wgt_status st = make_inputs(r, 1);
    if (!st) st = r->c->fwd(r->c, r->x, &y);
    if (!st && !*W) {
        *nW = wgt_tensor_numel(y);
        *W = malloc(sizeof(float) * (*nW ? *nW : 1));
        if (!*W) st = WGT_ERR_OUT_OF_MEMORY;
        for (int64_t j = 0; j < *nW && !st; j++) (*W)[j] = (float)(2 * urand() - 1);
    }
    if (!st) st = wgt_tensor_from_host(r->ctx, WGT_F32, wgt_tensor_ndim(y), wgt_tensor_shape(y), *W, &w);
    if (!st) st = wgt_binary(WGT_BINARY_MUL, y, w, &p);
    if (!st) st = wgt_reduce(WGT_REDUCE_SUM, p, 0, 0, 0, &loss);
    if (!st) st = wgt_backward(loss, NULL, 0);
    for (int i = 0; i < r->c->n_in && !st; i++) {
        if (!is_diff(&r->c->in[i])) continue;
        wgt_tensor *g = NULL;
        int64_t n = numel_of(&r->c->in[i]);
        if ((st = wgt_tensor_grad(r->x[i], &g))) break;
        if (!g) {
            st = wgt_error(WGT_ERR_INTERNAL, "input %d got no gradient", i);
            break;
        }
        grads[i] = malloc(sizeof(float) * (n ? n : 1));
        st = grads[i] ? wgt_tensor_to_host(g, grads[i], sizeof(float) * n) : WGT_ERR_OUT_OF_MEMORY;
        wgt_tensor_free(g);
    }
    wgt_tensor_free(y), wgt_tensor_free(w), wgt_tensor_free(p), wgt_tensor_free(loss);
    run_free_inputs(r);
    return st;
}

/* Central differences of sum(out * W) on the reference, in double over f32 outputs. */
static wgt_status finite_differences(run *r, const float *W, float **fd)
{
    const double h = 1e-2;
    int mode = wgt_grad_mode_get();
    wgt_grad_mode_set(0);
    wgt_status st = WGT_OK;
    for (int i = 0; i < r->c->n_in && !st; i++) {
        if (!is_diff(&r->c->in[i])) continue;
        int64_t n = numel_of(&r->c->in[i]);
        fd[i] = malloc(sizeof(float) * (n ? n : 1));
        if (!fd[i]) st = WGT_ERR_OUT_OF_MEMORY;
        for (int64_t j = 0; j < n && !st; j++) {
            float keep = r->data[i][j];
            double L[2] = {0, 0};
            for (int s = 0; s < 2 && !st; s++) {
                r->data[i][j] = (float)(keep + (s ? -h : h));
                float *y = NULL;
                int64_t ny = 0;
                if (!(st = make_inputs(r, 0))) st = forward_host(r, &y, &ny);
                for (int64_t k = 0; k < ny && !st; k++) L[s] += (double)y[k] * W[k];
                free(y);
                run_free_inputs(r);
            }
            /* the step actually taken, after rounding to f32 */
            double step = (double)(float)(keep + h) - (double)(float)(keep - h);
            fd[i][j] = (float)((L[0] - L[1]) / step);
            r->data[i][j] = keep;
        }
    }
    wgt_grad_mode_set(mode);
    return st;
}

/* Values within atol * max(1, max|want|) + rtol |want|; prints the worst element on failure. */
static int compare(FILE *log, const char *what, const char *name, int input, const float *got, const float *want,
                   int64_t n, double atol, double rtol)
{
    double scale = 1;
    for (int64_t j = 0; j < n; j++) scale = fmax(scale, fabs(want[j]));
    int64_t worst = -1;
    double worst_excess = 0;
    for (int64_t j = 0; j < n; j++) {
        double err = fabs((double)got[j] - want[j]), lim = atol * scale + rtol * fabs(want[j]);
        if (!(err <= lim) && (worst < 0 || err - lim > worst_excess)) worst = j, worst_excess = err - lim;
    }
    if (worst < 0) return 1;
    if (log)
        fprintf(log, "grad %s: %s: input %d element %lld: %.7g, want %.7g (atol %g x %.3g, rtol %g)\n", name, what,
                input, (long long)worst, got[worst], want[worst], atol, scale, rtol);
    return 0;
}

static void free_grads(float **g, int n)
{
    for (int i = 0; i < n; i++) {
        free(g[i]);
        g[i] = NULL;
    }
}

/* Round data to dt and back (the values a half input holds), on the reference. */
static wgt_status round_to(wgt_context *ref, wgt_dtype dt, const gc_in *in, float *v)
{
    if (dt == WGT_F32 || !is_diff(in)) return WGT_OK;
    wgt_tensor *a = NULL, *b = NULL, *c = NULL;
    wgt_status st = wgt_tensor_from_host(ref, WGT_F32, in->ndim, in->shape, v, &a);
    if (!st) st = wgt_tensor_cast(a, dt, &b);
    if (!st) st = wgt_tensor_cast(b, WGT_F32, &c);
    if (!st) st = wgt_tensor_to_host(c, v, sizeof(float) * numel_of(in));
    wgt_tensor_free(a), wgt_tensor_free(b), wgt_tensor_free(c);
    return st;
}

static void check(int ok, gc_totals *t, FILE *log, int verbose, const char *name, const char *what)
{
    if (ok) t->passed++;
    else t->failed++;
    if (verbose && log) fprintf(log, "%s grad %s: %s\n", ok ? "pass" : "FAIL", name, what);
}

static void run_case(wgt_context *dev, wgt_context *ref, const gc_case *c, int verbose, FILE *log, gc_totals *t)
{
    static const wgt_dtype dts[3] = {WGT_F32, WGT_F16, WGT_BF16};
    static const double half_tol[3] = {0, 1e-2, 5e-2};
    double tol = c->tol > 0 ? c->tol : 1;
    rng_state = 0x9E3779B97F4A7C15ull;
    for (size_t k = 0; c->name[k]; k++) rng_state = (rng_state ^ (uint8_t)c->name[k]) * 0x100000001B3ull;
    run r = {0};
    r.c = c;
    int ok_alloc = 1;
    for (int i = 0; i < c->n_in; i++) {
        r.data[i] = malloc(sizeof(float) * (numel_of(&c->in[i]) ? numel_of(&c->in[i]) : 1));
        if (!r.data[i]) ok_alloc = 0;
        else gen_values(&c->in[i], r.data[i]);
    }
    t->cases++;
    if (!ok_alloc) {
        check(0, t, log, verbose, c->name, "out of host memory");
        goto done;
    }
    for (int d = 0; d < (c->f32_only ? 1 : 3); d++) {
        float *W = NULL, *gref[GC_MAX_IN] = {0}, *gdev[GC_MAX_IN] = {0}, *fd[GC_MAX_IN] = {0};
        int64_t nW = 0;
        wgt_status st = WGT_OK;
        for (int i = 0; i < c->n_in && !st; i++) st = round_to(ref, dts[d], &c->in[i], r.data[i]);
        char what[96];
        r.ctx = ref, r.dt = WGT_F32;
        if (!st) st = backward_host(&r, &W, &nW, gref);
        if (st) {
            snprintf(what, sizeof what, "reference backward (%s)", wgt_dtype_name(dts[d]));
            if (log) fprintf(log, "grad %s: %s failed: %s: %s\n", c->name, what, wgt_status_str(st), wgt_errmsg());
            check(0, t, log, verbose, c->name, what);
        } else if (d == 0) {
            st = finite_differences(&r, W, fd);
            int ok = !st;
            for (int i = 0; i < c->n_in && ok; i++)
                if (is_diff(&c->in[i]))
                    ok = compare(log, "reference vs finite differences", c->name, i, gref[i], fd[i],
                                 numel_of(&c->in[i]), 3e-3 * tol, 3e-3 * tol);
            if (st && log) fprintf(log, "grad %s: finite differences failed: %s\n", c->name, wgt_errmsg());
            check(ok, t, log, verbose, c->name, "reference backward vs finite differences (f32)");
        }
        if (!st) {
            r.ctx = dev, r.dt = dts[d];
            snprintf(what, sizeof what, "device backward (%s) vs reference (f32)", wgt_dtype_name(dts[d]));
            st = backward_host(&r, &W, &nW, gdev);
            int ok = !st;
            if (st && log) fprintf(log, "grad %s: %s: %s: %s\n", c->name, what, wgt_status_str(st), wgt_errmsg());
            double at = d ? half_tol[d] : 1e-4, rt = d ? half_tol[d] : 1e-3;
            for (int i = 0; i < c->n_in && ok; i++)
                if (is_diff(&c->in[i]))
                    ok = compare(log, what, c->name, i, gdev[i], gref[i], numel_of(&c->in[i]), at * tol, rt * tol);
            check(ok, t, log, verbose, c->name, what);
        }
        free(W);
        free_grads(gref, c->n_in), free_grads(gdev, c->n_in), free_grads(fd, c->n_in);
        run_free_inputs(&r);
    }
done:
    for (int i = 0; i < c->n_in; i++) free(r.data[i]);
}

void gc_run(wgt_context *dev, wgt_context *ref, const char *const *names, int n, int verbose, FILE *log,
            gc_totals *t)
{
    init_cases();
    for (int k = 0; k < N_CASES; k++) {
        int match = n == 0;
        for (int j = 0; j < n && !match; j++) match = strstr(cases[k].name, names[j]) || !strcmp(cases[k].op, names[j]);
        if (match) run_case(dev, ref, &cases[k], verbose, log, t);
    }
}
