/*
 * Routing a captured one-token step to the decoder's fused kernels (a graph rewrite run by
 * ew_fuse_graph after products sharing an input merged, before the elementwise chains fuse;
 * WGT_GRAPH_ROUTE). A step written with plain ops (forward.c under WGT_DECODE_GENERIC=1, or any
 * model built from wgt's ops) records, per layer, rms_norm, a q/k/v product, the rotation and
 * cache writes, attention, the output product and the residual add, rms_norm, the gate/up
 * product, silu * up, the down product and the residual add. The hand-fused step runs the same
 * computation as five dispatches through fused_linear.wgsl and fused_linear_qkv_rope.wgsl, whose
 * norm costs nothing (its sum of squares comes with the dot product, in the lanes of each row) and
 * whose SwiGLU is read at the product's loads. Here the captured commands are matched by what they
 * computed (their notes and parameters: an rms_norm of one f32 row, a one-row gemv product of an
 * f32 A through a [N, K] float weight, silu and mul over the two halves of one row, an add of the
 * product and a row) and replaced by the kernel the hand-fused op would have dispatched for them:
 *   rms_norm -> product                   fused_linear, norm prologue (bias from the product's C)
 *   rms_norm -> product -> qkv_rope_cache  fused_linear_qkv_rope (the position fields move along)
 *   silu, mul -> product [-> add]         fused_linear, SwiGLU prologue [+ residual]
 *   product -> add                        fused_linear + residual
 * Not bit for bit the plain ops (the norm's scale applies after the dot product, the dot runs in
 * fused_linear's order): within rounding, as wgt_fused_linear is of its composition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise.h"
#include "ops/fused.h"
#include "ops/fused_route.h"
#include "ops/matmul_fuse.h"
#include "ops/norm.h"

typedef struct dsp {
    const wgt_binding *b;
    int n, patched;
    const uint8_t *p;
    uint32_t grid[3];
    const wgt_kernel *k;
} dsp;

static int get(const wgt_gpu_graph *g, int i, dsp *d)
{
    if (i < 0 || i >= wgt_gpu_graph_n_cmds(g)) return 0;
    d->b = wgt_gpu_graph_dispatch(g, i, &d->n, &d->p, d->grid, &d->patched, &d->k);
    return d->b != NULL;
}

/* The byte where a note's tensor starts in its buffer (a note's storage starts at byte 0). */
static uint64_t note_byte(const ew_note_tensor *t) { return (uint64_t)t->offset * wgt_dtype_size(t->dt); }

/* 1 when t is an f32 row of n contiguous elements (the last dim's stride 1, every other dim 1). */
static int f32_row(const ew_note *n, const ew_note_tensor *t, int64_t len)
{
    if (n->ndim < 1 || t->dt != WGT_F32 || n->shape[n->ndim - 1] != len || t->strides[n->ndim - 1] != 1) return 0;
    for (int d = 0; d < n->ndim - 1; d++)
        if (n->shape[d] != 1) return 0;
    return 1;
}

/* A one-row gemv product that fused_linear can run: f32 A read from its binding, a float weight
 * [N, K] stored as rows (16-byte loads), alpha 1, no C or a bias row (beta 1). */
typedef struct prod {
    const mm_note *mn;
    mm_params mp;
    dsp d;
    uint64_t a_byte, out_byte; /* where A and the output start in their buffers */
} prod;

static int product_at(const wgt_gpu_graph *g, int i, prod *pr)
{
    const mm_note *mn = wgt_gpu_graph_note(g, i, EW_HOST_NOTE);
    if (!mn || !mn->h.mm || !mn->gemv || !mn->h.ld || strcmp(mn->entry, "main") || mn->bload != MM_LOAD_B8) return 0;
    if (!get(g, i, &pr->d) || pr->d.patched || pr->d.n != 4) return 0;
    memcpy(&pr->mp, pr->d.p, sizeof pr->mp);
    const mm_params *p = &pr->mp;
    size_t es = wgt_dtype_size(mn->db);
    if (mn->db != WGT_F32 && mn->db != WGT_F16 && mn->db != WGT_BF16) return 0;
    if (p->M != 1 || p->batch != 1 || p->K == 0 || p->K % 8 || p->N == 0 || p->alpha != 1.0f ||
        (uint64_t)p->sbn * 16 != (uint64_t)p->K * es || (p->has_c && (p->beta != 1.0f || p->scn != 1)))
        return 0;
    if (p->has_c && mn->dc != WGT_F32 && mn->dc != WGT_F16 && mn->dc != WGT_BF16) return 0;
    pr->mn = mn;
    pr->a_byte = pr->d.b[0].offset + 16ull * p->off_a;
    pr->out_byte = pr->d.b[3].offset + 4ull * p->n0;
    return 1;
}

