/* ONNX op -> CPU reference mapping, continued: slicing and splitting (strided views copied out),
 * depth/space rearrangements (6-D permuted views), shape queries, constants, inference-mode
 * dropout, hardmax (argmax + one_hot), global pooling (reductions) and ScatterND (index_put). */
#include "onnx/onnx_ops_internal.h"

#include <math.h>
#include <string.h>

/* Up to 8 int64 values from an attribute (older opsets) or an input (newer ones). */
static wgt_status ints_from(ox *c, const char *attr, int input, int64_t *vals, int *n, int *given)
{
    const wgt_onnx_attr *a = ox_attr(c, attr);
    const wgt_onnx_tensor *t = ox_in(c, input);
    *n = 0, *given = 0;
    if (a && a->type == WGT_ONNX_ATTR_INTS) {
        if (a->n_ints > WGT_MAX_DIMS) return ox_unsupported(c, "too many values");
        for (int i = 0; i < a->n_ints; i++) vals[i] = a->ints[i];
        *n = a->n_ints, *given = 1;
    } else if (input >= 0 && t) {
        OX_TRY(ox_ints(c, t, vals, WGT_MAX_DIMS, n));
        *given = 1;
    }
    return WGT_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

wgt_status ox_slice(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    int nd = x->ndim, ns, ne, na, nst, g;
    int64_t starts[WGT_MAX_DIMS], ends[WGT_MAX_DIMS], axes[WGT_MAX_DIMS], steps[WGT_MAX_DIMS];
    OX_TRY(ints_from(c, "starts", 1, starts, &ns, &g));
    OX_TRY(ints_from(c, "ends", 2, ends, &ne, &g));
    OX_TRY(ints_from(c, "axes", 3, axes, &na, &g));
    if (!g) for (int i = 0; i < ns; i++) axes[i] = i, na = ns;
    OX_TRY(ints_from(c, "steps", 4, steps, &nst, &g));
    if (!g) for (int i = 0; i < ns; i++) steps[i] = 1, nst = ns;
    if (ns != ne || ns != na || ns != nst) return wgt_error(WGT_ERR_SHAPE, "Slice: starts, ends, axes, steps differ in length");
    int64_t first[WGT_MAX_DIMS], step[WGT_MAX_DIMS], count[WGT_MAX_DIMS];
    uint32_t flip = 0;
    for (int d = 0; d < nd; d++) first[d] = 0, step[d] = 1, count[d] = x->dims[d];
    for (int i = 0; i < ns; i++) {
        int ax;
        OX_TRY(ox_axis(c, axes[i], nd, &ax));
        int64_t n = x->dims[ax], s = starts[i], e = ends[i], k = steps[i];
        if (k == 0) return wgt_error(WGT_ERR_SHAPE, "Slice: step 0");
        /* ONNX's clamping: +-2^63-ish values mean "to the end"; negatives count from the end. */
        s = s < 0 ? (s < -n ? -n : s) + n : s;
        e = e < 0 ? (e < -n - 1 ? -n - 1 : e) + n : e;
        if (k > 0) {
            s = clamp64(s, 0, n), e = clamp64(e, 0, n);
            count[ax] = e > s ? (e - s + k - 1) / k : 0;
        } else {
            s = clamp64(s, 0, n - 1), e = clamp64(e, -1, n - 1);
            count[ax] = s > e ? (s - e + (-k) - 1) / (-k) : 0;
            /* Layouts have no negative strides: read a flipped copy forwards. */
            flip |= 1u << ax, s = n - 1 - s, k = -k;
        }
        first[ax] = s, step[ax] = k;
    }
    wgt_onnx_tensor flipped = {0};
    wgt_cpu_tensor src = ox_view(x), ov;
    if (flip) {
        OX_TRY(ox_temp(&flipped, x->dtype, nd, x->dims));
        wgt_cpu_tensor fv = ox_view(&flipped);
        wgt_status st = OX_CALL(c, wgt_cpu_flip, &src, flip, &fv);
        if (st) {
            wgt_onnx_tensor_clear(&flipped);
            return st;
        }
        src = fv;
    }
    wgt_cpu_tensor view = src;
    for (int d = 0; d < nd; d++) {
        if (count[d]) view.l.offset += first[d] * src.l.strides[d];
        view.l.strides[d] = src.l.strides[d] * step[d];
        view.l.shape[d] = count[d];
    }
    wgt_status st = ox_alloc(c, 0, x->dtype, nd, count, &ov);
    if (!st) st = OX_CALL(c, wgt_cpu_copy, &view, &ov);
    wgt_onnx_tensor_clear(&flipped);
    return st;
}

wgt_status ox_split(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    int ax, n = c->node->n_outputs < c->n_out ? c->node->n_outputs : c->n_out, ns, g;
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", 0), x->ndim, &ax));
    int64_t sizes[64], given[WGT_MAX_DIMS];
    if (n < 1 || n > 64) return ox_unsupported(c, "1 to 64 outputs supported");
    const wgt_onnx_attr *a = ox_attr(c, "split");
    const wgt_onnx_tensor *t = ox_in(c, 1);
    if (a && a->type == WGT_ONNX_ATTR_INTS) {
        if (a->n_ints != n) return wgt_error(WGT_ERR_SHAPE, "Split: %d sizes for %d outputs", a->n_ints, n);
        for (int i = 0; i < n; i++) sizes[i] = a->ints[i];
    } else if (t) {
        if (t->numel != n) return wgt_error(WGT_ERR_SHAPE, "Split: %lld sizes for %d outputs", (long long)t->numel, n);
        OX_TRY(ints_from(c, "", 1, given, &ns, &g));
        for (int i = 0; i < n; i++) sizes[i] = given[i];
    } else { /* equal parts; opset 18: the last part may be smaller */
        int64_t dim = x->dims[ax], part = (dim + n - 1) / n;
        if (c->opset < 18 && dim % n) return wgt_error(WGT_ERR_SHAPE, "Split: %lld does not split in %d", (long long)dim, n);
        for (int i = 0; i < n; i++) sizes[i] = dim - part * i < part ? (dim - part * i > 0 ? dim - part * i : 0) : part;
    }
    int64_t pos = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0 || pos + sizes[i] > x->dims[ax]) return wgt_error(WGT_ERR_SHAPE, "Split: sizes exceed the axis");
        wgt_cpu_tensor part = ox_view(x), ov;
        part.l.offset += pos * part.l.strides[ax];
        part.l.shape[ax] = sizes[i];
        int64_t dims[WGT_MAX_DIMS];
        memcpy(dims, x->dims, sizeof dims);
        dims[ax] = sizes[i];
        OX_TRY(ox_alloc(c, i, x->dtype, x->ndim, dims, &ov));
        OX_TRY(OX_CALL(c, wgt_cpu_copy, &part, &ov));
        pos += sizes[i];
    }
    if (pos != x->dims[ax]) return wgt_error(WGT_ERR_SHAPE, "Split: sizes do not cover the axis");
    return WGT_OK;
}

