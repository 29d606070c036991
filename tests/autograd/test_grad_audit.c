/* Every public op in the harness's table either records for autograd or is declared
 * non-differentiable (testkit/grad/audit.c): fails on an op whose result silently drops out of
 * the graph, or whose backward fails with anything but a clear WGT_ERR_UNSUPPORTED. */
#include <stdio.h>
#include <stdlib.h>

#include "grad/gradcheck.h"
#include "support/check.h"

int main(int argc, char **argv)
{
    wgt_context *ref;
    wgt_context_options o = {0};
    o.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&o, &ref));
    gc_audit a = {0};
    gc_audit_run(ref, (const char *const *)argv + 1, argc - 1, getenv("VERBOSE") != NULL, stderr, &a);
    printf("autograd audit: %d ops (%d integer-only, %d made from sizes), %d float results: %d with a backward rule, %d declared "
           "non-differentiable; backward ran %d, refused %d; %d cut the graph, %d failed; %d calls did not run\n",
           a.ops, a.integer_only, a.from_sizes, a.results, a.recorded, a.declared, a.backward_ok, a.refused, a.cut, a.failed,
           a.not_run);
    CHECK(a.results > 100, "only %d float results audited", a.results);
    CHECK(a.cut == 0, "%d results cut the graph silently", a.cut);
    CHECK(a.failed == 0, "%d backward failures", a.failed);
    wgt_context_free(ref);
    return test_finish("test_grad_audit");
}
