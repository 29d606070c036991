/* Every backward rule against central finite differences of the CPU reference, the device's
 * backward against the reference's, and f16/bf16 inputs against f32: the cases and tolerances of
 * testkit/grad/gradcheck.h (the same checks `wgt ops --check --grad` runs). */
#include <stdio.h>

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
    wgt_context_free(ref);
    wgt_context_free(dev);
    return test_finish("test_gpu_grad");
}
