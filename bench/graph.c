/* Eager against captured (issue 17, notes/GRAPH.md): dispatches and time per step of
 *  - train: a training step (zero_grad, wgt_train_loss, wgt_backward, AdamW's step) of GPT-2
 *    small's shape (bench/configs/gpt2-small.json, fresh f32 weights, batch 8 x 512), captured
 *    once with the batch as graph inputs and the optimizer's step as a WGT_GRAPH_STEP scalar;
 *  - decode: a decode step of the Qwen2.5-0.5B shape (bench/configs/qwen2.5-0.5b.json, f16,
 *    a 512-token prompt, 128 tokens greedy) through wgt_model_generate, sampling.graph 0 and 1,
 *    the hand-fused step (modes eager, captured) and the step written with plain ops
 *    (WGT_DECODE_GENERIC=1: modes gen-eager, gen-captured: what generic fusion makes of it);
 *    --mode M runs one of them, --prompt P / --tokens N set the lengths;
 *  - conv: a small convolutional network's forward (conv3x3 -> bias -> gelu -> conv3x3 stride 2 ->
 *    bias -> relu -> mean pool -> linear; batch 64 of 3 x 64 x 64), captured with the image batch
 *    as the input.
 *  - blocks: the linear layers of 24 decoder layers of the Qwen2.5-0.5B shape written with plain ops
 *    (rms_norm, q/k/v with biases, o, residual, gate/up, silu * up, down, residual; f16 weights),
 *    1 row (decode) and 128 rows, eager and captured with the defaults, epilogues in every product
 *    (allepi), merging off (nomerge), epilogues off (noepi) and both off (neither).
 * Usage: bench_graph [--tiny] [--steps N] [--mode M] [--prompt P] [--tokens N] [train|decode|conv|blocks...]
 * --tiny (for a CPU adapter): the tiny GPT-2 and Qwen2 of tests/fixtures/train, batch 2 x 16,
 * 16 decode tokens, a batch of 4 images of 3 x 16 x 16.
 * One line per workload and mode:
 *   graph WORKLOAD MODE dispatches/step D submits/step S ms/step T host_ms/step H
 * ms/step: N steps back to back between two wgt_context_sync (the device's time when host_ms is
 * well below it); host_ms: recording and submitting them. Run with WGT_PROFILE=1 for the kernels'
 * GPU time (printed to stderr when the context is freed). tools/h200_graph_bench.sh runs it on
 * the H200. */
#include <string.h>

#include "bench_util.h"

static wgt_context *ctx;
static int tiny, steps = 10;
static const char *only_mode; /* --mode: decode's one mode */
static int64_t decode_prompt, decode_tokens; /* --prompt, --tokens (0: the defaults) */

static void line(const char *work, const char *mode, const wgt_memory_stats *a, const wgt_memory_stats *b, int n,
                 double seconds, double host)
{
    printf("graph %-6s %-8s dispatches/step %7.1f submits/step %5.2f ms/step %9.3f host_ms/step %8.3f\n", work, mode,
           (double)(b->dispatches - a->dispatches) / n, (double)(b->submits - a->submits) / n, seconds * 1e3 / n,
           host * 1e3 / n);
    fflush(stdout);
}

/* Time `steps` replays of g on input in (after 3 warm-up replays) and print its line. */
static void time_replays(wgt_graph *g, const wgt_tensor *in, const char *work, const char *mode)
{
    const wgt_tensor *ins[1] = {in};
    wgt_memory_stats a, b;
    for (int k = 0; k < 3; k++) TRY(wgt_graph_replay(g, 1, ins));
    TRY(wgt_context_sync(ctx, -1));
    wgt_context_memory_stats(ctx, &a);
    double t0 = wgt_now_seconds();
    for (int k = 0; k < steps; k++) TRY(wgt_graph_replay(g, 1, ins));
    TRY(wgt_gpu_flush(ctx));
    double host = wgt_now_seconds() - t0;
    TRY(wgt_context_sync(ctx, -1));
    double captured = wgt_now_seconds() - t0;
    wgt_context_memory_stats(ctx, &b);
    line(work, mode, &a, &b, steps, captured, host);
}

/* ---- train ------------------------------------------------------------------------------------ */

typedef struct train_run {
    wgt_train_model *m;
    wgt_optimizer *opt;
    wgt_tensor **p, **g;
    int n;
} train_run;