/* An elementwise f32 note of family fam and op. */
static const ew_note *ew_at(const wgt_gpu_graph *g, int i, int fam, uint32_t op)
{
    const ew_note *n = wgt_gpu_graph_note(g, i, EW_NOTE);
    if (!n || n->fam != fam || n->op != op || n->ci != CI_F32 || n->out.dt != WGT_F32) return NULL;
    dsp d;
    if (!get(g, i, &d) || d.patched) return NULL;
    return n;
}

/* The residual add after product pr at command i: out = prod + res (either order), res an f32
 * row of N elements; *res_byte where res starts in its buffer. */
static const ew_note *add_after(const wgt_gpu_graph *g, int i, const prod *pr, int *which)
{
    const ew_note *n = ew_at(g, i, EW_BINARY, WGT_BINARY_ADD);
    if (!n || n->n_in != 2 || !f32_row(n, &n->out, pr->mp.N)) return NULL;
    for (int t = 0; t < 2; t++) {
        const ew_note_tensor *x = &n->in[t], *r = &n->in[1 - t];
        if (x->buf == pr->d.b[3].buffer && note_byte(x) == pr->out_byte && f32_row(n, x, pr->mp.N) &&
            f32_row(n, r, pr->mp.N) && r->buf != x->buf) {
            *which = t;
            return n;
        }
    }
    return NULL;
}

/* A binding over a note tensor's buffer from an aligned offset at or before byte `at`; *off its
 * element offset (f32) in it. */
static wgt_binding note_binding(const ew_note_tensor *t, uint64_t at, uint64_t *off)
{
    uint64_t start = at & ~255ull;
    *off = (at - start) / 4;
    return (wgt_binding){t->buf, start, (t->bytes - start) & ~3ull};
}

static void logd(wgt_context *ctx, int first, int last, const char *what)
{
    if (wgt_gpu_debug(ctx)) fprintf(stderr, "wgt: graph: routed dispatches %d..%d to %s\n", first, last, what);
}

/* The routed kernel's name in profiles: the ops it runs, as fused kernels are named. */
static const char *routed_name(int pro, int res)
{
    if (pro == WGT_PRO_RMS_NORM) return res ? "fused:rms_norm>matmul>add" : "fused:rms_norm>matmul";
    if (pro == WGT_PRO_SWIGLU) return res ? "fused:silu+mul>matmul>add" : "fused:silu+mul>matmul";
    return res ? "fused:matmul>add" : "fused:matmul";
}

/* Emit fused_linear over dispatches first..last. x: its binding and f32 offset (elements). */
static wgt_status emit_linear(wgt_context *ctx, wgt_gpu_graph *g, int first, int last, int pro, const prod *pr,
                              wgt_binding x, uint64_t x_off, const wgt_binding *gam, uint64_t g_off, float eps,
                              const wgt_binding *res, uint64_t r_off, wgt_binding out, uint64_t o_off, int *done)
{
    const mm_params *mp = &pr->mp;
    if (x_off % 4 || g_off % 4) return WGT_OK;
    wgt_kernel *k;
    op_fl_params p;
    uint32_t gx, gy;
    wgt_status st = op_fused_linear_kernel(ctx, pro, pr->mn->db, mp->has_c ? pr->mn->dc : WGT_F32, mp->N, mp->K,
                                           routed_name(pro, res != NULL), &k, &p, &gx, &gy);
    if (st) return st;
    p.flags = (mp->has_c ? 1u : 0u) | (res ? 2u : 0u), p.eps = eps;
    p.off_x = (uint32_t)(x_off / 4), p.off_w = mp->off_b, p.off_g = (uint32_t)(g_off / 4);
    p.off_b = mp->has_c ? mp->off_c : 0, p.off_r = (uint32_t)r_off, p.off_o = (uint32_t)o_off;
    wgt_binding b[6] = {x, pr->d.b[1], gam ? *gam : x, mp->has_c ? pr->d.b[2] : x, res ? *res : x, out};
    if ((st = wgt_gpu_graph_replace(g, first, last, k, &p, sizeof p, b, 6, gx, gy, 1))) return st;
    *done = 1;
    logd(ctx, first, last, pro == WGT_PRO_RMS_NORM ? "fused_linear (rms_norm prologue)"
                           : pro == WGT_PRO_SWIGLU ? "fused_linear (SwiGLU prologue)" : "fused_linear");
    return WGT_OK;
}

