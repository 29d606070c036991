/* Layout independence: every op run on random strided layouts (permuted storage order, gaps
 * between rows, offsets) for its inputs AND its output must give bit-identical results to the same
 * op on dense row-major copies. Catches ops that index with the wrong stride or ignore an offset. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"

static unsigned rng = 99;
static unsigned rnd(unsigned n) { return rng = rng * 1664525u + 1013904223u, (rng >> 8) % n; }
static float frnd(void) { return (float)rnd(2001) / 500.0f - 2.0f; }

#define MAXBUF 1024
static void *bufs[MAXBUF];
static int nbufs;
static void *keep(void *p) { return nbufs < MAXBUF ? (bufs[nbufs++] = p) : p; }

/* A tensor of the given shape in a random storage layout, filled with small values (indices for
 * integer dtypes within [0, imax)). */
static wgt_cpu_tensor strided(wgt_dtype dt, int nd, const int64_t *shape, int imax)
{
    wgt_cpu_tensor t;
    int perm[WGT_MAX_DIMS];
    for (int d = 0; d < nd; d++) perm[d] = d;
    for (int d = nd - 1; d > 0; d--) {
        int j = (int)rnd((unsigned)d + 1), x = perm[d];
        perm[d] = perm[j], perm[j] = x;
    }
    t.l.dtype = dt, t.l.ndim = nd;
    int64_t stride = 1 + rnd(2), offset = rnd(5);
    for (int i = nd - 1; i >= 0; i--) { /* perm[nd-1] is the innermost in storage */
        int d = perm[i];
        t.l.shape[d] = shape[d];
        t.l.strides[d] = stride;
        stride *= shape[d] + rnd(3);
        if (stride == 0) stride = 1;
    }
    for (int d = nd; d < WGT_MAX_DIMS; d++) t.l.shape[d] = 1, t.l.strides[d] = 0;
    t.l.offset = offset;
    int64_t span = offset + stride + 8;
    t.data = keep(calloc((size_t)span, 8));
    for (int64_t i = 0; i < span; i++) {
        wgt_cpu_tensor all = wgt_cpu_tensor_make(t.data, dt, 1, &span);
        if (wgt_cpu_is_float(dt)) wgt_cpu_store_f(&all, i, frnd());
        else wgt_cpu_store_i(&all, i, imax ? rnd((unsigned)imax) : rnd(2));
    }
    return t;
}

static wgt_cpu_tensor dense_copy(const wgt_cpu_tensor *t)
{
    int64_t n = wgt_layout_numel(&t->l);
    wgt_cpu_tensor d = wgt_cpu_tensor_make(keep(calloc((size_t)(n ? n : 1), 8)), t->l.dtype, t->l.ndim, t->l.shape);
    wgt_cpu_copy(t, &d);
    return d;
}

static int failures, checks;

static void same(const char *op, const wgt_cpu_tensor *a, const wgt_cpu_tensor *b)
{
    int64_t n = wgt_layout_numel(&a->l);
    checks++;
    for (int64_t i = 0; i < n; i++) {
        int64_t ia = wgt_layout_index(&a->l, i), ib = wgt_layout_index(&b->l, i);
        double x = wgt_cpu_load_f(a, ia), y = wgt_cpu_load_f(b, ib);
        if (!(x == y || (isnan(x) && isnan(y))) || wgt_cpu_load_i(a, ia) != wgt_cpu_load_i(b, ib)) {
            printf("FAIL %s: element %lld: strided %.9g, dense %.9g\n", op, (long long)i, x, y);
            failures++;
            return;
        }
    }
}

/* Run op on strided tensors (in[0..n), out[0..m)) and on dense copies, compare the outputs. The
 * outputs start equal (copies), as scatter-like ops read them. */
typedef wgt_status (*op_fn)(wgt_cpu_tensor *in, wgt_cpu_tensor *out);

