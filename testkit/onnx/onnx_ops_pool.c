/* ONNX op -> pooling and resampling (src/cpu/pool.h, src/ops/pool.c, resample.c): MaxPool,
 * AveragePool (1-D and 2-D, symmetric pads), Resize and Upsample (the modes and coordinate
 * transformations that are PyTorch's: see ox_resize), GridSample (bilinear/nearest/bicubic, 4-D).
 * What does not map is WGT_ERR_UNSUPPORTED with the reason (the node test is then N/A). */
#include "onnx/onnx_ops_internal.h"

#include <math.h>
#include <string.h>

#include "cpu/pool.h"

/* An INTS attribute of up to n values into v (dflt when absent); *got: how many it had. */
static wgt_status attr_ints(ox *c, const char *name, int64_t *v, int n, int64_t dflt, int *got)
{
    const wgt_onnx_attr *a = ox_attr(c, name);
    for (int i = 0; i < n; i++) v[i] = dflt;
    *got = 0;
    if (!a) return WGT_OK;
    if (a->type != WGT_ONNX_ATTR_INTS || a->n_ints > n)
        return wgt_error(WGT_ERR_SHAPE, "%s: attribute %s: want at most %d integers", c->node->op_type, name, n);
    for (int i = 0; i < a->n_ints; i++) v[i] = a->ints[i];
    *got = a->n_ints;
    return WGT_OK;
}

/* A pool whose pads differ between the sides (SAME_* with an odd total): the input padded explicitly,
 * then pooled without padding. Max pads with -inf (an integer type's minimum); average pads with
 * zeros and, without count_include_pad, divides window sums by the counts of real elements (the
 * same sums over a padded tensor of ones). */
static wgt_status pool_padded(ox *c, wgt_cpu_pool_geom *g, const wgt_onnx_tensor *x, const int64_t *xpads, int is_max,
                              const wgt_cpu_tensor *out)
{
    int64_t pdims[WGT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) pdims[d] = x->dims[d] + xpads[d] + xpads[x->ndim + d];
    g->p[0] = g->p[1] = 0;
    wgt_onnx_tensor tp = {0}, ones = {0}, tones = {0}, cnt = {0};
    wgt_cpu_tensor xv = ox_view(x);
    wgt_status st = ox_temp(&tp, x->dtype, x->ndim, pdims);
    wgt_cpu_tensor pv = ox_view(&tp);
    if (!st) st = OX_CALL(c, wgt_cpu_pad, &xv, WGT_PAD_CONSTANT, xpads, is_max ? -INFINITY : 0.0, &pv);
    if (is_max || g->count_include_pad) {
        if (!st) st = OX_CALL(c, wgt_cpu_pool, g, &pv, out, NULL);
    } else {
        g->divisor = 1; /* window sums */
        wgt_cpu_tensor ov1, ov2, cv;
        if (!st) st = ox_temp(&ones, x->dtype, x->ndim, x->dims);
        if (!st) st = ox_temp(&tones, x->dtype, x->ndim, pdims);
        if (!st) st = ox_temp(&cnt, out->l.dtype, out->l.ndim, out->l.shape);
        if (!st) {
            ov1 = ox_view(&ones), ov2 = ox_view(&tones), cv = ox_view(&cnt);
            st = OX_CALL(c, wgt_cpu_full, 1.0, &ov1);
        }
        if (!st) st = OX_CALL(c, wgt_cpu_pad, &ov1, WGT_PAD_CONSTANT, xpads, 0.0, &ov2);
        if (!st) st = OX_CALL(c, wgt_cpu_pool, g, &ov2, &cv, NULL);
        if (!st) st = OX_CALL(c, wgt_cpu_pool, g, &pv, out, NULL);
        if (!st) st = OX_CALL(c, wgt_cpu_binary, WGT_BINARY_DIV, out, &cv, out);
    }
    wgt_onnx_tensor_clear(&tp);
    wgt_onnx_tensor_clear(&ones);
    wgt_onnx_tensor_clear(&tones);
    wgt_onnx_tensor_clear(&cnt);
    return st;
}

/* MaxPool / AveragePool: x [N, C, *S] with 1 or 2 spatial dims. ONNX's indices are i64 flat
 * positions in the whole tensor; the op gives them per plane, so the plane's start is added. */
