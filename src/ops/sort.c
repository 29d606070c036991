/* Sorting and searching: sort, argsort, topk, kthvalue, median, unique (src/kernels/sort.wgsl);
 * searchsorted, bucketize, histc (src/kernels/search.wgsl).
 *
 * Rows along the dim become (key, position) pairs (see sort.wgsl) in u32 buffers [rows, L]:
 *  - rows of up to TILE elements (4096 with 32 KiB of workgroup memory, else 2048; half that for
 *    i64, whose keys are two words) sort in one dispatch, a bitonic network in workgroup memory;
 *    short rows share a workgroup (TILE / S rows of a power-of-two S each), so [4096, 1024] is
 *    1024 workgroups of four rows;
 *  - longer rows sort in tiles of TILE, then log2(L / TILE) merge dispatches of doubling runs (a
 *    workgroup per TILE outputs, split along the merge path);
 *  - topk (and kthvalue, median) with k <= TILE / 2 keeps the best k of every tile and sorts the
 *    survivors again until one tile is left: k = 50 of a [150000] row is two tile-sort dispatches
 *    (37 tiles, then the 1850 survivors), no merge. Larger k sort the whole row.
 * A last dispatch writes values (gathered from x, so -0 and NaN payloads survive) and i32 indices.
 * Nothing waits for the device except unique, which reads its count back (as masked_select).
 * Inputs past one storage binding sort in parts along another dim (copied into the outputs'
 * slices); one row past a binding, and unique of such a tensor, run the reference. */
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "tensor/record.h"

typedef struct sort_params {
    uint32_t rows, Lin, S, nt, keep, Lout, from_x, off, stride, flip, nan_key, w, n_out, inner, pick, pos, n, Ls,
        is_float, outs;
    op_layout_params kept;
} sort_params;

enum { PICK_NONE, PICK_POS, PICK_MEDIAN };

/* Key words per pair: 1 (keys of 32 bits), 2 for i64 ((hi ^ sign bit, lo), high word first). */
static int key_words(wgt_dtype dt)
{
    return dt == WGT_I64 ? 2 : 1;
}

/* Pair slots per workgroup: the most (a power of two) whose keys and positions fit workgroup
 * memory, using at most 32 KiB: 4096 for 32-bit keys, 2048 for i64; half that with 16 KiB. */
static uint32_t tile_size(wgt_context *ctx, wgt_dtype dt)
{
    uint32_t slot = 4u * (uint32_t)(key_words(dt) + 1), tile = 4096;
    uint32_t mem = wgt_gpu_limits(ctx)->max_compute_workgroup_storage_size;
    if (mem > 32768) mem = 32768;
    while (tile > 256 && tile * slot > mem) tile /= 2;
    return tile;
}

/* The sorting kernels' workgroup size: 512 where the device allows it (fewer barrier rounds per
 * tile), else op_workgroup_size(); at most TILE / 2 so that each invocation owns two slots. */
static uint32_t wg_size(wgt_context *ctx, uint32_t tile)
{
    uint32_t wg = op_workgroup_size(ctx);
    if (wg == 256 && wgt_gpu_limits(ctx)->max_compute_invocations_per_workgroup >= 512 &&
        wgt_gpu_limits(ctx)->max_compute_workgroup_size_x >= 512)
        wg = 512;
    while (wg > tile / 2) wg /= 2;
    return wg;
}

