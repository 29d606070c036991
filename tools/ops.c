/* wgt ops: the op x dtype table (GPU kernel or CPU-reference fallback, probed on the current
 * adapter, not written by hand), and --check: the differential harness (testkit/harness/) on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "grad/gradcheck.h"
#include "harness/harness.h"
#include "wgt.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: wgt ops [--markdown]\n"
               "       wgt ops --describe\n"
               "       wgt ops --check [--big] [--graph] [--dtype D]... [-v] [OP...]\n"
               "       wgt ops --check --grad [-v] [NAME...]\n\n"
               "Without --check: one row per op with the dtypes it accepts and, for each, whether the\n"
               "current adapter runs it with a GPU kernel (gpu), for some of its variants only (part),\n"
               "or on the CPU reference (ref); '-' marks a dtype the op does not take. Found by calling\n"
               "every op with WGT_STRICT=1. --markdown prints the same table in Markdown.\n\n"
               "--describe prints, in Markdown and without a device, what the op table (src/ops/*.def)\n"
               "says of each op: family, inputs and outputs, forward function, CPU reference, backward\n"
               "rule, ONNX op types and what it computes (docs/ops.md holds both tables).\n\n"
               "--check runs every op (or the OPs named, or every op of a family named) through the\n"
               "differential harness: the op on this adapter against the same op on the CPU reference,\n"
               "on contiguous, strided, broadcast, empty, 0-D, odd-sized and NaN/inf inputs, with sentinel\n"
               "bytes past the outputs. One line per op and case: PASS, FAIL (the first mismatch), KNOWN\n"
               "(a difference the table lists, with why) or SKIP (why). --big adds the tensors larger than\n"
               "one storage binding (slow). Exits 1 on any FAIL.\n\n"
               "--check --graph runs the device side of every case through graph capture: the op is\n"
               "captured (wgt_graph_begin .. wgt_graph_end) on inputs generated with another seed, the\n"
               "graph is replayed twice on the case's inputs (the second replay must make one submit per\n"
               "segment, no bind group and no allocation) and the captured outputs are compared with the\n"
               "reference; an op that reads on the host mid-graph (a count of a data-dependent shape) ends\n"
               "a segment, and when the case's inputs change what it reads the replay stops (stale) and\n"
               "the op is captured again on them;\n"
               "then once more with random elementwise ops before each input and after each output inside\n"
               "the capture (chains that give their input back exactly: neg twice, clamp to +-inf, times a\n"
               "0-d one, bitwise_not or logical_not twice), so every op's kernel meets the fusion pass.\n"
               "HOST marks an op the capture refuses (a split readback). Ends with N passed, N failed.\n\n"
               "--check --grad runs the gradient checks of every backward rule, the op table's GRAD rows\n"
               "(or the cases of the op NAME, or whose names contain a NAME): the CPU reference's\n"
               "backward against central finite differences of its forward, this adapter's backward\n"
               "against the reference's, and f16/bf16 inputs against f32 (testkit/grad/gradcheck.h\n"
               "states the tolerances). Failures name the case,\n"
               "the input and the worst element; -v prints every check. Without NAMEs it also runs the\n"
               "autograd audit (every op records a backward node or declares itself non-differentiable;\n"
               "counted as one more check). Ends with N passed, N failed.\n"
               "The adapter comes from the environment: WGT_BACKEND, WGT_ADAPTER, WGT_LIMITS=default, ...\n");
}

static const wgt_dtype order[] = {WGT_F32, WGT_F16, WGT_BF16, WGT_I32, WGT_U32, WGT_I8, WGT_U8, WGT_BOOL, WGT_I64};
#define N_ORDER 9

static int selected(const hx_op *op, int n_names, char **names)
{
    if (!n_names) return 1;
    for (int i = 0; i < n_names; i++)
        if (!strcmp(names[i], op->name) || !strcmp(names[i], op->family)) return 1;
    return 0;
}

static int table(wgt_context *dev, int markdown)
{
    wgt_adapter_info info;
    wgt_context_adapter_info(dev, &info);
    int n;
    const hx_op *ops = hx_ops(&n);
    static const char *mark[] = {"ref", "part", "gpu"};
    if (markdown) {
        printf("| op | family |");
        for (int d = 0; d < N_ORDER; d++) printf(" %s |", wgt_dtype_name(order[d]));
        printf("\n|---|---|");
        for (int d = 0; d < N_ORDER; d++) printf(":-:|");
        printf("\n");
    } else {
        printf("adapter: %s (%s)\n%-16s %-12s", info.name, info.backend_name, "op", "family");
        for (int d = 0; d < N_ORDER; d++) printf(" %-5s", wgt_dtype_name(order[d]));
        printf("\n");
    }
    int errors = 0;
    for (int i = 0; i < n; i++) {
        char cells[N_ORDER][64];
        for (int d = 0; d < N_ORDER; d++) {
            char msg[256];
            int p = hx_probe(dev, &ops[i], order[d], msg, sizeof msg);
            snprintf(cells[d], sizeof cells[d], "%s", p >= 0 ? mark[p] : "-");
            if (p < 0 && msg[0] && (ops[i].dtypes & HX_DT(order[d]))) {
                fprintf(stderr, "wgt ops: %s %s: %s\n", ops[i].name, wgt_dtype_name(order[d]), msg);
                snprintf(cells[d], sizeof cells[d], "error");
                errors++;
            }
        }
        if (markdown) {
            printf("| %s | %s |", ops[i].name, ops[i].family);
            for (int d = 0; d < N_ORDER; d++) printf(" %s |", cells[d]);
        } else {
            printf("%-16s %-12s", ops[i].name, ops[i].family);
            for (int d = 0; d < N_ORDER; d++) printf(" %-5s", cells[d]);
        }
        printf("\n");
    }
    if (markdown)
        printf("\ngpu: a WGSL kernel; part: a kernel for some variants only; "
               "ref: the CPU reference (a one-time warning; an error under WGT_STRICT=1); -: not taken.\n"
               "Probed on %s (%s%s) by `wgt ops --markdown`.\n", info.name, info.backend_name,
               info.has_f16 ? ", shader-f16" : "");
    return errors ? 1 : 0;
}

/* s with Markdown's cell separator escaped. */
static void cell(const char *s)
{
    for (; *s; s++) {
        if (*s == '|') putchar('\\');
        putchar(*s);
    }
}

