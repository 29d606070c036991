/* Backward formula of grid_sample (src/ops/resample.c), written with public ops so it runs on
 * the device in every mode: each output point reads taps of x (bilinear 2 x 2, bicubic 4 x 4,
 * nearest 1) at integer coordinates with weights w(t) of the fractional part t of its
 * unnormalised grid coordinate u. Then
 *   dx[tap]  += g * wy * wx                  (a scatter_add over the flattened planes)
 *   dgrid_x   = sum over C and taps of g * x[tap] * wy * dwx/dt * dt/du * du/dgx   (and y alike)
 * The taps of one point are an extra dimension: [N, P, Ty, Tx] for P = Ho * Wo points, so the
 * whole formula is a handful of ops whatever the mode. As PyTorch: bilinear and nearest pad the
 * source coordinate (border clips, reflection reflects then clips; the derivative through a clip
 * is 0 at and past the bounds, through a reflection +-1); bicubic pads each tap's integer
 * coordinate, with no gradient through that; taps outside x read 0 and get nothing; nearest
 * gives the grid no gradient. */
#include "autograd/autograd.h"
#include "core/error.h"

/* One axis's taps of every point, each [N, P, T]: the integer coordinates (padded), 1 where the
 * coordinate lies inside [0, S), the weights and their derivatives by the grid coordinate. */
typedef struct axis_taps {
    wgt_tensor *coord, *valid, *w, *dw;
} axis_taps;

static wgt_tensor *clamp(ag_call *c, const wgt_tensor *x, double lo, double hi)
{
    wgt_unary_params p = wgt_unary_params_default(WGT_UNARY_CLAMP);
    p.lo = lo, p.hi = hi;
    return ag_un_p(c, WGT_UNARY_CLAMP, &p, x);
}

static wgt_tensor *as_f32(ag_call *c, wgt_tensor *mask) { return ag_cast(c, mask, WGT_F32); }

/* PyTorch's reflect_coordinates over [twice_lo / 2, twice_hi / 2]; *d: its derivative (+-1). */
static wgt_tensor *reflect(ag_call *c, const wgt_tensor *v, double twice_lo, double twice_hi, wgt_tensor **d)
{
    if (twice_lo == twice_hi) {
        *d = ag_scalar(c, 0);
        return ag_muls(c, v, 0);
    }
    double mn = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
    wgt_tensor *off = ag_adds(c, v, -mn), *a = ag_un(c, WGT_UNARY_ABS, off);
    wgt_tensor *extra = ag_bin(c, WGT_BINARY_FMOD, a, ag_scalar(c, span));
    wgt_tensor *flips = ag_un(c, WGT_UNARY_FLOOR, ag_muls(c, a, 1 / span));
    wgt_tensor *even = ag_bin(c, WGT_BINARY_EQ, ag_bin(c, WGT_BINARY_FMOD, flips, ag_scalar(c, 2)), ag_scalar(c, 0));
    *d = ag_mul(c, ag_un(c, WGT_UNARY_SIGN, off), ag_where(c, even, ag_scalar(c, 1), ag_scalar(c, -1)));
    return ag_where(c, even, ag_adds(c, extra, mn), ag_adds(c, ag_muls(c, extra, -1), span + mn));
}

/* The padding mode applied to coordinate u of an axis of size S; *d (may be NULL): du'/du. */
static wgt_tensor *pad_coord(ag_call *c, const op_grad_grid *p, wgt_tensor *u, int64_t S, wgt_tensor **d)
{
    wgt_tensor *dr = ag_scalar(c, 1);
    if (p->padding == WGT_GRID_PAD_ZEROS) {
        if (d) *d = ag_adds(c, ag_muls(c, u, 0), 1);
        return u;
    }
    if (p->padding == WGT_GRID_PAD_REFLECTION)
        u = p->align_corners ? reflect(c, u, 0, 2.0 * (double)(S - 1), &dr) : reflect(c, u, -1, 2.0 * (double)S - 1, &dr);
    if (d) { /* the clip passes the gradient strictly inside (0, S - 1) only */
        wgt_tensor *inside = ag_bin(c, WGT_BINARY_LOGICAL_AND, ag_bin(c, WGT_BINARY_GT, u, ag_scalar(c, 0)),
                                    ag_bin(c, WGT_BINARY_LT, u, ag_scalar(c, (double)(S - 1))));
        *d = ag_mul(c, dr, as_f32(c, inside));
    }
    return clamp(c, u, 0, (double)(S - 1));
}

/* ((a x + b) x + e) x + f */
static wgt_tensor *poly3(ag_call *c, const wgt_tensor *x, double a, double b, double e, double f)
{
    wgt_tensor *r = ag_adds(c, ag_muls(c, x, a), b);
    r = ag_adds(c, ag_mul(c, r, x), e);
    return ag_adds(c, ag_mul(c, r, x), f);
}

