/* Sampling on the device against the distribution it should draw from, computed here: repetition
 * penalty (once per id), frequency and presence penalties (over the generated ids), temperature, top-k, top-p (within top-k), min-p, then softmax over what is kept. A
 * chi-square test over many draws (a fresh noise stream per step), greedy equal to the argmax, and
 * the same seed and step giving the same token; again at 128 invocations per workgroup
 * (compatibility mode's default limit, lowered on the context). */
#include <math.h>
#include <string.h>

#include "models/model.h"
#include "ops/ops.h"
#include "support/check.h"

enum { V = 200, DRAWS = 3000 };

static int by_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The probability of each token under the settings. */
/* x = the logits after the penalties: the repetition penalty over hist[0..nh), OpenAI's frequency
 * and presence penalties over its last n_gen ids (the generated ones). */
static void penalised(const float *logits, const int32_t *hist, int nh, int n_gen, const wgt_sampling *sp, double *x)
{
    for (int i = 0; i < V; i++) x[i] = logits[i];
    for (int h = 0; h < nh; h++) {
        double l = logits[hist[h]];
        x[hist[h]] = l > 0 ? l / sp->repeat_penalty : l * sp->repeat_penalty;
    }
    for (int i = 0; i < V; i++) {
        int c = 0;
        for (int h = nh - n_gen; h < nh; h++) c += hist[h] == i;
        x[i] -= c * (double)sp->frequency_penalty + (c > 0) * (double)sp->presence_penalty;
    }
}

static void expected(const float *logits, const int32_t *hist, int nh, const wgt_sampling *sp, double *prob)
{
    double x[V], sorted[V];
    penalised(logits, hist, nh, nh, sp, x); /* the draws below are at steps >= nh: all of hist generated */
    for (int i = 0; i < V; i++) x[i] /= sp->temperature;
    double m = -INFINITY;
    for (int i = 0; i < V; i++) m = fmax(m, x[i]);
    memcpy(sorted, x, sizeof x);
    qsort(sorted, V, sizeof(double), by_desc);
    double t = -INFINITY;
    int kept = V;
    if (sp->top_k > 0 && sp->top_k < V) t = sorted[sp->top_k - 1], kept = sp->top_k;
    if (sp->top_p > 0 && sp->top_p < 1) {
        double mass = 0, cum = 0;
        for (int i = 0; i < kept; i++) mass += exp(sorted[i] - m);
        for (int i = 0; i < kept; i++) {
            cum += exp(sorted[i] - m);
            if (cum >= sp->top_p * mass) {
                t = sorted[i];
                break;
            }
        }
    }
    if (sp->min_p > 0) t = fmax(t, m + log(sp->min_p));
    double z = 0;
    for (int i = 0; i < V; i++) z += x[i] >= t ? exp(x[i] - m) : 0;
    for (int i = 0; i < V; i++) prob[i] = x[i] >= t ? exp(x[i] - m) / z : 0;
}

