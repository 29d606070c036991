/* Allocation failure, in the manner of sqlite's test allocator (issue 19): the Nth host allocation
 * fails, for every N from 1 until a run makes fewer than N allocations, through
 *   opening a GGUF file (metadata and a tensor read), a safetensors checkpoint and its config.json,
 *   the tokenizer of a tokenizer.json and of a GGUF file (with an encode and a decode),
 *   loading a small model on the CPU-reference context, and generating two tokens with it.
 * Each run must return a status (a failure naming the problem, or success when the failed
 * allocation was optional), never crash, and leave no allocation behind: the wrappers below count
 * live blocks, and the count after each run must equal the one before.
 *
 * The wrappers replace malloc and its family for the whole process (glibc supports replacing
 * them; cJSON, PCRE2 and libc's own stdio go through them too) and forward to glibc's
 * __libc_* functions. Under AddressSanitizer, which owns malloc itself, the test skips (exit 77).
 * Fixtures: the tiny checkpoints of test_convert --make and a GGUF that wgt convert writes. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "support/check.h"
#include "wgt.h"

#if defined(__SANITIZE_ADDRESS__)
int main(void)
{
    /* tests/run.sh's protocol: exit 77 with the reason, so the summary counts a skip, not a pass */
    printf("SKIP: built with AddressSanitizer, which owns malloc itself: the failing allocator cannot replace it\n");
    return 77;
}
#else

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);
void *__libc_memalign(size_t, size_t);

static atomic_long live;        /* blocks allocated and not freed */
static atomic_long counted;     /* allocations since arm() */
static atomic_long fail_at;     /* the allocation (1-based) that fails; 0: none */
static atomic_int failed_one;   /* the failure happened */

/* Start counting: the allocation want_fail from now fails. The sweep calls it before an operation,
 * or the operation itself once its setup is done (generation on a model loaded unarmed). */
static long want_fail;
static void arm(void)
{
    atomic_store(&counted, 0);
    atomic_store(&failed_one, 0);
    atomic_store(&fail_at, want_fail);
}

static int should_fail(void)
{
    long n = atomic_fetch_add(&counted, 1) + 1;
    if (atomic_load(&fail_at) == n) {
        atomic_store(&failed_one, 1);
        return 1;
    }
    return 0;
}

void *malloc(size_t n)
{
    if (should_fail()) return NULL;
    void *p = __libc_malloc(n);
    if (p) atomic_fetch_add(&live, 1);
    return p;
}

void *calloc(size_t a, size_t b)
{
    if (should_fail()) return NULL;
    void *p = __libc_calloc(a, b);
    if (p) atomic_fetch_add(&live, 1);
    return p;
}

void *realloc(void *old, size_t n)
{
    if (!old) return malloc(n);
    if (!n) {
        free(old);
        return NULL;
    }
    if (should_fail()) return NULL;
    return __libc_realloc(old, n);
}

void free(void *p)
{
    if (!p) return;
    atomic_fetch_sub(&live, 1);
    __libc_free(p);
}

void *aligned_alloc(size_t align, size_t n)
{
    if (should_fail()) return NULL;
    void *p = __libc_memalign(align, n);
    if (p) atomic_fetch_add(&live, 1);
    return p;
}