wgt_status ox_pool(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    int is_max = !strcmp(c->node->op_type, "MaxPool");
    int sp = x->ndim - 2;
    if (sp < 1 || sp > 2) return ox_unsupported(c, "only 1-D and 2-D pools ([N, C, L] or [N, C, H, W])");
    int64_t k[2], s[2], d[2], pads[4];
    int gk, gs, gd, gp;
    OX_TRY(attr_ints(c, "kernel_shape", k, 2, 0, &gk));
    OX_TRY(attr_ints(c, "strides", s, 2, 1, &gs));
    OX_TRY(attr_ints(c, "dilations", d, 2, 1, &gd));
    OX_TRY(attr_ints(c, "pads", pads, 4, 0, &gp));
    if (gk != sp) return wgt_error(WGT_ERR_SHAPE, "%s: kernel_shape needs %d values", c->node->op_type, sp);
    if (gp && gp != 2 * sp) return wgt_error(WGT_ERR_SHAPE, "%s: pads needs %d values", c->node->op_type, 2 * sp);
    int col_major = ox_attr_i(c, "storage_order", 0) != 0; /* indices h + w H instead of h W + w */
    const char *auto_pad = ox_attr_s(c, "auto_pad", "NOTSET");
    int ceil_mode = (int)ox_attr_i(c, "ceil_mode", 0);
    wgt_cpu_pool_geom g = {is_max ? WGT_CPU_POOL_MAX : WGT_CPU_POOL_AVG, sp, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 0, 0};
    g.count_include_pad = (int)ox_attr_i(c, "count_include_pad", 0) != 0;
    int64_t odims[WGT_MAX_DIMS], xpads[2 * WGT_MAX_DIMS] = {0};
    int explicit_pad = 0;
    memcpy(odims, x->dims, sizeof odims);
    for (int i = 0; i < sp; i++) {
        int gi = 2 - sp + i;
        int64_t S = x->dims[2 + i], span = (k[i] - 1) * d[i] + 1, pb = pads[i], pe = pads[sp + i], o;
        if (k[i] < 1 || s[i] < 1 || d[i] < 1) return wgt_error(WGT_ERR_SHAPE, "%s: kernel, strides, dilations must be positive", c->node->op_type);
        if (!strcmp(auto_pad, "VALID")) pb = pe = 0;
        else if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
            int64_t out = (S + s[i] - 1) / s[i], total = (out - 1) * s[i] + span - S;
            if (total < 0) total = 0;
            pb = auto_pad[5] == 'U' ? total / 2 : total - total / 2;
            pe = total - pb;
        } else if (strcmp(auto_pad, "NOTSET")) return ox_unsupported(c, "auto_pad other than NOTSET, VALID, SAME_*");
        if (pb != pe && c->n_out > 1) return ox_unsupported(c, "asymmetric pads with indices");
        if (!is_max && d[i] != 1) return ox_unsupported(c, "dilations in AveragePool");
        int64_t num = S + 2 * pb - span + (ceil_mode ? s[i] - 1 : 0);
        if (pb != pe) { /* the input padded explicitly (below), no implicit padding */
            num = S + pb + pe - span + (ceil_mode ? s[i] - 1 : 0);
            if (S + pb + pe - span < 0) return wgt_error(WGT_ERR_SHAPE, "%s: the window does not fit the input", c->node->op_type);
            o = num / s[i] + 1;
            if (ceil_mode && (o - 1) * s[i] >= S + pb + pe) o--;
            explicit_pad = 1;
        } else {
            if (S + 2 * pb - span < 0) return wgt_error(WGT_ERR_SHAPE, "%s: the window does not fit the input", c->node->op_type);
            o = num / s[i] + 1;
            if (ceil_mode && (o - 1) * s[i] >= S + pb) o--;
        }
        xpads[2 + i] = pb, xpads[x->ndim + 2 + i] = pe;
        if (auto_pad[0] == 'S' && o != (S + s[i] - 1) / s[i]) return ox_unsupported(c, "SAME padding with this stride");
        g.k[gi] = k[i], g.s[gi] = s[i], g.p[gi] = pb, g.d[gi] = d[i];
        odims[2 + i] = o;
    }
    wgt_cpu_tensor xv = ox_view(x), ov, iv;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, odims, &ov));
    int with_idx = is_max && c->n_out > 1;
    if (with_idx) OX_TRY(ox_alloc(c, 1, WGT_I64, x->ndim, odims, &iv));
    if (explicit_pad) return pool_padded(c, &g, x, xpads, is_max, &ov);
    OX_TRY(OX_CALL(c, wgt_cpu_pool, &g, &xv, &ov, with_idx ? &iv : NULL));
    if (with_idx) { /* per-plane positions -> positions in the whole input */
        int64_t plane = 1, per = 1, n = 1;
        for (int i = 0; i < sp; i++) plane *= x->dims[2 + i], per *= odims[2 + i];
        for (int dd = 0; dd < x->ndim; dd++) n *= odims[dd];
        int64_t *idx = (int64_t *)c->out[1].data;
        int64_t H = sp == 2 ? x->dims[2] : 1, W = x->dims[x->ndim - 1];
        for (int64_t e = 0; e < n; e++) {
            int64_t i = idx[e];
            if (col_major) i = (i / W) + (i % W) * H;
            idx[e] = i + (e / per) * plane;
        }
    }
    return WGT_OK;
}

