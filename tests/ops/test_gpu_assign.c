/* wgt_tensor_assign: writing a block into a view of a larger tensor (the KV-cache write), in f32,
 * f16 (two per word) and an odd-aligned f16 view (reference path); elements outside the view stay. */
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"

static void run(wgt_context *ctx, wgt_dtype dt, int64_t start, int64_t width)
{
    int64_t cshape[3] = {2, 10, width}, sshape[3] = {2, 3, width};
    int64_t cn = 2 * 10 * width, sn = 2 * 3 * width;
    size_t sz = wgt_dtype_size(dt);
    unsigned char *cache = malloc(cn * sz), *src = malloc(sn * sz), *back = malloc(cn * sz);
    wgt_cpu_tensor hc = wgt_cpu_tensor_make(cache, dt, 3, cshape), hs = wgt_cpu_tensor_make(src, dt, 3, sshape);
    for (int64_t i = 0; i < cn; i++) wgt_cpu_store_f(&hc, i, -(double)i);
    for (int64_t i = 0; i < sn; i++) wgt_cpu_store_f(&hs, i, (double)i + 0.5);
    wgt_tensor *c, *s, *view;
    MUST(wgt_tensor_from_host(ctx, dt, 3, cshape, cache, &c));
    MUST(wgt_tensor_from_host(ctx, dt, 3, sshape, src, &s));
    MUST(wgt_tensor_narrow(c, 1, start, 3, &view));
    MUST(wgt_tensor_assign(view, s));
    MUST(wgt_tensor_to_host(c, back, cn * sz));
    wgt_cpu_tensor hb = wgt_cpu_tensor_make(back, dt, 3, cshape);
    int bad = 0;
    for (int64_t h = 0; h < 2; h++)
        for (int64_t t = 0; t < 10; t++)
            for (int64_t d = 0; d < width; d++) {
                int64_t i = (h * 10 + t) * width + d;
                double want = t >= start && t < start + 3 ? (double)((h * 3 + t - start) * width + d) + 0.5 : -(double)i;
                want = wgt_cpu_round_to(dt, want);
                bad += wgt_cpu_load_f(&hb, i) != want;
            }
    CHECK(bad == 0, "%s width %lld start %lld: %d elements wrong", wgt_dtype_name(dt), (long long)width,
          (long long)start, bad);
    wgt_tensor *wrong;
    int64_t wshape[3] = {2, 4, width};
    MUST(wgt_tensor_zeros(ctx, dt, 3, wshape, &wrong));
    CHECK(wgt_tensor_assign(view, wrong) == WGT_ERR_SHAPE, "a shape mismatch must be refused");
    wgt_tensor_free(wrong);
    wgt_tensor_free(view);
    wgt_tensor_free(s);
    wgt_tensor_free(c);
    free(cache);
    free(src);
    free(back);
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    run(ctx, WGT_F32, 4, 8);
    run(ctx, WGT_F32, 7, 5);
    run(ctx, WGT_F16, 2, 8);
    run(ctx, WGT_BF16, 0, 6);
    run(ctx, WGT_F16, 3, 3); /* odd width: the reference path */
    wgt_context_free(ctx);
    return test_finish("test_gpu_assign");
}
