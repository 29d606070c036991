/* ONNX TopK and Unique on a backend's topk/unique (src/cpu/sort.c, or the GPU ops). */
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_ops_internal.h"

/* TopK: k from input 1 (opset >= 10) or the attribute; axis (-1), largest (1), sorted (1: the
 * results are always sorted, which sorted=0 allows). Equal values: the lower index first. */
wgt_status ox_topk(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    int64_t k = ox_attr_i(c, "k", -1);
    const wgt_onnx_tensor *kt = ox_in(c, 1);
    if (kt) {
        int n;
        OX_TRY(ox_ints(c, kt, &k, 1, &n));
        if (n != 1) return wgt_error(WGT_ERR_SHAPE, "TopK: K must hold one value, not %d", n);
    }
    int ax;
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", -1), x->ndim, &ax));
    if (k < 0 || k > x->dims[ax])
        return wgt_error(WGT_ERR_SHAPE, "TopK: K = %lld outside [0, %lld]", (long long)k, (long long)x->dims[ax]);
    int64_t dims[WGT_MAX_DIMS];
    memcpy(dims, x->dims, sizeof(int64_t) * x->ndim);
    dims[ax] = k;
    wgt_cpu_tensor xv = ox_view(x), vv, iv;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, dims, &vv));
    OX_TRY(ox_alloc(c, 1, WGT_I64, x->ndim, dims, &iv));
    return OX_CALL(c, wgt_cpu_topk, &xv, k, ax, (int)ox_attr_i(c, "largest", 1), &vv, &iv);
}

/* Unique without axis: Y (the distinct values), indices (first occurrences), inverse_indices and
 * counts, all int64. sorted=0 orders the values by first occurrence: the sorted result permuted
 * on the host. With an axis (unique slices): not mapped. */
wgt_status ox_unique(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    if (ox_attr(c, "axis")) return ox_unsupported(c, "an axis (unique slices)");
    int sorted = (int)ox_attr_i(c, "sorted", 1);
    wgt_cpu_tensor xv = ox_view(x);
    int64_t count = 0, n = x->numel;
    OX_TRY(OX_CALL(c, wgt_cpu_unique, &xv, NULL, NULL, NULL, NULL, &count));
    wgt_onnx_tensor tmp[4];
    memset(tmp, 0, sizeof tmp);
    wgt_cpu_tensor v[4];
    const wgt_dtype dts[4] = {x->dtype, WGT_I64, WGT_I64, WGT_I64};
    const int64_t lens[4] = {count, count, n, count}; /* Y, indices, inverse, counts */
    wgt_status st = WGT_OK;
    for (int i = 0; i < 4 && !st; i++)
        if (!(st = ox_temp(&tmp[i], dts[i], 1, &lens[i]))) v[i] = ox_view(&tmp[i]);
    if (!st) st = OX_CALL(c, wgt_cpu_unique, &xv, &v[0], &v[2], &v[3], &v[1], &count);
    int64_t *order = NULL, *rank = NULL;
    if (!st && !sorted) { /* group g goes to place rank[g], in order of first occurrence */
        order = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        rank = malloc(sizeof(int64_t) * (size_t)(count ? count : 1));
        if (!order || !rank) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "Unique: no host memory");
        int64_t *first = tmp[1].data, p = 0;
        for (int64_t i = 0; !st && i < n; i++) order[i] = -1;
        for (int64_t g = 0; !st && g < count; g++) order[first[g]] = g; /* first indices are distinct */
        for (int64_t i = 0; !st && i < n; i++)
            if (order[i] >= 0) order[p++] = order[i]; /* compacts in place: p <= i */
        for (int64_t q = 0; !st && q < count; q++) rank[order[q]] = q;
    }
    for (int o = 0; !st && o < 4 && o < c->n_out; o++) {
        wgt_cpu_tensor out;
        if ((st = ox_alloc(c, o, dts[o], 1, &lens[o], &out))) break;
        size_t es = wgt_dtype_size(dts[o]);
        for (int64_t i = 0; i < lens[o]; i++) {
            int64_t from = i;
            if (!sorted && o != 2) from = order[i];
            memcpy((char *)out.data + i * es, (char *)tmp[o].data + from * es, es);
            if (!sorted && o == 2) ((int64_t *)out.data)[i] = rank[((int64_t *)tmp[2].data)[i]];
        }
    }
    free(order);
    free(rank);
    for (int i = 0; i < 4; i++) wgt_onnx_tensor_clear(&tmp[i]);
    return st;
}
