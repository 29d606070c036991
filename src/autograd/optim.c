/* Optimizers: torch.optim's SGD, Adam and AdamW over explicit gradients, one fused kernel dispatch
 * (src/kernels/autograd_optim.wgsl) per parameter chunk per step; the CPU reference (src/cpu/optim.c) on a
 * CPU context. Clipping, schedules and save/load are in optim_clip.c and optim_io.c.
 *
 * State of parameter i: one f32 tensor [numel * slots], the slots of an element side by side
 * (element e's at e * slots: momentum_buffer | exp_avg, exp_avg_sq[, max_exp_avg_sq], then the f32
 * master of a half parameter), so a chunk of elements is one contiguous range of every binding. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/optim_internal.h"
#include "core/error.h"
#include "ops/ops.h"

wgt_optimizer_options wgt_optimizer_defaults(wgt_optimizer_kind kind)
{
    return (wgt_optimizer_options){.kind = kind, .lr = 1e-3, .weight_decay = kind == WGT_OPTIM_ADAMW ? 1e-2 : 0.0,
                                   .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
}

/* torch.optim's own checks, and the ones that keep the kernel's arithmetic meaningful */
wgt_status optim_check_options(const wgt_optimizer_options *o)
{
    const char *bad = NULL;
    if (o->kind != WGT_OPTIM_SGD && o->kind != WGT_OPTIM_ADAM && o->kind != WGT_OPTIM_ADAMW) bad = "kind";
    else if (!(o->lr >= 0.0) || !isfinite(o->lr)) bad = "lr (must be finite and >= 0)";
    else if (!(o->weight_decay >= 0.0) || !isfinite(o->weight_decay)) bad = "weight_decay (must be >= 0)";
    else if (o->kind == WGT_OPTIM_SGD) {
        if (!(o->momentum >= 0.0) || !isfinite(o->momentum)) bad = "momentum (must be >= 0)";
        else if (!isfinite(o->dampening)) bad = "dampening";
        else if (o->nesterov && (o->momentum <= 0.0 || o->dampening != 0.0))
            bad = "nesterov (needs momentum > 0 and dampening 0, as torch.optim.SGD)";
    } else {
        if (!(o->beta1 >= 0.0 && o->beta1 < 1.0)) bad = "beta1 (must be in [0, 1))";
        else if (!(o->beta2 >= 0.0 && o->beta2 < 1.0)) bad = "beta2 (must be in [0, 1))";
        else if (!(o->eps >= 0.0) || !isfinite(o->eps)) bad = "eps (must be >= 0)";
    }
    if (bad) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "optimizer: bad option %s", bad);
    return WGT_OK;
}

static int is_half(wgt_dtype d) { return d == WGT_F16 || d == WGT_BF16; }

/* A zeroed state tensor for parameter i under the current options; a half parameter's master
 * slot gets its values. */
wgt_status optim_alloc_state(wgt_optimizer *opt, int i)
{
    optim_param *q = &opt->ps[i];
    wgt_tensor_free(q->state);
    q->state = NULL;
    q->slots = wgt_optim_slots(&opt->o, q->half);
    int64_t n = wgt_layout_numel(&q->p->l);
    if (!q->slots || !n) return WGT_OK;
    int64_t len = n * q->slots;
    if (!q->half) return wgt_tensor_zeros(opt->ctx, WGT_F32, 1, &len, &q->state);
    float *host = calloc((size_t)len, sizeof *host);
    uint16_t *bits = malloc((size_t)n * 2);
    wgt_status st = WGT_OK;
    if (!host || !bits) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "optimizer: master weights of parameter %d (%lld elements)",
                                       i, (long long)n);
    if (!st) st = wgt_tensor_to_host(q->p, bits, (size_t)n * 2);
    for (int64_t e = 0; !st && e < n; e++)
        host[e * q->slots + q->slots - 1] =
            (float)(q->p->l.dtype == WGT_F16 ? wgt_cpu_f16_to_f64(bits[e]) : wgt_cpu_bf16_to_f64(bits[e]));
    if (!st) st = wgt_tensor_from_host(opt->ctx, WGT_F32, 1, &len, host, &q->state);
    free(host), free(bits);
    return st;
}