static wgt_status sort_kernel(wgt_context *ctx, wgt_dtype xdt, wgt_dtype idt, const char *entry, wgt_kernel **k)
{
    char pre[16384];
    int wide = key_words(xdt) == 2;
    const char *ct = wide ? "i64" : op_compute_type(xdt);
    uint32_t tile = tile_size(ctx, xdt);
    snprintf(pre, sizeof pre,
             "%s\n%s\nconst TILE: u32 = %uu;\nconst WG: u32 = %uu;\nconst WG1: u32 = %uu;\nconst PACK: u32 = %du;\n"
             "alias CT = %s;\nalias KT = %s;\n",
             op_wgsl_lib(), wide ? op_wgsl_lib_i64() : "", tile, wg_size(ctx, tile), op_workgroup_size(ctx),
             op_pack(xdt), wide ? "vec2<u32>" : ct, wide ? "vec2<u32>" : "u32");
    op_wgsl_loader(pre, sizeof pre, "ldx", "xs", xdt, ct);
    op_wgsl_storer(pre, sizeof pre, "stv", "ov", xdt, ct);
    op_wgsl_storer(pre, sizeof pre, "sti", "oi", idt, "i32");
    /* the key functions: sections of src/kernels/lib_sort_ops.wgsl */
    const char *key = op_is_float(xdt) ? "key float" : !strcmp(ct, "u32") ? "key u32" : "key i32";
    if (!op_wgsl_section(pre, sizeof pre, "lib_sort_ops", wide ? "keys 64" : "keys 32") ||
        (!wide && !op_wgsl_section(pre, sizeof pre, "lib_sort_ops", key)))
        return op_fail(ctx, WGT_ERR_INTERNAL, "sort: kernel prelude too long");
    if (strlen(pre) + 1 >= sizeof pre) return op_fail(ctx, WGT_ERR_INTERNAL, "sort: kernel prelude too long");
    return wgt_gpu_kernel(ctx, "sort", pre, entry, NULL, 0, k);
}

/* ---- the row sorter ------------------------------------------------------------------------- */

typedef struct rowsort {
    wgt_context *ctx;
    const wgt_tensor *x;
    wgt_dtype idt;          /* indices' dtype in unpack (i32) */
    int dim;
    int64_t rows, L, inner;
    sort_params p;          /* the fields every dispatch shares: off, stride, flip, nan_key, kept */
    wgt_binding bx;
    wgt_tensor *buf[4];     /* keys A, positions A, keys B, positions B: [rows, L] of KW / 1 u32 */
    wgt_tensor *dummy[4];   /* unused writable bindings */
    int cur;                /* 0: the result is in A; 2: in B */
    int64_t Ls;             /* row length of the result */
} rowsort;

static void rowsort_free(rowsort *s)
{
    for (int i = 0; i < 4; i++) wgt_tensor_free(s->buf[i]), wgt_tensor_free(s->dummy[i]);
}

/* Can x sort on the GPU: it and the pair buffers (keys of up to 8 bytes) fit one binding. */
static int rowsort_fits(const wgt_tensor *x)
{
    wgt_context *ctx = x->st->ctx;
    uint64_t n = (uint64_t)wgt_layout_numel(&x->l), lim = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    int64_t lo, hi;
    op_extent(&x->l, &lo, &hi);
    uint64_t xb = hi >= lo ? (uint64_t)(hi + 1 - lo) * wgt_dtype_size(x->l.dtype) + 16 : 0;
    return n < UINT32_MAX / 2 && n * 8 <= lim && xb <= lim;
}

static wgt_status rowsort_init(rowsort *s, const wgt_tensor *x, int dim, int desc, int median)
{
    memset(s, 0, sizeof *s);
    wgt_context *ctx = x->st->ctx;
    s->ctx = ctx;
    s->x = x;
    s->dim = dim;
    s->idt = WGT_I32;
    int nd = x->l.ndim;
    s->L = nd ? x->l.shape[dim] : 1;
    s->inner = 1;
    for (int d = dim + 1; d < nd; d++) s->inner *= x->l.shape[d];
    s->rows = s->L ? wgt_layout_numel(&x->l) / s->L : 0;
    wgt_layout kept = x->l;
    kept.ndim = 0;
    for (int d = 0; d < nd; d++)
        if (d != dim) kept.shape[kept.ndim] = x->l.shape[d], kept.strides[kept.ndim++] = x->l.strides[d];
    wgt_status st;
    int64_t base;
    if ((st = op_bind_all(x, &s->bx, &base))) return st;
    if ((st = op_layout_params_fill(ctx, &kept, &s->p.kept))) return st;
    s->p.off = (uint32_t)(x->l.offset - base);
    s->p.stride = nd ? (uint32_t)x->l.strides[dim] : 0;
    s->p.flip = desc ? 0xffffffffu : 0;
    s->p.nan_key = median ? 0 : 0xffffffffu;
    s->p.is_float = op_is_float(x->l.dtype);
    int64_t n = s->rows * s->L > 0 ? s->rows * s->L : 1, four = 4;
    for (int i = 0; i < 4; i++) {
        int64_t words = i % 2 ? n : n * key_words(x->l.dtype);
        if ((st = wgt_tensor_new(ctx, WGT_U32, 1, &words, &s->buf[i]))) return st;
        if ((st = wgt_tensor_new(ctx, WGT_U32, 1, &four, &s->dummy[i]))) return st;
    }
    return WGT_OK;
}

