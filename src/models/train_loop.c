/* One training step as `wgt train` runs it: forward and mean cross-entropy, backward, gradient
 * clipping by global norm, the learning rate of the schedule, the optimizer's fused update; and
 * checkpoints (model, optimizer state, step) that resume bit for bit. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "core/error.h"
#include "models/train_internal.h"

struct wgt_trainer {
    wgt_train_model *m;
    wgt_trainer_options o;
    wgt_optimizer *opt;
    wgt_tensor **params; /* [n] */
    wgt_tensor **grads;  /* [n], this step's */
    int n;
    double last_lr;
    double last_norm;    /* gradient norm before clipping (NAN when not clipping) */
};

wgt_trainer_options wgt_trainer_defaults(void)
{
    wgt_trainer_options o;
    memset(&o, 0, sizeof o);
    o.optim = wgt_optimizer_defaults(WGT_OPTIM_ADAMW);
    o.schedule = WGT_LR_CONSTANT;
    return o;
}

wgt_status wgt_trainer_create(wgt_train_model *m, const wgt_trainer_options *o, wgt_trainer **out)
{
    if (!m || !o || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_trainer_create: NULL argument");
    *out = NULL;
    if (o->clip_norm < 0) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "clip norm %g: give a value > 0, or 0 for none", o->clip_norm);
    wgt_trainer *t = calloc(1, sizeof *t);
    if (!t) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    t->m = m, t->o = *o, t->n = m->n_params;
    t->params = calloc((size_t)t->n, sizeof *t->params);
    t->grads = calloc((size_t)t->n, sizeof *t->grads);
    wgt_status st = (!t->params || !t->grads) ? wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory") : WGT_OK;
    for (int i = 0; i < t->n && !st; i++) {
        t->params[i] = *m->params[i].slot;
        st = wgt_tensor_set_requires_grad(t->params[i], 1);
    }
    if (!st) st = wgt_optimizer_create(m->ctx, &o->optim, t->params, t->n, &t->opt);
    if (st) {
        wgt_trainer_free(t);
        return st;
    }
    *out = t;
    return WGT_OK;
}

void wgt_trainer_free(wgt_trainer *t)
{
    if (!t) return;
    for (int i = 0; t->grads && i < t->n; i++) wgt_tensor_free(t->grads[i]);
    wgt_optimizer_free(t->opt);
    free(t->params);
    free(t->grads);
    free(t);
}

/* ids [B, L + 1] -> device inputs [B, L] and targets [B, L] (i32). */
static wgt_status split_batch(wgt_context *ctx, const int32_t *ids, int64_t B, int64_t L, int64_t vocab,
                              wgt_tensor **in, wgt_tensor **tg)
{
    int32_t *a = wgt_malloc_array((size_t)(B * L), sizeof *a), *b = wgt_malloc_array((size_t)(B * L), sizeof *b);
    wgt_status st = (!a || !b) ? wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for a batch") : WGT_OK;
    for (int64_t r = 0; !st && r < B; r++)
        for (int64_t i = 0; i <= L; i++) {
            int32_t v = ids[r * (L + 1) + i];
            if (v < 0 || v >= vocab) {
                st = wgt_error(WGT_ERR_INVALID_ARGUMENT, "batch row %lld: id %d is outside the vocabulary of %lld",
                               (long long)r, v, (long long)vocab);
                break;
            }
            if (i < L) a[r * L + i] = v;
            if (i > 0) b[r * L + i - 1] = v;
        }
    int64_t shape[2] = {B, L};
    *in = *tg = NULL;
    if (!st) st = wgt_tensor_from_host(ctx, WGT_I32, 2, shape, a, in);
    if (!st) st = wgt_tensor_from_host(ctx, WGT_I32, 2, shape, b, tg);
    free(a);
    free(b);
    return st;
}