/* ---- Resize, Upsample ----------------------------------------------------------------------- */

/* ONNX's source pixel for nearest: the coordinate transformation, then the rounding, clamped. */
static int64_t onnx_nearest(int64_t o, int64_t S, int64_t O, double scale, const char *ctm, const char *nm)
{
    double x;
    if (!strcmp(ctm, "asymmetric")) x = o / scale;
    else if (!strcmp(ctm, "align_corners")) x = O == 1 ? 0 : (double)o * (S - 1) / (S * scale - 1);
    else if (!strcmp(ctm, "pytorch_half_pixel")) x = O > 1 ? (o + 0.5) / scale - 0.5 : 0;
    else if (!strcmp(ctm, "tf_half_pixel_for_nn")) x = (o + 0.5) / scale;
    else x = (o + 0.5) / scale - 0.5; /* half_pixel */
    double f = floor(x), r;
    if (!strcmp(nm, "floor")) r = f;
    else if (!strcmp(nm, "ceil")) r = ceil(x);
    else if (!strcmp(nm, "round_prefer_ceil")) r = x - f == 0.5 ? f + 1 : round(x);
    else r = x - f == 0.5 ? f : round(x); /* round_prefer_floor */
    int64_t i = (int64_t)r;
    return i < 0 ? 0 : i > S - 1 ? S - 1 : i;
}

/* PyTorch's source pixel for nearest / nearest-exact (as src/cpu/resample.c computes it). */
static int64_t torch_nearest(int exact, int64_t o, int64_t S, int64_t O, double scale)
{
    float s = wgt_cpu_interp_scale(S, O, scale, 0);
    int64_t i = exact ? (int64_t)floorf(((float)o + 0.5f) * s) : O == S ? o : O == 2 * S ? o >> 1 : (int64_t)floorf((float)o * s);
    return i < S - 1 ? i : S - 1;
}

/* Nearest modes that are not PyTorch's: ONNX's source index of every output position, computed
 * here per dim, then the rows and columns gathered with index_select (one call per resized dim). */
static wgt_status nearest_gather(ox *c, const wgt_onnx_tensor *x, int sp, const int64_t *odims, const double *scales,
                                 const char *ctm, const char *nm)
{
    int nd = x->ndim;
    wgt_onnx_tensor mid = {0}, idx[2] = {{0}, {0}};
    wgt_cpu_tensor xv = ox_view(x), ov;
    wgt_status st = ox_alloc(c, 0, x->dtype, nd, odims, &ov);
    int64_t mdims[WGT_MAX_DIMS];
    memcpy(mdims, x->dims, sizeof mdims);
    mdims[nd - 1] = odims[nd - 1]; /* after the W gather */
    for (int i = 0; !st && i < sp; i++) {
        int64_t S = x->dims[2 + i], O = odims[2 + i];
        st = ox_temp(&idx[i], WGT_I32, 1, &O);
        for (int64_t o = 0; !st && o < O; o++) ((int32_t *)idx[i].data)[o] = (int32_t)onnx_nearest(o, S, O, scales[i], ctm, nm);
    }
    if (!st && sp == 2) st = ox_temp(&mid, x->dtype, nd, mdims);
    if (!st) {
        wgt_cpu_tensor iw = ox_view(&idx[sp - 1]), mv = sp == 2 ? ox_view(&mid) : ov;
        st = OX_CALL(c, wgt_cpu_index_select, &xv, nd - 1, &iw, &mv);
        if (!st && sp == 2) {
            wgt_cpu_tensor ih = ox_view(&idx[0]);
            st = OX_CALL(c, wgt_cpu_index_select, &mv, nd - 2, &ih, &ov);
        }
    }
    wgt_onnx_tensor_clear(&mid);
    wgt_onnx_tensor_clear(&idx[0]);
    wgt_onnx_tensor_clear(&idx[1]);
    return st;
}