static wgt_status bind(const wgt_tensor *t, wgt_binding *b)
{
    int64_t base;
    return op_bind_all(t, b, &base);
}

/* One dispatch of entry with bindings x, ka/ia (NULL: x's), kb/ib, ov/oi (NULL: dummies). */
static wgt_status rs_dispatch(rowsort *s, const char *entry, const sort_params *p, const wgt_tensor *ka,
                              const wgt_tensor *ia, const wgt_tensor *kb, const wgt_tensor *ib, const wgt_tensor *ov,
                              const wgt_tensor *oi, uint64_t groups)
{
    if (groups == 0) return WGT_OK;
    wgt_kernel *k;
    wgt_status st = sort_kernel(s->ctx, s->x->l.dtype, s->idt, entry, &k);
    if (st) return st;
    wgt_binding b[7];
    b[0] = s->bx;
    const wgt_tensor *ts[6] = {ka, ia, kb ? kb : s->dummy[0], ib ? ib : s->dummy[1], ov ? ov : s->dummy[2],
                               oi ? oi : s->dummy[3]};
    for (int i = 0; i < 6; i++) {
        if (!ts[i]) b[1 + i] = s->bx;
        else if ((st = bind(ts[i], &b[1 + i]))) return st;
    }
    uint32_t gx, gy;
    op_grid(s->ctx, groups, &gx, &gy);
    return wgt_gpu_dispatch(s->ctx, k, p, sizeof *p, b, 7, gx, gy, 1);
}

static uint32_t pow2_at_least(int64_t n)
{
    uint32_t s = 2;
    while (s < n) s <<= 1;
    return s;
}

/* One tile pass: rows of Lin pairs (from x or buffer pair src) into buffer pair dst, keeping keep
 * per segment of S; returns the written row length. */
static wgt_status rs_tile(rowsort *s, int src, int dst, int64_t Lin, uint32_t S, int64_t keep, int64_t *Lout)
{
    sort_params p = s->p;
    uint32_t tile = tile_size(s->ctx, s->x->l.dtype);
    int64_t nt = (Lin + S - 1) / S;
    int64_t last = Lin - (nt - 1) * S;
    *Lout = (nt - 1) * keep + (last < keep ? last : keep);
    p.rows = (uint32_t)s->rows;
    p.Lin = (uint32_t)Lin;
    p.S = S;
    p.nt = (uint32_t)nt;
    p.keep = (uint32_t)keep;
    p.Lout = (uint32_t)*Lout;
    p.from_x = src < 0;
    uint64_t groups = ((uint64_t)s->rows * nt + tile / S - 1) / (tile / S);
    return rs_dispatch(s, "tile_main", &p, src < 0 ? NULL : s->buf[src], src < 0 ? NULL : s->buf[src + 1], s->buf[dst],
                       s->buf[dst + 1], NULL, NULL, groups);
}

