/* Every family's rows of the op table, in the table's order (src/ops/optable.h says how to read
 * them). No include guard: each reader includes it once per expansion. A reader that leaves OP,
 * RULE or GRAD undefined skips those rows. */
#include "ops/optable.h"

#ifndef OP
#define OP(...)
#define OPTABLE_NO_OP_
#endif
#ifndef RULE
#define RULE(...)
#define OPTABLE_NO_RULE_
#endif
#ifndef GRAD
#define GRAD(...)
#define OPTABLE_NO_GRAD_
#endif

#define OP_FAMILY "elementwise"
#include "ops/elementwise.def"
#undef OP_FAMILY
#define OP_FAMILY "reduce"
#include "ops/reduce.def"
#undef OP_FAMILY
#define OP_FAMILY "norm"
#include "ops/norm.def"
#undef OP_FAMILY
#define OP_FAMILY "matmul"
#include "ops/matmul.def"
#undef OP_FAMILY
#define OP_FAMILY "attention"
#include "ops/attention.def"
#undef OP_FAMILY
#define OP_FAMILY "rope"
#include "ops/rope.def"
#undef OP_FAMILY
#define OP_FAMILY "index"
#include "ops/index.def"
#undef OP_FAMILY
#define OP_FAMILY "shape"
#include "ops/shape.def"
#undef OP_FAMILY
#define OP_FAMILY "conv"
#include "ops/conv.def"
#undef OP_FAMILY
#define OP_FAMILY "pool"
#include "ops/pool.def"
#undef OP_FAMILY
#define OP_FAMILY "resample"
#include "ops/resample.def"
#undef OP_FAMILY
#define OP_FAMILY "sort"
#include "ops/sort.def"
#undef OP_FAMILY
#define OP_FAMILY "search"
#include "ops/search.def"
#undef OP_FAMILY
#define OP_FAMILY "random"
#include "ops/random.def"
#undef OP_FAMILY
#define OP_FAMILY "loss"
#include "ops/loss.def"
#undef OP_FAMILY
#define OP_FAMILY "misc"
#include "ops/misc.def"
#undef OP_FAMILY
#define OP_FAMILY "fused"
#include "ops/fused.def"
#undef OP_FAMILY
#define OP_FAMILY "assign"
#include "ops/assign.def"
#undef OP_FAMILY
#define OP_FAMILY "qlinear"
#include "ops/qlinear.def"
#undef OP_FAMILY

#ifdef OPTABLE_NO_OP_
#undef OP
#undef OPTABLE_NO_OP_
#endif
#ifdef OPTABLE_NO_RULE_
#undef RULE
#undef OPTABLE_NO_RULE_
#endif
#ifdef OPTABLE_NO_GRAD_
#undef GRAD
#undef OPTABLE_NO_GRAD_
#endif
