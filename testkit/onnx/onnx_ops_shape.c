/* ONNX op -> CPU reference mapping: matrix products, data movement, indexing and normalisation.
 * Outputs are contiguous; views (transposes, reshapes of contiguous inputs) are layouts over the
 * input data, never copies, until the op itself writes the output. */
#include "onnx/onnx_ops_internal.h"

#include <math.h>
#include <string.h>

wgt_status ox_matmul(ox *c)
{
    const wgt_onnx_tensor *a, *b;
    OX_TRY(ox_need(c, 0, &a));
    OX_TRY(ox_need(c, 1, &b));
    if (a->ndim < 1 || b->ndim < 1) return ox_unsupported(c, "0-d operands");
    /* numpy.matmul's output shape: broadcast batch dims, then M and N unless an operand is 1-D. */
    int nba = a->ndim > 2 ? a->ndim - 2 : 0, nbb = b->ndim > 2 ? b->ndim - 2 : 0;
    int nb = nba > nbb ? nba : nbb, nd = 0;
    int64_t dims[WGT_MAX_DIMS + 2];
    for (int d = 0; d < nb; d++) {
        int da = d - (nb - nba), db = d - (nb - nbb);
        int64_t sa = da >= 0 ? a->dims[da] : 1, sb = db >= 0 ? b->dims[db] : 1;
        dims[nd++] = sa == 1 ? sb : sa;
    }
    if (a->ndim > 1) dims[nd++] = a->dims[a->ndim - 2];
    if (b->ndim > 1) dims[nd++] = b->dims[b->ndim - 1];
    wgt_cpu_tensor av = ox_view(a), bv = ox_view(b), ov;
    OX_TRY(ox_alloc(c, 0, a->dtype, nd, dims, &ov));
    return OX_CALL(c, wgt_cpu_matmul, &av, &bv, &ov);
}

static wgt_cpu_tensor transposed(wgt_cpu_tensor v)
{
    int64_t s = v.l.shape[0], t = v.l.strides[0];
    v.l.shape[0] = v.l.shape[1], v.l.strides[0] = v.l.strides[1];
    v.l.shape[1] = s, v.l.strides[1] = t;
    return v;
}

wgt_status ox_gemm(ox *c)
{
    const wgt_onnx_tensor *a, *b, *cc = ox_in(c, 2);
    OX_TRY(ox_need(c, 0, &a));
    OX_TRY(ox_need(c, 1, &b));
    if (cc) OX_TRY(ox_need(c, 2, &cc));
    if (a->ndim != 2 || b->ndim != 2) return ox_unsupported(c, "A and B must be 2-D");
    wgt_cpu_tensor av = ox_view(a), bv = ox_view(b), cv, ov;
    if (ox_attr_i(c, "transA", 0)) av = transposed(av);
    if (ox_attr_i(c, "transB", 0)) bv = transposed(bv);
    int64_t dims[2] = {av.l.shape[0], bv.l.shape[1]};
    OX_TRY(ox_alloc(c, 0, a->dtype, 2, dims, &ov));
    if (cc) cv = ox_view(cc);
    return OX_CALL(c, wgt_cpu_addmm, cc ? &cv : NULL, &av, &bv, ox_attr_f(c, "beta", 1.0), ox_attr_f(c, "alpha", 1.0),
                   &ov);
}

wgt_status ox_transpose(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    const wgt_onnx_attr *p = ox_attr(c, "perm");
    int perm[WGT_MAX_DIMS], seen = 0;
    for (int d = 0; d < x->ndim; d++) perm[d] = x->ndim - 1 - d;
    if (p && p->type == WGT_ONNX_ATTR_INTS) {
        if (p->n_ints != x->ndim) return wgt_error(WGT_ERR_SHAPE, "Transpose: perm has %d entries for %d dims", p->n_ints, x->ndim);
        for (int d = 0; d < x->ndim; d++) {
            int ax;
            OX_TRY(ox_axis(c, p->ints[d], x->ndim, &ax));
            perm[d] = ax;
            seen |= 1 << ax;
        }
        if (seen != (1 << x->ndim) - 1) return wgt_error(WGT_ERR_SHAPE, "Transpose: perm is not a permutation");
    }
    wgt_cpu_tensor xv = ox_view(x), pv = xv, ov;
    int64_t dims[WGT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        dims[d] = pv.l.shape[d] = xv.l.shape[perm[d]];
        pv.l.strides[d] = xv.l.strides[perm[d]];
    }
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, dims, &ov));
    return OX_CALL(c, wgt_cpu_copy, &pv, &ov);
}

