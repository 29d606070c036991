/* Optimizers (src/autograd/optim*.c, src/kernels/autograd_optim*.wgsl, reference src/cpu/optim.c):
 *  1. The CPU reference (a CPU context through the public API) against torch.optim's algorithms
 *     written out here in double precision from its documented pseudo-code: SGD plain, momentum
 *     with dampening, nesterov with weight decay; Adam with L2 decay and amsgrad; AdamW; 4 steps,
 *     one parameter skipped at one step. Tolerance: 2e-6 relative + 1e-7 absolute, the f32
 *     rounding of each op accumulated over 4 steps.
 *  2. The GPU kernels against the CPU reference: same configurations, f32 / f16 / bf16 parameters
 *     (f32 masters), f32 and half gradients, odd sizes, a half parameter at an odd element offset,
 *     6 steps with skipped gradients. Parameters and state within 1e-5 relative + 1e-6 absolute:
 *     WGSL allows FMA contraction and does not round sqrt and division correctly (2.5 ulp), a few
 *     ulps a step; a half parameter's copy within one unit of its rounding (its master may sit
 *     either side of a rounding boundary).
 *  3. Chunked dispatches (binding limit lowered) give the same bits as one dispatch.
 *  4. torch's own results (tests/fixtures/optim, tools/make_optim_fixtures.py, torch 2.11 CPU f32,
 *     foreach=False): parameters after each of 5 steps and the final state, within 1e-5 relative
 *     + 1e-6 absolute (torch's vectorised CPU kernels fuse some operations into FMAs).
 *  5. clip_grad_norm: total and scaled gradients against a double computation, above and below
 *     max_norm, inf and NaN gradients, zeros, NULL entries, half gradients, 150 gradients, on both
 *     contexts and against torch's fixtures.
 *  6. Schedules at key steps against values computed from transformers' formulas.
 *  7. Save -> load -> continue equals an uninterrupted run bit for bit (every kind, half
 *     parameters, learning rates changed by a schedule, a parameter's own weight decay); bad files
 *     and bad arguments are statuses.
 *  8. A parameter's own weight decay (torch's param groups) gives the bits of an optimizer created
 *     with that decay. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu/optim.h"
#include "ops/ops.h"
#include "support/check.h"

static wgt_context *gpu, *cpu;

/* ---- data ------------------------------------------------------------------------------------ */

static uint64_t rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static wgt_tensor *upload(wgt_context *ctx, wgt_dtype dt, int64_t n, const float *v)
{
    void *raw = malloc((size_t)(n ? n : 1) * 4);
    wgt_cpu_tensor h = wgt_cpu_tensor_make(raw, dt, 1, &n);
    for (int64_t i = 0; i < n; i++) wgt_cpu_store_f(&h, i, v[i]);
    wgt_tensor *t;
    MUST(wgt_tensor_from_host(ctx, dt, 1, &n, raw, &t));
    free(raw);
    return t;
}

static double *values(const wgt_tensor *t)
{
    int64_t n = wgt_tensor_numel(t);
    wgt_dtype dt = wgt_tensor_dtype(t);
    void *raw = malloc((size_t)(n ? n : 1) * 4);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    MUST(wgt_tensor_to_host(t, raw, (size_t)n * wgt_dtype_size(dt)));
    wgt_cpu_tensor h = wgt_cpu_tensor_make(raw, dt, 1, &n);
    for (int64_t i = 0; i < n; i++) v[i] = wgt_cpu_load_f(&h, i);
    free(raw);
    return v;
}

static double half_ulp(wgt_dtype dt, double v)
{
    int e;
    frexp(fabs(v), &e);
    if (dt == WGT_F16 && fabs(v) < 6.2e-5) return ldexp(1, -24);
    return ldexp(1, e - 1 - (dt == WGT_F16 ? 10 : dt == WGT_BF16 ? 7 : 23));
}

/* worst |a - b| / (atol + rtol |b|) over n values (NaN where both are NaN counts as equal) */
static double worst(const double *a, const double *b, int64_t n, double atol, double rtol)
{
    double w = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i])) continue;
        double d = a[i] == b[i] ? 0 : fabs(a[i] - b[i]) / (atol + rtol * fabs(b[i]));
        if (!(d <= w)) w = d;
    }
    return w;
}

/* ---- runs through the public API -------------------------------------------------------------- */

