/* What a matrix product's dispatch says about itself during a graph capture (matmul.c's mm_note),
 * for matmul_fuse.c (products sharing an input merged into one) and elementwise_fuse.c (an
 * elementwise chain after a product fused into its store). */
#ifndef WGT_OPS_MATMUL_FUSE_H
#define WGT_OPS_MATMUL_FUSE_H

#include "ops/elementwise.h"

/* The matmul kernels' uniform (lib_matmul.wgsl's Params, byte for byte). */
typedef struct mm_params {
    uint32_t M, N, K, batch;
    uint32_t off_a, off_b, off_c, has_c;
    uint32_t sam, sak, sbk, sbn;
    uint32_t scm, scn;
    float alpha, beta;
    uint32_t bshape[4], bsa[4], bsb[4], bsc[4];
    uint32_t ldo, n0, z0, tpr;
    uint32_t zero, zpad[3]; /* zero: 0 (the elementwise op functions of a fused epilogue read p.zero) */
} mm_params;

enum { MM_LOAD_ELEM, MM_LOAD_B8, MM_LOAD_WORD };

/* A product's one dispatch: bindings a (0), b (1), c (2: A again when has_c is 0), out (3, f32,
 * element (z * M + m) * ldo + n0 + n), parameters mm_params. h: its host note (prelude h.prelude
 * with skip_ld meaning: bit 1 leave out B's loader ldB / ldB8, bit 2 C's ldC). */
typedef struct mm_note {
    ew_host_note h; /* first: elementwise_fuse.c reads it as an ew_host_note (h.mm is 1) */
    const char *entry;
    int merge;      /* B read only through a function of its index (bload), C through ldC */
    int bload;      /* MM_LOAD_ELEM: ldB(i) over array<u32> (elements); MM_LOAD_B8: ldB8(v) (matmul_gemv.wgsl,
                       8 elements from 16-byte word v); MM_LOAD_WORD: wordB(v) (matmul_regs.wgsl, word v) */
    wgt_dtype db, dc;
    uint32_t cols;  /* output columns a workgroup covers (grid x = ceil(N / cols)) */
    int grid2d;     /* the grid is op_grid(ceil(N / cols)) (a gemv's), not (ceil(N / cols), gy, gz) */
    int gemv;       /* the kernel is matmul_gemv.wgsl (decode: M <= 4) */
    uint32_t krow;  /* one row of B (K elements) in its loader's units: sbn must be at least this */
} mm_note;

/* The graph rewrite: two or more noted products that read the same A (the same binding and
 * layout) with weights stored as rows ([N, K], as linear keeps them), the same kernel and shapes
 * but for N, become one dispatch over their weights as one virtual [sum N, K] matrix (a loader
 * that picks the weight's binding by row: nothing is copied, the weights stay the caller's),
 * storing each column block into its own product's output. WGT_GRAPH_MERGE=0 turns it off. */
wgt_status mm_merge_graph(wgt_context *ctx, wgt_gpu_graph *g);

/* Run kernel k (bindings a, b, c, out; params *p of the whole product, batch 1) as `slices` slices
 * of k (p.tpr their length) into a scratch tensor, then matmul.wgsl's `combine` adds them with alpha,
 * beta C into bind[3] (columns from p->n0); grid gx x gy x slices. matmul.c. */
wgt_status mm_split_k(wgt_context *ctx, const mm_params *p, wgt_kernel *k, const wgt_binding *bind, wgt_dtype dc,
                      int64_t slices, uint32_t gx, uint32_t gy);

/* A quantized linear through tiles (matmul_tcq.c, op_matmul_tc_quant): bind x ([tokens, cols] f32,
 * as A in 16-byte words), w's blocks (rows of w->l.shape[1] bytes, as B), bias (C broadcast over
 * rows; A again where NULL) and y ([tokens, rows] from its offset: p->n0), and fill *p for the whole
 * product (batch 1, alpha = beta = 1, sak = sbk = 1). matmul.c. */
wgt_status mm_quant_bind(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *bias, int64_t tokens,
                         int64_t rows, int64_t cols, wgt_tensor *y, wgt_binding bind[4], mm_params *p);

#endif