/* The axes of Squeeze/Unsqueeze: an attribute before opset 13, an input from 13 on. */
static wgt_status squeeze_axes(ox *c, int64_t *axes, int *n)
{
    const wgt_onnx_attr *a = ox_attr(c, "axes");
    const wgt_onnx_tensor *t = ox_in(c, 1);
    *n = 0;
    if (a && a->type == WGT_ONNX_ATTR_INTS) {
        if (a->n_ints > WGT_MAX_DIMS) return ox_unsupported(c, "too many axes");
        for (int i = 0; i < a->n_ints; i++) axes[i] = a->ints[i];
        *n = a->n_ints;
    } else if (t) OX_TRY(ox_ints(c, t, axes, WGT_MAX_DIMS, n));
    return WGT_OK;
}

/* Flatten, Reshape, Squeeze, Unsqueeze: a new shape over the same (contiguous) elements. */
wgt_status ox_reshape_like(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    const char *op = c->node->op_type;
    int nd = 0;
    int64_t dims[WGT_MAX_DIMS], axes[WGT_MAX_DIMS];
    int n;
    if (!strcmp(op, "Flatten")) {
        int64_t axis = ox_attr_i(c, "axis", 1), rows = 1, cols = 1;
        if (axis < 0) axis += x->ndim;
        if (axis < 0 || axis > x->ndim) return wgt_error(WGT_ERR_SHAPE, "Flatten: axis out of range");
        for (int d = 0; d < x->ndim; d++) *(d < axis ? &rows : &cols) *= x->dims[d];
        dims[0] = rows, dims[1] = cols, nd = 2;
    } else if (!strcmp(op, "Reshape")) {
        const wgt_onnx_tensor *s;
        OX_TRY(ox_need(c, 1, &s));
        OX_TRY(ox_ints(c, s, dims, WGT_MAX_DIMS, &nd));
        int allowzero = (int)ox_attr_i(c, "allowzero", 0), infer = -1;
        int64_t known = 1;
        for (int d = 0; d < nd; d++) {
            if (dims[d] == 0 && !allowzero) {
                if (d >= x->ndim) return wgt_error(WGT_ERR_SHAPE, "Reshape: 0 past the input's dims");
                dims[d] = x->dims[d];
            }
            if (dims[d] == -1) {
                if (infer >= 0) return wgt_error(WGT_ERR_SHAPE, "Reshape: two -1 entries");
                infer = d;
            } else if (dims[d] < 0) return wgt_error(WGT_ERR_SHAPE, "Reshape: negative size");
            else known *= dims[d];
        }
        if (infer >= 0) {
            if (known == 0) return wgt_error(WGT_ERR_SHAPE, "Reshape: -1 with a zero-size shape");
            dims[infer] = x->numel / known;
        }
    } else if (!strcmp(op, "Squeeze")) {
        OX_TRY(squeeze_axes(c, axes, &n));
        uint32_t mask = 0;
        for (int i = 0; i < n; i++) {
            int ax;
            OX_TRY(ox_axis(c, axes[i], x->ndim, &ax));
            if (x->dims[ax] != 1) return wgt_error(WGT_ERR_SHAPE, "Squeeze: axis %d has size %lld", ax, (long long)x->dims[ax]);
            mask |= 1u << ax;
        }
        for (int d = 0; d < x->ndim; d++)
            if (n ? !(mask >> d & 1) : x->dims[d] != 1) dims[nd++] = x->dims[d];
    } else { /* Unsqueeze */
        OX_TRY(squeeze_axes(c, axes, &n));
        int out_nd = x->ndim + n;
        if (out_nd > WGT_MAX_DIMS) return ox_unsupported(c, "more than 8 dims");
        uint32_t mask = 0;
        for (int i = 0; i < n; i++) {
            int ax;
            OX_TRY(ox_axis(c, axes[i], out_nd, &ax));
            mask |= 1u << ax;
        }
        for (int d = 0, s = 0; d < out_nd; d++) dims[nd++] = mask >> d & 1 ? 1 : x->dims[s++];
    }
    int64_t total = 1;
    for (int d = 0; d < nd; d++) total *= dims[d];
    if (total != x->numel)
        return wgt_error(WGT_ERR_SHAPE, "%s: %lld elements cannot take a shape of %lld", op,
                         (long long)x->numel, (long long)total);
    wgt_cpu_tensor ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, nd, dims, &ov));
    wgt_cpu_tensor xv = wgt_cpu_tensor_make(x->data, x->dtype, nd, dims); /* same elements, new shape */
    return OX_CALL(c, wgt_cpu_copy, &xv, &ov);
}

