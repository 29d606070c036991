/* Reductions over any set of dims (wgt_reduce, wgt_max_dim, wgt_min_dim) and scans along one dim
 * (wgt_scan). Kernels: src/kernels/reduce.wgsl and src/kernels/reduce_scan.wgsl; the op is a uniform, so
 * every reduction of one dtype signature shares one pipeline.
 *
 * Result dtypes follow PyTorch except where 64-bit integers would be needed: sum and prod of
 * i32/i8/u8/bool give i32 here (PyTorch: i64), of u32 give u32; argmax/argmin and the indices of
 * max/min/cummax/cummin are i32 (PyTorch: i64). mean, var, std and norms of integers are refused
 * (PyTorch raises for mean/var/std too); logsumexp of integers gives f32. i64 inputs reduce and
 * scan exactly in 64 bits (word pairs, src/kernels/lib_i64.wgsl) in kernel variants of their own;
 * only logsumexp of i64 runs the reference. */
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/elementwise.h"
#include "ops/ops.h"
#include "tensor/record.h"

typedef struct red_params {
    uint32_t n_out, R, op, off, red_simple, red_stride;
    float correction;
    uint32_t zero, out_w0, idx_off, col, stage, G, part, g0, s_o, s_r;
    op_layout_params kept, red;
} red_params;

wgt_dtype wgt_reduce_result_dtype(wgt_reduce_op op, wgt_dtype x)
{
    switch (op) {
    case WGT_REDUCE_SUM: case WGT_REDUCE_PROD:
        if (op_is_float(x) || x == WGT_U32 || x == WGT_I64) return x;
        return WGT_I32; /* PyTorch: i64 */
    case WGT_REDUCE_ALL: case WGT_REDUCE_ANY: return WGT_BOOL;
    case WGT_REDUCE_ARGMAX: case WGT_REDUCE_ARGMIN: return WGT_I32; /* PyTorch: i64 */
    case WGT_REDUCE_LOGSUMEXP: return op_is_float(x) ? x : WGT_F32;
    default: return x;
    }
}

static int float_only(wgt_reduce_op op)
{
    return op == WGT_REDUCE_MEAN || op == WGT_REDUCE_VAR || op == WGT_REDUCE_STD || op == WGT_REDUCE_NORM1 ||
           op == WGT_REDUCE_NORM2 || op == WGT_REDUCE_NORM_INF;
}

/* What the reduce prelude depends on: the pipeline cache's key (no padding bytes). */
typedef struct red_key {
    uint8_t ct, xdt, odt, with_idx; /* ct: 0 f32, 1 i32, 2 u32, 3 i64 */
    uint32_t sg, wg;
} red_key;

/* The accumulation type of op over dtype x: "f32", "i32", "u32" or "i64" (exact 64-bit words). */
static const char *red_ct(wgt_reduce_op op, wgt_dtype x)
{
    if (op_is_float(x) || float_only(op) || op == WGT_REDUCE_LOGSUMEXP) return "f32";
    return x == WGT_I64 ? "i64" : op_compute_type(x);
}


/* The prelude of key k; with extra appended, and without the loader ld (skip_ld) or the storer st
 * (skip_st), which extra then defines (a graph's fused prologue or epilogue: ew_host_note). */
static char *red_prelude_ex(const void *key, const char *extra, int skip_ld, int skip_st)
{
    const red_key *k = key;
    size_t cap = 24576 + (extra ? strlen(extra) : 0);
    char *pre = malloc(cap);
    if (!pre) return NULL;
    int wide = k->ct == 3; /* CT and CO are i64 word pairs; st converts them to the output dtype */
    const char *ct = k->ct == 0 ? "f32" : k->ct == 1 ? "i32" : k->ct == 2 ? "u32" : "i64", *lib = op_wgsl_lib();
    const char *lib64 = wide ? op_wgsl_lib_i64() : "";
    wgt_dtype odt = (wgt_dtype)k->odt;
    const char *co = wide ? "i64" : op_compute_type(odt);
    /* the operations on CT: a section of src/kernels/lib_reduce_ops.wgsl */
    snprintf(pre, cap, "%s%s\n%s\nalias CT = %s;\nalias CO = %s;\nconst PACK: u32 = %du;\nconst SG: u32 = %uu;\n"
             "const WG: u32 = %uu;\n", k->sg > 1 ? "enable subgroups;\n" : "", lib ? lib : "", lib64 ? lib64 : "",
             wide ? "vec2<u32>" : ct, wide ? "vec2<u32>" : co, op_pack(odt), k->sg, k->wg);
    if (!op_wgsl_section(pre, cap, "lib_reduce_ops", wide ? "reduce i64" : "reduce 32")) {
        free(pre);
        return NULL;
    }
    if (!skip_ld) op_wgsl_loader(pre, cap, "ld", "x", (wgt_dtype)k->xdt, ct);
    if (!skip_st) op_wgsl_storer(pre, cap, "st", "out", odt, co);
    /* the optional index output and the subgroup shuffles sg_reduce uses: sections of
     * src/kernels/lib_index_out.wgsl and lib_subgroup.wgsl */
    if (!op_wgsl_section(pre, cap, "lib_index_out", k->with_idx ? "index out" : "no index out") ||
        !op_wgsl_section(pre, cap, "lib_subgroup", k->sg > 1 ? "shuffle" : "no shuffle")) {
        free(pre);
        return NULL;
    }
    if (extra) {
        size_t used = strlen(pre);
        snprintf(pre + used, cap - used, "%s", extra);
    }
    return pre;
}

