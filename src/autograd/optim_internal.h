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

/* The lr schedule a captured trainer step follows (optim_set_schedule): the lr after `steps`
 * steps is optim_schedule_lr's, the trainer's formula (wgt_lr_at with a floor of min_ratio). */
typedef struct optim_schedule {
    int on;
    wgt_lr_schedule schedule;
    double peak;
    int64_t warmup, total;
    double min_ratio;
} optim_schedule;

struct wgt_optimizer {
    wgt_context *ctx;
    wgt_optimizer_options o;
    int n;
    optim_param *ps;    /* [n] */
    int64_t steps;      /* wgt_optimizer_step calls */
    wgt_tensor *dummy;  /* one f32 word bound where a kernel declares state it does not use */
    optim_schedule sched; /* on: a captured step recomputes the lr from the step (trainer graphs) */
};

double optim_schedule_lr(const optim_schedule *sc, int64_t steps);
/* Captured steps follow schedule sc (NULL: the lr set at capture stays). */
void optim_set_schedule(wgt_optimizer *opt, const optim_schedule *sc);
/* A replay of a captured step updated every parameter once: count it as wgt_optimizer_step does. */
void optim_count_replay(wgt_optimizer *opt);

wgt_status optim_check_options(const wgt_optimizer_options *o);
/* (Re)make parameter i's state for the current options: zeros, a half parameter's master from it. */
wgt_status optim_alloc_state(wgt_optimizer *opt, int i);
/* The slot holding state `name` of parameter q under the current options, or -1. */
int optim_slot_of(const wgt_optimizer *opt, const optim_param *q, const char *name);
/* The options of parameter q's update: the optimizer's, with q's weight decay. */
wgt_optimizer_options optim_param_options(const wgt_optimizer *opt, const optim_param *q);

#endif
