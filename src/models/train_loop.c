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
#include <fcntl.h>

#include "core/error.h"
#include "io/json_util.h"
#include "autograd/optim_internal.h"
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
    int64_t steps;       /* steps run, skipped ones included (the schedule's and the data's count) */
    double scale;        /* the loss scale (1: none) */
    int scaled;          /* dynamic loss scaling on (f16, a loss_scale given, or WGT_MATMUL_TC) */
    int64_t good;        /* scaled: steps since the scale last changed without an overflow */
    int skipped;         /* the last step overflowed (scaled) and updated nothing */
    /* o.graph: the step captured once (its second; the first makes the optimizer's state) and
     * replayed; the batch and the step count its inputs, the loss and norm its outputs */
    wgt_graph *g;
    int g_step;          /* the step scalar */
    int64_t gB, gL;
    wgt_tensor *g_in, *g_tg, *g_loss, *g_norm;
};

#define SCALE_GROWTH_INTERVAL 2000 /* torch.amp.GradScaler's defaults: x2 after 2000 good steps, x0.5 on overflow */

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
    if (o->dtype != WGT_F32 && o->dtype != WGT_F16 && o->dtype != WGT_BF16)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "training dtype %s: give f32, bf16 or f16", wgt_dtype_name(o->dtype));
    if (!(o->dropout >= 0 && o->dropout < 1))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "dropout %g: give a probability in [0, 1)", o->dropout);
    if (!(o->min_lr_ratio >= 0 && o->min_lr_ratio <= 1))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "min lr ratio %g: give a fraction of the lr in [0, 1]", o->min_lr_ratio);
    if (o->loss_scale < 0 || !isfinite(o->loss_scale))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "loss scale %g: give a value > 0 (or 0 for 65536)", o->loss_scale);
    wgt_trainer *t = calloc(1, sizeof *t);
    if (!t) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    t->m = m, t->o = *o, t->n = m->n_params;
    /* WGT_MATMUL_TC's and WGT_MATMUL_TCD's tiles take f16 operands whatever the dtype: a mean
     * loss's gradients over B x L targets (softmax / (B L), ~1e-8 at the default model's 64 x 511)
     * would flush to zero there, so the loss is scaled as f16's is; a power of 2, so f32 sums see
     * the same values */
    const char *tc = getenv("WGT_MATMUL_TC"), *tcd = getenv("WGT_MATMUL_TCD");
    int half_tiles = (tc && *tc && strcmp(tc, "0")) || (tcd && *tcd && strcmp(tcd, "0"));
    t->scaled = o->dtype == WGT_F16 || o->loss_scale > 0 || half_tiles;
    t->scale = t->scaled ? (o->loss_scale > 0 ? o->loss_scale : 65536.0) : 1.0;
    t->params = calloc((size_t)t->n, sizeof *t->params);
    t->grads = calloc((size_t)t->n, sizeof *t->grads);
    wgt_status st = (!t->params || !t->grads) ? wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory") : WGT_OK;
    for (int i = 0; i < t->n && !st; i++) {
        t->params[i] = *m->params[i].slot;
        st = wgt_tensor_set_requires_grad(t->params[i], 1);
    }
    if (!st) st = wgt_optimizer_create(m->ctx, &o->optim, t->params, t->n, &t->opt);
    for (int i = 0; i < t->n && !st && o->no_decay_1d; i++) {
        if (wgt_tensor_ndim(t->params[i]) < 2) st = wgt_optimizer_set_weight_decay(t->opt, i, 0);
    }
    if (st) {
        wgt_trainer_free(t);
        return st;
    }
    *out = t;
    return WGT_OK;
}

static void graph_drop(wgt_trainer *t)
{
    wgt_graph_free(t->g);
    t->g = NULL;
    wgt_tensor *keep[4] = {t->g_in, t->g_tg, t->g_loss, t->g_norm};
    for (int i = 0; i < 4; i++) wgt_tensor_free(keep[i]);
    t->g_in = t->g_tg = t->g_loss = t->g_norm = NULL;
}