static char *red_prelude(void *arg) { return red_prelude_ex(arg, NULL, 0, 0); }

/* 32-bit words per stage-1 state (reduce.wgsl's load_state): v (2 in i64), m, s, c, i. */
static int64_t red_state_words(wgt_reduce_op op, wgt_dtype x)
{
    return strcmp(red_ct(op, x), "i64") ? 5 : 6;
}

static red_key red_key_of(wgt_context *ctx, const char *ct, wgt_dtype xdt, wgt_dtype odt, int with_idx)
{
    red_key key;
    memset(&key, 0, sizeof key);
    key.ct = (uint8_t)(!strcmp(ct, "f32") ? 0 : !strcmp(ct, "i32") ? 1 : !strcmp(ct, "u32") ? 2 : 3);
    key.xdt = (uint8_t)xdt, key.odt = (uint8_t)odt, key.with_idx = (uint8_t)with_idx;
    key.sg = op_shuffle_subgroup(ctx);
    key.wg = op_workgroup_size(ctx);
    if (key.sg > key.wg) key.sg = 1;
    return key;
}

static wgt_status red_kernel(wgt_context *ctx, const char *ct, wgt_dtype xdt, wgt_dtype odt, int with_idx, wgt_kernel **k)
{
    red_key key = red_key_of(ctx, ct, xdt, odt, with_idx);
    return wgt_gpu_kernel_keyed(ctx, "reduce", &key, sizeof key, red_prelude, &key, "main", NULL, 0, k);
}

/* Say what the one-pass dispatch just made (mark: wgt_gpu_capture_mark before it) computed, so a
 * captured graph can fuse elementwise chains into it (elementwise_fuse.c). 32-bit values only. */
static void red_note(wgt_context *ctx, int mark, wgt_reduce_op op, const wgt_tensor *x, const wgt_tensor *out, int nb)
{
    const char *ct = red_ct(op, x->l.dtype);
    if (mark < 0 || !strcmp(ct, "i64")) return;
    ew_host_note n;
    memset(&n, 0, sizeof n);
    red_key key = red_key_of(ctx, ct, x->l.dtype, out->l.dtype, nb == 3);
    memcpy(n.key, &key, sizeof key);
    n.prelude = red_prelude_ex;
    n.file = "reduce", n.name = wgt_reduce_op_name(op);
    n.n_bind = nb, n.in = 0, n.out = 1;
    n.in_var = "x", n.ld = "ld", n.ld_type = ct, n.in_dt = x->l.dtype;
    n.out_var = "out", n.st = "st", n.st_type = op_compute_type(out->l.dtype), n.out_dt = out->l.dtype;
    n.out_numel = wgt_tensor_numel(out);
    wgt_gpu_capture_note(ctx, mark, EW_HOST_NOTE, &n, sizeof n);
}

/* Merge neighbouring dims that one stride walks (shape/stride lists, in place); returns the count. */
static int merge_dims(int n, int64_t *shape, int64_t *stride)
{
    int m = 0;
    for (int d = 0; d < n; d++) {
        if (shape[d] == 1 && n > 1) continue; /* size-1 dims do not move the index */
        if (m > 0 && stride[m - 1] == stride[d] * shape[d]) {
            shape[m - 1] *= shape[d];
            stride[m - 1] = stride[d];
        } else {
            shape[m] = shape[d];
            stride[m] = stride[d];
            m++;
        }
    }
    return m;
}

/* Reductions whose slices reach past one storage binding (amax over every dim of a large tensor):
 * stage 1 runs per output over chunks of parts, each part whole rows of the outermost reduced dim
 * and each chunk binding only the storage its parts reach; stage 2 combines each output's part
 * states in one dispatch. P is the input as [kept (nk dims), reduced (nr dims)]. */
