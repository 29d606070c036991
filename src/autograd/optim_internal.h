/* What optim.c, optim_clip.c and optim_io.c share: the optimizer's fields. */
#ifndef WGT_AUTOGRAD_OPTIM_INTERNAL_H
#define WGT_AUTOGRAD_OPTIM_INTERNAL_H

#include "cpu/optim.h"
#include "tensor/tensor.h"

typedef struct optim_param {
    wgt_tensor *p;      /* the parameter (a reference), written in place */
    wgt_tensor *state;  /* f32 [numel * slots], slots interleaved per element; NULL when slots is 0 */
    int slots;          /* wgt_optim_slots(options, half) */
    int half;           /* f16/bf16 parameter: the last slot is its f32 master */
    int64_t steps;      /* updates of this parameter so far (torch's state['step']) */
    double wd;          /* its weight decay (torch's param group value; default: options') */
} optim_param;

struct wgt_optimizer {
    wgt_context *ctx;
    wgt_optimizer_options o;
    int n;
    optim_param *ps;    /* [n] */
    int64_t steps;      /* wgt_optimizer_step calls */
    wgt_tensor *dummy;  /* one f32 word bound where a kernel declares state it does not use */
};

wgt_status optim_check_options(const wgt_optimizer_options *o);
/* (Re)make parameter i's state for the current options: zeros, a half parameter's master from it. */
wgt_status optim_alloc_state(wgt_optimizer *opt, int i);
/* The slot holding state `name` of parameter q under the current options, or -1. */
int optim_slot_of(const wgt_optimizer *opt, const optim_param *q, const char *name);
/* The options of parameter q's update: the optimizer's, with q's weight decay. */
wgt_optimizer_options optim_param_options(const wgt_optimizer *opt, const optim_param *q);

#endif
