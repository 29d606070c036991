/* Rotary position embedding: inverse frequencies as Hugging Face transformers' rope init
 * functions compute them (default, linear, llama3, yarn), and the rotation itself.
 * transformers computes inv_freq and the angles in f32: every step of inv_freq and the angle are
 * rounded to f32 here too, so both agree to the bit (tests/cpu/test_cpu_rope_hf.c checks this
 * against transformers' output); cos/sin and the rotation itself run in double. */
#include "cpu/cpu_internal.h"

#include <math.h>
#include <stdlib.h>

static const double PI = 3.14159265358979323846;

static double f32(double v) { return (double)(float)v; }

/* base ** (2j / dim), as torch computes it on an f32 tensor. */
static double pos_freq(double base, int j, int dim) { return f32(pow(base, f32((double)(2 * j) / dim))); }

static double yarn_mscale(double scale, double mscale)
{
    return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

/* The dimension index at which a wavelength makes num_rot rotations over max_pos positions. */
static double correction_dim(double num_rot, int dim, double base, double max_pos)
{
    return (dim * log(max_pos / (num_rot * 2 * PI))) / (2 * log(base));
}

wgt_status wgt_cpu_rope_inv_freq(const wgt_rope_params *p, int rot_dim, double *inv_freq,
                                 double *attention_factor)
{
    if (rot_dim <= 0 || rot_dim % 2)
        return wgt_error(WGT_ERR_SHAPE, "cpu: rope: rotary dim %d must be even and positive", rot_dim);
    if (!(p->theta > 0))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: rope: theta must be positive");
    int half = rot_dim / 2;
    double af = 1.0;
    switch (p->scaling) {
    case WGT_ROPE_NONE:
    case WGT_ROPE_LINEAR:
        for (int j = 0; j < half; j++) inv_freq[j] = f32(1.0 / pos_freq(p->theta, j, rot_dim));
        if (p->scaling == WGT_ROPE_LINEAR) {
            if (!(p->factor > 0))
                return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: rope: linear scaling needs factor > 0");
            for (int j = 0; j < half; j++) inv_freq[j] = f32(inv_freq[j] / p->factor);
        }
        break;
    case WGT_ROPE_LLAMA3: {
        if (!(p->factor > 0) || !(p->original_max_position > 0) || p->high_freq_factor == p->low_freq_factor)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: rope: llama3 scaling needs factor, "
                             "original_max_position and distinct low/high frequency factors");
        /* Each step rounded to f32 in transformers' order (its tensors are f32 and Python scalars
         * are cast to f32 in tensor ops), so the frequencies agree to the bit. */
        double old = p->original_max_position, factor = f32(p->factor);
        double low_wl = f32(old / p->low_freq_factor), high_wl = f32(old / p->high_freq_factor);
        for (int j = 0; j < half; j++) {
            double f = f32(1.0 / pos_freq(p->theta, j, rot_dim));
            double wl = f32(f32(2 * PI) / f);
            double scaled = wl > low_wl ? f32(f / factor) : f; /* low frequencies: interpolate */
            if (!(wl < high_wl) && !(wl > low_wl)) {           /* medium: blend smoothly */
                double smooth = f32(f32(f32(f32(old) / wl) - f32(p->low_freq_factor)) /
                                    f32(p->high_freq_factor - p->low_freq_factor));
                scaled = f32(f32(f32(f32(1 - smooth) * scaled) / factor) + f32(smooth * scaled));
            }
            inv_freq[j] = scaled;
        }
        break;
    }
    case WGT_ROPE_YARN: {
        if (!(p->factor > 0) || !(p->original_max_position > 0))
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: rope: yarn scaling needs factor and "
                             "original_max_position");
        double factor = p->factor;
        af = p->attention_factor;
        if (af == 0) {
            if (p->mscale != 0 && p->mscale_all_dim != 0)
                af = yarn_mscale(factor, p->mscale) / yarn_mscale(factor, p->mscale_all_dim);
            else af = yarn_mscale(factor, 1);
        }
        double beta_fast = p->beta_fast != 0 ? p->beta_fast : 32, beta_slow = p->beta_slow != 0 ? p->beta_slow : 1;
        double low = correction_dim(beta_fast, rot_dim, p->theta, p->original_max_position);
        double high = correction_dim(beta_slow, rot_dim, p->theta, p->original_max_position);
        if (p->truncate) low = floor(low), high = ceil(high);
        if (low < 0) low = 0;
        if (high > rot_dim - 1) high = rot_dim - 1;
        if (low == high) high += 0.001; /* as transformers: avoids a division by zero */
        for (int j = 0; j < half; j++) { /* f32 steps in transformers' order, as for llama3 */
            double pf = pos_freq(p->theta, j, rot_dim);
            double extra = f32(1.0 / pf), inter = f32(1.0 / f32(f32(factor) * pf));
            double ramp = f32(f32((double)j - f32(low)) / f32(high - low));
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            double extra_factor = f32(1 - ramp);
            inv_freq[j] = f32(f32(inter * f32(1 - extra_factor)) + f32(extra * extra_factor));
        }
        break;
    }
    default:
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: rope: unknown scaling %d", (int)p->scaling);
    }
    for (int j = 0; p->freq_factors && j < half; j++) { /* as llama.cpp: theta / factor, in f32 */
        if (!(p->freq_factors[j] > 0) || !isfinite(p->freq_factors[j]))
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: rope: frequency factor %d is %g (must be positive)", j,
                             (double)p->freq_factors[j]);
        inv_freq[j] = f32(inv_freq[j] / p->freq_factors[j]);
    }
    if (attention_factor) *attention_factor = af;
    return WGT_OK;
}

