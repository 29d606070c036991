/* Scaled dot-product attention, one query row at a time, in double. GQA/MQA read the shared
 * kv head in place; the causal offset lets a query block sit at the end of a KV cache, and a
 * window hides the keys more than window - 1 positions behind each query. */
#include "cpu/cpu_internal.h"

#include <math.h>
#include <stdlib.h>

wgt_status wgt_cpu_sdpa(const wgt_cpu_tensor *q, const wgt_cpu_tensor *k, const wgt_cpu_tensor *v,
                        const wgt_cpu_tensor *mask, const wgt_sdpa_params *p,
                        const wgt_cpu_tensor *out)
{
    CPU_CHECK(q, "sdpa q");
    CPU_CHECK(k, "sdpa k");
    CPU_CHECK(v, "sdpa v");
    CPU_CHECK(out, "sdpa output");
    if (q->l.ndim != 4 || k->l.ndim != 4 || v->l.ndim != 4 || out->l.ndim != 4)
        return wgt_error(WGT_ERR_SHAPE, "cpu: sdpa: q, k, v and out must be 4-D [B, H, L, D]");
    int64_t B = q->l.shape[0], Hq = q->l.shape[1], Lq = q->l.shape[2], D = q->l.shape[3];
    int64_t Hkv = k->l.shape[1], Lk = k->l.shape[2], Dv = v->l.shape[3];
    if (k->l.shape[0] != B || v->l.shape[0] != B || v->l.shape[1] != Hkv || v->l.shape[2] != Lk ||
        k->l.shape[3] != D || Hkv == 0 || Hq % Hkv || out->l.shape[0] != B || out->l.shape[1] != Hq ||
        out->l.shape[2] != Lq || out->l.shape[3] != Dv)
        return wgt_error(WGT_ERR_SHAPE, "cpu: sdpa: shapes must be q [B, Hq, Lq, D], k [B, Hkv, Lk, D], "
                         "v [B, Hkv, Lk, Dv], out [B, Hq, Lq, Dv], with Hq a multiple of Hkv");
    wgt_cpu_tensor mb;
    int64_t full[4] = {B, Hq, Lq, Lk};
    if (mask) {
        CPU_CHECK(mask, "sdpa mask");
        mb.data = mask->data;
        CPU_TRY(wgt_cpu_broadcast_to(&mask->l, 4, full, &mb.l, "sdpa mask"));
    }
    int bool_mask = mask && mask->l.dtype == WGT_BOOL;
    double scale = p && p->scale != 0 ? p->scale : 1 / sqrt((double)D);
    double *s = malloc(sizeof(double) * (size_t)(Lk ? Lk : 1));
    if (!s) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "cpu: sdpa: no memory for %lld scores", (long long)Lk);
    int64_t group = Hq / Hkv;
#define AT(t, a, b_, c, d) ((t)->l.offset + (a) * (t)->l.strides[0] + (b_) * (t)->l.strides[1] + \
                            (c) * (t)->l.strides[2] + (d) * (t)->l.strides[3])
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++) {
            int64_t hk = h / group;
            for (int64_t i = 0; i < Lq; i++) {
                double m = -INFINITY;
                for (int64_t j = 0; j < Lk; j++) {
                    double acc = 0;
                    if (p && p->causal && (j > p->causal_offset + i ||
                                           (p->window > 0 && j <= p->causal_offset + i - p->window))) {
                        s[j] = -INFINITY;
                        continue;
                    }
                    for (int64_t d = 0; d < D; d++)
                        acc += wgt_cpu_load_f(q, AT(q, b, h, i, d)) * wgt_cpu_load_f(k, AT(k, b, hk, j, d));
                    acc *= scale;
                    if (mask) {
                        int64_t at = AT(&mb, b, h, i, j);
                        if (bool_mask) acc = wgt_cpu_load_i(&mb, at) ? acc : -INFINITY;
                        else acc += wgt_cpu_load_f(&mb, at);
                    }
                    s[j] = acc;
                    if (acc > m || isnan(acc)) m = acc;
                }
                double sum = 0;
                if (m == -INFINITY) /* no key left: zeros, as PyTorch's math backend (>= 2.5) */
                    for (int64_t j = 0; j < Lk; j++) s[j] = 0;
                else
                    for (int64_t j = 0; j < Lk; j++) sum += (s[j] = exp(s[j] - m));
                for (int64_t d = 0; d < Dv; d++) {
                    double acc = 0;
                    for (int64_t j = 0; j < Lk; j++)
                        acc += s[j] * wgt_cpu_load_f(v, AT(v, b, hk, j, d));
                    /* a row without keys is zeros; one with a NaN (or +inf) score is NaN, as in
                     * PyTorch: the sum of exp(s - max) is NaN there, and so is acc / sum */
                    wgt_cpu_store_f(out, AT(out, b, h, i, d), m == -INFINITY ? 0 : acc / sum);
                }
            }
        }
#undef AT
    free(s);
    return WGT_OK;
}
