/* Tensor handles: storage, creation, host transfers and views (no copies). */
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor.h"
#include "tensor/record.h"

static wgt_status check_shape(wgt_context *ctx, int ndim, const int64_t *shape, int64_t *numel)
{
    if (ndim < 0 || ndim > WGT_MAX_DIMS)
        return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "a tensor has 0 to %d dimensions, not %d", WGT_MAX_DIMS, ndim);
    if (ndim && !shape) return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "shape is NULL");
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "dimension %d has negative size %lld", d, (long long)shape[d]);
        if (shape[d] && n > INT64_MAX / 8 / shape[d])
            return wgt_ctx_error(ctx, WGT_ERR_LIMIT, "a tensor of that shape has too many elements");
        n *= shape[d];
    }
    *numel = n;
    return WGT_OK;
}

uint64_t wgt_layout_extent_bytes(const wgt_layout *l)
{
    int64_t last = l->offset;
    for (int d = 0; d < l->ndim; d++) {
        if (l->shape[d] == 0) return (uint64_t)(l->offset * (int64_t)wgt_dtype_size(l->dtype) + 3) & ~3ull;
        last += (l->shape[d] - 1) * l->strides[d];
    }
    return ((uint64_t)(last + 1) * wgt_dtype_size(l->dtype) + 3) & ~3ull;
}

static wgt_status storage_new(wgt_context *ctx, uint64_t bytes, wgt_storage **out)
{
    bytes = (bytes + 3) & ~3ull;
    if (bytes == 0) bytes = 4;
    wgt_storage *s = calloc(1, sizeof *s);
    if (!s) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a tensor");
    s->ctx = ctx;
    s->refs = 1;
    s->bytes = bytes;
    wgt_status st;
    if (wgt_gpu_runs_reference(ctx)) {
        s->host = malloc(bytes);
        st = s->host ? WGT_OK
                     : wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a tensor of %llu bytes",
                                     (unsigned long long)bytes);
    } else
        st = wgt_gpu_alloc(ctx, bytes, &s->buf);
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return WGT_OK;
}

static void storage_unref(wgt_storage *s)
{
    if (!s || --s->refs > 0) return;
    if (s->buf) wgt_gpu_release(s->ctx, s->buf);
    free(s->host);
    free(s);
}

wgt_status wgt_tensor_new(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, wgt_tensor **out)
{
    *out = NULL;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if ((unsigned)dtype >= WGT_DTYPE_COUNT)
        return wgt_ctx_error(ctx, WGT_ERR_DTYPE, "unknown dtype %d", (int)dtype);
    int64_t numel = 0;
    if ((st = check_shape(ctx, ndim, shape, &numel))) return st;
    wgt_tensor *t = calloc(1, sizeof *t);
    if (!t) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a tensor");
    wgt_layout_contiguous(&t->l, dtype, ndim, shape);
    if ((st = storage_new(ctx, (uint64_t)numel * wgt_dtype_size(dtype), &t->st))) {
        free(t);
        return st;
    }
    *out = t;
    return WGT_OK;
}

wgt_status wgt_tensor_new_view(const wgt_tensor *t, const wgt_layout *l, wgt_tensor **out)
{
    wgt_tensor *v = calloc(1, sizeof *v);
    if (!v) return wgt_ctx_error(t->st->ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a view");
    v->st = t->st;
    v->st->refs++;
    v->l = *l;
    *out = v;
    return WGT_OK;
}

void (*wgt_tensor_ag_retain)(struct ag_meta *m);
void (*wgt_tensor_ag_release)(struct ag_meta *m);

wgt_tensor *wgt_tensor_ref(const wgt_tensor *t)
{
    wgt_tensor *v = NULL;
    if (t && !wgt_tensor_new_view(t, &t->l, &v) && t->ag) {
        v->ag = t->ag;
        wgt_tensor_ag_retain(v->ag);
    }
    return v;
}

void wgt_tensor_free(wgt_tensor *t)
{
    if (!t) return;
    if (t->ag) wgt_tensor_ag_release(t->ag);
    storage_unref(t->st);
    free(t);
}

wgt_status wgt_tensor_empty(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, wgt_tensor **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "out is NULL");
    return wgt_tensor_new(ctx, dtype, ndim, shape, out);
}