enum { NP = 3, MAXSTEPS = 8, NSTATE = 5 };
static const int64_t SIZES[NP] = {1037, 3, 64};
static const char *const STATES[NSTATE] = {"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "master"};
static float init[NP][1037], grads[MAXSTEPS][NP][1037];

static void make_data(void)
{
    static const float scale[MAXSTEPS] = {1.0f, 3.0f, 0.5f, 2.0f, 0.25f, 1.5f, 0.7f, 4.0f};
    for (int i = 0; i < NP; i++)
        for (int64_t e = 0; e < SIZES[i]; e++) init[i][e] = frand();
    for (int k = 0; k < MAXSTEPS; k++)
        for (int i = 0; i < NP; i++)
            for (int64_t e = 0; e < SIZES[i]; e++) grads[k][i][e] = frand() * scale[k];
}

/* parameter 2 has no gradient at step 2 (1-based), parameter 1 none at step 4 */
static int skipped(int step, int i) { return (i == 2 && step == 2) || (i == 1 && step == 4); }

typedef struct result {
    double *p[NP];
    double *s[NP][NSTATE];
    int64_t steps[NP];
} result;

static void result_free(result *r)
{
    for (int i = 0; i < NP; i++) {
        free(r->p[i]);
        for (int s = 0; s < NSTATE; s++) free(r->s[i][s]);
    }
    memset(r, 0, sizeof *r);
}

/* The parameters: parameter 1 is a view at element offset 1 of a larger tensor (an odd offset
 * for half words). */
static void make_params(wgt_context *ctx, wgt_dtype pdt, wgt_tensor **p)
{
    for (int i = 0; i < NP; i++) {
        if (i != 1) {
            p[i] = upload(ctx, pdt, SIZES[i], init[i]);
            continue;
        }
        float big[8] = {9.0f, init[1][0], init[1][1], init[1][2], -9.0f};
        wgt_tensor *all = upload(ctx, pdt, 5, big);
        MUST(wgt_tensor_narrow(all, 0, 1, SIZES[1], &p[i]));
        wgt_tensor_free(all);
    }
}

static void collect(const wgt_optimizer *opt, wgt_tensor *const *p, result *r)
{
    for (int i = 0; i < NP; i++) {
        r->p[i] = values(p[i]);
        r->steps[i] = wgt_optimizer_param_steps(opt, i);
        for (int s = 0; s < NSTATE; s++) {
            wgt_tensor *t = NULL;
            if (wgt_optimizer_state(opt, i, STATES[s], &t) == WGT_OK) {
                wgt_tensor *c;
                MUST(wgt_tensor_contiguous(t, &c));
                r->s[i][s] = values(c);
                wgt_tensor_free(c);
            }
            wgt_tensor_free(t);
        }
    }
}

/* Steps [from, to) of a run over existing parameters; lr from a cosine schedule when sched. */
static void steps(wgt_optimizer *opt, wgt_context *ctx, wgt_dtype gdt, int from, int to, int sched)
{
    for (int k = from; k < to; k++) {
        const wgt_tensor *g[NP] = {0};
        wgt_tensor *owned[NP] = {0};
        for (int i = 0; i < NP; i++)
            if (!skipped(k + 1, i)) g[i] = owned[i] = upload(ctx, gdt, SIZES[i], grads[k][i]);
        if (sched) MUST(wgt_optimizer_set_lr(opt, wgt_lr_at(WGT_LR_COSINE, 0.05, 2, 8, k)));
        MUST(wgt_optimizer_step(opt, g));
        for (int i = 0; i < NP; i++) wgt_tensor_free(owned[i]);
    }
}

static void run(wgt_context *ctx, const wgt_optimizer_options *o, wgt_dtype pdt, wgt_dtype gdt, int n_steps,
                result *r)
{
    wgt_tensor *p[NP];
    make_params(ctx, pdt, p);
    wgt_optimizer *opt;
    MUST(wgt_optimizer_create(ctx, o, p, NP, &opt));
    steps(opt, ctx, gdt, 0, n_steps, 0);
    collect(opt, p, r);
    wgt_optimizer_free(opt);
    for (int i = 0; i < NP; i++) wgt_tensor_free(p[i]);
}

/* ---- configurations ---------------------------------------------------------------------------- */

typedef struct config {
    const char *name;
    wgt_optimizer_options o;
} config;

static config configs[7];
static int n_configs;

static void make_configs(void)
{
    wgt_optimizer_options o = wgt_optimizer_defaults(WGT_OPTIM_SGD);
    o.lr = 0.1;
    configs[n_configs++] = (config){"sgd_plain", o};
    o.lr = 0.05, o.momentum = 0.9, o.dampening = 0.3;
    configs[n_configs++] = (config){"sgd_momentum_dampening", o};
    o.momentum = 0.8, o.dampening = 0, o.nesterov = 1, o.weight_decay = 0.01;
    configs[n_configs++] = (config){"sgd_nesterov_wd", o};
    o = wgt_optimizer_defaults(WGT_OPTIM_ADAM);
    o.lr = 1e-2, o.weight_decay = 0.1;
    configs[n_configs++] = (config){"adam_wd", o};
    o.lr = 2e-2, o.beta1 = 0.8, o.beta2 = 0.99, o.eps = 1e-6, o.weight_decay = 0, o.amsgrad = 1;
    configs[n_configs++] = (config){"adam_amsgrad", o};
    o = wgt_optimizer_defaults(WGT_OPTIM_ADAMW);
    o.lr = 1e-2, o.beta2 = 0.95, o.weight_decay = 0.1;
    configs[n_configs++] = (config){"adamw_wd", o};
    o.amsgrad = 1, o.eps = 1e-7;
    configs[n_configs++] = (config){"adamw_amsgrad_wd", o};
}

/* ---- 1. reference against the documented algorithms ------------------------------------------- */

/* torch.optim's algorithms in double. Adam's amsgrad keeps the maximum of the raw exp_avg_sq and
 * divides it by the current bias correction: torch's code (its documentation writes the maximum of
 * the corrected v-hat, which differs once the correction changes). */
static void hand_run(const wgt_optimizer_options *o, int n_steps, double *out[NP])
{
    for (int i = 0; i < NP; i++) {
        int64_t n = SIZES[i], t = 0;
        double *p = out[i], *b = calloc(n, 8), *m = calloc(n, 8), *v = calloc(n, 8), *vm = calloc(n, 8);
        for (int64_t e = 0; e < n; e++) p[e] = init[i][e];
        for (int k = 0; k < n_steps; k++) {
            if (skipped(k + 1, i)) continue;
            t++;
            for (int64_t e = 0; e < n; e++) {
                double g = grads[k][i][e];
                if (o->kind == WGT_OPTIM_SGD) {
                    g += o->weight_decay * p[e];
                    if (o->momentum != 0) {
                        b[e] = t == 1 ? g : o->momentum * b[e] + (1 - o->dampening) * g;
                        g = o->nesterov ? g + o->momentum * b[e] : b[e];
                    }
                    p[e] -= o->lr * g;
                    continue;
                }
                if (o->kind == WGT_OPTIM_ADAMW) p[e] *= 1 - o->lr * o->weight_decay;
                else g += o->weight_decay * p[e];
                m[e] = o->beta1 * m[e] + (1 - o->beta1) * g;
                v[e] = o->beta2 * v[e] + (1 - o->beta2) * g * g;
                vm[e] = fmax(vm[e], v[e]);
                double mhat = m[e] / (1 - pow(o->beta1, (double)t));
                double vhat = (o->amsgrad ? vm[e] : v[e]) / (1 - pow(o->beta2, (double)t));
                p[e] -= o->lr * mhat / (sqrt(vhat) + o->eps);
            }
        }
        free(b), free(m), free(v), free(vm);
    }
}

static void test_reference(void)
{
    for (int c = 0; c < n_configs; c++) {
        result r;
        memset(&r, 0, sizeof r);
        run(cpu, &configs[c].o, WGT_F32, WGT_F32, 4, &r);
        double *want[NP];
        for (int i = 0; i < NP; i++) want[i] = malloc(SIZES[i] * 8);
        hand_run(&configs[c].o, 4, want);
        for (int i = 0; i < NP; i++) {
            double w = worst(r.p[i], want[i], SIZES[i], 1e-7, 2e-6);
            CHECK(w <= 1, "reference %s, parameter %d: %.3g x the tolerance from torch's algorithm", configs[c].name, i, w);
            CHECK(r.steps[i] == 4 - (i > 0), "reference %s: parameter %d took %lld steps", configs[c].name, i,
                  (long long)r.steps[i]);
            free(want[i]);
        }
        result_free(&r);
    }
}

/* ---- 2. GPU against the reference ------------------------------------------------------------ */

static void compare_results(const char *what, const result *g, const result *r, wgt_dtype pdt, int exact)
{
    for (int i = 0; i < NP; i++) {
        CHECK(g->steps[i] == r->steps[i], "%s: parameter %d steps %lld vs %lld", what, i, (long long)g->steps[i],
              (long long)r->steps[i]);
        double w = 0;
        for (int64_t e = 0; e < SIZES[i] && !exact; e++) {
            double tol = pdt == WGT_F32 ? 1e-6 + 1e-5 * fabs(r->p[i][e]) : half_ulp(pdt, r->p[i][e]) * 1.01;
            double d = fabs(g->p[i][e] - r->p[i][e]) / tol;
            if (!(d <= w)) w = d;
        }
        if (exact) CHECK(!memcmp(g->p[i], r->p[i], SIZES[i] * 8), "%s: parameter %d differs", what, i);
        else CHECK(w <= 1, "%s: parameter %d: %.3g x the tolerance", what, i, w);
        for (int s = 0; s < NSTATE; s++) {
            CHECK(!g->s[i][s] == !r->s[i][s], "%s: parameter %d state %s present on one side only", what, i, STATES[s]);
            if (!g->s[i][s] || !r->s[i][s]) continue;
            if (exact) {
                CHECK(!memcmp(g->s[i][s], r->s[i][s], SIZES[i] * 8), "%s: parameter %d %s differs", what, i, STATES[s]);
                continue;
            }
            w = worst(g->s[i][s], r->s[i][s], SIZES[i], 1e-6, 1e-5);
            CHECK(w <= 1, "%s: parameter %d %s: %.3g x the tolerance", what, i, STATES[s], w);
        }
    }
}

static void test_gpu_vs_reference(void)
{
    static const wgt_dtype pdts[3] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int c = 0; c < n_configs; c++)
        for (int d = 0; d < 3; d++)
            for (int gh = 0; gh < (d ? 2 : 1); gh++) {
                wgt_dtype gdt = gh ? pdts[d] : WGT_F32;
                char what[128];
                snprintf(what, sizeof what, "%s %s params, %s grads", configs[c].name, wgt_dtype_name(pdts[d]),
                         wgt_dtype_name(gdt));
                result g, r;
                memset(&g, 0, sizeof g), memset(&r, 0, sizeof r);
                run(gpu, &configs[c].o, pdts[d], gdt, 6, &g);
                run(cpu, &configs[c].o, pdts[d], gdt, 6, &r);
                compare_results(what, &g, &r, pdts[d], 0);
                CHECK((d == 0) == !g.s[0][4], "%s: a master copy exactly for half parameters", what);
                result_free(&g), result_free(&r);
            }
}

