/* What the layers above the device layer ask of a context (gpu.h): the only reads of struct
 * wgt_context outside src/gpu go through these. */
#include "gpu/gpu.h"

int wgt_gpu_runs_reference(const wgt_context *ctx) { return ctx->cpu; }

const wgt_limits *wgt_gpu_limits(const wgt_context *ctx) { return &ctx->info.limits; }

int wgt_gpu_has_subgroups(const wgt_context *ctx) { return ctx->info.has_subgroups; }

int wgt_gpu_has_f16(const wgt_context *ctx) { return ctx->info.has_f16; }

int wgt_gpu_is_software(const wgt_context *ctx) { return ctx->info.is_cpu; }

const wgt_adapter_info *wgt_gpu_info(const wgt_context *ctx) { return &ctx->info; }

int wgt_gpu_sgmatrix_layout_template(void) { return wgt_abi != NULL && wgt_abi->wgsl_sgmatrix_layout_template; }

int wgt_gpu_debug(const wgt_context *ctx) { return ctx->debug; }

int wgt_gpu_avoid_barriers(const wgt_context *ctx) { return ctx->avoid_barriers; }

void wgt_gpu_test_avoid_barriers(wgt_context *ctx, int on)
{
    if (ctx && !ctx->cpu) ctx->avoid_barriers = on != 0;
}

const void *wgt_gpu_device_identity(const wgt_context *ctx) { return ctx->device; }

int wgt_gpu_buffer_live(const wgt_context *ctx, const wgt_buffer *buf, uint64_t id)
{
    for (int j = 0; j < ctx->n_buffers; j++)
        if (ctx->all_buffers[j] == buf) return buf->id == id && buf->in_use;
    return 0;
}

void *wgt_gpu_ops_state(const wgt_context *ctx) { return ctx->ops_state; }

void wgt_gpu_set_ops_state(wgt_context *ctx, void *state, void (*free_state)(wgt_context *ctx, void *state))
{
    ctx->ops_state = state;
    ctx->ops_state_free = free_state;
}
