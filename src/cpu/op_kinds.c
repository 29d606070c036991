/* Name tables for the op kinds; _Static_asserts keep them in step with the enums. */
#include "cpu/op_kinds.h"

#include <math.h>
#include <string.h>

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char *const unary_names[] = {
    "neg",   "abs",     "sign",       "exp",        "exp2",      "expm1",      "log",
    "log2",  "log1p",   "sqrt",       "rsqrt",      "reciprocal", "square",    "sin",
    "cos",   "tan",     "asin",       "acos",       "atan",      "sinh",       "cosh",
    "tanh",  "asinh",   "acosh",      "atanh",      "erf",       "erfc",       "erfinv",
    "lgamma", "digamma", "sigmoid",   "relu",       "gelu",      "gelu_tanh",  "silu",
    "softplus", "mish", "elu",        "leaky_relu", "hardtanh",  "hardsigmoid", "hardswish",
    "floor", "ceil",    "round",      "trunc",      "frac",      "clamp",      "isnan",
    "isinf", "isfinite", "logical_not", "bitwise_not",
};
_Static_assert(COUNT_OF(unary_names) == WGT_UNARY_COUNT, "unary name table");

static const char *const binary_names[] = {
    "add",         "sub",        "mul",         "div",         "div_floor",   "div_trunc",
    "remainder",   "fmod",       "pow",         "atan2",       "maximum",     "minimum",
    "eq",          "ne",         "lt",          "le",          "gt",          "ge",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",  "bitwise_xor",
    "shift_left",  "shift_right",
};
_Static_assert(COUNT_OF(binary_names) == WGT_BINARY_COUNT, "binary name table");

static const char *const reduce_names[] = {
    "sum",   "mean",  "prod",      "amax", "amin", "var",    "std",    "norm1",
    "norm2", "norm_inf", "logsumexp", "all", "any", "argmax", "argmin",
};
_Static_assert(COUNT_OF(reduce_names) == WGT_REDUCE_COUNT, "reduce name table");

static const char *const scan_names[] = {"cumsum", "cumprod", "cummax", "cummin"};
_Static_assert(COUNT_OF(scan_names) == WGT_SCAN_COUNT, "scan name table");

static const char *const scatter_names[] = {"set", "add", "mul", "amax", "amin"};
_Static_assert(COUNT_OF(scatter_names) == WGT_SCATTER_COUNT, "scatter name table");

static const char *const pad_names[] = {"constant", "reflect", "replicate", "circular"};
_Static_assert(COUNT_OF(pad_names) == WGT_PAD_COUNT, "pad name table");

static const char *const rope_names[] = {"none", "linear", "llama3", "yarn"};
_Static_assert(COUNT_OF(rope_names) == WGT_ROPE_SCALING_COUNT, "rope name table");

static const char *const interp_names[] = {"nearest", "nearest-exact", "linear", "cubic"};
_Static_assert(COUNT_OF(interp_names) == WGT_INTERP_COUNT, "interp name table");

#define NAME_OF(table, v) ((unsigned)(v) < COUNT_OF(table) ? (table)[v] : "?")

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
        if (!strcmp(table[i], name)) return i;
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
