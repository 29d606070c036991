/*
 * The device layer: the only code that calls wgpu*. Everything above it (tensors, ops, models)
 * goes through these functions.
 *
 * Setup (slow, cached):   wgt_gpu_kernel()      source -> pipeline, keyed by source and constants
 * Hot path (no waiting):  wgt_gpu_dispatch()    records into the open pass; submits every max_batch
 *                         wgt_gpu_copy()        buffer-to-buffer copy in the same command stream
 *                         wgt_gpu_upload()      host -> device (flushes recorded work first)
 * Waiting:                wgt_gpu_download()    device -> host: flush, copy to staging, map, poll
 *                         wgt_context_sync()    wait for everything submitted
 *
 * Kernel convention: a WGSL compute kernel declares its parameters as
 *   @group(0) @binding(0) var<uniform> p: Params;            (optional, any size up to 256 bytes)
 *   @group(0) @binding(1..n) var<storage, read|read_write> ... (in order, no gaps)
 * The bind-group layout is derived from those declarations, the uniform is bound with a dynamic
 * offset into a per-batch arena, and bind groups are cached by their buffers.
 */
#ifndef WGT_GPU_GPU_H
#define WGT_GPU_GPU_H

#include <stdint.h>

#include "core/error.h"
#include "gpu/webgpu.h"
#include "wgt.h"

#define WGT_MAX_BINDINGS 12
#define WGT_UNIFORM_SLOT 256 /* bytes per dispatch in the uniform arena (the offset alignment) */

extern wgt_wgpu_procs wgt_W; /* the loaded webgpu.h functions */

/* What differs between the webgpu.h ABIs wgt speaks (loader.c holds one entry per ABI). */
typedef struct wgt_wgpu_abi {
    const char *name;                  /* "standard webgpu.h numbering", ... */
    WGPUFeatureName feature_timestamp_query;
    WGPUFeatureName feature_shader_f16;
    WGPUFeatureName feature_subgroups;
    WGPUFeatureName feature_core_features_and_limits;
    WGPUFeatureName feature_subgroup_matrix; /* chromium-experimental-subgroup-matrix */
    /* WGSL: 1: subgroupMatrixLoad<T, row_major>(p, offset, stride), subgroupMatrixStore<row_major>(p,
     * offset, m, stride) (2026 Dawn); 0: the layout as a bool argument after the offset, col_major
     * (mid-2025 Dawn). Tied to the numbering because the two Dawn builds wgt knows differ in both. */
    int wgsl_sgmatrix_layout_template;
    /* Bytes per WGPUSubgroupMatrixConfig in the configs array: 20 (mid-2025 Dawn: the five fields
     * of src/gpu/webgpu.h); 28 with the 2026 Dawn (measured on the H200: two words follow K,
     * both 32 there), whose first five fields are the same. */
    size_t sgmatrix_config_bytes;
} wgt_wgpu_abi;

/* The library loaded by wgt_wgpu_load, and what the loader learnt about it. */
typedef struct wgt_wgpu_library {
    const wgt_wgpu_abi *abi;
    int is_dawn;                       /* Dawn: toggles (WGPUDawnTogglesDescriptor) are understood */
    int from_symtab;                   /* functions found in the ELF symbol table (dawn.node) */
    char path[512];
    char description[256];             /* for `wgt info`: which build, how loaded, which numbering */
    /* Optional functions (NULL when absent). */
    void (*AdapterPropertiesSubgroupMatrixConfigsFreeMembers)(WGPUAdapterPropertiesSubgroupMatrixConfigs value);
} wgt_wgpu_library;

extern wgt_wgpu_library wgt_L; /* valid after wgt_wgpu_load succeeded */
#define wgt_abi (wgt_L.abi)


/* A device buffer from the pool. Sizes are rounded up to a size class; `size` is the class size. */
typedef struct wgt_buffer {
    WGPUBuffer handle;
    uint64_t size;
    uint64_t id;        /* unique per creation: the bind-group cache keys on it */
    int size_class;
    int in_use;
    struct wgt_buffer *next_free;
    /* Graph capture (capture.c): graphs that name this buffer. A buffer released while pinned is
     * parked (neither in use nor on a free list) until the last graph naming it is freed, so a
     * replay never writes into memory the pool handed to someone else. */
    int graph_pins;
    int parked;
    uint64_t graph_stamp; /* the serial of the last capture that pinned it (dedup) */
    uint64_t born;        /* the capture serial it was handed out during (0: outside a capture):
                             its bytes before then mean nothing to that graph (memory planning) */
} wgt_buffer;