/* rms_norm at i, then a product at i + 1 reading its output, and maybe qkv_rope_cache at i + 2. */
static wgt_status route_norm(wgt_context *ctx, wgt_gpu_graph *g, int i, int *done)
{
    const ew_host_note *hn = wgt_gpu_graph_note(g, i, EW_HOST_NOTE);
    if (!hn || hn->mm || strcmp(hn->name, "rms_norm") || hn->in_dt != WGT_F32 || hn->out_dt != WGT_F32) return WGT_OK;
    dsp nd;
    prod pr;
    if (!get(g, i, &nd) || nd.patched || nd.n != 6 || !product_at(g, i + 1, &pr)) return WGT_OK;
    norm_params np;
    memcpy(&np, nd.p, sizeof np);
    if (np.op != NORM_RMS || np.n_rows != 1 || !np.row_simple || np.row_stride != 1 || !np.has_w || np.has_b ||
        np.wmod != 1 || np.wdiv != 1 || np.out_w0 != 0 || (np.pdt & 3) != 0 || np.R != pr.mp.K)
        return WGT_OK;
    wgt_buffer *hbuf = nd.b[1].buffer;
    if (pr.d.b[0].buffer != hbuf || pr.a_byte != nd.b[1].offset || (pr.mp.has_c && pr.d.b[2].buffer == hbuf))
        return WGT_OK;
    dsp rd;
    op_qkv_rope_params qp;
    int qkv = get(g, i + 2, &rd) && !strcmp(rd.k->name, "fused_qkv_rope") && rd.n == 5;
    if (qkv) {
        memcpy(&qp, rd.p, sizeof qp);
        qkv = qp.L == 1 && rd.b[0].buffer == pr.d.b[3].buffer && rd.b[0].offset + 4ull * qp.off_x == pr.out_byte &&
              (qp.Hq + 2 * qp.Hkv) * qp.hd == pr.mp.N && qp.hd % 2 == 0 &&
              wgt_gpu_graph_buffer_private(g, pr.d.b[3].buffer, i + 1, i + 2) &&
              wgt_gpu_graph_buffer_private(g, hbuf, i, i + 2);
    }
    if (!qkv) {
        if (!wgt_gpu_graph_buffer_private(g, hbuf, i, i + 1)) return WGT_OK;
        wgt_binding gam = nd.b[2];
        return emit_linear(ctx, g, i, i + 1, WGT_PRO_RMS_NORM, &pr, nd.b[0], np.off, &gam, np.w_off, np.eps, NULL, 0,
                           pr.d.b[3], pr.mp.n0, done);
    }
    if (np.off % 4 || np.w_off % 4) return WGT_OK;
    wgt_kernel *k;
    uint32_t wg;
    wgt_status st = op_fused_qkv_kernel(ctx, pr.mn->db, pr.mp.has_c ? pr.mn->dc : WGT_F32,
                                        "fused:rms_norm>matmul>qkv_rope_cache", &k, &wg);
    if (st) return st;
    op_qkv_params p = {0};
    p.S = pr.mp.N / 2, p.K = pr.mp.K, p.flags = pr.mp.has_c ? 1u : 0u, p.eps = np.eps;
    p.off_x = np.off / 4, p.off_w = pr.mp.off_b, p.off_g = np.w_off / 4, p.off_b = pr.mp.has_c ? pr.mp.off_c : 0;
    p.hd = qp.hd, p.Hq = qp.Hq, p.Hkv = qp.Hkv, p.rot = qp.rot, p.interleaved = qp.interleaved, p.pos = qp.pos0;
    p.ctx = qp.ctx, p.off_q = qp.off_q, p.off_k = qp.off_k, p.off_v = qp.off_v, p.af = qp.af;
    uint32_t gx, gy;
    op_qkv_grid(ctx, wg, 0, wgt_gpu_avoid_barriers(ctx), &p, &gx, &gy);
    wgt_binding b[8] = {nd.b[0], pr.d.b[1], nd.b[2], pr.mp.has_c ? pr.d.b[2] : nd.b[0],
                        rd.b[1], rd.b[2], rd.b[3], rd.b[4]};
    const uint32_t moves[3][2] = {{offsetof(op_qkv_rope_params, pos0), offsetof(op_qkv_params, pos)},
                                  {offsetof(op_qkv_rope_params, off_k), offsetof(op_qkv_params, off_k)},
                                  {offsetof(op_qkv_rope_params, off_v), offsetof(op_qkv_params, off_v)}};
    if ((st = wgt_gpu_graph_replace_moving(g, i, i + 2, k, &p, sizeof p, b, 8, gx, gy, 1, moves, 3))) return st;
    *done = 1;
    logd(ctx, i, i + 2, "fused_linear_qkv_rope");
    return WGT_OK;
}

