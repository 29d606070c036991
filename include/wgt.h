/*
 * wgt.h: tensors, autograd and large language models on WebGPU.
 *
 * This header is the manual. Conventions:
 *  - every name is prefixed wgt_; functions read wgt_<noun>_<verb>;
 *  - objects are opaque handles, made by wgt_<noun>_create (from values in memory or from another
 *    handle) or wgt_<noun>_open (from a path: a file or a directory, to read or, for the writers,
 *    to write), and released by wgt_<noun>_free (an output file: _commit or _abort); freeing NULL
 *    does nothing; the same constructor taking an options struct ends in _ex. tests/test_exports.sh
 *    checks these names. Tensors are values: ops and wgt_tensor_empty / _zeros / _from_host make
 *    them, wgt_tensor_free releases them;
 *  - every call that can fail returns a wgt_status (0 on success, negative on failure) and leaves
 *    a message saying what went wrong and what to do: wgt_context_errmsg() for calls that take a
 *    context, wgt_errmsg() (per thread) for the others and for context creation itself;
 *  - nothing in the library aborts on bad input: bad files, shapes, limits and device loss are
 *    statuses.
 */
#ifndef WGT_H
#define WGT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exports. libwgt is compiled with -fvisibility=hidden, so it exports only what this header
 * declares: every declaration between WGT_API_BEGIN and WGT_API_END (the rest of this header) gets
 * default visibility from one visibility pragma. A region, not a WGT_API mark on each declaration,
 * so that a section added to the header is exported without anyone having to remember the mark;
 * tests/test_exports.sh fails, naming each symbol, when the functions libwgt.so exports and the
 * functions declared here differ in either direction (a declaration the library does not define,
 * or an internal function that escaped). In a user's program the region changes nothing: it
 * declares what the library defines. Other compilers than GCC and Clang get no export control. */
#if defined(__GNUC__) || defined(__clang__)
#define WGT_API_BEGIN _Pragma("GCC visibility push(default)")
#define WGT_API_END _Pragma("GCC visibility pop")
#else
#define WGT_API_BEGIN
#define WGT_API_END
#endif

WGT_API_BEGIN

#define WGT_VERSION_MAJOR 0
#define WGT_VERSION_MINOR 1
#define WGT_VERSION_PATCH 0

/* The library's version, "MAJOR.MINOR.PATCH". */
const char *wgt_version(void);

/* ------------------------------------------------------------------------------------------------
 * Status codes
 * --------------------------------------------------------------------------------------------- */

typedef enum wgt_status {
    WGT_OK = 0,
    WGT_ERR_INVALID_ARGUMENT = -1, /* a bad value: a NULL handle, an unknown option, a bad env var */
    WGT_ERR_MISUSE = -2,           /* the API was used in the wrong order or on the wrong object */
    WGT_ERR_OUT_OF_MEMORY = -3,    /* host or device memory ran out */
    WGT_ERR_NOT_FOUND = -4,        /* a file, tensor, adapter or key that does not exist */
    WGT_ERR_IO = -5,               /* reading or writing a file failed */
    WGT_ERR_FORMAT = -6,           /* a file is malformed: the message names the field */
    WGT_ERR_UNSUPPORTED = -7,      /* valid, but not supported (a dtype, an op, an architecture) */
    WGT_ERR_SHAPE = -8,            /* tensor shapes do not fit the operation */
    WGT_ERR_DTYPE = -9,            /* tensor dtypes do not fit the operation */
    WGT_ERR_NO_DEVICE = -10,       /* no WebGPU library, adapter or device could be had */
    WGT_ERR_DEVICE_LOST = -11,     /* the device was lost; the context must be recreated */
    WGT_ERR_SHADER = -12,          /* a WGSL kernel failed to compile; the message names it */
    WGT_ERR_GPU = -13,             /* WebGPU reported a validation or internal error */
    WGT_ERR_TIMEOUT = -14,         /* a wait on the device ran past its time-out */
    WGT_ERR_LIMIT = -15,           /* a size is past the device's or the format's limits */
    WGT_ERR_INTERNAL = -16,        /* a bug in wgt: please report it with the message */
    WGT_ERR_STALE = -17,           /* a captured graph no longer holds: a host read mid-graph got other
                                      bytes than at capture (capture it again; wgt_graph_cache does) */
} wgt_status;

/* A short, static description of a status ("invalid argument", ...). Never NULL. */
const char *wgt_status_str(wgt_status status);

/* The message of the last failure on this thread (any call), or "" if none. */
const char *wgt_errmsg(void);

/* ------------------------------------------------------------------------------------------------
 * Data types
 * Half types (f16, bf16) are stored as such and computed in f32 unless a kernel says otherwise.
 * i64 is stored as two 32-bit words (little-endian) and kept exact for arithmetic, comparison and
 * indexing. bool is one byte, 0 or 1.
 * Type promotion for binary ops follows the usual lattice:
 *   bool < u8 < i8 < i32 < i64 < (bf16, f16) < f32, with u32 above i32; f16 with bf16 gives f32;
 *   u8 with i8 gives i32; an integer with a float gives that float.
 * --------------------------------------------------------------------------------------------- */

typedef enum wgt_dtype {
    WGT_F32 = 0,
    WGT_F16 = 1,
    WGT_BF16 = 2,
    WGT_I32 = 3,
    WGT_U32 = 4,
    WGT_I8 = 5,
    WGT_U8 = 6,
    WGT_BOOL = 7,
    WGT_I64 = 8,
    WGT_DTYPE_COUNT
} wgt_dtype;

/* "f32", "f16", ...; "?" for an unknown value. */
const char *wgt_dtype_name(wgt_dtype dtype);
/* Bytes per element (i64: 8, bool: 1); 0 for an unknown value. */
size_t wgt_dtype_size(wgt_dtype dtype);

/* ------------------------------------------------------------------------------------------------
 * Context: one WebGPU device and everything cached on it.
 *
 * Environment variables read by wgt_context_create (an invalid value is WGT_ERR_INVALID_ARGUMENT
 * naming the variable and the allowed values):
 *   WGT_WEBGPU_LIB=path          the webgpu.h implementation to dlopen (default: Dawn of npm
 *                                webgpu@0.6.2, dawn.node; the 2025 Dawn of `make deps` is
 *                                .deps/dawn/libwebgpu_wrapper.so); WGT_NAPI_STUB=path: where
 *                                libwgt_napi_stub.so is, when it is not found by itself
 *   WGT_BACKEND=vulkan|metal|d3d12|opengl|opengles|cpu   (cpu: the C reference, no WebGPU)
 *   WGT_ADAPTER=index|substring  pick an adapter by index in `wgt info --adapters` or by name
 *   WGT_COMPAT=1                 request a compatibility-mode adapter
 *   WGT_LIMITS=adapter|default   device limits: the adapter's (default) or the spec's minimums
 *   WGT_FORCE_FALLBACK_ADAPTER=1 ask for the implementation's software adapter
 *   WGT_DEBUG=1                  log adapter and device information to stderr
 *   WGT_DUMP_SHADERS=dir         write every WGSL module compiled to dir
 *   WGT_MAX_BATCH=n              dispatches recorded before a submit (default 1024)
 *   WGT_PROFILE=1                time every kernel on the GPU (timestamp queries; each dispatch in a
 *                                pass of its own, a wait per submit) and print a table per kernel to
 *                                stderr when the context is freed (wgt_context_profile_print)
 *   WGT_KERNEL_DIR=dir           load kernels from dir (NAME.wgsl) instead of the embedded copies
 *   WGT_DAWN_TOGGLES=a,b         Dawn device toggles, passed through (e.g. disable_robustness)
 *   WGT_STRICT=1                 an op without a GPU kernel for a dtype fails instead of falling back
 * Options given in wgt_context_options take precedence over the environment.
 * --------------------------------------------------------------------------------------------- */

typedef struct wgt_context wgt_context;

typedef enum wgt_backend {
    WGT_BACKEND_DEFAULT = 0, /* the implementation's choice, falling back to a CPU adapter */
    WGT_BACKEND_VULKAN,
    WGT_BACKEND_METAL,
    WGT_BACKEND_D3D12,
    WGT_BACKEND_OPENGL,
    WGT_BACKEND_OPENGLES,
    WGT_BACKEND_OTHER,
    WGT_BACKEND_CPU, /* no WebGPU: every op runs the plain C reference (WGT_BACKEND=cpu) */
} wgt_backend;

typedef struct wgt_context_options {
    const char *webgpu_lib; /* NULL: WGT_WEBGPU_LIB, else the installed library */
    wgt_backend backend;    /* WGT_BACKEND_DEFAULT: WGT_BACKEND or the best adapter */
    const char *adapter;    /* NULL: WGT_ADAPTER; else an index ("0") or a name substring */
    int compat;             /* 1: compatibility mode; 0: WGT_COMPAT */
    int default_limits;     /* 1: the spec's default limits; 0: WGT_LIMITS */
    int force_fallback;     /* 1: the software adapter; 0: WGT_FORCE_FALLBACK_ADAPTER */
    int max_batch;          /* dispatches per submit; 0: WGT_MAX_BATCH or 1024 */
    int debug;              /* 1: log to stderr; 0: WGT_DEBUG */
} wgt_context_options;

/* Create a context on the chosen adapter. opts may be NULL. On failure *out is NULL and
 * wgt_errmsg() says why (no library, no adapter, a bad environment variable, ...). */
wgt_status wgt_context_create(const wgt_context_options *opts, wgt_context **out);
void wgt_context_free(wgt_context *ctx);

/* The last error message of this context, or "" if none. */
const char *wgt_context_errmsg(const wgt_context *ctx);

/* The sticky status of the context: WGT_ERR_DEVICE_LOST once the device is gone, else WGT_OK. */
wgt_status wgt_context_health(const wgt_context *ctx);

/* With WGT_PROFILE=1: the GPU time per kernel so far (calls, total, mean, share), to f. */
void wgt_context_profile_print(wgt_context *ctx, FILE *f);

/* Wait until every piece of work submitted so far has finished (timeout_ms < 0: no limit). */
wgt_status wgt_context_sync(wgt_context *ctx, int timeout_ms);

typedef struct wgt_limits {
    uint64_t max_buffer_size;
    uint64_t max_storage_buffer_binding_size;
    uint64_t max_uniform_buffer_binding_size;
    uint32_t max_storage_buffers_per_shader_stage;
    uint32_t max_compute_workgroup_storage_size;
    uint32_t max_compute_invocations_per_workgroup;
    uint32_t max_compute_workgroup_size_x;
    uint32_t max_compute_workgroup_size_y;
    uint32_t max_compute_workgroup_size_z;
    uint32_t max_compute_workgroups_per_dimension;
    uint32_t min_storage_buffer_offset_alignment;
    uint32_t min_uniform_buffer_offset_alignment;
    uint32_t max_bind_groups;
    uint32_t subgroup_min_size;
    uint32_t subgroup_max_size;
} wgt_limits;

typedef struct wgt_adapter_info {
    char name[256];        /* "llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H200", ... */
    char vendor[128];
    char architecture[128];
    char driver[256];      /* driver description, e.g. "Mesa 25.0.7" */
    wgt_backend backend;
    const char *backend_name; /* "vulkan", "opengles", ... (static) */
    int is_cpu;            /* 1 for a software adapter (lavapipe, llvmpipe, SwiftShader) */
    int compat;            /* 1 when the device runs in compatibility mode */
    int has_f16;           /* shader-f16 granted */
    int has_subgroups;     /* subgroups granted */
    int has_timestamps;    /* timestamp queries granted */
    int has_subgroup_matrix; /* chromium-experimental-subgroup-matrix granted (tensor-core tiles) */
    int n_subgroup_matrix_configs; /* the shapes it offers, as many as fit below */
    struct {
        wgt_dtype component, result; /* operands, accumulator: f16/f32/i32/u32/i8/u8 */
        uint32_t m, n, k;            /* result M x N, operands M x K and K x N */
    } subgroup_matrix_configs[8];
    wgt_limits limits;     /* the limits the device was created with */
    char webgpu_lib[512];  /* path of the webgpu.h library in use ("" for the CPU reference) */
    char webgpu_lib_description[256]; /* which implementation, how loaded, which ABI numbering */
} wgt_adapter_info;

wgt_status wgt_context_adapter_info(const wgt_context *ctx, wgt_adapter_info *out);

/* Every adapter the implementation offers for the given options (backend, compat, fallback),
 * in the order WGT_ADAPTER indexes them. Fills up to cap entries; *count gets the total. */
wgt_status wgt_list_adapters(const wgt_context_options *opts, wgt_adapter_info *out, int cap,
                             int *count);

typedef struct wgt_memory_stats {
    uint64_t allocated_bytes; /* device bytes held by the pool (in use + cached) */
    uint64_t in_use_bytes;    /* device bytes handed out and not yet released */
    uint64_t peak_in_use_bytes;
    uint64_t buffers;         /* device buffers held by the pool */
    uint64_t pool_hits;       /* allocations served from the cache */
    uint64_t pool_misses;     /* allocations that created a buffer */
    uint64_t pipelines;       /* compute pipelines cached */
    uint64_t pipeline_hits;
    uint64_t bind_group_hits;
    uint64_t bind_group_misses;
    uint64_t dispatches;      /* dispatches recorded since creation */
    uint64_t submits;         /* queue submits since creation */
    uint64_t bind_groups;          /* bind groups cached now */
    uint64_t bind_group_evictions; /* cached bind groups released as least recently used
                                    * (the cache keeps WGT_BIND_CACHE, default 8192) */
} wgt_memory_stats;

wgt_status wgt_context_memory_stats(const wgt_context *ctx, wgt_memory_stats *out);

/* Release every cached device buffer not in use (like torch.cuda.empty_cache). */
wgt_status wgt_context_empty_cache(wgt_context *ctx);

/* Run the self-check: a streaming kernel over n floats compared with the CPU.
 * *gbps gets the achieved read+write bandwidth (may be NULL). WGT_ERR_INTERNAL on mismatch. */
wgt_status wgt_context_selfcheck(wgt_context *ctx, size_t n, double *gbps);

/* Micro-benchmarks of the device layer (`wgt bench --device`). Times are host wall-clock. */
typedef struct wgt_device_bench {
    double dispatch_record_us; /* host time to record one dispatch, all in one compute pass */
    double dispatch_total_us;  /* wall time per dispatch including execution, one pass */
    double pass_record_us;     /* host time to record one dispatch in a pass of its own */
    double pass_total_us;      /* wall time per dispatch including execution, a pass each */
    double submit_wait_us;     /* median time to submit one tiny dispatch and wait for it */
    int n_sizes;
    uint64_t bytes[24];        /* bytes per buffer for each streaming size */
    double gbps[24];           /* streaming y = a*x + b: (read + written bytes) / second */
    int items[24];             /* vec4s per invocation of the fastest kernel variant */
} wgt_device_bench;

/* Run the device micro-benchmarks, streaming sizes from 1 MiB up to max_bytes per buffer
 * (capped by the device's binding limit). */
wgt_status wgt_context_bench(wgt_context *ctx, uint64_t max_bytes, wgt_device_bench *out);

/* ------------------------------------------------------------------------------------------------
 * Tensors (src/tensor)
 *
 * A tensor is a handle over storage on its context's device plus a layout: dtype, up to 8
 * dimensions, strides and an offset (in elements). Views (transpose, narrow, expand, ...) share
 * storage and copy nothing. Work is recorded and submitted in batches: only reading data back
 * waits for the device. Shapes are int64_t arrays, outermost dimension first; a negative dim
 * counts from the end.
 * --------------------------------------------------------------------------------------------- */

typedef struct wgt_tensor wgt_tensor;

#define WGT_MAX_NDIM 8

/* A new tensor of the given shape, contents undefined / zero / copied from host memory
 * (data: contiguous row-major elements of dtype; i64 as int64_t, f16/bf16 as uint16_t bits,
 * bool as one byte 0/1). */
wgt_status wgt_tensor_empty(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, wgt_tensor **out);
wgt_status wgt_tensor_zeros(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, wgt_tensor **out);
wgt_status wgt_tensor_from_host(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape,
                                const void *data, wgt_tensor **out);
/* Copy the elements, row-major and contiguous, into dst (bytes must equal numel * dtype size).
 * Waits for the work that produces them. */
wgt_status wgt_tensor_to_host(const wgt_tensor *t, void *dst, size_t bytes);
/* Release the handle; storage is freed with its last view. NULL is a no-op. */
void wgt_tensor_free(wgt_tensor *t);