static wgt_status train_step(train_run *r, const wgt_tensor *ids, const wgt_tensor *tg, wgt_tensor **loss)
{
    for (int i = 0; i < r->n; i++) wgt_tensor_zero_grad(r->p[i]);
    wgt_status st = wgt_train_loss(r->m, ids, tg, loss, NULL);
    if (!st) st = wgt_backward(*loss, NULL, 0);
    for (int i = 0; i < r->n && !st; i++) st = wgt_tensor_grad(r->p[i], &r->g[i]);
    if (!st) st = wgt_optimizer_step(r->opt, (const wgt_tensor *const *)r->g);
    for (int i = 0; i < r->n; i++) wgt_tensor_free(r->g[i]), r->g[i] = NULL;
    return st;
}

static void bench_train(void)
{
    const char *path = tiny ? "tests/fixtures/train/gpt2/config.json" : "bench/configs/gpt2-small.json";
    int64_t B = tiny ? 2 : 8, L = tiny ? 16 : 512, shape[2] = {B, L};
    train_run r = {0};
    wgt_train_init init = {1, 0};
    TRY(wgt_train_model_open(ctx, path, &init, &r.m));
    r.n = wgt_train_model_param_count(r.m);
    r.p = calloc((size_t)r.n, sizeof *r.p), r.g = calloc((size_t)r.n, sizeof *r.g);
    for (int i = 0; i < r.n; i++) {
        r.p[i] = wgt_train_model_param(r.m, i);
        TRY(wgt_tensor_set_requires_grad(r.p[i], 1));
    }
    wgt_optimizer_options oo = wgt_optimizer_defaults(WGT_OPTIM_ADAMW);
    oo.lr = 3e-4, oo.weight_decay = 0.1;
    TRY(wgt_optimizer_create(ctx, &oo, r.p, r.n, &r.opt));
    int64_t V = wgt_train_model_vocab(r.m);
    int32_t *h = malloc((size_t)(B * L) * 2 * sizeof *h);
    uint32_t s = 7;
    for (int64_t i = 0; i < B * L * 2; i++) s = s * 1664525u + 1013904223u, h[i] = (int32_t)((s >> 8) % (uint32_t)V);
    wgt_tensor *ids, *tg, *loss = NULL;
    TRY(wgt_tensor_from_host(ctx, WGT_I32, 2, shape, h, &ids));
    TRY(wgt_tensor_from_host(ctx, WGT_I32, 2, shape, h + B * L, &tg));
    free(h);
    wgt_memory_stats a, b;
    for (int k = 0; k < 3; k++) {
        TRY(train_step(&r, ids, tg, &loss));
        wgt_tensor_free(loss), loss = NULL;
    }
    TRY(wgt_context_sync(ctx, -1));
    wgt_context_memory_stats(ctx, &a);
    double t0 = wgt_now_seconds(), host;
    for (int k = 0; k < steps; k++) {
        TRY(train_step(&r, ids, tg, &loss));
        wgt_tensor_free(loss), loss = NULL;
    }
    TRY(wgt_gpu_flush(ctx));
    host = wgt_now_seconds() - t0;
    TRY(wgt_context_sync(ctx, -1));
    double eager = wgt_now_seconds() - t0;
    wgt_context_memory_stats(ctx, &b);
    line("train", "eager", &a, &b, steps, eager, host);

    const wgt_tensor *in[2] = {ids, tg};
    wgt_graph *g = NULL;
    int sc;
    TRY(wgt_graph_begin(ctx, 2, in));
    TRY(wgt_graph_scalar(ctx, "step", WGT_GRAPH_STEP, wgt_optimizer_steps(r.opt) + 1, &sc));
    wgt_status st = train_step(&r, ids, tg, &loss);
    TRY(wgt_graph_end(ctx, &g));
    TRY(st);
    int64_t t = wgt_optimizer_steps(r.opt);
    for (int k = 0; k < 3; k++) {
        TRY(wgt_graph_set_scalar(g, sc, ++t));
        TRY(wgt_graph_replay(g, 2, in));
    }
    TRY(wgt_context_sync(ctx, -1));
    wgt_context_memory_stats(ctx, &a);
    t0 = wgt_now_seconds();
    for (int k = 0; k < steps; k++) {
        TRY(wgt_graph_set_scalar(g, sc, ++t));
        TRY(wgt_graph_replay(g, 2, in));
    }
    TRY(wgt_gpu_flush(ctx));
    host = wgt_now_seconds() - t0;
    TRY(wgt_context_sync(ctx, -1));
    double captured = wgt_now_seconds() - t0;
    wgt_context_memory_stats(ctx, &b);
    line("train", "captured", &a, &b, steps, captured, host);
    wgt_graph_stats gs;
    TRY(wgt_graph_get_stats(g, &gs));
    printf("graph train  fused kernels %d running %d ops; %d bind groups; pinned %.1f MiB\n", gs.fused_kernels,
           gs.fused_ops, gs.bind_groups, gs.pinned_bytes / 1048576.0);
    wgt_graph_free(g);
    wgt_tensor_free(loss), wgt_tensor_free(ids), wgt_tensor_free(tg);
    wgt_optimizer_free(r.opt);
    free(r.p), free(r.g);
    wgt_train_model_free(r.m);
    wgt_context_empty_cache(ctx);
}

