/* The training forward and backward against PyTorch + transformers: for each fixture of
 * tools/make_train_fixtures.py (tests/fixtures/train/<arch>/, or $WGT_TRAIN_FIXTURES/<arch>/):
 * the logits and mean cross-entropy of the batch, every parameter's gradient, and the loss of each
 * of 12 AdamW steps (constant lr, no clipping; and clip 1.0 with warmup + cosine), all f32.
 * Tolerances, with why:
 *  - logits and loss: 1e-4 of the largest |logit| / of the loss (f32 sums in another order, GPU
 *    exp/log within a few ulp; measured errors are near 1e-6);
 *  - gradients: max |g - ref| <= 1e-4 max |ref| per tensor (relative to the tensor's scale:
 *    entries near zero, like embedding rows of absent tokens, have no meaningful relative error);
 *  - step losses: 2e-3 relative (12 steps of Adam amplify the f32 differences of each gradient,
 *    mostly through 1/sqrt(v) on tiny second moments).
 * The forward and backward run twice: with the fused ops that have backward rules, and with every
 * op composed of primitives (train_ops.c, WGT_TRAIN_COMPOSED=1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "support/check.h"
#include "support/fixture.h"

/* float32 contents of a tensor of a safetensors file, transposed when asked ([a, b] -> [b, a]). */
static float *st_f32(const wgt_safetensors *st, const char *name, int transpose, int64_t *n)
{
    const wgt_st_tensor *t = wgt_safetensors_find(st, name);
    if (!t || t->type != WGT_FTYPE_F32) return NULL;
    float *f = malloc((size_t)t->n_elements * sizeof *f);
    const float *src = t->data;
    if (transpose && t->n_dims == 2) {
        int64_t a = t->shape[0], b = t->shape[1];
        for (int64_t i = 0; i < a; i++)
            for (int64_t j = 0; j < b; j++) f[j * a + i] = src[i * b + j];
    } else
        memcpy(f, src, (size_t)t->n_elements * sizeof *f);
    *n = t->n_elements;
    return f;
}

/* ids [B, L] from an i64 tensor of the batch file, as a device i32 tensor. */
static wgt_tensor *ids_of(wgt_context *ctx, const wgt_safetensors *st, const char *name)
{
    const wgt_st_tensor *t = wgt_safetensors_find(st, name);
    if (!t || t->type != WGT_FTYPE_I64 || t->n_dims != 2) return NULL;
    int32_t *v = malloc((size_t)t->n_elements * sizeof *v);
    for (int64_t i = 0; i < t->n_elements; i++) v[i] = (int32_t)((const int64_t *)t->data)[i];
    wgt_tensor *out = NULL;
    wgt_tensor_from_host(ctx, WGT_I32, 2, t->shape, v, &out);
    free(v);
    return out;
}

static double to_scalar(const wgt_tensor *t)
{
    float v = NAN;
    if (wgt_tensor_to_host(t, &v, sizeof v)) return NAN;
    return v;
}

/* max |a - b| / max |b| */
static double rel_err(const float *a, const float *b, int64_t n)
{
    double d = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        d = e > d || isnan(e) ? e : d;
        s = fabs(b[i]) > s ? fabs(b[i]) : s;
    }
    return s > 0 ? d / s : d;
}

