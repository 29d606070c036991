/* The normalisation kernel's uniform (src/kernels/norm.wgsl's Params), shared with graph fusion
 * (elementwise_fuse.c reads a captured rms_norm's parameters to fuse it into the product after it). */
#ifndef WGT_OPS_NORM_H
#define WGT_OPS_NORM_H

#include "ops/ops.h"

enum { NORM_SOFTMAX, NORM_LOG_SOFTMAX, NORM_LAYER, NORM_RMS, NORM_GIVEN };

typedef struct norm_params {
    uint32_t n_rows, R, op, off, row_simple, row_stride;
    float eps;
    uint32_t zero, inner, has_w, has_b, wmod, wmul, wdiv, w_off, b_off, m_off, v_off, pdt, row0, out_w0, pad0, pad1, pad2;
    op_layout_params kept, row;
} norm_params;

#endif
