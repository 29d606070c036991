/* wgt_model_options.f32_weights (the browser page turns it on for SwiftShader, which has no
 * shader-f16): the default model's f16 weights expanded to f32 at load must give what the f16
 * weights give, since the kernels compute in f32 either way and the expansion is exact: the weights
 * on the device are f32 and twice the bytes, first-step logits agree within f32 summation order,
 * and greedy ids are the same, for two prompts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"
#include "support/check.h"

typedef struct collect {
    int32_t ids[16];
    int n;
} collect;

static int on_tok(int32_t id, void *u)
{
    collect *c = u;
    if (c->n < 16) c->ids[c->n++] = id;
    return 0;
}

/* First-step logits [V] and n greedy ids of prompt. */
static void run(wgt_model *m, const int32_t *prompt, int np, int n, float *logits, collect *col)
{
    wgt_model_reset(m);
    wgt_tensor *lg;
    MUST(wgt_model_forward(m, prompt, np, 0, &lg));
    MUST(wgt_tensor_to_host(lg, logits, (size_t)m->cfg.vocab * sizeof(float)));
    wgt_tensor_free(lg);
    wgt_sampling sp = {0};
    sp.ignore_eos = 1;
    col->n = 0;
    MUST(wgt_model_generate(m, prompt, np, n, &sp, on_tok, col, NULL));
}

int main(void)
{
    const char *path = "models/bible-llama.gguf";
    if (getenv("WGT_ROOT")) {
        static char buf[4096];
        snprintf(buf, sizeof buf, "%s/models/bible-llama.gguf", getenv("WGT_ROOT"));
        path = buf;
    }
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    wgt_model *h = NULL, *f = NULL;
    wgt_model_options oh = {0}, of = {0};
    of.f32_weights = 1;
    MUST(wgt_model_open_ex(ctx, path, &oh, &h));
    MUST(wgt_model_open_ex(ctx, path, &of, &f));
    /* the default model's linear weights are f16; expanded, f32 */
    const wgt_tensor *wh = h->layers[0].wqkv.t ? h->layers[0].wqkv.t : h->layers[0].wq.t;
    const wgt_tensor *wf = f->layers[0].wqkv.t ? f->layers[0].wqkv.t : f->layers[0].wq.t;
    CHECK(wh && wgt_tensor_dtype(wh) == WGT_F16, "the default model's layer-0 attention weight is f16");
    CHECK(wf && wgt_tensor_dtype(wf) == WGT_F32, "with f32_weights it is f32, not %s", wf ? wgt_dtype_name(wgt_tensor_dtype(wf)) : "absent");
    CHECK(f->weight_bytes > h->weight_bytes * 3 / 2, "f32 weights take %llu bytes, f16 %llu",
          (unsigned long long)f->weight_bytes, (unsigned long long)h->weight_bytes);
    /* one token (the decode kernels) and seven (the prefill's) */
    static const int32_t prompts[2][8] = {{1}, {1, 13, 797, 278, 3763, 2249, 271}};
    static const int np[2] = {1, 7};
    int64_t V = h->cfg.vocab;
    float *lh = malloc(V * sizeof(float)), *lf = malloc(V * sizeof(float));
    for (int p = 0; p < 2; p++) {
        collect ch, cf;
        run(h, prompts[p], np[p], 8, lh, &ch);
        run(f, prompts[p], np[p], 8, lf, &cf);
        double worst = 0, scale = 0;
        for (int64_t i = 0; i < V; i++) {
            double e = fabs((double)lh[i] - lf[i]);
            if (!(e <= worst)) worst = e;
            if (fabs(lh[i]) > scale) scale = fabs(lh[i]);
        }
        /* the same f32 products, summed in the same or another order */
        CHECK(worst <= 1e-5 * scale + 1e-5, "prompt %d: logits of f32 weights differ from f16's by %g (scale %g)", p,
              worst, scale);
        CHECK(ch.n == 8 && cf.n == 8 && !memcmp(ch.ids, cf.ids, sizeof(int32_t) * 8),
              "prompt %d: greedy ids of f32 weights differ from f16's", p);
        printf("prompt %d: max |logit| %.3g, |f32 weights - f16 weights| <= %.2g\n", p, scale, worst);
    }
    free(lh), free(lf);
    wgt_model_free(h), wgt_model_free(f);
    wgt_context_free(ctx);
    return test_finish("test_gpu_f32_weights");
}
