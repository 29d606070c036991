/* Optimizer state as safetensors: one f32 tensor "<i>.<name>" per state buffer of parameter i
 * (the parameter's shape; names as torch's state_dict: momentum_buffer, exp_avg, exp_avg_sq,
 * max_exp_avg_sq, and master for a half parameter's f32 copy) and, in the metadata, everything
 * else a resumed run needs: kind, hyper-parameters printed with 17 significant digits (they read
 * back as the same doubles), the step counts, and each parameter's dtype and shape to check
 * against. The f32 state round-trips exactly, so a resumed run continues bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/optim_internal.h"
#include "core/error.h"

#define OPTIM_FORMAT "wgt.optimizer/1"

static const char *const KIND_NAMES[] = {"sgd", "adam", "adamw"};

/* The name of slot s of a parameter (half: whether it has a master slot), or NULL. */
static const char *slot_name(const wgt_optimizer_options *o, int half, int s)
{
    int slots = wgt_optim_slots(o, half);
    if (s < 0 || s >= slots) return NULL;
    if (half && s == slots - 1) return "master";
    if (o->kind == WGT_OPTIM_SGD) return "momentum_buffer";
    return s == 0 ? "exp_avg" : s == 1 ? "exp_avg_sq" : "max_exp_avg_sq";
}