/* silu at i and mul at i + 1 over the halves of one row, the product at i + 2 reading their
 * result, maybe the residual add at i + 3. */
static wgt_status route_swiglu(wgt_context *ctx, wgt_gpu_graph *g, int i, int *done)
{
    const ew_note *s = ew_at(g, i, EW_UNARY, WGT_UNARY_SILU), *m = ew_at(g, i + 1, EW_BINARY, WGT_BINARY_MUL);
    prod pr;
    if (!s || !m || m->n_in != 2 || !product_at(g, i + 2, &pr)) return WGT_OK;
    int64_t F = pr.mp.K;
    if (!f32_row(s, &s->in[0], F) || !f32_row(s, &s->out, F) || !f32_row(m, &m->in[0], F) ||
        !f32_row(m, &m->in[1], F) || !f32_row(m, &m->out, F))
        return WGT_OK;
    /* mul(silu(gate), up), up right after gate in one buffer */
    const ew_note_tensor *gate = &s->in[0], *up = &m->in[1];
    if (m->in[0].buf != s->out.buf || note_byte(&m->in[0]) != note_byte(&s->out) || up->buf != gate->buf ||
        note_byte(up) != note_byte(gate) + 4ull * (uint64_t)F)
        return WGT_OK;
    if (m->out.buf != pr.d.b[0].buffer || note_byte(&m->out) != pr.a_byte || gate->buf == s->out.buf ||
        !wgt_gpu_graph_buffer_private(g, s->out.buf, i, i + 1) || !wgt_gpu_graph_buffer_private(g, m->out.buf, i + 1, i + 2))
        return WGT_OK;
    uint64_t x_off;
    wgt_binding x = note_binding(gate, note_byte(gate), &x_off);
    int which;
    const ew_note *a = add_after(g, i + 3, &pr, &which);
    if (a && wgt_gpu_graph_buffer_private(g, pr.d.b[3].buffer, i + 2, i + 3)) {
        uint64_t r_off, o_off;
        wgt_binding r = note_binding(&a->in[1 - which], note_byte(&a->in[1 - which]), &r_off);
        wgt_binding o = note_binding(&a->out, note_byte(&a->out), &o_off);
        return emit_linear(ctx, g, i, i + 3, WGT_PRO_SWIGLU, &pr, x, x_off, NULL, 0, 0, &r, r_off, o, o_off, done);
    }
    return emit_linear(ctx, g, i, i + 2, WGT_PRO_SWIGLU, &pr, x, x_off, NULL, 0, 0, NULL, 0, pr.d.b[3], pr.mp.n0,
                       done);
}

/* A product at i and the residual add at i + 1. */
static wgt_status route_residual(wgt_context *ctx, wgt_gpu_graph *g, int i, int *done)
{
    prod pr;
    int which;
    if (!product_at(g, i, &pr) || pr.a_byte % 16) return WGT_OK;
    const ew_note *a = add_after(g, i + 1, &pr, &which);
    if (!a || !wgt_gpu_graph_buffer_private(g, pr.d.b[3].buffer, i, i + 1)) return WGT_OK;
    uint64_t r_off, o_off;
    wgt_binding r = note_binding(&a->in[1 - which], note_byte(&a->in[1 - which]), &r_off);
    wgt_binding o = note_binding(&a->out, note_byte(&a->out), &o_off);
    wgt_binding x = pr.d.b[0];
    return emit_linear(ctx, g, i, i + 1, WGT_PRO_NONE, &pr, x, 4ull * pr.mp.off_a, NULL, 0, 0, &r, r_off, o, o_off,
                       done);
}

int fr_route_on(void)
{
    const char *e = getenv("WGT_GRAPH_ROUTE");
    return e && *e ? *e == '1' : FR_ROUTE_DEFAULT;
}

wgt_status fr_route_graph(wgt_context *ctx, wgt_gpu_graph *g)
{
    int n = wgt_gpu_graph_n_cmds(g), routed = 0;
    wgt_status st = WGT_OK;
    for (int i = 0; i < n && !st; i++) {
        int done = 0;
        st = route_norm(ctx, g, i, &done);
        if (!st && !done) st = route_swiglu(ctx, g, i, &done);
        if (!st && !done) st = route_residual(ctx, g, i, &done);
        routed += done;
    }
    if (!st && routed && wgt_gpu_debug(ctx)) fprintf(stderr, "wgt: graph: %d groups routed to fused kernels\n", routed);
    return st;
}