static wgt_status red_gpu_split(wgt_context *ctx, wgt_reduce_op op, const wgt_tensor *x, const wgt_layout *P, int nk,
                                int nr, int64_t n_out, int64_t R, double correction, wgt_tensor *out, wgt_tensor *idx,
                                wgt_kernel *k)
{
    const char *name = wgt_reduce_op_name(op);
    wgt_layout rl = *P, kl = *P;
    rl.ndim = nr, rl.offset = 0, kl.ndim = nk;
    for (int d = 0; d < nr; d++) rl.shape[d] = P->shape[nk + d], rl.strides[d] = P->strides[nk + d];
    const wgt_layout *ls[1] = {&rl};
    int64_t rows_fit = nr ? op_rows_per_chunk(ctx, ls, 1) : 0;
    if (rows_fit == 0)
        return op_fail(ctx, WGT_ERR_LIMIT, "%s: one row of the reduced dims is larger than a storage binding", name);
    int64_t outer = rl.shape[0], inner = R / outer, inner_hi = 0;
    for (int d = 1; d < nr; d++) inner_hi += (rl.shape[d] - 1) * rl.strides[d];
    int64_t G0 = R / 8192 < 2 ? 2 : R / 8192 > 1024 ? 1024 : R / 8192;
    int64_t rows_per_part = (outer + G0 - 1) / G0;
    if (rows_per_part > rows_fit) rows_per_part = rows_fit;
    int64_t G = (outer + rows_per_part - 1) / rows_per_part, per_chunk = rows_fit / rows_per_part;
    int64_t n_states = n_out * G * red_state_words(op, x->l.dtype);
    if ((uint64_t)n_states * 4 > wgt_gpu_limits(ctx)->max_storage_buffer_binding_size / 2 || (uint64_t)n_out * G > UINT32_MAX)
        return op_fail(ctx, WGT_ERR_LIMIT, "%s: %lld outputs of slices larger than a storage binding are too many to split",
                       name, (long long)n_out);
    red_params p;
    memset(&p, 0, sizeof p);
    p.n_out = (uint32_t)n_out, p.R = (uint32_t)R, p.op = (uint32_t)op, p.correction = (float)correction;
    p.stage = 1, p.G = (uint32_t)G, p.part = (uint32_t)(rows_per_part * inner), p.s_o = (uint32_t)G, p.s_r = 1;
    p.red_simple = nr <= 1;
    p.red_stride = nr == 1 ? (uint32_t)rl.strides[0] : 0;
    wgt_status st;
    if ((st = op_layout_params_fill(ctx, &kl, &p.kept)) || (st = op_layout_params_fill(ctx, &rl, &p.red))) return st;
    wgt_tensor *states;
    if ((st = wgt_tensor_new(ctx, WGT_U32, 1, &n_states, &states))) return st;
    wgt_binding b[3];
    int64_t base, sbase;
    int nb = idx ? 3 : 2;
    if (!(st = op_bind_all(states, &b[1], &sbase)) && idx) st = op_bind(idx, 0, n_out - 1, &b[2], &base);
    for (int64_t o = 0; !st && o < n_out; o++) {
        int64_t ko = P->offset, rem = o; /* the storage offset of output o's slice */
        for (int d = nk - 1; d >= 0; d--) ko += rem % P->shape[d] * P->strides[d], rem /= P->shape[d];
        for (int64_t pa = 0; !st && pa < G; pa += per_chunk) {
            int64_t pb = pa + per_chunk < G ? pa + per_chunk : G;
            int64_t r1 = pb * rows_per_part < outer ? pb * rows_per_part : outer;
            int64_t lo = ko + pa * rows_per_part * rl.strides[0], hi = ko + (r1 - 1) * rl.strides[0] + inner_hi;
            if ((st = op_bind(x, lo, hi, &b[0], &base))) break;
            /* the kernel reads off + kept(o) + red(r); off wraps below the binding (u32 arithmetic) */
            p.off = (uint32_t)(P->offset - base);
            p.g0 = (uint32_t)(o * G + pa);
            uint32_t gx, gy;
            op_grid(ctx, (uint64_t)(pb - pa), &gx, &gy);
            st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, nb, gx, gy, 1);
        }
    }
    if (!st) { /* stage 2: the states of every output into out (and idx) */
        red_params p2 = p;
        p2.stage = 2, p2.off = 0, p2.g0 = 0;
        wgt_binding b2[3] = {b[1], {0}, b[2]};
        int pack = op_pack(out->l.dtype);
        if (!(st = op_bind(out, 0, n_out - 1, &b2[1], &base))) {
            p2.out_w0 = (uint32_t)((0 - base) / pack);
            uint32_t gx, gy;
            op_grid(ctx, ((uint64_t)n_out + pack - 1) / pack, &gx, &gy);
            st = wgt_gpu_dispatch(ctx, k, &p2, sizeof p2, b2, nb, gx, gy, 1);
        }
    }
    wgt_tensor_free(states);
    return st;
}

/* Column parts: a large GPU (the H200: 132 multiprocessors of 2048 invocations) wants some 2^18
 * invocations in flight; each part walks at least COL_MIN_PART rows, so the states (VW + 4 words)
 * stay a few percent of the bytes read. Returns the parts per output, < 2 when splitting would not
 * help (enough outputs already, or too short a reduction). */
enum { COL_TARGET = 1 << 18, COL_MIN_PART = 128, COL_MAX_PARTS = 8192, COL_STAGE2_COLS = 64 };
static uint32_t col_parts(uint32_t n_out, int64_t R)
{
    int64_t G = (COL_TARGET + (int64_t)n_out - 1) / n_out, by_len = R / COL_MIN_PART;
    if (G > by_len) G = by_len;
    if (G > COL_MAX_PARTS) G = COL_MAX_PARTS;
    if (G < 2) return 0;
    int64_t part = (R + G - 1) / G;
    return (uint32_t)((R + part - 1) / part); /* no empty part */
}

/* The reduction of p's outputs in two passes: stage 1 writes G partial states per output into a
 * scratch tensor (by columns when col1: an invocation per part of one output; else a workgroup
 * per part), stage 2 combines each output's G states (by columns when G is small: an invocation
 * per output, states laid out [G, n_out] so both passes touch consecutive words; else a workgroup
 * per output over states laid out [n_out, G]). b: input, output, index bindings (nb of them). */
