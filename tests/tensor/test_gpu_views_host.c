/* wgt_tensor_to_host of strided views (the tensor layer's own gather: one download of the range
 * the view reaches, then a host gather) and wgt_tensor_reshape of views no reshape can view (a copy
 * in src/ops), on this adapter and on a CPU-reference context. The oracle is the source array
 * indexed by hand: element (i, j) of a [R, C] tensor is bytes at (i * C + j) * size.
 * Element sizes 1, 2, 4 and 8 (u8, f16, f32, i64), odd offsets, broadcast (stride 0) views. */
#include <string.h>

#include "support/check.h"

enum { R = 5, C = 7 };

/* want[k] for the k-th element of the view whose element (a, b) is source element (row, col). */
typedef void (*coord_fn)(int64_t a, int64_t b, int64_t *row, int64_t *col);
static void tr(int64_t a, int64_t b, int64_t *r, int64_t *c) { *r = b, *c = a; }            /* transpose */
static void nar(int64_t a, int64_t b, int64_t *r, int64_t *c) { *r = a + 1, *c = b + 3; }   /* narrow rows 1.., cols 3.. */
static void bc(int64_t a, int64_t b, int64_t *r, int64_t *c) { (void)a, *r = 2, *c = b; }   /* row 2 expanded */

static void expect_view(const char *tag, const wgt_tensor *v, const unsigned char *src, size_t size, coord_fn at)
{
    int64_t n0 = wgt_tensor_shape(v)[0], n1 = wgt_tensor_shape(v)[1];
    size_t bytes = (size_t)(n0 * n1) * size;
    unsigned char got[R * C * 4 * 8], want[R * C * 4 * 8];
    for (int64_t a = 0; a < n0; a++)
        for (int64_t b = 0; b < n1; b++) {
            int64_t r, c;
            at(a, b, &r, &c);
            memcpy(want + (size_t)(a * n1 + b) * size, src + (size_t)(r * C + c) * size, size);
        }
    wgt_status st = wgt_tensor_to_host(v, got, bytes);
    CHECK(st == WGT_OK, "%s: to_host: %s", tag, wgt_errmsg());
    if (!st) CHECK(!memcmp(got, want, bytes), "%s: the host copy differs from the source indexed by hand", tag);
}

static void run(wgt_context *ctx, const char *name)
{
    const wgt_dtype dts[] = {WGT_U8, WGT_F16, WGT_F32, WGT_I64};
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
        size_t size = wgt_dtype_size(dts[d]);
        unsigned char src[R * C * 8];
        for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 37 + 11); /* any bits: only copied */
        if (dts[d] == WGT_F16) /* keep f16 finite: NaN payloads need not survive a copy kernel */
            for (size_t i = 1; i < R * C * 2; i += 2) src[i] &= 0x3B;
        const int64_t shape[2] = {R, C};
        wgt_tensor *t, *v, *w;
        MUST(wgt_tensor_from_host(ctx, dts[d], 2, shape, src, &t));
        char tag[96];
        snprintf(tag, sizeof tag, "%s %s transposed", name, wgt_dtype_name(dts[d]));
        MUST(wgt_tensor_transpose(t, 0, 1, &v));
        expect_view(tag, v, src, size, tr);
        /* [C, R] transposed viewed as [R * C]: no view fits, so reshape copies (ops) */
        const int64_t flat[1] = {R * C}, as2[2] = {C, R};
        MUST(wgt_tensor_reshape(v, 1, flat, &w));
        wgt_tensor *w2;
        MUST(wgt_tensor_reshape(w, 2, as2, &w2));
        snprintf(tag, sizeof tag, "%s %s transposed, reshaped", name, wgt_dtype_name(dts[d]));
        expect_view(tag, w2, src, size, tr);
        CHECK(wgt_tensor_is_contiguous(w), "%s: the reshaped copy is contiguous", tag);
        wgt_tensor_free(w), wgt_tensor_free(w2), wgt_tensor_free(v);
        wgt_tensor *n1, *n2;
        MUST(wgt_tensor_narrow(t, 0, 1, R - 1, &n1));
        MUST(wgt_tensor_narrow(n1, 1, 3, C - 3, &n2));
        snprintf(tag, sizeof tag, "%s %s narrowed at (1, 3)", name, wgt_dtype_name(dts[d]));
        expect_view(tag, n2, src, size, nar);
        wgt_tensor_free(n1), wgt_tensor_free(n2);
        wgt_tensor *row, *e;
        const int64_t eshape[2] = {3, C};
        MUST(wgt_tensor_narrow(t, 0, 2, 1, &row));
        MUST(wgt_tensor_expand(row, 2, eshape, &e));
        snprintf(tag, sizeof tag, "%s %s row 2 broadcast", name, wgt_dtype_name(dts[d]));
        expect_view(tag, e, src, size, bc);
        wgt_tensor_free(row), wgt_tensor_free(e), wgt_tensor_free(t);
    }
}

int main(void)
{
    wgt_context *dev, *ref;
    MUST(wgt_context_create(NULL, &dev));
    wgt_context_options ro = {0};
    ro.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&ro, &ref));
    run(dev, "device");
    run(ref, "cpu");
    wgt_context_free(dev);
    wgt_context_free(ref);
    return test_finish("test_gpu_views_host");
}