/* Sort every row (k == L) or find its best k, sorted, into s->buf[s->cur..], rows of s->Ls. */
static wgt_status rs_run(rowsort *s, int64_t k)
{
    uint32_t tile = tile_size(s->ctx, s->x->l.dtype);
    int64_t L = s->L;
    wgt_status st;
    s->cur = 0;
    if (s->rows == 0 || L == 0 || k == 0) {
        s->Ls = 0;
        return WGT_OK;
    }
    if (k < L && k <= tile / 2) { /* keep the best k of every tile until one tile is left */
        int64_t Lin = L, Lout;
        int src = -1, dst = 0;
        for (;;) {
            uint32_t S = Lin <= tile ? pow2_at_least(Lin) : tile;
            if ((st = rs_tile(s, src, dst, Lin, S, k, &Lout))) return st;
            s->cur = dst;
            if (Lin <= S) break;
            Lin = Lout;
            src = dst;
            dst ^= 2;
        }
        s->Ls = k;
        return WGT_OK;
    }
    int64_t Lout;
    uint32_t S = L <= tile ? pow2_at_least(L) : tile;
    if ((st = rs_tile(s, -1, 0, L, S, S, &Lout))) return st;
    sort_params p = s->p;
    p.rows = (uint32_t)s->rows;
    p.Lin = (uint32_t)L;
    p.n = (uint32_t)(s->rows * L);
    uint64_t chunks = (uint64_t)s->rows * (uint64_t)((L + tile - 1) / tile);
    for (uint64_t w = S; w < (uint64_t)L; w *= 2) {
        p.w = (uint32_t)w;
        int a = s->cur, b = s->cur ^ 2;
        if ((st = rs_dispatch(s, "merge_main", &p, s->buf[a], s->buf[a + 1], s->buf[b], s->buf[b + 1], NULL, NULL,
                              chunks)))
            return st;
        s->cur = b;
    }
    s->Ls = L;
    return WGT_OK;
}

/* Write values/indices (either may be NULL): n_out per row (pick: one, at pos). */
static wgt_status rs_unpack(rowsort *s, int64_t n_out, int pick, int64_t pos, wgt_tensor *values, wgt_tensor *indices)
{
    sort_params p = s->p;
    int64_t total = values ? wgt_layout_numel(&values->l) : indices ? wgt_layout_numel(&indices->l) : 0;
    if (total == 0) return WGT_OK;
    p.rows = (uint32_t)s->rows;
    p.n_out = (uint32_t)n_out;
    p.inner = (uint32_t)s->inner;
    p.pick = (uint32_t)pick;
    p.pos = (uint32_t)pos;
    p.Ls = (uint32_t)s->Ls;
    p.outs = (values ? 1u : 0u) | (indices ? 2u : 0u);
    int pack = op_pack(s->x->l.dtype);
    uint64_t words = values ? (uint64_t)(total + pack - 1) / pack : 0;
    if (indices && (uint64_t)total > words) words = (uint64_t)total;
    return rs_dispatch(s, "unpack_main", &p, s->buf[s->cur], s->buf[s->cur + 1], NULL, NULL, values, indices,
                       (words + op_workgroup_size(s->ctx) - 1) / op_workgroup_size(s->ctx));
}

/* ---- sort, argsort, topk, kthvalue, median ------------------------------------------------------ */

enum { SEL_SORT, SEL_TOPK, SEL_KTH, SEL_MEDIAN };

typedef struct sel_arg {
    int kind, dim, desc, keepdim;
    int64_t k;
    int has_v, has_i;
} sel_arg;

static wgt_status sel_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    sel_arg *a = arg;
    const wgt_cpu_tensor *v = a->has_v ? &out[0] : NULL, *i = a->has_i ? &out[a->has_v] : NULL;
    switch (a->kind) {
    case SEL_SORT: return wgt_cpu_sort(&in[0], a->dim, a->desc, v, i);
    case SEL_TOPK: return wgt_cpu_topk(&in[0], a->k, a->dim, a->desc, v, i);
    case SEL_KTH: return wgt_cpu_kthvalue(&in[0], a->k, a->dim, a->keepdim, v, i);
    default: return wgt_cpu_median(&in[0], a->dim, a->keepdim, v, i);
    }
}