static wgt_tensor *stack_last(ag_call *c, wgt_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (!ts[i]) return NULL;
    wgt_tensor *r = NULL;
    wgt_status st = c->st ? c->st : wgt_stack((const wgt_tensor *const *)ts, n, -1, &r);
    return ag_keep(c, r, st);
}

/* Keys' cubic convolution weights (A = -0.75) of the 4 taps at offsets -1..2 from floor(u), and
 * their derivatives by t: near(x) = ((A + 2) x - (A + 3)) x^2 + 1, far(x) = ((A x - 5A) x + 8A) x - 4A. */
static void cubic_weights(ag_call *c, const wgt_tensor *t, wgt_tensor **w, wgt_tensor **dw)
{
    const double A = -0.75;
    wgt_tensor *t1 = ag_adds(c, t, 1), *u1 = ag_sub(c, ag_scalar(c, 1), t), *u2 = ag_sub(c, ag_scalar(c, 2), t);
    wgt_tensor *ws[4] = {poly3(c, t1, A, -5 * A, 8 * A, -4 * A), poly3(c, t, A + 2, -(A + 3), 0, 1),
                         poly3(c, u1, A + 2, -(A + 3), 0, 1), poly3(c, u2, A, -5 * A, 8 * A, -4 * A)};
    wgt_tensor *ds[4] = {poly3(c, t1, 0, 3 * A, -10 * A, 8 * A), poly3(c, t, 0, 3 * (A + 2), -2 * (A + 3), 0),
                         ag_muls(c, poly3(c, u1, 0, 3 * (A + 2), -2 * (A + 3), 0), -1),
                         ag_muls(c, poly3(c, u2, 0, 3 * A, -10 * A, 8 * A), -1)};
    *w = stack_last(c, ws, 4);
    *dw = stack_last(c, ds, 4);
}

/* The taps along one axis of size S for grid coordinates g [N, P]. */
static axis_taps taps_of(ag_call *c, const op_grad_grid *p, const wgt_tensor *g, int64_t S)
{
    axis_taps a = {0};
    double mult = p->align_corners ? (double)(S - 1) / 2 : (double)S / 2; /* du/dg */
    wgt_tensor *u = ag_adds(c, ag_muls(c, g, mult), (double)(S - 1) / 2), *r = NULL, *d = NULL;
    if (p->mode == WGT_GRID_BICUBIC) {
        wgt_tensor *f = ag_un(c, WGT_UNARY_FLOOR, u), *dw = NULL;
        cubic_weights(c, ag_sub(c, u, f), &a.w, &dw);
        a.dw = ag_muls(c, dw, mult);
        wgt_tensor *off = ag_keep(c, r, c->st ? c->st : wgt_arange(c->ctx, -1, 3, 1, WGT_F32, &r));
        a.coord = pad_coord(c, p, ag_add(c, ag_unsqueeze(c, f, -1), off), S, NULL);
    } else {
        u = pad_coord(c, p, u, S, &d);
        if (p->mode == WGT_GRID_NEAREST) { /* half to even, as nearbyint */
            a.coord = ag_unsqueeze(c, ag_un(c, WGT_UNARY_ROUND, u), -1);
            a.w = ag_adds(c, ag_muls(c, a.coord, 0), 1);
            a.dw = ag_muls(c, a.coord, 0);
        } else {
            wgt_tensor *f = ag_un(c, WGT_UNARY_FLOOR, u), *t = ag_unsqueeze(c, ag_sub(c, u, f), -1);
            wgt_tensor *off = ag_keep(c, r, c->st ? c->st : wgt_arange(c->ctx, 0, 2, 1, WGT_F32, &r));
            a.coord = ag_add(c, ag_unsqueeze(c, f, -1), off);
            wgt_tensor *ws[2] = {ag_sub(c, ag_scalar(c, 1), t), t};
            a.w = ag_reshape_as(c, stack_last(c, ws, 2), &a.coord->l);
            /* d(1 - t)/du = -1, dt/du = 1, times the padding's and the unnormalisation's */
            wgt_tensor *sgn = ag_adds(c, ag_muls(c, off, 2), -1);
            a.dw = a.coord ? ag_mul(c, sgn, ag_muls(c, ag_unsqueeze(c, d, -1), mult)) : NULL;
        }
    }
    if (a.coord)
        a.valid = as_f32(c, ag_bin(c, WGT_BINARY_LOGICAL_AND, ag_bin(c, WGT_BINARY_GE, a.coord, ag_scalar(c, 0)),
                                   ag_bin(c, WGT_BINARY_LE, a.coord, ag_scalar(c, (double)(S - 1)))));
    return a;
}

