/*
 * Gradient checks: every backward rule of src/autograd run through cases of small tensors (the op
 * table's GRAD rows, src/ops/optable.h), three ways, used by `wgt ops --check --grad` (tools/ops.c)
 * and tests/autograd/test_gpu_grad.c:
 *
 *  (a) the CPU-reference context's backward against central finite differences of its own
 *      forward: loss = sum(out * W) for fixed random W, d loss / d x_j = (L(x_j + h) - L(x_j - h)) / 2h
 *      with L summed in double over the f32 outputs. h = 1e-2 on inputs of size ~1: the truncation
 *      error h^2 f'''/6 is ~1e-5 relative, and the rounding error (f32 outputs; unchanged outputs
 *      cancel exactly, the reference being deterministic) ~1e-5 / h. Tolerance 3e-3 (atol and rtol,
 *      atol scaled by the largest gradient), times the case's own factor where its forward loses
 *      more (long reductions). Inputs keep clear of kinks (|x - k| >= 0.05 for k in 0, +-0.5, +-1,
 *      +-3) and, where ties would matter (max, min), are distinct by >= 0.1.
 *  (b) the device's backward against the reference's, f32: tolerance 1e-4 atol (scaled) + 1e-3 rtol
 *      (only summation order and the device's transcendental functions differ).
 *  (c) for cases whose forward takes halves: the device's backward with f16 and bf16 inputs against
 *      the reference's f32 backward on the same (rounded) values: tolerance 1e-2 for f16 and 5e-2 for
 *      bf16 (the forward's half outputs and saved tensors carry 2^-11 / 2^-8 relative rounding).
 */
#ifndef WGT_TESTKIT_GRADCHECK_H
#define WGT_TESTKIT_GRADCHECK_H

#include <stdio.h>

#include "wgt.h"

typedef struct gc_totals {
    int passed, failed;
    int cases;   /* cases run */
} gc_totals;

/* Run every case whose name contains, or whose op is, one of names[0..n-1] (all when n == 0) on dev, with
 * ref a CPU-reference context. Failures are printed to log with what differed; verbose prints a
 * line per check. */
void gc_run(wgt_context *dev, wgt_context *ref, const char *const *names, int n, int verbose, FILE *log,
            gc_totals *t);

/* The audit (audit.c): every op of the harness's table with float inputs that require grad, on a
 * CPU-reference context. A float result must require grad (recorded, or declared
 * non-differentiable); backward through it must succeed or refuse with WGT_ERR_UNSUPPORTED and a
 * message. cut and failed count the defects. */
typedef struct gc_audit {
    int ops, integer_only, from_sizes, not_run, results;
    int recorded, declared;      /* results with a backward rule / declared non-differentiable */
    int backward_ok, refused;    /* backward through a result succeeded / refused with a message */
    int cut, failed;             /* defects: a silently cut graph; any other backward failure */
} gc_audit;
void gc_audit_run(wgt_context *ref, const char *const *names, int n, int verbose, FILE *log, gc_audit *a);

/* The cases: the op table's GRAD rows (src/ops/optable.h), in its order. Their count, the name of
 * case i, and the op row whose backward it checks. */
int gc_case_count(void);
const char *gc_case_name(int i);
const char *gc_case_op(int i);

#endif