/* The op table's description columns, one row per op (docs/ops.md's second table). */
static int describe(void)
{
    int n;
    const hx_op *ops = hx_ops(&n);
    printf("| op | family | in | out | forward | CPU reference | backward | ONNX | computes |\n"
           "|---|---|:-:|:-:|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const hx_op *o = &ops[i];
        const char *bw = o->grad ? hx_backward_name(o->grad) : NULL;
        char in[16], out[16];
        if (o->n_in < 0) snprintf(in, sizeof in, "list");
        else snprintf(in, sizeof in, "%d", o->n_in);
        if (o->n_out < 0) snprintf(out, sizeof out, "list");
        else snprintf(out, sizeof out, "%d", o->n_out);
        const char *ref = o->reference_fn ? o->reference
                          : !strcmp(o->reference, "OP_VIEW") ? "none: a view"
                                                              : "composed of ops";
        printf("| %s | %s | %s | %s | `%s` | %s%s%s | %s%s%s | %s | ", o->name, o->family, in, out, o->forward,
               o->reference_fn ? "`" : "", ref, o->reference_fn ? "`" : "", bw ? "`" : "", bw ? bw : "-", bw ? "`" : "",
               o->onnx[0] ? o->onnx : "-");
        cell(o->doc);
        printf(" |\n");
    }
    printf("\nin, out: tensor inputs (optional ones included; 0: made from a shape) and outputs; list: any number.\n"
           "CPU reference 'none: a view': layout arithmetic only, the same code on every context (the harness compares\n"
           "a kernel's copy of the view). backward: the formula its recorded node runs (src/autograd/), '-': no\n"
           "gradient of its own (an integer or bool result, or gradients flow through the ops it is made of),\n"
           "non-differentiable: asking for its gradient is an error naming the op.\n"
           "Generated by `wgt ops --describe` from the op table (src/ops/<family>.def).\n");
    return 0;
}