wgt_context *wgt_tensor_context(const wgt_tensor *t);
wgt_dtype wgt_tensor_dtype(const wgt_tensor *t);
int wgt_tensor_ndim(const wgt_tensor *t);
int64_t wgt_tensor_dim(const wgt_tensor *t, int dim); /* size of a dim (negative counts from the end) */
const int64_t *wgt_tensor_shape(const wgt_tensor *t);
const int64_t *wgt_tensor_strides(const wgt_tensor *t); /* in elements */
int64_t wgt_tensor_numel(const wgt_tensor *t);
int wgt_tensor_is_contiguous(const wgt_tensor *t);

/* Views: no copies. reshape is a view where the strides allow and a copy otherwise; one size may
 * be -1. narrow keeps [start, start + length) of dim. expand broadcasts size-1 dims (or new
 * leading dims) to the shape given (-1 keeps a size). */
wgt_status wgt_tensor_reshape(const wgt_tensor *t, int ndim, const int64_t *shape, wgt_tensor **out);
wgt_status wgt_tensor_transpose(const wgt_tensor *t, int dim0, int dim1, wgt_tensor **out);
wgt_status wgt_tensor_permute(const wgt_tensor *t, const int *dims, wgt_tensor **out);
wgt_status wgt_tensor_narrow(const wgt_tensor *t, int dim, int64_t start, int64_t length, wgt_tensor **out);
wgt_status wgt_tensor_expand(const wgt_tensor *t, int ndim, const int64_t *shape, wgt_tensor **out);
wgt_status wgt_tensor_squeeze(const wgt_tensor *t, int dim, wgt_tensor **out);
wgt_status wgt_tensor_unsqueeze(const wgt_tensor *t, int dim, wgt_tensor **out);
/* A contiguous tensor with t's elements (a new reference to t itself when already contiguous). */
wgt_status wgt_tensor_contiguous(const wgt_tensor *t, wgt_tensor **out);
/* A contiguous copy, and a converted copy. Float -> integer truncates toward zero and saturates at
 * the target's limits (i32: INT32_MIN..INT32_MAX, u32: 0..UINT32_MAX), NaN -> 0, on the GPU and the
 * reference alike (PyTorch leaves out-of-range casts undefined); float -> bool is true for nonzero
 * and NaN. */
wgt_status wgt_tensor_copy(const wgt_tensor *t, wgt_tensor **out);
wgt_status wgt_tensor_cast(const wgt_tensor *t, wgt_dtype dtype, wgt_tensor **out);
/* A new reference to the same tensor (free it separately). */
wgt_tensor *wgt_tensor_ref(const wgt_tensor *t);

/* ------------------------------------------------------------------------------------------------
 * Op kinds: shared by the CPU reference, the GPU kernels and the op functions. The numbers are
 * stable (append only). Names are PyTorch's (torch.<name>) where PyTorch has the op.
 * --------------------------------------------------------------------------------------------- */

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


/* Rotary-embedding parameters (wgt_rope): transformers' rope init functions. */
typedef struct wgt_rope_params {
    double theta;                 /* base, e.g. 10000 */
    wgt_rope_scaling scaling;
    double factor;                /* linear, llama3, yarn */
    double low_freq_factor;       /* llama3 */
    double high_freq_factor;      /* llama3 */
    double original_max_position; /* llama3, yarn: original_max_position_embeddings */
    double beta_fast, beta_slow;  /* yarn; 0 means transformers' defaults 32 and 1 */
    double mscale, mscale_all_dim; /* yarn; 0 means unset */
    double attention_factor;      /* yarn; 0 means computed from factor and mscale */
    int truncate;                 /* yarn: floor/ceil the correction range (transformers' default 1) */
    const float *freq_factors;    /* NULL, or rotary dim / 2 factors (llama.cpp's rope_freqs.weight):
                                     inverse frequency j is divided by freq_factors[j] after the above */
} wgt_rope_params;

/* Scaled dot-product attention parameters (wgt_sdpa). */
typedef struct wgt_sdpa_params {
    double scale;     /* 0: 1 / sqrt(D) */
    int causal;       /* query i attends keys 0 .. causal_offset + i */
    int64_t causal_offset;
    int64_t window;   /* with causal: a sliding window, query i sees only keys j with
                         causal_offset + i - window < j (0: none; needs causal) */
    int half_tiles;   /* 1: several query rows (no mask or window) may round q, k, v and the
                         probabilities to f16 for subgroup-matrix tiles (tensor cores) where the
                         device has them; the models set it for f16, bf16 and quantized weights.
                         WGT_ATTENTION_TC=0 or =1 overrides it */
} wgt_sdpa_params;

/* ------------------------------------------------------------------------------------------------
 * Ops (src/ops): every op returns a new tensor in *out and never modifies its inputs (except
 * wgt_tensor_assign and batch_norm's running statistics). Each runs a WGSL kernel; a dtype without
 * one runs the CPU reference with a one-time warning (an error under WGT_STRICT=1).
 * --------------------------------------------------------------------------------------------- */
/* Elementwise (src/ops/elementwise.c). Result dtypes follow PyTorch: comparisons and isnan-like
 * ops give bool, float-valued ops of integers give f32, true division of integers gives f32. */
wgt_status wgt_unary(wgt_unary_op op, const wgt_tensor *x, wgt_tensor **out);
wgt_status wgt_unary_ex(wgt_unary_op op, const wgt_unary_params *params, const wgt_tensor *x, wgt_tensor **out);
wgt_status wgt_binary(wgt_binary_op op, const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out);
wgt_status wgt_where(const wgt_tensor *cond, const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out);
wgt_status wgt_full(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, double value, wgt_tensor **out);
wgt_dtype wgt_unary_result_dtype(wgt_unary_op op, wgt_dtype x);
wgt_dtype wgt_binary_result_dtype(wgt_binary_op op, wgt_dtype a, wgt_dtype b);

/* ---- assignment (src/ops/assign.c) ---- */
/* dst (a view into existing storage) = src, converting dtype; shapes must match. The one op that
 * writes in place (KV caches, slice updates). Not recorded by autograd: while grad mode is on, a
 * src or dst that requires grad is WGT_ERR_UNSUPPORTED; a write into a tensor some graph node
 * saved makes wgt_backward through that node WGT_ERR_MISUSE (PyTorch's version counter). */
wgt_status wgt_tensor_assign(wgt_tensor *dst, const wgt_tensor *src);

/* ---- matrix products and transformer ops (src/ops/matmul.c, attention.c, rope.c) ---- */
/* torch.matmul: 1-D to N-D, batch dims broadcast; any strided views (a transposed weight is read
 * in place). f32/f16/bf16 and mixed (f32 x f16 weights) accumulate in f32; the result has the
 * promoted dtype. Integer products run the reference. */
wgt_status wgt_matmul(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out);
/* out [..., O] = x [..., I] @ w [O, I]^T + bias [O] (bias may be NULL). */
wgt_status wgt_linear(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *bias, wgt_tensor **out);
/* beta * self + alpha * m1 [M, K] @ m2 [K, N]; self broadcasts (may be NULL; not read when beta == 0). */
wgt_status wgt_addmm(const wgt_tensor *self, const wgt_tensor *m1, const wgt_tensor *m2, double beta, double alpha,
                     wgt_tensor **out);
/* beta * self + alpha * b1 [B, M, K] @ b2 [B, K, N]. */
wgt_status wgt_baddbmm(const wgt_tensor *self, const wgt_tensor *b1, const wgt_tensor *b2, double beta, double alpha,
                       wgt_tensor **out);
/* out [N, M] = a [N] outer b [M]. */
wgt_status wgt_outer(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out);
/* Rotary embedding of x [..., L, D] (positions [L] integers, or broadcasting to x's shape without
 * D). The first rot_dim features (even, <= D) of position p rotate by the angles p * inv_freq[j]
 * (rounded to f32, as transformers computes them), inv_freq from params as transformers' rope init
 * functions give it (cos and sin times YaRN's attention factor); the other features pass through.
 * interleaved: pairs (2j, 2j+1) (GPT-J, llama.cpp "norm"); else pairs (j, j + rot_dim/2) (NeoX,
 * Hugging Face's rotate_half). The result has x's dtype. */
wgt_status wgt_rope(const wgt_tensor *x, const wgt_tensor *positions, int rot_dim, int interleaved,
                    const wgt_rope_params *params, wgt_tensor **out);
/* Scaled dot-product attention, softmax(q k^T * scale + mask) v: q [B, Hq, Lq, D], k [B, Hkv, Lk,
 * D], v [B, Hkv, Lk, Dv], Hq a multiple of Hkv (query head h reads kv head h / (Hq / Hkv): GQA/MQA,
 * no copies; k/v may be views into a KV cache). mask (may be NULL) broadcasts to [B, Hq, Lq, Lk]: a
 * float mask adds to the scores, a bool mask keeps where true. A query row left with no key gives
 * zeros (PyTorch >= 2.5's math backend). out [B, Hq, Lq, Dv] has q's dtype. params may be NULL
 * (scale 1/sqrt(D), not causal). */
wgt_status wgt_sdpa(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *mask,
                    const wgt_sdpa_params *params, wgt_tensor **out);
/* out [ids..., D] = rows of weight [V, D] (f32/f16/bf16) at ids (integers, any shape), in dtype
 * out_dtype (f32 or the weight's). */
wgt_status wgt_embedding(const wgt_tensor *weight, const wgt_tensor *ids, wgt_dtype out_dtype, wgt_tensor **out);

/* ---- reductions and scans (src/ops/reduce.c) ---- */
/* op over the dims in `dims` (bit mask, bit d = dim d; 0 = all dims), kept as size 1 with keepdim;
 * correction: var/std only (1 = unbiased). Result dtypes: wgt_reduce_result_dtype (PyTorch's,
 * but i32 where PyTorch gives i64: sum/prod of i32/i8/u8/bool, argmax/argmin). mean, var, std and
 * norms of integers are WGT_ERR_DTYPE; amax/amin/argmax/argmin of an empty set WGT_ERR_SHAPE. */
wgt_status wgt_reduce(wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, int keepdim, double correction,
                      wgt_tensor **out);
wgt_dtype wgt_reduce_result_dtype(wgt_reduce_op op, wgt_dtype x);
/* torch.max(x, dim) / torch.min(x, dim): values (x's dtype) and i32 indices of the first extreme
 * (a NaN counts as the extreme). */
wgt_status wgt_max_dim(const wgt_tensor *x, int dim, int keepdim, wgt_tensor **values, wgt_tensor **indices);
wgt_status wgt_min_dim(const wgt_tensor *x, int dim, int keepdim, wgt_tensor **values, wgt_tensor **indices);
/* Inclusive scan along dim; out has x's shape (cumsum/cumprod of i32/i8/u8/bool give i32, of u32
 * u32). indices (may be NULL; cummax/cummin only): i32, the last position of the running extreme. */
wgt_status wgt_scan(wgt_scan_op op, const wgt_tensor *x, int dim, wgt_tensor **out, wgt_tensor **indices);

/* ---- softmax and normalisation (src/ops/norm.c) ---- */
/* Along any dim; f32/f16/bf16 (integers compute and return f32). */
wgt_status wgt_softmax(const wgt_tensor *x, int dim, wgt_tensor **out);
wgt_status wgt_log_softmax(const wgt_tensor *x, int dim, wgt_tensor **out);
/* Over the last norm_ndim dims; weight/bias of those dims' shape or NULL; out has x's dtype. */
wgt_status wgt_layer_norm(const wgt_tensor *x, int norm_ndim, const wgt_tensor *weight, const wgt_tensor *bias,
                          double eps, wgt_tensor **out);
wgt_status wgt_rms_norm(const wgt_tensor *x, int norm_ndim, const wgt_tensor *weight, double eps, wgt_tensor **out);
/* x [N, C, *], groups dividing C; weight/bias [C] or NULL. */
wgt_status wgt_group_norm(const wgt_tensor *x, int groups, const wgt_tensor *weight, const wgt_tensor *bias,
                          double eps, wgt_tensor **out);
/* x [N, C, *]. training 0: normalise with running_mean/running_var [C]. training 1: with the
 * batch's statistics (biased variance), and when running stats are given update them in place:
 * r = (1 - momentum) r + momentum * batch, with the batch's variance unbiased (PyTorch's convention;
 * ONNX's momentum is 1 - PyTorch's). weight/bias [C] or NULL. */
wgt_status wgt_batch_norm(const wgt_tensor *x, wgt_tensor *running_mean, wgt_tensor *running_var,
                          const wgt_tensor *weight, const wgt_tensor *bias, int training, double momentum, double eps,
                          wgt_tensor **out);


/* ---- indexing (src/ops/index.c) ---- */
/* Index tensors: any integer dtype (i64 exact within 32 bits); [-n, 0) counts from the end. An
 * out-of-range index reads element 0 / skips its write and sets a flag on the context that
 * wgt_index_check() reports (a sync); WGT_STRICT=1 checks after every op. */
wgt_status wgt_index_select(const wgt_tensor *x, int dim, const wgt_tensor *index /* [K] */, wgt_tensor **out);
wgt_status wgt_gather(const wgt_tensor *x, int dim, const wgt_tensor *index, wgt_tensor **out); /* index's shape */
/* out = copy of self, then out[.. index[i] along dim ..] (mode)= src[i]; src has self's dtype. */
wgt_status wgt_scatter(const wgt_tensor *self, int dim, const wgt_tensor *index, const wgt_tensor *src,
                       wgt_scatter_mode mode, wgt_tensor **out);
wgt_status wgt_scatter_add(const wgt_tensor *self, int dim, const wgt_tensor *index, const wgt_tensor *src,
                           wgt_tensor **out);
wgt_status wgt_index_add(const wgt_tensor *self, int dim, const wgt_tensor *index /* [K] */,
                         const wgt_tensor *source, double alpha, wgt_tensor **out);
/* out = self; out[indices[0], .., indices[k-1]] (= or +=) values (broadcast to S + self.shape[k:]). */
wgt_status wgt_index_put(const wgt_tensor *self, const wgt_tensor *const *indices, int k, const wgt_tensor *values,
                         int accumulate, wgt_tensor **out);
wgt_status wgt_masked_fill(const wgt_tensor *x, const wgt_tensor *mask, double value, wgt_tensor **out);
/* 1-D results whose length is the number of set elements: these read a count back (a sync). */
wgt_status wgt_masked_select(const wgt_tensor *x, const wgt_tensor *mask, wgt_tensor **out);
wgt_status wgt_nonzero(const wgt_tensor *x, wgt_tensor **out); /* i64 [count, ndim] */
/* x's shape with a dim of `depth` inserted at axis; indices outside [-depth, depth) give off rows. */
wgt_status wgt_one_hot(const wgt_tensor *x, int64_t depth, int axis, double off_value, double on_value,
                       wgt_dtype dtype, wgt_tensor **out);
/* WGT_ERR_INVALID_ARGUMENT if an index op saw an out-of-range index since the last check. */
wgt_status wgt_index_check(wgt_context *ctx);

/* ---- shape and creation (src/ops/shape.c) ---- */
wgt_status wgt_tril(const wgt_tensor *x, int64_t k, wgt_tensor **out);
wgt_status wgt_triu(const wgt_tensor *x, int64_t k, wgt_tensor **out);
wgt_status wgt_arange(wgt_context *ctx, double start, double end, double step, wgt_dtype dtype, wgt_tensor **out);
wgt_status wgt_linspace(wgt_context *ctx, double start, double end, int64_t steps, wgt_dtype dtype, wgt_tensor **out);
wgt_status wgt_eye(wgt_context *ctx, int64_t n, int64_t m, wgt_dtype dtype, wgt_tensor **out);
/* Same dtype, same shape off dim (at most 64 tensors per call). */
wgt_status wgt_cat(const wgt_tensor *const *xs, int n, int dim, wgt_tensor **out);
wgt_status wgt_stack(const wgt_tensor *const *xs, int n, int dim, wgt_tensor **out);
/* Views (no copy): outs[i] gets sizes[i] along dim / torch.chunk's pieces (*n_out <= chunks). */
wgt_status wgt_split(const wgt_tensor *x, const int64_t *sizes, int n, int dim, wgt_tensor **outs);
wgt_status wgt_chunk(const wgt_tensor *x, int chunks, int dim, wgt_tensor **outs, int *n_out);
wgt_status wgt_flip(const wgt_tensor *x, const int *dims, int n, wgt_tensor **out);
/* dims NULL: roll the flattened tensor by shifts[0] (n == 1). */
wgt_status wgt_roll(const wgt_tensor *x, const int64_t *shifts, const int *dims, int n, wgt_tensor **out);
wgt_status wgt_repeat(const wgt_tensor *x, const int64_t *repeats, int n, wgt_tensor **out); /* n >= ndim */
/* pads[d] before and pads[ndim + d] after dim d (ONNX order; negative crops). */
wgt_status wgt_pad(const wgt_tensor *x, wgt_pad_mode mode, const int64_t *pads, double value, wgt_tensor **out);