/* ---- 3. chunks -------------------------------------------------------------------------------- */

static void test_chunks(void)
{
    uint64_t saved = gpu->info.limits.max_storage_buffer_binding_size;
    for (int c = 3; c < 5; c++)
        for (int half = 0; half < 2; half++) {
            wgt_dtype pdt = half ? WGT_BF16 : WGT_F32;
            result whole, parts;
            memset(&whole, 0, sizeof whole), memset(&parts, 0, sizeof parts);
            run(gpu, &configs[c].o, pdt, WGT_F32, 3, &whole);
            /* 1024 bytes: a few hundred elements a chunk (op_bind's alignment slack included) */
            gpu->info.limits.max_storage_buffer_binding_size = 1024 + 512;
            run(gpu, &configs[c].o, pdt, WGT_F32, 3, &parts);
            gpu->info.limits.max_storage_buffer_binding_size = saved;
            char what[96];
            snprintf(what, sizeof what, "chunked %s %s", configs[c].name, wgt_dtype_name(pdt));
            compare_results(what, &parts, &whole, pdt, 1);
            result_free(&whole), result_free(&parts);
        }
}

/* ---- 4. torch fixtures ------------------------------------------------------------------------ */

static char fixture_dir[1024];

static int have_fixtures(void)
{
    const char *env = getenv("WGT_OPTIM_FIXTURES"), *root = getenv("WGT_ROOT");
    if (env) snprintf(fixture_dir, sizeof fixture_dir, "%s", env);
    else snprintf(fixture_dir, sizeof fixture_dir, "%s/tests/fixtures/optim", root ? root : ".");
    char path[1100];
    snprintf(path, sizeof path, "%s/cases.json", fixture_dir);
    if (access(path, R_OK) == 0) return 1;
    printf("SKIP: torch fixtures not in %s yet (python3 tools/make_optim_fixtures.py OUT where torch is "
           "installed, then copy OUT/optim there)\n", fixture_dir);
    return 0;
}