wgt_status ox_concat(ox *c)
{
    const wgt_onnx_tensor *ts[64];
    wgt_cpu_tensor vs[64];
    const wgt_cpu_tensor *ps[64];
    int n = c->n_in, ax;
    if (n < 1 || n > 64) return ox_unsupported(c, "1 to 64 inputs supported");
    for (int i = 0; i < n; i++) {
        OX_TRY(ox_need(c, i, &ts[i]));
        vs[i] = ox_view(ts[i]);
        ps[i] = &vs[i];
    }
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", 0), ts[0]->ndim, &ax));
    int64_t dims[WGT_MAX_DIMS];
    memcpy(dims, ts[0]->dims, sizeof dims);
    dims[ax] = 0;
    for (int i = 0; i < n; i++) {
        if (ts[i]->ndim != ts[0]->ndim) return wgt_error(WGT_ERR_SHAPE, "Concat: inputs differ in rank");
        dims[ax] += ts[i]->dims[ax];
    }
    wgt_cpu_tensor ov;
    OX_TRY(ox_alloc(c, 0, ts[0]->dtype, ts[0]->ndim, dims, &ov));
    return OX_CALL(c, wgt_cpu_cat, ps, n, ax, &ov);
}

wgt_status ox_tile(ox *c)
{
    const wgt_onnx_tensor *x, *r;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &r));
    int64_t reps[WGT_MAX_DIMS], dims[WGT_MAX_DIMS];
    int n;
    OX_TRY(ox_ints(c, r, reps, WGT_MAX_DIMS, &n));
    if (n != x->ndim) return wgt_error(WGT_ERR_SHAPE, "Tile: %d repeats for %d dims", n, x->ndim);
    for (int d = 0; d < n; d++) {
        if (reps[d] < 0) return wgt_error(WGT_ERR_SHAPE, "Tile: negative repeat");
        dims[d] = x->dims[d] * reps[d];
    }
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, n, dims, &ov));
    return OX_CALL(c, wgt_cpu_repeat, &xv, &ov);
}

wgt_status ox_expand(ox *c)
{
    const wgt_onnx_tensor *x, *s;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &s));
    wgt_onnx_tensor shape = {0};
    int n, nd;
    OX_TRY(ox_ints(c, s, shape.dims, WGT_MAX_DIMS, &n));
    shape.ndim = n;
    const wgt_onnx_tensor *both[2] = {x, &shape};
    int64_t dims[WGT_MAX_DIMS];
    OX_TRY(ox_broadcast(c, both, 2, &nd, dims));
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, nd, dims, &ov));
    return OX_CALL(c, wgt_cpu_copy, &xv, &ov);
}

