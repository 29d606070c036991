/* Optimizer step time: bench_optim [--size small|gpt2] [--reps N]
 * The parameter tensors of GPT-2 small (124M parameters, 148 tensors; --size small: one layer of
 * width 256 for the CPU adapters), gradients of ones scaled down, and for each configuration the
 * time of one wgt_optimizer_step (and of wgt_clip_grad_norm) with the effective bandwidth: bytes
 * each element's update must read and write (parameter, gradient, state, master) over the time.
 * Each figure: bench_util.h's bench_seconds (a quarter second of warm-up steps, then N steps
 * recorded back to back between two wgt_context_sync, wall clock). tools/bench_optim_torch.py
 * measures torch.optim on CUDA for the same shapes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/ops.h"

#include "bench_util.h"

enum { MAXT = 200 };
static int64_t shapes[MAXT][2];
static int n_tensors;

static void add(int64_t a, int64_t b) { shapes[n_tensors][0] = a, shapes[n_tensors++][1] = b; }

/* GPT-2's parameters (transformers' names in order): wte, wpe, per layer ln_1, attn c_attn /
 * c_proj, ln_2, mlp c_fc / c_proj (Conv1D weights [in, out]), ln_f. 1-D tensors have b == 0. */
static void gpt2(int64_t vocab, int64_t ctx, int64_t d, int layers)
{
    add(vocab, d), add(ctx, d);
    for (int l = 0; l < layers; l++) {
        add(d, 0), add(d, 0), add(d, 3 * d), add(3 * d, 0), add(d, d), add(d, 0);
        add(d, 0), add(d, 0), add(d, 4 * d), add(4 * d, 0), add(4 * d, d), add(d, 0);
    }
    add(d, 0), add(d, 0);
}

typedef struct call {
    wgt_optimizer *opt;
    wgt_tensor **g;
} call;

static wgt_status step_once(void *arg)
{
    const call *c = arg;
    return wgt_optimizer_step(c->opt, (const wgt_tensor *const *)c->g);
}

static wgt_status clip_once(void *arg)
{
    const call *c = arg;
    wgt_tensor *norm = NULL;
    wgt_status st = wgt_clip_grad_norm(c->g, n_tensors, 1e9, &norm);
    wgt_tensor_free(norm);
    return st;
}

static void bench(wgt_context *ctx, const char *name, const wgt_optimizer_options *o, wgt_dtype pdt, wgt_dtype gdt,
                  int reps)
{
    wgt_tensor *p[MAXT], *g[MAXT];
    int64_t total = 0;
    for (int i = 0; i < n_tensors; i++) {
        int nd = shapes[i][1] ? 2 : 1;
        TRY(wgt_full(ctx, pdt, nd, shapes[i], 0.5, &p[i]));
        TRY(wgt_full(ctx, gdt, nd, shapes[i], 1e-3, &g[i]));
        total += wgt_tensor_numel(p[i]);
    }
    wgt_optimizer *opt;
    TRY(wgt_optimizer_create(ctx, o, p, n_tensors, &opt));
    int slots = o->kind == WGT_OPTIM_SGD ? (o->momentum != 0) : 2 + (o->amsgrad != 0);
    /* bytes an element's update moves: the f32 parameter read and written (a half parameter: its
     * f32 master read and written, and its half word read and written), the gradient read, each
     * state slot read and written */
    double per = (pdt == WGT_F32 ? 8.0 : 12.0) + (double)wgt_dtype_size(gdt) + 8.0 * slots;
    call c = {opt, g};
    double t = bench_seconds(ctx, step_once, &c, reps);
    printf("%-22s %-4s params %-4s grads %11lld elements in %3d tensors: %8.3f ms a step, %7.1f GB/s\n", name,
           wgt_dtype_name(pdt), wgt_dtype_name(gdt), (long long)total, n_tensors, t * 1e3,
           per * (double)total / t / 1e9);
    if (pdt == WGT_F32 && o->kind == WGT_OPTIM_ADAMW) {
        t = bench_seconds(ctx, clip_once, &c, reps);
        printf("%-22s %-4s grads %11lld elements: %8.3f ms, %7.1f GB/s (read twice, written once)\n",
               "clip_grad_norm", wgt_dtype_name(gdt), (long long)total, t * 1e3, 12.0 * (double)total / t / 1e9);
    }
    wgt_optimizer_free(opt);
    for (int i = 0; i < n_tensors; i++) wgt_tensor_free(p[i]), wgt_tensor_free(g[i]);
}

int main(int argc, char **argv)
{
    int reps = 10, small = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) small = !strcmp(argv[++i], "small");
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_optim [--size small|gpt2] [--reps N]\n");
            return 2;
        }
    }
    if (small) gpt2(1000, 64, 256, 1);
    else gpt2(50257, 1024, 768, 12);
    wgt_context *ctx;
    TRY(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    TRY(wgt_context_adapter_info(ctx, &info));
    printf("adapter: %s (%s)\n", info.name, info.backend_name);
    wgt_optimizer_options adamw = wgt_optimizer_defaults(WGT_OPTIM_ADAMW), sgd = wgt_optimizer_defaults(WGT_OPTIM_SGD);
    sgd.momentum = 0.9;
    bench(ctx, "adamw", &adamw, WGT_F32, WGT_F32, reps);
    bench(ctx, "adamw", &adamw, WGT_BF16, WGT_BF16, reps);
    bench(ctx, "adamw", &adamw, WGT_BF16, WGT_F32, reps);
    bench(ctx, "sgd momentum 0.9", &sgd, WGT_F32, WGT_F32, reps);
    wgt_context_free(ctx);
    return 0;
}
