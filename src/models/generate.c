/* Generation: prefill the prompt in one forward pass, then one token per step. Greedy picks the
 * argmax on the device and reads back one id; sampling (temperature, top-k, top-p, min-p,
 * repetition, frequency and presence penalties, seeded) draws on the device (wgt_sample_gpu). A
 * CPU-reference context, or a JSON constraint (wgt_sampling.json), reads the logits back and draws
 * on the host by the same rules. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "graph/graph.h"
#include "models/model.h"
#include "tensor/tensor.h"

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct cand {
    float logit;
    int32_t id;
} cand;

static int by_logit_desc(const void *a, const void *b)
{
    float x = ((const cand *)a)->logit, y = ((const cand *)b)->logit;
    if (x != y) return x < y ? 1 : -1;
    return ((const cand *)a)->id - ((const cand *)b)->id;
}

/* Sample from logits[V] with the settings; history for the repetition penalty (once per id, as
 * Hugging Face applies it), its last n_gen ids (the generated ones) for the frequency and presence
 * penalties. */
static int32_t sample(float *logits, int64_t V, const wgt_sampling *sp, const int32_t *hist, int64_t n_hist,
                      int64_t n_gen, uint64_t *rng, cand *cs)
{
    if (sp->repeat_penalty > 0 && sp->repeat_penalty != 1.0f) /* cs[id].id marks the ids done */
        for (int64_t i = 0; i < n_hist; i++) cs[hist[i]].id = -1;
    if (sp->repeat_penalty > 0 && sp->repeat_penalty != 1.0f)
        for (int64_t i = 0; i < n_hist; i++) {
            float *l = &logits[hist[i]];
            if (cs[hist[i]].id != -1) continue;
            cs[hist[i]].id = 0;
            *l = *l > 0 ? *l / sp->repeat_penalty : *l * sp->repeat_penalty;
        }
    if (sp->frequency_penalty != 0 || sp->presence_penalty != 0) { /* cs[id].logit counts the generated ids */
        const int32_t *gen = hist + n_hist - n_gen;
        for (int64_t i = 0; i < n_gen; i++) cs[gen[i]].logit = 0;
        for (int64_t i = 0; i < n_gen; i++) cs[gen[i]].logit += 1;
        for (int64_t i = 0; i < n_gen; i++) {
            float c = cs[gen[i]].logit;
            if (c == 0) continue; /* penalised already */
            logits[gen[i]] = logits[gen[i]] - c * sp->frequency_penalty - sp->presence_penalty;
            cs[gen[i]].logit = 0;
        }
    }
    int64_t best = 0;
    for (int64_t i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (sp->temperature <= 0) return (int32_t)best;
    int64_t n = 0;
    for (int64_t i = 0; i < V; i++) cs[n++] = (cand){logits[i] / sp->temperature, (int32_t)i};
    qsort(cs, (size_t)n, sizeof *cs, by_logit_desc);
    if (sp->top_k > 0 && sp->top_k < n) n = sp->top_k;
    double maxl = cs[0].logit, total = 0;
    for (int64_t i = 0; i < n; i++) total += exp(cs[i].logit - maxl);
    if (sp->min_p > 0) { /* keep tokens with p >= min_p * p_max */
        int64_t keep = 0;
        while (keep < n && exp(cs[keep].logit - maxl) >= sp->min_p) keep++;
        n = keep ? keep : 1;
        total = 0;
        for (int64_t i = 0; i < n; i++) total += exp(cs[i].logit - maxl);
    }
    if (sp->top_p > 0 && sp->top_p < 1) {
        double cum = 0;
        int64_t keep = 0;
        while (keep < n) {
            cum += exp(cs[keep].logit - maxl) / total;
            keep++;
            if (cum >= sp->top_p) break;
        }
        n = keep;
        total = 0;
        for (int64_t i = 0; i < n; i++) total += exp(cs[i].logit - maxl);
    }
    double r = (double)(splitmix(rng) >> 11) / 9007199254740992.0 * total, acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += exp(cs[i].logit - maxl);
        if (r < acc) return cs[i].id;
    }
    return cs[n - 1].id;
}

