/*
 * wgt.h: tensors, autograd and large language models on WebGPU.
 *
 * This header is the manual. Conventions:
 *  - every name is prefixed wgt_; functions read wgt_<noun>_<verb>;
 *  - objects are opaque handles made by *_create / *_open and released by *_free;
 *    freeing NULL does nothing;
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

#ifdef __cplusplus
extern "C" {
#endif

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
 *   WGT_WEBGPU_LIB=path          the webgpu.h implementation to dlopen (default: the installed Dawn)
 *   WGT_BACKEND=vulkan|metal|d3d12|opengl|opengles
 *   WGT_ADAPTER=index|substring  pick an adapter by index in `wgt info --adapters` or by name
 *   WGT_COMPAT=1                 request a compatibility-mode adapter
 *   WGT_LIMITS=adapter|default   device limits: the adapter's (default) or the spec's minimums
 *   WGT_FORCE_FALLBACK_ADAPTER=1 ask for the implementation's software adapter
 *   WGT_DEBUG=1                  log adapter and device information to stderr
 *   WGT_DUMP_SHADERS=dir         write every WGSL module compiled to dir
 *   WGT_MAX_BATCH=n              dispatches recorded before a submit (default 256)
 *   WGT_KERNEL_DIR=dir           load kernels from dir (NAME.wgsl) instead of the embedded copies
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
} wgt_backend;

typedef struct wgt_context_options {
    const char *webgpu_lib; /* NULL: WGT_WEBGPU_LIB, else the installed library */
    wgt_backend backend;    /* WGT_BACKEND_DEFAULT: WGT_BACKEND or the best adapter */
    const char *adapter;    /* NULL: WGT_ADAPTER; else an index ("0") or a name substring */
    int compat;             /* 1: compatibility mode; 0: WGT_COMPAT */
    int default_limits;     /* 1: the spec's default limits; 0: WGT_LIMITS */
    int force_fallback;     /* 1: the software adapter; 0: WGT_FORCE_FALLBACK_ADAPTER */
    int max_batch;          /* dispatches per submit; 0: WGT_MAX_BATCH or 256 */
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
    wgt_limits limits;     /* the limits the device was created with */
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
} wgt_memory_stats;

wgt_status wgt_context_memory_stats(const wgt_context *ctx, wgt_memory_stats *out);

/* Release every cached device buffer not in use (like torch.cuda.empty_cache). */
wgt_status wgt_context_empty_cache(wgt_context *ctx);

/* Run the self-check: a streaming kernel over n floats compared with the CPU.
 * *gbps gets the achieved read+write bandwidth (may be NULL). WGT_ERR_INTERNAL on mismatch. */
wgt_status wgt_context_selfcheck(wgt_context *ctx, size_t n, double *gbps);

/* ------------------------------------------------------------------------------------------------
 * Model files (src/io): GGUF and safetensors.
 * --------------------------------------------------------------------------------------------- */

/* ------------------------------------------------------------------------------------------------
 * Tokenizers (src/tokenizer).
 * --------------------------------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif /* WGT_H */
