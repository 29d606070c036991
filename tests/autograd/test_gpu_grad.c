/* Every backward rule against central finite differences of the CPU reference, the device's
 * backward against the reference's, and f16/bf16 inputs against f32: the cases and tolerances of
 * testkit/grad/gradcheck.h (the same checks `wgt ops --check --grad` runs); sdpa's cases again through
 * its backward's row kernels (WGT_SDPA_GRAD=fused). */
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
    /* sdpa's backward through its row kernels (WGT_SDPA_GRAD=fused; the cases without a mask) */
    if (argc == 1 || (argc == 2 && !strcmp(argv[1], "sdpa"))) {
        static const char *const sdpa[] = {"sdpa"};
        gc_totals f = {0};
        setenv("WGT_SDPA_GRAD", "fused", 1);
        gc_run(dev, ref, sdpa, 1, getenv("VERBOSE") != NULL, stderr, &f);
        unsetenv("WGT_SDPA_GRAD");
        printf("gradient checks, WGT_SDPA_GRAD=fused: %d cases, %d passed, %d failed\n", f.cases, f.passed, f.failed);
        CHECK(f.cases > 0 && f.failed == 0, "%d of sdpa's gradient checks failed with WGT_SDPA_GRAD=fused", f.failed);
    }
    wgt_context_free(ref);
    wgt_context_free(dev);
    return test_finish("test_gpu_grad");
}