static void check_forward_backward(wgt_context *ctx, const char *arch, const char *dir, const cJSON *fx)
{
    char path[1200];
    wgt_train_model *m;
    wgt_status st = wgt_train_model_open(ctx, dir, NULL, &m);
    CHECK(st == WGT_OK, "%s: open: %s", arch, wgt_errmsg());
    if (st) return;
    snprintf(path, sizeof path, "%s/batch.safetensors", dir);
    wgt_safetensors *batch = NULL, *grads = NULL;
    MUST(wgt_safetensors_open(path, &batch));
    snprintf(path, sizeof path, "%s/grads.safetensors", dir);
    MUST(wgt_safetensors_open(path, &grads));
    wgt_tensor *ids = ids_of(ctx, batch, "input_ids"), *tg = ids_of(ctx, batch, "targets");
    CHECK(ids && tg, "%s: batch.safetensors lacks input_ids/targets (i64 [B, L])", arch);
    int np = wgt_train_model_param_count(m);
    CHECK(np == (int)wgt_safetensors_count(grads), "%s: %d parameters, the fixture has %lld gradients", arch, np,
          (long long)wgt_safetensors_count(grads));
    for (int i = 0; i < np; i++) MUST(wgt_tensor_set_requires_grad(wgt_train_model_param(m, i), 1));

    wgt_tensor *loss, *logits;
    MUST(wgt_train_loss(m, ids, tg, &loss, &logits));
    int64_t n;
    float *ref_logits = st_f32(batch, "logits", 0, &n);
    CHECK(ref_logits && n == wgt_tensor_numel(logits), "%s: logits shape", arch);
    if (ref_logits && n == wgt_tensor_numel(logits)) {
        float *got = malloc((size_t)n * sizeof *got);
        MUST(wgt_tensor_to_host(logits, got, (size_t)n * sizeof *got));
        double e = rel_err(got, ref_logits, n);
        printf("%s: logits rel err %.2e\n", arch, e);
        CHECK(e <= 1e-4, "%s: logits differ from transformers' by %.3g of their scale", arch, e);
        free(got);
    }
    free(ref_logits);
    double lv = to_scalar(loss), lref = cJSON_GetObjectItem(fx, "loss")->valuedouble;
    printf("%s: loss %.7f (transformers %.7f)\n", arch, lv, lref);
    CHECK(fabs(lv - lref) <= 1e-4 * fabs(lref), "%s: loss %.7f, transformers %.7f", arch, lv, lref);

    st = wgt_backward(loss, NULL, 0);
    CHECK(st == WGT_OK, "%s: backward: %s", arch, wgt_errmsg());
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < np && !st; i++) {
        const char *name = wgt_train_model_param_name(m, i);
        float *ref = st_f32(grads, name, wgt_train_model_param_is_conv1d(m, i), &n);
        CHECK(ref != NULL, "%s: no gradient '%s' in the fixture", arch, name);
        wgt_tensor *g = NULL;
        MUST(wgt_tensor_grad(wgt_train_model_param(m, i), &g));
        CHECK(g != NULL, "%s: '%s' got no gradient", arch, name);
        if (ref && g && n == wgt_tensor_numel(g)) {
            float *got = malloc((size_t)n * sizeof *got);
            MUST(wgt_tensor_to_host(g, got, (size_t)n * sizeof *got));
            double e = rel_err(got, ref, n);
            CHECK(e <= 1e-4, "%s: gradient of '%s' differs from torch's by %.3g of its scale", arch, name, e);
            if (e > worst) worst = e, worst_name = name;
            free(got);
        }
        wgt_tensor_free(g);
        free(ref);
    }
    printf("%s: %d gradients, worst rel err %.2e (%s)\n", arch, np, worst, worst_name);
    wgt_tensor_free(loss);
    wgt_tensor_free(logits);
    wgt_tensor_free(ids);
    wgt_tensor_free(tg);
    wgt_safetensors_free(batch);
    wgt_safetensors_free(grads);
    wgt_train_model_free(m);
}