wgt_status ox_pad(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    const char *mode_s = ox_attr_s(c, "mode", "constant");
    wgt_pad_mode mode = !strcmp(mode_s, "constant") ? WGT_PAD_CONSTANT : !strcmp(mode_s, "reflect") ? WGT_PAD_REFLECT
                      : !strcmp(mode_s, "edge") ? WGT_PAD_REPLICATE : !strcmp(mode_s, "wrap") ? WGT_PAD_CIRCULAR
                      : WGT_PAD_COUNT;
    if (mode == WGT_PAD_COUNT) return ox_unsupported(c, "unknown mode");
    int nd = x->ndim, n = 0;
    int64_t given[2 * WGT_MAX_DIMS], pads[2 * WGT_MAX_DIMS] = {0}, axes[WGT_MAX_DIMS];
    double value = 0;
    if (c->opset < 11) {
        const wgt_onnx_attr *p = ox_attr(c, "pads");
        if (!p || p->n_ints > 2 * WGT_MAX_DIMS) return ox_unsupported(c, "missing or long pads");
        for (int i = 0; i < p->n_ints; i++) given[i] = p->ints[i];
        n = p->n_ints;
        value = ox_attr_f(c, "value", 0);
    } else {
        const wgt_onnx_tensor *p, *v = ox_in(c, 2);
        OX_TRY(ox_need(c, 1, &p));
        OX_TRY(ox_ints(c, p, given, 2 * WGT_MAX_DIMS, &n));
        if (v) {
            OX_TRY(ox_need(c, 2, &v));
            value = ox_scalar(v);
        }
    }
    int na = nd;
    for (int d = 0; d < nd; d++) axes[d] = d;
    const wgt_onnx_tensor *ax = ox_in(c, 3);
    if (ax) OX_TRY(ox_ints(c, ax, axes, WGT_MAX_DIMS, &na));
    if (n != 2 * na) return wgt_error(WGT_ERR_SHAPE, "Pad: %d pads for %d axes", n, na);
    for (int i = 0; i < na; i++) {
        int a;
        OX_TRY(ox_axis(c, axes[i], nd, &a));
        pads[a] = given[i], pads[nd + a] = given[na + i];
    }
    int64_t dims[WGT_MAX_DIMS];
    for (int d = 0; d < nd; d++) dims[d] = x->dims[d] + pads[d] + pads[nd + d];
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, nd, dims, &ov));
    return OX_CALL(c, wgt_cpu_pad, &xv, mode, pads, value, &ov);
}

wgt_status ox_trilu(ox *c)
{
    const wgt_onnx_tensor *x, *k = ox_in(c, 1);
    OX_TRY(ox_need(c, 0, &x));
    int64_t kv = 0;
    if (k) {
        OX_TRY(ox_need(c, 1, &k));
        if (k->numel != 1) return wgt_error(WGT_ERR_SHAPE, "Trilu: k must hold one value");
        wgt_cpu_tensor v = ox_view(k);
        kv = wgt_cpu_load_i(&v, 0);
    }
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
    return ox_attr_i(c, "upper", 1) ? OX_CALL(c, wgt_cpu_triu, &xv, kv, &ov) : OX_CALL(c, wgt_cpu_tril, &xv, kv, &ov);
}

wgt_status ox_gather(ox *c)
{
    const wgt_onnx_tensor *x, *idx;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &idx));
    int ax;
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", 0), x->ndim, &ax));
    int nd = 0;
    int64_t dims[2 * WGT_MAX_DIMS], flat[WGT_MAX_DIMS];
    for (int d = 0; d < ax; d++) dims[nd++] = x->dims[d];
    for (int d = 0; d < idx->ndim; d++) dims[nd++] = idx->dims[d];
    for (int d = ax + 1; d < x->ndim; d++) dims[nd++] = x->dims[d];
    if (nd > WGT_MAX_DIMS) return ox_unsupported(c, "result with more than 8 dims");
    wgt_cpu_tensor ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, nd, dims, &ov));
    /* index_select with the index flattened: out viewed as x's shape with dim ax = numel(idx). */
    memcpy(flat, x->dims, sizeof flat);
    flat[ax] = idx->numel;
    wgt_cpu_tensor xv = ox_view(x), iv = wgt_cpu_tensor_make(idx->data, idx->dtype, 1, &idx->numel);
    wgt_cpu_tensor o2 = wgt_cpu_tensor_make(ov.data, x->dtype, x->ndim, flat);
    return OX_CALL(c, wgt_cpu_index_select, &xv, ax, &iv, &o2);
}

wgt_status ox_gather_elements(ox *c)
{
    const wgt_onnx_tensor *x, *idx;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &idx));
    int ax;
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", 0), x->ndim, &ax));
    wgt_cpu_tensor xv = ox_view(x), iv = ox_view(idx), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, idx->ndim, idx->dims, &ov));
    return OX_CALL(c, wgt_cpu_gather, &xv, ax, &iv, &ov);
}