void wgt_trainer_free(wgt_trainer *t)
{
    if (!t) return;
    graph_drop(t);
    for (int i = 0; t->grads && i < t->n; i++) wgt_tensor_free(t->grads[i]);
    wgt_optimizer_free(t->opt);
    free(t->params);
    free(t->grads);
    free(t);
}

/* The step's loss: with a half dtype the model's parameter slots hold half copies of the f32
 * masters for the forward (recorded casts: the gradients reach the masters), with dropout the
 * step's generator; the model is as before afterwards. */
static wgt_status forward_loss(wgt_trainer *t, const wgt_tensor *in, const wgt_tensor *tg, wgt_tensor **loss)
{
    wgt_train_model *m = t->m;
    wgt_status st = WGT_OK;
    int mixed = t->o.dtype == WGT_F16 || t->o.dtype == WGT_BF16, cast = 0;
    if (t->o.dropout > 0) {
        /* splitmix64 of (seed, step): a generator per step, so a resumed run draws the same masks */
        uint64_t z = t->o.dropout_seed + 0x9E3779B97F4A7C15ull * (uint64_t)(t->steps + 1);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull, z = (z ^ (z >> 27)) * 0x94D049BB133111EBull, z ^= z >> 31;
        st = wgt_generator_create(z, &m->dropout_gen);
        m->dropout = t->o.dropout;
        m->dropout_blocks_only = t->o.dropout_blocks_only;
    }
    for (; mixed && cast < t->n && !st; cast++) {
        wgt_tensor *h;
        if (!(st = wgt_tensor_cast(t->params[cast], t->o.dtype, &h))) *m->params[cast].slot = h;
        else break;
    }
    m->compute = mixed ? t->o.dtype : WGT_F32;
    if (!st) st = wgt_train_loss(m, in, tg, loss, NULL);
    for (int i = 0; i < cast; i++) { /* the tape keeps what it needs of the half copies */
        wgt_tensor_free(*m->params[i].slot);
        *m->params[i].slot = t->params[i];
    }
    m->compute = WGT_F32;
    m->dropout = 0;
    wgt_generator_free(m->dropout_gen);
    m->dropout_gen = NULL;
    return st;
}

/* Loss scaling (f16, or f16 matmul operands): the gradients came scaled by t->scale. Any inf/NaN:
 * skip the update and halve the scale; otherwise divide them by the scale (and double it after
 * SCALE_GROWTH_INTERVAL good steps). One sync: the sum of every gradient's largest magnitude is finite only when all of them are. */
static wgt_status unscale(wgt_trainer *t)
{
    wgt_tensor *total = NULL;
    wgt_status st = WGT_OK;
    for (int i = 0; i < t->n && !st; i++) {
        if (!t->grads[i]) continue;
        wgt_tensor *m = NULL, *s = NULL;
        st = wgt_reduce(WGT_REDUCE_NORM_INF, t->grads[i], 0, 0, 0, &m);
        if (!st && total) st = wgt_binary(WGT_BINARY_ADD, total, m, &s);
        if (!st && total) wgt_tensor_free(total), wgt_tensor_free(m), total = s;
        else if (!st) total = m;
        else wgt_tensor_free(m);
    }
    float v = 0;
    if (!st && total) st = wgt_tensor_to_host(total, &v, sizeof v);
    wgt_tensor_free(total);
    if (st) return st;
    if (!isfinite(v)) {
        t->skipped = 1;
        t->scale *= 0.5;
        t->good = 0;
        return WGT_OK;
    }
    wgt_tensor *inv = NULL;
    st = wgt_full(t->m->ctx, WGT_F32, 0, NULL, 1.0 / t->scale, &inv);
    for (int i = 0; i < t->n && !st; i++) {
        wgt_tensor *u;
        if (!t->grads[i] || (st = wgt_binary(WGT_BINARY_MUL, t->grads[i], inv, &u))) continue;
        wgt_tensor_free(t->grads[i]);
        t->grads[i] = u;
    }
    wgt_tensor_free(inv);
    if (!st && ++t->good >= SCALE_GROWTH_INTERVAL) t->scale *= 2, t->good = 0;
    return st;
}