wgt_status wgt_tensor_zeros(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, wgt_tensor **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "out is NULL");
    wgt_status st = wgt_tensor_new(ctx, dtype, ndim, shape, out);
    if (st) return st;
    wgt_storage *s = (*out)->st;
    if (wgt_gpu_runs_reference(ctx)) memset(s->host, 0, s->bytes);
    else if ((st = wgt_gpu_fill_zero(ctx, s->buf, 0, s->bytes))) {
        wgt_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

wgt_status wgt_tensor_from_host(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, const void *data,
                                wgt_tensor **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "out is NULL");
    wgt_status st = wgt_tensor_new(ctx, dtype, ndim, shape, out);
    if (st) return st;
    wgt_tensor *t = *out;
    uint64_t bytes = (uint64_t)wgt_layout_numel(&t->l) * wgt_dtype_size(dtype);
    if (bytes && !data) {
        wgt_tensor_free(t);
        *out = NULL;
        return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "data is NULL");
    }
    if (wgt_gpu_runs_reference(ctx)) {
        memcpy(t->st->host, data, bytes);
        return WGT_OK;
    }
    uint64_t whole = bytes & ~3ull;
    st = wgt_gpu_upload(ctx, t->st->buf, 0, data, whole);
    if (!st && whole < bytes) { /* the last partial word */
        unsigned char tail[4] = {0};
        memcpy(tail, (const char *)data + whole, bytes - whole);
        st = wgt_gpu_upload(ctx, t->st->buf, whole, tail, 4);
    }
    if (st) {
        wgt_tensor_free(t);
        *out = NULL;
    }
    return st;
}

wgt_status wgt_tensor_to_host(const wgt_tensor *t, void *dst, size_t bytes)
{
    if (!t || (!dst && bytes)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_to_host: NULL argument");
    wgt_context *ctx = t->st->ctx;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    uint64_t want = (uint64_t)wgt_layout_numel(&t->l) * wgt_dtype_size(t->l.dtype);
    if (bytes != want)
        return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_to_host: the tensor holds %llu bytes, given %zu",
                             (unsigned long long)want, bytes);
    if (!want) return WGT_OK;
    size_t size = wgt_dtype_size(t->l.dtype);
    uint64_t start = (uint64_t)t->l.offset * size;
    if (wgt_layout_is_contiguous(&t->l)) {
        if (wgt_gpu_runs_reference(ctx)) {
            memcpy(dst, (char *)t->st->host + start, bytes);
            return WGT_OK;
        }
        return wgt_gpu_download(ctx, t->st->buf, start, dst, bytes);
    }
    /* A strided view: read the storage range it reaches and gather on the host (a copy kernel
     * would be an op, and this layer calls none). The range is at most the storage's size. */
    const char *src = wgt_gpu_runs_reference(ctx) ? (const char *)t->st->host : NULL;
    char *owned = NULL;
    uint64_t base = start & ~3ull, end = wgt_layout_extent_bytes(&t->l);
    if (end > t->st->bytes) end = t->st->bytes;
    if (!src) {
        if (!(owned = malloc(end - base)))
            return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor_to_host: out of host memory for %llu bytes",
                                 (unsigned long long)(end - base));
        if ((st = wgt_gpu_download(ctx, t->st->buf, base, owned, end - base))) {
            free(owned);
            return st;
        }
        src = owned;
    } else
        base = 0; /* host storage is read in place */
    int64_t n = wgt_layout_numel(&t->l);
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)dst + (size_t)i * size, src + ((uint64_t)wgt_layout_index(&t->l, i) * size - base), size);
    free(owned);
    return WGT_OK;
}

/* ---- properties ------------------------------------------------------------------------------ */

wgt_context *wgt_tensor_context(const wgt_tensor *t) { return t ? t->st->ctx : NULL; }
wgt_dtype wgt_tensor_dtype(const wgt_tensor *t) { return t->l.dtype; }
int wgt_tensor_ndim(const wgt_tensor *t) { return t->l.ndim; }
const int64_t *wgt_tensor_shape(const wgt_tensor *t) { return t->l.shape; }
const int64_t *wgt_tensor_strides(const wgt_tensor *t) { return t->l.strides; }
int64_t wgt_tensor_numel(const wgt_tensor *t) { return wgt_layout_numel(&t->l); }
int wgt_tensor_is_contiguous(const wgt_tensor *t) { return wgt_layout_is_contiguous(&t->l); }

int64_t wgt_tensor_dim(const wgt_tensor *t, int dim)
{
    if (dim < 0) dim += t->l.ndim;
    return dim >= 0 && dim < t->l.ndim ? t->l.shape[dim] : -1;
}

/* ---- views ----------------------------------------------------------------------------------- */