wgt_status ox_scatter_elements(ox *c)
{
    const wgt_onnx_tensor *x, *idx, *upd;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &idx));
    OX_TRY(ox_need(c, 2, &upd));
    int ax;
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", 0), x->ndim, &ax));
    const char *r = ox_attr_s(c, "reduction", "none");
    wgt_scatter_mode mode = !strcmp(r, "none") ? WGT_SCATTER_SET : !strcmp(r, "add") ? WGT_SCATTER_ADD
                          : !strcmp(r, "mul") ? WGT_SCATTER_MUL : !strcmp(r, "max") ? WGT_SCATTER_AMAX
                          : !strcmp(r, "min") ? WGT_SCATTER_AMIN : WGT_SCATTER_COUNT;
    if (mode == WGT_SCATTER_COUNT) return ox_unsupported(c, "unknown reduction");
    wgt_cpu_tensor xv = ox_view(x), iv = ox_view(idx), uv = ox_view(upd), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
    return OX_CALL(c, wgt_cpu_scatter, &xv, ax, &iv, &uv, mode, &ov);
}

wgt_status ox_onehot(ox *c)
{
    const wgt_onnx_tensor *x, *depth, *vals;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &depth));
    OX_TRY(ox_need(c, 2, &vals));
    if (vals->numel != 2) return wgt_error(WGT_ERR_SHAPE, "OneHot: values must hold [off, on]");
    int64_t dep = (int64_t)ox_scalar(depth);
    int ax, nd = x->ndim + 1;
    if (nd > WGT_MAX_DIMS) return ox_unsupported(c, "more than 8 dims");
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", -1), nd, &ax));
    int64_t dims[WGT_MAX_DIMS];
    for (int d = 0, s = 0; d < nd; d++) dims[d] = d == ax ? dep : x->dims[s++];
    /* ONNX allows float indices (truncated): cast them to i64 first. */
    wgt_onnx_tensor ix;
    OX_TRY(ox_temp(&ix, WGT_I64, x->ndim, x->dims));
    wgt_cpu_tensor xv = ox_view(x), iv = ox_view(&ix), vv = ox_view(vals), ov;
    wgt_status st = OX_CALL(c, wgt_cpu_cast, &xv, &iv);
    if (!st) st = ox_alloc(c, 0, vals->dtype, nd, dims, &ov);
    if (!st) st = OX_CALL(c, wgt_cpu_one_hot, &iv, ax, wgt_cpu_load_f(&vv, 0), wgt_cpu_load_f(&vv, 1), &ov);
    wgt_onnx_tensor_clear(&ix);
    return st;
}

wgt_status ox_range(ox *c)
{
    const wgt_onnx_tensor *s, *l, *d;
    OX_TRY(ox_need(c, 0, &s));
    OX_TRY(ox_need(c, 1, &l));
    OX_TRY(ox_need(c, 2, &d));
    double start = ox_scalar(s), limit = ox_scalar(l), delta = ox_scalar(d);
    if (delta == 0) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "Range: delta is 0");
    double n = ceil((limit - start) / delta);
    if (!(n >= 0)) n = 0;
    if (n > 1e9) return wgt_error(WGT_ERR_LIMIT, "Range: %g elements", n);
    int64_t count = (int64_t)n;
    wgt_cpu_tensor ov;
    OX_TRY(ox_alloc(c, 0, s->dtype, 1, &count, &ov));
    return OX_CALL(c, wgt_cpu_arange, start, delta, &ov);
}

wgt_status ox_nonzero(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    wgt_cpu_tensor xv = ox_view(x), ov;
    int64_t count;
    OX_TRY(OX_CALL(c, wgt_cpu_nonzero, &xv, NULL, &count));
    int64_t dims[2] = {x->ndim, count};
    OX_TRY(ox_alloc(c, 0, WGT_I64, 2, dims, &ov));
    /* ONNX's [ndim, count] is the transpose of the reference's [count, ndim]: write through a view. */
    wgt_cpu_tensor tv = transposed(ov);
    return OX_CALL(c, wgt_cpu_nonzero, &xv, &tv, &count);
}

/* A parameter that broadcasts to dims (k of them): t itself when it matches, else expanded into tmp. */
static wgt_status param(ox *c, const wgt_onnx_tensor *t, int k, const int64_t *dims, wgt_onnx_tensor *tmp,
                        wgt_cpu_tensor *v)
{
    *v = ox_view(t);
    int same = t->ndim == k;
    for (int d = 0; same && d < k; d++) same = t->dims[d] == dims[d];
    if (same) return WGT_OK;
    OX_TRY(ox_temp(tmp, t->dtype, k, dims));
    wgt_cpu_tensor tv = ox_view(tmp);
    OX_TRY(OX_CALL(c, wgt_cpu_copy, v, &tv));
    *v = tv;
    return WGT_OK;
}