static wgt_status red_two_pass(wgt_context *ctx, wgt_kernel *k, const red_params *p, const wgt_binding *b, int nb,
                               int64_t state_words, int pack, int col1, uint32_t G)
{
    int col2 = col1 && G <= COL_STAGE2_COLS;
    int64_t n_states = (int64_t)p->n_out * G * state_words;
    if ((uint64_t)n_states * 4 > wgt_gpu_limits(ctx)->max_storage_buffer_binding_size)
        return op_fail(ctx, WGT_ERR_LIMIT, "%s: %u outputs in %u parts need more states than a storage binding holds",
                       wgt_reduce_op_name((wgt_reduce_op)p->op), p->n_out, G);
    wgt_tensor *states;
    wgt_status st = wgt_tensor_new(ctx, WGT_U32, 1, &n_states, &states);
    if (st) return st;
    red_params p1 = *p;
    p1.stage = 1, p1.G = G, p1.part = (uint32_t)(((uint64_t)p->R + G - 1) / G), p1.col = (uint32_t)col1;
    p1.s_o = col2 ? 1 : G, p1.s_r = col2 ? p->n_out : 1;
    red_params p2 = p1;
    p2.stage = 2, p2.col = (uint32_t)col2;
    wgt_binding b1[3] = {b[0], {0}, b[2]}, b2[3] = {{0}, b[1], b[2]};
    int64_t sbase;
    uint32_t gx, gy, wg = op_workgroup_size(ctx);
    uint64_t n1 = (uint64_t)p->n_out * G, words = ((uint64_t)p->n_out + pack - 1) / pack;
    if (!(st = op_bind_all(states, &b1[1], &sbase))) {
        op_grid(ctx, col1 ? (n1 + wg - 1) / wg : n1, &gx, &gy);
        st = wgt_gpu_dispatch(ctx, k, &p1, sizeof p1, b1, nb, gx, gy, 1);
    }
    if (!st && !(st = op_bind_all(states, &b2[0], &sbase))) {
        op_grid(ctx, col2 ? (words + wg - 1) / wg : words, &gx, &gy);
        st = wgt_gpu_dispatch(ctx, k, &p2, sizeof p2, b2, nb, gx, gy, 1);
    }
    wgt_tensor_free(states);
    return st;
}

/* Run the reduction of x over `dims` (bit mask, non-empty set normalised) into the contiguous out
 * (and idx, i32, when given): the kept dims are split into chunks that each fit one binding. */
