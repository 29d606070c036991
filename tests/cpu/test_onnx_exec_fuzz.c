/* The ONNX executor on hostile nodes: every mapped single-node test is run with its integer
 * attributes replaced by odd values (negative, zero, huge) and with its inputs swapped around.
 * Each run must end in a status (OK or an error with a message), never a crash or an overrun;
 * run it under -fsanitize=address,undefined to see overruns. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"

#define MAX_IN 16

static unsigned rng = 7;
static unsigned next(void) { return rng = rng * 1103515245u + 12345u, rng >> 8; }

int main(void)
{
    const char *root = getenv("WGT_ONNX_NODE_DIR");
    if (!root) root = "/usr/share/libonnx-testdata/data/node";
    DIR *dir = opendir(root);
    if (!dir) {
        printf("FAIL: cannot list %s (install libonnx-testdata)\n", root);
        return 1;
    }
    static const int64_t odd[] = {-3, -1, 0, 1, 2, 5, (int64_t)1 << 40, -((int64_t)1 << 40)};
    int models = 0, runs = 0, silent = 0;
    int trials = getenv("WGT_FUZZ_TRIALS") ? atoi(getenv("WGT_FUZZ_TRIALS")) : 24; /* more for a deep run */
    if (getenv("WGT_FUZZ_SEED")) rng = (unsigned)atoi(getenv("WGT_FUZZ_SEED"));
    struct dirent *e;
    while ((e = readdir(dir))) {
        char path[4096];
        wgt_onnx_model *m = NULL;
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s/model.onnx", root, e->d_name);
        if (wgt_onnx_model_read(path, &m)) continue;
        if (m->n_nodes != 1 || !wgt_onnx_op_known(m->nodes[0].op_type) || m->nodes[0].n_inputs > MAX_IN) {
            wgt_onnx_model_free(m);
            continue;
        }
        wgt_onnx_node *node = &m->nodes[0];
        wgt_onnx_tensor given[MAX_IN] = {{0}};
        int n_given = 0;
        for (int k = 0; k < node->n_inputs; k++) {
            snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%d.pb", root, e->d_name, k);
            if (wgt_onnx_tensor_read(path, &given[k])) break;
            n_given = k + 1;
        }
        models++;
        for (int trial = 0; trial < trials; trial++) {
            /* Save and mutate the integer attributes. */
            int64_t saved_i[32], *saved_ints[32] = {0};
            int na = node->n_attrs < 32 ? node->n_attrs : 32;
            for (int a = 0; a < na; a++) {
                wgt_onnx_attr *at = &node->attrs[a];
                saved_i[a] = at->i;
                if (next() % 2) at->i = odd[next() % 8];
                if (at->n_ints) {
                    saved_ints[a] = malloc(sizeof(int64_t) * (size_t)at->n_ints);
                    memcpy(saved_ints[a], at->ints, sizeof(int64_t) * (size_t)at->n_ints);
                    for (int j = 0; j < at->n_ints; j++)
                        if (next() % 3 == 0) at->ints[j] = odd[next() % 8];
                }
            }
            /* Swap inputs around every other trial. */
            const wgt_onnx_tensor *args[MAX_IN] = {0};
            for (int k = 0; k < n_given; k++) args[k] = &given[trial % 2 && n_given > 1 ? (int)(next() % (unsigned)n_given) : k];
            wgt_onnx_tensor out[8];
            int n_out = node->n_outputs < 8 ? node->n_outputs : 8;
            wgt_status st = wgt_onnx_run_node(NULL, node, m->opset, args, n_given, out, n_out);
            runs++;
            if (st != WGT_OK && !wgt_errmsg()[0]) silent++, printf("FAIL %s: status %d without a message\n", e->d_name, st);
            if (st == WGT_OK)
                for (int k = 0; k < n_out; k++) wgt_onnx_tensor_clear(&out[k]);
            for (int a = 0; a < na; a++) {
                node->attrs[a].i = saved_i[a];
                if (saved_ints[a]) memcpy(node->attrs[a].ints, saved_ints[a], sizeof(int64_t) * (size_t)node->attrs[a].n_ints);
                free(saved_ints[a]);
            }
        }
        for (int k = 0; k < MAX_IN; k++) wgt_onnx_tensor_clear(&given[k]);
        wgt_onnx_model_free(m);
    }
    closedir(dir);
    printf("%d models, %d hostile runs, %d errors without a message\n", models, runs, silent);
    return silent || !models ? 1 : 0;
}
