/* Replays, under the normal build, the seed corpora (fuzz/corpus/<target>/) and the findings
 * (fuzz/regressions/<target>/, one file per finding, when there are any) of the fuzz targets
 * added for issue 19 through their own entry points: the runtime tokenizer, the chat-template
 * engine, config.json through model loading, and the ONNX reader. A crash fails the test; the
 * sanitized runs are scripts/fuzz.sh's (make fuzz). The findings are also checked directly:
 *  - chat_template/int-literal-overflow.bin: an integer literal past 2^63 was signed overflow
 *    (UBSan) in the Jinja lexer; now WGT_ERR_UNSUPPORTED naming the limit;
 *  - onnx/dims-1tb-before-data.bin: a TensorProto whose dims claim 2^40 bytes made the reader
 *    allocate them before looking at its data; now WGT_ERR_FORMAT, nothing allocated. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLVMFuzzerTestOneInput fuzz_tokenizer_runtime_one
#define dir rtok_dir
#define put rtok_put
#define path rtok_path
#define init rtok_init
#include "../../fuzz/fuzz_tokenizer_runtime.c"
#undef LLVMFuzzerTestOneInput
#undef dir
#undef put
#undef path
#undef init
#define LLVMFuzzerTestOneInput fuzz_chat_template_one
#include "../../fuzz/fuzz_chat_template.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_onnx_one
#include "../../fuzz/fuzz_onnx.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_model_config_one
#define dir model_dir
#define ctx model_ctx
#include "../../fuzz/fuzz_model_config.c"
#undef LLVMFuzzerTestOneInput
#undef dir
#undef ctx

static int replay(const char *root, const char *kind, const char *target, int (*one)(const uint8_t *, size_t))
{
    char d_path[2048];
    snprintf(d_path, sizeof d_path, "%s/fuzz/%s/%s", root, kind, target);
    DIR *d = opendir(d_path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char f[4096];
        snprintf(f, sizeof f, "%s/%s", d_path, e->d_name);
        FILE *fp = fopen(f, "rb");
        if (!fp) continue;
        uint8_t *data = malloc(1 << 20);
        size_t len = data ? fread(data, 1, 1 << 20, fp) : 0;
        fclose(fp);
        if (data) one(data, len);
        free(data);
        n++;
    }
    if (d) closedir(d);
    return n;
}

int main(void)
{
    const char *r = getenv("WGT_ROOT");
    const char *root = r ? r : ".";
    struct { const char *name; int (*one)(const uint8_t *, size_t); } targets[] = {
        {"tokenizer_runtime", fuzz_tokenizer_runtime_one}, {"chat_template", fuzz_chat_template_one},
        {"onnx", fuzz_onnx_one}, {"model_config", fuzz_model_config_one}};
    int failures = 0;
    for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
        int seeds = replay(root, "corpus", targets[t].name, targets[t].one);
        int found = replay(root, "regressions", targets[t].name, targets[t].one);
        printf("%s: %d seeds, %d regression inputs replayed\n", targets[t].name, seeds, found);
        if (!seeds) {
            fprintf(stderr, "fuzz/corpus/%s is empty or missing (WGT_ROOT=%s)\n", targets[t].name, root);
            failures++;
        }
    }
    char *out = NULL;
    wgt_chat_message m = {"user", "hi"};
    wgt_status st = tok_render_template("{{ 99999999999999999999 }}", &m, 1, 0, "", "", NULL, 0, &out);
    free(out);
    if (st != WGT_ERR_UNSUPPORTED || !strstr(wgt_errmsg(), "integer literal")) {
        fprintf(stderr, "a 20-digit integer literal: %s: %s (want WGT_ERR_UNSUPPORTED)\n", wgt_status_str(st), wgt_errmsg());
        failures++;
    }
    char f[4096];
    snprintf(f, sizeof f, "%s/fuzz/regressions/onnx/dims-1tb-before-data.bin", root);
    FILE *fp = fopen(f, "rb");
    uint8_t buf[4096];
    size_t len = fp ? fread(buf, 1, sizeof buf, fp) : 0;
    if (fp) fclose(fp);
    wgt_onnx_tensor t;
    st = len > 1 ? wgt_onnx_tensor_parse(buf + 1, len - 1, "dims-1tb-before-data.bin", &t) : WGT_ERR_NOT_FOUND;
    if (st == WGT_OK) wgt_onnx_tensor_clear(&t);
    if (st != WGT_ERR_FORMAT) {
        fprintf(stderr, "%s: %s: %s (want WGT_ERR_FORMAT before any allocation)\n", f, wgt_status_str(st), wgt_errmsg());
        failures++;
    }
    printf("test_fuzz_replay: %s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
