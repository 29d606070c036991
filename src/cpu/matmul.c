/* Matrix products: matmul (1-D to N-D, broadcast batch dims), linear, addmm, baddbmm, outer. */
#include "cpu/cpu_internal.h"

/* out[..., m, n] = beta * c[..., m, n] + alpha * sum_k a[..., m, k] b[..., k, n], where a, b, c
 * and out all have out's ndim (>= 2) and a, b, c are already broadcast to out's batch dims.
 * c may be NULL (or beta 0: c is not read). Integers accumulate exactly in int64. */
static void mm_core(const wgt_cpu_tensor *a, const wgt_cpu_tensor *b, const wgt_cpu_tensor *c,
                    double beta, double alpha, const wgt_cpu_tensor *out)
{
    int nd = out->l.ndim, nb = nd - 2;
    int64_t M = out->l.shape[nd - 2], N = out->l.shape[nd - 1], K = a->l.shape[nd - 1];
    wgt_layout ba = a->l, bb = b->l, bo = out->l, bc = c ? c->l : out->l;
    ba.ndim = bb.ndim = bo.ndim = bc.ndim = nb; /* batch dims only */
    int64_t sam = a->l.strides[nd - 2], sak = a->l.strides[nd - 1];
    int64_t sbk = b->l.strides[nd - 2], sbn = b->l.strides[nd - 1];
    int64_t som = out->l.strides[nd - 2], son = out->l.strides[nd - 1];
    int64_t scm = c ? c->l.strides[nd - 2] : 0, scn = c ? c->l.strides[nd - 1] : 0;
    int ints = !wgt_cpu_is_float(a->l.dtype) && !wgt_cpu_is_float(b->l.dtype) &&
               !wgt_cpu_is_float(out->l.dtype) && alpha == 1 && (beta == 1 || beta == 0 || !c);
    int64_t batches = wgt_layout_numel(&bo);
    for (int64_t t = 0; t < batches; t++) {
        int64_t oa = wgt_layout_index(&ba, t), ob = wgt_layout_index(&bb, t);
        int64_t oo = wgt_layout_index(&bo, t), oc = wgt_layout_index(&bc, t);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                int64_t to = oo + m * som + n * son;
                if (ints) {
                    uint64_t acc = 0;
                    for (int64_t k = 0; k < K; k++)
                        acc += (uint64_t)wgt_cpu_load_i(a, oa + m * sam + k * sak) *
                               (uint64_t)wgt_cpu_load_i(b, ob + k * sbk + n * sbn);
                    if (c && beta != 0) acc += (uint64_t)wgt_cpu_load_i(c, oc + m * scm + n * scn);
                    wgt_cpu_store_i(out, to, (int64_t)acc);
                    continue;
                }
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += wgt_cpu_load_f(a, oa + m * sam + k * sak) *
                           wgt_cpu_load_f(b, ob + k * sbk + n * sbn);
                acc *= alpha;
                if (c && beta != 0) acc += beta * wgt_cpu_load_f(c, oc + m * scm + n * scn);
                wgt_cpu_store_f(out, to, acc);
            }
    }
}

static wgt_status shape_error(const char *op, const wgt_cpu_tensor *a, const wgt_cpu_tensor *b,
                              const wgt_cpu_tensor *out)
{
    char b1[128], b2[128], b3[128];
    return wgt_error(WGT_ERR_SHAPE, "cpu: %s: shapes %s and %s do not give output %s", op,
                     cpu_shape_str(&a->l, b1, sizeof b1), cpu_shape_str(&b->l, b2, sizeof b2),
                     cpu_shape_str(&out->l, b3, sizeof b3));
}