/* ---- decode ----------------------------------------------------------------------------------- */

static void bench_decode(void)
{
    const char *path = tiny ? "tests/fixtures/train/qwen2/config.json" : "bench/configs/qwen2.5-0.5b.json";
    int64_t P = decode_prompt ? decode_prompt : tiny ? 8 : 512, N = decode_tokens ? decode_tokens : tiny ? 16 : 128;
    wgt_model_options mo = {0};
    mo.max_ctx = P + N + 8;
    mo.random_type = "f16";
    wgt_model *m;
    TRY(wgt_model_open_ex(ctx, path, &mo, &m));
    int64_t V = wgt_model_vocab(m);
    int32_t *ids = malloc((size_t)P * sizeof *ids);
    for (int64_t i = 0; i < P; i++) ids[i] = (int32_t)((i * 7919 + 13) % V);
    static const char *modes[4] = {"eager", "captured", "gen-eager", "gen-captured"};
    for (int mode = 0; mode < 4; mode++) {
        int graph = mode & 1;
        if (only_mode && strcmp(only_mode, modes[mode])) continue;
        setenv("WGT_DECODE_GENERIC", mode >= 2 ? "1" : "0", 1);
        wgt_sampling sp = {0};
        sp.graph = graph;
        wgt_generate_stats s;
        /* warm-up at the timed run's positions, so the kernels it needs are compiled before */
        TRY(wgt_model_generate(m, ids, P, 4, &sp, NULL, NULL, &s));
        TRY(wgt_model_generate(m, ids, P, N + 1, &sp, NULL, NULL, &s));
        int64_t n = s.n_generated > 1 ? s.n_generated - 1 : 1;
        /* the decode part only: stats count prefill too; per generated token as wgt bench does */
        printf("graph %-6s %-8s dispatches/token %6.1f submits/token %5.2f ms/token %9.3f host_ms/token %8.3f "
               "(%lld tokens, %lld replayed, %lld captures)\n", "decode", modes[mode],
               (double)s.dispatches / s.n_generated, (double)s.submits / s.n_generated, s.decode_seconds * 1e3 / n,
               s.record_seconds * 1e3 / n, (long long)n, (long long)s.graph_steps, (long long)s.graph_captures);
        fflush(stdout);
    }
    free(ids);
    wgt_model_free(m);
    wgt_context_empty_cache(ctx);
}

/* ---- blocks: a decoder's linear layers written with plain ops -------------------------------- */

/* One layer of the Qwen2.5-0.5B shape without attention: h = rms_norm(x); q, k, v = h W^T + b (k,
 * v kept, as a KV cache would keep them); x += q Wo^T; h = rms_norm(x); x += (silu(h Wg^T) *
 * (h Wu^T)) Wd^T. What the graph pass does with it: q/k/v and gate/up merge (products sharing h),
 * the residual adds fuse into the o and down products' stores, silu * up into one kernel. */
typedef struct block_w {
    wgt_tensor *n1, *n2, *wq, *bq, *wk, *bk, *wv, *bv, *wo, *wg, *wu, *wd;
} block_w;

#define BLOCKS_MAX 24

