/* The recorder's fast path (see record.h): one pointer test and one flag test per op when autograd
 * is unused, a scan of the inputs' autograd slots otherwise. */
#include <stdio.h>
#include <string.h>

#include "tensor/record.h"
#include "tensor/tensor.h"

static op_record_fn record_hook;
/* Per thread, as PyTorch's grad mode: a no-grad scope on one thread leaves others recording. */
static _Thread_local int grad_off;

static op_tracked_fn tracked_hook;

void op_record_set_hook(op_record_fn hook) { record_hook = hook; }
void op_tracked_set_hook(op_tracked_fn hook) { tracked_hook = hook; }
int op_tracked(const wgt_tensor *t) { return t && t->ag && tracked_hook && tracked_hook(t); }
int op_grad_mode(void) { return !grad_off; }
void op_grad_mode_set(int on) { grad_off = !on; }

wgt_status op_record(wgt_status st, op_grad_id op, const wgt_tensor *const *in, int n_in, const void *params,
                     size_t params_bytes, wgt_tensor **out)
{
    if (st || !record_hook || grad_off || !out || !*out) return st;
    for (int i = 0; i < n_in; i++) {
        if (!in[i] || !in[i]->ag) continue;
        if ((st = record_hook(op, in, n_in, params, params_bytes, *out))) {
            wgt_tensor_free(*out);
            *out = NULL;
        }
        return st;
    }
    return WGT_OK;
}

wgt_status op_record_nondiff(wgt_status st, const char *name, const wgt_tensor *const *in, int n_in, wgt_tensor **out)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", name);
    return op_record(st, OP_GRAD_NONDIFF, in, n_in, buf, strlen(buf) + 1, out);
}