static wgt_tensor *fixture_tensor(wgt_context *ctx, const wgt_safetensors *f, const char *name, wgt_dtype dt)
{
    const wgt_st_tensor *t = wgt_safetensors_find(f, name);
    if (!t || t->type != WGT_FTYPE_F32) return NULL;
    float *v = malloc((size_t)(t->n_elements ? t->n_elements : 1) * 4);
    memcpy(v, t->data, (size_t)t->n_elements * 4);
    wgt_tensor *flat = upload(ctx, dt, t->n_elements, v), *shaped;
    MUST(wgt_tensor_reshape(flat, (int)t->n_dims, t->shape, &shaped));
    wgt_tensor_free(flat);
    free(v);
    return shaped;
}

static double meta(const wgt_safetensors *f, const char *key)
{
    const char *v = wgt_safetensors_metadata(f, key);
    CHECK(v != NULL, "fixture metadata %s missing", key);
    return v ? strtod(v, NULL) : 0;
}

static void fixture_case(wgt_context *ctx, const char *name)
{
    char path[1200], key[64];
    snprintf(path, sizeof path, "%s/%s.safetensors", fixture_dir, name);
    wgt_safetensors *f;
    wgt_status st = wgt_safetensors_open(path, &f);
    CHECK(st == WGT_OK, "fixture %s: %s", path, wgt_errmsg());
    if (st) return;
    const char *kind = wgt_safetensors_metadata(f, "optimizer");
    wgt_optimizer_options o = wgt_optimizer_defaults(!strcmp(kind, "sgd") ? WGT_OPTIM_SGD
                                                     : !strcmp(kind, "adam") ? WGT_OPTIM_ADAM : WGT_OPTIM_ADAMW);
    o.lr = meta(f, "lr"), o.weight_decay = meta(f, "weight_decay"), o.momentum = meta(f, "momentum");
    o.dampening = meta(f, "dampening"), o.nesterov = (int)meta(f, "nesterov"), o.beta1 = meta(f, "beta1");
    o.beta2 = meta(f, "beta2"), o.eps = meta(f, "eps"), o.amsgrad = (int)meta(f, "amsgrad");
    int np = (int)meta(f, "n_params"), ns = (int)meta(f, "steps");
    wgt_tensor *p[4] = {0};
    for (int i = 0; i < np && i < 4; i++) {
        snprintf(key, sizeof key, "param.%d.initial", i);
        p[i] = fixture_tensor(ctx, f, key, WGT_F32);
        CHECK(p[i] != NULL, "fixture %s: %s missing", name, key);
        if (!p[i]) return;
    }
    wgt_optimizer *opt;
    MUST(wgt_optimizer_create(ctx, &o, p, np, &opt));
    double w = 0;
    for (int k = 1; k <= ns; k++) {
        wgt_tensor *g[4] = {0};
        for (int i = 0; i < np; i++) {
            snprintf(key, sizeof key, "grad.%d.step%d", i, k);
            g[i] = fixture_tensor(ctx, f, key, WGT_F32);
        }
        MUST(wgt_optimizer_step(opt, (const wgt_tensor *const *)g));
        for (int i = 0; i < np; i++) {
            wgt_tensor_free(g[i]);
            snprintf(key, sizeof key, "param.%d.step%d", i, k);
            wgt_tensor *want = fixture_tensor(ctx, f, key, WGT_F32);
            double *a = values(p[i]), *b = values(want);
            double wi = worst(a, b, wgt_tensor_numel(p[i]), 1e-6, 1e-5);
            if (wi > w) w = wi;
            free(a), free(b);
            wgt_tensor_free(want);
        }
    }
    CHECK(w <= 1, "torch fixture %s on %s: parameters %.3g x the tolerance", name, ctx == cpu ? "cpu" : "gpu", w);
    printf("torch fixture %-24s %s: worst parameter error %.3f of the tolerance\n", name, ctx == cpu ? "cpu" : "gpu", w);
    for (int i = 0; i < np; i++)
        for (int s = 0; s < 4; s++) {
            snprintf(key, sizeof key, "state.%d.%s", i, STATES[s]);
            wgt_tensor *want = fixture_tensor(ctx, f, key, WGT_F32), *got = NULL;
            wgt_status gs = wgt_optimizer_state(opt, i, STATES[s], &got);
            CHECK(!want == (gs != WGT_OK), "torch fixture %s: state %s of parameter %d on one side only", name,
                  STATES[s], i);
            if (want && got) {
                wgt_tensor *c;
                MUST(wgt_tensor_contiguous(got, &c));
                double *a = values(c), *b = values(want);
                double ws = worst(a, b, wgt_tensor_numel(c), 1e-6, 1e-5);
                CHECK(ws <= 1, "torch fixture %s: state %s of parameter %d: %.3g x the tolerance", name, STATES[s], i, ws);
                free(a), free(b);
                wgt_tensor_free(c);
            }
            wgt_tensor_free(want), wgt_tensor_free(got);
        }
    snprintf(key, sizeof key, "state.1.step");
    const wgt_st_tensor *ts = wgt_safetensors_find(f, key);
    if (ts) {
        float torch_steps;
        memcpy(&torch_steps, ts->data, 4);
        CHECK(torch_steps == (float)wgt_optimizer_param_steps(opt, 1), "torch fixture %s: parameter 1 steps %g vs %lld",
              name, torch_steps, (long long)wgt_optimizer_param_steps(opt, 1));
    }
    wgt_optimizer_free(opt);
    for (int i = 0; i < np; i++) wgt_tensor_free(p[i]);
    wgt_safetensors_free(f);
}

