/*
 * The op table: every op described once, as a row in its family's file src/ops/<family>.def
 * (the family is the file of src/ops/ that holds its forward code). notes/OPTABLE.md says why it
 * is shaped this way. The .def files are X-macro lists: they hold no code and include nothing.
 * A reader defines OP, RULE or GRAD, includes "ops/optable_all.h" (every family, in the table's order,
 * with OP_FAMILY set to the family's name), and takes the columns it can use:
 *
 *   OP(name, n_in, n_out, dtypes,
 *      forward, reference, onnx, grad,
 *      doc,
 *      harness)
 *
 *   name       "matmul": what `wgt ops` prints, `wgt ops --check NAME` takes and the docs list
 *   n_in       the most tensor inputs it takes, optional ones included (0: it makes a tensor from a
 *              shape; -1: a list of tensors)
 *   n_out      tensor outputs (values and indices: 2; -1: a list, as split's pieces)
 *   dtypes     the input dtypes it accepts: OPT_DT(WGT_F32) | ..., OPT_FLOATS, OPT_INTS, OPT_ALL
 *   forward    the public (or, for fused ops, internal) function that runs it: wgt_matmul
 *   reference  its CPU reference in src/cpu/: wgt_cpu_matmul; OP_COMPOSED when the reference is the
 *              composition of other ops of this table (the fused ops); OP_VIEW for a view (reshape,
 *              narrow, split, ...: layout arithmetic only, the same code on every context; its
 *              forward may live in src/tensor/tensor.c or src/ops/tensor_ops.c)
 *   onnx       the ONNX op types the ONNX executor (testkit/onnx) runs through it, space-separated,
 *              and the device adapter of its reference (testkit/onnx/onnx_gpu.c: takes host tensors in
 *              the reference's signature, runs the op API on the device, reads the result back):
 *                ONNX("MatMul", g_matmul)   types ("" none) and the adapter; every row of a reference
 *                                           names the same one, and rows whose reference the executor
 *                                           calls must name it (test_optable)
 *                ONNX_VIA("Reshape Flatten") types the executor runs through other rows' references
 *                                           (views copy; EyeLike is full, triu, tril): no adapter
 *                NO_ONNX                    neither
 *              onnx_gpu.c checks at compile time that each adapter has its reference's signature
 *   grad       the recorder id of its backward rule (a RULE row's): OP_GRAD_MATMUL, or
 *              OP_GRAD_NONE when it records no node of its own (an integer result, or one made of
 *              recorded ops whose rules carry the gradient: split, meshgrid, outer)
 *   doc        one line: what it computes, in PyTorch's terms where PyTorch has the op
 *   harness    HX(setup, call, .field = value, ...): the differential harness's input generator and
 *              call through the op API (testkit/harness/table_*.c), and hx_op fields (tolerance
 *              with its reason, value domain, variants; testkit/harness/harness.h)
 *
 *   RULE(name, grad, backward, saves, saves_fn)
 *
 *   A backward rule, in the family of the ops that record it (one rule may serve many ops: the
 *   unary rule all unary ops): its recorder id, its formula (src/autograd/grad_<family>.c), the
 *   tensors its node saves (IN(i): input i, AG_SAVE_OUT: the output, AG_SAVE_ALL_IN) or a function
 *   of the params that says so (saves_fn, else NULL); a comment beside it says what the recording
 *   op passes as inputs and params. Read by src/autograd/rules.c. The recorder ids themselves
 *   (enum op_grad_id of src/tensor/record.h) are written by the build from these rows.
 *
 *   The build (cmake/gen_optable.cmake, run by CMakeLists.txt and web/web.mk) reads the rows as text
 *   and writes what layers below src/ops need: "generated/op_grad_ids.h" (the ids, in the rows'
 *   order) and "generated/op_names.h" (the unary, binary, reduce and scan ops' names by their enum
 *   value, from each row's name and harness .code, for src/cpu/op_kinds.c).
 *
 *   GRAD(op, name, forward, .in = {inputs}, .iarg = {...}, .darg = {...}, .tol = k, .f32_only = 1)
 *
 *   A gradient check of op's backward (`wgt ops --check --grad`, testkit/grad/gradcheck.c, which
 *   says how each case is checked: the reference's backward against finite differences, the
 *   device's against the reference's, f16/bf16 inputs against f32). Written right below the op's
 *   row; an op may have several (variants of its parameters), and every rule a row names has one.
 *   op         the row ("conv2d"), or a view of src/tensor that has a RULE row but no OP row
 *   name       the case's name ("conv2d groups"), "" for the op's name
 *   forward    gc_<what>(case, inputs, out): the call through the op API (testkit/grad/gradcheck.c);
 *              it reads .iarg/.darg as its comment there says, and the row's code (unary, binary,
 *              reduce and scan ops get theirs from the OP row, so one gc_unary serves them all)
 *   .in        the inputs, in the forward's order, each a kind, a shape S(d0, ...) (up to 4 dims)
 *              and a value range: DIFF(S(3, 4), lo, hi) (float, gets a gradient; values keep clear
 *              of the kinks 0, +-0.5, +-1, +-3), DISTINCT(S, lo, hi) (as DIFF, no two values within
 *              (hi - lo) / n: no ties for max/min/sort), GRID(S, lo, hi, step, offset) (as DIFF,
 *              values lo + k step + offset), CONST(S, lo, hi) (float, no gradient), INDEX(S, lo, hi)
 *              (i32 in [lo, hi)), MASK(S) (bool), PERM(S, lo, hi) (i32, distinct down dim 0)
 *   .tol       a factor on the check's tolerances, for forwards that lose more (1 if left out)
 *   .f32_only  1: the forward takes no f16/bf16 (else those inputs are checked too)
 *
 * Readers: testkit/harness/table.c (the harness, and through it `wgt ops`, `--markdown`,
 * `--describe` and docs/ops.md), src/autograd/rules.c (the rules), testkit/grad/gradcheck.c (the
 * GRAD rows), testkit/onnx/onnx_gpu.c (the ONNX executor's device adapters, from the onnx column),
 * tests/ops/test_optable.c (the checks that keep this the only list of ops), and as text
 * cmake/gen_optable.cmake (a row begins its line with OP(, RULE( or GRAD(; it takes the name, the
 * harness column's ".code = WGT_UNARY_..." and the RULE rows' ids).
 */
#ifndef WGT_OPS_OPTABLE_H
#define WGT_OPS_OPTABLE_H

#include "wgt.h"

#define OPT_DT(d) (1u << (d))
#define OPT_FLOATS (OPT_DT(WGT_F32) | OPT_DT(WGT_F16) | OPT_DT(WGT_BF16))
#define OPT_INTS (OPT_DT(WGT_I32) | OPT_DT(WGT_U32) | OPT_DT(WGT_I8) | OPT_DT(WGT_U8) | OPT_DT(WGT_I64))
#define OPT_ALL (OPT_FLOATS | OPT_INTS | OPT_DT(WGT_BOOL))

/* The reference column of an op whose reference is the composition of other ops. */
#define OP_COMPOSED 0
/* The reference column of a view: it computes nothing, so it has no reference of its own. */
#define OP_VIEW 0

#endif