wgt_status wgt_optimizer_create(wgt_context *ctx, const wgt_optimizer_options *opts, wgt_tensor *const *params, int n,
                                wgt_optimizer **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_create: out is NULL");
    *out = NULL;
    if (!ctx || !opts || (n > 0 && !params) || n < 0)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_create: NULL context, options or parameter list");
    wgt_status st = wgt_ctx_check(ctx);
    if (st || (st = optim_check_options(opts))) return st;
    for (int i = 0; i < n; i++) {
        const wgt_tensor *p = params[i];
        if (!p) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "optimizer: parameter %d is NULL", i);
        if (p->st->ctx != ctx)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "optimizer: parameter %d lives on another context", i);
        if (!op_is_float(p->l.dtype))
            return wgt_error(WGT_ERR_DTYPE, "optimizer: parameter %d is %s; parameters must be f32, f16 or bf16", i,
                             wgt_dtype_name(p->l.dtype));
        if (!wgt_layout_is_contiguous(&p->l))
            return wgt_error(WGT_ERR_SHAPE, "optimizer: parameter %d is not contiguous; pass the tensor itself, "
                             "not a strided view (wgt_tensor_contiguous makes a copy the optimizer would not update "
                             "in the original)", i);
        for (int j = 0; j < i; j++) {
            int64_t lo_i, hi_i, lo_j, hi_j;
            op_extent(&p->l, &lo_i, &hi_i);
            op_extent(&params[j]->l, &lo_j, &hi_j);
            if (params[j]->st == p->st && lo_i <= hi_j && lo_j <= hi_i)
                return wgt_error(WGT_ERR_INVALID_ARGUMENT, "optimizer: parameters %d and %d share storage; each "
                                 "element must be updated once a step", j, i);
        }
    }
    wgt_optimizer *opt = calloc(1, sizeof *opt);
    if (!opt || !(opt->ps = calloc((size_t)(n ? n : 1), sizeof *opt->ps))) {
        free(opt);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "optimizer: %d parameters", n);
    }
    opt->ctx = ctx;
    opt->o = *opts;
    opt->n = n;
    for (int i = 0; i < n && !st; i++) {
        opt->ps[i].p = wgt_tensor_ref(params[i]);
        opt->ps[i].half = is_half(params[i]->l.dtype);
        opt->ps[i].wd = opts->weight_decay;
        st = optim_alloc_state(opt, i);
    }
    if (st) {
        wgt_optimizer_free(opt);
        return st;
    }
    *out = opt;
    return WGT_OK;
}

void wgt_optimizer_free(wgt_optimizer *opt)
{
    if (!opt) return;
    for (int i = 0; i < opt->n; i++) {
        wgt_tensor_free(opt->ps[i].p);
        wgt_tensor_free(opt->ps[i].state);
    }
    wgt_tensor_free(opt->dummy);
    free(opt->ps);
    free(opt);
}

wgt_status wgt_optimizer_set_lr(wgt_optimizer *opt, double lr)
{
    if (!opt) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_set_lr: optimizer is NULL");
    if (!(lr >= 0.0) || !isfinite(lr))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_set_lr: lr %g must be finite and >= 0 (a schedule "
                         "may reach 0)", lr);
    opt->o.lr = lr;
    return WGT_OK;
}

wgt_status wgt_optimizer_set_weight_decay(wgt_optimizer *opt, int i, double weight_decay)
{
    if (!opt || i < 0 || i >= opt->n)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_set_weight_decay: no parameter %d (the optimizer "
                         "has %d)", i, opt ? opt->n : 0);
    if (!(weight_decay >= 0.0) || !isfinite(weight_decay))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_set_weight_decay: %g must be finite and >= 0",
                         weight_decay);
    opt->ps[i].wd = weight_decay;
    return WGT_OK;
}

wgt_optimizer_options optim_param_options(const wgt_optimizer *opt, const optim_param *q)
{
    wgt_optimizer_options o = opt->o;
    o.weight_decay = q->wd;
    return o;
}

double wgt_optimizer_lr(const wgt_optimizer *opt) { return opt ? opt->o.lr : 0.0; }
wgt_optimizer_options wgt_optimizer_get_options(const wgt_optimizer *opt)
{
    return opt ? opt->o : wgt_optimizer_defaults(WGT_OPTIM_SGD);
}
int64_t wgt_optimizer_steps(const wgt_optimizer *opt) { return opt ? opt->steps : 0; }
int64_t wgt_optimizer_param_steps(const wgt_optimizer *opt, int i)
{
    return opt && i >= 0 && i < opt->n ? opt->ps[i].steps : 0;
}

