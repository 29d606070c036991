#include "core/layout.h"

int64_t wgt_layout_numel(const wgt_layout *l)
{
    int64_t n = 1;
    for (int d = 0; d < l->ndim; d++) n *= l->shape[d];
    return n;
}

void wgt_layout_contiguous(wgt_layout *l, wgt_dtype dtype, int ndim, const int64_t *shape)
{
    l->dtype = dtype;
    l->ndim = ndim;
    l->offset = 0;
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        l->shape[d] = shape[d];
        l->strides[d] = stride;
        stride *= shape[d];
    }
    for (int d = ndim; d < WGT_MAX_DIMS; d++) l->shape[d] = 1, l->strides[d] = 0;
}

int wgt_layout_is_contiguous(const wgt_layout *l)
{
    int64_t stride = 1;
    for (int d = l->ndim - 1; d >= 0; d--) {
        if (l->shape[d] == 1) continue;
        if (l->strides[d] != stride) return 0;
        stride *= l->shape[d];
    }
    return 1;
}

int64_t wgt_layout_index(const wgt_layout *l, int64_t i)
{
    int64_t at = l->offset;
    for (int d = l->ndim - 1; d >= 0; d--) {
        int64_t n = l->shape[d];
        if (n <= 0) return l->offset;
        at += (i % n) * l->strides[d];
        i /= n;
    }
    return at;
}