static wgt_status norm_dim(const wgt_tensor *t, int *dim, int extra, const char *what)
{
    int n = t->l.ndim + extra;
    if (*dim < 0) *dim += n;
    if (*dim < 0 || *dim >= (n ? n : 1))
        return wgt_ctx_error(t->st->ctx, WGT_ERR_SHAPE, "%s: dimension out of range for a %d-D tensor", what, t->l.ndim);
    return WGT_OK;
}

#define VIEW_ARGS(t, out)                                                                          \
    if (!(t) || !(out)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "NULL argument");               \
    *(out) = NULL

wgt_status wgt_tensor_transpose(const wgt_tensor *t, int d0, int d1, wgt_tensor **out)
{
    VIEW_ARGS(t, out);
    wgt_status st;
    if ((st = norm_dim(t, &d0, 0, "transpose")) || (st = norm_dim(t, &d1, 0, "transpose"))) return st;
    wgt_layout l = t->l;
    if (l.ndim) {
        int64_t s = l.shape[d0];
        l.shape[d0] = l.shape[d1], l.shape[d1] = s;
        s = l.strides[d0];
        l.strides[d0] = l.strides[d1], l.strides[d1] = s;
    }
    int td[2] = {d0, d1};
    return op_record(wgt_tensor_new_view(t, &l, out), OP_GRAD_TRANSPOSE, &t, 1, td, sizeof td, out);
}

wgt_status wgt_tensor_permute(const wgt_tensor *t, const int *dims, wgt_tensor **out)
{
    VIEW_ARGS(t, out);
    wgt_layout l = t->l;
    int seen = 0;
    for (int d = 0; d < t->l.ndim; d++) {
        int s = dims[d];
        if (s < 0) s += t->l.ndim;
        if (s < 0 || s >= t->l.ndim || (seen >> s & 1))
            return wgt_ctx_error(t->st->ctx, WGT_ERR_SHAPE, "permute: the dims are not a permutation of 0..%d",
                                 t->l.ndim - 1);
        seen |= 1 << s;
        l.shape[d] = t->l.shape[s];
        l.strides[d] = t->l.strides[s];
    }
    return op_record(wgt_tensor_new_view(t, &l, out), OP_GRAD_PERMUTE, &t, 1, dims, sizeof(int) * t->l.ndim, out);
}

wgt_status wgt_tensor_narrow(const wgt_tensor *t, int dim, int64_t start, int64_t length, wgt_tensor **out)
{
    VIEW_ARGS(t, out);
    wgt_status st = norm_dim(t, &dim, 0, "narrow");
    if (st) return st;
    if (start < 0) start += t->l.shape[dim];
    if (start < 0 || length < 0 || start + length > t->l.shape[dim])
        return wgt_ctx_error(t->st->ctx, WGT_ERR_SHAPE, "narrow: [%lld, %lld) is outside dimension %d of size %lld",
                             (long long)start, (long long)(start + length), dim, (long long)t->l.shape[dim]);
    wgt_layout l = t->l;
    l.offset += start * l.strides[dim];
    l.shape[dim] = length;
    op_grad_narrow np = {dim, start};
    return op_record(wgt_tensor_new_view(t, &l, out), OP_GRAD_NARROW, &t, 1, &np, sizeof np, out);
}

wgt_status wgt_tensor_expand(const wgt_tensor *t, int ndim, const int64_t *shape, wgt_tensor **out)
{
    VIEW_ARGS(t, out);
    if (ndim < t->l.ndim || ndim > WGT_MAX_DIMS)
        return wgt_ctx_error(t->st->ctx, WGT_ERR_SHAPE, "expand: %d dims given for a %d-D tensor", ndim, t->l.ndim);
    wgt_layout l = t->l;
    l.ndim = ndim;
    int lead = ndim - t->l.ndim;
    for (int d = 0; d < ndim; d++) {
        int64_t have = d < lead ? 1 : t->l.shape[d - lead], stride = d < lead ? 0 : t->l.strides[d - lead];
        int64_t want = shape[d] == -1 && d >= lead ? have : shape[d];
        if (want != have && have != 1)
            return wgt_ctx_error(t->st->ctx, WGT_ERR_SHAPE, "expand: dimension %d of size %lld cannot become %lld", d,
                                 (long long)have, (long long)want);
        if (want < 0) return wgt_ctx_error(t->st->ctx, WGT_ERR_SHAPE, "expand: size %lld", (long long)want);
        l.shape[d] = want;
        l.strides[d] = want == have ? stride : 0;
    }
    return op_record(wgt_tensor_new_view(t, &l, out), OP_GRAD_EXPAND, &t, 1, NULL, 0, out);
}