static void fixture_clip(wgt_context *ctx)
{
    char path[1200], key[96];
    snprintf(path, sizeof path, "%s/clip.safetensors", fixture_dir);
    wgt_safetensors *f;
    wgt_status st = wgt_safetensors_open(path, &f);
    CHECK(st == WGT_OK, "fixture %s: %s", path, wgt_errmsg());
    if (st) return;
    char cases[256];
    snprintf(cases, sizeof cases, "%s", wgt_safetensors_metadata(f, "cases"));
    for (char *c = strtok(cases, ","); c; c = strtok(NULL, ",")) {
        snprintf(key, sizeof key, "%s.max_norm", c);
        double max_norm = meta(f, key);
        snprintf(key, sizeof key, "%s.n_grads", c);
        int n = (int)meta(f, key);
        wgt_tensor *g[8] = {0}, *total = NULL;
        for (int i = 0; i < n && i < 8; i++) {
            snprintf(key, sizeof key, "%s.grad.%d.in", c, i);
            g[i] = fixture_tensor(ctx, f, key, WGT_F32);
        }
        MUST(wgt_clip_grad_norm(g, n, max_norm, &total));
        snprintf(key, sizeof key, "%s.total_norm", c);
        wgt_tensor *want_t = fixture_tensor(ctx, f, key, WGT_F32);
        double *a = values(total), *b = values(want_t);
        CHECK(worst(a, b, 1, 0, 1e-5) <= 1 || (isinf(a[0]) && a[0] == b[0]), "torch clip %s: total %.9g vs %.9g", c,
              a[0], b[0]);
        free(a), free(b);
        for (int i = 0; i < n; i++) {
            snprintf(key, sizeof key, "%s.grad.%d.out", c, i);
            wgt_tensor *want = fixture_tensor(ctx, f, key, WGT_F32);
            a = values(g[i]), b = values(want);
            double w = worst(a, b, wgt_tensor_numel(want), 1e-7, 1e-5);
            CHECK(w <= 1, "torch clip %s: gradient %d %.3g x the tolerance", c, i, w);
            free(a), free(b);
            wgt_tensor_free(want), wgt_tensor_free(g[i]);
        }
        wgt_tensor_free(want_t), wgt_tensor_free(total);
    }
    wgt_safetensors_free(f);
}

static void test_fixtures(void)
{
    if (!have_fixtures()) return;
    for (int c = 0; c < n_configs; c++) {
        fixture_case(cpu, configs[c].name);
        fixture_case(gpu, configs[c].name);
    }
    fixture_clip(cpu);
    fixture_clip(gpu);
}

/* ---- 5. clip_grad_norm ------------------------------------------------------------------------ */

static void clip_case(wgt_context *ctx, const char *what, wgt_dtype dt, double max_norm, int poison)
{
    enum { NG = 4 };
    static const int64_t n[NG] = {777, 0, 5, 130};
    float *v[NG];
    wgt_tensor *g[NG] = {0}, *total = NULL;
    double sum = 0;
    for (int i = 0; i < NG; i++) {
        v[i] = malloc((size_t)(n[i] + 1) * 4);
        for (int64_t e = 0; e < n[i]; e++) v[i][e] = (float)wgt_cpu_round_to(dt, frand() * 2);
        if (i == 3 && poison == 1) v[i][9] = INFINITY;
        if (i == 3 && poison == 2) v[i][9] = NAN;
        if (i == 2 && poison == 3)
            for (int64_t e = 0; e < n[i]; e++) v[i][e] = 0;
        double s = 0;
        for (int64_t e = 0; e < n[i] && i != 2; e++) s += (double)v[i][e] * v[i][e];
        sum += i == 2 ? 0 : s;
        if (i != 2 || poison == 3) g[i] = upload(ctx, dt, n[i], v[i]);
    }
    /* gradient 2 is a NULL entry except in the zero case */
    if (poison == 3) sum = 0, g[0] = g[3] = NULL;
    MUST(wgt_clip_grad_norm(g, NG, max_norm, &total));
    double want = sqrt(sum), *t = values(total);
    double coef = fmin(1.0, max_norm / (want + 1e-6));
    if (poison == 1) CHECK(isinf(t[0]), "clip %s: total %g, want inf", what, t[0]);
    else if (poison == 2) CHECK(isnan(t[0]), "clip %s: total %g, want nan", what, t[0]);
    else CHECK(fabs(t[0] - want) <= 1e-5 * want + 1e-30, "clip %s: total %.9g, want %.9g", what, t[0], want);
    for (int i = 0; i < NG; i++) {
        if (!g[i]) continue;
        double *a = values(g[i]);
        for (int64_t e = 0; e < n[i]; e++) {
            double x = v[i][e], r;
            if (poison == 1) r = isinf(x) ? NAN : 0.0 * x;
            else if (poison == 2) r = NAN;
            else r = x * coef;
            int ok = isnan(r) ? isnan(a[e]) : coef == 1.0 ? a[e] == x
                   : fabs(a[e] - r) <= 1e-5 * fabs(r) + (dt == WGT_F32 ? 0 : half_ulp(dt, r));
            CHECK(ok, "clip %s: gradient %d[%lld] = %.9g, want %.9g", what, i, (long long)e, a[e], r);
            if (!ok) break;
        }
        free(a);
    }
    free(t);
    for (int i = 0; i < NG; i++) wgt_tensor_free(g[i]), free(v[i]);
    wgt_tensor_free(total);
}