/* sample() under the settings' JSON constraint, if any: its mask first, and the drawn id advances it. */
static wgt_status sample_constrained(float *logits, int64_t V, const wgt_sampling *sp, const int32_t *hist,
                                     int64_t n_hist, int64_t n_gen, uint64_t *rng, cand *cs, int32_t *token)
{
    if (sp->json && wgt_json_state_mask(sp->json, logits, V) == 0)
        return wgt_error(WGT_ERR_UNSUPPORTED, "JSON constraint: no token of the vocabulary continues the text here");
    *token = sample(logits, V, sp, hist, n_hist, n_gen, rng, cs);
    return sp->json ? wgt_json_state_accept(sp->json, *token) : WGT_OK;
}

static int is_eos(const wgt_model *m, int32_t id)
{
    for (int i = 0; i < m->cfg.n_eos; i++)
        if (m->cfg.eos[i] == id) return 1;
    return m->tok && wgt_tokenizer_is_eog(m->tok, id);
}

/* One pipelined decode step as a graph function (wgt_graph_cache): input the previous step's id
 * on the device; scalars the position fed (= m->n_past), the id's slot in the device history and
 * the sampler's draw counter; output the sampled id, which also joins the history. */
typedef struct decode_fn_args {
    wgt_model *m;
    const wgt_sampling *sp;
    wgt_tensor *hist; /* [cap] i32 on the device: read and written in place */
} decode_fn_args;

static wgt_status decode_step_fn(wgt_context *ctx, void *user, int n_inputs, wgt_tensor *const *inputs,
                                 const int64_t *scalars, int max_outputs, wgt_tensor **outputs, int *n_outputs)
{
    decode_fn_args *a = user;
    wgt_model *m = a->m;
    (void)n_inputs, (void)max_outputs;
    wgt_tensor *lg = NULL, *tok = NULL, *slot = NULL;
    wgt_status st;
    if (m->n_past != scalars[0]) return wgt_error(WGT_ERR_INTERNAL, "decode step: position %lld, the cache holds %lld",
                                                  (long long)scalars[0], (long long)m->n_past);
    if ((st = wgt_graph_scalar(ctx, "pos", WGT_GRAPH_POSITION, scalars[0], NULL)) ||
        (st = wgt_graph_scalar(ctx, "hist_len", WGT_GRAPH_OFFSET, scalars[1], NULL)) ||
        (st = wgt_graph_scalar(ctx, "step", WGT_GRAPH_SEED, scalars[2], NULL)))
        return st;
    if (!(st = mdl_forward_dev(m, inputs[0], &lg, mdl_sampling_is_plain_greedy(a->sp) ? &tok : NULL)) &&
        (tok || !(st = wgt_sample_gpu(lg, a->hist, scalars[1], a->sp, (uint32_t)scalars[2], &tok))) &&
        !(st = wgt_tensor_narrow(a->hist, 0, scalars[1], 1, &slot)))
        st = wgt_tensor_assign(slot, tok); /* the id joins the history on the device */
    wgt_tensor_free(slot);
    wgt_tensor_free(lg);
    if (st) {
        wgt_tensor_free(tok);
        return st;
    }
    outputs[0] = tok;
    *n_outputs = 1;
    return WGT_OK;
}