wgt_status wgt_tensor_squeeze(const wgt_tensor *t, int dim, wgt_tensor **out)
{
    VIEW_ARGS(t, out);
    wgt_status st = norm_dim(t, &dim, 0, "squeeze");
    if (st) return st;
    wgt_layout l = t->l;
    if (t->l.ndim == 0 || t->l.shape[dim] != 1) /* PyTorch: no-op */
        return op_record(wgt_tensor_new_view(t, &l, out), OP_GRAD_RESHAPE, &t, 1, NULL, 0, out);
    for (int d = dim; d < l.ndim - 1; d++) l.shape[d] = l.shape[d + 1], l.strides[d] = l.strides[d + 1];
    l.ndim--;
    return op_record(wgt_tensor_new_view(t, &l, out), OP_GRAD_RESHAPE, &t, 1, NULL, 0, out);
}

wgt_status wgt_tensor_unsqueeze(const wgt_tensor *t, int dim, wgt_tensor **out)
{
    VIEW_ARGS(t, out);
    if (t->l.ndim >= WGT_MAX_DIMS)
        return wgt_ctx_error(t->st->ctx, WGT_ERR_SHAPE, "unsqueeze: a tensor has at most %d dims", WGT_MAX_DIMS);
    wgt_status st = norm_dim(t, &dim, 1, "unsqueeze");
    if (st) return st;
    wgt_layout l = t->l;
    for (int d = l.ndim; d > dim; d--) l.shape[d] = l.shape[d - 1], l.strides[d] = l.strides[d - 1];
    l.shape[dim] = 1;
    l.strides[dim] = dim + 1 < l.ndim + 1 && dim < l.ndim ? l.strides[dim + 1] * l.shape[dim + 1] : 1;
    l.ndim++;
    return op_record(wgt_tensor_new_view(t, &l, out), OP_GRAD_RESHAPE, &t, 1, NULL, 0, out);
}

/* View `in` as `shape` without copying, if its strides allow: dims of the input that are contiguous
 * among themselves form chunks, and each chunk must split exactly into output dims (the rule
 * PyTorch's view follows). Returns 0 when a copy is needed. */
static int reshape_view(const wgt_layout *in, int ndim, const int64_t *shape, wgt_layout *out)
{
    *out = *in;
    out->ndim = ndim;
    for (int d = 0; d < ndim; d++) out->shape[d] = shape[d];
    if (wgt_layout_numel(in) == 0 || in->ndim == 0) {
        int64_t stride = 1;
        for (int d = ndim - 1; d >= 0; d--) out->strides[d] = stride, stride *= shape[d];
        return 1;
    }
    int view_d = ndim - 1;
    int64_t chunk_stride = in->strides[in->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int td = in->ndim - 1; td >= 0; td--) {
        tensor_numel *= in->shape[td];
        if (td == 0 || (in->shape[td - 1] != 1 && in->strides[td - 1] != tensor_numel * chunk_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                out->strides[view_d] = view_numel * chunk_stride;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return 0;
            if (td > 0) {
                chunk_stride = in->strides[td - 1];
                tensor_numel = view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

wgt_status wgt_tensor_reshape_view(const wgt_tensor *t, int ndim, const int64_t *shape_in, wgt_tensor **out)
{
    VIEW_ARGS(t, out);
    wgt_context *ctx = t->st->ctx;
    if (ndim < 0 || ndim > WGT_MAX_DIMS) return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "reshape: %d dims", ndim);
    int64_t shape[WGT_MAX_DIMS], known = 1, numel = wgt_layout_numel(&t->l);
    int infer = -1;
    for (int d = 0; d < ndim; d++) {
        shape[d] = shape_in[d];
        if (shape[d] == -1) {
            if (infer >= 0) return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "reshape: only one size may be -1");
            infer = d;
        } else if (shape[d] < 0)
            return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "reshape: size %lld", (long long)shape[d]);
        else
            known *= shape[d];
    }
    if (infer >= 0) {
        if (known == 0 || numel % known)
            return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "reshape: %lld elements do not fit the shape given", (long long)numel);
        shape[infer] = numel / known;
        known = numel;
    }
    if (known != numel)
        return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "reshape: %lld elements cannot take a shape of %lld", (long long)numel,
                             (long long)known);
    wgt_layout l;
    if (reshape_view(&t->l, ndim, shape, &l))
        return op_record(wgt_tensor_new_view(t, &l, out), OP_GRAD_RESHAPE, &t, 1, NULL, 0, out);
    return WGT_OK; /* *out stays NULL: no view fits, the caller copies */
}