static void test_clip(void)
{
    wgt_context *ctxs[2] = {gpu, cpu};
    static const wgt_dtype dts[3] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int c = 0; c < 2; c++)
        for (int d = 0; d < 3; d++) {
            char what[64];
            snprintf(what, sizeof what, "%s %s", c ? "cpu" : "gpu", wgt_dtype_name(dts[d]));
            clip_case(ctxs[c], what, dts[d], 1.5, 0);  /* above: scaled */
            clip_case(ctxs[c], what, dts[d], 1e4, 0);  /* below: untouched, bit for bit */
            clip_case(ctxs[c], what, dts[d], 1.0, 1);  /* inf */
            clip_case(ctxs[c], what, dts[d], 1.0, 2);  /* nan */
            clip_case(ctxs[c], what, dts[d], 0.5, 3);  /* zeros */
        }
    /* more gradients than wgt_stack takes at once (GPT-2 small has 148 tensors) */
    for (int c = 0; c < 2; c++) {
        enum { MANY = 150 };
        wgt_tensor *g[MANY], *t;
        float v[MANY][3];
        double sum = 0;
        for (int i = 0; i < MANY; i++) {
            for (int e = 0; e < 3; e++) v[i][e] = frand(), sum += (double)v[i][e] * v[i][e];
            g[i] = upload(ctxs[c], WGT_F32, 3, v[i]);
        }
        MUST(wgt_clip_grad_norm(g, MANY, 0.5, &t));
        double *tv = values(t), want = sqrt(sum), coef = 0.5 / (want + 1e-6), w = 0;
        CHECK(fabs(tv[0] - want) <= 1e-5 * want, "clip of %d gradients on %s: total %.9g, want %.9g", MANY,
              c ? "cpu" : "gpu", tv[0], want);
        for (int i = 0; i < MANY; i++) {
            double *a = values(g[i]);
            for (int e = 0; e < 3; e++) w = fmax(w, fabs(a[e] - v[i][e] * coef) / (1e-5 * fabs(v[i][e] * coef) + 1e-12));
            free(a);
            wgt_tensor_free(g[i]);
        }
        CHECK(w <= 1, "clip of %d gradients on %s: %.3g x the tolerance", MANY, c ? "cpu" : "gpu", w);
        free(tv);
        wgt_tensor_free(t);
    }
    wgt_tensor *none[2] = {NULL, NULL}, *total = (wgt_tensor *)1;
    CHECK(wgt_clip_grad_norm(none, 2, 1.0, &total) == WGT_OK && !total, "clip of no gradients: OK, no total");
}

/* ---- 6. schedules ----------------------------------------------------------------------------- */

static void test_schedules(void)
{
    /* lr 3e-4, 10 warmup steps of 100: values from transformers' lambdas times the base lr */
    static const int64_t at[10] = {0, 1, 5, 10, 11, 32, 55, 99, 100, 150};
    static const double want[3][10] = {
        {0.0, 2.9999999999999997e-05, 0.00015, 0.0003, 0.0003, 0.0003, 0.0003, 0.0003, 0.0003, 0.0003},
        {0.0, 2.9999999999999997e-05, 0.00015, 0.0003, 0.00029666666666666665, 0.00022666666666666663, 0.00015,
         3.3333333333333333e-06, 0.0, 0.0},
        {0.0, 2.9999999999999997e-05, 0.00015, 0.0003, 0.00029990862405286433, 0.00025790097005079764, 0.00015,
         9.137594713563568e-08, 0.0, 0.0001760472266500395},
    };
    static const wgt_lr_schedule kinds[3] = {WGT_LR_CONSTANT, WGT_LR_LINEAR, WGT_LR_COSINE};
    for (int k = 0; k < 3; k++)
        for (int s = 0; s < 10; s++) {
            double got = wgt_lr_at(kinds[k], 3e-4, 10, 100, at[s]);
            CHECK(fabs(got - want[k][s]) <= 1e-15 * want[k][s] + 1e-20, "schedule %d at step %lld: %.17g, want %.17g",
                  k, (long long)at[s], got, want[k][s]);
        }
    CHECK(wgt_lr_at(WGT_LR_CONSTANT, 0.1, 0, 10, 0) == 0.1, "no warmup: the full lr at step 0");
}

/* ---- 7. save / load --------------------------------------------------------------------------- */