wgt_status ox_layer_norm(ox *c)
{
    const wgt_onnx_tensor *x, *w, *b = ox_in(c, 2);
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &w));
    if (b) OX_TRY(ox_need(c, 2, &b));
    int ax;
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", -1), x->ndim, &ax));
    int k = x->ndim - ax;
    wgt_onnx_tensor tw = {0}, tb = {0};
    wgt_cpu_tensor xv = ox_view(x), wv, bv, ov, mv, rv;
    wgt_status st = param(c, w, k, x->dims + ax, &tw, &wv);
    if (!st && b) st = param(c, b, k, x->dims + ax, &tb, &bv);
    if (!st) st = ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov);
    int64_t sdims[WGT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) sdims[d] = d < ax ? x->dims[d] : 1;
    int want_mean = c->n_out > 1 && c->node->n_outputs > 1 && c->node->outputs[1][0];
    int want_rstd = c->n_out > 2 && c->node->n_outputs > 2 && c->node->outputs[2][0];
    if (!st && want_mean) st = ox_alloc(c, 1, WGT_F32, x->ndim, sdims, &mv);
    if (!st && want_rstd) st = ox_alloc(c, 2, WGT_F32, x->ndim, sdims, &rv);
    if (!st)
        st = OX_CALL(c, wgt_cpu_layer_norm, &xv, k, &wv, b ? &bv : NULL, ox_attr_f(c, "epsilon", 1e-5), &ov,
                                want_mean ? &mv : NULL, want_rstd ? &rv : NULL);
    wgt_onnx_tensor_clear(&tw);
    wgt_onnx_tensor_clear(&tb);
    return st;
}

wgt_status ox_batch_norm(ox *c)
{
    const wgt_onnx_tensor *t[5];
    for (int i = 0; i < 5; i++) OX_TRY(ox_need(c, i, &t[i]));
    if (ox_attr_i(c, "training_mode", 0) || c->node->n_outputs > 1)
        return ox_unsupported(c, "training mode (ONNX's running statistics use its own momentum "
                                 "convention and the biased variance; the reference follows PyTorch)");
    wgt_cpu_tensor v[5], ov;
    for (int i = 0; i < 5; i++) v[i] = ox_view(t[i]);
    OX_TRY(ox_alloc(c, 0, t[0]->dtype, t[0]->ndim, t[0]->dims, &ov));
    return OX_CALL(c, wgt_cpu_batch_norm, &v[0], &v[3], &v[4], &v[1], &v[2], 0, 0, ox_attr_f(c, "epsilon", 1e-5), &ov);
}

wgt_status ox_instance_norm(ox *c)
{
    const wgt_onnx_tensor *x, *w, *b;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &w));
    OX_TRY(ox_need(c, 2, &b));
    if (x->ndim < 2) return wgt_error(WGT_ERR_SHAPE, "InstanceNormalization: input must be [N, C, ...]");
    /* Instance norm is group norm with one channel per group. */
    wgt_cpu_tensor xv = ox_view(x), wv = ox_view(w), bv = ox_view(b), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
    return OX_CALL(c, wgt_cpu_group_norm, &xv, (int)x->dims[1], &wv, &bv, ox_attr_f(c, "epsilon", 1e-5), &ov);
}

wgt_status ox_constant_of_shape(ox *c)
{
    const wgt_onnx_tensor *s;
    OX_TRY(ox_need(c, 0, &s));
    int64_t dims[WGT_MAX_DIMS];
    int nd;
    OX_TRY(ox_ints(c, s, dims, WGT_MAX_DIMS, &nd));
    const wgt_onnx_attr *a = ox_attr(c, "value");
    wgt_dtype dtype = WGT_F32;
    wgt_cpu_tensor ov;
    if (a && a->t) {
        if (!a->t->data || a->t->numel != 1) return ox_unsupported(c, "value of an unsupported type");
        dtype = a->t->dtype;
    }
    OX_TRY(ox_alloc(c, 0, dtype, nd, dims, &ov));
    if (!a || !a->t) return OX_CALL(c, wgt_cpu_full, 0, &ov);
    wgt_cpu_tensor vv = ox_view(a->t);
    vv.l.ndim = 0; /* one element, broadcast */
    return OX_CALL(c, wgt_cpu_cast, &vv, &ov);
}