/* The 12 AdamW steps of one run, through wgt_trainer (the loop `wgt train` runs). */
static void check_run(wgt_context *ctx, const char *arch, const char *dir, const cJSON *fx, const char *run_name)
{
    const cJSON *opt = cJSON_GetObjectItem(fx, "optimizer");
    const cJSON *run = cJSON_GetObjectItem(cJSON_GetObjectItem(fx, "runs"), run_name);
    const cJSON *losses = cJSON_GetObjectItem(run, "losses");
    wgt_train_model *m;
    MUST(wgt_train_model_open(ctx, dir, NULL, &m));
    wgt_trainer_options o = wgt_trainer_defaults();
    o.optim = wgt_optimizer_defaults(WGT_OPTIM_ADAMW);
    o.optim.lr = cJSON_GetObjectItem(opt, "lr")->valuedouble;
    o.optim.beta1 = cJSON_GetArrayItem(cJSON_GetObjectItem(opt, "betas"), 0)->valuedouble;
    o.optim.beta2 = cJSON_GetArrayItem(cJSON_GetObjectItem(opt, "betas"), 1)->valuedouble;
    o.optim.eps = cJSON_GetObjectItem(opt, "eps")->valuedouble;
    o.optim.weight_decay = cJSON_GetObjectItem(opt, "weight_decay")->valuedouble;
    o.total_steps = cJSON_GetArraySize(losses);
    const cJSON *clip = cJSON_GetObjectItem(run, "clip_norm");
    o.clip_norm = cJSON_IsNumber(clip) ? clip->valuedouble : 0;
    if (!strcmp(cJSON_GetObjectItem(run, "schedule")->valuestring, "cosine")) o.schedule = WGT_LR_COSINE;
    o.warmup = cJSON_GetObjectItem(run, "warmup")->valueint;
    wgt_trainer *t;
    wgt_status st = wgt_trainer_create(m, &o, &t);
    CHECK(st == WGT_OK, "%s %s: trainer: %s", arch, run_name, wgt_errmsg());
    if (st) {
        wgt_train_model_free(m);
        return;
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/data.jsonl", dir);
    int64_t B = cJSON_GetObjectItem(fx, "batch")->valueint, L = cJSON_GetObjectItem(fx, "seq")->valueint;
    wgt_dataset *d;
    MUST(wgt_dataset_open_ids(path, wgt_train_model_vocab(m), L, &d));
    int32_t *ids = malloc((size_t)(B * (L + 1)) * sizeof *ids);
    double worst = 0;
    for (int s = 0; s < cJSON_GetArraySize(losses); s++) {
        MUST(wgt_dataset_batch(d, s, B, 0, 0, ids));
        double loss;
        st = wgt_trainer_step(t, ids, B, L, &loss);
        CHECK(st == WGT_OK, "%s %s: step %d: %s", arch, run_name, s + 1, wgt_errmsg());
        if (st) break;
        double ref = cJSON_GetArrayItem(losses, s)->valuedouble, e = fabs(loss - ref) / fabs(ref);
        CHECK(e <= 2e-3, "%s %s: step %d loss %.6f, torch %.6f", arch, run_name, s + 1, loss, ref);
        worst = e > worst ? e : worst;
    }
    if (!st && !strcmp(run_name, "adamw")) {
        /* padded held-out rows (wgt_dataset_open_ids_padded): a row of k + 1 ids padded with -1 to
         * L + 1 evaluates as the same k + 1 ids at --seq k (its padded targets not counted); -1
         * before a real id is refused */
        int64_t k = L / 2;
        int32_t *row = malloc((size_t)(L + 1) * sizeof *row);
        memcpy(row, wgt_dataset_sequence(d, 0), (size_t)(L + 1) * sizeof *row);
        double lt = NAN, lp = NAN;
        MUST(wgt_trainer_eval(t, row, 1, k, &lt));
        for (int64_t i = k + 1; i <= L; i++) row[i] = -1;
        MUST(wgt_trainer_eval(t, row, 1, L, &lp));
        CHECK(fabs(lp - lt) <= 1e-5 * fabs(lt), "%s: padded eval %.7f, the %lld ids unpadded %.7f", arch, lp,
              (long long)(k + 1), lt);
        row[L] = 5;
        CHECK(wgt_trainer_eval(t, row, 1, L, &lp) == WGT_ERR_INVALID_ARGUMENT, "%s: -1 before an id accepted", arch);
        printf("%s: padded eval %.7f = unpadded %.7f\n", arch, lp, lt);
        free(row);
    }
    printf("%s %s: %d steps, losses %.4f -> %.4f, worst rel err %.2e\n", arch, run_name,
           cJSON_GetArraySize(losses), cJSON_GetArrayItem(losses, 0)->valuedouble,
           cJSON_GetArrayItem(losses, cJSON_GetArraySize(losses) - 1)->valuedouble, worst);
    free(ids);
    wgt_dataset_free(d);
    wgt_trainer_free(t);
    wgt_train_model_free(m);
}

int main(void)
{
    const char *root = getenv("WGT_TRAIN_FIXTURES");
    char base[1024];
    if (root) snprintf(base, sizeof base, "%s", root);
    else snprintf(base, sizeof base, "%s/tests/fixtures/train", getenv("WGT_ROOT") ? getenv("WGT_ROOT") : ".");
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    static const char *archs[] = {"llama", "qwen2", "gpt2"};
    for (int a = 0; a < 3; a++) {
        char dir[1100], path[1200];
        snprintf(dir, sizeof dir, "%s/%s", base, archs[a]);
        snprintf(path, sizeof path, "%s/fixture.json", dir);
        char *text = test_slurp(path);
        CHECK(text != NULL, "%s: missing; make it with `python3 tools/make_train_fixtures.py tests/fixtures/train` "
                            "where torch and transformers are installed", path);
        if (!text) continue;
        cJSON *fx = cJSON_Parse(text);
        free(text);
        /* the fused ops where they record a backward node (the default), then every op through its
         * composition of primitives (WGT_TRAIN_COMPOSED=1): both against torch */
        check_forward_backward(ctx, archs[a], dir, fx);
        setenv("WGT_TRAIN_COMPOSED", "1", 1);
        printf("%s: composed ops:\n", archs[a]);
        check_forward_backward(ctx, archs[a], dir, fx);
        unsetenv("WGT_TRAIN_COMPOSED");
        /* the alternatives of the defaults: sdpa's forward through attention.wgsl (WGT_SDPA_FWD=kernel;
         * the default for a recorded forward: two products and a row kernel), the composed backward of sdpa, the norms and
         * the activations (WGT_SDPA_GRAD, WGT_NORM_GRAD, WGT_ACT_GRAD=composed; the default: kernels) */
        setenv("WGT_SDPA_FWD", "kernel", 1);
        setenv("WGT_SDPA_GRAD", "composed", 1);
        setenv("WGT_NORM_GRAD", "composed", 1);
        setenv("WGT_ACT_GRAD", "composed", 1);
        printf("%s: WGT_SDPA_FWD=kernel WGT_SDPA_GRAD=composed WGT_NORM_GRAD=composed WGT_ACT_GRAD=composed:\n", archs[a]);
        check_forward_backward(ctx, archs[a], dir, fx);
        unsetenv("WGT_SDPA_FWD");
        unsetenv("WGT_SDPA_GRAD");
        unsetenv("WGT_NORM_GRAD");
        unsetenv("WGT_ACT_GRAD");
        check_run(ctx, archs[a], dir, fx, "adamw");
        check_run(ctx, archs[a], dir, fx, "adamw_clip_cos");
        cJSON_Delete(fx);
    }
    wgt_context_free(ctx);
    return test_finish("test_gpu_train_fixtures");
}
