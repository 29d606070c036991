/* Continuous batching (wgt_batch) against its references on the default model: a step over
 * several sequences at once (prompts of different lengths prefilled together, then decode steps)
 * must give each sequence the logits that the model's own forward pass gives it alone (the batch's
 * sequential mode: one wgt_model_forward per sequence, its slot's cache swapped in), and the
 * tokens wgt_model_generate draws for the same prompt, greedy and sampled. A slot truncated to a
 * prefix must continue as if the prefix had just been fed. Bad steps are statuses. Then batched
 * against alone on the Hugging Face fixtures of every architecture, each model opened without a KV
 * cache of its own (the slots hold theirs). */
#include <math.h>
#include <string.h>

#include "models/model.h"
#include "support/check.h"
#include "support/collect.h"

enum { N_SEQ = 3, STEPS = 4 };

static const char *const PROMPTS[N_SEQ] = {"In the beginning God created", "And the", "Blessed are the poor in"};

typedef struct run {
    int32_t tok[N_SEQ][STEPS];
    float *logits[N_SEQ][STEPS];
} run;

static int collect(wgt_model *m, int32_t *const ids[N_SEQ], const size_t n[N_SEQ], const wgt_sampling sp[N_SEQ],
                   int sequential, run *out)
{
    int64_t V = wgt_model_vocab(m);
    wgt_batch *b;
    MUST(wgt_batch_create(m, N_SEQ, &b));
    mdl_batch_set_sequential(b, sequential);
    wgt_batch_item it[N_SEQ];
    int32_t last[N_SEQ];
    for (int s = 0; s < STEPS; s++) {
        for (int i = 0; i < N_SEQ; i++) {
            out->logits[i][s] = malloc((size_t)V * sizeof(float));
            /* the slots in another order than the items, to catch a mix-up */
            it[i] = (wgt_batch_item){N_SEQ - 1 - i, s ? &last[i] : ids[i], s ? 1 : (int64_t)n[i], &sp[i],
                                     (uint32_t)s, out->logits[i][s], -1};
        }
        MUST(wgt_batch_step(b, it, N_SEQ));
        for (int i = 0; i < N_SEQ; i++) out->tok[i][s] = last[i] = it[i].token;
    }
    for (int i = 0; i < N_SEQ; i++)
        CHECK(wgt_batch_slot_length(b, N_SEQ - 1 - i) == (int64_t)n[i] + STEPS - 1, "slot %d holds %lld ids", i,
              (long long)wgt_batch_slot_length(b, N_SEQ - 1 - i));
    wgt_batch_free(b);
    return 0;
}

/* Dispatches of one greedy decode step of nseq sequences (each prefilled with 3 ids first). */
static uint64_t decode_dispatches(wgt_context *ctx, wgt_model *m, int nseq, int per_sequence)
{
    int64_t V = wgt_model_vocab(m);
    wgt_batch *b;
    MUST(wgt_batch_create(m, nseq, &b));
    mdl_batch_set_per_sequence(b, per_sequence);
    wgt_sampling sp = {0};
    sp.repeat_penalty = 1;
    wgt_batch_item *it = calloc((size_t)nseq, sizeof *it);
    int32_t(*ids)[3] = calloc((size_t)nseq, sizeof *ids);
    for (int i = 0; i < nseq; i++) {
        for (int j = 0; j < 3; j++) ids[i][j] = (int32_t)((i * 37 + j * 11 + 3) % V);
        it[i] = (wgt_batch_item){i, ids[i], 3, &sp, 0, NULL, -1};
    }
    MUST(wgt_batch_step(b, it, nseq));
    for (int i = 0; i < nseq; i++) ids[i][0] = it[i].token, it[i] = (wgt_batch_item){i, ids[i], 1, &sp, 1, NULL, -1};
    wgt_memory_stats s0, s1;
    wgt_context_memory_stats(ctx, &s0);
    MUST(wgt_batch_step(b, it, nseq));
    wgt_context_memory_stats(ctx, &s1);
    free(it), free(ids);
    wgt_batch_free(b);
    return s1.dispatches - s0.dispatches;
}

