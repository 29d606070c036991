/* Runs the ONNX backend node tests (Debian package libonnx-testdata) through the CPU reference:
 * every test whose ops the executor maps (testkit/onnx/onnx_ops*.c) -- single nodes, and the
 * "_expanded" graphs node by node -- is run on each of its test_data_set_N directories and
 * compared with ONNX's expected outputs (testkit/onnx/onnx_runner.c).
 * Prints one line per test (PASS, FAIL with the worst error, N/A with why), a per-op table, and
 * totals. Exits non-zero only when an applicable test fails.
 * Usage: test_cpu_onnx [NODE_DIR] [NAME_FILTER]   (default /usr/share/libonnx-testdata/data/node) */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx/onnx.h"

/* Per-op tallies for the summary table. */
typedef struct tally {
    char op[64];
    int pass, fail, na;
} tally;
static tally tallies[256];
static int n_tallies;

static tally *tally_for(const char *op)
{
    for (int i = 0; i < n_tallies; i++)
        if (!strcmp(tallies[i].op, op)) return &tallies[i];
    if (n_tallies == 256) return &tallies[255];
    snprintf(tallies[n_tallies].op, sizeof tallies[0].op, "%s", op);
    return &tallies[n_tallies++];
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : getenv("WGT_ONNX_NODE_DIR");
    const char *filter = argc > 2 ? argv[2] : NULL;
    if (!root) root = "/usr/share/libonnx-testdata/data/node";
    struct dirent **ents;
    int n = scandir(root, &ents, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "test_cpu_onnx: cannot list %s: install Debian's libonnx-testdata "
                        "(scripts/deps.sh does) or pass the node test directory\n", root);
        return 1;
    }
    int counts[3] = {0};
    double scale = getenv("WGT_ONNX_TOL_SCALE") ? atof(getenv("WGT_ONNX_TOL_SCALE")) : 1;
    static const char *label[3] = {"PASS", "FAIL", "N/A "};
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        char dir[8192], why[1024] = "";
        snprintf(dir, sizeof dir, "%s/%s", root, name);
        if (name[0] == '.' || !is_dir(dir) || (filter && !strstr(name, filter))) {
            free(ents[i]);
            continue;
        }
        char op[64];
        wgt_onnx_result r = wgt_onnx_run_test(dir, NULL, scale, op, sizeof op, why, sizeof why);
        counts[r]++;
        tally *t = tally_for(op);
        if (r == WGT_ONNX_PASS) t->pass++;
        else if (r == WGT_ONNX_FAIL) t->fail++;
        else t->na++;
        printf("%s %-60s %s%s%s\n", label[r], name, op, why[0] ? ": " : "", why);
        free(ents[i]);
    }
    free(ents);
    printf("\n%-28s %6s %6s %6s\n", "op", "pass", "fail", "n/a");
    for (int i = 0; i < n_tallies; i++)
        if (tallies[i].pass || tallies[i].fail)
            printf("%-28s %6d %6d %6d\n", tallies[i].op, tallies[i].pass, tallies[i].fail, tallies[i].na);
    int unmapped = 0;
    for (int i = 0; i < n_tallies; i++) unmapped += !tallies[i].pass && !tallies[i].fail;
    printf("(%d more op kinds have only not-applicable tests)\n", unmapped);
    printf("\nONNX node tests: %d passed, %d failed, %d not applicable\n", counts[WGT_ONNX_PASS], counts[WGT_ONNX_FAIL], counts[WGT_ONNX_NA]);
    return counts[WGT_ONNX_FAIL] ? 1 : 0;
}
