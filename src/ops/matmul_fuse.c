/* Matrix products that share an input, merged into one in a captured graph (notes/GRAPH.md
 * "Stage 7"): q, k and v projections of the same x, a gated MLP's gate and up.
 *
 * During a capture every matrix product made by one dispatch notes it (matmul.c's
 * mm_note_dispatch). At the end of the capture this pass finds products that read the same A
 * (binding and layout), run the same kernel with the same parameters but for N and where B and C
 * live, and whose B is a weight stored as rows ([N, K]: element (k, n) at off_b + n * sbn + k),
 * and replaces them by one dispatch of that kernel over N = the sum of their N:
 *  - B is the virtual concatenation of their weights along N: a generated loader (ldB; ldB8 for
 *    matmul_gemv.wgsl's 16-byte words, wordB for matmul_regs.wgsl's) picks the weight's binding by
 *    the index it is asked for,
 *    rows [S_t, S_t + N_t) from product t's weight at its own offset. Nothing is copied, so a
 *    weight changed between replays (wgt_tensor_assign, an optimizer) is read as it is then;
 *  - C (a bias row, broadcast over the rows) likewise through ldC;
 *  - the generated storer mm_st writes column block t into product t's own output, at the very
 *    element the product wrote: the consumers read what they read before, unchanged.
 * The products in between move to the last one's place: every command between a product and that
 * place must leave its A, B and C unwritten and its output untouched. Bindings limit how many merge
 * (2 per product past the first, 3 with a bias). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/matmul_fuse.h"

#define MERGE_MAX 8       /* products in one merged dispatch */
#define MERGE_WINDOW 512  /* commands looked ahead of a product for others reading its input */
#define MERGE_PRELUDE_CAP (64 * 1024)

/* WGT_GRAPH_MERGE=0: products stay apart (A/B, debugging). */
static int merge_off(void)
{
    const char *e = getenv("WGT_GRAPH_MERGE");
    return e && !strcmp(e, "0");
}

typedef struct product {
    int cmd;
    const mm_note *n;
    const wgt_binding *b; /* a, b, c, out */
    const wgt_kernel *k;
    mm_params p;
    uint32_t grid[3];
} product;

/* The product at command i, when it may merge: B as rows, one output block, no patched field. */
static int product_at(const wgt_gpu_graph *g, int i, product *pr)
{
    const ew_host_note *h = wgt_gpu_graph_note(g, i, EW_HOST_NOTE);
    if (!h || !h->mm || !((const mm_note *)h)->merge) return 0;
    int nb, patched;
    const uint8_t *params;
    pr->b = wgt_gpu_graph_dispatch(g, i, &nb, &params, pr->grid, &patched, &pr->k);
    if (!pr->b || patched || nb != 4) return 0;
    pr->cmd = i;
    pr->n = (const mm_note *)h;
    memcpy(&pr->p, params, sizeof pr->p);
    const mm_params *q = &pr->p;
    if (q->sbk != 1 || q->sbn < pr->n->krow || q->n0 || q->ldo != q->N || q->z0 || q->N == 0) return 0;
    if (pr->n->bload != MM_LOAD_B8 && q->tpr) return 0; /* a slice of a k split */
    for (int d = 0; d < 4; d++)
        if (q->bsb[d] || (q->has_c && q->bsc[d])) return 0;
    if (q->has_c && (q->scm || !q->scn)) return 0; /* C a row of N broadcast over the rows */
    return 1;
}

static int same_binding(const wgt_binding *a, const wgt_binding *b)
{
    return a->buffer == b->buffer && a->offset == b->offset && a->size == b->size;
}

/* b may join a's group: the same A, kernel and parameters but for N and where B, C live. */
static int compatible(const product *a, const product *b)
{
    const mm_params *x = &a->p, *y = &b->p;
    if (a->k != b->k || a->n->cols != b->n->cols || a->n->grid2d != b->n->grid2d || a->n->bload != b->n->bload ||
        a->n->db != b->n->db || a->n->dc != b->n->dc || !same_binding(&a->b[0], &b->b[0]))
        return 0;
    if (x->M != y->M || x->K != y->K || x->batch != y->batch || x->off_a != y->off_a || x->has_c != y->has_c ||
        x->sam != y->sam || x->sak != y->sak || x->sbn != y->sbn || x->scn != y->scn || x->alpha != y->alpha ||
        x->beta != y->beta || x->tpr != y->tpr || memcmp(x->bshape, y->bshape, sizeof x->bshape) ||
        memcmp(x->bsa, y->bsa, sizeof x->bsa))
        return 0;
    return a->n->grid2d || (a->grid[1] == b->grid[1] && a->grid[2] == b->grid[2]);
}

/* Is moving products m[0..n) (commands ascending) to the place of candidate c safe? Between each
 * product and c nothing else writes its A, B or C or touches its output; no product's output is
 * another's input or output. */