static void run(wgt_context *ctx, const wgt_sampling *sp, const char *what)
{
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = (float)(3.0 * sin(i * 1.7) + 0.01 * i);
    int32_t hist[4] = {3, 17, 17, 150};
    int64_t shape[2] = {1, V}, hn = 4;
    wgt_tensor *lt, *ht;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, shape, logits, &lt));
    MUST(wgt_tensor_from_host(ctx, WGT_I32, 1, &hn, hist, &ht));
    double prob[V];
    expected(logits, hist, 4, sp, prob);
    long count[V] = {0};
    for (int d = 0; d < DRAWS; d++) {
        wgt_tensor *tok;
        MUST(wgt_sample_gpu(lt, ht, 4, sp, (uint32_t)d + 4, &tok));
        int32_t id;
        MUST(wgt_tensor_to_host(tok, &id, sizeof id));
        wgt_tensor_free(tok);
        CHECK(id >= 0 && id < V, "%s: token %d out of range", what, id);
        if (id >= 0 && id < V) count[id]++;
    }
    /* chi-square over tokens with expected count >= 5; tokens with probability 0 must never appear */
    double chi = 0;
    int bins = 0, impossible = 0;
    for (int i = 0; i < V; i++) {
        double e = prob[i] * DRAWS;
        if (prob[i] == 0) impossible += count[i];
        else if (e >= 5) {
            chi += (count[i] - e) * (count[i] - e) / e;
            bins++;
        }
    }
    /* the 0.1% upper quantile of chi-square with k dof is below k + 3.1 sqrt(2k) + 10 for these k */
    double limit = (bins - 1) + 3.1 * sqrt(2.0 * (bins - 1)) + 10;
    CHECK(impossible == 0, "%s: %d draws of tokens the filters remove", what, impossible);
    CHECK(bins >= 2, "%s: only %d bins", what, bins);
    CHECK(chi <= limit, "%s: chi-square %.1f over %d bins (limit %.1f)", what, chi, bins, limit);
    /* reproducible: the same seed and step give the same token */
    wgt_tensor *a, *b;
    int32_t ia, ib;
    MUST(wgt_sample_gpu(lt, ht, 4, sp, 77, &a));
    MUST(wgt_sample_gpu(lt, ht, 4, sp, 77, &b));
    MUST(wgt_tensor_to_host(a, &ia, 4));
    MUST(wgt_tensor_to_host(b, &ib, 4));
    CHECK(ia == ib, "%s: same seed and step gave %d and %d", what, ia, ib);
    wgt_tensor_free(a);
    wgt_tensor_free(b);
    wgt_tensor_free(lt);
    wgt_tensor_free(ht);
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    wgt_sampling sp = {0};
    sp.seed = 42;
    sp.repeat_penalty = 1;
    sp.temperature = 1.0f;
    run(ctx, &sp, "temperature 1");
    sp.temperature = 0.7f, sp.top_k = 20;
    run(ctx, &sp, "top-k 20");
    sp.top_k = 0, sp.top_p = 0.8f;
    run(ctx, &sp, "top-p 0.8");
    sp.top_k = 50, sp.top_p = 0.9f, sp.repeat_penalty = 1.3f;
    run(ctx, &sp, "top-k 50, top-p 0.9, penalty 1.3");
    sp.top_k = 0, sp.top_p = 0, sp.min_p = 0.05f, sp.repeat_penalty = 1;
    run(ctx, &sp, "min-p 0.05");
    sp.min_p = 0, sp.top_k = 40, sp.frequency_penalty = 0.7f, sp.presence_penalty = 0.4f, sp.repeat_penalty = 1.2f;
    run(ctx, &sp, "top-k 40, frequency 0.7, presence 0.4, penalty 1.2");
    sp.top_k = 0, sp.frequency_penalty = sp.presence_penalty = 0, sp.repeat_penalty = 1;
    /* the kernel at compatibility mode's 128 invocations: its reductions over two strides of the
     * 200 tokens */
    wgt_limits saved = ctx->info.limits;
    ctx->info.limits.max_compute_invocations_per_workgroup = 128;
    ctx->info.limits.max_compute_workgroup_size_x = 128;
    CHECK(op_workgroup_size(ctx) == 128, "lowered limits: workgroup size %u", op_workgroup_size(ctx));
    sp.top_k = 50, sp.top_p = 0.9f, sp.min_p = 0.05f, sp.repeat_penalty = 1.3f;
    run(ctx, &sp, "top-k 50, top-p 0.9, min-p 0.05, penalty 1.3 at 128 invocations");
    ctx->info.limits = saved;
    /* greedy: the first maximum */
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = (float)(i % 37);
    int64_t shape[2] = {1, V}, hn = 1;
    int32_t h0 = 0;
    wgt_tensor *lt, *ht, *tok;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, shape, logits, &lt));
    MUST(wgt_tensor_from_host(ctx, WGT_I32, 1, &hn, &h0, &ht));
    wgt_sampling g = {0};
    MUST(wgt_sample_gpu(lt, ht, 0, &g, 0, &tok));
    int32_t id;
    MUST(wgt_tensor_to_host(tok, &id, 4));
    CHECK(id == 36, "greedy picked %d, want the first maximum 36", id);
    wgt_tensor_free(tok);
    wgt_tensor_free(ht);
    /* greedy over penalised logits: a prompt {36, 110} then generated ids {73, 36, 36, 9, 147}
     * (step 5), more than a workgroup's worth of history at 128 invocations as well; the device, the
     * host sampler and the formula here pick the same id */
    int32_t hist[300];
    for (int i = 0; i < 300; i++) hist[i] = (i * 7) % V;
    int32_t gen[5] = {73, 36, 36, 9, 147};
    hist[0] = 36, hist[1] = 110;
    struct { float f, p, rep; int nh, n_gen; } cases[] = {
        {0.6f, 0.5f, 1, 7, 5}, {0, 0.5f, 1, 7, 5}, {0.6f, 0, 1.1f, 7, 5}, {-0.4f, 0, 1, 7, 5}, {0, -2, 1, 7, 5},
        {0.3f, 0.2f, 1, 300, 250}, {1, 1, 1, 7, 0},
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof *cases); c++) {
        int nh = cases[c].nh;
        if (nh == 7) memcpy(hist + 2, gen, sizeof gen);
        else
            for (int i = 2; i < 7; i++) hist[i] = (i * 7) % V;
        wgt_sampling pg = {0};
        pg.frequency_penalty = cases[c].f, pg.presence_penalty = cases[c].p, pg.repeat_penalty = cases[c].rep;
        double x[V];
        penalised(logits, hist, nh, cases[c].n_gen, &pg, x);
        int want = 0;
        for (int i = 1; i < V; i++)
            if (x[i] > x[want]) want = i;
        int64_t n64 = nh;
        float host_logits[V];
        memcpy(host_logits, logits, sizeof host_logits);
        int32_t host;
        MUST(mdl_sample_host(host_logits, V, &pg, hist, nh, (uint32_t)cases[c].n_gen, &host));
        for (int wg = 0; wg < 2; wg++) { /* 256 (or the device's) and 128 invocations */
            if (wg) {
                ctx->info.limits.max_compute_invocations_per_workgroup = 128;
                ctx->info.limits.max_compute_workgroup_size_x = 128;
            }
            MUST(wgt_tensor_from_host(ctx, WGT_I32, 1, &n64, hist, &ht));
            MUST(wgt_sample_gpu(lt, ht, nh, &pg, (uint32_t)cases[c].n_gen, &tok));
            MUST(wgt_tensor_to_host(tok, &id, 4));
            CHECK(id == want && host == want, "greedy, frequency %g, presence %g, repetition %g, %d of %d ids generated, "
                  "%u invocations: device %d, host %d, want %d", cases[c].f, cases[c].p, cases[c].rep, cases[c].n_gen, nh,
                  op_workgroup_size(ctx), id, host, want);
            wgt_tensor_free(tok);
            wgt_tensor_free(ht);
            ctx->info.limits = saved;
        }
    }
    wgt_tensor_free(lt);
    wgt_context_free(ctx);
    return test_finish("test_gpu_sample");
}