/* ---- convolutions (src/ops/conv.c) ---- */
/* PyTorch's layouts: x [N, Cin, *S], weight [Cout, Cin / groups, *K] (transposed: [Cin, Cout /
 * groups, *K]), bias [Cout] or NULL, out [N, Cout, *O], with 1, 2 or 3 spatial dims (the weight's
 * rank minus 2; x has the same rank). f32, f16 and bf16 (x, weight and bias of one dtype), f32
 * accumulation; out has x's dtype. Zero padding. WGT_CONV_PATH=direct in the environment runs every
 * convolution through the direct kernel, not the GEMM or depthwise tiles (to compare them); the
 * depthwise tiles serve the CPU adapters, and GPUs with WGT_CONV_PATH=depthwise (the direct kernel
 * measured faster on the H200). */
typedef enum wgt_conv_padding {
    WGT_CONV_PAD_EXPLICIT = 0, /* pad_begin / pad_end per spatial dim */
    WGT_CONV_PAD_VALID,        /* none */
    WGT_CONV_PAD_SAME,         /* O = ceil(S / stride) (transposed: S * stride), an odd total pad's extra
                                  element at the end: PyTorch padding='same', ONNX SAME_UPPER */
    WGT_CONV_PAD_SAME_LOWER,   /* as SAME, the extra element at the beginning (ONNX SAME_LOWER) */
    WGT_CONV_PAD_COUNT
} wgt_conv_padding;

typedef struct wgt_conv_params {
    int64_t stride[3];         /* per spatial dim, outermost first; 0 means 1 */
    int64_t dilation[3];       /* 0 means 1 */
    int64_t pad_begin[3];      /* EXPLICIT: zeros before each spatial dim (transposed: cropped) */
    int64_t pad_end[3];        /* and after */
    int64_t output_padding[3]; /* transposed only: extra output at the end (< stride or dilation) */
    wgt_conv_padding padding;
    int groups;                /* 0 means 1; divides Cin and Cout */
} wgt_conv_params;

/* Convolution (torch.nn.functional.conv1d/2d/3d): O = (S + pad_begin + pad_end - dilation (K - 1)
 * - 1) / stride + 1. params NULL: stride 1, no padding, one group. */
wgt_status wgt_conv(const wgt_tensor *x, const wgt_tensor *weight, const wgt_tensor *bias,
                    const wgt_conv_params *params, wgt_tensor **out);
/* Transposed convolution (conv_transpose1d/2d/3d): O = (S - 1) stride - pad_begin - pad_end +
 * dilation (K - 1) + output_padding + 1. */
wgt_status wgt_conv_transpose(const wgt_tensor *x, const wgt_tensor *weight, const wgt_tensor *bias,
                              const wgt_conv_params *params, wgt_tensor **out);
/* The output's spatial sizes and the resolved pad_begin for x's spatial sizes S and kernel sizes K
 * (nsp dims); WGT_ERR_SHAPE / WGT_ERR_INVALID_ARGUMENT with a message naming the problem. */
wgt_status wgt_conv_output_shape(const wgt_conv_params *params, int transposed, int nsp, const int64_t *S,
                                 const int64_t *K, int64_t *O, int64_t *pad_begin);


/* ---- losses (src/ops/loss.c) and misc ops (src/ops/misc.c) ---- */
/* How a loss reduces its per-element values: PyTorch's reduction argument. BATCHMEAN (kl_div
 * only) is the sum divided by the input's first dim. The mean of no values is NaN, as PyTorch. */
typedef enum wgt_reduction {
    WGT_REDUCTION_NONE = 0,
    WGT_REDUCTION_MEAN,
    WGT_REDUCTION_SUM,
    WGT_REDUCTION_BATCHMEAN,
    WGT_REDUCTION_COUNT
} wgt_reduction;

/* ignore_index value that matches no target (ONNX without ignore_index). PyTorch's default is -100. */
#define WGT_NO_IGNORE_INDEX INT64_MIN

/* Losses take float inputs (f32, f16, bf16) and return the input's dtype: the per-element losses
 * (NONE) or a 0-D tensor. Class dims follow PyTorch: input [N, C, d1...] (or [C]).
 * cross_entropy, class indices: target [N, d1...] (or 0-D) of any integer dtype, log_softmax over
 * C and the target's entry picked in one pass over the logits; weight [C] or NULL; targets equal
 * to ignore_index add nothing (mean divides by the summed weight of the others); label_smoothing
 * in [0, 1] mixes in the mean over classes as PyTorch does. Class probabilities: target of the
 * input's shape and a float dtype (mean divides by N * d1...). A class index out of [0, C) that
 * is not ignore_index gives NaN on the device and flags the context (wgt_index_check). */
wgt_status wgt_cross_entropy(const wgt_tensor *input, const wgt_tensor *target, const wgt_tensor *weight,
                             int64_t ignore_index, double label_smoothing, wgt_reduction reduction, wgt_tensor **out);
/* input: log-probabilities [N, C, d1...] (or [C]); target, weight, ignore_index as above. */
wgt_status wgt_nll_loss(const wgt_tensor *input, const wgt_tensor *target, const wgt_tensor *weight,
                        int64_t ignore_index, wgt_reduction reduction, wgt_tensor **out);
/* Elementwise losses; input and target broadcast (PyTorch warns, then broadcasts). */
wgt_status wgt_mse_loss(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, wgt_tensor **out);
wgt_status wgt_l1_loss(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, wgt_tensor **out);
/* |d| < beta ? 0.5 d^2 / beta : |d| - 0.5 beta (beta 0: l1); beta >= 0. */
wgt_status wgt_smooth_l1_loss(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction,
                              double beta, wgt_tensor **out);
/* |d| <= delta ? 0.5 d^2 : delta (|d| - 0.5 delta); delta > 0. */
wgt_status wgt_huber_loss(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction,
                          double delta, wgt_tensor **out);
/* -weight (t log(x) + (1 - t) log(1 - x)), each log clamped to >= -100 (PyTorch); weight broadcasts
 * to the input (or NULL). */
wgt_status wgt_binary_cross_entropy(const wgt_tensor *input, const wgt_tensor *target, const wgt_tensor *weight,
                                    wgt_reduction reduction, wgt_tensor **out);
/* From logits, in the stable form -weight (pos_weight t log_sigmoid(x) + (1 - t) log_sigmoid(-x));
 * pos_weight broadcasts to the input (usually [C]); weight and pos_weight may be NULL. */
wgt_status wgt_binary_cross_entropy_with_logits(const wgt_tensor *input, const wgt_tensor *target,
                                                const wgt_tensor *weight, const wgt_tensor *pos_weight,
                                                wgt_reduction reduction, wgt_tensor **out);
/* input: log-probabilities. log_target 0: t (log t - input), 0 where t == 0 (xlogy); 1: exp(t) (t - input).
 * BATCHMEAN divides the sum by input's dim 0. */
wgt_status wgt_kl_div(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, int log_target,
                      wgt_tensor **out);
/* sum(x1 x2) / (max(|x1|, eps) max(|x2|, eps)) along dim of the broadcast shape (PyTorch >= 1.12 clamps
 * each norm; eps 1e-8 is its default); out drops dim, in the promoted float dtype. */
wgt_status wgt_cosine_similarity(const wgt_tensor *x1, const wgt_tensor *x2, int dim, double eps, wgt_tensor **out);

/* n-th forward difference along dim (torch.diff): out[i] = x[i + 1] - x[i], n times, after
 * prepend/append (may be NULL; x's shape off dim) are joined on. bool uses logical xor. n >= 0. */
wgt_status wgt_diff(const wgt_tensor *x, int n, int dim, const wgt_tensor *prepend, const wgt_tensor *append,
                    wgt_tensor **out);
/* Sum of the main diagonal of a 2-D tensor: 0-D, wgt_reduce_result_dtype(WGT_REDUCE_SUM, dtype). */
wgt_status wgt_trace(const wgt_tensor *x, wgt_tensor **out);
/* torch.diag: 1-D x [n] -> 2-D [n + |offset|]^2 with x on diagonal offset (> 0 above the main one);
 * 2-D x -> 1-D copy of its diagonal offset (empty when the offset is past the matrix). */
wgt_status wgt_diag(const wgt_tensor *x, int64_t offset, wgt_tensor **out);
/* torch.diag_embed: x [..., n] -> the last dim placed on diagonal offset of dims (dim1, dim2) of a
 * zero tensor of x.ndim + 1 dims, each n + |offset| long (defaults: 0, -2, -1). */
wgt_status wgt_diag_embed(const wgt_tensor *x, int64_t offset, int dim1, int dim2, wgt_tensor **out);
/* torch.meshgrid: n 1-D (or 0-D) tensors -> n views (no copies) of shape (len0, len1, ...); xy:
 * indexing="xy", the first two dims swapped. outs[i] are new handles (free each). n <= 8. */
wgt_status wgt_meshgrid(const wgt_tensor *const *xs, int n, int xy, wgt_tensor **outs);
/* torch.cdist's compute_mode: when the p = 2 distance goes through a matrix product
 * (|a|^2 + |b|^2 - 2 a.b, clamped at 0: fast, but relative error ~1e-7 |a|^2 / d^2 for close points). */
typedef enum wgt_cdist_mode {
    WGT_CDIST_MM_IF_NECESSARY = 0, /* PyTorch's default: the product when P > 25 or R > 25 */
    WGT_CDIST_MM,                  /* use_mm_for_euclid_dist: always */
    WGT_CDIST_NO_MM,               /* donot_use_mm_for_euclid_dist: never (direct differences) */
} wgt_cdist_mode;
/* x1 [B..., P, M], x2 [B..., R, M] (batch dims broadcast) -> [B..., P, R] p-norm distances:
 * p >= 0 (0 counts nonzero differences; INFINITY the largest). Floats only. */
wgt_status wgt_cdist(const wgt_tensor *x1, const wgt_tensor *x2, double p, wgt_cdist_mode mode, wgt_tensor **out);


/* ---- pooling and resampling (src/ops/pool.c, src/ops/resample.c) ---- */
/* PyTorch semantics over the last `spatial` (1 or 2) dims of x [..., *S] (usually [N, C, *S]; every
 * leading dim is a batch dim). Arrays hold one entry per spatial dim, outermost first. The output
 * has x's dtype; max pools take integers too, the others f32/f16/bf16. Indices (may be NULL) are
 * i32 flat positions within one [*S] plane, as PyTorch's return_indices (which gives i64). */
typedef struct wgt_pool_params {
    int64_t kernel[2];
    int64_t stride[2];        /* 0: the kernel size (PyTorch's default) */
    int64_t padding[2];       /* on both sides (implicit -inf / zeros): at most kernel / 2 (PyTorch's
                                 bound), or below the kernel when dilation is 1 (ONNX's pads) */
    int64_t dilation[2];      /* 0 means 1; max pools only */
    int ceil_mode;            /* O = ceil((S + 2 pad - dil (K - 1) - 1) / stride) + 1, but the last
                                 window must start inside S + pad (PyTorch's rule) */
    int count_include_pad;    /* avg: padded zeros count in the divisor */
    int64_t divisor_override; /* avg: > 0 replaces the divisor */
} wgt_pool_params;
/* max_pool1d/2d. A NaN in a window is its maximum (index: the last NaN), as PyTorch. */
wgt_status wgt_max_pool(const wgt_tensor *x, int spatial, const wgt_pool_params *p, wgt_tensor **out,
                        wgt_tensor **indices);
/* avg_pool1d/2d (dilation must be 1). */
wgt_status wgt_avg_pool(const wgt_tensor *x, int spatial, const wgt_pool_params *p, wgt_tensor **out);
/* adaptive_avg_pool / adaptive_max_pool 1d/2d: output position o of a dim of input size S and output
 * size O covers [floor(o S / O), ceil((o + 1) S / O)). output_size[d] > 0 (S may not be 0). */
wgt_status wgt_adaptive_avg_pool(const wgt_tensor *x, int spatial, const int64_t *output_size, wgt_tensor **out);
wgt_status wgt_adaptive_max_pool(const wgt_tensor *x, int spatial, const int64_t *output_size, wgt_tensor **out,
                                 wgt_tensor **indices);

typedef enum wgt_interp_mode {
    WGT_INTERP_NEAREST = 0,  /* 'nearest': src = min(floor(dst * scale), S - 1) (PyTorch's, not centred) */
    WGT_INTERP_NEAREST_EXACT,/* 'nearest-exact': src = min(floor((dst + 0.5) * scale), S - 1) */
    WGT_INTERP_LINEAR,       /* 'linear' (1 spatial dim) / 'bilinear' (2) */
    WGT_INTERP_CUBIC,        /* 'bicubic' (Keys, A = -0.75, edge samples repeated); 1-D too */
    WGT_INTERP_COUNT
} wgt_interp_mode;
const char *wgt_interp_mode_name(wgt_interp_mode mode);
/* F.interpolate over the last `spatial` (1 or 2) dims of x [..., *S]. size: output sizes, or NULL
 * for floor(S * scales[d]). scales: the factors the coordinates use (PyTorch's scale_factor with
 * recompute_scale_factor off), or NULL (or an entry <= 0) for S / O. align_corners (linear and
 * cubic only): corner pixel centres map to each other, scale (S - 1) / (O - 1). Coordinates are
 * computed in f32 as PyTorch does; f32/f16/bf16 (nearest takes integers too). */
wgt_status wgt_interpolate(const wgt_tensor *x, int spatial, wgt_interp_mode mode, const int64_t *size,
                           const double *scales, int align_corners, wgt_tensor **out);

/* Bicubic: Keys' A = -0.75 over 4 x 4 taps, each tap's coordinate padded as the mode says (zeros
 * reads 0 outside), PyTorch's; a NaN or infinite grid coordinate samples at -100. */
typedef enum wgt_grid_mode { WGT_GRID_BILINEAR = 0, WGT_GRID_NEAREST, WGT_GRID_BICUBIC, WGT_GRID_MODE_COUNT } wgt_grid_mode;
typedef enum wgt_grid_padding {
    WGT_GRID_PAD_ZEROS = 0, WGT_GRID_PAD_BORDER, WGT_GRID_PAD_REFLECTION, WGT_GRID_PAD_COUNT
} wgt_grid_padding;
/* F.grid_sample, 2-D: x [N, C, H, W], grid [N, Ho, Wo, 2] of (x, y) in [-1, 1] (align_corners: -1
 * and 1 are the centres of the corner pixels; else their outer edges) -> out [N, C, Ho, Wo] of x's
 * dtype. Nearest rounds half to even (nearbyint). x and grid f32/f16/bf16 (any mix). */
wgt_status wgt_grid_sample(const wgt_tensor *x, const wgt_tensor *grid, wgt_grid_mode mode, wgt_grid_padding padding,
                           int align_corners, wgt_tensor **out);

/* ---- random numbers (src/ops/random.c) ---- */
/* A counter-based generator: Philox4x32-10 keyed by the seed, on a 128-bit counter made of the
 * offset (32-bit words of the stream consumed). Every call starts at the offset (a multiple of 4)
 * and advances it by the words it draws (one per element, rounded up to 4; randperm 4;
 * multinomial one per sample), so successive calls differ and a reseed, or setting the offset
 * back, replays them. Results are the same integers on every adapter and on the CPU reference
 * (WGT_BACKEND=cpu); floats come from them through exact mappings (u = (word >> 8) * 2^-24), normal
 * through f32 Box-Muller (within the transcendental error of the adapter). A generator is plain
 * host state, usable with any context; not thread-safe. */
typedef struct wgt_generator wgt_generator;
wgt_status wgt_generator_create(uint64_t seed, wgt_generator **out);
void wgt_generator_free(wgt_generator *g);
void wgt_generator_manual_seed(wgt_generator *g, uint64_t seed); /* and offset 0 */
uint64_t wgt_generator_seed(const wgt_generator *g);
uint64_t wgt_generator_offset(const wgt_generator *g);
void wgt_generator_set_offset(wgt_generator *g, uint64_t offset); /* rounded up to a multiple of 4 */
/* The raw 32-bit words of the stream (u32). */
wgt_status wgt_random_bits(wgt_context *ctx, wgt_generator *gen, int ndim, const int64_t *shape, wgt_tensor **out);
/* torch.rand * (hi - lo) + lo: fma(u, hi - lo, lo) in f32, rounded to dtype (f32/f16/bf16); like
 * PyTorch's, rounding may give hi itself. */
