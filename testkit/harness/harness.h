/*
 * The differential op harness: the op table's rows (src/ops/<family>.def, read in table.c), each
 * op run through the op API twice on the same generated inputs, once on a device context and once
 * on a CPU-reference context (WGT_BACKEND=cpu, where every op runs src/cpu/), and the two results
 * compared with a tolerance declared per op and dtype. Used by `wgt ops` (tools/ops.c) and
 * tests/ops/test_gpu_harness.c.
 *
 * Cases per op and dtype (hx_case): contiguous, transposed/strided with an odd offset, broadcast
 * (stride-0 views and op broadcasting), empty, a 0-D scalar, odd sizes (1, 7, 1000003 elements),
 * special values (NaN, +-inf, -0 / integer extremes), and a tensor larger than one storage
 * binding. Every device run also checks sentinel bytes past the output's storage (the output buffer
 * is one the harness filled with a pattern beforehand) and that the inputs are unchanged.
 */
#ifndef WGT_HARNESS_HARNESS_H
#define WGT_HARNESS_HARNESS_H

#include <stdint.h>

#include "core/layout.h"
#include "wgt.h"

typedef enum hx_case {
    HX_CONTIGUOUS = 0,
    HX_STRIDED,   /* inputs are transposed views at an odd element offset */
    HX_BROADCAST, /* stride-0 views; ops that broadcast get differently shaped inputs */
    HX_EMPTY,     /* a zero-size dimension */
    HX_SCALAR,    /* 0-D tensors */
    HX_ODD1,      /* [1] */
    HX_ODD7,      /* [7] */
    HX_ODD_LARGE, /* [1000003]: f32, a few ops (time) */
    HX_SPECIAL,   /* NaN, +-inf, -0, huge values; integer min/max/0/-1 */
    HX_BIG,       /* more than one storage binding (128 MiB on llvmpipe): a few ops, f32 only */
    HX_CASE_COUNT
} hx_case;

const char *hx_case_name(hx_case c);
/* "f32, f16" for a mask of HX_DT bits. */
void hx_dtype_names(uint32_t mask, char *buf, size_t size);

/* A value domain for generated inputs. */
typedef struct hx_dom {
    double lo, hi;   /* uniform in [lo, hi]; integers: floor of it, clamped to the dtype */
    int nonzero;     /* avoid |v| < 0.5 (divisors) */
    int integral;    /* floats too take whole values (ops that look for zeros) */
} hx_dom;

/* The inputs of one case, as the entry's setup describes them. */
#define HX_MAX_IN 6
typedef struct hx_input {
    wgt_dtype dtype;
    int ndim;
    int64_t shape[WGT_MAX_DIMS];
    hx_dom dom;
    int index_bound;  /* > 0: integer indices in [0, index_bound) instead of dom */
    int fixed_layout; /* 1: never strided/expanded (index tensors, parameters) */
    int dtype_only;   /* 1: the call reads only its dtype (one_hot's output type), not its values */
} hx_input;

typedef struct hx_op hx_op;

/* Fill the inputs for (case, dtype); return their number, or 0 when the case does not apply. */
typedef int hx_setup_f(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in);
typedef hx_setup_f *hx_setup_fn;
/* The op through the op API. variant selects parameters (dims, a target dtype, ...). Up to two
 * outputs; out[1] stays NULL for single-output ops. */
typedef wgt_status hx_call_f(const hx_op *op, int variant, wgt_tensor *const *in, wgt_tensor **out);
typedef hx_call_f *hx_call_fn;

/* A tolerance for a float output: |gpu - ref| <= atol + rtol |ref|. */
typedef struct hx_tol {
    double rtol, atol;
    const char *why;
} hx_tol;

/* Known differences between a device kernel and the reference, kept visible: a failing case that
 * matches one is reported as KNOWN with the reason instead of failing. They are written in the op's
 * row (its harness column: .known = {{where, case, dtype, msg, why}, ...}). An entry applies only on the adapter
 * it was seen on; where it applies and its case passes, the case FAILS as stale (the message says
 * to remove the entry), so excuses disappear with the bugs they excused. */