/* DepthToSpace (DCR / CRD) and SpaceToDepth: a 6-D view of x, permuted, copied into out. */
wgt_status ox_depth_space(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    if (x->ndim != 4) return wgt_error(WGT_ERR_SHAPE, "%s: input must be [N, C, H, W]", c->node->op_type);
    int64_t b = ox_attr_i(c, "blocksize", 0), N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (b <= 0 || b > 65536) return wgt_error(WGT_ERR_SHAPE, "%s: blocksize %lld out of range", c->node->op_type, (long long)b);
    int to_space = !strcmp(c->node->op_type, "DepthToSpace");
    int64_t in6[6], odims[4];
    int perm[6];
    if (to_space) {
        if (C % (b * b)) return wgt_error(WGT_ERR_SHAPE, "DepthToSpace: C not a multiple of blocksize^2");
        int64_t cc = C / (b * b);
        int crd = !strcmp(ox_attr_s(c, "mode", "DCR"), "CRD");
        int64_t dcr[6] = {N, b, b, cc, H, W}, crd6[6] = {N, cc, b, b, H, W};
        int pd[6] = {0, 3, 4, 1, 5, 2}, pc[6] = {0, 1, 4, 2, 5, 3};
        memcpy(in6, crd ? crd6 : dcr, sizeof in6);
        memcpy(perm, crd ? pc : pd, sizeof perm);
        odims[0] = N, odims[1] = cc, odims[2] = H * b, odims[3] = W * b;
    } else {
        if (H % b || W % b) return wgt_error(WGT_ERR_SHAPE, "SpaceToDepth: H, W not multiples of blocksize");
        int64_t s6[6] = {N, C, H / b, b, W / b, b};
        int ps[6] = {0, 3, 5, 1, 2, 4};
        memcpy(in6, s6, sizeof in6);
        memcpy(perm, ps, sizeof perm);
        odims[0] = N, odims[1] = C * b * b, odims[2] = H / b, odims[3] = W / b;
    }
    wgt_cpu_tensor xv = wgt_cpu_tensor_make(x->data, x->dtype, 6, in6), pv = xv, ov;
    int64_t out6[6];
    for (int d = 0; d < 6; d++) {
        out6[d] = pv.l.shape[d] = xv.l.shape[perm[d]];
        pv.l.strides[d] = xv.l.strides[perm[d]];
    }
    OX_TRY(ox_alloc(c, 0, x->dtype, 4, odims, &ov));
    wgt_cpu_tensor o6 = wgt_cpu_tensor_make(ov.data, x->dtype, 6, out6);
    return OX_CALL(c, wgt_cpu_copy, &pv, &o6);
}

