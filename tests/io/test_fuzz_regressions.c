/* Replays, under the normal build, every input the fuzzers found troublesome (fuzz/regressions/
 * <target>/, one file per finding, named for what it was) and the seed corpus (fuzz/corpus/
 * <target>/) of the GGUF, safetensors, config and tokenizer-file targets through their own entry
 * points (tests/support/fuzz_replay.h; test_fuzz_replay does the same for the targets of issue 19),
 * and checks the findings directly:
 *  - tokenizer/empty-spm-model.bin, empty-gpt2-files.bin: an empty tokenizer.model or merges.txt
 *    was pointer arithmetic on NULL (UBSan); now WGT_ERR_FORMAT;
 *  - tokenizer/sparse-ids-timeout.bin, slow-unit.bin: a 20-byte vocab.json with id 6666662 made
 *    6.7M placeholder tokens (a 10 s timeout); ids may now run at most 1024 past the count. */
#include <sys/stat.h>

#include "io/io_test.h"
#include "support/fuzz_replay.h"

#define LLVMFuzzerTestOneInput fuzz_gguf_one
#include "../../fuzz/fuzz_gguf.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_safetensors_one
#include "../../fuzz/fuzz_safetensors.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_config_one
#include "../../fuzz/fuzz_config.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_tokenizer_one
#define put fuzz_tokenizer_put
#define drop fuzz_tokenizer_drop
#define dir fuzz_tokenizer_dir
#include "../../fuzz/fuzz_tokenizer.c"
#undef put
#undef drop
#undef dir

int main(void)
{
    const fuzz_target targets[] = {{"gguf", fuzz_gguf_one},
                                   {"safetensors", fuzz_safetensors_one},
                                   {"config", fuzz_config_one},
                                   {"tokenizer", fuzz_tokenizer_one}};
    int total = 0;
    CHECK(fuzz_replay_all(targets, 4, &total) == 0, "every target's seed corpus is found (see above)");

    /* the findings, checked for their status */
    char tdir[600], p[700];
    snprintf(tdir, sizeof tdir, "%s", tmp_path(".tok"));
    mkdir(tdir, 0755);
    snprintf(p, sizeof p, "%s/tokenizer.model", tdir);
    write_file(p, "", 0);
    wgt_gguf_writer *w;
    snprintf(p, sizeof p, "%s/out.gguf", tdir);
    CHECK_OK(wgt_gguf_writer_open(p, &w));
    CHECK(wgt_gguf_writer_add_tokenizer(w, tdir, "llama", NULL, NULL) == WGT_ERR_FORMAT && strstr(wgt_errmsg(), "empty file"),
          "empty tokenizer.model: %s", wgt_errmsg());
    snprintf(p, sizeof p, "%s/tokenizer.model", tdir);
    remove(p);
    snprintf(p, sizeof p, "%s/vocab.json", tdir);
    write_file(p, "{\"a\": 06666662}", 15);
    snprintf(p, sizeof p, "%s/merges.txt", tdir);
    write_file(p, "a b\n", 4);
    CHECK(wgt_gguf_writer_add_tokenizer(w, tdir, "gpt2", NULL, NULL) == WGT_ERR_FORMAT && strstr(wgt_errmsg(), "run up to 6666662"),
          "sparse ids: %s", wgt_errmsg());
    wgt_gguf_writer_free(w);
    remove(p);
    snprintf(p, sizeof p, "%s/vocab.json", tdir);
    remove(p);
    rmdir(tdir);
    printf("%d inputs replayed\n", total);
    return finish("test_fuzz_regressions");
}
