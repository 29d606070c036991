/* Sampling on the device (src/kernels/models_sample.wgsl): one workgroup reads the logits and writes one
 * token id; only that id comes back to the host. On a CPU-reference context the same rules run on
 * the host (sample_host in generate.c is not used then: this file carries its own reference). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"
#include "ops/ops.h"

typedef struct sample_params {
    uint32_t vocab, n_hist, top_k, step;
    float temperature, top_p, min_p, penalty;
    uint32_t seed_lo, seed_hi, pad0, pad1;
    float frequency, presence;
    uint32_t pad2, pad3;
} sample_params;

/* The prelude depends on the workgroup size alone: built once per context. */
static char *sample_prelude(void *arg)
{
    char *pre = malloc(64);
    if (pre) snprintf(pre, 64, "const WG: u32 = %uu;\n", *(const uint32_t *)arg);
    return pre;
}

wgt_status wgt_sample_gpu(const wgt_tensor *logits, const wgt_tensor *hist, int64_t n_hist, const wgt_sampling *sp,
                          uint32_t step, wgt_tensor **out)
{
    OP_BEGIN(logits, out);
    int64_t V = wgt_layout_numel(&logits->l);
    if (logits->l.dtype != WGT_F32 || !wgt_layout_is_contiguous(&logits->l) || V <= 0)
        return op_fail(ctx, WGT_ERR_INTERNAL, "sample: logits must be contiguous f32");
    wgt_tensor *scratch = NULL, *res = NULL;
    int64_t one = 1;
    wgt_status st;
    if (mdl_sampling_is_plain_greedy(sp)) {
        /* greedy: the first maximum, by the two-stage argmax reduction (the sampling kernel runs
         * in one workgroup: hundreds of microseconds over a 150k vocabulary on a large GPU) */
        wgt_tensor *idx;
        if ((st = wgt_reduce(WGT_REDUCE_ARGMAX, logits, 0, 0, 0, &idx))) return st;
        st = wgt_tensor_reshape(idx, 1, &one, out);
        wgt_tensor_free(idx);
        return st;
    }
    if ((st = wgt_tensor_new(ctx, WGT_F32, 1, &V, &scratch)) || (st = wgt_tensor_new(ctx, WGT_I32, 1, &one, &res)))
        goto done;
    wgt_kernel *k;
    /* the workgroup size: 256, or the device's lower limit (compatibility mode: 128) */
    uint32_t wg = op_workgroup_size(ctx);
    if ((st = wgt_gpu_kernel_keyed(ctx, "models_sample", &wg, sizeof wg, sample_prelude, &wg, "main", NULL, 0, &k))) goto done;
    sample_params p = {0};
    p.vocab = (uint32_t)V;
    p.n_hist = (uint32_t)n_hist;
    p.top_k = sp->top_k > 0 ? (uint32_t)sp->top_k : 0;
    p.step = step;
    p.temperature = sp->temperature;
    p.top_p = sp->top_p > 0 && sp->top_p < 1 ? sp->top_p : 1.0f;
    p.min_p = sp->min_p > 0 ? sp->min_p : 0;
    p.penalty = sp->repeat_penalty > 0 ? sp->repeat_penalty : 1.0f;
    p.seed_lo = (uint32_t)sp->seed;
    p.seed_hi = (uint32_t)(sp->seed >> 32);
    p.frequency = sp->frequency_penalty;
    p.presence = sp->presence_penalty;
    wgt_binding b[4];
    int64_t base;
    if ((st = op_bind_all(logits, &b[0], &base)) || (st = op_bind_all(hist, &b[1], &base)) ||
        (st = op_bind_all(scratch, &b[2], &base)) || (st = op_bind_all(res, &b[3], &base)))
        goto done;
    if (logits->l.offset || hist->l.offset) {
        st = op_fail(ctx, WGT_ERR_INTERNAL, "sample: logits and history must start their storage");
        goto done;
    }
    /* a captured decode step (wgt_model_generate with graph) patches the draw's step (a seed role)
     * and the history's length (an offset, the step's slot in the history) per replay */
    wgt_gpu_param_scalar(ctx, offsetof(sample_params, step), WGT_PARAM_U32, WGT_GRAPH_SEED, step, 1, 0);
    wgt_gpu_param_scalar(ctx, offsetof(sample_params, n_hist), WGT_PARAM_U32, WGT_GRAPH_OFFSET, n_hist, 1, 0);
    st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 4, 1, 1, 1);
done:
    wgt_tensor_free(scratch);
    return op_finish(st, res, out);
}