wgt_status wgt_rand_uniform(wgt_context *ctx, wgt_generator *gen, wgt_dtype dtype, int ndim, const int64_t *shape,
                            double lo, double hi, wgt_tensor **out);
/* mean + std * z, z standard normal by Box-Muller (|z| <= 5.77: u1 >= 2^-24). f32/f16/bf16. */
wgt_status wgt_rand_normal(wgt_context *ctx, wgt_generator *gen, wgt_dtype dtype, int ndim, const int64_t *shape,
                           double mean, double std, wgt_tensor **out);
/* 1 with probability p (in [0, 1]), else 0: u < p in f32. Floats, integers or bool. */
wgt_status wgt_bernoulli_scalar(wgt_context *ctx, wgt_generator *gen, wgt_dtype dtype, int ndim, const int64_t *shape,
                                double p, wgt_tensor **out);
/* torch.bernoulli(p): p f32/f16/bf16 of any layout; out has p's shape and dtype. A p outside
 * [0, 1] acts as clamped (not checked: that would need a sync); NaN gives 0. */
wgt_status wgt_bernoulli(wgt_generator *gen, const wgt_tensor *p, wgt_tensor **out);
/* Integers in [lo, hi): lo + floor(word * (hi - lo) / 2^32) (bias below (hi - lo) / 2^32). Integer
 * dtypes and floats; [lo, hi) must lie in the dtype's exact range and within 32 bits. */
wgt_status wgt_randint(wgt_context *ctx, wgt_generator *gen, int64_t lo, int64_t hi, wgt_dtype dtype, int ndim,
                       const int64_t *shape, wgt_tensor **out);
/* A permutation of 0..n-1 [n] (n < 2^31). n <= 2048: a Fisher-Yates shuffle in one workgroup
 * (every permutation equally likely). Larger n: a keyed 6-round Feistel network with cycle walking,
 * one element per invocation (no sort): every position is uniform, but it is a keyed pseudorandom
 * permutation rather than a shuffle. */
wgt_status wgt_randperm(wgt_context *ctx, wgt_generator *gen, int64_t n, wgt_dtype dtype, wgt_tensor **out);
/* torch.multinomial: probs [K] or [N, K] (f32/f16/bf16 weights, need not sum to 1; negative and
 * NaN weigh 0) -> out [num_samples] or [N, num_samples] category indices (i32 or i64). Without
 * replacement num_samples <= K; a row whose weights are exhausted gives -1 for its remaining
 * samples (PyTorch raises: checking would need a sync). With replacement each row draws in
 * parallel (O(K / 256) per sample); without, one invocation per row draws in turn (O(K / 256 + 256)
 * per sample). */
wgt_status wgt_multinomial(wgt_generator *gen, const wgt_tensor *probs, int64_t num_samples, int replacement,
                           wgt_dtype dtype, wgt_tensor **out);
/* F.dropout: training and p > 0: out = x * mask / (1 - p) (x's dtype, f32/f16/bf16; a dropped NaN
 * or inf stays NaN as in PyTorch), mask (bool, x's shape; may be NULL) = the kept elements, kept
 * with probability 1 - p. Not training or p = 0: a copy of x and a mask of ones, no numbers drawn. */
wgt_status wgt_dropout(wgt_generator *gen, const wgt_tensor *x, double p, int training, wgt_tensor **out,
                       wgt_tensor **mask);

/* ---- sorting and searching (src/ops/sort.c, src/ops/search.c) ---- */
/* Indices are i32 positions along the dim (the codebase's index dtype; cast for i64). Sorts are
 * stable (equal values keep their order, -0 equals +0) and NaN counts as above +inf: last
 * ascending, first descending, as PyTorch. f32/f16/bf16 and the 8/32-bit integers and bool run on
 * the GPU; i64 runs the reference (32-bit keys). values or indices may be NULL (not both). */
wgt_status wgt_sort(const wgt_tensor *x, int dim, int descending, wgt_tensor **values, wgt_tensor **indices);
wgt_status wgt_argsort(const wgt_tensor *x, int dim, int descending, wgt_tensor **indices);
/* The k largest (or smallest) along dim, always sorted (the flag is accepted for PyTorch's
 * signature); equal values: the lower index first (ONNX TopK). x's shape with dim = k. */
wgt_status wgt_topk(const wgt_tensor *x, int64_t k, int dim, int largest, int sorted, wgt_tensor **values,
                    wgt_tensor **indices);
/* The k-th smallest (k from 1) along dim: the element at position k - 1 of the stable sort. */
wgt_status wgt_kthvalue(const wgt_tensor *x, int64_t k, int dim, int keepdim, wgt_tensor **values,
                        wgt_tensor **indices);
/* The lower median along dim (position (n - 1) / 2 of the sorted row); a row holding NaN gives its
 * first NaN and that NaN's index, as torch.median. */
wgt_status wgt_median(const wgt_tensor *x, int dim, int keepdim, wgt_tensor **values, wgt_tensor **indices);
/* torch.unique(x, sorted=True) over the flattened x: values [count] ascending (each NaN its own
 * value), and optionally inverse (i32, x's shape), counts and first (i32 [count]: the flat index
 * of each value's first occurrence, ONNX Unique's indices). Reads the count back (a sync). */
wgt_status wgt_unique(const wgt_tensor *x, wgt_tensor **values, wgt_tensor **inverse, wgt_tensor **counts,
                      wgt_tensor **first);
/* i32 insertion indices of values into the last dim of sorted_sequence (1-D, or with values'
 * leading dims); right: after equal elements. sorter (may be NULL, an integer tensor of the
 * sequence's shape) reads the sequence in that order (indices outside [0, m) are clamped on the
 * GPU). Both tensors must have one dtype (not bool). */
wgt_status wgt_searchsorted(const wgt_tensor *sorted_sequence, const wgt_tensor *values, int right,
                            const wgt_tensor *sorter, wgt_tensor **out);
/* torch.bucketize: boundaries 1-D ascending; right 0: boundaries[i-1] < x <= boundaries[i]. */
wgt_status wgt_bucketize(const wgt_tensor *x, const wgt_tensor *boundaries, int right, wgt_tensor **out);
/* torch.histc of a float tensor: out [bins] (x's dtype); min == max uses the data's range (NaN
 * ignored; PyTorch raises on NaN there); bins computed in f32. */
wgt_status wgt_histc(const wgt_tensor *x, int64_t bins, double min, double max, wgt_tensor **out);

/* ---- SwiGLU (src/ops/fused.c) ---- */
/* out [..., D] = silu(x[..., :D]) * x[..., D:] for x [..., 2D]: SwiGLU over a fused gate/up matmul. */
wgt_status wgt_swiglu(const wgt_tensor *x, wgt_tensor **out);


/* ------------------------------------------------------------------------------------------------
 * Graph capture (src/graph; notes/GRAPH.md)
 *
 * Record the GPU work of a sequence of op calls once, replay it with one submit. Ops called
 * between wgt_graph_begin and wgt_graph_end run as usual (their results are computed once) and
 * every dispatch, copy and upload they make is recorded with its pipeline, bindings, uniform
 * bytes and grid. wgt_graph_replay then re-encodes the whole list into one command buffer: one
 * submit, no bind group, buffer or host allocation per replay. The tensors the captured ops
 * returned are the graph's outputs: keep their handles, each replay rewrites them in place (read
 * them with wgt_tensor_to_host after it). Every buffer the graph touches, intermediates the
 * caller freed during capture included, stays reserved for the graph until wgt_graph_free;
 * intermediates (made and freed during the capture) whose live ranges do not overlap share one
 * buffer (memory planning at wgt_graph_end: wgt_graph_stats.peak_bytes; WGT_GRAPH_PLAN=0 off).
 * Before that, wgt_graph_end rewrites the commands: products that share an input become one
 * (WGT_GRAPH_MERGE=0 off); a one-token step's rms_norm, SwiGLU and residual add around a decode
 * product, and the rotation with the cache writes after a q/k/v product, run as the decoder's
 * fused kernels (WGT_GRAPH_ROUTE=0 off); chains of elementwise ops become one generated kernel
 * each, also as the loads and stores of reductions, norms, softmax and decode products
 * (WGT_GRAPH_FUSE=0 off). Replays equal eager execution bit for bit, but for routed products
 * (within rounding: fused_linear sums in its own order, as the hand-fused ops do).
 * A training step (forward, wgt_backward, wgt_optimizer_step) captures like any ops: declare the
 * optimizer's next step count as a WGT_GRAPH_STEP scalar and set it before each replay (the
 * learning rate stays the captured one; wgt_optimizer_steps does not count replays).
 *
 * Inputs: the tensors named at wgt_graph_begin. A replay takes tensors of the same shape and
 * dtype (WGT_ERR_SHAPE / WGT_ERR_DTYPE naming the input and both values otherwise) and copies them
 * into the captured inputs' storage first; a new input must be contiguous at a 4-byte aligned
 * offset, or have the captured input's exact layout (strides and offset; WGT_ERR_INVALID_ARGUMENT
 * naming the strides otherwise). inputs == NULL (or a NULL entry) keeps what the captured storage
 * holds. Anything else read by the ops (weights, caches, constants uploaded during capture) is
 * read where it was: change it in place (wgt_tensor_assign) and the replay sees it.
 *
 * Scalars: a value that changes between replays (a position, a length, a seed) is declared during
 * capture with wgt_graph_scalar(ctx, name, role, value, &i) and then passed to the ops as that
 * value. An op whose parameter may come from a scalar declares that parameter, with its role, to
 * the device layer: WGT_GRAPH_SEED the random ops' seed (wgt_generator_seed);
 * WGT_GRAPH_POSITION wgt_qkv_rope_cache's and wgt_fused_qkv_rope_cache's pos0 and wgt_sdpa's
 * causal offset on its decode kernel; WGT_GRAPH_OFFSET the element offset of a wgt_tensor_assign
 * destination view of a 4-byte dtype (notes/GRAPH.md). The parameter is tied to the scalar of its
 * role that has its value at capture, so scalars of one role must have distinct values
 * (WGT_ERR_INVALID_ARGUMENT otherwise); a parameter of another role, or one no op declares (a
 * shape), stays what it was, whatever its value. wgt_graph_set_scalar changes it for the next
 * replays.
 *
 * Segments: work that needs the host mid-graph (a download: wgt_tensor_to_host, the count of an op
 * with a data-dependent shape such as nonzero, unique or masked_select, an op running the CPU
 * reference because no GPU kernel takes the dtype) runs during the capture as usual and ends a
 * segment (logged under WGT_DEBUG=1). What the host made of the bytes it read (an output's
 * shape, an upload) is baked into the commands that follow, which holds while those bytes stay
 * the same: a replay runs segment by segment (one submit each), reads the bytes again at each
 * end, and goes on only if they equal the capture's; otherwise it stops there with
 * WGT_ERR_STALE naming the read (the earlier segments have run: their in-place writes stay),
 * and the graph must be captured again. wgt_graph_cache does that by itself. A split readback
 * (wgt_model_generate's) is still refused during a capture (WGT_ERR_UNSUPPORTED; the capture
 * fails). A CPU-reference context cannot capture (WGT_ERR_UNSUPPORTED). One capture at a time
 * per context; free graphs before their context (a graph left when its context is freed only
 * releases its host memory).
 * --------------------------------------------------------------------------------------------- */

typedef struct wgt_graph wgt_graph;

/* Start recording on ctx; inputs[0 .. n_inputs-1] are the graph's inputs (may be 0 / NULL). */
wgt_status wgt_graph_begin(wgt_context *ctx, int n_inputs, const wgt_tensor *const *inputs);
/* What a graph scalar stands for: only the op parameters of its role are tied to it. */
typedef enum wgt_graph_role {
    WGT_GRAPH_POSITION = 0, /* a token position: RoPE's, the KV cache rows written, attention's causal offset */
    WGT_GRAPH_SEED,         /* the random ops' seed */
    WGT_GRAPH_OFFSET,       /* a view's element offset: the destination of wgt_tensor_assign */
    WGT_GRAPH_STEP,         /* an optimizer's step count (1-based, the step being run): Adam's bias
                               corrections, SGD's first step */
    WGT_GRAPH_ROLE_COUNT
} wgt_graph_role;
/* During capture: a scalar named name (unique, < 32 bytes) of role role whose value is value
 * now; *index (may be NULL) gets its number for wgt_graph_set_scalar. */
wgt_status wgt_graph_scalar(wgt_context *ctx, const char *name, wgt_graph_role role, int64_t value, int *index);
/* 1 while a capture is open on ctx. */
int wgt_graph_capturing(const wgt_context *ctx);
/* End the capture. On success *out is the graph; on failure the capture's first error is
 * returned (an op that cannot be captured, out of memory) and *out is NULL. Either way the
 * capture is over. */
wgt_status wgt_graph_end(wgt_context *ctx, wgt_graph **out);
/* Set scalar index (from wgt_graph_scalar) for the next replays. */
wgt_status wgt_graph_set_scalar(wgt_graph *g, int index, int64_t value);
/* Run the graph again on new inputs (n_inputs must be the number named at capture, or inputs
 * NULL). Submits and returns at once, like an op. */
wgt_status wgt_graph_replay(wgt_graph *g, int n_inputs, const wgt_tensor *const *inputs);

typedef struct wgt_graph_stats {
    int dispatches;        /* compute dispatches per replay */
    int copies;            /* buffer copies, clears and constant uploads per replay */
    int bind_groups;       /* made once, at wgt_graph_end */
    int inputs, scalars, scalar_fields; /* scalar_fields: uniform fields patched from scalars */
    int pinned_buffers;    /* pool buffers the graph keeps reserved */
    uint64_t pinned_bytes;
    uint64_t uniform_bytes;   /* the graph's own uniform buffer */
    uint64_t constant_bytes;  /* bytes uploaded during capture, replayed from a device copy */
    int fused_kernels;     /* generated kernels that each run a chain of elementwise ops */
    int fused_ops;         /* the ops inside them (dispatches saved: fused_ops - fused_kernels) */
    /* Memory planning (at wgt_graph_end; WGT_GRAPH_PLAN=0 turns it off): intermediates (buffers
     * made and released during the capture, not inputs) whose live ranges do not overlap share
     * one buffer; the rest go back to the pool. */
    uint64_t peak_bytes;      /* device memory the graph's buffers hold (the pinned ones, after planning) */
    uint64_t unplanned_bytes; /* the same without planning */
    int planned_buffers;      /* intermediates that run in another's buffer or were fused away */
    int segments;             /* 1 + the host reads mid-graph: a replay makes one submit per segment */
} wgt_graph_stats;
wgt_status wgt_graph_get_stats(const wgt_graph *g, wgt_graph_stats *out);
/* Release the graph and unreserve its buffers. NULL is a no-op. */
void wgt_graph_free(wgt_graph *g);

/* A graph cache: a function of tensors captured once per key and replayed after. The key is
 * each input's dtype and shape and the number of scalars; a call with a key seen before replays
 * that graph on the new inputs (copied into the graph's own input tensors, so the caller's are
 * never written), a new key calls fn under capture (fn's work runs, as in any capture). A replay
 * that finds a host read changed (WGT_ERR_STALE, see Segments) drops the graph and captures
 * again on the same inputs, so a function with data-dependent shapes is right on every call
 * (and captured again whenever the data behind its host reads changes; counted in the stats).
 * Past max_graphs keys the least recently used graph is freed.
 * fn gets the cache's copies of the inputs and the scalars' values; it declares scalar i with
 * wgt_graph_scalar(ctx, name, role, scalars[i], NULL) in order, passes the value to its ops, and
 * returns its outputs (at most max_outputs new handles, which the cache keeps; *n_outputs set).
 * fn must not keep tensors past its return other than through its outputs, and its work must be
 * a function of its inputs and of state it reads in place (weights): in-place writes to state
 * (an optimizer step) run once per call, and twice when a stale read makes the cache capture
 * again after the segments before it ran. wgt_graph_cache_run gives *n_outputs new handles that
 * share the graph's output storage: the next call with the same key rewrites them. */
typedef wgt_status (*wgt_graph_fn)(wgt_context *ctx, void *user, int n_inputs, wgt_tensor *const *inputs,
                                   const int64_t *scalars, int max_outputs, wgt_tensor **outputs, int *n_outputs);
