/* Op kinds shared by the CPU reference, the GPU kernels and the public API: the numbers are
 * stable (append only, never reorder), and every enum has a name table in op_kinds.c.
 * Names are PyTorch's (torch.<name>) where PyTorch has the op. */
#ifndef WGT_CPU_OP_KINDS_H
#define WGT_CPU_OP_KINDS_H

/* Elementwise ops of one tensor. Parameters, where an op takes any, are in wgt_unary_params. */
typedef enum wgt_unary_op {
    WGT_UNARY_NEG = 0,
    WGT_UNARY_ABS,
    WGT_UNARY_SIGN,        /* -1, 0, +1; NaN gives 0 (PyTorch; NumPy and ONNX give NaN) */
    WGT_UNARY_EXP,
    WGT_UNARY_EXP2,
    WGT_UNARY_EXPM1,
    WGT_UNARY_LOG,
    WGT_UNARY_LOG2,
    WGT_UNARY_LOG1P,
    WGT_UNARY_SQRT,
    WGT_UNARY_RSQRT,
    WGT_UNARY_RECIPROCAL,
    WGT_UNARY_SQUARE,
    WGT_UNARY_SIN,
    WGT_UNARY_COS,
    WGT_UNARY_TAN,
    WGT_UNARY_ASIN,
    WGT_UNARY_ACOS,
    WGT_UNARY_ATAN,
    WGT_UNARY_SINH,
    WGT_UNARY_COSH,
    WGT_UNARY_TANH,
    WGT_UNARY_ASINH,
    WGT_UNARY_ACOSH,
    WGT_UNARY_ATANH,
    WGT_UNARY_ERF,
    WGT_UNARY_ERFC,
    WGT_UNARY_ERFINV,
    WGT_UNARY_LGAMMA,
    WGT_UNARY_DIGAMMA,
    WGT_UNARY_SIGMOID,
    WGT_UNARY_RELU,
    WGT_UNARY_GELU,        /* x * Phi(x), the erf form */
    WGT_UNARY_GELU_TANH,   /* the tanh approximation */
    WGT_UNARY_SILU,
    WGT_UNARY_SOFTPLUS,    /* log1p(exp(beta x)) / beta; x where beta x > threshold (params) */
    WGT_UNARY_MISH,
    WGT_UNARY_ELU,         /* alpha (params) */
    WGT_UNARY_LEAKY_RELU,  /* alpha = negative slope (params) */
    WGT_UNARY_HARDTANH,    /* clamp to [lo, hi] (params) */
    WGT_UNARY_HARDSIGMOID, /* clamp(alpha x + beta, 0, 1) (params) */
    WGT_UNARY_HARDSWISH,
    WGT_UNARY_FLOOR,
    WGT_UNARY_CEIL,
    WGT_UNARY_ROUND,       /* half to even */
    WGT_UNARY_TRUNC,
    WGT_UNARY_FRAC,        /* x - trunc(x) */
    WGT_UNARY_CLAMP,       /* clamp to [lo, hi] (params); NaN stays NaN */
    WGT_UNARY_ISNAN,       /* output bool */
    WGT_UNARY_ISINF,       /* output bool */
    WGT_UNARY_ISFINITE,    /* output bool */
    WGT_UNARY_LOGICAL_NOT, /* output bool (or any dtype: 0/1) */
    WGT_UNARY_BITWISE_NOT, /* integers and bool only */
    WGT_UNARY_COUNT
} wgt_unary_op;

/* Parameters of the unary ops that take any; wgt_unary_params_default() gives PyTorch's defaults. */
typedef struct wgt_unary_params {
    double alpha; /* elu: alpha (1); leaky_relu: negative slope (0.01); hardsigmoid: slope (1/6) */
    double beta;  /* softplus: beta (1); hardsigmoid: offset (1/2) */
    double lo;    /* clamp, hardtanh: lower bound (-inf / -1); -INFINITY for none */
    double hi;    /* clamp, hardtanh: upper bound (+inf / +1); softplus: threshold (20) */
} wgt_unary_params;