/* The slot a state name lives in for parameter q, or -1. */
int optim_slot_of(const wgt_optimizer *opt, const optim_param *q, const char *name)
{
    if (q->half && !strcmp(name, "master")) return q->slots - 1;
    if (opt->o.kind == WGT_OPTIM_SGD) return opt->o.momentum != 0.0 && !strcmp(name, "momentum_buffer") ? 0 : -1;
    if (!strcmp(name, "exp_avg")) return 0;
    if (!strcmp(name, "exp_avg_sq")) return 1;
    if (opt->o.amsgrad && !strcmp(name, "max_exp_avg_sq")) return 2;
    return -1;
}

wgt_status wgt_optimizer_state(const wgt_optimizer *opt, int i, const char *name, wgt_tensor **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_state: out is NULL");
    *out = NULL;
    if (!opt || !name || i < 0 || i >= opt->n)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_state: no parameter %d (the optimizer has %d)", i,
                         opt ? opt->n : 0);
    const optim_param *q = &opt->ps[i];
    int s = optim_slot_of(opt, q, name);
    /* torch makes SGD's momentum buffer on the first step: before it there is none */
    if (s < 0 || !q->state || (opt->o.kind == WGT_OPTIM_SGD && strcmp(name, "master") && !q->steps))
        return wgt_error(WGT_ERR_NOT_FOUND, "optimizer: parameter %d has no state '%s'", i, name);
    /* a strided view of the interleaved state: the parameter's shape, strides times slots */
    wgt_layout l = q->p->l;
    l.dtype = WGT_F32;
    l.offset = s;
    for (int d = 0; d < l.ndim; d++) l.strides[d] *= q->slots;
    return wgt_tensor_new_view(q->state, &l, out);
}

/* ---- the step ---------------------------------------------------------------------------------- */

typedef struct step_uniform {
    wgt_optim_scalars s;
    uint32_t n, off_p, off_g, off_s, kind, flags, slots, pad;
} step_uniform;

static int dt_code(wgt_dtype d) { return d == WGT_F16 ? 1 : d == WGT_BF16 ? 2 : 0; }

double optim_schedule_lr(const optim_schedule *sc, int64_t steps)
{
    double lr = wgt_lr_at(sc->schedule, sc->peak, sc->warmup, sc->total, steps);
    if (sc->min_ratio > 0 && sc->schedule != WGT_LR_CONSTANT && steps >= sc->warmup) {
        double f = wgt_lr_at(sc->schedule, 1.0, sc->warmup, sc->total, steps);
        lr = sc->peak * (sc->min_ratio + (1 - sc->min_ratio) * f);
    }
    return lr;
}

void optim_set_schedule(wgt_optimizer *opt, const optim_schedule *sc)
{
    if (sc) opt->sched = *sc, opt->sched.on = 1;
    else opt->sched.on = 0;
}

void optim_count_replay(wgt_optimizer *opt)
{
    for (int i = 0; i < opt->n; i++) opt->ps[i].steps++;
    opt->steps++;
}

/* A captured step (src/gpu/capture.c): the fields that follow the step count t are tied to a
 * graph scalar of role WGT_GRAPH_STEP whose value is t, recomputed per replay by the reference's
 * own formula. args: lr, beta1, beta2, the field (0 step_size, 1 bc2_sqrt, 2 first, 3 decay, 4
 * lr), weight decay, then a schedule (args[5] > 0: its kind + 1, warmup, total, min ratio; the
 * lr at step t is then the schedule's after t - 1 steps, args[0] its peak). */
static uint32_t step_field(int64_t t, const double *args)
{
    wgt_optimizer_options o = wgt_optimizer_defaults(WGT_OPTIM_ADAM);
    o.lr = args[0], o.beta1 = args[1], o.beta2 = args[2], o.weight_decay = args[4];
    if (args[5] > 0) {
        optim_schedule sc = {1, (wgt_lr_schedule)(int)(args[5] - 1), args[0], (int64_t)args[6], (int64_t)args[7],
                             args[8]};
        o.lr = optim_schedule_lr(&sc, t - 1);
    }
    wgt_optim_scalars s;
    wgt_optim_scalars_make(&o, t, &s);
    const float *f[5] = {&s.step_size, &s.bc2_sqrt, NULL, &s.decay, &s.lr};
    int which = (int)args[3];
    uint32_t u = s.first;
    if (f[which]) memcpy(&u, f[which], 4);
    return u;
}

/* The fields of parameter options po's update at step t that a captured step recomputes: the
 * step's (bias corrections, SGD's first), and, when the optimizer follows a schedule
 * (optim_set_schedule: the trainer's graph), the lr's (step size, decay, SGD's lr). */
