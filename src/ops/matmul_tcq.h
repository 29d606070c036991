/* Quantized linear layers on the tensor cores (matmul_tcq.c, src/kernels/matmul_tcq.wgsl): qlinear.c
 * hands a prefill product here first. */
#ifndef WGT_OPS_MATMUL_TCQ_H
#define WGT_OPS_MATMUL_TCQ_H

#include "ops/ops.h"

/* y [tokens, rows] (a new f32 tensor) = x [tokens, cols] (f32, contiguous, offset a multiple of 4)
 * times the blocks w (u8 [rows, row_bytes] of type) transposed, plus bias [rows] (f32 contiguous)
 * or NULL. Sets *done when it ran (Q8_0 / Q4_0, the device has 16x16x16 f16 subgroup matrices or
 * emulation is asked for, enough tokens, everything within one binding); else leaves y alone. */
wgt_status op_matmul_tcq(wgt_context *ctx, wgt_ftype type, const wgt_tensor *x, const wgt_tensor *w,
                         const wgt_tensor *bias, int64_t tokens, int64_t rows, int64_t cols, wgt_tensor *y, int *done);

#endif