typedef struct wgt_binding {
    wgt_buffer *buffer;
    uint64_t offset; /* bytes, a multiple of min_storage_buffer_offset_alignment */
    uint64_t size;   /* bytes; 0 means "to the end of the buffer" */
} wgt_binding;

typedef struct wgt_kernel {
    WGPUComputePipeline pipeline;
    WGPUBindGroupLayout layout;
    WGPUPipelineLayout pipeline_layout;
    int has_uniform;            /* binding 0 is a uniform */
    int n_storage;              /* storage bindings 1..n_storage */
    uint32_t readonly_mask;     /* bit i: binding i+1 is read-only */
    char name[64];
} wgt_kernel;

typedef struct wgt_kconst {
    const char *name; /* a WGSL `override` name */
    double value;
} wgt_kconst;

/* Pipeline cache and bind-group cache entries (open hashing). */
typedef struct wgt_kernel_entry {
    uint64_t hash;
    char *key;
    wgt_kernel kernel;
    struct wgt_kernel_entry *next;
} wgt_kernel_entry;

typedef struct wgt_bind_entry {
    uint64_t hash;
    const wgt_kernel *kernel;
    int n;
    uint64_t ids[WGT_MAX_BINDINGS];
    uint64_t offsets[WGT_MAX_BINDINGS];
    uint64_t sizes[WGT_MAX_BINDINGS];
    uint64_t last_use; /* ctx->bind_tick at the last lookup that found or made it */
    WGPUBindGroup group;
    struct wgt_bind_entry *next;
} wgt_bind_entry;

#define WGT_POOL_CLASSES 256
#define WGT_KERNEL_BUCKETS 256
#define WGT_BIND_BUCKETS 1024

typedef struct wgt_profiler wgt_profiler;
/* What a dispatch moves and computes, as its op declares it (wgt_gpu_cost) for the profiler's
 * GB/s and FLOP/s; bytes 0: the profiler counts the bytes of the bound ranges instead. */
typedef struct wgt_dispatch_cost {
    uint64_t bytes; /* device memory read and written */
    double flops;   /* multiply-adds count 2 */
} wgt_dispatch_cost;
typedef struct wgt_capture wgt_capture;
typedef struct wgt_gpu_graph wgt_gpu_graph;

struct wgt_context {
    int cpu;                      /* no device: ops run the CPU reference */
    WGPUInstance instance;
    WGPUAdapter adapter;
    WGPUDevice device;
    WGPUQueue queue;
    wgt_adapter_info info;
    int debug;
    int avoid_barriers;           /* wgt_gpu_avoid_barriers: set from the adapter, or by a test */
    int max_batch;
    char dump_dir[512];
    char kernel_dir[512];

    /* Latched errors: device loss is permanent, an uncaptured error is reported once. */
    int lost;
    int freeing;                  /* wgt_context_free destroys the device: not a loss */
    wgt_status pending_status;
    char pending_message[1024];
    char errmsg[2048];

    /* Buffer pool: free lists per size class. */
    wgt_buffer *free_list[WGT_POOL_CLASSES];
    wgt_buffer **all_buffers;
    int n_buffers, cap_buffers;
    uint64_t next_buffer_id;
    wgt_memory_stats stats;

    /* Caches. */
    wgt_kernel_entry *kernels[WGT_KERNEL_BUCKETS];
    wgt_bind_entry *binds[WGT_BIND_BUCKETS];
    uint64_t bind_tick;  /* bind-group lookups so far: the cache's clock */
    size_t bind_count;   /* entries in binds */
    size_t bind_max;     /* past it the least recently used quarter goes (WGT_BIND_CACHE) */

    /* The batch being recorded. */
    WGPUCommandEncoder encoder;
    WGPUComputePassEncoder pass;
    int batch_dispatches;
    WGPUBuffer uniform_arena;     /* max_batch * WGT_UNIFORM_SLOT bytes */
    uint8_t *uniform_host;        /* staged here, written with one queue write per submit */
    uint32_t uniform_used;
    uint32_t uniform_capacity;
    WGPUBuffer upload_arena;      /* small uploads, copied in order with the dispatches */
    uint8_t *upload_host;
    uint32_t upload_used;