wgt_status wgt_cpu_matmul(const wgt_cpu_tensor *a, const wgt_cpu_tensor *b, const wgt_cpu_tensor *out)
{
    CPU_CHECK(a, "matmul a");
    CPU_CHECK(b, "matmul b");
    CPU_CHECK(out, "matmul output");
    int na = a->l.ndim, nbd = b->l.ndim;
    if (na < 1 || nbd < 1)
        return wgt_error(WGT_ERR_SHAPE, "cpu: matmul needs operands of at least 1 dim (got %d and %d)",
                         na, nbd);
    /* Promote 1-D operands: a [K] -> [1, K], b [K] -> [K, 1]. */
    wgt_layout a2 = a->l, b2 = b->l;
    if (na == 1) {
        a2.ndim = 2, a2.shape[1] = a->l.shape[0], a2.strides[1] = a->l.strides[0];
        a2.shape[0] = 1, a2.strides[0] = 0;
    }
    if (nbd == 1) {
        b2.ndim = 2, b2.shape[0] = b->l.shape[0], b2.strides[0] = b->l.strides[0];
        b2.shape[1] = 1, b2.strides[1] = 0;
    }
    int64_t M = a2.shape[a2.ndim - 2], K = a2.shape[a2.ndim - 1], N = b2.shape[b2.ndim - 1];
    if (b2.shape[b2.ndim - 2] != K) return shape_error("matmul", a, b, out);
    /* Broadcast batch dims. */
    int nba = a2.ndim - 2, nbb = b2.ndim - 2, nbatch = nba > nbb ? nba : nbb;
    int64_t full[WGT_MAX_DIMS + 2];
    for (int d = 0; d < nbatch; d++) {
        int da = d - (nbatch - nba), db = d - (nbatch - nbb);
        int64_t sa = da >= 0 ? a2.shape[da] : 1, sb = db >= 0 ? b2.shape[db] : 1;
        if (sa != sb && sa != 1 && sb != 1) return shape_error("matmul", a, b, out);
        full[d] = sa == 1 ? sb : sa;
    }
    if (nbatch + 2 > WGT_MAX_DIMS) return shape_error("matmul", a, b, out);
    full[nbatch] = M, full[nbatch + 1] = N;
    /* The expected output drops the dims added for 1-D operands. */
    int want = nbatch + (na > 1) + (nbd > 1), od = 0;
    if (out->l.ndim != want) return shape_error("matmul", a, b, out);
    wgt_layout o2 = out->l;
    o2.ndim = nbatch + 2;
    for (int d = 0; d < nbatch + 2; d++) {
        int dropped = (d == nbatch && na == 1) || (d == nbatch + 1 && nbd == 1);
        if (dropped) {
            o2.shape[d] = 1, o2.strides[d] = 0;
            continue;
        }
        if (out->l.shape[od] != full[d]) return shape_error("matmul", a, b, out);
        o2.shape[d] = out->l.shape[od], o2.strides[d] = out->l.strides[od];
        od++;
    }
    wgt_cpu_tensor av = {a->data, {0}}, bv = {b->data, {0}}, ov = {out->data, o2};
    int64_t ashape[WGT_MAX_DIMS], bshape[WGT_MAX_DIMS];
    for (int d = 0; d < nbatch; d++) ashape[d] = bshape[d] = full[d];
    ashape[nbatch] = M, ashape[nbatch + 1] = K, bshape[nbatch] = K, bshape[nbatch + 1] = N;
    CPU_TRY(wgt_cpu_broadcast_to(&a2, nbatch + 2, ashape, &av.l, "matmul a"));
    CPU_TRY(wgt_cpu_broadcast_to(&b2, nbatch + 2, bshape, &bv.l, "matmul b"));
    mm_core(&av, &bv, NULL, 0, 1, &ov);
    return WGT_OK;
}