static void test_resume(wgt_context *ctx, const config *c, wgt_dtype pdt)
{
    char path[64], what[128];
    snprintf(path, sizeof path, "/tmp/wgt_test_optim_%d.safetensors", (int)getpid());
    snprintf(what, sizeof what, "resume %s %s on %s", c->name, wgt_dtype_name(pdt), ctx == cpu ? "cpu" : "gpu");
    result whole, resumed;
    memset(&whole, 0, sizeof whole), memset(&resumed, 0, sizeof resumed);
    wgt_tensor *p[NP], *q[NP];
    make_params(ctx, pdt, p);
    wgt_optimizer *opt, *back;
    MUST(wgt_optimizer_create(ctx, &c->o, p, NP, &opt));
    MUST(wgt_optimizer_set_weight_decay(opt, 2, 0.2));
    steps(opt, ctx, WGT_F32, 0, 7, 1);
    collect(opt, p, &whole);
    wgt_optimizer_free(opt);

    make_params(ctx, pdt, q);
    MUST(wgt_optimizer_create(ctx, &c->o, q, NP, &opt));
    MUST(wgt_optimizer_set_weight_decay(opt, 2, 0.2));
    steps(opt, ctx, WGT_F32, 0, 3, 1);
    MUST(wgt_optimizer_save(opt, path));
    wgt_optimizer_free(opt);
    /* a fresh optimizer with other options: the file's must replace them */
    wgt_optimizer_options other = wgt_optimizer_defaults(WGT_OPTIM_SGD);
    MUST(wgt_optimizer_create(ctx, &other, q, NP, &back));
    MUST(wgt_optimizer_load(back, path));
    CHECK(wgt_optimizer_steps(back) == 3, "%s: steps %lld after load", what, (long long)wgt_optimizer_steps(back));
    steps(back, ctx, WGT_F32, 3, 7, 1);
    collect(back, q, &resumed);
    compare_results(what, &resumed, &whole, pdt, 1);
    wgt_optimizer_free(back);

    /* a file for other parameters is refused and changes nothing */
    wgt_tensor *few[1] = {q[0]};
    MUST(wgt_optimizer_create(ctx, &other, few, 1, &back));
    CHECK(wgt_optimizer_load(back, path) == WGT_ERR_FORMAT, "%s: a file of 3 parameters into 1", what);
    CHECK(wgt_optimizer_get_options(back).kind == WGT_OPTIM_SGD && wgt_optimizer_steps(back) == 0,
          "%s: a refused load changed the optimizer", what);
    wgt_optimizer_free(back);
    remove(path);
    for (int i = 0; i < NP; i++) wgt_tensor_free(p[i]), wgt_tensor_free(q[i]);
    result_free(&whole), result_free(&resumed);
}

static void test_save_load(void)
{
    for (int c = 0; c < n_configs; c++) {
        test_resume(gpu, &configs[c], WGT_F32);
        if (c == 1 || c == 6) test_resume(gpu, &configs[c], WGT_BF16), test_resume(gpu, &configs[c], WGT_F16);
    }
    test_resume(cpu, &configs[5], WGT_F32);
    test_resume(cpu, &configs[2], WGT_F16);
    /* a file that is not an optimizer state */
    char path[64];
    snprintf(path, sizeof path, "/tmp/wgt_test_optim_bad_%d.safetensors", (int)getpid());
    FILE *f = fopen(path, "wb");
    fputs("not a safetensors file", f);
    fclose(f);
    wgt_tensor *p = upload(gpu, WGT_F32, 3, init[0]);
    wgt_optimizer *opt;
    wgt_optimizer_options o = wgt_optimizer_defaults(WGT_OPTIM_ADAM);
    MUST(wgt_optimizer_create(gpu, &o, &p, 1, &opt));
    CHECK(wgt_optimizer_load(opt, path) != WGT_OK && *wgt_errmsg(), "garbage file: a status and a message");
    CHECK(wgt_optimizer_load(opt, "/nonexistent/optim.safetensors") == WGT_ERR_NOT_FOUND ||
          wgt_optimizer_load(opt, "/nonexistent/optim.safetensors") == WGT_ERR_IO, "missing file");
    wgt_optimizer_free(opt);
    wgt_tensor_free(p);
    remove(path);
}

/* ---- per-parameter weight decay -------------------------------------------------------------- */

/* One optimizer with parameter i's weight decay set to wd[i] against one optimizer per parameter
 * created with wd[i]: the same bits (torch's param groups). */
static void test_param_weight_decay(wgt_context *ctx)
{
    static const double wd[NP] = {0.0, 0.3, 0.05};
    for (int c = 0; c < n_configs; c++) {
        wgt_tensor *p[NP], *q[NP];
        make_params(ctx, WGT_F32, p);
        make_params(ctx, WGT_F32, q);
        wgt_optimizer *all, *one[NP];
        MUST(wgt_optimizer_create(ctx, &configs[c].o, p, NP, &all));
        for (int i = 0; i < NP; i++) {
            MUST(wgt_optimizer_set_weight_decay(all, i, wd[i]));
            wgt_optimizer_options o = configs[c].o;
            o.weight_decay = wd[i];
            MUST(wgt_optimizer_create(ctx, &o, &q[i], 1, &one[i]));
        }
        for (int k = 0; k < 3; k++) {
            const wgt_tensor *g[NP];
            for (int i = 0; i < NP; i++) g[i] = upload(ctx, WGT_F32, SIZES[i], grads[k][i]);
            MUST(wgt_optimizer_step(all, g));
            for (int i = 0; i < NP; i++) MUST(wgt_optimizer_step(one[i], &g[i]));
            for (int i = 0; i < NP; i++) wgt_tensor_free((wgt_tensor *)g[i]);
        }
        for (int i = 0; i < NP; i++) {
            double *a = values(p[i]), *b = values(q[i]);
            CHECK(!memcmp(a, b, SIZES[i] * 8), "%s: parameter %d with its own weight decay %g differs from an "
                  "optimizer created with it", configs[c].name, i, wd[i]);
            free(a), free(b);
            wgt_optimizer_free(one[i]);
            wgt_tensor_free(p[i]), wgt_tensor_free(q[i]);
        }
        wgt_optimizer_free(all);
    }
}