static wgt_status blocks_forward(const block_w *w, int layers, const wgt_tensor *x0, wgt_tensor **kv, wgt_tensor **out)
{
    wgt_tensor *x = NULL;
    wgt_status st = wgt_tensor_contiguous(x0, &x);
    for (int l = 0; l < layers && !st; l++) {
        const block_w *b = &w[l];
        wgt_tensor *h = NULL, *q = NULL, *o = NULL, *x1 = NULL, *h2 = NULL, *g = NULL, *u = NULL, *sg = NULL, *m = NULL,
                   *d = NULL, *x2 = NULL;
        st = wgt_rms_norm(x, 1, b->n1, 1e-6, &h);
        if (!st) st = wgt_linear(h, b->wq, b->bq, &q);
        if (!st) st = wgt_linear(h, b->wk, b->bk, &kv[2 * l]);
        if (!st) st = wgt_linear(h, b->wv, b->bv, &kv[2 * l + 1]);
        if (!st) st = wgt_linear(q, b->wo, NULL, &o);
        if (!st) st = wgt_binary(WGT_BINARY_ADD, x, o, &x1);
        if (!st) st = wgt_rms_norm(x1, 1, b->n2, 1e-6, &h2);
        if (!st) st = wgt_linear(h2, b->wg, NULL, &g);
        if (!st) st = wgt_linear(h2, b->wu, NULL, &u);
        if (!st) st = wgt_unary(WGT_UNARY_SILU, g, &sg);
        if (!st) st = wgt_binary(WGT_BINARY_MUL, sg, u, &m);
        if (!st) st = wgt_linear(m, b->wd, NULL, &d);
        if (!st) st = wgt_binary(WGT_BINARY_ADD, x1, d, &x2);
        wgt_tensor *all[] = {x, h, q, o, x1, h2, g, u, sg, m, d};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++) wgt_tensor_free(all[i]);
        x = x2;
    }
    if (st) {
        wgt_tensor_free(x);
        return st;
    }
    *out = x;
    return WGT_OK;
}

static void free_kv(wgt_tensor **kv, int n)
{
    for (int i = 0; i < n; i++) wgt_tensor_free(kv[i]), kv[i] = NULL;
}

/* rows: 1 (a decode step: the gemv kernels) or 128 (a prefill chunk: the tiled ones). Modes:
 * eager, captured (the defaults), allepi (WGT_GRAPH_FUSE_MATMUL=1: epilogues in every product),
 * nomerge (WGT_GRAPH_MERGE=0), noepi (WGT_GRAPH_FUSE_MATMUL=0) and neither. */