static const char *sel_name(int kind)
{
    return kind == SEL_SORT ? "sort" : kind == SEL_TOPK ? "topk" : kind == SEL_KTH ? "kthvalue" : "median";
}

static wgt_status select_impl(int kind, const wgt_tensor *x, int64_t k, int dim, int desc, int keepdim,
                              wgt_tensor **values, wgt_tensor **indices);

/* The outermost dim other than dim with more than one element, and how many of its positions fit
 * one sort (x's part and the pair buffers within one binding); 0 when not even one does. */
static int64_t chunk_rows(const wgt_tensor *x, int dim, int *od)
{
    *od = -1;
    for (int d = 0; d < x->l.ndim && *od < 0; d++)
        if (d != dim && x->l.shape[d] > 1) *od = d;
    if (*od < 0) return 0;
    int64_t part = x->l.shape[*od];
    for (;;) {
        wgt_tensor *v;
        if (wgt_tensor_narrow(x, *od, 0, part, &v)) return 0;
        int ok = rowsort_fits(v);
        wgt_tensor_free(v);
        if (ok) return part;
        if (part == 1) return 0;
        part = (part + 1) / 2;
    }
}

/* x past one binding: parts along dim od, each sorted on its own and written into its slice of the
 * outputs (v, ix: either may be NULL). */
static wgt_status select_chunked(int kind, const wgt_tensor *x, int64_t k, int dim, int desc, int keepdim, int od,
                                 int64_t part, wgt_tensor *v, wgt_tensor *ix)
{
    int od_out = od > dim && kind >= SEL_KTH && !keepdim ? od - 1 : od;
    wgt_status st = WGT_OK;
    for (int64_t r0 = 0; !st && r0 < x->l.shape[od]; r0 += part) {
        int64_t len = x->l.shape[od] - r0 < part ? x->l.shape[od] - r0 : part;
        wgt_tensor *xc = NULL, *vc = NULL, *ic = NULL, *vd = NULL, *id = NULL;
        st = wgt_tensor_narrow(x, od, r0, len, &xc);
        if (!st) st = select_impl(kind, xc, k, dim, desc, keepdim, v ? &vc : NULL, ix ? &ic : NULL);
        if (!st && v && !(st = wgt_tensor_narrow(v, od_out, r0, len, &vd))) st = op_assign(vd, vc);
        if (!st && ix && !(st = wgt_tensor_narrow(ix, od_out, r0, len, &id))) st = op_assign(id, ic);
        wgt_tensor_free(xc), wgt_tensor_free(vc), wgt_tensor_free(ic), wgt_tensor_free(vd), wgt_tensor_free(id);
    }
    return st;
}