    /* The ops layer's state (wgt_gpu_ops_state): small constant tensors kept for the context's
     * life (op_const_tensor in src/ops/ops.c), freed through ops_state_free before the pool. */
    void *ops_state;
    void (*ops_state_free)(wgt_context *ctx, void *state);

    /* Staging buffers for downloads (MAP_READ), reused. */
    wgt_profiler *prof;           /* WGT_PROFILE=1 (src/gpu/profile.c), else NULL */
    wgt_dispatch_cost next_cost;  /* what the next dispatch moves and computes (wgt_gpu_cost) */
    WGPUBuffer staging;
    uint64_t staging_size;
    /* Small split-readback buffers (WGT_READBACK_SMALL bytes, MAP_READ) kept for reuse: decode
     * reads one token id back per step, and a buffer created and destroyed per step costs host
     * time in the driver. */
    WGPUBuffer readback_free[4];
    int n_readback_free;

    /* Graph capture (capture.c): the recording in progress (NULL: eager, the one branch the hot
     * path pays), the graphs alive on this context (released with it), the capture serial. */
    wgt_capture *capture;
    wgt_gpu_graph *graphs;
    uint64_t capture_serial;
};

/* ---- What the layers above ask of a context (query.c) -----------------------------------------
 * Ops, tensors and models never read struct wgt_context: they ask these (tests/test_layers.sh
 * fails on a field read outside src/gpu). A reference context (WGT_BACKEND_CPU) has no device;
 * its limits are generous and it grants no features. */
/* 1 when the context has no device and ops run the CPU reference (src/cpu). */
int wgt_gpu_runs_reference(const wgt_context *ctx);
/* The device's limits, WebGPU's names (the CPU reference's own for a reference context). */
const wgt_limits *wgt_gpu_limits(const wgt_context *ctx);
int wgt_gpu_has_subgroups(const wgt_context *ctx); /* subgroups granted */
int wgt_gpu_has_f16(const wgt_context *ctx);       /* shader-f16 granted */
int wgt_gpu_is_software(const wgt_context *ctx);   /* a software adapter (lavapipe, llvmpipe, ...) */
/* The adapter's description (features, subgroup sizes, subgroup-matrix configurations); read-only. */
const wgt_adapter_info *wgt_gpu_info(const wgt_context *ctx);
/* 1 when the loaded library's WGSL takes a subgroup matrix's layout as a template argument
 * (subgroupMatrixLoad<T, row_major>: the 2026 Dawn), 0 for the older bool argument. */
int wgt_gpu_sgmatrix_layout_template(void);
int wgt_gpu_debug(const wgt_context *ctx);         /* WGT_DEBUG: check after every op */
/* 1 when kernels should take their barrier-free variant where they have one: on SwiftShader a
 * workgroup barrier anywhere in a kernel makes it run every 4-lane subgroup of every workgroup as
 * its own coroutine, each switch a thread hand-off (a 256x256 matrix-vector product took ~2 s
 * there, against milliseconds without the barrier). Chosen from the adapter's identity. */
int wgt_gpu_avoid_barriers(const wgt_context *ctx);
/* The device the context holds now (compared, never used: a context freed and another created at
 * the same address has another device). */
const void *wgt_gpu_device_identity(const wgt_context *ctx);
/* 1 when buf is one of ctx's pool buffers, still in use, and still the creation `id` names. */
int wgt_gpu_buffer_live(const wgt_context *ctx, const wgt_buffer *buf, uint64_t id);
/* The ops layer's own state kept with the context (op_const_tensor's tables), NULL until set;
 * free_state runs on it when the context is freed, before the buffer pool goes. */
void *wgt_gpu_ops_state(const wgt_context *ctx);
void wgt_gpu_set_ops_state(wgt_context *ctx, void *state, void (*free_state)(wgt_context *ctx, void *state));

/* Record a failure on the context (and this thread) and return it. */
wgt_status wgt_ctx_error(wgt_context *ctx, wgt_status status, const char *fmt, ...) WGT_PRINTF(3, 4);
/* The latched status (device lost, an uncaptured error); WGT_OK if none. Call at every entry. */
wgt_status wgt_ctx_check(wgt_context *ctx);
/* Process WebGPU events once (callbacks fire from here). */
void wgt_ctx_poll(wgt_context *ctx);
/* Tests only (not public API): destroy the device under a live context, as a driver reset or a
 * removed GPU would; the device-lost callback then latches WGT_ERR_DEVICE_LOST. */