typedef struct hx_known {
    const char *where; /* a substring of "ADAPTER NAME (BACKEND)" as `wgt info` names them:
                          "NVIDIA H200", "(opengles)", "llvmpipe (LLVM 15.0.6, 256 bits) (vulkan)";
                          NULL ends the row's list */
    int c;             /* hx_case, or -1 for any */
    int dtype;         /* wgt_dtype, or -1 for any */
    const char *msg;   /* NULL, or a substring the failure message must contain */
    const char *why;
} hx_known;
#define HX_MAX_KNOWN 2
/* The reason of the H200 entries (rope, interpolate, grid_sample): NVIDIA's shader compiler
 * contracts a * b + c into fused multiply-adds and folds some inf * 0 and inf - inf away, so with
 * the nan-inf case's inputs of 1e28 and inf, sums that cancel differ from the reference by more
 * than the tolerance, and a few taps give inf where the reference gets NaN. lavapipe and llvmpipe
 * match the reference exactly there. */
#define HX_H200_CONTRACT                                                                                        \
    "on the H200, huge and infinite inputs: the compiler's fused multiply-adds round cancelling sums differently " \
    "and fold some inf * 0 (inf where the reference has NaN)"

/* One op: its row of the op table (src/ops/<family>.def; the columns are described in
 * src/ops/optable.h), with the harness column's fields. */
struct hx_op {
    const char *name;   /* as `wgt ops` prints it and `wgt ops --check NAME` takes it */
    const char *family; /* the file of src/ops/ that holds it: "elementwise", "reduce", ... */
    int n_in, n_out;    /* tensor inputs (0: none, -1: a list) and outputs */
    uint32_t dtypes;    /* bit d: dtype d is accepted */
    const char *forward, *reference; /* function names: "wgt_matmul", "wgt_cpu_matmul" */
    void (*forward_fn)(void), (*reference_fn)(void); /* the same functions (reference: NULL when composed) */
    const char *onnx;   /* ONNX op types run through it, space-separated, or "" */
    const char *onnx_adapter; /* the ONNX executor's device adapter of its reference ("g_matmul",
                                 testkit/onnx/onnx_gpu.c), or "" */
    int grad;           /* its backward rule's recorder id (op_grad_id), 0: none */
    const char *grad_name; /* "OP_GRAD_MATMUL" */
    const char *doc;    /* one line */
    int code;           /* the op's enum value in its family (wgt_unary_op, ...) */
    int n_variants;     /* >= 1 */
    hx_setup_fn setup;
    hx_call_fn call;
    hx_dom dom;         /* float inputs (integers use int_dom unless it is empty) */
    hx_dom int_dom;
    hx_tol tol;         /* the f32 compute error against the double reference; the harness adds one
                           unit of rounding of f16/bf16 outputs */
    double accum;       /* ops that accumulate in the output's dtype (scatter add into f16): f16/bf16
                           outputs get accum units of their rounding (2^-10, 2^-7) absolute */
    int big;            /* 1: run the larger-than-a-binding case (f32, variant big_variant only) */
    int big_variant;
    int large;          /* 1: run the 1000003-element case (f32) */
    int no_huge;        /* 1: special values leave out +-1e30 (periodic functions: WGSL defines
                           sin/cos on [-pi, pi] only) */
    int no_special;     /* 1: skip HX_SPECIAL, with the reason in special_why */
    const char *special_why;
    hx_known known[HX_MAX_KNOWN]; /* its known issues on some adapter (above), the first where NULL
                                     ends them */
};

/* Bit for a dtype, and common sets. */
#define HX_DT(d) (1u << (d))
#define HX_FLOATS (HX_DT(WGT_F32) | HX_DT(WGT_F16) | HX_DT(WGT_BF16))
#define HX_INTS (HX_DT(WGT_I32) | HX_DT(WGT_U32) | HX_DT(WGT_I8) | HX_DT(WGT_U8) | HX_DT(WGT_I64))
#define HX_ALL (HX_FLOATS | HX_INTS | HX_DT(WGT_BOOL))

