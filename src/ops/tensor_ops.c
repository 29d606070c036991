/* The tensor functions that need more than the tensor layer: a reshape that no view fits copies
 * (wgt_tensor_contiguous is an op), and host views of tensors for the CPU reference (they hand
 * the reference a wgt_cpu_tensor, which the tensor layer does not know). */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

wgt_status wgt_tensor_reshape(const wgt_tensor *t, int ndim, const int64_t *shape, wgt_tensor **out)
{
    wgt_status st = wgt_tensor_reshape_view(t, ndim, shape, out);
    if (st || *out) return st;
    wgt_tensor *c;
    if ((st = wgt_tensor_contiguous(t, &c))) return st;
    st = wgt_tensor_reshape_view(c, ndim, shape, out);
    wgt_tensor_free(c);
    return st;
}

wgt_status wgt_host_view_get(const wgt_tensor *t, wgt_host_view *v)
{
    memset(v, 0, sizeof *v);
    wgt_context *ctx = t->st->ctx;
    v->t.l = t->l;
    if (wgt_gpu_runs_reference(ctx)) {
        v->t.data = t->st->host;
        return WGT_OK;
    }
    size_t size = wgt_dtype_size(t->l.dtype);
    uint64_t start = ((uint64_t)t->l.offset * size) & ~3ull, end = wgt_layout_extent_bytes(&t->l);
    if (end < start + 4) end = start + 4;
    if (end > t->st->bytes) end = t->st->bytes;
    v->owned = malloc(end - start);
    if (!v->owned) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory copying a tensor to the host");
    wgt_status st = wgt_gpu_download(ctx, t->st->buf, start, v->owned, end - start);
    if (st) {
        free(v->owned);
        v->owned = NULL;
        return st;
    }
    v->t.data = v->owned;
    v->t.l.offset -= (int64_t)(start / size);
    return WGT_OK;
}

wgt_status wgt_host_view_put(const wgt_tensor *out, const wgt_host_view *v)
{
    wgt_context *ctx = out->st->ctx;
    if (wgt_gpu_runs_reference(ctx)) return WGT_OK;
    size_t size = wgt_dtype_size(out->l.dtype);
    uint64_t start = ((uint64_t)out->l.offset * size) & ~3ull, end = wgt_layout_extent_bytes(&out->l);
    if (end < start + 4) end = start + 4;
    if (end > out->st->bytes) end = out->st->bytes;
    return wgt_gpu_upload(ctx, out->st->buf, start, v->owned, end - start);
}

void wgt_host_view_free(wgt_host_view *v)
{
    free(v->owned);
    v->owned = NULL;
}