static wgt_status select_impl(int kind, const wgt_tensor *x, int64_t k, int dim, int desc, int keepdim,
                              wgt_tensor **values, wgt_tensor **indices)
{
    const char *name = sel_name(kind);
    if (!x || (!values && !indices))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: NULL argument (x, or both outputs)", name);
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    wgt_context *ctx = x->st->ctx;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (x->l.ndim == 0 && dim == -1) dim = 0; /* as PyTorch: a 0-D tensor has dims 0 and -1 */
    if ((st = op_dim(ctx, name, &dim, x->l.ndim))) return st;
    int nd = x->l.ndim;
    int64_t L = nd ? x->l.shape[dim] : 1;
    if (kind == SEL_TOPK && (k < 0 || k > L))
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: k = %lld is outside [0, %lld] (the size of dim %d)", name, (long long)k,
                       (long long)L, dim);
    if (kind == SEL_KTH && (k < 1 || k > L))
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: k = %lld is outside [1, %lld] (the size of dim %d)", name, (long long)k,
                       (long long)L, dim);
    if (kind == SEL_MEDIAN && L == 0) return op_fail(ctx, WGT_ERR_SHAPE, "%s: dim %d is empty", name, dim);
    if (x->l.dtype >= WGT_DTYPE_COUNT) return op_fail(ctx, WGT_ERR_DTYPE, "%s: x has an unknown dtype", name);
    /* output shape: x's, with dim of k / 1 / removed */
    int64_t oshape[WGT_MAX_DIMS];
    int ond = 0;
    int64_t n_out = kind == SEL_SORT ? L : kind == SEL_TOPK ? k : 1;
    for (int d = 0; d < nd; d++) {
        if (d != dim) oshape[ond++] = x->l.shape[d];
        else if (kind <= SEL_TOPK || keepdim) oshape[ond++] = n_out;
    }
    wgt_tensor *v = NULL, *ix = NULL;
    if (values && (st = wgt_tensor_new(ctx, x->l.dtype, ond, oshape, &v))) return st;
    if (indices && (st = wgt_tensor_new(ctx, WGT_I32, ond, oshape, &ix))) {
        wgt_tensor_free(v);
        return st;
    }
    int fits = rowsort_fits(x), od = -1;
    int64_t part = fits || wgt_gpu_runs_reference(ctx) ? 0 : chunk_rows(x, dim, &od);
    int gpu_ok = fits || part > 0;
    int use_gpu = op_use_gpu(ctx, name, x->l.dtype, gpu_ok);
    if (use_gpu && !fits) {
        st = select_chunked(kind, x, k, dim, desc, keepdim, od, part, v, ix);
    } else if (use_gpu) {
        rowsort s;
        int median = kind == SEL_MEDIAN && op_is_float(x->l.dtype);
        st = rowsort_init(&s, x, dim, kind == SEL_SORT || kind == SEL_TOPK ? desc : 0, median);
        int64_t want = kind == SEL_SORT ? L : kind == SEL_MEDIAN ? (L - 1) / 2 + 1 : k;
        if (!st) st = rs_run(&s, want);
        if (!st) {
            if (kind <= SEL_TOPK) st = rs_unpack(&s, n_out, PICK_NONE, 0, v, ix);
            else st = rs_unpack(&s, 1, median ? PICK_MEDIAN : PICK_POS, want - 1, v, ix);
        }
        rowsort_free(&s);
    } else if (!(st = op_fallback_status(ctx, name, x->l.dtype, gpu_ok))) {
        sel_arg a = {kind, dim, desc, keepdim, k, v != NULL, ix != NULL};
        wgt_tensor *outs[2];
        int n = 0;
        if (v) outs[n++] = v;
        if (ix) outs[n++] = ix;
        const wgt_tensor *ins[1] = {x};
        st = op_reference(ctx, sel_ref, &a, ins, 1, outs, n);
    }
    if (st) {
        wgt_tensor_free(v);
        wgt_tensor_free(ix);
        return st;
    }
    if (values) *values = v;
    if (indices) *indices = ix;
    return WGT_OK;
}

/* select_impl, recorded: the values' gradient goes back to where each came from, so while
 * autograd records the indices are made even when the caller wants none. */
static wgt_status select_rec(int op, const wgt_tensor *x, int64_t k, int dim, int flag, int keepdim,
                             wgt_tensor **values, wgt_tensor **indices)
{
    wgt_tensor *own = NULL, **ix = indices ? indices : values && x && x->ag && op_grad_mode() ? &own : NULL;
    wgt_status st = select_impl(op, x, k, dim, flag, keepdim, values, ix);
    if (!st && values) {
        op_grad_select rec = {dim < 0 ? dim + x->l.ndim : dim, keepdim};
        const wgt_tensor *in[2] = {x, ix ? *ix : NULL};
        st = op_record(st, OP_GRAD_SELECT, in, 2, &rec, sizeof rec, values);
        if (st && indices) wgt_tensor_free(*indices), *indices = NULL;
    }
    wgt_tensor_free(own);
    return st;
}

wgt_status wgt_sort(const wgt_tensor *x, int dim, int descending, wgt_tensor **values, wgt_tensor **indices)
{
    return select_rec(SEL_SORT, x, 0, dim, descending, 1, values, indices);
}

wgt_status wgt_argsort(const wgt_tensor *x, int dim, int descending, wgt_tensor **indices)
{
    if (!indices) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "argsort: NULL argument");
    return select_impl(SEL_SORT, x, 0, dim, descending, 1, NULL, indices);
}