static void check(const char *name, op_fn f, wgt_cpu_tensor *in, int n, wgt_cpu_tensor *out, int m)
{
    wgt_cpu_tensor din[8], dout[8];
    for (int i = 0; i < n; i++) din[i] = dense_copy(&in[i]);
    for (int i = 0; i < m; i++) dout[i] = dense_copy(&out[i]);
    wgt_status a = f(in, out), b = f(din, dout);
    if (a != b || a != WGT_OK) {
        printf("FAIL %s: status %d strided, %d dense: %s\n", name, a, b, wgt_errmsg());
        failures++;
        return;
    }
    for (int i = 0; i < m; i++) same(name, &out[i], &dout[i]);
}

static int g_dim, g_k;
static uint32_t g_mask;
static wgt_status f_unary(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_unary(WGT_UNARY_GELU_TANH, NULL, &i[0], &o[0]); }
static wgt_status f_binary(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_binary(WGT_BINARY_REMAINDER, &i[0], &i[1], &o[0]); }
static wgt_status f_where(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_where(&i[2], &i[0], &i[1], &o[0]); }
static wgt_status f_var(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_reduce(WGT_REDUCE_VAR, &i[0], g_mask, 1, 1, &o[0], NULL); }
static wgt_status f_amax(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_reduce(WGT_REDUCE_AMAX, &i[0], g_mask, 1, 0, &o[0], &o[1]); }
static wgt_status f_cummax(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_scan(WGT_SCAN_CUMMAX, &i[0], g_dim, 0, 0, &o[0], &o[1]); }
static wgt_status f_cumsum(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_scan(WGT_SCAN_CUMSUM, &i[0], g_dim, 1, 1, &o[0], NULL); }
static wgt_status f_softmax(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_log_softmax(&i[0], g_dim, &o[0]); }
static wgt_status f_layer(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_layer_norm(&i[0], 2, &i[1], &i[2], 1e-5, &o[0], NULL, NULL); }
static wgt_status f_group(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_group_norm(&i[0], 2, &i[1], &i[2], 1e-5, &o[0]); }
static wgt_status f_batch(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_batch_norm(&i[0], &o[1], &o[2], &i[1], &i[2], 1, 0.1, 1e-5, &o[0]); }
static wgt_status f_matmul(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_matmul(&i[0], &i[1], &o[0]); }
static wgt_status f_linear(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_linear(&i[0], &i[1], &i[2], &o[0]); }
static wgt_status f_gather(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_gather(&i[0], g_dim, &i[1], &o[0]); }
static wgt_status f_scatter(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_scatter(&o[0], g_dim, &i[1], &i[0], WGT_SCATTER_ADD, &o[0]); }
static wgt_status f_isel(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_index_select(&i[0], g_dim, &i[1], &o[0]); }
static wgt_status f_iadd(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_index_add(&o[0], g_dim, &i[1], &i[0], 0.5, &o[0]); }
static wgt_status f_flip(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_flip(&i[0], g_mask, &o[0]); }
static wgt_status f_roll(wgt_cpu_tensor *i, wgt_cpu_tensor *o)
{
    int64_t sh[2] = {g_k, -1};
    int dims[2] = {g_dim, 0};
    return wgt_cpu_roll(&i[0], 2, sh, dims, &o[0]);
}
static wgt_status f_tril(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_tril(&i[0], g_k, &o[0]); }
static wgt_status f_pad(wgt_cpu_tensor *i, wgt_cpu_tensor *o)
{
    int64_t pads[6] = {1, 0, 2, 0, 1, 1};
    return wgt_cpu_pad(&i[0], (wgt_pad_mode)g_k, pads, 0.5, &o[0]);
}
static wgt_status f_cat(wgt_cpu_tensor *i, wgt_cpu_tensor *o)
{
    const wgt_cpu_tensor *xs[2] = {&i[0], &i[1]};
    return wgt_cpu_cat(xs, 2, 1, &o[0]);
}
static wgt_status f_rope(wgt_cpu_tensor *i, wgt_cpu_tensor *o)
{
    wgt_rope_params p = {.theta = 10000, .scaling = WGT_ROPE_YARN, .factor = 4, .original_max_position = 64, .truncate = 1};
    return wgt_cpu_rope(&i[0], &i[1], 6, g_k, &p, &o[0]);
}
static wgt_status f_sdpa(wgt_cpu_tensor *i, wgt_cpu_tensor *o)
{
    wgt_sdpa_params p = {0, 1, 2};
    return wgt_cpu_sdpa(&i[0], &i[1], &i[2], &i[3], &p, &o[0]);
}
static wgt_status f_emb(wgt_cpu_tensor *i, wgt_cpu_tensor *o) { return wgt_cpu_embedding(&i[0], &i[1], &o[0]); }

