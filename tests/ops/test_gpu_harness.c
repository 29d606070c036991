/* Every op in the harness table (testkit/harness/table.c) on this adapter against the CPU reference:
 * all cases but the larger-than-a-binding one for every op and dtype, then that case for the ops
 * that carry it, then f32 and f16 again on a device with WebGPU's default limits
 * (WGT_LIMITS=default: 256 invocations per workgroup, 16 KiB of workgroup memory, 8 storage
 * buffers per stage). A case that runs nothing counts as a failure unless the table says why.
 * Usage: test_gpu_harness [OP...] */
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "support/check.h"

static int n_runs, n_sentinels, n_ref_runs;

static void report(const hx_result *r, void *user)
{
    const char *pass = user;
    n_runs += r->runs;
    n_sentinels += r->sentinels;
    n_ref_runs += r->ref_runs;
    if (r->failures)
        printf("FAIL  %-16s %-13s %s: %s\n", r->op->name, hx_case_name(r->c), pass, r->message);
    else if (r->known)
        printf("KNOWN %-16s %-13s %s: %s\n", r->op->name, hx_case_name(r->c), pass, r->known);
    CHECK(r->failures == 0, "%s %s (%s): %s", r->op->name, hx_case_name(r->c), pass, r->message);
}

static void run_all(wgt_context *dev, wgt_context *ref, const hx_options *opt, const char *pass, int argc, char **argv)
{
    int n;
    const hx_op *ops = hx_ops(&n);
    for (int i = 0; i < n; i++) {
        int wanted = argc <= 1;
        for (int a = 1; a < argc; a++) wanted |= !strcmp(argv[a], ops[i].name);
        if (wanted) hx_check(dev, ref, &ops[i], opt, report, (void *)pass);
    }
}

int main(int argc, char **argv)
{
    wgt_context *dev, *ref, *dflt;
    MUST(wgt_context_create(NULL, &dev));
    wgt_context_options ro = {0};
    ro.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&ro, &ref));

    hx_options opt = {0};
    run_all(dev, ref, &opt, "all cases", argc, argv);
    int before = n_runs;
    opt.cases = 1u << HX_BIG;
    run_all(dev, ref, &opt, "over-binding", argc, argv);
    CHECK(argc > 1 || n_runs > before, "the over-binding case ran nothing");
    wgt_context_free(dev);

    wgt_context_options dopt = {0};
    dopt.default_limits = 1;
    MUST(wgt_context_create(&dopt, &dflt));
    opt.cases = (1u << HX_CONTIGUOUS) | (1u << HX_STRIDED) | (1u << HX_BROADCAST) | (1u << HX_ODD7);
    opt.dtypes = HX_DT(WGT_F32) | HX_DT(WGT_F16);
    run_all(dflt, ref, &opt, "default limits", argc, argv);
    wgt_context_free(dflt);
    wgt_context_free(ref);

    int n;
    hx_ops(&n);
    printf("%d ops, %d comparisons, %d with the bytes past the output checked; %d device runs had no GPU kernel "
           "(WGT_STRICT refused them) and were not compared\n", n, n_runs, n_sentinels, n_ref_runs);
    CHECK(argc > 1 || n_sentinels > n, "the sentinels were checked only %d times", n_sentinels);
    CHECK(n_runs > 20 * n || argc > 1, "too few comparisons ran (%d for %d ops)", n_runs, n);
    return test_finish("test_gpu_harness");
}
