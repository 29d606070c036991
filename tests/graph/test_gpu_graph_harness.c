/* Every op of the harness (testkit/harness) through graph capture and replay on this adapter
 * (`wgt ops --check --graph`): the device side of each case is captured on inputs generated with
 * another seed, replayed twice on the case's own inputs (the second replay must make one submit,
 * no bind group, no allocation), and the captured outputs are compared with the CPU reference.
 * Kept short for `make test` (contiguous and strided in f32 and f16 took 8 minutes per adapter on
 * the loaded 2-core machine): the strided case (transposed views at an odd offset) in f32; the
 * other cases and dtypes go through the same capture path, and `wgt ops --check --graph` runs them.
 * Ops that read on the host mid-graph (counts of data-dependent shapes) end a segment: their
 * replay on the case's inputs finds the read changed (WGT_ERR_STALE), so they are captured again
 * on those inputs and replayed, and compared like the rest (counted as SEGMENTED). Ops the capture
 * refuses are counted, not compared; they must stay a minority. test_gpu_graph_harness_fuse is this program with neighbours instead
 * (hx_options.graph's HX_GRAPH_FUSE: identity chains of elementwise ops before every input and
 * after every output, inside the capture, so the fusion pass meets every op's kernel), on each
 * op's first variant (every fused chain is a kernel to compile: all variants took 3.4 CPU-minutes
 * on lavapipe); it must fuse something for most ops; chains into reductions, softmax and norms
 * only with --hosts (their fused kernels recompile the op's whole kernel per case; test_gpu_graph_fuse
 * covers them in make test). Usage: test_gpu_graph_harness[_fuse] [--hosts] [--all]
 * [OP...]; --all runs every case, dtype and variant (`wgt ops --check --graph` runs both modes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "support/check.h"

#ifndef GRAPH_MODE
#define GRAPH_MODE HX_GRAPH
#define TEST_NAME "test_gpu_graph_harness"
#endif

static int n_runs, n_host_cases, n_cases, n_ref_runs, n_fused_kernels, n_fused_ops, n_segmented, n_stale;

static void report(const hx_result *r, void *user)
{
    (void)user;
    n_runs += r->runs;
    n_ref_runs += r->ref_runs;
    n_cases++;
    n_fused_kernels += r->fused_kernels;
    n_fused_ops += r->fused_ops;
    n_segmented += r->segmented_runs;
    n_stale += r->stale_runs;
    if (r->segmented_runs)
        printf("SEGMENTED %-12s %-13s %d runs with host reads mid-graph, %d captured again for changed data\n",
               r->op->name, hx_case_name(r->c), r->segmented_runs, r->stale_runs);
    if (!r->runs && r->host_runs) {
        n_host_cases++;
        printf("HOST  %-16s %-13s %s\n", r->op->name, hx_case_name(r->c), r->host_why);
    }
    if (r->failures) printf("FAIL  %-16s %-13s %s\n", r->op->name, hx_case_name(r->c), r->message);
    else if (r->known) printf("KNOWN %-16s %-13s %s\n", r->op->name, hx_case_name(r->c), r->known);
    CHECK(r->failures == 0, "%s %s (graph): %s", r->op->name, hx_case_name(r->c), r->message);
}

int main(int argc, char **argv)
{
    wgt_context *dev, *ref;
    MUST(wgt_context_create(NULL, &dev));
    wgt_context_options ro = {0};
    ro.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&ro, &ref));
    hx_options opt = {0};
    opt.graph = GRAPH_MODE;
    opt.cases = 1u << HX_STRIDED;
    opt.dtypes = HX_DT(WGT_F32);
    /* chains fused into reductions, softmax and norms (prologues, epilogues) recompile those ops'
     * whole kernels per case (seconds each on lavapipe): make test leaves them to
     * test_gpu_graph_fuse; --hosts (before the other arguments) puts them back here */
    int hosts = argc > 1 && !strcmp(argv[1], "--hosts");
    if (hosts) argc--, argv++;
    else if (GRAPH_MODE & HX_GRAPH_FUSE) setenv("WGT_GRAPH_FUSE_HOST", "0", 1);
    int all = argc > 1 && !strcmp(argv[1], "--all");
    opt.graph_fuse_first = !all; /* the neighbours' kernels take most of the time: minutes */
    if (all) opt.cases = 0, opt.dtypes = 0, argc--, argv++;
    int n;
    const hx_op *ops = hx_ops(&n);
    for (int i = 0; i < n; i++) {
        int wanted = argc <= 1;
        for (int a = 1; a < argc; a++) wanted |= !strcmp(argv[a], ops[i].name);
        if (wanted) hx_check(dev, ref, &ops[i], &opt, report, NULL);
    }
    wgt_context_free(dev);
    wgt_context_free(ref);
    printf("%d ops through graph capture: %d cases, %d comparisons, %d cases not capturable (host mid-graph), "
           "%d runs without a GPU kernel (not compared), %d runs in several segments (%d captured again for "
           "changed data); with neighbours, %d fused kernels ran %d ops\n", n, n_cases, n_runs, n_host_cases,
           n_ref_runs, n_segmented, n_stale, n_fused_kernels, n_fused_ops);
    /* every variant (2.2 an op on average) in the plain mode, the first in the fuse mode */
    int want_runs = GRAPH_MODE & HX_GRAPH_FUSE && !all ? n * 9 / 10 : 2 * n;
    CHECK(argc > 1 || n_runs > want_runs, "too few comparisons ran (%d for %d ops)", n_runs, n);
    CHECK(argc > 1 || n_host_cases * 10 < n_cases, "%d of %d cases were not capturable", n_host_cases, n_cases);
    /* nonzero, unique, masked_select and their kin read counts on the host: segments, compared */
    CHECK(argc > 1 || (n_segmented >= 3 && n_stale >= 1), "%d runs in segments, %d captured again (want >= 3, >= 1)",
          n_segmented, n_stale);
    CHECK(argc > 1 || !(GRAPH_MODE & HX_GRAPH_FUSE) || 2 * n_fused_kernels > n, "%d fused kernels for %d ops",
          n_fused_kernels, n);
    return test_finish(TEST_NAME);
}
