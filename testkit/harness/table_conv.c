/* Harness entries of the convolutions (src/ops/conv.c): conv1d/2d/3d, depthwise, the implicit-GEMM
 * path, conv_transpose1d/2d (direct and GEMM paths). Inputs x, weight, bias; variants pick stride,
 * padding, dilation and groups. The case's layouts apply to all three (weights are made contiguous
 * by the op); the broadcast case expands x over the batch. */
#include <string.h>

#include "harness/harness.h"
#include "ops/api.h"
#include "ops/ops.h"

#define DIMS(...) (int64_t[]){__VA_ARGS__}

/* The shapes of each conv row, by the row's code (src/ops/conv.def). groups: 2 (conv2d), 8
 * (depthwise: one per channel), 0: what the variant says. */
typedef struct conv_case {
    int transposed, nsp, groups;
    int64_t x[5], w[5], cout;
} conv_case;

static const conv_case cases[] = {
    {0, 1, 0, {2, 4, 29}, {6, 2, 3}, 6},              /* 0: conv1d */
    {0, 2, 2, {2, 4, 9, 11}, {6, 2, 3, 3}, 6},        /* 1: conv2d */
    {0, 3, 0, {1, 3, 4, 5, 6}, {4, 3, 2, 3, 3}, 4},   /* 2: conv3d */
    {0, 2, 8, {2, 8, 10, 13}, {8, 1, 3, 3}, 8},       /* 3: conv2d_depthwise */
    {0, 2, 0, {2, 32, 12, 12}, {48, 32, 3, 3}, 48},   /* 4: conv2d_gemm */
    {1, 1, 0, {2, 4, 9}, {4, 3, 3}, 3},               /* 5: conv_transpose1d */
    {1, 2, 0, {2, 6, 5, 7}, {6, 4, 3, 3}, 4},         /* 6: conv_transpose2d */
    {1, 2, 0, {2, 32, 6, 7}, {32, 32, 3, 3}, 32},     /* 7: conv_transpose2d_gemm */
};

static const conv_case *find_case(const hx_op *op)
{
    return (unsigned)op->code < sizeof cases / sizeof *cases ? &cases[op->code] : &cases[0];
}

static void set(hx_input *in, wgt_dtype dt, int ndim, const int64_t *shape)
{
    in->dtype = dt;
    in->ndim = ndim;
    for (int d = 0; d < ndim; d++) in->shape[d] = shape[d];
    in->dom = (hx_dom){-1, 1, 0, 0};
}

int setup_conv(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    const conv_case *cc = find_case(op);
    int nd = cc->nsp + 2;
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_BROADCAST: case HX_SPECIAL: case HX_EMPTY: break;
    case HX_BIG:
        if (!op->big) return 0;
        /* 2 images of 4100 x 4100 f32 (134,480,000 bytes), a 1x1 kernel: the batch splits */
        set(&in[0], dt, 4, DIMS(2, 1, 4100, 4100));
        set(&in[1], dt, 4, DIMS(1, 1, 1, 1));
        set(&in[2], dt, 1, DIMS(1));
        return 3;
    default: return 0;
    }
    set(&in[0], dt, nd, cc->x);
    if (c == HX_EMPTY) in[0].shape[0] = 0;
    set(&in[1], dt, nd, cc->w);
    set(&in[2], dt, 1, &cc->cout);
    return 3;
}

#define PRM(...) ((wgt_conv_params){__VA_ARGS__})

wgt_status call_conv(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    const conv_case *cc = find_case(op);
    wgt_conv_params p = PRM(.groups = 1);
    const wgt_tensor *bias = in[2];
    if (wgt_tensor_numel(in[1]) == 1) /* the big case: 1x1 */
        return wgt_conv(in[0], in[1], bias, &p, out);
    switch (cc->nsp * 10 + v) {
    case 10: p = PRM(.pad_begin = {1}, .pad_end = {1}, .groups = 2); break;
    case 11: p = PRM(.stride = {2}, .dilation = {2}, .pad_begin = {2}, .pad_end = {1}, .groups = 2); break;
    case 12: p = PRM(.padding = WGT_CONV_PAD_SAME, .groups = 2); break;
    case 20: p = PRM(.pad_begin = {1, 1}, .pad_end = {1, 1}); break;
    case 21: p = PRM(.stride = {2, 1}, .dilation = {1, 2}, .pad_begin = {1, 2}, .pad_end = {0, 1}); break;
    case 22: p = PRM(.stride = {2, 2}, .padding = WGT_CONV_PAD_SAME_LOWER); break;
    case 23: p = PRM(.padding = WGT_CONV_PAD_VALID); break;
    case 30: p = PRM(.pad_begin = {1, 1, 1}, .pad_end = {1, 1, 1}); break;
    case 31: p = PRM(.stride = {2, 2, 1}, .pad_begin = {0, 1, 1}, .pad_end = {1, 0, 1}); break;
    default: break;
    }
    if (cc->groups == 2) p.groups = 2;
    if (cc->groups == 8) {
        p = v ? PRM(.stride = {2, 2}, .pad_begin = {1, 1}, .pad_end = {1, 1}) : PRM(.pad_begin = {1, 1}, .pad_end = {1, 1});
        p.groups = 8;
    }
    if (cc->transposed) {
        if (cc->nsp == 1)
            p = v ? PRM(.stride = {3}, .dilation = {2}, .groups = 2)
                  : PRM(.stride = {2}, .pad_begin = {1}, .pad_end = {1}, .output_padding = {1});
        else
            p = v ? PRM(.stride = {2, 3}, .dilation = {1, 2}, .pad_begin = {1, 0}, .pad_end = {1, 2}, .output_padding = {1, 0},
                        .groups = 2)
                  : PRM(.stride = {2, 2}, .pad_begin = {1, 1}, .pad_end = {1, 1}, .output_padding = {1, 1});
        if (v) bias = NULL; /* the bias is sized for one group */
        return wgt_conv_transpose(in[0], in[1], bias, &p, out);
    }
    return wgt_conv(in[0], in[1], bias, &p, out);
}