/* Slots whose caches pass one storage binding go in groups, one attention dispatch a layer and
 * group: with a binding limit of 3.5 slots' caches, 7 slots are 3 groups (3, 3, 1). Steps over
 * slots of every group in a scrambled order, one of them prefilling while the others decode, one
 * leaving a group out, give the logits and tokens of attention per sequence (one cache tensor). */
static void cache_groups(wgt_context *ctx, wgt_model *m)
{
    enum { NS = 7, NSTEP = 4 };
    const wgt_model_config *c = &m->cfg;
    int64_t V = wgt_model_vocab(m);
    uint64_t slot_bytes = (uint64_t)(c->n_kv_heads * wgt_model_context(m) * c->head_dim) * 4u;
    mdl_batch_set_binding_limit(3 * slot_bytes + slot_bytes / 2);
    wgt_batch *g, *ref;
    MUST(wgt_batch_create(m, NS, &g));
    mdl_batch_set_binding_limit(0);
    MUST(wgt_batch_create(m, NS, &ref));
    mdl_batch_set_per_sequence(ref, 1);
    CHECK(mdl_batch_cache_groups(g) == 3 && mdl_batch_cache_groups(ref) == 1, "cache groups: %d with the limit, %d "
          "without (want 3 and 1)", mdl_batch_cache_groups(g), mdl_batch_cache_groups(ref));
    static const int order[NS] = {6, 2, 4, 0, 5, 1, 3};
    int32_t prompt[NS][8], last[2][NS];
    wgt_sampling sp = {0};
    sp.repeat_penalty = 1;
    float *lg = malloc((size_t)(2 * NS * V) * sizeof *lg);
    uint64_t dg = 0, dr = 0;
    for (int s = 0; s < NSTEP; s++) {
        for (int pass = 0; pass < 2; pass++) {
            wgt_batch *b = pass ? ref : g;
            wgt_batch_item it[NS];
            int n = 0;
            for (int k = 0; k < NS; k++) {
                int slot = order[k];
                if (s == 2 && slot == 6) continue; /* group 2 has no row in this step */
                int prefill = s == 0 || (s == 1 && slot == 3);
                int64_t len = 1 + (slot * 3 + s) % 5;
                for (int64_t j = 0; j < len; j++) prompt[slot][j] = (int32_t)((slot * 131 + j * 17 + s * 7 + 5) % V);
                it[n] = (wgt_batch_item){slot, prefill ? prompt[slot] : &last[pass][slot], prefill ? len : 1, &sp,
                                         (uint32_t)s, lg + (size_t)(pass * NS + slot) * V, -1};
                n++;
            }
            wgt_memory_stats s0, s1;
            wgt_context_memory_stats(ctx, &s0);
            MUST(wgt_batch_step(b, it, n));
            wgt_context_memory_stats(ctx, &s1);
            if (s == NSTEP - 1) *(pass ? &dr : &dg) = s1.dispatches - s0.dispatches;
            for (int k = 0; k < n; k++) last[pass][it[k].slot] = it[k].token;
        }
        for (int slot = 0; slot < NS; slot++) {
            if (s == 2 && slot == 6) continue;
            double worst = 0, scale = 0;
            const float *a = lg + (size_t)slot * V, *r = lg + (size_t)(NS + slot) * V;
            for (int64_t v = 0; v < V; v++) worst = fmax(worst, fabs((double)a[v] - r[v])), scale = fmax(scale, fabs((double)r[v]));
            CHECK(worst <= 1e-3 * (1 + scale), "cache groups: slot %d step %d: logits differ by %g from attention per "
                  "sequence (scale %g)", slot, s, worst, scale);
            CHECK(last[0][slot] == last[1][slot], "cache groups: slot %d step %d: token %d, per sequence %d", slot, s,
                  last[0][slot], last[1][slot]);
        }
    }
    printf("cache groups: 3 groups of 7 slots, a decode step %llu dispatches (attention per sequence: %llu)\n",
           (unsigned long long)dg, (unsigned long long)dr);
    CHECK(dg < dr, "a decode step in 3 cache groups took %llu dispatches, per sequence %llu", (unsigned long long)dg,
          (unsigned long long)dr);
    free(lg);
    wgt_batch_free(g);
    wgt_batch_free(ref);
}