typedef struct wgt_graph_cache wgt_graph_cache;
typedef struct wgt_graph_cache_stats {
    int graphs;          /* held now */
    int64_t calls;       /* wgt_graph_cache_run calls that succeeded */
    int64_t replays;     /* calls that replayed a held graph */
    int64_t captures;    /* calls that captured (a new key, or a stale graph) */
    int64_t stale;       /* replays stopped by a changed host read (then captured again) */
    int64_t evictions;   /* graphs freed for max_graphs */
} wgt_graph_cache_stats;
/* n_scalars scalar values go to fn at every call (0 .. 16); max_graphs >= 1. */
wgt_status wgt_graph_cache_create(wgt_context *ctx, wgt_graph_fn fn, void *user, int n_scalars, int max_graphs,
                                  wgt_graph_cache **out);
/* Run fn on inputs (each a tensor of ctx) with the given scalar values (NULL when n_scalars is 0):
 * outputs[0 .. *n_outputs-1] get new handles to the results. */
wgt_status wgt_graph_cache_run(wgt_graph_cache *c, int n_inputs, const wgt_tensor *const *inputs,
                               const int64_t *scalars, int max_outputs, wgt_tensor **outputs, int *n_outputs);
wgt_status wgt_graph_cache_get_stats(const wgt_graph_cache *c, wgt_graph_cache_stats *out);
/* Free every graph and the cache. NULL is a no-op. */
void wgt_graph_cache_free(wgt_graph_cache *c);

/* ------------------------------------------------------------------------------------------------
 * Autograd (src/autograd)
 *
 * Reverse mode, PyTorch's semantics. Mark leaves with wgt_tensor_set_requires_grad; every op
 * with a backward rule (`wgt ops --check --grad` lists them) on a tensor that requires grad
 * records a graph node while grad mode is on; wgt_backward walks the graph from a loss and adds
 * each leaf's gradient into its .grad (accumulating across calls until wgt_tensor_zero_grad).
 * Gradients are f32 whatever the tensor's dtype (half tensors accumulate in f32) and contiguous.
 * A graph keeps only the tensors its formulas need; wgt_backward frees it as it walks (unless
 * retain_graph), and the rest goes with the last result handle. Handles made by wgt_tensor_ref
 * are the same tensor (they share requires_grad and .grad); views and op results are new
 * tensors. Integer and boolean results (argmax, comparisons, sort indices) never require grad,
 * as in PyTorch: they are constants of the step. A float result of an op without a gradient
 * (histc, unique, cdist, ... notes/AUTOGRAD.md lists them) on the path from a leaf to the loss
 * makes wgt_backward fail with WGT_ERR_UNSUPPORTED naming it. Grad mode is per thread. Higher-order gradients are not supported (formulas run with grad mode off).
 * --------------------------------------------------------------------------------------------- */

/* Only float leaves (f32, f16, bf16) take the flag: WGT_ERR_DTYPE otherwise, WGT_ERR_MISUSE on an
 * op result (it requires grad through its inputs). */
wgt_status wgt_tensor_set_requires_grad(wgt_tensor *t, int requires_grad);
/* 1 for a leaf with the flag and for an op result recorded from one. */
int wgt_tensor_requires_grad(const wgt_tensor *t);
/* 1 unless t was made by a recorded op. */
int wgt_tensor_is_leaf(const wgt_tensor *t);
/* *out = a NEW reference to t's accumulated gradient (free it; it shares storage with .grad, so
 * an optimizer or wgt_clip_grad_norm may update it in place), or NULL when there is none yet. */
wgt_status wgt_tensor_grad(const wgt_tensor *t, wgt_tensor **out);
/* Drop t's .grad (PyTorch's zero_grad(set_to_none=True)): the next backward starts it afresh. */
void wgt_tensor_zero_grad(wgt_tensor *t);
/* Backpropagate from loss. grad_output: the gradient of the loss (its shape, any float dtype), or
 * NULL for a one-element loss (gradient 1). retain_graph 0 frees the graph's saved tensors as it
 * goes: a second backward through it is WGT_ERR_MISUSE saying so; 1 keeps it for another call.
 * WGT_ERR_MISUSE when the loss does not require grad. */
wgt_status wgt_backward(const wgt_tensor *loss, const wgt_tensor *grad_output, int retain_graph);
/* Grad mode of the calling thread (default 1). A no-grad scope:
 *   int was = wgt_grad_mode_get(); wgt_grad_mode_set(0); ... ; wgt_grad_mode_set(was); */
void wgt_grad_mode_set(int enabled);
int wgt_grad_mode_get(void);
/* A new handle on t's storage that is a leaf without requires_grad (no copy). */
wgt_status wgt_tensor_detach(const wgt_tensor *t, wgt_tensor **out);

/* ------------------------------------------------------------------------------------------------
 * Optimizers (src/autograd/optim.c)
 *
 * torch.optim's SGD, Adam and AdamW (the single-tensor algorithms its documentation writes out)
 * over a fixed list of parameter tensors, updated in place on the device: one fused kernel
 * dispatch per parameter per step, no wait for the device. The optimizer does not know the
 * autograd tape: each step is given the gradients (the trainer passes each parameter's .grad).
 * Parameters are contiguous f32, f16 or bf16 tensors; state is f32. Half parameters get an f32
 * master copy (made from their values at creation) on which the update runs; after each step the
 * half tensor receives the master rounded to nearest (mixed precision). Gradients have their
 * parameter's shape, f32 or the parameter's dtype, any layout.
 * Step counts are per parameter, as in torch: a parameter given no gradient at a step (a NULL
 * entry) is left alone, its state unchanged and its count not advanced.
 * --------------------------------------------------------------------------------------------- */

typedef struct wgt_optimizer wgt_optimizer;

typedef enum wgt_optimizer_kind {
    WGT_OPTIM_SGD = 0,   /* torch.optim.SGD: momentum, dampening, nesterov, L2 weight decay */
    WGT_OPTIM_ADAM = 1,  /* torch.optim.Adam: weight decay is L2 (added to the gradient) */
    WGT_OPTIM_ADAMW = 2, /* torch.optim.AdamW: decoupled decay, p *= 1 - lr * weight_decay first */
} wgt_optimizer_kind;

typedef struct wgt_optimizer_options {
    wgt_optimizer_kind kind;
    double lr;           /* >= 0 */
    double weight_decay; /* >= 0; every parameter's unless wgt_optimizer_set_weight_decay */
    double momentum;     /* SGD, >= 0; 0: no momentum buffer */
    double dampening;    /* SGD */
    int nesterov;        /* SGD: needs momentum > 0 and dampening 0 (torch refuses otherwise) */
    double beta1, beta2; /* Adam/AdamW, each in [0, 1) */
    double eps;          /* Adam/AdamW, >= 0 */
    int amsgrad;         /* Adam/AdamW: keep the running maximum of exp_avg_sq */
} wgt_optimizer_options;

/* torch's defaults for a kind: lr 1e-3; SGD momentum 0, dampening 0; Adam/AdamW betas (0.9,
 * 0.999), eps 1e-8; weight decay 0 (AdamW: 1e-2). */
wgt_optimizer_options wgt_optimizer_defaults(wgt_optimizer_kind kind);

/* An optimizer over params[0 .. n-1] (references are kept; the tensors are written in place by
 * each step). WGT_ERR_INVALID_ARGUMENT for a bad option (named), WGT_ERR_DTYPE / WGT_ERR_SHAPE for
 * a parameter that is not a contiguous float tensor, or one listed twice. */
wgt_status wgt_optimizer_create(wgt_context *ctx, const wgt_optimizer_options *opts, wgt_tensor *const *params,
                                int n, wgt_optimizer **out);
/* One step: grads[i] is the gradient of params[i], or NULL (parameter i skipped this step). */
wgt_status wgt_optimizer_step(wgt_optimizer *opt, const wgt_tensor *const *grads);
/* The learning rate of the following steps (a schedule sets it before each step). */
wgt_status wgt_optimizer_set_lr(wgt_optimizer *opt, double lr);
double wgt_optimizer_lr(const wgt_optimizer *opt);
/* Parameter i's own weight decay, as a torch param group gives it (biases and norm weights are
 * often given 0); saved and loaded with the state. */
wgt_status wgt_optimizer_set_weight_decay(wgt_optimizer *opt, int i, double weight_decay);
wgt_optimizer_options wgt_optimizer_get_options(const wgt_optimizer *opt);
/* Calls of wgt_optimizer_step so far, and the step count of parameter i (its updates so far). */
int64_t wgt_optimizer_steps(const wgt_optimizer *opt);
int64_t wgt_optimizer_param_steps(const wgt_optimizer *opt, int i);
/* A new reference to one state tensor of parameter i, named as torch's state_dict names it:
 * "momentum_buffer" (SGD with momentum), "exp_avg", "exp_avg_sq", "max_exp_avg_sq" (amsgrad), or
 * "master" (the f32 copy of a half parameter). WGT_ERR_NOT_FOUND when the parameter has no such
 * state (yet: SGD's buffer is made by the first step, as torch does). */
wgt_status wgt_optimizer_state(const wgt_optimizer *opt, int i, const char *name, wgt_tensor **out);
/* Save the state as safetensors: tensors "<i>.<state name>" (f32, the parameter's shape), and in
 * the metadata the format ("wgt.optimizer/1"), kind, hyper-parameters (%.17g, so they read back
 * exactly), step counts ("steps", "<i>.steps"), n_params and each parameter's weight decay, dtype
 * and shape. Written to a temporary file, then renamed. */
wgt_status wgt_optimizer_save(const wgt_optimizer *opt, const char *path);
/* Restore what wgt_optimizer_save wrote into an optimizer created over parameters of the same
 * number, shapes and dtypes (WGT_ERR_FORMAT naming the mismatch otherwise): hyper-parameters,
 * step counts and state; continuing then gives the same bits as the run that saved it. */
wgt_status wgt_optimizer_load(wgt_optimizer *opt, const char *path);
void wgt_optimizer_free(wgt_optimizer *opt);

/* torch.nn.utils.clip_grad_norm_ (norm_type 2): total = || (||g_0||_2, ..., ||g_n-1||_2) ||_2 and
 * every g_i *= min(1, max_norm / (total + 1e-6)), in place, on the device: the scale is computed
 * and read there, so nothing waits. NULL entries are skipped. *total_norm (may be NULL) gets a new
 * 0-D f32 tensor holding the total (NULL when every entry is NULL: there is no context to put it on). Infinite or NaN gradients give a total of inf / NaN and NaN
 * gradients (torch's behaviour without error_if_nonfinite; check the total to skip a step).
 * Gradients f32, f16 or bf16 (the norm in f32), on one context. */
wgt_status wgt_clip_grad_norm(wgt_tensor *const *grads, int n, double max_norm, wgt_tensor **total_norm);

/* Learning-rate schedules as in transformers (get_constant_schedule_with_warmup,
 * get_linear_schedule_with_warmup, get_cosine_schedule_with_warmup with num_cycles 0.5).
 * step is the number of optimizer steps already taken (0 for the first step, as LambdaLR's
 * last_epoch), W = warmup, T = total steps:
 *   step < W:     lr * step / max(1, W)
 *   constant:     lr
 *   linear:       lr * max(0, (T - step) / max(1, T - W))
 *   cosine:       lr * max(0, 0.5 * (1 + cos(pi * p))),  p = (step - W) / max(1, T - W)
 * A pure function of its arguments (negative step or W are taken as 0). */
typedef enum wgt_lr_schedule {
    WGT_LR_CONSTANT = 0,
    WGT_LR_LINEAR = 1,
    WGT_LR_COSINE = 2,
} wgt_lr_schedule;
double wgt_lr_at(wgt_lr_schedule schedule, double lr, int64_t warmup, int64_t total, int64_t step);

/* ------------------------------------------------------------------------------------------------
 * Model files (src/io): GGUF and safetensors.
 *
 * Readers memory-map the file and never read it whole; every size, count and offset is checked
 * before use, so a malformed file is a WGT_ERR_FORMAT (or WGT_ERR_LIMIT) whose message names the
 * file, the field and the problem. Pointers handed out (names, strings, tensor data) stay valid
 * until the file object is freed.
 * --------------------------------------------------------------------------------------------- */

/* Element type of a tensor stored in a file. 0..39 are GGML's own numbers, as GGUF stores them;
 * 200 and up are safetensors dtypes that GGML lacks. Block types pack block_elems elements into
 * block_bytes bytes; plain types have block_elems 1. */
typedef enum wgt_ftype {
    WGT_FTYPE_F32 = 0, WGT_FTYPE_F16 = 1, WGT_FTYPE_Q4_0 = 2, WGT_FTYPE_Q4_1 = 3,
    WGT_FTYPE_Q5_0 = 6, WGT_FTYPE_Q5_1 = 7, WGT_FTYPE_Q8_0 = 8, WGT_FTYPE_Q8_1 = 9,
    WGT_FTYPE_Q2_K = 10, WGT_FTYPE_Q3_K = 11, WGT_FTYPE_Q4_K = 12, WGT_FTYPE_Q5_K = 13,
    WGT_FTYPE_Q6_K = 14, WGT_FTYPE_Q8_K = 15,
    /* known sizes only (a file holding them opens; no dequantisation yet) */
    WGT_FTYPE_IQ2_XXS = 16, WGT_FTYPE_IQ2_XS = 17, WGT_FTYPE_IQ3_XXS = 18, WGT_FTYPE_IQ1_S = 19,
    WGT_FTYPE_IQ4_NL = 20, WGT_FTYPE_IQ3_S = 21, WGT_FTYPE_IQ2_S = 22, WGT_FTYPE_IQ4_XS = 23,
    WGT_FTYPE_I8 = 24, WGT_FTYPE_I16 = 25, WGT_FTYPE_I32 = 26, WGT_FTYPE_I64 = 27,
    WGT_FTYPE_F64 = 28, WGT_FTYPE_IQ1_M = 29, WGT_FTYPE_BF16 = 30, WGT_FTYPE_TQ1_0 = 34,
    WGT_FTYPE_TQ2_0 = 35, WGT_FTYPE_MXFP4 = 39,
    /* safetensors only */
    WGT_FTYPE_U8 = 200, WGT_FTYPE_BOOL = 201, WGT_FTYPE_U16 = 202, WGT_FTYPE_U32 = 203,
    WGT_FTYPE_U64 = 204, WGT_FTYPE_F8_E4M3 = 205, WGT_FTYPE_F8_E5M2 = 206,
} wgt_ftype;

/* GGML's name ("f32", "q4_0", "q4_K", "bf16", ...; "u8", "bool", "f8_e4m3" beyond GGML), or NULL
 * for a value that is not a known type. */
const char *wgt_ftype_name(wgt_ftype type);
/* Parse a name as wgt_ftype_name writes it (case-insensitive). WGT_ERR_NOT_FOUND if unknown. */
wgt_status wgt_ftype_from_name(const char *name, wgt_ftype *out);
/* Elements per block and bytes per block; both 0 for an unknown type. */
uint32_t wgt_ftype_block_elems(wgt_ftype type);
uint32_t wgt_ftype_block_bytes(wgt_ftype type);
/* Bytes of n elements (n a multiple of the block size), overflow-checked. */
wgt_status wgt_ftype_bytes(wgt_ftype type, int64_t n, uint64_t *bytes);
/* 1 when wgt_dequantize handles the type / wgt_quantize produces it. */
int wgt_ftype_can_dequantize(wgt_ftype type);
int wgt_ftype_can_quantize(wgt_ftype type);

/* The CPU reference: n elements (a multiple of the block size) of src, stored as type, to f32.
 * Exact against the format's definition. Integer and bool types convert by value. */
wgt_status wgt_dequantize(wgt_ftype type, const void *src, float *dst, int64_t n);
/* f32 to type, for F32, F16, BF16 (round to nearest even), Q8_0, Q4_0 (as GGML's reference
 * quantiser), Q4_K and Q6_K (GGML's reference search for scales). n a multiple of the block. */
wgt_status wgt_quantize(wgt_ftype type, const float *src, void *dst, int64_t n);

/* --- Quantized weights on the GPU (src/ops/qlinear.c) --- */
/* A [rows, cols] weight in a GGUF block format (Q8_0, Q4_0, Q4_K, Q6_K on the GPU; other formats
 * wgt_dequantize reads run the reference), uploaded as its raw blocks: a u8 [rows, row_bytes]
 * tensor, row-major, each row cols / block_elems blocks, as GGUF stores it. cols must be a
 * multiple of the block size (WGT_ERR_SHAPE otherwise). */
wgt_status wgt_qweight_upload(wgt_context *ctx, wgt_ftype type, int64_t rows, int64_t cols, const void *blocks,
                              wgt_tensor **out);
/* out [..., rows] f32 = x [..., cols] (f32; f16/bf16 are converted) @ W^T + bias [rows] (or NULL),
 * W dequantised inside the kernel. w may be a narrow of an uploaded weight along its rows. */
wgt_status wgt_qlinear(const wgt_tensor *x, const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias,
                       wgt_tensor **out);

