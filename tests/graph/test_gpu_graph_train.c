/* A training step captured (include/wgt.h "Graph capture", notes/GRAPH.md) on this adapter: the
 * forward pass of a tiny MLP (linear, layer_norm, gelu, linear, cross-entropy), wgt_backward and
 * the optimizer's step recorded once between wgt_graph_begin and wgt_graph_end with the batch
 * (inputs and class targets) as the graph's inputs, then replayed with one submit per step on new
 * batches. The losses of every step and the parameters and optimizer state after the last equal
 * an eager run of the same steps bit for bit (the replay runs the kernels eager execution ran,
 * the fused elementwise chains bit for bit as unfused ones: test_gpu_graph_fuse).
 * Optimizers: SGD with momentum (its first step makes the momentum buffer and runs eagerly, the
 * capture is the second step: the later steps are all alike); AdamW, whose bias corrections
 * follow the step count: the step is a graph scalar of role WGT_GRAPH_STEP, set before each
 * replay. Usage: test_gpu_graph_train [STEPS] */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/check.h"

#define NB 8  /* batch rows */
#define DI 16 /* input features */
#define DH 32 /* hidden */
#define NC 5  /* classes */
#define NP 6  /* parameters: w1, b1, ln weight, ln bias, w2, b2 */

static wgt_context *dev;
static const int64_t SHAPES[NP][2] = {{DH, DI}, {DH, 0}, {DH, 0}, {DH, 0}, {NC, DH}, {NC, 0}};

static float frand(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void make_params(wgt_tensor **p)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    static float v[DH * DI];
    for (int i = 0; i < NP; i++) {
        int nd = SHAPES[i][1] ? 2 : 1;
        int64_t n = SHAPES[i][0] * (nd == 2 ? SHAPES[i][1] : 1);
        for (int64_t j = 0; j < n; j++) v[j] = i == 2 ? 1.0f + 0.1f * frand(&s) : 0.4f * frand(&s);
        MUST(wgt_tensor_from_host(dev, WGT_F32, nd, SHAPES[i], v, &p[i]));
        MUST(wgt_tensor_set_requires_grad(p[i], 1));
    }
}

/* the batch of step k: inputs [NB, DI] and targets [NB] (i32) */
static void make_batch(int k, wgt_tensor **x, wgt_tensor **y)
{
    uint64_t s = 0x2545f4914f6cdd1dull ^ ((uint64_t)(k + 1) * 0x9e3779b97f4a7c15ull);
    float xv[NB * DI];
    int32_t yv[NB];
    for (int i = 0; i < NB * DI; i++) xv[i] = 2.0f * frand(&s);
    for (int i = 0; i < NB; i++) yv[i] = (int32_t)((frand(&s) + 1.0f) * 0.5f * NC) % NC;
    int64_t sx[2] = {NB, DI}, sy = NB;
    MUST(wgt_tensor_from_host(dev, WGT_F32, 2, sx, xv, x));
    MUST(wgt_tensor_from_host(dev, WGT_I32, 1, &sy, yv, y));
}

/* zero_grad, forward, backward, optimizer step; *loss gets the step's loss (a device tensor) */
static wgt_status train_step(wgt_tensor **p, wgt_optimizer *opt, const wgt_tensor *x, const wgt_tensor *y,
                             wgt_tensor **loss)
{
    wgt_tensor *h = NULL, *n = NULL, *a = NULL, *z = NULL, *g[NP] = {0};
    for (int i = 0; i < NP; i++) wgt_tensor_zero_grad(p[i]);
    wgt_status st = wgt_linear(x, p[0], p[1], &h);
    if (!st) st = wgt_layer_norm(h, 1, p[2], p[3], 1e-5, &n);
    if (!st) st = wgt_unary(WGT_UNARY_GELU, n, &a);
    if (!st) st = wgt_linear(a, p[4], p[5], &z);
    if (!st) st = wgt_cross_entropy(z, y, NULL, -100, 0.0, WGT_REDUCTION_MEAN, loss);
    if (!st) st = wgt_backward(*loss, NULL, 0);
    for (int i = 0; i < NP && !st; i++) st = wgt_tensor_grad(p[i], &g[i]);
    if (!st) st = wgt_optimizer_step(opt, (const wgt_tensor *const *)g);
    for (int i = 0; i < NP; i++) wgt_tensor_free(g[i]);
    wgt_tensor_free(h), wgt_tensor_free(n), wgt_tensor_free(a), wgt_tensor_free(z);
    return st;
}

static float scalar(const wgt_tensor *t)
{
    float v = NAN;
    MUST(wgt_tensor_to_host(t, &v, sizeof v));
    return v;
}

/* every parameter's and state tensor's bits equal */
static void compare_tensors(const char *what, const wgt_tensor *a, const wgt_tensor *b)
{
    int64_t n = wgt_tensor_numel(a);
    CHECK(n == wgt_tensor_numel(b), "%s: sizes differ", what);
    if (n != wgt_tensor_numel(b)) return;
    float *x = malloc((size_t)n * 4), *yv = malloc((size_t)n * 4);
    MUST(wgt_tensor_to_host(a, x, (size_t)n * 4));
    MUST(wgt_tensor_to_host(b, yv, (size_t)n * 4));
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++)
        if (memcmp(&x[i], &yv[i], 4)) bad = i;
    CHECK(bad < 0, "%s: element %lld is %.9g captured, %.9g eager", what, (long long)bad, bad < 0 ? 0.0 : x[bad],
          bad < 0 ? 0.0 : yv[bad]);
    free(x), free(yv);
}