void wgt_gpu_test_lose_device(wgt_context *ctx);
/* Tests only: force the barrier-free kernel variants on (1) or off (0) on any adapter, so the
 * native suite checks the variants SwiftShader takes against the same references. */
void wgt_gpu_test_avoid_barriers(wgt_context *ctx, int on);

/* Loader (loader.c). */
wgt_status wgt_wgpu_load(const char *path);

/* A whole file as a NUL-terminated string (malloc'd), NULL when it cannot be read (kernel.c: WGSL
 * from WGT_KERNEL_DIR; benchmarks reading their own .wgsl). */
char *wgt_gpu_read_text(const char *path);

/* Buffers (pool.c). */
wgt_status wgt_gpu_alloc(wgt_context *ctx, uint64_t bytes, wgt_buffer **out);
void wgt_gpu_release(wgt_context *ctx, wgt_buffer *buffer);
void wgt_pool_destroy(wgt_context *ctx);
void wgt_bind_cache_forget(wgt_context *ctx, uint64_t buffer_id);

/* Kernels (kernel.c): the one way WGSL reaches the device (notes/KERNELS.md). `name` names a
 * file in src/kernels without .wgsl; `prelude` is prepended to it and holds only what varies
 * between its pipelines: enable directives, consts and aliases, dtype loaders and storers
 * (op_wgsl_* in src/ops/ops.c) and the lib_*.wgsl files it uses. Hot paths pass a key instead of
 * the text (wgt_gpu_kernel_keyed below). */
wgt_status wgt_gpu_kernel(wgt_context *ctx, const char *name, const char *prelude, const char *entry,
                          const wgt_kconst *constants, int n_constants, wgt_kernel **out);
/* Compile a kernel from a full source string (user kernels, tests). */
wgt_status wgt_gpu_kernel_source(wgt_context *ctx, const char *label, const char *source,
                                 const char *entry, const wgt_kconst *constants, int n_constants,
                                 wgt_kernel **out);
const char *wgt_gpu_kernel_text(const char *name); /* embedded or WGT_KERNEL_DIR source, or NULL */
/* Kernels keyed by a small key. The pipeline lookup of wgt_gpu_kernel hashes and compares the
 * whole prelude on every call. An op whose prelude is a function of a few values (dtypes, a
 * variant, the workgroup size) passes those instead: `key` (key_len bytes, compared bytewise: zero
 * struct padding) must determine the prelude completely; make_prelude(arg) returns it malloc'd
 * (NULL: out of memory) and runs only on a miss. Keyed and prelude kernels of one file never
 * share entries. */
typedef char *(*wgt_prelude_fn)(void *arg);
wgt_status wgt_gpu_kernel_keyed(wgt_context *ctx, const char *name, const void *key, size_t key_len,
                                wgt_prelude_fn make_prelude, void *arg, const char *entry,
                                const wgt_kconst *constants, int n_constants, wgt_kernel **out);
void wgt_kernel_cache_destroy(wgt_context *ctx);

/* Command stream (dispatch.c). */
wgt_status wgt_gpu_dispatch(wgt_context *ctx, const wgt_kernel *kernel, const void *params,
                            uint32_t params_size, const wgt_binding *bindings, int n_bindings,
                            uint32_t groups_x, uint32_t groups_y, uint32_t groups_z);
wgt_status wgt_gpu_copy(wgt_context *ctx, wgt_buffer *src, uint64_t src_offset, wgt_buffer *dst,
                        uint64_t dst_offset, uint64_t bytes);
wgt_status wgt_gpu_fill_zero(wgt_context *ctx, wgt_buffer *dst, uint64_t offset, uint64_t bytes);
wgt_status wgt_gpu_upload(wgt_context *ctx, wgt_buffer *dst, uint64_t offset, const void *data,
                          uint64_t bytes);
/* Map the first n bytes of a MapRead buffer whose copy was submitted, wait for it (with the
 * download time-out), copy bytes from offset skew into data and unmap; what names the buffer in
 * errors. */
wgt_status wgt_gpu_map_copy(wgt_context *ctx, WGPUBuffer buf, uint64_t n, uint64_t skew, void *data, uint64_t bytes,
                            const char *what);
/* A readback in two halves, so the host can record and submit more work before it waits:
 * _begin records a copy of [offset, offset + bytes) into a buffer of its own (no flush); _end
 * submits the copy if it has not gone yet, waits for it alone (work submitted after it does not
 * delay it) and copies the bytes to data. Every begun readback must be ended (data may be NULL). */