static int movable(const wgt_gpu_graph *g, const product *m, int n, const product *c)
{
    const product *all[MERGE_MAX + 1];
    for (int t = 0; t < n; t++) all[t] = &m[t];
    all[n] = c;
    for (int t = 0; t <= n; t++)
        for (int s = 0; s <= n; s++) {
            const wgt_buffer *o = all[t]->b[3].buffer;
            if (all[s]->b[0].buffer == o || all[s]->b[1].buffer == o || (all[s]->p.has_c && all[s]->b[2].buffer == o) ||
                (s != t && all[s]->b[3].buffer == o))
                return 0;
        }
    for (int t = 0; t < n; t++) {
        const product *pr = &m[t];
        for (int x = pr->cmd + 1; x < c->cmd; x++) {
            int member = 0;
            for (int s = 0; s < n; s++) member |= m[s].cmd == x;
            if (member) continue;
            if ((wgt_gpu_graph_touches(g, x, pr->b[0].buffer) & 2) || (wgt_gpu_graph_touches(g, x, pr->b[1].buffer) & 2) ||
                (pr->p.has_c && (wgt_gpu_graph_touches(g, x, pr->b[2].buffer) & 2)) ||
                wgt_gpu_graph_touches(g, x, pr->b[3].buffer))
                return 0;
        }
    }
    return 1;
}

#define APPEND(...) (used += (size_t)snprintf(pre + used, used < cap ? cap - used : 0, __VA_ARGS__))

/* The text appended to the kernel's prelude: the other products' bindings, B's and C's loaders
 * over all of them, and the storer into each product's output. */
static char *merged_extra(const product *m, int n)
{
    size_t cap = MERGE_PRELUDE_CAP, used = 0;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    pre[0] = 0;
    const mm_note *nt = m[0].n;
    int has_c = m[0].p.has_c != 0, bind = 5;
    uint32_t S[MERGE_MAX + 1];
    S[0] = 0;
    for (int t = 0; t < n; t++) S[t + 1] = S[t] + m[t].p.N;
    for (int t = 1; t < n; t++) {
        APPEND("@group(0) @binding(%d) var<storage, read> mb%d: array<%s>;\n", bind++, t,
               nt->bload != MM_LOAD_ELEM ? "vec4<u32>" : "u32");
        if (has_c) APPEND("@group(0) @binding(%d) var<storage, read> mc%d: array<u32>;\n", bind++, t);
        APPEND("@group(0) @binding(%d) var<storage, read_write> mo%d: array<f32>;\n", bind++, t);
    }
    for (int t = 0; t < n; t++) {
        char fn[16], var[16];
        snprintf(var, sizeof var, t ? "mb%d" : "b", t);
        snprintf(fn, sizeof fn, "%s_%d", nt->bload == MM_LOAD_B8 ? "ldB8" : "ldB", t);
        if (nt->bload == MM_LOAD_B8) op_wgsl_vec8_loader(pre, cap, fn, var, nt->db);
        else if (nt->bload == MM_LOAD_ELEM) op_wgsl_loader(pre, cap, fn, var, nt->db, "f32");
        if (has_c) {
            snprintf(var, sizeof var, t ? "mc%d" : "c", t);
            snprintf(fn, sizeof fn, "ldC_%d", t);
            op_wgsl_loader(pre, cap, fn, var, nt->dc, "f32");
        }
    }
    used = strlen(pre);
    /* B: index v = n * sbn + k (offset 0) is row n - S_t of weight t, at its own offset */
    uint32_t sbn = m[0].p.sbn;
    if (nt->bload == MM_LOAD_B8) APPEND("fn ldB8(v: u32) -> array<vec4<f32>, 2> {\n");
    else if (nt->bload == MM_LOAD_WORD) APPEND("fn wordB(v: u32) -> vec4<u32> {\n");
    else APPEND("fn ldB(v: u32) -> f32 {\n");
    for (int t = 0; t < n; t++) {
        char src[16];
        if (nt->bload == MM_LOAD_WORD) snprintf(src, sizeof src, t ? "mb%d[" : "b[", t); /* the words themselves */
        else snprintf(src, sizeof src, "%s_%d(", nt->bload == MM_LOAD_B8 ? "ldB8" : "ldB", t);
        if (t < n - 1) APPEND("  if (v < %uu) { ", S[t + 1] * sbn);
        else APPEND("  ");
        APPEND("return %sv - %uu + %uu%s;%s\n", src, S[t] * sbn, m[t].p.off_b, nt->bload == MM_LOAD_WORD ? "]" : ")",
               t < n - 1 ? " }" : "");
    }
    APPEND("}\n");
    if (has_c) { /* C: index n * scn (offset 0) */
        uint32_t scn = m[0].p.scn;
        APPEND("fn ldC(v: u32) -> f32 {\n");
        for (int t = 0; t < n; t++) {
            if (t < n - 1) APPEND("  if (v < %uu) { ", S[t + 1] * scn);
            else APPEND("  ");
            APPEND("return ldC_%d(v - %uu + %uu);%s\n", t, S[t] * scn, m[t].p.off_c, t < n - 1 ? " }" : "");
        }
        APPEND("}\n");
    }
    /* element i = row * (sum N) + column: column block t goes to product t's output, row stride N_t */
    APPEND("fn mm_st(i: u32, v: f32) {\n  let r = i / %uu;\n  let c = i %% %uu;\n", S[n], S[n]);
    for (int t = 0; t < n; t++) {
        if (t < n - 1) APPEND("  %sif (c < %uu) { ", t ? "else " : "", S[t + 1]);
        else APPEND("  else { ");
        if (t) APPEND("mo%d[r * %uu + c - %uu] = v; }\n", t, m[t].p.N, S[t]);
        else APPEND("out[r * %uu + c] = v; }\n", m[t].p.N);
    }
    APPEND("}\n");
    if (used >= cap) {
        free(pre);
        return NULL;
    }
    return pre;
}