/* Batched against alone, greedy, on a fixture of each architecture (tests/fixtures/hf: tiny random
 * weights; the paths of batch.c's layer loop: fused q/k/v, q/k norms, separate projections,
 * learned positions), prompts of made-up ids. */
static void fixture(wgt_context *ctx, const char *root, const char *arch)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/hf/%s", root, arch);
    /* opened without a KV cache of its own (as wgt serve opens it): the batch's slots hold theirs,
     * the model's would be 2 x layers x kv heads x 32 x head size f32 more on the device */
    wgt_model *m;
    wgt_memory_stats m0, m1, m2;
    wgt_context_memory_stats(ctx, &m0);
    MUST(wgt_model_open(ctx, path, 32, &m));
    wgt_context_memory_stats(ctx, &m1);
    const wgt_model_config *c = &m->cfg;
    uint64_t cache = 2ull * (uint64_t)c->n_layers * (uint64_t)c->n_kv_heads * 32 * (uint64_t)c->head_dim * 4;
    wgt_model_free(m);
    wgt_model_options o = {0};
    o.max_ctx = 32, o.no_kv_cache = 1;
    wgt_context_memory_stats(ctx, &m0);
    MUST(wgt_model_open_ex(ctx, path, &o, &m));
    wgt_context_memory_stats(ctx, &m2);
    uint64_t with = m1.in_use_bytes - m0.in_use_bytes, without = m2.in_use_bytes - m0.in_use_bytes;
    CHECK(with >= without + cache, "%s: %llu device bytes with the KV cache, %llu without: want %llu less", arch,
          (unsigned long long)with, (unsigned long long)without, (unsigned long long)cache);
    CHECK(wgt_model_context(m) == 32, "%s: the context without a cache: %lld", arch, (long long)wgt_model_context(m));
    int64_t V = wgt_model_vocab(m);
    {
        int32_t id0 = 1;
        wgt_tensor *lg = NULL;
        CHECK(wgt_model_forward(m, &id0, 1, 0, &lg) == WGT_ERR_INVALID_ARGUMENT && !lg,
              "%s: wgt_model_forward without a KV cache was not refused", arch);
    }
    static int32_t buf[N_SEQ][8];
    int32_t *ids[N_SEQ];
    size_t n[N_SEQ] = {6, 1, 4};
    for (int i = 0; i < N_SEQ; i++) {
        for (size_t j = 0; j < n[i]; j++) buf[i][j] = (int32_t)((i * 131 + j * 17 + 5) % V);
        ids[i] = buf[i];
    }
    wgt_sampling sp[N_SEQ] = {{0}, {0}, {0}};
    for (int i = 0; i < N_SEQ; i++) sp[i].repeat_penalty = 1;
    run batched = {0}, alone = {0};
    collect(m, ids, n, sp, 0, &batched);
    collect(m, ids, n, sp, 1, &alone);
    for (int i = 0; i < N_SEQ; i++)
        for (int s = 0; s < STEPS; s++) {
            double worst = 0, scale = 0;
            for (int64_t v = 0; v < V; v++) {
                worst = fmax(worst, fabs((double)batched.logits[i][s][v] - alone.logits[i][s][v]));
                scale = fmax(scale, fabs((double)alone.logits[i][s][v]));
            }
            CHECK(worst <= 1e-3 * (1 + scale), "%s: sequence %d step %d: logits differ by %g (scale %g)", arch, i, s,
                  worst, scale);
            CHECK(batched.tok[i][s] == alone.tok[i][s], "%s: sequence %d step %d: token %d batched, %d alone", arch, i,
                  s, batched.tok[i][s], alone.tok[i][s]);
            free(batched.logits[i][s]), free(alone.logits[i][s]);
        }
    wgt_model_free(m);
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    wgt_model *m;
    const char *root = getenv("WGT_ROOT");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/bible-llama", root ? root : ".");
    MUST(wgt_model_open(ctx, path, 64, &m));
    int64_t V = wgt_model_vocab(m);
    int32_t *ids[N_SEQ];
    size_t n[N_SEQ];
    for (int i = 0; i < N_SEQ; i++)
        MUST(wgt_tokenizer_encode(wgt_model_tokenizer(m), PROMPTS[i], (size_t)-1, WGT_TOKENIZE_ADD_SPECIAL, &ids[i], &n[i]));
    wgt_sampling sp[N_SEQ] = {{0}, {0}, {0}};
    for (int i = 0; i < N_SEQ; i++) sp[i].repeat_penalty = 1, sp[i].seed = 1234;
    sp[1].temperature = 0.9f, sp[1].top_k = 40, sp[1].seed = 7;  /* sampled on the device */
    sp[2].repeat_penalty = 1.3f;                                    /* greedy over penalised logits */
    sp[2].frequency_penalty = 0.8f, sp[2].presence_penalty = 0.5f; /* (OpenAI's over the generated ids too) */

    run batched = {0}, alone = {0};
    collect(m, ids, n, sp, 0, &batched);
    collect(m, ids, n, sp, 1, &alone);
    for (int i = 0; i < N_SEQ; i++)
        for (int s = 0; s < STEPS; s++) {
            double worst = 0, scale = 0;
            for (int64_t v = 0; v < V; v++) {
                worst = fmax(worst, fabs((double)batched.logits[i][s][v] - alone.logits[i][s][v]));
                scale = fmax(scale, fabs((double)alone.logits[i][s][v]));
            }
            /* the same math, in other kernels (a matrix product of several rows instead of a
             * row's fused pass): f32 rounding only */
            CHECK(worst <= 1e-3 * (1 + scale), "sequence %d step %d: logits differ by %g (scale %g)", i, s, worst, scale);
            CHECK(batched.tok[i][s] == alone.tok[i][s], "sequence %d step %d: token %d batched, %d alone", i, s,
                  batched.tok[i][s], alone.tok[i][s]);
        }

    /* wgt_model_generate draws the same tokens (the sampled sequence too: same seed, same steps) */
    for (int i = 0; i < N_SEQ; i++) {
        wgt_model_reset(m);
        test_collect gen = {0};
        MUST(wgt_model_generate(m, ids[i], (int64_t)n[i], STEPS, &sp[i], test_collect_token, &gen, NULL));
        CHECK(gen.n == STEPS, "sequence %d: generate gave %d tokens for %d steps", i, gen.n, STEPS);
        for (int s = 0; s < gen.n && s < STEPS; s++)
            CHECK(gen.ids[s] == batched.tok[i][s], "sequence %d token %d: generate %d, batch %d", i, s, gen.ids[s],
                  batched.tok[i][s]);
    }

    /* a slot truncated to a prefix continues as if the prefix had just been fed */
    wgt_batch *b;
    MUST(wgt_batch_create(m, 2, &b));
    float *again = malloc((size_t)V * sizeof(float));
    wgt_batch_item it = {1, ids[0], (int64_t)n[0], &sp[0], 0, NULL, -1};
    MUST(wgt_batch_step(b, &it, 1));
    MUST(wgt_batch_slot_truncate(b, 1, 2));
    CHECK(wgt_batch_slot_length(b, 1) == 2, "truncated slot holds %lld", (long long)wgt_batch_slot_length(b, 1));
    CHECK(!memcmp(wgt_batch_slot_ids(b, 1), ids[0], 2 * sizeof(int32_t)), "truncated slot's ids");
    it = (wgt_batch_item){1, ids[0] + 2, (int64_t)n[0] - 2, &sp[0], 0, again, -1};
    MUST(wgt_batch_step(b, &it, 1));
    double worst = 0;
    for (int64_t v = 0; v < V; v++) worst = fmax(worst, fabs((double)again[v] - batched.logits[0][0][v]));
    CHECK(worst <= 1e-3 * 30, "after truncation: logits differ by %g", worst);
    CHECK(it.token == batched.tok[0][0], "after truncation: token %d, want %d", it.token, batched.tok[0][0]);

    /* bad steps are statuses, and feed nothing */
    int32_t bad = (int32_t)V;
    wgt_batch_item two[2] = {{0, ids[0], 1, NULL, 0, NULL, 0}, {0, ids[0], 1, NULL, 0, NULL, 0}};
    CHECK(wgt_batch_step(b, two, 2) == WGT_ERR_INVALID_ARGUMENT, "a slot twice in a step");
    it = (wgt_batch_item){0, &bad, 1, NULL, 0, NULL, 0};
    CHECK(wgt_batch_step(b, &it, 1) == WGT_ERR_INVALID_ARGUMENT, "an id outside the vocabulary");
    int32_t *many = calloc(65, sizeof *many);
    it = (wgt_batch_item){0, many, 65, NULL, 0, NULL, 0};
    CHECK(wgt_batch_step(b, &it, 1) == WGT_ERR_LIMIT, "more ids than the slot holds");
    CHECK(wgt_batch_slot_length(b, 0) == 0, "a refused step fed %lld ids", (long long)wgt_batch_slot_length(b, 0));
    it = (wgt_batch_item){5, ids[0], 1, NULL, 0, NULL, 0};
    CHECK(wgt_batch_step(b, &it, 1) == WGT_ERR_INVALID_ARGUMENT, "a slot past the batch");
    wgt_batch *none;
    CHECK(wgt_batch_create(m, 0, &none) == WGT_ERR_INVALID_ARGUMENT, "no slots");
    free(many);
    free(again);
    wgt_batch_free(b);

    for (int i = 0; i < N_SEQ; i++) {
        free(ids[i]);
        for (int s = 0; s < STEPS; s++) free(batched.logits[i][s]), free(alone.logits[i][s]);
    }
    /* a decode step's attention is one dispatch a layer over all slots: the step's dispatches do not
     * grow with the number of sequences (per sequence they grow by a few a layer and sequence) */
    if (mdl_attention_slots_ok(ctx, m->cfg.head_dim)) {
        uint64_t d2 = decode_dispatches(ctx, m, 2, 0), d8 = decode_dispatches(ctx, m, 8, 0);
        uint64_t d32 = decode_dispatches(ctx, m, 32, 0), p8 = decode_dispatches(ctx, m, 8, 1);
        uint64_t p32 = decode_dispatches(ctx, m, 32, 1);
        printf("dispatches per decode step (%lld layers): 2/8/32 sequences %llu/%llu/%llu; attention per sequence "
               "8/32: %llu/%llu\n",
               (long long)m->cfg.n_layers, (unsigned long long)d2, (unsigned long long)d8, (unsigned long long)d32,
               (unsigned long long)p8, (unsigned long long)p32);
        CHECK(d8 == d2 && d32 == d2, "decode step dispatches grow with the sequences: %llu/%llu/%llu at 2/8/32",
              (unsigned long long)d2, (unsigned long long)d8, (unsigned long long)d32);
        CHECK(p32 > d32, "per sequence %llu dispatches at 32 sequences, one kernel %llu", (unsigned long long)p32,
              (unsigned long long)d32);
        cache_groups(ctx, m);
    } else
        printf("SKIP: attention over the slots needs a GPU context with barriers: the cache groups are not checked\n");
    wgt_model_free(m);
    const char *archs[] = {"gpt2", "llama", "mistral", "qwen2", "qwen3"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) fixture(ctx, root ? root : ".", archs[i]);
    wgt_context_free(ctx);
    return test_finish("batch");
}