static wgt_status red_gpu(wgt_context *ctx, wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, double correction,
                          wgt_tensor *out, wgt_tensor *idx)
{
    const wgt_layout *l = &x->l;
    int nk = 0, nr = 0;
    int64_t ks[WGT_MAX_DIMS], kst[WGT_MAX_DIMS], rs[WGT_MAX_DIMS], rst[WGT_MAX_DIMS];
    for (int d = 0; d < l->ndim; d++) {
        if (dims >> d & 1) rs[nr] = l->shape[d], rst[nr++] = l->strides[d];
        else ks[nk] = l->shape[d], kst[nk++] = l->strides[d];
    }
    int64_t n_out = 1, R = 1;
    for (int d = 0; d < nk; d++) n_out *= ks[d];
    for (int d = 0; d < nr; d++) R *= rs[d];
    if (n_out == 0) return WGT_OK;
    if (R > UINT32_MAX || n_out > UINT32_MAX)
        return op_fail(ctx, WGT_ERR_LIMIT, "%s: more than 2^32 elements per reduction or outputs", wgt_reduce_op_name(op));
    if (R > 0) nr = merge_dims(nr, rs, rst);
    else nr = 0, R = 0;
    nk = merge_dims(nk, ks, kst);
    /* The input as [kept..., reduced...] and the outputs as [kept...], chunked along kept dim 0. */
    wgt_layout P = *l, O, I;
    P.ndim = nk + nr;
    for (int d = 0; d < nk; d++) P.shape[d] = ks[d], P.strides[d] = kst[d];
    for (int d = 0; d < nr; d++) P.shape[nk + d] = rs[d], P.strides[nk + d] = rst[d];
    if (R == 0) /* an empty reduction reads nothing: bind one element */
        for (int d = 0; d < nk; d++) P.strides[d] = 0;
    wgt_layout_contiguous(&O, out->l.dtype, nk, ks);
    wgt_layout_contiguous(&I, WGT_I32, nk, ks);
    int64_t rows = nk ? ks[0] : 1, per_row = n_out / rows, per = rows;
    if (nk) {
        const wgt_layout *ls[3] = {&P, &O, &I};
        per = op_rows_per_chunk(ctx, ls, idx ? 3 : 2);
    }
    int64_t plo, phi;
    op_extent(&P, &plo, &phi);
    uint64_t p_bytes = (uint64_t)(phi - plo + 1) * wgt_dtype_size(l->dtype);
    if (R > 0 && nr > 0 && (per == 0 || (nk == 0 && p_bytes + wgt_gpu_limits(ctx)->min_storage_buffer_offset_alignment + 4 >
                                                      wgt_gpu_limits(ctx)->max_storage_buffer_binding_size))) {
        /* Parts are whole rows of the outermost reduced dim: when even one such row passes a binding
         * (a transposed input: its outermost dim is the innermost in storage), reduce a contiguous
         * copy instead (the reduced positions, and so argmax's indices, stay row-major). */
        wgt_layout rl = P;
        rl.ndim = nr;
        for (int d = 0; d < nr; d++) rl.shape[d] = P.shape[nk + d], rl.strides[d] = P.strides[nk + d];
        const wgt_layout *rls[1] = {&rl};
        int by_index = op == WGT_REDUCE_ARGMAX || op == WGT_REDUCE_ARGMIN || idx;
        if (op_rows_per_chunk(ctx, rls, 1) == 0 && !by_index) {
            /* the order of the reduced positions does not change the value: walk them in storage
             * order (largest stride outermost) */
            for (int a = nk; a < nk + nr; a++)
                for (int b = a + 1; b < nk + nr; b++)
                    if (P.strides[b] > P.strides[a]) {
                        int64_t ts = P.shape[a], tt = P.strides[a];
                        P.shape[a] = P.shape[b], P.strides[a] = P.strides[b], P.shape[b] = ts, P.strides[b] = tt;
                    }
        } else if (op_rows_per_chunk(ctx, rls, 1) == 0 && !wgt_layout_is_contiguous(l)) {
            wgt_tensor *c;
            wgt_status cst = wgt_tensor_contiguous(x, &c);
            if (cst)
                return op_fail(ctx, cst, "%s: the slices pass one storage binding and their indices need a "
                               "contiguous copy, which failed: %s", wgt_reduce_op_name(op), wgt_context_errmsg(ctx));
            cst = red_gpu(ctx, op, c, dims, correction, out, idx);
            wgt_tensor_free(c);
            return cst;
        }
        wgt_kernel *sk;
        wgt_status sst = red_kernel(ctx, red_ct(op, x->l.dtype), x->l.dtype, out->l.dtype, idx != NULL, &sk);
        return sst ? sst : red_gpu_split(ctx, op, x, &P, nk, nr, n_out, R, correction, out, idx, sk);
    }
    if (per == 0) return op_fail(ctx, WGT_ERR_LIMIT, "%s: one slice of the input is larger than a storage binding",
                                 wgt_reduce_op_name(op));
    int pack = op_pack(out->l.dtype);
    if (per < rows) {
        while (per > 1 && (per * per_row) % pack) per--;
        if ((per * per_row) % pack)
            return op_fail(ctx, WGT_ERR_LIMIT, "%s: cannot split this reduction on output word boundaries",
                           wgt_reduce_op_name(op));
    }
    /* Short reductions, and reductions whose inner stride is not 1 over many outputs, run one
     * invocation per output; the rest one workgroup per output. */
    int inner_unit = nr == 0 || rst[nr - 1] == 1;
    int col = R <= 32 || (!inner_unit && n_out >= 1024);
    /* Few outputs of long reductions would leave most of a large GPU idle with a workgroup each:
     * split each into parts, then combine the parts' states. */
    int two_stage = !col && per >= rows && n_out <= 64 && R >= 32768 && inner_unit;
    /* Reductions over outer dims (a column sum) of fewer outputs than fill a large GPU: each
     * invocation walks a part of one column, then the parts' states combine. */
    int col_parts_ok = !inner_unit && R > 32;
    wgt_kernel *k;
    wgt_status st = red_kernel(ctx, red_ct(op, x->l.dtype), x->l.dtype, out->l.dtype, idx != NULL, &k);
    if (st) return st;
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        int64_t r1 = r0 + per < rows ? r0 + per : rows;
        red_params p;
        memset(&p, 0, sizeof p);
        p.n_out = (uint32_t)((r1 - r0) * per_row);
        p.R = (uint32_t)R;
        p.op = (uint32_t)op;
        p.correction = (float)correction;
        p.col = (uint32_t)col;
        wgt_layout c = P;
        if (nk) c.offset += r0 * c.strides[0], c.shape[0] = r1 - r0;
        int64_t lo, hi, base;
        op_extent(&c, &lo, &hi);
        wgt_binding b[3];
        if ((st = op_bind(x, lo, hi, &b[0], &base))) return st;
        p.off = (uint32_t)(c.offset - base);
        wgt_layout kl = c, rl = c;
        kl.ndim = nk;
        rl.ndim = nr;
        for (int d = 0; d < nr; d++) rl.shape[d] = c.shape[nk + d], rl.strides[d] = c.strides[nk + d];
        if ((st = op_layout_params_fill(ctx, &kl, &p.kept)) || (st = op_layout_params_fill(ctx, &rl, &p.red))) return st;
        p.red_simple = nr <= 1;
        p.red_stride = nr == 1 ? (uint32_t)rl.strides[0] : 0;
        if (nr == 1 && rl.strides[0] > UINT32_MAX) return op_fail(ctx, WGT_ERR_LIMIT, "reduce: stride past 2^32");
        if ((st = op_bind(out, r0 * per_row, r1 * per_row - 1, &b[1], &base))) return st;
        p.out_w0 = (uint32_t)((r0 * per_row - base) / pack);
        int nb = 2;
        if (idx) {
            if ((st = op_bind(idx, r0 * per_row, r1 * per_row - 1, &b[2], &base))) return st;
            p.idx_off = (uint32_t)(r0 * per_row - base);
            nb = 3;
        }
        uint64_t words = ((uint64_t)p.n_out + pack - 1) / pack;
        uint32_t gx, gy;
        /* parts of 8192 elements, or of 1024 where that leaves fewer than 264 workgroups (two for
         * each of the H200's SMs): a decode step's argmax over a 150k vocabulary took 18 */
        int64_t part = (int64_t)p.n_out * (R / 8192) >= 264 ? 8192 : 1024;
        uint32_t G = two_stage ? (uint32_t)(R / part < 2 ? 2 : R / part > 1024 ? 1024 : R / part) : 0;
        if (!two_stage && col_parts_ok) G = col_parts(p.n_out, R);
        if (G >= 2) {
            if ((st = red_two_pass(ctx, k, &p, b, nb, red_state_words(op, x->l.dtype), pack, !two_stage, G))) return st;
            continue;
        }
        uint32_t wg = op_workgroup_size(ctx);
        op_grid(ctx, col ? (words + wg - 1) / wg : words, &gx, &gy);
        int mark = wgt_gpu_capture_mark(ctx);
        if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, nb, gx, gy, 1))) return st;
        red_note(ctx, mark, op, x, out, nb);
    }
    return WGT_OK;
}