static void bench_blocks(int64_t rows)
{
    int layers = tiny ? 2 : BLOCKS_MAX;
    int64_t D = tiny ? 64 : 896, KV = tiny ? 16 : 128, F = tiny ? 128 : 4864;
    block_w w[BLOCKS_MAX];
    int64_t sdd[2] = {D, D}, skd[2] = {KV, D}, sfd[2] = {F, D}, sdf[2] = {D, F};
    for (int l = 0; l < layers; l++) {
        float a = 0.5f / 30.0f, c = 0.5f / 70.0f; /* about 1/sqrt(fan-in) */
        w[l] = (block_w){bench_random(ctx, WGT_F32, 1, &D, 0.9f, 1.1f), bench_random(ctx, WGT_F32, 1, &D, 0.9f, 1.1f),
                         bench_random(ctx, WGT_F16, 2, sdd, -a, a), bench_random(ctx, WGT_F32, 1, &D, -0.1f, 0.1f),
                         bench_random(ctx, WGT_F16, 2, skd, -a, a), bench_random(ctx, WGT_F32, 1, &KV, -0.1f, 0.1f),
                         bench_random(ctx, WGT_F16, 2, skd, -a, a), bench_random(ctx, WGT_F32, 1, &KV, -0.1f, 0.1f),
                         bench_random(ctx, WGT_F16, 2, sdd, -a, a), bench_random(ctx, WGT_F16, 2, sfd, -a, a),
                         bench_random(ctx, WGT_F16, 2, sfd, -a, a), bench_random(ctx, WGT_F16, 2, sdf, -c, c)};
    }
    int64_t xs[2] = {rows, D};
    wgt_tensor *x = bench_random(ctx, WGT_F32, 2, xs, -1.0f, 1.0f), *y = NULL, *kv[2 * BLOCKS_MAX] = {0};
    char work[16];
    snprintf(work, sizeof work, "blocks%lld", (long long)rows);
    wgt_memory_stats a, b;
    for (int k = 0; k < 3; k++) {
        TRY(blocks_forward(w, layers, x, kv, &y));
        wgt_tensor_free(y), y = NULL, free_kv(kv, 2 * layers);
    }
    TRY(wgt_context_sync(ctx, -1));
    wgt_context_memory_stats(ctx, &a);
    double t0 = wgt_now_seconds(), host;
    for (int k = 0; k < steps; k++) {
        TRY(blocks_forward(w, layers, x, kv, &y));
        wgt_tensor_free(y), y = NULL, free_kv(kv, 2 * layers);
    }
    TRY(wgt_gpu_flush(ctx));
    host = wgt_now_seconds() - t0;
    TRY(wgt_context_sync(ctx, -1));
    double eager = wgt_now_seconds() - t0;
    wgt_context_memory_stats(ctx, &b);
    line(work, "eager", &a, &b, steps, eager, host);
    static const char *modes[][3] = {{"captured", NULL, NULL},
                                     {"allepi", "WGT_GRAPH_FUSE_MATMUL", "1"},
                                     {"nomerge", "WGT_GRAPH_MERGE", "0"},
                                     {"noepi", "WGT_GRAPH_FUSE_MATMUL", "0"},
                                     {"neither", "WGT_GRAPH_MERGE", "0"}};
    for (int md = 0; md < 5; md++) {
        if (modes[md][1]) setenv(modes[md][1], modes[md][2], 1);
        if (md == 4) setenv("WGT_GRAPH_FUSE_MATMUL", "0", 1);
        const wgt_tensor *in[1] = {x};
        wgt_graph *g = NULL;
        TRY(wgt_graph_begin(ctx, 1, in));
        wgt_status st = blocks_forward(w, layers, x, kv, &y);
        TRY(wgt_graph_end(ctx, &g));
        TRY(st);
        if (modes[md][1]) unsetenv(modes[md][1]);
        unsetenv("WGT_GRAPH_FUSE_MATMUL");
        time_replays(g, x, work, modes[md][0]);
        wgt_graph_free(g);
        wgt_tensor_free(y), y = NULL, free_kv(kv, 2 * layers);
    }
    wgt_tensor_free(x);
    for (int l = 0; l < layers; l++) {
        wgt_tensor **t = &w[l].n1;
        for (int i = 0; i < 12; i++) wgt_tensor_free(t[i]);
    }
    wgt_context_empty_cache(ctx);
}

/* ---- conv ------------------------------------------------------------------------------------- */

typedef struct conv_net {
    wgt_tensor *w1, *b1, *w2, *b2, *wl, *bl;
} conv_net;

static wgt_status conv_forward(const conv_net *n, const wgt_tensor *x, wgt_tensor **out)
{
    wgt_tensor *c1 = NULL, *a1 = NULL, *g1 = NULL, *c2 = NULL, *a2 = NULL, *r2 = NULL, *p = NULL;
    wgt_conv_params cp1 = {0}, cp2 = {0};
    cp1.pad_begin[0] = cp1.pad_begin[1] = cp1.pad_end[0] = cp1.pad_end[1] = 1;
    cp2 = cp1, cp2.stride[0] = cp2.stride[1] = 2;
    wgt_status st = wgt_conv(x, n->w1, NULL, &cp1, &c1);
    int64_t bshape[4] = {1, wgt_tensor_shape(n->b1)[0], 1, 1}, bshape2[4] = {1, wgt_tensor_shape(n->b2)[0], 1, 1};
    wgt_tensor *b1v = NULL, *b2v = NULL;
    if (!st) st = wgt_tensor_reshape(n->b1, 4, bshape, &b1v);
    if (!st) st = wgt_binary(WGT_BINARY_ADD, c1, b1v, &a1);
    if (!st) st = wgt_unary(WGT_UNARY_GELU, a1, &g1);
    if (!st) st = wgt_conv(g1, n->w2, NULL, &cp2, &c2);
    if (!st) st = wgt_tensor_reshape(n->b2, 4, bshape2, &b2v);
    if (!st) st = wgt_binary(WGT_BINARY_ADD, c2, b2v, &a2);
    if (!st) st = wgt_unary(WGT_UNARY_RELU, a2, &r2);
    if (!st) st = wgt_reduce(WGT_REDUCE_MEAN, r2, (1u << 2) | (1u << 3), 0, 0, &p);
    if (!st) st = wgt_linear(p, n->wl, n->bl, out);
    wgt_tensor *all[] = {c1, a1, g1, c2, a2, r2, p, b1v, b2v};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wgt_tensor_free(all[i]);
    return st;
}

