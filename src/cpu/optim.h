/* The CPU reference of the optimizer updates (torch.optim's single-tensor algorithms), the oracle
 * of the GPU kernel (src/kernels/autograd_optim.wgsl) and the path of a CPU context. The per-step scalars
 * are derived once, on the host, in double precision and rounded to f32 where torch rounds them
 * (a Python float scalar meets an f32 tensor); both paths take them from wgt_optim_scalars_make. */
#ifndef WGT_CPU_OPTIM_H
#define WGT_CPU_OPTIM_H

#include <stdint.h>

#include "wgt.h"

/* The uniform block of autograd_optim.wgsl, field for field (16-byte multiple). */
typedef struct wgt_optim_scalars {
    float lr;          /* SGD: p += -lr * g */
    float wd;          /* L2 decay (SGD, Adam): g += wd * p */
    float momentum;    /* SGD */
    float damp1;       /* SGD: 1 - dampening */
    float w1;          /* Adam: 1 - beta1, the lerp weight of exp_avg */
    float beta2;       /* Adam */
    float w2;          /* Adam: 1 - beta2 */
    float eps;         /* Adam */
    float step_size;   /* Adam: lr / (1 - beta1^t) */
    float bc2_sqrt;    /* Adam: sqrt(1 - beta2^t) */
    float decay;       /* AdamW: 1 - lr * weight_decay */
    uint32_t first;    /* SGD: 1 on a parameter's first step (the momentum buffer becomes the gradient) */
} wgt_optim_scalars;

/* The scalars of step t (1-based: the parameter's step count including this step). */
void wgt_optim_scalars_make(const wgt_optimizer_options *o, int64_t t, wgt_optim_scalars *s);

/* State slots per element: SGD with momentum 1 (momentum_buffer); Adam 2 (exp_avg, exp_avg_sq),
 * 3 with amsgrad (max_exp_avg_sq); plus 1 for the f32 master of a half parameter (last). */
int wgt_optim_slots(const wgt_optimizer_options *o, int half);

/* One step over n elements. p: the f32 parameter values, updated in place, or NULL for a half
 * parameter, whose f32 master is the last slot; g: the gradient in f32; state: n * slots floats, element i's slots at i * slots (interleaved,
 * as the kernel keeps them). Arithmetic in f32, in torch's order of operations. */
void wgt_cpu_optim_step(const wgt_optimizer_options *o, const wgt_optim_scalars *s, int64_t n, float *p,
                        const float *g, float *state, int slots);

#endif