typedef struct reduce_arg {
    wgt_reduce_op op;
    uint32_t dims;
    int keepdim;
    double correction;
} reduce_arg;

static wgt_status reduce_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    reduce_arg *a = arg;
    return wgt_cpu_reduce(a->op, &in[0], a->dims, a->keepdim, a->correction, &out[0], out[1].data ? &out[1] : NULL);
}

/* The shared body of wgt_reduce and wgt_max_dim/wgt_min_dim: idx_out non-NULL asks for indices. */
static wgt_status reduce_impl(wgt_context *ctx, wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, int keepdim,
                              double correction, wgt_tensor **out, wgt_tensor **idx_out)
{
    const char *name = wgt_reduce_op_name(op);
    int ndim = x->l.ndim;
    if (ndim < 32 && (dims >> ndim) != 0)
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: dims mask 0x%x names dims past the input's %d", name, dims, ndim);
    if (dims == 0) dims = ndim ? (uint32_t)((1ull << ndim) - 1) : 0;
    wgt_dtype xdt = x->l.dtype;
    if (float_only(op) && !op_is_float(xdt))
        return op_fail(ctx, WGT_ERR_DTYPE, "%s needs a floating-point tensor, not %s (cast it first)", name,
                       wgt_dtype_name(xdt));
    int needs_elems = op == WGT_REDUCE_AMAX || op == WGT_REDUCE_AMIN || op == WGT_REDUCE_ARGMAX || op == WGT_REDUCE_ARGMIN;
    int64_t shape[WGT_MAX_DIMS], R = 1, n_out = 1;
    int on = 0;
    for (int d = 0; d < ndim; d++) {
        if (dims >> d & 1) {
            R *= x->l.shape[d];
            if (keepdim) shape[on++] = 1;
        } else
            shape[on++] = x->l.shape[d], n_out *= x->l.shape[d];
    }
    if (needs_elems && R == 0 && n_out > 0)
        return op_fail(ctx, WGT_ERR_SHAPE, "%s over an empty set of elements has no value", name);
    wgt_dtype odt = wgt_reduce_result_dtype(op, xdt);
    wgt_tensor *y = NULL, *iy = NULL;
    wgt_status st = wgt_tensor_new(ctx, odt, on, shape, &y);
    if (!st && idx_out) st = wgt_tensor_new(ctx, WGT_I32, on, shape, &iy);
    if (st) {
        wgt_tensor_free(y);
        return st;
    }
    /* i64 computes in exact word pairs; its logsumexp would need the f32 kernel to load 64 bits */
    int gpu_ok = xdt != WGT_I64 || op != WGT_REDUCE_LOGSUMEXP;
    if (op_use_gpu(ctx, name, xdt, gpu_ok))
        st = red_gpu(ctx, op, x, dims, correction, y, iy);
    else if (!(st = op_fallback_status(ctx, name, xdt, gpu_ok))) {
        reduce_arg a = {op, dims, keepdim, correction};
        const wgt_tensor *ins[1] = {x};
        wgt_tensor *outs[2] = {y, iy};
        st = op_reference(ctx, reduce_ref, &a, ins, 1, outs, iy ? 2 : 1);
    }
    if (st) {
        wgt_tensor_free(iy);
        return op_finish(st, y, out);
    }
    *out = y;
    if (idx_out) *idx_out = iy;
    return WGT_OK;
}

wgt_status wgt_reduce(wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, int keepdim, double correction,
                      wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if ((unsigned)op >= WGT_REDUCE_COUNT) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "reduce: unknown op %d", (int)op);
    op_grad_reduce rec = {op, dims, keepdim, correction};
    return op_record(reduce_impl(ctx, op, x, dims, keepdim, correction, out, NULL), OP_GRAD_REDUCE, &x, 1, &rec,
                     sizeof rec, out);
}