wgt_status ag_grad_grid_sample(ag_call *c)
{
    const op_grad_grid *p = c->params;
    const wgt_layout *xl = &c->in_l[0], *gl = &c->in_l[1];
    int64_t N = xl->shape[0], C = xl->shape[1], H = xl->shape[2], W = xl->shape[3];
    int64_t P = gl->shape[1] * gl->shape[2];
    if (N * C * P * H * W == 0) { /* nothing was read: zero gradients */
        for (int i = 0; i < 2; i++)
            if (c->need[i]) ag_set(c, i, ag_zeros(c, c->in_l[i].ndim, c->in_l[i].shape));
        return c->st;
    }
    int64_t np[2] = {N, P};
    wgt_tensor *grid = ag_f32(c, c->in[1]);
    wgt_tensor *gx = ag_reshape(c, ag_narrow(c, grid, 3, 0, 1), 2, np);
    wgt_tensor *gy = ag_reshape(c, ag_narrow(c, grid, 3, 1, 1), 2, np);
    axis_taps tx = taps_of(c, p, gx, W), ty = taps_of(c, p, gy, H);
    if (c->st || !tx.coord || !ty.coord) return c->st ? c->st : WGT_ERR_INTERNAL;
    int64_t Tx = tx.coord->l.shape[2], Ty = ty.coord->l.shape[2], T = Tx * Ty;
    /* x-axis tensors [N, P, 1, Tx], y-axis [N, P, Ty, 1] */
#define XA(t) ag_unsqueeze(c, (t), 2)
#define YA(t) ag_unsqueeze(c, (t), 3)
    wgt_tensor *vx = XA(tx.valid), *vy = YA(ty.valid);
    wgt_tensor *wxv = ag_mul(c, XA(tx.w), vx), *wyv = ag_mul(c, YA(ty.w), vy);
    wgt_tensor *dxv = ag_mul(c, XA(tx.dw), vx), *dyv = ag_mul(c, YA(ty.dw), vy);
    /* flat positions in a plane, clamped inside (the weights of outside taps are 0) */
    wgt_tensor *flat = ag_add(c, ag_muls(c, YA(clamp(c, ty.coord, 0, (double)(H - 1))), (double)W),
                              XA(clamp(c, tx.coord, 0, (double)(W - 1))));
    int64_t s3[3] = {N, 1, P * T}, e3[3] = {N, C, P * T}, x3[3] = {N, C, H * W}, g5[5] = {N, C, P, 1, 1};
    int64_t w5[5] = {N, 1, P, Ty, Tx};
    wgt_tensor *idx = NULL, *r = NULL;
    wgt_tensor *fi = ag_cast(c, ag_reshape(c, flat, 3, s3), WGT_I32);
    if (fi) {
        wgt_layout el;
        wgt_layout_contiguous(&el, WGT_I32, 3, e3);
        idx = ag_keep(c, r, c->st ? c->st : wgt_tensor_contiguous(ag_expand_as(c, fi, &el), &r));
    }
    wgt_tensor *g = ag_reshape(c, c->g, 5, g5);
    if (c->need[0]) {
        wgt_tensor *src = ag_reshape(c, ag_mul(c, g, ag_reshape(c, ag_mul(c, wyv, wxv), 5, w5)), 3, e3);
        wgt_tensor *z = ag_zeros(c, 3, x3);
        r = NULL;
        if (src && z && idx) ag_set(c, 0, ag_reshape_as(c, ag_keep(c, r, wgt_scatter_add(z, 2, idx, src, &r)), xl));
    }
    if (c->need[1]) {
        wgt_tensor *xf = ag_reshape(c, ag_f32(c, c->in[0]), 3, x3), *vals = NULL;
        r = NULL;
        if (xf && idx) vals = ag_keep(c, r, c->st ? c->st : wgt_gather(xf, 2, idx, &r));
        int64_t v5[5] = {N, C, P, Ty, Tx}, pt[3] = {N, P, T};
        /* sum over channels first: [N, P, Ty, Tx] */
        wgt_tensor *gv = ag_reshape(c, ag_reduce(c, WGT_REDUCE_SUM, ag_mul(c, g, ag_reshape(c, vals, 5, v5)), 1u << 1, 0),
                                    3, pt);
        wgt_tensor *gix = ag_reduce(c, WGT_REDUCE_SUM, ag_mul(c, gv, ag_reshape(c, ag_mul(c, wyv, dxv), 3, pt)), 1u << 2, 0);
        wgt_tensor *giy = ag_reduce(c, WGT_REDUCE_SUM, ag_mul(c, gv, ag_reshape(c, ag_mul(c, dyv, wxv), 3, pt)), 1u << 2, 0);
        wgt_tensor *both[2] = {gix, giy};
        ag_set(c, 1, ag_reshape_as(c, stack_last(c, both, 2), gl));
    }
#undef XA
#undef YA
    return c->st;
}
