/* Elementwise ops' internals shared with their graph fusion (elementwise.c, elementwise_fuse.c). */
#ifndef WGT_OPS_ELEMENTWISE_H
#define WGT_OPS_ELEMENTWISE_H

#include "ops/ops.h"

typedef enum ew_family { EW_UNARY, EW_BINARY, EW_WHERE, EW_CAST } ew_family;

/* The compute type of the inputs: CI_I64 is exact 64-bit arithmetic on vec2<u32> words
 * (lib_i64.wgsl), a separate kernel variant from the 32-bit ones. */
enum { CI_F32, CI_I32, CI_U32, CI_I64 };

/* The uniform; elementwise_ops.wgsl's Params. */
typedef struct ew_params {
    uint32_t n, op, off0, off1, off2;
    float alpha, beta, lo, hi;
    uint32_t zero, offo, ilo, ihi;
    uint32_t ilo_hi, ihi_hi, pad; /* i64 kernels: the high words of clamp's bounds (pad0, pad1 in WGSL) */
    op_layout_params l[3];
} ew_params;

/* What an elementwise op's one dispatch computed, noted on it during a graph capture
 * (wgt_gpu_capture_note, kind EW_NOTE) for elementwise_fuse.c: the op, and every tensor as
 * (storage buffer, element offset and strides in it), the inputs broadcast to the output's shape.
 * Inputs past n_in are unused (the kernel reads input 0 there). */
#define EW_NOTE 1
typedef struct ew_note_tensor {
    wgt_buffer *buf;
    uint64_t bytes; /* the storage's usable bytes */
    wgt_dtype dt;
    int64_t offset;
    int64_t strides[WGT_MAX_DIMS];
} ew_note_tensor;
typedef struct ew_note {
    int fam, ci, n_in;
    uint32_t op;
    float fp[4];    /* alpha, beta, lo, hi */
    uint32_t ib[4]; /* ilo, ihi, ilo_hi, ihi_hi */
    int ndim;
    int64_t shape[WGT_MAX_DIMS];
    ew_note_tensor in[3], out; /* out: contiguous from offset 0 */
} ew_note;

/* What a reduction or normalisation dispatch says about itself (reduce.c, norm.c), so that the
 * elementwise chain before it (a prologue: its input computed at each load) and after it (an
 * epilogue: its output's consumers applied at each store) fuse into its kernel. The kernel reads
 * its input only through a loader `fn LD(i: u32) -> LD_TYPE` (element i of binding `in`) and
 * writes its output only through a storer `fn ST(w: u32, v: array<ST_TYPE, 4>)` (word w of binding
 * `out`); prelude(key, extra, skip_ld, skip_st) makes its prelude with `extra` appended and the
 * loader / storer left out (extra then defines them). The kernel's Params has `zero` (0) and it
 * defines nan_f() and inf_f() as elementwise_ops.wgsl does. */
#define EW_HOST_NOTE 2
typedef char *(*ew_host_prelude_fn)(const void *key, const char *extra, int skip_ld, int skip_st);
typedef struct ew_host_note {
    ew_host_prelude_fn prelude;
    uint8_t key[32];
    const char *file, *name;  /* the kernel file (src/kernels/FILE.wgsl); the op, for the fused name */
    int n_bind;               /* its storage bindings, 1..n_bind, all bound by the dispatch */
    uint32_t unused;          /* bit b: binding b + 1 is not read by this dispatch (a placeholder) */
    int in, out;              /* the input's and output's binding (index into the dispatch's bindings) */
    const char *in_var, *ld, *ld_type, *out_var, *st, *st_type;
    wgt_dtype in_dt, out_dt;
    int64_t out_numel;        /* elements of the output tensor */
    /* the storer writes one element: `fn ST(i: u32, v: ST_TYPE)`, element i of binding `out`
     * (a matrix product's, whose invocations each store single f32 results); ld is then the
     * gemv kernel's f32 element loader of A (ldA1: a prologue computes A's elements), else NULL */
    int st_elem;
    int mm; /* the note is a matrix product's mm_note (matmul_fuse.h), of which this is the head */
} ew_host_note;

/* Append fn FNAME(a, b, c: CI_T) -> CO_T computing one op (elementwise.c). */
void ew_op_fn(char *buf, size_t cap, const char *fname, const char *init, int family, const char *ci,
              const char *ci_t, const char *co_t, wgt_dtype out_dt, const char *opx);

/* The graph rewrite of elementwise_fuse.c (wgt_gpu_rewrite_fn): chains of noted elementwise
 * dispatches become one generated kernel each (and, first, matrix products sharing an input one
 * product: mm_merge_graph, matmul_fuse.c). */
wgt_status ew_fuse_graph(wgt_context *ctx, wgt_gpu_graph *g);

#endif
