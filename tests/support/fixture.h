/* Reading the tests' fixture files: a whole file as text, a JSON fixture (the transformers
 * fixtures tests/fixtures/hf/<arch>/fixture.json: cases with prompt_ids, greedy_ids,
 * first_step_logits), and a JSON array of token ids. Used by the model tests (test_gpu_models,
 * test_gpu_quant_models, test_gpu_llama_cpp_gguf, test_gpu_train_fixtures, test_gpu_families) and test_optable. */
#ifndef WGT_TESTS_FIXTURE_H
#define WGT_TESTS_FIXTURE_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The whole file, NUL-terminated (free it), or NULL when it cannot be read. */
static inline char *test_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = NULL;
    long n = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    if (n >= 0 && !fseek(f, 0, SEEK_SET) && (s = malloc((size_t)n + 1))) {
        if (fread(s, 1, (size_t)n, f) == (size_t)n) s[n] = 0;
        else free(s), s = NULL;
    }
    fclose(f);
    return s;
}

/* The file parsed as JSON (cJSON_Delete it), or NULL when it is missing or not JSON. */
static inline cJSON *test_fixture_json(const char *path)
{
    char *text = test_slurp(path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

/* The first cap ids of a JSON array of numbers into out; returns how many were stored. */
static inline int test_ids_of(const cJSON *arr, int32_t *out, int cap)
{
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) if (n < cap) out[n++] = (int32_t)it->valuedouble;
    return n;
}

#endif