/* ---- errors ----------------------------------------------------------------------------------- */

static void test_errors(void)
{
    wgt_tensor *p = upload(gpu, WGT_F32, 6, init[0]), *g3 = upload(gpu, WGT_F32, 3, init[0]), *pi, *t;
    int32_t ints[2] = {1, 2};
    int64_t two = 2;
    MUST(wgt_tensor_from_host(gpu, WGT_I32, 1, &two, ints, &pi));
    wgt_optimizer *opt = (wgt_optimizer *)1;
    wgt_optimizer_options o = wgt_optimizer_defaults(WGT_OPTIM_SGD);
    o.nesterov = 1;
    CHECK(wgt_optimizer_create(gpu, &o, &p, 1, &opt) == WGT_ERR_INVALID_ARGUMENT && !opt && strstr(wgt_errmsg(), "nesterov"),
          "nesterov without momentum: %s", wgt_errmsg());
    o = wgt_optimizer_defaults(WGT_OPTIM_ADAM);
    o.beta2 = 1.0;
    CHECK(wgt_optimizer_create(gpu, &o, &p, 1, &opt) == WGT_ERR_INVALID_ARGUMENT && strstr(wgt_errmsg(), "beta2"),
          "beta2 1: %s", wgt_errmsg());
    o = wgt_optimizer_defaults(WGT_OPTIM_ADAM);
    CHECK(wgt_optimizer_create(gpu, &o, &pi, 1, &opt) == WGT_ERR_DTYPE, "an i32 parameter");
    MUST(wgt_tensor_reshape(p, 2, (int64_t[]){2, 3}, &t));
    wgt_tensor *tt;
    MUST(wgt_tensor_transpose(t, 0, 1, &tt));
    CHECK(wgt_optimizer_create(gpu, &o, &tt, 1, &opt) == WGT_ERR_SHAPE, "a strided parameter");
    wgt_tensor *twice[2] = {p, p};
    CHECK(wgt_optimizer_create(gpu, &o, twice, 2, &opt) == WGT_ERR_INVALID_ARGUMENT, "a parameter listed twice");
    MUST(wgt_optimizer_create(gpu, &o, &p, 1, &opt));
    const wgt_tensor *bad[1] = {g3};
    double *before = values(p);
    CHECK(wgt_optimizer_step(opt, bad) == WGT_ERR_SHAPE, "a gradient of the wrong shape");
    const wgt_tensor *badt[1] = {pi};
    CHECK(wgt_optimizer_step(opt, badt) == WGT_ERR_SHAPE || wgt_optimizer_step(opt, badt) == WGT_ERR_DTYPE,
          "a gradient of the wrong dtype");
    double *after = values(p);
    CHECK(!memcmp(before, after, 6 * 8) && wgt_optimizer_steps(opt) == 0, "a refused step changed nothing");
    CHECK(wgt_optimizer_set_lr(opt, NAN) == WGT_ERR_INVALID_ARGUMENT, "lr NaN");
    CHECK(wgt_optimizer_set_weight_decay(opt, 0, -1) == WGT_ERR_INVALID_ARGUMENT, "weight decay -1");
    CHECK(wgt_optimizer_set_weight_decay(opt, 1, 0.1) == WGT_ERR_INVALID_ARGUMENT, "weight decay of parameter 1 of 1");
    /* lr 0 (a schedule's first warmup step) leaves Adam's parameters where they are */
    MUST(wgt_optimizer_set_lr(opt, 0.0));
    const wgt_tensor *good[1] = {p};
    MUST(wgt_optimizer_step(opt, good));
    double *same = values(p);
    CHECK(!memcmp(before, same, 6 * 8) && wgt_optimizer_steps(opt) == 1, "a step at lr 0 moved the parameters");
    free(same);
    wgt_tensor *st = NULL;
    CHECK(wgt_optimizer_state(opt, 0, "momentum_buffer", &st) == WGT_ERR_NOT_FOUND && !st, "Adam has no momentum_buffer");
    CHECK(wgt_optimizer_state(opt, 5, "exp_avg", &st) == WGT_ERR_INVALID_ARGUMENT, "no parameter 5");
    free(before), free(after);
    wgt_optimizer_free(opt);
    wgt_optimizer_free(NULL);
    wgt_tensor_free(p), wgt_tensor_free(g3), wgt_tensor_free(pi), wgt_tensor_free(t), wgt_tensor_free(tt);
}

int main(void)
{
    MUST(wgt_context_create(NULL, &gpu));
    wgt_context_options co = {0};
    co.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&co, &cpu));
    make_data();
    make_configs();
#define TIMED(f) do { struct timespec a_, b_; clock_gettime(CLOCK_MONOTONIC, &a_); f(); clock_gettime(CLOCK_MONOTONIC, &b_); \
    printf("%-24s %.2f s\n", #f, (double)(b_.tv_sec - a_.tv_sec) + 1e-9 * (double)(b_.tv_nsec - a_.tv_nsec)); } while (0)
    TIMED(test_reference);
    TIMED(test_gpu_vs_reference);
    TIMED(test_chunks);
    TIMED(test_fixtures);
    TIMED(test_clip);
    TIMED(test_schedules);
    TIMED(test_save_load);
    TIMED(test_errors);
    test_param_weight_decay(gpu);
    test_param_weight_decay(cpu);
    wgt_context_free(cpu);
    wgt_context_free(gpu);
    return test_finish("test_gpu_optim");
}