/* --- GGUF (v2 and v3, little-endian) ------------------------------------------------------- */

typedef enum wgt_gguf_type {
    WGT_GGUF_UINT8 = 0, WGT_GGUF_INT8 = 1, WGT_GGUF_UINT16 = 2, WGT_GGUF_INT16 = 3,
    WGT_GGUF_UINT32 = 4, WGT_GGUF_INT32 = 5, WGT_GGUF_FLOAT32 = 6, WGT_GGUF_BOOL = 7,
    WGT_GGUF_STRING = 8, WGT_GGUF_ARRAY = 9, WGT_GGUF_UINT64 = 10, WGT_GGUF_INT64 = 11,
    WGT_GGUF_FLOAT64 = 12,
} wgt_gguf_type;

typedef struct wgt_gguf wgt_gguf;             /* an open GGUF file */
typedef struct wgt_gguf_value wgt_gguf_value; /* one metadata value (scalar or array) */

#define WGT_GGUF_MAX_DIMS 4

typedef struct wgt_gguf_tensor {
    const char *name;
    wgt_ftype type;
    uint32_t n_dims;
    int64_t ne[WGT_GGUF_MAX_DIMS]; /* GGML order: ne[0] is the row length (contiguous); unused = 1 */
    int64_t n_elements;
    uint64_t offset;               /* from the start of the file */
    uint64_t bytes;
    const void *data;              /* the bytes, in the memory map */
} wgt_gguf_tensor;

/* Open and validate a GGUF file: header, every metadata value, every tensor info (type, shape,
 * alignment, bounds, overlap, duplicate names). */
wgt_status wgt_gguf_open(const char *path, wgt_gguf **out);
void wgt_gguf_free(wgt_gguf *gguf);
uint32_t wgt_gguf_version(const wgt_gguf *gguf);
uint32_t wgt_gguf_alignment(const wgt_gguf *gguf);  /* general.alignment, default 32 */
uint64_t wgt_gguf_data_offset(const wgt_gguf *gguf); /* where the tensor data section starts */
uint64_t wgt_gguf_file_size(const wgt_gguf *gguf);

/* Metadata, in file order. */
int64_t wgt_gguf_kv_count(const wgt_gguf *gguf);
const char *wgt_gguf_kv_key(const wgt_gguf *gguf, int64_t i);
const wgt_gguf_value *wgt_gguf_kv_value(const wgt_gguf *gguf, int64_t i);
const wgt_gguf_value *wgt_gguf_find(const wgt_gguf *gguf, const char *key); /* NULL if absent */

wgt_gguf_type wgt_gguf_value_type(const wgt_gguf_value *v);
/* Scalars. Integers convert between widths when the value fits (else WGT_ERR_FORMAT); _float
 * takes FLOAT32, FLOAT64 and integers; _bool takes BOOL. _str gives a NUL-terminated copy (len
 * counts bytes, which may include NULs). */
wgt_status wgt_gguf_value_int(const wgt_gguf_value *v, int64_t *out);
wgt_status wgt_gguf_value_uint(const wgt_gguf_value *v, uint64_t *out);
wgt_status wgt_gguf_value_float(const wgt_gguf_value *v, double *out);
wgt_status wgt_gguf_value_bool(const wgt_gguf_value *v, int *out);
wgt_status wgt_gguf_value_str(const wgt_gguf_value *v, const char **s, uint64_t *len);
/* Arrays: element type and length; elements by index with the same conversions as scalars.
 * Array strings point into the map and are NOT NUL-terminated: use len. Nested arrays: _item. */
wgt_gguf_type wgt_gguf_array_type(const wgt_gguf_value *v);
uint64_t wgt_gguf_array_len(const wgt_gguf_value *v);
wgt_status wgt_gguf_array_int(const wgt_gguf_value *v, uint64_t i, int64_t *out);
wgt_status wgt_gguf_array_float(const wgt_gguf_value *v, uint64_t i, double *out);
wgt_status wgt_gguf_array_str(const wgt_gguf_value *v, uint64_t i, const char **s, uint64_t *len);
const wgt_gguf_value *wgt_gguf_array_item(const wgt_gguf_value *v, uint64_t i);
/* The packed little-endian elements of a numeric or bool array (unaligned), else NULL. */
const void *wgt_gguf_array_data(const wgt_gguf_value *v);

/* By key: WGT_ERR_NOT_FOUND naming file and key when absent, WGT_ERR_FORMAT on a type misfit. */
wgt_status wgt_gguf_get_int(const wgt_gguf *gguf, const char *key, int64_t *out);
wgt_status wgt_gguf_get_uint(const wgt_gguf *gguf, const char *key, uint64_t *out);
wgt_status wgt_gguf_get_float(const wgt_gguf *gguf, const char *key, double *out);
wgt_status wgt_gguf_get_bool(const wgt_gguf *gguf, const char *key, int *out);
wgt_status wgt_gguf_get_str(const wgt_gguf *gguf, const char *key, const char **out);

/* Tensors, in file order. */
int64_t wgt_gguf_tensor_count(const wgt_gguf *gguf);
const wgt_gguf_tensor *wgt_gguf_tensor_at(const wgt_gguf *gguf, int64_t i);
const wgt_gguf_tensor *wgt_gguf_tensor_find(const wgt_gguf *gguf, const char *name);
/* Dequantise elements [first, first + n) of a tensor (flat GGML order) into dst; first and n are
 * multiples of the block size (rows always are). For chunked uploads. */
wgt_status wgt_gguf_tensor_to_f32(const wgt_gguf_tensor *t, int64_t first, int64_t n, float *dst);

/* GGUF writer: v3, little-endian, alignment 32 (or general.alignment when given as a uint32 key
 * before the first tensor). Order: metadata and tensor infos, then each tensor's bytes in the
 * order declared (written in as many pieces as wanted: the file is streamed, never held whole),
 * then _finish. The file is written safely (see wgt_output below): freeing without finishing
 * removes only the temporary file, and the final name appears at _finish. */
typedef struct wgt_gguf_writer wgt_gguf_writer;
wgt_status wgt_gguf_writer_open(const char *path, wgt_gguf_writer **out);
/* Scalars: type is any scalar type; the value is read from *value in that type's C form
 * (uint8_t, int8_t, ..., float, double; bool as uint8_t 0 or 1). */
wgt_status wgt_gguf_writer_add(wgt_gguf_writer *w, const char *key, wgt_gguf_type type,
                               const void *value);
wgt_status wgt_gguf_writer_add_str(wgt_gguf_writer *w, const char *key, const char *s);
wgt_status wgt_gguf_writer_add_u32(wgt_gguf_writer *w, const char *key, uint32_t v);
wgt_status wgt_gguf_writer_add_f32(wgt_gguf_writer *w, const char *key, float v);
wgt_status wgt_gguf_writer_add_bool(wgt_gguf_writer *w, const char *key, int v);
/* A numeric/bool array from packed C values, or an array of strings (lens NULL: NUL-terminated). */
wgt_status wgt_gguf_writer_add_array(wgt_gguf_writer *w, const char *key, wgt_gguf_type elem,
                                     const void *values, uint64_t count);
wgt_status wgt_gguf_writer_add_str_array(wgt_gguf_writer *w, const char *key,
                                         const char *const *strs, const uint64_t *lens,
                                         uint64_t count);
/* Nested arrays: begin an array of count elements of type elem; inside it, the add calls above
 * take key NULL and add one element each (add_array/add_str_array: one inner array each), and
 * begin_array with key NULL opens an inner array. Every begin has an end. */
wgt_status wgt_gguf_writer_begin_array(wgt_gguf_writer *w, const char *key, wgt_gguf_type elem,
                                       uint64_t count);
wgt_status wgt_gguf_writer_end_array(wgt_gguf_writer *w);
/* Copy a value read from another file (any type, nested arrays included). */
wgt_status wgt_gguf_writer_add_value(wgt_gguf_writer *w, const char *key, const wgt_gguf_value *v);
/* ne in GGML order (ne[0] = row length). */
wgt_status wgt_gguf_writer_add_tensor(wgt_gguf_writer *w, const char *name, wgt_ftype type,
                                      uint32_t n_dims, const int64_t *ne);
wgt_status wgt_gguf_writer_write(wgt_gguf_writer *w, const void *data, uint64_t bytes);
wgt_status wgt_gguf_writer_finish(wgt_gguf_writer *w);
void wgt_gguf_writer_free(wgt_gguf_writer *w);

typedef struct wgt_hf_config wgt_hf_config;
/* Add llama.cpp's tokenizer metadata (tokenizer.ggml.model, tokens, scores, token_type, merges,
 * bos/eos/unknown/padding ids, add_bos/add_eos, tokenizer.chat_template) from a Hugging Face
 * directory: tokenizer.model (SentencePiece, model "llama"; preferred when arch is "llama"),
 * tokenizer.json (BPE: byte-level as model "gpt2", SentencePiece-style as model "llama" with the
 * merge ranks as scores; Unigram is refused) or vocab.json + merges.txt. The files are read as
 * wgt_tokenizer_open reads them (src/tokenizer/gguf_write.c). cfg (may be NULL)
 * gives bos/eos ids and the embedding's vocab_size, to which the token list is padded.
 * *kind (may be NULL) gets "llama" or "gpt2". WGT_ERR_NOT_FOUND when dir holds no tokenizer. */
wgt_status wgt_gguf_writer_add_tokenizer(wgt_gguf_writer *w, const char *dir, const char *arch,
                                         const wgt_hf_config *cfg, const char **kind);

/* --- safetensors ---------------------------------------------------------------------------- */

typedef struct wgt_safetensors wgt_safetensors;

#define WGT_ST_MAX_DIMS 8

typedef struct wgt_st_tensor {
    const char *name;
    wgt_ftype type;
    uint32_t n_dims;
    int64_t shape[WGT_ST_MAX_DIMS]; /* PyTorch order: shape[n_dims - 1] is contiguous */
    int64_t n_elements;
    uint64_t offset;                /* from the start of its file */
    uint64_t bytes;
    const void *data;               /* the bytes, in the memory map */
    const char *file;               /* the file holding it (a shard of a sharded checkpoint) */
} wgt_st_tensor;

/* path: a .safetensors file, a model.safetensors.index.json (every shard is opened and checked
 * against the weight map), or a directory holding either. */
wgt_status wgt_safetensors_open(const char *path, wgt_safetensors **out);
void wgt_safetensors_free(wgt_safetensors *st);
int64_t wgt_safetensors_count(const wgt_safetensors *st);
const wgt_st_tensor *wgt_safetensors_at(const wgt_safetensors *st, int64_t i);
const wgt_st_tensor *wgt_safetensors_find(const wgt_safetensors *st, const char *name);
/* The "__metadata__" string map (of the first file), NULL if absent. */
int64_t wgt_safetensors_metadata_count(const wgt_safetensors *st);
const char *wgt_safetensors_metadata_key(const wgt_safetensors *st, int64_t i);
const char *wgt_safetensors_metadata(const wgt_safetensors *st, const char *key);

/* safetensors writer: declare every tensor (and metadata), then write the bytes in declared
 * order (streamed, in pieces), then _finish. Written safely, as the GGUF writer (wgt_output). */
typedef struct wgt_st_writer wgt_st_writer;
wgt_status wgt_st_writer_open(const char *path, wgt_st_writer **out);
wgt_status wgt_st_writer_add_metadata(wgt_st_writer *w, const char *key, const char *value);
wgt_status wgt_st_writer_add_tensor(wgt_st_writer *w, const char *name, wgt_ftype type,
                                    uint32_t n_dims, const int64_t *shape);
wgt_status wgt_st_writer_write(wgt_st_writer *w, const void *data, uint64_t bytes);
wgt_status wgt_st_writer_finish(wgt_st_writer *w);
void wgt_st_writer_free(wgt_st_writer *w);

/* --- safe output files (src/io/safe_write.c) ----------------------------------------------- */

/* Every file wgt writes goes through a wgt_output (the GGUF and safetensors writers, convert,
 * checkpoints): nothing the user owns is destroyed by a write, whatever happens during it.
 *  - Before anything is created the output is refused (WGT_ERR_INVALID_ARGUMENT, the message
 *    names the path and the reason) when it is the same file (device and inode, so links are
 *    caught) as one of opts->inputs or any entry of opts->input_dir; when it exists and is not a
 *    regular file (directory, device node, fifo, socket); when it exists and opts->replace is 0
 *    (the message says --force replaces it). opts NULL: refuse existing files, no inputs.
 *  - The bytes go to a temporary file ".<name>.wgt-XXXXXX" in the output's directory. _commit
 *    flushes and fsyncs it, renames it over the final name, then fsyncs the directory: the final
 *    name holds the previous file or the complete new one, never a partial file (after SIGKILL or
 *    a power cut at most a stray temporary file is left).
 *  - _abort, and a failing _commit, remove only the temporary file. Both free the handle. */
typedef struct wgt_output wgt_output;
typedef struct wgt_output_options {
    int replace;                /* 1: an existing regular file may be replaced (the CLI's --force) */
    const char *const *inputs;  /* n_inputs paths the output must not be (NULL entries skipped) */
    size_t n_inputs;
    const char *input_dir;      /* a directory whose every entry is an input too (may be NULL) */
} wgt_output_options;
wgt_status wgt_output_open(const char *path, const wgt_output_options *opts, wgt_output **out);
/* The temporary file, for fwrite and friends (do not fclose it). */
FILE *wgt_output_file(wgt_output *o);
const char *wgt_output_path(const wgt_output *o); /* the final name */
wgt_status wgt_output_write(wgt_output *o, const void *data, uint64_t bytes);
wgt_status wgt_output_commit(wgt_output *o);
void wgt_output_abort(wgt_output *o); /* NULL is a no-op */
/* For programs: on SIGINT, SIGTERM and SIGHUP remove the temporary files of open outputs, then
 * die of the signal as before (signals the parent ignores stay ignored). The library never
 * installs handlers itself. */
wgt_status wgt_output_cleanup_on_signals(void);

/* The writers above with wgt_output's checks (create replaces an existing regular file, as
 * opts = {.replace = 1} does, and also writes through a temporary file). */
wgt_status wgt_gguf_writer_open_ex(const char *path, const wgt_output_options *opts,
                                       wgt_gguf_writer **out);
wgt_status wgt_st_writer_open_ex(const char *path, const wgt_output_options *opts,
                                     wgt_st_writer **out);

/* --- Hugging Face config.json / generation_config.json ------------------------------------- */