static void declare_step_fields(wgt_optimizer *opt, const wgt_optimizer_options *po, int64_t t)
{
    static const uint32_t at[5] = {offsetof(step_uniform, s.step_size), offsetof(step_uniform, s.bc2_sqrt),
                                   offsetof(step_uniform, s.first), offsetof(step_uniform, s.decay),
                                   offsetof(step_uniform, s.lr)};
    const optim_schedule *sc = &opt->sched;
    for (int f = 0; f < (sc->on ? 5 : 3); f++) {
        double args[WGT_PARAM_FN_ARGS] = {sc->on ? sc->peak : po->lr, po->beta1, po->beta2, f, po->weight_decay,
                                          sc->on ? sc->schedule + 1 : 0, (double)sc->warmup, (double)sc->total,
                                          sc->min_ratio, 0};
        wgt_gpu_param_scalar_fn(opt->ctx, at[f], WGT_GRAPH_STEP, t, step_field, args);
    }
}

static wgt_status step_gpu(wgt_optimizer *opt, optim_param *q, const wgt_tensor *g, const wgt_optim_scalars *sc)
{
    wgt_context *ctx = opt->ctx;
    const wgt_optimizer_options *o = &opt->o;
    uint32_t wg = op_workgroup_size(ctx);
    char prelude[128];
    snprintf(prelude, sizeof prelude, "const WG: u32 = %uu;\nconst P_DT: u32 = %du;\nconst G_DT: u32 = %du;\n", wg,
             dt_code(q->p->l.dtype), dt_code(g->l.dtype));
    uint32_t flags = (o->momentum != 0.0) | (o->nesterov ? 2u : 0u) | (o->amsgrad ? 4u : 0u);
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, "autograd_optim", prelude, "main", NULL, 0, &k);
    if (st) return st;
    int64_t n = wgt_layout_numel(&q->p->l);
    /* elements per chunk: every binding (state: slots words an element) within one binding's size,
     * less the alignment slack op_bind may add in front; even, so half words never straddle chunks */
    uint64_t maxb = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    if (maxb < 1024) maxb = 1024; /* below the spec's minimum; keeps the slack subtraction positive */
    uint64_t per = 4u * (uint64_t)(q->slots > 1 ? q->slots : 1);
    int64_t chunk = (int64_t)((maxb - 512) / per) & ~(int64_t)1;
    if (chunk > (int64_t)1 << 30) chunk = (int64_t)1 << 30;
    for (int64_t c0 = 0; c0 < n && !st; c0 += chunk) {
        int64_t cn = n - c0 < chunk ? n - c0 : chunk;
        wgt_binding b[3];
        int64_t bp, bg, bs = 0;
        int64_t p0 = q->p->l.offset + c0, g0 = g->l.offset + c0;
        if ((st = op_bind(q->p, p0, p0 + cn - 1, &b[0], &bp)) || (st = op_bind(g, g0, g0 + cn - 1, &b[1], &bg))) break;
        /* a plain f32 SGD step has no state, but the kernel declares the binding: a word of its own
         * (binding the parameter's buffer twice, writable, would alias), never read or written */
        if (q->state) {
            if ((st = op_bind(q->state, c0 * q->slots, (c0 + cn) * q->slots - 1, &b[2], &bs))) break;
        } else {
            if ((st = op_bind(opt->dummy, 0, 0, &b[2], &bs))) break;
        }
        step_uniform u = {*sc, (uint32_t)cn, (uint32_t)(p0 - bp), (uint32_t)(g0 - bg),
                          (uint32_t)(q->state ? c0 * q->slots - bs : 0), (uint32_t)o->kind, flags,
                          (uint32_t)(q->slots ? q->slots : 1), 0};
        uint64_t units = q->half ? (uint64_t)((p0 - bp + cn - 1) / 2 - (p0 - bp) / 2 + 1) : (uint64_t)cn;
        uint32_t gx, gy;
        op_grid(ctx, (units + wg - 1) / wg, &gx, &gy);
        wgt_optimizer_options po = optim_param_options(opt, q);
        declare_step_fields(opt, &po, q->steps + 1);
        st = wgt_gpu_dispatch(ctx, k, &u, sizeof u, b, 3, gx, gy, 1);
    }
    return st;
}