/* The setup and call functions the table's harness column names live in table_*.c (one file per
 * group of families); table.c declares them from the rows themselves. */
/* The shape of the main input of an elementwise-like op for case c ([37, 53], [4, 0, 3], ...). */
void hx_case_shape(hx_case c, hx_input *in);

/* The table: the op table's rows, in its order. */
const hx_op *hx_ops(int *count);
const hx_op *hx_find(const char *name);
/* The formula of the backward rule with recorder id grad ("ag_grad_matmul"), or NULL. */
const char *hx_backward_name(int grad);

/* ---- running ---- */

typedef struct hx_options {
    uint32_t dtypes;     /* 0: all the op accepts */
    uint32_t cases;      /* bit per hx_case; 0: all but HX_BIG */
    int verbose;         /* print passing lines too */
    int graph;           /* bit 1 (HX_GRAPH): run the device side through graph capture
                            (wgt_graph_begin .. _end, on inputs generated with another seed) and
                            compare what a replay on the case's inputs leaves in the captured
                            outputs; the replay is run twice and the second must make one submit,
                            no bind group and no buffer. Bit 2 (HX_GRAPH_FUSE): the same with
                            elementwise neighbours around the op inside the capture (ops that give
                            their input back exactly: the fusion pass meets every op's kernel, and
                            the comparison stays the op's) */
    int graph_fuse_first; /* HX_GRAPH_FUSE for each op's first variant only (time: every fused
                             chain is a kernel to compile) */
} hx_options;
#define HX_GRAPH 1
#define HX_GRAPH_FUSE 2

/* One line of results: an op, a case, and the dtypes run. */
typedef struct hx_result {
    const hx_op *op;
    hx_case c;
    int runs;           /* comparisons made (dtypes x variants) */
    int failures;
    uint32_t failed_dtypes; /* bit per dtype with a failure */
    int sentinels;      /* runs whose output slack was checked (the op allocated only its output) */
    double worst;       /* worst error as a fraction of the tolerance (0: exact) */
    char worst_at[160]; /* where: dtype, variant, element */
    char message[512];  /* the first failure */
    char skipped[160];  /* why nothing ran, when runs == 0 */
    const char *known;  /* failures == 0 and this set: it failed as a known issue says (the reason) */
    int known_failures;
    int ref_runs;       /* device runs that had no GPU kernel (WGT_STRICT refused them) and ran the
                           reference: they compare the reference with itself and prove nothing */
    uint32_t ref_dtypes; /* bit per dtype with such a run */
    int host_runs;      /* graph mode: runs the capture refused because the op needs the host
                           mid-graph in a way a segment cannot hold (a split readback): nothing
                           compared */
    char host_why[200]; /* the first such refusal */
    int segmented_runs; /* graph mode: runs whose graph has host reads mid-graph (several segments) */
    int stale_runs;     /* ... of which the replay on the case's inputs found a read changed
                           (a data-dependent result) and captured again on them */
    int fused_kernels;  /* graph mode: fused kernels in the graphs with neighbours, and the ops in them */
    int fused_ops;
} hx_result;


typedef void (*hx_report_fn)(const hx_result *r, void *user);

/* Run op's cases on dev against ref (a CPU-reference context). report is called once per case.
 * The device runs under WGT_STRICT=1, so a dtype without a GPU kernel is refused instead of
 * quietly running the reference; such runs are then repeated without it and counted in ref_runs
 * (not in runs). Returns the number of failing cases. */
int hx_check(wgt_context *dev, wgt_context *ref, const hx_op *op, const hx_options *opt, hx_report_fn report,
             void *user);

/* How op runs dtype dt on dev: calls every variant on a small input with WGT_STRICT=1.
 * Returns 2: the GPU kernel for every variant; 1: for some; 0: the reference for all;
 * -1: the op refuses the dtype (or errors: msg says why). */
int hx_probe(wgt_context *dev, const hx_op *op, wgt_dtype dt, char *msg, size_t msg_size);

#endif