struct wgt_hf_config {
    char architecture[128];       /* architectures[0]: "LlamaForCausalLM", "GPT2LMHeadModel", ... */
    char model_type[64];          /* "llama", "qwen2", "qwen3", "gpt2", ... */
    int64_t hidden_size;          /* gpt2: n_embd */
    int64_t n_layers;             /* num_hidden_layers / n_layer */
    int64_t n_heads;              /* num_attention_heads / n_head */
    int64_t n_kv_heads;           /* num_key_value_heads, default n_heads */
    int64_t head_dim;             /* head_dim, default hidden_size / n_heads */
    int64_t intermediate_size;    /* gpt2: n_inner, default 4 * n_embd */
    int64_t vocab_size;
    int64_t max_positions;        /* max_position_embeddings / n_positions */
    double rope_theta;            /* default 10000 */
    char rope_scaling_type[32];   /* "" none, "linear", "dynamic", "yarn", "llama3", ... */
    double rope_factor;           /* rope_scaling.factor (0 if none) */
    double rope_low_freq_factor;  /* llama3 */
    double rope_high_freq_factor; /* llama3 */
    int64_t rope_original_max_positions; /* rope_scaling.original_max_position_embeddings */
    double norm_eps;              /* rms_norm_eps or layer_norm_epsilon */
    int norm_is_rms;              /* 1: RMSNorm (rms_norm_eps given or implied); 0: LayerNorm */
    int tie_word_embeddings;      /* default 1 for gpt2, else 0 unless given */
    int attention_bias;           /* q/k/v/o biases (attention_bias; qwen2: q/k/v only, see qkv_bias) */
    int qkv_bias;                 /* q, k, v carry biases (qwen2 always; llama if attention_bias) */
    int mlp_bias;
    int64_t sliding_window;       /* 0 if none */
    char hidden_act[32];          /* hidden_act / activation_function: "silu", "gelu_new", ... */
    char torch_dtype[16];         /* torch_dtype or dtype: "bfloat16", "float32", ... */
    int n_bos, n_eos;             /* number of ids in bos_ids / eos_ids (bos/eos may be a list) */
    int64_t bos_ids[8], eos_ids[8];
    int64_t pad_id;               /* -1 if none */
    /* Gemma-style attention (0 when not given) */
    double query_pre_attn_scalar; /* scores scaled by 1/sqrt(this) instead of 1/sqrt(head_dim) */
    double attn_softcap;          /* attn_logit_softcapping: scores = cap * tanh(scores / cap) */
    double final_softcap;         /* final_logit_softcapping, likewise for the logits */
    double rope_local_theta;      /* sliding-window layers' rope base (rope_local_base_freq, or
                                     rope_parameters.sliding_attention.rope_theta) */
    double partial_rotary_factor; /* share of head_dim that RoPE rotates (partial_rotary_factor,
                                     rotary_pct); 0 when not given (all) */
    int n_layer_types;            /* layer_types given: layer_sliding[i] 1 for "sliding_attention" */
    unsigned char layer_sliding[512];
    /* more families' settings */
    int use_sliding_window;       /* qwen2: -1 when not given */
    int64_t max_window_layers;    /* qwen2: the layers below it attend globally */
    int use_parallel_residual;    /* gpt_neox, stablelm: -1 when not given */
    int qk_layernorm;             /* stablelm: LayerNorms over each head of q and k */
    int use_bias;                 /* starcoder2: every linear layer carries a bias (-1 when not given) */
    double embedding_multiplier, residual_multiplier, attention_multiplier, logits_scaling; /* granite; 0: not given */
    int n_no_rope_layers;         /* smollm3: no_rope_layers given: rope_layers[i] 1 when layer i rotates */
    unsigned char rope_layers[512];
    int64_t no_rope_layer_interval; /* smollm3: every P-th layer without rope, when no_rope_layers is not given */
    /* mixture of experts (mixtral, qwen2_moe, qwen3_moe); 0 when not given */
    int64_t n_experts;            /* num_local_experts / num_experts */
    int64_t n_experts_used;       /* num_experts_per_tok */
    int64_t moe_intermediate_size; /* each expert's (qwen*_moe; mixtral's experts use intermediate_size) */
    int64_t shared_expert_intermediate_size; /* qwen2_moe's shared expert (0: none) */
    int norm_topk_prob;           /* renormalise the top-k routing weights (-1 when not given) */
    int64_t decoder_sparse_step;  /* every this-th layer is sparse (1 when not given) */
    int n_mlp_only_layers;        /* mlp_only_layers given and not empty: dense layers among sparse ones */
    /* generation_config.json, when present (its bos/eos override config.json's) */
    int has_generation_config;
    double temperature, top_p;    /* 0 when not given */
    int64_t top_k;
    int do_sample;
};

/* Parse config.json text (len bytes; name is used in messages). */
wgt_status wgt_hf_config_parse(const char *json, size_t len, const char *name, wgt_hf_config *out);
/* Parse generation_config.json text into an already-parsed config. */
wgt_status wgt_hf_generation_config_parse(const char *json, size_t len, const char *name,
                                          wgt_hf_config *cfg);
/* dir/config.json, then dir/generation_config.json when present. */
wgt_status wgt_hf_config_load(const char *dir, wgt_hf_config *out);

/* ------------------------------------------------------------------------------------------------
 * Tokenizers (src/tokenizer).
 * Byte-level BPE (GPT-2, Llama 3, Qwen 2/3: encoder.json + vocab.bpe, or Hugging Face
 * tokenizer.json) and SentencePiece (BPE and unigram: a .model file, or GGUF tokenizer.ggml.*
 * arrays). Ids are int32. Text is UTF-8; encode rejects invalid UTF-8 with
 * WGT_ERR_INVALID_ARGUMENT. A tokenizer holds a cache of encoded words: use one tokenizer per
 * thread (or serialise calls); decode and the other const calls are safe to share.
 * --------------------------------------------------------------------------------------------- */

typedef struct wgt_tokenizer wgt_tokenizer;

/* Open a tokenizer from path, which may be: a tokenizer.json; a SentencePiece .model; a GGUF
 * file (its tokenizer.ggml.* metadata); a directory holding tokenizer.json (+ optional
 * tokenizer_config.json, read for BOS/EOS flags and the chat template), tokenizer.model, or
 * encoder.json + vocab.bpe (GPT-2). */
wgt_status wgt_tokenizer_open(const char *path, wgt_tokenizer **out);

/* The tokenizer metadata a GGUF file carries (tokenizer.ggml.*), as plain arrays. Everything is
 * copied: the arrays may be released once wgt_tokenizer_create returns. */
typedef struct wgt_tokenizer_arrays {
    const char *model;              /* "llama" (SentencePiece) or "gpt2" (byte-level BPE) */
    const char *pre;                /* gpt2 pre-tokenizer: "default", "llama-bpe", "qwen2", ... (NULL: GPT-2) */
    size_t n_tokens;
    const char *const *tokens;      /* (n_tokens) pieces; gpt2: in GPT-2's byte-to-unicode form */
    const size_t *token_lens;       /* (n_tokens) byte lengths, or NULL for NUL-terminated pieces */
    const float *scores;            /* (n_tokens) or NULL; llama: merge priority / log-probability */
    const int32_t *token_types;     /* (n_tokens) or NULL: 1 normal, 2 unknown, 3 control,
                                       4 user-defined, 5 unused, 6 byte */
    size_t n_merges;
    const char *const *merges;      /* (n_merges) "a b", rank order; gpt2 only */
    int32_t bos_id, eos_id, unk_id, pad_id; /* -1: none */
    int add_bos, add_eos;           /* 1 / 0; -1: the model's default (llama: BOS yes, EOS no) */
    int add_space_prefix;           /* llama: dummy prefix; -1: default (yes) */
    int unigram;                    /* llama: 1 for a unigram model (scores are log-probabilities) */
    const char *chat_template;      /* tokenizer.chat_template, or NULL */
} wgt_tokenizer_arrays;

wgt_status wgt_tokenizer_create(const wgt_tokenizer_arrays *arrays, wgt_tokenizer **out);
/* The tokenizer of an open GGUF file (its tokenizer.ggml.* metadata); name labels messages. */
wgt_status wgt_tokenizer_create_from_gguf(const wgt_gguf *gguf, const char *name, wgt_tokenizer **out);
void wgt_tokenizer_free(wgt_tokenizer *tok);

/* Flags for wgt_tokenizer_encode. */
enum {
    WGT_TOKENIZE_ADD_SPECIAL = 1,   /* add BOS/EOS as the model configuration says */
    WGT_TOKENIZE_PARSE_SPECIAL = 2, /* match special tokens written in the text (Hugging Face's
                                       default); without it they are encoded as plain text.
                                       Non-special added tokens are always matched. */
};

/* Encode len bytes of text (len may be (size_t)-1 for a NUL-terminated string). *ids gets a
 * malloc'd array of *n_ids ids (release with free()). */
wgt_status wgt_tokenizer_encode(wgt_tokenizer *tok, const char *text, size_t len, unsigned flags,
                                int32_t **ids, size_t *n_ids);

/* Decode ids to text: *text gets a malloc'd NUL-terminated string of *len bytes (free()).
 * skip_special: leave out control/special tokens. Bytes that do not form valid UTF-8 are kept. */
wgt_status wgt_tokenizer_decode(const wgt_tokenizer *tok, const int32_t *ids, size_t n_ids,
                                int skip_special, char **text, size_t *len);

/* The bytes one token stands for inside a text (a SentencePiece piece's U+2581 as a space, a
 * byte token as its byte; decoding also drops the dummy-prefix space of the first piece).
 * *piece stays valid while tok lives. */
wgt_status wgt_tokenizer_token_to_piece(const wgt_tokenizer *tok, int32_t id, const char **piece,
                                        size_t *len);
/* The vocabulary entry itself ("Ġthe", "▁the", "<0x0A>"); NULL for an id out of range. */
const char *wgt_tokenizer_token_text(const wgt_tokenizer *tok, int32_t id);
/* The id of a vocabulary entry or added token written as in the vocabulary; -1 if none. */
int32_t wgt_tokenizer_token_id(const wgt_tokenizer *tok, const char *text);

int32_t wgt_tokenizer_vocab_size(const wgt_tokenizer *tok);
int32_t wgt_tokenizer_bos(const wgt_tokenizer *tok); /* -1: none */
int32_t wgt_tokenizer_eos(const wgt_tokenizer *tok); /* -1: none */
/* 1 for an end-of-generation token (EOS, <|eot_id|>, <|im_end|>, <|endoftext|>, ...). */
int wgt_tokenizer_is_eog(const wgt_tokenizer *tok, int32_t id);
/* 1 for a control or unknown token (decoding with skip_special leaves it out). */
int wgt_tokenizer_is_special(const wgt_tokenizer *tok, int32_t id);

/* Streaming decoder: feed ids one at a time; text that ends inside a UTF-8 sequence is held
 * until the sequence completes. *text (valid until the next call) gets the bytes now complete. */
typedef struct wgt_detokenizer wgt_detokenizer;
wgt_status wgt_detokenizer_create(const wgt_tokenizer *tok, int skip_special, wgt_detokenizer **out);
wgt_status wgt_detokenizer_push(wgt_detokenizer *d, int32_t id, const char **text, size_t *len);
/* The bytes still held (an incomplete sequence at the end of the stream), as U+FFFD. */
wgt_status wgt_detokenizer_flush(wgt_detokenizer *d, const char **text, size_t *len);
void wgt_detokenizer_free(wgt_detokenizer *d);

/* Chat templates: a Jinja subset (for, if/elif/else, set, namespace, filters, string methods,
 * loop.*, raise_exception) renders the model's template (tokenizer_config.json chat_template,
 * or GGUF tokenizer.chat_template). A construct outside the subset is WGT_ERR_UNSUPPORTED
 * naming it. */
typedef struct wgt_chat_message {
    const char *role;    /* "system", "user", "assistant", "tool" */
    const char *content;
} wgt_chat_message;

/* template_override: NULL for the tokenizer's own template; else a Jinja template, or a family
 * name: "chatml" (Qwen), "llama3", "llama2", "mistral". *text is malloc'd (free()). */
wgt_status wgt_tokenizer_apply_chat_template(const wgt_tokenizer *tok, const wgt_chat_message *msgs,
                                             size_t n_msgs, int add_generation_prompt,
                                             const char *template_override, char **text);
/* As above, with extra template variables, each "name=value": true/false become booleans, an
 * integer a number, anything else a string (Qwen 3: "enable_thinking=false"). */
wgt_status wgt_tokenizer_apply_chat_template_vars(const wgt_tokenizer *tok, const wgt_chat_message *msgs,
                                                  size_t n_msgs, int add_generation_prompt,
                                                  const char *template_override,
                                                  const char *const *vars, size_t n_vars, char **text);

/* ------------------------------------------------------------------------------------------------
 * Language models (src/models): llama (Llama 2/3, TinyLlama, SmolLM2, Mistral), qwen2, qwen3, gpt2,
 * from a Hugging Face directory (config.json + safetensors, sharded or not), a GGUF file, or a
 * config.json alone (random f16 weights of that shape, for benchmarks).
 * --------------------------------------------------------------------------------------------- */

typedef struct wgt_model wgt_model;

/* Constrained generation (src/models/json_constraint.c): the ids drawn are those whose bytes
 * continue one JSON object (RFC 8259 text whose top-level value is an object, as OpenAI's
 * response_format "json_object"; UTF-8 checked in strings; the text starts with '{', at most 24
 * whitespace bytes in a row, at most 64 nested containers). Control and unknown tokens are never
 * drawn. A state serves one sequence at a time; wgt_sampling.json points at it. */
typedef struct wgt_json_state wgt_json_state;
/* tok is kept (NULL: a state that only checks bytes, through wgt_json_state_feed). */
wgt_status wgt_json_state_create(const wgt_tokenizer *tok, wgt_json_state **out);
void wgt_json_state_free(wgt_json_state *js);
void wgt_json_state_reset(wgt_json_state *js); /* back to before the object */
/* Advance over bytes already written (text given as the answer's start); WGT_ERR_INVALID_ARGUMENT,
 * and no change, when they cannot continue one JSON object. */
wgt_status wgt_json_state_feed(wgt_json_state *js, const char *bytes, size_t n);
/* 1 when id may come next (once the object is complete: only end-of-generation ids). */
int wgt_json_state_allows(const wgt_json_state *js, int32_t id);
/* logits[id] = -inf for each of the n ids that may not come next; returns how many may. */
int64_t wgt_json_state_mask(const wgt_json_state *js, float *logits, int64_t n);
/* Advance over id's bytes; WGT_ERR_INVALID_ARGUMENT when id may not come next. */
wgt_status wgt_json_state_accept(wgt_json_state *js, int32_t id);
int wgt_json_state_complete(const wgt_json_state *js); /* 1 once the object has closed */

typedef struct wgt_sampling {
    float temperature;    /* 0: greedy */
    int top_k;            /* 0: off */
    float top_p;          /* 0 or 1: off */
    float min_p;          /* 0: off */
    float repeat_penalty; /* 1 or 0: off */
    uint64_t seed;
    int ignore_eos;
    int graph;            /* 1: capture a decode step as a graph and replay it for the next tokens
                             (greedy or sampled; through a wgt_graph_cache: captured once up to
                             256 keys and once past them on most models;
                             models whose step the ops can capture; see "Graph capture"): one
                             submit and no recording per token */
    /* OpenAI's penalties over the tokens generated so far (not the prompt): a token generated c
     * times has its logit lowered by c * frequency_penalty + (c > 0) * presence_penalty, after the
     * repetition penalty and before the temperature. 0: off; negative values favour repeats. */
    float frequency_penalty, presence_penalty;
    /* NULL, or a JSON constraint's state (wgt_json_state_create, reset for each answer): ids that
     * cannot continue one JSON object get no probability (after the penalties, before the other
     * settings), the drawn id advances the state, and generation ends when the object closes.
     * The logits are read back and drawn from on the host (no captured step, no pipelining). */
    wgt_json_state *json;
} wgt_sampling;

typedef struct wgt_generate_stats {
    int64_t n_prompt, n_generated;
    double prefill_seconds, decode_seconds;
    uint64_t submits, dispatches;
    double record_seconds; /* host time recording the decode steps (forward and sampling, before the wait) */
    int64_t n_reused;      /* prompt tokens whose keys and values were already cached (not fed again) */
    int context_full;      /* 1 when generation stopped early because the KV cache was full (a normal end) */
    int64_t graph_steps;   /* decode steps replayed from a captured step (wgt_sampling.graph) */
    int64_t graph_captures; /* decode steps captured (one per range of positions sharing an attention grid) */
} wgt_generate_stats;

/* Called with each new token; return non-zero to stop. */
typedef int (*wgt_token_fn)(int32_t token, void *user);

/* Load from a Hugging Face directory (config.json + safetensors, sharded or not), a GGUF file, or a
 * config.json alone (random weights of that shape, for benchmarks). max_ctx: KV cache length (0:
 * the model's, at most 4096). Weights f32/f16/bf16 stay as they are; Q8_0, Q4_0, Q4_K and Q6_K
 * stay quantized on the device (dequantised inside the matmul kernels); other GGUF block types
 * are expanded to f32. A tensor past the adapter's largest buffer is refused before loading. */
wgt_status wgt_model_open(wgt_context *ctx, const char *path, int64_t max_ctx, wgt_model **out);
typedef struct wgt_model_options {
    int64_t max_ctx;
    const char *random_type; /* config.json alone: the linear weights' type (default "f16"; f32, bf16,
                                q8_0, q4_0, q4_k, q6_k) */
    int dequantize;          /* expand quantized weights to f32 (a reference for the quantized kernels) */
    int f32_weights;         /* expand f16/bf16 weights to f32 at load (exact; twice the memory): for
                                adapters where unpacking f16 in a kernel is slow (the browser's
                                SwiftShader); the arithmetic is f32 either way */
    int no_kv_cache;         /* no KV cache of the model's own (max_ctx still sets the context): for
                                a model served through wgt_batch, whose slots hold their own;
                                wgt_model_forward and wgt_model_generate are then refused */
    int kv_caches;           /* KV caches of max_ctx tokens allocated beside the model (wgt_batch's
                                slots: wgt serve passes --parallel), counted by the memory check
                                made before loading, with the model's own unless no_kv_cache;
                                0: the model's alone */
} wgt_model_options;
wgt_status wgt_model_open_ex(wgt_context *ctx, const char *path, const wgt_model_options *opt, wgt_model **out);
/* The checks wgt_model_open makes of a configuration's hyper-parameters, for tools that read one
 * without loading it (wgt convert): counts positive and below 2^31, heads a multiple of kv heads,
 * a consistent head size, finite positive norm epsilon and rope theta, special ids inside the
 * vocabulary. WGT_ERR_FORMAT naming the field; where (the file) begins the message. */