int main(void)
{
    for (int round = 0; round < 40; round++) {
        int64_t s3[3] = {2 + rnd(3), 3 + rnd(3), 3 + rnd(3)}, r1[3], r2[3];
        wgt_cpu_tensor in[8], out[8];
        g_dim = (int)rnd(3), g_mask = 1 + rnd(7), g_k = (int)rnd(3) - 1;
        in[0] = strided(WGT_F32, 3, s3, 0), out[0] = strided(WGT_F32, 3, s3, 0);
        check("unary", f_unary, in, 1, out, 1);
        int64_t bs[3] = {s3[0], 1, s3[2]};
        in[1] = strided(WGT_F32, 3, bs, 0);
        check("binary broadcast", f_binary, in, 2, out, 1);
        in[2] = strided(WGT_BOOL, 3, s3, 0);
        check("where", f_where, in, 3, out, 1);
        for (int d = 0; d < 3; d++) r1[d] = g_mask >> d & 1 ? 1 : s3[d];
        out[0] = strided(WGT_F32, 3, r1, 0), out[1] = strided(WGT_I64, 3, r1, 1);
        check("var", f_var, in, 1, out, 1);
        check("amax+indices", f_amax, in, 1, out, 2);
        out[0] = strided(WGT_F32, 3, s3, 0), out[1] = strided(WGT_I32, 3, s3, 1);
        check("cummax", f_cummax, in, 1, out, 2);
        check("cumsum excl rev", f_cumsum, in, 1, out, 1);
        check("log_softmax", f_softmax, in, 1, out, 1);
        int64_t last2[2] = {s3[1], s3[2]};
        in[1] = strided(WGT_F32, 2, last2, 0), in[2] = strided(WGT_F32, 2, last2, 0);
        check("layer_norm", f_layer, in, 3, out, 1);
        int64_t gs[3] = {s3[0], 4, s3[2]}, c4 = 4;
        in[0] = strided(WGT_F32, 3, gs, 0), out[0] = strided(WGT_F32, 3, gs, 0);
        in[1] = strided(WGT_F32, 1, &c4, 0), in[2] = strided(WGT_F32, 1, &c4, 0);
        check("group_norm", f_group, in, 3, out, 1);
        out[1] = strided(WGT_F32, 1, &c4, 0), out[2] = strided(WGT_F32, 1, &c4, 0);
        check("batch_norm train", f_batch, in, 3, out, 3);
        int64_t ma[4] = {2, 1, 3, 4}, mb[3] = {3, 4, 5}, mo[4] = {2, 3, 3, 5};
        in[0] = strided(WGT_F32, 4, ma, 0), in[1] = strided(WGT_F32, 3, mb, 0), out[0] = strided(WGT_F32, 4, mo, 0);
        check("matmul", f_matmul, in, 2, out, 1);
        int64_t lx[3] = {2, 3, 4}, lw[2] = {5, 4}, lb = 5, lo[3] = {2, 3, 5};
        in[0] = strided(WGT_F32, 3, lx, 0), in[1] = strided(WGT_F32, 2, lw, 0), in[2] = strided(WGT_F32, 1, &lb, 0);
        out[0] = strided(WGT_F32, 3, lo, 0);
        check("linear", f_linear, in, 3, out, 1);
        in[0] = strided(WGT_F32, 3, s3, 0);
        for (int d = 0; d < 3; d++) r2[d] = d == g_dim ? 4 : s3[d] - rnd(2);
        in[1] = strided(WGT_I64, 3, r2, (int)s3[g_dim]);
        out[0] = strided(WGT_F32, 3, r2, 0);
        check("gather", f_gather, in, 2, out, 1);
        for (int d = 0; d < 3; d++) r2[d] = d == g_dim ? 2 : s3[d];
        in[0] = strided(WGT_F32, 3, r2, 0), in[1] = strided(WGT_I64, 3, r2, (int)s3[g_dim]);
        out[0] = strided(WGT_F32, 3, s3, 0);
        check("scatter add (in place)", f_scatter, in, 2, out, 1);
        int64_t k3 = 3;
        in[1] = strided(WGT_I32, 1, &k3, (int)s3[g_dim]);
        for (int d = 0; d < 3; d++) r2[d] = d == g_dim ? 3 : s3[d];
        in[0] = strided(WGT_F32, 3, r2, 0);
        check("index_add (in place)", f_iadd, in, 2, out, 1);
        in[0] = strided(WGT_F32, 3, s3, 0), out[0] = strided(WGT_F32, 3, r2, 0);
        check("index_select", f_isel, in, 2, out, 1);
        out[0] = strided(WGT_F32, 3, s3, 0);
        check("flip", f_flip, in, 1, out, 1);
        check("roll", f_roll, in, 1, out, 1);
        check("tril", f_tril, in, 1, out, 1);
        int64_t ps[3] = {s3[0] + 1, s3[1] + 1, s3[2] + 3};
        out[0] = strided(WGT_F32, 3, ps, 0);
        for (g_k = 0; g_k < WGT_PAD_COUNT; g_k++) check("pad", f_pad, in, 1, out, 1);
        int64_t cs[3] = {s3[0], s3[1] + 2, s3[2]}, c2[3] = {s3[0], 2, s3[2]};
        in[1] = strided(WGT_F32, 3, c2, 0), out[0] = strided(WGT_F32, 3, cs, 0);
        check("cat", f_cat, in, 2, out, 1);
        int64_t rs[4] = {2, 3, 4, 8}, L = 4;
        in[0] = strided(WGT_F32, 4, rs, 0), in[1] = strided(WGT_I64, 1, &L, 50), out[0] = strided(WGT_F32, 4, rs, 0);
        for (g_k = 0; g_k < 2; g_k++) check("rope", f_rope, in, 2, out, 1);
        int64_t qs[4] = {2, 4, 3, 5}, ks[4] = {2, 2, 6, 5}, ms[2] = {3, 6};
        in[0] = strided(WGT_F32, 4, qs, 0), in[1] = strided(WGT_F32, 4, ks, 0), in[2] = strided(WGT_F32, 4, ks, 0);
        in[3] = strided(WGT_F32, 2, ms, 0), out[0] = strided(WGT_F32, 4, qs, 0);
        check("sdpa", f_sdpa, in, 4, out, 1);
        int64_t ws[2] = {7, 3}, is[2] = {2, 3}, eo[3] = {2, 3, 3};
        in[0] = strided(WGT_F32, 2, ws, 0), in[1] = strided(WGT_I64, 2, is, 7), out[0] = strided(WGT_F32, 3, eo, 0);
        check("embedding", f_emb, in, 2, out, 1);
        for (int i = 0; i < nbufs; i++) free(bufs[i]);
        nbufs = 0;
    }
    printf("%d strided-vs-dense comparisons, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