typedef struct wgt_readback wgt_readback;
wgt_status wgt_gpu_readback_begin(wgt_context *ctx, wgt_buffer *src, uint64_t offset, uint64_t bytes,
                                  wgt_readback **out);
wgt_status wgt_gpu_readback_end(wgt_context *ctx, wgt_readback *rb, void *data);
wgt_status wgt_gpu_download(wgt_context *ctx, wgt_buffer *src, uint64_t offset, void *data,
                            uint64_t bytes);
wgt_status wgt_gpu_flush(wgt_context *ctx);
/* Time-stamped passes (benchmarks, profiler): needs ctx->info.has_timestamps. Keep the number of
 * dispatches in between under max_batch, or the batch is submitted and the pass ends early. */
wgt_status wgt_gpu_timed_pass_begin(wgt_context *ctx, WGPUQuerySet qs);
wgt_status wgt_gpu_timed_pass_end(wgt_context *ctx, WGPUQuerySet qs, WGPUBuffer resolve, wgt_buffer *dst);
void wgt_batch_destroy(wgt_context *ctx);
wgt_status wgt_batch_init(wgt_context *ctx);

/* ---- Graph capture (capture.c; notes/GRAPH.md) ---------------------------------------------
 * Between wgt_gpu_capture_begin and _end every dispatch, copy, clear and upload is recorded as
 * well as run: the kernel, its storage bindings (buffers pinned by the graph), its uniform bytes
 * and grid. Downloads and readbacks are refused while capturing (stage 1: the host cannot run in
 * the middle of a replay). A replay encodes the whole list into one command buffer: one submit,
 * bind groups made once at the end of the capture, uniforms in the graph's own buffer. */
int wgt_gpu_capturing(const wgt_context *ctx);
/* owner: the graph layer's object for this capture (wgt_gpu_capture_owner returns it). */
wgt_status wgt_gpu_capture_begin(wgt_context *ctx, void *owner);
void *wgt_gpu_capture_owner(const wgt_context *ctx);
/* Keep buf alive for the graph being captured (graph inputs, which no command may name). */
wgt_status wgt_gpu_capture_pin(wgt_context *ctx, wgt_buffer *buf);
/* Declare a graph scalar: a value that may change between replays, of a role (wgt_graph_role).
 * Its value must differ from every other scalar's of its role (ops are matched to the scalars of
 * their parameter's role by value). *index gets its number. */
wgt_status wgt_gpu_capture_scalar(wgt_context *ctx, const char *name, int role, int64_t value, int *index);
/* How an op says that a field of its next dispatch's parameters comes from a graph scalar:
 * called just before wgt_gpu_dispatch with the byte offset of the field in the params struct,
 * its type, the role of the argument the field was computed from (a position, a seed, a view's
 * offset: wgt_graph_role) and that argument, as field = kind(mul * arg + add). Eager (no
 * capture): returns at once. During a capture: when a declared scalar of that role has the value
 * arg, the field is patched from that scalar on every replay (the
 * dispatch checks that the field holds kind(mul * arg + add): a wrong offset is an internal
 * error); otherwise the field stays constant. The op's grid must not depend on arg. */
typedef enum wgt_param_kind {
    WGT_PARAM_U32,    /* (uint32_t)v */
    WGT_PARAM_U32_HI, /* (uint32_t)((uint64_t)v >> 32): the high word of a 64-bit value */
    WGT_PARAM_I32,    /* (int32_t)v */
    WGT_PARAM_F32,    /* (float)v */
} wgt_param_kind;
void wgt_gpu_param_scalar(wgt_context *ctx, uint32_t offset, wgt_param_kind kind, wgt_graph_role role, int64_t arg,
                          int64_t mul, int64_t add);
/* 1 while capturing when a declared scalar of role has the value arg, i.e. when
 * wgt_gpu_param_scalar(.., role, arg, ..) would tie a field to it: an op whose grid would follow
 * arg records a form valid for every value instead (wgt_sdpa's decode step). */
int wgt_gpu_capture_ties(const wgt_context *ctx, wgt_graph_role role, int64_t arg);
/* The same for a field that is not affine in the scalar (an optimizer's bias corrections follow
 * beta^step): its 4 bytes are fn(value, args), on the host at every wgt_graph_set_scalar. fn must
 * give the bytes the op wrote for arg (checked like the affine form). */