static wgt_status extreme_dim(wgt_reduce_op op, const wgt_tensor *x, int dim, int keepdim, wgt_tensor **values,
                              wgt_tensor **indices)
{
    OP_BEGIN(x, values);
    if (!indices) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: NULL indices", wgt_reduce_op_name(op));
    *indices = NULL;
    const char *name = op == WGT_REDUCE_AMAX ? "max_dim" : "min_dim";
    wgt_status st = op_dim(ctx, name, &dim, x->l.ndim);
    if (st) return st;
    uint32_t dims = x->l.ndim ? 1u << dim : 0;
    if ((st = reduce_impl(ctx, op, x, dims, keepdim, 0, values, indices))) return st;
    /* the values' node keeps the indices: the gradient goes where each value came from */
    const wgt_tensor *rin[2] = {x, *indices};
    op_grad_reduce rec = {op, dims, keepdim, 0};
    if ((st = op_record(st, OP_GRAD_EXTREME_DIM, rin, 2, &rec, sizeof rec, values))) {
        wgt_tensor_free(*indices);
        *indices = NULL;
    }
    return st;
}

wgt_status wgt_max_dim(const wgt_tensor *x, int dim, int keepdim, wgt_tensor **values, wgt_tensor **indices)
{
    return extreme_dim(WGT_REDUCE_AMAX, x, dim, keepdim, values, indices);
}

wgt_status wgt_min_dim(const wgt_tensor *x, int dim, int keepdim, wgt_tensor **values, wgt_tensor **indices)
{
    return extreme_dim(WGT_REDUCE_AMIN, x, dim, keepdim, values, indices);
}

/* ---- scans ----------------------------------------------------------------------------------- */

typedef struct scan_params {
    uint32_t n_rows, L, op, off, stride, inner, zero, col;
    op_layout_params kept;
} scan_params;

/* What the scan prelude depends on: the pipeline cache's key (no padding bytes). */
typedef struct scan_key {
    uint8_t ct, xdt, with_idx, pad; /* ct: 0 f32, 1 i32, 2 u32, 3 i64 */
    uint32_t wg;
} scan_key;


static char *scan_prelude(void *arg)
{
    const scan_key *k = arg;
    size_t cap = 16384;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    int wide = k->ct == 3;
    const char *ct = k->ct == 0 ? "f32" : k->ct == 1 ? "i32" : k->ct == 2 ? "u32" : "i64", *lib = op_wgsl_lib();
    const char *lib64 = wide ? op_wgsl_lib_i64() : "";
    snprintf(pre, cap, "%s\n%s\nconst WG: u32 = %uu;\nalias CT = %s;\n", lib ? lib : "", lib64 ? lib64 : "", k->wg,
             wide ? "vec2<u32>" : ct);
    if (!op_wgsl_section(pre, cap, "lib_reduce_ops", wide ? "scan i64" : "scan 32")) { /* the operations on CT */
        free(pre);
        return NULL;
    }
    op_wgsl_loader(pre, cap, "ld", "x", (wgt_dtype)k->xdt, ct);
    /* the optional index output: a section of src/kernels/lib_index_out.wgsl */
    if (!op_wgsl_section(pre, cap, "lib_index_out", k->with_idx ? "index out" : "no index out")) {
        free(pre);
        return NULL;
    }
    return pre;
}

static wgt_status scan_kernel(wgt_context *ctx, const char *ct, wgt_dtype xdt, int with_idx, wgt_kernel **k)
{
    scan_key key;
    memset(&key, 0, sizeof key);
    key.ct = (uint8_t)(!strcmp(ct, "f32") ? 0 : !strcmp(ct, "i32") ? 1 : !strcmp(ct, "u32") ? 2 : 3);
    key.xdt = (uint8_t)xdt, key.with_idx = (uint8_t)with_idx;
    key.wg = op_workgroup_size(ctx);
    return wgt_gpu_kernel_keyed(ctx, "reduce_scan", &key, sizeof key, scan_prelude, &key, "main", NULL, 0, k);
}

