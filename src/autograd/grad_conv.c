/* Backward formulas of convolutions (src/ops/conv.c). Every gradient is itself a convolution by
 * the public ops, with the forward's resolved geometry (op_grad_conv):
 *
 *   y = conv(x, w):            dx = conv_transpose(g, w)   dw = weight_grad(x, g)
 *   y = conv_transpose(x, w):  dx = conv(g, w)             dw = weight_grad(g, x)
 *   either:                    dbias = g summed over all dims but 1
 *
 * A transposed convolution is the adjoint of a convolution with the same weight, which is why the
 * weight needs no reshuffling for dx. Several input sizes give one output size when stride > 1, so
 * the direction that grows the tensor is told the size to land on through pad_end and
 * output_padding, and the one that shrinks it is cut with narrow. */
#include "autograd/autograd.h"

static wgt_tensor *conv_of(ag_call *c, int transposed, const wgt_tensor *x, const wgt_tensor *w,
                           const wgt_conv_params *p)
{
    if (c->st || !x || !w) return NULL;
    wgt_tensor *r = NULL;
    wgt_status st = transposed ? wgt_conv_transpose(x, w, NULL, p, &r) : wgt_conv(x, w, NULL, p, &r);
    return ag_keep(c, r, st);
}

static wgt_tensor *permute_of(ag_call *c, const wgt_tensor *x, const int *dims)
{
    if (c->st || !x) return NULL;
    wgt_tensor *r = NULL;
    wgt_status st = wgt_tensor_permute(x, dims, &r); /* before ag_keep reads r */
    return ag_keep(c, r, st);
}

/* t's spatial dims (from dim 2) cut to size[]: the shrinking direction may give a few more. */
static wgt_tensor *cut_to(ag_call *c, wgt_tensor *t, int nsp, const int64_t *size)
{
    for (int d = 0; d < nsp && t; d++)
        if (t->l.shape[2 + d] > size[d]) t = ag_narrow(c, t, 2 + d, 0, size[d]);
    return t;
}

/* The weight gradient of a convolution of a [N, A, *Sa] giving b-shaped [N, B, *Sb] outputs in G
 * groups, kernel K:  dw[bo, ai, k] = sum_n sum_o b[n, bo, o] a[n, group(bo) A/G + ai, o s + k d - pb]
 * -> [B, A/G, *K]. That is a convolution over the spatial dims with the batch as the channels
 * contracted: a as [A/G, G N, *Sa] (the groups' images as channel groups), b as the weight
 * [B, N, *Sb], stride and dilation swapped. */
static wgt_tensor *weight_grad(ag_call *c, const wgt_tensor *a, const wgt_tensor *b, const op_grad_conv *p,
                               const int64_t *K)
{
    if (c->st || !a || !b) return NULL;
    int nsp = a->l.ndim - 2;
    int64_t N = a->l.shape[0], A = a->l.shape[1], B = b->l.shape[1], G = p->groups, Pa = 1, Pb = 1;
    for (int d = 0; d < nsp; d++) Pa *= a->l.shape[2 + d], Pb *= b->l.shape[2 + d];
    int64_t s4[4] = {N, G, A / G, Pa}, sh[5];
    wgt_tensor *a2 = permute_of(c, ag_reshape(c, a, 4, s4), (const int[]){2, 1, 0, 3}); /* [A/G, G, N, Pa] */
    sh[0] = A / G, sh[1] = G * N;
    for (int d = 0; d < nsp; d++) sh[2 + d] = a->l.shape[2 + d];
    a2 = ag_reshape(c, a2, nsp + 2, sh);
    s4[2] = B / G, s4[3] = Pb;
    wgt_tensor *b2 = permute_of(c, ag_reshape(c, b, 4, s4), (const int[]){1, 2, 0, 3}); /* [G, B/G, N, Pb] */
    sh[0] = B, sh[1] = N;
    for (int d = 0; d < nsp; d++) sh[2 + d] = b->l.shape[2 + d];
    b2 = ag_reshape(c, b2, nsp + 2, sh);
    wgt_conv_params q = {0};
    q.groups = (int)G;
    for (int d = 0; d < nsp; d++) {
        int64_t Sa = a->l.shape[2 + d], Sb = b->l.shape[2 + d], s = p->stride[d], dl = p->dilation[d];
        int64_t need = s * (Sb - 1) + dl * (K[d] - 1) + 1 - Sa - p->pad_begin[d]; /* zeros the last tap reads */
        q.stride[d] = dl, q.dilation[d] = s, q.pad_begin[d] = p->pad_begin[d], q.pad_end[d] = need > 0 ? need : 0;
    }
    wgt_tensor *r = cut_to(c, conv_of(c, 0, a2, b2, &q), nsp, K); /* [A/G, B, *K] */
    return ag_transpose(c, r, 0, 1);
}

wgt_status ag_grad_conv(ag_call *c)
{
    const op_grad_conv *p = c->params;
    const wgt_layout *xl = &c->in_l[0], *wl = &c->in_l[1];
    const wgt_tensor *g = c->g;
    int nsp = xl->ndim - 2;
    const int64_t *S = xl->shape + 2, *K = wl->shape + 2, *O = g->l.shape + 2;
    if (c->need[0]) {
        wgt_conv_params q = {0};
        q.groups = p->groups;
        for (int d = 0; d < nsp; d++) {
            int64_t s = p->stride[d], dl = p->dilation[d], pb = p->pad_begin[d];
            q.stride[d] = s, q.dilation[d] = dl, q.pad_begin[d] = pb;
            if (!p->transposed) {
                /* conv_transpose gives (O - 1) s - pb - pad_end + dl (K - 1) + output_padding + 1: land on S */
                int64_t extra = (O[d] - 1) * s - pb + dl * (K[d] - 1) + 1 - S[d];
                if (extra >= 0) q.pad_end[d] = extra;
                else q.output_padding[d] = -extra; /* at most s - 1: S was at most that past the last window */
            } else {
                int64_t extra = (S[d] - 1) * s - pb + dl * (K[d] - 1) + 1 - O[d];
                q.pad_end[d] = extra > 0 ? extra : 0; /* the forward's output_padding: cut below */
            }
        }
        wgt_tensor *w = ag_f32(c, c->in[1]);
        ag_set(c, 0, cut_to(c, conv_of(c, !p->transposed, g, w, &q), nsp, S));
    }
    if (c->need[1]) {
        wgt_tensor *x = ag_f32(c, c->in[0]);
        ag_set(c, 1, p->transposed ? weight_grad(c, g, x, p, K) : weight_grad(c, x, g, p, K));
    }
    if (c->n_in > 2 && c->need[2]) {
        uint32_t dims = ((1u << g->l.ndim) - 1) & ~2u;
        ag_set(c, 2, ag_reduce(c, WGT_REDUCE_SUM, g, dims, 0));
    }
    return c->st;
}