typedef struct tally {
    int pass, fail, known, skip, ref, host, runs, sentinels, fused_kernels, fused_ops, segmented, stale;
    int verbose;
} tally;

static void report(const hx_result *r, void *user)
{
    tally *t = user;
    t->runs += r->runs;
    t->sentinels += r->sentinels;
    t->fused_kernels += r->fused_kernels;
    t->fused_ops += r->fused_ops;
    t->segmented += r->segmented_runs;
    t->stale += r->stale_runs;
    const char *name = r->op->name, *c = hx_case_name(r->c);
    if (r->failures) {
        t->fail++;
        printf("FAIL  %-16s %-13s %s\n", name, c, r->message);
    } else if (r->known) {
        t->known++;
        printf("KNOWN %-16s %-13s %s (%s)\n", name, c, r->known, r->message);
    } else if (!r->runs && r->host_runs) {
        t->host++;
        printf("HOST  %-16s %-13s %3d runs not capturable: %s\n", name, c, r->host_runs, r->host_why);
    } else if (!r->runs && r->ref_runs) {
        t->ref++;
        char dts[96];
        hx_dtype_names(r->ref_dtypes, dts, sizeof dts);
        printf("REF   %-16s %-13s %3d runs on the CPU reference (no GPU kernel for %s): nothing compared\n", name, c,
               r->ref_runs, dts);
    } else if (!r->runs) {
        t->skip++;
        if (t->verbose) printf("SKIP  %-16s %-13s %s\n", name, c, r->skipped);
    } else {
        t->pass++;
        char dts[96] = "";
        if (r->ref_runs) hx_dtype_names(r->ref_dtypes, dts, sizeof dts);
        printf("PASS  %-16s %-13s %3d runs, worst %.2f of the tolerance%s%s%s%s%s\n", name, c, r->runs, r->worst,
               r->worst > 0 ? " at " : "", r->worst > 0 ? r->worst_at : "", dts[0] ? " (" : "", dts,
               dts[0] ? " on the reference: not compared)" : "");
    }
    fflush(stdout);
}

static int check(wgt_context *dev, int n_names, char **names, uint32_t dtypes, int big, int graph, int verbose)
{
    wgt_context *ref;
    wgt_context_options ro = {0};
    ro.backend = WGT_BACKEND_CPU;
    if (wgt_context_create(&ro, &ref)) {
        fprintf(stderr, "wgt ops: the CPU reference context: %s\n", wgt_errmsg());
        return 1;
    }
    int n;
    const hx_op *ops = hx_ops(&n);
    tally t = {0};
    t.verbose = verbose;
    hx_options opt = {0};
    opt.dtypes = dtypes;
    opt.graph = graph;
    if (big) opt.cases = (1u << HX_CASE_COUNT) - 1;
    int matched = 0;
    for (int i = 0; i < n; i++) {
        if (!selected(&ops[i], n_names, names)) continue;
        matched++;
        hx_check(dev, ref, &ops[i], &opt, report, &t);
    }
    wgt_context_free(ref);
    printf("\n%d ops: %d cases passed, %d failed, %d known issues, %d skipped, %d only on the CPU reference; %d "
           "comparisons (%d with the bytes past the output checked)\n", matched, t.pass, t.fail, t.known, t.skip, t.ref,
           t.runs, t.sentinels);
    if (graph)
        printf("graph capture: %d cases not capturable; %d runs in several segments (host reads mid-graph), %d "
               "captured again for changed data; with neighbours, %d fused kernels ran %d ops\n%d passed, %d failed\n",
               t.host, t.segmented, t.stale, t.fused_kernels, t.fused_ops, t.pass, t.fail);
    return t.fail ? 1 : 0;
}