/* Shape (with opset 15's start/end) and Size: metadata as i64. */
wgt_status ox_shape(ox *c)
{
    const wgt_onnx_tensor *x = ox_in(c, 0);
    if (!x) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: input missing", c->node->op_type);
    wgt_cpu_tensor ov;
    if (!strcmp(c->node->op_type, "Size")) {
        OX_TRY(ox_alloc(c, 0, WGT_I64, 0, NULL, &ov));
        wgt_cpu_store_i(&ov, 0, x->numel);
        return WGT_OK;
    }
    int64_t r = x->ndim, s = ox_attr_i(c, "start", 0), e = ox_attr_i(c, "end", r);
    s = clamp64(s < 0 ? s + r : s, 0, r), e = clamp64(e < 0 ? e + r : e, 0, r);
    int64_t n = e > s ? e - s : 0;
    OX_TRY(ox_alloc(c, 0, WGT_I64, 1, &n, &ov));
    for (int64_t i = 0; i < n; i++) wgt_cpu_store_i(&ov, i, x->dims[s + i]);
    return WGT_OK;
}

wgt_status ox_constant(ox *c)
{
    const wgt_onnx_attr *a = ox_attr(c, "value");
    wgt_cpu_tensor ov;
    if (a && a->t && a->t->data) {
        wgt_cpu_tensor v = ox_view(a->t);
        OX_TRY(ox_alloc(c, 0, a->t->dtype, a->t->ndim, a->t->dims, &ov));
        return OX_CALL(c, wgt_cpu_copy, &v, &ov);
    }
    if ((a = ox_attr(c, "value_float"))) {
        OX_TRY(ox_alloc(c, 0, WGT_F32, 0, NULL, &ov));
        return OX_CALL(c, wgt_cpu_full, a->f, &ov);
    }
    if ((a = ox_attr(c, "value_int"))) {
        OX_TRY(ox_alloc(c, 0, WGT_I64, 0, NULL, &ov));
        wgt_cpu_store_i(&ov, 0, a->i);
        return WGT_OK;
    }
    if ((a = ox_attr(c, "value_ints")) || (a = ox_attr(c, "value_floats"))) {
        int is_int = a->type == WGT_ONNX_ATTR_INTS;
        int64_t n = is_int ? a->n_ints : a->n_floats;
        OX_TRY(ox_alloc(c, 0, is_int ? WGT_I64 : WGT_F32, 1, &n, &ov));
        for (int64_t i = 0; i < n; i++) {
            if (is_int) wgt_cpu_store_i(&ov, i, a->ints[i]);
            else wgt_cpu_store_f(&ov, i, a->floats[i]);
        }
        return WGT_OK;
    }
    return ox_unsupported(c, "a value of an unsupported kind (sparse, string or double)");
}

/* Inference-mode dropout is the identity with an all-true mask; training mode draws random
 * numbers that no reference can reproduce. */