wgt_status wgt_model_generate(wgt_model *m, const int32_t *prompt, int64_t n_prompt, int64_t n_new,
                              const wgt_sampling *sp, wgt_token_fn on_token, void *user, wgt_generate_stats *stats)
{
    if (!m || !prompt || n_prompt <= 0 || !sp || n_new < 0)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_model_generate: bad argument");
    if (n_prompt > m->max_ctx)
        return wgt_error(WGT_ERR_LIMIT,
                         "the prompt has %lld tokens and the context holds %lld: give a shorter prompt or a longer "
                         "context (-c/--ctx-size; the model allows %lld, wgt at most 4096)",
                         (long long)n_prompt, (long long)m->max_ctx, (long long)(m->cfg.max_pos ? m->cfg.max_pos : 4096));
    /* A full cache is a normal end, as in llama.cpp: step k feeds position n_prompt + k - 1, so
     * max_ctx - n_prompt + 1 steps fit (the last sampled id is returned, never fed). */
    int context_full = 0;
    if (n_new > m->max_ctx - n_prompt + 1) n_new = m->max_ctx - n_prompt + 1, context_full = 1;
    wgt_status st = WGT_OK;
    int64_t V = m->cfg.vocab;
    /* the device samples; a CPU-reference context, or a JSON constraint, samples on the host with
     * the same rules */
    int on_device = !wgt_gpu_runs_reference(m->ctx) && !sp->json;
    float *logits = on_device ? NULL : malloc((size_t)V * sizeof *logits);
    cand *cs = on_device ? NULL : malloc((size_t)V * sizeof *cs);
    int64_t cap = n_prompt + n_new + 1;
    int32_t *hist = calloc((size_t)cap, sizeof *hist);
    wgt_tensor *hist_t = NULL;
    if ((!on_device && (!logits || !cs)) || !hist) {
        st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    memcpy(hist, prompt, (size_t)n_prompt * sizeof *hist);
    if (on_device && (st = wgt_tensor_from_host(m->ctx, WGT_I32, 1, &cap, hist, &hist_t))) goto done;
    int64_t n_hist = n_prompt;
    uint64_t rng = sp->seed;
    wgt_generate_stats s = {0};
    wgt_memory_stats m0, m1;
    wgt_context_memory_stats(m->ctx, &m0);
    double t0 = wgt_now_seconds(), t_prefill = 0;
    /* The cache keeps what it holds of this prompt's start (a chat's earlier turns): only the rest
     * is fed, at least one token so there are logits. */
    int64_t keep = 0;
    while (keep < m->n_past && keep < n_prompt - 1 && m->cache_ids[keep] == prompt[keep]) keep++;
    m->n_past = keep;
    s.n_reused = keep;
    const int32_t *feed = prompt + keep;
    int64_t n_feed = n_prompt - keep;
    /* Pipelined decode (when the embedding can read the sampled id on the device): step t is
     * recorded and submitted while the device still runs step t - 1, whose id is read back only
     * then. A stop (end of sequence, the callback) is seen one step late; that step's id is
     * dropped, and the cache keeps the stopping token as its last input. */
    int pipe = on_device && mdl_can_forward_dev(m);
    wgt_tensor *prev_tok = NULL;
    wgt_readback *pending = NULL;
    int stop = 0;
    /* A captured decode step (sp->graph): decode_step_fn through a graph cache, captured once and
     * replayed for every later token (its position, the history length and the sampler's step
     * are graph scalars; the seed is the request's, fixed for the cache's life). Keyed also on the
     * attention's split length (mdl_decode_graph_bucket), which changes with the key count only
     * for models whose split reaches its cap: then a step is captured again (positions only grow:
     * one graph held). A replay's commands share the submit of the id's readback. */
    int64_t graph_limit = sp->graph && pipe ? mdl_decode_capture_limit(m) : 0;
    decode_fn_args dargs = {m, sp, hist_t};
    wgt_graph_cache *gc = NULL;
    if (graph_limit && wgt_graph_cache_create(m->ctx, decode_step_fn, &dargs, 3, 1, &gc)) graph_limit = 0;
    for (int64_t step = 0; step < n_new && !stop; step++) {
        wgt_tensor *lg = NULL, *tok = NULL, *slot = NULL;
        int32_t next = 0;
        double r0 = wgt_now_seconds();
        int64_t n_dev = n_prompt + step; /* ids in the device history */
        if (graph_limit && step > 0 && m->n_past + 1 <= graph_limit && n_dev < cap) {
            const wgt_tensor *in[1] = {prev_tok};
            int64_t sc[3] = {m->n_past, n_dev, step};
            int n_out = 0, how;
            st = wgt_graph_cache_run_ex(gc, mdl_decode_graph_bucket(m, m->n_past), 1, 1, in, sc, 1, &tok, &n_out, &how);
            if (!st && how == WGT_GRAPH_CACHE_REPLAYED) m->n_past++; /* a capture ran the step: forward advanced it */
            if (!st && how == WGT_GRAPH_CACHE_REPLAYED) s.graph_steps++;
            if (!st && how == WGT_GRAPH_CACHE_CAPTURED) s.graph_captures++;
            if (!st && how == WGT_GRAPH_CACHE_EAGER) graph_limit = 0; /* not capturable: eager from here */
            s.record_seconds += wgt_now_seconds() - r0;
            if (st) goto step_done;
            goto sampled;
        }
        /* greedy: the output layer's kernel may give the token with the logits (no argmax pass) */
        if (pipe && step > 0)
            st = mdl_forward_dev(m, prev_tok, &lg, on_device && mdl_sampling_is_plain_greedy(sp) ? &tok : NULL);
        else
            st = wgt_model_forward(m, feed, n_feed, 0, &lg);
        if (!st && on_device) {
            if (!tok) st = wgt_sample_gpu(lg, hist_t, n_dev, sp, (uint32_t)step, &tok);
            if (!st && n_dev < cap && !(st = wgt_tensor_narrow(hist_t, 0, n_dev, 1, &slot)))
                st = wgt_tensor_assign(slot, tok); /* the id joins the history on the device */
        }
        if (st) goto step_done;
        if (on_device) {
            if (step > 0) s.record_seconds += wgt_now_seconds() - r0;
            if (st) goto step_done;
        sampled:
            if (!pipe) {
                st = wgt_tensor_to_host(tok, &next, sizeof next); /* one submit per token */
            } else {
                wgt_readback *rb;
                if ((st = wgt_gpu_readback_begin(m->ctx, tok->st->buf, (uint64_t)tok->l.offset * 4, 4, &rb)) ||
                    (st = wgt_gpu_flush(m->ctx))) /* this step's one submit */
                    goto step_done;
                wgt_tensor_free(prev_tok);
                prev_tok = wgt_tensor_ref(tok);
                /* the prompt's step is waited for at once (its time is the prefill's) */
                wgt_readback *was = step == 0 ? rb : pending;
                pending = step == 0 ? NULL : rb;
                if (!was) goto step_done; /* nothing to hand out yet */
                if ((st = wgt_gpu_readback_end(m->ctx, was, &next))) goto step_done;
            }
        } else {
            st = wgt_tensor_to_host(lg, logits, (size_t)V * sizeof *logits);
            if (!st) st = sample_constrained(logits, V, sp, hist, n_hist, n_hist - n_prompt, &rng, cs, &next);
        }
        if (st) goto step_done;
        hist[n_hist++] = next;
        s.n_generated++;
        if ((on_token && on_token(next, user)) || (!sp->ignore_eos && is_eos(m, next))) stop = 1;
        if (sp->json && wgt_json_state_complete(sp->json)) stop = 1; /* the object closed */
        feed = &hist[n_hist - 1];
        n_feed = 1;
    step_done:
        if (step == 0) t_prefill = wgt_now_seconds() - t0;
        wgt_tensor_free(slot);
        wgt_tensor_free(tok);
        wgt_tensor_free(lg);
        if (st) break;
    }
    if (pending) { /* the last step's id (dropped after a stop) */
        int32_t next = 0;
        wgt_status st2 = wgt_gpu_readback_end(m->ctx, pending, stop || st ? NULL : &next);
        if (!st) st = st2;
        if (!st && !stop) {
            hist[n_hist++] = next;
            s.n_generated++;
            if (on_token) on_token(next, user);
        }
    }
    wgt_tensor_free(prev_tok);
    wgt_graph_cache_free(gc);
    /* the generated ids fed on the device, now known: the cache's record of its inputs */
    for (int64_t i = n_prompt; i < m->n_past && i < n_hist; i++) m->cache_ids[i] = hist[i];
    if (st) goto done;
    {
        double t1 = wgt_now_seconds();
        wgt_context_memory_stats(m->ctx, &m1);
        s.n_prompt = n_prompt;
        s.prefill_seconds = t_prefill;
        s.decode_seconds = t1 - t0 - t_prefill;
        s.submits = m1.submits - m0.submits;
        s.dispatches = m1.dispatches - m0.dispatches;
        s.context_full = context_full && s.n_generated >= n_new; /* not when it stopped at an end token first */
        if (stats) *stats = s;
    }
done:
    wgt_tensor_free(hist_t);
    free(logits);
    free(cs);
    free(hist);
    return st;
}

/* The host sampler for one step of a sequence whose draws so far advanced the seed step times
 * (src/models/batch.c on a CPU-reference context). */
wgt_status mdl_sample_host(float *logits, int64_t V, const wgt_sampling *sp, const int32_t *hist, int64_t n_hist,
                           uint32_t step, int32_t *token)
{
    cand *cs = malloc((size_t)V * sizeof *cs);
    if (!cs) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    uint64_t rng = sp->seed + (uint64_t)step * 0x9E3779B97F4A7C15ull; /* splitmix's state after step draws */
    wgt_status st = sample_constrained(logits, V, sp, hist, n_hist, step < n_hist ? step : n_hist, &rng, cs, token);
    free(cs);
    return st;
}

int wgt_model_is_eos(const wgt_model *m, int32_t id)
{
    return m && is_eos(m, id);
}