static void run(wgt_optimizer_kind kind, int steps)
{
    const char *name = kind == WGT_OPTIM_SGD ? "sgd" : "adamw";
    wgt_optimizer_options oo = wgt_optimizer_defaults(kind);
    oo.lr = kind == WGT_OPTIM_SGD ? 0.1 : 0.01;
    if (kind == WGT_OPTIM_SGD) oo.momentum = 0.9;
    else oo.weight_decay = 0.01;
    wgt_tensor *pe[NP], *pg[NP];
    make_params(pe), make_params(pg);
    wgt_optimizer *oe, *og;
    MUST(wgt_optimizer_create(dev, &oo, pe, NP, &oe));
    MUST(wgt_optimizer_create(dev, &oo, pg, NP, &og));
    float *le = calloc((size_t)steps, sizeof *le), *lg = calloc((size_t)steps, sizeof *lg);
    wgt_memory_stats m0, m1;

    /* eager */
    uint64_t eager_dispatches = 0;
    for (int k = 0; k < steps; k++) {
        wgt_tensor *x, *y, *loss = NULL;
        make_batch(k, &x, &y);
        wgt_context_memory_stats(dev, &m0);
        MUST(train_step(pe, oe, x, y, &loss));
        wgt_context_memory_stats(dev, &m1);
        eager_dispatches = m1.dispatches - m0.dispatches;
        le[k] = scalar(loss);
        wgt_tensor_free(loss), wgt_tensor_free(x), wgt_tensor_free(y);
    }

    /* captured: step 0 eager (SGD's momentum buffer is made there; AdamW's too, through the
     * same code), step 1 captured (it runs as it is recorded), the rest replayed */
    wgt_graph *g = NULL;
    wgt_tensor *gloss = NULL, *cx = NULL, *cy = NULL;
    int step_scalar = -1;
    int replays = 0, one_submit = 1;
    for (int k = 0; k < steps; k++) {
        wgt_tensor *x, *y, *loss = NULL;
        make_batch(k, &x, &y);
        if (k == 0) {
            MUST(train_step(pg, og, x, y, &loss));
            lg[k] = scalar(loss);
            wgt_tensor_free(loss), wgt_tensor_free(x), wgt_tensor_free(y);
        } else if (k == 1) {
            const wgt_tensor *in[2] = {x, y};
            MUST(wgt_graph_begin(dev, 2, in));
            if (kind != WGT_OPTIM_SGD)
                MUST(wgt_graph_scalar(dev, "step", WGT_GRAPH_STEP, wgt_optimizer_steps(og) + 1, &step_scalar));
            wgt_status st = train_step(pg, og, x, y, &gloss);
            wgt_status se = wgt_graph_end(dev, &g);
            CHECK(!st && !se, "%s: capturing the training step: %s", name, wgt_errmsg());
            if (st || se) {
                wgt_tensor_free(x), wgt_tensor_free(y);
                break;
            }
            lg[k] = scalar(gloss);
            cx = x, cy = y;
        } else {
            if (step_scalar >= 0) MUST(wgt_graph_set_scalar(g, step_scalar, k + 1));
            const wgt_tensor *in[2] = {x, y};
            wgt_context_memory_stats(dev, &m0);
            MUST(wgt_graph_replay(g, 2, in));
            wgt_context_memory_stats(dev, &m1);
            one_submit &= m1.submits - m0.submits == 1 && m1.pool_hits + m1.pool_misses == m0.pool_hits + m0.pool_misses;
            replays++;
            lg[k] = scalar(gloss);
            wgt_tensor_free(x), wgt_tensor_free(y);
        }
    }
    for (int k = 0; k < steps; k++)
        CHECK(!memcmp(&le[k], &lg[k], 4), "%s step %d: loss %.9g captured, %.9g eager", name, k, lg[k], le[k]);
    CHECK(replays == steps - 2, "%s: %d replays, want %d", name, replays, steps - 2);
    CHECK(one_submit, "%s: a replay made more than one submit or allocated a buffer", name);
    static const char *const states[] = {"momentum_buffer", "exp_avg", "exp_avg_sq"};
    for (int i = 0; i < NP; i++) {
        char what[64];
        snprintf(what, sizeof what, "%s parameter %d", name, i);
        compare_tensors(what, pg[i], pe[i]);
        for (int s = 0; s < 3; s++) {
            wgt_tensor *a = NULL, *b = NULL;
            if (!wgt_optimizer_state(og, i, states[s], &a) && !wgt_optimizer_state(oe, i, states[s], &b) && a && b) {
                snprintf(what, sizeof what, "%s parameter %d's %s", name, i, states[s]);
                compare_tensors(what, a, b);
            }
            wgt_tensor_free(a), wgt_tensor_free(b);
        }
    }
    wgt_graph_stats gs = {0};
    if (g) wgt_graph_get_stats(g, &gs);
    printf("%s: %d steps, eager losses %.6f .. %.6f; %llu dispatches per eager step, %d per replay "
           "(%d fused kernels running %d ops), 1 submit per replay\n", name, steps, le[0], le[steps - 1],
           (unsigned long long)eager_dispatches, gs.dispatches, gs.fused_kernels, gs.fused_ops);
    wgt_graph_free(g);
    wgt_tensor_free(gloss), wgt_tensor_free(cx), wgt_tensor_free(cy);
    wgt_optimizer_free(oe), wgt_optimizer_free(og);
    for (int i = 0; i < NP; i++) wgt_tensor_free(pe[i]), wgt_tensor_free(pg[i]);
    free(le), free(lg);
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 6;
    if (steps < 3) steps = 3;
    MUST(wgt_context_create(NULL, &dev));
    run(WGT_OPTIM_SGD, steps);
    run(WGT_OPTIM_ADAMW, steps);
    wgt_context_free(dev);
    return test_finish("test_gpu_graph_train");
}