/* Replace products m[0..n) by one dispatch at the last one's place. */
static wgt_status merge(wgt_context *ctx, wgt_gpu_graph *g, const product *m, int n)
{
    const mm_note *nt = m[0].n;
    char *extra = merged_extra(m, n);
    if (!extra) return WGT_OK;
    int has_c = m[0].p.has_c != 0;
    char *pre = nt->h.prelude(nt->h.key, extra, 1 | (has_c ? 2 : 0), 1);
    free(extra);
    if (!pre) return WGT_OK;
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, nt->h.file, pre, nt->entry, NULL, 0, &k);
    free(pre);
    if (st) return st;
    snprintf(k->name, sizeof k->name, "merged:matmul x%d", n);
    mm_params p = m[0].p;
    uint32_t total = 0;
    for (int t = 0; t < n; t++) total += m[t].p.N;
    p.N = total, p.ldo = total, p.off_b = 0;
    if (has_c) p.off_c = 0;
    wgt_binding b[WGT_MAX_BINDINGS];
    int nb = 0;
    for (int i = 0; i < 4; i++) b[nb++] = m[0].b[i];
    int cmds[MERGE_MAX];
    cmds[0] = m[0].cmd;
    for (int t = 1; t < n; t++) {
        b[nb++] = m[t].b[1];
        if (has_c) b[nb++] = m[t].b[2];
        b[nb++] = m[t].b[3];
        cmds[t] = m[t].cmd;
    }
    uint32_t gx, gy, gz = m[0].grid[2], groups = (total + nt->cols - 1) / nt->cols;
    if (nt->grid2d) op_grid(ctx, groups, &gx, &gy);
    else gx = groups, gy = m[0].grid[1];
    if ((st = wgt_gpu_graph_replace_list(g, cmds, n, k, &p, sizeof p, b, nb, gx, gy, gz))) return st;
    if (wgt_gpu_debug(ctx)) {
        fprintf(stderr, "wgt: graph: merged %d products reading one input (dispatches", n);
        for (int t = 0; t < n; t++) fprintf(stderr, " %d", m[t].cmd);
        fprintf(stderr, "; N %u)\n", total);
    }
    return WGT_OK;
}

wgt_status mm_merge_graph(wgt_context *ctx, wgt_gpu_graph *g)
{
    if (merge_off()) return WGT_OK;
    int n = wgt_gpu_graph_n_cmds(g);
    uint32_t room = wgt_gpu_limits(ctx)->max_storage_buffers_per_shader_stage;
    if (room > WGT_MAX_BINDINGS) room = WGT_MAX_BINDINGS;
    char *taken = calloc((size_t)(n ? n : 1), 1);
    if (!taken) return WGT_OK; /* merging is an optimisation */
    wgt_status st = WGT_OK;
    for (int i = 0; i < n && !st; i++) {
        product m[MERGE_MAX];
        if (taken[i] || !product_at(g, i, &m[0])) continue;
        int per = m[0].p.has_c ? 3 : 2, most = room < 4 ? 1 : 1 + (int)(room - 4) / per, k = 1;
        if (most > MERGE_MAX) most = MERGE_MAX;
        for (int j = i + 1; j < n && j <= i + MERGE_WINDOW && k < most; j++) {
            if (wgt_gpu_graph_touches(g, j, m[0].b[0].buffer) & 2) break; /* A rewritten */
            product c;
            if (taken[j] || !product_at(g, j, &c) || !compatible(&m[0], &c) || !movable(g, m, k, &c)) continue;
            m[k++] = c;
        }
        /* the merged indexes (rows times sbn, rows times scn, outputs) must stay in 32 bits */
        uint64_t rows = 0;
        for (int t = 0; t < k; t++) rows += m[t].p.N;
        uint64_t stride = m[0].p.sbn > m[0].p.scn ? m[0].p.sbn : m[0].p.scn;
        if (rows * stride > UINT32_MAX || rows * m[0].p.M * m[0].p.batch > UINT32_MAX) k = 1;
        if (k < 2) continue;
        for (int t = 0; t < k; t++) taken[m[t].cmd] = 1;
        st = merge(ctx, g, m, k);
    }
    free(taken);
    return st;
}