/* ids [B, L + 1] -> device inputs [B, L] and targets [B, L] (i32). With *pads (evaluation), -1
 * ids are padding: the input 0, the target -1 (ignored), *pads set when there are any. */
static wgt_status split_batch(wgt_context *ctx, const int32_t *ids, int64_t B, int64_t L, int64_t vocab,
                              wgt_tensor **in, wgt_tensor **tg, int *pads)
{
    int32_t *a = wgt_malloc_array((size_t)(B * L), sizeof *a), *b = wgt_malloc_array((size_t)(B * L), sizeof *b);
    wgt_status st = (!a || !b) ? wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for a batch") : WGT_OK;
    for (int64_t r = 0; !st && r < B; r++)
        for (int64_t i = 0; i <= L; i++) {
            int32_t v = ids[r * (L + 1) + i];
            if (pads && v == -1 && i > 0 && ids[r * (L + 1) + L] == -1) { /* padding: after every counted target */
                for (int64_t j = i; j <= L; j++)
                    if (ids[r * (L + 1) + j] != -1) {
                        st = wgt_error(WGT_ERR_INVALID_ARGUMENT, "batch row %lld: padding (-1) before id %d: "
                                       "only a row's tail may be padding", (long long)r, ids[r * (L + 1) + j]);
                        break;
                    }
                if (st) break;
                *pads = 1;
                if (i < L) a[r * L + i] = 0;
                b[r * L + i - 1] = -1;
                continue;
            }
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

/* The lr after t->steps steps: the schedule's peak optim.lr, floored at min_lr_ratio of it. */
static double step_lr(const wgt_trainer *t)
{
    optim_schedule sc = {1, t->o.schedule, t->o.optim.lr, t->o.warmup, t->o.total_steps, t->o.min_lr_ratio};
    return optim_schedule_lr(&sc, t->steps);
}

/* Everything a step does on the device: zero_grad, forward, loss, backward, unscaling, clipping,
 * the lr, the update. *loss and *norm (clipping's total, or NULL) are the caller's. */
static wgt_status step_body(wgt_trainer *t, const wgt_tensor *in, const wgt_tensor *tg, wgt_tensor **loss,
                            wgt_tensor **norm)
{
    for (int i = 0; i < t->n; i++) {
        wgt_tensor_zero_grad(t->params[i]);
        wgt_tensor_free(t->grads[i]), t->grads[i] = NULL;
    }
    int was = wgt_grad_mode_get();
    wgt_grad_mode_set(1);
    wgt_status st = forward_loss(t, in, tg, loss);
    wgt_grad_mode_set(was);
    if (!st) {
        wgt_tensor *go = NULL;
        if (t->scaled) st = wgt_full(t->m->ctx, WGT_F32, 0, NULL, t->scale, &go);
        if (!st) st = wgt_backward(*loss, go, 0);
        wgt_tensor_free(go);
    }
    for (int i = 0; i < t->n && !st; i++) st = wgt_tensor_grad(t->params[i], &t->grads[i]);
    t->last_norm = -1;
    t->skipped = 0;
    if (!st && t->scaled) st = unscale(t);
    if (!st && !t->skipped && t->o.clip_norm > 0) st = wgt_clip_grad_norm(t->grads, t->n, t->o.clip_norm, norm);
    /* the schedule counts the steps already run, as transformers' LambdaLR does */
    t->last_lr = step_lr(t);
    if (!st) st = wgt_optimizer_set_lr(t->opt, t->last_lr);
    if (!st && !t->skipped) st = wgt_optimizer_step(t->opt, (const wgt_tensor *const *)t->grads);
    return st;
}

/* o.graph: can this step replay (or capture) the captured one? Loss scaling reads the overflow
 * flag on the host and dropout draws from a generator per step: those steps stay eager. */
static int graph_eligible(const wgt_trainer *t) { return t->o.graph && !t->scaled && t->o.dropout == 0 && t->steps >= 1; }

/* The step through the graph: captured on its first call (run eagerly while recorded), replayed
 * after with the batch copied into the captured one's storage and the step scalar set; a batch
 * of another shape captures again. */
static wgt_status graph_step(wgt_trainer *t, wgt_tensor *in, wgt_tensor *tg, wgt_tensor **loss, wgt_tensor **norm)
{
    wgt_context *ctx = t->m->ctx;
    const wgt_tensor *inputs[2] = {in, tg};
    wgt_status st;
    if (t->g && (t->gB != wgt_tensor_shape(in)[0] || t->gL != wgt_tensor_shape(in)[1])) graph_drop(t);
    if (!t->g) {
        optim_schedule sc = {1, t->o.schedule, t->o.optim.lr, t->o.warmup, t->o.total_steps, t->o.min_lr_ratio};
        optim_set_schedule(t->opt, &sc);
        if ((st = wgt_graph_begin(ctx, 2, inputs))) return st;
        wgt_status bs = wgt_graph_scalar(ctx, "step", WGT_GRAPH_STEP, wgt_optimizer_steps(t->opt) + 1, &t->g_step);
        wgt_tensor *l = NULL, *nm = NULL;
        if (!bs) bs = step_body(t, in, tg, &l, &nm);
        st = wgt_graph_end(ctx, &t->g);
        optim_set_schedule(t->opt, NULL);
        if (!st) st = bs;
        if (st) {
            wgt_tensor_free(l), wgt_tensor_free(nm);
            graph_drop(t);
            return st;
        }
        t->gB = wgt_tensor_shape(in)[0], t->gL = wgt_tensor_shape(in)[1];
        t->g_in = wgt_tensor_ref(in), t->g_tg = wgt_tensor_ref(tg), t->g_loss = l, t->g_norm = nm;
    } else {
        if ((st = wgt_graph_set_scalar(t->g, t->g_step, wgt_optimizer_steps(t->opt) + 1)) ||
            (st = wgt_graph_replay(t->g, 2, inputs)))
            return st;
        optim_count_replay(t->opt);
        t->last_lr = step_lr(t);
        t->last_norm = -1;
    }
    *loss = wgt_tensor_ref(t->g_loss);
    *norm = t->g_norm ? wgt_tensor_ref(t->g_norm) : NULL;
    return WGT_OK;
}

wgt_status wgt_trainer_step(wgt_trainer *t, const int32_t *ids, int64_t B, int64_t L, double *loss_out)
{
    if (!t || !ids || B < 1 || L < 1) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_trainer_step: bad argument");
    wgt_tensor *in, *tg, *loss = NULL, *norm = NULL;
    wgt_status st = split_batch(t->m->ctx, ids, B, L, t->m->cfg.vocab, &in, &tg, NULL);
    if (st) return st;
    if (graph_eligible(t)) st = graph_step(t, in, tg, &loss, &norm);
    else st = step_body(t, in, tg, &loss, &norm);
    if (!st) t->steps++;
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
    int pads = 0;
    wgt_status st = split_batch(t->m->ctx, ids, B, L, t->m->cfg.vocab, &in, &tg, &pads);
    if (st) return st;
    int was = wgt_grad_mode_get();
    wgt_grad_mode_set(0);
    st = tm_train_loss(t->m, in, tg, pads ? -1 : WGT_NO_IGNORE_INDEX, &loss, NULL);
    wgt_grad_mode_set(was);
    float v = NAN;
    if (!st) st = wgt_tensor_to_host(loss, &v, sizeof v);
    *loss_out = v;
    wgt_tensor_free(loss);
    wgt_tensor_free(in);
    wgt_tensor_free(tg);
    return st;
}

int64_t wgt_trainer_steps(const wgt_trainer *t) { return t ? t->steps : 0; }
int wgt_trainer_last_skipped(const wgt_trainer *t) { return t ? t->skipped : 0; }
double wgt_trainer_loss_scale(const wgt_trainer *t) { return t ? t->scale : 1; }
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
    /* the caller's state first: nothing is written for a state_json that is not a JSON object */
    cJSON *j = NULL;
    if (state_json) {
        wgt_status js = wgt_json_parse(state_json, strlen(state_json), "wgt_trainer_save: state_json", &j);
        if (js == WGT_ERR_FORMAT) {
            char why[256];
            snprintf(why, sizeof why, "%s", wgt_errmsg());
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s", why);
        }
        if (js) return js;
        if (!cJSON_IsObject(j)) {
            cJSON_Delete(j);
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_trainer_save: state_json is not a JSON object");
        }
    } else if (!(j = cJSON_CreateObject())) {
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "wgt_trainer_save: out of host memory");
    }
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
        cJSON_DeleteItemFromObject(j, "step");
        cJSON_AddNumberToObject(j, "step", (double)t->steps);
        if (t->scaled) {
            cJSON_DeleteItemFromObject(j, "loss_scale");
            cJSON_DeleteItemFromObject(j, "loss_scale_good_steps");
            cJSON_AddNumberToObject(j, "loss_scale", t->scale);
            cJSON_AddNumberToObject(j, "loss_scale_good_steps", (double)t->good);
        }
        char *text = cJSON_Print(j);
        snprintf(path, sizeof path, "%s/trainer.json", tmp);
        FILE *f = text ? fopen(path, "wb") : NULL;
        if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0 || fflush(f) || fsync(fileno(f)))
            st = wgt_error(WGT_ERR_IO, "%s: cannot write the checkpoint state: %s", path, strerror(errno));
        if (f) fclose(f);
        free(text);
    }
    cJSON_Delete(j);
    if (st) {
        remove_dir(tmp);
        return st;
    }
    remove_dir(old);
    struct stat sb;
