/* Name tables for the op kinds and modes; _Static_asserts keep them in step with the enums. */
#include "cpu/op_kinds.h"

#include <math.h>
#include <string.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The op names (unary_names, binary_names, reduce_names, scan_names), written by the build from the
 * op table's rows (cmake/gen_optable.cmake reads src/ops/<family>.def as text: src/cpu may not include
 * src/ops). A row per enum value: a row missing or too many fails the count here, and
 * tests/ops/test_optable.c checks each value's name against its row. */
#include "generated/op_names.h"
_Static_assert(OP_NAMES_UNARY_ROWS == WGT_UNARY_COUNT, "a row per wgt_unary_op (src/ops/elementwise.def)");
_Static_assert(OP_NAMES_BINARY_ROWS == WGT_BINARY_COUNT, "a row per wgt_binary_op (src/ops/elementwise.def)");
_Static_assert(OP_NAMES_REDUCE_ROWS == WGT_REDUCE_COUNT, "a row per wgt_reduce_op (src/ops/reduce.def)");
_Static_assert(OP_NAMES_SCAN_ROWS == WGT_SCAN_COUNT, "a row per wgt_scan_op (src/ops/reduce.def)");

/* The modes' names (not ops). */
static const char *const scatter_names[] = {"set", "add", "mul", "amax", "amin"};
_Static_assert(COUNT_OF(scatter_names) == WGT_SCATTER_COUNT, "scatter name table");

static const char *const pad_names[] = {"constant", "reflect", "replicate", "circular"};
_Static_assert(COUNT_OF(pad_names) == WGT_PAD_COUNT, "pad name table");

static const char *const rope_names[] = {"none", "linear", "llama3", "yarn"};
_Static_assert(COUNT_OF(rope_names) == WGT_ROPE_SCALING_COUNT, "rope name table");

static const char *const interp_names[] = {"nearest", "nearest-exact", "linear", "cubic"};
_Static_assert(COUNT_OF(interp_names) == WGT_INTERP_COUNT, "interp name table");

#define NAME_OF(table, v) ((unsigned)(v) < COUNT_OF(table) && (table)[v] ? (table)[v] : "?")

const char *wgt_unary_op_name(wgt_unary_op op) { return NAME_OF(unary_names, op); }
const char *wgt_binary_op_name(wgt_binary_op op) { return NAME_OF(binary_names, op); }
const char *wgt_reduce_op_name(wgt_reduce_op op) { return NAME_OF(reduce_names, op); }
const char *wgt_scan_op_name(wgt_scan_op op) { return NAME_OF(scan_names, op); }
const char *wgt_scatter_mode_name(wgt_scatter_mode m) { return NAME_OF(scatter_names, m); }
const char *wgt_pad_mode_name(wgt_pad_mode m) { return NAME_OF(pad_names, m); }
const char *wgt_rope_scaling_name(wgt_rope_scaling s) { return NAME_OF(rope_names, s); }
const char *wgt_interp_mode_name(wgt_interp_mode m) { return NAME_OF(interp_names, m); }

static int find(const char *const *table, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (table[i] && !strcmp(table[i], name)) return i;
    return -1;
}

int wgt_unary_op_from_name(const char *name) { return find(unary_names, WGT_UNARY_COUNT, name); }
int wgt_binary_op_from_name(const char *name) { return find(binary_names, WGT_BINARY_COUNT, name); }
int wgt_reduce_op_from_name(const char *name) { return find(reduce_names, WGT_REDUCE_COUNT, name); }
int wgt_scan_op_from_name(const char *name) { return find(scan_names, WGT_SCAN_COUNT, name); }

wgt_unary_params wgt_unary_params_default(wgt_unary_op op)
{
    wgt_unary_params p = {0, 0, -INFINITY, INFINITY};
    switch (op) {
    case WGT_UNARY_ELU: p.alpha = 1.0; break;
    case WGT_UNARY_LEAKY_RELU: p.alpha = 0.01; break;
    case WGT_UNARY_HARDTANH: p.lo = -1.0, p.hi = 1.0; break;
    case WGT_UNARY_HARDSIGMOID: p.alpha = 1.0 / 6.0, p.beta = 0.5; break;
    case WGT_UNARY_SOFTPLUS: p.beta = 1.0, p.hi = 20.0; break;
    default: break;
    }
    return p;
}