/* Scan x along dim into y (contiguous: f32, i32, u32 or i64) and idx (i32, or NULL). */
static wgt_status scan_gpu(wgt_context *ctx, wgt_scan_op op, const wgt_tensor *x, int dim, wgt_tensor *y, wgt_tensor *idx)
{
    const wgt_layout *l = &x->l;
    int64_t L = l->ndim ? l->shape[dim] : 1, inner = 1, n_rows = 1;
    int nk = 0;
    int64_t ks[WGT_MAX_DIMS], kst[WGT_MAX_DIMS];
    for (int d = 0; d < l->ndim; d++) {
        if (d == dim) continue;
        ks[nk] = l->shape[d], kst[nk++] = l->strides[d];
        n_rows *= l->shape[d];
        if (d > dim) inner *= l->shape[d];
    }
    if (n_rows == 0 || L == 0) return WGT_OK;
    if (n_rows * L > UINT32_MAX) return op_fail(ctx, WGT_ERR_LIMIT, "%s: more than 2^32 elements", wgt_scan_op_name(op));
    nk = merge_dims(nk, ks, kst);
    scan_params p;
    memset(&p, 0, sizeof p);
    p.n_rows = (uint32_t)n_rows;
    p.L = (uint32_t)L;
    p.op = (uint32_t)op;
    p.stride = l->ndim ? (uint32_t)l->strides[dim] : 0;
    p.inner = (uint32_t)inner;
    wgt_layout kl = *l;
    kl.ndim = nk;
    for (int d = 0; d < nk; d++) kl.shape[d] = ks[d], kl.strides[d] = kst[d];
    wgt_status st = op_layout_params_fill(ctx, &kl, &p.kept);
    if (st) return st;
    wgt_binding b[3];
    int64_t base;
    if ((st = op_bind_all(x, &b[0], &base))) return st;
    p.off = (uint32_t)(l->offset - base); /* before y's binding reuses base */
    if ((st = op_bind_all(y, &b[1], &base))) return st;
    if (idx && (st = op_bind_all(idx, &b[2], &base))) return st;
    int col = L <= 64;
    p.col = (uint32_t)col;
    wgt_kernel *k;
    const char *ct = y->l.dtype == WGT_I64 ? "i64" : op_compute_type(y->l.dtype);
    if ((st = scan_kernel(ctx, ct, x->l.dtype, idx != NULL, &k))) return st;
    uint32_t gx, gy, wg = op_workgroup_size(ctx);
    op_grid(ctx, col ? ((uint64_t)n_rows + wg - 1) / wg : (uint64_t)n_rows, &gx, &gy);
    return wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, idx ? 3 : 2, gx, gy, 1);
}

typedef struct scan_arg {
    wgt_scan_op op;
    int dim;
} scan_arg;

static wgt_status scan_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    scan_arg *a = arg;
    return wgt_cpu_scan(a->op, &in[0], a->dim, 0, 0, &out[0], out[1].data ? &out[1] : NULL);
}

static wgt_status scan_unrecorded(wgt_scan_op op, const wgt_tensor *x, int dim, wgt_tensor **out,
                                  wgt_tensor **indices)
{
    OP_BEGIN(x, out);
    if (indices) *indices = NULL;
    if ((unsigned)op >= WGT_SCAN_COUNT) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "scan: unknown op %d", (int)op);
    const char *name = wgt_scan_op_name(op);
    int is_ext = op == WGT_SCAN_CUMMAX || op == WGT_SCAN_CUMMIN;
    if (indices && !is_ext) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s has no indices (cummax/cummin do)", name);
    wgt_status st = op_dim(ctx, name, &dim, x->l.ndim);
    if (st) return st;
    wgt_dtype xdt = x->l.dtype, odt = xdt;
    if (!is_ext && !op_is_float(xdt) && xdt != WGT_U32 && xdt != WGT_I64) odt = WGT_I32; /* PyTorch: i64 */
    wgt_tensor *y = NULL, *iy = NULL;
    if ((st = wgt_tensor_new(ctx, odt, x->l.ndim, x->l.shape, &y))) return st;
    if (indices && (st = wgt_tensor_new(ctx, WGT_I32, x->l.ndim, x->l.shape, &iy))) return op_finish(st, y, out);
    if (op_use_gpu(ctx, name, xdt, 1)) {
        /* the kernel writes 4- and 8-byte elements: 16- and 8-bit results go through f32/i32 and a cast */
        wgt_dtype wdt = op_is_float(odt) ? WGT_F32 : odt == WGT_U32 || odt == WGT_I64 ? odt : WGT_I32;
        wgt_tensor *w = y;
        if (wdt != odt) st = wgt_tensor_new(ctx, wdt, x->l.ndim, x->l.shape, &w);
        if (!st) st = scan_gpu(ctx, op, x, dim, w, iy);
        if (w != y) {
            wgt_tensor *c = NULL;
            if (!st && !(st = wgt_tensor_cast(w, odt, &c))) {
                wgt_tensor_free(y);
                y = c;
            }
            wgt_tensor_free(w);
        }
    } else if (!(st = op_fallback_status(ctx, name, xdt, 1))) {
        scan_arg a = {op, dim};
        const wgt_tensor *ins[1] = {x};
        wgt_tensor *outs[2] = {y, iy};
        st = op_reference(ctx, scan_ref, &a, ins, 1, outs, iy ? 2 : 1);
    }
    if (st) {
        wgt_tensor_free(iy);
        return op_finish(st, y, out);
    }
    *out = y;
    if (indices) *indices = iy;
    return WGT_OK;
}

/* cummax/cummin's backward sends each gradient to the position of its running extreme, so while
 * autograd records their indices are computed even when the caller does not want them. */
wgt_status wgt_scan(wgt_scan_op op, const wgt_tensor *x, int dim, wgt_tensor **out, wgt_tensor **indices)
{
    if (indices) *indices = NULL;
    int rec = x && x->ag && op_grad_mode() && (op == WGT_SCAN_CUMMAX || op == WGT_SCAN_CUMMIN);
    wgt_tensor *idx = NULL;
    op_grad_scan p = {op, dim};
    const wgt_tensor *in[2] = {x, NULL};
    wgt_status st = scan_unrecorded(op, x, dim, out, indices || rec ? &idx : NULL);
    in[1] = idx;
    st = op_record(st, OP_GRAD_SCAN, in, 2, &p, sizeof p, out);
    if (!st && indices) *indices = idx;
    else wgt_tensor_free(idx);
    return st;
}
