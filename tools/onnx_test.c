/* wgt onnx-test: ONNX node test directories (model.onnx + test_data_set_N/) run through the op
 * API on the current adapter (testkit/onnx/onnx_gpu.c) and compared with ONNX's expected outputs. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "commands.h"
#include "onnx/onnx.h"
#include "onnx/onnx_gpu.h"
#include "wgt.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: wgt onnx-test [--tol-scale S] [--filter TEXT] DIR...\n\n"
               "Each DIR is a node test (model.onnx and test_data_set_N/ with input_K.pb, output_K.pb)\n"
               "or a directory of them, such as /usr/share/libonnx-testdata/data/node (Debian's\n"
               "libonnx-testdata). Every test runs through the op API on the current adapter\n"
               "(WGT_BACKEND=cpu: the CPU reference). One line per test: PASS, FAIL with the worst\n"
               "error, or N/A with the op, attribute or type that is not mapped; then a table per op.\n"
               "Tolerances are the reference runner's per op, times S (default 4: WGSL's f32 functions\n"
               "are a few ulp from NumPy's). Exits 1 when a test fails.\n");
}

typedef struct tally {
    char op[64];
    int n[3];
} tally;

typedef struct state {
    const wgt_onnx_backend *be;
    double scale;
    const char *filter;
    int counts[3];
    tally *t;
    int n_t, cap_t;
} state;

static int is_dir(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0 && S_ISDIR(s.st_mode);
}

static void count(state *s, const char *op, int r)
{
    s->counts[r]++;
    for (int i = 0; i < s->n_t; i++)
        if (!strcmp(s->t[i].op, op)) {
            s->t[i].n[r]++;
            return;
        }
    if (s->n_t == s->cap_t) {
        int cap = s->cap_t ? s->cap_t * 2 : 64;
        tally *t = realloc(s->t, (size_t)cap * sizeof *t);
        if (!t) return;
        s->t = t, s->cap_t = cap;
    }
    tally *t = &s->t[s->n_t++];
    memset(t, 0, sizeof *t);
    snprintf(t->op, sizeof t->op, "%s", op);
    t->n[r] = 1;
}

/* Ops whose device results need more than the common scale, and why. */
static const struct {
    const char *op;
    double scale;
    const char *why;
} wider[] = {
    {"Asin", 16, "llvmpipe's asin/acos/atan are off by up to 1.5e-6 absolute near 0 (WGSL allows 4096 ulp)"},
    {"Acos", 16, "as Asin"},
    {"Atan", 16, "as Asin"},
};

static double scale_for(const state *s, const char *dir)
{
    if (!s->be) return s->scale;
    char path[8400];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    wgt_onnx_model *m;
    if (wgt_onnx_model_read(path, &m)) return s->scale;
    double scale = s->scale;
    for (size_t i = 0; i < sizeof wider / sizeof *wider; i++)
        if (m->n_nodes == 1 && !strcmp(m->nodes[0].op_type, wider[i].op)) scale *= wider[i].scale / 4;
    wgt_onnx_model_free(m);
    return scale;
}

static void run_one(state *s, const char *dir)
{
    static const char *label[3] = {"PASS", "FAIL", "N/A "};
    char op[64], why[1024];
    wgt_onnx_result r = wgt_onnx_run_test(dir, s->be, scale_for(s, dir), op, sizeof op, why, sizeof why);
    const char *name = strrchr(dir, '/');
    name = name && name[1] ? name + 1 : dir;
    printf("%s %-56s %s%s%s\n", label[r], name, op, why[0] ? ": " : "", why);
    fflush(stdout);
    count(s, op, r);
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

/* A test directory, or a directory of test directories. */
static int run_path(state *s, const char *path)
{
    char probe[8400];
    snprintf(probe, sizeof probe, "%s/model.onnx", path);
    struct stat st;
    if (stat(probe, &st) == 0) {
        if (!s->filter || strstr(path, s->filter)) run_one(s, path);
        return 0;
    }
    struct dirent **ents;
    int n = scandir(path, &ents, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "wgt onnx-test: %s is neither a node test (no model.onnx) nor a directory of them\n", path);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        char sub[8192];
        snprintf(sub, sizeof sub, "%s/%s", path, ents[i]->d_name);
        snprintf(probe, sizeof probe, "%s/model.onnx", sub);
        if (ents[i]->d_name[0] != '.' && is_dir(sub) && stat(probe, &st) == 0 &&
            (!s->filter || strstr(ents[i]->d_name, s->filter)))
            run_one(s, sub);
        free(ents[i]);
    }
    free(ents);
    return 0;
}

int cmd_onnx_test(int argc, char **argv)
{
    state s = {0};
    s.scale = 4;
    int n_dirs = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--tol-scale") && i + 1 < argc) {
            if (args_parse_double("onnx-test", "--tol-scale", argv[++i], 0, 1, 1e6, &s.scale)) return 2;
        }
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) s.filter = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "wgt onnx-test: unknown option '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        } else n_dirs++;
    }
    if (!n_dirs || s.scale <= 0) {
        usage(stderr);
        return 2;
    }
    wgt_context *ctx;
    if (wgt_context_create(NULL, &ctx)) {
        fprintf(stderr, "wgt onnx-test: %s\n", wgt_errmsg());
        return 1;
    }
    wgt_onnx_backend be;
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    if (!info.backend || info.backend == WGT_BACKEND_CPU) s.be = NULL; /* the reference itself */
    else {
        wgt_onnx_gpu_backend(ctx, &be);
        s.be = &be;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tol-scale") || !strcmp(argv[i], "--filter")) {
            i++;
            continue;
        }
        bad |= run_path(&s, argv[i]);
    }
    printf("\n%-28s %6s %6s %6s\n", "op", "pass", "fail", "n/a");
    for (int i = 0; i < s.n_t; i++)
        printf("%-28s %6d %6d %6d\n", s.t[i].op, s.t[i].n[0], s.t[i].n[1], s.t[i].n[2]);
    printf("\n%d passed, %d failed, %d not applicable on %s (%s)\n", s.counts[0], s.counts[1], s.counts[2], info.name,
           info.backend_name);
    free(s.t);
    wgt_context_free(ctx);
    if (!bad && s.counts[0] + s.counts[1] + s.counts[2] == 0) {
        /* a run that ran nothing proves nothing: say so rather than pass */
        fprintf(stderr, "wgt onnx-test: no node test found (a directory holding model.onnx and test_data_set_N/)%s\n",
                s.filter ? " matching --filter" : "");
        return 1;
    }
    return s.counts[1] || bad ? 1 : 0;
}