wgt_status wgt_topk(const wgt_tensor *x, int64_t k, int dim, int largest, int sorted, wgt_tensor **values,
                    wgt_tensor **indices)
{
    (void)sorted; /* always sorted: the unsorted order would be an arbitrary one anyway */
    return select_rec(SEL_TOPK, x, k, dim, largest, 1, values, indices);
}

wgt_status wgt_kthvalue(const wgt_tensor *x, int64_t k, int dim, int keepdim, wgt_tensor **values,
                        wgt_tensor **indices)
{
    return select_rec(SEL_KTH, x, k, dim, 0, keepdim, values, indices);
}

wgt_status wgt_median(const wgt_tensor *x, int dim, int keepdim, wgt_tensor **values, wgt_tensor **indices)
{
    return select_rec(SEL_MEDIAN, x, 0, dim, 0, keepdim, values, indices);
}

/* ---- unique ------------------------------------------------------------------------------------ */

typedef struct uniq_arg {
    int has[4]; /* values, inverse, counts, first */
    int64_t count;
} uniq_arg;

static wgt_status uniq_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    uniq_arg *a = arg;
    const wgt_cpu_tensor *o[4] = {NULL, NULL, NULL, NULL};
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (a->has[i]) o[i] = &out[n++];
    return wgt_cpu_unique(&in[0], o[0], o[1], o[2], o[3], &a->count);
}

/* The GPU path: sort the flattened x, flag group starts, scan the flags (wgt_scan), read the
 * count back, then starts, inverse, values, counts and first occurrences. */
static wgt_status unique_gpu(const wgt_tensor *x, wgt_tensor **outs /* values, inverse, counts, first */, int *want)
{
    wgt_context *ctx = x->st->ctx;
    int64_t n = wgt_layout_numel(&x->l);
    wgt_tensor *flat = NULL, *c = NULL, *flags = NULL, *groups = NULL, *starts = NULL;
    wgt_status st = WGT_OK;
    if (!wgt_layout_is_contiguous(&x->l)) st = wgt_tensor_contiguous(x, &c);
    if (!st) st = wgt_tensor_reshape(c ? c : x, 1, &n, &flat);
    rowsort s;
    int inited = 0;
    if (!st && !(st = rowsort_init(&s, flat, 0, 0, 0))) inited = 1;
    if (!st) st = rs_run(&s, n);
    if (!st) st = wgt_tensor_new(ctx, WGT_I32, 1, &n, &flags);
    sort_params p = s.p;
    p.n = (uint32_t)n;
    uint32_t wg1 = op_workgroup_size(ctx);
    uint64_t groups_n = ((uint64_t)n + wg1 - 1) / wg1;
    if (!st) st = rs_dispatch(&s, "uflag_main", &p, s.buf[s.cur], s.buf[s.cur + 1], flags, NULL, NULL, NULL, groups_n);
    if (!st) st = wgt_scan(WGT_SCAN_CUMSUM, flags, 0, &groups, NULL);
    int32_t count = 0;
    if (!st)
        st = wgt_gpu_download(ctx, groups->st->buf, (uint64_t)(groups->l.offset + n - 1) * 4, &count, sizeof count);
    int64_t cn = count;
    const int64_t *xshape = x->l.shape;
    for (int i = 0; !st && i < 4; i++) {
        if (!want[i]) continue;
        if (i == 1) st = wgt_tensor_new(ctx, WGT_I32, x->l.ndim, xshape, &outs[1]);
        else st = wgt_tensor_new(ctx, i == 0 ? x->l.dtype : WGT_I32, 1, &cn, &outs[i]);
    }
    if (!st) st = wgt_tensor_new(ctx, WGT_U32, 1, &cn, &starts);
    p.outs = want[1] ? 2u : 0u;
    if (!st) st = rs_dispatch(&s, "ustart_main", &p, groups, s.buf[s.cur + 1], starts, NULL, NULL, outs[1], groups_n);
    /* values read x flattened: position j at j + off */
    wgt_layout fl;
    wgt_layout_contiguous(&fl, flat->l.dtype, 1, &n);
    if (!st) st = op_layout_params_fill(ctx, &fl, &p.kept);
    p.n_out = (uint32_t)cn;
    p.outs = (want[0] ? 1u : 0u) | (want[2] ? 2u : 0u) | (want[3] ? 4u : 0u);
    if (!st)
        st = rs_dispatch(&s, "ugather_main", &p, starts, s.buf[s.cur + 1], NULL, outs[3], outs[0], outs[2],
                         ((uint64_t)cn + wg1 - 1) / wg1);
    if (inited) rowsort_free(&s);
    wgt_tensor_free(starts);
    wgt_tensor_free(groups);
    wgt_tensor_free(flags);
    wgt_tensor_free(flat);
    wgt_tensor_free(c);
    return st;
}

