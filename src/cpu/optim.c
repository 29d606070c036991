/* CPU reference of torch.optim's SGD, Adam and AdamW (single-tensor algorithms, torch 2.x):
 *
 *   SGD:   g += wd p;  buf = first ? g : momentum buf + (1 - dampening) g;
 *          g = nesterov ? g + momentum buf : buf;  p += -lr g
 *   Adam:  (AdamW: p *= 1 - lr wd; Adam: g += wd p)
 *          m = lerp(m, g, 1 - beta1);  v = beta2 v + (1 - beta2) g g;  (amsgrad: vmax = max(vmax, v))
 *          p += (-lr / (1 - beta1^t)) m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
 *
 * Each line is one torch tensor op on f32 tensors, rounded to f32 after each op, in torch's operand
 * order (addcmul: self + (s * a) * b; addcdiv: self + (s * a) / b; lerp: torch's two-sided
 * formula). torch's vectorised CPU kernels may fuse some of these into FMAs, so bit equality with
 * torch is not promised: the tests state tolerances. */
#include <math.h>

#include "cpu/optim.h"

int wgt_optim_slots(const wgt_optimizer_options *o, int half)
{
    int k = 0;
    if (o->kind == WGT_OPTIM_SGD) k = o->momentum != 0.0;
    else k = o->amsgrad ? 3 : 2;
    return k + (half != 0);
}

void wgt_optim_scalars_make(const wgt_optimizer_options *o, int64_t t, wgt_optim_scalars *s)
{
    /* torch takes these Python floats into f32 kernels: each is computed in double, then rounded */
    double bc1 = 1.0 - pow(o->beta1, (double)t), bc2 = 1.0 - pow(o->beta2, (double)t);
    *s = (wgt_optim_scalars){
        .lr = (float)o->lr,
        .wd = (float)o->weight_decay,
        .momentum = (float)o->momentum,
        .damp1 = (float)(1.0 - o->dampening),
        .w1 = (float)(1.0 - o->beta1),
        .beta2 = (float)o->beta2,
        .w2 = (float)(1.0 - o->beta2),
        .eps = (float)o->eps,
        .step_size = (float)(o->lr / bc1),
        .bc2_sqrt = (float)sqrt(bc2),
        .decay = (float)(1.0 - o->lr * o->weight_decay),
        .first = t == 1,
    };
}

/* torch's lerp (ATen Lerp.h): exact at both ends of the weight range */
static float lerp(float self, float end, float w)
{
    return fabsf(w) < 0.5f ? self + w * (end - self) : end - (end - self) * (1.0f - w);
}

/* torch.maximum: NaN propagates */
static float maximum(float a, float b)
{
    return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
}

void wgt_cpu_optim_step(const wgt_optimizer_options *o, const wgt_optim_scalars *s, int64_t n, float *p,
                        const float *g, float *state, int slots)
{
    for (int64_t i = 0; i < n; i++) {
        float *st = state + i * slots;
        float *pi = p ? &p[i] : &st[slots - 1];
        float x = *pi, gi = g[i];
        if (o->kind == WGT_OPTIM_SGD) {
            if (o->weight_decay != 0.0) gi = gi + s->wd * x;
            if (o->momentum != 0.0) {
                st[0] = s->first ? gi : st[0] * s->momentum + s->damp1 * gi;
                gi = o->nesterov ? gi + s->momentum * st[0] : st[0];
            }
            x = x + -s->lr * gi;
        } else {
            if (o->kind == WGT_OPTIM_ADAMW) x = x * s->decay;
            else if (o->weight_decay != 0.0) gi = gi + s->wd * x;
            st[0] = lerp(st[0], gi, s->w1);
            st[1] = st[1] * s->beta2;
            st[1] = st[1] + (s->w2 * gi) * gi;
            float v = st[1];
            if (o->amsgrad) v = st[2] = maximum(st[2], st[1]);
            float denom = sqrtf(v) / s->bc2_sqrt + s->eps;
            x = x + (-s->step_size * st[0]) / denom;
        }
        *pi = x;
    }
}