#define WGT_PARAM_FN_ARGS 10
typedef uint32_t (*wgt_param_fn)(int64_t value, const double *args);
void wgt_gpu_param_scalar_fn(wgt_context *ctx, uint32_t offset, wgt_graph_role role, int64_t arg, wgt_param_fn fn,
                             const double args[WGT_PARAM_FN_ARGS]);
/* Notes: what an op says about its dispatch, for rewrites at the end (fusion). mark =
 * wgt_gpu_capture_mark() before the op dispatches (-1: not capturing); wgt_gpu_capture_note
 * after it keeps a copy of note (kind: the op layer's own tag) on the op's dispatch when the op
 * made exactly one. */
int wgt_gpu_capture_mark(const wgt_context *ctx);
void wgt_gpu_capture_note(wgt_context *ctx, int mark, int kind, const void *note, size_t bytes);
/* A rewrite runs at the end, before the graph's device objects are made. It sees the commands
 * (wgt_gpu_graph_n_cmds; the note of kind `kind` on dispatch i or NULL) and replaces the
 * dispatches first..last (each with parameters, none with a scalar field) by one dispatch,
 * placed at last: first..last-1 are dropped. A buffer is private to first..last when no other
 * command names it, it is not a graph input and nobody holds it (parked: the caller released
 * every tensor on it). */
typedef wgt_status (*wgt_gpu_rewrite_fn)(wgt_context *ctx, wgt_gpu_graph *g);
int wgt_gpu_graph_n_cmds(const wgt_gpu_graph *g);
const void *wgt_gpu_graph_note(const wgt_gpu_graph *g, int i, int kind);
int wgt_gpu_graph_buffer_private(const wgt_gpu_graph *g, const wgt_buffer *b, int first, int last);
/* Dispatch i (one with parameters; else NULL): its bindings (*n of them), uniform bytes
 * (WGT_UNIFORM_SLOT), grid, whether a scalar field is patched into them (*patched), kernel. */
const wgt_binding *wgt_gpu_graph_dispatch(const wgt_gpu_graph *g, int i, int *n, const uint8_t **params,
                                         uint32_t grid[3], int *patched, const wgt_kernel **kernel);

wgt_status wgt_gpu_graph_replace(wgt_gpu_graph *g, int first, int last, const wgt_kernel *k, const void *params,
                                 uint32_t params_size, const wgt_binding *bindings, int n_bindings, uint32_t gx,
                                 uint32_t gy, uint32_t gz);
/* The same for dispatches cmds[0..n_cmds) (ascending, not necessarily adjacent): the new one at
 * the last of them, the others dropped (the caller checked that moving them there is safe). */
wgt_status wgt_gpu_graph_replace_list(wgt_gpu_graph *g, const int *cmds, int n_cmds, const wgt_kernel *k,
                                      const void *params, uint32_t params_size, const wgt_binding *bindings,
                                      int n_bindings, uint32_t gx, uint32_t gy, uint32_t gz);
/* wgt_gpu_graph_replace where dispatch `last` may have scalar fields: each at byte moves[m][0] of
 * its parameters moves to byte moves[m][1] of the new ones (a field not listed is an error). */
wgt_status wgt_gpu_graph_replace_moving(wgt_gpu_graph *g, int first, int last, const wgt_kernel *k, const void *params,
                                        uint32_t params_size, const wgt_binding *bindings, int n_bindings, uint32_t gx,
                                        uint32_t gy, uint32_t gz, const uint32_t (*moves)[2], int n_moves);
/* How command i uses buffer b: 0 not at all, bit 0 it reads or writes it, bit 1 it writes it. */
int wgt_gpu_graph_touches(const wgt_gpu_graph *g, int i, const wgt_buffer *b);
/* End the capture: rewrite (may be NULL) runs, then the device objects are made. On success *out
 * is the graph; on failure (an op refused, out of memory) the capture's first error is returned
 * and *out is NULL. Either way the capture is over. */
wgt_status wgt_gpu_capture_end(wgt_context *ctx, wgt_gpu_rewrite_fn rewrite, wgt_gpu_graph **out);
/* One copy encoded before the graph's commands (graph inputs into the captured buffers). */
typedef struct wgt_gpu_copy_cmd {
    wgt_buffer *src, *dst;
    uint64_t src_offset, dst_offset, bytes;
} wgt_gpu_copy_cmd;
/* dispatch.c: end the open compute pass of the context's encoder, if any (a graph replay then
 * encodes into that encoder). */
