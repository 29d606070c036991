/* Replays, under the normal build, the seed corpora (fuzz/corpus/<target>/) and the findings
 * (fuzz/regressions/<target>/, one file per finding, when there are any) of the fuzz targets
 * added for issue 19 through their own entry points (tests/support/fuzz_replay.h): the runtime
 * tokenizer, the chat-template engine, config.json through model loading, and the ONNX reader
 * (test_fuzz_regressions does the same for the file-format targets). A crash fails the test; the
 * sanitized runs are scripts/fuzz.sh's (make fuzz). The findings are also checked directly:
 *  - chat_template/int-literal-overflow.bin: an integer literal past 2^63 was signed overflow
 *    (UBSan) in the Jinja lexer; now WGT_ERR_UNSUPPORTED naming the limit;
 *  - onnx/dims-1tb-before-data.bin: a TensorProto whose dims claim 2^40 bytes made the reader
 *    allocate them before looking at its data; now WGT_ERR_FORMAT, nothing allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/fuzz_replay.h"

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

int main(void)
{
    const char *r = getenv("WGT_ROOT");
    const char *root = r ? r : ".";
    const fuzz_target targets[] = {{"tokenizer_runtime", fuzz_tokenizer_runtime_one},
                                   {"chat_template", fuzz_chat_template_one},
                                   {"onnx", fuzz_onnx_one},
                                   {"model_config", fuzz_model_config_one}};
    int failures = fuzz_replay_all(targets, 4, NULL);
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