/* Elementwise ops of two tensors, broadcast NumPy-style. */
typedef enum wgt_binary_op {
    WGT_BINARY_ADD = 0,
    WGT_BINARY_SUB,
    WGT_BINARY_MUL,
    WGT_BINARY_DIV,         /* true division; with an integer output: truncating (ONNX Div) */
    WGT_BINARY_DIV_FLOOR,   /* torch.div(rounding_mode="floor") */
    WGT_BINARY_DIV_TRUNC,   /* torch.div(rounding_mode="trunc") */
    WGT_BINARY_REMAINDER,   /* sign of the divisor (Python %, torch.remainder) */
    WGT_BINARY_FMOD,        /* sign of the dividend (C fmod, torch.fmod) */
    WGT_BINARY_POW,
    WGT_BINARY_ATAN2,
    WGT_BINARY_MAXIMUM,     /* NaN propagates */
    WGT_BINARY_MINIMUM,     /* NaN propagates */
    WGT_BINARY_EQ,          /* comparisons: output bool (or any dtype: 0/1) */
    WGT_BINARY_NE,
    WGT_BINARY_LT,
    WGT_BINARY_LE,
    WGT_BINARY_GT,
    WGT_BINARY_GE,
    WGT_BINARY_LOGICAL_AND,
    WGT_BINARY_LOGICAL_OR,
    WGT_BINARY_LOGICAL_XOR,
    WGT_BINARY_BITWISE_AND, /* bitwise and shifts: integers and bool only */
    WGT_BINARY_BITWISE_OR,
    WGT_BINARY_BITWISE_XOR,
    WGT_BINARY_SHIFT_LEFT,
    WGT_BINARY_SHIFT_RIGHT, /* arithmetic for signed types, logical for unsigned */
    WGT_BINARY_COUNT
} wgt_binary_op;

/* Reductions over any set of dimensions. */
typedef enum wgt_reduce_op {
    WGT_REDUCE_SUM = 0,
    WGT_REDUCE_MEAN,
    WGT_REDUCE_PROD,
    WGT_REDUCE_AMAX,      /* NaN propagates; optional indices of the first maximum */
    WGT_REDUCE_AMIN,
    WGT_REDUCE_VAR,       /* sum((x - mean)^2) / max(0, n - correction) */
    WGT_REDUCE_STD,
    WGT_REDUCE_NORM1,
    WGT_REDUCE_NORM2,
    WGT_REDUCE_NORM_INF,
    WGT_REDUCE_LOGSUMEXP,
    WGT_REDUCE_ALL,
    WGT_REDUCE_ANY,
    WGT_REDUCE_ARGMAX,    /* index (row-major over the reduced dims) of the first maximum; NaN is max */
    WGT_REDUCE_ARGMIN,
    WGT_REDUCE_COUNT
} wgt_reduce_op;

/* Inclusive scans along one dimension. */
typedef enum wgt_scan_op {
    WGT_SCAN_CUMSUM = 0,
    WGT_SCAN_CUMPROD,
    WGT_SCAN_CUMMAX,      /* with optional indices: the last position of the running max (PyTorch) */
    WGT_SCAN_CUMMIN,
    WGT_SCAN_COUNT
} wgt_scan_op;

/* Reduction applied by scatter when several writes land on one element. */
typedef enum wgt_scatter_mode {
    WGT_SCATTER_SET = 0,  /* the last write wins (order of the index, row-major) */
    WGT_SCATTER_ADD,
    WGT_SCATTER_MUL,
    WGT_SCATTER_AMAX,
    WGT_SCATTER_AMIN,
    WGT_SCATTER_COUNT
} wgt_scatter_mode;

/* Padding modes. */
typedef enum wgt_pad_mode {
    WGT_PAD_CONSTANT = 0,
    WGT_PAD_REFLECT,      /* mirror without repeating the edge: [a b c] -> b | a b c | b */
    WGT_PAD_REPLICATE,    /* repeat the edge element (ONNX "edge") */
    WGT_PAD_CIRCULAR,     /* wrap around (ONNX "wrap") */
    WGT_PAD_COUNT
} wgt_pad_mode;

/* Rotary-embedding frequency scaling, as Hugging Face transformers' rope init functions. */
typedef enum wgt_rope_scaling {
    WGT_ROPE_NONE = 0,
    WGT_ROPE_LINEAR,
    WGT_ROPE_LLAMA3,
    WGT_ROPE_YARN,
    WGT_ROPE_SCALING_COUNT
} wgt_rope_scaling;

/* Names ("neg", "add", "sum", "cumsum", ...), or "?" for a value out of range. */
const char *wgt_unary_op_name(wgt_unary_op op);
const char *wgt_binary_op_name(wgt_binary_op op);
const char *wgt_reduce_op_name(wgt_reduce_op op);
const char *wgt_scan_op_name(wgt_scan_op op);
const char *wgt_scatter_mode_name(wgt_scatter_mode mode);
const char *wgt_pad_mode_name(wgt_pad_mode mode);
const char *wgt_rope_scaling_name(wgt_rope_scaling scaling);

/* The value named name (as the tables above), or -1 when there is none. */
int wgt_unary_op_from_name(const char *name);
int wgt_binary_op_from_name(const char *name);
int wgt_reduce_op_from_name(const char *name);
int wgt_scan_op_from_name(const char *name);

/* PyTorch's default parameters for op (zeros for ops without parameters). */
wgt_unary_params wgt_unary_params_default(wgt_unary_op op);

#endif