static void bench_conv(void)
{
    int64_t N = tiny ? 4 : 64, H = tiny ? 16 : 64, C1 = 32, C2 = 64, K = 10;
    int64_t xs[4] = {N, 3, H, H}, w1s[4] = {C1, 3, 3, 3}, w2s[4] = {C2, C1, 3, 3}, wls[2] = {K, C2};
    conv_net n = {bench_random(ctx, WGT_F32, 4, w1s, -0.2f, 0.2f), bench_random(ctx, WGT_F32, 1, &C1, -0.1f, 0.1f),
                  bench_random(ctx, WGT_F32, 4, w2s, -0.05f, 0.05f), bench_random(ctx, WGT_F32, 1, &C2, -0.1f, 0.1f),
                  bench_random(ctx, WGT_F32, 2, wls, -0.1f, 0.1f), bench_random(ctx, WGT_F32, 1, &K, -0.1f, 0.1f)};
    wgt_tensor *x = bench_random(ctx, WGT_F32, 4, xs, -1.0f, 1.0f), *y = NULL;
    wgt_memory_stats a, b;
    for (int k = 0; k < 3; k++) {
        TRY(conv_forward(&n, x, &y));
        wgt_tensor_free(y), y = NULL;
    }
    TRY(wgt_context_sync(ctx, -1));
    wgt_context_memory_stats(ctx, &a);
    double t0 = wgt_now_seconds(), host;
    for (int k = 0; k < steps; k++) {
        TRY(conv_forward(&n, x, &y));
        wgt_tensor_free(y), y = NULL;
    }
    TRY(wgt_gpu_flush(ctx));
    host = wgt_now_seconds() - t0;
    TRY(wgt_context_sync(ctx, -1));
    double eager = wgt_now_seconds() - t0;
    wgt_context_memory_stats(ctx, &b);
    line("conv", "eager", &a, &b, steps, eager, host);
    const wgt_tensor *in[1] = {x};
    wgt_graph *g = NULL;
    TRY(wgt_graph_begin(ctx, 1, in));
    wgt_status st = conv_forward(&n, x, &y);
    TRY(wgt_graph_end(ctx, &g));
    TRY(st);
    time_replays(g, x, "conv", "captured");
    wgt_graph_stats gs;
    TRY(wgt_graph_get_stats(g, &gs));
    printf("graph conv   fused kernels %d running %d ops\n", gs.fused_kernels, gs.fused_ops);
    wgt_graph_free(g);
    wgt_tensor_free(y), wgt_tensor_free(x);
    wgt_tensor *all[] = {n.w1, n.b1, n.w2, n.b2, n.wl, n.bl};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wgt_tensor_free(all[i]);
}

int main(int argc, char **argv)
{
    int want[4] = {0, 0, 0, 0}, any = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tiny")) tiny = 1;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mode") && i + 1 < argc) only_mode = argv[++i];
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) decode_prompt = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) decode_tokens = atoll(argv[++i]);
        else if (!strcmp(argv[i], "train")) want[0] = any = 1;
        else if (!strcmp(argv[i], "decode")) want[1] = any = 1;
        else if (!strcmp(argv[i], "conv")) want[2] = any = 1;
        else if (!strcmp(argv[i], "blocks")) want[3] = any = 1;
        else {
            fprintf(stderr, "usage: bench_graph [--tiny] [--steps N] [--mode M] [--prompt P] [--tokens N] "
                            "[train|decode|conv|blocks...]\n");
            return 2;
        }
    }
    if (steps < 1) steps = 1;
    TRY(wgt_context_create(NULL, &ctx));
    if (!any || want[0]) bench_train();
    if (!any || want[1]) bench_decode();
    if (!any || want[2]) bench_conv();
    if (!any || want[3]) {
        bench_blocks(1);
        bench_blocks(128);
    }
    wgt_context_free(ctx);
    return 0;
}
