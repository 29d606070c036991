/* Every backward rule against central finite differences of the CPU reference, the device's
 * backward against the reference's, and f16/bf16 inputs against f32: the cases and tolerances of
 * testkit/grad/gradcheck.h (the same checks `wgt ops --check --grad` runs); sdpa's, layer_norm's,
 * rms_norm's, gelu_tanh's and silu's cases again through their composed backward (WGT_SDPA_GRAD,
 * WGT_NORM_GRAD, WGT_ACT_GRAD=composed; the default is their fused kernels). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grad/gradcheck.h"
#include "support/check.h"

int main(int argc, char **argv)
{
    wgt_context *dev, *ref;
    MUST(wgt_context_create(NULL, &dev));
    wgt_context_options o = {0};
    o.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&o, &ref));
    gc_totals t = {0};
    gc_run(dev, ref, (const char *const *)argv + 1, argc - 1, getenv("VERBOSE") != NULL, stderr, &t);
    printf("gradient checks: %d cases, %d passed, %d failed\n", t.cases, t.passed, t.failed);
    CHECK(t.cases > 0, "no case ran");
    CHECK(t.failed == 0, "%d gradient checks failed", t.failed);
    /* the backward kernels' alternative, the composed ops: sdpa's (WGT_SDPA_GRAD; the kernels take
     * the cases without a mask), the norms' (WGT_NORM_GRAD), gelu_tanh's and silu's (WGT_ACT_GRAD) */
    static const char *const fused[][3] = {{"WGT_SDPA_GRAD", "sdpa", NULL}, {"WGT_NORM_GRAD", "layer_norm", "rms_norm"},
                                           {"WGT_ACT_GRAD", "gelu_tanh", "silu"}};
    for (int i = 0; i < 3; i++) {
        int run = argc == 1;
        for (int a = 1; a < argc; a++) run |= !strcmp(argv[a], fused[i][1]) || (fused[i][2] && !strcmp(argv[a], fused[i][2]));
        if (!run) continue;
        gc_totals f = {0};
        setenv(fused[i][0], "composed", 1);
        gc_run(dev, ref, fused[i] + 1, fused[i][2] ? 2 : 1, getenv("VERBOSE") != NULL, stderr, &f);
        unsetenv(fused[i][0]);
        printf("gradient checks, %s=composed: %d cases, %d passed, %d failed\n", fused[i][0], f.cases, f.passed, f.failed);
        CHECK(f.cases > 0 && f.failed == 0, "%d gradient checks failed with %s=composed", f.failed, fused[i][0]);
    }
    wgt_context_free(ref);
    wgt_context_free(dev);
    return test_finish("test_gpu_grad");
}