void *memalign(size_t align, size_t n)
{
    return aligned_alloc(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    void *p = aligned_alloc(align, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}

static char hf[600], gguf[700], tok_json[800];
static int count_only; /* --count: print each operation's allocations, fail none */

static wgt_status op_gguf(void)
{
    wgt_gguf *g;
    wgt_status st = wgt_gguf_open(gguf, &g);
    if (st) return st;
    const char *arch;
    st = wgt_gguf_get_str(g, "general.architecture", &arch);
    if (!st && wgt_gguf_tensor_count(g) > 0) {
        const wgt_gguf_tensor *t = wgt_gguf_tensor_at(g, 0);
        float *row = malloc(256 * sizeof *row);
        if (!row) st = WGT_ERR_OUT_OF_MEMORY;
        else if (t->n_elements >= 256 && t->type == WGT_FTYPE_F32) st = wgt_gguf_tensor_to_f32(t, 0, 256, row);
        free(row);
    }
    wgt_gguf_free(g);
    return st;
}

static wgt_status op_safetensors(void)
{
    wgt_safetensors *s;
    wgt_status st = wgt_safetensors_open(hf, &s);
    if (st) return st;
    if (!wgt_safetensors_find(s, "model.embed_tokens.weight")) st = WGT_ERR_INTERNAL;
    wgt_safetensors_free(s);
    wgt_hf_config cfg;
    return st ? st : wgt_hf_config_load(hf, &cfg);
}

static wgt_status tokenizer_round_trip(const char *path)
{
    wgt_tokenizer *tok;
    wgt_status st = wgt_tokenizer_open(path, &tok);
    if (st) return st;
    int32_t *ids = NULL;
    size_t n = 0, len = 0;
    char *text = NULL;
    const char *s = "Hello, world! 12345 \xc3\xa9t\xc3\xa9 <|im_start|>";
    st = wgt_tokenizer_encode(tok, s, (size_t)-1, WGT_TOKENIZE_ADD_SPECIAL | WGT_TOKENIZE_PARSE_SPECIAL, &ids, &n);
    if (!st) st = wgt_tokenizer_decode(tok, ids, n, 0, &text, &len);
    free(ids);
    free(text);
    wgt_tokenizer_free(tok);
    return st;
}

static wgt_status op_tokenizer_json(void) { return tokenizer_round_trip(tok_json); }
static wgt_status op_tokenizer_gguf(void) { return tokenizer_round_trip(gguf); }

static int stop_after_two(int32_t token, void *user)
{
    (void)token;
    return ++*(int *)user >= 2;
}

static wgt_status load_and_generate(const char *path, int arm_at_generate)
{
    wgt_context_options o = {.backend = WGT_BACKEND_CPU};
    wgt_context *ctx;
    wgt_status st = wgt_context_create(&o, &ctx);
    if (st) return st;
    wgt_model *m;
    st = wgt_model_open(ctx, path, 32, &m);
    if (!st && !arm_at_generate) wgt_model_free(m);
    else if (!st) {
        arm();
        int32_t prompt[3] = {1, 2, 3};
        wgt_sampling sp = {.temperature = 0};
        int seen = 0;
        st = wgt_model_generate(m, prompt, 3, 2, &sp, stop_after_two, &seen, NULL);
        wgt_model_free(m);
    }
    wgt_context_free(ctx);
    return st;
}

static wgt_status op_model_hf(void) { return load_and_generate(hf, 0); }
static wgt_status op_model_gguf(void) { return load_and_generate(gguf, 0); }
static wgt_status op_generate(void) { return load_and_generate(gguf, 1); }

/* Every N through one operation. Returns the number of allocations a clean run makes. */
static long sweep(const char *name, wgt_status (*op)(void), int arms_itself)
{
    /* a clean run first: it must succeed, and caches filled once (error buffers, stdio) stay */
    want_fail = 0;
    wgt_status st = op();
    CHECK(st == WGT_OK, "%s: the run without failures: %s: %s", name, wgt_status_str(st), wgt_errmsg());
    if (st) return 0;
    long base = atomic_load(&live);
    want_fail = 0;
    arm();
    st = op();
    long total = atomic_load(&counted);
    CHECK(st == WGT_OK && atomic_load(&live) == base, "%s: second clean run: %s, %ld blocks leaked", name,
          wgt_status_str(st), atomic_load(&live) - base);
    int bad = 0, failures = 0;
    if (count_only) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < 10; i++) op();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("%s: %ld allocations, %.1f ms a run\n", name, total,
               ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / 10);
        return total;
    }
    for (long n = 1; n <= total + 1 && bad < 5; n++) {
        want_fail = n;
        if (!arms_itself) arm();
        st = op();
        atomic_store(&fail_at, 0);
        long leaked = atomic_load(&live) - base;
        if (st) failures++;
        if (leaked) {
            bad++;
            CHECK(0, "%s: allocation %ld failing: %ld blocks leaked (status %s: %s)", name, n, leaked,
                  wgt_status_str(st), wgt_errmsg());
            base = atomic_load(&live); /* report each leak once */
        }
        if (!atomic_load(&failed_one)) break; /* fewer than n allocations: every N done */
        if (st && st != WGT_ERR_OUT_OF_MEMORY && getenv("WGT_ALLOC_FAIL_VERBOSE"))
            printf("%s: allocation %ld failing gave %s: %s\n", name, n, wgt_status_str(st), wgt_errmsg());
        if (st && !*wgt_errmsg()) {
            bad++;
            CHECK(0, "%s: allocation %ld failing: status %s without a message", name, n, wgt_status_str(st));
        }
    }
    printf("%s: %ld allocations, each failed once: %d runs returned an error, none crashed\n", name, total, failures);
    return total;
}

int main(int argc, char **argv)
{
    count_only = argc > 1 && !strcmp(argv[1], "--count");
    const char *build = getenv("WGT_BUILD"), *bin = getenv("WGT_BIN");
    char tmp[] = "/tmp/wgt-alloc-fail.XXXXXX", cmd[4096];
    if (!mkdtemp(tmp)) return 1;
    snprintf(cmd, sizeof cmd, "'%s/tests/test_convert' --make '%s' >/dev/null 2>&1", build ? build : "build", tmp);
    MUST(system(cmd) == 0 ? WGT_OK : WGT_ERR_IO);
    snprintf(hf, sizeof hf, "%s/qwen3", tmp);
    snprintf(gguf, sizeof gguf, "%s/qwen3.gguf", tmp);
    snprintf(tok_json, sizeof tok_json, "%s/tokenizer.json", hf);
    snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --type q8_0 >/dev/null 2>&1", bin ? bin : "build/wgt", hf, gguf);
    MUST(system(cmd) == 0 ? WGT_OK : WGT_ERR_IO);

    sweep("gguf open", op_gguf, 0);
    sweep("safetensors + config.json", op_safetensors, 0);
    sweep("tokenizer.json", op_tokenizer_json, 0);
    sweep("GGUF tokenizer", op_tokenizer_gguf, 0);
    sweep("model load from a HF directory (CPU reference)", op_model_hf, 0);
    sweep("model load from GGUF (CPU reference)", op_model_gguf, 0);
    sweep("generating two tokens (CPU reference)", op_generate, 1);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) {}
    return test_finish("test_alloc_fail");
}
#endif