static wgt_status step_cpu(wgt_optimizer *opt, optim_param *q, const wgt_tensor *g, const wgt_optim_scalars *sc)
{
    int64_t n = wgt_layout_numel(&q->p->l);
    wgt_host_view vp = {0}, vg = {0}, vs = {0};
    float *x = malloc((size_t)n * sizeof *x), *gf = malloc((size_t)n * sizeof *gf);
    wgt_status st = x && gf ? WGT_OK : wgt_error(WGT_ERR_OUT_OF_MEMORY, "optimizer: %lld elements", (long long)n);
    if (!st) st = wgt_host_view_get(q->p, &vp);
    if (!st) st = wgt_host_view_get(g, &vg);
    if (!st && q->state) st = wgt_host_view_get(q->state, &vs);
    if (!st) {
        for (int64_t e = 0; e < n; e++) {
            x[e] = (float)wgt_cpu_load_f(&vp.t, wgt_layout_index(&vp.t.l, e));
            gf[e] = (float)wgt_cpu_load_f(&vg.t, wgt_layout_index(&vg.t.l, e));
        }
        float *state = q->state ? (float *)vs.t.data + vs.t.l.offset : NULL;
        wgt_optimizer_options o = optim_param_options(opt, q);
        wgt_cpu_optim_step(&o, sc, n, q->half ? NULL : x, gf, state, q->slots);
        for (int64_t e = 0; e < n; e++)
            wgt_cpu_store_f(&vp.t, wgt_layout_index(&vp.t.l, e), q->half ? state[e * q->slots + q->slots - 1] : x[e]);
        st = wgt_host_view_put(q->p, &vp);
        if (!st && q->state) st = wgt_host_view_put(q->state, &vs);
    }
    wgt_host_view_free(&vp), wgt_host_view_free(&vg), wgt_host_view_free(&vs);
    free(x), free(gf);
    return st;
}

wgt_status wgt_optimizer_step(wgt_optimizer *opt, const wgt_tensor *const *grads)
{
    if (!opt || (opt->n && !grads))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_optimizer_step: NULL optimizer or gradient list (a "
                         "parameter without gradient is a NULL entry of the list)");
    wgt_status st = wgt_ctx_check(opt->ctx);
    if (st) return st;
    /* every gradient checked before any parameter moves: a bad list changes nothing */
    for (int i = 0; i < opt->n; i++) {
        const wgt_tensor *g = grads[i], *p = opt->ps[i].p;
        if (!g) continue;
        if (g->st->ctx != opt->ctx)
            return wgt_ctx_error(opt->ctx, WGT_ERR_INVALID_ARGUMENT, "optimizer step: gradient %d lives on another "
                                 "context than its parameter", i);
        if (g->l.ndim != p->l.ndim || memcmp(g->l.shape, p->l.shape, sizeof(int64_t) * (size_t)p->l.ndim))
            return wgt_ctx_error(opt->ctx, WGT_ERR_SHAPE, "optimizer step: gradient %d does not have its parameter's "
                                 "shape", i);
        if (g->l.dtype != WGT_F32 && g->l.dtype != p->l.dtype)
            return wgt_ctx_error(opt->ctx, WGT_ERR_DTYPE, "optimizer step: gradient %d is %s; it must be f32 or its "
                                 "parameter's dtype (%s)", i, wgt_dtype_name(g->l.dtype), wgt_dtype_name(p->l.dtype));
    }
    if (!wgt_gpu_runs_reference(opt->ctx) && !opt->dummy) {
        int64_t one = 1;
        if ((st = wgt_tensor_zeros(opt->ctx, WGT_F32, 1, &one, &opt->dummy))) return st;
    }
    for (int i = 0; i < opt->n && !st; i++) {
        optim_param *q = &opt->ps[i];
        if (!grads[i] || !wgt_layout_numel(&q->p->l)) {
            if (grads[i]) q->steps++;
            continue;
        }
        /* a gradient sharing the parameter's storage would be bound read-only beside the writable
         * parameter in one dispatch, which WebGPU refuses: such a gradient is copied first */
        wgt_tensor *g = NULL;
        if ((st = grads[i]->st == q->p->st ? wgt_tensor_copy(grads[i], &g) : wgt_tensor_contiguous(grads[i], &g))) break;
        wgt_optim_scalars sc;
        wgt_optimizer_options po = optim_param_options(opt, q);
        wgt_optim_scalars_make(&po, q->steps + 1, &sc);
        st = wgt_gpu_runs_reference(opt->ctx) ? step_cpu(opt, q, g, &sc) : step_gpu(opt, q, g, &sc);
        wgt_tensor_free(g);
        if (!st) q->steps++, q->p->st->version++;
    }
    if (!st) opt->steps++;
    return st;
}