wgt_status wgt_model_check_hf_config(const wgt_hf_config *cfg, const char *where);
void wgt_model_free(wgt_model *m);
/* L new tokens after the n_past in the cache; logits [1, vocab] of the last one (all: [L, vocab]). */
wgt_status wgt_model_forward(wgt_model *m, const int32_t *ids, int64_t L, int all_logits, wgt_tensor **logits);
void wgt_model_reset(wgt_model *m);
/* Generate up to n_new tokens after the prompt (stopping at an end-of-generation token unless
 * sp->ignore_eos, or when the KV cache is full: stats->context_full), calling on_token with each.
 * A prompt longer than the context is WGT_ERR_LIMIT. The KV cache is kept between calls: the part
 * of the prompt it already holds (the earlier turns of a chat) is not computed again. */
wgt_status wgt_model_generate(wgt_model *m, const int32_t *prompt, int64_t n_prompt, int64_t n_new,
                              const wgt_sampling *sp, wgt_token_fn on_token, void *user, wgt_generate_stats *stats);

/* The model's tokenizer (NULL when it has none); owned by the model. */
wgt_tokenizer *wgt_model_tokenizer(const wgt_model *m);
/* Why the model has no tokenizer although it ships one (a tokenizer file that failed to parse):
 * the message; NULL when the tokenizer loaded or there is none. */
const char *wgt_model_tokenizer_error(const wgt_model *m);
/* The KV cache's length in tokens: prompt plus generated tokens fit in it. */
int64_t wgt_model_context(const wgt_model *m);
/* 1 when the weights are random (the model was loaded from a config.json alone). */
int wgt_model_is_random(const wgt_model *m);
/* Vocabulary size; decoder layers; the architecture name ("llama", ...). */
int64_t wgt_model_vocab(const wgt_model *m);
int64_t wgt_model_layers(const wgt_model *m);
const char *wgt_model_arch(const wgt_model *m);
/* Bytes of weights on the device; bytes of weights one decode step reads (the linear layers, the
 * output head, the norms: not the embedding table, of which it reads one row; a mixture of
 * experts' experts as wgt runs them: the chosen ones in place (by default), or with
 * WGT_MOE_KERNELS=0 their gathered copy written and read again when float, all of them when
 * quantized). */
uint64_t wgt_model_weight_bytes(const wgt_model *m);
uint64_t wgt_model_token_bytes(const wgt_model *m);
/* wgt_model_token_bytes with a mixture of experts' expert weights counted for the k chosen of E
 * only: what one decode step needs to read (equal to it for a dense model). */
uint64_t wgt_model_active_bytes(const wgt_model *m);
/* 1 for an id that ends generation: the model's eos ids, or the tokenizer's end-of-generation tokens. */
int wgt_model_is_eos(const wgt_model *m, int32_t id);

/* Continuous batching (src/models/batch.c): n_slots sequences, each with a KV cache slot of the
 * model's context length (wgt_model_context), fed together. A step takes any mix of sequences: one
 * id for one that decodes, a chunk of its prompt for one that prefills. The rows of all of them go
 * through each linear layer as one matrix product; the decode rows' attention runs in one dispatch
 * a layer over the slots' caches (in groups of slots when all the caches of a layer pass one
 * storage binding of the device), a prompt chunk's per sequence over its own slot.
 * A slot keeps its ids after a sequence ends: a new sequence that starts with them truncates the
 * slot to the common prefix and feeds only the rest (multi-turn chat). Not thread-safe: one thread
 * steps a batch. */
typedef struct wgt_batch wgt_batch;
typedef struct wgt_batch_item {
    int slot;               /* 0 .. n_slots - 1, at most once per step */
    const int32_t *ids;     /* n new ids, fed after the slot's wgt_batch_slot_length ids */
    int64_t n;
    const wgt_sampling *sp; /* draw a token from the last position (NULL: none, e.g. a prefill chunk
                               that is not the prompt's last); as wgt_model_generate draws it, the
                               repetition penalty over the slot's ids */
    uint32_t step;          /* tokens this sequence drew before (advances the seed's stream) */
    float *logits;          /* NULL, or [vocab]: gets the last position's logits */
    int32_t token;          /* out: the id drawn */
} wgt_batch_item;
wgt_status wgt_batch_create(wgt_model *m, int n_slots, wgt_batch **out);
void wgt_batch_free(wgt_batch *b);
int wgt_batch_slots(const wgt_batch *b);
int64_t wgt_batch_context(const wgt_batch *b);
/* The ids a slot's cache holds (valid until the next step or truncation), and their count. */
int64_t wgt_batch_slot_length(const wgt_batch *b, int slot);
const int32_t *wgt_batch_slot_ids(const wgt_batch *b, int slot);
/* Keep the slot's first n_keep ids (0 empties it); a longer n_keep changes nothing. */
wgt_status wgt_batch_slot_truncate(wgt_batch *b, int slot, int64_t n_keep);
/* One forward pass over the items, then one draw per item with sp. WGT_ERR_LIMIT when a slot
 * would overflow its context; WGT_ERR_INVALID_ARGUMENT for a slot given twice or an id outside
 * the vocabulary (nothing is fed then). */
wgt_status wgt_batch_step(wgt_batch *b, wgt_batch_item *items, int n_items);

/* ------------------------------------------------------------------------------------------------
 * Training (src/models/train.c, train_forward.c, train_save.c, data.c): the language models above
 * as f32 parameters under their Hugging Face names, a forward over batches made of differentiable
 * ops (the autograd tape records it), datasets of token sequences, and Hugging Face output.
 * --------------------------------------------------------------------------------------------- */

typedef struct wgt_train_model wgt_train_model;

typedef struct wgt_train_init {
    uint64_t seed; /* random init of a config.json: the generator's seed */
    double std;    /* matrices ~ N(0, std) (0: 0.02, transformers' initializer_range); norms 1, biases 0 */
} wgt_train_init;

/* path: anything wgt_model_open reads with float weights (a Hugging Face directory or a GGUF
 * file; f32/f16/bf16 become f32 master weights), or a config.json alone (fresh weights as init
 * says; init may be NULL). A quantized model is WGT_ERR_UNSUPPORTED ("training needs float
 * weights"). The model's tokenizer comes along when it has one. */
wgt_status wgt_train_model_open(wgt_context *ctx, const char *path, const wgt_train_init *init,
                                wgt_train_model **out);
void wgt_train_model_free(wgt_train_model *m);
/* Parameters, in checkpoint order: name as in the Hugging Face checkpoint, the tensor (f32,
 * contiguous, [out, in] for linear weights), and whether the checkpoint stores it transposed
 * (GPT-2's Conv1D [in, out]). A tied output head is the embedding (no parameter of its own). */
int wgt_train_model_param_count(const wgt_train_model *m);
const char *wgt_train_model_param_name(const wgt_train_model *m, int i);
wgt_tensor *wgt_train_model_param(const wgt_train_model *m, int i);
int wgt_train_model_param_is_conv1d(const wgt_train_model *m, int i);
uint64_t wgt_train_model_numel(const wgt_train_model *m); /* parameters in all */
int64_t wgt_train_model_vocab(const wgt_train_model *m);
int64_t wgt_train_model_max_positions(const wgt_train_model *m); /* 0: no limit */
wgt_tokenizer *wgt_train_model_tokenizer(const wgt_train_model *m); /* owned by m; may be NULL */
void wgt_train_model_set_tokenizer(wgt_train_model *m, wgt_tokenizer *tok); /* m takes it over */

/* Refuse (WGT_ERR_LIMIT, saying how much it needs) a batch [B, L] whose training step would not
 * fit: a parameter or activation past the adapter's largest storage binding, or an estimate of the
 * step's device memory (weights, gradients, optimizer state, activations) above WGT_MEMORY_LIMIT
 * (bytes, or with a K/M/G/T suffix) or, on a CPU adapter, the host's memory. WebGPU does not report a GPU's memory: set the variable there.
 * *need_bytes (may be NULL) gets the estimate. */
wgt_status wgt_train_check_memory(const wgt_train_model *m, int64_t B, int64_t L, double *need_bytes);
/* logits [B, L, V] f32 of ids [B, L] (integers; positions 0 .. L - 1), causal attention. */
wgt_status wgt_train_forward(wgt_train_model *m, const wgt_tensor *ids, wgt_tensor **logits);
/* The mean cross-entropy (0-D f32) over every target [B, L] of the forward of ids [B, L];
 * logits (may be NULL) gets the forward's [B, L, V]. */
wgt_status wgt_train_loss(wgt_train_model *m, const wgt_tensor *ids, const wgt_tensor *targets,
                          wgt_tensor **loss, wgt_tensor **logits);

/* Datasets: sequences of L + 1 ids (inputs the first L, targets the last L). */
typedef struct wgt_dataset wgt_dataset;
/* A text file encoded with tok (no BOS/EOS added) and cut into sequences of L + 1 tokens, each
 * starting where the previous one's inputs end (every token but the first is a target once); the
 * last eval_fraction of them (at least one when there are two or more) is held out for eval. */
wgt_status wgt_dataset_open_text(const char *path, wgt_tokenizer *tok, int64_t seq, double eval_fraction,
                                 wgt_dataset **out);
/* JSON lines, each a list of exactly L + 1 ids in [0, vocab); blank lines are skipped. A line of
 * the wrong length or an id outside the vocabulary is WGT_ERR_INVALID_ARGUMENT naming the line.
 * Nothing is held out. */
wgt_status wgt_dataset_open_ids(const char *path, int64_t vocab, int64_t seq, wgt_dataset **out);
/* Held-out sequences that may be shorter: lines of 2 to L + 1 ids, each padded to L + 1 with -1,
 * which wgt_trainer_eval reads as "no target here" (as a mask over padding does; the padded inputs
 * come after every counted target, so a causal model's counted losses do not see them). */
wgt_status wgt_dataset_open_ids_padded(const char *path, int64_t vocab, int64_t seq, wgt_dataset **out);
void wgt_dataset_free(wgt_dataset *d);
int64_t wgt_dataset_train_count(const wgt_dataset *d);
int64_t wgt_dataset_eval_count(const wgt_dataset *d);
int64_t wgt_dataset_tokens(const wgt_dataset *d); /* tokens of the text, or ids of the file */
/* Sequence i (training ones first, then the held-out ones): L + 1 ids, NULL past the end. */
const int32_t *wgt_dataset_sequence(const wgt_dataset *d, int64_t i);
/* Batch `step` (from 0) into ids [batch, L + 1]: positions step * batch ... of an endless stream
 * of epochs, each epoch the training sequences in file order (shuffle 0) or in a permutation
 * drawn from (seed, epoch). The same (seed, step) gives the same batch, so a resumed run sees
 * what an uninterrupted one would. */
wgt_status wgt_dataset_batch(wgt_dataset *d, int64_t step, int64_t batch, int shuffle, uint64_t seed,
                             int32_t *ids);

/* A model's parameters written as a Hugging Face directory (created if needed): model.safetensors
 * (f32, the checkpoint's names and layouts), config.json (the source's, dtype float32; written
 * from the configuration for a GGUF source) and the tokenizer: tokenizer_from (a tokenizer.json or
 * .model file, or a directory), else the source directory's tokenizer files. Each file is written
 * to a temporary name and renamed into place. */
wgt_status wgt_train_model_save(const wgt_train_model *m, const char *dir, const char *tokenizer_from);

/* The training loop's step: forward, mean cross-entropy, backward, clipping, the schedule's
 * learning rate, the optimizer's update. */
typedef struct wgt_trainer wgt_trainer;
typedef struct wgt_trainer_options {
    wgt_optimizer_options optim; /* optim.lr is the schedule's peak */
    wgt_lr_schedule schedule;
    int64_t warmup, total_steps; /* of the schedule (wgt_lr_at) */
    double clip_norm;            /* > 0: clip the global gradient norm to it; 0: none */
    /* Mixed precision: WGT_F32 (the default: everything in f32), WGT_BF16 or WGT_F16. With a half
     * dtype each step casts the f32 master parameters to half copies (the casts are recorded, so
     * gradients reach the masters in f32), runs the forward's activations in that dtype, the loss
     * in f32, and the optimizer on the f32 masters and f32 state. f16 scales the loss (dynamic,
     * as torch's GradScaler: from loss_scale, halved and the step skipped when a gradient is
     * inf/NaN, doubled after 2000 steps without); so does any dtype when loss_scale > 0 or the
     * environment sets WGT_MATMUL_TC (its matmul tiles take f16 operands, which flush a mean
     * loss's small gradients to zero unscaled). */
    wgt_dtype dtype;
    double loss_scale;           /* the initial scale (0: 65536 where scaling is on, else none) */
    /* Dropout with probability dropout (0: none) after the embedding, each attention's output
     * projection and each MLP, during training steps only; step s draws from a generator seeded
     * with (dropout_seed, s), so a resumed run drops what an uninterrupted one would. */
    double dropout;
    uint64_t dropout_seed;
    /* The floor of the cosine/linear decay as a fraction of optim.lr (transformers'
     * get_cosine_with_min_lr_schedule_with_warmup, min_lr_rate): after warmup the lr is
     * lr * (min_lr_ratio + (1 - min_lr_ratio) * f), f the schedule's factor; 0: decay to 0. */
    double min_lr_ratio;
    /* 1: no weight decay on parameters of fewer than 2 dimensions (norm weights, biases), as a
     * torch param group with weight_decay 0 for them gives. */
    int no_decay_1d;
    /* 1: dropout only after each attention's output projection and each MLP, none after the
     * embedding (as forward hooks on a transformers model's self_attn and mlp give). */
    int dropout_blocks_only;
    /* 1: the step is captured as a graph (its second; wgt_graph_begin) and replayed after, the
     * batch copied in and the step count a graph scalar from which the schedule's lr and the
     * optimizer's bias corrections are recomputed: one submit a step, the same losses as eager.
     * Steps with loss scaling (f16) or dropout stay eager; a batch of another shape captures again. */
    int graph;
} wgt_trainer_options;
wgt_trainer_options wgt_trainer_defaults(void); /* AdamW with torch's defaults, constant lr, no clipping, f32 */
/* Marks every parameter of m as requiring grad and makes the optimizer over them. */
wgt_status wgt_trainer_create(wgt_train_model *m, const wgt_trainer_options *o, wgt_trainer **out);
void wgt_trainer_free(wgt_trainer *t);
/* One step on ids [B, L + 1] (host; inputs the first L of each row, targets the last L). The lr
 * is wgt_lr_at(schedule, optim.lr, warmup, total_steps, steps already taken). *loss (may be NULL:
 * then nothing waits for the device) gets the step's loss, before the update. An id outside the
 * vocabulary is WGT_ERR_INVALID_ARGUMENT. */
wgt_status wgt_trainer_step(wgt_trainer *t, const int32_t *ids, int64_t B, int64_t L, double *loss);
/* The mean cross-entropy of ids [B, L + 1] without gradients (evaluation). An id of -1 (padding,
 * wgt_dataset_open_ids_padded) is no target: the mean is over the others (at least one). */
wgt_status wgt_trainer_eval(wgt_trainer *t, const int32_t *ids, int64_t B, int64_t L, double *loss);
int64_t wgt_trainer_steps(const wgt_trainer *t);            /* steps run (an f16 step skipped for overflow counts) */
int wgt_trainer_last_skipped(const wgt_trainer *t);         /* 1: the last step's gradients overflowed (scaled): no update */
double wgt_trainer_loss_scale(const wgt_trainer *t);        /* the current loss scale; 1 when not scaling */
double wgt_trainer_last_lr(const wgt_trainer *t);           /* the lr of the last step */
double wgt_trainer_last_grad_norm(const wgt_trainer *t);    /* before clipping; -1 when not clipping */
/* A checkpoint: the model as wgt_train_model_save writes it, optimizer.safetensors and
 * trainer.json (state_json, a JSON object of the caller's, or NULL, with "step" set), written to
 * DIR.tmp and swapped with DIR in one atomic rename once complete (Linux; elsewhere the previous
 * DIR moves to DIR.old first), so a save killed at any point leaves a complete checkpoint. */
wgt_status wgt_trainer_save(wgt_trainer *t, const char *dir, const char *tokenizer_from, const char *state_json);
/* Resume: the optimizer state of a checkpoint into a trainer made over the model opened from that
 * same directory (wgt_train_model_open(ctx, DIR, ...)); the following steps are those of the run
 * that saved it, bit for bit. */
wgt_status wgt_trainer_load(wgt_trainer *t, const char *dir);

WGT_API_END

#ifdef __cplusplus
}
#endif
#endif /* WGT_H */