static void shape_text(const wgt_tensor *p, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < p->l.ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? "," : "", (long long)p->l.shape[d]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* A saved state buffer exists for slot s of parameter i (SGD's momentum only after a step). */
static int slot_saved(const wgt_optimizer *opt, const optim_param *q, int s)
{
    if (!q->state) return 0;
    return !(opt->o.kind == WGT_OPTIM_SGD && strcmp(slot_name(&opt->o, q->half, s), "master") && !q->steps);
}

static wgt_status write_all(const wgt_optimizer *opt, const char *path)
{
    const wgt_optimizer_options *o = &opt->o;
    wgt_st_writer *w;
    wgt_status st = wgt_st_writer_open(path, &w);
    if (st) return st;
    char key[64], val[128];
#define META(k, ...) (snprintf(val, sizeof val, __VA_ARGS__), wgt_st_writer_add_metadata(w, k, val))
    if (!st) st = wgt_st_writer_add_metadata(w, "format", OPTIM_FORMAT);
    if (!st) st = wgt_st_writer_add_metadata(w, "kind", KIND_NAMES[o->kind]);
    if (!st) st = META("lr", "%.17g", o->lr);
    if (!st) st = META("weight_decay", "%.17g", o->weight_decay);
    if (!st) st = META("momentum", "%.17g", o->momentum);
    if (!st) st = META("dampening", "%.17g", o->dampening);
    if (!st) st = META("nesterov", "%d", o->nesterov != 0);
    if (!st) st = META("beta1", "%.17g", o->beta1);
    if (!st) st = META("beta2", "%.17g", o->beta2);
    if (!st) st = META("eps", "%.17g", o->eps);
    if (!st) st = META("amsgrad", "%d", o->amsgrad != 0);
    if (!st) st = META("steps", "%lld", (long long)opt->steps);
    if (!st) st = META("n_params", "%d", opt->n);
    for (int i = 0; i < opt->n && !st; i++) {
        const optim_param *q = &opt->ps[i];
        snprintf(key, sizeof key, "%d.steps", i);
        st = META(key, "%lld", (long long)q->steps);
        snprintf(key, sizeof key, "%d.weight_decay", i);
        if (!st) st = META(key, "%.17g", q->wd);
        snprintf(key, sizeof key, "%d.dtype", i);
        if (!st) st = wgt_st_writer_add_metadata(w, key, wgt_dtype_name(q->p->l.dtype));
        snprintf(key, sizeof key, "%d.shape", i);
        shape_text(q->p, val, sizeof val);
        if (!st) st = wgt_st_writer_add_metadata(w, key, val);
        for (int s = 0; s < q->slots && !st; s++) {
            if (!slot_saved(opt, q, s)) continue;
            snprintf(key, sizeof key, "%d.%s", i, slot_name(o, q->half, s));
            st = wgt_st_writer_add_tensor(w, key, WGT_FTYPE_F32, (uint32_t)q->p->l.ndim, q->p->l.shape);
        }
    }
#undef META
    /* the bytes, in declared order: each state downloaded once, its slots taken apart */
    for (int i = 0; i < opt->n && !st; i++) {
        const optim_param *q = &opt->ps[i];
        if (!q->state) continue;
        int64_t n = wgt_layout_numel(&q->p->l);
        float *all = malloc((size_t)(n * q->slots) * sizeof *all), *one = malloc((size_t)n * sizeof *one);
        st = all && one ? wgt_tensor_to_host(q->state, all, (size_t)(n * q->slots) * sizeof *all)
                        : wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: state of parameter %d", path, i);
        for (int s = 0; s < q->slots && !st; s++) {
            if (!slot_saved(opt, q, s)) continue;
            for (int64_t e = 0; e < n; e++) one[e] = all[e * q->slots + s];
            st = wgt_st_writer_write(w, one, (uint64_t)n * sizeof *one);
        }
        free(all), free(one);
    }
    if (!st) st = wgt_st_writer_finish(w);
    wgt_st_writer_free(w);
    return st;
}

wgt_status wgt_optimizer_save(const wgt_optimizer *opt, const char *path)
{
    if (!opt || !path) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_save: NULL optimizer or path");
    /* the safetensors writer writes through a temporary file renamed at _finish (wgt_output): an
     * interrupted save leaves the previous file whole */
    return write_all(opt, path);
}

/* ---- load ----------------------------------------------------------------------------------- */

static wgt_status meta_num(const wgt_safetensors *f, const char *path, const char *key, double *out)
{
    const char *v = wgt_safetensors_metadata(f, key);
    char *end = NULL;
    if (v) *out = strtod(v, &end);
    if (!v || end == v || *end)
        return wgt_error(WGT_ERR_FORMAT, "%s: metadata '%s' is %s; an optimizer state file written by "
                         "wgt_optimizer_save has it as a number", path, key, v ? "not a number" : "missing");
    return WGT_OK;
}

static wgt_status read_options(const wgt_safetensors *f, const char *path, wgt_optimizer_options *o)
{
    const char *kind = wgt_safetensors_metadata(f, "kind");
    int k = -1;
    for (int i = 0; kind && i < 3; i++)
        if (!strcmp(kind, KIND_NAMES[i])) k = i;
    if (k < 0) return wgt_error(WGT_ERR_FORMAT, "%s: metadata 'kind' is %s, not sgd, adam or adamw", path,
                                kind ? kind : "missing");
    double nesterov = 0, amsgrad = 0;
    wgt_status st = meta_num(f, path, "lr", &o->lr);
    if (!st) st = meta_num(f, path, "weight_decay", &o->weight_decay);
    if (!st) st = meta_num(f, path, "momentum", &o->momentum);
    if (!st) st = meta_num(f, path, "dampening", &o->dampening);
    if (!st) st = meta_num(f, path, "nesterov", &nesterov);
    if (!st) st = meta_num(f, path, "beta1", &o->beta1);
    if (!st) st = meta_num(f, path, "beta2", &o->beta2);
    if (!st) st = meta_num(f, path, "eps", &o->eps);
    if (!st) st = meta_num(f, path, "amsgrad", &amsgrad);
    o->kind = (wgt_optimizer_kind)k;
    o->nesterov = nesterov != 0;
    o->amsgrad = amsgrad != 0;
    if (!st && (st = optim_check_options(o)))
        st = wgt_error(WGT_ERR_FORMAT, "%s: %s", path, wgt_errmsg());
    return st;
}

/* The file's tensor for slot s of parameter i under options o, checked; NULL when it may be
 * absent (SGD's momentum before the first step). */
static wgt_status find_slot(const wgt_safetensors *f, const char *path, const wgt_optimizer_options *o,
                            const optim_param *q, int i, int s, int64_t steps, const wgt_st_tensor **out)
{
    char key[64];
    const char *name = slot_name(o, q->half, s);
    snprintf(key, sizeof key, "%d.%s", i, name);
    *out = wgt_safetensors_find(f, key);
    if (!*out) {
        if (o->kind == WGT_OPTIM_SGD && strcmp(name, "master") && !steps) return WGT_OK;
        return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s' missing (parameter %d's %s state)", path, key, i, name);
    }
    const wgt_st_tensor *t = *out;
    int same = t->type == WGT_FTYPE_F32 && (int)t->n_dims == q->p->l.ndim;
    for (int d = 0; same && d < q->p->l.ndim; d++) same = t->shape[d] == q->p->l.shape[d];
    if (!same)
        return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s' is not f32 of parameter %d's shape", path, key, i);
    return WGT_OK;
}

wgt_status wgt_optimizer_load(wgt_optimizer *opt, const char *path)
{
    if (!opt || !path) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_load: NULL optimizer or path");
    wgt_safetensors *f;
    wgt_status st = wgt_safetensors_open(path, &f);
    if (st) return st;
    const char *fmt = wgt_safetensors_metadata(f, "format");
    wgt_optimizer_options o = opt->o;
    double n_params = 0, steps = 0;
    if (!fmt || strcmp(fmt, OPTIM_FORMAT))
        st = wgt_error(WGT_ERR_FORMAT, "%s: not an optimizer state file (metadata 'format' is %s, not %s)", path,
                       fmt ? fmt : "missing", OPTIM_FORMAT);
    if (!st) st = read_options(f, path, &o);
    if (!st) st = meta_num(f, path, "n_params", &n_params);
    if (!st) st = meta_num(f, path, "steps", &steps);
    if (!st && n_params != opt->n)
        st = wgt_error(WGT_ERR_FORMAT, "%s: state of %.0f parameters; this optimizer has %d (create it over the same "
                       "parameters as the run that saved it)", path, n_params, opt->n);
    /* check everything before changing anything: a bad file leaves the optimizer as it was */
    int64_t *psteps = calloc((size_t)(opt->n ? opt->n : 1), sizeof *psteps);
    double *pwd = calloc((size_t)(opt->n ? opt->n : 1), sizeof *pwd);
    if (!st && (!psteps || !pwd)) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: %d parameters", path, opt->n);
    for (int i = 0; i < opt->n && !st; i++) {
        const optim_param *q = &opt->ps[i];
        char key[64], shape[128];
        snprintf(key, sizeof key, "%d.dtype", i);
        const char *dt = wgt_safetensors_metadata(f, key);
        snprintf(key, sizeof key, "%d.shape", i);
        const char *sh = wgt_safetensors_metadata(f, key);
        shape_text(q->p, shape, sizeof shape);
        if (!dt || !sh || strcmp(dt, wgt_dtype_name(q->p->l.dtype)) || strcmp(sh, shape)) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: parameter %d was %s %s when saved; it is %s %s here", path, i,
                           dt ? dt : "?", sh ? sh : "?", wgt_dtype_name(q->p->l.dtype), shape);
            break;
        }
        double ps = 0;
        snprintf(key, sizeof key, "%d.steps", i);
        if ((st = meta_num(f, path, key, &ps))) break;
        psteps[i] = (int64_t)ps;
        snprintf(key, sizeof key, "%d.weight_decay", i);
        if ((st = meta_num(f, path, key, &pwd[i]))) break;
        if (!(pwd[i] >= 0.0) || !isfinite(pwd[i])) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: metadata '%s' is %g, not a weight decay >= 0", path, key, pwd[i]);
            break;
        }
        for (int s = 0; s < wgt_optim_slots(&o, q->half) && !st && wgt_layout_numel(&q->p->l); s++) {
            const wgt_st_tensor *t;
            st = find_slot(f, path, &o, q, i, s, psteps[i], &t);
        }
    }
    /* apply: new options, then each state rebuilt from the file */
    if (!st) {
        opt->o = o;
        opt->steps = (int64_t)steps;
    }
    for (int i = 0; i < opt->n && !st; i++) {
        optim_param *q = &opt->ps[i];
        q->steps = psteps[i];
        q->wd = pwd[i];
        if ((st = optim_alloc_state(opt, i)) || !q->state) continue;
        int64_t n = wgt_layout_numel(&q->p->l);
        float *all = calloc((size_t)(n * q->slots), sizeof *all);
        if (!all) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: state of parameter %d", path, i);
        for (int s = 0; s < q->slots && !st; s++) {
            const wgt_st_tensor *t;
            if ((st = find_slot(f, path, &o, q, i, s, q->steps, &t)) || !t) continue;
            const unsigned char *src = t->data;
            for (int64_t e = 0; e < n; e++) memcpy(&all[e * q->slots + s], src + e * 4, 4);
        }
        int64_t len = n * q->slots;
        wgt_tensor *fresh = NULL;
        if (!st) st = wgt_tensor_from_host(opt->ctx, WGT_F32, 1, &len, all, &fresh);
        if (!st) {
            wgt_tensor_free(q->state);
            q->state = fresh;
        }
        free(all);
    }
    free(psteps), free(pwd);
    wgt_safetensors_free(f);
    return st;
}