wgt_status wgt_cpu_rope(const wgt_cpu_tensor *x, const wgt_cpu_tensor *positions, int rot_dim,
                        int interleaved, const wgt_rope_params *p, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "rope input");
    CPU_CHECK(out, "rope output");
    CPU_TRY(cpu_check_index_dtype(positions, "rope positions"));
    int nd = x->l.ndim;
    if (nd < 2 || !cpu_same_shape(&x->l, &out->l))
        return wgt_error(WGT_ERR_SHAPE, "cpu: rope: input must be [..., L, D] and out of its shape");
    int64_t D = x->l.shape[nd - 1];
    if (rot_dim <= 0 || rot_dim % 2 || rot_dim > D)
        return wgt_error(WGT_ERR_SHAPE, "cpu: rope: rotary dim %d must be even, positive and <= %lld",
                         rot_dim, (long long)D);
    /* positions broadcast to x's shape without the feature dim ([L], [B, 1, L], ...). */
    wgt_cpu_tensor pos = {positions->data, {0}};
    CPU_TRY(wgt_cpu_broadcast_to(&positions->l, nd - 1, x->l.shape, &pos.l, "rope positions"));
    int half = rot_dim / 2;
    double *inv = malloc(sizeof(double) * (size_t)half), af;
    if (!inv) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "cpu: rope: no memory for %d frequencies", half);
    wgt_status st = wgt_cpu_rope_inv_freq(p, rot_dim, inv, &af);
    if (st != WGT_OK) {
        free(inv);
        return st;
    }
    wgt_layout rx = x->l, ro = out->l;
    rx.ndim = ro.ndim = nd - 1; /* one row per position */
    int64_t rows = wgt_layout_numel(&rx), sx = x->l.strides[nd - 1], so = out->l.strides[nd - 1];
    for (int64_t r = 0; r < rows; r++) {
        int64_t bx = wgt_layout_index(&rx, r), bo = wgt_layout_index(&ro, r);
        double position = (double)wgt_cpu_load_i(&pos, cpu_at(&pos, r));
        for (int j = 0; j < half; j++) {
            double angle = f32(position * inv[j]);
            double c = cos(angle) * af, s = sin(angle) * af;
            int64_t i0 = interleaved ? 2 * j : j, i1 = interleaved ? 2 * j + 1 : j + half;
            double a = wgt_cpu_load_f(x, bx + i0 * sx), b = wgt_cpu_load_f(x, bx + i1 * sx);
            wgt_cpu_store_f(out, bo + i0 * so, a * c - b * s);
            wgt_cpu_store_f(out, bo + i1 * so, b * c + a * s);
        }
        for (int64_t d = rot_dim; d < D; d++) cpu_copy_elem(x, bx + d * sx, out, bo + d * so);
    }
    free(inv);
    return WGT_OK;
}

/* The token embedding: rows of weight [V, D] picked by ids (src/ops/rope.c holds both embeddings). */
wgt_status wgt_cpu_embedding(const wgt_cpu_tensor *weight, const wgt_cpu_tensor *ids,
                             const wgt_cpu_tensor *out)
{
    CPU_CHECK(weight, "embedding weight");
    CPU_CHECK(out, "embedding output");
    CPU_TRY(cpu_check_index_dtype(ids, "embedding ids"));
    int ni = ids->l.ndim, ok = weight->l.ndim == 2 && out->l.ndim == ni + 1 &&
                             out->l.shape[ni] == weight->l.shape[1] && out->l.dtype == weight->l.dtype;
    for (int d = 0; ok && d < ni; d++) ok = out->l.shape[d] == ids->l.shape[d];
    if (!ok)
        return wgt_error(WGT_ERR_SHAPE, "cpu: embedding: weight must be [V, D] and out [ids..., D] "
                         "of weight's dtype");
    int64_t n = cpu_numel(ids), V = weight->l.shape[0], D = weight->l.shape[1];
    for (int64_t i = 0; i < n; i++) {
        int64_t id = wgt_cpu_load_i(ids, cpu_at(ids, i));
        if (id < 0 || id >= V) /* PyTorch refuses negative ids here, unlike index_select */
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: embedding: id %lld out of range [0, %lld)",
                             (long long)id, (long long)V);
        int64_t ob = cpu_at(out, i * D); /* row i of out starts at element i * D */
        for (int64_t j = 0; j < D; j++)
            cpu_copy_elem(weight, weight->l.offset + id * weight->l.strides[0] + j * weight->l.strides[1],
                          out, ob + j * out->l.strides[ni]);
    }
    return WGT_OK;
}