void wgt_gpu_end_pass(wgt_context *ctx);
/* Replay: the copies in pre, then every recorded command, in one command buffer and one submit.
 * Work recorded eagerly before it goes ahead of them in the same command buffer. submit 0: the commands go
 * into the context's command encoder, left open, so work recorded next (a readback's copy) goes
 * in the same submit, at the next flush. */
wgt_status wgt_gpu_graph_replay(wgt_gpu_graph *g, const wgt_gpu_copy_cmd *pre, int n_pre, int submit);
wgt_status wgt_gpu_graph_set_scalar(wgt_gpu_graph *g, int index, int64_t value);
/* The number of scalars, and scalar i's name and value (NULL when out of range). */
int wgt_gpu_graph_scalars(const wgt_gpu_graph *g);
const char *wgt_gpu_graph_scalar(const wgt_gpu_graph *g, int index, int64_t *value);
wgt_context *wgt_gpu_graph_context(const wgt_gpu_graph *g); /* NULL once its context was freed */
typedef struct wgt_gpu_graph_counts {
    int dispatches, copies, clears, uploads, bind_groups, pinned_buffers, patched_fields;
    int replaced, removed; /* dispatches made by wgt_gpu_graph_replace, and the ones it dropped */
    int reads;             /* host reads ending a segment (the graph has reads + 1 segments) */
    uint64_t pinned_bytes, uniform_bytes, constant_bytes;
    uint64_t unplanned_bytes; /* what pinned_bytes was before memory planning */
    int planned_buffers;      /* intermediates memory planning moved into another's buffer or dropped */
} wgt_gpu_graph_counts;
void wgt_gpu_graph_counts_get(const wgt_gpu_graph *g, wgt_gpu_graph_counts *out);
void wgt_gpu_graph_free(wgt_gpu_graph *g);
/* wgt_context_free: abort a capture in progress and release every graph's device objects (the
 * graphs' handles then only free their host memory). */
void wgt_capture_context_free(wgt_context *ctx);
/* pool.c: drop a graph's pin; a parked buffer goes back to its free list with the last one. */
void wgt_gpu_unpin(wgt_context *ctx, wgt_buffer *buf);

/* Wait for a future-style flag set by a callback, polling, with a time-out in ms (<0: none). */
/* The kernel profiler (profile.c). */
wgt_status wgt_prof_init(wgt_context *ctx);
void wgt_prof_destroy(wgt_context *ctx);
int wgt_prof_full(const wgt_context *ctx);
int wgt_prof_by_pass(const wgt_context *ctx); /* WGT_PROFILE=pass: whole passes time-stamped */
void wgt_prof_pass_slot(wgt_context *ctx, WGPUPassTimestampWrites *tw);
void wgt_prof_pass_dispatch(wgt_context *ctx, const wgt_dispatch_cost *c, uint64_t bound_bytes);
void wgt_prof_pass_end(wgt_context *ctx);
/* The timestamp writes for the next dispatch of k, whose cost is c (c->bytes 0: bound_bytes, the
 * bytes of its bound ranges, counted instead and the row marked as an estimate). */
void wgt_prof_slot(wgt_context *ctx, const wgt_kernel *k, const wgt_dispatch_cost *c, uint64_t bound_bytes,
                   WGPUPassTimestampWrites *tw);
/* The bytes of the distinct ranges of bs[0 .. n-1] (a range bound twice counts once). */
uint64_t wgt_prof_bound_bytes(const wgt_binding *bs, int n);
/* Ops: what the next dispatch (wgt_gpu_dispatch, which consumes it) moves and computes, for
 * WGT_PROFILE=1's GB/s and FLOP/s columns. bytes 0 leaves the bound ranges' bytes as the
 * estimate. Cheap: only stored. */
void wgt_gpu_cost(wgt_context *ctx, uint64_t bytes, double flops);
void wgt_prof_before_submit(wgt_context *ctx, WGPUCommandEncoder enc);
wgt_status wgt_prof_after_submit(wgt_context *ctx);

wgt_status wgt_gpu_wait_flag(wgt_context *ctx, volatile int *flag, int timeout_ms, const char *what);

/* Time-stamped GPU timing of one batch of work (bench, profiler); 0 if unsupported. */
double wgt_now_seconds(void);

#endif
