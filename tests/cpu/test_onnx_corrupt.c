/* The ONNX reader on damaged files: every truncation and thousands of random byte changes of real
 * node-test files must give a status with a message (or a valid parse), never a crash. Run it
 * under -fsanitize=address,undefined to catch out-of-bounds reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx.h"

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    *len = (size_t)(n > 0 ? n : 0);
    return b;
}

static int failures;

/* Parse buf as a model or a tensor; a failure must leave a message. */
static void parse(const unsigned char *buf, size_t len, int model)
{
    wgt_status st;
    if (model) {
        wgt_onnx_model *m = NULL;
        st = wgt_onnx_model_parse(buf, len, "mutated model", &m);
        if (!st) {
            /* A parse that succeeds must still be consistent enough to walk. */
            for (int i = 0; i < m->n_nodes; i++)
                for (int a = 0; a < m->nodes[i].n_attrs; a++) (void)wgt_onnx_node_attr(&m->nodes[i], "x");
        }
        wgt_onnx_model_free(m);
    } else {
        wgt_onnx_tensor t;
        st = wgt_onnx_tensor_parse(buf, len, "mutated tensor", &t);
        wgt_onnx_tensor_clear(&t);
    }
    if (st != WGT_OK && !wgt_errmsg()[0]) {
        printf("FAIL: status %d without a message\n", st);
        failures++;
    }
}

int main(void)
{
    static const char *files[] = {
        "test_gemm_all_attributes/model.onnx", "test_layer_normalization_4d_axis0/model.onnx",
        "test_reflect_pad/model.onnx", "test_constant/model.onnx",
        "test_gemm_all_attributes/test_data_set_0/input_0.pb", "test_cast_FLOAT_to_FLOAT16/test_data_set_0/output_0.pb",
    };
    const char *root = getenv("WGT_ONNX_NODE_DIR");
    if (!root) root = "/usr/share/libonnx-testdata/data/node";
    unsigned rng = 1;
    int tried = 0;
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        char path[1024];
        size_t len;
        snprintf(path, sizeof path, "%s/%s", root, files[f]);
        unsigned char *orig = slurp(path, &len);
        if (!orig) {
            printf("FAIL: cannot read %s (install libonnx-testdata)\n", path);
            return 1;
        }
        int model = strstr(files[f], ".onnx") != NULL;
        unsigned char *buf = malloc(len ? len : 1);
        for (size_t cut = 0; cut < len; cut++) { /* every truncation, in an exact-size buffer */
            unsigned char *exact = malloc(cut ? cut : 1);
            memcpy(exact, orig, cut);
            parse(exact, cut, model);
            free(exact);
            tried++;
        }
        for (int k = 0; k < 3000; k++) { /* random byte changes, 1 to 4 at a time */
            memcpy(buf, orig, len);
            int changes = 1 + k % 4;
            for (int j = 0; j < changes && len; j++) {
                rng = rng * 1103515245u + 12345u;
                size_t at = (rng >> 8) % len;
                rng = rng * 1103515245u + 12345u;
                buf[at] = (unsigned char)(k & 1 ? rng >> 16 : buf[at] ^ (1u << ((rng >> 16) & 7)));
            }
            parse(buf, len, model);
            tried++;
        }
        free(buf);
        free(orig);
    }
    printf("%d damaged inputs parsed, %d failures\n", tried, failures);
    return failures ? 1 : 0;
}