wgt_status wgt_trainer_step(wgt_trainer *t, const int32_t *ids, int64_t B, int64_t L, double *loss_out)
{
    if (!t || !ids || B < 1 || L < 1) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_trainer_step: bad argument");
    wgt_tensor *in, *tg, *loss = NULL, *norm = NULL;
    wgt_status st = split_batch(t->m->ctx, ids, B, L, t->m->cfg.vocab, &in, &tg);
    if (st) return st;
    for (int i = 0; i < t->n; i++) {
        wgt_tensor_zero_grad(t->params[i]);
        wgt_tensor_free(t->grads[i]), t->grads[i] = NULL;
    }
    int was = wgt_grad_mode_get();
    wgt_grad_mode_set(1);
    st = wgt_train_loss(t->m, in, tg, &loss, NULL);
    wgt_grad_mode_set(was);
    if (!st) st = wgt_backward(loss, NULL, 0);
    for (int i = 0; i < t->n && !st; i++) st = wgt_tensor_grad(t->params[i], &t->grads[i]);
    t->last_norm = -1;
    if (!st && t->o.clip_norm > 0) st = wgt_clip_grad_norm(t->grads, t->n, t->o.clip_norm, &norm);
    /* the schedule counts the steps already taken, as transformers' LambdaLR does */
    int64_t taken = wgt_optimizer_steps(t->opt);
    t->last_lr = wgt_lr_at(t->o.schedule, t->o.optim.lr, t->o.warmup, t->o.total_steps, taken);
    if (!st) st = wgt_optimizer_set_lr(t->opt, t->last_lr);
    if (!st) st = wgt_optimizer_step(t->opt, (const wgt_tensor *const *)t->grads);
    float v = NAN;
    if (!st && loss_out) st = wgt_tensor_to_host(loss, &v, sizeof v);
    if (!st && norm) {
        float nv;
        if (!wgt_tensor_to_host(norm, &nv, sizeof nv)) t->last_norm = nv;
    }
    if (loss_out) *loss_out = v;
    wgt_tensor_free(norm);
    wgt_tensor_free(loss);
    wgt_tensor_free(in);
    wgt_tensor_free(tg);
    return st;
}

wgt_status wgt_trainer_eval(wgt_trainer *t, const int32_t *ids, int64_t B, int64_t L, double *loss_out)
{
    if (!t || !ids || !loss_out || B < 1 || L < 1)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_trainer_eval: bad argument");
    wgt_tensor *in, *tg, *loss = NULL;
    wgt_status st = split_batch(t->m->ctx, ids, B, L, t->m->cfg.vocab, &in, &tg);
    if (st) return st;
    int was = wgt_grad_mode_get();
    wgt_grad_mode_set(0);
    st = wgt_train_loss(t->m, in, tg, &loss, NULL);
    wgt_grad_mode_set(was);
    float v = NAN;
    if (!st) st = wgt_tensor_to_host(loss, &v, sizeof v);
    *loss_out = v;
    wgt_tensor_free(loss);
    wgt_tensor_free(in);
    wgt_tensor_free(tg);
    return st;
}

int64_t wgt_trainer_steps(const wgt_trainer *t) { return t ? wgt_optimizer_steps(t->opt) : 0; }
double wgt_trainer_last_lr(const wgt_trainer *t) { return t ? t->last_lr : 0; }
double wgt_trainer_last_grad_norm(const wgt_trainer *t) { return t ? t->last_norm : -1; }

/* ---- checkpoints ------------------------------------------------------------------------------ */

/* Remove a directory this code wrote (plain files only, then the directory). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[2200];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

wgt_status wgt_trainer_save(wgt_trainer *t, const char *dir, const char *tokenizer_from, const char *state_json)
{
    if (!t || !dir) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_trainer_save: NULL argument");
    /* everything goes to DIR.tmp first; DIR is replaced only once the new one is complete, so an
     * interrupted run keeps its last complete checkpoint */
    char tmp[1100], old[1100], path[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp", dir);
    snprintf(old, sizeof old, "%s.old", dir);
    remove_dir(tmp);
    wgt_status st = wgt_train_model_save(t->m, tmp, tokenizer_from);
    snprintf(path, sizeof path, "%s/optimizer.safetensors", tmp);
    if (!st) st = wgt_optimizer_save(t->opt, path);
    if (!st) {
        cJSON *j = state_json ? cJSON_Parse(state_json) : cJSON_CreateObject();
        if (!j) j = cJSON_CreateObject();
        cJSON_DeleteItemFromObject(j, "step");
        cJSON_AddNumberToObject(j, "step", (double)wgt_optimizer_steps(t->opt));
        char *text = cJSON_Print(j);
        cJSON_Delete(j);
        snprintf(path, sizeof path, "%s/trainer.json", tmp);
        FILE *f = text ? fopen(path, "wb") : NULL;
        if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0 || fflush(f) || fsync(fileno(f)))
            st = wgt_error(WGT_ERR_IO, "%s: cannot write the checkpoint state: %s", path, strerror(errno));
        if (f) fclose(f);
        free(text);
    }
    if (st) {
        remove_dir(tmp);
        return st;
    }
    remove_dir(old);
    struct stat sb;
    if (stat(dir, &sb) == 0 && rename(dir, old))
        st = wgt_error(WGT_ERR_IO, "%s: cannot move the previous checkpoint aside: %s", dir, strerror(errno));
    if (!st && rename(tmp, dir)) {
        st = wgt_error(WGT_ERR_IO, "%s: cannot rename the new checkpoint into place: %s", dir, strerror(errno));
        rename(old, dir);
    }
    if (!st) remove_dir(old);
    return st;
}

wgt_status wgt_trainer_load(wgt_trainer *t, const char *dir)
{
    if (!t || !dir) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_trainer_load: NULL argument");
    char path[1200];
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    return wgt_optimizer_load(t->opt, path);
}