/* Resize (opset 10+: X, [roi,] scales, sizes) and Upsample (scales attribute or input) over the
 * last 1 or 2 dims, N and C unscaled. Maps: nearest onto interpolate when ONNX's rounding picks the
 * same pixels as PyTorch's 'nearest' or 'nearest-exact' for every output position (checked per
 * dim), other nearest modes onto index_select with ONNX's indices; linear and
 * cubic (A = -0.75, exclude_outside 0) with half_pixel (= align_corners false; pytorch_half_pixel
 * when every output dim is > 1) or align_corners. Not mapped: asymmetric / tf_crop_and_resize
 * linear and cubic, other cubic coefficients, exclude_outside, antialias, axes, keep_aspect_ratio. */
wgt_status ox_resize(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    int upsample = !strcmp(c->node->op_type, "Upsample");
    int nd = x->ndim;
    double sc[WGT_MAX_DIMS];
    int64_t sizes[WGT_MAX_DIMS];
    int have_scales = 0, have_sizes = 0;
    const wgt_onnx_tensor *ts = NULL, *tz = NULL;
    if (upsample) {
        const wgt_onnx_attr *a = ox_attr(c, "scales");
        if (a && a->type == WGT_ONNX_ATTR_FLOATS) {
            if (a->n_floats != nd) return wgt_error(WGT_ERR_SHAPE, "Upsample: %d scales for %d dims", a->n_floats, nd);
            for (int i = 0; i < nd; i++) sc[i] = a->floats[i];
            have_scales = 1;
        } else ts = ox_in(c, 1);
    } else {
        ts = ox_in(c, c->opset >= 11 ? 2 : 1);
        tz = c->opset >= 11 ? ox_in(c, 3) : NULL;
    }
    if (ts && ts->numel > 0) {
        if (!ts->data || ts->numel != nd) return wgt_error(WGT_ERR_SHAPE, "%s: want %d float scales", c->node->op_type, nd);
        wgt_cpu_tensor v = ox_view(ts);
        for (int i = 0; i < nd; i++) sc[i] = wgt_cpu_load_f(&v, i);
        have_scales = 1;
    }
    if (tz && tz->numel > 0) {
        int n;
        OX_TRY(ox_ints(c, tz, sizes, WGT_MAX_DIMS, &n));
        if (n != nd) return wgt_error(WGT_ERR_SHAPE, "Resize: %d sizes for %d dims", n, nd);
        have_sizes = 1, have_scales = 0;
    }
    if (!have_scales && !have_sizes) return wgt_error(WGT_ERR_SHAPE, "%s: needs scales or sizes", c->node->op_type);
    if (ox_attr(c, "axes")) return ox_unsupported(c, "the axes attribute");
    if (ox_attr_i(c, "antialias", 0)) return ox_unsupported(c, "antialias");
    if (strcmp(ox_attr_s(c, "keep_aspect_ratio_policy", "stretch"), "stretch"))
        return ox_unsupported(c, "keep_aspect_ratio_policy other than stretch");
    int64_t odims[WGT_MAX_DIMS];
    for (int i = 0; i < nd; i++) odims[i] = have_sizes ? sizes[i] : (int64_t)floor(x->dims[i] * sc[i]);
    if (nd < 3 || nd > 4) return ox_unsupported(c, "inputs other than [N, C, L] and [N, C, H, W]");
    if (odims[0] != x->dims[0] || odims[1] != x->dims[1]) return ox_unsupported(c, "resizing N or C");
    int sp = nd - 2;
    double scales[2] = {0, 0};
    for (int i = 0; i < sp; i++) {
        if (x->dims[2 + i] < 1 || odims[2 + i] < 1) return wgt_error(WGT_ERR_SHAPE, "%s: empty spatial dims", c->node->op_type);
        scales[i] = have_scales ? sc[2 + i] : (double)odims[2 + i] / (double)x->dims[2 + i];
    }
    const char *mode = ox_attr_s(c, "mode", "nearest");
    const char *ctm = upsample ? "asymmetric" : ox_attr_s(c, "coordinate_transformation_mode", "half_pixel");
    const char *nm = upsample ? "floor" : ox_attr_s(c, "nearest_mode", "round_prefer_floor");
    wgt_interp_mode m;
    int align = 0;
    if (!strcmp(mode, "nearest")) {
        int ok[2] = {1, 1}; /* nearest, nearest-exact */
        for (int e = 0; e < 2; e++)
            for (int i = 0; i < sp && ok[e]; i++) {
                int64_t S = x->dims[2 + i], O = odims[2 + i];
                for (int64_t o = 0; o < O && ok[e]; o++)
                    ok[e] = onnx_nearest(o, S, O, scales[i], ctm, nm) ==
                            torch_nearest(e, o, S, O, have_scales ? scales[i] : 0);
            }
        if (!ok[0] && !ok[1]) return nearest_gather(c, x, sp, odims, scales, ctm, nm);
        m = ok[0] ? WGT_INTERP_NEAREST : WGT_INTERP_NEAREST_EXACT;
    } else {
        int linear = !strcmp(mode, "linear") || !strcmp(mode, "bilinear");
        if (!linear && strcmp(mode, "cubic")) return ox_unsupported(c, "this mode");
        m = linear ? WGT_INTERP_LINEAR : WGT_INTERP_CUBIC;
        int big = 1;
        for (int i = 0; i < sp; i++) big = big && odims[2 + i] > 1;
        if (!strcmp(ctm, "align_corners")) {
            /* ONNX divides by S * scale unrounded; PyTorch by the output size */
            for (int i = 0; i < sp; i++)
                if (have_scales && (double)x->dims[2 + i] * scales[i] != (double)odims[2 + i])
                    return ox_unsupported(c, "align_corners with scales that give a fractional output size");
            align = 1;
        }
        else if (strcmp(ctm, "half_pixel") && !(big && !strcmp(ctm, "pytorch_half_pixel")))
            return ox_unsupported(c, "linear/cubic coordinate_transformation_mode other than half_pixel and align_corners");
        if (!linear && (ox_attr_f(c, "cubic_coeff_a", -0.75) != -0.75 || ox_attr_i(c, "exclude_outside", 0)))
            return ox_unsupported(c, "cubic_coeff_a other than -0.75, or exclude_outside");
    }
    if (x->dtype != WGT_F32 && x->dtype != WGT_F16 && x->dtype != WGT_BF16 && m >= WGT_INTERP_LINEAR)
        return ox_unsupported(c, "linear/cubic of a non-float type");
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, nd, odims, &ov));
    return OX_CALL(c, wgt_cpu_interpolate, &xv, sp, m, have_scales ? scales : NULL, align, &ov);
}