wgt_status wgt_cpu_linear(const wgt_cpu_tensor *x, const wgt_cpu_tensor *w,
                          const wgt_cpu_tensor *bias, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "linear input");
    CPU_CHECK(w, "linear weight");
    CPU_CHECK(out, "linear output");
    int nd = x->l.ndim;
    if (nd < 1 || w->l.ndim != 2 || out->l.ndim != nd || w->l.shape[1] != x->l.shape[nd - 1] ||
        out->l.shape[nd - 1] != w->l.shape[0])
        return shape_error("linear", x, w, out);
    for (int d = 0; d < nd - 1; d++)
        if (out->l.shape[d] != x->l.shape[d]) return shape_error("linear", x, w, out);
    /* x as [rows..., 1, I] against w^T [I, O]: a view with one more dim, no copy. */
    wgt_layout xl = x->l, ol = out->l, wl = w->l;
    if (nd + 1 > WGT_MAX_DIMS) return shape_error("linear", x, w, out);
    xl.ndim = ol.ndim = nd + 1;
    xl.shape[nd] = x->l.shape[nd - 1], xl.strides[nd] = x->l.strides[nd - 1];
    xl.shape[nd - 1] = 1, xl.strides[nd - 1] = 0;
    ol.shape[nd] = out->l.shape[nd - 1], ol.strides[nd] = out->l.strides[nd - 1];
    ol.shape[nd - 1] = 1, ol.strides[nd - 1] = 0;
    int64_t wshape[WGT_MAX_DIMS];
    for (int d = 0; d < nd - 1; d++) wshape[d] = x->l.shape[d];
    wgt_layout wt = wl; /* [I, O] */
    wt.shape[0] = wl.shape[1], wt.strides[0] = wl.strides[1];
    wt.shape[1] = wl.shape[0], wt.strides[1] = wl.strides[0];
    wshape[nd - 1] = wt.shape[0], wshape[nd] = wt.shape[1];
    wgt_cpu_tensor xv = {x->data, xl}, wv = {w->data, {0}}, ov = {out->data, ol}, bv;
    CPU_TRY(wgt_cpu_broadcast_to(&wt, nd + 1, wshape, &wv.l, "linear weight"));
    if (bias) CPU_TRY(cpu_broadcast_view(bias, &ov, "linear bias", &bv));
    mm_core(&xv, &wv, bias ? &bv : NULL, 1, 1, &ov);
    return WGT_OK;
}

static wgt_status addmm_nd(const char *op, int nd, const wgt_cpu_tensor *self, const wgt_cpu_tensor *m1,
                           const wgt_cpu_tensor *m2, double beta, double alpha,
                           const wgt_cpu_tensor *out)
{
    CPU_CHECK(m1, op);
    CPU_CHECK(m2, op);
    CPU_CHECK(out, op);
    if (m1->l.ndim != nd || m2->l.ndim != nd || out->l.ndim != nd ||
        m1->l.shape[nd - 1] != m2->l.shape[nd - 2] || out->l.shape[nd - 2] != m1->l.shape[nd - 2] ||
        out->l.shape[nd - 1] != m2->l.shape[nd - 1] ||
        (nd == 3 && (m1->l.shape[0] != out->l.shape[0] || m2->l.shape[0] != out->l.shape[0])))
        return shape_error(op, m1, m2, out);
    wgt_cpu_tensor sv;
    if (self && beta != 0) CPU_TRY(cpu_broadcast_view(self, out, op, &sv));
    mm_core(m1, m2, self && beta != 0 ? &sv : NULL, beta, alpha, out);
    return WGT_OK;
}

wgt_status wgt_cpu_addmm(const wgt_cpu_tensor *self, const wgt_cpu_tensor *m1,
                         const wgt_cpu_tensor *m2, double beta, double alpha,
                         const wgt_cpu_tensor *out)
{
    return addmm_nd("addmm", 2, self, m1, m2, beta, alpha, out);
}

wgt_status wgt_cpu_baddbmm(const wgt_cpu_tensor *self, const wgt_cpu_tensor *b1,
                           const wgt_cpu_tensor *b2, double beta, double alpha,
                           const wgt_cpu_tensor *out)
{
    return addmm_nd("baddbmm", 3, self, b1, b2, beta, alpha, out);
}

wgt_status wgt_cpu_outer(const wgt_cpu_tensor *a, const wgt_cpu_tensor *b, const wgt_cpu_tensor *out)
{
    CPU_CHECK(a, "outer a");
    CPU_CHECK(b, "outer b");
    CPU_CHECK(out, "outer output");
    if (a->l.ndim != 1 || b->l.ndim != 1 || out->l.ndim != 2 || out->l.shape[0] != a->l.shape[0] ||
        out->l.shape[1] != b->l.shape[0])
        return shape_error("outer", a, b, out);
    /* a [N] as [N, 1], b [M] as [1, M]: a product with K = 1. */
    wgt_layout al = a->l, bl = b->l;
    al.ndim = bl.ndim = 2;
    al.shape[1] = 1, al.strides[1] = 0;
    bl.shape[1] = b->l.shape[0], bl.strides[1] = b->l.strides[0], bl.shape[0] = 1, bl.strides[0] = 0;
    wgt_cpu_tensor av = {a->data, al}, bv = {b->data, bl};
    mm_core(&av, &bv, NULL, 0, 1, out);
    return WGT_OK;
}
