/* Shared by src/ops/index.c and src/ops/shape.c: the data-movement kernel (src/kernels/shape.wgsl),
 * the fill kernel (src/kernels/shape_fill.wgsl) and the per-context index error flag. */
#ifndef WGT_OPS_INDEX_SHAPE_H
#define WGT_OPS_INDEX_SHAPE_H

#include "ops/ops.h"

/* Ops of shape.wgsl (its OP_* constants). */
enum {
    MOVE_COPY = 0, MOVE_GATHER, MOVE_MASKED_FILL, MOVE_FLIP, MOVE_ROLL, MOVE_REPEAT, MOVE_PAD_CONSTANT,
    MOVE_PAD_REFLECT, MOVE_PAD_REPLICATE, MOVE_PAD_CIRCULAR, MOVE_TRIL, MOVE_TRIU, MOVE_TAKE, MOVE_SLAB
};

/* One dispatch of shape.wgsl writing out elements [first, first + n) (first on a word boundary):
 * x's layout right-aligned to out's ndim, ib (NULL: none) read through `li` (a layout whose strides
 * are indexed by output coordinates; shape unused), dim as a dim of out, a[8] per-dim parameters
 * (in out's dims; a[0], a[1] are scalars for cat and tril; a[0..4] for the slab copy), fill in out's dtype. op names the op
 * in the error flag. */
typedef struct move_args {
    int op;
    const wgt_tensor *x;
    const wgt_layout *lx;  /* NULL: x->l */
    const wgt_tensor *ib;
    const wgt_layout *li;
    int dim;
    int64_t a[8];
    double fill;
    int64_t first, n;
} move_args;
wgt_status move_run(wgt_context *ctx, const move_args *m, wgt_tensor *out);

/* Bits of value v stored as dtype (for fills). */
uint64_t fill_bits(wgt_dtype dt, double v);

/* 1 when every tensor's reachable storage fits one storage binding (else the op runs the reference). */
int fits_binding(const wgt_tensor *const *ts, int n);

/* The per-context index error word, bound read_write at binding `b`; flags are 1 << op family. */
wgt_status index_err_bind(wgt_context *ctx, wgt_binding *b);
/* A scratch range (slot 1..3, 256 bytes) of that buffer for a writable binding an entry ignores. */
wgt_status index_dummy_bind(wgt_context *ctx, int slot, wgt_binding *b);

/* Append the WGSL that reads the index binding `ib` of dtype dt: ld_idx(i) -> i32, idx_ok(i) -> bool,
 * ld_mask(i) -> bool (generated loaders and a section of src/kernels/lib_index_ops.wgsl). 0 if buf
 * is too small. */
int index_wgsl(char *buf, size_t cap, wgt_dtype dt);

/* The fill kernel (shape_fill.wgsl). */
enum { FILL_ARANGE = 0, FILL_LINSPACE, FILL_EYE, FILL_ONE_HOT };
typedef struct fill_args {
    int op;
    double start, step, end, on, off;
    int64_t cols;           /* eye: columns; one_hot: depth */
    int64_t inner;          /* one_hot: elements after the new axis */
    const wgt_tensor *x;    /* one_hot's indices */
} fill_args;
wgt_status fill_run(wgt_context *ctx, const fill_args *f, wgt_tensor *out);

#endif