/* GridSample: X [N, C, H, W], grid [N, Ho, Wo, 2]; bilinear, nearest, bicubic ("linear", "cubic" from
 * opset 20). */
wgt_status ox_grid_sample(ox *c)
{
    const wgt_onnx_tensor *x, *g;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &g));
    if (x->ndim != 4 || g->ndim != 4) return ox_unsupported(c, "only the 2-D form (4-D input and grid)");
    const char *mode = ox_attr_s(c, "mode", c->opset >= 20 ? "linear" : "bilinear");
    const char *pad = ox_attr_s(c, "padding_mode", "zeros");
    wgt_grid_mode m;
    if (!strcmp(mode, "bilinear") || !strcmp(mode, "linear")) m = WGT_GRID_BILINEAR;
    else if (!strcmp(mode, "nearest")) m = WGT_GRID_NEAREST;
    else if (!strcmp(mode, "bicubic") || !strcmp(mode, "cubic")) m = WGT_GRID_BICUBIC;
    else return ox_unsupported(c, "this mode");
    wgt_grid_padding p;
    if (!strcmp(pad, "zeros")) p = WGT_GRID_PAD_ZEROS;
    else if (!strcmp(pad, "border")) p = WGT_GRID_PAD_BORDER;
    else if (!strcmp(pad, "reflection")) p = WGT_GRID_PAD_REFLECTION;
    else return wgt_error(WGT_ERR_INVALID_ARGUMENT, "GridSample: unknown padding_mode '%s'", pad);
    int64_t odims[4] = {x->dims[0], x->dims[1], g->dims[1], g->dims[2]};
    wgt_cpu_tensor xv = ox_view(x), gv = ox_view(g), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, 4, odims, &ov));
    return OX_CALL(c, wgt_cpu_grid_sample, &xv, &gv, m, p, (int)ox_attr_i(c, "align_corners", 0), &ov);
}