static int grad_check(wgt_context *dev, int n_names, char **names, int verbose)
{
    wgt_context *ref;
    wgt_context_options ro = {0};
    ro.backend = WGT_BACKEND_CPU;
    if (wgt_context_create(&ro, &ref)) {
        fprintf(stderr, "wgt ops: the CPU reference context: %s\n", wgt_errmsg());
        return 1;
    }
    gc_totals t = {0};
    gc_run(dev, ref, (const char *const *)names, n_names, verbose, stdout, &t);
    gc_audit a = {0};
    if (!n_names) { /* and every op records or declares itself non-differentiable */
        gc_audit_run(ref, NULL, 0, verbose, stdout, &a);
        printf("autograd audit: %d float results of %d ops: %d with a backward rule, %d declared "
               "non-differentiable; %d cut the graph, %d failed\n",
               a.results, a.ops, a.recorded, a.declared, a.cut, a.failed);
    }
    wgt_context_free(ref);
    if (!t.cases) {
        fprintf(stderr, "wgt ops: no gradient case matches (%d cases; a NAME is an op or a substring of a case's name)\n",
                gc_case_count());
        return 2;
    }
    int bad = a.cut + a.failed;
    printf("\n%d gradient cases: %d passed, %d failed\n", t.cases, t.passed + (n_names ? 0 : !bad),
           t.failed + (bad > 0));
    return t.failed || bad ? 1 : 0;
}

int cmd_ops(int argc, char **argv)
{
    int markdown = 0, do_describe = 0, do_check = 0, do_grad = 0, big = 0, graph = 0, verbose = 0, n_names = 0;
    uint32_t dtypes = 0;
    char **names = calloc((size_t)argc + 1, sizeof *names);
    if (!names) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            free(names);
            return 0;
        } else if (!strcmp(a, "--markdown")) markdown = 1;
        else if (!strcmp(a, "--describe")) do_describe = 1;
        else if (!strcmp(a, "--check")) do_check = 1;
        else if (!strcmp(a, "--grad")) do_grad = 1;
        else if (!strcmp(a, "--big")) big = 1;
        else if (!strcmp(a, "--graph")) graph = HX_GRAPH | HX_GRAPH_FUSE;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) verbose = 1;
        else if (!strcmp(a, "--dtype") && i + 1 < argc) {
            const char *d = argv[++i];
            int found = -1;
            for (int k = 0; k < WGT_DTYPE_COUNT; k++)
                if (!strcmp(d, wgt_dtype_name((wgt_dtype)k))) found = k;
            if (found < 0) {
                fprintf(stderr, "wgt ops: unknown dtype '%s' (f32, f16, bf16, i32, u32, i8, u8, bool, i64)\n", d);
                free(names);
                return 2;
            }
            dtypes |= HX_DT(found);
        } else if (a[0] == '-') {
            fprintf(stderr, "wgt ops: unknown option '%s'\n\n", a);
            usage(stderr);
            free(names);
            return 2;
        } else
            names[n_names++] = argv[i];
    }
    int n;
    const hx_op *ops = hx_ops(&n);
    if ((do_grad || graph) && !do_check) {
        fprintf(stderr, "wgt ops: %s goes with --check\n", do_grad ? "--grad" : "--graph");
        free(names);
        return 2;
    }
    for (int k = 0; k < n_names && !do_grad; k++) { /* gradient case names are matched by gc_run */
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = !strcmp(names[k], ops[i].name) || !strcmp(names[k], ops[i].family);
        if (!found) {
            fprintf(stderr, "wgt ops: no op or family named '%s' (`wgt ops` lists them)\n", names[k]);
            free(names);
            return 2;
        }
    }
    if (do_describe) {
        free(names);
        if (do_check || markdown || n_names) {
            fprintf(stderr, "wgt ops: --describe takes no other option\n");
            return 2;
        }
        return describe();
    }
    if (n_names && !do_check) {
        fprintf(stderr, "wgt ops: op names go with --check\n");
        free(names);
        return 2;
    }
    wgt_context *dev;
    if (wgt_context_create(NULL, &dev)) {
        fprintf(stderr, "wgt ops: %s\n", wgt_errmsg());
        free(names);
        return 1;
    }
    int rc = do_grad    ? grad_check(dev, n_names, names, verbose)
             : do_check ? check(dev, n_names, names, dtypes, big, graph, verbose)
                        : table(dev, markdown);
    wgt_context_free(dev);
    free(names);
    return rc;
}