#if defined(__linux__) && defined(RENAME_EXCHANGE)
    /* one atomic swap: at every instant DIR is a complete checkpoint (the old one, then the new);
     * a kill before the old one (now DIR.tmp) is removed leaves only a stale DIR.tmp */
    if (stat(dir, &sb) == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        remove_dir(tmp);
        return WGT_OK;
    }
#endif
    /* no swap here (or a file system without it): the old one goes aside first; a kill between the
     * two renames leaves it as DIR.old (wgt train --resume DIR says so) */
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
    wgt_status st = wgt_optimizer_load(t->opt, path);
    if (st) return st;
    /* the step count and the loss scale from trainer.json (absent: the optimizer's count) */
    t->steps = wgt_optimizer_steps(t->opt);
    snprintf(path, sizeof path, "%s/trainer.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return WGT_OK;
    char *text = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len > 0 && len < (1L << 30) && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)len + 1)) &&
        fread(text, 1, (size_t)len, f) == (size_t)len)
        text[len] = 0;
    else
        free(text), text = NULL;
    fclose(f);
    if (!text) return wgt_error(WGT_ERR_FORMAT, "%s: empty or unreadable: the checkpoint is damaged", path);
    cJSON *j = NULL;
    st = wgt_json_parse(text, (uint64_t)len, path, &j);
    free(text);
    if (st) return st;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return wgt_error(WGT_ERR_FORMAT, "%s: not a JSON object: the checkpoint is damaged", path);
    }
    const cJSON *s = cJSON_GetObjectItem(j, "step"), *ls = cJSON_GetObjectItem(j, "loss_scale"),
                *lg = cJSON_GetObjectItem(j, "loss_scale_good_steps");
    if (cJSON_IsNumber(s) && s->valuedouble >= 0) t->steps = (int64_t)s->valuedouble;
    if (t->scaled && cJSON_IsNumber(ls) && ls->valuedouble > 0) t->scale = ls->valuedouble;
    if (t->scaled && cJSON_IsNumber(lg) && lg->valuedouble >= 0) t->good = (int64_t)lg->valuedouble;
    cJSON_Delete(j);
    return WGT_OK;
}