wgt_status ox_dropout(ox *c)
{
    const wgt_onnx_tensor *x, *ratio = ox_in(c, 1), *train = ox_in(c, 2);
    OX_TRY(ox_need(c, 0, &x));
    int training = train && train->data && ox_scalar(train) != 0;
    double r = ratio && ratio->data ? ox_scalar(ratio) : ox_attr_f(c, "ratio", 0.5);
    if (training && r != 0) return ox_unsupported(c, "training mode draws random numbers");
    wgt_cpu_tensor xv = ox_view(x), ov, mv;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
    OX_TRY(OX_CALL(c, wgt_cpu_copy, &xv, &ov));
    if (c->node->n_outputs > 1 && c->n_out > 1 && c->node->outputs[1][0]) {
        OX_TRY(ox_alloc(c, 1, WGT_BOOL, x->ndim, x->dims, &mv));
        OX_TRY(OX_CALL(c, wgt_cpu_full, 1, &mv));
    }
    return WGT_OK;
}

/* Hardmax: one_hot(argmax(x, axis)) at axis, first maximum; before opset 13 over the 2-D coercion. */
wgt_status ox_hardmax(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    wgt_cpu_tensor ov, xv = ox_view(x);
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
    int ax;
    if (c->opset < 13) {
        OX_TRY(ox_axis(c, ox_attr_i(c, "axis", 1), x->ndim, &ax));
        int64_t shape[2] = {1, 1};
        for (int d = 0; d < x->ndim; d++) shape[d >= ax] *= x->dims[d];
        xv = wgt_cpu_tensor_make(x->data, x->dtype, 2, shape);
        ov = wgt_cpu_tensor_make(ov.data, x->dtype, 2, shape);
        ax = 1;
    } else OX_TRY(ox_axis(c, ox_attr_i(c, "axis", -1), x->ndim, &ax));
    int64_t idims[WGT_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < xv.l.ndim; d++)
        if (d != ax) idims[nd++] = xv.l.shape[d];
    if (xv.l.shape[ax] == 0) return WGT_OK;
    wgt_onnx_tensor idx;
    OX_TRY(ox_temp(&idx, WGT_I64, nd, idims));
    wgt_cpu_tensor iv = ox_view(&idx);
    wgt_status st = OX_CALL(c, wgt_cpu_reduce, WGT_REDUCE_ARGMAX, &xv, 1u << ax, 0, 0, &iv, NULL);
    if (!st) st = OX_CALL(c, wgt_cpu_one_hot, &iv, ax, 0, 1, &ov);
    wgt_onnx_tensor_clear(&idx);
    return st;
}

wgt_status ox_global_pool(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    if (x->ndim < 3) return wgt_error(WGT_ERR_SHAPE, "%s: input must be [N, C, spatial...]", c->node->op_type);
    int64_t dims[WGT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) dims[d] = d < 2 ? x->dims[d] : 1;
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, dims, &ov));
    uint32_t spatial = ((1u << x->ndim) - 1) & ~3u;
    wgt_reduce_op op = !strcmp(c->node->op_type, "GlobalMaxPool") ? WGT_REDUCE_AMAX : WGT_REDUCE_MEAN;
    return OX_CALL(c, wgt_cpu_reduce, op, &xv, spatial, 1, 0, &ov, NULL);
}

/* ScatterND: indices [..., k] is k index tensors (strided views of its last dim) for index_put. */
wgt_status ox_scatter_nd(ox *c)
{
    const wgt_onnx_tensor *x, *idx, *upd;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &idx));
    OX_TRY(ox_need(c, 2, &upd));
    const char *r = ox_attr_s(c, "reduction", "none");
    int acc = !strcmp(r, "add");
    if (!acc && strcmp(r, "none")) return ox_unsupported(c, "reduction other than none/add (index_put has set and add)");
    if (idx->ndim < 1) return wgt_error(WGT_ERR_SHAPE, "ScatterND: indices need a last dim");
    int64_t k = idx->dims[idx->ndim - 1];
    if (k < 1 || k > x->ndim) return wgt_error(WGT_ERR_SHAPE, "ScatterND: index depth %lld for %d dims", (long long)k, x->ndim);
    wgt_cpu_tensor full = ox_view(idx), parts[WGT_MAX_DIMS];
    const wgt_cpu_tensor *pp[WGT_MAX_DIMS];
    for (int i = 0; i < k; i++) {
        parts[i] = full;
        parts[i].l.ndim = idx->ndim - 1;
        parts[i].l.offset = i;
        pp[i] = &parts[i];
    }
    wgt_cpu_tensor xv = ox_view(x), uv = ox_view(upd), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
    return OX_CALL(c, wgt_cpu_index_put, &xv, pp, (int)k, &uv, acc, &ov);
}