static wgt_status unique_unrecorded(const wgt_tensor *x, wgt_tensor **values, wgt_tensor **inverse,
                                    wgt_tensor **counts, wgt_tensor **first)
{
    OP_BEGIN(x, values);
    if (inverse) *inverse = NULL;
    if (counts) *counts = NULL;
    if (first) *first = NULL;
    if (x->l.dtype >= WGT_DTYPE_COUNT) return op_fail(ctx, WGT_ERR_DTYPE, "unique: x has an unknown dtype");
    wgt_tensor *outs[4] = {NULL, NULL, NULL, NULL};
    int want[4] = {1, inverse != NULL, counts != NULL, first != NULL};
    int64_t n = wgt_layout_numel(&x->l);
    wgt_status st = WGT_OK;
    int gpu_ok = rowsort_fits(x);
    if (n == 0) {
        int64_t zero = 0;
        for (int i = 0; !st && i < 4; i++)
            if (want[i])
                st = i == 1 ? wgt_tensor_new(ctx, WGT_I32, x->l.ndim, x->l.shape, &outs[1])
                            : wgt_tensor_new(ctx, i == 0 ? x->l.dtype : WGT_I32, 1, &zero, &outs[i]);
    } else if (op_use_gpu(ctx, "unique", x->l.dtype, gpu_ok)) {
        st = unique_gpu(x, outs, want);
    } else if (!(st = op_fallback_status(ctx, "unique", x->l.dtype, gpu_ok))) {
        uniq_arg a = {{0, 0, 0, 0}, 0};
        const wgt_tensor *ins[1] = {x};
        if (!(st = op_reference(ctx, uniq_ref, &a, ins, 1, NULL, 0))) {
            wgt_tensor *list[4];
            int m = 0;
            for (int i = 0; !st && i < 4; i++) {
                if (!want[i]) continue;
                if (i == 1) st = wgt_tensor_new(ctx, WGT_I32, x->l.ndim, x->l.shape, &outs[1]);
                else st = wgt_tensor_new(ctx, i == 0 ? x->l.dtype : WGT_I32, 1, &a.count, &outs[i]);
                if (!st) list[m++] = outs[i], a.has[i] = 1;
            }
            if (!st) st = op_reference(ctx, uniq_ref, &a, ins, 1, list, m);
        }
    }
    if (st) {
        for (int i = 0; i < 4; i++) wgt_tensor_free(outs[i]);
        return st;
    }
    *values = outs[0];
    if (inverse) *inverse = outs[1];
    if (counts) *counts = outs[2];
    if (first) *first = outs[3];
    return WGT_OK;
}

/* no gradient, as PyTorch (derivatives.yaml: _unique2 not_implemented): a repeated value splits
 * into several when one of its copies moves, so the values are not differentiable there */
wgt_status wgt_unique(const wgt_tensor *x, wgt_tensor **values, wgt_tensor **inverse, wgt_tensor **counts,
                      wgt_tensor **first)
{
    return op_record_nondiff(unique_unrecorded(x, values, inverse, counts, first), "unique", &x, 1, values);
}

